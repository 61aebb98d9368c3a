//! The array-level cache: the RAID driver's own cache, beneath the engine's file-level chunks.
//!
//! Paper 000_a596543dd26dac72.txt (sections 4 and 5.1) runs MSP in the RAID driver's cache, below
//! the page cache; the simulator runs it in a block-level `CacheLayer`. In the engine the same
//! place is between the driver and the emulated RAID-0 backend, so this cache is a backend that
//! wraps that one: every read the driver hands the backend is a block request that reaches the
//! array. It is mapped to volume bytes through the file's placement, shown to the array policy as
//! `Input::Read` of [`VOLUME_FILE`] (the whole request, cut at the file's size, whole sectors, with
//! the first volume byte no cached or in-flight page covers as the miss, as the simulator shows
//! it), and the policy's `Output::Fetch`es are executed at once. The request is then served from
//! the cache's pages, those of the file's bytes it asks for (the pages past a file's end may be
//! the next file's, which would then be held for the wrong file): pages held are copied, pages in flight are waited for, and missing pages are
//! read on demand into the cache first, so later fetches skip them (the policy leaves the skip of
//! cached and in-flight blocks to the driver, as the paper's listing does). A fetch reads the
//! pages of its volume range that are neither held nor in flight; a volume range maps back to the
//! files placed on it, each piece a read of that file, and a piece where no file lies reads
//! nothing (the engine has no volume bytes outside its files). When every piece of a fetch has
//! arrived the policy hears `Input::Fetched`. Nothing here decides what to read ahead.
//!
//! Placements: a file must start at a whole page of the volume (the cache reads whole pages;
//! an open elsewhere is refused, and the emulated backend places files at whole MiB). A file
//! opened takes its place in that table only where no file lies, since the driver may drop the
//! placement (it gives a file it already knows its first id and place). A request is the
//! authority: the first one of a file at a place that holds another (a file the driver forgot,
//! whose id and place a new file was given) takes that place, and every page held or in flight
//! there leaves the cache, so no file is served another's bytes. When the driver is
//! done with a placement ([`IoBackend::file_forgotten`]: it forgot the file, or did not keep the
//! handle an open returned) the placement leaves the table, with its descriptor, and every page
//! held for the file there leaves the cache (a read in flight lands into nothing): the table
//! holds the files the driver knows, not one entry per open (under `contiguous` placement every
//! open takes new volume space), and a later file given the forgotten one's id and place is not
//! served its bytes even where no request can tell the two apart (a file rewritten in place
//! within the file system's clock tick keeps its inode, size and modification time).
//!
//! Faults: a read into the cache that fails, or returns short before the file's end (a transient
//! short read the backend contract allows), leaves the cache when it completes: its pages leave
//! the budget and the page table, so a later request reads them again rather than taking a hole
//! for the file's end. The requests that waited for it get the error (with the OS's code) or the
//! bytes it did read; one that would get none of its bytes is read past the cache instead, since
//! zero bytes tells the driver the file ended. Its fetch, if it was one, is reported
//! `Fetched { ok: false }`, as the simulator reports a fetch not all of whose bytes arrived.
//!
//! Memory: the cache has its own hard budget of `capacity_bytes` (the simulator's
//! `host.raid_cache`), separate from the driver's `BufferPool`: the RAID driver's
//! memory is not the page cache's. Every page the cache holds or has in flight counts, from the
//! moment its read is issued; bytes are kept in the buffer they were read into, one buffer per
//! read, and a buffer is evicted whole, least recently used first, so the count is exactly the
//! bytes held and never exceeds the budget (asserted wherever it grows). A prefetch that does not
//! fit once everything evictable is gone is cut short and the policy hears
//! `Input::MemoryPressure`; a request whose missing pages do not fit is read straight into the
//! driver's buffer, past the cache, so demand never waits for the array cache's memory (as is
//! one whose pages the cache holds for another file, which taking its file's place first, see
//! Placements, leaves only as a safety net). Where two files read at once have overlapping
//! placements, each request takes the overlap for its file and drops the other's pages there.
//!
//! Bounds: reads to the emulated backend are at most its capacity; the rest wait in one FIFO
//! whose length is bounded by the pages the budget holds plus one read per request the driver may
//! have outstanding (asserted). A request served wholly from the cache completes on a delivery
//! thread (through a channel with room for every request the driver may have outstanding),
//! since the driver may submit under its own lock and a completion takes that lock.
//!
//! Shutdown: the cache takes no request after it (each completes with an error, through the
//! delivery thread) and sends the device nothing more; reads still waiting for the device fail
//! then (the device below shuts down too, and a read sent to it after would never come back),
//! and reads already sent complete as they come. Dropping the cache waits for those (at most a
//! grace, past which a read stuck in the device's `pread` is left to land in nothing), then closes
//! the device's port to it (so that no thread of the device still delivers into the cache, and
//! holds it, and with it the device, past the drop) and joins the delivery thread once it has
//! delivered what it holds: the device is then dropped here, and joins its own threads. A cache
//! an array policy's panic poisoned still shuts down and drops without a second panic: it sends
//! and delivers nothing more, drops what the device hands back, and does not wait for the
//! device (the thread that panicked may have been the device's). Nor does it wait for the device
//! once one of the device's threads ended in a panic: the reads that thread held never come
//! back; the cache passes the news on to the engine above, which breaks.
//!
//! The array policy the engine runs is MSP (`msp+...`), which sets no timer and never defers;
//! the cache polls no timer and reads a deferred request on demand.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io;
use std::path::Path;
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Arc, Mutex, Weak};

use foresight_core::{ByteLen, ByteOffset, ByteRange, FetchId, FileId, Instant, StreamId};
use foresight_core::{FetchParts, SECTOR_BYTES};
use foresight_policy::layout::VOLUME_FILE;
use foresight_policy::{Input, Output, Policy, PAGE_BYTES};

use super::{
    BackendKind, CompletionPort, CompletionSink, FileHandle, IoBackend, IoCompletion, IoRequest,
    ModelledVolume,
};
use crate::beneath::RootDir;
use crate::buffer::AlignedBuf;

/// What the array cache did, for [`crate::Stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ArrayStats {
    /// The cache's budget.
    pub capacity_bytes: u64,
    /// Fetches the array policy asked for.
    pub fetches: u64,
    /// Bytes the array policy's fetches read ahead of the requests that reach the array (pages
    /// of the request that prompted a fetch count as that request's, not as read ahead).
    pub prefetched_bytes: u64,
    /// Of those, the bytes of pages evicted or still held without any request having read them.
    pub wasted_bytes: u64,
    /// The most bytes held or in flight at once; never above `capacity_bytes`.
    pub peak_bytes: u64,
    /// Bytes held or in flight when the figures were taken.
    pub held_bytes: u64,
    /// Requests from the driver served from the cache without waiting for the device.
    pub hits: u64,
    /// Requests read past the cache (no room for their missing pages, or pages held for another
    /// file).
    pub bypassed: u64,
    /// Reads the cache sent the device.
    pub device_reads: u64,
    /// Bytes those reads returned.
    pub device_bytes: u64,
    /// Files the cache knows the place of on the volume, when the figures were taken: those the
    /// engine has open or reads, and none it has forgotten.
    pub placed_files: u64,
}

/// A file placed on the volume, for mapping fetches back to files.
struct Placed {
    end_bytes: u64,
    handle: Arc<FileHandle>,
    /// The reader that last read it, while that reader is open: a fetch made by a request with
    /// no reader is its I/O, as the simulator charges it.
    last_reader: Option<StreamId>,
}

enum BufState {
    InFlight,
    Ready {
        data: AlignedBuf,
        valid_bytes: u64,
    },
    /// The read failed: its pages are no longer the cache's; the slot stays until no request
    /// pins it.
    Failed,
}

/// One read's pages: `pages` volume pages from `first_page`, of one file.
struct Buf {
    file: FileId,
    file_volume_bytes: u64,
    first_page: u64,
    pages: u64,
    /// Bytes the read must return unless it fails or is cut short: up to the file's end.
    expect_bytes: u64,
    /// The read returned fewer bytes than `expect_bytes` before the file's end (a transient
    /// short read): its pages are no longer the cache's, and the requests that waited for it
    /// take what it did read; the slot stays until no request pins it.
    detached: bool,
    state: BufState,
    /// Requests that will copy from it.
    pins: u32,
    waiters: Vec<u32>,
    fetch: Option<FetchId>,
    /// Per page, whether it was read ahead and no request has read it yet.
    unread: Vec<bool>,
    tick: u64,
}

/// A request from the driver being served from the cache.
struct Req {
    req: IoRequest,
    vol_bytes: u64,
    /// The buffer of each page the request covers.
    bufs: Vec<u32>,
    /// Each of those once: the buffers it pins.
    pinned: Vec<u32>,
    waits: u32,
    failed: Option<io::Error>,
}

enum InnerOp {
    Fill(u32),
    Bypass(u64),
}

struct State {
    policy: Box<dyn Policy>,
    epoch: std::time::Instant,
    capacity_pages: u64,
    held_pages: u64,
    peak_pages: u64,
    pages: HashMap<u64, u32>,
    bufs: Vec<Option<Buf>>,
    free_bufs: Vec<u32>,
    /// Ready buffers by last use.
    lru: BTreeMap<u64, u32>,
    tick: u64,
    reqs: Vec<Option<Req>>,
    free_reqs: Vec<u32>,
    fetch_parts: FetchParts,
    files: BTreeMap<u64, Placed>,
    inner_ops: HashMap<u64, InnerOp>,
    next_inner_token: u64,
    waiting: VecDeque<IoRequest>,
    inner_out: usize,
    inner_capacity: usize,
    waiting_bound: usize,
    /// Requests finished, to be delivered once the lock is let go.
    done: Vec<IoCompletion>,
    stats: ArrayStats,
    evicted_unread_pages: u64,
    /// Read-ahead pages nobody read that left with a short read (waste, not memory pressure).
    dropped_unread_pages: u64,
    refused_pages: u64,
    pressure_seen: u64,
    /// Shut down: no request is taken, and no read is sent to the device any more.
    shut: bool,
}

/// The array cache over an inner backend. See the module documentation.
pub struct ArrayCacheBackend {
    inner: Arc<dyn IoBackend>,
    shared: Arc<Shared>,
    capacity: usize,
    /// The delivery thread, joined when the cache is dropped.
    delivery: Option<std::thread::JoinHandle<()>>,
    /// Where the device below delivers to the cache; closed when the cache is dropped.
    inner_port: Arc<CompletionPort>,
}

struct Shared {
    state: Mutex<State>,
    inner: Arc<dyn IoBackend>,
    port: Arc<CompletionPort>,
    hits: Mutex<Option<SyncSender<IoCompletion>>>,
    /// Signalled when the last read sent to the device comes back after shutdown, or when a
    /// device thread ends in a panic.
    inner_idle: std::sync::Condvar,
    /// Set when a thread of the device below ended in a panic: the reads it held never come
    /// back, so the drop does not wait for them.
    device_broken: std::sync::atomic::AtomicBool,
}

