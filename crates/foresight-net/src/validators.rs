//! Validators and conditional requests (RFC 9110, sections 8.8 and 13), pure functions over
//! header bytes.
//!
//! The server describes each version of a file by an entity tag built from what it already
//! compares to tell versions apart (device, inode, length and modification time in nanoseconds;
//! see `server::FileVersion`) and by an HTTP-date, its `Last-Modified`: the modification time,
//! no later than the inode's last status change nor the clock ([`Validators::last_modified_s`]).
//! The tag is strong only once the file was modified long enough before the answer that its
//! timestamps cannot repeat (`server::strong_after`: about 50 ms on a file system whose times
//! show sub-second figures, a second otherwise): a file rewritten again within its file system's
//! timestamp granularity, at the same size and inode, keeps every one of those figures, so until
//! then the tag is sent weak (`W/`), since it cannot promise that equal tags mean equal bytes
//! (section 8.8.1). A modification time later than the status change was set by hand (or by
//! another clock) and tells nothing of the next write: the tag then also carries the status
//! change, which every write stamps anew, and is strong once that change is as old. The
//! preconditions are weighed in the order of section
//! 13.2.2: `If-Match` (strong comparison, `*` any file; failing gives 412), else
//! `If-Unmodified-Since` (412 when the file is newer than the date; a date that does not parse is
//! ignored; "newer" weighs the date `Last-Modified` gives); then `If-None-Match` (weak comparison, a `W/` prefix ignored on either side, `*` any
//! file; a match gives 304), else `If-Modified-Since` (304 when the file is not newer, weighed as
//! for `If-Unmodified-Since`); then
//! `If-Range`, which needs a strong match: an entity tag without `W/` equal to the file's strong
//! tag, or a date equal to its `Last-Modified` when that date is itself strong (section 8.8.2.2),
//! since a file changed twice within one second keeps its date. A date names a whole second and
//! the clock is read in whole seconds, so the date holds once the clock is two seconds past it:
//! the modification is then a full second old wherever in its second it fell, which is 1 to 2 s
//! after it. One second past would do for a clock and file times that agree, but a file system
//! stamps a write from a clock that may lag this one (the kernel's coarse clock, by a tick; a
//! network file system's server, by its skew), and a write made just after the second ended
//! could still carry its date. Dates are written as IMF-fixdate and read in all three forms the RFC names (section
//! 5.6.7); the calendar arithmetic walks whole years from 1970, which is a few dozen steps for
//! any date a file has, and so plainly correct rather than clever.

/// The earliest year an HTTP-date may name here: times before the Unix epoch are not dates a
/// served file has, and are read as no date.
const FIRST_YEAR: i64 = 1970;
/// The last year an HTTP-date can name (four digits).
const LAST_YEAR: i64 = 9999;
const SECONDS_PER_DAY: u64 = 86_400;
const DAY_NAMES: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const LONG_DAY_NAMES: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];
const MONTH_NAMES: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

fn leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_year(year: i64) -> u64 {
    if leap(year) {
        366
    } else {
        365
    }
}

fn days_in_month(year: i64, month: usize) -> u64 {
    match month {
        1 if leap(year) => 29,
        1 => 28,
        3 | 5 | 8 | 10 => 30,
        _ => 31,
    }
}

/// `unix_s` (seconds since 1970-01-01T00:00:00Z) as an IMF-fixdate, `Sun, 06 Nov 1994 08:49:37
/// GMT`; `None` past the year 9999, which four digits cannot write.
pub fn format_http_date(unix_s: u64) -> Option<String> {
    let mut days = unix_s / SECONDS_PER_DAY;
    let of_day = unix_s % SECONDS_PER_DAY;
    // 1970-01-01 was a Thursday.
    let weekday = DAY_NAMES[((days + 4) % 7) as usize];
    let mut year = FIRST_YEAR;
    while days >= days_in_year(year) {
        days -= days_in_year(year);
        year += 1;
        if year > LAST_YEAR {
            return None;
        }
    }
    let mut month = 0;
    while days >= days_in_month(year, month) {
        days -= days_in_month(year, month);
        month += 1;
    }
    Some(format!(
        "{weekday}, {:02} {} {year:04} {:02}:{:02}:{:02} GMT",
        days + 1,
        MONTH_NAMES[month],
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60
    ))
}

