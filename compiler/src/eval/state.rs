//! What the model holds while it is evaluated: instances and their slots (attribute values,
//! relations with their freezing), variable scopes and index tables, with the reads every part
//! of the compiler shares. The evaluator (`mod.rs`) owns the [`Model`] and decides which
//! statement runs next; `export.rs` and the std plugins read the model through it.

use std::rc::Rc;

use super::format;
use super::loc_str;
use super::value::{InstId, UnknownSource, Value};
use super::{ScopeId, TaskId};
use crate::model::*;
use crate::syntax::{SourceMap, Span};

/// Tasks parked on a slot or variable. Most never have one, so the list is boxed: an empty
/// one costs 8 bytes instead of 24 in each of the millions of slots of a large model.
#[derive(Default)]
#[allow(clippy::box_collection, reason = "an empty list costs 8 bytes instead of 24 in every slot")]
pub(crate) struct Waiters(Option<Box<Vec<TaskId>>>);

impl Waiters {
    pub(super) fn push(&mut self, t: TaskId) {
        self.0.get_or_insert_with(Default::default).push(t);
    }

    pub(super) fn is_empty(&self) -> bool {
        self.0.as_ref().is_none_or(|w| w.is_empty())
    }

    pub(super) fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |w| w.len())
    }
}

impl IntoIterator for Waiters {
    type Item = TaskId;
    type IntoIter = std::vec::IntoIter<TaskId>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.map(|w| *w).unwrap_or_default().into_iter()
    }
}

/// `RelSlot::first` when nothing was assigned yet (an `Option<Span>` would make every slot of
/// every instance 8 bytes larger).
pub(super) const NO_SPAN: Span = Span { file: u32::MAX, start: 0, end: 0 };

pub(crate) struct RelSlot {
    pub items: Vec<InstId>,
    /// Built once the relation is large; boxed to keep the slot of every relation small.
    #[allow(clippy::box_collection)]
    pub(super) set: Option<Box<FastSet<InstId>>>,
    pub frozen: bool,
    pub(super) waiters: Waiters,
    pub(super) candidate: bool,
    /// Location of the first assignment (for error messages), `NO_SPAN` before it.
    pub(super) first: Span,
    /// The unknown values assigned: reads give an unknown instead of waiting or failing.
    pub unknown: Unknowns,
}

/// The distinct unknowns a relation holds. Inmanta's relation keeps each unknown value as an
/// element (two unknowns from two plugin calls are two elements; the same one twice is one), so
/// a plugin that reads the relation meets each. Boxed: most relations never hold one.
#[derive(Default)]
#[allow(clippy::box_collection, reason = "an empty list costs 8 bytes instead of 24 in every relation")]
pub(crate) struct Unknowns(Option<Box<Vec<Rc<UnknownSource>>>>);

impl Unknowns {
    /// The first unknown assigned, if any.
    pub(crate) fn first(&self) -> Option<&Rc<UnknownSource>> {
        self.0.as_ref().and_then(|u| u.first())
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.first().is_none()
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Rc<UnknownSource>> {
        self.0.iter().flat_map(|u| u.iter())
    }

    /// Adds `u` unless this very unknown is held already; whether it was added.
    pub(super) fn add(&mut self, u: Rc<UnknownSource>) -> bool {
        let all = self.0.get_or_insert_with(Default::default);
        let new = !all.iter().any(|x| Rc::ptr_eq(x, &u));
        if new {
            all.push(u);
        }
        new
    }
}

impl RelSlot {
    pub(super) fn contains(&self, i: InstId) -> bool {
        match &self.set {
            Some(s) => s.contains(&i),
            None => self.items.contains(&i),
        }
    }

    pub(super) fn push(&mut self, i: InstId) {
        self.items.push(i);
        if let Some(s) = &mut self.set {
            s.insert(i);
        } else if self.items.len() > 16 {
            self.set = Some(Box::new(self.items.iter().copied().collect()));
        }
    }

