//! A zoned hard disk: geometry, mechanics, segment cache and command queue put together.
//!
//! The drive serves one command at a time. When a command starts (at its arrival if the drive is
//! idle, else when the previous one completes) its whole service is computed at once from the state
//! at that instant, so the drive has exactly one pending internal event, the completion of the command
//! in service. A read is served one of three ways:
//!
//! 1. **Full hit**: every sector is in a cache segment, counting what the running read-ahead has
//!    fetched by now. Cost: the read-hit overhead plus the bus transfer; no seek, no rotation. A hit
//!    in the segment the read-ahead fills keeps it going and moves its stop to where a miss of the
//!    same sectors would put it; a hit in another segment stops it, as a miss does, once it has
//!    read its minimum (the hit waits until then, as for the arm). Both are DiskSim's controller
//!    (see [`cache`]). A read-ahead that has already stopped is not started again by a hit.
//! 2. **Continuation**: the read starts in what a running read-ahead has already brought into its
//!    segment and ends past it (DiskSim's partial hit on a segment being read), or starts ahead of
//!    that where [`HddParams::almost_read_hits`] lets it join: by default anywhere before the
//!    read-ahead's limit. There is no seek and no rotational wait; the read completes when the
//!    stream passes its last sector (plus that sector's bus time). This is what lets one sequential
//!    stream run at media speed on a drive that takes one command at a time. DiskSim 4.0 is
//!    stricter: a read starting past the sector being read is a miss whatever its `Allow almost
//!    read hits`, and with that at 0 (every shipped file) so is a read of the sector being read;
//!    the read-ahead stops and, after the miss overhead, the head waits for the sector to come
//!    round again. Its two rules are [`AlmostReadHits::None`] and [`AlmostReadHits::Head`]; the
//!    default departs from them (ARCHITECTURE.md gives the reasons).
//! 3. **Miss**: overhead, seek to the cylinder (or a head switch on the same cylinder), wait for the
//!    first sector's angle (the platter's angle is a function of absolute time: see
//!    [`mechanics`]), then read across tracks. A cached prefix of the request (a "partial hit") is
//!    sent first and only the rest is read. After the read the drive reads ahead into the segment.
//!    A drive with [`HddParams::immediate_read`] (DiskSim's `Immediate buffer read`) that lands on
//!    a track inside the sectors it wants there, past the first, reads on from the head and takes
//!    the ones before on the next turn; the host still receives them in order.
//!
//! A read that crosses a track boundary pays what the real drive pays: a head switch (or a
//! one-cylinder seek) and then the rotational wait until the next track's skewed first sector comes
//! round (see [`geometry`]). With skews sized to the switch times this costs the skew and nothing
//! more, so long sequential reads run slightly below the raw media rate, as on real drives.
//!
//! The bus overlaps the media: the buffer is a speed-matching stage between platter and interface
//! (paper `001_9c47c4c84914efc3.txt`, section 2.1, purpose (i); DiskSim's `Hold bus entire read xfer
//! = 0`), so sectors go to the host as they come off the platter and a media read costs about
//! `max(media, bus)` plus one sector on the bus (the last sector cannot leave before it is read).
//!
//! **Writes** drop cached copies of their sectors. Without write-back caching ([`WriteCache::Off`],
//! DiskSim's `Fast write level = 0`) a write positions the head (the write settle is added to the
//! seek or head switch, as DiskSim's `Add. write settling delay`) and completes when its last sector
//! is on the media. With write-back caching the write completes as soon as its data has crossed the
//! bus into a cache segment (write-hit overhead plus the bus transfer), and the drive destages it in
//! the background right after: the destage is scheduled on the head at once, so the head is busy
//! until it ends and the next media access starts from where it left the arm. Reads of written data
//! hit the cache, while it is dirty and afterwards if the drive keeps written data readable. A write
//! that finds every write segment dirty ([`WriteCache::Full`]) waits for the oldest destage;
//! [`WriteCache::Limited`] accepts a write at once only when nothing is dirty or it continues the
//! last dirty write (DiskSim's level 1 for sequential write streams), and otherwise waits for the
//! destages to finish.
//!
//! **Read-ahead** after a media read follows DiskSim's `Buffer continuous read` schemes
//! ([`ReadAheadMode`]): none, to the end of the track or the cylinder, up to a budget (the segment),
//! or DEC's scheme of staying one track ahead of a sequential stream.
//!
//! With `queue_depth > 1` the drive keeps up to that many commands and picks the next one FCFS, by
//! C-LOOK over LBAs from the head's current position (ascending from the head, then wrapping to the
//! lowest LBA), as DiskSim's `ioqueue` does with cylinder mapping by LBA, or by shortest positioning
//! time (SPTF), computed with the same seek curve and platter angle that serve the command.

pub mod cache;
pub mod geometry;
pub mod mechanics;

use std::cell::Cell;
use std::collections::VecDeque;

use foresight_core::{Bandwidth, ByteLen, Duration, Instant, Lba, SECTOR_BYTES};

use crate::error::{bad, DeviceError};
use crate::{Breakdown, Completion, DevRequest, Device, Op};
use cache::{ReadAhead, SegmentCache};
use geometry::{Chs, Geometry, LayoutRules, Zone, ZoneSpares};
use mechanics::{CommandOverheads, Rotation, SeekCurve};

/// The largest command queue a drive model accepts; real drives stop at 32 (NCQ) or 256 (SCSI TCQ).
pub const QUEUE_DEPTH_MAX: u32 = 1024;

/// How a drive with a command queue picks the next command.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
pub enum QueuePolicy {
    /// First come, first served.
    #[default]
    Fcfs,
    /// Circular LOOK on LBA: the lowest LBA at or after the head, wrapping to the lowest overall.
    CLook,
    /// Shortest positioning time first: the command whose data can start soonest, counting the
    /// command overhead, seek and rotational wait from where the head is (a command the cache or a
    /// running read-ahead serves needs no positioning). What drives with tagged queues do
    /// (rotational position ordering), and DiskSim's `SPTF` schedulers.
    Sptf,
}

/// How far the drive reads ahead after a read that went to the media (DiskSim's `Buffer continuous
/// read`, 0 to 4). Every scheme is also bounded by the segment size and the end of the disk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
pub enum ReadAheadMode {
    /// No read-ahead (0).
    Off,
    /// To the end of the track holding the request's last sector (1); at most
    /// `readahead_max_sectors` past the request when that is non-zero.
    TrackEnd,
    /// To the end of the cylinder holding the request's last sector (2); bounded as `TrackEnd`.
    CylinderEnd,
    /// `readahead_max_sectors` past the request (3: "until the segment is full").
    #[default]
    Budget,
    /// DEC's scheme (4): to the end of the track holding the sector after the request, and one
    /// track further when the segment already held the track before (a sequential stream), so the
    /// drive stays a track ahead of a stream. `readahead_max_sectors` does not apply.
    TrackAhead,
}

/// Which reads arriving while the drive reads ahead join that read-ahead instead of stopping it,
/// besides those whose first sector is already in its segment, which always do. DiskSim 4.0 has
/// the first two (its `Allow almost read hits`); the third is this model's default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
pub enum AlmostReadHits {
    /// None (DiskSim's `Allow almost read hits = 0`): a read starting at the sector being read
    /// now, or anywhere further on, is a miss that stops the read-ahead and positions the head.
    None,
    /// A read starting at the sector being read now (DiskSim's `= 1`); further on is a miss.
    Head,
    /// Any read starting before the read-ahead's limit: it waits for the head to reach it. A
    /// drive that a host reads sequentially at one command at a time streams at its media rate
    /// only so, whatever the host's latency: with `None`, back-to-back 1 MiB reads over a fast
    /// interface arrive while the read-ahead is still on the sector after the last and each loses
    /// most of a revolution (46% of the Cheetah 15K.5's outer media rate, against 96%).
    #[default]
    Ahead,
}

