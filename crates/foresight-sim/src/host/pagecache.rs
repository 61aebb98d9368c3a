//! The page cache: 4 KiB pages of file data in memory, with a hard capacity (`host.memory`).
//!
//! A page is either in flight (a read for it has been issued) or cached. In-flight pages count
//! against the capacity from the moment their read is issued, so the cache never holds more than
//! its budget, even momentarily; only cached pages can be evicted, least recently used first. A page
//! brought in by a policy fetch ahead of demand is flagged as prefetched; the first read that touches
//! it counts it as used, and eviction of a still-unused prefetched page counts it as wasted, which is
//! how `prefetched_bytes` and `wasted_bytes` are measured. A page a demand read brought in holds
//! bytes that read did not ask for when it asked for part of the page only (a 512-byte trace
//! record): the device read them all the same, ahead of any read asking for them, so these fill
//! bytes count as prefetched too, as used once a read takes any byte of the page outside the ones
//! asked for, and as wasted if none does before the page leaves the cache.
//!
//! Storage is a slab of slots with an intrusive doubly linked LRU list, and an index from page key
//! to slot, so lookups, touches and evictions are O(1) and allocate nothing once the slab is warm.
//! The index is a two-level table: a hash map from a run of [`CHUNK_PAGES`] consecutive pages of a
//! file to an array of their slots. Sequential reads, the common case, then find their next page in
//! the chunk they just used instead of a fresh hash bucket somewhere in a table of every page held.
//! The slab is reserved at its full size up front (up to [`SLOTS_RESERVED_MAX`]), so filling the
//! cache never copies it to a larger block.

use std::cell::Cell;

use rustc_hash::FxHashMap;

/// Identifies a page: a file and a page index, packed as `file << PAGE_BITS | page`.
pub type PageKey = u64;

/// Bits of a key that hold the page index. An array layer caches the whole volume as one file,
/// and a volume reaches 256 disks of 6 TB (1.5 PB, 2^38.4 pages), so 40 bits: 4 PiB.
const PAGE_BITS: u32 = 40;

/// Pages per file (and per volume) this packing allows (2^40 pages of 4 KiB = 4 PiB).
pub const MAX_PAGES_PER_FILE: u64 = 1 << PAGE_BITS;

/// Most files a key tells apart besides the volume: the rest of the key's 64 bits, 2^24 - 1, more
/// than the 10 million files `workload.files` allows.
pub const MAX_FILES: u64 = (1 << (64 - PAGE_BITS)) - 1;

/// Packs a file number and page index into a key. Files take the 24 bits above the page index;
/// `u32::MAX` (the volume itself, in an array layer) packs as the highest 24-bit value, which no
/// real file may use.
pub fn page_key(file: u32, page: u64) -> PageKey {
    assert!(page < MAX_PAGES_PER_FILE, "page index {page} too large");
    assert!(
        u64::from(file) < MAX_FILES || file == u32::MAX,
        "file number {file} too large"
    );
    ((u64::from(file) & MAX_FILES) << PAGE_BITS) | page
}

/// What the cache knows about a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageState {
    /// A read for the page is under way; `io` is the driver's id for that read.
    InFlight {
        /// The read that brings it in.
        io: u32,
    },
    /// The page's data is in memory.
    Cached,
}

const NIL: u32 = u32::MAX;

/// Most slots a new cache reserves before its first page: 2^20 (4 GiB of pages, at most 40 MiB
/// of slots). A cache fills its slab up to its capacity, and growing it by doubling copies every
/// slot at each step, into a block whose memory is then faulted in as well: about 5% of the
/// host's time in the `striping` reproduction. Reserving the capacity up front only claims address
/// space, as memory is taken page by page when slots are first written. Beyond this bound (a host
/// with far more memory than its runs read) the slab grows as needed instead.
pub const SLOTS_RESERVED_MAX: u64 = 1 << 20;

/// Pages per index chunk (1 MiB of a file).
pub const CHUNK_PAGES: usize = 256;
const CHUNK_SHIFT: u32 = CHUNK_PAGES.trailing_zeros();
// A key splits into chunk and index by shift and mask, which needs a power of two.
const _: () = assert!(CHUNK_PAGES.is_power_of_two());

