//! The readahead window state machine that SEQP and SASEQP share: Linux's on-demand readahead
//! (mm/readahead.c, `ondemand_readahead`), as paper 000_a596543dd26dac72.txt sections 2.4 and 5.2
//! describe it, with one hook, `WindowShape`, that may shrink each window before it is submitted.
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
//!
//! Shaping (SASEQP, paper 000, section 3, Fig. 5) changes only the extent of a window: the shrunk
//! window is what is fetched and where the next window starts, but the next window grows from the
//! size SEQP chose. That is what paper 000 Fig. 4 draws: the third window is cut from four blocks to
//! one at a strip boundary and the fourth is four blocks again, not two. The readahead mark keeps its
//! distance from the window start, moved back onto the last page if the cut removed it.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use foresight_core::{ByteLen, ByteRange, FileId, StreamId};

use crate::{FetchIds, Input, Layout, Output, PolicyError, Tier, PAGE_BYTES};

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

/// How windows are sized and when the next one is fetched.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WindowRule {
    /// Linux on-demand readahead: [`init_window_pages`], [`next_window_pages`], asynchronous
    /// readahead at the marked page, and the first two windows merged when the read would hit its
    /// own mark at once. What `seqp` and `saseqp` use.
    #[default]
    Linux,
    /// Synchronous SEQP (paper 000, section 2.4): the first window is the request (at least one
    /// page, at most the maximum), each later window doubles up to the maximum, and a window is
    /// fetched only when a read misses at its start; no marks. This is the ramp paper 000 Figs. 3
    /// and 4 draw (1, 2, 4 blocks), which the Linux rules cannot produce: they never open with a
    /// one-page window ahead of a one-page read unless the maximum is one page.
    Synchronous,
}

impl WindowRule {
    fn init_pages(self, req_pages: u64, max_pages: u64) -> u64 {
        match self {
            WindowRule::Linux => init_window_pages(req_pages, max_pages),
            WindowRule::Synchronous => req_pages.clamp(1, max_pages.max(1)),
        }
    }

    fn next_pages(self, cur_pages: u64, max_pages: u64) -> u64 {
        match self {
            WindowRule::Linux => next_window_pages(cur_pages, max_pages),
            WindowRule::Synchronous => (cur_pages * 2).clamp(1, max_pages.max(1)),
        }
    }
}

/// A hook that may shrink a window before it is fetched.
pub(crate) trait WindowShape {
    /// How many pages of the window `[start_page, start_page + pages)` of `file` to fetch: at least
    /// 1 and at most `pages`. `pages` is at least 1.
    fn shape(&mut self, layout: &Layout, file: FileId, start_page: u64, pages: u64) -> u64;
}

/// SEQP's shape: windows are fetched as Linux sizes them.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Unshaped;

impl WindowShape for Unshaped {
    fn shape(&mut self, _layout: &Layout, _file: FileId, _start_page: u64, pages: u64) -> u64 {
        pages
    }
}

/// The smallest cap memory pressure drives the window to, in pages (128 KiB, Linux's default
/// maximum readahead).
pub const MIN_CAP_PAGES: u64 = 32;

/// Windows' worth of readahead without pressure after which the cap doubles back.
pub const GROW_AFTER_WINDOWS: u64 = 32;

/// One open file's readahead state (Linux `struct file_ra_state`), in pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct RaState {
    start: u64,
    size: u64,
    async_size: u64,
    /// The size the rules chose for the current window, before shaping; the next window grows
    /// from it. Equal to `size` when the window was not shrunk.
    ramp: u64,
    /// Last page the previous read touched, if any (Linux `prev_pos`).
    prev_page: Option<u64>,
}

/// The on-demand readahead state machine over a [`WindowShape`]. See the module documentation.
#[derive(Debug)]
pub(crate) struct OnDemand<S> {
    rule: WindowRule,
    max_pages: u64,
    /// The largest window memory allows now (`<= max_pages`): halved when memory refuses a fetch
    /// or drops read-ahead data unread, doubled back after [`GROW_AFTER_WINDOWS`] windows' worth of
    /// readahead without that.
    cap_pages: u64,
    /// Readahead pages submitted since the cap last changed.
    pages_since_cap: u64,
    layout: Arc<Layout>,
    states: BTreeMap<(StreamId, FileId), RaState>,
    /// Pages carrying the readahead mark, per file (marks live on pages, not on streams).
    marks: BTreeMap<FileId, BTreeSet<u64>>,
    ids: FetchIds,
    out: VecDeque<Output>,
    shape: S,
}

