//! A fixed read-ahead, as a disk controller does it: every read that misses fetches what was asked
//! plus a fixed amount after it, in one request.
//!
//! This is the controller-level prefetching of paper 001_9c47c4c84914efc3.txt (section 3, Fig. 8):
//! it sits below the host, sees block requests as volume byte ranges, and has no notion of streams,
//! so with more streams than its cache holds, read-ahead data is evicted before it is used.

use std::collections::VecDeque;

use foresight_core::{ByteRange, Instant};

use crate::{FetchIds, Input, Output, Policy, Tier};

/// Fixed read-ahead on every miss. See the module documentation.
#[derive(Debug)]
pub struct FixedReadahead {
    readahead_bytes: u64,
    limit_bytes: u64,
    ids: FetchIds,
    out: VecDeque<Output>,
}

impl FixedReadahead {
    /// Reads `readahead_bytes` beyond every missing read, never past `limit_bytes`.
    pub fn new(readahead_bytes: u64, limit_bytes: u64) -> FixedReadahead {
        FixedReadahead {
            readahead_bytes,
            limit_bytes,
            ids: FetchIds::default(),
            out: VecDeque::new(),
        }
    }
}

impl Policy for FixedReadahead {
    fn name(&self) -> &str {
        "fixed"
    }

    fn handle(&mut self, _now: Instant, input: Input) {
        if let Input::Read {
            file,
            range,
            miss: Some(m),
            ..
        } = input
        {
            let end = (range.end().0 + self.readahead_bytes).min(self.limit_bytes);
            if end > m.0 {
                let id = self.ids.next_id();
                self.out.push_back(Output::Fetch {
                    id,
                    file,
                    range: ByteRange::new(m.0, end - m.0),
                    into: Tier::Memory,
                });
            }
        }
    }

    fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use foresight_core::{ByteOffset, FileId, StreamId};

    #[test]
    fn a_miss_reads_the_request_and_the_readahead_after_it() {
        let mut p = FixedReadahead::new(1 << 20, 10 << 20);
        let read = |p: &mut FixedReadahead, off: u64, miss: bool| {
            p.handle(
                Instant::ZERO,
                Input::Read {
                    stream: StreamId(0),
                    file: FileId(0),
                    range: ByteRange::new(off, 65536),
                    miss: miss.then_some(ByteOffset(off)),
                },
            );
            p.poll_output()
        };
        assert!(
            matches!(read(&mut p, 0, true), Some(Output::Fetch { range, .. }) if range == ByteRange::new(0, 65536 + (1 << 20)))
        );
        assert_eq!(read(&mut p, 65536, false), None);
        // Clipped at the end of the volume.
        assert!(
            matches!(read(&mut p, (10 << 20) - 65536, true), Some(Output::Fetch { range, .. }) if range.end().0 == 10 << 20)
        );
    }
}
