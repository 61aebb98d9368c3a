//! Window: the longest prefix of the not-yet-used hinted reads whose bytes fit in memory.
//!
//! Paper 003_eb9cef22f2823582.txt, section I: the prefetcher reads ahead as much of the disclosed
//! data as its memory holds, and what it read stays in memory until the application has used it.
//! The hinted list is kept in the order the application will read it. Reads are admitted from its
//! front while the bytes held for admitted reads stay within the limit the contention controller
//! sets (never above the memory the policy may use), so the window is always a prefix of what is
//! left. A read's bytes stay held from admission until the policy releases them after the
//! application used them; only then can the window slide further. Hinted ranges are admitted in
//! pieces of at most [`ENTRY_BYTES_MAX`], so the smallest window always admits something.
//!
//! Bytes alone do not bound how many reads the window holds: a hinted read may be one byte long,
//! so a window of a few GiB could hold billions. It also holds at most [`ADMITTED_READS_MAX`]
//! reads, used ones waiting at its front included (asserted where they are admitted); at the
//! bound admission waits, as it does for bytes, until used reads leave the front.
//!
//! The hinted list keeps each range as it was given, and a piece is cut off its front only when
//! the piece is admitted (or skipped), so a hint of a whole file, however large, costs one queued
//! range. The list holds at most [`QUEUED_RANGES_MAX`] ranges a stream has hinted and the window
//! has not yet taken whole (asserted where they are queued); ranges hinted past it are dropped. A
//! hint is advice: a read nobody hinted, or whose hint was dropped, is read on demand as it comes.

use std::collections::VecDeque;

use foresight_core::{ByteRange, FileId};

use super::order::PhysKey;

/// Largest piece a hinted range is cut into, bytes.
pub const ENTRY_BYTES_MAX: u64 = 128 << 10;

/// Most hinted ranges a stream keeps queued (hinted, not yet admitted whole); further ones are
/// dropped. 4 Mi ranges, at most 96 MiB a stream: as many reads as the simulator lets the clients
/// of one run disclose together, so no simulated workload loses a hint, while an application that
/// hints without end (the engine bounds each `hint` call, not their sum) cannot grow the list
/// without end.
pub const QUEUED_RANGES_MAX: usize = 1 << 22;

/// Most reads a stream's window holds at once, admitted and not yet gone from its front (used
/// ones whose fetch is still under way included); past it admission waits. Memory alone would
/// allow `memory / 1 byte` reads. 4 Mi reads of [`ADMITTED_READ_BYTES`] (48) cost 192 MiB a
/// stream; the simulator's reads are at least 512 bytes, so only a window over 2 GiB of its
/// smallest reads reaches the bound, and the `directed` experiments' (8 KiB reads, at most
/// 112 MiB of window: 14 Ki reads) stay far below it.
pub const ADMITTED_READS_MAX: usize = 1 << 22;

/// Bytes one admitted read takes in the window.
pub const ADMITTED_READ_BYTES: usize = std::mem::size_of::<Entry>();

const _: () = assert!(
    ADMITTED_READ_BYTES <= 48,
    "the memory figure of ADMITTED_READS_MAX counts 48 bytes a read"
);

/// Where an admitted read's data stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FetchState {
    /// Waiting in the elevator.
    Pending,
    /// Part of a run being fetched; this many pieces of the run still have to complete.
    InFlight {
        /// Pieces not yet completed.
        pieces_left: u32,
        /// A piece came back cut short: the read goes back to `Pending` when the last piece is in.
        short: bool,
    },
    /// The data arrived.
    Fetched,
    /// Given back under memory pressure before it was fetched: the read keeps its place in the
    /// list but is neither held nor pinned until the window has room for it again.
    Shed,
}

/// One admitted read.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The file.
    pub file: FileId,
    /// The bytes.
    pub range: ByteRange,
    /// Physical position of its first byte.
    pub key: PhysKey,
    /// Fetch state; changed through [`Window::set_fetch`] only, which keeps the window's count
    /// of fetched, unused bytes.
    fetch: FetchState,
    /// The application has read it.
    pub used: bool,
}

impl Entry {
    /// Where its data stands.
    pub fn fetch(&self) -> FetchState {
        self.fetch
    }
}

