//! Freezing relations when nothing else can run, in the order of the precedence policy.

use super::*;
use crate::diagnostics::ErrorKind;

impl<'a> Evaluator<'a> {
    pub(crate) fn freeze(&mut self, inst: InstId, ai: u32) {
        let Some(woken) = self.m.freeze_slot(inst, ai) else { return };
        self.wake(woken);
        if let Some(ls) = self.queue.listeners.get(&(inst, ai)) {
            for l in ls {
                for name in l.writes().iter() {
                    if let Some(c) = self.pending_writes.potential_writes.get_mut(name) {
                        *c = c.saturating_sub(1);
                    }
                }
            }
        }
    }

    /// When nothing is ready: freeze relations that tasks wait on. Returns false when stuck.
    pub(super) fn freeze_step(&mut self) -> bool {
        let cands = std::mem::take(&mut self.queue.freeze_candidates);
        let mut safe = Vec::new();
        let mut risky = Vec::new();
        for (i, a) in cands {
            let inst = &self.m.instances[i as usize];
            let Slot::Rel(r) = &inst.slots[a as usize] else { continue };
            if r.frozen || (r.waiters.is_empty() && !self.queue.listeners.contains_key(&(i, a))) {
                continue;
            }
            let attr = &self.m.types.entities[inst.entity].attrs[a as usize];
            let AttrKind::Rel { lo, hi, reverse, .. } = &attr.kind else { continue };
            // a required single relation that is still empty can only be completed by an assignment
            if *hi == Some(1) && *lo == 1 {
                risky.push((i, a, true));
                continue;
            }
            let pending = |n: &str| self.pending_writes.potential_writes.get(n).copied().unwrap_or(0) > 0;
            let blocked = pending(&attr.name) || reverse.as_deref().is_some_and(pending);
            if blocked { risky.push((i, a, false)) } else { safe.push((i, a)) }
        }
        if !self.precedence.is_empty() {
            // `A.x before B.y`: while an A.x relation waits to be frozen, hold B.y back
            let all: Vec<(InstId, u32)> = safe.iter().copied().chain(risky.iter().map(|(i, a, _)| (*i, *a))).collect();
            let held: HashSet<(InstId, u32)> = all
                .iter()
                .copied()
                .filter(|c| {
                    self.precedence.iter().any(|(e1, n1, e2, n2)| {
                        self.rel_matches(*c, *e2, n2) && all.iter().any(|o| o != c && self.rel_matches(*o, *e1, n1))
                    })
                })
                .collect();
            if held.len() < all.len() {
                let mut deferred = Vec::new();
                safe.retain(|c| {
                    if held.contains(c) {
                        deferred.push(*c);
                        false
                    } else {
                        true
                    }
                });
                risky.retain(|(i, a, _)| {
                    if held.contains(&(*i, *a)) {
                        deferred.push((*i, *a));
                        false
                    } else {
                        true
                    }
                });
                self.queue.freeze_candidates.extend(deferred);
            }
        }
        if !safe.is_empty() {
            for (i, a) in safe {
                self.freeze(i, a);
            }
            for (i, a, _) in risky {
                if let Slot::Rel(r) = &mut self.m.instances[i as usize].slots[a as usize] {
                    r.candidate = true;
                }
                self.queue.freeze_candidates.push((i, a));
            }
            return true;
        }
        // Nothing is safe: freeze the optional/multi relation with the most waiters.
        // Prefer a relation that nothing else waits behind: one whose waiting statements (directly
        // or through what they would write) do not lead to a writer of another candidate.
        let downstream_of_other = self.downstream_of_other(&risky);
        let upstream_exists = risky.iter().enumerate().any(|(n, (_, _, req))| !req && !downstream_of_other[n]);
        let best = risky
            .iter()
            .enumerate()
            .filter(|(n, (_, _, req))| !req && (!upstream_exists || !downstream_of_other[*n]))
            .max_by_key(|(n, (i, a, _))| {
                let Slot::Rel(r) = &self.m.instances[*i as usize].slots[*a as usize] else { return (0, 0) };
                (r.waiters.len(), usize::MAX - n)
            })
            .map(|(n, _)| n);
        let Some(b) = best else {
            for (i, a, _) in risky {
                self.queue.freeze_candidates.push((i, a));
            }
            return false;
        };
        for (n, (i, a, _)) in risky.into_iter().enumerate() {
            if n == b {
                self.freeze(i, a);
            } else {
                self.queue.freeze_candidates.push((i, a));
            }
        }
        true
    }

