//! Tests of the `directed` policy against a small in-memory driver.

use std::collections::{BTreeMap, BTreeSet};

use foresight_core::{ByteLen, ByteOffset, Rng};
use proptest::prelude::*;

use super::*;

fn layout(files: usize, bytes: u64) -> Arc<Layout> {
    let volume = ByteLen(bytes * files as u64 * 2);
    Arc::new(Layout::contiguous(volume, None, files, ByteLen(bytes), 1 << 20).unwrap())
}

fn cfg(memory: u64, infill: Infill) -> DirectedConfig {
    DirectedConfig {
        memory_bytes: memory,
        infill_max: infill,
        contention: true,
        positioning_curve_ns: vec![],
        media_bytes_per_s: 0,
    }
}

fn drain(p: &mut Directed) -> Vec<Output> {
    std::iter::from_fn(|| p.poll_output()).collect()
}

/// Discloses `ranges` of `file` as stream `stream`'s future reads.
fn hint(p: &mut Directed, stream: u32, file: u32, ranges: Vec<ByteRange>) {
    p.handle(
        Instant::ZERO,
        Input::Hint {
            stream: StreamId(stream),
            file: FileId(file),
            ranges,
        },
    );
}

/// A driver with a page set and FIFO completion, no eviction.
struct Driver {
    cached: BTreeSet<(u32, u64)>,
    in_flight: BTreeMap<(u32, u64), u32>,
    /// Fetches in flight, each with the pages it reads (those neither cached nor in flight when it
    /// was issued, as the simulator's layer does).
    queue: VecDeque<(FetchId, FileId, Vec<u64>)>,
    device_reads: BTreeMap<(u32, u64), u32>,
    demand_pages: u64,
    fetched: Vec<(FileId, ByteRange)>,
    deferred: bool,
    /// Fetches completed.
    completions: u64,
}

impl Driver {
    fn new() -> Driver {
        Driver {
            cached: BTreeSet::new(),
            in_flight: BTreeMap::new(),
            queue: VecDeque::new(),
            device_reads: BTreeMap::new(),
            demand_pages: 0,
            fetched: vec![],
            deferred: false,
            completions: 0,
        }
    }

    fn pages(r: ByteRange) -> std::ops::Range<u64> {
        r.start.0 / PAGE_BYTES..r.end().0.div_ceil(PAGE_BYTES)
    }

    fn execute(&mut self, outs: Vec<Output>) {
        for o in outs {
            match o {
                Output::Fetch {
                    id, file, range, ..
                } => {
                    self.fetched.push((file, range));
                    let mut mine = vec![];
                    for pg in Self::pages(range) {
                        let k = (file.0, pg);
                        if !self.cached.contains(&k) && !self.in_flight.contains_key(&k) {
                            self.in_flight.insert(k, 1);
                            mine.push(pg);
                        }
                    }
                    self.queue.push_back((id, file, mine));
                }
                Output::Release { file, range } => {
                    for p in Self::pages(range) {
                        self.cached.remove(&(file.0, p));
                    }
                }
                Output::Defer { .. } => self.deferred = true,
                Output::Cancel { .. } | Output::Evict { .. } => {}
            }
        }
    }

    /// Completes the oldest fetch; false when none is left.
    fn complete_one(&mut self, p: &mut Directed) -> bool {
        let Some((id, file, mine)) = self.queue.pop_front() else {
            return false;
        };
        for pg in mine {
            let n = self.in_flight.get_mut(&(file.0, pg)).expect("in flight");
            *n -= 1;
            if *n == 0 {
                self.in_flight.remove(&(file.0, pg));
            }
            if self.cached.insert((file.0, pg)) {
                *self.device_reads.entry((file.0, pg)).or_insert(0) += 1;
            }
        }
        p.handle(Instant::ZERO, Input::Fetched { id, ok: true });
        self.completions += 1;
        let outs = drain(p);
        self.execute(outs);
        true
    }

    fn missing(&self, file: FileId, range: ByteRange) -> Option<u64> {
        Self::pages(range)
            .find(|&pg| {
                !self.cached.contains(&(file.0, pg)) && !self.in_flight.contains_key(&(file.0, pg))
            })
            .map(|pg| (pg * PAGE_BYTES).max(range.start.0))
    }

    /// The application reads `range`: waits for deferred data, demand-reads the rest.
    fn read(&mut self, p: &mut Directed, stream: u32, file: FileId, range: ByteRange) {
        self.deferred = false;
        p.handle(
            Instant::ZERO,
            Input::Read {
                stream: StreamId(stream),
                file,
                range,
                miss: self.missing(file, range).map(ByteOffset),
            },
        );
        let outs = drain(p);
        self.execute(outs);
        // Wait for in-flight pages, and for everything when the policy deferred the read.
        loop {
            let absent: Vec<u64> = Self::pages(range)
                .filter(|&pg| !self.cached.contains(&(file.0, pg)))
                .collect();
            let waits = absent
                .iter()
                .any(|&pg| self.deferred || self.in_flight.contains_key(&(file.0, pg)));
            if !waits {
                break;
            }
            assert!(self.complete_one(p), "read never served");
        }
        for pg in Self::pages(range) {
            if self.cached.insert((file.0, pg)) {
                self.demand_pages += 1;
                *self.device_reads.entry((file.0, pg)).or_insert(0) += 1;
            }
        }
    }
}

