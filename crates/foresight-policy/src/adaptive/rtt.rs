//! Round-trip and bottleneck-rate estimators.
//!
//! Condition 20 of paper 004_80004320b985afc3.txt needs the time a request spends on the network
//! and in the server's request path, `T[ReqRecv(cs)_c] - T[Proc(cs)_s]`: the client's wall time from
//! sending a request to receiving the reply, less the time the server says it spent processing it
//! (section 6.2). [`RttEstimator`] keeps such samples smoothed the way TCP smooths its round-trip
//! samples (RFC 6298, gains 1/8 and 1/4) and also keeps the minimum, which is the round trip
//! without queueing.
//!
//! When the server does not publish its device figures (nginx, an object store), the client needs
//! the rate at which data can arrive. [`RateEstimator`] measures it from response bodies: the bytes
//! of every timed body over the time during which at least one of them was arriving. A body is
//! timed from the earliest moment its first byte could have arrived (the request sent, plus the
//! time the server says it took, plus the smallest round trip seen) to its last byte, which
//! excludes the round trip. It is not timed from when the client read the response head: a client
//! woken late finds bytes of the body already waiting, and on a fast path the whole body, so the
//! head-to-last-byte time says more about the client's scheduling than about the path (on
//! loopback it gave 64 KiB in 256 ns, "250,000 MiB/s", for a download that ran at 700 MiB/s).
//! Overlapping bodies count their common time once, so bodies that share the path add up to its
//! rate instead of each showing a share of it. No rate is reported until the bodies' arrival has
//! been timed for [`RateEstimator::DEFAULT_MIN_TIMED`] in all: each body's time is only known to
//! within a scheduler wake-up or so (tens of microseconds, more on a busy host) at either end, and
//! a download of a few fast bodies says only that the path is faster than the client can time.

use foresight_core::{Bandwidth, ByteLen, Duration, Instant};

/// A smoothed round-trip estimate from individual samples.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RttEstimator {
    srtt_ns: Option<u64>,
    rttvar_ns: u64,
    min_ns: Option<u64>,
    samples: u64,
}

impl RttEstimator {
    /// An estimator with no samples yet.
    pub const fn new() -> Self {
        RttEstimator {
            srtt_ns: None,
            rttvar_ns: 0,
            min_ns: None,
            samples: 0,
        }
    }

    /// Adds one round-trip sample.
    pub fn sample(&mut self, rtt: Duration) {
        let r = rtt.as_nanos();
        self.samples += 1;
        self.min_ns = Some(self.min_ns.map_or(r, |m| m.min(r)));
        match self.srtt_ns {
            None => {
                // RFC 6298 section 2.2: the first sample sets SRTT and half of it as RTTVAR.
                self.srtt_ns = Some(r);
                self.rttvar_ns = r / 2;
            }
            Some(srtt) => {
                // RFC 6298 section 2.3: RTTVAR <- 3/4 RTTVAR + 1/4 |SRTT - R|; SRTT <- 7/8 SRTT + 1/8 R.
                self.rttvar_ns = (3 * self.rttvar_ns + srtt.abs_diff(r)) / 4;
                self.srtt_ns = Some((7 * srtt + r) / 8);
            }
        }
    }

    /// Adds the sample of one exchange as paper 004, section 6.2 measures it: the client's time from
    /// `sent` to `received`, less the server's own processing time `server_proc` (zero when the
    /// server does not report it). A reply that seems to come back before it was sent is ignored.
    pub fn sample_exchange(&mut self, sent: Instant, received: Instant, server_proc: Duration) {
        if received < sent {
            return;
        }
        let wall = received.saturating_since(sent);
        self.sample(Duration(
            wall.as_nanos().saturating_sub(server_proc.as_nanos()),
        ));
    }

    /// The smoothed round trip, once there is a sample.
    pub fn smoothed(&self) -> Option<Duration> {
        self.srtt_ns.map(Duration)
    }

    /// The mean deviation of the samples (RFC 6298's RTTVAR).
    pub fn variation(&self) -> Duration {
        Duration(self.rttvar_ns)
    }

    /// The smallest sample seen.
    pub fn min(&self) -> Option<Duration> {
        self.min_ns.map(Duration)
    }

    /// How many samples were taken.
    pub fn samples(&self) -> u64 {
        self.samples
    }
}

/// The stretches of arrival a [`RateEstimator`] keeps, the latest ones, to merge later bodies
/// into: time before them counts as covered.
const SPANS_MAX: usize = 16;

/// The delivery rate of a path, measured from response bodies. See the module documentation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateEstimator {
    min_body_bytes: u64,
    min_timed_ns: u64,
    timed_bytes: u64,
    /// The time during which at least one timed body was arriving.
    busy_ns: u64,
    /// The latest stretches of arrival, `(start, end)` in ns, sorted and disjoint: the first
    /// `spans_len` entries. A body counts the time none of them covers; bodies come in the order
    /// they finish, so one that began before another may come after it.
    spans: [(u64, u64); SPANS_MAX],
    spans_len: usize,
    /// Time before this counts as covered: the end of the latest stretch dropped from `spans`.
    covered_before: u64,
    samples: u64,
}

