//! The host block queue: requests on their way from the page cache to the device. The simulator's
//! volume and the engine's emulated backend both put one in front of each member disk, so it lives
//! here, beside the device models, rather than in either.
//!
//! Adjacent requests of the same kind merge (front or back) up to `max_request`, as Linux's block
//! layer merges bios. Three schedulers pick what the device gets next. `noop` serves in arrival order.
//! `deadline` serves in ascending LBA order from where the head last was, in batches of
//! [`FIFO_BATCH`]; when a batch ends, or the sweep runs off the top, a request older than
//! `read_expire` is served first (Linux `mq-deadline`: sorted dispatch with a FIFO expiry check).
//! The queue holds at most `limit` requests; callers check [`BlockQueue::is_full`] before pushing.
//! Within that, Linux allots `nr_requests` request slots (default 128): a part that merges into a
//! queued request needs no slot, any other waits outside the scheduler's view until one frees
//! ([`BlockQueue::try_push`]), so the elevator sorts at most `nr_requests` requests at a time.
//!
//! `anticipatory` (Linux 2.6's as-iosched, which paper 000_a596543dd26dac72.txt section 5.1 ran) picks
//! a candidate exactly as `deadline` does, but after serving a read it may hold the disk idle for the
//! process that issued it (here: the stream a request is tagged with), betting that the process will
//! soon ask for the data right after what it just read. The rule, per queue: once a read of stream S
//! is dispatched, the next candidate of another stream is held back ("anticipation") unless S already
//! has a request queued on any member, the candidate lies close to where the head is (within
//! [`CLOSE_SECTORS`] ahead or half that behind, a window that doubles every millisecond of waiting,
//! or nearer than S's mean seek distance from one request to its next), S's mean think time (from one of its reads completing to its next request) exceeds
//! `antic_expire`, or the oldest request has passed `read_expire`. The wait is timed from the
//! completion of S's read on this disk: a new request from S in that time ends it and is dispatched
//! at once; otherwise, `antic_expire` after the completion, the queue dispatches its candidate and
//! does not anticipate again before that dispatch. While a queue waits for S, S may queue a request
//! even with every request slot taken (Linux's `ELV_MQUEUE_MUST`). Since nothing else is dispatched
//! while S's read is on the disk, anticipation keeps one request at a time in a command-queueing
//! drive. Simplifications: Linux also gives up on processes that exited, where the simulator's
//! streams never exit mid-run and the engine's closed readers are forgotten once their requests
//! are done and no queue bets on them ([`Owners::forget`], [`BlockQueue::bets_on`]), and estimates new processes from earlier ones, where a stream
//! here without samples is simply waited for.
//! Think times are kept per stream across every member queue ([`Owners`]), as Linux keeps them per
//! process; reads and writes share one sorted queue, as under `deadline` here (the workloads that
//! anticipate read only).

use foresight_core::{Duration, Instant};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::Op;

/// The host block-queue scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scheduler {
    /// First come, first served (with merging).
    Noop,
    /// Sorted one-way sweeps with a read deadline, like Linux's deadline/mq-deadline.
    Deadline,
    /// Deadline's order, plus waiting up to `antic_expire` after a stream's read for that
    /// stream's next request, like Linux 2.6's anticipatory scheduler.
    Anticipatory,
}

/// Requests served in sorted order before the deadline scheduler checks for expired ones
/// (Linux mq-deadline's `fifo_batch` default).
pub const FIFO_BATCH: u32 = 16;

/// Sectors ahead of the head within which another stream's request ends an anticipation at once,
/// half as many behind (Linux as-iosched's `as_close_req`: 8192 sectors, doubled each jiffy of
/// waiting; a jiffy is taken as 1 ms here, Linux's `HZ = 1000`).
pub const CLOSE_SECTORS: u64 = 8192;

/// The longest think-time sample counted: one long pause (a stream that was starved for a while)
/// should not stop anticipation for it for long.
pub const THINK_CAP: Duration = Duration::from_millis(20);

/// A seek-distance sample counts at most this much beyond four times the mean so far, sectors.
pub const SEEK_CAP_SECTORS: u64 = 1 << 17;

/// What the anticipatory scheduler knows about each stream, shared by every member queue of a
/// volume (Linux keeps it per process, across devices). One entry per stream that issued I/O.
#[derive(Debug, Default)]
pub struct Owners {
    by_owner: FxHashMap<u32, OwnerStats>,
}

