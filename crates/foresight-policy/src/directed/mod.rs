//! `directed`: application-directed prefetching (paper 003_eb9cef22f2823582.txt, libprefetch).
//!
//! The application discloses its future reads (`Input::Hint`, any order, any files); the policy
//!
//! 1. keeps a **window**: the longest prefix of the not-yet-used hinted list whose bytes fit in the
//!    memory it may use ([`window`]; section I: the prefetcher reads ahead all that its memory
//!    holds), and of at most [`window::ADMITTED_READS_MAX`] reads, since reads may be a byte long;
//!    a stream's hinted list holds at most [`window::QUEUED_RANGES_MAX`] ranges not yet
//!    admitted, and hints past it are dropped (their reads go on demand);
//! 2. **orders** the window by physical position and fetches it in one elevator sweep ([`order`];
//!    section III, "Seek Performance"); as the application uses data the window slides, and a new
//!    sweep run waits until half the window is pending again, so that sweeps stay dense instead
//!    of chasing each newly admitted read with a seek of its own;
//! 3. **infills**: a run of the sweep swallows the next read when the gap between them costs less
//!    to read than to seek over ([`infill`]; section III, Fig. 1, and section IV, Fig. 2); gap bytes
//!    nobody hinted are released as soon as their fetch completes;
//! 4. runs a **contention controller** ([`contention`]): a hinted read that misses in a range the
//!    policy had fetched means prefetched data was evicted before use, and the window halves;
//!    `Input::MemoryPressure` (memory is over-committed) makes the streams take turns: one leads
//!    with the memory the others do not hold and sweeps its window once, the others keep a small
//!    window and wait, and the lead passes round-robin (`allocate`); used prefetches let a window
//!    grow back. Each instance in the paper adapts on its own; one policy object serves all streams
//!    here, so it splits memory among them directly, which settles faster than instances halving in
//!    turn, and gives each sweep a dense window instead of an even, sparse share. A split visits
//!    only the streams it changes otherwise than the one before (the others take it when next
//!    looked at), and the figures it needs are running totals, so an event costs the same however
//!    many streams there are.
//!
//! A fetch that comes back `ok: false` (memory refused part of it) returns its reads to the sweep,
//! and the stream sends nothing more until an application has used data and so freed memory:
//! retrying at once would only be refused again. Each application read lets the stream refused
//! longest ago try again, one per read.
//!
//! Data read ahead is kept (pinned) until the application has used it: the policy releases a read's
//! pages on the stream's next read, when the read that used them has completed (releasing them
//! while handling the read itself would drop them before the driver copies them out). A read whose
//! hinted data is waiting in the window is answered with `Output::Defer`, so that it does not pull
//! the arm out of the sweep; should its data still be missing once every fetch it waits for is done,
//! the policy fetches the read's range once more, so a deferred read always completes.
//!
//! Runs are sent as fetches of at most [`PIECE_BYTES`]; a stream sends the next piece while it has
//! less than [`IN_FLIGHT_BYTES_MAX`] in flight, so it never has a whole piece more than that out (a
//! piece is not held back to fit under the bound: it would then go out on whichever completion or
//! turn of the lead comes first, and the decisions would depend on timing). Each stream (an
//! instance of the library in the paper) has its own window, sweep and controller; pins are shared,
//! so no stream releases pages another stream still waits for.

pub mod contention;
pub mod infill;
pub mod order;
pub mod window;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::Bound;
use std::sync::Arc;

use foresight_core::{ByteRange, FetchId, FileId, Instant, StreamId};

pub use contention::Contention;
pub use infill::Infill;
use order::{phys_key, Elevator};
use window::{FetchState, Window};

use crate::{FetchIds, Input, Layout, Output, Policy, PolicyError, Tier, PAGE_BYTES};

/// Largest fetch the policy sends, bytes; longer runs go out as consecutive pieces.
pub const PIECE_BYTES: u64 = 1 << 20;
/// A stream sends no further piece while it has this many bytes of fetches in flight, so it has
/// less than this plus one [`PIECE_BYTES`] out.
pub const IN_FLIGHT_BYTES_MAX: u64 = 4 << 20;
/// Longest run of the sweep, from its first byte to its last; the next run goes on from there.
pub const RUN_BYTES_MAX: u64 = IN_FLIGHT_BYTES_MAX;
/// Smallest window, bytes: two of the largest pieces a hinted range is cut into.
pub const MIN_WINDOW_BYTES: u64 = 2 * window::ENTRY_BYTES_MAX;
/// A new sweep run starts once at least `1 / SWEEP_START_DIVISOR` of the window's reads wait in
/// the elevator (or a read waits, or the hinted list is all admitted).
pub const SWEEP_START_DIVISOR: usize = 2;
/// The window each stream but the leader keeps while memory is over-committed (see
/// [`Directed`]'s `allocate`): its application's next reads stay admitted, so they wait for the
/// stream's turn instead of being read on demand.
pub const FOLLOWER_WINDOW_BYTES: u64 = MIN_WINDOW_BYTES;
/// How many admitted reads from the front an application read is matched against.
const MATCH_SCAN: usize = 64;

/// The `directed` policy's settings (`policy.directed_memory`, `policy.infill_max`,
/// `policy.contention`), plus the device figures `infill_max = "auto"` needs, which the driver
/// fills in from its device model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirectedConfig {
    /// Most bytes of hinted data one stream's window may hold.
    pub memory_bytes: u64,
    /// How much gap between two reads may be read through.
    pub infill_max: Infill,
    /// Whether the contention controller resizes the window (off: it stays at `memory_bytes`).
    pub contention: bool,
    /// The device's positioning time against distance, as `(distance_bytes, ns)` points sorted
    /// by distance; empty for a device without seeks (an SSD).
    pub positioning_curve_ns: Vec<(u64, u64)>,
    /// The device's sustained media rate, bytes per second (0 = unknown: `auto` chooses 0).
    pub media_bytes_per_s: u64,
}

impl Default for DirectedConfig {
    fn default() -> Self {
        DirectedConfig {
            memory_bytes: 256 << 20,
            infill_max: Infill::Auto,
            contention: true,
            positioning_curve_ns: Vec::new(),
            media_bytes_per_s: 0,
        }
    }
}

