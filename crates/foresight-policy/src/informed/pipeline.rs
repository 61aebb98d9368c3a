//! The per-tier-pair prefetcher of iPipe, IPO and IPODS: where it starts, how deep it runs and which
//! block it copies next (paper 002_792ac46f2e9108f8.txt, chapters 4 to 6).
//!
//! The paper's algorithms walk the hinted accesses one consumption step (`T_cpu + T_hit +
//! T_driver`) at a time and, after every `X_cache` accesses, add the stall the upper prefetcher
//! suffers while it waits for its next group of reads (eq. 4.1's numerator). Walking until the
//! accumulated time covers the copy latency gives the first block worth copying (Pstart,
//! algorithms 1 and 4); walking until it covers the copy plus one upper-tier read gives the depth
//! (Pdepth, algorithm 2) or the distance from a consumed block to the next one to copy (Pnext,
//! algorithm 5). All arithmetic is in whole nanoseconds so that ties (`accesstime >= T`) resolve the
//! same way on every machine; the paper's tables were computed with these ties (its Table 4.7 lists
//! Pstart = 3 X_cache + 1 for 200 MB blocks, where 3 x 1.5 s exactly meets T_hdd-ss = 4.5 s).

use foresight_core::Duration;

/// The stall the consumer suffers once per group of `x_cache` accesses when each of its reads takes
/// `t_read` and it consumes a block in `consume` (paper 002, eq. 4.1 multiplied by `X_cache`, the
/// form its algorithms add "every `X_cache` accesses").
pub fn group_stall(t_read: Duration, x_cache: u32, consume: Duration) -> Duration {
    // A group too long for a u64 of nanoseconds covers any read: no stall.
    Duration(
        t_read
            .0
            .saturating_sub(consume.0.saturating_mul(u64::from(x_cache))),
    )
}

/// The walk shared by algorithms 1, 2, 4 and 5: the step (1-based) at which the accumulated time
/// first reaches `target_ns`, and whether it was reached at the stall of a group's end. `strict`
/// selects `>` (algorithm 5) instead of `>=` (algorithms 1, 2, 4); `start_ns` is the accumulated
/// time before step 1 (`-consume` in algorithms 1, 4 and 5, 0 in algorithm 2). Returns `None` when
/// the loop bound `target / consume` runs out first.
fn walk(
    target_ns: i128,
    start_ns: i128,
    x_cache: u32,
    consume: Duration,
    stall: Duration,
    strict: bool,
) -> Option<(u64, bool)> {
    assert!(consume.0 > 0, "the consumption step must be positive");
    assert!(x_cache >= 1, "x_cache must be at least 1");
    let reached = |t: i128| {
        if strict {
            t > target_ns
        } else {
            t >= target_ns
        }
    };
    let (c, s, x) = (consume.0 as i128, stall.0 as i128, i128::from(x_cache));
    let steps = (target_ns / c).max(0);
    // Time only grows, and a group's last instant is after its stall, so the target is first
    // reached in the first group whose end reaches it. Jump there instead of stepping through
    // the groups before it: the loop bound `target / consume` can be 10^18 steps.
    let group = x * c + s;
    let span = target_ns - start_ns;
    let skip = if span <= 0 {
        0
    } else if strict {
        span / group
    } else {
        (span - 1) / group
    };
    let mut step = skip * x;
    let mut at = start_ns + skip * group;
    for in_group in 1..=x {
        step += 1;
        if step > steps {
            return None;
        }
        at += c;
        if reached(at) {
            return Some((step as u64, false));
        }
        if in_group == x {
            at += s;
            if reached(at) {
                return Some((step as u64, true));
            }
        }
    }
    // Unreachable by the choice of `skip`, but a walk that ends here has not reached the target.
    None
}

