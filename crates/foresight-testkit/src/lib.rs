//! Foresight's conformance suite: the same scenario in both worlds.
//!
//! The simulator and the real engine are two drivers of the same policy objects. This crate runs
//! one scenario in each (the simulator with a device model; the engine on its `emulated` backend,
//! which reads real files but completes each read when the same device model says) and compares
//! what the policy decided and what the application got. [`recording`] wraps a policy so that
//! every input and every output is logged, in either world; [`conformance`] runs the scenario and
//! compares the logs.

pub mod conformance;
pub mod recording;

pub use conformance::{
    compare, run_engine, run_sim, Comparison, ReadStep, Scenario, StreamTrace, Workload, WorldRun,
};
pub use recording::{Decision, DecisionLog};
