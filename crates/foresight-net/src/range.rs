//! The HTTP `Range` header (RFC 9110, section 14) as the server and the client use it.
//!
//! The parser works on raw header bytes and never panics (a fuzz target and a property test hold it
//! to that). The grammar is `unit "=" range-spec *( OWS "," OWS range-spec )` with three forms of
//! byte range: `first-last`, `first-` (to the end) and `-suffix` (the last `suffix` bytes). A unit
//! other than `bytes` is reported as such, because RFC 9110 tells a server to ignore a range in a
//! unit it does not understand; broken syntax in the `bytes` unit is reported as malformed, which
//! the server answers with 400 (the RFC would also allow ignoring it, but a client that sent a
//! broken range wants to hear about it rather than receive the whole file). The server answers one
//! range with 206; a request for several ranges is served whole (200), which RFC 9110 permits and
//! which spares the server multipart bodies that no client here needs. A set is unsatisfiable (416)
//! only when none of its ranges starts inside the representation and none is a suffix of non-zero
//! length (RFC 9110, section 14.1.1): `bytes=-5` on an empty file is answered 200 with the empty
//! body.

use std::fmt;

use foresight_core::ByteRange;

/// The most range-specs one header may list; a longer list is malformed (it could only be an
/// attempt to make the server work).
pub const MAX_RANGE_SPECS: usize = 64;

/// One range-spec of a `bytes` range header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RangeSpec {
    /// `first-last`, both inclusive, `first <= last`.
    FromTo {
        /// First byte.
        first: u64,
        /// Last byte (inclusive).
        last: u64,
    },
    /// `first-`: from `first` to the end.
    From {
        /// First byte.
        first: u64,
    },
    /// `-len`: the last `len` bytes.
    Suffix {
        /// How many bytes from the end.
        len: u64,
    },
}

/// A parsed `Range` header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParsedRange {
    /// `bytes=` and at least one range-spec.
    Bytes(Vec<RangeSpec>),
    /// A syntactically valid header in another unit, which the server ignores.
    OtherUnit,
}

/// Why a header could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("malformed Range header: {0}")]
pub struct RangeError(pub String);

/// What the server does with a request's `Range` header for a representation of a given length.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RangeDecision {
    /// No usable range, several ranges, or a suffix range on an empty representation: send the
    /// whole representation with 200.
    Full,
    /// Send these bytes with 206.
    Partial(ByteRange),
    /// The range lies outside the representation: 416 with `Content-Range: bytes */len`.
    Unsatisfiable,
    /// The header is broken: 400.
    Malformed(String),
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn trim_ows(s: &[u8]) -> &[u8] {
    let start = s
        .iter()
        .position(|b| *b != b' ' && *b != b'\t')
        .unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|b| *b != b' ' && *b != b'\t')
        .map_or(start, |e| e + 1);
    &s[start..end.max(start)]
}

/// Digits to a number; a number too large for `u64` saturates (it lies beyond any file, so it
/// means the same).
fn parse_digits(s: &[u8]) -> Option<u64> {
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s.iter().fold(0u64, |acc, d| {
        acc.saturating_mul(10).saturating_add(u64::from(d - b'0'))
    }))
}

fn parse_spec(s: &[u8]) -> Result<RangeSpec, RangeError> {
    let bad = |why: &str| RangeError(format!("`{}`: {why}", String::from_utf8_lossy(s)));
    let dash = s
        .iter()
        .position(|b| *b == b'-')
        .ok_or_else(|| bad("a range is first-last, first- or -suffix"))?;
    let (first, last) = (&s[..dash], &s[dash + 1..]);
    if first.is_empty() {
        let len = parse_digits(last).ok_or_else(|| bad("the suffix length must be digits"))?;
        return Ok(RangeSpec::Suffix { len });
    }
    let first = parse_digits(first).ok_or_else(|| bad("the first position must be digits"))?;
    if last.is_empty() {
        return Ok(RangeSpec::From { first });
    }
    let last = parse_digits(last).ok_or_else(|| bad("the last position must be digits"))?;
    if last < first {
        return Err(bad("the last position is before the first"));
    }
    Ok(RangeSpec::FromTo { first, last })
}

