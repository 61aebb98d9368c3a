//! The driver: one policy, the application's reads, and the backend, under one lock.
//!
//! The engine keeps, per open file, a map of *chunks*: page-aligned byte ranges with a buffer that is
//! either in flight or filled. An application `read` runs the same steps as the simulator's demand
//! path, so both worlds drive the policy identically: it finds the first page of the request that
//! no chunk covers (the `miss`), tells the policy `Input::Read`, executes the fetches the policy
//! returns (chunks for the pages they cover that are not already covered), and then issues demand
//! reads for whatever part of the request is still uncovered. The reader then waits for the chunks
//! under its request, in order, and copies their bytes out. A chunk the application has read to its
//! end is freed at once: the engine is a prefetcher, not a cache (the page cache is bypassed with
//! `O_DIRECT`). An `Output::Release` frees the released pages, as the simulator's page cache does:
//! chunks wholly inside it go, and a chunk it covers in part is replaced by chunks of the pages it
//! keeps, which keep their memory where the buffer is a piece of a mapping (it is cut in place and
//! the released pages go back to the pool) and are copies otherwise. Nothing here decides what to
//! read ahead: that is the policy's alone.
//!
//! Memory: every buffer comes from the [`BufferPool`], whose hard budget covers prefetched, in-flight
//! and demand buffers. A fetch that does not fit is cut short and the policy is told with
//! `Input::MemoryPressure`; prefetches may not take the last eighth of the budget, which is kept for
//! the application's own reads. A demand read that does not fit evicts data the application has
//! already used, then prefetched data nobody is waiting for (its pages nobody read counted as
//! wasted), then its own data further on; failing that it waits until memory is freed. A prefetch
//! may take only the first: a prefetched chunk the application has read in part still holds
//! read-ahead it has not read. A demand read never takes data another reader is
//! about to copy (a *claimed* chunk): that would let two starving readers steal from each other
//! forever. Progress follows: every in-flight read completes, every claimed chunk is copied by the
//! reader it is claimed for (or released when that reader's read ends early or it closes), and every
//! copied chunk is freed or becomes evictable.
//!
//! Errors and short reads: a completion that returns fewer bytes than asked is re-issued for the
//! remainder; only a read of zero bytes (or an unaligned tail under `O_DIRECT`) marks the end of the
//! file, so a file truncated while it is read ends early instead of hanging. A failed prefetch is
//! dropped quietly (the application will demand those bytes itself, as Linux does with readahead
//! errors); a failed demand read is reported to the one stream that issued it, and only when that
//! stream reaches the failed bytes. Nothing else is disturbed.
//!
//! Bounds: the backend never holds more than `queue_depth` reads; reads waiting for a slot sit in
//! two FIFO queues (the application's first, then prefetches) whose length is bounded by the number
//! of chunks the budget can hold, which is asserted. A closed reader's stream slot goes to the next
//! reader; a file no reader holds, with no chunk cached, queued or in flight, is forgotten (the
//! policy is told with `Input::FileClosed`) and its slot goes to a later new file. So the stream
//! and file tables hold as many entries as streams were ever open, and files remembered, at once
//! (at most the streams open plus the reads in flight, asserted), however many distinct files a
//! long-running server reads.
//!
//! The driver is split by mechanism, each a separate `impl Core` block over the state declared
//! here (this file also holds the types, construction and the chunk accessors every part uses):
//!
//! - `files`: the file and stream tables: open, close, and forgetting a file nobody needs.
//! - `read`: the application's read path: what covers a position, demand reads, pinning and
//!   copying, waiting for a chunk or for memory, a read's errors.
//! - `defer`: how long a read the policy deferred waits for its fetches before it reads on demand.
//! - `policy`: hints and timers, and executing what the policy outputs: fetches, cancels,
//!   deferrals, memory pressure.
//! - `release`: `Output::Release`, freeing released pages and cutting a chunk they cover in part.
//! - `memory`: chunks' buffers and the queues: allocation, eviction classes, dispatch to the
//!   backend, freeing, and the readers waiting for memory.
//! - `complete`: completions: filling a chunk, re-issuing a short read's remainder, failures.
//! - `report`: counters, the diagnostic description, and the invariant check.
//!
//! Each part's unit tests sit beside it; the fixtures they share (a backend that holds its
//! reads until the test completes them, and cores built over it) are in `testutil`.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io;
use std::sync::{Arc, Condvar};