/// A stream's hinted list and window. See the module documentation.
#[derive(Clone, Debug)]
pub struct Window {
    /// Hinted ranges not yet admitted whole, as given but for the pieces cut off the front one.
    queued: VecDeque<(FileId, ByteRange)>,
    /// Pieces of at most [`ENTRY_BYTES_MAX`] the queued ranges are still to be cut into.
    queued_pieces: u64,
    /// The most ranges `queued` may hold ([`QUEUED_RANGES_MAX`] but in tests).
    queued_ranges_max: usize,
    /// Admitted reads, used ones waiting at the front included.
    entries: VecDeque<Entry>,
    /// The most reads `entries` may hold ([`ADMITTED_READS_MAX`] but in tests).
    admitted_reads_max: usize,
    base_seq: u64,
    held_bytes: u64,
    /// How many entries are `Shed` and unused.
    shed_count: usize,
    /// No unused `Shed` entry comes before this sequence number. Every application read calls
    /// [`Window::admit`], so a scan for shed entries from the front would make a window of `n`
    /// small reads cost `O(n^2)`.
    shed_from_seq: u64,
    /// Every entry before this sequence number is used, so [`Window::matching`] starts here.
    unused_from_seq: u64,
    /// Bytes of entries that are `Fetched` and unused: the contention controller asks for it
    /// on every memory report, which comes with every application read.
    fetched_unused_bytes: u64,
    /// Entries that are `Pending` and unused, the only ones [`Window::shed_back`] may shed: with
    /// none, it need not walk a window of fetched reads on every memory report.
    pending_unused: usize,
}

impl Default for Window {
    fn default() -> Window {
        Window::with_bounds(QUEUED_RANGES_MAX, ADMITTED_READS_MAX)
    }
}

impl Window {
    /// An empty window whose hinted list holds at most `queued_ranges_max` ranges (at least 1).
    pub fn with_queued_ranges_max(queued_ranges_max: usize) -> Window {
        Window::with_bounds(queued_ranges_max, ADMITTED_READS_MAX)
    }

    /// An empty window whose hinted list holds at most `queued_ranges_max` ranges and which
    /// admits at most `admitted_reads_max` reads (each at least 1).
    pub fn with_bounds(queued_ranges_max: usize, admitted_reads_max: usize) -> Window {
        assert!(queued_ranges_max > 0, "a hinted list must hold a range");
        assert!(admitted_reads_max > 0, "a window must hold a read");
        Window {
            queued: VecDeque::new(),
            queued_pieces: 0,
            queued_ranges_max,
            entries: VecDeque::new(),
            admitted_reads_max,
            base_seq: 0,
            held_bytes: 0,
            shed_count: 0,
            shed_from_seq: 0,
            unused_from_seq: 0,
            fetched_unused_bytes: 0,
            pending_unused: 0,
        }
    }

    /// Appends future reads, in the order they will be issued; returns how many of the non-empty
    /// `ranges` were dropped because the hinted list was full (the last ones).
    pub fn push_hints(&mut self, file: FileId, ranges: &[ByteRange]) -> usize {
        let mut dropped = 0;
        for r in ranges.iter().filter(|r| !r.is_empty()) {
            if self.queued.len() >= self.queued_ranges_max {
                dropped += 1;
                continue;
            }
            self.queued_pieces += r.len.0.div_ceil(ENTRY_BYTES_MAX);
            self.queued.push_back((file, *r));
        }
        assert!(
            self.queued.len() <= self.queued_ranges_max,
            "{} hinted ranges queued, more than {}",
            self.queued.len(),
            self.queued_ranges_max
        );
        dropped
    }

    /// The next hinted read to admit: the first piece of the first queued range.
    fn front_piece(&self) -> Option<(FileId, ByteRange)> {
        self.queued
            .front()
            .map(|&(f, r)| (f, ByteRange::new(r.start.0, r.len.0.min(ENTRY_BYTES_MAX))))
    }

    /// Takes `pieces` pieces off the front of the first queued range (all it has at most).
    fn cut_front(&mut self, pieces: u64) {
        let Some(r) = self.queued.front_mut().map(|q| &mut q.1) else {
            return;
        };
        let cut_bytes = pieces.saturating_mul(ENTRY_BYTES_MAX);
        if cut_bytes >= r.len.0 {
            self.queued_pieces -= r.len.0.div_ceil(ENTRY_BYTES_MAX);
            self.queued.pop_front();
        } else {
            *r = ByteRange::new(r.start.0 + cut_bytes, r.len.0 - cut_bytes);
            self.queued_pieces -= pieces;
        }
    }

    /// Bytes held for admitted reads not yet released.
    pub fn held_bytes(&self) -> u64 {
        self.held_bytes
    }

    /// Admitted reads still in the window (used ones at the front included).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no read is admitted.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Hinted reads (pieces) not yet admitted.
    pub fn queued_pieces(&self) -> u64 {
        self.queued_pieces
    }

