//! The stream scheduler over files: the same scheduler, for a driver that reads files rather than
//! a block device (the real engine, which reads each file with direct I/O, as the server of paper
//! 001_9c47c4c84914efc3.txt section 5 does).
//!
//! The scheduler works in one address space (volume bytes). Here each file gets its own slice of
//! a synthetic space, `file << FILE_SPACE_SHIFT | offset`, so the classifier finds sequential runs
//! within a file and never across two, and every fetch the scheduler asks for lies inside one
//! file's slice. Reads go in translated; fetches, releases and deferrals come out translated back
//! and clipped to the file's size. Fetch ids pass through unchanged, so the driver's `Fetched`
//! answers need no mapping. Each read goes in with where its file ends in the space, so a stream
//! found there reads to the end of its file rather than of its slice: its last read stops at the
//! file's end, and its turn ends with it, however few of its `N` reads it made, so the next
//! waiting stream takes the dispatch slot. No fetch reaches past the end, none is empty, and no
//! byte past the end is held against `M`.

use std::collections::VecDeque;
use std::sync::Arc;

use foresight_core::{ByteLen, ByteRange, FileId, Instant};

use super::scheduler::{StreamScheduler, StreamsConfig};
use crate::layout::VOLUME_FILE;
use crate::{Input, Layout, Output, Policy, PolicyError};

/// Bits of a file's slice of the synthetic space: files up to 1 TiB are scheduled; reads of
/// larger files pass by the scheduler (read on demand).
pub const FILE_SPACE_SHIFT: u32 = 40;
const FILE_SPACE_BYTES: u64 = 1 << FILE_SPACE_SHIFT;

/// The stream scheduler over files. See the module documentation.
#[derive(Debug)]
pub struct FileStreams {
    inner: StreamScheduler,
    layout: Arc<Layout>,
    out: VecDeque<Output>,
}

impl FileStreams {
    /// A scheduler for the files of `layout` (their sizes are all it uses of it).
    pub fn new(cfg: StreamsConfig, layout: Arc<Layout>) -> Result<FileStreams, PolicyError> {
        // Room for every file id below VOLUME_FILE, each in a slice of its own.
        let space = Arc::new(Layout::new(ByteLen(u64::MAX), None));
        Ok(FileStreams {
            inner: StreamScheduler::new(cfg, space)?,
            layout,
            out: VecDeque::new(),
        })
    }

    /// The scheduler inside.
    pub fn scheduler(&self) -> &StreamScheduler {
        &self.inner
    }

    /// Where `file`'s slice of the synthetic space starts. Slices of `2^40` bytes leave room for
    /// `2^24` files in 64 bits; the last slice would end at `2^64`, so it is not used, and reads
    /// of files with larger ids pass by the scheduler (the engine reuses ids, so it stays far
    /// below).
    fn slice_base(file: FileId) -> Option<u64> {
        const SLICES: u64 = 1 << (u64::BITS - FILE_SPACE_SHIFT);
        (file != VOLUME_FILE && u64::from(file.0) < SLICES - 1)
            .then(|| u64::from(file.0) << FILE_SPACE_SHIFT)
    }

    fn file_size(&self, file: FileId) -> Option<u64> {
        ((file.0 as usize) < self.layout.file_count()).then(|| self.layout.file_size(file).0)
    }

    /// The file and file range of a range of the synthetic space, clipped to the file's size.
    fn to_file(&self, range: ByteRange) -> (FileId, ByteRange) {
        let file = FileId((range.start.0 >> FILE_SPACE_SHIFT) as u32);
        let start = range.start.0 & (FILE_SPACE_BYTES - 1);
        let size = self.file_size(file).unwrap_or(0);
        let end = (start + range.len.0).min(size).max(start);
        (file, ByteRange::new(start, end - start))
    }

    fn drain_inner(&mut self) {
        while let Some(o) = self.inner.poll_output() {
            let mapped = match o {
                Output::Fetch {
                    id,
                    range: space_range,
                    into,
                    ..
                } => {
                    let (file, range) = self.to_file(space_range);
                    // Streams read no further than their file's end (`handle`).
                    debug_assert_eq!(range.len, space_range.len, "a fetch past its file's end");
                    Output::Fetch {
                        id,
                        file,
                        range,
                        into,
                    }
                }
                Output::Release { range, .. } => {
                    let (file, range) = self.to_file(range);
                    if range.is_empty() {
                        continue;
                    }
                    Output::Release { file, range }
                }
                Output::Defer { range, .. } => {
                    let (file, range) = self.to_file(range);
                    Output::Defer { file, range }
                }
                Output::Evict { range, tier, .. } => {
                    let (file, range) = self.to_file(range);
                    Output::Evict { file, range, tier }
                }
                cancel @ Output::Cancel { .. } => cancel,
            };
            self.out.push_back(mapped);
        }
    }
}

