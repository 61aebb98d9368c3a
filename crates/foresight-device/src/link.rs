//! A network link between a client and a server: one-way delay, bandwidth, and a TCP window.
//!
//! Each direction is one serializer: a message occupies the wire for `bytes / bandwidth` after
//! whatever was booked before it (first come, first served), then flies for the one-way delay. On
//! top of that, every connection may have at most its advertised window unacknowledged: a message
//! is cut into chunks, and a chunk leaves only once enough earlier chunks of its connection have
//! been acknowledged, an acknowledgement reaching the sender one delay after the chunk arrived.
//! The `window` figure is the receiver's TCP buffer, the size Linux's `tcp_rmem` sets and paper
//! 004_80004320b985afc3.txt calls the "window size of the TCP" (section 7.2.4: 6 MB, the default of
//! its Linux 3.10 machines). Linux keeps part of that buffer for the overhead of the socket buffers
//! and advertises the rest: with `tcp_adv_win_scale = 1` (the default since Linux 3.4, which also
//! made 6 MB the default `tcp_rmem` maximum) half of it. So a single connection can never do better
//! than `window / 2 / rtt`, which is what limits a lone stream at long delays in paper 004 (Fig. 12:
//! a 6 MB buffer binds from 8 ms one way, a 30 MB one does not).
//!
//! The model is passive like the devices: the caller asks when a message sent at `now` arrives, and
//! the link books wire time for it at once. Calls must come with non-decreasing `now`. Bookings are
//! kept in order, so a window-limited connection that books wire time in the future leaves no room
//! for other connections before that booking; this costs accuracy only when a window-limited
//! connection shares the wire with others, which no experiment here does at long delays.
//!
//! Named presets follow the spirit of str0m's netem presets: a name for a kind of network, with the
//! paper's testbed figures where it gives them.

use std::collections::VecDeque;

use foresight_core::{Bandwidth, ByteLen, Duration, Instant};

use crate::DeviceError;

/// The largest piece a message is cut into for the window check: small enough that the window is
/// filled smoothly, large enough that a 40 MB message costs a few hundred steps.
pub const CHUNK_BYTES_MAX: u64 = 256 << 10;

/// The figures of a link.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkParams {
    /// Time for a bit to cross from one end to the other, not counting serialization.
    pub delay: Duration,
    /// Wire rate in each direction.
    pub bandwidth: Bandwidth,
    /// The receiver's TCP buffer of one connection (Linux's `tcp_rmem`); the connection may have
    /// [`LinkParams::advertised_window`] of it sent and not yet acknowledged.
    pub window: ByteLen,
}

/// The longest one-way delay a link may have: beyond it no network is described (a geostationary
/// satellite hop is about 0.25 s), only a typo in the unit.
pub const DELAY_MAX: Duration = Duration::from_secs(10);

impl LinkParams {
    /// Checks the figures once, when the link is built.
    pub fn validate(&self) -> Result<(), DeviceError> {
        if !(self.bandwidth.bytes_per_s.is_finite() && self.bandwidth.bytes_per_s >= 1.0) {
            return Err(DeviceError::BadValue {
                field: "bandwidth",
                value: format!("{}", self.bandwidth.bytes_per_s),
                fix: "give the link a finite rate of at least 1 byte/s (for example `10Gbit`)",
            });
        }
        // The buffer itself is checked, not its advertised half rounded up, so that the bound is
        // the 8 KiB the message names.
        if self.window.0 < 2 * 4096 {
            return Err(DeviceError::BadValue {
                field: "window",
                value: format!("{}", self.window.0),
                fix: "a TCP buffer advertises half of itself, which must hold at least one 4 KiB \
                      page (a buffer of at least 8 KiB); use for example `6MB`",
            });
        }
        if self.delay > DELAY_MAX {
            return Err(DeviceError::BadValue {
                field: "delay",
                value: format!("{} ns", self.delay.0),
                fix: "one-way delays above 10 s describe no network; use for example `25ms`",
            });
        }
        Ok(())
    }

    /// The bytes of the buffer the receiver advertises as its window: Linux's `tcp_adv_win_scale =
    /// 1` keeps half the buffer for the overhead of the packets that fill it.
    pub fn advertised_window(&self) -> ByteLen {
        ByteLen(self.window.0 - self.window.0 / 2)
    }

    /// Round-trip time of an empty message: twice the one-way delay.
    pub fn rtt(&self) -> Duration {
        self.delay + self.delay
    }

    /// The most one connection can carry, in bytes per second: the wire rate, or one advertised
    /// window per round trip if that is less.
    pub fn connection_limit(&self) -> Bandwidth {
        let rtt_s = self.rtt().as_secs_f64();
        let window_rate = if rtt_s > 0.0 {
            self.advertised_window().0 as f64 / rtt_s
        } else {
            f64::INFINITY
        };
        Bandwidth::from_bytes_per_s(self.bandwidth.bytes_per_s.min(window_rate))
    }
}

