//! An application that sets a panic hook of its own once its engine is built, one that calls no
//! other hook, still learns from the engine which panic broke it. The engine takes the message
//! from the payload it catches on the thread that panicked, not from the process's hook (which
//! the application may replace): before, the message came from the engine's hook alone, and
//! such an engine said only that the message was not kept. A binary of its own, since the hook
//! is the whole process's: the other tests' panics keep their report on standard error.

use std::io::Read;
use std::path::Path;

use foresight_core::Instant;
use foresight_engine::{Backend, Engine, Fault, FaultKind, NoopBackend};
use foresight_policy::{Input, Output, Policy};

mod common;

/// The engine's reason for being broken, waited for (a backend thread sets it as it ends, after
/// the reads it held already fail).
fn reason(engine: &Engine) -> Option<String> {
    common::wait_for_engine(engine, "the engine's reason for being broken", || {
        engine.broken_reason().is_some()
    });
    engine.broken_reason()
}

/// Panics on every read it is shown, on the reader's own thread, under the engine's lock.
struct PanicOnRead;

impl Policy for PanicOnRead {
    fn name(&self) -> &str {
        "panic-on-read"
    }
    fn handle(&mut self, _now: Instant, input: Input) {
        if let Input::Read { .. } = input {
            panic!("a policy bug under a foreign hook, on purpose");
        }
    }
    fn poll_output(&mut self) -> Option<Output> {
        None
    }
}

#[test]
fn a_broken_engine_names_its_panic_under_an_applications_own_hook() {
    // A backend thread's panic: the noop backend's worker, by an injected fault.
    let noop = NoopBackend::new();
    noop.insert("/f", vec![7u8; 1 << 16]);
    noop.inject(Fault {
        path: "/f".into(),
        range: 0..(1 << 16),
        kind: FaultKind::Panic,
        times: None,
    });
    let by_backend = Engine::builder()
        .backend(Backend::Noop(noop))
        .build()
        .unwrap();
    // A policy's panic, on the reader's thread.
    let noop = NoopBackend::new();
    noop.insert("/g", vec![8u8; 1 << 16]);
    let by_policy = Engine::builder()
        .backend(Backend::Noop(noop))
        .wrap_policy(Box::new(|_| Box::new(PanicOnRead)))
        .build()
        .unwrap();

    // The application's hook, set after the engines were built, calls no other (it reports
    // the panic its own way, so that a failure of this test still says why).
    std::panic::set_hook(Box::new(|info| eprintln!("the application's hook: {info}")));

    let mut reader = by_backend.open(Path::new("/f")).unwrap();
    let mut buf = vec![0u8; 4096];
    let failed = reader.read(&mut buf);
    assert!(
        failed
            .as_ref()
            .is_err_and(|e| e.to_string().contains("the engine is broken")
                && e.to_string()
                    .contains("an injected panic of the noop backend's worker")),
        "the read held by the panicking backend thread: {failed:?}"
    );
    let why = reason(&by_backend);
    assert!(
        why.as_deref()
            .is_some_and(|w| w.contains("an injected panic of the noop backend's worker")),
        "the engine a backend thread's panic broke says: {why:?}"
    );

    let mut reader = by_policy.open(Path::new("/g")).unwrap();
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| reader.read(&mut buf)));
    assert!(
        panicked.is_err(),
        "the policy's panic did not reach the reader"
    );
    let why = reason(&by_policy);
    assert!(
        why.as_deref()
            .is_some_and(|w| w.contains("a policy bug under a foreign hook, on purpose")),
        "the engine a policy's panic broke says: {why:?}"
    );
}
