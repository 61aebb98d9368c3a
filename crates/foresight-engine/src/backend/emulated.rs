//! Timing-accurate emulation: real bytes, completion times from a `foresight-device` model.
//!
//! Every read is done twice, in parallel. The bytes come from the real file, read by an inner
//! [`ThreadsBackend`] (buffered: the real device only has to be faster than the modelled one). The
//! time comes from a device model (an HDD, an SSD or a RAID-0 of HDDs from the named presets),
//! driven by a clock thread that maps real time since the backend started onto model time: a read
//! submitted at real time `t` enters the modelled host block queues at model time `t`, the model
//! says when the device finishes it, the clock thread sleeps until that real instant, and the read
//! completes to the engine then, or when its real bytes arrive if that is later. So a policy run
//! through the real engine on this backend meets the latencies, queueing and positioning costs of
//! the modelled device, while the application gets the real file's bytes.
//!
//! Files are placed on the modelled volume when opened (spread over `slots` equal slots as in
//! paper 001's experiments, or back to back), and the engine shows policies that placement through
//! their layout, as the simulator does. On a RAID-0, `msp+...` puts the RAID driver's cache
//! ([`super::array`]) between the engine and this backend. The volume is built as the simulator builds it: a read is
//! split into member parts first (on a RAID-0 at strip boundaries, each member's share one
//! contiguous part, as Linux's md splits bios), and each member disk has its own host block queue,
//! the simulator's own (`foresight_device::blockq`), which merges adjacent parts up to
//! `max_request_bytes`, keeps 128 request slots (`nr_requests`) and dispatches by the configured
//! scheduler: `deadline` (the default; ascending LBA order with a read deadline, as Linux's
//! `mq-deadline`), `noop`, or `anticipatory`, which may hold a member idle for up to
//! `antic_expire` after a stream's read for that stream's next request. A read's stream is the
//! reader it is done for ([`IoRequest::reader`]), as the simulator tags a block request with the
//! application stream, so two readers of one file are two streams to the scheduler; a read no
//! reader asked for belongs to none and is never waited for. The engine gives a closed reader's id to
//! a later reader, so the scheduler's records are kept by a key per open reader, which the
//! backend forgets once nothing names it any more ([`IoBackend::reader_closed`]; the closed
//! reader's last request completed, none of its parts waits for a slot, and no queue may still
//! hold a disk for it): a new reader starts without the closed one's think times. The drive's own command queue is the
//! model's. Parts wait in the queue of a busy member, where
//! later parts can still merge with them and be sorted among them. Members are stepped event by
//! event, so a member that finishes at model instant `t` takes its next request at `t`, not at the
//! later instant the clock thread woke.
//!
//! The device models are not `Send`, so the clock thread builds and owns the members, their
//! queues and the table of reads; other threads talk to it through a small inbox. Accuracy is
//! bounded by how promptly the operating system wakes the clock thread (tens of microseconds),
//! which is small against disk service times but not against an SSD's. The thread asks for the
//! least timer slack Linux allows, 1 ns, so that its timed sleeps are not ended up to 50 us late
//! on purpose (the default slack, which batches wake-ups to save power).
//!
//! Shutdown (the lifecycle every backend keeps, `lifecycle.rs`): the inner pool fails the reads it
//! has not started, and the clock stops modelling: every read outstanding completes as soon as
//! its bytes (or its error) are in, without waiting for the model, which no one measures any
//! more; a read submitted later fails in the pool and completes the same way. Dropping the
//! backend joins the pool's workers, then the clock thread once it has delivered every read;
//! a worker stuck in a `pread` past the pool's grace is left detached, and the clock then ends
//! without the bytes of the reads still out.

use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::Instant as WallInstant;

use foresight_core::{ByteLen, Duration, FileId, Instant, Lba, SECTOR_BYTES};
pub use foresight_device::blockq::Scheduler;
use foresight_device::blockq::{BlockQueue, BlockReq, Owners};
use foresight_device::presets::{self, DeviceSpec};
use foresight_device::raid0::Raid0Layout;
use foresight_device::{Completion, DevRequest, Device, Op};
use foresight_policy::layout::Striping;

use super::lifecycle::{Joined, PanicAlarm, Phase};
use super::threads::ThreadsBackend;
use super::{
    real_handle, real_handle_beneath, BackendKind, CompletionPort, CompletionSink, FileHandle,
    IoBackend, IoCompletion, IoRequest, ModelledVolume,
};
use crate::beneath::RootDir;

/// Request slots of each member's host queue (Linux's and the simulator's default
/// `nr_requests`): a part that merges needs none, others wait in arrival order for one, so the
/// elevator sorts at most this many requests.
const NR_REQUESTS: usize = 128;
/// The most requests a member's host queue holds: its slots, plus room for the stream an
/// anticipating queue waits for, which may queue past the slots (Linux's `ELV_MQUEUE_MUST`).
const QUEUE_LIMIT: usize = 2 * NR_REQUESTS;
/// The clock thread's timer slack: the least Linux takes, so its sleeps end when asked.
const CLOCK_TIMER_SLACK_NS: u64 = 1;
/// Files are placed on 1 MiB boundaries of the modelled volume.
const PLACEMENT_ALIGN_BYTES: u64 = 1 << 20;

/// The modelled device.
#[derive(Clone, Debug, PartialEq)]
pub enum EmulatedDevice {
    /// One drive.
    Single(DeviceSpec),
    /// A RAID-0 array of identical drives.
    Raid0 {
        /// The member drive.
        member: DeviceSpec,
        /// Members, at least 1.
        disks: u32,
        /// Strip (chunk) size in bytes, a multiple of 512.
        strip_bytes: u64,
    },
}

/// Where files go on the modelled volume.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EmulatedPlacement {
    /// File `k` (in the order files are first opened) starts at `(k % slots) * volume / slots`,
    /// rounded down to 1 MiB: switching between files is a long seek, as in paper 001's setup.
    Spread {
        /// Number of equal slots, at least 1.
        slots: u32,
    },
    /// Files back to back from the start of the volume, each on a 1 MiB boundary.
    Contiguous,
}

/// How to emulate: the device, the placement and the host block queues.
#[derive(Clone, Debug, PartialEq)]
pub struct EmulatedConfig {
    /// The modelled device.
    pub device: EmulatedDevice,
    /// Where files go.
    pub placement: EmulatedPlacement,
    /// The largest request a member's host queue sends its drive (Linux `max_sectors_kb`).
    pub max_request_bytes: u64,
    /// The host queues' read deadline.
    pub read_expire: Duration,
    /// The host queues' scheduler, as the simulator's `host.scheduler`.
    pub scheduler: Scheduler,
    /// How long an anticipatory queue holds its disk, after a stream's read completes, for that
    /// stream's next request (the simulator's `host.antic_expire`).
    pub antic_expire: Duration,
}

/// Why an emulation could not be set up.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum EmulatedError {
    /// The preset name is unknown.
    #[error("`{0}` is not a device preset; choose one of: {names}", names = presets::preset_names().join(", "))]
    UnknownPreset(String),
    /// A setting is out of range.
    #[error("{0}")]
    Bad(String),
}

