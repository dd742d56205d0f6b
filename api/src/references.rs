//! How a referenced attribute is shown (console, CLI): the compiler exports it as `null` plus a
//! `core::Replace` mutator naming a reference; the agent resolves the value at deploy and never
//! reports it. What can be shown is the reference itself: its type and literal arguments.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// Literal arguments longer than this are shown by their length (an age ciphertext, a text).
const LONGEST_SHOWN: usize = 60;

/// How an attribute's value is shown: as it is, or, filled from a reference at deploy, as the
/// reference (after the value as exported when that is not `null`: a dict a reference fills one
/// key of).
pub fn shown_value(value: &Value, referenced: Option<&String>, text: impl Fn(&Value) -> String) -> String {
    match (value, referenced) {
        (_, None) => text(value),
        (Value::Null, Some(reference)) => reference.clone(),
        (_, Some(reference)) => format!("{} {reference}", text(value)),
    }
}

/// The attributes of an exported resource that a mutator fills from a reference, each with the
/// reference as text: `<reference std::Environment(name=DB_PASSWORD)>`. Keyed by the attribute
/// the mutator's destination starts in (`environment` for `environment.TOKEN`).
pub fn referenced_attributes(attributes: &Map<String, Value>) -> BTreeMap<String, String> {
    let references: BTreeMap<&str, &Value> = attributes
        .get("references")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| Some((r.get("id")?.as_str()?, r)))
        .collect();
    let mut out = BTreeMap::new();
    for mutator in attributes.get("mutators").and_then(Value::as_array).into_iter().flatten() {
        let args = mutator.get("args").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        let arg = |name: &str| args.iter().find(|a| a.get("name").and_then(Value::as_str) == Some(name));
        let (Some(destination), Some(reference)) = (
            arg("destination").and_then(|a| a.get("value")).and_then(Value::as_str),
            arg("value").and_then(|a| a.get("id")).and_then(Value::as_str),
        ) else {
            continue;
        };
        let body = destination.strip_prefix("$.").unwrap_or(destination);
        let attribute = body.split(['.', '[']).next().unwrap_or(body).to_string();
        let text = format!("<reference {}>", describe(reference, &references, 0));
        out.entry(attribute).and_modify(|t: &mut String| *t = format!("{t}, {text}")).or_insert(text);
    }
    out
}

/// `type(arg=value, ...)`, an argument that is another reference described the same way.
fn describe(id: &str, references: &BTreeMap<&str, &Value>, depth: usize) -> String {
    let Some(reference) = references.get(id).filter(|_| depth < 8) else { return id.to_string() };
    let kind = reference.get("type").and_then(Value::as_str).unwrap_or("?");
    let args: Vec<String> = reference
        .get("args")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|a| {
            let name = a.get("name").and_then(Value::as_str).unwrap_or("?");
            let value = match (a.get("type").and_then(Value::as_str), a.get("value")) {
                (Some("reference"), _) => {
                    describe(a.get("id").and_then(Value::as_str).unwrap_or("?"), references, depth + 1)
                }
                (_, Some(Value::String(s))) if s.chars().count() > LONGEST_SHOWN || s.contains('\n') => {
                    format!("<{} characters>", s.chars().count())
                }
                (_, Some(Value::String(s))) => s.clone(),
                (_, Some(v)) => v.to_string(),
                (Some(kind), None) => format!("<{kind}>"),
                (None, None) => "?".into(),
            };
            format!("{name}={value}")
        })
        .collect();
    format!("{kind}({})", args.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_referenced_attribute_shows_its_reference() {
        let attributes = json!({
            "content": null, "environment": {"TOKEN": null},
            "references": [
                {"id": "a", "type": "std::Environment", "args": [{"name": "name", "type": "literal", "value": "DB_PASSWORD"}]},
                {"id": "b", "type": "std::IntReference", "args": [{"name": "value", "type": "reference", "id": "a"}]},
                {"id": "c", "type": "agesecret::Decrypt", "args": [
                    {"name": "ciphertext", "type": "literal", "value": "-----BEGIN AGE-----\nx\n-----END AGE-----"},
                    {"name": "identity_file", "type": "literal", "value": "/etc/age.key"}]},
            ],
            "mutators": [
                {"type": "core::Replace", "args": [{"name": "value", "type": "reference", "id": "c"}, {"name": "destination", "type": "literal", "value": "content"}]},
                {"type": "core::Replace", "args": [{"name": "value", "type": "reference", "id": "b"}, {"name": "destination", "type": "literal", "value": "environment.TOKEN"}]},
            ],
        });
        let shown = referenced_attributes(attributes.as_object().unwrap());
        assert_eq!(
            shown["content"],
            "<reference agesecret::Decrypt(ciphertext=<39 characters>, identity_file=/etc/age.key)>"
        );
        assert_eq!(shown["environment"], "<reference std::IntReference(value=std::Environment(name=DB_PASSWORD))>");
        assert_eq!(shown.len(), 2);
    }
}
