//! Environment settings: values, definitions and the catalogue of every setting
//! (routes and the values each takes: docs/api.md).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A setting value as it travels on the wire: JSON bool, number, string or object.
///
/// Deserialised by hand through `serde_json::Value`: with serde_json's `arbitrary_precision`
/// (on for exact big ints in resources) an untagged enum sees a float as a map and would read
/// `1.5` as a `Dict`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum SettingValue {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Dict(serde_json::Map<String, serde_json::Value>),
}

impl<'de> Deserialize<'de> for SettingValue {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match serde_json::Value::deserialize(deserializer)? {
            serde_json::Value::Bool(b) => Ok(SettingValue::Bool(b)),
            serde_json::Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    Ok(SettingValue::Int(i))
                } else if let Some(x) = n.as_f64().filter(|x| x.is_finite()) {
                    Ok(SettingValue::Float(x))
                } else {
                    Err(D::Error::custom(format!("setting value {n} is out of range")))
                }
            }
            serde_json::Value::String(s) => Ok(SettingValue::Str(s)),
            serde_json::Value::Object(d) => Ok(SettingValue::Dict(d)),
            other => Err(D::Error::custom(format!("a setting value is a bool, number, string or object, not {other}"))),
        }
    }
}

impl SettingValue {
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            SettingValue::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn as_int(&self) -> Option<i64> {
        match self {
            SettingValue::Int(i) => Some(*i),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            SettingValue::Str(s) => Some(s),
            _ => None,
        }
    }
}

impl From<bool> for SettingValue {
    fn from(value: bool) -> Self {
        SettingValue::Bool(value)
    }
}

impl From<i64> for SettingValue {
    fn from(value: i64) -> Self {
        SettingValue::Int(value)
    }
}

impl From<f64> for SettingValue {
    fn from(value: f64) -> Self {
        SettingValue::Float(value)
    }
}

impl From<&str> for SettingValue {
    fn from(value: &str) -> Self {
        SettingValue::Str(value.to_string())
    }
}

impl From<String> for SettingValue {
    fn from(value: String) -> Self {
        SettingValue::Str(value)
    }
}

impl From<serde_json::Map<String, serde_json::Value>> for SettingValue {
    fn from(value: serde_json::Map<String, serde_json::Value>) -> Self {
        SettingValue::Dict(value)
    }
}

impl std::fmt::Display for SettingValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SettingValue::Bool(b) => write!(f, "{b}"),
            SettingValue::Int(i) => write!(f, "{i}"),
            SettingValue::Float(x) => write!(f, "{x}"),
            SettingValue::Str(s) => write!(f, "{s}"),
            SettingValue::Dict(d) => write!(f, "{}", serde_json::Value::Object(d.clone())),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SettingType {
    Bool,
    Int,
    Str,
    PositiveFloat,
    Enum,
    Dict,
}

/// `EnvironmentSettingDefinition` on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SettingDefinition {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: SettingType,
    pub default: SettingValue,
    pub doc: String,
    pub recompile: bool,
    pub update_model: bool,
    pub agent_restart: bool,
    #[serde(default)]
    pub allowed_values: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
    #[serde(default)]
    pub protected: bool,
    #[serde(default)]
    pub protected_by: Option<String>,
}

/// `EnvironmentSettingsReponse` (sic, Inmanta's spelling) of the v2 settings endpoints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnvironmentSettings {
    pub settings: BTreeMap<String, SettingValue>,
    pub definition: BTreeMap<String, SettingDefinition>,
}

/// Body of `POST /api/v1|v2/environment_settings/<name>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SettingSet {
    pub value: serde_json::Value,
}

/// Body of `POST /api/v2/protected_environment_settings`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProtectedSettingsSet {
    pub settings: BTreeMap<String, serde_json::Value>,
    pub protected_by: String,
}

