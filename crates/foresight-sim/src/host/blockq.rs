//! The host block queue: requests on their way from the page cache to the device.
//!
//! Adjacent requests of the same kind merge (front or back) up to `max_request`, as Linux's block
//! layer merges bios. Two schedulers pick what the device gets next. `noop` serves in arrival order.
//! `deadline` serves in ascending LBA order from where the head last was, in batches of
//! [`FIFO_BATCH`]; when a batch ends, or the sweep runs off the top, a request older than
//! `read_expire` is served first (Linux `mq-deadline`: sorted dispatch with a FIFO expiry check).
//! The queue holds at most `limit` requests; callers check [`BlockQueue::is_full`] before pushing.
//! Within that, Linux allots `nr_requests` request slots (default 128): a part that merges into a
//! queued request needs no slot, any other waits outside the scheduler's view until one frees
//! ([`BlockQueue::try_push`]), so the elevator sorts at most `nr_requests` requests at a time.

use foresight_core::{Duration, Instant};
use foresight_device::Op;
use smallvec::SmallVec;

use crate::config::Scheduler;

/// Requests served in sorted order before the deadline scheduler checks for expired ones
/// (Linux mq-deadline's `fifo_batch` default).
pub const FIFO_BATCH: u32 = 16;

/// One request in the queue, possibly several merged.
#[derive(Clone, Debug)]
pub struct BlockReq {
    /// Identity given at creation; the device echoes it.
    pub id: u64,
    /// Read or write.
    pub op: Op,
    /// First sector on the volume.
    pub lba: u64,
    /// Sectors.
    pub sectors: u32,
    /// When the oldest merged part arrived.
    pub arrival: Instant,
    /// The driver's tokens for the parts merged into this request.
    pub tokens: SmallVec<[u32; 4]>,
}

/// The queue. See the module documentation.
#[derive(Debug)]
pub struct BlockQueue {
    scheduler: Scheduler,
    max_sectors: u32,
    read_expire: Duration,
    limit: usize,
    slots: usize,
    pending: Vec<BlockReq>,
    head_lba: u64,
    batch_left: u32,
    next_id: u64,
    merges: u64,
}

impl BlockQueue {
    /// A queue holding at most `limit` requests of at most `max_sectors` each.
    pub fn new(
        scheduler: Scheduler,
        max_sectors: u32,
        read_expire: Duration,
        limit: usize,
    ) -> Self {
        assert!(max_sectors >= 8 && limit >= 1, "bad block queue bounds");
        BlockQueue {
            scheduler,
            max_sectors,
            read_expire,
            limit,
            slots: limit,
            pending: Vec::with_capacity(limit),
            head_lba: 0,
            batch_left: 0,
            next_id: 0,
            merges: 0,
        }
    }

    /// The same queue with `slots` request slots (Linux `nr_requests`): [`BlockQueue::try_push`]
    /// refuses an unmergeable part once that many requests are queued.
    pub fn with_slots(mut self, slots: usize) -> Self {
        assert!(
            slots >= 1 && slots <= self.limit,
            "nr_requests {slots} outside 1..={}",
            self.limit
        );
        self.slots = slots;
        self
    }

    /// Requests waiting.
    pub fn len(&self) -> usize {
        self.pending.len()
    }

    /// Whether no request waits.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Whether another unmergeable request would exceed the bound.
    pub fn is_full(&self) -> bool {
        self.pending.len() >= self.limit
    }

    /// The most requests the queue holds.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Merges performed so far.
    pub fn merges(&self) -> u64 {
        self.merges
    }

    /// The largest request, in sectors.
    pub fn max_sectors(&self) -> u32 {
        self.max_sectors
    }

    /// Adds a request of at most `max_sectors`, merging it with a neighbour when possible.
    pub fn push(&mut self, now: Instant, op: Op, lba: u64, sectors: u32, token: u32) {
        let slots = self.slots;
        self.slots = self.limit;
        let taken = self.try_push(now, op, lba, sectors, token);
        self.slots = slots;
        assert!(taken, "block queue over its bound of {}", self.limit);
    }

    /// Adds a request as [`BlockQueue::push`] does, unless it merges with nothing and every
    /// request slot is taken: then it changes nothing and returns false.
    pub fn try_push(&mut self, now: Instant, op: Op, lba: u64, sectors: u32, token: u32) -> bool {
        assert!(
            sectors >= 1 && sectors <= self.max_sectors,
            "request of {sectors} sectors"
        );
        for r in self.pending.iter_mut() {
            if r.op != op || r.sectors + sectors > self.max_sectors {
                continue;
            }
            if r.lba + r.sectors as u64 == lba {
                r.sectors += sectors;
                r.tokens.push(token);
                self.merges += 1;
                return true;
            }
            if lba + sectors as u64 == r.lba {
                r.lba = lba;
                r.sectors += sectors;
                r.tokens.push(token);
                self.merges += 1;
                return true;
            }
        }
        if self.pending.len() >= self.slots {
            return false;
        }
        assert!(
            !self.is_full(),
            "block queue over its bound of {}",
            self.limit
        );
        let id = self.next_id;
        self.next_id += 1;
        let mut tokens = SmallVec::new();
        tokens.push(token);
        self.pending.push(BlockReq {
            id,
            op,
            lba,
            sectors,
            arrival: now,
            tokens,
        });
        true
    }

