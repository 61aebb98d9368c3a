//! A CFQ-like block queue: one queue per issuing thread, served in time slices, with the queues of
//! threads that read one region together merged into one.
//!
//! Linux's CFQ (the scheduler paper 004_80004320b985afc3.txt section 3.2.1 runs every server on,
//! Linux 3.10) gives each thread that submits I/O its own queue and lets one queue at a time
//! dispatch for a time slice (`slice_sync`, 100 ms in Linux). When the active queue runs dry, CFQ
//! idles for `slice_idle` (8 ms) in case the same thread submits again: a thread reading one file
//! sequentially keeps the disk to itself and the head stays put. When the slice ends, or the idle
//! wait expires with nothing new, the next queue with requests gets the disk, round robin. This is
//! exactly what makes a shared request queue slow (Fig. 5 of the paper): a server worker that picks
//! a different stream's request each time still owns the slice, and every request seeks.
//!
//! Two refinements of Linux's CFQ matter here. A queue more than 4 of whose last 32 requests
//! were seeks (`CFQQ_SEEKY`) gets no idle wait, since waiting for it saves nothing, unless it is
//! `deep`: it has had 4 requests waiting at once, a thread that keeps several reads queued being
//! worth the wait even when they are scattered. As in Linux, `deep` is kept until an idle wait for
//! the queue runs out unused with other queues waiting, or until the queue, seeky, runs dry with
//! more than half its slice left (it then loses the idle window until its next request, and the
//! disk goes on at once). And when a
//! non-seeky active queue runs dry, CFQ looks for a "close cooperator" (several threads reading
//! one file): Linux keeps the queues with requests in a tree by the position of the request each
//! would serve next, and the queue whose next request is nearest where the head is gets the disk
//! at once, with a slice of its own, if that request is within `CLOSE_SECTORS` and the queue is
//! not seeky (Linux looks no further than the nearest). Only running dry consults it: a queue whose
//! slice ends hands the disk to the next in turn.
//!
//! The seek history is taken as Linux 3.10 takes it, as requests arrive (`cfq_update_io_seektime`):
//! each request added to a queue, not one merged into a request already waiting there, shifts one
//! bit into the queue's 32-bit history, set on a disk when the request starts more than
//! [`SEEK_SECTORS`] from where the queue's previous arrival ended, and on a non-rotating device
//! when it is smaller than [`SMALL_REQUEST_SECTORS`] (distance costs nothing there). So the order
//! requests arrive in is what counts, not the order the sort tree serves them: a queue whose
//! threads submit one region's requests interleaved, out of order, is seeky although sorted they
//! are contiguous, and a thread that reads two regions in runs of several requests each is not,
//! although its sort tree may serve the two regions alternately.
//!
//! Cooperating queues are also merged, as Linux does for NFS servers' threads. Finding a close
//! cooperator schedules a merge of the expiring queue and the cooperator (the one with fewer threads
//! is to move into the other, following a chain of scheduled merges to its end and never closing a
//! loop). The merge takes effect thread by thread: the next time a thread of the moving queue
//! submits, its requests go to the other queue from then on, which is marked as shared. A shared
//! queue is one sort tree, one slice and one seek history for all its threads, so their contiguous
//! requests merge with each other and go in sector order. When a shared queue's slice ends while its
//! seek history says seeky, it is marked to split; each of its threads then gets a queue of its own
//! again at its next request, the last one keeping the shared queue. Requests already waiting stay
//! in the queue they were put in. So one stream spread over many threads can settle in several
//! shared queues rather than one: a shared queue whose slice ends before it runs dry hands over
//! without a merge, one that runs dry finds the nearest other queue's next request too far or
//! seeky, and a thread whose requests wait in a queue that is not being served cannot move. A
//! queue whose threads have all moved out gets no idle wait once its requests in flight are done,
//! as Linux ends the active queue's slice when its last reference goes: nobody can submit to it.
//!
//! Where the model departs from Linux 3.10: Linux's reference counts (a queue here counts the
//! threads routed to it, where Linux credits a scheduled merge's threads to the target at once,
//! which can turn the direction of a later merge; merges need threads on both sides in both); the
//! position tree itself (the nearest next request of all queues here, where Linux's tree holds one
//! queue per position); the close cooperator, looked for here only when idling is on (Linux looks
//! whatever `slice_idle` is, so with it 0, on an SSD, its queues can still merge); the idle
//! window's think-time test (Linux also stops idling for a thread whose mean time from a completion
//! to its next request exceeds `slice_idle`; here only seekiness and depth do); the idle wait for
//! the last queue of its service tree (Linux waits for it whatever its window); a slice begun when
//! the queue gets the disk (Linux starts it at the queue's first completion); the order of turns (by key here, by when a queue got busy in Linux), slices scaled to the
//! number of busy queues (`low_latency`), preemption, the separate turn of seeky queues, priorities
//! and cgroups, and the `CFQQ_COOP_TOUT` grace that some older kernels gave a shared queue before
//! splitting it.
//! The think-time test and the cooperator sought without idling were both tried as Linux 3.10 has
//! them and left out: neither brought the network experiment nearer paper 004 overall
//! (ARCHITECTURE.md gives the figures).
//!
//! A thread's first queue is keyed by the thread, so without merges queues are served in thread
//! order; a queue a thread splits off into takes the thread's key when it is free and a key above
//! every thread otherwise. A queue that no thread uses any more is dropped once its requests are
//! done, so there are at most as many queues as threads plus requests waiting or in flight (plus
//! the active one).
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
/// On a rotating device, a request that arrives further than this (in sectors) from where the
/// queue's previous arrival ended counts as a seek (Linux `CFQQ_SEEK_THR`, 800 sectors).
pub const SEEK_SECTORS: u64 = 800;
/// On a non-rotating device, a request smaller than this (in sectors) counts as a seek instead:
/// distance costs nothing there, small commands do (Linux `CFQQ_SECT_THR_NONROT`, 64 sectors).
pub const SMALL_REQUEST_SECTORS: u32 = 64;
/// How many of the last 32 arrivals must have been seeks, at least, for a queue to be seeky
/// (Linux `CFQQ_SEEKY`: more than 32 / 8).
const SEEKY_MIN_SEEKS: u32 = 5;
/// A queue that has had this many requests waiting at once is deep: it keeps its idle window
/// though seeky (Linux marks `deep` at `queued >= 4` in `cfq_update_idle_window`), since a thread
/// that keeps several requests queued is worth waiting for even when they are scattered.
const DEEP_MIN_WAITING: usize = 4;
/// The first key of a queue a thread splits off into when its own key is still taken: above every
/// thread's key, so such queues come after the threads' own in the round robin.
const SPLIT_KEY_BASE: u64 = 1 << 32;