/// Pstart (paper 002, algorithm 1 for iPipe with the lower tier's read time, algorithm 4 for IPO
/// with the upper tier's): the 1-based position, counted from the access being consumed, of the
/// first hinted block far enough ahead to be copied up in `t_copy`. `t_consumer_read` is the read
/// time whose stalls slow the consumer down. When the walk runs out, the position just past the
/// loop bound is returned (the paper's tables show this value for large `X_cache`).
pub fn pstart(t_copy: Duration, t_consumer_read: Duration, x_cache: u32, consume: Duration) -> u64 {
    let stall = group_stall(t_consumer_read, x_cache, consume);
    match walk(
        t_copy.0 as i128,
        -(consume.0 as i128),
        x_cache,
        consume,
        stall,
        false,
    ) {
        Some((step, false)) => step,
        Some((step, true)) => step + 1,
        None => t_copy.0 / consume.0 + 1,
    }
}

/// Pdepth (paper 002, algorithm 2 and eq. 4.5): how many blocks the iPipe prefetcher keeps on their
/// way up: enough to cover the copy time plus one read of the upper tier by its consumer
/// (`T_consume-ss = T_ss-cache`, section 4.4.3), shortened by the consumer's stalls. The count
/// includes the block at Pstart itself (Table 4.6 lists 4 for `X_cache = 1` with 10 MB blocks).
pub fn pdepth(t_copy: Duration, t_upper_read: Duration, x_cache: u32, consume: Duration) -> u64 {
    let total = t_copy.0 + t_upper_read.0;
    let stall = group_stall(t_upper_read, x_cache, consume);
    match walk(total as i128, 0, x_cache, consume, stall, false) {
        Some((step, _)) => step,
        None => total / consume.0 + 1,
    }
}

/// Pnext (paper 002, algorithm 5): how far ahead of a block the consumer has just taken from the
/// upper tier lies the next block to copy: the accesses the consumer gets through while one block
/// is copied up and then read from the upper tier.
pub fn pnext_lead(
    t_copy: Duration,
    t_upper_read: Duration,
    x_cache: u32,
    consume: Duration,
) -> u64 {
    let total = t_copy.0 + t_upper_read.0;
    let stall = group_stall(t_upper_read, x_cache, consume);
    match walk(
        total as i128,
        -(consume.0 as i128),
        x_cache,
        consume,
        stall,
        true,
    ) {
        Some((step, false)) => step - 1,
        Some((step, true)) => step,
        None => total / consume.0,
    }
    .max(1)
}

