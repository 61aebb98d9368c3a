//! A flash SSD as parallel flash units behind one shared host interface.
//!
//! The exact model, per command:
//!
//! 1. It waits in the device queue (FCFS) until one of `channels` flash units is free; at most
//!    `channels` commands are in service at once and at most `queue_depth` are accepted.
//! 2. Its flash access takes the fixed `read_latency` or `write_latency` on that unit.
//! 3. Its data then crosses the host interface, one command at a time in the order the flash
//!    accesses finish (ties by start order), at `read_bytes_per_s` or `write_bytes_per_s`. The unit
//!    stays busy until the transfer ends.
//!
//! So one 4 KiB read costs `read_latency + 4096 / read_bytes_per_s` (about the latency), a deep queue of
//! small reads reaches `channels / (latency + transfer)` commands per second, and large reads in
//! parallel saturate the interface: the aggregate never exceeds the device bandwidth because all
//! data shares one FIFO pipe. This is how datasheets describe SATA SSDs (sequential MB/s, random
//! IOPS at QD1 and QD32); garbage collection, write amplification and the SLC write cache are not
//! modelled.
//!
//! Breakdown: `queue` = waiting for a flash unit plus waiting for the interface; `overhead` = the flash
//! latency; `transfer` = time on the interface; `seek` and `rotate` are zero. All times are integer
//! nanoseconds, so the components add up exactly.

use std::collections::VecDeque;

use foresight_core::{Bandwidth, ByteLen, Duration, Instant, SECTOR_BYTES};

use crate::error::{bad, DeviceError};
use crate::{Breakdown, Completion, DevRequest, Device, Op};

/// The largest command queue an SSD model accepts (NVMe allows far more; SATA NCQ stops at 32).
pub const SSD_QUEUE_DEPTH_MAX: u32 = 65_536;

/// Parameters of an SSD. Plain data; [`SsdParams::validate`] checks it.
#[derive(Clone, Debug, PartialEq)]
pub struct SsdParams {
    /// Addressable bytes (a multiple of 512).
    pub capacity: ByteLen,
    /// Flash access time of a read, before its data moves.
    pub read_latency: Duration,
    /// Flash (or write-buffer) access time of a write.
    pub write_latency: Duration,
    /// Flash units that work in parallel.
    pub channels: u32,
    /// Interface rate for read data, bytes per second.
    pub read_bytes_per_s: f64,
    /// Interface rate for write data, bytes per second.
    pub write_bytes_per_s: f64,
    /// Commands accepted at once, including those in service.
    pub queue_depth: u32,
}

impl SsdParams {
    /// Checks every parameter and returns the first problem with a message that says what to change.
    pub fn validate(&self) -> Result<(), DeviceError> {
        if self.capacity.0 == 0 || !self.capacity.0.is_multiple_of(SECTOR_BYTES) {
            return Err(bad(
                "capacity",
                self.capacity.0,
                "give a non-zero multiple of 512 bytes",
            ));
        }
        if self.channels == 0 {
            return Err(bad("channels", 0, "an SSD needs at least one flash unit"));
        }
        for (field, v) in [
            ("read_bytes_per_s", self.read_bytes_per_s),
            ("write_bytes_per_s", self.write_bytes_per_s),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(bad(
                    field,
                    v,
                    "give a positive rate in bytes per second, e.g. 540e6",
                ));
            }
        }
        if self.queue_depth == 0 || self.queue_depth > SSD_QUEUE_DEPTH_MAX {
            return Err(bad(
                "queue_depth",
                self.queue_depth,
                "use 1 up to 65536 (32 for SATA NCQ)",
            ));
        }
        Ok(())
    }
}

/// A command waiting for a flash unit.
#[derive(Clone, Copy, Debug)]
struct Pending {
    req: DevRequest,
    submitted: Instant,
}

/// A command on a flash unit.
#[derive(Clone, Copy, Debug)]
struct Slot {
    id: u64,
    op: Op,
    bytes: u64,
    submitted: Instant,
    started: Instant,
    flash_done: Instant,
    /// Interface transfer `(start, end)`, once the flash access has finished.
    xfer: Option<(Instant, Instant)>,
    /// Start order, for deterministic tie-breaks.
    seq: u64,
}

/// An SSD model implementing [`Device`].
#[derive(Clone, Debug)]
pub struct Ssd {
    params: SsdParams,
    read_bw: Bandwidth,
    write_bw: Bandwidth,
    channels: usize,
    queue_depth: usize,
    pending: VecDeque<Pending>,
    slots: Vec<Slot>,
    done: VecDeque<Completion>,
    pipe_free: Instant,
    clock: Instant,
    seq: u64,
}

impl Ssd {
    /// Builds an SSD; panics with the validation message if `params` are invalid. Use
    /// [`Ssd::try_new`] for parameters that come from a user.
    pub fn new(params: SsdParams) -> Ssd {
        match Ssd::try_new(params) {
            Ok(s) => s,
            Err(e) => panic!("invalid SSD parameters: {e}"),
        }
    }

