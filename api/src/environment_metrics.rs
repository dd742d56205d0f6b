//! The answer of `GET /api/v2/metrics` (Inmanta's `EnvironmentMetricsResult`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use crate::state::MetricName;

/// The metrics of one environment over an interval divided into windows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnvironmentMetrics {
    /// The interval, widened to whole hours when the query asked for rounded timestamps.
    pub start: crate::Timestamp,
    pub end: crate::Timestamp,
    /// The end of each window, oldest first.
    pub timestamps: Vec<crate::Timestamp>,
    /// Per metric name, one point per window.
    pub metrics: BTreeMap<String, Vec<MetricPoint>>,
}

/// One window of one metric: nothing recorded, a value, or a value per category (the state of
/// the resources or agents counted). Values are floats, as Inmanta writes them (`0.0` for a
/// rate without events).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MetricPoint {
    None,
    Value(f64),
    ByCategory(BTreeMap<String, f64>),
}

impl MetricPoint {
    /// Records `value` for `category`; `uncategorised` is the category of metrics without one.
    pub fn set(&mut self, category: &str, value: f64, uncategorised: &str) {
        if category == uncategorised {
            *self = MetricPoint::Value(value);
            return;
        }
        match self {
            MetricPoint::ByCategory(values) => {
                values.insert(category.to_string(), value);
            }
            _ => *self = MetricPoint::ByCategory(BTreeMap::from([(category.to_string(), value)])),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_are_written_as_inmanta_writes_them() {
        let points = vec![
            MetricPoint::None,
            MetricPoint::Value(0.0),
            MetricPoint::Value(3.0),
            MetricPoint::ByCategory(BTreeMap::from([("up".to_string(), 1.5)])),
        ];
        assert_eq!(serde_json::to_string(&points).unwrap(), r#"[null,0.0,3.0,{"up":1.5}]"#);
    }
}
