//! Agentless hosts over ssh (`mitogen::Ssh`): files through SFTP, commands through exec.
//!
//! One connection per host is kept open and reused by every handler run; a broken connection is
//! reopened on the next operation.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{Map, Value};
use ssh2::{CheckResult, KnownHostFileKind, OpenFlags, OpenType, Session, Sftp};

use crate::host::{CommandOutput, CommandSpec, FileKind, FileStat, Host};

/// How to check the server's host key (`check_host_keys` of `mitogen::Ssh`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostKeyCheck {
    /// The key must be in the known hosts file (`true` or `"enforce"`).
    Enforce,
    /// An unknown host is accepted, a changed key is refused (`"accept"`).
    Accept,
    /// No check (`false`, the model's default, or `"ignore"`).
    Ignore,
}

/// The connection settings of one ssh host, read from a `via` dict.
#[derive(Debug, Clone, PartialEq)]
pub struct SshOptions {
    pub hostname: String,
    pub port: u16,
    pub username: String,
    pub identity_file: Option<PathBuf>,
    pub password: Option<String>,
    pub check_host_keys: HostKeyCheck,
    /// `known_hosts_file` in `via`; default `~/.ssh/known_hosts`.
    pub known_hosts_file: PathBuf,
    pub connect_timeout: Duration,
}

impl SshOptions {
    /// Reads the fields `mitogen::Ssh` exports: `hostname`, `port`, `username`, `identity_file`,
    /// `check_host_keys`, `connect_timeout`, plus `password` and `known_hosts_file`.
    pub fn from_via(via: &Map<String, Value>) -> Result<SshOptions, String> {
        let s = |k: &str| via.get(k).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string);
        let hostname = s("hostname").ok_or("ssh via without a `hostname`")?;
        let port = match via.get("port") {
            None | Some(Value::Null) => 22,
            Some(v) => v.as_u64().and_then(|p| u16::try_from(p).ok()).ok_or(format!("invalid ssh port {v}"))?,
        };
        let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
        let username = s("username").or_else(|| std::env::var("USER").ok()).unwrap_or_else(|| "root".into());
        let check_host_keys = match via.get("check_host_keys") {
            None | Some(Value::Null | Value::Bool(false)) => HostKeyCheck::Ignore,
            Some(Value::Bool(true)) => HostKeyCheck::Enforce,
            Some(Value::String(m)) if m == "enforce" => HostKeyCheck::Enforce,
            Some(Value::String(m)) if m == "accept" => HostKeyCheck::Accept,
            Some(Value::String(m)) if m == "ignore" => HostKeyCheck::Ignore,
            Some(other) => {
                return Err(format!("invalid check_host_keys {other}: expected a bool, enforce, accept or ignore"));
            }
        };
        let connect_timeout = via.get("connect_timeout").and_then(Value::as_f64).filter(|t| *t > 0.0).unwrap_or(30.0);
        Ok(SshOptions {
            hostname,
            port,
            username,
            identity_file: s("identity_file").map(PathBuf::from),
            password: s("password"),
            check_host_keys,
            known_hosts_file: s("known_hosts_file")
                .map(PathBuf::from)
                .unwrap_or_else(|| Path::new(&home).join(".ssh/known_hosts")),
            connect_timeout: Duration::from_secs_f64(connect_timeout),
        })
    }
}

struct Conn {
    sess: Session,
    sftp: Sftp,
}

/// A host reached over ssh.
pub struct SshHost {
    opts: SshOptions,
    conn: Mutex<Option<Conn>>,
}

impl SshHost {
    /// Does not connect yet: the first operation does.
    pub fn new(opts: SshOptions) -> SshHost {
        SshHost { opts, conn: Mutex::new(None) }
    }

