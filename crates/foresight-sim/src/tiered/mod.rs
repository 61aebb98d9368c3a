//! The tiered driver: runs one hinted application over a stack of storage levels and executes an
//! informed policy's outputs (paper 002_792ac46f2e9108f8.txt, chapters 4 to 7).
//!
//! The application discloses its whole access list up front (`Input::Hint`), then takes the blocks
//! in order: it waits until block `i` is in memory, hands the policy `Input::Read` for it (the buffer
//! passes to the application, so TIP may fetch another), and spends `workload.consume` on it.
//! The driver only executes: a `Fetch` into memory reads the block from the nearest level that
//! holds it, a `Fetch` into `Level(j)` copies it up from the nearest level below `j` that holds it
//! (the original stays on the home level), and `Evict` drops a copy. It tracks every level's copies
//! against its capacity and memory's buffers against `device.memory`, asserting both, and it
//! never chooses what or when to fetch; if the application reaches a block nobody fetched, it
//! reads it on demand, as a page cache would.
//!
//! Timing: with `TierModel::Constant` each read or copy takes its fixed per-block time and any
//! number run at once (the paper's simulator assumes enough parallelism; `max_bw` is the policy's
//! business). With device presets each level is a `foresight-device` model with its own command
//! queue: a read is one request of `workload.block` bytes, a copy is a read on the lower device
//! followed by a write on the upper one. Blocks live on the home level at `block x block_bytes`
//! (the log layout of section 4.5.1); copies take the first free slot of their level. A `link`
//! (delay, bandwidth) carries every block sent to memory, one transfer at a time.

pub mod config;
pub mod hinted;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::Arc;

use foresight_core::{ByteLen, ByteRange, Duration, FetchId, FileId, Instant, Lba, StreamId};
use foresight_device::{Completion, DevRequest, Device, Op};
use foresight_policy::informed::LevelTiming;
use foresight_policy::{Input, Output, Policy, Tier};
use rustc_hash::FxHashMap;

pub use config::{AccessOrder, HintedWorkload, LinkSpec, TierModel, TierSpec, TieredConfig};

use crate::config::{key_err, SimConfig};
use crate::metrics::{Report, RequestLog, RequestRecord, RequestSink};
use crate::sim::{RunOutput, SimError};

/// What a run did beyond the report, for tests: the blocks the application got, in order, and
/// each level's most copies at once against its capacity (index 0 = memory buffers).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TieredTrace {
    /// Blocks in the order the application took them.
    pub delivered: Vec<u64>,
    /// The hinted blocks, in order.
    pub hinted: Vec<u64>,
    /// Most blocks held at once: memory buffers, then each level's copies.
    pub peak_blocks: Vec<u64>,
    /// Capacity in blocks: memory, then each level (`u64::MAX` for the home level).
    pub capacity_blocks: Vec<u64>,
    /// TIP's buffer count.
    pub x_cache: u32,
    /// Reads into memory served by each level (index 0 = level 1).
    pub reads_by_level: Vec<u64>,
    /// Copies each level still held when the run ended (index 0 = level 1); every copy is dropped
    /// once it has been read, so these are copies nobody read.
    pub held_at_end: Vec<u64>,
    /// Every device request (a read, or one half of a copy on a device model) in the order they
    /// completed: when, and the device time it took (its own parts plus its wait for room in the
    /// command queue; zero on a constant level, whose fixed time has no parts).
    pub device_work: Vec<(Instant, Duration)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// A constant-time job, or a link transfer, finished.
    Job(u64),
    /// A device (level, disk) may have completions.
    Device(usize, usize),
    /// The application finished consuming a block.
    AppReady,
}

#[derive(Clone, Copy, Debug)]
enum Stage {
    /// Reading into memory from `src`.
    ToMemory { src: usize },
    /// On the link to memory.
    Link,
    /// Reading from `src` for a copy into `into`.
    CopyRead { src: usize, into: usize },
    /// Writing the copy on `into`.
    CopyWrite { into: usize },
}

#[derive(Clone, Copy, Debug)]
struct Job {
    fetch: Option<FetchId>,
    access: usize,
    stage: Stage,
    /// It is a device request (`device_requests` counts it when it completes): every stage but
    /// the link's and a copy's landing on a constant level, whose `copy_up` stands for it.
    device_request: bool,
    /// Time it waited in `Dev::pending` for room in its device's command queue, then, once its
    /// device completed it, its whole device time (that wait plus the completion's parts).
    spent: Duration,
}

/// Device work counted by when it completed: up to the application's end (the run), or after it.
#[derive(Clone, Copy, Debug, Default)]
struct DeviceTally {
    requests: u64,
    bytes: u64,
    /// Each completion's own parts, plus its wait in `Dev::pending` as queue time (as the host
    /// stack counts its block queues').
    breakdown: foresight_device::Breakdown,
}

