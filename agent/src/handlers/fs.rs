//! `fs::File`, `fs::Directory` and `fs::Symlink` (handlers `posix_file`, `posix_directory`,
//! `posix_symlink` in Inmanta), all through [`Host`](crate::host::Host).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::handler::{AttributeChange, CrudHandler, HandlerContext, HandlerError};
use crate::handlers::{mode_from_model, mode_to_model};
use crate::host::{Db, FileKind, FileStat, Host, lookup_id, lookup_name};
use crate::resource::ResourceRequest;

/// Desired contents over this size are not diffed in the log.
const MAX_DIFF_BYTES: usize = 256 * 1024;

fn sha1_hex(data: &[u8]) -> String {
    sha1_smol::Sha1::from(data).digest().to_string()
}

/// The current `permissions`, `owner` and `group` of a path, for those the model sets.
/// An owner given as a number or as a name that resolves to the current id reads back as given.
fn read_meta(
    host: &dyn Host,
    st: &FileStat,
    desired: &ResourceRequest,
    out: &mut Map<String, Value>,
) -> Result<(), HandlerError> {
    if desired.get("permissions").is_some() {
        out.insert("permissions".into(), mode_to_model(st.mode));
    }
    for (attr, db, id) in [("owner", Db::Passwd, st.uid), ("group", Db::Group, st.gid)] {
        if let Some(want) = desired.opt_str(attr) {
            let current = match lookup_id(host, db, want) {
                Ok(want_id) if want_id == id => want.to_string(),
                _ => lookup_name(host, db, id),
            };
            out.insert(attr.into(), Value::String(current));
        }
    }
    Ok(())
}

/// Applies `permissions`, `owner` and `group` (all, or only those in `changes`).
fn apply_meta(
    host: &dyn Host,
    path: &str,
    desired: &ResourceRequest,
    changes: Option<&BTreeMap<String, AttributeChange>>,
) -> Result<(), HandlerError> {
    let wanted = |attr: &str| changes.is_none_or(|c| c.contains_key(attr));
    if wanted("permissions")
        && let Some(v) = desired.get("permissions")
    {
        let mode = mode_from_model(v).ok_or_else(|| HandlerError::failed(format!("invalid permissions {v}")))?;
        host.chmod(path, mode)?;
    }
    let resolve = |attr: &str, db: Db| -> Result<Option<u32>, HandlerError> {
        match desired.opt_str(attr).filter(|_| wanted(attr)) {
            Some(name) => Ok(Some(lookup_id(host, db, name)?)),
            None => Ok(None),
        }
    };
    let (uid, gid) = (resolve("owner", Db::Passwd)?, resolve("group", Db::Group)?);
    if uid.is_some() || gid.is_some() {
        host.chown(path, uid, gid)?;
    }
    Ok(())
}

/// What is at `path`, when it is a `kind`; an error naming `what` was expected when it is
/// something else.
fn existing(host: &dyn Host, path: &str, kind: FileKind, what: &str) -> Result<Option<FileStat>, HandlerError> {
    match host.lstat(path)? {
        Some(st) if st.kind != kind => Err(HandlerError::failed(
            format!("{path} exists but is not a {what} (it is a {:?})", st.kind).to_lowercase(),
        )),
        st => Ok(st),
    }
}

/// Applies the changed `permissions`, `owner` and `group` of `path` and logs it:
/// "updated {label}{path}: {changed attributes}".
fn update_meta(
    ctx: &mut HandlerContext<'_>,
    path: &str,
    label: &str,
    desired: &ResourceRequest,
    changes: &BTreeMap<String, AttributeChange>,
) -> Result<(), HandlerError> {
    apply_meta(ctx.host(), path, desired, Some(changes))?;
    let changed = changes.keys().cloned().collect::<Vec<_>>().join(", ");
    ctx.info(format!("updated {label}{path}: {changed}"));
    Ok(())
}

/// Removes `path` and logs it: "removed {label}{path}".
fn remove(ctx: &mut HandlerContext<'_>, path: &str, label: &str) -> Result<(), HandlerError> {
    ctx.host().remove(path)?;
    ctx.info(format!("removed {label}{path}"));
    Ok(())
}

/// `fs::File`: contents by sha1 `hash` from the file store, plus owner, group and permissions.
pub(crate) struct FileHandler;

