//! A small LSP client that drives the server as an editor does: a child process spoken to over
//! its stdin/stdout with `Content-Length` framed JSON-RPC. Shared by the tests and the bench.

#![allow(dead_code)] // each user takes what it needs

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub struct Client {
    child: Child,
    stdin: ChildStdin,
    messages: Receiver<Value>,
    next_id: i64,
    /// Notifications read while waiting for something else.
    pub pending: Vec<Value>,
}

pub fn file_uri(path: &Path) -> String {
    format!("file://{}", path.display())
}

fn read_message(reader: &mut impl BufRead) -> Option<Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(v) = line.strip_prefix("Content-Length: ") {
            length = v.trim().parse::<usize>().ok();
        }
    }
    let mut body = vec![0; length?];
    reader.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

impl Client {
    /// Starts `command` and does the `initialize` handshake with `root` as the workspace.
    pub fn start(command: Command, root: &Path) -> (Client, Value) {
        let params = json!({
            "processId": std::process::id(),
            "rootUri": file_uri(root),
            "capabilities": {"textDocument": {"publishDiagnostics": {}}},
            "workspaceFolders": [{"uri": file_uri(root), "name": "project"}],
        });
        Client::start_with(command, params)
    }

    /// Starts `command` and does the `initialize` handshake with these parameters.
    pub fn start_with(mut command: Command, params: Value) -> (Client, Value) {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the language server starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, messages) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            while let Some(m) = read_message(&mut reader) {
                if tx.send(m).is_err() {
                    break;
                }
            }
        });
        let mut client = Client { child, stdin, messages, next_id: 0, pending: Vec::new() };
        let init = client.request("initialize", params);
        client.notify("initialized", json!({}));
        (client, init)
    }

    fn send(&mut self, message: &Value) {
        let body = message.to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).expect("write to the server");
        self.stdin.flush().expect("flush");
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request and waits for its response (the `result`, or the `error` object).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let m = self.next(deadline).unwrap_or_else(|| panic!("no answer to {method}"));
            if m["id"] == json!(id) && m.get("method").is_none() {
                return m.get("result").cloned().unwrap_or_else(|| json!({"error": m["error"]}));
            }
            self.pending.push(m);
        }
    }

    fn next(&mut self, deadline: Instant) -> Option<Value> {
        let left = deadline.saturating_duration_since(Instant::now());
        self.messages.recv_timeout(left).ok()
    }

    /// Waits for diagnostics of `uri` that `accept` takes, within `timeout`; earlier ones of the
    /// same file that it does not take are dropped.
    pub fn diagnostics_until(
        &mut self,
        uri: &str,
        timeout: Duration,
        accept: impl Fn(&[Value]) -> bool,
    ) -> Option<Vec<Value>> {
        let deadline = Instant::now() + timeout;
        let mut kept = Vec::new();
        let mut found = None;
        for m in std::mem::take(&mut self.pending) {
            if found.is_none() && is_diagnostics_of(&m, uri) && accept(diagnostics(&m)) {
                found = Some(diagnostics(&m).to_vec());
            } else if !is_diagnostics_of(&m, uri) {
                kept.push(m);
            }
        }
        self.pending = kept;
        if found.is_some() {
            return found;
        }
        while let Some(m) = self.next(deadline) {
            if is_diagnostics_of(&m, uri) {
                if accept(diagnostics(&m)) {
                    return Some(diagnostics(&m).to_vec());
                }
            } else {
                self.pending.push(m);
            }
        }
        None
    }

    pub fn open(&mut self, path: &Path, text: &str) {
        let params =
            json!({"textDocument": {"uri": file_uri(path), "languageId": "inmanta", "version": 1, "text": text}});
        self.notify("textDocument/didOpen", params);
    }

    pub fn change(&mut self, path: &Path, version: i64, text: &str) {
        let params =
            json!({"textDocument": {"uri": file_uri(path), "version": version}, "contentChanges": [{"text": text}]});
        self.notify("textDocument/didChange", params);
    }

    /// `shutdown`, `exit`, and the exit status of the server.
    pub fn stop(mut self) -> std::process::ExitStatus {
        self.request("shutdown", Value::Null);
        self.notify("exit", Value::Null);
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status;
            }
            assert!(Instant::now() < deadline, "the server did not exit after `exit`");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn is_diagnostics_of(m: &Value, uri: &str) -> bool {
    m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == uri
}

fn diagnostics(m: &Value) -> &[Value] {
    m["params"]["diagnostics"].as_array().map(Vec::as_slice).unwrap_or(&[])
}

/// A position as the protocol writes it.
pub fn at(path: &Path, line: u32, character: u32) -> Value {
    json!({"textDocument": {"uri": file_uri(path)}, "position": {"line": line, "character": character}})
}

/// A project of one `main.cf` holding `main`, modules under `libs`, in a new temporary directory.
pub fn project(main: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("project.yml"), "name: demo\nmodulepath: libs\ndownloadpath: libs\n")
        .expect("write");
    std::fs::write(dir.path().join("main.cf"), main).expect("write");
    dir
}
