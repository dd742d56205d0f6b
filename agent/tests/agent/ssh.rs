//! Handlers over ssh against a real sshd on a loopback port, started by the test as the current
//! user with its own host key, config and authorized_keys. Without the sshd binary
//! (scripts/lib.sh `ensure_sshd` installs it) the tests fail under `CI=true` and say so elsewhere.

use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent::{Change, CommandSpec, FileKind, HandlerStatus, Host, LocalHost, SudoHost};
use serde_json::{Value, json};

use crate::common::*;

const SSHD: &str = "/usr/sbin/sshd";

pub(crate) struct Sshd {
    child: Child,
    pub(crate) port: u16,
    pub(crate) dir: tempfile::TempDir,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn keygen(path: &Path) {
    let st = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success(), "ssh-keygen failed");
}

/// A running sshd, or `None` when it is not installed (reported by `test_support`).
pub(crate) fn start_sshd() -> Option<Sshd> {
    let program = test_support::program("sshd (Debian package openssh-server; scripts/lib.sh ensure_sshd)", &[SSHD])?;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    keygen(&d.join("host_key"));
    keygen(&d.join("id"));
    std::fs::copy(d.join("id.pub"), d.join("authorized_keys")).unwrap();
    std::fs::set_permissions(d.join("authorized_keys"), std::fs::Permissions::from_mode(0o600)).unwrap();
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let sftp = ["/usr/lib/openssh/sftp-server", "/usr/libexec/openssh/sftp-server", "/usr/libexec/sftp-server"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .unwrap_or("internal-sftp");
    let config = format!(
        "Port {port}\nListenAddress 127.0.0.1\nHostKey {hk}\nPidFile {pid}\nAuthorizedKeysFile {ak}\n\
         StrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n\
         UsePAM no\nPermitRootLogin yes\nSubsystem sftp {sftp}\nLogLevel FATAL\n",
        hk = d.join("host_key").display(),
        pid = d.join("sshd.pid").display(),
        ak = d.join("authorized_keys").display(),
    );
    std::fs::write(d.join("sshd_config"), config).unwrap();
    // As root, sshd insists on its privilege separation directory.
    let is_root = Command::new("id").arg("-u").output().map(|o| o.stdout == b"0\n").unwrap_or(false);
    if is_root && !Path::new("/run/sshd").exists() {
        let _ = std::fs::create_dir_all("/run/sshd");
    }
    let child = Command::new(program)
        .args(["-D", "-e", "-f"])
        .arg(d.join("sshd_config"))
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let sshd = Sshd { child, port, dir };
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "sshd did not start listening on port {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
    Some(sshd)
}

pub(crate) fn whoami() -> String {
    String::from_utf8(Command::new("id").arg("-un").output().unwrap().stdout).unwrap().trim().to_string()
}

impl Sshd {
    fn known_hosts(&self, key_file: &Path) -> PathBuf {
        let key = std::fs::read_to_string(key_file).unwrap();
        let key: Vec<&str> = key.split_whitespace().take(2).collect();
        let path = self.dir.path().join(format!("known_hosts_{}", key_file.file_name().unwrap().to_string_lossy()));
        std::fs::write(&path, format!("[127.0.0.1]:{} {}\n", self.port, key.join(" "))).unwrap();
        path
    }

    fn via(&self, known_hosts: &Path) -> Value {
        json!({"method_name": "ssh", "name": "", "hostname": "127.0.0.1", "port": self.port,
            "username": whoami(), "identity_file": s(&self.dir.path().join("id")), "check_host_keys": true,
            "known_hosts_file": s(known_hosts), "python_path": null, "connect_timeout": 10})
    }
}

#[test]
fn handlers_work_over_ssh() {
    let Some(sshd) = start_sshd() else { return };
    let good = sshd.known_hosts(&sshd.dir.path().join("host_key.pub"));
    let via = sshd.via(&good);
    let tmp = tempfile::tempdir().unwrap();
    let (ex, files) = executor();
    let hash = files.add("over ssh\n");
    let dir = tmp.path().join("etc");
    let path = dir.join("app.conf");
    let link = tmp.path().join("current");

    let d = req(json!({"id": format!("fs::Directory[h,path={}],v=1", s(&dir)), "path": s(&dir),
        "permissions": 750, "purged": false, "via": via}));
    let o = deploy(&ex, &d);
    assert_eq!((o.status, o.change), (HandlerStatus::Deployed, Change::Created), "{}", logs(&o));
    assert_eq!(mode_of(&dir), 0o750);

    let f = |hash: &str, perms: u32, purged: bool| {
        req(json!({"id": format!("fs::File[h,path={}],v=1", s(&path)), "path": s(&path), "hash": hash,
            "permissions": perms, "owner": whoami(), "group": null, "purged": purged, "via": via}))
    };
    let o = deploy(&ex, &f(&hash, 640, false));
    assert_eq!((o.status, o.change), (HandlerStatus::Deployed, Change::Created), "{}", logs(&o));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "over ssh\n");
    assert_eq!(mode_of(&path), 0o640);
    let o = deploy(&ex, &f(&hash, 640, false));
    assert_eq!(o.change, Change::NoChange, "{:?} {}", o.changes, logs(&o));
    let h2 = files.add("changed\n");
    let o = dry(&ex, &f(&h2, 600, false));
    assert_eq!(o.changes.keys().collect::<Vec<_>>(), vec!["content", "hash", "permissions"]);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "over ssh\n");
    assert_eq!(deploy(&ex, &f(&h2, 600, false)).change, Change::Updated);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "changed\n");
    assert_eq!(mode_of(&path), 0o600);

    let l = req(json!({"id": format!("fs::Symlink[h,dst={}],v=1", s(&link)), "src": s(&path), "dst": s(&link),
        "purged": false, "via": via}));
    let o = deploy(&ex, &l);
    assert_eq!(o.change, Change::Created, "{}", logs(&o));
    assert_eq!(std::fs::read_link(&link).unwrap(), path);
    assert_eq!(deploy(&ex, &l).change, Change::NoChange);

    // A command through ssh exec, with cwd, environment, creates and a timeout.
    let marker = tmp.path().join("ran");
    let r = req(json!({"id": "exec::Run[h,command=x],v=1", "via": via,
        "command": "sh -c 'echo \"$WHO\" > ran'", "cwd": s(tmp.path()), "environment": {"WHO": "ssh user"},
        "creates": s(&marker), "returns": [0], "timeout": 20}));
    let o = deploy(&ex, &r);
    assert_eq!((o.status, o.change), (HandlerStatus::Deployed, Change::Updated), "{}", logs(&o));
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "ssh user\n");
    assert_eq!(deploy(&ex, &r).change, Change::NoChange);
    let slow = req(json!({"id": "exec::Run[h,command=y],v=1", "via": via, "command": "sleep 20", "timeout": 0.5}));
    let start = Instant::now();
    let o = deploy(&ex, &slow);
    assert_eq!(o.status, HandlerStatus::Failed, "{}", logs(&o));
    assert!(logs(&o).contains("timed out"), "{}", logs(&o));
    assert!(start.elapsed() < Duration::from_secs(10));

    // The connection is reused: with the listener gone, the open session still works, a new one cannot.
    let mut sshd = sshd;
    let _ = sshd.child.kill();
    let _ = sshd.child.wait();
    assert_eq!(deploy(&ex, &f(&h2, 600, false)).status, HandlerStatus::Deployed);
    let (fresh, _) = executor();
    let o = deploy(&fresh, &f(&h2, 600, false));
    assert_eq!(o.status, HandlerStatus::Failed);
    assert!(logs(&o).contains(&format!("ssh {}@127.0.0.1:{}", whoami(), sshd.port)), "{}", logs(&o));

    // Purge over SFTP, the directory tree included.
    assert_eq!(deploy(&ex, &l.clone()).status, HandlerStatus::Deployed);
    let mut purge = d.clone();
    purge.attributes.insert("purged".into(), json!(true));
    assert_eq!(deploy(&ex, &purge).change, Change::Purged);
    assert!(!dir.exists());
}

