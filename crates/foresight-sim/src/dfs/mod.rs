//! A distributed file system in the simulator: client streams, a network link, a storage server
//! with I/O workers, a CFQ-like block queue and a device (paper 004_80004320b985afc3.txt).
//!
//! Each client stream reads its own file in `request`-sized reads, one at a time, through its own
//! client cache, whose policy (none, a Linux-style window, or APS's Algorithm 1) decides what to
//! fetch. Every read the client cache sends down becomes one or more network requests of at most
//! the profile's RPC size; a request crosses the link ([`foresight_device::Link`]: delay,
//! bandwidth, per-connection TCP window) to the server. The server hands requests to its workers
//! either from one shared queue (any idle worker takes the oldest request, section 3.2.1) or from
//! per-worker queues grouped by stream, each stream pinned at open to the worker the policy
//! chooses (`First(Min_st(Min_req))`, section 6.2). A worker serves one request at a time: it
//! reads the range through the server's page cache, whose policy is the server's readahead, then
//! sends the bytes back over the link and takes its next request. The block requests a worker
//! causes, demand and readahead alike, enter the CFQ-like queue ([`cfq`]) as that worker's, as
//! Linux accounts I/O to the thread that submits it; that is what mixes streams under a shared
//! queue (Fig. 5) and keeps them apart with dedicated workers.
//!
//! The `local` system is the baseline: each stream is a process on the server itself, reading
//! through the server's page cache with the device's default readahead, with its own CFQ queue.
//!
//! The driver makes no prefetching decision: readahead sizes, the RPC size, the queue kind,
//! `alpha` and the worker choice come from `foresight_policy::adaptive`. The server publishes its
//! device's figures for condition 20 (`max_ra_sz`; the average read bandwidth `RB`, measured here
//! on a fresh copy of the device with as many reads in flight as the server keeps there; `p =
//! 1.2`), and the client's round trip is the time to send a request and receive one unit on the
//! idle link, which is what the paper's `cs` exchange measures (section 6.2).

pub mod cfq;
pub mod config;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::Arc;

use foresight_core::{
    Bandwidth, ByteLen, ByteRange, Duration, FileId, Instant, Lba, Rng, StreamId,
};
use foresight_device::{presets, Completion, DevRequest, Device, Direction, Link, LinkParams, Op};
use foresight_policy::adaptive::dfs::{
    ClientReadahead, DeviceReadahead, DfsProfile, DfsSystem, QueueKind,
};
use foresight_policy::adaptive::{
    AlphaMode, ApsConfig, DeviceFigures, StreamGroupedQueue, WorkerChoice, WorkerId,
    DEFAULT_PEAK_RATIO,
};
use foresight_policy::{Layout, PAGE_BYTES};
use rustc_hash::FxHashMap;
use thiserror::Error;

use self::cfq::{Cfq, CfqReq, CfqTimes, SeekRule};
use crate::host::layer::CacheLayer;
use crate::metrics::{BreakdownReport, Report, RequestLog, RequestRecord};

/// Bytes of a request message or a response header on the wire (an RPC header; assumed).
pub const HEADER_BYTES: u64 = 256;
/// The largest block request after merging (Linux `max_sectors_kb` = 512).
pub const MAX_REQUEST_SECTORS: u32 = 1024;

/// What the clients do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// Each stream reads its own file from the start, sequentially, until the run ends.
    Streams,
    /// Each stream reads `requests` reads of `request` bytes at random aligned offsets of its file.
    Random,
}

/// The device behind the server.
#[derive(Clone, Debug, PartialEq)]
pub enum DfsDevice {
    /// One device from a preset (an HDD or an SSD).
    Single(presets::DeviceSpec),
    /// A RAID-0 of `disks` copies of a disk preset with `strip` bytes per strip.
    Raid0 {
        /// The member disk.
        disk: presets::DeviceSpec,
        /// Member count.
        disks: u32,
        /// Strip size.
        strip: ByteLen,
    },
}

impl DfsDevice {
    fn build(&self) -> Result<Box<dyn Device>, DfsError> {
        let bad = |e: foresight_device::DeviceError| DfsError::Setting {
            key: "device",
            message: e.to_string(),
        };
        Ok(match self {
            DfsDevice::Single(spec) => presets::try_build(spec).map_err(bad)?,
            DfsDevice::Raid0 { disk, disks, strip } => {
                let members = (0..*disks)
                    .map(|_| presets::try_build(disk))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(bad)?;
                Box::new(foresight_device::Raid0::try_new(members, strip.0, 128).map_err(bad)?)
            }
        })
    }

    /// The readahead figures the paper's rules give this device.
    pub fn readahead(&self) -> DeviceReadahead {
        match self {
            DfsDevice::Single(_) => DeviceReadahead::single(),
            DfsDevice::Raid0 { disks, strip, .. } => DeviceReadahead::striped(*disks, *strip),
        }
    }

    /// Requests the driver keeps at the device at once: one per member disk for an array (so a
    /// stream's readahead keeps every member busy), 32 for an SSD (its channels), 2 for a disk.
    fn depth(&self) -> usize {
        match self {
            DfsDevice::Single(presets::DeviceSpec::Ssd(_)) => 32,
            DfsDevice::Single(_) => 2,
            DfsDevice::Raid0 { disks, .. } => 2 * *disks as usize,
        }
    }

