//! Parsing of the human units that configs and command lines use.
//!
//! Sizes take binary units (`4KiB`, `128KiB`, `1MiB`, `2GiB`, `1TiB`, `1PiB`, `1EiB`; `K` to `E`
//! alone mean the same), decimal units (`10kB`, `10MB`, `6GB`, `1TB`, `1PB`, `1EB`) and plain bytes
//! (`4096` or `4096B`), up to 4 EiB; fractions are allowed where they make whole bytes
//! (`1.5MiB`). Durations take `ns`, `us` (or `µs`), `ms`, `s`, `min` and `h` (`250us`,
//! `1.92ms`, `60s`, `2h`). Rates take bits (`1Gbit`, `100Mbit/s`) or bytes per second (`450MB/s`,
//! `50MiB/s`; `B`, `kB` to `EB`, `KiB` to `EiB`). Every error says what was wrong and which forms
//! are accepted, so the caller only has to add the key or file it came from.

use thiserror::Error;

use crate::excerpt::excerpt;

use crate::time::Duration;
use crate::units::{Bandwidth, ByteLen};

/// Why a unit string did not parse.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// The text had no number in front.
    #[error("`{text}` has no number; write e.g. {eg}", text = excerpt(.0), eg = .1)]
    NoNumber(String, &'static str),
    /// The unit is not one we know.
    #[error(
        "`{text}` has unknown unit `{unit}`; write e.g. {eg}",
        text = excerpt(.0),
        unit = excerpt(.1),
        eg = .2
    )]
    BadUnit(String, String, &'static str),
    /// A number with no unit where one is needed (a duration or a rate: a bare `450` could be
    /// bits, bytes or mebibytes per second).
    #[error("`{text}` has no unit; write e.g. {eg}", text = excerpt(.0), eg = .1)]
    NoUnit(String, &'static str),
    /// Negative, not finite, too large, or not a whole number of the base unit.
    #[error("`{text}` is out of range: {why}", text = excerpt(.0), why = .1)]
    OutOfRange(String, &'static str),
    /// The number is written with an exponent (`1e6`), which these units do not take.
    #[error(
        "`{text}` uses an exponent, which is not read; write e.g. {eg}",
        text = excerpt(.0),
        eg = .1
    )]
    Exponent(String, &'static str),
}

const SIZE_EXAMPLES: &str = "`4096`, `4KiB`, `128KiB`, `1MiB`, `2GiB`, `10MB`";
const DURATION_EXAMPLES: &str =
    "`250us`, `1.92ms`, `60s`, `2min`, `2h` (units: `ns`, `us`, `ms`, `s`, `min`, `h`)";
const RATE_EXAMPLES: &str = "`1Gbit`, `100Mbit/s`, `450MB/s`, `50MiB/s`";

fn split_number(text: &str) -> (&str, &str) {
    let t = text.trim();
    let end = t
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || *c == '.' || *c == '_'))
        .map(|(i, _)| i)
        .unwrap_or(t.len());
    (&t[..end], t[end..].trim())
}

/// A leading minus sign would otherwise read as "no number", which sends the user looking for a
/// typo rather than at the sign. Only a minus before a number counts: `--json`, a flag taken for
/// a missing value, has no number.
fn refuse_negative(text: &str) -> Result<(), ParseError> {
    let mut chars = text.trim_start().chars();
    if chars.next() == Some('-') && chars.next().is_some_and(|c| c.is_ascii_digit() || c == '.') {
        return Err(ParseError::OutOfRange(
            text.to_string(),
            "it must not be negative",
        ));
    }
    Ok(())
}