use foresight_core::{ByteLen, ByteOffset, Extent, FetchId, FileId, Instant, StreamId};
use foresight_policy::layout::FileLayout;
use foresight_policy::{Policy, PAGE_BYTES};

use crate::backend::{FileHandle, IoBackend, IoRequest};
use crate::buffer::{AlignedBuf, ALIGN_BYTES};
use crate::pool::{ArenaShelf, BufferPool};
use crate::stats::Stats;

use guard::GuardedPolicy;

mod complete;
mod defer;
mod files;
mod guard;
mod memory;
mod policy;
mod read;
mod release;
mod report;

/// Errors a stream keeps for its next reads, at most this many (oldest dropped).
const STREAM_ERRORS_MAX: usize = 16;

/// How long the engine must stay idle (nothing in flight or queued, no fetch under way, no read
/// issued to the device) before a deferred read gives up on the policy's fetches and reads on
/// demand. The simulator releases a parked read only when nothing is in flight once every event
/// of the instant has been handled, so a client whose read completes and who reads again at once
/// keeps it parked; in real time the engine falls idle between that completion and the next read
/// (the reader wakes, copies, returns, and the application reads again): tens of microseconds,
/// more on a loaded host or in a debug build. Waiting out a gap of this length keeps a deferred
/// read parked across it (the anticipatory scheduler's idea), while a deferral nobody will serve
/// still ends: each costs the reader at most this much more than reading on demand at once
/// ([`DEFER_PATIENCE_NS`] while another stream has hinted reads left; nothing when no other stream
/// may read at once, [`Core::idle_wait_ns`]).
/// Well above the gap and well below a seek of the drives the engine is compared on (8 ms or so);
/// 1 ms served the contention scenarios as well but cost two hinted scans on a RAID-0 30% of
/// their time in deferrals nobody serves (ARCHITECTURE.md, the conformance suite).
pub(crate) const DEFER_GRACE_NS: u64 = 300_000;

/// How long a deferred read waits for an idle engine instead, while another stream, neither
/// deferred nor waiting for memory, has disclosed reads it has not made yet: that reader has
/// promised to read on, and its reads are what let the policy fetch (the simulator's clients read
/// on at the same instant, so its parked reads stay parked), so a gap between its reads longer
/// than [`DEFER_GRACE_NS`] (a thread descheduled on a loaded host) does not end the deferral.
/// Still bounded, since an application may break its promise and stop reading; and a stream that
/// let a deferred read wait this long in vain promises nothing more until it reads again
/// (`StreamState::lapsed`), so a broken promise costs this once, not once per deferred read.
pub(crate) const DEFER_PATIENCE_NS: u64 = 20_000_000;

/// Gaps between a stream's reads (from one read returning to the application to the next read
/// beginning) the engine keeps to tell whether the stream thinks between reads: it does when each
/// of its last this many gaps (or of all it has had, if fewer, but at least one) lasted at least
/// [`DEFER_GRACE_NS`]. Such a stream does not read again in what the engine takes for the instant
/// of a completion, and the simulator lets parked reads go to the disk while its clients think,
/// so a stream that thinks keeps no deferred read waiting, hinted reads or not
/// ([`Core::idle_wait_ns`]). The shortest recent gap decides, not their mean: a sleep never ends
/// early, whereas a thread that reads on at once is only now and then descheduled for longer (on
/// a loaded host), which must not make it look like a stream that thinks.
pub(crate) const THINK_SAMPLES: usize = 4;

/// What a reader whose read was deferred does at a missing byte ([`Core::defer_wait`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DeferWait {
    /// Read it on demand: the deferral has ended.
    Demand,
    /// Wait until woken: something is in flight.
    Woken,
    /// Wait until woken or for at most this many nanoseconds, then look again: the engine is
    /// idle, and the deferral ends once it has been for [`DEFER_GRACE_NS`].
    AtMost(u64),
}

/// Eviction classes, in the order a demand read may take from them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lru {
    /// Read for the application (on demand, or fetched under its request), copied at least
    /// once, not yet read to its end, or prefetched and read on every page but not front to
    /// end: anyone may evict it.
    Used = 0,
    /// Prefetched ahead of the application, with pages nobody has read, nobody waiting for it: a
    /// demand read may evict it (its pages nobody read counted as wasted), a prefetch may not. A
    /// prefetched chunk read in part stays here: its pages not yet read are read-ahead the policy
    /// still counts on (`directed` keeps its reads' pages until they are used), and a prefetch
    /// that took the whole chunk for them would drop them all.
    Unused = 1,
    /// Filled for a reader that is about to copy it (its demand, a fetch under its request, or a
    /// prefetch it was waiting for). Only the reader it is for may evict it (its own data beyond
    /// a gap it must fill first); taking it from anyone else could starve that reader forever.
    Claimed = 2,
}

