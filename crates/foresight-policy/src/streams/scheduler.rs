//! The stream scheduler: a dispatch set of `D` streams issuing `R`-byte reads, `N` per turn, and
//! a buffered set holding what was read until it is consumed (paper 001_9c47c4c84914efc3.txt,
//! sections 4.2 and 4.3).
//!
//! The scheduler runs at the block level, in front of the host's block queue: it sees every request
//! that reaches the volume. Requests the classifier has not tied to a stream go straight to the
//! disk. A request that continues a known stream is served from that stream's buffers when the data
//! is there; when it is not, the request waits in the stream's queue (`Output::Defer`) and the stream
//! joins the waiting line. At most `D` streams are dispatched at a time; each issues one `R`-byte read
//! at a time at its own position, independent of the client's request size, and leaves the dispatch
//! set after `N` reads, round-robin. A stream that leaves keeps its data in the buffered set until the
//! client has read it, or until `timeout` passes, when the buffers are released and the stream is
//! forgotten (garbage collection). Reads are issued only while the bytes held and in flight fit in
//! `M`, and the configuration is refused unless `M >= D * R * N` (section 4.3).
//!
//! Collections fall on a grid of instants `timeout` apart (at least [`GC_PERIOD_MIN`]), started by
//! the first request; but the scheduler asks for its timer only at the first grid instant at which
//! something will have gone stale (an idle stream `timeout` after its client's last request, a
//! classifier region [`REGION_IDLE`] after its last request), found from indexes of idle streams
//! and regions by last access. A collection at any other grid instant would find nothing to drop,
//! so skipping it changes no decision, and clients that think for an hour do not wake the driver
//! every millisecond.
//!
//! What fills the dispatch set is [`DispatchLimit`]: the paper's count of `D` streams, or, for a
//! driver whose streams end at file ends, the bytes of their reads in flight, at most `D*R`. The
//! paper sizes the dispatch set for the requests it keeps outstanding at the disk (section 4.2:
//! their size and number follow from the dispatch set), `D` reads of `R` bytes; a stream whose
//! read is cut short by the end of its data keeps less than `R` in flight, and `D` such streams
//! keep the disk less busy than the set was sized for. Counted in bytes, a short read leaves
//! room for another stream. Every stream's reads in a turn are `R` bytes but for the last, which
//! ends its turn, so a turn fetches at most `N` times what the stream has in flight, and the
//! turns under way together fetch at most `D*R*N <= M`.
//!
//! Which waiting stream goes next is [`TurnOrder`]: the paper's round-robin in the order streams
//! joined the line, or, as section 4.2 suggests, by position on the disk, one sweep over the waiting
//! streams' next reads at a time. Both give every waiting stream one turn per cycle; the second keeps
//! the disk from seeking across the surface between turns when streams do not join in disk order.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use foresight_core::{ByteLen, ByteRange, Duration, FetchId, Instant};

use super::classify::Classifier;
use crate::layout::VOLUME_FILE;
use crate::{FetchIds, Input, Layout, Output, PolicyError, Tier, PAGE_BYTES};

/// How long a classifier region survives without a request. Much longer than the buffer timeout:
/// with a thousand streams behind one disk a client's next request can come seconds later, and a
/// region forgotten in between would never become a stream. `classify::MAX_REGIONS` bounds the
/// memory regardless.
pub const REGION_IDLE: Duration = Duration::from_secs(60);

/// The shortest time between two garbage collections, whatever the timeout: each collection is a
/// wake-up of the driver, so a timeout of nanoseconds with streams going idle every few
/// nanoseconds would wake it that often. Buffers and streams idle for `timeout` go at the first
/// collection after it, so with a timeout below this they live up to this long instead.
pub const GC_PERIOD_MIN: Duration = Duration::from_millis(1);

/// The order in which waiting streams enter the dispatch set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TurnOrder {
    /// Round-robin in the order the streams joined the waiting line (paper 001, section 4.2).
    #[default]
    Arrival,
    /// Round-robin by the volume offset of each stream's next read: the waiting stream at or after
    /// the last dispatched one's read, wrapping to the lowest (a C-LOOK sweep over streams; section
    /// 4.2 names placing streams by offset as a possible policy).
    Position,
}

impl TurnOrder {
    /// Every order's name, as a config spells it.
    pub const NAMES: &'static [&'static str] = &["arrival", "position"];
}

/// What bounds the dispatch set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DispatchLimit {
    /// At most `D` streams dispatched at once (paper 001, section 4.2).
    #[default]
    Streams,
    /// Streams are dispatched while their reads in flight, each counted in whole 4 KiB pages,
    /// total at most `D*R` bytes: the same as [`DispatchLimit::Streams`] while every read is `R`
    /// bytes, and more streams when reads stop short at the end of their data (a scheduler over
    /// small files). At most `D*R / 4 KiB` streams, each with a read of at least a page.
    BytesInFlight,
}

/// The waiting line: streams that want a turn, in [`TurnOrder`].
#[derive(Debug)]
struct WaitLine {
    order: TurnOrder,
    fifo: VecDeque<u32>,
    /// `(position, stream)` for [`TurnOrder::Position`].
    by_position: BTreeSet<(u64, u32)>,
    /// Where the sweep stands: the position of the last stream taken from the line.
    sweep_from: u64,
}

impl WaitLine {
    fn new(order: TurnOrder) -> WaitLine {
        WaitLine {
            order,
            fifo: VecDeque::new(),
            by_position: BTreeSet::new(),
            sweep_from: 0,
        }
    }

    fn push(&mut self, id: u32, position: u64) {
        match self.order {
            TurnOrder::Arrival => self.fifo.push_back(id),
            TurnOrder::Position => {
                self.by_position.insert((position, id));
            }
        }
    }

    /// Puts back a stream that was taken but could not start its turn: it goes first next time.
    fn put_back(&mut self, id: u32, position: u64) {
        match self.order {
            TurnOrder::Arrival => self.fifo.push_front(id),
            TurnOrder::Position => {
                // `sweep_from` still equals `position`, so it is found first again.
                debug_assert_eq!(self.sweep_from, position);
                self.by_position.insert((position, id));
            }
        }
    }

