//! Chunks and their memory. Every buffer comes from the one budget of the
//! [`BufferPool`](crate::pool::BufferPool), so allocation, eviction and the wait for memory decide
//! together whether the engine can make progress without starving anyone: a demand read may evict
//! data already used, then read-ahead nobody waits for, then its own data further on, but never a
//! chunk claimed by another reader; a prefetch may take only used data. Reads wait in two queues,
//! the application's first, and go to the backend while it has room; a freed chunk wakes the
//! readers waiting for memory.

use std::sync::Arc;

use foresight_core::{FetchId, FileId, StreamId};
use foresight_policy::PAGE_BYTES;

use crate::backend::IoRequest;
use crate::pool::Purpose;

use super::{Chunk, ChunkSpec, Core, Lru, State};

impl Core {
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

    /// Allocates a buffer (evicting if allowed) and queues the read of pages `[first, end)`.
    pub(super) fn new_chunk(
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
    pub(super) fn evict_one(&mut self, purpose: Purpose, stream: Option<StreamId>) -> bool {
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

    pub(super) fn lru_insert(&mut self, id: u32, class: Lru) {
        self.lru_remove(id);
        self.seq += 1;
        let seq = self.seq;
        self.lru[class as usize].insert(seq, id);
        let c = self.chunk_mut(id);
        c.lru = Some((class, seq));
        let bytes = c.io_bytes;
        self.lru_bytes[class as usize] += bytes;
    }

    pub(super) fn lru_remove(&mut self, id: u32) {
        let c = self.chunk_mut(id);
        if let Some((class, seq)) = c.lru.take() {
            let bytes = c.io_bytes;
            self.lru[class as usize].remove(&seq);
            self.lru_bytes[class as usize] -= bytes;
        }
    }

    /// Frees a filled, unpinned chunk and its buffer.
    pub(super) fn free_chunk(&mut self, id: u32) {
        assert_eq!(self.chunk(id).pins, 0, "freed a pinned chunk");
        let mut c = self.take_chunk(id);
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
    pub(super) fn drop_chunk_record(&mut self, id: u32) {
        let c = self.take_chunk(id);
        for (_, w) in &c.waiters {
            w.notify_one();
        }
        if let Some(fid) = c.fetch {
            self.fetch_part_done(fid, false);
        }
    }

    /// Takes chunk `id` out of the LRU lists, its slot and its file's index (unless a newer chunk
    /// has the index entry), and forgets the file if that was its last chunk and nobody reads it.
    /// What the chunk held (buffer, waiters, fetch) is the caller's to settle.
    fn take_chunk(&mut self, id: u32) -> Chunk {
        self.lru_remove(id);
        let c = self.chunks[id as usize].take().expect("a live chunk");
        self.free_slots.push(id);
        let f = &mut self.files[c.file.0 as usize];
        if f.chunks.get(&c.first_page) == Some(&id) {
            f.chunks.remove(&c.first_page);
        }
        f.live_chunks -= 1;
        self.forget_if_idle(c.file);
        c
    }

    pub(super) fn fetch_part_done(&mut self, id: FetchId, ok: bool) {
        let Some(st) = self.fetches.get_mut(&id) else {
            return;
        };
        st.ok &= ok;
        st.parts_left -= 1;
        if st.parts_left == 0 {
            let (ok, file) = (st.ok, st.file);
            self.fetches.remove(&id);
            self.done_now.push_back((id, ok));
            // The policy hears of it (`done_now`) before the engine can be idle, and the
            // `dispatch` that follows wakes every deferred reader if it then is.
            self.wake_defer_waiters_of(file);
        }
    }

    /// Wakes the oldest readers waiting for memory, as many as the memory that is free or
    /// evictable now can serve (always at least one: it retries, and if it fails it queues again
    /// at the back). Waking them all would send a thousand starving readers at the lock for every
    /// freed chunk.
    pub(super) fn wake_memory_waiters(&mut self) {
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
    pub(super) fn wake_memory_waiter(&mut self, stream: StreamId) {
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
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::*;
    use crate::pool::{ArenaShelf, Purpose};
    use foresight_core::ByteRange;

    /// A core's drop hands the pool the buffers it still owns, a filled chunk nobody read and a
    /// read queued but never sent, so that the prefaulted mapping goes back on its shelf; a read
    /// the backend still holds keeps it off (the backend may still write into its buffer).
    #[test]
    fn a_dropped_core_puts_its_mapping_back_unless_a_read_is_still_out() {
        let (memory, max_io) = (4u64 << 20, 1u64 << 20);
        let shelf = ArenaShelf::new();
        let (mut core, backend, file, _) = core_over_holding_on_shelf(memory, max_io, &shelf);
        assert_eq!(
            core.fetch(FetchId(0), file, ByteRange::new(0, 256 << 10), None, None),
            (1, false)
        );
        fill_and_complete(&mut core, &backend);
        assert_eq!(
            core.fetch(
                FetchId(1),
                file,
                ByteRange::new(256 << 10, 512 << 10),
                None,
                None
            ),
            (1, false)
        );
        assert!(
            core.pool.lent_bytes() >= 512 << 10,
            "a chunk and a queued read"
        );
        drop(core);
        assert_eq!(shelf.kept_bytes(), memory, "both buffers given back");

        let (mut core, backend, file, _) = core_over_holding_on_shelf(memory, max_io, &shelf);
        assert_eq!(shelf.kept_bytes(), 0, "taken by the second core");
        assert_eq!(
            core.fetch(FetchId(0), file, ByteRange::new(0, 256 << 10), None, None),
            (1, false)
        );
        core.dispatch();
        assert_eq!(backend.held.lock().unwrap().len(), 1);
        drop(core);
        assert_eq!(shelf.kept_bytes(), 0, "a read in flight holds a piece");
        // The read ends after the core is gone; its buffer goes with it.
        drop(completions(&backend));
        assert_eq!(shelf.kept_bytes(), 0);
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
}
