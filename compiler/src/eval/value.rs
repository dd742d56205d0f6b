//! Runtime values of the language.

use std::cmp::Ordering;
use std::rc::Rc;

use num_bigint::BigInt;
use num_traits::{FromPrimitive, ToPrimitive};

/// An instance of an entity, by index in the evaluator's instance table.
pub(crate) type InstId = u32;

/// Where an unknown value came from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct UnknownSource {
    pub parameter: String,
    pub source: String,
    pub resource: String,
}

#[derive(Debug, Clone)]
pub(crate) enum Value {
    Null,
    Bool(bool),
    Int(i64),
    /// An int outside `i64` (Inmanta's ints are Python's, unbounded). Never holds a value that
    /// fits `i64`: build it with [`Value::int`], so each int has one form and `Int` stays the
    /// fast path.
    BigInt(Rc<BigInt>),
    Float(f64),
    Str(Rc<str>),
    List(Rc<Vec<Value>>),
    Dict(Rc<Vec<(Rc<str>, Value)>>),
    Instance(InstId),
    Unknown(Rc<UnknownSource>),
    /// A value the agent resolves at deploy time (`std::create_*_reference`, [`crate::references`]).
    Reference(Rc<crate::references::Reference>),
}

impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        use Value::*;
        match (self, other) {
            (Null, Null) => true,
            (Bool(a), Bool(b)) => a == b,
            (Int(a), Int(b)) => a == b,
            (Float(a), Float(b)) => a == b,
            (Int(a), Float(b)) | (Float(b), Int(a)) => int_cmp_float(*a, *b) == Some(Ordering::Equal),
            (BigInt(a), BigInt(b)) => a == b,
            (BigInt(a), Float(b)) | (Float(b), BigInt(a)) => big_cmp_float(a, *b) == Some(Ordering::Equal),
            (Str(a), Str(b)) => a == b,
            (List(a), List(b)) => a == b,
            (Dict(a), Dict(b)) => a.len() == b.len() && a.iter().all(|(k, v)| dict_get(b, k) == Some(v)),
            (Instance(a), Instance(b)) => a == b,
            (Reference(a), Reference(b)) => a.id == b.id,
            _ => false,
        }
    }
}

/// Python's exact comparison of an int with a float (`2**53 + 1 > 2.0**53`); `None` for NaN.
pub(crate) fn int_cmp_float(i: i64, f: f64) -> Option<Ordering> {
    if f.is_nan() {
        return None;
    }
    // every float of magnitude below 2**100 has an integral floor that i128 holds exactly
    if f.abs() < 1e30 {
        let fl = f.floor();
        let ord = (i as i128).cmp(&(fl as i128));
        return Some(if ord == Ordering::Equal && f > fl { Ordering::Less } else { ord });
    }
    Some(if f > 0.0 { Ordering::Less } else { Ordering::Greater })
}

/// [`int_cmp_float`] for a big int.
pub(crate) fn big_cmp_float(i: &BigInt, f: f64) -> Option<Ordering> {
    if f.is_nan() {
        return None;
    }
    if f.is_infinite() {
        return Some(if f > 0.0 { Ordering::Less } else { Ordering::Greater });
    }
    let fl = f.floor();
    let ord = i.cmp(&BigInt::from_f64(fl)?);
    Some(if ord == Ordering::Equal && f > fl { Ordering::Less } else { ord })
}

/// The float nearest to a big int, as Python's `float()` rounds it; `None` past the float range
/// (Python's OverflowError).
pub(crate) fn big_to_f64(i: &BigInt) -> Option<f64> {
    i.to_f64().filter(|f| f.is_finite())
}

/// The int of an integral, finite float (Python's `int(f)` of an integral float).
pub(crate) fn int_of_integral_float(f: f64) -> Value {
    if f.abs() < 9.2e18 { Value::Int(f as i64) } else { BigInt::from_f64(f).map(Value::int).unwrap_or(Value::Null) }
}