impl RateEstimator {
    /// Bodies shorter than this are not timed by default: a few kilobytes arrive in one burst and
    /// their "rate" says nothing about the path.
    pub const DEFAULT_MIN_BODY: ByteLen = ByteLen::kib(64);

    /// How long the bodies' arrival must have been timed, in all, before a rate is reported: a
    /// hundred times the tens of microseconds by which a wake-up can misplace each end of a body.
    pub const DEFAULT_MIN_TIMED: Duration = Duration::from_millis(10);

    /// An estimator that times bodies of at least `min_body` bytes and reports a rate once
    /// `min_timed` of arrival has been timed.
    pub fn new(min_body: ByteLen, min_timed: Duration) -> Self {
        RateEstimator {
            min_body_bytes: min_body.0.max(1),
            min_timed_ns: min_timed.as_nanos().max(1),
            timed_bytes: 0,
            busy_ns: 0,
            spans: [(0, 0); SPANS_MAX],
            spans_len: 0,
            covered_before: 0,
            samples: 0,
        }
    }

    /// Adds one response body of `bytes` that could not have begun arriving before `start` and
    /// had arrived whole at `end`, in any order: time already covered by another body is not
    /// counted again (time before the latest `SPANS_MAX` stretches of arrival counts as
    /// covered). Short or empty spans are ignored. Returns whether the sample counted.
    pub fn sample(&mut self, bytes: ByteLen, start: Instant, end: Instant) -> bool {
        if bytes.0 < self.min_body_bytes || end <= start {
            return false;
        }
        self.timed_bytes += bytes.0;
        self.samples += 1;
        let (s, e) = (start.0.max(self.covered_before), end.0);
        if e <= s {
            return true;
        }
        // The body's span joins every stretch it meets or touches; what they cover of it was
        // counted already.
        let mut kept = [(0u64, 0u64); SPANS_MAX + 1];
        let (mut n, mut joined, mut covered, mut placed) = (0, (s, e), 0, false);
        for &(a, b) in &self.spans[..self.spans_len] {
            if b < s || a > e {
                if a > e && !placed {
                    kept[n] = joined;
                    n += 1;
                    placed = true;
                }
                kept[n] = (a, b);
                n += 1;
            } else {
                covered += b.min(e) - a.max(s);
                joined = (joined.0.min(a), joined.1.max(b));
            }
        }
        if !placed {
            kept[n] = joined;
            n += 1;
        }
        self.busy_ns += (e - s) - covered;
        let first = if n > SPANS_MAX {
            self.covered_before = kept[0].1;
            1
        } else {
            0
        };
        self.spans_len = n - first;
        self.spans[..self.spans_len].copy_from_slice(&kept[first..n]);
        true
    }

    /// The estimated rate, once the bodies' arrival has been timed long enough.
    pub fn rate(&self) -> Option<Bandwidth> {
        (self.busy_ns >= self.min_timed_ns).then(|| {
            Bandwidth::from_bytes_per_s(self.timed_bytes as f64 * 1e9 / self.busy_ns as f64)
        })
    }

    /// How long the bodies' arrival has been timed, in all.
    pub fn timed(&self) -> Duration {
        Duration(self.busy_ns)
    }

    /// How many bodies were timed.
    pub fn samples(&self) -> u64 {
        self.samples
    }
}

