//! Modules with Python code, from the package index and from `examples/`, compiled through the
//! Python process and compared with what the real Inmanta answered (`main.inmanta.json`, recorded
//! with `scripts/reference/record.sh`-style runs, see docs/modules.md).
//!
//! The wheels are installed into a throwaway virtual environment cached under
//! `~/.cache/inmanta/compiler-test-venv/` (network only the first time). Without a Python >= 3.12
//! these tests say so loudly and pass without running.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use compiler::conformance::{case_options, compare, truth_path};
use compiler::{CompileOptions, compile_project_with};

/// The module wheels of a test environment, pinned in a requirements file (the recorded answers
/// are those of these versions): `tests/real-modules/requirements.txt` for these tests and the
/// real-module corpus, `tests/older-modules/requirements.txt` for older std, fs and exec.
fn packages(file: &str) -> Vec<String> {
    let path = root().join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).map(String::from).collect()
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The interpreter of the cached test environment, made on first use; `None` when this machine
/// has no Python >= 3.12 (reported by `test_support`: under `CI=true` the test fails).
fn test_python() -> Option<&'static Path> {
    static PYTHON: OnceLock<Option<PathBuf>> = OnceLock::new();
    PYTHON.get_or_init(|| make_env(packages("tests/real-modules/requirements.txt"))).as_deref()
}

/// The interpreter of an environment holding older versions of the built-in modules.
fn older_modules_python() -> Option<&'static Path> {
    static PYTHON: OnceLock<Option<PathBuf>> = OnceLock::new();
    PYTHON.get_or_init(|| make_env(packages("tests/older-modules/requirements.txt"))).as_deref()
}

fn make_env(mut wanted: Vec<String>) -> Option<PathBuf> {
    let what = "Python >= 3.12 for the Python module tests";
    let base = test_support::require(what, compiler::python::env::find_base_interpreter(None))?;
    let version = compiler::python::env::version_of(&base)
        .unwrap_or_else(|| panic!("cannot read the version of {}", base.display()));
    // inmanta-core 20.1 (the reference) needs 3.13; on 3.12 pip picks the newest that runs
    if version >= (3, 13) {
        wanted.push("inmanta-core==20.1.0".into());
    }
    // one environment per set of wheels, so that checkouts with other pins never reinstall it
    let key = sha1_smol::Sha1::from(wanted.join("\n")).hexdigest();
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(std::env::temp_dir);
    let dir =
        home.join(".cache/inmanta/compiler-test-venv").join(format!("py{}.{}-{}", version.0, version.1, &key[..12]));
    let stamp = dir.join(".installed");
    let python = dir.join("bin/python");
    // Two test runs (two checkouts, a test and a bench) may start on a cold cache at once: the
    // one that installs holds this lock, so the other never uses, or removes, a half-made venv.
    let parent = dir.parent().unwrap_or(&dir);
    std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("cannot create {}: {e}", parent.display()));
    let lock = std::fs::File::create(format!("{}.lock", dir.display())).expect("the venv's lock file");
    lock.lock().expect("lock the test venv");
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(wanted.join("\n").as_str()) && python.exists() {
        return Some(python);
    }
    eprintln!("installing the module wheels into {} (once)", dir.display());
    let _ = std::fs::remove_dir_all(&dir);
    let ok = Command::new(&base).arg("-m").arg("venv").arg(&dir).status().is_ok_and(|s| s.success())
        && Command::new(&python)
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"])
            .args(&wanted)
            .status()
            .is_ok_and(|s| s.success());
    assert!(ok, "could not install the module wheels into {}", dir.display());
    std::fs::write(&stamp, wanted.join("\n")).expect("write the stamp");
    Some(python)
}

fn options(case: &Path, python: &Path) -> CompileOptions {
    CompileOptions { python: Some(python.to_path_buf()), ..case_options(case) }
}

/// Compiles a project and lists what differs from Inmanta's recorded answer.
fn check_against_inmanta(case: &Path) -> Option<compiler::CompileOutput> {
    let python = test_python()?;
    let truth: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(truth_path(case)).expect("recorded answer")).expect("json");
    let ours = compile_project_with(case, &options(case, python));
    let disagreements = compare(case, &truth, &ours);
    assert!(
        disagreements.is_empty(),
        "{} differs from Inmanta:\n{}",
        case.display(),
        disagreements.iter().map(|d| format!("{:?}: {}", d.kind, d.detail)).collect::<Vec<_>>().join("\n")
    );
    ours.ok()
}

