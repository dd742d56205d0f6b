//! What a route takes, for the OpenAPI document, read from its handler's own extractor types
//! when the router is built: the query parameters of its `Query<T>` and the body of its
//! `Json<T>`. So the document cannot drift from the handlers.
//!
//! No schema derive is needed: serde's derived `Deserialize` tells a probing deserializer what
//! it asks for. A struct names its fields (`deserialize_struct`); feeding it one field at a time
//! shows what that field asks for (a string, an integer, a list, an object, one of some
//! variants...). A field left out that the struct cannot do without is named by serde's
//! "missing field" error: that is how required fields are found.

use std::collections::BTreeSet;
use std::fmt;

use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, MapAccess, Visitor};
use serde_json::{Value, json};

/// What a route's handler takes besides its path parameters.
#[derive(Debug, Clone, Default)]
pub struct Takes {
    /// Query parameters: (name, JSON schema, required).
    pub query: Vec<(String, Value, bool)>,
    /// The JSON schema of the body.
    pub body: Option<Value>,
}

/// An extractor that adds what it reads to [`Takes`]; most read nothing a client sends.
pub trait Describe {
    fn describe(_takes: &mut Takes) {}
}

/// The arguments of a handler (axum's `Handler<T, S>`: `T` is a marker and the extractors).
pub trait DescribeArgs {
    fn takes() -> Takes;
}

macro_rules! describe_args {
    ($($arg:ident),*) => {
        impl<M, $($arg: Describe),*> DescribeArgs for (M, $($arg,)*) {
            fn takes() -> Takes {
                #[allow(unused_mut, reason = "the arm without arguments never writes it")]
                let mut takes = Takes::default();
                $($arg::describe(&mut takes);)*
                takes
            }
        }
    };
}

describe_args!();
describe_args!(A);
describe_args!(A, B);
describe_args!(A, B, C);
describe_args!(A, B, C, D);
describe_args!(A, B, C, D, E);
describe_args!(A, B, C, D, E, F);
describe_args!(A, B, C, D, E, F, G);
describe_args!(A, B, C, D, E, F, G, H);
describe_args!(A, B, C, D, E, F, G, H, I);

impl<T: DeserializeOwned> Describe for super::extract::Json<T> {
    fn describe(takes: &mut Takes) {
        takes.body = Some(schema::<T>());
    }
}

impl<T: DeserializeOwned> Describe for super::extract::Query<T> {
    fn describe(takes: &mut Takes) {
        let schema = schema::<T>();
        match schema["properties"].as_object() {
            Some(properties) => {
                let required: BTreeSet<&str> =
                    schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
                for (name, field) in properties {
                    takes.query.push((name.clone(), field.clone(), required.contains(name.as_str())));
                }
            }
            // A list of pairs: the paged lists, whose `filter.<column>` names vary.
            None => {
                for (name, kind) in [
                    ("limit", "integer"),
                    ("sort", "string"),
                    ("start", "string"),
                    ("end", "string"),
                    ("first_id", "string"),
                    ("last_id", "string"),
                ] {
                    takes.query.push((name.into(), json!({"type": kind}), false));
                }
            }
        }
    }
}

impl Describe for super::extract::Paging {
    fn describe(takes: &mut Takes) {
        super::extract::Query::<Vec<(String, String)>>::describe(takes)
    }
}
impl<T> Describe for super::extract::Path<T> {}
impl<T> Describe for axum::extract::Path<T> {}
impl<T> Describe for axum::extract::State<T> {}
impl<T> Describe for axum::Extension<T> {}
impl<T: Describe> Describe for Option<T> {
    fn describe(takes: &mut Takes) {
        T::describe(takes)
    }
}
impl Describe for super::extract::Tid {}
impl Describe for super::extract::PeerAddress {}
impl Describe for super::Caller {}
impl Describe for axum::http::Method {}
impl Describe for axum::http::Uri {}
impl Describe for axum::http::HeaderMap {}
impl Describe for axum::extract::Request {}
impl Describe for tower_sessions::Session {}

/// The JSON schema serde's `Deserialize` of `T` reveals.
pub fn schema<T: DeserializeOwned>() -> Value {
    match probe::<T>(Feed::Top) {
        Shape::Struct(fields) => {
            let mut properties = serde_json::Map::new();
            for field in fields {
                let field_schema = match probe::<T>(Feed::Field(field)) {
                    Shape::Struct(_) => json!({"type": "object"}),
                    other => other.schema(),
                };
                properties.insert(field.to_string(), field_schema);
            }
            let required = required::<T>();
            json!({"type": "object", "properties": properties, "required": required})
        }
        other => other.schema(),
    }
}

/// The fields serde names missing, one after the other, as the ones named before are given
/// (with made-up values). Stops when a made-up value does not fit: the rest count as optional.
fn required<T: DeserializeOwned>() -> Vec<&'static str> {
    let mut given: Vec<&'static str> = Vec::new();
    while let Err(Found::Missing(name)) = T::deserialize(Probe(Feed::Given(given.clone()))) {
        match name {
            name if given.contains(&name) => break,
            name => given.push(name),
        }
    }
    given
}