#[derive(Clone, Copy, Debug, Default)]
struct OwnerStats {
    /// Requests of this stream in some block queue, not yet dispatched.
    queued: u32,
    /// Requests dispatched to a disk and not completed.
    in_device: u32,
    /// When one of its requests last completed.
    last_done: Option<Instant>,
    /// Decaying think-time sums: each new sample weighs 1, earlier ones 7/8 of what they weighed
    /// (as-iosched's `ttime_samples` decay).
    think_weight: f64,
    think_total_ns: f64,
    /// The sector after its last request, on whichever member it went to (Linux tracks a process's
    /// position across devices too; a RAID-0 stream's member addresses advance together).
    last_end: Option<u64>,
    /// Decaying seek-distance sums, sectors, weighted as the think times.
    seek_weight: f64,
    seek_total: f64,
}

impl Owners {
    /// A new request of `owner` for `sectors` at `lba` entered a queue at `now` (not a merge).
    fn queued(&mut self, now: Instant, owner: u32, lba: u64, sectors: u32) {
        let o = self.by_owner.entry(owner).or_default();
        if let Some(end) = o.last_end {
            // One far jump (a new file) should not make a sequential stream look random for long.
            let mean = if o.seek_weight > 0.0 {
                o.seek_total / o.seek_weight
            } else {
                0.0
            };
            let dist = (lba.abs_diff(end) as f64).min(4.0 * mean + SEEK_CAP_SECTORS as f64);
            o.seek_weight = o.seek_weight * 7.0 / 8.0 + 1.0;
            o.seek_total = o.seek_total * 7.0 / 8.0 + dist;
        }
        o.last_end = Some(lba + sectors as u64);
        if let Some(done) = o.last_done {
            // Think time: from the last completion to this request, when the stream had nothing
            // else waiting (a stream with a request queued is not thinking).
            let think = if o.queued == 0 {
                now.saturating_since(done).min(THINK_CAP)
            } else {
                Duration::ZERO
            };
            o.think_weight = o.think_weight * 7.0 / 8.0 + 1.0;
            o.think_total_ns = o.think_total_ns * 7.0 / 8.0 + think.as_nanos() as f64;
        }
        o.queued += 1;
    }

    fn dispatched(&mut self, owner: u32) {
        let o = self.by_owner.get_mut(&owner).expect("a queued owner");
        assert!(
            o.queued > 0,
            "stream {owner} dispatched more than it queued"
        );
        o.queued -= 1;
        o.in_device += 1;
    }

    fn completed(&mut self, now: Instant, owner: u32) {
        let o = self.by_owner.get_mut(&owner).expect("a dispatched owner");
        assert!(
            o.in_device > 0,
            "stream {owner} completed more than it dispatched"
        );
        o.in_device -= 1;
        o.last_done = Some(now);
    }

    /// Drops what is known about `owner`, if none of its requests is queued or on a disk, and
    /// says whether it did. A caller that gives a stream's id to a new stream (the engine's
    /// closed readers) retires the old one this way once its requests are done, so the new
    /// stream starts without samples instead of with the old one's think times and seeks.
    pub fn forget(&mut self, owner: u32) -> bool {
        match self.by_owner.get(&owner) {
            Some(o) if o.queued > 0 || o.in_device > 0 => false,
            _ => {
                self.by_owner.remove(&owner);
                true
            }
        }
    }

    /// Requests of `owner` queued on any member.
    pub fn queued_of(&self, owner: u32) -> u32 {
        self.by_owner.get(&owner).map_or(0, |o| o.queued)
    }

    /// The stream's mean distance, in sectors, from the end of one request to the start of its
    /// next, if it has been measured.
    pub fn seek_mean(&self, owner: u32) -> Option<u64> {
        let o = self.by_owner.get(&owner)?;
        (o.seek_weight > 0.0).then(|| (o.seek_total / o.seek_weight) as u64)
    }

    /// The stream's mean think time, if it has been measured.
    pub fn think_mean(&self, owner: u32) -> Option<Duration> {
        let o = self.by_owner.get(&owner)?;
        (o.think_weight > 0.0).then(|| Duration((o.think_total_ns / o.think_weight) as u64))
    }
}

