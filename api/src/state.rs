//! The closed vocabularies of the API: resource states, changes, the blocked flag, handler
//! outcomes, action kinds, compile and agent status. Each is an enum whose wire name is its
//! serde name; every crate (store, scheduler, agent, CLI, console) uses these instead of string
//! literals, so a misspelt state is a compile error. The rule that turns a resource's state
//! vector into its single status lives here too ([`StateVector::status`]), with the SQL that
//! the database evaluates for the same rule ([`status_sql`]).

use std::fmt;
use std::str::FromStr;

/// A value that is not one of an enum's wire names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{value:?} is not a {kind}; expected one of: {expected}")]
pub struct UnknownName {
    pub kind: &'static str,
    pub value: String,
    pub expected: String,
}

/// An enum with a fixed wire name per variant: `as_str`, `parse`, `ALL`, `Display`, `FromStr`
/// and serde through the wire name.
macro_rules! wire_enum {
    ($(#[$meta:meta])* $name:ident ($kind:literal) { $($(#[$vmeta:meta])* $variant:ident = $wire:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// Every wire name, in declaration order.
            pub const NAMES: &'static [&'static str] = &[$($wire,)+];

            /// The wire name.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $wire,)+
                }
            }

            /// The variant of a wire name.
            pub fn parse(text: &str) -> Option<$name> {
                match text {
                    $($wire => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = UnknownName;

            fn from_str(text: &str) -> Result<$name, UnknownName> {
                $name::parse(text).ok_or_else(|| UnknownName {
                    kind: $kind,
                    value: text.to_string(),
                    expected: $name::ALL.iter().map(|v| v.as_str()).collect::<Vec<_>>().join(", "),
                })
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<$name, D::Error> {
                let text = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }
    };
}

wire_enum! {
    /// The status of a released resource (Inmanta's `ResourceState` and
    /// `ReleasedResourceState`).
    ResourceState ("resource state") {
        Unavailable = "unavailable",
        Skipped = "skipped",
        Dry = "dry",
        Deployed = "deployed",
        Failed = "failed",
        Deploying = "deploying",
        Available = "available",
        Cancelled = "cancelled",
        Undefined = "undefined",
        SkippedForUndefined = "skipped_for_undefined",
        NonCompliant = "non_compliant",
        /// Only of a released resource the latest released version no longer holds.
        Orphaned = "orphaned",
    }
}

impl ResourceState {
    /// The states of `ResourceState` proper (without `orphaned`), as Inmanta lists them.
    pub const RESOURCE_STATES: &'static [ResourceState] = &[
        ResourceState::Unavailable,
        ResourceState::Skipped,
        ResourceState::Dry,
        ResourceState::Deployed,
        ResourceState::Failed,
        ResourceState::Deploying,
        ResourceState::Available,
        ResourceState::Cancelled,
        ResourceState::Undefined,
        ResourceState::SkippedForUndefined,
        ResourceState::NonCompliant,
    ];
}

wire_enum! {
    /// How a handler run ended (docs/handlers.md, "What every run reports"): the states a run can leave behind.
    HandlerStatus ("handler status") {
        Deployed = "deployed",
        Failed = "failed",
        Skipped = "skipped",
        Unavailable = "unavailable",
        NonCompliant = "non_compliant",
        Dry = "dry",
        /// Not run: a requirement is not deployed. Stored as `skipped`.
        SkippedForDependency = "skipped_for_dependency",
    }
}

impl From<HandlerStatus> for ResourceState {
    fn from(status: HandlerStatus) -> ResourceState {
        match status {
            HandlerStatus::Deployed => ResourceState::Deployed,
            HandlerStatus::Failed => ResourceState::Failed,
            HandlerStatus::Skipped | HandlerStatus::SkippedForDependency => ResourceState::Skipped,
            HandlerStatus::Unavailable => ResourceState::Unavailable,
            HandlerStatus::NonCompliant => ResourceState::NonCompliant,
            HandlerStatus::Dry => ResourceState::Dry,
        }
    }
}

wire_enum! {
    /// How the last handler run of a resource went, as its state vector stores it (Inmanta's
    /// `HandlerResult`).
    HandlerRun ("handler run result") {
        New = "new",
        Successful = "successful",
        Failed = "failed",
        Skipped = "skipped",
    }
}

impl From<HandlerStatus> for HandlerRun {
    fn from(status: HandlerStatus) -> HandlerRun {
        match status {
            HandlerStatus::Deployed | HandlerStatus::NonCompliant => HandlerRun::Successful,
            HandlerStatus::Failed | HandlerStatus::Unavailable => HandlerRun::Failed,
            HandlerStatus::Skipped | HandlerStatus::SkippedForDependency | HandlerStatus::Dry => HandlerRun::Skipped,
        }
    }
}

wire_enum! {
    /// How a resource's operational state relates to its current intent, as far as the last
    /// handler run for that intent tells (Inmanta's `Compliance`).
    Compliance ("compliance") {
        /// The last run for the current intent found it as desired.
        Compliant = "compliant",
        /// The intent changed since the last run (or it never ran).
        HasUpdate = "has_update",
        /// The last run for the current intent found it different (report-only) or did not get
        /// it there (failed, skipped).
        NonCompliant = "non_compliant",
        /// The intent has an unknown value.
        Undefined = "undefined",
    }
}

impl Compliance {
    /// Inmanta's `get_compliance_status` over a resource's state vector columns.
    pub fn of(
        undefined: bool,
        last_deployed_hash: Option<&str>,
        current_hash: &str,
        last_run_compliant: Option<bool>,
    ) -> Compliance {
        if undefined {
            Compliance::Undefined
        } else if last_deployed_hash != Some(current_hash) {
            Compliance::HasUpdate
        } else if last_run_compliant == Some(true) {
            Compliance::Compliant
        } else {
            Compliance::NonCompliant
        }
    }

    /// The same rule as SQL over the columns of `resource_persistent_state` (for counts).
    /// [`Compliance::of`] in SQL over the columns of `resource_persistent_state`, the table
    /// aliased `alias` in the query (`""`: not aliased).
    pub fn sql(alias: &str) -> String {
        let c = |column: &str| if alias.is_empty() { column.to_string() } else { format!("{alias}.{column}") };
        format!(
            "CASE WHEN {} = 1 THEN '{}' WHEN {deployed} IS NULL OR {deployed} <> {} THEN '{}' \
             WHEN {} = 1 THEN '{}' ELSE '{}' END",
            c("is_undefined"),
            Compliance::Undefined.as_str(),
            c("current_intent_attribute_hash"),
            Compliance::HasUpdate.as_str(),
            c("last_handler_run_compliant"),
            Compliance::Compliant.as_str(),
            Compliance::NonCompliant.as_str(),
            deployed = c("last_deployed_attribute_hash"),
        )
    }
}

wire_enum! {
    /// The kind of change a handler run made; one per run.
    #[derive(Default)]
    Change ("change") {
        #[default]
        NoChange = "nochange",
        Created = "created",
        Purged = "purged",
        Updated = "updated",
    }
}

wire_enum! {
    /// Whether the scheduler may deploy a resource (the `blocked` dimension of its state).
    Blocked ("blocked state") {
        NotBlocked = "not_blocked",
        /// Undefined, or depending on an undefined resource: fixed for the version.
        Blocked = "blocked",
        /// Skipped because a requirement is not deployed; lifted when it recovers.
        TemporarilyBlocked = "temporarily_blocked",
    }
}

impl Blocked {
    /// What Inmanta 20.1 says of this state where it reads it from its database (GraphQL's
    /// `resources` and `resourceSummary`): it stores a temporary block as not blocked (its issue
    /// 8541), so a skipped resource shows `NOT_BLOCKED` there. The scheduler keeps the
    /// temporary block, which it needs to wake the resource when its requirements recover.
    pub fn as_inmanta_stores(self) -> Blocked {
        match self {
            Blocked::TemporarilyBlocked => Blocked::NotBlocked,
            other => other,
        }
    }

    /// The states stored here that Inmanta stores as `self` (the inverse of
    /// [`Blocked::as_inmanta_stores`]), for filters.
    pub fn stored_as(self) -> &'static [Blocked] {
        match self {
            Blocked::NotBlocked => &[Blocked::NotBlocked, Blocked::TemporarilyBlocked],
            Blocked::Blocked => &[Blocked::Blocked],
            Blocked::TemporarilyBlocked => &[],
        }
    }
}

