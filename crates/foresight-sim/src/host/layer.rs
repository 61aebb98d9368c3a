//! A cache layer: a page cache, the policy that prefetches into it, and the demand path.
//!
//! The simulator stacks these: the host's page cache (files, driven by the file-level policy) and,
//! on arrays, the RAID driver's own cache (the volume, driven by an array-level policy such as MSP,
//! paper 000_a596543dd26dac72.txt section 5.1). A layer takes reads from above, each with a token it
//! hands back when the data is there, and emits reads to the layer below (`down`) for the pages it
//! lacks. It executes the policy's fetches and nothing else: every decision about what to read ahead
//! is the policy's.
//!
//! A read walks its pages: cached pages are touched, in-flight pages make the read wait for their
//! I/O and are touched as it completes (each page is copied, and counts as used, once), missing
//! pages are read on demand. The policy sees the read first, with the first missing byte,
//! so when its window covers the request no separate demand read is issued. In-flight pages count
//! against the capacity; when the cache is full of them, a prefetch is cut short and a demand read
//! waits (`blocked`) until an I/O completes, so the capacity is a hard bound and demand always makes
//! progress. When room for a fetch could only be made by evicting prefetched data nobody has read
//! yet, memory is over-committed, and the policy hears `Input::MemoryPressure` with the bytes still
//! free.
//!
//! A read the policy deferred (`Output::Defer`) walks its pages the same way but, at the first
//! missing one, parks instead of reading it on demand, and looks again when the policy issues new
//! fetches. Only a read whose page has since been brought in (by a fetch or another read's demand
//! read) can go further then, so parked reads are kept by the page they wait on and only those
//! look again: with one fetch per event and a read parked per stream, looking at every parked
//! read made a run quadratic in the streams (`directed` with 100,000 streams took 48 s of wall
//! time per simulated second). Parked reads keep the order in which they first parked, and every
//! pass over them goes in that order: the order they kept when each pass took all of them and
//! those still waiting parked again one after another.
//!
//! A layer may instead keep every fetch whole ([`CacheLayer::with_whole_fetches`]), as a disk
//! controller does with its read-ahead (paper 001_9c47c4c84914efc3.txt, section 3, Fig. 8): a fetch
//! that does not fit beside the reads in flight is not cut short but waits, in arrival order, until
//! completions leave room for all of it, and the read that caused it waits with it. Room is made by
//! evicting the least recently used data, so when more read-aheads are wanted at once than the cache
//! holds, the waiting fetch takes the data a completion just brought in, before the stream it was
//! read for comes back: that stream misses again and reads it again.
//!
//! Each read down names the stream it is for, for a block scheduler that tells streams apart: the
//! reader being served, or for a fetch the policy issues outside a read (on a completion or a
//! timer) the file's last reader. A block-level layer reads volume bytes, not files, so it is told
//! where the files lie ([`CacheLayer::charging_by_file`]) to find that file.

use std::collections::{BTreeMap, VecDeque};

use foresight_core::{
    ByteLen, ByteOffset, ByteRange, FetchId, FetchParts, FileId, Instant, StreamId,
};
use foresight_policy::layout::{Layout, VOLUME_FILE};
use foresight_policy::{Input, Output, Policy, PAGE_BYTES};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use super::pagecache::{page_key, PageCache, PageKey, PageState};

/// A read the layer asks the layer below for: `pages` pages of `file` from `first_page`. The
/// lower level reports each part of it done with [`CacheLayer::part_done`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Down {
    /// The file (or the volume, in an array layer).
    pub file: FileId,
    /// First page.
    pub first_page: u64,
    /// Number of pages.
    pub pages: u64,
    /// The layer's id for this read.
    pub io: u32,
    /// The stream on whose behalf the read goes down (the reader that missed, or whose read
    /// triggered the readahead), for a block scheduler that tells processes apart; `None` when no
    /// stream is known.
    pub owner: Option<StreamId>,
}

#[derive(Debug)]
struct Io {
    file: FileId,
    first_page: u64,
    pages: u64,
    fetch: Option<FetchId>,
    parts_left: u32,
    /// Reads waiting for it, each with the first page it waits for in it: pages before that it
    /// had already copied when it began to wait (from an earlier copy, since evicted).
    waiters: SmallVec<[(u32, u64); 2]>,
}

#[derive(Clone, Copy, Debug)]
struct Req {
    file: FileId,
    offset: u64,
    bytes: u64,
    token: u64,
    pending: u32,
    resume_page: u64,
    blocked: bool,
    waited: bool,
    /// The policy said it will fetch this read's missing pages itself (`Output::Defer`).
    deferred: bool,
    /// While the read is parked, or looking again after it was, its place among the parked reads
    /// (see [`CacheLayer::parked`]): kept when it parks again, so it keeps its turn.
    park_seq: Option<u64>,
    /// Whose I/O this read's demand reads are.
    owner: Option<StreamId>,
}

/// The read a fetch is issued for, `(file, offset, end)` in bytes: the pages of the fetch holding
/// its bytes are its demand pages, not prefetched, and their bytes outside it are their fill.
type Trigger = (FileId, u64, u64);

/// A fetch of a layer that keeps fetches whole, waiting for room for all of it.
#[derive(Clone, Copy, Debug)]
struct WaitingFetch {
    id: FetchId,
    file: FileId,
    range: ByteRange,
    trigger: Option<Trigger>,
    owner: Option<StreamId>,
}

/// A finished read from above.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Done {
    /// The token given with the read.
    pub token: u64,
    /// Whether it was served from memory without waiting for any I/O.
    pub hit: bool,
}

