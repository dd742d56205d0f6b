//! `validate_type`: the checks of Inmanta's `std::validate_type` (pydantic types).

use super::*;

pub(super) fn validate(kind: &str, v: &Value, params: &Value) -> bool {
    let st = match v {
        Value::Str(s) => s.to_string(),
        Value::Int(i) => i.to_string(),
        Value::BigInt(i) => i.to_string(),
        _ => String::new(),
    };
    let num = match v {
        Value::Int(i) => Some(*i as f64),
        Value::BigInt(i) => i.to_f64(),
        Value::Float(f) => Some(*f),
        _ => None,
    };
    let param = |k: &str| match params {
        Value::Dict(d) => dict_get(d, k).and_then(|x| match x {
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            _ => None,
        }),
        _ => None,
    };
    match kind {
        "ipaddress.IPv4Address" | "pydantic.IPv4Address" => st.parse::<std::net::Ipv4Addr>().is_ok(),
        "ipaddress.IPv6Address" | "pydantic.IPv6Address" => st.parse::<std::net::Ipv6Addr>().is_ok(),
        "ipaddress.IPv4Interface" | "pydantic.IPv4Interface" => {
            net::parse_cidr(&st).is_some_and(|(ip, _)| ip.is_ipv4())
        }
        "ipaddress.IPv6Interface" | "pydantic.IPv6Interface" => {
            net::parse_cidr(&st).is_some_and(|(ip, _)| ip.is_ipv6())
        }
        "ipaddress.IPv4Network" | "pydantic.IPv4Network" => net::is_network(&st) && !st.contains(':'),
        "ipaddress.IPv6Network" | "pydantic.IPv6Network" => net::is_network(&st) && st.contains(':'),
        "pydantic.IPvAnyAddress" => st.parse::<std::net::IpAddr>().is_ok(),
        "pydantic.IPvAnyInterface" => net::parse_cidr(&st).is_some(),
        "pydantic.IPvAnyNetwork" => net::is_network(&st),
        "uuid.UUID" => {
            let h: String = st.chars().filter(|c| *c != '-').collect();
            h.len() == 32 && h.chars().all(|c| c.is_ascii_hexdigit())
        }
        "pydantic.EmailStr" => st
            .split_once('@')
            .is_some_and(|(a, b)| !a.is_empty() && b.contains('.') && !b.starts_with('.') && !st.contains(' ')),
        "pydantic.NameEmail" => st.contains('@'),
        "pydantic.AnyUrl" => st.split_once("://").is_some_and(|(a, b)| !a.is_empty() && !b.is_empty()),
        "pydantic.AnyHttpUrl" | "pydantic.HttpUrl" => {
            (st.starts_with("http://") || st.starts_with("https://")) && st.len() > "https://".len() - 1
        }
        "datetime.date" => is_date(&st),
        "datetime.time" => regex::Regex::new(r"^\d{2}:\d{2}(:\d{2}(\.\d+)?)?$").is_ok_and(|r| r.is_match(&st)),
        "datetime.datetime" => {
            regex::Regex::new(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$")
                .is_ok_and(|r| r.is_match(&st))
        }
        "builtin.base64" => is_base64(&st),
        "builtin.printable_ascii" => st.chars().all(|c| (' '..='~').contains(&c)),
        "builtin.ascii_word" => !st.is_empty() && st.chars().all(|c| ('!'..='~').contains(&c)),
        "builtin.non_empty_string" => st.chars().any(|c| !c.is_whitespace()),
        "pydantic.PositiveInt" | "pydantic.PositiveFloat" => num.is_some_and(|n| n > 0.0),
        "pydantic.NegativeInt" | "pydantic.NegativeFloat" => num.is_some_and(|n| n < 0.0),
        "pydantic.constr" => {
            let Value::Str(text) = v else { return false };
            let pattern = match params {
                Value::Dict(d) => dict_get(d, "regex").or_else(|| dict_get(d, "pattern")).cloned(),
                _ => None,
            };
            let len = text.chars().count() as f64;
            let pattern_ok = match pattern {
                Some(Value::Str(p)) => {
                    fancy_regex::Regex::new(&p).is_ok_and(|r| r.is_match(text.as_ref()).unwrap_or(false))
                }
                _ => true,
            };
            pattern_ok && param("min_length").is_none_or(|m| len >= m) && param("max_length").is_none_or(|m| len <= m)
        }
        "pydantic.conint" | "pydantic.confloat" => {
            let Some(n) = num else { return false };
            param("ge").is_none_or(|x| n >= x)
                && param("gt").is_none_or(|x| n > x)
                && param("le").is_none_or(|x| n <= x)
                && param("lt").is_none_or(|x| n < x)
        }
        _ => true,
    }
}

/// `YYYY-MM-DD` naming a day of the calendar (pydantic's date).
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let (Ok(y), Ok(m), Ok(d)) = (s[..4].parse::<u32>(), s[5..7].parse::<u32>(), s[8..].parse::<u32>()) else {
        return false;
    };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    y >= 1 && (1..=days).contains(&d)
}

pub(super) fn is_base64(s: &str) -> bool {
    let t = s.trim_end_matches('=');
    s.len().is_multiple_of(4)
        && s.len() - t.len() <= 2
        && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '/')
}
