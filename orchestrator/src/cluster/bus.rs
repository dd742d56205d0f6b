//! The event bus across servers: each event published after a commit is announced with
//! `NOTIFY inmanta_events`; every server listens (sqlx `PgListener`) and feeds what the others
//! announced to its local bus. A listener that lost its connection publishes
//! [`Event::Resync`](crate::Event::Resync): notifications sent meanwhile are gone, so whoever
//! keeps state from events reads it again.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use super::Node;
use crate::{Event, Orchestrator};

pub const CHANNEL: &str = "inmanta_events";

#[derive(serde::Serialize, serde::Deserialize)]
struct Announcement {
    origin: String,
    event: Event,
}

pub(super) fn start(o: Orchestrator, node: Arc<Node>, inbox: mpsc::UnboundedReceiver<Event>, url: String) {
    tokio::spawn(announce(o.clone(), node.id.clone(), inbox));
    tokio::spawn(listen(o, node.id.clone(), url));
}

/// Sends the announcements, a burst at a time; repeated events of a burst go once.
async fn announce(o: Orchestrator, origin: String, mut inbox: mpsc::UnboundedReceiver<Event>) {
    while let Some(first) = inbox.recv().await {
        let mut burst = vec![first];
        while let Ok(more) = inbox.try_recv() {
            if !burst.contains(&more) {
                burst.push(more);
            }
        }
        for event in burst {
            let payload = match serde_json::to_string(&Announcement { origin: origin.clone(), event }) {
                Ok(p) => p,
                Err(e) => {
                    tracing::error!(error = %e, "cannot encode an event for the other servers");
                    continue;
                }
            };
            if let Err(e) =
                sqlx::query("SELECT pg_notify($1, $2)").bind(CHANNEL).bind(payload).execute(o.store().pool()).await
            {
                tracing::warn!(error = %e, "cannot announce an event to the other servers");
            }
        }
    }
}

/// Feeds what the other servers announce to the local bus, for as long as the process lives.
async fn listen(o: Orchestrator, me: String, url: String) {
    loop {
        let mut listener = match sqlx::postgres::PgListener::connect(&url).await {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!(error = %e, "cannot open the event listener; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        if let Err(e) = listener.listen(CHANNEL).await {
            tracing::warn!(error = %e, "cannot listen for events; retrying");
            tokio::time::sleep(Duration::from_secs(1)).await;
            continue;
        }
        // Whatever was announced before this listener (re)started is unknown.
        o.publish_local(Event::Resync);
        loop {
            match listener.try_recv().await {
                Ok(Some(notification)) => match serde_json::from_str::<Announcement>(notification.payload()) {
                    Ok(a) if a.origin != me => o.publish_local(a.event),
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "an announcement that is not an event"),
                },
                Ok(None) => {
                    tracing::warn!("the event listener lost its connection: subscribers reload");
                    o.publish_local(Event::Resync);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "the event listener failed; reconnecting");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    break;
                }
            }
        }
    }
}
