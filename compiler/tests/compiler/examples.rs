//! The example projects in `examples/` compile and export.

use std::path::PathBuf;

use compiler::{CompileOptions, CompileOutput, PluginInputs, compile_project_with};

fn compile(name: &str) -> CompileOutput {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples").join(name);
    let plugin_inputs = PluginInputs { env: Some(Default::default()), ..PluginInputs::default() };
    let options = CompileOptions { plugin_inputs, ..CompileOptions::default() };
    compile_project_with(&dir, &options).unwrap_or_else(|e| panic!("{name} does not compile:\n{e}"))
}

/// The resource `rid` as the `-j` file holds it.
fn resource(out: &CompileOutput, rid: &str) -> serde_json::Value {
    out.resources
        .iter()
        .find(|r| r.id.to_string() == rid)
        .map(|r| serde_json::Value::Object(r.to_wire(0)))
        .unwrap_or_else(|| panic!("no resource {rid}"))
}

/// Whether `rid` is exported.
fn exported(out: &CompileOutput, rid: &str) -> bool {
    let rid = api::ResourceId::parse(rid).expect("a resource id");
    out.resources.iter().any(|r| r.id == rid)
}

fn content<'a>(out: &'a CompileOutput, rid: &str) -> &'a str {
    let resource = resource(out, rid);
    let hash = resource["hash"].as_str().expect("hash");
    std::str::from_utf8(&out.files[hash]).expect("utf-8")
}

#[test]
fn webfleet() {
    let out = compile("webfleet");
    // 5 servers: 3 directories, nginx.conf and a reload each; ams servers serve shop (tls dir),
    // blog runs on 3 servers; each app deployment adds a site file, a directory and a symlink.
    let count = |t: &str| out.resources.iter().filter(|r| r.id.to_string().starts_with(t)).count();
    assert_eq!(count("fs::File"), 5 + 3 + 3);
    assert_eq!(count("exec::Run"), 5);
    assert_eq!(count("fs::Symlink"), 6);
    assert_eq!(count("fs::Directory"), 5 * 3 + 3 + 6);
    let reload = resource(&out, "exec::Run[web-ams-1,command=/usr/sbin/nginx -s reload]");
    let reqs: Vec<&str> = reload["requires"].as_array().expect("requires").iter().filter_map(|r| r.as_str()).collect();
    assert!(reqs.contains(&"fs::File[web-ams-1,path=/etc/nginx/sites-enabled/shop.conf]"), "{reqs:?}");
    assert!(reqs.contains(&"fs::File[web-ams-1,path=/etc/nginx/nginx.conf]"));
    assert!(reqs.contains(&"fs::Directory[web-ams-1,path=/etc/nginx/sites-enabled]"));
    let site = content(&out, "fs::File[web-ams-2,path=/etc/nginx/sites-enabled/shop.conf]");
    assert!(site.contains("listen 443 ssl") && site.contains("127.0.0.1:8080"), "{site}");
    let nginx = content(&out, "fs::File[web-fra-1,path=/etc/nginx/nginx.conf]");
    assert_eq!(nginx, "# cluster fra, managed by inmanta\nworker_processes 4;\ninclude /etc/nginx/sites-enabled/*;\n");
    // tls directory only where a tls app runs
    assert!(exported(&out, "fs::Directory[web-ams-3,path=/etc/nginx/tls]"));
    assert!(!exported(&out, "fs::Directory[web-fra-1,path=/etc/nginx/tls]"));
    // a file requires every managed directory above it (as Inmanta's fs module adds them)
    let site_file = resource(&out, "fs::File[web-fra-2,path=/etc/nginx/sites-enabled/blog.conf]");
    assert_eq!(
        site_file["requires"],
        serde_json::json!([
            "fs::Directory[web-fra-2,path=/etc/nginx/sites-enabled]",
            "fs::Directory[web-fra-2,path=/etc/nginx]"
        ])
    );
    assert!(out.resource_state.is_empty());
    // version 7: every id and require carries it
    for r in &out.resources {
        let wire = r.to_wire(7);
        assert_eq!(wire["id"], r.id.versioned(7).to_string());
        let requires: Vec<String> = r.requires.iter().map(|q| q.versioned_text(7)).collect();
        assert_eq!(wire["requires"], serde_json::json!(requires));
    }
    let json: serde_json::Value = serde_json::from_str(&out.export_json()).expect("export json");
    assert_eq!(json.as_array().map(Vec::len), Some(out.resources.len()));
}