/// When the drive reports a write complete (DiskSim's `Fast write level`, 0 to 2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
pub enum WriteCache {
    /// Write-through (0): complete when the data is on the media.
    #[default]
    Off,
    /// Write-back for a write that finds nothing dirty or continues the last dirty write (1);
    /// another write waits for the pending destages first.
    Limited,
    /// Write-back for every write while a write segment is free (2).
    Full,
}

/// Everything that describes a drive. Plain data; [`HddParams::validate`] checks it.
#[derive(Clone, Debug, PartialEq)]
pub struct HddParams {
    /// Spindle speed, revolutions per minute.
    pub rpm: f64,
    /// Cylinders (tracks per surface).
    pub cylinders: u32,
    /// Recording surfaces (heads).
    pub surfaces: u32,
    /// Zone table, outer to inner, tiling `0..cylinders`.
    pub zones: Vec<Zone>,
    /// Seek time by distance.
    pub seek: SeekCurve,
    /// Time to switch to another head on the same cylinder (counted as rotation).
    pub head_switch: Duration,
    /// Extra settle time before a write may start after the arm moves (DiskSim's
    /// `Add. write settling delay`), counted as seek.
    pub write_settle: Duration,
    /// Controller command overheads.
    pub overhead: CommandOverheads,
    /// Number of cache segments.
    pub cache_segments: u32,
    /// Sectors per cache segment.
    pub cache_segment_sectors: u32,
    /// Most sectors the drive reads ahead after a media read (at most the segment size).
    pub readahead_max_sectors: u32,
    /// Minimum read-ahead: after a read that went to the media the drive keeps reading ahead at
    /// least this many sectors before it serves another command that needs the head (DiskSim's
    /// `Minimum read-ahead (blks)`; 0 lets the next command stop the read-ahead at once).
    pub readahead_min_sectors: u32,
    /// Whether the buffer caches data and reads ahead; when false it only matches speeds.
    pub cache_enabled: bool,
    /// How far the drive reads ahead after a media read.
    pub readahead_mode: ReadAheadMode,
    /// When writes complete.
    pub write_cache: WriteCache,
    /// Most segments holding data not yet destaged at once (DiskSim's `Maximum number of write
    /// segments`); at least 1 with write-back caching.
    pub write_segments: u32,
    /// Whether one extra segment is reserved for writes (DiskSim's `Use separate write segment`).
    pub separate_write_segment: bool,
    /// Whether written data stays readable in the cache after it is destaged (DiskSim's `Allow read
    /// hits on write data`).
    pub read_hits_on_write_data: bool,
    /// Whether a write that continues the last write while that one is still dirty joins its segment
    /// and its destage (DiskSim's `Combine seq writes`).
    pub combine_sequential_writes: bool,
    /// Whether the drive keeps the sectors of the target track that pass under the head during the
    /// rotational wait of a read miss (DiskSim's `Read any free blocks`).
    pub read_free_blocks: bool,
    /// Whether a read that reaches a track with the head already past its first wanted sector there
    /// but before its last reads on from the head and takes the sectors it passed on the next turn
    /// (a zero-latency read; DiskSim's `Immediate buffer read`): the track's part of the read is
    /// done one revolution after the head lands instead of after the wait for the first sector
    /// plus the transfer.
    pub immediate_read: bool,
    /// Whether read-ahead may push the data just read out of its segment (DiskSim's `Read-ahead over
    /// requested`); when false the read-ahead stops once the segment is full from the request on.
    pub readahead_over_request: bool,
    /// Which reads arriving during a read-ahead, ahead of what it has read, join it (see
    /// [`AlmostReadHits`]); any other stops it and is a miss.
    pub almost_read_hits: AlmostReadHits,
    /// Interface transfer rate, bytes per second.
    pub bus_bytes_per_s: f64,
    /// Commands the drive accepts at once, including the one in service (1 = no queueing).
    pub queue_depth: u32,
    /// How the next command is picked when several are queued.
    pub queue_policy: QueuePolicy,
    /// Sectors set aside inside each zone (spares, slips, empty space, moved blocks), one entry
    /// per zone, or empty when every sector holds a block (the presets).
    pub spares: Vec<ZoneSpares>,
    /// Where each zone's first block sits and the order of each cylinder's surfaces (the
    /// default, for the presets: zones chained, surfaces first to last).
    pub layout: LayoutRules,
}

impl HddParams {
    /// Checks every parameter and returns the first problem with a message that says what to change.
    pub fn validate(&self) -> Result<(), DeviceError> {
        if !(self.rpm.is_finite() && self.rpm > 0.0) {
            return Err(bad(
                "rpm",
                self.rpm,
                "give the spindle speed, e.g. 7200 or 15000",
            ));
        }
        self.geometry()?;
        self.seek.validate()?;
        if self.cache_enabled && self.cache_segments == 0 {
            return Err(bad(
                "cache_segments",
                0,
                "an enabled cache needs at least one segment (or set cache_enabled = false)",
            ));
        }
        if self.cache_enabled && self.cache_segment_sectors == 0 {
            return Err(bad(
                "cache_segment_sectors",
                0,
                "segments must hold at least one sector",
            ));
        }
        if self.readahead_min_sectors > self.cache_segment_sectors {
            return Err(bad(
                "readahead_min_sectors",
                self.readahead_min_sectors,
                "the minimum read-ahead fills at most one segment, so it can be at most cache_segment_sectors",
            ));
        }
        if self.readahead_max_sectors > self.cache_segment_sectors {
            return Err(bad(
                "readahead_max_sectors",
                self.readahead_max_sectors,
                "read-ahead fills one segment, so it can be at most cache_segment_sectors",
            ));
        }
        if self.write_cache != WriteCache::Off {
            if !self.cache_enabled {
                return Err(bad(
                    "write_cache",
                    format!("{:?}", self.write_cache),
                    "write-back caching needs the cache: set cache_enabled = true or write_cache = Off",
                ));
            }
            let pool = if self.separate_write_segment {
                1
            } else {
                self.cache_segments
            };
            if self.write_segments == 0 || self.write_segments > pool {
                return Err(bad(
                    "write_segments",
                    self.write_segments,
                    "give 1 up to the segments writes may use (1 with a separate write segment, \
                     else cache_segments)",
                ));
            }
        }
        if !(self.bus_bytes_per_s.is_finite() && self.bus_bytes_per_s > 0.0) {
            return Err(bad(
                "bus_bytes_per_s",
                self.bus_bytes_per_s,
                "give the interface rate, e.g. 150e6 for SATA 1.5 Gb/s",
            ));
        }
        if self.queue_depth == 0 || self.queue_depth > QUEUE_DEPTH_MAX {
            return Err(bad(
                "queue_depth",
                self.queue_depth,
                "use 1 (no queueing) up to 1024",
            ));
        }
        Ok(())
    }

    /// The validated layout.
    pub fn geometry(&self) -> Result<Geometry, DeviceError> {
        Geometry::with_layout(
            self.cylinders,
            self.surfaces,
            &self.zones,
            &self.spares,
            &self.layout,
        )
    }

    /// Addressable bytes: the sum over zones of cylinders x surfaces x sectors per track, less the
    /// sectors set aside, x 512.
    pub fn capacity(&self) -> ByteLen {
        let sectors: u64 = self
            .zones
            .iter()
            .enumerate()
            .map(|(i, z)| {
                let all = u64::from(z.cylinder_count())
                    * u64::from(self.surfaces)
                    * u64::from(z.sectors_per_track);
                let aside: u64 = self
                    .spares
                    .get(i)
                    .map_or(0, |s| s.holes.iter().map(|h| h.1).sum());
                all.saturating_sub(aside)
            })
            .sum();
        ByteLen(sectors * SECTOR_BYTES)
    }

    /// One revolution: `60 s / rpm`.
    pub fn rotation_period(&self) -> Duration {
        Duration::from_secs_f64(60.0 / self.rpm)
    }

