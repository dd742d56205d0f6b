//! Python-style string conversion and format specs, and the bounded rendering of values in
//! messages.

use super::value::{Value, py_float};

/// Text rendered up to a limit of bytes: once the limit is passed, rendering stops. Rendering a
/// huge value, or a dict that holds the same dict many times over (its text doubles with each
/// level while its memory does not), then costs no more than the limit.
pub(crate) struct Bounded {
    pub text: String,
    limit: usize,
    /// Something was left out: the whole text would pass the limit.
    pub cut: bool,
    /// The bytes offered, kept or not: the whole text's length when every piece was offered (a
    /// list or dict stops offering once it is cut).
    pub offered: usize,
}

impl Bounded {
    pub(crate) fn new(limit: usize) -> Bounded {
        Bounded { text: String::new(), limit, cut: false, offered: 0 }
    }

    /// Appends `s`, or as much of it as fits (whole characters); false once the limit is reached.
    pub(crate) fn push(&mut self, s: &str) -> bool {
        self.offered = self.offered.saturating_add(s.len());
        let room = self.limit - self.text.len();
        if !self.cut && s.len() <= room {
            self.text.push_str(s);
            return true;
        }
        if !self.cut {
            let mut end = room;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            self.text.push_str(&s[..end]);
            self.cut = true;
        }
        false
    }
}

/// `str()` of a value as Python prints it (used by `string()` and f-strings).
pub(crate) fn py_str(v: &Value, names: &dyn Fn(u32) -> String) -> String {
    str_in(v, names, "null")
}

/// `str()` of the value as a plugin (Python code) sees it: null is Python's `None` there.
pub(crate) fn python_str(v: &Value, names: &dyn Fn(u32) -> String) -> String {
    str_in(v, names, "None")
}

fn str_in(v: &Value, names: &dyn Fn(u32) -> String, null: &str) -> String {
    match v {
        Value::Str(s) => s.to_string(),
        Value::Float(f) => py_float(*f),
        other => unbounded(|out| repr_into(other, names, null, out)),
    }
}

/// `{{ }}` interpolation, appended to `out` within its limit: like `str()` but an integral float
/// prints without `.0` and null as `null`.
pub(crate) fn interp_into(v: &Value, names: &dyn Fn(u32) -> String, out: &mut Bounded) {
    match v {
        Value::Str(s) => {
            out.push(s);
        }
        Value::Float(f) if f.fract() == 0.0 => interp_into(&super::value::int_of_integral_float(*f), names, out),
        Value::Float(f) => {
            out.push(&py_float(*f));
        }
        other => repr_into(other, names, "null", out),
    }
}

/// `repr()` of a value of the language: null is Inmanta's `NoneValue`, which prints as `null`.
pub(crate) fn py_repr(v: &Value, names: &dyn Fn(u32) -> String) -> String {
    unbounded(|out| repr_into(v, names, "null", out))
}

/// Python `repr` of a string.
pub(crate) fn py_repr_str(s: &str) -> String {
    unbounded(|out| repr_str_into(s, out))
}

/// How many characters of a value's text a message shows (a cut value also names its size).
pub(crate) const SHOWN_CHARS: usize = 120;

/// The `repr()` of a value for a message: at most about `limit` bytes of it, and when it is cut,
/// its full size (`'aaaa…' (104 857 600 characters)`), so an error about a huge value stays short.
pub(crate) fn shown(v: &Value, names: &dyn Fn(u32) -> String, limit: usize) -> String {
    let mut out = Bounded::new(limit);
    repr_into(v, names, "null", &mut out);
    if !out.cut {
        return out.text;
    }
    let mut text = out.text;
    text.push('…');
    match v {
        Value::Str(s) => {
            text.push(quote_of(s));
            text + &format!(" ({} characters)", grouped(s.chars().count() as u64))
        }
        Value::List(l) => text + &format!(" ({} elements)", grouped(l.len() as u64)),
        Value::Dict(d) => text + &format!(" ({} entries)", grouped(d.len() as u64)),
        _ => text,
    }
}

/// A value in a message where instances have no names: at most about 80 characters of it.
pub(crate) fn short_repr(v: &Value) -> String {
    shown(v, &|i| format!("<instance {i}>"), 80)
}

