//! What an editor needs of one `.cf` file, without evaluating it: every syntax error (from the
//! parser's recovery mode), the names it defines and the names it uses, with byte ranges.
//!
//! Names are given as written (`fs::File`, `std::none`, `x`): resolving them against imports and
//! other files is the tool's work (the `lsp` crate), which keeps this a plain walk of the tree.

use super::ast::{self, Args, Expr, ExprKind, Stmt, Top};
use super::parser::parse_recovering;

/// A byte range in the file's text.
pub type Range = (usize, usize);

/// The outline of one file.
#[derive(Debug, Clone, Default)]
pub struct Outline {
    /// The module (file) doc string.
    pub doc: Option<String>,
    pub errors: Vec<SyntaxError>,
    /// Ranges no definition or reference comes from: statements that did not parse.
    pub skipped: Vec<Range>,
    pub definitions: Vec<Definition>,
    pub references: Vec<Reference>,
    /// Scope 0 is the file's top level; an implementation, `for` or `if` body has one of its own.
    pub scopes: Vec<Scope>,
}

#[derive(Debug, Clone)]
pub struct SyntaxError {
    pub message: String,
    pub range: Range,
}

#[derive(Debug, Clone, Default)]
pub struct Scope {
    pub parent: Option<usize>,
    pub range: Range,
    /// In an implementation: the entity `self` is.
    pub entity: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefinitionKind {
    Entity,
    Attribute,
    /// A relation end: an attribute of `owner` whose values are instances of `value_type`.
    Relation,
    Implementation,
    Typedef,
    Variable,
    Import,
    Index,
}

#[derive(Debug, Clone)]
pub struct Definition {
    pub kind: DefinitionKind,
    pub name: String,
    /// The name where it is declared.
    pub name_range: Range,
    /// The whole declaration.
    pub range: Range,
    /// The entity (as written) an attribute or relation end belongs to.
    pub owner: Option<String>,
    /// One line a hover shows: `string[]? name = "x"`, `entity A extends B`, ...
    pub detail: String,
    pub doc: Option<String>,
    pub scope: usize,
    /// The type of the value (as written): an attribute's type, the entity at the other end of a
    /// relation, the class of a variable assigned a constructor, an implementation's entity, a
    /// typedef's base type, an import's module.
    pub value_type: Option<String>,
    /// An entity's parents, as written.
    pub parents: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReferenceKind {
    /// An entity or typedef: a constructor, a parent, an attribute type, a relation end.
    Type,
    Implementation,
    Variable,
    /// An attribute or relation of an instance: a constructor keyword (`receiver` is the class),
    /// or `x.a` (`receiver` is the path before it).
    Attribute,
    /// A plugin call.
    Call,
    /// A module name in an `import`.
    Module,
}

/// Where an attribute reference's instance comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Receiver {
    /// A constructor or index lookup of this class (as written).
    Class(String),
    /// The variable path before the attribute: `["x", "a"]` for `x.a.b`.
    Path(Vec<String>),
}

#[derive(Debug, Clone)]
pub struct Reference {
    pub kind: ReferenceKind,
    pub name: String,
    pub range: Range,
    pub scope: usize,
    pub receiver: Option<Receiver>,
}

/// Parses `text` in recovery mode and outlines it.
pub fn outline(text: &str) -> Outline {
    let recovered = parse_recovering(0, text, &mut 0);
    let mut w = Walker { out: Outline::default(), scope: 0 };
    w.out.doc = recovered.file.doc.clone();
    w.out.scopes.push(Scope { parent: None, range: (0, text.len()), entity: None });
    w.out.errors = recovered
        .errors
        .into_iter()
        .map(|e| SyntaxError { message: e.message, range: (e.span.start as usize, e.span.end as usize) })
        .collect();
    w.out.skipped = recovered.skipped;
    for item in &recovered.file.items {
        w.top(item);
    }
    w.out
}

fn range(span: super::Span) -> Range {
    (span.start as usize, span.end as usize)
}

fn type_text(t: &ast::TypeRef) -> String {
    format!("{}{}{}", t.name.name, if t.list { "[]" } else { "" }, if t.nullable { "?" } else { "" })
}

fn multi_text((lo, hi): (u32, Option<u32>)) -> String {
    match hi {
        Some(h) if h == lo => format!("[{lo}]"),
        Some(h) => format!("[{lo}:{h}]"),
        None => format!("[{lo}:]"),
    }
}

struct Walker {
    out: Outline,
    scope: usize,
}

impl Walker {
    fn def(&mut self, kind: DefinitionKind, id: &ast::Ident, whole: super::Span, detail: String) -> &mut Definition {
        self.out.definitions.push(Definition {
            kind,
            name: id.name.clone(),
            name_range: range(id.span),
            range: range(whole),
            owner: None,
            detail,
            doc: None,
            scope: self.scope,
            value_type: None,
            parents: Vec::new(),
        });
        let last = self.out.definitions.len() - 1;
        &mut self.out.definitions[last]
    }

