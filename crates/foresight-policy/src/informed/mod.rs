//! Informed prefetching down a stack of storage tiers: TIP, iPipe, IPO and IPODS (paper
//! 002_792ac46f2e9108f8.txt, chapters 4 to 6).
//!
//! The application discloses its reads in order (`Input::Hint`), one block per hinted range. TIP
//! keeps `X_cache` memory buffers busy with the next hinted blocks: it fetches the first `X_cache`
//! when the hint arrives and one more each time the application takes a block (`Input::Read`), so
//! at most `X_cache` prefetched blocks wait or travel at once (the timing of the paper's Fig. 4.5).
//! With `ipipe`, `ipo` and `ipods` one more prefetcher works between every pair of adjacent storage
//! levels and copies later hinted blocks one level up, so that TIP (or the prefetcher above) finds
//! them on the faster level. A copy never moves the original: the block stays on its home level
//! (section 3.2.2) and the upper copy is dropped (`Output::Evict`) once its consumer has read it.
//!
//! The hinted list names each access by its absolute position in the stream's hints: TIP's next
//! fetch, the application's next read, every prefetcher's window and every read or copy under way
//! refer to accesses that way. Every position below the lowest of TIP's next fetch, the
//! application's next read and the reads and copies in flight is never looked at again (a
//! prefetcher copies nothing TIP has fetched already), so those entries are dropped from the
//! front as the stream moves on, and position `p` lives at `p - base`. The entries still held,
//! hinted and not yet dropped, are at most [`HINTED_RANGES_LIVE_MAX`]; ranges hinted past it are
//! dropped, and their reads go on demand. A later hint that fits once the application has moved
//! on is kept: the reads between the two do not match the list and go on demand, and the list
//! resumes with the first read that matches it. A list drained after a burst of hints gives its
//! room back (to twice the live entries, once it exceeds four times them and
//! [`HINTED_RANGES_CAPACITY_FLOOR`]). When the hinted stream closes (`Input::StreamClosed`) the
//! list goes, and so do the copies the prefetchers placed for it (`Output::Evict`, at once or as
//! they land): nobody else would read them. Its blocks TIP fetched into memory are the driver's to
//! free, as with every policy.
//!
//! Where each block is, the policy knows from its own completed copies, and it names no source: the
//! driver reads from the nearest level holding the block, which is the same level the policy
//! expects, since both learn of a copy when it completes.
//!
//! * `ipipe` (algorithm 3): prefetcher `j` (level `j + 1` to level `j`) starts at Pstart
//!   (algorithm 1), keeps Pdepth blocks (algorithm 2) in its window and, each time its consumer takes
//!   a block from level `j`, copies the next hinted block beyond the window.
//! * `ipo` and `ipods` (section 5.4.3): the window's depth is what `max_bw` leaves (eq. 5.1), it
//!   starts at algorithm 4's Pstart, and each block its consumer takes from level `j` is followed by
//!   a copy of the block Pnext accesses further on (algorithm 5). No more than `max_bw` reads (TIP's
//!   and the copies') are in flight at once. `ipods` is the same policy over remote levels: the
//!   network is part of the per-block times it is given (section 6.4.1, eq. 6.1).
//! * Bandwidth shortage (`ipo`, `ipods`): a copy that completes after its consumer already read the
//!   block from below came too late; it is dropped and its slot is not refilled, so the depth
//!   shrinks by one (algorithm 3's "shrink the pipelining depth by 1"). `ipipe` assumes enough
//!   bandwidth (section 4.3.2), so a late copy is only slow: its slot moves on, and TIP waits for a
//!   copy already on its way to level 1 instead of reading the block from below a second time (it
//!   answers the application's `Input::Read` with `miss` by `Output::Defer` meanwhile).
//! * N levels (section 8.2.5 leaves this open): one prefetcher per adjacent pair. Prefetcher `j`
//!   plans with the time a block needs to climb from level `j + 1` to level 1 and with TIP's pace on
//!   level 1, at which the whole pipeline moves; IPO's spare reads (`max_bw - X_cache`) are shared equally, the remainder going to
//!   the topmost pair.

pub mod pipeline;
pub mod tip;

