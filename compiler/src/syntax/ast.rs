//! Abstract syntax tree. Every node carries a [`Span`].

use super::Span;

#[derive(Clone, Debug)]
pub(crate) struct Ident {
    pub name: String,
    pub span: Span,
}

/// A part of an interpolated (`{{ }}`) string.
#[derive(Clone, Debug)]
pub(crate) enum StrPart {
    Lit(String),
    /// Dotted name path, e.g. `a.b.c`.
    Var(Vec<String>, Span),
}

/// A part of an f-string.
#[derive(Clone, Debug)]
pub(crate) enum FPart {
    Lit(String),
    Field { path: Vec<String>, conversion: Option<char>, spec: Vec<FPart>, span: Span },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BinOp {
    Eq,
    Ne,
    Lt,
    Gt,
    Le,
    Ge,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Pow,
    And,
    Or,
    In,
    NotIn,
}

impl BinOp {
    pub(crate) fn symbol(self) -> &'static str {
        match self {
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Gt => ">",
            BinOp::Le => "<=",
            BinOp::Ge => ">=",
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Mod => "%",
            BinOp::Pow => "**",
            BinOp::And => "and",
            BinOp::Or => "or",
            BinOp::In => "in",
            BinOp::NotIn => "not in",
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) struct KwArg {
    pub name: Ident,
    pub value: Expr,
}

/// Arguments of a call or constructor.
#[derive(Clone, Debug, Default)]
pub(crate) struct Args {
    pub positional: Vec<Expr>,
    pub keyword: Vec<KwArg>,
    pub spread: Vec<Expr>,
}

#[derive(Clone, Debug)]
pub(crate) struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub(crate) enum ExprKind {
    Null,
    Bool(bool),
    Int(i64),
    /// An integer literal past `i64`.
    BigInt(std::rc::Rc<num_bigint::BigInt>),
    Float(f64),
    Str(String),
    Interp(Vec<StrPart>),
    FStr(Vec<FPart>),
    Regex(String),
    /// A (possibly namespaced) name: `x`, `mod::x`.
    Var(String),
    Attr(Box<Expr>, Ident),
    List(Vec<Expr>),
    Dict(Vec<(String, Expr)>),
    // `Args` is boxed: inline it made every expression node 40 bytes larger
    Constructor {
        class: Ident,
        args: Box<Args>,
    },
    Call {
        name: Ident,
        args: Box<Args>,
    },
    IndexLookup {
        class: Ident,
        args: Vec<KwArg>,
    },
    SelectorLookup {
        base: Box<Expr>,
        attr: Ident,
        args: Vec<KwArg>,
    },
    MapLookup(Box<Expr>, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    IsDefined(Box<Expr>),
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    Comprehension {
        value: Box<Expr>,
        fors: Vec<(Ident, Expr)>,
        guards: Vec<Expr>,
    },
}

#[derive(Clone, Debug)]
pub(crate) enum Stmt {
    Assign { target: Expr, value: Expr, add: bool, span: Span },
    For { var: Ident, iter: Expr, body: Block, span: Span },
    If { branches: Vec<(Expr, Block)>, otherwise: Block, span: Span },
    Expr(Expr),
}

impl Stmt {
    pub(crate) fn span(&self) -> Span {
        match self {
            Stmt::Assign { span, .. } | Stmt::For { span, .. } | Stmt::If { span, .. } => *span,
            Stmt::Expr(e) => e.span,
        }
    }
}

pub(crate) type Block = Vec<Stmt>;

#[derive(Clone, Debug)]
pub(crate) struct TypeRef {
    pub name: Ident,
    pub list: bool,
    pub nullable: bool,
}

#[derive(Clone, Debug)]
pub(crate) enum Default {
    None,
    Undef,
    Value(Expr),
}

#[derive(Clone, Debug)]
pub(crate) struct AttrDef {
    pub ty: TypeRef,
    pub name: Ident,
    pub default: Default,
}

#[derive(Clone, Debug)]
#[allow(dead_code)] // doc and span are kept for tooling (documentation, go-to-definition)
pub(crate) struct EntityDef {
    pub name: Ident,
    pub parents: Vec<Ident>,
    pub doc: Option<String>,
    pub attrs: Vec<AttrDef>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub(crate) struct RelationSide {
    pub class: Ident,
    pub attr: Option<Ident>,
    pub multi: (u32, Option<u32>),
    pub multi_span: Span,
}

#[derive(Clone, Debug)]
#[allow(dead_code)] // every node keeps its span, even where evaluation does not report it yet
pub(crate) enum Top {
    Entity(EntityDef),
    Implementation { name: Ident, entity: Ident, body: Block, span: Span },
    Implement { entity: Ident, impls: Vec<Ident>, when: Option<Expr>, span: Span },
    Relation { left: RelationSide, right: RelationSide, annotations: Vec<Expr>, span: Span },
    Typedef { name: Ident, base: Ident, constraint: Expr, span: Span },
    Index { class: Ident, fields: Vec<Ident>, span: Span },
    Import { path: Ident, alias: Option<Ident>, span: Span },
    Stmt(Stmt),
}

#[derive(Clone, Debug, Default)]
pub(crate) struct File {
    pub doc: Option<String>,
    pub items: Vec<Top>,
}
