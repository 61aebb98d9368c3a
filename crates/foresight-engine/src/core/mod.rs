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

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io;
use std::sync::{Arc, Condvar};

use foresight_core::{ByteLen, ByteOffset, ByteRange, Extent, FetchId, FileId, Instant, StreamId};
use foresight_policy::layout::FileLayout;
use foresight_policy::{Input, Output, Policy, PAGE_BYTES};

use crate::backend::{FileHandle, IoBackend, IoCompletion, IoRequest};
use crate::buffer::{AlignedBuf, ALIGN_BYTES};
use crate::pool::{BufferPool, Purpose};
use crate::stats::Stats;

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
#[derive(Clone, Copy, Debug)]
pub(crate) struct CoreConfig {
    pub memory_bytes: u64,
    pub queue_depth: usize,
    pub max_io_bytes: u64,
    /// Map and fault in the whole budget at the start (see `EngineBuilder::prefault`).
    pub prefault: bool,
}

/// What tells two opened files apart: device, inode, size and modification time.
type FileKey = (u64, u64, u64, Option<std::time::SystemTime>);

/// The driver state. See the module documentation.
pub(crate) struct Core {
    policy: Box<dyn Policy>,
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
    /// Readers whose deferred read waits for the policy to fetch its bytes; woken whenever the
    /// policy's fetches change or the engine falls idle. At most one entry per stream.
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

impl Core {
    pub(crate) fn new(
        policy: Box<dyn Policy>,
        backend: Arc<dyn IoBackend>,
        cfg: CoreConfig,
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
            let _ = pool.prefault();
        }
        let stats = Stats {
            backend: backend.kind(),
            memory_limit_bytes: cfg.memory_bytes,
            ..Stats::default()
        };
        Core {
            policy,
            backend,
            cfg,
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

    // ---- files and streams ----------------------------------------------------------------

    /// The id the next new file gets: a forgotten file's, or a new one.
    pub(crate) fn next_file_id(&self) -> FileId {
        FileId(
            self.free_files
                .front()
                .copied()
                .unwrap_or(self.files.len() as u32),
        )
    }

    /// Registers an opened file (or recognises one opened before) and a new stream reading it, in
    /// a free stream slot if there is one. Returns the file, the stream, the stream's open
    /// sequence number and the file's size.
    pub(crate) fn open(&mut self, mut handle: FileHandle) -> (FileId, StreamId, u64, u64) {
        let key = (
            handle.identity.0,
            handle.identity.1,
            handle.size_bytes,
            handle.modified,
        );
        let file = match self.identities.get(&key) {
            Some(&f) => {
                // The file is known: the handle's id and place are not kept, and a backend that
                // placed the file there (the array cache) forgets that placement.
                self.backend
                    .file_forgotten(handle.id, handle.volume_offset_bytes);
                let st = &mut self.files[f.0 as usize];
                if st.handle.is_none() {
                    // The file was closed by all its readers and is open again: the new
                    // descriptor takes the file's id and place, not the id it was opened under.
                    handle.id = f;
                    handle.volume_offset_bytes = st.volume_offset_bytes;
                    st.handle = Some(Arc::new(handle));
                }
                f
            }
            None => {
                assert_eq!(handle.id, self.next_file_id(), "opened with a stale id");
                let f = handle.id;
                if handle.direct {
                    self.stats.files_direct += 1;
                } else {
                    self.stats.files_buffered += 1;
                }
                let st = FileState {
                    key,
                    remembered: true,
                    size_bytes: handle.size_bytes,
                    volume_offset_bytes: handle.volume_offset_bytes,
                    handle: Some(Arc::new(handle)),
                    chunks: BTreeMap::new(),
                    live_chunks: 0,
                    readers: 0,
                    deferred: Vec::new(),
                    last_reader: None,
                };
                if self.free_files.front() == Some(&f.0) {
                    self.free_files.pop_front();
                    self.files[f.0 as usize] = st;
                } else {
                    self.files.push(st);
                }
                self.identities.insert(key, f);
                // Only the new file goes to the policy: rebuilding the whole layout on every new
                // file made opening n distinct files take time quadratic in n.
                let added = Self::file_layout(&self.files[f.0 as usize]);
                self.policy.add_file(f, added);
                f
            }
        };
        let st = &mut self.files[file.0 as usize];
        st.readers += 1;
        let size = st.size_bytes;
        self.opens += 1;
        let open_seq = self.opens;
        let state = StreamState {
            waits_for_memory: false,
            waiting_on: None,
            open: true,
            file,
            errors: VecDeque::new(),
            deferred: false,
            read: (0, 0),
            delivered: Vec::new(),
            open_seq,
            hinted_reads_left: 0,
            lapsed: false,
            read_at: None,
            read_end_at: None,
            gaps_ns: [0; THINK_SAMPLES],
            gaps_seen: 0,
        };
        let stream = StreamId(foresight_core::take_slot(
            &mut self.streams,
            &mut self.free_streams,
            state,
        ));
        // Every remembered file has a reader (at most one file per open stream) or a chunk whose
        // read is in flight (its last reader closed, which dropped its other chunks).
        let remembered = self.files.len() - self.free_files.len() - self.forgotten.len();
        let open_streams = self.streams.len() - self.free_streams.len();
        assert!(
            remembered <= open_streams + self.in_flight,
            "{remembered} files remembered with {open_streams} streams open and {} reads in flight",
            self.in_flight
        );
        (file, stream, open_seq, size)
    }

    /// Forgets `file` once nothing needs it: no reader, and no chunk cached, queued or in flight.
    /// Its identity goes at once, so a later open of the same file is a new file with nothing
    /// cached; its slot goes to a later new file once the policy has been told, so the policy
    /// never hears of the new file before it has forgotten the old one.
    fn forget_if_idle(&mut self, file: FileId) {
        let f = &mut self.files[file.0 as usize];
        if !f.remembered || f.readers > 0 || f.live_chunks > 0 {
            return;
        }
        f.remembered = false;
        f.handle = None;
        f.chunks = BTreeMap::new();
        f.deferred = Vec::new();
        let key = f.key;
        self.identities.remove(&key);
        self.forgotten.push(file);
    }

    /// Closes a stream: it lets go of its claims, waits and errors, the policy forgets it, and its
    /// slot is freed for the next open. When its file has no reader left, drops the file's chunks
    /// and queued reads.
    pub(crate) fn close(&mut self, now: Instant, stream: StreamId) {
        let st = &mut self.streams[stream.0 as usize];
        assert!(st.open, "{stream} closed twice");
        st.open = false;
        st.errors.clear();
        st.waiting_on = None;
        st.waits_for_memory = false;
        let file = st.file;
        st.hinted_reads_left = 0;
        self.undefer(stream);
        self.release_claims(stream);
        // Nothing may still name the stream once its id can be handed out again: a demand read
        // of it that fails later must not report to the next stream in the slot, and a waiter
        // entry left by a spurious wake-up must not wake (or be counted for) the new one.
        let ids: Vec<u32> = self.files[file.0 as usize]
            .chunks
            .values()
            .copied()
            .collect();
        for id in ids {
            let c = self.chunk_mut(id);
            if c.owner == Some(stream) {
                c.owner = None;
            }
            if c.reader == Some(stream) {
                c.reader = None;
            }
            c.waiters.retain(|(s, _)| *s != stream);
        }
        // Its reads still waiting for a slot carry its id to the backend too; the next reader in
        // the slot did not ask for them. (Reads already submitted keep it: the backend has them.)
        for r in self.urgent.iter_mut().chain(self.ahead.iter_mut()) {
            if r.reader == Some(stream) {
                r.reader = None;
            }
        }
        self.memory_waiters.retain(|(s, _, _)| *s != stream);
        self.defer_waiters.retain(|(s, _)| *s != stream);
        // The policy drops what it keeps for the stream before the id can name another, and so
        // does a backend that keeps figures per reader.
        self.policy.handle(now, Input::StreamClosed { stream });
        self.backend.reader_closed(stream);
        self.free_streams.push(stream.0);
        let f = &mut self.files[file.0 as usize];
        f.readers -= 1;
        // The slot may go to a reader of another file, which must not be charged for this one.
        if f.last_reader == Some(stream) {
            f.last_reader = None;
        }
        if f.readers == 0 {
            let ids: Vec<u32> = f.chunks.values().copied().collect();
            f.chunks.clear();
            f.handle = None;
            for id in ids {
                let c = self.chunk_mut(id);
                c.doomed = true;
                if matches!(c.state, State::Ready { .. }) && c.pins == 0 {
                    self.free_chunk(id);
                }
            }
            // Reads of the file still waiting for a slot are dropped now; in-flight ones free
            // their chunk when they complete.
            self.drop_queued(|c| c.file == file);
            self.wake_memory_waiters();
            self.forget_if_idle(file);
        }
        self.run_policy(now, None);
        self.dispatch();
    }

    /// Whether `stream` is open, reads `file`, and is the open numbered `open_seq` (not a later
    /// stream given the same slot).
    pub(crate) fn stream_reads(&self, stream: StreamId, file: FileId, open_seq: u64) -> bool {
        self.streams
            .get(stream.0 as usize)
            .is_some_and(|s| s.open && s.file == file && s.open_seq == open_seq)
    }

    /// Slots in the stream table: the most streams ever open at once.
    pub(crate) fn stream_slots(&self) -> usize {
        self.streams.len()
    }

    /// Slots in the file table.
    pub(crate) fn file_slots(&self) -> usize {
        self.files.len()
    }

    /// Files remembered now: open, or with chunks cached or in flight.
    pub(crate) fn files_remembered(&self) -> usize {
        self.identities.len()
    }

    /// The descriptor a file is read through while it is open.
    pub(crate) fn file_handle(&self, file: FileId) -> Option<Arc<FileHandle>> {
        self.files[file.0 as usize].handle.clone()
    }

    /// Size of a file at open.
    pub(crate) fn file_size(&self, file: FileId) -> u64 {
        self.files[file.0 as usize].size_bytes
    }

    // ---- the read path --------------------------------------------------------------------

    fn covering(&self, file: FileId, page: u64) -> Option<u32> {
        let f = &self.files[file.0 as usize];
        let (_, &id) = f.chunks.range(..=page).next_back()?;
        (self.chunk(id).end_page > page).then_some(id)
    }

    /// The first page in `[first, last]` no chunk covers.
    fn first_uncovered(&self, file: FileId, first: u64, last: u64) -> Option<u64> {
        let mut p = first;
        while p <= last {
            match self.covering(file, p) {
                Some(id) => p = self.chunk(id).end_page,
                None => return Some(p),
            }
        }
        None
    }

    /// The start of a read `[pos, end)` by `stream`: tells the policy, executes its fetches, and
    /// issues demand reads for what is still uncovered (as far as memory allows).
    pub(crate) fn begin_read(
        &mut self,
        now: Instant,
        stream: StreamId,
        file: FileId,
        pos: u64,
        end: u64,
    ) {
        debug_assert!(pos < end && end <= self.file_size(file));
        self.stats.app_reads += 1;
        // Errors kept from earlier reads matter only if this read reaches their bytes.
        self.streams[stream.0 as usize]
            .errors
            .retain(|(s, e, _)| *s < end && *e > pos);
        let first = pos / PAGE_BYTES;
        let last = (end - 1) / PAGE_BYTES;
        let miss = self
            .first_uncovered(file, first, last)
            .map(|p| ByteOffset((p * PAGE_BYTES).max(pos)));
        self.undefer(stream);
        let st = &mut self.streams[stream.0 as usize];
        st.read = (pos, end);
        st.lapsed = false;
        st.read_at = Some(now);
        if let Some(end) = st.read_end_at.take() {
            st.gaps_ns[(st.gaps_seen % THINK_SAMPLES as u64) as usize] =
                now.0.saturating_sub(end.0);
            st.gaps_seen += 1;
        }
        st.hinted_reads_left = st.hinted_reads_left.saturating_sub(1);
        self.files[file.0 as usize].last_reader = Some(stream);
        self.policy.handle(
            now,
            Input::Read {
                stream,
                file,
                range: ByteRange::new(pos, end - pos),
                miss,
            },
        );
        self.run_policy(now, Some((stream, file, first, last)));
        if self.streams[stream.0 as usize].deferred {
            // What is there now, the policy's fetches included, is delivered.
            let from_page = self
                .covering(file, first)
                .map_or(first, |id| self.chunk(id).first_page);
            let spans: Vec<(u64, u64)> = self.files[file.0 as usize]
                .chunks
                .range(from_page..=last)
                .map(|(_, &id)| {
                    let c = self.chunk(id);
                    (c.start_bytes(), c.end_page * PAGE_BYTES)
                })
                .collect();
            for (from, to) in spans {
                self.note_delivered(stream, from, to);
            }
        } else {
            self.demand(stream, file, pos, end);
        }
        self.dispatch();
    }

    /// Whether the reader of `stream` should wait for the policy's fetches rather than read the
    /// missing byte at `pos` on demand. The deferral ends, and the read falls back to demand
    /// reads, when a fetch delivered that byte since the read was deferred (a byte delivered and
    /// missing again will not be fetched again), or when the engine has stayed idle for
    /// [`DEFER_GRACE_NS`] ([`DEFER_PATIENCE_NS`] while another stream has promised, by its hints,
    /// to read on; not at all when no other stream may read at once, as when all think between
    /// reads: [`Core::idle_wait_ns`]): nothing in flight or queued, no fetch of the policy's
    /// under way, and no read handed to the backend, so nothing the policy might fetch for it is
    /// coming. A deferral ended so ends every other deferral too, as the simulator sends all its
    /// parked reads to the disk at the end of an idle instant. While
    /// anything is in flight the reader waits (any completion may let the policy fetch, as the
    /// simulator's parked reads wait while anything is in flight in its page cache); while the
    /// engine is idle it waits out the rest of the grace period. A waiting reader is registered
    /// to be woken when the fetches change or the engine falls idle.
    pub(crate) fn defer_wait(
        &mut self,
        now: Instant,
        stream: StreamId,
        pos: u64,
        cv: &Arc<Condvar>,
    ) -> DeferWait {
        let st = &self.streams[stream.0 as usize];
        if !st.deferred {
            return DeferWait::Demand;
        }
        if st.delivered.iter().any(|&(s, e)| s <= pos && pos < e) {
            self.undefer(stream);
            return DeferWait::Demand;
        }
        let wait = if self.busy() {
            self.quiet = None;
            DeferWait::Woken
        } else {
            let since = match self.quiet {
                Some((submitted, since)) if submitted == self.submitted => since,
                _ => {
                    self.quiet = Some((self.submitted, now));
                    now
                }
            };
            let idle_ns = now.0.saturating_sub(since.0);
            let grace_ns = self.idle_wait_ns(stream);
            let patient = grace_ns == DEFER_PATIENCE_NS;
            if idle_ns >= grace_ns {
                if patient {
                    // Those that promised to read on and have not since the engine fell idle
                    // broke the promise: it costs one patience, not one per deferred read.
                    for (i, st) in self.streams.iter_mut().enumerate() {
                        let idle_since = st.read_at.is_none_or(|at| at <= since);
                        if i != stream.0 as usize && Self::reads_on(st) && idle_since {
                            st.lapsed = true;
                        }
                    }
                }
                // Every deferred read ends now, not only the first to look: the simulator sends
                // all its parked reads to the disk at the end of an idle instant, whereas here the
                // others, woken when the engine fell idle, would find it busy with this reader's
                // demand read and wait for the next idle moment, so a stream that reads on demand
                // between them would get the disk once per deferred read the others get.
                let deferred: Vec<StreamId> = (0..self.streams.len())
                    .filter(|&i| self.streams[i].deferred)
                    .map(|i| StreamId(i as u32))
                    .collect();
                for s in deferred {
                    self.undefer(s);
                }
                self.wake_defer_waiters();
                return DeferWait::Demand;
            }
            // Looked at again at least every short grace period: the reader that promised to
            // read on may stop waiting for nothing, or run out of disclosed reads, meanwhile.
            DeferWait::AtMost((grace_ns - idle_ns).min(DEFER_GRACE_NS))
        };
        if !self.defer_waiters.iter().any(|(s, _)| *s == stream) {
            self.defer_waiters.push((stream, cv.clone()));
        }
        assert!(
            self.defer_waiters.len() <= self.streams.len(),
            "more deferred readers than streams"
        );
        wait
    }

    /// How long a deferred read of `stream` waits for the idle engine before it reads on demand,
    /// by what the other streams may do. Another stream that may read at once (open, neither
    /// deferred nor waiting for memory, and not thinking between reads: [`THINK_SAMPLES`]) may
    /// let the policy fetch: [`DEFER_PATIENCE_NS`] if one has promised, by hints it has not
    /// lapsed on, to read on, [`DEFER_GRACE_NS`] otherwise. When no other stream may, nothing
    /// will make the policy fetch, and the read waits no more: the simulator's parked reads go to
    /// the disk once nothing is in flight at the end of an instant, and its clients that think,
    /// as all whose reads are parked, read nothing at that instant. Asked only while the engine is
    /// idle, when no chunk is in flight, so a stream still marked as waiting for one has been
    /// woken and not yet run (a descheduled thread on a loaded host): it is about to read on too.
    fn idle_wait_ns(&self, stream: StreamId) -> u64 {
        debug_assert!(!self.busy(), "asked while reads are in flight");
        let mut wait_ns = 0;
        for (i, st) in self.streams.iter().enumerate() {
            if i == stream.0 as usize || !Self::may_read_at_once(st) {
                continue;
            }
            if Self::reads_on(st) {
                return DEFER_PATIENCE_NS;
            }
            wait_ns = DEFER_GRACE_NS;
        }
        wait_ns
    }

    /// Whether `st` is open, free to read (neither deferred nor waiting for memory), and reads
    /// again at once rather than thinking between reads (see [`THINK_SAMPLES`]).
    fn may_read_at_once(st: &StreamState) -> bool {
        st.open && !st.deferred && !st.waits_for_memory && !Self::thinks(st)
    }

    /// Whether `st` may read at once and has promised, by hints it has not yet lapsed on, to
    /// read on.
    fn reads_on(st: &StreamState) -> bool {
        Self::may_read_at_once(st) && st.hinted_reads_left > 0 && !st.lapsed
    }

    /// Whether `st` has had a gap between reads and each of its last [`THINK_SAMPLES`] (or all
    /// it has had, if fewer) lasted at least [`DEFER_GRACE_NS`]. One gap decides at first, so
    /// that a stream that thinks keeps no deferred read waiting past its second read.
    fn thinks(st: &StreamState) -> bool {
        let seen = st.gaps_seen.min(THINK_SAMPLES as u64) as usize;
        seen > 0
            && st.gaps_ns[..seen]
                .iter()
                .all(|&gap_ns| gap_ns >= DEFER_GRACE_NS)
    }

    /// Whether anything is in flight or queued, or the policy has a fetch under way or a
    /// completion it has not heard of.
    fn busy(&self) -> bool {
        self.in_flight > 0
            || !self.urgent.is_empty()
            || !self.ahead.is_empty()
            || !self.fetches.is_empty()
            || !self.done_now.is_empty()
    }

    /// Marks `stream`'s current read deferred.
    fn defer(&mut self, stream: StreamId) {
        let st = &mut self.streams[stream.0 as usize];
        if st.deferred {
            return;
        }
        st.deferred = true;
        st.delivered.clear();
        let file = st.file;
        self.files[file.0 as usize].deferred.push(stream);
    }

    /// Ends the deferral of `stream`'s current read, if it has one.
    fn undefer(&mut self, stream: StreamId) {
        let st = &mut self.streams[stream.0 as usize];
        if !st.deferred {
            return;
        }
        st.deferred = false;
        st.delivered.clear();
        let file = st.file;
        self.files[file.0 as usize]
            .deferred
            .retain(|&s| s != stream);
    }

    /// Records that bytes `[from, to)` of the file `stream` reads have been delivered to its
    /// deferred read (clipped to the read).
    fn note_delivered(&mut self, stream: StreamId, from: u64, to: u64) {
        let st = &mut self.streams[stream.0 as usize];
        let (from, to) = (from.max(st.read.0), to.min(st.read.1));
        if from >= to {
            return;
        }
        // Joined with every range it meets or touches, so the list stays sorted and disjoint.
        let v = &mut st.delivered;
        let i = v.partition_point(|&(_, e)| e < from);
        let j = v.partition_point(|&(s, _)| s <= to);
        let (mut lo, mut hi) = (from, to);
        if i < j {
            lo = lo.min(v[i].0);
            hi = hi.max(v[j - 1].1);
        }
        v.splice(i..j, [(lo, hi)]);
    }

    /// Wakes every waiting reader, whatever it waits for: the engine broke, and each returns
    /// the error.
    pub(crate) fn wake_every_waiter(&self) {
        let chunk_waiters = self.chunks.iter().flatten().flat_map(|c| c.waiters.iter());
        for (_, cv) in chunk_waiters.chain(self.defer_waiters.iter()) {
            cv.notify_all();
        }
        for (_, cv, _) in &self.memory_waiters {
            cv.notify_all();
        }
    }

    /// Wakes every reader whose deferred read waits for the policy's fetches: a fetch started or
    /// ended, so each looks again.
    fn wake_defer_waiters(&mut self) {
        for (_, cv) in self.defer_waiters.drain(..) {
            cv.notify_one();
        }
    }

    /// Issues demand reads for the uncovered pages of `[pos, end)`, stopping when memory runs
    /// out. Only the read of the page holding `pos` may evict to make room: evicting for bytes
    /// further on could take the very chunk the reader needs next. Returns whether the page
    /// holding `pos` is now covered.
    pub(crate) fn demand(&mut self, stream: StreamId, file: FileId, pos: u64, end: u64) -> bool {
        let last = (end - 1) / PAGE_BYTES;
        let cursor_page = pos / PAGE_BYTES;
        let mut p = cursor_page;
        let max_pages = self.cfg.max_io_bytes / PAGE_BYTES;
        while let Some(start) = self.first_uncovered(file, p, last) {
            let next = self.files[file.0 as usize]
                .chunks
                .range(start..)
                .next()
                .map(|(&k, _)| k)
                .unwrap_or(u64::MAX);
            let run_end = (last + 1).min(next).min(start + max_pages);
            let spec = ChunkSpec {
                fetch: None,
                prefetched: false,
                owner: Some(stream),
                for_stream: Some(stream),
                reader: Some(stream),
                urgent: true,
                may_evict: start == cursor_page,
            };
            if self
                .new_chunk(file, start, run_end, spec, Purpose::Demand)
                .is_none()
            {
                break;
            }
            self.stats.demand_reads += 1;
            p = run_end;
        }
        self.dispatch();
        self.covering(file, pos / PAGE_BYTES).is_some()
    }

    /// What covers byte `pos` of `file`.
    pub(crate) fn find(&self, file: FileId, pos: u64) -> Found {
        match self.covering(file, pos / PAGE_BYTES) {
            None => Found::Missing,
            Some(id) => {
                let c = self.chunk(id);
                match &c.state {
                    State::InFlight => Found::InFlight { chunk: id },
                    State::Ready { valid_bytes, .. } => Found::Ready {
                        chunk: id,
                        chunk_start: c.start_bytes(),
                        valid_end: c.start_bytes() + valid_bytes,
                    },
                }
            }
        }
    }

    /// Whether a failed demand read of `stream` covers `pos`.
    pub(crate) fn has_error(&self, stream: StreamId, pos: u64) -> bool {
        self.streams[stream.0 as usize]
            .errors
            .iter()
            .any(|(s, e, _)| *s <= pos && pos < *e)
    }

    /// Takes the error of a failed demand read of `stream` that covers `pos`, if any.
    pub(crate) fn take_error(&mut self, stream: StreamId, pos: u64) -> Option<io::Error> {
        let errs = &mut self.streams[stream.0 as usize].errors;
        let i = errs.iter().position(|(s, e, _)| *s <= pos && pos < *e)?;
        errs.remove(i).map(|(_, _, e)| e)
    }

    /// Pins a filled chunk for copying outside the lock and returns its buffer.
    pub(crate) fn pin(&mut self, id: u32) -> Arc<AlignedBuf> {
        self.lru_remove(id);
        let c = self.chunk_mut(id);
        c.pins += 1;
        match &c.state {
            State::Ready { buf, .. } => buf.clone(),
            State::InFlight => panic!("pinned a chunk in flight"),
        }
    }

    /// Unpins a chunk after `stream`'s reader copied `[from, to)` of the file out of it; frees the
    /// chunk once it has been read to its end.
    pub(crate) fn unpin(&mut self, stream: StreamId, id: u32, from: u64, to: u64) {
        // Bytes that just arrived whole are no longer failed: an error kept for them from an
        // earlier read (one that stopped before them) would otherwise be reported by a later
        // read that finds them missing again.
        self.streams[stream.0 as usize]
            .errors
            .retain(|(s, e, _)| *e <= from || to <= *s);
        let c = self.chunk_mut(id);
        assert!(c.pins > 0, "unpinned a chunk that was not pinned");
        c.pins -= 1;
        let start = c.start_bytes();
        let State::Ready { valid_bytes, .. } = c.state else {
            panic!("a pinned chunk went back in flight")
        };
        if c.prefetched {
            let fresh = self.chunk_mut(id).mark_read(from, to, valid_bytes);
            self.stats.prefetch_used_bytes += fresh;
        }
        let c = self.chunk_mut(id);
        c.for_stream = None;
        if from - start <= c.consumed_bytes {
            c.consumed_bytes = c.consumed_bytes.max(to - start);
        }
        if c.consumed_bytes >= valid_bytes {
            c.doomed = true;
        }
        if c.pins == 0 {
            if c.doomed {
                self.free_chunk(id);
            } else {
                let class = c.unclaimed_class();
                self.lru_insert(id, class);
                self.wake_memory_waiters();
            }
        }
    }

    /// Records that a `read` by `stream` returned `bytes` after waiting `stall_ns` (0 if it never
    /// waited); `early` if it ended before the bytes it asked for.
    pub(crate) fn end_read(
        &mut self,
        now: Instant,
        stream: StreamId,
        bytes: u64,
        stall_ns: u64,
        early: bool,
    ) {
        self.streams[stream.0 as usize].read_end_at = Some(now);
        if early {
            self.release_claims(stream);
        }
        self.undefer(stream);
        self.defer_waiters.retain(|(s, _)| *s != stream);
        self.stats.app_bytes += bytes;
        if stall_ns > 0 {
            self.stats.stalls += 1;
            self.stats.stall_ns += stall_ns;
        }
        self.dispatch();
    }

    /// Registers `stream`'s `cv` to be notified when chunk `id` completes.
    pub(crate) fn wait_for_chunk(&mut self, id: u32, stream: StreamId, cv: &Arc<Condvar>) {
        let c = self.chunk_mut(id);
        if !c.waiters.iter().any(|(_, w)| Arc::ptr_eq(w, cv)) {
            c.waiters.push((stream, cv.clone()));
        }
        self.streams[stream.0 as usize].waiting_on = Some(id);
    }

    /// Takes `stream` off every wait list, for a reader whose read deadline passed: a memory
    /// waiter left at the head of the queue would hold up the readers behind it.
    pub(crate) fn stop_waiting(&mut self, stream: StreamId, cv: &Arc<Condvar>) {
        let st = &mut self.streams[stream.0 as usize];
        st.waits_for_memory = false;
        if let Some(id) = st.waiting_on.take() {
            if let Some(c) = self.chunks.get_mut(id as usize).and_then(Option::as_mut) {
                c.waiters.retain(|(_, w)| !Arc::ptr_eq(w, cv));
            }
        }
        self.memory_waiters.retain(|(s, _, _)| *s != stream);
        self.defer_waiters.retain(|(s, _)| *s != stream);
        // The memory this reader waited for may serve the next one.
        self.wake_memory_waiters();
    }

    /// Notes that `stream` stopped waiting (diagnostics).
    pub(crate) fn woke(&mut self, stream: StreamId) {
        self.streams[stream.0 as usize].waiting_on = None;
    }

    /// Gives up `stream`'s claims on the chunks of its file: they become evictable by anyone.
    /// Called when the stream's read ended before the chunks read for it were copied (the end of
    /// a truncated file, an error) and when the stream closes.
    fn release_claims(&mut self, stream: StreamId) {
        let file = self.streams[stream.0 as usize].file;
        let ids: Vec<u32> = self.files[file.0 as usize]
            .chunks
            .values()
            .copied()
            .filter(|&id| self.chunk(id).for_stream == Some(stream))
            .collect();
        for id in ids {
            let c = self.chunk_mut(id);
            c.for_stream = None;
            if matches!(c.lru, Some((Lru::Claimed, _))) {
                let class = c.unclaimed_class();
                self.lru_insert(id, class);
            }
        }
        self.wake_memory_waiters();
    }

    /// Registers `cv` to be notified when memory for a demand read of `[pos, end)` may be had.
    pub(crate) fn wait_for_memory(
        &mut self,
        stream: StreamId,
        cv: &Arc<Condvar>,
        pos: u64,
        end: u64,
    ) {
        self.stats.memory_waits += 1;
        let first = pos / PAGE_BYTES;
        let need = ((end - 1) / PAGE_BYTES + 1 - first).min(self.cfg.max_io_bytes / PAGE_BYTES)
            * PAGE_BYTES;
        let st = &mut self.streams[stream.0 as usize];
        if !st.waits_for_memory {
            st.waits_for_memory = true;
            self.memory_waiters.push_back((stream, cv.clone(), need));
        }
        assert!(
            self.memory_waiters.len() <= self.streams.len(),
            "more memory waiters than streams"
        );
    }

    // ---- hints and timers -----------------------------------------------------------------

    /// Passes disclosed future reads to the policy.
    pub(crate) fn hint(
        &mut self,
        now: Instant,
        stream: StreamId,
        file: FileId,
        ranges: Vec<ByteRange>,
    ) {
        let st = &mut self.streams[stream.0 as usize];
        st.hinted_reads_left = st.hinted_reads_left.saturating_add(ranges.len() as u64);
        self.policy.handle(
            now,
            Input::Hint {
                stream,
                file,
                ranges,
            },
        );
        self.run_policy(now, None);
        self.dispatch();
    }

    /// When the policy wants its timer.
    pub(crate) fn policy_wake(&self) -> Option<Instant> {
        self.policy_wake
    }

    /// Runs the policy's timer.
    pub(crate) fn timeout(&mut self, now: Instant) {
        self.policy.handle_timeout(now);
        self.run_policy(now, None);
        self.dispatch();
    }

    // ---- the policy -----------------------------------------------------------------------

    /// Executes everything the policy has to say, feeding back immediate completions and memory
    /// pressure. `trigger` is the page span of the read that prompted it: pages fetched inside it
    /// are the application's, not prefetched.
    fn run_policy(&mut self, now: Instant, mut trigger: Option<(StreamId, FileId, u64, u64)>) {
        let mut short_told = false;
        // Whether memory cut a fetch short since the policy was last told. It outlives the round
        // that saw it: a fetch refused whole completes at once (`done_now`), and the policy hears
        // that completion first and the shortage after it, as the simulator tells it.
        let mut cut_short = false;
        let reader = trigger;
        let mut fetches_changed = false;
        // Fetches of the triggering read's file, for the read if the policy defers it after them.
        let mut fetched_here: Vec<(u64, u64)> = Vec::new();
        loop {
            while let Some(out) = self.policy.poll_output() {
                match out {
                    Output::Fetch {
                        id, file, range, ..
                    } => {
                        self.stats.fetches += 1;
                        // Delivered as far as the policy knows, whatever memory or the device
                        // make of it.
                        let span = (range.start.0, range.start.0.saturating_add(range.len.0));
                        if let Some(f) = self.files.get(file.0 as usize) {
                            for s in f.deferred.clone() {
                                self.note_delivered(s, span.0, span.1);
                            }
                        }
                        if reader.is_some_and(|(_, f, _, _)| f == file) {
                            fetched_here.push(span);
                        }
                        // Readahead is issued in the context of the reading process, as Linux
                        // issues it; outside any read it is the file's last reader's.
                        let charge = reader.map(|(s, ..)| s).or_else(|| {
                            self.files.get(file.0 as usize).and_then(|f| f.last_reader)
                        });
                        let (parts, short) = self.fetch(id, file, range, trigger, charge);
                        cut_short |= short;
                        fetches_changed = true;
                        if parts == 0 {
                            self.done_now.push_back((id, !short));
                        } else {
                            self.fetches.insert(
                                id,
                                FetchState {
                                    parts_left: parts,
                                    ok: !short,
                                },
                            );
                        }
                    }
                    Output::Cancel { id } => self.cancel(id),
                    Output::Release { file, range } => self.release(file, range),
                    // The read that prompted this waits for the policy's fetches (the stream
                    // scheduler queues it for its stream's turn) instead of reading on demand.
                    Output::Defer { file, .. } => {
                        if let Some((stream, f, _, _)) = reader {
                            if f == file && !self.streams[stream.0 as usize].deferred {
                                self.defer(stream);
                                for &(from, to) in &fetched_here {
                                    self.note_delivered(stream, from, to);
                                }
                            }
                        }
                    }
                    // The engine reads one device; there is no tier copy to drop.
                    Output::Evict { .. } => {}
                }
            }
            if let Some((id, ok)) = self.done_now.pop_front() {
                self.policy.handle(now, Input::Fetched { id, ok });
                trigger = None;
                continue;
            }
            // After the `Fetched` of the file's last fetches, which settle as its last chunks go.
            if let Some(file) = self.forgotten.pop() {
                self.policy.handle(now, Input::FileClosed { file });
                // So does a backend that keeps state per placed file, before the id is free.
                let at = self.files[file.0 as usize].volume_offset_bytes;
                self.backend.file_forgotten(file, at);
                self.free_files.push_back(file.0);
                trigger = None;
                continue;
            }
            if cut_short && !short_told {
                short_told = true;
                self.stats.memory_pressure_events += 1;
                self.policy.handle(
                    now,
                    Input::MemoryPressure {
                        available: ByteLen(self.pool.prefetch_available_bytes()),
                    },
                );
                continue;
            }
            break;
        }
        if fetches_changed && !self.defer_waiters.is_empty() {
            self.wake_defer_waiters();
        }
        let wake = self.policy.poll_timeout();
        if wake != self.policy_wake {
            self.policy_wake = wake;
            self.timer.notify_one();
        }
    }

    /// Creates chunks for the uncovered pages of a fetch. Returns the chunks created and whether
    /// memory cut the fetch short.
    fn fetch(
        &mut self,
        id: FetchId,
        file: FileId,
        range: ByteRange,
        trigger: Option<(StreamId, FileId, u64, u64)>,
        charge: Option<StreamId>,
    ) -> (u32, bool) {
        let Some(f) = self.files.get(file.0 as usize) else {
            return (0, false);
        };
        if f.readers == 0 || range.is_empty() {
            return (0, false);
        }
        let end = range.end().0.min(f.size_bytes);
        if range.start.0 >= end {
            return (0, false);
        }
        let first = range.start.0 / PAGE_BYTES;
        let last = (end - 1) / PAGE_BYTES;
        let max_pages = self.cfg.max_io_bytes / PAGE_BYTES;
        let mut parts = 0;
        let mut p = first;
        while let Some(start) = self.first_uncovered(file, p, last) {
            let next = self.files[file.0 as usize]
                .chunks
                .range(start..)
                .next()
                .map(|(&k, _)| k)
                .unwrap_or(u64::MAX);
            let mut run_end = (last + 1).min(next).min(start + max_pages);
            // Split at the end of the triggering read, so each chunk is wholly the application's
            // or wholly ahead of it.
            let inside = match trigger {
                Some((ts, tf, tfirst, tlast))
                    if tf == file && start >= tfirst && start <= tlast =>
                {
                    run_end = run_end.min(tlast + 1);
                    Some(ts)
                }
                _ => None,
            };
            let spec = ChunkSpec {
                fetch: Some(id),
                prefetched: inside.is_none(),
                owner: None,
                for_stream: inside,
                reader: charge,
                urgent: inside.is_some(),
                // A prefetch may take memory from data already used (oldest first); a fetch under
                // the reader's request uses only free memory (demand fills what it leaves).
                may_evict: inside.is_none(),
            };
            let purpose = if inside.is_some() {
                Purpose::Demand
            } else {
                Purpose::Prefetch
            };
            if self
                .new_chunk(file, start, run_end, spec, purpose)
                .is_none()
            {
                return (parts, true);
            }
            parts += 1;
            p = run_end;
        }
        (parts, false)
    }

    fn cancel(&mut self, id: FetchId) {
        if self.fetches.remove(&id).is_none() {
            return;
        }
        self.drop_queued(|c| c.fetch == Some(id));
        self.wake_memory_waiters();
        // A deferred read may have waited for this very fetch; with it gone, it looks again (and
        // reads on demand if nothing else is under way). Its completion, if it is in flight, no
        // longer settles a fetch, so it wakes no one.
        self.wake_defer_waiters();
    }

    /// Drops the reads still waiting for a submission slot whose chunk `doomed` picks: their
    /// buffers go back to the pool and their chunk records are forgotten. Reads already submitted
    /// are left to complete.
    fn drop_queued(&mut self, doomed: impl Fn(&Chunk) -> bool) {
        for q in [true, false] {
            let queue = if q { &mut self.urgent } else { &mut self.ahead };
            let mut kept = VecDeque::with_capacity(queue.len());
            let mut dropped = Vec::new();
            for r in queue.drain(..) {
                let hit = self.chunks[r.token as usize].as_ref().is_some_and(&doomed);
                if hit {
                    dropped.push(r);
                } else {
                    kept.push_back(r);
                }
            }
            *queue = kept;
            for r in dropped {
                self.pool.free(r.buf);
                self.drop_chunk_record(r.token as u32);
            }
        }
    }

    fn release(&mut self, file: FileId, range: ByteRange) {
        let Some(f) = self.files.get(file.0 as usize) else {
            return;
        };
        // Whole pages of the range go. A range that reaches the end of the file covers its last,
        // partial page: that chunk holds no bytes past the end.
        let first = range.start.0.div_ceil(PAGE_BYTES);
        let end = if range.end().0 >= f.size_bytes {
            f.size_bytes.div_ceil(PAGE_BYTES)
        } else {
            range.end().0 / PAGE_BYTES
        };
        if first >= end {
            return;
        }
        // Chunks that start before the range may reach into it.
        let from = f
            .chunks
            .range(..first)
            .next_back()
            .map_or(first, |(&k, _)| k);
        let ids: Vec<u32> = f.chunks.range(from..end).map(|(_, &id)| id).collect();
        for id in ids {
            let c = self.chunk(id);
            if !matches!(c.state, State::Ready { .. }) || c.pins > 0 || c.end_page <= first {
                continue;
            }
            if first <= c.first_page && c.end_page <= end {
                self.free_chunk(id);
            } else {
                // Part of a chunk: a fetch that read through gaps between the reads the policy
                // wants (`directed`'s infill) releases the gaps when it completes. Keeping them
                // would hold memory the policy counts as free, and a later fetch of those pages
                // would find them here and complete without reading, where the simulator's page
                // cache, which drops each released page, reads them again.
                self.split_chunk(id, first.max(c.first_page), end.min(c.end_page));
            }
        }
    }

    /// Replaces filled, unpinned chunk `id` with chunks of its pages outside `[cut_first,
    /// cut_end)`, freeing the cut pages. A chunk whose buffer is a piece of a mapping keeps its
    /// pages where they are: the buffer is cut at page boundaries, the kept pieces become the new
    /// chunks' buffers and the rest goes back to the pool (`cut_buffer`). Copying them
    /// instead costs up to a whole chunk per release, under the lock every reader and completion
    /// needs: `directed` releases every 8 KiB read of a 1 MiB chunk, and those copies held the
    /// lock for 5 to 13 ms at a time in the conformance suite's small contention scenario. Other
    /// buffers (ordinary heap memory, which cannot be freed in part) are replaced by copies,
    /// taken before the chunk's buffer is freed, within the budget; if memory refuses them, the
    /// chunk stays whole.
    fn split_chunk(&mut self, id: u32, cut_first: u64, cut_end: u64) {
        let c = self.chunk(id);
        let State::Ready { valid_bytes, buf } = &c.state else {
            return;
        };
        let start = c.start_bytes();
        let valid_end = start + valid_bytes;
        // Reads copy a chunk from its start on; bytes up to here have been read.
        let consumed_end = start + c.consumed_bytes;
        // The kept pieces, pages before the cut and after it: (first page, end page, valid
        // bytes, bytes already read). A piece read to its end is not kept.
        let pieces: Vec<(u64, u64, u64, u64)> = [(c.first_page, cut_first), (cut_end, c.end_page)]
            .into_iter()
            .filter(|&(a, b)| a < b)
            .filter_map(|(a, b)| {
                let from = a * PAGE_BYTES;
                let bytes = (b * PAGE_BYTES).min(valid_end).saturating_sub(from);
                let consumed = consumed_end.saturating_sub(from).min(bytes);
                (consumed < bytes).then_some((a, b, bytes, consumed))
            })
            .collect();
        // The caller skips pinned chunks and readers drop their clone before unpinning, so the
        // chunk's reference is the only one; the count is checked all the same, since cutting a
        // buffer somebody still reads would hand its pages to the pool under them.
        let cut_in_place = buf.is_mapped() && Arc::strong_count(buf) == 1;
        let copies = if cut_in_place {
            None
        } else {
            let buf = buf.clone();
            let mut bufs = Vec::with_capacity(pieces.len());
            // Taken as demand memory: the copies exist beside the old buffer only until it is
            // freed below, so the split lowers what is held, and for that moment it may use the
            // reserve that a prefetch may not.
            for &(a, b, bytes, _) in &pieces {
                match self.pool.alloc((b - a) * PAGE_BYTES, Purpose::Demand) {
                    Some(mut nb) => {
                        let from = (a * PAGE_BYTES - start) as usize;
                        nb.as_mut_slice()[..bytes as usize]
                            .copy_from_slice(&buf.as_slice()[from..from + bytes as usize]);
                        bufs.push(nb);
                    }
                    None => {
                        for nb in bufs {
                            self.pool.free(nb);
                        }
                        return;
                    }
                }
            }
            Some(bufs)
        };
        // A piece stays claimed for the reader about to copy it; otherwise it is unused or used
        // data by its own pages (the cut may have taken every page of it nobody had read).
        let claimed = matches!(self.chunk(id).lru, Some((Lru::Claimed, _)));
        self.lru_remove(id);
        let mut old = self.chunks[id as usize].take().expect("a live chunk");
        self.free_slots.push(id);
        let State::Ready {
            valid_bytes: old_valid,
            buf: old_buf,
        } = std::mem::replace(&mut old.state, State::InFlight)
        else {
            unreachable!("checked above")
        };
        if old.prefetched {
            // The cut pages nobody read were read ahead in vain; the kept pieces carry their
            // own pages' marks.
            let rel = |page: u64| page - old.first_page;
            let unread = old.unread_bytes(0, rel(old.end_page), old_valid);
            let kept_unread: u64 = pieces
                .iter()
                .map(|&(a, b, _, _)| old.unread_bytes(rel(a), rel(b), old_valid))
                .sum();
            self.stats.wasted_bytes += unread - kept_unread;
        }
        let f = &mut self.files[old.file.0 as usize];
        f.chunks.remove(&old.first_page);
        f.live_chunks -= 1;
        let old_buf =
            Arc::try_unwrap(old_buf).expect("an unpinned chunk's buffer has no other owner");
        let bufs = match copies {
            Some(bufs) => {
                self.pool.free(old_buf);
                bufs
            }
            None => self.cut_buffer(old_buf, old.first_page, &pieces),
        };
        for ((a, b, bytes, consumed), nb) in pieces.into_iter().zip(bufs) {
            let piece = Chunk {
                file: old.file,
                first_page: a,
                end_page: b,
                expect_bytes: bytes,
                io_bytes: (b - a) * PAGE_BYTES,
                filled_bytes: bytes,
                state: State::Ready {
                    valid_bytes: bytes,
                    buf: Arc::new(nb),
                },
                direct: old.direct,
                fetch: None,
                prefetched: old.prefetched,
                owner: old.owner,
                for_stream: old.for_stream,
                reader: old.reader,
                urgent: old.urgent,
                read_pages: old.read_pages_of(a - old.first_page, b - old.first_page),
                consumed_bytes: consumed,
                pins: 0,
                waiters: Vec::new(),
                lru: None,
                doomed: false,
            };
            let class = if claimed {
                Lru::Claimed
            } else {
                piece.unclaimed_class()
            };
            let pid =
                foresight_core::take_slot(&mut self.chunks, &mut self.free_slots, Some(piece));
            let f = &mut self.files[old.file.0 as usize];
            f.chunks.insert(a, pid);
            f.live_chunks += 1;
            self.lru_insert(pid, class);
        }
        self.wake_memory_waiters();
    }

    /// Cuts `buf`, a mapped buffer whose first byte holds page `first`, into one buffer per
    /// kept piece (`(first page, end page, ..)`, in page order, inside the buffer), handing every
    /// other page of it back to the pool. Nothing is copied and nothing allocated, so it cannot
    /// fail. The pieces start on page boundaries, which is all `O_DIRECT` asks of a buffer.
    fn cut_buffer(
        &mut self,
        buf: AlignedBuf,
        first: u64,
        pieces: &[(u64, u64, u64, u64)],
    ) -> Vec<AlignedBuf> {
        const _: () = assert!(PAGE_BYTES.is_multiple_of(ALIGN_BYTES as u64));
        let mut kept = Vec::with_capacity(pieces.len());
        // What is left of the buffer, and the page its first byte holds.
        let mut rest = Some(buf);
        let mut rest_page = first;
        for &(a, b, _, _) in pieces {
            let mut r = rest.take().expect("the kept pieces lie inside the buffer");
            if a > rest_page {
                let (gap, tail) = r.split_off(((a - rest_page) * PAGE_BYTES) as usize);
                self.pool.free(gap);
                r = tail;
            }
            let piece_bytes = ((b - a) * PAGE_BYTES) as usize;
            assert!(piece_bytes <= r.capacity(), "a kept piece past the buffer");
            if piece_bytes < r.capacity() {
                let (piece, tail) = r.split_off(piece_bytes);
                kept.push(piece);
                rest = Some(tail);
            } else {
                kept.push(r);
            }
            rest_page = b;
        }
        if let Some(r) = rest {
            self.pool.free(r);
        }
        kept
    }

    // ---- chunks and memory ----------------------------------------------------------------

    /// The pages of the chunks a reader has pinned to copy from, in bytes.
    #[cfg(test)]
    pub(crate) fn pinned_bytes(&self) -> u64 {
        self.chunks
            .iter()
            .flatten()
            .filter(|c| c.pins > 0)
            .map(|c| (c.end_page - c.first_page) * PAGE_BYTES)
            .sum()
    }

    fn chunk(&self, id: u32) -> &Chunk {
        self.chunks[id as usize].as_ref().expect("a live chunk")
    }

    fn chunk_mut(&mut self, id: u32) -> &mut Chunk {
        self.chunks[id as usize].as_mut().expect("a live chunk")
    }

    /// Allocates a buffer (evicting if allowed) and queues the read of pages `[first, end)`.
    fn new_chunk(
        &mut self,
        file: FileId,
        first: u64,
        end: u64,
        spec: ChunkSpec,
        purpose: Purpose,
    ) -> Option<u32> {
        debug_assert!(first < end);
        let f = &self.files[file.0 as usize];
        let handle = f.handle.clone().expect("an open file has a handle");
        let start = first * PAGE_BYTES;
        let expect_bytes = (end * PAGE_BYTES).min(f.size_bytes) - start;
        let io_bytes = (end - first) * PAGE_BYTES;
        let buf = loop {
            if let Some(b) = self.pool.alloc(io_bytes, purpose) {
                break b;
            }
            if !spec.may_evict || !self.evict_one(purpose, spec.for_stream) {
                return None;
            }
        };
        let chunk = Chunk {
            file,
            first_page: first,
            end_page: end,
            expect_bytes,
            io_bytes,
            filled_bytes: 0,
            state: State::InFlight,
            direct: handle.direct,
            fetch: spec.fetch,
            prefetched: spec.prefetched,
            owner: spec.owner,
            for_stream: spec.for_stream,
            reader: spec.reader,
            urgent: spec.urgent,
            read_pages: Vec::new(),
            consumed_bytes: 0,
            pins: 0,
            waiters: Vec::new(),
            lru: None,
            doomed: false,
        };
        if spec.owner.is_some() {
            self.stats.demand_bytes += expect_bytes;
        }
        let id = foresight_core::take_slot(&mut self.chunks, &mut self.free_slots, Some(chunk));
        let f = &mut self.files[file.0 as usize];
        f.chunks.insert(first, id);
        f.live_chunks += 1;
        self.enqueue(IoRequest {
            token: id as u64,
            file: handle,
            offset_bytes: start,
            buf,
            buf_offset: 0,
            len_bytes: io_bytes as usize,
            reader: spec.reader,
        });
        Some(id)
    }

    fn enqueue(&mut self, r: IoRequest) {
        let urgent = self.chunk(r.token as u32).urgent;
        if urgent {
            self.urgent.push_back(r);
        } else {
            self.ahead.push_back(r);
        }
        assert!(
            self.urgent.len() + self.ahead.len() <= self.max_queued,
            "more queued reads ({}) than the budget has pages ({})",
            self.urgent.len() + self.ahead.len(),
            self.max_queued
        );
    }

    /// Hands queued reads to the backend while it has room, the application's first.
    pub(crate) fn dispatch(&mut self) {
        while self.in_flight < self.cfg.queue_depth {
            let Some(r) = self.urgent.pop_front().or_else(|| self.ahead.pop_front()) else {
                break;
            };
            self.in_flight += 1;
            self.submitted += 1;
            self.batch.push(r);
        }
        if !self.batch.is_empty() {
            let mut batch = std::mem::take(&mut self.batch);
            self.backend.submit(&mut batch);
            self.batch = batch;
        }
        // Deferred readers that wait for the engine to fall idle start their grace period.
        if !self.defer_waiters.is_empty() && !self.busy() {
            self.wake_defer_waiters();
        }
    }

    /// Evicts one chunk a `purpose` allocation for `stream` may take. Returns whether it did.
    fn evict_one(&mut self, purpose: Purpose, stream: Option<StreamId>) -> bool {
        let classes: &[Lru] = match purpose {
            Purpose::Prefetch => &[Lru::Used],
            Purpose::Demand => &[Lru::Used, Lru::Unused],
        };
        for &class in classes {
            if let Some((_, &id)) = self.lru[class as usize].first_key_value() {
                self.free_chunk(id);
                return true;
            }
        }
        // The reader's own filled data further on (past a gap it must fill first), the furthest
        // first: it is needed last.
        // A stream reads one file, so its chunks are in that file's map: no scan of every claim.
        let own = stream.and_then(|s| {
            let file = self.streams[s.0 as usize].file;
            self.files[file.0 as usize]
                .chunks
                .values()
                .rev()
                .copied()
                .find(|&id| {
                    let c = self.chunk(id);
                    c.for_stream == Some(s) && matches!(c.lru, Some((Lru::Claimed, _)))
                })
        });
        match own {
            Some(id) => {
                self.free_chunk(id);
                true
            }
            None => false,
        }
    }

    fn lru_insert(&mut self, id: u32, class: Lru) {
        self.lru_remove(id);
        self.seq += 1;
        let seq = self.seq;
        self.lru[class as usize].insert(seq, id);
        let c = self.chunk_mut(id);
        c.lru = Some((class, seq));
        let bytes = c.io_bytes;
        self.lru_bytes[class as usize] += bytes;
    }

    fn lru_remove(&mut self, id: u32) {
        let c = self.chunk_mut(id);
        if let Some((class, seq)) = c.lru.take() {
            let bytes = c.io_bytes;
            self.lru[class as usize].remove(&seq);
            self.lru_bytes[class as usize] -= bytes;
        }
    }

    /// Frees a filled, unpinned chunk and its buffer.
    fn free_chunk(&mut self, id: u32) {
        self.lru_remove(id);
        let mut c = self.chunks[id as usize].take().expect("a live chunk");
        self.free_slots.push(id);
        assert_eq!(c.pins, 0, "freed a pinned chunk");
        let f = &mut self.files[c.file.0 as usize];
        if f.chunks.get(&c.first_page) == Some(&id) {
            f.chunks.remove(&c.first_page);
        }
        f.live_chunks -= 1;
        self.forget_if_idle(c.file);
        if let State::Ready { valid_bytes, buf } = std::mem::replace(&mut c.state, State::InFlight)
        {
            if c.prefetched {
                let pages = c.end_page - c.first_page;
                self.stats.wasted_bytes += c.unread_bytes(0, pages, valid_bytes);
            }
            // Readers drop their clone before unpinning, so this is the only reference.
            let buf = Arc::try_unwrap(buf).expect("an unpinned chunk's buffer has no other owner");
            self.pool.free(buf);
        }
        for (_, w) in c.waiters {
            w.notify_one();
        }
        self.wake_memory_waiters();
    }

    /// Forgets a chunk whose buffer was already handed back; wakes its waiters (they will find
    /// the bytes missing and read them again) and settles its fetch.
    fn drop_chunk_record(&mut self, id: u32) {
        self.lru_remove(id);
        let c = self.chunks[id as usize].take().expect("a live chunk");
        self.free_slots.push(id);
        let f = &mut self.files[c.file.0 as usize];
        if f.chunks.get(&c.first_page) == Some(&id) {
            f.chunks.remove(&c.first_page);
        }
        f.live_chunks -= 1;
        self.forget_if_idle(c.file);
        for (_, w) in &c.waiters {
            w.notify_one();
        }
        if let Some(fid) = c.fetch {
            self.fetch_part_done(fid, false);
        }
    }

    fn fetch_part_done(&mut self, id: FetchId, ok: bool) {
        let Some(st) = self.fetches.get_mut(&id) else {
            return;
        };
        st.ok &= ok;
        st.parts_left -= 1;
        if st.parts_left == 0 {
            let ok = st.ok;
            self.fetches.remove(&id);
            self.done_now.push_back((id, ok));
            self.wake_defer_waiters();
        }
    }

    /// Wakes the oldest readers waiting for memory, as many as the memory that is free or
    /// evictable now can serve (always at least one: it retries, and if it fails it queues again
    /// at the back). Waking them all would send a thousand starving readers at the lock for every
    /// freed chunk.
    fn wake_memory_waiters(&mut self) {
        let avail = (self.pool.limit_bytes() - self.pool.lent_bytes())
            + self.lru_bytes[Lru::Used as usize]
            + self.lru_bytes[Lru::Unused as usize];
        let mut promised = 0u64;
        while let Some((_, _, need)) = self.memory_waiters.front() {
            if promised > 0 && promised + need > avail {
                break;
            }
            promised += need;
            let (s, w, _) = self.memory_waiters.pop_front().expect("peeked");
            self.streams[s.0 as usize].waits_for_memory = false;
            w.notify_one();
        }
    }

    /// Wakes `stream` if it waits for memory: a chunk claimed for it completed, which it may evict.
    fn wake_memory_waiter(&mut self, stream: StreamId) {
        if !self.streams[stream.0 as usize].waits_for_memory {
            return;
        }
        self.streams[stream.0 as usize].waits_for_memory = false;
        if let Some(i) = self
            .memory_waiters
            .iter()
            .position(|(s, _, _)| *s == stream)
        {
            let (_, w, _) = self.memory_waiters.remove(i).expect("found");
            w.notify_one();
        }
    }

    // ---- completions ----------------------------------------------------------------------

    /// Handles a backend completion.
    pub(crate) fn complete(&mut self, now: Instant, c: IoCompletion) {
        self.settle(now, c);
        self.dispatch();
    }

    /// Handles a burst of completions that arrived together, then hands the backend, in one
    /// batch, the reads they made room for. The policy still sees each completion on its own.
    pub(crate) fn complete_all(&mut self, now: Instant, cs: &mut Vec<IoCompletion>) {
        for c in cs.drain(..) {
            self.settle(now, c);
        }
        self.dispatch();
    }

    /// One completion: the chunk becomes ready (or is re-read, or fails), its waiters wake, and
    /// the policy runs. Reads it makes room for wait in the queues for the caller's `dispatch`.
    fn settle(&mut self, now: Instant, c: IoCompletion) {
        assert!(self.in_flight > 0, "a completion with nothing in flight");
        self.in_flight -= 1;
        let id = c.token as u32;
        let chunk = self.chunks[id as usize]
            .as_mut()
            .expect("a completion for a live chunk");
        assert!(
            matches!(chunk.state, State::InFlight),
            "chunk completed twice"
        );
        let ok = match c.result {
            Ok(n) => {
                self.stats.device_reads += 1;
                self.stats.device_bytes += n as u64;
                chunk.filled_bytes += n as u64;
                let filled = chunk.filled_bytes;
                let aligned = !chunk.direct || filled.is_multiple_of(ALIGN_BYTES as u64);
                if filled < chunk.expect_bytes && n > 0 && aligned && !chunk.doomed {
                    // A short read that is not the end of the file: read the remainder into the
                    // same buffer.
                    self.stats.short_reads += 1;
                    let file = self.files[chunk.file.0 as usize]
                        .handle
                        .clone()
                        .expect("a file with reads in flight is open");
                    let r = IoRequest {
                        token: c.token,
                        file,
                        offset_bytes: chunk.start_bytes() + filled,
                        buf: c.buf,
                        buf_offset: filled as usize,
                        len_bytes: (chunk.io_bytes - filled) as usize,
                        reader: chunk.reader,
                    };
                    if chunk.urgent {
                        self.urgent.push_front(r);
                    } else {
                        self.ahead.push_front(r);
                    }
                    return;
                }
                let valid_bytes = filled.min(chunk.expect_bytes);
                // Counted once read, as used and wasted bytes are: a prefetch that failed, or
                // was dropped before it was read, brought nothing in.
                if chunk.prefetched {
                    self.stats.prefetched_bytes += valid_bytes;
                }
                chunk.state = State::Ready {
                    valid_bytes,
                    buf: Arc::new(c.buf),
                };
                // A prefetch nobody is waiting for may be evicted by a demand read; one a reader
                // waits for is claimed until that reader copies it.
                if chunk.for_stream.is_none() {
                    chunk.for_stream = chunk.waiters.first().map(|(s, _)| *s);
                }
                let class = match chunk.for_stream {
                    Some(_) => Lru::Claimed,
                    None => chunk.unclaimed_class(),
                };
                for (_, w) in chunk.waiters.drain(..) {
                    w.notify_one();
                }
                let fetch = chunk.fetch;
                let for_stream = chunk.for_stream;
                if chunk.doomed {
                    self.free_chunk(id);
                } else {
                    self.lru_insert(id, class);
                    match (class, for_stream) {
                        (Lru::Claimed, Some(s)) => self.wake_memory_waiter(s),
                        _ => self.wake_memory_waiters(),
                    }
                }
                if let Some(fid) = fetch {
                    self.fetch_part_done(fid, true);
                }
                true
            }
            Err(e) => {
                self.stats.io_errors += 1;
                let (owner, start, end) = (
                    chunk.owner,
                    chunk.start_bytes(),
                    chunk.start_bytes() + chunk.expect_bytes,
                );
                self.pool.free(c.buf);
                if let Some(s) = owner {
                    let st = &mut self.streams[s.0 as usize];
                    if st.open {
                        if st.errors.len() == STREAM_ERRORS_MAX {
                            st.errors.pop_front();
                        }
                        st.errors.push_back((start, end, e));
                    }
                }
                self.drop_chunk_record(id);
                self.wake_memory_waiters();
                false
            }
        };
        let _ = ok;
        self.run_policy(now, None);
    }

    // ---- reports --------------------------------------------------------------------------

    /// A snapshot of the counters.
    pub(crate) fn stats(&self) -> Stats {
        Stats {
            memory_used_bytes: self.pool.held_bytes(),
            memory_peak_bytes: self.pool.held_peak_bytes(),
            memory_lent_bytes: self.pool.lent_bytes(),
            buffers_peak_bytes: self.pool.lent_peak_bytes(),
            ..self.stats.clone()
        }
    }

    /// A one-line summary of the driver's state, for diagnosing a stuck test.
    pub(crate) fn describe(&self) -> String {
        let live = self.chunks.iter().flatten();
        let in_flight = live
            .clone()
            .filter(|c| matches!(c.state, State::InFlight))
            .count();
        let waited = live.clone().filter(|c| !c.waiters.is_empty()).count();
        let waited_ready = live
            .clone()
            .filter(|c| !c.waiters.is_empty() && matches!(c.state, State::Ready { .. }))
            .count();
        let stuck: Vec<String> = self
            .streams
            .iter()
            .enumerate()
            .filter_map(|(i, st)| {
                let id = st.waiting_on?;
                let what = match self.chunks[id as usize].as_ref() {
                    None => "gone".to_string(),
                    Some(c) => format!(
                        "file {} pages {}..{} {} waiters {}",
                        c.file.0,
                        c.first_page,
                        c.end_page,
                        if matches!(c.state, State::InFlight) {
                            "in flight"
                        } else {
                            "ready"
                        },
                        c.waiters.len()
                    ),
                };
                Some(format!("stream {i} on chunk {id}: {what}"))
            })
            .take(5)
            .collect();
        let claimed: Vec<String> = self.lru[Lru::Claimed as usize]
            .values()
            .take(6)
            .map(|&id| {
                let c = self.chunk(id);
                format!(
                    "chunk {id} file {} pages {}..{} for {:?} owner {:?} fetch {:?} prefetched {} read pages {:?} consumed {} urgent {}",
                    c.file.0, c.first_page, c.end_page, c.for_stream, c.owner, c.fetch, c.prefetched, c.read_pages, c.consumed_bytes, c.urgent
                )
            })
            .collect();
        let stuck = format!("{}; claimed: [{}]", stuck.join("; "), claimed.join("; "));
        format!(
            "waiting: [{stuck}]; in_flight {} (chunks in flight {in_flight}), queued {}+{}, chunks {} ({} with waiters, {} of them ready), memory waiters {}, lent {} of {}, lru {}/{}/{}",
            self.in_flight,
            self.urgent.len(),
            self.ahead.len(),
            live.count(),
            waited,
            waited_ready,
            self.memory_waiters.len(),
            self.pool.lent_bytes(),
            self.pool.limit_bytes(),
            self.lru[0].len(),
            self.lru[1].len(),
            self.lru[2].len(),
        )
    }

    /// Checks the accounting invariants (tests call this after every step).
    pub(crate) fn check(&self) {
        let lent: u64 = self
            .chunks
            .iter()
            .flatten()
            .filter(|c| matches!(c.state, State::Ready { .. }))
            .map(|c| c.io_bytes)
            .sum::<u64>()
            + self
                .urgent
                .iter()
                .chain(self.ahead.iter())
                .map(|r| r.buf.capacity() as u64)
                .sum::<u64>();
        assert!(lent <= self.pool.lent_bytes());
        assert!(self.pool.held_bytes() <= self.pool.limit_bytes());
        assert!(self.in_flight <= self.cfg.queue_depth);
        let mut records = vec![0u32; self.files.len()];
        for c in self.chunks.iter().flatten() {
            records[c.file.0 as usize] += 1;
        }
        for (i, f) in self.files.iter().enumerate() {
            assert_eq!(f.live_chunks, records[i], "file {i}'s chunk count");
            assert!(f.remembered || (f.readers == 0 && f.live_chunks == 0 && f.chunks.is_empty()));
        }
        assert_eq!(
            self.identities.len(),
            self.files.iter().filter(|f| f.remembered).count(),
            "one identity per remembered file"
        );
        // Every byte read ahead is used, wasted, or still held unread.
        let held_unread: u64 = self
            .chunks
            .iter()
            .flatten()
            .filter(|c| c.prefetched)
            .map(|c| match c.state {
                State::Ready { valid_bytes, .. } => {
                    c.unread_bytes(0, c.end_page - c.first_page, valid_bytes)
                }
                State::InFlight => 0,
            })
            .sum();
        assert_eq!(
            self.stats.prefetch_used_bytes + self.stats.wasted_bytes + held_unread,
            self.stats.prefetched_bytes,
            "read-ahead bytes used, wasted and held unread"
        );
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
mod tests {
    use super::*;
    use crate::backend::BackendKind;
    use foresight_policy::PolicyConfig;
    use std::path::{Path, PathBuf};
    use std::sync::Mutex;

    /// Holds what it is given and records each `submit` call's batch size; completes nothing by
    /// itself, so a test decides when and how completions arrive.
    #[derive(Default)]
    struct Holding {
        held: Mutex<Vec<IoRequest>>,
        batches: Mutex<Vec<usize>>,
        /// Readers the core said had closed, in order.
        closed: Mutex<Vec<StreamId>>,
    }

    impl IoBackend for Holding {
        fn kind(&self) -> BackendKind {
            BackendKind::Noop
        }
        fn open(&self, _: &Path, _: FileId, _: bool) -> io::Result<FileHandle> {
            unreachable!("the test registers its handle directly")
        }
        fn capacity(&self) -> usize {
            2
        }
        fn submit(&self, batch: &mut Vec<IoRequest>) {
            self.batches.lock().unwrap().push(batch.len());
            self.held.lock().unwrap().append(batch);
        }
        fn reader_closed(&self, reader: StreamId) {
            self.closed.lock().unwrap().push(reader);
        }
        fn shutdown(&self) {}
    }

    /// A reader's close reaches the backend before its id can go to another reader, so that a
    /// backend keeping figures per reader (the emulated anticipatory scheduler) starts the next
    /// one afresh; the reader's reads already submitted keep its id.
    #[test]
    fn a_closed_reader_is_told_to_the_backend_before_its_id_is_reused() {
        let (mut core, backend, _, s) = core_over_holding(4 << 20, 64 << 10);
        core.begin_read(Instant(0), s, FileId(0), 0, 64 << 10);
        assert_eq!(backend.held.lock().unwrap()[0].reader, Some(s));
        core.close(Instant(1), s);
        assert_eq!(*backend.closed.lock().unwrap(), vec![s]);
        let handle = other_file(&mut core);
        let (_, again, _, _) = core.open(handle);
        assert_eq!(again, s, "the id goes to the next reader");
        assert_eq!(backend.held.lock().unwrap()[0].reader, Some(s));
        core.complete_all(Instant(2), &mut completions(&backend));
        core.check();
    }

    /// A core over `Holding` with queue depth 2 and no readahead, with one 1 MiB file open and a
    /// demand read of its first 256 KiB: four 64 KiB reads, two in flight and two queued.
    /// A core over `Holding` with queue depth 2, no readahead, `memory_bytes` of budget and
    /// requests of at most `max_io_bytes`, and one 1 MiB file open.
    fn core_over_holding(
        memory_bytes: u64,
        max_io_bytes: u64,
    ) -> (Core, Arc<Holding>, FileId, StreamId) {
        let cfg = PolicyConfig {
            name: "none".into(),
            ..PolicyConfig::default()
        };
        let policy =
            foresight_policy::build(&cfg, Arc::new(foresight_policy::Layout::unplaced(&[])))
                .unwrap();
        core_over_holding_with(policy, memory_bytes, max_io_bytes, false)
    }

    /// A 1 MiB file with no descriptor (the test backends read nothing): `mem`, identity (1, 1),
    /// is the file every test core opens first (opening it again gives a second reader of that
    /// file), and [`other_file`] a second file.
    fn mem_file(core: &mut Core, path: &str, identity: (u64, u64)) -> FileHandle {
        FileHandle {
            id: core.next_file_id(),
            path: PathBuf::from(path),
            file: None,
            direct: false,
            size_bytes: 1 << 20,
            identity,
            modified: None,
            volume_offset_bytes: None,
        }
    }

    /// A second 1 MiB file, for tests where another stream reads beside the first.
    fn other_file(core: &mut Core) -> FileHandle {
        mem_file(core, "other", (1, 2))
    }

    /// A core whose policy defers every read of its first file (`FileId(0)`, 4 MiB of memory,
    /// 64 KiB reads), with a reader of that file and one of [`other_file`], whose reads go on
    /// demand: the setting of the deferral tests.
    fn two_streams_deferring_the_first(
    ) -> (Core, Arc<Holding>, (FileId, StreamId), (FileId, StreamId)) {
        let policy = Box::new(DeferAll {
            file: Some(FileId(0)),
            out: VecDeque::new(),
        });
        let (mut core, backend, a, sa) = core_over_holding_with(policy, 4 << 20, 64 << 10, false);
        assert_eq!(a, FileId(0), "the deferred file is the first");
        let handle = other_file(&mut core);
        let (b, sb, _, _) = core.open(handle);
        (core, backend, (a, sa), (b, sb))
    }

    /// [`core_over_holding`] under `policy`, its pool prefaulted if `prefault` (every buffer is
    /// then a piece of one mapping, whatever the kernel's huge-page setting).
    fn core_over_holding_with(
        policy: Box<dyn Policy>,
        memory_bytes: u64,
        max_io_bytes: u64,
        prefault: bool,
    ) -> (Core, Arc<Holding>, FileId, StreamId) {
        let backend = Arc::new(Holding::default());
        let mut core = Core::new(
            policy,
            backend.clone(),
            CoreConfig {
                memory_bytes,
                queue_depth: 2,
                max_io_bytes,
                prefault,
            },
            Arc::new(Condvar::new()),
        );
        let handle = mem_file(&mut core, "mem", (1, 1));
        let (file, stream, _, _) = core.open(handle);
        (core, backend, file, stream)
    }

    fn core_with_four_reads() -> (Core, Arc<Holding>) {
        let (mut core, backend, file, stream) = core_over_holding(1 << 20, 64 << 10);
        core.begin_read(Instant(0), stream, file, 0, 256 << 10);
        assert!(core.demand(stream, file, 0, 256 << 10));
        assert_eq!(core.in_flight, 2);
        assert_eq!(
            core.urgent.len() + core.ahead.len(),
            2,
            "two reads wait for a slot"
        );
        (core, backend)
    }

    /// Sends the core's queued reads, fills each buffer with the pattern `i % 251` (`i` the byte's
    /// place in its read) and completes them at instant 1.
    fn fill_and_complete(core: &mut Core, backend: &Holding) {
        core.dispatch();
        let mut done = completions(backend);
        for c in &mut done {
            for (i, b) in c.buf.as_mut_slice().iter_mut().enumerate() {
                *b = (i % 251) as u8;
            }
        }
        core.complete_all(Instant(1), &mut done);
    }

    fn completions(backend: &Holding) -> Vec<IoCompletion> {
        backend
            .held
            .lock()
            .unwrap()
            .drain(..)
            .map(|r| IoCompletion {
                token: r.token,
                buf: r.buf,
                result: Ok(r.len_bytes),
            })
            .collect()
    }

    #[test]
    fn a_burst_of_completions_refills_the_queue_in_one_submission() {
        let (mut core, backend) = core_with_four_reads();
        backend.batches.lock().unwrap().clear();
        let mut burst = completions(&backend);
        assert_eq!(burst.len(), 2);
        core.complete_all(Instant(1), &mut burst);
        assert!(burst.is_empty());
        assert_eq!(
            *backend.batches.lock().unwrap(),
            vec![2],
            "one batch of both waiting reads"
        );
        assert_eq!(core.in_flight, 2);
        assert_eq!(core.stats().device_reads, 2);
        core.check();
    }

    #[test]
    fn completions_one_at_a_time_refill_one_read_each() {
        let (mut core, backend) = core_with_four_reads();
        backend.batches.lock().unwrap().clear();
        for c in completions(&backend) {
            core.complete(Instant(1), c);
        }
        assert_eq!(*backend.batches.lock().unwrap(), vec![1, 1]);
        assert_eq!(core.in_flight, 2);
        core.check();
    }

    /// A release that covers part of a filled chunk frees the released pages and keeps the rest,
    /// byte for byte: the pages then read as missing (a later fetch reads them again, as the
    /// simulator's page cache does), and the memory they held is free. Before, only chunks wholly
    /// inside the range were freed, so a fetch through gaps kept the gaps for as long as the
    /// chunk lived.
    #[test]
    fn a_release_inside_a_chunk_frees_those_pages_and_keeps_the_rest() {
        let (mut core, _backend, file, _) = one_prefetched_chunk(4 << 20, 1 << 20);
        let chunk_bytes = 256u64 << 10;
        let lent_before = core.pool.lent_bytes();
        // Release [64 KiB, 128 KiB) and an unaligned range that covers page 50 whole.
        core.release(file, ByteRange::new(64 << 10, 64 << 10));
        core.release(file, ByteRange::new(50 * PAGE_BYTES - 1, PAGE_BYTES + 2));
        assert!(matches!(core.find(file, 64 << 10), Found::Missing));
        assert!(matches!(core.find(file, (128 << 10) - 1), Found::Missing));
        assert!(matches!(core.find(file, 50 * PAGE_BYTES), Found::Missing));
        for (pos, kept_end) in [
            (0, 64 << 10),
            (128 << 10, 49 * PAGE_BYTES),
            (49 * PAGE_BYTES, 50 * PAGE_BYTES),
            (51 * PAGE_BYTES, chunk_bytes),
            (chunk_bytes - 1, chunk_bytes),
        ] {
            let Found::Ready {
                chunk,
                chunk_start,
                valid_end,
            } = core.find(file, pos)
            else {
                panic!("byte {pos} was not kept")
            };
            assert!(
                valid_end >= kept_end && valid_end <= chunk_bytes,
                "byte {pos}"
            );
            let buf = core.pin(chunk);
            let at = (pos - chunk_start) as usize;
            assert_eq!(buf.as_slice()[at], (pos % 251) as u8, "byte {pos}");
            drop(buf);
            core.chunk_mut(chunk).pins -= 1;
        }
        let freed = (64 << 10) + PAGE_BYTES;
        assert!(
            core.pool.lent_bytes() <= lent_before - freed,
            "lent {} of {lent_before}",
            core.pool.lent_bytes()
        );
        core.check();
    }

    /// The application copies file bytes `[from, to)` out of the chunk that holds `from`.
    fn read_through(core: &mut Core, file: FileId, stream: StreamId, from: u64, to: u64) {
        let Found::Ready { chunk, .. } = core.find(file, from) else {
            panic!("byte {from} is in")
        };
        drop(core.pin(chunk));
        core.unpin(stream, chunk, from, to);
    }

    /// A core over `memory_bytes` (chunks of at most `max_io_bytes`) whose first 256 KiB of the
    /// file are prefetched, in one filled chunk nobody has read.
    fn one_prefetched_chunk(
        memory_bytes: u64,
        max_io_bytes: u64,
    ) -> (Core, Arc<Holding>, FileId, StreamId) {
        let (mut core, backend, file, stream) = core_over_holding(memory_bytes, max_io_bytes);
        assert_eq!(
            core.fetch(FetchId(0), file, ByteRange::new(0, 256 << 10), None, None),
            (1, false)
        );
        fill_and_complete(&mut core, &backend);
        (core, backend, file, stream)
    }

    /// With one 256 KiB chunk prefetched at the file's start (of the 768 KiB prefetches may use
    /// under `core_over_holding(1 MiB, 256 KiB)`), two more prefetches fill the rest; returns
    /// what a third, which needs room the first chunk holds, is granted.
    fn third_prefetch(core: &mut Core, backend: &Holding, file: FileId) -> (u32, bool) {
        let chunk_bytes = 256u64 << 10;
        assert_eq!(
            core.fetch(
                FetchId(1),
                file,
                ByteRange::new(chunk_bytes, 2 * chunk_bytes),
                None,
                None
            ),
            (2, false)
        );
        fill_and_complete(core, backend);
        core.fetch(
            FetchId(2),
            file,
            ByteRange::new(3 * chunk_bytes, chunk_bytes),
            None,
            None,
        )
    }

    /// A prefetched chunk the application has read a little of still holds read-ahead it has
    /// not read, and a prefetch must not take that, as it may not take a prefetched chunk nobody
    /// has read: the prefetch is refused, the chunk stays whole, and a demand read may still take
    /// it. Before, one read moved the whole chunk among the used data a prefetch may take: with
    /// five `directed` clients thinking 2 ms in 3 MiB, the sweeps of the others took the 1 MiB
    /// the second client's hint had fetched, 8 KiB read at a time, and that client then read on
    /// demand what the policy still held for it (28 or 29 reads in the probe's last second,
    /// against the simulator's 7, whose page cache never lets a prefetch take an unread page).
    #[test]
    fn a_prefetch_does_not_take_a_prefetched_chunk_read_only_in_part() {
        // 1 MiB of budget, 256 KiB of it kept for demand reads: 768 KiB for prefetches.
        let (mut core, backend, file, stream) = one_prefetched_chunk(1 << 20, 256 << 10);
        let chunk_bytes = 256u64 << 10;
        // The application reads 8 KiB from the middle of it, as `directed`'s scattered reads do.
        read_through(&mut core, file, stream, 64 << 10, 72 << 10);
        // Two more prefetches fill what prefetches may use; a third finds nothing it may take.
        assert_eq!(
            third_prefetch(&mut core, &backend, file),
            (0, true),
            "a prefetch took read-ahead nobody has read"
        );
        for pos in [0, 72 << 10, chunk_bytes - 1] {
            assert!(
                matches!(core.find(file, pos), Found::Ready { .. }),
                "byte {pos} of the read-ahead was dropped"
            );
        }
        // A demand read, which must make progress, may take it.
        assert!(core.evict_one(Purpose::Demand, Some(stream)));
        assert!(matches!(core.find(file, 0), Found::Missing));
        core.check();
    }

    /// A prefetched chunk whose every page the application has read, back half first, is not
    /// freed (it was not read front to end) but holds no read-ahead left to keep: a prefetch may
    /// take it, as it may take any data the application has used. Before, any prefetched chunk
    /// not read to its end stayed among the unread read-ahead a prefetch may not take, so memory
    /// full of data read out of order refused every prefetch until a demand read came.
    #[test]
    fn a_prefetch_may_take_a_prefetched_chunk_read_in_full_out_of_order() {
        // 1 MiB of budget, 256 KiB of it kept for demand reads: 768 KiB for prefetches.
        let (mut core, backend, file, stream) = one_prefetched_chunk(1 << 20, 256 << 10);
        let chunk_bytes = 256u64 << 10;
        for (from, to) in [(chunk_bytes / 2, chunk_bytes), (0, chunk_bytes / 2)] {
            read_through(&mut core, file, stream, from, to);
        }
        assert!(
            matches!(core.find(file, 0), Found::Ready { .. }),
            "kept: it was not read front to end"
        );
        assert_eq!(core.stats.prefetch_used_bytes, chunk_bytes);
        assert_eq!(
            third_prefetch(&mut core, &backend, file),
            (1, false),
            "a prefetch could not take data the application had read whole"
        );
        assert!(matches!(core.find(file, 0), Found::Missing));
        assert_eq!(core.stats.wasted_bytes, 0, "nothing of it went unread");
        core.check();
    }

    /// A release that cuts out the only pages of a prefetched chunk nobody has read leaves a
    /// piece read on every page: used data a prefetch may take, not read-ahead to keep.
    #[test]
    fn a_piece_left_with_only_read_pages_is_used_data() {
        let kib = 1u64 << 10;
        let (mut core, _backend, file, stream) = one_prefetched_chunk(1 << 20, 256 * kib);
        // Every page but the first two, back half first: not read from the chunk's start.
        for (from, to) in [(128 * kib, 256 * kib), (8 * kib, 128 * kib)] {
            let Found::Ready { chunk, .. } = core.find(file, from) else {
                panic!("byte {from} is in")
            };
            drop(core.pin(chunk));
            core.unpin(stream, chunk, from, to);
        }
        core.release(file, ByteRange::new(0, 8 * kib));
        assert_eq!(core.stats.wasted_bytes, 8 * kib);
        let Found::Ready { chunk, .. } = core.find(file, 8 * kib) else {
            panic!("the read piece is kept")
        };
        assert_eq!(
            core.chunk(chunk).lru.map(|(class, _)| class),
            Some(Lru::Used),
            "nothing of the piece is left unread"
        );
        core.check();
    }

    /// A prefetched chunk read in part and then dropped read ahead in vain the pages nobody read:
    /// they count as wasted, and only the pages read as used, whether the chunk goes whole or a
    /// release cuts it first. Before, the first read counted the whole chunk as used, so 8 KiB
    /// read of 256 KiB reported 256 KiB used and nothing wasted, where the simulator's page cache
    /// counts the 248 KiB never read as wasted.
    #[test]
    fn a_chunk_read_in_part_wastes_the_pages_nobody_read() {
        let kib = 1u64 << 10;
        let (mut core, _backend, file, stream) = one_prefetched_chunk(1 << 20, 256 * kib);
        let read = |core: &mut Core, from: u64, to: u64| read_through(core, file, stream, from, to);
        // 8 KiB from the middle, then 4 KiB of the same pages again and one page beside them.
        read(&mut core, 64 * kib, 72 * kib);
        read(&mut core, 66 * kib, 70 * kib);
        read(&mut core, 72 * kib, 76 * kib);
        assert_eq!(
            core.stats.prefetch_used_bytes,
            12 * kib,
            "each page counts once"
        );
        // A release cuts out 16 KiB, the 12 KiB read and the page before them, unread.
        core.release(file, ByteRange::new(60 * kib, 16 * kib));
        assert!(matches!(core.find(file, 64 * kib), Found::Missing));
        assert_eq!(core.stats.wasted_bytes, 4 * kib);
        // The pieces go (a demand read may take them): nothing of them was read.
        while core.evict_one(Purpose::Demand, Some(stream)) {}
        assert!(matches!(core.find(file, 0), Found::Missing));
        assert_eq!(core.stats.prefetched_bytes, 256 * kib);
        assert_eq!(core.stats.wasted_bytes, 256 * kib - 12 * kib);
        assert_eq!(
            core.stats.prefetch_used_bytes + core.stats.wasted_bytes,
            core.stats.prefetched_bytes
        );
        core.check();
    }

    /// Where a chunk's buffer is a piece of a mapping, a release inside the chunk cuts the buffer
    /// rather than copying the pages it keeps: the kept chunks' buffers are the old buffer's own
    /// pages at their old addresses, and only the released pages go back to the pool. Nothing is
    /// allocated, so the pages are freed even when memory could not hold copies (the copy path
    /// keeps the chunk whole then). A kept piece the reader has read to its end goes as well.
    #[test]
    fn a_release_inside_a_mapped_chunk_cuts_its_buffer_in_place() {
        let kib = 1u64 << 10;
        let mib = 1u64 << 20;
        let cfg = PolicyConfig {
            name: "none".into(),
            ..PolicyConfig::default()
        };
        let policy =
            foresight_policy::build(&cfg, Arc::new(foresight_policy::Layout::unplaced(&[])))
                .unwrap();
        let (mut core, backend, file, stream) = core_over_holding_with(policy, 4 * mib, mib, true);
        assert_eq!(
            core.fetch(FetchId(0), file, ByteRange::new(0, mib), None, None),
            (1, false)
        );
        fill_and_complete(&mut core, &backend);
        // The chunk holding file byte `pos`: its id, first byte, and its buffer's address and
        // capacity.
        let at = |core: &Core, pos: u64| {
            let Found::Ready {
                chunk, chunk_start, ..
            } = core.find(file, pos)
            else {
                panic!("byte {pos} is not cached")
            };
            let State::Ready { buf, .. } = &core.chunk(chunk).state else {
                unreachable!("found ready")
            };
            assert!(
                buf.is_mapped(),
                "a prefaulted pool lends pieces of its mapping"
            );
            for p in [pos, chunk_start] {
                let i = (p - chunk_start) as usize;
                assert_eq!(buf.as_slice()[i], (p % 251) as u8, "byte {p}");
            }
            (chunk, chunk_start, buf.addr() as u64, buf.capacity() as u64)
        };
        let (_, _, addr, cap) = at(&core, 0);
        assert_eq!(cap, mib);
        // Lend most of the rest, so that copies of the kept pages (1 MiB less 8 KiB, beside the
        // old buffer) would not fit.
        let filler = core.pool.alloc(5 * mib / 2, Purpose::Demand).unwrap();
        let (lent, held) = (core.pool.lent_bytes(), core.pool.held_bytes());
        assert_eq!((lent, held), (7 * mib / 2, 4 * mib));

        core.release(file, ByteRange::new(512 * kib, 8 * kib));
        assert!(matches!(core.find(file, 512 * kib), Found::Missing));
        assert!(matches!(core.find(file, 520 * kib - 1), Found::Missing));
        let (front, front_start, front_addr, front_cap) = at(&core, 511 * kib);
        assert_eq!((front_start, front_addr, front_cap), (0, addr, 512 * kib));
        let (_, back_start, back_addr, back_cap) = at(&core, 700 * kib);
        assert_eq!(
            (back_start, back_addr, back_cap),
            (520 * kib, addr + 520 * kib, mib - 520 * kib),
            "the pages after the cut stay where they were"
        );
        assert_eq!(
            (core.pool.lent_bytes(), core.pool.held_bytes()),
            (lent - 8 * kib, held),
            "the cut pages are free and kept in the pool"
        );
        core.check();

        // The reader has read the first 256 KiB; a release just after them leaves nothing of
        // that piece to keep before the cut.
        drop(core.pin(front));
        core.unpin(stream, front, 0, 256 * kib);
        core.release(file, ByteRange::new(256 * kib, 8 * kib));
        assert!(matches!(core.find(file, 0), Found::Missing));
        let (rest, rest_start, rest_addr, rest_cap) = at(&core, 300 * kib);
        assert_eq!(
            (rest_start, rest_addr, rest_cap),
            (264 * kib, addr + 264 * kib, 248 * kib)
        );
        assert_eq!(core.chunk(rest).consumed_bytes, 0);
        assert_eq!(core.pool.lent_bytes(), lent - 8 * kib - 264 * kib);
        core.pool.free(filler);
        let reserve = mib;
        assert_eq!(
            core.pool.prefetch_available_bytes(),
            4 * mib - reserve - (mib - 8 * kib - 264 * kib),
            "the policy is told the freed bytes are available"
        );
        core.check();
        // Released whole, the pieces go back and join the rest of the mapping.
        core.release(file, ByteRange::new(0, mib));
        assert_eq!(core.pool.lent_bytes(), 0);
        assert_eq!(core.pool.held_bytes(), 4 * mib);
        let whole = core.pool.alloc(4 * mib, Purpose::Demand).unwrap();
        assert_eq!(whole.addr() as u64, addr);
        core.pool.free(whole);
        core.check();
    }

    /// Defers every read of `file` (of any file, if `None`) that misses, and fetches nothing;
    /// other reads it leaves to demand reads.
    struct DeferAll {
        file: Option<FileId>,
        out: VecDeque<Output>,
    }

    impl Policy for DeferAll {
        fn name(&self) -> &str {
            "defer-all"
        }
        fn handle(&mut self, _now: Instant, input: Input) {
            if let Input::Read {
                file,
                range,
                miss: Some(_),
                ..
            } = input
            {
                if self.file.is_none_or(|f| f == file) {
                    self.out.push_back(Output::Defer { file, range });
                }
            }
        }
        fn poll_output(&mut self) -> Option<Output> {
            self.out.pop_front()
        }
    }

    /// A deferred read waits while anything is in flight, another stream's demand reads
    /// included, and gives up on the policy only once the engine has stayed idle, with no read
    /// handed to the backend, for `DEFER_GRACE_NS`; a read issued meanwhile starts the grace
    /// period again.
    #[test]
    fn a_deferred_read_waits_while_anything_is_in_flight_and_for_a_grace_period_after() {
        let (mut core, backend, (a, sa), (b, sb)) = two_streams_deferring_the_first();
        let cv = Arc::new(Condvar::new());
        // The other stream reads on demand; this one's read is deferred.
        core.begin_read(Instant(0), sb, b, 0, 64 << 10);
        assert_eq!(core.in_flight, 1);
        core.begin_read(Instant(0), sa, a, 0, 64 << 10);
        assert_eq!(core.in_flight, 1, "the deferred read issued nothing");
        // The policy has no fetch under way, but the other stream's read is in flight.
        assert_eq!(
            core.defer_wait(Instant(1_000), sa, 0, &cv),
            DeferWait::Woken
        );
        // It completes: the engine is idle, and the waiting reader is woken to time its wait.
        core.complete_all(Instant(2_000), &mut completions(&backend));
        assert!(
            core.defer_waiters.is_empty(),
            "woken when the engine fell idle"
        );
        assert_eq!(
            core.defer_wait(Instant(3_000), sa, 0, &cv),
            DeferWait::AtMost(DEFER_GRACE_NS)
        );
        // The other stream reads again within the grace period: it starts again.
        core.begin_read(Instant(4_000), sb, b, 64 << 10, 128 << 10);
        assert_eq!(
            core.defer_wait(Instant(5_000), sa, 0, &cv),
            DeferWait::Woken
        );
        core.complete_all(Instant(6_000), &mut completions(&backend));
        assert_eq!(
            core.defer_wait(Instant(7_000), sa, 0, &cv),
            DeferWait::AtMost(DEFER_GRACE_NS)
        );
        assert_eq!(
            core.defer_wait(Instant(7_000 + DEFER_GRACE_NS - 1), sa, 0, &cv),
            DeferWait::AtMost(1)
        );
        // Idle for the whole grace period: the read falls back to demand reads.
        assert_eq!(
            core.defer_wait(Instant(7_000 + DEFER_GRACE_NS), sa, 0, &cv),
            DeferWait::Demand
        );
        assert!(!core.streams[sa.0 as usize].deferred);
        core.check();
    }

    /// Fetches the 64 KiB after each read it hears of, and `on_timer` when its timer fires.
    struct AheadAndTimer {
        next_id: u64,
        on_timer: Option<(FileId, ByteRange)>,
        out: VecDeque<Output>,
    }

    impl AheadAndTimer {
        fn fetch(&mut self, file: FileId, range: ByteRange) {
            self.next_id += 1;
            self.out.push_back(Output::Fetch {
                id: FetchId(self.next_id),
                file,
                range,
                into: foresight_policy::Tier::Memory,
            });
        }
    }

    impl Policy for AheadAndTimer {
        fn name(&self) -> &str {
            "ahead-and-timer"
        }
        fn handle(&mut self, _now: Instant, input: Input) {
            if let Input::Read { file, range, .. } = input {
                self.fetch(file, ByteRange::new(range.end().0, 64 << 10));
            }
        }
        fn poll_output(&mut self) -> Option<Output> {
            self.out.pop_front()
        }
        fn poll_timeout(&self) -> Option<Instant> {
            self.on_timer.map(|_| Instant(10))
        }
        fn handle_timeout(&mut self, _now: Instant) {
            if let Some((file, range)) = self.on_timer.take() {
                self.fetch(file, range);
            }
        }
    }

    /// Every read the core hands a backend names the reader it is for: a demand read its
    /// stream's, a fetch the policy made on a stream's read that stream's, and one made outside
    /// any read (on a timer) the file's last reader's. Two readers of one file are two readers,
    /// not one file, which the emulated backend's anticipatory scheduler waits for apart.
    #[test]
    fn each_read_names_its_reader_and_a_fetch_outside_a_read_the_files_last_reader() {
        let policy = Box::new(AheadAndTimer {
            next_id: 0,
            on_timer: Some((FileId(0), ByteRange::new(768 << 10, 64 << 10))),
            out: VecDeque::new(),
        });
        let (mut core, backend, file, sa) =
            core_over_holding_with(policy, 4 << 20, 64 << 10, false);
        let again = mem_file(&mut core, "mem", (1, 1));
        let (same, sb, _, _) = core.open(again);
        assert_eq!((same, sa != sb), (file, true), "one file, two readers");
        core.begin_read(Instant(0), sa, file, 0, 64 << 10);
        core.begin_read(Instant(1), sb, file, 512 << 10, 576 << 10);
        core.timeout(Instant(10));
        let mut readers: Vec<(u64, Option<StreamId>)> = backend
            .held
            .lock()
            .unwrap()
            .iter()
            .chain(core.urgent.iter())
            .chain(core.ahead.iter())
            .map(|r| (r.offset_bytes, r.reader))
            .collect();
        readers.sort_unstable();
        assert_eq!(
            readers,
            vec![
                (0, Some(sa)),
                (64 << 10, Some(sa)),
                (512 << 10, Some(sb)),
                (576 << 10, Some(sb)),
                (768 << 10, Some(sb)),
            ]
        );
        core.check();
    }

    /// A reader's reads still waiting for a submission slot when it closes, while another reader
    /// keeps the file open, are read for the file all the same, but no longer for that reader: its
    /// id may already name a reader of another file, which the anticipatory scheduler must not
    /// charge with them (a read charged to a reader it did not make ends that reader's
    /// anticipation at once and skews its think-time and seek statistics).
    #[test]
    fn reads_queued_for_a_closed_reader_are_not_charged_to_the_next_reader_in_its_slot() {
        let (mut core, backend, file, sa) = core_over_holding(1 << 20, 64 << 10);
        let again = mem_file(&mut core, "mem", (1, 1));
        let (same, _sb, _, _) = core.open(again);
        assert_eq!(same, file, "one file, two readers");
        core.begin_read(Instant(0), sa, file, 0, 256 << 10);
        assert_eq!(
            (core.in_flight, core.urgent.len()),
            (2, 2),
            "two reads queued"
        );
        core.close(Instant(1), sa);
        let other = other_file(&mut core);
        let (_, sc, _, _) = core.open(other);
        assert_eq!(sc, sa, "the closed reader's slot is reused");
        core.complete_all(Instant(2), &mut completions(&backend));
        let readers: Vec<(u64, Option<StreamId>)> = backend
            .held
            .lock()
            .unwrap()
            .iter()
            .map(|r| (r.offset_bytes, r.reader))
            .collect();
        assert_eq!(readers, vec![(128 << 10, None), (192 << 10, None)]);
        core.check();
    }

    /// A deferred read waits past the grace period while another stream, neither deferred nor
    /// waiting for memory, has disclosed reads it has not made: that reader will read on, as the
    /// simulator's clients read on at once. It counts as reading on when its chunk has completed
    /// and woken it but its thread has not run yet (a loaded host). Once it has made its disclosed
    /// reads the short grace period applies again.
    #[test]
    fn a_deferred_read_outwaits_the_grace_period_while_another_stream_has_hinted_reads_left() {
        let (mut core, backend, (a, sa), (b, sb)) = two_streams_deferring_the_first();
        let (cv, other_cv) = (Arc::new(Condvar::new()), Arc::new(Condvar::new()));
        let kib64 = 64 << 10;
        core.hint(
            Instant(0),
            sb,
            b,
            vec![ByteRange::new(0, kib64), ByteRange::new(0, kib64)],
        );
        core.begin_read(Instant(0), sb, b, 0, kib64);
        core.begin_read(Instant(0), sa, a, 0, kib64);
        assert!(core.streams[sa.0 as usize].deferred);
        // The other stream waits for its chunk, which completes and wakes it; it has not run.
        let id = core.covering(b, 0).expect("the demand read's chunk");
        core.wait_for_chunk(id, sb, &other_cv);
        core.complete_all(Instant(2_000), &mut completions(&backend));
        assert_eq!(
            core.defer_wait(Instant(3_000), sa, 0, &cv),
            DeferWait::AtMost(DEFER_GRACE_NS)
        );
        // Idle past the grace period: still waiting, looking again a grace period later.
        let late = Instant(3_000 + DEFER_GRACE_NS + 1);
        assert_eq!(
            core.defer_wait(late, sa, 0, &cv),
            DeferWait::AtMost(DEFER_GRACE_NS)
        );
        // The other stream runs and makes its last disclosed read, of the cached chunk: nothing
        // is read, the engine stays idle, and nobody has promised to read on.
        core.woke(sb);
        core.begin_read(late, sb, b, 0, kib64);
        assert_eq!(core.in_flight, 0);
        assert_eq!(core.defer_wait(late, sa, 0, &cv), DeferWait::Demand);
        // Patience is bounded even while a promise stands: a stream that hints and then stops.
        core.hint(late, sb, b, vec![ByteRange::new(kib64, kib64)]);
        core.begin_read(late, sa, a, 0, kib64);
        assert!(core.streams[sa.0 as usize].deferred);
        // Idle since the first look (nothing has been handed to the backend since).
        assert_eq!(
            core.defer_wait(Instant(3_000 + DEFER_PATIENCE_NS - 1), sa, 0, &cv),
            DeferWait::AtMost(1)
        );
        assert_eq!(
            core.defer_wait(Instant(3_000 + DEFER_PATIENCE_NS), sa, 0, &cv),
            DeferWait::Demand
        );
        core.check();
    }

    /// Stream `b` hints eight reads and makes `gaps_ns.len() + 1` of them, the gaps between them
    /// (from a read's end to the next read) as given; then `a` begins a read, which is deferred.
    /// Returns the core, `a`'s stream and file, and the instant of `a`'s read.
    fn deferred_after_hinted_reads_with_gaps(
        gaps_ns: &[u64],
    ) -> (Core, (FileId, StreamId), Instant) {
        let (mut core, backend, (a, sa), (b, sb)) = two_streams_deferring_the_first();
        let kib64 = 64 << 10;
        core.hint(Instant(0), sb, b, vec![ByteRange::new(0, kib64); 8]);
        let mut t = 1_000;
        for k in 0..=gaps_ns.len() {
            core.begin_read(Instant(t), sb, b, 0, kib64);
            core.complete_all(Instant(t + 1_000), &mut completions(&backend));
            core.end_read(Instant(t + 2_000), sb, kib64, 0, false);
            t += 2_000 + gaps_ns.get(k).copied().unwrap_or(0);
        }
        core.begin_read(Instant(t), sa, a, 0, kib64);
        assert!(core.streams[sa.0 as usize].deferred);
        assert!(!core.busy());
        (core, (a, sa), Instant(t))
    }

    /// The simulator lets a parked read go to the disk once nothing is in flight while the
    /// client it waits for thinks, and the engine follows where it can tell: a stream whose last
    /// `THINK_SAMPLES` gaps between reads (one is enough at first) each lasted at least the grace
    /// period thinks between reads, and a deferred read that no other stream may serve by reading
    /// at once ends as soon as the engine is idle, even while the thinking stream has hinted
    /// reads left. One long gap among short ones (a thread descheduled on a loaded host) is not
    /// thinking, and the long patience applies. (Before, any stream with hinted reads left kept
    /// the deferred read waiting up to 20 ms.)
    #[test]
    fn a_deferred_read_does_not_wait_for_a_stream_that_thinks_between_reads() {
        let cv = Arc::new(Condvar::new());
        let thinking = [1_000_000];
        let (mut core, (_, sa), t) = deferred_after_hinted_reads_with_gaps(&thinking);
        assert_eq!(
            core.defer_wait(t, sa, 0, &cv),
            DeferWait::Demand,
            "a stream that thinks 1 ms between reads is not waited for"
        );
        core.check();
        let descheduled = [20_000, 20_000, 5_000_000, 20_000];
        let (mut core, (_, sa), t) = deferred_after_hinted_reads_with_gaps(&descheduled);
        assert_eq!(
            core.defer_wait(t, sa, 0, &cv),
            DeferWait::AtMost(DEFER_GRACE_NS)
        );
        assert_eq!(
            core.defer_wait(Instant(t.0 + DEFER_GRACE_NS), sa, 0, &cv),
            DeferWait::AtMost(DEFER_GRACE_NS),
            "a stream that reads on at once, descheduled once, is waited for"
        );
        core.check();
    }

    /// When the idle engine ends a deferral, it ends every deferral, as the simulator sends all
    /// its parked reads to the disk at the end of an idle instant. (Before, only the reader that
    /// looked first read on demand; the others, woken when the engine fell idle, found it busy
    /// with that read and waited for the next idle moment: with five thinking clients under
    /// `directed`, the one stream that read on demand got 48 device reads in 1.4 s against 14 to
    /// 20 for each deferred one, where the simulator gave each 27.)
    #[test]
    fn an_idle_engine_ends_every_deferral_at_once_not_only_the_first() {
        let policy = Box::new(DeferAll {
            file: None,
            out: VecDeque::new(),
        });
        let (mut core, _backend, a, sa) = core_over_holding_with(policy, 4 << 20, 64 << 10, false);
        let handle = other_file(&mut core);
        let (b, sb, _, _) = core.open(handle);
        let cv = Arc::new(Condvar::new());
        let kib64 = 64 << 10;
        core.begin_read(Instant(0), sa, a, 0, kib64);
        core.begin_read(Instant(0), sb, b, 0, kib64);
        assert!(core.streams[sa.0 as usize].deferred && core.streams[sb.0 as usize].deferred);
        assert!(!core.busy());
        // No other stream may read at once (the other is deferred too): the deferral ends.
        assert_eq!(
            core.defer_wait(Instant(1_000), sa, 0, &cv),
            DeferWait::Demand
        );
        assert!(core.demand(sa, a, 0, kib64));
        assert!(core.busy());
        // The other read's deferral ended with it, though the engine is busy now.
        assert!(!core.streams[sb.0 as usize].deferred);
        assert_eq!(
            core.defer_wait(Instant(2_000), sb, 0, &cv),
            DeferWait::Demand
        );
        core.check();
    }

    /// A stream that hints reads and then makes none, while it stays open, costs other streams'
    /// deferred reads the long patience once, not on every deferred read: once a deferred read
    /// has waited it out, the stream's promise counts for nothing until it reads again.
    #[test]
    fn a_stream_that_hints_and_stops_reading_costs_the_patience_once_not_per_deferred_read() {
        let (mut core, backend, (a, sa), (b, sb)) = two_streams_deferring_the_first();
        let cv = Arc::new(Condvar::new());
        let kib64 = 64 << 10;
        // Three reads promised; none is made for a long while.
        core.hint(Instant(0), sb, b, vec![ByteRange::new(0, kib64); 3]);
        core.begin_read(Instant(0), sa, a, 0, kib64);
        assert!(core.streams[sa.0 as usize].deferred);
        assert_eq!(
            core.defer_wait(Instant(1_000), sa, 0, &cv),
            DeferWait::AtMost(DEFER_GRACE_NS)
        );
        assert_eq!(
            core.defer_wait(Instant(1_000 + DEFER_GRACE_NS), sa, 0, &cv),
            DeferWait::AtMost(DEFER_GRACE_NS),
            "the first deferral waits for the promise"
        );
        let t = 1_000 + DEFER_PATIENCE_NS;
        assert_eq!(core.defer_wait(Instant(t), sa, 0, &cv), DeferWait::Demand);
        assert!(core.demand(sa, a, 0, kib64));
        core.complete_all(Instant(t), &mut completions(&backend));
        core.end_read(Instant(t), sa, kib64, DEFER_PATIENCE_NS, false);
        // The next deferred read: the promise has lapsed, so the short grace period applies.
        core.begin_read(Instant(t + 1), sa, a, kib64, 2 * kib64);
        assert!(core.streams[sa.0 as usize].deferred);
        assert_eq!(
            core.defer_wait(Instant(t + 2), sa, kib64, &cv),
            DeferWait::AtMost(DEFER_GRACE_NS)
        );
        assert_eq!(
            core.defer_wait(Instant(t + 2 + DEFER_GRACE_NS), sa, kib64, &cv),
            DeferWait::Demand,
            "a stream that broke its promise keeps no one waiting again"
        );
        // A read renews the promise (two hinted reads are left).
        assert!(core.demand(sa, a, kib64, 2 * kib64));
        core.complete_all(Instant(t + 3 + DEFER_GRACE_NS), &mut completions(&backend));
        core.end_read(Instant(t + 3 + DEFER_GRACE_NS), sa, kib64, 0, false);
        let u = t + 10 * DEFER_GRACE_NS;
        core.begin_read(Instant(u), sb, b, 0, kib64);
        core.complete_all(Instant(u), &mut completions(&backend));
        core.begin_read(Instant(u + 1), sa, a, 2 * kib64, 3 * kib64);
        assert_eq!(
            core.defer_wait(Instant(u + 2), sa, 2 * kib64, &cv),
            DeferWait::AtMost(DEFER_GRACE_NS)
        );
        assert_eq!(
            core.defer_wait(Instant(u + 2 + DEFER_GRACE_NS), sa, 2 * kib64, &cv),
            DeferWait::AtMost(DEFER_GRACE_NS),
            "waiting for the stream that read again"
        );
        // It reads again while the engine stays idle (its data is there: nothing is submitted),
        // so when the patience runs out it has kept its promise and does not lapse.
        core.begin_read(Instant(u + 3 + DEFER_GRACE_NS), sb, b, 0, kib64);
        assert_eq!(core.in_flight, 0);
        let v = u + 2 + DEFER_PATIENCE_NS;
        assert_eq!(
            core.defer_wait(Instant(v), sa, 2 * kib64, &cv),
            DeferWait::Demand
        );
        assert!(core.demand(sa, a, 2 * kib64, 3 * kib64));
        core.complete_all(Instant(v), &mut completions(&backend));
        core.end_read(Instant(v), sa, kib64, 0, false);
        core.begin_read(Instant(v + 1), sa, a, 3 * kib64, 4 * kib64);
        assert_eq!(
            core.defer_wait(Instant(v + 2), sa, 3 * kib64, &cv),
            DeferWait::AtMost(DEFER_GRACE_NS)
        );
        assert_eq!(
            core.defer_wait(Instant(v + 2 + DEFER_GRACE_NS), sa, 3 * kib64, &cv),
            DeferWait::AtMost(DEFER_GRACE_NS),
            "a stream that read in the idle spell still promises to read on"
        );
        core.check();
    }
}