    /// Mean seek over start and end cylinders drawn uniformly and independently, from the curve
    /// ([`SeekCurve::mean_seek_ms`]).
    pub fn avg_seek(&self) -> Duration {
        Duration::from_millis_f64(self.seek.mean_seek_ms(self.cylinders))
    }

    /// Raw media rate of the outermost (densest) zone: one track per revolution.
    pub fn media_rate_max(&self) -> Bandwidth {
        let spt = self
            .zones
            .iter()
            .map(|z| z.sectors_per_track)
            .max()
            .unwrap_or(0);
        self.rate_for_spt(spt)
    }

    /// Raw media rate of the innermost (sparsest) zone.
    pub fn media_rate_min(&self) -> Bandwidth {
        let spt = self
            .zones
            .iter()
            .map(|z| z.sectors_per_track)
            .min()
            .unwrap_or(0);
        self.rate_for_spt(spt)
    }

    fn rate_for_spt(&self, spt: u32) -> Bandwidth {
        Bandwidth::from_bytes_per_s(f64::from(spt) * SECTOR_BYTES as f64 * self.rpm / 60.0)
    }
}

/// A request waiting in the drive's queue.
#[derive(Clone, Copy, Debug)]
struct Pending {
    req: DevRequest,
    submitted: Instant,
}

/// Time spent switching tracks inside a transfer, split by kind.
#[derive(Clone, Copy, Debug, Default)]
struct Gaps {
    seek_ns: f64,
    rotate_ns: f64,
}

/// The outcome of serving one command, in fractional nanoseconds from its start.
#[derive(Clone, Copy, Debug)]
struct Service {
    overhead_ns: f64,
    seek_ns: f64,
    rotate_ns: f64,
    /// Absolute completion time.
    end_ns: f64,
    cache_hit: bool,
}

/// The last [`Hdd::stream_reach`] computed: its exact inputs (floating-point ones by their bits)
/// and its answer. The reach is a pure function of these and of the drive's fixed layout, and one
/// service asks it several times at one instant (the SPTF estimate once per queued command, then
/// the service itself), so repeating the last answer changes no result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ReachMemo {
    origin_ns_bits: u64,
    origin_lba: u64,
    limit_lba: u64,
    t_ns_bits: u64,
    reach_lba: u64,
}

/// A hard disk drive model implementing [`Device`].
#[derive(Clone, Debug)]
pub struct Hdd {
    params: HddParams,
    geo: Geometry,
    rotation: Rotation,
    /// Time to pass one sector, per zone.
    sector_ns: Vec<f64>,
    head_switch_ns: f64,
    write_settle_ns: f64,
    bus_sector_ns: f64,
    cache: SegmentCache,
    queue_depth: usize,
    pending: VecDeque<Pending>,
    in_service: Option<Completion>,
    done: VecDeque<Completion>,
    clock: Instant,
    /// The last sector the head read when no read-ahead is streaming (in the last committed media
    /// access, destages included), so the sector after it is the next under the head.
    head_lba: u64,
    last_op: Op,
    /// When the head finishes the media work committed so far (a destage may run past the command
    /// that caused it), absolute ns.
    head_free_ns: f64,
    /// End instants of destages, oldest first; entries at or before the current time are stale and
    /// pruned. At most `write_segments` entries.
    destage_ends: VecDeque<f64>,
    /// One past the last sector of the newest write-back write (for [`WriteCache::Limited`]).
    last_write_end: u64,
    /// One past the last sector of the last command served, hit or not: where a C-LOOK sweep goes
    /// on from while a read-ahead runs.
    last_end_lba: u64,
    /// The last read-ahead position computed, reused for the same exact question.
    reach_memo: Cell<Option<ReachMemo>>,
}

impl Hdd {
    /// Builds a drive; panics with the validation message if `params` are invalid. Use
    /// [`Hdd::try_new`] for parameters that come from a user.
    pub fn new(params: HddParams) -> Hdd {
        match Hdd::try_new(params) {
            Ok(h) => h,
            Err(e) => panic!("invalid HDD parameters: {e}"),
        }
    }

    /// Builds a drive, or says which parameter is wrong.
    pub fn try_new(params: HddParams) -> Result<Hdd, DeviceError> {
        params.validate()?;
        let geo = params.geometry()?;
        let rotation = Rotation::from_rpm(params.rpm);
        let sector_ns = geo
            .zones()
            .iter()
            .map(|z| rotation.period_ns() / f64::from(z.sectors_per_track))
            .collect();
        let queue_depth = params.queue_depth as usize;
        let destage_ends = VecDeque::with_capacity(params.write_segments as usize + 1);
        let pending = VecDeque::with_capacity(queue_depth);
        let done = VecDeque::with_capacity(queue_depth);
        assert!(pending.capacity() >= queue_depth && done.capacity() >= queue_depth);
        Ok(Hdd {
            cache: SegmentCache::with_write_segment(
                params.cache_segments,
                params.cache_segment_sectors,
                params.readahead_max_sectors,
                params.cache_enabled,
                params.separate_write_segment && params.write_cache != WriteCache::Off,
            ),
            head_switch_ns: params.head_switch.as_nanos() as f64,
            write_settle_ns: params.write_settle.as_nanos() as f64,
            bus_sector_ns: SECTOR_BYTES as f64 * 1e9 / params.bus_bytes_per_s,
            geo,
            rotation,
            sector_ns,
            queue_depth,
            pending,
            in_service: None,
            done,
            clock: Instant::ZERO,
            head_lba: 0,
            last_op: Op::Read,
            head_free_ns: 0.0,
            destage_ends,
            last_write_end: u64::MAX,
            last_end_lba: 0,
            reach_memo: Cell::new(None),
            params,
        })
    }

    /// The parameters the drive was built from.
    pub fn params(&self) -> &HddParams {
        &self.params
    }

    /// The drive's layout.
    pub fn geometry(&self) -> &Geometry {
        &self.geo
    }

    /// The drive's cache (for inspection).
    pub fn cache(&self) -> &SegmentCache {
        &self.cache
    }

    /// The last sector the head read by `at` (by a running read-ahead, else by the last media
    /// access), so that the sector after it is the next to pass under the head.
    pub fn head_lba_at(&self, at: Instant) -> Lba {
        Lba(self.head_lba_at_ns(at.as_nanos() as f64))
    }

    fn head_lba_at_ns(&self, t: f64) -> u64 {
        match self.cache.streaming() {
            Some((_, ra)) => self.last_read_by(&ra, self.stream_reach(&ra, t)),
            None => self.head_lba,
        }
    }

    /// The last sector read once a read-ahead has got to `reach` (its next unread sector): the one
    /// before `reach`, or, when the stream has read nothing yet, where the last access ended.
    fn last_read_by(&self, ra: &ReadAhead, reach: u64) -> u64 {
        if reach > ra.origin_lba {
            (reach - 1).min(self.geo.capacity_sectors() - 1)
        } else {
            self.head_lba
        }
    }

    // ----- media timing -------------------------------------------------------------------------

    /// The head has just passed sector `at` of its track at time `t` (the sector after the last one
    /// read, so `at.sector` may equal the track's length); returns when it is at the leading edge of
    /// `next`. On the same track that is at once if `next` is the sector under the head, else the
    /// platter turns past the set-aside sectors between; on another track it is a track switch.
    /// The parts after `count_from` go into `gaps`.
    fn move_to(&self, t: f64, at: Chs, next: Chs, count_from: f64, gaps: &mut Gaps) -> f64 {
        if !next.same_track(at) {
            return self.switch_track(t, at, next, count_from, gaps);
        }
        if next.sector == at.sector {
            return t;
        }
        let arrive = t + self.rotation.wait_ns(t, self.geo.chs_angle(next));
        gaps.rotate_ns += (arrive - t.max(count_from)).max(0.0);
        arrive
    }