/// The slots of one run of [`CHUNK_PAGES`] pages; `NIL` where the page is not held.
#[derive(Debug)]
struct Chunk {
    slots: [u32; CHUNK_PAGES],
    /// Pages of the run held: the chunk is dropped when none is left.
    held: u32,
}

/// No chunk: `PageIndex::last` before any lookup and after its chunk is dropped. A chunk key is a
/// page key shifted right, so it never reaches this.
const NO_CHUNK: (PageKey, u32) = (PageKey::MAX, NIL);

/// Page key to slot, one chunk per run of pages that has a page held. See the module documentation.
#[derive(Debug)]
struct PageIndex {
    /// Where each chunk in use lies in `chunks`.
    places: FxHashMap<PageKey, u32>,
    /// The chunks, in use or emptied; an emptied one is kept for reuse (its place is in `spare`),
    /// so a cache that keeps turning over allocates nothing.
    chunks: Vec<Chunk>,
    spare: Vec<u32>,
    /// The chunk found last and its place. A read walks its pages in order, and the pages of a
    /// fetch, its completion and the reads that wait for it are each looked up several times, so
    /// most lookups are of the chunk just used: this answers them without hashing.
    last: Cell<(PageKey, u32)>,
}

impl Default for PageIndex {
    fn default() -> PageIndex {
        PageIndex {
            places: FxHashMap::default(),
            chunks: Vec::new(),
            spare: Vec::new(),
            last: Cell::new(NO_CHUNK),
        }
    }
}

impl PageIndex {
    fn split(key: PageKey) -> (PageKey, usize) {
        (key >> CHUNK_SHIFT, (key as usize) & (CHUNK_PAGES - 1))
    }

    /// The place of chunk `c`, if it is in use.
    fn place(&self, c: PageKey) -> Option<u32> {
        let (last, at) = self.last.get();
        if last == c {
            return Some(at);
        }
        let at = *self.places.get(&c)?;
        self.last.set((c, at));
        Some(at)
    }

    fn get(&self, key: PageKey) -> Option<u32> {
        let (c, i) = Self::split(key);
        let s = self.chunks[self.place(c)? as usize].slots[i];
        (s != NIL).then_some(s)
    }

    fn insert(&mut self, key: PageKey, slot: u32) {
        debug_assert_ne!(slot, NIL);
        let (c, i) = Self::split(key);
        let at = match self.place(c) {
            Some(at) => at,
            None => {
                let at = match self.spare.pop() {
                    Some(at) => at,
                    None => {
                        self.chunks.push(Chunk {
                            slots: [NIL; CHUNK_PAGES],
                            held: 0,
                        });
                        self.chunks.len() as u32 - 1
                    }
                };
                self.places.insert(c, at);
                self.last.set((c, at));
                at
            }
        };
        let chunk = &mut self.chunks[at as usize];
        debug_assert_eq!(chunk.slots[i], NIL, "page {key:#x} inserted twice");
        chunk.slots[i] = slot;
        chunk.held += 1;
    }

    fn remove(&mut self, key: PageKey) -> Option<u32> {
        let (c, i) = Self::split(key);
        let at = self.place(c)?;
        let chunk = &mut self.chunks[at as usize];
        let s = chunk.slots[i];
        if s == NIL {
            return None;
        }
        chunk.slots[i] = NIL;
        chunk.held -= 1;
        if chunk.held == 0 {
            debug_assert!(chunk.slots.iter().all(|&s| s == NIL));
            self.places.remove(&c).expect("chunk just used");
            self.spare.push(at);
            self.last.set(NO_CHUNK);
        }
        Some(s)
    }
}

/// The bit of `Slot::fill` that says no read has taken a byte of the fill yet (a page's fill is
/// less than a page, far below it), so that a slot keeps within its 40 bytes.
const FILL_UNREAD: u16 = 1 << 15;
const _: () = assert!(foresight_policy::PAGE_BYTES < FILL_UNREAD as u64);

#[derive(Clone, Copy, Debug)]
struct Slot {
    key: PageKey,
    state: PageState,
    prefetched_unused: bool,
    /// Entered as a prefetch (read or not since), so that a failed read can take it back out of
    /// the prefetched pages.
    prefetch: bool,
    /// Of a page a demand read brought in, the bytes it holds that the read did not ask for (see
    /// the module documentation), with [`FILL_UNREAD`] set while no read has taken any of them.
    fill: u16,
    /// The bytes of the page that read asked for, `asked_from..asked_to`, within the page.
    asked_from: u16,
    asked_to: u16,
    prev: u32,
    next: u32,
    stamp: u64,
}