use std::collections::{BTreeMap, VecDeque};

use foresight_core::{ByteRange, Duration, FetchId, FileId, Instant, StreamId};

use crate::{FetchIds, Input, Output, Policy, PolicyError, Tier};

/// The policy names this module builds.
pub const NAMES: &[&str] = &["tip", "ipipe", "ipo", "ipods"];

/// Most hinted ranges the policy holds at once, hinted and not yet dropped from the front (the
/// application, TIP and every copy are past the entries dropped); ranges hinted past it are
/// dropped. The simulator's hinted application discloses its whole access list up front, so all
/// of it is live at once: the paper's longest trace (LASR2) has 51,206 reads, and the simulator
/// takes at most 4 Mi (`tiered::hinted::MAX_READS`, checked against this at compile time, the
/// same count as its other workloads' disclosed reads), 82 times LASR2. 4 Mi entries of
/// [`ACCESS_BYTES`] (24) cost 96 MiB at most.
pub const HINTED_RANGES_LIVE_MAX: usize = 1 << 22;

/// Room (in entries) the hinted list keeps however few are live: below it the list never shrinks,
/// so that a short list that fills and drains does not reallocate every time. 1 Ki entries of
/// [`ACCESS_BYTES`] are 24 KiB.
pub const HINTED_RANGES_CAPACITY_FLOOR: usize = 1 << 10;

/// Bytes one hinted access takes in the list.
pub const ACCESS_BYTES: usize = std::mem::size_of::<Access>();

const _: () = assert!(
    ACCESS_BYTES <= 24,
    "the memory figure of HINTED_RANGES_LIVE_MAX counts 24 bytes an access"
);

/// How many prefetch buffers TIP uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XCache {
    /// A fixed count.
    Fixed(u32),
    /// TIP's cost-benefit choice ([`tip::auto_x_cache`]).
    Auto,
}

/// One storage level below memory as the policy sees it: per-block times and capacity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LevelTiming {
    /// Time to read one block from this level into memory (`T_ss-cache`, `T_hdd-cache`).
    pub read_to_memory: Duration,
    /// Time to copy one block from this level to the level just above it (`T_hdd-ss`); unused for
    /// level 1.
    pub copy_up: Duration,
    /// Blocks this level can hold besides its originals (`None` on the last, home level).
    pub capacity_blocks: Option<u64>,
}

/// The informed policies' settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InformedConfig {
    /// TIP's prefetch buffers (`policy.x_cache`).
    pub x_cache: XCache,
    /// The most reads in flight at once across TIP and the copies (`policy.max_bw`, eq. 5.1);
    /// required by `ipo` and `ipods`, ignored by the others.
    pub max_bw: Option<u32>,
    /// The application's time per block, `T_cpu + T_hit + T_driver`.
    pub consume: Duration,
    /// Levels 1 (fastest) to L (home of every block), at least one.
    pub levels: Vec<LevelTiming>,
    /// Memory buffers available for prefetching; caps `x_cache`.
    pub memory_blocks: u64,
    /// The LRU cache's marginal hit ratio per buffer in parts per million, for `x_cache = auto`.
    pub lru_hit_gain_ppm: u32,
    /// Overrides algorithm 5's Pnext lead with this many `X_cache` groups (`policy.pnext_groups`).
    pub pnext_groups: Option<u32>,
}

impl Default for InformedConfig {
    /// The paper's 10 MB setting (section 4.5.3): SSD 0.052 s, HDD 0.12 s, HDD to SSD 0.122 s,
    /// 0.00192 s per block, `x_cache = auto`, `max_bw = 15`.
    fn default() -> Self {
        InformedConfig {
            x_cache: XCache::Auto,
            max_bw: Some(15),
            consume: Duration::from_micros(1_920),
            levels: vec![
                LevelTiming {
                    read_to_memory: Duration::from_millis(52),
                    copy_up: Duration::ZERO,
                    capacity_blocks: Some(409),
                },
                LevelTiming {
                    read_to_memory: Duration::from_millis(120),
                    copy_up: Duration::from_millis(122),
                    capacity_blocks: None,
                },
            ],
            memory_blocks: 1 << 20,
            lru_hit_gain_ppm: 0,
            pnext_groups: None,
        }
    }
}

