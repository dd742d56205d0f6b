//! The semantic model: entities, attributes, relations, typedefs, indexes and implementations,
//! built from the syntax of every loaded file before evaluation starts.

use std::collections::HashMap;

use crate::eval::value::Value;
use crate::syntax::Span;
use crate::syntax::ast;

pub(crate) type EntId = usize;

/// FxHash: a small, fast, non-cryptographic hasher for the compiler's maps keyed by names and ids.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher(u64);

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl std::hash::Hasher for FxHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]));
        }
        // the tail (most names are shorter than 8 bytes) as one word, not byte by byte
        let tail = chunks.remainder();
        if !tail.is_empty() {
            let mut word = [0u8; 8];
            word[..tail.len()].copy_from_slice(tail);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.add(i as u64);
    }

    fn write_u32(&mut self, i: u32) {
        self.add(i as u64);
    }

    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
}

pub(crate) type FastMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<FxHasher>>;
pub(crate) type FastSet<K> = std::collections::HashSet<K, std::hash::BuildHasherDefault<FxHasher>>;
pub(crate) type NsId = usize;

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Type {
    Any,
    String,
    Int,
    Float,
    Number,
    Bool,
    Dict,
    List,
    Typedef(usize),
    TypedList(Box<Type>),
    Nullable(Box<Type>),
}

impl Type {
    /// Whether a typedef is part of this type (`Types::type_name` then needs the model's names).
    pub(crate) fn has_typedef(&self) -> bool {
        match self {
            Type::Typedef(_) => true,
            Type::TypedList(t) | Type::Nullable(t) => t.has_typedef(),
            _ => false,
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Typedef {
    pub name: String,
    pub base: Type,
    pub ns: NsId,
    /// Regex source or the index of the constraint expression.
    pub regex: Option<fancy_regex::Regex>,
}

#[derive(Clone, Debug)]
pub(crate) enum AttrKind {
    Prim { ty: Type, default: Option<Value>, undef: bool },
    Rel { target: EntId, lo: u32, hi: Option<u32>, reverse: Option<String> },
}

#[derive(Clone, Debug)]
pub(crate) struct Attribute {
    pub name: String,
    pub kind: AttrKind,
    /// Entity that declares this attribute.
    pub owner: EntId,
    pub span: Span,
}

impl Attribute {
    pub(crate) fn is_relation(&self) -> bool {
        matches!(self.kind, AttrKind::Rel { .. })
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Index {
    pub entity: EntId,
    pub fields: Vec<String>,
}

#[derive(Clone, Debug)]
pub(crate) struct ImplementStmt<'a> {
    pub impls: Vec<usize>,
    pub when: Option<&'a ast::Expr>,
    pub ns: NsId,
}

#[derive(Clone, Debug)]
pub(crate) struct Implementation<'a> {
    pub entity: EntId,
    pub body: &'a ast::Block,
    pub ns: NsId,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub(crate) struct Entity<'a> {
    pub name: String,
    pub ns: NsId,
    pub parents: Vec<EntId>,
    /// All ancestors, not including self.
    pub ancestors: Vec<EntId>,
    /// All descendants, not including self.
    pub descendants: Vec<EntId>,
    /// Own declared attributes (before inheritance).
    pub own: Vec<Attribute>,
    /// Flattened attributes including inherited ones; slot order of instances. Shared (`Rc`):
    /// an assignment holds its attribute while it writes the model, without copying it.
    pub attrs: std::rc::Rc<[Attribute]>,
    pub attr_index: FastMap<String, usize>,
    pub implements: Vec<ImplementStmt<'a>>,
    /// Indexes that apply (own and inherited), by index id.
    pub indexes: Vec<usize>,
    pub span: Span,
    pub def: Option<&'a ast::EntityDef>,
}

impl Entity<'_> {
    pub(crate) fn attr(&self, name: &str) -> Option<(usize, &Attribute)> {
        self.attr_index.get(name).map(|i| (*i, &self.attrs[*i]))
    }
}

/// A namespace: one file.
#[derive(Debug)]
pub(crate) struct Namespace<'a> {
    pub name: String,
    /// alias -> namespace name
    pub imports: FastMap<String, String>,
    pub file: Option<&'a ast::File>,
}

/// Type name lookup table, by fully qualified name.
#[derive(Default)]
pub(crate) struct Types<'a> {
    pub entities: Vec<Entity<'a>>,
    pub entity_by_name: FastMap<String, EntId>,
    pub typedefs: Vec<Typedef>,
    pub typedef_by_name: FastMap<String, usize>,
    pub typedef_constraints: Vec<Option<&'a ast::Expr>>,
    pub implementations: Vec<Implementation<'a>>,
    pub impl_by_name: FastMap<String, usize>,
    pub indexes: Vec<Index>,
    pub namespaces: Vec<Namespace<'a>>,
    pub ns_by_name: FastMap<String, NsId>,
}

impl Types<'_> {
    pub(crate) fn is_subtype(&self, sub: EntId, sup: EntId) -> bool {
        sub == sup || self.entities[sub].ancestors.contains(&sup)
    }

    pub(crate) fn type_name(&self, t: &Type) -> String {
        match t {
            Type::Any => "any".into(),
            Type::String => "string".into(),
            Type::Int => "int".into(),
            Type::Float => "float".into(),
            Type::Number => "number".into(),
            Type::Bool => "bool".into(),
            Type::Dict => "dict".into(),
            Type::List => "list".into(),
            Type::Typedef(i) => self.typedefs[*i].name.clone(),
            Type::TypedList(t) => format!("{}[]", self.type_name(t)),
            Type::Nullable(t) => format!("{}?", self.type_name(t)),
        }
    }

    /// Candidate namespaces for a short name seen in namespace `ns`: itself, then its parents.
    pub(crate) fn short_candidates(&self, ns: NsId, name: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut cur = self.namespaces[ns].name.clone();
        loop {
            out.push(format!("{cur}::{name}"));
            match cur.rfind("::") {
                Some(p) => cur.truncate(p),
                None => break,
            }
        }
        out
    }

    /// The namespace a qualified name's `prefix` stands for in `ns`, as Inmanta sees it: an
    /// import (or its alias), the namespace itself by its full name (a module's own files may
    /// name their types, plugins and variables `module::x` without importing it), or `std`.
    /// An enclosing namespace is not visible without an import.
    pub(crate) fn visible_namespace(&self, ns: NsId, prefix: &str) -> Option<String> {
        let space = &self.namespaces[ns];
        if let Some(target) = space.imports.get(prefix) {
            return Some(target.clone());
        }
        (prefix == space.name || prefix == "std").then(|| prefix.to_string())
    }

    /// Resolves a possibly-qualified name to a fully qualified one using the imports of `ns`.
    /// Returns Err(Some(full)) when the namespace exists but is not imported.
    pub(crate) fn qualify(&self, ns: NsId, name: &str) -> Result<Vec<String>, Option<String>> {
        match name.rfind("::") {
            None => Ok(self.short_candidates(ns, name)),
            Some(p) => {
                let (prefix, short) = (&name[..p], &name[p + 2..]);
                match self.visible_namespace(ns, prefix) {
                    Some(target) => Ok(vec![format!("{target}::{short}")]),
                    None => Err(Some(format!("{prefix}::{short}"))),
                }
            }
        }
    }
}
