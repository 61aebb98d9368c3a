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
//! the rate at which data can arrive. [`RateEstimator`] measures it from response bodies: bytes over
//! the time from the first to the last body byte, which excludes the round trip. It keeps the
//! highest such rate seen over bodies large enough to be timed, because a body that shared the path
//! with others arrives slower than the path allows and would understate it.

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

/// The delivery rate of a path, measured from response bodies.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateEstimator {
    min_body_bytes: u64,
    best_bytes_per_s: Option<f64>,
    samples: u64,
}

impl RateEstimator {
    /// Bodies shorter than this are not timed by default: a few kilobytes arrive in one burst and
    /// their "rate" says nothing about the path.
    pub const DEFAULT_MIN_BODY: ByteLen = ByteLen::kib(64);

    /// An estimator that times bodies of at least `min_body` bytes.
    pub fn new(min_body: ByteLen) -> Self {
        RateEstimator {
            min_body_bytes: min_body.0.max(1),
            best_bytes_per_s: None,
            samples: 0,
        }
    }

    /// Adds one response body of `bytes` whose first byte arrived at `first_byte` and last at
    /// `last_byte`. Short or zero-duration bodies are ignored. Returns whether the sample counted.
    pub fn sample(&mut self, bytes: ByteLen, first_byte: Instant, last_byte: Instant) -> bool {
        let span_ns = last_byte.saturating_since(first_byte).as_nanos();
        if bytes.0 < self.min_body_bytes || span_ns == 0 {
            return false;
        }
        let rate = bytes.0 as f64 * 1e9 / span_ns as f64;
        self.samples += 1;
        self.best_bytes_per_s = Some(self.best_bytes_per_s.map_or(rate, |b| b.max(rate)));
        true
    }

    /// The estimated rate, once a body has been timed.
    pub fn rate(&self) -> Option<Bandwidth> {
        self.best_bytes_per_s.map(Bandwidth::from_bytes_per_s)
    }

    /// How many bodies were timed.
    pub fn samples(&self) -> u64 {
        self.samples
    }
}

impl Default for RateEstimator {
    fn default() -> Self {
        RateEstimator::new(Self::DEFAULT_MIN_BODY)
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

    #[test]
    fn rate_keeps_the_fastest_long_enough_body() {
        let mut r = RateEstimator::new(ByteLen::kib(64));
        assert!(!r.sample(ByteLen::kib(4), Instant(0), Instant(1_000)));
        assert!(!r.sample(ByteLen::mib(1), Instant(5), Instant(5)));
        assert_eq!(r.rate(), None);
        // 1 MiB in 10 ms, then 1 MiB in 20 ms: the estimate stays at the faster one.
        assert!(r.sample(ByteLen::mib(1), Instant(0), Instant(10_000_000)));
        assert!(r.sample(ByteLen::mib(1), Instant(0), Instant(20_000_000)));
        let bps = r.rate().unwrap().bytes_per_s;
        assert!((bps - 104_857_600.0).abs() < 1.0, "{bps}");
        assert_eq!(r.samples(), 2);
    }
}