    /// Hinted ranges not yet admitted whole: what the hinted list holds.
    pub fn queued_ranges(&self) -> usize {
        self.queued.len()
    }

    /// Whether some hinted read is still to be used by the application.
    pub fn has_unused(&self) -> bool {
        // Every read before `unused_from_seq` is used and the one there, if admitted, is not
        // ([`Window::mark_used`] moves it past used reads only), so no walk is needed: the policy
        // asks on every event, and a window whose reads are all used but still in flight would
        // be walked whole.
        let unused = !self.queued.is_empty()
            || self.unused_from_seq.max(self.base_seq) < self.base_seq + self.entries.len() as u64;
        debug_assert_eq!(
            unused,
            !self.queued.is_empty() || self.entries.iter().any(|e| !e.used),
            "unused_from_seq out of step with the window"
        );
        unused
    }

    /// Admits reads from the front of the hinted list while they fit under `limit_bytes` and the
    /// window holds fewer than its most reads; calls `admitted(seq, entry)` for each, after
    /// `key_of` placed it.
    pub fn admit(
        &mut self,
        limit_bytes: u64,
        key_of: impl Fn(FileId, u64) -> PhysKey,
        mut admitted: impl FnMut(u64, &Entry),
    ) {
        // Shed reads come back first, in list order, so the window stays a prefix of the list.
        let mut i = self.shed_from_seq.saturating_sub(self.base_seq) as usize;
        while self.shed_count > 0 && i < self.entries.len() {
            let e = &mut self.entries[i];
            if e.fetch == FetchState::Shed && !e.used {
                if self.held_bytes + e.range.len.0 > limit_bytes {
                    self.shed_from_seq = self.base_seq + i as u64;
                    return;
                }
                e.fetch = FetchState::Pending;
                self.held_bytes += e.range.len.0;
                self.shed_count -= 1;
                self.pending_unused += 1;
                admitted(self.base_seq + i as u64, e);
            }
            i += 1;
        }
        self.shed_from_seq = self.base_seq + i as u64;
        debug_assert!(self.shed_count == 0 || i < self.entries.len());
        while let Some((file, range)) = self.front_piece() {
            if self.held_bytes + range.len.0 > limit_bytes
                || self.entries.len() >= self.admitted_reads_max
            {
                break;
            }
            self.cut_front(1);
            self.held_bytes += range.len.0;
            self.pending_unused += 1;
            let e = Entry {
                file,
                range,
                key: key_of(file, range.start.0),
                fetch: FetchState::Pending,
                used: false,
            };
            let seq = self.base_seq + self.entries.len() as u64;
            admitted(seq, &e);
            self.entries.push_back(e);
            assert!(
                self.entries.len() <= self.admitted_reads_max,
                "{} reads admitted, more than {}",
                self.entries.len(),
                self.admitted_reads_max
            );
        }
    }