wire_enum! {
    /// What a resource action did (the `action` of a resource action).
    ActionKind ("resource action") {
        Store = "store",
        Push = "push",
        Pull = "pull",
        Deploy = "deploy",
        Dryrun = "dryrun",
        Getfact = "getfact",
        Other = "other",
    }
}

wire_enum! {
    /// Where a compile request is: waiting, running, or how it ended.
    CompileStatus ("compile status") {
        Queued = "queued",
        Running = "running",
        Success = "success",
        Failed = "failed",
    }
}

impl CompileStatus {
    /// The status of a compile from its report's `started`, `completed` and `success`.
    pub fn of(started: bool, completed: bool, success: Option<bool>) -> CompileStatus {
        match (started, completed, success) {
            (_, true, Some(true)) => CompileStatus::Success,
            (_, true, _) => CompileStatus::Failed,
            (true, false, _) => CompileStatus::Running,
            (false, false, _) => CompileStatus::Queued,
        }
    }
}

wire_enum! {
    /// What a dry run found for one resource (Inmanta's `ResourceDiffStatus`, and this
    /// project's additions).
    ResourceDiffStatus ("dry-run status") {
        Added = "added",
        Modified = "modified",
        Deleted = "deleted",
        Unmodified = "unmodified",
        AgentDown = "agent_down",
        Undefined = "undefined",
        SkippedForUndefined = "skipped_for_undefined",
        /// This project's addition (not in Inmanta 20.1): a requirement is not deployed, so
        /// the handler could not tell what would change.
        SkippedForDependency = "skipped_for_dependency",
        /// Written by this project's earlier releases for a handler that failed; a failure
        /// is now `modified` with Inmanta's `handler` attribute (`orchestrator::dryrun`), and
        /// this stays only so that stored dry runs still read.
        Failed = "failed",
    }
}