impl DirectedConfig {
    /// Checks the bounds, naming the key.
    pub fn validate(&self) -> Result<(), PolicyError> {
        if self.memory_bytes < MIN_WINDOW_BYTES {
            return Err(PolicyError::BadSetting {
                key: "directed_memory",
                message: format!(
                    "must be at least {MIN_WINDOW_BYTES} bytes (two 128 KiB pieces), got {}",
                    self.memory_bytes
                ),
            });
        }
        if !self
            .positioning_curve_ns
            .windows(2)
            .all(|w| w[0].0 < w[1].0)
        {
            return Err(PolicyError::BadSetting {
                key: "infill_max",
                message: "the device's positioning curve must be sorted by distance".into(),
            });
        }
        Ok(())
    }

    /// The infill threshold these settings give, bytes.
    pub fn infill_threshold_bytes(&self) -> u64 {
        infill::threshold_bytes(
            self.infill_max,
            &self.positioning_curve_ns,
            self.media_bytes_per_s,
        )
    }
}

/// Counters for reports and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DirectedStats {
    /// Runs (merged groups of reads) sent.
    pub runs: u64,
    /// Gap bytes read by infill.
    pub infill_bytes: u64,
    /// Hinted reads found evicted before use.
    pub evictions_seen: u64,
    /// Reads answered with `Defer`.
    pub deferred_reads: u64,
    /// Extra fetches for deferred reads whose data was still missing.
    pub pokes: u64,
    /// Times the large window passed to another stream while memory was over-committed.
    pub lead_changes: u64,
    /// Hinted ranges dropped because their stream's hinted list was full
    /// ([`window::QUEUED_RANGES_MAX`]); the application reads them on demand.
    pub hinted_ranges_dropped: u64,
    /// Stream states a split of memory among the streams (`allocate`) visited: the leader's and
    /// those of streams with events since the split before, plus, while at most one stream has
    /// reads left, those that may send. The others take the split when next looked at, so this
    /// grows with the events, not with events times streams (a test holds it to that).
    pub stream_states_visited: u64,
}

#[derive(Clone, Debug)]
struct Run {
    file: FileId,
    next: u64,
    end: u64,
    seqs: Vec<u64>,
    cursor: usize,
}

#[derive(Debug)]
struct FetchInfo {
    stream: StreamId,
    file: FileId,
    range: ByteRange,
    seqs: Vec<u64>,
    /// Bytes of the fetch no admitted read of its own wants: infill.
    infill_bytes: u64,
    poke: bool,
    /// Its stream closed: on completion the pages nobody pins are released, nothing else.
    orphan: bool,
}

#[derive(Clone, Debug)]
struct Deferred {
    file: FileId,
    range: ByteRange,
    seqs: Vec<u64>,
}

#[derive(Clone, Debug)]
struct StreamState {
    window: Window,
    elevator: Elevator,
    contention: Contention,
    run: Option<Run>,
    in_flight_bytes: u64,
    /// Bytes of gaps (infill) in this stream's fetches under way: they take memory beside the
    /// window's hinted bytes until their fetch completes and they are released, so they count
    /// against the window's limit.
    infill_in_flight_bytes: u64,
    release_next: Vec<(FileId, ByteRange)>,
    deferred: Vec<Deferred>,
    /// Memory refused one of this stream's fetches: it sends no more until its application has
    /// used data (and so freed memory), which keeps a refused fetch from being retried at once.
    starved: bool,
    /// Another stream holds the lead while memory is over-committed: this one keeps its small
    /// window but sends nothing, so its reads wait (deferred) instead of pulling the arm away.
    paused: bool,
    /// This stream leads while memory is over-committed: its sweep stops where it would wrap
    /// around, and then the lead passes on.
    lead_pass: bool,
    /// The leader's sweep reached the end of its pass.
    pass_done: bool,
    /// The splits of memory ([`Split::count`], [`Split::lowered`]) this state has taken; later
    /// ones left it alone and [`StreamState::catch_up`] applies them when it is next looked at.
    synced_splits: u64,
    synced_lowered: u64,
    /// What [`Directed`]'s running totals count for this stream, as of its last
    /// [`Directed::put`]: its held bytes (fetched and unused, or in flight), whether it had
    /// reads left to fetch ([`StreamState::wants_turn`]), and whether it might send if let (see
    /// [`Directed`]'s `busy`).
    counted_held_bytes: u64,
    counted_active: bool,
    counted_busy: bool,
}

impl StreamState {
    /// Whether the stream has reads left that it must take its turn to fetch: hinted reads not
    /// yet used, or a read its application already waits on (deferred) with data not yet sent.
    /// The second keeps a stream that waits for its turn in the rotation when that read was its
    /// last; it would otherwise wait for nobody.
    fn wants_turn(&self) -> bool {
        self.window.has_unused()
            || self.deferred.iter().any(|d| {
                d.seqs.iter().any(|&s| {
                    self.window
                        .get(s)
                        .is_some_and(|e| e.fetch() == FetchState::Pending)
                })
            })
    }

    /// Applies the splits of memory made since this state last took one: each left the stream
    /// alone (it had no event and did not lead), which changes nothing but its flags and its
    /// grant (see [`Directed::allocate`]), so their sum is the last one's flags and grant.
    fn catch_up(&mut self, split: &Split) {
        if self.synced_splits == split.count {
            return;
        }
        self.contention
            .regrant(split.grant_bytes, split.lowered > self.synced_lowered);
        self.paused = split.paused;
        self.lead_pass = false;
        self.pass_done = false;
        self.synced_splits = split.count;
        self.synced_lowered = split.lowered;
    }
}

/// What the splits of memory among the streams gave the streams they left alone (see
/// [`Directed::allocate`]).
#[derive(Clone, Copy, Debug, Default)]
struct Split {
    /// Splits so far.
    count: u64,
    /// How many of them lowered that grant from the split before, which restarts a window's
    /// progress since a cut ([`Contention::grant`]): a stream left alone since split `k` saw one
    /// if this grew since `k`.
    lowered: u64,
    /// The last split's grant, bytes (within the window's bounds).
    grant_bytes: u64,
    /// Whether the last split paused them (memory shared: they follow), or let them send (at most
    /// one stream had reads left).
    paused: bool,
}