impl Default for RateEstimator {
    fn default() -> Self {
        RateEstimator::new(Self::DEFAULT_MIN_BODY, Self::DEFAULT_MIN_TIMED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sample_sets_the_estimate_and_later_ones_move_it_by_an_eighth() {
        let mut e = RttEstimator::new();
        assert_eq!(e.smoothed(), None);
        e.sample(Duration::from_millis(8));
        assert_eq!(e.smoothed(), Some(Duration::from_millis(8)));
        assert_eq!(e.variation(), Duration::from_millis(4));
        e.sample(Duration::from_millis(16));
        // 7/8 * 8 ms + 1/8 * 16 ms = 9 ms; 3/4 * 4 ms + 1/4 * 8 ms = 5 ms.
        assert_eq!(e.smoothed(), Some(Duration::from_millis(9)));
        assert_eq!(e.variation(), Duration::from_millis(5));
        assert_eq!(e.min(), Some(Duration::from_millis(8)));
        assert_eq!(e.samples(), 2);
    }

    #[test]
    fn exchange_sample_removes_server_time_and_ignores_time_travel() {
        let mut e = RttEstimator::new();
        e.sample_exchange(
            Instant(1_000_000),
            Instant(11_000_000),
            Duration::from_millis(4),
        );
        assert_eq!(e.smoothed(), Some(Duration::from_millis(6)));
        e.sample_exchange(Instant(5), Instant(4), Duration::ZERO);
        assert_eq!(e.samples(), 1);
        // A server time longer than the wall time clamps at zero rather than wrapping.
        e.sample_exchange(Instant(0), Instant(10), Duration::from_secs(1));
        assert_eq!(e.min(), Some(Duration::ZERO));
    }

    const MS: u64 = 1_000_000;

    fn mib_s(r: &RateEstimator) -> Option<f64> {
        r.rate().map(|b| b.bytes_per_s / (1u64 << 20) as f64)
    }

    #[test]
    fn rate_is_the_bytes_over_the_time_any_body_was_arriving() {
        let mut r = RateEstimator::new(ByteLen::kib(64), Duration::from_millis(10));
        assert!(!r.sample(ByteLen::kib(4), Instant(0), Instant(1_000)));
        assert!(!r.sample(ByteLen::mib(1), Instant(5), Instant(5)));
        assert_eq!(r.rate(), None);
        // 1 MiB over 0-10 ms, 1 MiB over 30-40 ms: the idle 20 ms between them do not count.
        assert!(r.sample(ByteLen::mib(1), Instant(0), Instant(10 * MS)));
        assert!(r.sample(ByteLen::mib(1), Instant(30 * MS), Instant(40 * MS)));
        assert_eq!(mib_s(&r), Some(100.0));
        // Two more arriving together over 40-60 ms share the path: 2 MiB in 20 ms, counted once.
        assert!(r.sample(ByteLen::mib(1), Instant(40 * MS), Instant(60 * MS)));
        assert!(r.sample(ByteLen::mib(1), Instant(40 * MS), Instant(60 * MS)));
        assert_eq!(mib_s(&r), Some(100.0));
        assert_eq!(r.timed(), Duration::from_millis(40));
        assert_eq!(r.samples(), 4);
    }

    /// The loopback case: each 64 KiB body is gathered 300 ns after its head was read, because it
    /// had all arrived by then. However many there are, they never add up to time enough to say
    /// anything (the old rule, the fastest body, said 208,000 MiB/s).
    #[test]
    fn bodies_too_quick_to_time_give_no_rate() {
        let mut r = RateEstimator::default();
        for i in 0..1000u64 {
            let at = Instant(i * MS);
            assert!(r.sample(ByteLen::kib(64), at, Instant(at.0 + 300)));
        }
        assert_eq!(r.rate(), None);
        assert_eq!(r.timed(), Duration(300_000));
    }

    /// Bodies are fed back in the order they finish, so a body that began arriving after
    /// another and finished first (a shorter one, or one the server had at hand) comes first.
    /// Its time lies inside the other's: the path was busy 100 ms for the two, not 50 ms, which
    /// doubled the rate.
    #[test]
    fn a_body_that_began_later_and_finished_first_shares_the_others_time() {
        let mut r = RateEstimator::new(ByteLen::kib(64), Duration::from_millis(10));
        assert!(r.sample(ByteLen::mib(1), Instant(50 * MS), Instant(80 * MS)));
        assert!(r.sample(ByteLen::mib(1), Instant(0), Instant(100 * MS)));
        assert_eq!(r.timed(), Duration::from_millis(100));
        assert_eq!(mib_s(&r), Some(20.0));
    }

    proptest::proptest! {
        /// Whatever order the bodies come in, the time timed is the length of the union of their
        /// spans (as long as the spans to merge with are the latest `SPANS_MAX`).
        #[test]
        fn the_time_timed_is_the_union_of_the_spans_in_any_order(
            spans in proptest::collection::vec((0u64..1_000, 1u64..200), 1..SPANS_MAX),
        ) {
            let mut r = RateEstimator::new(ByteLen(1), Duration(1));
            for &(start, len) in &spans {
                r.sample(ByteLen(1), Instant(start), Instant(start + len));
            }
            let mut sorted = spans.clone();
            sorted.sort_unstable();
            let (mut union, mut until) = (0, 0);
            for (start, len) in sorted {
                let from = start.max(until);
                union += (start + len).saturating_sub(from);
                until = until.max(start + len);
            }
            proptest::prop_assert_eq!(r.timed(), Duration(union));
        }
    }

    #[test]
    fn a_rate_is_reported_once_enough_arrival_is_timed() {
        let mut r = RateEstimator::new(ByteLen::kib(64), Duration::from_millis(10));
        for i in 0..10u64 {
            assert_eq!(r.rate(), None, "after {i} ms");
            let at = Instant(2 * i * MS);
            assert!(r.sample(ByteLen::mib(1), at, Instant(at.0 + MS)));
        }
        assert_eq!(mib_s(&r), Some(1000.0));
    }
}