// The bound on reserved memory stated at `SLOTS_RESERVED_MAX`.
const _: () = assert!(std::mem::size_of::<Slot>() <= 40);

/// Counters the cache keeps for reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Pages that entered as prefetched.
    pub prefetched_pages: u64,
    /// Prefetched pages later read by the application.
    pub used_prefetched_pages: u64,
    /// Prefetched pages evicted before any read, or released unread.
    pub wasted_pages: u64,
    /// Prefetched pages evicted (not released) before any read: memory was over-committed.
    pub evicted_unread_pages: u64,
    /// Prefetch pages refused because only unread prefetched pages could have made room (a
    /// cache that keeps prefetched pages until they are read).
    pub refused_prefetch_pages: u64,
    /// All evictions.
    pub evictions: u64,
    /// Bytes the demand reads asked for of the pages they brought in (a read waiting for a page
    /// another read brought asks for nothing here): with `fill_bytes` and the prefetched pages,
    /// every byte the layer below read for this cache.
    pub demand_bytes: u64,
    /// Bytes of the pages demand reads brought in that those reads did not ask for (the rest of a
    /// page a read asked part of); they count as prefetched.
    pub fill_bytes: u64,
    /// Fill bytes of pages a later read took a byte of the fill from.
    pub used_fill_bytes: u64,
    /// Fill bytes of pages evicted or released before any read took a byte of the fill.
    pub wasted_fill_bytes: u64,
}

/// The page cache. See the module documentation.
#[derive(Debug)]
pub struct PageCache {
    capacity_pages: u64,
    map: PageIndex,
    /// Pages held that entered as prefetched and have not been read.
    unused_prefetched: u64,
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// Most recently used cached page of each list: `READ` (demand pages and prefetched pages
    /// already read) and `UNREAD` (prefetched pages not read yet).
    head: [u32; 2],
    /// Least recently used cached page of each list.
    tail: [u32; 2],
    /// Recency stamp, so the two lists together still give one LRU order.
    clock: u64,
    /// Evict read pages before unread prefetched ones (buffers held until consumed).
    protect_unread: bool,
    /// A prefetch never evicts an unread prefetched page; only a demand read may.
    keep_unread_from_prefetch: bool,
    used_pages: u64,
    /// Pages held whose read has not completed: they cannot be evicted.
    in_flight_pages: u64,
    /// Of those, the ones that entered as prefetched and have not been read (kept as a count so
    /// that the end of a run does not walk every page held).
    in_flight_unread_pages: u64,
    /// Fill bytes of the pages held that no read has taken (see `Slot::fill`), and of those the
    /// ones whose page is still in flight.
    unused_fill_bytes: u64,
    in_flight_fill_bytes: u64,
    peak_pages: u64,
    stats: CacheStats,
}

impl Slot {
    /// The fill bytes no read has taken yet.
    fn unread_fill(&self) -> u64 {
        if self.fill & FILL_UNREAD != 0 {
            u64::from(self.fill & !FILL_UNREAD)
        } else {
            0
        }
    }
}

impl PageCache {
    /// A cache of `capacity_pages` pages, at least one.
    pub fn new(capacity_pages: u64) -> PageCache {
        assert!(capacity_pages >= 1, "page cache needs at least one page");
        PageCache {
            capacity_pages,
            map: PageIndex::default(),
            unused_prefetched: 0,
            slots: Vec::with_capacity(capacity_pages.min(SLOTS_RESERVED_MAX) as usize),
            free: Vec::new(),
            head: [NIL; 2],
            tail: [NIL; 2],
            clock: 0,
            protect_unread: false,
            keep_unread_from_prefetch: false,
            used_pages: 0,
            in_flight_pages: 0,
            in_flight_unread_pages: 0,
            unused_fill_bytes: 0,
            in_flight_fill_bytes: 0,
            peak_pages: 0,
            stats: CacheStats::default(),
        }
    }