impl Policy for FileStreams {
    fn name(&self) -> &str {
        "streams"
    }

    fn handle(&mut self, now: Instant, input: Input) {
        match input {
            Input::Read {
                file, range, miss, ..
            } => {
                let (base, size) = match (Self::slice_base(file), self.file_size(file)) {
                    (Some(base), Some(size))
                        if size < FILE_SPACE_BYTES && range.end().0 <= FILE_SPACE_BYTES =>
                    {
                        (base, size)
                    }
                    _ => return,
                };
                self.inner.handle_read_ending_at(
                    now,
                    ByteRange::new(base + range.start.0, range.len.0),
                    miss.is_some(),
                    base + size,
                );
            }
            Input::Hint { .. } => {}
            Input::FileClosed { file } => {
                if let Some(base) = Self::slice_base(file) {
                    self.inner.forget_span(now, base, base + FILE_SPACE_BYTES);
                }
            }
            other => self.inner.handle(now, other),
        }
        self.drain_inner();
    }

    fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.inner.poll_timeout()
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.inner.handle_timeout(now);
        self.drain_inner();
    }

    fn add_file(&mut self, id: FileId, file: crate::layout::FileLayout) {
        Arc::make_mut(&mut self.layout).put_file(id, file);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use foresight_core::{ByteOffset, FetchId, StreamId};

    fn cfg() -> StreamsConfig {
        StreamsConfig {
            readahead_bytes: 1 << 20,
            memory_bytes: 4 << 20,
            ..StreamsConfig::default()
        }
    }

    fn read(p: &mut FileStreams, stream: u32, file: u32, at: u64, miss: bool) -> Vec<Output> {
        p.handle(
            Instant::ZERO,
            Input::Read {
                stream: StreamId(stream),
                file: FileId(file),
                range: ByteRange::new(at, 65536),
                miss: miss.then_some(ByteOffset(at)),
            },
        );
        std::iter::from_fn(|| p.poll_output()).collect()
    }

    #[test]
    fn sequential_reads_of_a_file_become_a_stream_fetching_that_file_only() {
        let layout = Arc::new(Layout::unplaced(&[ByteLen::mib(3), ByteLen::mib(64)]));
        let mut p = FileStreams::new(cfg(), layout).unwrap();
        assert!(
            read(&mut p, 0, 0, 0, true).is_empty(),
            "one read is no stream"
        );
        let outs = read(&mut p, 0, 0, 65536, true);
        // The second read makes a stream: it waits (deferred) for the stream's first R-byte read,
        // which starts at its own position, in file 0.
        assert!(outs.contains(&Output::Defer {
            file: FileId(0),
            range: ByteRange::new(65536, 65536)
        }));
        let fetch = outs
            .iter()
            .find_map(|o| match o {
                Output::Fetch {
                    id, file, range, ..
                } => Some((*id, *file, *range)),
                _ => None,
            })
            .expect("a fetch");
        assert_eq!(fetch.1, FileId(0));
        assert_eq!(fetch.2, ByteRange::new(65536, 1 << 20));
        // Reads of the other file never join file 0's stream.
        let other = read(&mut p, 1, 1, 65536 * 2, true);
        assert!(other
            .iter()
            .all(|o| !matches!(o, Output::Fetch { file, .. } if *file == FileId(0))));
        // Read the file through: every fetch stays in file 0 and is clipped at its end.
        let mut fetched_to = fetch.2.end().0;
        let mut done = vec![fetch.0];
        let mut pos = 131072;
        while pos < 3 << 20 {
            let mut outs = read(&mut p, 0, 0, pos, pos >= fetched_to);
            while let Some(id) = done.pop() {
                p.handle(Instant::ZERO, Input::Fetched { id, ok: true });
                outs.extend(std::iter::from_fn(|| p.poll_output()));
            }
            for o in outs {
                if let Output::Fetch {
                    id, file, range, ..
                } = o
                {
                    assert_eq!(file, FileId(0));
                    assert!(range.end().0 <= 3 << 20, "{range:?} past the file");
                    fetched_to = fetched_to.max(range.end().0);
                    done.push(id);
                }
            }
            pos += 65536;
        }
        assert_eq!(fetched_to, 3 << 20);
    }

    /// The engine forgets a file (no reader, nothing cached or in flight) and may give its id to
    /// the next file. The streams and regions of the forgotten file's slice must go with it:
    /// left behind, a stream would fetch in the new file's slice, or on its timeout release the
    /// new file's cached pages there.
    #[test]
    fn a_forgotten_files_streams_go_and_release_nothing_later() {
        let layout = Arc::new(Layout::unplaced(&[ByteLen::mib(8), ByteLen::mib(8)]));
        let mut p = FileStreams::new(cfg(), layout).unwrap();
        // A stream on file 1, which stays, and one on file 0, whose fetches all complete.
        read(&mut p, 1, 1, 0, true);
        read(&mut p, 1, 1, 65536, true);
        let kept = p.scheduler().stream_count();
        read(&mut p, 0, 0, 0, true);
        let mut outs = read(&mut p, 0, 0, 65536, true);
        while let Some(id) = outs.iter().find_map(|o| match o {
            Output::Fetch { id, file, .. } if *file == FileId(0) => Some(*id),
            _ => None,
        }) {
            p.handle(Instant::ZERO, Input::Fetched { id, ok: true });
            outs = std::iter::from_fn(|| p.poll_output()).collect();
        }
        assert_eq!(p.scheduler().stream_count(), kept + 1);
        p.handle(Instant::ZERO, Input::FileClosed { file: FileId(0) });
        assert_eq!(
            p.scheduler().stream_count(),
            kept,
            "file 0's stream is still kept"
        );
        let new_file = Layout::unplaced(&[ByteLen::mib(4)]).file(FileId(0)).clone();
        p.add_file(FileId(0), new_file);
        // Long after every timeout, nothing names file 0: its data is the new file's now.
        let mut later = Vec::new();
        let mut now = Instant::ZERO;
        let hour = Instant::ZERO.saturating_add(foresight_core::Duration::from_secs(3600));
        while let Some(t) = p.poll_timeout().filter(|&t| t < hour) {
            now = t.max(now);
            p.handle_timeout(now);
            later.extend(std::iter::from_fn(|| p.poll_output()));
        }
        assert!(
            later.iter().all(|o| !matches!(
                o,
                Output::Release { file, .. } | Output::Fetch { file, .. } if *file == FileId(0)
            )),
            "{later:?}"
        );
    }

    /// Forgetting a file forgets only its own slice's regions. A region opens `offset_blocks`
    /// below the block that opened it, so the region of the next file's first read starts inside
    /// the forgotten file's slice; it used to go with it, and that file's next read, which
    /// continues a sequential run, found no region and became no stream (the engine: one more
    /// read on demand for each reader that had read once when an earlier file closed).
    #[test]
    fn forgetting_a_file_keeps_the_next_files_first_read() {
        let layout = Arc::new(Layout::unplaced(&[ByteLen::mib(2), ByteLen::mib(2)]));
        let mut p = FileStreams::new(cfg(), layout).unwrap();
        assert!(read(&mut p, 1, 1, 0, true).is_empty());
        p.handle(Instant::ZERO, Input::FileClosed { file: FileId(0) });
        assert!(p.poll_output().is_none());
        let outs = read(&mut p, 1, 1, 65536, true);
        assert!(
            outs.iter().any(
                |o| matches!(o, Output::Fetch { file, range, .. } if *file == FileId(1) && range.start.0 == 65536)
            ),
            "file 1's second read makes a stream, as it does when no file closes: {outs:?}"
        );
    }

    /// A stream waiting for its turn when its file is forgotten leaves the line: the turn goes to
    /// the next stream, and the forgotten file is never fetched.
    #[test]
    fn a_forgotten_files_waiting_stream_leaves_the_line() {
        let layout = Arc::new(Layout::unplaced(&[ByteLen::mib(2); 3]));
        let cfg = StreamsConfig {
            dispatch: Some(1),
            ..cfg()
        };
        let mut p = FileStreams::new(cfg, layout).unwrap();
        // File 0's stream takes the one dispatch slot; files 1 and 2 wait behind it.
        let mut outs = Vec::new();
        for f in 0..3 {
            outs.extend(read(&mut p, f, f, 0, true));
            outs.extend(read(&mut p, f, f, 65536, true));
        }
        assert_eq!(p.scheduler().stream_count(), 3);
        p.handle(Instant::ZERO, Input::FileClosed { file: FileId(1) });
        outs.extend(std::iter::from_fn(|| p.poll_output()));
        assert_eq!(p.scheduler().stream_count(), 2);
        // Serve every fetch and read file 0 through, so that its turns end and file 2's come.
        let mut fetched = [false; 3];
        let mut pos = 131072;
        for _ in 0..200 {
            let ids: Vec<FetchId> = outs
                .drain(..)
                .filter_map(|o| match o {
                    Output::Fetch { id, file, .. } => {
                        fetched[file.0 as usize] = true;
                        Some(id)
                    }
                    _ => None,
                })
                .collect();
            for id in ids {
                p.handle(Instant::ZERO, Input::Fetched { id, ok: true });
                outs.extend(std::iter::from_fn(|| p.poll_output()));
            }
            if pos < 2 << 20 {
                outs.extend(read(&mut p, 0, 0, pos, false));
                pos += 65536;
            }
        }
        assert_eq!(fetched, [true, false, true], "files fetched");
        assert!(p.scheduler().held_bytes() <= 4 << 20);
    }

    #[test]
    fn reads_of_unknown_or_huge_files_pass_by() {
        let layout = Arc::new(Layout::unplaced(&[ByteLen::mib(1)]));
        let mut p = FileStreams::new(cfg(), layout).unwrap();
        for at in [0, 65536, 131072] {
            assert!(read(&mut p, 0, 7, at, true).is_empty());
        }
        assert_eq!(p.scheduler().stream_count(), 0);
    }

    #[test]
    fn bytes_past_the_end_of_a_file_are_not_held_against_m() {
        // R = 1 MiB, M = 4 MiB, D = 4: files of 192 KiB, each read through in 64 KiB reads.
        let size = 3 * 65536;
        let layout = Arc::new(Layout::unplaced(&[ByteLen(size); 8]));
        let cfg = StreamsConfig {
            dispatch: Some(4),
            ..cfg()
        };
        let mut p = FileStreams::new(cfg, layout).unwrap();
        for f in 0..8 {
            let mut fetched = false;
            for at in [0, 65536, 131072] {
                for o in read(&mut p, f, f, at, !fetched) {
                    if let Output::Fetch {
                        id, file, range, ..
                    } = o
                    {
                        assert_eq!(file, FileId(f));
                        assert!(range.end().0 <= size, "{range:?} past the file");
                        fetched = true;
                        p.handle(Instant::ZERO, Input::Fetched { id, ok: true });
                        while p.poll_output().is_some() {}
                    }
                }
            }
            // Every stream so far found its file, each one's turn came at once: what lies past
            // the end of the files it read holds no memory.
            assert!(fetched, "file {f}: no fetch");
            assert_eq!(p.scheduler().held_bytes(), 0, "file {f}");
        }
    }

    /// The fetches in `outs`, as (id, file, range).
    fn fetches(outs: &[Output]) -> Vec<(FetchId, FileId, ByteRange)> {
        outs.iter()
            .filter_map(|o| match o {
                Output::Fetch {
                    id, file, range, ..
                } => Some((*id, *file, *range)),
                _ => None,
            })
            .collect()
    }

    /// A turn ends at the end of the stream's file. With `N` = 4 and a file that holds two reads
    /// of `R` after the stream's start, the scheduler used to go on to issue the turn's two other
    /// reads past the end (empty once clipped to the file), each taking the dispatch slot until
    /// the driver completed it; the waiting stream came only after them.
    #[test]
    fn a_turn_ends_at_the_end_of_the_file_and_the_next_stream_goes() {
        // R = 1 MiB, N = 4, D = 1: file 0 is read from 64 KiB (its second read) to 1.5 MiB.
        let size = 3 << 19;
        let layout = Arc::new(Layout::unplaced(&[ByteLen(size), ByteLen::mib(64)]));
        let cfg = StreamsConfig {
            dispatch: Some(1),
            per_turn: 4,
            ..cfg()
        };
        let mut p = FileStreams::new(cfg, layout).unwrap();
        let mut outs = Vec::new();
        for f in 0..2 {
            outs.extend(read(&mut p, f, f, 0, true));
            outs.extend(read(&mut p, f, f, 65536, true));
        }
        let mut seen = fetches(&outs);
        assert_eq!(
            seen,
            vec![(FetchId(0), FileId(0), ByteRange::new(65536, 1 << 20))]
        );
        // Complete file 0's reads one by one: the second stops at the file's end, and when it
        // completes the slot goes to file 1.
        let mut next = FetchId(0);
        for _ in 0..2 {
            p.handle(Instant::ZERO, Input::Fetched { id: next, ok: true });
            let more = fetches(&std::iter::from_fn(|| p.poll_output()).collect::<Vec<_>>());
            assert_eq!(more.len(), 1, "{more:?}");
            next = more[0].0;
            seen.extend(more);
        }
        assert_eq!(
            seen[1..],
            [
                (
                    FetchId(1),
                    FileId(0),
                    ByteRange::new(65536 + (1 << 20), size - 65536 - (1 << 20))
                ),
                (FetchId(2), FileId(1), ByteRange::new(65536, 1 << 20)),
            ],
            "file 0's turn ends at its end and file 1 goes: {seen:?}"
        );
        // Each client has read to 128 KiB: file 0 holds the rest of its file, file 1 its read
        // in flight, and nothing past file 0's end counts.
        assert_eq!(
            p.scheduler().held_bytes(),
            (size - 2 * 65536) + ((1 << 20) - 65536)
        );
    }

    /// Counted in bytes in flight, the dispatch set takes streams whose reads the end of their
    /// file cuts short until their reads fill `D*R`; a stream whose read does not fit waits at
    /// the head of the line until enough of them complete or their files are forgotten. Counted
    /// in streams, it takes `D` whatever their reads.
    #[test]
    fn a_set_counted_in_bytes_fills_d_r_with_reads_cut_short() {
        use super::super::{DispatchLimit, TurnOrder};
        // R = 1 MiB, D = 2: six files each holding 256 KiB after their first 64 KiB request,
        // then a long file whose read is a whole R.
        let small = 65536 + (256 << 10);
        let mut sizes = vec![ByteLen(small); 6];
        sizes.push(ByteLen::mib(64));
        for order in [TurnOrder::Arrival, TurnOrder::Position] {
            for limit in [DispatchLimit::Streams, DispatchLimit::BytesInFlight] {
                let cfg = StreamsConfig {
                    dispatch: Some(2),
                    turn_order: order,
                    dispatch_limit: limit,
                    ..cfg()
                };
                let mut p = FileStreams::new(cfg, Arc::new(Layout::unplaced(&sizes))).unwrap();
                let mut seen = Vec::new();
                for f in 0..7 {
                    read(&mut p, f, f, 0, true);
                    seen.extend(fetches(&read(&mut p, f, f, 65536, true)));
                }
                let files: Vec<u32> = seen.iter().map(|f| f.1 .0).collect();
                if limit == DispatchLimit::Streams {
                    assert_eq!(files, [0, 1], "{order:?}: D = 2 streams");
                    continue;
                }
                // 1.5 MiB in flight: the long file's 1 MiB does not fit beside it.
                assert_eq!(files, [0, 1, 2, 3, 4, 5], "{order:?}");
                assert!(seen.iter().all(|f| f.2.len.0 == 256 << 10), "{seen:?}");
                p.handle(
                    Instant::ZERO,
                    Input::Fetched {
                        id: seen[0].0,
                        ok: true,
                    },
                );
                let more = fetches(&std::iter::from_fn(|| p.poll_output()).collect::<Vec<_>>());
                assert!(more.is_empty(), "{order:?}: 1.25 MiB and 1 MiB: {more:?}");
                // A forgotten file's read in flight no longer counts.
                p.handle(Instant::ZERO, Input::FileClosed { file: FileId(1) });
                let more = fetches(&std::iter::from_fn(|| p.poll_output()).collect::<Vec<_>>());
                assert_eq!(
                    more.iter().map(|f| (f.1, f.2.len.0)).collect::<Vec<_>>(),
                    [(FileId(6), 1 << 20)],
                    "{order:?}"
                );
            }
        }
    }

    /// A stream found at the end of its file (two cached reads of its last bytes) has nothing to
    /// read: it issues no fetch and does not hold the dispatch slot. It used to issue a read past
    /// the end, empty once clipped, and take the slot until that completed.
    #[test]
    fn a_stream_found_at_the_end_of_its_file_fetches_nothing() {
        let size = 1 << 20;
        let layout = Arc::new(Layout::unplaced(&[ByteLen(size), ByteLen::mib(64)]));
        let cfg = StreamsConfig {
            dispatch: Some(1),
            ..cfg()
        };
        let mut p = FileStreams::new(cfg, layout).unwrap();
        let mut outs = read(&mut p, 0, 0, size - 2 * 65536, false);
        outs.extend(read(&mut p, 0, 0, size - 65536, false));
        assert_eq!(p.scheduler().stream_count(), 1);
        assert!(fetches(&outs).is_empty(), "{outs:?}");
        // The slot is free: file 1's stream starts at once.
        read(&mut p, 1, 1, 0, true);
        let outs = read(&mut p, 1, 1, 65536, true);
        assert_eq!(
            fetches(&outs),
            vec![(FetchId(0), FileId(1), ByteRange::new(65536, 1 << 20))],
            "{outs:?}"
        );
    }
}
