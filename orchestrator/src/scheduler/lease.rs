//! This server's lease on the scheduler of one environment, as the scheduler sees it: whether it
//! may hand out work now (several servers on PostgreSQL, docs/ha.md).

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::cluster::Fence;

/// This server's lease on the scheduler of one environment (several servers on PostgreSQL).
pub struct Lease {
    pub fence: Fence,
    /// Until when this server may hand out work: renewed with the lease, and ending a margin
    /// before the lease itself so a server that cannot renew stops first.
    valid_until: Mutex<Instant>,
    /// Work the previous holder had in flight (it died with its lease still running) may still
    /// run until that lease would have ended: nothing is handed out before.
    hold_until: Instant,
    /// Being handed to another server: not renewed into a new scheduler.
    releasing: AtomicBool,
}

impl Lease {
    pub fn new(fence: Fence, valid_until: Instant, hold_until: Instant) -> Lease {
        Lease { fence, valid_until: Mutex::new(valid_until), hold_until, releasing: Default::default() }
    }

    pub fn valid(&self) -> bool {
        self.valid_until.lock().map(|v| Instant::now() < *v).unwrap_or(false)
    }

    /// Whether work may be handed out now: the lease is valid and what a dead previous holder
    /// had in flight can no longer run.
    pub(crate) fn may_dispatch(&self) -> bool {
        self.valid() && self.hold_until <= Instant::now()
    }

    pub fn is_releasing(&self) -> bool {
        self.releasing.load(Ordering::SeqCst)
    }

    pub fn set_releasing(&self) {
        self.releasing.store(true, Ordering::SeqCst);
    }

    pub fn extend(&self, until: Instant) {
        if let Ok(mut v) = self.valid_until.lock() {
            *v = until.max(*v);
        }
    }
}