#[test]
fn host_keys_are_checked_as_configured() {
    let Some(sshd) = start_sshd() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let (ex, _) = executor();
    let r = |via: Value| {
        req(json!({"id": format!("fs::Directory[h,path={}],v=1", s(tmp.path())), "path": s(tmp.path()),
            "purged": false, "via": via}))
    };

    // A known_hosts entry with another key: refused.
    keygen(&tmp.path().join("other"));
    let wrong = sshd.known_hosts(&tmp.path().join("other.pub"));
    let o = deploy(&ex, &r(sshd.via(&wrong)));
    assert_eq!(o.status, HandlerStatus::Failed);
    assert!(logs(&o).contains("does NOT match"), "{}", logs(&o));

    // No entry at all: refused when enforced, accepted with "accept" or when checks are off.
    let empty = tmp.path().join("empty_known_hosts");
    std::fs::write(&empty, "").unwrap();
    let mut via = sshd.via(&empty);
    let o = deploy(&ex, &r(via.clone()));
    assert!(logs(&o).contains("is not in the known hosts file"), "{}", logs(&o));
    via["check_host_keys"] = json!("accept");
    assert_eq!(deploy(&ex, &r(via.clone())).status, HandlerStatus::Deployed);
    via["check_host_keys"] = json!(false);
    via["known_hosts_file"] = json!(s(&wrong));
    assert_eq!(deploy(&ex, &r(via.clone())).status, HandlerStatus::Deployed);

    // A wrong key file fails authentication with a clear message.
    via["identity_file"] = json!(s(&tmp.path().join("other")));
    let o = deploy(&ex, &r(via));
    assert!(logs(&o).contains("ssh authentication as"), "{}", logs(&o));
}

