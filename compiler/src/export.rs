//! Export: turns every instance of an entity with a resource mapping into a resource in
//! Inmanta's JSON shape. This is the only place that knows the wire format of a resource.

use crate::diagnostics::ErrorKind;
use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::{Value as Json, json};

use crate::diagnostics::Diagnostic;
use crate::eval::value::UnknownSource;
use crate::eval::value::{InstId, Value};
use crate::eval::{Evaluator, Model};
use crate::model::{EntId, FastMap};
use crate::python::PyExport;

mod mappings;
mod requires;

use mappings::BUILTIN;
pub(crate) use mappings::Mapping;
pub(crate) use requires::find_cycle;
use requires::{Named, fs_requires, requires_of};

/// One exported resource: its id, the resources it requires and its attributes (every key of
/// Inmanta's resource dict but `id` and `requires`). It holds no version: the version is attached
/// once, when the wire form is made ([`ExportedResource::into_wire`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ExportedResource {
    pub id: api::ResourceId,
    /// Sorted by their text, without duplicates.
    pub requires: Vec<api::ResourceId>,
    pub attributes: crate::Attributes,
}

impl ExportedResource {
    /// The resource dict of version `version` in Inmanta's export shape: the attributes, `id` as
    /// the resource version id and `requires` as resource version ids of the same version. With
    /// version 0 (no version yet: a partial export, whose version the server picks, and the `-j`
    /// file) the requires are plain resource ids, as Inmanta's exporter writes them.
    pub fn into_wire(self, version: u64) -> serde_json::Map<String, Json> {
        let mut dict: serde_json::Map<String, Json> = self.attributes.into();
        let requires = self
            .requires
            .iter()
            .map(|r| Json::String(if version == 0 { r.to_string() } else { r.versioned_text(version) }))
            .collect();
        dict.insert("requires".into(), Json::Array(requires));
        dict.insert("id".into(), Json::String(self.id.versioned_text(version)));
        dict
    }

    /// [`ExportedResource::into_wire`] of a copy.
    pub fn to_wire(&self, version: u64) -> serde_json::Map<String, Json> {
        self.clone().into_wire(version)
    }

    /// What [`ExportedResource::into_wire`] makes, serialized from the resource itself: the
    /// same JSON without a copy of the attributes (the `-j` file of 100 000 resources held a
    /// second copy of each while it was written, about 300 MB).
    pub fn wire(&self, version: u64) -> Wire<'_> {
        Wire { resource: self, version }
    }
}

/// A resource serialized in its wire form; see [`ExportedResource::wire`].
pub struct Wire<'a> {
    resource: &'a ExportedResource,
    version: u64,
}

impl serde::Serialize for Wire<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let resource = self.resource;
        let id = resource.id.versioned_text(self.version);
        let requires: Vec<String> = resource
            .requires
            .iter()
            .map(|r| if self.version == 0 { r.to_string() } else { r.versioned_text(self.version) })
            .collect();
        // In the order of into_wire's map, whose keys are sorted: `id` and `requires` take their
        // places among the attributes and replace attributes of those names.
        let shadowed = |key: &str| key == "id" || key == "requires";
        let len = resource.attributes.keys().filter(|k| !shadowed(k)).count() + 2;
        let mut map = serializer.serialize_map(Some(len))?;
        let (mut id_written, mut requires_written) = (false, false);
        for (key, value) in &resource.attributes {
            if !id_written && "id" <= key.as_str() {
                map.serialize_entry("id", &id)?;
                id_written = true;
            }
            if !requires_written && "requires" <= key.as_str() {
                map.serialize_entry("requires", &requires)?;
                requires_written = true;
            }
            if !shadowed(key) {
                map.serialize_entry(key, value)?;
            }
        }
        if !id_written {
            map.serialize_entry("id", &id)?;
        }
        if !requires_written {
            map.serialize_entry("requires", &requires)?;
        }
        map.end()
    }
}