/// A named link, for `foresight devices` and the `[network] link = "..."` key.
#[derive(Clone, Copy, Debug)]
pub struct LinkPreset {
    /// The name the config uses.
    pub name: &'static str,
    /// The figures.
    pub params: LinkParams,
    /// Where the figures come from.
    pub source: &'static str,
}

const MB: u64 = 1_000_000;

fn gbit(g: f64) -> Bandwidth {
    Bandwidth::from_bytes_per_s(g * 1e9 / 8.0)
}

/// The named links.
pub fn link_presets() -> Vec<LinkPreset> {
    vec![
        LinkPreset {
            name: "lan-10g",
            params: LinkParams {
                delay: Duration::from_micros(50),
                bandwidth: gbit(10.0),
                window: ByteLen(6 * MB),
            },
            source: "paper 004 section 7.1: one 10 GbE switch, 6 MB default TCP buffer \
                     (section 7.2.4), half of it advertised; the 50 us one-way delay is assumed",
        },
        LinkPreset {
            name: "lan-10g-w30m",
            params: LinkParams {
                delay: Duration::from_micros(50),
                bandwidth: gbit(10.0),
                window: ByteLen(30 * MB),
            },
            source: "as lan-10g with the 30 MB window of paper 004 Fig. 12b",
        },
        LinkPreset {
            name: "lan-1g",
            params: LinkParams {
                delay: Duration::from_micros(100),
                bandwidth: gbit(1.0),
                window: ByteLen(6 * MB),
            },
            source: "assumed: gigabit Ethernet through one switch",
        },
        LinkPreset {
            name: "metro-10g",
            params: LinkParams {
                delay: Duration::from_millis(2),
                bandwidth: gbit(10.0),
                window: ByteLen(6 * MB),
            },
            source: "assumed: 10 Gbit/s across a city (2 ms one way)",
        },
        LinkPreset {
            name: "wan-10g",
            params: LinkParams {
                delay: Duration::from_millis(12),
                bandwidth: gbit(10.0),
                window: ByteLen(60 * MB),
            },
            source: "assumed: 10 Gbit/s across a country (12 ms one way), a 60 MB buffer whose \
                     advertised 30 MB covers the 24 ms round trip at the wire rate",
        },
        LinkPreset {
            name: "wan-1g",
            params: LinkParams {
                delay: Duration::from_millis(25),
                bandwidth: gbit(1.0),
                window: ByteLen(6 * MB),
            },
            source: "assumed: 1 Gbit/s over a long haul (25 ms one way)",
        },
    ]
}

/// The preset of that name.
pub fn link_preset(name: &str) -> Option<LinkParams> {
    link_presets()
        .into_iter()
        .find(|p| p.name == name)
        .map(|p| p.params)
}

/// Which way a message goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Client to server (requests).
    Up,
    /// Server to client (data).
    Down,
}

#[derive(Debug, Default)]
struct Conn {
    /// Chunks sent and not yet acknowledged, as `(acknowledged at, bytes)`, in send order.
    unacked: VecDeque<(Instant, u64)>,
    unacked_bytes: u64,
    /// When this connection's last chunk finished leaving (a connection sends in order).
    sent_until: Instant,
}

/// A link with `connections` connections over it. See the module documentation.
#[derive(Debug)]
pub struct Link {
    params: LinkParams,
    wire_free: [Instant; 2],
    conns: Vec<[Conn; 2]>,
    bytes: [u64; 2],
    last_now: Instant,
}

impl Link {
    /// A link with the given figures and connection count. Panics on figures that `validate`
    /// rejects (check them first) or on zero connections: both are caller bugs.
    pub fn new(params: LinkParams, connections: usize) -> Link {
        params
            .validate()
            .expect("link figures checked by the caller");
        assert!(connections > 0, "a link carries at least one connection");
        Link {
            params,
            wire_free: [Instant(0); 2],
            conns: (0..connections).map(|_| Default::default()).collect(),
            bytes: [0; 2],
            last_now: Instant(0),
        }
    }

    /// The figures.
    pub fn params(&self) -> &LinkParams {
        &self.params
    }

    /// Bytes carried so far in `dir`.
    pub fn bytes(&self, dir: Direction) -> u64 {
        self.bytes[dir as usize]
    }

