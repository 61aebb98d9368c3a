//! Removing what a command has on disk when a signal stops it.
//!
//! Drop guards clean up on every way out of a command but one: a signal's default action ends the
//! process without running them. [`create_removed_on_signal`] creates a path (a download's
//! temporary file, a bench file being written, net-soak's scratch directory) and registers it in
//! one step, under the registry's lock; the first call starts a thread that waits for SIGINT,
//! SIGTERM or SIGHUP, takes the same lock, removes every path registered at that moment and exits
//! with 128 plus the signal's number, the status the default action would have left, still
//! holding the lock. A path is therefore either created and registered before the removal (and
//! removed), or never created: a creation waiting for the lock waits until the process is gone.
//! Registering first and creating after, as this module once had its callers do, left a window in
//! which a signal found nothing to remove and the file created just after stayed behind, cut short.
//!
//! A command that runs long also leaves a note with [`say_on_signal`]: what a stop in its middle
//! leaves (no figures, a report marked unfinished), which the same removal writes to standard
//! error before exiting, since a stop by the default action said nothing at all. The command
//! leaves its first note as it starts, before it reads anything: reading a config can block (a
//! FIFO, a hung mount), and the main thread blocked in a read does not hold up the exit, which
//! the stop thread makes. It replaces the note as its phase changes (the run under way, then the
//! output written once the run has finished), since a note left for the run and still armed
//! while the output was written said the run had no figures when it had them all. A command that
//! writes a note now and then (the proxy's about its upstream, at most once a second) also gives
//! [`say_first_on_signal`] a way to make what it has not yet said, which the stop writes first:
//! without it, the news of the last second before a stop died with the process.
//!
//! The removal runs on a thread of its own while the signal thread goes on waiting, so that a
//! second SIGINT, SIGTERM or SIGHUP ends the process at once with the signal's default action,
//! as a user who presses Ctrl-C twice expects: the removal of a large directory can take a while,
//! and the note's write blocks for good when standard error is a full pipe nobody reads (the
//! registry's lock held, which only the end of the process releases). A second stop leaves what
//! the default action leaves: the paths not yet removed, one of them perhaps half removed (a
//! directory with part of its files), and no note, or part of one; the first stop's removal is
//! unchanged, so a path registered is removed whenever a single stop is let finish. A signal that
//! comes within [`SAME_STOP_MS`] of the first is taken as the same stop and changes nothing: GNU
//! `timeout` sends its signal twice, to the process and to its group, and a hangup reaches a
//! foreground job from both the shell and the terminal, while a person's second Ctrl-C comes later.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, Once};
use std::time::{Duration, Instant};

/// How soon after the first stop signal another is taken as a copy of it rather than a request to
/// end at once (see the module's note): well past the microseconds between `timeout`'s two sends,
/// well short of the time a person takes to press Ctrl-C a second time.
pub const SAME_STOP_MS: u64 = 250;

/// Paths to remove when a signal arrives, each under the id of its registration.
struct Registry {
    paths: Mutex<Vec<(u64, PathBuf)>>,
    next_id: AtomicU64,
}

impl Registry {
    const fn new() -> Registry {
        Registry {
            paths: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(0),
        }
    }

    fn paths(&self) -> MutexGuard<'_, Vec<(u64, PathBuf)>> {
        // A creation that panicked leaves nothing half-registered: the entry is pushed only after
        // it returned.
        self.paths
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Runs `create(path)` holding the lock, and registers `path` if it succeeded.
    fn create<T>(
        &'static self,
        path: PathBuf,
        create: impl FnOnce(&Path) -> std::io::Result<T>,
    ) -> std::io::Result<(T, Registered)> {
        let mut held = self.paths();
        let made = create(&path)?;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        held.push((id, path));
        Ok((made, Registered { registry: self, id }))
    }

    /// The signal's work: removes every registered path, and returns the lock, which the caller
    /// holds until the process exits so that nothing is created (or unregistered) after this,
    /// with the paths it removed.
    fn remove_all(&self) -> (MutexGuard<'_, Vec<(u64, PathBuf)>>, Vec<PathBuf>) {
        let held = self.paths();
        let removed = remove_paths(&held);
        (held, removed)
    }
}

/// Removes every path in `held`, a file or a directory with everything in it, and returns those
/// that were there and are gone.
fn remove_paths(held: &[(u64, PathBuf)]) -> Vec<PathBuf> {
    held.iter()
        .filter(|(_, path)| remove(path))
        .map(|(_, path)| path.clone())
        .collect()
}

