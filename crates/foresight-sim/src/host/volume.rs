//! The volume below the caches: member disks, each with its own block queue, and the RAID-0 split.
//!
//! A volume request (a byte range of the volume) is split at strip boundaries into member requests,
//! as Linux's md driver splits bios (paper 000_a596543dd26dac72.txt section 3, Fig. 3); pieces that
//! are contiguous on one member stay one request. Each member has its own block queue, where requests
//! merge and are ordered by the member's own elevator, in front of the member's device model; that is
//! what makes one stream's request occupy one disk or several (the independence the paper measures).
//! A single device is a volume of one member with no striping; a JBOD concatenates independent
//! members (paper 001_9c47c4c84914efc3.txt, section 5.3: eight disks behind one controller). When a
//! controller bandwidth is set, every member's data crosses one shared link in completion order at
//! that rate, so the members together never deliver more than the controller can carry. The volume
//! reports a request done, with the caller's token, when its last member request has crossed.
//!
//! A step of the simulation touches few members, so the volume keeps what it would otherwise find by
//! visiting every member: the members' next completions in order, how full the fullest member queue
//! is, and which members changed since they were last fed. A member whose queue pops whenever its
//! disk can take a request (`noop`, `deadline`) and that nothing touched has nothing to dispatch, so
//! only touched members are fed; the anticipatory scheduler holds a disk on timers and on statistics
//! shared across members, so with it every member is fed every time. Members are always visited in
//! index order, as a walk over all of them would, so results do not depend on the bookkeeping.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use foresight_core::{Bandwidth, ByteLen, Duration, Instant, Lba, SECTOR_BYTES};
use foresight_device::{Breakdown, Completion, DevRequest, Device, Op};
use foresight_policy::layout::Striping;
use rustc_hash::FxHashMap;

use super::blockq::{BlockQueue, BlockReq, Owners};

struct Member {
    device: Box<dyn Device>,
    queue: BlockQueue,
    /// Parts waiting for a request slot of `queue` (submitters asleep on Linux's `nr_requests`),
    /// in arrival order, with the instant each arrived.
    waiting: VecDeque<Waiting>,
    in_device: FxHashMap<u64, BlockReq>,
    /// The sector after the last request this member completed, if any.
    last_end: Option<u64>,
    /// The device's next event as entered in `Volume::next_device_events`.
    indexed_event: Option<Instant>,
    /// Requests queued or waiting for a slot, as counted in `Volume::occupancy`.
    indexed_occupancy: usize,
    /// Whether it is in `Volume::touched`.
    touched: bool,
    /// What it served.
    served: MemberServed,
}

/// What one member served, for the run's report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemberServed {
    /// Requests completed.
    pub requests: u64,
    /// Bytes of those requests.
    pub bytes: u64,
    /// Requests its drive cache served.
    pub cache_hits: u64,
    /// Service time (overhead, seek, rotation, transfer), queue waits excluded.
    pub busy: Duration,
}

impl Member {
    fn occupancy(&self) -> usize {
        self.queue.len() + self.waiting.len()
    }
}

#[derive(Clone, Copy, Debug)]
struct Waiting {
    op: Op,
    lba: u64,
    sectors: u32,
    job: u32,
    owner: Option<u32>,
    since: Instant,
}

#[derive(Clone, Copy, Debug)]
struct Job {
    token: u64,
    parts_left: u32,
}

/// Per-volume counters.
#[derive(Clone, Copy, Debug, Default)]
pub struct VolumeStats {
    /// Member requests served.
    pub device_requests: u64,
    /// Bytes the members served.
    pub device_bytes: u64,
    /// Member requests the drives' caches served.
    pub device_cache_hits: u64,
    /// Merges in the member queues.
    pub merges: u64,
    /// Member requests that began at the sector after the request the same member completed
    /// before them: back-to-back sequential commands, which a disk serves without repositioning.
    pub sequential_requests: u64,
    /// Device time by component, summed over every member request, including the wait in the
    /// member's block queue.
    pub breakdown: Breakdown,
    /// Times a member queue held its disk idle for a stream (the anticipatory scheduler).
    pub antic_waits: u64,
}

/// The member parts no member has read yet, by the token of the volume request they belong to.
/// See [`Volume::unread_parts`].
#[derive(Debug, Default)]
pub struct UnreadParts {
    by_token: FxHashMap<u64, TokenParts>,
}