/// One layer. See the module documentation.
pub struct CacheLayer {
    cache: PageCache,
    policy: Box<dyn Policy>,
    wake: Option<Instant>,
    ios: Vec<Option<Io>>,
    free_ios: Vec<u32>,
    /// Parts still in flight of each fetch, and whether memory cut the fetch short.
    fetch_parts: FetchParts,
    reqs: Vec<Option<Req>>,
    free_reqs: Vec<u32>,
    blocked: VecDeque<u32>,
    /// Reads waiting for the policy to fetch their pages (after `Output::Defer`), by the order in
    /// which they first parked: each pass over them takes them in that order.
    parked: BTreeMap<u64, u32>,
    /// The parked reads whose page (the missing one each stopped at) has not been brought in since
    /// they parked, by that page: looking again, such a read would park where it is, so it does
    /// not look. `parked_waiting` entries in all; with `parked_ready`, one per parked read.
    parked_at: FxHashMap<PageKey, SmallVec<[u64; 1]>>,
    parked_waiting: usize,
    /// The parked reads whose page has been brought in (in flight or cached) since they parked:
    /// the ones that look again when the policy issues new fetches.
    parked_ready: Vec<u64>,
    /// The place the next read to park takes among the parked reads.
    park_seq_next: u64,
    /// Parked reads that looked again because the policy issued fetches, for tests.
    #[cfg(test)]
    parked_looked_again: u64,
    fetches_at_park: u64,
    defer_seen: bool,
    /// Unread prefetched pages evicted, or prefetch pages refused, when the policy last heard of
    /// memory pressure.
    evicted_unread_seen: u64,
    /// Refused prefetch pages when parked reads were last sent to read on demand.
    refused_seen: u64,
    /// Reads for the layer below, to be drained by the driver.
    pub down: Vec<Down>,
    /// Reads from above that finished, to be drained by the driver.
    pub done: Vec<Done>,
    /// Fetches the policy asked for, as `(file, range)`, to be drained by the driver for reports.
    pub fetched: Vec<(FileId, ByteRange)>,
    fetches: u64,
    /// The stream whose read the layer is handling now: fetches the policy issues meanwhile are
    /// that stream's I/O, as Linux issues readahead in the context of the reading process.
    context: Option<StreamId>,
    /// The stream that last read each file: fetches issued outside any read (on a completion or a
    /// timer) are charged to it, since Linux keeps readahead state per open file. One entry per
    /// file read (in a block-level layer, per file of [`CacheLayer::volume_files`] read, and the
    /// volume's own entry for reads outside every file).
    last_reader: FxHashMap<FileId, StreamId>,
    /// In a block-level layer, whose reads and fetches are of volume bytes, the volume's extents
    /// `(volume start, volume end, file)` sorted by start: which file a volume range belongs to,
    /// so that a fetch outside a read is charged to the last reader of the file it reads, as the
    /// engine charges it, not to whichever stream last read anything on the volume.
    volume_files: Vec<(u64, u64, FileId)>,
    /// Fetches are never cut short: one without room waits in `waiting` (see the module docs).
    whole_fetches: bool,
    /// Fetches waiting for room, oldest first; at most `waiting_max`.
    waiting: VecDeque<WaitingFetch>,
    waiting_max: usize,
    /// The largest read taken from above, bytes: what a controller's cache must hold whole beside
    /// its read-ahead, which the config check bounds in advance.
    largest_read_bytes: u64,
    /// The sizes of the files whose last page is partial ([`CacheLayer::with_file_ends`]): the
    /// layer below reads only up to a file's end, so that page's fill stops there.
    file_ends: FxHashMap<FileId, u64>,
}

impl CacheLayer {
    /// Passes the layer's policy through `wrap`, which returns the policy to use instead (a
    /// decorator that records every decision: see `foresight-testkit`'s conformance suite).
    pub fn wrap_policy(&mut self, wrap: &mut dyn FnMut(Box<dyn Policy>) -> Box<dyn Policy>) {
        let placeholder = Box::new(foresight_policy::readahead::NoPrefetch::new());
        let inner = std::mem::replace(&mut self.policy, placeholder);
        self.policy = wrap(inner);
    }

    /// A layer of `capacity_pages` pages driven by `policy`, with plain LRU replacement.
    pub fn new(capacity_pages: u64, policy: Box<dyn Policy>) -> CacheLayer {
        Self::with_cache(PageCache::new(capacity_pages), policy)
    }

    /// A layer over the given cache.
    pub fn with_cache(cache: PageCache, policy: Box<dyn Policy>) -> CacheLayer {
        CacheLayer {
            cache,
            policy,
            wake: None,
            ios: Vec::new(),
            free_ios: Vec::new(),
            fetch_parts: FetchParts::new(),
            reqs: Vec::new(),
            free_reqs: Vec::new(),
            blocked: VecDeque::new(),
            parked: BTreeMap::new(),
            parked_at: FxHashMap::default(),
            parked_waiting: 0,
            parked_ready: Vec::new(),
            park_seq_next: 0,
            #[cfg(test)]
            parked_looked_again: 0,
            fetches_at_park: 0,
            evicted_unread_seen: 0,
            refused_seen: 0,
            defer_seen: false,
            down: Vec::new(),
            done: Vec::new(),
            fetched: Vec::new(),
            fetches: 0,
            context: None,
            last_reader: FxHashMap::default(),
            volume_files: Vec::new(),
            whole_fetches: false,
            waiting: VecDeque::new(),
            waiting_max: 0,
            largest_read_bytes: 0,
            file_ends: FxHashMap::default(),
        }
    }

    /// The same layer, told the sizes of its files (`(file, bytes)`) as the level below reads
    /// them: a file's last page holds its bytes up to the file's end only, so the fill of that
    /// page (the bytes a demand read brought in without asking for them, which count as
    /// prefetched) stops there. Sizes in whole pages need not be given.
    pub fn with_file_ends(mut self, ends: impl IntoIterator<Item = (FileId, u64)>) -> Self {
        self.file_ends = ends
            .into_iter()
            .filter(|&(_, size)| size % PAGE_BYTES != 0)
            .collect();
        self
    }

    /// The bytes `offset..end` of a read, as `from..to` within page `page` of `file`, clipped
    /// to the page's bytes on the level below, and those bytes: `(from, to, page bytes)`.
    fn in_page(&self, file: FileId, page: u64, offset: u64, end: u64) -> (u16, u16, u16) {
        let start = page * PAGE_BYTES;
        let page_end = self
            .file_ends
            .get(&file)
            .map_or(start + PAGE_BYTES, |&size| {
                size.clamp(start, start + PAGE_BYTES)
            });
        let from = offset.clamp(start, page_end) - start;
        let to = end.clamp(start, page_end) - start;
        (from as u16, to as u16, (page_end - start) as u16)
    }

    /// The largest read taken from the layer above so far, bytes.
    pub fn largest_read_bytes(&self) -> u64 {
        self.largest_read_bytes
    }

    /// The same layer, keeping every fetch whole as a disk controller keeps its read-ahead: a
    /// fetch without room waits for it instead of being cut short (see the module documentation).
    /// At most `waiting_max` fetches wait at once: one per read the layer can hold, since each
    /// waiting fetch holds the read that caused it.
    pub fn with_whole_fetches(mut self, waiting_max: usize) -> Self {
        assert!(
            waiting_max >= 1,
            "a whole-fetch layer lets at least one fetch wait"
        );
        self.whole_fetches = true;
        self.waiting_max = waiting_max;
        self
    }

    /// Whether a read from above can be taken now without its fetch overflowing the fetches
    /// waiting for room: always in a layer that cuts fetches short, else while fewer than
    /// `waiting_max` wait (a read causes at most one fetch here). A caller whose reads are not
    /// otherwise bounded (a trace's submitter) holds them back until this is true again.
    pub fn has_room_for_a_read(&self) -> bool {
        !self.whole_fetches || self.waiting.len() < self.waiting_max
    }

