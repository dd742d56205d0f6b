//! The plugins of `exec`.

use super::std_plugins::text;
use super::{Plugins, s};

pub(crate) fn register(p: &mut Plugins) {
    p.add("exec::in_shell", &[("command", None)], |_, c| {
        let cmd = text(&c.args[0], "command")?;
        Ok(s(&format!("sh -c {}", shell_quote(&cmd))))
    });
}

/// Quotes a string for `sh` with single quotes.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\"'\"'"))
}
