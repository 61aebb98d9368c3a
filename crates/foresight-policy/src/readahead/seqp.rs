//! SEQP: Linux's on-demand sequential readahead (mm/readahead.c, `ondemand_readahead`), as paper
//! 000_a596543dd26dac72.txt sections 2.4 and 5.2 describe it.
//!
//! The window logic lives in [`super::window`], which SASEQP shares; SEQP submits every window as
//! the Linux rules size it, whatever strips it straddles (paper 000, section 3, Fig. 3).

use std::sync::Arc;

use foresight_core::{ByteLen, FileId, Instant, StreamId};

use super::window::{OnDemand, Unshaped, WindowRule};
use crate::{Input, Layout, Output, Policy, PolicyError};

/// Linux on-demand readahead. See the module documentation of [`super::window`].
#[derive(Debug)]
pub struct Seqp {
    core: OnDemand<Unshaped>,
}

impl Seqp {
    /// A SEQP policy with windows of at most `readahead_max` bytes, sized by the Linux rules.
    pub fn new(readahead_max: ByteLen, layout: Arc<Layout>) -> Result<Seqp, PolicyError> {
        Seqp::with_rule(readahead_max, WindowRule::Linux, layout)
    }

    /// A SEQP policy whose windows follow `rule`.
    pub fn with_rule(
        readahead_max: ByteLen,
        rule: WindowRule,
        layout: Arc<Layout>,
    ) -> Result<Seqp, PolicyError> {
        Ok(Seqp {
            core: OnDemand::new(readahead_max, rule, layout, Unshaped)?,
        })
    }

    /// The window state of a stream on a file, as `(start, size, async_size)` in pages, for tests and
    /// traces.
    pub fn window(&self, stream: StreamId, file: FileId) -> Option<(u64, u64, u64)> {
        self.core.window(stream, file)
    }

    /// How many (stream, file) windows are kept: one per stream and file it has read, until
    /// `Input::StreamClosed`.
    pub fn window_count(&self) -> usize {
        self.core.window_count()
    }

    /// The largest window memory pressure allows now, in pages.
    pub fn window_cap_pages(&self) -> u64 {
        self.core.cap_pages()
    }

    /// How many files carry readahead marks: files read since they were added, until
    /// `Input::FileClosed`.
    pub fn marked_files(&self) -> usize {
        self.core.marked_files()
    }
}

impl Policy for Seqp {
    fn name(&self) -> &str {
        "seqp"
    }

    fn handle(&mut self, _now: Instant, input: Input) {
        self.core.handle(input);
    }

    fn poll_output(&mut self) -> Option<Output> {
        self.core.pop_output()
    }

