//! Where the log goes, written so that logging never takes the server down (issue 47).
//!
//! A log line is handed to a thread of its own through a bounded queue and the caller goes on:
//! a stderr on a full filesystem, a pipe whose reader has stopped or a slow terminal never
//! blocks a request or the store. A line that cannot be queued (the writer is behind) or
//! written (no space left, a broken pipe) is dropped and counted, never an error for the code
//! that logged it (tracing-subscriber would print such an error to stderr, and Rust's
//! `eprintln!` panics when stderr fails). Once a write succeeds again the log says how many
//! lines were lost and why.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};

use tracing_subscriber::fmt::MakeWriter;

/// Lines waiting for the writer thread; more are dropped (about 2 MB of typical lines).
const QUEUE: usize = 8192;

/// The log's writer for tracing-subscriber: lines go to a background thread that writes them
/// to `target`.
#[derive(Clone)]
pub struct LogWriter {
    queue: SyncSender<Vec<u8>>,
    dropped: Arc<AtomicU64>,
    /// Lines queued and not yet written (or dropped).
    pending: Arc<AtomicU64>,
}

impl LogWriter {
    pub fn spawn(target: Box<dyn Write + Send>) -> LogWriter {
        let (queue, lines) = sync_channel(QUEUE);
        let dropped = Arc::new(AtomicU64::new(0));
        let pending = Arc::new(AtomicU64::new(0));
        let (counter, left) = (dropped.clone(), pending.clone());
        let spawned = std::thread::Builder::new()
            .name("log-writer".into())
            .spawn(move || write_lines(lines, target, &counter, &left));
        if spawned.is_err() {
            // No thread: every line is dropped (counted), the server runs on.
            dropped.fetch_add(1, Ordering::Relaxed);
        }
        LogWriter { queue, dropped, pending }
    }

    /// Waits (at most `limit`) for the queued lines to be written: the last words of a process
    /// that is about to exit.
    pub fn drain(&self, limit: std::time::Duration) {
        let deadline = std::time::Instant::now() + limit;
        while self.pending.load(Ordering::SeqCst) > 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}

/// Writes queued lines until every sender is gone.
fn write_lines(lines: Receiver<Vec<u8>>, mut target: Box<dyn Write + Send>, dropped: &AtomicU64, pending: &AtomicU64) {
    let mut last_error: Option<std::io::Error> = None;
    for line in lines {
        write_line(&line, target.as_mut(), dropped, &mut last_error);
        pending.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Writes one line, after the notice of the lines dropped before it.
fn write_line(line: &[u8], target: &mut dyn Write, dropped: &AtomicU64, last_error: &mut Option<std::io::Error>) {
    let lost = dropped.swap(0, Ordering::Relaxed);
    if lost > 0 {
        let why = match last_error.take() {
            Some(e) => format!(" (writing the log failed: {e})"),
            None => " (the log could not keep up)".to_string(),
        };
        let notice = format!("{lost} log lines were dropped{why}; logging again\n");
        if let Err(e) = target.write_all(notice.as_bytes()).and_then(|()| target.flush()) {
            dropped.fetch_add(lost + 1, Ordering::Relaxed);
            *last_error = Some(e);
            return;
        }
    }
    if let Err(e) = target.write_all(line).and_then(|()| target.flush()) {
        dropped.fetch_add(1, Ordering::Relaxed);
        *last_error = Some(e);
    }
}

/// One event's text, queued when tracing-subscriber is done formatting it.
pub struct Line<'a> {
    writer: &'a LogWriter,
    text: Vec<u8>,
}

impl Write for Line<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.text.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Line<'_> {
    fn drop(&mut self) {
        if self.text.is_empty() {
            return;
        }
        self.writer.pending.fetch_add(1, Ordering::SeqCst);
        match self.writer.queue.try_send(std::mem::take(&mut self.text)) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.writer.pending.fetch_sub(1, Ordering::SeqCst);
                self.writer.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

impl<'a> MakeWriter<'a> for LogWriter {
    type Writer = Line<'a>;

    fn make_writer(&'a self) -> Line<'a> {
        Line { writer: self, text: Vec::new() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A target that fails while `full` is set, like a file on a full filesystem.
    #[derive(Clone, Default)]
    struct Disk {
        full: Arc<std::sync::atomic::AtomicBool>,
        written: Arc<Mutex<Vec<u8>>>,
    }

    impl Write for Disk {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.full.load(Ordering::SeqCst) {
                return Err(std::io::Error::from_raw_os_error(28));
            }
            self.written.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn log(writer: &LogWriter, text: &str) {
        writer.make_writer().write_all(text.as_bytes()).unwrap();
    }

    fn written_soon(disk: &Disk, want: &str) -> String {
        for _ in 0..200 {
            let text = String::from_utf8_lossy(&disk.written.lock().unwrap()).to_string();
            if text.contains(want) {
                return text;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!("{want:?} not written: {:?}", String::from_utf8_lossy(&disk.written.lock().unwrap()));
    }

    #[test]
    fn lines_lost_to_a_full_disk_are_counted_and_reported_once_there_is_room() {
        let disk = Disk::default();
        let writer = LogWriter::spawn(Box::new(disk.clone()));
        log(&writer, "one\n");
        written_soon(&disk, "one\n");
        disk.full.store(true, Ordering::SeqCst);
        for i in 0..3 {
            log(&writer, &format!("lost {i}\n"));
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        disk.full.store(false, Ordering::SeqCst);
        log(&writer, "two\n");
        let text = written_soon(&disk, "two\n");
        assert!(!text.contains("lost"), "{text}");
        assert!(text.contains("3 log lines were dropped (writing the log failed: No space left on device"), "{text}");
        assert!(text.find("dropped").unwrap() < text.find("two").unwrap(), "the notice comes first: {text}");
    }

    #[test]
    fn a_writer_that_never_returns_blocks_no_caller() {
        struct Stuck;
        impl Write for Stuck {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                std::thread::sleep(std::time::Duration::from_secs(3600));
                Ok(0)
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let writer = LogWriter::spawn(Box::new(Stuck));
        let started = std::time::Instant::now();
        for i in 0..(QUEUE + 100) {
            log(&writer, &format!("line {i}\n"));
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(5), "{:?}", started.elapsed());
        assert!(writer.dropped.load(Ordering::Relaxed) >= 99);
    }
}