/// Streams memory refused, oldest first, each listed once. A stream is looked up by a map, not
/// by a walk of the queue: with thousands of streams refused, a walk on every refused fetch (and
/// on every stream that closes) made a run quadratic in the streams. A stream taken off the list
/// leaves its place in the queue behind, recognised by its stamp and skipped.
#[derive(Debug, Default)]
struct StarvedQueue {
    order: VecDeque<(StreamId, u64)>,
    /// The listed streams, each with the stamp of its place in `order`.
    listed: BTreeMap<StreamId, u64>,
    stamp_next: u64,
}

impl StarvedQueue {
    /// Lists `id` at the back, unless it is listed already.
    fn push_back(&mut self, id: StreamId) {
        if self.listed.contains_key(&id) {
            return;
        }
        self.listed.insert(id, self.stamp_next);
        self.order.push_back((id, self.stamp_next));
        self.stamp_next += 1;
        // Places left behind are dropped once they outnumber the listed streams, so the queue
        // stays within twice the streams (and each place is dropped once).
        if self.order.len() > 2 * self.listed.len() + 64 {
            let listed = &self.listed;
            self.order.retain(|(s, stamp)| listed.get(s) == Some(stamp));
        }
        debug_assert!(self.order.len() <= 2 * self.listed.len() + 64);
    }

    /// The stream listed longest ago, taken off the list.
    fn pop_front(&mut self) -> Option<StreamId> {
        while let Some((id, stamp)) = self.order.pop_front() {
            if self.listed.get(&id) == Some(&stamp) {
                self.listed.remove(&id);
                return Some(id);
            }
        }
        None
    }

    /// Takes `id` off the list (its place in the queue is skipped).
    fn remove(&mut self, id: StreamId) {
        self.listed.remove(&id);
    }

    /// Streams listed.
    fn len(&self) -> usize {
        self.listed.len()
    }
}

/// The policy. See the module documentation.
#[derive(Debug)]
pub struct Directed {
    memory_bytes: u64,
    contention: bool,
    threshold_bytes: u64,
    layout: Arc<Layout>,
    streams: BTreeMap<StreamId, StreamState>,
    fetches: BTreeMap<FetchId, FetchInfo>,
    pins: BTreeMap<(u32, u64), u32>,
    ids: FetchIds,
    out: VecDeque<Output>,
    stats: DirectedStats,
    /// Streams memory refused, oldest first; each application read lets one try again.
    starved: StarvedQueue,
    /// Memory the streams share while it is over-committed (what they held plus what was free at
    /// the last `MemoryPressure`); 0 until memory is first short.
    pool_bytes: u64,
    /// The stream that holds the large window while memory is over-committed.
    leader: Option<StreamId>,
    // Running totals over `streams`, so that a pressure report or a turn of the lead costs the
    // same however many streams there are (summed over every stream on each of the leader's
    // events, 16,000 scanning streams took 50 s of host time for 1 s simulated). A stream's state
    // changes only while it is out of the map (`take` .. `put`), and `put` counts it anew.
    /// Streams with reads left to fetch ([`StreamState::wants_turn`]), the ones memory is split
    /// among.
    active: BTreeSet<StreamId>,
    /// Streams that might send if let: active ones, and those with reads waiting in the elevator
    /// (read while deferred) or a run under way. A split letting every stream send visits these.
    busy: BTreeSet<StreamId>,
    /// Bytes every stream holds: fetched and not yet used, or in flight.
    held_bytes: u64,
    /// Over the active streams, each one's held bytes, at least [`FOLLOWER_WINDOW_BYTES`]: what
    /// they keep as followers.
    active_share_bytes: u64,
    /// Streams a split must visit however it goes: those with events since the split before
    /// (their grant and flags moved), new ones, and the leader (its grant is its own).
    unsettled: BTreeSet<StreamId>,
    /// What the splits so far gave the streams they left alone.
    split: Split,
    /// Tests: every split visits every stream, as before the splits left streams alone, for
    /// comparison.
    #[cfg(test)]
    visit_all: bool,
}

/// Debug builds recount the running totals over every stream while there are at most this many
/// (beyond, the recount would make each event cost as much as the totals save).
const RECOUNT_STREAMS_MAX: usize = 128;

impl Directed {
    /// A `directed` policy over `layout`.
    pub fn new(cfg: &DirectedConfig, layout: Arc<Layout>) -> Result<Directed, PolicyError> {
        cfg.validate()?;
        Ok(Directed {
            memory_bytes: cfg.memory_bytes,
            contention: cfg.contention,
            threshold_bytes: cfg.infill_threshold_bytes(),
            layout,
            streams: BTreeMap::new(),
            fetches: BTreeMap::new(),
            pins: BTreeMap::new(),
            ids: FetchIds::default(),
            out: VecDeque::new(),
            starved: StarvedQueue::default(),
            stats: DirectedStats::default(),
            pool_bytes: 0,
            leader: None,
            active: BTreeSet::new(),
            busy: BTreeSet::new(),
            held_bytes: 0,
            active_share_bytes: 0,
            unsettled: BTreeSet::new(),
            split: Split::default(),
            #[cfg(test)]
            visit_all: false,
        })
    }

    /// The infill threshold in use, bytes.
    pub fn infill_threshold_bytes(&self) -> u64 {
        self.threshold_bytes
    }

    /// Counters so far.
    pub fn stats(&self) -> DirectedStats {
        self.stats
    }

    /// How many streams the policy keeps state for (each from its first hint or read until
    /// `Input::StreamClosed`).
    pub fn stream_count(&self) -> usize {
        self.streams.len()
    }

    /// Hinted ranges a stream has queued, not yet admitted whole (at most
    /// [`window::QUEUED_RANGES_MAX`]).
    pub fn queued_ranges(&self, stream: StreamId) -> Option<usize> {
        self.streams.get(&stream).map(|s| s.window.queued_ranges())
    }

    /// Bytes a stream's window holds, and its current limit.
    pub fn window_bytes(&self, stream: StreamId) -> Option<(u64, u64)> {
        self.streams.get(&stream).map(|s| {
            // The splits that left the stream alone since it last took one count too
            // (`StreamState::catch_up`).
            let mut c = s.contention.clone();
            if s.synced_splits < self.split.count {
                c.regrant(
                    self.split.grant_bytes,
                    self.split.lowered > s.synced_lowered,
                );
            }
            (s.window.held_bytes(), c.limit_bytes())
        })
    }