    /// For each candidate relation: whether freezing another candidate could let a statement
    /// run that still adds to it (that statement waits, directly or through the attributes the
    /// waiting statements would write, on the other candidate). Those are frozen last.
    pub(super) fn downstream_of_other(&self, candidates: &[(InstId, u32, bool)]) -> Vec<bool> {
        let name_of = |i: InstId, a: u32| -> &str {
            self.m.types.entities[self.m.instances[i as usize].entity].attrs[a as usize].name.as_str()
        };
        let mut waiting_on: HashMap<&str, Vec<TaskId>> = HashMap::new();
        let mut waiting_exact: HashMap<(InstId, u32), Vec<TaskId>> = HashMap::new();
        for (t, w) in &self.queue.parked {
            if let Wait::Rel(i, a) | Wait::Prim(i, a) = w {
                waiting_on.entry(name_of(*i, *a)).or_default().push(*t);
                waiting_exact.entry((*i, *a)).or_default().push(*t);
            }
        }
        // the attribute names each candidate's freezing may lead to writing
        let reach: Vec<HashSet<&str>> = candidates
            .iter()
            .map(|(i, a, _)| {
                let mut names: HashSet<&str> = HashSet::new();
                let mut queue: Vec<TaskId> = waiting_exact.get(&(*i, *a)).cloned().unwrap_or_default();
                let mut seen: HashSet<TaskId> = HashSet::new();
                while let Some(t) = queue.pop() {
                    if !seen.insert(t) || seen.len() > 10_000 {
                        continue;
                    }
                    for w in self.queue.tasks[t as usize].writes.iter() {
                        if names.insert(w) {
                            queue.extend(waiting_on.get(&**w).into_iter().flatten().copied());
                        }
                    }
                }
                names
            })
            .collect();
        candidates
            .iter()
            .enumerate()
            .map(|(d, (i, a, _))| {
                let name = name_of(*i, *a);
                (0..candidates.len()).any(|c| {
                    let (ci, ca, _) = candidates[c];
                    c != d && reach[c].contains(name) && !reach[d].contains(name_of(ci, ca))
                })
            })
            .collect()
    }

    pub(super) fn rel_matches(&self, (i, a): (InstId, u32), ent: EntId, name: &str) -> bool {
        let inst = &self.m.instances[i as usize];
        self.m.types.is_subtype(inst.entity, ent) && self.m.types.entities[inst.entity].attrs[a as usize].name == name
    }

    /// Reads `relation_precedence_policy` rules (`A.x before B.y`) and checks them for cycles.
    pub(crate) fn set_precedence(&mut self, rules: &[String]) -> Result<(), Vec<Diagnostic>> {
        let mut errors = Vec::new();
        if rules.is_empty() {
            // building the regex alone is half the instructions of a 10-resource compile
            return Ok(());
        }
        let re = regex::Regex::new(r"^\s*([\w:]+)\.(\w+)\s+before\s+([\w:]+)\.(\w+)\s*$").expect("valid regex");
        let config = self.m.types.ns_by_name.get("__config__").copied().unwrap_or(0);
        for rule in rules {
            let Some(c) = re.captures(rule) else {
                errors.push(Diagnostic::plain(
                    ErrorKind::InvalidRelationPrecedenceRuleError,
                    format!("Invalid rule in relation_precedence_policy: '{rule}': expected '<entity>.<relation> before <entity>.<relation>'"),
                ));
                continue;
            };
            let side = |e: &str, n: &str| -> Option<EntId> {
                let id = build::lookup_entity(&self.m.types, config, e).ok()?;
                match self.m.types.entities[id].attr(n) {
                    Some((_, a)) if a.is_relation() => Some(id),
                    _ => None,
                }
            };
            match (side(&c[1], &c[2]), side(&c[3], &c[4])) {
                (Some(a), Some(b)) => self.precedence.push((a, c[2].to_string(), b, c[4].to_string())),
                _ => errors.push(Diagnostic::plain(
                    ErrorKind::InvalidRelationPrecedenceRuleError,
                    format!(
                        "Invalid rule in relation_precedence_policy: '{rule}': the entity or relation does not exist"
                    ),
                )),
            }
        }
        // cycle check over (entity, relation) nodes
        let nodes: Vec<(EntId, &str)> = self
            .precedence
            .iter()
            .flat_map(|(a, x, b, y)| [(*a, x.as_str()), (*b, y.as_str())])
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let idx = |n: (EntId, &str)| nodes.iter().position(|m| *m == n).unwrap_or(0);
        let mut indeg = vec![0usize; nodes.len()];
        let edges: Vec<(usize, usize)> =
            self.precedence.iter().map(|(a, x, b, y)| (idx((*a, x.as_str())), idx((*b, y.as_str())))).collect();
        for (_, t) in &edges {
            indeg[*t] += 1;
        }
        let mut queue: Vec<usize> = (0..nodes.len()).filter(|n| indeg[*n] == 0).collect();
        let mut seen = 0;
        while let Some(n) = queue.pop() {
            seen += 1;
            for (f, t) in &edges {
                if *f == n {
                    indeg[*t] -= 1;
                    if indeg[*t] == 0 {
                        queue.push(*t);
                    }
                }
            }
        }
        if seen < nodes.len() {
            errors.push(Diagnostic::plain(
                ErrorKind::CycleInRelationPrecedencePolicyError,
                format!("The relation_precedence_policy contains a cycle: {}", rules.join("; ")),
            ));
        }
        if errors.is_empty() { Ok(()) } else { Err(errors) }
    }
}
