//! A CFQ-like block queue: one queue per issuing thread, served in time slices.
//!
//! Linux's CFQ (the scheduler paper 004_80004320b985afc3.txt section 3.2.1 runs every server on)
//! gives each thread that submits I/O its own queue and lets one queue at a time dispatch for a time
//! slice (`slice_sync`, 100 ms in Linux). When the active queue runs dry, CFQ idles for
//! `slice_idle` (8 ms) in case the same thread submits again: a thread reading one file
//! sequentially keeps the disk to itself and the head stays put. When the slice ends, or the idle
//! wait expires with nothing new, the next queue with requests gets the disk, round robin by owner.
//! This is exactly what makes a shared request queue slow (Fig. 5 of the paper): a server worker that
//! picks a different stream's request each time still owns the slice, and every request seeks.
//!
//! Two refinements of Linux's CFQ matter here. A queue whose recent requests were mostly seeks
//! (`CFQQ_SEEKY`) gets no idle wait, since waiting for it saves nothing. And when the active queue
//! runs dry and another non-seeky queue has a request right where the head is (a "close
//! cooperator", several threads reading one file), that queue gets the disk at once for the rest of
//! the slice. Owners' queues live for the whole run (one per thread, so their number is bounded by
//! the threads), as a thread's CFQ queue keeps its seek history.
//!
//! Within a queue, requests merge with a contiguous neighbour up to `max_sectors` and are served
//! in ascending sector order from where the queue last left the head, as CFQ's per-queue sort tree
//! does. The queue holds at most `limit` requests in all; callers check [`Cfq::is_full`].

use std::collections::BTreeMap;
use std::collections::VecDeque;

use foresight_core::{Duration, Instant};
use smallvec::SmallVec;

/// How near (in sectors) another queue's request must be to where the active queue left the head
/// for CFQ to hand it the disk instead of idling (Linux `CFQQ_CLOSE_THR`, 8192 sectors).
pub const CLOSE_SECTORS: u64 = 8192;
/// A dispatch further than this (in sectors) from the queue's previous one counts as a seek
/// (Linux `CFQQ_SEEK_THR`, 800 sectors).
pub const SEEK_SECTORS: u64 = 800;

/// One request, possibly several merged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CfqReq {
    /// The thread that submitted it.
    pub owner: u32,
    /// First sector.
    pub lba: u64,
    /// Sectors.
    pub sectors: u32,
    /// The driver's tokens for the parts merged into it.
    pub tokens: SmallVec<[u32; 4]>,
}

#[derive(Debug, Default)]
struct OwnerQueue {
    pending: VecDeque<CfqReq>,
    in_flight: u32,
    next_lba: u64,
    /// One bit per recent dispatch, 1 when it landed far from the previous one (CFQ's
    /// `seek_history`).
    seek_history: u32,
}

impl OwnerQueue {
    /// CFQ's `CFQQ_SEEKY`: more than 4 of the last 32 dispatches were seeks.
    fn seeky(&self) -> bool {
        self.seek_history.count_ones() > 4
    }
}

/// The scheduler's time figures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CfqTimes {
    /// How long one queue may dispatch before the next gets a turn.
    pub slice: Duration,
    /// How long to wait for the active queue's next request once it runs dry (0 = never wait).
    pub idle: Duration,
}

/// The queue. See the module documentation.
#[derive(Debug)]
pub struct Cfq {
    times: CfqTimes,
    max_sectors: u32,
    limit: usize,
    len: usize,
    queues: BTreeMap<u32, OwnerQueue>,
    active: Option<u32>,
    last_served: Option<u32>,
    slice_end: Instant,
    idle_until: Option<Instant>,
    switches: u64,
    merges: u64,
}