#[derive(Debug)]
enum State {
    InFlight,
    Ready {
        valid_bytes: u64,
        buf: Arc<AlignedBuf>,
    },
}

#[derive(Debug)]
struct Chunk {
    file: FileId,
    first_page: u64,
    end_page: u64,
    /// Bytes the chunk should hold given the file's size at open.
    expect_bytes: u64,
    io_bytes: u64,
    filled_bytes: u64,
    state: State,
    direct: bool,
    fetch: Option<FetchId>,
    prefetched: bool,
    owner: Option<StreamId>,
    /// The reader this chunk is being read for, if it is under a reader's request.
    for_stream: Option<StreamId>,
    /// The reader its device read is charged to (see [`IoRequest::reader`]), kept for the
    /// re-read of a short read's remainder.
    reader: Option<StreamId>,
    urgent: bool,
    /// Which of a prefetched chunk's pages the application has read (one bit a page, empty until
    /// the first read), so that a chunk read in part and then dropped counts its unread pages as
    /// wasted, as the simulator's page cache counts them.
    read_pages: Vec<u64>,
    consumed_bytes: u64,
    pins: u32,
    waiters: Vec<(StreamId, Arc<Condvar>)>,
    lru: Option<(Lru, u64)>,
    /// Free it as soon as nothing needs it (its file was closed, or it was read to the end while
    /// another reader was copying from it).
    doomed: bool,
}

impl Chunk {
    fn start_bytes(&self) -> u64 {
        self.first_page * PAGE_BYTES
    }

    /// Valid bytes of page `p` (counted from the chunk's first page) when `valid_bytes` are.
    fn page_bytes(p: u64, valid_bytes: u64) -> u64 {
        valid_bytes.saturating_sub(p * PAGE_BYTES).min(PAGE_BYTES)
    }

    /// Notes that the application read file bytes `[from, to)` of this chunk, which holds
    /// `valid_bytes`; returns the valid bytes of the pages read for the first time.
    fn mark_read(&mut self, from: u64, to: u64, valid_bytes: u64) -> u64 {
        let start = self.start_bytes();
        let (from, to) = (from.max(start) - start, to.min(start + valid_bytes) - start);
        if from >= to {
            return 0;
        }
        let pages = self.end_page - self.first_page;
        if self.read_pages.is_empty() {
            self.read_pages = vec![0; pages.div_ceil(64) as usize];
        }
        let mut fresh = 0;
        for p in from / PAGE_BYTES..to.div_ceil(PAGE_BYTES) {
            let (word, bit) = ((p / 64) as usize, 1u64 << (p % 64));
            if self.read_pages[word] & bit == 0 {
                self.read_pages[word] |= bit;
                fresh += Self::page_bytes(p, valid_bytes);
            }
        }
        fresh
    }

    /// Valid bytes of pages `[a, b)` (counted from the chunk's first page) nobody has read.
    fn unread_bytes(&self, a: u64, b: u64, valid_bytes: u64) -> u64 {
        (a..b)
            .filter(|&p| {
                self.read_pages
                    .get((p / 64) as usize)
                    .is_none_or(|w| w & (1u64 << (p % 64)) == 0)
            })
            .map(|p| Self::page_bytes(p, valid_bytes))
            .sum()
    }

    /// The read marks of pages `[a, b)` (counted from the chunk's first page), as a piece
    /// starting at page `a` keeps them.
    fn read_pages_of(&self, a: u64, b: u64) -> Vec<u64> {
        if self.read_pages.is_empty() {
            return Vec::new();
        }
        let mut bits = vec![0u64; (b - a).div_ceil(64) as usize];
        for p in a..b {
            if self.read_pages[(p / 64) as usize] & (1u64 << (p % 64)) != 0 {
                let q = p - a;
                bits[(q / 64) as usize] |= 1u64 << (q % 64);
            }
        }
        bits
    }

