//! Foresight's real I/O engine: the prefetching policies of `foresight-policy`, driving real reads
//! of real files.
//!
//! The engine is the second driver of the same policy objects the simulator drives (DESIGN.md
//! section 5). An application opens files and reads them through [`Reader`]s (`std::io::Read +
//! Seek`); every read becomes an `Input::Read` to the policy, the policy's `Output::Fetch`es become
//! reads on a backend, and the application's bytes are copied out of the fetched buffers. The engine
//! itself decides nothing about prefetching: it executes the policy's outputs and the application's
//! demand, within one hard memory budget for every buffer it holds.
//!
//! Backends ([`backend`]): `uring` (io_uring, `O_DIRECT`, batched), `threads` (`pread` on a pool,
//! the fallback when io_uring is refused), `noop` (in memory, with injectable faults) and
//! `emulated` (real bytes, completion times from a `foresight-device` model).
//!
//! ```
//! use std::io::{Read, Write};
//! use foresight_core::ByteLen;
//! use foresight_engine::{Backend, Engine};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // Removed, with the file, when `dir` is dropped.
//! let dir = tempfile::Builder::new().prefix("foresight-doc-").tempdir()?;
//! let path = dir.path().join("f");
//! std::fs::File::create(&path)?.write_all(&vec![7u8; 1 << 20])?;
//!
//! let engine = Engine::builder()
//!     .memory(ByteLen::mib(64))        // prefetched + in-flight buffers never exceed this
//!     .policy("seqp")                  // Linux's on-demand readahead
//!     .readahead_max(ByteLen::kib(512))
//!     .backend(Backend::Auto)          // io_uring, or threads where it is refused
//!     .queue_depth(16)
//!     .build()?;
//! let mut reader = engine.open(&path)?;
//! let mut bytes = Vec::new();
//! reader.read_to_end(&mut bytes)?;
//! assert_eq!(bytes.len(), 1 << 20);
//! assert!(bytes.iter().all(|&b| b == 7));
//!
//! let stats = engine.stats();
//! assert_eq!(stats.app_bytes, 1 << 20);
//! assert!(stats.memory_peak_bytes <= 64 << 20);
//! println!("{} fetches on {}, {} bytes ahead", stats.fetches, stats.backend, stats.prefetched_bytes);
//! # Ok(())
//! # }
//! ```

#![deny(unsafe_code)]

pub mod backend;
pub mod beneath;
pub mod buffer;
mod core;
mod engine;
pub mod error;
pub mod measure;
mod panic_note;
mod pool;
pub mod stats;
mod sys;
#[cfg(test)]
mod testutil;

pub use backend::array::ArrayStats;
pub use backend::emulated::{EmulatedConfig, EmulatedDevice, EmulatedPlacement, Scheduler};
pub use backend::noop::{Fault, FaultKind, NoopBackend};
pub use backend::{BackendKind, IoBackend};
pub use beneath::{Resolver, RootDir};
pub use engine::{
    check_policy, check_policy_on, Backend, Engine, EngineBuilder, FileIdentity, PolicyWrapper,
    Reader, StreamHandle, MAX_HINT_RANGES,
};
pub use error::EngineError;
pub use panic_note::payload_text as panic_payload_text;
pub use pool::ArenaShelf;
pub use stats::Stats;
