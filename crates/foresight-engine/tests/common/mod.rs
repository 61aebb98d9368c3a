//! Helpers shared by the engine's integration tests: deterministic file contents, a hash, temporary
//! directories, and the io_uring availability check that lets tests skip where it is refused.

#![allow(dead_code)]

use std::hash::Hasher;
use std::io::Write;
use std::path::{Path, PathBuf};

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