/// One request's unread parts, indexed so that asking whether a range meets any of them takes a
/// binary search: a request split into requests of at most `host.max_request` can have hundreds
/// of thousands of parts, and the end-of-run accounting asks once per page, so scanning them all
/// each time made that accounting quadratic (a 1 GiB fetch in 4 KiB parts took 20 s).
#[derive(Debug, Default)]
struct TokenParts {
    /// `(member, first sector, end sector)`, sorted.
    parts: Vec<(usize, u64, u64)>,
    /// For each index, the largest end sector among the parts of the same member up to it, so
    /// that parts overlapping each other (merged requests) need no special case.
    max_end: Vec<u64>,
}

impl TokenParts {
    /// Sorts `parts` (`(member, lba, sectors)`) and builds the running ends.
    fn new(mut parts: Vec<(usize, u64, u64)>) -> TokenParts {
        for p in &mut parts {
            p.2 += p.1;
        }
        parts.sort_unstable();
        let mut max_end = Vec::with_capacity(parts.len());
        for (i, &(d, _, end)) in parts.iter().enumerate() {
            let before = match i.checked_sub(1) {
                Some(j) if parts[j].0 == d => max_end[j],
                _ => 0,
            };
            max_end.push(end.max(before));
        }
        TokenParts { parts, max_end }
    }

    /// Whether any part on member `d` meets sectors `lba..lba + sectors`.
    fn meets(&self, d: usize, lba: u64, sectors: u64) -> bool {
        let end = lba + sectors;
        // The parts of member `d` that start before `end`; the last of them has the largest end
        // of them all in `max_end`.
        let from = self.parts.partition_point(|&(pd, _, _)| pd < d);
        let to = self
            .parts
            .partition_point(|&(pd, pl, _)| (pd, pl) < (d, end));
        to > from && self.max_end[to - 1] > lba
    }
}

/// How volume addresses map onto members.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mapping {
    /// One member.
    Single,
    /// RAID-0 striping over all members.
    Striped(Striping),
    /// Members one after another (JBOD).
    Concat,
}

/// The volume. See the module documentation.
pub struct Volume {
    members: Vec<Member>,
    mapping: Mapping,
    member_sectors: u64,
    controller: Option<Bandwidth>,
    link_free: Instant,
    /// Member requests crossing the controller: `(done at, bytes, job ids)`, in order.
    link: VecDeque<(Instant, smallvec::SmallVec<[u32; 4]>)>,
    jobs: Vec<Option<Job>>,
    free_jobs: Vec<u32>,
    capacity_sectors: u64,
    stats: VolumeStats,
    comps: Vec<Completion>,
    /// Per-stream I/O statistics the anticipatory scheduler shares across member queues.
    owners: Owners,
    /// Every member's next device event, `(instant, member)`.
    next_device_events: BTreeSet<(Instant, u32)>,
    /// How many members hold each number of queued and waiting requests.
    occupancy: BTreeMap<usize, u32>,
    /// Members submitted to or advanced since they were last fed (see the module documentation).
    touched: Vec<u32>,
    /// Whether a member queue may hold its disk idle with requests queued (anticipatory), so
    /// that every member is fed every time.
    feed_all: bool,
    /// Whether due members are found by asking every member, not from the index (the reference
    /// the index is tested against).
    ask_every_member: bool,
    /// The request slots of every member queue (all are built alike).
    queue_limit: usize,
    /// Parts of volume requests not yet done: the controller link's bound, as each of its
    /// entries carries at least one of them.
    parts_live: usize,
}