    fn new_stream(&self) -> StreamState {
        let mut st = StreamState {
            window: Window::default(),
            elevator: Elevator::default(),
            contention: self.window_bounds(),
            run: None,
            in_flight_bytes: 0,
            infill_in_flight_bytes: 0,
            release_next: Vec::new(),
            deferred: Vec::new(),
            starved: false,
            paused: false,
            lead_pass: false,
            pass_done: false,
            synced_splits: self.split.count,
            synced_lowered: self.split.lowered,
            counted_held_bytes: 0,
            counted_active: false,
            counted_busy: false,
        };
        if self.split.count > 0 {
            // Memory is split already: a stream that comes now takes what the last split gave
            // the streams it left alone, as if it had been one of them. While the streams take
            // turns it waits for its own with the small window; it used to send its first run at
            // once with the whole window, past the leader's turn and the pool.
            st.contention.grant(self.split.grant_bytes);
            st.paused = self.split.paused;
        }
        st
    }

    /// Takes `id`'s state out of the map, and out of the running totals, to work on it beside
    /// `&mut self`, brought up to date with the splits of memory; [`Directed::put`] brings it
    /// back.
    fn take(&mut self, id: StreamId) -> Option<StreamState> {
        let mut st = self.streams.remove(&id)?;
        self.held_bytes -= st.counted_held_bytes;
        if st.counted_active {
            self.active_share_bytes -= st.counted_held_bytes.max(FOLLOWER_WINDOW_BYTES);
            self.active.remove(&id);
        }
        if st.counted_busy {
            self.busy.remove(&id);
        }
        self.unsettled.remove(&id);
        st.catch_up(&self.split);
        Some(st)
    }

    /// Puts `id`'s state (back) into the map, counts it in the running totals as it is now, and
    /// lists it for the next split to visit (what it did may have moved its grant).
    fn put(&mut self, id: StreamId, mut st: StreamState) {
        let held = st.window.fetched_unused_bytes() + st.in_flight_bytes;
        let active = st.wants_turn();
        let busy = active || !st.elevator.is_empty() || st.run.is_some();
        st.counted_held_bytes = held;
        st.counted_active = active;
        st.counted_busy = busy;
        self.held_bytes += held;
        if active {
            self.active_share_bytes += held.max(FOLLOWER_WINDOW_BYTES);
            self.active.insert(id);
        }
        if busy {
            self.busy.insert(id);
        }
        self.unsettled.insert(id);
        let old = self.streams.insert(id, st);
        assert!(old.is_none(), "stream {id:?} put twice");
    }

    /// Recounts the running totals over every stream and checks them (debug builds, at most
    /// [`RECOUNT_STREAMS_MAX`] streams).
    fn debug_check_totals(&self) {
        if !cfg!(debug_assertions) || self.streams.len() > RECOUNT_STREAMS_MAX {
            return;
        }
        let (mut held, mut share) = (0, 0);
        let (mut active, mut busy) = (BTreeSet::new(), BTreeSet::new());
        for (&id, st) in &self.streams {
            let h = st.window.fetched_unused_bytes() + st.in_flight_bytes;
            held += h;
            if st.wants_turn() {
                share += h.max(FOLLOWER_WINDOW_BYTES);
                active.insert(id);
            }
            if st.wants_turn() || !st.elevator.is_empty() || st.run.is_some() {
                busy.insert(id);
            }
            assert!(
                st.synced_splits == self.split.count || !self.unsettled.contains(&id),
                "stream {id:?} listed for the next split is behind"
            );
        }
        assert_eq!(self.held_bytes, held, "held bytes");
        assert_eq!(self.active_share_bytes, share, "active streams' shares");
        assert_eq!(self.active, active, "active streams");
        assert_eq!(self.busy, busy, "busy streams");
        assert!(
            self.unsettled
                .iter()
                .all(|id| self.streams.contains_key(id)),
            "a stream listed for the next split is gone"
        );
    }

    /// Emits `Release` for the pages in `pages` (sorted), coalesced into ranges.
    fn release_pages(&mut self, file: FileId, pages: &[u64]) {
        let size = self.layout.file_size(file).0;
        let mut i = 0;
        while i < pages.len() {
            let mut j = i + 1;
            while j < pages.len() && pages[j] == pages[j - 1] + 1 {
                j += 1;
            }
            let start = pages[i] * PAGE_BYTES;
            let end = ((pages[j - 1] + 1) * PAGE_BYTES).min(size.max(start + 1));
            self.out.push_back(Output::Release {
                file,
                range: ByteRange::new(start, end - start),
            });
            i = j;
        }
    }

    fn pin(&mut self, file: FileId, range: ByteRange) {
        for p in range.start.0 / PAGE_BYTES..range.end().0.div_ceil(PAGE_BYTES) {
            *self.pins.entry((file.0, p)).or_insert(0) += 1;
        }
    }

    /// Unpins `range` and releases the pages nobody pins any more.
    fn unpin(&mut self, file: FileId, range: ByteRange) {
        let mut free = Vec::new();
        for p in range.start.0 / PAGE_BYTES..range.end().0.div_ceil(PAGE_BYTES) {
            let n = self
                .pins
                .get_mut(&(file.0, p))
                .expect("unpin of a pinned page");
            *n -= 1;
            if *n == 0 {
                self.pins.remove(&(file.0, p));
                free.push(p);
            }
        }
        self.release_pages(file, &free);
    }

    /// Releases the whole pages of a completed fetch that no hinted read pins: infill.
    fn release_unpinned(&mut self, file: FileId, range: ByteRange) {
        let size = self.layout.file_size(file).0;
        let first = range.start.0.div_ceil(PAGE_BYTES);
        let end = if range.end().0 >= size {
            size.div_ceil(PAGE_BYTES)
        } else {
            range.end().0 / PAGE_BYTES
        };
        if first >= end {
            return;
        }
        // The pages between the pinned ones, found from the pins in the range: a fetch spans up
        // to hundreds of pages but few pins, and looking each page up took about 8% of the host's
        // time in the `directed` and `streams` reproductions.
        let mut free = Vec::new();
        let mut next = first;
        for (&(_, p), _) in self.pins.range((file.0, first)..(file.0, end)) {
            free.extend(next..p);
            next = p + 1;
        }
        free.extend(next..end);
        self.release_pages(file, &free);
    }