impl EmulatedConfig {
    /// One drive of the named preset (see `foresight devices`), files back to back, a 512 KiB
    /// host request limit, a 500 ms read deadline and the `deadline` scheduler (the simulator's
    /// defaults; its 6 ms `antic_expire` applies once [`EmulatedConfig::scheduler`] picks
    /// `anticipatory`).
    pub fn preset(name: &str) -> Result<EmulatedConfig, EmulatedError> {
        let spec =
            presets::preset(name).ok_or_else(|| EmulatedError::UnknownPreset(name.to_string()))?;
        Ok(EmulatedConfig {
            device: EmulatedDevice::Single(spec),
            placement: EmulatedPlacement::Contiguous,
            max_request_bytes: 512 << 10,
            read_expire: Duration::from_millis(500),
            scheduler: Scheduler::Deadline,
            antic_expire: Duration::from_millis(6),
        })
    }

    /// The same emulation with the named host scheduler (`noop`, `deadline` or
    /// `anticipatory`, as the simulator's `host.scheduler`); any other name is refused.
    pub fn scheduler(mut self, name: &str) -> Result<EmulatedConfig, EmulatedError> {
        self.scheduler = match name {
            "noop" => Scheduler::Noop,
            "deadline" => Scheduler::Deadline,
            "anticipatory" => Scheduler::Anticipatory,
            _ => {
                return Err(EmulatedError::Bad(format!(
                    "scheduler: `{name}` is not a host scheduler; choose noop, deadline or anticipatory"
                )))
            }
        };
        Ok(self)
    }

    /// The same drive as a RAID-0 member, `disks` of them with `strip_bytes` strips.
    pub fn raid0(mut self, disks: u32, strip_bytes: u64) -> EmulatedConfig {
        let member = match self.device {
            EmulatedDevice::Single(s) | EmulatedDevice::Raid0 { member: s, .. } => s,
        };
        self.device = EmulatedDevice::Raid0 {
            member,
            disks,
            strip_bytes,
        };
        self
    }

    /// Spreads files over `slots` slots.
    pub fn spread(mut self, slots: u32) -> EmulatedConfig {
        self.placement = EmulatedPlacement::Spread { slots };
        self
    }

    /// Checks the settings.
    pub fn validate(&self) -> Result<(), EmulatedError> {
        match &self.device {
            EmulatedDevice::Single(s) => s.validate(),
            EmulatedDevice::Raid0 {
                member,
                disks,
                strip_bytes,
            } => {
                if *disks == 0 || *strip_bytes == 0 || !strip_bytes.is_multiple_of(SECTOR_BYTES) {
                    return Err(EmulatedError::Bad(format!(
                        "raid0 needs at least one disk and a strip that is a positive multiple of 512 bytes (got {disks} disks, {strip_bytes} bytes)"
                    )));
                }
                if member.capacity().0 < *strip_bytes {
                    return Err(EmulatedError::Bad(format!(
                        "a raid0 strip of {strip_bytes} bytes is larger than a member of {} bytes; use smaller strips",
                        member.capacity().0
                    )));
                }
                member.validate()
            }
        }
        .map_err(|e| EmulatedError::Bad(e.to_string()))?;
        if let EmulatedPlacement::Spread { slots: 0 } = self.placement {
            return Err(EmulatedError::Bad(
                "spread placement needs at least one slot".into(),
            ));
        }
        if self.max_request_bytes < 4096
            || !self.max_request_bytes.is_multiple_of(4096)
            || self.max_request_bytes / SECTOR_BYTES > u64::from(u32::MAX)
        {
            return Err(EmulatedError::Bad(format!(
                "max_request_bytes must be a positive multiple of 4096 below 2 TiB, got {}",
                self.max_request_bytes
            )));
        }
        Ok(())
    }

    fn capacity_bytes(&self) -> u64 {
        match &self.device {
            EmulatedDevice::Single(s) => s.capacity().0,
            EmulatedDevice::Raid0 {
                member,
                disks,
                strip_bytes,
            } => member.capacity().0 / strip_bytes * strip_bytes * *disks as u64,
        }
    }

    fn striping(&self) -> Option<Striping> {
        match &self.device {
            EmulatedDevice::Single(_) => None,
            EmulatedDevice::Raid0 {
                disks, strip_bytes, ..
            } => Some(Striping {
                disks: *disks,
                strip_bytes: *strip_bytes,
            }),
        }
    }
}

/// What other threads tell the clock thread.
enum Msg {
    /// A read of these volume sectors entered the host queues at `at_ns`.
    Submit {
        token: u64,
        /// The stream the anticipatory scheduler charges it to: the reader's id.
        owner: Option<u32>,
        at_ns: u64,
        lba: u64,
        sectors: u64,
    },
    /// The real bytes of a read arrived.
    Data(IoCompletion),
    /// The reader with this id closed; a later reader may get the id.
    ReaderClosed(u32),
}

impl Msg {
    /// What the clock thread is told of `r`, submitted at `at_ns`: the volume sectors it reads
    /// and the reader it is charged to.
    fn submission(r: &IoRequest, at_ns: u64) -> Msg {
        let base = r
            .file
            .volume_offset_bytes
            .expect("emulated files are placed");
        let vol = base + r.offset_bytes;
        Msg::Submit {
            token: r.token,
            owner: r.reader.map(|s| s.0),
            at_ns,
            lba: vol / SECTOR_BYTES,
            sectors: ((vol + r.len_bytes as u64).div_ceil(SECTOR_BYTES) - vol / SECTOR_BYTES)
                .max(1),
        }
    }
}

struct Inbox {
    msgs: VecDeque<Msg>,
    phase: Phase,
    /// Set by the drop when a worker of the pool was left stuck in a `pread`: the clock ends
    /// without the bytes of the reads still out, which it holds nothing of (the worker owns
    /// each read's buffer and file).
    abandon_unread: bool,
}

struct Shared {
    inbox: Mutex<Inbox>,
    wake: Condvar,
    epoch: WallInstant,
    port: Arc<CompletionPort>,
    /// The clock thread's timer slack once it has asked for [`CLOCK_TIMER_SLACK_NS`], as it reads
    /// it back itself: 0 until then, `u64::MAX` if the kernel would not say. Only that thread
    /// can read it without privilege (another thread's `/proc/TID/timerslack_ns` needs
    /// `CAP_SYS_NICE`).
    clock_timer_slack_ns: AtomicU64,
}

impl Shared {
    /// The inbox. Its lock is held only to push or take messages and move the phase, so it
    /// is whole whenever let go, even after a panic of the clock thread's model under it; a
    /// second panic here (in the drop, or on a worker of the pool) would leave the backend's
    /// threads unjoined or abort.
    fn inbox(&self) -> std::sync::MutexGuard<'_, Inbox> {
        self.inbox.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// An empty inbox whose clock starts now.
    fn new(port: Arc<CompletionPort>) -> Arc<Shared> {
        Arc::new(Shared {
            inbox: Mutex::new(Inbox {
                msgs: VecDeque::new(),
                phase: Phase::Running,
                abandon_unread: false,
            }),
            wake: Condvar::new(),
            epoch: WallInstant::now(),
            port,
            clock_timer_slack_ns: AtomicU64::new(0),
        })
    }

    /// Moves the emulation forward to `to`, and wakes the clock thread to see it.
    fn enter(&self, to: Phase) {
        self.inbox().phase.advance(to);
        self.wake.notify_one();
    }

    fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    fn send(&self, msg: Msg) {
        self.inbox().msgs.push_back(msg);
        self.wake.notify_one();
    }
}

impl CompletionSink for Shared {
    fn complete(&self, c: IoCompletion) {
        self.send(Msg::Data(c));
    }

