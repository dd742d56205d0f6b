//! `inmanta export -g`: the resources' dependency graph, as Inmanta's exporter writes it
//! (`dependencies.dot` in the current directory: one node per resource version id, one edge per
//! `requires` to the plain resource id), and beside it `dependencies.svg` when Graphviz's `dot`
//! is on the PATH.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use compiler::ExportedResource;

use super::CliError;

/// The file Inmanta writes the graph to, in the current directory.
pub const DOT_FILE: &str = "dependencies.dot";

/// The graph of `resources` of version `version` (0 for a `-j` file or a partial export) in
/// Graphviz's dot language, line for line what Inmanta writes.
pub fn dot(resources: &[ExportedResource], version: u64) -> String {
    let mut out = String::from("digraph G {\n");
    for resource in resources {
        let node = dot_string(&resource.id.versioned_text(version));
        let _ = writeln!(out, "\t{node};");
        for required in &resource.requires {
            let _ = writeln!(out, "\t{node} -> {};", dot_string(&required.to_string()));
        }
    }
    out.push_str("}\n");
    out
}

/// A dot identifier in double quotes; Inmanta quotes without escaping, which breaks on a `"` in
/// a resource id, so those (and backslashes) are escaped here.
fn dot_string(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Writes `dependencies.dot` into `dir` and, when `dot` is installed, renders
/// `dependencies.svg` from it; returns the files written.
pub fn write(dir: &Path, resources: &[ExportedResource], version: u64) -> Result<Vec<PathBuf>, CliError> {
    let dot_file = dir.join(DOT_FILE);
    std::fs::write(&dot_file, dot(resources, version))
        .map_err(|e| CliError::Usage(format!("cannot write {}: {e}", dot_file.display())))?;
    let mut written = vec![dot_file.clone()];
    let svg = dot_file.with_extension("svg");
    match Command::new("dot").arg("-Tsvg").arg(&dot_file).arg("-o").arg(&svg).output() {
        Ok(output) if output.status.success() => written.push(svg),
        Ok(output) => eprintln!(
            "warning: Graphviz could not render {}: {}",
            dot_file.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        ),
        // No Graphviz: the dot file is what Inmanta writes too.
        Err(_) => tracing::info!("Graphviz `dot` is not installed: no SVG of the dependency graph"),
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quote_in_a_resource_id_stays_inside_its_dot_string() {
        assert_eq!(dot_string(r#"a[x,name=say "hi"]"#), r#""a[x,name=say \"hi\"]""#);
    }
}
