//! Query strings of the list endpoints, built from typed parameters.

use uuid::Uuid;

pub use crate::paging::ListQuery;
use crate::url::query_string;

/// The filters of `GET /api/v2/resource_actions`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ActionQuery {
    pub resource_type: Option<String>,
    pub agent: Option<String>,
    pub attribute: Option<String>,
    pub attribute_value: Option<String>,
    pub log_severity: Option<String>,
    pub first_timestamp: Option<crate::Timestamp>,
    pub last_timestamp: Option<crate::Timestamp>,
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
            ("first_timestamp", &self.first_timestamp.map(|t| t.to_string())),
            ("last_timestamp", &self.last_timestamp.map(|t| t.to_string())),
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