    /// The head has finished the track of `prev` at time `t`; returns when it is at the leading edge
    /// of `next` on another track: a head switch, or a seek to the next cylinder, then the wait for
    /// the sector (the track's skewed first sector unless set-aside sectors come first). The parts
    /// after `count_from` go into `gaps`.
    fn switch_track(&self, t: f64, prev: Chs, next: Chs, count_from: f64, gaps: &mut Gaps) -> f64 {
        let (switch_ns, is_seek) = self.switch_ns(prev, next);
        let ready = t + switch_ns;
        let angle = if next.sector == 0 {
            self.geo
                .track_start_angle(next.zone, next.cylinder, next.head)
        } else {
            self.geo.chs_angle(next)
        };
        let arrive = ready + self.rotation.wait_ns(ready, angle);
        let switch_part = (ready - t.max(count_from)).max(0.0);
        let wait_part = (arrive - ready.max(count_from)).max(0.0);
        if is_seek {
            gaps.seek_ns += switch_part;
            gaps.rotate_ns += wait_part;
        } else {
            gaps.rotate_ns += switch_part + wait_part;
        }
        arrive
    }

    /// The time to move the head from the track of `prev` to the track of `next` (another one),
    /// and whether that is a seek: across cylinders the arm seeks, on the same cylinder another
    /// head is switched to.
    fn switch_ns(&self, prev: Chs, next: Chs) -> (f64, bool) {
        if next.cylinder != prev.cylinder {
            (self.seek_ns(prev, next), true)
        } else {
            (self.head_switch_ns, false)
        }
    }

    /// The arm's seek time from the cylinder of `from` to that of `to` (no write settle).
    fn seek_ns(&self, from: Chs, to: Chs) -> f64 {
        self.params
            .seek
            .seek_ms(to.cylinder.abs_diff(from.cylinder))
            * 1e6
    }

    /// Reads `[from, to)` in one pass, starting at `t` with the head at the leading edge of `from` on
    /// its track. Returns the time the trailing edge of `to - 1` passes the head. Track-switch time
    /// after `count_from` is added to `gaps`. Costs one layout lookup per track.
    fn media_pass(&self, t: f64, from: u64, to: u64, count_from: f64, gaps: &mut Gaps) -> f64 {
        let mut t = t;
        let mut lba = from;
        if lba >= to {
            return t;
        }
        let mut loc = self.geo.locate(Lba(lba));
        loop {
            let k = (to - lba).min(self.geo.run_sectors(Lba(lba), loc));
            t += k as f64 * self.sector_ns[loc.zone];
            lba += k;
            if lba >= to {
                return t;
            }
            let next = self.geo.locate(Lba(lba));
            let passed = Chs {
                sector: loc.sector + k as u32,
                ..loc
            };
            t = self.move_to(t, passed, next, count_from, gaps);
            loc = next;
        }
    }

    /// A read of `[from, to)` with [`HddParams::immediate_read`]: the head is on the track of `from`
    /// at `ready` (before any rotational wait), and `arrive` is when the leading edge of `from`
    /// comes round. On each track, when the head lands (at the next sector boundary) inside the
    /// track's wanted sectors, past the first, the drive reads on from there and takes the ones
    /// before on the next turn, so that track is done a revolution after the landing, with the
    /// head back at the landing sector, as DiskSim 4.0 does (`disk_buffer_seekdone` asks
    /// `dm_latency` for the wait to the next sector inside the access, and
    /// `disk_buffer_sector_done` keeps the sectors read ahead of the wanted one as the `immedstart`
    /// to `immedend` run, which it joins when the wanted sector reaches it). A landing elsewhere,
    /// or a track whose wanted sectors are not one run, waits for the first as [`Hdd::media_pass`]
    /// does. Returns when the read is done, if the last track was read from a landing inside
    /// it, that landing sector (the head is there, not past `to - 1`), and the earliest the host
    /// can have sector `to - 1`: the host takes the sectors in order, so on a track read from a
    /// landing the sector before the landing, read last, holds back every sector after it, which
    /// then cross the bus one by one (`f64::NEG_INFINITY` when no track was). Rotational waits,
    /// and track switches after `count_from`, go into `gaps`.
    fn media_pass_immediate(
        &self,
        ready: f64,
        arrive: f64,
        from: u64,
        to: u64,
        count_from: f64,
        gaps: &mut Gaps,
    ) -> (f64, Option<u64>, f64) {
        let mut host_floor_ns = f64::NEG_INFINITY;
        let period_ns = self.rotation.period_ns();
        let mut ready = ready;
        let mut arrive = arrive;
        let mut lba = from;
        let mut loc = self.geo.locate(Lba(lba));
        loop {
            let run = (to - lba).min(self.geo.run_sectors(Lba(lba), loc));
            let run_end = lba + run;
            let one_run = run_end >= to || !self.geo.locate(Lba(run_end)).same_track(loc);
            let transfer_ns = run as f64 * self.sector_ns[loc.zone];
            let mut landed = None;
            let mut done = arrive + transfer_ns;
            if one_run && run > 1 {
                let spt = u64::from(self.geo.zones()[loc.zone].sectors_per_track);
                let base = self.geo.track_start_angle(loc.zone, loc.cylinder, loc.head);
                let under = geometry::frac(self.rotation.angle_at(ready) - base) * spt as f64;
                let k = ((under - 1e-6).ceil().max(0.0) as u64) % spt;
                let first = u64::from(loc.sector);
                if k > first && k < first + run {
                    let at = Chs {
                        sector: k as u32,
                        ..loc
                    };
                    let t_k = ready + self.rotation.wait_ns(ready, self.geo.chs_angle(at));
                    done = t_k + period_ns;
                    let landing = lba + (k - first);
                    landed = Some(landing);
                    // Sector `landing - 1` is read at `done`; it and all after it go in order.
                    host_floor_ns =
                        host_floor_ns.max(done + (to - (landing - 1)) as f64 * self.bus_sector_ns);
                }
            }
            gaps.rotate_ns += (done - transfer_ns - ready.max(count_from)).max(0.0);
            lba = run_end;
            if lba >= to {
                return (done, landed, host_floor_ns);
            }
            let next = self.geo.locate(Lba(lba));
            if next.same_track(loc) {
                // Set-aside sectors inside the track: the run after them is a new access from
                // where the head is.
                ready = done;
                arrive = done + self.rotation.wait_ns(done, self.geo.chs_angle(next));
            } else {
                let mut switch = Gaps::default();
                let passed = Chs {
                    sector: loc.sector + run as u32,
                    ..loc
                };
                arrive = self.switch_track(done, passed, next, count_from, &mut switch);
                // The switch itself (seek or head switch); the wait after it is counted above.
                let (switch_ns, is_seek) = self.switch_ns(loc, next);
                ready = done + switch_ns;
                let counted = (ready - done.max(count_from)).max(0.0);
                if is_seek {
                    gaps.seek_ns += counted;
                } else {
                    gaps.rotate_ns += counted;
                }
            }
            loc = next;
        }
    }

    /// When the read-ahead `ra` has read every sector before `target` (at most its limit): the
    /// same media pass a read takes, started where and when the read-ahead started.
    fn stream_time_to(&self, ra: &ReadAhead, target: u64) -> f64 {
        let target = target.min(ra.limit_lba);
        self.media_pass(
            ra.origin_ns,
            ra.origin_lba,
            target,
            f64::INFINITY,
            &mut Gaps::default(),
        )
    }

    /// A command that needs the head arrives at `t0` while a read-ahead runs: with a minimum
    /// read-ahead the command waits until the read-ahead has reached it. Returns when the head is
    /// free and where the read-ahead stopped.
    fn settle_readahead(&self, ra: &ReadAhead, t0: f64) -> (f64, u64) {
        let reach = self.stream_reach(ra, t0);
        if reach >= ra.floor_lba {
            return (t0, reach);
        }
        (self.stream_time_to(ra, ra.floor_lba).max(t0), ra.floor_lba)
    }