impl<S: WindowShape> OnDemand<S> {
    /// A state machine with windows of at most `readahead_max` bytes.
    pub(crate) fn new(
        readahead_max: ByteLen,
        rule: WindowRule,
        layout: Arc<Layout>,
        shape: S,
    ) -> Result<OnDemand<S>, PolicyError> {
        if !readahead_max.0.is_multiple_of(PAGE_BYTES) {
            return Err(PolicyError::BadSetting {
                key: "readahead_max",
                message: format!(
                    "{readahead_max} is not a whole number of 4 KiB pages; use e.g. 128KiB"
                ),
            });
        }
        Ok(OnDemand {
            rule,
            max_pages: readahead_max.0 / PAGE_BYTES,
            cap_pages: readahead_max.0 / PAGE_BYTES,
            pages_since_cap: 0,
            layout,
            states: BTreeMap::new(),
            marks: BTreeMap::new(),
            ids: FetchIds::default(),
            out: VecDeque::new(),
            shape,
        })
    }

    pub(crate) fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Puts a file opened after the policy was built under `id` (see `Policy::add_file`).
    pub(crate) fn add_file(&mut self, id: FileId, file: crate::layout::FileLayout) {
        Arc::make_mut(&mut self.layout).put_file(id, file);
    }

    pub(crate) fn shape(&self) -> &S {
        &self.shape
    }

    /// The window state of a stream on a file, as `(start, size, async_size)` in pages.
    pub(crate) fn window(&self, stream: StreamId, file: FileId) -> Option<(u64, u64, u64)> {
        self.states
            .get(&(stream, file))
            .map(|s| (s.start, s.size, s.async_size))
    }

    /// How many (stream, file) windows are kept.
    pub(crate) fn window_count(&self) -> usize {
        self.states.len()
    }

    /// `Input::StreamClosed`: forgets the stream's windows, so that a new stream given the same
    /// id starts afresh (Linux likewise frees a `file_ra_state` with its `struct file`). The
    /// readahead marks stay: they live on pages, and another reader of the file may reach them.
    pub(crate) fn forget_stream(&mut self, stream: StreamId) {
        let files: Vec<FileId> = self
            .states
            .range((stream, FileId(0))..=(stream, FileId(u32::MAX)))
            .map(|(&(_, f), _)| f)
            .collect();
        for f in files {
            self.states.remove(&(stream, f));
        }
    }

    /// `Input::FileClosed`: the file's readahead marks go with its pages (the driver holds none
    /// of them now), so that a new file given the id starts unmarked. Its windows went with the
    /// streams that read it (`Input::StreamClosed` comes first).
    pub(crate) fn forget_file(&mut self, file: FileId) {
        self.marks.remove(&file);
    }

    /// How many files carry readahead marks.
    pub(crate) fn marked_files(&self) -> usize {
        self.marks.len()
    }

    /// The largest window memory allows now, in pages.
    pub(crate) fn cap_pages(&self) -> u64 {
        self.cap_pages
    }

    /// `Input::MemoryPressure`: memory refused a fetch, or read-ahead data was dropped before it
    /// was read. Many streams' windows together exceed memory, so every window is held to half its
    /// cap, at most once per window's worth of readahead (one burst of refusals counts once); Linux
    /// likewise falls back to small windows when it finds read-ahead pages thrashed.
    pub(crate) fn on_pressure(&mut self) {
        if self.pages_since_cap < self.cap_pages {
            return;
        }
        self.cap_pages = (self.cap_pages / 2).max(MIN_CAP_PAGES.min(self.max_pages));
        self.pages_since_cap = 0;
    }

