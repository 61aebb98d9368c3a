//! Many sequential streams on one disk: the host-level stream scheduler of paper
//! 001_9c47c4c84914efc3.txt (section 4). `classify` finds streams with per-region bitmaps;
//! `scheduler` dispatches them `D` at a time with large reads and stages their data.

pub mod classify;
pub mod scheduler;

pub use scheduler::{StreamScheduler, StreamsConfig};
