//! How a backend stops: shut down first, then its threads joined when it is dropped.
//!
//! Every backend but the array cache's layer does its I/O on threads of its own, and all of them
//! keep one lifecycle, in the [`Phase`]s here. [`IoBackend::shutdown`](super::IoBackend::shutdown)
//! moves a backend to [`Phase::Shut`]: a request it has not started by then (queued behind its
//! bound, or submitted later) completes with the error [`shut_down`] makes, and reads already
//! started (in the kernel, in a `pread`, in a modelled device) complete as they come. The error
//! is delivered by the backend's own thread, never on the submitter's: the driver submits under
//! its lock, and its completion handler takes that lock. So the threads outlive the shutdown,
//! and end only when the backend is dropped ([`Phase::Ending`]), once they have delivered what
//! they hold; the drop then joins them ([`Joined`]), so no thread of a dropped backend runs on,
//! and no buffer or descriptor of a request it held outlives it. The one thread a drop cannot
//! join is the one it runs on: a backend thread delivering a completion can hold the engine's
//! last reference, and so drop the engine and its backend; that thread ends once the drop returns.
//! Nor does a drop wait without end for a thread stuck in a blocking read, which nothing can
//! cancel, or for a ring thread waiting for a read the kernel did not cancel: past
//! [`STUCK_READ_GRACE`] it leaves the thread detached, owning its request (or the ring and the
//! requests the kernel holds).

use std::io;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::{BackendKind, CompletionPort, IoCompletion, IoRequest};

/// Where a backend is in its life; it only moves forward.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Phase {
    /// Taking and performing requests.
    Running,
    /// Shut down: requests not started fail; started ones complete as they come.
    Shut,
    /// Dropped: shut down, and the threads end once they hold nothing more to deliver.
    Ending,
}

impl Phase {
    /// Moves forward to `to` (never back); says whether it moved.
    pub(crate) fn advance(&mut self, to: Phase) -> bool {
        let moved = to > *self;
        *self = (*self).max(to);
        moved
    }

    /// Whether a request may still be started.
    pub(crate) fn running(self) -> bool {
        self == Phase::Running
    }
}

/// The error a request gets that a shut-down backend did not perform.
pub(crate) fn shut_down(kind: BackendKind) -> io::Error {
    io::Error::other(format!(
        "the {kind} backend was shut down: it starts no more reads"
    ))
}

/// `req`, refused by a shut-down backend of kind `kind`: its buffer goes back with the error.
pub(crate) fn refuse(req: IoRequest, kind: BackendKind) -> IoCompletion {
    IoCompletion {
        token: req.token,
        buf: req.buf,
        result: Err(shut_down(kind)),
    }
}

/// Watches the whole life of every backend thread ([`PanicAlarm::watch`]): if the thread
/// unwinds (a panic in the sink it delivered to, or in the backend's own code), the port hears
/// so, with the panic's message ([`CompletionPort::backend_panicked`]), as the thread ends. The
/// reads the thread held then never complete, and a reader waiting for one would wait forever;
/// the engine breaks instead, and every reader gets an error.
pub(crate) struct PanicAlarm(pub(crate) Arc<CompletionPort>);

impl PanicAlarm {
    /// Runs `work`, the thread's whole life. A panic out of it is caught, told to the port with
    /// its message (`panic_note.rs`: the payload gives it, whatever panic hook the process has),
    /// and goes on unwinding, so the thread ends as it would have.
    pub(crate) fn watch<R>(self, work: impl FnOnce() -> R) -> R {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)) {
            Ok(r) => r,
            Err(payload) => {
                self.0
                    .backend_panicked(&crate::panic_note::note(payload.as_ref()));
                std::panic::resume_unwind(payload)
            }
        }
    }
}