static REGISTRY: Registry = Registry::new();
static WATCH: Once = Once::new();
/// What the command had not done, said when a signal stops it (see [`say_on_signal`]).
static STOP_NOTE: Mutex<Option<String>> = Mutex::new(None);
/// What the command has not yet said, asked for when a signal stops it (see
/// [`say_first_on_signal`]).
type Unsaid = Box<dyn Fn() -> Option<String> + Send>;
static UNSAID: Mutex<Option<Unsaid>> = Mutex::new(None);

/// From now on, a stop by SIGINT, SIGTERM or SIGHUP writes `stopped by SIGNAL: note` to standard
/// error (after removing what is registered, followed by `; removed PATH, ...` when it removed
/// something), so that a command stopped in its middle says what it leaves rather than ending
/// without a word; the exit status stays 128 plus the signal's number. A later call replaces the
/// note. The note says what is true whatever is registered when the signal comes: what the
/// removal took is named by the removal itself, which alone knows it (a `--requests-out` that is
/// a FIFO, or a file not yet emptied for the run, is not registered and stays).
pub fn say_on_signal(note: impl Into<String>) {
    *STOP_NOTE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(note.into());
    WATCH.call_once(watch);
}

/// From now on, a stop by SIGINT, SIGTERM or SIGHUP first writes to standard error, on a line of
/// its own before the stop's note, what `unsaid` gives when the signal comes, if anything: the
/// news of a note the command writes now and then, which would otherwise die with the process.
/// A later call replaces it. `unsaid` runs on the stop's thread, after the removal; it should
/// be quick, and must not call this module.
pub fn say_first_on_signal(unsaid: impl Fn() -> Option<String> + Send + 'static) {
    *UNSAID
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(Box::new(unsaid));
    WATCH.call_once(watch);
}

/// A path removed if a signal stops the process while this lives.
pub struct Registered {
    registry: &'static Registry,
    id: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.registry.paths().retain(|(id, _)| *id != self.id);
    }
}

/// Creates `path` with `create` (a file, or a directory: whatever the closure makes, or empties
/// to make it this run's) and registers it to be removed, with everything in it, if SIGINT,
/// SIGTERM or SIGHUP arrives before the returned guard is dropped. Both happen under the lock the
/// signal's removal takes, so the path is never on disk unregistered while a signal is handled.
/// When `create` fails nothing is registered and its error is returned. `create` must not call
/// this function (the lock is not reentrant), and should be quick: a signal waits for it.
pub fn create_removed_on_signal<T>(
    path: PathBuf,
    create: impl FnOnce(&Path) -> std::io::Result<T>,
) -> std::io::Result<(T, Registered)> {
    WATCH.call_once(watch);
    REGISTRY.create(path, create)
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
    async fn arrival(signal: &mut Option<Signal>) {
        match signal {
            Some(s) => {
                s.recv().await;
            }
            None => std::future::pending().await,
        }
    }
    /// The next of the three to arrive, by number and name.
    async fn next(signals: &mut [Option<Signal>; 3]) -> (i32, &'static str) {
        let [interrupt, terminate, hangup] = signals;
        tokio::select! {
            _ = arrival(interrupt) => (2, "SIGINT"),
            _ = arrival(terminate) => (15, "SIGTERM"),
            _ = arrival(hangup) => (1, "SIGHUP"),
        }
    }
    let mut signals = [interrupt, terminate, hangup];
    let _ = std::thread::Builder::new()
        .name("foresight-signals".into())
        .spawn(move || {
            rt.block_on(async move {
                let (number, name) = next(&mut signals).await;
                let first_at = Instant::now();
                let removing = std::thread::Builder::new()
                    .name("foresight-stop".into())
                    .spawn(move || stop(number, name));
                if removing.is_err() {
                    // No thread for it: the removal runs here, and a second signal is not heard.
                    stop(number, name);
                }
                loop {
                    let (number, _) = next(&mut signals).await;
                    if first_at.elapsed() >= Duration::from_millis(SAME_STOP_MS) {
                        // The default action, as if no handler were installed; should it fail,
                        // the same status without it. Neither takes a lock the removal may hold.
                        let _ = signal_hook::low_level::emulate_default_handler(number);
                        signal_hook::low_level::exit(128 + number);
                    }
                }
            })
        });
}