fn probe<T: DeserializeOwned>(feed: Feed) -> Shape {
    match T::deserialize(Probe(feed)) {
        Err(Found::Shape(shape)) => shape,
        _ => Shape::Any,
    }
}

/// What a type asked the deserializer for.
#[derive(Debug, Clone)]
enum Shape {
    Any,
    Null,
    Bool,
    Integer,
    Number,
    String,
    Array,
    Object,
    Struct(&'static [&'static str]),
    Enum(&'static [&'static str]),
}

impl Shape {
    fn schema(&self) -> Value {
        match self {
            Shape::Any => json!({}),
            Shape::Null => json!({"nullable": true}),
            Shape::Bool => json!({"type": "boolean"}),
            Shape::Integer => json!({"type": "integer"}),
            Shape::Number => json!({"type": "number"}),
            Shape::String => json!({"type": "string"}),
            Shape::Array => json!({"type": "array", "items": {}}),
            Shape::Object | Shape::Struct(_) => json!({"type": "object"}),
            Shape::Enum(variants) => json!({"type": "string", "enum": variants}),
        }
    }
}

/// How the probe stops: with what was asked for, or with serde's "missing field".
#[derive(Debug)]
enum Found {
    Shape(Shape),
    Missing(&'static str),
    Other,
}

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

impl std::error::Error for Found {}

impl de::Error for Found {
    fn custom<M: fmt::Display>(_: M) -> Self {
        Found::Other
    }

    fn missing_field(field: &'static str) -> Self {
        Found::Missing(field)
    }
}

/// What the probe answers a struct with.
#[derive(Clone)]
enum Feed {
    /// Nothing: find out what the type is.
    Top,
    /// One field whose value reports what it asks for.
    Field(&'static str),
    /// These fields, each with a made-up value: the first missing other one is named.
    Given(Vec<&'static str>),
}

struct Probe(Feed);

/// A value that only reports what it is asked for.
struct Asked;

macro_rules! asked {
    ($($method:ident => $shape:expr),* $(,)?) => {
        $(fn $method<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Found> {
            Err(Found::Shape($shape))
        })*
    };
}

/// The methods `Asked` and `Probe` answer alike: with the shape of what was asked for.
macro_rules! answered_by_shape {
    () => {
        fn deserialize_unit_struct<V: Visitor<'de>>(self, _: &'static str, _: V) -> Result<V::Value, Found> {
            Err(Found::Shape(Shape::Null))
        }

        fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, _: V) -> Result<V::Value, Found> {
            Err(Found::Shape(Shape::Array))
        }

        fn deserialize_tuple_struct<V: Visitor<'de>>(self, _: &'static str, _: usize, _: V) -> Result<V::Value, Found> {
            Err(Found::Shape(Shape::Array))
        }

        fn deserialize_enum<V: Visitor<'de>>(
            self,
            _: &'static str,
            variants: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Found> {
            Err(Found::Shape(Shape::Enum(variants)))
        }
    };
}

impl<'de> de::Deserializer<'de> for Asked {
    type Error = Found;

    asked! {
        deserialize_any => Shape::Any, deserialize_bool => Shape::Bool,
        deserialize_i8 => Shape::Integer, deserialize_i16 => Shape::Integer, deserialize_i32 => Shape::Integer,
        deserialize_i64 => Shape::Integer, deserialize_u8 => Shape::Integer, deserialize_u16 => Shape::Integer,
        deserialize_u32 => Shape::Integer, deserialize_u64 => Shape::Integer, deserialize_f32 => Shape::Number,
        deserialize_f64 => Shape::Number, deserialize_char => Shape::String, deserialize_str => Shape::String,
        deserialize_string => Shape::String, deserialize_bytes => Shape::String, deserialize_byte_buf => Shape::String,
        deserialize_unit => Shape::Null, deserialize_seq => Shape::Array, deserialize_map => Shape::Object,
        deserialize_identifier => Shape::String, deserialize_ignored_any => Shape::Any,
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Found> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _: &'static str, visitor: V) -> Result<V::Value, Found> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Found> {
        Err(Found::Shape(Shape::Struct(fields)))
    }

    answered_by_shape!();
}

/// Anything but a struct: a probe only learns what the type asks for.
macro_rules! probe_asks {
    ($($method:ident),* $(,)?) => {
        $(fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Found> {
            match self.0 {
                Feed::Top => Asked.$method(visitor),
                _ => Err(Found::Other),
            }
        })*
    };
}

impl<'de> de::Deserializer<'de> for Probe {
    type Error = Found;

    probe_asks! {
        deserialize_any, deserialize_bool, deserialize_i8, deserialize_i16, deserialize_i32, deserialize_i64,
        deserialize_u8, deserialize_u16, deserialize_u32, deserialize_u64, deserialize_f32, deserialize_f64,
        deserialize_char, deserialize_str, deserialize_string, deserialize_bytes, deserialize_byte_buf,
        deserialize_option, deserialize_unit, deserialize_seq, deserialize_map, deserialize_identifier,
        deserialize_ignored_any,
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, name: &'static str, visitor: V) -> Result<V::Value, Found> {
        match self.0 {
            Feed::Top => Asked.deserialize_newtype_struct(name, visitor),
            _ => Err(Found::Other),
        }
    }

