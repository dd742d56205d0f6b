//! `inmanta project init`: a new project from Inmanta's cookiecutter template
//! (service/templates/inmanta-project-template), embedded in the binary so it works offline.
//! The template is rendered the way cookiecutter renders it: the answers (asked on stdin, or the
//! defaults with `--default`), the few Jinja expressions the template uses, then its hook's
//! `git init` and first commit.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use super::CliError;

const COOKIECUTTER_JSON: &str = include_str!("../../templates/inmanta-project-template/cookiecutter.json");

/// The template's files, relative to the project directory.
const FILES: &[(&str, &str)] = &[
    (
        ".editorconfig",
        include_str!("../../templates/inmanta-project-template/{{cookiecutter.project_name}}/.editorconfig"),
    ),
    (".gitignore", include_str!("../../templates/inmanta-project-template/{{cookiecutter.project_name}}/.gitignore")),
    ("README.md", include_str!("../../templates/inmanta-project-template/{{cookiecutter.project_name}}/README.md")),
    ("main.cf", include_str!("../../templates/inmanta-project-template/{{cookiecutter.project_name}}/main.cf")),
    ("project.yml", include_str!("../../templates/inmanta-project-template/{{cookiecutter.project_name}}/project.yml")),
    (
        "requirements.txt",
        include_str!("../../templates/inmanta-project-template/{{cookiecutter.project_name}}/requirements.txt"),
    ),
];

/// The template's variables in the order cookiecutter asks them (the order of cookiecutter.json).
const VARIABLES: &[&str] = &[
    "project_name",
    "project_description",
    "author",
    "author_email",
    "license",
    "copyright",
    "repo_url",
    "package_repo_url",
    "install_mode",
];

/// The hook's first commit, with the hook's author.
const COMMIT_MESSAGE: &str = "initial commit: cookiecutter template";
const COMMIT_AUTHOR: &str = "inmanta-project-template";

/// Makes `output_dir/name` from the template; asks each variable on stdin unless `defaults`.
pub fn init(output_dir: &Path, name: &str, defaults: bool) -> Result<PathBuf, CliError> {
    std::fs::create_dir_all(output_dir)?;
    let project = output_dir.join(name);
    if project.exists() {
        return Err(CliError::Usage(format!("Project directory {} already exists", project.display())));
    }
    let answers = answers(name, defaults)?;
    let project = output_dir.join(answer(&answers, "project_name"));
    std::fs::create_dir_all(&project)?;
    for (file, template) in FILES {
        std::fs::write(project.join(file), render(template, &answers)?)?;
    }
    first_commit(&project);
    Ok(project)
}

type Answers = Vec<(&'static str, String)>;

fn answer<'a>(answers: &'a Answers, key: &str) -> &'a str {
    answers.iter().find(|(k, _)| *k == key).map_or("", |(_, v)| v.as_str())
}

/// Every variable's value: `project_name` is `name` (Inmanta passes it as extra context), the
/// others cookiecutter.json's defaults (a choice's first option), each asked unless `defaults`.
fn answers(name: &str, defaults: bool) -> Result<Answers, CliError> {
    let spec: serde_json::Map<String, serde_json::Value> = serde_json::from_str(COOKIECUTTER_JSON)
        .map_err(|e| CliError::Usage(format!("the built-in project template is broken: {e}")))?;
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut answers: Answers = Vec::new();
    for (index, &key) in VARIABLES.iter().enumerate() {
        let value = spec.get(key).cloned().unwrap_or(serde_json::Value::Null);
        let choices: Vec<String> = match &value {
            serde_json::Value::Array(options) => {
                options.iter().map(|o| o.as_str().unwrap_or_default().to_string()).collect()
            }
            _ => Vec::new(),
        };
        let default = match (key, &value) {
            ("project_name", _) => name.to_string(),
            (_, serde_json::Value::String(text)) => render(text, &answers)?,
            _ => choices.first().cloned().unwrap_or_default(),
        };
        let chosen =
            if defaults { default } else { ask(&mut input, (index + 1, VARIABLES.len()), key, &default, &choices)? };
        answers.push((key, chosen));
    }
    Ok(answers)
}

/// One question as cookiecutter asks it; an empty line (or the end of stdin) takes the default.
pub(crate) fn ask(
    input: &mut impl BufRead,
    (number, total): (usize, usize),
    key: &str,
    default: &str,
    choices: &[String],
) -> Result<String, CliError> {
    let mut err = std::io::stderr();
    if choices.is_empty() {
        write!(err, "  [{number}/{total}] {key} ({default}): ")?;
    } else {
        writeln!(err, "  [{number}/{total}] Select {key}")?;
        for (i, choice) in choices.iter().enumerate() {
            writeln!(err, "    {} - {choice}", i + 1)?;
        }
        let numbers: Vec<String> = (1..=choices.len()).map(|n| n.to_string()).collect();
        write!(err, "    Choose from [{}] (1): ", numbers.join("/"))?;
    }
    err.flush()?;
    let mut line = String::new();
    input.read_line(&mut line)?;
    let line = line.trim();
    if line.is_empty() {
        return Ok(default.to_string());
    }
    if choices.is_empty() {
        return Ok(line.to_string());
    }
    line.parse::<usize>()
        .ok()
        .and_then(|n| n.checked_sub(1))
        .and_then(|n| choices.get(n))
        .or_else(|| choices.iter().find(|c| *c == line))
        .cloned()
        .ok_or_else(|| CliError::Usage(format!("{line:?} is not one of the choices of {key}")))
}