/// The well-known setting names, so no caller spells them by hand.
pub mod names {
    pub const AUTO_DEPLOY: &str = "auto_deploy";
    pub const DEPLOY_INTERVAL: &str = "autostart_agent_deploy_interval";
    pub const REPAIR_INTERVAL: &str = "autostart_agent_repair_interval";
    pub const RESET_DEPLOY_PROGRESS_ON_START: &str = "reset_deploy_progress_on_start";
    pub const REDEPLOY_FAILED_ON_EXPORT: &str = "redeploy_failed_on_export";
    pub const AUTOSTART_ON_START: &str = "autostart_on_start";
    pub const SERVER_COMPILE: &str = "server_compile";
    pub const AUTO_FULL_COMPILE: &str = "auto_full_compile";
    pub const RESOURCE_ACTION_LOGS_RETENTION: &str = "resource_action_logs_retention";
    pub const AVAILABLE_VERSIONS_TO_KEEP: &str = "available_versions_to_keep";
    pub const PROTECTED_ENVIRONMENT: &str = "protected_environment";
    pub const NOTIFICATION_RETENTION: &str = "notification_retention";
    pub const RECOMPILE_BACKOFF: &str = "recompile_backoff";
    pub const ENVIRONMENT_METRICS_RETENTION: &str = "environment_metrics_retention";
    /// This project's addition: handlers that can watch (files) report drift at once.
    pub const REALTIME_REPAIR: &str = "realtime_repair";
}

/// Settings that Inmanta removed; old clients may still send them and get a 404.
pub const REMOVED_SETTINGS: &[&str] = &[
    "push_on_auto_deploy",
    "agent_trigger_method_on_auto_deploy",
    "environment_agent_trigger_method",
    "autostart_agent_map",
    "autostart_agent_deploy_splay",
    "autostart_agent_repair_splay",
    "purge_on_delete",
];

/// Every environment setting with its type, default and documentation.
pub fn definitions() -> Vec<SettingDefinition> {
    use names::*;
    fn def(name: &str, kind: SettingType, default: SettingValue, section: &str, doc: &str) -> SettingDefinition {
        SettingDefinition {
            name: name.to_string(),
            kind,
            default,
            doc: doc.to_string(),
            recompile: false,
            update_model: false,
            agent_restart: false,
            allowed_values: None,
            section: Some(section.to_string()),
            protected: false,
            protected_by: None,
        }
    }
    let s = |v: &str| SettingValue::Str(v.to_string());
    vec![
        def(
            AUTO_DEPLOY,
            SettingType::Bool,
            SettingValue::Bool(true),
            "deploy",
            "When this boolean is set to true, the orchestrator will automatically release a new version that was compiled by the orchestrator itself.",
        ),
        def(
            DEPLOY_INTERVAL,
            SettingType::Str,
            s("600"),
            "agent",
            "The deployment interval of the autostarted agents. Either a number of seconds to wait before retrying an unsuccessful deploy, per resource, or a cron-like expression for one global deploy of all divergent resources (UTC). Set to 0 to disable; as a number it must be smaller than the repair interval.",
        ),
        def(
            REALTIME_REPAIR,
            SettingType::Bool,
            SettingValue::Bool(true),
            "agent",
            "Watch deployed files, directories and symlinks on local hosts and repair a change made outside the orchestrator at once, instead of at the next repair interval.",
        ),
        def(
            REPAIR_INTERVAL,
            SettingType::Str,
            s("86400"),
            "agent",
            "The repair interval of the autostarted agents. Either a number of seconds after the last deploy of a resource before it is deployed again regardless of its state, or a cron-like expression for one global repair (UTC). Set to 0 to disable.",
        ),
        SettingDefinition {
            agent_restart: true,
            ..def(
                RESET_DEPLOY_PROGRESS_ON_START,
                SettingType::Bool,
                SettingValue::Bool(false),
                "scheduler",
                "On scheduler start, rebuild the deploy state from the last known deploy state instead of resuming where it was.",
            )
        },
        def(
            REDEPLOY_FAILED_ON_EXPORT,
            SettingType::Bool,
            SettingValue::Bool(false),
            "deploy",
            "When a new version is released, mark resources that failed their last deploy for redeploy even when their desired state did not change.",
        ),
        def(
            AUTOSTART_ON_START,
            SettingType::Bool,
            SettingValue::Bool(true),
            "agent",
            "Start the scheduler of this environment when the server starts, rather than on first need.",
        ),
        def(
            SERVER_COMPILE,
            SettingType::Bool,
            SettingValue::Bool(true),
            "compiler",
            "Allow the server to compile the configuration model.",
        ),
        def(
            AUTO_FULL_COMPILE,
            SettingType::Str,
            s(""),
            "compiler",
            "Periodically run a full compile following a cron-like time-to-run specification (UTC). Empty disables it; ignored when server_compile is off.",
        ),
        def(
            RESOURCE_ACTION_LOGS_RETENTION,
            SettingType::Int,
            SettingValue::Int(7),
            "storage",
            "The number of days to retain resource-action logs.",
        ),
        def(
            AVAILABLE_VERSIONS_TO_KEEP,
            SettingType::Int,
            SettingValue::Int(100),
            "storage",
            "The number of versions to keep stored in the database, besides the latest released one.",
        ),
        def(
            PROTECTED_ENVIRONMENT,
            SettingType::Bool,
            SettingValue::Bool(false),
            "environment",
            "When set to true, this environment cannot be cleared or deleted.",
        ),
        def(
            NOTIFICATION_RETENTION,
            SettingType::Int,
            SettingValue::Int(365),
            "storage",
            "The number of days to retain notifications.",
        ),
        def(
            RECOMPILE_BACKOFF,
            SettingType::PositiveFloat,
            SettingValue::Float(0.1),
            "compiler",
            "The number of seconds to wait before the server may attempt a new recompile (e.g. triggered by a fact).",
        ),
        def(
            ENVIRONMENT_METRICS_RETENTION,
            SettingType::Int,
            SettingValue::Int(336),
            "storage",
            "The number of hours environment metrics are retained; 0 disables the cleanup.",
        ),
    ]
}

