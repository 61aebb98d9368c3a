//! The readahead family: policies that infer sequential access from the reads themselves.
//!
//! `none` fetches nothing ahead (the driver reads exactly what was asked); `seqp` is Linux's
//! on-demand readahead. Later members (`saseqp`, `msp`) reshape the same windows for striped arrays.

mod seqp;

pub use seqp::{init_window_pages, next_window_pages, Seqp};

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