impl InformedConfig {
    /// Checks the settings for the named policy; the error names the key.
    pub fn validate(&self, name: &str) -> Result<(), PolicyError> {
        let bad = |key, message: String| Err(PolicyError::BadSetting { key, message });
        if self.levels.is_empty() {
            return bad("levels", "at least one storage level is needed".into());
        }
        if self.consume.0 == 0 {
            return bad("consume", "the time per block must be positive".into());
        }
        if let XCache::Fixed(0) = self.x_cache {
            return bad("x_cache", "must be at least 1, or \"auto\"".into());
        }
        if self.memory_blocks == 0 {
            return bad(
                "x_cache",
                "memory holds no block: raise device.memory".into(),
            );
        }
        if matches!(name, "ipo" | "ipods") {
            match self.max_bw {
                None | Some(0) => {
                    return bad(
                        "max_bw",
                        format!(
                            "`{name}` needs the most concurrent reads, e.g. policy.max_bw = 15"
                        ),
                    )
                }
                Some(_) => {}
            }
        }
        if self.levels.len() < 2 && name != "tip" {
            return bad(
                "name",
                format!("`{name}` pipelines between levels: the device needs two or more tiers"),
            );
        }
        Ok(())
    }
}

/// Which informed policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Tip,
    Window,
    Chain,
}

/// One prefetcher between level `j + 1` and level `j`.
#[derive(Clone, Debug)]
struct Stage {
    /// Target level (1-based).
    level: u8,
    /// Blocks it may have on their way or waiting on its level.
    depth: u64,
    /// First access it copies, 0-based.
    start: usize,
    /// Pnext lead (chain mode).
    lead: usize,
    /// Highest access the window has reached (window mode).
    window_hi: Option<usize>,
    /// Copies in flight or resident on its level and not yet consumed.
    held: u64,
    /// Room on its level, in blocks.
    capacity: Option<u64>,
}

/// One hinted access and what the policy knows of its block's copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Access {
    range: ByteRange,
    file: FileId,
    /// Nearest level (1-based) holding the block; `levels.len()` for the home level.
    nearest: u8,
    /// Level a copy of the block is travelling to, 0 if none.
    copying_to: u8,
    /// Levels (bit `j - 1`) where a prefetcher holds a copy of the block, landed or not.
    held_at: u8,
}

#[derive(Clone, Copy, Debug)]
enum Job {
    /// TIP's read of access `access` from `source` into memory.
    Tip { access: usize, source: u8 },
    /// A copy of access `access` from `source` into `into`.
    Copy { access: usize, source: u8, into: u8 },
    /// A read or copy issued for the hinted stream before it closed; its list is gone, so it
    /// carries what its completion needs: the copy to drop from its level, if it is one.
    Orphan {
        evict: Option<(FileId, ByteRange, u8)>,
    },
}

/// What the policy counted, for reports and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InformedStats {
    /// Prefetch buffers in use.
    pub x_cache: u32,
    /// TIP reads served by each level (index 0 = level 1).
    pub tip_reads_by_level: [u64; 8],
    /// Copies issued.
    pub copies: u64,
    /// Copies that arrived after their block had been read from below (bandwidth shortage).
    pub late_copies: u64,
    /// Copies skipped because `max_bw` reads were already in flight.
    pub bandwidth_skips: u64,
    /// Hinted ranges dropped because the list held [`HINTED_RANGES_LIVE_MAX`] live ones already.
    pub hinted_ranges_dropped: u64,
}

