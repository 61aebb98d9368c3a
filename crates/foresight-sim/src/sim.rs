//! The discrete-event loop that drives a policy, a host and a device model through a workload.
//!
//! Time advances from event to event. The next instant is the earliest of three sources: the event
//! heap (application issues, trace arrivals), the device's next completion, and the policy's timer;
//! ties go to the device, then the policy, then the heap, and heap entries are ordered by
//! `(time, insertion sequence)`, so a run is a pure function of its config and seed.
//!
//! An application read walks the page cache. The policy sees the read first, with the first missing
//! byte, and its fetches are executed before the demand path reads whatever is still missing; so when
//! the policy's window covers the request, no separate demand read is issued (as with Linux's
//! synchronous readahead). Reads become I/Os over runs of missing pages, I/Os become block requests
//! (split at extents and at `host.max_request`), the block queue merges and orders them, and the
//! device serves them. The simulator makes no prefetching decision of its own: it only executes the
//! policy's outputs and the application's demand.
//!
//! Simplification: pages a waiting request found cached, or that arrived for it, are not pinned; if
//! memory is so short that they are evicted before the request's last page arrives, the request
//! still completes as if it had copied them in time.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

use foresight_core::{
    ByteLen, ByteOffset, ByteRange, Duration, FetchId, FileId, Instant, Lba, Rng, StreamId,
    SECTOR_BYTES,
};
use foresight_device::{Completion, DevRequest, Device, Op};
use foresight_policy::{Input, Layout, Output, Policy, PAGE_BYTES};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use thiserror::Error;

use crate::build::build_device;
use crate::config::{ConfigError, Placement, SimConfig, WorkloadKind};
use crate::host::blockq::BlockQueue;
use crate::host::pagecache::{page_key, PageCache, PageState};
use crate::metrics::{BreakdownReport, Report, RequestRecord};
use crate::trace::{read_trace, TraceError, TraceRecord};

/// Why a run could not start.
#[derive(Debug, Error)]
pub enum SimError {
    /// The config is inconsistent with the device or the policy.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The trace could not be read.
    #[error(transparent)]
    Trace(#[from] TraceError),
}

/// What a caller wants besides the report.
#[derive(Default)]
pub struct RunOptions<'a> {
    /// Keep one record per application request.
    pub record_requests: bool,
    /// Called now and then with the fraction of the run done (0 to 1).
    pub progress: Option<&'a mut dyn FnMut(f64)>,
}

/// A finished run.
#[derive(Debug)]
pub struct RunOutput {
    /// The measurements.
    pub report: Report,
    /// Per-request records, if asked for.
    pub requests: Vec<RequestRecord>,
}

const NIL: u32 = u32::MAX;

#[derive(Debug)]
enum IoKind {
    /// Pages of a file, for a fetch of the policy or for demand.
    Pages {
        file: u32,
        first_page: u64,
        pages: u32,
        fetch: Option<FetchId>,
    },
    /// A raw block request of a trace (no page cache).
    Trace { app: u32 },
}

#[derive(Debug)]
struct Io {
    kind: IoKind,
    parts_left: u32,
    waiters: SmallVec<[u32; 2]>,
}

#[derive(Clone, Copy, Debug)]
struct AppReq {
    stream: u32,
    file: u32,
    offset: u64,
    bytes: u64,
    submit: Instant,
    op: Op,
    /// I/Os still to complete before the data is there.
    pending: u32,
    /// First page not yet examined (a request that found memory full resumes here).
    resume_page: u64,
    blocked: bool,
}

#[derive(Clone, Debug)]
struct StreamState {
    file: u32,
    next_offset: u64,
    end_offset: u64,
    requests_left: u64,
    rng: Rng,
    done: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    Issue(u32),
    TraceArrival(u32),
}