/// One request, possibly several merged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CfqReq {
    /// The thread that submitted its first part.
    pub owner: u32,
    /// The queue it was dispatched from; [`Cfq::complete`] takes it back.
    pub queue: u64,
    /// First sector.
    pub lba: u64,
    /// Sectors.
    pub sectors: u32,
    /// The driver's tokens for the parts merged into it.
    pub tokens: SmallVec<[u32; 4]>,
    /// The thread that submitted each part, in the order of `tokens` (threads sharing a merged
    /// queue merge each other's requests).
    pub owners: SmallVec<[u32; 4]>,
}

/// What makes an arriving request a seek in a queue's history.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeekRule {
    /// A rotating device: the request starts more than [`SEEK_SECTORS`] from where the queue's
    /// previous arrival ended.
    Distance,
    /// A non-rotating device: the request is smaller than [`SMALL_REQUEST_SECTORS`].
    SmallRequests,
}

#[derive(Debug, Default)]
struct CfqQueue {
    pending: VecDeque<CfqReq>,
    in_flight: u32,
    /// Where the queue's last dispatch ended: its sort order resumes here.
    next_lba: u64,
    /// Where the last request added to the queue (not merged into a waiting one) ended, if any
    /// was (CFQ's `last_request_pos`).
    last_arrival_end: Option<u64>,
    /// One bit per request added to the queue, newest lowest, 1 when it was a seek by the
    /// device's [`SeekRule`] (CFQ's `seek_history`). It follows arrivals, not dispatches: a
    /// shared queue whose threads' requests arrive interleaved is seeky even when its sort tree
    /// would serve them contiguously.
    seek_history: u32,
    /// Threads whose requests go here.
    members: u32,
    /// The queue this one's threads move to at their next request (CFQ's `new_cfqq`).
    merge_into: Option<u64>,
    /// Threads were merged into it (CFQ's `coop` flag).
    shared: bool,
    /// Shared and found seeky when a slice ended: its threads leave at their next request (CFQ's
    /// `split_coop` flag).
    split: bool,
    /// Has had [`DEEP_MIN_WAITING`] requests waiting at once since the flag was last cleared
    /// (CFQ's `deep` flag).
    deep: bool,
    /// Whether the scheduler idles for this queue when it runs dry (CFQ's `idle_window` flag):
    /// set at each request added, to not seeky or deep, and cleared with `deep` when a seeky
    /// queue runs dry early in its slice.
    idle_window: bool,
}

impl CfqQueue {
    fn with_member() -> CfqQueue {
        CfqQueue {
            members: 1,
            // Linux starts a synchronous queue with its idle window open.
            idle_window: true,
            ..CfqQueue::default()
        }
    }

    /// CFQ's `CFQQ_SEEKY`: at least [`SEEKY_MIN_SEEKS`] of the last 32 arrivals were seeks.
    fn seeky(&self) -> bool {
        self.seek_history.count_ones() >= SEEKY_MIN_SEEKS
    }

    /// Enters a request of `sectors` at `lba` that was added to the queue (not merged) into the
    /// seek history, as Linux's `cfq_update_io_seektime` does when a request is inserted. The
    /// queue's first request is no seek on a rotating device: there is no previous one to be far
    /// from.
    fn record_arrival(&mut self, rule: SeekRule, lba: u64, sectors: u32) {
        let seek = match rule {
            SeekRule::Distance => self
                .last_arrival_end
                .is_some_and(|end| lba.abs_diff(end) > SEEK_SECTORS),
            SeekRule::SmallRequests => sectors < SMALL_REQUEST_SECTORS,
        };
        self.seek_history = (self.seek_history << 1) | u32::from(seek);
        self.last_arrival_end = Some(lba + u64::from(sectors));
    }

    /// Linux's `cfq_update_idle_window` after a request was added (it counts among the waiting
    /// ones): a queue with [`DEEP_MIN_WAITING`] waiting turns deep, and the idle window is open
    /// unless the queue is seeky and not deep. Linux also closes it for a thread whose mean think
    /// time exceeds `slice_idle`; the model does not (see the module documentation).
    fn update_idle_window(&mut self) {
        if self.pending.len() >= DEEP_MIN_WAITING {
            self.deep = true;
        }
        self.idle_window = self.deep || !self.seeky();
    }

    /// Where the request this queue would dispatch next starts: the lowest at or above where it
    /// left the head, else its lowest (see [`Cfq::pop`]). The queue has requests waiting.
    fn next_request_lba(&self) -> u64 {
        let lbas = || self.pending.iter().map(|r| r.lba);
        lbas()
            .filter(|&lba| lba >= self.next_lba)
            .min()
            .or_else(|| lbas().min())
            .expect("a queue with requests waiting")
    }

