//! The resource a handler works on, and where file contents come from.

use serde_json::{Map, Value};

use crate::handler::HandlerError;

/// One exported resource to deploy: its id, version and attributes (the resource dict without
/// `id` and `requires`).
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceRequest {
    pub id: api::ResourceId,
    pub version: i64,
    pub attributes: Map<String, Value>,
}

/// File contents by sha1 hash; the server supplies one that reads its file store.
pub trait FileSource: Send + Sync {
    fn get(&self, hash: &str) -> Result<Vec<u8>, String>;
}

/// A [`FileSource`] that has no files (for executors that never deploy `fs::File`).
pub struct NoFiles;

impl FileSource for NoFiles {
    fn get(&self, hash: &str) -> Result<Vec<u8>, String> {
        Err(format!("no file store: content {hash} is not available"))
    }
}

impl ResourceRequest {
    /// Builds a request from an exported resource dict (with `id` as an rvid; `requires` is dropped).
    pub fn from_json(resource: &Value) -> Result<ResourceRequest, String> {
        let Value::Object(obj) = resource else {
            return Err("a resource must be a JSON object".into());
        };
        let id = obj.get("id").and_then(Value::as_str).ok_or("the resource has no string `id`")?;
        let (id, version) = api::ResourceId::parse_versioned(id).map_err(|e| e.to_string())?;
        let mut attributes = obj.clone();
        attributes.remove("id");
        attributes.remove("requires");
        Ok(ResourceRequest { id, version: version as i64, attributes })
    }

    /// The resource as a dict again, with `id` as an rvid (what external handlers receive).
    pub fn to_json(&self) -> Value {
        let mut obj = self.attributes.clone();
        obj.insert("id".into(), Value::String(self.id.versioned_text(self.version as u64)));
        Value::Object(obj)
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Value> {
        self.attributes.get(name).filter(|v| !v.is_null())
    }

    /// A required string attribute.
    pub(crate) fn str(&self, name: &str) -> Result<&str, HandlerError> {
        match self.attributes.get(name) {
            Some(Value::String(s)) => Ok(s),
            Some(other) => Err(HandlerError::failed(format!("attribute `{name}` must be a string, got {other}"))),
            None => Err(HandlerError::failed(format!("the resource has no attribute `{name}`"))),
        }
    }

    /// An optional string attribute: absent, null and "" are all `None`.
    pub(crate) fn opt_str(&self, name: &str) -> Option<&str> {
        self.get(name).and_then(Value::as_str).filter(|s| !s.is_empty())
    }

    pub(crate) fn bool(&self, name: &str) -> bool {
        self.get(name).and_then(Value::as_bool).unwrap_or(false)
    }

    pub(crate) fn purged(&self) -> bool {
        self.bool("purged")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_json_splits_id_and_drops_requires() {
        let r = ResourceRequest::from_json(&serde_json::json!({
            "id": "fs::File[h,path=/a],v=3", "path": "/a", "requires": ["x"]
        }))
        .unwrap();
        assert_eq!(r.version, 3);
        assert_eq!(r.id.to_string(), "fs::File[h,path=/a]");
        assert!(!r.attributes.contains_key("requires"));
        assert!(!r.attributes.contains_key("id"));
        assert_eq!(r.to_json()["id"], "fs::File[h,path=/a],v=3");
        assert!(ResourceRequest::from_json(&serde_json::json!({"path": "/a"})).is_err());
    }
}