pub(crate) struct Exported {
    pub resources: Vec<ExportedResource>,
    pub files: BTreeMap<String, Vec<u8>>,
    pub resource_state: BTreeMap<String, String>,
    pub unknowns: Vec<Json>,
    pub resource_sets: BTreeMap<String, String>,
    pub warnings: Vec<Diagnostic>,
    pub errors: Vec<Diagnostic>,
}

fn slot_value(ev: &View<'_, '_>, inst: InstId, name: &str) -> Option<Value> {
    ev.m.read_attribute_named(inst, name)?.value
}

fn path_value(ev: &View<'_, '_>, inst: InstId, path: &str) -> Option<Value> {
    let mut cur = Value::Instance(inst);
    for seg in path.split('.') {
        cur = match cur {
            Value::Instance(i) => slot_value(ev, i, seg)?,
            Value::List(l) => match l.first() {
                Some(Value::Instance(i)) => slot_value(ev, *i, seg)?,
                _ => return None,
            },
            other => return Some(other),
        };
    }
    if let Value::List(l) = &cur {
        return l.first().cloned();
    }
    Some(cur)
}

fn id_string(v: &Value) -> String {
    match v {
        Value::Str(s) => s.to_string(),
        Value::Unknown(_) => "<<undefined>>".into(),
        other => crate::eval::format::python_str(other, &|i| format!("{i}")),
    }
}

/// A Python `@resource` of an installed module comes first (the installed module is the truth;
/// the compile keeps one for a built-in type only when the installed version is not the one the
/// built-in mapping reproduces), then the built-in mappings, then `module.yml` ones.
fn mapping_for<'e>(ev: &View<'e, '_>, ent: EntId) -> Option<(&'e Mapping, EntId)> {
    let python = ev.mappings.iter().filter(|m| m.python);
    let declared = ev.mappings.iter().filter(|m| !m.python);
    python.chain(BUILTIN.iter()).chain(declared).find_map(|m| {
        let me = *ev.m.types.entity_by_name.get(m.entity.as_str())?;
        ev.m.types.is_subtype(ent, me).then_some((m, me))
    })
}

fn uri_of(ev: &View<'_, '_>, inst: InstId) -> Option<Value> {
    let path = path_value(ev, inst, "path")?;
    let disc = path_value(ev, inst, "resource_discriminator")?;
    match (&path, &disc) {
        (Value::Str(p), Value::Str(d)) if d.is_empty() => Some(Value::str(p)),
        (Value::Str(p), Value::Str(d)) => Some(Value::str(&format!("{p}:{d}"))),
        _ => Some(Value::Unknown(std::rc::Rc::new(crate::eval::value::UnknownSource {
            parameter: "uri".into(),
            source: "plugin".into(),
            resource: String::new(),
        }))),
    }
}

/// The resource id of an instance, when it is a resource and its id is known.
/// The entity a Python `@resource` class maps `inst` by, when one does (its id then comes from
/// the class's `get_<attribute>` mappers, in Python).
pub(crate) fn python_mapping_of(ev: &View<'_, '_>, inst: InstId) -> Option<String> {
    let ent = ev.m.instances[inst as usize].entity;
    mapping_for(ev, ent).filter(|(m, _)| m.python).map(|(m, _)| m.entity.clone())
}

pub(crate) fn resource_id_of(ev: &View<'_, '_>, inst: InstId) -> Option<api::ResourceId> {
    let ent = ev.m.instances[inst as usize].entity;
    let (m, _) = mapping_for(ev, ent)?;
    let agent = path_value(ev, inst, &m.agent)?;
    let idv = if m.id_attr == "uri" { uri_of(ev, inst)? } else { path_value(ev, inst, &m.id_attr)? };
    if agent.is_unknown() || idv.is_unknown() {
        return None;
    }
    Some(api::ResourceId {
        entity_type: m.entity.clone(),
        agent: id_string(&agent),
        attribute: m.id_attr.clone(),
        value: id_string(&idv),
    })
}

