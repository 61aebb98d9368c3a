//! The message of the panic that broke an engine, so that whoever runs it can say why.
//!
//! Wherever a panic can break an engine, the work runs under `catch_unwind`: a backend thread's
//! whole life (`PanicAlarm::watch`) and every call that runs a policy, on an application's
//! thread or the engine's own (`Shared::breaking_on_panic`), and, inside such a call, each call
//! into the policy itself (`core/guard.rs`), which keeps the message first, before the unwind
//! poisons the engine's lock (the later catches keep the first message). The payload caught gives the
//! message, whatever panic hook the process has; the engine breaks with it, and the panic then
//! goes on unwinding (`resume_unwind`, which runs no hook again). Where the panic was raised is
//! not in the payload, only in what a hook is shown: the first engine built installs, once per
//! process, a hook that notes the message and the place in a per-thread slot and then calls the
//! hook that was in place before it (so the default report on standard error, or an
//! application's own hook, still runs). [`note`] adds that place when the slot holds this same
//! panic's message. A hook an application sets later without calling the one before it costs
//! only the place, never the message. Before, the message itself came from the hook's note, and
//! such an application's engine said that the message was not kept.

use std::any::Any;
use std::cell::RefCell;
use std::sync::Once;

/// A panic's message, and where it was raised.
struct Noted {
    message: String,
    place: String,
}

thread_local! {
    /// What the hook saw of the panic this thread raised last, until [`note`] takes it.
    static LAST_PANIC: RefCell<Option<Noted>> = const { RefCell::new(None) };
}

static HOOK: Once = Once::new();

/// Installs the hook that notes where panics are raised, once per process. Does nothing on a
/// thread that is unwinding, where the standard library refuses to change the hook.
pub(crate) fn keep_panic_places() {
    if std::thread::panicking() {
        return;
    }
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if let Some(at) = info.location() {
                let noted = Noted {
                    message: payload_text(info.payload()),
                    place: format!("{}:{}", at.file(), at.line()),
                };
                // A thread being torn down has no slot left; its panic goes unnoted.
                let _ = LAST_PANIC.try_with(|slot| {
                    if let Ok(mut slot) = slot.try_borrow_mut() {
                        *slot = Some(noted);
                    }
                });
            }
            previous(info);
        }));
    });
}

/// What an engine broken by the panic whose payload is `payload`, caught on this thread, says
/// broke it: the message, and where it was raised if the hook noted this same panic (the
/// slot may hold an older panic's, one the hook saw and no engine caught, if an application's
/// hook replaced this one since).
pub(crate) fn note(payload: &(dyn Any + Send)) -> String {
    let message = payload_text(payload);
    let noted = LAST_PANIC
        .try_with(|slot| slot.try_borrow_mut().ok().and_then(|mut s| s.take()))
        .ok()
        .flatten();
    match noted {
        Some(n) if n.message == message => format!("{message} (at {})", n.place),
        _ => message,
    }
}

/// A panic payload as text: `panic!` makes a `&str` or a `String`; anything else is named only.
/// Also for code that catches a panic itself (a server's worker thread) and reports it.
pub fn payload_text(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic whose payload is not text".to_string()
    }
}
