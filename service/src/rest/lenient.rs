//! Inmanta's coercions, for Inmanta's own clients.
//!
//! Inmanta validates the arguments of a call with pydantic in lax mode, and its clients rely on
//! it: `inmanta-cli version release` sends the version as the string `"1"`, `action-log list`
//! sends `logs=False`, `param set` and `environment modify` send arguments the method does not
//! take. [`from_value`] reads a JSON value the way pydantic would:
//! - integers from numeric strings (`"7"`) and from floats without fraction (`7.0`);
//! - floats from numeric strings;
//! - booleans from `true`/`false` in any case, `1`/`0`, `yes`/`no`, `on`/`off`, `t`/`f`, `y`/`n`
//!   (strings or the numbers 1 and 0);
//! - in a body, the arguments Inmanta's client repeats from the path (`id`, `version`, ...: its
//!   client sends every argument of a POST, PUT or PATCH in the body, path ones included) are
//!   dropped when the target does not declare them. Any other undeclared field stays an error,
//!   as in Inmanta ("request contains fields ... that are not declared in method").
//!
//! Everything else stays strict: a string that spells no number or boolean, a missing required
//! field or a value of the wrong kind is still an error. The extractors
//! ([`super::extract::Json`], [`super::extract::Query`]) try the strict reading first and come
//! here only when it fails, so a request our own clients send never changes meaning, and a
//! request that is wrong either way gets the strict reading's message.

use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use serde::forward_to_deserialize_any;
use serde_json::{Map, Value};

type Error = serde_json::Error;

/// Read `value` as a `T`, with pydantic's lax coercions.
pub fn from_value<T: DeserializeOwned>(value: Value) -> Result<T, Error> {
    T::deserialize(Lenient(value, &[]))
}

/// Read the body `value` as a `T` like [`from_value`], dropping the top-level fields named in
/// `path_arguments` that `T` does not declare.
pub fn from_body<T: DeserializeOwned>(value: Value, path_arguments: &[String]) -> Result<T, Error> {
    T::deserialize(Lenient(value, path_arguments))
}

/// The boolean a pydantic-lax string spells, if any.
pub fn parse_bool(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" | "t" | "y" => Some(true),
        "false" | "0" | "no" | "off" | "f" | "n" => Some(false),
        _ => None,
    }
}

/// A JSON value that deserializes leniently, and whose parts do too; with the path arguments
/// that may be dropped from it (only at the top: the parts get none).
struct Lenient<'a>(Value, &'a [String]);

impl Lenient<'_> {
    fn integer<'de, V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match &self.0 {
            Value::String(text) => {
                let text = text.trim();
                if let Ok(n) = text.parse::<i64>() {
                    return visitor.visit_i64(n);
                }
                if let Ok(n) = text.parse::<u64>() {
                    return visitor.visit_u64(n);
                }
            }
            Value::Number(n) if n.is_f64() => {
                let f = n.as_f64().unwrap_or(f64::NAN);
                if f.fract() == 0.0 && f.abs() < 9.0e15 {
                    return visitor.visit_i64(f as i64);
                }
            }
            _ => {}
        }
        self.any(visitor)
    }

    fn float<'de, V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        if let Value::String(text) = &self.0
            && let Ok(f) = text.trim().parse::<f64>()
            && f.is_finite()
        {
            return visitor.visit_f64(f);
        }
        // a number by value: with `arbitrary_precision` a float written otherwise than serde_json
        // writes it (`1e2`, `1.50`) would reach the visitor as a map
        if let Value::Number(n) = &self.0
            && let Some(f) = n.as_f64()
        {
            return visitor.visit_f64(f);
        }
        self.any(visitor)
    }

    fn any<'de, V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Object(map) => visitor.visit_map(LenientMap::new(map, None, &[])),
            Value::Array(items) => visitor.visit_seq(LenientSeq(items.into_iter())),
            other => de::Deserializer::deserialize_any(other, visitor),
        }
    }
}

impl<'de> de::Deserializer<'de> for Lenient<'_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.any(visitor)
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let coerced = match &self.0 {
            Value::String(text) => parse_bool(text),
            Value::Number(n) => match n.as_f64() {
                Some(1.0) => Some(true),
                Some(0.0) => Some(false),
                _ => None,
            },
            _ => None,
        };
        match coerced {
            Some(b) => visitor.visit_bool(b),
            None => self.any(visitor),
        }
    }

    fn deserialize_i8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.integer(visitor)
    }
    fn deserialize_i16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.integer(visitor)
    }
    fn deserialize_i32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.integer(visitor)
    }
    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.integer(visitor)
    }
    fn deserialize_u8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.integer(visitor)
    }
    fn deserialize_u16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.integer(visitor)
    }
    fn deserialize_u32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.integer(visitor)
    }
    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.integer(visitor)
    }
    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.float(visitor)
    }
    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.float(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            other => visitor.visit_some(Lenient(other, self.1)),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _name: &'static str, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.0 {
            Value::Object(map) => visitor.visit_map(LenientMap::new(map, Some(fields), self.1)),
            other => Lenient(other, &[]).any(visitor),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        de::Deserializer::deserialize_enum(self.0, name, variants, visitor)
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        de::Deserializer::deserialize_unit(self.0, visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }

    forward_to_deserialize_any! {
        char str string bytes byte_buf unit_struct seq tuple tuple_struct map identifier
    }
}

