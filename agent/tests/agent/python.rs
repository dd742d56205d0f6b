//! Python handlers: real Inmanta `@provider` handlers in real executor processes, with inmanta-core
//! and module wheels from the package index in a cached virtual environment
//! (scripts/python-test-venv.sh).

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use agent::{Events, Executor, HandlerStatus, Mode, Outcome, PythonCode, PythonSettings, VersionCode};
use serde_json::{Map, Value, json};

use crate::common::{MemFiles, logs, req};

/// The test venv's Python, created once per test run.
fn python() -> PathBuf {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/python-test-venv.sh");
            let out = std::process::Command::new(script).output().expect("run python-test-venv.sh");
            assert!(out.status.success(), "python-test-venv.sh: {}", String::from_utf8_lossy(&out.stderr));
            PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
        })
        .clone()
}

fn module_dir(name: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    match name {
        "kvfile" => root.join("../examples/python-handler-module"),
        // a v1 module (`plugins/`), shared with the compiler's reference tests
        "agesecret" => root.join("../compiler/tests/python/references/libs/agesecret"),
        other => root.join("tests/fixtures").join(other),
    }
}

/// What an export records for a module installed in editable mode: every Python file of its
/// `inmanta_plugins` package, uploaded by sha1, and the module in `module_version_info`.
pub fn ship_module(files: &MemFiles, info: &mut Map<String, Value>, name: &str) {
    let dir = module_dir(name);
    let mut shipped = Vec::new();
    // A v1 module's `plugins/` is imported as `inmanta_plugins/<name>/`.
    let v1 = dir.join("plugins").is_dir();
    let mut stack = vec![if v1 { dir.join("plugins") } else { dir.join("inmanta_plugins") }];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "py") {
                let hash = files.add(&std::fs::read_to_string(&path).unwrap());
                let rel = match v1 {
                    true => {
                        format!("inmanta_plugins/{name}/{}", path.strip_prefix(dir.join("plugins")).unwrap().display())
                    }
                    false => path.strip_prefix(&dir).unwrap().to_str().unwrap().to_string(),
                };
                shipped.push(json!({"path": rel, "hash_value": hash}));
            }
        }
    }
    info.insert(name.into(), json!({"name": name, "version": "1.0.0", "files_in_module": shipped, "requirements": []}));
}

pub struct Setup {
    pub executor: Executor,
    pub code: VersionCode,
    _cache: tempfile::TempDir,
}

pub fn setup(modules: &[&str], packages: &[&str], timeout: Duration) -> Setup {
    let files = Arc::new(MemFiles::default());
    let mut info = Map::new();
    for m in modules {
        ship_module(&files, &mut info, m);
    }
    for p in packages {
        info.insert(p.to_string(), json!({"name": p, "version": "1.1.0", "files_in_module": null}));
    }
    let cache = tempfile::tempdir().unwrap();
    let mut settings = PythonSettings::new(python(), cache.path().to_path_buf());
    settings.handler_timeout = timeout;
    let executor = Executor::new(files).with_python(settings);
    let code = VersionCode {
        environment: "6a1f3e5c-0000-4000-8000-000000000001".into(),
        shipped_handler: None,
        python: Some(Arc::new(PythonCode::from_module_version_info(&Value::Object(info)).unwrap())),
    };
    Setup { executor, code, _cache: cache }
}

pub fn resource(id: &str, fields: Value) -> agent::ResourceRequest {
    let mut r = json!({
        "id": id, "purged": false, "purge_on_delete": false, "send_event": false, "receive_events": false,
        "report_only": false, "references": [], "mutators": [], "requires": [],
    });
    r.as_object_mut().unwrap().extend(fields.as_object().unwrap().clone());
    req(r)
}

fn line(path: &Path, key: &str, value: &str, purged: bool) -> agent::ResourceRequest {
    resource(
        &format!("kvfile::Line[host1,key={key}],v=1"),
        json!({"path": path.to_str().unwrap(), "key": key, "value": value, "purged": purged}),
    )
}