    /// Takes a waiting stream out of the line, wherever it stands (at `position`).
    fn remove(&mut self, id: u32, position: u64) {
        match self.order {
            TurnOrder::Arrival => self.fifo.retain(|&w| w != id),
            TurnOrder::Position => {
                self.by_position.remove(&(position, id));
            }
        }
    }

    /// A waiting stream's next read moved from `from` to `to`.
    fn moved(&mut self, id: u32, from: u64, to: u64) {
        if self.order == TurnOrder::Position && self.by_position.remove(&(from, id)) {
            self.by_position.insert((to, id));
        }
    }

    fn pop(&mut self) -> Option<u32> {
        match self.order {
            TurnOrder::Arrival => self.fifo.pop_front(),
            TurnOrder::Position => {
                let next = self
                    .by_position
                    .range((self.sweep_from, 0)..)
                    .next()
                    .or_else(|| self.by_position.first())
                    .copied()?;
                self.by_position.remove(&next);
                self.sweep_from = next.0;
                Some(next.1)
            }
        }
    }
}

/// Settings of the stream scheduler, as plain data with units in the names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamsConfig {
    /// `D`: streams dispatched at once; `None` derives `M / (R * N)`.
    pub dispatch: Option<u32>,
    /// `R`: bytes per disk read.
    pub readahead_bytes: u64,
    /// `N`: reads a stream issues per turn in the dispatch set.
    pub per_turn: u32,
    /// `M`: bytes of buffers, held and in flight.
    pub memory_bytes: u64,
    /// How long buffered data and idle streams are kept.
    pub timeout: Duration,
    /// Classifier region half-width, in 4 KiB blocks.
    pub offset_blocks: u64,
    /// Distinct requests in a region that make a stream.
    pub threshold: u32,
    /// Which waiting stream gets the next turn.
    pub turn_order: TurnOrder,
    /// What bounds the dispatch set: `D` streams, or `D*R` bytes of reads in flight.
    pub dispatch_limit: DispatchLimit,
}

impl Default for StreamsConfig {
    fn default() -> Self {
        StreamsConfig {
            dispatch: None,
            readahead_bytes: 8 << 20,
            per_turn: 1,
            memory_bytes: 16 << 20,
            timeout: Duration::from_secs(2),
            offset_blocks: 32,
            threshold: 2,
            turn_order: TurnOrder::Arrival,
            dispatch_limit: DispatchLimit::Streams,
        }
    }
}

impl StreamsConfig {
    /// Checks the bounds and returns `D`: the given one, or `M / (R * N)`.
    pub fn dispatch_set(&self) -> Result<u32, PolicyError> {
        let bad =
            |key: &'static str, message: String| Err(PolicyError::BadSetting { key, message });
        if self.readahead_bytes == 0 || !self.readahead_bytes.is_multiple_of(PAGE_BYTES) {
            return bad(
                "readahead",
                format!(
                    "R = {} must be a positive multiple of 4 KiB",
                    self.readahead_bytes
                ),
            );
        }
        if self.per_turn == 0 {
            return bad("per_turn", "N must be at least 1".into());
        }
        if self.threshold == 0 {
            return bad("threshold", "must be at least 1".into());
        }
        if !(1..=super::classify::MAX_OFFSET_BLOCKS).contains(&self.offset_blocks) {
            return bad(
                "offset",
                format!(
                    "must be between 1 and {} blocks",
                    super::classify::MAX_OFFSET_BLOCKS
                ),
            );
        }
        if self.timeout == Duration::ZERO {
            // Garbage collection runs every `timeout`; at zero it would run again at the same
            // instant forever.
            return bad("timeout", "must be longer than zero".into());
        }
        // In u128: D, R and N may each be large enough for their product to pass 2^64.
        let turn_bytes = self.readahead_bytes as u128 * self.per_turn as u128;
        let d = match self.dispatch {
            Some(d) => d as u128,
            None => self.memory_bytes as u128 / turn_bytes,
        };
        if d == 0 {
            // D derived from M: "M >= D*R*N" would hold with D = 0, so say what is short.
            return bad(
                "memory",
                format!(
                    "M = {} holds not one turn of R*N = {}, which leaves the dispatch set empty \
                     (D = M / (R*N) = 0); raise policy.memory to at least {}, or lower \
                     policy.readahead or policy.per_turn",
                    size_text(self.memory_bytes.into()),
                    size_text(turn_bytes),
                    size_text(turn_bytes)
                ),
            );
        }
        if (self.memory_bytes as u128) < d * turn_bytes {
            return bad(
                "memory",
                format!(
                    "M >= D*R*N is required (paper 001, section 4.3) but M = {}, D = {}, R = {}, \
                     N = {}; raise policy.memory to at least D*R*N = {} or lower \
                     policy.dispatch, policy.readahead or policy.per_turn",
                    size_text(self.memory_bytes.into()),
                    d,
                    size_text(self.readahead_bytes.into()),
                    self.per_turn,
                    size_text(d * turn_bytes)
                ),
            );
        }
        Ok(d.min(u32::MAX as u128) as u32)
    }
}

