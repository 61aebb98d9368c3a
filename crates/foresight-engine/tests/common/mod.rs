//! Helpers shared by the engine's integration tests: deterministic file contents, a hash, temporary
//! directories, the io_uring availability check that lets tests skip where it is refused, and the
//! one way a test waits for a state another thread brings ([`wait_until`] and the helpers built
//! on it): a check in a loop that gives up after [`HANG_GUARD`], failing the test with what it
//! waited for, so that a bug that keeps the state from coming fails the test instead of hanging
//! the run. These are the integration tests' equivalent of the crate's own `testutil::wait_until`
//! (not visible outside the crate), with the same guard.

#![allow(dead_code)]

use std::hash::Hasher;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc::Receiver;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use foresight_core::Rng;
use foresight_engine::{Backend, Engine, EngineError};

/// Deterministic pseudo-random bytes.
pub fn content(len: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        v.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    v.truncate(len);
    v
}

/// A 64-bit hash of bytes (SipHash with fixed keys: the same in every run).
pub fn hash(bytes: &[u8]) -> u64 {
    #[allow(deprecated)]
    let mut h = std::hash::SipHasher::new();
    h.write(bytes);
    h.finish()
}

/// A fresh directory under the system's temporary directory, removed with its files when
/// dropped, also when the test fails (`tempfile`'s guard, the one every test of the workspace
/// uses), with a way to write files in it.
pub struct TempDir(tempfile::TempDir);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        TempDir(
            tempfile::Builder::new()
                .prefix(&format!("foresight-engine-{tag}-"))
                .tempdir()
                .unwrap(),
        )
    }

    pub fn file(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let p = self.0.path().join(name);
        let mut f = std::fs::File::create(&p).unwrap();
        f.write_all(bytes).unwrap();
        f.sync_all().unwrap();
        p
    }
}

/// Whether io_uring works here; prints why a test is skipped when it does not.
pub fn uring_or_skip(test: &str) -> bool {
    match Engine::builder().backend(Backend::Uring).build() {
        Ok(_) => true,
        Err(EngineError::BackendUnavailable { reason, .. }) => {
            eprintln!("{test}: skipped: io_uring is refused here ({reason})");
            false
        }
        Err(e) => panic!("{test}: unexpected error probing io_uring: {e}"),
    }
}

/// The real-file backends to run a test on: threads always, uring where it works.
pub fn real_backends(test: &str) -> Vec<(&'static str, Backend)> {
    let mut v = vec![("threads", Backend::Threads)];
    if uring_or_skip(test) {
        v.push(("uring", Backend::Uring));
    }
    v
}

pub fn path_str(p: &Path) -> String {
    p.display().to_string()
}

/// Aborts the test process, printing the engine's state and `case`, if the returned guard is not
/// dropped within `limit`: a stuck engine fails the test (with what replays it) instead of hanging
/// it. Drop the guard when the case ends, however it ends.
pub fn watchdog(engine: &Engine, case: String, limit: std::time::Duration) -> Watchdog {
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let watched = engine.clone();
    std::thread::spawn(move || {
        if rx.recv_timeout(limit).is_err() {
            eprintln!("STUCK: {}\nCASE: {case}", watched.describe());
            std::process::abort();
        }
    });
    Watchdog(tx)
}

/// See [`watchdog`].
pub struct Watchdog(std::sync::mpsc::Sender<()>);

impl Drop for Watchdog {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

/// How long a wait of these tests lasts before it calls the test hung: far beyond what any state
/// waited for takes on a loaded machine, so it guards against hangs and times nothing.
pub const HANG_GUARD: Duration = Duration::from_secs(60);

/// Checks `done` until it holds, sleeping a millisecond between checks (the states waited for
/// come from backend threads and device reads, in milliseconds, on cores other work shares);
/// panics naming `what` if it does not hold within [`HANG_GUARD`].
pub fn wait_until(what: &str, done: impl FnMut() -> bool) {
    wait_within(HANG_GUARD, what, done, String::new)
}

/// [`wait_until`] for a state of `engine`: a wait that gives up says what the engine held then.
pub fn wait_for_engine(engine: &Engine, what: &str, done: impl FnMut() -> bool) {
    wait_within(HANG_GUARD, what, done, || engine.describe())
}

/// Joins `thread` once it has ended, waiting for it as [`wait_until`] does (naming `what`): its
/// result, `Err` with the payload if it panicked.
pub fn join_within<T>(thread: JoinHandle<T>, what: &str) -> std::thread::Result<T> {
    wait_until(what, || thread.is_finished());
    thread.join()
}

/// The next message on `rx`, waited for at most [`HANG_GUARD`]; panics naming `what` (and the
/// state of `engine`) if none comes.
pub fn recv_within<T>(rx: &Receiver<T>, engine: &Engine, what: &str) -> T {
    rx.recv_timeout(HANG_GUARD).unwrap_or_else(|e| {
        panic!(
            "gave up after {} s waiting for {what} ({e}): the test hangs; {}",
            HANG_GUARD.as_secs(),
            engine.describe()
        )
    })
}

/// [`wait_until`] with a guard of `guard`, and `state` to add to the failure's message.
pub fn wait_within(
    guard: Duration,
    what: &str,
    mut done: impl FnMut() -> bool,
    state: impl FnOnce() -> String,
) {
    let until = Instant::now() + guard;
    while !done() {
        if Instant::now() >= until {
            panic!(
                "gave up after {} s waiting for {what}: the test hangs; {}",
                guard.as_secs(),
                state()
            );
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}
