//! What a scheduler wrote down since its last batch, and the writer that stores it beside the
//! loop (writer.rs).

use api::state::Blocked;

use super::model::Rid;
use super::writer::{Batch, MAX_UNSAVED, Writer};
use crate::resources::{FinishedAction, StartedAction};

pub(crate) struct Journal {
    /// Actions of deploys that start once they are stored.
    announced: Vec<StartedAction>,
    /// Resources handed to an agent.
    started: Vec<Rid>,
    /// Handler runs that ended.
    pub finished: Vec<FinishedAction>,
    /// Temporary blocks set or lifted.
    blocked: Vec<(Rid, Blocked)>,
    /// Commits the batches beside the loop; a write refused because the lease is gone ends the
    /// scheduler.
    pub writer: Writer,
}

impl Journal {
    pub fn new(writer: Writer) -> Journal {
        Journal { announced: vec![], started: vec![], finished: vec![], blocked: vec![], writer }
    }

    pub fn started(&mut self, rid: Rid) {
        self.started.push(rid);
    }

    /// A deploy whose action must be stored before its handler runs: it goes out with the next
    /// batch, whose number [`Journal::next_batch`] says.
    pub fn announce(&mut self, action: StartedAction) {
        self.announced.push(action);
    }

    /// The number of the next batch the writer gets ([`Writer::batches_done`] counts the same).
    pub fn next_batch(&self) -> u64 {
        self.writer.batches_sent() + 1
    }

    pub fn blocked(&mut self, rid: Rid, blocked: Blocked) {
        self.blocked.push((rid, blocked));
    }

    /// Drops what was not handed to the writer yet (the state is reloaded from the database).
    pub fn clear(&mut self) {
        self.announced.clear();
        self.started.clear();
        self.finished.clear();
        self.blocked.clear();
    }

    /// Results of handler runs not yet stored: handed to the writer or collected for it.
    pub fn unsaved(&self) -> usize {
        self.finished.len() + self.writer.unsaved()
    }

    /// Too many results wait to be stored: no new handler run starts until the writer catches
    /// up (writer.rs).
    pub fn held_back(&self) -> bool {
        self.unsaved() >= MAX_UNSAVED
    }

    /// What was written down since the last batch, with resource ids as the database stores them.
    fn take_batch(&mut self) -> Batch {
        Batch {
            announced: std::mem::take(&mut self.announced),
            started: std::mem::take(&mut self.started).iter().map(|rid| rid.to_string()).collect(),
            finished: std::mem::take(&mut self.finished),
            blocked: std::mem::take(&mut self.blocked).into_iter().map(|(rid, b)| (rid.to_string(), b)).collect(),
        }
    }

    /// Hands the writes collected so far to the writer unless it is still storing the previous
    /// batch (then they wait for the next tick and go out together): the loop goes on
    /// dispatching while the database commits.
    pub fn flush_in_background(&mut self) {
        if self.writer.idle() {
            let batch = self.take_batch();
            self.writer.hand_over(batch);
        }
    }

    /// Stores every write collected so far and waits until it is stored: before the scheduler
    /// reads the database, hands over or stops, and before it answers that it is idle.
    pub async fn flush(&mut self) {
        let batch = self.take_batch();
        self.writer.write_and_wait(batch).await;
    }
}