/// A byte count for a message, as a size one can write back (`8MiB`, `1000B`); a product of the
/// settings past 2^64 bytes, which no size holds, as a plain count.
fn size_text(bytes: u128) -> String {
    match u64::try_from(bytes) {
        Ok(b) => ByteLen(b).to_string(),
        Err(_) => format!("{bytes} bytes"),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Not dispatched and not waiting (buffered data, or nothing).
    Idle,
    /// In line for the dispatch set.
    Waiting,
    /// In the dispatch set.
    Dispatched,
}

#[derive(Clone, Copy, Debug)]
struct Stream {
    /// The next byte the client is expected to read.
    consumed: u64,
    /// End of what has been fetched or is being fetched.
    fetched_end: u64,
    inflight: Option<FetchId>,
    reads_this_turn: u32,
    state: State,
    last_access: Instant,
    /// Buffers below this byte have been handed back to the cache.
    released_to: u64,
    /// End of the latest request deferred to this stream: while it lies past `fetched_end`, the
    /// client waits on a fetch the stream still owes it, so its turn may not end in idleness.
    deferred_end: u64,
    /// Where the stream's data ends: the end of the volume, or, for the scheduler over files,
    /// the end of the stream's file. Reads stop there, and a turn with nothing left to read
    /// before it ends, so the dispatch slot goes to the next stream.
    data_end: u64,
    /// While dispatched, the bytes of its read in flight in whole pages (`R` under
    /// [`DispatchLimit::Streams`]): its share of `dispatched_bytes`.
    dispatched_bytes: u64,
}

/// The stream scheduler. See the module documentation.
#[derive(Debug)]
pub struct StreamScheduler {
    cfg: StreamsConfig,
    dispatch_max: u32,
    volume_bytes: u64,
    classifier: Classifier,
    streams: BTreeMap<u32, Stream>,
    /// Streams by the next byte their client will read.
    by_position: BTreeMap<u64, u32>,
    by_fetch: BTreeMap<FetchId, u32>,
    waiting: WaitLine,
    dispatched: u32,
    /// The dispatched streams' shares (`Stream::dispatched_bytes`): at most `D*R`.
    dispatched_bytes: u64,
    held_bytes: u64,
    /// The bytes reads may hold now: M, or less while memory is short (`Input::MemoryPressure`).
    admit_bytes: u64,
    next_stream: u32,
    /// A grid instant of garbage collection (the grid runs every `gc_period` from it), while
    /// streams or regions live.
    next_gc: Option<Instant>,
    /// `(last_access, id)` of the idle streams, which are the ones a collection may drop.
    idle: BTreeSet<(Instant, u32)>,
    /// The first grid instant at which a collection will find something stale.
    wake: Option<Instant>,
    ids: FetchIds,
    out: VecDeque<Output>,
}

impl StreamScheduler {
    /// A scheduler over the volume of `layout`.
    pub fn new(cfg: StreamsConfig, layout: Arc<Layout>) -> Result<StreamScheduler, PolicyError> {
        let dispatch_max = cfg.dispatch_set()?;
        Ok(StreamScheduler {
            dispatch_max,
            volume_bytes: layout.volume_bytes().0,
            classifier: Classifier::new(cfg.offset_blocks, cfg.threshold),
            cfg,
            streams: BTreeMap::new(),
            by_position: BTreeMap::new(),
            by_fetch: BTreeMap::new(),
            waiting: WaitLine::new(cfg.turn_order),
            dispatched: 0,
            dispatched_bytes: 0,
            held_bytes: 0,
            admit_bytes: cfg.memory_bytes,
            next_stream: 0,
            next_gc: None,
            idle: BTreeSet::new(),
            wake: None,
            ids: FetchIds::default(),
            out: VecDeque::new(),
        })
    }

    /// `D`, the size of the dispatch set.
    pub fn dispatch_max(&self) -> u32 {
        self.dispatch_max
    }

    /// Streams known now (dispatched, waiting or buffered).
    pub fn stream_count(&self) -> usize {
        self.streams.len()
    }

    /// Bytes fetched or in flight and not yet read by their clients: never above `M`.
    pub fn held_bytes(&self) -> u64 {
        self.held_bytes
    }

    fn held_of(s: &Stream) -> u64 {
        s.fetched_end.saturating_sub(s.consumed)
    }

    fn set_consumed(&mut self, id: u32, to: u64) {
        let s = self.streams.get_mut(&id).expect("live stream");
        let before = Self::held_of(s);
        self.by_position.remove(&s.consumed);
        s.consumed = to;
        let after = Self::held_of(s);
        self.held_bytes = self.held_bytes - before + after;
        self.by_position.insert(to, id);
    }

    /// A read of `range` whose data, if it starts a stream, ends at `data_end` (the volume's
    /// end, or the end of the file whose slice `range` lies in).
    fn on_read(&mut self, now: Instant, range: ByteRange, miss: bool, data_end: u64) {
        let (start, end) = (range.start.0, range.end().0);
        let sid = self.by_position.get(&start).copied().or_else(|| {
            // A read inside a stream's buffered window (a client that skipped a little).
            self.by_position
                .range(..=start)
                .next_back()
                .filter(|(_, id)| start < self.streams[id].fetched_end)
                .map(|(_, id)| *id)
        });
        match sid {
            Some(id) => {
                let fetched_end = self.streams[&id].fetched_end;
                self.set_consumed(id, end.max(self.streams[&id].consumed));
                let s = self.streams.get_mut(&id).expect("live stream");
                if s.state == State::Idle && s.last_access != now {
                    self.idle.remove(&(s.last_access, id));
                    self.idle.insert((now, id));
                }
                s.last_access = now;
                // Buffers the client has read past are freed at once (section 4.3: a stream leaves
                // the buffered set when its last buffer is consumed), so unread buffers never
                // compete with read ones for the cache.
                let done_to = start / PAGE_BYTES * PAGE_BYTES;
                if done_to > s.released_to {
                    let from = s.released_to;
                    s.released_to = done_to;
                    self.out.push_back(Output::Release {
                        file: VOLUME_FILE,
                        range: ByteRange::new(from, done_to - from),
                    });
                }
                // `miss` means neither cached nor in flight. Below `fetched_end` that is data the
                // stream read and lost (evicted): the disk must serve it on demand. At or past it, the
                // request waits in the stream's queue for the stream's turn instead of going to the
                // disk on its own; unless it starts past the end of the stream's data, where the
                // stream will never read.
                if miss && start >= fetched_end && start < s.data_end {
                    // Held bytes are `fetched_end - consumed`, saturating; `consumed` is already
                    // past `start`, so moving `fetched_end` back to `start` keeps them at zero.
                    debug_assert_eq!(Self::held_of(s), 0);
                    s.fetched_end = start;
                    s.deferred_end = end.min(s.data_end);
                    match s.state {
                        State::Idle => {
                            self.idle.remove(&(s.last_access, id));
                            s.state = State::Waiting;
                            self.waiting.push(id, start);
                        }
                        State::Waiting => self.waiting.moved(id, fetched_end, start),
                        State::Dispatched => {}
                    }
                    self.out.push_back(Output::Defer {
                        file: VOLUME_FILE,
                        range,
                    });
                }
            }
            None => {
                let block = start / PAGE_BYTES;
                let blocks = (end - start).div_ceil(PAGE_BYTES);
                if self.classifier.observe(now, block, blocks) {
                    // A new stream. If this request still misses, it becomes the stream's first
                    // queued request: the stream's first read starts with it. Otherwise the stream
                    // starts where it ends. Either way it waits for its turn.
                    let from = if miss { start } else { end };
                    if miss {
                        self.out.push_back(Output::Defer {
                            file: VOLUME_FILE,
                            range,
                        });
                    }
                    let id = self.next_stream;
                    self.next_stream += 1;
                    self.streams.insert(
                        id,
                        Stream {
                            consumed: end,
                            fetched_end: from,
                            inflight: None,
                            reads_this_turn: 0,
                            state: State::Waiting,
                            last_access: now,
                            released_to: from,
                            deferred_end: if miss { end.min(data_end) } else { 0 },
                            data_end,
                            dispatched_bytes: 0,
                        },
                    );
                    self.by_position.insert(end, id);
                    self.waiting.push(id, from);
                }
            }
        }
        if self.next_gc.is_none() {
            self.next_gc = Some(now + self.gc_period());
        }
        self.schedule();
    }

    /// `D*R`: the bytes the dispatch set may have in flight.
    fn dispatch_bytes_max(&self) -> u64 {
        u64::from(self.dispatch_max).saturating_mul(self.cfg.readahead_bytes)
    }

    /// A dispatched stream's share of `D*R` while its next read is `len` bytes: `R` when the set
    /// counts streams, the read's whole pages when it counts bytes in flight.
    fn share_of(&self, len: u64) -> u64 {
        match self.cfg.dispatch_limit {
            DispatchLimit::Streams => self.cfg.readahead_bytes,
            DispatchLimit::BytesInFlight => len.div_ceil(PAGE_BYTES) * PAGE_BYTES,
        }
    }

    /// The length of the stream's next read: `R`, or less at the end of its data.
    fn next_read_bytes(&self, s: &Stream) -> u64 {
        self.cfg
            .readahead_bytes
            .min(s.data_end.saturating_sub(s.fetched_end))
    }

    /// Takes the stream out of the dispatch set, giving back its share of `D*R`.
    fn undispatch(&mut self, id: u32) {
        let s = self.streams.get_mut(&id).expect("live stream");
        self.dispatched -= 1;
        self.dispatched_bytes -= s.dispatched_bytes;
        s.dispatched_bytes = 0;
    }

    /// Fills the dispatch set from the waiting line, round-robin, within `D` (or `D*R` bytes in
    /// flight, [`DispatchLimit`]) and `M`.
    fn schedule(&mut self) {
        // Room for a read of a page at least. Under `Streams` every share is `R` (a whole number
        // of pages), so this is room for one more of `D` streams.
        while self.dispatched_bytes + PAGE_BYTES <= self.dispatch_bytes_max() {
            let Some(id) = self.waiting.pop() else {
                break;
            };
            let Some(s) = self.streams.get_mut(&id) else {
                continue;
            };
            if s.state != State::Waiting {
                continue;
            }
            if s.fetched_end >= s.data_end {
                // Nothing left to read at the end of its data (the volume's or its file's): put
                // back, it would take the head of the line on every call and no stream behind it
                // would get a turn. Idle, it is collected after the timeout.
                s.state = State::Idle;
                self.idle.insert((s.last_access, id));
                continue;
            }
            let position = s.fetched_end;
            let share = self.share_of(self.next_read_bytes(&self.streams[&id]));
            if self.dispatched_bytes + share > self.dispatch_bytes_max() {
                // Its read does not fit beside those in flight: it goes first once one ends.
                self.waiting.put_back(id, position);
                break;
            }
            let s = self.streams.get_mut(&id).expect("live stream");
            s.state = State::Dispatched;
            s.reads_this_turn = 0;
            s.dispatched_bytes = share;
            self.dispatched += 1;
            self.dispatched_bytes += share;
            if !self.issue(id) {
                // No room in M right now: it keeps its turn and retries when buffers drain.
                let s = self.streams.get_mut(&id).expect("live stream");
                if s.inflight.is_none() {
                    s.state = State::Waiting;
                    let position = s.fetched_end;
                    self.undispatch(id);
                    self.waiting.put_back(id, position);
                    break;
                }
            }
        }
        // Each share is a page at least, so the set holds at most `D*R / 4 KiB` streams; `D`
        // when it counts streams.
        debug_assert!(
            u64::from(self.dispatched) * PAGE_BYTES <= self.dispatched_bytes
                && self.dispatched_bytes <= self.dispatch_bytes_max()
        );
        debug_assert!(
            self.cfg.dispatch_limit != DispatchLimit::Streams
                || self.dispatched <= self.dispatch_max
        );
    }

    /// Issues the stream's next `R`-byte read; false if memory or the end of the stream's data
    /// forbids it. At that end the turn is over, however few of its `N` reads it made.
    fn issue(&mut self, id: u32) -> bool {
        let r = self.cfg.readahead_bytes;
        let s = self.streams[&id];
        if s.inflight.is_some() || s.reads_this_turn >= self.cfg.per_turn {
            return false;
        }
        if self.held_bytes + r > self.admit_bytes || s.fetched_end >= s.data_end {
            return false;
        }
        let len = r.min(s.data_end - s.fetched_end);
        // A turn's reads are `R` bytes but for one that ends at the data's end, so the stream's
        // share only shrinks: it always fits where its first read did.
        let share = self.share_of(len);
        debug_assert!(share <= s.dispatched_bytes, "a turn's share grew");
        let fid = self.ids.next_id();
        self.out.push_back(Output::Fetch {
            id: fid,
            file: VOLUME_FILE,
            range: ByteRange::new(s.fetched_end, len),
            into: Tier::Memory,
        });
        let s = self.streams.get_mut(&id).expect("live stream");
        let before = Self::held_of(s);
        s.fetched_end += len;
        s.inflight = Some(fid);
        s.reads_this_turn += 1;
        self.dispatched_bytes = self.dispatched_bytes - s.dispatched_bytes + share;
        s.dispatched_bytes = share;
        self.held_bytes = self.held_bytes - before + Self::held_of(s);
        assert!(
            self.held_bytes <= self.admit_bytes && self.admit_bytes <= self.cfg.memory_bytes,
            "buffers over M"
        );
        assert!(
            self.dispatched_bytes <= self.dispatch_bytes_max(),
            "reads in flight over D*R"
        );
        self.by_fetch.insert(fid, id);
        true
    }

    fn on_fetched(&mut self, id: FetchId) {
        let Some(sid) = self.by_fetch.remove(&id) else {
            return;
        };
        let Some(s) = self.streams.get_mut(&sid) else {
            return;
        };
        s.inflight = None;
        if !self.issue(sid) {
            // The turn is over (N reads, or no memory): leave the dispatch set for the buffered set,
            // or, if a request deferred during the turn still waits past what was fetched, for the
            // waiting line: a deferral promises a fetch, and an idle stream issues none.
            if self.streams[&sid].state == State::Dispatched {
                self.undispatch(sid);
                let s = self.streams.get_mut(&sid).expect("live stream");
                if s.deferred_end > s.fetched_end {
                    s.state = State::Waiting;
                    self.waiting.push(sid, s.fetched_end);
                } else {
                    s.state = State::Idle;
                    self.idle.insert((s.last_access, sid));
                }
            }
        }
        self.schedule();
    }

    /// Forgets the streams whose next read lies in `[start, end)` of the address space, and the
    /// classifier's regions there, releasing nothing: the driver holds none of that data any
    /// more (the engine's `Input::FileClosed` for the file whose slice this is). A stream left
    /// behind would fetch, or on its timeout release, in the slice of the next file given the id.
    pub(crate) fn forget_span(&mut self, now: Instant, start: u64, end: u64) {
        let ids: Vec<u32> = self
            .by_position
            .range(start..end)
            .map(|(_, &id)| id)
            .collect();
        for id in ids {
            let s = self.streams.remove(&id).expect("indexed stream");
            self.by_position.remove(&s.consumed);
            match s.state {
                State::Idle => {
                    let was_idle = self.idle.remove(&(s.last_access, id));
                    debug_assert!(was_idle, "idle stream {id} missing from the idle index");
                }
                State::Waiting => self.waiting.remove(id, s.fetched_end),
                State::Dispatched => {
                    self.dispatched -= 1;
                    self.dispatched_bytes -= s.dispatched_bytes;
                }
            }
            if let Some(fetch) = s.inflight {
                self.by_fetch.remove(&fetch);
            }
            self.held_bytes -= Self::held_of(&s);
        }
        // A region starts `offset_blocks` below the block that opened it (or last moved it), so
        // the span's regions are those starting that far below both ends: one starting just below
        // `end` was opened by a read past it, in the next slice, and stays.
        self.classifier.forget_span(
            (start / PAGE_BYTES).saturating_sub(self.cfg.offset_blocks),
            end.div_ceil(PAGE_BYTES)
                .saturating_sub(self.cfg.offset_blocks),
        );
        if self.streams.is_empty() && self.classifier.regions() == 0 {
            self.next_gc = None;
        }
        self.rearm(now);
        self.schedule();
    }

    /// Time between two garbage collections: the timeout, but at least [`GC_PERIOD_MIN`].
    fn gc_period(&self) -> Duration {
        self.cfg.timeout.max(GC_PERIOD_MIN)
    }

    fn collect(&mut self, now: Instant) {
        let timeout = self.cfg.timeout;
        let mut stale = Vec::new();
        while let Some(&(last_access, id)) = self.idle.first() {
            if now.saturating_since(last_access) < timeout {
                break;
            }
            self.idle.pop_first();
            stale.push(id);
        }
        // Dropped in id order, the order in which a walk over every stream released them.
        stale.sort_unstable();
        for id in stale {
            let s = self.streams.remove(&id).expect("listed");
            debug_assert!(s.state == State::Idle && s.inflight.is_none());
            self.by_position.remove(&s.consumed);
            let held = Self::held_of(&s);
            self.held_bytes -= held;
            if s.fetched_end > s.released_to {
                self.out.push_back(Output::Release {
                    file: VOLUME_FILE,
                    range: ByteRange::new(s.released_to, s.fetched_end - s.released_to),
                });
            }
        }
        self.classifier.collect(now, REGION_IDLE);
        self.next_gc = (!self.streams.is_empty() || self.classifier.regions() > 0)
            .then(|| now + self.gc_period());
        self.schedule();
    }

    /// Sets `wake` to the first grid instant, not before `now`, at which an idle stream or a
    /// region will be stale. A collection at a grid instant that finds nothing stale changes
    /// nothing (no stream dropped, no memory freed for `schedule` to use), so skipping those keeps
    /// every decision the periodic collection made.
    fn rearm(&mut self, now: Instant) {
        let stream = self
            .idle
            .first()
            .map(|&(t, _)| t.saturating_add(self.cfg.timeout));
        let region = self
            .classifier
            .oldest_touch()
            .map(|t| t.saturating_add(REGION_IDLE));
        let due = stream.into_iter().chain(region).min();
        self.wake = match (self.next_gc, due) {
            (Some(grid), Some(due)) => {
                let from = due.max(now).as_nanos();
                let period = self.gc_period().as_nanos();
                let steps = from.saturating_sub(grid.as_nanos()).div_ceil(period);
                // Past the clock's range nothing is ever collected: no timer.
                steps
                    .checked_mul(period)
                    .and_then(|d| grid.checked_add(Duration(d)))
            }
            _ => None,
        };
    }
}

impl crate::Policy for StreamScheduler {
    fn name(&self) -> &str {
        "streams"
    }

    fn handle(&mut self, now: Instant, input: Input) {
        self.handle_input(now, input);
        self.rearm(now);
    }

    fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.wake
    }

    fn handle_timeout(&mut self, now: Instant) {
        if self.wake.is_some_and(|t| t <= now) {
            self.collect(now);
        }
        self.rearm(now);
    }
}

