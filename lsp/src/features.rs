//! Go to definition, find references, hover, document and workspace symbols, rename.

use std::collections::HashMap;

use compiler::syntax::outline::{Definition, DefinitionKind, Reference, ReferenceKind};
use lsp_types::{
    DocumentSymbol, Hover, HoverContents, Location, MarkupContent, MarkupKind, Position, Range, SymbolInformation,
    SymbolKind, TextEdit, Url, WorkspaceEdit,
};

use crate::plugins;
use crate::project::{At, Loc, Project, Target};

pub(crate) fn url(path: &std::path::Path) -> Option<Url> {
    Url::from_file_path(path).ok()
}

fn location(p: &Project, file: usize, range: (usize, usize)) -> Option<Location> {
    let f = &p.files[file];
    Some(Location { uri: url(&f.path)?, range: f.lines.range(&f.text, range) })
}

/// The range of the last `::` segment of a name written at `range` (what a rename rewrites).
fn last_segment((start, end): (usize, usize), text: &str) -> (usize, usize) {
    let written = text.get(start..end).unwrap_or("");
    match written.rfind("::") {
        Some(i) => (start + i + 2, end),
        None => (start, end),
    }
}

pub(crate) fn definition(p: &Project, file: usize, offset: usize) -> Option<Location> {
    match p.target_at(file, offset)? {
        Target::Def(loc) => location(p, loc.file, p.def(loc).name_range),
        Target::Plugin(name) => {
            let found = plugins::find(p, &name)?;
            let pos = Position { line: found.line as u32, character: 0 };
            Some(Location { uri: url(&found.file)?, range: Range { start: pos, end: pos } })
        }
        Target::Namespace(ns) => {
            let f = p.ns_file(&ns)?;
            location(p, f, (0, 0))
        }
    }
}

/// Every reference to what is at `offset`, across the project's files; with the declaration
/// when `declaration`.
pub(crate) fn references(p: &Project, file: usize, offset: usize, declaration: bool) -> Vec<Location> {
    let Some(target) = p.target_at(file, offset) else { return Vec::new() };
    let mut out: Vec<Location> = Vec::new();
    if declaration && let Target::Def(loc) = &target {
        out.extend(location(p, loc.file, p.def(*loc).name_range));
    }
    for (f, r) in uses(p, &target) {
        out.extend(location(p, f, r.range));
    }
    out
}

/// The references that stand for `target`.
fn uses<'p>(p: &'p Project, target: &Target) -> Vec<(usize, &'p Reference)> {
    let wanted: &[ReferenceKind] = match target {
        Target::Def(loc) => match p.def(*loc).kind {
            DefinitionKind::Entity | DefinitionKind::Typedef => &[ReferenceKind::Type, ReferenceKind::Variable],
            DefinitionKind::Implementation => &[ReferenceKind::Implementation],
            DefinitionKind::Variable => &[ReferenceKind::Variable],
            DefinitionKind::Attribute | DefinitionKind::Relation => &[ReferenceKind::Attribute],
            DefinitionKind::Import | DefinitionKind::Index => &[],
        },
        Target::Plugin(_) => &[ReferenceKind::Call],
        Target::Namespace(_) => &[ReferenceKind::Module],
    };
    let mut out = Vec::new();
    for (f, source) in p.files.iter().enumerate() {
        for r in source.outline.references.iter().filter(|r| wanted.contains(&r.kind)) {
            // `self` stands for an entity, but renaming the entity does not rename `self`
            if r.name == "self" {
                continue;
            }
            if p.resolve(f, r).as_ref() == Some(target) {
                out.push((f, r));
            }
        }
    }
    out
}

