//! Values to JSON as Python's `json` module writes them (`json_dumps`, `to_json`).

use super::*;

/// JSON the way Python's `json.dumps` writes it (`", "` and `": "` separators).
/// Python's `json.dumps`: a dict keeps its key order.
pub(super) fn json_dumps(ev: &mut Evaluator<'_>, v: &Value, depth: usize) -> Result<String, PErr> {
    charge_conversion(ev, v)?;
    Ok(match v {
        Value::Dict(d) if depth < 64 => {
            let mut parts = Vec::with_capacity(d.len());
            for (k, x) in d.iter() {
                parts.push(format!("{}: {}", serde_json::Value::String(k.to_string()), json_dumps(ev, x, depth + 1)?));
            }
            format!("{{{}}}", parts.join(", "))
        }
        Value::List(l) if depth < 64 => {
            let parts = l.iter().map(|x| json_dumps(ev, x, depth + 1)).collect::<Result<Vec<_>, _>>()?;
            format!("[{}]", parts.join(", "))
        }
        // exact, as Python's json writes an int (serde_json holds none past u64)
        Value::BigInt(i) => i.to_string(),
        other => python_json(&to_json(ev, other, depth)?),
    })
}

/// `ensure_ascii`: every character outside ASCII as a `\uXXXX` escape (UTF-16 code units).
pub(super) fn ascii_escaped(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut buf = [0u16; 2];
            for u in c.encode_utf16(&mut buf) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        }
    }
    out
}

pub(super) fn python_json(j: &serde_json::Value) -> String {
    match j {
        serde_json::Value::Array(a) => format!("[{}]", a.iter().map(python_json).collect::<Vec<_>>().join(", ")),
        serde_json::Value::Object(o) => format!(
            "{{{}}}",
            o.iter()
                .map(|(k, v)| format!("{}: {}", serde_json::Value::String(k.clone()), python_json(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}

pub(super) fn to_json(ev: &mut Evaluator<'_>, v: &Value, depth: usize) -> Result<serde_json::Value, PErr> {
    charge_conversion(ev, v)?;
    Ok(match v {
        Value::Instance(i) => {
            if depth > 3 {
                return Ok(serde_json::Value::String(ev.inst_name(*i)));
            }
            let mut map = serde_json::Map::new();
            for (n, name) in ev.m.plugin_attributes(*i) {
                if let Some(val) = ev.m.read_attribute(*i, n).value {
                    map.insert(name, to_json(ev, &val, depth + 1)?);
                }
            }
            serde_json::Value::Object(map)
        }
        Value::List(l) => serde_json::Value::Array(l.iter().map(|x| to_json(ev, x, depth)).collect::<Result<_, _>>()?),
        Value::Dict(d) => serde_json::Value::Object(
            d.iter().map(|(k, x)| Ok((k.to_string(), to_json(ev, x, depth)?))).collect::<Result<_, PErr>>()?,
        ),
        other => other.to_json(),
    })
}