    /// Whether some page holding valid bytes (of `valid_bytes`) has not been read.
    fn has_unread_pages(&self, valid_bytes: u64) -> bool {
        let pages = valid_bytes.div_ceil(PAGE_BYTES);
        (0..pages.div_ceil(64)).any(|w| {
            let want = if (w + 1) * 64 <= pages {
                u64::MAX
            } else {
                (1u64 << (pages % 64)) - 1
            };
            let read = self.read_pages.get(w as usize).copied().unwrap_or(0);
            read & want != want
        })
    }

    /// The class of a filled chunk nobody is about to copy: a prefetch's with a page not read
    /// yet is read-ahead (see [`Lru::Unused`]); the rest, a prefetch whose every page has been
    /// read (out of order, or it would have been freed) included, is the application's data.
    fn unclaimed_class(&self) -> Lru {
        let unread = match self.state {
            State::Ready { valid_bytes, .. } => self.has_unread_pages(valid_bytes),
            State::InFlight => true,
        };
        if self.prefetched && unread {
            Lru::Unused
        } else {
            Lru::Used
        }
    }
}

#[derive(Debug)]
struct FileState {
    /// What tells it from other files, its key in `Core::identities`.
    key: FileKey,
    /// Whether the slot names a file: from its open until it is forgotten.
    remembered: bool,
    handle: Option<Arc<FileHandle>>,
    size_bytes: u64,
    volume_offset_bytes: Option<u64>,
    chunks: BTreeMap<u64, u32>,
    /// Chunk records naming the file, in `chunks` or not (a chunk still in flight when the last
    /// reader closed leaves `chunks` at once and its record when it completes).
    live_chunks: u32,
    readers: u32,
    /// Streams of this file whose current read is deferred (usually none or one).
    deferred: Vec<StreamId>,
    /// The stream that last began a read of the file, while it is open: a fetch the policy
    /// issues outside any read (on a completion, a timer or a hint) is that reader's I/O, as the
    /// simulator charges it.
    last_reader: Option<StreamId>,
}

#[derive(Debug, Default)]
struct StreamState {
    /// Whether the stream is in the memory waiters' queue.
    waits_for_memory: bool,
    /// The chunk this stream's reader waits for, if any (diagnostics).
    waiting_on: Option<u32>,
    open: bool,
    file: FileId,
    /// Failed demand reads of this stream: file byte range and error.
    errors: VecDeque<(u64, u64, io::Error)>,
    /// The policy deferred the stream's current read (`Output::Defer`): its missing bytes come
    /// from the policy's fetches, not from demand reads, until the deferral ends (see
    /// [`Core::defer_wait`]).
    deferred: bool,
    /// The current read's byte range.
    read: (u64, u64),
    /// While deferred: the parts of the read that were there when the policy deferred it or that
    /// its fetches have covered since, as sorted disjoint byte ranges. The policy counts those
    /// bytes as delivered and will not fetch them again, so if they go missing (the fetch
    /// failed, was cut short by memory, or its data was evicted) the reader must read them on
    /// demand rather than wait for fetches that will never bring them.
    delivered: Vec<(u64, u64)>,
    /// Which open this is (the core's count of opens when it was made): the slot, and so the
    /// `StreamId`, is reused after close, and a handle kept from the old stream must not name
    /// the new one.
    open_seq: u64,
    /// Reads the stream disclosed in hints and has not begun yet, as the engine counts them: each
    /// hinted range adds one and each read takes one.
    hinted_reads_left: u64,
    /// A deferred read waited [`DEFER_PATIENCE_NS`] for this stream to read on and it did not:
    /// its hints promise nothing more until it begins a read. Without this, a stream that hints
    /// and then stops reading (its application stalled, or done with fewer reads than ranges)
    /// would cost every deferred read of every other stream the whole patience, for as long as
    /// it stays open.
    lapsed: bool,
    /// When the stream last began a read: one that read while the engine stayed idle kept its
    /// promise (its reads found their data), and does not lapse.
    read_at: Option<Instant>,
    /// When its last read returned to the application, until its next read begins.
    read_end_at: Option<Instant>,
    /// Its last [`THINK_SAMPLES`] gaps between reads, nanoseconds (a ring; `gaps_seen` counts
    /// every gap measured).
    gaps_ns: [u64; THINK_SAMPLES],
    gaps_seen: u64,
}

#[derive(Debug)]
struct FetchState {
    parts_left: u32,
    ok: bool,
    /// The file it reads: its end concerns only the deferred reads of that file.
    file: FileId,
}

