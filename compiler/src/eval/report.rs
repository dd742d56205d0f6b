//! The end of a compile: freeze what is left, then report what is stuck (statements that never
//! ran, lookups that found nothing) and what is incomplete (unset attributes, relations below
//! their lower bound, instances without an implementation); and main.cf's variables as JSON.

use crate::diagnostics::ErrorKind;
use std::collections::HashSet;

use super::state::{Model, Slot};
use super::value::{InstId, Value};
use super::{Evaluator, TaskId, TaskKind, Wait, expr, loc_str};
use crate::diagnostics::{Diagnostic, Origin};
use crate::model::*;
use crate::syntax::ast;

impl Evaluator<'_> {
    /// End of evaluation: freeze everything, report what is stuck and what is incomplete.
    pub(super) fn finish(&mut self) {
        for i in 0..self.m.instances.len() {
            for a in 0..self.m.instances[i].slots.len() {
                if let Slot::Rel(r) = &mut self.m.instances[i].slots[a] {
                    r.frozen = true;
                }
            }
        }
        let had_errors = !self.errors.is_empty();
        let mut parked: Vec<(TaskId, Wait)> = self.queue.parked.drain().collect();
        parked.sort_by_key(|(t, _)| *t);
        let mut seen = HashSet::new();
        for (_, w) in &parked {
            if let Wait::Index(idx, key, span) = w
                && seen.insert((*span, key.clone()))
            {
                let k = key.trim_end_matches('\u{1}').replace('\u{1}', ", ").replace("=s:", "=").replace("=v:", "=");
                let msg = format!("No match in index on type {} with key {k}", self.index_desc(*idx));
                let error = Diagnostic::error(ErrorKind::NotFoundException, msg, Some(*span), self.m.sources);
                self.errors.push(error.raised_by(Origin::FinalCheck));
            }
        }
        if had_errors {
            return;
        }
        // as Inmanta's final check: lookups that found nothing, instances without an
        // implementation and unset attributes are reported together (one MultiException)
        let mut out = self.unknown_relation_annotations();
        for (i, inst) in self.m.instances.iter().enumerate() {
            let ent = &self.m.types.entities[inst.entity];
            if inst.selected == 0 {
                let why = if inst.unknown_when { " (the condition is unknown)" } else { "" };
                out.push(
                    Diagnostic::error(
                        ErrorKind::RuntimeException,
                        format!("Unable to select implementation for entity {}{why}", ent.name),
                        Some(inst.span),
                        self.m.sources,
                    )
                    .raised_by(Origin::FinalCheck),
                );
            }
            for (ai, a) in ent.attrs.iter().enumerate() {
                match (&a.kind, &inst.slots[ai]) {
                    (AttrKind::Prim { .. }, Slot::Prim { value: None, .. }) => {
                        out.push(Diagnostic::error(
                            ErrorKind::UnsetException,
                            format!(
                                "The object {} is not complete: attribute {} ({}) is not set",
                                self.inst_name(i as InstId),
                                a.name,
                                loc_str(self.m.sources, a.span)
                            ),
                            // as Inmanta: no location; the message names where the instance was made
                            None,
                            self.m.sources,
                        ));
                    }
                    (AttrKind::Rel { lo, .. }, Slot::Rel(r))
                        if (r.items.len() as u32) < *lo && r.unknown.is_empty() =>
                    {
                        let msg = if r.items.is_empty() && *lo == 1 {
                            format!(
                                "The object {} is not complete: attribute {} ({}) is not set",
                                self.inst_name(i as InstId),
                                a.name,
                                loc_str(self.m.sources, a.span)
                            )
                        } else {
                            format!(
                                "The object {} is not complete: attribute {} ({}) requires {lo} values but only {} are set",
                                self.inst_name(i as InstId),
                                a.name,
                                loc_str(self.m.sources, a.span),
                                r.items.len()
                            )
                        };
                        out.push(Diagnostic::error(ErrorKind::UnsetException, msg, None, self.m.sources));
                    }
                    _ => {}
                }
            }
        }
        self.errors.extend(out);
        if self.errors.is_empty() && self.queue.live_tasks > 0 {
            // as Inmanta: one error naming what the statements still wait for, at the first one
            let mut span = None;
            let mut waits: Vec<String> = Vec::new();
            for (t, w) in parked {
                let what = match &w {
                    Wait::Var(_, n) => n.to_string(),
                    Wait::Prim(i, a) | Wait::Rel(i, a) => {
                        format!("{}.{}", self.inst_name(*i), self.entity_of(*i).attrs[*a as usize].name)
                    }
                    Wait::Index(..) | Wait::Turn => continue,
                };
                span.get_or_insert(match &self.queue.tasks[t as usize].kind {
                    TaskKind::Stmt(s, _) => s.span(),
                    TaskKind::Implement { inst, .. } => self.m.instances[*inst as usize].span,
                    TaskKind::SetAttr { arg, .. } => arg.value.span,
                    TaskKind::Emit { what: super::gradual::Emitted::Expr(e), .. } => e.span,
                    TaskKind::Emit { what: super::gradual::Emitted::Items(items), .. } => {
                        items.first().map_or(crate::syntax::Span::default(), |e| e.span)
                    }
                    TaskKind::Element { sink, .. } => sink.span(),
                });
                if !waits.contains(&what) {
                    waits.push(what);
                }
            }
            if let Some(span) = span {
                self.errors.push(Diagnostic::error(
                    ErrorKind::RuntimeException,
                    format!(
                        "not all statements executed: they wait for [{}], which are never assigned (circular dependency?)",
                        waits.join(", ")
                    ),
                    Some(span),
                    self.m.sources,
                ));
            }
        }
    }
}

