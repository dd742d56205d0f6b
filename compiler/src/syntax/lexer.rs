//! Tokens of the `.cf` language.

use super::Span;

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Tok {
    /// Identifier; class names are identifiers whose first character is upper-case.
    Id(String),
    Int(i64),
    /// An integer literal past `i64` (Inmanta's ints are unbounded).
    BigInt(std::rc::Rc<num_bigint::BigInt>),
    Float(f64),
    /// A normal or multi-line string after escape processing; `raw` marks `r"..."`.
    Str {
        value: String,
        raw: bool,
        multiline: bool,
    },
    /// `f"..."`: the raw text between the quotes.
    FStr(String),
    /// `/.../` after `matching`.
    Regex(String),
    Kw(&'static str),
    Punct(&'static str),
    Eof,
}

#[derive(Clone, Debug)]
pub(crate) struct Token {
    pub tok: Tok,
    pub span: Span,
}

pub(crate) struct LexError {
    pub message: String,
    pub span: Span,
}

pub(crate) struct LexWarning {
    pub message: String,
    pub span: Span,
}

const KEYWORDS: &[&str] = &[
    "typedef",
    "as",
    "entity",
    "extends",
    "end",
    "in",
    "implementation",
    "for",
    "matching",
    "index",
    "implement",
    "using",
    "when",
    "and",
    "or",
    "not",
    "true",
    "false",
    "import",
    "is",
    "defined",
    "dict",
    "null",
    "undef",
    "parents",
    "if",
    "else",
    "elif",
];

const PUNCTS: &[&str] = &[
    "**", "::", "==", "!=", "<=", ">=", "--", "->", "<-", "+=", ":", "[", "]", "(", ")", "=", ",", ".", "{", "}", "?",
    "*", "%", "<", ">", "+", "-", "/",
];

pub(crate) fn lex(file: u32, src: &str) -> Result<(Vec<Token>, Vec<LexWarning>), LexError> {
    // about one token per 4 bytes of a model: sized once instead of doubled (and copied) ~20 times
    let out = Vec::with_capacity(src.len() / 4 + 16);
    let mut lx = Lexer { file, src, bytes: src.as_bytes(), pos: 0, out, warnings: Vec::new() };
    lx.run()?;
    Ok((lx.out, lx.warnings))
}

struct Lexer<'a> {
    file: u32,
    src: &'a str,
    bytes: &'a [u8],
    pos: usize,
    out: Vec<Token>,
    warnings: Vec<LexWarning>,
}

fn is_id_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn is_id_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
}

