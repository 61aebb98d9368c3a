//! The readahead family: policies that infer sequential access from the reads themselves.
//!
//! `none` fetches nothing ahead (the driver reads exactly what was asked); `seqp` is Linux's
//! on-demand readahead; `saseqp` is the same window cut at strip boundaries so each fetch is one
//! disk request (paper 000_a596543dd26dac72.txt, section 3); `msp` prefetches whole stripes in the
//! RAID layer's cache once it sees a long (semi-)sequential run of strips (paper 000, section 4).
//! `seqp` and `saseqp` share the window state machine in `window`. `fixed` is a disk controller's
//! fixed read-ahead on every miss (paper 001_9c47c4c84914efc3.txt, section 3).

pub mod fixed;
pub mod msp;
pub mod saseqp;
pub mod seqp;
pub mod window;

pub use fixed::FixedReadahead;
pub use msp::{Msp, MspSettings};
pub use saseqp::Saseqp;
pub use seqp::Seqp;
pub use window::{init_window_pages, next_window_pages, WindowRule};

use std::collections::VecDeque;

use foresight_core::Instant;

use crate::{Input, Output, Policy};

/// Demand reads only: the policy never fetches anything, so the driver reads exactly the bytes each
/// request misses.
#[derive(Debug, Default)]
pub struct NoPrefetch {
    out: VecDeque<Output>,
}

impl NoPrefetch {
    /// A policy that never prefetches.
    pub fn new() -> Self {
        NoPrefetch::default()
    }
}

impl Policy for NoPrefetch {
    fn name(&self) -> &str {
        "none"
    }

    fn handle(&mut self, _now: Instant, _input: Input) {}

    fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }
}
