//! Requires between exported resources: the fs module's dependency handler and the cycle check.

use super::*;
use crate::diagnostics::ErrorKind;

/// The requires the fs module's dependency handler adds: a file, JSON file, directory or symlink
/// (both its ends) requires every managed directory above it on the same agent (never `/`). A
/// purged directory may only hold purged resources, and then it requires them instead. The
/// requires are positions in `order`.
pub(super) fn fs_requires(
    ev: &View<'_, '_>,
    order: &[Named<'_>],
    errors: &mut Vec<Diagnostic>,
) -> FastMap<InstId, Vec<usize>> {
    let purged = |i: InstId| matches!(slot_value(ev, i, "purged"), Some(Value::Bool(true)));
    let mut dirs: HashMap<(String, String), (InstId, usize)> = HashMap::new();
    let mut paths: Vec<(InstId, usize, String, String)> = Vec::new();
    for (n, Named { inst: i, mapping: m, .. }) in order.iter().enumerate() {
        let fields: &[&str] = match m.entity.as_str() {
            "fs::File" | "fs::Directory" | "fs::JsonFile" => &["path"],
            "fs::Symlink" => &["src", "dst"],
            _ => continue,
        };
        let Some(agent) = path_value(ev, *i, &m.agent).map(|a| id_string(&a)) else { continue };
        for f in fields {
            if let Some(Value::Str(p)) = path_value(ev, *i, f) {
                let p = p.trim_end_matches('/').to_string();
                if m.entity == "fs::Directory" {
                    dirs.insert((agent.clone(), p.clone()), (*i, n));
                }
                paths.push((*i, n, agent.clone(), p));
            }
        }
    }
    let mut out: FastMap<InstId, Vec<usize>> = FastMap::default();
    for (i, rid, agent, path) in paths {
        let mut p = path.as_str();
        while let Some(pos) = p.rfind('/') {
            p = &p[..pos];
            if pos == 0 {
                break;
            }
            let Some(&(d, did)) = dirs.get(&(agent.clone(), p.to_string())) else { continue };
            if !purged(d) {
                out.entry(i).or_default().push(did);
            } else if purged(i) {
                out.entry(d).or_default().push(rid);
            } else {
                errors.push(Diagnostic::error(
                    ErrorKind::RuntimeError,
                    format!(
                        "Directory {} is purged but a resource is trying to deploy something in it: {}",
                        order[did].text, order[rid].text
                    ),
                    Some(ev.m.instances[i as usize].span),
                    ev.m.sources,
                ));
            }
        }
    }
    out
}

pub(super) fn requires_of(ev: &View<'_, '_>, i: InstId) -> Vec<InstId> {
    match slot_value(ev, i, "requires") {
        Some(Value::List(l)) => {
            l.iter().filter_map(|v| if let Value::Instance(x) = v { Some(*x) } else { None }).collect()
        }
        _ => vec![],
    }
}

/// Checks the requires graph for cycles; returns a cycle when there is one. The search starts
/// from the resources in the order of `resources`, which the export sorts by id text.
pub(crate) fn find_cycle(resources: &[ExportedResource]) -> Option<Vec<String>> {
    let index: HashMap<&api::ResourceId, usize> = resources.iter().enumerate().map(|(n, r)| (&r.id, n)).collect();
    // requires of a resource that is not exported (none, after the export's checks) are left out
    let graph: Vec<Vec<usize>> =
        resources.iter().map(|r| r.requires.iter().filter_map(|q| index.get(q).copied()).collect()).collect();
    // 0: not seen, 1: on the stack, 2: done
    let mut state: Vec<u8> = vec![0; graph.len()];
    for start in 0..graph.len() {
        if state[start] != 0 {
            continue;
        }
        // iterative DFS
        let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
        state[start] = 1;
        while let Some((node, idx)) = stack.pop() {
            match graph[node].get(idx).copied() {
                Some(n) => {
                    stack.push((node, idx + 1));
                    match state[n] {
                        1 => {
                            let from = stack.iter().position(|(x, _)| *x == n).unwrap_or(0);
                            let mut cycle: Vec<String> =
                                stack[from..].iter().map(|(x, _)| resources[*x].id.to_string()).collect();
                            cycle.push(resources[n].id.to_string());
                            return Some(cycle);
                        }
                        0 => {
                            state[n] = 1;
                            stack.push((n, 0));
                        }
                        _ => {}
                    }
                }
                None => state[node] = 2,
            }
        }
    }
    None
}

/// A resource instance with its id, as text and as parts.
pub(super) struct Named<'m> {
    pub(super) inst: InstId,
    pub(super) mapping: &'m Mapping,
    pub(super) text: String,
    pub(super) id: api::ResourceId,
}
