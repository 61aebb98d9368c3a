//! Fuzzes the streaming block-trace reader (`TraceReader`), which the simulator replays traces
//! through: for any bytes, in each format, with a window of 1 to 8 records (so records stepping
//! back are put in order, or refused, within a few lines) and with or without a record cap, it
//! hands out records in non-decreasing arrival order from time zero, each at least one sector
//! long, and what it hands out in full is what the whole-file parser gives; or it stops with an
//! error naming the trace and a line that exists.
//!
//! The first byte picks the window and the cap; the rest is the trace.

#![no_main]

use foresight_core::Instant;
use foresight_sim::trace::{parse_trace, TraceFormat, TraceReader};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&knobs, bytes)) = data.split_first() else {
        return;
    };
    let window = usize::from(knobs & 7) + 1;
    // Half the inputs capped at 1 to 8 records, half not (0).
    let records_max = if knobs & 8 == 0 {
        0
    } else {
        u64::from(knobs >> 4 & 7) + 1
    };
    // Lines as the reader counts them: a last line without a line end counts too.
    let lines = bytes.split(|&b| b == b'\n').count();
    for format in TraceFormat::ALL {
        let check_error = |e: &foresight_sim::trace::TraceError| {
            assert_eq!(e.file, "fuzz.trace");
            assert!(e.line <= lines && !e.message.is_empty(), "{e}");
        };
        let mut reader =
            match TraceReader::from_bytes("fuzz.trace", bytes.to_vec(), format, records_max, window)
            {
                Ok(r) => r,
                Err(e) => {
                    check_error(&e);
                    continue;
                }
            };
        let mut records = Vec::new();
        let mut progress = 0.0;
        let outcome = loop {
            match reader.next_record() {
                Ok(Some((line, r))) => {
                    assert!(line >= 1 && line <= lines, "record at line {line} of {lines}");
                    assert!(r.sectors >= 1);
                    if records.is_empty() {
                        assert_eq!(r.arrival, Instant::ZERO);
                    }
                    assert!(
                        records.last().is_none_or(|p: &foresight_sim::trace::TraceRecord| {
                            p.arrival <= r.arrival
                        }),
                        "out of order at line {line}"
                    );
                    // Bytes in memory have a known length, so a share.
                    let now = reader.progress().expect("a share of known bytes");
                    assert!(now >= progress, "progress went backwards");
                    progress = now;
                    records.push(r);
                }
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            }
        };
        match outcome {
            Err(e) => check_error(&e),
            Ok(()) => {
                assert_eq!(reader.progress(), Some(1.0));
                // Uncapped, the stream is the whole file in the stable sort's order.
                if records_max == 0 {
                    if let Ok(text) = std::str::from_utf8(bytes) {
                        assert_eq!(
                            parse_trace(text, format, "fuzz.trace").as_ref(),
                            Ok(&records),
                            "{format}, window {window}"
                        );
                    }
                }
            }
        }
    }
});
