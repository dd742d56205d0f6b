//! Python's `str.format` for the `format` plugin.

use super::*;

pub(super) fn format_str(ev: &mut Evaluator<'_>, t: &str, args: &[Value], kwargs: &[(String, Value)]) -> PResult {
    let mut out = String::new();
    let chars: Vec<char> = t.chars().collect();
    let mut i = 0;
    let mut auto = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '{' {
            if chars.get(i + 1) == Some(&'{') {
                out.push('{');
                i += 2;
                continue;
            }
            let Some(end) = chars[i..].iter().position(|x| *x == '}') else {
                return Err(ext("unmatched '{' in format string".into()));
            };
            let field: String = chars[i + 1..i + end].iter().collect();
            let (name, spec) = field.split_once(':').unwrap_or((&field, ""));
            let (name, conversion) = match name.split_once('!') {
                Some((n, c)) => (n, Some(c)),
                None => (name, None),
            };
            let mut parts = name.split(['.', '[']);
            let head = parts.next().unwrap_or("");
            let mut v = if head.is_empty() {
                auto += 1;
                args.get(auto - 1).cloned()
            } else if let Ok(n) = head.parse::<usize>() {
                args.get(n).cloned()
            } else {
                kwargs.iter().find(|(k, _)| k == head).map(|(_, v)| v.clone())
            }
            .ok_or_else(|| ext(format!("format: missing argument {head}")))?;
            for p in parts {
                let key = p.trim_end_matches(']').trim_matches(['"', '\'']);
                v = match &v {
                    Value::Dict(d) => {
                        dict_get(d, key).cloned().ok_or_else(|| ext(format!("format: key {key} not found")))?
                    }
                    Value::List(l) => key
                        .parse::<usize>()
                        .ok()
                        .and_then(|k| l.get(k).cloned())
                        .ok_or_else(|| ext("format: bad index".into()))?,
                    Value::Instance(_) => ev.read_attr_span(&v, key, crate::syntax::Span::default())?,
                    _ => return Err(ext(format!("format: can not look up {key}"))),
                };
            }
            let names = |x| ev.inst_name(x);
            let r = match (&v, conversion) {
                // a list or dict reaches `str.format` as Inmanta's proxy, whose text is its repr
                // with an `@` in front (`@['a', 'b']`), under any conversion
                (Value::List(_) | Value::Dict(_), None) if !spec.is_empty() => {
                    return Err(ext(format!("unsupported format string passed to proxy.__format__: {spec}")));
                }
                (Value::List(_) | Value::Dict(_), _) => crate::eval::format::apply_spec(
                    &Value::str(&format!("@{}", crate::eval::format::py_repr(&v, &names))),
                    spec,
                    &names,
                ),
                (_, Some("r")) => crate::eval::format::apply_spec(
                    &Value::str(&crate::eval::format::py_repr(&v, &names)),
                    spec,
                    &names,
                ),
                (_, Some("s") | None) => crate::eval::format::apply_spec(&v, spec, &names),
                (_, Some(other)) => return Err(ext(format!("Unknown conversion specifier {other}"))),
            }
            .map_err(ext)?;
            out.push_str(&r);
            i += end + 1;
            continue;
        }
        if c == '}' && chars.get(i + 1) == Some(&'}') {
            out.push('}');
            i += 2;
            continue;
        }
        out.push(c);
        i += 1;
    }
    Ok(s(&out))
}