    /// Location of the first assignment.
    pub(crate) fn first(&self) -> Option<Span> {
        (self.first != NO_SPAN).then_some(self.first)
    }
}

pub(crate) enum Slot {
    Prim { value: Option<(Value, Span)>, waiters: Waiters },
    Rel(RelSlot),
}

pub(crate) struct Instance {
    pub entity: EntId,
    pub slots: Vec<Slot>,
    pub span: Span,
    pub(super) selected: u32,
    pub(super) pending_impl: u32,
    pub(super) unknown_when: bool,
    /// How many implementations deep this instance was made: 0 for a statement outside any
    /// implementation, else one more than the `self` of the implementation that made it.
    pub depth: u32,
}

pub(super) struct VarSlot {
    pub(super) value: Option<(Value, Span)>,
    pub(super) waiters: Waiters,
}

/// The variables declared in one scope. Most scopes hold a few names, where a vector beats a
/// map; a namespace can hold tens of thousands (a generated `main.cf`), so past
/// [`Vars::INDEXED`] names a map finds them (a linear search there made compile time quadratic
/// in the number of statements).
pub(crate) struct Vars<'a>(Vec<(&'a str, VarSlot)>, Option<Box<FastMap<&'a str, u32>>>);

thread_local! {
    /// Variable entries compared by lookups on this (compile) thread: a counter that shows a
    /// lookup's cost growing with the size of a scope (`CompileStats::variable_probes`).
    pub(crate) static VAR_PROBES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

impl<'a> Vars<'a> {
    const INDEXED: usize = 16;

    pub(super) fn new(vars: Vec<(&'a str, VarSlot)>) -> Self {
        let index = (vars.len() > Self::INDEXED)
            .then(|| Box::new(vars.iter().enumerate().map(|(i, (k, _))| (*k, i as u32)).collect()));
        Vars(vars, index)
    }

    pub(super) fn position(&self, name: &str) -> Option<usize> {
        if let Some(index) = &self.1 {
            VAR_PROBES.with(|p| p.set(p.get() + 1));
            return index.get(name).map(|&i| i as usize);
        }
        let found = self.0.iter().position(|(k, _)| *k == name);
        let scanned = found.map(|i| i + 1).unwrap_or(self.0.len());
        VAR_PROBES.with(|p| p.set(p.get() + scanned as u64));
        found
    }

    pub(super) fn get_mut(&mut self, name: &str) -> Option<&mut VarSlot> {
        let i = self.position(name)?;
        Some(&mut self.0[i].1)
    }

    pub(super) fn get(&self, name: &str) -> Option<&VarSlot> {
        self.position(name).map(|i| &self.0[i].1)
    }

    pub(crate) fn contains_key(&self, name: &str) -> bool {
        self.position(name).is_some()
    }
}

pub(crate) struct Scope<'a> {
    pub(super) parent: Option<ScopeId>,
    pub ns: NsId,
    pub vars: Vars<'a>,
}

impl Scope<'_> {
    /// Assigned variables of this scope.
    pub(crate) fn vars_iter(&self) -> impl Iterator<Item = (Rc<str>, Value)> + '_ {
        self.vars.0.iter().filter_map(|(k, v)| v.value.as_ref().map(|(x, _)| (Rc::from(*k), x.clone())))
    }

    pub(crate) fn parent_id(&self) -> Option<ScopeId> {
        self.parent
    }
}

/// The model under evaluation. Only the evaluator writes it (`Evaluator::m`); everything else
/// reads it, through `&Model` or the evaluator's `Deref`.
pub(crate) struct Model<'a> {
    pub types: Types<'a>,
    pub sources: &'a SourceMap,
    pub instances: Vec<Instance>,
    pub by_entity: Vec<Vec<InstId>>,
    pub scopes: Vec<Scope<'a>>,
    pub index_tables: Vec<FastMap<String, InstId>>,
    pub ns_scopes: Vec<ScopeId>,
}

/// An attribute as code outside the evaluator reads it (plugins, templates, the exporter),
/// without knowing how slots store values and relations.
pub(crate) struct AttrRead {
    /// A plain attribute's value; a relation's one instance (upper bound 1) or its list.
    pub value: Option<Value>,
    /// What a reader waits on when nothing is there yet but a later write may fill it: a plain
    /// attribute not set, a relation of upper bound 1 still empty and open.
    pub pending: Option<super::Wait>,
}

/// A write that conflicts with the value already there (single assignment).
pub(super) struct Conflict {
    pub old: Value,
    pub old_span: Span,
    pub new: Value,
}

