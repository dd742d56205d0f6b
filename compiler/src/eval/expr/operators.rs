//! Pure operators on values, as Python computes them: arithmetic, comparison, equality.

use super::*;
use crate::diagnostics::ErrorKind;

/// A number as Python sees it: `bool` is an `int`.
#[derive(Clone, Copy)]
enum Num<'v> {
    Int(i64),
    Big(&'v BigInt),
    Float(f64),
}

fn as_num(v: &Value) -> Option<Num<'_>> {
    match v {
        Value::Int(i) => Some(Num::Int(*i)),
        Value::Bool(b) => Some(Num::Int(*b as i64)),
        Value::BigInt(i) => Some(Num::Big(i)),
        Value::Float(f) => Some(Num::Float(*f)),
        _ => None,
    }
}

type OpErr = (ErrorKind, String);

impl Num<'_> {
    /// The float Python converts this number to in mixed arithmetic; an int past the float
    /// range is Python's `OverflowError`.
    fn f(self) -> Result<f64, OpErr> {
        match self {
            Num::Int(i) => Ok(i as f64),
            Num::Big(i) => big_to_f64(i).ok_or((ErrorKind::OverflowError, "int too large to convert to float".into())),
            Num::Float(f) => Ok(f),
        }
    }

    /// The int as a big integer (`None` for a float).
    fn big(self) -> Option<BigInt> {
        match self {
            Num::Int(i) => Some(BigInt::from(i)),
            Num::Big(i) => Some(i.clone()),
            Num::Float(_) => None,
        }
    }

    fn cmp(self, other: Num<'_>) -> Option<std::cmp::Ordering> {
        match (self, other) {
            (Num::Int(x), Num::Int(y)) => Some(x.cmp(&y)),
            (Num::Float(x), Num::Float(y)) => x.partial_cmp(&y),
            (Num::Int(x), Num::Float(y)) => int_cmp_float(x, y),
            (Num::Big(x), Num::Float(y)) => big_cmp_float(x, y),
            (Num::Float(_), _) => other.cmp(self).map(std::cmp::Ordering::reverse),
            (x, y) => Some(x.big()?.cmp(&y.big()?)),
        }
    }
}

/// Python's `==` on two values: `1 == 1.0 == true`.
pub(crate) fn py_eq(a: &Value, b: &Value) -> bool {
    match (as_num(a), as_num(b)) {
        (Some(Num::Int(x)), Some(Num::Int(y))) => x == y,
        (Some(x), Some(y)) => x.cmp(y) == Some(std::cmp::Ordering::Equal),
        _ => match (a, b) {
            (Value::List(x), Value::List(y)) => x.len() == y.len() && x.iter().zip(y.iter()).all(|(p, q)| py_eq(p, q)),
            (Value::Dict(x), Value::Dict(y)) => {
                x.len() == y.len() && x.iter().all(|(k, v)| dict_get(y, k).is_some_and(|w| py_eq(v, w)))
            }
            _ => a == b,
        },
    }
}

fn is_zero(n: Num<'_>) -> bool {
    match n {
        Num::Int(i) => i == 0,
        Num::Big(_) => false,
        Num::Float(f) => f == 0.0,
    }
}

/// The largest int `**` and `*` compute (in bits): Python goes on until memory runs out; a model that
/// asks for more is surely wrong, and stopping beats exhausting the machine.
const MAX_POW_BITS: u64 = 1 << 24;

/// `a ** b` on ints with `b >= 0`.
fn int_pow(a: Num<'_>, b: Num<'_>) -> Result<Value, OpErr> {
    if let (Num::Int(a), Num::Int(b)) = (a, b)
        && let Some(v) = u32::try_from(b).ok().and_then(|b| a.checked_pow(b))
    {
        return Ok(Value::Int(v));
    }
    let (Some(base), Some(exp)) = (a.big(), b.big()) else { unreachable!("ints") };
    let one = BigInt::from(1);
    if base == one || base.bits() == 0 {
        return Ok(Value::int(base));
    }
    if base == -one {
        return Ok(Value::Int(if (&exp % 2u32).bits() == 0 { 1 } else { -1 }));
    }
    match u32::try_from(&exp) {
        Ok(e) if base.bits().saturating_mul(e as u64) <= MAX_POW_BITS => Ok(Value::int(base.pow(e))),
        _ => Err((ErrorKind::RuntimeException, format!("the result of {base} ** {exp} is too large"))),
    }
}