/// Why a value does not fit a setting.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidSetting(pub String);

/// The longest interval a timer setting takes, in seconds (10 years): longer ones are off in all
/// but name, and much longer ones overflow the timers' clocks; 0 turns a timer off.
pub const MAX_INTERVAL_SECONDS: i64 = 10 * 365 * 86_400;
/// The longest retention in days (100 years).
pub const MAX_RETENTION_DAYS: i64 = 36_500;
/// The longest `recompile_backoff`, in seconds (a day).
pub const MAX_RECOMPILE_BACKOFF: f64 = 86_400.0;

/// What a setting's value means beyond its JSON type, and so which values make sense. Inmanta
/// checks only the type (and that a cron expression parses), which lets `-1` turn a timer off
/// without a word; these rules refuse such values instead (docs/configuration.md).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Meaning {
    /// Every value of the type.
    Any,
    /// A whole number of seconds from 0 (off) to [`MAX_INTERVAL_SECONDS`], or a cron expression
    /// that names a time to come.
    IntervalOrCron,
    /// Empty (off) or a cron expression that names a time to come.
    CronOrEmpty,
    /// A whole number from `min` to `max`, counted in `unit`.
    Range { min: i64, max: i64, unit: &'static str },
    /// A number of seconds from 0 to `max`.
    Seconds { max: f64 },
}

impl Meaning {
    /// The rule of the setting `name`.
    pub fn of(name: &str) -> Meaning {
        use names::*;
        // Inmanta keeps integer settings in a PostgreSQL `integer`.
        const MAX_INT: i64 = i32::MAX as i64;
        match name {
            DEPLOY_INTERVAL | REPAIR_INTERVAL => Meaning::IntervalOrCron,
            AUTO_FULL_COMPILE => Meaning::CronOrEmpty,
            RESOURCE_ACTION_LOGS_RETENTION | NOTIFICATION_RETENTION => {
                Meaning::Range { min: 1, max: MAX_RETENTION_DAYS, unit: "days" }
            }
            // 0 would delete a version as soon as it is stored, unless it is released at once.
            AVAILABLE_VERSIONS_TO_KEEP => Meaning::Range { min: 1, max: MAX_INT, unit: "versions" },
            ENVIRONMENT_METRICS_RETENTION => Meaning::Range { min: 0, max: MAX_RETENTION_DAYS * 24, unit: "hours" },
            RECOMPILE_BACKOFF => Meaning::Seconds { max: MAX_RECOMPILE_BACKOFF },
            _ => Meaning::Any,
        }
    }

    /// What a value of this meaning is, for messages.
    fn expected(self) -> String {
        const CRON: &str = "a cron expression ([sec] min hour dom month dow [year], UTC) that names a time to come";
        match self {
            Meaning::Any => "a value of the setting's type".to_string(),
            Meaning::IntervalOrCron => {
                format!("a whole number of seconds from 0 (off) to {MAX_INTERVAL_SECONDS}, or {CRON}")
            }
            Meaning::CronOrEmpty => format!("an empty string (off) or {CRON}"),
            Meaning::Range { min, max, unit } => format!("a whole number of {unit} from {min} to {max}"),
            Meaning::Seconds { max } => format!("a number of seconds from 0 to {max}"),
        }
    }
}

