//! The adaptable prefetching algorithm: one stream's readahead window (paper
//! 004_80004320b985afc3.txt, Algorithm 1 and section 6.2), with the random-read rule of section 5.
//!
//! The window is the run of bytes issued ahead of the reader, `sz` in the paper, ending at
//! `window_end`. While the readahead unit is smaller than `max_ra_sz`, a sequential read that
//! enters the last unit of the window issues one more unit, two or four times larger than the last
//! (Algorithm 1, lines 3-9, the classic on-demand readahead). Once the unit has reached
//! `max_ra_sz`, a read that leaves at most `cur_ra_num` units ahead raises `cur_ra_num` by one, up
//! to `alpha` (`max_ra_num`), and issues whole units until more than `cur_ra_num` units lie ahead
//! (lines 10-20). At most `alpha + 1` units are then in flight, which is what condition 9 asks for.
//!
//! A read that does not continue the stream (the first read, or a jump) starts afresh: it fetches
//! exactly the bytes it asks for and, when it is shorter than the initial unit, rounds the fetch up
//! to one initial unit. So a random read moves at most its own size plus one readahead unit (section
//! 5 explains why every byte beyond that costs random reads: the useless reads of condition 19).
//!
//! The machine is driven by [`ApsStream::on_read`] (the application asked for bytes),
//! [`ApsStream::on_complete`] (a range response finished, with its timings) and drained with
//! [`ApsStream::poll_request`]. With [`ApsConfig::fetch_demand`] set (the HTTP client), the machine
//! also issues the demanded bytes that the window does not cover, in units of `max_ra_sz` with at
//! most `alpha + 1` of them in flight; without it (a page-cache driver), the driver reads misses
//! itself. In [`AlphaMode::Auto`], `alpha` is re-derived from condition 20 (see [`super::alpha`])
//! after every timed response. [`Aps`] puts one such machine per (stream, file) behind the
//! [`Policy`] trait.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use foresight_core::{Bandwidth, ByteLen, ByteRange, Duration, FetchId, FileId, Instant, StreamId};

use super::alpha::{AlphaMode, DeviceFigures, DEFAULT_PEAK_RATIO};
use super::rtt::{RateEstimator, RttEstimator};
use crate::{FetchIds, Input, Layout, Output, Policy, PolicyError, Tier};

/// The most readahead units one stream may keep in flight, whatever condition 20 says.
pub const ALPHA_LIMIT: u32 = 1024;

/// The settings of one adaptive stream.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ApsConfig {
    /// `max_ra_sz`: the readahead unit once the window has ramped up, and the size demanded bytes
    /// are split into.
    pub max_readahead: ByteLen,
    /// The first unit after a fresh read; also the "one readahead unit" a random read may add.
    /// At most `max_readahead`.
    pub initial_readahead: ByteLen,
    /// How `alpha` is chosen.
    pub alpha: AlphaMode,
    /// The cap on `alpha` in [`AlphaMode::Auto`]; bounds the window ahead of the reader to
    /// `(max_alpha + 1) * max_readahead`. Bytes in flight are that plus the read in progress,
    /// which Algorithm 1 assumes the window covers; a read that outruns it demands what it lacks
    /// in units of `max_readahead`, at most `alpha + 1` at a time.
    pub max_alpha: u32,
    /// `p` applied to a measured path rate when the server publishes no device figures.
    pub peak_ratio: f64,
    /// The server device's figures, when known before the first response.
    pub device: Option<DeviceFigures>,
    /// A round trip known before the first response (the simulator knows its link).
    pub rtt_hint: Option<Duration>,
    /// Whether the machine also fetches the demanded bytes the window lacks (true for the HTTP
    /// client, false where the driver reads misses itself).
    pub fetch_demand: bool,
}

impl Default for ApsConfig {
    fn default() -> Self {
        ApsConfig {
            max_readahead: ByteLen::mib(1),
            initial_readahead: ByteLen::kib(128),
            alpha: AlphaMode::Auto,
            max_alpha: 64,
            peak_ratio: DEFAULT_PEAK_RATIO,
            device: None,
            rtt_hint: None,
            fetch_demand: true,
        }
    }
}