#[test]
fn sudo_runs_every_operation_as_a_command() {
    // A stand-in for sudo that checks the flags and runs the rest, so this runs without sudo installed.
    let tmp = tempfile::tempdir().unwrap();
    let fake = tmp.path().join("fake-sudo");
    std::fs::write(
        &fake,
        "#!/bin/sh\n[ \"$1\" = -n ] && [ \"$2\" = -u ] && [ \"$3\" = root ] && [ \"$4\" = -- ] || exit 99\nshift 4\nexec \"$@\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let host = SudoHost::new(Arc::new(LocalHost), "root").with_program(&s(&fake));
    let p = |n: &str| s(&tmp.path().join(n));

    assert_eq!(host.lstat(&p("f")).unwrap(), None);
    host.write(&p("f"), b"data\x00bin").unwrap();
    assert_eq!(host.read(&p("f")).unwrap(), b"data\x00bin");
    host.chmod(&p("f"), 0o604).unwrap();
    let st = host.lstat(&p("f")).unwrap().unwrap();
    assert_eq!((st.kind, st.mode, st.size), (FileKind::File, 0o604, 8));
    host.mkdir(&p("d")).unwrap();
    assert_eq!(host.lstat(&p("d")).unwrap().unwrap().kind, FileKind::Directory);
    host.symlink(&p("f"), &p("l")).unwrap();
    assert_eq!(host.read_link(&p("l")).unwrap(), p("f"));
    assert_eq!(host.lstat(&p("l")).unwrap().unwrap().kind, FileKind::Symlink);
    host.remove(&p("d")).unwrap();
    assert_eq!(host.lstat(&p("d")).unwrap(), None);
    let mut cmd = CommandSpec::new(&["sh", "-c", "echo $X"]);
    cmd.env = vec![("X".into(), "via sudo".into())];
    assert_eq!(host.run(&cmd).unwrap().stdout_str(), "via sudo\n");
    assert!(host.describe().starts_with("sudo -u root on local"));
}
