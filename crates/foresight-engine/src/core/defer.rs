//! Deferred reads. The policy may defer a read (`Output::Defer`) because its own fetches will
//! bring the bytes; the simulator keeps such a read parked while anything is in flight and for
//! the rest of the instant. The engine has no instants, only real time, so it approximates one:
//! a deferred read waits while anything is in flight, and once the engine falls idle it waits a
//! grace period (longer while another stream has promised by its hints to read on, not at all
//! when no other stream may read at once) before it gives up on the fetches and reads on demand.
//! Each stream's recent gaps between reads tell whether it thinks between reads, and so whether
//! it is worth waiting for.

use std::sync::{Arc, Condvar};

use foresight_core::{FileId, Instant, StreamId};

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
    /// to be woken when a fetch of its file starts or ends, or the engine falls idle.
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

    /// Wakes every reader whose deferred read waits for the policy's fetches: the engine fell
    /// idle (each times its grace period), a deferral ended them all, or a fetch was cancelled.
    pub(super) fn wake_defer_waiters(&mut self) {
        for (_, cv) in self.defer_waiters.drain(..) {
            cv.notify_one();
        }
    }

    /// Wakes the readers whose deferred read of `file` waits: a fetch of that file started (its
    /// bytes may now be in flight, or delivered and cut short by memory) or ended. The readers
    /// of other files would find what they found before: their bytes missing and the engine
    /// busy, which only the engine falling idle changes, and [`Core::dispatch`] wakes them all
    /// then. (Waking them all here cost about 24 wake-ups a reader at 1,024 streams under
    /// `streams`.)
    pub(super) fn wake_defer_waiters_of(&mut self, file: FileId) {
        let streams = &self.streams;
        self.defer_waiters.retain(|(s, cv)| {
            let theirs = streams[s.0 as usize].file == file;
            if theirs {
                cv.notify_one();
            }
            !theirs
        });
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::*;
    use foresight_core::{ByteRange, FetchId};
    use foresight_policy::{Input, Output, Tier};

    /// A core whose policy defers every read of its first file (`FileId(0)`, 4 MiB of memory,
    /// 64 KiB reads), with a reader of that file and one of [`other_file`], whose reads go on
    /// demand: the setting of the deferral tests.
    fn two_streams_deferring_the_first(
    ) -> (Core, Arc<Holding>, (FileId, StreamId), (FileId, StreamId)) {
        let policy = Box::new(DeferAll::of(Some(FileId(0))));
        let (mut core, backend, a, sa) = core_over_holding_with(policy, 4 << 20, 64 << 10, false);
        assert_eq!(a, FileId(0), "the deferred file is the first");
        let handle = other_file(&mut core);
        let (b, sb, _, _) = core.open(handle);
        (core, backend, (a, sa), (b, sb))
    }

    /// Defers every read of `file` (of any file, if `None`) that misses; other reads it leaves
    /// to demand reads. It fetches nothing but a missing read of `fetch_file`, first (as the
    /// stream scheduler fetches for the stream whose turn it is).
    struct DeferAll {
        file: Option<FileId>,
        fetch_file: Option<FileId>,
        next_id: u64,
        out: VecDeque<Output>,
    }

    impl DeferAll {
        fn of(file: Option<FileId>) -> DeferAll {
            DeferAll {
                file,
                fetch_file: None,
                next_id: 0,
                out: VecDeque::new(),
            }
        }
    }

    impl Policy for DeferAll {
        fn name(&self) -> &str {
            "defer-all"
        }
        fn handle(&mut self, _now: Instant, input: Input) {
            if let Input::Read {
                file,
                range,
                miss: Some(_),
                ..
            } = input
            {
                if self.fetch_file == Some(file) {
                    self.out.push_back(Output::Fetch {
                        id: FetchId(self.next_id),
                        file,
                        range,
                        into: Tier::Memory,
                    });
                    self.next_id += 1;
                }
                if self.file.is_none_or(|f| f == file) {
                    self.out.push_back(Output::Defer { file, range });
                }
            }
        }
        fn poll_output(&mut self) -> Option<Output> {
            self.out.pop_front()
        }
    }

    /// A deferred read waits while anything is in flight, another stream's demand reads
    /// included, and gives up on the policy only once the engine has stayed idle, with no read
    /// handed to the backend, for `DEFER_GRACE_NS`; a read issued meanwhile starts the grace
    /// period again.
    #[test]
    fn a_deferred_read_waits_while_anything_is_in_flight_and_for_a_grace_period_after() {
        let (mut core, backend, (a, sa), (b, sb)) = two_streams_deferring_the_first();
        let cv = Arc::new(Condvar::new());
        // The other stream reads on demand; this one's read is deferred.
        core.begin_read(Instant(0), sb, b, 0, 64 << 10);
        assert_eq!(core.in_flight, 1);
        core.begin_read(Instant(0), sa, a, 0, 64 << 10);
        assert_eq!(core.in_flight, 1, "the deferred read issued nothing");
        // The policy has no fetch under way, but the other stream's read is in flight.
        assert_eq!(
            core.defer_wait(Instant(1_000), sa, 0, &cv),
            DeferWait::Woken
        );
        // It completes: the engine is idle, and the waiting reader is woken to time its wait.
        core.complete_all(Instant(2_000), &mut completions(&backend));
        assert!(
            core.defer_waiters.is_empty(),
            "woken when the engine fell idle"
        );
        assert_eq!(
            core.defer_wait(Instant(3_000), sa, 0, &cv),
            DeferWait::AtMost(DEFER_GRACE_NS)
        );
        // The other stream reads again within the grace period: it starts again.
        core.begin_read(Instant(4_000), sb, b, 64 << 10, 128 << 10);
        assert_eq!(
            core.defer_wait(Instant(5_000), sa, 0, &cv),
            DeferWait::Woken
        );
        core.complete_all(Instant(6_000), &mut completions(&backend));
        assert_eq!(
            core.defer_wait(Instant(7_000), sa, 0, &cv),
            DeferWait::AtMost(DEFER_GRACE_NS)
        );
        assert_eq!(
            core.defer_wait(Instant(7_000 + DEFER_GRACE_NS - 1), sa, 0, &cv),
            DeferWait::AtMost(1)
        );
        // Idle for the whole grace period: the read falls back to demand reads.
        assert_eq!(
            core.defer_wait(Instant(7_000 + DEFER_GRACE_NS), sa, 0, &cv),
            DeferWait::Demand
        );
        assert!(!core.streams[sa.0 as usize].deferred);
        core.check();
    }

    /// A deferred read waits past the grace period while another stream, neither deferred nor
    /// waiting for memory, has disclosed reads it has not made: that reader will read on, as the
    /// simulator's clients read on at once. It counts as reading on when its chunk has completed
    /// and woken it but its thread has not run yet (a loaded host). Once it has made its disclosed
    /// reads the short grace period applies again.
    #[test]
    fn a_deferred_read_outwaits_the_grace_period_while_another_stream_has_hinted_reads_left() {
        let (mut core, backend, (a, sa), (b, sb)) = two_streams_deferring_the_first();
        let (cv, other_cv) = (Arc::new(Condvar::new()), Arc::new(Condvar::new()));
        let kib64 = 64 << 10;
        core.hint(
            Instant(0),
            sb,
            b,
            vec![ByteRange::new(0, kib64), ByteRange::new(0, kib64)],
        );
        core.begin_read(Instant(0), sb, b, 0, kib64);
        core.begin_read(Instant(0), sa, a, 0, kib64);
        assert!(core.streams[sa.0 as usize].deferred);
        // The other stream waits for its chunk, which completes and wakes it; it has not run.
        let id = core.covering(b, 0).expect("the demand read's chunk");
        core.wait_for_chunk(id, sb, &other_cv);
        core.complete_all(Instant(2_000), &mut completions(&backend));
        assert_eq!(
            core.defer_wait(Instant(3_000), sa, 0, &cv),
            DeferWait::AtMost(DEFER_GRACE_NS)
        );
        // Idle past the grace period: still waiting, looking again a grace period later.
        let late = Instant(3_000 + DEFER_GRACE_NS + 1);
        assert_eq!(
            core.defer_wait(late, sa, 0, &cv),
            DeferWait::AtMost(DEFER_GRACE_NS)
        );
        // The other stream runs and makes its last disclosed read, of the cached chunk: nothing
        // is read, the engine stays idle, and nobody has promised to read on.
        core.woke(sb);
        core.begin_read(late, sb, b, 0, kib64);
        assert_eq!(core.in_flight, 0);
        assert_eq!(core.defer_wait(late, sa, 0, &cv), DeferWait::Demand);
        // Patience is bounded even while a promise stands: a stream that hints and then stops.
        core.hint(late, sb, b, vec![ByteRange::new(kib64, kib64)]);
        core.begin_read(late, sa, a, 0, kib64);
        assert!(core.streams[sa.0 as usize].deferred);
        // Idle since the first look (nothing has been handed to the backend since).
        assert_eq!(
            core.defer_wait(Instant(3_000 + DEFER_PATIENCE_NS - 1), sa, 0, &cv),
            DeferWait::AtMost(1)
        );
        assert_eq!(
            core.defer_wait(Instant(3_000 + DEFER_PATIENCE_NS), sa, 0, &cv),
            DeferWait::Demand
        );
        core.check();
    }

    /// Stream `b` hints eight reads and makes `gaps_ns.len() + 1` of them, the gaps between them
    /// (from a read's end to the next read) as given; then `a` begins a read, which is deferred.
    /// Returns the core, `a`'s stream and file, and the instant of `a`'s read.
    fn deferred_after_hinted_reads_with_gaps(
        gaps_ns: &[u64],
    ) -> (Core, (FileId, StreamId), Instant) {
        let (mut core, backend, (a, sa), (b, sb)) = two_streams_deferring_the_first();
        let kib64 = 64 << 10;
        core.hint(Instant(0), sb, b, vec![ByteRange::new(0, kib64); 8]);
        let mut t = 1_000;
        for k in 0..=gaps_ns.len() {
            core.begin_read(Instant(t), sb, b, 0, kib64);
            core.complete_all(Instant(t + 1_000), &mut completions(&backend));
            core.end_read(Instant(t + 2_000), sb, kib64, 0, false);
            t += 2_000 + gaps_ns.get(k).copied().unwrap_or(0);
        }
        core.begin_read(Instant(t), sa, a, 0, kib64);
        assert!(core.streams[sa.0 as usize].deferred);
        assert!(!core.busy());
        (core, (a, sa), Instant(t))
    }

    /// The simulator lets a parked read go to the disk once nothing is in flight while the
    /// client it waits for thinks, and the engine follows where it can tell: a stream whose last
    /// `THINK_SAMPLES` gaps between reads (one is enough at first) each lasted at least the grace
    /// period thinks between reads, and a deferred read that no other stream may serve by reading
    /// at once ends as soon as the engine is idle, even while the thinking stream has hinted
    /// reads left. One long gap among short ones (a thread descheduled on a loaded host) is not
    /// thinking, and the long patience applies. (Before, any stream with hinted reads left kept
    /// the deferred read waiting up to 20 ms.)
    #[test]
    fn a_deferred_read_does_not_wait_for_a_stream_that_thinks_between_reads() {
        let cv = Arc::new(Condvar::new());
        let thinking = [1_000_000];
        let (mut core, (_, sa), t) = deferred_after_hinted_reads_with_gaps(&thinking);
        assert_eq!(
            core.defer_wait(t, sa, 0, &cv),
            DeferWait::Demand,
            "a stream that thinks 1 ms between reads is not waited for"
        );
        core.check();
        let descheduled = [20_000, 20_000, 5_000_000, 20_000];
        let (mut core, (_, sa), t) = deferred_after_hinted_reads_with_gaps(&descheduled);
        assert_eq!(
            core.defer_wait(t, sa, 0, &cv),
            DeferWait::AtMost(DEFER_GRACE_NS)
        );
        assert_eq!(
            core.defer_wait(Instant(t.0 + DEFER_GRACE_NS), sa, 0, &cv),
            DeferWait::AtMost(DEFER_GRACE_NS),
            "a stream that reads on at once, descheduled once, is waited for"
        );
        core.check();
    }

    /// When the idle engine ends a deferral, it ends every deferral, as the simulator sends all
    /// its parked reads to the disk at the end of an idle instant. (Before, only the reader that
    /// looked first read on demand; the others, woken when the engine fell idle, found it busy
    /// with that read and waited for the next idle moment: with five thinking clients under
    /// `directed`, the one stream that read on demand got 48 device reads in 1.4 s against 14 to
    /// 20 for each deferred one, where the simulator gave each 27.)
    #[test]
    fn an_idle_engine_ends_every_deferral_at_once_not_only_the_first() {
        let policy = Box::new(DeferAll::of(None));
        let (mut core, _backend, a, sa) = core_over_holding_with(policy, 4 << 20, 64 << 10, false);
        let handle = other_file(&mut core);
        let (b, sb, _, _) = core.open(handle);
        let cv = Arc::new(Condvar::new());
        let kib64 = 64 << 10;
        core.begin_read(Instant(0), sa, a, 0, kib64);
        core.begin_read(Instant(0), sb, b, 0, kib64);
        assert!(core.streams[sa.0 as usize].deferred && core.streams[sb.0 as usize].deferred);
        assert!(!core.busy());
        // No other stream may read at once (the other is deferred too): the deferral ends.
        assert_eq!(
            core.defer_wait(Instant(1_000), sa, 0, &cv),
            DeferWait::Demand
        );
        assert!(core.demand(sa, a, 0, kib64));
        assert!(core.busy());
        // The other read's deferral ended with it, though the engine is busy now.
        assert!(!core.streams[sb.0 as usize].deferred);
        assert_eq!(
            core.defer_wait(Instant(2_000), sb, 0, &cv),
            DeferWait::Demand
        );
        core.check();
    }

    /// Whether `stream`'s deferred read is registered to be woken (a wake takes it off).
    fn waits(core: &Core, stream: StreamId) -> bool {
        core.defer_waiters.iter().any(|(s, _)| *s == stream)
    }

    /// A fetch that starts or ends for one file wakes the deferred readers of that file only: the
    /// others' bytes are no nearer, and the engine, still busy, keeps them waiting anyway. The
    /// engine falling idle wakes every deferred reader, each to time its grace period. (Before,
    /// every fetch that started or ended woke every deferred reader: at 1,024 streams under
    /// `streams`, about 24 wake-ups a reader, all of which found nothing changed.)
    #[test]
    fn a_fetch_of_one_file_wakes_only_its_deferred_readers_and_falling_idle_wakes_all() {
        let policy = Box::new(DeferAll {
            fetch_file: Some(FileId(1)),
            ..DeferAll::of(None)
        });
        let (mut core, backend, a, sa) = core_over_holding_with(policy, 4 << 20, 64 << 10, false);
        let handle = other_file(&mut core);
        let (b, sb, _, _) = core.open(handle);
        assert_eq!(b, FileId(1), "the fetched file is the second");
        let (cv_a, cv_b) = (Arc::new(Condvar::new()), Arc::new(Condvar::new()));
        let kib64 = 64 << 10;
        // A fetch of `b` is in flight; `a`'s read is deferred and waits, the engine busy.
        core.begin_read(Instant(0), sb, b, 0, kib64);
        assert_eq!(core.in_flight, 1, "the fetch of b");
        core.begin_read(Instant(0), sa, a, 0, kib64);
        assert!(core.streams[sa.0 as usize].deferred);
        assert_eq!(
            core.defer_wait(Instant(1_000), sa, 0, &cv_a),
            DeferWait::Woken
        );
        // Another fetch of `b` starts: `a`'s reader sleeps on.
        core.begin_read(Instant(2_000), sb, b, kib64, 2 * kib64);
        assert_eq!(core.in_flight, 2, "both fetches of b");
        assert!(waits(&core, sa), "a fetch of b started and woke a's reader");
        // `b`'s reader waits for bytes no fetch covers (as far as the engine knows, a
        // deferral of its own): its file's fetch ending wakes it, and only it.
        assert!(core.streams[sb.0 as usize].deferred);
        assert_eq!(
            core.defer_wait(Instant(3_000), sb, 4 * kib64, &cv_b),
            DeferWait::Woken
        );
        let mut held = completions(&backend);
        assert_eq!(held.len(), 2);
        let mut second = held.split_off(1);
        core.complete_all(Instant(4_000), &mut held);
        assert!(core.busy(), "the second fetch is in flight");
        assert!(!waits(&core, sb), "b's fetch ended: b's reader looks again");
        assert!(waits(&core, sa), "b's fetch ended and woke a's reader");
        // The last fetch ends and the engine falls idle: every deferred reader wakes.
        assert_eq!(
            core.defer_wait(Instant(5_000), sb, 4 * kib64, &cv_b),
            DeferWait::Woken
        );
        core.complete_all(Instant(6_000), &mut second);
        assert!(!core.busy());
        assert!(
            core.defer_waiters.is_empty(),
            "the engine fell idle and woke every deferred reader"
        );
        core.check();
    }

    /// A stream that hints reads and then makes none, while it stays open, costs other streams'
    /// deferred reads the long patience once, not on every deferred read: once a deferred read
    /// has waited it out, the stream's promise counts for nothing until it reads again.
    #[test]
    fn a_stream_that_hints_and_stops_reading_costs_the_patience_once_not_per_deferred_read() {
        let (mut core, backend, (a, sa), (b, sb)) = two_streams_deferring_the_first();
        let cv = Arc::new(Condvar::new());
        let kib64 = 64 << 10;
        // Three reads promised; none is made for a long while.
        core.hint(Instant(0), sb, b, vec![ByteRange::new(0, kib64); 3]);
        core.begin_read(Instant(0), sa, a, 0, kib64);
        assert!(core.streams[sa.0 as usize].deferred);
        assert_eq!(
            core.defer_wait(Instant(1_000), sa, 0, &cv),
            DeferWait::AtMost(DEFER_GRACE_NS)
        );
        assert_eq!(
            core.defer_wait(Instant(1_000 + DEFER_GRACE_NS), sa, 0, &cv),
            DeferWait::AtMost(DEFER_GRACE_NS),
            "the first deferral waits for the promise"
        );
        let t = 1_000 + DEFER_PATIENCE_NS;
        assert_eq!(core.defer_wait(Instant(t), sa, 0, &cv), DeferWait::Demand);
        assert!(core.demand(sa, a, 0, kib64));
        core.complete_all(Instant(t), &mut completions(&backend));
        core.end_read(Instant(t), sa, kib64, DEFER_PATIENCE_NS, false);
        // The next deferred read: the promise has lapsed, so the short grace period applies.
        core.begin_read(Instant(t + 1), sa, a, kib64, 2 * kib64);
        assert!(core.streams[sa.0 as usize].deferred);
        assert_eq!(
            core.defer_wait(Instant(t + 2), sa, kib64, &cv),
            DeferWait::AtMost(DEFER_GRACE_NS)
        );
        assert_eq!(
            core.defer_wait(Instant(t + 2 + DEFER_GRACE_NS), sa, kib64, &cv),
            DeferWait::Demand,
            "a stream that broke its promise keeps no one waiting again"
        );
        // A read renews the promise (two hinted reads are left).
        assert!(core.demand(sa, a, kib64, 2 * kib64));
        core.complete_all(Instant(t + 3 + DEFER_GRACE_NS), &mut completions(&backend));
        core.end_read(Instant(t + 3 + DEFER_GRACE_NS), sa, kib64, 0, false);
        let u = t + 10 * DEFER_GRACE_NS;
        core.begin_read(Instant(u), sb, b, 0, kib64);
        core.complete_all(Instant(u), &mut completions(&backend));
        core.begin_read(Instant(u + 1), sa, a, 2 * kib64, 3 * kib64);
        assert_eq!(
            core.defer_wait(Instant(u + 2), sa, 2 * kib64, &cv),
            DeferWait::AtMost(DEFER_GRACE_NS)
        );
        assert_eq!(
            core.defer_wait(Instant(u + 2 + DEFER_GRACE_NS), sa, 2 * kib64, &cv),
            DeferWait::AtMost(DEFER_GRACE_NS),
            "waiting for the stream that read again"
        );
        // It reads again while the engine stays idle (its data is there: nothing is submitted),
        // so when the patience runs out it has kept its promise and does not lapse.
        core.begin_read(Instant(u + 3 + DEFER_GRACE_NS), sb, b, 0, kib64);
        assert_eq!(core.in_flight, 0);
        let v = u + 2 + DEFER_PATIENCE_NS;
        assert_eq!(
            core.defer_wait(Instant(v), sa, 2 * kib64, &cv),
            DeferWait::Demand
        );
        assert!(core.demand(sa, a, 2 * kib64, 3 * kib64));
        core.complete_all(Instant(v), &mut completions(&backend));
        core.end_read(Instant(v), sa, kib64, 0, false);
        core.begin_read(Instant(v + 1), sa, a, 3 * kib64, 4 * kib64);
        assert_eq!(
            core.defer_wait(Instant(v + 2), sa, 3 * kib64, &cv),
            DeferWait::AtMost(DEFER_GRACE_NS)
        );
        assert_eq!(
            core.defer_wait(Instant(v + 2 + DEFER_GRACE_NS), sa, 3 * kib64, &cv),
            DeferWait::AtMost(DEFER_GRACE_NS),
            "a stream that read in the idle spell still promises to read on"
        );
        core.check();
    }
}