/// Runs one simulation.
pub fn run(cfg: &SimConfig, mut opts: RunOptions<'_>) -> Result<RunOutput, SimError> {
    let wall = std::time::Instant::now();
    let mut sim = Sim::new(cfg, opts.record_requests)?;
    sim.run(opts.progress.take());
    let mut out = sim.finish();
    out.report.wall_s = wall.elapsed().as_secs_f64();
    Ok(out)
}

struct Sim {
    cfg: SimConfig,
    now: Instant,
    seq: u64,
    heap: BinaryHeap<Reverse<(Instant, u64, Ev)>>,
    device: Box<dyn Device>,
    device_name: String,
    queue: BlockQueue,
    in_device: FxHashMap<u64, crate::host::blockq::BlockReq>,
    cache: PageCache,
    policy: Box<dyn Policy>,
    policy_wake: Option<Instant>,
    layout: Arc<Layout>,
    ios: Vec<Option<Io>>,
    free_ios: Vec<u32>,
    fetch_parts: FxHashMap<FetchId, u32>,
    apps: Vec<Option<AppReq>>,
    free_apps: Vec<u32>,
    blocked: std::collections::VecDeque<u32>,
    streams: Vec<StreamState>,
    streams_left: u32,
    trace: Vec<TraceRecord>,
    trace_next_closed: usize,
    trace_blocked: Option<u32>,
    trace_left: usize,
    volume_sectors: u64,
    // measurements
    app_requests: u64,
    app_bytes: u64,
    hit_requests: u64,
    device_requests: u64,
    device_bytes: u64,
    device_cache_hits: u64,
    fetches: u64,
    latencies_ns: Vec<u64>,
    stall_ns: u128,
    breakdown_ns: [u128; 5],
    events: u64,
    last_completion: Instant,
    trace_wrapped: u64,
    total_work: f64,
    done_work: f64,
    record: bool,
    records: Vec<RequestRecord>,
    next_record_id: u64,
    comps: Vec<Completion>,
}

