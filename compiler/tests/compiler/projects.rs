//! Project-level behaviour: project.yml, the module path, relation precedence, versions,
//! compile data and the rendering of diagnostics.

use std::path::{Path, PathBuf};

use compiler::{CompileOptions, compile_project, compile_project_with};

struct TempProject(PathBuf);

impl TempProject {
    fn new(name: &str, project_yml: &str, main_cf: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("compiler-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        std::fs::write(dir.join("project.yml"), project_yml).expect("project.yml");
        std::fs::write(dir.join("main.cf"), main_cf).expect("main.cf");
        TempProject(dir)
    }

    fn write(&self, rel: &str, text: &str) {
        let p = self.0.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("dirs");
        std::fs::write(p, text).expect("write");
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempProject {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const NULL_MODEL: &str = "import std::testing\na = std::testing::NullResource(name=\"a\")\nb = std::testing::NullResource(name=\"b\")\nb.requires += a\n";

#[test]
fn missing_project_yml() {
    let dir = std::env::temp_dir().join(format!("compiler-test-{}-empty", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let err = compile_project(&dir).expect_err("no project");
    assert_eq!(err.errors()[0].kind, "ProjectNotFoundException");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn project_yml_requires_a_name() {
    let p = TempProject::new("noname", "description: x\n", NULL_MODEL);
    let err = compile_project(p.path()).expect_err("invalid metadata");
    assert_eq!(err.errors()[0].kind, "InvalidMetadata");
    assert!(err.errors()[0].message.contains("name"));
}

#[test]
fn project_yml_invalid_yaml() {
    let p = TempProject::new("badyaml", "name: [unclosed\n", NULL_MODEL);
    assert_eq!(compile_project(p.path()).expect_err("invalid yaml").errors()[0].kind, "InvalidMetadata");
}

#[test]
fn project_metadata_and_python_keys() {
    let yml = "name: meta\ndescription: d\nmodulepath: [libs, other]\nrepo:\n  - type: package\n    url: https://pypi.example\nrequires:\n  - std ~= 8.0\npip:\n  index-url: https://example\ninstall_mode: release\nenvironment_settings:\n  auto_deploy: true\n";
    let p = TempProject::new("meta", yml, NULL_MODEL);
    let out = compile_project(p.path()).expect("compiles");
    assert_eq!(out.metadata.name, "meta");
    assert_eq!(out.metadata.modulepath, vec!["libs", "other"]);
    assert_eq!(out.metadata.requires, vec!["std ~= 8.0"]);
    assert_eq!(out.metadata.environment_settings["auto_deploy"], true);
    let msgs: Vec<&str> = out.warnings.iter().map(|w| w.message.as_str()).collect();
    assert!(msgs.iter().any(|m| m.contains("'pip'")), "{msgs:?}");
    assert!(msgs.iter().any(|m| m.contains("package")), "{msgs:?}");
}

#[test]
fn modules_on_the_module_path() {
    let p = TempProject::new(
        "modpath",
        "name: m\nmodulepath: mods\n",
        "import net\nx = net::Iface(name=\"eth0\")\nr = x.name\n",
    );
    p.write("mods/net/model/_init.cf", "entity Iface:\n    string name\nend\nimplement Iface using std::none\n");
    let out = compile_project(p.path()).expect("compiles");
    assert_eq!(out.variables["r"], "eth0");
    // libs/ is searched too, and CompileOptions::module_path first
    let q = TempProject::new("libs", "name: m\n", "import lib1\nr = lib1::v\n");
    q.write("libs/lib1/model/_init.cf", "v = 1\n");
    assert_eq!(compile_project(q.path()).expect("libs").variables["r"], 1);
}

#[test]
fn missing_module_names_the_places_searched() {
    let p = TempProject::new("nomod", "name: m\nmodulepath: mods\n", "import nothere\n");
    let err = compile_project(p.path()).expect_err("missing module");
    let e = &err.errors()[0];
    assert_eq!(e.kind, "ModuleLoadingException");
    assert!(e.message.contains("mods") && e.message.contains("libs"), "{}", e.message);
    assert_eq!(e.location.as_ref().map(|l| l.line), Some(1));
}

#[test]
fn main_file_option() {
    let p = TempProject::new("mainfile", "name: m\n", "x = 1\n");
    p.write("other.cf", "x = 2\n");
    let options = CompileOptions { main_file: Some("other.cf".into()), ..CompileOptions::default() };
    assert_eq!(compile_project_with(p.path(), &options).expect("compiles").variables["x"], 2);
}

/// The wire form serialized from a resource is the JSON text of the map `to_wire` builds, key
/// for key and in the same order, with `id` and `requires` among the attributes where they sort,
/// and with attributes of those names replaced.
#[test]
fn the_serialized_wire_form_is_the_wire_map() {
    let p = TempProject::new("wire", "name: w\n", NULL_MODEL);
    let out = compile_project(p.path()).expect("compiles");
    let mut resources = out.resources.clone();
    // Attributes before, between and after `id` and `requires`, and two that are shadowed.
    let mut extra = resources[0].clone();
    for key in ["aaa", "ident", "j", "zzz", "id", "requires"] {
        extra.attributes.insert(key.into(), serde_json::json!(key));
    }
    resources.push(extra);
    for resource in &resources {
        for version in [0, 7] {
            let from_map = serde_json::to_string_pretty(&resource.to_wire(version)).unwrap();
            let direct = serde_json::to_string_pretty(&resource.wire(version)).unwrap();
            assert_eq!(direct, from_map);
        }
    }
}

#[test]
fn the_wire_form_carries_the_version() {
    let p = TempProject::new("version", "name: v\n", NULL_MODEL);
    let out = compile_project(p.path()).expect("compiles");
    let b = out.resources.iter().find(|r| r.attributes["name"] == "b").expect("b");
    assert_eq!(b.id, api::ResourceId::parse("std::testing::NullResource[internal,name=b]").unwrap());
    let wire = b.to_wire(0);
    assert_eq!(wire["id"], "std::testing::NullResource[internal,name=b],v=0");
    assert_eq!(wire["requires"], serde_json::json!(["std::testing::NullResource[internal,name=a]"]));
    let wire = b.to_wire(12);
    assert_eq!(wire["id"], "std::testing::NullResource[internal,name=b],v=12");
    assert_eq!(wire["requires"], serde_json::json!(["std::testing::NullResource[internal,name=a],v=12"]));
    assert_eq!(wire["name"], "b");
    assert!(!b.attributes.contains_key("id") && !b.attributes.contains_key("requires"));
    let file = p.path().join("export.json");
    out.write_export_json(&file).expect("write");
    let list: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).expect("read")).expect("json");
    assert_eq!(list.as_array().map(Vec::len), Some(2));
}

#[test]
fn relation_precedence_policy() {
    let model = "entity A:\nend\nentity B:\nend\nA.bs [0:] -- B\nB.aa [0:] -- A\nimplement A using std::none\nimplement B using std::none\na = A()\nb = B()\n";
    let ok = TempProject::new(
        "prec-ok",
        "name: p\nrelation_precedence_policy:\n  - __config__::A.bs before __config__::B.aa\n",
        model,
    );
    compile_project(ok.path()).expect("valid rules");
    let bad = TempProject::new("prec-bad", "name: p\nrelation_precedence_policy:\n  - A.bs after B.aa\n", model);
    assert_eq!(compile_project(bad.path()).expect_err("bad").errors()[0].kind, "InvalidRelationPrecedenceRuleError");
    let unknown =
        TempProject::new("prec-unknown", "name: p\nrelation_precedence_policy:\n  - A.nope before B.aa\n", model);
    assert_eq!(
        compile_project(unknown.path()).expect_err("bad").errors()[0].kind,
        "InvalidRelationPrecedenceRuleError"
    );
    let cyc = TempProject::new(
        "prec-cycle",
        "name: p\nrelation_precedence_policy:\n  - A.bs before B.aa\n  - B.aa before A.bs\n",
        model,
    );
    assert_eq!(
        compile_project(cyc.path()).expect_err("cycle").errors()[0].kind,
        "CycleInRelationPrecedencePolicyError"
    );
}

#[test]
fn relation_precedence_orders_freezing() {
    // Without the rule, the scheduler has to guess which relation to freeze first; the rule
    // says that `Box.items` is complete before `Box.copies` is read.
    let model = r#"
entity Box:
end
entity Item:
    string n
end
Box.items [0:] -- Item
Box.copies [0:] -- Item
implementation copy for Box:
    for i in self.items:
        self.copies += Item(n="copy-{{i.n}}")
    end
end
implement Box using copy
implement Item using std::none
b = Box(items=[Item(n="a"), Item(n="b")])
r = std::count(b.copies)
"#;
    let p = TempProject::new(
        "prec-order",
        "name: p\nrelation_precedence_policy:\n  - __config__::Box.items before __config__::Box.copies\n",
        model,
    );
    let out = compile_project(p.path()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.variables["r"], 2);
}

#[test]
fn diagnostics_render_like_rustc_and_as_compile_data() {
    let p = TempProject::new("diag", "name: d\n", "x = 1\nx = 2\n");
    let err = compile_project(p.path()).expect_err("double set");
    let text = err.to_string();
    assert!(text.starts_with("error[DoubleSetException]: "), "{text}");
    assert!(text.contains("main.cf:2:1\n"), "{text}");
    assert!(text.contains("2 | x = 2\n"), "{text}");
    assert!(text.contains("  | ^^^^^\n"), "{text}");
    // Inmanta's compile data (inmanta.ast.export.Error): the exception's qualified type, an LSP
    // location of uri and 0-based range, nothing else.
    let cd = serde_json::to_value(err.to_compile_data()).unwrap();
    let e = &cd["errors"][0];
    assert_eq!(e["type"], "inmanta.ast.DoubleSetException");
    assert_eq!(e["category"], "runtime_error");
    assert_eq!(e["location"]["range"]["start"], serde_json::json!({"line": 1, "character": 0}));
    assert!(e["location"]["uri"].as_str().unwrap_or("").ends_with("main.cf"));
    let keys: Vec<&String> = e["location"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["range", "uri"], "{e}");
    let parse = TempProject::new("diag-parse", "name: d\n", "x = = 1\n");
    let cd = serde_json::to_value(compile_project(parse.path()).expect_err("parse").to_compile_data()).unwrap();
    assert_eq!(cd["errors"][0]["category"], "parse_error");
    assert_eq!(cd["errors"][0]["type"], "inmanta.parser.ParserException");
}

/// Inmanta writes the compile data when evaluation ends: an error of the export after it fails
/// the command and leaves the compile data without errors.
#[test]
fn an_export_failure_is_not_in_the_compile_data() {
    let p = TempProject::new(
        "export-cycle",
        "name: p\n",
        "import std::testing\na = std::testing::NullResource(name=\"a\")\nb = std::testing::NullResource(name=\"b\", requires=a)\na.requires = b\n",
    );
    let err = compile_project(p.path()).expect_err("a dependency cycle");
    assert_eq!(err.errors()[0].kind, "DependencyCycleException", "{err}");
    assert_eq!(serde_json::to_value(err.to_compile_data()).unwrap(), serde_json::json!({"errors": []}));
}

#[test]
fn printed_lines_and_statistics() {
    let p = TempProject::new("print", "name: p\n", "std::print(\"hello\")\n");
    let out = compile_project(p.path()).expect("compiles");
    assert_eq!(out.printed, vec!["hello"]);
    assert!(out.stats.files >= 2 && out.stats.statements_run >= 1);
}

#[test]
fn statement_order_does_not_change_the_export() {
    let items = [
        "import fs\nimport std::testing",
        "entity Site:\n    string name\n    int port = 80\nend",
        "index Site(name)",
        "Site.host [1] -- std::Host",
        "Site.files [0:] -- fs::File",
        "implementation files for Site:\n    self.files += fs::File(host=self.host, path=\"/srv/{{self.name}}/index.html\", content=\"port {{self.port}}\")\n    for f in self.files:\n        f.requires += std::testing::NullResource(name=\"pre-{{self.name}}\")\n    end\nend",
        "implement Site using files",
        "h = std::Host(name=\"web\", os=std::linux, ip=\"10.0.0.1\")",
        "fs::Directory(host=h, path=\"/srv/a\")",
        "for n in [\"a\", \"b\", \"c\"]:\n    Site(name=n, host=h, port=n == \"a\" ? 8080 : 80)\nend",
        // Inmanta reads attributes from names only: the index lookup goes to a variable first.
        "site_b = Site[name=\"b\"]\nsite_b.files += fs::File(host=h, path=\"/srv/b/extra\", content=\"x\")",
    ];
    let forward = items.join("\n\n") + "\n";
    let mut rev: Vec<&str> = items[1..].to_vec();
    rev.reverse();
    let backward = format!("{}\n\n{}\n", items[0], rev.join("\n\n"));
    let a = TempProject::new("order-a", "name: o\n", &forward);
    let b = TempProject::new("order-b", "name: o\n", &backward);
    let oa = compile_project(a.path()).unwrap_or_else(|e| panic!("{e}"));
    let ob = compile_project(b.path()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(oa.resources.len(), 8);
    assert_eq!(oa.resources, ob.resources);
    assert_eq!(oa.files, ob.files);
}

/// A module's `handlers/<namespace>__<Type>` executables come out with the export, keyed by
/// resource type; misnamed, foreign and non-executable files are left out with a warning.
#[test]
fn modules_ship_their_handler_executables() {
    use std::os::unix::fs::PermissionsExt;
    let p = TempProject::new(
        "shipped-handlers",
        "name: shipped\nmodulepath: libs\n",
        "import kv\nkv::Line(host=std::Host(name=\"h\", os=std::linux), key=\"a\")\n",
    );
    p.write(
        "libs/kv/module.yml",
        "name: kv\nversion: 0.1.0\nresources:\n  kv::Line:\n    agent: host.name\n    id_attribute: key\n    \
         fields: [key, mode]\n",
    );
    p.write(
        "libs/kv/model/_init.cf",
        "entity Line extends std::PurgeableResource:\n  string key\n  string mode=\"plain\"\nend\n\
         Line.host [1] -- std::Host\nimplement Line using std::none\n",
    );
    let executable = |rel: &str, text: &str| {
        p.write(rel, text);
        std::fs::set_permissions(p.path().join(rel), std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    executable("libs/kv/handlers/kv__Line", "#!/bin/sh\necho '{}'\n");
    executable("libs/kv/handlers/kv__sub__Thing", "#!/bin/sh\n");
    executable("libs/kv/handlers/fs__File", "#!/bin/sh\n");
    executable("libs/kv/handlers/Line", "#!/bin/sh\n");
    p.write("libs/kv/handlers/kv__Plain", "#!/bin/sh\n");
    p.write("libs/kv/handlers/.kv__Hidden.swp", "");

    let out = compile_project(p.path()).unwrap_or_else(|e| panic!("{e}"));
    // module.yml maps the entity to a resource; its fields are plain attributes (a module's
    // `mode` is not the built-in fs `permissions` convention).
    let line = &serde_json::Value::Object(out.resources[0].to_wire(0));
    assert_eq!(line["id"], "kv::Line[h,key=a],v=0");
    assert_eq!(line["mode"], "plain");
    assert_eq!(line["purged"], false);
    assert!(line.get("permissions").is_none(), "{line}");
    let types: Vec<&str> = out.handlers.keys().map(String::as_str).collect();
    assert_eq!(types, ["kv::Line", "kv::sub::Thing"]);
    assert_eq!(out.handlers["kv::Line"].content, b"#!/bin/sh\necho '{}'\n");
    assert_eq!(out.handlers["kv::Line"].path, p.path().join("libs/kv/handlers/kv__Line"));
    let warnings: Vec<String> = out.warnings.iter().map(|w| w.message.clone()).collect();
    for left_out in ["fs__File", "handlers/Line", "kv__Plain"] {
        assert!(warnings.iter().any(|w| w.contains(left_out) && w.contains("not shipped")), "{left_out}: {warnings:?}");
    }
    assert!(!warnings.iter().any(|w| w.contains("Hidden")), "{warnings:?}");

    // A project that imports no module with handlers ships none.
    let plain = TempProject::new("no-handlers", "name: plain\n", NULL_MODEL);
    assert!(compile_project(plain.path()).unwrap().handlers.is_empty());
}

#[test]
fn module_resource_mappings_are_checked() {
    let model = "import kv\n";
    let cases = [
        (
            "resources:\n  other::Line:\n    agent: a\n    id_attribute: k\n    fields: []\n",
            "not an entity of module kv",
        ),
        ("resources:\n  kv::Line:\n    id_attribute: k\n    fields: []\n", "needs `agent`"),
        ("resources:\n  kv::Line:\n    agent: a\n    id_attribute: k\n", "needs `fields`"),
    ];
    for (i, (yml, expected)) in cases.iter().enumerate() {
        let p = TempProject::new(&format!("bad-mapping-{i}"), "name: bad\nmodulepath: libs\n", model);
        p.write("libs/kv/module.yml", &format!("name: kv\n{yml}"));
        p.write("libs/kv/model/_init.cf", "entity Line:\nend\n");
        let err = compile_project(p.path()).err().unwrap_or_else(|| panic!("{yml} compiled")).to_string();
        assert!(err.contains(expected) && err.contains("module.yml"), "{yml}: {err}");
    }
}
