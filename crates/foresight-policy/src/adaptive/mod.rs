//! Delay-adaptive prefetching for networked storage (paper 004_80004320b985afc3.txt, "APS").
//!
//! A client that reads a file sequentially from a storage server keeps the server's device busy only
//! if the next request reaches the server before the current one has been read from the device (the
//! paper's PNR condition, section 3.1). A single readahead cannot do that when the round trip is long
//! or the device is fast, so the client keeps `alpha` readahead units in flight, with `alpha` taken
//! from the measured round trip and the server device's bandwidth (condition 20). On the server, each
//! stream is pinned to one dedicated I/O worker so that concurrent streams are not mixed on the
//! device (section 6.1), and a new stream goes to the worker with the fewest queued requests, then the
//! fewest streams, then the lowest id (section 6.2).
//!
//! Everything here is pure: time comes in as [`foresight_core::Instant`] arguments, and the drivers
//! (the simulator's DFS model and the real HTTP client and server in `foresight-net`) execute the
//! decisions.
//!
//! - [`rtt`]: round-trip and bottleneck-rate estimators fed with request timings;
//! - [`alpha`]: the device figures a server publishes and `alpha` from condition 20;
//! - [`aps`]: the per-stream readahead window of Algorithm 1, with the random-read rule, and
//!   [`Aps`], the same machine behind the [`crate::Policy`] trait;
//! - [`workers`]: the worker choice `First(Min_st(Min_req))` and a worker's stream-grouped queue.

pub mod alpha;
pub mod aps;
pub mod dfs;
pub mod rtt;
pub mod workers;

pub use alpha::{alpha_for, AlphaMode, DeviceFigures, DEFAULT_PEAK_RATIO};
pub use aps::{Aps, ApsConfig, ApsStream, FetchKind, RangeRequest};
pub use rtt::{RateEstimator, RttEstimator};
pub use workers::{StreamGroupedQueue, WorkerChoice, WorkerId};
