//! The operations handlers need on a managed host, and the ways to reach one: [`LocalHost`],
//! [`SshHost`] (files through SFTP, commands through ssh exec) and [`SudoHost`] (every operation as
//! a command under `sudo`, on top of either).
//!
//! Every built-in handler is written against [`Host`] only, so each works over each transport.

pub(crate) mod local;
mod ssh;
mod sudo;

use std::io;
use std::time::Duration;

pub use local::LocalHost;
pub use ssh::{HostKeyCheck, SshHost, SshOptions};
pub use sudo::SudoHost;

/// What an `lstat` found at a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    File,
    Directory,
    Symlink,
    Other,
}

/// The metadata handlers compare against the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStat {
    pub kind: FileKind,
    /// Permission bits only (`0o7777` mask).
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub size: u64,
}

/// A command to run: no shell, the program and its arguments as separate words.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CommandSpec {
    pub argv: Vec<String>,
    pub cwd: Option<String>,
    /// Added to (or overriding) the inherited environment.
    pub env: Vec<(String, String)>,
    pub stdin: Option<Vec<u8>>,
    pub timeout: Option<Duration>,
}

impl CommandSpec {
    pub fn new<S: AsRef<str>>(argv: &[S]) -> CommandSpec {
        CommandSpec { argv: argv.iter().map(|s| s.as_ref().to_string()).collect(), ..CommandSpec::default() }
    }

    /// The command as one line for a remote shell, each word quoted. A timeout becomes a
    /// coreutils `timeout` around the command (exit code 124 or 137 when it fires).
    pub(crate) fn to_shell(&self) -> String {
        let mut words = Vec::new();
        if let Some(t) = self.timeout {
            words.extend(["timeout".to_string(), "-k".into(), "5".into(), format!("{}", t.as_secs_f64().max(0.001))]);
        }
        if !self.env.is_empty() {
            words.push("env".into());
            words.extend(self.env.iter().map(|(k, v)| format!("{k}={v}")));
        }
        words.extend(self.argv.iter().cloned());
        let line = words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ");
        match &self.cwd {
            Some(cwd) => format!("cd {} && {line}", quote(cwd)),
            None => line,
        }
    }
}

/// Quotes one word for a POSIX shell.
pub(crate) fn quote(word: &str) -> String {
    if !word.is_empty() && word.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./=:@%+,".contains(&b)) {
        return word.to_string();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// How a command ended.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CommandOutput {
    /// The exit code; `None` when killed by a signal or timed out.
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub timed_out: bool,
}

impl CommandOutput {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    pub fn stdout_str(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    pub fn stderr_str(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
}

/// A machine handlers act on. Paths are absolute paths on that machine.
pub trait Host: Send + Sync {
    /// A short description for log lines (`local`, `ssh admin@10.0.0.1:22`, ...).
    fn describe(&self) -> String;

    /// Metadata of the path itself (a symlink is not followed); `None` when nothing is there.
    fn lstat(&self, path: &str) -> io::Result<Option<FileStat>>;

    fn read(&self, path: &str) -> io::Result<Vec<u8>>;

    /// Creates or truncates the file and writes `data`; keeps mode and owner of an existing file.
    fn write(&self, path: &str, data: &[u8]) -> io::Result<()>;

    fn mkdir(&self, path: &str) -> io::Result<()>;

    fn chmod(&self, path: &str, mode: u32) -> io::Result<()>;

    fn chown(&self, path: &str, uid: Option<u32>, gid: Option<u32>) -> io::Result<()>;

    /// Creates a symlink at `link` pointing to `target`.
    fn symlink(&self, target: &str, link: &str) -> io::Result<()>;

    fn read_link(&self, path: &str) -> io::Result<String>;

    /// Removes a file, a symlink or a whole directory tree.
    fn remove(&self, path: &str) -> io::Result<()>;

    fn run(&self, cmd: &CommandSpec) -> io::Result<CommandOutput>;
}

/// Which account database an id lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Db {
    Passwd,
    Group,
}

impl Db {
    fn name(self) -> &'static str {
        match self {
            Db::Passwd => "passwd",
            Db::Group => "group",
        }
    }
}

/// Resolves a user or group name (or a numeric string) to its id on the host: from
/// `/etc/passwd` / `/etc/group`, else `getent` (for LDAP and other NSS sources).
pub(crate) fn lookup_id(host: &dyn Host, db: Db, name: &str) -> io::Result<u32> {
    if let Ok(id) = name.parse::<u32>() {
        return Ok(id);
    }
    let file = format!("/etc/{}", db.name());
    if let Ok(text) = host.read(&file)
        && let Some(id) = find_in_db(&String::from_utf8_lossy(&text), |f| f[0] == name).and_then(|f| f[2].parse().ok())
    {
        return Ok(id);
    }
    let out = host.run(&CommandSpec::new(&["getent", db.name(), name]))?;
    if out.success()
        && let Some(id) = find_in_db(&out.stdout_str(), |f| f[0] == name).and_then(|f| f[2].parse().ok())
    {
        return Ok(id);
    }
    Err(io::Error::new(
        io::ErrorKind::NotFound,
        format!("no {} entry named {name:?} on {}", db.name(), host.describe()),
    ))
}

/// The name of a user or group id on the host, or the number as text when it has none.
pub(crate) fn lookup_name(host: &dyn Host, db: Db, id: u32) -> String {
    let idtext = id.to_string();
    if let Ok(text) = host.read(&format!("/etc/{}", db.name()))
        && let Some(f) = find_in_db(&String::from_utf8_lossy(&text), |f| f[2] == idtext)
    {
        return f[0].to_string();
    }
    if let Ok(out) = host.run(&CommandSpec::new(&["getent", db.name(), &idtext]))
        && out.success()
        && let Some(f) = find_in_db(&out.stdout_str(), |f| f[2] == idtext)
    {
        return f[0].to_string();
    }
    idtext
}

fn find_in_db(text: &str, pred: impl Fn(&[&str]) -> bool) -> Option<Vec<&str>> {
    text.lines().map(|l| l.split(':').collect::<Vec<_>>()).find(|f| f.len() >= 3 && pred(f))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_for_a_remote_shell() {
        assert_eq!(quote("abc/d.txt"), "abc/d.txt");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote(""), "''");
        let mut c = CommandSpec::new(&["echo", "a b"]);
        c.cwd = Some("/tmp/x y".into());
        c.env = vec![("K".into(), "v w".into())];
        assert_eq!(c.to_shell(), "cd '/tmp/x y' && env 'K=v w' echo 'a b'");
        c.timeout = Some(Duration::from_secs(2));
        assert_eq!(c.to_shell(), "cd '/tmp/x y' && timeout -k 5 2 env 'K=v w' echo 'a b'");
    }

    #[test]
    fn ids_resolve_from_the_local_account_database() {
        let h = LocalHost;
        assert_eq!(lookup_id(&h, Db::Passwd, "root").unwrap(), 0);
        assert_eq!(lookup_id(&h, Db::Group, "0").unwrap(), 0);
        assert_eq!(lookup_name(&h, Db::Passwd, 0), "root");
        assert!(lookup_id(&h, Db::Passwd, "no-such-user-here").is_err());
        assert_eq!(lookup_name(&h, Db::Group, 4_000_000), "4000000");
    }
}
