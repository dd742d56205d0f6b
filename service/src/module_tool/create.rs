//! `inmanta module create NAME [--v1]`. A v2 module is made from a module template built into
//! the binary, so it works offline: Inmanta 20.1 renders its cookiecutter template
//! (inmanta-module-template on GitHub) and needs the network for it. Ours asks the same six
//! questions (cookiecutter's prompts, on stderr; an empty answer or the end of stdin takes the
//! default) and lays out the same tree: setup.cfg, pyproject.toml, MANIFEST.in, the model with
//! a `hello` plugin it prints, a pytest-inmanta test, requirements files and editor/CI settings,
//! then `git init`, `git add .` and a first commit as the template's hook does. A v1 module
//! (`--v1`) is made as Inmanta makes it: module.yml, model/_init.cf and .gitignore in the last
//! directory of the project's module path, added to a new git repository.

use std::path::Path;
use std::process::Command;

use crate::cli::project_init::{ask, slugify};

/// The template's questions and their defaults, in cookiecutter's order.
fn questions(name: &str) -> [(&'static str, String); 6] {
    let year = chrono::Local::now().format("%Y");
    [
        ("module_name", name.to_string()),
        ("module_description", String::new()),
        ("author", "Inmanta".into()),
        ("author_email", "code@inmanta.com".into()),
        ("license", "ASL 2.0".into()),
        ("copyright", format!("{year} Inmanta")),
    ]
}

/// The answers the template is rendered with.
struct Answers {
    module_name: String,
    description: String,
    author: String,
    author_email: String,
    license: String,
    copyright: String,
}

impl Answers {
    /// `inmanta-module-<name, lower case, `-` for `_`>` (the template's pre-generation hook).
    fn package_name(&self) -> String {
        format!("inmanta-module-{}", self.module_name.to_lowercase().replace('_', "-"))
    }

    /// The module's name in the language: the first letter lower case, `_` for `-`.
    fn inmanta_module_name(&self) -> String {
        let mut chars = self.module_name.chars();
        let first: String = chars.next().map(|c| c.to_lowercase().collect()).unwrap_or_default();
        format!("{first}{}", chars.as_str()).replace('-', "_")
    }

    /// The header of the Python and model files: the Apache notice for `ASL 2.0`, else the
    /// copyright, contact and license lines; `indent` for the model's doc string.
    fn header(&self, indent: &str) -> String {
        let body = if self.license == "ASL 2.0" {
            format!(
                "Copyright {copyright}\n\nLicensed under the Apache License, Version 2.0 (the \"License\");\nyou may \
                 not use this file except in compliance with the License.\nYou may obtain a copy of the License \
                 at\n\n    http://www.apache.org/licenses/LICENSE-2.0\n\nUnless required by applicable law or agreed to \
                 in writing, software\ndistributed under the License is distributed on an \"AS IS\" BASIS,\nWITHOUT \
                 WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.\nSee the License for the specific \
                 language governing permissions and\nlimitations under the License.\n\nContact: {email}",
                copyright = self.copyright,
                email = self.author_email
            )
        } else {
            format!(":copyright: {}\n:contact: {}\n:license: {}", self.copyright, self.author_email, self.license)
        };
        let lines: Vec<String> =
            body.lines().map(|l| if l.is_empty() { String::new() } else { format!("{indent}{l}") }).collect();
        format!("\"\"\"\n{}\n\"\"\"\n", lines.join("\n"))
    }
}

pub fn create(dir: &Path, name: &str, v1: bool) -> Result<(), String> {
    if v1 {
        return create_v1(dir, name);
    }
    if dir.join(name).exists() {
        return Err(format!("Directory {name} already exists"));
    }
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut values = Vec::new();
    let questions = questions(name);
    for (index, (key, default)) in questions.iter().enumerate() {
        let value = ask(&mut input, (index + 1, questions.len()), key, default, &[]).map_err(|e| e.to_string())?;
        values.push(value);
    }
    let [module_name, description, author, author_email, license, copyright]: [String; 6] =
        values.try_into().map_err(|_| "the template's questions went wrong".to_string())?;
    let answers = Answers { module_name, description, author, author_email, license, copyright };
    let root = dir.join(slugify(&answers.module_name));
    if root.exists() {
        return Err(format!("Directory {} already exists", root.display()));
    }
    for (path, content) in template(&answers) {
        let path = root.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        std::fs::write(&path, content).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    // The template's hook: failures of git are ignored (`|| true`).
    for args in [&["init", "-q"][..], &["add", "."], &["commit", "-q", "-m", "initial commit: cookiecutter template"]] {
        let _ = Command::new("git").args(args).current_dir(&root).status();
    }
    Ok(())
}

/// The files of a new v2 module, relative to its directory.
fn template(answers: &Answers) -> Vec<(String, String)> {
    let name = answers.inmanta_module_name();
    let package = answers.package_name();
    let dependabot = "version: 2\nupdates:\n- package-ecosystem: pip\n  directory: \"/\"\n  schedule:\n    interval: \
                      daily\n  open-pull-requests-limit: 99\n";
    let setup_cfg = format!(
        "[metadata]\nname = {package}\nversion = 0.0.1\ndescription = {description}\nauthor = {author}\nauthor_email = \
         {email}\nlicense = {license}\ncopyright = {copyright}\n\n[options]\nzip_safe=False\ninclude_package_data=True\n\
         packages=find_namespace:\ninstall_requires =\n    inmanta-module-std\n\n[options.packages.find]\ninclude = \
         inmanta_plugins*\n\n[flake8]\n# The plugins' type annotations are Inmanta types (string, number, bool).\n\
         ignore = H405,H404,H302,H306,H301,H101,H801,E402,W503,E252,E203,F722\nbuiltins=string,number,bool\n\
         max-line-length = 128\nexclude = **/.env,.venv,.git,.tox,dist,doc,**egg\ncopyright-check=True\n\
         copyright-author={author}\nselect = E,F,W,C,BLK,I\n{regexp}\n[isort]\nmulti_line_output=3\n\
         include_trailing_comma=True\nforce_grid_wrap=0\nuse_parentheses=True\nline_length=88\n\
         known_first_party=inmanta\nknown_third_party=pytest,pydantic,Jinja2\n\n[black]\nline-length=128\n\
         target-version = 'py36', 'py37', 'py38'\n\n[egg_info]\ntag_build = dev0\n",
        description = answers.description,
        author = answers.author,
        email = answers.author_email,
        license = answers.license,
        copyright = answers.copyright,
        regexp = if answers.license == "ASL 2.0" {
            String::new()
        } else {
            format!(
                "copyright-regexp=:copyright:\\s+(\\(C\\)\\s+)?\\d{{4}}([-,]\\d{{4}})*\\s+{author}\\s+.*\\s+(:license:\\s+{license})\n",
                author = answers.author,
                license = answers.license
            )
        },
    );
    let manifest = format!(
        "include inmanta_plugins/{name}/setup.cfg\ninclude inmanta_plugins/{name}/py.typed\nrecursive-include \
         inmanta_plugins/{name}/model *.cf\ngraft inmanta_plugins/{name}/files\ngraft \
         inmanta_plugins/{name}/templates\ngraft docs\ngraft examples\ngraft tests\ninclude README.md\ninclude \
         CHANGELOG.md\n"
    );
    let makefile = format!(
        ".PHONY: install format pep8 mypy\n\ninstall:\n\tpip install -U --upgrade-strategy=eager pip setuptools \
         wheel\n\tpip install -U --upgrade-strategy=eager -e . -c requirements.txt -r requirements.dev.txt\n\n\
         format:\n\tisort inmanta_plugins tests\n\tblack inmanta_plugins tests\n\tflake8 inmanta_plugins tests\n\n\
         pep8:\n\tflake8 inmanta_plugins tests\n\nmypy:\n\tpython -m mypy --namespace-packages -p \
         inmanta_plugins.{name}\n"
    );
    let readme = format!(
        "# {name} Module\n\n## Running tests\n\n1. Make a virtual environment and install the module in it:\n\n\
         ```bash\npython3 -m venv .env && source .env/bin/activate\npip install -e . -c requirements.txt -r \
         requirements.dev.txt\n```\n\n2. Run the tests\n\n```bash\npytest tests\n```\n"
    );
    let plugin = format!(
        "{header}\nfrom inmanta.plugins import plugin\n\n\n@plugin\ndef hello(what: \"string\") -> \"string\":  # type: \
         ignore\n    \"\"\"\n    Say hello to what\n    \"\"\"\n    return f\"hello {{what}}\"\n",
        header = answers.header("")
    );
    let model = format!("{}greeting = hello(\"world\")\n\nstd::print(greeting)\n", answers.header("    "));
    let test = format!(
        "{header}\nfrom pytest_inmanta.plugin import Project\n\n\ndef test_basics(project: Project) -> None:\n    \
         project.compile(\n        \"\"\"\n            import {name}\n        \"\"\"\n    )\n\n    assert \
         project.get_stdout() == \"hello world\\n\"\n",
        header = answers.header("")
    );
    vec![
        (".editorconfig".into(), EDITORCONFIG.into()),
        (".github/dependabot.yml".into(), dependabot.into()),
        (".gitignore".into(), GITIGNORE.into()),
        (".gitlab/dependabot.yml".into(), dependabot.into()),
        ("MANIFEST.in".into(), manifest),
        ("Makefile".into(), makefile),
        ("README.md".into(), readme),
        ("files/.gitkeep".into(), String::new()),
        (format!("inmanta_plugins/{name}/__init__.py"), plugin),
        ("model/_init.cf".into(), model),
        ("pyproject.toml".into(), PYPROJECT.into()),
        (
            "requirements.dev.txt".into(),
            "inmanta-core>=6\ninmanta-dev-dependencies[module]\npytest-inmanta>=2\n".into(),
        ),
        ("requirements.txt".into(), String::new()),
        ("setup.cfg".into(), setup_cfg),
        ("templates/.gitkeep".into(), String::new()),
        ("tests/test_basics.py".into(), test),
    ]
}

const EDITORCONFIG: &str = "# http://editorconfig.org\n\nroot = true\n\n[*]\nindent_style = space\nindent_size = 4\n\
                            insert_final_newline = true\ntrim_trailing_whitespace = true\nend_of_line = lf\ncharset = \
                            utf-8\n\n[*.py]\nmax_line_length = 128\n\n[Makefile]\nindent_style = tab\n";
const GITIGNORE: &str =
    "inmanta_plugins/**/__pycache__\ntests/**/__pycache__\n*.orig\n.vscode\n.pytest_cache\n*.egg-info\n";
const PYPROJECT: &str =
    "[build-system]\nrequires = [\"setuptools >= 77.0.3\"]\nbuild-backend = \"setuptools.build_meta\"\n";

/// Inmanta's log line format on stdout (`inmanta.moduletool` padded to 25, the level to 8).
fn log(level: &str, message: &str) {
    println!("{:<25}{level:<8}{message}", "inmanta.moduletool");
}

/// `inmanta module create --v1 NAME`.
fn create_v1(dir: &Path, name: &str) -> Result<(), String> {
    let project = dir.ancestors().find(|d| d.join("project.yml").is_file()).ok_or_else(|| {
        format!("Unable to find an inmanta project (project.yml expected) in {} or above", dir.display())
    })?;
    let metadata = compiler::read_project_metadata(project).map_err(|d| d.to_string())?;
    // Inmanta's `project.modulepath[-1]`: the last directory project.yml names.
    let root = metadata.modulepath.last().map_or_else(|| project.join("libs"), |m| project.join(m));
    let module = root.join(name);
    if module.exists() {
        log("ERROR", &format!("{} already exists.", module.display()));
        return Ok(());
    }
    // Not `create_dir_all`: as Inmanta's, the module path directory has to be there.
    for dir in [module.clone(), module.join("model")] {
        std::fs::create_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let files = [
        ("module.yml", format!("name: {name}\nlicense: ASL 2.0\nversion: 0.0.1dev0")),
        ("model/_init.cf", "\n".to_string()),
        (".gitignore", "*.swp\n*.pyc\n*~\n.cache\n            ".to_string()),
    ];
    for (file, content) in &files {
        std::fs::write(module.join(file), content).map_err(|e| format!("{file}: {e}"))?;
    }
    for args in [&["init", "-q"][..], &["add", ".gitignore", "module.yml", "model/_init.cf"]] {
        let status = Command::new("git").args(args).current_dir(&module).status().map_err(|e| format!("git: {e}"))?;
        if !status.success() {
            return Err(format!("`git {}` in {} failed ({status})", args.join(" "), module.display()));
        }
    }
    Ok(())
}
