//! How many readahead units to keep in flight: `alpha` from condition 20 of paper
//! 004_80004320b985afc3.txt.
//!
//! A stream keeps the server's device busy when the `alpha + 1` units in flight take at least as long
//! to read as one round trip takes (condition 9, section 4.1). With the time to read one unit
//! estimated from the device's average bandwidth `RB` and its peak ratio `p` as
//! `max_ra_sz / (RB * (1 + p))` (condition 10), and the round trip measured as the client's
//! request-to-reply time less the server's processing time (section 6.2), `alpha` is the smallest
//! integer at least `rtt / read_time - 1` (condition 20). The paper sets `p = 1.2` for every device
//! (section 7.1), which [`DEFAULT_PEAK_RATIO`] keeps.
//!
//! The paper's network (10 GbE) is faster than its devices. Where the path between client and
//! server is the slower of the two, the data cannot arrive faster than the path carries it, so
//! [`DeviceFigures::bottleneck`] lowers `RB` to the measured path rate before condition 20 is
//! applied; otherwise a fast server (a page cache) behind a slow link would get a needlessly large
//! `alpha`, which holds memory and wastes bytes on random reads without making the stream faster.

use std::fmt;
use std::str::FromStr;

use foresight_core::{Bandwidth, ByteLen, Duration};

use crate::PolicyError;

/// The peak-to-average ratio `p` paper 004 uses for every device (section 7.1).
pub const DEFAULT_PEAK_RATIO: f64 = 1.2;

/// The "adaptive prefetching information" a storage server publishes about its device (paper 004,
/// section 6.2): the largest readahead unit, the average read bandwidth `RB` and the peak ratio `p`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DeviceFigures {
    /// `max_ra_sz`: the largest readahead unit the device is read in.
    pub max_readahead: ByteLen,
    /// `RB`: the device's average read bandwidth.
    pub avg_bandwidth: Bandwidth,
    /// `p`: the ratio of the device's peak read performance to `RB`; paper 004 requires `p >= 1`.
    pub peak_ratio: f64,
}

impl DeviceFigures {
    /// Checked figures: `max_readahead > 0`, `avg_bandwidth` positive and finite, `peak_ratio` finite
    /// and at least 1 (condition 20's side condition), and the peak rate `RB * (1 + p)` finite
    /// (figures read from a server may be finite each and overflow together).
    pub fn new(
        max_readahead: ByteLen,
        avg_bandwidth: Bandwidth,
        peak_ratio: f64,
    ) -> Result<DeviceFigures, PolicyError> {
        if max_readahead.0 == 0 {
            return Err(PolicyError::BadSetting {
                key: "max_readahead",
                message: "must be at least one byte, e.g. 1MiB".into(),
            });
        }
        let bps = avg_bandwidth.bytes_per_s;
        if !(bps.is_finite() && bps > 0.0) {
            return Err(PolicyError::BadSetting {
                key: "avg_bandwidth",
                message: format!("must be a positive rate such as 450MB/s, got {bps} bytes/s"),
            });
        }
        if !(peak_ratio.is_finite() && peak_ratio >= 1.0) {
            return Err(PolicyError::BadSetting {
                key: "peak_ratio",
                message: format!(
                    "must be a number >= 1 (paper 004 uses {DEFAULT_PEAK_RATIO}), got {peak_ratio}"
                ),
            });
        }
        let peak = bps * (1.0 + peak_ratio);
        if !peak.is_finite() {
            return Err(PolicyError::BadSetting {
                key: "avg_bandwidth",
                message: format!(
                    "{bps} bytes/s at a peak ratio of {peak_ratio} is a peak rate beyond any \
                     number; give a real device's rate such as 450MB/s"
                ),
            });
        }
        Ok(DeviceFigures {
            max_readahead,
            avg_bandwidth,
            peak_ratio,
        })
    }

    /// The estimated time to read `unit` bytes from the device, `unit / (RB * (1 + p))` (paper 004,
    /// condition 10's denominator). A peak rate too large for a float (figures built without
    /// [`DeviceFigures::new`]) takes no time, an infinitely fast device; one that is not a positive
    /// number at all takes forever.
    pub fn unit_read_time(&self, unit: ByteLen) -> Duration {
        let peak = self.avg_bandwidth.bytes_per_s * (1.0 + self.peak_ratio);
        if peak == f64::INFINITY {
            return Duration(0);
        }
        if peak.is_nan() || peak <= 0.0 {
            return Duration(u64::MAX);
        }
        Bandwidth::from_bytes_per_s(peak).time_for(unit)
    }

