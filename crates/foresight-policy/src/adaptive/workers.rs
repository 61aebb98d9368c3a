//! Dedicated I/O workers on the server side (paper 004_80004320b985afc3.txt, sections 6.1 and 6.2).
//!
//! A shared request queue lets the device see the requests of many streams interleaved, which turns
//! sequential streams into seeks. Instead, every stream is pinned to one of a fixed set of workers
//! when it is created, and each worker has its own queue.
//!
//! [`WorkerChoice`] picks the worker for a new stream with the paper's
//! `First(Min_st(Min_req(worker_1..n)))`: among the workers with the fewest queued requests, those
//! with the fewest streams, and of those the lowest id (section 6.2).
//!
//! [`StreamGroupedQueue`] is one worker's queue when it holds more streams than one (section 6.1):
//! requests are grouped by stream, groups are kept in order of arrival, and the worker keeps
//! serving the group at the front. A served group stays at the front until the worker comes back
//! for more, so a request that arrives for the stream being served is served before other streams'
//! (in the paper the worker leaves the request it serves at the head of the queue until it is done
//! with it). A burst limit, off by default, moves a group that has been served that many times in a
//! row to the back, so that a stream that never pauses cannot hold its worker for ever.

use std::collections::VecDeque;
use std::fmt;

use foresight_core::StreamId;

use crate::PolicyError;

/// The most workers a [`WorkerChoice`] may hold.
pub const MAX_WORKERS: u32 = 4096;

/// A dedicated worker's index, from 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct WorkerId(pub u32);

impl fmt::Display for WorkerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "w{}", self.0)
    }
}

/// `First(Min_st(Min_req(...)))` over per-worker counts: the lowest index among the workers with the
/// fewest streams among those with the fewest queued requests (paper 004, section 6.2). `None` when
/// there are no workers or the slices differ in length.
pub fn choose_worker(queued_requests: &[u64], streams: &[u64]) -> Option<usize> {
    if queued_requests.len() != streams.len() {
        return None;
    }
    let min_req = *queued_requests.iter().min()?;
    let min_st = queued_requests
        .iter()
        .zip(streams)
        .filter(|(q, _)| **q == min_req)
        .map(|(_, s)| *s)
        .min()?;
    queued_requests
        .iter()
        .zip(streams)
        .position(|(q, s)| *q == min_req && *s == min_st)
}

/// The server's bookkeeping for choosing workers: queued requests and pinned streams per worker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerChoice {
    queued_requests: Vec<u64>,
    streams: Vec<u64>,
}

impl WorkerChoice {
    /// `workers` idle workers with no streams; 1..=[`MAX_WORKERS`].
    pub fn new(workers: u32) -> Result<WorkerChoice, PolicyError> {
        if !(1..=MAX_WORKERS).contains(&workers) {
            return Err(PolicyError::BadSetting {
                key: "workers",
                message: format!("must be 1..={MAX_WORKERS}, got {workers}"),
            });
        }
        Ok(WorkerChoice {
            queued_requests: vec![0; workers as usize],
            streams: vec![0; workers as usize],
        })
    }

    /// The number of workers.
    pub fn workers(&self) -> u32 {
        self.streams.len() as u32
    }

    /// The worker a new stream would get now.
    pub fn choose(&self) -> WorkerId {
        let i = choose_worker(&self.queued_requests, &self.streams)
            .expect("a WorkerChoice has at least one worker and equal-length counts");
        WorkerId(i as u32)
    }

    /// Pins a new stream: chooses its worker and counts the stream there.
    pub fn assign_stream(&mut self) -> WorkerId {
        let w = self.choose();
        self.streams[w.0 as usize] += 1;
        w
    }

    /// A stream pinned to `worker` has ended.
    pub fn release_stream(&mut self, worker: WorkerId) {
        if let Some(s) = self.streams.get_mut(worker.0 as usize) {
            *s = s.saturating_sub(1);
        }
    }

