//! RAID-0: a volume striped over member devices.
//!
//! The volume is cut into strips of `strip_bytes`; strip `k` lives on member `k % n` at member offset
//! `(k / n) * strip_bytes` (paper `000_a596543dd26dac72.txt`, section 1.1 and Fig. 1: a stripe is
//! divided into strips, each a set of contiguous blocks, as the RAID Advisory Board defines them; its
//! Fig. 3 places a 20-block file on blocks B16..B35 of such an array, which a unit test here maps). A
//! volume request is split at strip boundaries. Pieces that land on the same member
//! are adjacent there (strip `k` ends where strip `k + n` begins on member `k % n`), so each member
//! receives at most one request per volume request: a request crossing `k` strip boundaries becomes
//! `min(k + 1, n)` member requests.
//!
//! Each member has its own FIFO of parts in front of it, fed to the member whenever it can accept
//! (members keep their own queue discipline). The array accepts up to `per_member_outstanding * n`
//! volume requests (128 per member by default); since a volume request puts at most one part in each
//! member's FIFO, each FIFO is bounded by the same number, and everything is allocated once at
//! construction.
//!
//! Completion and breakdown: a volume request completes when its last part completes. Its
//! [`Breakdown`] is that last (critical) part's breakdown with `queue` extended by the time the part
//! waited in the array's FIFO, so the components add up to completion minus submission as the
//! [`Breakdown`] contract requires. Parts run in parallel, so the sum of all parts' breakdowns
//! exceeds the volume latency; that sum (the device time spent per component, the figure to add up
//! "over devices") is kept per member in [`Raid0::member_totals`] and in total in
//! [`Raid0::parts_total`]. `parts` counts the member requests; `cache_hit` is true only when every
//! part hit.
//!
//! Time: the array steps its members event by event (the earliest member event first), so a member
//! that frees up at `t` receives its next part at `t`, not at the next call. [`Device::next_event`]
//! reports the earliest member event, at which a volume request may or may not complete (see the
//! trait's documentation).

use std::collections::VecDeque;

use foresight_core::{ByteLen, Instant, Lba, SECTOR_BYTES};

use crate::error::DeviceError;
use crate::{Breakdown, Completion, DevRequest, Device};

/// Volume requests per member the array accepts by default.
pub const PER_MEMBER_OUTSTANDING_DEFAULT: usize = 128;

/// The address arithmetic of RAID-0, without devices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Raid0Layout {
    disks: u64,
    strip_sectors: u64,
}

impl Raid0Layout {
    /// `disks` members with strips of `strip_bytes` (a non-zero multiple of 512).
    pub fn new(disks: usize, strip_bytes: u64) -> Result<Raid0Layout, DeviceError> {
        if disks == 0 {
            return Err(DeviceError::Raid0(
                "an array needs at least one member".into(),
            ));
        }
        if strip_bytes == 0 || !strip_bytes.is_multiple_of(SECTOR_BYTES) {
            return Err(DeviceError::Raid0(format!(
                "strip_bytes = {strip_bytes} must be a non-zero multiple of 512 (e.g. 65536, 131072)"
            )));
        }
        Ok(Raid0Layout {
            disks: disks as u64,
            strip_sectors: strip_bytes / SECTOR_BYTES,
        })
    }

    /// Number of members.
    pub fn disks(&self) -> usize {
        self.disks as usize
    }

    /// Strip size in sectors.
    pub fn strip_sectors(&self) -> u64 {
        self.strip_sectors
    }

    /// The member and member LBA of volume sector `lba`.
    pub fn map(&self, lba: Lba) -> (usize, Lba) {
        let strip = lba.0 / self.strip_sectors;
        let within = lba.0 % self.strip_sectors;
        (
            (strip % self.disks) as usize,
            Lba((strip / self.disks) * self.strip_sectors + within),
        )
    }

    /// Calls `part(member, member_lba, sectors)` once for each member that holds part of volume sectors
    /// `[lba, lba + sectors)`, in member order, with the member's whole (contiguous) share. O(members).
    pub fn split(&self, lba: Lba, sectors: u32, mut part: impl FnMut(usize, Lba, u32)) {
        assert!(sectors >= 1);
        let ss = self.strip_sectors;
        let n = self.disks;
        let start = lba.0;
        let end = start + u64::from(sectors);
        let k0 = start / ss; // first strip touched
        let k1 = (end - 1) / ss; // last strip touched
        for d in 0..n {
            // First and last strips of the range that live on member d.
            let kf = k0 + (d + n - k0 % n) % n;
            if kf > k1 {
                continue;
            }
            let kl = k1 - (k1 % n + n - d) % n;
            let first = if kf == k0 { start - k0 * ss } else { 0 };
            let last_end = if kl == k1 { end - k1 * ss } else { ss };
            let m_start = (kf / n) * ss + first;
            let m_end = (kl / n) * ss + last_end;
            part(d as usize, Lba(m_start), (m_end - m_start) as u32);
        }
    }
}