impl ArrayCacheBackend {
    /// Wraps `inner` (whose completions go to `inner_port`, which this connects) in a cache of
    /// `capacity_bytes` driven by `policy`, taking up to `capacity` requests from the driver,
    /// whose completions go to `port`. Reads beyond the inner backend's own capacity wait in the
    /// cache's queue.
    pub fn start(
        inner: Arc<dyn IoBackend>,
        inner_port: &Arc<CompletionPort>,
        policy: Box<dyn Policy>,
        capacity_bytes: u64,
        capacity: usize,
        port: Arc<CompletionPort>,
    ) -> io::Result<ArrayCacheBackend> {
        let capacity_pages = capacity_bytes / PAGE_BYTES;
        if capacity_pages == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("an array cache of {capacity_bytes} bytes holds no 4 KiB page"),
            ));
        }
        let inner_capacity = inner.capacity();
        assert!(inner_capacity > 0, "an inner backend with no room");
        let (tx, rx) = sync_channel::<IoCompletion>(capacity);
        let deliver = port.clone();
        let delivery = std::thread::Builder::new()
            .name("foresight-array-hits".into())
            .spawn(move || {
                super::lifecycle::PanicAlarm(deliver.clone()).watch(|| {
                    while let Ok(c) = rx.recv() {
                        deliver.deliver(c);
                    }
                })
            })?;
        let state = State {
            policy,
            epoch: std::time::Instant::now(),
            capacity_pages,
            held_pages: 0,
            peak_pages: 0,
            pages: HashMap::new(),
            bufs: Vec::new(),
            free_bufs: Vec::new(),
            lru: BTreeMap::new(),
            tick: 0,
            reqs: Vec::new(),
            free_reqs: Vec::new(),
            fetch_parts: FetchParts::new(),
            files: BTreeMap::new(),
            inner_ops: HashMap::new(),
            next_inner_token: 0,
            waiting: VecDeque::new(),
            inner_out: 0,
            inner_capacity,
            // Every waiting read is a buffer of at least one page the budget counts, or one
            // request the driver has outstanding read past the cache.
            waiting_bound: capacity_pages as usize + capacity,
            done: Vec::new(),
            stats: ArrayStats {
                capacity_bytes: capacity_pages * PAGE_BYTES,
                ..ArrayStats::default()
            },
            evicted_unread_pages: 0,
            dropped_unread_pages: 0,
            refused_pages: 0,
            pressure_seen: 0,
            shut: false,
        };
        let shared = Arc::new(Shared {
            state: Mutex::new(state),
            inner: inner.clone(),
            port,
            hits: Mutex::new(Some(tx)),
            inner_idle: std::sync::Condvar::new(),
            device_broken: std::sync::atomic::AtomicBool::new(false),
        });
        let sink: Arc<dyn CompletionSink> = shared.clone();
        let weak: Weak<dyn CompletionSink> = Arc::downgrade(&sink);
        inner_port.connect(weak);
        Ok(ArrayCacheBackend {
            inner,
            shared,
            capacity,
            delivery: Some(delivery),
            inner_port: inner_port.clone(),
        })
    }

    /// What the cache has done so far.
    pub fn stats(&self) -> ArrayStats {
        // Counters only: a report of a cache an array policy's panic poisoned (the engine above
        // is broken too) reads them as they were left rather than panic.
        self.shared.lock_even_poisoned().0.snapshot()
    }

    /// Checks that every page is counted once: the budget's count is the pages of the buffers
    /// the cache holds or reads (a detached one while its read is in flight), the page table
    /// maps exactly the pages of the buffers it holds, and the eviction line holds exactly the
    /// buffers that have landed.
    #[cfg(test)]
    fn audit(&self) {
        let st = self.shared.lock();
        let mut held = 0;
        let mut mapped = 0;
        let mut landed = 0;
        for (b, x) in st.bufs.iter().enumerate() {
            let Some(x) = x else { continue };
            let in_flight = matches!(x.state, BufState::InFlight);
            if !x.detached || in_flight {
                held += x.pages;
            }
            if !x.detached {
                for p in x.first_page..x.first_page + x.pages {
                    assert_eq!(
                        st.pages.get(&p),
                        Some(&(b as u32)),
                        "page {p} of buffer {b}"
                    );
                }
                mapped += x.pages;
                if !in_flight {
                    assert_eq!(st.lru.get(&x.tick), Some(&(b as u32)), "buffer {b}");
                    landed += 1;
                }
            } else {
                assert!(in_flight || x.pins > 0, "a detached buffer {b} nobody uses");
            }
        }
        assert_eq!(st.held_pages, held, "pages counted");
        assert_eq!(st.pages.len() as u64, mapped, "pages mapped");
        assert_eq!(st.lru.len(), landed, "buffers in the eviction line");
        assert!(st.held_pages <= st.capacity_pages);
    }

    fn record(&self, h: &FileHandle) -> io::Result<()> {
        let Some(start) = h.volume_offset_bytes else {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "the array cache needs files placed on a modelled volume",
            ));
        };
        if h.size_bytes == 0 {
            return Ok(());
        }
        if !start.is_multiple_of(PAGE_BYTES) {
            // The cache reads whole pages: the file's first page starts before the file (its
            // file offset would be negative) and is the previous file's last.
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "the array cache needs files placed at whole 4 KiB pages; {} is at volume \
                     byte {start}",
                    h.path.display()
                ),
            ));
        }
        let copy = FileHandle {
            id: h.id,
            path: h.path.clone(),
            file: h.file.as_ref().map(|f| f.try_clone()).transpose()?,
            direct: h.direct,
            size_bytes: h.size_bytes,
            identity: h.identity,
            modified: h.modified,
            volume_offset_bytes: h.volume_offset_bytes,
        };
        let end = start + h.size_bytes;
        let mut st = self.shared.lock();
        // The driver may not keep this placement (it gives a file it already knows its first
        // id and place), so it takes only volume bytes no file holds; a file read where another
        // was is put there by its first request (`State::place`).
        if st.files.range(..end).any(|(_, p)| p.end_bytes > start) {
            return Ok(());
        }
        st.files.insert(
            start,
            Placed {
                end_bytes: end,
                handle: Arc::new(copy),
                last_reader: None,
            },
        );
        Ok(())
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("array cache poisoned")
    }

    /// The state, and whether a panic under the lock (the array policy's) poisoned it, for
    /// the paths that must go on then: shutdown, drop, the device's completions, and the
    /// counters' snapshot. A poisoned state may be half-updated, so they touch only the
    /// shutdown flag and the count of reads out at the device, or read counters; anything else
    /// of a poisoned cache panics (a request, which
    /// so reaches the driver, and poisons it, and its readers hear so).
    fn lock_even_poisoned(&self) -> (std::sync::MutexGuard<'_, State>, bool) {
        match self.state.lock() {
            Ok(st) => (st, false),
            Err(poisoned) => (poisoned.into_inner(), true),
        }
    }

    /// Sends what the state queued for the inner backend, and delivers finished requests, with
    /// the lock let go.
    fn flush(&self, mut st: std::sync::MutexGuard<'_, State>, from_submit: bool) {
        let mut batch = Vec::new();
        if st.shut {
            st.fail_waiting();
        }
        while st.inner_out < st.inner_capacity {
            let Some(r) = st.waiting.pop_front() else {
                break;
            };
            st.inner_out += 1;
            batch.push(r);
        }
        let mut done = std::mem::take(&mut st.done);
        drop(st);
        if !batch.is_empty() {
            self.inner.submit(&mut batch);
        }
        if done.is_empty() {
            return;
        }
        if from_submit {
            // The driver may hold its lock while it submits; its completion handler takes it.
            let tx = self.hits.lock().expect("array hits poisoned").clone();
            if let Some(tx) = tx {
                for c in done {
                    // The channel has room for every request the driver may have outstanding.
                    let _ = tx.send(c);
                }
            }
        } else {
            self.port.deliver_all(&mut done);
        }
    }
}

impl CompletionSink for Shared {
    fn complete(&self, c: IoCompletion) {
        let (mut st, poisoned) = self.lock_even_poisoned();
        st.inner_out -= 1;
        if poisoned {
            // Dropped with its buffer, not a panic on the device's thread, which would then
            // deliver nothing more (and the drop waits for what it holds).
            if st.shut && st.inner_out == 0 {
                self.inner_idle.notify_all();
            }
            return;
        }
        st.inner_done(c);
        if st.shut && st.inner_out == 0 {
            self.inner_idle.notify_all();
        }
        self.flush(st, false);
    }

    /// A thread of the device below ended in a panic (the array policy's, hearing of a fetch
    /// on it, or the device's own): the reads it held never come back. The drop stops waiting
    /// for them, and the driver above hears so and breaks. Before, a panic of the array
    /// policy there left the driver's reader of that read waiting forever.
    fn backend_panicked(&self, why: &str) {
        self.device_broken
            .store(true, std::sync::atomic::Ordering::Release);
        // Under the lock, so that a drop that saw the flag unset is already waiting.
        let st = self.lock_even_poisoned();
        self.inner_idle.notify_all();
        drop(st);
        self.port.backend_panicked(why);
    }
}

/// The same error for another request: the OS's code where there is one (the reader may act on
/// `EIO` and the like), else the kind and the message.
fn copy_error(e: &io::Error) -> io::Error {
    match e.raw_os_error() {
        Some(code) => io::Error::from_raw_os_error(code),
        None => io::Error::new(e.kind(), e.to_string()),
    }
}

/// What a read gets that the cache did not send the device because it was shut down.
fn shut_down() -> io::Error {
    io::Error::other("the array cache was shut down: it takes and sends no more reads")
}

fn pages_of(vol: u64, len: u64) -> (u64, u64) {
    (vol / PAGE_BYTES, (vol + len).div_ceil(PAGE_BYTES))
}

impl State {
    fn now(&self) -> Instant {
        Instant(self.epoch.elapsed().as_nanos() as u64)
    }

    fn snapshot(&self) -> ArrayStats {
        let unread: u64 = self
            .bufs
            .iter()
            .flatten()
            .filter(|b| matches!(b.state, BufState::Ready { .. }))
            .map(|b| b.unread.iter().filter(|&&u| u).count() as u64)
            .sum();
        ArrayStats {
            wasted_bytes: (self.evicted_unread_pages + self.dropped_unread_pages + unread)
                * PAGE_BYTES,
            peak_bytes: self.peak_pages * PAGE_BYTES,
            held_bytes: self.held_pages * PAGE_BYTES,
            placed_files: self.files.len() as u64,
            ..self.stats
        }
    }

    fn inner_token(&mut self, op: InnerOp) -> u64 {
        let t = self.next_inner_token;
        self.next_inner_token += 1;
        self.inner_ops.insert(t, op);
        t
    }

    fn queue_inner(&mut self, r: IoRequest) {
        self.waiting.push_back(r);
        assert!(
            self.waiting.len() <= self.waiting_bound,
            "{} reads wait for the device, more than the bound {}",
            self.waiting.len(),
            self.waiting_bound
        );
    }

    /// Pages that could be made free by evicting every buffer nobody pins.
    fn admissible_pages(&self) -> u64 {
        let evictable: u64 = self
            .lru
            .values()
            .filter_map(|&b| self.bufs[b as usize].as_ref())
            .filter(|b| b.pins == 0)
            .map(|b| b.pages)
            .sum();
        self.capacity_pages - self.held_pages + evictable
    }

    /// Makes room for `pages` more pages by evicting least recently used buffers nobody pins;
    /// returns how many of them fit.
    fn make_room(&mut self, pages: u64) -> u64 {
        let mut cursor = 0u64;
        while self.held_pages + pages > self.capacity_pages {
            let Some((&tick, &b)) = self.lru.range(cursor..).next() else {
                break;
            };
            cursor = tick + 1;
            if self.bufs[b as usize].as_ref().is_some_and(|x| x.pins == 0) {
                self.evict(b);
            }
        }
        pages.min(self.capacity_pages - self.held_pages)
    }

    /// Makes `file`, read at volume byte `base`, the owner of its volume bytes if it is not yet:
    /// the files it overlaps leave the table and every page held or in flight there leaves the
    /// cache, since those are another file's bytes (a forgotten file whose id and place a new
    /// file was given would otherwise have its bytes served as the new file's).
    fn place(&mut self, file: &Arc<FileHandle>, base: u64) {
        let same = |h: &FileHandle| {
            (h.id, h.identity, h.size_bytes, h.modified)
                == (file.id, file.identity, file.size_bytes, file.modified)
        };
        let end = base + file.size_bytes;
        if self
            .files
            .get(&base)
            .is_some_and(|p| p.end_bytes == end && same(&p.handle))
        {
            return;
        }
        let overlapping: Vec<u64> = self
            .files
            .range(..end)
            .filter(|(_, p)| p.end_bytes > base)
            .map(|(&s, _)| s)
            .collect();
        for s in overlapping {
            self.files.remove(&s);
        }
        self.files.insert(
            base,
            Placed {
                end_bytes: end,
                handle: file.clone(),
                last_reader: None,
            },
        );
        let (first, last) = pages_of(base, file.size_bytes);
        let stale: Vec<u32> = self
            .bufs
            .iter()
            .enumerate()
            .filter_map(|(b, x)| x.as_ref().map(|x| (b as u32, x)))
            .filter(|(_, x)| !x.detached && x.first_page < last && x.first_page + x.pages > first)
            .map(|(b, _)| b)
            .collect();
        for b in stale {
            self.drop_buffer(b);
        }
    }

