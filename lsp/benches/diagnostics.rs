//! How long after a change the editor has the compile's diagnostics: `inmanta-lsp` driven over
//! stdio on a generated 1 000-line project that uses std and fs (the built-in copies), each
//! change putting an error on another line; the time from `didChange` to the
//! `publishDiagnostics` that shows it. `cargo bench -p lsp --bench diagnostics [-- LINES CHANGES]`.

#[path = "../tests/client/mod.rs"]
mod client;

use std::process::Command;
use std::time::{Duration, Instant};

use client::{Client, file_uri};

fn model(lines: usize) -> String {
    let mut out = String::from(
        "import fs\nimport std\n\nentity Service:\n    \"\"\"A service with a configuration file.\"\"\"\n    string name\n    int port\n    string path\nend\n\nService.host [1] -- std::Host\n\nimplementation config for Service:\n    fs::File(host=self.host, path=self.path, content=\"port {{self.port}}\\n\", owner=\"root\", group=\"root\", mode=644)\nend\n\nimplement Service using config\n\nhost = std::Host(name=\"server\", os=std::linux)\n",
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
    let lines = args.first().copied().unwrap_or(1000);
    let changes = args.get(1).copied().unwrap_or(30);
    let dir = std::env::temp_dir().join(format!("inmanta-lsp-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("project.yml"), "name: bench\n").expect("write");
    let text = model(lines);
    std::fs::write(dir.join("main.cf"), &text).expect("write");
    let main = dir.join("main.cf");
    let uri = file_uri(&main);
    let mut command = Command::new(env!("CARGO_BIN_EXE_inmanta-lsp"));
    command.current_dir(&dir).env("XDG_CACHE_HOME", dir.join("cache"));
    let (mut c, _) = Client::start(command, &dir);
    let started = Instant::now();
    c.open(&main, &text);
    // the first compile: the clean model has no diagnostics; an error then shows each change's compile
    let wait = Duration::from_secs(60);
    c.diagnostics_until(&uri, wait, |d| d.is_empty()).expect("first diagnostics");
    let first = started.elapsed();
    let total_lines = text.lines().count();
    let mut times = Vec::new();
    for k in 0..changes {
        // an unknown attribute on a different line each time
        let line = total_lines - 1 - (k % 500);
        let mut changed: Vec<String> = text.lines().map(str::to_string).collect();
        changed[line] = changed[line].replace("host=host)", "host=host, colour=\"red\")");
        let t = Instant::now();
        c.change(&main, k as i64 + 2, &(changed.join("\n") + "\n"));
        let expected = line as u64;
        c.diagnostics_until(&uri, wait, |d| d.iter().any(|x| x["range"]["start"]["line"] == expected))
            .expect("the compile's diagnostics");
        times.push(t.elapsed());
    }
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!("project: {total_lines} lines, std and fs (built in), {} resources", total_lines - 19);
    println!("first diagnostics after didOpen (project loaded and compiled): {:.1} ms", ms(first));
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