    fn reference(&mut self, kind: ReferenceKind, name: &str, r: Range, receiver: Option<Receiver>) {
        self.out.references.push(Reference { kind, name: name.to_string(), range: r, scope: self.scope, receiver });
    }

    fn open_scope(&mut self, span: super::Span, entity: Option<String>) -> usize {
        let outer = self.scope;
        self.out.scopes.push(Scope { parent: Some(outer), range: range(span), entity });
        self.scope = self.out.scopes.len() - 1;
        outer
    }

    fn top(&mut self, item: &Top) {
        match item {
            Top::Entity(def) => self.entity(def),
            Top::Implementation { name, entity, body, span } => {
                let d = self.def(
                    DefinitionKind::Implementation,
                    name,
                    *span,
                    format!("implementation {} for {}", name.name, entity.name),
                );
                d.value_type = Some(entity.name.clone());
                self.reference(ReferenceKind::Type, &entity.name, range(entity.span), None);
                let outer = self.open_scope(*span, Some(entity.name.clone()));
                self.block(body);
                self.scope = outer;
            }
            Top::Implement { entity, impls, when, .. } => {
                self.reference(ReferenceKind::Type, &entity.name, range(entity.span), None);
                for i in impls.iter().filter(|i| i.name != "parents") {
                    self.reference(ReferenceKind::Implementation, &i.name, range(i.span), None);
                }
                if let Some(w) = when {
                    let outer = self.open_scope(w.span, Some(entity.name.clone()));
                    self.expr(w);
                    self.scope = outer;
                }
            }
            Top::Relation { left, right, annotations, span } => self.relation(left, right, annotations, *span),
            Top::Typedef { name, base, constraint, span } => {
                let d =
                    self.def(DefinitionKind::Typedef, name, *span, format!("typedef {} as {}", name.name, base.name));
                d.value_type = Some(base.name.clone());
                self.reference(ReferenceKind::Type, &base.name, range(base.span), None);
                let outer = self.open_scope(*span, None);
                self.expr(constraint);
                self.scope = outer;
            }
            Top::Index { class, fields, span } => {
                let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
                let d = self.def(
                    DefinitionKind::Index,
                    class,
                    *span,
                    format!("index {}({})", class.name, names.join(", ")),
                );
                d.owner = Some(class.name.clone());
                self.reference(ReferenceKind::Type, &class.name, range(class.span), None);
                for f in fields {
                    self.reference(
                        ReferenceKind::Attribute,
                        &f.name,
                        range(f.span),
                        Some(Receiver::Class(class.name.clone())),
                    );
                }
            }
            Top::Import { path, alias, span } => {
                let shown = alias.as_ref().unwrap_or(path);
                let detail = match alias {
                    Some(a) => format!("import {} as {}", path.name, a.name),
                    None => format!("import {}", path.name),
                };
                let d = self.def(DefinitionKind::Import, shown, *span, detail);
                d.value_type = Some(path.name.clone());
                self.reference(ReferenceKind::Module, &path.name, range(path.span), None);
            }
            Top::Stmt(s) => self.stmt(s),
        }
    }

    fn entity(&mut self, def: &ast::EntityDef) {
        let parents: Vec<String> = def.parents.iter().map(|p| p.name.clone()).collect();
        let detail = if parents.is_empty() {
            format!("entity {}", def.name.name)
        } else {
            format!("entity {} extends {}", def.name.name, parents.join(", "))
        };
        let d = self.def(DefinitionKind::Entity, &def.name, def.span, detail);
        d.doc.clone_from(&def.doc);
        d.parents = parents;
        for p in &def.parents {
            self.reference(ReferenceKind::Type, &p.name, range(p.span), None);
        }
        for a in &def.attrs {
            let ty = type_text(&a.ty);
            let default = match &a.default {
                ast::Default::None => String::new(),
                ast::Default::Undef => " = undef".to_string(),
                ast::Default::Value(_) => " = ...".to_string(),
            };
            let whole = a.ty.name.span.to(a.name.span);
            let d = self.def(DefinitionKind::Attribute, &a.name, whole, format!("{ty} {}{default}", a.name.name));
            d.owner = Some(def.name.name.clone());
            d.value_type = Some(ty);
            if a.ty.name.name != "dict" {
                self.reference(ReferenceKind::Type, &a.ty.name.name, range(a.ty.name.span), None);
            }
        }
    }

    fn relation(
        &mut self,
        left: &ast::RelationSide,
        right: &ast::RelationSide,
        annotations: &[Expr],
        span: super::Span,
    ) {
        for (this, other) in [(left, right), (right, left)] {
            self.reference(ReferenceKind::Type, &this.class.name, range(this.class.span), None);
            let Some(attr) = &this.attr else { continue };
            let detail = format!("{} {}.{} {}", other.class.name, this.class.name, attr.name, multi_text(this.multi));
            let d = self.def(DefinitionKind::Relation, attr, span, detail);
            d.owner = Some(this.class.name.clone());
            d.value_type = Some(other.class.name.clone());
        }
        for a in annotations {
            self.expr(a);
        }
    }