    fn add_file(&mut self, id: FileId, file: crate::layout::FileLayout) {
        self.core.add_file(id, file);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::readahead::{init_window_pages, next_window_pages};
    use crate::PAGE_BYTES;
    use foresight_core::{ByteOffset, ByteRange};
    use std::collections::BTreeSet;

    fn layout(file_bytes: u64) -> Arc<Layout> {
        Arc::new(Layout::unplaced(&[
            ByteLen(file_bytes),
            ByteLen(file_bytes),
        ]))
    }

    #[test]
    fn memory_pressure_halves_the_window_cap_and_quiet_readahead_restores_it() {
        // 8 MiB windows (2,048 pages) over a 4 GiB file, read 64 KiB at a time.
        let mut p = Seqp::new(ByteLen::mib(8), layout(4 << 30)).unwrap();
        let mut fetched = BTreeSet::new();
        let mut page = 0;
        let mut step = |p: &mut Seqp, reads: u64| {
            for _ in 0..reads {
                read(p, 0, 0, page, 16, &mut fetched);
                page += 16;
            }
        };
        step(&mut p, 256);
        p.handle(
            Instant::ZERO,
            Input::MemoryPressure {
                available: ByteLen(0),
            },
        );
        assert_eq!(p.window_cap_pages(), 1024);
        // A burst of pressure counts once per window's worth of readahead.
        p.handle(
            Instant::ZERO,
            Input::MemoryPressure {
                available: ByteLen(0),
            },
        );
        assert_eq!(p.window_cap_pages(), 1024);
        // Pressure after every 1 MiB read keeps halving it to the floor.
        for _ in 0..200 {
            step(&mut p, 16);
            p.handle(
                Instant::ZERO,
                Input::MemoryPressure {
                    available: ByteLen(0),
                },
            );
        }
        assert_eq!(p.window_cap_pages(), 32, "no lower than 128 KiB");
        let (_, size, _) = p.window(StreamId(0), FileId(0)).unwrap();
        assert!(size <= 32, "windows obey the cap: {size}");
        // 32 windows' worth without pressure doubles the cap, step by step back to the maximum.
        step(&mut p, 20_000);
        assert_eq!(p.window_cap_pages(), 2048);
    }

    fn fetches(p: &mut Seqp) -> Vec<(u64, u64)> {
        let mut v = vec![];
        while let Some(o) = p.poll_output() {
            if let Output::Fetch { range, .. } = o {
                v.push((range.start.0 / PAGE_BYTES, range.len.0 / PAGE_BYTES));
            }
        }
        v
    }

    /// Reads `pages` pages at `page`, with the miss the driver would report given what was fetched.
    fn read(
        p: &mut Seqp,
        stream: u32,
        file: u32,
        page: u64,
        pages: u64,
        fetched: &mut BTreeSet<u64>,
    ) -> Vec<(u64, u64)> {
        let miss = (page..page + pages).find(|pg| !fetched.contains(pg));
        p.handle(
            Instant::ZERO,
            Input::Read {
                stream: StreamId(stream),
                file: FileId(file),
                range: ByteRange::new(page * PAGE_BYTES, pages * PAGE_BYTES),
                miss: miss.map(|m| ByteOffset(m * PAGE_BYTES)),
            },
        );
        let f = fetches(p);
        for &(s, n) in &f {
            fetched.extend(s..s + n);
        }
        // The driver demand-reads whatever is still missing.
        fetched.extend(page..page + pages);
        f
    }

    #[test]
    fn window_sizes_follow_linux() {
        // 128 KiB = 32 pages.
        assert_eq!(init_window_pages(1, 32), 4);
        assert_eq!(init_window_pages(3, 32), 8);
        assert_eq!(init_window_pages(8, 32), 16);
        assert_eq!(init_window_pages(9, 32), 32);
        assert_eq!(init_window_pages(16, 32), 32);
        assert_eq!(next_window_pages(1, 32), 4);
        assert_eq!(next_window_pages(4, 32), 8);
        assert_eq!(next_window_pages(16, 32), 32);
        assert_eq!(next_window_pages(32, 32), 32);
        // 1 MiB = 256 pages: request of 16 pages (64 KiB) is <= 256/4, so doubled.
        assert_eq!(init_window_pages(16, 256), 32);
        assert_eq!(next_window_pages(8, 256), 32);
    }

    #[test]
    fn sequential_4k_reads_ramp_up_and_fetch_asynchronously() {
        let mut p = Seqp::new(ByteLen::kib(128), layout(64 << 20)).unwrap();
        let mut got = BTreeSet::new();
        let mut all = vec![];
        for page in 0..200 {
            all.extend(read(&mut p, 0, 0, page, 1, &mut got));
        }
        // First window 4 pages (one page rounded up, quadrupled), then the marks trigger 8, 16,
        // 32, 32, ... each fetched before the reader reaches it.
        assert_eq!(&all[..5], &[(0, 4), (4, 8), (12, 16), (28, 32), (60, 32)]);
        // Every later page was fetched ahead: no read ever missed after the first.
        assert!(all.windows(2).all(|w| w[0].0 + w[0].1 == w[1].0));
    }

    #[test]
    fn a_read_one_page_back_is_random_not_the_start_of_a_window() {
        let mut p = Seqp::new(ByteLen::kib(128), layout(64 << 20)).unwrap();
        let mut got = BTreeSet::new();
        assert_eq!(read(&mut p, 0, 0, 10, 1, &mut got), vec![(10, 1)]);
        // Linux compares `index - prev_index <= 1` unsigned: a step back reads only itself.
        assert_eq!(read(&mut p, 0, 0, 9, 1, &mut got), vec![(9, 1)]);
        // The page after the last one read is sequential and opens a window.
        assert_eq!(read(&mut p, 0, 0, 10, 1, &mut got), vec![]);
        assert_eq!(read(&mut p, 0, 0, 11, 1, &mut got), vec![(11, 4)]);
    }

    #[test]
    fn random_reads_fetch_only_what_was_asked_and_keep_other_windows() {
        let mut p = Seqp::new(ByteLen::kib(128), layout(64 << 20)).unwrap();
        let mut got = BTreeSet::new();
        for page in 0..20 {
            read(&mut p, 0, 0, page, 1, &mut got);
        }
        let before = p.window(StreamId(0), FileId(0));
        let mut got1 = BTreeSet::new();
        read(&mut p, 1, 0, 3000, 1, &mut got1);
        let f = read(&mut p, 1, 0, 9000, 2, &mut got1);
        assert_eq!(f, vec![(9000, 2)]);
        assert_eq!(p.window(StreamId(0), FileId(0)), before);
    }

    /// A driver that forgets a file (`Input::FileClosed`) and gives its id to a new, smaller file
    /// (`Policy::add_file`): the old file's marks go, and windows on the id are clipped to the
    /// new file's size.
    #[test]
    fn a_forgotten_files_marks_go_and_its_id_takes_the_new_files_size() {
        let mut p = Seqp::new(ByteLen::kib(128), layout(64 << 20)).unwrap();
        let mut got = BTreeSet::new();
        for page in 0..20 {
            read(&mut p, 0, 0, page, 1, &mut got);
        }
        read(&mut p, 1, 1, 0, 1, &mut BTreeSet::new());
        assert_eq!(p.marked_files(), 2);
        p.handle(
            Instant::ZERO,
            Input::StreamClosed {
                stream: StreamId(0),
            },
        );
        p.handle(Instant::ZERO, Input::FileClosed { file: FileId(0) });
        assert_eq!(p.poll_output(), None, "forgetting fetches nothing");
        assert_eq!(p.marked_files(), 1, "only file 1's marks are left");
        assert!(p.window(StreamId(1), FileId(1)).is_some());
        p.add_file(
            FileId(0),
            crate::layout::FileLayout {
                size: ByteLen::kib(8),
                extents: vec![foresight_core::Extent {
                    file_offset: foresight_core::ByteOffset(0),
                    volume_offset: foresight_core::ByteOffset(0),
                    len: ByteLen::kib(8),
                }],
                metadata: None,
            },
        );
        // Two pages at the start open an eight-page window on a large file; the new file has two.
        let f = read(&mut p, 0, 0, 0, 2, &mut BTreeSet::new());
        assert_eq!(f, vec![(0, 2)]);
    }

    #[test]
    fn a_closed_streams_windows_are_dropped_and_a_reused_id_starts_afresh() {
        let mut p = Seqp::new(ByteLen::kib(128), layout(64 << 20)).unwrap();
        let mut got = BTreeSet::new();
        for page in 0..20 {
            read(&mut p, 0, 0, page, 1, &mut got);
        }
        read(&mut p, 0, 1, 0, 1, &mut BTreeSet::new());
        read(&mut p, 1, 1, 0, 1, &mut BTreeSet::new());
        assert_eq!(p.window_count(), 3);
        let (start, size, _) = p.window(StreamId(0), FileId(0)).unwrap();
        p.handle(
            Instant::ZERO,
            Input::StreamClosed {
                stream: StreamId(0),
            },
        );
        assert_eq!(p.poll_output(), None, "closing fetches nothing");
        assert_eq!(p.window_count(), 1, "only stream 1's window is left");
        assert_eq!(p.window(StreamId(0), FileId(0)), None);
        assert!(p.window(StreamId(1), FileId(1)).is_some());
        // A new stream given id 0 whose first read lands where the old window would continue is
        // a random read to it: it gets what it asked for, not the old stream's next window.
        let f = read(&mut p, 0, 0, start + size, 1, &mut BTreeSet::new());
        assert_eq!(f, vec![(start + size, 1)]);
        assert_eq!(
            p.window(StreamId(0), FileId(0)),
            Some((0, 0, 0)),
            "no window opened"
        );
    }

    #[test]
    fn windows_stop_at_the_end_of_the_file() {
        let file = 10 * PAGE_BYTES + 100;
        let mut p = Seqp::new(ByteLen::kib(128), layout(file)).unwrap();
        let mut got = BTreeSet::new();
        let mut max_end = 0;
        for page in 0..11 {
            p.handle(
                Instant::ZERO,
                Input::Read {
                    stream: StreamId(0),
                    file: FileId(0),
                    range: ByteRange::new(
                        page * PAGE_BYTES,
                        PAGE_BYTES.min(file - page * PAGE_BYTES),
                    ),
                    miss: (!got.contains(&page)).then_some(ByteOffset(page * PAGE_BYTES)),
                },
            );
            while let Some(Output::Fetch { range, .. }) = p.poll_output() {
                max_end = max_end.max(range.end().0);
                got.extend(range.start.0 / PAGE_BYTES..range.end().0.div_ceil(PAGE_BYTES));
            }
            got.insert(page);
        }
        assert_eq!(max_end, file);
    }

    #[test]
    fn large_request_is_covered_by_windows_of_at_most_max() {
        let mut p = Seqp::new(ByteLen::kib(128), layout(64 << 20)).unwrap();
        let mut got = BTreeSet::new();
        let f = read(&mut p, 0, 0, 0, 256, &mut got);
        assert!(f.iter().all(|&(_, n)| n <= 32), "{f:?}");
        let covered: u64 = f.iter().map(|&(_, n)| n).sum();
        assert!(covered >= 256, "{f:?}");
    }

    #[test]
    fn zero_max_reads_nothing_ahead() {
        let mut p = Seqp::new(ByteLen(0), layout(1 << 20)).unwrap();
        let mut got = BTreeSet::new();
        assert!(read(&mut p, 0, 0, 0, 4, &mut got).is_empty());
        assert!(Seqp::new(ByteLen(1000), layout(1 << 20)).is_err());
    }
}