wire_enum! {
    /// An agent as the agent list shows it.
    AgentStatus ("agent status") {
        Up = "up",
        Down = "down",
        Paused = "paused",
    }
}

/// What the single status of a released resource is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateVector {
    pub orphan: bool,
    pub deploying: bool,
    pub undefined: bool,
    pub blocked: Blocked,
    /// The outcome of the last run that did not end `deploying`, if any.
    pub last_status: Option<ResourceState>,
    /// The last deploy was of the current desired state (same attribute hash).
    pub deployed_current_intent: bool,
}

/// One step of the status rule: a condition on the state vector and, when it holds, the
/// status (`None`: the last run's status).
struct RuleStep {
    holds: fn(&StateVector) -> bool,
    sql: &'static str,
    status: ResourceState,
}

/// Inmanta's single status: the first step that holds gives the status; when none does, the
/// last run's status.
const STATUS_RULE: &[RuleStep] = &[
    RuleStep { holds: |v| v.orphan, sql: "is_orphan = 1", status: ResourceState::Orphaned },
    RuleStep { holds: |v| v.deploying, sql: "is_deploying = 1", status: ResourceState::Deploying },
    RuleStep { holds: |v| v.undefined, sql: "is_undefined = 1", status: ResourceState::Undefined },
    RuleStep {
        holds: |v| v.blocked == Blocked::Blocked,
        sql: "blocked = 'blocked'",
        status: ResourceState::SkippedForUndefined,
    },
    RuleStep {
        holds: |v| v.last_status.is_none() || !v.deployed_current_intent,
        sql: "last_non_deploying_status IS NULL OR last_deployed_attribute_hash IS NULL \
              OR last_deployed_attribute_hash <> current_intent_attribute_hash",
        status: ResourceState::Available,
    },
];