struct Dev {
    model: Box<dyn Device>,
    /// Requests waiting for room in the device's command queue, each with when it arrived.
    pending: VecDeque<(DevRequest, Instant)>,
    poll_at: Option<Instant>,
}

struct Level {
    /// Devices of this level (empty for a constant level).
    devices: Vec<Dev>,
    capacity_blocks: u64,
    held: u64,
    peak: u64,
    /// Slots freed by dropped copies, reused first (last freed, first reused).
    free_slots: Vec<u64>,
    /// Slots below this have been handed out at least once. Slots are made as copies need them,
    /// since a level may hold up to 2^41 blocks.
    next_slot: u64,
    timing: LevelTiming,
}

/// Per-block time of one request of `bytes` on a fresh model of `preset`.
fn measure(preset: &str, op: Op, bytes: ByteLen) -> Duration {
    let spec = foresight_device::preset(preset).expect("checked when parsed");
    let mut dev = foresight_device::build(&spec);
    dev.submit(
        Instant::ZERO,
        DevRequest {
            id: 0,
            op,
            lba: Lba(0),
            sectors: bytes.sectors_ceil() as u32,
        },
    );
    let mut out = vec![];
    while out.is_empty() {
        let t = dev.next_event().expect("a request is pending");
        dev.advance(t, &mut out);
    }
    out[0].at.saturating_since(Instant::ZERO)
}

fn link_time(link: &LinkSpec, bytes: ByteLen) -> Duration {
    Duration((bytes.0 as u128 * 1_000_000_000 / link.bytes_per_s as u128) as u64)
}

/// The per-block times the policy plans with: the configured constants, or what one request costs
/// on a fresh device model (a copy is a read below plus a write above), plus the link.
pub fn level_timings(t: &TieredConfig) -> Vec<LevelTiming> {
    let block = t.workload.block;
    let link = t
        .link
        .map(|l| l.delay + link_time(&l, block))
        .unwrap_or(Duration::ZERO);
    (0..t.tiers.len())
        .map(|i| {
            let (read, copy_up) = match &t.tiers[i].model {
                TierModel::Constant { read, copy_up } => (*read, *copy_up),
                TierModel::Preset(name) => {
                    let read = measure(name, Op::Read, block);
                    let write_above = match i.checked_sub(1).map(|k| &t.tiers[k].model) {
                        Some(TierModel::Preset(up)) => measure(up, Op::Write, block),
                        // A constant level above: its per-block time stands for the write too.
                        Some(TierModel::Constant { read, .. }) => *read,
                        None => Duration::ZERO,
                    };
                    (
                        read,
                        if i == 0 {
                            Duration::ZERO
                        } else {
                            read + write_above
                        },
                    )
                }
            };
            LevelTiming {
                read_to_memory: read + link,
                copy_up,
                capacity_blocks: t.tiers[i].capacity.map(|c| c.0 / block.0),
            }
        })
        .collect()
}

struct Driver<'a, 'r> {
    t: &'a TieredConfig,
    policy: Box<dyn Policy>,
    now: Instant,
    seq: u64,
    heap: BinaryHeap<Reverse<(Instant, u64, Ev)>>,
    levels: Vec<Level>,
    block_sectors: u64,
    /// Hinted blocks in order.
    blocks: Vec<u64>,
    /// Bit `j - 1`: a landed copy on level `j`; per access.
    copies: Vec<u8>,
    /// Bit `j - 1`: the copy on level `j` has been read (into memory, or to copy it further up)
    /// since it was made; per access. A copy dropped without this bit was wasted.
    copies_read: Vec<u8>,
    slot_of: FxHashMap<(usize, usize), u64>,
    /// Memory: 0 absent, 1 in flight, 2 ready, 3 taken.
    mem: Vec<u8>,
    mem_buffers: u64,
    mem_peak: u64,
    mem_capacity: u64,
    jobs: FxHashMap<u64, Job>,
    /// The most jobs under way at once: each fetch into memory holds one of memory's buffers and
    /// each copy a slot of the level it climbs to, so no more than those together (and one
    /// demand read). A fixed 2^20 was exceeded by valid stacks (iPipe with a million buffers over a slow
    /// upper level).
    jobs_max: u64,
    next_job: u64,
    link_free: Instant,
    /// An event fell past [`HORIZON`] and was not scheduled.
    past_horizon: bool,
    // Application.
    next_access: usize,
    waiting_since: Option<Instant>,
    app_busy: bool,
    want_at: Instant,
    /// When the application finished its last block: the run's length. Copies still climbing
    /// then are drained for the checks but take no part in the run; their device work is
    /// counted apart (`after_end`).
    app_end: Instant,
    /// The application has taken and consumed every block (`app_end` is set).
    app_done: bool,
    stall: Duration,
    latencies: Vec<Duration>,
    /// Where each block's record goes as the application takes it (`--requests-out`).
    requests: RequestLog<'r>,
    delivered: Vec<u64>,
    reads_by_level: Vec<u64>,
    /// Device work completed by `app_end`.
    in_run: DeviceTally,
    /// Device work completed after `app_end`: copies still climbing when the application ended.
    after_end: DeviceTally,
    /// When the last device request completed.
    last_completion: Instant,
    /// See [`TieredTrace::device_work`]; kept for [`run_traced`] only, as it grows with the
    /// run.
    device_work: Vec<(Instant, Duration)>,
    keep_device_work: bool,
    fetches: u64,
    events: u64,
    /// Bytes fetched ahead of the application: blocks into memory and copies into levels.
    prefetched: u64,
    /// Of those, copies dropped, or left at the end, without ever being read (a block fetched
    /// into memory is always taken: the application reads every hinted block).
    wasted: u64,
    index: FxHashMap<u64, usize>,
    /// The policy asked the waiting application not to read on demand.
    deferred: bool,
    /// Policy fetches of blocks already in memory, to answer at once.
    answered: Vec<FetchId>,
}

