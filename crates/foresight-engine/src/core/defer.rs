//! Deferred reads. The policy may defer a read (`Output::Defer`) because its own fetches will
//! bring the bytes; the simulator keeps such a read parked while anything is in flight and for
//! the rest of the instant. The engine has no instants, only real time, so it approximates one:
//! a deferred read waits while anything is in flight, and once the engine falls idle it waits a
//! grace period (longer while another stream has promised by its hints to read on, not at all
//! when no other stream may read at once) before it gives up on the fetches and reads on demand.
//! Each stream's recent gaps between reads tell whether it thinks between reads, and so whether
//! it is worth waiting for.

use std::sync::{Arc, Condvar};

use foresight_core::{Instant, StreamId};

use super::{Core, DeferWait, StreamState, DEFER_GRACE_NS, DEFER_PATIENCE_NS, THINK_SAMPLES};

impl Core {
    /// Whether the reader of `stream` should wait for the policy's fetches rather than read the
    /// missing byte at `pos` on demand. The deferral ends, and the read falls back to demand
    /// reads, when a fetch delivered that byte since the read was deferred (a byte delivered and
    /// missing again will not be fetched again), or when the engine has stayed idle for
    /// [`DEFER_GRACE_NS`] ([`DEFER_PATIENCE_NS`] while another stream has promised, by its hints,
    /// to read on; not at all when no other stream may read at once, as when all think between
    /// reads: [`Core::idle_wait_ns`]): nothing in flight or queued, no fetch of the policy's
    /// under way, and no read handed to the backend, so nothing the policy might fetch for it is
    /// coming. A deferral ended so ends every other deferral too, as the simulator sends all its
    /// parked reads to the disk at the end of an idle instant. While
    /// anything is in flight the reader waits (any completion may let the policy fetch, as the
    /// simulator's parked reads wait while anything is in flight in its page cache); while the
    /// engine is idle it waits out the rest of the grace period. A waiting reader is registered
    /// to be woken when the fetches change or the engine falls idle.
    pub(crate) fn defer_wait(
        &mut self,
        now: Instant,
        stream: StreamId,
        pos: u64,
        cv: &Arc<Condvar>,
    ) -> DeferWait {
        let st = &self.streams[stream.0 as usize];
        if !st.deferred {
            return DeferWait::Demand;
        }
        if st.delivered.iter().any(|&(s, e)| s <= pos && pos < e) {
            self.undefer(stream);
            return DeferWait::Demand;
        }
        let wait = if self.busy() {
            self.quiet = None;
            DeferWait::Woken
        } else {
            let since = match self.quiet {
                Some((submitted, since)) if submitted == self.submitted => since,
                _ => {
                    self.quiet = Some((self.submitted, now));
                    now
                }
            };
            let idle_ns = now.0.saturating_sub(since.0);
            let grace_ns = self.idle_wait_ns(stream);
            let patient = grace_ns == DEFER_PATIENCE_NS;
            if idle_ns >= grace_ns {
                if patient {
                    // Those that promised to read on and have not since the engine fell idle
                    // broke the promise: it costs one patience, not one per deferred read.
                    for (i, st) in self.streams.iter_mut().enumerate() {
                        let idle_since = st.read_at.is_none_or(|at| at <= since);
                        if i != stream.0 as usize && Self::reads_on(st) && idle_since {
                            st.lapsed = true;
                        }
                    }
                }
                // Every deferred read ends now, not only the first to look: the simulator sends
                // all its parked reads to the disk at the end of an idle instant, whereas here the
                // others, woken when the engine fell idle, would find it busy with this reader's
                // demand read and wait for the next idle moment, so a stream that reads on demand
                // between them would get the disk once per deferred read the others get.
                let deferred: Vec<StreamId> = (0..self.streams.len())
                    .filter(|&i| self.streams[i].deferred)
                    .map(|i| StreamId(i as u32))
                    .collect();
                for s in deferred {
                    self.undefer(s);
                }
                self.wake_defer_waiters();
                return DeferWait::Demand;
            }
            // Looked at again at least every short grace period: the reader that promised to
            // read on may stop waiting for nothing, or run out of disclosed reads, meanwhile.
            DeferWait::AtMost((grace_ns - idle_ns).min(DEFER_GRACE_NS))
        };
        if !self.defer_waiters.iter().any(|(s, _)| *s == stream) {
            self.defer_waiters.push((stream, cv.clone()));
        }
        assert!(
            self.defer_waiters.len() <= self.streams.len(),
            "more deferred readers than streams"
        );
        wait
    }