    /// A cache that evicts pages already read before prefetched pages not yet read: the
    /// semantics of a stream scheduler's buffers, which are kept until their client reads them
    /// (paper 001_9c47c4c84914efc3.txt, section 4.3). Plain LRU otherwise.
    pub fn protecting_unread(capacity_pages: u64) -> PageCache {
        let mut c = PageCache::new(capacity_pages);
        c.protect_unread = true;
        c
    }

    /// A cache whose prefetches never evict prefetched pages that are still unread: a prefetch
    /// that could only make room that way is cut short instead, and only demand reads (which must
    /// make progress) evict by plain LRU. This is the kernel change that paper
    /// 003_eb9cef22f2823582.txt (section I) makes for application-directed prefetching, so that
    /// data fetched ahead is kept until it is used and competing prefetchers do not evict each
    /// other's windows.
    pub fn keeping_prefetched_until_read(capacity_pages: u64) -> PageCache {
        let mut c = PageCache::new(capacity_pages);
        c.keep_unread_from_prefetch = true;
        c
    }

    /// The state of a page, if the cache holds it.
    pub fn state(&self, key: PageKey) -> Option<PageState> {
        self.map.get(key).map(|s| self.slots[s as usize].state)
    }

    /// Pages held (cached and in flight).
    pub fn used_pages(&self) -> u64 {
        self.used_pages
    }

    /// Pages held whose read is still under way (none of them can be evicted).
    pub fn in_flight_pages(&self) -> u64 {
        self.in_flight_pages
    }

    /// The most pages ever held at once.
    pub fn peak_pages(&self) -> u64 {
        self.peak_pages
    }

    /// The capacity in pages.
    pub fn capacity_pages(&self) -> u64 {
        self.capacity_pages
    }

    /// Counters so far.
    pub fn stats(&self) -> CacheStats {
        self.stats
    }

    /// Prefetched pages still held and never read; at the end of a run these are wasted too.
    pub fn unused_prefetched_pages(&self) -> u64 {
        self.unused_prefetched
    }

    /// Prefetched pages whose read is still under way, so not yet read from the device. A run's
    /// report ends when the application's last read completes and counts only the device reads
    /// done by then; it leaves these out of the prefetched and wasted pages the same way.
    pub fn in_flight_prefetched_pages(&self) -> u64 {
        self.in_flight_unread_pages
    }

    /// Fill bytes (see the module documentation) of the pages held that no read has taken yet; at
    /// the end of a run these are wasted too.
    pub fn unused_fill_bytes(&self) -> u64 {
        self.unused_fill_bytes
    }

    /// Of [`PageCache::unused_fill_bytes`], those of pages whose read is still under way: like
    /// [`PageCache::in_flight_prefetched_pages`], not read from the device yet.
    pub fn in_flight_fill_bytes(&self) -> u64 {
        self.in_flight_fill_bytes
    }

    /// The fill bytes of page `key` no read has taken yet (0 if it holds none, or is not held).
    pub fn unread_fill(&self, key: PageKey) -> u64 {
        self.map
            .get(key)
            .map_or(0, |s| self.slots[s as usize].unread_fill())
    }

    /// Whether the cache holds `key` as a prefetched page nobody has read yet.
    pub fn is_unread_prefetch(&self, key: PageKey) -> bool {
        self.map
            .get(key)
            .is_some_and(|s| self.slots[s as usize].prefetched_unused)
    }

    /// Whether the cache holds `key` as a page that entered as prefetched, read since or not.
    #[cfg(test)]
    pub(crate) fn entered_as_prefetch(&self, key: PageKey) -> bool {
        self.map
            .get(key)
            .is_some_and(|s| self.slots[s as usize].prefetch)
    }

    fn list_of(&self, s: u32) -> usize {
        self.slots[s as usize].prefetched_unused as usize
    }

    fn unlink(&mut self, s: u32) {
        let l = self.list_of(s);
        let Slot { prev, next, .. } = self.slots[s as usize];
        if prev != NIL {
            self.slots[prev as usize].next = next;
        } else {
            self.head[l] = next;
        }
        if next != NIL {
            self.slots[next as usize].prev = prev;
        } else {
            self.tail[l] = prev;
        }
        self.slots[s as usize].prev = NIL;
        self.slots[s as usize].next = NIL;
    }