impl FileHandler {
    fn desired_hash(desired: &ResourceRequest) -> Result<String, HandlerError> {
        match (desired.opt_str("hash"), desired.opt_str("content")) {
            (Some(h), _) => Ok(h.to_string()),
            (None, Some(content)) => Ok(sha1_hex(content.as_bytes())),
            (None, None) => Err(HandlerError::failed("the file has neither a `hash` nor a `content`")),
        }
    }

    fn desired_content(ctx: &HandlerContext<'_>, desired: &ResourceRequest) -> Result<Vec<u8>, HandlerError> {
        match (desired.opt_str("hash"), desired.opt_str("content")) {
            (Some(h), _) => {
                let data = ctx.file(h)?;
                let got = sha1_hex(&data);
                if got != h {
                    return Err(HandlerError::failed(format!("file store returned content with hash {got}, not {h}")));
                }
                Ok(data)
            }
            (None, Some(content)) => Ok(content.as_bytes().to_vec()),
            (None, None) => Err(HandlerError::failed("the file has neither a `hash` nor a `content`")),
        }
    }
}

impl CrudHandler for FileHandler {
    fn read(
        &self,
        ctx: &mut HandlerContext<'_>,
        desired: &ResourceRequest,
    ) -> Result<Option<Map<String, Value>>, HandlerError> {
        let path = desired.str("path")?;
        // The file's hash is the sha1 of its content: a secret content makes it secret too.
        if ctx.is_secret("content") {
            ctx.mark_secret("hash");
        }
        let host = ctx.host();
        let Some(st) = existing(host, path, FileKind::File, "regular file")? else { return Ok(None) };
        let mut cur = Map::new();
        cur.insert("hash".into(), Value::String(sha1_hex(&host.read(path)?)));
        read_meta(host, &st, desired, &mut cur)?;
        Ok(Some(cur))
    }

    fn diff(&self, current: &Map<String, Value>, desired: &ResourceRequest) -> BTreeMap<String, AttributeChange> {
        let mut want = desired.attributes.clone();
        if let Ok(h) = FileHandler::desired_hash(desired) {
            want.insert("hash".into(), Value::String(h));
        }
        crate::handler::diff_attributes(current, &want)
    }

    fn describe(
        &self,
        ctx: &mut HandlerContext<'_>,
        current: &Map<String, Value>,
        desired: &ResourceRequest,
        changes: &BTreeMap<String, AttributeChange>,
    ) {
        if !changes.contains_key("hash") && !changes.contains_key("purged") {
            return;
        }
        let Ok(path) = desired.str("path") else { return };
        if ctx.is_secret("content") {
            ctx.info(format!("content of {path} differs (it comes from a reference: not shown)"));
            return;
        }
        let old = match current.is_empty() {
            true => Vec::new(),
            false => ctx.host().read(path).unwrap_or_default(),
        };
        let new = match desired.purged() {
            true => Vec::new(),
            false => match FileHandler::desired_content(ctx, desired) {
                Ok(data) => data,
                Err(_) => return,
            },
        };
        if old.len() > MAX_DIFF_BYTES || new.len() > MAX_DIFF_BYTES {
            return;
        }
        let (Ok(old), Ok(new)) = (std::str::from_utf8(&old), std::str::from_utf8(&new)) else {
            ctx.info(format!("binary content of {path} differs"));
            return;
        };
        let diff = similar::TextDiff::from_lines(old, new)
            .unified_diff()
            .context_radius(3)
            .header(&format!("current {path}"), &format!("desired {path}"))
            .to_string();
        let mut kwargs = Map::new();
        kwargs.insert("diff".into(), Value::String(diff.clone()));
        ctx.log("INFO", format!("content of {path} differs:\n{diff}"), kwargs);
        // A dry-run report of a file that exists shows the contents themselves, so a reader sees
        // the unified diff (our addition to the `hash` change). A file to create or delete reports
        // `purged` alone, as Inmanta's handler does.
        if ctx.is_dry_run() && !changes.contains_key("purged") {
            ctx.add_change("content", Value::String(old.to_string()), Value::String(new.to_string()));
        }
    }

