//! SEQP: Linux's on-demand sequential readahead (mm/readahead.c, `ondemand_readahead`), as paper
//! 000_a596543dd26dac72.txt sections 2.4 and 5.2 describe it.
//!
//! Each (stream, file) pair keeps a window `(start, size, async_size)` in pages. A page-cache miss
//! runs the synchronous path: a read at the start of the file, a read right after the previous one,
//! or one larger than the maximum opens a fresh window sized from the request (`init_window_pages`);
//! a read that continues the current window moves the window forward and grows it
//! (`next_window_pages`); any other miss is random and reads only what was asked. Each submitted
//! window marks the page `start + size - async_size` (Linux's PG_readahead flag); when the application
//! first touches a marked page, the next window is fetched asynchronously, before the data is needed.
//! Windows are clipped at the end of the file. A random read touches only its own stream's state, so
//! it neither fetches ahead nor resets another stream's window.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use foresight_core::{ByteLen, ByteRange, FileId, Instant, StreamId};

use crate::{FetchIds, Input, Layout, Output, Policy, PolicyError, Tier, PAGE_BYTES};

/// The first window for a request of `req_pages`, given a maximum of `max_pages`
/// (mm/readahead.c `get_init_ra_size`; paper 000, section 5.2): round the request up to a power of
/// two, then quadruple it if that is at most max/32, double it if at most max/4, else use the maximum.
pub fn init_window_pages(req_pages: u64, max_pages: u64) -> u64 {
    let size = req_pages.max(1).next_power_of_two();
    if size <= max_pages / 32 {
        size * 4
    } else if size <= max_pages / 4 {
        size * 2
    } else {
        max_pages
    }
}

/// The window after one of `cur_pages` (mm/readahead.c `get_next_ra_size`; paper 000, section
/// 5.2): quadruple while below max/16, else double, never above the maximum.
pub fn next_window_pages(cur_pages: u64, max_pages: u64) -> u64 {
    let next = if cur_pages < max_pages / 16 {
        cur_pages * 4
    } else {
        cur_pages * 2
    };
    next.min(max_pages)
}

/// One open file's readahead state (Linux `struct file_ra_state`), in pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct RaState {
    start: u64,
    size: u64,
    async_size: u64,
    /// Last page the previous read touched, if any (Linux `prev_pos`).
    prev_page: Option<u64>,
}

/// Linux on-demand readahead. See the module documentation.
#[derive(Debug)]
pub struct Seqp {
    max_pages: u64,
    layout: Arc<Layout>,
    states: BTreeMap<(StreamId, FileId), RaState>,
    /// Pages carrying the readahead mark, per file (marks live on pages, not on streams).
    marks: BTreeMap<FileId, BTreeSet<u64>>,
    ids: FetchIds,
    out: VecDeque<Output>,
}

impl Seqp {
    /// A SEQP policy with windows of at most `readahead_max` bytes.
    pub fn new(readahead_max: ByteLen, layout: Arc<Layout>) -> Result<Seqp, PolicyError> {
        if !readahead_max.0.is_multiple_of(PAGE_BYTES) {
            return Err(PolicyError::BadSetting {
                key: "readahead_max",
                message: format!(
                    "{readahead_max} is not a whole number of 4 KiB pages; use e.g. 128KiB"
                ),
            });
        }
        Ok(Seqp {
            max_pages: readahead_max.0 / PAGE_BYTES,
            layout,
            states: BTreeMap::new(),
            marks: BTreeMap::new(),
            ids: FetchIds::default(),
            out: VecDeque::new(),
        })
    }

    /// The window state of a stream on a file, as `(start, size, async_size)` in pages, for tests and
    /// traces.
    pub fn window(&self, stream: StreamId, file: FileId) -> Option<(u64, u64, u64)> {
        self.states
            .get(&(stream, file))
            .map(|s| (s.start, s.size, s.async_size))
    }

    fn file_pages(&self, file: FileId) -> u64 {
        self.layout.file_size(file).0.div_ceil(PAGE_BYTES)
    }

