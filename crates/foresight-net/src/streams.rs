//! The server's stream table: which stream and worker a (client, file) pair has, remembered until
//! the stream stays unused for the idle time or the table is full and it is the least recently
//! used.
//!
//! Every request looks its stream up, and a request that creates one first forgets idle streams
//! and, if the table is still full, the least recently used. Both need the streams in order of
//! last use, so the table keeps an index by a use counter (bumped on every lookup, under the
//! table's lock, so its order is that of the last-use times) beside the map: creating a stream
//! costs O(log n) instead of two scans of the whole table, which at 65,536 streams took most of a
//! request's time under the table's global lock.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use foresight_core::StreamId;
use foresight_policy::adaptive::{WorkerChoice, WorkerId};

/// The most idle streams one stream creation forgets, so that the request that finds many
/// expired pays for a bounded number; the next creations forget the rest.
pub(crate) const IDLE_FORGOTTEN_PER_CREATION: usize = 64;

/// A stream's key: the client (its `x-foresight-stream` header or its address) and the file.
pub(crate) type StreamKey = (String, PathBuf);

struct Entry {
    id: StreamId,
    worker: WorkerId,
    last_used: Instant,
    /// This entry's place in `by_use`.
    use_seq: u64,
}

/// The streams remembered, and the worker bookkeeping their creation and release drive.
pub(crate) struct StreamTable {
    map: HashMap<StreamKey, Entry>,
    /// Keys by use counter, least recently used first.
    by_use: BTreeMap<u64, StreamKey>,
    next_use: u64,
    next_id: u32,
    max_streams: usize,
    idle: Duration,
    /// The workers' queued requests and pinned streams.
    pub(crate) choice: WorkerChoice,
}

impl StreamTable {
    /// An empty table remembering at most `max_streams` (at least 1), each until unused for
    /// longer than `idle`.
    pub(crate) fn new(choice: WorkerChoice, max_streams: usize, idle: Duration) -> StreamTable {
        assert!(max_streams >= 1, "a stream table needs room for one stream");
        StreamTable {
            map: HashMap::new(),
            by_use: BTreeMap::new(),
            next_use: 0,
            next_id: 0,
            max_streams,
            idle,
            choice,
        }
    }

    /// Streams remembered.
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// The stream for `key` at `now`, created (and pinned to a worker) when first seen. Creation
    /// first forgets up to [`IDLE_FORGOTTEN_PER_CREATION`] streams unused for longer than the idle
    /// time, least recently used first, then the least recently used one if the table is still
    /// full. Returns the stream, its worker, and, when it was created, the streams forgotten.
    pub(crate) fn stream_for(
        &mut self,
        key: StreamKey,
        now: Instant,
    ) -> (StreamId, WorkerId, Option<Vec<StreamId>>) {
        let seq = self.next_use;
        self.next_use += 1;
        if let Some(e) = self.map.get_mut(&key) {
            e.last_used = now;
            let old = std::mem::replace(&mut e.use_seq, seq);
            let (id, worker) = (e.id, e.worker);
            if let Some(k) = self.by_use.remove(&old) {
                self.by_use.insert(seq, k);
            }
            return (id, worker, None);
        }
        let mut forgotten = Vec::new();
        while forgotten.len() < IDLE_FORGOTTEN_PER_CREATION {
            let expired = self.by_use.first_key_value().is_some_and(|(_, k)| {
                self.map
                    .get(k)
                    .is_some_and(|e| now.saturating_duration_since(e.last_used) > self.idle)
            });
            if !expired {
                break;
            }
            forgotten.extend(self.forget_least_recent());
        }
        if self.map.len() >= self.max_streams {
            forgotten.extend(self.forget_least_recent());
        }
        let worker = self.choice.assign_stream();
        let id = StreamId(self.next_id);
        self.next_id = self.next_id.wrapping_add(1);
        self.by_use.insert(seq, key.clone());
        self.map.insert(
            key,
            Entry {
                id,
                worker,
                last_used: now,
                use_seq: seq,
            },
        );
        debug_assert!(self.map.len() <= self.max_streams && self.map.len() == self.by_use.len());
        (id, worker, Some(forgotten))
    }