const FILE: FileId = FileId(0);

/// The last instant an event may be scheduled: 500 years in, which leaves the clock's remaining
/// range (about 84 years) for device models to add their service times without overflowing.
const HORIZON: Instant = crate::sim::LAST_ISSUE;
const STREAM: StreamId = StreamId(0);

impl Driver<'_, '_> {
    fn push(&mut self, at: Instant, ev: Ev) {
        if at > HORIZON {
            // Nothing is scheduled past the horizon; the run ends with an error instead.
            self.past_horizon = true;
            return;
        }
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, ev)));
    }

    fn range(&self, access: usize) -> ByteRange {
        let b = self.t.workload.block.0;
        ByteRange::new(self.blocks[access] * b, b)
    }

    fn access_of(&self, range: ByteRange) -> usize {
        // Hinted blocks are distinct, so the access is found by block number; the map is built
        // once.
        let block = range.start.0 / self.t.workload.block.0;
        *self
            .index
            .get(&block)
            .unwrap_or_else(|| panic!("the policy fetched block {block}, which was never hinted"))
    }

    fn nearest(&self, access: usize, above: usize) -> usize {
        // Levels are 1-based; the home level always holds the block.
        let home = self.levels.len();
        (above + 1..home)
            .find(|&j| self.copies[access] & (1 << (j - 1)) != 0)
            .unwrap_or(home)
    }

    fn start(&mut self, fetch: Option<FetchId>, access: usize, stage: Stage) {
        let id = self.next_job;
        self.next_job += 1;
        let device_request = match stage {
            Stage::Link => false,
            Stage::CopyWrite { into } => !self.levels[into - 1].devices.is_empty(),
            Stage::ToMemory { .. } | Stage::CopyRead { .. } => true,
        };
        self.jobs.insert(
            id,
            Job {
                fetch,
                access,
                stage,
                device_request,
                spent: Duration::ZERO,
            },
        );
        assert!(
            self.jobs.len() as u64 <= self.jobs_max,
            "{} jobs under way, over the {} that memory's buffers and the levels' slots allow",
            self.jobs.len(),
            self.jobs_max
        );
        let (level, op, slot) = match stage {
            Stage::ToMemory { src } | Stage::CopyRead { src, .. } => (src, Op::Read, None),
            Stage::CopyWrite { into } => (into, Op::Write, Some(self.slot_of[&(access, into)])),
            Stage::Link => {
                let link = self.t.link.expect("a link stage needs a link");
                let begin = self.now.max(self.link_free);
                self.link_free = begin.saturating_add(link_time(&link, self.t.workload.block));
                let done = self.link_free.saturating_add(link.delay);
                self.push(done, Ev::Job(id));
                return;
            }
        };
        let home = self.levels.len();
        if matches!(stage, Stage::ToMemory { .. } | Stage::CopyRead { .. }) && level < home {
            // Reading a copy uses it, whether into memory or further up.
            self.copies_read[access] |= 1 << (level - 1);
        }
        let lv = &mut self.levels[level - 1];
        match lv.devices.is_empty() {
            true => {
                let d = match stage {
                    Stage::ToMemory { .. } => lv.timing.read_to_memory,
                    Stage::CopyRead { src, into } => {
                        // Constant levels: the copy's whole climb in one step.
                        let mut d = Duration::ZERO;
                        for k in into + 1..=src {
                            d += self.levels[k - 1].timing.copy_up;
                        }
                        d
                    }
                    // A copy from a device into a constant level: the level's per-block time
                    // stands for the write (a copy from a constant level lands without one).
                    Stage::CopyWrite { .. } => lv.timing.read_to_memory,
                    Stage::Link => Duration::ZERO,
                };
                // The policy's read time includes the link; the level's own part comes first.
                let d = if matches!(stage, Stage::ToMemory { .. } | Stage::CopyWrite { .. }) {
                    d.0.saturating_sub(self.link_share().0)
                } else {
                    d.0
                };
                self.push(self.now.saturating_add(Duration(d)), Ev::Job(id));
            }
            false => {
                let disks = lv.devices.len() as u64;
                let place = if level == home {
                    self.blocks[access]
                } else {
                    slot.unwrap_or_else(|| self.slot_of[&(access, level)])
                };
                let disk = (place % disks) as usize;
                let req = DevRequest {
                    id,
                    op,
                    lba: Lba(place / disks * self.block_sectors),
                    sectors: self.block_sectors as u32,
                };
                let dev = &mut self.levels[level - 1].devices[disk];
                dev.pending.push_back((req, self.now));
                // Each job waits in one queue at most, and `start` bounds the jobs.
                assert!(dev.pending.len() <= self.jobs.len(), "device queue bound");
                self.pump(level, disk);
            }
        }
    }

    fn link_share(&self) -> Duration {
        self.t
            .link
            .map(|l| l.delay + link_time(&l, self.t.workload.block))
            .unwrap_or(Duration::ZERO)
    }

    fn pump(&mut self, level: usize, disk: usize) {
        let now = self.now;
        let dev = &mut self.levels[level - 1].devices[disk];
        while dev.model.can_accept() {
            let Some((r, since)) = dev.pending.pop_front() else {
                break;
            };
            if let Some(job) = self.jobs.get_mut(&r.id) {
                job.spent += now - since;
            }
            dev.model.submit(now, r);
        }
        if let Some(t) = dev.model.next_event() {
            if dev.poll_at.is_none_or(|p| t < p || p < now) {
                dev.poll_at = Some(t);
                self.push(t, Ev::Device(level, disk));
            }
        }
    }

    fn reserve(&mut self, access: usize, into: usize) {
        let lv = &mut self.levels[into - 1];
        lv.held += 1;
        lv.peak = lv.peak.max(lv.held);
        assert!(
            lv.held <= lv.capacity_blocks,
            "level {into} holds {} blocks, over its capacity of {}",
            lv.held,
            lv.capacity_blocks
        );
        let slot = lv.free_slots.pop().unwrap_or_else(|| {
            lv.next_slot += 1;
            lv.next_slot - 1
        });
        self.slot_of.insert((access, into), slot);
    }

    fn drop_copy(&mut self, access: usize, level: usize) {
        if let Some(slot) = self.slot_of.remove(&(access, level)) {
            let bit = 1 << (level - 1);
            if self.copies_read[access] & bit == 0 {
                // Nobody read it: a late copy (IPO's, once its consumer read the block from
                // below), or one overtaken by a higher copy of its block.
                self.wasted += self.t.workload.block.0;
            }
            self.copies_read[access] &= !bit;
            self.copies[access] &= !bit;
            let lv = &mut self.levels[level - 1];
            lv.held -= 1;
            lv.free_slots.push(slot);
        }
    }

    fn fetch_to_memory(&mut self, fetch: Option<FetchId>, access: usize) {
        let src = self.nearest(access, 0);
        self.reads_by_level[src - 1] += 1;
        self.mem[access] = 1;
        self.mem_buffers += 1;
        self.mem_peak = self.mem_peak.max(self.mem_buffers);
        assert!(
            self.mem_buffers <= self.mem_capacity,
            "memory holds {} blocks, over device.memory's {}",
            self.mem_buffers,
            self.mem_capacity
        );
        self.start(fetch, access, Stage::ToMemory { src });
    }

    fn drain_policy(&mut self) {
        while let Some(o) = self.policy.poll_output() {
            match o {
                Output::Fetch {
                    id, range, into, ..
                } => {
                    self.fetches += 1;
                    let access = self.access_of(range);
                    match into {
                        Tier::Memory if self.mem[access] != 0 => {
                            // Already read on demand (or taken): nothing left to fetch.
                            self.answered.push(id);
                        }
                        Tier::Memory => {
                            self.prefetched += range.len.0;
                            self.fetch_to_memory(Some(id), access);
                        }
                        Tier::Level(j) => {
                            let j = j as usize;
                            assert!(j >= 1 && j < self.levels.len(), "no level {j} to copy into");
                            // A staging level is a cache too: its copy is fetched ahead of the
                            // reads that reach that level, and wasted if none does.
                            self.prefetched += range.len.0;
                            let src = self.nearest(access, j);
                            self.reserve(access, j);
                            self.start(Some(id), access, Stage::CopyRead { src, into: j });
                        }
                    }
                }
                Output::Evict { range, tier, .. } => {
                    if let Tier::Level(j) = tier {
                        let access = self.access_of(range);
                        // Only landed copies are dropped; the policy evicts nothing in flight.
                        if self.copies[access] & (1 << (j - 1)) != 0 {
                            self.drop_copy(access, j as usize);
                        }
                    }
                }
                Output::Defer { .. } => self.deferred = true,
                Output::Cancel { .. } | Output::Release { .. } => {}
            }
        }
        while let Some(id) = self.answered.pop() {
            self.policy
                .handle(self.now, Input::Fetched { id, ok: true });
            self.drain_policy();
        }
    }

    /// The tally device work completing now goes to: the run's until the application has
    /// consumed its last block, then `after_end` (work completing at that instant is the run's).
    fn tally(&mut self) -> &mut DeviceTally {
        if self.app_done && self.now > self.app_end {
            &mut self.after_end
        } else {
            &mut self.in_run
        }
    }

    fn finish_job(&mut self, id: u64) {
        let job = self.jobs.remove(&id).expect("a known job");
        if job.device_request {
            let block = self.t.workload.block.0;
            let tally = self.tally();
            tally.requests += 1;
            tally.bytes += block;
            self.last_completion = self.now;
            if self.keep_device_work {
                self.device_work.push((self.now, job.spent));
            }
        }
        match job.stage {
            Stage::ToMemory { .. } if self.t.link.is_some() => {
                self.start(job.fetch, job.access, Stage::Link);
            }
            Stage::ToMemory { .. } | Stage::Link => {
                self.mem[job.access] = 2;
                if let Some(f) = job.fetch {
                    self.policy
                        .handle(self.now, Input::Fetched { id: f, ok: true });
                    self.drain_policy();
                }
                if self.waiting_since.is_some() && self.next_access == job.access {
                    self.take();
                }
            }
            Stage::CopyRead { src, into } => {
                // A constant level's `t_copy_up` is the whole copy, the write above included
                // (T_hdd-ss of 002_792ac46f2e9108f8.txt, chapter 3); a device's read is followed by the write into the
                // level above, on its device or at its constant per-block time. So the driver
                // charges what `level_timings` plans.
                if self.levels[src - 1].devices.is_empty() {
                    self.land(job, into);
                } else {
                    self.start(job.fetch, job.access, Stage::CopyWrite { into });
                }
            }
            Stage::CopyWrite { into } => self.land(job, into),
        }
    }

    fn land(&mut self, job: Job, into: usize) {
        self.copies[job.access] |= 1 << (into - 1);
        if let Some(f) = job.fetch {
            self.policy
                .handle(self.now, Input::Fetched { id: f, ok: true });
            self.drain_policy();
        }
    }

    /// The application takes its next block, which is in memory.
    fn take(&mut self) {
        let access = self.next_access;
        debug_assert_eq!(self.mem[access], 2);
        let waited = self
            .waiting_since
            .take()
            .map(|s| self.now.saturating_since(s))
            .unwrap_or(Duration::ZERO);
        self.stall += waited;
        self.latencies.push(self.now.saturating_since(self.want_at));
        let (want_at, now) = (self.want_at, self.now);
        let (offset, bytes) = (
            self.blocks[access] * self.t.workload.block.0,
            self.t.workload.block.0,
        );
        // Blocks are taken in order, one record each: the record's number is the access's.
        self.requests.push(|_| RequestRecord {
            id: access as u64,
            stream: 0,
            submit_s: want_at.as_secs_f64(),
            complete_s: now.as_secs_f64(),
            offset,
            bytes,
            op: 'R',
        });
        self.mem[access] = 3;
        self.mem_buffers -= 1;
        self.delivered.push(self.blocks[access]);
        self.next_access += 1;
        self.app_busy = true;
        let range = self.range(access);
        self.policy.handle(
            self.now,
            Input::Read {
                stream: STREAM,
                file: FILE,
                range,
                miss: None,
            },
        );
        self.drain_policy();
        self.push(
            self.now.saturating_add(self.t.workload.consume),
            Ev::AppReady,
        );
    }

    /// The application wants its next block.
    fn want(&mut self) {
        self.app_busy = false;
        if self.next_access == self.blocks.len() {
            self.app_end = self.now;
            self.app_done = true;
            return;
        }
        self.want_at = self.now;
        let access = self.next_access;
        match self.mem[access] {
            2 => self.take(),
            1 => self.waiting_since = Some(self.now),
            _ => {
                // Nobody fetched it: tell the policy, which may ask to wait (`Output::Defer`);
                // otherwise read it on demand.
                self.waiting_since = Some(self.now);
                let range = self.range(access);
                self.deferred = false;
                self.policy.handle(
                    self.now,
                    Input::Read {
                        stream: STREAM,
                        file: FILE,
                        range,
                        miss: Some(range.start),
                    },
                );
                self.drain_policy();
                if !std::mem::take(&mut self.deferred) && self.mem[access] == 0 {
                    self.fetch_to_memory(None, access);
                }
            }
        }
    }
}

