//! The attribute assignments of an `if` statement's branches, checked when the `if` runs, as
//! Inmanta's eager promises are: it acquires a promise on every attribute its branches may assign
//! (the branch taken or not), and looking that attribute up on the instance fails when the
//! entity has no such attribute, even in a branch that never runs (`if false: self.x = 1`).
//!
//! Only `name.attribute = ...` is checked, where `name` is a variable of the enclosing scope that
//! already holds an instance; a deeper path or a variable still waiting is left to the assignment
//! itself, should it run.

use super::value::Value;
use super::{EResult, Evaluator, error, expr};
use crate::diagnostics::ErrorKind;
use crate::syntax::ast::{Block, ExprKind, Stmt};

impl<'a> Evaluator<'a> {
    /// Fails when a branch assigns an attribute the instance's entity lacks.
    pub(super) fn check_branch_promises(&mut self, branches: &[&'a Block], cx: &expr::Cx<'_>) -> EResult<()> {
        for block in branches {
            self.check_block_promises(block, &mut Vec::new(), cx, 0)?;
        }
        Ok(())
    }

    fn check_block_promises(
        &mut self,
        block: &'a Block,
        declared: &mut Vec<&'a str>,
        cx: &expr::Cx<'_>,
        depth: usize,
    ) -> EResult<()> {
        if depth > 16 {
            return Ok(());
        }
        // a variable the block declares is another one than the enclosing scope's
        let mark = declared.len();
        for s in block {
            if let Stmt::Assign { target, .. } = s
                && let ExprKind::Var(name) = &target.kind
            {
                declared.push(name);
            }
        }
        for s in block {
            match s {
                Stmt::Assign { target, .. } => {
                    if let ExprKind::Attr(base, attr) = &target.kind
                        && let ExprKind::Var(name) = &base.kind
                        && !declared.contains(&name.as_str())
                        && let Some(inst) = self.instance_in_scope(cx, name)
                    {
                        let ent = &self.m.types.entities[self.m.instances[inst as usize].entity];
                        if ent.attr(&attr.name).is_none() {
                            return Err(error(
                                ErrorKind::NotFoundException,
                                format!("Entity {} has no attribute {}", ent.name, attr.name),
                                attr.span,
                                self.m.sources,
                            ));
                        }
                    }
                }
                Stmt::If { branches, otherwise, .. } => {
                    for (_, b) in branches {
                        self.check_block_promises(b, declared, cx, depth + 1)?;
                    }
                    self.check_block_promises(otherwise, declared, cx, depth + 1)?;
                }
                Stmt::For { var, body, .. } => {
                    declared.push(var.name.as_str());
                    let r = self.check_block_promises(body, declared, cx, depth + 1);
                    declared.pop();
                    r?;
                }
                Stmt::Expr(_) => {}
            }
        }
        declared.truncate(mark);
        Ok(())
    }

    /// The instance a variable of the scope holds now, without waiting for it.
    fn instance_in_scope(&self, cx: &expr::Cx<'_>, name: &str) -> Option<super::value::InstId> {
        let sc = self.lookup_decl(cx.scope, name)?;
        match &self.m.scopes[sc as usize].vars.get(name)?.value {
            Some((Value::Instance(i), _)) => Some(*i),
            _ => None,
        }
    }
}
