//! The library face: [`Engine::builder`], [`Engine::open`], [`Reader`] (`Read + Seek`),
//! [`Engine::hint`] and [`Engine::stats`].
//!
//! An engine is a handle to shared state: the driver core (policy, file table, chunks, buffer
//! pool) behind one mutex, the backend, and a timer thread for policies that ask for one. Each
//! [`Reader`] is one stream: the policy sees its reads under its own `StreamId`, and its `read`
//! calls block only that reader, so many readers on many threads proceed at once. A reader waits on
//! its own condition variable, which the completion that fills the chunk it needs (or the release
//! of memory it needs) notifies: no thundering herd with a thousand readers. Readers and engine
//! handles keep the engine alive; when the last of them is dropped, the backend and the timer stop.
//! That drop waits for the reads under way to end. A `pread` stuck in the kernel (a hung network
//! mount) cannot be cancelled: the thread pool is waited for at most 10 s (`STUCK_READ_GRACE`),
//! then the stuck worker is left detached, owning its request; an emulated array behind an array
//! cache waits that long twice (the cache for its device, then the device for its pool). The
//! io_uring backend asks the kernel to cancel its reads and waits for them as long: a read the
//! kernel cannot cancel (one asleep uninterruptibly on a hard-mounted network file system) leaves
//! the ring thread detached, owning the ring and the buffers the kernel holds until their reads
//! complete.
//!
//! A panic anywhere in the engine (a policy's, under the lock; or one that ends a backend
//! thread, with the reads it held) breaks it: the thread that panicked catches the panic, marks
//! the state broken and wakes every waiting reader ([`Shared::breaking_on_panic`], or the
//! backend's `PanicAlarm`), then goes on unwinding, and from then on every read, open and hint
//! returns [`EngineError::Broken`] (reads as an `io::Error` carrying it) instead of waiting for
//! completions that may never come. The panic's message is kept, from the payload caught, with
//! where it was raised when the engine's panic hook saw that ([`Engine::broken_reason`],
//! `panic_note.rs`), so that a program that runs on the engine can say why it stopped, whatever
//! panic hook it sets; the error each refused call returns carries it too
//! ([`Shared::broken_error`]). A policy's panic is also caught, and its message recorded, at the
//! call into the policy, under the lock (`core/guard.rs`): the unwind poisons the lock only
//! after that, so a call refused by the poisoned lock never waits for the message. An owner that
//! gives up on the engine ([`Engine::abandon`], a hang guard) breaks it the same way, so that
//! threads blocked in its reads end instead of keeping it alive.

use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};

use foresight_core::{ByteLen, ByteRange, FileId, Instant, StreamId};
use foresight_policy::{Layout, Policy, PolicyConfig, PAGE_BYTES};

use crate::backend::emulated::{EmulatedBackend, EmulatedConfig, EmulatedDevice};
use crate::backend::noop::NoopBackend;
use crate::backend::threads::ThreadsBackend;
use crate::backend::{
    BackendKind, CompletionPort, CompletionSink, FileHandle, IoBackend, IoCompletion,
};
use crate::beneath::RootDir;
use crate::core::{Core, CoreConfig, DeferWait, Found};
use crate::error::EngineError;
use crate::pool::ArenaShelf;
use crate::stats::Stats;

/// The most ranges one hint may carry (the policy's input queue is bounded too).
pub const MAX_HINT_RANGES: usize = 1 << 16;

/// Which backend to run on.
// Built once per engine, so the size of the emulation variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, Default)]
pub enum Backend {
    /// io_uring if the kernel allows it, else the thread pool; [`Engine::fallback_reason`] says
    /// why it fell back.
    #[default]
    Auto,
    /// io_uring, or an error if it is refused.
    Uring,
    /// `pread` on a thread pool.
    Threads,
    /// In-memory files with injectable faults (tests).
    Noop(NoopBackend),
    /// Real bytes at the times a device model says.
    Emulated(EmulatedConfig),
}

/// A policy decorator applied when the engine is built (the conformance suite records decisions
/// this way).
pub type PolicyWrapper = Box<dyn FnOnce(Box<dyn Policy>) -> Box<dyn Policy> + Send>;

/// Settings for an [`Engine`]; see each method for the default.
pub struct EngineBuilder {
    memory: ByteLen,
    policy: PolicyConfig,
    backend: Backend,
    queue_depth: u32,
    max_io: Option<ByteLen>,
    direct_io: bool,
    prefault: bool,
    arena: Option<ArenaShelf>,
    wrapper: Option<PolicyWrapper>,
    raid_cache: ByteLen,
    array_wrapper: Option<PolicyWrapper>,
}

impl std::fmt::Debug for EngineBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineBuilder")
            .field("memory", &self.memory)
            .field("policy", &self.policy)
            .field("backend", &self.backend)
            .field("queue_depth", &self.queue_depth)
            .field("max_io", &self.max_io)
            .field("direct_io", &self.direct_io)
            .field("prefault", &self.prefault)
            .field("arena", &self.arena)
            .field("raid_cache", &self.raid_cache)
            .finish()
    }
}

impl Default for EngineBuilder {
    fn default() -> Self {
        EngineBuilder {
            memory: ByteLen::mib(256),
            policy: PolicyConfig {
                name: "seqp".into(),
                readahead_max: ByteLen::kib(128),
                ..PolicyConfig::default()
            },
            backend: Backend::Auto,
            queue_depth: 32,
            max_io: None,
            direct_io: true,
            prefault: false,
            arena: None,
            wrapper: None,
            raid_cache: ByteLen::mib(512),
            array_wrapper: None,
        }
    }
}

impl EngineBuilder {
    /// The hard memory budget for prefetched, in-flight and demand buffers (default 256 MiB; at
    /// least four times `max_io`).
    pub fn memory(mut self, bytes: ByteLen) -> Self {
        self.memory = bytes;
        self
    }

    /// The policy, by name (default `seqp`; see `foresight_policy::POLICY_NAMES`).
    pub fn policy(mut self, name: &str) -> Self {
        self.policy.name = name.to_string();
        self
    }

    /// The largest readahead window (default 128 KiB, Linux's default `read_ahead_kb`).
    pub fn readahead_max(mut self, bytes: ByteLen) -> Self {
        self.policy.readahead_max = bytes;
        self
    }

    /// Every policy setting at once.
    pub fn policy_config(mut self, cfg: PolicyConfig) -> Self {
        self.policy = cfg;
        self
    }

    /// The backend (default [`Backend::Auto`]).
    pub fn backend(mut self, backend: Backend) -> Self {
        self.backend = backend;
        self
    }

    /// The most reads in flight at the device (default 32, between 1 and 4096).
    pub fn queue_depth(mut self, depth: u32) -> Self {
        self.queue_depth = depth;
        self
    }

    /// The largest single read (whole 4 KiB pages; default 1 MiB, or a quarter of the memory
    /// budget if that is less); longer fetches and demand reads are split.
    pub fn max_io(mut self, bytes: ByteLen) -> Self {
        self.max_io = Some(bytes);
        self
    }

    fn max_io_bytes(&self) -> u64 {
        self.max_io.map(|m| m.0).unwrap_or_else(|| {
            (self.memory.0 / 4 / PAGE_BYTES * PAGE_BYTES).clamp(PAGE_BYTES, 1 << 20)
        })
    }

    /// Whether to open files with `O_DIRECT` (default true; files on file systems that refuse it
    /// are read buffered, and [`Stats::files_buffered`] counts them).
    pub fn direct_io(mut self, on: bool) -> Self {
        self.direct_io = on;
        self
    }

    /// Whether to map and fault in the whole memory budget when the engine is built (default false:
    /// memory is mapped as buffers need it). The kernel zeroes every fresh page on first touch,
    /// which on a virtual machine costs about a second per GiB; prefaulted, the engine pays that
    /// once in `build` instead of while the first reads wait, and holds the whole budget from the
    /// start. A long-running reader (a server, a loader that runs for many epochs) wants it.
    /// A mapping the kernel refuses (a budget beyond what it will map) fails nothing: the engine
    /// is built all the same and takes memory as buffers need it, as without.
    /// Either way it forgets a shelf given to [`EngineBuilder::prefault_from`].
    pub fn prefault(mut self, on: bool) -> Self {
        self.prefault = on;
        self.arena = None;
        self
    }

    /// Prefaults (as [`EngineBuilder::prefault`]) with the mapping kept on `shelf` when it holds
    /// the budget, and puts the mapping back there when the engine is dropped, so that a process
    /// building engine after engine faults its memory in once rather than for each. The engine
    /// uses only its budget's worth of a larger mapping; the rest stays mapped, never lent, and
    /// its memory is given back to the system (but for the rest of the budget's last 2 MiB huge
    /// page) until an engine with a larger budget faults it in again. A mapping
    /// that is not all back when the engine's state goes (a read still in the backend, which the
    /// kernel may still write into, holds a piece) is unmapped, not put back, and the next engine
    /// maps its own. Reused memory holds what earlier reads left in it; a read returns only bytes
    /// its own device reads wrote.
    pub fn prefault_from(mut self, shelf: &ArenaShelf) -> Self {
        self.prefault = true;
        self.arena = Some(shelf.clone());
        self
    }

    /// Wraps the policy when the engine is built (for recording decisions; see `foresight-testkit`).
    pub fn wrap_policy(mut self, wrapper: PolicyWrapper) -> Self {
        self.wrapper = Some(wrapper);
        self
    }

    /// The RAID driver's cache under `msp+...` (default 512 MiB, the simulator's and paper 000's
    /// `host.raid_cache`): its own hard budget, besides [`EngineBuilder::memory`]
    /// (`backend::array`).
    pub fn raid_cache(mut self, bytes: ByteLen) -> Self {
        self.raid_cache = bytes;
        self
    }

    /// Wraps the array-level policy of `msp+...` when the engine is built (as
    /// [`EngineBuilder::wrap_policy`] wraps the file-level one).
    pub fn wrap_array_policy(mut self, wrapper: PolicyWrapper) -> Self {
        self.array_wrapper = Some(wrapper);
        self
    }

    fn validate(&self) -> Result<(), EngineError> {
        let bad = |setting, message: String| Err(EngineError::Setting { setting, message });
        if !(1..=4096).contains(&self.queue_depth) {
            return bad(
                "queue_depth",
                format!("must be between 1 and 4096, got {}", self.queue_depth),
            );
        }
        let m = self.max_io_bytes();
        if m < PAGE_BYTES || !m.is_multiple_of(PAGE_BYTES) || m > 64 << 20 {
            return bad(
                "max_io",
                format!(
                    "must be whole 4 KiB pages between 4KiB and 64MiB, got {}",
                    ByteLen(m)
                ),
            );
        }
        if self.memory.0 < 4 * m {
            return bad(
                "memory",
                format!(
                    "{} is less than four times max_io ({}); give at least {}",
                    self.memory,
                    ByteLen(m),
                    ByteLen(4 * m)
                ),
            );
        }
        if self.memory.0 > 1 << 50 {
            return bad("memory", format!("{} is more than 1 PiB", self.memory));
        }
        if self.raid_cache.0 < PAGE_BYTES || self.raid_cache.0 > 1 << 50 {
            return bad(
                "raid_cache",
                format!("must be between 4KiB and 1PiB, got {}", self.raid_cache),
            );
        }
        check_policy_on(&self.policy, &self.backend)
    }