    /// Whether reading `a..b` of `file` (a gap) stays in one extent, so the run is one stretch of disk.
    fn contiguous(&self, file: FileId, a: u64, b: u64) -> bool {
        let mut pieces = 0;
        let lo = a.saturating_sub(1);
        self.layout
            .for_each_volume_piece(file, ByteRange::new(lo, b + 1 - lo), |_, _| pieces += 1);
        pieces == 1
    }

    fn build_run(&mut self, st: &mut StreamState) -> Option<Run> {
        let (key, seq) = st.elevator.next()?;
        st.elevator.remove(key, seq);
        let first = st.window.get(seq).expect("pending read is admitted");
        let (file, start) = (first.file, first.range.start.0);
        let mut end = first.range.end().0;
        let mut wanted = first.range.len.0;
        let mut seqs = vec![seq];
        let mut cur = (key, seq);
        // Gap bytes take memory until their piece completes, beside the hinted bytes the window
        // holds: a run reads only as much gap as the window's limit leaves room for. Uncharged,
        // a window that filled a small memory sent runs spanning 4 MiB of it, memory refused
        // them, and each application read swept them again (a 4 MiB scan of 4 KiB pages in
        // 1 MiB on a RAID-0 of two cheetah-15k5s read 111 MB, against 4 MiB with infill 0).
        let gap_room_bytes = self.window_limit_bytes(st).saturating_sub(
            st.window
                .held_bytes()
                .saturating_add(st.infill_in_flight_bytes),
        );
        let mut gap_bytes = 0u64;
        while let Some((k2, s2)) = st.elevator.after(cur.0, cur.1) {
            // A run claims at most what may be in flight: the rest of the window stays in the
            // elevator, where memory pressure can still shed it.
            if end - start >= RUN_BYTES_MAX {
                break;
            }
            let e2 = st.window.get(s2).expect("pending read is admitted");
            let s2_start = e2.range.start.0;
            if e2.file != file || k2.0 != key.0 || s2_start < start {
                break;
            }
            if s2_start > end
                && (s2_start - end > self.threshold_bytes
                    || gap_bytes + (s2_start - end) > gap_room_bytes
                    || !self.contiguous(file, end, s2_start))
            {
                break;
            }
            gap_bytes += s2_start.saturating_sub(end);
            st.elevator.remove(k2, s2);
            wanted += e2.range.end().0.saturating_sub(end.max(s2_start));
            end = end.max(e2.range.end().0);
            seqs.push(s2);
            cur = (k2, s2);
        }
        // On a striped volume the gap between two reads of one member disk lies on the other
        // members, where reads may wait for their own disk's sweep: the run reads them anyway,
        // so it takes them. Left in the elevator they were fetched a second time, and counted
        // twice in flight and as infill (a hinted 4 MiB scan on four disks: 15.25 MiB of
        // fetches in four overlapping runs). On one disk a run's span holds no other reads.
        if end - start > wanted && self.layout.striping().is_some_and(|s| s.disks > 1) {
            for (s, k) in st.window.pending_within(file, start, end) {
                if st.elevator.remove(k, s) {
                    seqs.push(s);
                }
            }
            let range_of = |s: u64| st.window.get(s).expect("admitted").range;
            seqs.sort_by_key(|&s| range_of(s).start.0);
            // Bytes the run's reads want, each counted once.
            let mut covered = start;
            wanted = 0;
            for &s in &seqs {
                let r = range_of(s);
                wanted += r.end().0.saturating_sub(covered.max(r.start.0));
                covered = covered.max(r.end().0);
            }
        }
        st.elevator.set_head((key.0, key.1 + (end - start)));
        for &s in &seqs {
            let r = st.window.get(s).expect("admitted").range;
            let a = (r.start.0 - start) / PIECE_BYTES;
            let b = (r.end().0 - 1 - start) / PIECE_BYTES;
            st.window.set_fetch(
                s,
                FetchState::InFlight {
                    pieces_left: (b - a + 1) as u32,
                    short: false,
                },
            );
        }
        self.stats.runs += 1;
        self.stats.infill_bytes += (end - start) - wanted.min(end - start);
        Some(Run {
            file,
            next: start,
            end,
            seqs,
            cursor: 0,
        })
    }

    /// The most bytes the stream may have in memory: hinted bytes held plus infill in flight.
    fn window_limit_bytes(&self, st: &StreamState) -> u64 {
        st.contention.limit_bytes().min(self.memory_bytes)
    }

    /// Admits what fits, then sends fetches while the stream has room in flight.
    fn fill_and_issue(&mut self, stream: StreamId, st: &mut StreamState) {
        self.admit(st);
        self.issue(stream, st);
    }

    /// Admits hinted reads while they fit under the window limit, pins them and queues them in the
    /// elevator.
    fn admit(&mut self, st: &mut StreamState) {
        let limit = self
            .window_limit_bytes(st)
            .saturating_sub(st.infill_in_flight_bytes);
        let layout = self.layout.clone();
        let mut admitted = Vec::new();
        st.window.admit(
            limit,
            |f, off| phys_key(&layout, f, off),
            |seq, e| admitted.push((seq, e.file, e.range, e.key)),
        );
        for (seq, file, range, key) in admitted {
            self.pin(file, range);
            st.elevator.insert(key, seq);
        }
        assert!(
            st.window.held_bytes() <= self.memory_bytes,
            "window {} over memory {}",
            st.window.held_bytes(),
            self.memory_bytes
        );
    }

