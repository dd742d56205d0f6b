//! Expressions: operators by precedence, postfix chains (calls, attributes, indexes) and primaries.

use super::*;
use crate::diagnostics::ErrorKind;

impl Parser<'_> {
    pub(crate) fn expr(&mut self) -> PResult<Expr> {
        self.enter()?;
        let cond = self.binary(0)?;
        let r = if self.eat_p("?") {
            let a = self.expr()?;
            self.expect_p(":")?;
            let b = self.expr()?;
            let span = cond.span.to(b.span);
            self.mk(ExprKind::Cond(Box::new(cond), Box::new(a), Box::new(b)), span)
        } else {
            cond
        };
        self.depth -= 1;
        Ok(r)
    }

    pub(super) fn binop(&self) -> Option<(BinOp, u8, usize)> {
        // (operator, precedence, tokens)
        Some(match self.peek() {
            Tok::Kw("or") => (BinOp::Or, 1, 1),
            Tok::Kw("and") => (BinOp::And, 2, 1),
            Tok::Punct("==") => (BinOp::Eq, 3, 1),
            Tok::Punct("!=") => (BinOp::Ne, 3, 1),
            Tok::Punct("<") => (BinOp::Lt, 3, 1),
            Tok::Punct(">") => (BinOp::Gt, 3, 1),
            Tok::Punct("<=") => (BinOp::Le, 3, 1),
            Tok::Punct(">=") => (BinOp::Ge, 3, 1),
            Tok::Punct("+") => (BinOp::Add, 4, 1),
            Tok::Punct("-") => (BinOp::Sub, 4, 1),
            Tok::Punct("*") => (BinOp::Mul, 5, 1),
            Tok::Punct("/") => (BinOp::Div, 5, 1),
            Tok::Punct("%") => (BinOp::Mod, 5, 1),
            Tok::Punct("**") => (BinOp::Pow, 6, 1),
            Tok::Kw("in") => (BinOp::In, 8, 1),
            Tok::Kw("not") if matches!(self.peek_at(1), Tok::Kw("in")) => (BinOp::NotIn, 8, 2),
            // A negative literal directly after a value: `a -1` means `a - 1`.
            Tok::Int(i) if *i < 0 => (BinOp::Sub, 4, 0),
            Tok::BigInt(i) if i.sign() == num_bigint::Sign::Minus => (BinOp::Sub, 4, 0),
            Tok::Float(f) if *f < 0.0 => (BinOp::Sub, 4, 0),
            _ => return None,
        })
    }

    pub(super) fn binary(&mut self, min: u8) -> PResult<Expr> {
        let mut lhs = self.unary()?;
        let mut chain = 0;
        while let Some((op, prec, ntok)) = self.binop() {
            if prec < min {
                break;
            }
            chain += 1;
            if chain > MAX_CHAIN {
                return Err(ParseError {
                    kind: ErrorKind::ParserException,
                    message: format!("Syntax error: more than {MAX_CHAIN} operators in one expression"),
                    span: self.span(),
                });
            }
            if ntok == 0 {
                // split a negative literal into '-' and its magnitude
                let t = &mut self.toks[self.pos];
                t.tok = match t.tok {
                    Tok::Int(i) => match i.checked_neg() {
                        Some(n) => Tok::Int(n),
                        None => Tok::BigInt(std::rc::Rc::new(-num_bigint::BigInt::from(i))),
                    },
                    Tok::BigInt(ref i) => {
                        let n = -(**i).clone();
                        match i64::try_from(&n) {
                            Ok(n) => Tok::Int(n),
                            Err(_) => Tok::BigInt(std::rc::Rc::new(n)),
                        }
                    }
                    Tok::Float(f) => Tok::Float(-f),
                    ref other => other.clone(),
                };
                t.span.start += 1;
            }
            for _ in 0..ntok {
                self.bump();
            }
            self.enter()?;
            let rhs = self.binary(prec + 1)?;
            self.depth -= 1;
            let span = lhs.span.to(rhs.span);
            lhs = self.mk(ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)), span);
        }
        Ok(lhs)
    }

    pub(super) fn unary(&mut self) -> PResult<Expr> {
        if self.is_kw("not") {
            let start = self.bump().span;
            self.enter()?;
            // `not` binds tighter than comparisons but looser than `in`
            let inner = self.binary(8)?;
            self.depth -= 1;
            let span = start.to(inner.span);
            return Ok(self.mk(ExprKind::Not(Box::new(inner)), span));
        }
        self.postfix()
    }

    pub(super) fn kwargs_in_brackets(&mut self) -> PResult<Vec<KwArg>> {
        let mut args = Vec::new();
        loop {
            if self.is_p("**") {
                // `**dict` spreads a dict's keys and values (an argument named `**`)
                let span = self.bump().span;
                let value = self.expr()?;
                args.push(KwArg { name: Ident { name: "**".into(), span }, value });
                if !self.eat_p(",") || self.is_p("]") {
                    break;
                }
                continue;
            }
            let name = self.id("an attribute name")?;
            self.expect_p("=")?;
            let value = self.expr()?;
            args.push(KwArg { name, value });
            if !self.eat_p(",") || self.is_p("]") {
                break;
            }
        }
        self.expect_p("]")?;
        Ok(args)
    }

    pub(super) fn call_args(&mut self) -> PResult<Args> {
        let mut args = Args::default();
        while !self.is_p(")") {
            if self.eat_p("**") {
                args.spread.push(self.expr()?);
            } else if matches!(self.peek(), Tok::Id(_)) && matches!(self.peek_at(1), Tok::Punct("=")) {
                let name = self.id("an argument name")?;
                self.bump();
                let value = self.expr()?;
                args.keyword.push(KwArg { name, value });
            } else {
                let e = self.expr()?;
                if !args.keyword.is_empty() {
                    return Err(ParseError {
                        kind: ErrorKind::ParserException,
                        message: "Syntax error: positional argument follows keyword argument".into(),
                        span: e.span,
                    });
                }
                args.positional.push(e);
            }
            if !self.eat_p(",") {
                break;
            }
        }
        self.expect_p(")")?;
        Ok(args)
    }

    pub(super) fn postfix(&mut self) -> PResult<Expr> {
        let mut e = self.primary()?;
        loop {
            if self.is_p(".") {
                // Inmanta's grammar reads attributes of names only (`a.b.c`): not of a constructor,
                // call, index lookup, dict lookup or parenthesised expression.
                let plain_name =
                    matches!(e.kind, ExprKind::Var(_) | ExprKind::Attr(..)) && self.prev_span().end == e.span.end;
                if !plain_name {
                    return Err(ParseError {
                        kind: ErrorKind::ParserException,
                        message: "Syntax error at token . (attributes can only be read from a name: assign to a variable first)".into(),
                        // Inmanta reports this one column past the dot.
                        span: { let dot = self.span(); Span { start: dot.start + 1, end: dot.end + 1, ..dot } },
                    });
                }
                self.bump();
                let attr = self.id("an attribute name")?;
                if self.is_p("(") {
                    return Err(ParseError {
                        kind: ErrorKind::InvalidNamespaceAccess,
                        message: format!(
                            "Invalid namespace access: '.{}(...)': use '::' to call a plugin (e.g. module::{}(...))",
                            attr.name, attr.name
                        ),
                        span: e.span.to(attr.span),
                    });
                }
                let span = e.span.to(attr.span);
                e = self.mk(ExprKind::Attr(Box::new(e), attr), span);
            } else if self.is_p("[") {
                let selector = matches!(self.peek_at(1), Tok::Id(_)) && matches!(self.peek_at(2), Tok::Punct("="));
                self.bump();
                if selector {
                    let ExprKind::Attr(base, attr) = e.kind else {
                        return Err(ParseError {
                            kind: ErrorKind::ParserException,
                            message: "Syntax error: a selector lookup needs the form var.relation[attr=value]".into(),
                            span: e.span,
                        });
                    };
                    let args = self.kwargs_in_brackets()?;
                    let span = e.span.to(self.prev_span());
                    e = self.mk(ExprKind::SelectorLookup { base, attr, args }, span);
                } else {
                    self.enter()?;
                    let key = self.expr()?;
                    self.depth -= 1;
                    self.expect_p("]")?;
                    let span = e.span.to(self.prev_span());
                    e = self.mk(ExprKind::MapLookup(Box::new(e), Box::new(key)), span);
                }
            } else if self.is_kw("is") {
                self.bump();
                self.expect_kw("defined")?;
                if !matches!(e.kind, ExprKind::Var(_) | ExprKind::Attr(..) | ExprKind::MapLookup(..)) {
                    return Err(ParseError {
                        kind: ErrorKind::ParserException,
                        message: "Syntax error: 'is defined' applies to a name, an attribute or a dict lookup".into(),
                        span: e.span,
                    });
                }
                let span = e.span.to(self.prev_span());
                e = self.mk(ExprKind::IsDefined(Box::new(e)), span);
            } else {
                return Ok(e);
            }
        }
    }

    pub(super) fn primary(&mut self) -> PResult<Expr> {
        let start = self.span();
        let tok = self.peek().clone();
        if let Some(kind) = literal(&tok) {
            self.bump();
            return Ok(self.mk(kind, start));
        }
        match tok {
            Tok::Punct("(") => {
                self.bump();
                let mut e = self.expr()?;
                let end = self.expect_p(")")?;
                e.span = start.to(end);
                Ok(e)
            }
            Tok::Str { value, raw, .. } => {
                self.bump();
                if raw {
                    return Ok(self.mk(ExprKind::Str(value), start));
                }
                // no `{` (most literals): nothing to interpolate, no parts to build
                let parts = if value.contains('{') { interpolation_parts(&value, start) } else { Vec::new() };
                if parts.iter().any(|p| matches!(p, StrPart::Var(..))) {
                    Ok(self.mk(ExprKind::Interp(parts), start))
                } else {
                    Ok(self.mk(ExprKind::Str(value), start))
                }
            }
            Tok::FStr(text) => {
                self.bump();
                let parts = parse_fstring(&text, start, 0).map_err(|m| ParseError {
                    kind: ErrorKind::ParserException,
                    message: format!("Syntax error in f-string: {m}"),
                    span: start,
                })?;
                Ok(self.mk(ExprKind::FStr(parts), start))
            }
            Tok::Punct("[") => {
                self.bump();
                if self.eat_p("]") {
                    return Ok(self.mk(ExprKind::List(vec![]), start.to(self.prev_span())));
                }
                let first = self.expr()?;
                if self.is_kw("for") {
                    let mut fors = Vec::new();
                    let mut guards = Vec::new();
                    while self.eat_kw("for") {
                        let var = self.decl_id("a loop variable")?;
                        self.expect_kw("in")?;
                        let it = self.binary(0)?;
                        fors.push((var, it));
                    }
                    while self.eat_kw("if") {
                        guards.push(self.binary(0)?);
                    }
                    self.expect_p("]")?;
                    let span = start.to(self.prev_span());
                    return Ok(self.mk(ExprKind::Comprehension { value: Box::new(first), fors, guards }, span));
                }
                let mut items = vec![first];
                while self.eat_p(",") {
                    if self.is_p("]") {
                        break;
                    }
                    items.push(self.expr()?);
                }
                self.expect_p("]")?;
                Ok(self.mk(ExprKind::List(items), start.to(self.prev_span())))
            }
            Tok::Punct("{") => {
                self.bump();
                let mut pairs = Vec::new();
                while !self.is_p("}") {
                    let key = match self.peek().clone() {
                        Tok::Str { value, raw, .. } => {
                            let ks = self.bump().span;
                            if !raw
                                && value.contains('{')
                                && interpolation_parts(&value, ks).iter().any(|p| matches!(p, StrPart::Var(..)))
                            {
                                return Err(ParseError {
                                    kind: ErrorKind::ParserException,
                                    message: format!(
                                        "Syntax error: string interpolation is not supported in dictionary keys ('{value}'); use a raw string"
                                    ),
                                    span: ks,
                                });
                            }
                            value
                        }
                        _ => return self.unexpected("a string dictionary key"),
                    };
                    self.expect_p(":")?;
                    let v = self.expr()?;
                    pairs.push((key, v));
                    if !self.eat_p(",") {
                        break;
                    }
                }
                self.expect_p("}")?;
                if let Some(k) =
                    pairs.iter().enumerate().find_map(|(i, (k, _))| pairs[..i].iter().any(|(p, _)| p == k).then_some(k))
                {
                    self.errors.push(ParseError {
                        kind: ErrorKind::DuplicateException,
                        message: format!("duplicate key in dict {k}"),
                        span: start.to(self.prev_span()),
                    });
                }
                // a model's data is often thousands of small dict literals: no spare capacity
                pairs.shrink_to_fit();
                Ok(self.mk(ExprKind::Dict(pairs), start.to(self.prev_span())))
            }
            Tok::Id(_) => {
                let r = self.ns_ref("a name")?;
                if self.is_p("(") {
                    self.bump();
                    self.enter()?;
                    let args = self.call_args()?;
                    self.depth -= 1;
                    let span = start.to(self.prev_span());
                    if is_class_name(&r.name) {
                        if !args.positional.is_empty() {
                            return Err(ParseError {
                                kind: ErrorKind::ParserException,
                                message: format!("Syntax error: constructor {} only takes keyword arguments", r.name),
                                // where Inmanta's lexer stands: just past the argument
                                span: Span { start: args.positional[0].span.end, ..args.positional[0].span },
                            });
                        }
                        return Ok(self.mk(ExprKind::Constructor { class: r, args: Box::new(args) }, span));
                    }
                    return Ok(self.mk(ExprKind::Call { name: r, args: Box::new(args) }, span));
                }
                if is_class_name(&r.name) && self.is_p("[") {
                    self.bump();
                    self.enter()?;
                    let args = self.kwargs_in_brackets()?;
                    self.depth -= 1;
                    let span = start.to(self.prev_span());
                    return Ok(self.mk(ExprKind::IndexLookup { class: r, args }, span));
                }
                if is_class_name(&r.name) && !self.is_p(".") {
                    // a class name alone is no expression in Inmanta's grammar: it needs a
                    // constructor's `(` or an index lookup's `[`
                    return self.unexpected("'(' or '[' after a class name");
                }
                Ok(self.mk(ExprKind::Var(r.name), r.span))
            }
            _ => {
                let _ = self.file;
                self.unexpected("an expression")
            }
        }
    }
}