    /// Takes the request the device should get next.
    pub fn pop(&mut self, now: Instant) -> Option<BlockReq> {
        if self.pending.is_empty() {
            return None;
        }
        let idx = match self.scheduler {
            Scheduler::Noop => self.oldest(),
            Scheduler::Deadline => {
                let oldest = self.oldest();
                let expired =
                    now.saturating_since(self.pending[oldest].arrival) >= self.read_expire;
                let next_up = self
                    .pending
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| r.lba >= self.head_lba)
                    .min_by_key(|(_, r)| (r.lba, r.id))
                    .map(|(i, _)| i);
                let pick = if self.batch_left == 0 {
                    // A batch starts: an expired request goes first, else the sweep goes on.
                    self.batch_left = FIFO_BATCH;
                    if expired {
                        oldest
                    } else {
                        next_up.unwrap_or(oldest)
                    }
                } else {
                    next_up.unwrap_or_else(|| {
                        // The sweep ran off the top: a new batch starts at the oldest request.
                        self.batch_left = FIFO_BATCH;
                        oldest
                    })
                };
                self.batch_left -= 1;
                pick
            }
        };
        let r = self.pending.swap_remove(idx);
        self.head_lba = r.lba + r.sectors as u64;
        Some(r)
    }

    fn oldest(&self) -> usize {
        self.pending
            .iter()
            .enumerate()
            .min_by_key(|(_, r)| r.id)
            .map(|(i, _)| i)
            .expect("non-empty")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_adjacent_requests_up_to_the_limit() {
        let mut q = BlockQueue::new(Scheduler::Noop, 24, Duration::from_millis(500), 8);
        q.push(Instant(0), Op::Read, 100, 8, 1);
        q.push(Instant(0), Op::Read, 108, 8, 2);
        q.push(Instant(0), Op::Read, 116, 8, 3);
        // Would make 32 sectors: over the limit, so it stays apart.
        q.push(Instant(0), Op::Read, 92, 8, 4);
        q.push(Instant(0), Op::Read, 84, 8, 5);
        assert_eq!(q.len(), 2);
        assert_eq!(q.merges(), 3);
        let r = q.pop(Instant(0)).unwrap();
        assert_eq!(
            (r.lba, r.sectors, r.tokens.as_slice()),
            (100, 24, &[1, 2, 3][..])
        );
        let r = q.pop(Instant(0)).unwrap();
        assert_eq!(
            (r.lba, r.sectors, r.tokens.as_slice()),
            (84, 16, &[4, 5][..])
        );
    }

    #[test]
    fn a_full_set_of_slots_refuses_new_requests_but_takes_merges() {
        let mut q =
            BlockQueue::new(Scheduler::Deadline, 64, Duration::from_millis(500), 16).with_slots(2);
        assert!(q.try_push(Instant(0), Op::Read, 100, 8, 1));
        assert!(q.try_push(Instant(0), Op::Read, 500, 8, 2));
        assert!(!q.try_push(Instant(0), Op::Read, 900, 8, 3), "no slot left");
        assert!(
            q.try_push(Instant(0), Op::Read, 108, 8, 4),
            "a merge needs no slot"
        );
        assert_eq!((q.len(), q.merges()), (2, 1));
        q.pop(Instant(0)).unwrap();
        assert!(q.try_push(Instant(0), Op::Read, 900, 8, 3), "a slot freed");
    }

    #[test]
    fn deadline_sweeps_upward_then_serves_the_oldest() {
        let mut q = BlockQueue::new(Scheduler::Deadline, 8, Duration::from_millis(500), 16);
        for (i, lba) in [500u64, 100, 300, 50].into_iter().enumerate() {
            q.push(Instant(0), Op::Read, lba, 8, i as u32);
        }
        let order: Vec<u64> = std::iter::from_fn(|| q.pop(Instant(0)).map(|r| r.lba)).collect();
        // First pick: the sweep starts at LBA 0, so the lowest; then upward; nothing is left below.
        assert_eq!(order, vec![50, 100, 300, 500]);
        for (i, lba) in [900u64, 100, 950].into_iter().enumerate() {
            q.push(Instant(0), Op::Read, lba, 8, i as u32);
        }
        // Head is past 500: 900 and 950 come first, then the sweep wraps to the oldest left (100).
        let order: Vec<u64> = std::iter::from_fn(|| q.pop(Instant(1)).map(|r| r.lba)).collect();
        assert_eq!(order, vec![900, 950, 100]);
    }

    #[test]
    fn deadline_serves_an_expired_request_first() {
        let mut q = BlockQueue::new(Scheduler::Deadline, 8, Duration::from_millis(500), 32);
        q.push(Instant(0), Op::Read, 10, 8, 0);
        assert_eq!(q.pop(Instant(0)).unwrap().lba, 10);
        q.push(Instant(0), Op::Read, 5, 8, 1);
        for i in 0..20u64 {
            q.push(Instant(0), Op::Read, 1000 + 100 * i, 8, 2);
        }
        let late = Instant(600_000_000);
        let mut order = vec![];
        while let Some(r) = q.pop(late) {
            order.push(r.lba);
        }
        let pos = order.iter().position(|&l| l == 5).unwrap();
        assert!(
            pos <= FIFO_BATCH as usize,
            "expired request served at {pos}: {order:?}"
        );
    }
}
