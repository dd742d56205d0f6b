//! What every name, id and value obeys before it reaches a database, checked here once so that
//! SQLite and PostgreSQL give the same answer: PostgreSQL refuses NUL bytes in text and index
//! rows over a few KiB with its own error, SQLite stores anything. Control characters and
//! bidirectional overrides are refused in names because they make a name look like another one
//! in the console, the CLI and the logs.

use crate::{Error, Result};

/// Names: users, roles, projects, environments, settings, parameters, agents.
pub const MAX_NAME: usize = 255;
/// Ids and references made of names: resource ids, filter values, paging cursors.
pub const MAX_ID: usize = 4096;
/// Free text stored as is: descriptions, repository URLs, parameter values.
pub const MAX_TEXT: usize = 1024 * 1024;

/// A name: at most [`MAX_NAME`] bytes, no control character and no bidirectional override.
pub fn name(what: &str, value: &str) -> Result<()> {
    limited(what, value, MAX_NAME)?;
    name_chars(what, value)
}

/// An id built from names (a resource id): the rules of [`name`] with room for [`MAX_ID`] bytes.
pub fn id(what: &str, value: &str) -> Result<()> {
    limited(what, value, MAX_ID)?;
    name_chars(what, value)
}

/// Free text: no NUL, at most `max` bytes.
pub fn text(what: &str, value: &str, max: usize) -> Result<()> {
    limited(what, value, max)?;
    if value.contains('\0') {
        return Err(Error::BadRequest(format!("{what} may not contain NUL characters")));
    }
    Ok(())
}

fn name_chars(what: &str, value: &str) -> Result<()> {
    match value.chars().find(|c| c.is_control() || is_bidi_control(*c)) {
        Some(c) => Err(Error::BadRequest(format!(
            "{what} may not contain control or text-direction characters (found U+{:04X})",
            c as u32
        ))),
        None => Ok(()),
    }
}

fn limited(what: &str, value: &str, max: usize) -> Result<()> {
    if value.len() > max {
        return Err(Error::BadRequest(format!("{what} is too long: {} bytes, at most {max}", value.len())));
    }
    Ok(())
}

/// Characters that reorder the text around them (U+202A..U+202E, U+2066..U+2069) or mark
/// direction invisibly (U+200E, U+200F, U+061C).
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_refuse_nul_controls_overrides_and_length() {
        assert!(name("a project name", "web-prod_1.eu").is_ok());
        assert!(name("a project name", "café ünïcode").is_ok());
        for bad in ["a\0b", "tab\there", "line\nbreak", "evil\u{202E}txt.exe", "\u{2066}x"] {
            let err = name("a project name", bad).unwrap_err().to_string();
            assert!(err.starts_with("a project name may not contain"), "{bad:?}: {err}");
        }
        let long = "x".repeat(MAX_NAME + 1);
        assert!(name("a user name", &long).unwrap_err().to_string().contains("too long"));
        assert!(id("a resource id", &"x".repeat(MAX_NAME + 1)).is_ok());
        assert!(id("a resource id", "std::File[a,path=/x\0]").is_err());
        assert!(text("a value", "multi\nline\tok", 100).is_ok());
        assert!(text("a value", "nul\0", 100).is_err());
        assert!(text("a value", &"x".repeat(101), 100).is_err());
    }
}