    /// Builds an SSD, or says which parameter is wrong.
    pub fn try_new(params: SsdParams) -> Result<Ssd, DeviceError> {
        params.validate()?;
        let queue_depth = params.queue_depth as usize;
        let channels = params.channels as usize;
        let pending = VecDeque::with_capacity(queue_depth);
        let slots = Vec::with_capacity(channels.min(queue_depth));
        let done = VecDeque::with_capacity(queue_depth);
        assert!(pending.capacity() >= queue_depth && done.capacity() >= queue_depth);
        Ok(Ssd {
            read_bw: Bandwidth::from_bytes_per_s(params.read_bytes_per_s),
            write_bw: Bandwidth::from_bytes_per_s(params.write_bytes_per_s),
            channels,
            queue_depth,
            pending,
            slots,
            done,
            pipe_free: Instant::ZERO,
            clock: Instant::ZERO,
            seq: 0,
            params,
        })
    }

    /// The parameters the SSD was built from.
    pub fn params(&self) -> &SsdParams {
        &self.params
    }

    fn latency(&self, op: Op) -> Duration {
        match op {
            Op::Read => self.params.read_latency,
            Op::Write => self.params.write_latency,
        }
    }

    fn xfer_time(&self, op: Op, bytes: u64) -> Duration {
        let bw = match op {
            Op::Read => self.read_bw,
            Op::Write => self.write_bw,
        };
        bw.time_for(ByteLen(bytes))
    }

    fn start(&mut self, t: Instant, p: Pending) {
        assert!(
            self.slots.len() < self.channels.min(self.queue_depth),
            "flash unit bound"
        );
        self.seq += 1;
        self.slots.push(Slot {
            id: p.req.id,
            op: p.req.op,
            bytes: u64::from(p.req.sectors) * SECTOR_BYTES,
            submitted: p.submitted,
            started: t,
            flash_done: t + self.latency(p.req.op),
            xfer: None,
            seq: self.seq,
        });
    }

    fn fill_units(&mut self, t: Instant) {
        while self.slots.len() < self.channels && !self.pending.is_empty() {
            let p = self.pending.pop_front().expect("checked non-empty");
            self.start(t, p);
        }
    }

    /// The earliest internal event: `(time, kind, seq, slot)`, kind 0 = transfer end, 1 = flash done.
    fn next_internal(&self) -> Option<(Instant, u8, u64, usize)> {
        self.slots
            .iter()
            .enumerate()
            .map(|(i, s)| match s.xfer {
                Some((_, end)) => (end, 0u8, s.seq, i),
                None => (s.flash_done, 1u8, s.seq, i),
            })
            .min()
    }

    fn catch_up(&mut self, now: Instant) {
        assert!(
            now >= self.clock,
            "time went backwards: {now} after {}",
            self.clock
        );
        while let Some((t, kind, _, i)) = self.next_internal() {
            if t > now {
                break;
            }
            if kind == 1 {
                let s = self.slots[i];
                let start = s.flash_done.max(self.pipe_free);
                let end = start + self.xfer_time(s.op, s.bytes);
                self.pipe_free = end;
                self.slots[i].xfer = Some((start, end));
            } else {
                let s = self.slots.swap_remove(i);
                let (xs, xe) = s.xfer.expect("kind 0 has a transfer");
                let breakdown = Breakdown {
                    queue: (s.started - s.submitted) + (xs - s.flash_done),
                    seek: Duration::ZERO,
                    rotate: Duration::ZERO,
                    transfer: xe - xs,
                    overhead: s.flash_done - s.started,
                };
                assert!(
                    self.done.len() < self.queue_depth,
                    "completion buffer bound"
                );
                self.done.push_back(Completion {
                    id: s.id,
                    at: xe,
                    breakdown,
                    cache_hit: false,
                    parts: 1,
                });
                self.fill_units(t);
            }
        }
        self.clock = now;
    }
}

impl Device for Ssd {
    fn capacity(&self) -> ByteLen {
        self.params.capacity
    }

    fn can_accept(&self) -> bool {
        self.outstanding() < self.queue_depth
    }

    fn submit(&mut self, now: Instant, req: DevRequest) {
        self.catch_up(now);
        assert!(
            self.can_accept(),
            "submit to a full SSD queue (depth {})",
            self.queue_depth
        );
        assert!(req.sectors >= 1, "request {} has no sectors", req.id);
        assert!(
            (req.lba.0 + u64::from(req.sectors)) * SECTOR_BYTES <= self.params.capacity.0,
            "request {} runs past the end of the SSD",
            req.id
        );
        assert!(self.pending.len() < self.queue_depth, "pending queue bound");
        self.pending.push_back(Pending {
            req,
            submitted: now,
        });
        self.fill_units(now);
    }