    /// Whether all of `range` of `file` that is missing can be claimed now: the pages not in
    /// flight can all be evicted in a plain LRU cache. With nothing in flight a fetch always
    /// starts (cut at the capacity if larger), so no fetch waits for ever.
    fn fits_whole(&self, file: FileId, range: ByteRange) -> bool {
        let in_flight = self.cache.in_flight_pages();
        if in_flight == 0 {
            return true;
        }
        let first = range.start.0 / PAGE_BYTES;
        let last = (range.end().0 - 1) / PAGE_BYTES;
        let missing = (first..=last)
            .filter(|&p| self.cache.state(page_key(file.0, p)).is_none())
            .count() as u64;
        missing <= self.cache.capacity_pages() - in_flight
    }

    /// Starts the waiting fetches, oldest first, while each fits whole; reads parked for them
    /// look again.
    fn start_waiting_fetches(&mut self, now: Instant) {
        let mut started = false;
        while let Some(&w) = self.waiting.front() {
            if !self.fits_whole(w.file, w.range) {
                break;
            }
            self.waiting.pop_front();
            started = true;
            let (ios, short) = self.fetch_pages(w.file, w.range, Some(w.id), w.trigger, w.owner);
            if ios == 0 {
                self.policy.handle(
                    now,
                    Input::Fetched {
                        id: w.id,
                        ok: !short,
                    },
                );
                self.drain_policy(now, None);
            } else {
                self.fetch_parts.started(w.id, ios, short);
            }
        }
        if started {
            for id in self.unpark_all() {
                self.demand(id);
            }
        }
    }

    /// The same layer, reading volume bytes ([`VOLUME_FILE`]) laid out as `layout` places its
    /// files: a fetch the policy issues outside a read is charged to the last reader of the file
    /// whose bytes it starts in (or, starting outside every file, to the volume's last reader).
    pub fn charging_by_file(mut self, layout: &Layout) -> Self {
        let mut extents: Vec<(u64, u64, FileId)> = Vec::new();
        for f in 0..layout.file_count() {
            let id = FileId(f as u32);
            for e in &layout.file(id).extents {
                extents.push((e.volume_offset.0, e.volume_offset.0 + e.len.0, id));
            }
        }
        extents.sort_unstable_by_key(|&(start, _, _)| start);
        self.volume_files = extents;
        self
    }

    /// The key under which the last reader of `file`'s bytes at `offset` is kept: the file itself,
    /// or in a block-level layer the file whose extent holds that volume offset.
    fn charge_key(&self, file: FileId, offset: u64) -> Option<FileId> {
        if file != VOLUME_FILE || self.volume_files.is_empty() {
            return Some(file);
        }
        let after = self
            .volume_files
            .partition_point(|&(start, _, _)| start <= offset);
        let (_, end, f) = *self.volume_files.get(after.checked_sub(1)?)?;
        (offset < end).then_some(f)
    }

    /// The page cache, for statistics.
    pub fn cache(&self) -> &PageCache {
        &self.cache
    }

    /// Of the prefetched pages still in flight and unread, how many the level below has read
    /// already, and of the unread fill bytes of pages in flight (see [`PageCache`]), how many:
    /// `(pages, fill bytes)`. `has_read(io, file, page)` says whether it has, for page `page` of
    /// `file` in this layer's read `io`. A read split into parts completes here with its last
    /// part, but the parts done before are in the device's figures (see
    /// [`crate::host::volume::Volume::unread_parts`]).
    pub fn in_flight_prefetch_pages_read(
        &self,
        mut has_read: impl FnMut(u32, FileId, u64) -> bool,
    ) -> (u64, u64) {
        let mut read = 0;
        let mut fill_read = 0;
        for (io, i) in self.ios.iter().enumerate() {
            let Some(i) = i else { continue };
            let io = io as u32;
            for p in i.first_page..i.first_page + i.pages {
                let key = page_key(i.file.0, p);
                if self.cache.state(key) != Some(PageState::InFlight { io }) {
                    continue;
                }
                if self.cache.is_unread_prefetch(key) {
                    read += u64::from(has_read(io, i.file, p));
                } else {
                    let fill = self.cache.unread_fill(key);
                    if fill > 0 && has_read(io, i.file, p) {
                        fill_read += fill;
                    }
                }
            }
        }
        (read, fill_read)
    }

    /// `(prefetched, wasted)` bytes of this layer at the end of a run, as the report counts
    /// them: the prefetched pages and the fill bytes (see [`PageCache`]), less those whose read
    /// is still in flight and that the level below has not read (`read_in_flight`: the pages and
    /// fill bytes it has, from [`CacheLayer::in_flight_prefetch_pages_read`]); what is left
    /// unread in the cache is wasted.
    pub fn prefetched_and_wasted_bytes(&self, read_in_flight: (u64, u64)) -> (u64, u64) {
        let c = &self.cache;
        let st = c.stats();
        let pages_in_flight = c.in_flight_prefetched_pages() - read_in_flight.0;
        let fill_in_flight = c.in_flight_fill_bytes() - read_in_flight.1;
        (
            (st.prefetched_pages - pages_in_flight) * PAGE_BYTES + st.fill_bytes - fill_in_flight,
            (st.wasted_pages + c.unused_prefetched_pages() - pages_in_flight) * PAGE_BYTES
                + st.wasted_fill_bytes
                + c.unused_fill_bytes()
                - fill_in_flight,
        )
    }

    /// Whether a read from above given `token` is still under way over any byte of
    /// `offset..offset + bytes`: the level above has not had those bytes from this layer yet.
    pub fn reading(&self, token: u64, offset: u64, bytes: u64) -> bool {
        self.reqs
            .iter()
            .flatten()
            .any(|r| r.token == token && r.offset < offset + bytes && offset < r.offset + r.bytes)
    }

    /// The policy's name.
    pub fn policy_name(&self) -> &str {
        self.policy.name()
    }

    /// Fetches the policy has issued.
    pub fn fetches(&self) -> u64 {
        self.fetches
    }

    /// When the policy wants its timer.
    pub fn wake(&self) -> Option<Instant> {
        self.wake
    }

    /// What the layer's reads wait on, for a report of a run that stopped making progress.
    pub fn describe_waits(&self) -> String {
        let wake = self
            .wake
            .map_or_else(|| "none".to_string(), |t| t.to_string());
        format!(
            "{} reads parked for the policy's fetches, {} fetches waiting for room, {} waiting for \
             memory, {} reads in flight below, policy {} timer next at {wake}",
            self.parked.len(),
            self.waiting.len(),
            self.blocked.len(),
            self.ios.len() - self.free_ios.len(),
            self.policy.name(),
        )
    }

    /// Fires the policy's timer.
    pub fn on_timer(&mut self, now: Instant) {
        self.policy.handle_timeout(now);
        self.drain_policy(now, None);
    }

