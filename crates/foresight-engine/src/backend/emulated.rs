//! Timing-accurate emulation: real bytes, completion times from a `foresight-device` model.
//!
//! Every read is done twice, in parallel. The bytes come from the real file, read by an inner
//! [`ThreadsBackend`] (buffered: the real device only has to be faster than the modelled one). The
//! time comes from a device model (an HDD, an SSD or a RAID-0 of HDDs from the named presets),
//! driven by a clock thread that maps real time since the backend started onto model time: a read
//! submitted at real time `t` enters the modelled host block queue at model time `t`, the model
//! says when the device finishes it, the clock thread sleeps until that real instant, and the read
//! completes to the engine then, or when its real bytes arrive if that is later. So a policy run
//! through the real engine on this backend meets the latencies, queueing and positioning costs of
//! the modelled device, while the application gets the real file's bytes.
//!
//! Files are placed on the modelled volume when opened (spread over `slots` equal slots as in
//! paper 001's experiments, or back to back), and the engine shows policies that placement through
//! their layout, as the simulator does. The host block queue in front of the model merges adjacent
//! requests up to `max_request_bytes` and dispatches them in ascending LBA order with a read
//! deadline, the way Linux's `mq-deadline` does; the device's own command queue is the model's.
//!
//! The device models are not `Send`, so the clock thread builds and owns the model, the host queue
//! and the table of reads; other threads talk to it through a small inbox. Accuracy is bounded by
//! how promptly the operating system wakes the clock thread (tens of microseconds), which is small
//! against disk service times but not against an SSD's.

use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::Instant as WallInstant;

use foresight_core::{ByteLen, Duration, FileId, Instant, Lba, SECTOR_BYTES};
use foresight_device::presets::{self, DeviceSpec};
use foresight_device::{Completion, DevRequest, Device, Op};
use foresight_policy::layout::Striping;

use super::threads::ThreadsBackend;
use super::{
    real_handle, real_handle_beneath, BackendKind, CompletionPort, CompletionSink, FileHandle,
    IoBackend, IoCompletion, IoRequest, ModelledVolume,
};
use crate::beneath::RootDir;

/// Requests served in sorted order before the host queue checks for expired ones (Linux
/// mq-deadline's `fifo_batch`).
const FIFO_BATCH: u32 = 16;
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