/// Runs a hinted workload over the tier stack of `cfg`, sending one record per block the
/// application takes to `requests`.
/// `progress` is called now and then with the fraction of the blocks taken.
pub(crate) fn run_logged(
    cfg: &SimConfig,
    t: &TieredConfig,
    requests: RequestLog<'_>,
    progress: Option<&mut dyn FnMut(f64)>,
) -> Result<RunOutput, SimError> {
    run_inner(cfg, t, requests, progress, false).map(|(o, _)| o)
}

/// Runs a hinted workload, sending one record per block the application takes to `requests` if
/// given, and returns what the property tests check besides the report.
pub fn run_traced(
    cfg: &SimConfig,
    t: &TieredConfig,
    requests: Option<&mut dyn RequestSink>,
) -> Result<(RunOutput, TieredTrace), SimError> {
    run_inner(cfg, t, RequestLog::new(requests), None, true)
}

fn run_inner(
    cfg: &SimConfig,
    t: &TieredConfig,
    requests: RequestLog<'_>,
    mut progress: Option<&mut dyn FnMut(f64)>,
    keep_device_work: bool,
) -> Result<(RunOutput, TieredTrace), SimError> {
    let mut d = Driver::build(cfg, t, requests)?;
    d.keep_device_work = keep_device_work;
    let n = d.blocks.len();
    let block = t.workload.block;
    let x_cache = match cfg.policy.informed.x_cache {
        foresight_policy::informed::XCache::Fixed(x) => x,
        foresight_policy::informed::XCache::Auto => 0,
    };
    let ranges: Vec<ByteRange> = (0..n).map(|i| d.range(i)).collect();
    d.policy.handle(
        Instant::ZERO,
        Input::Hint {
            stream: STREAM,
            file: FILE,
            ranges,
        },
    );
    d.drain_policy();
    d.want();
    let mut completions: Vec<Completion> = vec![];
    // A sink that failed ends the run: its caller reports the error, not the figures.
    while !d.requests.failed() && d.step(&mut completions) {
        if d.events.is_multiple_of(8192) {
            if let Some(p) = progress.as_mut() {
                p((d.next_access as f64 / n.max(1) as f64).clamp(0.0, 1.0));
            }
        }
    }
    if let Some(p) = progress.as_mut() {
        p(1.0);
    }
    if let Some(e) = d.requests.take_error() {
        return Err(SimError::Requests(e));
    }
    finish_run(d, cfg, t, block, x_cache)
}

