//! `mitogen::Sudo`: become another user on a host reached locally or over ssh.
//!
//! SFTP and local file calls run as the connecting user, so every operation here is a small
//! coreutils command run under `sudo -n` on the inner host.

use std::io;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::host::{CommandOutput, CommandSpec, FileKind, FileStat, Host};

/// Runs every operation as `username` through `sudo` on the inner host.
pub struct SudoHost {
    inner: Arc<dyn Host>,
    username: String,
    preserve_env: bool,
    set_home: bool,
    program: String,
}

impl SudoHost {
    pub fn new(inner: Arc<dyn Host>, username: &str) -> SudoHost {
        SudoHost { inner, username: username.to_string(), preserve_env: false, set_home: false, program: "sudo".into() }
    }

    /// Uses another program than `sudo` with the same flags (`-n -u USER [-E] [-H] -- CMD...`).
    pub fn with_program(mut self, program: &str) -> SudoHost {
        self.program = program.to_string();
        self
    }

    /// Reads `username`, `preserve_env` and `set_home` as `mitogen::Sudo` exports them.
    pub fn from_via(inner: Arc<dyn Host>, via: &Map<String, Value>) -> SudoHost {
        let username = via.get("username").and_then(Value::as_str).filter(|s| !s.is_empty()).unwrap_or("root");
        let flag = |k: &str| via.get(k).and_then(Value::as_bool).unwrap_or(false);
        SudoHost { preserve_env: flag("preserve_env"), set_home: flag("set_home"), ..SudoHost::new(inner, username) }
    }

    fn wrap(&self, spec: &CommandSpec) -> CommandSpec {
        let mut argv = vec![self.program.clone(), "-n".into(), "-u".into(), self.username.clone()];
        if self.preserve_env {
            argv.push("-E".into());
        }
        if self.set_home {
            argv.push("-H".into());
        }
        argv.push("--".into());
        if !spec.env.is_empty() {
            // sudo resets the environment, so set it on the far side.
            argv.push("env".into());
            argv.extend(spec.env.iter().map(|(k, v)| format!("{k}={v}")));
        }
        argv.extend(spec.argv.iter().cloned());
        CommandSpec { argv, env: Vec::new(), ..spec.clone() }
    }

    /// Runs a helper command and turns a non-zero exit into an error carrying its stderr.
    fn sh(&self, argv: &[&str], stdin: Option<&[u8]>) -> io::Result<CommandOutput> {
        let mut spec = CommandSpec::new(argv);
        spec.stdin = stdin.map(<[u8]>::to_vec);
        let out = self.run(&spec)?;
        if out.success() {
            return Ok(out);
        }
        let err = out.stderr_str();
        let kind = if err.contains("No such file") { io::ErrorKind::NotFound } else { io::ErrorKind::Other };
        Err(io::Error::new(kind, format!("{} failed: {}", argv.join(" "), err.trim())))
    }
}

impl Host for SudoHost {
    fn describe(&self) -> String {
        format!("sudo -u {} on {}", self.username, self.inner.describe())
    }

    fn lstat(&self, path: &str) -> io::Result<Option<FileStat>> {
        let script = r#"if [ -e "$1" ] || [ -L "$1" ]; then stat -c '%f %u %g %s' -- "$1"; else echo missing; fi"#;
        let out = self.sh(&["sh", "-c", script, "sh", path], None)?;
        let text = out.stdout_str();
        let f: Vec<&str> = text.split_whitespace().collect();
        if f == ["missing"] {
            return Ok(None);
        }
        let bad = || io::Error::other(format!("unexpected stat output {text:?}"));
        let [raw, uid, gid, size] = f[..] else { return Err(bad()) };
        let raw = u32::from_str_radix(raw, 16).map_err(|_| bad())?;
        let kind = match raw & 0o170000 {
            0o100000 => FileKind::File,
            0o040000 => FileKind::Directory,
            0o120000 => FileKind::Symlink,
            _ => FileKind::Other,
        };
        Ok(Some(FileStat {
            kind,
            mode: raw & 0o7777,
            uid: uid.parse().map_err(|_| bad())?,
            gid: gid.parse().map_err(|_| bad())?,
            size: size.parse().map_err(|_| bad())?,
        }))
    }

    fn read(&self, path: &str) -> io::Result<Vec<u8>> {
        Ok(self.sh(&["cat", "--", path], None)?.stdout)
    }

    fn write(&self, path: &str, data: &[u8]) -> io::Result<()> {
        self.sh(&["sh", "-c", r#"cat > "$1""#, "sh", path], Some(data)).map(drop)
    }

    fn mkdir(&self, path: &str) -> io::Result<()> {
        self.sh(&["mkdir", "--", path], None).map(drop)
    }

    fn chmod(&self, path: &str, mode: u32) -> io::Result<()> {
        self.sh(&["chmod", &format!("{mode:o}"), "--", path], None).map(drop)
    }

    fn chown(&self, path: &str, uid: Option<u32>, gid: Option<u32>) -> io::Result<()> {
        let spec = match (uid, gid) {
            (Some(u), Some(g)) => format!("{u}:{g}"),
            (Some(u), None) => u.to_string(),
            (None, Some(g)) => format!(":{g}"),
            (None, None) => return Ok(()),
        };
        self.sh(&["chown", "-h", &spec, "--", path], None).map(drop)
    }

    fn symlink(&self, target: &str, link: &str) -> io::Result<()> {
        self.sh(&["ln", "-s", "--", target, link], None).map(drop)
    }

    fn read_link(&self, path: &str) -> io::Result<String> {
        Ok(self.sh(&["readlink", "--", path], None)?.stdout_str().trim_end_matches('\n').to_string())
    }

    fn remove(&self, path: &str) -> io::Result<()> {
        self.sh(&["rm", "-rf", "--", path], None).map(drop)
    }

    fn run(&self, spec: &CommandSpec) -> io::Result<CommandOutput> {
        self.inner.run(&self.wrap(spec))
    }
}