    /// The engine is done with `file` placed at volume byte `base`: its placement leaves the
    /// table and every page held or in flight for it there leaves the cache (a read in flight
    /// lands into nothing, `inner_done`), so the table does not grow with the opens and the next
    /// file given that id and place, which a request could not tell from this one (a file
    /// rewritten in place within the file system's clock tick), is not served this one's bytes.
    fn forget(&mut self, file: FileId, base: u64) {
        if self.files.get(&base).is_some_and(|p| p.handle.id == file) {
            self.files.remove(&base);
        }
        let held: Vec<u32> = self
            .bufs
            .iter()
            .enumerate()
            .filter_map(|(b, x)| x.as_ref().map(|x| (b as u32, x)))
            .filter(|(_, x)| !x.detached && x.file == file && x.file_volume_bytes == base)
            .map(|(b, _)| b)
            .collect();
        for b in held {
            self.drop_buffer(b);
        }
    }

    /// Takes buffer `b` out of the cache for good: evicted if nobody uses it, else detached
    /// (out of the page table; its pages leave the budget once no read is filling it, and its
    /// slot once nobody pins it).
    fn drop_buffer(&mut self, b: u32) {
        let x = self.bufs[b as usize].as_mut().expect("live buffer");
        let ready = matches!(x.state, BufState::Ready { .. });
        if ready && x.pins == 0 {
            let unread = x.unread.iter().filter(|&&u| u).count() as u64;
            let buf = self.bufs[b as usize].take().expect("live buffer");
            self.free_bufs.push(b);
            self.lru.remove(&buf.tick);
            self.dropped_unread_pages += unread;
            self.unmap(&buf, b);
            self.held_pages -= buf.pages;
            return;
        }
        x.detached = true;
        let (tick, pages) = (x.tick, x.pages);
        if ready {
            let unread = x.unread.iter().filter(|&&u| u).count() as u64;
            x.unread.iter_mut().for_each(|u| *u = false);
            self.dropped_unread_pages += unread;
            self.lru.remove(&tick);
            self.held_pages -= pages;
        }
        // A read in flight keeps its pages counted until it lands (`inner_done`).
        let x = self.bufs[b as usize].take().expect("live buffer");
        self.unmap(&x, b);
        self.bufs[b as usize] = Some(x);
    }

    fn evict(&mut self, b: u32) {
        let buf = self.bufs[b as usize].take().expect("live buffer");
        self.free_bufs.push(b);
        self.lru.remove(&buf.tick);
        self.evicted_unread_pages += buf.unread.iter().filter(|&&u| u).count() as u64;
        self.unmap(&buf, b);
        self.held_pages -= buf.pages;
    }

    fn unmap(&mut self, buf: &Buf, b: u32) {
        for p in buf.first_page..buf.first_page + buf.pages {
            if self.pages.get(&p) == Some(&b) {
                self.pages.remove(&p);
            }
        }
    }

    /// Starts a read of `pages` pages of `file` from volume page `first_page` into the cache;
    /// the caller made room.
    fn start_fill(
        &mut self,
        file: &Arc<FileHandle>,
        first_page: u64,
        pages: u64,
        fetch: Option<FetchId>,
        prefetched: impl Fn(u64) -> bool,
        reader: Option<StreamId>,
    ) -> Option<u32> {
        let base = file.volume_offset_bytes.expect("placed file");
        let data = AlignedBuf::new((pages * PAGE_BYTES) as usize)?;
        self.held_pages += pages;
        assert!(
            self.held_pages <= self.capacity_pages,
            "the array cache holds {} pages, over its budget of {}",
            self.held_pages,
            self.capacity_pages
        );
        self.peak_pages = self.peak_pages.max(self.held_pages);
        let unread: Vec<bool> = (first_page..first_page + pages)
            .map(|p| fetch.is_some() && prefetched(p))
            .collect();
        self.stats.prefetched_bytes += unread.iter().filter(|&&u| u).count() as u64 * PAGE_BYTES;
        let offset_bytes = first_page * PAGE_BYTES - base;
        let len = (pages * PAGE_BYTES) as usize;
        let buf = Buf {
            file: file.id,
            file_volume_bytes: base,
            first_page,
            pages,
            expect_bytes: (len as u64).min(file.size_bytes.saturating_sub(offset_bytes)),
            detached: false,
            state: BufState::InFlight,
            pins: 0,
            waiters: Vec::new(),
            fetch,
            unread,
            tick: 0,
        };
        let b = foresight_core::take_slot(&mut self.bufs, &mut self.free_bufs, Some(buf));
        for p in first_page..first_page + pages {
            self.pages.insert(p, b);
        }
        let token = self.inner_token(InnerOp::Fill(b));
        self.queue_inner(IoRequest {
            token,
            file: file.clone(),
            offset_bytes,
            buf: data,
            buf_offset: 0,
            len_bytes: len,
            reader,
        });
        Some(b)
    }

    /// Executes an array fetch of volume `range`: reads the pages no buffer holds or reads,
    /// piece by piece of the files placed there. Returns the reads issued and whether memory
    /// cut the fetch short.
    fn fetch(
        &mut self,
        id: FetchId,
        range: ByteRange,
        trigger: (u64, u64),
        context: Option<StreamId>,
    ) -> (u32, bool) {
        let (first, end) = pages_of(range.start.0, range.len.0);
        let mut reads = 0;
        let mut p = first;
        while p < end {
            if self.pages.contains_key(&p) {
                p += 1;
                continue;
            }
            let run_start = p;
            while p < end && !self.pages.contains_key(&p) {
                p += 1;
            }
            // The files placed on the run, in volume order; bytes outside them read nothing.
            let pieces: Vec<(u64, u64, Arc<FileHandle>, Option<StreamId>)> = self
                .files
                .range(..p * PAGE_BYTES)
                .filter(|(_, f)| f.end_bytes > run_start * PAGE_BYTES)
                .map(|(&s, f)| {
                    let a = (s / PAGE_BYTES).max(run_start);
                    let b = f.end_bytes.div_ceil(PAGE_BYTES).min(p);
                    (a, b, f.handle.clone(), f.last_reader)
                })
                .collect();
            for (a, b, handle, last) in pieces {
                let fit = self.make_room(b - a);
                if fit == 0 {
                    self.refused_pages += b - a;
                    return (reads, true);
                }
                let ok = self
                    .start_fill(
                        &handle,
                        a,
                        fit,
                        Some(id),
                        |q| q < trigger.0 || q >= trigger.1,
                        context.or(last),
                    )
                    .is_some();
                if !ok {
                    return (reads, true);
                }
                reads += 1;
                if fit < b - a {
                    self.refused_pages += b - a - fit;
                    return (reads, true);
                }
            }
        }
        (reads, false)
    }

    /// Executes what the policy asked for. `trigger` is the request's pages and reader.
    fn drain(&mut self, now: Instant, trigger: Option<(u64, u64, Option<StreamId>)>) {
        let mut done_now: Vec<(FetchId, bool)> = Vec::new();
        while let Some(out) = self.policy.poll_output() {
            match out {
                Output::Fetch {
                    id, file, range, ..
                } if file == VOLUME_FILE => {
                    self.stats.fetches += 1;
                    let (a, b, who) = trigger.unwrap_or((0, 0, None));
                    let (reads, short) = self.fetch(id, range, (a, b), who);
                    if reads == 0 {
                        done_now.push((id, !short));
                    } else {
                        self.fetch_parts.started(id, reads, short);
                    }
                }
                // A fetch of anything but the volume has nothing to read at this level.
                Output::Fetch { id, .. } => done_now.push((id, false)),
                // Only the volume's pages are here. A release is the policy's choice, not memory
                // pressure: its unread pages are waste (`drop_buffer`), as in the simulator.
                // MSP, the one array policy the engine runs, never releases (the tests check
                // it): a release comes from a policy wrapped around it
                // (`EngineBuilder::wrap_array_policy`), and one that covers only part of a
                // buffer leaves that buffer whole, where the simulator drops the pages it
                // covers, since a buffer is read, held and evicted whole and cutting one would
                // copy its pages for no policy that asks for it.
                Output::Release { file, range } if file == VOLUME_FILE && !range.is_empty() => {
                    let (first, end) = pages_of(range.start.0, range.len.0);
                    let inside: Vec<u32> = (first..end)
                        .filter_map(|p| self.pages.get(&p).copied())
                        .filter(|&b| {
                            self.bufs[b as usize].as_ref().is_some_and(|x| {
                                x.pins == 0
                                    && matches!(x.state, BufState::Ready { .. })
                                    && x.first_page >= first
                                    && x.first_page + x.pages <= end
                            })
                        })
                        .collect();
                    for b in inside {
                        if self.bufs[b as usize].is_some() {
                            self.drop_buffer(b);
                        }
                    }
                }
                // No storage tiers, no timer-driven deferral here (see the module docs).
                Output::Release { .. }
                | Output::Cancel { .. }
                | Output::Evict { .. }
                | Output::Defer { .. } => {}
            }
        }
        for (id, ok) in done_now {
            self.policy.handle(now, Input::Fetched { id, ok });
            self.drain(now, None);
        }
        let pressure = self.evicted_unread_pages + self.refused_pages;
        if pressure > self.pressure_seen {
            self.pressure_seen = pressure;
            let free = (self.capacity_pages - self.held_pages) * PAGE_BYTES;
            self.policy.handle(
                now,
                Input::MemoryPressure {
                    available: ByteLen(free),
                },
            );
            self.drain(now, None);
        }
    }

    /// Fails every read waiting for the device, as a read the device failed: the cache is shut
    /// down, and the device (shut down too) may not serve them. Their requests get the error,
    /// or the bytes they have already; a request read past the cache for want of any goes
    /// through here again.
    fn fail_waiting(&mut self) {
        while let Some(r) = self.waiting.pop_front() {
            self.inner_done(IoCompletion {
                token: r.token,
                buf: r.buf,
                result: Err(shut_down()),
            });
        }
    }

