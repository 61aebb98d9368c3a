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

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::*;
    use crate::pool::Purpose;
    use foresight_core::ByteRange;
    use foresight_policy::PolicyConfig;

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
}