/// What the JSON of one resource's attributes met on the way: an unknown value (the resource is
/// then undefined), and the references they hold, each standing in the JSON as a token until
/// `references::export_resource` lists it and puts a mutator where it stood.
#[derive(Default)]
pub(crate) struct Found {
    unknown: bool,
    references: Vec<std::rc::Rc<crate::references::Reference>>,
}

impl Found {
    /// The token that stands for `r` in the JSON.
    fn reference(&mut self, r: &std::rc::Rc<crate::references::Reference>) -> Json {
        self.references.push(r.clone());
        Json::String(crate::references::token(self.references.len() - 1))
    }
}

fn to_json(ev: &View<'_, '_>, v: &Value, found: &mut Found) -> Json {
    match v {
        Value::Unknown(_) => {
            found.unknown = true;
            Json::String("<<undefined>>".into())
        }
        Value::Reference(r) => found.reference(r),
        Value::List(l) => Json::Array(l.iter().map(|x| to_json(ev, x, found)).collect()),
        Value::Dict(d) => Json::Object(d.iter().map(|(k, x)| (k.to_string(), to_json(ev, x, found))).collect()),
        Value::Instance(i) => Json::String(ev.m.inst_name(*i)),
        other => other.to_json(),
    }
}

/// A `mitogen::Context` as the mitogen module serializes it: every attribute that is not null,
/// and the context it goes `via`.
fn context_json(ev: &View<'_, '_>, ctx: InstId, depth: usize, found: &mut Found) -> Json {
    let ent = ev.m.entity_of(ctx);
    let mut obj = serde_json::Map::new();
    for a in ent.attrs.iter() {
        if a.is_relation() {
            continue;
        }
        match slot_value(ev, ctx, &a.name) {
            None | Some(Value::Null) => {}
            Some(v) => {
                obj.insert(a.name.clone(), to_json(ev, &v, found));
            }
        }
    }
    if depth < 8
        && let Some(Value::Instance(via)) = slot_value(ev, ctx, "via")
    {
        obj.insert("via".into(), context_json(ev, via, depth + 1, found));
    }
    Json::Object(obj)
}

/// The `via` of a resource, found the way the mitogen module does: its own `via`, its host's
/// `via`, or an ssh context built from the host's `ip`; `None` when there is none of these
/// (the export then fails, as Inmanta's does).
fn resource_via(ev: &View<'_, '_>, inst: InstId, found: &mut Found) -> Option<Json> {
    if let Some(Value::Instance(c)) = slot_value(ev, inst, "via") {
        return Some(context_json(ev, c, 0, found));
    }
    let Some(Value::Instance(host)) = slot_value(ev, inst, "host") else { return None };
    if let Some(Value::Instance(c)) = slot_value(ev, host, "via") {
        return Some(context_json(ev, c, 0, found));
    }
    let ip = slot_value(ev, host, "ip").filter(|v| !matches!(v, Value::Null))?;
    let field = |name: &str| slot_value(ev, host, name).unwrap_or(Value::Null);
    let python = match path_value(ev, host, "os.python_cmd") {
        Some(Value::Str(p)) => p.to_string(),
        _ => "python3".into(),
    };
    let user = field("remote_user");
    let ssh = serde_json::json!({
        "method_name": "ssh",
        "name": to_json(ev, &field("name"), found),
        "hostname": to_json(ev, &ip, found),
        "username": to_json(ev, &user, found),
        "port": to_json(ev, &field("remote_port"), found),
        "check_host_keys": "ignore",
        "ssh_args": ["-o", "UserKnownHostsFile=/dev/null", "-o", "PasswordAuthentication=no"],
        "python_path": [python],
    });
    if matches!(&user, Value::Str(s) if &**s == "root") {
        Some(ssh)
    } else {
        Some(serde_json::json!({"method_name": "sudo", "name": "", "via": ssh}))
    }
}

