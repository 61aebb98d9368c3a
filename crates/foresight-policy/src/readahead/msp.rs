//! MSP: massive stripe prefetching (paper 000_a596543dd26dac72.txt, section 4, Figs. 6 and 7).
//!
//! SASEQP keeps every fetch inside one strip, so a single stream keeps one disk busy at a time and
//! the others idle (*parallelism loss*, section 1.2). MSP runs in the RAID layer, beside the page
//! cache, watches the *strip numbers* of the physical block accesses that reach the array, and when it
//! sees a long run of them it prefetches whole stripes, so every disk works at once. It stays off
//! for many interleaved streams, which SASEQP already serves well.
//!
//! # Detection (Fig. 7, lines 14-25)
//!
//! Each access maps to its volume strip `SN_c`. An access to the same strip as the previous one
//! (`SN_p`) changes nothing. Otherwise the sequential counter `SC` is raised by one, up to `SC_max`,
//! when `SN_c = SN_p + 1` (the next strip: *sequential*), or when `SN_c = SN_pp`, the strip before the
//! previous one (the *semi-sequential* rule: a file read that visits a metadata block between two
//! accesses to the same data strip, Fig. 6); any other strip lowers `SC` by one, never below 1.
//! Before the first access there is no previous strip: the paper initialises `SN_p` and `SN_pp` to
//! 0, which would make a first access to strip 0 a no-op and one to strip 1 sequential; we start
//! with no history instead, so the first access lowers `SC` to the floor, 1.
//!
//! # Prefetching (Fig. 7, lines 26-34)
//!
//! While `SC < SC_thresh` MSP is off and its stripe prefetch size `SPS` is 0 (line 27 reads
//! `SPS <- min(SPS - 1, 0)`, which is 0 for any `SPS >= 1`; we read it as a reset to 0 and keep `SPS`
//! from going negative). Once `SC >= SC_thresh`, every *sequential* step (not a semi-sequential one)
//! queues the `SPS` stripes from the stripe that holds `SN_c` on (the paper's loop
//! `i in 0..SPS` over stripes `SN_c + i`, where `SN_c` must be read as "the stripe of strip `SN_c`",
//! the only reading under which the fetch is stripe-aligned), skipping stripes past the end of the
//! volume and stripes MSP already has in flight or fetched lately, and then grows `SPS` by one, up to
//! `SPS_max`. So `SPS` ramps 0, 1, 2, ... `SPS_max` over consecutive sequential steps, and the first
//! step above the threshold fetches nothing. Blocks of a stripe that are already in the array cache
//! or being read (line 32 of the paper's listing leaves out cached blocks and those already on
//! their way) are skipped by the driver, which knows the cache.
//!
//! Defaults are the paper's: `SC_max` 42, `SC_thresh` 38, `SPS_max` 8 (Fig. 7).
//!
//! # The contract with the driver
//!
//! MSP lives at the array layer, so its inputs and outputs are in *volume* bytes, under the reserved
//! file id [`VOLUME_FILE`]:
//!
//! - For every block request that reaches the array, in arrival order, hits in the array cache
//!   included, the driver calls `handle(now, Input::Read { stream, file: VOLUME_FILE, range, miss })`
//!   with `range` the request's volume byte range. MSP steps through every strip the range touches,
//!   in order, as if it were called per block (Fig. 7 takes one physical block per call). `stream`
//!   and `miss` are informational: the detector is one per array, as in the paper, and does not know
//!   who asked.
//! - It answers with `Output::Fetch { id, file: VOLUME_FILE, range, into: Tier::Level(1) }`: `range`
//!   is one whole stripe (clipped to the volume), stripe-aligned; `Tier::Level(1)` is the array
//!   cache. The driver reads the blocks of the range that are neither in the array cache nor being
//!   read, splitting them per disk as the array does, and answers `Input::Fetched { id, ok }` when
//!   they have all arrived (at once if none were missing). Demand reads that pass through the array
//!   should land in the array cache too, so that "clean" blocks are skipped as in the paper.
//! - Reads of any other file id are ignored. `Hint` and `MemoryPressure` are ignored: the array
//!   cache is bounded by the driver, which may drop fetched blocks.
//! - MSP keeps only the volume's geometry, which a growing set of files never changes, so it
//!   ignores `Policy::add_file`.
//!
//! MSP remembers the stripes it has in flight and the last few it fetched, so it does not queue the
//! same stripe twice; both sets are bounded by `4 * SPS_max` stripes.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use foresight_core::{ByteRange, FetchId, Instant};