/// TIP, alone (`tip`) or with one pipelining prefetcher per pair of levels (`ipipe`, `ipo`,
/// `ipods`).
pub struct Informed {
    name: &'static str,
    mode: Mode,
    cfg: InformedConfig,
    x_cache: u32,
    stream: Option<StreamId>,
    /// The hinted stream closed: its id may now name another stream, which must not be taken
    /// for it, and no other stream may take its place (its list is half consumed).
    stream_closed: bool,
    /// The hinted stream's reads from position `base` on, in order.
    list: VecDeque<Access>,
    /// Position (in the stream's hints, from 0) of `list[0]`.
    base: usize,
    /// Position below which every entry is dropped: `base`, except in the tests' reference that
    /// keeps the whole list. The live entries, `front..base + list.len()`, are at most
    /// `hinted_ranges_live_max`.
    front: usize,
    /// Keeps entries below `front` (the tests' reference with an unbounded list).
    #[cfg(test)]
    keep_whole_list: bool,
    /// [`HINTED_RANGES_LIVE_MAX`] but in tests.
    hinted_ranges_live_max: usize,
    /// How many reads and copies in flight name each position: the lowest one must stay. At
    /// most one key per entry of `jobs`.
    job_positions: BTreeMap<usize, u32>,
    /// Next access TIP fetches.
    tip_next: usize,
    /// Next access the application takes.
    taken: usize,
    stages: Vec<Stage>,
    jobs: BTreeMap<FetchId, Job>,
    in_flight: u64,
    started: bool,
    ids: FetchIds,
    out: VecDeque<Output>,
    stats: InformedStats,
}

impl std::fmt::Debug for Informed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Informed")
            .field("name", &self.name)
            .field("x_cache", &self.x_cache)
            .field("stats", &self.stats)
            .finish()
    }
}

impl Informed {
    /// Builds the policy `name` (one of [`NAMES`]).
    pub fn new(name: &str, cfg: &InformedConfig) -> Result<Informed, PolicyError> {
        cfg.validate(name)?;
        let (name, mode) = match name {
            "tip" => ("tip", Mode::Tip),
            "ipipe" => ("ipipe", Mode::Window),
            "ipo" => ("ipo", Mode::Chain),
            "ipods" => ("ipods", Mode::Chain),
            other => return Err(PolicyError::UnknownName(other.to_string())),
        };
        if cfg.levels.len() > 8 {
            return Err(PolicyError::BadSetting {
                key: "levels",
                message: "at most 8 storage levels".into(),
            });
        }
        let home = cfg.levels.len();
        // The read time TIP plans with: the home level's alone, the top level's once a pipeline
        // keeps it filled (section 4.5.2: the horizon drops with iPipe).
        let t_disk = match mode {
            Mode::Tip => cfg.levels[home - 1].read_to_memory,
            _ => cfg.levels[0].read_to_memory,
        };
        let mut cap = cfg.memory_blocks;
        if mode == Mode::Chain {
            cap = cap.min(u64::from(cfg.max_bw.expect("validated")));
        }
        // The count is a u32 wherever it is used: a larger horizon or memory is held to it, not
        // cut to its low bits.
        let cap = cap.min(u64::from(u32::MAX));
        let x_cache = match cfg.x_cache {
            XCache::Fixed(x) => u64::from(x).min(cap),
            XCache::Auto => tip::auto_x_cache(t_disk, cfg.consume, cfg.lru_hit_gain_ppm, cap),
        }
        .max(1);
        let x_cache = u32::try_from(x_cache).expect("held to u32::MAX above");
        let stages = match mode {
            Mode::Tip => vec![],
            _ => Self::plan_stages(mode, cfg, x_cache),
        };
        Ok(Informed {
            name,
            mode,
            cfg: cfg.clone(),
            x_cache,
            stream: None,
            stream_closed: false,
            list: VecDeque::new(),
            base: 0,
            front: 0,
            #[cfg(test)]
            keep_whole_list: false,
            hinted_ranges_live_max: HINTED_RANGES_LIVE_MAX,
            job_positions: BTreeMap::new(),
            tip_next: 0,
            taken: 0,
            stages,
            jobs: BTreeMap::new(),
            in_flight: 0,
            started: false,
            ids: FetchIds::default(),
            out: VecDeque::new(),
            stats: InformedStats {
                x_cache,
                ..InformedStats::default()
            },
        })
    }

    /// The policy with its live list bounded to `max` ranges instead of
    /// [`HINTED_RANGES_LIVE_MAX`], so that tests reach the bound without millions of hints.
    #[cfg(test)]
    fn with_hinted_ranges_live_max(mut self, max: usize) -> Informed {
        self.hinted_ranges_live_max = max;
        self
    }