impl StreamScheduler {
    /// Feeds a read of `range` of the address space, as [`crate::Policy::handle`] feeds an
    /// `Input::Read` of the volume, for a stream whose data ends at `data_end` rather than at
    /// the volume's end: the scheduler over files reads each file in a slice of an address
    /// space larger than the file (see [`super::FileStreams`]), and its streams read to the end
    /// of their file, not of their slice.
    pub(crate) fn handle_read_ending_at(
        &mut self,
        now: Instant,
        range: ByteRange,
        miss: bool,
        data_end: u64,
    ) {
        if !range.is_empty() {
            self.on_read(now, range, miss, data_end.min(self.volume_bytes));
        }
        self.rearm(now);
    }

    fn handle_input(&mut self, now: Instant, input: Input) {
        match input {
            Input::Read {
                file, range, miss, ..
            } if file == VOLUME_FILE && !range.is_empty() => {
                self.on_read(now, range, miss.is_some(), self.volume_bytes)
            }
            Input::Fetched { id, .. } => self.on_fetched(id),
            Input::MemoryPressure { available } => {
                // Admit what is held plus what is free, up to M. Never below one read of R
                // (R <= M): with nothing in flight no fetch would complete, nothing would report
                // memory again, and the streams' queued requests would wait forever.
                self.admit_bytes = self
                    .cfg
                    .memory_bytes
                    .min(self.held_bytes.saturating_add(available.0))
                    .max(self.held_bytes)
                    .max(self.cfg.readahead_bytes);
                self.schedule();
            }
            // Streams here are found by the classifier from addresses, not named by the driver;
            // they go on their own timeout.
            Input::Read { .. }
            | Input::Hint { .. }
            | Input::StreamClosed { .. }
            | Input::FileClosed { .. } => {}
        }
    }
}