pub(crate) fn dict_get<'a>(d: &'a [(Rc<str>, Value)], key: &str) -> Option<&'a Value> {
    d.iter().find(|(k, _)| &**k == key).map(|(_, v)| v)
}

impl Value {
    pub(crate) fn str(s: &str) -> Value {
        Value::Str(Rc::from(s))
    }

    /// An int: `Int` when it fits `i64`, else `BigInt`.
    pub(crate) fn int(i: BigInt) -> Value {
        match i64::try_from(&i) {
            Ok(small) => Value::Int(small),
            Err(_) => Value::BigInt(Rc::new(i)),
        }
    }

    pub(crate) fn list(v: Vec<Value>) -> Value {
        Value::List(Rc::new(v))
    }

    pub(crate) fn is_unknown(&self) -> bool {
        matches!(self, Value::Unknown(_))
    }

    /// True when this value is unknown or (for lists/dicts) contains an unknown.
    pub(crate) fn contains_unknown(&self) -> bool {
        match self {
            Value::Unknown(_) => true,
            Value::List(_) | Value::Dict(_) => self.unknown_within(&mut crate::model::FastSet::default()),
            _ => false,
        }
    }

    /// Each list and dict is looked into once (`seen`): a dict that holds the same dict at
    /// each of 40 levels has 2**40 paths but 40 dicts (issue 47).
    fn unknown_within(&self, seen: &mut crate::model::FastSet<*const ()>) -> bool {
        match self {
            Value::Unknown(_) => true,
            Value::List(l) => seen.insert(Rc::as_ptr(l).cast()) && l.iter().any(|v| v.unknown_within(seen)),
            Value::Dict(d) => seen.insert(Rc::as_ptr(d).cast()) && d.iter().any(|(_, v)| v.unknown_within(seen)),
            _ => false,
        }
    }

    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "bool",
            Value::Int(_) | Value::BigInt(_) => "int",
            Value::Float(_) => "float",
            Value::Str(_) => "string",
            Value::List(_) => "list",
            Value::Dict(_) => "dict",
            Value::Instance(_) => "entity instance",
            Value::Unknown(_) => "unknown",
            Value::Reference(_) => "reference",
        }
    }

    /// Python truthiness.
    pub(crate) fn truthy(&self) -> bool {
        match self {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::BigInt(_) => true,
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::List(l) => !l.is_empty(),
            Value::Dict(d) => !d.is_empty(),
            Value::Instance(_) | Value::Reference(_) => true,
            Value::Unknown(_) => false,
        }
    }

    /// A canonical key for index lookups.
    pub(crate) fn key(&self) -> String {
        match self {
            Value::Str(s) => format!("s:{s}"),
            Value::Instance(i) => format!("i:{i}"),
            // Python's equality: an integral float is the same key as the int
            Value::Float(f) if f.fract() == 0.0 && f.abs() < 9e15 => format!("v:{}", *f as i64),
            // Inmanta does not find a big int under the integral float it equals
            // (a_bigint_index_float_key)
            Value::BigInt(i) => format!("v:{i}"),
            other => format!("v:{}", other.to_json()),
        }
    }

    /// JSON form (instances become their id number; unknowns a placeholder). Ints of any size are
    /// exact: the workspace's serde_json has `arbitrary_precision`.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => (*b).into(),
            Value::Int(i) => (*i).into(),
            // exact: the workspace's serde_json has `arbitrary_precision`, a number is its digits
            Value::BigInt(i) => i.to_string().parse().map(serde_json::Value::Number).unwrap_or_default(),
            Value::Float(f) => serde_json::Number::from_f64(*f).map(serde_json::Value::Number).unwrap_or_default(),
            Value::Str(s) => serde_json::Value::String(s.to_string()),
            Value::List(l) => serde_json::Value::Array(l.iter().map(Value::to_json).collect()),
            Value::Dict(d) => serde_json::Value::Object(d.iter().map(|(k, v)| (k.to_string(), v.to_json())).collect()),
            Value::Instance(i) => serde_json::Value::String(format!("<instance {i}>")),
            Value::Unknown(_) => serde_json::Value::String("<<undefined>>".into()),
            Value::Reference(r) => serde_json::Value::String(format!("<reference {}>", r.id)),
        }
    }

    /// Parses JSON text as Python's `json.loads` does: an int of any size stays exact.
    pub(crate) fn from_json_text(text: &str) -> Result<Value, serde_json::Error> {
        serde_json::from_str(text).map(|j| Value::from_json(&j))
    }

    pub(crate) fn from_json(j: &serde_json::Value) -> Value {
        match j {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    Value::Int(i)
                } else if let Some(u) = n.as_u64() {
                    Value::int(BigInt::from(u))
                } else if !n.is_f64()
                    && let Ok(i) = n.to_string().parse::<BigInt>()
                {
                    // an int past 64 bits, exact (`arbitrary_precision` keeps the digits)
                    Value::int(i)
                } else {
                    Value::Float(n.as_f64().unwrap_or(0.0))
                }
            }
            serde_json::Value::String(s) => Value::str(s),
            serde_json::Value::Array(a) => Value::list(a.iter().map(Value::from_json).collect()),
            serde_json::Value::Object(o) => {
                Value::Dict(Rc::new(o.iter().map(|(k, v)| (Rc::from(k.as_str()), Value::from_json(v))).collect()))
            }
        }
    }
}

