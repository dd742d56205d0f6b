//! The compile's memory budget (`[compiler] max-memory`): a model whose values grow without end
//! (`a1 = a0 + a0` repeated, `"{{a0}}{{a0}}"`, `[l0, l0]`) stops with a model error at the
//! statement that would pass it, instead of taking the machine's memory.
//!
//! The budget counts the bytes of the strings, lists and dicts the evaluation builds by growing
//! other values: `+` on strings, interpolation and f-strings, list literals that copy lists,
//! comprehensions, what plugins return, and the lists and dicts `std::json_dumps` and templates
//! copy. Each is charged before it is built (or, for a plugin,
//! as it returns), so nothing past the budget is ever allocated by these. A string counts twice
//! its length (its text is written into a buffer, then copied into the value), a list 24 bytes
//! an element, a dict 40 bytes an entry (what they hold is shared). The count only grows:
//! a value dropped again (a temporary, a statement run a second time) is not given back. That
//! makes it an upper bound of what those values hold at once, the same on every run of a model,
//! and cheap: an addition and a comparison per value built.

use crate::diagnostics::ErrorKind;
use std::rc::Rc;

use super::format::{Bounded, grouped, interp_into};
use super::value::Value;
use super::{EResult, Evaluator, error};
use crate::syntax::Span;

/// The default budget: 1 GiB.
pub(crate) const DEFAULT_MAX_MEMORY: u64 = 1 << 30;

/// What one element of a list and one entry of a dict take (the values they hold are shared):
/// 24 and 40 bytes.
const ELEMENT_BYTES: u64 = size_of::<Value>() as u64;
const ENTRY_BYTES: u64 = size_of::<(Rc<str>, Value)>() as u64;

/// The running total of one compile.
pub(crate) struct Budget {
    limit: u64,
    used: u64,
}

/// What a charge is for, to say in the error what grew.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Built {
    /// A string of this many bytes.
    Str(usize),
    /// A list, or what is added to one, of this many elements.
    List(usize),
    /// A dict of this many entries.
    Dict(usize),
}

impl Built {
    fn bytes(self) -> u64 {
        match self {
            // written twice: into a buffer, then copied into the value (which has a header)
            Built::Str(n) => (n as u64).saturating_mul(2),
            Built::List(n) => (n as u64).saturating_mul(ELEMENT_BYTES),
            Built::Dict(n) => (n as u64).saturating_mul(ENTRY_BYTES),
        }
    }

    fn describe(self) -> String {
        match self {
            Built::Str(n) => format!("this string would be {}", human_bytes(n as u64)),
            Built::List(n) => {
                format!("this list would take {} more elements ({})", grouped(n as u64), human_bytes(self.bytes()))
            }
            Built::Dict(n) => {
                format!("this dict would take {} more entries ({})", grouped(n as u64), human_bytes(self.bytes()))
            }
        }
    }
}

impl Budget {
    pub(crate) fn new(limit: u64) -> Budget {
        Budget { limit, used: 0 }
    }

    /// Bytes that may still be built.
    pub(crate) fn remaining(&self) -> usize {
        usize::try_from(self.limit - self.used).unwrap_or(usize::MAX)
    }

    /// Counts a value about to be built; the error text when it does not fit.
    #[inline]
    pub(crate) fn charge(&mut self, built: Built) -> Result<(), String> {
        match self.used.checked_add(built.bytes()) {
            Some(used) if used <= self.limit => {
                self.used = used;
                Ok(())
            }
            _ => Err(self.exceeded(&built.describe())),
        }
    }

    /// Refuses what would not fit, without counting it.
    pub(crate) fn fits(&self, built: Built) -> Result<(), String> {
        match self.used.checked_add(built.bytes()) {
            Some(used) if used <= self.limit => Ok(()),
            _ => Err(self.exceeded(&built.describe())),
        }
    }

    #[cold]
    fn exceeded(&self, what: &str) -> String {
        format!(
            "{what}, past the compile's memory budget of {} ({} already built in strings, lists and dicts); a model \
             that needs more can raise it with `[compiler] max-memory` or INMANTA_COMPILER_MAX_MEMORY",
            human_bytes(self.limit),
            human_bytes(self.used)
        )
    }
}

