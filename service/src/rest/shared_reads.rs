//! Identical reads that arrive together are answered by one query.
//!
//! Many consoles and scripts polling the same page during a deploy ask the database the same
//! question many times a second, and each answer costs the same. A request that finds the same
//! read already running does not take that run's answer: it may have been read before the
//! request arrived, and a client that has just changed something must see its change. It joins
//! the *next* run instead, which starts as soon as the running one ends and answers everyone who
//! joined it. Every answer is thus read after its request arrived, as if the request had run
//! alone, and any number of identical requests arriving together cost at most two reads.
//!
//! Runs are tasks of their own: a client that goes away while its read runs cancels nothing
//! that others wait for, and a run always ends (and leaves its slot) whoever still waits.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use axum::body::Bytes;
use futures_util::FutureExt;
use futures_util::future::{BoxFuture, Shared};
use uuid::Uuid;

use super::error::{ApiError, ApiResult};

/// What makes two reads identical: the environment, the route and the query string as sent.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ReadKey {
    pub environment: Uuid,
    pub route: &'static str,
    pub query: String,
}

/// The answer of one run, shared by every request that joined it.
pub type Answer = Arc<ApiResult<Bytes>>;

type Run = Shared<BoxFuture<'static, Answer>>;

/// The run of one key that is reading now, and the one that waits for it to end.
#[derive(Default)]
struct Slot {
    running: Option<(u64, Run)>,
    next: Option<(u64, Run)>,
}

/// The reads in flight, by key.
#[derive(Default)]
pub struct SharedReads {
    slots: Mutex<HashMap<ReadKey, Slot>>,
    runs: std::sync::atomic::AtomicU64,
}

impl SharedReads {
    /// The answer of `read` for `key`, read after this call began: by a run of its own, or by
    /// the next run of the same key, shared with whoever joins it.
    pub async fn read<F, Fut>(self: &Arc<Self>, key: ReadKey, read: F) -> Answer
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = ApiResult<Bytes>> + Send + 'static,
    {
        let run = {
            let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
            let slot = slots.entry(key.clone()).or_default();
            match (&slot.running, &slot.next) {
                (_, Some((_, next))) => next.clone(),
                (running, None) => {
                    let id = self.runs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let before = running.as_ref().map(|(_, run)| run.clone());
                    let run = self.spawn(key, id, before.clone(), read);
                    if before.is_some() {
                        slot.next = Some((id, run.clone()));
                    } else {
                        slot.running = Some((id, run.clone()));
                    }
                    run
                }
            }
        };
        run.await
    }

    /// Starts run `id` of `key`, after `before` has ended when there is one.
    fn spawn<F, Fut>(self: &Arc<Self>, key: ReadKey, id: u64, before: Option<Run>, read: F) -> Run
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = ApiResult<Bytes>> + Send + 'static,
    {
        let reads = self.clone();
        let task = tokio::spawn(async move {
            if let Some(before) = before {
                before.await;
                reads.update(&key, |slot| {
                    if slot.next.as_ref().is_some_and(|(next, _)| *next == id) {
                        slot.running = slot.next.take();
                    }
                });
            }
            let answer = read().await;
            reads.update(&key, |slot| {
                if slot.running.as_ref().is_some_and(|(running, _)| *running == id) {
                    slot.running = None;
                }
            });
            Arc::new(answer)
        });
        async move {
            task.await.unwrap_or_else(|e| Arc::new(Err(ApiError::internal(&format!("a shared read failed: {e}")))))
        }
        .boxed()
        .shared()
    }

    fn update(&self, key: &ReadKey, change: impl FnOnce(&mut Slot)) {
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(slot) = slots.get_mut(key) {
            change(slot);
            if slot.running.is_none() && slot.next.is_none() {
                slots.remove(key);
            }
        }
    }

    /// How many keys have a run in flight (for tests).
    #[cfg(test)]
    fn in_flight(&self) -> usize {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    fn key(query: &str) -> ReadKey {
        ReadKey { environment: Uuid::nil(), route: "/test", query: query.into() }
    }

    /// A read that counts its runs and answers with the number it saw when it began.
    fn counting(
        counter: &Arc<AtomicUsize>,
        takes: Duration,
    ) -> impl FnOnce() -> BoxFuture<'static, ApiResult<Bytes>> + Send + 'static {
        let counter = counter.clone();
        move || {
            async move {
                let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
                tokio::time::sleep(takes).await;
                Ok(Bytes::from(n.to_string()))
            }
            .boxed()
        }
    }

    fn text(answer: &Answer) -> String {
        String::from_utf8(answer.as_ref().as_ref().expect("an answer").to_vec()).expect("utf-8")
    }

    #[tokio::test]
    async fn requests_arriving_during_a_run_share_the_next_run_not_the_running_one() {
        let reads = Arc::new(SharedReads::default());
        let counter = Arc::new(AtomicUsize::new(0));
        let first = {
            let (reads, read) = (reads.clone(), counting(&counter, Duration::from_millis(200)));
            tokio::spawn(async move { reads.read(key("q"), read).await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        // Arrived while run 1 reads: they must not get its answer.
        let joined: Vec<_> = (0..20)
            .map(|_| {
                let (reads, read) = (reads.clone(), counting(&counter, Duration::from_millis(200)));
                tokio::spawn(async move { reads.read(key("q"), read).await })
            })
            .collect();
        assert_eq!(text(&first.await.expect("first")), "1");
        for request in joined {
            assert_eq!(text(&request.await.expect("joined")), "2", "read after the request arrived, once for all");
        }
        assert_eq!(counter.load(Ordering::SeqCst), 2);
        assert_eq!(reads.in_flight(), 0, "an ended run leaves no slot behind");
    }

    #[tokio::test]
    async fn different_keys_do_not_share() {
        let reads = Arc::new(SharedReads::default());
        let counter = Arc::new(AtomicUsize::new(0));
        let a = reads.read(key("a"), counting(&counter, Duration::from_millis(50)));
        let b = reads.read(key("b"), counting(&counter, Duration::from_millis(50)));
        let (a, b) = tokio::join!(a, b);
        assert_ne!(text(&a), text(&b));
        assert_eq!(counter.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_request_that_goes_away_does_not_stop_the_run_others_wait_for() {
        let reads = Arc::new(SharedReads::default());
        let counter = Arc::new(AtomicUsize::new(0));
        let gone = {
            let (reads, read) = (reads.clone(), counting(&counter, Duration::from_millis(100)));
            tokio::spawn(async move { reads.read(key("q"), read).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        gone.abort();
        // The run goes on and ends; a later request gets a run of its own.
        tokio::time::sleep(Duration::from_millis(150)).await;
        assert_eq!(reads.in_flight(), 0);
        let later = reads.read(key("q"), counting(&counter, Duration::from_millis(10))).await;
        assert_eq!(text(&later), "2");
    }

    #[tokio::test]
    async fn errors_are_shared_like_answers() {
        let reads = Arc::new(SharedReads::default());
        let answer = reads.read(key("q"), || async { Err(ApiError::bad_request("no such filter")) }).await;
        let error = answer.as_ref().as_ref().expect_err("an error");
        assert_eq!(error.status, axum::http::StatusCode::BAD_REQUEST);
        assert_eq!(error.message, "no such filter");
    }
}