/// The first stop's work: removes every registered path, writes the note if there is one, and
/// exits with 128 plus the signal's `number`.
fn stop(number: i32, name: &str) -> ! {
    // Held to the end: a creation waiting for the lock never runs.
    let (_held, removed) = REGISTRY.remove_all();
    let unsaid = UNSAID
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .as_ref()
        .and_then(|unsaid| unsaid());
    let note = STOP_NOTE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .clone();
    use std::io::{IsTerminal as _, Write as _};
    let mut err = std::io::stderr().lock();
    // On a terminal the line may hold a progress bar (and the ^C the terminal echoed): what is
    // said starts a line of its own.
    let mut start = if err.is_terminal() { "\r\x1b[2K" } else { "" };
    if let Some(unsaid) = unsaid {
        let _ = writeln!(err, "{start}{unsaid}");
        start = "";
    }
    if let Some(note) = note {
        let removed = if removed.is_empty() {
            String::new()
        } else {
            let paths: Vec<_> = removed.iter().map(|p| p.display().to_string()).collect();
            format!("; removed {}", paths.join(", "))
        };
        let _ = writeln!(err, "{start}stopped by {name}: {note}{removed}");
    }
    std::process::exit(128 + number);
}

/// Removes a file, or a directory with everything in it; a few tries for a directory that is
/// still being filled. Returns whether it was there and is gone.
fn remove(path: &Path) -> bool {
    let mut there = false;
    for _ in 0..3 {
        let gone = match std::fs::symlink_metadata(path) {
            Err(_) => true,
            Ok(m) => {
                there = true;
                if m.is_dir() {
                    std::fs::remove_dir_all(path).is_ok()
                } else {
                    std::fs::remove_file(path).is_ok()
                }
            }
        };
        if gone {
            return there;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::sync::TryLockError;

    /// A signal's removal that comes while a file is being created waits for the creation and
    /// removes the file: it is never left on disk unregistered and unremoved. Each step waits for
    /// the other thread's message, so the order is the same on every run. The remover sees the
    /// registry's lock taken (the creation under way) before it asks for it; with the creation
    /// done outside the lock, the remover would find nothing to remove, and the file created just
    /// after would stay behind, as callers that registered a path and then created it left it.
    #[test]
    fn a_removal_requested_during_a_creation_removes_the_file_created() {
        // A registry of this test's own: the process-wide one starts the signal thread, and
        // its removal would take other tests' files.
        let registry: &'static Registry = Box::leak(Box::new(Registry::new()));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cut-short.bin");
        let (creating_tx, creating_rx) = mpsc::channel::<()>();
        let (asked_tx, asked_rx) = mpsc::channel::<bool>();
        let remover = std::thread::spawn(move || {
            creating_rx.recv().unwrap();
            let busy = matches!(registry.paths.try_lock(), Err(TryLockError::WouldBlock));
            if busy {
                // The creation holds the lock: tell it to go on, then wait for the lock, as the
                // signal thread does.
                asked_tx.send(true).unwrap();
                drop(registry.remove_all());
            } else {
                drop(registry.remove_all());
                asked_tx.send(false).unwrap();
            }
        });
        let created = registry.create(path.clone(), |p| {
            creating_tx.send(()).unwrap();
            asked_rx.recv().unwrap();
            std::fs::write(p, b"half of it")
        });
        remover.join().unwrap();
        let ((), registered) = created.unwrap();
        assert!(
            !path.exists(),
            "the removal, asked for during the creation, left {} behind",
            path.display()
        );
        drop(registered);
        assert!(registry.paths().is_empty());
    }

    /// A creation that fails registers nothing: there is no path of this run's to remove.
    #[test]
    fn a_failed_creation_registers_nothing() {
        let registry: &'static Registry = Box::leak(Box::new(Registry::new()));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing").join("file");
        let r = registry.create(path, |p| std::fs::File::create(p));
        assert!(r.is_err());
        assert!(registry.paths().is_empty());
    }

    /// A directory and what was written into it after its creation go together.
    #[test]
    fn a_registered_directory_is_removed_with_its_files() {
        let registry: &'static Registry = Box::leak(Box::new(Registry::new()));
        let dir = tempfile::tempdir().unwrap();
        let scratch = dir.path().join("scratch");
        let ((), _registered) = registry
            .create(scratch.clone(), |p| std::fs::create_dir_all(p))
            .unwrap();
        std::fs::write(scratch.join("f0.bin"), b"x").unwrap();
        // Registered but never there: not said to be removed.
        let ((), _gone) = registry
            .create(dir.path().join("gone"), |p| {
                std::fs::remove_file(p).or(Ok(()))
            })
            .unwrap();
        let (_held, removed) = registry.remove_all();
        assert!(!scratch.exists());
        assert_eq!(removed, [scratch]);
    }
}