/// The first second of the year 10000, which four digits cannot write.
const PAST_LAST_S: u64 = 253_402_300_800;

/// Seconds since the epoch of a calendar date and time, if it is one (and not before 1970, nor
/// the leap second that would end the year 9999, so that every date read can be written).
fn unix_seconds(year: i64, month: usize, day: u64, hms: (u64, u64, u64)) -> Option<u64> {
    let (h, m, s) = hms;
    if !(FIRST_YEAR..=LAST_YEAR).contains(&year)
        || month > 11
        || day == 0
        || day > days_in_month(year, month)
        || h > 23
        || m > 59
        || s > 60
    {
        return None;
    }
    let mut days = day - 1;
    for y in FIRST_YEAR..year {
        days += days_in_year(y);
    }
    for mo in 0..month {
        days += days_in_month(year, mo);
    }
    Some(days * SECONDS_PER_DAY + h * 3600 + m * 60 + s).filter(|&t| t < PAST_LAST_S)
}

fn digits(text: &str, min_len: usize, max_len: usize) -> Option<u64> {
    if !(min_len..=max_len).contains(&text.len()) || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

fn month_of(name: &str) -> Option<usize> {
    MONTH_NAMES.iter().position(|m| *m == name)
}

fn time_of(text: &str) -> Option<(u64, u64, u64)> {
    let mut parts = text.split(':');
    let hms = (
        digits(parts.next()?, 2, 2)?,
        digits(parts.next()?, 2, 2)?,
        digits(parts.next()?, 2, 2)?,
    );
    parts.next().is_none().then_some(hms)
}

/// Reads an HTTP-date in any of its three forms (RFC 9110, section 5.6.7): IMF-fixdate (`Sun, 06
/// Nov 1994 08:49:37 GMT`), the obsolete RFC 850 form (`Sunday, 06-Nov-94 08:49:37 GMT`) and
/// asctime (`Sun Nov  6 08:49:37 1994`). A two-digit year is the one of that century or the last
/// that is not more than 50 years after `now_year`, as the RFC asks. `None` when the text is none
/// of these (or names a time before 1970); the day name is checked for form, not against the date.
pub fn parse_http_date(text: &str, now_year: i64) -> Option<u64> {
    let text = text.trim();
    if let Some((name, rest)) = text.split_once(',') {
        let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
        if DAY_NAMES.contains(&name) {
            let [day, month, year, time, "GMT"] = fields[..] else {
                return None;
            };
            return unix_seconds(
                digits(year, 4, 4)? as i64,
                month_of(month)?,
                digits(day, 2, 2)?,
                time_of(time)?,
            );
        }
        if LONG_DAY_NAMES.contains(&name) {
            let [date, time, "GMT"] = fields[..] else {
                return None;
            };
            let mut dmy = date.split('-');
            let (day, month, yy) = (dmy.next()?, dmy.next()?, dmy.next()?);
            if dmy.next().is_some() {
                return None;
            }
            let yy = digits(yy, 2, 2)? as i64;
            let mut year = now_year - now_year.rem_euclid(100) + yy;
            if year > now_year + 50 {
                year -= 100;
            }
            return unix_seconds(year, month_of(month)?, digits(day, 2, 2)?, time_of(time)?);
        }
        return None;
    }
    let fields: Vec<&str> = text.split_ascii_whitespace().collect();
    let [name, month, day, time, year] = fields[..] else {
        return None;
    };
    if !DAY_NAMES.contains(&name) {
        return None;
    }
    unix_seconds(
        digits(year, 4, 4)? as i64,
        month_of(month)?,
        digits(day, 1, 2)?,
        time_of(time)?,
    )
}

/// The year `unix_s` falls in (for reading two-digit years).
pub fn year_of(unix_s: u64) -> i64 {
    let mut days = unix_s / SECONDS_PER_DAY;
    let mut year = FIRST_YEAR;
    while days >= days_in_year(year) && year < LAST_YEAR {
        days -= days_in_year(year);
        year += 1;
    }
    year
}

/// One entity tag of a list: whether it is weak, and its opaque part with its quotes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntityTag<'a> {
    /// Written with `W/`.
    pub weak: bool,
    /// `"..."`, quotes included.
    pub opaque: &'a str,
}

