//! The plugins of `std` (and `exec::in_shell`), natively.

use crate::diagnostics::ErrorKind;
use std::rc::Rc;

use num_traits::ToPrimitive;

use super::{PErr, PResult, Plugins, net, s};
use crate::eval::Evaluator;
use crate::eval::budget::Built;
use crate::eval::format::{py_str, python_str, short_repr};
use crate::eval::value::{UnknownSource, Value, dict_get};

mod format;
mod json;
mod validate;

use format::format_str;
use json::{ascii_escaped, json_dumps};
use validate::{is_base64, validate};

pub(crate) fn text(v: &Value, what: &str) -> Result<Rc<str>, PErr> {
    match v {
        Value::Str(s) => Ok(s.clone()),
        other => Err(PErr::Kind(
            ErrorKind::PluginTypeException,
            format!("{what}: expected a string, got {} {}", other.type_name(), short_repr(other)),
        )),
    }
}

/// An int argument of any size.
fn big_int(v: &Value, what: &str) -> Result<num_bigint::BigInt, PErr> {
    match v {
        Value::BigInt(i) => Ok((**i).clone()),
        other => int(other, what).map(num_bigint::BigInt::from),
    }
}

fn int(v: &Value, what: &str) -> Result<i64, PErr> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Float(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => Ok(*f as i64),
        // Python's own error differs by plugin (IndexError, ValueError...); Inmanta wraps each in
        // an ExternalException, which is what is compared
        Value::BigInt(i) => Err(ext(format!("{what}: {i} does not fit a 64-bit integer"))),
        other => Err(PErr::Kind(
            ErrorKind::PluginTypeException,
            format!("{what}: expected an int, got {} {}", other.type_name(), short_repr(other)),
        )),
    }
}

fn list(v: &Value, what: &str) -> Result<Rc<Vec<Value>>, PErr> {
    match v {
        Value::List(l) => Ok(l.clone()),
        Value::Null => Ok(Rc::new(vec![])),
        Value::Instance(_) => Ok(Rc::new(vec![v.clone()])),
        other => Err(PErr::Kind(
            ErrorKind::PluginTypeException,
            format!("{what}: expected a list, got {} {}", other.type_name(), short_repr(other)),
        )),
    }
}

/// Inmanta's error for an argument that does not match the plugin's declared type.
fn arg_type(ev: &Evaluator<'_>, v: &Value, arg: &str, plugin: &str, ty: &str) -> PErr {
    PErr::Kind(
        ErrorKind::PluginTypeException,
        format!(
            "Value {} for argument {arg} of plugin {plugin} has incompatible type. Expected type: {ty}",
            ev.repr(v)
        ),
    )
}

/// Plugins that ask the server fail, as std's do, when the compile has no environment.
fn no_environment(ev: &Evaluator<'_>, plugin: &str) -> Result<(), PErr> {
    if ev.project.plugin_inputs.environment.is_empty() {
        return Err(ext(format!(
            "std::{plugin}: the environment of this model is not configured (the compile has no environment id)"
        )));
    }
    Ok(())
}

fn ext(msg: String) -> PErr {
    PErr::Kind(ErrorKind::ExternalException, msg)
}

fn unknown(ev: &mut Evaluator<'_>, parameter: &str, source: &str, resource: &str) -> Value {
    let u = UnknownSource { parameter: parameter.into(), source: source.into(), resource: resource.into() };
    if !ev.unknowns.contains(&u) {
        ev.unknowns.push(u.clone());
    }
    Value::Unknown(Rc::new(u))
}

fn strv(ev: &Evaluator<'_>, v: &Value) -> String {
    python_str(v, &|i| ev.inst_name(i))
}

/// Reads a module asset: `"<module>/<file>"` in the module's `sub` directory.
pub(super) fn module_file(ev: &Evaluator<'_>, path: &str, sub: &str) -> Result<Vec<u8>, PErr> {
    let full = module_file_path(ev, path, sub)?;
    std::fs::read(&full).map_err(|e| ext(format!("Unable to read {}: {e}", full.display())))
}