    /// Starts the engine: the backend (falling back from io_uring to threads under
    /// [`Backend::Auto`]), the policy and the timer.
    pub fn build(self) -> Result<Engine, EngineError> {
        crate::panic_note::keep_panic_places();
        self.validate()?;
        let qd = self.queue_depth as usize;
        let max_io_bytes = self.max_io_bytes();
        let mut policy_cfg = self.policy.clone();
        if let Backend::Emulated(e) = &self.backend {
            with_device_figures(&mut policy_cfg, &e.device);
        }
        let port = CompletionPort::new();
        let array = policy_cfg.name.starts_with("msp+");
        let (backend, fallback) = if array {
            // The emulated RAID-0 beneath the RAID driver's cache (checked in `validate`).
            let Backend::Emulated(e) = self.backend else {
                unreachable!("validate admits msp+ on the emulated backend only")
            };
            let inner_port = CompletionPort::new();
            // Room for every request of the driver and for the array policy's reads besides.
            let inner: Arc<dyn IoBackend> = Arc::new(
                EmulatedBackend::start(e, qd + ARRAY_READS_EXTRA, inner_port.clone())
                    .map_err(EngineError::Spawn)?,
            );
            let v = inner
                .volume()
                .expect("the emulated backend models a volume");
            let stack = foresight_policy::build_stack(
                &policy_cfg,
                Arc::new(Layout::new(v.volume_bytes, v.striping)),
            )?;
            let mut array_policy = stack.array.expect("msp+ has an array policy");
            if let Some(w) = self.array_wrapper {
                array_policy = w(array_policy);
            }
            let cache = crate::backend::array::ArrayCacheBackend::start(
                inner,
                &inner_port,
                array_policy,
                self.raid_cache.0,
                qd,
                port.clone(),
            )
            .map_err(EngineError::Spawn)?;
            policy_cfg.name = policy_cfg.name["msp+".len()..].to_string();
            (Arc::new(cache) as Arc<dyn IoBackend>, None)
        } else {
            start_backend(self.backend, qd, port.clone(), try_uring)?
        };
        let initial = match backend.volume() {
            None => Layout::unplaced(&[]),
            Some(v) => Layout::new(v.volume_bytes, v.striping),
        };
        let mut policy = foresight_policy::build(&policy_cfg, Arc::new(initial))?;
        if let Some(w) = self.wrapper {
            policy = w(policy);
        }
        let timer = Arc::new(Condvar::new());
        let core = Core::new(
            policy,
            backend.clone(),
            CoreConfig {
                memory_bytes: self.memory.0,
                queue_depth: qd,
                max_io_bytes,
                prefault: self.prefault,
                arena: self.arena,
            },
            timer.clone(),
        );
        let broken_by = core.policy_panic_reason();
        let shared = Arc::new(Shared {
            id: NEXT_ENGINE_ID.fetch_add(1, Ordering::Relaxed),
            core: Mutex::new(core),
            port: port.clone(),
            backend,
            timer,
            epoch: std::time::Instant::now(),
            fallback,
            direct: self.direct_io,
            broken: AtomicBool::new(false),
            broken_by,
            reason_lock: Mutex::new(()),
            reason_set: Condvar::new(),
        });
        let sink: Arc<dyn CompletionSink> = shared.clone();
        let weak: Weak<dyn CompletionSink> = Arc::downgrade(&sink);
        port.connect(weak);
        let s = shared.clone();
        let timer_thread = std::thread::Builder::new()
            .name("foresight-timer".into())
            .spawn(move || run_timer(&s));
        let timer_thread = match timer_thread {
            Ok(t) => t,
            Err(e) => {
                shared.backend.shutdown();
                return Err(EngineError::Spawn(e));
            }
        };
        Ok(Engine {
            owner: Arc::new(Owner {
                shared,
                timer_thread: Some(timer_thread),
            }),
        })
    }
}

/// Gives `directed` the figures of the emulated drive (its member drive on a RAID-0) that
/// `infill_max = "auto"` weighs a gap with, as the simulator gives it its drive's, unless the
/// config already carries some. A real device's seek curve is not known here, so on the other
/// backends `auto` has no figures and reads through no gap.
fn with_device_figures(cfg: &mut PolicyConfig, device: &EmulatedDevice) {
    if cfg.name != "directed"
        || !cfg.directed.positioning_curve_ns.is_empty()
        || cfg.directed.media_bytes_per_s != 0
    {
        return;
    }
    let spec = match device {
        EmulatedDevice::Single(s) => s,
        EmulatedDevice::Raid0 { member, .. } => member,
    };
    let (curve, media) = spec.positioning_figures();
    cfg.directed.positioning_curve_ns = curve;
    cfg.directed.media_bytes_per_s = media;
}

/// Reads the emulated RAID-0 beneath an array cache has room for besides the driver's own: the
/// array policy's fetches (MSP keeps at most 32 stripes in flight).
const ARRAY_READS_EXTRA: usize = 64;

/// Whether the engine can run the policy `cfg` names on some backend: the name is known and the
/// policy works at the file level, or it is `msp+X` with `X` one that does (`msp+...` then needs
/// the emulated RAID-0, see [`check_policy_on`]). `streams` runs as the scheduler over files.
pub fn check_policy(cfg: &PolicyConfig) -> Result<(), EngineError> {
    let mut file_level = cfg.clone();
    if let Some(x) = cfg.name.strip_prefix("msp+") {
        file_level.name = x.to_string();
    }
    cfg.validate()?;
    foresight_policy::build(&file_level, Arc::new(Layout::unplaced(&[]))).map(|_| ())?;
    Ok(())
}

/// Whether the engine can run the policy `cfg` names on `backend`: as [`check_policy`], and
/// `msp+...`, whose MSP runs in the RAID driver's cache (`backend::array`), only on the emulated
/// backend with a RAID-0 device, the one backend whose files lie on a striped volume.
pub fn check_policy_on(cfg: &PolicyConfig, backend: &Backend) -> Result<(), EngineError> {
    check_policy(cfg)?;
    if !cfg.name.starts_with("msp+") {
        return Ok(());
    }
    match backend {
        Backend::Emulated(EmulatedConfig {
            device: EmulatedDevice::Raid0 { .. },
            ..
        }) => Ok(()),
        _ => Err(EngineError::Setting {
            setting: "policy",
            message: format!(
                "`{}` runs MSP in the RAID driver's cache, which the engine has only on the \
                 emulated backend with a RAID-0 device (files placed on a striped volume); \
                 emulate a RAID-0, or choose `{}` alone",
                cfg.name,
                &cfg.name["msp+".len()..]
            ),
        }),
    }
}

#[cfg(target_os = "linux")]
fn try_uring(qd: usize, port: Arc<CompletionPort>) -> io::Result<Arc<dyn IoBackend>> {
    Ok(Arc::new(crate::backend::uring::UringBackend::start(
        qd, port,
    )?))
}

#[cfg(not(target_os = "linux"))]
fn try_uring(_qd: usize, _port: Arc<CompletionPort>) -> io::Result<Arc<dyn IoBackend>> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "io_uring is Linux-only",
    ))
}

type UringStarter = fn(usize, Arc<CompletionPort>) -> io::Result<Arc<dyn IoBackend>>;

/// Starts the chosen backend; under `Auto`, falls back to threads when `uring` fails and returns
/// why.
fn start_backend(
    choice: Backend,
    qd: usize,
    port: Arc<CompletionPort>,
    uring: UringStarter,
) -> Result<(Arc<dyn IoBackend>, Option<String>), EngineError> {
    let threads = |port| -> Result<Arc<dyn IoBackend>, EngineError> {
        Ok(Arc::new(
            ThreadsBackend::start(qd, qd, port).map_err(EngineError::Spawn)?,
        ))
    };
    match choice {
        Backend::Auto => match uring(qd, port.clone()) {
            Ok(b) => Ok((b, None)),
            Err(e) => Ok((threads(port)?, Some(format!("io_uring refused: {e}")))),
        },
        Backend::Uring => match uring(qd, port) {
            Ok(b) => Ok((b, None)),
            Err(e) => Err(EngineError::BackendUnavailable {
                backend: "uring",
                reason: e.to_string(),
            }),
        },
        Backend::Threads => Ok((threads(port)?, None)),
        Backend::Noop(n) => {
            n.start(qd, port).map_err(EngineError::Spawn)?;
            Ok((Arc::new(n), None))
        }
        Backend::Emulated(cfg) => {
            cfg.validate()?;
            Ok((
                Arc::new(EmulatedBackend::start(cfg, qd, port).map_err(EngineError::Spawn)?),
                None,
            ))
        }
    }
}

/// The id the next engine built in this process gets ([`Shared::id`]).
static NEXT_ENGINE_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

pub(crate) struct Shared {
    /// Tells this engine from the others of the process, so that a [`StreamHandle`] given to
    /// another engine's [`Engine::hint`] is refused: stream ids, file ids and open counts are
    /// each engine's own, and another engine's reader can match all three.
    id: u64,
    core: Mutex<Core>,
    /// Where the backend delivers to this state; closed when the engine drops.
    port: Arc<CompletionPort>,
    backend: Arc<dyn IoBackend>,
    timer: Arc<Condvar>,
    epoch: std::time::Instant,
    fallback: Option<String>,
    direct: bool,
    /// Set when a panic broke the engine (see the module documentation); never cleared.
    broken: AtomicBool,
    /// The first breaking panic's message (and place, where known: `panic_note.rs`); set
    /// before `broken`, so that whoever sees the mark finds the reason. Shared with the core's
    /// policy, whose panic sets it before it poisons the lock (`core/guard.rs`), so that whoever
    /// finds the lock poisoned by a policy finds the reason too.
    broken_by: Arc<std::sync::OnceLock<String>>,
    /// Held by a call that waits for `broken_by` (a lock poisoned by a panic other than the
    /// policy's refuses calls before that panic's thread sets it, see
    /// [`Shared::broken_error`]), and told when it is set.
    reason_lock: Mutex<()>,
    reason_set: Condvar,
}

/// How long a call refused by a poisoned lock waits for the panic's message. A policy's panic
/// records it before the lock is poisoned (`core/guard.rs`), so such a call never waits. The
/// wait is a fallback for a panic of the engine's own code under the lock (a broken invariant),
/// whose thread records the message only once it has caught the panic, just after the lock is
/// poisoned, and for a lock poisoned outside any engine call, where no thread ever records one.
const REASON_PATIENCE: std::time::Duration = std::time::Duration::from_secs(5);