    /// A request was queued at `worker`.
    pub fn request_queued(&mut self, worker: WorkerId) {
        if let Some(q) = self.queued_requests.get_mut(worker.0 as usize) {
            *q += 1;
        }
    }

    /// A request at `worker` was served (or dropped).
    pub fn request_done(&mut self, worker: WorkerId) {
        if let Some(q) = self.queued_requests.get_mut(worker.0 as usize) {
            *q = q.saturating_sub(1);
        }
    }

    /// Requests queued at `worker`.
    pub fn queued(&self, worker: WorkerId) -> u64 {
        self.queued_requests
            .get(worker.0 as usize)
            .copied()
            .unwrap_or(0)
    }

    /// Streams pinned to `worker`.
    pub fn streams(&self, worker: WorkerId) -> u64 {
        self.streams.get(worker.0 as usize).copied().unwrap_or(0)
    }
}

/// One worker's bounded queue, served grouped by stream. See the module documentation.
#[derive(Clone, Debug)]
pub struct StreamGroupedQueue<T> {
    groups: VecDeque<(StreamId, VecDeque<T>)>,
    len: usize,
    capacity: usize,
    max_burst: Option<u32>,
    burst: u32,
}

impl<T> StreamGroupedQueue<T> {
    /// A queue holding at most `capacity` requests (at least 1). `max_burst`: after that many
    /// requests of one stream in a row, the stream goes behind the others that wait; `None` serves
    /// a stream until its group runs dry, as the paper does.
    pub fn new(capacity: usize, max_burst: Option<u32>) -> StreamGroupedQueue<T> {
        assert!(capacity >= 1, "a worker queue needs room for one request");
        assert!(
            max_burst != Some(0),
            "a burst limit of zero would serve nothing"
        );
        StreamGroupedQueue {
            groups: VecDeque::new(),
            len: 0,
            capacity,
            max_burst,
            burst: 0,
        }
    }

    /// Queues `item` for `stream`, or hands it back when the queue is full.
    pub fn push(&mut self, stream: StreamId, item: T) -> Result<(), T> {
        if self.len >= self.capacity {
            return Err(item);
        }
        match self.groups.iter_mut().find(|(s, _)| *s == stream) {
            Some((_, g)) => g.push_back(item),
            None => self.groups.push_back((stream, VecDeque::from([item]))),
        }
        self.len += 1;
        Ok(())
    }

    /// The next request to serve and its stream.
    pub fn pop(&mut self) -> Option<(StreamId, T)> {
        // The group served last stays at the front, possibly empty, until now: drop it if nothing
        // arrived for it meanwhile.
        while self.groups.front().is_some_and(|(_, g)| g.is_empty()) {
            self.groups.pop_front();
            self.burst = 0;
        }
        if let Some(limit) = self.max_burst {
            if self.burst >= limit && self.groups.len() > 1 {
                if let Some(g) = self.groups.pop_front() {
                    self.groups.push_back(g);
                }
                self.burst = 0;
            }
        }
        let (stream, group) = self.groups.front_mut()?;
        let item = group.pop_front()?;
        self.burst += 1;
        self.len -= 1;
        Some((*stream, item))
    }