/// Where a module asset `"<module>/<file>"` is: the module's `sub` directory.
fn module_file_path(ev: &Evaluator<'_>, path: &str, sub: &str) -> Result<std::path::PathBuf, PErr> {
    let Some((module, rest)) = path.split_once('/') else {
        return Err(ext(format!("Invalid path '{path}': expected '<module>/<file>'")));
    };
    // the empty prefix is the project's own directory, as std's PrefixLoader maps it
    let project = (module.is_empty()).then_some(&ev.project.project_dir);
    let Some(dir) = project.or_else(|| ev.project.module_dirs.get(module)) else {
        return Err(ext(format!("Module {module} (for '{path}') is not loaded or has no {sub}/ directory")));
    };
    if rest.split('/').any(|c| c == "..") {
        return Err(ext(format!("Invalid path '{path}': '..' is not allowed")));
    }
    Ok(dir.join(sub).join(rest))
}

/// Counts a list or dict a deep copy makes against the memory budget: a dict that holds the same
/// dict at each of 40 levels takes 40 entries in the model, and 2**40 once copied.
pub(super) fn charge_copy(ev: &mut Evaluator<'_>, built: Built) -> Result<(), PErr> {
    ev.limits.budget.charge(built).map_err(|m| PErr::Kind(ErrorKind::RuntimeException, m))
}

/// Charges the copy of a list or dict into another representation (JSON, a template value)
/// against the compile's memory budget; other values cost nothing new.
pub(super) fn charge_conversion(ev: &mut Evaluator<'_>, v: &Value) -> Result<(), PErr> {
    match v {
        Value::List(l) => charge_copy(ev, Built::List(l.len())),
        Value::Dict(d) => charge_copy(ev, Built::Dict(d.len())),
        _ => Ok(()),
    }
}

fn sort_key(v: &Value) -> (u8, f64, String) {
    match v {
        Value::Int(i) => (0, *i as f64, String::new()),
        Value::BigInt(i) => (0, i.to_f64().unwrap_or(f64::NAN), String::new()),
        Value::Float(f) => (0, *f, String::new()),
        Value::Str(s) => (1, 0.0, s.to_string()),
        Value::Bool(b) => (0, *b as u8 as f64, String::new()),
        other => (2, 0.0, other.to_json().to_string()),
    }
}

fn read_path(ev: &mut Evaluator<'_>, v: &Value, path: &str, span: crate::syntax::Span) -> Result<Value, PErr> {
    let mut cur = v.clone();
    for seg in path.split('.') {
        cur = ev.read_attr_span(&cur, seg, span)?;
    }
    Ok(cur)
}

/// Python's `int()` / `float()` of a string: surrounding whitespace and `_` between digits allowed.
fn parse_py_int(x: &str) -> Option<Value> {
    let t = x.trim();
    let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
    if digits.is_empty() || digits.starts_with('_') || digits.ends_with('_') || digits.contains("__") {
        return None;
    }
    let t = t.replace('_', "");
    match t.parse::<i64>() {
        Ok(i) => Some(Value::Int(i)),
        Err(_) => t.parse::<num_bigint::BigInt>().ok().map(Value::int),
    }
}

fn parse_py_float(x: &str) -> Option<f64> {
    let t = x.trim();
    if t.contains('_') || t.is_empty() {
        return None;
    }
    t.parse().ok()
}

/// The casts `int()`, `float()` and `number()`: Python's conversion (a bool is an int), any
/// failure a `RuntimeException` as in Inmanta.
fn cast(ev: &Evaluator<'_>, v: &Value, to: &str) -> PResult {
    let r = match (to, v) {
        ("number", Value::Int(i)) => Some(Value::Int(*i)),
        ("number", Value::Bool(b)) => Some(Value::Int(*b as i64)),
        ("number" | "int", Value::BigInt(_)) => Some(v.clone()),
        ("int", Value::Int(i)) => Some(Value::Int(*i)),
        ("int", Value::Bool(b)) => Some(Value::Int(*b as i64)),
        ("int", Value::Float(f)) if f.is_finite() => Some(crate::eval::value::int_of_integral_float(f.trunc())),
        ("int", Value::Str(x)) => parse_py_int(x),
        (_, Value::Int(i)) => Some(Value::Float(*i as f64)),
        (_, Value::BigInt(i)) => match crate::eval::value::big_to_f64(i) {
            Some(f) => Some(Value::Float(f)),
            // Python's float() raises past the float range, and Inmanta lets it through
            None => return Err(PErr::Kind(ErrorKind::OverflowError, "int too large to convert to float".into())),
        },
        (_, Value::Bool(b)) => Some(Value::Float(*b as u8 as f64)),
        (_, Value::Float(f)) => Some(Value::Float(*f)),
        (_, Value::Str(x)) => parse_py_float(x).map(Value::Float),
        _ => None,
    };
    r.ok_or_else(|| {
        PErr::Kind(ErrorKind::RuntimeException, format!("Failed to cast '{}' to {to}", py_str(v, &|i| ev.inst_name(i))))
    })
}

