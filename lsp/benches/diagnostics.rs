//! How long after a change the editor has the compile's diagnostics: `inmanta-lsp` driven over
//! stdio on a generated 1 000-line project that uses std and fs (the built-in copies), each
//! change putting an error on another line; the time from `didChange` to the
//! `publishDiagnostics` that shows it. `cargo bench -p lsp --bench diagnostics [-- LINES CHANGES]`.
//! With `--package-index`, std and fs are the modules from the package index instead
//! (inmanta-module-std 8.7.5 and inmanta-module-fs 1.2.0, installed in the project's `.env` by
//! scripts/pytest-inmanta-venv.sh), as a project of an operator has them.

#[path = "../tests/client/mod.rs"]
mod client;

use std::process::Command;
use std::time::{Duration, Instant};

use client::{Client, file_uri};

fn model(lines: usize) -> String {
    let mut out = String::from(
        "import fs\nimport std\n\nentity Service:\n    \"\"\"A service with a configuration file.\"\"\"\n    string name\n    int port\n    string path\nend\n\nService.host [1] -- std::Host\n\nimplementation config for Service:\n    fs::File(host=self.host, path=self.path, content=\"port {{self.port}}\\n\", owner=\"root\", group=\"root\", mode=644)\nend\n\nimplement Service using config\n\nhost = std::Host(name=\"server\", os=std::linux, ip=\"10.0.0.1\")\n",
    );
    let header = out.lines().count();
    for i in 0..lines.saturating_sub(header) {
        out.push_str(&format!(
            "s{i} = Service(name=\"s{i}\", port={}, path=\"/etc/s{i}.conf\", host=host)\n",
            1000 + i
        ));
    }
    out
}

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let package_index = std::env::args().any(|a| a == "--package-index");
    let lines = args.first().copied().unwrap_or(1000);
    let changes = args.get(1).copied().unwrap_or(30);
    let dir = std::env::temp_dir().join(format!("inmanta-lsp-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("project.yml"), "name: bench\n").expect("write");
    let modules = if package_index {
        std::os::unix::fs::symlink(package_index_venv(), dir.join(".env")).expect("link .env");
        "std and fs from the package index"
    } else {
        "std and fs (built in)"
    };
    let text = model(lines);
    std::fs::write(dir.join("main.cf"), &text).expect("write");
    let main = dir.join("main.cf");
    let uri = file_uri(&main);
    let mut command = Command::new(env!("CARGO_BIN_EXE_inmanta-lsp"));
    command.current_dir(&dir).env("XDG_CACHE_HOME", dir.join("cache"));
    let (mut c, _) = Client::start(command, &dir);
    let total_lines = text.lines().count();
    // an unknown attribute on `line`: the compile's error there shows that compile's diagnostics
    let with_error = |line: usize| {
        let mut changed: Vec<String> = text.lines().map(str::to_string).collect();
        changed[line] = changed[line].replace("host=host)", "host=host, colour=\"red\")");
        changed.join("\n") + "\n"
    };
    let has_error_on =
        |line: usize| move |d: &[serde_json::Value]| d.iter().any(|x| x["range"]["start"]["line"] == line as u64);
    let wait = Duration::from_secs(60);
    // the first compile starts Python and imports the modules' code (with `--package-index`)
    let started = Instant::now();
    c.open(&main, &with_error(total_lines / 2));
    c.diagnostics_until(&uri, wait, has_error_on(total_lines / 2)).expect("first diagnostics");
    let first = started.elapsed();
    let mut times = Vec::new();
    for k in 0..changes {
        // on a different line each time
        let line = total_lines - 1 - (k % 500);
        let t = Instant::now();
        c.change(&main, k as i64 + 2, &with_error(line));
        c.diagnostics_until(&uri, wait, has_error_on(line)).expect("the compile's diagnostics");
        times.push(t.elapsed());
    }
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!("project: {total_lines} lines, {modules}, {} resources", total_lines - 19);
    println!("first compile's diagnostics after didOpen (project loaded, Python started): {:.1} ms", ms(first));
    println!(
        "change -> compile diagnostics over {changes} changes: median {:.1} ms, p90 {:.1} ms, max {:.1} ms",
        ms(times[times.len() / 2]),
        ms(times[times.len() * 9 / 10]),
        ms(times[times.len() - 1])
    );
    let status = c.stop();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(status.success());
}

/// The root of a virtual environment holding std and fs from the package index.
fn package_index_venv() -> std::path::PathBuf {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/pytest-inmanta-venv.sh");
    let output = Command::new(script).output().expect("run scripts/pytest-inmanta-venv.sh");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let python = String::from_utf8_lossy(&output.stdout).lines().next().expect("a python").to_string();
    std::path::Path::new(&python).parent().and_then(|bin| bin.parent()).expect("a venv").to_path_buf()
}