/// Reads one entity tag from the start of `text`, returning it and what follows.
fn entity_tag(text: &str) -> Option<(EntityTag<'_>, &str)> {
    let (weak, rest) = match text.strip_prefix("W/") {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let inner = rest.strip_prefix('"')?;
    let close = inner.find('"')?;
    let opaque = &rest[..close + 2];
    // etagc: `!`, `#` to `~`, and obs-text; no spaces, controls or quotes inside.
    if !opaque[1..opaque.len() - 1]
        .bytes()
        .all(|b| b == 0x21 || (0x23..=0x7e).contains(&b) || b >= 0x80)
    {
        return None;
    }
    Some((EntityTag { weak, opaque }, &rest[close + 2..]))
}

/// The tags of an `If-None-Match` (or `If-Match`) value, `*` being `Some(None)`; `None` when the
/// value is not a list of entity tags.
pub fn entity_tags(value: &str) -> Option<Option<Vec<EntityTag<'_>>>> {
    let value = value.trim_matches([' ', '\t']);
    if value == "*" {
        return Some(None);
    }
    let mut tags = Vec::new();
    let mut rest = value;
    loop {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        if rest.is_empty() {
            break;
        }
        let (tag, after) = entity_tag(rest)?;
        tags.push(tag);
        let after = after.trim_start_matches([' ', '\t']);
        if !(after.is_empty() || after.starts_with(',')) {
            return None;
        }
        rest = after;
    }
    (!tags.is_empty()).then_some(Some(tags))
}

/// A file's validators as the server sends them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Validators {
    /// The entity tag's opaque part, quotes included (no `W/`).
    pub etag: String,
    /// Whether the tag is weak: the file may change again and keep it, so it never satisfies a
    /// strong comparison (`If-Match`, `If-Range`).
    pub weak: bool,
    /// The modification time in whole seconds since the epoch, if the file has one after 1970.
    pub modified_s: Option<u64>,
    /// The inode's last status change (`ctime`) in whole seconds since the epoch, if known. The
    /// kernel stamps it from its clock at every change of the data or metadata, the setting of
    /// the modification time included, and nothing can set it; so a modification time ahead
    /// of it was set by hand, and the data has not changed since it.
    pub changed_s: Option<u64>,
}

impl Validators {
    /// The file's `Last-Modified` at `now_s`, and the date `If-Unmodified-Since`,
    /// `If-Modified-Since` and `If-Range` compare: its last modification as far as the server
    /// can tell, its modification time, but no later than its last status change nor than the
    /// clock. A modification time ahead of the clock (a file touched into the future, or copied
    /// from a machine whose clock runs ahead) cannot be sent (RFC 9110, section 8.8.2.1), and
    /// the answer's own date in its place would move on with the clock, so that no date a
    /// client was sent would ever match again. The status change is when that modification
    /// time was set, and the data has not changed since: a date at or after it holds until the
    /// file changes again, and any change (a write, a new modification time) moves the status
    /// change past it. `None` without a modification time.
    pub fn last_modified_s(&self, now_s: u64) -> Option<u64> {
        let m = self.modified_s?;
        Some(self.changed_s.map_or(m, |c| m.min(c)).min(now_s))
    }