impl Shared {
    fn now(&self) -> Instant {
        Instant(self.epoch.elapsed().as_nanos() as u64)
    }

    /// The state for the accessors that cannot fail (counters, the summary, table sizes), even
    /// if a panic under the lock poisoned it: they only read it, and a server asking a broken
    /// engine for its counters must not panic too. What they read may be half-updated by the
    /// panic (a counter short by the read it ended), which a report can live with.
    fn lock_for_report(&self) -> MutexGuard<'_, Core> {
        self.core.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The state, unless a panic broke the engine.
    fn lock_live(&self) -> Result<MutexGuard<'_, Core>, EngineError> {
        if let Ok(core) = self.core.lock() {
            if !self.is_broken() {
                return Ok(core);
            }
        }
        // The lock (poisoned or not) is let go here: the error may wait for the thread that
        // panicked, which takes it to wake the readers.
        Err(self.broken_error())
    }

    /// What a call refused by a broken engine returns: [`EngineError::Broken`] with the
    /// breaking panic's message, so that the caller need not ask [`Engine::broken_reason`]. A
    /// policy's panic records its message before it poisons the lock. Any other panic under
    /// the lock poisons it a moment before its thread catches it and records the message: a
    /// call refused by the poisoned lock in that moment waits for the message, at most
    /// [`REASON_PATIENCE`]. Must be called without the engine's lock.
    fn broken_error(&self) -> EngineError {
        let reason = self.wait_for_reason().unwrap_or_else(|| {
            format!(
                "a panic whose message its thread did not record within {} s \
                 (Engine::broken_reason gives it once it has)",
                REASON_PATIENCE.as_secs()
            )
        });
        EngineError::Broken { reason }
    }

    /// The breaking panic's message, waited for while no thread has recorded it (see
    /// [`Shared::break_engine`], which wakes this wait).
    fn wait_for_reason(&self) -> Option<String> {
        let until = std::time::Instant::now() + REASON_PATIENCE;
        let mut waiting = self.reason_lock.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(why) = self.broken_by.get() {
                return Some(why.clone());
            }
            let left = until.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return None;
            }
            waiting = match self.reason_set.wait_timeout(waiting, left) {
                Ok((w, _)) => w,
                Err(p) => p.into_inner().0,
            };
        }
    }

    /// What a read gets from a broken engine: [`Shared::broken_error`] as an `io::Error`.
    fn broken_read(&self) -> io::Error {
        io::Error::other(self.broken_error())
    }

    fn is_broken(&self) -> bool {
        self.broken.load(Ordering::Acquire)
    }

    /// Marks the engine broken for the reason `why` says (a panic's message, or the owner's
    /// reason for [`Engine::abandon`]) and wakes every reader waiting in it, each of which then
    /// sees the mark. The mark is set before the lock is taken, and a reader looks at it under
    /// the lock before it waits, so none waits on past this. Runs on the thread that panicked,
    /// the panic caught, or on the owner's: it must not panic, so a lock a panic poisoned is
    /// taken all the same (only waiters are read).
    fn break_engine(&self, why: String) {
        let _ = self.broken_by.set(why);
        self.broken.store(true, Ordering::Release);
        // Taken after the message is set, so a call waiting for it either saw it or is
        // waiting already, and hears this.
        drop(self.reason_lock.lock().unwrap_or_else(|p| p.into_inner()));
        self.reason_set.notify_all();
        let core = self.core.lock().unwrap_or_else(|p| p.into_inner());
        core.wake_every_waiter();
        drop(core);
        self.timer.notify_all();
    }
}

impl Shared {
    /// Runs `work`, in which a policy runs on an application's thread or the engine's own: a
    /// panic out of it breaks the engine (see [`Shared::break_engine`]) with the panic's
    /// message, taken from the payload caught (`panic_note.rs`), and goes on unwinding, so the
    /// caller sees its panic as before. So a panic there leaves no other reader waiting forever
    /// on a state no one will change. Work run while the thread already unwinds (a reader
    /// dropped by an application's panic) breaks nothing: a panic there aborts the process.
    fn breaking_on_panic<R>(&self, work: impl FnOnce() -> R) -> R {
        if std::thread::panicking() {
            return work();
        }
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)) {
            Ok(r) => r,
            Err(payload) => {
                self.break_engine(crate::panic_note::note(payload.as_ref()));
                std::panic::resume_unwind(payload)
            }
        }
    }
}

/// A chunk a reader pinned to copy out of it without the lock: [`Pinned::unpin`] under the lock
/// once the copy is done, or, on every other way out of the read (the engine found broken as
/// the reader takes the lock back, an unwinding thread), the drop unpins it under a lock of its
/// own, unless a policy's panic poisoned that lock (see the drop). Before, a read cut off by a
/// broken engine left the chunk pinned: a pinned chunk is never freed, so its bytes stayed lent
/// after every reader was closed.
struct Pinned<'a> {
    shared: &'a Shared,
    stream: StreamId,
    chunk: u32,
    /// The bytes of the file the reader copies out of the chunk, `[from, to)`.
    from: u64,
    to: u64,
    /// The chunk's buffer; `None` once unpinned.
    buf: Option<Arc<crate::buffer::AlignedBuf>>,
}

impl Pinned<'_> {
    fn bytes(&self) -> &[u8] {
        self.buf
            .as_ref()
            .expect("a pinned chunk has its buffer")
            .as_slice()
    }

    /// Unpins under the lock the reader holds.
    fn unpin(mut self, core: &mut Core) {
        // Our reference goes before the unpin, so a free finds the buffer unshared.
        if self.buf.take().is_some() {
            core.unpin(self.stream, self.chunk, self.from, self.to);
        }
    }
}

impl Drop for Pinned<'_> {
    fn drop(&mut self) {
        if self.buf.take().is_none() {
            return;
        }
        // A lock a policy's panic poisoned guards a state that panic may have left half
        // updated, and unpinning frees and wakes: the chunk stays pinned, as everything in that
        // state stays where it is (readers' drops leave it too), until the engine is dropped.
        if let Ok(mut core) = self.shared.core.lock() {
            core.unpin(self.stream, self.chunk, self.from, self.to);
        }
    }
}

/// A completion for a state an earlier panic poisoned is dropped with its buffer: the engine is
/// broken (its readers hear so), and a panic here would unwind the backend thread that delivers,
/// and a thread that unwinds holding reads (the ring's, the kernel writing into their buffers)
/// cannot end them.
impl CompletionSink for Shared {
    fn complete(&self, c: IoCompletion) {
        let now = self.now();
        if let Ok(mut core) = self.core.lock() {
            core.complete(now, c);
        }
    }

    fn complete_all(&self, cs: &mut Vec<IoCompletion>) {
        let now = self.now();
        match self.core.lock() {
            Ok(mut core) => core.complete_all(now, cs),
            Err(_) => cs.clear(),
        }
    }

    /// A backend thread ended in a panic with reads the driver waits for: they will never
    /// complete, so the engine breaks rather than leave their readers waiting. Before, a panic
    /// of the array policy on the emulated device's thread left the reader of that fetch
    /// waiting forever.
    fn backend_panicked(&self, why: &str) {
        self.break_engine(why.to_string());
    }
}

/// Runs the policy's timers until the engine shuts down. A lock an earlier panic poisoned ends
/// the thread quietly: the engine is broken, its readers hear so, and its drop joins this thread.
fn run_timer(shared: &Shared) {
    shared.breaking_on_panic(|| run_timer_unguarded(shared))
}

fn run_timer_unguarded(shared: &Shared) {
    let Ok(mut core) = shared.core.lock() else {
        return;
    };
    loop {
        if core.shutdown {
            return;
        }
        let next = match core.policy_wake() {
            None => shared.timer.wait(core).map_err(drop),
            Some(t) => {
                let now = shared.now();
                if now >= t {
                    core.timeout(now);
                    Ok(core)
                } else {
                    let wait = std::time::Duration::from_nanos(t.0 - now.0);
                    shared
                        .timer
                        .wait_timeout(core, wait)
                        .map(|(c, _)| c)
                        .map_err(drop)
                }
            }
        };
        match next {
            Ok(c) => core = c,
            Err(_) => return,
        }
    }
}

/// Stops the engine when the last engine handle or reader goes: shuts the backend down (reads
/// it has not started fail, see `backend/lifecycle.rs`), joins the timer thread, and closes the
/// completion port, which waits for the deliveries under way and drops later completions, so
/// that its reference to `shared` is the last: the state (the pool, every buffer) and the
/// backend, whose drop joins its threads, go here, before the drop returns.
struct Owner {
    shared: Arc<Shared>,
    /// The thread that runs the policy's timers, joined here.
    timer_thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Owner {
    fn drop(&mut self) {
        // The lock is let go before the join: the timer thread takes it to see the shutdown.
        // A lock an earlier panic poisoned (in a policy, under it) still shuts the engine down:
        // panicking here again would skip the rest, and abort a drop during unwinding.
        self.shared
            .core
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .shutdown = true;
        self.shared.timer.notify_all();
        self.shared.backend.shutdown();
        if let Some(t) = self.timer_thread.take() {
            // A panic there (in a policy's timer) was reported on that thread already.
            let _ = t.join();
        }
        self.shared.port.close();
    }
}

/// The engine. Cheap to clone; every clone is the same engine. See the crate documentation.
#[derive(Clone)]
pub struct Engine {
    owner: Arc<Owner>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Engine({})", self.backend())
    }
}

/// Which file a [`Reader`] reads, as the file system described it when the reader opened it
/// (`fstat` of the descriptor, not of the path, which may since name another file).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileIdentity {
    /// The device (`st_dev`); `u64::MAX` for the in-memory backend.
    pub device: u64,
    /// The inode (`st_ino`).
    pub inode: u64,
    /// The size when opened; the reader's reads end there.
    pub size_bytes: u64,
    /// The last modification time when opened, where the file system keeps one.
    pub modified: Option<std::time::SystemTime>,
}

/// Names one reader's stream on one file, for [`Engine::hint`]. A closed reader's `StreamId` is
/// given to a later reader; a handle kept from the closed one names neither (the hint is refused
/// with [`EngineError::UnknownStream`]), and neither does a handle given to an engine other than
/// the one whose reader made it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StreamHandle {
    /// The file.
    pub file: FileId,
    /// The reader's stream.
    pub stream: StreamId,
    /// Which open made the stream, telling it from later streams with the same id.
    open_seq: u64,
    /// The engine whose reader made the handle.
    engine: u64,
}

impl Engine {
    /// A builder with the defaults.
    pub fn builder() -> EngineBuilder {
        EngineBuilder::default()
    }