    /// A request from the driver.
    fn submit(&mut self, req: IoRequest) {
        req.assert_valid();
        if self.shut {
            // Every request completes, with an error here: nothing reads any more.
            self.done.push(IoCompletion {
                token: req.token,
                buf: req.buf,
                result: Err(shut_down()),
            });
            return;
        }
        let Some(base) = req.file.volume_offset_bytes else {
            self.bypass(req);
            return;
        };
        let now = self.now();
        let vol = base + req.offset_bytes;
        // The block request the array sees: the file's bytes asked for, in whole sectors.
        let want = (req.len_bytes as u64).min(req.file.size_bytes.saturating_sub(req.offset_bytes));
        if want == 0 {
            self.bypass(req);
            return;
        }
        self.place(&req.file, base);
        if let Some(p) = self.files.get_mut(&base) {
            p.last_reader = req.reader.or(p.last_reader);
        }
        let lba = vol / SECTOR_BYTES;
        let sectors = (vol + want).div_ceil(SECTOR_BYTES) - lba;
        // Only the pages of the file's bytes: pages past its end may be another file's.
        let (first, end) = pages_of(vol, want);
        let (bfirst, bend) = pages_of(lba * SECTOR_BYTES, sectors * SECTOR_BYTES);
        let miss = (bfirst..bend)
            .find(|p| !self.pages.contains_key(p))
            .map(|p| ByteOffset((p * PAGE_BYTES).max(lba * SECTOR_BYTES)));
        // The RAID driver's policy sees block requests, not processes: one anonymous stream.
        self.policy.handle(
            now,
            Input::Read {
                stream: StreamId(0),
                file: VOLUME_FILE,
                range: ByteRange::new(lba * SECTOR_BYTES, sectors * SECTOR_BYTES),
                miss,
            },
        );
        self.drain(now, Some((first, end, req.reader)));
        // Serve from the cache: every page a buffer of this file holds or reads, and the missing
        // ones read into the cache on demand if they fit. The buffers it will copy from are
        // pinned first, so making room for its missing pages cannot evict them.
        let mut pinned: Vec<u32> = Vec::new();
        let mut foreign = false;
        let mut missing = 0u64;
        for p in first..end {
            match self.pages.get(&p) {
                Some(&b) => {
                    let x = self.bufs[b as usize].as_mut().expect("mapped buffer");
                    foreign |= x.file != req.file.id || x.file_volume_bytes != base;
                    if !pinned.contains(&b) {
                        x.pins += 1;
                        pinned.push(b);
                    }
                }
                None => missing += 1,
            }
        }
        let free_pages = self.capacity_pages - self.held_pages;
        if foreign || (missing > free_pages && missing > self.admissible_pages()) {
            for &b in &pinned {
                self.bufs[b as usize].as_mut().expect("pinned buffer").pins -= 1;
            }
            self.bypass(req);
            return;
        }
        let mut p = first;
        while p < end {
            if self.pages.contains_key(&p) {
                p += 1;
                continue;
            }
            let a = p;
            while p < end && !self.pages.contains_key(&p) {
                p += 1;
            }
            let fit = self.make_room(p - a);
            assert_eq!(
                fit,
                p - a,
                "room for the request's missing pages was checked"
            );
            match self.start_fill(&req.file, a, p - a, None, |_| false, req.reader) {
                Some(b) => {
                    self.bufs[b as usize].as_mut().expect("new buffer").pins += 1;
                    pinned.push(b);
                }
                None => {
                    // The allocator refused: read the request past the cache. Reads already
                    // started for it fill the cache for whoever reads those pages next.
                    for &b in &pinned {
                        self.bufs[b as usize].as_mut().expect("pinned buffer").pins -= 1;
                    }
                    self.bypass(req);
                    return;
                }
            }
        }
        let bufs: Vec<u32> = (first..end).map(|p| self.pages[&p]).collect();
        let slot = foresight_core::take_slot(&mut self.reqs, &mut self.free_reqs, None);
        let mut waits = 0;
        for &b in &pinned {
            let x = self.bufs[b as usize].as_mut().expect("pinned buffer");
            if matches!(x.state, BufState::InFlight) {
                x.waiters.push(slot);
                waits += 1;
            }
        }
        self.reqs[slot as usize] = Some(Req {
            req,
            vol_bytes: vol,
            bufs,
            pinned,
            waits,
            failed: None,
        });
        if waits == 0 {
            self.stats.hits += 1;
            self.finish(slot);
        }
    }

    fn bypass(&mut self, mut req: IoRequest) {
        self.stats.bypassed += 1;
        let token = self.inner_token(InnerOp::Bypass(req.token));
        req.token = token;
        self.queue_inner(req);
    }

    /// Copies a request's bytes out of its buffers and completes it.
    fn finish(&mut self, slot: u32) {
        let Req {
            mut req,
            vol_bytes,
            bufs,
            pinned,
            failed,
            ..
        } = self.reqs[slot as usize].take().expect("live request");
        self.free_reqs.push(slot);
        let len = req.len_bytes as u64;
        let mut copied = 0u64;
        let mut short = failed.is_some();
        let mut last_used = None;
        for (k, &b) in bufs.iter().enumerate() {
            if short {
                break;
            }
            let x = self.bufs[b as usize].as_mut().expect("pinned buffer");
            let page = vol_bytes / PAGE_BYTES + k as u64;
            let from = (page * PAGE_BYTES).max(vol_bytes);
            let to = ((page + 1) * PAGE_BYTES).min(vol_bytes + len);
            let BufState::Ready { data, valid_bytes } = &x.state else {
                short = true;
                continue;
            };
            let in_buf = from - x.first_page * PAGE_BYTES;
            let have = valid_bytes.saturating_sub(in_buf).min(to - from);
            let dst = req.buf_offset + (from - vol_bytes) as usize;
            req.buf.as_mut_slice()[dst..dst + have as usize]
                .copy_from_slice(&data.as_slice()[in_buf as usize..(in_buf + have) as usize]);
            copied += have;
            x.unread[(page - x.first_page) as usize] = false;
            if last_used != Some(b) && !x.detached {
                // Used now: last in the line for eviction. Each buffer gets a tick of its own
                // (the line is keyed by tick), and a buffer's pages are consecutive here.
                last_used = Some(b);
                self.tick += 1;
                self.lru.remove(&x.tick);
                x.tick = self.tick;
                self.lru.insert(self.tick, b);
            }
            if have < to - from {
                short = true;
            }
        }
        for b in pinned {
            let x = self.bufs[b as usize].as_mut().expect("pinned buffer");
            x.pins -= 1;
            // A failed or short read's slot goes once nobody pins it.
            if x.pins == 0 && (x.detached || matches!(x.state, BufState::Failed)) {
                self.bufs[b as usize] = None;
                self.free_bufs.push(b);
            }
        }
        let result = match failed {
            Some(e) if copied == 0 => Err(e),
            None if copied == 0 => {
                // The request asks for bytes of the file and the cache has none of them (a
                // short read it waited for stopped before them): zero bytes would tell the
                // driver the file ended, so the device is asked.
                self.bypass(req);
                return;
            }
            _ => Ok(copied as usize),
        };
        self.done.push(IoCompletion {
            token: req.token,
            buf: req.buf,
            result,
        });
    }

    fn inner_done(&mut self, c: IoCompletion) {
        let op = self
            .inner_ops
            .remove(&c.token)
            .expect("a read the cache issued");
        if let Ok(n) = c.result {
            self.stats.device_reads += 1;
            self.stats.device_bytes += n as u64;
        }
        let b = match op {
            InnerOp::Bypass(token) => {
                self.done.push(IoCompletion { token, ..c });
                return;
            }
            InnerOp::Fill(b) => b,
        };
        let now = self.now();
        self.tick += 1;
        let tick = self.tick;
        let (waiters, fetch, error, complete) = {
            let x = self.bufs[b as usize].as_mut().expect("buffer in flight");
            let waiters = std::mem::take(&mut x.waiters);
            match c.result {
                Ok(n) => {
                    x.state = BufState::Ready {
                        data: c.buf,
                        valid_bytes: n as u64,
                    };
                    x.tick = tick;
                    (
                        waiters,
                        x.fetch,
                        None,
                        n as u64 >= x.expect_bytes && !x.detached,
                    )
                }
                Err(e) => {
                    x.state = BufState::Failed;
                    (waiters, x.fetch, Some(e), false)
                }
            }
        };
        if complete {
            self.lru.insert(tick, b);
        } else {
            // A failed read, or one cut short before the file's end (a later request for those
            // pages would find them missing or, worse, empty, and take that for the file's end),
            // or one taken out of the cache while in flight: the pages leave the cache (and its
            // budget) now; whoever waited takes what came.
            let x = self.bufs[b as usize].as_mut().expect("buffer");
            let unread = x.unread.iter().filter(|&&u| u).count() as u64;
            x.unread.iter_mut().for_each(|u| *u = false);
            x.detached = true;
            let (pins, pages) = (x.pins, x.pages);
            self.dropped_unread_pages += unread;
            let x = self.bufs[b as usize].take().expect("buffer");
            self.unmap(&x, b);
            self.bufs[b as usize] = Some(x);
            self.held_pages -= pages;
            if pins == 0 {
                self.bufs[b as usize] = None;
                self.free_bufs.push(b);
            }
        }
        for w in waiters {
            let r = self.reqs[w as usize].as_mut().expect("waiting request");
            r.waits -= 1;
            if let Some(e) = &error {
                r.failed = Some(copy_error(e));
            }
            if r.waits == 0 {
                self.finish(w);
            }
        }
        if let Some(id) = fetch.filter(|_| !self.shut) {
            // Not all of the fetch's bytes arrived: the policy hears `ok: false`. (Once shut
            // down, the policy hears nothing, so it asks for nothing more.)
            if let Some(ok) = self.fetch_parts.part_done(id, complete) {
                self.policy.handle(now, Input::Fetched { id, ok });
                self.drain(now, None);
            }
        }
    }
}

impl IoBackend for ArrayCacheBackend {
    fn kind(&self) -> BackendKind {
        self.inner.kind()
    }

    fn open(&self, path: &Path, id: FileId, direct: bool) -> io::Result<FileHandle> {
        let h = self.inner.open(path, id, direct)?;
        self.record(&h)?;
        Ok(h)
    }

