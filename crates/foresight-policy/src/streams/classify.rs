//! The stream classifier: small bitmaps over disk regions detect sequential streams
//! (paper 001_9c47c4c84914efc3.txt, section 4.1).
//!
//! When a request arrives at block `B` and no region covers `B`, a bitmap is allocated for the
//! blocks `[B - offset, B + offset]`. Each later request inside the region sets the bits of the
//! blocks it covers. A request counts as a new distinct request only if its first block was not set
//! before and it does not go backwards from the furthest block the region has seen, so out-of-order
//! and repeated requests are ignored. When a region has counted `threshold` distinct requests, the
//! classifier reports a sequential stream. Regions idle for longer than the timeout are collected,
//! and their number is bounded; only proximity in time matters. Regions are also indexed by when
//! they were last touched, so the least recently touched one (the next to go idle, or to give way
//! when the table is full) is found without a scan.
//!
//! The paper's requests (64 KiB) fit many to a region. A request that starts exactly where the
//! region's latest distinct request ended continues it even when it lies beyond the region (an
//! application reading 1 MiB at a time steps past a 63-block half-width with every read): the region
//! moves to be centred on it and keeps its count, so large sequential reads are classified too.

use std::collections::{BTreeMap, BTreeSet};

use foresight_core::{Duration, Instant};

/// The most regions tracked at once; beyond it the least recently touched is dropped.
pub const MAX_REGIONS: usize = 16_384;

/// The widest region a `u128` bitmap holds: `offset` is capped so that `2 * offset + 1 <= 128`.
pub const MAX_OFFSET_BLOCKS: u64 = 63;

#[derive(Clone, Copy, Debug)]
struct Region {
    start: u64,
    bits: u128,
    distinct: u32,
    furthest: u64,
    /// The block after the latest distinct request's last block.
    next: u64,
    touched: Instant,
    reported: bool,
}

/// The classifier. See the module documentation.
#[derive(Debug)]
pub struct Classifier {
    offset_blocks: u64,
    threshold: u32,
    regions: BTreeMap<u64, Region>,
    /// `(touched, start)` of every region: the same regions, least recently touched first.
    by_touch: BTreeSet<(Instant, u64)>,
}

impl Classifier {
    /// A classifier with regions of `offset_blocks` either side of a request, reporting a stream
    /// after `threshold` distinct requests.
    pub fn new(offset_blocks: u64, threshold: u32) -> Classifier {
        assert!(
            (1..=MAX_OFFSET_BLOCKS).contains(&offset_blocks),
            "offset out of range"
        );
        assert!(threshold >= 1, "threshold must be positive");
        Classifier {
            offset_blocks,
            threshold,
            regions: BTreeMap::new(),
            by_touch: BTreeSet::new(),
        }
    }

    /// Regions tracked now.
    pub fn regions(&self) -> usize {
        self.regions.len()
    }

    /// When the least recently touched region was last touched: it is the first to go idle.
    pub fn oldest_touch(&self) -> Option<Instant> {
        self.by_touch.first().map(|&(t, _)| t)
    }

    fn len(&self) -> u64 {
        2 * self.offset_blocks + 1
    }

    /// Records a request of `blocks` blocks at `block`. Returns true exactly once per region: when
    /// this request makes it reach the threshold.
    pub fn observe(&mut self, now: Instant, block: u64, blocks: u64) -> bool {
        let len = self.len();
        let found = self
            .regions
            .range(..=block)
            .next_back()
            .filter(|(start, _)| block < *start + len)
            .map(|(start, _)| *start);
        // A request right after the latest one of the region before it continues that region,
        // which moves along.
        let continued = found.is_none().then(|| {
            self.regions
                .range(..=block)
                .next_back()
                .filter(|(_, r)| r.next == block && block > r.furthest)
                .map(|(s, _)| *s)
        });
        if let Some(Some(old)) = continued {
            let mut r = self.regions.remove(&old).expect("present");
            self.by_touch.remove(&(r.touched, old));
            r.start = block.saturating_sub(self.offset_blocks);
            r.bits = 0;
            self.by_touch.insert((r.touched, r.start));
            self.regions.insert(r.start, r);
        }
        let found = found.or(continued
            .flatten()
            .map(|_| block.saturating_sub(self.offset_blocks)));
        let start = match found {
            Some(s) => s,
            None => {
                if self.regions.len() >= MAX_REGIONS {
                    // The least recently touched, the lowest of those touched at once.
                    let (_, oldest) = self.by_touch.pop_first().expect("non-empty");
                    self.regions.remove(&oldest);
                }
                let s = block.saturating_sub(self.offset_blocks);
                self.regions.insert(
                    s,
                    Region {
                        start: s,
                        bits: 0,
                        distinct: 0,
                        furthest: block,
                        next: block,
                        touched: now,
                        reported: false,
                    },
                );
                self.by_touch.insert((now, s));
                s
            }
        };
        let threshold = self.threshold;
        let r = self.regions.get_mut(&start).expect("present");
        let first_bit = block - r.start;
        let first_was_set = r.bits & (1u128 << first_bit) != 0;
        let in_order = block >= r.furthest;
        for b in block..(block + blocks).min(r.start + len) {
            r.bits |= 1u128 << (b - r.start);
        }
        if r.touched != now {
            self.by_touch.remove(&(r.touched, start));
            self.by_touch.insert((now, start));
            r.touched = now;
        }
        if !first_was_set && in_order {
            r.distinct += 1;
            r.furthest = block;
            r.next = block + blocks;
        }
        if r.distinct >= threshold && !r.reported {
            r.reported = true;
            return true;
        }
        false
    }