    fn is_ssd(&self) -> bool {
        matches!(self, DfsDevice::Single(presets::DeviceSpec::Ssd(_)))
    }

    /// How CFQ judges a seek here: by distance on disks, by request size where no member rotates
    /// (Linux's rule for a queue flagged non-rotational).
    fn seek_rule(&self) -> SeekRule {
        match self {
            DfsDevice::Single(presets::DeviceSpec::Ssd(_))
            | DfsDevice::Raid0 {
                disk: presets::DeviceSpec::Ssd(_),
                ..
            } => SeekRule::SmallRequests,
            _ => SeekRule::Distance,
        }
    }
}

/// One DFS run's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct DfsParams {
    /// Which system's prefetching.
    pub system: DfsSystem,
    /// Overrides the system's queue kind.
    pub queue: Option<QueueKind>,
    /// Server I/O workers.
    pub workers: u32,
    /// The link.
    pub link: LinkParams,
    /// The device.
    pub device: DfsDevice,
    /// What the clients do.
    pub pattern: Pattern,
    /// Client streams.
    pub streams: u32,
    /// Bytes per file.
    pub file_size: ByteLen,
    /// Bytes per application read.
    pub request: ByteLen,
    /// Reads per stream (`Random`).
    pub requests: u64,
    /// Simulated time the run lasts at most.
    pub duration: Duration,
    /// Server page cache. Each stream's client cache gets an equal share of it (at least 256
    /// pages), as if the clients together had the memory the server has.
    pub memory: ByteLen,
    /// CFQ's time slice and idle wait.
    pub cfq: Option<CfqTimes>,
    /// How APS chooses `alpha`.
    pub alpha: AlphaMode,
    /// The most readahead units APS keeps in flight; bounds each stream's memory to
    /// `(max_alpha + 1) * max_ra_sz`.
    pub max_alpha: u32,
    /// The seed of random offsets.
    pub seed: u64,
}

impl Default for DfsParams {
    fn default() -> Self {
        DfsParams {
            system: DfsSystem::Aps,
            queue: None,
            workers: 32,
            link: foresight_device::link_preset("lan-10g").expect("preset exists"),
            device: DfsDevice::Single(presets::preset("st6000nm0024").expect("preset exists")),
            pattern: Pattern::Streams,
            streams: 1,
            file_size: ByteLen::gib(10),
            request: ByteLen::kib(128),
            requests: 64,
            duration: Duration::from_secs(10),
            memory: ByteLen::gib(4),
            cfq: None,
            alpha: AlphaMode::Auto,
            max_alpha: 256,
            seed: 1,
        }
    }
}

/// CFQ's figures by device: Linux's 100 ms sync slice and 8 ms idle wait; no idling on an SSD,
/// where a switch costs nothing (paper 004, section 7.3 sets `slice_idle = 0` there).
pub fn default_cfq(device: &DfsDevice) -> CfqTimes {
    CfqTimes {
        slice: Duration::from_millis(100),
        idle: if device.is_ssd() {
            Duration::ZERO
        } else {
            Duration::from_millis(8)
        },
    }
}

/// Why a run could not start.
#[derive(Debug, Error)]
pub enum DfsError {
    /// A setting is out of range.
    #[error("{key}: {message}")]
    Setting {
        /// The config key.
        key: &'static str,
        /// What is wrong.
        message: String,
    },
}

impl From<DfsError> for crate::config::ConfigError {
    fn from(e: DfsError) -> Self {
        match e {
            DfsError::Setting { key, message } => crate::config::ConfigError::Key {
                key: key.to_string(),
                message,
            },
        }
    }
}

/// What a DFS run measured beyond the common keys; `foresight sim --json` prints it as `dfs`.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct DfsFigures {
    /// Which system.
    pub system: String,
    /// `shared` or `dedicated`: how the server's workers take requests. `None` (`null`) for
    /// `local`, which has no server workers (each stream is a process with a CFQ queue of its
    /// own).
    pub queue: Option<String>,
    /// Bytes of responses (headers included) that reached the clients within the run; responses
    /// still on the link when it ends are not counted.
    pub network_bytes: u64,
    /// Bytes the device read that no application read asked for, over bytes asked for; `None`
    /// (`null`) when no byte was asked for, where the ratio is undefined (it used to divide by 1
    /// and report the device's bytes as a ratio).
    pub useless_ratio: Option<f64>,
    /// `alpha` APS chose (0 for the other systems).
    pub alpha: u32,
    /// The round trip the clients measured, ms; `None` (`null`) for `local`, which has no
    /// network.
    pub rtt_ms: Option<f64>,
    /// The device's average read bandwidth the server published, MiB/s.
    pub rb_mib_s: f64,
    /// Times the disk went from one CFQ queue to another.
    pub cfq_switches: u64,
}

/// What a DFS run measured: the common [`Report`] (whose `dfs` holds [`DfsFigures`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DfsReport {
    /// The common measurements.
    pub report: Report,
    /// The DFS figures (also in `report.dfs`).
    pub figures: DfsFigures,
}

