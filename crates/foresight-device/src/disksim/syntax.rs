//! The syntax of DiskSim 4.0 parameter files (`.diskspecs`, `.model`, `.layout`), read into a tree.
//!
//! DiskSim's parameter language (DiskSim 4.0 User's Guide, section 3, "The parameter file") is a
//! sequence of blocks. A block is a type name, an optional instance name and a brace-delimited list
//! of `Key = value` entries separated by commas; a key is any run of words (`Rotation speed (in
//! rpms)`). A value is one word (a number, an identifier such as `extracted`, or a file name such as
//! `atlas10k.seek`), `source FILE` (the value is the block that `FILE` holds), a nested block
//! (`dm_mech_g1 { ... }`), or a bracketed list of values. `#` starts a comment that runs to the end of
//! the line. This module only builds the tree and records the line of every value; what the keys mean
//! is the importer's business ([`super`]).
//!
//! The reader is written for hostile input: it never panics, never recurses deeper than
//! [`NESTING_MAX`] levels, and reports the first problem as a [`SyntaxError`] with its 1-based line.
//! Commas between entries and list items are optional, as DiskSim's own reader tolerates.

use std::fmt;

use foresight_core::excerpt;

/// Deepest nesting of blocks and lists accepted (the shipped files nest at most 4 deep).
pub const NESTING_MAX: usize = 32;

/// A syntax problem: the 1-based line and what was expected there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxError {
    /// 1-based line number (0 when the problem is the end of the text).
    pub line: u32,
    /// What was wrong and what was expected.
    pub message: String,
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// A value on the right of `=` or in a list.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// One word: a number, an identifier or a file name.
    Word {
        /// The text.
        text: String,
        /// Its line.
        line: u32,
    },
    /// `source FILE`: the block held by another file, not yet read.
    Source {
        /// The file name as written (relative to the `.diskspecs` file).
        file: String,
        /// The line of `source`.
        line: u32,
    },
    /// A nested block.
    Block(Block),
    /// A bracketed list.
    List {
        /// The items.
        items: Vec<Value>,
        /// The line of `[`.
        line: u32,
    },
}

impl Value {
    /// The line the value starts on.
    pub fn line(&self) -> u32 {
        match self {
            Value::Word { line, .. } | Value::Source { line, .. } | Value::List { line, .. } => {
                *line
            }
            Value::Block(b) => b.line,
        }
    }

    /// A short description of the value's shape, for error messages.
    pub fn shape(&self) -> String {
        match self {
            Value::Word { text, .. } => format!("`{}`", excerpt(text)),
            Value::Source { file, .. } => format!("`source {}`", excerpt(file)),
            Value::Block(b) => format!("a `{}` block", excerpt(&b.kind)),
            Value::List { .. } => "a list".to_string(),
        }
    }
}

/// A block: `kind [name] { key = value, ... }`.
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    /// The block's type, e.g. `disksim_disk`, `dm_mech_g1`, `dm_layout_g1_zone`.
    pub kind: String,
    /// The instance name, if one follows the type (top-level blocks).
    pub name: Option<String>,
    /// The entries in file order.
    pub entries: Vec<Entry>,
    /// The line of the type name.
    pub line: u32,
}

impl Block {
    /// The first entry whose key is `key` (compared with runs of blanks collapsed).
    pub fn get(&self, key: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.key == key)
    }
}

/// One `key = value` entry.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The key, its words joined by single spaces.
    pub key: String,
    /// The value.
    pub value: Value,
    /// The line of the key's first word.
    pub line: u32,
}

/// What a file holds at its top level.
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    /// A block.
    Block(Block),
    /// `source FILE` at the top level.
    Source {
        /// The file name.
        file: String,
        /// Its line.
        line: u32,
    },
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Word(String),
    LBrace,
    RBrace,
    LBracket,
    RBracket,
    Eq,
    Comma,
}

fn describe(t: Option<&(Tok, u32)>) -> String {
    match t {
        None => "the end of the file".to_string(),
        Some((Tok::Word(w), _)) => format!("`{}`", excerpt(w)),
        Some((Tok::LBrace, _)) => "`{`".to_string(),
        Some((Tok::RBrace, _)) => "`}`".to_string(),
        Some((Tok::LBracket, _)) => "`[`".to_string(),
        Some((Tok::RBracket, _)) => "`]`".to_string(),
        Some((Tok::Eq, _)) => "`=`".to_string(),
        Some((Tok::Comma, _)) => "`,`".to_string(),
    }
}