    /// A worker of the pool ended in a panic (it takes no lock that a panic can poison, so
    /// this is a bug of its own): the engine above hears so.
    fn backend_panicked(&self, why: &str) {
        self.port.backend_panicked(why);
    }
}

/// Real bytes, modelled time. See the module documentation.
pub struct EmulatedBackend {
    shared: Arc<Shared>,
    inner: ThreadsBackend,
    cfg: EmulatedConfig,
    volume_bytes: u64,
    next_contiguous: Mutex<u64>,
    capacity: usize,
    /// The clock thread, joined when the backend is dropped.
    threads: Joined,
}

impl EmulatedBackend {
    /// Whether no read waits in the pool's queue: each read submitted was taken by a worker,
    /// and its `pread` is under way.
    #[cfg(test)]
    pub(crate) fn pool_queue_is_empty(&self) -> bool {
        self.inner.queue_is_empty()
    }

    /// Starts an emulation with room for `capacity` outstanding reads; completions go to `port`.
    pub fn start(
        cfg: EmulatedConfig,
        capacity: usize,
        port: Arc<CompletionPort>,
    ) -> io::Result<EmulatedBackend> {
        cfg.validate()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        let shared = Shared::new(port);
        let inner_port = CompletionPort::new();
        let weak: Weak<dyn CompletionSink> =
            Arc::downgrade(&(shared.clone() as Arc<dyn CompletionSink>));
        inner_port.connect(weak);
        let inner = ThreadsBackend::start(capacity.min(32), capacity, inner_port)?;
        let volume_bytes = cfg.capacity_bytes() / PLACEMENT_ALIGN_BYTES * PLACEMENT_ALIGN_BYTES;
        let s = shared.clone();
        let c = cfg.clone();
        let clock = std::thread::Builder::new()
            .name("foresight-emulated-clock".into())
            .spawn(move || {
                let alarm = PanicAlarm(s.port.clone());
                // Linux may end a timed sleep up to the thread's timer slack late (50 us by
                // default), and every late wake-up delays a completion, and so the engine's next
                // read, past the instant the model gave it: on a fast array that moved the next
                // read past the drive's read-ahead into a lost revolution (one SASEQP stream on
                // five Cheetah 15K.4s, 134 MiB/s against the simulator's 201). Should the call
                // fail, the emulation still works, only with the default lateness.
                let _ = crate::sys::set_thread_timer_slack(CLOCK_TIMER_SLACK_NS);
                let slack_ns = crate::sys::thread_timer_slack_ns().unwrap_or(u64::MAX);
                s.clock_timer_slack_ns.store(slack_ns, Ordering::Release);
                alarm.watch(|| Clock::new(&c, s, capacity).run())
            })?;
        let threads = Joined::default();
        threads.push(clock);
        Ok(EmulatedBackend {
            shared,
            inner,
            cfg,
            volume_bytes,
            next_contiguous: Mutex::new(0),
            capacity,
            threads,
        })
    }

    fn place(&self, id: FileId, size: u64) -> io::Result<u64> {
        if size > self.volume_bytes {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "a file of {size} bytes does not fit the modelled volume of {} bytes",
                    self.volume_bytes
                ),
            ));
        }
        let at = match self.cfg.placement {
            EmulatedPlacement::Spread { slots } => {
                let gap = self.volume_bytes / slots as u64 / PLACEMENT_ALIGN_BYTES
                    * PLACEMENT_ALIGN_BYTES;
                (id.0 as u64 % slots as u64) * gap
            }
            EmulatedPlacement::Contiguous => {
                let mut next = self.next_contiguous.lock().expect("placement poisoned");
                let at = *next;
                *next = (at + size).div_ceil(PLACEMENT_ALIGN_BYTES) * PLACEMENT_ALIGN_BYTES;
                if *next > self.volume_bytes {
                    // The volume is full: start again from the beginning (timing only).
                    *next = 0;
                }
                at
            }
        };
        // A file larger than its slot overlaps the next one, which only matters for timing; one
        // that would run off the end of the volume moves back to fit.
        Ok(at.min((self.volume_bytes - size) / PLACEMENT_ALIGN_BYTES * PLACEMENT_ALIGN_BYTES))
    }
}

impl IoBackend for EmulatedBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Emulated
    }

    fn open(&self, path: &Path, id: FileId, _direct: bool) -> io::Result<FileHandle> {
        // The real bytes are read buffered: the real device only has to outpace the model.
        let mut h = real_handle(path, id, false)?;
        h.volume_offset_bytes = Some(self.place(id, h.size_bytes)?);
        Ok(h)
    }

    fn open_beneath(
        &self,
        root: &RootDir,
        rel: &Path,
        id: FileId,
        _direct: bool,
    ) -> io::Result<FileHandle> {
        let mut h = real_handle_beneath(root, rel, id, false)?;
        h.volume_offset_bytes = Some(self.place(id, h.size_bytes)?);
        Ok(h)
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn submit(&self, batch: &mut Vec<IoRequest>) {
        let at_ns = self.shared.now_ns();
        {
            let mut inbox = self.shared.inbox();
            inbox
                .msgs
                .extend(batch.iter().map(|r| Msg::submission(r, at_ns)));
        }
        self.shared.wake.notify_one();
        self.inner.submit(batch);
    }

    fn reader_closed(&self, reader: foresight_core::StreamId) {
        self.shared.send(Msg::ReaderClosed(reader.0));
    }

    fn volume(&self) -> Option<ModelledVolume> {
        Some(ModelledVolume {
            volume_bytes: ByteLen(self.volume_bytes),
            striping: self.cfg.striping(),
        })
    }

    fn shutdown(&self) {
        self.inner.shutdown();
        self.shared.enter(Phase::Shut);
    }
}

impl Drop for EmulatedBackend {
    fn drop(&mut self) {
        self.shutdown();
        // The pool's workers first: once they are joined, every read's bytes or error is in the
        // clock's inbox, so the clock, told to end, delivers them all before it does. A worker
        // stuck in a `pread` past the grace is left detached, owning its request: the clock
        // then does not wait for that read's bytes, which may never come.
        if self.inner.end() {
            self.shared.inbox().abandon_unread = true;
        }
        self.shared.enter(Phase::Ending);
        self.threads.join();
    }
}

/// A part of a read, waiting for a request slot of a member's host queue.
#[derive(Clone, Copy)]
struct Part {
    token: u64,
    owner: Option<u32>,
    lba: u64,
    sectors: u32,
}

/// One member disk (the only one, for a single drive), its host queue (the simulator's
/// [`BlockQueue`], with [`NR_REQUESTS`] slots) and the parts waiting for a slot.
struct Member {
    device: Box<dyn Device>,
    queue: BlockQueue<u64>,
    /// Parts waiting for a slot, in arrival order; at most the parts the outstanding reads have
    /// left (asserted in `Clock::enqueue`), and the reads are at most the backend's capacity.
    waiting: VecDeque<Part>,
}

impl Member {
    /// Queues a part at `now`. Parts keep their order, so while some wait for a slot later ones
    /// wait behind them, except the stream an anticipating queue waits for, which may queue past
    /// the slots (up to [`QUEUE_LIMIT`]), as in the simulator.
    fn push(&mut self, now: Instant, p: Part, owners: &mut Owners) {
        let owner = p.owner;
        if self.queue.waits_for(owner) && !self.queue.is_full() {
            self.queue
                .push(now, Op::Read, p.lba, p.sectors, p.token, owner, owners);
        } else if !self.waiting.is_empty()
            || !self
                .queue
                .try_push(now, Op::Read, p.lba, p.sectors, p.token, owner, owners)
        {
            self.waiting.push_back(p);
        }
    }

