//! The `hinted` workload's access list: generated from the seed, or read from a trace file.
//!
//! A hinted trace is plain text with one block number (a whole number, counted in
//! `workload.block` units from the start of the data) per line, in the order the application reads
//! them. Blank lines and text after `#` are ignored. Each block may appear once: the informed
//! policies track a block's copies by its number, and the paper's traces are replayed as one
//! distinct block per read (section 4.5.3). Errors name the file and the 1-based line. A file is
//! parsed as it is read, a line at a time, so that one longer than [`MAX_READS`] block numbers (a
//! pipe that never ends) is refused at the first line past it rather than read whole first.

use foresight_core::{excerpt, Rng};

use super::config::{AccessOrder, HintedWorkload};
use crate::trace::{for_each_line, LineError, TraceError};

/// The most reads a hinted workload may hold (`workload.reads` or a trace's lines): 4 Mi, as many
/// as the informed policies keep live, since the driver discloses the whole list up front.
pub const MAX_READS: usize = 1 << 22;

// The informed policies drop the hinted ranges past their live bound; the driver hints one range
// a read, all of them before the first read, so no access list the simulator accepts loses one.
const _: () = assert!(
    MAX_READS <= foresight_policy::informed::HINTED_RANGES_LIVE_MAX,
    "an access list the simulator accepts would overflow the informed policies' list"
);

fn err(file: &str, line: usize, message: impl Into<String>) -> TraceError {
    TraceError {
        file: file.to_string(),
        line,
        message: message.into(),
    }
}

/// Parses a hinted trace's text; `file` names it in errors.
pub fn parse_trace(text: &str, file: &str) -> Result<Vec<u64>, TraceError> {
    let mut parser = Parser::new(file);
    for (i, raw) in text.lines().enumerate() {
        parser.line(i + 1, raw)?;
    }
    parser.finish()
}

/// A hinted trace's blocks as its lines come in.
struct Parser<'a> {
    file: &'a str,
    /// The most block numbers taken: [`MAX_READS`], lower in tests.
    reads_max: usize,
    blocks: Vec<u64>,
    /// The line each block was read on.
    seen: rustc_hash::FxHashMap<u64, usize>,
}

