//! The application's read path. A `read` runs the simulator's demand steps, so the policy sees
//! the same inputs in both worlds: find the first uncovered page, tell the policy, execute its
//! fetches, then read on demand what is still missing. The reader copies outside the lock, so a
//! chunk it copies from is pinned and *claimed* for it: a claim is what keeps another starving
//! reader from evicting the data this one is about to copy. A read ends by freeing what it read
//! to the end (the engine is a prefetcher, not a cache) and letting go of claims it no longer
//! needs, so that every claimed chunk is eventually copied or released.

use std::io;
use std::sync::{Arc, Condvar};

use foresight_core::{ByteOffset, ByteRange, FileId, Instant, StreamId};
use foresight_policy::{Input, PAGE_BYTES};

use crate::buffer::AlignedBuf;
use crate::pool::Purpose;

use super::{ChunkSpec, Core, Found, Lru, State, THINK_SAMPLES};

impl Core {
    pub(super) fn covering(&self, file: FileId, page: u64) -> Option<u32> {
        let f = &self.files[file.0 as usize];
        let (_, &id) = f.chunks.range(..=page).next_back()?;
        (self.chunk(id).end_page > page).then_some(id)
    }

    /// The first page in `[first, last]` no chunk covers.
    pub(super) fn first_uncovered(&self, file: FileId, first: u64, last: u64) -> Option<u64> {
        let mut p = first;
        while p <= last {
            match self.covering(file, p) {
                Some(id) => p = self.chunk(id).end_page,
                None => return Some(p),
            }
        }
        None
    }

    /// The next run of pages in `[from, last]` that no chunk covers, as `(start, end)` pages: from
    /// the first uncovered page up to the next chunk, `last`, or one backend read
    /// (`max_io_bytes`), whichever comes first.
    pub(super) fn next_uncovered_run(
        &self,
        file: FileId,
        from: u64,
        last: u64,
    ) -> Option<(u64, u64)> {
        let start = self.first_uncovered(file, from, last)?;
        let next = self.files[file.0 as usize]
            .chunks
            .range(start..)
            .next()
            .map(|(&k, _)| k)
            .unwrap_or(u64::MAX);
        let max_pages = self.cfg.max_io_bytes / PAGE_BYTES;
        Some((start, (last + 1).min(next).min(start + max_pages)))
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

    /// Issues demand reads for the uncovered pages of `[pos, end)`, stopping when memory runs
    /// out. Only the read of the page holding `pos` may evict to make room: evicting for bytes
    /// further on could take the very chunk the reader needs next. Returns whether the page
    /// holding `pos` is now covered.
    pub(crate) fn demand(&mut self, stream: StreamId, file: FileId, pos: u64, end: u64) -> bool {
        let last = (end - 1) / PAGE_BYTES;
        let cursor_page = pos / PAGE_BYTES;
        let mut p = cursor_page;
        while let Some((start, run_end)) = self.next_uncovered_run(file, p, last) {
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
    pub(super) fn release_claims(&mut self, stream: StreamId) {
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
}
