//! `inmanta-lsp` (what `inmanta lsp` runs) driven over stdio by a real LSP client, as an editor
//! drives it: initialize, didOpen/didChange, publishDiagnostics, definition, hover, completion,
//! references, symbols, rename, shutdown.

mod client;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use client::{Client, at, file_uri, project};
use serde_json::{Value, json};

const MAIN: &str = r#"import fs
import std::testing

entity Host:
    """A machine the model manages."""
    string name
    int port = 22
end

Host.files [0:] -- fs::File

implementation files for Host:
    std::testing::NullResource(name=self.name)
end

implement Host using files

web = Host(name="web", port=80)
copy = web.name
"#;

fn server(root: &Path, cache: &Path) -> Client {
    let mut command = Command::new(env!("CARGO_BIN_EXE_inmanta-lsp"));
    command.current_dir(root).env("XDG_CACHE_HOME", cache).env_remove("INMANTA_COMPILER_PYTHON");
    let (client, init) = Client::start(command, root);
    assert_eq!(init["capabilities"]["definitionProvider"], json!(true), "{init}");
    assert_eq!(init["capabilities"]["renameProvider"], json!(true), "{init}");
    client
}

fn lines_of(diagnostics: &[Value]) -> Vec<u64> {
    let mut lines: Vec<u64> = diagnostics.iter().filter_map(|d| d["range"]["start"]["line"].as_u64()).collect();
    lines.sort_unstable();
    lines
}

const WAIT: Duration = Duration::from_secs(60);

#[test]
fn diagnostics_on_every_change_with_every_syntax_error_and_the_compile() {
    let dir = project(MAIN);
    let cache = tempfile::tempdir().expect("temp dir");
    let main = dir.path().join("main.cf");
    let uri = file_uri(&main);
    let mut c = server(dir.path(), cache.path());

    // two half-typed lines and an unknown entity: all three at once, each on its line (of the
    // compile's errors, the evaluation's first, as Inmanta reports it)
    let tail = "copy = web.name\nhalf = \nother = Hots(name=\"a\")\nlist = [1,\n";
    let broken = MAIN.replace("copy = web.name\n", tail);
    c.open(&main, &broken);
    let found =
        c.diagnostics_until(&uri, WAIT, |d| lines_of(d).len() >= 3).expect("the syntax errors and the compile's error");
    assert_eq!(lines_of(&found), vec![19, 20, 21], "{found:?}");
    let unknown = found.iter().find(|d| d["range"]["start"]["line"] == 20).expect("the unknown entity");
    assert!(unknown["message"].as_str().unwrap_or("").contains("Hots"), "{unknown}");
    assert_eq!(unknown["range"]["start"]["character"], 8, "{unknown}");

    // fixed in the buffer, never saved: no diagnostics left
    c.change(&main, 2, MAIN);
    let clean = c.diagnostics_until(&uri, WAIT, |d| d.is_empty());
    assert!(clean.is_some(), "diagnostics stay after the fix: {:?}", c.pending);
    assert_eq!(std::fs::read_to_string(&main).expect("read"), MAIN, "the file on disk was not touched");

    // an error the compile finds in a model that parses: an attribute the entity does not have
    c.change(&main, 3, &MAIN.replace("port=80)", "port=80, colour=\"red\")"));
    let found = c.diagnostics_until(&uri, WAIT, |d| !d.is_empty()).expect("the compile's error");
    assert_eq!(lines_of(&found), vec![17], "{found:?}");
    assert!(c.stop().success());
}