impl Volume {
    /// A volume over `members` mapped as given, each member behind its own block queue (built by
    /// `queue`), optionally behind one controller of bandwidth `controller`.
    pub fn new(
        members: Vec<Box<dyn Device>>,
        mapping: Mapping,
        controller: Option<Bandwidth>,
        queue: impl Fn() -> BlockQueue,
    ) -> Volume {
        assert!(!members.is_empty());
        match mapping {
            Mapping::Single => assert_eq!(members.len(), 1, "several members need a mapping"),
            Mapping::Striped(s) => assert_eq!(
                s.disks as usize,
                members.len(),
                "striping must name every member"
            ),
            Mapping::Concat => {}
        }
        let member_sectors = members
            .iter()
            .map(|m| m.capacity().0 / SECTOR_BYTES)
            .min()
            .expect("non-empty");
        let capacity_sectors = match mapping {
            Mapping::Single => member_sectors,
            Mapping::Striped(s) => {
                let strip_sectors = s.strip_bytes / SECTOR_BYTES;
                member_sectors / strip_sectors * strip_sectors * s.disks as u64
            }
            Mapping::Concat => member_sectors * members.len() as u64,
        };
        let members: Vec<Member> = members
            .into_iter()
            .map(|device| Member {
                device,
                queue: queue(),
                waiting: VecDeque::new(),
                in_device: FxHashMap::default(),
                last_end: None,
                indexed_event: None,
                indexed_occupancy: 0,
                touched: false,
                served: MemberServed::default(),
            })
            .collect();
        let queue_limit = members[0].queue.limit();
        assert!(
            members.iter().all(|m| m.queue.limit() == queue_limit),
            "member queues built with different bounds"
        );
        assert!(
            members.iter().all(|m| m.device.next_event().is_none()),
            "a member device busy before the volume was built"
        );
        let feed_all = members.iter().any(|m| m.queue.may_hold_disk());
        let occupancy = BTreeMap::from([(0, members.len() as u32)]);
        Volume {
            members,
            mapping,
            member_sectors,
            controller,
            link_free: Instant::ZERO,
            link: VecDeque::new(),
            jobs: Vec::new(),
            free_jobs: Vec::new(),
            capacity_sectors,
            stats: VolumeStats::default(),
            comps: Vec::with_capacity(64),
            owners: Owners::default(),
            next_device_events: BTreeSet::new(),
            occupancy,
            touched: Vec::new(),
            feed_all,
            ask_every_member: false,
            queue_limit,
            parts_live: 0,
        }
    }

    /// Notes that member `d` changed: it is entered again ([`Volume::reindex`]) and fed at the
    /// next [`Volume::dispatch`].
    fn touch(&mut self, d: usize) {
        self.reindex(d);
        let m = &mut self.members[d];
        if !m.touched {
            m.touched = true;
            self.touched.push(d as u32);
        }
    }

    /// Enters member `d`'s device's next event and its queue's fill again.
    fn reindex(&mut self, d: usize) {
        let m = &mut self.members[d];
        let event = m.device.next_event();
        if event != m.indexed_event {
            if let Some(t) = m.indexed_event {
                self.next_device_events.remove(&(t, d as u32));
            }
            if let Some(t) = event {
                self.next_device_events.insert((t, d as u32));
            }
            m.indexed_event = event;
        }
        let occupancy = m.occupancy();
        if occupancy != m.indexed_occupancy {
            let count = self
                .occupancy
                .get_mut(&m.indexed_occupancy)
                .expect("every member's fill is counted");
            *count -= 1;
            if *count == 0 {
                self.occupancy.remove(&m.indexed_occupancy);
            }
            *self.occupancy.entry(occupancy).or_insert(0) += 1;
            m.indexed_occupancy = occupancy;
        }
    }

    /// Addressable sectors.
    pub fn capacity_sectors(&self) -> u64 {
        self.capacity_sectors
    }

    /// Sectors of one member (the smallest, when they differ).
    pub fn member_sectors(&self) -> u64 {
        self.member_sectors
    }

    /// Number of members.
    pub fn members(&self) -> usize {
        self.members.len()
    }

    /// What each member served so far, in member order.
    pub fn members_served(&self) -> Vec<MemberServed> {
        self.members.iter().map(|m| m.served).collect()
    }

    /// Counters so far.
    pub fn stats(&self) -> VolumeStats {
        let mut s = self.stats;
        s.merges = self.members.iter().map(|m| m.queue.merges()).sum();
        s.antic_waits = self.members.iter().map(|m| m.queue.antic_waits()).sum();
        s
    }

    /// The parts of the volume requests not yet completed that no member has read yet: those
    /// queued, waiting for a queue slot, or in a device. A part its member has finished is read,
    /// and in `device_bytes`, though the request it belongs to completes only with its last part
    /// (or, behind a controller, once that part has crossed the link). Built once, at the end of
    /// a run, to tell which pages of reads still under way the members have read already.
    pub fn unread_parts(&self) -> UnreadParts {
        let mut by_token: FxHashMap<u64, Vec<(usize, u64, u64)>> = FxHashMap::default();
        for (d, m) in self.members.iter().enumerate() {
            let mut add = |jobs: &[u32], lba: u64, sectors: u64| {
                for &job in jobs {
                    let token = self.jobs[job as usize].as_ref().expect("live job").token;
                    by_token.entry(token).or_default().push((d, lba, sectors));
                }
            };
            for r in m.queue.queued().chain(m.in_device.values()) {
                add(&r.tokens, r.lba, u64::from(r.sectors));
            }
            for w in &m.waiting {
                add(&[w.job], w.lba, u64::from(w.sectors));
            }
        }
        UnreadParts {
            by_token: by_token
                .into_iter()
                .map(|(token, parts)| (token, TokenParts::new(parts)))
                .collect(),
        }
    }

