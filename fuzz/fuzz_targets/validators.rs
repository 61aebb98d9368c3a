//! Fuzzes the readers behind conditional requests: any text reads as an HTTP-date, a list of
//! entity tags, or nothing, without a panic; a date that reads prints as an IMF-fixdate that reads
//! back to the same second; every tag read keeps its quotes; and any five condition headers (an
//! empty line standing for a header not sent) evaluated against a file, its tag strong or weak
//! by the first byte, give an answer: a 412 only when `If-Match` names neither the strong file's
//! tag strongly nor `*`, or, without it, `If-Unmodified-Since` names a date before the file's; a
//! 304 only when the preconditions hold and `If-None-Match` lists the file's tag or `*`, or,
//! without it, `If-Modified-Since` names a date not before the file's; and a file whose tag is
//! weak never lets `If-Range` apply a range, by tag or by date. The second byte picks the file's
//! status change: unknown, after its modification time, or before it (a modification time set
//! ahead by hand, where the dates compare against the status change).

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
    let weak = data.first().is_some_and(|b| b & 1 == 1);
    let changed_s = match data.get(1).map_or(0, |b| b % 3) {
        0 => None,
        1 => Some(MODIFIED_S + 60),
        _ => Some(MODIFIED_S - 3_600),
    };
    // The date the conditions weigh: the modification time, but no later than the status
    // change (nothing sets that by hand) nor the clock.
    let file_date_s = changed_s.map_or(MODIFIED_S, |c| c.min(MODIFIED_S)).min(NOW_S);
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
        .splitn(5, '\n')
        .map(|l| (!l.is_empty()).then(|| l.to_string()));
    let c = Conditions {
        if_match: lines.next().flatten(),
        if_unmodified_since: lines.next().flatten(),
        if_none_match: lines.next().flatten(),
        if_modified_since: lines.next().flatten(),
        if_range: lines.next().flatten(),
    };
    let file = Validators {
        etag: "\"1-2-3-4\"".into(),
        weak,
        modified_s: Some(MODIFIED_S),
        changed_s,
    };
    let date = |d: &Option<String>| {
        d.as_deref()
            .and_then(|d| parse_http_date(d, year_of(NOW_S)))
    };
    let failed = match &c.if_match {
        Some(v) => match entity_tags(v) {
            Some(None) => false,
            Some(Some(tags)) => !tags
                .iter()
                .any(|t| !t.weak && !file.weak && t.opaque == file.etag),
            None => true,
        },
        None => date(&c.if_unmodified_since).is_some_and(|since| since < file_date_s),
    };
    let answer = evaluate(&c, &file, NOW_S);
    assert_eq!(
        answer == Answer::PreconditionFailed,
        failed,
        "{answer:?} for {c:?}"
    );
    if answer == Answer::NotModified {
        let asked = match &c.if_none_match {
            Some(v) => match entity_tags(v) {
                Some(None) => true,
                Some(Some(tags)) => tags.iter().any(|t| t.opaque == file.etag),
                None => false,
            },
            None => date(&c.if_modified_since).is_some_and(|since| since >= file_date_s),
        };
        assert!(asked, "304 for {c:?}");
    }
    if weak && c.if_range.is_some() && answer == (Answer::Send { honour_range: true }) {
        panic!("a weak tag satisfied If-Range for {c:?}");
    }
});
