//! Construction: `Entity(...)` with its arguments, defaults and indexes, and index lookups.

use super::*;
use crate::diagnostics::ErrorKind;

impl<'a> Evaluator<'a> {
    pub(crate) fn resolve_class(&mut self, ns: NsId, class: &Ident, infer: Option<EntId>) -> EResult<EntId> {
        let key = (ns, infer, class.span);
        if let Some(&ent) = self.resolved_classes.get(&key) {
            return Ok(ent);
        }
        let ent = self.resolve_class_uncached(ns, class, infer)?;
        self.resolved_classes.insert(key, ent);
        Ok(ent)
    }

    fn resolve_class_uncached(&mut self, ns: NsId, class: &Ident, infer: Option<EntId>) -> EResult<EntId> {
        let scoped = crate::eval::build::lookup_entity(&self.m.types, ns, &class.name);
        if let Some(t) = infer
            && !class.name.contains("::")
        {
            // inside a constructor argument that assigns a relation: resolve against its target type
            let mut cands: Vec<EntId> = std::iter::once(t)
                .chain(self.m.types.entities[t].descendants.iter().copied())
                .filter(|e| self.m.types.entities[*e].name.rsplit("::").next() == Some(class.name.as_str()))
                .collect();
            cands.sort_unstable();
            cands.dedup();
            match (cands.len(), &scoped) {
                // a name the namespace knows is that entity, as in Inmanta (a wrong one is then a
                // type error of the relation)
                (_, Ok(e)) => return Ok(*e),
                (1, _) => return Ok(cands[0]),
                (0, _) => {}
                _ => {
                    let names: Vec<String> = cands.iter().map(|c| self.m.types.entities[*c].name.clone()).collect();
                    return Err(error(
                        ErrorKind::AmbiguousTypeException,
                        format!(
                            "Could not determine namespace for type {}: candidates are {}",
                            class.name,
                            names.join(", ")
                        ),
                        class.span,
                        self.m.sources,
                    ));
                }
            }
        }
        scoped.map_err(|(kind, msg)| error(kind, msg, class.span, self.m.sources))
    }

    pub(super) fn index_lookup(&mut self, ent: EntId, vals: Vec<(&str, Value, Span)>, span: Span) -> EResult<Value> {
        if let Some((n, _, _)) =
            vals.iter().enumerate().find_map(|(i, v)| vals[..i].iter().any(|w| w.0 == v.0).then_some(v))
        {
            return Err(error(
                ErrorKind::RuntimeException,
                format!("Attribute {n} provided twice in index lookup"),
                span,
                self.m.sources,
            ));
        }
        for (n, v, s) in &vals {
            if self.m.types.entities[ent].attr(n).is_none() {
                return Err(error(
                    ErrorKind::NotFoundException,
                    format!("Entity {} has no attribute {n}", self.m.types.entities[ent].name),
                    *s,
                    self.m.sources,
                ));
            }
            if v.is_unknown() {
                return Ok(v.clone());
            }
        }
        let names: Vec<&str> = vals.iter().map(|(n, _, _)| *n).collect();
        let idx = self.m.types.entities[ent].indexes.iter().copied().find(|i| {
            let f = &self.m.types.indexes[*i].fields;
            f.len() == names.len() && f.iter().all(|x| names.contains(&x.as_str()))
        });
        let Some(idx) = idx else {
            return Err(error(
                ErrorKind::NotFoundException,
                format!(
                    "No index defined on {} for this lookup: ({})",
                    self.m.types.entities[ent].name,
                    names.join(", ")
                ),
                span,
                self.m.sources,
            ));
        };
        let map: FastMap<&str, Value> = vals.iter().map(|(n, v, _)| (*n, v.clone())).collect();
        let key = self.key_from(idx, &map).expect("all fields present");
        match self.index_get(idx, &key) {
            Some(i) if self.m.types.is_subtype(self.m.instances[i as usize].entity, ent) => Ok(Value::Instance(i)),
            Some(_) => Err(Flow::Wait(Wait::Index(idx, key, span))),
            None => Err(Flow::Wait(Wait::Index(idx, key, span))),
        }
    }