/// What `std::file` / `fs::file` return: a string naming a file (std's `FileMarker`), whose
/// content the exporter reads.
pub(crate) const FILE_MARKER: &str = "imp-module-source:file://";

fn file_content(ev: &View<'_, '_>, inst: InstId) -> Option<Value> {
    let content = match slot_value(ev, inst, "content")? {
        Value::Str(s) if s.starts_with(FILE_MARKER) => {
            // an unreadable file was readable when the plugin returned its marker: read as empty
            let bytes = std::fs::read(&s[FILE_MARKER.len()..]).unwrap_or_default();
            Value::Str(std::rc::Rc::from(String::from_utf8_lossy(&bytes).as_ref()))
        }
        other => other,
    };
    let sep = match slot_value(ev, inst, "content_separator") {
        Some(Value::Str(s)) => s.to_string(),
        _ => "\n".into(),
    };
    let blocks = |name: &str| -> Option<Vec<Value>> {
        let Some(Value::List(l)) = slot_value(ev, inst, name) else { return Some(vec![]) };
        let mut items: Vec<(String, Value)> = Vec::new();
        for b in l.iter() {
            let Value::Instance(bi) = b else { continue };
            let value = slot_value(ev, *bi, "value")?;
            let key = match slot_value(ev, *bi, "sorting_key") {
                Some(Value::Str(k)) => k.to_string(),
                _ => id_string(&value),
            };
            items.push((key, value));
        }
        items.sort_by(|a, b| a.0.cmp(&b.0));
        Some(items.into_iter().map(|(_, v)| v).collect())
    };
    let prefix = blocks("prefix_content")?;
    let suffix = blocks("suffix_content")?;
    if prefix.is_empty() && suffix.is_empty() {
        return Some(content);
    }
    let mut parts: Vec<Value> = prefix;
    parts.push(content);
    parts.extend(suffix);
    if parts.iter().any(Value::is_unknown) {
        return Some(parts.into_iter().find(Value::is_unknown).unwrap_or(Value::Null));
    }
    Some(Value::str(&parts.iter().map(id_string).collect::<Vec<_>>().join(&sep)))
}

/// Runs the Python `@resource` classes over their instances (before [`export`], which needs
/// only shared access to the evaluator).
pub(crate) fn export_python_resources(ev: &mut Evaluator<'_>) -> Result<HashMap<InstId, PyExport>, Vec<Diagnostic>> {
    let mut out = HashMap::new();
    if ev.python.is_none() {
        return Ok(out);
    }
    let mut errors = Vec::new();
    let view = View::of(ev);
    let targets: Vec<(InstId, String)> = (0..ev.m.instances.len() as InstId)
        .filter_map(|i| {
            let (m, _) = mapping_for(&view, ev.m.instances[i as usize].entity)?;
            if !m.python || matches!(slot_value(&view, i, "managed"), Some(Value::Bool(false))) {
                return None;
            }
            Some((i, m.entity.clone()))
        })
        .collect();
    for (i, entity) in targets {
        match ev.export_python(i, &entity) {
            Ok(x) => {
                out.insert(i, x);
            }
            Err(d) => errors.push(*d),
        }
    }
    if errors.is_empty() { Ok(out) } else { Err(errors) }
}

/// An attribute value from Python in the resource JSON (unknowns as Inmanta writes them).
fn python_json(v: &Json, found: &mut Found) -> Json {
    match v {
        Json::Array(a) => Json::Array(a.iter().map(|x| python_json(x, found)).collect()),
        Json::Object(o) => {
            if let Some(pairs) = o.get("$d").and_then(Json::as_array) {
                let item = |pair: &Json| Some((pair.get(0)?.as_str()?.to_string(), python_json(pair.get(1)?, found)));
                Json::Object(pairs.iter().filter_map(item).collect())
            } else if o.contains_key("$u") {
                found.unknown = true;
                Json::String("<<undefined>>".into())
            } else {
                v.clone()
            }
        }
        other => other.clone(),
    }
}

