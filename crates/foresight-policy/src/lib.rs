//! Prefetching policies as pure state machines.
//!
//! A policy never performs I/O, reads a clock or spawns a thread. A driver (the simulator or the real
//! engine) feeds it [`Input`]s with the current [`Instant`], drains [`Output`]s with
//! [`Policy::poll_output`] and executes them, and calls [`Policy::handle_timeout`] when the instant
//! from [`Policy::poll_timeout`] arrives. This is the shape of quinn-proto's and str0m's sans-IO cores:
//! both worlds drive the very same objects, so a decision made in simulation is the decision made on
//! real files. Policies see where file bytes live through [`layout::Layout`], never through a device.

pub mod budget;
pub mod layout;
pub mod readahead;

use std::sync::Arc;

use foresight_core::{ByteLen, ByteOffset, ByteRange, FetchId, FileId, Instant, StreamId};
use thiserror::Error;

pub use layout::Layout;

/// Bytes in one page-cache page. Readahead windows are counted in pages, as in Linux.
pub const PAGE_BYTES: u64 = 4096;

/// Where fetched data should land.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tier {
    /// The host's memory (the page cache or the engine's buffer pool).
    Memory,
    /// A lower tier of a tiered device, 1 = the tier just below memory.
    Level(u8),
}

/// What a driver tells a policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    /// The application asked for `range` of `file`. `miss` is the first byte of the range that is
    /// neither cached nor already being fetched (a page-cache miss), or `None` when every byte is
    /// cached or in flight. The driver reads any bytes still missing after the policy's fetches.
    Read {
        /// Who asked.
        stream: StreamId,
        /// Which file.
        file: FileId,
        /// The bytes asked for.
        range: ByteRange,
        /// First missing byte, if any.
        miss: Option<ByteOffset>,
    },
    /// The application disclosed future reads, in the order it will issue them.
    Hint {
        /// Who will read.
        stream: StreamId,
        /// Which file.
        file: FileId,
        /// The future reads, in order.
        ranges: Vec<ByteRange>,
    },
    /// A fetch the policy asked for has finished.
    Fetched {
        /// The id from the `Output::Fetch`.
        id: FetchId,
        /// Whether the data arrived (false on an I/O error).
        ok: bool,
    },
    /// Memory is short: only `available` bytes may still be used for prefetching.
    MemoryPressure {
        /// Bytes still available.
        available: ByteLen,
    },
}

/// What a policy asks a driver to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    /// Read `range` of `file` into `into`. The driver answers with `Input::Fetched { id, .. }`.
    Fetch {
        /// Identity of this fetch.
        id: FetchId,
        /// Which file.
        file: FileId,
        /// The bytes to fetch, clipped to the file.
        range: ByteRange,
        /// Where the data goes.
        into: Tier,
    },
    /// Abandon a fetch that has not completed.
    Cancel {
        /// The fetch to abandon.
        id: FetchId,
    },
    /// The policy no longer needs `range` of `file` kept in memory.
    Release {
        /// Which file.
        file: FileId,
        /// The bytes to release.
        range: ByteRange,
    },
}

/// The interface every policy implements.
pub trait Policy {
    /// The policy's name as the config spells it (`none`, `seqp`, ...).
    fn name(&self) -> &str;
    /// Feeds one input at `now`.
    fn handle(&mut self, now: Instant, input: Input);
    /// The next thing the driver should do, if any.
    fn poll_output(&mut self) -> Option<Output>;
    /// When the policy wants `handle_timeout` called, if ever.
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    /// Called by the driver once `now` has reached the instant from `poll_timeout`.
    fn handle_timeout(&mut self, _now: Instant) {}
}

/// A policy's settings, as plain data. The simulator, the engine and the CLI all build policies from
/// this one struct, by name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyConfig {
    /// Which policy: see [`POLICY_NAMES`].
    pub name: String,
    /// The largest readahead window (Linux `read_ahead_kb`), for the readahead family.
    pub readahead_max: ByteLen,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        PolicyConfig {
            name: "seqp".into(),
            readahead_max: ByteLen::kib(128),
        }
    }
}

/// The policies this build knows, by name.
pub const POLICY_NAMES: &[&str] = &["none", "seqp"];

/// Why a policy could not be built.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum PolicyError {
    /// The name is not one of [`POLICY_NAMES`].
    #[error("unknown policy `{0}`; choose one of: {names}", names = POLICY_NAMES.join(", "))]
    UnknownName(String),
    /// A setting is out of range; the message names the key and the bound.
    #[error("policy.{key}: {message}")]
    BadSetting {
        /// The config key, without the `policy.` prefix.
        key: &'static str,
        /// What is wrong and what to write instead.
        message: String,
    },
}

/// Builds the policy named in `cfg` over the given layout.
pub fn build(cfg: &PolicyConfig, layout: Arc<Layout>) -> Result<Box<dyn Policy>, PolicyError> {
    match cfg.name.as_str() {
        "none" => Ok(Box::new(readahead::NoPrefetch::new())),
        "seqp" => Ok(Box::new(readahead::Seqp::new(cfg.readahead_max, layout)?)),
        other => Err(PolicyError::UnknownName(other.to_string())),
    }
}

/// Hands out fetch ids in increasing order, so a policy's decisions are numbered the same way in
/// every world.
#[derive(Clone, Debug, Default)]
pub struct FetchIds {
    next: u64,
}

impl FetchIds {
    /// The next unused id.
    pub fn next_id(&mut self) -> FetchId {
        let id = FetchId(self.next);
        self.next += 1;
        id
    }
}