/// The keys of a dict for a message, `["a", "b"]`: cut past [`SHOWN_CHARS`] with their number.
pub(crate) fn shown_keys(dict: &[(std::rc::Rc<str>, Value)]) -> String {
    let mut out = Bounded::new(SHOWN_CHARS);
    out.push("[");
    for (n, (key, _)) in dict.iter().enumerate() {
        let key: String = key.chars().take(SHOWN_CHARS).collect();
        if (n > 0 && !out.push(", ")) || !out.push(&format!("{key:?}")) {
            break;
        }
    }
    out.push("]");
    match out.cut {
        true => format!("{}… ({} keys)", out.text, grouped(dict.len() as u64)),
        false => out.text,
    }
}

/// A count with its thousands apart, as the documentation writes them: `104 857 600`.
pub(crate) fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

fn unbounded<R>(render: impl FnOnce(&mut Bounded) -> R) -> String {
    let mut out = Bounded::new(usize::MAX);
    render(&mut out);
    out.text
}

fn repr_into(v: &Value, names: &dyn Fn(u32) -> String, null: &str, out: &mut Bounded) {
    match v {
        Value::Null => out.push(null),
        Value::Bool(true) => out.push("True"),
        Value::Bool(false) => out.push("False"),
        Value::Int(i) => out.push(&i.to_string()),
        Value::BigInt(i) => out.push(&i.to_string()),
        Value::Float(f) => out.push(&py_float(*f)),
        Value::Str(s) => repr_str_into(s, out),
        Value::List(l) => {
            out.push("[");
            for (n, x) in l.iter().enumerate() {
                if out.cut || (n > 0 && !out.push(", ")) {
                    return;
                }
                repr_into(x, names, null, out);
            }
            out.push("]")
        }
        Value::Dict(d) => {
            out.push("{");
            for (n, (k, x)) in d.iter().enumerate() {
                if out.cut || (n > 0 && !out.push(", ")) {
                    return;
                }
                repr_str_into(k, out);
                out.push(": ");
                repr_into(x, names, null, out);
            }
            out.push("}")
        }
        Value::Instance(i) => out.push(&names(*i)),
        Value::Unknown(_) => out.push("Unknown"),
        Value::Reference(r) => out.push(&format!("<inmanta_plugins.std.{} object>", r.class)),
    };
}

/// The quote Python's `repr` puts around a string.
fn quote_of(s: &str) -> char {
    if s.contains('\'') && !s.contains('"') { '"' } else { '\'' }
}

/// Python `repr` of a string, appended to `out` (runs of plain characters are copied whole).
fn repr_str_into(s: &str, out: &mut Bounded) -> bool {
    let q = quote_of(s);
    out.push(if q == '"' { "\"" } else { "'" });
    let mut plain = 0;
    for (at, c) in s.char_indices() {
        let escaped = match c {
            '\\' => "\\\\",
            '\n' => "\\n",
            '\t' => "\\t",
            '\r' => "\\r",
            '"' if q == '"' => "\\\"",
            '\'' if q == '\'' => "\\'",
            _ => continue,
        };
        if !out.push(&s[plain..at]) || !out.push(escaped) {
            return false;
        }
        plain = at + c.len_utf8();
    }
    out.push(&s[plain..]) && out.push(if q == '"' { "\"" } else { "'" })
}

/// The error of a float format of an int past the float range: Python's `OverflowError`, which
/// Inmanta lets through (the f-string's caller checks for this message).
pub(crate) const INT_TOO_LARGE: &str = "int too large to convert to float";

fn is_neg(n: &num_bigint::BigInt) -> bool {
    n.sign() == num_bigint::Sign::Minus
}