impl<'a, 'r> Driver<'a, 'r> {
    /// The driver of a run, its devices and levels built and no event scheduled yet.
    fn build(
        cfg: &SimConfig,
        t: &'a TieredConfig,
        requests: RequestLog<'r>,
    ) -> Result<Driver<'a, 'r>, SimError> {
        let blocks = hinted::access_list(&t.workload, cfg.seed)?;
        let block = t.workload.block;
        let timings = level_timings(t);
        let mut policy_cfg = cfg.policy.clone();
        policy_cfg.informed.levels = timings.clone();
        policy_cfg.informed.consume = t.workload.consume;
        policy_cfg.informed.memory_blocks = t.memory.0 / block.0;
        let top_block = blocks.iter().max().copied().unwrap_or(0);
        // The data's extent: every hinted block, laid out in block order on the home level. The
        // policy's layout addresses 2^63 bytes (`Layout::unplaced`); a constant-time level bounds
        // no capacity, so this is the only check that keeps the data inside it.
        let data_bytes = (top_block + 1)
            .checked_mul(block.0)
            .filter(|&b| b <= u64::MAX / 2)
            .ok_or_else(|| {
                SimError::Config(key_err(
                    "workload.block",
                    format!(
                        "block {top_block} of {block} ends past 2^63 bytes: use smaller block \
                         numbers or a smaller workload.block"
                    ),
                ))
            })?;
        let layout = Arc::new(foresight_policy::Layout::unplaced(&[ByteLen(data_bytes)]));
        let stack = foresight_policy::build_stack(&policy_cfg, layout).map_err(|e| {
            SimError::Config(match e {
                foresight_policy::PolicyError::BadSetting { key, message } => {
                    key_err(&format!("policy.{key}"), message)
                }
                other => key_err("policy.name", other.to_string()),
            })
        })?;
        let home = t.tiers.len();
        let mut levels = vec![];
        for (i, spec) in t.tiers.iter().enumerate() {
            let devices = match &spec.model {
                TierModel::Constant { .. } => vec![],
                TierModel::Preset(name) => {
                    let s = foresight_device::preset(name).expect("checked when parsed");
                    let total = if i + 1 == home {
                        ByteLen(data_bytes)
                    } else {
                        spec.capacity.expect("upper levels have one")
                    };
                    let disks = u64::from(spec.disks);
                    let need = ByteLen(total.0.div_ceil(block.0).div_ceil(disks) * block.0);
                    if need > s.capacity() {
                        return Err(SimError::Config(key_err(
                            &format!("device.tiers[{i}]"),
                            format!(
                                "`{name}` holds {} but this level needs {need}{} for blocks 0 to \
                             {top_block} of {block}: {}",
                                s.capacity(),
                                if disks > 1 {
                                    format!(" on each of its {disks} disks")
                                } else {
                                    String::new()
                                },
                                if matches!(t.workload.order, AccessOrder::Trace(_)) {
                                    "the trace names blocks too far out; use smaller block numbers, \
                                 a smaller workload.block or more disks"
                                } else if i + 1 == home {
                                    "lower workload.reads or workload.block, or add disks"
                                } else {
                                    "lower this level's capacity"
                                }
                            ),
                        )));
                    }
                    (0..spec.disks)
                        .map(|_| Dev {
                            model: foresight_device::build(&s),
                            pending: VecDeque::new(),
                            poll_at: None,
                        })
                        .collect()
                }
            };
            let cap = timings[i].capacity_blocks.unwrap_or(u64::MAX);
            levels.push(Level {
                devices,
                capacity_blocks: cap,
                held: 0,
                peak: 0,
                free_slots: vec![],
                next_slot: 0,
                timing: timings[i],
            });
        }
        let home = levels.len();
        let jobs_max = levels[..home - 1]
            .iter()
            .fold(t.memory.0 / block.0 + 1, |sum, l| {
                sum.saturating_add(l.capacity_blocks)
            });
        let n = blocks.len();
        let index: FxHashMap<u64, usize> =
            blocks.iter().enumerate().map(|(i, &b)| (b, i)).collect();
        Ok(Driver {
            t,
            policy: stack.file,
            now: Instant::ZERO,
            seq: 0,
            heap: BinaryHeap::new(),
            levels,
            block_sectors: block.0 / 512,
            blocks: blocks.clone(),
            copies: vec![0; n],
            copies_read: vec![0; n],
            slot_of: FxHashMap::default(),
            mem: vec![0; n],
            mem_buffers: 0,
            mem_peak: 0,
            mem_capacity: t.memory.0 / block.0,
            jobs: FxHashMap::default(),
            jobs_max,
            next_job: 0,
            link_free: Instant::ZERO,
            past_horizon: false,
            next_access: 0,
            waiting_since: None,
            app_busy: false,
            want_at: Instant::ZERO,
            app_end: Instant::ZERO,
            app_done: false,
            stall: Duration::ZERO,
            latencies: Vec::with_capacity(n),
            requests,
            delivered: Vec::with_capacity(n),
            reads_by_level: vec![0; home],
            in_run: DeviceTally::default(),
            after_end: DeviceTally::default(),
            last_completion: Instant::ZERO,
            device_work: vec![],
            keep_device_work: false,
            fetches: 0,
            events: 0,
            prefetched: 0,
            wasted: 0,
            index,
            deferred: false,
            answered: vec![],
        })
    }