impl Sim {
    fn new(cfg: &SimConfig, record: bool) -> Result<Sim, SimError> {
        let device = build_device(&cfg.device)?;
        let capacity = device.capacity();
        let volume_bytes = ByteLen(capacity.0 / (1 << 20) * (1 << 20));
        let striping = crate::build::striping(&cfg.device);
        let w = &cfg.workload;
        let rng = Rng::new(cfg.seed);
        let (layout, streams, trace) = match w.kind {
            WorkloadKind::Streams => {
                let n = w.streams as usize;
                let layout = match w.placement {
                    Placement::Spread => Layout::spread(volume_bytes, striping, n, w.file_size),
                    Placement::Contiguous => {
                        Layout::contiguous(volume_bytes, striping, n, w.file_size, 1 << 20)
                    }
                }
                .map_err(|e| ConfigError::Key {
                    key: "workload.file_size".into(),
                    message: e.to_string(),
                })?;
                let streams = (0..n)
                    .map(|i| StreamState {
                        file: i as u32,
                        next_offset: 0,
                        end_offset: w.file_size.0,
                        requests_left: u64::MAX,
                        rng: rng.fork(i as u64),
                        done: false,
                    })
                    .collect();
                (layout, streams, vec![])
            }
            WorkloadKind::Random => {
                let size = if w.file_size.0 == 0 {
                    volume_bytes
                } else {
                    w.file_size
                };
                let size = ByteLen(size.0 / w.request.0 * w.request.0);
                if size.0 == 0 || size > volume_bytes {
                    return Err(ConfigError::Key {
                        key: "workload.file_size".into(),
                        message: format!(
                            "must be between one request and the volume's {volume_bytes}"
                        ),
                    }
                    .into());
                }
                let layout = Layout::contiguous(volume_bytes, striping, 1, size, 1 << 20)
                    .expect("one file no larger than the volume fits");
                let streams = (0..w.streams as usize)
                    .map(|i| StreamState {
                        file: 0,
                        next_offset: 0,
                        end_offset: size.0,
                        requests_left: w.requests,
                        rng: rng.fork(i as u64),
                        done: false,
                    })
                    .collect();
                (layout, streams, vec![])
            }
            WorkloadKind::Trace => {
                let path = w
                    .trace
                    .as_ref()
                    .expect("validated: trace workloads have a path");
                let trace = read_trace(path, w.format)?;
                (Layout::new(volume_bytes, striping), vec![], trace)
            }
        };
        let layout = Arc::new(layout);
        let policy =
            foresight_policy::build(&cfg.policy, layout.clone()).map_err(|e| ConfigError::Key {
                key: "policy".into(),
                message: e.to_string(),
            })?;
        let max_sectors = (cfg.host.max_request.0 / SECTOR_BYTES) as u32;
        // Each client has at most one request and a few readahead windows in flight, each split
        // into pieces of at most `max_request`; trace arrivals wait while the queue is full (like a
        // submitter blocked on Linux's `nr_requests`). So this bound is never reached.
        let per_stream = 4 * (w.request.0 + 2 * cfg.policy.readahead_max.0).div_ceil(cfg.host.max_request.0) + 8;
        let queue_limit = (1024 + w.streams as u64 * per_stream) as usize;
        let cache_pages = cfg.host.memory.0 / PAGE_BYTES;
        let total_work = match w.kind {
            WorkloadKind::Streams => (w.file_size.0 as f64) * w.streams as f64,
            WorkloadKind::Random => (w.requests as f64) * w.streams as f64,
            WorkloadKind::Trace => trace.len() as f64,
        };
        let streams_left = streams.len() as u32;
        let trace_left = trace.len();
        Ok(Sim {
            device_name: crate::build::describe(&cfg.device),
            cfg: cfg.clone(),
            now: Instant::ZERO,
            seq: 0,
            heap: BinaryHeap::new(),
            device,
            queue: BlockQueue::new(
                cfg.host.scheduler,
                max_sectors,
                cfg.host.read_expire,
                queue_limit,
            ),
            in_device: FxHashMap::default(),
            cache: PageCache::new(cache_pages),
            policy,
            policy_wake: None,
            layout,
            ios: Vec::new(),
            free_ios: Vec::new(),
            fetch_parts: FxHashMap::default(),
            apps: Vec::new(),
            free_apps: Vec::new(),
            blocked: std::collections::VecDeque::new(),
            streams,
            streams_left,
            trace,
            trace_next_closed: 0,
            trace_blocked: None,
            trace_left,
            volume_sectors: capacity.0 / SECTOR_BYTES,
            app_requests: 0,
            app_bytes: 0,
            hit_requests: 0,
            device_requests: 0,
            device_bytes: 0,
            device_cache_hits: 0,
            fetches: 0,
            latencies_ns: Vec::new(),
            stall_ns: 0,
            breakdown_ns: [0; 5],
            events: 0,
            last_completion: Instant::ZERO,
            trace_wrapped: 0,
            total_work: total_work.max(1.0),
            done_work: 0.0,
            record,
            records: Vec::new(),
            next_record_id: 0,
            comps: Vec::with_capacity(64),
        })
    }