    /// Where a read-ahead has got to at `t`: its next unread sector, at most its limit. Answers a
    /// repeat of the last question from [`ReachMemo`].
    fn stream_reach(&self, ra: &ReadAhead, t: f64) -> u64 {
        let key = |reach_lba| ReachMemo {
            origin_ns_bits: ra.origin_ns.to_bits(),
            origin_lba: ra.origin_lba,
            limit_lba: ra.limit_lba,
            t_ns_bits: t.to_bits(),
            reach_lba,
        };
        if let Some(m) = self.reach_memo.get() {
            if m == key(m.reach_lba) {
                return m.reach_lba;
            }
        }
        let reach_lba = self.compute_stream_reach(ra, t);
        self.reach_memo.set(Some(key(reach_lba)));
        reach_lba
    }

    /// [`Hdd::stream_reach`] without the memo: walks the read-ahead's tracks from its origin.
    fn compute_stream_reach(&self, ra: &ReadAhead, t: f64) -> u64 {
        let mut tc = ra.origin_ns;
        let mut lba = ra.origin_lba;
        if t <= tc || lba >= ra.limit_lba {
            return lba.min(ra.limit_lba);
        }
        let mut loc = self.geo.locate(Lba(lba));
        let mut scratch = Gaps::default();
        loop {
            let avail = (ra.limit_lba - lba).min(self.geo.run_sectors(Lba(lba), loc));
            let sector_ns = self.sector_ns[loc.zone];
            // A tiny tolerance so that a sector whose trailing edge is "exactly now" counts as read
            // despite rounding.
            let done = ((t - tc) / sector_ns + 1e-6).floor();
            if done < avail as f64 {
                return lba + done.max(0.0) as u64;
            }
            tc += avail as f64 * sector_ns;
            lba += avail;
            if lba >= ra.limit_lba {
                return ra.limit_lba;
            }
            let next = self.geo.locate(Lba(lba));
            let passed = Chs {
                sector: loc.sector + avail as u32,
                ..loc
            };
            tc = self.move_to(tc, passed, next, f64::INFINITY, &mut scratch);
            if tc > t {
                return lba;
            }
            loc = next;
        }
    }

    /// Where a read-ahead after a media read of `lba..end` stops, for a segment whose run starts at
    /// `seg_first` (DiskSim's `Buffer continuous read` schemes; see [`ReadAheadMode`]). Unless the
    /// drive lets prefetched data replace the data just read (`readahead_over_request`), the
    /// read-ahead also stops when the segment is full from `lba` on.
    fn readahead_limit(&self, lba: u64, end: u64, seg_first: u64) -> u64 {
        let cap = self.geo.capacity_sectors();
        let max = u64::from(self.params.readahead_max_sectors);
        let capped = |limit: u64| if max > 0 { limit.min(end + max) } else { limit };
        let limit = match self.params.readahead_mode {
            ReadAheadMode::Off => end,
            ReadAheadMode::Budget => end + self.cache.readahead_budget_sectors(),
            ReadAheadMode::TrackEnd => capped(self.geo.track_bounds(Lba(end - 1)).1),
            ReadAheadMode::CylinderEnd => capped(self.geo.cylinder_bounds(Lba(end - 1)).1),
            ReadAheadMode::TrackAhead => {
                let (first, last) = self.geo.track_bounds(Lba(end));
                if seg_first < first {
                    last + (last - first)
                } else {
                    last
                }
            }
        };
        let limit = if self.params.readahead_over_request
            || self.params.readahead_mode == ReadAheadMode::TrackAhead
        {
            limit
        } else {
            limit.min(lba + self.cache.segment_sectors())
        };
        limit.min(end + self.cache.segment_sectors()).min(cap)
    }

    /// A read-ahead that continues right after a media read of `lba..end` finished at `t_end`, into
    /// a segment whose run starts at `seg_first`, or `None` if the drive does not read ahead or the
    /// disk ends there.
    /// `landed` is the sector the head is at when an immediate read's last track ended where it
    /// landed rather than past `end - 1` (see [`Hdd::media_pass_immediate`]).
    fn readahead_after(
        &self,
        lba: u64,
        end: u64,
        t_end: f64,
        seg_first: u64,
        landed: Option<u64>,
    ) -> Option<ReadAhead> {
        let cap = self.geo.capacity_sectors();
        if !self.cache.enabled() || end >= cap {
            return None;
        }
        let limit_lba = self.readahead_limit(lba, end, seg_first);
        if limit_lba <= end {
            return None;
        }
        let prev = self.geo.locate(Lba(end - 1));
        let next = self.geo.locate(Lba(end));
        let passed = Chs {
            sector: prev.sector + 1,
            ..prev
        };
        let origin_ns = match landed {
            Some(_) if next.same_track(prev) => {
                t_end + self.rotation.wait_ns(t_end, self.geo.chs_angle(next))
            }
            _ => self.move_to(t_end, passed, next, f64::INFINITY, &mut Gaps::default()),
        };
        let floor_lba = (end + u64::from(self.params.readahead_min_sectors)).min(limit_lba);
        Some(ReadAhead {
            origin_ns,
            origin_lba: end,
            limit_lba,
            floor_lba,
        })
    }

    /// A read of `lba..end` served from segment `seg` while that segment's read-ahead `ra` runs
    /// (it has got to `reach`, short of its limit) moves the read-ahead's stop (and its minimum) to
    /// where a media read of the same sectors would put them, if that is further: the drive keeps
    /// reading ahead of a stream it is serving from the buffer, as DiskSim's controller does when a
    /// read hit takes the head over from the read-ahead in its segment
    /// (`disk_buffer_attempt_access_swap`, `disk_check_hda_pending` raise the segment's
    /// `maxreadaheadblkno`).
    fn carry_readahead_on(&mut self, seg: usize, ra: ReadAhead, reach: u64, lba: u64, end: u64) {
        debug_assert!(
            reach < ra.limit_lba,
            "a stopped read-ahead is not restarted by a hit"
        );
        let held_first = {
            let s = self.cache.segment(seg).expect("streaming segment exists");
            self.cache.held(s, Some(reach)).0
        };
        let limit_lba = self.readahead_limit(lba, end, held_first).max(ra.limit_lba);
        let floor_lba = (end + u64::from(self.params.readahead_min_sectors))
            .min(limit_lba)
            .max(ra.floor_lba);
        if limit_lba == ra.limit_lba && floor_lba == ra.floor_lba {
            return;
        }
        self.cache.carry_readahead_on(
            seg,
            ReadAhead {
                limit_lba,
                floor_lba,
                ..ra
            },
        );
    }

    /// Moves the head from where it is to the leading edge of `target` after `t1`: seek (plus write
    /// settle) or head switch, then rotational wait. Returns `(seek_ns, rotate_ns, arrival,
    /// on_track)`, the last being when the head is on the target track, before the rotational wait.
    fn position(&self, t1: f64, target: u64, write: bool) -> (f64, f64, f64, f64) {
        self.position_from(self.head_lba, t1, target, write)
    }

    fn position_from(&self, head: u64, t1: f64, target: u64, write: bool) -> (f64, f64, f64, f64) {
        let from = self.geo.locate(Lba(head));
        let to = self.geo.locate(Lba(target));
        let mut seek_ns = 0.0;
        let mut rotate_ns = 0.0;
        if to.cylinder != from.cylinder {
            seek_ns = self.seek_ns(from, to);
            if write {
                seek_ns += self.write_settle_ns;
            }
        } else if to.head != from.head {
            rotate_ns = self.head_switch_ns;
            if write {
                seek_ns += self.write_settle_ns;
            }
        }
        let ready = t1 + seek_ns + rotate_ns;
        let wait = self
            .rotation
            .wait_ns(ready, self.geo.sector_angle(Lba(target)));
        (seek_ns, rotate_ns + wait, ready + wait, ready)
    }

