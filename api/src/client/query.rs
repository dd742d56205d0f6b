//! Query strings of the list endpoints, built from typed parameters.

use uuid::Uuid;

use crate::url::encode;

/// Paging, sorting and filtering of a v2 list (`/api/v2/resource`, `/api/v2/desiredstate`,
/// `/api/v2/compilereport`, `/api/v2/agents`, ...): `limit`, `sort`, `start`/`end`,
/// `first_id`/`last_id` and `filter.<name>` (which may repeat, e.g. `filter.version=ge:2`).
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
        query_string(&self.pairs())
    }
}

/// The filters of `GET /api/v2/resource_actions`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ActionQuery {
    pub resource_type: Option<String>,
    pub agent: Option<String>,
    pub attribute: Option<String>,
    pub attribute_value: Option<String>,
    pub log_severity: Option<String>,
    pub first_timestamp: Option<String>,
    pub last_timestamp: Option<String>,
    pub exclude_changes: Vec<String>,
    pub limit: Option<u64>,
    pub action_id: Option<Uuid>,
}

impl ActionQuery {
    /// `?k=v&...` (percent-encoded), or the empty string without parameters.
    pub fn to_query(&self) -> String {
        let mut pairs: Vec<(String, String)> = [
            ("resource_type", &self.resource_type),
            ("agent", &self.agent),
            ("attribute", &self.attribute),
            ("attribute_value", &self.attribute_value),
            ("log_severity", &self.log_severity),
            ("first_timestamp", &self.first_timestamp),
            ("last_timestamp", &self.last_timestamp),
        ]
        .into_iter()
        .filter_map(|(key, value)| value.clone().map(|v| (key.to_string(), v)))
        .collect();
        pairs.extend(self.exclude_changes.iter().map(|c| ("exclude_changes".to_string(), c.clone())));
        pairs.extend(self.limit.map(|l| ("limit".to_string(), l.to_string())));
        pairs.extend(self.action_id.map(|id| ("action_id".to_string(), id.to_string())));
        query_string(&pairs)
    }
}

fn query_string(pairs: &[(String, String)]) -> String {
    if pairs.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = pairs.iter().map(|(k, v)| format!("{}={}", encode(k), encode(v))).collect();
    format!("?{}", parts.join("&"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_queries_encode_filters_sort_and_limit() {
        assert_eq!(ListQuery::new().to_query(), "");
        let query = ListQuery::new().filter("version", "ge:2").filter("agent", "a b").sort("resource_id.asc").limit(5);
        assert_eq!(query.to_query(), "?filter.version=ge%3A2&filter.agent=a%20b&sort=resource_id.asc&limit=5");
        let actions = ActionQuery {
            agent: Some("x".into()),
            exclude_changes: vec!["nochange".into()],
            limit: Some(2),
            ..Default::default()
        };
        assert_eq!(actions.to_query(), "?agent=x&exclude_changes=nochange&limit=2");
    }
}
