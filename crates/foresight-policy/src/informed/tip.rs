//! TIP's cost-benefit model for the number of prefetch buffers (paper 002_792ac46f2e9108f8.txt,
//! chapter 4, after Patterson et al.'s TIP, which the paper cites as \[1\]).
//!
//! With `X_cache` buffers kept full of the next hinted blocks, an application that consumes a block
//! in `T_cpu + T_hit + T_driver` and waits `T_disk` for each read stalls `T_disk - X_cache x step`
//! once per `X_cache` accesses (eq. 4.1) until `X_cache` reaches the prefetch horizon
//! `T_disk / step` (eq. 4.2). One more buffer saves `T_disk / (X (X + 1))` per access (eq. 4.6).
//! `x_cache = auto` keeps adding buffers while that benefit exceeds the cost of taking the buffer
//! from the LRU demand cache. The cost estimate used here is TIP's: the hit-ratio the LRU cache
//! loses with one buffer fewer, times the read time a lost hit costs (`delta_h x T_disk`). The
//! marginal hit ratio is a setting (`policy.lru_hit_gain`); the hinted workloads read every block
//! once, so the LRU cache has nothing to lose and the default is 0, which lets TIP grow to the
//! horizon (or the memory and `max_bw` caps).

use foresight_core::Duration;

/// The prefetch horizon in blocks (paper 002, eq. 4.2), rounded up: the buffer count at which the
/// consumer no longer stalls.
pub fn horizon_blocks(t_disk: Duration, consume: Duration) -> u64 {
    assert!(consume.0 > 0, "the consumption step must be positive");
    t_disk.0.div_ceil(consume.0)
}

/// The reduction in service time per access from one more prefetch buffer, in nanoseconds
/// (paper 002, eq. 4.6; the equation prints it as a negative change). With no buffer at all one
/// buffer saves a whole consumption step.
pub fn benefit_ns(x_cache: u64, t_disk: Duration, consume: Duration) -> f64 {
    if x_cache == 0 {
        return consume.0 as f64;
    }
    if x_cache >= horizon_blocks(t_disk, consume) {
        return 0.0;
    }
    // In floating point: X (X + 1) passes u64 from X = 2^32 on.
    t_disk.0 as f64 / (x_cache as f64 * (x_cache as f64 + 1.0))
}

/// TIP's estimate of what one buffer taken from the LRU demand cache costs per access, in
/// nanoseconds: the hit ratio lost (`lru_hit_gain_ppm` parts per million per buffer) times the
/// read a lost hit turns into.
pub fn lru_cost_ns(lru_hit_gain_ppm: u32, t_disk: Duration) -> f64 {
    f64::from(lru_hit_gain_ppm) * 1e-6 * t_disk.0 as f64
}

/// `x_cache = auto`: the buffer count where one more buffer stops paying for itself, between 1
/// and `cap`: the first count from 1 up whose eq. 4.6 benefit is no more than the LRU cost, or
/// `cap`. The benefit only falls as buffers are added, so the count is found by bisection: a
/// horizon of 10^10 blocks (a 20 s read consumed in a nanosecond) took 35 s counted one by one.
pub fn auto_x_cache(t_disk: Duration, consume: Duration, lru_hit_gain_ppm: u32, cap: u64) -> u64 {
    assert!(cap >= 1, "at least one prefetch buffer must be allowed");
    let cost = lru_cost_ns(lru_hit_gain_ppm, t_disk);
    let pays = |x: u64| benefit_ns(x, t_disk, consume) > cost;
    // The answer lies in lo..=hi: every count below lo pays for one more buffer.
    let (mut lo, mut hi) = (1, cap);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pays(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(secs: f64) -> Duration {
        Duration::from_secs_f64(secs)
    }

    #[test]
    fn horizon_matches_the_paper() {
        // Section 4.5.3: 63 for 10 MB (0.12 / 0.00192 = 62.5) and 200 MB (2.3 / 0.037 = 62.2).
        assert_eq!(horizon_blocks(s(0.12), s(0.00192)), 63);
        assert_eq!(horizon_blocks(s(2.3), s(0.037)), 63);
        // Section 6.5.1: 4.43 / 0.02 = 221.5, the paper's 222.
        assert_eq!(horizon_blocks(s(4.43), s(0.02)), 222);
        // Fig. 4.5's example: T_disk = 5 units, one unit per access.
        assert_eq!(horizon_blocks(Duration(5), Duration(1)), 5);
    }

    #[test]
    fn benefit_is_eq_4_6() {
        // T_disk = 5, X = 3: 5 / 12 per access; at the horizon nothing more is gained.
        assert!((benefit_ns(3, Duration(5), Duration(1)) - 5.0 / 12.0).abs() < 1e-12);
        assert_eq!(benefit_ns(5, Duration(5), Duration(1)), 0.0);
        assert_eq!(benefit_ns(0, Duration(5), Duration(1)), 1.0);
    }

    /// `auto_x_cache` as eq. 4.6 reads, one buffer at a time.
    fn auto_by_steps(t_disk: Duration, consume: Duration, gain: u32, cap: u64) -> u64 {
        let cost = lru_cost_ns(gain, t_disk);
        let mut x = 1;
        while x < cap && benefit_ns(x, t_disk, consume) > cost {
            x += 1;
        }
        x
    }

    proptest::proptest! {
        /// Bisection finds the count that adding buffers one at a time finds.
        #[test]
        fn auto_bisects_to_where_stepping_stops(
            t_disk in 0u64..100_000,
            consume in 1u64..500,
            gain in 0u32..2_000_000,
            cap in 1u64..3_000,
        ) {
            let (t, c) = (Duration(t_disk), Duration(consume));
            proptest::prop_assert_eq!(auto_x_cache(t, c, gain, cap), auto_by_steps(t, c, gain, cap));
        }
    }

    #[test]
    fn auto_reaches_a_horizon_of_ten_billion_blocks() {
        assert_eq!(
            auto_x_cache(s(20.0), Duration(1), 0, 1 << 40),
            20_000_000_000
        );
    }

    #[test]
    fn auto_grows_to_the_horizon_when_the_lru_cache_loses_nothing() {
        assert_eq!(auto_x_cache(s(0.12), s(0.00192), 0, 1000), 63);
        assert_eq!(auto_x_cache(s(0.12), s(0.00192), 0, 15), 15);
        // A costly LRU buffer stops growth early: 1% hit ratio per buffer costs 1.2 ms, which
        // beats T_disk / (X (X + 1)) from X = 10 on (0.12 / 110 = 1.09 ms).
        assert_eq!(auto_x_cache(s(0.12), s(0.00192), 10_000, 1000), 10);
    }
}