pub(crate) fn rename(p: &Project, file: usize, offset: usize, new_name: &str) -> Result<WorkspaceEdit, String> {
    let Some(Target::Def(loc)) = p.target_at(file, offset) else {
        return Err(
            "only a variable, entity, attribute, relation, implementation or typedef can be renamed here".into()
        );
    };
    let d = p.def(loc);
    if matches!(d.kind, DefinitionKind::Import | DefinitionKind::Index) {
        return Err(format!("a {:?} can not be renamed", d.kind).to_lowercase());
    }
    if !p.files[loc.file].path.starts_with(&p.root) {
        return Err(format!("{} is not in the project", d.name));
    }
    let valid = new_name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && new_name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    let capital = new_name.starts_with(|c: char| c.is_ascii_uppercase());
    let wants_capital = matches!(d.kind, DefinitionKind::Entity);
    if !valid || (capital != wants_capital && d.kind != DefinitionKind::Typedef) {
        let what = if wants_capital { "start with a capital" } else { "start with a lower-case letter" };
        return Err(format!("{new_name:?} is not a valid name here: it must be an identifier and {what}"));
    }
    let mut changes: HashMap<Url, Vec<TextEdit>> = HashMap::new();
    let mut edit = |f: usize, range: (usize, usize)| {
        let source = &p.files[f];
        if let Some(u) = url(&source.path) {
            let range = source.lines.range(&source.text, last_segment(range, &source.text));
            changes.entry(u).or_default().push(TextEdit { range, new_text: new_name.to_string() });
        }
    };
    edit(loc.file, d.name_range);
    for (f, r) in uses(p, &Target::Def(loc)) {
        edit(f, r.range);
    }
    for edits in changes.values_mut() {
        edits.sort_by_key(|e| (e.range.start.line, e.range.start.character));
        edits.dedup_by_key(|e| e.range);
    }
    Ok(WorkspaceEdit { changes: Some(changes), ..WorkspaceEdit::default() })
}

fn markdown(value: String) -> Hover {
    Hover { contents: HoverContents::Markup(MarkupContent { kind: MarkupKind::Markdown, value }), range: None }
}

pub(crate) fn hover(p: &Project, file: usize, offset: usize) -> Option<Hover> {
    if let At::Reference(r) = p.at(file, offset)?
        && r.kind == ReferenceKind::Call
    {
        let name = p.plugin_name(file, &r.name);
        return Some(markdown(match plugins::find(p, &name) {
            Some(found) => {
                format!("```python\n{}\n```\nplugin `{name}`\n\n{}", found.signature, found.doc.unwrap_or_default())
            }
            None => format!("plugin `{name}`"),
        }));
    }
    match p.target_at(file, offset)? {
        Target::Def(loc) => Some(markdown(describe(p, loc))),
        Target::Plugin(_) => None,
        Target::Namespace(ns) => {
            let doc = p.ns_file(&ns).and_then(|f| p.files[f].outline.doc.clone()).unwrap_or_default();
            Some(markdown(format!("module `{ns}`\n\n{doc}")))
        }
    }
}

/// A hover's text for a definition: an entity's declaration, doc string and attributes.
fn describe(p: &Project, loc: Loc) -> String {
    let d = p.def(loc);
    let ns = &p.files[loc.file].ns;
    let mut out = format!("```inmanta\n{}\n```\n", d.detail);
    match d.kind {
        DefinitionKind::Entity => {
            out.push_str(&format!("`{ns}::{}`\n\n", d.name));
            if let Some(doc) = &d.doc {
                out.push_str(doc.trim());
                out.push_str("\n\n");
            }
            let members = p.members(loc);
            if !members.is_empty() {
                out.push_str("```inmanta\n");
                for m in members {
                    let md = p.def(m);
                    let line = match md.kind {
                        DefinitionKind::Relation => relation_line(md),
                        _ => md.detail.clone(),
                    };
                    out.push_str(&line);
                    out.push('\n');
                }
                out.push_str("```\n");
            }
        }
        DefinitionKind::Attribute | DefinitionKind::Relation => {
            out.push_str(&format!("in entity `{}`\n", d.owner.as_deref().unwrap_or("?")));
        }
        _ => out.push_str(&format!("in `{ns}`\n")),
    }
    out
}