/// Writes: each stores a value and returns the tasks waiting on that slot, for the evaluator to
/// wake; the model itself never schedules.
impl Model<'_> {
    /// Assigns a declared variable. Setting the same known value again wakes nobody.
    pub(super) fn store_var(&mut self, scope: ScopeId, name: &str, v: Value, span: Span) -> Result<Waiters, Conflict> {
        let slot = self.scopes[scope as usize].vars.get_mut(name).expect("declared variable");
        if let Some((old, old_span)) = &slot.value {
            if *old == v && !v.is_unknown() {
                return Ok(Waiters::default());
            }
            return Err(Conflict { old: old.clone(), old_span: *old_span, new: v });
        }
        slot.value = Some((v, span));
        Ok(std::mem::take(&mut slot.waiters))
    }

    /// Sets a plain attribute; `Ok(None)` when it already held this value.
    pub(super) fn store_prim(
        &mut self,
        inst: InstId,
        ai: u32,
        v: Value,
        span: Span,
    ) -> Result<Option<Waiters>, Conflict> {
        let Slot::Prim { value, waiters } = &mut self.instances[inst as usize].slots[ai as usize] else {
            unreachable!("a plain attribute")
        };
        if let Some((old, old_span)) = value {
            if *old == v && !v.is_unknown() {
                return Ok(None);
            }
            return Err(Conflict { old: old.clone(), old_span: *old_span, new: v });
        }
        *value = Some((v, span));
        Ok(Some(std::mem::take(waiters)))
    }

    /// Freezes a relation; `None` when it was frozen already (or is no relation).
    pub(super) fn freeze_slot(&mut self, inst: InstId, ai: u32) -> Option<Waiters> {
        let Slot::Rel(r) = &mut self.instances[inst as usize].slots[ai as usize] else { return None };
        if r.frozen {
            return None;
        }
        r.frozen = true;
        Some(std::mem::take(&mut r.waiters))
    }
}

impl<'a> Model<'a> {
    pub(crate) fn new(types: Types<'a>, sources: &'a SourceMap) -> Self {
        let n = types.entities.len();
        let ni = types.indexes.len();
        Model {
            types,
            sources,
            instances: Vec::new(),
            by_entity: vec![Vec::new(); n],
            scopes: Vec::new(),
            index_tables: vec![FastMap::default(); ni],
            ns_scopes: Vec::new(),
        }
    }