/// `1e6` splits into the number 1 and the "unit" `e6`; saying the unit is unknown would send the
/// user looking for a typo in a unit they never meant to write.
fn refuse_exponent(text: &str, unit: &str, examples: &'static str) -> Result<(), ParseError> {
    let mut chars = unit.chars();
    let is_exponent = matches!(chars.next(), Some('e' | 'E'))
        && match chars.next() {
            Some('+' | '-') => chars.next().is_some_and(|c| c.is_ascii_digit()),
            Some(c) => c.is_ascii_digit(),
            None => false,
        };
    if is_exponent {
        return Err(ParseError::Exponent(text.to_string(), examples));
    }
    Ok(())
}

fn number(text: &str, examples: &'static str) -> Result<(f64, String), ParseError> {
    refuse_negative(text)?;
    let (num, unit) = split_number(text);
    refuse_exponent(text, unit, examples)?;
    let cleaned: String = num.chars().filter(|c| *c != '_').collect();
    if cleaned.is_empty() || cleaned == "." {
        return Err(ParseError::NoNumber(text.to_string(), examples));
    }
    let value: f64 = cleaned
        .parse()
        .map_err(|_| ParseError::NoNumber(text.to_string(), examples))?;
    Ok((value, unit.to_string()))
}

/// The number in front of `text` as an exact decimal `(digits, places)`: `4.1` is `(41, 1)`. Sizes
/// and durations are computed from it in integers, because in f64 `4.1 * 10^6` is not 4,100,000
/// and integers above 2^53 lose their low bits.
fn decimal(text: &str, examples: &'static str) -> Result<((u128, u32), String), ParseError> {
    refuse_negative(text)?;
    let (num, unit) = split_number(text);
    refuse_exponent(text, unit, examples)?;
    let cleaned: String = num.chars().filter(|c| *c != '_').collect();
    let (int, frac) = cleaned.split_once('.').unwrap_or((&cleaned, ""));
    if (int.is_empty() && frac.is_empty()) || frac.contains('.') {
        return Err(ParseError::NoNumber(text.to_string(), examples));
    }
    // 36 digits fit a u128 (10^36 < 2^120), as does 10^places for as many places.
    if int.len() + frac.len() > 36 {
        return Err(ParseError::OutOfRange(text.to_string(), "too many digits"));
    }
    let digits: u128 = format!("{int}{frac}")
        .parse()
        .map_err(|_| ParseError::NoNumber(text.to_string(), examples))?;
    Ok(((digits, frac.len() as u32), unit.to_string()))
}

/// The largest size taken, 4 EiB: sums and products of sizes elsewhere keep room below 2^64.
const SIZE_MAX_BYTES: u128 = 1 << 62;

/// Parses a size into bytes.
pub fn parse_size(text: &str) -> Result<ByteLen, ParseError> {
    let ((digits, places), unit) = decimal(text, SIZE_EXAMPLES)?;
    let mult: u128 = match unit.as_str() {
        "" | "B" | "b" => 1,
        "KiB" | "K" | "k" => 1 << 10,
        "MiB" | "M" => 1 << 20,
        "GiB" | "G" => 1 << 30,
        "TiB" | "T" => 1 << 40,
        "PiB" | "P" => 1 << 50,
        "EiB" | "E" => 1 << 60,
        "kB" | "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "TB" => 1_000_000_000_000,
        "PB" => 1_000_000_000_000_000,
        "EB" => 1_000_000_000_000_000_000,
        _ => return Err(ParseError::BadUnit(text.to_string(), unit, SIZE_EXAMPLES)),
    };
    // digits x mult / 10^places, with the common factors of mult and 10^places taken out first:
    // the plain product overflows a u128 for 36 digits of a large unit, and a saturated product
    // then refused an exact `1.000...TiB` as not a whole number of bytes.
    // With no factor left in common, the bytes are whole exactly when `unit_scale` divides
    // `digits`; otherwise they lie between `whole_part x mult` and the next multiple of `mult`.
    let unit_scale = 10u128.pow(places);
    let common = gcd(mult, unit_scale);
    let (mult, unit_scale) = (mult / common, unit_scale / common);
    let whole = digits % unit_scale == 0;
    match (digits / unit_scale).checked_mul(mult) {
        Some(bytes) if whole && bytes <= SIZE_MAX_BYTES => Ok(ByteLen(bytes as u64)),
        Some(bytes) if bytes < SIZE_MAX_BYTES => Err(ParseError::OutOfRange(
            text.to_string(),
            "a size must be a whole number of bytes",
        )),
        _ => Err(ParseError::OutOfRange(
            text.to_string(),
            "too large; sizes must be at most 4EiB",
        )),
    }
}

