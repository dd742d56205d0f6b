//! Paging of v2 list endpoints (docs/api.md, "Paging, filtering, sorting"): links and metadata on the wire.

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

/// Paging, sorting and filtering of a v2 list (`/api/v2/resource`, `/api/v2/desiredstate`,
/// `/api/v2/compilereport`, `/api/v2/agents`, ...): `limit`, `sort`, `start`/`end`,
/// `first_id`/`last_id` and `filter.<name>` (which may repeat, e.g. `filter.version=ge:2`).
/// Clients build it into a query string; the server reads it back pair by pair.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListQuery {
    pub filters: Vec<(String, String)>,
    /// `<column>.asc` or `<column>.desc`.
    pub sort: Option<String>,
    pub limit: Option<u64>,
    pub start: Option<String>,
    pub end: Option<String>,
    pub first_id: Option<String>,
    pub last_id: Option<String>,
}

impl ListQuery {
    pub fn new() -> ListQuery {
        ListQuery::default()
    }

    /// Adds `filter.<name>=<value>`.
    pub fn filter(mut self, name: &str, value: impl Into<String>) -> ListQuery {
        self.filters.push((name.to_string(), value.into()));
        self
    }

    pub fn sort(mut self, sort: impl Into<String>) -> ListQuery {
        self.sort = Some(sort.into());
        self
    }

    pub fn limit(mut self, limit: u64) -> ListQuery {
        self.limit = Some(limit);
        self
    }

    /// Takes one query parameter when it is one of a list's (`limit`, `sort`, `start`, `end`,
    /// `first_id`, `last_id`, `filter.<name>`); others are left to the caller. The error says
    /// what is wrong with the value.
    pub fn take_pair(&mut self, key: &str, value: &str) -> Result<(), String> {
        match key {
            "limit" => {
                self.limit = Some(value.parse().map_err(|_| format!("limit must be a positive number, got {value:?}"))?)
            }
            "sort" => self.sort = Some(value.to_string()),
            "start" => self.start = Some(value.to_string()),
            "end" => self.end = Some(value.to_string()),
            "first_id" => self.first_id = Some(value.to_string()),
            "last_id" => self.last_id = Some(value.to_string()),
            _ => {
                if let Some(name) = key.strip_prefix("filter.") {
                    self.filters.push((name.to_string(), value.to_string()));
                }
            }
        }
        Ok(())
    }

    /// The parameters as `(key, value)` pairs, unencoded.
    pub fn pairs(&self) -> Vec<(String, String)> {
        let mut pairs: Vec<(String, String)> =
            self.filters.iter().map(|(name, value)| (format!("filter.{name}"), value.clone())).collect();
        let optional = [
            ("sort", self.sort.clone()),
            ("limit", self.limit.map(|l| l.to_string())),
            ("start", self.start.clone()),
            ("end", self.end.clone()),
            ("first_id", self.first_id.clone()),
            ("last_id", self.last_id.clone()),
        ];
        pairs.extend(optional.into_iter().filter_map(|(key, value)| value.map(|v| (key.to_string(), v))));
        pairs
    }

    /// `?k=v&...` (percent-encoded), or the empty string without parameters.
    pub fn to_query(&self) -> String {
        crate::url::query_string(&self.pairs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_query_reads_back_the_pairs_it_writes() {
        let query = ListQuery {
            start: Some("a".into()),
            first_id: Some("b".into()),
            ..ListQuery::new().filter("version", "ge:2").filter("version", "le:4").sort("date.desc").limit(5)
        };
        let mut read = ListQuery::new();
        for (key, value) in query.pairs().into_iter().chain([("other".to_string(), "x".to_string())]) {
            read.take_pair(&key, &value).unwrap();
        }
        assert_eq!(read, query);
        assert_eq!(read.take_pair("limit", "-1").unwrap_err(), "limit must be a positive number, got \"-1\"");
    }
}
