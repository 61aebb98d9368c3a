//! The `hinted` workload's access list: generated from the seed, or read from a trace file.
//!
//! A hinted trace is plain text with one block number (a whole number, counted in
//! `workload.block` units from the start of the data) per line, in the order the application reads
//! them. Blank lines and text after `#` are ignored. Each block may appear once: the informed
//! policies track a block's copies by its number, and the paper's traces are replayed as one
//! distinct block per read (section 4.5.3). Errors name the file and the 1-based line.

use foresight_core::Rng;

use super::config::{AccessOrder, HintedWorkload};
use crate::trace::TraceError;

/// The most reads a hinted trace may hold.
pub const MAX_READS: usize = 1 << 26;

fn err(file: &str, line: usize, message: impl Into<String>) -> TraceError {
    TraceError {
        file: file.to_string(),
        line,
        message: message.into(),
    }
}

/// Parses a hinted trace's text; `file` names it in errors.
pub fn parse_trace(text: &str, file: &str) -> Result<Vec<u64>, TraceError> {
    let mut blocks = vec![];
    let mut seen: rustc_hash::FxHashMap<u64, usize> = rustc_hash::FxHashMap::default();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let body = raw.split('#').next().unwrap_or("").trim();
        if body.is_empty() {
            continue;
        }
        let block: u64 = body.parse().map_err(|_| {
            err(
                file,
                line,
                format!("expected one block number (a whole number), got `{body}`"),
            )
        })?;
        if block >= 1 << 40 {
            return Err(err(file, line, format!("block {block} is beyond 2^40")));
        }
        if let Some(first) = seen.insert(block, line) {
            return Err(err(
                file,
                line,
                format!(
                    "block {block} was already read on line {first}; each block may appear once"
                ),
            ));
        }
        if blocks.len() == MAX_READS {
            return Err(err(file, line, format!("more than {MAX_READS} reads")));
        }
        blocks.push(block);
    }
    if blocks.is_empty() {
        return Err(err(file, 0, "no block numbers: the trace is empty"));
    }
    Ok(blocks)
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
            let text = std::fs::read_to_string(path)
                .map_err(|e| err(&name, 0, format!("cannot read the hinted trace: {e}")))?;
            parse_trace(&text, &name)
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

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

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