/// What a reader finds at a file position.
#[derive(Debug)]
pub(crate) enum Found {
    /// A filled chunk: copy `[pos, valid_end)` of it, if `pos < valid_end`, else the file ended.
    Ready {
        chunk: u32,
        chunk_start: u64,
        valid_end: u64,
    },
    /// A chunk whose read is in flight: wait for it.
    InFlight { chunk: u32 },
    /// Nothing covers the position.
    Missing,
}

/// Settings the core needs.
#[derive(Clone, Debug)]
pub(crate) struct CoreConfig {
    pub memory_bytes: u64,
    pub queue_depth: usize,
    pub max_io_bytes: u64,
    /// Map and fault in the whole budget at the start (see `EngineBuilder::prefault`).
    pub prefault: bool,
    /// Where a prefaulted pool takes its mapping from and puts it back
    /// (`EngineBuilder::prefault_from`); only with `prefault`.
    pub arena: Option<ArenaShelf>,
}

/// What tells two opened files apart: device, inode, size and modification time.
type FileKey = (u64, u64, u64, Option<std::time::SystemTime>);

/// The driver state. See the module documentation.
pub(crate) struct Core {
    policy: GuardedPolicy,
    backend: Arc<dyn IoBackend>,
    cfg: CoreConfig,
    /// Indexed by `FileId`. A file no reader holds, with no chunk cached, queued or in flight, is
    /// forgotten: its slot goes on `free_files` once the policy has been told, and a later new
    /// file takes it, so the table holds as many slots as files were ever remembered at once
    /// (open, or with reads in flight), however many distinct files a long-running process reads.
    files: Vec<FileState>,
    /// Forgotten files' slots, reused oldest first, so that state a policy keeps on its own
    /// timeout (the stream scheduler's streams, found by address) has the longest to lapse.
    free_files: VecDeque<u32>,
    /// Files forgotten whose policy has not been told yet (`Input::FileClosed`, in `run_policy`).
    forgotten: Vec<FileId>,
    /// Device, inode, size and modification time of each remembered file: a file rewritten in
    /// place keeps the first three, and must not be served the chunks cached from its old bytes.
    identities: HashMap<FileKey, FileId>,
    chunks: Vec<Option<Chunk>>,
    free_slots: Vec<u32>,
    pool: BufferPool,
    lru: [BTreeMap<u64, u32>; 3],
    seq: u64,
    fetches: HashMap<FetchId, FetchState>,
    urgent: VecDeque<IoRequest>,
    ahead: VecDeque<IoRequest>,
    max_queued: usize,
    in_flight: usize,
    batch: Vec<IoRequest>,
    done_now: VecDeque<(FetchId, bool)>,
    /// Readers waiting for memory, oldest first, with the bytes each needs.
    memory_waiters: VecDeque<(StreamId, Arc<Condvar>, u64)>,
    /// Readers whose deferred read waits for the policy to fetch its bytes; woken when a fetch of
    /// their file starts or ends, and all of them when the engine falls idle or a fetch is
    /// cancelled. At most one entry per stream.
    defer_waiters: Vec<(StreamId, Arc<Condvar>)>,
    /// Reads handed to the backend so far: the engine has stayed idle while this does not change.
    submitted: u64,
    /// While the engine is idle and a deferred reader waits: `submitted` and the time when that
    /// reader first found it idle (see [`DEFER_GRACE_NS`]).
    quiet: Option<(u64, Instant)>,
    /// Bytes of the chunks in each eviction class.
    lru_bytes: [u64; 3],
    /// Indexed by `StreamId`. A closed stream's slot goes on `free_streams` and the next open
    /// takes it, so the table holds as many slots as streams were ever open at once, however many
    /// opens a long-running process makes.
    streams: Vec<StreamState>,
    free_streams: Vec<u32>,
    /// Opens so far (see `StreamState::open_seq`).
    opens: u64,
    stats: Stats,
    policy_wake: Option<Instant>,
    timer: Arc<Condvar>,
    pub(crate) shutdown: bool,
}

