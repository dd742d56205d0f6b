//! Recursive-descent parser with precedence climbing for expressions.

use super::Span;
use super::ast::*;
use super::lexer::{LexWarning, Tok, Token, lex};
use crate::diagnostics::ErrorKind;

mod expr;
mod recover;
mod strings;

pub(crate) use recover::parse_recovering;

use strings::{interpolation_parts, literal, parse_fstring};

/// Maximum nesting of expressions and blocks; deeper input is a parse error, never a stack overflow.
pub(crate) const MAX_DEPTH: usize = 96;

/// Maximum number of binary operators chained at one level (`a + b + c ...`): the tree is left-deep.
pub(crate) const MAX_CHAIN: usize = 500;

#[derive(Debug, Clone)]
pub(crate) struct ParseError {
    pub kind: ErrorKind,
    pub message: String,
    pub span: Span,
}

pub(crate) struct Parsed {
    pub file: File,
    pub warnings: Vec<LexWarning>,
    /// Errors that do not stop parsing (e.g. hyphens in declared names).
    pub errors: Vec<ParseError>,
}

pub(crate) fn parse(file: u32, src: &str, next_id: &mut u32) -> Result<Parsed, ParseError> {
    let (tokens, warnings) = lex(file, src).map_err(|e| ParseError {
        kind: ErrorKind::ParserException,
        message: e.message,
        span: e.span,
    })?;
    let mut p = Parser { toks: tokens, pos: 0, depth: 0, next_id, errors: Vec::new(), file };
    let f = p.file()?;
    Ok(Parsed { file: f, warnings, errors: p.errors })
}

struct Parser<'a> {
    toks: Vec<Token>,
    pos: usize,
    depth: usize,
    next_id: &'a mut u32,
    errors: Vec<ParseError>,
    file: u32,
}

type PResult<T> = Result<T, ParseError>;

fn is_class_name(s: &str) -> bool {
    s.rsplit("::").next().and_then(|l| l.chars().next()).is_some_and(|c| c.is_ascii_uppercase())
}

/// Inmanta's parser error for a capitalised name where a lower-case one belongs: it names the
/// keyword before it.
fn reserved_keyword(kw: &str, span: Span) -> ParseError {
    ParseError {
        kind: ErrorKind::ParserException,
        message: format!("Syntax error: invalid identifier, {kw} is a reserved keyword"),
        span,
    }
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Id(s) => format!("'{s}'"),
        Tok::Int(i) => format!("'{i}'"),
        Tok::BigInt(i) => format!("'{i}'"),
        Tok::Float(f) => format!("'{f}'"),
        Tok::Str { value, .. } => format!("string '{value}'"),
        Tok::FStr(s) => format!("f-string '{s}'"),
        Tok::Regex(r) => format!("regex /{r}/"),
        Tok::Kw(k) => format!("'{k}'"),
        Tok::Punct(p) => format!("'{p}'"),
        Tok::Eof => "end of file".to_string(),
    }
}