impl StateVector {
    /// The single status of the resource.
    pub fn status(&self) -> ResourceState {
        STATUS_RULE
            .iter()
            .find(|step| (step.holds)(self))
            .map(|step| step.status)
            .or(self.last_status)
            .unwrap_or(ResourceState::Available)
    }
}

/// The same rule over the columns of `resource_persistent_state`, as the `CASE` expression of
/// its generated `status` column (the migration holds a copy; a test keeps them equal).
pub fn status_sql() -> String {
    let mut sql = String::from("CASE");
    for step in STATUS_RULE {
        sql.push_str(&format!(" WHEN {} THEN '{}'", step.sql, step.status));
    }
    sql.push_str(" ELSE last_non_deploying_status END");
    sql
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_round_trip_through_serde_and_parse() {
        for state in ResourceState::ALL {
            let json = serde_json::to_string(state).unwrap();
            assert_eq!(json, format!("\"{}\"", state.as_str()));
            assert_eq!(serde_json::from_str::<ResourceState>(&json).unwrap(), *state);
            assert_eq!(state.as_str().parse::<ResourceState>().unwrap(), *state);
        }
        let err = "deployd".parse::<ResourceState>().unwrap_err();
        assert!(err.to_string().contains("\"deployd\" is not a resource state"), "{err}");
        assert!(serde_json::from_str::<Change>("\"changed\"").is_err());
        assert_eq!(serde_json::to_string(&Change::NoChange).unwrap(), "\"nochange\"");
    }

    #[test]
    fn the_status_rule_takes_the_first_step_that_holds() {
        let base = StateVector {
            orphan: false,
            deploying: false,
            undefined: false,
            blocked: Blocked::NotBlocked,
            last_status: Some(ResourceState::Failed),
            deployed_current_intent: true,
        };
        assert_eq!(base.status(), ResourceState::Failed);
        assert_eq!(StateVector { deployed_current_intent: false, ..base }.status(), ResourceState::Available);
        assert_eq!(StateVector { last_status: None, ..base }.status(), ResourceState::Available);
        assert_eq!(StateVector { blocked: Blocked::Blocked, ..base }.status(), ResourceState::SkippedForUndefined);
        assert_eq!(StateVector { blocked: Blocked::TemporarilyBlocked, ..base }.status(), ResourceState::Failed);
        assert_eq!(
            StateVector { undefined: true, blocked: Blocked::Blocked, ..base }.status(),
            ResourceState::Undefined
        );
        assert_eq!(StateVector { deploying: true, undefined: true, ..base }.status(), ResourceState::Deploying);
        assert_eq!(StateVector { orphan: true, deploying: true, ..base }.status(), ResourceState::Orphaned);
    }

    #[test]
    fn compile_status_follows_the_report() {
        assert_eq!(CompileStatus::of(false, false, None), CompileStatus::Queued);
        assert_eq!(CompileStatus::of(true, false, None), CompileStatus::Running);
        assert_eq!(CompileStatus::of(true, true, Some(true)), CompileStatus::Success);
        assert_eq!(CompileStatus::of(true, true, Some(false)), CompileStatus::Failed);
        assert_eq!(CompileStatus::of(true, true, None), CompileStatus::Failed);
    }
}

wire_enum! {
    /// The environment metrics of `GET /api/v2/metrics` (Inmanta 20.1's names): gauges of
    /// resources and agents by state, timers of compiles, and the compile rate derived from them.
    MetricName ("environment metric") {
        ResourceCount = "resource.resource_count",
        AgentCount = "resource.agent_count",
        CompileTime = "orchestrator.compile_time",
        CompileWaitingTime = "orchestrator.compile_waiting_time",
        CompileRate = "orchestrator.compile_rate",
    }
}