/// Bytes in a whole number of `R` reads covering `len`.
pub fn reads_for(len: ByteLen, readahead_bytes: u64) -> u64 {
    len.0.div_ceil(readahead_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Policy;
    use foresight_core::{ByteOffset, StreamId};

    fn sched(d: Option<u32>, r: u64, n: u32, m: u64) -> StreamScheduler {
        let layout = Arc::new(Layout::new(ByteLen::gib(64), None));
        StreamScheduler::new(
            StreamsConfig {
                dispatch: d,
                readahead_bytes: r,
                per_turn: n,
                memory_bytes: m,
                ..StreamsConfig::default()
            },
            layout,
        )
        .expect("valid")
    }

    /// Fetch `id` completes at `t`; returns what the scheduler answers.
    fn fetched(p: &mut StreamScheduler, t: Instant, id: FetchId) -> Vec<Output> {
        p.handle(t, Input::Fetched { id, ok: true });
        std::iter::from_fn(|| p.poll_output()).collect()
    }

    fn read(p: &mut StreamScheduler, t: Instant, off: u64, len: u64, miss: bool) -> Vec<Output> {
        p.handle(
            t,
            Input::Read {
                stream: StreamId(0),
                file: VOLUME_FILE,
                range: ByteRange::new(off, len),
                miss: miss.then_some(ByteOffset(off)),
            },
        );
        std::iter::from_fn(|| p.poll_output()).collect()
    }

    #[test]
    fn refuses_memory_below_d_r_n_naming_all_four() {
        let layout = Arc::new(Layout::new(ByteLen::gib(1), None));
        let cfg = StreamsConfig {
            dispatch: Some(4),
            readahead_bytes: 8 << 20,
            per_turn: 2,
            memory_bytes: 16 << 20,
            ..StreamsConfig::default()
        };
        let e = StreamScheduler::new(cfg, layout).unwrap_err().to_string();
        // Sizes as one writes them, not byte counts, and the M that would do.
        for part in [
            "M = 16MiB",
            "D = 4",
            "R = 8MiB",
            "N = 2",
            "at least D*R*N = 64MiB",
        ] {
            assert!(e.contains(part), "{e}");
        }
    }

    #[test]
    fn refuses_d_r_n_whose_product_passes_2_to_the_64() {
        let cfg = StreamsConfig {
            dispatch: Some(1 << 20),
            readahead_bytes: 1 << 30,
            per_turn: 1 << 14,
            memory_bytes: 16 << 20,
            ..StreamsConfig::default()
        };
        let e = cfg.dispatch_set().unwrap_err().to_string();
        assert!(e.contains("M >= D*R*N"), "{e}");
    }

    #[test]
    fn memory_below_one_turn_says_how_much_one_turn_needs() {
        let cfg = StreamsConfig {
            memory_bytes: 1 << 20,
            ..StreamsConfig::default()
        };
        let e = cfg.dispatch_set().unwrap_err().to_string();
        // Not "M >= D*R*N is required but ... D = 0", which M = 1 MiB satisfies.
        assert!(
            e.contains("M = 1MiB holds not one turn of R*N = 8MiB") && e.contains("at least 8MiB"),
            "{e}"
        );
        assert!(!e.contains("M >= D*R*N"), "{e}");
    }

    #[test]
    fn refuses_a_zero_timeout() {
        let cfg = StreamsConfig {
            timeout: Duration::ZERO,
            ..StreamsConfig::default()
        };
        let e = cfg.dispatch_set().unwrap_err().to_string();
        assert!(e.contains("timeout"), "{e}");
    }

    #[test]
    fn memory_pressure_lowers_admission_for_a_while_not_for_good() {
        let mut p = sched(None, 1 << 20, 1, 4 << 20);
        let t = Instant::ZERO;
        p.handle(
            t,
            Input::MemoryPressure {
                available: ByteLen(0),
            },
        );
        p.handle(
            t,
            Input::MemoryPressure {
                available: ByteLen::gib(1),
            },
        );
        let k = 64 << 10;
        let mut fetches = 0;
        for s in 0..4u64 {
            for i in 0..2 {
                fetches += read(&mut p, t, (s << 30) + i * k, k, true)
                    .iter()
                    .filter(|o| matches!(o, Output::Fetch { .. }))
                    .count();
            }
        }
        assert_eq!(fetches, 4, "M = 4 MiB is back: four 1 MiB reads");
        // Short of memory with nothing held, one read of R still goes, so queued requests move.
        let mut p = sched(None, 1 << 20, 1, 4 << 20);
        p.handle(
            t,
            Input::MemoryPressure {
                available: ByteLen(0),
            },
        );
        let out: Vec<_> = (0..2)
            .flat_map(|i| read(&mut p, t, i * k, k, true))
            .collect();
        assert_eq!(
            out.iter()
                .filter(|o| matches!(o, Output::Fetch { .. }))
                .count(),
            1,
            "{out:?}"
        );
    }

    #[test]
    fn d_defaults_to_m_over_r_times_n() {
        assert_eq!(sched(None, 8 << 20, 1, 16 << 20).dispatch_max(), 2);
    }

    #[test]
    fn a_detected_stream_reads_r_bytes_at_a_time_and_defers_its_misses() {
        let mut p = sched(None, 1 << 20, 1, 4 << 20);
        let t = Instant::ZERO;
        let k = 64 << 10;
        // The first request is not a stream yet: it goes to the disk on its own.
        assert!(read(&mut p, t, 0, k, true).is_empty());
        // The second makes the region a stream (threshold 2): it waits, and the stream's first
        // read of R bytes starts with it.
        let out = read(&mut p, t, k, k, true);
        assert_eq!(
            out,
            vec![
                Output::Defer {
                    file: VOLUME_FILE,
                    range: ByteRange::new(k, k),
                },
                Output::Fetch {
                    id: FetchId(0),
                    file: VOLUME_FILE,
                    range: ByteRange::new(k, 1 << 20),
                    into: Tier::Memory,
                }
            ]
        );
        // The next request falls in the fetch in flight (no miss): nothing to read.
        let out = read(&mut p, t, 2 * k, k, false);
        assert!(
            out.iter().all(|o| matches!(o, Output::Release { .. })),
            "{out:?}"
        );
        // The fetch completes and the turn ends (N = 1); the client reads the buffer, then past
        // it: that request waits for the stream's next turn instead of reading on its own.
        assert!(fetched(&mut p, t, FetchId(0)).is_empty());
        let past = k + (1 << 20);
        let mut off = 3 * k;
        while off < past {
            let out = read(&mut p, t, off, k, false);
            assert!(
                out.iter().all(|o| matches!(o, Output::Release { .. })),
                "{out:?}"
            );
            off += k;
        }
        let out = read(&mut p, t, past, k, true);
        assert!(
            out.iter().any(|o| matches!(o, Output::Defer { .. })),
            "{out:?}"
        );
        assert!(
            out.iter()
                .any(|o| matches!(o, Output::Fetch { range, .. } if range.start.0 == past)),
            "{out:?}"
        );
        assert!(p.held_bytes() <= 4 << 20);
    }

    #[test]
    fn at_most_d_streams_are_dispatched_and_they_rotate() {
        let mut p = sched(Some(2), 1 << 20, 1, 8 << 20);
        let t = Instant::ZERO;
        let k = 64 << 10;
        let mut fetches = vec![];
        for s in 0..5u64 {
            let base = s << 30;
            for i in 0..2 {
                fetches.extend(
                    read(&mut p, t, base + i * k, k, true)
                        .into_iter()
                        .filter(|o| matches!(o, Output::Fetch { .. })),
                );
            }
        }
        assert_eq!(fetches.len(), 2, "only D = 2 streams issue at once");
        // Completing a read ends that stream's turn (N = 1): the next waiting stream goes.
        let out = fetched(&mut p, t, FetchId(0));
        assert!(
            matches!(&out[..], [Output::Fetch { range, .. }] if range.start.0 >> 30 == 2),
            "{out:?}"
        );
    }

    /// The GiB at which each turn's read starts, for streams that join at `joins` GiB in that
    /// order, with D = 1 and N = 1, each read completed before the next turn.
    fn turns(order: TurnOrder, joins: &[u64]) -> Vec<u64> {
        let layout = Arc::new(Layout::new(ByteLen::gib(64), None));
        let mut p = StreamScheduler::new(
            StreamsConfig {
                dispatch: Some(1),
                readahead_bytes: 1 << 20,
                memory_bytes: 8 << 20,
                turn_order: order,
                ..StreamsConfig::default()
            },
            layout,
        )
        .expect("valid");
        let k = 64 << 10;
        let mut pending = VecDeque::new();
        let fetches = |out: Vec<Output>, pending: &mut VecDeque<(FetchId, u64)>| {
            for o in out {
                if let Output::Fetch { id, range, .. } = o {
                    pending.push_back((id, range.start.0 >> 30));
                }
            }
        };
        for &g in joins {
            for i in 0..2 {
                let out = read(&mut p, Instant::ZERO, (g << 30) + i * k, k, true);
                fetches(out, &mut pending);
            }
        }
        let mut seen = vec![];
        while let Some((id, g)) = pending.pop_front() {
            assert!(pending.is_empty(), "D = 1 issues one read at a time");
            seen.push(g);
            p.handle(Instant::ZERO, Input::Fetched { id, ok: true });
            fetches(
                std::iter::from_fn(|| p.poll_output()).collect(),
                &mut pending,
            );
        }
        seen
    }

    #[test]
    fn turns_go_in_arrival_order_or_in_one_sweep_by_position() {
        let joins = [3, 1, 4, 2, 0];
        assert_eq!(turns(TurnOrder::Arrival, &joins), vec![3, 1, 4, 2, 0]);
        // The first stream starts at once; the rest go up from where it read, then wrap.
        assert_eq!(turns(TurnOrder::Position, &joins), vec![3, 4, 0, 1, 2]);
    }

    #[test]
    fn idle_streams_are_released_after_the_timeout() {
        let mut p = sched(None, 1 << 20, 1, 4 << 20);
        let k = 64 << 10;
        for i in 0..2 {
            read(&mut p, Instant::ZERO, i * k, k, true);
        }
        fetched(&mut p, Instant::ZERO, FetchId(0));
        let t = p.poll_timeout().expect("gc scheduled");
        p.handle_timeout(t + Duration::from_secs(5));
        let out: Vec<_> = std::iter::from_fn(|| p.poll_output()).collect();
        assert!(
            out.iter().any(|o| matches!(o, Output::Release { .. })),
            "{out:?}"
        );
        assert_eq!(p.held_bytes(), 0);
        assert_eq!(p.stream_count(), 0);
    }

    /// R = 1 MiB, M = 4 MiB over a 1 GiB volume, and a 1 ns stream timeout.
    fn one_ns_timeout_scheduler() -> StreamScheduler {
        let layout = Arc::new(Layout::new(ByteLen::gib(1), None));
        StreamScheduler::new(
            StreamsConfig {
                readahead_bytes: 1 << 20,
                memory_bytes: 4 << 20,
                timeout: Duration(1),
                ..StreamsConfig::default()
            },
            layout,
        )
        .expect("valid")
    }

    /// Collection runs at most every `GC_PERIOD_MIN`, however short the timeout: it re-armed
    /// every `timeout`, so a 1 ns timeout woke the driver every simulated nanosecond while
    /// anything lived. Here a stream goes idle a nanosecond after each collection, stale a
    /// nanosecond later, and still waits for the next millisecond.
    #[test]
    fn collection_runs_at_most_every_millisecond_with_a_tiny_timeout() {
        let mut p = one_ns_timeout_scheduler();
        let k = 64 << 10;
        let mut t = Instant::ZERO;
        let mut last_wake: Option<Instant> = None;
        for i in 0..4u64 {
            // Two reads make a stream; its one read of the turn completes at once.
            let at = i * (16 << 20);
            read(&mut p, t, at, k, true);
            read(&mut p, t, at + k, k, true);
            fetched(&mut p, t, FetchId(i));
            let wake = p.poll_timeout().expect("an idle stream to collect");
            let earliest = last_wake.map_or(Instant::ZERO, |w| w) + GC_PERIOD_MIN;
            assert!(wake >= earliest, "woken at {wake}, before {earliest}");
            p.handle_timeout(wake);
            while p.poll_output().is_some() {}
            assert_eq!(p.stream_count(), 0, "collected at {wake}");
            last_wake = Some(wake);
            t = wake + Duration(1);
        }
    }

    /// With a 1 ns timeout, collection used to wake every millisecond for as long as a
    /// classifier region lived (a minute after its last request), collecting nothing 60,000
    /// times after a stream's one turn: clients that think for an hour between reads woke the
    /// driver millions of times. It now wakes at the collection instants that have something to
    /// collect, which are the instants the periodic collection collected it at.
    #[test]
    fn collection_wakes_only_when_something_can_be_collected() {
        let mut p = one_ns_timeout_scheduler();
        let k = 64 << 10;
        read(&mut p, Instant::ZERO, 0, k, true);
        let out = read(&mut p, Instant::ZERO, k, k, true);
        assert!(
            out.iter().any(|o| matches!(o, Output::Fetch { .. })),
            "{out:?}"
        );
        // The turn ends with its one read: the stream is idle, its buffers unread.
        fetched(&mut p, Instant::ZERO, FetchId(0));
        let mut wakes = Vec::new();
        while let Some(t) = p.poll_timeout() {
            wakes.push(t);
            assert!(
                wakes.len() <= 10,
                "woken {} times: {:?}...",
                wakes.len(),
                &wakes[..3]
            );
            p.handle_timeout(t);
            while p.poll_output().is_some() {}
        }
        // The idle stream goes at the first collection (GC_PERIOD_MIN after the first read), the
        // region at the first one a minute after its last request.
        assert_eq!(
            wakes,
            vec![Instant::ZERO + GC_PERIOD_MIN, Instant::ZERO + REGION_IDLE]
        );
        assert_eq!(p.stream_count(), 0);
        assert_eq!(p.held_bytes(), 0);
    }

    #[test]
    fn a_stream_found_at_the_end_of_the_volume_does_not_hold_up_the_line() {
        // Two cached reads of the volume's last blocks make a stream with nothing left to read.
        let layout = Arc::new(Layout::new(ByteLen::gib(1), None));
        let mut p = StreamScheduler::new(
            StreamsConfig {
                readahead_bytes: 1 << 20,
                memory_bytes: 4 << 20,
                ..StreamsConfig::default()
            },
            layout,
        )
        .expect("valid");
        let t = Instant::ZERO;
        let k = 64 << 10;
        let end = 1u64 << 30;
        for i in (1..=2).rev() {
            read(&mut p, t, end - i * k, k, false);
        }
        assert_eq!(p.stream_count(), 1);
        // Another stream's missed request waits for its turn: the turn must come.
        read(&mut p, t, 0, k, true);
        let out = read(&mut p, t, k, k, true);
        assert!(
            out.iter()
                .any(|o| matches!(o, Output::Fetch { range, .. } if range.start.0 == k)),
            "{out:?}"
        );
        // The finished stream is collected like any idle one.
        p.handle_timeout(t + Duration::from_secs(5));
        while p.poll_output().is_some() {}
        assert_eq!(p.stream_count(), 1, "only the new stream is left");
    }

    #[test]
    fn a_request_deferred_while_the_last_read_of_a_turn_is_in_flight_gets_a_turn() {
        // N = 1: the stream's one read of its turn is in flight when its client asks for the
        // bytes right after it (a client with two requests out). The request is deferred, so the
        // scheduler owes it a fetch even though the turn ends when the read completes.
        let mut p = sched(None, 1 << 20, 1, 4 << 20);
        let t = Instant::ZERO;
        let k = 64 << 10;
        read(&mut p, t, 0, k, true);
        let out = read(&mut p, t, k, k, true);
        assert!(
            out.iter().any(|o| matches!(o, Output::Fetch { .. })),
            "{out:?}"
        );
        let past = k + (1 << 20);
        // The client's next requests fall in the read in flight, then one goes past it.
        let mut off = 2 * k;
        while off < past {
            read(&mut p, t, off, k, false);
            off += k;
        }
        let out = read(&mut p, t, past, k, true);
        assert!(
            out.iter().any(|o| matches!(o, Output::Defer { .. })),
            "{out:?}"
        );
        let out = fetched(&mut p, t, FetchId(0));
        assert!(
            out.iter()
                .any(|o| matches!(o, Output::Fetch { range, .. } if range.start.0 == past)),
            "the deferred request at {past} was never fetched: {out:?}"
        );
    }
}