/// Where the anticipatory scheduler stands (Linux's `antic_status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Antic {
    /// Not waiting; the next pop may start a wait.
    Off,
    /// Waiting, and the read waited after is still on the disk.
    WaitReq,
    /// Waiting for the stream's next request until the given instant.
    WaitNext(Instant),
    /// A wait just ended: the next pop dispatches without waiting.
    Finished,
}

/// One request in the queue, possibly several merged; `T` is the caller's token for a part.
#[derive(Clone, Debug)]
pub struct BlockReq<T = u32> {
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
    pub tokens: SmallVec<[T; 4]>,
    /// The stream that issued the first part, if known.
    pub owner: Option<u32>,
}

/// The queue, whose parts carry tokens of type `T`. See the module documentation.
#[derive(Debug)]
pub struct BlockQueue<T = u32> {
    scheduler: Scheduler,
    max_sectors: u32,
    read_expire: Duration,
    limit: usize,
    slots: usize,
    pending: Vec<BlockReq<T>>,
    head_lba: u64,
    batch_left: u32,
    next_id: u64,
    merges: u64,
    antic_expire: Duration,
    antic: Antic,
    /// The stream whose read was dispatched last, for anticipation.
    antic_owner: Option<u32>,
    /// When that read completed, if it has.
    antic_start: Option<Instant>,
    /// A request of the stream waited for, which ended the wait and goes first.
    antic_hit: Option<u64>,
    antic_waits: u64,
}

