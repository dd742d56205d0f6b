//! Server status (`GET /api/v1/serverstatus`).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatusResponse {
    pub product: String,
    pub edition: String,
    pub version: String,
    pub license: String,
    pub extensions: Vec<Extension>,
    pub slices: Vec<Slice>,
    pub features: Vec<Feature>,
    pub status: ReportedStatus,
    pub python_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub postgresql_version: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Extension {
    pub name: String,
    pub version: String,
    pub package: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Slice {
    pub name: String,
    pub status: serde_json::Value,
    pub reported_status: ReportedStatus,
    pub message: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Feature {
    pub slice: String,
    pub name: String,
    pub value: serde_json::Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReportedStatus {
    #[serde(rename = "OK")]
    Ok,
    Warning,
    Error,
}
