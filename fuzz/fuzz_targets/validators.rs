//! Fuzzes the readers behind conditional requests: any text reads as an HTTP-date, a list of
//! entity tags, or nothing, without a panic; a date that reads prints as an IMF-fixdate that reads
//! back to the same second; every tag read keeps its quotes; and any three condition headers
//! evaluated against a file give an answer, a 304 only when a condition asked for one.

#![no_main]

use foresight_net::validators::{
    entity_tags, evaluate, format_http_date, parse_http_date, Answer, Conditions, Validators,
};
use libfuzzer_sys::fuzz_target;

/// The year two-digit years are read against; any fixed year does.
const NOW_YEAR: i64 = 2026;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Some(t) = parse_http_date(&text, NOW_YEAR) {
        let printed = format_http_date(t).expect("a date that reads has a four-digit year");
        assert_eq!(parse_http_date(&printed, NOW_YEAR), Some(t), "{printed}");
    }
    if let Some(Some(tags)) = entity_tags(&text) {
        for t in tags {
            assert!(t.opaque.len() >= 2 && t.opaque.starts_with('"') && t.opaque.ends_with('"'));
        }
    }
    let mut lines = text.splitn(3, '\n').map(str::to_string);
    let c = Conditions {
        if_none_match: lines.next(),
        if_modified_since: lines.next(),
        if_range: lines.next(),
    };
    let file = Validators {
        etag: "\"1-2-3-4\"".into(),
        modified_s: Some(784_111_777),
    };
    if evaluate(&c, &file, 1_700_000_000) == Answer::NotModified {
        assert!(c.if_none_match.is_some() || c.if_modified_since.is_some());
    }
});
