//! What the unit tests share for files on disk: a directory of a test's own under the system's
//! temporary directory, held by a guard ([`tempfile::TempDir`]) that removes it, with everything
//! in it, when dropped, so also when the test fails and unwinds. Before, each test removed its
//! directory at the end of its body, and a failing test left it behind. Also the one way a test
//! waits for another thread to reach a state ([`wait_until`]): a check in a loop that gives up,
//! failing the test with what it waited for, after [`HANG_GUARD`], so a bug that keeps the state
//! from coming fails the test instead of hanging the whole run.

use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How long [`wait_until`] waits before it calls the test hung: far beyond what any state a test
/// waits for takes on a loaded machine, so it guards against hangs and times nothing.
pub(crate) const HANG_GUARD: Duration = Duration::from_secs(60);

/// Checks `done` until it holds, yielding the processor between checks (the states waited for
/// come within microseconds, from threads that may share this core); panics naming `what` if it
/// does not hold within [`HANG_GUARD`].
pub(crate) fn wait_until(what: &str, done: impl FnMut() -> bool) {
    wait_within(HANG_GUARD, what, done)
}

/// [`wait_until`] with a guard of `guard` (its own test gives it none).
fn wait_within(guard: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let until = Instant::now() + guard;
    while !done() {
        assert!(
            Instant::now() < until,
            "gave up after {} s waiting for {what}: the test hangs",
            guard.as_secs()
        );
        std::thread::yield_now();
    }
}

/// A new directory named after `name` (`foresight-NAME-` and a random suffix, so that tests
/// running at once never share one), removed when the guard is dropped.
pub(crate) fn temp_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("foresight-{name}-"))
        .tempdir()
        .expect("making a temporary directory")
}

/// A file `f` holding `bytes` in a new [`temp_dir`] named after `name`: the directory's guard
/// (the file goes with it) and the file's path.
pub(crate) fn temp_file(name: &str, bytes: &[u8]) -> (tempfile::TempDir, PathBuf) {
    let dir = temp_dir(name);
    let path = dir.path().join("f");
    std::fs::write(&path, bytes).expect("writing a temporary file");
    (dir, path)
}

/// A state that never comes ends the wait with a panic naming it, not a hang.
#[test]
#[should_panic(expected = "waiting for a state that never comes")]
fn a_wait_gives_up_after_its_guard() {
    wait_within(Duration::ZERO, "a state that never comes", || false);
}

/// A state that comes ends the wait as it comes.
#[test]
fn a_wait_ends_when_the_state_holds() {
    let mut checks = 0;
    wait_within(HANG_GUARD, "the third check", || {
        checks += 1;
        checks == 3
    });
    assert_eq!(checks, 3);
}