    /// The policy keeping every entry it drops from the live list, so that a test can check that
    /// dropping them changes nothing.
    #[cfg(test)]
    fn keeping_whole_list(mut self) -> Informed {
        self.keep_whole_list = true;
        self
    }

    /// Entries held: the live ones, and in the tests' reference the dropped ones too.
    #[cfg(test)]
    fn entries_held(&self) -> usize {
        self.list.len()
    }

    /// One past the last position hinted and kept.
    fn end(&self) -> usize {
        self.base + self.list.len()
    }

    /// The entry at position `p`; it must not have been dropped.
    fn at(&self, p: usize) -> &Access {
        &self.list[p - self.base]
    }

    fn at_mut(&mut self, p: usize) -> &mut Access {
        &mut self.list[p - self.base]
    }

    /// Drops the entries nobody will look at again: those below TIP's next fetch, the
    /// application's next read and every read or copy in flight. Prefetchers copy only from TIP's
    /// next fetch on, and new reads and copies start there too, so the lowest of these never
    /// falls.
    fn drop_front(&mut self) {
        let mut low = self.tip_next.min(self.taken);
        if let Some((&p, _)) = self.job_positions.first_key_value() {
            low = low.min(p);
        }
        let low = low.min(self.end());
        if low <= self.front {
            return;
        }
        self.front = low;
        #[cfg(test)]
        if self.keep_whole_list {
            return;
        }
        self.list.drain(..low - self.base);
        self.base = low;
        // After a burst of hints the list keeps its room once drained. Shrinking to twice the
        // live length only when the room passes four times it costs O(len) per at least len / 2
        // entries dropped since the last shrink or growth: amortized O(1) a hint.
        let keep = self.list.len().max(HINTED_RANGES_CAPACITY_FLOOR);
        if self.list.capacity() > 4 * keep {
            self.list.shrink_to(2 * keep);
        }
    }

    /// The hinted stream closed: its list and the positions of its reads and copies go, so
    /// nothing it hinted is held until the policy is dropped. The copies it placed on the levels
    /// are dropped too (`Output::Evict`): only its reader would have taken them, and a driver
    /// with tiers keeps a copy until told. Those still on their way are dropped as they land.
    /// What TIP fetched into memory is the driver's, as every policy's prefetched data is once
    /// its stream closes (the engine frees a closed reader's chunks with its file's last reader).
    fn close_stream(&mut self) {
        self.stream_closed = true;
        let mut travelling = std::collections::BTreeSet::new();
        let jobs = std::mem::take(&mut self.jobs);
        for (id, job) in jobs {
            let evict = match job {
                Job::Copy { access, into, .. } => {
                    travelling.insert((access, into));
                    let Access { file, range, .. } = *self.at(access);
                    Some((file, range, into))
                }
                Job::Tip { .. } => None,
                Job::Orphan { evict } => evict,
            };
            self.jobs.insert(id, Job::Orphan { evict });
        }
        for p in self.front..self.end() {
            let Access {
                file,
                range,
                held_at,
                ..
            } = *self.at(p);
            for level in 1..=self.stages.len() as u8 {
                if held_at & (1 << (level - 1)) != 0 && !travelling.contains(&(p, level)) {
                    self.out.push_back(Output::Evict {
                        file,
                        range,
                        tier: Tier::Level(level),
                    });
                }
            }
        }
        for stage in &mut self.stages {
            stage.held = 0;
        }
        self.base = self.end();
        self.front = self.base;
        self.list = VecDeque::new();
        self.job_positions.clear();
    }