    /// The same figures with `RB` lowered to `path_rate` when the path delivers less than the
    /// device reads (see the module documentation). A missing or non-positive rate changes nothing.
    pub fn bottleneck(self, path_rate: Option<Bandwidth>) -> DeviceFigures {
        match path_rate {
            Some(r)
                if r.bytes_per_s.is_finite()
                    && r.bytes_per_s > 0.0
                    && r.bytes_per_s < self.avg_bandwidth.bytes_per_s =>
            {
                DeviceFigures {
                    avg_bandwidth: r,
                    ..self
                }
            }
            _ => self,
        }
    }

    /// `alpha` for a stream reading in units of `max_readahead` over a path with round trip `rtt`
    /// (condition 20), at most `max_alpha`.
    pub fn alpha(&self, rtt: Duration, max_alpha: u32) -> u32 {
        self.alpha_in_units(rtt, self.max_readahead, max_alpha)
    }

    /// `alpha` for units of `unit` bytes (condition 20), at most `max_alpha`. The unit's read
    /// time is not rounded to a nanosecond first: rounded down, it made a round trip of exactly
    /// `k` reads look like more than `k`, and `alpha` one more than the condition asks for.
    pub fn alpha_in_units(&self, rtt: Duration, unit: ByteLen, max_alpha: u32) -> u32 {
        let max_alpha = max_alpha.max(1);
        let peak = self.avg_bandwidth.bytes_per_s * (1.0 + self.peak_ratio);
        // As `unit_read_time`: an infinitely fast device, or one that never reads.
        if peak == f64::INFINITY || unit.0 == 0 {
            return max_alpha;
        }
        if peak.is_nan() || peak <= 0.0 {
            return 1;
        }
        // rtt / (unit / peak): how many unit reads one round trip lasts.
        let reads = rtt.as_nanos() as f64 * peak / (unit.0 as f64 * 1e9);
        // Decimal figures (p = 1.2) are inexact in binary, so a ratio within 1e-12 of a whole
        // number is taken as that number: float noise is near 1e-15, and a nanosecond is 1e-12
        // of a round trip only past 1,000 s.
        let whole = reads.round();
        let reads_up = if (reads - whole).abs() <= whole.max(1.0) * 1e-12 {
            whole
        } else {
            reads.ceil()
        };
        let needed = reads_up - 1.0;
        if needed >= f64::from(max_alpha) {
            max_alpha
        } else {
            needed.max(1.0) as u32
        }
    }
}

/// Condition 20 of paper 004: the smallest integer `alpha` with `rtt / unit_read_time - 1 <= alpha`,
/// at least 1 (the paper's `alpha >= 1`, condition 10) and at most `max_alpha` (the memory the
/// client may hold in flight). A zero read time (an infinitely fast device) gives `max_alpha`.
pub fn alpha_for(rtt: Duration, unit_read_time: Duration, max_alpha: u32) -> u32 {
    let max_alpha = max_alpha.max(1);
    let read_ns = unit_read_time.as_nanos();
    if read_ns == 0 {
        return max_alpha;
    }
    // ceil(rtt / read - 1) = ceil(rtt / read) - 1, in integers so that an exact ratio is not
    // pushed up by rounding.
    let needed = rtt.as_nanos().div_ceil(read_ns).saturating_sub(1);
    needed.clamp(1, u64::from(max_alpha)) as u32
}

/// How the client chooses `alpha`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum AlphaMode {
    /// From condition 20, re-evaluated as round-trip and rate samples arrive.
    #[default]
    Auto,
    /// A fixed number of readahead units in flight (`1` is the classic single async readahead).
    Fixed(u32),
}

impl FromStr for AlphaMode {
    type Err = String;

    /// `auto` or a whole number from 1 to 1024.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let t = text.trim();
        if t.eq_ignore_ascii_case("auto") {
            return Ok(AlphaMode::Auto);
        }
        match t.parse::<u32>() {
            Ok(n) if (1..=1024).contains(&n) => Ok(AlphaMode::Fixed(n)),
            _ => Err(format!(
                "alpha must be `auto` or a whole number from 1 to 1024, got `{text}`"
            )),
        }
    }
}