    /// The `ETag` field value: the tag, with `W/` when it is weak.
    pub fn etag_value(&self) -> String {
        if self.weak {
            format!("W/{}", self.etag)
        } else {
            self.etag.clone()
        }
    }
}

/// What a `GET` or `HEAD` is answered with once its preconditions are evaluated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// 412 Precondition Failed: `If-Match` or `If-Unmodified-Since` does not hold.
    PreconditionFailed,
    /// 304 Not Modified: the client's copy is current.
    NotModified,
    /// The file, honouring `Range` when `honour_range`; without it (a failed `If-Range`) the whole
    /// file.
    Send {
        /// Whether `Range` applies.
        honour_range: bool,
    },
}

/// A request's conditional headers, each as one value (field lines of a list joined by commas).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Conditions {
    /// `If-Match`.
    pub if_match: Option<String>,
    /// `If-Unmodified-Since`; more than one line is invalid, hence ignored.
    pub if_unmodified_since: Option<String>,
    /// `If-None-Match`.
    pub if_none_match: Option<String>,
    /// `If-Modified-Since`; more than one line is invalid, hence ignored.
    pub if_modified_since: Option<String>,
    /// `If-Range`.
    pub if_range: Option<String>,
}

/// Evaluates `c` against the file's validators at `now_s`, in the order of RFC 9110, section
/// 13.2.2, for `GET` and `HEAD`.
pub fn evaluate(c: &Conditions, file: &Validators, now_s: u64) -> Answer {
    let year = year_of(now_s);
    if let Some(im) = &c.if_match {
        // Strong comparison: a weak tag on either side never matches. A value that is not a
        // list of tags names no version, so it does not hold either.
        let holds = match entity_tags(im) {
            Some(None) => true,
            Some(Some(tags)) => !file.weak && tags.iter().any(|t| !t.weak && t.opaque == file.etag),
            None => false,
        };
        if !holds {
            return Answer::PreconditionFailed;
        }
    } else if let (Some(ius), Some(modified_s)) =
        (&c.if_unmodified_since, file.last_modified_s(now_s))
    {
        // A date that does not parse is ignored (section 13.1.4), as is the field for a file
        // without a modification time.
        if parse_http_date(ius, year).is_some_and(|since| modified_s > since) {
            return Answer::PreconditionFailed;
        }
    }
    if let Some(inm) = &c.if_none_match {
        // A value that is not a list of tags matches nothing: the client gets the file.
        let matched = match entity_tags(inm) {
            Some(None) => true,
            Some(Some(tags)) => tags.iter().any(|t| t.opaque == file.etag),
            None => false,
        };
        if matched {
            return Answer::NotModified;
        }
    } else if let (Some(ims), Some(modified_s)) =
        (&c.if_modified_since, file.last_modified_s(now_s))
    {
        if parse_http_date(ims, year).is_some_and(|since| modified_s <= since) {
            return Answer::NotModified;
        }
    }
    let honour_range = match &c.if_range {
        None => true,
        Some(v) => {
            let v = v.trim_matches([' ', '\t']);
            if v.starts_with('"') || v.starts_with("W/") {
                // Strong comparison: a weak tag on either side never matches.
                !file.weak
                    && matches!(entity_tag(v), Some((t, "")) if !t.weak && t.opaque == file.etag)
            } else {
                // A file whose tag is weak was modified too recently for its date to be strong;
                // two whole seconds past the date, not one: see the module documentation.
                match (parse_http_date(v, year), file.last_modified_s(now_s)) {
                    (Some(date), Some(m)) => !file.weak && date == m && m + 1 < now_s,
                    _ => false,
                }
            }
        }
    };
    Answer::Send { honour_range }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 9110's example date.
    const EXAMPLE_S: u64 = 784_111_777;

    #[test]
    fn dates_are_written_as_imf_fixdate_and_read_in_all_three_forms() {
        assert_eq!(
            format_http_date(EXAMPLE_S).unwrap(),
            "Sun, 06 Nov 1994 08:49:37 GMT"
        );
        assert_eq!(
            format_http_date(0).unwrap(),
            "Thu, 01 Jan 1970 00:00:00 GMT"
        );
        // A leap day, and the last second of a leap year.
        assert_eq!(
            format_http_date(951_782_400).unwrap(),
            "Tue, 29 Feb 2000 00:00:00 GMT"
        );
        assert_eq!(
            format_http_date(1_735_689_599).unwrap(),
            "Tue, 31 Dec 2024 23:59:59 GMT"
        );
        for text in [
            "Sun, 06 Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
            "  Sun, 06 Nov 1994 08:49:37 GMT ",
        ] {
            assert_eq!(parse_http_date(text, 2026), Some(EXAMPLE_S), "{text}");
        }
        // A two-digit year more than 50 years ahead is the last century's; 44 years ahead is not.
        assert_eq!(
            parse_http_date("Friday, 01-Jan-99 00:00:00 GMT", 2026),
            Some(915_148_800)
        );
        assert_eq!(
            parse_http_date("Wednesday, 01-Jan-70 00:00:00 GMT", 2026),
            Some(3_155_760_000)
        );
        for bad in [
            "",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 6 Nov 1994 08:49:37 GMT",
            "Sun, 31 Feb 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT",
            "Sun, 06 Nov 1969 08:49:37 GMT",
            "Sunday, 06 Nov 1994 08:49:37 GMT",
            "Sun, 06-Nov-94 08:49:37 GMT",
            "Sun Nov 6 08:49 1994",
            "yesterday",
        ] {
            assert_eq!(parse_http_date(bad, 2026), None, "{bad}");
        }
    }

    #[test]
    fn every_date_that_reads_can_be_written() {
        // A leap second (`:60`, which the grammar allows) reads as the next second; at the very
        // end of 9999 that second has no four-digit year.
        assert_eq!(
            parse_http_date("Sat, 30 Jun 2012 23:59:60 GMT", 2026),
            Some(1_341_100_800)
        );
        assert_eq!(
            parse_http_date("Fri, 31 Dec 9999 23:59:59 GMT", 2026),
            Some(PAST_LAST_S - 1)
        );
        for text in [
            "Fri, 31 Dec 9999 23:59:60 GMT",
            "Friday, 31-Dec-99 23:59:60 GMT",
            "Fri Dec 31 23:59:60 9999",
        ] {
            if let Some(t) = parse_http_date(text, 9990) {
                assert!(format_http_date(t).is_some(), "{text} read as {t}");
            }
        }
    }

    proptest::proptest! {
        /// Every second from 1970 to 9999 is written as a date that reads back as itself.
        #[test]
        fn a_written_date_reads_back(unix_s in 0u64..253_402_300_800) {
            let text = format_http_date(unix_s).unwrap();
            proptest::prop_assert_eq!(parse_http_date(&text, 2026), Some(unix_s), "{}", text);
        }

        /// Any text is read as a date or refused without a panic, and so are tag lists.
        #[test]
        fn any_text_is_read_or_refused(text in proptest::prelude::any::<String>()) {
            let _ = parse_http_date(&text, 2026);
            let _ = entity_tags(&text);
            let c = Conditions {
                if_match: Some(text.clone()),
                if_unmodified_since: Some(text.clone()),
                if_none_match: Some(text.clone()),
                if_modified_since: Some(text.clone()),
                if_range: Some(text),
            };
            let _ = evaluate(&c, &file(), EXAMPLE_S + 10);
            let _ = evaluate(&c, &Validators { weak: true, ..file() }, EXAMPLE_S + 10);
        }
    }

    fn file() -> Validators {
        Validators {
            etag: "\"1-2-3-4\"".into(),
            weak: false,
            modified_s: Some(EXAMPLE_S),
            changed_s: Some(EXAMPLE_S),
        }
    }

    fn answer(
        if_none_match: Option<&str>,
        if_modified_since: Option<&str>,
        if_range: Option<&str>,
    ) -> Answer {
        let c = Conditions {
            if_none_match: if_none_match.map(Into::into),
            if_modified_since: if_modified_since.map(Into::into),
            if_range: if_range.map(Into::into),
            ..Conditions::default()
        };
        evaluate(&c, &file(), EXAMPLE_S + 10)
    }

    const RANGE: Answer = Answer::Send { honour_range: true };
    const WHOLE: Answer = Answer::Send {
        honour_range: false,
    };

    #[test]
    fn if_none_match_compares_weakly_and_takes_precedence() {
        for matching in [
            "\"1-2-3-4\"",
            "W/\"1-2-3-4\"",
            "*",
            "\"x\", \"1-2-3-4\"",
            "\"x\",W/\"1-2-3-4\"",
        ] {
            assert_eq!(answer(Some(matching), None, None), Answer::NotModified);
        }
        for other in ["\"1-2-3\"", "1-2-3-4", "\"1-2-3-4", "\"a\" \"1-2-3-4\"", ""] {
            assert_eq!(answer(Some(other), None, None), RANGE, "{other}");
        }
        let date = "Sun, 06 Nov 1994 08:49:37 GMT";
        assert_eq!(answer(None, Some(date), None), Answer::NotModified);
        assert_eq!(
            answer(None, Some("Sun, 06 Nov 1994 08:49:36 GMT"), None),
            RANGE
        );
        assert_eq!(answer(None, Some("not a date"), None), RANGE);
        // If-None-Match present: If-Modified-Since is not looked at.
        assert_eq!(answer(Some("\"x\""), Some(date), None), RANGE);
    }

    #[test]
    fn if_range_needs_a_strong_match() {
        assert_eq!(answer(None, None, Some("\"1-2-3-4\"")), RANGE);
        assert_eq!(answer(None, None, Some("W/\"1-2-3-4\"")), WHOLE);
        assert_eq!(answer(None, None, Some("\"1-2-3-5\"")), WHOLE);
        assert_eq!(answer(None, None, Some("\"1-2-3-4\", \"x\"")), WHOLE);
        assert_eq!(
            answer(None, None, Some("Sun, 06 Nov 1994 08:49:37 GMT")),
            RANGE
        );
        assert_eq!(
            answer(None, None, Some("Sun, 06 Nov 1994 08:49:38 GMT")),
            WHOLE
        );
        assert_eq!(answer(None, None, Some("garbage")), WHOLE);
        // A date is strong only once a second has passed since it: before that, the file may
        // change again and keep its date.
        let c = Conditions {
            if_range: Some("Sun, 06 Nov 1994 08:49:37 GMT".into()),
            ..Conditions::default()
        };
        assert_eq!(evaluate(&c, &file(), EXAMPLE_S + 1), WHOLE);
    }

    /// A date in `If-Range` holds from the second two past it, the first whole second in which
    /// the modification is a full second old wherever in its own second it fell: `--help` said
    /// "a Last-Modified at least a second old", and a date one second old got the whole file.
    #[test]
    fn an_if_range_date_holds_from_the_clocks_second_two_past_it() {
        let c = Conditions {
            if_range: Some("Sun, 06 Nov 1994 08:49:37 GMT".into()),
            ..Conditions::default()
        };
        assert_eq!(evaluate(&c, &file(), EXAMPLE_S), WHOLE);
        assert_eq!(evaluate(&c, &file(), EXAMPLE_S + 1), WHOLE);
        assert_eq!(evaluate(&c, &file(), EXAMPLE_S + 2), RANGE);
        assert_eq!(evaluate(&c, &file(), EXAMPLE_S + 3), RANGE);
    }

    /// The answer to `If-Match` and `If-Unmodified-Since` (with `rest` for the other fields).
    fn answer_to(
        if_match: Option<&str>,
        if_unmodified_since: Option<&str>,
        rest: Conditions,
    ) -> Answer {
        let c = Conditions {
            if_match: if_match.map(Into::into),
            if_unmodified_since: if_unmodified_since.map(Into::into),
            ..rest
        };
        evaluate(&c, &file(), EXAMPLE_S + 10)
    }

    #[test]
    fn if_match_compares_strongly_and_fails_with_412() {
        for holding in [
            "\"1-2-3-4\"",
            "*",
            "\"x\", \"1-2-3-4\"",
            " \"x\",\"1-2-3-4\" ",
        ] {
            assert_eq!(
                answer_to(Some(holding), None, Conditions::default()),
                RANGE,
                "{holding}"
            );
        }
        for failing in [
            "W/\"1-2-3-4\"",
            "\"x\", W/\"1-2-3-4\"",
            "\"1-2-3-5\"",
            "1-2-3-4",
            "\"1-2-3-4",
            "",
        ] {
            assert_eq!(
                answer_to(Some(failing), None, Conditions::default()),
                Answer::PreconditionFailed,
                "{failing}"
            );
        }
        // A weak file tag matches no If-Match but `*`.
        let weak = Validators {
            weak: true,
            ..file()
        };
        let c = |v: &str| Conditions {
            if_match: Some(v.into()),
            ..Conditions::default()
        };
        assert_eq!(
            evaluate(&c("\"1-2-3-4\""), &weak, EXAMPLE_S + 10),
            Answer::PreconditionFailed
        );
        assert_eq!(
            evaluate(&c("W/\"1-2-3-4\""), &weak, EXAMPLE_S + 10),
            Answer::PreconditionFailed
        );
        assert_eq!(evaluate(&c("*"), &weak, EXAMPLE_S + 10), RANGE);
    }

    #[test]
    fn if_unmodified_since_fails_for_a_newer_file_and_ignores_what_is_not_a_date() {
        let none = Conditions::default;
        for holding in [
            "Sun, 06 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:38 GMT",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "not a date",
            "",
        ] {
            assert_eq!(answer_to(None, Some(holding), none()), RANGE, "{holding}");
        }
        assert_eq!(
            answer_to(None, Some("Sun, 06 Nov 1994 08:49:36 GMT"), none()),
            Answer::PreconditionFailed
        );
        // No modification time: the field is ignored.
        let c = Conditions {
            if_unmodified_since: Some("Thu, 01 Jan 1970 00:00:00 GMT".into()),
            ..none()
        };
        let undated = Validators {
            modified_s: None,
            ..file()
        };
        assert_eq!(evaluate(&c, &undated, EXAMPLE_S + 10), RANGE);
    }

    /// A file whose modification time is ahead of the clock is sent with the answer's date as its
    /// `Last-Modified`. A client sending that date back later, the clock having moved on (still
    /// short of the file's time, or past it), still has `If-Unmodified-Since` hold and gets 304
    /// for `If-Modified-Since`: the file has not changed since its time was set (its status
    /// change). A write after the date, or the time set into the future again, moves the status
    /// change past it and fails the precondition, as does a date from before the time was set.
    /// Before, the file's own time was weighed, later than any date sent: always 412.
    #[test]
    fn a_modification_time_ahead_of_the_clock_is_weighed_from_its_status_change() {
        let set_at = EXAMPLE_S;
        let future = EXAMPLE_S + 86_400;
        let sent = set_at + 3;
        let ahead = Validators {
            weak: true,
            modified_s: Some(future),
            changed_s: Some(set_at),
            ..file()
        };
        let ius = |date: u64| Conditions {
            if_unmodified_since: format_http_date(date),
            ..Conditions::default()
        };
        let ims = |date: u64| Conditions {
            if_modified_since: format_http_date(date),
            ..Conditions::default()
        };
        for now in [sent, sent + 60, future, future + 10] {
            assert_eq!(evaluate(&ius(sent), &ahead, now), RANGE, "at {now}");
            assert_eq!(
                evaluate(&ims(sent), &ahead, now),
                Answer::NotModified,
                "at {now}"
            );
        }
        assert_eq!(
            evaluate(&ius(set_at - 1), &ahead, sent),
            Answer::PreconditionFailed
        );
        let written = Validators {
            modified_s: Some(sent + 5),
            changed_s: Some(sent + 5),
            ..ahead.clone()
        };
        let touched_again = Validators {
            modified_s: Some(future + 100),
            changed_s: Some(sent + 5),
            ..ahead.clone()
        };
        for changed in [&written, &touched_again] {
            assert_eq!(
                evaluate(&ius(sent), changed, sent + 10),
                Answer::PreconditionFailed,
                "{changed:?}"
            );
            assert_eq!(evaluate(&ims(sent), changed, sent + 10), RANGE);
        }
        // A file touched into the past (an archive's times) is weighed by its own time.
        let past = Validators {
            modified_s: Some(set_at - 100),
            changed_s: Some(sent),
            ..file()
        };
        assert_eq!(
            evaluate(&ius(set_at - 101), &past, sent + 10),
            Answer::PreconditionFailed
        );
        assert_eq!(evaluate(&ius(set_at - 100), &past, sent + 10), RANGE);
    }

    #[test]
    fn preconditions_are_weighed_in_the_rfcs_order() {
        let earlier = "Sun, 06 Nov 1994 08:49:36 GMT";
        let same = "Sun, 06 Nov 1994 08:49:37 GMT";
        // If-Match present: If-Unmodified-Since is not looked at, whichever way it would go.
        assert_eq!(
            answer_to(Some("\"1-2-3-4\""), Some(earlier), Conditions::default()),
            RANGE
        );
        assert_eq!(
            answer_to(Some("\"x\""), Some(same), Conditions::default()),
            Answer::PreconditionFailed
        );
        // A failed precondition comes before a 304, and a 304 before If-Range.
        let not_modified = Conditions {
            if_none_match: Some("\"1-2-3-4\"".into()),
            if_range: Some("\"x\"".into()),
            ..Conditions::default()
        };
        assert_eq!(
            answer_to(Some("\"x\""), None, not_modified.clone()),
            Answer::PreconditionFailed
        );
        assert_eq!(
            answer_to(None, Some(earlier), not_modified.clone()),
            Answer::PreconditionFailed
        );
        assert_eq!(
            answer_to(Some("*"), None, not_modified.clone()),
            Answer::NotModified
        );
        assert_eq!(
            answer_to(None, Some(same), not_modified),
            Answer::NotModified
        );
        let ranged = Conditions {
            if_range: Some("\"x\"".into()),
            ..Conditions::default()
        };
        assert_eq!(answer_to(Some("\"1-2-3-4\""), None, ranged), WHOLE);
    }

    #[test]
    fn a_weak_file_tag_never_satisfies_if_range_but_matches_if_none_match() {
        let weak = Validators {
            weak: true,
            ..file()
        };
        assert_eq!(weak.etag_value(), "W/\"1-2-3-4\"");
        assert_eq!(file().etag_value(), "\"1-2-3-4\"");
        for if_range in ["\"1-2-3-4\"", "W/\"1-2-3-4\""] {
            let c = Conditions {
                if_range: Some(if_range.into()),
                ..Conditions::default()
            };
            assert_eq!(evaluate(&c, &weak, EXAMPLE_S + 10), WHOLE, "{if_range}");
        }
        let c = Conditions {
            if_range: Some("Sun, 06 Nov 1994 08:49:37 GMT".into()),
            ..Conditions::default()
        };
        assert_eq!(evaluate(&c, &weak, EXAMPLE_S + 10), WHOLE, "a date");
        for inm in ["\"1-2-3-4\"", "W/\"1-2-3-4\""] {
            let c = Conditions {
                if_none_match: Some(inm.into()),
                ..Conditions::default()
            };
            assert_eq!(
                evaluate(&c, &weak, EXAMPLE_S + 10),
                Answer::NotModified,
                "{inm}"
            );
        }
    }
}
