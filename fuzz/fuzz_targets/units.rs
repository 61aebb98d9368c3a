//! Fuzzes the size, duration and rate parsers: any bytes (as text) parse or are refused with a
//! message that shows the text (its first 80 characters, as every error quotes input); a size
//! that parses prints to one that parses back to the same bytes, a duration to one within its
//! printed precision, and a rate is positive and finite.

#![no_main]

use foresight_core::{excerpt, parse_duration, parse_rate, parse_size};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let quoted = format!("`{}`", excerpt(&text));
    match parse_size(&text) {
        Ok(size) if size.0 <= 1 << 62 => assert_eq!(parse_size(&size.to_string()), Ok(size)),
        Ok(_) => {}
        Err(e) => assert!(e.to_string().contains(&quoted)),
    }
    match parse_duration(&text) {
        Ok(d) => {
            let again = parse_duration(&d.to_string()).expect("a printed duration parses");
            assert!(again.0.abs_diff(d.0) <= d.0 / 1000 + 1);
        }
        Err(e) => assert!(e.to_string().contains(&quoted)),
    }
    match parse_rate(&text) {
        Ok(r) => assert!(r.bytes_per_s > 0.0 && r.bytes_per_s.is_finite()),
        Err(e) => assert!(e.to_string().contains(&quoted)),
    }
});