impl<T: Copy> BlockQueue<T> {
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
            // The bound is a worst case (with one-block extents, millions of requests for a
            // thousand streams); most runs queue far fewer, so the queue grows as it fills.
            pending: Vec::with_capacity(limit.min(4096)),
            head_lba: 0,
            batch_left: 0,
            next_id: 0,
            merges: 0,
            antic_expire: Duration::ZERO,
            antic: Antic::Off,
            antic_owner: None,
            antic_start: None,
            antic_hit: None,
            antic_waits: 0,
        }
    }

    /// The same queue with the anticipatory scheduler's wait (`antic_expire`; only the
    /// anticipatory scheduler waits).
    pub fn with_antic_expire(mut self, antic_expire: Duration) -> Self {
        self.antic_expire = antic_expire;
        self
    }

    /// Times the anticipatory scheduler held the disk for a stream.
    pub fn antic_waits(&self) -> u64 {
        self.antic_waits
    }

    /// Whether the queue is waiting for a request of `owner` (which may then queue past the
    /// request slots, as Linux's `ELV_MQUEUE_MUST` lets it).
    pub fn waits_for(&self, owner: Option<u32>) -> bool {
        matches!(self.antic, Antic::WaitReq | Antic::WaitNext(_))
            && owner.is_some()
            && owner == self.antic_owner
    }

    /// Whether a later [`BlockQueue::pop`] may hold the disk for `owner`: under `anticipatory`,
    /// the stream of the read dispatched last, until another is dispatched. A caller that gives
    /// a retired stream's id to a new stream waits for this to end too, or the new stream's
    /// first request would be taken for the old one's next.
    pub fn bets_on(&self, owner: Option<u32>) -> bool {
        self.anticipating() && owner.is_some() && owner == self.antic_owner
    }

    /// When the queue wants to be asked again though nothing else happens: the end of an
    /// anticipation wait with requests queued.
    pub fn timer(&self) -> Option<Instant> {
        match self.antic {
            Antic::WaitNext(until) if !self.pending.is_empty() => Some(until),
            _ => None,
        }
    }

    /// Whether [`BlockQueue::pop`] may return nothing with requests queued (the anticipatory
    /// scheduler holding the disk for a stream); other schedulers always let one go.
    pub fn may_hold_disk(&self) -> bool {
        self.anticipating()
    }

    fn anticipating(&self) -> bool {
        self.scheduler == Scheduler::Anticipatory && self.antic_expire > Duration::ZERO
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

    /// The requests waiting, in no particular order.
    pub fn queued(&self) -> impl Iterator<Item = &BlockReq<T>> {
        self.pending.iter()
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

    /// Adds a request of at most `max_sectors` from `owner`, merging it with a neighbour when
    /// possible.
    #[allow(clippy::too_many_arguments)]
    pub fn push(
        &mut self,
        now: Instant,
        op: Op,
        lba: u64,
        sectors: u32,
        token: T,
        owner: Option<u32>,
        owners: &mut Owners,
    ) {
        let slots = self.slots;
        self.slots = self.limit;
        let taken = self.try_push(now, op, lba, sectors, token, owner, owners);
        self.slots = slots;
        assert!(taken, "block queue over its bound of {}", self.limit);
    }

    /// Adds a request as [`BlockQueue::push`] does, unless it merges with nothing and every
    /// request slot is taken: then it changes nothing and returns false.
    #[allow(clippy::too_many_arguments)]
    pub fn try_push(
        &mut self,
        now: Instant,
        op: Op,
        lba: u64,
        sectors: u32,
        token: T,
        owner: Option<u32>,
        owners: &mut Owners,
    ) -> bool {
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
        let req = BlockReq {
            id,
            op,
            lba,
            sectors,
            arrival: now,
            tokens,
            owner,
        };
        if let Some(o) = owner {
            owners.queued(now, o, lba, sectors);
        }
        if self.anticipating()
            && matches!(self.antic, Antic::WaitReq | Antic::WaitNext(_))
            && !self.worth_waiting(now, &req, owners)
        {
            // The request waited for, or one as good: the wait ends and it goes next.
            self.antic = Antic::Finished;
            self.antic_hit = Some(id);
        }
        self.pending.push(req);
        true
    }

    /// Takes the request the device should get next, if the scheduler lets one go now.
    pub fn pop(&mut self, now: Instant, owners: &mut Owners) -> Option<BlockReq<T>> {
        if self.pending.is_empty() {
            return None;
        }
        let (mut idx, batch_left) = self.pick(now);
        if self.anticipating() {
            if let Some(hit) = self.antic_hit.take() {
                if let Some(i) = self.pending.iter().position(|r| r.id == hit) {
                    idx = i;
                }
            } else {
                match self.antic {
                    Antic::WaitReq => return None,
                    Antic::WaitNext(until) if now < until => return None,
                    Antic::WaitNext(_) => self.antic = Antic::Finished,
                    Antic::Off => {
                        let oldest = self.oldest();
                        let expired =
                            now.saturating_since(self.pending[oldest].arrival) >= self.read_expire;
                        if !expired && self.worth_waiting(now, &self.pending[idx], owners) {
                            self.antic_waits += 1;
                            self.antic = match self.antic_start {
                                Some(t) => Antic::WaitNext(t + self.antic_expire),
                                None => Antic::WaitReq,
                            };
                            return None;
                        }
                    }
                    Antic::Finished => {}
                }
            }
        }
        self.batch_left = batch_left;
        let r = self.pending.swap_remove(idx);
        self.head_lba = r.lba + r.sectors as u64;
        if let Some(o) = r.owner {
            owners.dispatched(o);
        }
        // A new read starts a new bet on its stream (Linux: `as_move_to_dispatch`).
        self.antic = Antic::Off;
        self.antic_owner = if r.op == Op::Read { r.owner } else { None };
        self.antic_start = None;
        self.antic_hit = None;
        Some(r)
    }

    /// The device finished `r` at `now`.
    pub fn completed(&mut self, now: Instant, r: &BlockReq<T>, owners: &mut Owners) {
        let Some(o) = r.owner else { return };
        owners.completed(now, o);
        if self.anticipating() && Some(o) == self.antic_owner {
            // The wait is timed from the completion: the stream has its data and may ask again.
            self.antic_start = Some(now);
            if self.antic == Antic::WaitReq {
                self.antic = Antic::WaitNext(now + self.antic_expire);
            }
        }
    }

    /// Whether holding the disk for the stream of the last read beats dispatching `cand` now
    /// (the negation of Linux's `as_can_break_anticipation`, simplified as the module says).
    fn worth_waiting(&self, now: Instant, cand: &BlockReq<T>, owners: &Owners) -> bool {
        let Some(s) = self.antic_owner else {
            return false;
        };
        if cand.owner == Some(s) {
            return false;
        }
        if self
            .antic_start
            .is_some_and(|t| now >= t + self.antic_expire)
        {
            return false;
        }
        if owners.queued_of(s) > 0 {
            // It has work queued elsewhere or here already: nothing to wait for.
            return false;
        }
        let waited_ms = match (self.antic, self.antic_start) {
            (Antic::WaitNext(_), Some(t)) => now.saturating_since(t).as_nanos() / 1_000_000,
            _ => 0,
        };
        if waited_ms > 20 || Duration::from_millis(waited_ms) > self.antic_expire {
            return false;
        }
        let delta = CLOSE_SECTORS << waited_ms;
        if cand.lba + delta / 2 >= self.head_lba && cand.lba <= self.head_lba + delta {
            return false;
        }
        if owners
            .seek_mean(s)
            .is_some_and(|m| m > cand.lba.abs_diff(self.head_lba))
        {
            // The candidate is nearer than the stream's next request is likely to be (a stream
            // that reads at random is not worth waiting for).
            return false;
        }
        // A stream that thinks longer than the wait would not ask in time.
        owners.think_mean(s).is_none_or(|t| t <= self.antic_expire)
    }

    /// The candidate by the scheduler's order, and the batch count after serving it.
    fn pick(&self, now: Instant) -> (usize, u32) {
        match self.scheduler {
            Scheduler::Noop => (self.oldest(), self.batch_left),
            Scheduler::Deadline | Scheduler::Anticipatory => {
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
                if self.batch_left == 0 {
                    // A batch starts: an expired request goes first, else the sweep goes on.
                    let pick = if expired {
                        oldest
                    } else {
                        next_up.unwrap_or(oldest)
                    };
                    (pick, FIFO_BATCH - 1)
                } else {
                    match next_up {
                        Some(i) => (i, self.batch_left - 1),
                        // The sweep ran off the top: a new batch starts at the oldest request.
                        None => (oldest, FIFO_BATCH - 1),
                    }
                }
            }
        }
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
        let mut o = Owners::default();
        let mut q = BlockQueue::new(Scheduler::Noop, 24, Duration::from_millis(500), 8);
        q.push(Instant(0), Op::Read, 100, 8, 1, None, &mut o);
        q.push(Instant(0), Op::Read, 108, 8, 2, None, &mut o);
        q.push(Instant(0), Op::Read, 116, 8, 3, None, &mut o);
        // Would make 32 sectors: over the limit, so it stays apart.
        q.push(Instant(0), Op::Read, 92, 8, 4, None, &mut o);
        q.push(Instant(0), Op::Read, 84, 8, 5, None, &mut o);
        assert_eq!(q.len(), 2);
        assert_eq!(q.merges(), 3);
        let r = q.pop(Instant(0), &mut o).unwrap();
        assert_eq!(
            (r.lba, r.sectors, r.tokens.as_slice()),
            (100, 24, &[1, 2, 3][..])
        );
        let r = q.pop(Instant(0), &mut o).unwrap();
        assert_eq!(
            (r.lba, r.sectors, r.tokens.as_slice()),
            (84, 16, &[4, 5][..])
        );
    }

    #[test]
    fn a_full_set_of_slots_refuses_new_requests_but_takes_merges() {
        let mut o = Owners::default();
        let mut q =
            BlockQueue::new(Scheduler::Deadline, 64, Duration::from_millis(500), 16).with_slots(2);
        assert!(q.try_push(Instant(0), Op::Read, 100, 8, 1, None, &mut o));
        assert!(q.try_push(Instant(0), Op::Read, 500, 8, 2, None, &mut o));
        assert!(
            !q.try_push(Instant(0), Op::Read, 900, 8, 3, None, &mut o),
            "no slot left"
        );
        assert!(
            q.try_push(Instant(0), Op::Read, 108, 8, 4, None, &mut o),
            "a merge needs no slot"
        );
        assert_eq!((q.len(), q.merges()), (2, 1));
        q.pop(Instant(0), &mut o).unwrap();
        assert!(
            q.try_push(Instant(0), Op::Read, 900, 8, 3, None, &mut o),
            "a slot freed"
        );
    }

    #[test]
    fn deadline_sweeps_upward_then_serves_the_oldest() {
        let mut o = Owners::default();
        let mut q = BlockQueue::new(Scheduler::Deadline, 8, Duration::from_millis(500), 16);
        for (i, lba) in [500u64, 100, 300, 50].into_iter().enumerate() {
            q.push(Instant(0), Op::Read, lba, 8, i as u32, None, &mut o);
        }
        let order: Vec<u64> =
            std::iter::from_fn(|| q.pop(Instant(0), &mut o).map(|r| r.lba)).collect();
        // First pick: the sweep starts at LBA 0, so the lowest; then upward; nothing is left below.
        assert_eq!(order, vec![50, 100, 300, 500]);
        for (i, lba) in [900u64, 100, 950].into_iter().enumerate() {
            q.push(Instant(0), Op::Read, lba, 8, i as u32, None, &mut o);
        }
        // Head is past 500: 900 and 950 come first, then the sweep wraps to the oldest left (100).
        let order: Vec<u64> =
            std::iter::from_fn(|| q.pop(Instant(1), &mut o).map(|r| r.lba)).collect();
        assert_eq!(order, vec![900, 950, 100]);
    }

    #[test]
    fn deadline_serves_an_expired_request_first() {
        let mut o = Owners::default();
        let mut q = BlockQueue::new(Scheduler::Deadline, 8, Duration::from_millis(500), 32);
        q.push(Instant(0), Op::Read, 10, 8, 0, None, &mut o);
        assert_eq!(q.pop(Instant(0), &mut o).unwrap().lba, 10);
        q.push(Instant(0), Op::Read, 5, 8, 1, None, &mut o);
        for i in 0..20u64 {
            q.push(Instant(0), Op::Read, 1000 + 100 * i, 8, 2, None, &mut o);
        }
        let late = Instant(600_000_000);
        let mut order = vec![];
        while let Some(r) = q.pop(late, &mut o) {
            order.push(r.lba);
        }
        let pos = order.iter().position(|&l| l == 5).unwrap();
        assert!(
            pos <= FIFO_BATCH as usize,
            "expired request served at {pos}: {order:?}"
        );
    }

    const MS: u64 = 1_000_000;

    /// An anticipatory queue that served one read of stream 1 at LBA 1000 (completed at 1 ms) and
    /// holds one read of stream 2 at `other_lba`.
    fn after_one_read(other_lba: u64) -> (BlockQueue, Owners) {
        let mut o = Owners::default();
        let mut q = BlockQueue::new(Scheduler::Anticipatory, 64, Duration::from_millis(500), 16)
            .with_antic_expire(Duration::from_millis(6));
        q.push(Instant(0), Op::Read, 1000, 8, 0, Some(1), &mut o);
        let first = q.pop(Instant(0), &mut o).expect("nothing to wait for yet");
        q.push(Instant(0), Op::Read, other_lba, 8, 1, Some(2), &mut o);
        assert!(
            q.pop(Instant(0), &mut o).is_none(),
            "stream 1's read is on the disk: the queue waits for it"
        );
        assert_eq!(q.timer(), None, "the wait is timed from the completion");
        q.completed(Instant(MS), &first, &mut o);
        (q, o)
    }

    #[test]
    fn anticipation_serves_the_streams_next_request_before_another_streams() {
        let (mut q, mut o) = after_one_read(500_000);
        assert!(q.pop(Instant(2 * MS), &mut o).is_none(), "still waiting");
        q.push(Instant(3 * MS), Op::Read, 1008, 8, 2, Some(1), &mut o);
        let r = q.pop(Instant(3 * MS), &mut o).unwrap();
        assert_eq!((r.owner, r.lba), (Some(1), 1008));
    }

    #[test]
    fn anticipation_ends_at_antic_expire_after_the_completion() {
        let (mut q, mut o) = after_one_read(500_000);
        assert_eq!(q.timer(), Some(Instant(7 * MS)));
        assert!(q.pop(Instant(7 * MS - 1), &mut o).is_none());
        let r = q.pop(Instant(7 * MS), &mut o).unwrap();
        assert_eq!((r.owner, r.lba), (Some(2), 500_000));
        assert_eq!(q.antic_waits(), 1);
    }

    #[test]
    fn a_request_close_to_the_head_is_not_held_back() {
        let mut o = Owners::default();
        let mut q = BlockQueue::new(Scheduler::Anticipatory, 64, Duration::from_millis(500), 16)
            .with_antic_expire(Duration::from_millis(6));
        q.push(Instant(0), Op::Read, 1000, 8, 0, Some(1), &mut o);
        q.pop(Instant(0), &mut o).unwrap();
        q.push(
            Instant(0),
            Op::Read,
            1008 + CLOSE_SECTORS - 16,
            8,
            1,
            Some(2),
            &mut o,
        );
        assert_eq!(q.pop(Instant(0), &mut o).unwrap().owner, Some(2));
        assert_eq!(q.antic_waits(), 0);
    }

    #[test]
    fn deadline_and_a_zero_antic_expire_never_wait() {
        for (sched, expire_ms) in [(Scheduler::Deadline, 6), (Scheduler::Anticipatory, 0)] {
            let mut o = Owners::default();
            let mut q = BlockQueue::new(sched, 64, Duration::from_millis(500), 16)
                .with_antic_expire(Duration::from_millis(expire_ms));
            q.push(Instant(0), Op::Read, 1000, 8, 0, Some(1), &mut o);
            q.pop(Instant(0), &mut o).unwrap();
            q.push(Instant(0), Op::Read, 500_000, 8, 1, Some(2), &mut o);
            assert_eq!(
                q.pop(Instant(0), &mut o).unwrap().owner,
                Some(2),
                "{sched:?}"
            );
        }
    }

    #[test]
    fn a_stream_that_thinks_longer_than_antic_expire_is_not_waited_for() {
        let mut o = Owners::default();
        let mut q = BlockQueue::new(Scheduler::Anticipatory, 64, Duration::from_millis(500), 16)
            .with_antic_expire(Duration::from_millis(6));
        // Stream 1 asks for its next read 10 ms after each completion, twice.
        let mut t = 0;
        for k in 0..3u64 {
            q.push(Instant(t), Op::Read, 1000 + 8 * k, 8, 0, Some(1), &mut o);
            let r = q.pop(Instant(t), &mut o).unwrap();
            q.completed(Instant(t + MS), &r, &mut o);
            t += 11 * MS;
        }
        assert!(o.think_mean(1).unwrap() > Duration::from_millis(6));
        q.push(Instant(t), Op::Read, 500_000, 8, 1, Some(2), &mut o);
        assert_eq!(q.pop(Instant(t), &mut o).unwrap().owner, Some(2));
    }

    /// A stream forgotten once its requests are done starts again without samples; one with a
    /// request still on the disk is kept, so its completion finds its record.
    #[test]
    fn a_forgotten_stream_keeps_no_think_time_and_a_busy_one_is_not_forgotten() {
        let mut o = Owners::default();
        let mut q = BlockQueue::new(Scheduler::Anticipatory, 64, Duration::from_millis(500), 16)
            .with_antic_expire(Duration::from_millis(6));
        let mut t = 0;
        for k in 0..3u64 {
            q.push(Instant(t), Op::Read, 1000 + 8 * k, 8, 0, Some(1), &mut o);
            let r = q.pop(Instant(t), &mut o).unwrap();
            if k == 2 {
                assert!(!o.forget(1), "a stream with a read on the disk is kept");
            }
            q.completed(Instant(t + MS), &r, &mut o);
            t += 11 * MS;
        }
        assert!(o.think_mean(1).unwrap() > Duration::from_millis(6));
        assert!(o.forget(1));
        assert_eq!((o.think_mean(1), o.seek_mean(1)), (None, None));
    }

    #[test]
    fn a_stream_that_reads_at_random_is_not_waited_for() {
        let mut o = Owners::default();
        let mut q = BlockQueue::new(Scheduler::Anticipatory, 64, Duration::from_millis(500), 16)
            .with_antic_expire(Duration::from_millis(6));
        // Stream 1 jumps a million sectors between requests, asking again at once each time.
        let mut t = 0;
        for k in 0..4u64 {
            q.push(Instant(t), Op::Read, k * 1_000_000, 8, 0, Some(1), &mut o);
            let r = q.pop(Instant(t), &mut o).unwrap();
            t += MS;
            q.completed(Instant(t), &r, &mut o);
        }
        assert!(o.seek_mean(1).unwrap() > 500_000);
        // Another stream's request 400,000 sectors away is nearer than stream 1's next is likely to be.
        q.push(Instant(t), Op::Read, 3_400_000, 8, 1, Some(2), &mut o);
        assert_eq!(q.pop(Instant(t), &mut o).unwrap().owner, Some(2));
        assert_eq!(q.antic_waits(), 0);
    }
}
