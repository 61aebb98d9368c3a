//! The buffer pool: every byte of buffer memory the engine holds, under one hard budget.
//!
//! All buffers come from here, and the pool reserves their bytes in a
//! [`foresight_policy::budget::Budget`] (the same accounting the simulator's page cache uses)
//! before allocating them, so prefetched, in-flight and demand buffers together never exceed the
//! limit, not even for an instant: a reservation that does not fit is refused, not granted and
//! repaired later. Freed buffers are kept and reused (ordinary ones on per-size free lists, the
//! smallest that holds the request up to twice its size), which spares the allocator and the
//! page-fault cost of fresh memory at gigabytes per second. Kept buffers still count against the
//! budget. An allocation drops them (largest first) as soon as its reservation would otherwise be
//! refused, so keeping them never refuses a buffer the budget has room for: only the bytes lent
//! out limit a prefetch, which is what the policy is told is available (see `fresh`).
//!
//! Prefetch allocations may use the budget only up to `limit - demand_reserve`; the reserve is for
//! the application's own reads, so prefetching alone cannot fill memory and force demand reads to
//! evict data that just arrived.
//!
//! Where the kernel offers transparent huge pages, a fresh buffer of [`HUGE_MIN_BYTES`] or more is
//! cut from the front of a new mapping of whole huge pages, so it is physically contiguous and
//! reaches the device as one request instead of being cut at the device's segment limit (see
//! [`crate::buffer`]). The rest of the mapping is kept like a freed buffer: it is memory held, so
//! it counts against the budget, and kept memory is dropped (largest first) when a reservation needs
//! room. Kept pieces of mappings are joined with their free neighbours and cut to the size asked
//! for, so memory moves between window sizes without being unmapped and faulted in again (the
//! kernel zeroes every fresh huge page). When the whole mapping does not fit but the buffer alone
//! does, the buffer gets exactly its own size ([`AlignedBuf::new`]), so huge pages never refuse an
//! allocation the exact size would have had. A pool may also be prefaulted: the whole budget is mapped and written once,
//! kept as one piece, and every buffer is cut from it.
//!
//! A prefaulted mapping may outlive its pool on an [`ArenaShelf`], so that a process that builds
//! engine after engine (`foresight bench`) faults its memory in once. Fresh memory is slow not
//! for the mapping but for the first write of each page, which the kernel zeroes; on a virtual
//! machine that reports freed pages to its host, the host must also back each page again. A pool
//! built from the shelf takes the mapping there (if it holds the budget) instead of making one,
//! uses only its budget's worth from the front, and when dropped puts the mapping back. The rest,
//! the spare, stays mapped but is never lent nor counted, and its memory is given back to the
//! system (`madvise(MADV_DONTNEED)`) but for the rest of the budget's last huge page, so that
//! the process holds its budget and at most 2 MiB more while a smaller pool runs, not the largest
//! budget of any engine before it; a later pool with a larger budget faults the spare in again.
//! It puts the mapping back only if every byte of it is back in the pool as one kept piece (the
//! core hands back what it owns first): a buffer still lent then (a read still in the backend,
//! which the kernel may still write into, or one leaked rather than freed under the kernel)
//! means the mapping is unmapped around it instead, and the next pool maps a fresh one. So does
//! a pool dropped while a panic unwinds, or one whose accounts do not add up: its drop never
//! panics, since a second panic would abort and hide the first. Reused memory holds what earlier
//! reads left in it; that is no change, since buffers are reused within a pool anyway, and a
//! read copies out only the bytes its backend reported read.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use foresight_core::ByteLen;
use foresight_policy::budget::Budget;

use crate::buffer::{self, AlignedBuf, ALIGN_BYTES, HUGE_BYTES};

/// Buffers at least this large come from huge-page mappings (when the kernel has huge pages). At
/// 4 KiB per page, a smaller buffer has fewer than 128 pieces, which the 254-segment limit of the
/// virtio disk `foresight bench` measured takes in one request anyway.
pub const HUGE_MIN_BYTES: usize = HUGE_BYTES / 4;

/// Who wants a buffer: prefetching is held back by the demand reserve, demand is not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// A policy fetch ahead of the application.
    Prefetch,
    /// The application's own read.
    Demand,
}

/// A place to keep one prefaulted mapping between the engines a process builds one after
/// another, so that only the first pays for faulting in its memory (see the module
/// documentation and `EngineBuilder::prefault_from`). Cheap to clone: every clone is the same
/// shelf. While an engine uses the mapping the shelf is empty; an engine built meanwhile from the
/// same shelf maps its own.
#[derive(Clone, Debug, Default)]
pub struct ArenaShelf {
    slot: Arc<Mutex<Option<Kept>>>,
}

/// A mapping on a shelf, and how much of it is backed by memory.
#[derive(Debug)]
struct Kept {
    arena: AlignedBuf,
    /// The front of the mapping that was faulted in and not given back since; the rest reads
    /// as zeroes and is faulted in again when touched.
    resident_bytes: usize,
}

impl ArenaShelf {
    /// An empty shelf.
    pub fn new() -> ArenaShelf {
        ArenaShelf::default()
    }

    /// Bytes of the mapping on the shelf now; 0 when it is empty (nothing was put there yet, an
    /// engine is using it, or the last engine could not give it back whole).
    pub fn kept_bytes(&self) -> u64 {
        self.lock()
            .as_ref()
            .map_or(0, |k| k.arena.capacity() as u64)
    }

    /// Bytes of the mapping on the shelf that are backed by memory now (the rest was given
    /// back); 0 when the shelf is empty.
    pub fn resident_bytes(&self) -> u64 {
        self.lock().as_ref().map_or(0, |k| k.resident_bytes as u64)
    }

    /// Drops the mapping on the shelf, if any, giving its memory back to the system.
    pub fn clear(&self) {
        let kept = self.lock().take();
        drop(kept);
    }