pub(crate) fn register(p: &mut Plugins) {
    let n = || Some(Value::Null);
    // casts
    p.add("int", &[("value", None)], |ev, c| cast(ev, &c.args[0], "int"));
    p.add("float", &[("value", None)], |ev, c| cast(ev, &c.args[0], "float"));
    p.add("number", &[("value", None)], |ev, c| cast(ev, &c.args[0], "number"));
    p.add("bool", &[("value", None)], |_, c| Ok(Value::Bool(c.args[0].truthy())));
    p.add("string", &[("value", None)], |ev, c| {
        Ok(match &c.args[0] {
            Value::Bool(b) => s(if *b { "true" } else { "false" }),
            other => s(&py_str(other, &|i| ev.inst_name(i))),
        })
    });

    p.add("std::print", &[("message", None)], |ev, c| {
        let m = strv(ev, &c.args[0]);
        // Inmanta hands a plugin lists and dicts as proxies, which print as `@` and their repr
        let m = if matches!(c.args[0], Value::List(_) | Value::Dict(_)) { format!("@{m}") } else { m };
        ev.printed.push(m);
        Ok(Value::Null)
    })
    .side_effect = true;
    p.add("std::assert", &[("expression", None), ("message", Some(s("")))], |ev, c| {
        let Value::Bool(ok) = c.args[0] else {
            return Err(arg_type(ev, &c.args[0], "expression", "std::assert", "bool"));
        };
        if ok {
            Ok(Value::Null)
        } else {
            let m = strv(ev, &c.args[1]);
            Err(ext(if m.is_empty() { "Assertion error".into() } else { format!("Assertion error: {m}") }))
        }
    });
    {
        let t = p.add("std::template", &[("path", None)], super::jinja::render_template);
        t.kwargs = true;
    }
    p.add("std::source", &[("path", None)], |ev, c| {
        let path = text(&c.args[0], "path")?;
        let b = module_file(ev, &path, "files")?;
        Ok(s(&String::from_utf8_lossy(&b)))
    });
    p.add("std::file", &[("path", None)], |ev, c| {
        // the file's name, marked (std's FileMarker): the export reads its content
        let path = text(&c.args[0], "path")?;
        let full = module_file_path(ev, &path, "files")?;
        if !full.is_file() {
            return Err(ext(format!("{} isn't a valid file", full.display())));
        }
        let full = std::path::absolute(&full).unwrap_or(full);
        Ok(s(&format!("{}{}", crate::export::FILE_MARKER, full.display())))
    });
    p.add("std::list_files", &[("path", None)], |ev, c| {
        let path = text(&c.args[0], "path")?;
        let (module, rest) = path.split_once('/').unwrap_or((&path, ""));
        // the empty prefix is the project's own directory, as std's PrefixLoader maps it
        let project = (module.is_empty()).then_some(&ev.project.project_dir);
        let Some(dir) = project.or_else(|| ev.project.module_dirs.get(module)) else {
            return Err(ext(format!("Module {module} not found")));
        };
        let mut names: Vec<String> = std::fs::read_dir(dir.join("files").join(rest))
            .map_err(|e| ext(format!("Unable to list {path}: {e}")))?
            .filter_map(|e| e.ok())
            .filter(|e| e.path().is_file())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        Ok(Value::list(names.iter().map(|x| s(x)).collect()))
    });
    p.add("std::replace", &[("string", None), ("old", None), ("new", None)], |ev, c| {
        let (a, b, d) = (text(&c.args[0], "string")?, text(&c.args[1], "old")?, text(&c.args[2], "new")?);
        // an empty `old` matches between every two characters: the result can be the square of
        // the input, so its size is charged before it is built
        if d.len() > b.len() {
            let matches = if b.is_empty() { a.chars().count() + 1 } else { a.matches(&*b).count() };
            let len = matches.saturating_mul(d.len() - b.len()).saturating_add(a.len());
            ev.ensure_room(Built::Str(len), c.span)?;
        }
        Ok(s(&a.replace(&*b, &d)))
    });
    p.add("std::length", &[("value", None)], |_, c| Ok(Value::Int(text(&c.args[0], "value")?.chars().count() as i64)));
    p.add("std::len", &[("item_list", None)], |_, c| Ok(Value::Int(list(&c.args[0], "item_list")?.len() as i64)));
    // counts unknowns like any other element (`std::len` is the conservative one)
    p.add("std::count", &[("item_list", None)], |_, c| Ok(Value::Int(list(&c.args[0], "item_list")?.len() as i64)))
        .accepts_unknown = true;
    p.add("std::split", &[("string_list", None), ("delim", None)], |ev, c| {
        let (a, d) = (text(&c.args[0], "string_list")?, text(&c.args[1], "delim")?);
        if d.is_empty() {
            return Err(ext("empty separator".into()));
        }
        // each piece is a string of its own (its bytes, an allocation and a list element)
        let pieces = a.matches(&*d).count() + 1;
        ev.ensure_room(Built::List(pieces.saturating_mul(3)), c.span)?;
        Ok(Value::list(a.split(&*d).map(s).collect()))
    });
    p.add("std::at", &[("objects", None), ("index", None)], |_, c| {
        let l = list(&c.args[0], "objects")?;
        let i = int(&c.args[1], "index")?;
        let idx = if i < 0 { l.len() as i64 + i } else { i };
        l.get(idx as usize).cloned().filter(|_| idx >= 0).ok_or_else(|| ext(format!("list index {i} out of range")))
    });
    // std 8.7.5's `item` indexes each element and returns the picks; Inmanta 20.1 refuses the
    // result (a list built from proxies of nested lists), so every call with elements fails there.
    p.add("std::item", &[("objects", None), ("index", None)], |_, c| {
        let l = list(&c.args[0], "objects")?;
        int(&c.args[1], "index")?;
        if l.is_empty() {
            return Ok(Value::list(Vec::new()));
        }
        Err(ext("std::item: Inmanta 20.1 can not return the selected items (use a list comprehension)".into()))
    });
    p.add("std::sequence", &[("i", None), ("start", Some(Value::Int(0))), ("offset", Some(Value::Int(0)))], |_, c| {
        let n = int(&c.args[0], "i")?;
        if !(0..=1_000_000).contains(&n) {
            return Err(ext(format!("sequence length {n} out of range")));
        }
        if let (Value::Int(a), Value::Int(b)) = (&c.args[1], &c.args[2])
            && let Some(st) = a.checked_add(*b).filter(|st| st.checked_add(n).is_some())
        {
            return Ok(Value::list((st..st + n).map(Value::Int).collect()));
        }
        // past 64 bits, as Python's range()
        let st = big_int(&c.args[1], "start")? + big_int(&c.args[2], "offset")?;
        Ok(Value::list((0..n).map(|k| Value::int(&st + k)).collect()))
    });
    p.add("std::key_sort", &[("items", None), ("key", None)], |ev, c| {
        let l = list(&c.args[0], "items")?;
        let key = match &c.args[1] {
            Value::Str(k) => k.to_string(),
            Value::List(ks) => ks
                .iter()
                .map(|k| match k {
                    Value::Str(x) => x.to_string(),
                    _ => String::new(),
                })
                .collect::<Vec<_>>()
                .join("."),
            _ => return Err(PErr::Kind(ErrorKind::PluginTypeException, "key must be a string".into())),
        };
        let mut keyed = Vec::new();
        for x in l.iter() {
            let k = read_path(ev, x, &key, c.span)?;
            keyed.push((sort_key(&k), x.clone()));
        }
        keyed.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
        Ok(Value::list(keyed.into_iter().map(|(_, v)| v).collect()))
    });
    p.add("std::getfact", &[("resource", None), ("fact_name", None), ("default_value", n())], |ev, c| {
        let name = text(&c.args[1], "fact_name")?.to_string();
        no_environment(ev, "getfact")?;
        let rid = match &c.args[0] {
            Value::Instance(i) => crate::export::resource_id_of(&crate::export::View::of(ev), *i)
                .map(|id| id.to_string())
                .unwrap_or_default(),
            _ => String::new(),
        };
        if let Some(v) = ev.project.plugin_inputs.facts.get(&rid).and_then(|f| f.get(&name)) {
            return Ok(Value::from_json(v));
        }
        if !matches!(c.args[2], Value::Null) {
            return Ok(c.args[2].clone());
        }
        Ok(unknown(ev, &name, "fact", &rid))
    })
    .accepts_unknown = true;
    p.add("std::get_env", &[("name", None), ("default_value", n())], |ev, c| {
        let name = text(&c.args[0], "name")?.to_string();
        match ev.project.plugin_inputs.env_var(&name) {
            Some(v) => Ok(s(&v)),
            None if !matches!(c.args[1], Value::Null) => Ok(c.args[1].clone()),
            None => {
                ev.warn(
                    ErrorKind::CompilerRuntimeWarning,
                    format!("Environment variable {name} is not set; its value is unknown"),
                    c.span,
                );
                Ok(unknown(ev, &name, "plugin", ""))
            }
        }
    });
    p.add("std::get_env_int", &[("name", None), ("default_value", n())], |ev, c| {
        let name = text(&c.args[0], "name")?.to_string();
        match ev.project.plugin_inputs.env_var(&name) {
            Some(v) => v.trim().parse::<i64>().map(Value::Int).map_err(|_| ext(format!("{name} is not an int"))),
            None if !matches!(c.args[1], Value::Null) => Ok(c.args[1].clone()),
            None => Ok(unknown(ev, &name, "plugin", "")),
        }
    });
    p.add("std::environment", &[], |ev, _| {
        no_environment(ev, "environment")?;
        Ok(s(&ev.project.plugin_inputs.environment))
    });
    p.add("std::environment_name", &[], |ev, _| {
        no_environment(ev, "environment_name")?;
        Ok(s(&ev.project.plugin_inputs.environment_name))
    });
    p.add("std::environment_server", &[], |ev, _| Ok(s(&ev.project.plugin_inputs.server_host)));
    p.add("std::server_port", &[], |ev, _| Ok(Value::Int(ev.project.plugin_inputs.server_port)));
    p.add("std::server_ssl", &[], |_, _| Ok(Value::Bool(false)));
    p.add("std::server_ca", &[], |_, _| Ok(s("")));
    p.add("std::server_token", &[("client_types", Some(Value::list(vec![s("agent")])))], |ev, _| {
        Ok(unknown(ev, "server_token", "plugin", ""))
    });
    p.add("std::is_unknown", &[("value", None)], |_, c| Ok(Value::Bool(c.args[0].is_unknown()))).accepts_unknown = true;
    p.add("std::validate_type", &[("fq_type_name", None), ("value", None), ("validation_parameters", n())], |_, c| {
        let k = text(&c.args[0], "fq_type_name")?;
        // inmanta.validation_type (inmanta-core 20) knows only these modules' types and raises a
        // ValueError for any other name, which std answers with false. `builtin.` names are the
        // constraints of the built-in std.cf's own typedefs (regexes in std's model).
        if !["pydantic.", "datetime.", "ipaddress.", "uuid.", "builtin."].iter().any(|m| k.starts_with(m)) {
            return Ok(Value::Bool(false));
        }
        Ok(Value::Bool(validate(&k, &c.args[1], &c.args[2])))
    });
    p.add("std::ipindex", &[("addr", None), ("position", None), ("keep_prefix", Some(Value::Bool(false)))], |_, c| {
        let a = text(&c.args[0], "addr")?;
        let pos = int(&c.args[1], "position")?;
        let (ip, prefix) = net::parse_cidr(&a).ok_or_else(|| ext(format!("{a} is not a valid network")))?;
        let netw = net::network(ip, prefix);
        let r = net::add(netw, pos).ok_or_else(|| ext("address out of range".into()))?;
        Ok(s(&if c.args[2].truthy() { format!("{r}/{prefix}") } else { r.to_string() }))
    });
    p.add("std::add_to_ip", &[("addr", None), ("n", None)], |_, c| {
        let a = text(&c.args[0], "addr")?;
        let k = int(&c.args[1], "n")?;
        let (ip, prefix) = net::parse_cidr(&a).ok_or_else(|| ext(format!("{a} is not a valid address")))?;
        let r = net::add(ip, k).ok_or_else(|| ext("address out of range".into()))?;
        Ok(s(&if a.contains('/') { format!("{r}/{prefix}") } else { r.to_string() }))
    });
    p.add("std::ip_address_from_interface", &[("ip_interface", None)], |_, c| {
        let a = text(&c.args[0], "ip_interface")?;
        let (ip, _) = net::parse_cidr(&a).ok_or_else(|| ext(format!("{a} is not a valid interface")))?;
        Ok(s(&ip.to_string()))
    });
    p.add("std::prefixlength_to_netmask", &[("prefixlen", None)], |_, c| {
        let pl = int(&c.args[0], "prefixlen")?;
        if !(0..=32).contains(&pl) {
            return Err(ext(format!("invalid prefix length {pl}")));
        }
        Ok(s(&net::netmask(true, pl as u8).to_string()))
    });
    p.add("std::prefixlen", &[("addr", None)], |_, c| {
        let a = text(&c.args[0], "addr")?;
        let (_, p) = net::parse_cidr(&a).ok_or_else(|| ext(format!("{a} is not a valid address")))?;
        Ok(Value::Int(p as i64))
    });
    p.add("std::netmask", &[("addr", None)], |_, c| {
        let a = text(&c.args[0], "addr")?;
        let (ip, p) = net::parse_cidr(&a).ok_or_else(|| ext(format!("{a} is not a valid address")))?;
        Ok(s(&net::netmask(ip.is_ipv4(), p).to_string()))
    });
    p.add("std::network_address", &[("addr", None)], |_, c| {
        let a = text(&c.args[0], "addr")?;
        let (ip, p) = net::parse_cidr(&a).ok_or_else(|| ext(format!("{a} is not a valid address")))?;
        Ok(s(&net::network(ip, p).to_string()))
    });
    p.add("std::json_dumps", &[("obj", None)], |ev, c| {
        let out = json_dumps(ev, &c.args[0], 0)?;
        Ok(s(&ascii_escaped(&out)))
    });
    p.add("std::json_loads", &[("s", None)], |_, c| {
        let t = text(&c.args[0], "s")?;
        Value::from_json_text(&t).map_err(|e| ext(format!("Invalid JSON: {e}")))
    });
    {
        let f = p.add("std::format", &[("__string", None)], |ev, c| {
            let t = text(&c.args[0], "string")?;
            format_str(ev, &t, &c.varargs, &c.kwargs)
        });
        f.varargs = true;
        f.kwargs = true;
    }
    p.add("std::upper", &[("string", None)], |_, c| Ok(s(&text(&c.args[0], "string")?.to_uppercase())));
    p.add("std::lower", &[("string", None)], |_, c| Ok(s(&text(&c.args[0], "string")?.to_lowercase())));
    p.add("std::capitalize", &[("string", None)], |_, c| {
        let t = text(&c.args[0], "string")?;
        let mut ch = t.chars();
        Ok(s(&match ch.next() {
            Some(f) => f.to_uppercase().collect::<String>() + &ch.as_str().to_lowercase(),
            None => String::new(),
        }))
    });
    p.add("std::limit", &[("string", None), ("length", None)], |_, c| {
        let t = text(&c.args[0], "string")?;
        let n = match &c.args[1] {
            // Python slices past the end: the whole string (a negative length gives none here)
            Value::BigInt(i) if i.sign() == num_bigint::Sign::Plus => usize::MAX,
            Value::BigInt(_) => 0,
            other => int(other, "length")?.max(0) as usize,
        };
        Ok(s(&t.chars().take(n).collect::<String>()))
    });
    p.add("std::unique", &[("item_list", None)], |_, c| {
        let l = list(&c.args[0], "item_list")?;
        let mut seen: Vec<&Value> = Vec::new();
        for x in l.iter() {
            if seen.contains(&x) {
                return Ok(Value::Bool(false));
            }
            seen.push(x);
        }
        Ok(Value::Bool(true))
    });
    // std 8.7.5's `flatten` chains the elements (one level) as Python iterates them: a string
    // gives its characters, a dict its keys; a number is not iterable, and a nested list (only a
    // plugin makes one) arrives as a proxy the result refuses in Inmanta 20.1.
    p.add("std::flatten", &[("item_list", None)], |_, c| {
        let mut out = Vec::new();
        for item in list(&c.args[0], "item_list")?.iter() {
            match item {
                Value::Str(t) => out.extend(t.chars().map(|ch| Value::str(ch.encode_utf8(&mut [0; 4])))),
                Value::Dict(d) => out.extend(d.iter().map(|(k, _)| Value::Str(k.clone()))),
                Value::List(_) => {
                    return Err(ext(
                        "std::flatten: Inmanta 20.1 can not flatten a list of lists (use a list comprehension)".into(),
                    ));
                }
                other => {
                    let kind = match other {
                        Value::Null => "NoneType",
                        Value::Bool(_) => "bool",
                        Value::Int(_) | Value::BigInt(_) => "int",
                        Value::Float(_) => "float",
                        _ => "Instance",
                    };
                    return Err(ext(format!("'{kind}' object is not iterable")));
                }
            }
        }
        Ok(Value::list(out))
    });
    p.add("std::dict_keys", &[("dct", None)], |_, c| match &c.args[0] {
        Value::Dict(d) => Ok(Value::list(d.iter().map(|(k, _)| Value::Str(k.clone())).collect())),
        _ => Err(PErr::Kind(ErrorKind::PluginTypeException, "dict_keys: expected a dict".into())),
    });
    p.add("std::dict_get", &[("dct", None), ("key", None)], |ev, c| match (&c.args[0], &c.args[1]) {
        (Value::Dict(d), Value::Str(k)) => match dict_get(d, k) {
            // declared to return a string: any other value is refused on the way out
            Some(v @ Value::Str(_)) => Ok(v.clone()),
            Some(v) => Err(PErr::Kind(
                ErrorKind::PluginTypeException,
                format!(
                    "Return value {} of plugin std::dict_get has incompatible type. Expected type: string",
                    ev.repr(v)
                ),
            )),
            None => Err(ext(format!("KeyError: {k}"))),
        },
        (Value::Dict(_), other) => Err(arg_type(ev, other, "key", "std::dict_get", "string")),
        (other, _) => Err(arg_type(ev, other, "dct", "std::dict_get", "dict")),
    });
    p.add("std::contains", &[("dct", None), ("key", None)], |ev, c| match (&c.args[0], &c.args[1]) {
        (Value::Dict(d), Value::Str(k)) => Ok(Value::Bool(dict_get(d, k).is_some())),
        (Value::Dict(_), other) => Err(arg_type(ev, other, "key", "std::contains", "string")),
        (other, _) => Err(arg_type(ev, other, "dct", "std::contains", "dict[string, any]")),
    });
    p.add("std::equals", &[("arg1", None), ("arg2", None), ("desc", n())], |_, c| {
        if c.args[0] == c.args[1] {
            Ok(Value::Null)
        } else {
            Err(ext(format!("{:?} != {:?}", c.args[0].to_json(), c.args[1].to_json())))
        }
    });
    p.add("std::filter", &[("values", None), ("not_item", None)], |_, c| {
        let not_item = &c.args[1];
        if !matches!(not_item, Value::Instance(_)) {
            return Err(PErr::Kind(ErrorKind::PluginTypeException, "not_item: expected an entity instance".into()));
        }
        let values = list(&c.args[0], "values")?;
        Ok(Value::list(values.iter().filter(|v| *v != not_item).cloned().collect()))
    });
    p.add("std::invert", &[("value", None)], |_, c| Ok(Value::Bool(!c.args[0].truthy())));
    p.add("std::attr", &[("obj", None), ("attr", None)], |ev, c| {
        let a = text(&c.args[1], "attr")?;
        Ok(ev.read_attr_span(&c.args[0].clone(), &a, c.span)?)
    });
    p.add(
        "std::getattr",
        &[("entity", None), ("attribute_name", None), ("default_value", n()), ("no_unknown", Some(Value::Bool(true)))],
        |ev, c| {
            let a = text(&c.args[1], "attribute_name")?;
            let e = c.args[0].clone();
            if let Value::Instance(i) = e
                && ev.entity_of(i).attr(&a).is_none()
            {
                return Ok(c.args[2].clone());
            }
            match ev.read_attr_span(&e, &a, c.span) {
                Ok(v) if v.is_unknown() && c.args[3].truthy() => Ok(c.args[2].clone()),
                Ok(v) => Ok(v),
                Err(crate::eval::Flow::Wait(w)) => Err(PErr::Wait(w)),
                Err(_) => Ok(c.args[2].clone()),
            }
        },
    );
    p.add("std::isset", &[("value", None)], |_, c| {
        Ok(Value::Bool(!matches!(c.args[0], Value::Null | Value::Unknown(_))))
    })
    .accepts_unknown = true;
    p.add("std::objid", &[("value", None)], |_, c| match &c.args[0] {
        Value::Instance(i) => Ok(s(&format!("{i:#x}"))),
        _ => Ok(s("")),
    });
    // std 8.7.5's `type` reads `obj.value`, which no value handed to a plugin has in Inmanta
    // 20.1: every call fails there, so it fails here too rather than compile what Inmanta refuses.
    p.add("std::type", &[("obj", None)], |_, _| {
        Err(ext("std::type is broken in Inmanta 20.1 (std 8.7.5): every call fails".into()))
    });
    p.add("std::inlineif", &[("conditional", None), ("a", None), ("b", None)], |_, c| {
        Ok(if c.args[0].truthy() { c.args[1].clone() } else { c.args[2].clone() })
    });
    p.add("std::is_instance", &[("obj", None), ("cls", None)], |ev, c| {
        let cls = text(&c.args[1], "cls")?;
        let Value::Instance(i) = &c.args[0] else { return Ok(Value::Bool(false)) };
        let ent = ev.m.instances[*i as usize].entity;
        let Some(&target) = ev.m.types.entity_by_name.get(&*cls) else {
            return Err(PErr::Kind(ErrorKind::TypeNotFoundException, format!("could not find type {cls}")));
        };
        Ok(Value::Bool(ev.m.types.is_subtype(ent, target)))
    });
    // As std 8.7.5 walks the family chain: the member's own name, then the name of each
    // ancestor that itself has a family (so the root of the chain is never matched).
    p.add("std::familyof", &[("member", None), ("family", None)], |ev, c| {
        let fam = text(&c.args[1], "family")?;
        let is_fam = |v: &Value| matches!(v, Value::Str(n) if **n == *fam);
        let mut cur = c.args[0].clone();
        if is_fam(&ev.read_attr_span(&cur, "name", c.span)?) {
            return Ok(Value::Bool(true));
        }
        for _ in 0..32 {
            let Value::Instance(i) = cur else { break };
            // the first instance of the `family` relation; a plain attribute of that name ends the walk
            let parent = match ev.m.read_attribute_named(i, "family").and_then(|read| read.value) {
                Some(Value::List(items)) => items.first().cloned(),
                other => other,
            };
            let Some(parent @ Value::Instance(_)) = parent else { break };
            if is_fam(&ev.read_attr_span(&cur, "name", c.span)?) {
                return Ok(Value::Bool(true));
            }
            cur = parent;
        }
        Ok(Value::Bool(false))
    });
    p.add("std::hostname", &[("fqdn", None)], |_, c| Ok(s(text(&c.args[0], "fqdn")?.split('.').next().unwrap_or(""))));
    p.add("std::is_base64_encoded", &[("s", None)], |_, c| Ok(Value::Bool(is_base64(&text(&c.args[0], "s")?))));
    p.add("std::timestamp", &[], |_, _| {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        Ok(Value::Int(t as i64))
    })
    .side_effect = true;
    p.add("std::password", &[("pw_id", None)], |ev, c| {
        let id = text(&c.args[0], "pw_id")?;
        if id.contains('=') {
            return Err(ext("The password id cannot contain =".into()));
        }
        let file = ev.project.project_dir.join("data/passwordfile.txt");
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let found = text.lines().filter_map(|l| l.trim().split_once('=')).find(|(k, _)| k.trim() == &*id);
        match found {
            Some((_, v)) => Ok(s(v.trim())),
            None => Err(ext(format!("Password {id} does not exist in file {}", file.display()))),
        }
    });
    p.add("std::generate_password", &[("pw_id", None), ("length", Some(Value::Int(20)))], |ev, c| {
        let id = text(&c.args[0], "pw_id")?;
        Ok(unknown(ev, &id, "password", ""))
    });
    p.add(
        "std::unique_file",
        &[("prefix", None), ("seed", None), ("suffix", None), ("length", Some(Value::Int(20)))],
        |_, c| {
            let (pre, seed, suf) =
                (text(&c.args[0], "prefix")?, text(&c.args[1], "seed")?, text(&c.args[2], "suffix")?);
            // std 8.7.5 ignores `length`: always the whole md5 of the seed
            int(&c.args[3], "length")?;
            use md5::Digest;
            let h: String = md5::Md5::digest(seed.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
            Ok(s(&format!("{pre}{h}{suf}")))
        },
    );
    p.add("std::select", &[("objects", None), ("attr", None)], |ev, c| {
        let a = text(&c.args[1], "attr")?;
        let mut out = Vec::new();
        for x in list(&c.args[0], "objects")?.iter() {
            out.push(ev.read_attr_span(x, &a, c.span)?);
        }
        Ok(Value::list(out))
    });
}
