//! String literals: `{{ name }}` interpolation, f-strings and plain literals.

use super::*;

/// Splits a string on `{{ dotted.name }}` fields; anything else stays literal.
pub(super) fn interpolation_parts(s: &str, span: Span) -> Vec<StrPart> {
    let mut parts = Vec::new();
    let mut lit = String::new();
    let mut rest = s;
    while let Some(open) = rest.find("{{") {
        let after = &rest[open + 2..];
        if let Some(close) = after.find("}}") {
            let inner = after[..close].trim();
            let valid = !inner.is_empty()
                && inner.split('.').all(|seg| {
                    let b = seg.as_bytes();
                    !b.is_empty()
                        && (b[0].is_ascii_alphabetic() || b[0] == b'_')
                        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'-')
                });
            if valid {
                lit.push_str(&rest[..open]);
                if !lit.is_empty() {
                    parts.push(StrPart::Lit(std::mem::take(&mut lit)));
                }
                parts.push(StrPart::Var(inner.split('.').map(str::to_string).collect(), span));
                rest = &after[close + 2..];
                continue;
            }
            lit.push_str(&rest[..open + 2]);
            rest = after;
            continue;
        }
        break;
    }
    lit.push_str(rest);
    if !lit.is_empty() || parts.is_empty() {
        parts.push(StrPart::Lit(lit));
    }
    parts
}

/// Parses the body of an f-string (escapes are interpreted like normal strings).
/// The expression of a token that is a whole literal on its own (strings are not: they may
/// interpolate).
pub(super) fn literal(tok: &Tok) -> Option<ExprKind> {
    Some(match tok {
        Tok::Int(i) => ExprKind::Int(*i),
        Tok::BigInt(i) => ExprKind::BigInt(i.clone()),
        Tok::Float(f) => ExprKind::Float(*f),
        Tok::Kw("true") => ExprKind::Bool(true),
        Tok::Kw("false") => ExprKind::Bool(false),
        Tok::Kw("null") => ExprKind::Null,
        Tok::Regex(r) => ExprKind::Regex(r.clone()),
        _ => return None,
    })
}

/// The escapes an f-string interprets (`\n`, `\t`, `\\`, quotes); any other backslash stays.
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some(q @ ('\\' | '\'' | '"')) => out.push(q),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

pub(super) fn parse_fstring(text: &str, span: Span, depth: usize) -> Result<Vec<FPart>, String> {
    if depth > 2 {
        return Err("format spec nested too deeply".into());
    }
    let chars: Vec<char> = text.chars().collect();
    let mut parts = Vec::new();
    let mut lit = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' && i + 1 < chars.len() && depth == 0 {
            match chars[i + 1] {
                'n' => lit.push('\n'),
                't' => lit.push('\t'),
                '\\' => lit.push('\\'),
                '\'' => lit.push('\''),
                '"' => lit.push('"'),
                other => {
                    lit.push('\\');
                    lit.push(other);
                }
            }
            i += 2;
            continue;
        }
        if c == '{' {
            if chars.get(i + 1) == Some(&'{') {
                lit.push('{');
                i += 2;
                continue;
            }
            // find matching close brace
            let mut level = 1;
            let mut j = i + 1;
            while j < chars.len() && level > 0 {
                match chars[j] {
                    '{' => level += 1,
                    '}' => level -= 1,
                    _ => {}
                }
                j += 1;
            }
            if level != 0 {
                return Err("single '{' is not allowed".into());
            }
            let inner: String = chars[i + 1..j - 1].iter().collect();
            let (head, spec) = match inner.find(':') {
                Some(p) => (&inner[..p], Some(&inner[p + 1..])),
                None => (inner.as_str(), None),
            };
            let (name, conversion) = match head.find('!') {
                Some(p) => (&head[..p], head[p + 1..].chars().next()),
                None => (head, None),
            };
            // Inmanta interprets the escapes of the whole string before it reads the fields, so
            // an escaped newline or tab around a field's name is whitespace, trimmed as such
            let name = if depth == 0 { unescape(name) } else { name.to_string() };
            let name = name.trim();
            // Inmanta trims each part of a dotted path (`{ a .b . c }` reads a.b.c)
            let dotted = name.split('.').map(str::trim).all(|s| {
                !s.is_empty()
                    && s.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            });
            // Inmanta looks any other field up as a variable of that name when the string runs
            // (a `NotFoundException` then); an empty path stands for `{}`, refused at run time too
            let path: Vec<String> = if name.is_empty() {
                Vec::new()
            } else if dotted {
                name.split('.').map(|s| s.trim().to_string()).collect()
            } else {
                vec![name.to_string()]
            };
            if !lit.is_empty() {
                parts.push(FPart::Lit(std::mem::take(&mut lit)));
            }
            let spec = match spec {
                Some(s) => parse_fstring(s, span, depth + 1)?,
                None => vec![],
            };
            parts.push(FPart::Field { path, conversion, spec, span });
            i = j;
            continue;
        }
        if c == '}' {
            if chars.get(i + 1) == Some(&'}') {
                lit.push('}');
                i += 2;
                continue;
            }
            return Err("single '}' is not allowed".into());
        }
        lit.push(c);
        i += 1;
    }
    if !lit.is_empty() {
        parts.push(FPart::Lit(lit));
    }
    Ok(parts)
}