use crate::layout::{Striping, VOLUME_FILE};
use crate::{FetchIds, Input, Layout, Output, Policy, PolicyError, Tier};

/// MSP's thresholds (paper 000, Fig. 7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MspSettings {
    /// `SC_max`: the largest value of the sequential counter. At least 1.
    pub sc_max: u32,
    /// `SC_thresh`: the counter value at which MSP turns on. At most `sc_max`.
    pub sc_thresh: u32,
    /// `SPS_max`: the most stripes queued per sequential step. At least 1, at most
    /// [`MspSettings::SPS_MAX_STRIPES_LIMIT`].
    pub sps_max_stripes: u32,
}

impl Default for MspSettings {
    fn default() -> Self {
        MspSettings {
            sc_max: 42,
            sc_thresh: 38,
            sps_max_stripes: 8,
        }
    }
}

impl MspSettings {
    /// The largest `sps_max_stripes` accepted: 1,024 stripes of 128 KiB strips on 5 disks is
    /// 640 MiB ahead, already more than the paper's 512 MiB RAID cache.
    pub const SPS_MAX_STRIPES_LIMIT: u32 = 1024;

    /// Checks the bounds, naming the config key that breaks one.
    pub fn validate(&self) -> Result<(), PolicyError> {
        if self.sc_max == 0 {
            return Err(PolicyError::BadSetting {
                key: "sc_max",
                message: "must be at least 1 (the paper uses 42)".into(),
            });
        }
        if self.sc_thresh > self.sc_max {
            return Err(PolicyError::BadSetting {
                key: "sc_thresh",
                message: format!(
                    "{} is above sc_max = {}, so MSP could never turn on; use at most {}",
                    self.sc_thresh, self.sc_max, self.sc_max
                ),
            });
        }
        if !(1..=Self::SPS_MAX_STRIPES_LIMIT).contains(&self.sps_max_stripes) {
            return Err(PolicyError::BadSetting {
                // The config's name for it.
                key: "sps_max",
                message: format!(
                    "{} is outside 1..={} stripes (the paper uses 8)",
                    self.sps_max_stripes,
                    Self::SPS_MAX_STRIPES_LIMIT
                ),
            });
        }
        Ok(())
    }
}

/// Massive stripe prefetching. See the module documentation.
#[derive(Debug)]
pub struct Msp {
    settings: MspSettings,
    striping: Striping,
    volume_bytes: u64,
    /// Stripes that start inside the volume.
    stripes_total: u64,
    /// `SN_p`: the strip of the previous access, if any.
    prev_strip: Option<u64>,
    /// `SN_pp`: the strip before `SN_p`, if any.
    prev_prev_strip: Option<u64>,
    /// `SC`.
    counter: u32,
    /// `SPS`, in stripes.
    sps_stripes: u32,
    /// Fetches in flight, by id, with the stripe each reads.
    in_flight: BTreeMap<FetchId, u64>,
    in_flight_stripes: BTreeSet<u64>,
    /// Stripes fetched lately, oldest first, and the same as a set.
    recent: VecDeque<u64>,
    recent_set: BTreeSet<u64>,
    /// Bound on `in_flight` and on `recent`.
    tracked_max: usize,
    ids: FetchIds,
    out: VecDeque<Output>,
}

impl Msp {
    /// MSP over the striped volume of `layout`. Fails if the settings are out of bounds or the
    /// volume is not striped (MSP is an array policy; there are no stripes to fetch).
    pub fn new(settings: MspSettings, layout: &Layout) -> Result<Msp, PolicyError> {
        settings.validate()?;
        let Some(striping) = layout.striping() else {
            return Err(PolicyError::BadSetting {
                key: "name",
                message: "msp prefetches stripes and needs a striped volume (device.kind = \
                          \"raid0\"); use seqp or saseqp on a volume that is not striped"
                    .into(),
            });
        };
        assert!(striping.disks >= 1 && striping.strip_bytes >= 1);
        let volume_bytes = layout.volume_bytes().0;
        let tracked_max = 4 * settings.sps_max_stripes as usize;
        Ok(Msp {
            settings,
            striping,
            volume_bytes,
            stripes_total: volume_bytes.div_ceil(striping.stripe_bytes()),
            prev_strip: None,
            prev_prev_strip: None,
            counter: 0,
            sps_stripes: 0,
            in_flight: BTreeMap::new(),
            in_flight_stripes: BTreeSet::new(),
            recent: VecDeque::with_capacity(tracked_max),
            recent_set: BTreeSet::new(),
            tracked_max,
            ids: FetchIds::default(),
            out: VecDeque::new(),
        })
    }