#[test]
fn a_reversed_list_is_fetched_in_disk_order_and_used_data_is_released() {
    let l = layout(1, 64 << 20);
    let mut p = Directed::new(&cfg(16 << 20, Infill::Bytes(0)), l).unwrap();
    let ranges: Vec<ByteRange> = (0..64u64)
        .rev()
        .map(|i| ByteRange::new(i * (1 << 20), 8192))
        .collect();
    hint(&mut p, 0, 0, ranges.clone());
    let outs = drain(&mut p);
    let starts: Vec<u64> = outs
        .iter()
        .filter_map(|o| match o {
            Output::Fetch { range, .. } => Some(range.start.0),
            _ => None,
        })
        .collect();
    assert_eq!(starts.len(), 64, "the whole list fits in 16 MiB");
    assert!(starts.windows(2).all(|w| w[0] < w[1]), "{starts:?}");
    let mut d = Driver::new();
    d.execute(outs);
    while d.complete_one(&mut p) {}
    for r in &ranges {
        d.read(&mut p, 0, FileId(0), *r);
    }
    assert_eq!(d.demand_pages, 0);
    // Every read but the last has been released by the read after it.
    assert_eq!(p.window_bytes(StreamId(0)).unwrap().0, 8192);
}

#[test]
fn infill_merges_small_gaps_and_drops_the_gap_bytes() {
    let l = layout(1, 64 << 20);
    let mut p = Directed::new(&cfg(16 << 20, Infill::Bytes(64 << 10)), l).unwrap();
    // Reads 32 KiB apart (24 KiB gaps), then one 10 MiB further.
    let mut ranges: Vec<ByteRange> = (0..8u64).map(|i| ByteRange::new(i * 32768, 8192)).collect();
    ranges.push(ByteRange::new(10 << 20, 8192));
    hint(&mut p, 0, 0, ranges.clone());
    let mut d = Driver::new();
    let outs = drain(&mut p);
    d.execute(outs);
    assert_eq!(d.fetched.len(), 2, "{:?}", d.fetched);
    assert_eq!(d.fetched[0].1, ByteRange::new(0, 7 * 32768 + 8192));
    while d.complete_one(&mut p) {}
    // The gap pages were released, the hinted ones kept.
    assert!(!d.cached.contains(&(0, 2)));
    assert!(d.cached.contains(&(0, 0)) && d.cached.contains(&(0, 8)));
    assert!(p.stats().infill_bytes >= 7 * 24576);
}

#[test]
fn a_read_of_pending_data_is_deferred_not_demand_read() {
    // Highest offsets first: the first read waits at the far end of the sweep.
    let mut ranges = reads_8k(65536);
    ranges.reverse();
    let (mut p, mut d) = hinted(&ranges);
    for r in &ranges {
        d.read(&mut p, 0, FileId(0), *r);
        let (held, limit) = p.window_bytes(StreamId(0)).unwrap();
        assert!(held <= limit.max(8 << 20) && held <= 8 << 20);
    }
    assert_eq!(d.demand_pages, 0);
    assert!(p.stats().deferred_reads > 0);
}

/// A policy with an 8 MiB window and no infill, told of `ranges` (in that order) of one file, and
/// a driver that has started the fetches it asked for.
fn hinted(ranges: &[ByteRange]) -> (Directed, Driver) {
    let mut p = Directed::new(&cfg(8 << 20, Infill::Bytes(0)), layout(1, 64 << 20)).unwrap();
    hint(&mut p, 0, 0, ranges.to_vec());
    let mut d = Driver::new();
    let outs = drain(&mut p);
    d.execute(outs);
    (p, d)
}

/// 1,024 reads of 8 KiB, `stride` bytes apart.
fn reads_8k(stride: u64) -> Vec<ByteRange> {
    (0..1024u64)
        .map(|i| ByteRange::new(i * stride, 8192))
        .collect()
}