impl ApsConfig {
    /// Checks the bounds; the error names the offending key.
    pub fn validate(&self) -> Result<(), PolicyError> {
        let bad =
            |key: &'static str, message: String| Err(PolicyError::BadSetting { key, message });
        if self.max_readahead.0 == 0 {
            return bad(
                "max_readahead",
                "must be at least one byte, e.g. 1MiB".into(),
            );
        }
        if self.initial_readahead.0 == 0 || self.initial_readahead > self.max_readahead {
            return bad(
                "initial_readahead",
                format!(
                    "must be between 1 byte and max_readahead ({}), got {}",
                    self.max_readahead, self.initial_readahead
                ),
            );
        }
        if !(1..=ALPHA_LIMIT).contains(&self.max_alpha) {
            return bad(
                "max_alpha",
                format!("must be 1..={ALPHA_LIMIT}, got {}", self.max_alpha),
            );
        }
        if let AlphaMode::Fixed(n) = self.alpha {
            if !(1..=ALPHA_LIMIT).contains(&n) {
                return bad(
                    "alpha",
                    format!("must be `auto` or 1..={ALPHA_LIMIT}, got {n}"),
                );
            }
        }
        if !(self.peak_ratio.is_finite() && self.peak_ratio >= 1.0) {
            return bad(
                "peak_ratio",
                format!("must be a number >= 1, got {}", self.peak_ratio),
            );
        }
        Ok(())
    }
}

/// Why a range is fetched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FetchKind {
    /// The application asked for these bytes.
    Demand,
    /// Bytes ahead of the reader.
    Readahead,
}

/// A range the driver should fetch; it answers with [`ApsStream::on_complete`] and the same id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RangeRequest {
    /// Identity of this request within its stream.
    pub id: FetchId,
    /// The bytes, clipped to the file.
    pub range: ByteRange,
    /// Demand or readahead.
    pub kind: FetchKind,
}

/// When a range response travelled, as the client saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExchangeTiming {
    /// When the request left the client.
    pub sent: Instant,
    /// When the first byte of the reply arrived (the status line, or the first body byte).
    pub first_byte: Instant,
    /// When the last body byte arrived.
    pub last_byte: Instant,
    /// Body bytes received.
    pub body: ByteLen,
    /// The processing time the server reported for this request, if it did (paper 004, section
    /// 6.2's `T[Proc(cs)_s]`).
    pub server_proc: Option<Duration>,
}

/// The readahead state of one sequential stream over one file. See the module documentation.
#[derive(Clone, Debug)]
pub struct ApsStream {
    cfg: ApsConfig,
    file_bytes: u64,
    alpha: u32,
    started: bool,
    /// `start_off`: where a read continuing the stream begins.
    next_read: u64,
    /// `async_start + async_sz`: one past the last byte issued ahead.
    window_end: u64,
    /// `async_sz`: the current unit.
    unit_bytes: u64,
    /// `cur_ra_num`.
    cur_ra_num: u32,
    out: VecDeque<RangeRequest>,
    demand_waiting: VecDeque<ByteRange>,
    demand_in_flight: u32,
    in_flight: BTreeMap<FetchId, FetchKind>,
    ids: FetchIds,
    rtt: RttEstimator,
    rate: RateEstimator,
    device: Option<DeviceFigures>,
    requests: u64,
    issued_bytes: u64,
}

/// Algorithm 1, line 6 (`get_next_ra_size`): the next unit during ramp-up, four times the last
/// while it is small and twice it after, never above `max_bytes` (paper 004, section 6.2: the
/// size is multiplied "by either 2 or 4", as Linux's on-demand readahead does).
pub fn next_unit_bytes(unit_bytes: u64, max_bytes: u64) -> u64 {
    let grown = if unit_bytes < max_bytes / 16 {
        unit_bytes.saturating_mul(4)
    } else {
        unit_bytes.saturating_mul(2)
    };
    grown.clamp(1, max_bytes)
}

