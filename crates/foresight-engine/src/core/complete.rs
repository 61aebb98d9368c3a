//! Completions from the backend. A read that returns fewer bytes than asked is re-issued for the
//! remainder, and only a read of zero bytes (or an unaligned tail under `O_DIRECT`) ends the file,
//! so a file truncated while it is read ends early instead of hanging. A failed prefetch is
//! dropped quietly, and a failed demand read is kept for the one stream that issued it, to be
//! reported when it reaches those bytes. A burst of completions is settled together so that the
//! reads they make room for reach the backend in one submission.

use std::sync::Arc;

use foresight_core::Instant;

use crate::backend::{IoCompletion, IoRequest};
use crate::buffer::ALIGN_BYTES;

use super::{Core, Lru, State, STREAM_ERRORS_MAX};

impl Core {
    /// Handles a backend completion.
    pub(crate) fn complete(&mut self, now: Instant, c: IoCompletion) {
        self.settle(now, c);
        self.dispatch();
    }

    /// Handles a burst of completions that arrived together, then hands the backend, in one
    /// batch, the reads they made room for. The policy still sees each completion on its own.
    pub(crate) fn complete_all(&mut self, now: Instant, cs: &mut Vec<IoCompletion>) {
        for c in cs.drain(..) {
            self.settle(now, c);
        }
        self.dispatch();
    }

    /// One completion: the chunk becomes ready (or is re-read, or fails), its waiters wake, and
    /// the policy runs. Reads it makes room for wait in the queues for the caller's `dispatch`.
    fn settle(&mut self, now: Instant, c: IoCompletion) {
        assert!(self.in_flight > 0, "a completion with nothing in flight");
        self.in_flight -= 1;
        let id = c.token as u32;
        let chunk = self.chunks[id as usize]
            .as_mut()
            .expect("a completion for a live chunk");
        assert!(
            matches!(chunk.state, State::InFlight),
            "chunk completed twice"
        );
        let ok = match c.result {
            Ok(n) => {
                self.stats.device_reads += 1;
                self.stats.device_bytes += n as u64;
                chunk.filled_bytes += n as u64;
                let filled = chunk.filled_bytes;
                let aligned = !chunk.direct || filled.is_multiple_of(ALIGN_BYTES as u64);
                if filled < chunk.expect_bytes && n > 0 && aligned && !chunk.doomed {
                    // A short read that is not the end of the file: read the remainder into the
                    // same buffer.
                    self.stats.short_reads += 1;
                    let file = self.files[chunk.file.0 as usize]
                        .handle
                        .clone()
                        .expect("a file with reads in flight is open");
                    let r = IoRequest {
                        token: c.token,
                        file,
                        offset_bytes: chunk.start_bytes() + filled,
                        buf: c.buf,
                        buf_offset: filled as usize,
                        len_bytes: (chunk.io_bytes - filled) as usize,
                        reader: chunk.reader,
                    };
                    if chunk.urgent {
                        self.urgent.push_front(r);
                    } else {
                        self.ahead.push_front(r);
                    }
                    return;
                }
                let valid_bytes = filled.min(chunk.expect_bytes);
                // Counted once read, as used and wasted bytes are: a prefetch that failed, or
                // was dropped before it was read, brought nothing in.
                if chunk.prefetched {
                    self.stats.prefetched_bytes += valid_bytes;
                }
                chunk.state = State::Ready {
                    valid_bytes,
                    buf: Arc::new(c.buf),
                };
                // A prefetch nobody is waiting for may be evicted by a demand read; one a reader
                // waits for is claimed until that reader copies it.
                if chunk.for_stream.is_none() {
                    chunk.for_stream = chunk.waiters.first().map(|(s, _)| *s);
                }
                let class = match chunk.for_stream {
                    Some(_) => Lru::Claimed,
                    None => chunk.unclaimed_class(),
                };
                for (_, w) in chunk.waiters.drain(..) {
                    w.notify_one();
                }
                let fetch = chunk.fetch;
                let for_stream = chunk.for_stream;
                if chunk.doomed {
                    self.free_chunk(id);
                } else {
                    self.lru_insert(id, class);
                    match (class, for_stream) {
                        (Lru::Claimed, Some(s)) => self.wake_memory_waiter(s),
                        _ => self.wake_memory_waiters(),
                    }
                }
                if let Some(fid) = fetch {
                    self.fetch_part_done(fid, true);
                }
                true
            }
            Err(e) => {
                self.stats.io_errors += 1;
                let (owner, start, end) = (
                    chunk.owner,
                    chunk.start_bytes(),
                    chunk.start_bytes() + chunk.expect_bytes,
                );
                self.pool.free(c.buf);
                if let Some(s) = owner {
                    let st = &mut self.streams[s.0 as usize];
                    if st.open {
                        if st.errors.len() == STREAM_ERRORS_MAX {
                            st.errors.pop_front();
                        }
                        st.errors.push_back((start, end, e));
                    }
                }
                self.drop_chunk_record(id);
                self.wake_memory_waiters();
                false
            }
        };
        let _ = ok;
        self.run_policy(now, None);
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::*;

    /// A core over `Holding` with queue depth 2 and no readahead, with one 1 MiB file open and a
    /// demand read of its first 256 KiB: four 64 KiB reads, two in flight and two queued.
    fn core_with_four_reads() -> (Core, Arc<Holding>) {
        let (mut core, backend, file, stream) = core_over_holding(1 << 20, 64 << 10);
        core.begin_read(Instant(0), stream, file, 0, 256 << 10);
        assert!(core.demand(stream, file, 0, 256 << 10));
        assert_eq!(core.in_flight, 2);
        assert_eq!(
            core.urgent.len() + core.ahead.len(),
            2,
            "two reads wait for a slot"
        );
        (core, backend)
    }

    #[test]
    fn a_burst_of_completions_refills_the_queue_in_one_submission() {
        let (mut core, backend) = core_with_four_reads();
        backend.batches.lock().unwrap().clear();
        let mut burst = completions(&backend);
        assert_eq!(burst.len(), 2);
        core.complete_all(Instant(1), &mut burst);
        assert!(burst.is_empty());
        assert_eq!(
            *backend.batches.lock().unwrap(),
            vec![2],
            "one batch of both waiting reads"
        );
        assert_eq!(core.in_flight, 2);
        assert_eq!(core.stats().device_reads, 2);
        core.check();
    }

    #[test]
    fn completions_one_at_a_time_refill_one_read_each() {
        let (mut core, backend) = core_with_four_reads();
        backend.batches.lock().unwrap().clear();
        for c in completions(&backend) {
            core.complete(Instant(1), c);
        }
        assert_eq!(*backend.batches.lock().unwrap(), vec![1, 1]);
        assert_eq!(core.in_flight, 2);
        core.check();
    }
}
