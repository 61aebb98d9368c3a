//! Removing what a command has on disk when a signal stops it.
//!
//! Drop guards clean up on every way out of a command but one: a signal's default action ends the
//! process without running them. [`remove_on_signal`] registers a path (a download's temporary
//! file, a bench file being written, net-soak's scratch directory); the first registration starts
//! a thread that waits for SIGINT, SIGTERM or SIGHUP, removes every path registered at that moment
//! and exits with 128 plus the signal's number, the status the default action would have left.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, Once};

/// The paths to remove, each under the id of its registration.
static PATHS: Mutex<Vec<(u64, PathBuf)>> = Mutex::new(Vec::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(0);
static WATCH: Once = Once::new();

fn paths() -> MutexGuard<'static, Vec<(u64, PathBuf)>> {
    PATHS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A path removed if a signal stops the process while this lives.
pub struct Registered(u64);

impl Drop for Registered {
    fn drop(&mut self) {
        paths().retain(|(id, _)| *id != self.0);
    }
}

/// Removes `path` (a file, or a directory with everything in it) if SIGINT, SIGTERM or SIGHUP
/// arrives before the returned guard is dropped. Register a path before creating it, so that no
/// moment is left in which it exists unregistered.
pub fn remove_on_signal(path: PathBuf) -> Registered {
    WATCH.call_once(watch);
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    paths().push((id, path));
    Registered(id)
}

/// Installs the handlers (before returning, so that a signal from now on is caught) and starts
/// the thread that acts on them. Where they cannot be installed, signals keep their default action.
fn watch() {
    use tokio::signal::unix::{signal, Signal, SignalKind};
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    let (interrupt, terminate, hangup) = {
        let _entered = rt.enter();
        (
            signal(SignalKind::interrupt()).ok(),
            signal(SignalKind::terminate()).ok(),
            signal(SignalKind::hangup()).ok(),
        )
    };
    async fn arrival(signal: Option<Signal>) {
        match signal {
            Some(mut s) => {
                s.recv().await;
            }
            None => std::future::pending().await,
        }
    }
    let _ = std::thread::Builder::new()
        .name("foresight-signals".into())
        .spawn(move || {
            let number = rt.block_on(async move {
                tokio::select! {
                    _ = arrival(interrupt) => 2,
                    _ = arrival(terminate) => 15,
                    _ = arrival(hangup) => 1,
                }
            });
            // Held to the end: nothing registers, and so nothing is created, after this.
            let held = paths();
            for (_, path) in held.iter() {
                remove(path);
            }
            std::process::exit(128 + number);
        });
}

/// Removes a file, or a directory with everything in it; a few tries for a directory that is
/// still being filled.
fn remove(path: &std::path::Path) {
    for _ in 0..3 {
        let gone = match std::fs::symlink_metadata(path) {
            Err(_) => true,
            Ok(m) if m.is_dir() => std::fs::remove_dir_all(path).is_ok(),
            Ok(_) => std::fs::remove_file(path).is_ok(),
        };
        if gone {
            return;
        }
    }
}