    /// The application disclosed future reads of `file` (`Input::Hint`): the policy hears of them
    /// and whatever it answers (fetches, releases) is executed at once.
    pub fn hint(&mut self, now: Instant, stream: StreamId, file: FileId, ranges: Vec<ByteRange>) {
        self.policy.handle(
            now,
            Input::Hint {
                stream,
                file,
                ranges,
            },
        );
        self.drain_policy(now, None);
        // A policy sizing a window for the reads just disclosed hears how much memory is free now,
        // so instances that start together share memory from the start.
        self.tell_free_memory(now);
    }

    /// Tells the policy how much of the page cache is free, as an OS tells a process its available
    /// memory (paper 003_eb9cef22f2823582.txt, section I: the contention controller "detects
    /// changes in available memory"), and executes what it answers.
    fn tell_free_memory(&mut self, now: Instant) {
        self.policy.handle(
            now,
            Input::MemoryPressure {
                available: self.free_bytes(),
            },
        );
        self.drain_policy(now, None);
    }

    /// Memory not taken by cached pages or pages in flight.
    fn free_bytes(&self) -> ByteLen {
        ByteLen((self.cache.capacity_pages() - self.cache.used_pages()) * PAGE_BYTES)
    }

    /// A read of `bytes` at `offset` of `file` by `stream`; `token` comes back in `done`.
    pub fn read(
        &mut self,
        now: Instant,
        stream: StreamId,
        file: FileId,
        offset: u64,
        bytes: u64,
        token: u64,
    ) {
        self.read_for(now, stream, Some(stream), file, offset, bytes, token);
    }

    /// [`CacheLayer::read`] where the policy sees the read as `stream`'s but the I/O it causes
    /// belongs to `owner`: the RAID driver's cache hears one anonymous stream, while the block
    /// requests below it still come from the process that read.
    #[allow(clippy::too_many_arguments)]
    pub fn read_for(
        &mut self,
        now: Instant,
        stream: StreamId,
        owner: Option<StreamId>,
        file: FileId,
        offset: u64,
        bytes: u64,
        token: u64,
    ) {
        assert!(bytes > 0, "empty read");
        self.largest_read_bytes = self.largest_read_bytes.max(bytes);
        if let Some(o) = owner {
            self.last_reader.insert(file, o);
            if let Some(key) = self.charge_key(file, offset).filter(|&k| k != file) {
                self.last_reader.insert(key, o);
            }
        }
        let req = Req {
            file,
            offset,
            bytes,
            token,
            pending: 0,
            resume_page: offset / PAGE_BYTES,
            blocked: false,
            waited: false,
            deferred: false,
            park_seq: None,
            owner,
        };
        let id = foresight_core::take_slot(&mut self.reqs, &mut self.free_reqs, Some(req));
        let first = offset / PAGE_BYTES;
        let last = (offset + bytes - 1) / PAGE_BYTES;
        let refused_before = self.cache.stats().refused_prefetch_pages;
        let miss = (first..=last)
            .find(|&p| self.cache.state(page_key(file.0, p)).is_none())
            .map(|p| ByteOffset((p * PAGE_BYTES).max(offset)));
        self.policy.handle(
            now,
            Input::Read {
                stream,
                file,
                range: ByteRange::new(offset, bytes),
                miss,
            },
        );
        self.defer_seen = false;
        self.context = owner;
        self.drain_policy(now, Some((file, offset, offset + bytes)));
        self.context = None;
        // A deferral promises fetches; if memory refused one while this read was handled, that
        // promise may not hold, so the read takes what it lacks on demand.
        if self.defer_seen && self.cache.stats().refused_prefetch_pages == refused_before {
            self.reqs[id as usize]
                .as_mut()
                .expect("live request")
                .deferred = true;
        }
        self.demand(id);
    }

    /// Records that the driver split read `io` into one more part for the level below.
    pub fn add_part(&mut self, io: u32) {
        self.ios[io as usize].as_mut().expect("live io").parts_left += 1;
    }

    /// One part of read `io` finished.
    pub fn part_done(&mut self, now: Instant, io: u32) {
        let left = {
            let i = self.ios[io as usize].as_mut().expect("live io");
            assert!(i.parts_left > 0, "io {io} finished more parts than it had");
            i.parts_left -= 1;
            i.parts_left
        };
        if left == 0 {
            self.io_done(now, io);
        }
    }

    /// Lets reads parked for the policy's fetches read on demand when nothing is in flight in
    /// this layer: no fetch they wait for can arrive then, and a policy that deferred them but
    /// cannot fetch (its memory taken by data nobody reads) would otherwise leave them waiting for
    /// ever. The driver calls this only once every event of the current instant has been handled:
    /// a completion often wakes a client whose next read, at the same instant, lets the policy
    /// fetch (it consumes the buffers the policy was waiting on), and releasing the parked reads
    /// before that sends every waiting stream's request to the disk on its own. Returns whether
    /// any read was released (its demand reads are then in `down`).
    pub fn settle(&mut self) -> bool {
        if self.parked.is_empty() || self.ios.len() != self.free_ios.len() {
            return false;
        }
        for id in self.unpark_all() {
            let q = self.reqs[id as usize].as_mut().expect("parked request");
            q.blocked = false;
            q.deferred = false;
            self.demand(id);
        }
        true
    }

    /// Carries out what the policy asked for. A fetch that needs no I/O (its pages are all in
    /// memory or in flight already) is done at once, and the policy hears so before the outputs
    /// that follow it are looked at again, which may bring another such fetch, and so on: each
    /// such answer is handled as a nested pass, whose own closing checks
    /// ([`CacheLayer::drain_tail`]) run before its caller's go on. The passes are kept on a
    /// stack of their own rather than the thread's: a trace of two 128 MiB reads under
    /// `streams` with 4 KiB reads nested 22,750 of them and overflowed the thread's stack.
    fn drain_policy(&mut self, now: Instant, trigger: Option<Trigger>) {
        let mut passes: Vec<smallvec::IntoIter<[(FetchId, bool); 4]>> =
            vec![self.drain_outputs(trigger).into_iter()];
        while let Some(pass) = passes.last_mut() {
            match pass.next() {
                Some((id, ok)) => {
                    self.policy.handle(now, Input::Fetched { id, ok });
                    let nested = self.drain_outputs(None).into_iter();
                    passes.push(nested);
                }
                None => {
                    passes.pop();
                    if self.drain_tail(now) {
                        // The policy heard that memory is over-committed: what it answers is a
                        // nested pass too, as it was when the closing checks drained it.
                        passes.push(self.drain_outputs(None).into_iter());
                    }
                }
            }
        }
    }

