//! Byte offsets (the compiler's) to and from LSP positions (line, UTF-16 code unit).

use lsp_types::{Position, Range};

/// The line starts of one text.
#[derive(Debug, Clone, Default)]
pub(crate) struct Lines {
    starts: Vec<usize>,
}

impl Lines {
    pub(crate) fn new(text: &str) -> Lines {
        let mut starts = vec![0];
        starts.extend(text.bytes().enumerate().filter(|(_, b)| *b == b'\n').map(|(i, _)| i + 1));
        Lines { starts }
    }

    pub(crate) fn position(&self, text: &str, offset: usize) -> Position {
        let offset = offset.min(text.len());
        let line = self.starts.partition_point(|s| *s <= offset) - 1;
        let start = self.starts[line];
        let character = text.get(start..offset).map(|s| s.encode_utf16().count()).unwrap_or(offset - start);
        Position { line: line as u32, character: character as u32 }
    }

    pub(crate) fn range(&self, text: &str, (start, end): (usize, usize)) -> Range {
        Range { start: self.position(text, start), end: self.position(text, end) }
    }

    pub(crate) fn offset(&self, text: &str, pos: Position) -> usize {
        let Some(&start) = self.starts.get(pos.line as usize) else { return text.len() };
        let end = self.starts.get(pos.line as usize + 1).copied().unwrap_or(text.len());
        let mut units = 0;
        for (i, c) in text[start..end].char_indices() {
            if units >= pos.character as usize || c == '\n' {
                return start + i;
            }
            units += c.len_utf16();
        }
        end
    }

    /// An LSP range of a 1-based line and column in characters (the compiler's [`compiler::Location`]).
    pub(crate) fn range_of_location(
        &self,
        text: &str,
        line: usize,
        col: usize,
        end_line: usize,
        end_col: usize,
    ) -> Range {
        let at = |line: usize, col: usize| {
            let Some(&start) = self.starts.get(line.saturating_sub(1)) else {
                return self.position(text, text.len());
            };
            let offset = text[start..].char_indices().nth(col.saturating_sub(1)).map(|(i, _)| start + i);
            self.position(text, offset.unwrap_or(text.len()))
        };
        let start = at(line, col);
        let mut end = at(end_line, end_col);
        if end <= start {
            // a point: the rest of the word, so that the editor has something to underline
            let from = self.offset(text, start);
            let len = text[from..].find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(text.len() - from);
            end = self.position(text, from + len.max(1).min(text.len() - from));
        }
        Range { start, end }
    }
}

/// Replaces `range` of `text` by `new` (an incremental change from the editor).
pub(crate) fn apply_change(text: &mut String, range: Range, new: &str) {
    let lines = Lines::new(text);
    let start = lines.offset(text, range.start);
    let end = lines.offset(text, range.end).max(start);
    text.replace_range(start..end, new);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_positions_round_trip() {
        let text = "a = \"é😀\"\nb = 1\n";
        let lines = Lines::new(text);
        let b = text.find('b').unwrap_or_default();
        assert_eq!(lines.position(text, b), Position { line: 1, character: 0 });
        let closing = text.rfind('"').unwrap_or_default();
        let pos = lines.position(text, closing);
        assert_eq!(pos, Position { line: 0, character: 8 });
        assert_eq!(lines.offset(text, pos), closing);
    }

    #[test]
    fn a_change_replaces_its_range() {
        let mut text = "x = 1\ny = 2\n".to_string();
        let r = Range { start: Position { line: 1, character: 4 }, end: Position { line: 1, character: 5 } };
        apply_change(&mut text, r, "30");
        assert_eq!(text, "x = 1\ny = 30\n");
    }
}