#[test]
fn apt_and_yum_export_the_resources_inmanta_exports() {
    let Some(out) = check_against_inmanta(&root().join("tests/python/apt-yum")) else { return };
    let ids: Vec<String> = out.resources.iter().map(|r| r.id.to_string()).collect();
    assert!(ids.iter().any(|id| id == "apt::Package[web1,name=nginx]"), "{ids:?}");
    assert!(ids.iter().any(|id| id == "yum::PackagesBatch[db1,name=tools]"), "{ids:?}");
}

#[test]
fn podman_runs_its_plugins_that_take_entities() {
    let Some(out) = check_against_inmanta(&root().join("tests/python/podman")) else { return };
    // the unit file's content comes from podman::container_run(container) reading the entity
    let unit =
        out.resources.iter().find(|r| r.id.to_string().starts_with("files::SystemdUnitFile")).expect("the unit file");
    let content = serde_json::Value::Object(unit.to_wire(0)).to_string();
    assert!(content.contains("--name=web") && content.contains("--label=app=web"), "{content}");
}

#[test]
fn dependency_managers_add_requires_as_in_inmanta() {
    let Some(out) = check_against_inmanta(&root().join("tests/python/dependency-manager")) else { return };
    let requires =
        |id: &str| out.resources.iter().find(|r| r.id.to_string() == id).map(|r| r.to_wire(0)["requires"].clone());
    assert_eq!(
        requires("ordered::File[web,path=/etc/c.conf]"),
        Some(serde_json::json!(["ordered::File[web,path=/etc/b.conf]"]))
    );
}

/// A dict keeps its insertion order in Inmanta, also into a plugin and back out of one.
#[test]
fn dicts_keep_their_order_across_the_plugin_boundary() {
    let Some(out) = check_against_inmanta(&root().join("tests/python/dict-order")) else { return };
    assert_eq!(out.variables["given_keys"], serde_json::json!("zulu,alpha,mike"));
}

/// A plugin annotation naming a typedef of the model is checked against the typedef (base type
/// and constraint), not taken for an entity (ip's "ip::ip", config's "config::path"); a
/// constraint that calls a Python plugin runs while Python waits for the check (nested calls),
/// and `Compiler.get_plugins()` gives Python the compiler's own plugins too.
#[test]
fn plugin_annotations_naming_typedefs_are_checked_as_typedefs() {
    let Some(out) = check_against_inmanta(&root().join("tests/python/typedef-annotations")) else { return };
    assert_eq!(out.variables["next"], serde_json::json!(8081));
    assert_eq!(out.variables["doubled"], serde_json::json!(42));
    assert_eq!(out.variables["shouted"], serde_json::json!("HEY!"));
}

#[test]
fn user_compiles() {
    check_against_inmanta(&root().join("tests/python/user"));
}

#[test]
fn the_example_module_with_python_code_compiles_as_inmanta_does() {
    let Some(out) = check_against_inmanta(&root().join("../examples/python-module")) else { return };
    assert_eq!(out.variables["app_lines"], serde_json::json!(["mode=production", "name=web", "port=8080"]));
    assert_eq!(out.variables["total_keys"], serde_json::json!(4));
}

