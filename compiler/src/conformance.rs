//! Compares our compiler's answer on a case with the real Inmanta's recorded answer (the
//! "truth" written by `scripts/reference/record.sh`, see docs/compiler-conformance.md).
//!
//! A case is a `.cf` file (the main file of a project whose module path is [`case_modules`]), its
//! truth `NAME.inmanta.json` beside it; or a project directory, its truth `main.inmanta.json` in
//! it. What is compared, and how it is normalised, is listed on [`Kind`].

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::{CompileOptions, CompileOutput, Diagnostics, PluginInputs, compile_project_with, compile_source};

/// What a disagreement is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// The truth file is missing, unreadable or stale (the case changed since it was recorded).
    Unrecorded,
    /// One compiler succeeds where the other fails.
    Outcome,
    /// The number of errors (Inmanta's `MultiException` members, or its one error) differs.
    ErrorCount,
    /// The error types differ (compared as fully qualified Inmanta names, in order).
    ErrorType,
    /// An error's file or line differs.
    ErrorLocation,
    /// A parse error's column differs (only parse errors carry a column worth comparing).
    ErrorColumn,
    /// The set of exported resource ids differs (ids compared without `,v=N`).
    ResourceIds,
    /// An exported attribute of a resource differs (`requires`, `id`, `version` excluded).
    ResourceAttribute,
    /// A resource's `requires` differ (as sets of ids without `,v=N`).
    Requires,
    /// Which resources are `undefined` (have unknown values) differs.
    ResourceState,
    /// A variable of main.cf has another value (instances, unknowns and unset values skipped).
    Variable,
    /// What `std::print` printed differs (as a multiset of lines).
    Printed,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// One difference between our answer and Inmanta's.
#[derive(Clone, Debug)]
pub struct Disagreement {
    pub kind: Kind,
    pub detail: String,
}

impl fmt::Display for Disagreement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.detail)
    }
}

/// The cases named by `paths`: `.cf` files and project directories as given; a directory without
/// `project.yml` stands for every `.cf` file in it. Sorted, as the recorder expands them.
pub fn expand_cases(paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() && !p.join("project.yml").exists() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(p)
                .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
                .unwrap_or_default();
            // `.cf` cases, and project cases (a directory with its own templates/ or files/)
            files.retain(|f| f.extension().is_some_and(|e| e == "cf") || f.join("project.yml").is_file());
            files.sort();
            out.extend(files);
        } else {
            out.push(p.clone());
        }
    }
    out
}

/// Where the recorded truth of a case lives.
pub fn truth_path(case: &Path) -> PathBuf {
    if case.is_dir() { case.join("main.inmanta.json") } else { case.with_extension("inmanta.json") }
}

/// The module directory every `.cf` case sees (the recorder gives Inmanta the same one).
pub fn test_modules() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/modules")
}

/// The module directory of a `.cf` case: a `modules/` directory beside it (the snippets of
/// Inmanta's own test suite import its test modules), else [`test_modules`]. The recorder
/// (`compile_cases.py`, `case_modules`) chooses the same.
pub fn case_modules(case: &Path) -> PathBuf {
    let beside = case.parent().map(|d| d.join("modules"));
    beside.filter(|d| d.is_dir()).unwrap_or_else(test_modules)
}

/// The options both compilers run a case with: [`case_modules`] on the module path and
/// `CONF_SET=hello` as the only environment variable.
pub fn case_options(case: &Path) -> CompileOptions {
    let env = [("CONF_SET".to_string(), "hello".to_string())].into_iter().collect();
    CompileOptions {
        main_file: (!case.is_dir()).then(|| case.to_path_buf()),
        module_path: if case.is_dir() { Vec::new() } else { vec![case_modules(case)] },
        stack_size: 8 << 20,
        // the recorder runs Inmanta without a server or environment
        plugin_inputs: PluginInputs { env: Some(env), environment: String::new(), ..PluginInputs::default() },
        ..CompileOptions::default()
    }
}