impl ApsStream {
    /// A stream over a file of `file_len` bytes.
    pub fn new(cfg: ApsConfig, file_len: ByteLen) -> Result<ApsStream, PolicyError> {
        cfg.validate()?;
        let mut s = ApsStream {
            cfg,
            file_bytes: file_len.0,
            alpha: 1,
            started: false,
            next_read: 0,
            window_end: 0,
            unit_bytes: cfg.initial_readahead.0,
            cur_ra_num: 1,
            out: VecDeque::new(),
            demand_waiting: VecDeque::new(),
            demand_in_flight: 0,
            in_flight: BTreeMap::new(),
            ids: FetchIds::default(),
            rtt: RttEstimator::new(),
            rate: RateEstimator::default(),
            device: cfg.device,
            requests: 0,
            issued_bytes: 0,
        };
        s.update_alpha();
        Ok(s)
    }

    /// The application asked for `range`. Ranges past the end of the file are clipped; an empty
    /// range changes nothing.
    pub fn on_read(&mut self, range: ByteRange) {
        let start = range.start.0.min(self.file_bytes);
        let end = range.end().0.min(self.file_bytes);
        if end <= start {
            return;
        }
        let max = self.cfg.max_readahead.0;
        if self.started && start == self.next_read {
            if end > self.window_end {
                // The reader outran the window: the shortfall is demand.
                self.demand(self.window_end.max(start), end);
                self.window_end = end;
            }
            // Algorithm 1, lines 1-2: the read consumes the front of the window.
            self.next_read = end;
            let ahead = self.window_end - self.next_read;
            if self.unit_bytes < max {
                // Lines 3-9: ramp-up, one growing unit once the reader is inside the last one.
                if ahead < self.unit_bytes {
                    self.unit_bytes = next_unit_bytes(self.unit_bytes, max);
                    self.issue_unit();
                }
            } else if ahead <= self.unit_bytes * u64::from(self.cur_ra_num) {
                // Lines 11-19: one more unit in flight, up to alpha, then top the window up.
                if self.cur_ra_num < self.alpha {
                    self.cur_ra_num += 1;
                }
                while self.window_end < self.file_bytes
                    && self.window_end - self.next_read
                        <= self.unit_bytes * u64::from(self.cur_ra_num)
                {
                    self.issue_unit();
                }
            }
        } else {
            // A fresh read: the random-read rule (module documentation).
            self.started = true;
            self.demand_waiting.clear();
            self.unit_bytes = self.cfg.initial_readahead.0;
            self.cur_ra_num = 1;
            self.demand(start, end);
            self.next_read = end;
            self.window_end = end;
            let rounded_end = start.saturating_add(self.unit_bytes).min(self.file_bytes);
            if rounded_end > end {
                self.push(ByteRange::new(end, rounded_end - end), FetchKind::Readahead);
                self.window_end = rounded_end;
            }
        }
        self.release_demand();
    }

    /// The next range to fetch, if any.
    pub fn poll_request(&mut self) -> Option<RangeRequest> {
        self.out.pop_front()
    }

    /// A request finished (successfully or not; a failed one is the driver's to retry or report).
    /// `timing`, when given, feeds the round-trip and rate estimators, and in
    /// [`AlphaMode::Auto`] `alpha` is re-derived. Unknown ids are ignored.
    pub fn on_complete(&mut self, id: FetchId, timing: Option<ExchangeTiming>) {
        if let Some(kind) = self.in_flight.remove(&id) {
            if kind == FetchKind::Demand {
                self.demand_in_flight = self.demand_in_flight.saturating_sub(1);
            }
        }
        if let Some(t) = timing {
            self.observe_exchange(t);
        }
        self.release_demand();
    }

    /// Feeds the estimators with one exchange that did not come from this stream's requests (the
    /// client's first `HEAD`, which plays the paper's create-stream request).
    pub fn observe_exchange(&mut self, t: ExchangeTiming) {
        let proc = t.server_proc.unwrap_or(Duration::ZERO);
        self.rtt.sample_exchange(t.sent, t.first_byte, proc);
        // The body is timed from the earliest moment its first byte could have arrived, not from
        // when the head was read, by which time much of it may have been waiting (see
        // `RateEstimator`). The smallest round trip includes this exchange's, so the start is
        // never after the head was read.
        let earliest = t
            .sent
            .saturating_add(proc)
            .saturating_add(self.rtt.min().unwrap_or(Duration::ZERO))
            .min(t.first_byte);
        self.rate.sample(t.body, earliest, t.last_byte);
        self.update_alpha();
    }