    fn idle(&self) -> bool {
        self.members == 0 && self.pending.is_empty() && self.in_flight == 0
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
    seek_rule: SeekRule,
    max_sectors: u32,
    limit: usize,
    len: usize,
    in_flight: usize,
    queues: BTreeMap<u64, CfqQueue>,
    /// Each thread's queue.
    route: BTreeMap<u32, u64>,
    next_split_key: u64,
    active: Option<u64>,
    last_served: Option<u64>,
    /// When the active queue's slice began (its renewal, if renewed).
    slice_start: Instant,
    slice_end: Instant,
    idle_until: Option<Instant>,
    switches: u64,
    merges: u64,
    queue_merges: u64,
    queue_splits: u64,
}

impl Cfq {
    /// A queue of at most `limit` requests of at most `max_sectors` sectors each, judging seeks by
    /// `seek_rule` (the device's kind).
    pub fn new(times: CfqTimes, seek_rule: SeekRule, max_sectors: u32, limit: usize) -> Cfq {
        assert!(max_sectors >= 8 && limit >= 1, "bad CFQ bounds");
        assert!(times.slice.0 > 0, "a CFQ slice lasts some time");
        Cfq {
            times,
            seek_rule,
            max_sectors,
            limit,
            len: 0,
            in_flight: 0,
            queues: BTreeMap::new(),
            route: BTreeMap::new(),
            next_split_key: SPLIT_KEY_BASE,
            active: None,
            last_served: None,
            slice_start: Instant(0),
            slice_end: Instant(0),
            idle_until: None,
            switches: 0,
            merges: 0,
            queue_merges: 0,
            queue_splits: 0,
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

    /// Times the disk went from one queue to another.
    pub fn switches(&self) -> u64 {
        self.switches
    }

    /// Request merges performed.
    pub fn merges(&self) -> u64 {
        self.merges
    }

    /// Times a thread moved into another thread's queue.
    pub fn queue_merges(&self) -> u64 {
        self.queue_merges
    }

    /// Times a thread left a shared queue that had turned seeky for a queue of its own.
    pub fn queue_splits(&self) -> u64 {
        self.queue_splits
    }

    /// The key of the queue `owner`'s requests go to now, if it submitted any.
    pub fn queue_of(&self, owner: u32) -> Option<u64> {
        self.route.get(&owner).copied()
    }

    /// The largest request in sectors.
    pub fn max_sectors(&self) -> u32 {
        self.max_sectors
    }

    /// Adds a request from `owner`, merging it with a contiguous one in the same queue if it fits.
    /// A request that does not merge is entered into its queue's seek history; a merged one is
    /// not, as Linux's elevator merges it into the waiting request without inserting one.
    pub fn push(&mut self, owner: u32, lba: u64, sectors: u32, token: u32) {
        assert!(
            sectors >= 1 && sectors <= self.max_sectors,
            "request of {sectors} sectors"
        );
        let key = self.route_request(owner);
        let q = self.queues.get_mut(&key).expect("routed queue exists");
        for r in q.pending.iter_mut() {
            if r.sectors + sectors > self.max_sectors {
                continue;
            }
            if r.lba + r.sectors as u64 == lba {
                r.sectors += sectors;
                r.tokens.push(token);
                r.owners.push(owner);
                self.merges += 1;
                return;
            }
            if lba + sectors as u64 == r.lba {
                r.lba = lba;
                r.sectors += sectors;
                r.tokens.push(token);
                r.owners.push(owner);
                self.merges += 1;
                return;
            }
        }
        assert!(
            self.len < self.limit,
            "CFQ queue over its bound of {}",
            self.limit
        );
        q.record_arrival(self.seek_rule, lba, sectors);
        q.pending.push_back(CfqReq {
            owner,
            queue: key,
            lba,
            sectors,
            tokens: SmallVec::from_elem(token, 1),
            owners: SmallVec::from_elem(owner, 1),
        });
        q.update_idle_window();
        self.len += 1;
        if self.active == Some(key) {
            // The queue we idled for got a request.
            self.idle_until = None;
        }
    }

    /// The queue `owner`'s new request goes to: its first one, a queue of its own again if its
    /// shared queue is to split, or the queue its queue is scheduled to merge into.
    fn route_request(&mut self, owner: u32) -> u64 {
        let Some(&(mut key)) = self.route.get(&owner) else {
            let key = self.fresh_key(owner);
            self.route.insert(owner, key);
            self.add_queue(key);
            return key;
        };
        let q = self.queues.get_mut(&key).expect("a thread's queue exists");
        if q.shared && q.split {
            if q.members == 1 {
                // The last thread keeps the queue, as a queue of its own.
                q.shared = false;
                q.split = false;
            } else {
                q.members -= 1;
                let own = self.fresh_key(owner);
                self.route.insert(owner, own);
                self.add_queue(own);
                self.queue_splits += 1;
                return own;
            }
        }
        if let Some(to) = self.queues[&key].merge_into {
            self.queues.get_mut(&key).expect("queue").members -= 1;
            let t = self.queues.get_mut(&to).expect("a merge target lives");
            t.members += 1;
            t.shared = true;
            self.route.insert(owner, to);
            self.queue_merges += 1;
            self.reap(key);
            key = to;
        }
        key
    }

    /// The thread's own key if no queue holds it, else a key above every thread's.
    fn fresh_key(&mut self, owner: u32) -> u64 {
        let own = u64::from(owner);
        if !self.queues.contains_key(&own) {
            return own;
        }
        let k = self.next_split_key;
        self.next_split_key += 1;
        k
    }

    fn add_queue(&mut self, key: u64) {
        let old = self.queues.insert(key, CfqQueue::with_member());
        assert!(old.is_none(), "queue {key} made twice");
        // Every queue has a thread or a request, but for the active one.
        assert!(
            self.queues.len() <= self.route.len() + self.len + self.in_flight + 1,
            "{} CFQ queues for {} threads and {} requests",
            self.queues.len(),
            self.route.len(),
            self.len + self.in_flight
        );
    }

    /// Drops queue `key` if no thread uses it and it holds no request, forgetting merges into it.
    fn reap(&mut self, key: u64) {
        if self.active == Some(key) || !self.queues.get(&key).is_some_and(CfqQueue::idle) {
            return;
        }
        self.queues.remove(&key);
        for q in self.queues.values_mut() {
            if q.merge_into == Some(key) {
                q.merge_into = None;
            }
        }
    }

    /// Schedules the merge of the active queue `cur` with its close cooperator `coop`: the queue
    /// with fewer threads is to move into the other.
    fn setup_merge(&mut self, cur: u64, coop: u64) {
        if self.queues[&cur].merge_into.is_some() {
            return;
        }
        let mut to = coop;
        let mut hops = 0;
        while let Some(next) = self.queues[&to].merge_into {
            if next == cur {
                return;
            }
            to = next;
            hops += 1;
            assert!(hops <= self.queues.len(), "a loop of CFQ merges");
        }
        let (cur_members, to_members) = (self.queues[&cur].members, self.queues[&to].members);
        if cur_members == 0 || to_members == 0 {
            return;
        }
        if to_members >= cur_members {
            self.queues.get_mut(&cur).expect("queue").merge_into = Some(to);
        } else {
            self.queues.get_mut(&to).expect("queue").merge_into = Some(cur);
        }
    }

    /// The active queue `a` loses the disk: a shared queue that turned seeky is marked to split.
    fn end_slice(&mut self, a: u64) {
        let q = self.queues.get_mut(&a).expect("active queue exists");
        if q.shared && q.seeky() {
            q.split = true;
        }
        self.last_served = Some(a);
    }

    /// The active queue's slice runs from `now`.
    fn start_slice(&mut self, now: Instant) {
        self.slice_start = now;
        self.slice_end = now + self.times.slice;
    }

    /// The next request for the device at `now`, if the scheduler lets one go.
    pub fn pop(&mut self, now: Instant) -> Option<CfqReq> {
        if let Some(a) = self.active {
            let q = &self.queues[&a];
            let no_idle = self.times.idle.0 == 0;
            if q.pending.is_empty() && !no_idle && !q.seeky() {
                // CFQ's close cooperator: the queue whose next request is nearest where this one
                // left the head gets the disk at once instead of the idle wait (threads sharing
                // one sequential file), if it is near enough and not seeky itself; Linux looks
                // no further than the nearest, so a seeky nearest queue means no cooperator.
                let head = q.next_lba;
                let coop = self
                    .queues
                    .iter()
                    .filter(|(&k, c)| k != a && !c.pending.is_empty())
                    .map(|(&k, c)| (c.next_request_lba().abs_diff(head), k))
                    .min()
                    .filter(|&(dist, k)| dist <= CLOSE_SECTORS && !self.queues[&k].seeky())
                    .map(|(_, k)| k);
                if let Some(o) = coop {
                    self.setup_merge(a, o);
                    self.end_slice(a);
                    // A slice of its own, as Linux's CFQ starts one for the queue it makes
                    // active: when the cooperator inherited the rest of the old slice, its
                    // requests waited behind the other queues whenever little was left of it.
                    self.active = Some(o);
                    self.start_slice(now);
                    self.idle_until = None;
                    self.switches += 1;
                    self.reap(a);
                }
            }
        }
        if let Some(a) = self.active {
            let (slice_start, slice_end) = (self.slice_start, self.slice_end);
            let waiting_idle = self.idle_until.is_some();
            let q = self.queues.get_mut(&a).expect("active queue exists");
            let dry = q.pending.is_empty();
            let expired = now >= slice_end;
            // A deep seeky queue that runs dry with more than half its slice left delivers
            // slower than the device serves it: Linux's `cfq_select_queue` then clears `deep`
            // and the idle window (until its next request), before any idle wait is armed.
            if dry
                && !waiting_idle
                && q.seeky()
                && q.idle_window
                && slice_end.0.saturating_sub(now.0) > now.0.saturating_sub(slice_start.0)
            {
                q.deep = false;
                q.idle_window = false;
            }
            let q = &self.queues[&a];
            // A seeky queue that is not deep gets no idle window: waiting for it saves no seek.
            let no_idle = self.times.idle.0 == 0 || !q.idle_window;
            // Nor does a queue whose threads all moved to another: nobody can submit to it.
            // Linux ends the active queue's slice when its last reference goes.
            let abandoned = q.members == 0;
            let idle_over = no_idle || abandoned || self.idle_until.is_some_and(|t| now >= t);
            let others_wait = self.len > q.pending.len();
            // Without idling (an SSD) a dry queue gives the disk up at once, even with requests
            // in flight, as CFQ does on non-rotational devices that queue commands.
            if (expired && others_wait) || (dry && (q.in_flight == 0 || no_idle) && idle_over) {
                // An idle wait that ran out with the slice unused and others waiting means the
                // queue's depth did not pay: Linux's idle timer clears `deep`.
                let wait_ran_out = !no_idle && self.idle_until.is_some_and(|t| now >= t);
                if wait_ran_out && !expired && others_wait {
                    self.queues.get_mut(&a).expect("active queue exists").deep = false;
                }
                self.end_slice(a);
                self.active = None;
                self.idle_until = None;
                self.reap(a);
            } else if expired {
                // Nobody else wants the disk: the slice is renewed.
                self.start_slice(now);
            }
        }
        if self.active.is_none() {
            let from = self.last_served.map_or(0, |k| k.wrapping_add(1));
            let next = self
                .queues
                .range(from..)
                .chain(self.queues.range(..from))
                .find(|(_, q)| !q.pending.is_empty())
                .map(|(&k, _)| k)?;
            self.active = Some(next);
            self.start_slice(now);
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
        q.next_lba = r.lba + r.sectors as u64;
        q.in_flight += 1;
        self.in_flight += 1;
        self.len -= 1;
        Some(r)
    }

    /// A request dispatched from queue `queue` (its [`CfqReq::queue`]) finished at `now`.
    pub fn complete(&mut self, now: Instant, queue: u64) {
        let q = self
            .queues
            .get_mut(&queue)
            .expect("completion of a known queue");
        assert!(
            q.in_flight > 0,
            "queue {queue} completed more than it dispatched"
        );
        q.in_flight -= 1;
        self.in_flight -= 1;
        if self.active == Some(queue) && q.in_flight == 0 && q.pending.is_empty() {
            self.idle_until = Some(now + self.times.idle);
        }
        self.reap(queue);
    }

    /// The scheduler's bookkeeping, checked whole: every thread routes to a live queue that counts
    /// it, scheduled merges point at live queues and end, the request counts add up, and the
    /// queues stay within their bound. For tests: walks everything.
    #[cfg(test)]
    fn check(&self) -> Result<(), String> {
        let mut members = BTreeMap::<u64, u32>::new();
        for (&owner, &key) in &self.route {
            if !self.queues.contains_key(&key) {
                return Err(format!("thread {owner} routes to dropped queue {key}"));
            }
            *members.entry(key).or_default() += 1;
        }
        let (mut pending, mut in_flight) = (0usize, 0usize);
        for (&key, q) in &self.queues {
            let m = members.get(&key).copied().unwrap_or(0);
            if q.members != m {
                return Err(format!(
                    "queue {key} counts {} threads, {m} route to it",
                    q.members
                ));
            }
            let mut to = key;
            let mut hops = 0;
            while let Some(next) = self.queues[&to].merge_into {
                if !self.queues.contains_key(&next) {
                    return Err(format!("queue {to} is to merge into dropped queue {next}"));
                }
                to = next;
                hops += 1;
                if hops > self.queues.len() {
                    return Err(format!("queue {key}'s merges loop"));
                }
            }
            if q.pending.iter().any(|r| r.queue != key) {
                return Err(format!("queue {key} holds a request marked for another"));
            }
            pending += q.pending.len();
            in_flight += q.in_flight as usize;
        }
        if (pending, in_flight) != (self.len, self.in_flight) {
            return Err(format!(
                "{pending} waiting and {in_flight} in flight in the queues, counted {} and {}",
                self.len, self.in_flight
            ));
        }
        if self.queues.len() > self.route.len() + self.len + self.in_flight + 1 {
            return Err(format!("{} queues over the bound", self.queues.len()));
        }
        if let Some(a) = self.active {
            if !self.queues.contains_key(&a) {
                return Err(format!("active queue {a} was dropped"));
            }
        }
        Ok(())
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

    /// A disk's CFQ: 100 ms slices, `idle_ms` of idle wait, merges up to 1024 sectors, 64
    /// requests at most.
    pub(super) fn cfq(idle_ms: u64) -> Cfq {
        Cfq::new(
            CfqTimes {
                slice: Duration::from_millis(100),
                idle: Duration::from_millis(idle_ms),
            },
            SeekRule::Distance,
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
mod seek_history_tests {
    use super::*;

    /// A disk's or SSD's CFQ by `rule`, otherwise as [`super::tests::cfq`] with an 8 ms idle wait.
    fn cfq_for(rule: SeekRule) -> Cfq {
        Cfq::new(
            CfqTimes {
                slice: Duration::from_millis(100),
                idle: Duration::from_millis(8),
            },
            rule,
            1024,
            64,
        )
    }

    /// Owner 2 has one far request waiting; owner 1 submits `lbas` (of `sectors` each) one at a
    /// time, each dispatched and completed before the next arrives, so its queue never holds
    /// more than one and never turns deep. Returns who gets the disk when owner 1 has run dry:
    /// owner 2 at once if owner 1's queue is seeky, nobody (an idle wait for owner 1) if not.
    fn after_draining(rule: SeekRule, lbas: &[u64], sectors: u32) -> Option<u32> {
        let mut q = cfq_for(rule);
        q.push(2, 1_000_000_000, 8, 99);
        let mut now = Instant(0);
        for (i, &lba) in lbas.iter().enumerate() {
            q.push(1, lba, sectors, i as u32);
            let r = q.pop(now).expect("owner 1 is served");
            assert_eq!(r.owner, 1);
            now += Duration::from_micros(100);
            q.complete(now, r.queue);
        }
        q.pop(now).map(|r| r.owner)
    }

    /// As [`after_draining`], but owner 1's requests all wait at once before the first dispatch
    /// (a thread with several requests queued), and each completes before the next dispatch.
    fn after_draining_deep(lbas: &[u64]) -> (Option<u32>, Cfq) {
        let mut q = cfq_for(SeekRule::Distance);
        for (i, &lba) in lbas.iter().enumerate() {
            q.push(1, lba, 1024, i as u32);
        }
        q.push(2, 1_000_000_000, 8, 99);
        let mut now = Instant(0);
        for _ in lbas {
            let r = q.pop(now).expect("owner 1 is served");
            assert_eq!(r.owner, 1);
            now += Duration::from_micros(100);
            q.complete(now, r.queue);
        }
        (q.pop(now).map(|r| r.owner), q)
    }

    /// Scattered requests, 8 of 1024 sectors: 6 of the 8 arrivals are seeks.
    fn scrambled() -> Vec<u64> {
        [0, 4, 1, 5, 2, 6, 3, 7].iter().map(|i| i * 1024).collect()
    }

    /// Linux keeps the idle window of a seeky queue that has had 4 requests waiting at once
    /// (`deep`): the model used to drop it for every seeky queue.
    #[test]
    fn a_deep_seeky_queue_keeps_its_idle_window() {
        let (next, q) = after_draining_deep(&scrambled());
        assert!(q.queues[&1].seeky() && q.queues[&1].deep);
        assert_eq!(next, None, "owner 1's deep queue is waited for");
        // The same requests one at a time: seeky and never deep, so no wait.
        assert_eq!(
            after_draining(SeekRule::Distance, &scrambled(), 1024),
            Some(2)
        );
    }

    /// An idle wait for a deep seeky queue that runs out with another queue waiting clears
    /// `deep` (Linux's idle timer), so the queue's next request, alone, closes the window.
    #[test]
    fn an_idle_wait_that_runs_out_clears_deep() {
        let (next, mut q) = after_draining_deep(&scrambled());
        assert_eq!(next, None);
        let later = Instant(0) + Duration::from_millis(20);
        assert_eq!(q.pop(later).map(|r| r.owner), Some(2), "the wait ran out");
        assert!(!q.queues[&1].deep);
        q.complete(later, q.queue_of(2).unwrap());
        // Owner 1 comes back with one far request: seeky, no longer deep, so it is not waited
        // for once it is done, and owner 3's request goes at once.
        // (Owner 2's own idle wait runs out first.)
        q.push(1, 500_000_000, 8, 100);
        assert!(!q.queues[&1].idle_window);
        let later = later + Duration::from_millis(20);
        let r = q.pop(later).expect("owner 1 is served");
        assert_eq!(r.owner, 1);
        q.push(3, 900_000_000, 8, 101);
        q.complete(later, r.queue);
        assert_eq!(q.pop(later).map(|r| r.owner), Some(3));
    }

    /// A deep seeky queue that runs dry while more than half its slice is left delivers slower
    /// than the disk serves it: Linux clears `deep` and the idle window then, before arming the
    /// wait, and gives the disk to the next queue at once, its last request still in flight.
    #[test]
    fn a_deep_seeky_queue_that_runs_dry_early_is_not_waited_for() {
        let mut q = cfq_for(SeekRule::Distance);
        for (i, &lba) in scrambled().iter().enumerate() {
            q.push(1, lba, 1024, i as u32);
        }
        q.push(2, 1_000_000_000, 8, 99);
        assert!(q.queues[&1].deep);
        // Two requests in flight at a time, as a disk with a queue depth of 2 takes them.
        let mut now = Instant(0);
        let mut in_flight = VecDeque::new();
        for _ in 0..2 {
            in_flight.push_back(q.pop(now).expect("owner 1 is served").queue);
        }
        for _ in 2..8 {
            now += Duration::from_micros(100);
            q.complete(now, in_flight.pop_front().expect("a request in flight"));
            let r = q
                .pop(now)
                .expect("owner 1 keeps the disk while it has requests");
            assert_eq!(r.owner, 1);
            in_flight.push_back(r.queue);
        }
        // Owner 1 is dry with two requests in flight, 0.6 ms into its 100 ms slice.
        assert_eq!(q.pop(now).map(|r| r.owner), Some(2));
        assert!(!q.queues[&1].deep && !q.queues[&1].idle_window);
    }

    /// Linux takes a queue's seek history as requests arrive, each one's distance from where the
    /// previous arrival ended: requests that come out of order are seeks, even though the sort
    /// tree then serves them head to tail. (Taken at dispatch, in sorted order, they were none.)
    #[test]
    fn requests_arriving_out_of_order_make_a_queue_seeky() {
        assert_eq!(
            after_draining(SeekRule::Distance, &scrambled(), 1024),
            Some(2)
        );
        // The same requests arriving in order: no seek, owner 1 keeps the disk to idle.
        let ordered: Vec<u64> = (0..8).map(|i| i * 1024).collect();
        assert_eq!(after_draining(SeekRule::Distance, &ordered, 1024), None);
    }

    /// On a non-rotating device Linux counts small requests as seeks, wherever they land.
    #[test]
    fn small_requests_make_a_queue_seeky_on_a_non_rotating_device() {
        // Sequential but 8 sectors apart, so none merges with the next.
        let lbas: Vec<u64> = (0..8).map(|i| i * 16).collect();
        assert_eq!(after_draining(SeekRule::SmallRequests, &lbas, 8), Some(2));
        assert_eq!(after_draining(SeekRule::Distance, &lbas, 8), None);
        // Large requests are no seeks there, however far apart.
        let far: Vec<u64> = (0..8).map(|i| i * 1_000_000).collect();
        assert_eq!(after_draining(SeekRule::SmallRequests, &far, 64), None);
        assert_eq!(after_draining(SeekRule::Distance, &far, 64), Some(2));
    }

    /// A request merged into a waiting one is not an arrival of its own: the next request's
    /// distance is taken from where the waiting one ended when it was added.
    #[test]
    fn a_merged_request_leaves_the_history_alone() {
        let mut q = super::tests::cfq(8);
        q.push(1, 0, 8, 0);
        q.push(1, 8, 1016, 1);
        assert_eq!(q.merges(), 1);
        let own = &q.queues[&1];
        assert_eq!((own.seek_history, own.last_arrival_end), (0, Some(8)));
        // 1016 sectors on from the last arrival's end: a seek, though it follows the merged
        // request exactly.
        q.push(1, 1024, 8, 2);
        assert_eq!(q.queues[&1].seek_history, 1);
    }
}

#[cfg(test)]
mod cooperator_tests {
    use super::*;

    #[test]
    fn a_close_request_of_another_owner_skips_the_idle_wait() {
        let mut q = super::tests::cfq(8);
        q.push(1, 0, 1024, 0);
        q.push(2, 1024, 1024, 1);
        q.push(3, 10_000_000, 8, 2);
        assert_eq!(q.pop(Instant(0)).unwrap().owner, 1);
        q.complete(Instant(5), 1);
        // Owner 2 continues where owner 1 left the head; owner 3 is far away and waits.
        assert_eq!(q.pop(Instant(6)).unwrap().owner, 2);
    }

    /// Linux keeps the queues with requests in a tree by the position of the request each would
    /// serve next and looks up where the head is: the queue whose next request is nearest gets
    /// the disk, not the first queue with some request within the distance.
    #[test]
    fn the_queue_whose_next_request_is_nearest_the_head_cooperates() {
        let mut q = super::tests::cfq(8);
        q.push(1, 0, 1024, 0);
        // Owner 2's request is within the close distance but 6000 sectors on; owner 3's starts
        // right where owner 1's ends.
        q.push(2, 7024, 8, 1);
        q.push(3, 1024, 8, 2);
        assert_eq!(q.pop(Instant(0)).unwrap().owner, 1);
        q.complete(Instant(5), 1);
        assert_eq!(q.pop(Instant(6)).unwrap().owner, 3);
    }
}

#[cfg(test)]
mod merge_tests {
    use super::*;

    fn cfq() -> Cfq {
        super::tests::cfq(8)
    }

    /// Owner 1 reads a region, owner 2 the region right after it: when owner 1's queue runs dry,
    /// owner 2's queue is its close cooperator and the two are set to merge.
    fn cooperate(q: &mut Cfq) {
        q.push(1, 0, 64, 0);
        q.push(2, 64, 64, 1);
        let r = q.pop(Instant(0)).unwrap();
        assert_eq!(r.owner, 1);
        q.complete(Instant(1_000), r.queue);
        let r = q.pop(Instant(2_000)).unwrap();
        assert_eq!(r.owner, 2, "the close cooperator takes the disk");
        q.complete(Instant(3_000), r.queue);
    }

    #[test]
    fn cooperating_owners_share_a_queue_and_their_requests_merge() {
        let mut q = cfq();
        cooperate(&mut q);
        assert_eq!(q.queue_merges(), 0, "the merge waits for the next request");
        // Owner 1's next request goes to owner 2's queue, and owner 2's contiguous request joins
        // it: one request of both owners.
        q.push(1, 128, 64, 2);
        q.push(2, 192, 64, 3);
        assert_eq!(q.queue_merges(), 1);
        assert_eq!(q.queue_of(1), q.queue_of(2));
        assert_eq!(q.len(), 1);
        let r = q.pop(Instant(4_000)).unwrap();
        assert_eq!((r.lba, r.sectors), (128, 128));
        assert_eq!(r.tokens.as_slice(), &[2, 3]);
        assert_eq!(r.owners.as_slice(), &[1, 2]);
        q.complete(Instant(5_000), r.queue);
    }

    #[test]
    fn a_shared_queue_that_turns_seeky_splits_back() {
        let mut q = cfq();
        cooperate(&mut q);
        q.push(1, 128, 64, 2);
        let shared = q.queue_of(1).unwrap();
        assert_eq!(q.queue_of(2), Some(shared));
        // The two owners now read far apart: every dispatch of the shared queue seeks.
        // One request at a time, so the queue never has 4 waiting and never turns deep.
        let mut now = Instant(10_000);
        let mut token = 3;
        for i in 0..8u64 {
            let owner = 1 + (i % 2) as u32;
            q.push(owner, (i + 1) * 1_000_000, 8, token);
            token += 1;
            let r = q.pop(now).expect("the shared queue is served");
            now += Duration::from_micros(100);
            q.complete(now, r.queue);
        }
        while let Some(r) = q.pop(now) {
            now += Duration::from_micros(100);
            q.complete(now, r.queue);
        }
        // Seeky, the drained queue got no idle wait: its slice ended and it is marked to split.
        assert_eq!(q.queue_splits(), 0, "the split waits for the next request");
        // Each owner gets a queue of its own again at its next request; the last keeps the
        // shared one.
        q.push(1, 90_000_000, 8, token);
        q.push(2, 95_000_000, 8, token + 1);
        assert_eq!(q.queue_splits(), 1);
        assert_ne!(q.queue_of(1), q.queue_of(2));
        assert_eq!(q.queue_of(2), Some(shared));
        assert_eq!(q.len(), 2, "far apart requests do not merge");
    }

    /// A queue whose threads all moved out can get no new request: once what it dispatched is
    /// done, it gives the disk up at once rather than idling for a thread that now submits
    /// elsewhere. (Linux frees a queue at its last reference and, if it is the active one, ends
    /// its slice then; the model idled `slice_idle` for nothing while the thread's new request
    /// waited in the queue it moved to.)
    #[test]
    fn a_queue_no_thread_uses_does_not_idle() {
        let mut q = cfq();
        cooperate(&mut q);
        // Owner 1 moves into owner 2's queue: a queue of two threads.
        q.push(1, 128, 64, 2);
        let shared = q.queue_of(2).unwrap();
        assert_eq!(q.queue_of(1), Some(shared));
        // Owner 3 reads on right after it.
        q.push(3, 192, 64, 3);
        let r = q.pop(Instant(4_000)).unwrap();
        assert_eq!(r.queue, shared);
        q.complete(Instant(5_000), r.queue);
        // The shared queue runs dry next to owner 3's request: owner 3's queue, with fewer
        // threads, is to merge into it, and takes the disk.
        let r = q.pop(Instant(6_000)).unwrap();
        assert_eq!(r.owner, 3);
        // Owner 3's next request, far away, goes to the shared queue; its own queue has no
        // thread left.
        q.push(3, 100_000_000, 8, 4);
        assert_eq!(q.queue_of(3), Some(shared));
        q.complete(Instant(7_000), r.queue);
        let r = q.pop(Instant(8_000));
        assert_eq!(r.map(|r| r.tokens.to_vec()), Some(vec![4]));
    }

    #[test]
    fn unrelated_owners_are_never_merged() {
        let mut q = cfq();
        let mut now = Instant(0);
        let mut token = 0;
        // Four owners, each reading its own region sequentially, far from the others.
        for round in 0..50u64 {
            for owner in 0..4u32 {
                q.push(
                    owner,
                    u64::from(owner) * 100_000_000 + round * 64,
                    64,
                    token,
                );
                token += 1;
            }
            while let Some(r) = q.pop(now) {
                now += Duration::from_micros(500);
                q.complete(now, r.queue);
            }
            now += Duration::from_millis(20);
        }
        assert_eq!(q.queue_merges(), 0);
        for owner in 0..4u32 {
            assert_eq!(q.queue_of(owner), Some(u64::from(owner)));
        }
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
                SeekRule::Distance,
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
                        q.complete(now, r.queue);
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

#[cfg(test)]
mod seek_prop {
    use super::*;
    use foresight_core::Rng;
    use proptest::prelude::*;

    /// Drives a CFQ without idling (so no queue ever merges with another and each owner keeps
    /// its own queue, keyed by the owner) with arrivals, dispatches, completions in any order and
    /// clock steps drawn from `seed`, and after every step compares each queue's seek history
    /// with one worked out from the requests added to it alone.
    fn run(seed: u64) -> Result<(), String> {
        let mut rng = Rng::new(seed);
        let owners = 1 + rng.below(4) as u32;
        let rule = if rng.below(2) == 0 {
            SeekRule::Distance
        } else {
            SeekRule::SmallRequests
        };
        let mut q = Cfq::new(
            CfqTimes {
                slice: Duration::from_millis(1 + rng.below(50)),
                idle: Duration::ZERO,
            },
            rule,
            256,
            1024,
        );
        // Per owner: where its next sequential request starts, and the expected history and
        // last arrival's end.
        let mut heads: Vec<u64> = (0..u64::from(owners)).map(|o| o * 10_000_000).collect();
        let mut expect: Vec<(u32, Option<u64>)> = vec![(0, None); owners as usize];
        let mut in_device: Vec<CfqReq> = Vec::new();
        let mut now = Instant(0);
        for token in 0..rng.below(400) as u32 {
            match rng.below(8) {
                0..=3 => {
                    let owner = rng.below(u64::from(owners)) as u32;
                    let sectors = 1 + rng.below(128) as u32;
                    let h = &mut heads[owner as usize];
                    let lba = match rng.below(4) {
                        0 => rng.below(100_000_000),
                        1 => h.saturating_sub(u64::from(sectors)),
                        _ => *h,
                    };
                    *h = lba + u64::from(sectors);
                    let merges = q.merges();
                    q.push(owner, lba, sectors, token);
                    if q.merges() == merges {
                        let (history, last_end) = &mut expect[owner as usize];
                        let seek = match rule {
                            SeekRule::Distance => {
                                last_end.is_some_and(|e| lba.abs_diff(e) > SEEK_SECTORS)
                            }
                            SeekRule::SmallRequests => sectors < SMALL_REQUEST_SECTORS,
                        };
                        *history = (*history << 1) | u32::from(seek);
                        *last_end = Some(lba + u64::from(sectors));
                    }
                }
                4..=5 => {
                    if let Some(r) = q.pop(now) {
                        in_device.push(r);
                    }
                }
                6 if !in_device.is_empty() => {
                    let r = in_device.swap_remove(rng.below(in_device.len() as u64) as usize);
                    q.complete(now, r.queue);
                }
                _ => now += Duration::from_micros(rng.below(20_000)),
            }
            for (owner, &(history, _)) in expect.iter().enumerate() {
                let key = owner as u64;
                let got = q.queues.get(&key).map_or(0, |c| c.seek_history);
                if got != history {
                    return Err(format!(
                        "owner {owner}'s queue has history {got:#b}, its arrivals make {history:#b}"
                    ));
                }
            }
        }
        Ok(())
    }

    proptest! {
        /// A queue's seek history depends on the requests added to it and nothing else: not on
        /// when or in what order they are dispatched, nor on completions or the clock.
        #[test]
        fn the_seek_history_follows_arrivals_alone(seed in any::<u64>()) {
            let r = run(seed);
            prop_assert!(r.is_ok(), "seed {seed}: {}", r.unwrap_err());
        }
    }
}

#[cfg(test)]
mod merge_prop {
    use super::*;
    use foresight_core::Rng;
    use proptest::prelude::*;

    /// What one seeded run dispatched, in order: the queue and the tokens of each request.
    type Trace = Vec<(u64, Vec<u32>)>;

    /// Drives a CFQ with threads that read a few shared regions (so that queues cooperate, merge,
    /// turn seeky and split), arrivals, completions in any order and clock steps all drawn from
    /// `seed`; checks the bookkeeping after every step and that each request completes once, with
    /// the submitter of each merged part, then drains it.
    fn run(seed: u64) -> Result<Trace, String> {
        let mut rng = Rng::new(seed);
        let threads = 2 + rng.below(10) as u32;
        let regions = 1 + rng.below(3) as usize;
        let idle_ms = [0, 2, 8][rng.below(3) as usize];
        let limit = 4 + rng.below(60) as usize;
        let mut q = Cfq::new(
            CfqTimes {
                slice: Duration::from_millis(1 + rng.below(100)),
                idle: Duration::from_millis(idle_ms),
            },
            SeekRule::Distance,
            256,
            limit,
        );
        // Each region's next sector; a thread reads on from it, now and then far away.
        let mut heads: Vec<u64> = (0..regions as u64).map(|i| i * 50_000_000).collect();
        let mut owner_of: Vec<u32> = Vec::new();
        let mut done: Vec<u32> = Vec::new();
        let mut in_device: Vec<CfqReq> = Vec::new();
        let mut trace = Trace::new();
        let mut now = Instant(0);
        let finish = |q: &mut Cfq,
                      r: CfqReq,
                      now: Instant,
                      owner_of: &[u32],
                      done: &mut [u32]|
         -> Result<(), String> {
            if r.tokens.len() != r.owners.len() || r.owners[0] != r.owner {
                return Err(format!("request {r:?} lists its parts' threads wrongly"));
            }
            for (&t, &o) in r.tokens.iter().zip(&r.owners) {
                if owner_of[t as usize] != o {
                    return Err(format!(
                        "token {t} of thread {} credited to {o}",
                        owner_of[t as usize]
                    ));
                }
                done[t as usize] += 1;
            }
            q.complete(now, r.queue);
            Ok(())
        };
        for _ in 0..rng.below(600) {
            match rng.below(10) {
                0..=3 if !q.is_full() => {
                    let owner = rng.below(u64::from(threads)) as u32;
                    let sectors = 8 * (1 + rng.below(8)) as u32;
                    let lba = if rng.below(8) == 0 {
                        rng.below(200_000_000)
                    } else {
                        let h = &mut heads[rng.below(regions as u64) as usize];
                        let lba = *h;
                        *h += u64::from(sectors);
                        lba
                    };
                    let token = owner_of.len() as u32;
                    owner_of.push(owner);
                    done.push(0);
                    q.push(owner, lba, sectors, token);
                }
                4..=5 => {
                    if let Some(r) = q.pop(now) {
                        trace.push((r.queue, r.tokens.to_vec()));
                        in_device.push(r);
                    }
                }
                6..=7 if !in_device.is_empty() => {
                    let r = in_device.swap_remove(rng.below(in_device.len() as u64) as usize);
                    finish(&mut q, r, now, &owner_of, &mut done)?;
                }
                _ => now += Duration::from_micros(rng.below(30_000)),
            }
            q.check()?;
        }
        // Drain: the device finishes in order, the driver calls `pop` at every timer.
        let mut steps = 0;
        while !q.is_empty() || !in_device.is_empty() {
            steps += 1;
            if steps > 100_000 {
                return Err(format!("{} requests never drained", q.len()));
            }
            if let Some(r) = q.pop(now) {
                trace.push((r.queue, r.tokens.to_vec()));
                in_device.push(r);
            } else if !in_device.is_empty() {
                now += Duration::from_micros(500);
                let r = in_device.remove(0);
                finish(&mut q, r, now, &owner_of, &mut done)?;
            } else {
                match q.next_timer() {
                    Some(t) if t > now => now = t,
                    _ => return Err("requests wait, nothing is in flight and no timer".into()),
                }
            }
            q.check()?;
        }
        if let Some(t) = done.iter().position(|&n| n != 1) {
            return Err(format!("token {t} completed {} times", done[t]));
        }
        Ok(trace)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        /// Whatever the threads, positions, arrivals and completions: every request completes
        /// exactly once with its parts credited to their threads, no thread routes to a dropped
        /// queue, no merge chain loops, the queues stay within their bound, and the same seed
        /// dispatches the same way.
        #[test]
        fn merges_and_splits_lose_no_request(seed in any::<u64>()) {
            let first = run(seed);
            prop_assert!(first.is_ok(), "seed {seed}: {}", first.clone().unwrap_err());
            prop_assert_eq!(first, run(seed), "seed {}: not deterministic", seed);
        }
    }
}
