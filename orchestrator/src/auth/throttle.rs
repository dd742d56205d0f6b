//! Login throttling that an attacker cannot turn against the user (issue 18 point 4).
//!
//! Failed logins are counted by `governor` rate limiters (GCRA), keyed two ways:
//! - per (user name, client address): a few free failures, then growing delays. Three tiers
//!   with longer replenish periods stack up, so the wait grows from seconds to an hour the longer
//!   someone keeps guessing. Only that pair waits: the same user from another address is not
//!   affected, so nobody can lock an account by failing on purpose.
//! - per client address, over all users: a cap on password spraying from one machine. When it is
//!   used up the address is paced to one failure per short period instead of being locked, so
//!   the other users behind a shared address (a NAT, a proxy) still get in after a moment.
//!
//! A limiter cannot be asked without consuming, so each failure that uses up a tier records the
//! instant the key may try again; the check before a login only reads those instants.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::num::NonZeroU32;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use governor::clock::{Clock, DefaultClock};
use governor::middleware::StateInformationMiddleware;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};

type Limiter<K> = RateLimiter<K, DefaultKeyedStateStore<K>, DefaultClock, StateInformationMiddleware>;

/// A user name (case-insensitive) at one client address.
type Pair = (String, IpAddr);

/// Why a login must wait, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Throttled {
    /// This user failed too often from this address.
    User(Duration),
    /// This address failed too often over all users.
    Address(Duration),
}

impl Throttled {
    pub fn wait(self) -> Duration {
        match self {
            Throttled::User(wait) | Throttled::Address(wait) => wait,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThrottleSettings {
    /// Failures a user may make from one address before the first delay.
    pub free_failures: u32,
    /// The first delay; each next tier allows twice the failures and waits ten times longer.
    pub first_delay: Duration,
    /// Failures one address may make over all users before it is paced.
    pub address_failures: u32,
    /// The pace of an address past its cap: one failure per this period.
    pub address_pace: Duration,
}

impl ThrottleSettings {
    /// The defaults for `[server] login-max-failures = free_failures`.
    pub fn for_max_failures(free_failures: u32) -> ThrottleSettings {
        let free_failures = free_failures.max(1);
        ThrottleSettings {
            free_failures,
            first_delay: Duration::from_secs(30),
            address_failures: free_failures.saturating_mul(4),
            address_pace: Duration::from_secs(2),
        }
    }
}

pub struct LoginThrottle {
    /// Per (user, address), shortest delay first.
    pair_tiers: Vec<Limiter<Pair>>,
    address: Limiter<IpAddr>,
    clock: DefaultClock,
    /// When a pair or an address that used up a limiter may try again.
    waits: Mutex<Waits>,
}

#[derive(Default)]
struct Waits {
    pairs: HashMap<Pair, Instant>,
    addresses: HashMap<IpAddr, Instant>,
}

impl std::fmt::Debug for LoginThrottle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoginThrottle").field("tiers", &self.pair_tiers.len()).finish_non_exhaustive()
    }
}

/// The key of callers whose address is unknown (they share one bucket).
const UNKNOWN: IpAddr = IpAddr::V4(Ipv4Addr::UNSPECIFIED);

/// Above this many remembered keys, forgotten ones are pruned (a flood of made-up names).
const PRUNE_ABOVE: usize = 10_000;

impl LoginThrottle {
    pub fn new(settings: &ThrottleSettings) -> LoginThrottle {
        let quota = |burst: u32, period: Duration| {
            Quota::with_period(period.max(Duration::from_millis(1)))
                .expect("a non-zero period")
                .allow_burst(NonZeroU32::new(burst.max(1)).expect("at least one"))
        };
        let pair_tiers = (0..3u32)
            .map(|tier| {
                let burst = settings.free_failures.saturating_mul(2u32.pow(tier));
                let period = settings.first_delay.saturating_mul(10u32.pow(tier));
                RateLimiter::keyed(quota(burst, period)).with_middleware::<StateInformationMiddleware>()
            })
            .collect();
        let address = RateLimiter::keyed(quota(settings.address_failures, settings.address_pace))
            .with_middleware::<StateInformationMiddleware>();
        LoginThrottle { pair_tiers, address, clock: DefaultClock::default(), waits: Mutex::default() }
    }

    fn pair(username: &str, address: Option<IpAddr>) -> Pair {
        (username.trim().to_lowercase(), address.unwrap_or(UNKNOWN))
    }