    fn connect(&self) -> io::Result<Conn> {
        let o = &self.opts;
        let addr = (o.hostname.as_str(), o.port)
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("cannot resolve {}", o.hostname)))?;
        let tcp = TcpStream::connect_timeout(&addr, o.connect_timeout)?;
        let mut sess = Session::new()?;
        sess.set_tcp_stream(tcp);
        sess.set_timeout(o.connect_timeout.as_millis().min(u32::MAX as u128) as u32);
        sess.handshake()?;
        self.check_host_key(&sess)?;
        self.authenticate(&sess)?;
        // Commands may legitimately run long; their own timeout is enforced remotely.
        sess.set_timeout(0);
        let sftp = sess.sftp()?;
        Ok(Conn { sess, sftp })
    }

    fn check_host_key(&self, sess: &Session) -> io::Result<()> {
        let o = &self.opts;
        if o.check_host_keys == HostKeyCheck::Ignore {
            return Ok(());
        }
        let (key, _) = sess.host_key().ok_or_else(|| io::Error::other("the ssh server sent no host key"))?;
        let mut known = sess.known_hosts()?;
        if o.known_hosts_file.exists() {
            known.read_file(&o.known_hosts_file, KnownHostFileKind::OpenSSH)?;
        }
        let fail = |why: &str| {
            Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("host key of {}:{} {why} ({})", o.hostname, o.port, o.known_hosts_file.display()),
            ))
        };
        match known.check_port(&o.hostname, o.port, key) {
            CheckResult::Match => Ok(()),
            CheckResult::NotFound if o.check_host_keys == HostKeyCheck::Accept => Ok(()),
            CheckResult::NotFound => fail("is not in the known hosts file"),
            CheckResult::Mismatch => fail("does NOT match the known hosts file: possible man-in-the-middle attack"),
            CheckResult::Failure => fail("could not be checked against the known hosts file"),
        }
    }

    fn authenticate(&self, sess: &Session) -> io::Result<()> {
        let o = &self.opts;
        let mut tried = Vec::new();
        if let Some(key) = &o.identity_file {
            match sess.userauth_pubkey_file(&o.username, None, key, None) {
                Ok(()) => return Ok(()),
                Err(e) => tried.push(format!("key {}: {e}", key.display())),
            }
        }
        if let Some(pw) = &o.password {
            match sess.userauth_password(&o.username, pw) {
                Ok(()) => return Ok(()),
                Err(e) => tried.push(format!("password: {e}")),
            }
        }
        if o.identity_file.is_none() && o.password.is_none() {
            if std::env::var_os("SSH_AUTH_SOCK").is_some() {
                match sess.userauth_agent(&o.username) {
                    Ok(()) => return Ok(()),
                    Err(e) => tried.push(format!("agent: {e}")),
                }
            }
            let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
            for name in ["id_ed25519", "id_ecdsa", "id_rsa"] {
                let key = Path::new(&home).join(".ssh").join(name);
                if key.exists() {
                    match sess.userauth_pubkey_file(&o.username, None, &key, None) {
                        Ok(()) => return Ok(()),
                        Err(e) => tried.push(format!("key {}: {e}", key.display())),
                    }
                }
            }
        }
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("ssh authentication as {} failed; tried: {}", o.username, tried.join("; ")),
        ))
    }

    /// Runs `f` on the open connection (opening it first); when the call fails because the
    /// connection died, reconnects once and retries.
    fn with<T>(&self, f: impl Fn(&Conn) -> io::Result<T>) -> io::Result<T> {
        let mut guard = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        if guard.is_none() {
            *guard = Some(self.connect().map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", self.describe())))?);
        }
        let Some(conn) = guard.as_ref() else { unreachable!("connection was just set") };
        match f(conn) {
            Ok(v) => Ok(v),
            Err(e) if conn.sftp.realpath(Path::new(".")).is_ok() => Err(e),
            Err(_) => {
                *guard = None;
                let conn = self.connect()?;
                let out = f(&conn);
                *guard = Some(conn);
                out
            }
        }
    }
}

fn kind_of(perm: u32) -> FileKind {
    match perm & 0o170000 {
        0o100000 => FileKind::File,
        0o040000 => FileKind::Directory,
        0o120000 => FileKind::Symlink,
        _ => FileKind::Other,
    }
}

fn empty_stat() -> ssh2::FileStat {
    ssh2::FileStat { size: None, uid: None, gid: None, perm: None, atime: None, mtime: None }
}

fn remove_tree(sftp: &Sftp, path: &Path) -> io::Result<()> {
    let st = match sftp.lstat(path) {
        Ok(st) => st,
        Err(e) => {
            let e = io::Error::from(e);
            return if e.kind() == io::ErrorKind::NotFound { Ok(()) } else { Err(e) };
        }
    };
    if kind_of(st.perm.unwrap_or(0)) == FileKind::Directory {
        for (child, _) in sftp.readdir(path)? {
            let name = child.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            if name == "." || name == ".." {
                continue;
            }
            remove_tree(sftp, &child)?;
        }
        sftp.rmdir(path)?;
    } else {
        sftp.unlink(path)?;
    }
    Ok(())
}

impl Host for SshHost {
    fn describe(&self) -> String {
        format!("ssh {}@{}:{}", self.opts.username, self.opts.hostname, self.opts.port)
    }

