//! The plugins of `exec`.

use super::std_plugins::text;
use super::{Plugins, s};

pub(crate) fn register(p: &mut Plugins) {
    p.add("exec::in_shell", &[("command", None)], |_, c| {
        let cmd = text(&c.args[0], "command")?;
        Ok(s(&["sh", "-c", &cmd].iter().map(|a| list2cmdline_arg(a)).collect::<Vec<_>>().join(" ")))
    });
}

/// One argument as Python's `subprocess.list2cmdline` quotes it (what exec's `in_shell` uses):
/// double quotes around arguments with spaces or tabs, backslashes doubled before a quote.
fn list2cmdline_arg(arg: &str) -> String {
    let quote = arg.is_empty() || arg.contains([' ', '\t']);
    let mut out = String::new();
    if quote {
        out.push('"');
    }
    let mut backslashes = 0;
    for c in arg.chars() {
        match c {
            '\\' => backslashes += 1,
            '"' => {
                out.push_str(&"\\".repeat(backslashes * 2 + 1));
                out.push('"');
                backslashes = 0;
            }
            _ => {
                out.push_str(&"\\".repeat(backslashes));
                backslashes = 0;
                out.push(c);
            }
        }
    }
    out.push_str(&"\\".repeat(if quote { backslashes * 2 } else { backslashes }));
    if quote {
        out.push('"');
    }
    out
}