    /// The first part of a pass of [`CacheLayer::drain_policy`]: executes the policy's outputs
    /// and lets parked reads that new fetches may cover look again. Returns the fetches done at
    /// once, for the policy to hear of.
    fn drain_outputs(&mut self, trigger: Option<Trigger>) -> SmallVec<[(FetchId, bool); 4]> {
        let mut done_now: SmallVec<[(FetchId, bool); 4]> = SmallVec::new();
        while let Some(out) = self.policy.poll_output() {
            match out {
                Output::Fetch {
                    id, file, range, ..
                } => {
                    self.fetches += 1;
                    self.fetched.push((file, range));
                    let owner = self.context.or_else(|| {
                        let key = self.charge_key(file, range.start.0).unwrap_or(file);
                        self.last_reader.get(&key).copied()
                    });
                    if self.whole_fetches
                        && !range.is_empty()
                        && (!self.waiting.is_empty() || !self.fits_whole(file, range))
                    {
                        // Behind the fetches already waiting, so room goes in arrival order; the
                        // read that caused it waits for it as for a deferred fetch.
                        assert!(
                            self.waiting.len() < self.waiting_max,
                            "more than {} fetches waiting for room",
                            self.waiting_max
                        );
                        self.waiting.push_back(WaitingFetch {
                            id,
                            file,
                            range,
                            trigger,
                            owner,
                        });
                        self.defer_seen = true;
                        continue;
                    }
                    let (ios, short) = self.fetch_pages(file, range, Some(id), trigger, owner);
                    if ios == 0 {
                        done_now.push((id, !short));
                    } else {
                        self.fetch_parts.started(id, ios, short);
                    }
                }
                Output::Release { file, range } if !range.is_empty() => {
                    let first = range.start.0 / PAGE_BYTES;
                    let last = (range.end().0 - 1) / PAGE_BYTES;
                    for p in first..=last {
                        self.cache.release(page_key(file.0, p));
                    }
                }
                Output::Defer { .. } => self.defer_seen = true,
                // The page cache has no storage tiers to drop copies from.
                Output::Cancel { .. } | Output::Release { .. } | Output::Evict { .. } => {}
            }
        }
        if !self.parked.is_empty() && self.fetches != self.fetches_at_park {
            // New fetches may cover reads that wait for the policy: let them look again. Only
            // those whose page has come in since they parked can go further; the others would
            // park again where they are, changing nothing.
            self.fetches_at_park = self.fetches;
            for id in self.unpark_ready() {
                #[cfg(test)]
                {
                    self.parked_looked_again += 1;
                }
                self.reqs[id as usize]
                    .as_mut()
                    .expect("parked request")
                    .blocked = false;
                self.demand(id);
            }
        }
        done_now
    }

    /// The closing checks of a pass of [`CacheLayer::drain_policy`], once the fetches it found
    /// done at once have been answered: memory that refused or evicted prefetched data, and the
    /// policy's next timer. Returns whether it told the policy that memory is over-committed,
    /// whose answer the caller then drains (and the timer is taken after that).
    fn drain_tail(&mut self, now: Instant) -> bool {
        let stats = self.cache.stats();
        if stats.refused_prefetch_pages > self.refused_seen {
            // A fetch was cut short for want of memory: reads that wait for the policy's fetches
            // may wait for pages that will not come, so they read what they still lack on demand
            // (a demand read may evict), which keeps every read making progress.
            self.refused_seen = stats.refused_prefetch_pages;
            for id in self.unpark_all() {
                let q = self.reqs[id as usize].as_mut().expect("parked request");
                q.blocked = false;
                q.deferred = false;
                self.demand(id);
            }
        }
        let evicted = stats.evicted_unread_pages + stats.refused_prefetch_pages;
        if evicted > self.evicted_unread_seen {
            // Room for these fetches was made by evicting data fetched ahead and not read yet,
            // or could only have been made so and was refused: memory is over-committed.
            self.evicted_unread_seen = evicted;
            self.policy.handle(
                now,
                Input::MemoryPressure {
                    available: self.free_bytes(),
                },
            );
            return true;
        }
        self.wake = self.policy.poll_timeout();
        false
    }

    /// Issues reads for the missing pages of `range`; returns how many, and whether memory cut
    /// the range short (it stops early when memory is full of reads in flight or, in a cache that
    /// keeps prefetched pages until read, of such pages).
    fn fetch_pages(
        &mut self,
        file: FileId,
        range: ByteRange,
        fetch: Option<FetchId>,
        trigger: Option<Trigger>,
        owner: Option<StreamId>,
    ) -> (u32, bool) {
        if range.is_empty() {
            return (0, false);
        }
        let first = range.start.0 / PAGE_BYTES;
        let last = (range.end().0 - 1) / PAGE_BYTES;
        let mut count = 0;
        let mut p = first;
        while p <= last {
            if self.cache.state(page_key(file.0, p)).is_some() {
                p += 1;
                continue;
            }
            let io = self.alloc_io(Io {
                file,
                first_page: p,
                pages: 0,
                fetch,
                parts_left: 0,
                waiters: SmallVec::new(),
            });
            let start = p;
            while p <= last && self.cache.state(page_key(file.0, p)).is_none() {
                let key = page_key(file.0, p);
                let inserted = match trigger {
                    Some((f, a, b))
                        if f == file && p * PAGE_BYTES < b && a < (p + 1) * PAGE_BYTES =>
                    {
                        // A page of the read the fetch is for: demand, with the rest of the
                        // page as its fill.
                        match self.in_page(file, p, a, b) {
                            (from, to, bytes) if from < to => self
                                .cache
                                .try_insert_demand_in_flight(key, io, from, to, bytes),
                            // The read asks nothing the level below holds (past a file's end).
                            _ => self.cache.try_insert_in_flight(key, io, false),
                        }
                    }
                    _ => self.cache.try_insert_in_flight(key, io, true),
                };
                if !inserted {
                    break;
                }
                self.page_came_in(key);
                p += 1;
            }
            if p == start {
                self.ios[io as usize] = None;
                self.free_ios.push(io);
                return (count, true);
            }
            self.ios[io as usize].as_mut().expect("live io").pages = p - start;
            self.down.push(Down {
                file,
                first_page: start,
                pages: p - start,
                io,
                owner,
            });
            count += 1;
            if p <= last && self.cache.state(page_key(file.0, p)).is_none() {
                // Memory is full: the rest is dropped.
                return (count, true);
            }
        }
        (count, false)
    }

    /// Page `key` is now held (in flight): the reads parked on it can go further when they look
    /// again.
    fn page_came_in(&mut self, key: PageKey) {
        if self.parked_waiting == 0 {
            return;
        }
        if let Some(seqs) = self.parked_at.remove(&key) {
            self.parked_waiting -= seqs.len();
            self.parked_ready.extend(seqs);
        }
    }

    /// Parks read `id`, whose page `key` is missing, at place `seq` among the parked reads.
    fn park(&mut self, id: u32, seq: u64, key: PageKey) {
        let before = self.parked.insert(seq, id);
        assert!(before.is_none(), "two parked reads at place {seq}");
        self.parked_at.entry(key).or_default().push(seq);
        self.parked_waiting += 1;
        assert_eq!(
            self.parked_waiting + self.parked_ready.len(),
            self.parked.len(),
            "each parked read is kept once, by its page or as ready"
        );
    }