#[test]
fn modules_and_templates() {
    let out = compile("modules-templates");
    assert_eq!(out.resources.len(), 5, "{:#?}", out.resources.iter().map(|r| r.id.to_string()).collect::<Vec<_>>());
    let ini = content(&out, "fs::File[app-1,path=/opt/inventory/app.ini]");
    // as Jinja2 renders it for Inmanta: the template's last newline is dropped
    assert_eq!(ini, "[app]\nname = inventory\nport = 9000\nadmins = ann, bob\nhost = app-1");
    let vhost = content(&out, "fs::File[app-1,path=/etc/nginx/conf.d/inv.example.com.conf]");
    assert!(vhost.contains("server_name inv.example.com inv;"), "{vhost}");
    let vres = resource(&out, "fs::File[app-1,path=/etc/nginx/conf.d/inventory.example.com.conf]");
    assert_eq!(vres["requires"], serde_json::json!(["fs::File[app-1,path=/opt/inventory/app.ini]"]));
    let license = resource(&out, "fs::File[app-1,path=/opt/inventory/LICENSE]");
    assert_eq!(license["permissions"], 444);
    assert!(content(&out, "fs::File[app-1,path=/opt/inventory/LICENSE]").starts_with("Copyright example."));
    // pip is accepted and ignored with a note
    assert!(out.warnings.iter().any(|w| w.message.contains("'pip'")));
    assert_eq!(out.metadata.name, "modules-templates");
}

#[test]
fn unknowns() {
    let out = compile("unknowns");
    assert_eq!(out.resource_state.get("fs::File[db-1,path=/etc/app/db.conf]").map(String::as_str), Some("undefined"));
    assert_eq!(
        out.resource_state.get("fs::File[db-1,path=/etc/app/public.conf]").map(String::as_str),
        Some("undefined")
    );
    assert!(!out.resource_state.contains_key("fs::File[db-1,path=/etc/app/static.conf]"));
    assert_eq!(resource(&out, "fs::File[db-1,path=/etc/app/db.conf]")["hash"], "<<undefined>>");
    // the unknown port is skipped by the for loop; the others are exported
    assert!(exported(&out, "std::testing::NullResource[lb,name=port-80]"));
    assert!(exported(&out, "std::testing::NullResource[lb,name=port-443]"));
    assert!(!exported(&out, "std::testing::NullResource[lb,name=never]"));
    let sources: Vec<&str> = out.unknowns.iter().filter_map(|u| u["source"].as_str()).collect();
    assert!(sources.contains(&"fact"), "{:?}", out.unknowns);
    let fact = out.unknowns.iter().find(|u| u["source"] == "fact").expect("fact unknown");
    assert_eq!(fact["parameter"], "public_ip");
    assert_eq!(fact["resource"], "std::testing::NullResource[lb,name=loadbalancer]");
    assert_eq!(out.variables["password_known"], false);
    assert!(out.warnings.iter().any(|w| w.message.contains("EXAMPLE_DB_PASSWORD")));
}

#[test]
fn unknowns_become_known() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/unknowns");
    let env = [("EXAMPLE_DB_PASSWORD", "s3cret"), ("EXAMPLE_EXTRA_PORT", "8443")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let mut facts = std::collections::HashMap::new();
    facts.insert(
        "std::testing::NullResource[lb,name=loadbalancer]".to_string(),
        [("public_ip".to_string(), serde_json::json!("192.0.2.10"))].into_iter().collect(),
    );
    let plugin_inputs = PluginInputs { env: Some(env), facts, ..PluginInputs::default() };
    let options = CompileOptions { plugin_inputs, ..CompileOptions::default() };
    let out = compile_project_with(&dir, &options).unwrap_or_else(|e| panic!("{e}"));
    assert!(out.resource_state.is_empty(), "{:?}", out.resource_state);
    assert!(out.unknowns.is_empty());
    let db = resource(&out, "fs::File[db-1,path=/etc/app/db.conf]");
    let hash = db["hash"].as_str().expect("hash");
    assert_eq!(std::str::from_utf8(&out.files[hash]).expect("utf-8"), "name=inventory\npassword=s3cret\n");
}
