//! Driving the policy: its hints and its timer, and executing what it answers. Its fetches become
//! chunks for the pages not already covered, cut short when memory refuses them, and pages
//! fetched under the read that prompted them count as the application's rather than as
//! prefetched. The policy hears back, in the order the simulator tells it, which fetches are done
//! (those refused whole at once, the rest as they complete), that memory cut a fetch short, and
//! which files were forgotten. Nothing here decides what to read ahead: it only turns the
//! policy's decisions into queued reads.

use std::collections::VecDeque;

use foresight_core::{ByteLen, ByteRange, FetchId, FileId, Instant, StreamId};
use foresight_policy::{Input, Output, PAGE_BYTES};

use crate::pool::Purpose;

use super::{Chunk, ChunkSpec, Core, FetchState};

impl Core {
    /// Passes disclosed future reads to the policy, then tells it how much memory is free, as the
    /// simulator does after every hint: a policy sizing a window for the reads just disclosed
    /// (`directed`'s contention controller) shares memory from the start instead of only once a
    /// fetch is cut short.
    pub(crate) fn hint(
        &mut self,
        now: Instant,
        stream: StreamId,
        file: FileId,
        ranges: Vec<ByteRange>,
    ) {
        let st = &mut self.streams[stream.0 as usize];
        st.hinted_reads_left = st.hinted_reads_left.saturating_add(ranges.len() as u64);
        self.policy.handle(
            now,
            Input::Hint {
                stream,
                file,
                ranges,
            },
        );
        self.run_policy(now, None);
        self.policy.handle(
            now,
            Input::MemoryPressure {
                available: ByteLen(self.pool.prefetch_available_bytes()),
            },
        );
        self.run_policy(now, None);
        self.dispatch();
    }

    /// When the policy wants its timer.
    pub(crate) fn policy_wake(&self) -> Option<Instant> {
        self.policy_wake
    }

    /// Runs the policy's timer.
    pub(crate) fn timeout(&mut self, now: Instant) {
        self.policy.handle_timeout(now);
        self.run_policy(now, None);
        self.dispatch();
    }

    /// Executes everything the policy has to say, feeding back immediate completions and memory
    /// pressure. `trigger` is the page span of the read that prompted it: pages fetched inside it
    /// are the application's, not prefetched.
    pub(super) fn run_policy(
        &mut self,
        now: Instant,
        mut trigger: Option<(StreamId, FileId, u64, u64)>,
    ) {
        let mut short_told = false;
        // Whether memory cut a fetch short since the policy was last told. It outlives the round
        // that saw it: a fetch refused whole completes at once (`done_now`), and the policy hears
        // that completion first and the shortage after it, as the simulator tells it.
        let mut cut_short = false;
        let reader = trigger;
        // Files whose fetches started or ended here: their deferred readers look again.
        let mut fetched_files: Vec<FileId> = Vec::new();
        // Fetches of the triggering read's file, for the read if the policy defers it after them.
        let mut fetched_here: Vec<(u64, u64)> = Vec::new();
        loop {
            while let Some(out) = self.policy.poll_output() {
                match out {
                    Output::Fetch {
                        id, file, range, ..
                    } => {
                        self.stats.fetches += 1;
                        // Delivered as far as the policy knows, whatever memory or the device
                        // make of it.
                        let span = (range.start.0, range.start.0.saturating_add(range.len.0));
                        if let Some(f) = self.files.get(file.0 as usize) {
                            for s in f.deferred.clone() {
                                self.note_delivered(s, span.0, span.1);
                            }
                        }
                        if reader.is_some_and(|(_, f, _, _)| f == file) {
                            fetched_here.push(span);
                        }
                        // Readahead is issued in the context of the reading process, as Linux
                        // issues it; outside any read it is the file's last reader's.
                        let charge = reader.map(|(s, ..)| s).or_else(|| {
                            self.files.get(file.0 as usize).and_then(|f| f.last_reader)
                        });
                        let (parts, short) = self.fetch(id, file, range, trigger, charge);
                        cut_short |= short;
                        if !fetched_files.contains(&file) {
                            fetched_files.push(file);
                        }
                        if parts == 0 {
                            self.done_now.push_back((id, !short));
                        } else {
                            self.fetches.insert(
                                id,
                                FetchState {
                                    parts_left: parts,
                                    ok: !short,
                                    file,
                                },
                            );
                        }
                    }
                    Output::Cancel { id } => self.cancel(id),
                    Output::Release { file, range } => self.release(file, range),
                    // The read that prompted this waits for the policy's fetches (the stream
                    // scheduler queues it for its stream's turn) instead of reading on demand.
                    Output::Defer { file, .. } => {
                        if let Some((stream, f, _, _)) = reader {
                            if f == file && !self.streams[stream.0 as usize].deferred {
                                self.defer(stream);
                                for &(from, to) in &fetched_here {
                                    self.note_delivered(stream, from, to);
                                }
                            }
                        }
                    }
                    // The engine reads one device; there is no tier copy to drop.
                    Output::Evict { .. } => {}
                }
            }
            if let Some((id, ok)) = self.done_now.pop_front() {
                self.policy.handle(now, Input::Fetched { id, ok });
                trigger = None;
                continue;
            }
            // After the `Fetched` of the file's last fetches, which settle as its last chunks go.
            if let Some(file) = self.forgotten.pop() {
                self.policy.handle(now, Input::FileClosed { file });
                // So does a backend that keeps state per placed file, before the id is free.
                let at = self.files[file.0 as usize].volume_offset_bytes;
                self.backend.file_forgotten(file, at);
                self.free_files.push_back(file.0);
                trigger = None;
                continue;
            }
            if cut_short && !short_told {
                short_told = true;
                self.stats.memory_pressure_events += 1;
                self.policy.handle(
                    now,
                    Input::MemoryPressure {
                        available: ByteLen(self.pool.prefetch_available_bytes()),
                    },
                );
                continue;
            }
            break;
        }
        // Only the readers of a fetch's file: another file's fetch neither brings their bytes
        // nor, while it is under way, lets the engine fall idle, and every caller dispatches
        // next, which wakes all of them if the engine is idle.
        for file in fetched_files {
            self.wake_defer_waiters_of(file);
        }
        let wake = self.policy.poll_timeout();
        if wake != self.policy_wake {
            self.policy_wake = wake;
            self.timer.notify_one();
        }
    }