/// A list of known disagreements (`conformance-pending.txt`, `real-modules-pending.txt`): case
/// name -> why it still disagrees. Blank lines and `#` comments are skipped.
pub fn read_pending(path: &Path) -> BTreeMap<String, String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| match l.split_once(' ') {
            Some((n, why)) => (n.to_string(), why.trim().to_string()),
            None => (l.trim().to_string(), String::new()),
        })
        .collect()
}

/// Compiles a case with our compiler as the conformance suite does.
pub fn compile_case(case: &Path) -> Result<Result<CompileOutput, Diagnostics>, String> {
    compile_case_with(case, None)
}

/// Compiles a case with the modules installed for `python` (a virtual environment's
/// interpreter), as the real-module corpus does; `None` is the plain conformance run.
pub fn compile_case_with(case: &Path, python: Option<&Path>) -> Result<Result<CompileOutput, Diagnostics>, String> {
    let options = CompileOptions { python: python.map(Path::to_path_buf), ..case_options(case) };
    if case.is_dir() {
        Ok(compile_project_with(case, &options))
    } else {
        let text = std::fs::read_to_string(case).map_err(|e| format!("{}: {e}", case.display()))?;
        Ok(compile_source(&text, &options))
    }
}

/// The kinds of disagreement a case declares deliberate: `#> not-copied KIND: why` lines, for
/// Inmanta behaviour that is plainly a bug we do not copy (listed in compiler/README.md).
pub fn not_copied(case: &Path) -> Vec<Kind> {
    if case.is_dir() {
        return Vec::new();
    }
    let text = std::fs::read_to_string(case).unwrap_or_default();
    text.lines()
        .filter_map(|l| l.strip_prefix("#> not-copied "))
        .filter_map(|rest| {
            let name = rest.split(':').next().unwrap_or("").trim();
            ALL_KINDS.iter().copied().find(|k| k.to_string() == name)
        })
        .collect()
}

/// Whether the disagreements of a case are exactly what it declares deliberate (none otherwise).
pub fn deliberate(case: &Path, found: &[Disagreement]) -> bool {
    let allowed = not_copied(case);
    !allowed.is_empty() && !found.is_empty() && found.iter().all(|d| allowed.contains(&d.kind))
}

const ALL_KINDS: &[Kind] = &[
    Kind::Unrecorded,
    Kind::Outcome,
    Kind::ErrorCount,
    Kind::ErrorType,
    Kind::ErrorLocation,
    Kind::ErrorColumn,
    Kind::ResourceIds,
    Kind::ResourceAttribute,
    Kind::Requires,
    Kind::ResourceState,
    Kind::Variable,
    Kind::Printed,
];

/// Compiles a case and lists every disagreement with its recorded truth.
pub fn check_case(case: &Path) -> Vec<Disagreement> {
    check_case_with(case, None)
}

/// [`check_case`] with the modules installed for `python` (see [`compile_case_with`]).
pub fn check_case_with(case: &Path, python: Option<&Path>) -> Vec<Disagreement> {
    let truth = match read_truth(case) {
        Ok(t) => t,
        Err(e) => return vec![Disagreement { kind: Kind::Unrecorded, detail: e }],
    };
    match compile_case_with(case, python) {
        Ok(ours) => compare(case, &truth, &ours),
        Err(e) => vec![Disagreement { kind: Kind::Unrecorded, detail: e }],
    }
}

fn read_truth(case: &Path) -> Result<Value, String> {
    let path = truth_path(case);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("no truth {}: {e}", path.display()))?;
    let truth: Value = serde_json::from_str(&text).map_err(|e| format!("bad truth {}: {e}", path.display()))?;
    if !case.is_dir() {
        let source = std::fs::read(case).map_err(|e| e.to_string())?;
        if truth["source_sha1"].as_str() != Some(&sha1_smol::Sha1::from(&source).hexdigest()) {
            return Err(format!("{} changed since its truth was recorded", case.display()));
        }
    }
    Ok(truth)
}