pub fn run(s: &Setup, r: &agent::ResourceRequest, mode: Mode) -> Outcome {
    s.executor.execute_code(r, &s.code, mode, &Events::default())
}

#[test]
fn crud_handler_creates_repairs_dry_runs_and_purges() {
    let s = setup(&["kvfile"], &[], Duration::from_secs(120));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("app.conf");
    std::fs::write(&file, "# managed\nother=keep\n").unwrap();

    let out = run(&s, &line(&file, "port", "8080", false), Mode::Deploy);
    assert_eq!(out.status, HandlerStatus::Deployed, "{}", logs(&out));
    assert_eq!(out.change, agent::Change::Created);
    assert_eq!(out.changes["purged"].current, json!(true));
    assert!(logs(&out).contains("INFO: added port to"), "{}", logs(&out));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "# managed\nother=keep\nport=8080\n");

    // Nothing to do the second time.
    let out = run(&s, &line(&file, "port", "8080", false), Mode::Deploy);
    assert_eq!((out.status, out.change), (HandlerStatus::Deployed, agent::Change::NoChange), "{}", logs(&out));
    assert!(out.changes.is_empty());

    // Changed by hand: a dry run reports it and changes nothing; a deploy repairs it.
    std::fs::write(&file, "# managed\nother=keep\nport=9999\n").unwrap();
    let out = run(&s, &line(&file, "port", "8080", false), Mode::DryRun);
    assert_eq!(out.status, HandlerStatus::Dry, "{}", logs(&out));
    assert_eq!(out.changes["value"].current, json!("9999"));
    assert_eq!(out.changes["value"].desired, json!("8080"));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "# managed\nother=keep\nport=9999\n");
    let out = run(&s, &line(&file, "port", "8080", false), Mode::Deploy);
    assert_eq!((out.status, out.change), (HandlerStatus::Deployed, agent::Change::Updated), "{}", logs(&out));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "# managed\nother=keep\nport=8080\n");

    // Facts come from the handler's `facts`.
    let facts = s.executor.facts_with(&line(&file, "port", "8080", false), &s.code).unwrap();
    assert_eq!(facts["keys_in_file"], json!("2"));

    // Purged: the line goes, the rest of the file stays.
    let out = run(&s, &line(&file, "port", "8080", true), Mode::Deploy);
    assert_eq!((out.status, out.change), (HandlerStatus::Deployed, agent::Change::Purged), "{}", logs(&out));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "# managed\nother=keep\n");
    let out = run(&s, &line(&file, "port", "8080", true), Mode::Deploy);
    assert_eq!((out.status, out.change), (HandlerStatus::Deployed, agent::Change::NoChange), "{}", logs(&out));
    assert_eq!(s.executor.python().unwrap().running(), 1, "one executor served every call");
}