    answered_by_shape!();

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Found> {
        match self.0 {
            Feed::Top => Asked.deserialize_struct(name, fields, visitor),
            Feed::Field(field) => visitor.visit_map(Fields { keys: vec![field], made_up: false }),
            Feed::Given(given) => visitor.visit_map(Fields { keys: given, made_up: true }),
        }
    }
}

/// The fields a probe gives a struct, with values that report what they are asked for or,
/// `made_up`, plausible values of that kind.
struct Fields {
    keys: Vec<&'static str>,
    made_up: bool,
}

impl<'de> MapAccess<'de> for Fields {
    type Error = Found;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Found> {
        match self.keys.pop() {
            Some(key) => seed.deserialize(IntoDeserializer::<Found>::into_deserializer(key)).map(Some),
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Found> {
        if self.made_up { seed.deserialize(MadeUp) } else { seed.deserialize(Asked) }
    }
}

macro_rules! made_up {
    ($v:ident; $($method:ident => $body:expr;)*) => {
        $(fn $method<V: Visitor<'de>>(self, $v: V) -> Result<V::Value, Found> {
            $body
        })*
    };
}

/// Made-up text: the nil UUID, which also fits id fields.
const NIL: &str = "00000000-0000-0000-0000-000000000000";

/// A plausible value of whatever kind is asked for: the zero of numbers, an empty list or
/// object, the first variant, and for text the nil UUID (which also fits id fields).
struct MadeUp;

impl<'de> de::Deserializer<'de> for MadeUp {
    type Error = Found;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Found> {
        visitor.visit_unit()
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Found> {
        visitor.visit_bool(false)
    }

    made_up! { v;
        deserialize_i8 => v.visit_u64(0); deserialize_i16 => v.visit_u64(0); deserialize_i32 => v.visit_u64(0);
        deserialize_i64 => v.visit_u64(0); deserialize_i128 => v.visit_u64(0); deserialize_u8 => v.visit_u64(0);
        deserialize_u16 => v.visit_u64(0); deserialize_u32 => v.visit_u64(0); deserialize_u64 => v.visit_u64(0);
        deserialize_u128 => v.visit_u64(0); deserialize_f32 => v.visit_f64(0.0); deserialize_f64 => v.visit_f64(0.0);
        deserialize_str => v.visit_str(NIL); deserialize_string => v.visit_str(NIL);
        deserialize_identifier => v.visit_str(NIL); deserialize_char => v.visit_char('a');
        deserialize_bytes => v.visit_bytes(b""); deserialize_byte_buf => v.visit_bytes(b"");
        deserialize_unit => v.visit_unit(); deserialize_ignored_any => v.visit_unit();
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Found> {
        visitor.visit_none()
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Found> {
        visitor.visit_seq(de::value::SeqDeserializer::<_, Found>::new(std::iter::empty::<()>()))
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Found> {
        visitor.visit_map(Fields { keys: Vec::new(), made_up: true })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Found> {
        self.deserialize_map(visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Found> {
        let first = variants.first().copied().unwrap_or_default();
        visitor.visit_enum(IntoDeserializer::<Found>::into_deserializer(first))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _: &'static str, visitor: V) -> Result<V::Value, Found> {
        visitor.visit_newtype_struct(self)
    }

    serde::forward_to_deserialize_any! {
        unit_struct tuple tuple_struct
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Deserialize)]
    #[allow(dead_code, reason = "read only through the derived Deserialize")]
    struct Body {
        name: String,
        count: Option<i64>,
        #[serde(default)]
        tags: Vec<String>,
        mode: Mode,
        id: uuid::Uuid,
    }

    #[derive(Deserialize)]
    #[allow(dead_code, reason = "read only through the derived Deserialize")]
    #[serde(rename_all = "snake_case")]
    enum Mode {
        Fast,
        Slow,
    }

    #[test]
    fn a_struct_tells_its_fields_their_kinds_and_which_are_required() {
        let schema = schema::<Body>();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["properties"]["name"]["type"], "string");
        assert_eq!(schema["properties"]["count"]["type"], "integer");
        assert_eq!(schema["properties"]["tags"]["type"], "array");
        assert_eq!(schema["properties"]["mode"]["enum"], json!(["fast", "slow"]));
        assert_eq!(schema["properties"]["id"]["type"], "string");
        let required: Vec<&str> = schema["required"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        assert!(required.contains(&"name"), "{schema}");
        assert!(!required.contains(&"count") && !required.contains(&"tags"), "{schema}");
    }

    #[test]
    fn other_types_are_what_they_ask_for() {
        assert_eq!(schema::<Vec<String>>()["type"], "array");
        assert_eq!(schema::<serde_json::Value>(), json!({}));
        assert_eq!(schema::<std::collections::BTreeMap<String, String>>()["type"], "object");
    }
}
