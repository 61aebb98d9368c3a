//! The buffer pool: every byte of buffer memory the engine holds, under one hard budget.
//!
//! All buffers come from here, and the pool reserves their bytes in a
//! [`foresight_policy::budget::Budget`] (the same accounting the simulator's page cache uses)
//! before allocating them, so prefetched, in-flight and demand buffers together never exceed the
//! limit, not even for an instant: a reservation that does not fit is refused, not granted and
//! repaired later. Freed buffers are kept on per-size free lists and reused (the smallest kept
//! buffer that holds the request, up to twice its size), which spares the
//! allocator and the page-fault cost of fresh memory at gigabytes per second; kept buffers still
//! count against the budget, and the pool drops them (largest first) as soon as a reservation would
//! otherwise be refused, so keeping them never costs the driver a buffer.
//!
//! Prefetch allocations may use the budget only up to `limit - demand_reserve`; the reserve is for
//! the application's own reads, so prefetching alone cannot fill memory and force demand reads to
//! evict data that just arrived.

use std::collections::BTreeMap;

use foresight_core::ByteLen;
use foresight_policy::budget::Budget;

use crate::buffer::{AlignedBuf, ALIGN_BYTES};

/// Who wants a buffer: prefetching is held back by the demand reserve, demand is not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// A policy fetch ahead of the application.
    Prefetch,
    /// The application's own read.
    Demand,
}

/// The pool. See the module documentation.
#[derive(Debug)]
pub struct BufferPool {
    budget: Budget,
    demand_reserve_bytes: u64,
    /// Free buffers by capacity; their bytes are still reserved in `budget`.
    free: BTreeMap<usize, Vec<AlignedBuf>>,
    free_bytes: u64,
    /// The most bytes kept on free lists.
    free_max_bytes: u64,
    /// Bytes in buffers handed out (not on the free lists).
    lent_bytes: u64,
}

impl BufferPool {
    /// A pool of `limit` bytes, with `demand_reserve_bytes` of it kept from prefetching.
    pub fn new(limit: ByteLen, demand_reserve_bytes: u64) -> BufferPool {
        assert!(
            demand_reserve_bytes <= limit.0,
            "demand reserve {demand_reserve_bytes} over the limit {limit}"
        );
        BufferPool {
            budget: Budget::new(limit),
            demand_reserve_bytes,
            free: BTreeMap::new(),
            free_bytes: 0,
            // Keeping freed buffers is free (they count against the budget and are dropped the
            // moment a reservation needs their room) and saves zeroing and faulting fresh memory.
            free_max_bytes: limit.0,
            lent_bytes: 0,
        }
    }

    /// The capacity a buffer for `len` bytes gets: whole pages.
    pub fn capacity_for(len: u64) -> usize {
        (len.max(1).div_ceil(ALIGN_BYTES as u64) * ALIGN_BYTES as u64) as usize
    }

    /// A buffer of at least `len` bytes, or `None` if the budget (less the demand reserve, for a
    /// prefetch) has no room.
    pub fn alloc(&mut self, len: u64, purpose: Purpose) -> Option<AlignedBuf> {
        let cap = Self::capacity_for(len);
        let ceiling = match purpose {
            Purpose::Prefetch => self.budget.limit().0 - self.demand_reserve_bytes,
            Purpose::Demand => self.budget.limit().0,
        };
        if self.lent_bytes + cap as u64 > ceiling {
            return None;
        }
        // The smallest kept buffer that holds `len`, if it is at most twice the size: readahead
        // windows vary in size, and an exact match alone would leave most kept buffers unused
        // while fresh ones are zeroed and faulted in.
        let fit = self
            .free
            .range(cap..=cap.saturating_mul(2))
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
            None => {
                while !self.budget.try_reserve(ByteLen(cap as u64)) {
                    if !self.drop_one_free() {
                        return None;
                    }
                }
                match AlignedBuf::new(cap) {
                    Some(b) => b,
                    None => {
                        // The allocator refused: give the reservation back and treat it as full.
                        self.budget.release(ByteLen(cap as u64));
                        return None;
                    }
                }
            }
        };
        self.lent_bytes += buf.capacity() as u64;
        self.check();
        Some(buf)
    }

    /// Takes a buffer back.
    pub fn free(&mut self, buf: AlignedBuf) {
        let cap = buf.capacity();
        assert!(
            self.lent_bytes >= cap as u64,
            "freed a buffer the pool did not lend"
        );
        self.lent_bytes -= cap as u64;
        if self.free_bytes + cap as u64 <= self.free_max_bytes {
            self.free_bytes += cap as u64;
            self.free.entry(cap).or_default().push(buf);
        } else {
            drop(buf);
            self.budget.release(ByteLen(cap as u64));
        }
        self.check();
    }

    fn drop_one_free(&mut self) -> bool {
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
    }

    /// The budget.
    pub fn limit_bytes(&self) -> u64 {
        self.budget.limit().0
    }

    /// Bytes in buffers handed out now (prefetched, in flight, or being read by the application).
    pub fn lent_bytes(&self) -> u64 {
        self.lent_bytes
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

    proptest! {
        #[test]
        fn never_holds_more_than_the_limit(
            limit_pages in 1u64..64,
            ops in prop::collection::vec((any::<bool>(), 1u64..20_000, any::<bool>()), 0..200),
        ) {
            let limit = limit_pages * 4096;
            let mut p = BufferPool::new(ByteLen(limit), limit / 4 / 4096 * 4096);
            let mut held = vec![];
            for (alloc, len, demand) in ops {
                if alloc {
                    let purpose = if demand { Purpose::Demand } else { Purpose::Prefetch };
                    if let Some(b) = p.alloc(len, purpose) {
                        held.push(b);
                    }
                } else if let Some(b) = held.pop() {
                    p.free(b);
                }
                prop_assert!(p.held_bytes() <= limit);
                prop_assert_eq!(p.lent_bytes(), held.iter().map(|b| b.capacity() as u64).sum::<u64>());
            }
        }
    }
}