#[test]
fn raising_hanging_and_crashing_handlers_fail_only_their_resource() {
    let s = setup(&["kvfile", "faulty"], &[], Duration::from_secs(5));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("x.conf");

    let out = run(&s, &resource("faulty::Raise[host1,name=r],v=1", json!({"name": "r"})), Mode::Deploy);
    assert_eq!(out.status, HandlerStatus::Failed, "{}", logs(&out));
    let error = out.logs.iter().find(|l| l.level == "ERROR").expect("an error line");
    assert!(error.msg.contains("RuntimeError('the disk of r is on fire')"), "{}", error.msg);
    assert!(error.kwargs["traceback"].as_str().unwrap().contains("faulty/__init__.py"), "{:?}", error.kwargs);
    let out = run(&s, &line(&file, "a", "1", false), Mode::Deploy);
    assert_eq!(out.status, HandlerStatus::Deployed, "the next resource deploys: {}", logs(&out));

    let started = std::time::Instant::now();
    let out = run(&s, &resource("faulty::Hang[host1,name=h],v=1", json!({"name": "h"})), Mode::Deploy);
    assert_eq!(out.status, HandlerStatus::Failed, "{}", logs(&out));
    assert!(logs(&out).contains("did not finish within 5s"), "{}", logs(&out));
    assert!(started.elapsed() < Duration::from_secs(30));
    let out = run(&s, &line(&file, "b", "2", false), Mode::Deploy);
    assert_eq!(out.status, HandlerStatus::Deployed, "a fresh executor takes over: {}", logs(&out));

    let out = run(&s, &resource("faulty::Crash[host1,name=c],v=1", json!({"name": "c"})), Mode::Deploy);
    assert_eq!(out.status, HandlerStatus::Failed, "{}", logs(&out));
    assert!(logs(&out).contains("died while running the handler (killed by signal 9"), "{}", logs(&out));
    let out = run(&s, &line(&file, "c", "3", false), Mode::Deploy);
    assert_eq!(out.status, HandlerStatus::Deployed, "{}", logs(&out));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "a=1\nb=2\nc=3\n");
}

#[test]
fn unknown_types_and_tampered_code_are_unavailable_with_a_reason() {
    let s = setup(&["kvfile"], &[], Duration::from_secs(60));
    let out = run(&s, &resource("nomodule::Thing[host1,name=x],v=1", json!({"name": "x"})), Mode::Deploy);
    assert_eq!(out.status, HandlerStatus::Unavailable, "{}", logs(&out));
    assert!(logs(&out).contains("No resource class registered for entity nomodule::Thing"), "{}", logs(&out));

    // Code whose content does not match its recorded hash is never run.
    let hash = sha1_smol::Sha1::from("print('hello')\n").digest().to_string();
    let tampered = Arc::new(MemFiles::default());
    tampered.put(&hash, "import os; os.system('rm -rf /')\n");
    let info = json!({"kv": {"name": "kv", "version": "1", "files_in_module": [
        {"path": "inmanta_plugins/kv/__init__.py", "hash_value": hash}]}});
    let cache = tempfile::tempdir().unwrap();
    let executor = Executor::new(tampered).with_python(PythonSettings::new(python(), cache.path().to_path_buf()));
    let code = VersionCode {
        environment: "e".into(),
        shipped_handler: None,
        python: Some(Arc::new(PythonCode::from_module_version_info(&info).unwrap())),
    };
    let out = executor.execute_code(
        &resource("kv::Thing[host1,name=x],v=1", json!({"name": "x"})),
        &code,
        Mode::Deploy,
        &Events::default(),
    );
    assert_eq!(out.status, HandlerStatus::Failed, "{}", logs(&out));
    assert!(logs(&out).contains("refusing to run it"), "{}", logs(&out));
}

/// A module `stamp` whose handler writes `marker` into the file a resource names.
fn stamp_module(marker: &str) -> String {
    format!(
        r#"
import inmanta.resources
from inmanta.agent.handler import CRUDHandler, HandlerContext, provider


@inmanta.resources.resource("stamp::File", agent="agent", id_attribute="path")
class File(inmanta.resources.PurgeableResource):
    fields = ("path",)


@provider("stamp::File", name="stamp")
class Stamp(CRUDHandler):
    def read_resource(self, ctx: HandlerContext, resource: File) -> None:
        raise inmanta.agent.handler.ResourcePurged()

    def create_resource(self, ctx: HandlerContext, resource: File) -> None:
        with open(resource.path, "w") as f:
            f.write("{marker}")
        ctx.set_created()
"#
    )
}