    fn block(&mut self, body: &[Stmt]) {
        for s in body {
            self.stmt(s);
        }
    }

    fn stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::Assign { target, value, span, .. } => {
                match &target.kind {
                    ExprKind::Var(n) if !n.contains("::") => {
                        let id = ast::Ident { name: n.clone(), span: target.span };
                        let d = self.def(DefinitionKind::Variable, &id, *span, format!("{n} = ..."));
                        if let ExprKind::Constructor { class, .. } = &value.kind {
                            d.value_type = Some(class.name.clone());
                        }
                    }
                    _ => self.expr(target),
                }
                self.expr(value);
            }
            Stmt::For { var, iter, body, span } => {
                self.expr(iter);
                let outer = self.open_scope(*span, None);
                self.def(DefinitionKind::Variable, var, *span, format!("for {} in ...", var.name));
                self.block(body);
                self.scope = outer;
            }
            Stmt::If { branches, otherwise, span } => {
                for (cond, body) in branches {
                    self.expr(cond);
                    let outer = self.open_scope(*span, None);
                    self.block(body);
                    self.scope = outer;
                }
                let outer = self.open_scope(*span, None);
                self.block(otherwise);
                self.scope = outer;
            }
            Stmt::Expr(e) => self.expr(e),
        }
    }

    fn args(&mut self, args: &Args, class: Option<&str>) {
        for e in args.positional.iter().chain(&args.spread) {
            self.expr(e);
        }
        for kw in &args.keyword {
            if let Some(c) = class {
                self.reference(
                    ReferenceKind::Attribute,
                    &kw.name.name,
                    range(kw.name.span),
                    Some(Receiver::Class(c.to_string())),
                );
            }
            self.expr(&kw.value);
        }
    }

    /// The variable path of `x.a.b` (`["x", "a", "b"]`), when the expression is one.
    fn path(e: &Expr) -> Option<Vec<String>> {
        match &e.kind {
            ExprKind::Var(n) => Some(vec![n.clone()]),
            ExprKind::Attr(base, a) => Self::path(base).map(|mut p| {
                p.push(a.name.clone());
                p
            }),
            _ => None,
        }
    }

    fn expr(&mut self, e: &Expr) {
        match &e.kind {
            ExprKind::Var(n) => self.reference(ReferenceKind::Variable, n, range(e.span), None),
            ExprKind::Attr(base, a) => {
                self.expr(base);
                let receiver = Self::path(base).map(Receiver::Path);
                self.reference(ReferenceKind::Attribute, &a.name, range(a.span), receiver);
            }
            // names inside strings are left out: their spans cover the whole field, and a rename
            // must not rewrite more than the name
            ExprKind::Interp(_) | ExprKind::FStr(_) => {}
            ExprKind::List(items) => {
                for i in items {
                    self.expr(i);
                }
            }
            ExprKind::Dict(items) => {
                for (_, v) in items {
                    self.expr(v);
                }
            }
            ExprKind::Constructor { class, args } => {
                self.reference(ReferenceKind::Type, &class.name, range(class.span), None);
                self.args(args, Some(&class.name));
            }
            ExprKind::Call { name, args } => {
                self.reference(ReferenceKind::Call, &name.name, range(name.span), None);
                self.args(args, None);
            }
            ExprKind::IndexLookup { class, args } => {
                self.reference(ReferenceKind::Type, &class.name, range(class.span), None);
                for kw in args {
                    let receiver = Some(Receiver::Class(class.name.clone()));
                    self.reference(ReferenceKind::Attribute, &kw.name.name, range(kw.name.span), receiver);
                    self.expr(&kw.value);
                }
            }
            ExprKind::SelectorLookup { base, attr, args } => {
                self.expr(base);
                let receiver = Self::path(base).map(Receiver::Path);
                self.reference(ReferenceKind::Attribute, &attr.name, range(attr.span), receiver);
                for kw in args {
                    self.expr(&kw.value);
                }
            }
            ExprKind::MapLookup(a, b) | ExprKind::Binary(_, a, b) => {
                self.expr(a);
                self.expr(b);
            }
            ExprKind::Not(a) | ExprKind::IsDefined(a) => self.expr(a),
            ExprKind::Cond(c, a, b) => {
                self.expr(c);
                self.expr(a);
                self.expr(b);
            }
            ExprKind::Comprehension { value, fors, guards } => {
                let outer = self.open_scope(e.span, None);
                for (var, iter) in fors {
                    self.expr(iter);
                    self.def(DefinitionKind::Variable, var, e.span, format!("for {} in ...", var.name));
                }
                self.expr(value);
                for g in guards {
                    self.expr(g);
                }
                self.scope = outer;
            }
            ExprKind::Null
            | ExprKind::Bool(_)
            | ExprKind::Int(_)
            | ExprKind::BigInt(_)
            | ExprKind::Float(_)
            | ExprKind::Str(_)
            | ExprKind::Regex(_) => {}
        }
    }
}
