//! The host block queue, which lives in `foresight-device` so that the engine's emulated backend
//! runs the same queue (merging, `noop`/`deadline`/`anticipatory`) in front of its member disks
//! rather than a restatement of it; see [`foresight_device::blockq`].

pub use foresight_device::blockq::*;