fn relation_line(d: &Definition) -> String {
    // detail: `Other Owner.name [m:n]`
    let mut parts = d.detail.splitn(2, ' ');
    let other = parts.next().unwrap_or("");
    let multi = d.detail.rsplit(' ').next().unwrap_or("");
    format!("{other}{multi} {}", d.name)
}

fn symbol_kind(k: DefinitionKind) -> SymbolKind {
    match k {
        DefinitionKind::Entity => SymbolKind::CLASS,
        DefinitionKind::Attribute => SymbolKind::FIELD,
        DefinitionKind::Relation => SymbolKind::PROPERTY,
        DefinitionKind::Implementation => SymbolKind::FUNCTION,
        DefinitionKind::Typedef => SymbolKind::TYPE_PARAMETER,
        DefinitionKind::Variable => SymbolKind::VARIABLE,
        DefinitionKind::Import => SymbolKind::MODULE,
        DefinitionKind::Index => SymbolKind::KEY,
    }
}

/// The file's outline as a tree: entities hold their attributes and relation ends.
#[allow(deprecated)] // `DocumentSymbol::deprecated` must be given
pub(crate) fn document_symbols(p: &Project, file: usize) -> Vec<DocumentSymbol> {
    let f = &p.files[file];
    let sym = |d: &Definition| DocumentSymbol {
        name: d.name.clone(),
        detail: Some(d.detail.clone()),
        kind: symbol_kind(d.kind),
        tags: None,
        deprecated: None,
        range: f.lines.range(&f.text, (d.range.0.min(d.name_range.0), d.range.1.max(d.name_range.1))),
        selection_range: f.lines.range(&f.text, d.name_range),
        children: None,
    };
    let mut out: Vec<DocumentSymbol> = Vec::new();
    let top =
        f.outline.definitions.iter().filter(|d| d.scope == 0 && d.owner.is_none() || d.kind == DefinitionKind::Index);
    for d in top {
        let mut s = sym(d);
        if d.kind == DefinitionKind::Entity {
            let children: Vec<DocumentSymbol> = f
                .outline
                .definitions
                .iter()
                .filter(|m| m.kind == DefinitionKind::Attribute && m.owner.as_deref() == Some(&d.name))
                .map(sym)
                .collect();
            s.children = Some(children);
        }
        out.push(s);
    }
    out.extend(f.outline.definitions.iter().filter(|d| d.kind == DefinitionKind::Relation).map(sym));
    out.sort_by_key(|s| (s.range.start.line, s.range.start.character));
    out
}

/// The project's entities, typedefs, implementations, relation ends and top-level variables
/// whose name contains `query` (case-insensitive).
#[allow(deprecated)] // `SymbolInformation::deprecated` must be given
pub(crate) fn workspace_symbols(p: &Project, query: &str) -> Vec<SymbolInformation> {
    let query = query.to_lowercase();
    let mut out = Vec::new();
    for (loc, d) in p.definitions() {
        let wanted = match d.kind {
            DefinitionKind::Entity | DefinitionKind::Typedef | DefinitionKind::Implementation => true,
            DefinitionKind::Relation | DefinitionKind::Attribute => true,
            DefinitionKind::Variable => d.scope == 0,
            DefinitionKind::Import | DefinitionKind::Index => false,
        };
        if !wanted || !d.name.to_lowercase().contains(&query) {
            continue;
        }
        let Some(location) = location(p, loc.file, d.name_range) else { continue };
        let ns = &p.files[loc.file].ns;
        out.push(SymbolInformation {
            name: d.name.clone(),
            kind: symbol_kind(d.kind),
            tags: None,
            deprecated: None,
            location,
            container_name: Some(match &d.owner {
                Some(o) => format!("{ns}::{o}"),
                None => ns.clone(),
            }),
        });
        if out.len() >= 500 {
            break;
        }
    }
    out
}
