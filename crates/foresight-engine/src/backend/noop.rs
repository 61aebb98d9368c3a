//! The test backend: files held in memory, with faults injected on purpose.
//!
//! A [`NoopBackend`] is a cheap handle (clone it, give one clone to the engine builder and keep
//! one) to a table of in-memory files and a list of [`Fault`]s. One worker thread serves requests in
//! arrival order; a request that overlaps a fault's byte range suffers it: `Eio` fails it with
//! `EIO`, `Short` returns at most a given number of bytes (a transient short read, which the
//! driver must re-issue), `Delay` completes it later (the worker keeps a time-ordered heap of
//! delayed completions, so one slow read does not hold up the others), `Panic` ends the worker
//! in a panic, as a backend bug would. A fault fires a given number
//! of times or forever. [`NoopBackend::truncate`] shrinks a file while it is being read, the way
//! another process would. [`NoopBackend::place`] gives a file a place on a volume (its handles
//! then carry `volume_offset_bytes`), so a layer that works in volume bytes, the array cache,
//! can be tested over these faults. Nothing touches a disk, so tests of the driver's logic are
//! fast and exact.
//!
//! Shutdown and drop keep the lifecycle every backend keeps (`lifecycle.rs`): after shutdown the
//! worker fails each request it takes (queued then, or submitted later) and delivers the delayed
//! completions at once (the reads were done; only the fault held them); the worker ends when the
//! last clone of the handle is dropped, which joins it.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant};

use foresight_core::FileId;

use super::lifecycle::{refuse, Joined, PanicAlarm, Phase};
use super::{BackendKind, CompletionPort, FileHandle, IoBackend, IoCompletion, IoRequest};

/// What an injected fault does to a request that overlaps its range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// The read fails with `EIO`.
    Eio,
    /// The read returns at most this many bytes (at least one).
    Short {
        /// The most bytes returned.
        max_bytes: usize,
    },
    /// The read completes this much later.
    Delay(Duration),
    /// The backend's worker thread panics as it takes the read, and ends with every read it
    /// held: a backend bug, for tests that the engine breaks (every reader gets an error)
    /// rather than leave readers waiting.
    Panic,
}

/// A fault on a byte range of one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    /// The file, as given to [`NoopBackend::insert`].
    pub path: PathBuf,
    /// File bytes a request must overlap to suffer the fault.
    pub range: Range<u64>,
    /// What happens.
    pub kind: FaultKind,
    /// How many more times it fires; `None` for always.
    pub times: Option<u32>,
}

type Data = Arc<RwLock<Vec<u8>>>;

struct Work {
    requests: VecDeque<IoRequest>,
    delayed: BinaryHeap<Reverse<(Instant, u64)>>,
    delayed_done: BTreeMap<u64, IoCompletion>,
    next_delay_id: u64,
    phase: Phase,
}

struct Shared {
    files: Mutex<BTreeMap<PathBuf, (u64, Data)>>,
    placements: Mutex<BTreeMap<PathBuf, u64>>,
    faults: Mutex<Vec<Fault>>,
    work: Mutex<Work>,
    ready: Condvar,
    port: OnceLock<Arc<CompletionPort>>,
    capacity: OnceLock<usize>,
    reads: Mutex<u64>,
    next_ino: AtomicU64,
    /// The worker, joined when the last handle goes.
    threads: Joined,
}

impl Shared {
    /// Moves the backend forward to `to`, and wakes the worker to see it.
    fn enter(&self, to: Phase) {
        self.work
            .lock()
            .expect("noop work poisoned")
            .phase
            .advance(to);
        self.ready.notify_all();
    }
}

/// In-memory files with injectable faults. See the module documentation.
#[derive(Clone)]
pub struct NoopBackend {
    shared: Arc<Shared>,
    /// Shared by every clone: the last one dropped ends and joins the worker.
    _last: Arc<LastHandle>,
}

/// Ends the worker when the last [`NoopBackend`] handle goes (the worker holds `Shared`, not a
/// handle, so this is the handles' own count).
struct LastHandle(Arc<Shared>);

impl Drop for LastHandle {
    fn drop(&mut self) {
        self.0.enter(Phase::Ending);
        self.0.threads.join();
    }
}

impl Default for NoopBackend {
    fn default() -> Self {
        NoopBackend::new()
    }
}

impl std::fmt::Debug for NoopBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NoopBackend")
    }
}