    /// Creates chunks for the uncovered pages of a fetch. Returns the chunks created and whether
    /// memory cut the fetch short.
    pub(super) fn fetch(
        &mut self,
        id: FetchId,
        file: FileId,
        range: ByteRange,
        trigger: Option<(StreamId, FileId, u64, u64)>,
        charge: Option<StreamId>,
    ) -> (u32, bool) {
        let Some(f) = self.files.get(file.0 as usize) else {
            return (0, false);
        };
        if f.readers == 0 || range.is_empty() {
            return (0, false);
        }
        let end = range.end().0.min(f.size_bytes);
        if range.start.0 >= end {
            return (0, false);
        }
        let first = range.start.0 / PAGE_BYTES;
        let last = (end - 1) / PAGE_BYTES;
        let mut parts = 0;
        let mut p = first;
        while let Some((start, mut run_end)) = self.next_uncovered_run(file, p, last) {
            // Split at the end of the triggering read, so each chunk is wholly the application's
            // or wholly ahead of it.
            let inside = match trigger {
                Some((ts, tf, tfirst, tlast))
                    if tf == file && start >= tfirst && start <= tlast =>
                {
                    run_end = run_end.min(tlast + 1);
                    Some(ts)
                }
                _ => None,
            };
            let spec = ChunkSpec {
                fetch: Some(id),
                prefetched: inside.is_none(),
                owner: None,
                for_stream: inside,
                reader: charge,
                urgent: inside.is_some(),
                // A prefetch may take memory from data already used (oldest first); a fetch under
                // the reader's request uses only free memory (demand fills what it leaves).
                may_evict: inside.is_none(),
            };
            let purpose = if inside.is_some() {
                Purpose::Demand
            } else {
                Purpose::Prefetch
            };
            if self
                .new_chunk(file, start, run_end, spec, purpose)
                .is_none()
            {
                return (parts, true);
            }
            parts += 1;
            p = run_end;
        }
        (parts, false)
    }

    fn cancel(&mut self, id: FetchId) {
        if self.fetches.remove(&id).is_none() {
            return;
        }
        self.drop_queued(|c| c.fetch == Some(id));
        self.wake_memory_waiters();
        // A deferred read may have waited for this very fetch; with it gone, it looks again (and
        // reads on demand if nothing else is under way). Its completion, if it is in flight, no
        // longer settles a fetch, so it wakes no one.
        self.wake_defer_waiters();
    }