    fn plan_stages(mode: Mode, cfg: &InformedConfig, x_cache: u32) -> Vec<Stage> {
        let pairs = cfg.levels.len() - 1;
        let spare = cfg
            .max_bw
            .map(|bw| pipeline::ipo_depth(bw, x_cache))
            .unwrap_or(0);
        let consume = cfg.consume;
        (1..=pairs)
            .map(|j| {
                // Time for a block to climb from level j + 1 to level 1.
                let climb: Duration = (2..=j + 1).map(|k| cfg.levels[k - 1].copy_up).sum();
                let home_read = cfg.levels[cfg.levels.len() - 1].read_to_memory;
                let top_read = cfg.levels[0].read_to_memory;
                let (start, depth, lead) = match mode {
                    Mode::Window => (
                        // Algorithm 1 as printed: the home level's stall (ARCHITECTURE.md says
                        // why Tables 4.5 and 4.7 differ).
                        pipeline::pstart(climb, home_read, x_cache, consume),
                        // The whole pipeline moves at TIP's pace on level 1, so every pair's
                        // window covers its climb plus one level-1 read at that pace.
                        pipeline::pdepth(climb, top_read, x_cache, consume),
                        0,
                    ),
                    _ => {
                        let share =
                            spare / pairs as u64 + if j == 1 { spare % pairs as u64 } else { 0 };
                        let lead = match cfg.pnext_groups {
                            Some(g) => u64::from(g) * u64::from(x_cache),
                            None => pipeline::pnext_lead(climb, top_read, x_cache, consume),
                        };
                        (
                            pipeline::pstart(climb, top_read, x_cache, consume),
                            share,
                            lead,
                        )
                    }
                };
                let capacity = cfg.levels[j - 1].capacity_blocks;
                Stage {
                    level: j as u8,
                    depth: capacity.map_or(depth, |c| depth.min(c)),
                    // Pstart counts from the access being consumed, 1-based.
                    start: start.saturating_sub(1) as usize,
                    lead: lead as usize,
                    window_hi: None,
                    held: 0,
                    capacity,
                }
            })
            .collect()
    }

    /// The buffer count TIP settled on.
    pub fn x_cache(&self) -> u32 {
        self.x_cache
    }

    /// What the policy counted so far.
    pub fn stats(&self) -> InformedStats {
        self.stats
    }

    /// Hinted ranges held live: hinted, kept and not yet dropped from the front. None once the
    /// hinted stream has closed.
    pub fn hinted_ranges_live(&self) -> usize {
        self.end() - self.front
    }

    /// Entries the hinted list has room for before it must grow: at most four times the live
    /// ones or [`HINTED_RANGES_CAPACITY_FLOOR`], whichever is more, and 0 once the hinted stream
    /// has closed.
    pub fn hinted_ranges_capacity(&self) -> usize {
        self.list.capacity()
    }

    /// Each prefetcher's (start, depth, lead), top pair first, for reports and tests.
    pub fn plan(&self) -> Vec<(usize, u64, usize)> {
        self.stages
            .iter()
            .map(|s| (s.start, s.depth, s.lead))
            .collect()
    }

    fn bw_full(&self) -> bool {
        self.mode == Mode::Chain && self.in_flight >= u64::from(self.cfg.max_bw.expect("validated"))
    }

    fn fetch(&mut self, access: usize, into: Tier, job: Job) {
        let id = self.ids.next_id();
        let Access { file, range, .. } = *self.at(access);
        self.jobs.insert(id, job);
        *self.job_positions.entry(access).or_insert(0) += 1;
        self.in_flight += 1;
        self.out.push_back(Output::Fetch {
            id,
            file,
            range,
            into,
        });
    }

    fn tip_issue(&mut self) {
        while self.tip_next < self.end() && self.tip_next < self.taken + self.x_cache as usize {
            let access = self.tip_next;
            if self.mode == Mode::Window && self.at(access).copying_to == 1 {
                // Its copy is on the way up: wait for it rather than read the block from below
                // a second time (iPipe's TIP finds pipelined blocks on the SSD, section 4.4.5).
                return;
            }
            let source = self.at(access).nearest;
            self.tip_next += 1;
            self.fetch(access, Tier::Memory, Job::Tip { access, source });
        }
    }

