//! The `inmantals` package (packaging/inmantals) started the way vscode-inmanta and the Zed
//! extension start their language server: installed with pip in a virtual environment, then
//! `<venv python> -m inmantals.pipeserver`, which must speak LSP on its stdin/stdout to an
//! initialize as each extension sends it: diagnostics, definition, hover, completion.

mod client;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use client::{Client, at, file_uri};
use serde_json::{Value, json};

fn python3() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path).map(|d| d.join("python3")).find(|p| p.is_file());
    test_support::require("python3 on PATH", found.ok_or("not found"))
}

fn run(command: &mut Command) -> Result<(), String> {
    let out = command.output().map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
    }
}

#[test]
fn python_m_inmantals_pipeserver_speaks_lsp_after_pip_install() {
    let Some(python) = python3() else { return };
    let work = tempfile::tempdir().expect("temp dir");
    let venv = work.path().join("venv");
    let made = run(Command::new(&python).args(["-m", "venv"]).arg(&venv));
    let Some(()) = test_support::require("python3 -m venv", made) else { return };
    let vpython = venv.join("bin/python");
    let package = Path::new(env!("CARGO_MANIFEST_DIR")).join("../packaging/inmantals");
    let installed = run(Command::new(&vpython)
        .args(["-m", "pip", "install", "--quiet"])
        .arg(&package)
        .env("PIP_DISABLE_PIP_VERSION_CHECK", "1"));
    installed.expect("pip installs packaging/inmantals");
    // what the extension checks before it starts the server
    let show = Command::new(&vpython).args(["-m", "pip", "show", "inmantals"]).output().expect("pip show");
    let shown = String::from_utf8_lossy(&show.stdout);
    assert!(shown.contains("Version: 1.8.0+rust"), "{shown}");

    let project = work.path().join("project");
    std::fs::create_dir_all(&project).expect("mkdir");
    std::fs::write(project.join("project.yml"), "name: demo\n").expect("write");
    std::fs::write(project.join("main.cf"), MODEL).expect("write");
    let main = project.join("main.cf");
    let pipeserver = || {
        let mut command = Command::new(&vpython);
        command
            .args(["-m", "inmantals.pipeserver"])
            .current_dir(&project)
            .env("INMANTALS_INMANTA", env!("CARGO_BIN_EXE_inmanta-lsp"))
            .env("XDG_CACHE_HOME", work.path().join("cache"));
        command
    };
    // vscode-inmanta 1.8 (src/language_server.ts, startPipe): its settings' defaults as the
    // initialization options, through vscode-languageclient 9's initialize
    let vscode = json!({
        "compilerVenv": "",
        "repos": [{"url": "https://github.com/inmanta/", "type": "git"}],
        "pip": {"pre": null, "index_url": null, "extra_index_url": null, "use_system_config": false},
    });
    let (mut c, init) = Client::start_with(pipeserver(), initialize(&project, vscode));
    assert_eq!(init["capabilities"]["hoverProvider"], true, "{init}");
    the_editor_features_work(&mut c, &main);
    assert!(c.stop().success());

    // the Zed extension (src/lib.rs, language_server_initialization_options): pip settings and
    // the venv of its `pythonPath` setting
    let venv_dir = venv.display().to_string();
    let zed = json!({
        "pip": {"use_system_config": false, "index_url": "https://pypi.org/simple", "pre": true},
        "compilerVenv": venv_dir,
    });
    let (mut c, _) = Client::start_with(pipeserver(), initialize(&project, zed));
    the_editor_features_work(&mut c, &main);
    assert!(c.stop().success());
}

const MODEL: &str = r#"entity Host:
    """A machine the model manages."""
    string name
end
implement Host using std::none
h = Host(name="a")
x = h.name
"#;

/// The `initialize` parameters vscode-languageclient 9 sends (the parts a server reads), with
/// an extension's initialization options.
fn initialize(root: &Path, options: Value) -> Value {
    json!({
        "processId": std::process::id(),
        "clientInfo": {"name": "Visual Studio Code", "version": "1.97.2"},
        "locale": "en",
        "rootPath": root,
        "rootUri": file_uri(root),
        "capabilities": {
            "workspace": {"workspaceFolders": true, "configuration": true, "didChangeWatchedFiles": {"dynamicRegistration": true}},
            "textDocument": {
                "synchronization": {"dynamicRegistration": true, "didSave": true, "willSave": true},
                "publishDiagnostics": {"relatedInformation": true, "versionSupport": false},
                "completion": {"completionItem": {"snippetSupport": true, "documentationFormat": ["markdown", "plaintext"]}},
                "hover": {"contentFormat": ["markdown", "plaintext"]},
                "definition": {"linkSupport": true},
            },
        },
        "initializationOptions": options,
        "trace": "off",
        "workspaceFolders": [{"uri": file_uri(root), "name": "project"}],
    })
}

/// Diagnostics of a half-typed line, then, once it is fixed, definition, hover and completion.
fn the_editor_features_work(c: &mut Client, main: &Path) {
    c.open(main, &format!("y = \n{MODEL}"));
    let found = c
        .diagnostics_until(&file_uri(main), Duration::from_secs(60), |d| !d.is_empty())
        .expect("diagnostics through the pipe server");
    assert_eq!(found[0]["range"]["start"]["line"], 0, "{found:?}");
    c.change(main, 2, MODEL);
    c.diagnostics_until(&file_uri(main), Duration::from_secs(60), |d| d.is_empty()).expect("the errors go");

    let def = c.request("textDocument/definition", at(main, 5, 5));
    assert_eq!(def["range"]["start"]["line"], 0, "{def}");
    let hover = c.request("textDocument/hover", at(main, 5, 5));
    let text = hover["contents"]["value"].as_str().unwrap_or("");
    assert!(text.contains("A machine the model manages.") && text.contains("string name"), "{hover}");
    let completion = c.request("textDocument/completion", at(main, 6, 6));
    let labels: Vec<&str> = completion.as_array().into_iter().flatten().filter_map(|i| i["label"].as_str()).collect();
    assert!(labels.contains(&"name"), "{completion}");
}