    fn open_beneath(
        &self,
        root: &RootDir,
        rel: &Path,
        id: FileId,
        direct: bool,
    ) -> io::Result<FileHandle> {
        let h = self.inner.open_beneath(root, rel, id, direct)?;
        self.record(&h)?;
        Ok(h)
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn submit(&self, batch: &mut Vec<IoRequest>) {
        let mut st = self.shared.lock();
        for r in batch.drain(..) {
            st.submit(r);
        }
        self.shared.flush(st, true);
    }

    fn reader_closed(&self, reader: StreamId) {
        // A poisoned cache issues no fetch, for that reader or any; the driver's reader closes
        // in its drop, which must not panic.
        if let (mut st, false) = self.shared.lock_even_poisoned() {
            // A fetch the cache issues from now on is not that reader's: its id may name the
            // next reader, of another file (the driver forgets a closed reader of its files so).
            for p in st.files.values_mut() {
                if p.last_reader == Some(reader) {
                    p.last_reader = None;
                }
            }
        }
        self.inner.reader_closed(reader);
    }

    fn file_forgotten(&self, file: FileId, volume_offset_bytes: Option<u64>) {
        if let Some(base) = volume_offset_bytes {
            // A poisoned cache serves nothing more, so it has nothing to forget.
            if let (mut st, false) = self.shared.lock_even_poisoned() {
                st.forget(file, base);
            }
        }
        self.inner.file_forgotten(file, volume_offset_bytes);
    }

    fn volume(&self) -> Option<ModelledVolume> {
        self.inner.volume()
    }

    fn array_stats(&self) -> Option<ArrayStats> {
        Some(self.stats())
    }

    fn shutdown(&self) {
        let (mut st, poisoned) = self.shared.lock_even_poisoned();
        st.shut = true;
        if poisoned {
            // The state may be half-updated: nothing of it is failed or delivered (the driver
            // is broken too, or hears so from its next request).
            drop(st);
        } else {
            // The reads not yet sent fail now (`flush`), before the device below stops.
            self.shared.flush(st, true);
        }
        self.inner.shutdown();
    }
}

impl Drop for ArrayCacheBackend {
    fn drop(&mut self) {
        self.shutdown();
        // The reads sent to the device come back first (none is sent after the shutdown), unless
        // this runs inside one of the device's deliveries, which cannot end before it.
        // Not either once a panic poisoned the cache: the device thread it ran on (the array
        // policy hears of its fetches there) has ended, with what it held.
        if !self.inner_port.delivering_here() {
            let (mut st, mut poisoned) = self.shared.lock_even_poisoned();
            let broken = || {
                self.shared
                    .device_broken
                    .load(std::sync::atomic::Ordering::Acquire)
            };
            // Nor for longer than a read may take: one stuck in the device's `pread` (a hung
            // mount) may never come back. It owns its buffer and file; the port closed below
            // drops it when it does.
            let until = std::time::Instant::now() + super::lifecycle::STUCK_READ_GRACE;
            while st.inner_out > 0 && !poisoned && !broken() {
                let left = until.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    break;
                }
                st = match self.shared.inner_idle.wait_timeout(st, left) {
                    Ok((st, _)) => st,
                    Err(p) => {
                        poisoned = true;
                        p.into_inner().0
                    }
                };
            }
        }
        // Then no device thread may still be inside the cache: one that were would hold it, and
        // the device with it, past this drop, and drop the device on its own thread.
        self.inner_port.close();
        // The delivery thread ends once it has delivered what it holds: its channel closes with
        // the last sender.
        self.shared
            .hits
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(t) = self.delivery.take() {
            // Dropped on the delivery thread itself (it held the engine's last reference while it
            // delivered), it ends once this returns; joining it there would wait for itself.
            if t.thread().id() != std::thread::current().id() {
                // A panic there (in the sink) was reported on that thread already.
                let _ = t.join();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use proptest::prelude::*;

    use super::*;
    use crate::backend::emulated::{EmulatedBackend, EmulatedConfig};
    use crate::backend::lifecycle::testing::{race_submits_with_shutdown, Collect, Held};
    use crate::backend::noop::{Fault, FaultKind, NoopBackend};
    use crate::testutil::temp_file;

    const STRIP_BYTES: u64 = 128 << 10;

    /// MSP with thresholds `sc` over `layout`.
    fn msp(layout: &foresight_policy::Layout, sc: (u32, u32)) -> Box<dyn Policy> {
        Box::new(
            foresight_policy::readahead::Msp::new(
                foresight_policy::readahead::MspSettings {
                    sc_max: sc.0,
                    sc_thresh: sc.1,
                    sps_max_stripes: 8,
                },
                layout,
            )
            .unwrap(),
        )
    }

    /// An array cache of `cache_bytes` over `inner` (whose completions go to `inner_port`) run
    /// by `policy`, and where its completions go.
    fn wrap(
        inner: Arc<dyn IoBackend>,
        inner_port: &Arc<CompletionPort>,
        policy: Box<dyn Policy>,
        cache_bytes: u64,
    ) -> (ArrayCacheBackend, Arc<Collect>) {
        wrap_paused(
            inner,
            inner_port,
            policy,
            cache_bytes,
            std::time::Duration::ZERO,
        )
    }

    /// As [`wrap`], with a sink that pauses `pause` over each completion before it keeps it.
    fn wrap_paused(
        inner: Arc<dyn IoBackend>,
        inner_port: &Arc<CompletionPort>,
        policy: Box<dyn Policy>,
        cache_bytes: u64,
        pause: std::time::Duration,
    ) -> (ArrayCacheBackend, Arc<Collect>) {
        // The port holds the sink weakly: the caller keeps it through the returned Arc.
        let (got, port) = Collect::port(pause);
        let c = ArrayCacheBackend::start(inner, inner_port, policy, cache_bytes, 8, port).unwrap();
        (c, got)
    }

    /// The in-memory backend over `files`, each `(name, bytes, volume offset)`, started with
    /// room for 16 reads, and the port its completions go to (for the cache above it).
    fn noop_below(files: &[(&str, Vec<u8>, u64)]) -> (NoopBackend, Arc<CompletionPort>) {
        let noop = NoopBackend::new();
        for (name, bytes, at) in files {
            noop.insert(name, bytes.clone());
            noop.place(name, *at);
        }
        let inner_port = CompletionPort::new();
        noop.start(16, inner_port.clone()).unwrap();
        (noop, inner_port)
    }

    /// The volume MSP is told [`noop_below`] is: 1 GiB on a RAID-0 of five disks with 128 KiB
    /// strips.
    fn noop_layout() -> foresight_policy::Layout {
        let striping = foresight_policy::layout::Striping {
            disks: 5,
            strip_bytes: STRIP_BYTES,
        };
        foresight_policy::Layout::new(ByteLen(1 << 30), Some(striping))
    }

    /// An emulated RAID-0 of five `member` drives with 128 KiB strips and room for `capacity`
    /// reads, the port its completions go to (for the cache above it), and its volume.
    fn emulated_below(
        member: &str,
        capacity: usize,
    ) -> (
        Arc<dyn IoBackend>,
        Arc<CompletionPort>,
        foresight_policy::Layout,
    ) {
        let inner_port = CompletionPort::new();
        let cfg = EmulatedConfig::preset(member)
            .unwrap()
            .raid0(5, STRIP_BYTES);
        let inner: Arc<dyn IoBackend> =
            Arc::new(EmulatedBackend::start(cfg, capacity, inner_port.clone()).unwrap());
        let v = inner.volume().unwrap();
        let layout = foresight_policy::Layout::new(v.volume_bytes, v.striping);
        (inner, inner_port, layout)
    }

    /// An array cache of `cache_bytes` over an emulated RAID-0 of five `member` drives with
    /// 128 KiB strips, MSP with the given thresholds, and where its completions go.
    fn cache(member: &str, cache_bytes: u64, sc: (u32, u32)) -> (ArrayCacheBackend, Arc<Collect>) {
        let (inner, inner_port, layout) = emulated_below(member, 16);
        wrap(inner, &inner_port, msp(&layout, sc), cache_bytes)
    }

    /// What the array policy heard of its fetches and of memory, besides passing everything on
    /// to the policy it wraps.
    struct Heard {
        policy: Box<dyn Policy>,
        heard: Arc<Mutex<Vec<Input>>>,
    }

    impl Policy for Heard {
        fn name(&self) -> &str {
            self.policy.name()
        }
        fn handle(&mut self, now: Instant, input: Input) {
            if matches!(input, Input::Fetched { .. } | Input::MemoryPressure { .. }) {
                self.heard.lock().unwrap().push(input.clone());
            }
            self.policy.handle(now, input);
        }
        fn poll_output(&mut self) -> Option<Output> {
            let out = self.policy.poll_output();
            if matches!(out, Some(Output::Release { .. })) {
                MSP_RELEASES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            out
        }
    }

    /// Releases MSP asked for, in any test: the cache keeps a buffer a release covers only in
    /// part, which holds only while MSP releases nothing (see `State::drain`).
    static MSP_RELEASES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

    /// An array cache of `cache_bytes` over in-memory files, each `(name, bytes, volume offset)`,
    /// on a modelled RAID-0 of five disks with 128 KiB strips, MSP with thresholds `sc`: the
    /// cache, where its completions go, the backend (to inject faults), the open files, and what
    /// MSP heard of its fetches.
    #[allow(clippy::type_complexity)]
    fn noop_cache(
        files: &[(&str, Vec<u8>, u64)],
        cache_bytes: u64,
        sc: (u32, u32),
    ) -> (
        ArrayCacheBackend,
        Arc<Collect>,
        NoopBackend,
        Vec<Arc<FileHandle>>,
        Arc<Mutex<Vec<Input>>>,
    ) {
        let (noop, inner_port) = noop_below(files);
        let layout = noop_layout();
        let heard = Arc::new(Mutex::new(Vec::new()));
        let policy = Box::new(Heard {
            policy: msp(&layout, sc),
            heard: heard.clone(),
        });
        let inner: Arc<dyn IoBackend> = Arc::new(noop.clone());
        let (c, got) = wrap(inner, &inner_port, policy, cache_bytes);
        let handles = files
            .iter()
            .enumerate()
            .map(|(i, (name, _, _))| {
                Arc::new(c.open(Path::new(name), FileId(i as u32), false).unwrap())
            })
            .collect();
        (c, got, noop, handles, heard)
    }

    /// Reads `len` bytes at `offset` of `f` through the cache and checks them against `bytes`.
    fn read_checked(
        c: &ArrayCacheBackend,
        got: &Collect,
        f: &Arc<FileHandle>,
        bytes: &[u8],
        (token, offset, len): (u64, u64, usize),
    ) -> io::Result<usize> {
        c.submit(&mut vec![request(token, f, offset, len)]);
        let done = got.take(1).pop().unwrap();
        assert_eq!(done.token, token);
        if let Ok(n) = done.result {
            let at = offset as usize;
            assert!(
                done.buf.as_slice()[..n] == bytes[at..at + n],
                "wrong bytes at {offset}"
            );
        }
        done.result
    }

    /// Dropping the cache while the device below holds a read of it stuck in a `pread` (see
    /// `stuck_file`) returns once the grace has passed, and so does the device's drop: the
    /// read, which owns its buffer and file, lands in nothing when it returns. Before, the
    /// cache's drop waited for it forever.
    #[test]
    fn dropping_the_cache_leaves_a_stuck_device_read_behind() {
        use crate::backend::lifecycle::testing::{drop_returns, on_a_stuck_read, StuckRun};
        let test = "dropping_the_cache_leaves_a_stuck_device_read_behind";
        on_a_stuck_read(test, |f| {
            // As `cache`, with the device at hand, to see its pool take the read.
            let inner_port = CompletionPort::new();
            let cfg = EmulatedConfig::preset("ssd-850evo")
                .unwrap()
                .raid0(5, STRIP_BYTES);
            let device = Arc::new(EmulatedBackend::start(cfg, 16, inner_port.clone()).unwrap());
            let v = device.volume().unwrap();
            let layout = foresight_policy::Layout::new(v.volume_bytes, v.striping);
            let inner: Arc<dyn IoBackend> = device.clone();
            let (c, got) = wrap(inner, &inner_port, msp(&layout, (42, 38)), 8 << 20);
            c.submit(&mut vec![request(1, f, 0, PAGE_BYTES as usize)]);
            // The cache sends its read to the device as it is submitted; once a worker of the
            // device's pool has taken it, the read is under way. Before, the cache could be
            // dropped first, and the read was refused rather than stuck.
            crate::testutil::wait_until("a worker of the device's pool to take the read", || {
                device.pool_queue_is_empty()
            });
            drop(device);
            let drop_returned = drop_returns(c);
            StuckRun {
                drop_returned,
                read_held: Arc::strong_count(f) >= 2 && got.tokens().is_empty(),
            }
        });
    }

    /// A device thread that ends in a panic with a read of the cache's (here the in-memory
    /// device's worker, by an injected fault) is heard above (the cache passes it on to its
    /// sink, and the engine there breaks), and the cache's drop does not wait for that read,
    /// which never comes back. Before, the driver never heard, and the drop waited forever.
    #[test]
    fn a_device_thread_that_panics_is_heard_above_and_does_not_hold_the_drop() {
        let patience = std::time::Duration::from_secs(60);
        let bytes = file_bytes(2 * STRIP_BYTES as usize, 5);
        let files = [("/f", bytes, 0)];
        let (c, got, noop, f, _) = noop_cache(&files, 64 << 20, (1, 1));
        noop.inject(Fault {
            path: PathBuf::from("/f"),
            range: 0..1,
            kind: FaultKind::Panic,
            times: Some(1),
        });
        c.submit(&mut vec![request(0, &f[0], 0, PAGE_BYTES as usize)]);
        // On a thread of its own, so that a drop that waits forever fails the test rather
        // than hang it.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let heard = got.heard_a_panic_within(patience);
            drop(c);
            let _ = tx.send(heard);
        });
        let heard = rx.recv_timeout(2 * patience);
        assert!(
            heard.is_ok(),
            "the cache's drop waited for a read the device will never return"
        );
        assert_eq!(
            heard,
            Ok(true),
            "the device thread's panic was not passed on"
        );
        drop(noop);
    }

    /// A failed device read for a fill (here MSP's fetch of strips 2 to 4, which the request
    /// for strip 2 waits on) gives the waiting request the error, not a hang or bytes; the
    /// pages it counted leave the budget, MSP hears `Fetched { ok: false }`, and the next read
    /// of those bytes goes to the device again and gets them.
    #[test]
    fn a_failed_fill_fails_its_waiter_frees_its_pages_and_tells_the_policy() {
        let bytes = file_bytes(8 * STRIP_BYTES as usize, 5);
        let files = [("/f", bytes.clone(), 0)];
        let (c, got, noop, f, heard) = noop_cache(&files, 64 << 20, (1, 1));
        let len = STRIP_BYTES as usize;
        for strip in [0u64, 1] {
            read_checked(&c, &got, &f[0], &bytes, (strip, strip * STRIP_BYTES, len)).unwrap();
        }
        let before = c.stats();
        assert_eq!(before.held_bytes, 2 * STRIP_BYTES, "{before:?}");
        noop.inject(Fault {
            path: PathBuf::from("/f"),
            range: 2 * STRIP_BYTES..2 * STRIP_BYTES + 1,
            kind: FaultKind::Eio,
            times: Some(1),
        });
        let e = read_checked(&c, &got, &f[0], &bytes, (2, 2 * STRIP_BYTES, len)).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EIO), "{e}");
        let after = c.stats();
        assert_eq!(after.fetches, 1, "{after:?}");
        assert_eq!(after.held_bytes, before.held_bytes, "{after:?}");
        assert!(
            heard
                .lock()
                .unwrap()
                .iter()
                .any(|i| matches!(i, Input::Fetched { ok: false, .. })),
            "{:?}",
            heard.lock().unwrap()
        );
        assert_eq!(
            read_checked(&c, &got, &f[0], &bytes, (3, 2 * STRIP_BYTES, len)).unwrap(),
            len
        );
        assert_eq!(c.stats().held_bytes, 3 * STRIP_BYTES, "{:?}", c.stats());
        c.shutdown();
    }