    fn schedule(&mut self, at: Instant, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, ev)));
    }

    fn finished(&self) -> bool {
        match self.cfg.workload.kind {
            WorkloadKind::Trace => self.trace_left == 0,
            _ => self.streams_left == 0,
        }
    }

    fn run(&mut self, mut progress: Option<&mut dyn FnMut(f64)>) {
        for s in 0..self.streams.len() as u32 {
            self.schedule(Instant::ZERO, Ev::Issue(s));
        }
        if !self.trace.is_empty() {
            if self.cfg.workload.closed {
                self.trace_next_closed = 1;
                self.schedule(Instant::ZERO, Ev::TraceArrival(0));
            } else {
                // Open loop: every arrival is known up front; scheduling them one at a time keeps
                // the heap small.
                self.schedule(self.trace[0].arrival, Ev::TraceArrival(0));
            }
        }
        let limit = self.cfg.workload.duration.map(|d| Instant::ZERO + d);
        while !self.finished() {
            let t_dev = self.device.next_event();
            let t_pol = self.policy_wake;
            let t_ev = self.heap.peek().map(|Reverse((t, _, _))| *t);
            let Some(next) = [t_dev, t_pol, t_ev].into_iter().flatten().min() else {
                break;
            };
            if let Some(limit) = limit {
                if next > limit {
                    self.now = limit;
                    break;
                }
            }
            assert!(
                next >= self.now,
                "time went backwards: {next} < {}",
                self.now
            );
            self.now = next;
            self.events += 1;
            if t_dev == Some(next) {
                let mut comps = std::mem::take(&mut self.comps);
                self.device.advance(next, &mut comps);
                for c in comps.drain(..) {
                    self.on_device_completion(c);
                }
                self.comps = comps;
            } else if t_pol == Some(next) {
                self.policy.handle_timeout(next);
                self.drain_policy(None);
            } else {
                let Reverse((_, _, ev)) = self.heap.pop().expect("peeked");
                match ev {
                    Ev::Issue(s) => self.issue(s),
                    Ev::TraceArrival(i) => self.trace_arrival(i),
                }
            }
            self.dispatch();
            if self.events.is_multiple_of(8192) {
                if let Some(p) = progress.as_mut() {
                    let frac = match limit {
                        Some(l) => self.now.as_secs_f64() / l.as_secs_f64(),
                        None => self.done_work / self.total_work,
                    };
                    p(frac.clamp(0.0, 1.0));
                }
            }
        }
        assert!(
            self.finished() || limit.is_some_and(|l| self.now >= l),
            "simulation stalled at {} with {} queued, {} at the device, {} streams and {} trace requests left",
            self.now,
            self.queue.len(),
            self.in_device.len(),
            self.streams_left,
            self.trace_left
        );
        if let Some(p) = progress.as_mut() {
            p(1.0);
        }
    }

    // ---- application side -------------------------------------------------------------

    fn issue(&mut self, s: u32) {
        let req = self.cfg.workload.request.0;
        let kind = self.cfg.workload.kind;
        let st = &mut self.streams[s as usize];
        debug_assert!(!st.done);
        let (offset, bytes) = match kind {
            WorkloadKind::Streams => {
                let off = st.next_offset;
                let n = req.min(st.end_offset - off);
                st.next_offset += n;
                (off, n)
            }
            WorkloadKind::Random => {
                st.requests_left -= 1;
                let slots = st.end_offset / req;
                (st.rng.below(slots) * req, req)
            }
            WorkloadKind::Trace => unreachable!("trace streams are driven by arrivals"),
        };
        let app = AppReq {
            stream: s,
            file: st.file,
            offset,
            bytes,
            submit: self.now,
            op: Op::Read,
            pending: 0,
            resume_page: offset / PAGE_BYTES,
            blocked: false,
        };
        let id = self.alloc_app(app);
        self.tell_policy_read(id);
        self.demand(id);
    }

    fn alloc_app(&mut self, app: AppReq) -> u32 {
        match self.free_apps.pop() {
            Some(i) => {
                self.apps[i as usize] = Some(app);
                i
            }
            None => {
                self.apps.push(Some(app));
                self.apps.len() as u32 - 1
            }
        }
    }

    fn app(&self, id: u32) -> &AppReq {
        self.apps[id as usize].as_ref().expect("live app request")
    }

    fn app_mut(&mut self, id: u32) -> &mut AppReq {
        self.apps[id as usize].as_mut().expect("live app request")
    }

    fn tell_policy_read(&mut self, id: u32) {
        let a = *self.app(id);
        let first = a.offset / PAGE_BYTES;
        let last = (a.offset + a.bytes - 1) / PAGE_BYTES;
        let miss = (first..=last)
            .find(|&p| self.cache.state(page_key(a.file, p)).is_none())
            .map(|p| ByteOffset((p * PAGE_BYTES).max(a.offset)));
        self.policy.handle(
            self.now,
            Input::Read {
                stream: StreamId(a.stream),
                file: FileId(a.file),
                range: ByteRange::new(a.offset, a.bytes),
                miss,
            },
        );
        self.drain_policy(Some((a.file, first, last)));
    }

    /// Executes everything the policy has to say. `trigger` is the page span of the read that
    /// prompted it: pages the policy fetches inside it are demand, not prefetch.
    fn drain_policy(&mut self, trigger: Option<(u32, u64, u64)>) {
        let mut done_now: SmallVec<[FetchId; 4]> = SmallVec::new();
        while let Some(out) = self.policy.poll_output() {
            match out {
                Output::Fetch {
                    id, file, range, ..
                } => {
                    self.fetches += 1;
                    let ios = self.fetch_pages(file.0, range, Some(id), trigger);
                    if ios == 0 {
                        done_now.push(id);
                    } else {
                        self.fetch_parts.insert(id, ios);
                    }
                }
                Output::Cancel { .. } | Output::Release { .. } => {}
            }
        }
        for id in done_now {
            self.policy
                .handle(self.now, Input::Fetched { id, ok: true });
            // A policy may answer a completion with more fetches.
            self.drain_policy(None);
        }
        self.policy_wake = self.policy.poll_timeout();
    }

    /// Issues I/Os for the missing pages of `range`; returns how many I/Os it created. Stops early
    /// (truncating a prefetch) when memory is full of in-flight pages.
    fn fetch_pages(
        &mut self,
        file: u32,
        range: ByteRange,
        fetch: Option<FetchId>,
        trigger: Option<(u32, u64, u64)>,
    ) -> u32 {
        if range.is_empty() {
            return 0;
        }
        let first = range.start.0 / PAGE_BYTES;
        let last = (range.end().0 - 1) / PAGE_BYTES;
        let mut ios = 0;
        let mut p = first;
        while p <= last {
            if self.cache.state(page_key(file, p)).is_some() {
                p += 1;
                continue;
            }
            let io = self.alloc_io(Io {
                kind: IoKind::Pages {
                    file,
                    first_page: p,
                    pages: 0,
                    fetch,
                },
                parts_left: 0,
                waiters: SmallVec::new(),
            });
            let start = p;
            while p <= last && self.cache.state(page_key(file, p)).is_none() {
                let prefetched =
                    !matches!(trigger, Some((f, a, b)) if f == file && p >= a && p <= b);
                if !self
                    .cache
                    .try_insert_in_flight(page_key(file, p), io, prefetched)
                {
                    break;
                }
                p += 1;
            }
            if p == start {
                // Memory is full of reads in flight: the rest of this fetch is dropped.
                self.free_io(io);
                break;
            }
            if let Some(Io {
                kind: IoKind::Pages { pages, .. },
                ..
            }) = self.ios[io as usize].as_mut()
            {
                *pages = (p - start) as u32;
            }
            self.submit_pages(io, file, start, p - start);
            ios += 1;
            if p <= last && self.cache.state(page_key(file, p)).is_none() {
                break;
            }
        }
        ios
    }

    fn alloc_io(&mut self, io: Io) -> u32 {
        match self.free_ios.pop() {
            Some(i) => {
                self.ios[i as usize] = Some(io);
                i
            }
            None => {
                self.ios.push(Some(io));
                self.ios.len() as u32 - 1
            }
        }
    }

    fn free_io(&mut self, io: u32) {
        self.ios[io as usize] = None;
        self.free_ios.push(io);
    }

    /// Sends the pages of an I/O to the block queue as one or more block requests.
    fn submit_pages(&mut self, io: u32, file: u32, first_page: u64, pages: u64) {
        let size = self.layout.file_size(FileId(file)).0;
        let start = first_page * PAGE_BYTES;
        let end = ((first_page + pages) * PAGE_BYTES).min(size);
        let mut parts = 0u32;
        let max = self.queue.max_sectors() as u64;
        let now = self.now;
        let queue = &mut self.queue;
        self.layout.for_each_volume_piece(
            FileId(file),
            ByteRange::new(start, end - start),
            |vol, len| {
                let mut lba = vol.0 / SECTOR_BYTES;
                let end_lba = (vol.0 + len.0).div_ceil(SECTOR_BYTES);
                while lba < end_lba {
                    let n = (end_lba - lba).min(max);
                    queue.push(now, Op::Read, lba, n as u32, io);
                    parts += 1;
                    lba += n;
                }
            },
        );
        self.ios[io as usize].as_mut().expect("live io").parts_left = parts;
    }

    /// The demand path: registers the request on in-flight pages, reads missing ones, and
    /// completes it at once if everything is cached.
    fn demand(&mut self, id: u32) {
        let a = *self.app(id);
        let last = (a.offset + a.bytes - 1) / PAGE_BYTES;
        let mut p = a.resume_page;
        let mut pending = 0u32;
        let mut last_io = NIL;
        while p <= last {
            let key = page_key(a.file, p);
            match self.cache.state(key) {
                Some(PageState::Cached) => {
                    self.cache.touch(key);
                    p += 1;
                }
                Some(PageState::InFlight { io }) => {
                    if io != last_io {
                        self.ios[io as usize]
                            .as_mut()
                            .expect("live io")
                            .waiters
                            .push(id);
                        pending += 1;
                        last_io = io;
                    }
                    p += 1;
                }
                None => {
                    let range = ByteRange::new(p * PAGE_BYTES, (last + 1 - p) * PAGE_BYTES);
                    let before = p;
                    self.fetch_pages(a.file, range, None, Some((a.file, before, last)));
                    match self.cache.state(key) {
                        // Issued: loop again to register on the new I/O.
                        Some(_) => {}
                        None => {
                            // Memory is full of reads in flight: wait for one to finish.
                            let app = self.app_mut(id);
                            app.resume_page = p;
                            app.pending += pending;
                            app.blocked = true;
                            self.blocked.push_back(id);
                            return;
                        }
                    }
                }
            }
        }
        let app = self.app_mut(id);
        app.resume_page = last + 1;
        app.pending += pending;
        app.blocked = false;
        if app.pending == 0 {
            self.complete_app(id);
        }
    }

    fn complete_app(&mut self, id: u32) {
        let a = self.apps[id as usize].take().expect("live app request");
        self.free_apps.push(id);
        let latency = self.now - a.submit;
        if a.op == Op::Read && a.file != NIL {
            // The copy to the application touches every page: prefetched pages count as used.
            let first = a.offset / PAGE_BYTES;
            let last = (a.offset + a.bytes - 1) / PAGE_BYTES;
            for p in first..=last {
                self.cache.touch(page_key(a.file, p));
            }
        }
        self.app_requests += 1;
        self.app_bytes += a.bytes;
        if latency == Duration::ZERO {
            self.hit_requests += 1;
        }
        self.latencies_ns.push(latency.as_nanos());
        self.stall_ns += latency.as_nanos() as u128;
        self.last_completion = self.now;
        if self.record {
            self.records.push(RequestRecord {
                id: self.next_record_id,
                stream: a.stream,
                submit_s: a.submit.as_secs_f64(),
                complete_s: self.now.as_secs_f64(),
                offset: a.offset,
                bytes: a.bytes,
                op: if a.op == Op::Read { 'R' } else { 'W' },
            });
            self.next_record_id += 1;
        }
        match self.cfg.workload.kind {
            WorkloadKind::Trace => {
                self.done_work += 1.0;
                self.trace_left -= 1;
                if self.cfg.workload.closed && self.trace_next_closed < self.trace.len() {
                    let i = self.trace_next_closed as u32;
                    self.trace_next_closed += 1;
                    self.schedule(self.now, Ev::TraceArrival(i));
                }
            }
            kind => {
                let think = self.cfg.workload.think;
                let st = &mut self.streams[a.stream as usize];
                let more = match kind {
                    WorkloadKind::Streams => {
                        self.done_work += a.bytes as f64;
                        st.next_offset < st.end_offset
                    }
                    _ => {
                        self.done_work += 1.0;
                        st.requests_left > 0
                    }
                };
                if more {
                    self.schedule(self.now + think, Ev::Issue(a.stream));
                } else {
                    st.done = true;
                    self.streams_left -= 1;
                }
            }
        }
    }

    fn trace_arrival(&mut self, i: u32) {
        let r = self.trace[i as usize];
        let max = self.queue.max_sectors() as u64;
        let pieces = (r.sectors as u64).div_ceil(max) as usize;
        if self.queue.len() + pieces > self.queue.limit() {
            // The queue is full: the submitter blocks until a dispatch makes room; its latency
            // still counts from the trace's arrival time.
            self.trace_blocked = Some(i);
            return;
        }
        if !self.cfg.workload.closed && (i as usize + 1) < self.trace.len() {
            let next = self.trace[i as usize + 1].arrival.max(self.now);
            self.schedule(next, Ev::TraceArrival(i + 1));
        }
        let sectors = (r.sectors as u64).min(self.volume_sectors);
        let mut lba = r.lba.0;
        if lba + sectors > self.volume_sectors {
            lba %= self.volume_sectors - sectors + 1;
            self.trace_wrapped += 1;
        }
        let app = self.alloc_app(AppReq {
            stream: r.device,
            file: NIL,
            offset: lba * SECTOR_BYTES,
            bytes: sectors * SECTOR_BYTES,
            submit: if self.cfg.workload.closed { self.now } else { r.arrival },
            op: r.op,
            pending: 1,
            resume_page: 0,
            blocked: false,
        });
        let io = self.alloc_io(Io {
            kind: IoKind::Trace { app },
            parts_left: 0,
            waiters: SmallVec::new(),
        });
        let mut parts = 0;
        let mut pos = lba;
        while pos < lba + sectors {
            let n = (lba + sectors - pos).min(max);
            self.queue.push(self.now, r.op, pos, n as u32, io);
            parts += 1;
            pos += n;
        }
        self.ios[io as usize].as_mut().expect("live io").parts_left = parts;
    }

    // ---- device side ------------------------------------------------------------------

    fn dispatch(&mut self) {
        while self.device.can_accept() {
            let Some(r) = self.queue.pop(self.now) else {
                break;
            };
            if let Some(i) = self.trace_blocked.take() {
                self.schedule(self.now, Ev::TraceArrival(i));
            }
            let host_wait = self.now - r.arrival;
            self.breakdown_ns[3] += host_wait.as_nanos() as u128;
            self.device.submit(
                self.now,
                DevRequest {
                    id: r.id,
                    op: r.op,
                    lba: Lba(r.lba),
                    sectors: r.sectors,
                },
            );
            self.in_device.insert(r.id, r);
        }
    }

    fn on_device_completion(&mut self, c: Completion) {
        let r = self
            .in_device
            .remove(&c.id)
            .expect("completion for a request the device got");
        self.device_requests += 1;
        self.device_bytes += r.sectors as u64 * SECTOR_BYTES;
        if c.cache_hit {
            self.device_cache_hits += 1;
        }
        let b = c.breakdown;
        // Slots follow `BreakdownReport`: seek, rotate, transfer, queue, overhead.
        for (slot, d) in [b.seek, b.rotate, b.transfer, b.queue, b.overhead]
            .into_iter()
            .enumerate()
        {
            self.breakdown_ns[slot] += d.as_nanos() as u128;
        }
        for &io in &r.tokens {
            let left = {
                let i = self.ios[io as usize].as_mut().expect("live io");
                i.parts_left -= 1;
                i.parts_left
            };
            if left == 0 {
                self.io_done(io);
            }
        }
    }

    fn io_done(&mut self, io: u32) {
        let Io { kind, waiters, .. } = self.ios[io as usize].take().expect("live io");
        self.free_ios.push(io);
        match kind {
            IoKind::Pages {
                file,
                first_page,
                pages,
                fetch,
            } => {
                for p in first_page..first_page + pages as u64 {
                    self.cache.complete(page_key(file, p));
                }
                for w in waiters {
                    let a = self.app_mut(w);
                    a.pending -= 1;
                    if a.pending == 0 && !a.blocked {
                        self.complete_app(w);
                    }
                }
                if let Some(id) = fetch {
                    let left = self.fetch_parts.get_mut(&id).expect("fetch in flight");
                    *left -= 1;
                    if *left == 0 {
                        self.fetch_parts.remove(&id);
                        self.policy
                            .handle(self.now, Input::Fetched { id, ok: true });
                        self.drain_policy(None);
                    }
                }
                // Memory was freed for eviction: requests that found it full try again.
                for _ in 0..self.blocked.len() {
                    let Some(b) = self.blocked.pop_front() else {
                        break;
                    };
                    self.demand(b);
                    if self.app_blocked(b) {
                        break;
                    }
                }
            }
            IoKind::Trace { app } => {
                let a = self.app_mut(app);
                a.pending -= 1;
                if a.pending == 0 {
                    self.complete_app(app);
                }
            }
        }
    }

    fn app_blocked(&self, id: u32) -> bool {
        self.apps[id as usize].as_ref().is_some_and(|a| a.blocked)
    }

    fn finish(mut self) -> RunOutput {
        let elapsed = if self.finished() {
            self.last_completion
        } else {
            self.now
        };
        let elapsed_s = elapsed.as_secs_f64();
        let stats = self.cache.stats();
        let wasted_pages = stats.wasted_pages + self.cache.unused_prefetched_pages();
        let n = self.latencies_ns.len();
        let mean_latency_ms = if n == 0 {
            0.0
        } else {
            self.latencies_ns.iter().map(|&x| x as f64).sum::<f64>() / n as f64 / 1e6
        };
        let p99_latency_ms = if n == 0 {
            0.0
        } else {
            self.latencies_ns.sort_unstable();
            let idx = ((n as f64 * 0.99).ceil() as usize).clamp(1, n) - 1;
            self.latencies_ns[idx] as f64 / 1e6
        };
        let s = |ns: u128| ns as f64 / 1e9;
        let report = Report {
            throughput_mib_s: if elapsed_s > 0.0 {
                self.app_bytes as f64 / (1u64 << 20) as f64 / elapsed_s
            } else {
                0.0
            },
            elapsed_s,
            app_requests: self.app_requests,
            app_bytes: self.app_bytes,
            device_requests: self.device_requests,
            device_bytes: self.device_bytes,
            prefetched_bytes: stats.prefetched_pages * PAGE_BYTES,
            wasted_bytes: wasted_pages * PAGE_BYTES,
            mean_latency_ms,
            p99_latency_ms,
            stall_s: s(self.stall_ns),
            breakdown: BreakdownReport {
                seek_s: s(self.breakdown_ns[0]),
                rotate_s: s(self.breakdown_ns[1]),
                transfer_s: s(self.breakdown_ns[2]),
                queue_s: s(self.breakdown_ns[3]),
                overhead_s: s(self.breakdown_ns[4]),
            },
            wall_s: 0.0,
            memory_peak_bytes: self.cache.peak_pages() * PAGE_BYTES,
            seed: self.cfg.seed,
            policy: self.policy.name().to_string(),
            device: self.device_name.clone(),
            workload: format!("{:?}", self.cfg.workload.kind).to_lowercase(),
            streams: self.cfg.workload.streams,
            fetches: self.fetches,
            hit_requests: self.hit_requests,
            device_cache_hits: self.device_cache_hits,
            block_merges: self.queue.merges(),
            events: self.events,
            trace_lba_wrapped: self.trace_wrapped,
        };
        RunOutput {
            report,
            requests: std::mem::take(&mut self.records),
        }
    }
}