/// The entries of an object, without the droppable path arguments a struct does not declare.
struct LenientMap {
    entries: std::vec::IntoIter<(String, Value)>,
    value: Option<Value>,
}

impl LenientMap {
    fn new(map: Map<String, Value>, fields: Option<&'static [&'static str]>, droppable: &[String]) -> LenientMap {
        let declared = |key: &str| fields.is_none_or(|fields| fields.contains(&key));
        let entries: Vec<(String, Value)> =
            map.into_iter().filter(|(key, _)| declared(key) || !droppable.contains(key)).collect();
        LenientMap { entries: entries.into_iter(), value: None }
    }
}

impl<'de> MapAccess<'de> for LenientMap {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Error> {
        match self.entries.next() {
            Some((key, value)) => {
                self.value = Some(value);
                seed.deserialize(key.into_deserializer()).map(Some)
            }
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let value = self.value.take().ok_or_else(|| de::Error::custom("a map value without its key"))?;
        seed.deserialize(Lenient(value, &[]))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

struct LenientSeq(std::vec::IntoIter<Value>);

impl<'de> SeqAccess<'de> for LenientSeq {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, Error> {
        self.0.next().map(|value| seed.deserialize(Lenient(value, &[]))).transpose()
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::{from_body, from_value};

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Call {
        id: i64,
        push: Option<bool>,
        ratio: Option<f64>,
        name: Option<String>,
        #[serde(default)]
        nested: Vec<Inner>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        limit: u32,
    }

    #[test]
    fn coerces_what_pydantic_coerces() {
        let call: Call = from_value(json!({
            "id": "7", "push": "False", "ratio": "0.5", "name": "x", "nested": [{"limit": 2.0}]
        }))
        .unwrap();
        assert_eq!(
            call,
            Call {
                id: 7,
                push: Some(false),
                ratio: Some(0.5),
                name: Some("x".into()),
                nested: vec![Inner { limit: 2 }]
            }
        );
        for (text, want) in [("True", true), ("1", true), ("yes", true), ("false", false), ("0", false), ("OFF", false)]
        {
            let call: Call = from_value(json!({"id": 1, "push": text})).unwrap();
            assert_eq!(call.push, Some(want), "{text}");
        }
        let call: Call = from_value(json!({"id": 1, "push": 1})).unwrap();
        assert_eq!(call.push, Some(true)); // a float however written (serde_json's `arbitrary_precision` keeps the text)
        let body = serde_json::from_str(r#"{"id": 1, "ratio": 1e-1, "nested": [{"limit": 3.00}]}"#).unwrap();
        let call: Call = from_value(body).unwrap();
        assert_eq!((call.ratio, call.nested), (Some(0.1), vec![Inner { limit: 3 }]));
    }

    #[test]
    fn path_arguments_repeated_in_the_body_are_dropped() {
        let path = ["version".to_string()];
        let call: Call = from_body(json!({"id": 3, "version": "3"}), &path).unwrap();
        assert_eq!(call.id, 3);
        assert!(from_value::<Call>(json!({"id": 3, "version": "3"})).is_err(), "not a path argument");
        let err = from_body::<Call>(json!({"id": 3, "bogus": 1}), &path).unwrap_err();
        assert!(err.to_string().contains("bogus"), "{err}");
        let nested = from_body::<Call>(json!({"id": 3, "nested": [{"limit": 1, "version": 1}]}), &path);
        assert!(nested.is_err(), "only the top level drops path arguments");
    }

    #[test]
    fn wrong_input_stays_an_error() {
        for bad in [
            json!({"id": "seven"}),
            json!({"id": 1.5}),
            json!({"push": true}),
            json!({"id": 1, "push": "maybe"}),
            json!({"id": 1, "push": 2}),
            json!({"id": 1, "name": 5}),
            json!({"id": 1, "nested": [{"limit": -1}]}),
        ] {
            assert!(from_value::<Call>(bad.clone()).is_err(), "{bad}");
        }
    }
}