    /// Exact: replays, without changing state, the interface order of the commands whose flash access
    /// has not finished yet.
    fn next_event(&self) -> Option<Instant> {
        if let Some(c) = self.done.front() {
            return Some(c.at);
        }
        let mut best = self.slots.iter().filter_map(|s| s.xfer.map(|x| x.1)).min();
        let mut pipe = self.pipe_free;
        let mut prev: Option<(Instant, u64)> = None;
        loop {
            // The next unassigned command in (flash_done, seq) order after `prev`.
            let next = self
                .slots
                .iter()
                .filter(|s| s.xfer.is_none())
                .map(|s| (s.flash_done, s.seq, s))
                .filter(|(fd, seq, _)| prev.is_none_or_before(*fd, *seq))
                .min_by_key(|(fd, seq, _)| (*fd, *seq));
            let Some((fd, seq, s)) = next else { break };
            let end = fd.max(pipe) + self.xfer_time(s.op, s.bytes);
            pipe = end;
            best = Some(best.map_or(end, |b| b.min(end)));
            prev = Some((fd, seq));
        }
        best
    }

    fn advance(&mut self, now: Instant, out: &mut Vec<Completion>) {
        self.catch_up(now);
        out.extend(self.done.drain(..));
    }

    fn outstanding(&self) -> usize {
        self.pending.len() + self.slots.len() + self.done.len()
    }
}

/// `None`, or a key strictly before `(fd, seq)`: the replay's "not yet visited" test.
trait BeforeKey {
    fn is_none_or_before(&self, fd: Instant, seq: u64) -> bool;
}

impl BeforeKey for Option<(Instant, u64)> {
    fn is_none_or_before(&self, fd: Instant, seq: u64) -> bool {
        match self {
            None => true,
            Some(p) => *p < (fd, seq),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{drive, Arrival};
    use foresight_core::Lba;

    fn ssd() -> SsdParams {
        SsdParams {
            capacity: ByteLen::gib(100),
            read_latency: Duration::from_micros(90),
            write_latency: Duration::from_micros(20),
            channels: 10,
            read_bytes_per_s: 500e6,
            write_bytes_per_s: 400e6,
            queue_depth: 32,
        }
    }

    #[test]
    fn one_small_read_takes_about_its_latency() {
        let mut d = Ssd::new(ssd());
        let done = drive(&mut d, &[Arrival::at(0, Op::Read, 0, 8)]);
        let (_, c) = done[0];
        let latency = Duration::from_micros(90);
        assert_eq!(c.breakdown.overhead, latency);
        assert_eq!(c.breakdown.transfer, Duration(8_192));
        assert!(
            c.at.as_nanos() as f64 <= latency.as_nanos() as f64 * 1.1,
            "{c:?}"
        );
    }

    #[test]
    fn many_parallel_reads_approach_the_bandwidth() {
        let mut d = Ssd::new(ssd());
        let reqs: Vec<Arrival> = (0..400u64)
            .map(|i| Arrival::at(0, Op::Read, i * 2048, 2048))
            .collect();
        let done = drive(&mut d, &reqs);
        let last = done.iter().map(|(_, c)| c.at).max().unwrap();
        let bytes = 400.0 * 2048.0 * 512.0;
        let rate = bytes / last.as_secs_f64();
        assert!(rate > 0.97 * 500e6 && rate <= 500e6 * 1.0001, "rate {rate}");
    }

    #[test]
    fn deep_queue_of_small_reads_uses_every_unit() {
        let mut d = Ssd::new(ssd());
        let reqs: Vec<Arrival> = (0..3200u64)
            .map(|i| Arrival::at(0, Op::Read, i * 8, 8))
            .collect();
        let done = drive(&mut d, &reqs);
        let last = done.iter().map(|(_, c)| c.at).max().unwrap();
        let iops = 3200.0 / last.as_secs_f64();
        let ideal = 10.0 / (90e-6 + 4096.0 / 500e6);
        assert!(
            iops > 0.95 * ideal && iops < 1.01 * ideal,
            "iops {iops} vs {ideal}"
        );
    }

    #[test]
    fn next_event_is_exact_with_mixed_latencies() {
        let mut d = Ssd::new(ssd());
        // A long-latency read first, then a short-latency write: the write reaches the interface first.
        d.submit(
            Instant::ZERO,
            DevRequest {
                id: 1,
                op: Op::Read,
                lba: Lba(0),
                sectors: 2048,
            },
        );
        d.submit(
            Instant(1_000),
            DevRequest {
                id: 2,
                op: Op::Write,
                lba: Lba(5000),
                sectors: 8,
            },
        );
        let expected_write_end = Instant(1_000) + Duration::from_micros(20) + Duration(10_240);
        assert_eq!(d.next_event(), Some(expected_write_end));
        let mut out = Vec::new();
        d.advance(expected_write_end, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].id, 2);
    }

    #[test]
    fn bad_params_are_rejected() {
        let mut p = ssd();
        p.channels = 0;
        assert!(Ssd::try_new(p)
            .unwrap_err()
            .to_string()
            .contains("channels"));
        let mut p = ssd();
        p.read_bytes_per_s = 0.0;
        assert!(Ssd::try_new(p).is_err());
        let mut p = ssd();
        p.capacity = ByteLen(1000);
        assert!(Ssd::try_new(p).is_err());
    }
}
