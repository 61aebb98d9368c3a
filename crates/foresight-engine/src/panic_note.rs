//! The message of the panic that broke an engine, so that whoever runs it can say why.
//!
//! An engine breaks in a drop guard on the thread that unwinds (`Breaker`, `PanicAlarm`), and a
//! drop guard never sees the panic's payload. The panic hook does, and runs on that same thread
//! before unwinding starts: the first engine built installs, once per process, a hook that notes
//! the message and where it was raised in a per-thread slot and then calls the hook that was in
//! place before it (so the default report on standard error, or an application's own hook, still
//! runs). The guard takes the slot's note as it breaks the engine. A hook an application sets
//! later without calling the one before it leaves the note empty; the engine then says that the
//! message was not kept rather than guess.

use std::cell::RefCell;
use std::sync::Once;

thread_local! {
    /// The message of the panic this thread raised last, until an engine takes it.
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

static HOOK: Once = Once::new();

/// Installs the noting hook, once per process. Does nothing on a thread that is unwinding, where
/// the standard library refuses to change the hook.
pub(crate) fn keep_panic_messages() {
    if std::thread::panicking() {
        return;
    }
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let message = payload_text(info.payload());
            let note = match info.location() {
                Some(at) => format!("{message} (at {}:{})", at.file(), at.line()),
                None => message,
            };
            // A thread being torn down has no slot left; its panic goes unnoted.
            let _ = LAST_PANIC.try_with(|slot| {
                if let Ok(mut slot) = slot.try_borrow_mut() {
                    *slot = Some(note);
                }
            });
            previous(info);
        }));
    });
}

/// Takes the note of this thread's last panic, if the hook kept one.
pub(crate) fn take_last_panic() -> Option<String> {
    LAST_PANIC
        .try_with(|slot| slot.try_borrow_mut().ok().and_then(|mut s| s.take()))
        .ok()
        .flatten()
}

/// A panic payload as text: `panic!` makes a `&str` or a `String`; anything else is named only.
/// Also for code that catches a panic itself (a server's worker thread) and reports it.
pub fn payload_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic whose payload is not text".to_string()
    }
}
