//! Foresight's discrete-event simulator.
//!
//! A run ([`sim::run`]) takes a [`config::SimConfig`] (device, host, policy, workload, seed) and
//! drives the named policy from `foresight-policy`, a page cache and block queue ([`host`]) and a
//! device model from `foresight-device` through the workload, reporting the measurements of
//! [`metrics::Report`]; a config with a `[dfs]` section runs the distributed file system model
//! ([`dfs`]) instead, and a tier stack the tiered driver ([`tiered`]). The [`experiments`]
//! catalogue reproduces the papers' figures on top of it, writing CSVs, PNG plots ([`plot`]) and a
//! Markdown report. Everything random draws from the config's one seed, so the same config gives
//! the same report.

pub mod build;
pub mod config;
pub mod dfs;
pub mod experiments;
pub mod host;
pub mod metrics;
pub mod plans;
pub mod plot;
pub mod sim;
pub mod tiered;
pub mod trace;
pub mod validate;

pub use config::SimConfig;
pub use metrics::Report;
pub use sim::{run, Progress, RunOptions, RunOutput, SimError, TraceProgress};