impl fmt::Display for AlphaMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AlphaMode::Auto => f.write_str("auto"),
            AlphaMode::Fixed(n) => write!(f, "{n}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alpha_is_the_smallest_integer_meeting_condition_20() {
        let read = Duration::from_millis(2);
        // rtt / read - 1 = 4 exactly: alpha = 4, not 5.
        assert_eq!(alpha_for(Duration::from_millis(10), read, 64), 4);
        // 4.05 rounds up to 5.
        assert_eq!(alpha_for(Duration::from_micros(10_100), read, 64), 5);
        // A round trip shorter than one read still keeps one unit in flight.
        assert_eq!(alpha_for(Duration::from_micros(100), read, 64), 1);
        assert_eq!(alpha_for(Duration::from_secs(10), read, 64), 64);
        assert_eq!(alpha_for(Duration::from_millis(1), Duration::ZERO, 8), 8);
        assert_eq!(alpha_for(Duration::from_millis(1), read, 0), 1);
    }

    #[test]
    fn figures_use_rb_times_one_plus_p() {
        // 1 MiB at 100 MiB/s * 2.2 = 4.545 ms.
        let d = DeviceFigures::new(ByteLen::mib(1), Bandwidth::from_mib_s(100.0), 1.2).unwrap();
        let t = d.unit_read_time(ByteLen::mib(1)).as_nanos();
        assert!((t as i64 - 4_545_455).abs() <= 1, "{t}");
        // rtt 50 ms: 50 / 4.545 - 1 = 10.0 -> alpha 10.
        assert_eq!(d.alpha(Duration::from_millis(50), 64), 10);
        // A 25 MiB/s path in front lowers RB and raises the read time fourfold.
        let slow = d.bottleneck(Some(Bandwidth::from_mib_s(25.0)));
        assert_eq!(slow.avg_bandwidth, Bandwidth::from_mib_s(25.0));
        assert_eq!(d.bottleneck(Some(Bandwidth::from_mib_s(500.0))), d);
        assert_eq!(d.bottleneck(None), d);
    }

    #[test]
    fn an_exact_ratio_is_not_pushed_up_by_the_read_time_rounded_to_a_nanosecond() {
        // 1 MiB at 200 MiB/s * 2.2 takes 1/440 s = 2,272,727.27 ns, which rounds down; 25 ms is
        // exactly 11 such reads, so condition 20 asks for alpha >= 10.
        let d = DeviceFigures::new(ByteLen::mib(1), Bandwidth::from_mib_s(200.0), 1.2).unwrap();
        assert_eq!(d.alpha(Duration::from_millis(25), 64), 10);
        // A nanosecond more is more than 11 reads: alpha 11.
        assert_eq!(d.alpha(Duration(25_000_001), 64), 11);
        // 1 MiB at 100 MiB/s * 2.2 (4,545,454.55 ns, rounds up): 50 ms is exactly 11 reads.
        let d = DeviceFigures::new(ByteLen::mib(1), Bandwidth::from_mib_s(100.0), 1.2).unwrap();
        assert_eq!(d.alpha(Duration::from_millis(50), 64), 10);
        assert_eq!(d.alpha(Duration(49_999_999), 64), 10);
        assert_eq!(d.alpha(Duration(50_000_001), 64), 11);
    }

    #[test]
    fn bad_figures_name_their_key() {
        let key = |r: Result<DeviceFigures, PolicyError>| match r {
            Err(PolicyError::BadSetting { key, .. }) => key,
            other => panic!("{other:?}"),
        };
        let bw = Bandwidth::from_mib_s(100.0);
        assert_eq!(
            key(DeviceFigures::new(ByteLen::ZERO, bw, 1.2)),
            "max_readahead"
        );
        assert_eq!(
            key(DeviceFigures::new(
                ByteLen::mib(1),
                Bandwidth::from_bytes_per_s(f64::NAN),
                1.2
            )),
            "avg_bandwidth"
        );
        assert_eq!(
            key(DeviceFigures::new(ByteLen::mib(1), bw, 0.5)),
            "peak_ratio"
        );
        // Each finite, their product `RB * (1 + p)` not: condition 20 would divide by infinity.
        for (rb, p) in [(1e308, 1.2), (1e200, 1e200)] {
            assert_eq!(
                key(DeviceFigures::new(
                    ByteLen::mib(1),
                    Bandwidth::from_bytes_per_s(rb),
                    p
                )),
                "avg_bandwidth"
            );
        }
    }

    /// Figures built field by field skip `new`'s checks; an infinite peak rate then reads as an
    /// infinitely fast device (the most units in flight) and a zero one as a device that never
    /// reads (one unit), not a panic.
    #[test]
    fn an_overflowing_peak_rate_reads_as_an_infinitely_fast_device() {
        let d = DeviceFigures {
            max_readahead: ByteLen::mib(1),
            avg_bandwidth: Bandwidth::from_bytes_per_s(1e308),
            peak_ratio: 1.2,
        };
        assert_eq!(d.unit_read_time(ByteLen::mib(1)), Duration(0));
        assert_eq!(d.alpha(Duration::from_millis(1), 16), 16);
        // A device that reads nothing takes forever: one unit ahead.
        let stopped = DeviceFigures {
            avg_bandwidth: Bandwidth::from_bytes_per_s(0.0),
            ..d
        };
        assert_eq!(stopped.unit_read_time(ByteLen::mib(1)), Duration(u64::MAX));
        assert_eq!(stopped.alpha(Duration::from_millis(1), 16), 1);
    }

    #[test]
    fn alpha_mode_parses_and_prints() {
        assert_eq!("auto".parse::<AlphaMode>(), Ok(AlphaMode::Auto));
        assert_eq!(" 8 ".parse::<AlphaMode>(), Ok(AlphaMode::Fixed(8)));
        assert!("0".parse::<AlphaMode>().is_err());
        assert!("-1".parse::<AlphaMode>().is_err());
        assert!("many".parse::<AlphaMode>().is_err());
        assert_eq!(AlphaMode::Fixed(3).to_string(), "3");
        assert_eq!(AlphaMode::Auto.to_string(), "auto");
    }

    proptest::proptest! {
        /// With figures a float holds exactly (whole bytes per second, `p` = 1 or 3), `alpha` is
        /// condition 20's smallest integer, `ceil(rtt * peak / unit) - 1` in integers, clamped to
        /// 1..=max_alpha; ratios within 1e-12 of a whole number are the ties the float rule
        /// settles on purpose (the unit test above checks them) and are left out.
        #[test]
        fn alpha_is_condition_20_in_exact_arithmetic(
            rtt_ns in 0u64..10_000_000_000,
            rb in 1u64..10_000_000_000,
            p in proptest::prop_oneof![proptest::strategy::Just(1u64), proptest::strategy::Just(3u64)],
            unit in 1u64..(64 << 20),
            max_alpha in 1u32..1025,
        ) {
            let d = DeviceFigures::new(
                ByteLen(unit),
                Bandwidth::from_bytes_per_s(rb as f64),
                p as f64,
            )
            .unwrap();
            let num = u128::from(rtt_ns) * u128::from(rb) * u128::from(1 + p);
            let den = u128::from(unit) * 1_000_000_000;
            let (q, r) = (num / den, num % den);
            let whole = if r * 2 > den { q + 1 } else { q };
            let off = num.abs_diff(whole * den) as f64 / den as f64;
            proptest::prop_assume!(off > (whole.max(1) as f64) * 1e-12);
            let reads_up = q + u128::from(r > 0);
            let want = reads_up.saturating_sub(1).clamp(1, u128::from(max_alpha)) as u32;
            proptest::prop_assert_eq!(d.alpha(Duration(rtt_ns), max_alpha), want);
        }
    }

    proptest::proptest! {
        /// Any text (a number with noise around it, or anything) is an alpha or a refusal that
        /// quotes it and names the accepted forms; an alpha prints back to itself.
        #[test]
        fn alpha_text_parses_or_is_refused_and_round_trips(
            text in proptest::prop_oneof![
                "[ ]?(auto|AUTO|[0-9]{1,12}|-1|0x10|1e3)[ \\t]?",
                proptest::prelude::any::<String>(),
            ]
        ) {
            match text.parse::<AlphaMode>() {
                Ok(a) => proptest::prop_assert_eq!(a.to_string().parse::<AlphaMode>(), Ok(a)),
                Err(e) => proptest::prop_assert!(
                    e.contains(&format!("`{text}`")) && e.contains("1 to 1024"),
                    "{}", e
                ),
            }
        }
    }
}