    fn lstat(&self, path: &str) -> io::Result<Option<FileStat>> {
        self.with(|c| match c.sftp.lstat(Path::new(path)) {
            Ok(st) => {
                let perm = st.perm.unwrap_or(0);
                Ok(Some(FileStat {
                    kind: kind_of(perm),
                    mode: perm & 0o7777,
                    uid: st.uid.unwrap_or(0),
                    gid: st.gid.unwrap_or(0),
                    size: st.size.unwrap_or(0),
                }))
            }
            Err(e) => {
                let e = io::Error::from(e);
                if e.kind() == io::ErrorKind::NotFound { Ok(None) } else { Err(e) }
            }
        })
    }

    fn read(&self, path: &str) -> io::Result<Vec<u8>> {
        self.with(|c| {
            let mut buf = Vec::new();
            c.sftp.open(Path::new(path))?.read_to_end(&mut buf)?;
            Ok(buf)
        })
    }

    fn write(&self, path: &str, data: &[u8]) -> io::Result<()> {
        self.with(|c| {
            let flags = OpenFlags::WRITE | OpenFlags::CREATE | OpenFlags::TRUNCATE;
            let mut f = c.sftp.open_mode(Path::new(path), flags, 0o644, OpenType::File)?;
            f.write_all(data)?;
            f.flush()
        })
    }

    fn mkdir(&self, path: &str) -> io::Result<()> {
        self.with(|c| Ok(c.sftp.mkdir(Path::new(path), 0o755)?))
    }

    fn chmod(&self, path: &str, mode: u32) -> io::Result<()> {
        self.with(|c| Ok(c.sftp.setstat(Path::new(path), ssh2::FileStat { perm: Some(mode), ..empty_stat() })?))
    }

    fn chown(&self, path: &str, uid: Option<u32>, gid: Option<u32>) -> io::Result<()> {
        self.with(|c| {
            // SFTP sets owner and group together, so fill in the one that stays.
            let st = c.sftp.lstat(Path::new(path))?;
            let stat = ssh2::FileStat { uid: uid.or(st.uid), gid: gid.or(st.gid), ..empty_stat() };
            Ok(c.sftp.setstat(Path::new(path), stat)?)
        })
    }

    fn symlink(&self, target: &str, link: &str) -> io::Result<()> {
        // OpenSSH's sftp-server takes the arguments in the order libssh2 sends them here.
        self.with(|c| Ok(c.sftp.symlink(Path::new(target), Path::new(link))?))
    }

    fn read_link(&self, path: &str) -> io::Result<String> {
        self.with(|c| Ok(c.sftp.readlink(Path::new(path))?.to_string_lossy().into_owned()))
    }

    fn remove(&self, path: &str) -> io::Result<()> {
        self.with(|c| remove_tree(&c.sftp, Path::new(path)))
    }

    fn run(&self, spec: &CommandSpec) -> io::Result<CommandOutput> {
        if spec.argv.is_empty() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "empty command"));
        }
        let line = spec.to_shell();
        self.with(|c| {
            let mut ch = c.sess.channel_session()?;
            ch.exec(&line)?;
            if let Some(data) = &spec.stdin {
                ch.write_all(data)?;
            }
            ch.send_eof()?;
            let mut stdout = Vec::new();
            ch.read_to_end(&mut stdout)?;
            let mut stderr = Vec::new();
            ch.stderr().read_to_end(&mut stderr)?;
            ch.wait_close()?;
            let code = ch.exit_status()?;
            let timed_out = spec.timeout.is_some() && (code == 124 || code == 137);
            Ok(CommandOutput { code: if timed_out { None } else { Some(code) }, stdout, stderr, timed_out })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn options_from_the_mitogen_export() {
        let via = json!({"method_name": "ssh", "name": "", "hostname": "10.0.0.1", "port": 2222, "username": "admin",
            "identity_file": null, "check_host_keys": false, "python_path": null, "connect_timeout": null});
        let o = SshOptions::from_via(via.as_object().unwrap()).unwrap();
        assert_eq!((o.hostname.as_str(), o.port, o.username.as_str()), ("10.0.0.1", 2222, "admin"));
        assert_eq!(o.check_host_keys, HostKeyCheck::Ignore);
        assert_eq!(o.connect_timeout, Duration::from_secs(30));
        let strict = json!({"hostname": "h", "check_host_keys": true, "known_hosts_file": "/k"});
        let o = SshOptions::from_via(strict.as_object().unwrap()).unwrap();
        assert_eq!((o.port, o.check_host_keys), (22, HostKeyCheck::Enforce));
        assert_eq!(o.known_hosts_file, PathBuf::from("/k"));
        assert!(SshOptions::from_via(json!({"port": 22}).as_object().unwrap()).is_err());
        assert!(
            SshOptions::from_via(json!({"hostname": "h", "check_host_keys": "maybe"}).as_object().unwrap()).is_err()
        );
    }
}