#[test]
fn a_plugin_exception_is_a_compile_error_at_the_call() {
    let Some(python) = test_python() else { return };
    let dir = std::env::temp_dir().join(format!("python-plugin-error-{}", std::process::id()));
    copy_dir(&root().join("../examples/python-module"), &dir);
    std::fs::write(dir.join("main.cf"), "import kvconf\n\nx = 1\ny = kvconf::fail(\"no \" + \"way\")\n").unwrap();
    let err = compile_project_with(&dir, &options(&dir, python)).expect_err("the plugin raises");
    let text = err.to_string();
    assert!(text.contains("kvconf::fail"), "{text}");
    assert!(text.contains("ValueError: no way"), "{text}");
    assert!(text.contains("plugins/__init__.py:"), "the Python frame: {text}");
    let loc = err.0[0].location.as_ref().expect("a location");
    assert_eq!((loc.line, loc.col), (4, 5), "{text}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn plugin_arguments_and_results_are_checked_against_their_annotations() {
    let Some(python) = test_python() else { return };
    let dir = std::env::temp_dir().join(format!("python-plugin-types-{}", std::process::id()));
    copy_dir(&root().join("../examples/python-module"), &dir);
    std::fs::write(dir.join("main.cf"), "import kvconf\n\nx = kvconf::lines(\"nope\")\n").unwrap();
    let err = compile_project_with(&dir, &options(&dir, python)).expect_err("a string is no ConfigFile");
    let text = err.to_string();
    assert_eq!(err.0[0].kind, "PluginTypeException", "{text}");
    assert!(
        text.contains("Value 'nope' for argument file of plugin kvconf::lines has incompatible type. Expected type: kvconf::ConfigFile"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_plugin_that_never_returns_fails_the_compile_at_its_call() {
    let Some(python) = test_python() else { return };
    let dir = std::env::temp_dir().join(format!("python-plugin-hangs-{}", std::process::id()));
    copy_dir(&root().join("../examples/python-module"), &dir);
    let init = dir.join("libs/kvconf/plugins/__init__.py");
    let mut code = std::fs::read_to_string(&init).unwrap();
    code.push_str("\n\n@plugin\ndef hang() -> str:\n    import time\n    time.sleep(3600)\n    return 'never'\n");
    std::fs::write(&init, code).unwrap();
    std::fs::write(dir.join("main.cf"), "import kvconf\n\nx = kvconf::hang()\n").unwrap();
    let options = CompileOptions { plugin_timeout: std::time::Duration::from_secs(2), ..options(&dir, python) };
    let err = compile_project_with(&dir, &options).expect_err("the plugin never returns");
    let text = err.to_string();
    assert_eq!(err.0[0].kind, "PluginTimeoutException", "{text}");
    assert!(text.contains("plugin kvconf::hang did not return"), "{text}");
    assert!(text.contains("within 2 s") && text.contains("INMANTA_COMPILER_PLUGIN_TIMEOUT"), "{text}");
    let loc = err.0[0].location.as_ref().expect("a location");
    assert_eq!(loc.line, 3, "{text}");
    std::fs::remove_dir_all(&dir).ok();
}

/// The bridge keeps `inmanta.server.bootloader` and `inmanta.protocol.endpoints` as stand-ins
/// until a name read from them is used, and compiles `inmanta.agent.handler` with string
/// annotations: a plugin that subclasses, calls, checks with `isinstance` and reads type hints
/// gets the real things.
#[test]
fn a_plugin_using_the_modules_the_bridge_imports_late_gets_the_real_ones() {
    let Some(python) = test_python() else { return };
    let dir = std::env::temp_dir().join(format!("python-plugin-late-{}", std::process::id()));
    copy_dir(&root().join("../examples/python-module"), &dir);
    let init = dir.join("libs/kvconf/plugins/__init__.py");
    let mut code = std::fs::read_to_string(&init).unwrap();
    code.push_str(
        r#"

import typing as _typing
from inmanta.protocol.endpoints import Client as _Client
from inmanta.server.bootloader import InmantaBootloader as _Bootloader
import inmanta.agent.handler as _handler


class _MyClient(_Client):
    pass


@plugin
def late() -> list[str]:
    client = _MyClient("compiler")
    hints = _typing.get_type_hints(_handler.HandlerContext.logs.fget)
    return [
        _MyClient.__mro__[1].__module__ + "." + _MyClient.__mro__[1].__name__,
        str(isinstance(client, _Client)),
        ",".join(sorted(_Bootloader.get_available_extensions())),
        repr(hints["return"]),
    ]
"#,
    );
    std::fs::write(&init, code).unwrap();
    std::fs::write(dir.join("main.cf"), "import kvconf\n\nx = kvconf::late()\n").unwrap();
    let out = compile_project_with(&dir, &options(&dir, python)).expect("compiles");
    let x = &out.variables["x"];
    assert_eq!(x[0], "inmanta.protocol.endpoints.Client", "{x}");
    assert_eq!(x[1], "True", "{x}");
    assert!(x[2].as_str().unwrap().contains("core"), "{x}");
    assert_eq!(x[3], "list[inmanta.data.LogLine]", "{x}");
    std::fs::remove_dir_all(&dir).ok();
}

/// A model dataclass crosses the plugin boundary as Inmanta converts it: a plugin annotated with
/// its Python class gets an object of that class, and one a plugin returns is a new instance of
/// its entity. The call is made once even when its statement waits after it (the print and the
/// instance are not repeated), and what the plugin prints is part of the compile's output.
#[test]
fn dataclasses_cross_the_plugin_boundary_as_python_objects() {
    let Some(python) = test_python() else { return };
    let dir = std::env::temp_dir().join(format!("python-plugin-dataclass-{}", std::process::id()));
    copy_dir(&root().join("../examples/python-module"), &dir);
    let model = dir.join("libs/kvconf/model/_init.cf");
    let mut cf = std::fs::read_to_string(&model).unwrap();
    cf.push_str("\nentity Point extends std::Dataclass:\n    int x\nend\nimplement Point using std::none\n");
    std::fs::write(&model, cf).unwrap();
    let init = dir.join("libs/kvconf/plugins/__init__.py");
    let mut code = std::fs::read_to_string(&init).unwrap();
    code.push_str(
        r#"

import dataclasses as _dataclasses


@_dataclasses.dataclass(frozen=True)
class Point:
    x: int


@plugin
def make_point(x: int) -> "kvconf::Point":
    print(f"made {x}")
    return Point(x=x)


@plugin
def point_x(p: Point) -> int:
    assert type(p) is Point, type(p)
    return p.x


@plugin
def total(points: typing.Annotated[list[object], ModelType["Point[]"]]) -> int:
    assert all(type(p) is Point for p in points), points
    return sum(p.x for p in points)
"#,
    );
    std::fs::write(&init, code).unwrap();
    let main = "import kvconf\n\nentity Holder:\n    int n\nend\nimplement Holder using std::none\n\n\
                h = Holder()\nboth = [kvconf::make_point(1), h.n]\nh.n = 2\n\n\
                p = kvconf::make_point(3)\nfrom_model = p.x\nfrom_python = kvconf::point_x(p)\n\
                total = kvconf::total([p, p])\n";
    std::fs::write(dir.join("main.cf"), main).unwrap();
    let out = compile_project_with(&dir, &options(&dir, python)).expect("compiles");
    assert_eq!(out.variables["from_model"], serde_json::json!(3));
    assert_eq!(out.variables["from_python"], serde_json::json!(3));
    // `ModelType` names resolve in the plugin's module, a list of them too
    assert_eq!(out.variables["total"], serde_json::json!(6));
    let mut printed = out.printed.clone();
    printed.sort();
    assert_eq!(printed, ["made 1", "made 3"]);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_module_with_python_code_and_no_python_says_what_is_missing() {
    let dir = std::env::temp_dir().join(format!("python-missing-{}", std::process::id()));
    copy_dir(&root().join("../examples/python-module"), &dir);
    let options = CompileOptions { python: Some("/nonexistent/bin/python".into()), ..case_options(&dir) };
    let err = compile_project_with(&dir, &options).expect_err("no python");
    let text = err.to_string();
    assert!(text.contains("/nonexistent/bin/python") && text.contains("[compiler] python"), "{text}");
    std::fs::remove_dir_all(&dir).ok();
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A project whose environment holds older std (8.6.5), fs (1.1.2) and exec (2.0.0) than the
/// built-in copies compiles with those versions' model files, plugins and `@resource` classes:
/// exec 2.0.0's `number` timeout, no `report_only` in std 8.6.5, no `std::dict_keys` plugin.
#[test]
fn installed_older_built_in_modules_are_used_instead_of_the_built_in_copies() {
    let Some(python) = older_modules_python() else { return };
    for case in ["pinned-older", "missing-plugin"] {
        let project = root().join("tests/older-modules").join(case);
        let disagreements = compiler::conformance::check_case_with(&project, Some(python));
        assert!(
            disagreements.is_empty(),
            "{case} differs from Inmanta:\n{}",
            disagreements.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")
        );
    }
    let project = root().join("tests/older-modules/pinned-older");
    let out = compile_project_with(&project, &options(&project, python)).expect("compiles");
    let exec = out.modules.iter().find(|m| m.name == "exec").expect("exec is loaded");
    assert_eq!(exec.version, "2.0.0");
    assert!(matches!(exec.origin, compiler::ModuleOrigin::Installed(_)), "{exec}");
}

/// Without an installed copy the built-in one serves, and says which version it is.
#[test]
fn without_an_installed_copy_the_built_in_module_is_used_and_named() {
    let dir = std::env::temp_dir().join(format!("builtin-modules-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("project.yml"), "name: builtin\n").unwrap();
    std::fs::write(dir.join("main.cf"), "import exec\n").unwrap();
    let out = compile_project_with(&dir, &CompileOptions::default()).expect("compiles");
    let exec = out.modules.iter().find(|m| m.name == "exec").expect("exec is loaded");
    assert_eq!((exec.version.as_str(), &exec.origin), ("2.1.1", &compiler::ModuleOrigin::BuiltIn));
    assert_eq!(exec.to_string(), "exec 2.1.1 (built in)");
    std::fs::remove_dir_all(&dir).ok();
}

/// Real-module project -> why it still disagrees (`tests/real-modules-pending.txt`).
fn real_modules_pending() -> std::collections::BTreeMap<String, String> {
    compiler::conformance::read_pending(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/real-modules-pending.txt"),
    )
}

/// The real-module corpus (`tests/real-modules/<module>`): a project per module of the package
/// index that instantiates its entities the way the module's README and model do, compiled and
/// exported by the real Inmanta 20.1 with the wheels of `tests/real-modules/requirements.txt`.
/// A project listed in `real-modules-pending.txt` may still disagree; one that agrees must leave
/// the list (so it only shrinks). `CASE=name` runs the projects whose name contains it.
#[test]
fn real_module_projects_compile_and_export_as_inmanta_does() {
    let Some(python) = test_python() else { return };
    let filter = std::env::var("CASE").ok();
    let pending = real_modules_pending();
    let mut projects: Vec<PathBuf> = std::fs::read_dir(root().join("tests/real-modules"))
        .expect("tests/real-modules")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("project.yml").is_file())
        .collect();
    projects.sort();
    let mut failed = Vec::new();
    let mut ran = 0;
    for project in &projects {
        let name = project.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        if filter.as_ref().is_some_and(|f| !name.contains(f.as_str())) {
            continue;
        }
        ran += 1;
        let disagreements = compiler::conformance::check_case_with(project, Some(python));
        match (pending.contains_key(&name), disagreements.is_empty()) {
            (false, false) => failed.push(format!(
                "--- {name} differs from Inmanta:\n{}",
                disagreements.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")
            )),
            (true, true) => failed.push(format!("--- {name} agrees now: remove it from real-modules-pending.txt")),
            _ => {}
        }
    }
    for name in pending.keys() {
        assert!(projects.iter().any(|p| p.ends_with(name)), "real-modules-pending.txt names no project {name}");
    }
    assert!(ran > 0 || filter.is_some(), "no real-module project found");
    assert!(failed.is_empty(), "{} of {ran} real-module projects:\n{}", failed.len(), failed.join("\n"));
}

/// A module's own `@reference` class (agesecret, decrypting with age on the agent), returned by its
/// plugin: exported with the class's own type, arguments and id, a `core::Replace` into the
/// attribute, as Inmanta exports it.
#[test]
fn a_reference_a_python_plugin_returns_exports_as_in_inmanta() {
    let Some(out) = check_against_inmanta(&root().join("tests/python/references")) else { return };
    let file = out.resources.iter().map(|r| serde_json::Value::Object(r.to_wire(0))).next().unwrap();
    assert_eq!(file["references"][0]["type"], "agesecret::Decrypt", "{file}");
    assert_eq!(file["content"], serde_json::Value::Null);
}

/// References reach a module's Python plugin exactly where Inmanta 20.1 lets them (a
/// `Reference[...]` annotation, alone or in a union; `allow_reference_values` on an attribute
/// read), as objects of their class (`isinstance`, `is_reference_of`), and are refused with
/// Inmanta's exception elsewhere (`str`, `object`, inside a `list[str]`, a `Reference[int]` given a
/// reference to a str, a plain attribute read): each case compared with the recorded answer.
#[test]
fn python_plugins_receive_references_where_inmanta_lets_them() {
    let cases = root().join("tests/python/plugin-references");
    let Some(out) = check_against_inmanta(&cases.join("accepted")) else { return };
    let r = out.resources.iter().map(|r| serde_json::Value::Object(r.to_wire(0))).next().unwrap();
    // the reference the plugin handed back is exported as std's own
    assert_eq!(r["references"][0]["type"], "std::Environment", "{r}");
    assert_eq!(r["value"], serde_json::Value::Null, "{r}");
    for refused in ["refused-str", "refused-object", "refused-in-list", "refused-wrong-type", "refused-attribute"] {
        // the recorded answer is a failure of Inmanta's type at the call: ours must be the same
        assert!(check_against_inmanta(&cases.join(refused)).is_none(), "{refused} compiled");
    }
}

/// A module's own Python `@resource` whose attributes hold references: directly, as a dict's value,
/// as a list's element and through a getter (`get_derived`): each place `null`, a `core::Replace`
/// mutator per place with its path (`settings.'password'`, `hosts[1]`), both lists sorted by id,
/// as Inmanta 20.1 exports it (`main.inmanta.json`).
#[test]
fn references_in_a_python_resource_export_as_in_inmanta() {
    let Some(out) = check_against_inmanta(&root().join("tests/python/resource-references")) else { return };
    let r = out.resources.iter().map(|r| serde_json::Value::Object(r.to_wire(0))).next().unwrap();
    assert_eq!(r["references"].as_array().map(Vec::len), Some(3), "{r}");
    assert_eq!(r["mutators"].as_array().map(Vec::len), Some(4), "{r}");
}