impl NoopBackend {
    /// A backend with no files and no faults. It starts serving when an engine is built on it.
    pub fn new() -> NoopBackend {
        let shared = Arc::new(Shared {
            files: Mutex::new(BTreeMap::new()),
            placements: Mutex::new(BTreeMap::new()),
            faults: Mutex::new(Vec::new()),
            work: Mutex::new(Work {
                requests: VecDeque::new(),
                delayed: BinaryHeap::new(),
                delayed_done: BTreeMap::new(),
                next_delay_id: 0,
                phase: Phase::Running,
            }),
            ready: Condvar::new(),
            port: OnceLock::new(),
            capacity: OnceLock::new(),
            reads: Mutex::new(0),
            next_ino: AtomicU64::new(0),
            threads: Joined::default(),
        });
        NoopBackend {
            _last: Arc::new(LastHandle(shared.clone())),
            shared,
        }
    }

    /// Adds (or replaces) a file at `path` with the given contents.
    pub fn insert(&self, path: impl AsRef<Path>, bytes: Vec<u8>) {
        let mut files = self.shared.files.lock().expect("noop files poisoned");
        // Every insert is a new file to the engine, as a new inode would be.
        let ino = self.shared.next_ino.fetch_add(1, Ordering::Relaxed);
        files.insert(
            path.as_ref().to_path_buf(),
            (ino, Arc::new(RwLock::new(bytes))),
        );
    }

    /// Shrinks the file at `path` to `len` bytes, as if another process truncated it.
    pub fn truncate(&self, path: impl AsRef<Path>, len: u64) {
        let files = self.shared.files.lock().expect("noop files poisoned");
        if let Some((_, d)) = files.get(path.as_ref()) {
            d.write()
                .expect("noop file poisoned")
                .truncate(len as usize);
        }
    }

    /// Places the file at `path` at `volume_offset_bytes` of a volume: handles opened from now on
    /// say so. The backend models no volume and reads no differently; placements may overlap.
    pub fn place(&self, path: impl AsRef<Path>, volume_offset_bytes: u64) {
        self.shared
            .placements
            .lock()
            .expect("noop placements poisoned")
            .insert(path.as_ref().to_path_buf(), volume_offset_bytes);
    }

    /// Adds a fault.
    pub fn inject(&self, fault: Fault) {
        if let FaultKind::Short { max_bytes } = fault.kind {
            assert!(max_bytes >= 1, "a short read returns at least one byte");
        }
        self.shared
            .faults
            .lock()
            .expect("noop faults poisoned")
            .push(fault);
    }

    /// Removes every fault.
    pub fn clear_faults(&self) {
        self.shared
            .faults
            .lock()
            .expect("noop faults poisoned")
            .clear();
    }

    /// Reads served so far (for tests that check how many reads a scenario cost).
    pub fn reads(&self) -> u64 {
        *self.shared.reads.lock().expect("noop counter poisoned")
    }

    /// The backend's state, as the worker holds it: gone once the worker has ended and every
    /// handle is dropped.
    #[cfg(test)]
    pub(crate) fn state_for_tests(&self) -> std::sync::Weak<dyn std::any::Any + Send + Sync> {
        let state: Arc<dyn std::any::Any + Send + Sync> = self.shared.clone();
        Arc::downgrade(&state)
    }

    /// Reads an injected delay holds now.
    #[cfg(test)]
    pub(crate) fn delayed_for_tests(&self) -> usize {
        self.shared
            .work
            .lock()
            .expect("noop work poisoned")
            .delayed
            .len()
    }

    /// Starts the worker thread; called once by the engine builder.
    pub(crate) fn start(&self, capacity: usize, port: Arc<CompletionPort>) -> io::Result<()> {
        assert!(capacity >= 1, "a backend needs room for one request");
        let alarm = PanicAlarm(port.clone());
        if self.shared.port.set(port).is_err() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                "this NoopBackend already serves an engine; make a new one",
            ));
        }
        let _ = self.shared.capacity.set(capacity);
        let s = self.shared.clone();
        let t = std::thread::Builder::new()
            .name("foresight-noop".into())
            .spawn(move || alarm.watch(|| worker(&s)))?;
        self.shared.threads.push(t);
        Ok(())
    }
}

/// Which fault, if any, a request suffers; counts it.
fn take_fault(s: &Shared, path: &Path, range: Range<u64>) -> Option<FaultKind> {
    let mut faults = s.faults.lock().expect("noop faults poisoned");
    let hit = faults.iter_mut().find(|f| {
        f.path == path
            && f.range.start < range.end
            && range.start < f.range.end
            && f.times != Some(0)
    })?;
    if let Some(t) = hit.times.as_mut() {
        *t -= 1;
    }
    Some(hit.kind)
}