/// What the export reads: the model, read-only, and the resource mappings of the loaded modules.
pub(crate) struct View<'e, 'a> {
    pub m: &'e Model<'a>,
    pub mappings: &'e [Mapping],
}

impl<'e, 'a> View<'e, 'a> {
    pub(crate) fn of(ev: &'e Evaluator<'a>) -> Self {
        View { m: &ev.m, mappings: &ev.project.resource_mappings }
    }
}

/// The resources of an evaluated model, in Inmanta's export shape, with the files Python
/// resource mappers uploaded and the unknowns the compile met.
pub(crate) fn export(
    ev: &View<'_, '_>,
    python: &HashMap<InstId, PyExport>,
    python_files: &[(String, Vec<u8>)],
    unknowns: &[UnknownSource],
) -> Exported {
    let mut out = Exported {
        resources: Vec::new(),
        files: BTreeMap::new(),
        resource_state: BTreeMap::new(),
        unknowns: Vec::new(),
        resource_sets: BTreeMap::new(),
        warnings: Vec::new(),
        errors: Vec::new(),
    };
    // 1. ids of every resource instance, built once (in `order`), with their text
    let mut order: Vec<Named<'_>> = Vec::new();
    let mapped: Vec<Option<&Mapping>> =
        (0..ev.m.types.entities.len()).map(|e| mapping_for(ev, e).map(|(m, _)| m)).collect();
    for (i, inst) in ev.m.instances.iter().enumerate() {
        let i = i as InstId;
        let Some(m) = mapped[inst.entity] else { continue };
        if let Some(Value::Bool(false)) = slot_value(ev, i, "managed") {
            continue;
        }
        let rid = if m.python {
            match python.get(&i) {
                Some(PyExport::Resource { id, .. }) => Some(id.clone()),
                Some(PyExport::Ignored) => continue,
                _ => None,
            }
        } else {
            resource_id_of(ev, i)
        };
        let Some(id) = rid else {
            out.warnings.push(Diagnostic::warning(
                ErrorKind::CompilerRuntimeWarning,
                format!("{} is not exported: its id contains an unknown value", ev.m.inst_name(i)),
                Some(inst.span),
                ev.m.sources,
            ));
            continue;
        };
        order.push(Named { inst: i, mapping: m, text: id.to_string(), id });
    }
    // a stable sort keeps instances with the same id in creation order: the first one stays
    // (by the text: the order of the export, of its requires and of the cycle search)
    order.sort_by(|a, b| a.text.cmp(&b.text));
    order.dedup_by(|later, first| {
        if later.text != first.text {
            return false;
        }
        // Inmanta's exporter raises a plain CompilerException with this message; the instances
        // that collide are ours to add
        out.errors.push(
            Diagnostic::error(
                ErrorKind::CompilerException,
                format!("Resource {} exists more than once in the configuration model", later.text),
                Some(ev.m.instances[later.inst as usize].span),
                ev.m.sources,
            )
            .with_note(format!(
                "{} and {} have this id",
                ev.m.inst_name(first.inst),
                ev.m.inst_name(later.inst)
            )),
        );
        true
    });
    let rid_of: FastMap<InstId, usize> = order.iter().enumerate().map(|(n, r)| (r.inst, n)).collect();
    // directories per agent, for the implicit fs requires
    let fs_reqs = fs_requires(ev, &order, &mut out.errors);
    let mut dropped_warned: HashSet<InstId> = HashSet::new();
    let mut via_error: Option<(crate::model::EntId, Diagnostic)> = None;
    // attributes and requires of each resource of `order`
    let mut bodies: Vec<(crate::Attributes, Vec<api::ResourceId>)> = Vec::with_capacity(order.len());
    for Named { inst: i, mapping: m, text: rid, .. } in &order {
        let (i, m) = (*i, *m);
        let mut found = Found::default();
        let mut obj = serde_json::Map::new();
        let own_fields: &[String] = if m.python { &[] } else { &m.fields };
        if let Some(PyExport::Resource { attributes, .. }) = python.get(&i) {
            for (k, v) in attributes {
                obj.insert(k.clone(), python_json(v, &mut found));
            }
        }
        for f in own_fields {
            // The conventions below belong to the built-in types (and `via` to every resource);
            // a module's field is exported as the attribute of that name.
            let key = if m.builtin || f == "via" { f.as_str() } else { "" };
            let v: Json = match key {
                "permissions" => match slot_value(ev, i, "mode") {
                    // fs' mapper converts the mode with int(), which a reference refuses
                    Some(Value::Reference(r)) => {
                        out.errors.push(crate::references::refused_by_int(&m.entity, "permissions", &r));
                        Json::Null
                    }
                    Some(v) => to_json(ev, &v, &mut found),
                    None => Json::Null,
                },
                "hash" => match file_content(ev, i) {
                    // a content reference is resolved by the agent: no file to upload, the
                    // `content` mutator puts the value in place (fs' `get_hash`)
                    Some(Value::Reference(_)) => Json::Null,
                    Some(Value::Str(s)) => {
                        let h = sha1_smol::Sha1::from(s.as_bytes()).hexdigest();
                        out.files.insert(h.clone(), s.as_bytes().to_vec());
                        Json::String(h)
                    }
                    Some(other) => to_json(ev, &other, &mut found),
                    None => Json::Null,
                },
                // the content travels as a file (its hash); an unknown one is exported as such
                "content" if m.entity == "fs::File" => match file_content(ev, i) {
                    Some(v @ (Value::Unknown(_) | Value::Reference(_))) => to_json(ev, &v, &mut found),
                    _ => Json::Null,
                },
                "uri" if m.entity == "fs::JsonFile" => {
                    uri_of(ev, i).map(|v| to_json(ev, &v, &mut found)).unwrap_or(Json::Null)
                }
                "via" => match resource_via(ev, i, &mut found) {
                    Some(v) => v,
                    None => {
                        // Inmanta stops at the first resource it can not export, going type by type
                        let ent = ev.m.instances[i as usize].entity;
                        if via_error.as_ref().is_some_and(|(e, _)| *e <= ent) {
                            continue;
                        }
                        via_error = Some((
                            ent,
                            Diagnostic::plain(
                                ErrorKind::ExternalException,
                                format!(
                                    "Failed to get attribute 'via' for export on '{}': {} has no via, no host with a via and no host ip",
                                    m.entity,
                                    ev.m.inst_name(i)
                                ),
                            ),
                        ));
                        Json::Null
                    }
                },
                "values" => {
                    let mut vals = Vec::new();
                    if let Some(Value::List(l)) = slot_value(ev, i, "values") {
                        for v in l.iter() {
                            let Value::Instance(vi) = v else { continue };
                            let mut o = serde_json::Map::new();
                            for k in ["path", "operation", "value"] {
                                if let Some(x) = slot_value(ev, *vi, k) {
                                    o.insert(k.into(), to_json(ev, &x, &mut found));
                                } else if k == "value" {
                                    o.insert(k.into(), Json::Null);
                                }
                            }
                            vals.push(Json::Object(o));
                        }
                    }
                    Json::Array(vals)
                }
                "autostart" => {
                    let v = slot_value(ev, i, "autostart").map(|v| to_json(ev, &v, &mut found)).unwrap_or(Json::Null);
                    if v != Json::Bool(true) {
                        continue;
                    }
                    v
                }
                // a module's field, or a built-in type's field without a convention ("" or `f`)
                _ => match slot_value(ev, i, f) {
                    Some(v) => to_json(ev, &v, &mut found),
                    None => Json::Null,
                },
            };
            obj.insert(f.clone(), v);
        }
        for base in ["send_event", "receive_events", "report_only", "purged", "purge_on_delete", "managed"] {
            if m.python || obj.contains_key(base) {
                continue;
            }
            if let Some(v) = slot_value(ev, i, base) {
                obj.insert(base.into(), to_json(ev, &v, &mut found));
            }
        }
        // a Python `@resource` serialized its references and mutators itself (inmanta-core's
        // Resource, from the values its mappers returned)
        if !(m.python && obj.contains_key("references")) {
            crate::references::export_resource(&found.references, rid, &mut obj);
        }
        // requires: only resources count; Inmanta's export drops a requirement on any other
        // entity (and does not follow that entity's own requires). A resource that requires
        // itself stays, and is reported as a cycle. Positions in `order`, which is sorted by text.
        let mut reqs: Vec<usize> = Vec::new();
        for r in requires_of(ev, i) {
            if let Some(&n) = rid_of.get(&r) {
                reqs.push(n);
            } else if mapped[ev.m.instances[r as usize].entity].is_none() && dropped_warned.insert(r) {
                out.warnings.push(Diagnostic::warning(
                    ErrorKind::CompilerRuntimeWarning,
                    format!("The requirement on {} is dropped at export: it is not a resource", ev.m.inst_name(r)),
                    Some(ev.m.instances[r as usize].span),
                    ev.m.sources,
                ));
            }
        }
        if let Some(extra) = fs_reqs.get(&i) {
            reqs.extend(extra);
        }
        reqs.sort_unstable();
        reqs.dedup();
        // the export's own keys, whatever a field or Python called so
        obj.remove("id");
        obj.remove("requires");
        if found.unknown {
            out.resource_state.insert(rid.clone(), api::ResourceState::Undefined.to_string());
        }
        // Compacted now: the maps of all resources alive at once were the export's largest part.
        bodies.push((obj.into(), reqs.into_iter().map(|n| order[n].id.clone()).collect()));
    }
    // resource sets
    if let Some(&rs) = ev.m.types.entity_by_name.get("std::ResourceSet") {
        let mut sets: Vec<InstId> = ev.m.by_entity[rs].clone();
        for d in &ev.m.types.entities[rs].descendants {
            sets.extend(ev.m.by_entity[*d].iter().copied());
        }
        for s in sets {
            let Some(Value::Str(name)) = slot_value(ev, s, "name") else { continue };
            if let Some(Value::List(l)) = slot_value(ev, s, "resources") {
                for r in l.iter() {
                    if let Value::Instance(ri) = r
                        && let Some(id) = rid_of.get(ri).map(|&n| &order[n].text)
                    {
                        if let Some(prev) = out.resource_sets.get(id)
                            && **prev != *name
                        {
                            out.errors.push(Diagnostic::error(
                                ErrorKind::CompilerException,
                                format!("Resource {id} is in more than one resource set: {prev} and {name}"),
                                Some(ev.m.instances[s as usize].span),
                                ev.m.sources,
                            ));
                        }
                        out.resource_sets.insert(id.clone(), name.to_string());
                    }
                }
            }
        }
    }
    // the ids move into their resources
    out.resources = order
        .into_iter()
        .zip(bodies)
        .map(|(named, (attributes, requires))| ExportedResource { id: named.id, requires, attributes })
        .collect();
    if let Some((_, d)) = via_error {
        out.errors.push(d);
    }
    for (hash, content) in python_files {
        out.files.insert(hash.clone(), content.clone());
    }
    for u in unknowns {
        out.unknowns
            .push(json!({"parameter": u.parameter, "source": u.source, "resource": u.resource, "metadata": {}}));
    }
    out
}