    /// Drops the reads still waiting for a submission slot whose chunk `doomed` picks: their
    /// buffers go back to the pool and their chunk records are forgotten. Reads already submitted
    /// are left to complete.
    pub(super) fn drop_queued(&mut self, doomed: impl Fn(&Chunk) -> bool) {
        for q in [true, false] {
            let queue = if q { &mut self.urgent } else { &mut self.ahead };
            let mut kept = VecDeque::with_capacity(queue.len());
            let mut dropped = Vec::new();
            for r in queue.drain(..) {
                let hit = self.chunks[r.token as usize].as_ref().is_some_and(&doomed);
                if hit {
                    dropped.push(r);
                } else {
                    kept.push_back(r);
                }
            }
            *queue = kept;
            for r in dropped {
                self.pool.free(r.buf);
                self.drop_chunk_record(r.token as u32);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::*;
    use foresight_core::ByteRange;
    use foresight_policy::{Input, Output};
    use std::sync::Mutex;

    /// Fetches the 64 KiB after each read it hears of, and `on_timer` when its timer fires.
    struct AheadAndTimer {
        next_id: u64,
        on_timer: Option<(FileId, ByteRange)>,
        out: VecDeque<Output>,
    }

    impl AheadAndTimer {
        fn fetch(&mut self, file: FileId, range: ByteRange) {
            self.next_id += 1;
            self.out.push_back(Output::Fetch {
                id: FetchId(self.next_id),
                file,
                range,
                into: foresight_policy::Tier::Memory,
            });
        }
    }

    impl Policy for AheadAndTimer {
        fn name(&self) -> &str {
            "ahead-and-timer"
        }
        fn handle(&mut self, _now: Instant, input: Input) {
            if let Input::Read { file, range, .. } = input {
                self.fetch(file, ByteRange::new(range.end().0, 64 << 10));
            }
        }
        fn poll_output(&mut self) -> Option<Output> {
            self.out.pop_front()
        }
        fn poll_timeout(&self) -> Option<Instant> {
            self.on_timer.map(|_| Instant(10))
        }
        fn handle_timeout(&mut self, _now: Instant) {
            if let Some((file, range)) = self.on_timer.take() {
                self.fetch(file, range);
            }
        }
    }

    /// Every read the core hands a backend names the reader it is for: a demand read its
    /// stream's, a fetch the policy made on a stream's read that stream's, and one made outside
    /// any read (on a timer) the file's last reader's. Two readers of one file are two readers,
    /// not one file, which the emulated backend's anticipatory scheduler waits for apart.
    #[test]
    fn each_read_names_its_reader_and_a_fetch_outside_a_read_the_files_last_reader() {
        let policy = Box::new(AheadAndTimer {
            next_id: 0,
            on_timer: Some((FileId(0), ByteRange::new(768 << 10, 64 << 10))),
            out: VecDeque::new(),
        });
        let (mut core, backend, file, sa) =
            core_over_holding_with(policy, 4 << 20, 64 << 10, false);
        let again = mem_file(&mut core, "mem", (1, 1));
        let (same, sb, _, _) = core.open(again);
        assert_eq!((same, sa != sb), (file, true), "one file, two readers");
        core.begin_read(Instant(0), sa, file, 0, 64 << 10);
        core.begin_read(Instant(1), sb, file, 512 << 10, 576 << 10);
        core.timeout(Instant(10));
        let mut readers: Vec<(u64, Option<StreamId>)> = backend
            .held
            .lock()
            .unwrap()
            .iter()
            .chain(core.urgent.iter())
            .chain(core.ahead.iter())
            .map(|r| (r.offset_bytes, r.reader))
            .collect();
        readers.sort_unstable();
        assert_eq!(
            readers,
            vec![
                (0, Some(sa)),
                (64 << 10, Some(sa)),
                (512 << 10, Some(sb)),
                (576 << 10, Some(sb)),
                (768 << 10, Some(sb)),
            ]
        );
        core.check();
    }

    /// An input's kind, and the memory a `MemoryPressure` says is available.
    type Heard = (&'static str, Option<u64>);

    /// Keeps every input it hears as [`Heard`].
    struct Listener {
        heard: Arc<Mutex<Vec<Heard>>>,
    }

    impl Policy for Listener {
        fn name(&self) -> &str {
            "listener"
        }
        fn handle(&mut self, _now: Instant, input: Input) {
            let heard = match input {
                Input::Hint { .. } => ("hint", None),
                Input::MemoryPressure { available } => ("memory", Some(available.0)),
                _ => ("other", None),
            };
            self.heard.lock().unwrap().push(heard);
        }
        fn poll_output(&mut self) -> Option<Output> {
            None
        }
    }

    /// A hint is followed by the free memory, as the simulator's cache layer tells it after every
    /// hint: a policy sizing windows for the reads just disclosed (`directed`'s contention
    /// controller) shares memory from the start, not only once memory cuts a fetch short.
    #[test]
    fn a_hint_is_followed_by_the_memory_available() {
        let heard = Arc::new(Mutex::new(Vec::new()));
        let policy = Box::new(Listener {
            heard: heard.clone(),
        });
        let (mut core, _backend, file, stream) =
            core_over_holding_with(policy, 4 << 20, 64 << 10, false);
        core.hint(
            Instant(0),
            stream,
            file,
            vec![
                ByteRange::new(0, 8 << 10),
                ByteRange::new(64 << 10, 8 << 10),
            ],
        );
        let available = core.pool.prefetch_available_bytes();
        assert!(available > 0);
        assert_eq!(
            *heard.lock().unwrap(),
            vec![("hint", None), ("memory", Some(available))]
        );
        core.check();
    }
}