impl Lexer<'_> {
    fn span(&self, start: usize) -> Span {
        Span::new(self.file, start, self.pos)
    }

    fn err<T>(&self, start: usize, message: impl Into<String>) -> Result<T, LexError> {
        Err(LexError { message: message.into(), span: Span::new(self.file, start, self.pos.max(start + 1)) })
    }

    fn peek(&self, off: usize) -> u8 {
        self.bytes.get(self.pos + off).copied().unwrap_or(0)
    }

    fn push(&mut self, tok: Tok, start: usize) {
        let span = self.span(start);
        self.out.push(Token { tok, span });
    }

    fn prev_is_value(&self) -> bool {
        match self.out.last().map(|t| &t.tok) {
            Some(Tok::Id(_) | Tok::Int(_) | Tok::BigInt(_) | Tok::Float(_) | Tok::Str { .. } | Tok::FStr(_)) => true,
            Some(Tok::Punct(p)) => matches!(*p, ")" | "]" | "}"),
            Some(Tok::Kw(k)) => matches!(*k, "true" | "false" | "null"),
            _ => false,
        }
    }

    fn run(&mut self) -> Result<(), LexError> {
        loop {
            // whitespace and comments
            while self.pos < self.bytes.len() {
                let c = self.bytes[self.pos];
                if c == b' ' || c == b'\t' || c == b'\n' || c == b'\r' {
                    self.pos += 1;
                } else if c == b'#' {
                    while self.pos < self.bytes.len() && self.bytes[self.pos] != b'\n' {
                        self.pos += 1;
                    }
                } else {
                    break;
                }
            }
            let start = self.pos;
            if self.pos >= self.bytes.len() {
                self.push(Tok::Eof, start);
                return Ok(());
            }
            let c = self.bytes[self.pos];
            if (c == b'r' || c == b'f') && (self.peek(1) == b'"' || self.peek(1) == b'\'') {
                self.pos += 1;
                let q = self.bytes[self.pos];
                // Inmanta's prefixed strings are one-line: `f"""a"""` is `f""`, then `"a"`, then `""`
                let (text, multiline) = if self.peek(1) == q && self.peek(2) == q {
                    self.pos += 2;
                    (String::new(), false)
                } else {
                    // an unterminated prefixed string is, to Inmanta's lexer, the prefix as a name
                    // followed by an illegal quote: the error stands at the quote
                    self.string_body(start).map_err(|_| LexError {
                        message: format!("Illegal character '{}'", q as char),
                        span: Span::new(self.file, start + 1, start + 2),
                    })?
                };
                if c == b'r' {
                    self.push(Tok::Str { value: text, raw: true, multiline }, start);
                } else {
                    self.push(Tok::FStr(text), start);
                }
                continue;
            }
            if is_id_start(c) {
                while self.pos < self.bytes.len() && is_id_char(self.bytes[self.pos]) {
                    self.pos += 1;
                }
                let word = &self.src[start..self.pos];
                if let Some(kw) = KEYWORDS.iter().find(|k| **k == word) {
                    self.push(Tok::Kw(kw), start);
                    if *kw == "matching" {
                        self.maybe_regex()?;
                    }
                } else {
                    self.push(Tok::Id(word.to_string()), start);
                }
                continue;
            }
            let negative_number =
                c == b'-' && (self.peek(1).is_ascii_digit() || (self.peek(1) == b'.' && self.peek(2).is_ascii_digit()));
            if c.is_ascii_digit()
                || (c == b'.' && self.peek(1).is_ascii_digit())
                || (negative_number && !self.prev_is_value())
            {
                self.number(start)?;
                continue;
            }
            if c == b'"' || c == b'\'' {
                let (text, multiline) = self.string_body(start)?;
                let value = if text.contains('\\') { self.unescape(&text, start) } else { text };
                self.push(Tok::Str { value, raw: false, multiline }, start);
                continue;
            }
            if let Some(p) = PUNCTS.iter().find(|p| p.as_bytes()[0] == c && self.src[self.pos..].starts_with(**p)) {
                self.pos += p.len();
                self.push(Tok::Punct(p), start);
                continue;
            }
            let ch = self.src[self.pos..].chars().next().unwrap_or('?');
            self.pos += ch.len_utf8();
            return self.err(start, format!("Illegal character '{ch}'"));
        }
    }

    fn number(&mut self, start: usize) -> Result<(), LexError> {
        if self.bytes[self.pos] == b'-' {
            self.pos += 1;
        }
        while self.peek(0).is_ascii_digit() {
            self.pos += 1;
        }
        let mut float = false;
        if self.peek(0) == b'.' && self.peek(1).is_ascii_digit() {
            float = true;
            self.pos += 1;
            while self.peek(0).is_ascii_digit() {
                self.pos += 1;
            }
        }
        let text = &self.src[start..self.pos];
        if float {
            let v: f64 =
                text.parse().map_err(|_| LexError { message: "invalid float".into(), span: self.span(start) })?;
            self.push(Tok::Float(v), start);
        } else {
            let tok = match text.parse::<i64>() {
                Ok(v) => Tok::Int(v),
                Err(_) => match text.parse::<num_bigint::BigInt>() {
                    Ok(v) => Tok::BigInt(std::rc::Rc::new(v)),
                    Err(_) => return self.err(start, format!("invalid integer literal {text}")),
                },
            };
            self.push(tok, start);
        }
        Ok(())
    }

    /// Reads a quoted string starting at the quote; returns the text between the quotes.
    fn string_body(&mut self, start: usize) -> Result<(String, bool), LexError> {
        let q = self.bytes[self.pos];
        if q == b'"' && self.peek(1) == b'"' && self.peek(2) == b'"' {
            // multi-line: 3 to 5 quotes open; closing is the first run of >= 3 quotes
            let mut n = 0;
            while self.peek(0) == b'"' && n < 5 {
                self.pos += 1;
                n += 1;
            }
            let body_start = self.pos - (n - 3);
            loop {
                if self.pos >= self.bytes.len() {
                    return self.err(start, "Unterminated multi-line string");
                }
                if self.bytes[self.pos] == b'\\' {
                    self.pos += 2;
                    continue;
                }
                if self.bytes[self.pos] == b'"' && self.peek(1) == b'"' && self.peek(2) == b'"' {
                    let body_end = self.pos;
                    let mut m = 0;
                    while self.peek(0) == b'"' && m < 5 {
                        self.pos += 1;
                        m += 1;
                    }
                    let body_end = body_end + (m - 3);
                    let text = self.src.get(body_start..body_end).unwrap_or("").to_string();
                    return Ok((text, true));
                }
                self.pos += 1;
            }
        }
        self.pos += 1;
        let body_start = self.pos;
        loop {
            if self.pos >= self.bytes.len() || self.bytes[self.pos] == b'\n' {
                return self.err(start, "Unterminated string literal");
            }
            let c = self.bytes[self.pos];
            if c == b'\\' {
                self.pos += 2;
                continue;
            }
            if c == q {
                let text = self.src[body_start..self.pos].to_string();
                self.pos += 1;
                return Ok((text, false));
            }
            self.pos += 1;
        }
    }

    fn unescape(&mut self, text: &str, start: usize) -> String {
        if !text.contains('\\') {
            return text.to_string();
        }
        let mut out = String::with_capacity(text.len());
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '\\' {
                out.push(c);
                continue;
            }
            match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('r') => out.push('\r'),
                Some('\\') => out.push('\\'),
                Some('\'') => out.push('\''),
                Some('"') => out.push('"'),
                Some('0') => out.push('\0'),
                Some('a') => out.push('\x07'),
                Some('b') => out.push('\x08'),
                Some('f') => out.push('\x0c'),
                Some('v') => out.push('\x0b'),
                Some('\n') => {}
                Some(e @ ('x' | 'u' | 'U')) => {
                    let n = match e {
                        'x' => 2,
                        'u' => 4,
                        _ => 8,
                    };
                    let hex: String = (0..n).filter_map(|_| chars.next()).collect();
                    match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                        Some(ch) if hex.len() == n => out.push(ch),
                        _ => {
                            out.push('\\');
                            out.push(e);
                            out.push_str(&hex);
                        }
                    }
                }
                Some(other) => {
                    self.warnings.push(LexWarning {
                        message: format!("Invalid escape sequence \\{other} in string"),
                        span: Span::new(self.file, start, self.pos),
                    });
                    out.push('\\');
                    out.push(other);
                }
                None => out.push('\\'),
            }
        }
        out
    }

    fn maybe_regex(&mut self) -> Result<(), LexError> {
        let mut p = self.pos;
        while p < self.bytes.len() && (self.bytes[p] == b' ' || self.bytes[p] == b'\t') {
            p += 1;
        }
        if self.bytes.get(p) != Some(&b'/') {
            return Ok(());
        }
        self.pos = p + 1;
        let start = p;
        let body_start = self.pos;
        loop {
            if self.pos >= self.bytes.len() || self.bytes[self.pos] == b'\n' {
                return self.err(start, "Unterminated regex");
            }
            match self.bytes[self.pos] {
                b'\\' => self.pos += 2,
                b'/' => break,
                _ => self.pos += 1,
            }
        }
        let body = self.src[body_start..self.pos].replace("\\/", "/");
        self.pos += 1;
        if let Err(e) = fancy_regex::Regex::new(&body) {
            return Err(LexError {
                message: format!("Regex error in {body}: {}", e.to_string().lines().last().unwrap_or("invalid")),
                span: self.span(start),
            });
        }
        self.push(Tok::Regex(body), start);
        Ok(())
    }
}
