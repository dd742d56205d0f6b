//! The built-in handlers, one file per module of the model.

pub(crate) mod exec;
pub(crate) mod fs;
pub(crate) mod null;

/// Parses permissions as the model writes them (`644` meaning octal 0o644).
pub(crate) fn mode_from_model(v: &serde_json::Value) -> Option<u32> {
    let digits = match v {
        serde_json::Value::Number(n) => n.as_u64()?.to_string(),
        serde_json::Value::String(s) => s.trim_start_matches("0o").to_string(),
        _ => return None,
    };
    u32::from_str_radix(&digits, 8).ok().filter(|m| *m <= 0o7777)
}

/// The model's form of a mode: 0o644 becomes the integer 644.
pub(crate) fn mode_to_model(mode: u32) -> serde_json::Value {
    format!("{mode:o}").parse::<u64>().map(serde_json::Value::from).unwrap_or(serde_json::Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn modes_read_as_octal_digits() {
        assert_eq!(mode_from_model(&json!(644)), Some(0o644));
        assert_eq!(mode_from_model(&json!("0755")), Some(0o755));
        assert_eq!(mode_from_model(&json!(4755)), Some(0o4755));
        assert_eq!(mode_from_model(&json!(648)), None);
        assert_eq!(mode_from_model(&json!(null)), None);
        assert_eq!(mode_to_model(0o640), json!(640));
    }
}