    fn push_front(&mut self, s: u32) {
        let l = self.list_of(s);
        self.clock += 1;
        self.slots[s as usize].stamp = self.clock;
        self.slots[s as usize].prev = NIL;
        self.slots[s as usize].next = self.head[l];
        if self.head[l] != NIL {
            self.slots[self.head[l] as usize].prev = s;
        }
        self.head[l] = s;
        if self.tail[l] == NIL {
            self.tail[l] = s;
        }
    }

    fn evict_lru(&mut self, for_prefetch: bool) -> bool {
        let (read, unread) = (self.tail[0], self.tail[1]);
        let unread = if for_prefetch && self.keep_unread_from_prefetch {
            NIL
        } else {
            unread
        };
        let s = match (read, unread) {
            (NIL, NIL) => return false,
            (r, NIL) => r,
            (NIL, u) => u,
            (r, _) if self.protect_unread => r,
            (r, u) => {
                if self.slots[r as usize].stamp <= self.slots[u as usize].stamp {
                    r
                } else {
                    u
                }
            }
        };
        self.unlink(s);
        let slot = self.slots[s as usize];
        debug_assert_eq!(slot.state, PageState::Cached);
        if slot.prefetched_unused {
            self.stats.wasted_pages += 1;
            self.stats.evicted_unread_pages += 1;
            self.unused_prefetched -= 1;
        }
        self.waste_fill(s);
        self.stats.evictions += 1;
        self.map.remove(slot.key);
        self.free.push(s);
        self.used_pages -= 1;
        true
    }