    /// Drops the regions that start in `[start_block, end_block)`.
    pub fn forget_span(&mut self, start_block: u64, end_block: u64) {
        let starts: Vec<u64> = self
            .regions
            .range(start_block..end_block)
            .map(|(&s, _)| s)
            .collect();
        for s in starts {
            let r = self.regions.remove(&s).expect("listed region");
            self.by_touch.remove(&(r.touched, s));
        }
        debug_assert_eq!(self.by_touch.len(), self.regions.len());
    }

    /// Drops regions untouched since `now - idle`.
    pub fn collect(&mut self, now: Instant, idle: Duration) {
        while let Some(&(touched, start)) = self.by_touch.first() {
            if now.saturating_since(touched) < idle {
                break;
            }
            self.by_touch.pop_first();
            self.regions.remove(&start);
        }
        debug_assert_eq!(self.by_touch.len(), self.regions.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_a_sequential_run_after_threshold_requests() {
        let mut c = Classifier::new(32, 3);
        let t = Instant::ZERO;
        assert!(!c.observe(t, 1000, 16));
        assert!(!c.observe(t, 1016, 16));
        assert!(c.observe(t, 1032, 16));
        // Reported once.
        assert!(!c.observe(t, 1033, 1));
    }

    #[test]
    fn ignores_repeats_and_out_of_order_requests() {
        let mut c = Classifier::new(32, 3);
        let t = Instant::ZERO;
        c.observe(t, 1000, 16);
        c.observe(t, 1000, 16); // repeat
        c.observe(t, 990, 4); // backwards
        assert!(!c.observe(t, 1000, 16));
        assert!(!c.observe(t, 1016, 16));
        // 1030 lies inside the previous request: a repeated block, ignored.
        assert!(!c.observe(t, 1030, 2));
        assert!(c.observe(t, 1032, 2));
    }

    #[test]
    fn random_requests_never_become_streams() {
        let mut c = Classifier::new(32, 3);
        let mut rng = foresight_core::Rng::new(5);
        for _ in 0..10_000 {
            assert!(!c.observe(Instant::ZERO, rng.below(1 << 30) * 100, 16));
        }
        assert!(c.regions() <= MAX_REGIONS);
    }

    #[test]
    fn requests_larger_than_the_region_are_followed() {
        // 1 MiB reads (256 blocks) step past a 32-block half-width every time.
        let mut c = Classifier::new(32, 3);
        let t = Instant::ZERO;
        assert!(!c.observe(t, 10_000, 256));
        assert!(!c.observe(t, 10_256, 256));
        assert!(c.observe(t, 10_512, 256));
        assert_eq!(c.regions(), 1, "the region moved along");
        // A read that skips ahead is not a continuation.
        let mut c = Classifier::new(32, 2);
        c.observe(t, 10_000, 256);
        assert!(!c.observe(t, 10_300, 256));
    }

    #[test]
    fn idle_regions_are_collected() {
        let mut c = Classifier::new(8, 2);
        c.observe(Instant::ZERO, 100, 1);
        c.collect(Instant(2_000_000_000), Duration::from_secs(1));
        assert_eq!(c.regions(), 0);
    }
}
