//! Identical reads that arrive together are answered by one run.
//!
//! Many consoles and scripts polling the same page during a deploy ask the database the same
//! question many times a second, and each answer costs the same; so do the pages of one list
//! that differ only in where they start, for the count of rows their filter matches. A request
//! that finds the same read already running does not take that run's answer: it may have been
//! read before the request arrived, and a client that has just changed something must see its
//! change. It joins the *next* run instead, which starts as soon as the running one ends and
//! answers everyone who joined it. Every answer is thus read after its request arrived, as if
//! the request had run alone, and any number of identical requests arriving together cost at
//! most two reads.
//!
//! Runs are tasks of their own: a request that goes away while others wait for its run cancels
//! nothing they wait for. When every request that joined a run has gone (their clients closed
//! the connection), the run is stopped: no read goes on for nobody.

use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::FutureExt;
use futures_util::future::{BoxFuture, Shared};

/// A run's answer; `None` when the run did not end (it panicked).
type Run<V> = Shared<BoxFuture<'static, Option<Arc<V>>>>;

struct Entry<V> {
    id: u64,
    run: Run<V>,
    /// The requests waiting for this run.
    waiters: Arc<AtomicUsize>,
    abort: tokio::task::AbortHandle,
}

/// The run of one key that is reading now, and the one that waits for it to end.
struct Slot<V> {
    running: Option<Entry<V>>,
    next: Option<Entry<V>>,
}

impl<V> Default for Slot<V> {
    fn default() -> Self {
        Slot { running: None, next: None }
    }
}

/// The runs in flight, by key.
pub struct SharedRuns<K, V> {
    slots: Mutex<HashMap<K, Slot<V>>>,
    runs: AtomicU64,
}

impl<K, V> Default for SharedRuns<K, V> {
    fn default() -> Self {
        SharedRuns { slots: Mutex::new(HashMap::new()), runs: AtomicU64::new(0) }
    }
}

impl<K, V> SharedRuns<K, V>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    V: Send + Sync + 'static,
{
    /// The answer of `read` for `key`, read after this call began: by a run of its own, or by
    /// the next run of the same key, shared with whoever joins it. `None` when that run
    /// panicked.
    pub async fn read<F, Fut>(self: &Arc<Self>, key: K, read: F) -> Option<Arc<V>>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = V> + Send + 'static,
    {
        let (run, _waiting) = {
            let mut slots = self.lock();
            let slot = slots.entry(key.clone()).or_default();
            let entry = if let Some(next) = &slot.next {
                next
            } else {
                let id = self.runs.fetch_add(1, Ordering::Relaxed);
                let before = slot.running.as_ref().map(|running| running.run.clone());
                let queued = before.is_some();
                let entry = self.spawn(key.clone(), id, before, read);
                let place = if queued { &mut slot.next } else { &mut slot.running };
                &*place.insert(entry)
            };
            // Counted under the lock, where a run is also stopped: a run is never stopped
            // between a request finding it and joining it.
            entry.waiters.fetch_add(1, Ordering::AcqRel);
            let waiting = Waiting { runs: self.clone(), key, id: entry.id, waiters: entry.waiters.clone() };
            (entry.run.clone(), waiting)
        };
        run.await
    }

