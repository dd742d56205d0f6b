//! Handler executables that modules ship: `<module>/handlers/<namespace>__<Type>` handles the
//! resource type `<namespace>::<Type>` (docs/handlers.md). The export uploads them with the
//! version so that the agents deploying it can run them.

use crate::diagnostics::ErrorKind;
use std::collections::{BTreeMap, HashMap};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use crate::diagnostics::{Diagnostic, Severity};

/// One shipped handler: where it was found, its bytes and their sha1 (its id in the file store).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShippedHandler {
    pub path: PathBuf,
    pub content: Vec<u8>,
    pub hash: String,
}

/// Every handler shipped by the loaded modules, by resource type. A module only ships handlers
/// for its own namespaces; anything else in `handlers/` is reported as a warning and left out.
#[allow(clippy::result_large_err)]
pub(crate) fn collect(
    module_dirs: &HashMap<String, PathBuf>,
    warnings: &mut Vec<Diagnostic>,
) -> Result<BTreeMap<String, ShippedHandler>, Diagnostic> {
    let mut found = BTreeMap::new();
    let mut modules: Vec<(&String, &PathBuf)> = module_dirs.iter().collect();
    modules.sort();
    for (module, dir) in modules {
        let handlers_dir = dir.join("handlers");
        let Ok(entries) = std::fs::read_dir(&handlers_dir) else { continue };
        let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for path in paths {
            let Some(name) = path.file_name().and_then(|n| n.to_str()).map(str::to_string) else { continue };
            if name.starts_with('.') || path.is_dir() {
                continue;
            }
            let mut warn = |message: String| {
                warnings.push(Diagnostic {
                    severity: Severity::Warning,
                    ..Diagnostic::plain(ErrorKind::CompilerRuntimeWarning, message)
                })
            };
            let parts: Vec<&str> = name.split("__").collect();
            if parts.len() < 2 || parts.iter().any(|p| p.is_empty()) || parts[0] != module.as_str() {
                warn(format!(
                    "{} is not shipped: a handler of module {module} is named <namespace>__<Type> for a type of {module} \
                     (e.g. {module}__Thing for {module}::Thing)",
                    path.display()
                ));
                continue;
            }
            let meta = std::fs::metadata(&path).map_err(|e| unreadable(&path, e))?;
            if meta.permissions().mode() & 0o111 == 0 {
                warn(format!("{} is not shipped: it is not executable (chmod +x)", path.display()));
                continue;
            }
            let content = std::fs::read(&path).map_err(|e| unreadable(&path, e))?;
            let hash = sha1_smol::Sha1::from(&content).hexdigest();
            found.insert(parts.join("::"), ShippedHandler { path, content, hash });
        }
    }
    Ok(found)
}

fn unreadable(path: &std::path::Path, e: std::io::Error) -> Diagnostic {
    Diagnostic::plain(ErrorKind::ModuleLoadingException, format!("cannot read the handler {}: {e}", path.display()))
}