    fn forget_least_recent(&mut self) -> Option<StreamId> {
        let (_, key) = self.by_use.pop_first()?;
        let e = self.map.remove(&key)?;
        self.choice.release_stream(e.worker);
        Some(e.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The table as it was: a map scanned for idle streams and for the least recently used one.
    /// Ties (equal last-use times) go to the stream looked up first, which the scan's hash order
    /// left arbitrary; the idle streams are forgotten least recently used first, where the scan
    /// took the first 64 in hash order.
    struct Scan {
        map: HashMap<StreamKey, (StreamId, WorkerId, Instant, u64)>,
        next_use: u64,
        next_id: u32,
        max_streams: usize,
        idle: Duration,
        choice: WorkerChoice,
    }

    impl Scan {
        fn stream_for(
            &mut self,
            key: StreamKey,
            now: Instant,
        ) -> (StreamId, WorkerId, Option<Vec<StreamId>>) {
            let seq = self.next_use;
            self.next_use += 1;
            if let Some(e) = self.map.get_mut(&key) {
                e.2 = now;
                e.3 = seq;
                return (e.0, e.1, None);
            }
            let mut expired: Vec<_> = self
                .map
                .iter()
                .filter(|(_, e)| now.saturating_duration_since(e.2) > self.idle)
                .map(|(k, e)| (e.3, k.clone()))
                .collect();
            expired.sort();
            let mut forgotten = Vec::new();
            for (_, k) in expired.into_iter().take(IDLE_FORGOTTEN_PER_CREATION) {
                let e = self.map.remove(&k).unwrap();
                self.choice.release_stream(e.1);
                forgotten.push(e.0);
            }
            if self.map.len() >= self.max_streams {
                let k = self
                    .map
                    .iter()
                    .min_by_key(|(_, e)| (e.2, e.3))
                    .map(|(k, _)| k.clone())
                    .unwrap();
                let e = self.map.remove(&k).unwrap();
                self.choice.release_stream(e.1);
                forgotten.push(e.0);
            }
            let worker = self.choice.assign_stream();
            let id = StreamId(self.next_id);
            self.next_id += 1;
            self.map.insert(key, (id, worker, now, seq));
            (id, worker, Some(forgotten))
        }
    }

    proptest! {
        /// Over random lookups (a few hundred clients and files, so that streams are both reused
        /// and created) with the clock advancing by random steps, the index forgets the same
        /// streams as the scan, and gives the same stream ids and workers. proptest prints the
        /// failing case and its seed.
        #[test]
        fn the_index_forgets_the_same_streams_as_the_scan(
            max_streams in 1usize..40,
            idle_ms in 1u64..200,
            ops in proptest::collection::vec((0u16..300, 0u64..40, any::<bool>()), 1..600),
        ) {
            let idle = Duration::from_millis(idle_ms);
            let choice = WorkerChoice::new(3).unwrap();
            let mut index = StreamTable::new(choice.clone(), max_streams, idle);
            let mut scan = Scan {
                map: HashMap::new(),
                next_use: 0,
                next_id: 0,
                max_streams,
                idle,
                choice,
            };
            let mut now = Instant::now();
            for (i, (client, step_ms, queue)) in ops.into_iter().enumerate() {
                now += Duration::from_millis(step_ms);
                let key = (format!("c{}", client % 97), PathBuf::from(format!("f{}", client % 5)));
                let a = index.stream_for(key.clone(), now);
                let b = scan.stream_for(key, now);
                prop_assert_eq!(&a, &b, "op {}", i);
                // Queued requests steer the worker choice; both see the same.
                if queue {
                    index.choice.request_queued(a.1);
                    scan.choice.request_queued(b.1);
                }
                prop_assert_eq!(index.len(), scan.map.len());
                prop_assert!(index.len() <= max_streams);
            }
            prop_assert_eq!(&index.choice, &scan.choice);
        }
    }

    /// Many streams past their idle time are forgotten a bounded number per creation.
    #[test]
    fn a_creation_forgets_a_bounded_number_of_idle_streams() {
        let mut t = StreamTable::new(WorkerChoice::new(2).unwrap(), 1000, Duration::from_secs(1));
        let start = Instant::now();
        for i in 0..200 {
            t.stream_for((format!("c{i}"), PathBuf::from("f")), start);
        }
        let later = start + Duration::from_secs(5);
        let (_, _, forgotten) = t.stream_for(("new".into(), PathBuf::from("f")), later);
        let forgotten = forgotten.unwrap();
        assert_eq!(forgotten.len(), IDLE_FORGOTTEN_PER_CREATION);
        assert_eq!(
            forgotten[0],
            StreamId(0),
            "the least recently used goes first"
        );
        assert_eq!(t.len(), 200 - IDLE_FORGOTTEN_PER_CREATION + 1);
    }
}