/// How to emulate: the device, the placement and the host block queue.
#[derive(Clone, Debug, PartialEq)]
pub struct EmulatedConfig {
    /// The modelled device.
    pub device: EmulatedDevice,
    /// Where files go.
    pub placement: EmulatedPlacement,
    /// The largest request the host queue sends the device (Linux `max_sectors_kb`).
    pub max_request_bytes: u64,
    /// The host queue's read deadline.
    pub read_expire: Duration,
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
    /// One drive of the named preset (see `foresight devices`), files spread over one slot per
    /// file up to `slots`, a 512 KiB host request limit and a 500 ms read deadline (the
    /// simulator's defaults).
    pub fn preset(name: &str) -> Result<EmulatedConfig, EmulatedError> {
        let spec =
            presets::preset(name).ok_or_else(|| EmulatedError::UnknownPreset(name.to_string()))?;
        Ok(EmulatedConfig {
            device: EmulatedDevice::Single(spec),
            placement: EmulatedPlacement::Contiguous,
            max_request_bytes: 512 << 10,
            read_expire: Duration::from_millis(500),
        })
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
                member.validate()
            }
        }
        .map_err(|e| EmulatedError::Bad(e.to_string()))?;
        if let EmulatedPlacement::Spread { slots: 0 } = self.placement {
            return Err(EmulatedError::Bad(
                "spread placement needs at least one slot".into(),
            ));
        }
        if self.max_request_bytes < 4096 || !self.max_request_bytes.is_multiple_of(4096) {
            return Err(EmulatedError::Bad(format!(
                "max_request_bytes must be a positive multiple of 4096, got {}",
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

    fn build_device(&self) -> Box<dyn Device> {
        match &self.device {
            EmulatedDevice::Single(s) => presets::build(s),
            EmulatedDevice::Raid0 {
                member,
                disks,
                strip_bytes,
            } => Box::new(foresight_device::raid0::Raid0::new(
                (0..*disks).map(|_| presets::build(member)).collect(),
                *strip_bytes,
            )),
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
    /// A read entered the host queue at `at_ns`: these volume sector runs, then its token.
    Submit {
        token: u64,
        at_ns: u64,
        lba: u64,
        sectors: u64,
    },
    /// The real bytes of a read arrived.
    Data(IoCompletion),
}

struct Inbox {
    msgs: VecDeque<Msg>,
    shutdown: bool,
}

struct Shared {
    inbox: Mutex<Inbox>,
    wake: Condvar,
    epoch: WallInstant,
    port: Arc<CompletionPort>,
}

impl Shared {
    fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    fn send(&self, msg: Msg) {
        self.inbox
            .lock()
            .expect("emulation inbox poisoned")
            .msgs
            .push_back(msg);
        self.wake.notify_one();
    }
}

impl CompletionSink for Shared {
    fn complete(&self, c: IoCompletion) {
        self.send(Msg::Data(c));
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
}

impl EmulatedBackend {
    /// Starts an emulation with room for `capacity` outstanding reads; completions go to `port`.
    pub fn start(
        cfg: EmulatedConfig,
        capacity: usize,
        port: Arc<CompletionPort>,
    ) -> io::Result<EmulatedBackend> {
        cfg.validate()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        let shared = Arc::new(Shared {
            inbox: Mutex::new(Inbox {
                msgs: VecDeque::new(),
                shutdown: false,
            }),
            wake: Condvar::new(),
            epoch: WallInstant::now(),
            port,
        });
        let inner_port = CompletionPort::new();
        let weak: Weak<dyn CompletionSink> =
            Arc::downgrade(&(shared.clone() as Arc<dyn CompletionSink>));
        inner_port.connect(weak);
        let inner = ThreadsBackend::start(capacity.min(32), capacity, inner_port)?;
        let volume_bytes = cfg.capacity_bytes() / PLACEMENT_ALIGN_BYTES * PLACEMENT_ALIGN_BYTES;
        let s = shared.clone();
        let c = cfg.clone();
        std::thread::Builder::new()
            .name("foresight-emulated-clock".into())
            .spawn(move || Clock::new(&c, s).run())?;
        Ok(EmulatedBackend {
            shared,
            inner,
            cfg,
            volume_bytes,
            next_contiguous: Mutex::new(0),
            capacity,
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
            let mut inbox = self.shared.inbox.lock().expect("emulation inbox poisoned");
            for r in batch.iter() {
                let base = r
                    .file
                    .volume_offset_bytes
                    .expect("emulated files are placed");
                let vol = base + r.offset_bytes;
                inbox.msgs.push_back(Msg::Submit {
                    token: r.token,
                    at_ns,
                    lba: vol / SECTOR_BYTES,
                    sectors: ((vol + r.len_bytes as u64).div_ceil(SECTOR_BYTES)
                        - vol / SECTOR_BYTES)
                        .max(1),
                });
            }
        }
        self.shared.wake.notify_one();
        self.inner.submit(batch);
    }

    fn volume(&self) -> Option<ModelledVolume> {
        Some(ModelledVolume {
            volume_bytes: ByteLen(self.volume_bytes),
            striping: self.cfg.striping(),
        })
    }

    fn shutdown(&self) {
        self.inner.shutdown();
        self.shared
            .inbox
            .lock()
            .expect("emulation inbox poisoned")
            .shutdown = true;
        self.shared.wake.notify_one();
    }
}

impl Drop for EmulatedBackend {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// One request waiting in the modelled host queue, possibly several merged.
struct HostReq {
    id: u64,
    lba: u64,
    sectors: u64,
    arrival_ns: u64,
    tokens: Vec<u64>,
}

/// A read as the clock thread tracks it.
#[derive(Default)]
struct Pending {
    parts_left: u32,
    data: Option<IoCompletion>,
    model_done: bool,
}

/// The clock thread's world: the model, the host queue and the reads.
struct Clock {
    shared: Arc<Shared>,
    device: Box<dyn Device>,
    capacity_sectors: u64,
    max_sectors: u64,
    read_expire_ns: u64,
    queue: Vec<HostReq>,
    head_lba: u64,
    batch_left: u32,
    next_id: u64,
    at_device: BTreeMap<u64, Vec<u64>>,
    reads: BTreeMap<u64, Pending>,
    model_ns: u64,
    comps: Vec<Completion>,
    ready: Vec<IoCompletion>,
}

impl Clock {
    fn new(cfg: &EmulatedConfig, shared: Arc<Shared>) -> Clock {
        let device = cfg.build_device();
        let capacity_sectors = device.capacity().0 / SECTOR_BYTES;
        Clock {
            shared,
            device,
            capacity_sectors,
            max_sectors: cfg.max_request_bytes / SECTOR_BYTES,
            read_expire_ns: cfg.read_expire.as_nanos(),
            queue: Vec::new(),
            head_lba: 0,
            batch_left: 0,
            next_id: 0,
            at_device: BTreeMap::new(),
            reads: BTreeMap::new(),
            model_ns: 0,
            comps: Vec::new(),
            ready: Vec::new(),
        }
    }

    fn run(mut self) {
        loop {
            let msgs: Vec<Msg> = {
                let mut inbox = self.shared.inbox.lock().expect("emulation inbox poisoned");
                loop {
                    if !inbox.msgs.is_empty() {
                        break inbox.msgs.drain(..).collect();
                    }
                    if inbox.shutdown && self.reads.is_empty() {
                        return;
                    }
                    let now = self.shared.now_ns();
                    match self.device.next_event() {
                        Some(t) if t.0 <= now => break Vec::new(),
                        Some(t) => {
                            let wait = std::time::Duration::from_nanos(t.0 - now);
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
            for m in msgs {
                match m {
                    Msg::Submit {
                        token,
                        at_ns,
                        lba,
                        sectors,
                    } => self.enqueue(token, at_ns, lba, sectors),
                    Msg::Data(c) => {
                        let p = self.reads.entry(c.token).or_default();
                        p.data = Some(c);
                        self.finish_if_done_by_token_of_last();
                    }
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

    fn advance(&mut self, now_ns: u64) {
        if now_ns < self.model_ns {
            return;
        }
        self.model_ns = now_ns;
        let mut comps = std::mem::take(&mut self.comps);
        self.device.advance(Instant(now_ns), &mut comps);
        for c in comps.drain(..) {
            let tokens = self
                .at_device
                .remove(&c.id)
                .expect("completion for a request the model got");
            for t in tokens {
                let p = self.reads.get_mut(&t).expect("a tracked read");
                p.parts_left -= 1;
                if p.parts_left == 0 {
                    p.model_done = true;
                }
            }
        }
        self.comps = comps;
        self.finish_if_done_by_token_of_last();
    }

    /// Puts a read's sector runs into the host queue, merging with neighbours where they touch.
    fn enqueue(&mut self, token: u64, at_ns: u64, lba: u64, sectors: u64) {
        // Bring the model up to the submission instant first (the device protocol needs
        // non-decreasing time), collecting what finished before it.
        let at = at_ns.max(self.model_ns);
        self.advance(at);
        let mut lba = lba;
        if lba + sectors > self.capacity_sectors {
            // Past the modelled volume (a file larger than its slot at the end): wrap, timing only.
            lba %= self.capacity_sectors.saturating_sub(sectors).max(1);
        }
        let mut parts = 0u32;
        let mut pos = lba;
        while pos < lba + sectors {
            let n = (lba + sectors - pos).min(self.max_sectors);
            self.push(token, at, pos, n);
            parts += 1;
            pos += n;
        }
        let p = self.reads.entry(token).or_default();
        p.parts_left += parts;
    }

    fn push(&mut self, token: u64, at_ns: u64, lba: u64, sectors: u64) {
        for r in self.queue.iter_mut() {
            if r.sectors + sectors > self.max_sectors {
                continue;
            }
            if r.lba + r.sectors == lba {
                r.sectors += sectors;
                r.tokens.push(token);
                return;
            }
            if lba + sectors == r.lba {
                r.lba = lba;
                r.sectors += sectors;
                r.tokens.push(token);
                return;
            }
        }
        let id = self.next_id;
        self.next_id += 1;
        self.queue.push(HostReq {
            id,
            lba,
            sectors,
            arrival_ns: at_ns,
            tokens: vec![token],
        });
    }

    /// Sorted dispatch from the head position with a read deadline (mq-deadline's shape).
    fn pick(&mut self) -> Option<HostReq> {
        if self.queue.is_empty() {
            return None;
        }
        let oldest = (0..self.queue.len())
            .min_by_key(|&i| self.queue[i].id)
            .expect("non-empty");
        let expired =
            self.model_ns.saturating_sub(self.queue[oldest].arrival_ns) >= self.read_expire_ns;
        let next_up = (0..self.queue.len())
            .filter(|&i| self.queue[i].lba >= self.head_lba)
            .min_by_key(|&i| (self.queue[i].lba, self.queue[i].id));
        let pick = if self.batch_left == 0 {
            self.batch_left = FIFO_BATCH;
            if expired {
                oldest
            } else {
                next_up.unwrap_or(oldest)
            }
        } else {
            next_up.unwrap_or_else(|| {
                self.batch_left = FIFO_BATCH;
                oldest
            })
        };
        self.batch_left -= 1;
        let r = self.queue.swap_remove(pick);
        self.head_lba = r.lba + r.sectors;
        Some(r)
    }

    fn dispatch(&mut self) {
        while self.device.can_accept() {
            let Some(r) = self.pick() else { break };
            self.device.submit(
                Instant(self.model_ns),
                DevRequest {
                    id: r.id,
                    op: Op::Read,
                    lba: Lba(r.lba),
                    sectors: r.sectors as u32,
                },
            );
            self.at_device.insert(r.id, r.tokens);
        }
    }
}
