//! Completion: a module's members after `::`, an entity's attributes and relations after `.`
//! and inside its constructor, keywords and names in scope elsewhere. The context is read from
//! the text before the cursor, which is what an editor has while a line is half typed.

use compiler::syntax::outline::DefinitionKind;
use lsp_types::{CompletionItem, CompletionItemKind, InsertTextFormat};

use crate::plugins;
use crate::project::{Loc, Project};

const KEYWORDS: &[&str] = &[
    "entity",
    "extends",
    "end",
    "implementation",
    "implement",
    "using",
    "when",
    "for",
    "in",
    "if",
    "elif",
    "else",
    "import",
    "as",
    "typedef",
    "matching",
    "index",
    "and",
    "or",
    "not",
    "is",
    "defined",
    "true",
    "false",
    "null",
    "undef",
    "parents",
    "dict",
];

const PRIMITIVES: &[&str] = &["string", "int", "float", "number", "bool", "list", "dict", "any"];

fn item(label: &str, kind: CompletionItemKind, detail: Option<String>) -> CompletionItem {
    CompletionItem { label: label.to_string(), kind: Some(kind), detail, ..CompletionItem::default() }
}

fn def_kind(k: DefinitionKind) -> CompletionItemKind {
    match k {
        DefinitionKind::Entity => CompletionItemKind::CLASS,
        DefinitionKind::Attribute => CompletionItemKind::FIELD,
        DefinitionKind::Relation => CompletionItemKind::PROPERTY,
        DefinitionKind::Implementation => CompletionItemKind::FUNCTION,
        DefinitionKind::Typedef => CompletionItemKind::TYPE_PARAMETER,
        DefinitionKind::Variable => CompletionItemKind::VARIABLE,
        DefinitionKind::Import => CompletionItemKind::MODULE,
        DefinitionKind::Index => CompletionItemKind::KEYWORD,
    }
}