/// Our answer against Inmanta's.
pub fn compare(case: &Path, truth: &Value, ours: &Result<CompileOutput, Diagnostics>) -> Vec<Disagreement> {
    let mut out = Vec::new();
    let mut say = |kind, detail: String| out.push(Disagreement { kind, detail });
    match (truth["outcome"].as_str().unwrap_or(""), ours) {
        ("ok", Ok(o)) => compare_output(case, truth, o, &mut say),
        ("error", Err(d)) => compare_errors(case, truth, d, &mut say),
        ("ok", Err(d)) => say(Kind::Outcome, format!("Inmanta compiles, we fail:\n{d}")),
        ("error", Ok(_)) => say(Kind::Outcome, format!("Inmanta fails, we compile; Inmanta: {}", summary(truth))),
        (other, Err(d)) => say(Kind::Outcome, format!("Inmanta's outcome is {other:?}; we fail:\n{d}")),
        (other, Ok(_)) => say(Kind::Outcome, format!("Inmanta's outcome is {other:?}; we compile")),
    }
    out
}

fn summary(truth: &Value) -> String {
    errors_of(truth).iter().map(|e| format!("{} at {} ({})", e.0, e.1, e.3)).collect::<Vec<_>>().join("; ")
}

/// (type, "file:line", column, message) of each recorded error.
fn errors_of(truth: &Value) -> Vec<(String, String, Option<u64>, String)> {
    let none = Vec::new();
    truth["errors"]
        .as_array()
        .unwrap_or(&none)
        .iter()
        .map(|e| {
            let loc = &e["location"];
            let at = match (loc["file"].as_str(), loc["line"].as_u64()) {
                (Some(f), Some(l)) => format!("{f}:{l}"),
                _ => "-".to_string(),
            };
            let msg: String = e["message"].as_str().unwrap_or("").chars().take(200).collect();
            (e["type"].as_str().unwrap_or("").to_string(), at, loc["col"].as_u64(), msg)
        })
        .collect()
}

/// A file name of ours in the recorder's terms: `main.cf`, `modules/<path>` for the test modules,
/// a path relative to the project, or `inmanta_plugins/<module>/...` for built-in modules.
fn normal_file(case: &Path, file: &str) -> String {
    let path = Path::new(file);
    if !case.is_dir() && path == case {
        return "main.cf".into();
    }
    if let Ok(rel) = path.strip_prefix(case_modules(case)) {
        return format!("modules/{}", rel.display());
    }
    if case.is_dir()
        && let Ok(rel) = path.strip_prefix(case)
    {
        return rel.display().to_string();
    }
    if let Some(rest) = file.strip_prefix("<builtin>/") {
        return format!("inmanta_plugins/{rest}");
    }
    // a module installed in the Python environment, as the recorder names it
    if let Some((_, rest)) = file.split_once("/site-packages/inmanta_plugins/") {
        return format!("inmanta_plugins/{rest}");
    }
    file.to_string()
}

/// Python's `str.splitlines()`: the lines without their ends (`\n`, `\r\n`, `\r` and the other
/// separators Python knows), no empty line after a final end.
fn python_lines(text: &str) -> Vec<String> {
    let ends = ['\n', '\r', '\x0b', '\x0c', '\x1c', '\x1d', '\x1e', '\u{85}', '\u{2028}', '\u{2029}'];
    let mut lines = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        match rest.find(ends) {
            Some(at) => {
                lines.push(rest[..at].to_string());
                let end = if rest[at..].starts_with("\r\n") {
                    2
                } else {
                    rest[at..].chars().next().map_or(1, char::len_utf8)
                };
                rest = &rest[at + end..];
            }
            None => {
                lines.push(rest.to_string());
                break;
            }
        }
    }
    lines
}