    /// A fill that comes back short before the file's end (a transient short read, which the
    /// backend contract allows) is not kept: the pages it did not read are not taken for the
    /// file's end. Here MSP's fetch of strips 2 to 4 returns 5000 bytes; the request for strip
    /// 2 gets those, the re-read of its remainder and a request for strip 3 that waited on the
    /// same fetch get the file's bytes (they got 0 bytes, "end of file", before), and MSP hears
    /// the fetch was cut short.
    #[test]
    fn a_short_fill_is_not_taken_for_the_end_of_the_file() {
        let bytes = file_bytes(8 * STRIP_BYTES as usize, 6);
        let files = [("/f", bytes.clone(), 0)];
        let (c, got, noop, f, heard) = noop_cache(&files, 64 << 20, (1, 1));
        let len = STRIP_BYTES as usize;
        for strip in [0u64, 1] {
            read_checked(&c, &got, &f[0], &bytes, (strip, strip * STRIP_BYTES, len)).unwrap();
        }
        noop.inject(Fault {
            path: PathBuf::from("/f"),
            range: 2 * STRIP_BYTES..2 * STRIP_BYTES + 1,
            kind: FaultKind::Short { max_bytes: 5000 },
            times: Some(1),
        });
        // Strip 3's request comes while the fetch is in flight, so it waits on it too.
        c.submit(&mut vec![
            request(2, &f[0], 2 * STRIP_BYTES, len),
            request(3, &f[0], 3 * STRIP_BYTES, len),
        ]);
        for done in got.take(2) {
            let at = if done.token == 2 { 2 } else { 3 } * STRIP_BYTES as usize;
            let n = *done.result.as_ref().unwrap();
            let want = if done.token == 2 { 5000 } else { len };
            assert_eq!(n, want, "request {}", done.token);
            assert!(done.buf.as_slice()[..n] == bytes[at..at + n]);
        }
        let rest = 2 * STRIP_BYTES + 5000;
        let n = read_checked(&c, &got, &f[0], &bytes, (4, rest, len - 5000)).unwrap();
        assert_eq!(n, len - 5000);
        assert!(
            heard
                .lock()
                .unwrap()
                .iter()
                .any(|i| matches!(i, Input::Fetched { ok: false, .. })),
            "{:?}",
            heard.lock().unwrap()
        );
        let s = c.stats();
        assert!(s.held_bytes <= s.capacity_bytes, "{s:?}");
        c.shutdown();
    }

    /// A request that runs past its file's end takes only the pages of the file's bytes: the
    /// pages beyond it are the next file's (placed right after it here), and held for the first
    /// file they made every read of the second one go past the cache.
    #[test]
    fn a_read_past_the_end_of_a_file_holds_no_page_of_the_next_file() {
        let a = file_bytes(3 * PAGE_BYTES as usize, 7);
        let b = file_bytes(8 * PAGE_BYTES as usize, 8);
        let files = [("/a", a.clone(), 0), ("/b", b.clone(), 3 * PAGE_BYTES)];
        // MSP with its paper's thresholds fetches nothing here.
        let (c, got, _noop, f, _) = noop_cache(&files, 64 << 20, (42, 38));
        let n = read_checked(
            &c,
            &got,
            &f[0],
            &a,
            (1, 2 * PAGE_BYTES, 4 * PAGE_BYTES as usize),
        );
        assert_eq!(n.unwrap(), PAGE_BYTES as usize);
        for token in [2, 3] {
            let n = read_checked(&c, &got, &f[1], &b, (token, 0, 2 * PAGE_BYTES as usize));
            assert_eq!(n.unwrap(), 2 * PAGE_BYTES as usize);
        }
        let s = c.stats();
        assert_eq!((s.bypassed, s.hits, s.device_reads), (0, 1, 2), "{s:?}");
        assert_eq!(s.held_bytes, 3 * PAGE_BYTES, "{s:?}");
        c.shutdown();
    }

    /// The engine forgets a file nobody reads and gives its id to the next new file, which the
    /// emulated backend's spread placement puts in the same place: that file's reads get its own
    /// bytes, not the pages the cache still held of the forgotten one (they did before).
    #[test]
    fn a_new_file_in_a_forgotten_files_place_reads_its_own_bytes() {
        let x = file_bytes(2 * STRIP_BYTES as usize, 9);
        let y = file_bytes(2 * STRIP_BYTES as usize, 10);
        let (c, got, noop, f, _) = noop_cache(&[("/x", x.clone(), 0)], 64 << 20, (42, 38));
        let len = STRIP_BYTES as usize;
        assert_eq!(read_checked(&c, &got, &f[0], &x, (1, 0, len)).unwrap(), len);
        noop.insert("/y", y.clone());
        noop.place("/y", 0);
        let g = Arc::new(c.open(Path::new("/y"), FileId(0), false).unwrap());
        assert_eq!(read_checked(&c, &got, &g, &y, (2, 0, len)).unwrap(), len);
        let s = c.stats();
        assert_eq!((s.hits, s.held_bytes), (0, STRIP_BYTES), "{s:?}");
        c.shutdown();
    }

    /// Opening a file the driver already knows places it anew in the backend, and the driver
    /// keeps the first place: that throw-away placement, here over another file, must not take
    /// the other file's volume bytes. Before, it did, so MSP's fetch of strips 3 and 4 of the
    /// file read them as the unread file's, and the file's own read of strip 3 went past the
    /// cache to the device.
    #[test]
    fn a_placement_nobody_reads_takes_no_files_place() {
        let x = file_bytes(8 * STRIP_BYTES as usize, 11);
        let z = file_bytes(8 * STRIP_BYTES as usize, 12);
        let files = [("/x", x.clone(), 0), ("/z", z, 0)];
        let (c, got, _noop, f, _) = noop_cache(&files, 64 << 20, (1, 1));
        let len = STRIP_BYTES as usize;
        for strip in [0u64, 1, 2] {
            read_checked(&c, &got, &f[0], &x, (strip, strip * STRIP_BYTES, len)).unwrap();
        }
        let before = c.stats();
        assert_eq!(before.prefetched_bytes, 2 * STRIP_BYTES, "{before:?}");
        assert_eq!(
            read_checked(&c, &got, &f[0], &x, (3, 3 * STRIP_BYTES, len)).unwrap(),
            len
        );
        let after = c.stats();
        assert_eq!(after.hits, before.hits + 1, "{after:?}");
        assert_eq!(after.bypassed, 0, "{after:?}");
        c.shutdown();
    }

    /// MSP, releasing each of its fetches once it has arrived, as the fetch's range of the file
    /// `release_as` (the volume, or a file id the array level does not hold).
    struct Releasing {
        heard: Heard,
        release_as: FileId,
        fetching: HashMap<FetchId, ByteRange>,
        out: VecDeque<Output>,
    }

    impl Policy for Releasing {
        fn name(&self) -> &str {
            "releasing-msp"
        }
        fn handle(&mut self, now: Instant, input: Input) {
            if let Input::Fetched { id, .. } = input {
                if let Some(range) = self.fetching.remove(&id) {
                    let file = self.release_as;
                    self.out.push_back(Output::Release { file, range });
                }
            }
            self.heard.handle(now, input);
        }
        fn poll_output(&mut self) -> Option<Output> {
            if let Some(o) = self.out.pop_front() {
                return Some(o);
            }
            let o = self.heard.poll_output()?;
            if let Output::Fetch { id, range, .. } = o {
                self.fetching.insert(id, range);
            }
            Some(o)
        }
    }

    /// An array policy's release of a fetch it no longer wants drops those pages, as waste, and
    /// is not memory pressure (before, the cache told the policy memory was short, which the
    /// simulator does not); a release of a file id other than the volume drops nothing here
    /// (before, it dropped the volume's pages at those offsets).
    #[test]
    fn a_release_drops_only_volume_pages_and_is_no_memory_pressure() {
        for release_as in [VOLUME_FILE, FileId(0)] {
            let bytes = file_bytes(8 * STRIP_BYTES as usize, 13);
            let (noop, inner_port) = noop_below(&[("/f", bytes.clone(), 0)]);
            let layout = noop_layout();
            let heard = Arc::new(Mutex::new(Vec::new()));
            let policy = Box::new(Releasing {
                heard: Heard {
                    policy: msp(&layout, (1, 1)),
                    heard: heard.clone(),
                },
                release_as,
                fetching: HashMap::new(),
                out: VecDeque::new(),
            });
            let inner: Arc<dyn IoBackend> = Arc::new(noop.clone());
            let (c, got) = wrap(inner, &inner_port, policy, 64 << 20);
            let f = Arc::new(c.open(Path::new("/f"), FileId(0), false).unwrap());
            let len = STRIP_BYTES as usize;
            for strip in [0u64, 1, 2] {
                read_checked(&c, &got, &f, &bytes, (strip, strip * STRIP_BYTES, len)).unwrap();
            }
            // MSP fetched strips 2 to 4 as one read, which the read of strip 2 waited for.
            let s = c.stats();
            assert_eq!(s.fetches, 1, "{s:?}");
            let heard = heard.lock().unwrap();
            assert!(
                !heard
                    .iter()
                    .any(|i| matches!(i, Input::MemoryPressure { .. })),
                "released as {release_as:?}: {heard:?}"
            );
            // The fetch's range is stripe 0, strips 0 to 4: released, every buffer there goes.
            if release_as == VOLUME_FILE {
                assert_eq!(s.held_bytes, 0, "{s:?}");
                assert_eq!(s.wasted_bytes, 2 * STRIP_BYTES, "{s:?}");
            } else {
                assert_eq!(s.held_bytes, 5 * STRIP_BYTES, "{s:?}");
                assert_eq!(s.wasted_bytes, 2 * STRIP_BYTES, "{s:?}");
            }
            c.shutdown();
        }
    }

    /// A request served from two buffers keeps both in the line for eviction. Before, both got
    /// the same tick, the line (keyed by tick) kept only the second, and the first could never
    /// be evicted: its pages stayed counted for good, and here the next read, which needs the
    /// room of both, went past the cache.
    #[test]
    fn a_hit_on_two_buffers_keeps_both_evictable() {
        let bytes = file_bytes(16 * PAGE_BYTES as usize, 14);
        let (c, got, _noop, f, _) =
            noop_cache(&[("/f", bytes.clone(), 0)], 4 * PAGE_BYTES, (42, 38));
        let page = PAGE_BYTES as usize;
        read_checked(&c, &got, &f[0], &bytes, (1, 0, 2 * page)).unwrap();
        read_checked(&c, &got, &f[0], &bytes, (2, 2 * PAGE_BYTES, 2 * page)).unwrap();
        read_checked(&c, &got, &f[0], &bytes, (3, 0, 4 * page)).unwrap();
        c.audit();
        read_checked(&c, &got, &f[0], &bytes, (4, 8 * PAGE_BYTES, 4 * page)).unwrap();
        let s = c.stats();
        assert_eq!((s.hits, s.bypassed), (1, 0), "{s:?}");
        assert_eq!(s.held_bytes, 4 * PAGE_BYTES, "{s:?}");
        c.audit();
        c.shutdown();
    }