#[test]
fn two_versions_with_different_module_code_each_run_their_own() {
    let files = Arc::new(MemFiles::default());
    let code_of = |marker: &str| {
        let hash = files.add(&stamp_module(marker));
        let info = json!({"stamp": {"name": "stamp", "version": "1.0.0", "requirements": [],
            "files_in_module": [{"path": "inmanta_plugins/stamp/__init__.py", "hash_value": hash}]}});
        VersionCode {
            environment: "6a1f3e5c-0000-4000-8000-000000000002".into(),
            shipped_handler: None,
            python: Some(Arc::new(PythonCode::from_module_version_info(&info).unwrap())),
        }
    };
    let (old, new) = (code_of("old code"), code_of("new code"));
    let cache = tempfile::tempdir().unwrap();
    let executor = Executor::new(files.clone()).with_python(PythonSettings::new(python(), cache.path().to_path_buf()));
    let dir = tempfile::tempdir().unwrap();
    let deploy = |code: &VersionCode, name: &str| {
        let path = dir.path().join(name);
        let r = resource(&format!("stamp::File[agent,path={}],v=1", path.display()), json!({"path": path.to_str()}));
        let out = executor.execute_code(&r, code, Mode::Deploy, &Events::default());
        assert_eq!(out.status, HandlerStatus::Deployed, "{}", logs(&out));
        std::fs::read_to_string(path).unwrap()
    };
    // One agent, the same module name, two versions of its code, interleaved: each resource runs
    // the code of its own version, never what another version imported first.
    assert_eq!(deploy(&old, "a"), "old code");
    assert_eq!(deploy(&new, "b"), "new code");
    assert_eq!(deploy(&old, "c"), "old code");
    assert_eq!(executor.python().unwrap().running(), 2, "one executor per code version");
}

#[test]
fn apt_package_installed_here_dry_runs_without_changes() {
    // inmanta-module-apt 1.1.0 from the package index, installed as a package in the venv: its
    // handler asks dpkg through mitogen's io proxy (`self.proxy.run`) on the local host.
    if test_support::program("dpkg (the apt handler asks it)", &["/usr/bin/dpkg"]).is_none() {
        return;
    }
    let s = setup(&[], &["apt"], Duration::from_secs(120));
    let package = |name: &str| {
        resource(
            &format!("apt::Package[host1,name={name}],v=1"),
            json!({"name": name, "via": {"method_name": "local", "name": "local"}}),
        )
    };
    let out = run(&s, &package("bash"), Mode::DryRun);
    assert_eq!(out.status, HandlerStatus::Dry, "{}", logs(&out));
    assert!(out.changes.is_empty(), "bash is installed: {:?}", out.changes);
    assert!(logs(&out).contains("inmanta_mitogen.run"), "through the io proxy: {}", logs(&out));
    let out = run(&s, &package("no-such-package-xyz"), Mode::DryRun);
    assert_eq!(out.status, HandlerStatus::Dry, "{}", logs(&out));
    assert_eq!(out.changes["purged"].desired, json!(false), "{:?}", out.changes);
}

#[test]
fn apt_package_dry_runs_over_ssh_through_mitogen() {
    // The same handler with a `mitogen::Ssh` context: mitogen itself opens the ssh connection (to a
    // real sshd on a loopback port) and runs dpkg on the other side.
    if test_support::program("dpkg (the apt handler asks it)", &["/usr/bin/dpkg"]).is_none() {
        return;
    }
    let Some(sshd) = crate::ssh::start_sshd() else { return };
    let s = setup(&[], &["apt"], Duration::from_secs(120));
    let via = json!({
        "method_name": "ssh", "name": "loopback", "hostname": "127.0.0.1", "port": sshd.port,
        "username": crate::ssh::whoami(), "identity_file": sshd.dir.path().join("id").to_str().unwrap(),
        "check_host_keys": "ignore", "python_path": ["python3"],
        "ssh_args": ["-o", "UserKnownHostsFile=/dev/null", "-o", "PasswordAuthentication=no"],
    });
    let bash = resource("apt::Package[host1,name=bash],v=1", json!({"name": "bash", "via": via}));
    let out = run(&s, &bash, Mode::DryRun);
    assert_eq!(out.status, HandlerStatus::Dry, "{}", logs(&out));
    assert!(out.changes.is_empty(), "bash is installed on the other side too: {:?}", out.changes);
    assert!(logs(&out).contains("in context loopback"), "over ssh: {}", logs(&out));
}