    /// Claims room for a page whose read is being issued, evicting the least recently used cached
    /// page if the cache is full. Returns false, changing nothing, when every page held is in flight.
    /// The page must not be held already.
    pub fn try_insert_in_flight(&mut self, key: PageKey, io: u32, prefetched: bool) -> bool {
        debug_assert!(self.map.get(key).is_none(), "page {key:#x} inserted twice");
        if self.used_pages >= self.capacity_pages && !self.evict_lru(prefetched) {
            if prefetched && self.keep_unread_from_prefetch && self.tail[1] != NIL {
                self.stats.refused_prefetch_pages += 1;
            }
            return false;
        }
        let slot = Slot {
            key,
            state: PageState::InFlight { io },
            prefetched_unused: prefetched,
            prefetch: prefetched,
            fill: 0,
            asked_from: 0,
            asked_to: 0,
            prev: NIL,
            next: NIL,
            stamp: 0,
        };
        let s = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = slot;
                s
            }
            None => {
                self.slots.push(slot);
                self.slots.len() as u32 - 1
            }
        };
        self.map.insert(key, s);
        self.used_pages += 1;
        self.in_flight_pages += 1;
        self.in_flight_unread_pages += prefetched as u64;
        self.unused_prefetched += prefetched as u64;
        self.peak_pages = self.peak_pages.max(self.used_pages);
        assert!(
            self.used_pages <= self.capacity_pages,
            "page cache over capacity"
        );
        if prefetched {
            self.stats.prefetched_pages += 1;
        }
        true
    }

    /// [`PageCache::try_insert_in_flight`] for a page a demand read brings in: of the page's
    /// `page_bytes` bytes on the device (fewer than a page at a file's end), the read asked for
    /// `asked_from..asked_to`; the others are its fill (see the module documentation).
    pub fn try_insert_demand_in_flight(
        &mut self,
        key: PageKey,
        io: u32,
        asked_from: u16,
        asked_to: u16,
        page_bytes: u16,
    ) -> bool {
        debug_assert!(asked_from < asked_to && asked_to <= page_bytes);
        if !self.try_insert_in_flight(key, io, false) {
            return false;
        }
        let s = self.map.get(key).expect("just inserted");
        let fill = page_bytes - (asked_to - asked_from);
        let slot = &mut self.slots[s as usize];
        slot.fill = if fill > 0 { fill | FILL_UNREAD } else { 0 };
        slot.asked_from = asked_from;
        slot.asked_to = asked_to;
        self.stats.demand_bytes += u64::from(asked_to - asked_from);
        self.stats.fill_bytes += u64::from(fill);
        self.unused_fill_bytes += u64::from(fill);
        self.in_flight_fill_bytes += u64::from(fill);
        true
    }

    /// Counts the fill of slot `s`, leaving the cache unread, as wasted.
    fn waste_fill(&mut self, s: u32) {
        let slot = &mut self.slots[s as usize];
        let fill = slot.unread_fill();
        slot.fill &= !FILL_UNREAD;
        self.stats.wasted_fill_bytes += fill;
        self.unused_fill_bytes -= fill;
    }

    /// Marks an in-flight page as read in; it joins the LRU list as most recently used.
    pub fn complete(&mut self, key: PageKey) {
        let s = self
            .map
            .get(key)
            .expect("completing a page the cache does not hold");
        debug_assert!(matches!(
            self.slots[s as usize].state,
            PageState::InFlight { .. }
        ));
        self.slots[s as usize].state = PageState::Cached;
        self.in_flight_pages -= 1;
        self.in_flight_unread_pages -= self.slots[s as usize].prefetched_unused as u64;
        self.in_flight_fill_bytes -= self.slots[s as usize].unread_fill();
        self.push_front(s);
    }

    /// Drops an in-flight page whose read failed. A prefetch counts as prefetched once the device
    /// has read it (README, `sim --help`); this one never was, so it leaves the prefetched pages
    /// (and the used ones, had a read already waited on it) rather than count as prefetched and
    /// never wasted. Before, it stayed among the prefetched pages, neither used nor wasted.
    pub fn abandon(&mut self, key: PageKey) {
        if let Some(s) = self.map.remove(key) {
            let slot = self.slots[s as usize];
            debug_assert!(matches!(slot.state, PageState::InFlight { .. }));
            if slot.prefetched_unused {
                self.unused_prefetched -= 1;
                self.in_flight_unread_pages -= 1;
            }
            if slot.prefetch {
                self.stats.prefetched_pages -= 1;
                if !slot.prefetched_unused {
                    self.stats.used_prefetched_pages -= 1;
                }
            } else if slot.asked_to > 0 {
                // A demand page the device never read: neither its asked bytes nor its fill
                // were, as for a failed prefetch.
                let fill = u64::from(slot.fill & !FILL_UNREAD);
                let unread = slot.unread_fill();
                self.stats.demand_bytes -= u64::from(slot.asked_to - slot.asked_from);
                self.stats.fill_bytes -= fill;
                self.stats.used_fill_bytes -= fill - unread;
                self.unused_fill_bytes -= unread;
                self.in_flight_fill_bytes -= unread;
            }
            self.free.push(s);
            self.used_pages -= 1;
            self.in_flight_pages -= 1;
        }
    }

    /// Drops a cached page the policy no longer needs (in-flight pages are left alone). A
    /// prefetched page dropped unread counts as wasted.
    pub fn release(&mut self, key: PageKey) {
        let Some(s) = self.map.get(key) else { return };
        if self.slots[s as usize].state != PageState::Cached {
            return;
        }
        self.unlink(s);
        if self.slots[s as usize].prefetched_unused {
            self.stats.wasted_pages += 1;
            self.unused_prefetched -= 1;
        }
        self.waste_fill(s);
        self.map.remove(key);
        self.free.push(s);
        self.used_pages -= 1;
    }

    /// Records an application read of a cached page: it becomes most recently used, and a
    /// prefetched page counts as used, as does the fill of a page a demand read brought in.
    pub fn touch(&mut self, key: PageKey) {
        self.touch_bytes(key, 0, u16::MAX);
    }

    /// [`PageCache::touch`] by a read of bytes `from..to` of the page only: the fill of a page
    /// a demand read brought in counts as used only if the read takes a byte outside the ones
    /// that read asked for, so the read that brought the page, or one asking for the same bytes
    /// again, leaves it unread.
    pub fn touch_bytes(&mut self, key: PageKey, from: u16, to: u16) {
        let Some(s) = self.map.get(key) else { return };
        let slot = &mut self.slots[s as usize];
        if slot.fill & FILL_UNREAD != 0
            && from < to
            && (from < slot.asked_from || to > slot.asked_to)
        {
            let fill = slot.unread_fill();
            slot.fill &= !FILL_UNREAD;
            self.stats.used_fill_bytes += fill;
            self.unused_fill_bytes -= fill;
            if slot.state != PageState::Cached {
                self.in_flight_fill_bytes -= fill;
            }
        }
        let cached = self.slots[s as usize].state == PageState::Cached;
        if cached {
            self.unlink(s);
        }
        if self.slots[s as usize].prefetched_unused {
            self.slots[s as usize].prefetched_unused = false;
            self.stats.used_prefetched_pages += 1;
            self.unused_prefetched -= 1;
            self.in_flight_unread_pages -= !cached as u64;
        }
        if cached {
            self.push_front(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    impl PageCache {
        /// Pages held, prefetched pages not yet read, and those of them still in flight, found by
        /// walking the index: what the counters must agree with.
        fn held_by_walk(&self) -> (u64, u64, u64) {
            let mut held = 0;
            let mut unused = 0;
            let mut unused_in_flight = 0;
            for &at in self.map.places.values() {
                let chunk = &self.map.chunks[at as usize];
                let live: Vec<u32> = chunk.slots.iter().copied().filter(|&s| s != NIL).collect();
                assert_eq!(live.len() as u32, chunk.held, "a chunk's count is off");
                held += live.len() as u64;
                unused += live
                    .iter()
                    .filter(|&&s| self.slots[s as usize].prefetched_unused)
                    .count() as u64;
                unused_in_flight += live
                    .iter()
                    .map(|&s| self.slots[s as usize])
                    .filter(|s| {
                        s.prefetched_unused && matches!(s.state, PageState::InFlight { .. })
                    })
                    .count() as u64;
            }
            (held, unused, unused_in_flight)
        }

        /// Fill bytes no read has taken, and those of pages in flight, found by walking the
        /// index.
        fn fill_by_walk(&self) -> (u64, u64) {
            let (mut unread, mut in_flight) = (0, 0);
            for &at in self.map.places.values() {
                for &s in self.map.chunks[at as usize]
                    .slots
                    .iter()
                    .filter(|&&s| s != NIL)
                {
                    let slot = self.slots[s as usize];
                    unread += slot.unread_fill();
                    if matches!(slot.state, PageState::InFlight { .. }) {
                        in_flight += slot.unread_fill();
                    }
                }
            }
            (unread, in_flight)
        }
    }

    #[test]
    fn lru_eviction_and_waste() {
        let mut c = PageCache::new(2);
        assert!(c.try_insert_in_flight(page_key(0, 0), 1, true));
        assert!(c.try_insert_in_flight(page_key(0, 1), 1, false));
        // Full of in-flight pages: nothing can be evicted.
        assert!(!c.try_insert_in_flight(page_key(0, 2), 2, false));
        c.complete(page_key(0, 0));
        c.complete(page_key(0, 1));
        c.touch(page_key(0, 1));
        // Page 0 is least recently used and was never read: evicting it wastes it.
        assert!(c.try_insert_in_flight(page_key(0, 2), 2, false));
        assert_eq!(c.state(page_key(0, 0)), None);
        assert_eq!(c.stats().wasted_pages, 1);
        assert_eq!(c.state(page_key(0, 2)), Some(PageState::InFlight { io: 2 }));
        assert_eq!(c.used_pages(), 2);
    }

    /// A prefetch whose read failed was never read from the device, so it counts as neither
    /// prefetched nor wasted, nor as used if a read already waited on it; a demand read's
    /// failure changes none of these. Before, each failed prefetch stayed among the prefetched
    /// pages, so prefetched exceeded used plus wasted.
    #[test]
    fn a_failed_prefetch_counts_as_neither_prefetched_nor_wasted() {
        let mut c = PageCache::new(8);
        for page in 0..4 {
            assert!(c.try_insert_in_flight(page_key(0, page), 1, page != 3));
        }
        c.touch(page_key(0, 1));
        for page in 0..4 {
            c.abandon(page_key(0, page));
        }
        let s = c.stats();
        assert_eq!(
            (s.prefetched_pages, s.used_prefetched_pages, s.wasted_pages),
            (0, 0, 0)
        );
        assert_eq!((c.used_pages(), c.unused_prefetched_pages()), (0, 0));
    }

    #[test]
    fn protecting_unread_evicts_read_pages_first() {
        let mut c = PageCache::protecting_unread(2);
        assert!(c.try_insert_in_flight(page_key(0, 0), 1, true));
        c.complete(page_key(0, 0));
        assert!(c.try_insert_in_flight(page_key(0, 1), 2, false));
        c.complete(page_key(0, 1));
        // Page 0 is older but unread: page 1 goes.
        assert!(c.try_insert_in_flight(page_key(0, 2), 3, false));
        assert_eq!(c.state(page_key(0, 0)), Some(PageState::Cached));
        assert_eq!(c.state(page_key(0, 1)), None);
        assert_eq!(c.stats().wasted_pages, 0);
    }

    proptest! {
        #[test]
        fn never_holds_more_than_capacity(cap in 1u64..32, ops in prop::collection::vec((0u8..4, 0u64..64), 0..400)) {
            let mut c = PageCache::new(cap);
            let mut in_flight: Vec<PageKey> = vec![];
            for (op, page) in ops {
                let k = page_key(1, page);
                match op {
                    0 | 1 => if c.state(k).is_none() && c.try_insert_in_flight(k, 0, op == 0) { in_flight.push(k) },
                    2 => if let Some(k) = in_flight.pop() { c.complete(k) },
                    _ => c.touch(k),
                }
                prop_assert!(c.used_pages() <= cap);
                prop_assert!(c.peak_pages() <= cap);
            }
        }

        /// Across every operation, on pages of several files spread over many index chunks, the
        /// index finds exactly the pages held, and the running counts of pages held, of
        /// prefetched pages not yet read and of those still in flight match a walk of the index.
        #[test]
        fn index_and_counts_match_a_walk(
            cap in 1u64..64,
            keep in any::<bool>(),
            ops in prop::collection::vec((0u8..9, 0u32..3, 0u64..2_000), 0..600),
        ) {
            let mut c = if keep {
                PageCache::keeping_prefetched_until_read(cap)
            } else {
                PageCache::protecting_unread(cap)
            };
            let mut in_flight: Vec<PageKey> = vec![];
            for (op, file, page) in ops {
                let k = page_key(file, page);
                match op {
                    0 | 1 => if c.state(k).is_none() && c.try_insert_in_flight(k, 0, op == 0) { in_flight.push(k) },
                    2 => if let Some(k) = in_flight.pop() { c.complete(k) },
                    3 => if let Some(k) = in_flight.pop() { c.abandon(k) },
                    4 => c.release(k),
                    // A demand page asked for in part, and a read of part of a page, both from
                    // the page number: pages of 4,096 bytes or, at a file's end, fewer.
                    7 => {
                        let bytes = if page % 5 == 0 { 512 + (page % 7) as u16 * 100 } else { 4096 };
                        let from = (page % 3) as u16 * 100;
                        let to = bytes - (page % 4) as u16 * 50;
                        if c.state(k).is_none() && c.try_insert_demand_in_flight(k, 0, from, to, bytes) {
                            in_flight.push(k);
                        }
                    }
                    8 => {
                        let from = (page % 11) as u16 * 300;
                        c.touch_bytes(k, from, from + 1 + (page % 13) as u16 * 40);
                    }
                    _ => c.touch(k),
                }
                for &k in &in_flight {
                    let in_flight_now = matches!(c.state(k), Some(PageState::InFlight { .. }));
                    prop_assert!(in_flight_now, "page {:#x} should be in flight", k);
                }
                let (held, unused, unused_in_flight) = c.held_by_walk();
                let st = c.stats();
                prop_assert_eq!(
                    st.prefetched_pages,
                    st.used_prefetched_pages + st.wasted_pages + c.unused_prefetched_pages(),
                    "every prefetched page is used, wasted or still held unread"
                );
                prop_assert_eq!(
                    st.fill_bytes,
                    st.used_fill_bytes + st.wasted_fill_bytes + c.unused_fill_bytes(),
                    "every fill byte is used, wasted or still held unread"
                );
                prop_assert_eq!(c.fill_by_walk(), (c.unused_fill_bytes(), c.in_flight_fill_bytes()));
                prop_assert_eq!(held, c.used_pages());
                prop_assert_eq!(unused, c.unused_prefetched_pages());
                prop_assert_eq!(unused_in_flight, c.in_flight_prefetched_pages());
                prop_assert_eq!(in_flight.len() as u64, c.in_flight_pages());
            }
        }
    }
}