/// IPO's pipelining depth (paper 002, eq. 5.1): the concurrent reads left to the pipeline when the
/// upper prefetcher keeps `x_cache` of the `max_bw` in flight.
pub fn ipo_depth(max_bw: u32, x_cache: u32) -> u64 {
    u64::from(max_bw.saturating_sub(x_cache))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The walk as algorithms 1, 2, 4 and 5 write it, one step at a time.
    fn walk_step_by_step(
        target_ns: i128,
        start_ns: i128,
        x_cache: u32,
        consume: Duration,
        stall: Duration,
        strict: bool,
    ) -> Option<(u64, bool)> {
        assert!(consume.0 > 0, "the consumption step must be positive");
        assert!(x_cache >= 1, "x_cache must be at least 1");
        let reached = |t: i128| {
            if strict {
                t > target_ns
            } else {
                t >= target_ns
            }
        };
        let steps = (target_ns / consume.0 as i128).max(0) as u64;
        let mut at = start_ns;
        let mut in_group = 0u32;
        for step in 1..=steps {
            in_group += 1;
            at += consume.0 as i128;
            if reached(at) {
                return Some((step, false));
            }
            if in_group == x_cache {
                at += stall.0 as i128;
                if reached(at) {
                    return Some((step, true));
                }
                in_group = 0;
            }
        }
        None
    }

    fn s(secs: f64) -> Duration {
        Duration::from_secs_f64(secs)
    }

    proptest::proptest! {
        /// The jump to the group that reaches the target finds what stepping finds.
        #[test]
        fn the_walk_jumps_to_where_stepping_arrives(
            target in -50i128..20_000,
            start in -50i128..50,
            x_cache in 1u32..12,
            consume in 1u64..40,
            stall in 0u64..300,
            strict in proptest::bool::ANY,
        ) {
            proptest::prop_assert_eq!(
                walk(target, start, x_cache, Duration(consume), Duration(stall), strict),
                walk_step_by_step(target, start, x_cache, Duration(consume), Duration(stall), strict)
            );
        }
    }

    #[test]
    fn a_walk_of_10_to_the_18_steps_is_not_stepped_through() {
        // 10^9 s of copy time against 1 ns of consumption: 10^18 steps one by one.
        let p = pstart(
            Duration(1_000_000_000_000_000_000),
            Duration(2_000),
            4,
            Duration(1),
        );
        assert!(p > 0);
    }

    // 10 MB blocks (paper 002, section 4.5.3): consume 0.00192 s, SSD 0.052 s, HDD 0.12 s,
    // HDD to SSD 0.122 s.
    const C10: f64 = 0.00192;

    #[test]
    fn group_stall_is_eq_4_1_times_x_cache() {
        // Fig. 4.5: T_disk = 5, X_cache = 3, one unit per access: 2 units every 3 accesses.
        assert_eq!(group_stall(Duration(5), 3, Duration(1)), Duration(2));
        assert_eq!(group_stall(Duration(5), 9, Duration(1)), Duration::ZERO);
    }

    #[test]
    fn pstart_for_200mb_blocks_matches_table_4_7() {
        // Table 4.7 (200 MB): 4, 10, 16, 22 for X_cache = 1, 3, 5, 7 with the SSD read time
        // (1.5 s) as the consumer's: three groups of 1.5 s exactly meet T_hdd-ss = 4.5 s.
        let c = s(0.037);
        for (x, want) in [(1, 4), (3, 10), (5, 16), (7, 22), (25, 76), (35, 106)] {
            assert_eq!(pstart(s(4.5), s(1.5), x, c), want, "x_cache {x}");
        }
    }

    #[test]
    fn pdepth_for_10mb_blocks_matches_table_4_6() {
        // Table 4.6 (10 MB): 4, 12, 20, 28 for X_cache = 1, 3, 5, 7 and 91 once the SSD
        // stall vanishes (X_cache >= 35: (0.122 + 0.052) / 0.00192 = 90.6).
        let c = s(C10);
        for (x, want) in [
            (1, 4),
            (3, 12),
            (5, 20),
            (7, 28),
            (9, 36),
            (35, 91),
            (63, 91),
        ] {
            assert_eq!(pdepth(s(0.122), s(0.052), x, c), want, "x_cache {x}");
        }
    }

    #[test]
    fn pnext_lead_counts_whole_groups() {
        // 10 MB: 0.174 s of copy plus SSD read spans four groups of 0.052 s (3.35 groups).
        let c = s(C10);
        assert_eq!(pnext_lead(s(0.122), s(0.052), 5, c), 20);
        assert_eq!(pnext_lead(s(0.122), s(0.052), 7, c), 28);
        // Remote 200 MB (section 6.5.1): 4.5 + 4.158 s spans three groups of 4.158 s.
        assert_eq!(pnext_lead(s(4.5), s(4.158), 5, s(0.02)), 15);
        // Hand walk in time units (Fig. 5.3: copy 8, SSD read 4, X_cache = 2, stall 2 per group):
        // the time after steps 1..8 is 0, 3, 4, 7, 8, 11, 12, 13; it first exceeds 12 at step 8
        // inside a group, so the lead is 8 - 1 = 7.
        assert_eq!(pnext_lead(Duration(8), Duration(4), 2, Duration(1)), 7);
    }

    #[test]
    fn a_group_longer_than_any_duration_stalls_nothing() {
        // 10 s per block and 2^32 - 1 buffers: the group takes 4.3e19 ns, past u64. It covers
        // any read, so there is no stall; the product must not wrap round to a small number.
        let consume = Duration::from_secs(10);
        assert_eq!(
            group_stall(Duration(u64::MAX), u32::MAX, consume),
            Duration::ZERO
        );
        assert_eq!(pstart(s(4.5), s(1.5), u32::MAX, consume), 1);
    }

    #[test]
    fn ipo_depth_is_eq_5_1() {
        assert_eq!(ipo_depth(15, 1), 14);
        assert_eq!(ipo_depth(15, 15), 0);
        assert_eq!(ipo_depth(15, 20), 0);
    }
}