/// A `DiscoveryHandler` (examples/python-handler-module: `kvfile::Discovery`) reports what it
/// finds with the outcome of a deploy, through inmanta-core's own `DiscoveryHandler.execute`; a
/// dry run discovers nothing. The executor comes from the warm spare, and a new spare replaces it.
#[test]
fn discovery_handlers_report_with_the_outcome_and_spares_are_kept_warm() {
    let s = setup(&["kvfile"], &[], Duration::from_secs(120));
    let python = s.executor.python().unwrap();
    python.prestart();
    assert!(python.has_spare());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.conf"), "port=8080\n# no\nname=web\n").unwrap();
    std::fs::write(dir.path().join("b.txt"), "other=1\n").unwrap();
    let directory = dir.path().to_str().unwrap();
    let scan =
        resource(&format!("kvfile::Discovery[host1,directory={directory}],v=1"), json!({"directory": directory}));

    let out = run(&s, &scan, Mode::Deploy);
    assert_eq!(out.status, HandlerStatus::Deployed, "{}", logs(&out));
    let found: Vec<(&str, &Value)> =
        out.discovered.iter().map(|d| (d.discovered_resource_id.as_str(), &d.values)).collect();
    let conf = dir.path().join("a.conf").display().to_string();
    assert_eq!(
        found,
        [
            ("kvfile::Line[host1,key=port]", &json!({"path": conf, "key": "port", "value": "8080"})),
            ("kvfile::Line[host1,key=name]", &json!({"path": conf, "key": "name", "value": "web"})),
        ]
    );
    let scanner = format!("kvfile::Discovery[host1,directory={directory}]");
    assert!(out.discovered.iter().all(|d| d.discovery_resource_id == scanner));
    assert_eq!(python.running(), 1);
    assert!(python.has_spare(), "a new spare starts behind the one taken");

    let out = run(&s, &scan, Mode::DryRun);
    assert!(out.discovered.is_empty(), "a dry run discovers nothing");
}

/// An interpreter without inmanta-core: the resource fails with what to install, and no spare
/// is kept after that.
#[test]
fn no_spare_is_kept_for_a_python_without_inmanta_core() {
    // A fresh virtual environment has no inmanta-core, whatever the machine's python3 holds.
    let venv = tempfile::tempdir().unwrap();
    let made = std::process::Command::new("python3").args(["-m", "venv", "--without-pip"]).arg(venv.path()).status();
    let made = match made {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(format!("python3 -m venv: {status}")),
        Err(e) => Err(e.to_string()),
    };
    if test_support::require("python3 with its venv module", made).is_none() {
        return;
    }
    let files = Arc::new(MemFiles::default());
    let mut info = Map::new();
    ship_module(&files, &mut info, "kvfile");
    let cache = tempfile::tempdir().unwrap();
    let bare = venv.path().join("bin").join("python");
    let executor = Executor::new(files).with_python(PythonSettings::new(bare, cache.path().into()));
    let python = executor.python().unwrap();
    python.prestart();
    let code = VersionCode {
        environment: "6a1f3e5c-0000-4000-8000-000000000001".into(),
        shipped_handler: None,
        python: Some(Arc::new(PythonCode::from_module_version_info(&Value::Object(info)).unwrap())),
    };
    let dir = tempfile::tempdir().unwrap();
    let out = executor.execute_code(
        &line(&dir.path().join("a.conf"), "k", "v", false),
        &code,
        Mode::Deploy,
        &Events::default(),
    );
    assert_eq!(out.status, HandlerStatus::Failed, "{}", logs(&out));
    assert!(logs(&out).contains("inmanta-core cannot be imported"), "{}", logs(&out));
    assert!(!python.has_spare());
}