    /// Takes every parked read, in the order they first parked, to look again.
    fn unpark_all(&mut self) -> Vec<u32> {
        self.parked_at.clear();
        self.parked_waiting = 0;
        self.parked_ready.clear();
        std::mem::take(&mut self.parked).into_values().collect()
    }

    /// Takes the parked reads whose page has come in since they parked, in the order they first
    /// parked, to look again.
    fn unpark_ready(&mut self) -> Vec<u32> {
        let mut ready = std::mem::take(&mut self.parked_ready);
        ready.sort_unstable();
        let ids = ready
            .iter()
            .map(|seq| self.parked.remove(seq).expect("a ready read is parked"))
            .collect();
        assert_eq!(
            self.parked_waiting,
            self.parked.len(),
            "each parked read is kept once, by its page or as ready"
        );
        ids
    }

    fn alloc_io(&mut self, io: Io) -> u32 {
        foresight_core::take_slot(&mut self.ios, &mut self.free_ios, Some(io))
    }

    fn demand(&mut self, id: u32) {
        let r = self.reqs[id as usize].expect("live request");
        let last = (r.offset + r.bytes - 1) / PAGE_BYTES;
        let mut p = r.resume_page;
        let mut pending = 0u32;
        let mut last_io = u32::MAX;
        while p <= last {
            let key = page_key(r.file.0, p);
            match self.cache.state(key) {
                Some(PageState::Cached) => {
                    let (from, to, _) = self.in_page(r.file, p, r.offset, r.offset + r.bytes);
                    self.cache.touch_bytes(key, from, to);
                    p += 1;
                }
                Some(PageState::InFlight { io }) => {
                    if io != last_io {
                        self.ios[io as usize]
                            .as_mut()
                            .expect("live io")
                            .waiters
                            .push((id, p));
                        pending += 1;
                        last_io = io;
                    }
                    p += 1;
                }
                None if r.deferred => {
                    // The policy will fetch it: wait for that instead of reading on demand.
                    let seq = r.park_seq.unwrap_or_else(|| {
                        self.park_seq_next += 1;
                        self.park_seq_next - 1
                    });
                    let q = self.reqs[id as usize].as_mut().expect("live request");
                    q.resume_page = p;
                    q.pending += pending;
                    q.blocked = true;
                    q.waited = true;
                    q.park_seq = Some(seq);
                    self.park(id, seq, key);
                    self.fetches_at_park = self.fetches;
                    return;
                }
                None => {
                    let range = ByteRange::new(p * PAGE_BYTES, (last + 1 - p) * PAGE_BYTES);
                    let trigger = (r.file, r.offset.max(p * PAGE_BYTES), r.offset + r.bytes);
                    self.fetch_pages(r.file, range, None, Some(trigger), r.owner);
                    if self.cache.state(key).is_none() {
                        let q = self.reqs[id as usize].as_mut().expect("live request");
                        q.resume_page = p;
                        q.pending += pending;
                        q.blocked = true;
                        q.waited = true;
                        q.park_seq = None;
                        self.blocked.push_back(id);
                        return;
                    }
                }
            }
        }
        let q = self.reqs[id as usize].as_mut().expect("live request");
        q.resume_page = last + 1;
        q.pending += pending;
        q.waited |= q.pending > 0;
        q.blocked = false;
        q.park_seq = None;
        if q.pending == 0 {
            self.finish(id);
        }
    }

    fn finish(&mut self, id: u32) {
        let r = self.reqs[id as usize].take().expect("live request");
        self.free_reqs.push(id);
        self.done.push(Done {
            token: r.token,
            hit: !r.waited,
        });
    }