    /// Copies `access` into stage `s`'s level if it is useful and allowed; returns whether it did.
    fn try_copy(&mut self, s: usize, access: usize) -> bool {
        let stage = &self.stages[s];
        let into = stage.level;
        if access >= self.end() || access < self.tip_next {
            return false;
        }
        let entry = *self.at(access);
        // Already there (or on its way there or higher): not fetched again (section 4.4.5).
        if entry.nearest <= into || (entry.copying_to != 0 && entry.copying_to <= into) {
            return false;
        }
        if stage.capacity.is_some_and(|c| stage.held >= c) {
            return false;
        }
        if self.bw_full() {
            self.stats.bandwidth_skips += 1;
            return false;
        }
        let source = entry.nearest;
        self.stages[s].held += 1;
        let entry = self.at_mut(access);
        entry.held_at |= 1 << (into - 1);
        entry.copying_to = into;
        self.stats.copies += 1;
        self.fetch(
            access,
            Tier::Level(into),
            Job::Copy {
                access,
                source,
                into,
            },
        );
        true
    }

    /// Window mode: copy the next hinted blocks past the window until `count` copies are issued.
    fn window_advance(&mut self, s: usize, count: u64) {
        let mut issued = 0;
        while issued < count {
            let next = match self.stages[s].window_hi {
                None => self.stages[s].start + self.taken,
                Some(hi) => hi + 1,
            }
            .max(self.tip_next);
            if next >= self.end() {
                return;
            }
            self.stages[s].window_hi = Some(next);
            if self.try_copy(s, next) {
                issued += 1;
            } else if self.bw_full()
                || self.stages[s]
                    .capacity
                    .is_some_and(|c| self.stages[s].held >= c)
            {
                return;
            }
        }
    }

    fn start_stages(&mut self) {
        for s in 0..self.stages.len() {
            let depth = self.stages[s].depth;
            match self.mode {
                Mode::Window => self.window_advance(s, depth),
                Mode::Chain => {
                    let start = self.stages[s].start;
                    for k in 0..depth as usize {
                        self.try_copy(s, start + k);
                    }
                }
                Mode::Tip => {}
            }
        }
    }

    /// The consumer of stage `s` took `access` from its level: refill (algorithm 3's "SSD buffer
    /// is consumed").
    fn refill(&mut self, s: usize, access: usize) {
        match self.mode {
            Mode::Window => self.window_advance(s, 1),
            Mode::Chain => {
                let next = access + self.stages[s].lead;
                self.try_copy(s, next);
            }
            Mode::Tip => {}
        }
    }

    /// The copy of `access` on `level` was read by its consumer or came too late: drop it and
    /// free its slot. Returns false when it had already been dropped (two consumers raced).
    fn release(&mut self, access: usize, level: u8) -> bool {
        let bit = 1 << (level - 1);
        if self.at(access).held_at & bit == 0 {
            return false;
        }
        self.at_mut(access).held_at &= !bit;
        self.stages[level as usize - 1].held -= 1;
        self.evict(access, level);
        true
    }

    fn evict(&mut self, access: usize, level: u8) {
        let Access { file, range, .. } = *self.at(access);
        self.out.push_back(Output::Evict {
            file,
            range,
            tier: Tier::Level(level),
        });
    }

    fn on_fetched(&mut self, id: FetchId) {
        let Some(job) = self.jobs.remove(&id) else {
            return;
        };
        self.in_flight -= 1;
        // The job's entry stays until this completion is handled: `drop_front` runs after it.
        let access = match job {
            Job::Tip { access, .. } | Job::Copy { access, .. } => access,
            Job::Orphan { evict } => {
                if let Some((file, range, level)) = evict {
                    self.out.push_back(Output::Evict {
                        file,
                        range,
                        tier: Tier::Level(level),
                    });
                }
                return;
            }
        };
        match self.job_positions.get_mut(&access) {
            Some(n) if *n > 1 => *n -= 1,
            _ => {
                self.job_positions.remove(&access);
            }
        }
        match job {
            // Handled above.
            Job::Orphan { .. } => {}
            Job::Tip { access, source } => {
                self.stats.tip_reads_by_level[source as usize - 1] += 1;
                // TIP read a copy: it is no longer needed there, and the prefetcher that placed
                // it may copy another block.
                if (source as usize) < self.cfg.levels.len() && self.release(access, source) {
                    self.refill(source as usize - 1, access);
                }
            }
            Job::Copy {
                access,
                source,
                into,
            } => {
                let other = self.at(access).copying_to;
                // Too late when TIP already fetched the block, or when a copy to a higher level
                // left from below before this one landed, or landed before it (on device models
                // the direct climb may overtake this one): TIP reads the higher copy, so this one
                // would never be read and would hold its slot for good.
                let late = access < self.tip_next
                    || (other != 0 && other != into)
                    || self.at(access).nearest < into;
                if other == into {
                    self.at_mut(access).copying_to = 0;
                }
                if late {
                    self.stats.late_copies += 1;
                    self.release(access, into);
                    if self.mode == Mode::Chain {
                        // Bandwidth shortage under max_bw: the slot is not refilled, so the
                        // pipelining depth shrinks by one.
                        let stage = &mut self.stages[into as usize - 1];
                        stage.depth = stage.depth.saturating_sub(1);
                    } else {
                        // iPipe assumes enough bandwidth (section 4.3.2): a late copy was slow,
                        // not starved, so the window keeps its depth and moves on.
                        self.refill(into as usize - 1, access);
                    }
                } else {
                    let entry = self.at_mut(access);
                    entry.nearest = entry.nearest.min(into);
                }
                // This copy consumed the one below it.
                if (source as usize) < self.cfg.levels.len() && self.release(access, source) {
                    self.refill(source as usize - 1, access);
                }
            }
        }
        self.tip_issue();
    }
}