#[derive(Clone, Copy, Debug)]
struct Rpc {
    stream: u32,
    offset: u64,
    bytes: u64,
    io: u32,
    worker: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// A stream issues its next read.
    AppRead(u32),
    /// A request reaches the server.
    ReqArrive(u32),
    /// A response's last byte reaches the client.
    RespArrive(u32),
}

struct StreamState {
    file: FileId,
    next_offset: u64,
    issued_at: Instant,
    /// The read issued at `issued_at` has not completed yet.
    reading: bool,
    reads_left: u64,
    worker: Option<WorkerId>,
    client: Option<CacheLayer>,
    rng: Rng,
}

enum Workers {
    Shared {
        queue: VecDeque<u32>,
        /// The most requests `queue` may hold.
        cap: usize,
        idle: VecDeque<u32>,
    },
    Dedicated {
        choice: WorkerChoice,
        queues: Vec<StreamGroupedQueue<u32>>,
    },
}

/// Token tag of a server read made by a local process rather than a worker.
const LOCAL_TOKEN: u64 = 1 << 40;

struct Sim<'r> {
    params: DfsParams,
    profile: DfsProfile,
    layout: Arc<Layout>,
    link: Link,
    device: Box<dyn Device>,
    depth: usize,
    cfq: Cfq,
    server: CacheLayer,
    streams: Vec<StreamState>,
    workers: Workers,
    busy: Vec<Option<u32>>,
    rpcs: Vec<Option<Rpc>>,
    free_rpcs: Vec<u32>,
    parts: Vec<u32>,
    free_parts: Vec<u32>,
    in_device: FxHashMap<u64, CfqReq>,
    next_dev_id: u64,
    heap: BinaryHeap<Reverse<(Instant, u64, Ev)>>,
    seq: u64,
    now: Instant,
    end: Instant,
    // Measurements.
    app_bytes: u64,
    app_requests: u64,
    latencies: crate::metrics::Latencies,
    /// Where each application request's record goes (`--requests-out`).
    requests: RequestLog<'r>,
    device_requests: u64,
    device_bytes: u64,
    /// Response bytes that reached a client (counted on arrival: the link books wire time ahead,
    /// so what it has booked may not have crossed by the end of the run).
    network_bytes: u64,
    breakdown: foresight_device::Breakdown,
    cache_hits: u64,
    /// Application reads served from the reader's cache without waiting for any I/O.
    hit_requests: u64,
    /// Events the loop handled (device completions, CFQ timers, reads and messages).
    events: u64,
    /// The server's fetches whose bytes spanned more than one strip of a RAID-0 device.
    split_fetches: u64,
    completions: Vec<Completion>,
}

/// Measures the device's average sequential read bandwidth the way a server would before
/// publishing it: `unit`-sized reads at four places across a fresh copy of the device, with as many
/// in flight as the server keeps at the device (so an array's members all work).
fn measure_rb(device: &DfsDevice, unit: ByteLen) -> Result<Bandwidth, DfsError> {
    let mut dev = device.build()?;
    let depth = device.depth();
    let cap = dev.capacity().0;
    let per_place: u64 = 32 << 20;
    let sectors = (unit.0 / 512).clamp(1, u64::from(MAX_REQUEST_SECTORS)) as u32;
    let mut now = Instant(0);
    let mut total = 0u64;
    let mut busy_ns = 0u64;
    let mut out = Vec::new();
    let mut id = 0u64;
    for place in 0..4u64 {
        let start_lba = (cap / 4 * place) / 512;
        let end_lba = start_lba + per_place / 512;
        let begin = now;
        let mut lba = start_lba;
        while lba < end_lba || dev.outstanding() > 0 {
            while lba < end_lba && dev.outstanding() < depth && dev.can_accept() {
                dev.submit(
                    now,
                    DevRequest {
                        id,
                        op: Op::Read,
                        lba: Lba(lba),
                        sectors,
                    },
                );
                id += 1;
                lba += u64::from(sectors);
            }
            let t = dev.next_event().expect("a pending request has an event");
            now = now.max(t);
            dev.advance(now, &mut out);
            out.clear();
        }
        total += (lba - start_lba) * 512;
        busy_ns += (now - begin).0;
    }
    Ok(Bandwidth::from_bytes_per_s(
        total as f64 / (busy_ns.max(1) as f64 / 1e9),
    ))
}

impl DfsParams {
    /// Checks the settings; errors name the config key.
    pub fn validate(&self) -> Result<(), DfsError> {
        let bad = |key: &'static str, message: String| Err(DfsError::Setting { key, message });
        if !(1..=foresight_policy::adaptive::workers::MAX_WORKERS).contains(&self.workers) {
            return bad(
                "dfs.workers",
                format!("must be 1..=4096, got {}", self.workers),
            );
        }
        if !(1..=4096).contains(&self.streams) {
            return bad(
                "workload.streams",
                format!("must be 1..=4096 for a dfs run, got {}", self.streams),
            );
        }
        if self.request.0 < PAGE_BYTES || !self.request.0.is_multiple_of(PAGE_BYTES) {
            return bad(
                "workload.request",
                format!(
                    "must be a whole number of 4 KiB pages, got {}",
                    self.request
                ),
            );
        }
        if self.file_size < self.request {
            return bad(
                "workload.file_size",
                format!("must hold at least one request ({})", self.request),
            );
        }
        if self.memory.0 < 16 * self.request.0.max(1 << 20) {
            return bad(
                "host.memory",
                format!(
                    "must hold at least 16 requests of max(request, 1 MiB), got {}",
                    self.memory
                ),
            );
        }
        if !(1..=1024).contains(&self.max_alpha) {
            return bad(
                "dfs.max_alpha",
                format!("must be 1..=1024, got {}", self.max_alpha),
            );
        }
        if self.duration.0 == 0 {
            return bad("workload.duration", "must be longer than 0".into());
        }
        self.link.validate().map_err(|e| DfsError::Setting {
            key: "network",
            message: e.to_string(),
        })?;
        Ok(())
    }
}

