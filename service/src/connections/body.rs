//! `[server] body-timeout`: a request body that stops arriving for that long fails with
//! [`BodyTimedOut`], which the REST extractors answer with 408.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::body::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::time::{Instant, Sleep};

/// A request body stalled longer than `[server] body-timeout`.
#[derive(Debug, thiserror::Error)]
#[error("the request body stalled: nothing arrived for {} s ([server] body-timeout)", .0.as_secs_f64())]
pub struct BodyTimedOut(pub Duration);

/// The [`BodyTimedOut`] somewhere in an error's chain of sources, if any.
pub fn body_timed_out<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a BodyTimedOut> {
    let mut current = Some(error);
    while let Some(e) = current {
        if let Some(timed_out) = e.downcast_ref::<BodyTimedOut>() {
            return Some(timed_out);
        }
        current = e.source();
    }
    None
}

/// A body whose pauses are limited: the clock starts when the reader first waits for data and
/// restarts with each piece that arrives.
pub struct Timed<B> {
    inner: B,
    limit: Duration,
    sleep: Option<Pin<Box<Sleep>>>,
}

impl<B> Timed<B> {
    pub fn new(inner: B, limit: Duration) -> Timed<B> {
        Timed { inner, limit, sleep: None }
    }
}

impl<B> Body for Timed<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                this.sleep = None;
                Poll::Ready(frame.map(|f| f.map_err(Into::into)))
            }
            Poll::Pending => {
                let limit = this.limit;
                let sleep =
                    this.sleep.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(Instant::now() + limit)));
                ready!(sleep.as_mut().poll(cx));
                Poll::Ready(Some(Err(Box::new(BodyTimedOut(limit)))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