    /// The admitted reads that hold pins: those not used yet, unless shed. (Used ones hold theirs
    /// until the policy releases them, which it tracks itself.)
    pub fn pinned_unused(&self) -> impl Iterator<Item = (FileId, ByteRange)> + '_ {
        self.entries
            .iter()
            .filter(|e| !e.used && e.fetch != FetchState::Shed)
            .map(|e| (e.file, e.range))
    }

    /// Bytes of admitted reads whose data has arrived and that the application has not used yet.
    pub fn fetched_unused_bytes(&self) -> u64 {
        self.debug_check_counts();
        self.fetched_unused_bytes
    }

    /// Recounts what the window keeps counts of (debug builds only: it walks the window).
    fn debug_check_counts(&self) {
        if cfg!(debug_assertions) {
            let unused = || self.entries.iter().filter(|e| !e.used);
            let fetched: u64 = unused()
                .filter(|e| e.fetch == FetchState::Fetched)
                .map(|e| e.range.len.0)
                .sum();
            assert_eq!(self.fetched_unused_bytes, fetched, "fetched, unused bytes");
            let pending = unused().filter(|e| e.fetch == FetchState::Pending).count();
            assert_eq!(self.pending_unused, pending, "pending, unused reads");
            let shed = unused().filter(|e| e.fetch == FetchState::Shed).count();
            assert_eq!(self.shed_count, shed, "shed, unused reads");
        }
    }

    /// Moves admitted read `seq` to `state`.
    pub fn set_fetch(&mut self, seq: u64, state: FetchState) {
        let e = self.get_mut(seq).expect("read is in the window");
        let (was, len, used) = (e.fetch, e.range.len.0, e.used);
        assert!(
            was != FetchState::Shed && state != FetchState::Shed,
            "shedding goes through shed_back and take_shed"
        );
        e.fetch = state;
        if used {
            return;
        }
        match was {
            FetchState::Fetched => self.fetched_unused_bytes -= len,
            FetchState::Pending => self.pending_unused -= 1,
            _ => {}
        }
        match state {
            FetchState::Fetched => self.fetched_unused_bytes += len,
            FetchState::Pending => self.pending_unused += 1,
            _ => {}
        }
    }

    /// The admitted reads waiting in the elevator (`Pending`, unused) whose bytes lie within
    /// `start..end` of `file`, with their physical keys.
    pub fn pending_within(&self, file: FileId, start: u64, end: u64) -> Vec<(u64, PhysKey)> {
        self.entries
            .iter()
            .enumerate()
            .filter(|(_, e)| {
                !e.used
                    && e.fetch == FetchState::Pending
                    && e.file == file
                    && e.range.start.0 >= start
                    && e.range.end().0 <= end
            })
            .map(|(i, e)| (self.base_seq + i as u64, e.key))
            .collect()
    }

    /// The admitted read `seq`, unless it is gone.
    pub fn get(&self, seq: u64) -> Option<&Entry> {
        seq.checked_sub(self.base_seq)
            .and_then(|i| self.entries.get(i as usize))
    }

    /// The admitted read `seq`, mutably.
    pub fn get_mut(&mut self, seq: u64) -> Option<&mut Entry> {
        seq.checked_sub(self.base_seq)
            .and_then(|i| self.entries.get_mut(i as usize))
    }

    /// The admitted, unused reads an application read of `range` of `file` finishes: those it
    /// overlaps and reads up to their end. Looks at the first `scan` unused admitted reads only
    /// (the application reads in hinted order, so its read is near the front).
    pub fn matching(&self, file: FileId, range: ByteRange, scan: usize) -> Vec<u64> {
        let (s, e) = (range.start.0, range.end().0);
        // Used reads still waiting for a fetch to come back stay at the front; they do not count
        // against the scan.
        let from = self.unused_from_seq.saturating_sub(self.base_seq) as usize;
        self.entries
            .iter()
            .enumerate()
            .skip(from)
            .filter(|(_, en)| !en.used)
            .take(scan)
            .filter(|(_, en)| {
                en.file == file
                    && en.range.start.0 < e
                    && en.range.end().0 > s
                    && en.range.end().0 <= e
            })
            .map(|(i, _)| self.base_seq + i as u64)
            .collect()
    }

    /// Drops hinted, not admitted reads (pieces) at the front of the list that `range` of `file`
    /// covers (the application read them before they could be admitted); returns how many.
    pub fn skip_queued(&mut self, file: FileId, range: ByteRange) -> u64 {
        let mut n = 0;
        while let Some(&(f, r)) = self.queued.front() {
            if f != file || r.start < range.start {
                break;
            }
            let pieces = r.len.0.div_ceil(ENTRY_BYTES_MAX);
            if r.end() <= range.end() {
                self.cut_front(pieces);
                n += pieces;
                continue;
            }
            // The read ends inside this range: of its pieces, those ending within the read are
            // covered, all full ones, since the last one ends past the read.
            let covered = range.end().0.saturating_sub(r.start.0) / ENTRY_BYTES_MAX;
            self.cut_front(covered);
            n += covered;
            break;
        }
        n
    }

    /// Sheds admitted reads that nothing has fetched, used or protected (`keep(seq)`), latest
    /// first, until the window holds no more than `limit_bytes` or none is left to shed;
    /// `shed(seq, entry)` hears of each. Their sequence numbers stay valid.
    pub fn shed_back(
        &mut self,
        limit_bytes: u64,
        keep: impl Fn(u64) -> bool,
        mut shed: impl FnMut(u64, &Entry),
    ) {
        self.debug_check_counts();
        let mut i = self.entries.len();
        while self.held_bytes > limit_bytes && i > 0 && self.pending_unused > 0 {
            i -= 1;
            let seq = self.base_seq + i as u64;
            let e = &mut self.entries[i];
            if e.fetch == FetchState::Pending && !e.used && !keep(seq) {
                e.fetch = FetchState::Shed;
                self.held_bytes -= e.range.len.0;
                self.shed_count += 1;
                self.pending_unused -= 1;
                self.shed_from_seq = self.shed_from_seq.min(seq);
                shed(seq, e);
            }
        }
    }

    /// The application reads shed read `seq` (on demand): it counts as used and fetched.
    pub fn take_shed(&mut self, seq: u64) {
        let e = self.get_mut(seq).expect("shed read is in the window");
        assert_eq!(e.fetch, FetchState::Shed, "read {seq} is not shed");
        // Used before it counts as fetched, so it never enters the fetched, unused bytes.
        e.used = true;
        e.fetch = FetchState::Fetched;
        self.shed_count -= 1;
        self.mark_used(seq);
    }

    /// The application has read admitted read `seq`.
    pub fn mark_used(&mut self, seq: u64) {
        let e = self.get_mut(seq).expect("used read is in the window");
        let (was_used, state, len) = (e.used, e.fetch, e.range.len.0);
        e.used = true;
        if !was_used {
            match state {
                FetchState::Fetched => self.fetched_unused_bytes -= len,
                FetchState::Pending => self.pending_unused -= 1,
                _ => {}
            }
        }
        let mut next = self.unused_from_seq.max(self.base_seq);
        while self.get(next).is_some_and(|e| e.used) {
            next += 1;
        }
        self.unused_from_seq = next;
    }

    /// Gives back the held bytes of a used read whose data was released.
    pub fn release_bytes(&mut self, bytes: u64) {
        assert!(bytes <= self.held_bytes, "released more than held");
        self.held_bytes -= bytes;
    }

    /// Forgets used reads at the front that no fetch still needs.
    pub fn pop_used(&mut self) {
        while self
            .entries
            .front()
            .is_some_and(|e| e.used && e.fetch == FetchState::Fetched)
        {
            self.entries.pop_front();
            self.base_seq += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One-byte reads under a window of 1 GiB: bytes would admit a thousand million of them. The
    /// window admits its most reads (8 here) and, once the first three are used and fetched and
    /// leave its front, three more. It used to admit all 1,000 hinted at once.
    #[test]
    fn tiny_reads_are_admitted_up_to_the_most_reads_not_by_bytes_alone() {
        let mut w = Window::with_bounds(QUEUED_RANGES_MAX, 8);
        let one_byte: Vec<ByteRange> = (0..1000).map(|i| ByteRange::new(i, 1)).collect();
        w.push_hints(FileId(0), &one_byte);
        let mut got = vec![];
        w.admit(1 << 30, |_, o| (0, o), |s, _| got.push(s));
        assert_eq!(got, (0..8).collect::<Vec<_>>());
        assert_eq!(w.len(), 8);
        for seq in 0..3 {
            w.set_fetch(seq, FetchState::Fetched);
            w.mark_used(seq);
            w.release_bytes(1);
        }
        // Used but still at the front: they count until they leave it.
        w.admit(1 << 30, |_, o| (0, o), |s, _| got.push(s));
        assert_eq!(got.len(), 8);
        w.pop_used();
        w.admit(1 << 30, |_, o| (0, o), |s, _| got.push(s));
        assert_eq!(got, (0..11).collect::<Vec<_>>());
        assert_eq!(w.len(), 8);
        assert_eq!(w.queued_ranges(), 1000 - 11);
    }

    #[test]
    fn admits_the_longest_prefix_that_fits() {
        let mut w = Window::default();
        w.push_hints(
            FileId(0),
            &[
                ByteRange::new(0, 8192),
                ByteRange::new(65536, 300 << 10),
                ByteRange::new(8192, 8192),
            ],
        );
        assert_eq!(
            w.queued_pieces(),
            5,
            "300 KiB is cut into 128 + 128 + 44 KiB"
        );
        assert_eq!(w.queued_ranges(), 3, "cut as admitted, not when hinted");
        let mut got = vec![];
        w.admit(
            200 << 10,
            |_, o| (0, o),
            |s, e| got.push((s, e.range.len.0)),
        );
        assert_eq!(got, vec![(0, 8192), (1, 128 << 10)]);
        assert_eq!(w.held_bytes(), 8192 + (128 << 10));
        assert_eq!(w.matching(FileId(0), ByteRange::new(0, 8192), 8), vec![0]);
        assert!(w.matching(FileId(1), ByteRange::new(0, 8192), 8).is_empty());
    }

    #[test]
    #[should_panic(expected = "a hinted list must hold a range")]
    fn a_hinted_list_bound_of_zero_is_refused_where_the_window_is_built() {
        let _ = Window::with_queued_ranges_max(0);
    }

    #[test]
    fn a_full_hinted_list_drops_the_last_ranges_and_takes_more_once_one_is_admitted() {
        let mut w = Window::with_queued_ranges_max(2);
        let r = |i: u64| ByteRange::new(i << 20, 200 << 10);
        assert_eq!(
            w.push_hints(FileId(0), &[r(0), ByteRange::new(9, 0), r(1), r(2)]),
            1
        );
        assert_eq!((w.queued_ranges(), w.queued_pieces()), (2, 4));
        let mut got = vec![];
        // The first range's first piece leaves it queued; its second piece takes it whole.
        w.admit(128 << 10, |_, o| (0, o), |_, e| got.push(e.range));
        assert_eq!(w.push_hints(FileId(0), &[r(3)]), 1);
        w.admit(200 << 10, |_, o| (0, o), |_, e| got.push(e.range));
        assert_eq!(
            got,
            vec![
                ByteRange::new(0, 128 << 10),
                ByteRange::new(128 << 10, 72 << 10)
            ]
        );
        assert_eq!(w.push_hints(FileId(0), &[r(4), r(5)]), 1);
        let queued: Vec<_> = w.queued.iter().map(|q| q.1).collect();
        assert_eq!(queued, vec![r(1), r(4)]);
    }

    /// The window as it was before it kept counts: every question answered by walking it. The
    /// property below drives both with the same operations.
    #[derive(Default)]
    struct Naive {
        /// Pieces, cut when hinted, each with the number of the hinted range it came from.
        queued: VecDeque<(FileId, ByteRange, u64)>,
        /// Numbers the next hinted range.
        hinted_ranges: u64,
        /// `(file, range, fetch, used)`.
        entries: VecDeque<(FileId, ByteRange, FetchState, bool)>,
        base_seq: u64,
        held_bytes: u64,
    }

    impl Naive {
        /// Hinted ranges with a piece still queued.
        fn queued_ranges(&self) -> usize {
            let ids: std::collections::BTreeSet<u64> = self.queued.iter().map(|q| q.2).collect();
            ids.len()
        }

        /// Cuts each range into its pieces at once, while fewer than `max` ranges are queued;
        /// returns how many it dropped.
        fn push_hints(&mut self, file: FileId, ranges: &[ByteRange], max: usize) -> usize {
            let mut dropped = 0;
            for r in ranges {
                if r.is_empty() {
                    continue;
                }
                if self.queued_ranges() >= max {
                    dropped += 1;
                    continue;
                }
                let id = self.hinted_ranges;
                self.hinted_ranges += 1;
                let mut start = r.start.0;
                let end = r.end().0;
                while start < end {
                    let len = (end - start).min(ENTRY_BYTES_MAX);
                    self.queued
                        .push_back((file, ByteRange::new(start, len), id));
                    start += len;
                }
            }
            dropped
        }

        fn skip_queued(&mut self, file: FileId, range: ByteRange) -> u64 {
            let mut n = 0;
            while let Some(&(f, r, _)) = self.queued.front() {
                if f == file && r.start >= range.start && r.end() <= range.end() {
                    self.queued.pop_front();
                    n += 1;
                } else {
                    break;
                }
            }
            n
        }

        fn admit(&mut self, limit_bytes: u64) -> Vec<(u64, FileId, ByteRange)> {
            let mut got = vec![];
            for i in 0..self.entries.len() {
                let e = &mut self.entries[i];
                if e.2 == FetchState::Shed && !e.3 {
                    if self.held_bytes + e.1.len.0 > limit_bytes {
                        return got;
                    }
                    e.2 = FetchState::Pending;
                    self.held_bytes += e.1.len.0;
                    got.push((self.base_seq + i as u64, e.0, e.1));
                }
            }
            while let Some(&(file, range, _)) = self.queued.front() {
                if self.held_bytes + range.len.0 > limit_bytes {
                    break;
                }
                self.queued.pop_front();
                self.held_bytes += range.len.0;
                got.push((self.base_seq + self.entries.len() as u64, file, range));
                self.entries
                    .push_back((file, range, FetchState::Pending, false));
            }
            got
        }

        fn has_unused(&self) -> bool {
            !self.queued.is_empty() || self.entries.iter().any(|e| !e.3)
        }

        fn fetched_unused_bytes(&self) -> u64 {
            self.entries
                .iter()
                .filter(|e| !e.3 && e.2 == FetchState::Fetched)
                .map(|e| e.1.len.0)
                .sum()
        }

        fn matching(&self, file: FileId, range: ByteRange, scan: usize) -> Vec<u64> {
            let (s, e) = (range.start.0, range.end().0);
            self.entries
                .iter()
                .enumerate()
                .filter(|(_, en)| !en.3)
                .take(scan)
                .filter(|(_, en)| {
                    en.0 == file && en.1.start.0 < e && en.1.end().0 > s && en.1.end().0 <= e
                })
                .map(|(i, _)| self.base_seq + i as u64)
                .collect()
        }

        fn shed_back(&mut self, limit_bytes: u64, keep: impl Fn(u64) -> bool) -> Vec<u64> {
            let mut got = vec![];
            let mut i = self.entries.len();
            while self.held_bytes > limit_bytes && i > 0 {
                i -= 1;
                let seq = self.base_seq + i as u64;
                let e = &mut self.entries[i];
                if e.2 == FetchState::Pending && !e.3 && !keep(seq) {
                    e.2 = FetchState::Shed;
                    self.held_bytes -= e.1.len.0;
                    got.push(seq);
                }
            }
            got
        }

        fn pop_used(&mut self) {
            while self
                .entries
                .front()
                .is_some_and(|e| e.3 && e.2 == FetchState::Fetched)
            {
                self.entries.pop_front();
                self.base_seq += 1;
            }
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        Hint {
            file: u32,
            start_kib: u64,
            len_kib: u64,
        },
        Admit {
            limit_kib: u64,
        },
        /// The application reads from `back_kib` before the first queued piece to `ahead_kib`
        /// past its start (of the other file, if `other_file`).
        SkipQueued {
            other_file: bool,
            back_kib: u64,
            ahead_kib: u64,
        },
        SetFetch {
            pick: usize,
            state: u8,
        },
        MarkUsed {
            pick: usize,
        },
        ShedBack {
            limit_kib: u64,
            keep_mask: u64,
        },
        TakeShed {
            pick: usize,
        },
        Release {
            pick: usize,
        },
        PopUsed,
        Match {
            file: u32,
            start_kib: u64,
            len_kib: u64,
            scan: usize,
        },
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        prop_oneof![
            (0u32..2, 0u64..512, 0u64..1200).prop_map(|(file, start_kib, len_kib)| Op::Hint {
                file,
                start_kib,
                len_kib
            }),
            (0u64..1024).prop_map(|limit_kib| Op::Admit { limit_kib }),
            (proptest::bool::weighted(0.1), 0u64..4, 0u64..1200).prop_map(
                |(other_file, back_kib, ahead_kib)| Op::SkipQueued {
                    other_file,
                    back_kib,
                    ahead_kib
                }
            ),
            (any::<usize>(), 0u8..4).prop_map(|(pick, state)| Op::SetFetch { pick, state }),
            any::<usize>().prop_map(|pick| Op::MarkUsed { pick }),
            (0u64..1024, any::<u64>()).prop_map(|(limit_kib, keep_mask)| Op::ShedBack {
                limit_kib,
                keep_mask
            }),
            any::<usize>().prop_map(|pick| Op::TakeShed { pick }),
            any::<usize>().prop_map(|pick| Op::Release { pick }),
            Just(Op::PopUsed),
            (0u32..2, 0u64..512, 1u64..300, 1usize..8).prop_map(
                |(file, start_kib, len_kib, scan)| Op::Match {
                    file,
                    start_kib,
                    len_kib,
                    scan
                }
            ),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        /// Whatever the directed policy does to a window (in the ways it does: states change
        /// through `set_fetch`, `mark_used`, `shed_back` and `take_shed`), the counts it keeps
        /// answer as a walk over it would, and every walk it skips (to the first shed or unused
        /// read, or when nothing is pending) skips nothing it should have seen. Debug builds also
        /// recount the window on every `fetched_unused_bytes` and `shed_back`. The hinted list,
        /// kept as the ranges given and cut as admitted or skipped, and bounded to `max_ranges`,
        /// gives the same pieces as one cut into pieces when hinted.
        #[test]
        fn the_counted_window_answers_as_a_walk_over_it_would(
            ops in proptest::collection::vec(op(), 1..200),
            max_ranges in 1usize..12,
        ) {
            let mut w = Window::with_queued_ranges_max(max_ranges);
            let mut n = Naive::default();
            // Used reads whose bytes are still held (used through `mark_used`, not released).
            let mut held_used: std::collections::BTreeSet<u64> = Default::default();
            for op in ops {
                let seqs = |n: &Naive, want: &dyn Fn(FetchState, bool) -> bool| -> Vec<u64> {
                    n.entries
                        .iter()
                        .enumerate()
                        .filter(|(_, e)| want(e.2, e.3))
                        .map(|(i, _)| n.base_seq + i as u64)
                        .collect()
                };
                match op {
                    Op::Hint { file, start_kib, len_kib } => {
                        // Odd lengths too, so that a range's last piece is short.
                        let r = [ByteRange::new(start_kib << 10, (len_kib << 10) - len_kib % 3)];
                        proptest::prop_assert_eq!(
                            w.push_hints(FileId(file), &r),
                            n.push_hints(FileId(file), &r, max_ranges)
                        );
                    }
                    Op::SkipQueued { other_file, back_kib, ahead_kib } => {
                        let Some(&(f, r, _)) = n.queued.front() else { continue };
                        let file = if other_file { FileId(1 - f.0) } else { f };
                        let start = r.start.0.saturating_sub(back_kib << 10);
                        let read = ByteRange::new(start, r.start.0 - start + (ahead_kib << 10));
                        proptest::prop_assert_eq!(
                            w.skip_queued(file, read),
                            n.skip_queued(file, read)
                        );
                    }
                    Op::Admit { limit_kib } => {
                        let mut got = vec![];
                        w.admit(limit_kib << 10, |_, o| (0, o), |s, e| got.push((s, e.file, e.range)));
                        proptest::prop_assert_eq!(got, n.admit(limit_kib << 10));
                    }
                    Op::SetFetch { pick, state } => {
                        let c = seqs(&n, &|f, _| f != FetchState::Shed);
                        if c.is_empty() { continue; }
                        let seq = c[pick % c.len()];
                        let state = match state {
                            0 => FetchState::Pending,
                            1 => FetchState::InFlight { pieces_left: 1, short: false },
                            2 => FetchState::InFlight { pieces_left: 2, short: true },
                            _ => FetchState::Fetched,
                        };
                        w.set_fetch(seq, state);
                        n.entries[(seq - n.base_seq) as usize].2 = state;
                    }
                    Op::MarkUsed { pick } => {
                        let c = seqs(&n, &|f, used| f != FetchState::Shed && !used);
                        if c.is_empty() { continue; }
                        let seq = c[pick % c.len()];
                        w.mark_used(seq);
                        n.entries[(seq - n.base_seq) as usize].3 = true;
                        held_used.insert(seq);
                    }
                    Op::ShedBack { limit_kib, keep_mask } => {
                        let keep = |s: u64| keep_mask & (1 << (s % 64)) != 0;
                        let mut got = vec![];
                        w.shed_back(limit_kib << 10, keep, |s, _| got.push(s));
                        proptest::prop_assert_eq!(got, n.shed_back(limit_kib << 10, keep));
                    }
                    Op::TakeShed { pick } => {
                        let c = seqs(&n, &|f, used| f == FetchState::Shed && !used);
                        if c.is_empty() { continue; }
                        let seq = c[pick % c.len()];
                        w.take_shed(seq);
                        let e = &mut n.entries[(seq - n.base_seq) as usize];
                        e.2 = FetchState::Fetched;
                        e.3 = true;
                    }
                    Op::Release { pick } => {
                        let c: Vec<u64> = held_used.iter().copied().collect();
                        if c.is_empty() { continue; }
                        let seq = c[pick % c.len()];
                        held_used.remove(&seq);
                        let Some(i) = seq.checked_sub(n.base_seq) else { continue };
                        let Some(e) = n.entries.get(i as usize) else { continue };
                        let len = e.1.len.0;
                        w.release_bytes(len);
                        n.held_bytes -= len;
                    }
                    Op::PopUsed => {
                        w.pop_used();
                        n.pop_used();
                        held_used.retain(|&s| s >= n.base_seq);
                    }
                    Op::Match { file, start_kib, len_kib, scan } => {
                        let r = ByteRange::new(start_kib << 10, len_kib << 10);
                        proptest::prop_assert_eq!(
                            w.matching(FileId(file), r, scan),
                            n.matching(FileId(file), r, scan)
                        );
                    }
                }
                proptest::prop_assert_eq!(w.held_bytes(), n.held_bytes);
                proptest::prop_assert_eq!(w.len(), n.entries.len());
                proptest::prop_assert_eq!(w.queued_pieces(), n.queued.len() as u64);
                proptest::prop_assert_eq!(w.queued_ranges(), n.queued_ranges());
                proptest::prop_assert!(w.queued_ranges() <= max_ranges);
                proptest::prop_assert_eq!(w.front_piece(), n.queued.front().map(|q| (q.0, q.1)));
                proptest::prop_assert_eq!(w.has_unused(), n.has_unused());
                proptest::prop_assert_eq!(w.fetched_unused_bytes(), n.fetched_unused_bytes());
                for (i, e) in n.entries.iter().enumerate() {
                    let got = w.get(n.base_seq + i as u64).expect("same window");
                    proptest::prop_assert_eq!((got.fetch(), got.used), (e.2, e.3));
                }
            }
        }
    }
}