impl SettingDefinition {
    /// Check `value` against this setting's type and meaning ([`Meaning`]) and return it in
    /// canonical form. Strings that spell a value of the setting's type are accepted, as the CLI
    /// sends strings.
    pub fn validate(&self, value: &serde_json::Value) -> Result<SettingValue, InvalidSetting> {
        use serde_json::Value;
        let meaning = Meaning::of(&self.name);
        let wrong =
            |what: &str| InvalidSetting(format!("invalid value {value} for setting {}: expected {what}", self.name));
        let parsed = match (self.kind, value) {
            (SettingType::Bool, Value::Bool(b)) => SettingValue::Bool(*b),
            (SettingType::Bool, Value::String(s)) => match s.to_ascii_lowercase().as_str() {
                "true" | "yes" | "1" => SettingValue::Bool(true),
                "false" | "no" | "0" => SettingValue::Bool(false),
                _ => return Err(wrong("a boolean")),
            },
            (SettingType::Int, Value::Number(n)) => SettingValue::Int(n.as_i64().ok_or_else(|| wrong("an integer"))?),
            (SettingType::Int, Value::String(s)) => {
                SettingValue::Int(s.trim().parse().map_err(|_| wrong("an integer"))?)
            }
            (SettingType::PositiveFloat, Value::Number(n)) => {
                SettingValue::Float(n.as_f64().ok_or_else(|| wrong("a positive number"))?)
            }
            (SettingType::PositiveFloat, Value::String(s)) => {
                SettingValue::Float(s.trim().parse().map_err(|_| wrong("a positive number"))?)
            }
            (SettingType::Str | SettingType::Enum, Value::String(s)) => SettingValue::Str(s.clone()),
            (SettingType::Str, Value::Number(n)) => SettingValue::Str(n.to_string()),
            (SettingType::Dict, Value::Object(m)) => SettingValue::Dict(m.clone()),
            (SettingType::Dict, Value::String(s)) => match serde_json::from_str(s) {
                Ok(Value::Object(m)) => SettingValue::Dict(m),
                _ => return Err(wrong("a JSON object")),
            },
            (SettingType::Bool, _) => return Err(wrong("a boolean")),
            (SettingType::Int, _) => return Err(wrong("an integer")),
            (SettingType::PositiveFloat, _) => return Err(wrong("a positive number")),
            (SettingType::Str | SettingType::Enum, _) => return Err(wrong("a string")),
            (SettingType::Dict, _) => return Err(wrong("a JSON object")),
        };
        match (&parsed, self.kind) {
            // Settings with a range of their own say it below.
            (SettingValue::Float(x), SettingType::PositiveFloat)
                if meaning == Meaning::Any && !(*x >= 0.0 && x.is_finite()) =>
            {
                return Err(wrong("a positive number"));
            }
            (SettingValue::Int(i), SettingType::Int) if meaning == Meaning::Any && *i < 0 => {
                return Err(wrong("a non-negative integer"));
            }
            (SettingValue::Str(s), SettingType::Enum) => {
                if let Some(allowed) = &self.allowed_values
                    && !allowed.contains(s)
                {
                    return Err(wrong(&format!("one of {}", allowed.join(", "))));
                }
            }
            _ => {}
        }
        let parsed = check_meaning(parsed, meaning).map_err(|why| {
            let why = why.map(|w| format!("{w}; ")).unwrap_or_default();
            InvalidSetting(format!(
                "invalid value {value} for setting {}: {why}expected {}",
                self.name,
                meaning.expected()
            ))
        })?;
        // A whole number is answered as an integer, as Inmanta does (`2` stays `2`, not `2.0`).
        if let SettingValue::Float(x) = parsed
            && x.fract() == 0.0
            && x.abs() < 9.0e15
        {
            return Ok(SettingValue::Int(x as i64));
        }
        Ok(parsed)
    }
}