    pub(super) fn construct(
        &mut self,
        class: &'a Ident,
        args: &'a Args,
        span: Span,
        cx: &mut Cx<'_>,
    ) -> EResult<Value> {
        let ent = self.resolve_class(cx.ns, class, cx.infer)?;
        let mut kw: Vec<(Rc<str>, Value, Span)> = Vec::with_capacity(args.keyword.len());
        // multi-valued relations given a relation that is not frozen yet (`provides=self.provides`):
        // as in Inmanta, the instance is made without waiting and they are filled as elements arrive
        let mut gradual: Vec<(u32, (InstId, u32), Span)> = Vec::new();
        // arguments that wait for a value: set once the instance exists (see LateArg)
        let mut late: Vec<crate::eval::LateArg<'a>> = Vec::new();
        // multi-valued relations given a list or comprehension: computed gradually once the
        // instance exists, each element passed on as it is computed (see `gradual`)
        let mut emitted: Vec<(u32, &'a Expr)> = Vec::new();
        for KwArg { name, value } in &args.keyword {
            let (ai, target, multi) = match self.m.types.entities[ent].attr(&name.name) {
                Some((ai, a)) => match &a.kind {
                    AttrKind::Rel { target, hi, .. } => {
                        (ai as u32, Some(*target), (*hi != Some(1)).then_some(ai as u32))
                    }
                    _ => (ai as u32, None, None),
                },
                None => {
                    return Err(error(
                        ErrorKind::TypingException,
                        format!(
                            "Entity {} has no attribute {} (in constructor)",
                            self.m.types.entities[ent].name, name.name
                        ),
                        name.span,
                        self.m.sources,
                    ));
                }
            };
            if kw.iter().any(|(n, _, _)| &**n == name.name.as_str())
                || gradual.iter().any(|(ai, _, _)| self.m.types.entities[ent].attrs[*ai as usize].name == name.name)
                || late.iter().any(|l| self.m.types.entities[ent].attrs[l.attr as usize].name == name.name)
                || emitted.iter().any(|(ai, _)| self.m.types.entities[ent].attrs[*ai as usize].name == name.name)
            {
                return Err(error(
                    ErrorKind::RuntimeException,
                    format!("The attribute {} is set twice in the constructor", name.name),
                    name.span,
                    self.m.sources,
                ));
            }
            self.check_constructor_hint(cx.ns, ent, &name.name, value)?;
            // Inmanta needs only the index attributes to make the instance; the others may wait,
            // unless waiting would repeat side effects (constructors) evaluated before the wait
            let may_wait = !self.in_index(ent, &name.name) && cx.locals.is_empty();
            let (seq, made) = (cx.seq, cx.cache.len());
            let arg = crate::eval::LateArg { attr: ai, value, constructor: span };
            if let Some(ai) = multi {
                if crate::eval::gradual::is_gradual(value, true) {
                    emitted.push((ai, value));
                    continue;
                }
                match self.gradual_source(value, cx) {
                    Ok(Some(src)) => {
                        gradual.push((ai, src, value.span));
                        continue;
                    }
                    Ok(None) => {}
                    Err(Flow::Wait(_)) if may_wait && cx.seq == seq && cx.cache.len() == made => {
                        late.push(arg);
                        continue;
                    }
                    Err(e) => return Err(e),
                }
            }
            let prev = std::mem::replace(&mut cx.infer, target);
            let v = self.eval(value, cx);
            cx.infer = prev;
            match v {
                Ok(v) => kw.push((Rc::from(name.name.as_str()), v, value.span)),
                Err(Flow::Wait(_)) if may_wait && cx.seq == seq && cx.cache.len() == made => late.push(arg),
                Err(e) => return Err(e),
            }
        }
        for sp in &args.spread {
            match self.eval(sp, cx)? {
                Value::Dict(d) => {
                    for (k, v) in d.iter() {
                        if self.m.types.entities[ent].attr(k).is_none() {
                            return Err(error(
                                ErrorKind::NotFoundException,
                                format!("Entity {} has no attribute {k} (in **dict)", self.m.types.entities[ent].name),
                                sp.span,
                                self.m.sources,
                            ));
                        }
                        if kw.iter().any(|(n, _, _)| n == k) {
                            return Err(error(
                                ErrorKind::RuntimeException,
                                format!("The attribute {k} is set twice in the constructor"),
                                sp.span,
                                self.m.sources,
                            ));
                        }
                        kw.push((k.clone(), v.clone(), sp.span));
                    }
                }
                Value::Unknown(_) => {}
                other => {
                    return Err(typing(
                        format!("** in a constructor needs a dict, got {}", self.repr(&other)),
                        sp.span,
                        self,
                    ));
                }
            }
        }
        let seq = cx.seq;
        cx.seq += 1;
        if let Some(v) = cx.cache.get(seq) {
            return Ok(v.clone());
        }
        // existing instance through an index? (most entities have none: no map of the arguments then)
        let has_index = !self.m.types.entities[ent].indexes.is_empty();
        let mut vals: FastMap<&str, Value> = FastMap::default();
        if has_index {
            vals.extend(kw.iter().map(|(n, v, _)| (&**n, v.clone())));
        }
        for a in self.m.types.entities[ent].attrs.iter().filter(|_| has_index) {
            if let AttrKind::Prim { default: Some(d), .. } = &a.kind
                && !vals.contains_key(a.name.as_str())
            {
                vals.insert(a.name.as_str(), d.clone());
            }
        }
        // an index attribute must be given (or defaulted) in the constructor itself
        for &idx in &self.m.types.entities[ent].indexes {
            for f in &self.m.types.indexes[idx].fields {
                if !vals.contains_key(f.as_str())
                    && let Some((_, a)) = self.m.types.entities[ent].attr(f)
                    && matches!(a.kind, AttrKind::Prim { .. })
                {
                    let owner = &self.m.types.entities[self.m.types.indexes[idx].entity].name;
                    return Err(error(
                        ErrorKind::IndexAttributeMissingInConstructorException,
                        format!(
                            "Invalid Constructor call: missing attribute '{f}'. The attribute {owner}.{f} is part of an index."
                        ),
                        span,
                        self.m.sources,
                    ));
                }
            }
        }
        let mut found: Option<(InstId, usize)> = None;
        for &idx in &self.m.types.entities[ent].indexes {
            if let Some(key) = self.key_from(idx, &vals)
                && let Some(other) = self.index_get(idx, &key)
            {
                if let Some((f, fidx)) = found
                    && f != other
                {
                    return Err(error(
                        ErrorKind::IndexCollisionException,
                        format!(
                            "Inconsistent indexes detected: the constructor matches {} through index {} and {} through index {}",
                            self.inst_name(f),
                            self.index_desc(fidx),
                            self.inst_name(other),
                            self.index_desc(idx)
                        ),
                        span,
                        self.m.sources,
                    ));
                }
                found = Some((other, idx));
            }
        }
        drop(vals);
        let inst = if let Some((other, idx)) = found {
            let oe = self.m.instances[other as usize].entity;
            if oe != ent {
                return Err(error(
                    ErrorKind::DuplicateException,
                    format!(
                        "Type {} and {} share the key of index {}: {} already exists",
                        self.m.types.entities[ent].name,
                        self.m.types.entities[oe].name,
                        self.index_desc(idx),
                        self.inst_name(other)
                    ),
                    span,
                    self.m.sources,
                ));
            }
            for (n, v, s) in kw {
                let (ai, _) = self.m.types.entities[ent].attr(&n).expect("checked");
                self.assign_attr(other, ai as u32, v, false, s)?;
            }
            for (ai, src, s) in gradual {
                self.add_gradually(src, other, ai, s);
            }
            for arg in late {
                self.spawn_late_arg(other, arg, cx.scope, cx.ns);
            }
            for (ai, value) in emitted.iter().copied() {
                let sink =
                    crate::eval::gradual::Sink::Rel { inst: other, attr: ai, span: value.span, constructor: true };
                self.emit_now(value, sink, cx.scope, cx.ns, &cx.locals)?;
            }
            other
        } else {
            // the memory bound of a model that recurses without end: instances made by
            // implementations of instances made by implementations of ... (each level is small,
            // the chain is what grows)
            let depth = self.depth_in(cx.scope);
            if depth as u64 > self.limits.max_depth {
                return Err(error(
                    ErrorKind::RuntimeException,
                    format!(
                        "{} is made {depth} implementations deep (each level made by an implementation of the one \
                         before): the model recurses without end, e.g. an implementation that constructs its own \
                         entity. A model this deep can raise the limit of {} with `[compiler] max-depth` or \
                         INMANTA_COMPILER_MAX_DEPTH",
                        self.m.types.entities[ent].name, self.limits.max_depth
                    ),
                    span,
                    self.m.sources,
                ));
            }
            let inst = self.new_instance(ent, span);
            self.m.instances[inst as usize].depth = depth;
            for (n, v, s) in kw.iter() {
                let (ai, _) = self.m.types.entities[ent].attr(n).expect("checked");
                self.assign_attr(inst, ai as u32, v.clone(), false, *s)?;
            }
            let defaults: Vec<(usize, Value, Span)> = self.m.types.entities[ent]
                .attrs
                .iter()
                .enumerate()
                .filter_map(|(i, a)| match &a.kind {
                    AttrKind::Prim { default: Some(d), undef: false, .. }
                        if !kw.iter().any(|(n, _, _)| **n == *a.name) && !late.iter().any(|l| l.attr as usize == i) =>
                    {
                        Some((i, d.clone(), a.span))
                    }
                    _ => None,
                })
                .collect();
            for (ai, v, s) in defaults {
                self.assign_attr(inst, ai as u32, v, false, s)?;
            }
            for (ai, src, s) in gradual {
                self.add_gradually(src, inst, ai, s);
            }
            for arg in late {
                self.spawn_late_arg(inst, arg, cx.scope, cx.ns);
            }
            for (ai, value) in emitted.iter().copied() {
                let sink = crate::eval::gradual::Sink::Rel { inst, attr: ai, span: value.span, constructor: true };
                self.emit_now(value, sink, cx.scope, cx.ns, &cx.locals)?;
            }
            self.select_implementations(inst);
            inst
        };
        let v = Value::Instance(inst);
        cx.cache.push(v.clone());
        Ok(v)
    }

    /// Whether `attr` is part of an index of entity `ent`.
    pub(super) fn in_index(&self, ent: EntId, attr: &str) -> bool {
        self.m.types.entities[ent].indexes.iter().any(|&i| self.m.types.indexes[i].fields.iter().any(|f| f == attr))
    }

    /// Inmanta's type hint for a constructor given directly as a constructor argument (`A(b=B())`,
    /// not for an index attribute): the attribute's type must be an entity that the inner
    /// constructor's entity, as its namespace names it, extends; otherwise a TypingException.
    pub(super) fn check_constructor_hint(&self, ns: NsId, ent: EntId, attr: &str, value: &Expr) -> EResult<()> {
        let ExprKind::Constructor { class: inner, .. } = &value.kind else { return Ok(()) };
        if self.in_index(ent, attr) {
            return Ok(());
        }
        let hint = match self.m.types.entities[ent].attr(attr).map(|(_, a)| &a.kind) {
            Some(AttrKind::Prim { ty, .. }) => self.m.types.type_name(ty),
            Some(AttrKind::Rel { target, .. }) => {
                match crate::eval::build::lookup_entity(&self.m.types, ns, &inner.name) {
                    Ok(e) if !self.m.types.is_subtype(e, *target) => self.m.types.entities[*target].name.clone(),
                    _ => return Ok(()),
                }
            }
            None => return Ok(()),
        };
        Err(error(
            ErrorKind::TypingException,
            format!("Can not assign a value of type {} to a variable of type {hint}", inner.name),
            value.span,
            self.m.sources,
        ))
    }
}
