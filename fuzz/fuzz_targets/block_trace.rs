//! Fuzzes the block-trace parsers (DiskSim, MSR Cambridge, MQSim): any bytes parse into records
//! in arrival order starting at time zero, each at least one sector long, or are refused with an
//! error naming the file and a line that exists.

#![no_main]

use foresight_core::Instant;
use foresight_sim::trace::{parse_trace, TraceFormat};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for format in TraceFormat::ALL {
        match parse_trace(&text, format, "fuzz.trace") {
            Ok(records) => {
                assert_eq!(records.first().map(|r| r.arrival), Some(Instant::ZERO));
                assert!(records.windows(2).all(|w| w[0].arrival <= w[1].arrival));
                assert!(records.iter().all(|r| r.sectors >= 1));
            }
            Err(e) => {
                assert_eq!(e.file, "fuzz.trace");
                assert!(
                    e.line <= text.lines().count() && !e.message.is_empty(),
                    "{e}"
                );
            }
        }
    }
});