    /// The sequential counter `SC`.
    pub fn sequential_counter(&self) -> u32 {
        self.counter
    }

    /// The stripe prefetch size `SPS`: stripes the next sequential step will queue.
    pub fn stripe_prefetch_stripes(&self) -> u32 {
        self.sps_stripes
    }

    /// Whether MSP is on (`SC >= SC_thresh`).
    pub fn active(&self) -> bool {
        self.counter >= self.settings.sc_thresh
    }

    /// The settings it was built with.
    pub fn settings(&self) -> MspSettings {
        self.settings
    }

    /// One access to volume strip `strip` (Fig. 7, lines 16-34).
    fn on_strip(&mut self, strip: u64) {
        if self.prev_strip == Some(strip) {
            return;
        }
        let sequential = self.prev_strip.is_some_and(|p| p + 1 == strip);
        if sequential || self.prev_prev_strip == Some(strip) {
            self.counter = (self.counter + 1).min(self.settings.sc_max);
        } else {
            self.counter = self.counter.saturating_sub(1).max(1);
        }
        self.prev_prev_strip = self.prev_strip;
        self.prev_strip = Some(strip);
        if self.counter < self.settings.sc_thresh {
            self.sps_stripes = 0;
            return;
        }
        if !sequential {
            return;
        }
        let first = self.striping.stripe_of_strip(strip);
        for stripe in first..first + self.sps_stripes as u64 {
            if stripe >= self.stripes_total || self.in_flight.len() >= self.tracked_max {
                break;
            }
            if self.in_flight_stripes.contains(&stripe) || self.recent_set.contains(&stripe) {
                continue;
            }
            self.fetch(stripe);
        }
        self.sps_stripes = (self.sps_stripes + 1).min(self.settings.sps_max_stripes);
        assert!(self.counter <= self.settings.sc_max);
        assert!(self.in_flight.len() <= self.tracked_max);
    }

    fn fetch(&mut self, stripe: u64) {
        let stripe_bytes = self.striping.stripe_bytes();
        let start = stripe * stripe_bytes;
        let end = (start + stripe_bytes).min(self.volume_bytes);
        debug_assert!(start < end);
        let id = self.ids.next_id();
        self.in_flight.insert(id, stripe);
        self.in_flight_stripes.insert(stripe);
        self.out.push_back(Output::Fetch {
            id,
            file: VOLUME_FILE,
            range: ByteRange::new(start, end - start),
            into: Tier::Level(1),
        });
    }

    fn on_fetched(&mut self, id: FetchId, ok: bool) {
        let Some(stripe) = self.in_flight.remove(&id) else {
            return;
        };
        self.in_flight_stripes.remove(&stripe);
        // A failed fetch is forgotten, so the stripe may be queued again.
        if ok && self.recent_set.insert(stripe) {
            if self.recent.len() == self.tracked_max {
                let old = self.recent.pop_front().expect("a full queue has a front");
                self.recent_set.remove(&old);
            }
            self.recent.push_back(stripe);
        }
        assert!(self.recent.len() <= self.tracked_max);
        debug_assert_eq!(self.recent.len(), self.recent_set.len());
    }
}

impl Policy for Msp {
    fn name(&self) -> &str {
        "msp"
    }

    fn handle(&mut self, _now: Instant, input: Input) {
        match input {
            Input::Read { file, range, .. } if file == VOLUME_FILE && !range.is_empty() => {
                let first = self.striping.strip_of(range.start);
                let last = self
                    .striping
                    .strip_of(foresight_core::ByteOffset(range.end().0 - 1));
                for strip in first..=last {
                    self.on_strip(strip);
                }
            }
            Input::Fetched { id, ok } => self.on_fetched(id, ok),
            // MSP follows the array's block requests, not streams.
            Input::Read { .. }
            | Input::Hint { .. }
            | Input::MemoryPressure { .. }
            | Input::StreamClosed { .. }
            | Input::FileClosed { .. } => {}
        }
    }

    fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::BLOCK_BYTES;
    use foresight_core::{ByteLen, Rng, StreamId};
    use proptest::prelude::*;

