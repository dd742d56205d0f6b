//! Inmanta's pairing of a model dataclass (an entity extending `std::Dataclass`) with the Python
//! class of the same name in its module's plugins, checked when the model is loaded: the class
//! exists, is a frozen dataclass, and its fields match the entity's attributes one for one (no
//! relations); only then the model-only rules (no index, only `std::none`) are checked.

use super::NoQuestions;
use super::bridge::Bridge;
use super::protocol::{DataclassAttribute, DataclassEntity, DataclassRelation, Outcome, Request, Verdict};
use crate::diagnostics::{Diagnostic, ErrorKind};
use crate::eval::build::dataclass_problems;
use crate::model::{AttrKind, EntId, Type, Types};
use crate::syntax::SourceMap;

/// A primitive type as the bridge compares it with a Python annotation (`None`: a typedef, not
/// compared).
fn type_text(types: &Types<'_>, ty: &Type) -> Option<String> {
    (!ty.has_typedef()).then(|| types.type_name(ty))
}

/// The dataclass entities outside the main file, with what the bridge needs to pair each.
fn dataclass_requests(types: &Types<'_>, sources: &SourceMap) -> Vec<(EntId, DataclassEntity)> {
    let Some(&dc) = types.entity_by_name.get("std::Dataclass") else { return Vec::new() };
    let at = |span| sources.location(span).map(|l| format!("{}:{}:{}", l.file, l.line, l.col)).unwrap_or_default();
    types.entities[dc]
        .descendants
        .iter()
        .filter(|&&id| types.namespaces[types.entities[id].ns].name != "__config__")
        .map(|&id| {
            let e = &types.entities[id];
            let mut attributes = Vec::new();
            let mut relations = Vec::new();
            for a in e.attrs.iter() {
                match &a.kind {
                    AttrKind::Rel { .. } if a.name == "requires" || a.name == "provides" => {}
                    AttrKind::Rel { .. } => {
                        relations.push(DataclassRelation { name: a.name.clone(), location: at(a.span) })
                    }
                    AttrKind::Prim { ty, .. } => {
                        attributes.push(DataclassAttribute { name: a.name.clone(), ty: type_text(types, ty) })
                    }
                }
            }
            let ns = &types.namespaces[e.ns].name;
            let short = e.name.rsplit("::").next().unwrap_or(&e.name);
            let request = DataclassEntity {
                entity: e.name.clone(),
                module: format!("inmanta_plugins.{}", ns.replace("::", ".")),
                name: short.to_string(),
                location: at(e.span),
                attributes,
                relations,
            };
            (id, request)
        })
        .collect()
}

/// The first dataclass Inmanta refuses when it pairs them with their Python classes, as its
/// error at the entity. A dataclass without a Python class of its name is not paired (nor
/// checked), as in Inmanta; without Python code at all, the model-only rules still apply.
pub(crate) fn pair_dataclasses(
    types: &Types<'_>,
    sources: &SourceMap,
    bridge: Option<&mut Bridge>,
) -> Result<(), Box<Diagnostic>> {
    let requests = dataclass_requests(types, sources);
    if requests.is_empty() {
        return Ok(());
    }
    let invalid = |id: EntId, problem: &str| {
        let message = format!("The dataclass {} is not valid: {problem}", types.entities[id].name);
        Err(Box::new(Diagnostic::error(ErrorKind::DataClassException, message, Some(types.entities[id].span), sources)))
    };
    let Some(bridge) = bridge else {
        for (id, _) in &requests {
            if let Some(problem) = dataclass_problems(types, *id, true).first() {
                return invalid(*id, problem);
            }
        }
        return Ok(());
    };
    let (ids, entities): (Vec<EntId>, Vec<DataclassEntity>) = requests.into_iter().unzip();
    let request = Request::Dataclasses { entities };
    let answer = bridge.request::<Vec<Verdict>>(&request, &mut NoQuestions).map_err(|e| {
        Box::new(Diagnostic::plain(
            ErrorKind::ModuleLoadingException,
            format!("pairing the dataclasses with Python: {e}"),
        ))
    })?;
    let verdicts = match answer.outcome {
        Outcome::Ok(verdicts) => verdicts,
        Outcome::Error(e) => return Err(Box::new(Diagnostic::plain(e.kind, e.message))),
        Outcome::Unset(_) => Vec::new(),
    };
    // one verdict per entity, in order, up to the first refused
    for (id, verdict) in ids.into_iter().zip(verdicts) {
        match verdict {
            Verdict::Paired => {
                if let Some(problem) = dataclass_problems(types, id, false).first() {
                    return invalid(id, problem);
                }
            }
            Verdict::Refused { kind, message } => {
                let span = Some(types.entities[id].span);
                return Err(Box::new(Diagnostic::error(kind, message, span, sources)));
            }
            Verdict::Absent => {}
        }
    }
    Ok(())
}