impl<'a> Parser<'a> {
    fn new(file: &'a str) -> Parser<'a> {
        Parser {
            file,
            reads_max: MAX_READS,
            blocks: Vec::new(),
            seen: rustc_hash::FxHashMap::default(),
        }
    }

    /// Line `line` of the trace, without its line end.
    fn line(&mut self, line: usize, raw: &str) -> Result<(), TraceError> {
        let file = self.file;
        let body = raw.split('#').next().unwrap_or("").trim();
        if body.is_empty() {
            return Ok(());
        }
        let too_large = || {
            err(
                file,
                line,
                format!(
                    "block {} is too large: give block numbers below 2^40 ({})",
                    excerpt(body),
                    1u64 << 40
                ),
            )
        };
        let block: u64 = body.parse().map_err(|e: std::num::ParseIntError| {
            // A whole number past u64 is too large, not malformed.
            if *e.kind() == std::num::IntErrorKind::PosOverflow {
                too_large()
            } else {
                err(
                    file,
                    line,
                    format!(
                        "expected one block number (a whole number), got `{}`",
                        excerpt(body)
                    ),
                )
            }
        })?;
        if block >= 1 << 40 {
            return Err(too_large());
        }
        if self.blocks.len() == self.reads_max {
            return Err(err(
                file,
                line,
                format!(
                    "more than {max} reads, the most a hinted trace may hold (the driver keeps \
                     every block's state in memory); give the run at most {max} block numbers",
                    max = self.reads_max
                ),
            ));
        }
        if let Some(first) = self.seen.insert(block, line) {
            return Err(err(
                file,
                line,
                format!(
                    "block {block} was already read on line {first}; each block may appear once"
                ),
            ));
        }
        self.blocks.push(block);
        Ok(())
    }

    /// The blocks, once every line is in.
    fn finish(self) -> Result<Vec<u64>, TraceError> {
        if self.blocks.is_empty() {
            return Err(err(self.file, 0, "no block numbers: the trace is empty"));
        }
        Ok(self.blocks)
    }
}

/// The blocks the application reads, in order.
pub fn access_list(w: &HintedWorkload, seed: u64) -> Result<Vec<u64>, TraceError> {
    match &w.order {
        AccessOrder::Sequential => Ok((0..w.reads).collect()),
        AccessOrder::Random => {
            let mut v: Vec<u64> = (0..w.reads).collect();
            Rng::new(seed).fork(0x6869_6e74).shuffle(&mut v);
            Ok(v)
        }
        AccessOrder::Trace(path) => {
            let name = path.display().to_string();
            let mut parser = Parser::new(&name);
            for_each_line(path, |line, text| parser.line(line, text)).map_err(|e| match e {
                LineError::Read { line, message } => crate::sim::named_trace_file(err(
                    &name,
                    line,
                    format!("cannot read the hinted trace: {message}"),
                )),
                // As the block traces: text in another encoding is refused at its first foreign
                // byte's line, not as a bare "stream did not contain valid UTF-8".
                LineError::NotUtf8 { line } => err(
                    &name,
                    line,
                    "not UTF-8 text; save the trace as plain UTF-8 text",
                ),
                LineError::Parse(e) => e,
            })?;
            // A trace with no block numbers is refused as a whole, as one that cannot be read.
            parser.finish().map_err(crate::sim::named_trace_file)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_numbers_comments_and_blank_lines() {
        let text = "# LASR-like\n3\n\n1 # second\n  7\n";
        assert_eq!(parse_trace(text, "t.txt").unwrap(), vec![3, 1, 7]);
    }

    #[test]
    fn errors_name_the_file_and_line() {
        let e = parse_trace("1\n2\nx\n", "t.txt").unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("t.txt", 3));
        assert!(e.to_string().starts_with("t.txt:3: "), "{e}");
        let e = parse_trace("5\n6\n5\n", "t.txt").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.message.contains("line 1"), "{}", e.message);
        assert_eq!(parse_trace("# nothing\n", "t.txt").unwrap_err().line, 0);
        assert_eq!(parse_trace("-1\n", "t.txt").unwrap_err().line, 1);
    }

    #[test]
    fn random_order_is_a_seeded_permutation() {
        let w = HintedWorkload {
            reads: 100,
            block: foresight_core::ByteLen::mib(1),
            consume: foresight_core::Duration::from_millis(1),
            order: AccessOrder::Random,
        };
        let a = access_list(&w, 7).unwrap();
        assert_eq!(a, access_list(&w, 7).unwrap());
        assert_ne!(a, access_list(&w, 8).unwrap());
        let mut s = a.clone();
        s.sort_unstable();
        assert_eq!(s, (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn a_trace_that_is_not_utf8_is_refused_at_its_line() {
        let dir = tempfile::Builder::new()
            .prefix("foresight-hinted-utf8-")
            .tempdir()
            .unwrap();
        let path = dir.path().join("latin1.hints");
        std::fs::write(&path, b"1\n2 # caf\xe9\n3\n").unwrap();
        let w = HintedWorkload {
            reads: 1,
            block: foresight_core::ByteLen::mib(1),
            consume: foresight_core::Duration::from_millis(1),
            order: AccessOrder::Trace(path),
        };
        let e = access_list(&w, 1).unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        assert!(e.message.contains("UTF-8"), "{e}");
    }

    /// A hinted trace fed from a pipe of block numbers that never ends used to be read whole
    /// before it was parsed, so it grew until memory ran out; it is now refused at its first
    /// block past the limit (here 1,000; the real one is `MAX_READS`).
    #[cfg(target_os = "linux")]
    #[test]
    fn an_endless_pipe_of_blocks_is_refused_past_the_read_limit() {
        let (_dir, path, writer) =
            crate::trace::tests::endless_pipe("endless-hints", |i| format!("{i}\n"));
        let name = path.display().to_string();
        let mut parser = Parser::new(&name);
        parser.reads_max = 1_000;
        let result = for_each_line(&path, |line, text| parser.line(line, text));
        writer.join().expect("the writer ends");
        let Err(LineError::Parse(e)) = result else {
            panic!("the pipe was not refused at the limit");
        };
        assert_eq!(e.line, 1_001, "{e}");
        assert!(e.message.contains("more than 1000 reads"), "{e}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_line_without_end_is_refused_at_the_line_bound() {
        let w = HintedWorkload {
            reads: 1,
            block: foresight_core::ByteLen::mib(1),
            consume: foresight_core::Duration::from_millis(1),
            order: AccessOrder::Trace("/dev/zero".into()),
        };
        let e = access_list(&w, 1).unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("/dev/zero", 1));
        assert!(e.message.contains("longer than"), "{e}");
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

        /// A valid trace with edits (a byte flipped, the text cut, a 24-digit number or a random
        /// byte spliced in): blocks, each below 2^40 and read once, or an error naming a line
        /// that exists. The unedited trace parses to its blocks.
        #[test]
        fn edited_traces_parse_or_name_the_line(
            edits in prop::collection::vec((any::<prop::sample::Index>(), 0u8..4, any::<u8>()), 0..4),
        ) {
            let valid = "# blocks\n3\n1 # again\n\n  7\n1099511627775\n";
            let mut b = valid.as_bytes().to_vec();
            for (at, kind, byte) in &edits {
                let i = at.index(b.len() + 1);
                match kind {
                    0 if i < b.len() => b[i] ^= (*byte).max(1),
                    0 | 1 => b.truncate(i),
                    2 => drop(b.splice(i..i, *b"999999999999999999999999")),
                    _ => b.insert(i, *byte),
                }
            }
            let text = String::from_utf8_lossy(&b);
            match parse_trace(&text, "edited.txt") {
                Ok(blocks) => {
                    let mut seen = blocks.clone();
                    seen.sort_unstable();
                    seen.dedup();
                    prop_assert_eq!(seen.len(), blocks.len());
                    prop_assert!(blocks.iter().all(|&n| n < 1 << 40));
                    if edits.is_empty() {
                        prop_assert_eq!(blocks, vec![3, 1, 7, (1 << 40) - 1]);
                    }
                }
                Err(e) => {
                    prop_assert!(!edits.is_empty(), "{}", e);
                    prop_assert!(e.line <= text.lines().count() && !e.message.is_empty(), "{}", e);
                }
            }
        }

        /// Any bytes give blocks or an error that names the file and a line within the text,
        /// never a panic.
        #[test]
        fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
            let text = String::from_utf8_lossy(&bytes);
            match parse_trace(&text, "fuzz.txt") {
                Ok(b) => prop_assert!(!b.is_empty()),
                Err(e) => {
                    prop_assert_eq!(e.file.as_str(), "fuzz.txt");
                    prop_assert!(e.line <= text.lines().count());
                }
            }
        }
    }
}