    /// Paper 000, Figs. 1 and 6: five disks, four-block strips.
    fn figure_layout() -> Layout {
        Layout::new(
            ByteLen::mib(64),
            Some(Striping {
                disks: 5,
                strip_bytes: 4 * BLOCK_BYTES,
            }),
        )
    }

    fn access(m: &mut Msp, range: ByteRange) -> Vec<(ByteRange, Tier)> {
        access_ids(m, range)
            .into_iter()
            .map(|(_, r, t)| (r, t))
            .collect()
    }

    fn access_ids(m: &mut Msp, range: ByteRange) -> Vec<(FetchId, ByteRange, Tier)> {
        m.handle(
            Instant::ZERO,
            Input::Read {
                stream: StreamId(0),
                file: VOLUME_FILE,
                range,
                miss: None,
            },
        );
        let mut v = vec![];
        while let Some(o) = m.poll_output() {
            match o {
                Output::Fetch {
                    id,
                    file,
                    range,
                    into,
                } => {
                    assert_eq!(file, VOLUME_FILE);
                    v.push((id, range, into));
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        v
    }

    fn block(m: &mut Msp, b: u64) -> Vec<(ByteRange, Tier)> {
        access(m, ByteRange::new(b * BLOCK_BYTES, BLOCK_BYTES))
    }

    #[test]
    fn figure_6_semisequential_read_raises_the_counter() {
        // Fig. 6: a 12-block file, data in B16..B27, metadata in B0..B3, read as
        // (0, 16, 17, 18, 1, 19, 20, 21, 2, 22, 23, 24, 3, 25, 26, 27); strips
        // (0, 4, 0, 4, 5, 0, 5, 6, 0, 6) once repeats are dropped. The paper lists SC as
        // (1, 0, 1, 2, 3, 2, 3, 4, 3, 4), which counts the first access as sequential and lets SC
        // dip to 0 although Fig. 7, line 23, floors it at 1. With the floor and no history before
        // the first access, the same rules give (1, 1, 2, 3, 4, 3, 4, 5, 4, 5): the same steps, up
        // by one after the dip.
        let mut m = Msp::new(MspSettings::default(), &figure_layout()).unwrap();
        let mut seen = vec![];
        let mut last_strip = None;
        for b in [0, 16, 17, 18, 1, 19, 20, 21, 2, 22, 23, 24, 3, 25, 26, 27] {
            assert!(block(&mut m, b).is_empty());
            if last_strip != Some(b / 4) {
                seen.push(m.sequential_counter());
                last_strip = Some(b / 4);
            }
        }
        assert_eq!(seen, vec![1, 1, 2, 3, 4, 3, 4, 5, 4, 5]);
    }

    #[test]
    fn counter_rules() {
        let settings = MspSettings {
            sc_max: 5,
            sc_thresh: 5,
            sps_max_stripes: 1,
        };
        let mut m = Msp::new(settings, &figure_layout()).unwrap();
        let strip = |m: &mut Msp, s: u64| {
            block(m, s * 4);
            m.sequential_counter()
        };
        assert_eq!(strip(&mut m, 10), 1, "first access: floor");
        assert_eq!(strip(&mut m, 11), 2, "next strip: +1");
        assert_eq!(strip(&mut m, 11), 2, "same strip: no change");
        assert_eq!(strip(&mut m, 3), 1, "elsewhere: -1");
        assert_eq!(
            strip(&mut m, 11),
            2,
            "the strip before the previous one: +1"
        );
        assert_eq!(strip(&mut m, 40), 1, "elsewhere: -1");
        assert_eq!(strip(&mut m, 7), 1, "floor at 1");
        for s in 8..20 {
            strip(&mut m, s);
        }
        assert_eq!(m.sequential_counter(), 5, "capped at sc_max");
        // A request that spans strips steps through each of them in order.
        let mut m = Msp::new(settings, &figure_layout()).unwrap();
        access(
            &mut m,
            ByteRange::new(20 * 4 * BLOCK_BYTES, 3 * 4 * BLOCK_BYTES),
        );
        assert_eq!(m.sequential_counter(), 3);
    }

    #[test]
    fn sps_ramps_to_the_maximum_with_stripe_aligned_fetches() {
        let layout = figure_layout();
        let settings = MspSettings::default();
        let mut m = Msp::new(settings, &layout).unwrap();
        let stripe_bytes = layout.stripe_bytes().unwrap();
        let strip_bytes = layout.strip_bytes().unwrap();
        let mut sps_seen = vec![];
        let mut fetched: Vec<u64> = vec![];
        // One sequential reader, one strip per step.
        for s in 0..80u64 {
            let before = m.stripe_prefetch_stripes();
            let out = access(&mut m, ByteRange::new(s * strip_bytes, strip_bytes));
            if s + 1 < settings.sc_thresh as u64 {
                assert!(!m.active() && out.is_empty(), "strip {s}");
            }
            for (r, into) in &out {
                assert_eq!(*into, Tier::Level(1));
                assert_eq!(r.start.0 % stripe_bytes, 0, "{r}");
                assert_eq!(r.len.0, stripe_bytes);
                let stripe = r.start.0 / stripe_bytes;
                // From the reader's stripe on, never further than SPS stripes.
                let cur = s / 5;
                assert!(
                    stripe >= cur && stripe < cur + before as u64,
                    "{stripe} at strip {s}"
                );
                fetched.push(stripe);
            }
            if m.active() {
                sps_seen.push(m.stripe_prefetch_stripes());
            }
        }
        // SC reaches 38 on the 38th sequential step (the first access only sets the floor):
        // SPS then goes 1, 2, ... 8 and stays.
        assert_eq!(&sps_seen[..9], &[1, 2, 3, 4, 5, 6, 7, 8, 8]);
        // Nothing is queued twice while it is in flight.
        let mut sorted = fetched.clone();
        sorted.dedup();
        assert_eq!(sorted, fetched);
        assert!(fetched.len() >= 10);
    }

    #[test]
    fn completed_stripes_are_not_queued_again_and_failed_ones_are() {
        let layout = figure_layout();
        let settings = MspSettings {
            sc_max: 3,
            sc_thresh: 2,
            sps_max_stripes: 3,
        };
        let mut m = Msp::new(settings, &layout).unwrap();
        let strip_bytes = layout.strip_bytes().unwrap();
        let stripe_bytes = layout.stripe_bytes().unwrap();
        let run = |m: &mut Msp| -> Vec<(FetchId, u64)> {
            let mut v = vec![];
            for s in 0..12u64 {
                for (id, r, _) in access_ids(m, ByteRange::new(s * strip_bytes, strip_bytes)) {
                    v.push((id, r.start.0 / stripe_bytes));
                }
            }
            v
        };
        let first = run(&mut m);
        assert!(first.len() >= 2, "{first:?}");
        // Everything lands but the first fetch, which fails.
        let (fail_id, fail_stripe) = first[0];
        for &(id, _) in &first {
            m.handle(
                Instant::ZERO,
                Input::Fetched {
                    id,
                    ok: id != fail_id,
                },
            );
        }
        // Reading the same run again queues, of those stripes, only the one that failed.
        let again: Vec<u64> = run(&mut m)
            .into_iter()
            .map(|(_, s)| s)
            .filter(|s| first.iter().any(|&(_, f)| f == *s))
            .collect();
        assert_eq!(again, vec![fail_stripe]);
    }

    #[test]
    fn semisequential_steps_do_not_prefetch_and_dropping_below_threshold_resets_sps() {
        let layout = figure_layout();
        let settings = MspSettings {
            sc_max: 6,
            sc_thresh: 4,
            sps_max_stripes: 8,
        };
        let mut m = Msp::new(settings, &layout).unwrap();
        let strip_bytes = layout.strip_bytes().unwrap();
        let at = |s: u64| ByteRange::new(s * strip_bytes, strip_bytes);
        for s in 100..110 {
            access(&mut m, at(s));
        }
        assert!(m.active());
        let sps = m.stripe_prefetch_stripes();
        assert!(sps >= 2);
        // A metadata access elsewhere, then back to the same strip: +1, no prefetch, SPS kept.
        assert!(access(&mut m, at(0)).is_empty());
        assert!(access(&mut m, at(109)).is_empty());
        assert_eq!(m.stripe_prefetch_stripes(), sps);
        // Jumps all over: SC falls under the threshold and SPS resets.
        for s in [500, 7, 900, 33, 1200, 61] {
            access(&mut m, at(s));
        }
        assert!(!m.active());
        assert_eq!(m.stripe_prefetch_stripes(), 0);
    }

    #[test]
    fn fetches_stop_at_the_end_of_the_volume() {
        // 5 disks x 16 KiB strips = 80 KiB stripes; a volume of 10.5 stripes.
        let layout = Layout::new(
            ByteLen(80 * 1024 * 21 / 2),
            Some(Striping {
                disks: 5,
                strip_bytes: 4 * BLOCK_BYTES,
            }),
        );
        let settings = MspSettings {
            sc_max: 2,
            sc_thresh: 1,
            sps_max_stripes: 8,
        };
        let mut m = Msp::new(settings, &layout).unwrap();
        let strip_bytes = layout.strip_bytes().unwrap();
        let mut ends = vec![];
        for s in 0..52u64 {
            for (r, _) in access(&mut m, ByteRange::new(s * strip_bytes, strip_bytes)) {
                ends.push(r.end().0);
            }
        }
        assert!(ends.iter().all(|&e| e <= layout.volume_bytes().0));
        assert!(ends.contains(&layout.volume_bytes().0));
    }

    #[test]
    fn settings_are_validated_by_key() {
        let l = figure_layout();
        let bad = |s: MspSettings| match Msp::new(s, &l) {
            Err(PolicyError::BadSetting { key, .. }) => key,
            other => panic!("{other:?}"),
        };
        let d = MspSettings::default();
        assert_eq!(bad(MspSettings { sc_thresh: 43, ..d }), "sc_thresh");
        assert_eq!(
            bad(MspSettings {
                sc_max: 0,
                sc_thresh: 0,
                ..d
            }),
            "sc_max"
        );
        assert_eq!(
            bad(MspSettings {
                sps_max_stripes: 0,
                ..d
            }),
            // The config key: the field's name was not one a user could set.
            "sps_max"
        );
        assert_eq!(
            match Msp::new(d, &Layout::new(ByteLen::mib(1), None)) {
                Err(PolicyError::BadSetting { key, .. }) => key,
                other => panic!("{other:?}"),
            },
            "name"
        );
        assert!(Msp::new(MspSettings { sc_thresh: 42, ..d }, &l).is_ok());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Paper 000, section 4: MSP "is automatically deactivated for concurrent reads generated by
        /// a large number of processes". Streams in files far apart read sequentially, each request
        /// inside one strip (as SASEQP issues them), and their requests reach the array in an order
        /// drawn from the seed: the counter never reaches the threshold and nothing is fetched.
        #[test]
        fn msp_stays_off_when_many_streams_interleave(
            seed in any::<u64>(),
            streams in 8u64..65,
            request_blocks in prop::sample::select(vec![1u64, 2, 4, 8, 16, 32]),
            round_robin in any::<bool>(),
        ) {
            let strip_blocks = 32; // 128 KiB strips, as in the paper's array.
            let layout = Layout::new(
                ByteLen::gib(64),
                Some(Striping { disks: 5, strip_bytes: strip_blocks * BLOCK_BYTES }),
            );
            let mut m = Msp::new(MspSettings::default(), &layout).unwrap();
            let mut rng = Rng::new(seed);
            // Stream i reads from volume block i * 2^20 (4 GiB apart).
            let mut next: Vec<u64> = (0..streams).map(|i| i << 20).collect();
            let mut max_counter = 0;
            for step in 0..20_000u64 {
                let i = if round_robin { step % streams } else { rng.below(streams) } as usize;
                // Stay inside the strip, as a SASEQP window does.
                let left_in_strip = strip_blocks - next[i] % strip_blocks;
                let n = request_blocks.min(left_in_strip);
                let out = access(&mut m, ByteRange::new(next[i] * BLOCK_BYTES, n * BLOCK_BYTES));
                prop_assert!(out.is_empty());
                next[i] += n;
                max_counter = max_counter.max(m.sequential_counter());
            }
            prop_assert!(max_counter < MspSettings::default().sc_thresh, "SC reached {max_counter}");
        }
    }

    #[test]
    fn one_stream_turns_msp_on() {
        let strip_blocks = 32;
        let layout = Layout::new(
            ByteLen::gib(1),
            Some(Striping {
                disks: 5,
                strip_bytes: strip_blocks * BLOCK_BYTES,
            }),
        );
        let mut m = Msp::new(MspSettings::default(), &layout).unwrap();
        let mut fetched = 0;
        for b in (0..2000u64).step_by(4) {
            fetched += access(&mut m, ByteRange::new(b * BLOCK_BYTES, 4 * BLOCK_BYTES)).len();
        }
        assert!(m.active());
        assert!(fetched > 0);
    }
}