#[test]
fn navigation_hover_completion_symbols_and_rename() {
    let dir = project(MAIN);
    let cache = tempfile::tempdir().expect("temp dir");
    let main = dir.path().join("main.cf");
    let mut c = server(dir.path(), cache.path());
    c.open(&main, MAIN);
    let line = |v: &Value| v["range"]["start"]["line"].as_u64();

    // definition: an entity in a constructor, a variable, an implementation, an attribute
    // through `self`, an entity of a built-in module
    let def = c.request("textDocument/definition", at(&main, 17, 7));
    assert_eq!((line(&def), def["uri"].as_str()), (Some(3), Some(file_uri(&main).as_str())), "{def}");
    assert_eq!(line(&c.request("textDocument/definition", at(&main, 18, 8))), Some(17));
    assert_eq!(line(&c.request("textDocument/definition", at(&main, 15, 22))), Some(11));
    assert_eq!(line(&c.request("textDocument/definition", at(&main, 12, 42))), Some(5));
    let file = c.request("textDocument/definition", at(&main, 9, 24));
    assert!(file["uri"].as_str().is_some_and(|u| u.ends_with("/fs.cf")), "{file}");
    let fs_text =
        std::fs::read_to_string(file["uri"].as_str().unwrap_or("").trim_start_matches("file://")).expect("read");
    let target = fs_text.lines().nth(line(&file).unwrap_or(0) as usize).unwrap_or("");
    assert!(target.starts_with("entity File"), "{target}");

    // hover: the doc string and the attributes with their types
    let hover = c.request("textDocument/hover", at(&main, 3, 8));
    let text = hover["contents"]["value"].as_str().unwrap_or("");
    for part in ["A machine the model manages.", "string name", "int port = ...", "fs::File[0:] files"] {
        assert!(text.contains(part), "{part:?} not in {text}");
    }

    // completion: members of a module, attributes after `.` and in a constructor, keywords
    let labels = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| a.iter().filter_map(|i| i["label"].as_str().map(str::to_string)).collect())
            .unwrap_or_default()
    };
    c.change(&main, 2, &format!("{MAIN}a = fs::\nb = web.\nc = Host(po\nimpl\n"));
    let members = labels(&c.request("textDocument/completion", at(&main, 19, 8)));
    assert!(members.iter().any(|l| l == "File") && members.iter().any(|l| l == "Directory"), "{members:?}");
    let attrs = labels(&c.request("textDocument/completion", at(&main, 20, 8)));
    for a in ["name", "port", "files", "requires"] {
        assert!(attrs.iter().any(|l| l == a), "{a} not in {attrs:?}");
    }
    let kw = labels(&c.request("textDocument/completion", at(&main, 21, 11)));
    assert!(kw.iter().any(|l| l == "port"), "{kw:?}");
    let keywords = labels(&c.request("textDocument/completion", at(&main, 22, 4)));
    assert!(keywords.iter().any(|l| l == "implementation") && keywords.iter().any(|l| l == "Host"), "{keywords:?}");
    c.change(&main, 3, MAIN);

    // references of an attribute: the constructor's keyword, `self.name`, `web.name`
    let refs = c.request(
        "textDocument/references",
        json!({
            "textDocument": {"uri": file_uri(&main)}, "position": {"line": 5, "character": 12},
            "context": {"includeDeclaration": true},
        }),
    );
    let mut ref_lines: Vec<u64> = refs.as_array().map(|a| a.iter().filter_map(line).collect()).unwrap_or_default();
    ref_lines.sort_unstable();
    assert_eq!(ref_lines, vec![5, 12, 17, 18], "{refs}");

    // symbols
    let symbols = c.request("textDocument/documentSymbol", json!({"textDocument": {"uri": file_uri(&main)}}));
    let host = symbols.as_array().and_then(|a| a.iter().find(|s| s["name"] == "Host")).expect("Host").clone();
    let children: Vec<&str> =
        host["children"].as_array().map(|a| a.iter().filter_map(|s| s["name"].as_str()).collect()).unwrap_or_default();
    assert_eq!(children, ["name", "port"]);
    let ws = c.request("workspace/symbol", json!({"query": "directory"}));
    assert!(
        ws.as_array().is_some_and(|a| a.iter().any(|s| s["name"] == "Directory" && s["containerName"] == "fs")),
        "{ws}"
    );

    // rename: a variable, and an attribute across its uses
    let edit = c.request(
        "textDocument/rename",
        json!({
            "textDocument": {"uri": file_uri(&main)}, "position": {"line": 17, "character": 1}, "newName": "webserver",
        }),
    );
    let edits = edit["changes"][file_uri(&main)].as_array().cloned().unwrap_or_default();
    assert_eq!(edits.iter().filter_map(line).collect::<Vec<_>>(), vec![17, 18], "{edit}");
    assert!(edits.iter().all(|e| e["newText"] == "webserver"));
    let edit = c.request(
        "textDocument/rename",
        json!({
            "textDocument": {"uri": file_uri(&main)}, "position": {"line": 6, "character": 9}, "newName": "ssh_port",
        }),
    );
    let edits = edit["changes"][file_uri(&main)].as_array().cloned().unwrap_or_default();
    assert_eq!(edits.iter().filter_map(line).collect::<Vec<_>>(), vec![6, 17], "{edit}");
    let refused = c.request(
        "textDocument/rename",
        json!({
            "textDocument": {"uri": file_uri(&main)}, "position": {"line": 3, "character": 8}, "newName": "host",
        }),
    );
    assert!(refused["error"]["message"].as_str().is_some_and(|m| m.contains("capital")), "{refused}");
    assert!(c.stop().success());
}

const PLUGIN: &str = r#"from inmanta.plugins import plugin


@plugin
def hello(name: "string") -> "string":
    """
    Greets someone.
    """
    return f"hello {name}"
"#;