impl Parser<'_> {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos].tok
    }

    fn peek_at(&self, n: usize) -> &Tok {
        &self.toks[(self.pos + n).min(self.toks.len() - 1)].tok
    }

    fn span(&self) -> Span {
        self.toks[self.pos].span
    }

    fn prev_span(&self) -> Span {
        self.toks[self.pos.saturating_sub(1)].span
    }

    fn bump(&mut self) -> Token {
        let t = self.toks[self.pos].clone();
        if self.pos < self.toks.len() - 1 {
            self.pos += 1;
        }
        t
    }

    fn is_kw(&self, k: &str) -> bool {
        matches!(self.peek(), Tok::Kw(x) if *x == k)
    }

    fn is_p(&self, p: &str) -> bool {
        matches!(self.peek(), Tok::Punct(x) if *x == p)
    }

    fn eat_kw(&mut self, k: &str) -> bool {
        if self.is_kw(k) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn eat_p(&mut self, p: &str) -> bool {
        if self.is_p(p) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn unexpected<T>(&self, what: &str) -> PResult<T> {
        Err(ParseError {
            kind: ErrorKind::ParserException,
            message: format!("Syntax error: unexpected {}, expected {what}", describe(self.peek())),
            span: self.error_span(),
        })
    }

    /// Where Inmanta locates a syntax error at the current token: at a keyword (the token or the
    /// one before it) when there is one, else just after the offending token (where its lexer stands).
    fn error_span(&self) -> Span {
        let cur = &self.toks[self.pos];
        if matches!(cur.tok, Tok::Kw(_)) {
            return cur.span;
        }
        // (`true`, `false` and `null` are values in Inmanta's grammar, not keywords)
        if self.pos > 0 && matches!(self.toks[self.pos - 1].tok, Tok::Kw(k) if !matches!(k, "true" | "false" | "null"))
        {
            return self.toks[self.pos - 1].span;
        }
        Span { start: cur.span.end, ..cur.span }
    }

    fn expect_p(&mut self, p: &str) -> PResult<Span> {
        if self.is_p(p) { Ok(self.bump().span) } else { self.unexpected(&format!("'{p}'")) }
    }

    fn expect_kw(&mut self, k: &str) -> PResult<Span> {
        if self.is_kw(k) { Ok(self.bump().span) } else { self.unexpected(&format!("'{k}'")) }
    }

    fn id(&mut self, what: &str) -> PResult<Ident> {
        match self.peek().clone() {
            Tok::Id(name) => {
                let span = self.bump().span;
                Ok(Ident { name, span })
            }
            _ => self.unexpected(what),
        }
    }

    /// A declared name: checks for hyphens.
    fn decl_id(&mut self, what: &str) -> PResult<Ident> {
        let id = self.id(what)?;
        self.check_hyphen(&id);
        Ok(id)
    }

    fn check_hyphen(&mut self, id: &Ident) {
        if id.name.contains('-') {
            self.errors.push(ParseError {
                kind: ErrorKind::HyphenException,
                message: format!("The use of '-' in identifiers is not allowed. please rename {}", id.name),
                span: id.span,
            });
        }
    }

    fn ns_ref(&mut self, what: &str) -> PResult<Ident> {
        let first = self.id(what)?;
        let mut name = first.name;
        let mut span = first.span;
        while self.is_p("::") && matches!(self.peek_at(1), Tok::Id(_)) {
            self.bump();
            let seg = self.id("a name")?;
            name.push_str("::");
            name.push_str(&seg.name);
            span = span.to(seg.span);
        }
        Ok(Ident { name, span })
    }

    fn class_ref(&mut self) -> PResult<Ident> {
        let r = self.ns_ref("an entity name")?;
        if !is_class_name(&r.name) {
            return Err(ParseError {
                kind: ErrorKind::ParserException,
                message: format!(
                    "Syntax error: invalid identifier, expected an entity name (starting with a capital) but got '{}'",
                    r.name
                ),
                span: r.span,
            });
        }
        Ok(r)
    }

    fn doc(&mut self) -> Option<String> {
        if let Tok::Str { value, multiline: true, raw: false } = self.peek().clone() {
            self.bump();
            return Some(value);
        }
        None
    }

    fn mk(&mut self, kind: ExprKind, span: Span) -> Expr {
        *self.next_id += 1;
        Expr { kind, span }
    }

    fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(ParseError {
                kind: ErrorKind::ParserException,
                message: format!("Syntax error: nesting deeper than {MAX_DEPTH} levels"),
                span: self.span(),
            });
        }
        Ok(())
    }

    fn file(&mut self) -> PResult<File> {
        let mut f = File::default();
        if let Tok::Str { value, multiline: true, raw: false } = self.peek().clone() {
            // A module doc string: only when not followed by something that makes it an expression.
            self.bump();
            f.doc = Some(value);
        }
        while !matches!(self.peek(), Tok::Eof) {
            let item = self.top()?;
            f.items.push(item);
        }
        Ok(f)
    }

    fn top(&mut self) -> PResult<Top> {
        let start = self.span();
        match self.peek().clone() {
            Tok::Kw("import") => {
                self.bump();
                let path = self.ns_ref("a module name")?;
                if path.name.contains('-') {
                    // Inmanta refuses it when it builds the import, a plain CompilerException
                    return Err(ParseError {
                        kind: ErrorKind::CompilerException,
                        message: format!(
                            "{} is not a valid module name: hyphens are not allowed, please use underscores instead.",
                            path.name
                        ),
                        span: path.span,
                    });
                }
                // module names and aliases are lower-case identifiers in Inmanta's grammar; its
                // parser reports the keyword before a capitalised one
                if path.name.split("::").any(is_class_name) {
                    return Err(reserved_keyword("import", start));
                }
                let alias = if self.is_kw("as") {
                    let as_span = self.bump().span;
                    if matches!(self.peek(), Tok::Id(n) if is_class_name(n)) {
                        return Err(reserved_keyword("as", as_span));
                    }
                    Some(self.decl_id("an alias")?)
                } else {
                    None
                };
                Ok(Top::Import { path, alias, span: start.to(self.prev_span()) })
            }
            Tok::Kw("entity") => self.entity(),
            Tok::Kw("implementation") => {
                self.bump();
                if matches!(self.peek(), Tok::Id(n) if is_class_name(n)) {
                    return Err(reserved_keyword("implementation", start));
                }
                let name = self.decl_id("an implementation name")?;
                self.expect_kw("for")?;
                let entity = self.class_ref()?;
                self.expect_p(":")?;
                self.doc();
                let body = self.block()?;
                Ok(Top::Implementation { name, entity, body, span: start.to(self.prev_span()) })
            }
            Tok::Kw("implement") => {
                self.bump();
                let entity = self.class_ref()?;
                self.expect_kw("using")?;
                let mut impls = Vec::new();
                loop {
                    if self.is_kw("parents") {
                        let s = self.bump().span;
                        impls.push(Ident { name: "parents".into(), span: s });
                    } else {
                        impls.push(self.ns_ref("an implementation name")?);
                    }
                    if !self.eat_p(",") {
                        break;
                    }
                }
                let when = if self.eat_kw("when") { Some(self.expr()?) } else { None };
                let span = start.to(self.prev_span());
                let inherits = impls.iter().any(|i| i.name == "parents");
                if inherits && when.as_ref().is_some_and(|w| !matches!(w.kind, ExprKind::Bool(true))) {
                    return Err(ParseError {
                        kind: ErrorKind::RuntimeException,
                        message: "Conditional implementation with parents not allowed".into(),
                        span: entity.span,
                    });
                }
                self.doc();
                Ok(Top::Implement { entity, impls, when, span })
            }
            Tok::Kw("typedef") => {
                self.bump();
                let name = self.decl_id("a type name")?;
                self.expect_kw("as")?;
                let base = self.ns_ref("a base type")?;
                if self.is_p("(") {
                    return Err(ParseError {
                        kind: ErrorKind::ParserException,
                        message: "The use of default constructors (typedef ... as Entity(...)) is no longer supported"
                            .into(),
                        span: name.span,
                    });
                }
                // a capitalised typedef name is the old default-constructor form in Inmanta's
                // grammar, which has no `matching`
                if is_class_name(&name.name) && self.is_kw("matching") {
                    return Err(reserved_keyword("matching", self.span()));
                }
                self.expect_kw("matching")?;
                let constraint = if let Tok::Regex(r) = self.peek().clone() {
                    let s = self.bump().span;
                    self.mk(ExprKind::Regex(r), s)
                } else {
                    self.expr()?
                };
                let span = start.to(self.prev_span());
                self.doc();
                Ok(Top::Typedef { name, base, constraint, span })
            }
            Tok::Kw("index") => {
                self.bump();
                let class = self.class_ref()?;
                self.expect_p("(")?;
                let mut fields = vec![self.id("an attribute name")?];
                while self.eat_p(",") {
                    fields.push(self.id("an attribute name")?);
                }
                self.expect_p(")")?;
                Ok(Top::Index { class, fields, span: start.to(self.prev_span()) })
            }
            Tok::Id(_) if self.looks_like_relation() => self.relation(),
            _ => Ok(Top::Stmt(self.stmt()?)),
        }
    }

    fn looks_like_relation(&self) -> bool {
        let mut i = 0;
        let mut last_class;
        loop {
            match self.peek_at(i) {
                Tok::Id(n) => {
                    last_class = is_class_name(n);
                    i += 1
                }
                _ => return false,
            }
            if matches!(self.peek_at(i), Tok::Punct("::")) {
                i += 1;
                continue;
            }
            break;
        }
        last_class
            && matches!(self.peek_at(i), Tok::Punct("."))
            && matches!(self.peek_at(i + 1), Tok::Id(_))
            && matches!(self.peek_at(i + 2), Tok::Punct("["))
    }

    fn multi(&mut self) -> PResult<((u32, Option<u32>), Span)> {
        let start = self.expect_p("[")?;
        let int = |p: &mut Self| -> PResult<u32> {
            match p.peek().clone() {
                // Inmanta takes a negative bound as given; as a lower bound it is no bound
                Tok::Int(i) => {
                    p.bump();
                    Ok(i.clamp(0, u32::MAX as i64) as u32)
                }
                Tok::BigInt(i) => {
                    p.bump();
                    Ok(if i.sign() == num_bigint::Sign::Minus { 0 } else { u32::MAX })
                }
                _ => p.unexpected("an integer"),
            }
        };
        let m = if self.eat_p(":") {
            (0, Some(int(self)?))
        } else {
            let lo = int(self)?;
            if self.eat_p(":") {
                if self.is_p("]") { (lo, None) } else { (lo, Some(int(self)?)) }
            } else {
                (lo, Some(lo))
            }
        };
        let end = self.expect_p("]")?;
        Ok((m, start.to(end)))
    }

    fn relation(&mut self) -> PResult<Top> {
        let start = self.span();
        let lclass = self.class_ref()?;
        self.expect_p(".")?;
        let lattr = self.decl_id("a relation name")?;
        let (lm, lms) = self.multi()?;
        let mut annotations = Vec::new();
        if !(self.eat_p("--") || self.eat_p("->") || self.eat_p("<-")) {
            annotations.push(self.expr_no_cond_class()?);
            while self.eat_p(",") {
                annotations.push(self.expr_no_cond_class()?);
            }
        }
        let rclass = self.class_ref()?;
        let mut right = RelationSide { class: rclass, attr: None, multi: (0, None), multi_span: lms };
        if self.is_p(".") && matches!(self.peek_at(1), Tok::Id(_)) {
            self.bump();
            let rattr = self.decl_id("a relation name")?;
            let (rm, rms) = self.multi()?;
            right.attr = Some(rattr);
            right.multi = rm;
            right.multi_span = rms;
        }
        let span = start.to(self.prev_span());
        self.doc();
        let left = RelationSide { class: lclass, attr: Some(lattr), multi: lm, multi_span: lms };
        Ok(Top::Relation { left, right, annotations, span })
    }

    /// An annotation expression in a relation: a var ref or constant, not followed by a class.
    fn expr_no_cond_class(&mut self) -> PResult<Expr> {
        // Annotations are plain references like `mymod::owned`; parse a primary without postfix calls.
        let start = self.span();
        match self.peek().clone() {
            Tok::Id(_) => {
                let r = self.ns_ref("an annotation")?;
                Ok(self.mk(ExprKind::Var(r.name), start.to(self.prev_span())))
            }
            _ => self.primary(),
        }
    }

    fn entity(&mut self) -> PResult<Top> {
        let start = self.expect_kw("entity")?;
        let name = self.id("an entity name")?;
        if !is_class_name(&name.name) && matches!(self.peek(), Tok::Eof) {
            // Inmanta's parser only notices the missing rest of the entity
            return self.unexpected("':'");
        }
        if !is_class_name(&name.name) {
            return Err(ParseError {
                kind: ErrorKind::ParserException,
                message: format!(
                    "Syntax error: invalid identifier, entity names must start with a capital letter, got '{}'",
                    name.name
                ),
                span: name.span,
            });
        }
        self.check_hyphen(&name);
        let mut parents = Vec::new();
        if self.eat_kw("extends") {
            parents.push(self.class_ref()?);
            while self.eat_p(",") {
                parents.push(self.class_ref()?);
            }
        }
        self.expect_p(":")?;
        let doc = self.doc();
        let mut attrs = Vec::new();
        while !self.is_kw("end") {
            attrs.push(self.attr()?);
        }
        self.expect_kw("end")?;
        Ok(Top::Entity(EntityDef { name, parents, doc, attrs, span: start.to(self.prev_span()) }))
    }

    fn attr(&mut self) -> PResult<AttrDef> {
        let tstart = self.span();
        let (tname, is_dict) = if self.is_kw("dict") {
            self.bump();
            (Ident { name: "dict".into(), span: tstart }, true)
        } else {
            (self.ns_ref("an attribute type")?, false)
        };
        let list = if !is_dict && self.is_p("[") && matches!(self.peek_at(1), Tok::Punct("]")) {
            self.bump();
            self.bump();
            true
        } else {
            false
        };
        if !is_dict && is_class_name(&tname.name) {
            // an entity is not an attribute type: Inmanta's grammar stops at the class name
            return Err(ParseError {
                kind: ErrorKind::ParserException,
                message: format!(
                    "Syntax error at {}: an entity can not be the type of an attribute, use a relation",
                    tname.name
                ),
                span: Span { start: tname.span.end, ..tname.span },
            });
        }
        let nullable = self.eat_p("?");
        let name = self.id("an attribute name")?;
        if is_class_name(&name.name) {
            return Err(ParseError {
                kind: ErrorKind::ParserException,
                message: format!(
                    "Syntax error: invalid identifier, attribute names must start with a lower case letter, got '{}'",
                    name.name
                ),
                span: name.span,
            });
        }
        self.check_hyphen(&name);
        let mut default = Default::None;
        if self.eat_p("=") {
            if self.eat_kw("undef") {
                default = Default::Undef;
            } else {
                let e = self.constant()?;
                if is_dict && !nullable && matches!(e.kind, ExprKind::Null) {
                    return Err(ParseError {
                        kind: ErrorKind::ParserException,
                        message: format!(
                            "Syntax error: null can not be assigned to dict attribute '{}', use dict? to make it nullable",
                            name.name
                        ),
                        span: name.span,
                    });
                }
                default = Default::Value(e);
            }
        }
        Ok(AttrDef { ty: TypeRef { name: tname, list, nullable }, name, default })
    }

    /// A default value: Inmanta's grammar takes a literal, a list or a dict there, nothing else
    /// (what follows the literal is then a syntax error of its own).
    fn constant(&mut self) -> PResult<Expr> {
        match self.peek() {
            Tok::Int(_) | Tok::BigInt(_) | Tok::Float(_) | Tok::Str { .. } | Tok::FStr(_) | Tok::Regex(_) => {
                self.primary()
            }
            Tok::Kw("null" | "true" | "false") => self.primary(),
            Tok::Punct("[" | "{") => self.primary(),
            Tok::Punct("-") if matches!(self.peek_at(1), Tok::Int(_) | Tok::BigInt(_) | Tok::Float(_)) => self.unary(),
            _ => Err(ParseError {
                kind: ErrorKind::ParserException,
                message: format!("Syntax error at {}: a default value must be a constant", describe(self.peek())),
                span: self.error_span(),
            }),
        }
    }

    fn block(&mut self) -> PResult<Block> {
        self.enter()?;
        let mut out = Vec::new();
        while !self.is_kw("end") {
            if matches!(self.peek(), Tok::Eof) {
                return self.unexpected("'end'");
            }
            out.push(self.stmt()?);
        }
        self.bump();
        self.depth -= 1;
        Ok(out)
    }

    fn stmt(&mut self) -> PResult<Stmt> {
        let start = self.span();
        if self.eat_kw("for") {
            self.enter()?;
            // Inmanta does not check a loop variable for hyphens
            let var = self.id("a loop variable")?;
            self.expect_kw("in")?;
            let iter = self.expr()?;
            self.expect_p(":")?;
            let body = self.block()?;
            self.depth -= 1;
            return Ok(Stmt::For { var, iter, body, span: start.to(self.prev_span()) });
        }
        if self.eat_kw("if") {
            self.enter()?;
            let mut branches = Vec::new();
            let mut otherwise = Vec::new();
            let cond = self.expr()?;
            self.expect_p(":")?;
            let mut body = Vec::new();
            let mut cur_cond = cond;
            loop {
                if self.is_kw("elif") {
                    self.bump();
                    branches.push((cur_cond, std::mem::take(&mut body)));
                    cur_cond = self.expr()?;
                    self.expect_p(":")?;
                    continue;
                }
                if self.is_kw("else") {
                    self.bump();
                    self.expect_p(":")?;
                    branches.push((cur_cond, std::mem::take(&mut body)));
                    while !self.is_kw("end") {
                        if matches!(self.peek(), Tok::Eof) {
                            return self.unexpected("'end'");
                        }
                        otherwise.push(self.stmt()?);
                    }
                    self.bump();
                    break;
                }
                if self.is_kw("end") {
                    self.bump();
                    branches.push((cur_cond, std::mem::take(&mut body)));
                    break;
                }
                if matches!(self.peek(), Tok::Eof) {
                    return self.unexpected("'end'");
                }
                body.push(self.stmt()?);
            }
            self.depth -= 1;
            return Ok(Stmt::If { branches, otherwise, span: start.to(self.prev_span()) });
        }
        let e = self.expr()?;
        if self.is_p("=") || self.is_p("+=") {
            let add = self.is_p("+=");
            self.bump();
            match &e.kind {
                ExprKind::Var(n) if !n.contains("::") => {
                    if is_class_name(n) {
                        // a capitalised name is a class name in Inmanta's grammar, never a target
                        self.pos -= 1;
                        let span = self.error_span();
                        return Err(ParseError {
                            kind: ErrorKind::ParserException,
                            message: "Syntax error at token =".into(),
                            span,
                        });
                    }
                    if add {
                        return Err(ParseError {
                            kind: ErrorKind::ParserException,
                            message: format!("Syntax error: Can not perform += on variable {n}"),
                            span: e.span,
                        });
                    }
                    let id = Ident { name: n.clone(), span: e.span };
                    self.check_hyphen(&id);
                }
                ExprKind::Var(_) => {}
                ExprKind::Attr(_, a) => {
                    let a = a.clone();
                    self.check_hyphen(&a);
                }
                _ => {
                    // Inmanta's grammar has no such target: its parser fails at the `=` (as
                    // Inmanta places it), not where the target starts
                    self.pos -= 1;
                    let span = self.error_span();
                    let token = if add { "+=" } else { "=" };
                    return Err(ParseError {
                        kind: ErrorKind::ParserException,
                        message: format!(
                            "Syntax error at token {token}: can only assign to a variable or an attribute"
                        ),
                        span,
                    });
                }
            }
            let value = self.expr()?;
            let span = start.to(self.prev_span());
            return Ok(Stmt::Assign { target: e, value, add, span });
        }
        // any expression is a statement in Inmanta's grammar; its value is computed and dropped
        Ok(Stmt::Expr(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expr(src: &str) -> Expr {
        let mut id = 0;
        let parsed = parse(0, &format!("x = {src}\n"), &mut id).unwrap_or_else(|e| panic!("{}", e.message));
        match parsed.file.items.into_iter().next() {
            Some(Top::Stmt(Stmt::Assign { value, .. })) => value,
            other => panic!("not an assignment: {other:?}"),
        }
    }

    /// A compact rendering of the tree, to check precedence and associativity.
    fn show(e: &Expr) -> String {
        match &e.kind {
            ExprKind::Int(i) => i.to_string(),
            ExprKind::Bool(b) => b.to_string(),
            ExprKind::Var(v) => v.clone(),
            ExprKind::Binary(op, l, r) => format!("({} {} {})", show(l), op.symbol(), show(r)),
            ExprKind::Not(i) => format!("(not {})", show(i)),
            ExprKind::Cond(c, a, b) => format!("({} ? {} : {})", show(c), show(a), show(b)),
            ExprKind::Attr(o, a) => format!("{}.{}", show(o), a.name),
            ExprKind::IsDefined(i) => format!("({} is defined)", show(i)),
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn precedence() {
        assert_eq!(show(&expr("1 + 2 * 3")), "(1 + (2 * 3))");
        assert_eq!(show(&expr("2 ** 3 ** 2")), "((2 ** 3) ** 2)");
        assert_eq!(show(&expr("a or b and c")), "(a or (b and c))");
        assert_eq!(show(&expr("not a == b")), "((not a) == b)");
        assert_eq!(show(&expr("not a in l")), "(not (a in l))");
        assert_eq!(show(&expr("a not in l or b")), "((a not in l) or b)");
        assert_eq!(show(&expr("a ? 1 : b ? 2 : 3")), "(a ? 1 : (b ? 2 : 3))");
        assert_eq!(show(&expr("a - 1 - 2")), "((a - 1) - 2)");
        assert_eq!(show(&expr("a -1")), "(a - 1)");
        assert_eq!(show(&expr("s.x is defined and true")), "((s.x is defined) and true)");
    }

    #[test]
    fn negative_literals() {
        assert_eq!(show(&expr("-3")), "-3");
        assert_eq!(show(&expr("(-3)")), "-3");
    }

    #[test]
    fn interpolation_parts_only_dotted_names() {
        let parts = interpolation_parts("a {{ b.c }} {{ d + e }}", Span::default());
        assert!(matches!(&parts[1], StrPart::Var(p, _) if p == &["b", "c"]));
        assert!(matches!(parts.last(), Some(StrPart::Lit(l)) if l == " {{ d + e }}"));
    }

    #[test]
    fn fstring_fields() {
        let parts = parse_fstring("{a.b:>{w}} {{x}}", Span::default(), 0).expect("valid");
        assert!(matches!(&parts[0], FPart::Field { path, spec, .. } if path == &["a", "b"] && spec.len() == 2));
        assert!(matches!(&parts[1], FPart::Lit(l) if l == " {x}"));
        // not a dotted name: looked up whole when the string runs, as Inmanta does
        let parts = parse_fstring("{a=}", Span::default(), 0).expect("valid");
        assert!(matches!(&parts[0], FPart::Field { path, .. } if path == &["a="]));
        assert!(parse_fstring("{", Span::default(), 0).is_err());
    }
}
