//! The agent's own machine.

use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::host::{CommandOutput, CommandSpec, FileKind, FileStat, Host};

/// Acts on the machine the agent runs on.
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalHost;

impl Host for LocalHost {
    fn describe(&self) -> String {
        "local".into()
    }

    fn lstat(&self, path: &str) -> io::Result<Option<FileStat>> {
        let md = match std::fs::symlink_metadata(path) {
            Ok(md) => md,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let ft = md.file_type();
        let kind = if ft.is_symlink() {
            FileKind::Symlink
        } else if ft.is_dir() {
            FileKind::Directory
        } else if ft.is_file() {
            FileKind::File
        } else {
            FileKind::Other
        };
        Ok(Some(FileStat { kind, mode: md.mode() & 0o7777, uid: md.uid(), gid: md.gid(), size: md.size() }))
    }

    fn read(&self, path: &str) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }

    fn write(&self, path: &str, data: &[u8]) -> io::Result<()> {
        std::fs::write(path, data)
    }

    fn mkdir(&self, path: &str) -> io::Result<()> {
        std::fs::create_dir(path)
    }

    fn chmod(&self, path: &str, mode: u32) -> io::Result<()> {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
    }

    fn chown(&self, path: &str, uid: Option<u32>, gid: Option<u32>) -> io::Result<()> {
        std::os::unix::fs::lchown(path, uid, gid)
    }

    fn symlink(&self, target: &str, link: &str) -> io::Result<()> {
        std::os::unix::fs::symlink(target, link)
    }

    fn read_link(&self, path: &str) -> io::Result<String> {
        Ok(std::fs::read_link(path)?.to_string_lossy().into_owned())
    }

    fn remove(&self, path: &str) -> io::Result<()> {
        match std::fs::symlink_metadata(path) {
            Ok(md) if md.is_dir() => std::fs::remove_dir_all(path),
            Ok(_) => std::fs::remove_file(path),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }

    fn run(&self, spec: &CommandSpec) -> io::Result<CommandOutput> {
        run_local(spec)
    }
}

/// Runs a command in its own process group, so a timeout kills everything it started.
pub(crate) fn run_local(spec: &CommandSpec) -> io::Result<CommandOutput> {
    let Some((program, args)) = spec.argv.split_first() else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "empty command"));
    };
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(if spec.stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if let Some(cwd) = &spec.cwd {
        cmd.current_dir(cwd);
    }
    for (k, v) in &spec.env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn()?;
    if let (Some(data), Some(mut stdin)) = (spec.stdin.clone(), child.stdin.take()) {
        thread::spawn(move || {
            let _ = stdin.write_all(&data);
        });
    }
    let pipe = |r: Option<Box<dyn Read + Send>>| {
        thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut buf);
            }
            buf
        })
    };
    let out = pipe(child.stdout.take().map(|s| Box::new(s) as Box<dyn Read + Send>));
    let err = pipe(child.stderr.take().map(|s| Box::new(s) as Box<dyn Read + Send>));
    let deadline = spec.timeout.map(|t| Instant::now() + t);
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            // Kill the whole group: the command may have started children that hold the pipes.
            let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", child.id())]).status();
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        thread::sleep(Duration::from_millis(5));
    };
    let Some(status) = status else {
        // Do not wait for the pipes: a grandchild that escaped the group could hold them open.
        return Ok(CommandOutput { code: None, stdout: Vec::new(), stderr: Vec::new(), timed_out: true });
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    Ok(CommandOutput { code: status.code(), stdout, stderr, timed_out: false })
}
