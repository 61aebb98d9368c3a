//! Many sequential streams on one disk: the host-level stream scheduler of paper
//! 001_9c47c4c84914efc3.txt (section 4). `classify` finds streams with per-region bitmaps;
//! `scheduler` dispatches them `D` at a time with large reads and stages their data. The simulator
//! runs the scheduler at the block level, on volume bytes; `files` runs the same scheduler over
//! files, for a driver that reads files (the real engine).

pub mod classify;
pub mod files;
pub mod scheduler;

pub use files::FileStreams;
pub use scheduler::{DispatchLimit, StreamScheduler, StreamsConfig, TurnOrder};