    /// Whether the members have read every sector of `lba..lba + sectors` that the request
    /// `token` (submitted, and possibly completed) asked of them: none lies in one of its parts in
    /// `unread`. A part merged with other requests' covers their sectors too; the same sectors are
    /// never in flight for two requests at once, so that marks no sector of `token`'s unread.
    pub fn has_read(&self, unread: &UnreadParts, token: u64, lba: u64, sectors: u64) -> bool {
        let Some(parts) = unread.by_token.get(&token) else {
            return true;
        };
        let mut read = true;
        self.for_each_piece(lba, sectors, |d, l, n| {
            read &= !parts.meets(d, l, n);
        });
        read
    }

    /// Whether every member queue can take `pieces` more requests.
    pub fn has_room(&self, pieces: usize) -> bool {
        let fullest = *self
            .occupancy
            .last_key_value()
            .expect("every member's fill is counted")
            .0;
        debug_assert_eq!(
            fullest,
            self.members
                .iter()
                .map(Member::occupancy)
                .max()
                .unwrap_or(0),
            "the fill index went stale"
        );
        fullest + pieces <= self.queue_limit
    }

    /// The member requests a volume range becomes: `(member, member lba, sectors)` pieces, split at
    /// strip boundaries and merged where contiguous on one member.
    pub fn for_each_piece(&self, lba: u64, sectors: u64, mut each: impl FnMut(usize, u64, u64)) {
        match self.mapping {
            Mapping::Single => each(0, lba, sectors),
            Mapping::Concat => {
                let mut pos = lba;
                while pos < lba + sectors {
                    let m = pos / self.member_sectors;
                    let within = pos % self.member_sectors;
                    let n = (self.member_sectors - within).min(lba + sectors - pos);
                    each(m as usize, within, n);
                    pos += n;
                }
            }
            Mapping::Striped(s) => {
                let raid =
                    foresight_device::raid0::Raid0Layout::new(s.disks as usize, s.strip_bytes)
                        .expect("striping validated by the config");
                let mut pos = lba;
                // Raid0Layout takes u32 sector counts: walk very large requests in chunks.
                while pos < lba + sectors {
                    let n = (lba + sectors - pos).min(1 << 30);
                    raid.split(Lba(pos), n as u32, |d, l, c| each(d, l.0, c as u64));
                    pos += n;
                }
            }
        }
    }

    /// Submits a volume request issued by stream `owner` (if known); `token` comes back from
    /// [`Volume::advance`] when it completes. Returns the number of member requests it became.
    pub fn submit(
        &mut self,
        now: Instant,
        op: Op,
        lba: u64,
        sectors: u64,
        token: u64,
        owner: Option<u32>,
    ) -> u32 {
        assert!(
            sectors > 0 && lba + sectors <= self.capacity_sectors,
            "volume request out of range"
        );
        let job = foresight_core::take_slot(&mut self.jobs, &mut self.free_jobs, None);
        let mut pieces: smallvec::SmallVec<[(usize, u64, u64); 8]> = smallvec::SmallVec::new();
        self.for_each_piece(lba, sectors, |d, l, n| pieces.push((d, l, n)));
        let mut parts = 0u32;
        for (d, l, n) in pieces {
            let m = &mut self.members[d];
            let max = m.queue.max_sectors() as u64;
            let mut pos = l;
            while pos < l + n {
                let len = (l + n - pos).min(max);
                // Parts keep their order: while some wait for a slot, later ones wait behind them,
                // except the stream an anticipating queue waits for, which may always queue.
                if m.queue.waits_for(owner) {
                    m.queue
                        .push(now, op, pos, len as u32, job, owner, &mut self.owners);
                } else if !m.waiting.is_empty()
                    || !m
                        .queue
                        .try_push(now, op, pos, len as u32, job, owner, &mut self.owners)
                {
                    m.waiting.push_back(Waiting {
                        op,
                        lba: pos,
                        sectors: len as u32,
                        job,
                        owner,
                        since: now,
                    });
                    assert!(
                        m.queue.len() + m.waiting.len() <= m.queue.limit(),
                        "block queue and its waiters over the bound of {}",
                        m.queue.limit()
                    );
                }
                parts += 1;
                pos += len;
            }
            self.touch(d);
        }
        self.jobs[job as usize] = Some(Job {
            token,
            parts_left: parts,
        });
        self.parts_live += parts as usize;
        parts
    }