    pub(crate) fn pop_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    /// One input, as `Policy::handle` for a policy built on these windows: reads drive them,
    /// memory pressure caps them, a closed stream's windows go; hints and fetch completions do not
    /// concern them.
    pub(crate) fn handle(&mut self, input: Input) {
        match input {
            Input::Read {
                stream,
                file,
                range,
                miss,
            } => self.on_read(stream, file, range, miss.map(|m| m.0)),
            Input::MemoryPressure { .. } => self.on_pressure(),
            Input::StreamClosed { stream } => self.forget_stream(stream),
            Input::FileClosed { file } => self.forget_file(file),
            Input::Hint { .. } | Input::Fetched { .. } => {}
        }
    }

    fn file_pages(&self, file: FileId) -> u64 {
        self.layout.file_size(file).0.div_ceil(PAGE_BYTES)
    }

    /// Lets the shape cut the window `[start_page, start_page + pages)`; returns the pages kept.
    fn shaped(&mut self, file: FileId, start_page: u64, pages: u64) -> u64 {
        if pages == 0 || start_page >= self.file_pages(file) {
            return pages;
        }
        let kept = self.shape.shape(&self.layout, file, start_page, pages);
        assert!(
            (1..=pages).contains(&kept),
            "shape kept {kept} of a {pages}-page window"
        );
        kept
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
        let max = self.cap_pages;
        let rule = self.rule;
        let mut ra = self
            .states
            .get(&(stream, file))
            .copied()
            .unwrap_or_default();
        let sequential_hit = ra.size > 0
            && (page == ra.start + ra.size - ra.async_size || page == ra.start + ra.size);
        let initial = |ra: &mut RaState| {
            ra.start = page;
            ra.size = rule.init_pages(req_pages, max);
            ra.async_size = match rule {
                WindowRule::Synchronous => 0,
                WindowRule::Linux if ra.size > req_pages => ra.size - req_pages,
                WindowRule::Linux => ra.size,
            };
        };
        if page == 0 {
            initial(&mut ra);
        } else if sequential_hit {
            ra.start += ra.size;
            ra.size = rule.next_pages(ra.ramp.max(ra.size), max);
            ra.async_size = match rule {
                WindowRule::Synchronous => 0,
                WindowRule::Linux => ra.size,
            };
        } else if hit_mark {
            // Another reader's window was marked (interleaved reads of one file): continue from
            // the end of what this reader last fetched, or from just past the mark.
            let start = (ra.start + ra.size).max(page + 1);
            if start - page > max {
                return None;
            }
            ra.start = start;
            ra.size = rule.next_pages(start - page + req_pages, max);
            ra.async_size = ra.size;
        } else if req_pages > max
            // The page the last read ended in or the one after it (mm/readahead.c compares
            // `index - prev_index <= 1` unsigned): a read that steps back is not sequential.
            || ra.prev_page.is_some_and(|p| page.checked_sub(p).is_some_and(|d| d <= 1))
        {
            initial(&mut ra);
        } else {
            // A random read: fetch only what was asked (shaped like any other fetch), leave the
            // window alone.
            let pages = self.shaped(file, page, req_pages);
            return self.submit(file, page, pages, None);
        }
        if page == ra.start && ra.size == ra.async_size && ra.size > 0 {
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
        ra.ramp = ra.size;
        let kept = self.shaped(file, ra.start, ra.size);
        if kept < ra.size {
            // Keep the mark where the rules put it, or on the last kept page if it was cut off;
            // a synchronous window has no mark and keeps none.
            if ra.async_size > 0 {
                let mark_offset = (ra.size - ra.async_size).min(kept - 1);
                ra.async_size = kept - mark_offset;
            }
            ra.size = kept;
        }
        assert!(ra.async_size <= ra.size && ra.size <= ra.ramp);
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
        if mark.is_some() {
            self.pages_since_cap += end_page - start_page;
            if self.cap_pages < self.max_pages
                && self.pages_since_cap >= GROW_AFTER_WINDOWS * self.cap_pages
            {
                self.cap_pages = (self.cap_pages * 2).min(self.max_pages);
                self.pages_since_cap = 0;
            }
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

    /// Handles `Input::Read`: `miss` is the first missing byte, if any.
    pub(crate) fn on_read(
        &mut self,
        stream: StreamId,
        file: FileId,
        range: ByteRange,
        miss: Option<u64>,
    ) {
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
