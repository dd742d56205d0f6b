//! Paging of v2 list endpoints (reference/api.md §2): links and metadata on the wire.

use serde::{Deserialize, Serialize};

/// `links` of a paged response. URLs are server-relative.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Links {
    #[serde(rename = "self")]
    pub self_: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prev: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first: Option<String>,
}

/// `metadata` of a paged response.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PageMetadata {
    pub total: u64,
    pub before: u64,
    pub after: u64,
    pub page_size: u64,
}

/// Default and maximum page size.
pub const MAX_LIMIT: u64 = 1000;