    /// `Err` while this user at this address, or this address, must wait.
    pub fn check(&self, username: &str, address: Option<IpAddr>) -> Result<(), Throttled> {
        let now = Instant::now();
        let waits = self.waits.lock().expect("throttle lock");
        let left = |until: Option<&Instant>| until.map(|t| t.saturating_duration_since(now)).filter(|d| !d.is_zero());
        if let Some(wait) = left(waits.pairs.get(&Self::pair(username, address))) {
            return Err(Throttled::User(wait));
        }
        if let Some(wait) = left(waits.addresses.get(&address.unwrap_or(UNKNOWN))) {
            return Err(Throttled::Address(wait));
        }
        Ok(())
    }

    /// Counts a failed login; returns how long this user at this address must now wait, if at all.
    pub fn failed(&self, username: &str, address: Option<IpAddr>) -> Option<Duration> {
        let pair = Self::pair(username, address);
        let pair_wait = self.pair_tiers.iter().filter_map(|tier| self.consume(tier, &pair)).max();
        let address_wait = self.consume(&self.address, &pair.1);
        let now = Instant::now();
        let mut waits = self.waits.lock().expect("throttle lock");
        if waits.pairs.len() + waits.addresses.len() > PRUNE_ABOVE {
            waits.pairs.retain(|_, until| *until > now);
            waits.addresses.retain(|_, until| *until > now);
            self.pair_tiers.iter().for_each(|tier| tier.retain_recent());
            self.address.retain_recent();
        }
        if let Some(wait) = address_wait {
            waits.addresses.insert(pair.1, now + wait);
        }
        let wait = pair_wait?;
        waits.pairs.insert(pair, now + wait);
        Some(wait)
    }

    /// A successful login ends the user's current wait at that address.
    pub fn succeeded(&self, username: &str, address: Option<IpAddr>) {
        self.waits.lock().expect("throttle lock").pairs.remove(&Self::pair(username, address));
    }

    /// Takes one failure from `limiter`; the wait until it allows the next one when it has none left.
    fn consume<K: std::hash::Hash + Eq + Clone>(&self, limiter: &Limiter<K>, key: &K) -> Option<Duration> {
        match limiter.check_key(key) {
            Ok(state) if state.remaining_burst_capacity() > 0 => None,
            Ok(state) => Some(state.quota().replenish_interval()),
            Err(not_until) => Some(not_until.wait_time_from(self.clock.now())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> Option<IpAddr> {
        Some(text.parse().unwrap())
    }

    fn throttle() -> LoginThrottle {
        LoginThrottle::new(&ThrottleSettings::for_max_failures(3))
    }

    #[test]
    fn failures_lock_the_pair_only() {
        let t = throttle();
        for _ in 0..2 {
            assert_eq!(t.failed("admin", ip("10.0.0.1")), None);
        }
        assert!(t.failed("Admin ", ip("10.0.0.1")).is_some(), "the third failure uses up the free ones");
        assert!(matches!(t.check("admin", ip("10.0.0.1")), Err(Throttled::User(_))));
        assert_eq!(t.check("admin", ip("10.0.0.2")), Ok(()), "the same user from another address");
        assert_eq!(t.check("bob", ip("10.0.0.1")), Ok(()), "another user from the same address");
        t.succeeded("admin", ip("10.0.0.1"));
        assert_eq!(t.check("admin", ip("10.0.0.1")), Ok(()));
    }

    #[test]
    fn delays_grow_with_the_failures() {
        let t = throttle();
        let waits: Vec<Duration> = (0..12).filter_map(|_| t.failed("admin", ip("10.0.0.1"))).collect();
        let first = waits[0];
        assert!(first <= Duration::from_secs(30) && first > Duration::from_secs(20), "{first:?}");
        let last = *waits.last().unwrap();
        assert!(last > Duration::from_secs(1800), "after four times the free failures: {last:?}");
        assert!(waits.windows(2).all(|w| w[1] + Duration::from_secs(1) >= w[0]), "never shorter: {waits:?}");
    }

    #[test]
    fn an_address_is_paced_not_locked() {
        let t = throttle();
        // Spraying: one failure for each of many users from one address.
        let mut paced = None;
        for n in 0..12 {
            t.failed(&format!("user{n}"), ip("192.0.2.7"));
            if let Err(Throttled::Address(wait)) = t.check("carol", ip("192.0.2.7")) {
                paced = Some(wait);
            }
        }
        let wait = paced.expect("the address cap was reached");
        assert!(wait <= Duration::from_secs(2), "a shared address waits a moment, not minutes: {wait:?}");
        assert_eq!(t.check("carol", ip("192.0.2.8")), Ok(()));
    }
}
