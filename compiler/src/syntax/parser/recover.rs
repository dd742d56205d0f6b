//! The parser's recovery mode, for editors: a statement that does not parse is reported and
//! skipped, and parsing goes on at the next statement, so that one half-typed line does not hide
//! the errors (and the definitions) of the rest of the file. A normal compile never uses it:
//! [`super::parse`] stops at the first error with Inmanta's message and location.
//!
//! Statements are found by layout: a top-level statement starts at the first column of a line
//! (the body of an entity, implementation, `for` or `if` is indented; its `end` may stand at the
//! first column). A statement is parsed within its lines first; when that fails it is parsed
//! again without the limit, and kept if it then ends where a new statement begins (a list or call
//! continued at the first column of the next lines).

use super::*;

/// What the recovery mode makes of a file.
pub(crate) struct Recovered {
    /// Every statement that parsed.
    pub file: File,
    /// Every error, in source order: the ones a normal parse stops at and the ones it reports
    /// while going on (a hyphen in a name).
    pub errors: Vec<ParseError>,
    /// Byte ranges that are in no statement of `file`: from the start of a statement that did
    /// not parse to where parsing went on.
    pub skipped: Vec<(usize, usize)>,
}

/// Lexer errors blanked out before giving up on a file.
const MAX_LEX_RETRIES: usize = 64;

pub(crate) fn parse_recovering(file: u32, src: &str, next_id: &mut u32) -> Recovered {
    let mut errors = Vec::new();
    let mut skipped = Vec::new();
    let Some((text, tokens)) = lex_recovering(file, src, &mut errors, &mut skipped) else {
        return Recovered { file: File::default(), errors, skipped };
    };
    let boundaries = statement_starts(&text, &tokens);
    let eof = tokens.len() - 1;
    let mut f = File::default();
    let mut i = 0;
    if let Tok::Str { value, multiline: true, raw: false } = &tokens[0].tok {
        f.doc = Some(value.clone());
        i = 1;
    }
    while i < eof {
        let end = boundaries.iter().copied().find(|b| *b > i).unwrap_or(eof);
        let mut segment = tokens[i..end].to_vec();
        let last = segment.last().map(|t| t.span).unwrap_or(tokens[i].span);
        segment.push(Token { tok: Tok::Eof, span: Span { start: last.end, ..last } });
        let mut p = Parser { toks: segment, pos: 0, depth: 0, next_id: &mut *next_id, errors: Vec::new(), file };
        let mut resume = end;
        while !matches!(p.peek(), Tok::Eof) {
            let at = p.pos;
            match p.top() {
                Ok(item) => f.items.push(item),
                Err(mut e) => {
                    errors.append(&mut p.errors);
                    let from = i + at;
                    let mut whole = Parser {
                        toks: tokens.clone(),
                        pos: from,
                        depth: 0,
                        next_id: &mut *p.next_id,
                        errors: Vec::new(),
                        file,
                    };
                    match whole.top() {
                        Ok(item) if whole.pos == eof || boundaries.binary_search(&whole.pos).is_ok() => {
                            f.items.push(item);
                            errors.append(&mut whole.errors);
                            resume = whole.pos;
                        }
                        _ => {
                            if e.message.contains("unexpected end of file") && end < eof {
                                e.message = e.message.replace("unexpected end of file", "unexpected end of statement");
                            }
                            errors.push(e);
                            skipped.push((tokens[from].span.start as usize, last.end as usize));
                        }
                    }
                    break;
                }
            }
        }
        errors.append(&mut p.errors);
        i = resume;
    }
    errors.sort_by_key(|e| (e.span.start, e.span.end));
    skipped.sort_unstable();
    Recovered { file: f, errors, skipped }
}

type Lexed = (String, Vec<Token>);