/// Renders the Jinja the template uses: `{{ cookiecutter.KEY }}`, `|slugify`, a comparison
/// `cookiecutter.KEY != "TEXT"` (or `==`, rendered as Python's True/False), and
/// `{% now 'local', '%Y' %}`. Anything else is a broken template.
fn render(template: &str, answers: &Answers) -> Result<String, CliError> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    loop {
        let next = [rest.find("{{").map(|i| (i, "}}")), rest.find("{%").map(|i| (i, "%}"))]
            .into_iter()
            .flatten()
            .min_by_key(|(i, _)| *i);
        let Some((start, close)) = next else {
            out.push_str(rest);
            return Ok(out);
        };
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find(close).ok_or_else(|| {
            CliError::Usage(format!("the project template has an unclosed {}", &rest[start..start + 2]))
        })?;
        let expression = after[..end].trim();
        out.push_str(&if close == "}}" { evaluate(expression, answers)? } else { statement(expression)? });
        rest = &after[end + 2..];
    }
}

fn evaluate(expression: &str, answers: &Answers) -> Result<String, CliError> {
    let variable = |text: &str| -> Result<String, CliError> {
        let key = text.trim().strip_prefix("cookiecutter.").ok_or_else(|| unknown(expression))?;
        Ok(answer(answers, key).to_string())
    };
    let literal = |text: &str| text.trim().trim_matches('"').trim_matches('\'').to_string();
    if let Some((left, right)) = expression.split_once("!=") {
        return Ok(python_bool(variable(left)? != literal(right)).into());
    }
    if let Some((left, right)) = expression.split_once("==") {
        return Ok(python_bool(variable(left)? == literal(right)).into());
    }
    match expression.split_once('|') {
        Some((value, "slugify")) => Ok(slugify(&variable(value)?)),
        Some(_) => Err(unknown(expression)),
        None => variable(expression),
    }
}

fn statement(statement: &str) -> Result<String, CliError> {
    match statement.split_whitespace().collect::<Vec<_>>().as_slice() {
        ["now", _, "'%Y'"] => Ok(chrono::Local::now().format("%Y").to_string()),
        _ => Err(unknown(statement)),
    }
}

fn unknown(expression: &str) -> CliError {
    CliError::Usage(format!("the project template uses {expression:?}, which this renderer does not know"))
}

fn python_bool(value: bool) -> &'static str {
    if value { "True" } else { "False" }
}

/// python-slugify's default: lower case, runs of other characters than letters and digits
/// become one `-`, none at either end.
pub(crate) fn slugify(text: &str) -> String {
    let mut slug = String::new();
    for c in text.to_lowercase().chars() {
        if c.is_alphanumeric() {
            slug.push(c);
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    slug.trim_end_matches('-').to_string()
}

/// The template's hook: a git repository with the files in a first commit. Without git the
/// project is there all the same.
fn first_commit(project: &Path) {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(project)
            .env("GIT_COMMITTER_NAME", COMMIT_AUTHOR)
            .env("GIT_COMMITTER_EMAIL", "")
            .env("GIT_AUTHOR_NAME", COMMIT_AUTHOR)
            .env("GIT_AUTHOR_EMAIL", "")
            .status()
    };
    for args in [&["init"][..], &["add", "."], &["commit", "-m", COMMIT_MESSAGE]] {
        match git(args) {
            Ok(status) if status.success() => {}
            Ok(status) => {
                eprintln!("warning: `git {}` in {} ended with {status}", args.join(" "), project.display());
                return;
            }
            Err(e) => {
                eprintln!("warning: no git repository made in {}: cannot run git: {e}", project.display());
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_template_renders_with_the_defaults() {
        let answers = answers("demo", true).unwrap();
        assert_eq!(answer(&answers, "install_mode"), "release");
        let year = chrono::Local::now().format("%Y").to_string();
        assert_eq!(answer(&answers, "copyright"), format!("{year} Inmanta"));
        let yml = render(FILES[4].1, &answers).unwrap();
        assert!(yml.starts_with("name: demo\ndescription: \nauthor: Inmanta\n"), "{yml}");
        assert!(yml.contains("  pre: False\n"), "{yml}");
        assert_eq!(slugify("My Shop_2 "), "my-shop-2");
    }

    #[test]
    fn an_unknown_expression_is_an_error() {
        assert!(render("{{ cookiecutter.x | upper }}", &Vec::new()).is_err());
        assert!(render("{% if x %}", &Vec::new()).is_err());
    }
}