    /// Starts run `id` of `key`, after `before` has ended when there is one.
    fn spawn<F, Fut>(self: &Arc<Self>, key: K, id: u64, before: Option<Run<V>>, read: F) -> Entry<V>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = V> + Send + 'static,
    {
        let runs = self.clone();
        let task = tokio::spawn(async move {
            if let Some(before) = before {
                before.await;
                runs.update(&key, |slot| {
                    if slot.next.as_ref().is_some_and(|next| next.id == id) {
                        slot.running = slot.next.take();
                    }
                });
            }
            let answer = read().await;
            runs.update(&key, |slot| {
                if slot.running.as_ref().is_some_and(|running| running.id == id) {
                    slot.running = None;
                }
            });
            Arc::new(answer)
        });
        let abort = task.abort_handle();
        let run = async move { task.await.ok() }.boxed().shared();
        Entry { id, run, waiters: Arc::new(AtomicUsize::new(0)), abort }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<K, Slot<V>>> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn update(&self, key: &K, change: impl FnOnce(&mut Slot<V>)) {
        let mut slots = self.lock();
        if let Some(slot) = slots.get_mut(key) {
            change(slot);
            if slot.running.is_none() && slot.next.is_none() {
                slots.remove(key);
            }
        }
    }

    /// Stops run `id` of `key` if it has not ended and no request waits for it any more.
    fn abandon(&self, key: &K, id: u64) {
        self.update(key, |slot| {
            for place in [&mut slot.running, &mut slot.next] {
                if place.as_ref().is_some_and(|entry| entry.id == id && entry.waiters.load(Ordering::Acquire) == 0)
                    && let Some(entry) = place.take()
                {
                    entry.abort.abort();
                }
            }
        });
    }

    /// How many keys have a run in flight.
    pub fn in_flight(&self) -> usize {
        self.lock().len()
    }
}

/// A request waiting for a run; when the last one is dropped before the run ends (its client
/// went away), the run is stopped.
struct Waiting<K, V>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    V: Send + Sync + 'static,
{
    runs: Arc<SharedRuns<K, V>>,
    key: K,
    id: u64,
    waiters: Arc<AtomicUsize>,
}

impl<K, V> Drop for Waiting<K, V>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    V: Send + Sync + 'static,
{
    fn drop(&mut self) {
        // An ended run has left its slot already: abandoning it then finds nothing to stop.
        if self.waiters.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.runs.abandon(&self.key, self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    type Runs = Arc<SharedRuns<&'static str, usize>>;

    /// A read that counts its starts and its ends and answers with the start it was.
    fn counting(
        started: &Arc<AtomicUsize>,
        ended: &Arc<AtomicUsize>,
        takes: Duration,
    ) -> impl FnOnce() -> BoxFuture<'static, usize> + Send + 'static {
        let (started, ended) = (started.clone(), ended.clone());
        move || {
            async move {
                let n = started.fetch_add(1, Ordering::SeqCst) + 1;
                tokio::time::sleep(takes).await;
                ended.fetch_add(1, Ordering::SeqCst);
                n
            }
            .boxed()
        }
    }

    fn counters() -> (Arc<AtomicUsize>, Arc<AtomicUsize>) {
        (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)))
    }

    #[tokio::test]
    async fn requests_arriving_during_a_run_share_the_next_run_not_the_running_one() {
        let runs: Runs = Default::default();
        let (started, ended) = counters();
        let first = {
            let (runs, read) = (runs.clone(), counting(&started, &ended, Duration::from_millis(200)));
            tokio::spawn(async move { runs.read("q", read).await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        let joined: Vec<_> = (0..20)
            .map(|_| {
                let (runs, read) = (runs.clone(), counting(&started, &ended, Duration::from_millis(200)));
                tokio::spawn(async move { runs.read("q", read).await })
            })
            .collect();
        assert_eq!(*first.await.expect("first").expect("an answer"), 1);
        for request in joined {
            assert_eq!(*request.await.expect("joined").expect("an answer"), 2, "read after it arrived, once for all");
        }
        assert_eq!(started.load(Ordering::SeqCst), 2);
        assert_eq!(runs.in_flight(), 0, "an ended run leaves no slot behind");
    }

    #[tokio::test]
    async fn a_run_every_request_left_is_stopped() {
        let runs: Runs = Default::default();
        let (started, ended) = counters();
        let gone = {
            let (runs, read) = (runs.clone(), counting(&started, &ended, Duration::from_millis(300)));
            tokio::spawn(async move { runs.read("q", read).await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(started.load(Ordering::SeqCst), 1);
        gone.abort();
        let _ = gone.await;
        assert_eq!(runs.in_flight(), 0, "the abandoned run left its slot at once");
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert_eq!(ended.load(Ordering::SeqCst), 0, "the run was stopped, not read to its end");
        let later = runs.read("q", counting(&started, &ended, Duration::from_millis(10))).await;
        assert_eq!(*later.expect("an answer"), 2);
    }

    #[tokio::test]
    async fn a_run_others_still_wait_for_goes_on_when_one_request_leaves() {
        let runs: Runs = Default::default();
        let (started, ended) = counters();
        let spawn = |runs: &Runs| {
            let (runs, read) = (runs.clone(), counting(&started, &ended, Duration::from_millis(200)));
            tokio::spawn(async move { runs.read("q", read).await })
        };
        let running = spawn(&runs);
        tokio::time::sleep(Duration::from_millis(50)).await;
        // Two join the next run; one of them leaves, and so does the running run's only one.
        let (leaving, staying) = (spawn(&runs), spawn(&runs));
        tokio::time::sleep(Duration::from_millis(20)).await;
        leaving.abort();
        running.abort();
        assert_eq!(*staying.await.expect("staying").expect("an answer"), 2, "the next run was read for it");
        assert_eq!(ended.load(Ordering::SeqCst), 1, "only the run someone waited for was read to its end");
        assert_eq!(runs.in_flight(), 0);
    }
}