    fn take(&self) -> Option<Kept> {
        self.lock().take()
    }

    /// Keeps `arena` (its front `resident_bytes` backed by memory), or the larger of it and
    /// the one kept already (two engines built from one shelf at once each made one); the other
    /// is unmapped.
    fn put(&self, arena: AlignedBuf, resident_bytes: usize) {
        assert!(
            resident_bytes <= arena.capacity(),
            "a resident front of {resident_bytes} bytes on a mapping of {}",
            arena.capacity()
        );
        let new = Kept {
            arena,
            resident_bytes,
        };
        let mut slot = self.lock();
        let other = match slot.take() {
            Some(kept) if kept.arena.capacity() >= new.arena.capacity() => {
                *slot = Some(kept);
                new
            }
            kept => {
                *slot = Some(new);
                match kept {
                    Some(k) => k,
                    None => return,
                }
            }
        };
        drop(slot);
        drop(other);
    }

    /// The slot; a panic while it was held (nothing in it panics) leaves a usable value.
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Kept>> {
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Where a pool's prefaulted mapping came from and goes back to (see the module documentation).
#[derive(Debug)]
struct Arena {
    shelf: ArenaShelf,
    /// The first byte of the mapping and of the part the pool uses.
    addr: usize,
    /// The part the pool uses: its budget in whole pages, reserved in the budget.
    used_bytes: usize,
    /// The rest of a mapping larger than the budget: mapped, never lent, not counted, and its
    /// memory given back to the system (see `prefault_with`).
    spare: Option<AlignedBuf>,
    /// The front of the whole mapping (used part and spare) backed by memory.
    resident_bytes: usize,
}

/// The pool. See the module documentation.
#[derive(Debug)]
pub struct BufferPool {
    budget: Budget,
    demand_reserve_bytes: u64,
    /// Free buffers of ordinary memory by capacity; their bytes are still reserved in `budget`.
    free: BTreeMap<usize, Vec<AlignedBuf>>,
    /// Free pieces of huge-page mappings by address, adjacent ones joined (reserved too).
    pieces: BTreeMap<usize, AlignedBuf>,
    /// The same pieces as (capacity, address), for the best fit.
    pieces_by_size: BTreeSet<(usize, usize)>,
    free_bytes: u64,
    /// The most bytes kept on free lists.
    free_max_bytes: u64,
    /// Bytes in buffers handed out (not on the free lists).
    lent_bytes: u64,
    /// The most bytes handed out at once.
    lent_peak_bytes: u64,
    /// Whether large fresh buffers come from huge-page mappings.
    huge_pages: bool,
    /// The prefaulted mapping to put back on its shelf when the pool is dropped.
    arena: Option<Arena>,
}

impl BufferPool {
    /// A pool of `limit` bytes, with `demand_reserve_bytes` of it kept from prefetching; large
    /// buffers come from huge pages where the kernel has them enabled.
    pub fn new(limit: ByteLen, demand_reserve_bytes: u64) -> BufferPool {
        Self::with_huge_pages(limit, demand_reserve_bytes, buffer::huge_pages_enabled())
    }

    /// As [`BufferPool::new`], saying whether large buffers come from huge-page mappings.
    pub fn with_huge_pages(
        limit: ByteLen,
        demand_reserve_bytes: u64,
        huge_pages: bool,
    ) -> BufferPool {
        assert!(
            demand_reserve_bytes <= limit.0,
            "demand reserve {demand_reserve_bytes} over the limit {limit}"
        );
        BufferPool {
            budget: Budget::new(limit),
            demand_reserve_bytes,
            free: BTreeMap::new(),
            pieces: BTreeMap::new(),
            pieces_by_size: BTreeSet::new(),
            free_bytes: 0,
            // Keeping freed buffers is free (they count against the budget and are dropped the
            // moment a reservation needs their room) and saves zeroing and faulting fresh memory.
            free_max_bytes: limit.0,
            lent_bytes: 0,
            lent_peak_bytes: 0,
            huge_pages,
            arena: None,
        }
    }

    /// The capacity a buffer for `len` bytes gets: whole pages.
    pub fn capacity_for(len: u64) -> usize {
        (len.max(1).div_ceil(ALIGN_BYTES as u64) * ALIGN_BYTES as u64) as usize
    }

    /// A buffer of at least `len` bytes, or `None` if the budget (less the demand reserve, for a
    /// prefetch) has no room.
    pub fn alloc(&mut self, len: u64, purpose: Purpose) -> Option<AlignedBuf> {
        let exact = Self::capacity_for(len);
        let ceiling = match purpose {
            Purpose::Prefetch => self.budget.limit().0 - self.demand_reserve_bytes,
            Purpose::Demand => self.budget.limit().0,
        };
        if self.lent_bytes + exact as u64 > ceiling {
            return None;
        }
        if let Some(b) = self.take_piece(exact) {
            self.lend(b.capacity());
            self.check();
            return Some(b);
        }
        // The smallest kept buffer that holds `len`, if it is at most twice the size: readahead
        // windows vary in size, and an exact match alone would leave most kept buffers unused
        // while fresh ones are zeroed and faulted in.
        let fit = self
            .free
            .range(exact..=exact.saturating_mul(2))
            .next()
            .map(|(&c, _)| c)
            .filter(|&c| self.lent_bytes + c as u64 <= ceiling);
        let reused = fit.and_then(|c| {
            let list = self.free.get_mut(&c).expect("listed size");
            let b = list.pop();
            if list.is_empty() {
                self.free.remove(&c);
            }
            b
        });
        let buf = match reused {
            Some(b) => {
                self.free_bytes -= b.capacity() as u64;
                b
            }
            None => self.fresh(exact)?,
        };
        self.lend(buf.capacity());
        self.check();
        Some(buf)
    }

    fn lend(&mut self, cap: usize) {
        self.lent_bytes += cap as u64;
        self.lent_peak_bytes = self.lent_peak_bytes.max(self.lent_bytes);
    }

    /// Takes a buffer back.
    pub fn free(&mut self, buf: AlignedBuf) {
        let cap = buf.capacity();
        assert!(
            self.lent_bytes >= cap as u64,
            "freed a buffer the pool did not lend"
        );
        self.lent_bytes -= cap as u64;
        if buf.is_mapped() {
            self.keep_piece(buf);
        } else if self.free_bytes + cap as u64 <= self.free_max_bytes {
            self.free_bytes += cap as u64;
            self.free.entry(cap).or_default().push(buf);
        } else {
            drop(buf);
            self.budget.release(ByteLen(cap as u64));
        }
        self.check();
    }

    /// A new buffer of `cap` bytes. A large one is cut from the front of a fresh huge-page
    /// mapping when the whole mapping fits in the budget; the rest of the mapping is kept on the
    /// free lists (reserved, like any kept buffer).
    ///
    /// Kept memory is dropped for room whatever the purpose: `alloc` has checked that the bytes
    /// lent leave room for this buffer under its ceiling, and that is the room the policy is told
    /// it has (`prefetch_available_bytes`). A prefetch used to be refused when the kept memory lay
    /// in pieces too small for it, since mapping afresh has the kernel zero the memory again; but
    /// the policy heard that as memory pressure with the kept bytes still counted as available,
    /// and pieces left by partial releases and small demand reads stay small, so under
    /// `directed` every sweep of a stream could be refused for the rest of a run (the conformance
    /// suite's three 2 MiB scans in a 4 MiB budget).
    fn fresh(&mut self, cap: usize) -> Option<AlignedBuf> {
        let mapping = cap.next_multiple_of(HUGE_BYTES);
        if self.huge_pages
            && cap >= HUGE_MIN_BYTES
            && self.lent_bytes + mapping as u64 <= self.budget.limit().0
            && self.reserve(mapping as u64)
        {
            match AlignedBuf::new_huge_split(cap, mapping) {
                Some((buf, rest)) => {
                    if let Some(rest) = rest {
                        self.keep_piece(rest);
                    }
                    return Some(buf);
                }
                // The kernel refused the mapping: fall back to a buffer of the exact size.
                None => self.budget.release(ByteLen(mapping as u64)),
            }
        }
        if !self.reserve(cap as u64) {
            return None;
        }
        match AlignedBuf::new(cap) {
            Some(b) => Some(b),
            None => {
                // The allocator refused: give the reservation back and treat it as full.
                self.budget.release(ByteLen(cap as u64));
                None
            }
        }
    }

    /// Reserves `bytes` in the budget, dropping kept memory (largest first) for room.
    fn reserve(&mut self, bytes: u64) -> bool {
        while !self.budget.try_reserve(ByteLen(bytes)) {
            if !self.drop_one_free() {
                return false;
            }
        }
        true
    }

    /// Maps the whole budget (whole pages) at once and writes every page of it, so that no read
    /// waits for the kernel to fault in and zero fresh memory; the mapping is kept as one piece
    /// that buffers are cut from. Only on an empty pool; false if the kernel refuses the mapping.
    pub fn prefault(&mut self) -> bool {
        self.prefault_with(None)
    }

    /// As [`BufferPool::prefault`], with the mapping on `shelf` if it holds the budget (the part
    /// beyond the budget is held but never lent), and the mapping put back on `shelf` when the
    /// pool is dropped with all of it back (see the module documentation).
    pub fn prefault_from(&mut self, shelf: &ArenaShelf) -> bool {
        self.prefault_with(Some(shelf))
    }

    fn prefault_with(&mut self, shelf: Option<&ArenaShelf>) -> bool {
        assert_eq!(self.budget.used().0, 0, "prefault an empty pool only");
        assert!(self.arena.is_none(), "prefault a pool once");
        let bytes = (self.budget.limit().0 / ALIGN_BYTES as u64 * ALIGN_BYTES as u64) as usize;
        let kept = shelf
            .and_then(ArenaShelf::take)
            .and_then(|k| (k.arena.capacity() >= bytes).then_some(k));
        // A kept mapping too small for this budget was unmapped just above, before the new one
        // is made: both at once could be more than the machine has.
        let (mut whole, resident_bytes) = match kept {
            Some(k) => (k.arena, k.resident_bytes),
            None => {
                let Some((mut a, _)) = AlignedBuf::new_huge_split(bytes, bytes) else {
                    return false;
                };
                a.fault_in();
                (a, bytes)
            }
        };
        // The spare of a larger mapping is given back, so that the process holds the budget and
        // no more while this pool runs (the next larger pool faults it in again). All but the
        // rest of the used part's last huge page: giving back part of a huge page would split it,
        // and the used part's buffers would lie in small pages there.
        let held_end = bytes.next_multiple_of(HUGE_BYTES).min(whole.capacity());
        // What the shelf gave back is faulted in again here, in the build, not while a read
        // waits for it, up to the end of that last huge page: the kernel backs a huge page
        // whole when its first byte is touched, so faulting in only the budget's part of it
        // would leave the rest resident but counted as given back, and a later, smaller pool
        // would give back only the budget's part, splitting the page and keeping the rest held.
        if resident_bytes < held_end {
            whole.fault_in_range(resident_bytes..held_end);
        }
        if resident_bytes > held_end {
            whole.release_pages(held_end..resident_bytes);
        }
        let resident_bytes = held_end;
        let (used, spare) = if whole.capacity() > bytes {
            let (front, back) = whole.split_off(bytes);
            (front, Some(back))
        } else {
            (whole, None)
        };
        assert!(self.budget.try_reserve(ByteLen(bytes as u64)));
        if let Some(shelf) = shelf {
            self.arena = Some(Arena {
                shelf: shelf.clone(),
                addr: used.addr(),
                used_bytes: bytes,
                spare,
                resident_bytes,
            });
        }
        self.keep_piece(used);
        self.check();
        true
    }

    /// The mapping the pool was prefaulted from, whole, if every byte of its used part is kept
    /// (nothing lent, none of it dropped): taken out of the kept pieces, with the spare joined
    /// back on. `None` otherwise; the pieces stay where they are.
    ///
    /// It runs in the pool's drop, so it cannot panic: every account it settles and every cut
    /// and join it makes is checked before anything moves, and a pool whose accounts do not add
    /// up (some other invariant failed first) keeps its pieces, to be unmapped with it.
    fn whole_arena(&mut self) -> Option<(ArenaShelf, AlignedBuf, usize)> {
        let a = self.arena.take()?;
        let end = a.addr.checked_add(a.used_bytes)?;
        let (&at, piece) = self.pieces.range(..=a.addr).next_back()?;
        let cap = piece.capacity();
        if self.lent_bytes != 0 || at.checked_add(cap)? < end {
            return None;
        }
        let adds_up = a.used_bytes > 0
            && a.used_bytes.is_multiple_of(ALIGN_BYTES)
            && (a.addr - at).is_multiple_of(ALIGN_BYTES)
            && piece.is_mapped()
            && self.free_bytes >= cap as u64
            && self.budget.used().0 >= cap as u64
            && a.spare
                .as_ref()
                .is_none_or(|s| s.is_mapped() && s.addr() == end);
        if !adds_up {
            return None;
        }
        let mut piece = self.pieces.remove(&at)?;
        self.pieces_by_size.remove(&(cap, at));
        self.free_bytes -= cap as u64;
        self.budget.release(ByteLen(cap as u64));
        // A fresh mapping the kernel placed right before or after the arena was joined to it:
        // it goes back to the pool, which unmaps it with the rest.
        if at < a.addr {
            let (before, rest) = piece.split_off(a.addr - at);
            self.reserve_kept(before);
            piece = rest;
        }
        if piece.capacity() > a.used_bytes {
            let (used, after) = piece.split_off(a.used_bytes);
            self.reserve_kept(after);
            piece = used;
        }
        let whole = match a.spare {
            Some(spare) => piece.join(spare),
            None => piece,
        };
        Some((a.shelf, whole, a.resident_bytes))
    }

    /// Takes back a buffer its owner still held when it went (the engine's core, at its drop),
    /// so that a prefaulted mapping can be whole again for its shelf. Unlike [`BufferPool::free`]
    /// it checks nothing that could panic: it runs in a drop, perhaps of an engine a panic
    /// broke. Without a shelf to put the mapping back on, the buffer is simply dropped.
    pub fn take_back_at_drop(&mut self, buf: AlignedBuf) {
        let cap = buf.capacity() as u64;
        if self.arena.is_some() && buf.is_mapped() && self.lent_bytes >= cap {
            self.lent_bytes -= cap;
            self.keep_piece(buf);
        }
    }

    /// Keeps a piece whose bytes were released, reserving them again.
    fn reserve_kept(&mut self, piece: AlignedBuf) {
        assert!(self.budget.try_reserve(ByteLen(piece.capacity() as u64)));
        self.keep_piece(piece);
    }

    /// The smallest kept piece of a mapping that holds `cap` bytes, cut to `cap` (the rest stays
    /// kept). Cutting rather than requiring a near fit is what keeps mappings from being dropped
    /// and made afresh (each fresh huge page is zeroed by the kernel).
    fn take_piece(&mut self, cap: usize) -> Option<AlignedBuf> {
        let &(size, addr) = self.pieces_by_size.range((cap, 0)..).next()?;
        self.pieces_by_size.remove(&(size, addr));
        let piece = self.pieces.remove(&addr).expect("indexed piece");
        self.free_bytes -= size as u64;
        if size == cap {
            return Some(piece);
        }
        let (front, rest) = piece.split_off(cap);
        self.keep_piece(rest);
        Some(front)
    }

    /// Keeps a free piece of a mapping, joined with the kept pieces it adjoins.
    fn keep_piece(&mut self, mut piece: AlignedBuf) {
        self.free_bytes += piece.capacity() as u64;
        let before = self
            .pieces
            .range(..piece.addr())
            .next_back()
            .map(|(&a, _)| a);
        if let Some(a) = before.filter(|a| self.pieces[a].adjoins(&piece)) {
            let prev = self.pieces.remove(&a).expect("listed piece");
            self.pieces_by_size.remove(&(prev.capacity(), a));
            piece = prev.join(piece);
        }
        let after = piece.addr() + piece.capacity();
        if let Some(next) = self.pieces.remove(&after) {
            self.pieces_by_size.remove(&(next.capacity(), after));
            piece = piece.join(next);
        }
        self.pieces_by_size.insert((piece.capacity(), piece.addr()));
        self.pieces.insert(piece.addr(), piece);
    }

    /// Drops the largest kept buffer or piece, releasing its bytes; false if none is kept.
    fn drop_one_free(&mut self) -> bool {
        let largest_buf = self.free.last_key_value().map_or(0, |(&c, _)| c);
        if let Some(&(size, addr)) = self.pieces_by_size.last() {
            if size >= largest_buf {
                self.pieces_by_size.remove(&(size, addr));
                drop(self.pieces.remove(&addr).expect("indexed piece"));
                self.free_bytes -= size as u64;
                self.budget.release(ByteLen(size as u64));
                return true;
            }
        }
        let Some(mut entry) = self.free.last_entry() else {
            return false;
        };
        let cap = *entry.key();
        let buf = entry
            .get_mut()
            .pop()
            .expect("free lists hold no empty vectors");
        if entry.get().is_empty() {
            entry.remove();
        }
        drop(buf);
        self.free_bytes -= cap as u64;
        self.budget.release(ByteLen(cap as u64));
        true
    }

    fn check(&self) {
        assert!(
            self.budget.used().0 <= self.budget.limit().0,
            "buffer memory {} over the budget {}",
            self.budget.used(),
            self.budget.limit()
        );
        debug_assert_eq!(self.budget.used().0, self.lent_bytes + self.free_bytes);
        debug_assert_eq!(self.pieces.len(), self.pieces_by_size.len());
        // Every kept piece is at least a page of reserved memory, so the piece tables are bounded
        // by the budget.
        debug_assert!(self.pieces.len() as u64 * ALIGN_BYTES as u64 <= self.free_bytes);
    }

    /// The budget.
    pub fn limit_bytes(&self) -> u64 {
        self.budget.limit().0
    }

    /// Bytes in buffers handed out now (prefetched, in flight, or being read by the application).
    pub fn lent_bytes(&self) -> u64 {
        self.lent_bytes
    }

    /// The most bytes in buffers handed out at once: what reads held, without the memory kept
    /// for reuse (which, in a prefaulted pool, is the whole budget from the start).
    pub fn lent_peak_bytes(&self) -> u64 {
        self.lent_peak_bytes
    }

    /// All memory the pool holds now, lent or kept for reuse: never above the limit.
    pub fn held_bytes(&self) -> u64 {
        self.budget.used().0
    }

    /// The most memory the pool ever held at once.
    pub fn held_peak_bytes(&self) -> u64 {
        self.budget.peak().0
    }

    /// Bytes a prefetch could still get.
    pub fn prefetch_available_bytes(&self) -> u64 {
        (self.budget.limit().0 - self.demand_reserve_bytes).saturating_sub(self.lent_bytes)
    }
}

impl Drop for BufferPool {
    /// Puts a prefaulted mapping back on its shelf if all of it is back; whatever else the pool
    /// keeps (and the mapping, if not) is unmapped or freed with the fields.
    fn drop(&mut self) {
        // While a panic unwinds, the pool's state is whatever the panic left; a second panic here
        // would abort the process and hide the first one's message. The mapping is unmapped.
        if std::thread::panicking() {
            return;
        }
        if let Some((shelf, whole, resident_bytes)) = self.whole_arena() {
            shelf.put(whole, resident_bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn reuses_freed_buffers_and_respects_the_reserve() {
        let mut p = BufferPool::new(ByteLen(64 << 10), 16 << 10);
        let a = p.alloc(40 << 10, Purpose::Prefetch).unwrap();
        assert!(
            p.alloc(12 << 10, Purpose::Prefetch).is_none(),
            "reserve kept"
        );
        let b = p.alloc(12 << 10, Purpose::Demand).unwrap();
        assert!(p.alloc(16 << 10, Purpose::Demand).is_none(), "limit kept");
        // Freed buffers are kept for reuse, still counted against the budget...
        p.free(a);
        assert_eq!(p.held_bytes(), 52 << 10);
        let again = p.alloc(40 << 10, Purpose::Demand).unwrap();
        assert_eq!(p.held_bytes(), 52 << 10, "and reused");
        p.free(again);
        // ...and dropped when a reservation of another size needs their room.
        let other = p.alloc(48 << 10, Purpose::Demand).unwrap();
        assert!(p.held_bytes() <= 64 << 10);
        p.free(other);
        p.free(b);
        assert!(p.held_peak_bytes() <= 64 << 10);
        assert_eq!(p.lent_bytes(), 0);
    }

    #[test]
    fn large_buffers_are_cut_from_huge_pages_when_the_mapping_fits_and_the_rest_is_kept() {
        let limit = 5 * HUGE_BYTES as u64 / 2;
        let mut p = BufferPool::with_huge_pages(ByteLen(limit), 0, true);
        let half = HUGE_BYTES as u64 / 2;
        let a = p.alloc(half, Purpose::Prefetch).unwrap();
        assert_eq!(
            a.capacity() as u64,
            half,
            "the buffer has the size asked for"
        );
        assert_eq!(
            p.held_bytes(),
            HUGE_BYTES as u64,
            "the rest of the huge page is held"
        );
        let b = p.alloc(half, Purpose::Prefetch).unwrap();
        assert_eq!(p.held_bytes(), HUGE_BYTES as u64, "and reused");
        let small = p
            .alloc(HUGE_MIN_BYTES as u64 - 4096, Purpose::Prefetch)
            .unwrap();
        assert_eq!(p.held_bytes(), HUGE_BYTES as u64 + small.capacity() as u64);
        // 2.5 MiB and a page are left: a 2.5 MiB buffer's 4 MiB mapping does not fit, it alone does.
        let c = p.alloc(5 * half / 2, Purpose::Prefetch).unwrap();
        assert_eq!(c.capacity() as u64, 5 * half / 2);
        assert_eq!(p.held_bytes(), limit - 4096, "no rest was kept");
        // A demand read that needs the room drops the kept rest of a mapping first.
        for x in [a, b, small, c] {
            p.free(x);
        }
        let d = p.alloc(limit, Purpose::Demand).unwrap();
        assert_eq!(p.held_bytes(), limit);
        p.free(d);
        let mut off = BufferPool::with_huge_pages(ByteLen(limit), 0, false);
        let e = off.alloc(half, Purpose::Prefetch).unwrap();
        assert_eq!(off.held_bytes(), half, "nothing more without huge pages");
        off.free(e);
    }

    /// A prefaulted pool holds its whole budget from the start, so its held peak says nothing of
    /// what the reads needed; the lent peak does.
    #[test]
    fn the_lent_peak_counts_buffers_handed_out_not_memory_kept() {
        let limit = 4 * HUGE_BYTES as u64;
        let mut p = BufferPool::with_huge_pages(ByteLen(limit), HUGE_BYTES as u64, true);
        assert!(p.prefault());
        assert_eq!(p.held_peak_bytes(), limit);
        assert_eq!(p.lent_peak_bytes(), 0);
        let a = p.alloc(8192, Purpose::Prefetch).unwrap();
        let b = p.alloc(4096, Purpose::Demand).unwrap();
        p.free(a);
        let c = p.alloc(4096, Purpose::Prefetch).unwrap();
        p.free(b);
        p.free(c);
        assert_eq!(p.lent_peak_bytes(), 12288);
        assert_eq!(p.lent_bytes(), 0);
    }

    #[test]
    fn a_prefaulted_pool_cuts_every_buffer_from_its_one_mapping() {
        let limit = 4 * HUGE_BYTES as u64;
        let mut p = BufferPool::with_huge_pages(ByteLen(limit), HUGE_BYTES as u64, true);
        assert!(p.prefault());
        assert_eq!(p.held_bytes(), limit);
        let a = p.alloc(100, Purpose::Prefetch).unwrap();
        let b = p
            .alloc(3 * HUGE_BYTES as u64 / 2, Purpose::Prefetch)
            .unwrap();
        let c = p.alloc(HUGE_BYTES as u64, Purpose::Demand).unwrap();
        assert!(a.is_mapped() && b.is_mapped() && c.is_mapped());
        assert_eq!(
            p.held_bytes(),
            limit,
            "nothing mapped or dropped beyond the first mapping"
        );
        p.free(b);
        p.free(a);
        p.free(c);
        assert_eq!(
            p.pieces.len(),
            1,
            "freed pieces join up into the whole mapping again"
        );
        assert_pieces_disjoint_and_joined(&p);
    }

    /// Kept memory scattered in pieces too small for a buffer is no reason to refuse it: the
    /// policy is told the bytes not lent are available, and it plans with them. (A prefetch was
    /// refused here while the pool reported 2 MiB available to prefetch.)
    #[test]
    fn a_prefetch_that_fits_only_scattered_kept_memory_drops_it_as_a_demand_read_does() {
        let mib = 1u64 << 20;
        let mut p = BufferPool::with_huge_pages(ByteLen(4 * mib), 0, true);
        assert!(p.prefault());
        let mut quarters: Vec<_> = (0..4)
            .map(|_| p.alloc(mib, Purpose::Prefetch).unwrap())
            .collect();
        let (d, c, b, a) = (
            quarters.pop().unwrap(),
            quarters.pop().unwrap(),
            quarters.pop().unwrap(),
            quarters.pop().unwrap(),
        );
        p.free(a);
        p.free(c);
        assert_eq!(p.pieces.len(), 2, "two kept megabytes, not adjoining");
        assert_eq!(p.prefetch_available_bytes(), 2 * mib);
        let e = p
            .alloc(2 * mib, Purpose::Prefetch)
            .expect("a prefetch within what the policy is told is available");
        assert!(p.held_bytes() <= 4 * mib);
        assert_eq!(p.prefetch_available_bytes(), 0);
        assert!(
            p.alloc(4096, Purpose::Prefetch).is_none(),
            "the budget, not the pieces, refuses"
        );
        p.free(e);
        p.free(b);
        let f = p
            .alloc(3 * mib, Purpose::Demand)
            .expect("demand drops kept pieces");
        assert!(p.held_bytes() <= 4 * mib);
        for x in [d, f] {
            p.free(x);
        }
    }

    /// The address of the one piece a freshly prefaulted pool keeps.
    fn arena_addr(p: &BufferPool) -> usize {
        assert_eq!(p.pieces.len(), 1, "one piece: {:?}", p.pieces);
        *p.pieces.keys().next().expect("one piece")
    }

    #[test]
    fn a_mapping_all_back_goes_on_its_shelf_and_the_next_pool_takes_it() {
        let limit = 4 * HUGE_BYTES as u64;
        let shelf = ArenaShelf::new();
        let mut p = BufferPool::with_huge_pages(ByteLen(limit), HUGE_BYTES as u64, true);
        assert!(p.prefault_from(&shelf));
        let addr = arena_addr(&p);
        assert_eq!(shelf.kept_bytes(), 0, "the pool holds the mapping");
        let a = p
            .alloc(3 * HUGE_BYTES as u64 / 2, Purpose::Prefetch)
            .unwrap();
        let b = p.alloc(4096, Purpose::Demand).unwrap();
        p.free(a);
        p.free(b);
        drop(p);
        assert_eq!(shelf.kept_bytes(), limit, "put back whole");
        let mut q = BufferPool::with_huge_pages(ByteLen(limit), HUGE_BYTES as u64, true);
        assert!(q.prefault_from(&shelf));
        assert_eq!(arena_addr(&q), addr, "the same mapping, not a fresh one");
        assert_eq!(shelf.kept_bytes(), 0);
        assert_eq!(q.held_bytes(), limit);
        drop(q);
        assert_eq!(shelf.kept_bytes(), limit);
        shelf.clear();
        assert_eq!(shelf.kept_bytes(), 0);
    }

    /// A pool built from a mapping larger than its budget lends and holds no more than the
    /// budget; the rest goes back on the shelf with it.
    #[test]
    fn a_larger_mapping_still_keeps_the_pool_to_its_budget() {
        let big = 4 * HUGE_BYTES as u64;
        let shelf = ArenaShelf::new();
        drop({
            let mut p = BufferPool::with_huge_pages(ByteLen(big), 0, true);
            assert!(p.prefault_from(&shelf));
            p
        });
        assert_eq!(shelf.kept_bytes(), big);
        let limit = HUGE_BYTES as u64 + 5 * 4096;
        let mut p = BufferPool::with_huge_pages(ByteLen(limit), 4096, true);
        assert!(p.prefault_from(&shelf));
        assert_eq!(p.held_bytes(), limit, "the spare is not the pool's to lend");
        assert_eq!(p.prefetch_available_bytes(), limit - 4096);
        assert!(p.alloc(limit, Purpose::Prefetch).is_none(), "the reserve");
        let a = p.alloc(limit - 4096, Purpose::Prefetch).unwrap();
        assert!(p.alloc(8192, Purpose::Demand).is_none(), "the budget");
        let b = p.alloc(4096, Purpose::Demand).unwrap();
        assert!(p.alloc(4096, Purpose::Demand).is_none(), "the budget");
        assert_eq!(p.held_peak_bytes(), limit);
        p.free(a);
        p.free(b);
        drop(p);
        assert_eq!(shelf.kept_bytes(), big, "used part and spare back as one");
        // A budget larger than the mapping kept gets a mapping of its own.
        let mut q = BufferPool::with_huge_pages(ByteLen(2 * big), 0, true);
        assert!(q.prefault_from(&shelf));
        assert_eq!(q.held_bytes(), 2 * big);
        drop(q);
        assert_eq!(shelf.kept_bytes(), 2 * big);
    }

    /// A pool built from a mapping larger than its budget gives the memory of the spare back
    /// (all but the rest of the used part's last huge page), so that the process holds no more
    /// than the budget while it runs; the next pool with a larger budget faults the spare in
    /// again. Before, the spare stayed resident: a 1 GiB engine built after a 6 GiB one held
    /// 6 GiB.
    #[test]
    fn a_larger_mapping_gives_back_the_memory_beyond_the_budget() {
        let big = 4 * HUGE_BYTES;
        let shelf = ArenaShelf::new();
        drop({
            let mut p = BufferPool::with_huge_pages(ByteLen(big as u64), 0, true);
            assert!(p.prefault_from(&shelf));
            p
        });
        assert_eq!(shelf.resident_bytes(), big as u64);
        let limit = HUGE_BYTES + 5 * 4096;
        let mut p = BufferPool::with_huge_pages(ByteLen(limit as u64), 4096, true);
        assert!(p.prefault_from(&shelf));
        let arena = p.arena.as_ref().expect("from the shelf");
        let spare = arena.spare.as_ref().expect("a spare").as_slice();
        assert_eq!(spare.len(), big - limit);
        let beyond = &spare[2 * HUGE_BYTES - limit..];
        assert_eq!(
            crate::sys::resident_bytes(beyond).unwrap(),
            0,
            "the spare past the used part's last huge page still holds memory"
        );
        let used = p.pieces.values().next().expect("the used part").as_slice();
        assert!(
            crate::sys::all_resident(used).unwrap(),
            "the budget is faulted in"
        );
        drop(p);
        assert_eq!(shelf.kept_bytes(), big as u64, "the mapping is back whole");
        assert_eq!(shelf.resident_bytes(), 2 * HUGE_BYTES as u64);
        let mut q = BufferPool::with_huge_pages(ByteLen(big as u64), 0, true);
        assert!(q.prefault_from(&shelf));
        let whole = q
            .pieces
            .values()
            .next()
            .expect("the whole mapping")
            .as_slice();
        assert_eq!(whole.len(), big);
        assert!(
            crate::sys::all_resident(whole).unwrap(),
            "a larger budget faults the spare in again"
        );
        drop(q);
        assert_eq!(shelf.resident_bytes(), big as u64);
    }

    /// A budget that ends inside a huge page the shelf had given back faults in that whole huge
    /// page (the mapping asks for huge pages, and the kernel backs a fresh one whole), not only
    /// the budget's part of it. The shelf must count the whole page as resident, or a later,
    /// smaller pool gives back only the budget's part, splitting the page and keeping the rest
    /// of it held, with no record, past what it gives back.
    #[test]
    fn a_budget_ending_inside_a_given_back_huge_page_is_given_back_whole_later() {
        let big = 4 * HUGE_BYTES;
        let shelf = ArenaShelf::new();
        let build = |limit: usize| {
            let mut p = BufferPool::with_huge_pages(ByteLen(limit as u64), 0, true);
            assert!(p.prefault_from(&shelf));
            p
        };
        drop(build(big));
        // Gives back all past the first huge page.
        drop(build(HUGE_BYTES));
        assert_eq!(shelf.resident_bytes(), HUGE_BYTES as u64);
        // Ends 5 pages into the third huge page.
        drop(build(2 * HUGE_BYTES + 5 * 4096));
        let p = build(HUGE_BYTES);
        let spare = p
            .arena
            .as_ref()
            .and_then(|a| a.spare.as_ref())
            .expect("a spare")
            .as_slice();
        assert_eq!(
            crate::sys::resident_bytes(spare).unwrap(),
            0,
            "memory past the budget is still held"
        );
        drop(p);
    }

    /// A buffer still out when the pool goes (a read the kernel may still write into, whose
    /// backend gave up waiting) keeps the mapping off the shelf, and so does one leaked rather
    /// than freed.
    #[test]
    fn a_mapping_with_a_buffer_still_lent_is_not_put_back() {
        let limit = 2 * HUGE_BYTES as u64;
        let shelf = ArenaShelf::new();
        let mut p = BufferPool::with_huge_pages(ByteLen(limit), 0, true);
        assert!(p.prefault_from(&shelf));
        let mut held = p.alloc(4096, Purpose::Prefetch).unwrap();
        drop(p);
        assert_eq!(shelf.kept_bytes(), 0, "not put back while a piece is out");
        // The piece is still the holder's to write into, the rest of the mapping gone.
        held.as_mut_slice()[4095] = 1;
        drop(held);
        assert_eq!(shelf.kept_bytes(), 0);
        let mut q = BufferPool::with_huge_pages(ByteLen(limit), 0, true);
        assert!(q.prefault_from(&shelf));
        std::mem::forget(q.alloc(8192, Purpose::Demand).unwrap());
        drop(q);
        assert_eq!(shelf.kept_bytes(), 0, "not put back with a piece leaked");
    }

    /// A prefaulted pool on a shelf whose accounts no longer add up: the budget says nothing is
    /// held while the whole mapping is kept (as after some other invariant failed).
    fn pool_with_inconsistent_accounts(shelf: &ArenaShelf) -> BufferPool {
        let limit = 2 * HUGE_BYTES as u64;
        let mut p = BufferPool::with_huge_pages(ByteLen(limit), 0, true);
        assert!(p.prefault_from(shelf));
        p.budget = Budget::new(ByteLen(limit));
        p
    }

    /// A pool dropped while a panic unwinds must not panic again: a second panic aborts the
    /// process, and the first one's message, which says what went wrong, is never seen.
    #[test]
    fn a_pool_dropped_during_a_panic_leaves_that_panic_to_be_caught() {
        let shelf = ArenaShelf::new();
        let caught = std::panic::catch_unwind(|| {
            let _pool = pool_with_inconsistent_accounts(&shelf);
            panic!("the first failure");
        });
        let payload = caught.expect_err("the closure panics");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"the first failure"));
        assert_eq!(shelf.kept_bytes(), 0, "nothing put back from a broken pool");
    }

    /// Without a panic under way, a pool whose accounts do not add up is dropped quietly too,
    /// its mapping unmapped rather than put back on the shelf.
    #[test]
    fn a_pool_whose_accounts_do_not_add_up_is_dropped_without_a_panic() {
        let shelf = ArenaShelf::new();
        drop(pool_with_inconsistent_accounts(&shelf));
        assert_eq!(shelf.kept_bytes(), 0);
    }

    /// Two pools built from one shelf at once: the first takes the mapping, the second finds the
    /// shelf empty and maps its own; when both have gone the shelf keeps the larger mapping,
    /// whichever order they went in, and the other is unmapped.
    #[test]
    fn two_pools_on_one_shelf_at_once_leave_the_larger_mapping_on_it() {
        let (small, large) = (2 * HUGE_BYTES as u64, 4 * HUGE_BYTES as u64);
        for small_goes_last in [false, true] {
            let shelf = ArenaShelf::new();
            drop({
                let mut p = BufferPool::with_huge_pages(ByteLen(small), 0, true);
                assert!(p.prefault_from(&shelf));
                p
            });
            assert_eq!(shelf.kept_bytes(), small);
            let mut a = BufferPool::with_huge_pages(ByteLen(small), 0, true);
            assert!(a.prefault_from(&shelf));
            assert_eq!(shelf.kept_bytes(), 0, "taken by the first pool");
            let mut b = BufferPool::with_huge_pages(ByteLen(large), 0, true);
            assert!(b.prefault_from(&shelf));
            assert_eq!(b.held_bytes(), large, "a mapping of its own");
            if small_goes_last {
                drop(b);
                assert_eq!(shelf.kept_bytes(), large);
                drop(a);
            } else {
                drop(a);
                assert_eq!(shelf.kept_bytes(), small);
                drop(b);
            }
            assert_eq!(
                shelf.kept_bytes(),
                large,
                "small goes last: {small_goes_last}"
            );
        }
    }

    /// Kept pieces do not overlap, and no two of them adjoin (they would have been joined).
    fn assert_pieces_disjoint_and_joined(p: &BufferPool) {
        let mut end = 0;
        for (&addr, piece) in &p.pieces {
            assert_eq!(addr, piece.addr());
            assert!(
                addr > end || end == 0,
                "pieces overlap or adjoin at {addr:#x}"
            );
            assert!(p.pieces_by_size.contains(&(piece.capacity(), addr)));
            end = addr + piece.capacity();
        }
    }

    proptest! {
        #[test]
        fn never_holds_more_than_the_limit(
            limit_pages in 1u64..2048,
            ops in prop::collection::vec((any::<bool>(), 1u64..5_000_000, any::<bool>()), 0..200),
            huge in any::<bool>(),
            prefault in any::<bool>(),
            shelf_spare_pages in prop::option::of(0u64..512),
        ) {
            let limit = limit_pages * 4096;
            let mut p = BufferPool::with_huge_pages(ByteLen(limit), limit / 4 / 4096 * 4096, huge);
            // A pool prefaulted from a shelf holding a mapping of its budget and spare pages.
            let shelf = ArenaShelf::new();
            if let Some(spare) = shelf_spare_pages {
                let mut first = BufferPool::with_huge_pages(ByteLen(limit + spare * 4096), 0, huge);
                prop_assert!(first.prefault_from(&shelf));
                drop(first);
                prop_assert_eq!(shelf.kept_bytes(), limit + spare * 4096);
                prop_assert!(p.prefault_from(&shelf));
            } else if prefault {
                prop_assert!(p.prefault());
            }
            let mut held = vec![];
            for (alloc, len, demand) in ops {
                if alloc {
                    let purpose = if demand { Purpose::Demand } else { Purpose::Prefetch };
                    if let Some(b) = p.alloc(len, purpose) {
                        held.push(b);
                    }
                } else if !held.is_empty() {
                    // Freed in any order, so that pieces are joined on either side.
                    let b = held.swap_remove(len as usize % held.len());
                    p.free(b);
                }
                prop_assert!(p.held_bytes() <= limit);
                prop_assert_eq!(p.lent_bytes(), held.iter().map(|b| b.capacity() as u64).sum::<u64>());
                assert_pieces_disjoint_and_joined(&p);
            }
            if let Some(spare) = shelf_spare_pages {
                for b in held {
                    p.free(b);
                }
                drop(p);
                // Whole or not at all: a piece dropped for room breaks the mapping.
                let kept = shelf.kept_bytes();
                prop_assert!(kept == 0 || kept == limit + spare * 4096, "kept {}", kept);
            }
        }
    }
}