    /// Moves waiting parts in as slots free, so the elevator sees as many requests as it may.
    fn refill(&mut self, now: Instant, owners: &mut Owners) {
        while let Some(p) = self.waiting.front().copied() {
            if !self
                .queue
                .try_push(now, Op::Read, p.lba, p.sectors, p.token, p.owner, owners)
            {
                break;
            }
            self.waiting.pop_front();
        }
    }
}

/// A read as the clock thread tracks it.
#[derive(Default)]
struct Pending {
    parts_left: u32,
    data: Option<IoCompletion>,
    model_done: bool,
}

/// The clock thread's world: the members, their host queues and the reads.
struct Clock {
    shared: Arc<Shared>,
    members: Vec<Member>,
    /// RAID-0 strip arithmetic, for an array.
    raid0: Option<Raid0Layout>,
    capacity_sectors: u64,
    max_sectors: u64,
    /// Reads the engine may have outstanding.
    capacity_reads: usize,
    /// Parts of the tracked reads not yet completed by their member: every part waiting for a
    /// slot belongs to one, so the waiting lines together hold at most this many.
    parts_outstanding: u64,
    /// What the anticipatory scheduler knows about each stream, across all members. Its streams
    /// are keys, not reader ids: the engine gives a closed reader's id to a later reader, which
    /// must not inherit the closed one's think times and seeks.
    owners: Owners,
    /// The key of each open reader that has submitted a read, by reader id.
    reader_keys: BTreeMap<u32, u32>,
    /// Keys of closed readers still named by a request (waiting for a slot, queued or on a disk)
    /// or by a queue that may hold its disk for the key: forgotten, and free for another reader,
    /// once nothing names them ([`Clock::forget_key`]). Each has a read outstanding or is a
    /// member queue's last stream, so there are at most as many as reads plus members (asserted
    /// where one is added).
    retired_keys: Vec<u32>,
    /// Keys free for a new reader; `key_count` keys have ever been handed out.
    free_keys: Vec<u32>,
    key_count: u32,
    /// Member requests at the drives, by member and the id its queue gave them.
    at_device: BTreeMap<(usize, u64), BlockReq<u64>>,
    reads: BTreeMap<u64, Pending>,
    /// Shut down: reads complete with their bytes, the model no longer consulted.
    shut: bool,
    model_ns: u64,
    comps: Vec<Completion>,
    ready: Vec<IoCompletion>,
}

impl Clock {
    fn new(cfg: &EmulatedConfig, shared: Arc<Shared>, capacity_reads: usize) -> Clock {
        let max_sectors = cfg.max_request_bytes / SECTOR_BYTES;
        let (specs, raid0) = match &cfg.device {
            EmulatedDevice::Single(s) => (vec![s.clone()], None),
            EmulatedDevice::Raid0 {
                member,
                disks,
                strip_bytes,
            } => (
                vec![member.clone(); *disks as usize],
                Some(
                    Raid0Layout::new(*disks as usize, *strip_bytes)
                        .expect("the strip was validated"),
                ),
            ),
        };
        let members: Vec<Member> = specs
            .iter()
            .map(|s| Member {
                device: presets::build(s),
                queue: BlockQueue::new(
                    cfg.scheduler,
                    max_sectors as u32,
                    cfg.read_expire,
                    QUEUE_LIMIT,
                )
                .with_slots(NR_REQUESTS)
                .with_antic_expire(cfg.antic_expire),
                waiting: VecDeque::new(),
            })
            .collect();
        Clock {
            shared,
            members,
            raid0,
            capacity_sectors: cfg.capacity_bytes() / SECTOR_BYTES,
            max_sectors,
            capacity_reads,
            parts_outstanding: 0,
            owners: Owners::default(),
            reader_keys: BTreeMap::new(),
            retired_keys: Vec::new(),
            free_keys: Vec::new(),
            key_count: 0,
            at_device: BTreeMap::new(),
            reads: BTreeMap::new(),
            shut: false,
            model_ns: 0,
            comps: Vec::new(),
            ready: Vec::new(),
        }
    }

    /// The earliest instant a member needs advancing: its drive's next event, or the end of its
    /// queue's anticipation wait when the drive could take the request then released (a busy
    /// drive is fed at its own next event anyway).
    fn next_event_ns(&self) -> Option<u64> {
        self.members
            .iter()
            .flat_map(|m| {
                let timer = m.queue.timer().filter(|_| m.device.can_accept());
                [m.device.next_event(), timer]
            })
            .flatten()
            .map(|t| t.0)
            .min()
    }

    fn run(mut self) {
        loop {
            let (msgs, phase): (Vec<Msg>, Phase) = {
                let mut inbox = self.shared.inbox();
                loop {
                    if !inbox.msgs.is_empty() || (!inbox.phase.running() && !self.shut) {
                        break (inbox.msgs.drain(..).collect(), inbox.phase);
                    }
                    if inbox.phase == Phase::Ending
                        && (self.reads.is_empty() || inbox.abandon_unread)
                    {
                        return;
                    }
                    let now = self.shared.now_ns();
                    // Once shut, only messages matter: the model is no longer consulted.
                    let next = self.next_event_ns().filter(|_| !self.shut);
                    match next {
                        Some(t) if t <= now => break (Vec::new(), inbox.phase),
                        Some(t) => {
                            let wait = std::time::Duration::from_nanos(t - now);
                            inbox = self
                                .shared
                                .wake
                                .wait_timeout(inbox, wait)
                                .expect("emulation inbox poisoned")
                                .0;
                        }
                        None => {
                            inbox = self
                                .shared
                                .wake
                                .wait(inbox)
                                .expect("emulation inbox poisoned")
                        }
                    }
                }
            };
            if !phase.running() {
                self.shut_down(msgs);
                continue;
            }
            for m in msgs {
                match m {
                    Msg::Submit {
                        token,
                        owner,
                        at_ns,
                        lba,
                        sectors,
                    } => self.enqueue(token, owner, at_ns, lba, sectors),
                    Msg::Data(c) => {
                        let p = self.reads.entry(c.token).or_default();
                        p.data = Some(c);
                        self.finish_if_done_by_token_of_last();
                    }
                    Msg::ReaderClosed(reader) => self.reader_closed(reader),
                }
            }
            let now = self.shared.now_ns().max(self.model_ns);
            self.advance(now);
            self.dispatch();
            for c in self.ready.drain(..) {
                self.shared.port.deliver(c);
            }
        }
    }

    /// Handles `msgs` once the backend is shut down: the model is dropped from the reckoning, so
    /// every read completes as soon as its bytes (or its error, from the pool, which starts no
    /// more reads) are in. A read submitted after the shutdown is not modelled: its error comes
    /// from the pool like any other.
    fn shut_down(&mut self, msgs: Vec<Msg>) {
        if !self.shut {
            self.shut = true;
            let arrived: Vec<u64> = self
                .reads
                .iter()
                .filter(|(_, p)| p.data.is_some())
                .map(|(t, _)| *t)
                .collect();
            for t in arrived {
                let p = self.reads.remove(&t).expect("listed");
                self.ready.push(p.data.expect("checked"));
            }
        }
        for m in msgs {
            if let Msg::Data(c) = m {
                self.reads.remove(&c.token);
                self.ready.push(c);
            }
        }
        for c in self.ready.drain(..) {
            self.shared.port.deliver(c);
        }
    }

