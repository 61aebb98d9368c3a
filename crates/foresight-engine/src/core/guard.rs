//! The policy behind a guard that records its panic before the engine's lock is poisoned. A
//! policy runs under the engine's lock, so a panic of its poisons that lock as it unwinds past
//! the guard of the lock, and every call refused by the poisoned lock wants the panic's message
//! to say why. Catching the panic only where the call that ran the policy began (the engine's
//! `Shared::breaking_on_panic`, or a backend thread's alarm) records the message after the lock
//! is let go, so a call on another thread could find the lock poisoned and no message yet, and
//! had to wait for it. Each call into the policy here runs under `catch_unwind`: a panic is
//! caught while the lock is still held, its message (with where it was raised: `panic_note.rs`)
//! goes into the cell the engine reads its reason from, and the panic goes on unwinding
//! (`resume_unwind`, which runs no hook again), to be caught where it was before and break the
//! engine. So whoever sees the lock poisoned by a policy finds the message already there.

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::{Arc, OnceLock};

use foresight_core::{FileId, Instant};
use foresight_policy::layout::FileLayout;
use foresight_policy::{Input, Output, Policy};

use super::Core;

impl Core {
    /// Where a panic of the policy records its message, before the lock it runs under is
    /// poisoned: the engine keeps its reason for being broken in this same cell.
    pub(crate) fn policy_panic_reason(&self) -> Arc<OnceLock<String>> {
        self.policy.panic_reason()
    }
}

/// The policy, and the cell its first panic's message goes into (shared with the engine, which
/// reports it as why it is broken; the first message kept wins, as with any other breaking panic).
pub(crate) struct GuardedPolicy {
    policy: Box<dyn Policy>,
    panicked: Arc<OnceLock<String>>,
}

impl GuardedPolicy {
    pub(crate) fn new(policy: Box<dyn Policy>) -> GuardedPolicy {
        GuardedPolicy {
            policy,
            panicked: Arc::new(OnceLock::new()),
        }
    }

    fn panic_reason(&self) -> Arc<OnceLock<String>> {
        self.panicked.clone()
    }

    /// Runs `call` on the policy; a panic out of it is recorded, then resumed.
    fn guarded<R>(&mut self, call: impl FnOnce(&mut dyn Policy) -> R) -> R {
        // `AssertUnwindSafe`: after a panic the policy (and the core calling it) may be
        // half-updated, but nothing here looks at either, the panic unwinding on at once; the
        // unwind then poisons the lock they are under, and every engine call that would run the
        // policy refuses a poisoned lock (`Shared::lock_live`), while the few that take it all
        // the same (reports, shutdown, waking the waiters) do not call the policy.
        match catch_unwind(AssertUnwindSafe(|| call(self.policy.as_mut()))) {
            Ok(r) => r,
            Err(payload) => {
                let _ = self.panicked.set(crate::panic_note::note(payload.as_ref()));
                resume_unwind(payload)
            }
        }
    }

    pub(crate) fn handle(&mut self, now: Instant, input: Input) {
        self.guarded(|p| p.handle(now, input))
    }

    pub(crate) fn handle_timeout(&mut self, now: Instant) {
        self.guarded(|p| p.handle_timeout(now))
    }

    pub(crate) fn poll_output(&mut self) -> Option<Output> {
        self.guarded(|p| p.poll_output())
    }

    pub(crate) fn poll_timeout(&mut self) -> Option<Instant> {
        self.guarded(|p| p.poll_timeout())
    }

    pub(crate) fn add_file(&mut self, id: FileId, file: FileLayout) {
        self.guarded(|p| p.add_file(id, file))
    }
}