fn tokenize(text: &str) -> Vec<(Tok, u32)> {
    let mut toks = Vec::new();
    let mut line: u32 = 1;
    let mut word = String::new();
    let mut word_line = 1;
    let mut in_comment = false;
    for c in text.chars() {
        if in_comment {
            if c == '\n' {
                in_comment = false;
                line = line.saturating_add(1);
            }
            continue;
        }
        let punct = match c {
            '{' => Some(Tok::LBrace),
            '}' => Some(Tok::RBrace),
            '[' => Some(Tok::LBracket),
            ']' => Some(Tok::RBracket),
            '=' => Some(Tok::Eq),
            ',' => Some(Tok::Comma),
            _ => None,
        };
        if punct.is_some() || c.is_whitespace() || c == '#' {
            if !word.is_empty() {
                toks.push((Tok::Word(std::mem::take(&mut word)), word_line));
            }
            if let Some(p) = punct {
                toks.push((p, line));
            }
            if c == '#' {
                in_comment = true;
            }
            if c == '\n' {
                line = line.saturating_add(1);
            }
        } else {
            if word.is_empty() {
                word_line = line;
            }
            word.push(c);
        }
    }
    if !word.is_empty() {
        toks.push((Tok::Word(word), word_line));
    }
    toks
}

struct Parser {
    toks: Vec<(Tok, u32)>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> Option<&(Tok, u32)> {
        self.toks.get(self.pos)
    }

    fn peek_at(&self, k: usize) -> Option<&(Tok, u32)> {
        self.toks.get(self.pos + k)
    }

    fn line(&self) -> u32 {
        self.peek()
            .or_else(|| self.toks.last())
            .map_or(0, |(_, l)| *l)
    }

    fn err<T>(&self, message: String) -> Result<T, SyntaxError> {
        Err(SyntaxError {
            line: self.line(),
            message,
        })
    }

    fn bump(&mut self) -> Option<(Tok, u32)> {
        let t = self.toks.get(self.pos).cloned();
        if t.is_some() {
            self.pos += 1;
        }
        t
    }

