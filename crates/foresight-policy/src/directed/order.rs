//! Order: the window sorted by physical position, served in one elevator sweep.
//!
//! Paper 003_eb9cef22f2823582.txt, section III ("Seek Performance"): a disk scheduler reorders only
//! the few requests already queued, but a prefetcher told its future reads may reorder all of those
//! that fit in its memory, and the more it reorders the shorter the mean seek. Every admitted, not
//! yet fetched read is kept in an ordered set keyed by its physical position, `(disk, byte offset
//! on that disk)` from [`crate::Layout::locate`]; the next fetch starts at the first position at or
//! after the head, and when nothing is left ahead of the head the sweep starts over from the lowest
//! position (C-SCAN), so reads admitted behind the head wait for the next sweep instead of pulling
//! the arm back.

use std::collections::BTreeSet;

use foresight_core::{ByteOffset, FileId};

use crate::Layout;

/// Where a file byte lives: `(disk, offset on that disk)`. Bytes past the end of their file sort
/// last.
pub type PhysKey = (u32, u64);

/// The physical key of byte `offset` of `file`.
pub fn phys_key(layout: &Layout, file: FileId, offset: u64) -> PhysKey {
    match layout.locate(file, ByteOffset(offset)) {
        Some(l) => (l.disk, l.disk_offset.0),
        None => (u32::MAX, offset),
    }
}

/// The reads waiting to be fetched, in physical order, and the sweep's head.
#[derive(Clone, Debug, Default)]
pub struct Elevator {
    pending: BTreeSet<(PhysKey, u64)>,
    head: PhysKey,
}

impl Elevator {
    /// Adds read `seq` at `key`.
    pub fn insert(&mut self, key: PhysKey, seq: u64) {
        let fresh = self.pending.insert((key, seq));
        assert!(fresh, "read {seq} queued twice");
    }

    /// Removes read `seq` at `key`; returns whether it was there.
    pub fn remove(&mut self, key: PhysKey, seq: u64) -> bool {
        self.pending.remove(&(key, seq))
    }

    /// Reads waiting.
    pub fn len(&self) -> usize {
        self.pending.len()
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// The next read of the sweep: the first at or after the head, else the first of all (a new
    /// sweep). It stays queued until [`Elevator::remove`].
    pub fn next(&self) -> Option<(PhysKey, u64)> {
        self.pending
            .range((self.head, 0)..)
            .next()
            .or_else(|| self.pending.iter().next())
            .copied()
    }

    /// The read that follows `(key, seq)` in physical order, if any (no wrap-around).
    pub fn after(&self, key: PhysKey, seq: u64) -> Option<(PhysKey, u64)> {
        use std::ops::Bound::{Excluded, Unbounded};
        self.pending
            .range((Excluded((key, seq)), Unbounded))
            .next()
            .copied()
    }

    /// Whether the next read of the sweep lies behind the head (the sweep would start over).
    pub fn would_wrap(&self) -> bool {
        !self.pending.is_empty() && self.pending.range((self.head, 0)..).next().is_none()
    }

    /// Starts a new sweep from the lowest position.
    pub fn restart(&mut self) {
        self.head = (0, 0);
    }

    /// Moves the head to `key` (the end of what was just sent to the disk).
    pub fn set_head(&mut self, key: PhysKey) {
        self.head = key;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweeps_up_then_wraps_around() {
        let mut e = Elevator::default();
        for (i, off) in [50u64, 10, 90, 30].into_iter().enumerate() {
            e.insert((0, off), i as u64);
        }
        e.set_head((0, 40));
        let mut order = vec![];
        while let Some((k, s)) = e.next() {
            order.push(k.1);
            e.remove(k, s);
            e.set_head(k);
        }
        assert_eq!(order, vec![50, 90, 10, 30]);
        assert!(e.is_empty());
    }

    #[test]
    fn keys_follow_the_layout() {
        let layout = Layout::unplaced(&[foresight_core::ByteLen::mib(1)]);
        assert!(phys_key(&layout, FileId(0), 4096) < phys_key(&layout, FileId(0), 8192));
        assert_eq!(phys_key(&layout, FileId(0), 1 << 30).0, u32::MAX);
    }
}