/// Greatest common divisor (Euclid).
fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Parses a duration.
pub fn parse_duration(text: &str) -> Result<Duration, ParseError> {
    let ((digits, places), unit) = decimal(text, DURATION_EXAMPLES)?;
    let ns_per: u128 = match unit.as_str() {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "" => return Err(ParseError::NoUnit(text.to_string(), DURATION_EXAMPLES)),
        _ => {
            return Err(ParseError::BadUnit(
                text.to_string(),
                unit,
                DURATION_EXAMPLES,
            ))
        }
    };
    // To the nearest nanosecond.
    let unit_scale = 10u128.pow(places);
    let ns = digits
        .checked_mul(ns_per)
        .and_then(|v| v.checked_add(unit_scale / 2))
        .map_or(u128::MAX, |v| v / unit_scale);
    if ns > 1_000_000_000_000_000_000 {
        return Err(ParseError::OutOfRange(
            text.to_string(),
            "durations must be below 30 years",
        ));
    }
    Ok(Duration(ns as u64))
}

/// Parses a data rate.
pub fn parse_rate(text: &str) -> Result<Bandwidth, ParseError> {
    let (value, unit) = number(text, RATE_EXAMPLES)?;
    let unit = unit.strip_suffix("/s").unwrap_or(&unit).to_string();
    let bytes_per_s = match unit.as_str() {
        "bit" => value / 8.0,
        "kbit" | "Kbit" => value * 1e3 / 8.0,
        "Mbit" => value * 1e6 / 8.0,
        "Gbit" => value * 1e9 / 8.0,
        "B" => value,
        "kB" | "KB" => value * 1e3,
        "MB" => value * 1e6,
        "GB" => value * 1e9,
        "TB" => value * 1e12,
        "PB" => value * 1e15,
        "EB" => value * 1e18,
        "KiB" => value * 1024.0,
        "MiB" => value * 1_048_576.0,
        "GiB" => value * 1_073_741_824.0,
        "TiB" => value * (1u64 << 40) as f64,
        "PiB" => value * (1u64 << 50) as f64,
        "EiB" => value * (1u64 << 60) as f64,
        "" => return Err(ParseError::NoUnit(text.to_string(), RATE_EXAMPLES)),
        _ => return Err(ParseError::BadUnit(text.to_string(), unit, RATE_EXAMPLES)),
    };
    if !(bytes_per_s.is_finite() && bytes_per_s > 0.0) {
        return Err(ParseError::OutOfRange(
            text.to_string(),
            "a rate must be positive",
        ));
    }
    // The bound sizes have, per second: no link or device comes near it, and a figure past it
    // (a slip of digits) would otherwise be published or planned with as though it were real.
    if bytes_per_s >= (1u64 << 62) as f64 {
        return Err(ParseError::OutOfRange(
            text.to_string(),
            "too large; rates must be below 4EiB/s",
        ));
    }
    Ok(Bandwidth::from_bytes_per_s(bytes_per_s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The bound a size or rate refusal states is written as the parser reads it, so the user
    /// can give it back: the size bound itself is taken, and a rate just under the rate bound.
    #[test]
    fn the_bound_of_a_refused_size_or_rate_can_be_given_back() {
        let bound = |e: ParseError| {
            let text = e.to_string();
            let after = text
                .split_once("at most ")
                .or_else(|| text.split_once("below "))
                .unwrap_or_else(|| panic!("no bound in {text}"))
                .1;
            after.split_whitespace().next().unwrap().to_string()
        };
        let size = bound(parse_size("99999999999999999999TiB").unwrap_err());
        assert_eq!(parse_size(&size).map(|b| b.0), Ok(1 << 62), "{size}");
        let rate = bound(parse_rate("99999999999999999999999MB/s").unwrap_err());
        let below = parse_rate(&rate);
        assert!(
            matches!(below, Err(ParseError::OutOfRange(..))),
            "{rate}: {below:?}"
        );
        let just_under = rate.replace("4EiB", "3.99EiB");
        assert!(parse_rate(&just_under).is_ok(), "{just_under}");
    }
    use proptest::test_runner::TestCaseError;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4KiB").unwrap(), ByteLen(4096));
        assert_eq!(parse_size("128KiB").unwrap(), ByteLen(131072));
        assert_eq!(parse_size("1MiB").unwrap(), ByteLen(1 << 20));
        assert_eq!(parse_size("2GiB").unwrap(), ByteLen(2 << 30));
        assert_eq!(parse_size("10MB").unwrap(), ByteLen(10_000_000));
        assert_eq!(parse_size("6GB").unwrap(), ByteLen(6_000_000_000));
        assert_eq!(parse_size("4096").unwrap(), ByteLen(4096));
        assert_eq!(parse_size(" 1.5MiB ").unwrap(), ByteLen(3 << 19));
        assert!(matches!(
            parse_size("12 parsecs"),
            Err(ParseError::BadUnit(..))
        ));
        assert!(matches!(parse_size("KiB"), Err(ParseError::NoNumber(..))));
        let negative = parse_size("-4KiB").unwrap_err();
        assert!(matches!(negative, ParseError::OutOfRange(..)));
        assert!(negative.to_string().contains("must not be negative"));
        assert!(matches!(
            parse_duration(" -1ms"),
            Err(ParseError::OutOfRange(..))
        ));
        assert!(matches!(
            parse_rate("-1Gbit"),
            Err(ParseError::OutOfRange(..))
        ));
        // Digits past any real rate used to be taken (and `foresight serve` published them).
        let huge = parse_rate("99999999999999999999999MB/s").unwrap_err();
        assert!(huge.to_string().contains("below 4EiB/s"), "{huge}");
        assert!(parse_rate("4000000000000GB/s").is_err());
        assert!(parse_rate("4000000000GB/s").is_ok());
        assert!(matches!(
            parse_size("--json"),
            Err(ParseError::NoNumber(..))
        ));
        assert!(matches!(parse_size("0.3"), Err(ParseError::OutOfRange(..))));
        // Exact decimals: in f64 4.1 x 10^6 is 4,099,999.9999999995, and 2^53 + 1 rounds to 2^53.
        assert_eq!(parse_size("4.1MB").unwrap(), ByteLen(4_100_000));
        assert_eq!(parse_size("4.1GB").unwrap(), ByteLen(4_100_000_000));
        assert_eq!(
            parse_size("9007199254740993").unwrap(),
            ByteLen(9_007_199_254_740_993)
        );
        assert_eq!(parse_size("1_024").unwrap(), ByteLen(1024));
        assert!(matches!(parse_size("1.2.3"), Err(ParseError::NoNumber(..))));
        assert!(matches!(parse_size("."), Err(ParseError::NoNumber(..))));
        assert!(matches!(
            parse_size("99999999999999999999999999999999999999"),
            Err(ParseError::OutOfRange(..))
        ));
        assert!(matches!(
            parse_size("999999999999999999999999999999999999TiB"),
            Err(ParseError::OutOfRange(..))
        ));
        assert!(matches!(
            parse_duration("999999999999999999999999999999999999min"),
            Err(ParseError::OutOfRange(..))
        ));
    }

    /// Sizes go on past TiB to PiB and EiB (and PB and EB), the units the bound of a refusal
    /// is given in: `1PiB` and `1EiB` were refused as unknown units while `20EiB` was told it was
    /// past "(4 EiB)". Rates take the same byte units.
    #[test]
    fn sizes_and_rates_take_units_up_to_exbibytes() {
        for (text, bytes) in [
            ("1PiB", 1u64 << 50),
            ("3P", 3 << 50),
            ("1EiB", 1 << 60),
            ("1E", 1 << 60),
            ("4EiB", 1 << 62),
            ("0.5EiB", 1 << 59),
            ("2PB", 2_000_000_000_000_000),
            ("1.5EB", 1_500_000_000_000_000_000),
            ("4194304TiB", 1 << 62),
        ] {
            assert_eq!(parse_size(text), Ok(ByteLen(bytes)), "{text}");
        }
        for text in [
            "20EiB",
            "4.000000001EiB",
            "5EB",
            "99999999999999999999999EiB",
        ] {
            let e = parse_size(text).unwrap_err();
            assert!(matches!(e, ParseError::OutOfRange(..)), "{text}: {e}");
            assert!(e.to_string().contains("too large"), "{text}: {e}");
        }
        assert_eq!(
            parse_rate("1TiB/s").unwrap().bytes_per_s,
            (1u64 << 40) as f64
        );
        assert_eq!(parse_rate("2PB/s").unwrap().bytes_per_s, 2e15);
        assert_eq!(
            parse_rate("3EiB/s").unwrap().bytes_per_s,
            (3u64 << 60) as f64
        );
        let e = parse_rate("4EiB/s").unwrap_err();
        assert!(e.to_string().contains("too large"), "{e}");
    }

    /// A number with many places is exact however large the unit: one TiB written with 35
    /// zeros after the point was refused as "not a whole number of bytes", its product with the
    /// unit having overflowed before the division.
    #[test]
    fn many_places_do_not_overflow_into_a_wrong_refusal() {
        let zeros = "0".repeat(35);
        assert_eq!(parse_size(&format!("1.{zeros}TiB")), Ok(ByteLen(1 << 40)));
        assert_eq!(parse_size(&format!("1.{zeros}EiB")), Ok(ByteLen(1 << 60)));
        assert_eq!(
            parse_size(&format!("0.{zeros}1EiB"))
                .map_err(|e| matches!(e, ParseError::OutOfRange(..))),
            Err(true)
        );
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250us").unwrap(), Duration(250_000));
        assert_eq!(parse_duration("1.92ms").unwrap(), Duration(1_920_000));
        assert_eq!(parse_duration("60s").unwrap(), Duration::from_secs(60));
        assert!(parse_duration("60").is_err());
        assert!(parse_duration("1e400s").is_err());
    }

    /// Every duration unit from a nanosecond to an hour is taken: `2h` was refused as an unknown
    /// unit while `120min` ran, and the refusal named none of the units that are taken.
    #[test]
    fn durations_take_every_unit_up_to_hours_and_a_refusal_lists_them() {
        for (text, ns) in [
            ("7ns", 7),
            ("7us", 7_000),
            ("7µs", 7_000),
            ("7ms", 7_000_000),
            ("7s", 7_000_000_000),
            ("7min", 420_000_000_000),
            ("2h", 7_200_000_000_000),
            ("0.5h", 1_800_000_000_000),
        ] {
            assert_eq!(parse_duration(text), Ok(Duration(ns)), "{text}");
        }
        assert_eq!(parse_duration("2h"), parse_duration("120min"));
        let refused = parse_duration("2hours").unwrap_err().to_string();
        for unit in ["ns", "us", "ms", "s", "min", "h"] {
            assert!(refused.contains(&format!("`{unit}`")), "{unit}: {refused}");
        }
        // Past the bound, and past a u128 once multiplied by an hour's nanoseconds: refused, not
        // wrapped.
        for text in [
            "300000h",
            "99999999999999999999999999999h",
            "999999999999999999999999999999999999h",
        ] {
            assert!(
                matches!(parse_duration(text), Err(ParseError::OutOfRange(..))),
                "{text}: {:?}",
                parse_duration(text)
            );
        }
        assert!(matches!(
            parse_duration("1e30h"),
            Err(ParseError::Exponent(..))
        ));
    }

    #[test]
    fn an_exponent_is_refused_as_an_exponent_not_as_a_unit() {
        // `1e400bit` was refused as "unknown unit `e400bit`".
        for text in ["1e400bit", "2E6", "1.5e+3MiB", "3e-3s"] {
            let e = [
                parse_rate(text).err(),
                parse_size(text).err(),
                parse_duration(text).err(),
            ];
            for err in e.into_iter().flatten() {
                assert!(matches!(err, ParseError::Exponent(..)), "{text}: {err}");
                assert!(err.to_string().contains("exponent"), "{err}");
            }
        }
        // A unit that only starts with `e` is still a bad unit.
        assert!(matches!(parse_size("4eggs"), Err(ParseError::BadUnit(..))));
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("1Gbit").unwrap().bytes_per_s, 125e6);
        assert_eq!(parse_rate("450MB/s").unwrap().bytes_per_s, 450e6);
        assert_eq!(parse_rate("1MiB/s").unwrap().bytes_per_s, 1_048_576.0);
        assert!(parse_rate("0Gbit").is_err());
        assert!(parse_rate("fast").is_err());
    }

    #[test]
    fn a_number_without_its_unit_is_refused_as_such() {
        // `--bandwidth 10` was refused as "`10` has unknown unit ``", naming an empty unit.
        for (text, e) in [
            ("10", parse_rate("10").err()),
            (" 450 ", parse_rate(" 450 ").err()),
            ("1.5/s", parse_rate("1.5/s").err()),
            ("60", parse_duration("60").err()),
        ] {
            let e = e.unwrap_or_else(|| panic!("{text:?} parsed"));
            assert!(matches!(e, ParseError::NoUnit(..)), "{text:?}: {e}");
            let message = e.to_string();
            assert!(message.contains("has no unit; write e.g."), "{message}");
            assert!(
                !message.contains("``") && !message.contains("(none)"),
                "{message}"
            );
        }
        assert_eq!(parse_size("10").unwrap(), ByteLen(10));
    }

    /// Texts every parser of this module accepts or refuses, seeds for [`edited`].
    const VALID: &[&str] = &[
        "4096",
        "128KiB",
        "1.5MiB",
        "6GB",
        "1_024B",
        "3PiB",
        "2.5EB",
        "250us",
        "1.92ms",
        "60s",
        "2min",
        "1Gbit",
        "100Mbit/s",
        "450MB/s",
        "50MiB/s",
    ];

    /// One of `valid` with one edit at a random place: a byte flipped, the text cut there, a
    /// 40-digit number or a random byte spliced in (a byte that breaks UTF-8 shows as U+FFFD,
    /// as text read from a file would).
    fn edited(valid: &'static [&'static str]) -> impl Strategy<Value = String> {
        (
            prop::sample::select(valid),
            any::<prop::sample::Index>(),
            any::<u8>(),
            0u8..4,
        )
            .prop_map(|(text, at, byte, edit)| {
                let mut b = text.as_bytes().to_vec();
                let i = at.index(b.len() + 1);
                match edit {
                    0 if i < b.len() => b[i] ^= byte.max(1),
                    0 | 1 => b.truncate(i),
                    2 => drop(b.splice(i..i, *b"9999999999999999999999999999999999999999")),
                    _ => b.insert(i, byte),
                }
                String::from_utf8_lossy(&b).into_owned()
            })
    }

    /// Runs every parser on `text`: an accepted size prints back to itself, and a refusal shows
    /// the text as written and either the accepted forms or why the value is out of range.
    fn check_outcome(text: &str) -> Result<(), TestCaseError> {
        let errors = [
            parse_size(text).map(|s| {
                if s.0 <= 1 << 62 {
                    assert_eq!(parse_size(&s.to_string()), Ok(s), "{text:?} printed as {s}");
                }
            }),
            parse_duration(text).map(drop),
            parse_rate(text).map(|r| assert!(r.bytes_per_s > 0.0 && r.bytes_per_s.is_finite())),
        ];
        for e in errors.into_iter().filter_map(Result::err) {
            let message = e.to_string();
            prop_assert!(message.contains(&format!("`{text}`")), "{message}");
            prop_assert!(
                message.contains("write e.g.") || message.contains("out of range: "),
                "{message}"
            );
        }
        Ok(())
    }

    proptest! {
        #[test]
        fn random_text_never_panics(s in "\\PC{0,24}") {
            check_outcome(&s)?;
        }

        #[test]
        fn long_numbers_never_panic(s in "[0-9._]{0,45}(B|KiB|TiB|PiB|EiB|MB|PB|EB|ns|s|min)?") {
            check_outcome(&s)?;
        }

        #[test]
        fn decimal_sizes_are_exact(whole in 0u64..1_000_000_000, milli in 0u64..1000) {
            let text = format!("{whole}.{milli:03}MB");
            prop_assert_eq!(parse_size(&text).unwrap().0, whole * 1_000_000 + milli * 1_000);
        }

        /// Valid texts with one edit (a byte flipped, the text cut short, a huge number or a
        /// stray byte spliced in): each parser accepts the result or refuses it with a message
        /// that shows the text as written and says what to write instead.
        #[test]
        fn edited_valid_texts_parse_or_say_what_to_write(text in edited(VALID)) {
            check_outcome(&text)?;
        }

        /// Any size that parses prints as a size that parses back to the same number of bytes,
        /// and a duration prints to within its printed precision (three decimals of its unit).
        #[test]
        fn printed_sizes_and_durations_parse_back(bytes in 0u64..1 << 62, ns in 0u64..1_000_000_000_000_000_000) {
            let size = ByteLen(bytes);
            prop_assert_eq!(parse_size(&size.to_string()), Ok(size));
            let d = Duration(ns);
            let again = parse_duration(&d.to_string()).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert!(again.0.abs_diff(ns) <= ns / 1000 + 1, "{} read back as {}", d, again.0);
        }

        /// Any length's message form, when it does not say "about", is exact: the parser reads
        /// it back as the same number of bytes, or, past the 4 EiB the parser takes, refuses it
        /// as too large rather than reading another number. Lengths with many low zero bits
        /// are drawn as often as any, since those are the ones with short exact forms.
        #[test]
        fn exact_message_sizes_parse_back(bytes in prop_oneof![
            any::<u64>(),
            (any::<u64>(), 0u32..64).prop_map(|(m, shift)| m >> shift << shift),
            (any::<u16>(), 0u32..49).prop_map(|(m, shift)| u64::from(m) << shift),
        ]) {
            let text = ByteLen(bytes).rounded();
            if text.starts_with("about ") {
                return Ok(());
            }
            let back = parse_size(&text);
            if bytes <= 1 << 62 {
                prop_assert_eq!(back, Ok(ByteLen(bytes)), "{} printed as {}", bytes, text);
            } else {
                let refused = back.map_err(|e| e.to_string()).expect_err("past 4EiB");
                prop_assert!(refused.contains("too large"), "{}: {}", text, refused);
            }
        }

        #[test]
        fn binary_sizes_round_trip(n in 0u64..1_000_000, unit in 0usize..5) {
            let names = ["B", "KiB", "MiB", "GiB", "TiB"];
            let text = format!("{n}{}", names[unit]);
            prop_assert_eq!(parse_size(&text).unwrap().0, n << (10 * unit as u32));
        }
    }
}