    fn eat(&mut self, tok: &Tok) -> bool {
        if self.peek().is_some_and(|(t, _)| t == tok) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn items(&mut self) -> Result<Vec<Item>, SyntaxError> {
        let mut items = Vec::new();
        while let Some((tok, line)) = self.peek().cloned() {
            match tok {
                Tok::Comma => {
                    self.pos += 1;
                }
                Tok::Word(w) if w == "source" => {
                    self.pos += 1;
                    match self.bump() {
                        Some((Tok::Word(file), _)) => items.push(Item::Source { file, line }),
                        other => {
                            return Err(SyntaxError {
                                line,
                                message: format!(
                                    "`source` must be followed by a file name, found {}",
                                    describe(other.as_ref())
                                ),
                            })
                        }
                    }
                }
                Tok::Word(kind) => {
                    self.pos += 1;
                    // Optional instance name(s) before `{`.
                    let mut name_words: Vec<String> = Vec::new();
                    loop {
                        match self.peek() {
                            Some((Tok::Word(w), _)) => {
                                name_words.push(w.clone());
                                self.pos += 1;
                            }
                            Some((Tok::LBrace, _)) => break,
                            other => {
                                return Err(SyntaxError {
                                    line: other.map_or(line, |(_, l)| *l),
                                    message: format!(
                                        "expected `{{` to open the `{}` block, found {}; a file \
                                         holds blocks such as `disksim_disk NAME {{ ... }}`",
                                        excerpt(&kind),
                                        describe(other)
                                    ),
                                })
                            }
                        }
                    }
                    let name = (!name_words.is_empty()).then(|| name_words.join(" "));
                    let block = self.block_body(kind, name, line, 1)?;
                    items.push(Item::Block(block));
                }
                _ => {
                    return self.err(format!(
                        "expected a block such as `disksim_disk NAME {{ ... }}` or `source FILE`, \
                         found {}",
                        describe(self.peek())
                    ))
                }
            }
        }
        Ok(items)
    }

    /// Parses `{ entries }`; the caller has consumed the type and name.
    fn block_body(
        &mut self,
        kind: String,
        name: Option<String>,
        line: u32,
        depth: usize,
    ) -> Result<Block, SyntaxError> {
        if depth > NESTING_MAX {
            return self.err(format!(
                "blocks and lists nest deeper than {NESTING_MAX} levels"
            ));
        }
        if !self.eat(&Tok::LBrace) {
            return self.err(format!(
                "expected `{{` after `{}`, found {}",
                excerpt(&kind),
                describe(self.peek())
            ));
        }
        let mut entries = Vec::new();
        loop {
            match self.peek().cloned() {
                None => {
                    return Err(SyntaxError {
                        line,
                        message: format!(
                            "the `{}` block opened here is never closed with `}}`",
                            excerpt(&kind)
                        ),
                    })
                }
                Some((Tok::RBrace, _)) => {
                    self.pos += 1;
                    break;
                }
                Some((Tok::Comma, _)) => {
                    self.pos += 1;
                }
                Some((Tok::Word(_), key_line)) => {
                    let mut words: Vec<String> = Vec::new();
                    while let Some((Tok::Word(w), _)) = self.peek() {
                        words.push(w.clone());
                        self.pos += 1;
                    }
                    if !self.eat(&Tok::Eq) {
                        return Err(SyntaxError {
                            line: key_line,
                            message: format!(
                                "expected `=` after the key `{}`, found {}",
                                excerpt(&words.join(" ")),
                                describe(self.peek())
                            ),
                        });
                    }
                    let value = self.value(depth)?;
                    entries.push(Entry {
                        key: words.join(" "),
                        value,
                        line: key_line,
                    });
                }
                Some(_) => {
                    return self.err(format!(
                        "expected a `key = value` entry or `}}` in the `{}` block, found {}",
                        excerpt(&kind),
                        describe(self.peek())
                    ))
                }
            }
        }
        Ok(Block {
            kind,
            name,
            entries,
            line,
        })
    }

    fn value(&mut self, depth: usize) -> Result<Value, SyntaxError> {
        match self.peek().cloned() {
            Some((Tok::Word(w), line)) => {
                if w == "source" {
                    if let Some((Tok::Word(file), _)) = self.peek_at(1).cloned() {
                        self.pos += 2;
                        return Ok(Value::Source { file, line });
                    }
                }
                if matches!(self.peek_at(1), Some((Tok::LBrace, _))) {
                    self.pos += 1;
                    return Ok(Value::Block(self.block_body(w, None, line, depth + 1)?));
                }
                self.pos += 1;
                Ok(Value::Word { text: w, line })
            }
            Some((Tok::LBracket, line)) => {
                self.pos += 1;
                if depth + 1 > NESTING_MAX {
                    return self.err(format!(
                        "blocks and lists nest deeper than {NESTING_MAX} levels"
                    ));
                }
                let mut items = Vec::new();
                loop {
                    match self.peek() {
                        None => {
                            return Err(SyntaxError {
                                line,
                                message: "the list opened here with `[` is never closed with `]`"
                                    .to_string(),
                            })
                        }
                        Some((Tok::RBracket, _)) => {
                            self.pos += 1;
                            break;
                        }
                        Some((Tok::Comma, _)) => {
                            self.pos += 1;
                        }
                        Some(_) => items.push(self.value(depth + 1)?),
                    }
                }
                Ok(Value::List { items, line })
            }
            other => self.err(format!(
                "expected a value (a number, a name, `source FILE`, a block or a `[` list), found {}",
                describe(other.as_ref())
            )),
        }
    }
}

/// Parses the text of one parameter file into its top-level items.
pub fn parse(text: &str) -> Result<Vec<Item>, SyntaxError> {
    let mut p = Parser {
        toks: tokenize(text),
        pos: 0,
    };
    p.items()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_keys_lists_and_comments() {
        let text = "# header\ndisksim_disk D1 {\n  Model = source x.model,\n  Rotation speed (in rpms) = 10025, # c\n  Mech = dm_mech_g1 { A = 1 },\n  L = [ 1, 2.5, TRACK, dm_z { B = 3 }, [ 4 ] ],\n  Empty = [ ]\n}\n";
        let items = parse(text).unwrap();
        assert_eq!(items.len(), 1);
        let Item::Block(b) = &items[0] else { panic!() };
        assert_eq!(b.kind, "disksim_disk");
        assert_eq!(b.name.as_deref(), Some("D1"));
        assert_eq!(b.line, 2);
        assert_eq!(b.entries.len(), 5);
        assert!(
            matches!(&b.get("Model").unwrap().value, Value::Source { file, line: 3 } if file == "x.model")
        );
        let rpm = b.get("Rotation speed (in rpms)").unwrap();
        assert_eq!(rpm.line, 4);
        assert!(matches!(&rpm.value, Value::Word { text, .. } if text == "10025"));
        let Value::Block(m) = &b.get("Mech").unwrap().value else {
            panic!()
        };
        assert_eq!(m.kind, "dm_mech_g1");
        let Value::List { items, .. } = &b.get("L").unwrap().value else {
            panic!()
        };
        assert_eq!(items.len(), 5);
        assert!(matches!(&items[3], Value::Block(z) if z.kind == "dm_z"));
        assert!(
            matches!(&b.get("Empty").unwrap().value, Value::List { items, .. } if items.is_empty())
        );
    }

    #[test]
    fn errors_give_the_line() {
        let e = parse("disksim_disk D {\n  A = 1,\n  B 2\n}").unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        assert!(e.message.contains("`=`"), "{e}");
        let e = parse("d {\n A = [ 1, 2\n").unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        assert!(e.message.contains("never closed"), "{e}");
        let e = parse("d {\n A = 1\n").unwrap_err();
        assert_eq!(e.line, 1, "{e}");
        let e = parse("= 3").unwrap_err();
        assert!(e.message.contains("expected a block"), "{e}");
        let deep = format!("d {{ A = {} }}", "[".repeat(100));
        assert!(parse(&deep).unwrap_err().message.contains("nest"));
    }
}
