//! The long-lived Python process of one compile (`bridge.py`), and its line-framed JSON
//! protocol. The compiler sends a request; Python may ask questions back (attribute reads,
//! entity type parents, files to upload) before it gives the final answer.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value as Json, json};

const SCRIPT: &str = include_str!("bridge.py");

/// Answers the questions Python asks while it serves a request.
pub(crate) trait Questions {
    /// `{"get": [instance, attribute]}`: `{"v": value}`, `{"unset": true}`, `{"none": true}`,
    /// `{"unknown": true}`, `{"notfound": message}`.
    fn get(&mut self, instance: u32, attribute: &str) -> Json;
    /// `{"parents": [every parent entity], "attributes": {name: is_relation}}` of `entity`.
    fn entity_type(&mut self, entity: &str) -> Json;
    /// A file a resource mapper uploads (`Exporter.upload_file`).
    fn file(&mut self, hash: String, content: Vec<u8>);
}

pub(crate) struct Bridge {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    /// The interpreter's version, from its first line.
    pub version: String,
    line: String,
}

impl Bridge {
    /// Starts `python` on the bridge script in `cwd` and waits for it to be ready.
    pub(crate) fn start(python: &Path, cwd: &Path) -> Result<Bridge, String> {
        let mut child = Command::new(python)
            .arg("-c")
            .arg(SCRIPT)
            .current_dir(cwd)
            .env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("can not start {}: {e}", python.display()))?;
        let (Some(input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            return Err("the Python process has no pipes".into());
        };
        let mut bridge =
            Bridge { child, input, output: BufReader::new(output), version: String::new(), line: String::new() };
        let ready = bridge.read()?;
        bridge.version = ready["ready"].as_str().unwrap_or("").to_string();
        Ok(bridge)
    }

    fn write(&mut self, msg: &Json) -> Result<(), String> {
        let mut text = msg.to_string();
        text.push('\n');
        self.input
            .write_all(text.as_bytes())
            .and_then(|_| self.input.flush())
            .map_err(|e| format!("the Python process stopped ({e})"))
    }

    fn read(&mut self) -> Result<Json, String> {
        self.line.clear();
        match self.output.read_line(&mut self.line) {
            Ok(0) => {
                let status = self.child.wait().map(|s| s.to_string()).unwrap_or_default();
                Err(format!("the Python process exited ({status}); its error output is above"))
            }
            Ok(_) => serde_json::from_str(&self.line).map_err(|e| {
                format!("the Python process wrote something that is not JSON ({e}): {}", self.line.trim())
            }),
            Err(e) => Err(format!("can not read from the Python process: {e}")),
        }
    }

    /// Sends a request and answers Python's questions until its final answer.
    pub(crate) fn request(&mut self, msg: &Json, questions: &mut dyn Questions) -> Result<Json, String> {
        self.write(msg)?;
        loop {
            let answer = self.read()?;
            let Some(obj) = answer.as_object() else { return Err(format!("unexpected answer {answer}")) };
            if let Some(get) = obj.get("get") {
                let inst = get[0].as_u64().unwrap_or(u64::MAX) as u32;
                let attr = get[1].as_str().unwrap_or("");
                let reply = questions.get(inst, attr);
                self.write(&reply)?;
            } else if let Some(t) = obj.get("type") {
                let info = questions.entity_type(t.as_str().unwrap_or(""));
                self.write(&info)?;
            } else if let Some(hash) = obj.get("file") {
                let content: Vec<u8> = obj["content"].as_str().unwrap_or("").chars().map(|c| c as u32 as u8).collect();
                questions.file(hash.as_str().unwrap_or("").to_string(), content);
                self.write(&json!({}))?;
            } else {
                return Ok(answer);
            }
        }
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        // nothing to flush on the Python side: stopping it is immediate
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