    /// Feeds idle members from their queues.
    pub fn dispatch(&mut self, now: Instant) {
        let mut feed = std::mem::take(&mut self.touched);
        if self.feed_all {
            feed.clear();
            feed.extend(0..self.members.len() as u32);
        } else {
            feed.sort_unstable();
        }
        for &d in &feed {
            self.members[d as usize].touched = false;
        }
        for &d in &feed {
            let m = &mut self.members[d as usize];
            loop {
                // Parts waiting for a request slot move in as slots free, so the elevator always
                // sees as many requests as the slots allow.
                while let Some(w) = m.waiting.front().copied() {
                    if !m.queue.try_push(
                        now,
                        w.op,
                        w.lba,
                        w.sectors,
                        w.job,
                        w.owner,
                        &mut self.owners,
                    ) {
                        break;
                    }
                    m.waiting.pop_front();
                    self.stats.breakdown.queue += now - w.since;
                }
                if !m.device.can_accept() {
                    break;
                }
                let Some(r) = m.queue.pop(now, &mut self.owners) else {
                    break;
                };
                self.stats.breakdown.queue += now - r.arrival;
                m.device.submit(
                    now,
                    DevRequest {
                        id: r.id,
                        op: r.op,
                        lba: Lba(r.lba),
                        sectors: r.sectors,
                    },
                );
                m.in_device.insert(r.id, r);
            }
            self.reindex(d as usize);
        }
        debug_assert!(self.touched.is_empty(), "feeding touched no member");
        // What makes feeding only touched members enough: every member has a busy disk or nothing
        // queued (while the queue is empty, no part waits for a slot).
        debug_assert!(
            self.feed_all
                || self
                    .members
                    .iter()
                    .all(|m| !m.device.can_accept() || m.occupancy() == 0),
            "a member left unfed had a request for its idle disk"
        );
        feed.clear();
        self.touched = feed;
    }

    /// The same volume feeding every member every time, as if its queues could hold their disks,
    /// and asking every member whether it is due: the reference the bookkeeping is tested against.
    #[cfg(test)]
    fn walking_every_member(mut self) -> Volume {
        self.feed_all = true;
        self.ask_every_member = true;
        self
    }

    /// The earliest instant a member or the controller needs advancing, or a member queue that
    /// holds its disk idle wants to dispatch.
    pub fn next_event(&self) -> Option<Instant> {
        let link = self.link.front().map(|(t, _)| *t);
        let device = self.next_device_events.first().map(|&(t, _)| t);
        debug_assert_eq!(
            device,
            self.members
                .iter()
                .filter_map(|m| m.device.next_event())
                .min(),
            "the device event index went stale"
        );
        // Only a queue that may hold its disk sets a timer.
        let waits = self
            .members
            .iter()
            .filter(|_| self.feed_all)
            .filter(|m| m.device.can_accept())
            .filter_map(|m| m.queue.timer());
        device.into_iter().chain(link).chain(waits).min()
    }

    fn part_done(&mut self, job: u32, done: &mut Vec<u64>) {
        let j = self.jobs[job as usize].as_mut().expect("live job");
        j.parts_left -= 1;
        self.parts_live -= 1;
        if j.parts_left == 0 {
            done.push(j.token);
            self.jobs[job as usize] = None;
            self.free_jobs.push(job);
        }
    }