/// Python's true division of two ints: the float nearest the exact quotient (not the quotient of
/// the two rounded floats, which can be an ulp off once an operand is past 2**53).
fn int_div(a: Num<'_>, b: Num<'_>) -> Result<Value, OpErr> {
    const EXACT: i64 = 1 << 53;
    if let (Num::Int(x), Num::Int(y)) = (a, b)
        && x.unsigned_abs() <= EXACT as u64
        && y.unsigned_abs() <= EXACT as u64
    {
        return Ok(Value::Float(x as f64 / y as f64));
    }
    let (Some(x), Some(y)) = (a.big(), b.big()) else { unreachable!("ints") };
    let negative = (x.sign() == num_bigint::Sign::Minus) != (y.sign() == num_bigint::Sign::Minus);
    let (x, y) = (x.magnitude().clone(), y.magnitude().clone());
    // scale so the integer quotient has 55 or 56 bits: 53 kept, a rounding bit, and below it a
    // sticky bit set when anything was left over; u64 -> f64 then rounds half to even exactly
    let shift = 55 - (x.bits() as i64 - y.bits() as i64);
    let (n, d) = if shift >= 0 { (x << shift as u64, y) } else { (x, y << (-shift) as u64) };
    let (q, r) = (&n / &d, &n % &d);
    let q = u64::try_from(&q).unwrap_or(u64::MAX) | u64::from(r.bits() != 0);
    let mut f = q as f64;
    let mut e = -shift;
    while e > 1000 {
        f *= 2f64.powi(1000);
        e -= 1000;
    }
    while e < -1000 {
        f *= 2f64.powi(-1000);
        e += 1000;
    }
    f *= 2f64.powi(e as i32);
    if f.is_infinite() {
        return Err((ErrorKind::OverflowError, "integer division result too large for a float".into()));
    }
    Ok(Value::Float(if negative { -f } else { f }))
}