    /// With DiskSim's `Read any free blocks`, the drive reads the sectors of the target track that
    /// pass under the head while it waits for `target` to come round, from the head's arrival on the
    /// track at `on_track`. Returns the first sector of the run that ends at `target` and is
    /// contiguous with it: from the first whole sector after the arrival, or from the track's first
    /// sector if the head arrived past the target (the sectors after the target are not contiguous
    /// with it and are not kept).
    fn free_blocks_start(&self, on_track: f64, target: u64) -> u64 {
        let (first, _) = self.geo.track_bounds(Lba(target));
        let loc = self.geo.locate(Lba(target));
        let spt = u64::from(self.geo.zones()[loc.zone].sectors_per_track);
        let base = self.geo.track_start_angle(loc.zone, loc.cylinder, loc.head);
        let under = geometry::frac(self.rotation.angle_at(on_track) - base) * spt as f64;
        let k_arrive = ((under - 1e-6).ceil().max(0.0) as u64) % spt;
        if k_arrive <= u64::from(loc.sector) {
            let from = Chs {
                sector: k_arrive as u32,
                ..loc
            };
            self.geo.block_at_or_after(from).0.clamp(first, target)
        } else {
            first
        }
    }

    // ----- service ------------------------------------------------------------------------------

    fn serve(&mut self, t0: f64, req: DevRequest) -> Service {
        let lba = req.lba.0;
        let end = lba + u64::from(req.sectors);
        let s = match req.op {
            Op::Read => self.serve_read(t0, lba, end),
            Op::Write => self.serve_write(t0, lba, end),
        };
        self.last_op = req.op;
        self.last_end_lba = end;
        s
    }