#[test]
fn a_closed_stream_releases_its_pins_and_a_reused_id_starts_afresh() {
    let ranges = reads_8k(16384);
    let (mut p, mut d) = hinted(&ranges);
    // Some fetches arrive and the application uses a few reads; others are still in flight.
    for _ in 0..8 {
        assert!(d.complete_one(&mut p));
    }
    for r in &ranges[..4] {
        d.read(&mut p, 0, FileId(0), *r);
    }
    assert!(!d.queue.is_empty(), "fetches still in flight");
    p.handle(
        Instant::ZERO,
        Input::StreamClosed {
            stream: StreamId(0),
        },
    );
    let outs = drain(&mut p);
    assert!(
        outs.iter().all(|o| matches!(o, Output::Release { .. })),
        "{outs:?}"
    );
    d.execute(outs);
    assert_eq!(p.stream_count(), 0);
    assert!(p.pins.is_empty(), "every pin of the closed stream is gone");
    // What its fetches still under way bring is released as it arrives.
    while d.complete_one(&mut p) {}
    assert!(p.fetches.is_empty());
    assert!(d.cached.is_empty(), "{} pages kept", d.cached.len());
    // A new stream given the same id starts with an empty window of its own hints.
    let fresh: Vec<ByteRange> = (0..4u64)
        .map(|i| ByteRange::new((32 << 20) + i * 8192, 8192))
        .collect();
    hint(&mut p, 0, 0, fresh.clone());
    let outs = drain(&mut p);
    d.execute(outs);
    assert_eq!(p.window_bytes(StreamId(0)).unwrap().0, 4 * 8192);
    while d.complete_one(&mut p) {}
    let before = d.demand_pages;
    for r in &fresh {
        d.read(&mut p, 0, FileId(0), *r);
    }
    assert_eq!(d.demand_pages, before, "its hinted reads were prefetched");
}

#[test]
fn eviction_before_use_shrinks_the_window_and_pressure_caps_it() {
    let ranges = reads_8k(8192);
    let (mut p, mut d) = hinted(&ranges);
    while d.complete_one(&mut p) {}
    // Something evicted the first read before the application got to it.
    d.cached.remove(&(0, 0));
    d.read(&mut p, 0, FileId(0), ranges[0]);
    assert_eq!(p.stats().evictions_seen, 1);
    assert_eq!(p.window_bytes(StreamId(0)).unwrap().1, 4 << 20);
}

#[test]
fn pressure_caps_the_window_at_its_share_and_sheds_unfetched_reads_until_room_returns() {
    // Gaps between the reads, and no infill: every read is a run of its own, so the sweep has
    // sent only as many as fit in flight.
    let ranges = reads_8k(16384);
    let (mut p, mut d) = hinted(&ranges);
    assert_eq!(p.window_bytes(StreamId(0)).unwrap().0, 8 << 20);
    // Nothing has arrived: the stream holds only its fetches in flight (IN_FLIGHT_BYTES_MAX).
    // With 2 MiB free, its share is 4 + 2 MiB less room for one run in flight (4 MiB, but at
    // most half the pool): 3 MiB.
    p.handle(
        Instant::ZERO,
        Input::MemoryPressure {
            available: ByteLen(2 << 20),
        },
    );
    let (held, limit) = p.window_bytes(StreamId(0)).unwrap();
    assert_eq!(limit, 3 << 20);
    assert_eq!(
        held, IN_FLIGHT_BYTES_MAX,
        "reads in flight stay, the rest is shed"
    );
    // Every read still completes with the right data, shed ones included, and nothing is
    // fetched twice.
    while d.complete_one(&mut p) {}
    for r in &ranges {
        d.read(&mut p, 0, FileId(0), *r);
        while d.complete_one(&mut p) {}
    }
    let (held, _) = p.window_bytes(StreamId(0)).unwrap();
    assert!(held <= 8192, "window drained, {held} bytes still held");
    assert_eq!(d.device_reads.len(), 1024 * 2, "every page of every read");
    assert!(
        d.device_reads.values().all(|&n| n == 1),
        "a page read twice"
    );
}

/// A policy with an 8 MiB window over `files` files of 64 MiB, told stream `s`'s reads `hints[s]`
/// (of file `s`, each stream sending its first run; a stream given none is not told of, so it
/// does not exist yet), then that memory holds 8 MiB more than the streams hold: they take
/// turns, stream 0 first. The driver has completed every fetch.
fn taking_turns(files: usize, hints: &[&[ByteRange]]) -> (Directed, Driver) {
    let mut p = Directed::new(&cfg(8 << 20, Infill::Bytes(0)), layout(files, 64 << 20)).unwrap();
    let mut d = Driver::new();
    take_turns(&mut p, &mut d, hints, 8 << 20);
    (p, d)
}

/// Tells `p` stream `s`'s reads `hints[s]` (of file `s`; none for an empty list), then that
/// memory has `available_bytes` free beyond what the streams hold, and completes every fetch.
fn take_turns(p: &mut Directed, d: &mut Driver, hints: &[&[ByteRange]], available_bytes: u64) {
    for (s, ranges) in hints.iter().enumerate().filter(|(_, r)| !r.is_empty()) {
        hint(p, s as u32, s as u32, ranges.to_vec());
        let outs = drain(p);
        d.execute(outs);
    }
    p.handle(
        Instant::ZERO,
        Input::MemoryPressure {
            available: ByteLen(available_bytes),
        },
    );
    let outs = drain(p);
    d.execute(outs);
    while d.complete_one(p) {}
}