/// A part waiting in front of a member.
#[derive(Clone, Copy, Debug)]
struct Part {
    slot: usize,
    req: DevRequest,
}

/// An outstanding volume request.
#[derive(Clone, Debug)]
struct VolSlot {
    id: u64,
    submitted: Instant,
    remaining: u32,
    parts: u32,
    all_hit: bool,
    /// When each member was handed its part.
    member_submit: Vec<Instant>,
}

/// A RAID-0 array of member devices, itself a [`Device`].
pub struct Raid0 {
    members: Vec<Box<dyn Device>>,
    layout: Raid0Layout,
    capacity_sectors: u64,
    fifo: Vec<VecDeque<Part>>,
    slots: Vec<VolSlot>,
    free: Vec<usize>,
    max_outstanding: usize,
    done: VecDeque<Completion>,
    scratch: Vec<Completion>,
    clock: Instant,
    parts_total: Breakdown,
    member_totals: Vec<Breakdown>,
}

impl Raid0 {
    /// An array over `members` with strips of `strip_bytes`, accepting 128 volume requests per member.
    /// Panics with the reason if the arguments cannot form an array; use [`Raid0::try_new`] for
    /// user input.
    pub fn new(members: Vec<Box<dyn Device>>, strip_bytes: u64) -> Raid0 {
        match Raid0::try_new(members, strip_bytes, PER_MEMBER_OUTSTANDING_DEFAULT) {
            Ok(r) => r,
            Err(e) => panic!("invalid RAID-0: {e}"),
        }
    }

    /// An array over `members` with strips of `strip_bytes`, accepting `per_member_outstanding`
    /// volume requests per member, or the reason it cannot be built.
    pub fn try_new(
        members: Vec<Box<dyn Device>>,
        strip_bytes: u64,
        per_member_outstanding: usize,
    ) -> Result<Raid0, DeviceError> {
        let layout = Raid0Layout::new(members.len(), strip_bytes)?;
        if per_member_outstanding == 0 {
            return Err(DeviceError::Raid0(
                "per_member_outstanding must be at least 1".into(),
            ));
        }
        let strip = layout.strip_sectors();
        let min_member = members
            .iter()
            .map(|m| m.capacity().0 / SECTOR_BYTES)
            .min()
            .unwrap_or(0);
        let strips_per_member = min_member / strip;
        if strips_per_member == 0 {
            return Err(DeviceError::Raid0(format!(
                "the smallest member holds {min_member} sectors, less than one strip of {strip}: use smaller strips"
            )));
        }
        let n = members.len();
        let max_outstanding = per_member_outstanding * n;
        let fifo: Vec<VecDeque<Part>> = (0..n)
            .map(|_| VecDeque::with_capacity(max_outstanding))
            .collect();
        let slots: Vec<VolSlot> = (0..max_outstanding)
            .map(|_| VolSlot {
                id: 0,
                submitted: Instant::ZERO,
                remaining: 0,
                parts: 0,
                all_hit: true,
                member_submit: vec![Instant::ZERO; n],
            })
            .collect();
        // Pop order: lowest slot first.
        let free: Vec<usize> = (0..max_outstanding).rev().collect();
        assert!(
            fifo.iter().all(|f| f.capacity() >= max_outstanding) && free.len() == max_outstanding
        );
        Ok(Raid0 {
            capacity_sectors: strips_per_member * strip * n as u64,
            layout,
            fifo,
            slots,
            free,
            max_outstanding,
            done: VecDeque::with_capacity(max_outstanding),
            scratch: Vec::with_capacity(max_outstanding),
            clock: Instant::ZERO,
            parts_total: Breakdown::default(),
            member_totals: vec![Breakdown::default(); n],
            members,
        })
    }

    /// The strip arithmetic.
    pub fn layout(&self) -> Raid0Layout {
        self.layout
    }