/// Lexes `src`; where the lexer fails (an unterminated string), the rest of that line is blanked
/// (byte offsets stay those of `src`) and lexing starts again.
fn lex_recovering(
    file: u32,
    src: &str,
    errors: &mut Vec<ParseError>,
    skipped: &mut Vec<(usize, usize)>,
) -> Option<Lexed> {
    let mut text = src.to_string();
    for _ in 0..MAX_LEX_RETRIES {
        match lex(file, &text) {
            Ok((tokens, _)) => return Some((text, tokens)),
            Err(e) => {
                errors.push(ParseError { kind: ErrorKind::ParserException, message: e.message, span: e.span });
                let at = (e.span.start as usize).min(text.len());
                let line_start = text[..at].rfind('\n').map(|n| n + 1).unwrap_or(0);
                let line_end = text[at..].find('\n').map(|n| at + n).unwrap_or(text.len());
                if text[line_start..line_end].trim().is_empty() {
                    return None;
                }
                // every byte of the line becomes a space: still valid UTF-8, same offsets
                let blank: String = " ".repeat(line_end - line_start);
                text.replace_range(line_start..line_end, &blank);
                skipped.push((line_start, line_end));
            }
        }
    }
    None
}

/// Indexes of the tokens that start a top-level statement: at the first column of a line, and
/// not a token that only continues one.
fn statement_starts(text: &str, tokens: &[Token]) -> Vec<usize> {
    let bytes = text.as_bytes();
    tokens
        .iter()
        .enumerate()
        .filter(|(_, t)| {
            let start = t.span.start as usize;
            let first_column = start == 0 || bytes.get(start - 1) == Some(&b'\n');
            let continues = matches!(
                t.tok,
                Tok::Eof
                    | Tok::Kw("end" | "else" | "elif" | "and" | "or" | "in" | "not" | "when" | "using")
                    | Tok::Punct(")" | "]" | "}" | "," | "." | ":" | "=" | "+=" | "?" | "::")
            );
            first_column && !continues
        })
        .map(|(i, _)| i)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recover(src: &str) -> Recovered {
        parse_recovering(0, src, &mut 0)
    }

    fn lines(src: &str, r: &Recovered) -> Vec<usize> {
        r.errors.iter().map(|e| src[..e.span.start as usize].matches('\n').count() + 1).collect()
    }

    #[test]
    fn a_half_typed_line_does_not_hide_the_next_errors() {
        let src = "x = \ny = 1\nentity A:\n  string a\nend\nz = [1,\nw = 3\nimplement A using\n";
        let r = recover(src);
        assert_eq!(lines(src, &r), vec![1, 6, 8], "{:?}", r.errors.iter().map(|e| &e.message).collect::<Vec<_>>());
        // the statements around the broken ones are kept
        let kept: Vec<&str> = r
            .file
            .items
            .iter()
            .map(|t| match t {
                Top::Stmt(Stmt::Assign { target, .. }) => match &target.kind {
                    ExprKind::Var(n) => n.as_str(),
                    _ => "?",
                },
                Top::Entity(e) => e.name.name.as_str(),
                _ => "?",
            })
            .collect();
        assert_eq!(kept, ["y", "A", "w"]);
        assert!(r.errors[0].message.contains("end of statement"), "{}", r.errors[0].message);
    }

    #[test]
    fn a_statement_continued_at_the_first_column_is_kept() {
        let src = "l = [\n1,\n2]\nm = std::count(\nl)\n";
        let r = recover(src);
        assert!(r.errors.is_empty(), "{:?}", r.errors.iter().map(|e| &e.message).collect::<Vec<_>>());
        assert_eq!(r.file.items.len(), 2);
    }

    #[test]
    fn an_unterminated_string_blanks_its_line_only() {
        let src = "a = \"abc\nb = 1 +\nc = 2\n";
        let r = recover(src);
        assert_eq!(lines(src, &r), vec![1, 2]);
        assert_eq!(r.file.items.len(), 1);
        assert_eq!(r.skipped.len(), 2);
    }

    #[test]
    fn a_file_that_parses_gives_what_the_normal_parse_gives() {
        let src =
            "\"\"\"doc\"\"\"\nimport std\nentity A:\n string a = \"x\"\nend\nimplement A using std::none\na = A()\n";
        let r = recover(src);
        let normal = parse(0, src, &mut 0).unwrap_or_else(|e| panic!("{}", e.message));
        assert!(r.errors.is_empty());
        assert_eq!(format!("{:?}", r.file), format!("{:?}", normal.file));
    }
}