/// A recorded value with the recorder's temporary project directory (`/tmp/inmanta-case-*/project`,
/// in the name `std::file` gives a file) replaced by the case's own directory.
fn in_our_project(case: &Path, value: &Value) -> Value {
    match value {
        Value::String(text) if text.contains("/inmanta-case-") && case.is_dir() => {
            let ours = std::path::absolute(case).unwrap_or_else(|_| case.to_path_buf());
            let recorder =
                regex::Regex::new(r"(?:/[^/\s:]+)*/inmanta-case-[A-Za-z0-9_]+/project").expect("a valid regex");
            Value::String(recorder.replace_all(text, ours.display().to_string().as_str()).into_owned())
        }
        other => other.clone(),
    }
}

fn compare_errors(case: &Path, truth: &Value, ours: &Diagnostics, say: &mut impl FnMut(Kind, String)) {
    let theirs = errors_of(truth);
    let mine: Vec<(String, String, Option<u64>)> = ours
        .errors()
        .iter()
        .map(|e| {
            let at = e
                .location
                .as_ref()
                .map(|l| format!("{}:{}", normal_file(case, &l.file), l.line))
                .unwrap_or_else(|| "-".to_string());
            (e.inmanta_type().to_string(), at, e.location.as_ref().map(|l| l.col as u64))
        })
        .collect();
    if theirs.len() != mine.len() {
        say(
            Kind::ErrorCount,
            format!("Inmanta reports {} error(s): {}; we report {}:\n{ours}", theirs.len(), summary(truth), mine.len()),
        );
        return;
    }
    // Inmanta orders a MultiException's members by importance, file and line; compare as sorted.
    let mut theirs_sorted: Vec<_> = theirs.iter().collect();
    theirs_sorted.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    let mut mine_sorted: Vec<_> = mine.iter().collect();
    mine_sorted.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    for (t, m) in theirs_sorted.iter().zip(&mine_sorted) {
        if t.0 != m.0 {
            say(Kind::ErrorType, format!("Inmanta: {} at {} ({}); we: {} at {}:\n{ours}", t.0, t.1, t.3, m.0, m.1));
        } else if t.1 != m.1 && (t.1 != "-" || t.0 == UNSET_EXCEPTION) {
            // Where Inmanta gives no location (Python errors), ours is extra help; an unset
            // attribute has none in both (tools read the compile data).
            say(Kind::ErrorLocation, format!("{}: Inmanta at {} ({}), we at {}:\n{ours}", t.0, t.1, t.3, m.1));
        } else if t.0 == PARSER_EXCEPTION && t.2 != m.2 {
            say(Kind::ErrorColumn, format!("{} at {}: Inmanta column {:?}, ours {:?}:\n{ours}", t.0, t.1, t.2, m.2));
        }
    }
}

const PARSER_EXCEPTION: &str = "inmanta.parser.ParserException";
const UNSET_EXCEPTION: &str = "inmanta.ast.UnsetException";

fn without_version(id: &str) -> String {
    api::resource::unversioned(id).to_string()
}