impl Cfq {
    /// A queue of at most `limit` requests of at most `max_sectors` sectors each.
    pub fn new(times: CfqTimes, max_sectors: u32, limit: usize) -> Cfq {
        assert!(max_sectors >= 8 && limit >= 1, "bad CFQ bounds");
        assert!(times.slice.0 > 0, "a CFQ slice lasts some time");
        Cfq {
            times,
            max_sectors,
            limit,
            len: 0,
            queues: BTreeMap::new(),
            active: None,
            last_served: None,
            slice_end: Instant(0),
            idle_until: None,
            switches: 0,
            merges: 0,
        }
    }

    /// Requests waiting (not dispatched).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether another unmergeable request would exceed the bound.
    pub fn is_full(&self) -> bool {
        self.len >= self.limit
    }

    /// Times the disk went from one owner to another.
    pub fn switches(&self) -> u64 {
        self.switches
    }

    /// Merges performed.
    pub fn merges(&self) -> u64 {
        self.merges
    }

    /// The largest request in sectors.
    pub fn max_sectors(&self) -> u32 {
        self.max_sectors
    }

    /// Adds a request from `owner`, merging it with a contiguous one of the same owner if it fits.
    pub fn push(&mut self, owner: u32, lba: u64, sectors: u32, token: u32) {
        assert!(
            sectors >= 1 && sectors <= self.max_sectors,
            "request of {sectors} sectors"
        );
        let q = self.queues.entry(owner).or_default();
        for r in q.pending.iter_mut() {
            if r.sectors + sectors > self.max_sectors {
                continue;
            }
            if r.lba + r.sectors as u64 == lba {
                r.sectors += sectors;
                r.tokens.push(token);
                self.merges += 1;
                return;
            }
            if lba + sectors as u64 == r.lba {
                r.lba = lba;
                r.sectors += sectors;
                r.tokens.push(token);
                self.merges += 1;
                return;
            }
        }
        assert!(
            self.len < self.limit,
            "CFQ queue over its bound of {}",
            self.limit
        );
        q.pending.push_back(CfqReq {
            owner,
            lba,
            sectors,
            tokens: SmallVec::from_elem(token, 1),
        });
        self.len += 1;
        if self.active == Some(owner) {
            // The thread we idled for came back.
            self.idle_until = None;
        }
    }

    /// The next request for the device at `now`, if the scheduler lets one go.
    pub fn pop(&mut self, now: Instant) -> Option<CfqReq> {
        if let Some(a) = self.active {
            let q = &self.queues[&a];
            let no_idle = self.times.idle.0 == 0;
            if q.pending.is_empty() && !no_idle && !q.seeky() {
                // CFQ's close cooperator: a queue with a request right where this one left the
                // head gets the disk at once instead of the idle wait (threads sharing one
                // sequential file).
                let head = q.next_lba;
                let coop = self
                    .queues
                    .iter()
                    .find(|(&o, c)| {
                        o != a
                            && !c.seeky()
                            && c.pending
                                .iter()
                                .any(|r| r.lba.abs_diff(head) <= CLOSE_SECTORS)
                    })
                    .map(|(&o, _)| o);
                if let Some(o) = coop {
                    self.last_served = Some(a);
                    // The cooperator inherits what is left of the slice, so a stream that
                    // hops between threads still yields the disk when the slice ends.
                    self.active = Some(o);
                    self.idle_until = None;
                    self.switches += 1;
                }
            }
        }
        if let Some(a) = self.active {
            let q = &self.queues[&a];
            let dry = q.pending.is_empty();
            let expired = now >= self.slice_end;
            // A seeky thread gets no idle window: waiting for it saves no seek.
            let no_idle = self.times.idle.0 == 0 || q.seeky();
            let idle_over = no_idle || self.idle_until.is_some_and(|t| now >= t);
            let others_wait = self.len > q.pending.len();
            // Without idling (an SSD) a dry queue gives the disk up at once, even with requests
            // in flight, as CFQ does on non-rotational devices that queue commands.
            if (expired && others_wait) || (dry && (q.in_flight == 0 || no_idle) && idle_over) {
                self.last_served = Some(a);
                self.active = None;
                self.idle_until = None;
            } else if expired {
                // Nobody else wants the disk: the slice is renewed.
                self.slice_end = now + self.times.slice;
            }
        }
        if self.active.is_none() {
            let from = self.last_owner_after();
            let next = self
                .queues
                .range(from..)
                .chain(self.queues.range(..from))
                .find(|(_, q)| !q.pending.is_empty())
                .map(|(&o, _)| o)?;
            self.active = Some(next);
            self.slice_end = now + self.times.slice;
            self.idle_until = None;
            self.switches += 1;
        }
        let a = self.active.expect("an active queue");
        let q = self.queues.get_mut(&a).expect("active queue exists");
        if q.pending.is_empty() {
            return None;
        }
        // Ascending from where this queue left the head, wrapping to the lowest.
        let pick = q
            .pending
            .iter()
            .enumerate()
            .filter(|(_, r)| r.lba >= q.next_lba)
            .min_by_key(|(_, r)| r.lba)
            .or_else(|| q.pending.iter().enumerate().min_by_key(|(_, r)| r.lba))
            .map(|(i, _)| i)
            .expect("non-empty queue");
        let r = q.pending.remove(pick).expect("picked request");
        let seek = r.lba.abs_diff(q.next_lba) > SEEK_SECTORS;
        q.seek_history = (q.seek_history << 1) | u32::from(seek);
        q.next_lba = r.lba + r.sectors as u64;
        q.in_flight += 1;
        self.len -= 1;
        Some(r)
    }

