//! `std::testing::NullResource`: a CRUD handler that changes nothing outside the orchestrator,
//! or fails when `fail` is true. It logs what Inmanta's handler logs (the observed values), so
//! the resource's log reads the same against either server.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::handler::{AttributeChange, CrudHandler, HandlerContext, HandlerError};
use crate::resource::ResourceRequest;

pub(crate) struct NullHandler;

impl CrudHandler for NullHandler {
    fn read(
        &self,
        ctx: &mut HandlerContext<'_>,
        desired: &ResourceRequest,
    ) -> Result<Option<Map<String, Value>>, HandlerError> {
        if desired.bool("fail") {
            return Err(HandlerError::failed("This resource is set to fail"));
        }
        for (attribute, what) in [("value", "value"), ("int_value", "int value")] {
            let value = desired.attributes.get(attribute).cloned().unwrap_or(Value::Null);
            let shown = match &value {
                Value::String(s) => s.clone(),
                Value::Null => "None".into(),
                Value::Bool(b) => if *b { "True" } else { "False" }.into(),
                other => other.to_string(),
            };
            ctx.log("DEBUG", format!("Observed {what}: {shown}"), Map::from_iter([("value".to_string(), value)]));
        }
        // Exists as desired: only `purged` can differ.
        let mut current = desired.attributes.clone();
        current.insert("purged".into(), Value::Bool(false));
        Ok(Some(current))
    }

    fn create(&self, _ctx: &mut HandlerContext<'_>, _desired: &ResourceRequest) -> Result<(), HandlerError> {
        Ok(())
    }

    fn update(
        &self,
        _ctx: &mut HandlerContext<'_>,
        _changes: &BTreeMap<String, AttributeChange>,
        _desired: &ResourceRequest,
    ) -> Result<(), HandlerError> {
        Ok(())
    }

    fn delete(&self, _ctx: &mut HandlerContext<'_>, _desired: &ResourceRequest) -> Result<(), HandlerError> {
        Ok(())
    }
}
