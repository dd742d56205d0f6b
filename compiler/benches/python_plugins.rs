//! Python plugins: the cost of the Python process next to the compiler.
//!
//! `cargo bench -p compiler --bench python_plugins` (figures in docs/performance.md). Needs a
//! Python environment with inmanta-core: `INMANTA_COMPILER_PYTHON`, else the one the tests cache
//! (`cargo test -p compiler --test compiler python_modules::` makes it).
//!
//! - first start: a model with one Python plugin call, minus the same model without Python;
//! - 10 000 calls of a Python plugin taking a value, and 10 000 taking an entity (one attribute
//!   read back each), against the same model calling a native plugin;
//! - the projects of `tests/python/` that use modules of the package index (apt and yum, podman):
//!   their Python imports inmanta-core's handler and export machinery. Only with the tests'
//!   environment, which has those wheels installed.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use compiler::{CompileOptions, compile_project_with};

const MODULE_CF: &str = "entity Item:\n    int n\nend\nimplement Item using std::none\n";

const MODULE_PY: &str = r#"
import typing
from inmanta.plugins import ModelType, plugin


@plugin
def double(n: int) -> int:
    return 2 * n


@plugin
def label(item: typing.Annotated[typing.Any, ModelType["benchmod::Item"]]) -> str:
    return f"item-{item.n}"
"#;

fn python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("INMANTA_COMPILER_PYTHON") {
        return Some(PathBuf::from(p));
    }
    let home = PathBuf::from(std::env::var_os("HOME")?);
    let cached = home.join(".cache/inmanta/compiler-test-venv");
    // the environments are directories; each has a `.lock` file beside it
    let mut found: Vec<PathBuf> = std::fs::read_dir(&cached)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("bin/python"))
        .filter(|python| python.exists())
        .collect();
    found.sort();
    found.pop()
}

fn project(dir: &Path, main: &str) {
    let module = dir.join("libs/benchmod");
    std::fs::create_dir_all(module.join("model")).unwrap();
    std::fs::create_dir_all(module.join("plugins")).unwrap();
    std::fs::write(dir.join("project.yml"), "name: bench\nmodulepath: libs\n").unwrap();
    std::fs::write(module.join("module.yml"), "name: benchmod\nversion: 0.1.0\n").unwrap();
    std::fs::write(module.join("model/_init.cf"), MODULE_CF).unwrap();
    std::fs::write(module.join("plugins/__init__.py"), MODULE_PY).unwrap();
    std::fs::write(dir.join("main.cf"), main).unwrap();
}

/// CPU time of this process and of its waited-for children (the Python process), from
/// /proc/self/stat: under load, wall time mostly measures the wait for a core.
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // after "pid (comm)": state is field 3, utime, stime, cutime, cstime are fields 14 to 17
    let fields: Vec<&str> = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("").split_whitespace().collect();
    let ticks: u64 = (11..15).filter_map(|i| fields.get(i)?.parse::<u64>().ok()).sum();
    Duration::from_millis(ticks * 10)
}

/// Best wall time of `runs` compiles, and the CPU time of that run.
fn time(dir: &Path, python: &Path, runs: usize) -> (Duration, Duration) {
    let options = CompileOptions { python: Some(python.to_path_buf()), ..CompileOptions::default() };
    let mut best = (Duration::MAX, Duration::ZERO);
    for _ in 0..runs {
        let (t, cpu) = (Instant::now(), cpu_time());
        if let Err(e) = compile_project_with(dir, &options) {
            panic!("{}: {e}", dir.display());
        }
        let wall = t.elapsed();
        if wall < best.0 {
            best = (wall, cpu_time().saturating_sub(cpu));
        }
    }
    best
}

fn main() {
    let Some(python) = python() else {
        eprintln!("no Python environment: set INMANTA_COMPILER_PYTHON or run the python_modules tests first");
        return;
    };
    let root = std::env::temp_dir().join(format!("python-plugins-bench-{}", std::process::id()));
    let case = |name: &str, main: &str| {
        let dir = root.join(name);
        project(&dir, main);
        dir
    };
    let n = 10_000;
    let loop_of = |body: &str| format!("import benchmod\nfor i in std::sequence({n}):\n    {body}\nend\n");
    let none = case("none", "import benchmod\nx = std::upper(\"a\")\n");
    let one = case("one", "import benchmod\nx = benchmod::double(21)\n");
    let native = case("native", &loop_of("benchmod::Item(n=std::len([i]) + i)"));
    let values = case("values", &loop_of("benchmod::Item(n=benchmod::double(i))"));
    let entities = case(
        "entities",
        &format!(
            "import benchmod\nfor i in std::sequence({n}):\n    x = benchmod::Item(n=i)\n    y = benchmod::label(x)\nend\n"
        ),
    );
    // the module has Python code, so even `none` starts Python: take a model without the module
    let bare = root.join("bare");
    std::fs::create_dir_all(&bare).unwrap();
    std::fs::write(bare.join("project.yml"), "name: bare\n").unwrap();
    std::fs::write(bare.join("main.cf"), "x = std::upper(\"a\")\n").unwrap();

    let t_bare = time(&bare, &python, 5);
    let t_none = time(&none, &python, 3);
    let t_one = time(&one, &python, 3);
    let t_native = time(&native, &python, 3);
    let t_values = time(&values, &python, 3);
    let t_entities = time(&entities, &python, 3);
    let packaged: Vec<(&str, (Duration, Duration))> = ["apt-yum", "podman"]
        .into_iter()
        .map(|name| (name, Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python").join(name)))
        .filter(|(_, dir)| std::env::var_os("INMANTA_COMPILER_PYTHON").is_none() && dir.exists())
        .map(|(name, dir)| (name, time(&dir, &python, 3)))
        .collect();
    println!("python: {}", python.display());
    println!("(best wall time of the runs; CPU time of that run, the compiler and its Python process)");
    let row = |what: &str, (wall, cpu): (Duration, Duration), base: Option<(Duration, Duration)>| {
        let extra = base
            .map(|(bw, bc)| {
                format!(
                    "  (+{:.2?} wall, +{:.2?} CPU on top of native)",
                    wall.saturating_sub(bw),
                    cpu.saturating_sub(bc)
                )
            })
            .unwrap_or_default();
        println!("{what:<45}{wall:>10.2?} wall {cpu:>10.2?} CPU{extra}");
    };
    row("model without Python modules:", t_bare, None);
    row("first start (module imported, no call):", t_none, None);
    row("first start + one call:", t_one, None);
    row(&format!("{n} native plugin calls:"), t_native, None);
    row(&format!("{n} Python plugin calls (values):"), t_values, Some(t_native));
    row(&format!("{n} Python plugin calls (entity, 1 read):"), t_entities, Some(t_native));
    for (name, t) in packaged {
        row(&format!("first start, project tests/python/{name}:"), t, None);
    }
    std::fs::remove_dir_all(&root).ok();
}