fn compare_output(case: &Path, truth: &Value, ours: &CompileOutput, say: &mut impl FnMut(Kind, String)) {
    let empty = Vec::new();
    let theirs: BTreeMap<String, &Value> = truth["resources"]
        .as_array()
        .unwrap_or(&empty)
        .iter()
        .map(|r| (without_version(r["id"].as_str().unwrap_or("")), r))
        .collect();
    let ours_wire: Vec<Value> = ours.resources.iter().map(|r| Value::Object(r.to_wire(0))).collect();
    let mine: BTreeMap<String, &Value> =
        ours.resources.iter().zip(&ours_wire).map(|(r, wire)| (r.id.to_string(), wire)).collect();
    let (t_ids, m_ids): (BTreeSet<&String>, BTreeSet<&String>) = (theirs.keys().collect(), mine.keys().collect());
    if t_ids != m_ids {
        let only_t: Vec<_> = t_ids.difference(&m_ids).collect();
        let only_m: Vec<_> = m_ids.difference(&t_ids).collect();
        say(Kind::ResourceIds, format!("only Inmanta exports {only_t:?}; only we export {only_m:?}"));
    }
    for (id, t) in &theirs {
        let Some(m) = mine.get(id) else { continue };
        compare_resource(id, t, m, say);
    }
    let undefined = |state: BTreeMap<String, String>| -> BTreeSet<String> {
        state
            .into_iter()
            .filter(|(_, s)| s == api::ResourceState::Undefined.as_str())
            .map(|(id, _)| without_version(&id))
            .collect()
    };
    let t_state: BTreeMap<String, String> = truth["resource_state"]
        .as_object()
        .map(|o| o.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string())).collect())
        .unwrap_or_default();
    let (t_undef, m_undef) = (undefined(t_state), undefined(ours.resource_state.clone()));
    if t_undef != m_undef {
        say(Kind::ResourceState, format!("undefined resources: Inmanta {t_undef:?}, we {m_undef:?}"));
    }
    if let Some(vars) = truth["variables"].as_object() {
        for (name, want) in vars {
            if !comparable(want) {
                continue;
            }
            let want = &in_our_project(case, want);
            match ours.variables.get(name) {
                Some(got) if same_value(got, want) => {}
                got => say(Kind::Variable, format!("{name}: Inmanta {want}, we {got:?}")),
            }
        }
    }
    let printed = |lines: Vec<String>| -> HashMap<String, usize> {
        lines.into_iter().fold(HashMap::new(), |mut m, l| {
            *m.entry(l).or_default() += 1;
            m
        })
    };
    let t_printed: Vec<String> =
        truth["printed"].as_array().unwrap_or(&empty).iter().filter_map(|v| v.as_str().map(String::from)).collect();
    // the recorder splits what Python's print wrote (each message and a newline) with
    // str.splitlines(): a message ending in a newline leaves an empty line
    let m_printed: Vec<String> = ours.printed.iter().flat_map(|p| python_lines(&format!("{p}\n"))).collect();
    if printed(t_printed.clone()) != printed(m_printed.clone()) {
        say(Kind::Printed, format!("Inmanta printed {t_printed:?}, we {m_printed:?}"));
    }
}

fn compare_resource(id: &str, theirs: &Value, mine: &Value, say: &mut impl FnMut(Kind, String)) {
    let skip = ["id", "requires", "version"];
    let fields = |r: &Value| -> BTreeSet<String> {
        r.as_object().map(|o| o.keys().filter(|k| !skip.contains(&k.as_str())).cloned().collect()).unwrap_or_default()
    };
    for f in fields(theirs).union(&fields(mine)) {
        if !same_value(&mine[f], &theirs[f]) {
            say(Kind::ResourceAttribute, format!("{id} {f}: Inmanta {}, we {}", theirs[f], mine[f]));
        }
    }
    let reqs = |r: &Value| -> BTreeSet<String> {
        r["requires"]
            .as_array()
            .map(|a| a.iter().filter_map(|v| v.as_str().map(without_version)).collect())
            .unwrap_or_default()
    };
    let (t, m) = (reqs(theirs), reqs(mine));
    if t != m {
        let only_t: Vec<_> = t.difference(&m).collect();
        let only_m: Vec<_> = m.difference(&t).collect();
        say(Kind::Requires, format!("{id}: only Inmanta requires {only_t:?}; only we require {only_m:?}"));
    }
}

/// Recorded values we can compare: plain JSON, not `{"$instance": ..}`, `{"$unknown": ..}` etc.
fn comparable(v: &Value) -> bool {
    match v {
        Value::Object(o) => o.keys().all(|k| !k.starts_with('$')) && o.values().all(comparable),
        Value::Array(a) => a.iter().all(comparable),
        _ => true,
    }
}

/// JSON equality where a float equals the same float however written (Python's `1e+16` and our
/// `1e16`); ints compare by their digits, exact at any size (`arbitrary_precision`), and an int
/// never equals a float.
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            x == y || (x.is_f64() && y.is_f64() && x.as_f64().is_some() && x.as_f64() == y.as_f64())
        }
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_value(a, b)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same_value(v, w)))
        }
        _ => a == b,
    }
}