/// Runs one DFS simulation.
pub fn run(params: &DfsParams) -> Result<DfsReport, DfsError> {
    run_logged(params, RequestLog::default(), None).map(|(report, _)| report)
}

/// [`run`], sending one record per application request to `requests`, which it returns: a run
/// whose sink failed stops early, and the error is in the log. `progress` is called now and then
/// with the fraction of the duration simulated.
pub(crate) fn run_logged<'r>(
    params: &DfsParams,
    requests: RequestLog<'r>,
    progress: Option<&mut dyn FnMut(f64)>,
) -> Result<(DfsReport, RequestLog<'r>), DfsError> {
    params.validate()?;
    let wall = std::time::Instant::now();
    let mut profile = params.system.profile(params.device.readahead());
    if let Some(q) = params.queue {
        profile.queue = q;
    }
    let device = params.device.build()?;
    let cap = device.capacity();
    let files = params.streams as usize;
    let layout = Arc::new(
        Layout::spread(cap, None, files, params.file_size).map_err(|e| DfsError::Setting {
            key: "workload.file_size",
            message: e.to_string(),
        })?,
    );
    let policy_err = |e: foresight_policy::PolicyError| DfsError::Setting {
        key: "dfs.system",
        message: e.to_string(),
    };
    let server_pages = params.memory.0 / PAGE_BYTES;
    // A file's last page holds its bytes up to the file's end only: the fill of a demand page
    // (the bytes a read did not ask for, counted as prefetched) stops there. The server reads
    // the device in whole sectors, a client asks for the file's bytes.
    let file_ends = |end: u64| (0..params.streams).map(move |f| (FileId(f), end));
    let sector_bytes = foresight_core::SECTOR_BYTES;
    let server = CacheLayer::new(
        server_pages,
        profile.server_policy(layout.clone()).map_err(policy_err)?,
    )
    .with_file_ends(file_ends(
        params.file_size.0.div_ceil(sector_bytes) * sector_bytes,
    ));
    let local = params.system == DfsSystem::Local;
    // Condition 20's inputs: the server's published figures and the client's measured round trip.
    let rb = measure_rb(&params.device, profile.unit)?;
    let figures = DeviceFigures::new(profile.unit, rb, DEFAULT_PEAK_RATIO).map_err(policy_err)?;
    let rtt = params.link.rtt()
        + params.link.bandwidth.time_for(ByteLen(HEADER_BYTES))
        + params.link.bandwidth.time_for(profile.unit);
    let aps_cfg = ApsConfig {
        alpha: params.alpha,
        device: Some(figures),
        rtt_hint: Some(rtt),
        max_alpha: params.max_alpha,
        ..ApsConfig::default()
    };
    let client_pages = (params.memory.0 / PAGE_BYTES / u64::from(params.streams)).max(256);
    // Every request carries at least one page the client holds in flight, so this bounds every
    // server queue.
    let queue_cap = (client_pages * u64::from(params.streams)) as usize + 1024;
    let workers = match profile.queue {
        QueueKind::Shared => Workers::Shared {
            queue: VecDeque::new(),
            cap: queue_cap,
            idle: (0..params.workers).collect(),
        },
        QueueKind::Dedicated => Workers::Dedicated {
            choice: WorkerChoice::new(params.workers).map_err(policy_err)?,
            queues: (0..params.workers)
                .map(|_| StreamGroupedQueue::new(queue_cap, None))
                .collect(),
        },
    };
    let mut streams = Vec::with_capacity(files);
    for i in 0..params.streams {
        let client = if local {
            None
        } else {
            Some(
                CacheLayer::new(
                    client_pages,
                    profile
                        .client_policy(layout.clone(), aps_cfg)
                        .map_err(policy_err)?,
                )
                .with_file_ends(file_ends(params.file_size.0)),
            )
        };
        streams.push(StreamState {
            file: FileId(i),
            next_offset: 0,
            issued_at: Instant(0),
            reading: false,
            reads_left: match params.pattern {
                Pattern::Streams => u64::MAX,
                Pattern::Random => params.requests,
            },
            worker: None,
            client,
            rng: Rng::new(params.seed ^ (u64::from(i) << 32) ^ 0x9e37_79b9),
        });
    }
    let cfq_times = params.cfq.unwrap_or_else(|| default_cfq(&params.device));
    let mut sim = Sim {
        depth: params.device.depth(),
        link: Link::new(params.link, files),
        device,
        cfq: Cfq::new(
            cfq_times,
            params.device.seek_rule(),
            MAX_REQUEST_SECTORS,
            server_pages as usize + 1024,
        ),
        server,
        streams,
        workers,
        busy: vec![None; params.workers as usize],
        rpcs: Vec::new(),
        free_rpcs: Vec::new(),
        parts: Vec::new(),
        free_parts: Vec::new(),
        in_device: FxHashMap::default(),
        next_dev_id: 0,
        heap: BinaryHeap::new(),
        seq: 0,
        now: Instant(0),
        end: Instant(0) + params.duration,
        app_bytes: 0,
        app_requests: 0,
        latencies: Default::default(),
        requests,
        device_requests: 0,
        device_bytes: 0,
        network_bytes: 0,
        breakdown: Default::default(),
        cache_hits: 0,
        events: 0,
        split_fetches: 0,
        hit_requests: 0,
        completions: Vec::new(),
        params: params.clone(),
        profile,
        layout,
    };
    // Streams open: a dedicated server pins each to a worker (section 6.2).
    for i in 0..params.streams {
        if let Workers::Dedicated { choice, .. } = &mut sim.workers {
            sim.streams[i as usize].worker = Some(choice.assign_stream());
        }
        sim.push(Instant(0), Ev::AppRead(i));
    }
    let elapsed = sim.run_loop(progress);
    let alpha = match (sim.profile.client, params.alpha) {
        (ClientReadahead::Aps, AlphaMode::Fixed(n)) => n,
        (ClientReadahead::Aps, AlphaMode::Auto) => figures.alpha(rtt, aps_cfg.max_alpha),
        _ => 0,
    };
    let report = sim.report(elapsed, wall, alpha, rtt, rb);
    Ok((report, sim.requests))
}