    fn io_done(&mut self, now: Instant, io: u32) {
        let Io {
            file,
            first_page,
            pages,
            fetch,
            waiters,
            ..
        } = self.ios[io as usize].take().expect("live io");
        self.free_ios.push(io);
        for p in first_page..first_page + pages {
            self.cache.complete(page_key(file.0, p));
        }
        for (w, from_page) in waiters {
            // A read waiting on these pages copies them now, as a kernel read copies each page
            // once it is up to date, holding it meanwhile: touched, they count as used and are
            // the most recently used. Touched only when the whole read was done, they could be
            // evicted while it waited for its later pages, counted as wasted though the read had
            // them, and the read still completed without reading them again. It copies only the
            // pages from the one it began to wait for: a page before that it had copied already,
            // and a fetch that read the page again after it was evicted brought a copy nobody
            // read, which counted as used.
            let r = self.reqs[w as usize].expect("live request");
            let last = (r.offset + r.bytes - 1) / PAGE_BYTES;
            for p in first_page.max(from_page)..(first_page + pages).min(last + 1) {
                let (from, to, _) = self.in_page(file, p, r.offset, r.offset + r.bytes);
                self.cache.touch_bytes(page_key(file.0, p), from, to);
            }
            let r = self.reqs[w as usize].as_mut().expect("live request");
            r.pending -= 1;
            if r.pending == 0 && !r.blocked {
                self.finish(w);
            }
        }
        if let Some(id) = fetch {
            // A fetch cut short reports `ok: false`: not all of its bytes arrived.
            if let Some(ok) = self.fetch_parts.part_done(id, true) {
                self.policy.handle(now, Input::Fetched { id, ok });
                self.drain_policy(now, None);
            }
        }
        // Room freed: fetches waiting for all of theirs go first, in arrival order.
        self.start_waiting_fetches(now);
        // Memory freed up for eviction: reads that found it full of in-flight pages go on.
        for _ in 0..self.blocked.len() {
            let Some(b) = self.blocked.pop_front() else {
                break;
            };
            self.demand(b);
            if self.reqs[b as usize].is_some_and(|r| r.blocked) {
                // Still no room: it keeps its place at the head of the line.
                let again = self.blocked.pop_back();
                debug_assert_eq!(again, Some(b));
                self.blocked.push_front(b);
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use foresight_core::Duration;
    use foresight_policy::streams::{StreamScheduler, StreamsConfig};

    use super::*;

    /// Sends what the layer has for the level below down, and returns the reads: `(io, volume
    /// offset, stream charged)`.
    fn take_down(layer: &mut CacheLayer) -> Vec<(u32, u64, Option<StreamId>)> {
        std::mem::take(&mut layer.down)
            .into_iter()
            .map(|d| {
                layer.add_part(d.io);
                (d.io, d.first_page * PAGE_BYTES, d.owner)
            })
            .collect()
    }

    /// The stream scheduler runs in a block-level layer, on volume bytes, where every read is of
    /// [`VOLUME_FILE`]. A turn's second read (`N` = 2) is issued when its first completes, outside
    /// any read, and is charged to the last reader of the file it reads, as the engine charges it,
    /// even when another stream has read since on another file. It used to go to the volume's last
    /// reader, whichever file that one read: with four clients thinking 1 to 3 ms under
    /// `anticipatory`, most fetches issued on completions were charged to a client whose file they
    /// did not read, and the disk was held for that client's next request.
    #[test]
    fn a_fetch_outside_a_read_is_charged_to_the_last_reader_of_the_file_it_reads() {
        let layout = Arc::new(
            Layout::spread(ByteLen::gib(8), None, 2, ByteLen::mib(4)).expect("the files fit"),
        );
        let file1_at = layout.file(FileId(1)).extents[0].volume_offset.0;
        let cfg = StreamsConfig {
            dispatch: Some(2),
            readahead_bytes: 512 << 10,
            per_turn: 2,
            memory_bytes: 8 << 20,
            ..StreamsConfig::default()
        };
        let policy = StreamScheduler::new(cfg, layout.clone()).expect("a valid config");
        let mut layer =
            CacheLayer::with_cache(PageCache::protecting_unread(4096), Box::new(policy))
                .charging_by_file(&layout);
        let (a, b) = (StreamId(0), StreamId(1));
        let mut now = Instant::ZERO;
        let mut token = 0;
        let mut read = |layer: &mut CacheLayer, now: Instant, s: StreamId, at: u64| {
            token += 1;
            layer.read_for(now, StreamId(0), Some(s), VOLUME_FILE, at, 64 << 10, token);
            take_down(layer)
        };
        // Stream a's first read goes on demand; its second makes it a stream, fetched in 512 KiB.
        for (io, _, owner) in read(&mut layer, now, a, 0) {
            assert_eq!(owner, Some(a));
            layer.part_done(now, io);
        }
        let first = read(&mut layer, now, a, 64 << 10);
        assert_eq!(
            first.iter().map(|&(_, at, o)| (at, o)).collect::<Vec<_>>(),
            [(64 << 10, Some(a))],
            "stream a's first fetch, in its read"
        );
        // Stream b reads its own file on demand, and is the volume's last reader.
        now += Duration::from_millis(1);
        for (io, _, owner) in read(&mut layer, now, b, file1_at) {
            assert_eq!(owner, Some(b));
            layer.part_done(now, io);
        }
        // Stream a's fetch completes: the turn's second fetch is a's file's, and a's.
        now += Duration::from_millis(1);
        layer.part_done(now, first[0].0);
        let second = take_down(&mut layer);
        assert_eq!(
            second.iter().map(|&(_, at, o)| (at, o)).collect::<Vec<_>>(),
            [((64 << 10) + (512 << 10), Some(a))],
            "the turn's second fetch, issued on the first one's completion"
        );
    }

    /// A controller's read-ahead is kept whole: with room for two read-aheads, a third waits with
    /// its read instead of being cut short, and when the first completes it takes that one's room,
    /// evicting the read-ahead its stream has not read yet; that stream's next read misses and its
    /// read-ahead waits in turn.
    #[test]
    fn a_whole_read_ahead_waits_and_then_takes_the_one_just_read_in() {
        let page = PAGE_BYTES;
        let fixed = foresight_policy::readahead::FixedReadahead::new(3 * page, 1 << 30);
        // Room for two reads of one page with three pages of read-ahead each.
        let mut layer = CacheLayer::new(8, Box::new(fixed)).with_whole_fetches(4);
        let now = Instant::ZERO;
        let (a, b, c) = (StreamId(0), StreamId(1), StreamId(2));
        let read = |layer: &mut CacheLayer, s: StreamId, at: u64, token: u64| {
            layer.read_for(now, s, Some(s), VOLUME_FILE, at, page, token);
            take_down(layer)
        };
        let a_io = read(&mut layer, a, 0, 1);
        assert_eq!(a_io.len(), 1);
        assert_eq!(read(&mut layer, b, 1 << 20, 2).len(), 1);
        // No room for c's four pages: nothing goes down, not even the page c asked for.
        assert!(read(&mut layer, c, 2 << 20, 3).is_empty());
        layer.part_done(now, a_io[0].0);
        assert_eq!(
            std::mem::take(&mut layer.done)
                .iter()
                .map(|d| d.token)
                .collect::<Vec<_>>(),
            [1]
        );
        // a's read-ahead made room for c's, whole, before a came back.
        let c_io = take_down(&mut layer);
        assert_eq!(
            c_io.iter().map(|&(_, at, o)| (at, o)).collect::<Vec<_>>(),
            [(2 << 20, Some(c))]
        );
        assert!(layer.cache().state(page_key(VOLUME_FILE.0, 1)).is_none());
        // a's next page is gone: its read misses, and its read-ahead waits for room.
        assert!(read(&mut layer, a, page, 4).is_empty());
        assert!(layer.done.is_empty());
        assert_eq!(layer.cache().in_flight_pages(), 8);
    }

    /// When the data a read waits for arrives through another stream's fetch while the read's own
    /// read-ahead still waits for room, the read is served by that data, and its read-ahead, when
    /// room comes, reads only the page still missing: nothing is read twice and no read waits for
    /// ever.
    #[test]
    fn a_read_whose_data_another_fetch_brings_is_served_while_its_read_ahead_waits() {
        let page = PAGE_BYTES;
        let fixed = foresight_policy::readahead::FixedReadahead::new(3 * page, 1 << 30);
        let mut layer = CacheLayer::new(8, Box::new(fixed)).with_whole_fetches(4);
        let now = Instant::ZERO;
        let read = |layer: &mut CacheLayer, s: u32, at: u64, token: u64| {
            layer.read_for(
                now,
                StreamId(s),
                Some(StreamId(s)),
                VOLUME_FILE,
                at,
                page,
                token,
            );
            take_down(layer)
        };
        let served = |layer: &mut CacheLayer| {
            std::mem::take(&mut layer.done)
                .iter()
                .map(|x| x.token)
                .collect::<Vec<_>>()
        };
        let offsets = |ios: &[(u32, u64, Option<StreamId>)]| {
            ios.iter().map(|&(_, at, _)| at / page).collect::<Vec<_>>()
        };
        // Pages 0-3 and 16-19 in flight: the cache is full of reads under way.
        let a = read(&mut layer, 0, 0, 1);
        let b = read(&mut layer, 1, 16 * page, 2);
        // c reads page 5 and d page 6: both read-aheads wait (pages 5-8, then 6-9), c's first.
        assert!(read(&mut layer, 2, 5 * page, 3).is_empty());
        assert!(read(&mut layer, 3, 6 * page, 4).is_empty());
        // a's pages land: c's read-ahead takes their room, and brings d's page 6 with it; d's
        // read-ahead, now missing page 9 alone, still has no room.
        layer.part_done(now, a[0].0);
        assert_eq!(served(&mut layer), [1]);
        let c = take_down(&mut layer);
        assert_eq!(offsets(&c), [5]);
        // c's pages land: d's read is served by them, and its read-ahead, now with room, goes
        // down for page 9 alone.
        layer.part_done(now, c[0].0);
        assert_eq!(served(&mut layer), [3, 4]);
        let d = take_down(&mut layer);
        assert_eq!(offsets(&d), [9]);
        layer.part_done(now, b[0].0);
        layer.part_done(now, d[0].0);
        assert_eq!(served(&mut layer), [2]);
        assert_eq!(layer.cache().in_flight_pages(), 0);
        assert!(layer.waiting.is_empty());
    }

    /// A policy that sends the fetches it is given: some at once, the others each when a given
    /// fetch of its completes.
    struct Scripted {
        out: VecDeque<Output>,
        after: Vec<(FetchId, Output)>,
    }

    impl Policy for Scripted {
        fn name(&self) -> &str {
            "scripted"
        }

        fn handle(&mut self, _now: Instant, input: Input) {
            if let Input::Fetched { id, .. } = input {
                let (now, later) = std::mem::take(&mut self.after)
                    .into_iter()
                    .partition(|(after, _)| *after == id);
                self.after = later;
                self.out.extend(now.into_iter().map(|(_, o)| o));
            }
        }

        fn poll_output(&mut self) -> Option<Output> {
            self.out.pop_front()
        }
    }

    /// A read copies each of its pages once. Here it copies its first page from a fetch, then
    /// waits for room for its second; meanwhile its first page is evicted, and a fetch reads
    /// both again. The read waits on that fetch for its second page only: the first page's new
    /// copy stays unread. It used to copy both as that fetch completed, so the new copy counted
    /// as used, though nobody read it.
    #[test]
    fn a_read_does_not_copy_again_a_page_it_copied_before_it_waited() {
        let page = PAGE_BYTES;
        let fetch = |id: u64, file: u32, pages: u64| Output::Fetch {
            id: FetchId(id),
            file: FileId(file),
            range: ByteRange::new(0, pages * page),
            into: foresight_policy::Tier::Memory,
        };
        let script = Scripted {
            // Two pages of file 1, then the read's first page.
            out: VecDeque::from([fetch(1, 1, 2), fetch(2, 0, 1)]),
            after: vec![
                // Takes the room the read's first page leaves as it is copied, evicting it.
                (FetchId(2), fetch(3, 2, 1)),
                // Reads both pages of the read again, in the room file 1's pages leave.
                (FetchId(1), fetch(4, 0, 2)),
            ],
        };
        let mut layer = CacheLayer::new(3, Box::new(script));
        let now = Instant::ZERO;
        layer.on_timer(now);
        let first = take_down(&mut layer);
        assert_eq!(first.len(), 2);
        // The cache is full of fetches under way: the read waits on its first page's fetch,
        // and for room for its second.
        layer.read(now, StreamId(0), FileId(0), 0, 2 * page, 7);
        assert!(take_down(&mut layer).is_empty());
        // Its first page arrives and is copied; fetch 3 evicts it; still no room.
        layer.part_done(now, first[1].0);
        assert_eq!(layer.cache().stats().used_prefetched_pages, 1);
        assert!(layer.cache().state(page_key(0, 0)).is_none());
        let third = take_down(&mut layer);
        assert_eq!(third.len(), 1);
        // File 1's pages arrive; fetch 4 reads the read's two pages again in their room.
        layer.part_done(now, first[0].0);
        let fourth = take_down(&mut layer);
        assert_eq!(fourth.len(), 1);
        layer.part_done(now, fourth[0].0);
        assert_eq!(layer.done.iter().map(|d| d.token).collect::<Vec<_>>(), [7]);
        // Its first copy of page 0 and page 1 were used; page 0's second copy was not (nor is
        // fetch 3's page, still under way).
        assert_eq!(layer.cache().stats().used_prefetched_pages, 2);
        assert_eq!(layer.cache().unused_prefetched_pages(), 2);
        layer.part_done(now, third[0].0);
    }

    /// A policy that defers every read, and on its timer issues the fetches it is given.
    struct DeferEvery {
        out: VecDeque<Output>,
        on_timer: Vec<Output>,
    }

    impl Policy for DeferEvery {
        fn name(&self) -> &str {
            "defer-every"
        }

        fn handle(&mut self, _now: Instant, input: Input) {
            if let Input::Read { file, range, .. } = input {
                self.out.push_back(Output::Defer { file, range });
            }
        }

        fn poll_output(&mut self) -> Option<Output> {
            self.out.pop_front()
        }

        fn handle_timeout(&mut self, _now: Instant) {
            self.out.extend(std::mem::take(&mut self.on_timer));
        }
    }

    /// A fetch lets look again only the parked reads whose page it brings in: the others would
    /// park again where they are. Every parked read used to look again at each new fetch, so with
    /// a read parked per stream and a fetch per event a run took time quadratic in the streams.
    #[test]
    fn a_fetch_wakes_only_the_parked_reads_whose_page_it_brings_in() {
        let page = PAGE_BYTES;
        let fetch = |id: u64, file: u32| Output::Fetch {
            id: FetchId(id),
            file: FileId(file),
            range: ByteRange::new(0, 2 * page),
            into: foresight_policy::Tier::Memory,
        };
        let reads: u32 = 1000;
        let policy = DeferEvery {
            out: VecDeque::new(),
            on_timer: vec![fetch(1, 7), fetch(2, 500)],
        };
        let mut layer = CacheLayer::new(1 << 16, Box::new(policy));
        let now = Instant::ZERO;
        // Two reads of each file's first two pages, one of its first page only.
        for f in 0..reads {
            for (token, bytes) in [(1, 2 * page), (2, 2 * page), (3, page)] {
                let token = u64::from(f) * 10 + token;
                layer.read(now, StreamId(f), FileId(f), 0, bytes, token);
            }
        }
        assert!(
            layer.down.is_empty(),
            "deferred reads read nothing on demand"
        );
        assert_eq!(layer.parked.len(), 3 * reads as usize);
        // The fetches of files 7 and 500 wake those files' three reads each, and no other.
        layer.on_timer(now);
        assert_eq!(layer.parked_looked_again, 6);
        assert_eq!(layer.parked.len(), 3 * reads as usize - 6);
        let ios = take_down(&mut layer);
        assert_eq!(ios.len(), 2);
        for (io, _, _) in ios {
            layer.part_done(now, io);
        }
        // They complete in the order they were read in.
        assert_eq!(
            layer.done.iter().map(|d| d.token).collect::<Vec<_>>(),
            [71, 72, 73, 5001, 5002, 5003]
        );
        // The reads left still go in the order they parked when all of them look again.
        assert!(layer.settle());
        let left: Vec<u64> = (0..reads)
            .filter(|&f| f != 7 && f != 500)
            .flat_map(|f| [1, 2, 3].map(|t| u64::from(f) * 10 + t))
            .collect();
        let ios = take_down(&mut layer);
        layer.done.clear();
        for (io, _, _) in ios {
            layer.part_done(now, io);
        }
        assert_eq!(layer.done.iter().map(|d| d.token).collect::<Vec<_>>(), left);
    }
}
