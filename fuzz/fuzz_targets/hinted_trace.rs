//! Fuzzes the hinted-trace parser: any bytes parse into distinct block numbers below 2^40, or are
//! refused with an error naming the file and a line that exists.

#![no_main]

use foresight_sim::tiered::hinted::parse_trace;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    match parse_trace(&text, "fuzz.hints") {
        Ok(blocks) => {
            let mut sorted = blocks.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted.len(), blocks.len());
            assert!(blocks.iter().all(|b| *b < 1 << 40));
        }
        Err(e) => assert!(
            e.file == "fuzz.hints" && e.line <= text.lines().count(),
            "{e}"
        ),
    }
});