    /// Sends `bytes` on connection `conn` in `dir` at `now` and returns when the last byte arrives.
    /// `bytes` may be 0 (a header-only message still pays the delay).
    pub fn send(&mut self, now: Instant, dir: Direction, conn: usize, bytes: u64) -> Instant {
        assert!(now >= self.last_now, "link time went backwards");
        self.last_now = now;
        let d = dir as usize;
        self.bytes[d] += bytes;
        let window = self.params.advertised_window().0;
        let chunk_max = CHUNK_BYTES_MAX.min(window);
        let delay = self.params.delay;
        let bw = self.params.bandwidth;
        let c = &mut self.conns[conn][d];
        let mut t = now.max(c.sent_until);
        let mut left = bytes;
        loop {
            // Acknowledgements that are back by `t` free their room.
            while let Some(&(ack_at, b)) = c.unacked.front() {
                if ack_at > t {
                    break;
                }
                c.unacked.pop_front();
                c.unacked_bytes -= b;
            }
            if c.unacked_bytes >= window {
                // The window is full: wait for the oldest acknowledgement.
                let (ack_at, b) = c.unacked.pop_front().expect("unacked bytes are queued");
                c.unacked_bytes -= b;
                t = t.max(ack_at);
                continue;
            }
            let chunk = left.min(chunk_max).min(window - c.unacked_bytes);
            let start = t.max(self.wire_free[d]);
            let done = start + bw.time_for(ByteLen(chunk));
            self.wire_free[d] = done;
            let arrival = done + delay;
            if chunk > 0 {
                c.unacked.push_back((arrival + delay, chunk));
                c.unacked_bytes += chunk;
            }
            c.sent_until = done;
            t = done;
            left -= chunk;
            if left == 0 {
                return arrival;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(delay_us: u64, gbit_s: f64, window: u64) -> LinkParams {
        LinkParams {
            delay: Duration::from_micros(delay_us),
            bandwidth: gbit(gbit_s),
            window: ByteLen(window),
        }
    }

    #[test]
    fn presets_are_valid_and_named_uniquely() {
        let all = link_presets();
        for p in &all {
            p.params.validate().unwrap();
            assert_eq!(all.iter().filter(|q| q.name == p.name).count(), 1);
        }
        assert_eq!(link_preset("lan-10g").unwrap().window, ByteLen(6 * MB));
        assert!(link_preset("nope").is_none());
    }

    /// `wan-10g`'s window was sized to its bandwidth-delay product (10 Gbit/s over a 24 ms round
    /// trip is 30 MB in flight), so one connection filled its wire; once the figure became a buffer
    /// of which half is advertised, the preset's 30 MB let one connection carry only half its
    /// rate. Its buffer is now twice that product.
    #[test]
    fn wan_10g_lets_one_connection_fill_its_wire() {
        let p = link_preset("wan-10g").unwrap();
        let bdp_bytes = p.bandwidth.bytes_per_s * p.rtt().as_secs_f64();
        assert!(p.advertised_window().0 as f64 >= bdp_bytes, "{p:?}");
        assert_eq!(
            p.connection_limit().bytes_per_s,
            p.bandwidth.bytes_per_s,
            "{p:?}"
        );
    }

    #[test]
    fn small_message_pays_delay_and_serialization() {
        let mut l = Link::new(params(100, 1.0, 6 * MB), 1);
        let at = l.send(Instant(0), Direction::Up, 0, 125);
        // 125 bytes at 1 Gbit/s = 1 us, plus 100 us.
        assert_eq!(at, Instant(101_000));
    }

    #[test]
    fn wire_is_shared_first_come_first_served() {
        let mut l = Link::new(params(0, 8.0, 100 * MB), 2);
        // 1 GB/s: 1 MB takes 1 ms.
        let a = l.send(Instant(0), Direction::Down, 0, MB);
        let b = l.send(Instant(0), Direction::Down, 1, MB);
        assert_eq!(a, Instant(1_000_000));
        assert_eq!(b, Instant(2_000_000));
        // The other direction is a separate wire.
        let c = l.send(Instant(0), Direction::Up, 1, MB);
        assert_eq!(c, Instant(1_000_000));
    }

    /// The buffer is not the window: Linux advertises half of it, so a 2 MB buffer lets 1 MB be in
    /// flight (the link once let the whole buffer fly, and a 6 MB buffer bound a lone stream only
    /// from 16 ms one way, where paper 004 measured it binding from 8 ms).
    #[test]
    fn window_caps_one_connection_at_half_the_buffer_per_rtt() {
        // 10 ms one way, a 2 MB buffer, 10 Gbit/s: at most 1 MB per 20 ms = 50 MB/s.
        let p = params(10_000, 10.0, 2 * MB);
        assert_eq!(p.advertised_window(), ByteLen(MB));
        let mut l = Link::new(p, 1);
        let total = 100 * MB;
        let at = l.send(Instant(0), Direction::Down, 0, total);
        let rate = total as f64 / at.as_secs_f64();
        let limit = p.connection_limit().bytes_per_s;
        assert!((limit - 50e6).abs() < 1.0);
        assert!(rate <= limit * 1.01, "rate {rate} above {limit}");
        assert!(rate >= limit * 0.9, "rate {rate} far below {limit}");
    }

    #[test]
    fn window_does_not_bind_when_it_covers_the_bandwidth_delay_product() {
        // 50 us one way, 10 Gbit/s: the product is 125 KB, far below 6 MB.
        let mut l = Link::new(params(50, 10.0, 6 * MB), 1);
        let at = l.send(Instant(0), Direction::Down, 0, 100 * MB);
        let wire_s = 100.0 * MB as f64 / 1.25e9;
        assert!((at.as_secs_f64() - wire_s - 50e-6).abs() < 1e-6);
    }

    #[test]
    fn bad_figures_are_rejected_by_name() {
        let mut p = params(50, 10.0, 6 * MB);
        p.window = ByteLen(10);
        let e = p.validate().unwrap_err().to_string();
        assert!(e.contains("window"), "{e}");
        let mut p = params(50, 10.0, 6 * MB);
        p.bandwidth = Bandwidth::from_bytes_per_s(0.0);
        assert!(p.validate().unwrap_err().to_string().contains("bandwidth"));
    }

    /// The refusal says a buffer of at least 8 KiB, and that is the bound: one byte less is
    /// refused (its advertised half, rounded up, used to make 8191 bytes pass), 8 KiB is not.
    #[test]
    fn a_buffer_below_8_kib_is_refused_and_8_kib_is_not() {
        let mut p = params(50, 10.0, 8191);
        let e = p.validate().unwrap_err().to_string();
        assert!(e.contains("window") && e.contains("8 KiB"), "{e}");
        p.window = ByteLen(8192);
        p.validate().unwrap();
        assert_eq!(p.advertised_window(), ByteLen(4096));
    }

    /// A lone connection is never slower with a larger buffer: every message of the same
    /// sequence, sent at the same times, arrives no later. Cases are drawn from printed seeds.
    #[test]
    fn a_larger_buffer_never_delays_a_lone_connections_message() {
        for seed in 0..300u64 {
            let mut rng = foresight_core::Rng::new(seed);
            let delay_us = [0, 50, 1_000, 8_000, 25_000][rng.below(5) as usize];
            let gbit_s = [1.0, 10.0][rng.below(2) as usize];
            let small = 8 * 1024 + rng.below(40 * MB);
            let large = small + 1 + rng.below(40 * MB);
            let mut sends = vec![];
            let mut now = Instant(0);
            for _ in 0..1 + rng.below(30) {
                now += Duration(rng.below(60_000_000));
                sends.push((now, rng.below(8 * MB)));
            }
            let arrivals = |window: u64| {
                let mut l = Link::new(params(delay_us, gbit_s, window), 1);
                sends
                    .iter()
                    .map(|&(at, bytes)| l.send(at, Direction::Down, 0, bytes))
                    .collect::<Vec<_>>()
            };
            let (a, b) = (arrivals(small), arrivals(large));
            for (i, (x, y)) in a.iter().zip(&b).enumerate() {
                assert!(
                    y <= x,
                    "seed {seed}: message {i} arrives at {y:?} with a {large}-byte buffer, after \
                     {x:?} with {small} bytes ({delay_us} us one way)"
                );
            }
        }
    }

    use proptest::prelude::*;

    proptest! {
        /// Whatever is sent, no message arrives before its delay and serialization, and the wire
        /// never carries more than its rate: the last arrival in a direction comes no earlier than
        /// all that direction's bytes at the wire rate. (proptest prints the failing case.)
        #[test]
        fn arrivals_respect_delay_rate_and_window(
            sends in proptest::collection::vec((0u64..2_000_000, 0usize..3, 0u64..5_000_000, any::<bool>()), 1..40),
            delay_us in 0u64..20_000,
            window_kib in 8u64..8192,
        ) {
            let p = params(delay_us, 1.0, window_kib * 1024);
            let mut l = Link::new(p, 3);
            let mut now = Instant(0);
            let mut last = [Instant(0); 2];
            let mut total = [0u64; 2];
            for (gap_ns, conn, bytes, up) in sends {
                now += Duration(gap_ns);
                let dir = if up { Direction::Up } else { Direction::Down };
                let at = l.send(now, dir, conn, bytes);
                let floor = now + p.delay + p.bandwidth.time_for(ByteLen(bytes));
                prop_assert!(at.0 + 1 >= floor.0, "arrived at {at:?} before {floor:?}");
                last[dir as usize] = last[dir as usize].max(at);
                total[dir as usize] += bytes;
            }
            for d in 0..2 {
                if total[d] > 0 {
                    let wire = p.bandwidth.time_for(ByteLen(total[d]));
                    // Each chunk rounds its wire time to the nanosecond: allow one per chunk.
                    prop_assert!(last[d].0 + 1_000 >= wire.0 + p.delay.0);
                }
            }
        }
    }
}