/// Parses a `Range` header value.
pub fn parse_range_header(value: &[u8]) -> Result<ParsedRange, RangeError> {
    let value = trim_ows(value);
    let eq = value
        .iter()
        .position(|b| *b == b'=')
        .ok_or_else(|| RangeError("expected `bytes=first-last`".into()))?;
    let (unit, set) = (&value[..eq], &value[eq + 1..]);
    if unit.is_empty() || !unit.iter().all(|b| is_tchar(*b)) {
        return Err(RangeError(
            "the range unit must be a token such as `bytes`".into(),
        ));
    }
    if !unit.eq_ignore_ascii_case(b"bytes") {
        // other-range = 1*( %x21-2B / %x2D-7E ), comma separated.
        let valid = set.split(|b| *b == b',').all(|part| {
            let p = trim_ows(part);
            !p.is_empty() && p.iter().all(|b| (0x21..=0x7e).contains(b) && *b != b',')
        });
        return if valid {
            Ok(ParsedRange::OtherUnit)
        } else {
            Err(RangeError("malformed range set in a non-byte unit".into()))
        };
    }
    let mut specs = Vec::new();
    for part in set.split(|b| *b == b',') {
        let part = trim_ows(part);
        // RFC 9110's list rule lets empty elements stand between commas; a list of only empty
        // elements is still an error.
        if part.is_empty() {
            continue;
        }
        if specs.len() == MAX_RANGE_SPECS {
            return Err(RangeError(format!("more than {MAX_RANGE_SPECS} ranges")));
        }
        specs.push(parse_spec(part)?);
    }
    if specs.is_empty() {
        return Err(RangeError("no range after `bytes=`".into()));
    }
    Ok(ParsedRange::Bytes(specs))
}

impl RangeSpec {
    /// The bytes this spec selects from a representation of `len` bytes, or `None` when it
    /// selects none. Selecting none is not always unsatisfiable: see [`RangeSpec::satisfiable`].
    pub fn resolve(self, len: u64) -> Option<ByteRange> {
        match self {
            RangeSpec::FromTo { first, last } => {
                (first < len).then(|| ByteRange::new(first, last.min(len - 1) - first + 1))
            }
            RangeSpec::From { first } => (first < len).then(|| ByteRange::new(first, len - first)),
            RangeSpec::Suffix { len: n } => {
                (n > 0 && len > 0).then(|| ByteRange::new(len - n.min(len), n.min(len)))
            }
        }
    }
}

impl RangeSpec {
    /// Whether this spec makes a range set satisfiable for a representation of `len` bytes (RFC
    /// 9110, section 14.1.1): a position range whose first byte lies inside it, or a suffix-range
    /// of non-zero length. The latter holds even when `len` is 0, where the spec selects the whole,
    /// empty representation, which cannot be written as a `Content-Range`: it is sent with 200.
    pub fn satisfiable(self, len: u64) -> bool {
        match self {
            RangeSpec::Suffix { len: n } => n > 0,
            _ => self.resolve(len).is_some(),
        }
    }
}

impl fmt::Display for RangeSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RangeSpec::FromTo { first, last } => write!(f, "{first}-{last}"),
            RangeSpec::From { first } => write!(f, "{first}-"),
            RangeSpec::Suffix { len } => write!(f, "-{len}"),
        }
    }
}

/// A `Range` header value for `specs` (`bytes=a-b, c-`).
pub fn format_range_header(specs: &[RangeSpec]) -> String {
    let parts: Vec<String> = specs.iter().map(ToString::to_string).collect();
    format!("bytes={}", parts.join(", "))
}

/// A `Range` header value asking for exactly `range` (which must not be empty).
pub fn range_header_for(range: ByteRange) -> String {
    format_range_header(&[RangeSpec::FromTo {
        first: range.start.0,
        last: range.end().0.saturating_sub(1).max(range.start.0),
    }])
}