    /// Handles the next event; false when there is none left.
    fn step(&mut self, completions: &mut Vec<Completion>) -> bool {
        let Some(Reverse((at, _, ev))) = self.heap.pop() else {
            return false;
        };
        self.now = at;
        self.events += 1;
        match ev {
            Ev::Job(id) => self.finish_job(id),
            Ev::AppReady => self.want(),
            Ev::Device(level, disk) => {
                let dev = &mut self.levels[level - 1].devices[disk];
                if dev.poll_at == Some(at) {
                    dev.poll_at = None;
                }
                completions.clear();
                dev.model.advance(at, completions);
                for c in completions.iter() {
                    let mut parts = c.breakdown;
                    if let Some(job) = self.jobs.get_mut(&c.id) {
                        parts.queue += job.spent;
                        job.spent = parts.total();
                    }
                    self.tally().breakdown.add(&parts);
                }
                let done: Vec<u64> = completions.iter().map(|c| c.id).collect();
                self.pump(level, disk);
                for id in done {
                    self.finish_job(id);
                }
            }
        }
        true
    }
}

/// Part of [`run_traced`] after the event loop.
fn finish_run(
    d: Driver<'_, '_>,
    cfg: &SimConfig,
    t: &TieredConfig,
    block: ByteLen,
    x_cache: u32,
) -> Result<(RunOutput, TieredTrace), SimError> {
    let n = d.blocks.len();
    if d.past_horizon {
        return Err(SimError::Config(key_err(
            "workload.reads",
            format!(
                "the run would last past {} years of simulated time; lower workload.reads, \
                 workload.consume or the levels' times",
                HORIZON.as_secs_f64() / (365.0 * 86_400.0)
            ),
        )));
    }
    assert_eq!(d.next_access, n, "the application got every hinted block");
    let elapsed = d.app_end;
    let mut lat: Vec<f64> = d.latencies.iter().map(|l| l.as_millis_f64()).collect();
    lat.sort_by(f64::total_cmp);
    let mean = if lat.is_empty() {
        0.0
    } else {
        lat.iter().sum::<f64>() / lat.len() as f64
    };
    let p99 = crate::metrics::p99(&lat).unwrap_or(0.0);
    let app_bytes = n as u64 * block.0;
    // Copies still held when the run ended and never read are wasted as a dropped one is.
    let unread_at_end = d
        .slot_of
        .keys()
        .filter(|&&(access, level)| d.copies_read[access] & (1 << (level - 1)) == 0)
        .count() as u64
        * block.0;
    let secs = elapsed.as_secs_f64();
    let report = Report {
        throughput_mib_s: if secs > 0.0 {
            app_bytes as f64 / (1u64 << 20) as f64 / secs
        } else {
            0.0
        },
        elapsed_s: secs,
        app_requests: n as u64,
        app_bytes,
        // Device work that completed by `elapsed_s`; what completed after it is `after_end`.
        device_requests: d.in_run.requests,
        device_bytes: d.in_run.bytes,
        prefetched_bytes: d.prefetched,
        wasted_bytes: d.wasted + unread_at_end,
        mean_latency_ms: mean,
        p99_latency_ms: p99,
        stall_s: d.stall.as_secs_f64(),
        // `workload.consume` holds the copy (the paper's T_hit), see ARCHITECTURE.md.
        copy_s: None,
        // The preset levels' device time; a constant level's fixed per-block time has no parts
        // and is in none of these.
        breakdown: crate::metrics::BreakdownReport::from_device(&d.in_run.breakdown),
        after_end: Some(crate::metrics::AfterEndReport {
            device_requests: d.after_end.requests,
            device_bytes: d.after_end.bytes,
            breakdown: crate::metrics::BreakdownReport::from_device(&d.after_end.breakdown),
            last_completion_s: d.last_completion.max(elapsed).as_secs_f64(),
        }),
        memory_peak_bytes: d.mem_peak * block.0,
        seed: cfg.seed,
        policy: cfg.policy.name.clone(),
        device: describe(t),
        workload: "hinted".into(),
        streams: 1,
        fetches: d.fetches,
        hit_requests: d.latencies.iter().filter(|l| l.0 == 0).count() as u64,
        events: d.events,
        // The host stack's keys stay absent (`None`): a tier stack has no block queue, RAID
        // cache or block trace, and a 0 would read as a measurement.
        ..Report::default()
    };
    let mut peak = vec![d.mem_peak];
    peak.extend(d.levels.iter().map(|l| l.peak));
    let mut caps = vec![d.mem_capacity];
    caps.extend(d.levels.iter().map(|l| l.capacity_blocks));
    let trace = TieredTrace {
        delivered: d.delivered,
        hinted: d.blocks.clone(),
        peak_blocks: peak,
        capacity_blocks: caps,
        x_cache,
        reads_by_level: d.reads_by_level,
        held_at_end: d.levels.iter().map(|l| l.held).collect(),
        device_work: d.device_work,
    };
    Ok((RunOutput { report }, trace))
}

fn describe(t: &TieredConfig) -> String {
    let tiers: Vec<String> = t
        .tiers
        .iter()
        .map(|s| match &s.model {
            TierModel::Constant { read, .. } => format!("constant {read}"),
            TierModel::Preset(p) if s.disks > 1 => format!("{} x {p}", s.disks),
            TierModel::Preset(p) => p.clone(),
        })
        .collect();
    let mut s = format!("{} [{}]", t.kind, tiers.join(" > "));
    if let Some(l) = t.link {
        s.push_str(&format!(
            " over a link ({}, {:.0} MiB/s)",
            l.delay,
            l.bytes_per_s as f64 / (1u64 << 20) as f64
        ));
    }
    s
}

#[cfg(test)]
mod tests;