    /// Adds one round-trip sample measured elsewhere.
    pub fn observe_rtt(&mut self, rtt: Duration) {
        self.rtt.sample(rtt);
        self.update_alpha();
    }

    /// Sets the server device's figures (from `/.well-known/foresight`).
    pub fn set_device(&mut self, device: DeviceFigures) {
        self.device = Some(device);
        self.update_alpha();
    }

    /// The current `alpha` (`max_ra_num`).
    pub fn alpha(&self) -> u32 {
        self.alpha
    }

    /// The current `cur_ra_num`.
    pub fn cur_ra_num(&self) -> u32 {
        self.cur_ra_num
    }

    /// The current readahead unit.
    pub fn unit(&self) -> ByteLen {
        ByteLen(self.unit_bytes)
    }

    /// The round trip condition 20 uses: the smallest sample (queueing behind other responses
    /// would otherwise raise `alpha`, which queues more), or the configured hint.
    pub fn rtt(&self) -> Option<Duration> {
        self.rtt.min().or(self.cfg.rtt_hint)
    }

    /// The smoothed round trip, for reports.
    pub fn rtt_smoothed(&self) -> Option<Duration> {
        self.rtt.smoothed().or(self.cfg.rtt_hint)
    }

    /// The measured delivery rate of the path, once bodies have been timed long enough (see
    /// [`RateEstimator`]); `None` before, and on a path too fast for its bodies to be timed.
    pub fn path_rate(&self) -> Option<Bandwidth> {
        self.rate.rate()
    }

    /// Requests issued so far.
    pub fn requests(&self) -> u64 {
        self.requests
    }

    /// Bytes requested so far.
    pub fn issued_bytes(&self) -> ByteLen {
        ByteLen(self.issued_bytes)
    }

    /// Requests issued and not yet completed.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Bytes issued ahead of the reader (the paper's `sz`).
    pub fn window_ahead(&self) -> ByteLen {
        ByteLen(self.window_end.saturating_sub(self.next_read))
    }

    fn update_alpha(&mut self) {
        self.alpha = match self.cfg.alpha {
            AlphaMode::Fixed(n) => n,
            AlphaMode::Auto => self.auto_alpha().unwrap_or(self.alpha),
        };
        self.cur_ra_num = self.cur_ra_num.min(self.alpha);
    }

    /// Condition 20 with what is known: the device figures lowered to the path rate (see
    /// [`DeviceFigures::bottleneck`]), or the path rate alone with the configured `p`. The
    /// round trip stands for `T[SendAndReq]`, which in the paper includes receiving one unit, so
    /// the unit's transfer time at the path rate is added to it.
    fn auto_alpha(&self) -> Option<u32> {
        let rtt = self.rtt()?;
        let rate = self.rate.rate();
        let figures = match (self.device, rate) {
            (Some(d), r) => d.bottleneck(r),
            (None, Some(r)) => {
                DeviceFigures::new(self.cfg.max_readahead, r, self.cfg.peak_ratio).ok()?
            }
            (None, None) => return None,
        };
        let unit = self.cfg.max_readahead;
        let transfer = rate.map_or(Duration::ZERO, |r| r.time_for(unit));
        Some(figures.alpha_in_units(rtt + transfer, unit, self.cfg.max_alpha))
    }

    fn issue_unit(&mut self) {
        let start = self.window_end;
        let end = start.saturating_add(self.unit_bytes).min(self.file_bytes);
        if end > start {
            self.push(ByteRange::new(start, end - start), FetchKind::Readahead);
            self.window_end = end;
        }
    }

    fn demand(&mut self, start: u64, end: u64) {
        if !self.cfg.fetch_demand {
            return;
        }
        let chunk = self.cfg.max_readahead.0;
        let mut s = start;
        while s < end {
            let e = s.saturating_add(chunk).min(end);
            self.demand_waiting.push_back(ByteRange::new(s, e - s));
            s = e;
        }
        // Demand goes out ahead of any readahead this read triggers.
        self.release_demand();
    }

    fn release_demand(&mut self) {
        while self.demand_in_flight <= self.alpha {
            let Some(range) = self.demand_waiting.pop_front() else {
                break;
            };
            self.demand_in_flight += 1;
            self.push(range, FetchKind::Demand);
        }
    }

