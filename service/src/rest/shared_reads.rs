//! Identical reads that arrive together are answered by one query
//! ([`orchestrator::shared_runs`]: each answer is read after its request arrived, and a read
//! whose every client has gone is stopped).

use std::future::Future;
use std::sync::Arc;

use axum::body::Bytes;
use orchestrator::shared_runs::SharedRuns;
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

/// The reads in flight, by key.
#[derive(Default)]
pub struct SharedReads {
    runs: Arc<SharedRuns<ReadKey, ApiResult<Bytes>>>,
}

impl SharedReads {
    /// The answer of `read` for `key`, read after this call began, shared with the identical
    /// requests that join the same run.
    pub async fn read<F, Fut>(self: &Arc<Self>, key: ReadKey, read: F) -> Answer
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = ApiResult<Bytes>> + Send + 'static,
    {
        match self.runs.read(key, read).await {
            Some(answer) => answer,
            None => Arc::new(Err(ApiError::internal(&"a shared read failed"))),
        }
    }

    /// How many keys have a run in flight (for tests).
    #[cfg(test)]
    fn in_flight(&self) -> usize {
        self.runs.in_flight()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use futures_util::FutureExt;
    use futures_util::future::BoxFuture;

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
    async fn different_keys_do_not_share() {
        let reads = Arc::new(SharedReads::default());
        let counter = Arc::new(AtomicUsize::new(0));
        let a = reads.read(key("a"), counting(&counter, Duration::from_millis(50)));
        let b = reads.read(key("b"), counting(&counter, Duration::from_millis(50)));
        let (a, b) = tokio::join!(a, b);
        assert_ne!(text(&a), text(&b));
        assert_eq!(counter.load(Ordering::SeqCst), 2);
        assert_eq!(reads.in_flight(), 0, "ended runs leave no slot behind");
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