/// What to answer for `header` (the raw `Range` value, if any) on a representation of `len`
/// bytes. See the module documentation for the choices.
pub fn decide(header: Option<&[u8]>, len: u64) -> RangeDecision {
    let Some(h) = header else {
        return RangeDecision::Full;
    };
    match parse_range_header(h) {
        Err(e) => RangeDecision::Malformed(e.0),
        Ok(ParsedRange::OtherUnit) => RangeDecision::Full,
        Ok(ParsedRange::Bytes(specs)) => {
            if !specs.iter().any(|s| s.satisfiable(len)) {
                return RangeDecision::Unsatisfiable;
            }
            if specs.len() > 1 {
                // Several ranges, at least one satisfiable: the whole body (200).
                return RangeDecision::Full;
            }
            // One satisfiable spec that selects no bytes is a suffix on an empty representation:
            // the whole (empty) body, with 200.
            specs[0]
                .resolve(len)
                .map_or(RangeDecision::Full, RangeDecision::Partial)
        }
    }
}

/// The `Content-Range` value of a 206 response.
pub fn content_range(range: ByteRange, len: u64) -> String {
    format!(
        "bytes {}-{}/{len}",
        range.start.0,
        range.end().0.saturating_sub(1)
    )
}

/// The `Content-Range` value of a 416 response.
pub fn unsatisfied_content_range(len: u64) -> String {
    format!("bytes */{len}")
}