    /// Opens `path` for reading as a new stream. A file opened twice (same device, inode and
    /// size) is one file to the policy, read by two streams.
    pub fn open(&self, path: impl AsRef<Path>) -> Result<Reader, EngineError> {
        let path = path.as_ref();
        self.open_with(path, |backend, id, direct| backend.open(path, id, direct))
    }

    /// Opens `rel` beneath `root` for reading as a new stream, as [`Engine::open`] does, with a
    /// lookup that cannot leave the directory however the names under it change meanwhile (see
    /// [`crate::beneath`]). A server that checked a request's path opens it this way, so that the
    /// file it reads is never one a symlink swapped in since points to.
    pub fn open_beneath(&self, root: &RootDir, rel: &Path) -> Result<Reader, EngineError> {
        self.open_with(&root.display_path(rel), |backend, id, direct| {
            backend.open_beneath(root, rel, id, direct)
        })
    }

    fn open_with(
        &self,
        path: &Path,
        open: impl FnOnce(&dyn IoBackend, FileId, bool) -> io::Result<FileHandle>,
    ) -> Result<Reader, EngineError> {
        let shared = &self.owner.shared;
        shared.breaking_on_panic(|| self.open_unguarded(path, open))
    }

    fn open_unguarded(
        &self,
        path: &Path,
        open: impl FnOnce(&dyn IoBackend, FileId, bool) -> io::Result<FileHandle>,
    ) -> Result<Reader, EngineError> {
        let shared = &self.owner.shared;
        let mut core = shared.lock_live()?;
        let id = core.next_file_id();
        let handle = open(shared.backend.as_ref(), id, shared.direct).map_err(|source| {
            EngineError::Open {
                path: path.to_path_buf(),
                source,
            }
        })?;
        let identity = FileIdentity {
            device: handle.identity.0,
            inode: handle.identity.1,
            size_bytes: handle.size_bytes,
            modified: handle.modified,
        };
        let (file, stream, open_seq, size) = core.open(handle);
        let handle = core.file_handle(file);
        Ok(Reader {
            identity,
            handle,
            owner: self.owner.clone(),
            file,
            stream,
            open_seq,
            size_bytes: size,
            pos: 0,
            cv: Arc::new(Condvar::new()),
            path: path.to_path_buf(),
            deadline: None,
        })
    }

    /// Discloses the future reads of a stream, in the order it will issue them, to the policy
    /// (the informed and directed policies use them; the readahead family ignores them). Ranges
    /// are clipped to the file; empty ones are dropped. A range may run past the end of the file
    /// (`ByteRange::new(start, u64::MAX)` means "from `start` to the end"). A policy keeps a
    /// bounded number of hinted ranges (`directed`: `QUEUED_RANGES_MAX` a stream not yet
    /// admitted; `tip`: `HINTED_RANGES_LIVE_MAX` that the stream and its fetches have not yet
    /// passed) and drops those past it: hints are advice, and their reads are served on demand.
    pub fn hint(&self, at: StreamHandle, ranges: &[ByteRange]) -> Result<(), EngineError> {
        if ranges.len() > MAX_HINT_RANGES {
            return Err(EngineError::HintTooLong {
                max: MAX_HINT_RANGES,
                got: ranges.len(),
            });
        }
        // `ByteRange::end` overflows for a range running past `u64::MAX`; an overflow under the
        // lock below would poison the engine, so the ends are taken here, saturating (no file
        // reaches `u64::MAX` bytes, so clipping to the file below gives the same answer).
        let spans: Vec<(u64, u64)> = ranges
            .iter()
            .map(|r| (r.start.0, r.start.0.saturating_add(r.len.0)))
            .collect();
        let shared = &self.owner.shared;
        shared.breaking_on_panic(|| {
            let mut core = shared.lock_live()?;
            if at.engine != shared.id || !core.stream_reads(at.stream, at.file, at.open_seq) {
                return Err(EngineError::UnknownStream(at.stream));
            }
            let size = core.file_size(at.file);
            let clipped: Vec<ByteRange> = spans
                .iter()
                .filter_map(|&(start, end)| {
                    let end = end.min(size);
                    (start < end).then(|| ByteRange::new(start, end - start))
                })
                .collect();
            let now = shared.now();
            core.hint(now, at.stream, at.file, clipped);
            Ok(())
        })
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> Stats {
        let mut s = self.owner.shared.lock_for_report().stats();
        if let Some(a) = self.owner.shared.backend.array_stats() {
            // The driver's reads end at the array cache; the device's are the cache's.
            s.device_reads = a.device_reads;
            s.device_bytes = a.device_bytes;
            s.array = Some(a);
        }
        s
    }

    /// The backend running.
    pub fn backend(&self) -> BackendKind {
        self.owner.shared.backend.kind()
    }

    /// Why the engine is broken, if a panic broke it (see the module documentation) or its owner
    /// abandoned it ([`Engine::abandon`], whose reason this is then): the
    /// panic's message and where it was raised, e.g. for a server to log before it exits. `None`
    /// while the engine works, and for the moment between a panic and its catch, which marks
    /// the engine broken (a backend thread marks it last), though calls may already fail.
    /// The error of each refused call, [`EngineError::Broken`], carries the same text.
    pub fn broken_reason(&self) -> Option<String> {
        let shared = &self.owner.shared;
        if !shared.is_broken() {
            return None;
        }
        shared.broken_by.get().cloned()
    }

    /// Gives up on the engine, as a panic inside it would: every read waiting in it (on any
    /// thread) returns [`EngineError::Broken`] with `why` as its reason, and so does every later
    /// read, open and hint. For an owner that has stopped waiting for its readers (a hang guard):
    /// a thread blocked in a read can be neither cancelled nor joined, and its reader keeps the
    /// engine, its backend threads and its buffers alive; woken with an error, the thread ends
    /// and drops its reader, and the engine stops once its last handle goes. The first reason
    /// given, by a panic or by this, is the one kept.
    pub fn abandon(&self, why: &str) {
        self.owner.shared.break_engine(why.to_string());
    }

    /// Why [`Backend::Auto`] fell back to the thread pool, if it did.
    pub fn fallback_reason(&self) -> Option<&str> {
        self.owner.shared.fallback.as_deref()
    }

    /// A one-line summary of the driver's state (for diagnosing a stuck test).
    #[doc(hidden)]
    pub fn describe(&self) -> String {
        self.owner.shared.lock_for_report().describe()
    }

    /// Slots in the stream table: the most readers ever open at once (tests; a closed reader's
    /// slot is reused).
    #[doc(hidden)]
    pub fn stream_slots(&self) -> usize {
        self.owner.shared.lock_for_report().stream_slots()
    }

    /// Slots in the file table: the most files ever remembered at once (tests).
    #[doc(hidden)]
    pub fn file_slots(&self) -> usize {
        self.owner.shared.lock_for_report().file_slots()
    }

    /// Files remembered now: open, or with reads in flight (tests).
    #[doc(hidden)]
    pub fn files_remembered(&self) -> usize {
        self.owner.shared.lock_for_report().files_remembered()
    }

    /// Checks the engine's accounting invariants; panics if one is broken (tests).
    #[doc(hidden)]
    pub fn check_invariants(&self) {
        // A state a panic left half-updated has no invariants to check.
        self.owner
            .shared
            .core
            .lock()
            .expect("engine state poisoned by an earlier panic")
            .check();
    }
}

/// A stream reading one file through the engine: `std::io::Read + Seek`.
///
/// Each reader is one stream to the policy. A reader is `Send`; give each thread its own (open
/// the file once per thread, or per logical stream). Dropping it closes the stream: the policy is
/// told (`Input::StreamClosed`) and forgets it, and its `StreamId` goes to a later reader. When
/// the file's last reader is dropped and its reads in flight complete, the engine and the policy
/// forget the file too (`Input::FileClosed`), and its `FileId` goes to a later file.
pub struct Reader {
    owner: Arc<Owner>,
    file: FileId,
    stream: StreamId,
    open_seq: u64,
    identity: FileIdentity,
    /// The file's descriptor (shared with the engine's reads), for [`Reader::identity_now`].
    handle: Option<Arc<FileHandle>>,
    size_bytes: u64,
    pos: u64,
    cv: Arc<Condvar>,
    path: PathBuf,
    /// After this, a read stops waiting (see [`Reader::set_read_deadline`]).
    deadline: Option<std::time::Instant>,
}

impl std::fmt::Debug for Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader")
            .field("path", &self.path)
            .field("file", &self.file)
            .field("stream", &self.stream)
            .field("pos", &self.pos)
            .finish()
    }
}

impl Reader {
    /// This reader's stream and file, for [`Engine::hint`].
    pub fn handle(&self) -> StreamHandle {
        StreamHandle {
            file: self.file,
            stream: self.stream,
            open_seq: self.open_seq,
            engine: self.owner.shared.id,
        }
    }

    /// The file this reader reads, as it was when opened. A caller that decided something from
    /// the path's metadata (a server announcing a length) compares it with this to know the
    /// reader reads that very file.
    pub fn file_identity(&self) -> FileIdentity {
        self.identity
    }

    /// The file as the file system describes it now: `fstat` of the descriptor the reader reads
    /// through, so the same device and inode, with the size and modification time of this moment.
    /// A file rewritten in place since the reader opened it differs from
    /// [`Reader::file_identity`] in those (unless the rewrite kept the size and fell within the
    /// file system's timestamp granularity of the previous modification). Files without a
    /// descriptor (the in-memory backends) give their identity at open, even after
    /// `NoopBackend::truncate` shrank them (a short read then shows it).
    pub fn identity_now(&self) -> io::Result<FileIdentity> {
        let Some(file) = self.handle.as_ref().and_then(|h| h.file.as_ref()) else {
            return Ok(self.identity);
        };
        let meta = file.metadata()?;
        Ok(FileIdentity {
            device: self.identity.device,
            inode: self.identity.inode,
            size_bytes: meta.len(),
            modified: meta.modified().ok(),
        })
    }

    /// The file's size when it was opened; reads end there (or earlier, if the file shrank).
    pub fn len_bytes(&self) -> u64 {
        self.size_bytes
    }

    /// Whether the file was empty when opened.
    pub fn is_empty(&self) -> bool {
        self.size_bytes == 0
    }

    /// The current position.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Sets an instant after which a `read` stops waiting for bytes that are not there yet: it
    /// returns the bytes it has copied, or, with none, an error of kind
    /// [`io::ErrorKind::TimedOut`]. The reads the engine issued go on and their bytes stay cached
    /// for a later `read`. `None` (the default) waits for as long as the bytes take. A benchmark
    /// that must stop at a set time uses it, since a read queued behind thousands of others on a
    /// slow device can take many seconds.
    pub fn set_read_deadline(&mut self, deadline: Option<std::time::Instant>) {
        self.deadline = deadline;
    }