    pub(crate) fn ns_scope(&self, ns: NsId) -> ScopeId {
        self.ns_scopes[ns]
    }
    pub(crate) fn lookup_decl(&self, mut scope: ScopeId, name: &str) -> Option<ScopeId> {
        loop {
            let s = &self.scopes[scope as usize];
            if s.vars.contains_key(name) {
                return Some(scope);
            }
            scope = s.parent?;
        }
    }
    /// An attribute of `self` visible as a plain name inside an implementation body: the instance
    /// sits between the body's scopes and the namespace.
    pub(crate) fn self_attr_in_scope(&self, scope: ScopeId, name: &str) -> Option<InstId> {
        let mut sc = scope;
        loop {
            let s = &self.scopes[sc as usize];
            if s.vars.contains_key(name) {
                return None;
            }
            if let Some(VarSlot { value: Some((Value::Instance(i), _)), .. }) = s.vars.get("self")
                && self.entity_of(*i).attr(name).is_some()
            {
                return Some(*i);
            }
            sc = s.parent?;
        }
    }
    pub(crate) fn is_var_declared(&self, scope: ScopeId, name: &str) -> bool {
        self.lookup_decl(scope, name).is_some()
    }
    pub(crate) fn entity_of(&self, i: InstId) -> &Entity<'a> {
        &self.types.entities[self.instances[i as usize].entity]
    }
    /// The attribute at `index` of `inst`'s entity, as a reader outside the evaluator sees it.
    pub(crate) fn read_attribute(&self, inst: InstId, index: usize) -> AttrRead {
        let one = matches!(self.entity_of(inst).attrs[index].kind, AttrKind::Rel { hi: Some(1), .. });
        match &self.instances[inst as usize].slots[index] {
            Slot::Prim { value: Some((v, _)), .. } => AttrRead { value: Some(v.clone()), pending: None },
            Slot::Prim { value: None, .. } => {
                AttrRead { value: None, pending: Some(super::Wait::Prim(inst, index as u32)) }
            }
            Slot::Rel(r) if one => AttrRead {
                value: r.items.first().map(|x| Value::Instance(*x)),
                pending: (r.items.is_empty() && !r.frozen).then_some(super::Wait::Rel(inst, index as u32)),
            },
            Slot::Rel(r) => AttrRead {
                value: Some(Value::list(r.items.iter().map(|x| Value::Instance(*x)).collect())),
                pending: None,
            },
        }
    }
    /// The attribute named `name` of `inst` (`None`: its entity has no such attribute).
    pub(crate) fn read_attribute_named(&self, inst: InstId, name: &str) -> Option<AttrRead> {
        let (index, _) = self.entity_of(inst).attr(name)?;
        Some(self.read_attribute(inst, index))
    }
    /// The attributes a plugin or template sees of an instance, by index and name: all but the
    /// `requires` and `provides` relations every entity has.
    pub(crate) fn plugin_attributes(&self, inst: InstId) -> Vec<(usize, String)> {
        let entity = self.entity_of(inst);
        entity
            .attrs
            .iter()
            .enumerate()
            .filter(|(_, a)| a.name != "requires" && a.name != "provides")
            .map(|(n, a)| (n, a.name.clone()))
            .collect()
    }
    pub(crate) fn inst_name(&self, i: InstId) -> String {
        let inst = &self.instances[i as usize];
        format!("{} (instantiated at {})", self.types.entities[inst.entity].name, loc_str(self.sources, inst.span))
    }
    /// The `repr()` of a value for a message: cut past [`format::SHOWN_CHARS`] (with its size).
    pub(crate) fn repr(&self, v: &Value) -> String {
        format::shown(v, &|i| self.inst_name(i), format::SHOWN_CHARS)
    }
    /// How deep an instance made in `scope` is: one more than the `self` of the innermost
    /// implementation around it (0 outside implementations).
    pub(crate) fn depth_in(&self, scope: ScopeId) -> u32 {
        let Some(sc) = self.lookup_decl(scope, "self") else { return 0 };
        match self.scopes[sc as usize].vars.get("self").and_then(|s| s.value.as_ref()) {
            Some((Value::Instance(i), _)) => self.instances[*i as usize].depth.saturating_add(1),
            _ => 0,
        }
    }
    /// Index key of an instance for an index, when every field is set.
    pub(crate) fn index_key(&self, inst: InstId, idx: usize) -> Option<String> {
        let ent = self.instances[inst as usize].entity;
        let mut key = String::new();
        for f in &self.types.indexes[idx].fields {
            let (ai, _) = self.types.entities[ent].attr(f)?;
            let part = match &self.instances[inst as usize].slots[ai] {
                Slot::Prim { value: Some((v, _)), .. } if !v.is_unknown() => v.key(),
                Slot::Rel(r) if r.items.len() == 1 => format!("i:{}", r.items[0]),
                _ => return None,
            };
            key.push_str(f);
            key.push('=');
            key.push_str(&part);
            key.push('\u{1}');
        }
        Some(key)
    }
    pub(crate) fn index_desc(&self, idx: usize) -> String {
        let i = &self.types.indexes[idx];
        format!("{}({})", self.types.entities[i.entity].name, i.fields.join(", "))
    }
    pub(crate) fn index_get(&self, idx: usize, key: &str) -> Option<InstId> {
        self.index_tables[idx].get(key).copied()
    }
    /// Builds an index key from named values (in index field order).
    pub(crate) fn key_from(&self, idx: usize, vals: &FastMap<&str, Value>) -> Option<String> {
        let mut key = String::new();
        for f in &self.types.indexes[idx].fields {
            let v = vals.get(f.as_str())?;
            if v.is_unknown() {
                return None;
            }
            key.push_str(f);
            key.push('=');
            key.push_str(&v.key());
            key.push('\u{1}');
        }
        Some(key)
    }
}

/// Inmanta's text for a second, different value written where one was already set.
pub(crate) fn value_set_twice(old: &str, old_at: &str, new: &str, new_at: &str) -> String {
    format!("value set twice: old value: {old} (set at {old_at}), new value: {new} (set at {new_at})")
}

impl Conflict {
    /// The error text for this conflict, the new value written at `span`.
    pub(crate) fn message(&self, sources: &SourceMap, span: Span) -> String {
        value_set_twice(
            &format::short_repr(&self.old),
            &loc_str(sources, self.old_span),
            &format::short_repr(&self.new),
            &loc_str(sources, span),
        )
    }
}
