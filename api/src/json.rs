//! JSON helpers shared by the crates that compare values.

use serde_json::Value;

/// Equality of JSON values as Python compares the decoded values: numbers by value, not by how
/// they are written. The workspace's serde_json has `arbitrary_precision` (ints of any size stay
/// exact), so its own `==` compares numbers by their text and `1e2` differs from `100.0`. Two ints
/// compare exactly by their digits; otherwise as floats (`644` equals `644.0`, as in Python).
pub fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if x == y {
                return true;
            }
            let int = |n: &serde_json::Number| !n.is_f64();
            if int(x) && int(y) {
                // canonical digits on both sides: different text is a different int
                return (x.as_i64().is_some() && x.as_i64() == y.as_i64())
                    || (x.as_u64().is_some() && x.as_u64() == y.as_u64());
            }
            x.as_f64().is_some() && x.as_f64() == y.as_f64()
        }
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_json(a, b)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

/// Writes every float in `value` in the form serde_json gives an f64 (shortest digits: `1e2`
/// becomes `100.0`, `1e16` becomes `1e+16`): stored attributes, their hashes and textual
/// comparisons then do not depend on how a client spelled a float, as before
/// `arbitrary_precision`, when every float was an f64. Ints stay as written
/// (exact, any size); a float past f64's range stays as written.
pub fn canonical_numbers(value: &mut Value) {
    match value {
        Value::Number(n) if n.is_f64() => {
            if let Some(c) = n.as_f64().and_then(serde_json::Number::from_f64)
                && c != *n
            {
                *n = c;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(canonical_numbers),
        Value::Object(map) => map.values_mut().for_each(canonical_numbers),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Value {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn numbers_compare_by_value() {
        assert!(same_json(&parse("1e2"), &parse("100.0")));
        assert!(same_json(&parse("[644]"), &parse("[644.0]")));
        assert!(same_json(&parse(r#"{"a": {"b": 1.50}}"#), &parse(r#"{"a": {"b": 1.5}}"#)));
        assert!(!same_json(&parse("1.5"), &parse("2.5")));
        assert!(!same_json(&parse(r#"{"a": 1}"#), &parse(r#"{"a": 1, "b": 2}"#)));
    }

    #[test]
    fn canonical_floats() {
        let mut v = parse(r#"{"a": [1e2, 1.50, 7, 1e+16, 123456789012345678901234567890], "b": "1e2"}"#);
        canonical_numbers(&mut v);
        assert_eq!(v.to_string(), r#"{"a":[100.0,1.5,7,1e+16,123456789012345678901234567890],"b":"1e2"}"#);
    }

    #[test]
    fn big_ints_are_exact() {
        // 2**100 and 2**100 + 1 are the same float
        let a = parse("1267650600228229401496703205376");
        let b = parse("1267650600228229401496703205377");
        assert!(same_json(&a, &a.clone()));
        assert!(!same_json(&a, &b));
        assert_eq!(a.to_string(), "1267650600228229401496703205376");
    }
}
