//! Which variables a statement or an implementation may write: a task that reads a variable
//! waits while a task that may still write it is alive.

use super::*;

/// For each variable name, how many live tasks may still write it, and the cached write sets of
/// statements and implementations.
pub(super) struct PendingWrites {
    pub(super) potential_writes: FastMap<Rc<str>, u32>,
    pub(super) write_cache: FastMap<usize, Rc<[Rc<str>]>>,
    pub(super) impl_writes: Vec<Option<Rc<[Rc<str>]>>>,
}

impl PendingWrites {
    pub(super) fn new(implementations: usize) -> Self {
        PendingWrites {
            potential_writes: FastMap::default(),
            write_cache: FastMap::default(),
            impl_writes: vec![None; implementations],
        }
    }
}

impl<'a> Evaluator<'a> {
    pub(super) fn impl_writes(&mut self, i: usize) -> Rc<[Rc<str>]> {
        if let Some(w) = &self.pending_writes.impl_writes[i] {
            return w.clone();
        }
        // provisional empty entry breaks recursion
        self.pending_writes.impl_writes[i] = Some(Rc::from(Vec::new()));
        let body = self.m.types.implementations[i].body;
        let mut all = Vec::new();
        for s in body {
            all.extend(self.stmt_writes(s).iter().cloned());
        }
        let r: Rc<[Rc<str>]> = Rc::from(all);
        self.pending_writes.impl_writes[i] = Some(r.clone());
        r
    }

    /// Static approximation of the attribute names a statement may add to.
    pub(super) fn stmt_writes(&mut self, s: &'a Stmt) -> Rc<[Rc<str>]> {
        let key = s as *const Stmt as usize;
        if let Some(w) = self.pending_writes.write_cache.get(&key) {
            return w.clone();
        }
        let mut names: Vec<Rc<str>> = Vec::new();
        self.collect_writes(s, &mut names, 0);
        names.sort();
        names.dedup();
        let r: Rc<[Rc<str>]> = Rc::from(names);
        self.pending_writes.write_cache.insert(key, r.clone());
        r
    }

    pub(super) fn collect_writes(&mut self, s: &'a Stmt, out: &mut Vec<Rc<str>>, depth: usize) {
        if depth > 8 {
            return;
        }
        match s {
            Stmt::Assign { target, value, .. } => {
                if let ExprKind::Attr(_, a) = &target.kind {
                    self.add_name_and_reverse(&a.name, out);
                }
                self.expr_writes(value, out, depth);
            }
            Stmt::For { iter, body, .. } => {
                self.expr_writes(iter, out, depth);
                for b in body {
                    self.collect_writes(b, out, depth + 1);
                }
            }
            Stmt::If { branches, otherwise, .. } => {
                for (_, b) in branches {
                    for s in b {
                        self.collect_writes(s, out, depth + 1);
                    }
                }
                for s in otherwise {
                    self.collect_writes(s, out, depth + 1);
                }
            }
            Stmt::Expr(e) => self.expr_writes(e, out, depth),
        }
    }

    pub(super) fn add_name_and_reverse(&self, name: &str, out: &mut Vec<Rc<str>>) {
        out.push(Rc::from(name));
        for e in &self.m.types.entities {
            for a in &e.own {
                if a.name == name
                    && let AttrKind::Rel { reverse: Some(r), .. } = &a.kind
                {
                    out.push(Rc::from(r.as_str()));
                }
            }
        }
    }

    pub(super) fn expr_writes(&mut self, e: &'a ast::Expr, out: &mut Vec<Rc<str>>, depth: usize) {
        match &e.kind {
            ExprKind::Constructor { class, args } => {
                for k in &args.keyword {
                    self.add_name_and_reverse(&k.name.name, out);
                    self.expr_writes(&k.value, out, depth);
                }
                // implementations of the constructed entity
                let short = class.name.rsplit("::").next().unwrap_or("");
                let ents: Vec<EntId> = self
                    .types
                    .entities
                    .iter()
                    .enumerate()
                    .filter(|(_, en)| en.name.rsplit("::").next() == Some(short))
                    .map(|(i, _)| i)
                    .collect();
                if depth < 4 {
                    for en in ents {
                        let impls: Vec<usize> =
                            self.m.types.entities[en].implements.iter().flat_map(|i| i.impls.clone()).collect();
                        for i in impls {
                            out.extend(self.impl_writes(i).iter().cloned());
                        }
                    }
                }
            }
            ExprKind::List(items) => items.iter().for_each(|i| self.expr_writes(i, out, depth)),
            ExprKind::Call { args, .. } => {
                args.positional.iter().for_each(|i| self.expr_writes(i, out, depth));
                args.keyword.iter().for_each(|k| self.expr_writes(&k.value, out, depth));
            }
            ExprKind::Cond(_, a, b) => {
                self.expr_writes(a, out, depth);
                self.expr_writes(b, out, depth);
            }
            ExprKind::Comprehension { value, .. } => self.expr_writes(value, out, depth),
            _ => {}
        }
    }
}