    fn create(&self, ctx: &mut HandlerContext<'_>, desired: &ResourceRequest) -> Result<(), HandlerError> {
        let path = desired.str("path")?;
        let data = FileHandler::desired_content(ctx, desired)?;
        ctx.host().write(path, &data)?;
        apply_meta(ctx.host(), path, desired, None)?;
        ctx.info(format!("created {path} ({} bytes)", data.len()));
        Ok(())
    }

    fn update(
        &self,
        ctx: &mut HandlerContext<'_>,
        changes: &BTreeMap<String, AttributeChange>,
        desired: &ResourceRequest,
    ) -> Result<(), HandlerError> {
        let path = desired.str("path")?;
        if changes.contains_key("hash") {
            let data = FileHandler::desired_content(ctx, desired)?;
            ctx.host().write(path, &data)?;
        }
        update_meta(ctx, path, "", desired, changes)
    }

    fn delete(&self, ctx: &mut HandlerContext<'_>, desired: &ResourceRequest) -> Result<(), HandlerError> {
        remove(ctx, desired.str("path")?, "")
    }
}

/// `fs::Directory`: a directory with owner, group and permissions; purging removes the tree.
pub(crate) struct DirectoryHandler;

impl CrudHandler for DirectoryHandler {
    fn read(
        &self,
        ctx: &mut HandlerContext<'_>,
        desired: &ResourceRequest,
    ) -> Result<Option<Map<String, Value>>, HandlerError> {
        let path = desired.str("path")?;
        let Some(st) = existing(ctx.host(), path, FileKind::Directory, "directory")? else { return Ok(None) };
        let mut cur = Map::new();
        read_meta(ctx.host(), &st, desired, &mut cur)?;
        Ok(Some(cur))
    }

    fn create(&self, ctx: &mut HandlerContext<'_>, desired: &ResourceRequest) -> Result<(), HandlerError> {
        let path = desired.str("path")?;
        ctx.host().mkdir(path)?;
        apply_meta(ctx.host(), path, desired, None)?;
        ctx.info(format!("created directory {path}"));
        Ok(())
    }

    fn update(
        &self,
        ctx: &mut HandlerContext<'_>,
        changes: &BTreeMap<String, AttributeChange>,
        desired: &ResourceRequest,
    ) -> Result<(), HandlerError> {
        update_meta(ctx, desired.str("path")?, "directory ", desired, changes)
    }

    fn delete(&self, ctx: &mut HandlerContext<'_>, desired: &ResourceRequest) -> Result<(), HandlerError> {
        remove(ctx, desired.str("path")?, "directory ")
    }
}

/// `fs::Symlink`: a symlink at `dst` pointing to `src`.
pub(crate) struct SymlinkHandler;

impl CrudHandler for SymlinkHandler {
    fn read(
        &self,
        ctx: &mut HandlerContext<'_>,
        desired: &ResourceRequest,
    ) -> Result<Option<Map<String, Value>>, HandlerError> {
        let dst = desired.str("dst")?;
        if existing(ctx.host(), dst, FileKind::Symlink, "symlink")?.is_none() {
            return Ok(None);
        }
        let mut cur = Map::new();
        cur.insert("src".into(), Value::String(ctx.host().read_link(dst)?));
        Ok(Some(cur))
    }

    fn create(&self, ctx: &mut HandlerContext<'_>, desired: &ResourceRequest) -> Result<(), HandlerError> {
        let (src, dst) = (desired.str("src")?, desired.str("dst")?);
        ctx.host().symlink(src, dst)?;
        ctx.info(format!("created symlink {dst} -> {src}"));
        Ok(())
    }

    fn update(
        &self,
        ctx: &mut HandlerContext<'_>,
        _changes: &BTreeMap<String, AttributeChange>,
        desired: &ResourceRequest,
    ) -> Result<(), HandlerError> {
        let (src, dst) = (desired.str("src")?, desired.str("dst")?);
        ctx.host().remove(dst)?;
        ctx.host().symlink(src, dst)?;
        ctx.info(format!("pointed symlink {dst} to {src}"));
        Ok(())
    }

    fn delete(&self, ctx: &mut HandlerContext<'_>, desired: &ResourceRequest) -> Result<(), HandlerError> {
        remove(ctx, desired.str("dst")?, "symlink ")
    }
}