    /// Sends fetches while the stream has room in flight.
    fn issue(&mut self, stream: StreamId, st: &mut StreamState) {
        while !st.starved && !st.paused && st.in_flight_bytes < IN_FLIGHT_BYTES_MAX {
            if st.run.is_none() {
                if st.lead_pass && st.elevator.would_wrap() {
                    // One pass per lead: the reads behind the head wait for the next one.
                    st.pass_done = true;
                    break;
                }
                // A sweep over a sparse set pays a seek per read: a new run starts only once at
                // least half the window waits in the elevator, unless a read waits for it or no
                // more reads can come.
                if st.deferred.is_empty()
                    && st.window.queued_ranges() > 0
                    && st.elevator.len() * SWEEP_START_DIVISOR < st.window.len()
                {
                    break;
                }
                st.run = self.build_run(st);
            }
            let Some(run) = st.run.as_mut() else { break };
            let (start, end) = (run.next, run.end.min(run.next + PIECE_BYTES));
            let mut seqs = Vec::new();
            let mut i = run.cursor;
            while let Some(&s) = run.seqs.get(i) {
                let e = st.window.get(s).expect("run reads stay admitted");
                if e.range.start.0 >= end {
                    break;
                }
                if e.range.end().0 > start {
                    seqs.push(s);
                }
                i += 1;
            }
            while run
                .seqs
                .get(run.cursor)
                .is_some_and(|&s| st.window.get(s).is_some_and(|e| e.range.end().0 <= end))
            {
                run.cursor += 1;
            }
            // What of the piece its reads do not want: their ranges, clipped to it, merged.
            let mut wanted: Vec<(u64, u64)> = seqs
                .iter()
                .map(|&s| {
                    let r = st.window.get(s).expect("run reads stay admitted").range;
                    (r.start.0.max(start), r.end().0.min(end))
                })
                .collect();
            wanted.sort_unstable();
            let (mut covered, mut wanted_bytes) = (start, 0u64);
            for (a, b) in wanted {
                wanted_bytes += b.saturating_sub(covered.max(a));
                covered = covered.max(b);
            }
            let infill_bytes = (end - start).saturating_sub(wanted_bytes);
            let file = run.file;
            run.next = end;
            if run.next >= run.end {
                st.run = None;
            }
            let id = self.ids.next_id();
            let range = ByteRange::new(start, end - start);
            st.in_flight_bytes += range.len.0;
            st.infill_in_flight_bytes += infill_bytes;
            assert!(
                st.in_flight_bytes < IN_FLIGHT_BYTES_MAX + PIECE_BYTES,
                "{} bytes in flight for one stream",
                st.in_flight_bytes
            );
            self.fetches.insert(
                id,
                FetchInfo {
                    stream,
                    file,
                    range,
                    seqs,
                    infill_bytes,
                    poke: false,
                    orphan: false,
                },
            );
            self.out.push_back(Output::Fetch {
                id,
                file,
                range,
                into: Tier::Memory,
            });
        }
    }

    fn on_read(&mut self, stream: StreamId, file: FileId, range: ByteRange, miss: Option<u64>) {
        let mut st = self.take(stream).unwrap_or_else(|| self.new_stream());
        // The stream's previous read has completed (a stream has one read outstanding): its data
        // may go, and its deferral, if any, was served.
        st.deferred.clear();
        st.starved = false;
        for (f, r) in std::mem::take(&mut st.release_next) {
            self.unpin(f, r);
            st.window.release_bytes(r.len.0);
        }
        // What that freed may admit the very reads this one asks for.
        self.admit(&mut st);
        let seqs = st.window.matching(file, range, MATCH_SCAN);
        if seqs.is_empty() {
            st.window.skip_queued(file, range);
        }
        let unsent_run = st
            .run
            .as_ref()
            .filter(|r| r.file == file)
            .map(|r| (r.next, r.end));
        let mut defer = false;
        for &seq in &seqs {
            let e = st.window.get(seq).expect("matched").clone();
            let (s, en) = (e.range.start.0, e.range.end().0);
            let missing = miss.is_some_and(|m| m < en);
            let miss_in = miss.is_some_and(|m| m >= s && m < en);
            let len = e.range.len.0;
            match e.fetch() {
                FetchState::Fetched if miss_in => {
                    self.stats.evictions_seen += 1;
                    st.contention.on_evicted();
                    st.contention.on_used(len, false);
                }
                FetchState::Fetched => st.contention.on_used(len, true),
                FetchState::Pending if missing => {
                    defer = true;
                    st.contention.on_used(len, true);
                }
                FetchState::Pending => {
                    // Already in memory (another stream, or infill): no need to fetch it.
                    st.elevator.remove(e.key, seq);
                    st.window.set_fetch(seq, FetchState::Fetched);
                    st.contention.on_used(len, true);
                }
                FetchState::InFlight { .. } => {
                    if missing && unsent_run.is_some_and(|(n, end)| en > n && s < end) {
                        defer = true;
                    }
                    st.contention.on_used(len, true);
                }
                FetchState::Shed => {
                    // Given back under memory pressure: neither held nor pinned, so the read
                    // takes it on demand and there is nothing to release afterwards.
                    st.window.take_shed(seq);
                    continue;
                }
            }
            st.window.mark_used(seq);
            st.release_next.push((file, e.range));
        }
        if defer {
            self.stats.deferred_reads += 1;
            self.out.push_back(Output::Defer { file, range });
            st.deferred.push(Deferred { file, range, seqs });
        }
        st.window.pop_used();
        self.fill_and_issue(stream, &mut st);
        let done = !st.wants_turn();
        self.put(stream, st);
        if self.pool_bytes > 0 && self.leader == Some(stream) {
            if done {
                self.allocate(true);
            } else {
                self.check_lead(stream);
            }
        }
        // Using data frees a little memory: the stream memory refused longest ago may try again
        // (one per read, so that a few freed pages do not send every starved stream to be refused
        // once more).
        while let Some(id) = self.starved.pop_front() {
            if !self.streams.get(&id).is_some_and(|other| other.starved) {
                continue;
            }
            let mut other = self.take(id).expect("starved stream is kept");
            other.starved = false;
            self.fill_and_issue(id, &mut other);
            self.put(id, other);
            break;
        }
    }

    /// Memory is over-committed. The memory the streams hold (fetched and unused, or in flight)
    /// plus what is still free becomes the pool they share, and [`Directed::allocate`] splits it.
    fn on_pressure(&mut self, available_bytes: u64) {
        if !self.contention {
            // Without the controller the windows stay at their maximum whatever memory says.
            return;
        }
        self.debug_check_totals();
        self.pool_bytes = self.held_bytes.saturating_add(available_bytes);
        self.allocate(false);
    }

