//! The engine's errors. Settings and opening a file fail with an [`EngineError`] that names the
//! setting or the path; reads fail with `std::io::Error`, as `std::io::Read` requires, carrying the
//! operating system's error (EIO stays EIO).

use std::io;
use std::path::PathBuf;

use foresight_core::StreamId;
use foresight_policy::PolicyError;

use crate::backend::emulated::EmulatedError;

/// Why an engine could not be built or an operation refused.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// A builder setting is out of range; the message says what to write instead.
    #[error("engine setting `{setting}`: {message}")]
    Setting {
        /// The builder method's name.
        setting: &'static str,
        /// What is wrong and what would do.
        message: String,
    },
    /// The policy could not be built (unknown name, bad setting).
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// The backend asked for explicitly does not work here.
    #[error("backend `{backend}` is not available here: {reason}")]
    BackendUnavailable {
        /// The backend's name.
        backend: &'static str,
        /// What the system said.
        reason: String,
    },
    /// The emulation settings are wrong.
    #[error("emulation: {0}")]
    Emulation(#[from] EmulatedError),
    /// A file could not be opened.
    #[error("opening {}: {source}", path.display())]
    Open {
        /// The path.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// A read failed where the error has no `std::io::Read` to go to (a measurement).
    #[error("reading {}: {source}", path.display())]
    Read {
        /// The path.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// A thread could not be started.
    #[error("starting the engine's threads: {0}")]
    Spawn(io::Error),
    /// A hint listed too many ranges.
    #[error("a hint may list at most {max} ranges, got {got}; split it")]
    HintTooLong {
        /// The bound.
        max: usize,
        /// What was given.
        got: usize,
    },
    /// The stream is not open in this engine.
    #[error("{0} is not open in this engine")]
    UnknownStream(StreamId),
    /// A panic (a policy's, or one that ended a backend thread) broke the engine, or its owner
    /// gave up on it (`Engine::abandon`): reads it started may never complete, so it serves
    /// nothing more. Reads get it as an `io::Error` of kind `Other`, whose inner error is this
    /// one.
    #[error(
        "the engine is broken (by a panic in a policy or on one of its backend's threads, or \
         abandoned by its owner): {reason}; it left reads it will never complete, so build a new \
         engine"
    )]
    Broken {
        /// The panic's message and, where known, where it was raised: what
        /// `Engine::broken_reason` gives, so that whoever logs the error says why without
        /// asking the engine again.
        reason: String,
    },
}