    /// The engine forgets a file and gives its id and place to the next file, which no request
    /// can tell from the forgotten one (here a handle with the old identity: a file rewritten in
    /// place within the file system's clock tick looks so). Its reads get its own bytes: the
    /// pages held for the forgotten file left with it, and so did the read MSP had in flight for
    /// it (strips 5 to 7, delayed here), which lands into nothing. Before, both were served as
    /// the new file's. The placement left the table too, and the pages their budget.
    #[test]
    fn a_forgotten_files_pages_are_never_served_to_the_next_file_in_its_place() {
        let x = file_bytes(8 * STRIP_BYTES as usize, 15);
        let y = file_bytes(8 * STRIP_BYTES as usize, 16);
        let (c, got, noop, f, _) = noop_cache(&[("/x", x.clone(), 0)], 64 << 20, (1, 1));
        let len = STRIP_BYTES as usize;
        for strip in [0u64, 1, 2] {
            read_checked(&c, &got, &f[0], &x, (strip, strip * STRIP_BYTES, len)).unwrap();
        }
        // Strip 3 is held (MSP read strips 2 to 4); reading it makes MSP fetch strips 5 to 7,
        // which the device holds back.
        noop.inject(Fault {
            path: PathBuf::from("/x"),
            range: 5 * STRIP_BYTES..8 * STRIP_BYTES,
            kind: FaultKind::Delay(std::time::Duration::from_millis(400)),
            times: Some(1),
        });
        read_checked(&c, &got, &f[0], &x, (3, 3 * STRIP_BYTES, len)).unwrap();
        let before = c.stats();
        assert_eq!(before.held_bytes, 8 * STRIP_BYTES, "{before:?}");
        c.file_forgotten(f[0].id, f[0].volume_offset_bytes);
        c.audit();
        assert_eq!(c.stats().placed_files, 0, "{:?}", c.stats());
        noop.insert("/x", y.clone());
        let g = c.open(Path::new("/x"), FileId(0), false).unwrap();
        let g = Arc::new(FileHandle {
            identity: f[0].identity,
            ..g
        });
        for (token, strip) in [(10u64, 0u64), (11, 5), (12, 6)] {
            let n = read_checked(&c, &got, &g, &y, (token, strip * STRIP_BYTES, len));
            assert_eq!(n.unwrap(), len, "strip {strip}");
            c.audit();
        }
        // Once the held-back read has landed, only the new file's pages count.
        let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while c.stats().held_bytes != 3 * STRIP_BYTES && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let s = c.stats();
        assert_eq!(
            (s.held_bytes, s.placed_files),
            (3 * STRIP_BYTES, 1),
            "{s:?}"
        );
        c.audit();
        c.shutdown();
    }

    /// A request submitted after shutdown completes with an error the driver sees: the one the
    /// cache would have served (it holds its page) and the one it would have read. Before, the
    /// first was dropped (the delivery thread had gone) and the second never came back.
    #[test]
    fn a_request_after_shutdown_gets_an_error() {
        let bytes = file_bytes(4 * PAGE_BYTES as usize, 17);
        let (c, got, _noop, f, _) = noop_cache(&[("/f", bytes.clone(), 0)], 64 << 20, (42, 38));
        let page = PAGE_BYTES as usize;
        read_checked(&c, &got, &f[0], &bytes, (1, 0, page)).unwrap();
        c.shutdown();
        c.submit(&mut vec![
            request(2, &f[0], 0, page),
            request(3, &f[0], 2 * PAGE_BYTES, page),
        ]);
        let done = got.take_within(2, std::time::Duration::from_secs(10));
        let mut tokens: Vec<u64> = done.iter().map(|d| d.token).collect();
        tokens.sort_unstable();
        assert_eq!(tokens, vec![2, 3]);
        for d in &done {
            let e = d.result.as_ref().unwrap_err();
            assert!(e.to_string().contains("shut down"), "{e}");
        }
    }

    /// Reads still waiting for the device at shutdown complete (with the bytes, or with an error
    /// if the device never got them), since the device below shuts down too: here an emulated
    /// RAID-0 with room for one read, two requests for different places, and shutdown at once.
    /// Before, the second was sent to the device after it had shut down and never came back.
    #[test]
    fn reads_waiting_for_the_device_at_shutdown_complete() {
        let bytes = file_bytes(64 * STRIP_BYTES as usize, 18);
        let (_dir, path) = temp_file("array-shut", &bytes);
        let (inner, inner_port, layout) = emulated_below("cheetah-15k4", 1);
        let (c, got) = wrap(inner, &inner_port, msp(&layout, (42, 38)), 64 << 20);
        let f = Arc::new(c.open(&path, FileId(0), false).unwrap());
        let len = STRIP_BYTES as usize;
        c.submit(&mut vec![
            request(1, &f, 0, len),
            request(2, &f, 40 * STRIP_BYTES, len),
        ]);
        c.shutdown();
        let done = got.take_within(2, std::time::Duration::from_secs(30));
        assert_eq!(done.len(), 2, "a read never came back");
        for d in &done {
            match &d.result {
                Ok(n) => {
                    let at = if d.token == 1 { 0 } else { 40 * len };
                    assert_eq!(*n, len);
                    assert!(d.buf.as_slice()[..len] == bytes[at..at + len]);
                }
                Err(e) => assert!(e.to_string().contains("shut down"), "{e}"),
            }
        }
        drop(c);
    }

    /// Dropping the cache joins its delivery thread, so what that thread held is delivered by
    /// the time the drop returns (here a hit the sink takes its time over). Before, the thread
    /// was left to run on, and the drop returned first.
    #[test]
    fn dropping_the_cache_joins_its_delivery_thread() {
        let bytes = file_bytes(4 * PAGE_BYTES as usize, 19);
        let (noop, inner_port) = noop_below(&[("/f", bytes, 0)]);
        let policy = msp(&noop_layout(), (42, 38));
        let inner: Arc<dyn IoBackend> = Arc::new(noop.clone());
        // A sink that takes its time over each completion, then keeps it.
        let slow = std::time::Duration::from_millis(300);
        let (c, got) = wrap_paused(inner, &inner_port, policy, 1 << 20, slow);
        let f = Arc::new(c.open(Path::new("/f"), FileId(0), false).unwrap());
        let page = PAGE_BYTES as usize;
        // A miss, delivered on the device's thread; then a hit, on the delivery thread.
        c.submit(&mut vec![request(1, &f, 0, page)]);
        let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while got.tokens().is_empty() && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        c.submit(&mut vec![request(2, &f, 0, page)]);
        drop(c);
        assert_eq!(got.tokens(), vec![1, 2]);
    }

    /// The in-memory backend, recording the reader of every read it is given.
    struct Recording {
        noop: NoopBackend,
        readers: Mutex<Vec<(u64, Option<StreamId>)>>,
    }

    impl IoBackend for Recording {
        fn kind(&self) -> BackendKind {
            self.noop.kind()
        }
        fn open(&self, path: &Path, id: FileId, direct: bool) -> io::Result<FileHandle> {
            self.noop.open(path, id, direct)
        }
        fn capacity(&self) -> usize {
            self.noop.capacity()
        }
        fn submit(&self, batch: &mut Vec<IoRequest>) {
            let mut readers = self.readers.lock().unwrap();
            readers.extend(batch.iter().map(|r| (r.offset_bytes, r.reader)));
            drop(readers);
            self.noop.submit(batch);
        }
        fn shutdown(&self) {
            self.noop.shutdown();
        }
    }

    /// A fetch a request with no reader makes (the driver's read of a stream closed while it
    /// waited) is charged to no reader once the file's last reader has closed: that id may
    /// name the next reader, of another file. Before, MSP's fetch of strips 2 to 4 here went to
    /// the device as the closed reader's.
    #[test]
    fn a_fetch_is_not_charged_to_a_closed_reader() {
        let bytes = file_bytes(8 * STRIP_BYTES as usize, 20);
        let (noop, inner_port) = noop_below(&[("/f", bytes.clone(), 0)]);
        let rec = Arc::new(Recording {
            noop,
            readers: Mutex::new(Vec::new()),
        });
        let inner: Arc<dyn IoBackend> = rec.clone();
        let (c, got) = wrap(inner, &inner_port, msp(&noop_layout(), (1, 1)), 64 << 20);
        let f = Arc::new(c.open(Path::new("/f"), FileId(0), false).unwrap());
        let len = STRIP_BYTES as usize;
        for strip in [0u64, 1] {
            read_checked(&c, &got, &f, &bytes, (strip, strip * STRIP_BYTES, len)).unwrap();
        }
        c.reader_closed(StreamId(0));
        let mut orphan = request(2, &f, 2 * STRIP_BYTES, len);
        orphan.reader = None;
        c.submit(&mut vec![orphan]);
        assert_eq!(got.take(1)[0].result.as_ref().unwrap(), &len);
        assert_eq!(c.stats().fetches, 1, "{:?}", c.stats());
        let readers = rec.readers.lock().unwrap().clone();
        assert_eq!(
            readers,
            vec![
                (0, Some(StreamId(0))),
                (STRIP_BYTES, Some(StreamId(0))),
                (2 * STRIP_BYTES, None)
            ]
        );
        c.shutdown();
    }

    /// The cache reads whole pages, so a file placed part way into a page has a first page that
    /// starts before it: before, the first read of it computed a negative file offset (a panic
    /// under the lock, poisoning the cache, in a debug build; a read at a wrapped offset in a
    /// release one). Such a placement is refused at the open, naming the file and where it is.
    /// (The emulated backend places files at whole MiB.)
    #[test]
    fn a_file_placed_part_way_into_a_page_is_refused() {
        let a = file_bytes(5000, 23);
        let b = file_bytes(8 * STRIP_BYTES as usize, 24);
        let (noop, inner_port) = noop_below(&[("/a", a, 0), ("/b", b, 5000)]);
        let inner: Arc<dyn IoBackend> = Arc::new(noop);
        let (c, _got) = wrap(inner, &inner_port, msp(&noop_layout(), (1, 1)), 64 << 20);
        c.open(Path::new("/a"), FileId(0), false).unwrap();
        let e = c.open(Path::new("/b"), FileId(1), false).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert!(e.to_string().contains("/b is at volume byte 5000"), "{e}");
        c.audit();
        c.shutdown();
    }

    /// Dropping the cache while the device's thread delivers into it (a miss, handed on to a
    /// sink that takes its time) drops the device with it, before the drop returns, so that
    /// the device joins its threads. Before, the device's thread held the cache, and the
    /// device, past the drop, and dropped the device itself: on its own thread, which the
    /// device cannot join.
    #[test]
    fn dropping_the_cache_drops_the_device_below_there() {
        let bytes = file_bytes(4 * PAGE_BYTES as usize, 20);
        let (noop, inner_port) = noop_below(&[("/f", bytes, 0)]);
        let layout = noop_layout();
        let (held, port) = Held::port();
        let inner: Arc<dyn IoBackend> = Arc::new(noop.clone());
        let device = Arc::downgrade(&inner);
        let c =
            ArrayCacheBackend::start(inner, &inner_port, msp(&layout, (42, 38)), 1 << 20, 8, port)
                .unwrap();
        let f = Arc::new(c.open(Path::new("/f"), FileId(0), false).unwrap());
        // A miss: the device's worker delivers it into the cache, which hands it on at once.
        c.submit(&mut vec![request(1, &f, 0, PAGE_BYTES as usize)]);
        held.wait_entered();
        drop(c);
        assert!(
            device.upgrade().is_none(),
            "the device outlived the cache's drop"
        );
        assert_eq!(held.tokens(), vec![1]);
    }

    fn file_bytes(len: usize, salt: u64) -> Vec<u8> {
        (0..len)
            .map(|i| ((i as u64 / 8).wrapping_mul(2654435761) ^ salt) as u8)
            .collect()
    }

    /// A request of [`random_batch`]: its token, file, offset and length.
    type Wanted = (u64, usize, u64, usize);

    /// One to four requests over two files, for the random tests: mostly where each file's last
    /// request ended (so MSP turns on), sometimes anywhere up to 8 KiB past the end, up to 96 KiB
    /// long. Returns the requests and, per request, its token, file, offset and length.
    fn random_batch(
        rng: &mut foresight_core::Rng,
        sizes: &[usize; 2],
        cursor: &mut [u64; 2],
        token: &mut u64,
        handles: &[Arc<FileHandle>],
    ) -> (Vec<IoRequest>, Vec<Wanted>) {
        let mut batch = Vec::new();
        let mut want = Vec::new();
        for _ in 0..1 + rng.below(4) {
            let f = rng.below(2) as usize;
            let size = sizes[f] as u64;
            let at = if rng.below(3) == 0 {
                rng.below(size + 8192)
            } else {
                cursor[f]
            };
            let len = 1 + rng.below(96 << 10) as usize;
            cursor[f] = (at + len as u64) % size;
            *token += 1;
            batch.push(request(*token, &handles[f], at, len));
            want.push((*token, f, at, len));
        }
        (batch, want)
    }