impl Policy for Informed {
    fn name(&self) -> &str {
        self.name
    }

    fn handle(&mut self, _now: Instant, input: Input) {
        self.take(input);
        self.drop_front();
    }

    fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }
}

impl Informed {
    fn take(&mut self, input: Input) {
        match input {
            Input::Hint {
                stream,
                file,
                ranges,
            } => {
                if self.stream_closed || self.stream.is_some_and(|s| s != stream) {
                    // One hinted stream per policy instance; further streams read on demand.
                    return;
                }
                self.stream = Some(stream);
                let home = self.cfg.levels.len() as u8;
                // Hints are advice: the reads of dropped ones do not match the list, so the
                // driver reads them on demand.
                let live = self.end() - self.front;
                let room = self.hinted_ranges_live_max.saturating_sub(live);
                self.stats.hinted_ranges_dropped += ranges.len().saturating_sub(room) as u64;
                self.list
                    .extend(ranges.into_iter().take(room).map(|range| Access {
                        range,
                        file,
                        nearest: home,
                        copying_to: 0,
                        held_at: 0,
                    }));
                assert!(
                    self.end() - self.front <= self.hinted_ranges_live_max,
                    "{} hinted ranges live, more than {}",
                    self.end() - self.front,
                    self.hinted_ranges_live_max
                );
                self.tip_issue();
                if !self.started {
                    self.started = true;
                    self.start_stages();
                }
            }
            Input::Read {
                stream,
                file,
                range,
                miss,
            } => {
                if self.stream_closed
                    || Some(stream) != self.stream
                    || self.taken >= self.end()
                    || (self.at(self.taken).file, self.at(self.taken).range) != (file, range)
                {
                    return;
                }
                if miss.is_some() && self.tip_next <= self.taken {
                    // The application reached a block TIP has not fetched. If TIP is waiting for
                    // its copy, the driver must wait too instead of reading it from below. The
                    // block is taken when the driver reports the read again with its data in.
                    if self.mode == Mode::Window && self.at(self.taken).copying_to == 1 {
                        self.out.push_back(Output::Defer { file, range });
                    }
                    return;
                }
                // A miss on a block TIP did fetch means the fetch brought nothing (memory cut it
                // short, or it failed): the driver reads the block on demand and sends no second
                // read for it, so it is taken now, or TIP would wait for it for good.
                // The application took the block: its buffer is free for the next one.
                self.taken += 1;
                self.tip_issue();
            }
            Input::Fetched { id, .. } => self.on_fetched(id),
            Input::StreamClosed { stream } => {
                // TIP fetches the next block only when the application takes one, so with the
                // stream gone it sends nothing more.
                if self.stream == Some(stream) && !self.stream_closed {
                    self.close_stream();
                }
            }
            // TIP keeps nothing per file beyond its one stream's disclosed reads, which
            // `StreamClosed` ends.
            Input::MemoryPressure { .. } | Input::FileClosed { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests;