fn perform(s: &Shared, mut req: IoRequest, fault: Option<FaultKind>) -> IoCompletion {
    *s.reads.lock().expect("noop counter poisoned") += 1;
    let data = s
        .files
        .lock()
        .expect("noop files poisoned")
        .get(&req.file.path)
        .map(|(_, d)| d.clone());
    let result = match (data, fault) {
        (None, _) => Err(io::Error::from_raw_os_error(libc::ENOENT)),
        (Some(_), Some(FaultKind::Eio)) => Err(io::Error::from_raw_os_error(libc::EIO)),
        (Some(d), fault) => {
            let d = d.read().expect("noop file poisoned");
            let start = (req.offset_bytes as usize).min(d.len());
            let mut n = req.len_bytes.min(d.len() - start);
            if let Some(FaultKind::Short { max_bytes }) = fault {
                n = n.min(max_bytes);
            }
            req.buf.as_mut_slice()[req.buf_offset..req.buf_offset + n]
                .copy_from_slice(&d[start..start + n]);
            Ok(n)
        }
    };
    IoCompletion {
        token: req.token,
        buf: req.buf,
        result,
    }
}

fn worker(s: &Shared) {
    let port = s.port.get().expect("started with a port").clone();
    loop {
        let mut ready: Vec<IoCompletion> = Vec::new();
        let mut todo: Vec<IoRequest> = Vec::new();
        {
            let mut w = s.work.lock().expect("noop work poisoned");
            loop {
                let now = Instant::now();
                let running = w.phase.running();
                while let Some(Reverse((due, id))) = w.delayed.peek().copied() {
                    // Shut down, a delayed read is delivered at once: it was done, and only
                    // the fault held it.
                    if due > now && running {
                        break;
                    }
                    w.delayed.pop();
                    ready.push(w.delayed_done.remove(&id).expect("delayed completion kept"));
                }
                if running {
                    todo.extend(w.requests.drain(..));
                } else {
                    ready.extend(w.requests.drain(..).map(|r| refuse(r, BackendKind::Noop)));
                }
                if !ready.is_empty() || !todo.is_empty() {
                    break;
                }
                if w.phase == Phase::Ending && w.delayed.is_empty() {
                    return;
                }
                w = match w.delayed.peek() {
                    Some(Reverse((due, _))) => {
                        let wait = due.saturating_duration_since(now);
                        s.ready.wait_timeout(w, wait).expect("noop work poisoned").0
                    }
                    None => s.ready.wait(w).expect("noop work poisoned"),
                };
            }
        }
        for req in todo {
            let range = req.offset_bytes..req.offset_bytes + req.len_bytes as u64;
            let fault = take_fault(s, &req.file.path, range);
            if fault == Some(FaultKind::Panic) {
                panic!("an injected panic of the noop backend's worker, on purpose");
            }
            let c = perform(s, req, fault);
            match fault {
                Some(FaultKind::Delay(d)) => {
                    let mut w = s.work.lock().expect("noop work poisoned");
                    let id = w.next_delay_id;
                    w.next_delay_id += 1;
                    w.delayed.push(Reverse((Instant::now() + d, id)));
                    w.delayed_done.insert(id, c);
                }
                _ => ready.push(c),
            }
        }
        for c in ready {
            port.deliver(c);
        }
    }
}

impl IoBackend for NoopBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Noop
    }

    fn open(&self, path: &Path, id: FileId, _direct: bool) -> io::Result<FileHandle> {
        let files = self.shared.files.lock().expect("noop files poisoned");
        let (ino, data) = files
            .get(path)
            .ok_or_else(|| io::Error::from_raw_os_error(libc::ENOENT))?;
        let size_bytes = data.read().expect("noop file poisoned").len() as u64;
        let volume_offset_bytes = self
            .shared
            .placements
            .lock()
            .expect("noop placements poisoned")
            .get(path)
            .copied();
        Ok(FileHandle {
            id,
            path: path.to_path_buf(),
            file: None,
            direct: false,
            size_bytes,
            identity: (u64::MAX, *ino),
            modified: None,
            volume_offset_bytes,
        })
    }

    fn capacity(&self) -> usize {
        *self.shared.capacity.get().expect("started")
    }

    fn submit(&self, batch: &mut Vec<IoRequest>) {
        if batch.is_empty() {
            return;
        }
        {
            let mut w = self.shared.work.lock().expect("noop work poisoned");
            let cap = *self.shared.capacity.get().expect("started");
            assert!(
                w.requests.len() + batch.len() <= cap,
                "noop backend over its bound of {cap} requests"
            );
            for r in batch.drain(..) {
                r.assert_valid();
                w.requests.push_back(r);
            }
        }
        self.shared.ready.notify_all();
    }

    fn shutdown(&self) {
        self.shared.enter(Phase::Shut);
    }
}