#[test]
fn under_pressure_one_stream_leads_and_the_other_waits_for_its_turn() {
    let ranges = reads_8k(16384);
    // Both sent a run; memory then turns out to hold 16 MiB in all.
    let (mut p, mut d) = taking_turns(2, &[&ranges, &ranges]);
    let before = d.fetched.len();
    let (last, head) = ranges.split_last().unwrap();
    for r in head {
        d.read(&mut p, 0, FileId(0), *r);
    }
    assert!(
        d.fetched[before..].iter().all(|(f, _)| *f == FileId(0)),
        "the waiting stream fetched while the leader swept"
    );
    // The leader's last read hands the lead over.
    d.read(&mut p, 0, FileId(0), *last);
    for r in &ranges {
        d.read(&mut p, 1, FileId(1), *r);
    }
    assert_eq!(d.demand_pages, 0, "every hinted page came from a sweep");
    assert!(p.stats().lead_changes >= 1);
}

#[test]
fn bad_memory_names_its_key() {
    let e = Directed::new(&cfg(4096, Infill::Auto), layout(1, 1 << 20)).unwrap_err();
    assert!(matches!(
        e,
        PolicyError::BadSetting {
            key: "directed_memory",
            ..
        }
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// The window never holds more than the memory it may use; every hinted page is read from the
    /// device, never on demand (the driver here never evicts); without infill each hinted page is
    /// read exactly once.
    #[test]
    fn window_fits_and_every_hinted_page_is_prefetched(
        seed in 0u64..1_000_000,
        slots in 8u64..400,
        memory_kib in 256u64..4096,
        infill_kib in prop_oneof![Just(0u64), 0u64..256],
        streams in 1u32..3,
    ) {
        let file_bytes = 8 << 20;
        let l = layout(2, file_bytes);
        let memory = memory_kib << 10;
        let mut p = Directed::new(&cfg(memory, Infill::Bytes(infill_kib << 10)), l).unwrap();
        let mut rng = Rng::new(seed);
        let mut d = Driver::new();
        let mut lists = vec![];
        for s in 0..streams {
            // Non-overlapping page-aligned reads of 1-40 pages at shuffled slots of 64 pages.
            let mut idx: Vec<u64> = (0..slots.min(file_bytes / (256 << 10))).collect();
            rng.shuffle(&mut idx);
            let ranges: Vec<ByteRange> = idx
                .iter()
                .map(|&i| ByteRange::new(i * (256 << 10), (1 + rng.below(40)) * PAGE_BYTES))
                .collect();
            hint(&mut p, s, s, ranges.clone());
            let outs = drain(&mut p);
            d.execute(outs);
            lists.push(ranges);
        }
        let longest = lists.iter().map(Vec::len).max().unwrap_or(0);
        for i in 0..longest {
            for (s, list) in lists.iter().enumerate() {
                if let Some(&r) = list.get(i) {
                    d.read(&mut p, s as u32, FileId(s as u32), r);
                    let (held, _) = p.window_bytes(StreamId(s as u32)).unwrap();
                    prop_assert!(held <= memory, "window {held} over {memory}");
                }
                if rng.below(2) == 0 {
                    d.complete_one(&mut p);
                }
            }
        }
        prop_assert_eq!(d.demand_pages, 0);
        for (s, list) in lists.iter().enumerate() {
            for r in list {
                for pg in Driver::pages(*r) {
                    let n = d.device_reads.get(&(s as u32, pg)).copied().unwrap_or(0);
                    prop_assert!(n >= 1);
                    if infill_kib == 0 {
                        prop_assert_eq!(n, 1, "page {} of file {} read {} times", pg, s, n);
                    }
                }
            }
        }
    }
}

/// A deferred read that runs past the end of its file (a driver need not clip the application's
/// reads) is served by a fetch clipped to the file, as every `Output::Fetch` must be.
#[test]
fn the_fetch_for_a_deferred_read_past_the_end_of_the_file_is_clipped_to_the_file() {
    let size = (1 << 20) + 100;
    let mut p = Directed::new(&cfg(8 << 20, Infill::Bytes(0)), layout(1, size)).unwrap();
    let tail = ByteRange::new(size - 100, 100);
    hint(&mut p, 0, 0, vec![tail]);
    let Some(Output::Fetch { id, .. }) = drain(&mut p).into_iter().next() else {
        panic!("the hinted tail is fetched at once");
    };
    // Memory refuses it: the read goes back to the sweep, to be fetched again.
    p.handle(Instant::ZERO, Input::Fetched { id, ok: false });
    let _ = drain(&mut p);
    // The application reads 8 KiB from the tail, past the end of the file; its bytes are missing.
    let read = ByteRange::new(tail.start.0, 8192);
    p.handle(
        Instant::ZERO,
        Input::Read {
            stream: StreamId(0),
            file: FileId(0),
            range: read,
            miss: Some(read.start),
        },
    );
    let outs = drain(&mut p);
    assert!(outs.contains(&Output::Defer {
        file: FileId(0),
        range: read
    }));
    let mut fetches: Vec<(FetchId, ByteRange)> = outs
        .iter()
        .filter_map(|o| match o {
            Output::Fetch { id, range, .. } => Some((*id, *range)),
            _ => None,
        })
        .collect();
    // The sweep's fetch arrives; the deferred read's bytes are then fetched once more.
    while let Some((id, _)) = fetches.pop() {
        p.handle(Instant::ZERO, Input::Fetched { id, ok: true });
        for o in drain(&mut p) {
            if let Output::Fetch { id, range, .. } = o {
                assert!(
                    range.end().0 <= size,
                    "fetch {range:?} runs past the end of the file at {size}"
                );
                fetches.push((id, range));
            }
        }
    }
    assert_eq!(p.stats().pokes, 1, "the deferred read was fetched again");
}

#[test]
fn a_stream_has_less_than_its_in_flight_bound_plus_one_piece_out() {
    // A 1.5 MiB run (a whole piece and a half piece), then a 6 MiB one past a gap no infill
    // crosses: the second run's pieces go out while the stream is under the bound, so the last
    // one passes it by up to a piece (4.5 MiB here), never by more.
    let l = layout(1, 64 << 20);
    let mut p = Directed::new(&cfg(64 << 20, Infill::Bytes(0)), l).unwrap();
    hint(
        &mut p,
        0,
        0,
        vec![ByteRange::new(0, 3 << 19), ByteRange::new(2 << 20, 6 << 20)],
    );
    let mut d = Driver::new();
    let outs = drain(&mut p);
    d.execute(outs);
    let bound = IN_FLIGHT_BYTES_MAX + PIECE_BYTES;
    let out: u64 = d.fetched.iter().map(|(_, r)| r.len.0).sum();
    assert_eq!(out, 9 << 19, "{:?}", d.fetched);
    // Completions let the rest go out, under the bound at every step, and everything arrives.
    let mut in_flight = out;
    let mut seen = d.fetched.len();
    while !d.queue.is_empty() {
        let done = d.fetched[seen - d.queue.len()].1.len.0;
        assert!(d.complete_one(&mut p));
        in_flight -= done;
        in_flight += d.fetched[seen..].iter().map(|(_, r)| r.len.0).sum::<u64>();
        seen = d.fetched.len();
        assert!(in_flight < bound, "{in_flight} bytes in flight");
    }
    let total: u64 = d.fetched.iter().map(|(_, r)| r.len.0).sum();
    assert_eq!(total, (3 << 19) + (6 << 20));
}

#[test]
fn a_run_on_a_striped_volume_takes_the_reads_its_gaps_hold_on_other_disks() {
    // A hinted 4 MiB scan of 8 KiB reads on a RAID-0 of four disks with 64 KiB strips, infill up
    // to 1 MiB. Sorted by member disk, disk 0's run reads through disks 1 to 3's strips; the
    // reads there must go with it, not wait for their own disk's run and be fetched again.
    let striping = crate::layout::Striping {
        disks: 4,
        strip_bytes: 64 << 10,
    };
    let l = Layout::contiguous(
        ByteLen(64 << 20),
        Some(striping),
        1,
        ByteLen(4 << 20),
        1 << 20,
    );
    let mut p =
        Directed::new(&cfg(64 << 20, Infill::Bytes(1 << 20)), Arc::new(l.unwrap())).unwrap();
    let reads: Vec<ByteRange> = (0..512u64)
        .map(|i| ByteRange::new(i * 8192, 8192))
        .collect();
    hint(&mut p, 0, 0, reads.clone());
    let mut d = Driver::new();
    let outs = drain(&mut p);
    d.execute(outs);
    while d.complete_one(&mut p) {}
    let mut asked = BTreeSet::new();
    for (_, r) in &d.fetched {
        for pg in Driver::pages(*r) {
            assert!(asked.insert(pg), "page {pg} fetched twice: {:?}", d.fetched);
        }
    }
    assert_eq!(asked.len() as u64, (4 << 20) / PAGE_BYTES);
    assert_eq!(p.stats().infill_bytes, 0, "every byte read was hinted");
    for r in &reads {
        d.read(&mut p, 0, FileId(0), *r);
    }
    assert_eq!(d.demand_pages, 0);
}

/// A hint of a whole file is one queued range however large the file: its pieces are cut as the
/// window admits them. It used to be cut into 128 KiB pieces at once, 8 Mi entries (192 MiB) for
/// this 1 TiB file.
#[test]
fn a_hint_of_a_whole_huge_file_costs_one_queued_range() {
    let mut p = Directed::new(&cfg(8 << 20, Infill::Bytes(0)), layout(1, 1 << 40)).unwrap();
    hint(&mut p, 0, 0, vec![ByteRange::new(0, u64::MAX)]);
    assert_eq!(p.queued_ranges(StreamId(0)), Some(1));
    let mut d = Driver::new();
    let outs = drain(&mut p);
    d.execute(outs);
    // The window slides along the file as ever: every read finds its data prefetched.
    for i in 0..256u64 {
        d.read(&mut p, 0, FileId(0), ByteRange::new(i * 65536, 65536));
    }
    assert_eq!(d.demand_pages, 0);
    assert_eq!(p.queued_ranges(StreamId(0)), Some(1));
    assert_eq!(p.stats().hinted_ranges_dropped, 0);
}

/// A stream's hinted list holds `window::QUEUED_RANGES_MAX` ranges; further hints are dropped,
/// their reads are served on demand, and the hinted reads after them are still prefetched.
#[test]
fn hints_past_the_queued_bound_are_dropped_and_their_reads_served_on_demand() {
    let max = window::QUEUED_RANGES_MAX as u64;
    // One-page reads 8 KiB apart; the dropped ones lie past the hinted ones.
    let page = |i: u64| ByteRange::new(i * 8192, PAGE_BYTES);
    let mut p = Directed::new(&cfg(8 << 20, Infill::Bytes(0)), layout(1, 2 * max * 8192)).unwrap();
    hint(&mut p, 0, 0, (0..max + 3).map(page).collect());
    assert_eq!(p.stats().hinted_ranges_dropped, 3);
    // The window took some off the front; a second hint fills the list and loses the rest.
    let queued = p.queued_ranges(StreamId(0)).unwrap() as u64;
    assert!(queued < max);
    let room = max - queued;
    hint(
        &mut p,
        0,
        0,
        (max + 3..max + 3 + room + 2).map(page).collect(),
    );
    assert_eq!(p.stats().hinted_ranges_dropped, 5);
    assert_eq!(
        p.queued_ranges(StreamId(0)),
        Some(window::QUEUED_RANGES_MAX)
    );
    let mut d = Driver::new();
    let outs = drain(&mut p);
    d.execute(outs);
    for i in 0..4 {
        d.read(&mut p, 0, FileId(0), page(i));
    }
    assert_eq!(d.demand_pages, 0, "hinted reads are prefetched");
    // A read whose hint was dropped (the application reads out of its hinted order here) is
    // neither deferred nor waited for: it is read on demand.
    d.read(&mut p, 0, FileId(0), page(max + 1));
    assert_eq!(d.demand_pages, 1);
    for i in 4..8 {
        d.read(&mut p, 0, FileId(0), page(i));
    }
    assert_eq!(
        d.demand_pages, 1,
        "the hinted reads after it are still prefetched"
    );
}

/// Splitting memory among the streams costs a bounded number of stream-state visits per event,
/// however many streams there are: it visits the leader and the streams that changed, not every
/// stream, on each of the leader's events. Visiting every stream made a run quadratic in the
/// streams (16,000 scanning streams took 50 s of host time for 1 s simulated). Counted, not
/// timed: a split that walks every stream again fails here at once.
#[test]
fn a_split_of_memory_visits_a_bounded_number_of_streams_per_event() {
    let visits_per_event = |streams: u32| {
        let file_bytes = 1 << 20;
        let l = layout(streams as usize, file_bytes);
        let mut p = Directed::new(&cfg(256 << 10, Infill::Bytes(0)), l).unwrap();
        let mut d = Driver::new();
        let reads: Vec<ByteRange> = (0..file_bytes / 8192)
            .map(|i| ByteRange::new(i * 8192, 8192))
            .collect();
        // Memory turns out to be over-committed: the streams take turns.
        let hints = vec![&reads[..]; streams as usize];
        take_turns(&mut p, &mut d, &hints, 1 << 20);
        // Four turns of the lead, each a whole file read by its leader.
        let first = p.leader.expect("memory is shared");
        for turn in 0..4 {
            let leader = p.leader.expect("memory is shared");
            assert_eq!(
                leader,
                StreamId(first.0 + turn),
                "the lead passes in id order"
            );
            for r in &reads {
                d.read(&mut p, leader.0, FileId(leader.0), *r);
            }
            while d.complete_one(&mut p) {}
        }
        assert_eq!(d.demand_pages, 0, "every read was prefetched");
        assert_eq!(p.stats().lead_changes, 5, "the first lead, and four passes");
        // Hints, the pressure report, reads and completions.
        let events = streams as u64 + 1 + 4 * reads.len() as u64 + d.completions;
        p.stats().stream_states_visited as f64 / events as f64
    };
    let few = visits_per_event(100);
    let many = visits_per_event(10_000);
    assert!(
        few <= 3.0,
        "{few} stream states visited per event among 100 streams"
    );
    assert!(
        many <= 3.0,
        "{many} stream states visited per event among 10,000 streams"
    );
}

/// The splits of memory change a stream they leave alone only lazily, when it is next looked at:
/// the policy answers every input exactly as it does when each split visits every stream.
/// Streams hint, read (out of turn too), see fetches refused, have data evicted, finish and hint
/// again, and close, under changing memory pressure.
#[test]
fn splits_that_leave_streams_alone_answer_as_visiting_every_stream_does() {
    for seed in 0..48u64 {
        let mut rng = Rng::new(seed);
        let streams = 2 + rng.below(5) as u32;
        let file_bytes = 1 << 20;
        let l = layout(streams as usize, file_bytes);
        let memory = (256 + rng.below(2048)) << 10;
        let infill = [0, 16 << 10, 64 << 10][rng.below(3) as usize];
        let mut lazy = Directed::new(&cfg(memory, Infill::Bytes(infill)), l).unwrap();
        let mut eager =
            Directed::new(&cfg(memory, Infill::Bytes(infill)), lazy.layout.clone()).unwrap();
        eager.visit_all = true;
        let mut d = Driver::new();
        // Each stream's reads still to come, in its hinted order.
        let mut todo: Vec<VecDeque<ByteRange>> = vec![VecDeque::new(); streams as usize];
        let step = |lazy: &mut Directed, eager: &mut Directed, d: &mut Driver, input: Input| {
            lazy.handle(Instant::ZERO, input.clone());
            eager.handle(Instant::ZERO, input.clone());
            let outs = drain(lazy);
            assert_eq!(
                outs,
                drain(eager),
                "seed {seed}: the answers to {input:?} differ"
            );
            d.execute(outs);
            let mut a = lazy.stats();
            a.stream_states_visited = eager.stats().stream_states_visited;
            assert_eq!(a, eager.stats(), "seed {seed}: stats after {input:?}");
            for s in 0..streams {
                assert_eq!(
                    lazy.window_bytes(StreamId(s)),
                    eager.window_bytes(StreamId(s)),
                    "seed {seed}: stream {s}'s window after {input:?}"
                );
                // What the splits left alone, once caught up, is what visiting it gave.
                let caught_up = |p: &Directed| {
                    p.streams.get(&StreamId(s)).map(|st| {
                        let mut st = st.clone();
                        st.catch_up(&p.split);
                        (st.contention, st.paused, st.lead_pass, st.pass_done)
                    })
                };
                assert_eq!(
                    caught_up(lazy),
                    caught_up(eager),
                    "seed {seed}: stream {s}'s controller and turn after {input:?}"
                );
            }
        };
        for _ in 0..600 {
            let s = rng.below(streams as u64) as u32;
            let file = FileId(s);
            match rng.below(16) {
                0 => {
                    // A hint of a stretch of the file, in order or shuffled.
                    let start = rng.below(96) * 8192;
                    let mut ranges: Vec<ByteRange> = (0..1 + rng.below(32))
                        .map(|i| ByteRange::new(start + i * 8192, 8192))
                        .collect();
                    if rng.below(2) == 0 {
                        rng.shuffle(&mut ranges);
                    }
                    todo[s as usize].extend(ranges.iter().copied());
                    let input = Input::Hint {
                        stream: StreamId(s),
                        file,
                        ranges,
                    };
                    step(&mut lazy, &mut eager, &mut d, input);
                }
                1..=6 => {
                    // The stream's next read (or, now and then, one out of its order); its
                    // pages are there after it, as on demand.
                    let range = if rng.below(8) == 0 {
                        ByteRange::new(rng.below(128) * 8192, 8192)
                    } else if let Some(r) = todo[s as usize].pop_front() {
                        r
                    } else {
                        continue;
                    };
                    let input = Input::Read {
                        stream: StreamId(s),
                        file,
                        range,
                        miss: d.missing(file, range).map(ByteOffset),
                    };
                    step(&mut lazy, &mut eager, &mut d, input);
                    for pg in Driver::pages(range) {
                        d.cached.insert((file.0, pg));
                    }
                }
                7..=11 => {
                    // A fetch completes, or memory refuses it.
                    if d.queue.is_empty() {
                        continue;
                    }
                    let i = rng.below(d.queue.len() as u64) as usize;
                    let (id, f, mine) = d.queue.remove(i).expect("queued fetch");
                    let ok = rng.below(6) != 0;
                    for pg in mine {
                        d.in_flight.remove(&(f.0, pg));
                        if ok {
                            d.cached.insert((f.0, pg));
                        }
                    }
                    step(&mut lazy, &mut eager, &mut d, Input::Fetched { id, ok });
                }
                12 => {
                    // Something evicts a stretch of the file's pages.
                    let first = rng.below(256);
                    for pg in first..first + 1 + rng.below(16) {
                        d.cached.remove(&(file.0, pg));
                    }
                }
                13 | 14 => {
                    let available = ByteLen(rng.below(4 << 20));
                    step(
                        &mut lazy,
                        &mut eager,
                        &mut d,
                        Input::MemoryPressure { available },
                    );
                }
                _ => {
                    if rng.below(4) == 0 {
                        todo[s as usize].clear();
                        let input = Input::StreamClosed {
                            stream: StreamId(s),
                        };
                        step(&mut lazy, &mut eager, &mut d, input);
                    }
                }
            }
        }
        assert!(
            lazy.stats().stream_states_visited <= eager.stats().stream_states_visited,
            "seed {seed}"
        );
    }
}

/// A stream that waits for its turn and whose application reads the last read it has admitted
/// before that read is fetched: the read is deferred, and it leaves the stream nothing unused. It
/// was then no longer among the streams the lead passes to, so its read waited until all the
/// others but one had finished (or, in the simulator, until nothing at all was in flight and the
/// read went to the disk on demand). Its deferred read now keeps it in the rotation.
#[test]
fn a_waiting_stream_whose_last_read_is_deferred_still_gets_the_lead() {
    let ranges = reads_8k(16384);
    // Stream 1 has one read more than it sends at once (its in-flight bound holds 512).
    let short = &ranges[..513];
    // Memory turns out short: the streams take turns, 0 first.
    let (mut p, mut d) = taking_turns(4, &[&ranges, short, &ranges, &ranges]);
    let sent = |d: &Driver, r: ByteRange| {
        d.fetched
            .iter()
            .any(|(f, g)| *f == FileId(1) && g.start <= r.start && r.end() <= g.end())
    };
    let (last, head) = short.split_last().unwrap();
    assert!(
        !sent(&d, *last),
        "stream 1 sent its last read before its turn"
    );
    // Stream 1's application reads what arrived, then its last read, which is deferred: it
    // waits for the stream's turn.
    for r in head {
        d.read(&mut p, 1, FileId(1), *r);
    }
    let deferred_before = p.stats().deferred_reads;
    p.handle(
        Instant::ZERO,
        Input::Read {
            stream: StreamId(1),
            file: FileId(1),
            range: *last,
            miss: d.missing(FileId(1), *last).map(ByteOffset),
        },
    );
    let outs = drain(&mut p);
    d.execute(outs);
    assert_eq!(p.stats().deferred_reads, deferred_before + 1);
    // Stream 0 reads all it has and hands the lead on: to stream 1, next in turn, which sends
    // its read. It used to pass to stream 2, and stream 1's read to wait for 2 to finish too.
    for r in &ranges {
        d.read(&mut p, 0, FileId(0), *r);
    }
    assert!(
        sent(&d, *last),
        "stream 1's deferred read did not go out when the lead passed"
    );
    while d.complete_one(&mut p) {}
    for s in 2..4u32 {
        for r in &ranges {
            d.read(&mut p, s, FileId(s), *r);
        }
    }
    assert_eq!(
        d.demand_pages, 0,
        "every read was served by the policy's fetches"
    );
}

/// A stream that comes while the streams take turns waits for its own, as the others do. It
/// used to send its first run at once, with the whole window, past the leader's turn.
#[test]
fn a_stream_that_comes_while_memory_is_shared_waits_for_its_turn() {
    let ranges = reads_8k(16384);
    // Streams 0 and 2 take turns (stream 1 discloses nothing yet).
    let (mut p, mut d) = taking_turns(3, &[&ranges, &[], &ranges]);
    let late: Vec<ByteRange> = ranges[..64].to_vec();
    hint(&mut p, 1, 1, late.clone());
    let outs = drain(&mut p);
    d.execute(outs);
    assert!(
        d.fetched.iter().all(|(f, _)| *f != FileId(1)),
        "the stream that came late sent before its turn"
    );
    let (_, limit) = p.window_bytes(StreamId(1)).unwrap();
    assert_eq!(limit, FOLLOWER_WINDOW_BYTES);
    // Its turn comes when the leader's pass ends, and every read is served by a sweep.
    for r in &ranges {
        d.read(&mut p, 0, FileId(0), *r);
    }
    assert!(d.fetched.iter().any(|(f, _)| *f == FileId(1)));
    for r in &late {
        d.read(&mut p, 1, FileId(1), *r);
    }
    for r in &ranges {
        d.read(&mut p, 2, FileId(2), *r);
    }
    assert_eq!(d.demand_pages, 0, "every hinted page came from a sweep");
}

/// The queue of streams memory refused keeps the order of a queue walked for duplicates, as it
/// was: each stream listed once, oldest first, one taken off (a closed stream) leaving no trace,
/// and the places left behind dropped without changing the order of the rest.
#[test]
fn the_starved_queue_keeps_arrival_order_with_each_stream_once() {
    let mut q = StarvedQueue::default();
    let mut model: VecDeque<StreamId> = VecDeque::new();
    let mut rng = Rng::new(0x5746);
    println!("seed 0x5746");
    for step in 0..20_000 {
        let id = StreamId(rng.below(50) as u32);
        match rng.below(3) {
            0 => {
                q.push_back(id);
                if !model.contains(&id) {
                    model.push_back(id);
                }
            }
            1 => {
                q.remove(id);
                model.retain(|&s| s != id);
            }
            _ => assert_eq!(q.pop_front(), model.pop_front(), "step {step}"),
        }
        assert_eq!(q.len(), model.len(), "step {step}");
        assert!(q.order.len() <= 2 * q.len() + 64, "step {step}");
    }
}