/// The items for the cursor at byte `offset` of `file`.
pub(crate) fn complete(p: &Project, file: usize, offset: usize) -> Vec<CompletionItem> {
    let text = &p.files[file].text;
    let before = &text[..offset.min(text.len())];
    let line = &before[before.rfind('\n').map(|n| n + 1).unwrap_or(0)..];
    // the word being typed, and what stands before it
    let word_start = line.rfind(|c: char| !(c.is_alphanumeric() || c == '_')).map(|i| i + 1).unwrap_or(0);
    let head = &line[..word_start];
    if let Some(prefix) = head.strip_suffix("::") {
        let start = prefix.rfind(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).map(|i| i + 1).unwrap_or(0);
        return module_members(p, file, &prefix[start..]);
    }
    if let Some(path) = head.strip_suffix('.') {
        let start = path.rfind(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.')).map(|i| i + 1).unwrap_or(0);
        let segs: Vec<String> = path[start..].split('.').map(str::to_string).collect();
        return attributes_after_dot(p, file, offset, &segs);
    }
    if let Some(class) = open_constructor(before) {
        let mut items = constructor_attributes(p, file, &class);
        items.extend(in_scope(p, file, offset));
        return items;
    }
    let mut items: Vec<CompletionItem> = KEYWORDS.iter().map(|k| item(k, CompletionItemKind::KEYWORD, None)).collect();
    items.extend(PRIMITIVES.iter().map(|t| item(t, CompletionItemKind::TYPE_PARAMETER, Some("primitive type".into()))));
    items.extend(in_scope(p, file, offset));
    items
}

/// Members of the namespace `prefix` names in `file`: its types, implementations, top-level
/// variables, plugins and sub-namespaces.
fn module_members(p: &Project, file: usize, prefix: &str) -> Vec<CompletionItem> {
    let ns = p.namespace(file, prefix);
    let mut items = Vec::new();
    if let Some(f) = p.ns_file(&ns) {
        for d in p.files[f].outline.definitions.iter().filter(|d| d.scope == 0 && d.owner.is_none()) {
            if matches!(d.kind, DefinitionKind::Import | DefinitionKind::Index) {
                continue;
            }
            let mut it = item(&d.name, def_kind(d.kind), Some(d.detail.clone()));
            it.documentation = d.doc.clone().map(lsp_types::Documentation::String);
            items.push(it);
        }
    }
    let module = ns.split("::").next().unwrap_or(&ns);
    if module == ns {
        for plugin in plugins::of_module(p, module) {
            let short = plugin.name.rsplit("::").next().unwrap_or(&plugin.name).to_string();
            let mut it = item(&short, CompletionItemKind::FUNCTION, Some(plugin.signature.clone()));
            it.documentation = plugin.doc.map(lsp_types::Documentation::String);
            items.push(it);
        }
    }
    let sub = format!("{ns}::");
    for f in p.files.iter().filter(|f| f.ns.starts_with(&sub)) {
        let rest = &f.ns[sub.len()..];
        if !rest.contains("::") {
            items.push(item(rest, CompletionItemKind::MODULE, Some(f.ns.clone())));
        }
    }
    items
}

fn member_items(p: &Project, entity: Loc, eq: bool) -> Vec<CompletionItem> {
    p.members(entity)
        .into_iter()
        .map(|m| {
            let d = p.def(m);
            let mut it = item(&d.name, def_kind(d.kind), Some(d.detail.clone()));
            if eq {
                it.insert_text = Some(format!("{}=", d.name));
                it.insert_text_format = Some(InsertTextFormat::PLAIN_TEXT);
            }
            it
        })
        .collect()
}

fn attributes_after_dot(p: &Project, file: usize, offset: usize, path: &[String]) -> Vec<CompletionItem> {
    let scope = scope_at(p, file, offset);
    match p.path_entity(file, scope, path) {
        Some(entity) => member_items(p, entity, false),
        None => Vec::new(),
    }
}

fn constructor_attributes(p: &Project, file: usize, class: &str) -> Vec<CompletionItem> {
    match p.resolve_type(file, class) {
        Some(entity) if p.def(entity).kind == DefinitionKind::Entity => member_items(p, entity, true),
        _ => Vec::new(),
    }
}

/// The class of the constructor call the cursor is in (an open `Class(` before it), if any.
fn open_constructor(before: &str) -> Option<String> {
    let mut depth = 0i32;
    let mut in_string = false;
    // from the start of the statement: the last line that starts at the first column
    let from = before
        .match_indices('\n')
        .map(|(i, _)| i + 1)
        .rfind(|i| before[*i..].starts_with(|c: char| !c.is_whitespace()))
        .unwrap_or(0);
    let tail = &before[from..];
    for (i, c) in tail.char_indices().rev() {
        match c {
            '"' => in_string = !in_string,
            _ if in_string => {}
            ')' | ']' | '}' => depth += 1,
            '[' | '{' => depth -= 1,
            '(' if depth > 0 => depth -= 1,
            '(' => {
                let name_end = tail[..i].trim_end().len();
                let head = &tail[..name_end];
                let start =
                    head.rfind(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).map(|k| k + 1).unwrap_or(0);
                let name = &head[start..];
                let last = name.rsplit("::").next().unwrap_or(name);
                return last.starts_with(|c: char| c.is_ascii_uppercase()).then(|| name.to_string());
            }
            _ => {}
        }
        if depth < 0 {
            return None;
        }
    }
    None
}

/// The innermost scope of `file` around `offset`.
fn scope_at(p: &Project, file: usize, offset: usize) -> usize {
    let scopes = &p.files[file].outline.scopes;
    let mut best = 0;
    for (i, s) in scopes.iter().enumerate() {
        if s.range.0 <= offset
            && offset <= s.range.1
            && (s.range.1 - s.range.0) <= (scopes[best].range.1 - scopes[best].range.0)
        {
            best = i;
        }
    }
    best
}

/// Variables visible at `offset`, the namespace's types and implementations, `std`'s types and
/// the imported modules.
fn in_scope(p: &Project, file: usize, offset: usize) -> Vec<CompletionItem> {
    let outline = &p.files[file].outline;
    let mut chain = vec![];
    let mut at = Some(scope_at(p, file, offset));
    while let Some(s) = at {
        chain.push(s);
        at = outline.scopes.get(s).and_then(|sc| sc.parent);
    }
    let mut items = Vec::new();
    for d in &outline.definitions {
        let visible = match d.kind {
            DefinitionKind::Variable => chain.contains(&d.scope),
            DefinitionKind::Entity
            | DefinitionKind::Typedef
            | DefinitionKind::Implementation
            | DefinitionKind::Import => true,
            _ => false,
        };
        if visible {
            items.push(item(&d.name, def_kind(d.kind), Some(d.detail.clone())));
        }
    }
    if chain.iter().any(|s| outline.scopes.get(*s).is_some_and(|sc| sc.entity.is_some())) {
        items.push(item("self", CompletionItemKind::VARIABLE, Some("the instance being implemented".into())));
    }
    if p.files[file].ns != "std"
        && let Some(std) = p.ns_file("std")
    {
        for d in p.files[std]
            .outline
            .definitions
            .iter()
            .filter(|d| matches!(d.kind, DefinitionKind::Entity | DefinitionKind::Typedef))
        {
            items.push(item(&d.name, def_kind(d.kind), Some(format!("std::{}", d.name))));
        }
    }
    items
}

#[cfg(test)]
mod tests {
    use super::open_constructor;

    #[test]
    fn finds_the_open_constructor() {
        assert_eq!(open_constructor("a = fs::File(path=\"/x\", ").as_deref(), Some("fs::File"));
        assert_eq!(open_constructor("a = Host(name=std::f(1), ").as_deref(), Some("Host"));
        assert_eq!(open_constructor("a = std::count([1, 2]").as_deref(), None);
        assert_eq!(open_constructor("a = Host(name=\"(\", ").as_deref(), Some("Host"));
        assert_eq!(open_constructor("a = Host()\nb = ").as_deref(), None);
        assert_eq!(open_constructor("a = Host(po\nimpl").as_deref(), None);
        assert_eq!(open_constructor("a = Host(\n    name=\"x\",\n    po").as_deref(), Some("Host"));
    }
}