    /// How long a deferred read of `stream` waits for the idle engine before it reads on demand,
    /// by what the other streams may do. Another stream that may read at once (open, neither
    /// deferred nor waiting for memory, and not thinking between reads: [`THINK_SAMPLES`]) may
    /// let the policy fetch: [`DEFER_PATIENCE_NS`] if one has promised, by hints it has not
    /// lapsed on, to read on, [`DEFER_GRACE_NS`] otherwise. When no other stream may, nothing
    /// will make the policy fetch, and the read waits no more: the simulator's parked reads go to
    /// the disk once nothing is in flight at the end of an instant, and its clients that think,
    /// as all whose reads are parked, read nothing at that instant. Asked only while the engine is
    /// idle, when no chunk is in flight, so a stream still marked as waiting for one has been
    /// woken and not yet run (a descheduled thread on a loaded host): it is about to read on too.
    fn idle_wait_ns(&self, stream: StreamId) -> u64 {
        debug_assert!(!self.busy(), "asked while reads are in flight");
        let mut wait_ns = 0;
        for (i, st) in self.streams.iter().enumerate() {
            if i == stream.0 as usize || !Self::may_read_at_once(st) {
                continue;
            }
            if Self::reads_on(st) {
                return DEFER_PATIENCE_NS;
            }
            wait_ns = DEFER_GRACE_NS;
        }
        wait_ns
    }

    /// Whether `st` is open, free to read (neither deferred nor waiting for memory), and reads
    /// again at once rather than thinking between reads (see [`THINK_SAMPLES`]).
    fn may_read_at_once(st: &StreamState) -> bool {
        st.open && !st.deferred && !st.waits_for_memory && !Self::thinks(st)
    }

    /// Whether `st` may read at once and has promised, by hints it has not yet lapsed on, to
    /// read on.
    fn reads_on(st: &StreamState) -> bool {
        Self::may_read_at_once(st) && st.hinted_reads_left > 0 && !st.lapsed
    }

    /// Whether `st` has had a gap between reads and each of its last [`THINK_SAMPLES`] (or all
    /// it has had, if fewer) lasted at least [`DEFER_GRACE_NS`]. One gap decides at first, so
    /// that a stream that thinks keeps no deferred read waiting past its second read.
    fn thinks(st: &StreamState) -> bool {
        let seen = st.gaps_seen.min(THINK_SAMPLES as u64) as usize;
        seen > 0
            && st.gaps_ns[..seen]
                .iter()
                .all(|&gap_ns| gap_ns >= DEFER_GRACE_NS)
    }

    /// Whether anything is in flight or queued, or the policy has a fetch under way or a
    /// completion it has not heard of.
    pub(super) fn busy(&self) -> bool {
        self.in_flight > 0
            || !self.urgent.is_empty()
            || !self.ahead.is_empty()
            || !self.fetches.is_empty()
            || !self.done_now.is_empty()
    }

    /// Marks `stream`'s current read deferred.
    pub(super) fn defer(&mut self, stream: StreamId) {
        let st = &mut self.streams[stream.0 as usize];
        if st.deferred {
            return;
        }
        st.deferred = true;
        st.delivered.clear();
        let file = st.file;
        self.files[file.0 as usize].deferred.push(stream);
    }

    /// Ends the deferral of `stream`'s current read, if it has one.
    pub(super) fn undefer(&mut self, stream: StreamId) {
        let st = &mut self.streams[stream.0 as usize];
        if !st.deferred {
            return;
        }
        st.deferred = false;
        st.delivered.clear();
        let file = st.file;
        self.files[file.0 as usize]
            .deferred
            .retain(|&s| s != stream);
    }

    /// Records that bytes `[from, to)` of the file `stream` reads have been delivered to its
    /// deferred read (clipped to the read).
    pub(super) fn note_delivered(&mut self, stream: StreamId, from: u64, to: u64) {
        let st = &mut self.streams[stream.0 as usize];
        let (from, to) = (from.max(st.read.0), to.min(st.read.1));
        if from >= to {
            return;
        }
        // Joined with every range it meets or touches, so the list stays sorted and disjoint.
        let v = &mut st.delivered;
        let i = v.partition_point(|&(_, e)| e < from);
        let j = v.partition_point(|&(s, _)| s <= to);
        let (mut lo, mut hi) = (from, to);
        if i < j {
            lo = lo.min(v[i].0);
            hi = hi.max(v[j - 1].1);
        }
        v.splice(i..j, [(lo, hi)]);
    }

    /// Wakes every reader whose deferred read waits for the policy's fetches: a fetch started or
    /// ended, so each looks again.
    pub(super) fn wake_defer_waiters(&mut self) {
        for (_, cv) in self.defer_waiters.drain(..) {
            cv.notify_one();
        }
    }
}
