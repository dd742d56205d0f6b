//! Python-style string conversion and format specs.

use super::value::{Value, py_float, py_repr_str};

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
        other => repr_in(other, names, null),
    }
}

/// `{{ }}` interpolation: like `str()` but an integral float prints without `.0` and null as `null`.
pub(crate) fn interp_str(v: &Value, names: &dyn Fn(u32) -> String) -> String {
    match v {
        Value::Float(f) if f.fract() == 0.0 => py_str(&super::value::int_of_integral_float(*f), names),
        other => py_str(other, names),
    }
}

/// `repr()` of a value of the language: null is Inmanta's `NoneValue`, which prints as `null`.
pub(crate) fn py_repr(v: &Value, names: &dyn Fn(u32) -> String) -> String {
    repr_in(v, names, "null")
}

fn repr_in(v: &Value, names: &dyn Fn(u32) -> String, null: &str) -> String {
    match v {
        Value::Null => null.into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Int(i) => i.to_string(),
        Value::BigInt(i) => i.to_string(),
        Value::Float(f) => py_float(*f),
        Value::Str(s) => py_repr_str(s),
        Value::List(l) => format!("[{}]", l.iter().map(|x| repr_in(x, names, null)).collect::<Vec<_>>().join(", ")),
        Value::Dict(d) => format!(
            "{{{}}}",
            d.iter()
                .map(|(k, x)| format!("{}: {}", py_repr_str(k), repr_in(x, names, null)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Instance(i) => names(*i),
        Value::Unknown(_) => "Unknown".into(),
        Value::Reference(r) => format!("<inmanta_plugins.std.{} object>", r.class),
    }
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
