//! Timing models of storage devices, driven by simulated time.
//!
//! A device takes block requests (`DevRequest`: an LBA range and an operation) and reports when each
//! completes, with the service time split into `{queue, seek, rotate, transfer, overhead}`. Devices are
//! passive: the caller submits requests, asks for the instant of the next internal event, and advances
//! the device to that instant to collect completions. No device reads a clock; the same inputs always
//! give the same outputs. The HDD is split along physical lines (geometry, mechanics, cache, queue) the
//! way DiskSim keeps layout and mechanics apart.

pub mod blockq;
pub mod disksim;
pub mod error;
pub mod hdd;
pub mod link;
pub mod presets;
pub mod raid0;
pub mod ssd;
#[cfg(test)]
mod testutil;

pub use error::DeviceError;
pub use hdd::geometry::{Chs, Geometry, Zone, ZoneProgression};
pub use hdd::mechanics::{CommandOverheads, Rotation, SeekCurve};
pub use hdd::{AlmostReadHits, Hdd, HddParams, QueuePolicy, ReadAheadMode, WriteCache};
pub use link::{link_preset, link_presets, Direction, Link, LinkParams, LinkPreset};
pub use presets::{
    build, preset, preset_infos, preset_names, preset_source, try_build, DeviceSpec, PresetInfo,
};
pub use raid0::{Raid0, Raid0Layout};
pub use ssd::{Ssd, SsdParams};

use foresight_core::{ByteLen, Duration, Instant, Lba};

/// Whether a request reads or writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Op {
    /// Read from the medium (or the cache).
    Read,
    /// Write to the medium (or the cache).
    Write,
}

/// A request as a device sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DevRequest {
    /// Caller's id; echoed back in the completion. Must be unique among outstanding requests.
    pub id: u64,
    /// Read or write.
    pub op: Op,
    /// First sector.
    pub lba: Lba,
    /// Number of 512-byte sectors; at least one.
    pub sectors: u32,
}

/// Where a request's service time went. Components add up to completion minus submission.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Breakdown {
    /// Waiting in the device's own queue before service started.
    pub queue: Duration,
    /// Moving the arm.
    pub seek: Duration,
    /// Waiting for the sector to come under the head (including head-switch settle).
    pub rotate: Duration,
    /// Moving data on the medium and the bus.
    pub transfer: Duration,
    /// Command processing in the controller.
    pub overhead: Duration,
}

impl Breakdown {
    /// The sum of all components.
    pub fn total(&self) -> Duration {
        self.queue + self.seek + self.rotate + self.transfer + self.overhead
    }

    /// Adds another breakdown component-wise.
    pub fn add(&mut self, other: &Breakdown) {
        self.queue += other.queue;
        self.seek += other.seek;
        self.rotate += other.rotate;
        self.transfer += other.transfer;
        self.overhead += other.overhead;
    }
}

/// A finished request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The id given at submission.
    pub id: u64,
    /// When the device reported it done.
    pub at: Instant,
    /// Where the time went.
    pub breakdown: Breakdown,
    /// Whether the drive's cache served it without touching the medium.
    pub cache_hit: bool,
    /// How many member-disk requests it became (1 except on arrays, where a request that crosses a
    /// strip boundary is split).
    pub parts: u32,
}

/// The interface every device model offers to a driver.
///
/// The protocol: while `can_accept()`, the driver may `submit`. It then calls `advance(t)` for
/// `t = next_event()` (or any later instant it reaches first, such as a new submission time) and
/// receives the completions due by `t`, in completion order. `advance` must be called with
/// non-decreasing instants.
pub trait Device {
    /// Total addressable bytes.
    fn capacity(&self) -> ByteLen;
    /// Whether another request can be queued now (the device's command queue is bounded).
    fn can_accept(&self) -> bool;
    /// Queues a request at `now`. Panics if `!can_accept()` or the request runs past the capacity:
    /// both are driver bugs.
    fn submit(&mut self, now: Instant, req: DevRequest);
    /// The earliest instant at which the device needs `advance`, if anything is pending. For a single
    /// device (HDD, SSD) a completion is due exactly then. A composite device (a RAID-0 array) reports
    /// its members' earliest event, which may only be internal progress (a member finished one part of
    /// a request): advancing there may return no completion, and the next call reports a later
    /// instant. It is never later than the earliest completion.
    fn next_event(&self) -> Option<Instant>;
    /// Moves the device to `now` and appends every completion due at or before `now`.
    fn advance(&mut self, now: Instant, out: &mut Vec<Completion>);
    /// Requests submitted and not yet completed.
    fn outstanding(&self) -> usize;
}