/// Parses a 206 response's `Content-Range` (`bytes first-last/len` or `bytes first-last/*`):
/// the range and the complete length if given.
pub fn parse_content_range(value: &[u8]) -> Option<(ByteRange, Option<u64>)> {
    let v = trim_ows(value);
    let rest = v.strip_prefix(b"bytes ")?;
    let slash = rest.iter().position(|b| *b == b'/')?;
    let (span, total) = (&rest[..slash], &rest[slash + 1..]);
    let total = if total == b"*" {
        None
    } else {
        Some(parse_digits(total)?)
    };
    let dash = span.iter().position(|b| *b == b'-')?;
    let first = parse_digits(&span[..dash])?;
    let last = parse_digits(&span[dash + 1..])?;
    if last < first || total.is_some_and(|t| last >= t) || last == u64::MAX {
        return None;
    }
    Some((ByteRange::new(first, last - first + 1), total))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn d(h: &str, len: u64) -> RangeDecision {
        decide(Some(h.as_bytes()), len)
    }

    #[test]
    fn the_three_forms_resolve_against_the_length() {
        assert_eq!(
            d("bytes=0-99", 1000),
            RangeDecision::Partial(ByteRange::new(0, 100))
        );
        assert_eq!(
            d("bytes=990-2000", 1000),
            RangeDecision::Partial(ByteRange::new(990, 10))
        );
        assert_eq!(
            d("bytes=500-", 1000),
            RangeDecision::Partial(ByteRange::new(500, 500))
        );
        assert_eq!(
            d("bytes=-100", 1000),
            RangeDecision::Partial(ByteRange::new(900, 100))
        );
        assert_eq!(
            d("bytes=-5000", 1000),
            RangeDecision::Partial(ByteRange::new(0, 1000))
        );
        assert_eq!(
            d("BYTES = 1-1", 10),
            RangeDecision::Malformed("the range unit must be a token such as `bytes`".into())
        );
        assert_eq!(
            d("Bytes=1-1", 10),
            RangeDecision::Partial(ByteRange::new(1, 1))
        );
        assert_eq!(
            d(" bytes=1-2 ,", 10),
            RangeDecision::Partial(ByteRange::new(1, 2))
        );
        assert_eq!(decide(None, 10), RangeDecision::Full);
    }

    #[test]
    fn unsatisfiable_and_malformed_are_told_apart() {
        assert_eq!(d("bytes=1000-", 1000), RangeDecision::Unsatisfiable);
        assert_eq!(d("bytes=1000-1001", 1000), RangeDecision::Unsatisfiable);
        assert_eq!(d("bytes=-0", 1000), RangeDecision::Unsatisfiable);
        assert_eq!(d("bytes=0-0", 0), RangeDecision::Unsatisfiable);
        assert_eq!(
            d("bytes=99999999999999999999999-", 10),
            RangeDecision::Unsatisfiable
        );
        for bad in [
            "bytes=5-1",
            "bytes=",
            "bytes=a-b",
            "bytes=1",
            "bytes=--1",
            "bytes=1-2-3",
            "=1-2",
            "bytes",
            "bytes=,",
        ] {
            assert!(matches!(d(bad, 1000), RangeDecision::Malformed(_)), "{bad}");
        }
        assert_eq!(d("items=0-5", 1000), RangeDecision::Full);
        assert_eq!(d("bytes=0-1,5-6", 1000), RangeDecision::Full);
        assert_eq!(d("bytes=2000-,3000-", 1000), RangeDecision::Unsatisfiable);
        let many = format!("bytes={}", vec!["1-2"; MAX_RANGE_SPECS + 1].join(","));
        assert!(matches!(d(&many, 1000), RangeDecision::Malformed(_)));
    }

    #[test]
    fn a_suffix_range_on_an_empty_representation_selects_it_whole() {
        // RFC 9110, section 14.1.1: a set with a suffix-range of non-zero length is satisfiable,
        // even on an empty representation (which it selects entirely): 200, not 416.
        assert_eq!(d("bytes=-5", 0), RangeDecision::Full);
        assert_eq!(d("bytes=-1", 0), RangeDecision::Full);
        assert_eq!(d("bytes=0-0,-5", 0), RangeDecision::Full);
        assert_eq!(d("bytes=10-, -5", 0), RangeDecision::Full);
        // A zero-length suffix selects nothing, and byte positions lie past an empty body.
        assert_eq!(d("bytes=-0", 0), RangeDecision::Unsatisfiable);
        assert_eq!(d("bytes=0-0,-0", 0), RangeDecision::Unsatisfiable);
        assert_eq!(d("bytes=0-", 0), RangeDecision::Unsatisfiable);
    }

    #[test]
    fn content_range_round_trips() {
        let r = ByteRange::new(10, 90);
        assert_eq!(content_range(r, 1000), "bytes 10-99/1000");
        assert_eq!(
            parse_content_range(b"bytes 10-99/1000"),
            Some((r, Some(1000)))
        );
        assert_eq!(parse_content_range(b"bytes 10-99/*"), Some((r, None)));
        assert_eq!(parse_content_range(b"bytes 10-1000/1000"), None);
        assert_eq!(parse_content_range(b"bytes */1000"), None);
        assert_eq!(unsatisfied_content_range(7), "bytes */7");
        assert_eq!(range_header_for(r), "bytes=10-99");
    }

    proptest! {
        /// Any bytes at all: the parser returns, and whatever it accepts prints to a header that
        /// parses back to the same specs.
        #[test]
        fn never_panics_and_round_trips(raw in proptest::collection::vec(any::<u8>(), 0..64), len in 0u64..10_000) {
            if let Ok(ParsedRange::Bytes(specs)) = parse_range_header(&raw) {
                let again = parse_range_header(format_range_header(&specs).as_bytes());
                prop_assert_eq!(again, Ok(ParsedRange::Bytes(specs.clone())));
                for s in specs {
                    if let Some(r) = s.resolve(len) {
                        prop_assert!(r.len.0 > 0 && r.end().0 <= len);
                    }
                }
            }
            let _ = decide(Some(&raw), len);
            let _ = parse_content_range(&raw);
        }

        /// Near-misses of the grammar (its own characters, shuffled) exercise the refusals.
        #[test]
        fn grammar_like_noise_never_panics(raw in "[bBytes= ,\t0-9-]{0,40}", len in 0u64..1 << 40) {
            match decide(Some(raw.as_bytes()), len) {
                RangeDecision::Partial(r) => prop_assert!(r.len.0 > 0 && r.end().0 <= len),
                RangeDecision::Full | RangeDecision::Unsatisfiable | RangeDecision::Malformed(_) => {}
            }
        }

        /// Headers built from the grammar parse to what built them.
        #[test]
        fn generated_headers_parse(specs in proptest::collection::vec(
            prop_oneof![
                (0u64..1 << 40, 0u64..1 << 20).prop_map(|(f, n)| RangeSpec::FromTo { first: f, last: f + n }),
                (0u64..1 << 40).prop_map(|f| RangeSpec::From { first: f }),
                (0u64..1 << 40).prop_map(|n| RangeSpec::Suffix { len: n }),
            ], 1..8)) {
            let h = format_range_header(&specs);
            prop_assert_eq!(parse_range_header(h.as_bytes()), Ok(ParsedRange::Bytes(specs)));
        }
    }
}