    /// The members, in stripe order.
    pub fn members(&self) -> &[Box<dyn Device>] {
        &self.members
    }

    /// Sum of the breakdowns of every completed part, per member: the device time by component.
    pub fn member_totals(&self) -> &[Breakdown] {
        &self.member_totals
    }

    /// Sum of the breakdowns of every completed part over all members.
    pub fn parts_total(&self) -> Breakdown {
        self.parts_total
    }

    /// Hands queued parts to members that can take them, at `t`.
    fn dispatch(&mut self, t: Instant) {
        for (m, member) in self.members.iter_mut().enumerate() {
            while member.can_accept() {
                let Some(p) = self.fifo[m].pop_front() else {
                    break;
                };
                member.submit(t, p.req);
                self.slots[p.slot].member_submit[m] = t;
            }
        }
    }

    /// Steps members through their events up to `now`, completing volume requests and refilling
    /// members at the instants they free up.
    fn run_until(&mut self, now: Instant) {
        assert!(
            now >= self.clock,
            "time went backwards: {now} after {}",
            self.clock
        );
        while let Some(t) = self.members.iter().filter_map(|m| m.next_event()).min() {
            if t > now {
                break;
            }
            for m in 0..self.members.len() {
                if self.members[m].next_event().is_none_or_after(t) {
                    continue;
                }
                self.members[m].advance(t, &mut self.scratch);
                for i in 0..self.scratch.len() {
                    let c = self.scratch[i];
                    self.part_done(m, c);
                }
                self.scratch.clear();
            }
            self.dispatch(t);
        }
        self.clock = now;
    }

    fn part_done(&mut self, member: usize, c: Completion) {
        self.parts_total.add(&c.breakdown);
        self.member_totals[member].add(&c.breakdown);
        let slot_index = c.id as usize;
        let slot = &mut self.slots[slot_index];
        assert!(
            slot.remaining > 0,
            "completion for a part that is not outstanding"
        );
        slot.remaining -= 1;
        slot.all_hit &= c.cache_hit;
        if slot.remaining == 0 {
            // The last part is the critical path; its wait in the array's FIFO is queueing too.
            let mut breakdown = c.breakdown;
            breakdown.queue += slot.member_submit[member] - slot.submitted;
            assert!(
                self.done.len() < self.max_outstanding,
                "completion buffer bound"
            );
            self.done.push_back(Completion {
                id: slot.id,
                at: c.at,
                breakdown,
                cache_hit: slot.all_hit,
                parts: slot.parts,
            });
            self.free.push(slot_index);
        }
    }
}

/// `None`, or an instant after `t`: "this member has nothing due at `t`".
trait NoneOrAfter {
    fn is_none_or_after(&self, t: Instant) -> bool;
}

impl NoneOrAfter for Option<Instant> {
    fn is_none_or_after(&self, t: Instant) -> bool {
        match self {
            None => true,
            Some(x) => *x > t,
        }
    }
}

impl Device for Raid0 {
    fn capacity(&self) -> ByteLen {
        ByteLen(self.capacity_sectors * SECTOR_BYTES)
    }

    fn can_accept(&self) -> bool {
        self.outstanding() < self.max_outstanding
    }

    fn submit(&mut self, now: Instant, req: DevRequest) {
        self.run_until(now);
        assert!(
            self.can_accept(),
            "submit to a full array (bound {})",
            self.max_outstanding
        );
        assert!(req.sectors >= 1, "request {} has no sectors", req.id);
        assert!(
            req.lba.0 + u64::from(req.sectors) <= self.capacity_sectors,
            "request {} runs past the end of the array",
            req.id
        );
        let slot_index = self.free.pop().expect("a free slot exists when can_accept");
        let layout = self.layout;
        let mut parts = 0u32;
        {
            let fifo = &mut self.fifo;
            let bound = self.max_outstanding;
            layout.split(req.lba, req.sectors, |m, lba, sectors| {
                assert!(fifo[m].len() < bound, "member FIFO bound");
                fifo[m].push_back(Part {
                    slot: slot_index,
                    req: DevRequest {
                        id: slot_index as u64,
                        op: req.op,
                        lba,
                        sectors,
                    },
                });
                parts += 1;
            });
        }
        let slot = &mut self.slots[slot_index];
        slot.id = req.id;
        slot.submitted = now;
        slot.remaining = parts;
        slot.parts = parts;
        slot.all_hit = true;
        self.dispatch(now);
    }