impl Drop for Core {
    /// Hands the buffers the core still owns (filled chunks, reads queued but not sent) back to
    /// the pool before the pool goes, so that a prefaulted mapping can go back on its shelf
    /// whole. Buffers a backend still holds (reads in flight) are not the core's to give: the
    /// mapping then stays incomplete and is unmapped (see `pool.rs`).
    fn drop(&mut self) {
        for c in self.chunks.iter_mut().flatten() {
            if let State::Ready { buf, .. } = std::mem::replace(&mut c.state, State::InFlight) {
                // A reader that still held a clone would keep its buffer; none outlives the
                // engine, but the drop does not count on it.
                if let Ok(buf) = Arc::try_unwrap(buf) {
                    self.pool.take_back_at_drop(buf);
                }
            }
        }
        let queued = self.urgent.drain(..).chain(self.ahead.drain(..));
        for r in queued.chain(self.batch.drain(..)) {
            self.pool.take_back_at_drop(r.buf);
        }
    }
}

impl Core {
    pub(crate) fn new(
        policy: Box<dyn Policy>,
        backend: Arc<dyn IoBackend>,
        mut cfg: CoreConfig,
        timer: Arc<Condvar>,
    ) -> Core {
        assert!(cfg.queue_depth >= 1 && cfg.queue_depth <= backend.capacity());
        assert!(
            cfg.max_io_bytes >= PAGE_BYTES
                && cfg.max_io_bytes.is_multiple_of(PAGE_BYTES)
                && 4 * cfg.max_io_bytes <= cfg.memory_bytes,
            "max_io {} must be whole pages and at most a quarter of memory {}",
            cfg.max_io_bytes,
            cfg.memory_bytes
        );
        // A demand read of one largest I/O always fits beside a full prefetch allowance.
        let reserve =
            (cfg.memory_bytes / 8).max(cfg.max_io_bytes) / ALIGN_BYTES as u64 * ALIGN_BYTES as u64;
        let mut pool = BufferPool::new(ByteLen(cfg.memory_bytes), reserve);
        if cfg.prefault {
            // Refused (no memory to map): memory is then taken as it is needed, as without.
            let _ = match cfg.arena.take() {
                Some(shelf) => pool.prefault_from(&shelf),
                None => pool.prefault(),
            };
        }
        let stats = Stats {
            backend: backend.kind(),
            memory_limit_bytes: cfg.memory_bytes,
            ..Stats::default()
        };
        Core {
            policy: GuardedPolicy::new(policy),
            backend,
            files: Vec::new(),
            free_files: VecDeque::new(),
            forgotten: Vec::new(),
            identities: HashMap::new(),
            chunks: Vec::new(),
            free_slots: Vec::new(),
            pool,
            lru: [BTreeMap::new(), BTreeMap::new(), BTreeMap::new()],
            seq: 0,
            fetches: HashMap::new(),
            urgent: VecDeque::new(),
            ahead: VecDeque::new(),
            max_queued: (cfg.memory_bytes / PAGE_BYTES) as usize,
            in_flight: 0,
            batch: Vec::with_capacity(cfg.queue_depth),
            done_now: VecDeque::new(),
            memory_waiters: VecDeque::new(),
            defer_waiters: Vec::new(),
            submitted: 0,
            quiet: None,
            lru_bytes: [0; 3],
            streams: Vec::new(),
            free_streams: Vec::new(),
            opens: 0,
            stats,
            policy_wake: None,
            timer,
            shutdown: false,
            // Last: the fields above read it.
            cfg,
        }
    }

    /// How the policies see `f`: one extent, at its place on the modelled volume, or at offset 0
    /// of an unplaced one (as [`foresight_policy::Layout::unplaced`] lists files).
    fn file_layout(f: &FileState) -> FileLayout {
        // A policy never hears of an empty file (every read of it ends before the policy is
        // asked), so it is listed as one byte: the layout has no zero-length extents.
        let size = ByteLen(f.size_bytes.max(1));
        FileLayout {
            size,
            extents: vec![Extent {
                file_offset: ByteOffset(0),
                volume_offset: ByteOffset(f.volume_offset_bytes.unwrap_or(0)),
                len: size,
            }],
            metadata: None,
        }
    }

    fn chunk(&self, id: u32) -> &Chunk {
        self.chunks[id as usize].as_ref().expect("a live chunk")
    }

    fn chunk_mut(&mut self, id: u32) -> &mut Chunk {
        self.chunks[id as usize].as_mut().expect("a live chunk")
    }
}

#[derive(Clone, Copy, Debug)]
struct ChunkSpec {
    fetch: Option<FetchId>,
    prefetched: bool,
    owner: Option<StreamId>,
    for_stream: Option<StreamId>,
    /// The reader the device read is charged to.
    reader: Option<StreamId>,
    urgent: bool,
    may_evict: bool,
}

#[cfg(test)]
mod testutil;
