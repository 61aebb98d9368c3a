//! Fuzzes the `Range` and `Content-Range` parsers: any bytes must parse or be refused without a
//! panic, whatever is accepted must print to a header that parses back the same, and every range
//! resolved against a length must lie inside it.

#![no_main]

use foresight_net::range::{
    decide, format_range_header, parse_content_range, parse_range_header, ParsedRange,
    RangeDecision,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (len_bytes, header) = data.split_at(data.len().min(8));
    let mut len = [0u8; 8];
    len[..len_bytes.len()].copy_from_slice(len_bytes);
    let len = u64::from_le_bytes(len) >> 16;
    if let Ok(ParsedRange::Bytes(specs)) = parse_range_header(header) {
        let again = parse_range_header(format_range_header(&specs).as_bytes());
        assert_eq!(again, Ok(ParsedRange::Bytes(specs.clone())));
        for s in specs {
            if let Some(r) = s.resolve(len) {
                assert!(r.len.0 > 0 && r.end().0 <= len);
            }
        }
    }
    if let RangeDecision::Partial(r) = decide(Some(header), len) {
        assert!(r.len.0 > 0 && r.end().0 <= len);
    }
    if let Some((r, total)) = parse_content_range(header) {
        assert!(r.len.0 > 0);
        if let Some(t) = total {
            assert!(r.end().0 <= t);
        }
    }
});