#[cfg(test)]
mod tests {
    use super::super::lifecycle::testing::{
        assert_refused_after_shutdown, page_read, race_submits_with_shutdown, Collect, FILE,
        PATIENCE,
    };
    use super::*;
    use crate::buffer::ALIGN_BYTES;

    /// A started backend over one file of four pages at `/f` (byte `i` is `i % 251`, as in a
    /// [`pattern_file`](super::super::lifecycle::testing::pattern_file)), delivering to `port`, and
    /// its handle.
    fn started(port: Arc<CompletionPort>) -> (NoopBackend, Arc<FileHandle>) {
        started_with(4, port)
    }

    /// As [`started`], with a file of `pages` pages and room for as many requests.
    fn started_with(pages: usize, port: Arc<CompletionPort>) -> (NoopBackend, Arc<FileHandle>) {
        let noop = NoopBackend::new();
        noop.insert(
            "/f",
            (0..pages * ALIGN_BYTES).map(|i| (i % 251) as u8).collect(),
        );
        noop.start(pages, port).unwrap();
        let f = Arc::new(noop.open(Path::new("/f"), FILE, false).unwrap());
        (noop, f)
    }

    /// A request submitted after shutdown completes with an error the driver sees. Before, the
    /// worker ended at shutdown once it held no delayed read, and it never completed.
    #[test]
    fn a_request_after_shutdown_gets_an_error() {
        // The file on disk goes unread: the backend serves its own, in memory.
        let start = |port, _: &Path| Some(started(port));
        // A worker that would end at shutdown (it holds no delayed read) holds the shared state.
        assert_refused_after_shutdown("noop-after", start, |b| Arc::strong_count(&b.shared) > 1);
    }

    /// A read an injected delay holds (here an hour) is delivered at shutdown, with its bytes:
    /// dropping the backend waits for its reads. Before, the worker held it for the hour.
    #[test]
    fn a_delayed_read_is_delivered_at_shutdown() {
        let (got, port) = Collect::port(Duration::ZERO);
        let (noop, f) = started(port);
        noop.inject(Fault {
            path: "/f".into(),
            range: 0..1,
            kind: FaultKind::Delay(Duration::from_secs(3600)),
            times: None,
        });
        noop.submit(&mut vec![page_read(1, &f, 0)]);
        // The worker has taken it once the queue is empty (then it reads and holds it).
        crate::testutil::wait_until("the worker to take the read", || {
            noop.shared.work.lock().unwrap().requests.is_empty()
        });
        noop.shutdown();
        let done = got.take_within(1, PATIENCE);
        assert_eq!(done.len(), 1, "the delayed read was not delivered");
        assert_eq!(done[0].result.as_ref().ok(), Some(&ALIGN_BYTES));
    }

    /// Dropping the last handle joins the worker, so what it held is delivered (its buffer and
    /// handle let go) by the time the drop returns; here a sink that takes its time. Before, the
    /// worker was left to run on, and the drop returned first.
    #[test]
    fn dropping_the_last_handle_joins_the_worker() {
        let (got, port) = Collect::port(Duration::from_millis(300));
        let (noop, f) = started(port);
        let other = noop.clone();
        noop.submit(&mut vec![page_read(1, &f, 0), page_read(2, &f, 1)]);
        drop(noop);
        // Another handle still serves.
        other.submit(&mut vec![page_read(3, &f, 2)]);
        drop(other);
        let mut tokens = got.tokens();
        tokens.sort_unstable();
        assert_eq!(tokens, vec![1, 2, 3]);
        assert_eq!(Arc::strong_count(&f), 1, "a request outlived the backend");
    }

    /// Reads submitted on one thread while another shuts the backend down each come back
    /// once, read or refused, by the time the last handle's drop returns, however the two
    /// interleave.
    #[test]
    fn reads_racing_a_shutdown_each_complete_once() {
        race_submits_with_shutdown("noop", 300, 16, &|port| {
            let (noop, f) = started_with(16, port);
            (Box::new(noop), f)
        });
    }
}
