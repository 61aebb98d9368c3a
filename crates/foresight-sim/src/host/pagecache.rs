//! The page cache: 4 KiB pages of file data in memory, with a hard capacity (`host.memory`).
//!
//! A page is either in flight (a read for it has been issued) or cached. In-flight pages count
//! against the capacity from the moment their read is issued, so the cache never holds more than
//! its budget, even momentarily; only cached pages can be evicted, least recently used first. A page
//! brought in by a policy fetch ahead of demand is flagged as prefetched; the first read that touches
//! it counts it as used, and eviction of a still-unused prefetched page counts it as wasted, which is
//! how `prefetched_bytes` and `wasted_bytes` are measured.
//!
//! Storage is a slab of slots with an intrusive doubly linked LRU list and a hash map from page key
//! to slot, so lookups, touches and evictions are O(1) and allocate nothing once the slab is warm.

use rustc_hash::FxHashMap;

/// Identifies a page: a file and a page index, packed as `file << 36 | page`.
pub type PageKey = u64;

/// Pages per file this packing allows (2^36 pages of 4 KiB = 256 TiB).
pub const MAX_PAGES_PER_FILE: u64 = 1 << 36;

/// Packs a file number and page index into a key.
pub fn page_key(file: u32, page: u64) -> PageKey {
    assert!(page < MAX_PAGES_PER_FILE, "page index {page} too large");
    ((file as u64) << 36) | page
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

#[derive(Clone, Copy, Debug)]
struct Slot {
    key: PageKey,
    state: PageState,
    prefetched_unused: bool,
    prev: u32,
    next: u32,
}

/// Counters the cache keeps for reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Pages that entered as prefetched.
    pub prefetched_pages: u64,
    /// Prefetched pages later read by the application.
    pub used_prefetched_pages: u64,
    /// Prefetched pages evicted before any read.
    pub wasted_pages: u64,
    /// All evictions.
    pub evictions: u64,
}

/// The page cache. See the module documentation.
#[derive(Debug)]
pub struct PageCache {
    capacity_pages: u64,
    map: FxHashMap<PageKey, u32>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// Most recently used cached page.
    head: u32,
    /// Least recently used cached page.
    tail: u32,
    used_pages: u64,
    peak_pages: u64,
    stats: CacheStats,
}

impl PageCache {
    /// A cache of `capacity_pages` pages, at least one.
    pub fn new(capacity_pages: u64) -> PageCache {
        assert!(capacity_pages >= 1, "page cache needs at least one page");
        PageCache {
            capacity_pages,
            map: FxHashMap::default(),
            slots: Vec::new(),
            free: Vec::new(),
            head: NIL,
            tail: NIL,
            used_pages: 0,
            peak_pages: 0,
            stats: CacheStats::default(),
        }
    }

    /// The state of a page, if the cache holds it.
    pub fn state(&self, key: PageKey) -> Option<PageState> {
        self.map.get(&key).map(|&s| self.slots[s as usize].state)
    }

    /// Pages held (cached and in flight).
    pub fn used_pages(&self) -> u64 {
        self.used_pages
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
        self.map
            .values()
            .filter(|&&s| self.slots[s as usize].prefetched_unused)
            .count() as u64
    }

    fn unlink(&mut self, s: u32) {
        let Slot { prev, next, .. } = self.slots[s as usize];
        if prev != NIL {
            self.slots[prev as usize].next = next;
        } else {
            self.head = next;
        }
        if next != NIL {
            self.slots[next as usize].prev = prev;
        } else {
            self.tail = prev;
        }
        self.slots[s as usize].prev = NIL;
        self.slots[s as usize].next = NIL;
    }

    fn push_front(&mut self, s: u32) {
        self.slots[s as usize].prev = NIL;
        self.slots[s as usize].next = self.head;
        if self.head != NIL {
            self.slots[self.head as usize].prev = s;
        }
        self.head = s;
        if self.tail == NIL {
            self.tail = s;
        }
    }

    fn evict_lru(&mut self) -> bool {
        let s = self.tail;
        if s == NIL {
            return false;
        }
        self.unlink(s);
        let slot = self.slots[s as usize];
        debug_assert_eq!(slot.state, PageState::Cached);
        if slot.prefetched_unused {
            self.stats.wasted_pages += 1;
        }
        self.stats.evictions += 1;
        self.map.remove(&slot.key);
        self.free.push(s);
        self.used_pages -= 1;
        true
    }

    /// Claims room for a page whose read is being issued, evicting the least recently used cached
    /// page if the cache is full. Returns false, changing nothing, when every page held is in flight.
    /// The page must not be held already.
    pub fn try_insert_in_flight(&mut self, key: PageKey, io: u32, prefetched: bool) -> bool {
        debug_assert!(!self.map.contains_key(&key), "page {key:#x} inserted twice");
        if self.used_pages >= self.capacity_pages && !self.evict_lru() {
            return false;
        }
        let slot = Slot {
            key,
            state: PageState::InFlight { io },
            prefetched_unused: prefetched,
            prev: NIL,
            next: NIL,
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

    /// Marks an in-flight page as read in; it joins the LRU list as most recently used.
    pub fn complete(&mut self, key: PageKey) {
        let s = *self
            .map
            .get(&key)
            .expect("completing a page the cache does not hold");
        debug_assert!(matches!(
            self.slots[s as usize].state,
            PageState::InFlight { .. }
        ));
        self.slots[s as usize].state = PageState::Cached;
        self.push_front(s);
    }

    /// Drops an in-flight page whose read failed.
    pub fn abandon(&mut self, key: PageKey) {
        if let Some(s) = self.map.remove(&key) {
            debug_assert!(matches!(
                self.slots[s as usize].state,
                PageState::InFlight { .. }
            ));
            self.free.push(s);
            self.used_pages -= 1;
        }
    }

    /// Records an application read of a cached page: it becomes most recently used, and a
    /// prefetched page counts as used.
    pub fn touch(&mut self, key: PageKey) {
        let Some(&s) = self.map.get(&key) else { return };
        if self.slots[s as usize].prefetched_unused {
            self.slots[s as usize].prefetched_unused = false;
            self.stats.used_prefetched_pages += 1;
        }
        if self.slots[s as usize].state == PageState::Cached && self.head != s {
            self.unlink(s);
            self.push_front(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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
    }
}