    /// `ondemand_readahead`: decides and submits the window for a read at `page` of `req_pages`
    /// pages. Returns the pages it submitted as `(first, end)`, if any.
    fn ondemand(
        &mut self,
        stream: StreamId,
        file: FileId,
        page: u64,
        req_pages: u64,
        hit_mark: bool,
    ) -> Option<(u64, u64)> {
        let max = self.max_pages;
        let mut ra = self
            .states
            .get(&(stream, file))
            .copied()
            .unwrap_or_default();
        let sequential_hit = ra.size > 0
            && (page == ra.start + ra.size - ra.async_size || page == ra.start + ra.size);
        let initial = |ra: &mut RaState| {
            ra.start = page;
            ra.size = init_window_pages(req_pages, max);
            ra.async_size = if ra.size > req_pages {
                ra.size - req_pages
            } else {
                ra.size
            };
        };
        if page == 0 {
            initial(&mut ra);
        } else if sequential_hit {
            ra.start += ra.size;
            ra.size = next_window_pages(ra.size, max);
            ra.async_size = ra.size;
        } else if hit_mark {
            // Another reader's window was marked (interleaved reads of one file): continue from
            // the end of what this reader last fetched, or from just past the mark.
            let start = (ra.start + ra.size).max(page + 1);
            if start - page > max {
                return None;
            }
            ra.start = start;
            ra.size = next_window_pages(start - page + req_pages, max);
            ra.async_size = ra.size;
        } else if req_pages > max || ra.prev_page.is_some_and(|p| page.abs_diff(p) <= 1) {
            initial(&mut ra);
        } else {
            // A random read: fetch only what was asked, leave the window alone.
            return self.submit(file, page, req_pages, None);
        }
        if page == ra.start && ra.size == ra.async_size {
            // The read would hit its own mark at once, so the next window is merged into this one
            // (mm/readahead.c, "readit"), capped at the maximum as current kernels do.
            let add = next_window_pages(ra.size, max);
            if ra.size + add <= max {
                ra.async_size = add;
                ra.size += add;
            } else {
                ra.size = max;
                ra.async_size = max / 2;
            }
        }
        assert!(
            ra.size <= max && ra.async_size <= ra.size,
            "window {ra:?} breaks max {max}"
        );
        self.states.insert((stream, file), ra);
        let mark = ra.start + ra.size - ra.async_size;
        self.submit(file, ra.start, ra.size, Some(mark))
    }

    fn submit(
        &mut self,
        file: FileId,
        start_page: u64,
        pages: u64,
        mark: Option<u64>,
    ) -> Option<(u64, u64)> {
        let file_pages = self.file_pages(file);
        if start_page >= file_pages || pages == 0 {
            return None;
        }
        let end_page = (start_page + pages).min(file_pages);
        let size = self.layout.file_size(file).0;
        let start = start_page * PAGE_BYTES;
        let end = (end_page * PAGE_BYTES).min(size);
        if let Some(m) = mark.filter(|m| *m < end_page) {
            self.marks.entry(file).or_default().insert(m);
        }
        let id = self.ids.next_id();
        self.out.push_back(Output::Fetch {
            id,
            file,
            range: ByteRange::new(start, end - start),
            into: Tier::Memory,
        });
        Some((start_page, end_page))
    }

    fn take_mark(&mut self, file: FileId, first: u64, last: u64) -> Option<u64> {
        let set = self.marks.get_mut(&file)?;
        let m = set.range(first..=last).next().copied()?;
        set.remove(&m);
        Some(m)
    }

    fn on_read(&mut self, stream: StreamId, file: FileId, range: ByteRange, miss: Option<u64>) {
        if range.is_empty() || self.max_pages == 0 {
            return;
        }
        let first = range.start.0 / PAGE_BYTES;
        let last = (range.end().0 - 1) / PAGE_BYTES;
        // Walk the request in page order, as the kernel's read loop does: a missing page runs the
        // synchronous path, a marked page the asynchronous one. `next_miss` is the first page still
        // missing; a window that covers it moves it past the window. Each step moves `next_miss` or
        // `cursor` strictly forward, so the walk ends.
        let mut next_miss = miss.map(|m| m / PAGE_BYTES).filter(|m| *m <= last);
        let mut cursor = first;
        let advance = |m: u64, w: Option<(u64, u64)>| match w {
            Some((s, e)) if s <= m && m < e => (e <= last).then_some(e),
            _ => Some(m),
        };
        for _ in 0..4 * (last - first + 2) {
            let mark = if cursor <= last {
                self.marks
                    .get(&file)
                    .and_then(|s| s.range(cursor..=last).next().copied())
            } else {
                None
            };
            let miss_first = next_miss.filter(|m| mark.is_none_or(|mk| *m <= mk));
            match (miss_first, mark) {
                (Some(m), _) => {
                    let w = self.ondemand(stream, file, m, last - m + 1, false);
                    cursor = cursor.max(m);
                    next_miss = match advance(m, w) {
                        // The window did not cover the miss: the driver reads the rest on demand.
                        Some(still) if still == m => None,
                        other => other,
                    };
                }
                (_, Some(mk)) => {
                    let taken = self.take_mark(file, mk, mk);
                    debug_assert_eq!(taken, Some(mk));
                    let w = self.ondemand(stream, file, mk, last - mk + 1, true);
                    cursor = mk + 1;
                    next_miss = next_miss.and_then(|m| advance(m, w));
                }
                (None, None) => break,
            }
        }
        if let Some(ra) = self.states.get_mut(&(stream, file)) {
            ra.prev_page = Some(last);
        } else {
            self.states.insert(
                (stream, file),
                RaState {
                    prev_page: Some(last),
                    ..RaState::default()
                },
            );
        }
    }
}

impl Policy for Seqp {
    fn name(&self) -> &str {
        "seqp"
    }

    fn handle(&mut self, _now: Instant, input: Input) {
        match input {
            Input::Read {
                stream,
                file,
                range,
                miss,
            } => self.on_read(stream, file, range, miss.map(|m| m.0)),
            Input::Hint { .. } | Input::Fetched { .. } | Input::MemoryPressure { .. } => {}
        }
    }

    fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use foresight_core::ByteOffset;

    fn layout(file_bytes: u64) -> Arc<Layout> {
        Arc::new(Layout::unplaced(&[
            ByteLen(file_bytes),
            ByteLen(file_bytes),
        ]))
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