    fn request(token: u64, file: &Arc<FileHandle>, offset: u64, len: usize) -> IoRequest {
        let cap = len.div_ceil(PAGE_BYTES as usize) * PAGE_BYTES as usize;
        IoRequest {
            token,
            file: file.clone(),
            offset_bytes: offset,
            buf: AlignedBuf::new(cap).unwrap(),
            buf_offset: 0,
            len_bytes: len,
            reader: Some(StreamId(0)),
        }
    }

    /// Once MSP has fetched a stripe, a request for bytes of it is copied from the array cache:
    /// the device reads nothing for it. MSP here turns on at once (`SC_thresh` 1), so reading
    /// strips 0, 1 and 2 makes it fetch the rest of stripe 0 (strips 3 and 4) as one read.
    #[test]
    fn a_miss_served_from_the_array_cache_does_no_device_read() {
        let bytes = file_bytes(8 * STRIP_BYTES as usize, 1);
        let (_dir, path) = temp_file("array-hit", &bytes);
        let (c, got) = cache("cheetah-15k4", 64 << 20, (1, 1));
        let f = Arc::new(c.open(&path, FileId(0), false).unwrap());
        for (k, strip) in [0u64, 1, 2].into_iter().enumerate() {
            let len = STRIP_BYTES as usize;
            c.submit(&mut vec![request(k as u64, &f, strip * STRIP_BYTES, len)]);
            let done = got.take(1);
            assert_eq!(done[0].result.as_ref().unwrap(), &len);
        }
        // MSP's fetch came while strip 2 was missing, so it read strips 2 to 4 at once, and the
        // third request waited for it: it has landed.
        let before = c.stats();
        assert_eq!(before.device_reads, 3, "{before:?}");
        assert_eq!(before.fetches, 1, "{before:?}");
        assert_eq!(before.prefetched_bytes, 2 * STRIP_BYTES, "{before:?}");
        c.submit(&mut vec![request(9, &f, 3 * STRIP_BYTES, 64 << 10)]);
        let done = got.take(1);
        assert_eq!(done[0].token, 9);
        assert_eq!(done[0].result.as_ref().unwrap(), &(64 << 10));
        let at = 3 * STRIP_BYTES as usize;
        assert_eq!(
            &done[0].buf.as_slice()[..64 << 10],
            &bytes[at..at + (64 << 10)]
        );
        let after = c.stats();
        assert_eq!(after.hits, before.hits + 1, "{after:?}");
        // Reading strip 3 is MSP's next sequential step, and it fetches stripe 1 (strips 5 to
        // 7 of this file, one read). Whether that read has landed when the figures are taken
        // depends on the machine's load, so only it may have been added.
        assert_eq!(after.fetches, 2, "{after:?}");
        assert!(after.device_reads <= before.device_reads + 1, "{after:?}");
        assert!(
            after.device_bytes <= before.device_bytes + 3 * STRIP_BYTES,
            "{after:?}"
        );
        c.shutdown();
    }

    /// Eviction takes the buffer least recently used, not the one read longest ago: with room
    /// for two strips, reading strips 0 and 2, then 0 again, then 4 evicts strip 2, and strip 0
    /// is still a hit. (MSP keeps to its paper thresholds here and never fetches.)
    #[test]
    fn eviction_takes_the_least_recently_used_buffer() {
        let bytes = file_bytes(8 * STRIP_BYTES as usize, 3);
        let (_dir, path) = temp_file("array-lru", &bytes);
        let (c, got) = cache("ssd-850evo", 2 * STRIP_BYTES, (42, 38));
        let f = Arc::new(c.open(&path, FileId(0), false).unwrap());
        let read = |token: u64, strip: u64| {
            let len = STRIP_BYTES as usize;
            c.submit(&mut vec![request(token, &f, strip * STRIP_BYTES, len)]);
            let done = got.take(1);
            assert_eq!(done[0].result.as_ref().unwrap(), &len);
            let at = (strip * STRIP_BYTES) as usize;
            assert!(done[0].buf.as_slice()[..len] == bytes[at..at + len]);
            c.stats()
        };
        read(1, 0);
        read(2, 2);
        let again = read(3, 0);
        assert_eq!((again.device_reads, again.hits), (2, 1), "{again:?}");
        let third = read(4, 4);
        assert_eq!(third.device_reads, 3, "{third:?}");
        let last = read(5, 0);
        assert_eq!(
            (last.device_reads, last.hits),
            (3, 2),
            "strip 0 was evicted: {last:?}"
        );
        assert_eq!(last.peak_bytes, 2 * STRIP_BYTES, "{last:?}");
        c.shutdown();
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(8))]

        /// Two files read at random places, several requests outstanding at once, some of them
        /// not page-aligned, some past the end of the file, with an array cache smaller than a
        /// stripe or a few stripes: every request gets exactly the file's bytes up to its end,
        /// and the cache never holds more than its budget (asserted where it grows, too).
        #[test]
        fn bytes_are_the_files_and_the_budget_holds(
            seed in any::<u64>(),
            cache_pages in prop_oneof![Just(16u64), Just(160u64), Just(1024u64)],
        ) {
            println!("seed {seed}, cache of {cache_pages} pages");
            let mut rng = foresight_core::Rng::new(seed);
            let sizes = [3 * STRIP_BYTES as usize + 5000, 2 * STRIP_BYTES as usize];
            let files: Vec<Vec<u8>> =
                sizes.iter().enumerate().map(|(i, &n)| file_bytes(n, i as u64 + 7)).collect();
            // SC thresholds of 2 make MSP fetch after a few sequential strips.
            let (c, got) = cache("ssd-850evo", cache_pages * PAGE_BYTES, (4, 2));
            let temps: Vec<_> = files
                .iter()
                .enumerate()
                .map(|(i, b)| temp_file(&format!("array-p{seed}-{i}"), b))
                .collect();
            let handles: Vec<Arc<FileHandle>> = temps
                .iter()
                .enumerate()
                .map(|(i, (_, p))| Arc::new(c.open(p, FileId(i as u32), false).unwrap()))
                .collect();
            // The handles keep the files open; the names can go now.
            drop(temps);
            let mut token = 0;
            let mut cursor = [0u64; 2];
            for _round in 0..24 {
                let (mut batch, want) =
                    random_batch(&mut rng, &[files[0].len(), files[1].len()], &mut cursor, &mut token, &handles);
                let n = batch.len();
                c.submit(&mut batch);
                for done in got.take(n) {
                    let &(_, f, at, len) = want.iter().find(|w| w.0 == done.token).unwrap();
                    let size = files[f].len() as u64;
                    let expect = (len as u64).min(size.saturating_sub(at)) as usize;
                    let n = *done.result.as_ref().unwrap();
                    prop_assert_eq!(n, expect, "seed {}", seed);
                    let from = (at as usize).min(files[f].len());
                    prop_assert!(
                        done.buf.as_slice()[..n] == files[f][from..from + n],
                        "seed {}: wrong bytes", seed
                    );
                }
                let s = c.stats();
                prop_assert!(s.peak_bytes <= s.capacity_bytes, "seed {}: {:?}", seed, s);
                c.audit();
            }
            c.shutdown();
        }

        /// Two files placed back to back on the volume (so stripe fetches span both), read at
        /// random with several requests outstanding, over reads that fail (EIO) or come back
        /// short at random places: a request gets EIO only where reads fail, never zero bytes
        /// before the file's end, never fewer bytes than asked where no read comes back short,
        /// and always the file's bytes; every page is counted once after every round.
        #[test]
        fn faults_give_errors_or_the_files_bytes_and_every_page_is_counted_once(
            seed in any::<u64>(),
            cache_pages in prop_oneof![Just(16u64), Just(160u64), Just(1024u64)],
        ) {
            println!("seed {seed}, cache of {cache_pages} pages");
            let mut rng = foresight_core::Rng::new(seed);
            let a = file_bytes(3 * STRIP_BYTES as usize + 5000, 21);
            let b = file_bytes(2 * STRIP_BYTES as usize + 300, 22);
            let b_at = (a.len() as u64).div_ceil(PAGE_BYTES) * PAGE_BYTES;
            let files = [("/a", a.clone(), 0), ("/b", b.clone(), b_at)];
            let bytes = [a, b];
            let (c, got, noop, handles, _) = noop_cache(&files, cache_pages * PAGE_BYTES, (4, 2));
            let mut eio = [false; 2];
            let mut short = [false; 2];
            for f in 0..2 {
                for _ in 0..rng.below(3) {
                    let at = rng.below(bytes[f].len() as u64);
                    let kind = if rng.below(2) == 0 {
                        eio[f] = true;
                        FaultKind::Eio
                    } else {
                        short[f] = true;
                        FaultKind::Short { max_bytes: 1 + rng.below(20000) as usize }
                    };
                    noop.inject(Fault {
                        path: PathBuf::from(files[f].0),
                        range: at..at + 1 + rng.below(64 << 10),
                        kind,
                        times: Some(1 + rng.below(3) as u32),
                    });
                }
            }
            let mut token = 0;
            let mut cursor = [0u64; 2];
            for _round in 0..24 {
                let (mut batch, want) =
                    random_batch(&mut rng, &[bytes[0].len(), bytes[1].len()], &mut cursor, &mut token, &handles);
                let n = batch.len();
                c.submit(&mut batch);
                for done in got.take(n) {
                    let &(_, f, at, len) = want.iter().find(|w| w.0 == done.token).unwrap();
                    let size = bytes[f].len() as u64;
                    let expect = (len as u64).min(size.saturating_sub(at)) as usize;
                    match &done.result {
                        Err(e) => {
                            prop_assert!(eio[f], "seed {}: {}", seed, e);
                            prop_assert_eq!(e.raw_os_error(), Some(libc::EIO), "seed {}", seed);
                        }
                        Ok(n) => {
                            let n = *n;
                            prop_assert!(n <= expect, "seed {}", seed);
                            prop_assert!(n > 0 || expect == 0, "seed {}: a false end", seed);
                            prop_assert!(n == expect || short[f], "seed {}: short", seed);
                            let from = (at as usize).min(bytes[f].len());
                            prop_assert!(
                                done.buf.as_slice()[..n] == bytes[f][from..from + n],
                                "seed {}: wrong bytes", seed
                            );
                        }
                    }
                }
                c.audit();
            }
            prop_assert_eq!(MSP_RELEASES.load(std::sync::atomic::Ordering::Relaxed), 0);
            c.shutdown();
        }
    }

    /// Reads submitted on one thread while another shuts the cache down each come back once,
    /// read or refused, by the time the drop returns, however the two interleave: over
    /// in-memory files, and over an emulated RAID-0 (a device with room for fewer reads than
    /// the cache takes, so some wait in the cache at shutdown).
    #[test]
    fn reads_racing_a_shutdown_each_complete_once() {
        let bytes: Vec<u8> = (0..16 * PAGE_BYTES as usize)
            .map(|i| (i % 251) as u8)
            .collect();
        /// A cache of 1 MiB with room for 16 requests over `inner` (whose completions go to
        /// `inner_port`), run by MSP over `layout`, delivering to `port`, and `path` opened on it.
        fn cache_over(
            (inner, inner_port, layout): (
                Arc<dyn IoBackend>,
                Arc<CompletionPort>,
                foresight_policy::Layout,
            ),
            port: Arc<CompletionPort>,
            path: &Path,
        ) -> (Box<dyn IoBackend>, Arc<FileHandle>) {
            let policy = msp(&layout, (42, 38));
            let c =
                ArrayCacheBackend::start(inner, &inner_port, policy, 1 << 20, 16, port).unwrap();
            let f = Arc::new(c.open(path, FileId(0), false).unwrap());
            (Box::new(c), f)
        }
        race_submits_with_shutdown("array over noop", 200, 16, &|port| {
            let (noop, inner_port) = noop_below(&[("/f", bytes.clone(), 0)]);
            let below = (
                Arc::new(noop) as Arc<dyn IoBackend>,
                inner_port,
                noop_layout(),
            );
            cache_over(below, port, Path::new("/f"))
        });
        let (_dir, path) = temp_file("array-race", &bytes);
        race_submits_with_shutdown("array over emulated", 50, 16, &|port| {
            cache_over(emulated_below("ssd-850evo", 2), port, &path)
        });
    }
}