    fn serve_read(&mut self, t0: f64, lba: u64, end: u64) -> Service {
        let n = (end - lba) as f64;
        let stream = self.cache.streaming();
        let reach = stream.map(|(_, ra)| self.stream_reach(&ra, t0));
        if self.cache.enabled() {
            if let Some(i) = self.cache.find_full_hit(lba, end, reach, t0) {
                // A hit in the segment the read-ahead fills carries it on; a hit in another segment
                // stops it as a miss would, after its minimum (DiskSim's `disk_activate_read`
                // stops a prefetch for any read whose segment is not the prefetch's), and until
                // then the hit waits as for the arm.
                let mut t_start = t0;
                if let (Some((s, ra)), Some(r)) = (stream, reach) {
                    if r < ra.limit_lba {
                        if s == i {
                            self.carry_readahead_on(i, ra, r, lba, end);
                        } else {
                            let (t_free, stop) = self.settle_readahead(&ra, t0);
                            t_start = t_free;
                            self.head_lba = self.last_read_by(&ra, stop);
                            self.cache.stop_streaming(stop);
                        }
                    }
                }
                self.cache.touch(i);
                let overhead_ns = self
                    .params
                    .overhead
                    .get(Op::Read, true, self.last_op)
                    .as_nanos() as f64;
                return Service {
                    overhead_ns,
                    seek_ns: t_start - t0,
                    rotate_ns: 0.0,
                    end_ns: t_start + overhead_ns + n * self.bus_sector_ns,
                    cache_hit: true,
                };
            }
            if let (Some((i, ra)), Some(r)) = (stream, reach) {
                let seg = self.cache.segment(i).expect("streaming segment exists");
                let (held_first, _) = self.cache.held(seg, Some(r));
                if r < ra.limit_lba
                    && held_first <= lba
                    && end > r
                    && self.joins_stream(lba, r, ra.limit_lba)
                {
                    return self.serve_continuation(t0, lba, end, i, ra, r, held_first);
                }
            }
        }
        // With a minimum read-ahead still to read, the read waits for the head until the minimum
        // is in. DiskSim then looks for the waiting read's segment afresh
        // (`disk_check_prefetch_swap` once the prefetch reaches `minreadaheadblkno`), so a read the
        // read-ahead has reached by then is a hit in its segment, or joins it, rather than a miss
        // of sectors the buffer holds.
        if let (Some((i, ra)), Some(r)) = (stream, reach) {
            if r < ra.floor_lba {
                let seg = self.cache.segment(i).expect("streaming segment exists");
                let (held_first, _) = self.cache.held(seg, Some(ra.floor_lba));
                if held_first <= lba && self.joins_stream(lba, ra.floor_lba, ra.limit_lba) {
                    let t_floor = self.stream_time_to(&ra, ra.floor_lba).max(t0);
                    if t_floor > t0 {
                        let mut s = self.serve_read(t_floor, lba, end);
                        s.seek_ns += t_floor - t0;
                        return s;
                    }
                }
            }
        }
        // The head is needed: stop the read-ahead where it got to, or where its minimum is.
        let arrived = t0;
        let mut t0 = t0;
        if let Some((_, ra)) = stream {
            let (t_free, r) = self.settle_readahead(&ra, t0);
            t0 = t_free;
            self.head_lba = self.last_read_by(&ra, r);
            self.cache.stop_streaming(r);
        }
        // The head is busy finishing the minimum read-ahead, as it is with a destage below: the
        // command waits for the arm, not for its data.
        let readahead_wait_ns = t0 - arrived;
        let overhead_ns = self
            .params
            .overhead
            .get(Op::Read, false, self.last_op)
            .as_nanos() as f64;
        let t1 = t0 + overhead_ns;
        // The head may still be destaging a write.
        let head_wait_ns = (self.head_free_ns - t1).max(0.0);
        let prefix = if self.cache.enabled() {
            self.cache.find_prefix(lba, end, t0)
        } else {
            None
        };
        let media_from = prefix.map_or(lba, |p| p.1);
        let cached = (media_from - lba) as f64;
        let (seek_ns, mut rotate_ns, t3, on_track) =
            self.position(t1 + head_wait_ns, media_from, false);
        let mut gaps = Gaps::default();
        let (t4, landed, host_floor_ns) = if self.params.immediate_read {
            // The rotational waits, the first included, are the pass's own.
            rotate_ns -= t3 - on_track;
            self.media_pass_immediate(on_track, t3, media_from, end, on_track, &mut gaps)
        } else {
            let t4 = self.media_pass(t3, media_from, end, t3, &mut gaps);
            (t4, None, f64::NEG_INFINITY)
        };
        let first_zone = self.geo.zone_index(Lba(media_from));
        // Two-stage pipeline (media, then bus): the cached prefix can leave from t1; media sectors
        // leave as they are read; the last one cannot leave before it is read. A track read out of
        // order from a landing holds back what follows its last-read sector (`host_floor_ns`).
        let bus_media_start =
            (t1 + cached * self.bus_sector_ns).max(t3 + self.sector_ns[first_zone]);
        let end_ns = (t4 + self.bus_sector_ns)
            .max(bus_media_start + (n - cached) * self.bus_sector_ns)
            .max(host_floor_ns);
        if self.cache.enabled() {
            let target = match prefix {
                Some((i, _)) => {
                    let s = self.cache.segment(i).expect("prefix segment exists");
                    Some((i, self.cache.held(s, None).0))
                }
                None => {
                    let free = if self.params.read_free_blocks {
                        self.free_blocks_start(on_track, lba)
                    } else {
                        lba
                    };
                    // By default a segment whose run ends exactly at `lba` keeps its run (the
                    // stream grows on). Under DiskSim's own rules a miss matches no segment, so it
                    // takes an empty or the least recently used one and starts it afresh at the
                    // request (`disk_buffer_attempt_seg_ownership` resets a segment taken with no
                    // hit to the request's first sector).
                    let keep_run = self.params.almost_read_hits == AlmostReadHits::Ahead;
                    self.cache.choose_for_miss(lba, t0, keep_run).map(|i| {
                        let first = match self.cache.segment(i).filter(|s| s.live(t0)) {
                            Some(s) if keep_run => {
                                let (f, e) = self.cache.held(s, None);
                                if f <= lba && lba <= e {
                                    f.min(free)
                                } else {
                                    free
                                }
                            }
                            _ => free,
                        };
                        (i, first)
                    })
                }
            };
            if let Some((seg, mut first)) = target {
                let ra = self.readahead_after(lba, end, t4, first, landed);
                if first < lba {
                    // The segment is laid out for the request and its read-ahead: sectors before
                    // the request stay only where that leaves room.
                    let limit = ra.map_or(end, |r| r.limit_lba);
                    first = first.max(limit.saturating_sub(self.cache.segment_sectors()).min(lba));
                }
                self.cache.fill(seg, first, end, ra);
            }
        }
        self.head_lba = end - 1;
        self.head_free_ns = self.head_free_ns.max(t4);
        Service {
            overhead_ns,
            seek_ns: readahead_wait_ns + head_wait_ns + seek_ns + gaps.seek_ns,
            rotate_ns: rotate_ns + gaps.rotate_ns,
            end_ns,
            cache_hit: false,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn serve_continuation(
        &mut self,
        t0: f64,
        lba: u64,
        end: u64,
        seg: usize,
        ra: ReadAhead,
        reach: u64,
        held_first: u64,
    ) -> Service {
        let n = (end - lba) as f64;
        let overhead_ns = self
            .params
            .overhead
            .get(Op::Read, true, self.last_op)
            .as_nanos() as f64;
        let t1 = t0 + overhead_ns;
        let mut gaps = Gaps::default();
        let t_end = self.media_pass(ra.origin_ns, ra.origin_lba, end, t1, &mut gaps);
        // Sectors already streamed in can leave at once; the first one still to come leaves when read.
        let first_new = lba.max(reach);
        let cached = (first_new - lba) as f64;
        let t_first = self.media_pass(
            ra.origin_ns,
            ra.origin_lba,
            first_new + 1,
            f64::INFINITY,
            &mut Gaps::default(),
        );
        let bus_media_start = (t1 + cached * self.bus_sector_ns).max(t_first);
        let end_ns = (t_end + self.bus_sector_ns)
            .max(bus_media_start + (n - cached) * self.bus_sector_ns)
            .max(t1 + n * self.bus_sector_ns);
        let next_ra = self.readahead_after(lba, end, t_end, held_first, None);
        if next_ra.is_none() {
            self.head_lba = end - 1;
        }
        self.cache.fill(seg, held_first, end, next_ra);
        Service {
            overhead_ns,
            seek_ns: gaps.seek_ns,
            rotate_ns: gaps.rotate_ns,
            end_ns,
            cache_hit: false,
        }
    }

    fn serve_write(&mut self, t0: f64, lba: u64, end: u64) -> Service {
        let n = (end - lba) as f64;
        let arrived = t0;
        let mut t0 = t0;
        if let Some((_, ra)) = self.cache.streaming() {
            let (t_free, r) = self.settle_readahead(&ra, t0);
            t0 = t_free;
            self.head_lba = self.last_read_by(&ra, r);
            self.cache.stop_streaming(r);
        }
        // Waiting for the minimum read-ahead to end is waiting for the arm (see `serve_read`).
        let readahead_wait_ns = t0 - arrived;
        if self.cache.enabled() {
            self.cache.invalidate(lba, end);
        }
        if self.params.write_cache != WriteCache::Off {
            let mut s = self.serve_write_back(t0, lba, end);
            s.seek_ns += readahead_wait_ns;
            return s;
        }
        let overhead_ns = self
            .params
            .overhead
            .get(Op::Write, false, self.last_op)
            .as_nanos() as f64;
        let t1 = t0 + overhead_ns;
        let head_wait_ns = (self.head_free_ns - t1).max(0.0);
        let (seek_ns, rotate_ns, t3, _) = self.position(t1 + head_wait_ns, lba, true);
        let mut gaps = Gaps::default();
        let t4 = self.media_pass(t3, lba, end, t3, &mut gaps);
        // The data must have crossed the bus before the last sector is written.
        let last_zone = self.geo.zone_index(Lba(end - 1));
        let end_ns = t4.max(t1 + n * self.bus_sector_ns + self.sector_ns[last_zone]);
        self.head_lba = end - 1;
        self.head_free_ns = self.head_free_ns.max(t4);
        Service {
            overhead_ns,
            seek_ns: readahead_wait_ns + head_wait_ns + seek_ns + gaps.seek_ns,
            rotate_ns: rotate_ns + gaps.rotate_ns,
            end_ns,
            cache_hit: false,
        }
    }

    /// A write under write-back caching: accepted into a segment (after waiting for a destage if the
    /// write segments are all dirty), complete once its data has crossed the bus, and destaged in the
    /// background from then on (or once the head has finished earlier destages).
    fn serve_write_back(&mut self, t0: f64, lba: u64, end: u64) -> Service {
        let n = (end - lba) as f64;
        let overhead_ns = self
            .params
            .overhead
            .get(Op::Write, true, self.last_op)
            .as_nanos() as f64;
        let t1 = t0 + overhead_ns;
        let slots = self.params.write_segments as usize;
        self.prune_destages(t1);
        if self.params.combine_sequential_writes && lba == self.last_write_end {
            if let Some(seg) = self.cache.dirty_ending_at(lba, t1) {
                return self.append_write(t1, overhead_ns, seg, lba, end);
            }
        }
        // At most `slots` segments hold dirty data: wait for the oldest destages beyond that.
        let mut accept = t1;
        if self.destage_ends.len() >= slots {
            accept = accept.max(self.destage_ends[self.destage_ends.len() - slots]);
        }
        // Level 1 takes a write at once only if it continues the last dirty write.
        if self.params.write_cache == WriteCache::Limited && lba != self.last_write_end {
            if let Some(&last) = self.destage_ends.back() {
                accept = accept.max(last);
            }
        }
        self.prune_destages(accept);
        // A segment free of dirty data; a single dedicated write segment may have to wait for its
        // own destage.
        let seg = loop {
            match self.cache.choose_for_write(accept) {
                Some(i) => break Some(i),
                None => match self.destage_ends.front().copied() {
                    Some(next) => {
                        accept = accept.max(next);
                        self.prune_destages(accept);
                    }
                    None => break None,
                },
            }
        };
        let end_ns = accept + n * self.bus_sector_ns;
        // The destage: the head's next job once it is free.
        let start = end_ns.max(self.head_free_ns);
        let (_, _, t3, _) = self.position(start, lba, true);
        let t4 = self.media_pass(t3, lba, end, t3, &mut Gaps::default());
        self.head_lba = end - 1;
        self.head_free_ns = t4;
        assert!(self.destage_ends.len() < slots, "destage bound");
        self.destage_ends.push_back(t4);
        self.last_write_end = end;
        let drop_at = if self.params.read_hits_on_write_data {
            f64::INFINITY
        } else {
            t4
        };
        if let Some(seg) = seg {
            self.cache.fill_write(seg, lba, end, t4, drop_at);
        }
        Service {
            overhead_ns,
            seek_ns: accept - t1,
            rotate_ns: 0.0,
            end_ns,
            cache_hit: true,
        }
    }

    /// A write continuing the dirty segment `seg` at `t1` (after its command overhead): taken at
    /// once, and destaged right after the destage it continues, which becomes one longer destage.
    fn append_write(
        &mut self,
        t1: f64,
        overhead_ns: f64,
        seg: usize,
        lba: u64,
        end: u64,
    ) -> Service {
        let n = (end - lba) as f64;
        let end_ns = t1 + n * self.bus_sector_ns;
        let start = end_ns.max(self.head_free_ns);
        let (_, _, t3, _) = self.position(start, lba, true);
        let t4 = self.media_pass(t3, lba, end, t3, &mut Gaps::default());
        self.head_lba = end - 1;
        self.head_free_ns = t4;
        // The continued destage now ends later; it stays one entry.
        self.destage_ends.pop_back();
        self.destage_ends.push_back(t4);
        self.last_write_end = end;
        let drop_at = if self.params.read_hits_on_write_data {
            f64::INFINITY
        } else {
            t4
        };
        let first = self
            .cache
            .segment(seg)
            .map_or(lba, |s| s.first_lba.min(lba));
        self.cache.fill_write(seg, first, end, t4, drop_at);
        Service {
            overhead_ns,
            seek_ns: 0.0,
            rotate_ns: 0.0,
            end_ns,
            cache_hit: true,
        }
    }

    /// Forgets destages that have ended by `t`.
    fn prune_destages(&mut self, t: f64) {
        while self.destage_ends.front().is_some_and(|&e| e <= t) {
            self.destage_ends.pop_front();
        }
    }

    // ----- queue --------------------------------------------------------------------------------

    fn pick_next(&self, t: f64) -> usize {
        match self.params.queue_policy {
            QueuePolicy::Fcfs => 0,
            QueuePolicy::CLook => {
                // The sweep goes on from where the last command's data ended, not from how far a
                // read-ahead has run since: a command that starts in what the running read-ahead
                // has read is served from it without positioning, so it belongs to this sweep, not
                // the next.
                // The last command may be a hit that carried the read-ahead on, far past the read
                // that started it.
                let head = match self.cache.streaming() {
                    Some((_, ra)) => self.last_end_lba.min(self.stream_reach(&ra, t)),
                    None => self.head_lba,
                };
                let mut ahead: Option<(u64, usize)> = None;
                let mut lowest: Option<(u64, usize)> = None;
                for (i, p) in self.pending.iter().enumerate() {
                    let l = p.req.lba.0;
                    if l >= head && ahead.is_none_or_greater(l) {
                        ahead = Some((l, i));
                    }
                    if lowest.is_none_or_greater(l) {
                        lowest = Some((l, i));
                    }
                }
                ahead.or(lowest).expect("pick_next on an empty queue").1
            }
            QueuePolicy::Sptf => {
                let head = self.head_lba_at_ns(t);
                let mut best: Option<(f64, usize)> = None;
                // Ties go to the oldest command.
                for (i, p) in self.pending.iter().enumerate() {
                    let ready = self.ready_at(t, head, &p.req);
                    if best.is_none_or(|(b, _)| ready < b) {
                        best = Some((ready, i));
                    }
                }
                best.expect("pick_next on an empty queue").1
            }
        }
    }

    /// When `req`, started at `t` with the head at `head`, could begin moving data: at once if the
    /// cache holds it, a running read-ahead is streaming it, or it starts right after the head;
    /// otherwise after the miss overhead, the seek and the rotational wait. SPTF's estimate.
    fn ready_at(&self, t: f64, head: u64, req: &DevRequest) -> f64 {
        let lba = req.lba.0;
        let end = lba + u64::from(req.sectors);
        if req.op == Op::Read && self.cache.enabled() {
            let stream = self.cache.streaming();
            let reach = stream.map(|(_, ra)| self.stream_reach(&ra, t));
            if self.cache.find_full_hit(lba, end, reach, t).is_some() {
                return t;
            }
            if let (Some((i, ra)), Some(r)) = (stream, reach) {
                let seg = self.cache.segment(i).expect("streaming segment exists");
                let (held_first, _) = self.cache.held(seg, Some(r));
                if r < ra.limit_lba {
                    if held_first <= lba && self.joins_stream(lba, r, ra.limit_lba) {
                        return t;
                    }
                    // Any other read stops the running read-ahead and positions the head, the
                    // sector under it included.
                    return self
                        .position_from(head, t + self.miss_overhead_ns(req.op), lba, false)
                        .2;
                }
            }
        }
        if lba == head + 1 {
            return t;
        }
        self.position_from(
            head,
            t + self.miss_overhead_ns(req.op),
            lba,
            req.op == Op::Write,
        )
        .2
    }

    fn miss_overhead_ns(&self, op: Op) -> f64 {
        self.params.overhead.get(op, false, self.last_op).as_nanos() as f64
    }

    /// Whether a read starting at `lba`, inside the segment a read-ahead fills and ending past its
    /// next unread sector `reach`, is served by that read-ahead, whose limit is `limit`: always when
    /// its first sector is already in the segment (DiskSim's partial hit on a segment being read),
    /// and otherwise as [`HddParams::almost_read_hits`] says. DiskSim counts a read starting past
    /// `reach` as a miss whatever its setting (`disk_buffer_select_read_segment`).
    fn joins_stream(&self, lba: u64, reach: u64, limit: u64) -> bool {
        match self.params.almost_read_hits {
            AlmostReadHits::None => lba < reach,
            AlmostReadHits::Head => lba <= reach,
            AlmostReadHits::Ahead => lba <= limit,
        }
    }

    fn start_next(&mut self, t: Instant) {
        debug_assert!(self.in_service.is_none());
        if self.pending.is_empty() {
            return;
        }
        let t0 = t.as_nanos() as f64;
        let idx = self.pick_next(t0);
        let p = self.pending.remove(idx).expect("index from pick_next");
        let s = self.serve(t0, p.req);
        // Round cumulative instants, not components, so the parts add up exactly. Past 2^53 ns
        // (104 days) `t0` is `t` rounded, possibly down, so each instant is held at `t` or later
        // in whole nanoseconds: a part of zero length would otherwise end before `t`.
        let round = |x: f64| Instant((x.round() as u64).max(t.0));
        let c1 = round(t0 + s.overhead_ns);
        let c2 = round(t0 + s.overhead_ns + s.seek_ns).max(c1);
        let c3 = round(t0 + s.overhead_ns + s.seek_ns + s.rotate_ns).max(c2);
        let at = round(s.end_ns).max(c3);
        let breakdown = Breakdown {
            queue: t - p.submitted,
            overhead: c1 - t,
            seek: c2 - c1,
            rotate: c3 - c2,
            transfer: at - c3,
        };
        self.in_service = Some(Completion {
            id: p.req.id,
            at,
            breakdown,
            cache_hit: s.cache_hit,
            parts: 1,
        });
    }

    /// Runs the drive up to `now`: completes what is due and starts queued commands at the instants
    /// the drive frees up.
    fn catch_up(&mut self, now: Instant) {
        assert!(
            now >= self.clock,
            "time went backwards: {now} after {}",
            self.clock
        );
        while let Some(c) = self.in_service {
            if c.at > now {
                break;
            }
            assert!(
                self.done.len() < self.queue_depth,
                "completion buffer bound"
            );
            self.done.push_back(c);
            self.in_service = None;
            self.start_next(c.at);
        }
        self.clock = now;
    }
}

/// `None` or holding a key greater than `l`: the C-LOOK scan's "better candidate" test.
trait NoneOrGreater {
    fn is_none_or_greater(&self, l: u64) -> bool;
}

impl NoneOrGreater for Option<(u64, usize)> {
    fn is_none_or_greater(&self, l: u64) -> bool {
        match self {
            None => true,
            Some((best, _)) => l < *best,
        }
    }
}

impl Device for Hdd {
    fn capacity(&self) -> ByteLen {
        self.geo.capacity()
    }

    fn can_accept(&self) -> bool {
        self.outstanding() < self.queue_depth
    }

    fn submit(&mut self, now: Instant, req: DevRequest) {
        self.catch_up(now);
        assert!(
            self.can_accept(),
            "submit to a full drive queue (depth {})",
            self.queue_depth
        );
        assert!(req.sectors >= 1, "request {} has no sectors", req.id);
        assert!(
            req.lba.0 + u64::from(req.sectors) <= self.geo.capacity_sectors(),
            "request {} runs past the end of the drive",
            req.id
        );
        assert!(self.pending.len() < self.queue_depth, "pending queue bound");
        self.pending.push_back(Pending {
            req,
            submitted: now,
        });
        if self.in_service.is_none() {
            self.start_next(now);
        }
    }

    fn next_event(&self) -> Option<Instant> {
        self.done.front().or(self.in_service.as_ref()).map(|c| c.at)
    }

    fn advance(&mut self, now: Instant, out: &mut Vec<Completion>) {
        self.catch_up(now);
        out.extend(self.done.drain(..));
    }

    fn outstanding(&self) -> usize {
        self.pending.len() + usize::from(self.in_service.is_some()) + self.done.len()
    }
}

#[cfg(test)]
mod tests;
