//! When resources are deployed again without a new version: the deploy timer retries dirty
//! resources, the repair timer redeploys every one. Each is either per resource (this long after
//! its last deploy ended) or one global run at the times of a cron expression, from the settings
//! `autostart_agent_deploy_interval` / `autostart_agent_repair_interval`.

use std::time::{Duration, Instant};

use api::cron::next_fire;
use api::state::Blocked;
use chrono::{DateTime, Utc};

use super::model::{Model, Rid};
use super::queue::Queue;
use super::task::Priority;

/// Default `autostart_agent_deploy_interval`.
const DEFAULT_DEPLOY_INTERVAL: Duration = Duration::from_secs(600);
/// Default `autostart_agent_repair_interval`.
const DEFAULT_REPAIR_INTERVAL: Duration = Duration::from_secs(86_400);

/// When a deploy or repair timer fires.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Timer {
    Off,
    /// Per resource: this long after its last deploy ended.
    Every(Duration),
    /// One global run at the times a cron expression names (UTC).
    Cron(String),
}

impl Timer {
    /// A setting's value: a number of seconds (0 is off) or a cron expression; `default` when
    /// unset.
    fn from_setting(value: Option<&api::SettingValue>, default: Duration) -> Timer {
        let text = match value {
            Some(api::SettingValue::Int(i)) => i.to_string(),
            Some(api::SettingValue::Str(s)) => s.clone(),
            Some(other) => format!("{other:?}"),
            None => default.as_secs().to_string(),
        };
        match text.trim().parse::<u64>() {
            Ok(0) => Timer::Off,
            Ok(seconds) => Timer::Every(Duration::from_secs(seconds)),
            Err(_) if next_fire(&text, Utc::now()).is_some() => Timer::Cron(text.trim().to_string()),
            Err(_) => {
                tracing::warn!(value = %text, "not a number of seconds nor a cron expression; the timer is off");
                Timer::Off
            }
        }
    }

    fn every(&self) -> Option<Duration> {
        if let Timer::Every(d) = self { Some(*d) } else { None }
    }

    fn next_fire(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        if let Timer::Cron(expr) = self { next_fire(expr, after) } else { None }
    }

    /// Why a run this timer started happens, in the words Inmanta's executor logs.
    fn reason(&self, what: &str) -> String {
        match self {
            Timer::Every(every) => format!("previous {what} happened more than {}s ago", every.as_secs()),
            _ => format!("a global {what} was triggered by a cron expression"),
        }
    }
}

/// A timer and, for a cron timer, when its next global run is due.
#[derive(Debug, Clone)]
struct Armed {
    timer: Timer,
    next_run: Option<DateTime<Utc>>,
}

impl Armed {
    fn new(timer: Timer) -> Armed {
        let next_run = timer.next_fire(Utc::now());
        Armed { timer, next_run }
    }

    /// Whether a global (cron) run is due at `wall`; if so the next one is armed.
    fn fires(&mut self, wall: DateTime<Utc>) -> bool {
        match (self.next_run, &self.timer) {
            (Some(at), Timer::Cron(expr)) if at <= wall => {
                self.next_run = next_fire(expr, wall);
                true
            }
            _ => false,
        }
    }
}

/// The deploy and repair timers of one environment.
#[derive(Debug, Clone)]
pub(crate) struct Timers {
    deploy: Armed,
    repair: Armed,
}

impl Default for Timers {
    fn default() -> Timers {
        Timers { deploy: Armed::new(Timer::Off), repair: Armed::new(Timer::Off) }
    }
}

impl Timers {
    /// The timers the environment's settings name.
    pub fn from_settings(settings: &std::collections::BTreeMap<String, api::SettingValue>) -> Timers {
        use api::settings::names::{DEPLOY_INTERVAL, REPAIR_INTERVAL};
        Timers {
            deploy: Armed::new(Timer::from_setting(settings.get(DEPLOY_INTERVAL), DEFAULT_DEPLOY_INTERVAL)),
            repair: Armed::new(Timer::from_setting(settings.get(REPAIR_INTERVAL), DEFAULT_REPAIR_INTERVAL)),
        }
    }