/// Applies a binary operator to two known values, with Inmanta's (Python's) rules: arithmetic and
/// comparisons on numbers (booleans count as integers), `+` also on two strings, `in` on a list or
/// a dict only; anything else is a `TypingException`.
pub(crate) fn binop_values(op: BinOp, lv: &Value, rv: &Value) -> Result<Value, OpErr> {
    use Value::*;
    let bad = || {
        Err((
            ErrorKind::TypingException,
            format!(
                "Unsupported operand types for {}: {} {} and {} {}",
                op.symbol(),
                lv.type_name(),
                short_repr(lv),
                rv.type_name(),
                short_repr(rv)
            ),
        ))
    };
    match op {
        BinOp::Eq => Ok(Bool(py_eq(lv, rv))),
        BinOp::Ne => Ok(Bool(!py_eq(lv, rv))),
        BinOp::Lt | BinOp::Gt | BinOp::Le | BinOp::Ge => {
            let (Some(a), Some(b)) = (as_num(lv), as_num(rv)) else { return bad() };
            let ord = a.cmp(b);
            use std::cmp::Ordering::*;
            Ok(Bool(match op {
                BinOp::Lt => ord == Some(Less),
                BinOp::Gt => ord == Some(Greater),
                BinOp::Le => matches!(ord, Some(Less | Equal)),
                _ => matches!(ord, Some(Greater | Equal)),
            }))
        }
        BinOp::In | BinOp::NotIn => {
            let r = match rv {
                List(l) => {
                    let found = l.iter().any(|x| py_eq(x, lv));
                    // not found while the list holds an unknown: the answer is unknown too
                    if !found && let Some(u) = l.iter().find_map(|x| if let Unknown(u) = x { Some(u) } else { None }) {
                        return Ok(Unknown(u.clone()));
                    }
                    found
                }
                Dict(d) => match lv {
                    Str(s) => dict_get(d, s).is_some(),
                    _ => false,
                },
                _ => {
                    return Err((
                        ErrorKind::TypingException,
                        format!(
                            "Operand two of 'in' can only be a list or dict, got {} {}",
                            rv.type_name(),
                            short_repr(rv)
                        ),
                    ));
                }
            };
            Ok(Bool(if op == BinOp::In { r } else { !r }))
        }
        BinOp::Add => match (lv, rv) {
            (Str(a), Str(b)) => Ok(Value::str(&format!("{a}{b}"))),
            (Str(_), _) => Err((
                ErrorKind::TypingException,
                format!("Can only concatenate a string to a string, not {} {}", rv.type_name(), short_repr(rv)),
            )),
            _ => match (as_num(lv), as_num(rv)) {
                (Some(Num::Int(a)), Some(Num::Int(b))) => {
                    Ok(a.checked_add(b).map_or_else(|| Value::int(num_bigint::BigInt::from(a) + b), Int))
                }
                (Some(a), Some(b)) => match (a.big(), b.big()) {
                    (Some(x), Some(y)) => Ok(Value::int(x + y)),
                    _ => Ok(Float(a.f()? + b.f()?)),
                },
                _ => bad(),
            },
        },
        BinOp::Sub | BinOp::Mul => match (as_num(lv), as_num(rv)) {
            (Some(Num::Int(a)), Some(Num::Int(b))) => {
                let r = if op == BinOp::Sub { a.checked_sub(b) } else { a.checked_mul(b) };
                Ok(r.map_or_else(
                    || {
                        Value::int(if op == BinOp::Sub {
                            num_bigint::BigInt::from(a) - b
                        } else {
                            num_bigint::BigInt::from(a) * b
                        })
                    },
                    Int,
                ))
            }
            (Some(a), Some(b)) => match (a.big(), b.big()) {
                (Some(x), Some(y)) if op == BinOp::Mul && x.bits() + y.bits() > MAX_POW_BITS + 1 => Err((
                    ErrorKind::RuntimeException,
                    format!(
                        "the result of this multiplication is too large: it would have about {} bits, more than \
                         the {MAX_POW_BITS} an int may have",
                        x.bits() + y.bits()
                    ),
                )),
                (Some(x), Some(y)) => Ok(Value::int(if op == BinOp::Sub { x - y } else { x * y })),
                _ => Ok(Float(if op == BinOp::Sub { a.f()? - b.f()? } else { a.f()? * b.f()? })),
            },
            _ => bad(),
        },
        BinOp::Div => match (as_num(lv), as_num(rv)) {
            (Some(_), Some(b)) if is_zero(b) => Err((ErrorKind::ZeroDivisionError, "division by zero".into())),
            (Some(a @ (Num::Int(_) | Num::Big(_))), Some(b @ (Num::Int(_) | Num::Big(_)))) => int_div(a, b),
            (Some(a), Some(b)) => Ok(Float(a.f()? / b.f()?)),
            _ => bad(),
        },
        BinOp::Mod => match (as_num(lv), as_num(rv)) {
            (Some(_), Some(b)) if is_zero(b) => Err((ErrorKind::ZeroDivisionError, "modulo by zero".into())),
            (Some(Num::Int(a)), Some(Num::Int(b))) => match a.checked_rem(b) {
                Some(r) if r != 0 && ((r < 0) != (b < 0)) => Ok(Int(r + b)),
                Some(r) => Ok(Int(r)),
                None => Ok(Int(0)),
            },
            (Some(a), Some(b)) => match (a.big(), b.big()) {
                (Some(x), Some(y)) => {
                    // Python's modulo takes the divisor's sign
                    let r = &x % &y;
                    let neg = |v: &num_bigint::BigInt| v.sign() == num_bigint::Sign::Minus;
                    Ok(Value::int(if r.bits() != 0 && neg(&r) != neg(&y) { r + y } else { r }))
                }
                _ => {
                    // Python's float modulo: fmod, then moved to the divisor's sign
                    let (a, b) = (a.f()?, b.f()?);
                    let m = a % b;
                    Ok(Float(if m != 0.0 && ((m < 0.0) != (b < 0.0)) {
                        m + b
                    } else if m == 0.0 {
                        0.0f64.copysign(b)
                    } else {
                        m
                    }))
                }
            },
            _ => bad(),
        },
        BinOp::Pow => match (as_num(lv), as_num(rv)) {
            (Some(a @ (Num::Int(_) | Num::Big(_))), Some(b @ (Num::Int(_) | Num::Big(_))))
                if b.cmp(Num::Int(0)) != Some(std::cmp::Ordering::Less) =>
            {
                int_pow(a, b)
            }
            (Some(a), Some(b)) if is_zero(a) && b.cmp(Num::Int(0)) == Some(std::cmp::Ordering::Less) => {
                Err((ErrorKind::ZeroDivisionError, "0 can not be raised to a negative power".into()))
            }
            (Some(a), Some(b)) => Ok(Float(a.f()?.powf(b.f()?))),
            _ => bad(),
        },
        BinOp::And | BinOp::Or => unreachable!("handled with short-circuit"),
    }
}