impl Evaluator<'_> {
    /// As Inmanta's final check of each relation end: an annotation (`A.b [1] foo B`, a value of
    /// the namespace) must not be unknown. Inmanta evaluates annotations like any statement, even
    /// when no instance uses the relation, and reports each unknown one at each named end.
    fn unknown_relation_annotations(&mut self) -> Vec<Diagnostic> {
        let mut out = Vec::new();
        for ns in 0..self.m.types.namespaces.len() {
            let Some(file) = self.m.types.namespaces[ns].file else { continue };
            for item in &file.items {
                let ast::Top::Relation { left, right, annotations, .. } = item else { continue };
                let mut unknown = 0;
                for a in annotations {
                    let mut cache = Vec::new();
                    let mut cx = expr::Cx::new(self.m.ns_scopes[ns], ns, &mut cache);
                    if let Ok(Value::Unknown(_)) = self.eval(a, &mut cx) {
                        unknown += 1;
                    }
                }
                // a self relation with one name on both ends is one attribute
                let same = left.class.name == right.class.name
                    && left.attr.as_ref().map(|i| &i.name) == right.attr.as_ref().map(|i| &i.name);
                let ends = [left.attr.as_ref(), right.attr.as_ref().filter(|_| !same)];
                for end in ends.into_iter().flatten() {
                    for _ in 0..unknown {
                        out.push(
                            Diagnostic::error(
                                ErrorKind::TypingException,
                                "Relation annotation can not be Unknown",
                                Some(end.span),
                                self.m.sources,
                            )
                            .raised_by(Origin::FinalCheck),
                        );
                    }
                }
            }
        }
        out
    }
}

/// Whether an error is one of the end-of-compile checks of [`Evaluator::finish`], which Inmanta
/// reports together rather than stopping at the first.
pub(crate) fn is_end_of_compile(d: &Diagnostic) -> bool {
    d.kind == ErrorKind::UnsetException || d.origin == Origin::FinalCheck
}

impl Model<'_> {
    /// Variables of the root namespace (`main.cf`) as JSON.
    pub(crate) fn root_variables(&self) -> std::collections::BTreeMap<String, serde_json::Value> {
        let mut out = std::collections::BTreeMap::new();
        let Some(&ns) = self.types.ns_by_name.get("__config__") else { return out };
        for (k, v) in self.scopes[self.ns_scopes[ns] as usize].vars_iter() {
            out.insert(k.to_string(), self.value_json(&v, 0));
        }
        out
    }
    /// Every instance as JSON, for tools that read a compile's objects (pytest-inmanta's
    /// `get_instances` on our compiler): its entity, that entity's ancestors, and the attributes
    /// and relations that have a value (an instance as `{"$instance": its index in the list}`).
    pub(crate) fn instances_json(&self) -> serde_json::Value {
        let mut out = Vec::with_capacity(self.instances.len());
        for (i, instance) in self.instances.iter().enumerate() {
            let entity = &self.types.entities[instance.entity];
            let mut attributes = serde_json::Map::new();
            for (index, attribute) in entity.attrs.iter().enumerate() {
                if let Some(value) = self.read_attribute(i as InstId, index).value {
                    attributes.insert(attribute.name.clone(), self.value_ref_json(&value, 0));
                }
            }
            let ancestors: Vec<&str> = entity.ancestors.iter().map(|a| self.types.entities[*a].name.as_str()).collect();
            out.push(serde_json::json!({"entity": entity.name, "ancestors": ancestors, "attributes": attributes}));
        }
        serde_json::Value::Array(out)
    }
    fn value_ref_json(&self, v: &Value, depth: usize) -> serde_json::Value {
        match v {
            Value::Instance(i) => serde_json::json!({"$instance": i}),
            Value::List(l) if depth < 32 => {
                serde_json::Value::Array(l.iter().map(|x| self.value_ref_json(x, depth + 1)).collect())
            }
            Value::Dict(d) if depth < 32 => serde_json::Value::Object(
                d.iter().map(|(k, x)| (k.to_string(), self.value_ref_json(x, depth + 1))).collect(),
            ),
            other => other.to_json(),
        }
    }
    pub(crate) fn value_json(&self, v: &Value, depth: usize) -> serde_json::Value {
        match v {
            Value::Instance(i) => serde_json::Value::String(format!("<{} instance>", self.entity_of(*i).name)),
            Value::List(l) if depth < 32 => {
                serde_json::Value::Array(l.iter().map(|x| self.value_json(x, depth + 1)).collect())
            }
            Value::Dict(d) if depth < 32 => serde_json::Value::Object(
                d.iter().map(|(k, x)| (k.to_string(), self.value_json(x, depth + 1))).collect(),
            ),
            other => other.to_json(),
        }
    }
}