    /// Advances every member to `now`; appends the tokens of volume requests that completed.
    pub fn advance(&mut self, now: Instant, done: &mut Vec<u64>) {
        // The members due, in index order, as a walk over all of them would meet them.
        let due: smallvec::SmallVec<[u32; 8]> = if self.ask_every_member {
            (0..self.members.len() as u32)
                .filter(|&d| {
                    self.members[d as usize]
                        .device
                        .next_event()
                        .is_some_and(|t| t <= now)
                })
                .collect()
        } else {
            let mut due: smallvec::SmallVec<[u32; 8]> = self
                .next_device_events
                .iter()
                .take_while(|&&(t, _)| t <= now)
                .map(|&(_, d)| d)
                .collect();
            // All are due at `now` (nothing lags), so index order is member order already.
            due.sort_unstable();
            due
        };
        for d in due {
            let d = d as usize;
            let mut comps = std::mem::take(&mut self.comps);
            self.members[d].device.advance(now, &mut comps);
            for c in comps.drain(..) {
                let m = &mut self.members[d];
                let r = m
                    .in_device
                    .remove(&c.id)
                    .expect("completion for a request the member got");
                m.queue.completed(now, &r, &mut self.owners);
                // A disk serves one command at a time, so completion order is service order.
                self.stats.sequential_requests += (m.last_end == Some(r.lba)) as u64;
                m.last_end = Some(r.lba + r.sectors as u64);
                self.stats.device_requests += 1;
                self.stats.device_bytes += r.sectors as u64 * SECTOR_BYTES;
                self.stats.device_cache_hits += c.cache_hit as u64;
                self.stats.breakdown.add(&c.breakdown);
                let served = &mut self.members[d].served;
                served.requests += 1;
                served.bytes += r.sectors as u64 * SECTOR_BYTES;
                served.cache_hits += c.cache_hit as u64;
                served.busy += c.breakdown.total() - c.breakdown.queue;
                match self.controller {
                    None => {
                        for &job in &r.tokens {
                            self.part_done(job, done);
                        }
                    }
                    Some(rate) => {
                        // The data crosses the shared controller in completion order.
                        let start = self.link_free.max(now);
                        let end = start + rate.time_for(ByteLen(r.sectors as u64 * SECTOR_BYTES));
                        self.stats.breakdown.queue += start - now;
                        self.stats.breakdown.transfer += end - start;
                        self.link_free = end;
                        self.link.push_back((end, r.tokens.clone()));
                        // Every entry is a member request done at its disk and not yet across,
                        // holding parts of live volume requests. Not the member queues' slots: a
                        // part leaves its slot when its disk starts it, so behind a controller
                        // slower than the disks the link outgrew them (two 488 MiB trace reads
                        // at 10 MiB/s panicked here).
                        assert!(
                            self.link.len() <= self.parts_live,
                            "controller link over its bound of {}",
                            self.parts_live
                        );
                    }
                }
            }
            self.comps = comps;
            self.touch(d);
        }
        while self.link.front().is_some_and(|(t, _)| *t <= now) {
            let (_, jobs) = self.link.pop_front().expect("checked");
            for job in jobs {
                self.part_done(job, done);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use foresight_core::Duration;

    fn striped(disks: u32, strip_sectors: u64) -> Volume {
        let members = (0..disks)
            .map(|_| {
                foresight_device::presets::build(
                    &foresight_device::presets::preset("cheetah-15k5").expect("preset"),
                )
            })
            .collect();
        Volume::new(
            members,
            Mapping::Striped(Striping {
                disks,
                strip_bytes: strip_sectors * SECTOR_BYTES,
            }),
            None,
            || {
                BlockQueue::new(
                    crate::config::Scheduler::Noop,
                    1024,
                    Duration::from_millis(500),
                    64,
                )
            },
        )
    }

    /// The volume feeds only the members a step touched and finds due members from an index;
    /// a volume that feeds every member every time, under the same requests (one strip on every
    /// member at once, then a seeded mix of sizes and places on 24 members, with slots short
    /// enough that parts wait), completes the same requests at the same instants in the same
    /// order.
    #[test]
    fn feeding_touched_members_equals_feeding_all_of_them() {
        for seed in 1..=4u64 {
            let run = |mut v: Volume| {
                let mut rng = foresight_core::rng::Rng::new(seed);
                let capacity = v.capacity_sectors();
                let (mut now, mut token, mut done, mut log) = (Instant::ZERO, 0u64, vec![], vec![]);
                // First one strip on every member, last member first: alike disks finish them at
                // one instant, where the order of completions is the members' order.
                for d in (0..24u64).rev() {
                    v.submit(now, Op::Read, d * 16, 16, token, None);
                    token += 1;
                }
                while token < 3000 || v.next_event().is_some() {
                    if token < 3000 && v.has_room(4) {
                        let sectors = 8 + rng.next_u64() % 1024;
                        let lba = rng.next_u64() % (capacity / 64 - sectors);
                        v.submit(now, Op::Read, lba, sectors, token, Some((token % 7) as u32));
                        token += 1;
                        if !rng.next_u64().is_multiple_of(3) {
                            v.dispatch(now);
                            continue;
                        }
                    }
                    v.dispatch(now);
                    let Some(t) = v.next_event() else { continue };
                    now = t;
                    v.advance(now, &mut done);
                    log.extend(done.drain(..).map(|tok| (now, tok)));
                }
                (log, v.stats().device_requests)
            };
            let fast = run(striped(24, 16));
            let all = run(striped(24, 16).walking_every_member());
            assert_eq!(
                fast.0.len(),
                3000,
                "seed {seed}: not every request completed"
            );
            assert_eq!(fast, all, "seed {seed}: the two volumes diverged");
        }
    }

    #[test]
    fn splits_at_strip_boundaries() {
        let v = striped(5, 8);
        let mut pieces = vec![];
        // Sectors 4..28 touch strips 0 (disk 0), 1 (disk 1), 2 (disk 2), 3 (disk 3).
        v.for_each_piece(4, 24, |d, l, n| pieces.push((d, l, n)));
        assert_eq!(pieces, vec![(0, 4, 4), (1, 0, 8), (2, 0, 8), (3, 0, 4)]);
        // A whole stripe plus one strip: disk 0 gets strips 0 and 5, contiguous on the member, as
        // one request.
        let mut pieces = vec![];
        v.for_each_piece(0, 48, |d, l, n| pieces.push((d, l, n)));
        assert_eq!(pieces[0], (0, 0, 16));
        assert_eq!(pieces.len(), 5);
    }

    #[test]
    fn a_controller_caps_the_members_together() {
        let members: Vec<Box<dyn Device>> = (0..4)
            .map(|_| {
                foresight_device::presets::build(
                    &foresight_device::presets::preset("cheetah-15k5").expect("preset"),
                )
            })
            .collect();
        let rate = Bandwidth::from_mib_s(100.0);
        let mut v = Volume::new(members, Mapping::Concat, Some(rate), || {
            BlockQueue::new(
                crate::config::Scheduler::Noop,
                2048,
                Duration::from_millis(500),
                64,
            )
        });
        let per = v.member_sectors();
        // 64 MiB from each of the four members, 256 MiB in all, through a 100 MiB/s controller.
        let mut token = 0;
        for m in 0..4u64 {
            for k in 0..64u64 {
                v.submit(
                    Instant::ZERO,
                    Op::Read,
                    m * per + k * 2048,
                    2048,
                    token,
                    None,
                );
                token += 1;
            }
        }
        let mut done = vec![];
        let mut t = Instant::ZERO;
        while done.len() < token as usize {
            v.dispatch(t);
            t = v.next_event().expect("busy");
            v.advance(t, &mut done);
        }
        let secs = t.as_secs_f64();
        assert!(
            secs >= 2.56 * 0.999,
            "256 MiB crossed a 100 MiB/s controller in {secs} s"
        );
        let mut pieces = vec![];
        v.for_each_piece(per - 8, 16, |d, l, n| pieces.push((d, l, n)));
        assert_eq!(pieces, vec![(0, per - 8, 8), (1, 0, 8)]);
    }

    /// Behind a controller slower than its disk, requests done at the disk wait to cross it while
    /// the queue's freed slots take new parts. The link was asserted within the queue's slots and
    /// the requests in the device (10 here), and two requests of 8 parts each panicked (a trace
    /// replay of two large reads at `device.controller_mib_s = 10`). Its bound is the parts of
    /// live requests, each entry holding at least one.
    #[test]
    fn a_slow_controller_holds_more_requests_than_the_queue_has_slots() {
        let members: Vec<Box<dyn Device>> = vec![foresight_device::presets::build(
            &foresight_device::presets::preset("cheetah-15k5").expect("preset"),
        )];
        let rate = Bandwidth::from_mib_s(1.0);
        let mut v = Volume::new(members, Mapping::Concat, Some(rate), || {
            BlockQueue::new(
                crate::config::Scheduler::Noop,
                256,
                Duration::from_millis(500),
                8,
            )
        });
        v.submit(Instant::ZERO, Op::Read, 0, 8 * 256, 1, None);
        let mut done = vec![];
        let mut t = Instant::ZERO;
        // Until the first request's parts have all left the queue for the disk.
        while !v.members[0].queue.is_empty() || !v.members[0].in_device.is_empty() {
            v.dispatch(t);
            t = v.next_event().expect("busy");
            v.advance(t, &mut done);
        }
        v.submit(t, Op::Read, 8 * 256, 8 * 256, 2, None);
        let mut link_peak = 0;
        while done.len() < 2 {
            v.dispatch(t);
            t = v.next_event().expect("busy");
            v.advance(t, &mut done);
            link_peak = link_peak.max(v.link.len());
        }
        assert!(link_peak > 8 + 2, "the link held at most {link_peak}");
        assert_eq!(v.parts_live, 0);
        // 2 MiB across 1 MiB/s.
        assert!(t.as_secs_f64() >= 2.0 * 0.999, "{t:?}");
    }

    /// Submits one volume request at `t` and runs it to completion; returns when it completed.
    fn complete(v: &mut Volume, mut t: Instant, lba: u64, sectors: u64) -> Instant {
        v.submit(t, Op::Read, lba, sectors, 0, None);
        let mut done = vec![];
        while done.is_empty() {
            v.dispatch(t);
            t = v.next_event().expect("busy");
            v.advance(t, &mut done);
        }
        t
    }

    #[test]
    fn counts_requests_that_continue_the_members_previous_one() {
        // Two disks, 8-sector strips: volume strips 0, 2 and 6 are member sectors 0, 8 and 24 of
        // disk 0, so strip 2 continues strip 0 on the member and strip 6 does not continue strip 2.
        let mut v = striped(2, 8);
        let mut t = Instant::ZERO;
        for lba in [0, 16, 48] {
            t = complete(&mut v, t, lba, 8);
        }
        // Disk 1's first request (strip 1, member sector 0) follows nothing on that member.
        complete(&mut v, t, 8, 8);
        let s = v.stats();
        assert_eq!((s.device_requests, s.sequential_requests), (4, 1));
    }

    #[test]
    fn a_request_completes_when_all_its_parts_do() {
        let mut v = striped(2, 8);
        let parts = v.submit(Instant::ZERO, Op::Read, 0, 16, 77, None);
        assert_eq!(parts, 2);
        v.dispatch(Instant::ZERO);
        let mut done = vec![];
        while done.is_empty() {
            let t = v.next_event().expect("busy");
            v.advance(t, &mut done);
        }
        assert_eq!(done, vec![77]);
        assert_eq!(v.stats().device_requests, 2);
    }

    proptest::proptest! {
        /// The index of a request's unread parts answers as scanning every part did (the
        /// algorithm it replaced): random parts on a few members, overlapping, empty and merged
        /// ones included, and random ranges asked of them. A failure names the seed.
        #[test]
        fn unread_parts_index_answers_as_a_scan_of_every_part(seed in proptest::prelude::any::<u64>()) {
            let mut rng = foresight_core::rng::Rng::new(seed);
            let parts: Vec<(usize, u64, u64)> = (0..rng.below(40))
                .map(|_| (rng.below(3) as usize, rng.below(300), rng.below(40)))
                .collect();
            let index = TokenParts::new(parts.clone());
            for _ in 0..200 {
                let (d, l, n) = (rng.below(4) as usize, rng.below(360), rng.below(50));
                let scan = parts
                    .iter()
                    .any(|&(pd, pl, pn)| pd == d && pl < l + n && l < pl + pn);
                proptest::prop_assert_eq!(
                    index.meets(d, l, n),
                    scan,
                    "seed {}: parts {:?}, asked member {} sectors {}+{}",
                    seed,
                    parts,
                    d,
                    l,
                    n
                );
            }
        }
    }

    /// While a request split across two members waits for its second part, the first part's
    /// sectors are read (and in `device_bytes`), the second's are not; once it completes, all are.
    /// Another request's parts say nothing about it.
    #[test]
    fn the_part_a_member_finished_is_read_before_its_request_completes() {
        // 64 KiB strips: volume sectors 0..128 are disk 0's, 128..256 disk 1's.
        let mut v = striped(2, 128);
        // Disk 1 is busy with a long read (a strip of its own, far away) first.
        v.submit(Instant::ZERO, Op::Read, 128 * 1001, 128, 1, None);
        v.dispatch(Instant::ZERO);
        assert_eq!(v.submit(Instant::ZERO, Op::Read, 0, 256, 2, None), 2);
        v.dispatch(Instant::ZERO);
        let unread = v.unread_parts();
        assert!(!v.has_read(&unread, 2, 0, 128) && !v.has_read(&unread, 2, 128, 128));
        let mut done = vec![];
        while v.stats().device_bytes < 128 * 2 * SECTOR_BYTES {
            let t = v.next_event().expect("busy");
            v.advance(t, &mut done);
            v.dispatch(t);
        }
        // Disk 0's part and disk 1's first read are done; request 2 is not.
        assert_eq!(done, vec![1]);
        let unread = v.unread_parts();
        assert!(v.has_read(&unread, 2, 0, 128), "disk 0's part is read");
        assert!(!v.has_read(&unread, 2, 128, 128), "disk 1's part is not");
        assert!(
            !v.has_read(&unread, 2, 120, 16),
            "a range across both is not"
        );
        assert!(v.has_read(&unread, 1, 128 * 1001, 128), "request 1 is done");
        while done.len() < 2 {
            let t = v.next_event().expect("busy");
            v.advance(t, &mut done);
        }
        assert!(v.has_read(&v.unread_parts(), 2, 0, 256));
    }
}