/// `value` (already of the setting's type) checked against `meaning`, canonical: an interval
/// given as a number is stored as its decimal string, as Inmanta does. The error is `Some`
/// reason when there is more to say than what is expected.
fn check_meaning(value: SettingValue, meaning: Meaning) -> Result<SettingValue, Option<String>> {
    let cron = |expr: &str| match crate::cron::parse(expr) {
        Err(e) => Err(Some(format!("not a cron expression: {e}"))),
        Ok(schedule) if schedule.next_after(chrono::Utc::now()).is_none() => {
            Err(Some("the cron expression names no time to come".to_string()))
        }
        Ok(_) => Ok(()),
    };
    match (meaning, &value) {
        (Meaning::Any, _) => Ok(value),
        (Meaning::IntervalOrCron, SettingValue::Str(text)) => {
            let text = text.trim();
            let looks_numeric = text.starts_with(['-', '+']) || text.bytes().next().is_some_and(|b| b.is_ascii_digit());
            if looks_numeric && text.split_whitespace().count() == 1 {
                // A whole number, possibly written as one (`30.0`, as JSON numbers may come).
                let seconds = text.parse::<f64>().ok().filter(|x| x.fract() == 0.0).ok_or(None)?;
                if !(0.0..=MAX_INTERVAL_SECONDS as f64).contains(&seconds) {
                    return Err(None);
                }
                return Ok(SettingValue::Str((seconds as i64).to_string()));
            }
            if text.is_empty() {
                return Err(Some("empty".to_string()));
            }
            cron(text)?;
            Ok(SettingValue::Str(text.to_string()))
        }
        (Meaning::CronOrEmpty, SettingValue::Str(text)) => {
            let text = text.trim();
            if !text.is_empty() {
                cron(text)?;
            }
            Ok(SettingValue::Str(text.to_string()))
        }
        (Meaning::Range { min, max, .. }, SettingValue::Int(i)) if (min..=max).contains(i) => Ok(value),
        (Meaning::Seconds { max }, SettingValue::Float(x)) if (0.0..=max).contains(x) => Ok(value),
        (Meaning::Seconds { max }, SettingValue::Int(i)) if (0..=max as i64).contains(i) => Ok(value),
        _ => Err(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn find(name: &str) -> SettingDefinition {
        definitions().into_iter().find(|d| d.name == name).unwrap()
    }

    #[test]
    fn values_deserialise_by_their_json_kind() {
        // by hand: with serde_json's arbitrary_precision an untagged enum would read 1.5 as a map
        let parse = |text: &str| serde_json::from_str::<SettingValue>(text).unwrap();
        assert_eq!(parse("1.5"), SettingValue::Float(1.5));
        assert_eq!(parse("1e2"), SettingValue::Float(100.0));
        assert_eq!(parse("-3"), SettingValue::Int(-3));
        assert_eq!(parse("true"), SettingValue::Bool(true));
        assert_eq!(parse(r#""x""#), SettingValue::Str("x".into()));
        assert_eq!(parse(r#"{"a": 0.5}"#), SettingValue::Dict(json!({"a": 0.5}).as_object().cloned().unwrap()));
        let def: SettingDefinition =
            serde_json::from_value(serde_json::to_value(find(names::RECOMPILE_BACKOFF)).unwrap()).unwrap();
        assert_eq!(def.default, SettingValue::Float(0.1));
        assert!(serde_json::from_str::<SettingValue>("[1]").is_err());
    }

    #[test]
    fn catalogue_has_every_inmanta_setting_once() {
        let defs = definitions();
        assert_eq!(defs.len(), 15);
        let mut names: Vec<_> = defs.iter().map(|d| d.name.as_str()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 15);
    }

    #[test]
    fn values_are_type_checked_and_canonicalised() {
        let auto = find(names::AUTO_DEPLOY);
        assert_eq!(auto.validate(&json!(false)), Ok(SettingValue::Bool(false)));
        assert_eq!(auto.validate(&json!("true")), Ok(SettingValue::Bool(true)));
        assert!(auto.validate(&json!(12)).is_err());
        let keep = find(names::AVAILABLE_VERSIONS_TO_KEEP);
        assert_eq!(keep.validate(&json!("5")), Ok(SettingValue::Int(5)));
        assert!(keep.validate(&json!("five")).is_err());
        assert!(keep.validate(&json!(-1)).is_err());
        let backoff = find(names::RECOMPILE_BACKOFF);
        assert_eq!(backoff.validate(&json!(2)), Ok(SettingValue::Int(2)));
        assert_eq!(backoff.validate(&json!("2.0")), Ok(SettingValue::Int(2)));
        assert_eq!(backoff.validate(&json!(2.5)), Ok(SettingValue::Float(2.5)));
        assert!(backoff.validate(&json!(-0.5)).is_err());
        let interval = find(names::DEPLOY_INTERVAL);
        assert_eq!(interval.validate(&json!(30)), Ok(SettingValue::Str("30".into())));
    }

    #[test]
    fn values_are_checked_by_their_meaning() {
        use names::*;
        let refused = [
            (DEPLOY_INTERVAL, json!(-1)),
            (DEPLOY_INTERVAL, json!("-1")),
            (DEPLOY_INTERVAL, json!(1.5)),
            (DEPLOY_INTERVAL, json!("")),
            (DEPLOY_INTERVAL, json!("every hour")),
            (DEPLOY_INTERVAL, json!("99999999999999999999")),
            (DEPLOY_INTERVAL, json!(MAX_INTERVAL_SECONDS + 1)),
            (REPAIR_INTERVAL, json!(-600)),
            (REPAIR_INTERVAL, json!("* * *")),
            (REPAIR_INTERVAL, json!("61 * * * *")),
            (REPAIR_INTERVAL, json!("0 0 30 2 *")),
            (AUTO_FULL_COMPILE, json!("nonsense")),
            (AUTO_FULL_COMPILE, json!("0 0 1 1 * 2020")),
            (AVAILABLE_VERSIONS_TO_KEEP, json!(0)),
            (AVAILABLE_VERSIONS_TO_KEEP, json!(3_000_000_000i64)),
            (RESOURCE_ACTION_LOGS_RETENTION, json!(0)),
            (RESOURCE_ACTION_LOGS_RETENTION, json!(-7)),
            (NOTIFICATION_RETENTION, json!(0)),
            (NOTIFICATION_RETENTION, json!(1_000_000_000)),
            (ENVIRONMENT_METRICS_RETENTION, json!(1_000_000_000_000i64)),
            (RECOMPILE_BACKOFF, json!(1e300)),
            (RECOMPILE_BACKOFF, json!("-1")),
        ];
        for (name, value) in refused {
            let message = find(name).validate(&value).expect_err(&format!("{name} = {value}")).0;
            assert!(message.contains(name) && message.contains("expected"), "{message}");
        }
        let accepted = [
            (DEPLOY_INTERVAL, json!(0), SettingValue::from("0")),
            (DEPLOY_INTERVAL, json!(30.0), SettingValue::from("30")),
            (DEPLOY_INTERVAL, json!(" 030 "), SettingValue::from("30")),
            (DEPLOY_INTERVAL, json!("*/5 * * * *"), SettingValue::from("*/5 * * * *")),
            (REPAIR_INTERVAL, json!("0 12 * * * *"), SettingValue::from("0 12 * * * *")),
            (AUTO_FULL_COMPILE, json!(""), SettingValue::from("")),
            (AUTO_FULL_COMPILE, json!("* * * * * * *"), SettingValue::from("* * * * * * *")),
            (AVAILABLE_VERSIONS_TO_KEEP, json!(1), SettingValue::Int(1)),
            (NOTIFICATION_RETENTION, json!(MAX_RETENTION_DAYS), SettingValue::Int(MAX_RETENTION_DAYS)),
            (ENVIRONMENT_METRICS_RETENTION, json!(0), SettingValue::Int(0)),
            (RECOMPILE_BACKOFF, json!(0), SettingValue::Int(0)),
            (RECOMPILE_BACKOFF, json!(86400), SettingValue::Int(86400)),
        ];
        for (name, value, expected) in accepted {
            assert_eq!(find(name).validate(&value), Ok(expected), "{name} = {value}");
        }
        let message = find(REPAIR_INTERVAL).validate(&json!("61 * * * *")).unwrap_err().0;
        assert!(message.contains("not a cron expression"), "{message}");
    }

    #[test]
    fn setting_values_round_trip_as_plain_json() {
        let v: SettingValue = serde_json::from_value(json!(0.1)).unwrap();
        assert_eq!(v, SettingValue::Float(0.1));
        let v: SettingValue = serde_json::from_value(json!(7)).unwrap();
        assert_eq!(v, SettingValue::Int(7));
        assert_eq!(serde_json::to_value(SettingValue::Str("600".into())).unwrap(), json!("600"));
    }
}
