//! Syntax of the `.cf` language: source map, lexer, abstract syntax tree and parser.
//!
//! The parser knows nothing of evaluation: it turns text into [`ast::File`] with a [`Span`] on
//! every node, or a list of parse errors.

pub(crate) mod ast;
pub(crate) mod lexer;
pub mod outline;
pub(crate) mod parser;

use std::path::PathBuf;

/// A byte range in one source file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Span {
    pub file: u32,
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub(crate) fn new(file: u32, start: usize, end: usize) -> Span {
        Span { file, start: start as u32, end: end as u32 }
    }

    pub(crate) fn to(self, other: Span) -> Span {
        Span { file: self.file, start: self.start.min(other.start), end: self.end.max(other.end) }
    }
}

/// One loaded source file.
pub(crate) struct SourceFile {
    pub path: PathBuf,
    pub text: String,
    line_starts: Vec<usize>,
}

/// Every file read during a compile, addressed by the `file` of a [`Span`].
#[derive(Default)]
pub(crate) struct SourceMap {
    files: Vec<SourceFile>,
}

/// A resolved position: 1-based line and column (in characters).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    pub file: String,
    pub line: usize,
    pub col: usize,
    pub end_line: usize,
    pub end_col: usize,
    /// The text of the first line of the span, for rendering.
    pub source_line: String,
}

impl SourceMap {
    pub(crate) fn add(&mut self, path: PathBuf, text: String) -> u32 {
        let mut line_starts = vec![0];
        for (i, b) in text.bytes().enumerate() {
            if b == b'\n' {
                line_starts.push(i + 1);
            }
        }
        self.files.push(SourceFile { path, text, line_starts });
        (self.files.len() - 1) as u32
    }

    pub(crate) fn get(&self, file: u32) -> &SourceFile {
        &self.files[file as usize]
    }

    fn line_col(&self, file: &SourceFile, offset: usize) -> (usize, usize) {
        let offset = offset.min(file.text.len());
        let line = match file.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let start = file.line_starts[line];
        let col = file.text.get(start..offset).map(|s| s.chars().count()).unwrap_or(offset - start);
        (line + 1, col + 1)
    }

    pub(crate) fn location(&self, span: Span) -> Option<Location> {
        let file = self.files.get(span.file as usize)?;
        if span.start as usize >= file.text.len() && !file.text.is_empty() {
            // a syntax error at the end of the file: Inmanta's parser places it on the line after
            // the last one, column 2 (its lexer has counted one more line by then)
            let line = file.line_starts.len() + 1;
            let path = file.path.display().to_string();
            return Some(Location { file: path, line, col: 2, end_line: line, end_col: 2, source_line: String::new() });
        }
        let (line, col) = self.line_col(file, span.start as usize);
        let (end_line, end_col) = self.line_col(file, span.end as usize);
        let ls = file.line_starts[line - 1];
        let le = file.line_starts.get(line).map(|e| e - 1).unwrap_or(file.text.len());
        let source_line = file.text.get(ls..le).unwrap_or("").trim_end_matches('\r').to_string();
        Some(Location { file: file.path.display().to_string(), line, col, end_line, end_col, source_line })
    }
}