    /// The earliest member event; a volume request completes there only if it was its last part.
    fn next_event(&self) -> Option<Instant> {
        if let Some(c) = self.done.front() {
            return Some(c.at);
        }
        self.members.iter().filter_map(|m| m.next_event()).min()
    }

    fn advance(&mut self, now: Instant, out: &mut Vec<Completion>) {
        self.run_until(now);
        out.extend(self.done.drain(..));
    }

    fn outstanding(&self) -> usize {
        self.max_outstanding - self.free.len() + self.done.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ssd::{Ssd, SsdParams};
    use crate::testutil::{drive, Arrival};
    use crate::Op;
    use foresight_core::Duration;

    fn ssd() -> Box<dyn Device> {
        Box::new(Ssd::new(SsdParams {
            capacity: ByteLen::mib(64),
            read_latency: Duration::from_micros(50),
            write_latency: Duration::from_micros(50),
            channels: 4,
            read_bytes_per_s: 200e6,
            write_bytes_per_s: 200e6,
            queue_depth: 4,
        }))
    }

    fn collect(layout: &Raid0Layout, lba: u64, sectors: u32) -> Vec<(usize, u64, u32)> {
        let mut v = Vec::new();
        layout.split(Lba(lba), sectors, |d, l, s| v.push((d, l.0, s)));
        v
    }

    #[test]
    fn maps_blocks_16_to_35_like_raid0() {
        // 5 disks, strips of 4 blocks of 512 bytes.
        let l = Raid0Layout::new(5, 4 * 512).unwrap();
        for b in 16..=35u64 {
            let strip = b / 4;
            assert_eq!(
                l.map(Lba(b)),
                ((strip % 5) as usize, Lba((strip / 5) * 4 + b % 4))
            );
        }
        assert_eq!(l.map(Lba(16)), (4, Lba(0)));
        assert_eq!(l.map(Lba(20)), (0, Lba(4)));
        assert_eq!(l.map(Lba(35)), (3, Lba(7)));
        // Blocks 16..=35 are strips 4..=8: one piece on each of the five disks.
        let parts = collect(&l, 16, 20);
        assert_eq!(
            parts,
            vec![(0, 4, 4), (1, 4, 4), (2, 4, 4), (3, 4, 4), (4, 0, 4)]
        );
    }

    #[test]
    fn k_boundaries_give_k_plus_one_parts() {
        let l = Raid0Layout::new(5, 4 * 512).unwrap();
        for k in 0..5u32 {
            // Start mid-strip, cross k boundaries.
            let parts = collect(&l, 2, 2 + 4 * k);
            assert_eq!(parts.len() as u32, k + 1, "k = {k}: {parts:?}");
            assert_eq!(parts.iter().map(|p| p.2).sum::<u32>(), 2 + 4 * k);
        }
        // A request over more than a stripe still gives one contiguous piece per member.
        let parts = collect(&l, 3, 45);
        assert_eq!(parts.len(), 5);
        for &(d, lba, s) in &parts {
            for i in 0..u64::from(s) {
                // Every member sector maps back into the request.
                let member_strip = (lba + i) / 4;
                let vol = (member_strip * 5 + d as u64) * 4 + (lba + i) % 4;
                assert!((3..48).contains(&vol), "{d} {lba} {s}");
            }
        }
    }

    #[test]
    fn array_completes_when_all_parts_do() {
        let members: Vec<Box<dyn Device>> = (0..5).map(|_| ssd()).collect();
        let mut a = Raid0::new(members, 64 << 10);
        assert_eq!(a.capacity(), ByteLen::mib(320));
        // 256 KiB from offset 32 KiB: strips 0..=4 -> 5 parts.
        let done = drive(&mut a, &[Arrival::at(0, Op::Read, 64, 512)]);
        assert_eq!(done.len(), 1);
        let c = done[0].1;
        assert_eq!(c.parts, 5);
        assert_eq!(c.breakdown.total(), c.at - done[0].0);
        assert!(a.parts_total().total() > c.breakdown.total());
        assert_eq!(a.member_totals().len(), 5);
    }

    #[test]
    fn bad_arrays_are_rejected() {
        assert!(Raid0::try_new(vec![], 64 << 10, 128).is_err());
        assert!(Raid0::try_new(vec![ssd()], 1000, 128).is_err());
        assert!(Raid0::try_new(vec![ssd()], 1 << 30, 128).is_err());
    }
}
