//! Fuzzes the readers behind conditional requests: any text reads as an HTTP-date, a list of
//! entity tags, or nothing, without a panic; a date that reads prints as an IMF-fixdate that reads
//! back to the same second; every tag read keeps its quotes; and any three condition headers (an
//! empty line standing for a header not sent) evaluated against a file give an answer, a 304 only
//! when `If-None-Match` lists the file's tag or `*`, or, without it, `If-Modified-Since` names a
//! date not before the file's.

#![no_main]

use foresight_net::validators::{
    entity_tags, evaluate, format_http_date, parse_http_date, year_of, Answer, Conditions,
    Validators,
};
use libfuzzer_sys::fuzz_target;

/// The year two-digit years are read against; any fixed year does.
const NOW_YEAR: i64 = 2026;
/// The server's clock for `evaluate`, and the file's modification time.
const NOW_S: u64 = 1_700_000_000;
const MODIFIED_S: u64 = 784_111_777;

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
    let mut lines = text
        .splitn(3, '\n')
        .map(|l| (!l.is_empty()).then(|| l.to_string()));
    let c = Conditions {
        if_none_match: lines.next().flatten(),
        if_modified_since: lines.next().flatten(),
        if_range: lines.next().flatten(),
    };
    let file = Validators {
        etag: "\"1-2-3-4\"".into(),
        modified_s: Some(MODIFIED_S),
    };
    if evaluate(&c, &file, NOW_S) == Answer::NotModified {
        let asked = match &c.if_none_match {
            Some(v) => match entity_tags(v) {
                Some(None) => true,
                Some(Some(tags)) => tags.iter().any(|t| t.opaque == file.etag),
                None => false,
            },
            None => c
                .if_modified_since
                .as_deref()
                .and_then(|d| parse_http_date(d, year_of(NOW_S)))
                .is_some_and(|since| since >= MODIFIED_S),
        };
        assert!(asked, "304 for {c:?}");
    }
});