    /// Splits the pool among the streams. A sweep costs about the same disk time whether its
    /// window is dense or sparse (the arm passes over the same table either way), so even shares
    /// would make every sweep sparse and the disk would deliver less per pass. Instead one stream,
    /// the leader, gets the pool less what the others hold (at least [`FOLLOWER_WINDOW_BYTES`]
    /// each) and room for one run in flight (at most half of what is left to it, so that a pool
    /// under two runs does not leave the leader at its minimum window); it sweeps its window once, from the lowest position
    /// to the highest, and the lead passes round-robin. The others keep the reads they admitted
    /// (unfetched reads take no memory) but admit no more than the small window and send nothing:
    /// their reads wait for their turn instead of pulling the arm away from the leader's sweep.
    /// Every stream thus advances in turn at close to its solo rate. With one stream left it is
    /// simply capped at the pool. `rotate` passes the lead on.
    ///
    /// A split visits only the streams it may change otherwise than the split before did: the
    /// leader, the streams with events since (and new ones), and, while at most one stream has
    /// reads left and so every stream may send, those that might send ([`Directed`]'s `busy`).
    /// Every other stream gets what the split gives all of them, flags and grant, and nothing
    /// else: no output (a follower sends nothing; a stream with no reads left, none waiting and
    /// no run sheds, admits and sends nothing), and so the split is only recorded
    /// ([`Split`]) and [`StreamState::catch_up`] applies it when the stream is next looked at.
    /// Visiting every stream on each of the leader's events made a run quadratic in the streams.
    fn allocate(&mut self, rotate: bool) {
        self.debug_check_totals();
        let shared = self.active.len() > 1;
        let keep = !rotate && self.leader.is_some_and(|l| self.active.contains(&l));
        if !keep {
            // The next active stream after the leader in id order, round-robin.
            let next = self
                .leader
                .and_then(|l| {
                    self.active
                        .range((Bound::Excluded(l), Bound::Unbounded))
                        .next()
                        .copied()
                })
                .or(self.active.first().copied());
            if shared && next != self.leader {
                self.stats.lead_changes += 1;
            }
            self.leader = next;
        }
        let leader = self.leader;
        // What the others hold (data their applications have not used yet, and their small
        // windows) is not the leader's to use. A leader is an active stream (kept because it is
        // one, or chosen among them), so the others' part is the active streams' less its own.
        let leader_share = leader.map_or(0, |l| {
            let st = &self.streams[&l];
            debug_assert!(st.counted_active, "the leader has reads left");
            st.counted_held_bytes.max(FOLLOWER_WINDOW_BYTES)
        });
        let others_bytes = self.active_share_bytes - leader_share;
        // Room for one run in flight, but never more than half of what the leader may use: a
        // whole run taken from a pool under two runs left the window at its minimum, and one
        // stream alone in 4 MiB ran a scan 14x slower than without the controller.
        let lead_pool = self.pool_bytes.saturating_sub(others_bytes);
        let lead_bytes = lead_pool - IN_FLIGHT_BYTES_MAX.min(lead_pool / 2);
        // What this split gives every stream it does not visit (a visited one ends the same,
        // but the leader, which is listed for the next split).
        let grant_bytes = self.window_bounds().cap_for(if shared {
            FOLLOWER_WINDOW_BYTES
        } else {
            lead_bytes
        });
        let lowered = self.split.count > 0 && grant_bytes < self.split.grant_bytes;
        let split = Split {
            count: self.split.count + 1,
            lowered: self.split.lowered + u64::from(lowered),
            grant_bytes,
            paused: shared,
        };
        let visit_all = self.visits_every_stream();
        if shared {
            // The followers' updates touch nothing but their own state, and only the leader's
            // sends or releases anything, so the order of the updates changes nothing.
            let leader = leader.expect("a shared pool has a leader");
            let followers = std::mem::take(&mut self.unsettled);
            let followers: Vec<StreamId> = if visit_all {
                self.streams.keys().copied().collect()
            } else {
                followers.into_iter().collect()
            };
            for id in followers {
                if id != leader {
                    self.settle_follower(id, &split);
                }
            }
            self.unpause(leader, true, keep, lead_bytes, &split);
        } else {
            // In id order, as what they send goes out in that order.
            let ids: Vec<StreamId> = if visit_all {
                self.streams.keys().copied().collect()
            } else {
                self.busy.union(&self.unsettled).copied().collect()
            };
            for id in ids {
                self.unpause(id, false, keep, lead_bytes, &split);
            }
            // Each ended with the grant and flags of the streams left alone.
            self.unsettled.clear();
        }
        self.split = split;
    }

    /// The bounds every stream's window keeps ([`Directed::new_stream`]).
    fn window_bounds(&self) -> Contention {
        Contention::new(self.contention, MIN_WINDOW_BYTES, self.memory_bytes)
    }

    #[cfg(test)]
    fn visits_every_stream(&self) -> bool {
        self.visit_all
    }

    #[cfg(not(test))]
    fn visits_every_stream(&self) -> bool {
        false
    }

    /// [`Directed::allocate`]'s update of a stream that waits for its turn: it keeps the reads
    /// it admitted (unfetched reads take no memory) but admits no more than the small window and
    /// sends nothing. None of this changes what the running totals count.
    fn settle_follower(&mut self, id: StreamId, split: &Split) {
        self.stats.stream_states_visited += 1;
        let st = self.streams.get_mut(&id).expect("listed stream is kept");
        st.catch_up(&self.split);
        st.paused = true;
        st.pass_done = false;
        st.lead_pass = false;
        st.contention.grant(FOLLOWER_WINDOW_BYTES);
        st.synced_splits = split.count;
        st.synced_lowered = split.lowered;
    }

    /// [`Directed::allocate`]'s update of a stream that may send: the leader while memory is
    /// `shared`, or any stream while at most one has reads left. It gets `lead_bytes`, sheds
    /// the unfetched reads that do not fit, and, if it was paused or the lead moved (not
    /// `keep`), admits and sends what it may.
    fn unpause(&mut self, id: StreamId, shared: bool, keep: bool, lead_bytes: u64, split: &Split) {
        self.stats.stream_states_visited += 1;
        let mut st = self.take(id).expect("listed stream");
        let was_paused = st.paused;
        st.paused = false;
        st.pass_done = false;
        if shared && !st.lead_pass {
            // A new lead sweeps its window once, from the lowest position.
            st.lead_pass = true;
            st.elevator.restart();
        }
        st.lead_pass &= shared;
        st.contention.grant(lead_bytes);
        st.synced_splits = split.count;
        st.synced_lowered = split.lowered;
        let limit = st.contention.limit_bytes();
        let deferred: Vec<u64> = st.deferred.iter().flat_map(|d| d.seqs.clone()).collect();
        let mut shed = Vec::new();
        st.window.shed_back(
            limit,
            |seq| deferred.contains(&seq),
            |seq, e| shed.push((seq, e.key, e.file, e.range)),
        );
        for (seq, key, file, range) in shed {
            st.elevator.remove(key, seq);
            self.unpin(file, range);
        }
        if (was_paused || !keep) && !st.starved {
            self.fill_and_issue(id, &mut st);
        }
        self.put(id, st);
    }