impl Sim<'_> {
    fn push(&mut self, at: Instant, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, ev)));
    }

    fn done(&self) -> bool {
        self.streams.iter().all(|s| s.reads_left == 0)
    }

    /// Runs until every stream is done or the duration is over; returns the simulated time.
    fn run_loop(&mut self, mut progress: Option<&mut dyn FnMut(f64)>) -> Instant {
        let end = self.run_events(&mut progress);
        if let Some(p) = progress.as_mut() {
            p(1.0);
        }
        end
    }

    /// How far the run is, 0 to 1: the share of its duration simulated or of its reads done,
    /// whichever is further (a run without a duration has a horizon centuries away, and one with
    /// it may still end with its reads).
    fn done_fraction(&self) -> f64 {
        let time = self.now.as_secs_f64() / self.end.as_secs_f64();
        let streams = self.streams.len().max(1) as f64;
        let work: f64 = self
            .streams
            .iter()
            .map(|st| match (st.reads_left, self.params.pattern) {
                (0, _) => 1.0,
                (_, Pattern::Streams) => st.next_offset as f64 / self.params.file_size.0 as f64,
                (left, Pattern::Random) => 1.0 - left as f64 / self.params.requests.max(1) as f64,
            })
            .sum::<f64>()
            / streams;
        time.max(work).clamp(0.0, 1.0)
    }

    /// The event loop of [`Sim::run_loop`], telling `progress` every 8192 events how far the run
    /// is.
    fn run_events(&mut self, progress: &mut Option<&mut dyn FnMut(f64)>) -> Instant {
        loop {
            // A sink that failed ends the run: its caller reports the error, not the figures.
            if self.done() || self.requests.failed() {
                return self.now;
            }
            self.events += 1;
            if self.events.is_multiple_of(8192) {
                if let Some(p) = progress.as_mut() {
                    p(self.done_fraction());
                }
            }
            let dev = self.device.next_event();
            let timer = if self.device.outstanding() < self.depth && self.device.can_accept() {
                self.cfq.next_timer().filter(|&t| t > self.now)
            } else {
                None
            };
            let ev = self.heap.peek().map(|Reverse((t, _, _))| *t);
            let Some(next) = crate::sim::earliest(crate::sim::earliest(dev, timer), ev) else {
                // Nothing can happen any more: every stream is stuck (a bug) or done.
                assert!(self.done(), "the DFS simulation stalled at {:?}", self.now);
                return self.now;
            };
            if next > self.end {
                self.now = self.end;
                return self.end;
            }
            self.now = next;
            if dev == Some(next) {
                let mut out = std::mem::take(&mut self.completions);
                self.device.advance(next, &mut out);
                for c in out.drain(..) {
                    self.device_done(c);
                }
                self.completions = out;
            } else if ev == Some(next) {
                let Reverse((_, _, e)) = self.heap.pop().expect("peeked event");
                match e {
                    Ev::AppRead(s) => self.app_read(s),
                    Ev::ReqArrive(r) => self.req_arrive(r),
                    Ev::RespArrive(r) => self.resp_arrive(r),
                }
            }
            self.pump();
        }
    }

    /// Feeds the device from the CFQ queue while it has room.
    fn pump(&mut self) {
        while self.device.outstanding() < self.depth && self.device.can_accept() {
            let Some(r) = self.cfq.pop(self.now) else {
                break;
            };
            let id = self.next_dev_id;
            self.next_dev_id += 1;
            self.device.submit(
                self.now,
                DevRequest {
                    id,
                    op: Op::Read,
                    lba: Lba(r.lba),
                    sectors: r.sectors,
                },
            );
            self.device_requests += 1;
            self.device_bytes += u64::from(r.sectors) * 512;
            self.in_device.insert(id, r);
        }
    }

    fn device_done(&mut self, c: Completion) {
        let r = self
            .in_device
            .remove(&c.id)
            .expect("completion of a submitted request");
        self.breakdown.add(&c.breakdown);
        if c.cache_hit {
            self.cache_hits += 1;
        }
        self.cfq.complete(self.now, r.queue);
        // Threads sharing a merged CFQ queue merge each other's requests: each part's follow-up
        // I/O is its own thread's.
        for (t, owner) in r.tokens.into_iter().zip(r.owners) {
            let io = self.parts[t as usize];
            self.free_parts.push(t);
            self.server.part_done(self.now, io);
            self.after_server(owner);
        }
    }

    fn app_read(&mut self, s: u32) {
        let p = &self.params;
        let st = &mut self.streams[s as usize];
        if st.reads_left == 0 {
            return;
        }
        let file_bytes = p.file_size.0;
        let req = p.request.0;
        let offset = match p.pattern {
            Pattern::Streams => {
                if st.next_offset + req > file_bytes {
                    // The stream has read its file. (Starting it again would read a file that
                    // fits in the client cache from memory, at no simulated time, for ever.)
                    st.reads_left = 0;
                    return;
                }
                st.next_offset
            }
            Pattern::Random => st.rng.below(file_bytes / req) * req,
        };
        st.next_offset = offset + req;
        st.issued_at = self.now;
        st.reading = true;
        let file = st.file;
        let token = u64::from(s);
        match st.client.as_mut() {
            None => {
                // A local process: its own CFQ queue, after the server workers' ids.
                let owner = self.params.workers + s;
                self.server.read(
                    self.now,
                    StreamId(s),
                    file,
                    offset,
                    req,
                    LOCAL_TOKEN | token,
                );
                self.after_server(owner);
            }
            Some(c) => {
                c.read(self.now, StreamId(s), file, offset, req, token);
                self.after_client(s);
            }
        }
    }

    /// Executes what a client cache produced: network requests for its reads, and finished reads.
    fn after_client(&mut self, s: u32) {
        let rpc_max = self
            .profile
            .rpc_max
            .map_or(u64::MAX, |b| b.0.max(PAGE_BYTES));
        let file_bytes = self.params.file_size.0;
        loop {
            let c = self.streams[s as usize]
                .client
                .as_mut()
                .expect("a client stream");
            // A client's fetches cross the link, never a strip: only their count matters, which
            // the layer keeps.
            c.fetched.clear();
            let downs: Vec<_> = c.down.drain(..).collect();
            let dones: Vec<_> = c.done.drain(..).collect();
            if downs.is_empty() && dones.is_empty() {
                break;
            }
            for d in downs {
                let start = d.first_page * PAGE_BYTES;
                let end = ((d.first_page + d.pages) * PAGE_BYTES).min(file_bytes);
                let mut off = start;
                while off < end {
                    let bytes = (end - off).min(rpc_max);
                    self.streams[s as usize]
                        .client
                        .as_mut()
                        .expect("a client stream")
                        .add_part(d.io);
                    let id = self.alloc_rpc(Rpc {
                        stream: s,
                        offset: off,
                        bytes,
                        io: d.io,
                        worker: u32::MAX,
                    });
                    let at = self
                        .link
                        .send(self.now, Direction::Up, s as usize, HEADER_BYTES);
                    self.push(at, Ev::ReqArrive(id));
                    off += bytes;
                }
            }
            for d in dones {
                self.app_done(d.token as u32, d.hit);
            }
        }
    }

    /// Stream `s`'s read is done; `hit` when its cache had every byte without waiting for I/O.
    fn app_done(&mut self, s: u32, hit: bool) {
        let st = &mut self.streams[s as usize];
        self.app_requests += 1;
        self.hit_requests += u64::from(hit);
        self.app_bytes += self.params.request.0;
        st.reading = false;
        self.latencies.push((self.now - st.issued_at).0);
        // One read in flight per stream: the one just done ends where the next would start.
        let bytes = self.params.request.0;
        let now = self.now;
        self.requests.push(|id| RequestRecord {
            id,
            stream: s,
            submit_s: st.issued_at.as_secs_f64(),
            complete_s: now.as_secs_f64(),
            offset: st.next_offset - bytes,
            bytes,
            op: 'R',
        });
        if st.reads_left != u64::MAX {
            st.reads_left -= 1;
        }
        if st.reads_left > 0 {
            self.push(self.now, Ev::AppRead(s));
        }
    }

    fn alloc_rpc(&mut self, r: Rpc) -> u32 {
        foresight_core::take_slot(&mut self.rpcs, &mut self.free_rpcs, Some(r))
    }

    fn req_arrive(&mut self, id: u32) {
        let stream = self.rpcs[id as usize].expect("live request").stream;
        let begin = match &mut self.workers {
            Workers::Shared { queue, cap, idle } => {
                assert!(queue.len() < *cap, "shared queue over its bound of {cap}");
                queue.push_back(id);
                // The longest idle worker takes it: idle workers sleep on one condition
                // variable, and a signal wakes the oldest waiter.
                idle.pop_front()
                    .map(|w| (w, queue.pop_front().expect("just queued")))
            }
            Workers::Dedicated { choice, queues } => {
                let w = self.streams[stream as usize]
                    .worker
                    .expect("a dedicated stream has a worker");
                choice.request_queued(w);
                let q = &mut queues[w.0 as usize];
                if q.push(StreamId(stream), id).is_err() {
                    panic!("worker {w} queue over its bound of {}", q.capacity());
                }
                if self.busy[w.0 as usize].is_none() {
                    q.pop().map(|(_, next)| (w.0, next))
                } else {
                    None
                }
            }
        };
        if let Some((w, next)) = begin {
            self.start(w, next);
        }
    }

    /// Worker `w` starts serving request `id`: it reads the range through the server's cache.
    fn start(&mut self, w: u32, id: u32) {
        assert!(self.busy[w as usize].is_none(), "worker {w} is busy");
        self.busy[w as usize] = Some(id);
        let r = self.rpcs[id as usize].as_mut().expect("live request");
        r.worker = w;
        let r = *r;
        let file = self.streams[r.stream as usize].file;
        self.server.read(
            self.now,
            StreamId(r.stream),
            file,
            r.offset,
            r.bytes,
            u64::from(id),
        );
        self.after_server(w);
    }

    /// Executes what the server cache produced on behalf of CFQ owner `owner`: block requests for
    /// its reads, and finished reads (sent back, or handed to a local process).
    fn after_server(&mut self, owner: u32) {
        loop {
            for (file, range) in std::mem::take(&mut self.server.fetched) {
                self.count_split(file, range);
            }
            let downs: Vec<_> = self.server.down.drain(..).collect();
            let dones: Vec<_> = self.server.done.drain(..).collect();
            if downs.is_empty() && dones.is_empty() {
                break;
            }
            for d in downs {
                let range = ByteRange::new(d.first_page * PAGE_BYTES, d.pages * PAGE_BYTES);
                let mut pieces = Vec::new();
                self.layout
                    .for_each_volume_piece(d.file, range, |off, len| {
                        pieces.push((off.0 / 512, len.0.div_ceil(512)));
                    });
                for (mut lba, mut sectors) in pieces {
                    while sectors > 0 {
                        let n = sectors.min(u64::from(MAX_REQUEST_SECTORS)) as u32;
                        let token =
                            foresight_core::take_slot(&mut self.parts, &mut self.free_parts, d.io);
                        self.server.add_part(d.io);
                        self.cfq.push(owner, lba, n, token);
                        lba += u64::from(n);
                        sectors -= u64::from(n);
                    }
                }
            }
            for d in dones {
                if d.token & LOCAL_TOKEN != 0 {
                    self.app_done((d.token & !LOCAL_TOKEN) as u32, d.hit);
                } else {
                    self.served(d.token as u32);
                }
            }
        }
    }

    /// Counts a server fetch that a RAID-0 device splits over more than one member: one whose
    /// bytes lie in more than one strip.
    fn count_split(&mut self, file: FileId, range: ByteRange) {
        let DfsDevice::Raid0 { strip, .. } = self.params.device else {
            return;
        };
        let mut strips: Option<(u64, u64)> = None;
        self.layout.for_each_volume_piece(file, range, |off, len| {
            if len.0 == 0 {
                return;
            }
            let (a, b) = (off.0 / strip.0, (off.0 + len.0 - 1) / strip.0);
            strips = Some(strips.map_or((a, b), |(lo, hi)| (lo.min(a), hi.max(b))));
        });
        if strips.is_some_and(|(lo, hi)| lo != hi) {
            self.split_fetches += 1;
        }
    }

    /// A worker has the bytes of request `id`: it sends them and takes its next request.
    fn served(&mut self, id: u32) {
        let r = self.rpcs[id as usize].expect("live request");
        let at = self.link.send(
            self.now,
            Direction::Down,
            r.stream as usize,
            r.bytes + HEADER_BYTES,
        );
        self.push(at, Ev::RespArrive(id));
        let w = r.worker;
        self.busy[w as usize] = None;
        let next = match &mut self.workers {
            Workers::Shared { queue, idle, .. } => match queue.pop_front() {
                Some(n) => Some(n),
                None => {
                    idle.push_back(w);
                    None
                }
            },
            Workers::Dedicated { choice, queues } => {
                choice.request_done(WorkerId(w));
                queues[w as usize].pop().map(|(_, n)| n)
            }
        };
        if let Some(n) = next {
            self.start(w, n);
        }
    }

    fn resp_arrive(&mut self, id: u32) {
        let r = self.rpcs[id as usize].take().expect("live request");
        self.free_rpcs.push(id);
        self.network_bytes += r.bytes + HEADER_BYTES;
        self.streams[r.stream as usize]
            .client
            .as_mut()
            .expect("a client stream")
            .part_done(self.now, r.io);
        self.after_client(r.stream);
    }

    /// The byte ranges `(offset, bytes)` of the RPCs whose reply has not reached the client, by
    /// `(stream, client read)`: built once, at the end of a run.
    fn rpcs_under_way(&self) -> FxHashMap<(u32, u32), Vec<(u64, u64)>> {
        let mut out: FxHashMap<(u32, u32), Vec<(u64, u64)>> = FxHashMap::default();
        for r in self.rpcs.iter().flatten() {
            out.entry((r.stream, r.io))
                .or_default()
                .push((r.offset, r.bytes));
        }
        out
    }

    fn report(
        &self,
        elapsed: Instant,
        wall: std::time::Instant,
        alpha: u32,
        rtt: Duration,
        rb: Bandwidth,
    ) -> DfsReport {
        let secs = elapsed.as_secs_f64().max(1e-9);
        let mean_ms = self.latencies.mean_ms();
        let p99_ms = self.latencies.p99_ms();
        let mut prefetched = 0u64;
        let mut wasted = 0u64;
        let mut peak = self.server.cache().peak_pages();
        let mut fetches = 0u64;
        // A prefetch still in flight at the end has not been read yet: neither prefetched nor
        // wasted, as in a host run; the fill of demand pages counts as in a host run. But a
        // client's fetch crosses the link in RPCs of at most `rpc_max` and is in flight until
        // its last reply arrives: the pages of the replies that did arrive are in
        // `network_bytes`, and count as prefetched and, unread, as wasted, as the parts of a
        // host's split read its members have read do. Left out, a Lustre stream's 40 MiB window
        // of 1 MiB RPCs left tens of MB that reached the client counted nowhere.
        let rpcs_out = self.rpcs_under_way();
        let mut layers: Vec<(&CacheLayer, (u64, u64))> = vec![(&self.server, (0, 0))];
        for (s, st) in self.streams.iter().enumerate() {
            let Some(c) = &st.client else { continue };
            let arrived = c.in_flight_prefetch_pages_read(|io, _, page| {
                let (from, to) = (page * PAGE_BYTES, (page + 1) * PAGE_BYTES);
                rpcs_out
                    .get(&(s as u32, io))
                    .is_none_or(|out| !out.iter().any(|&(o, b)| o < to && from < o + b))
            });
            layers.push((c, arrived));
        }
        for (l, arrived) in layers {
            fetches += l.fetches();
            let (p, w) = l.prefetched_and_wasted_bytes(arrived);
            prefetched += p;
            wasted += w;
        }
        for s in &self.streams {
            if let Some(c) = &s.client {
                peak += c.cache().peak_pages();
            }
        }
        let report = Report {
            throughput_mib_s: self.app_bytes as f64 / secs / (1u64 << 20) as f64,
            elapsed_s: secs,
            app_requests: self.app_requests,
            app_bytes: self.app_bytes,
            device_requests: self.device_requests,
            device_bytes: self.device_bytes,
            prefetched_bytes: prefetched,
            wasted_bytes: wasted,
            mean_latency_ms: mean_ms,
            p99_latency_ms: p99_ms,
            // The time the streams waited on I/O, a read still out at the end included (the
            // latency figures keep completed reads only).
            stall_s: self.latencies.sum_s()
                + self
                    .streams
                    .iter()
                    .filter(|st| st.reading)
                    .map(|st| (elapsed - st.issued_at).as_secs_f64())
                    .sum::<f64>(),
            // The clients' copies into their buffers are not modelled (see ARCHITECTURE.md).
            copy_s: None,
            breakdown: BreakdownReport::from_device(&self.breakdown),
            wall_s: wall.elapsed().as_secs_f64(),
            memory_peak_bytes: peak * PAGE_BYTES,
            seed: self.params.seed,
            policy: self.params.system.name().to_string(),
            device: match &self.params.device {
                DfsDevice::Single(s) => s.kind().to_string(),
                DfsDevice::Raid0 { disks, .. } => format!("raid0x{disks}"),
            },
            workload: match self.params.pattern {
                Pattern::Streams => "dfs-streams".into(),
                Pattern::Random => "dfs-random".into(),
            },
            streams: self.params.streams,
            device_cache_hits: self.cache_hits,
            block_merges: self.cfq.merges(),
            // Summed over the hosts' caches, as `prefetched_bytes` is.
            fetches,
            split_fetches: self.split_fetches,
            events: self.events,
            hit_requests: self.hit_requests,
            // The model has no anticipatory scheduler, block-level cache or trace, and does not
            // track back-to-back commands: those keys are left out of its JSON, not 0.
            antic_waits: None,
            device_sequential_requests: None,
            raid_prefetched_bytes: None,
            raid_wasted_bytes: None,
            raid_cache_peak_bytes: None,
            raid_fetches: None,
            raid_split_fetches: None,
            trace_lba_wrapped: None,
            ..Report::default()
        };
        // `local` reads on the server itself: no network, no server workers to queue for.
        let local = self.params.system == DfsSystem::Local;
        let figures = DfsFigures {
            useless_ratio: (self.app_bytes > 0).then(|| {
                self.device_bytes.saturating_sub(self.app_bytes) as f64 / self.app_bytes as f64
            }),
            system: self.params.system.name().into(),
            queue: (!local).then(|| self.profile.queue.name().into()),
            network_bytes: self.network_bytes,
            alpha,
            rtt_ms: (!local).then(|| rtt.as_secs_f64() * 1e3),
            rb_mib_s: rb.as_mib_s(),
            cfq_switches: self.cfq.switches(),
        };
        DfsReport {
            report: Report {
                dfs: Some(figures.clone()),
                ..report
            },
            figures,
        }
    }
}

#[cfg(test)]
mod tests;