    fn push(&mut self, range: ByteRange, kind: FetchKind) {
        let id = self.ids.next_id();
        self.requests += 1;
        self.issued_bytes += range.len.0;
        self.in_flight.insert(id, kind);
        self.out.push_back(RangeRequest { id, range, kind });
    }
}

/// [`ApsStream`]s behind the [`Policy`] trait, one per (stream, file), for page-cache drivers: the
/// driver reads misses itself ([`ApsConfig::fetch_demand`] is forced off) and every readahead
/// unit becomes an [`Output::Fetch`] into memory.
#[derive(Debug)]
pub struct Aps {
    cfg: ApsConfig,
    layout: Arc<Layout>,
    streams: BTreeMap<(StreamId, FileId), ApsStream>,
    fetches: BTreeMap<FetchId, ((StreamId, FileId), FetchId)>,
    ids: FetchIds,
    out: VecDeque<Output>,
}

impl Aps {
    /// An APS policy over `layout` with the given per-stream settings.
    pub fn new(cfg: ApsConfig, layout: Arc<Layout>) -> Result<Aps, PolicyError> {
        let cfg = ApsConfig {
            fetch_demand: false,
            ..cfg
        };
        cfg.validate()?;
        Ok(Aps {
            cfg,
            layout,
            streams: BTreeMap::new(),
            fetches: BTreeMap::new(),
            ids: FetchIds::default(),
            out: VecDeque::new(),
        })
    }

    /// The state of one stream over one file, if it has read.
    pub fn stream(&self, stream: StreamId, file: FileId) -> Option<&ApsStream> {
        self.streams.get(&(stream, file))
    }

    /// Feeds a round-trip sample to every stream (a driver that knows its link).
    pub fn observe_rtt(&mut self, rtt: Duration) {
        for s in self.streams.values_mut() {
            s.observe_rtt(rtt);
        }
        self.cfg.rtt_hint = Some(rtt);
    }

    fn drain(&mut self, key: (StreamId, FileId)) {
        let Some(s) = self.streams.get_mut(&key) else {
            return;
        };
        while let Some(req) = s.poll_request() {
            let id = self.ids.next_id();
            self.fetches.insert(id, (key, req.id));
            self.out.push_back(Output::Fetch {
                id,
                file: key.1,
                range: req.range,
                into: Tier::Memory,
            });
        }
    }
}

impl Policy for Aps {
    fn name(&self) -> &str {
        "aps"
    }

    fn handle(&mut self, now: Instant, input: Input) {
        let _ = now;
        match input {
            Input::Read {
                stream,
                file,
                range,
                ..
            } => {
                let key = (stream, file);
                if !self.streams.contains_key(&key) {
                    let len = self.layout.file_size(file);
                    // The settings were validated in `new`, so building cannot fail.
                    let Ok(s) = ApsStream::new(self.cfg, len) else {
                        return;
                    };
                    self.streams.insert(key, s);
                }
                if let Some(s) = self.streams.get_mut(&key) {
                    s.on_read(range);
                }
                self.drain(key);
            }
            Input::Fetched { id, .. } => {
                if let Some((key, local)) = self.fetches.remove(&id) {
                    if let Some(s) = self.streams.get_mut(&key) {
                        s.on_complete(local, None);
                    }
                    self.drain(key);
                }
            }
            Input::StreamClosed { stream } => {
                // The stream's windows and the fetches it waits for go: a `Fetched` for one of
                // them is then ignored, and a new stream given the id starts afresh.
                let keys: Vec<(StreamId, FileId)> = self
                    .streams
                    .range((stream, FileId(0))..=(stream, FileId(u32::MAX)))
                    .map(|(&k, _)| k)
                    .collect();
                for k in keys {
                    self.streams.remove(&k);
                }
                self.fetches.retain(|_, (key, _)| key.0 != stream);
            }
            // The windows and fetches kept for a file belong to its streams, which have closed
            // by then (`StreamClosed` comes first).
            Input::Hint { .. } | Input::MemoryPressure { .. } | Input::FileClosed { .. } => {}
        }
    }

    fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    fn add_file(&mut self, id: FileId, file: crate::layout::FileLayout) {
        Arc::make_mut(&mut self.layout).put_file(id, file);
    }
}

#[cfg(test)]
mod tests;