    /// `Input::StreamClosed`: the stream's window, sweep and controller go, and so do the pins of
    /// its admitted reads (pages no other stream pins are released). Its fetches still under way
    /// are orphaned: their completions release what nobody pins, as infill does, and cannot touch
    /// a new stream given the same id. If it led while memory was over-committed, the lead
    /// passes on.
    fn on_stream_closed(&mut self, stream: StreamId) {
        let Some(st) = self.take(stream) else {
            return;
        };
        let pinned: Vec<(FileId, ByteRange)> = st
            .release_next
            .iter()
            .copied()
            .chain(st.window.pinned_unused())
            .collect();
        for (file, range) in pinned {
            self.unpin(file, range);
        }
        for info in self.fetches.values_mut() {
            info.orphan |= info.stream == stream;
        }
        self.starved.remove(stream);
        if self.leader == Some(stream) {
            self.leader = None;
            if self.pool_bytes > 0 {
                self.allocate(true);
            }
        }
    }

    /// After each of the leader's events: once its pass is done the lead moves on; until then its
    /// share follows what the others still hold (they drain what they held when the lead came).
    fn check_lead(&mut self, leader: StreamId) {
        if self.active.len() <= 1 {
            return;
        }
        let done = self.streams.get(&leader).is_none_or(|st| {
            // Every split visits the leader, so its flags are up to date.
            debug_assert_eq!(st.synced_splits, self.split.count, "the leader is behind");
            st.pass_done
        });
        self.allocate(done);
    }

    fn on_fetched(&mut self, id: FetchId, ok: bool) {
        let Some(info) = self.fetches.remove(&id) else {
            return;
        };
        if info.orphan {
            // Nobody will read what it brought but another stream's admitted reads, which pin it.
            self.release_unpinned(info.file, info.range);
            return;
        }
        let Some(mut st) = self.take(info.stream) else {
            return;
        };
        if !info.poke {
            st.in_flight_bytes -= info.range.len.0;
            st.infill_in_flight_bytes -= info.infill_bytes;
            for &s in &info.seqs {
                if let Some(e) = st.window.get(s).cloned() {
                    if let FetchState::InFlight { pieces_left, short } = e.fetch() {
                        let pieces_left = pieces_left - 1;
                        let short = short || !ok;
                        if pieces_left > 0 {
                            st.window
                                .set_fetch(s, FetchState::InFlight { pieces_left, short });
                        } else if short {
                            // Memory refused part of it: sweep for it again once the
                            // application has made room by using what it has.
                            st.window.set_fetch(s, FetchState::Pending);
                            st.elevator.insert(e.key, s);
                            st.starved = true;
                            self.starved.push_back(info.stream);
                            assert!(
                                self.starved.len() <= self.streams.len() + 1,
                                "starved queue longer than the streams"
                            );
                        } else {
                            st.window.set_fetch(s, FetchState::Fetched);
                        }
                    }
                }
            }
            self.release_unpinned(info.file, info.range);
        }
        // Deferred reads whose reads have all arrived: make sure nothing they need is missing.
        let mut keep = Vec::new();
        for d in std::mem::take(&mut st.deferred) {
            let ready = d.seqs.iter().all(|&s| {
                st.window
                    .get(s)
                    .is_none_or(|e| e.fetch() == FetchState::Fetched)
            });
            if ready {
                // The application's read may run past the end of the file (drivers need not clip
                // reads); a fetch must not.
                let size = self.layout.file_size(d.file).0;
                let start = d.range.start.0;
                let end = d.range.end().0.min(size);
                if start >= end {
                    continue;
                }
                let range = ByteRange::new(start, end - start);
                let id = self.ids.next_id();
                self.stats.pokes += 1;
                self.fetches.insert(
                    id,
                    FetchInfo {
                        stream: info.stream,
                        file: d.file,
                        range,
                        seqs: Vec::new(),
                        infill_bytes: 0,
                        poke: true,
                        orphan: false,
                    },
                );
                self.out.push_back(Output::Fetch {
                    id,
                    file: d.file,
                    range,
                    into: Tier::Memory,
                });
            } else {
                keep.push(d);
            }
        }
        st.deferred = keep;
        st.window.pop_used();
        self.fill_and_issue(info.stream, &mut st);
        self.put(info.stream, st);
        if self.pool_bytes > 0 && self.leader == Some(info.stream) {
            self.check_lead(info.stream);
        }
    }
}

impl Policy for Directed {
    fn name(&self) -> &str {
        "directed"
    }

    fn handle(&mut self, _now: Instant, input: Input) {
        match input {
            Input::Hint {
                stream,
                file,
                ranges,
            } => {
                let size = self.layout.file_size(file).0;
                let clipped: Vec<ByteRange> = ranges
                    .iter()
                    .filter(|r| r.start.0 < size && !r.is_empty())
                    .map(|r| ByteRange::new(r.start.0, r.len.0.min(size - r.start.0)))
                    .collect();
                let mut st = self.take(stream).unwrap_or_else(|| self.new_stream());
                let dropped = st.window.push_hints(file, &clipped);
                self.stats.hinted_ranges_dropped += dropped as u64;
                self.fill_and_issue(stream, &mut st);
                self.put(stream, st);
            }
            Input::Read {
                stream,
                file,
                range,
                miss,
            } => self.on_read(stream, file, range, miss.map(|m| m.0)),
            Input::Fetched { id, ok } => self.on_fetched(id, ok),
            Input::MemoryPressure { available } => self.on_pressure(available.0),
            Input::StreamClosed { stream } => self.on_stream_closed(stream),
            // The pins and fetches kept for a file belong to its streams, which have closed by
            // then and unpinned what they admitted (`StreamClosed` comes first), and the
            // fetches they orphaned have completed (their `Fetched` comes first too).
            Input::FileClosed { .. } => {}
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
