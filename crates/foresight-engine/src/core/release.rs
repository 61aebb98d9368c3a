//! `Output::Release`: the policy frees pages it no longer wants kept, as the simulator's page
//! cache drops them. A chunk wholly inside the range goes; one the range covers in part is cut
//! into chunks of the pages it keeps. Cutting happens under the lock every reader and completion
//! needs, so a buffer that is a piece of a mapping is cut in place, its released pages going back
//! to the pool, rather than copied; only other buffers are replaced by copies.

use std::sync::Arc;

use foresight_core::{ByteRange, FileId};
use foresight_policy::PAGE_BYTES;

use crate::buffer::{AlignedBuf, ALIGN_BYTES};
use crate::pool::Purpose;

use super::{Chunk, Core, Lru, State};

impl Core {
    pub(super) fn release(&mut self, file: FileId, range: ByteRange) {
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
}