#[test]
fn a_plugin_call_goes_to_its_python_source_and_shows_its_signature() {
    let dir = project("import greet\n\nx = greet::hello(\"world\")\n");
    let module: PathBuf = dir.path().join("libs/greet");
    std::fs::create_dir_all(module.join("model")).expect("mkdir");
    std::fs::create_dir_all(module.join("plugins")).expect("mkdir");
    std::fs::write(module.join("model/_init.cf"), "\"\"\"Greetings.\"\"\"\n").expect("write");
    std::fs::write(module.join("module.yml"), "name: greet\nversion: 1.0.0\n").expect("write");
    std::fs::write(module.join("plugins/__init__.py"), PLUGIN).expect("write");
    let cache = tempfile::tempdir().expect("temp dir");
    let main = dir.path().join("main.cf");
    let mut c = server(dir.path(), cache.path());
    c.open(&main, &std::fs::read_to_string(&main).expect("read"));
    let def = c.request("textDocument/definition", at(&main, 2, 13));
    assert_eq!(def["uri"], file_uri(&module.join("plugins/__init__.py")), "{def}");
    assert_eq!(def["range"]["start"]["line"], 4, "{def}");
    let hover = c.request("textDocument/hover", at(&main, 2, 13));
    let text = hover["contents"]["value"].as_str().unwrap_or("");
    assert!(text.contains("def hello(name: \"string\") -> \"string\"") && text.contains("Greets someone."), "{text}");
    let import = c.request("textDocument/definition", at(&main, 0, 9));
    assert_eq!(import["uri"], file_uri(&module.join("model/_init.cf")), "{import}");
    assert!(c.stop().success());
}

/// A plugin that refuses large numbers and counts its calls in the process.
const CHECK_PLUGIN: &str = r#"from inmanta.plugins import plugin

CALLS = []


@plugin
def check(n: "int") -> "int":
    CALLS.append(n)
    if n > 10:
        raise Exception(f"too big: {n} (call {len(CALLS)} in this process)")
    return n
"#;

/// The root of the virtual environment with inmanta-core that module tests use
/// (scripts/pytest-inmanta-venv.sh installs it when missing).
fn inmanta_core_venv() -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/pytest-inmanta-venv.sh");
    let output = Command::new(script).output().expect("run scripts/pytest-inmanta-venv.sh");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let python = PathBuf::from(String::from_utf8_lossy(&output.stdout).lines().next().expect("a python"));
    python.parent().and_then(Path::parent).expect("a venv").to_path_buf()
}

#[test]
fn python_plugins_run_in_each_compile_with_nothing_left_of_the_last_and_edits_seen() {
    let dir = project("import greet\n\nx = greet::check(50)\n");
    std::os::unix::fs::symlink(inmanta_core_venv(), dir.path().join(".env")).expect("link .env");
    let module: PathBuf = dir.path().join("libs/greet");
    std::fs::create_dir_all(module.join("model")).expect("mkdir");
    std::fs::create_dir_all(module.join("plugins")).expect("mkdir");
    std::fs::write(module.join("model/_init.cf"), "").expect("write");
    std::fs::write(module.join("module.yml"), "name: greet\nversion: 1.0.0\n").expect("write");
    std::fs::write(module.join("plugins/__init__.py"), CHECK_PLUGIN).expect("write");
    let cache = tempfile::tempdir().expect("temp dir");
    let main = dir.path().join("main.cf");
    let uri = file_uri(&main);
    let mut c = server(dir.path(), cache.path());
    let says = |text: String| move |d: &[Value]| d.iter().any(|x| x["message"].as_str().unwrap_or("").contains(&text));

    c.open(&main, "import greet\n\nx = greet::check(50)\n");
    let found = c.diagnostics_until(&uri, WAIT, says("too big: 50 (call 1 ".into()));
    assert!(found.is_some(), "the plugin's error: {:?}", c.pending);
    // every compile starts from the modules as imported: the plugin's own list is empty again
    for (version, n) in [(2, 20), (3, 30)] {
        c.change(&main, version, &format!("import greet\n\nx = greet::check({n})\n"));
        let found = c.diagnostics_until(&uri, WAIT, says(format!("too big: {n} (call 1 ")));
        assert!(found.is_some(), "compile {version}: {:?}", c.pending);
    }
    // the plugin edited on disk: the next compile imports it anew
    std::fs::write(module.join("plugins/__init__.py"), CHECK_PLUGIN.replace("too big", "far too big")).expect("write");
    c.change(&main, 4, "import greet\n\nx = greet::check(40)\n");
    let found = c.diagnostics_until(&uri, WAIT, says("far too big: 40 (call 1 ".into()));
    assert!(found.is_some(), "the edited plugin: {:?}", c.pending);
    assert!(c.stop().success());
}