impl Evaluator<'_> {
    /// Counts a value about to be built by the expression at `span`.
    #[inline]
    pub(crate) fn charge(&mut self, built: Built, span: Span) -> EResult<()> {
        self.limits.budget.charge(built).map_err(|m| error(ErrorKind::RuntimeException, m, span, self.m.sources))
    }

    /// Refuses, before a plugin builds it, a result that would not fit what is left (what the
    /// plugin returns is counted then, by [`Evaluator::charge_result`]).
    pub(crate) fn ensure_room(&self, built: Built, span: Span) -> EResult<()> {
        self.limits.budget.fits(built).map_err(|m| error(ErrorKind::RuntimeException, m, span, self.m.sources))
    }

    /// Counts what a plugin returned, when it is a value the plugin built (a string, list or dict
    /// nobody else holds): an argument or an element handed back costs nothing new.
    pub(crate) fn charge_result(&mut self, v: &Value, span: Span) -> EResult<()> {
        match v {
            Value::Str(s) if Rc::strong_count(s) == 1 => self.charge(Built::Str(s.len()), span),
            Value::List(l) if Rc::strong_count(l) == 1 => self.charge(Built::List(l.len()), span),
            Value::Dict(d) if Rc::strong_count(d) == 1 => self.charge(Built::Dict(d.len()), span),
            _ => Ok(()),
        }
    }

    /// Refuses a list or dict whose text would not fit what the budget has left, before it is
    /// rendered into a string: a dict that holds the same dict at each of 30 levels takes 30
    /// entries of memory but has a text of a billion characters.
    pub(crate) fn check_rendering(&self, v: &Value, span: Span) -> EResult<()> {
        if !matches!(v, Value::List(_) | Value::Dict(_)) {
            return Ok(());
        }
        let mut out = self.string_buffer();
        interp_into(v, &|i| self.inst_name(i), &mut out);
        self.refuse_cut(&out, span)
    }

    /// The error for a string whose buffer reached what the budget has left.
    pub(crate) fn refuse_cut(&self, out: &Bounded, span: Span) -> EResult<()> {
        if !out.cut {
            return Ok(());
        }
        let what = format!("this string would be at least {}", human_bytes(out.offered as u64));
        Err(error(ErrorKind::RuntimeException, self.limits.budget.exceeded(&what), span, self.m.sources))
    }

    /// A buffer for a string being built: it stops at what the budget has left (a string counts
    /// twice its length).
    pub(crate) fn string_buffer(&self) -> Bounded {
        Bounded::new(self.limits.budget.remaining() / 2)
    }

    /// The string built in `out` (by the expression at `span`), charged to the budget.
    pub(crate) fn built_string(&mut self, out: Bounded, span: Span) -> EResult<Value> {
        self.refuse_cut(&out, span)?;
        self.charge(Built::Str(out.text.len()), span)?;
        Ok(Value::Str(Rc::from(out.text)))
    }
}

/// A size as people read it: `512 MiB`, `1.2 GiB`, `800 bytes`.
pub(crate) fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} bytes");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    // 1023.99 MiB is shown as 1 GiB, not 1024 MiB
    while value >= 1023.95 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if value.fract() < 0.05 || value >= 100.0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// Parses a size in bytes, with an optional binary unit: `1073741824`, `512M`, `512MiB`, `1G`, `1GiB`.
pub(crate) fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (digits, unit) = (text[..split].parse::<u64>().ok()?, text[split..].trim());
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return None,
    };
    digits.checked_mul(1 << shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_charge_past_the_limit_is_refused_and_not_counted() {
        let mut budget = Budget::new(1000);
        assert!(budget.charge(Built::Str(300)).is_ok());
        let message = budget.charge(Built::Str(300)).expect_err("past the limit");
        assert!(
            message.starts_with(
                "this string would be 300 bytes, past the compile's memory budget of 1000 bytes (600 bytes already built"
            ),
            "{message}"
        );
        assert!(message.contains("`[compiler] max-memory`"), "{message}");
        assert_eq!(budget.remaining(), 400);
        let elements = 400 / ELEMENT_BYTES as usize;
        assert!(budget.charge(Built::List(elements)).is_ok());
        assert_eq!(budget.remaining(), 400 % ELEMENT_BYTES as usize);
        assert!(budget.charge(Built::Str(usize::MAX)).is_err());
    }

    #[test]
    fn sizes_read_and_print_in_binary_units() {
        assert_eq!(parse_size("1073741824"), Some(1 << 30));
        assert_eq!(parse_size("512M"), Some(512 << 20));
        assert_eq!(parse_size(" 1 GiB "), Some(1 << 30));
        assert_eq!(parse_size("2g"), Some(2 << 30));
        assert_eq!(parse_size("1.5G"), None);
        assert_eq!(parse_size("lots"), None);
        assert_eq!(human_bytes(1 << 30), "1 GiB");
        assert_eq!(human_bytes(1_288_490_189), "1.2 GiB");
        assert_eq!(human_bytes(512 << 20), "512 MiB");
        assert_eq!(human_bytes(800), "800 bytes");
    }
}