    /// Round robin: the search for the next queue starts after the owner that had the disk last.
    fn last_owner_after(&self) -> u32 {
        self.last_served.map_or(0, |o| o.wrapping_add(1))
    }

    /// A request of `owner` finished at `now`.
    pub fn complete(&mut self, now: Instant, owner: u32) {
        let q = self
            .queues
            .get_mut(&owner)
            .expect("completion of a known owner");
        assert!(
            q.in_flight > 0,
            "owner {owner} completed more than it dispatched"
        );
        q.in_flight -= 1;
        if self.active == Some(owner) && q.in_flight == 0 && q.pending.is_empty() {
            self.idle_until = Some(now + self.times.idle);
        }
    }

    /// When the driver should call `pop` again even if nothing else happens: the end of an idle
    /// wait or of the active slice.
    pub fn next_timer(&self) -> Option<Instant> {
        self.active?;
        match self.idle_until {
            Some(t) => Some(t.min(self.slice_end)),
            None if self.len > 0 => Some(self.slice_end),
            None => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfq(idle_ms: u64) -> Cfq {
        Cfq::new(
            CfqTimes {
                slice: Duration::from_millis(100),
                idle: Duration::from_millis(idle_ms),
            },
            1024,
            64,
        )
    }

    #[test]
    fn active_owner_keeps_the_disk_while_it_idles() {
        let mut q = cfq(8);
        q.push(1, 0, 8, 0);
        q.push(2, 1_000_000, 8, 1);
        let r = q.pop(Instant(0)).unwrap();
        assert_eq!(r.owner, 1);
        // Owner 1's request is in flight: owner 2 waits.
        assert!(q.pop(Instant(1)).is_none());
        q.complete(Instant(1_000_000), 1);
        // Within the idle window owner 1 may come back and is served first.
        assert!(q.pop(Instant(2_000_000)).is_none());
        assert_eq!(q.next_timer(), Some(Instant(9_000_000)));
        q.push(1, 8, 8, 2);
        assert_eq!(q.pop(Instant(3_000_000)).unwrap().owner, 1);
        q.complete(Instant(4_000_000), 1);
        // The idle wait expires: owner 2 gets its turn.
        assert_eq!(q.pop(Instant(12_000_000)).unwrap().owner, 2);
        assert_eq!(q.switches(), 2);
    }

    #[test]
    fn no_idling_switches_at_once() {
        let mut q = cfq(0);
        q.push(1, 0, 8, 0);
        q.push(2, 1_000_000, 8, 1);
        assert_eq!(q.pop(Instant(0)).unwrap().owner, 1);
        q.complete(Instant(10), 1);
        assert_eq!(q.pop(Instant(10)).unwrap().owner, 2);
    }

    #[test]
    fn slice_expiry_hands_over_when_others_wait() {
        let mut q = cfq(8);
        for i in 0..4 {
            q.push(1, i * 8, 8, i as u32);
        }
        q.push(2, 1_000_000, 8, 9);
        // Contiguous requests of one owner merge into one.
        assert_eq!(q.len(), 2);
        assert_eq!(q.merges(), 3);
        let r = q.pop(Instant(0)).unwrap();
        assert_eq!((r.owner, r.sectors, r.tokens.len()), (1, 32, 4));
        q.complete(Instant(1), 1);
        q.push(1, 32, 8, 5);
        // The slice (100 ms) is over: owner 2 goes next although owner 1 has work.
        assert_eq!(q.pop(Instant(200_000_000)).unwrap().owner, 2);
    }

    #[test]
    fn requests_go_in_ascending_order_within_a_queue() {
        let mut q = cfq(8);
        q.push(1, 800, 8, 0);
        q.push(1, 100, 8, 1);
        q.push(1, 400, 8, 2);
        let order: Vec<u64> = (0..3).map(|_| q.pop(Instant(0)).unwrap().lba).collect();
        assert_eq!(order, vec![100, 400, 800]);
    }
}

#[cfg(test)]
mod cooperator_tests {
    use super::*;

    #[test]
    fn a_close_request_of_another_owner_skips_the_idle_wait() {
        let mut q = Cfq::new(
            CfqTimes {
                slice: Duration::from_millis(100),
                idle: Duration::from_millis(8),
            },
            1024,
            64,
        );
        q.push(1, 0, 1024, 0);
        q.push(2, 1024, 1024, 1);
        q.push(3, 10_000_000, 8, 2);
        assert_eq!(q.pop(Instant(0)).unwrap().owner, 1);
        q.complete(Instant(5), 1);
        // Owner 2 continues where owner 1 left the head; owner 3 is far away and waits.
        assert_eq!(q.pop(Instant(6)).unwrap().owner, 2);
    }
}

#[cfg(test)]
mod prop {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Every request pushed comes out exactly once, whatever the owners, positions and idle
        /// settings, as long as the driver keeps completing what it dispatched and calling `pop` at
        /// the timers. (proptest prints the failing case and its seed.)
        #[test]
        fn every_token_is_dispatched_once(
            reqs in proptest::collection::vec((0u32..6, 0u64..100_000, 1u32..64), 1..80),
            idle_ms in 0u64..10,
        ) {
            let mut q = Cfq::new(
                CfqTimes { slice: Duration::from_millis(20), idle: Duration::from_millis(idle_ms) },
                1024,
                1024,
            );
            for (i, (owner, lba, sectors)) in reqs.iter().enumerate() {
                q.push(*owner, *lba * 8, *sectors, i as u32);
            }
            let mut seen = vec![0u32; reqs.len()];
            let mut now = Instant(0);
            let mut steps = 0;
            while !q.is_empty() {
                steps += 1;
                prop_assert!(steps < 10_000, "the queue never drained");
                match q.pop(now) {
                    Some(r) => {
                        for t in &r.tokens {
                            seen[*t as usize] += 1;
                        }
                        now += Duration::from_micros(100);
                        q.complete(now, r.owner);
                    }
                    None => {
                        let t = q.next_timer();
                        prop_assert!(t.is_some(), "requests wait but no timer is set");
                        now = now.max(t.unwrap_or(now));
                    }
                }
            }
            prop_assert!(seen.iter().all(|&n| n == 1), "{seen:?}");
        }
    }
}