    /// Requests waiting.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no request waits.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The most requests the queue holds.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Streams with at least one request waiting.
    pub fn streams_waiting(&self) -> usize {
        self.groups.iter().filter(|(_, g)| !g.is_empty()).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn fewest_requests_then_fewest_streams_then_lowest_id() {
        assert_eq!(choose_worker(&[3, 1, 1, 2], &[0, 5, 2, 0]), Some(2));
        assert_eq!(choose_worker(&[0, 0, 0], &[1, 0, 0]), Some(1));
        assert_eq!(choose_worker(&[0, 0], &[0, 0]), Some(0));
        assert_eq!(choose_worker(&[], &[]), None);
        assert_eq!(choose_worker(&[0], &[0, 0]), None);
    }

    #[test]
    fn idle_workers_fill_round_robin_and_queues_steer_new_streams() {
        let mut c = WorkerChoice::new(3).unwrap();
        let got: Vec<u32> = (0..4).map(|_| c.assign_stream().0).collect();
        assert_eq!(got, vec![0, 1, 2, 0]);
        // Worker 1 is idle; 0 and 2 are busy: the next stream goes to 1 despite its stream.
        c.request_queued(WorkerId(0));
        c.request_queued(WorkerId(2));
        assert_eq!(c.assign_stream(), WorkerId(1));
        c.release_stream(WorkerId(1));
        c.request_done(WorkerId(0));
        assert_eq!((c.queued(WorkerId(0)), c.streams(WorkerId(1))), (0, 1));
        assert!(WorkerChoice::new(0).is_err());
    }

    #[test]
    fn a_worker_serves_one_stream_before_the_next_and_keeps_late_arrivals_in_front() {
        let mut q = StreamGroupedQueue::new(8, None);
        for (s, v) in [(1, 'a'), (2, 'x'), (1, 'b'), (3, 'p')] {
            q.push(StreamId(s), v).unwrap();
        }
        assert_eq!(q.pop(), Some((StreamId(1), 'a')));
        assert_eq!(q.pop(), Some((StreamId(1), 'b')));
        // Stream 1 is being served; its next request goes ahead of streams 2 and 3.
        q.push(StreamId(1), 'c').unwrap();
        assert_eq!(q.pop(), Some((StreamId(1), 'c')));
        assert_eq!(q.pop(), Some((StreamId(2), 'x')));
        assert_eq!(q.pop(), Some((StreamId(3), 'p')));
        assert_eq!(q.pop(), None);
        assert!(q.is_empty());
    }

    #[test]
    fn the_queue_is_bounded_and_a_burst_limit_rotates() {
        let mut q = StreamGroupedQueue::new(3, Some(2));
        q.push(StreamId(1), 1).unwrap();
        q.push(StreamId(1), 2).unwrap();
        q.push(StreamId(2), 9).unwrap();
        assert_eq!(q.push(StreamId(1), 3), Err(3));
        assert_eq!(q.pop(), Some((StreamId(1), 1)));
        q.push(StreamId(1), 3).unwrap();
        assert_eq!(q.pop(), Some((StreamId(1), 2)));
        // Two in a row for stream 1: stream 2 goes first.
        assert_eq!(q.pop(), Some((StreamId(2), 9)));
        assert_eq!(q.pop(), Some((StreamId(1), 3)));
        assert_eq!(q.streams_waiting(), 0);
    }

    proptest! {
        #[test]
        fn every_request_comes_out_once_in_per_stream_order(
            ops in proptest::collection::vec((0u32..5, any::<bool>()), 0..200),
            burst in proptest::option::of(1u32..4),
        ) {
            let mut q = StreamGroupedQueue::new(16, burst);
            let mut next = 0u32;
            let mut pushed = Vec::new();
            let mut popped = Vec::new();
            for (stream, is_push) in ops {
                if is_push {
                    if q.push(StreamId(stream), next).is_ok() {
                        pushed.push((stream, next));
                    }
                    next += 1;
                } else if let Some((s, v)) = q.pop() {
                    popped.push((s.0, v));
                }
                prop_assert!(q.len() <= q.capacity());
            }
            while let Some((s, v)) = q.pop() {
                popped.push((s.0, v));
            }
            let mut a = pushed.clone();
            let mut b = popped.clone();
            a.sort_unstable();
            b.sort_unstable();
            prop_assert_eq!(a, b);
            for s in 0..5 {
                let order: Vec<u32> = popped.iter().filter(|p| p.0 == s).map(|p| p.1).collect();
                prop_assert!(order.windows(2).all(|w| w[0] < w[1]));
            }
        }
    }
}
