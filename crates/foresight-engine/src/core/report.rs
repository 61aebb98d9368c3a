//! What the core reports about itself: the counters behind the engine's stats, a one-line
//! description of its state for diagnosing a stuck test, and the check of its accounting
//! invariants that tests run after every step. None of it changes the state, so a report taken
//! at any point under the lock shows what the driver holds then.

use crate::stats::Stats;

use super::{Core, Lru, State};

impl Core {
    /// A snapshot of the counters.
    pub(crate) fn stats(&self) -> Stats {
        Stats {
            memory_used_bytes: self.pool.held_bytes(),
            memory_peak_bytes: self.pool.held_peak_bytes(),
            memory_lent_bytes: self.pool.lent_bytes(),
            buffers_peak_bytes: self.pool.lent_peak_bytes(),
            ..self.stats.clone()
        }
    }

    /// A one-line summary of the driver's state, for diagnosing a stuck test.
    pub(crate) fn describe(&self) -> String {
        let live = self.chunks.iter().flatten();
        let in_flight = live
            .clone()
            .filter(|c| matches!(c.state, State::InFlight))
            .count();
        let waited = live.clone().filter(|c| !c.waiters.is_empty()).count();
        let waited_ready = live
            .clone()
            .filter(|c| !c.waiters.is_empty() && matches!(c.state, State::Ready { .. }))
            .count();
        let stuck: Vec<String> = self
            .streams
            .iter()
            .enumerate()
            .filter_map(|(i, st)| {
                let id = st.waiting_on?;
                let what = match self.chunks[id as usize].as_ref() {
                    None => "gone".to_string(),
                    Some(c) => format!(
                        "file {} pages {}..{} {} waiters {}",
                        c.file.0,
                        c.first_page,
                        c.end_page,
                        if matches!(c.state, State::InFlight) {
                            "in flight"
                        } else {
                            "ready"
                        },
                        c.waiters.len()
                    ),
                };
                Some(format!("stream {i} on chunk {id}: {what}"))
            })
            .take(5)
            .collect();
        let claimed: Vec<String> = self.lru[Lru::Claimed as usize]
            .values()
            .take(6)
            .map(|&id| {
                let c = self.chunk(id);
                format!(
                    "chunk {id} file {} pages {}..{} for {:?} owner {:?} fetch {:?} prefetched {} read pages {:?} consumed {} urgent {}",
                    c.file.0, c.first_page, c.end_page, c.for_stream, c.owner, c.fetch, c.prefetched, c.read_pages, c.consumed_bytes, c.urgent
                )
            })
            .collect();
        let stuck = format!("{}; claimed: [{}]", stuck.join("; "), claimed.join("; "));
        format!(
            "waiting: [{stuck}]; in_flight {} (chunks in flight {in_flight}), queued {}+{}, chunks {} ({} with waiters, {} of them ready), memory waiters {}, lent {} of {}, lru {}/{}/{}",
            self.in_flight,
            self.urgent.len(),
            self.ahead.len(),
            live.count(),
            waited,
            waited_ready,
            self.memory_waiters.len(),
            self.pool.lent_bytes(),
            self.pool.limit_bytes(),
            self.lru[0].len(),
            self.lru[1].len(),
            self.lru[2].len(),
        )
    }

    /// Checks the accounting invariants (tests call this after every step).
    pub(crate) fn check(&self) {
        let lent: u64 = self
            .chunks
            .iter()
            .flatten()
            .filter(|c| matches!(c.state, State::Ready { .. }))
            .map(|c| c.io_bytes)
            .sum::<u64>()
            + self
                .urgent
                .iter()
                .chain(self.ahead.iter())
                .map(|r| r.buf.capacity() as u64)
                .sum::<u64>();
        assert!(lent <= self.pool.lent_bytes());
        assert!(self.pool.held_bytes() <= self.pool.limit_bytes());
        assert!(self.in_flight <= self.cfg.queue_depth);
        let mut records = vec![0u32; self.files.len()];
        for c in self.chunks.iter().flatten() {
            records[c.file.0 as usize] += 1;
        }
        for (i, f) in self.files.iter().enumerate() {
            assert_eq!(f.live_chunks, records[i], "file {i}'s chunk count");
            assert!(f.remembered || (f.readers == 0 && f.live_chunks == 0 && f.chunks.is_empty()));
        }
        assert_eq!(
            self.identities.len(),
            self.files.iter().filter(|f| f.remembered).count(),
            "one identity per remembered file"
        );
        // Every byte read ahead is used, wasted, or still held unread.
        let held_unread: u64 = self
            .chunks
            .iter()
            .flatten()
            .filter(|c| c.prefetched)
            .map(|c| match c.state {
                State::Ready { valid_bytes, .. } => {
                    c.unread_bytes(0, c.end_page - c.first_page, valid_bytes)
                }
                State::InFlight => 0,
            })
            .sum();
        assert_eq!(
            self.stats.prefetch_used_bytes + self.stats.wasted_bytes + held_unread,
            self.stats.prefetched_bytes,
            "read-ahead bytes used, wasted and held unread"
        );
    }
}