/// Python `repr` of a float.
pub(crate) fn py_float(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf".into() } else { "-inf".into() };
    }
    // Python writes the shortest round-trip digits, in exponent form when the decimal exponent
    // is below -4 or from 16 on (`1e+16`, `1.5e-05`); Rust's `{}` never uses the exponent form
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..16).contains(&exp) {
        return format!("{mantissa}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    }
    let s = format!("{f}");
    if s.contains('.') { s } else { format!("{s}.0") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_text_keeps_big_ints_exact() {
        let v = Value::from_json_text("[99999999999999999999999, 5, {\"k\": -99999999999999999999999}]").expect("json");
        let Value::List(l) = v else { panic!("a list") };
        assert!(matches!(&l[0], Value::BigInt(i) if i.to_string() == "99999999999999999999999"));
        assert_eq!(l[1], Value::Int(5));
        let Value::Dict(d) = &l[2] else { panic!("a dict") };
        assert!(matches!(dict_get(d, "k"), Some(Value::BigInt(i)) if i.to_string() == "-99999999999999999999999"));
    }

    #[test]
    fn ints_normalise_and_compare_exactly_with_floats() {
        assert_eq!(Value::int(BigInt::from(i64::MAX)), Value::Int(i64::MAX));
        assert!(matches!(Value::int(BigInt::from(i64::MAX) + 1), Value::BigInt(_)));
        assert_eq!(int_cmp_float(9007199254740993, 9007199254740992.0), Some(Ordering::Greater));
        assert_eq!(int_cmp_float(3, 3.5), Some(Ordering::Less));
        assert_eq!(int_cmp_float(-3, -3.5), Some(Ordering::Greater));
        assert_eq!(int_cmp_float(1, f64::NAN), None);
        assert_eq!(big_cmp_float(&(BigInt::from(1) << 70u32), 2f64.powi(70)), Some(Ordering::Equal));
        assert_eq!(big_cmp_float(&(BigInt::from(1) << 2000u32), f64::INFINITY), Some(Ordering::Less));
    }

    #[test]
    fn floats_print_as_python_repr() {
        assert_eq!(py_float(1e20), "1e+20");
        assert_eq!(py_float(1e16), "1e+16");
        assert_eq!(py_float(9999999999999998.0), "9999999999999998.0");
        assert_eq!(py_float(1e-5), "1e-05");
        assert_eq!(py_float(0.0001), "0.0001");
        assert_eq!(py_float(1.2676506002282294e30), "1.2676506002282294e+30");
        assert_eq!(py_float(-2.5), "-2.5");
    }
}