    /// Waits on the reader's condition variable until notified or the deadline passes; returns
    /// the lock and whether the deadline has passed, or the error of a broken engine.
    fn wait<'a>(
        &self,
        core: std::sync::MutexGuard<'a, Core>,
    ) -> io::Result<(std::sync::MutexGuard<'a, Core>, bool)> {
        self.wait_at_most(core, None)
    }

    /// [`Reader::wait`], for at most `most` as well if given (the caller then looks again).
    fn wait_at_most<'a>(
        &self,
        core: std::sync::MutexGuard<'a, Core>,
        most: Option<std::time::Duration>,
    ) -> io::Result<(std::sync::MutexGuard<'a, Core>, bool)> {
        let left = self
            .deadline
            .map(|at| at.saturating_duration_since(std::time::Instant::now()));
        if left.is_some_and(|l| l.is_zero()) {
            return Ok((core, true));
        }
        let limit = match (left, most) {
            (Some(l), Some(m)) => Some(l.min(m)),
            (l, m) => l.or(m),
        };
        // A poisoned lock is let go before the error is made, which may wait for the panic's
        // message from the thread that poisoned it, and so needs this lock let go.
        let waited = match limit {
            None => self.cv.wait(core).map_err(drop),
            Some(limit) => self
                .cv
                .wait_timeout(core, limit)
                .map(|(c, _)| c)
                .map_err(drop),
        };
        let Ok(core) = waited else {
            return Err(self.owner.shared.broken_read());
        };
        if self.owner.shared.is_broken() {
            drop(core);
            return Err(self.owner.shared.broken_read());
        }
        let timed_out = self
            .deadline
            .is_some_and(|at| std::time::Instant::now() >= at);
        Ok((core, timed_out))
    }

    /// Shorthand for [`Engine::hint`] on this reader's stream.
    pub fn hint(&self, ranges: &[ByteRange]) -> Result<(), EngineError> {
        Engine {
            owner: self.owner.clone(),
        }
        .hint(self.handle(), ranges)
    }
}

impl Read for Reader {
    /// Reads up to `out.len()` bytes at the current position: everything asked for up to the end
    /// of the file (like a read of a regular file), fewer only at the end of the file (including a
    /// file that shrank while being read), or an error if a read of these bytes failed.
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() || self.pos >= self.size_bytes {
            return Ok(0);
        }
        let owner = self.owner.clone();
        owner.shared.breaking_on_panic(|| self.read_unguarded(out))
    }
}

impl Reader {
    /// [`Read::read`] of at least one byte, on a thread that breaks the engine if it panics.
    fn read_unguarded(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let shared = &self.owner.shared;
        let start = self.pos;
        let end = self.size_bytes.min(start.saturating_add(out.len() as u64));
        let mut core = shared.lock_live().map_err(io::Error::other)?;
        core.begin_read(shared.now(), self.stream, self.file, start, end);
        let mut cursor = start;
        let mut stall = std::time::Duration::ZERO;
        let mut failure = None;
        let mut timed_out = false;
        while cursor < end && !timed_out {
            match core.find(self.file, cursor) {
                Found::Ready {
                    chunk,
                    chunk_start,
                    valid_end,
                } => {
                    if cursor >= valid_end {
                        // The file ended before its size at open: it was truncated.
                        break;
                    }
                    let n = (valid_end.min(end) - cursor) as usize;
                    let pinned = Pinned {
                        shared,
                        stream: self.stream,
                        chunk,
                        from: cursor,
                        to: cursor + n as u64,
                        buf: Some(core.pin(chunk)),
                    };
                    drop(core);
                    let from = (cursor - chunk_start) as usize;
                    let to = (cursor - start) as usize;
                    out[to..to + n].copy_from_slice(&pinned.bytes()[from..from + n]);
                    // A broken engine ends the read here; `pinned` unpins as it drops.
                    core = shared.lock_live().map_err(io::Error::other)?;
                    pinned.unpin(&mut core);
                    cursor += n as u64;
                }
                Found::InFlight { chunk } => {
                    core.wait_for_chunk(chunk, self.stream, &self.cv);
                    let t = std::time::Instant::now();
                    (core, timed_out) = self.wait(core)?;
                    if !timed_out {
                        // A timed-out reader stays noted as waiting until `stop_waiting`
                        // takes it off the chunk's list.
                        core.woke(self.stream);
                    }
                    stall += t.elapsed();
                }
                Found::Missing => {
                    if core.has_error(self.stream, cursor) {
                        // A demand read of these bytes failed. Return what was copied first; the
                        // next call returns the error.
                        if cursor == start {
                            failure = core.take_error(self.stream, cursor);
                        }
                        break;
                    }
                    // The policy will fetch these bytes (the stream's turn has not come): wait
                    // for its fetches, or for the engine to stay idle long enough to give up.
                    let most = match core.defer_wait(shared.now(), self.stream, cursor, &self.cv) {
                        DeferWait::Demand => None,
                        DeferWait::Woken => Some(None),
                        DeferWait::AtMost(ns) => Some(Some(std::time::Duration::from_nanos(ns))),
                    };
                    if let Some(most) = most {
                        let t = std::time::Instant::now();
                        (core, timed_out) = self.wait_at_most(core, most)?;
                        stall += t.elapsed();
                        continue;
                    }
                    if !core.demand(self.stream, self.file, cursor, end) {
                        core.wait_for_memory(self.stream, &self.cv, cursor, end);
                        let t = std::time::Instant::now();
                        (core, timed_out) = self.wait(core)?;
                        stall += t.elapsed();
                    }
                }
            }
        }
        let copied = cursor - start;
        if timed_out {
            core.stop_waiting(self.stream, &self.cv);
        }
        core.end_read(
            shared.now(),
            self.stream,
            copied,
            stall.as_nanos() as u64,
            cursor < end,
        );
        drop(core);
        self.pos = cursor;
        match failure {
            Some(e) => Err(e),
            None if copied == 0 && timed_out => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "{}: the read deadline passed before the bytes at {start} arrived",
                    self.path.display()
                ),
            )),
            None => Ok(copied as usize),
        }
    }
}