    /// Why a task of this priority runs, in the words Inmanta's executor logs.
    pub fn reason(&self, priority: Priority) -> String {
        match priority {
            Priority::UserDeploy => "user requested a deploy".into(),
            Priority::UserRepair => "user requested a repair".into(),
            Priority::IntervalDeploy => self.deploy.timer.reason("deploy"),
            Priority::IntervalRepair => self.repair.timer.reason("repair"),
            Priority::FactRefresh => "facts were requested".into(),
            Priority::NewVersion | Priority::DryRun => "a new version was released".into(),
        }
    }

    /// The resources whose timer is due now and that are neither queued nor running, with the
    /// priority to queue them at. Their timer restarts from now even if the run waits behind
    /// others.
    pub fn due(&mut self, model: &mut Model, queue: &Queue) -> Vec<(Rid, Priority)> {
        let now = Instant::now();
        let deploy_every = self.deploy.timer.every();
        let repair_every = self.repair.timer.every();
        let wall = Utc::now();
        let global_deploy = self.deploy.fires(wall);
        let global_repair = self.repair.fires(wall);
        let mut due: Vec<(Rid, Priority)> = vec![];
        // This walks every resource once a second: whether a resource is due is decided first
        // from its own fields, and only a due one is looked up in the queues (two hash lookups
        // per resource per second were most of this walk at 100 000 resources).
        for (rid, r) in &model.resources {
            if r.blocked == Blocked::Blocked {
                continue;
            }
            let elapsed = r.last_end.map(|end| now.saturating_duration_since(end));
            let retry = r.retryable();
            let prio = if global_repair {
                Priority::IntervalRepair
            } else if global_deploy && retry {
                Priority::IntervalDeploy
            } else if let Some(elapsed) = elapsed {
                if retry && deploy_every.is_some_and(|every| elapsed >= every) {
                    Priority::IntervalDeploy
                } else if repair_every.is_some_and(|every| elapsed >= every) {
                    Priority::IntervalRepair
                } else {
                    continue;
                }
            } else {
                continue;
            };
            if !queue.holds(rid) {
                due.push((rid.clone(), prio));
            }
        }
        for (rid, _) in &due {
            if let Some(r) = model.get_mut(rid) {
                r.last_end = Some(now);
            }
        }
        due
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_setting_names_seconds_a_cron_expression_or_nothing() {
        let int = |i| api::SettingValue::Int(i);
        let text = |s: &str| api::SettingValue::Str(s.into());
        assert_eq!(Timer::from_setting(None, DEFAULT_DEPLOY_INTERVAL), Timer::Every(Duration::from_secs(600)));
        assert_eq!(Timer::from_setting(Some(&int(0)), DEFAULT_DEPLOY_INTERVAL), Timer::Off);
        assert_eq!(
            Timer::from_setting(Some(&text(" 30 ")), DEFAULT_DEPLOY_INTERVAL),
            Timer::Every(Duration::from_secs(30))
        );
        assert_eq!(
            Timer::from_setting(Some(&text("*/5 * * * *")), DEFAULT_DEPLOY_INTERVAL),
            Timer::Cron("*/5 * * * *".into())
        );
        assert_eq!(Timer::from_setting(Some(&text("soon")), DEFAULT_DEPLOY_INTERVAL), Timer::Off);
    }

    #[test]
    fn priorities_run_in_inmanta_order() {
        let order = [
            Priority::UserDeploy,
            Priority::NewVersion,
            Priority::UserRepair,
            Priority::DryRun,
            Priority::IntervalDeploy,
            Priority::FactRefresh,
            Priority::IntervalRepair,
        ];
        assert!(order.windows(2).all(|w| w[0] < w[1]));
    }
}
