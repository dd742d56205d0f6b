//! `std::testing::NullResource`: does nothing, or fails when `fail` is true.

use crate::handler::{Handler, HandlerContext, HandlerError};
use crate::resource::ResourceRequest;

pub(crate) struct NullHandler;

impl Handler for NullHandler {
    fn run(&self, ctx: &mut HandlerContext<'_>, resource: &ResourceRequest) -> Result<(), HandlerError> {
        if resource.bool("fail") {
            return Err(HandlerError::failed("this NullResource has fail=true"));
        }
        ctx.debug("nothing to do");
        Ok(())
    }
}