    /// The scheduler's key for reader `reader`: the one it has, or a free one.
    fn key_of(&mut self, reader: u32) -> u32 {
        if let Some(&k) = self.reader_keys.get(&reader) {
            return k;
        }
        let k = self.free_keys.pop().unwrap_or_else(|| {
            self.key_count += 1;
            self.key_count - 1
        });
        self.reader_keys.insert(reader, k);
        k
    }

    /// Retires the key of a reader that closed: the scheduler forgets it now if nothing names
    /// it any more ([`Clock::forget_key`]), or once that is so. The reader's next read with this
    /// id (a new reader) gets a fresh key.
    fn reader_closed(&mut self, reader: u32) {
        let Some(k) = self.reader_keys.remove(&reader) else {
            return;
        };
        if self.forget_key(k) {
            self.free_keys.push(k);
        } else {
            self.retired_keys.push(k);
            // Each retired key has a read outstanding (a part waiting, queued or on a disk) or
            // is the stream a member queue last dispatched for, one per member.
            let bound = self.capacity_reads + self.members.len();
            assert!(
                self.retired_keys.len() <= bound,
                "{} closed readers' keys wait for their requests, more than the {} reads the \
                 engine may have outstanding and the {} members",
                self.retired_keys.len(),
                self.capacity_reads,
                self.members.len()
            );
        }
    }

    /// Forgets retired key `k`, and says whether it did, once nothing names it: no request of
    /// it queued or on a disk (the scheduler's records), no part of it waiting for a slot (it
    /// would enter a queue under `k` later, so `k` must not go to a new reader meanwhile), and
    /// no member queue that may still hold its disk for `k` (a new reader under `k` would be
    /// taken for the closed one asking again).
    fn forget_key(&mut self, k: u32) -> bool {
        let named = self
            .members
            .iter()
            .any(|m| m.queue.bets_on(Some(k)) || m.waiting.iter().any(|p| p.owner == Some(k)));
        !named && self.owners.forget(k)
    }

    /// Forgets the retired keys nothing names any more.
    fn forget_retired(&mut self) {
        let retired = std::mem::take(&mut self.retired_keys);
        for k in retired {
            if self.forget_key(k) {
                self.free_keys.push(k);
            } else {
                self.retired_keys.push(k);
            }
        }
    }

    /// Completes every read whose model time has come and whose bytes are in.
    fn finish_if_done_by_token_of_last(&mut self) {
        let done: Vec<u64> = self
            .reads
            .iter()
            .filter(|(_, p)| p.model_done && p.data.is_some())
            .map(|(t, _)| *t)
            .collect();
        for t in done {
            let p = self.reads.remove(&t).expect("listed");
            self.ready.push(p.data.expect("checked"));
        }
    }

    /// Moves the members to `now_ns` one event at a time, feeding each from its queue at the
    /// instant it frees up (as the simulator does), not at the later instant the clock thread
    /// woke.
    fn advance(&mut self, now_ns: u64) {
        if now_ns < self.model_ns {
            return;
        }
        while let Some(t) = self.next_event_ns().filter(|&t| t <= now_ns) {
            self.model_ns = self.model_ns.max(t);
            let mut comps = std::mem::take(&mut self.comps);
            for (d, m) in self.members.iter_mut().enumerate() {
                if m.device.next_event().is_some_and(|e| e.0 <= self.model_ns) {
                    m.device.advance(Instant(self.model_ns), &mut comps);
                }
                for c in comps.drain(..) {
                    let r = self
                        .at_device
                        .remove(&(d, c.id))
                        .expect("completion for a request the model got");
                    m.queue
                        .completed(Instant(self.model_ns), &r, &mut self.owners);
                    for &t in &r.tokens {
                        let p = self.reads.get_mut(&t).expect("a tracked read");
                        p.parts_left -= 1;
                        self.parts_outstanding -= 1;
                        if p.parts_left == 0 {
                            p.model_done = true;
                        }
                    }
                }
            }
            self.comps = comps;
            self.forget_retired();
            self.dispatch();
        }
        self.model_ns = now_ns;
        self.finish_if_done_by_token_of_last();
    }

    /// Splits a read's volume sectors into member parts (a RAID-0 split at strip boundaries, each
    /// member's share contiguous on it, as Linux's md splits bios), cuts those at the request
    /// limit and queues them on their members, merging with neighbours where they touch.
    fn enqueue(&mut self, token: u64, owner: Option<u32>, at_ns: u64, lba: u64, sectors: u64) {
        // Bring the model up to the submission instant first (the device protocol needs
        // non-decreasing time), collecting what finished before it.
        let at = at_ns.max(self.model_ns);
        self.advance(at);
        let mut lba = lba;
        let sectors = sectors.min(self.capacity_sectors);
        if lba + sectors > self.capacity_sectors {
            // Past the modelled volume (a file larger than its slot at the end): wrap, timing only.
            lba %= self.capacity_sectors.saturating_sub(sectors).max(1);
        }
        let mut pieces: Vec<(usize, u64, u64)> = Vec::with_capacity(self.members.len());
        match self.raid0 {
            None => pieces.push((0, lba, sectors)),
            Some(layout) => {
                // The layout takes u32 sector counts: walk a longer read in chunks.
                let mut pos = lba;
                while pos < lba + sectors {
                    let n = (lba + sectors - pos).min(1 << 30);
                    layout.split(Lba(pos), n as u32, |d, l, c| {
                        pieces.push((d, l.0, u64::from(c)))
                    });
                    pos += n;
                }
            }
        }
        let owner = owner.map(|r| self.key_of(r));
        let mut parts = 0u32;
        for (d, l, n) in pieces {
            let mut pos = l;
            while pos < l + n {
                let len = (l + n - pos).min(self.max_sectors);
                self.members[d].push(
                    Instant(at),
                    Part {
                        token,
                        owner,
                        lba: pos,
                        sectors: len as u32,
                    },
                    &mut self.owners,
                );
                parts += 1;
                pos += len;
            }
        }
        let p = self.reads.entry(token).or_default();
        p.parts_left += parts;
        self.parts_outstanding += u64::from(parts);
        assert!(
            self.reads.len() <= self.capacity_reads,
            "{} reads tracked, more than the {} the engine may have outstanding",
            self.reads.len(),
            self.capacity_reads
        );
        let waiting: usize = self.members.iter().map(|m| m.waiting.len()).sum();
        assert!(
            waiting as u64 <= self.parts_outstanding,
            "{waiting} parts wait for member slots, more than the {} the tracked reads have left",
            self.parts_outstanding
        );
    }