/// Applies a Python format spec (`[[fill]align][sign][#][0][width][,][.precision][type]`).
pub(crate) fn apply_spec(v: &Value, spec: &str, names: &dyn Fn(u32) -> String) -> Result<String, String> {
    if spec.is_empty() {
        return Ok(py_str(v, names));
    }
    let chars: Vec<char> = spec.chars().collect();
    let mut i = 0;
    let mut fill = ' ';
    let mut align = None;
    if chars.len() >= 2 && matches!(chars[1], '<' | '>' | '^' | '=') {
        fill = chars[0];
        align = Some(chars[1]);
        i = 2;
    } else if !chars.is_empty() && matches!(chars[0], '<' | '>' | '^' | '=') {
        align = Some(chars[0]);
        i = 1;
    }
    let mut sign = '-';
    if i < chars.len() && matches!(chars[i], '+' | '-' | ' ') {
        sign = chars[i];
        i += 1;
    }
    if i < chars.len() && chars[i] == '#' {
        i += 1;
    }
    if i < chars.len() && chars[i] == '0' {
        if align.is_none() {
            fill = '0';
            align = Some('=');
        }
        i += 1;
    }
    let mut width = 0usize;
    while i < chars.len() && chars[i].is_ascii_digit() {
        width = width.saturating_mul(10).saturating_add(chars[i].to_digit(10).unwrap_or(0) as usize);
        i += 1;
    }
    let mut grouping = false;
    if i < chars.len() && (chars[i] == ',' || chars[i] == '_') {
        grouping = true;
        i += 1;
    }
    let mut precision = None;
    if i < chars.len() && chars[i] == '.' {
        i += 1;
        let mut p = 0usize;
        let s = i;
        while i < chars.len() && chars[i].is_ascii_digit() {
            p = p.saturating_mul(10).saturating_add(chars[i].to_digit(10).unwrap_or(0) as usize);
            i += 1;
        }
        if s == i {
            return Err(format!("Format specifier missing precision in '{spec}'"));
        }
        precision = Some(p);
    }
    if width > 10_000 || precision.is_some_and(|p| p > 1_000) {
        return Err(format!("Format specifier too large in '{spec}'"));
    }
    let ty = if i < chars.len() { Some(chars[i]) } else { None };
    if i + 1 < chars.len() {
        return Err(format!("Invalid format specifier '{spec}'"));
    }
    let (mut body, numeric, negative) = match (v, ty) {
        (Value::Int(n), None | Some('d')) => (n.unsigned_abs().to_string(), true, *n < 0),
        (Value::Int(n), Some('x')) => (format!("{:x}", n.unsigned_abs()), true, *n < 0),
        (Value::Int(n), Some('X')) => (format!("{:X}", n.unsigned_abs()), true, *n < 0),
        (Value::Int(n), Some('o')) => (format!("{:o}", n.unsigned_abs()), true, *n < 0),
        (Value::Int(n), Some('b')) => (format!("{:b}", n.unsigned_abs()), true, *n < 0),
        (Value::Int(n), Some('f' | 'F' | 'e' | '%' | 'g')) => {
            return apply_spec(&Value::Float(*n as f64), spec, names);
        }
        (Value::BigInt(n), None | Some('d')) => (n.magnitude().to_string(), true, is_neg(n)),
        (Value::BigInt(n), Some('x')) => (format!("{:x}", n.magnitude()), true, is_neg(n)),
        (Value::BigInt(n), Some('X')) => (format!("{:X}", n.magnitude()), true, is_neg(n)),
        (Value::BigInt(n), Some('o')) => (format!("{:o}", n.magnitude()), true, is_neg(n)),
        (Value::BigInt(n), Some('b')) => (format!("{:b}", n.magnitude()), true, is_neg(n)),
        (Value::BigInt(n), Some('f' | 'F' | 'e' | '%' | 'g')) => {
            let f = super::value::big_to_f64(n).ok_or(INT_TOO_LARGE)?;
            return apply_spec(&Value::Float(f), spec, names);
        }
        (Value::Float(f), Some('f' | 'F')) => (format!("{:.*}", precision.unwrap_or(6), f.abs()), true, *f < 0.0),
        (Value::Float(f), Some('%')) => (format!("{:.*}%", precision.unwrap_or(6), f.abs() * 100.0), true, *f < 0.0),
        (Value::Float(f), Some('e')) => {
            let s = format!("{:.*e}", precision.unwrap_or(6), f.abs());
            // Rust prints 1.5e2, Python 1.5e+02
            let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
            let exp: i32 = e.parse().unwrap_or(0);
            (format!("{m}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs()), true, *f < 0.0)
        }
        (Value::Float(f), None | Some('g')) => match precision {
            Some(p) => {
                let s = format!("{:.*}", p.saturating_sub(1), f.abs());
                (s.trim_end_matches('0').trim_end_matches('.').to_string(), true, *f < 0.0)
            }
            None => (py_float(f.abs()), true, *f < 0.0),
        },
        (Value::Str(s), None | Some('s')) => {
            let s: String = match precision {
                Some(p) => s.chars().take(p).collect(),
                None => s.to_string(),
            };
            (s, false, false)
        }
        (Value::Bool(_) | Value::Null | Value::List(_) | Value::Dict(_) | Value::Instance(_), None | Some('s')) => {
            (py_str(v, names), false, false)
        }
        _ => return Err(format!("Unknown format code '{}' for value of type {}", ty.unwrap_or(' '), v.type_name())),
    };
    if grouping && numeric {
        let (int_part, rest) = match body.find(|c: char| !c.is_ascii_digit()) {
            Some(p) => (body[..p].to_string(), body[p..].to_string()),
            None => (body.clone(), String::new()),
        };
        let mut g = String::new();
        for (n, c) in int_part.chars().enumerate() {
            if n > 0 && (int_part.len() - n) % 3 == 0 {
                g.push(',');
            }
            g.push(c);
        }
        body = g + &rest;
    }
    let sign_str = if negative {
        "-"
    } else if numeric && sign == '+' {
        "+"
    } else if numeric && sign == ' ' {
        " "
    } else {
        ""
    };
    let len = body.chars().count() + sign_str.len();
    let pad = width.saturating_sub(len);
    let align = align.unwrap_or(if numeric { '>' } else { '<' });
    let fills = |n: usize| std::iter::repeat_n(fill, n).collect::<String>();
    Ok(match align {
        '<' => format!("{sign_str}{body}{}", fills(pad)),
        '^' => format!("{}{sign_str}{body}{}", fills(pad / 2), fills(pad - pad / 2)),
        '=' => format!("{sign_str}{}{body}", fills(pad)),
        _ => format!("{}{sign_str}{body}", fills(pad)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(v: Value, s: &str) -> String {
        apply_spec(&v, s, &|i| format!("<{i}>")).expect("valid spec")
    }

    #[test]
    fn format_specs() {
        assert_eq!(spec(Value::Int(7), "03d"), "007");
        assert_eq!(spec(Value::Int(-7), "04"), "-007");
        assert_eq!(spec(Value::Int(1234567), ","), "1,234,567");
        assert_eq!(spec(Value::Int(255), "x"), "ff");
        assert_eq!(spec(Value::Float(0.3333), ".2f"), "0.33");
        assert_eq!(spec(Value::Float(0.5), ".1%"), "50.0%");
        assert_eq!(spec(Value::Float(1234.5), "e"), "1.234500e+03");
        assert_eq!(spec(Value::str("ab"), "^6"), "  ab  ");
        assert_eq!(spec(Value::str("ab"), "*<4"), "ab**");
        assert_eq!(spec(Value::str("abcdef"), ".3"), "abc");
        assert!(apply_spec(&Value::str("a"), "d", &|_| String::new()).is_err());
        assert!(apply_spec(&Value::Int(1), "99999999", &|_| String::new()).is_err());
    }

    #[test]
    fn values_in_messages_are_cut_with_their_size() {
        let names = |i: u32| format!("<{i}>");
        let huge = Value::str(&"a".repeat(10_000_000));
        let shown_huge = shown(&huge, &names, 20);
        assert_eq!(shown_huge, format!("'{}…' (10 000 000 characters)", "a".repeat(19)));
        let list = Value::list((0..1000).map(Value::Int).collect());
        assert_eq!(shown(&list, &names, 12), "[0, 1, 2, 3,… (1 000 elements)");
        assert_eq!(shown(&Value::list(vec![Value::Int(1)]), &names, 12), "[1]");
        // a dict holding the same dict at each of 40 levels: a text of 2**40 entries, cut at once
        let mut nested = Value::Dict(std::rc::Rc::new(vec![("k".into(), Value::Int(1))]));
        for _ in 0..40 {
            nested = Value::Dict(std::rc::Rc::new(vec![("a".into(), nested.clone()), ("b".into(), nested)]));
        }
        assert_eq!(shown(&nested, &names, 30), "{'a': {'a': {'a': {'a': {'a': … (2 entries)");
        let keys: Vec<(std::rc::Rc<str>, Value)> = (0..100).map(|i| (i.to_string().into(), Value::Null)).collect();
        assert_eq!(shown_keys(&keys[..2]), r#"["0", "1"]"#);
        assert!(shown_keys(&keys).ends_with("… (100 keys)"), "{}", shown_keys(&keys));
    }

    fn interp_str(v: &Value, names: &dyn Fn(u32) -> String) -> String {
        unbounded(|out| interp_into(v, names, out))
    }

    #[test]
    fn python_strings() {
        let names = |i: u32| format!("<{i}>");
        assert_eq!(py_str(&Value::Bool(true), &names), "True");
        assert_eq!(py_str(&Value::Float(2.0), &names), "2.0");
        assert_eq!(interp_str(&Value::Float(2.0), &names), "2");
        assert_eq!(interp_str(&Value::Null, &names), "null");
        assert_eq!(py_repr(&Value::list(vec![Value::str("a"), Value::Int(1)]), &names), "['a', 1]");
        assert_eq!(py_repr(&Value::str("it's"), &names), "\"it's\"");
    }
}