impl Seek for Reader {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(n) => n as i128,
            SeekFrom::End(d) => self.size_bytes as i128 + d as i128,
            SeekFrom::Current(d) => self.pos as i128 + d as i128,
        };
        if target < 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "seek before the start of the file",
            ));
        }
        // As `std::fs::File` and `std::io::Cursor` do: a position past `u64::MAX` is an error,
        // and the position stays where it was. It used to be cut to `u64::MAX`, so a seek
        // forward and the same seek back did not return to where the reader was.
        let Ok(pos) = u64::try_from(target) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "seek past the largest position (2^64 - 1)",
            ));
        };
        self.pos = pos;
        Ok(self.pos)
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        let shared = &self.owner.shared;
        let now = shared.now();
        shared.breaking_on_panic(|| {
            if let Ok(mut core) = shared.core.lock() {
                core.close(now, self.stream);
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{temp_dir, temp_file};

    fn refused(_: usize, _: Arc<CompletionPort>) -> io::Result<Arc<dyn IoBackend>> {
        Err(io::Error::from_raw_os_error(libc::ENOSYS))
    }

    #[test]
    fn auto_falls_back_to_threads_when_io_uring_is_refused() {
        let (b, why) = start_backend(Backend::Auto, 4, CompletionPort::new(), refused).unwrap();
        assert_eq!(b.kind(), BackendKind::Threads);
        assert!(why.unwrap().contains("io_uring refused"));
        b.shutdown();
        let e = start_backend(Backend::Uring, 4, CompletionPort::new(), refused)
            .err()
            .unwrap();
        assert!(e.to_string().contains("uring"), "{e}");
    }

    #[test]
    fn directed_gets_the_emulated_drive_figures_unless_it_has_its_own() {
        let directed = || PolicyConfig {
            name: "directed".into(),
            ..PolicyConfig::default()
        };
        let wd = EmulatedConfig::preset("wd800jd").unwrap();
        let mut c = directed();
        with_device_figures(&mut c, &wd.device);
        assert!(!c.directed.positioning_curve_ns.is_empty());
        assert!(c.directed.media_bytes_per_s > 0);
        // On a RAID-0 the member drive's figures, which the simulator uses too.
        let mut r = directed();
        with_device_figures(&mut r, &wd.clone().raid0(4, 128 << 10).device);
        assert_eq!(r.directed, c.directed);
        // An SSD has no positioning cost: auto then reads through no gap.
        let mut ssd = directed();
        with_device_figures(
            &mut ssd,
            &EmulatedConfig::preset("ssd-850evo").unwrap().device,
        );
        assert!(ssd.directed.positioning_curve_ns.is_empty());
        assert_eq!(ssd.directed.media_bytes_per_s, 0);
        // Figures given by the caller stay, and other policies are left alone.
        let mut own = directed();
        own.directed.positioning_curve_ns = vec![(4096, 1_000)];
        own.directed.media_bytes_per_s = 1;
        let before = own.clone();
        with_device_figures(&mut own, &wd.device);
        assert_eq!(own.directed, before.directed);
        let mut seqp = PolicyConfig::default();
        let before = seqp.clone();
        with_device_figures(&mut seqp, &wd.device);
        assert_eq!(seqp.directed, before.directed);
    }

    #[test]
    fn directed_on_the_emulated_drive_reads_through_small_gaps_under_auto() {
        // Twenty 8 KiB reads 16 KiB apart, disclosed up front: the wd800jd's break-even is far
        // above 16 KiB, so auto infill reads the gaps too (one sweep of 480 KiB), where without
        // the drive's figures it read only the 160 KiB asked for.
        let dir = temp_dir("auto-infill");
        let path = dir.path().join("gaps");
        std::fs::write(&path, vec![7u8; 1 << 20]).unwrap();
        let engine = Engine::builder()
            .backend(Backend::Emulated(
                EmulatedConfig::preset("wd800jd").unwrap(),
            ))
            .memory(ByteLen::mib(8))
            .policy("directed")
            .direct_io(false)
            .build()
            .unwrap();
        let mut r = engine.open(&path).unwrap();
        let reads: Vec<ByteRange> = (0..20u64)
            .map(|i| ByteRange::new(i * (24 << 10), 8 << 10))
            .collect();
        r.hint(&reads).unwrap();
        let mut buf = vec![0u8; 8 << 10];
        for range in &reads {
            r.seek(SeekFrom::Start(range.start.0)).unwrap();
            r.read_exact(&mut buf).unwrap();
            assert!(buf.iter().all(|&b| b == 7));
        }
        let s = engine.stats();
        drop(r);
        drop(engine);
        assert!(
            s.device_bytes >= 19 * (24 << 10) + (8 << 10),
            "read {} device bytes for {} asked",
            s.device_bytes,
            s.app_bytes
        );
    }

    #[test]
    fn bad_settings_name_the_setting() {
        let e = Engine::builder().queue_depth(0).build().unwrap_err();
        assert!(e.to_string().contains("queue_depth"), "{e}");
        let e = Engine::builder().max_io(ByteLen(1000)).build().unwrap_err();
        assert!(e.to_string().contains("max_io"), "{e}");
        let e = Engine::builder()
            .memory(ByteLen::kib(64))
            .max_io(ByteLen::mib(1))
            .build()
            .unwrap_err();
        assert!(e.to_string().contains("memory"), "{e}");
        let e = Engine::builder().policy("psychic").build().unwrap_err();
        assert!(e.to_string().contains("psychic"), "{e}");
        let e = Engine::builder()
            .raid_cache(ByteLen(100))
            .build()
            .unwrap_err();
        assert!(e.to_string().contains("raid_cache"), "{e}");
    }

    /// MSP runs in the RAID driver's cache, which the engine has over an emulated RAID-0 only:
    /// elsewhere `msp+...` is refused, saying what to change; there it runs, with the cache's
    /// figures in the stats and the file's bytes read.
    #[test]
    fn msp_runs_on_an_emulated_raid0_only() {
        let one_drive = EmulatedConfig::preset("cheetah-15k4").unwrap();
        for backend in [
            Backend::Noop(NoopBackend::new()),
            Backend::Threads,
            Backend::Emulated(one_drive.clone()),
        ] {
            let e = Engine::builder()
                .policy("msp+saseqp")
                .backend(backend)
                .build()
                .unwrap_err();
            let text = e.to_string();
            assert!(
                text.contains("msp+saseqp") && text.contains("RAID-0"),
                "{text}"
            );
            assert!(text.contains("choose `saseqp` alone"), "{text}");
        }
        let bytes: Vec<u8> = (0..(12u32 << 20))
            .map(|i| (i / 4096 * 31 + i) as u8)
            .collect();
        let (_dir, path) = temp_file("msp-engine", &bytes);
        let engine = Engine::builder()
            .policy("msp+saseqp")
            .readahead_max(ByteLen::kib(128))
            .backend(Backend::Emulated(one_drive.raid0(5, 128 << 10)))
            .raid_cache(ByteLen::mib(64))
            .build()
            .unwrap();
        let mut r = engine.open(&path).unwrap();
        let mut got = Vec::new();
        r.read_to_end(&mut got).unwrap();
        assert!(got == bytes, "the file's bytes");
        let s = engine.stats();
        let a = s.array.expect("the array cache's figures");
        assert!(a.fetches > 0 && a.prefetched_bytes > 0, "{a:?}");
        assert!(a.peak_bytes <= ByteLen::mib(64).0, "{a:?}");
        assert_eq!(s.device_bytes, a.device_bytes);
        drop(r);
    }

    /// An engine running MSP in the array cache over an emulated RAID-0 of five Cheetah 15K.4s
    /// (128 KiB strips), `placement` on its volume, with a 64 MiB array cache.
    /// Dropping the engine joins its timer thread, which holds the engine's state: once the drop
    /// returns (nothing was read, so no backend thread holds the state either), the state is
    /// gone (its buffers, its backend). Before, the timer thread was left to notice the shutdown
    /// on its own and let go later.
    #[test]
    fn dropping_the_engine_joins_its_timer_thread() {
        for _ in 0..20 {
            let noop = NoopBackend::new();
            let engine = Engine::builder()
                .backend(Backend::Noop(noop))
                .build()
                .unwrap();
            let state = Arc::downgrade(&engine.owner.shared);
            drop(engine);
            assert!(state.upgrade().is_none(), "the engine's state outlived it");
        }
    }

    /// Panics on the first read it is shown, under the engine's lock, which it poisons.
    struct PanicOnRead;

    impl foresight_policy::Policy for PanicOnRead {
        fn name(&self) -> &str {
            "panic-on-read"
        }
        fn handle(&mut self, _now: Instant, input: foresight_policy::Input) {
            if let foresight_policy::Input::Read { .. } = input {
                panic!("a policy bug, on purpose");
            }
        }
        fn poll_output(&mut self) -> Option<foresight_policy::Output> {
            None
        }
    }

    /// An engine on the in-memory backend over a 64 KiB file at `/f`, run by [`PanicOnRead`]
    /// and poisoned by a read already, and its backend (a handle the caller keeps, so that the
    /// engine's drop is not the backend's last).
    fn poisoned_noop_engine() -> (Engine, NoopBackend) {
        let noop = NoopBackend::new();
        noop.insert("/f", vec![3u8; 1 << 16]);
        let engine = Engine::builder()
            .backend(Backend::Noop(noop.clone()))
            .wrap_policy(Box::new(|_| Box::new(PanicOnRead)))
            .build()
            .unwrap();
        assert_a_read_panics(engine.open("/f").unwrap(), "the policy");
        (engine, noop)
    }

    /// Reads from `r` on a thread of its own, which the panic of `policy` (a [`PanicOnRead`])
    /// must end: the panic poisons the engine's lock, and the test's thread goes on.
    fn assert_a_read_panics(r: Reader, policy: &str) {
        let read = std::thread::spawn(move || {
            let mut r = r;
            let mut buf = vec![0u8; 4096];
            let _ = r.read(&mut buf);
        });
        assert!(read.join().is_err(), "{policy} did not panic in the read");
    }

    /// An engine whose state an earlier panic poisoned still drops without panicking, and
    /// shuts its backend down and joins its threads. Before, the drop panicked again on the
    /// poisoned lock, before it shut anything down.
    #[test]
    fn an_engine_poisoned_by_a_policy_panic_drops_quietly() {
        let (engine, _noop) = poisoned_noop_engine();
        let state = Arc::downgrade(&engine.owner.shared);
        let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(engine)));
        assert!(dropped.is_ok(), "dropping the poisoned engine panicked");
        assert!(state.upgrade().is_none(), "the engine's state outlived it");
    }

    /// A backend thread delivering a completion into an engine an earlier panic poisoned
    /// drops it, and goes on: the engine is broken, but the thread still holds reads to end
    /// (the ring's, in the kernel). Before, the delivery panicked on the poisoned lock, and the
    /// backend's thread unwound.
    #[test]
    fn a_completion_for_a_poisoned_engine_is_dropped_without_a_panic() {
        let (engine, _noop) = poisoned_noop_engine();
        let shared = engine.owner.shared.clone();
        let completion = |token| IoCompletion {
            token,
            buf: crate::buffer::AlignedBuf::new(4096).unwrap(),
            result: Ok(4096),
        };
        let delivered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            shared.complete(completion(1 << 40));
            let mut burst = vec![completion(1 << 41), completion(1 << 42)];
            shared.complete_all(&mut burst);
            burst.len()
        }));
        assert_eq!(
            delivered.ok(),
            Some(0),
            "a delivery into the poisoned engine panicked, or kept its burst"
        );
        drop(shared);
        drop(engine);
    }

    /// A call refused by a lock that a panic poisoned waits for that panic's message only so
    /// long: here the panic is this test's own, outside any engine call, so no thread ever
    /// records one, and the open returns after `REASON_PATIENCE` saying so rather than wait for
    /// good.
    #[test]
    fn a_refused_call_waits_for_the_panics_message_only_so_long() {
        let engine = Engine::builder()
            .backend(Backend::Noop(NoopBackend::new()))
            .build()
            .unwrap();
        let shared = engine.owner.shared.clone();
        let poisoner = std::thread::spawn(move || {
            let _core = shared.core.lock().unwrap();
            panic!("poisoning the engine's lock outside any engine call, on purpose");
        });
        assert!(poisoner.join().is_err());
        let refused = engine.open("/f");
        assert!(
            matches!(&refused, Err(EngineError::Broken { reason })
                if reason.contains("did not record within")),
            "{refused:?}"
        );
    }

    /// A policy's panic records its message before it poisons the engine's lock, so a call
    /// the poisoned lock refuses finds the message at once. Here the policy panics under the
    /// lock on a thread of this test's own, outside any engine call, so nothing but the guard
    /// around the policy can record it. Before, only the engine call that ran the policy
    /// recorded the message, after the unwind had let the lock go: a call on another thread in
    /// that moment waited for it (here, where no engine call catches the panic, for
    /// `REASON_PATIENCE`, and then said no message was recorded).
    #[test]
    fn a_policy_panic_records_its_message_before_it_poisons_the_lock() {
        /// Panics when its timer is run.
        struct PanicOnTimeout;
        impl foresight_policy::Policy for PanicOnTimeout {
            fn name(&self) -> &str {
                "panic-on-timeout"
            }
            fn handle(&mut self, _now: Instant, _input: foresight_policy::Input) {}
            fn poll_output(&mut self) -> Option<foresight_policy::Output> {
                None
            }
            fn handle_timeout(&mut self, _now: Instant) {
                panic!("a policy's timer bug, on purpose");
            }
        }
        let engine = Engine::builder()
            .backend(Backend::Noop(NoopBackend::new()))
            .wrap_policy(Box::new(|_| Box::new(PanicOnTimeout)))
            .build()
            .unwrap();
        let shared = engine.owner.shared.clone();
        let poisoner = std::thread::spawn(move || {
            let mut core = shared.core.lock().unwrap();
            core.timeout(Instant(1));
        });
        assert!(poisoner.join().is_err());
        let refused = engine.open("/f");
        assert!(
            matches!(&refused, Err(EngineError::Broken { reason })
                if reason.contains("a policy's timer bug, on purpose")),
            "{refused:?}"
        );
    }

    /// An `msp+seqp` engine over five emulated `cheetah-15k4` whose array policy panics on
    /// its first read.
    fn array_engine_whose_policy_panics_on_a_read() -> Engine {
        let cfg = EmulatedConfig::preset("cheetah-15k4")
            .unwrap()
            .raid0(5, 128 << 10);
        Engine::builder()
            .policy("msp+seqp")
            .backend(Backend::Emulated(cfg))
            .raid_cache(ByteLen::mib(8))
            .wrap_array_policy(Box::new(|_| Box::new(PanicOnRead)))
            .build()
            .unwrap()
    }

    /// An engine running MSP in an array cache whose policy panicked (under the engine's lock
    /// and the cache's, poisoning both) still drops without panicking, and lets its state go.
    /// Before, the drop's shutdown of the cache panicked on the cache's poisoned lock.
    #[test]
    fn an_engine_whose_array_cache_a_policy_panic_poisoned_drops_quietly() {
        let (_dir, path) = temp_file("msp-poison", &vec![3u8; 1 << 20]);
        let engine = array_engine_whose_policy_panics_on_a_read();
        let state = Arc::downgrade(&engine.owner.shared);
        assert_a_read_panics(engine.open(&path).unwrap(), "the array policy");
        let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(engine)));
        assert!(dropped.is_ok(), "dropping the poisoned engine panicked");
        assert!(state.upgrade().is_none(), "the engine's state outlived it");
    }

    /// The accessors that cannot fail (counters, the summary, the table sizes) answer on an
    /// engine a policy panic poisoned, its own lock and its array cache's: a server reporting
    /// its counters, or a test describing a stuck engine, must not panic too. Before, each
    /// panicked on the poisoned lock.
    #[test]
    fn the_infallible_accessors_answer_on_a_poisoned_engine() {
        fn answers(engine: &Engine, what: &str) {
            let asked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let s = engine.stats();
                let _ = engine.describe();
                let _ = engine.stream_slots();
                let _ = engine.file_slots();
                let _ = engine.files_remembered();
                s
            }));
            let Ok(stats) = asked else {
                panic!("{what}: an accessor panicked on the poisoned engine");
            };
            assert_eq!(stats.backend, engine.backend(), "{what}");
        }
        let (engine, _noop) = poisoned_noop_engine();
        answers(&engine, "the engine's policy");
        drop(engine);

        let (_dir, path) = temp_file("msp-poison-stats", &vec![3u8; 1 << 20]);
        let engine = array_engine_whose_policy_panics_on_a_read();
        assert_a_read_panics(engine.open(&path).unwrap(), "the array policy");
        answers(&engine, "the array policy");
        assert!(engine.stats().array.is_some(), "the array cache's counters");
    }

    /// Runs the policy it wraps, and panics when it hears that a fetch finished: on whatever
    /// thread the driver (or the array cache) handles that completion, a backend's.
    struct PanicOnFetched(Box<dyn Policy>);

    impl foresight_policy::Policy for PanicOnFetched {
        fn name(&self) -> &str {
            "panic-on-fetched"
        }
        fn handle(&mut self, now: Instant, input: foresight_policy::Input) {
            if let foresight_policy::Input::Fetched { .. } = input {
                panic!("a policy bug on a finished fetch, on purpose");
            }
            self.0.handle(now, input);
        }
        fn poll_output(&mut self) -> Option<foresight_policy::Output> {
            self.0.poll_output()
        }
        fn poll_timeout(&self) -> Option<Instant> {
            self.0.poll_timeout()
        }
        fn handle_timeout(&mut self, now: Instant) {
            self.0.handle_timeout(now)
        }
        fn add_file(&mut self, id: FileId, file: foresight_policy::layout::FileLayout) {
            self.0.add_file(id, file)
        }
    }

    /// How long a test waits for a read that used to hang before it calls it hung.
    const PATIENCE: std::time::Duration = std::time::Duration::from_secs(60);

    /// Reads `path` to its end through `engine` on a thread of its own, and returns what the
    /// read returned, or `None` if it neither returned within [`PATIENCE`] (a hang) nor
    /// returned at all (the thread panicked).
    fn read_to_end_within(engine: &Engine, path: &Path) -> Option<io::Result<usize>> {
        let mut r = engine.open(path).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut got = Vec::new();
            let _ = tx.send(r.read_to_end(&mut got));
        });
        rx.recv_timeout(PATIENCE).ok()
    }

    /// Asserts that `engine` is broken: reading `path` through it ends with
    /// [`EngineError::Broken`] (it neither hangs nor panics), and so do a later open and a read
    /// of a reader opened before; then that it drops without a panic. `what` names the case.
    fn assert_broken_by_a_panic(engine: Engine, path: &Path, what: &str) {
        let early = engine.open(path).unwrap();
        let result = read_to_end_within(&engine, path);
        let Some(Err(e)) = result else {
            panic!("{what}: the read did not end with an error: {result:?} (None: it hung or panicked)");
        };
        assert!(
            e.to_string().contains("the engine is broken"),
            "{what}: the read's error: {e}"
        );
        // The error carries the panic's message (each of these tests' panics says "on
        // purpose"), even when the read found the lock the panic poisoned before the panicking
        // thread recorded it. Before, it said only that the engine was broken.
        assert!(
            e.to_string().contains("on purpose"),
            "{what}: the read's error does not say which panic broke the engine: {e}"
        );
        let inner = e.get_ref().and_then(|i| i.downcast_ref::<EngineError>());
        assert!(
            matches!(inner, Some(EngineError::Broken { reason }) if reason.contains("on purpose")),
            "{what}: the read's error does not carry EngineError::Broken with its reason: {e:?}"
        );
        let refused = engine.open(path);
        assert!(
            matches!(&refused, Err(EngineError::Broken { reason }) if reason.contains("on purpose")),
            "{what}: an open after the panic was not refused with the panic's message: {refused:?}"
        );
        // Each of these tests' panics says "on purpose"; a server logs this before it exits.
        // The mark (and its reason) may come after the read failed: a ring thread ends the
        // kernel's reads before its alarm breaks the engine, while the poisoned lock already
        // refuses everything.
        let until = std::time::Instant::now() + PATIENCE;
        let mut why = engine.broken_reason();
        while why.is_none() && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(10));
            why = engine.broken_reason();
        }
        assert!(
            why.as_deref().is_some_and(|w| w.contains("on purpose")),
            "{what}: the broken engine does not say which panic broke it: {why:?}"
        );
        // And where it was raised: this binary keeps the engine's panic hook, which notes it.
        assert!(
            why.as_deref()
                .is_some_and(|w| w.contains(" (at crates/foresight-engine/src/")),
            "{what}: the broken engine does not say where its panic was raised: {why:?}"
        );
        let mut early = early;
        let mut buf = vec![0u8; 4096];
        let later = early.read(&mut buf);
        assert!(
            later.is_err(),
            "{what}: a read after the panic did not fail: {later:?}"
        );
        drop(early);
        let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(engine)));
        assert!(
            dropped.is_ok(),
            "{what}: dropping the broken engine panicked"
        );
    }

    /// A panic of the array policy as it hears of a finished fetch, on the emulated device's
    /// thread (which delivers the fetch's pages into the array cache), breaks the engine: the
    /// reader waiting for those pages, and every later call, gets an error. Before, the panic
    /// ended the device's thread and poisoned only the array cache; the engine never heard, and
    /// the reader waited forever.
    #[test]
    fn a_panic_of_the_array_policy_on_a_finished_fetch_breaks_the_engine() {
        // As in `msp_runs_on_an_emulated_raid0_only`, where MSP fetches stripes ahead.
        let (_dir, path) = temp_file("msp-fetched-panic", &vec![5u8; 12 << 20]);
        let cfg = EmulatedConfig::preset("cheetah-15k4")
            .unwrap()
            .raid0(5, 128 << 10);
        let engine = Engine::builder()
            .policy("msp+saseqp")
            .backend(Backend::Emulated(cfg))
            .raid_cache(ByteLen::mib(64))
            .wrap_array_policy(Box::new(|msp| Box::new(PanicOnFetched(msp))))
            .build()
            .unwrap();
        assert_broken_by_a_panic(engine, &path, "the array policy");
    }

    /// A panic of the engine's policy as it hears of a finished fetch, on the backend thread
    /// that delivers the fetch, breaks the engine on every backend: the readers waiting, and
    /// every later call, get an error. Before, the reader woken by the fetch's completion
    /// (the driver wakes a chunk's readers before the policy hears) panicked on the lock the
    /// panic poisoned, and so did every later call.
    #[test]
    fn a_panic_of_the_policy_on_a_finished_fetch_breaks_the_engine_on_every_backend() {
        let bytes = vec![6u8; 4 << 20];
        let (_dir, path) = temp_file("fetched-panic", &bytes);
        let noop = NoopBackend::new();
        noop.insert(&path, bytes.clone());
        let raid = EmulatedConfig::preset("cheetah-15k4")
            .unwrap()
            .raid0(5, 128 << 10);
        let cases = [
            ("threads", "seqp", Backend::Threads),
            ("uring", "seqp", Backend::Uring),
            ("noop", "seqp", Backend::Noop(noop)),
            (
                "emulated",
                "seqp",
                Backend::Emulated(EmulatedConfig::preset("ssd-850evo").unwrap()),
            ),
            ("array cache", "msp+seqp", Backend::Emulated(raid)),
        ];
        for (what, policy, backend) in cases {
            let built = Engine::builder()
                .policy(policy)
                .backend(backend)
                .raid_cache(ByteLen::mib(16))
                .wrap_policy(Box::new(|p| Box::new(PanicOnFetched(p))))
                .build();
            let engine = match built {
                Ok(e) => e,
                Err(EngineError::BackendUnavailable { reason, .. }) => {
                    eprintln!("{what}: not available here ({reason}); skipped");
                    continue;
                }
                Err(e) => panic!("{what}: {e}"),
            };
            assert_broken_by_a_panic(engine, &path, what);
        }
    }

    /// A backend's own thread that ends in a panic (here the in-memory backend's worker, by an
    /// injected fault) breaks the engine: the reader waiting for the read it held, and every
    /// later call, gets an error. Before, the reader waited forever.
    #[test]
    fn a_backend_thread_that_panics_breaks_the_engine() {
        // A working engine has no reason to give.
        let fine = Engine::builder()
            .backend(Backend::Noop(NoopBackend::new()))
            .build()
            .unwrap();
        assert_eq!(fine.broken_reason(), None);
        let noop = NoopBackend::new();
        noop.insert("/f", vec![7u8; 1 << 20]);
        noop.inject(crate::Fault {
            path: "/f".into(),
            range: (512 << 10)..(1 << 20),
            kind: crate::FaultKind::Panic,
            times: None,
        });
        let engine = Engine::builder()
            .backend(Backend::Noop(noop))
            .build()
            .unwrap();
        assert_broken_by_a_panic(engine, Path::new("/f"), "the noop worker");
    }

    /// A read cut off by a broken engine after it copied out of a chunk unpins that chunk: once
    /// the reader is closed, nothing is pinned and no buffer stays lent. Before, the read
    /// returned its error with the chunk still pinned, and the closed file's chunk was never
    /// freed. The engine breaks while the reader copies: this thread takes the lock while a
    /// chunk is pinned (the reader is copying, or waits for the lock to unpin), and a thread
    /// holding a backend's `PanicAlarm` panics, which marks the engine broken before it waits
    /// for that lock.
    #[test]
    fn a_read_cut_off_by_a_broken_engine_unpins_what_it_copied_from() {
        let noop = NoopBackend::new();
        noop.insert("/f", vec![5u8; 1 << 20]);
        let engine = Engine::builder()
            .backend(Backend::Noop(noop))
            .build()
            .unwrap();
        let shared = engine.owner.shared.clone();
        let mut reader = engine.open(Path::new("/f")).unwrap();
        let copier = std::thread::spawn(move || {
            let mut out = vec![0u8; 1 << 20];
            loop {
                if let Err(e) = reader.read(&mut out) {
                    drop(reader);
                    return e;
                }
                reader.seek(SeekFrom::Start(0)).unwrap();
            }
        });
        // A guard against a hang, not a timing check: catching the reader mid-copy takes tens
        // of tries, so a minute without one means the test no longer arranges what it tests.
        let started = std::time::Instant::now();
        let mut tries = 0u64;
        loop {
            tries += 1;
            assert!(
                started.elapsed() < std::time::Duration::from_secs(60),
                "never caught the reader with a chunk pinned in 60 s ({tries} tries)"
            );
            let core = shared.core.lock().unwrap();
            if core.pinned_bytes() == 0 {
                drop(core);
                std::thread::yield_now();
                continue;
            }
            let port = shared.port.clone();
            let alarm = std::thread::spawn(move || {
                crate::backend::lifecycle::PanicAlarm(port)
                    .watch(|| panic!("a backend thread's bug, on purpose"))
            });
            // Bounded too: should the alarm never break the engine, the test fails rather than
            // spin for good holding the lock the reader waits for.
            let breaking = std::time::Instant::now();
            while !shared.is_broken() {
                if breaking.elapsed() >= PATIENCE {
                    drop(core);
                    panic!("the backend thread's panic never broke the engine");
                }
                std::thread::yield_now();
            }
            drop(core);
            assert!(alarm.join().is_err());
            break;
        }
        println!("caught the reader copying after {tries} tries");
        let e = copier.join().unwrap();
        assert!(
            e.to_string().contains("a backend thread's bug, on purpose"),
            "{e}"
        );
        assert_eq!(
            shared.lock_for_report().pinned_bytes(),
            0,
            "the broken read left its chunk pinned"
        );
        assert_eq!(
            engine.stats().memory_lent_bytes,
            0,
            "the closed reader's chunk is still lent"
        );
    }

    /// A reader whose read a policy panic ends (under the engine's lock, on the application's
    /// thread) breaks the engine for the other readers: one waiting for a chunk is woken and
    /// gets an error. Before, the panic poisoned the lock but woke no one, and that reader
    /// waited forever.
    #[test]
    fn a_policy_panic_in_one_reader_wakes_the_others_with_an_error() {
        /// Panics on the second read it is shown (the first reader's first read issues the
        /// fetch the second waits for), and holds that fetch: it is never completed, so the
        /// waiting reader can only be woken by the panic.
        struct PanicOnSecondRead(u32);
        impl foresight_policy::Policy for PanicOnSecondRead {
            fn name(&self) -> &str {
                "panic-on-second-read"
            }
            fn handle(&mut self, _now: Instant, input: foresight_policy::Input) {
                if let foresight_policy::Input::Read { .. } = input {
                    self.0 += 1;
                    if self.0 == 2 {
                        panic!("a policy bug, on purpose");
                    }
                }
            }
            fn poll_output(&mut self) -> Option<foresight_policy::Output> {
                None
            }
        }
        let noop = NoopBackend::new();
        noop.insert("/f", vec![8u8; 1 << 16]);
        noop.insert("/g", vec![9u8; 1 << 16]);
        // The first reader's read is held in the device for an hour.
        noop.inject(crate::Fault {
            path: "/f".into(),
            range: 0..(1 << 16),
            kind: crate::FaultKind::Delay(std::time::Duration::from_secs(3600)),
            times: None,
        });
        let engine = Engine::builder()
            .backend(Backend::Noop(noop.clone()))
            .wrap_policy(Box::new(|_| Box::new(PanicOnSecondRead(0))))
            .build()
            .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let mut first = engine.open("/f").unwrap();
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 4096];
            let _ = tx.send(first.read(&mut buf).map_err(|e| e.to_string()));
        });
        let until = std::time::Instant::now() + PATIENCE;
        while noop.delayed_for_tests() == 0 {
            assert!(
                std::time::Instant::now() < until,
                "the first read never reached the device"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_a_read_panics(engine.open("/g").unwrap(), "the policy");
        let got = rx.recv_timeout(PATIENCE);
        assert!(
            matches!(&got, Ok(Err(e)) if e.contains("the engine is broken")),
            "the waiting reader: {got:?} (a timeout: it hung)"
        );
        // The waiting reader's error names the panic, with no second call to the engine.
        assert!(
            matches!(&got, Ok(Err(e)) if e.contains("a policy bug, on purpose")),
            "the waiting reader's error does not name the panic: {got:?}"
        );
        drop(engine);
    }

    /// An engine dropped while a fetch is held in the device (here an injected hour-long delay)
    /// returns, and lets everything go: the backend delivers the held read at shutdown, and the
    /// last handle's drop joins its worker. Before, the worker held the read (its buffer, its
    /// file) for the hour.
    #[test]
    fn an_engine_dropped_with_a_fetch_held_in_the_device_lets_everything_go() {
        for _ in 0..10 {
            engine_dropped_with_a_fetch_held_in_the_device();
        }
    }

    fn engine_dropped_with_a_fetch_held_in_the_device() {
        let noop = NoopBackend::new();
        let len = 256 << 10;
        noop.insert("/f", vec![2u8; len]);
        noop.inject(crate::Fault {
            path: "/f".into(),
            range: (len as u64 / 2)..len as u64,
            kind: crate::FaultKind::Delay(std::time::Duration::from_secs(3600)),
            times: None,
        });
        let engine = Engine::builder()
            .backend(Backend::Noop(noop.clone()))
            .memory(ByteLen::mib(4))
            .policy("tip")
            .build()
            .unwrap();
        let state = Arc::downgrade(&engine.owner.shared);
        let device = noop.state_for_tests();
        let mut r = engine.open("/f").unwrap();
        // The second half is hinted, so `tip` fetches it ahead.
        let half = len as u64 / 2;
        r.hint(&[
            foresight_core::ByteRange::new(0, 4096),
            foresight_core::ByteRange::new(half, half),
        ])
        .unwrap();
        let mut buf = vec![0u8; 4096];
        r.read_exact(&mut buf).unwrap();
        // Wait until the device holds a fetch of the delayed half.
        let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while noop.delayed_for_tests() == 0 {
            assert!(
                std::time::Instant::now() < until,
                "no fetch reached the delayed half"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        drop(r);
        // The shutdown hands the held read over at once, on the device's worker, which then
        // holds the engine's state while it delivers: the drop waits for that delivery (it
        // closes the engine's completion port) and drops the state itself. Before, the worker
        // could hold the state past the drop, and drop it (with the engine's backend, which
        // cannot join the thread it runs on) itself.
        drop(engine);
        assert!(state.upgrade().is_none(), "the engine's state outlived it");
        drop(noop);
        assert!(
            device.upgrade().is_none(),
            "the device's worker outlived it"
        );
    }

    fn msp_engine(placement: crate::backend::emulated::EmulatedPlacement) -> Engine {
        let mut cfg = EmulatedConfig::preset("cheetah-15k4")
            .unwrap()
            .raid0(5, 128 << 10);
        cfg.placement = placement;
        Engine::builder()
            .policy("msp+saseqp")
            .readahead_max(ByteLen::kib(128))
            .backend(Backend::Emulated(cfg))
            .raid_cache(ByteLen::mib(64))
            .build()
            .unwrap()
    }

    /// Waits (at most a minute) until the engine has forgotten every file and the array cache
    /// every placement and page, and returns the array cache's figures then.
    fn settled(engine: &Engine) -> crate::backend::array::ArrayStats {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let a = engine.stats().array.expect("the array cache's figures");
            let idle = engine.files_remembered() == 0 && a.placed_files == 0 && a.held_bytes == 0;
            if idle || std::time::Instant::now() >= until {
                return a;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// Under contiguous placement every open of a file the engine does not know takes new
    /// volume space. Opened, read and closed two hundred times, the files leave the array cache
    /// as the engine forgets them: its table of placements and its pages go back to nothing.
    /// Before, it kept a placement (and a descriptor) per open and the pages of the last ones.
    #[test]
    fn an_array_cache_forgets_what_the_engine_forgets() {
        let dir = temp_dir("msp-forget");
        let paths: Vec<PathBuf> = (0..2).map(|i| dir.path().join(format!("f{i}"))).collect();
        for (i, p) in paths.iter().enumerate() {
            std::fs::write(p, vec![i as u8 + 1; 512 << 10]).unwrap();
        }
        let engine = msp_engine(crate::backend::emulated::EmulatedPlacement::Contiguous);
        let mut buf = vec![0u8; 192 << 10];
        for round in 0..200 {
            let k = round % 2;
            let mut r = engine.open(&paths[k]).unwrap();
            // Every other round a second reader of the same file: its open's placement is not
            // kept.
            let second = (round % 4 == 0).then(|| engine.open(&paths[k]).unwrap());
            r.read_exact(&mut buf).unwrap();
            assert!(buf.iter().all(|&b| b == k as u8 + 1), "round {round}");
            drop(second);
        }
        let a = settled(&engine);
        assert_eq!((a.placed_files, a.held_bytes), (0, 0), "{a:?}");
        assert!(a.fetches > 0, "{a:?}");
        drop(engine);
    }

    /// A file the engine forgot, rewritten in place with the same size and modification time
    /// (a rewrite within the file system's clock tick), opened again: under spread placement it
    /// gets the same id and place, and nothing tells it from the forgotten one but that the
    /// engine forgot that. Its reads get its new bytes; before, the array cache served the old
    /// ones it still held.
    #[test]
    fn a_file_rewritten_in_place_after_it_was_forgotten_reads_its_new_bytes() {
        let old: Vec<u8> = (0..(2u32 << 20)).map(|i| (i / 4096) as u8).collect();
        let new: Vec<u8> = old.iter().map(|b| b ^ 0x5a).collect();
        let (_dir, path) = temp_file("msp-rewrite", &old);
        let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
        let engine = msp_engine(crate::backend::emulated::EmulatedPlacement::Spread { slots: 4 });
        let mut got = Vec::new();
        engine.open(&path).unwrap().read_to_end(&mut got).unwrap();
        assert!(got == old);
        let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while engine.files_remembered() > 0 && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(engine.files_remembered(), 0);
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        std::io::Write::write_all(&mut &f, &new).unwrap();
        f.set_modified(modified).unwrap();
        drop(f);
        let mut got = Vec::new();
        engine.open(&path).unwrap().read_to_end(&mut got).unwrap();
        assert!(got == new, "the forgotten file's bytes");
        drop(engine);
    }

    /// An engine with an array cache dropped while the device and the array cache have reads in
    /// flight returns (the cache joins its delivery thread, which must not wait for the engine).
    #[test]
    fn an_engine_with_an_array_cache_drops_with_reads_in_flight() {
        let (_dir, path) = temp_file("msp-drop", &vec![3u8; 8 << 20]);
        for _ in 0..4 {
            let engine = msp_engine(crate::backend::emulated::EmulatedPlacement::Contiguous);
            let mut r = engine.open(&path).unwrap();
            let mut buf = vec![0u8; 640 << 10];
            r.read_exact(&mut buf).unwrap();
            drop(engine);
            drop(r);
        }
    }
}