    /// Feeds every member that can take a request from its own queue.
    fn dispatch(&mut self) {
        for (d, m) in self.members.iter_mut().enumerate() {
            loop {
                m.refill(Instant(self.model_ns), &mut self.owners);
                if !m.device.can_accept() {
                    break;
                }
                let Some(r) = m.queue.pop(Instant(self.model_ns), &mut self.owners) else {
                    break;
                };
                m.device.submit(
                    Instant(self.model_ns),
                    DevRequest {
                        id: r.id,
                        op: Op::Read,
                        lba: Lba(r.lba),
                        sectors: r.sectors,
                    },
                );
                self.at_device.insert((d, r.id), r);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A completion due at model instant `t` is handed over when the clock thread's timed sleep
    /// ends, so that sleep must end when asked: with Linux's default 50 us timer slack it ended
    /// about 75 us late on average, against 30 us with the least slack. The clock thread reads its
    /// slack back itself, as another thread's `/proc/TID/timerslack_ns` is closed to a process
    /// without `CAP_SYS_NICE`. Where the kernel refuses a thread its own slack (a seccomp filter on
    /// `prctl`), the backend runs with the default and this says so rather than fail.
    #[test]
    fn the_clock_thread_asks_the_kernel_for_the_least_timer_slack() {
        let backend = EmulatedBackend::start(
            EmulatedConfig::preset("wd800jd").unwrap(),
            4,
            CompletionPort::new(),
        )
        .unwrap();
        let slack_ns = |b: &EmulatedBackend| b.shared.clock_timer_slack_ns.load(Ordering::Acquire);
        // The clock thread sets its slack as it starts; wait for it (5 s at most).
        for _ in 0..500 {
            if slack_ns(&backend) != 0 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let allowed = std::thread::spawn(|| {
            crate::sys::set_thread_timer_slack(CLOCK_TIMER_SLACK_NS)
                .and_then(|()| crate::sys::thread_timer_slack_ns())
        })
        .join()
        .unwrap();
        match allowed {
            Ok(_) => assert_eq!(
                slack_ns(&backend),
                CLOCK_TIMER_SLACK_NS,
                "the clock thread's timer slack, ns"
            ),
            Err(e) => eprintln!(
                "this system refuses a thread its timer slack ({e}): the clock keeps the default"
            ),
        }
        drop(backend);
    }

    fn clock(cfg: &EmulatedConfig) -> Clock {
        let shared = Shared::new(CompletionPort::new());
        Clock::new(cfg, shared, 1024)
    }

    /// Drives the clock in model time, without its thread: each read `(at_ns, lba, sectors)`
    /// enters the host queues at its instant (in order); returns the instant the model finished
    /// the last one.
    fn run_model(clock: &mut Clock, reads: &[(u64, u64, u64)]) -> u64 {
        let mut next = 0;
        loop {
            while let Some(&(at_ns, lba, sectors)) = reads.get(next) {
                if at_ns > clock.model_ns {
                    break;
                }
                clock.enqueue(next as u64, Some(0), at_ns, lba, sectors);
                next += 1;
            }
            clock.dispatch();
            if next == reads.len() && clock.reads.values().all(|p| p.model_done) {
                return clock.model_ns;
            }
            let arrival = reads.get(next).map(|r| r.0);
            let t = match (clock.next_event_ns(), arrival) {
                (Some(e), Some(a)) => e.min(a),
                (e, a) => e.or(a).expect("reads outstanding"),
            };
            clock.advance(t);
        }
    }

    /// One drive of `spec` serving `reqs` (`(lba, sectors)`) in this order, each handed over as
    /// soon as the drive can take it, from instant 0; returns when it finished the last.
    fn serve_in_order(spec: &DeviceSpec, reqs: &[(u64, u32)]) -> u64 {
        let mut d = presets::build(spec);
        let (mut t, mut next, mut done) = (Instant::ZERO, 0, 0);
        let mut comps = Vec::new();
        while done < reqs.len() {
            while next < reqs.len() && d.can_accept() {
                let (lba, sectors) = reqs[next];
                d.submit(
                    t,
                    DevRequest {
                        id: next as u64,
                        op: Op::Read,
                        lba: Lba(lba),
                        sectors,
                    },
                );
                next += 1;
            }
            t = d.next_event().expect("requests outstanding");
            d.advance(t, &mut comps);
            done += comps.len();
            comps.clear();
        }
        t.0
    }

    /// A RAID-0 of four WD800JDs with 64 KiB strips (128 sectors). At instant 0 two 4 MiB regions
    /// are read in 128 KiB reads, A at volume sector 0 but for its last 128 KiB, and B far
    /// away; 1 ms later, while every member is busy with A, the rest of A. Each member holds
    /// 1 MiB of each region, contiguous on the member. With a block queue per member, as in the
    /// simulator, the late part of A merges into the member's queued second request of A and
    /// is served before B; every member then serves A in two 512 KiB requests and B in two, in
    /// that order, and the array finishes when one member does. (With one queue in front of the
    /// array, requests passed straight to the array's FIFOs, the late part waited behind B and
    /// each member sought back for it.)
    #[test]
    fn raid0_members_each_merge_and_sort_their_own_parts() {
        let cfg = EmulatedConfig::preset("wd800jd")
            .unwrap()
            .raid0(4, 64 << 10);
        let mut c = clock(&cfg);
        let b_lba = 8192 * 1000;
        let mut reads: Vec<(u64, u64, u64)> = (0..31).map(|k| (0, k * 256, 256)).collect();
        reads.extend((0..32).map(|k| (0, b_lba + k * 256, 256)));
        reads.push((1_000_000, 31 * 256, 256));
        let array_ns = run_model(&mut c, &reads);
        let spec = presets::preset("wd800jd").unwrap();
        let b = b_lba / 4;
        let member_ns = serve_in_order(
            &spec,
            &[(0, 1024), (1024, 1024), (b, 1024), (b + 1024, 1024)],
        );
        assert_eq!(
            array_ns, member_ns,
            "the array took {array_ns} ns, a member serving its merged share in order {member_ns} ns"
        );
    }

    /// More unmergeable parts than a member queue has request slots: the elevator sorts 128 of
    /// them, the rest wait in arrival order and move in as slots free, and every read completes.
    #[test]
    fn parts_beyond_the_request_slots_wait_their_turn() {
        let cfg = EmulatedConfig::preset("wd800jd").unwrap();
        let mut c = clock(&cfg);
        let reads: Vec<(u64, u64, u64)> = (0..300).map(|k| (0, k * 64, 8)).collect();
        for (token, &(at, lba, sectors)) in reads.iter().enumerate() {
            c.enqueue(token as u64, Some(0), at, lba, sectors);
        }
        let m = &c.members[0];
        assert_eq!(
            (m.queue.len(), m.waiting.len()),
            (NR_REQUESTS, 300 - NR_REQUESTS)
        );
        c.dispatch();
        while c.reads.values().any(|p| !p.model_done) {
            let t = c.next_event_ns().expect("reads outstanding");
            c.advance(t);
            c.dispatch();
        }
        let m = &c.members[0];
        assert!(m.queue.is_empty() && m.waiting.is_empty());
    }

    /// Runs the model until every read is done, and returns the reads' tokens in the order the
    /// model finished them.
    fn finish_order(c: &mut Clock) -> Vec<u64> {
        let mut order = Vec::new();
        c.dispatch();
        while c.reads.values().any(|p| !p.model_done) {
            let t = c.next_event_ns().expect("reads outstanding");
            c.advance(t);
            c.dispatch();
            let mut done: Vec<u64> = c
                .reads
                .iter()
                .filter(|(t, p)| p.model_done && !order.contains(*t))
                .map(|(t, _)| *t)
                .collect();
            done.sort_unstable();
            order.extend(done);
        }
        order
    }

    /// Stream 1 reads at sector 1,000 while stream 2's read far away waits behind it; 1 ms after
    /// stream 1's read completes (within the 6 ms `antic_expire`), stream 1 reads on from where it
    /// stopped. Under `anticipatory` the disk was held for stream 1, so its second read is served
    /// before stream 2's earlier-queued one; under `deadline` stream 2's read went to the disk as
    /// soon as it was free.
    #[test]
    fn anticipatory_serves_the_streams_next_nearby_read_before_an_earlier_far_one() {
        for (name, expected) in [("anticipatory", [0, 2, 1]), ("deadline", [0, 1, 2])] {
            let cfg = EmulatedConfig::preset("wd800jd")
                .unwrap()
                .scheduler(name)
                .unwrap();
            let mut c = clock(&cfg);
            c.enqueue(0, Some(1), 0, 1000, 8);
            c.enqueue(1, Some(2), 0, 50_000_000, 8);
            // Until stream 1's first read completes.
            until_done(&mut c, 0);
            let next_ns = c.model_ns + 1_000_000;
            c.advance(next_ns);
            c.dispatch();
            c.enqueue(2, Some(1), next_ns, 1008, 8);
            let mut order = vec![0];
            order.extend(finish_order(&mut c).into_iter().filter(|&t| t != 0));
            assert_eq!(order, expected, "{name}");
        }
    }

    /// The anticipatory case above with both streams reading one file, as two readers of it
    /// submit their reads to the backend: the reads name their readers, and the disk is held for
    /// reader 1's next read as it is for a stream of its own file. (Keyed on the file, both
    /// readers were one stream, and reader 2's far read went to the disk at once.)
    #[test]
    fn anticipation_waits_for_a_reader_not_for_the_file_it_reads() {
        let cfg = EmulatedConfig::preset("wd800jd")
            .unwrap()
            .scheduler("anticipatory")
            .unwrap();
        let mut c = clock(&cfg);
        let file = Arc::new(FileHandle {
            id: FileId(3),
            path: "shared".into(),
            file: None,
            direct: false,
            size_bytes: 32 << 30,
            identity: (1, 1),
            modified: None,
            volume_offset_bytes: Some(0),
        });
        let read = |token: u64, reader: u32, sector: u64| IoRequest {
            token,
            file: file.clone(),
            offset_bytes: sector * SECTOR_BYTES,
            buf: crate::buffer::AlignedBuf::new(4096).expect("a 4 KiB buffer"),
            buf_offset: 0,
            len_bytes: 4096,
            reader: Some(foresight_core::StreamId(reader)),
        };
        let submit = |c: &mut Clock, r: IoRequest, at_ns: u64| match Msg::submission(&r, at_ns) {
            Msg::Submit {
                token,
                owner,
                at_ns,
                lba,
                sectors,
            } => c.enqueue(token, owner, at_ns, lba, sectors),
            Msg::Data(_) | Msg::ReaderClosed(_) => unreachable!("a submission"),
        };
        submit(&mut c, read(0, 1, 1000), 0);
        submit(&mut c, read(1, 2, 50_000_000), 0);
        until_done(&mut c, 0);
        let next_ns = c.model_ns + 1_000_000;
        c.advance(next_ns);
        c.dispatch();
        submit(&mut c, read(2, 1, 1008), next_ns);
        let after: Vec<u64> = finish_order(&mut c)
            .into_iter()
            .filter(|&t| t != 0)
            .collect();
        assert_eq!(after, vec![2, 1], "reader 1's next read first");
    }

    /// Runs the model until read `token` is done.
    fn until_done(c: &mut Clock, token: u64) {
        c.dispatch();
        while !c.reads[&token].model_done {
            let t = c.next_event_ns().expect("reads outstanding");
            c.advance(t);
            c.dispatch();
        }
    }

    /// A reader that thought 15 ms after each of its reads (longer than the 6 ms `antic_expire`,
    /// so the disk is not held for it) closes, and a new reader gets its id. The new reader has
    /// no think time of its own, so, as any reader without samples, it is waited for: its next
    /// read is served before another reader's earlier far one, as in
    /// `anticipatory_serves_the_streams_next_nearby_read_before_an_earlier_far_one`. (While the
    /// scheduler kept its records by reader id, the new reader inherited the closed one's think
    /// time and the far read went first.) The closed reader's last read is still on the disk
    /// when it closes, and its key is freed only once that read completes and the queue has
    /// dispatched another stream's read.
    #[test]
    fn a_reader_given_a_closed_readers_id_starts_without_its_think_time() {
        let cfg = EmulatedConfig::preset("wd800jd")
            .unwrap()
            .scheduler("anticipatory")
            .unwrap();
        let mut c = clock(&cfg);
        let mut at_ns = 0;
        for k in 0..4u64 {
            c.enqueue(k, Some(1), at_ns, 1000 + 8 * k, 8);
            if k == 3 {
                break;
            }
            until_done(&mut c, k);
            at_ns = c.model_ns + 15_000_000;
            c.advance(at_ns);
        }
        c.dispatch();
        c.reader_closed(1);
        assert_eq!(c.retired_keys.len(), 1, "its last read is on the disk");
        until_done(&mut c, 3);
        // Its requests are done, but the disk may still be held for its next read: the key
        // stays retired until the queue dispatches another stream's read.
        assert_eq!(c.retired_keys.len(), 1, "the queue still bets on it");
        // The new reader 1, and reader 2 far away, as in the anticipation test.
        at_ns = c.model_ns + 1_000_000;
        c.advance(at_ns);
        c.enqueue(10, Some(1), at_ns, 2000, 8);
        c.enqueue(11, Some(2), at_ns, 50_000_000, 8);
        until_done(&mut c, 10);
        let next_ns = c.model_ns + 1_000_000;
        c.advance(next_ns);
        c.dispatch();
        c.enqueue(12, Some(1), next_ns, 2008, 8);
        let after: Vec<u64> = finish_order(&mut c)
            .into_iter()
            .filter(|&t| t > 10)
            .collect();
        assert_eq!(after, vec![12, 11], "the new reader 1's next read first");
        assert!(c.retired_keys.is_empty() && c.free_keys.len() == 1);
        assert!(c.reader_keys.len() <= 2 && c.key_count <= 3);
    }

    /// Reader 1's read waits for a request slot behind 128 of reader 0's when reader 1 closes:
    /// the part is in no host queue yet, so the scheduler holds no record of its key, but the
    /// part still carries the key and enters a queue later. The key is not handed to the reader
    /// that next gets id 1 until that part completes; (while a closed reader's key was freed as
    /// soon as no request of it was queued or on a disk, the new reader 1 got the same key and
    /// the two readers' parts were one stream to the scheduler).
    #[test]
    fn a_closed_readers_key_waiting_for_a_slot_goes_to_no_new_reader() {
        let cfg = EmulatedConfig::preset("wd800jd").unwrap();
        let mut c = clock(&cfg);
        for k in 0..NR_REQUESTS as u64 {
            c.enqueue(k, Some(0), 0, k * 64, 8);
        }
        c.enqueue(500, Some(1), 0, 10_000_000, 8);
        assert_eq!(
            c.members[0].waiting.len(),
            1,
            "reader 1's part waits for a slot"
        );
        c.reader_closed(1);
        c.enqueue(501, Some(1), 0, 20_000_000, 8);
        let owners: Vec<Option<u32>> = c.members[0].waiting.iter().map(|p| p.owner).collect();
        assert_eq!(owners.len(), 2);
        assert_ne!(
            owners[0], owners[1],
            "the closed and the new reader 1 share a key"
        );
        let closed_key = owners[0].expect("charged to reader 1");
        finish_order(&mut c);
        assert!(
            c.retired_keys.is_empty(),
            "forgotten once its part completed"
        );
        assert!(c.free_keys.contains(&closed_key));
        assert_eq!(c.owners.seek_mean(closed_key), None);
        assert_eq!(c.key_count, 3);
    }

    /// Under `anticipatory` a queue's next pop may hold the disk for the stream whose read it
    /// dispatched last, if that stream asks again within `antic_expire` of its completion. Reader
    /// 1 reads once and closes; a new reader 2 then reads elsewhere. The queue still bets on the
    /// closed reader's key, so the key goes to no new reader until the queue dispatches another
    /// read: (while it was freed as soon as reader 1's read completed, reader 2 got it and its far
    /// read was taken for reader 1's next one).
    #[test]
    fn a_closed_readers_key_the_disk_may_be_held_for_goes_to_no_new_reader() {
        let cfg = EmulatedConfig::preset("wd800jd")
            .unwrap()
            .scheduler("anticipatory")
            .unwrap();
        let mut c = clock(&cfg);
        c.enqueue(0, Some(1), 0, 1000, 8);
        until_done(&mut c, 0);
        let closed_key = c.reader_keys[&1];
        c.reader_closed(1);
        let at_ns = c.model_ns + 1_000_000;
        c.advance(at_ns);
        c.enqueue(1, Some(2), at_ns, 50_000_000, 8);
        assert_ne!(
            c.reader_keys[&2], closed_key,
            "the new reader took the key the disk may be held for"
        );
        until_done(&mut c, 1);
        assert!(c.retired_keys.is_empty() && c.free_keys == vec![closed_key]);
    }

    #[test]
    fn an_unknown_scheduler_is_refused_by_name() {
        let e = EmulatedConfig::preset("wd800jd")
            .unwrap()
            .scheduler("cfq")
            .unwrap_err()
            .to_string();
        assert!(e.contains("scheduler") && e.contains("`cfq`"), "{e}");
    }

    #[test]
    fn a_strip_larger_than_a_member_is_refused() {
        let cfg = EmulatedConfig::preset("wd800jd").unwrap().raid0(2, 1 << 50);
        let e = cfg.validate().unwrap_err().to_string();
        assert!(e.contains("larger than a member"), "{e}");
    }
}

#[cfg(test)]
mod lifecycle_tests {
    use super::super::lifecycle::testing::{
        assert_drop_delivers_what_it_held, assert_read, assert_refused_after_shutdown, opened,
        page_read, pattern_file, race_submits_with_shutdown, refused, Collect, PATIENCE,
    };
    use super::super::lifecycle::testing::{drop_returns, on_a_stuck_read, StuckRun};
    use super::*;
    use std::time::Duration as StdDuration;

    /// Dropping the backend while a worker of its pool is stuck in a `pread` (see
    /// `stuck_file`) returns once the grace has passed: the worker is left detached, owning
    /// its request and the file's descriptor, and the clock ends without that read's bytes.
    /// Before, the drop waited for the worker, and the clock for the bytes, forever.
    #[test]
    fn dropping_the_backend_leaves_a_stuck_read_to_its_worker() {
        let test = "emulated: dropping_the_backend_leaves_a_stuck_read_to_its_worker";
        on_a_stuck_read(test, |f| {
            let (got, port) = Collect::port(StdDuration::ZERO);
            let ssd = EmulatedConfig::preset("ssd-850evo").unwrap();
            let b = EmulatedBackend::start(ssd, 2, port).unwrap();
            b.submit(&mut vec![page_read(1, f, 0)]);
            // Once a worker of the pool has taken it, the read is under way.
            crate::testutil::wait_until("a worker of the pool to take the read", || {
                b.inner.queue_is_empty()
            });
            let drop_returned = drop_returns(b);
            StuckRun {
                drop_returned,
                read_held: Arc::strong_count(f) == 2 && got.tokens().is_empty(),
            }
        });
    }

    /// An SSD whose every read takes an hour in the model.
    fn hour_long_ssd() -> EmulatedConfig {
        let mut cfg = EmulatedConfig::preset("ssd-850evo").unwrap();
        match &mut cfg.device {
            EmulatedDevice::Single(DeviceSpec::Ssd(p)) => {
                p.read_latency = Duration::from_secs(3600)
            }
            _ => panic!("ssd-850evo is one SSD"),
        }
        cfg
    }

    /// A request submitted after shutdown completes with an error the driver sees. Before, the
    /// clock thread and the pool had ended (nothing was outstanding), and it never completed.
    #[test]
    fn a_request_after_shutdown_gets_an_error() {
        let ssd = EmulatedConfig::preset("ssd-850evo").unwrap();
        let start =
            |port, path: &Path| Some(opened(EmulatedBackend::start(ssd, 4, port).unwrap(), path));
        // A clock thread that would end at shutdown (it has no read) holds the shared state.
        assert_refused_after_shutdown("emulated-after", start, |b| {
            Arc::strong_count(&b.shared) > 1
        });
    }

    /// A read the model has not finished at shutdown completes with its bytes as soon as they
    /// are in, not when the model says (here an hour on): no one measures the device any more,
    /// and dropping the backend waits for its reads. Before, it stayed with the clock thread
    /// for the modelled hour.
    #[test]
    fn a_read_the_model_holds_completes_at_shutdown() {
        let (_dir, path) = pattern_file("emulated-held", 4 * 4096);
        let (got, port) = Collect::port(StdDuration::ZERO);
        let (b, f) = opened(
            EmulatedBackend::start(hour_long_ssd(), 4, port).unwrap(),
            &path,
        );
        b.submit(&mut vec![page_read(1, &f, 0), page_read(2, &f, 1)]);
        b.shutdown();
        let mut done = got.take_within(2, PATIENCE);
        done.sort_by_key(|c| c.token);
        assert_eq!(done.len(), 2, "a read never completed");
        for (c, page) in done.iter().zip([0, 1]) {
            // Read before the shutdown reached the pool, or refused by it.
            if !refused(c) {
                assert_read(c, page);
            }
        }
        drop(b);
    }

    /// Dropping the backend joins the pool's workers and the clock thread, so every read it
    /// held is delivered (its buffer and descriptor let go) by the time the drop returns; here
    /// a sink that takes its time. Before, both were left to run on, and the drop returned
    /// first.
    #[test]
    fn dropping_the_backend_joins_its_threads() {
        let ssd = EmulatedConfig::preset("ssd-850evo").unwrap();
        let start =
            |port, path: &Path| Some(opened(EmulatedBackend::start(ssd, 4, port).unwrap(), path));
        assert_drop_delivers_what_it_held("emulated-join", start);
    }

    /// Reads submitted on one thread while another shuts the emulation down each come back
    /// once, read or refused, by the time the drop returns, however the two interleave.
    #[test]
    fn reads_racing_a_shutdown_each_complete_once() {
        let (_dir, path) = pattern_file("emulated-race", 16 * 4096);
        race_submits_with_shutdown("emulated", 100, 16, &|port| {
            let ssd = EmulatedConfig::preset("ssd-850evo").unwrap();
            let (b, f) = opened(EmulatedBackend::start(ssd, 16, port).unwrap(), &path);
            (Box::new(b), f)
        });
    }
}