/// How long a dropped backend whose threads perform blocking reads (the thread pool, the
/// emulated backend's pool) or wait for the kernel's (the io_uring ring thread) waits for them
/// to end. A `pread` stuck in the kernel (a file on a
/// hung network mount) cannot be cancelled, and used to hold the drop, and so the engine's, for
/// as long; past this the thread is left to end on its own (see [`Joined::join_within`]). A
/// read this slow is not one anyone waits for any more.
pub(crate) const STUCK_READ_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

/// The threads a backend started, joined by [`Joined::join`] (the backend's drop).
#[derive(Default)]
pub(crate) struct Joined {
    handles: Mutex<Vec<JoinHandle<()>>>,
}

impl Joined {
    /// Keeps `h` to join.
    pub(crate) fn push(&self, h: JoinHandle<()>) {
        self.handles.lock().expect("thread list poisoned").push(h);
    }

    /// As [`Joined::join`], but waits at most `grace` for the threads to end (polling, since
    /// std has no join with a timeout): one still running then is left detached, to end on its
    /// own, and counted in the return. Only for threads that own everything they touch (the
    /// request they perform: its buffer, and its file, whose descriptor stays open, so its
    /// number cannot be given to another file, until the thread lets the request go).
    pub(crate) fn join_within(&self, grace: std::time::Duration) -> usize {
        let handles = std::mem::take(&mut *self.handles.lock().expect("thread list poisoned"));
        let me = std::thread::current().id();
        let until = std::time::Instant::now() + grace;
        let mut detached = 0;
        for h in handles {
            if h.thread().id() == me {
                continue;
            }
            while !h.is_finished() && std::time::Instant::now() < until {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            if h.is_finished() {
                // A panic there was reported on that thread already.
                let _ = h.join();
            } else {
                detached += 1;
            }
        }
        detached
    }

    /// Joins every thread kept but the calling one (a drop that runs on a backend thread; that
    /// thread ends once the drop returns). The list is let go before joining, so a thread that
    /// ends by dropping the backend does not wait for it. Idempotent.
    pub(crate) fn join(&self) {
        let handles = std::mem::take(&mut *self.handles.lock().expect("thread list poisoned"));
        let me = std::thread::current().id();
        for h in handles {
            if h.thread().id() != me {
                // A panic there was reported on that thread already.
                let _ = h.join();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_phase_never_moves_back() {
        let mut p = Phase::Running;
        assert!(p.running());
        assert!(p.advance(Phase::Ending));
        assert!(!p.advance(Phase::Shut));
        assert_eq!(p, Phase::Ending);
        assert!(!p.running());
    }

    /// A drop that runs on a backend thread joins the others but not itself (joining itself
    /// would panic or wait forever).
    #[test]
    fn join_skips_the_calling_thread() {
        use std::sync::{mpsc, Arc};
        let joined = Arc::new(Joined::default());
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let j = joined.clone();
        joined.push(std::thread::spawn(move || {
            go_rx.recv().unwrap();
            // Its own handle is in the list: the join skips it and returns.
            j.join();
            done_tx.send(()).unwrap();
        }));
        go_tx.send(()).unwrap();
        done_rx
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("the thread's join returned");
    }
}

/// What the lifecycle tests of every backend share: a sink that collects completions, with an
/// optional pause in each, and a request over a temporary file.
#[cfg(test)]
pub(crate) mod testing {
    use std::path::{Path, PathBuf};
    use std::sync::{Arc, Condvar, Mutex};
    use std::time::Duration;

    use foresight_core::FileId;

    use super::super::{
        CompletionPort, CompletionSink, FileHandle, IoBackend, IoCompletion, IoRequest,
    };
    use crate::buffer::{AlignedBuf, ALIGN_BYTES};

    /// Collects completions; pauses `pause` in each before keeping it, so that a drop that does
    /// not join the delivering thread returns before the completion is kept.
    #[derive(Default)]
    pub(crate) struct Collect {
        pub(crate) pause: Duration,
        got: Mutex<Vec<IoCompletion>>,
        arrived: Condvar,
        /// Backend threads that told the sink they ended in a panic.
        panics: Mutex<usize>,
    }

    impl CompletionSink for Collect {
        fn complete(&self, c: IoCompletion) {
            std::thread::sleep(self.pause);
            self.got.lock().unwrap().push(c);
            self.arrived.notify_all();
        }

        fn backend_panicked(&self, _why: &str) {
            *self.panics.lock().unwrap_or_else(|p| p.into_inner()) += 1;
            self.arrived.notify_all();
        }
    }

    impl Collect {
        /// A collector pausing `pause` per completion, and a port connected to it.
        pub(crate) fn port(pause: Duration) -> (Arc<Collect>, Arc<CompletionPort>) {
            let c = Arc::new(Collect {
                pause,
                ..Collect::default()
            });
            let port = CompletionPort::new();
            let sink: Arc<dyn CompletionSink> = c.clone();
            port.connect(Arc::downgrade(&sink));
            // The port holds the sink weakly: the caller keeps `c`.
            (c, port)
        }

        /// Takes what arrived once `n` completions have, however long that takes.
        pub(crate) fn take(&self, n: usize) -> Vec<IoCompletion> {
            let mut got = self.got.lock().unwrap();
            while got.len() < n {
                got = self.arrived.wait(got).unwrap();
            }
            std::mem::take(&mut *got)
        }

        /// Takes what arrived once `n` completions have, or `patience` has passed (a test of
        /// something that used to hang fails rather than hanging).
        pub(crate) fn take_within(&self, n: usize, patience: Duration) -> Vec<IoCompletion> {
            let until = std::time::Instant::now() + patience;
            let mut got = self.got.lock().unwrap();
            while got.len() < n {
                let now = std::time::Instant::now();
                if now >= until {
                    break;
                }
                got = self.arrived.wait_timeout(got, until - now).unwrap().0;
            }
            std::mem::take(&mut *got)
        }

        /// Whether a backend thread told the sink it ended in a panic, waiting for that at most
        /// `patience`.
        pub(crate) fn heard_a_panic_within(&self, patience: Duration) -> bool {
            let until = std::time::Instant::now() + patience;
            let mut n = self.panics.lock().unwrap();
            while *n == 0 {
                let now = std::time::Instant::now();
                if now >= until {
                    return false;
                }
                n = self.arrived.wait_timeout(n, until - now).unwrap().0;
            }
            true
        }

        /// The tokens of what arrived so far, left in place.
        pub(crate) fn tokens(&self) -> Vec<u64> {
            self.got.lock().unwrap().iter().map(|c| c.token).collect()
        }
    }

    /// Lets a test see a delivery begin, then holds it 300 ms before keeping the token: a test
    /// can act while a delivery is under way on another thread.
    #[derive(Default)]
    pub(crate) struct Held {
        entered: Mutex<bool>,
        entering: Condvar,
        tokens: Mutex<Vec<u64>>,
    }

    impl CompletionSink for Held {
        fn complete(&self, c: IoCompletion) {
            *self.entered.lock().unwrap() = true;
            self.entering.notify_all();
            std::thread::sleep(Duration::from_millis(300));
            self.tokens.lock().unwrap().push(c.token);
        }
    }

    impl Held {
        /// A sink and a port connected to it; the port holds it weakly, the caller keeps it.
        pub(crate) fn port() -> (Arc<Held>, Arc<CompletionPort>) {
            let held = Arc::new(Held::default());
            let port = CompletionPort::new();
            let sink: Arc<dyn CompletionSink> = held.clone();
            port.connect(Arc::downgrade(&sink));
            (held, port)
        }

        /// Waits until a delivery has begun; panics if none has within
        /// [`crate::testutil::HANG_GUARD`], so a delivery that never comes fails the test
        /// instead of hanging it.
        pub(crate) fn wait_entered(&self) {
            let guard = crate::testutil::HANG_GUARD;
            let (entered, _) = self
                .entering
                .wait_timeout_while(self.entered.lock().unwrap(), guard, |e| !*e)
                .unwrap();
            assert!(
                *entered,
                "gave up after {} s waiting for a delivery to begin: the test hangs",
                guard.as_secs()
            );
        }

        /// The tokens of the deliveries that have ended, in the order they ended.
        pub(crate) fn tokens(&self) -> Vec<u64> {
            self.tokens.lock().unwrap().clone()
        }
    }

    /// A file of `len` bytes (byte `i` is `i % 251`) in a temporary directory of its own (see
    /// [`crate::testutil::temp_file`]): the directory's guard and the file's path.
    pub(crate) fn pattern_file(name: &str, len: usize) -> (tempfile::TempDir, PathBuf) {
        let bytes: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        crate::testutil::temp_file(&format!("lifecycle-{name}"), &bytes)
    }

    /// `b`, and the file at `path` opened on it as [`FILE`].
    pub(crate) fn opened<B: IoBackend>(b: B, path: &Path) -> (B, Arc<FileHandle>) {
        let f = Arc::new(b.open(path, FILE, false).unwrap());
        (b, f)
    }

    /// A read of one page at page `page` of `file`.
    pub(crate) fn page_read(token: u64, file: &Arc<FileHandle>, page: u64) -> IoRequest {
        IoRequest {
            token,
            file: file.clone(),
            offset_bytes: page * ALIGN_BYTES as u64,
            buf: AlignedBuf::new(ALIGN_BYTES).unwrap(),
            buf_offset: 0,
            len_bytes: ALIGN_BYTES,
            reader: None,
        }
    }

    /// A file whose reads wait in the kernel until something else happens, as a `pread` on a
    /// hung network mount does: `/dev/kmsg` read past its last record, which a read waits on
    /// until the kernel logs its next message (the offset a read asks for is ignored). `None`
    /// (and why, on stderr) where it cannot be opened (reading the kernel's log takes a
    /// privilege many systems keep to the administrator), or is not the kernel's log device
    /// (character device 1:11): a container may put `/dev/null` there, whose reads end at once,
    /// and the test would pass without a read ever being stuck. The test that asked is skipped.
    ///
    /// What the kernel logs while the test runs (any process's messages, another test's, the
    /// kernel's own) can end the read: the test would then pass without a read that stayed
    /// stuck. So the file comes with a watch on the log opened just before it
    /// ([`StuckFile::logged_since`]), and [`on_a_stuck_read`] accepts a test's run only if too
    /// little was logged during it to end the read.
    pub(crate) fn stuck_file(test: &str) -> Option<StuckFile> {
        use std::io::Seek;
        use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
        let at_end = |nonblocking: bool| {
            std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(if nonblocking { libc::O_NONBLOCK } else { 0 })
                .open("/dev/kmsg")
                .and_then(|mut f| f.seek(std::io::SeekFrom::End(0)).map(|_| f))
        };
        // The watch first: whatever is logged once the stuck file is open, it sees too.
        let opened = at_end(true).and_then(|watch| at_end(false).map(|f| (watch, f)));
        let (watch, f) = match opened {
            Ok(both) => both,
            Err(e) => {
                eprintln!("{test}: skipped: /dev/kmsg cannot be read here ({e})");
                return None;
            }
        };
        let kmsg = f
            .metadata()
            .is_ok_and(|m| m.file_type().is_char_device() && m.rdev() == kmsg_device_number());
        if !kmsg {
            eprintln!("{test}: skipped: /dev/kmsg here is not the kernel's log device (1:11)");
            return None;
        }
        let file = Arc::new(FileHandle {
            id: FILE,
            path: PathBuf::from("/dev/kmsg"),
            file: Some(f),
            direct: false,
            size_bytes: 1 << 30,
            identity: (0, 0),
            modified: None,
            volume_offset_bytes: Some(0),
        });
        Some(StuckFile { file, watch })
    }

    /// A [`stuck_file`] and a non-blocking reader of the kernel's log opened at its end just
    /// before it.
    pub(crate) struct StuckFile {
        pub(crate) file: Arc<FileHandle>,
        watch: std::fs::File,
    }

    impl StuckFile {
        /// What the kernel logged since the file was opened: the bytes of its records, as a
        /// reader of the log gets them, and the first record. A log that could not be read to
        /// its end (records overwritten before the watch read them) counts as a full page.
        pub(crate) fn logged_since(&self) -> Logged {
            use std::io::Read;
            let mut logged = Logged::default();
            let mut record = vec![0u8; 8192];
            loop {
                match (&self.watch).read(&mut record) {
                    Ok(0) => return logged,
                    Ok(n) => {
                        logged.bytes += n;
                        logged.first.get_or_insert_with(|| {
                            let text = String::from_utf8_lossy(&record[..n]);
                            text.trim_end().chars().take(120).collect()
                        });
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return logged,
                    Err(e) => {
                        logged.bytes += ALIGN_BYTES;
                        logged
                            .first
                            .get_or_insert(format!("(the log could not be read: {e})"));
                        return logged;
                    }
                }
            }
        }
    }

    /// What [`StuckFile::logged_since`] found.
    #[derive(Default)]
    pub(crate) struct Logged {
        pub(crate) bytes: usize,
        pub(crate) first: Option<String>,
    }

    /// What one run of a stuck-read test saw, right after the drop it tests returned.
    pub(crate) struct StuckRun {
        /// The drop returned (within [`drop_returns`]'s patience).
        pub(crate) drop_returned: bool,
        /// The read was still under way: its request (and so its file) was still held, and it
        /// had not been delivered.
        pub(crate) read_held: bool,
    }

    /// How many times [`on_a_stuck_read`] runs a test whose runs the kernel's log spoils before
    /// it skips the test.
    const STUCK_RUNS: usize = 3;

    /// Runs `run` on a fresh [`stuck_file`] until a run cannot have seen its read ended by the
    /// kernel's log, at most [`STUCK_RUNS`] times. Each stuck read is a page or more, and
    /// `pread_full` reads record after record into it until it is full or a record does not
    /// fit: the read can have ended only if the records logged meanwhile add up to a page. A
    /// drop that did not return fails the test whatever was logged (a record would only have
    /// ended the read sooner). A run with less than a page logged must have left the read
    /// stuck, held by its detached thread: it passes only then. A run with more proves nothing
    /// (the records may have ended the read before the drop), and is run again; if each is,
    /// the test is skipped, saying so.
    pub(crate) fn on_a_stuck_read(test: &str, mut run: impl FnMut(&Arc<FileHandle>) -> StuckRun) {
        let mut last = Logged::default();
        for _ in 0..STUCK_RUNS {
            let Some(stuck) = stuck_file(test) else {
                return;
            };
            let seen = run(&stuck.file);
            assert!(
                seen.drop_returned,
                "{test}: the drop waited for a stuck read"
            );
            let logged = stuck.logged_since();
            if logged.bytes < ALIGN_BYTES {
                assert!(
                    seen.read_held,
                    "{test}: {} bytes were logged, too few to end the read, yet the drop let it \
                     go (its file released, or its completion delivered)",
                    logged.bytes
                );
                return;
            }
            last = logged;
        }
        eprintln!(
            "{test}: skipped: the kernel logged a page or more during each of {STUCK_RUNS} runs \
             ({} bytes in the last, from {:?}), which can end the read meant to stay stuck",
            last.bytes,
            last.first.unwrap_or_default()
        );
    }

    /// The device number of the kernel's log device, character device 1:11 (Linux's memory
    /// devices, `kmsg`).
    fn kmsg_device_number() -> u64 {
        libc::makedev(1, 11)
    }

    /// Drops `b` on a thread of its own and says whether the drop returned within
    /// [`PATIENCE`] past two graces (a backend over another may wait for each; a drop that
    /// waits forever fails the test rather than hang it).
    pub(crate) fn drop_returns<B: Send + 'static>(b: B) -> bool {
        let patience = PATIENCE + 2 * super::STUCK_READ_GRACE;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            drop(b);
            let _ = tx.send(());
        });
        rx.recv_timeout(patience).is_ok()
    }

    /// Whether `c` failed because its backend was shut down.
    pub(crate) fn refused(c: &IoCompletion) -> bool {
        matches!(&c.result, Err(e) if e.to_string().contains("shut down"))
    }

    /// Asserts `c` read page `page` of a [`pattern_file`] whole.
    pub(crate) fn assert_read(c: &IoCompletion, page: u64) {
        assert_eq!(
            c.result.as_ref().ok(),
            Some(&ALIGN_BYTES),
            "read {}",
            c.token
        );
        let at = page as usize * ALIGN_BYTES;
        assert!(c.buf.as_slice()[..ALIGN_BYTES]
            .iter()
            .enumerate()
            .all(|(i, &b)| b == ((at + i) % 251) as u8));
    }

    /// How long a lifecycle test waits for a completion before it calls it lost.
    pub(crate) const PATIENCE: Duration = Duration::from_secs(30);

    /// Starts a backend with `start` (delivering to the port it is given, reading the path of
    /// a [`pattern_file`] of four pages named `name`) and hands it, the [`Collect`] behind its port
    /// (pausing `pause` per completion) and its file to `check`; removes the file after. Where
    /// `start` gives `None` (the backend is refused on this machine) the test is skipped.
    fn with_started<B>(
        name: &str,
        pause: Duration,
        start: impl FnOnce(Arc<CompletionPort>, &Path) -> Option<(B, Arc<FileHandle>)>,
        check: impl FnOnce(B, &Collect, &Arc<FileHandle>),
    ) {
        let (_dir, path) = pattern_file(name, 4 * ALIGN_BYTES);
        let (got, port) = Collect::port(pause);
        if let Some((b, file)) = start(port, &path) {
            check(b, &got, &file);
        }
    }

    /// A request submitted after shutdown completes with the shut-down error, on a backend
    /// from `start` (as [`with_started`] takes it) that has served a read before. A backend
    /// whose threads would end at shutdown, had they nothing to deliver, is given the time to
    /// first, so that the request meets it as it is then: `lingering(b)` says whether one may
    /// still be running (polled for up to a second, never waited for in full when they do
    /// end); a backend whose threads stay up until its drop says `false` at once.
    pub(crate) fn assert_refused_after_shutdown<B: IoBackend>(
        name: &str,
        start: impl FnOnce(Arc<CompletionPort>, &Path) -> Option<(B, Arc<FileHandle>)>,
        lingering: impl Fn(&B) -> bool,
    ) {
        with_started(name, Duration::ZERO, start, |b, got, file| {
            b.submit(&mut vec![page_read(1, file, 0)]);
            assert_read(&got.take_within(1, PATIENCE)[0], 0);
            b.shutdown();
            let until = std::time::Instant::now() + Duration::from_secs(1);
            while lingering(&b) && std::time::Instant::now() < until {
                std::thread::sleep(Duration::from_millis(5));
            }
            b.submit(&mut vec![page_read(2, file, 1)]);
            let done = got.take_within(1, PATIENCE);
            assert_eq!(done.len(), 1, "the request never completed");
            assert!(refused(&done[0]), "{:?}", done[0].result);
        });
    }

    /// Dropping a backend from `start` (as [`with_started`] takes it) delivers the reads it
    /// held (pages 0 and 1, tokens 1 and 2) by the time the drop returns, and lets their
    /// buffers and file go. The sink takes its time over each completion, so a drop that does
    /// not join the delivering threads returns first.
    pub(crate) fn assert_drop_delivers_what_it_held<B: IoBackend>(
        name: &str,
        start: impl FnOnce(Arc<CompletionPort>, &Path) -> Option<(B, Arc<FileHandle>)>,
    ) {
        with_started(name, Duration::from_millis(300), start, |b, got, file| {
            b.submit(&mut vec![page_read(1, file, 0), page_read(2, file, 1)]);
            drop(b);
            let mut tokens = got.tokens();
            tokens.sort_unstable();
            assert_eq!(tokens, vec![1, 2]);
            assert_eq!(Arc::strong_count(file), 1, "a request outlived the backend");
        });
    }

    /// A file id for tests.
    pub(crate) const FILE: FileId = FileId(0);

    /// A seed for a randomized test: `FORESIGHT_SEED` if set (to replay a failure), else one
    /// from the clock. The test prints it.
    pub(crate) fn seed() -> u64 {
        std::env::var("FORESIGHT_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(1, |d| d.as_nanos() as u64)
            })
    }

    /// Spins a random while (up to a few tens of microseconds), so two threads meet at a
    /// different point each round.
    fn stagger(rng: &mut foresight_core::Rng) {
        for _ in 0..rng.below(20_000) {
            std::hint::spin_loop();
        }
        if rng.below(4) == 0 {
            std::thread::yield_now();
        }
    }

    /// Races a submitter against a shutdown `rounds` times, each over a fresh backend from
    /// `start` (a backend with room for `reads` requests, delivering to the port it is given,
    /// and a file of at least `reads` pages in the [`pattern_file`] pattern it reads): one thread
    /// submits `reads` one-page reads in random batches while another shuts the backend down
    /// after a random pause, then the backend is dropped. By then every read must have come
    /// back exactly once, with its bytes or with the shut-down error, and no request may hold
    /// the file any more (the drop joins the threads that held them). Prints the seed.
    pub(crate) fn race_submits_with_shutdown(
        test: &str,
        rounds: u32,
        reads: u64,
        start: &dyn Fn(Arc<CompletionPort>) -> (Box<dyn IoBackend>, Arc<FileHandle>),
    ) {
        let seed = seed();
        println!("{test}: seed {seed} (FORESIGHT_SEED={seed} replays it)");
        let rng = foresight_core::Rng::new(seed);
        let (mut read, mut refusals) = (0, 0);
        for round in 0..rounds {
            let (got, port) = Collect::port(Duration::ZERO);
            let (b, file) = start(port);
            let mut sub_rng = rng.fork(2 * round as u64);
            let mut shut_rng = rng.fork(2 * round as u64 + 1);
            let go = std::sync::Barrier::new(2);
            std::thread::scope(|s| {
                s.spawn(|| {
                    go.wait();
                    let mut next = 0;
                    while next < reads {
                        let n = (1 + sub_rng.below(4)).min(reads - next);
                        let mut batch: Vec<IoRequest> =
                            (next..next + n).map(|t| page_read(t, &file, t)).collect();
                        next += n;
                        b.submit(&mut batch);
                        stagger(&mut sub_rng);
                    }
                });
                s.spawn(|| {
                    go.wait();
                    stagger(&mut shut_rng);
                    b.shutdown();
                });
            });
            drop(b);
            let mut done = got.take_within(0, Duration::ZERO);
            done.sort_by_key(|c| c.token);
            let tokens: Vec<u64> = done.iter().map(|c| c.token).collect();
            assert_eq!(
                tokens,
                (0..reads).collect::<Vec<_>>(),
                "{test}: seed {seed}, round {round}: each read must come back once by the drop"
            );
            for c in &done {
                if refused(c) {
                    refusals += 1;
                } else {
                    assert_read(c, c.token);
                    read += 1;
                }
            }
            assert_eq!(
                Arc::strong_count(&file),
                1,
                "{test}: seed {seed}, round {round}: a request outlived the backend"
            );
        }
        // How the races fell (not asserted: a busy machine may tilt them all one way).
        println!("{test}: {read} reads done, {refusals} refused");
    }
}
