use super::*;
use crate::backend::{BackendKind, IoCompletion};
use crate::pool::Purpose;
use foresight_core::ByteRange;
use foresight_policy::{Input, Output, PolicyConfig};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Holds what it is given and records each `submit` call's batch size; completes nothing by
/// itself, so a test decides when and how completions arrive.
#[derive(Default)]
struct Holding {
    held: Mutex<Vec<IoRequest>>,
    batches: Mutex<Vec<usize>>,
    /// Readers the core said had closed, in order.
    closed: Mutex<Vec<StreamId>>,
}

impl IoBackend for Holding {
    fn kind(&self) -> BackendKind {
        BackendKind::Noop
    }
    fn open(&self, _: &Path, _: FileId, _: bool) -> io::Result<FileHandle> {
        unreachable!("the test registers its handle directly")
    }
    fn capacity(&self) -> usize {
        2
    }
    fn submit(&self, batch: &mut Vec<IoRequest>) {
        self.batches.lock().unwrap().push(batch.len());
        self.held.lock().unwrap().append(batch);
    }
    fn reader_closed(&self, reader: StreamId) {
        self.closed.lock().unwrap().push(reader);
    }
    fn shutdown(&self) {}
}

/// A reader's close reaches the backend before its id can go to another reader, so that a
/// backend keeping figures per reader (the emulated anticipatory scheduler) starts the next
/// one afresh; the reader's reads already submitted keep its id.
#[test]
fn a_closed_reader_is_told_to_the_backend_before_its_id_is_reused() {
    let (mut core, backend, _, s) = core_over_holding(4 << 20, 64 << 10);
    core.begin_read(Instant(0), s, FileId(0), 0, 64 << 10);
    assert_eq!(backend.held.lock().unwrap()[0].reader, Some(s));
    core.close(Instant(1), s);
    assert_eq!(*backend.closed.lock().unwrap(), vec![s]);
    let handle = other_file(&mut core);
    let (_, again, _, _) = core.open(handle);
    assert_eq!(again, s, "the id goes to the next reader");
    assert_eq!(backend.held.lock().unwrap()[0].reader, Some(s));
    core.complete_all(Instant(2), &mut completions(&backend));
    core.check();
}

/// A core over `Holding` with queue depth 2 and no readahead, with one 1 MiB file open and a
/// demand read of its first 256 KiB: four 64 KiB reads, two in flight and two queued.
/// A core over `Holding` with queue depth 2, no readahead, `memory_bytes` of budget and
/// requests of at most `max_io_bytes`, and one 1 MiB file open.
fn core_over_holding(
    memory_bytes: u64,
    max_io_bytes: u64,
) -> (Core, Arc<Holding>, FileId, StreamId) {
    let cfg = PolicyConfig {
        name: "none".into(),
        ..PolicyConfig::default()
    };
    let policy =
        foresight_policy::build(&cfg, Arc::new(foresight_policy::Layout::unplaced(&[]))).unwrap();
    core_over_holding_with(policy, memory_bytes, max_io_bytes, false)
}

/// A 1 MiB file with no descriptor (the test backends read nothing): `mem`, identity (1, 1),
/// is the file every test core opens first (opening it again gives a second reader of that
/// file), and [`other_file`] a second file.
fn mem_file(core: &mut Core, path: &str, identity: (u64, u64)) -> FileHandle {
    FileHandle {
        id: core.next_file_id(),
        path: PathBuf::from(path),
        file: None,
        direct: false,
        size_bytes: 1 << 20,
        identity,
        modified: None,
        volume_offset_bytes: None,
    }
}

/// A second 1 MiB file, for tests where another stream reads beside the first.
fn other_file(core: &mut Core) -> FileHandle {
    mem_file(core, "other", (1, 2))
}

/// A core whose policy defers every read of its first file (`FileId(0)`, 4 MiB of memory,
/// 64 KiB reads), with a reader of that file and one of [`other_file`], whose reads go on
/// demand: the setting of the deferral tests.
fn two_streams_deferring_the_first() -> (Core, Arc<Holding>, (FileId, StreamId), (FileId, StreamId))
{
    let policy = Box::new(DeferAll {
        file: Some(FileId(0)),
        out: VecDeque::new(),
    });
    let (mut core, backend, a, sa) = core_over_holding_with(policy, 4 << 20, 64 << 10, false);
    assert_eq!(a, FileId(0), "the deferred file is the first");
    let handle = other_file(&mut core);
    let (b, sb, _, _) = core.open(handle);
    (core, backend, (a, sa), (b, sb))
}

/// [`core_over_holding`] under `policy`, its pool prefaulted if `prefault` (every buffer is
/// then a piece of one mapping, whatever the kernel's huge-page setting).
fn core_over_holding_with(
    policy: Box<dyn Policy>,
    memory_bytes: u64,
    max_io_bytes: u64,
    prefault: bool,
) -> (Core, Arc<Holding>, FileId, StreamId) {
    let backend = Arc::new(Holding::default());
    let mut core = Core::new(
        policy,
        backend.clone(),
        CoreConfig {
            memory_bytes,
            queue_depth: 2,
            max_io_bytes,
            prefault,
        },
        Arc::new(Condvar::new()),
    );
    let handle = mem_file(&mut core, "mem", (1, 1));
    let (file, stream, _, _) = core.open(handle);
    (core, backend, file, stream)
}

fn core_with_four_reads() -> (Core, Arc<Holding>) {
    let (mut core, backend, file, stream) = core_over_holding(1 << 20, 64 << 10);
    core.begin_read(Instant(0), stream, file, 0, 256 << 10);
    assert!(core.demand(stream, file, 0, 256 << 10));
    assert_eq!(core.in_flight, 2);
    assert_eq!(
        core.urgent.len() + core.ahead.len(),
        2,
        "two reads wait for a slot"
    );
    (core, backend)
}

/// Sends the core's queued reads, fills each buffer with the pattern `i % 251` (`i` the byte's
/// place in its read) and completes them at instant 1.
fn fill_and_complete(core: &mut Core, backend: &Holding) {
    core.dispatch();
    let mut done = completions(backend);
    for c in &mut done {
        for (i, b) in c.buf.as_mut_slice().iter_mut().enumerate() {
            *b = (i % 251) as u8;
        }
    }
    core.complete_all(Instant(1), &mut done);
}

fn completions(backend: &Holding) -> Vec<IoCompletion> {
    backend
        .held
        .lock()
        .unwrap()
        .drain(..)
        .map(|r| IoCompletion {
            token: r.token,
            buf: r.buf,
            result: Ok(r.len_bytes),
        })
        .collect()
}

#[test]
fn a_burst_of_completions_refills_the_queue_in_one_submission() {
    let (mut core, backend) = core_with_four_reads();
    backend.batches.lock().unwrap().clear();
    let mut burst = completions(&backend);
    assert_eq!(burst.len(), 2);
    core.complete_all(Instant(1), &mut burst);
    assert!(burst.is_empty());
    assert_eq!(
        *backend.batches.lock().unwrap(),
        vec![2],
        "one batch of both waiting reads"
    );
    assert_eq!(core.in_flight, 2);
    assert_eq!(core.stats().device_reads, 2);
    core.check();
}

#[test]
fn completions_one_at_a_time_refill_one_read_each() {
    let (mut core, backend) = core_with_four_reads();
    backend.batches.lock().unwrap().clear();
    for c in completions(&backend) {
        core.complete(Instant(1), c);
    }
    assert_eq!(*backend.batches.lock().unwrap(), vec![1, 1]);
    assert_eq!(core.in_flight, 2);
    core.check();
}

/// A release that covers part of a filled chunk frees the released pages and keeps the rest,
/// byte for byte: the pages then read as missing (a later fetch reads them again, as the
/// simulator's page cache does), and the memory they held is free. Before, only chunks wholly
/// inside the range were freed, so a fetch through gaps kept the gaps for as long as the
/// chunk lived.
#[test]
fn a_release_inside_a_chunk_frees_those_pages_and_keeps_the_rest() {
    let (mut core, _backend, file, _) = one_prefetched_chunk(4 << 20, 1 << 20);
    let chunk_bytes = 256u64 << 10;
    let lent_before = core.pool.lent_bytes();
    // Release [64 KiB, 128 KiB) and an unaligned range that covers page 50 whole.
    core.release(file, ByteRange::new(64 << 10, 64 << 10));
    core.release(file, ByteRange::new(50 * PAGE_BYTES - 1, PAGE_BYTES + 2));
    assert!(matches!(core.find(file, 64 << 10), Found::Missing));
    assert!(matches!(core.find(file, (128 << 10) - 1), Found::Missing));
    assert!(matches!(core.find(file, 50 * PAGE_BYTES), Found::Missing));
    for (pos, kept_end) in [
        (0, 64 << 10),
        (128 << 10, 49 * PAGE_BYTES),
        (49 * PAGE_BYTES, 50 * PAGE_BYTES),
        (51 * PAGE_BYTES, chunk_bytes),
        (chunk_bytes - 1, chunk_bytes),
    ] {
        let Found::Ready {
            chunk,
            chunk_start,
            valid_end,
        } = core.find(file, pos)
        else {
            panic!("byte {pos} was not kept")
        };
        assert!(
            valid_end >= kept_end && valid_end <= chunk_bytes,
            "byte {pos}"
        );
        let buf = core.pin(chunk);
        let at = (pos - chunk_start) as usize;
        assert_eq!(buf.as_slice()[at], (pos % 251) as u8, "byte {pos}");
        drop(buf);
        core.chunk_mut(chunk).pins -= 1;
    }
    let freed = (64 << 10) + PAGE_BYTES;
    assert!(
        core.pool.lent_bytes() <= lent_before - freed,
        "lent {} of {lent_before}",
        core.pool.lent_bytes()
    );
    core.check();
}

/// The application copies file bytes `[from, to)` out of the chunk that holds `from`.
fn read_through(core: &mut Core, file: FileId, stream: StreamId, from: u64, to: u64) {
    let Found::Ready { chunk, .. } = core.find(file, from) else {
        panic!("byte {from} is in")
    };
    drop(core.pin(chunk));
    core.unpin(stream, chunk, from, to);
}

/// A core over `memory_bytes` (chunks of at most `max_io_bytes`) whose first 256 KiB of the
/// file are prefetched, in one filled chunk nobody has read.
fn one_prefetched_chunk(
    memory_bytes: u64,
    max_io_bytes: u64,
) -> (Core, Arc<Holding>, FileId, StreamId) {
    let (mut core, backend, file, stream) = core_over_holding(memory_bytes, max_io_bytes);
    assert_eq!(
        core.fetch(FetchId(0), file, ByteRange::new(0, 256 << 10), None, None),
        (1, false)
    );
    fill_and_complete(&mut core, &backend);
    (core, backend, file, stream)
}

/// With one 256 KiB chunk prefetched at the file's start (of the 768 KiB prefetches may use
/// under `core_over_holding(1 MiB, 256 KiB)`), two more prefetches fill the rest; returns
/// what a third, which needs room the first chunk holds, is granted.
fn third_prefetch(core: &mut Core, backend: &Holding, file: FileId) -> (u32, bool) {
    let chunk_bytes = 256u64 << 10;
    assert_eq!(
        core.fetch(
            FetchId(1),
            file,
            ByteRange::new(chunk_bytes, 2 * chunk_bytes),
            None,
            None
        ),
        (2, false)
    );
    fill_and_complete(core, backend);
    core.fetch(
        FetchId(2),
        file,
        ByteRange::new(3 * chunk_bytes, chunk_bytes),
        None,
        None,
    )
}

/// A prefetched chunk the application has read a little of still holds read-ahead it has
/// not read, and a prefetch must not take that, as it may not take a prefetched chunk nobody
/// has read: the prefetch is refused, the chunk stays whole, and a demand read may still take
/// it. Before, one read moved the whole chunk among the used data a prefetch may take: with
/// five `directed` clients thinking 2 ms in 3 MiB, the sweeps of the others took the 1 MiB
/// the second client's hint had fetched, 8 KiB read at a time, and that client then read on
/// demand what the policy still held for it (28 or 29 reads in the probe's last second,
/// against the simulator's 7, whose page cache never lets a prefetch take an unread page).
#[test]
fn a_prefetch_does_not_take_a_prefetched_chunk_read_only_in_part() {
    // 1 MiB of budget, 256 KiB of it kept for demand reads: 768 KiB for prefetches.
    let (mut core, backend, file, stream) = one_prefetched_chunk(1 << 20, 256 << 10);
    let chunk_bytes = 256u64 << 10;
    // The application reads 8 KiB from the middle of it, as `directed`'s scattered reads do.
    read_through(&mut core, file, stream, 64 << 10, 72 << 10);
    // Two more prefetches fill what prefetches may use; a third finds nothing it may take.
    assert_eq!(
        third_prefetch(&mut core, &backend, file),
        (0, true),
        "a prefetch took read-ahead nobody has read"
    );
    for pos in [0, 72 << 10, chunk_bytes - 1] {
        assert!(
            matches!(core.find(file, pos), Found::Ready { .. }),
            "byte {pos} of the read-ahead was dropped"
        );
    }
    // A demand read, which must make progress, may take it.
    assert!(core.evict_one(Purpose::Demand, Some(stream)));
    assert!(matches!(core.find(file, 0), Found::Missing));
    core.check();
}

/// A prefetched chunk whose every page the application has read, back half first, is not
/// freed (it was not read front to end) but holds no read-ahead left to keep: a prefetch may
/// take it, as it may take any data the application has used. Before, any prefetched chunk
/// not read to its end stayed among the unread read-ahead a prefetch may not take, so memory
/// full of data read out of order refused every prefetch until a demand read came.
#[test]
fn a_prefetch_may_take_a_prefetched_chunk_read_in_full_out_of_order() {
    // 1 MiB of budget, 256 KiB of it kept for demand reads: 768 KiB for prefetches.
    let (mut core, backend, file, stream) = one_prefetched_chunk(1 << 20, 256 << 10);
    let chunk_bytes = 256u64 << 10;
    for (from, to) in [(chunk_bytes / 2, chunk_bytes), (0, chunk_bytes / 2)] {
        read_through(&mut core, file, stream, from, to);
    }
    assert!(
        matches!(core.find(file, 0), Found::Ready { .. }),
        "kept: it was not read front to end"
    );
    assert_eq!(core.stats.prefetch_used_bytes, chunk_bytes);
    assert_eq!(
        third_prefetch(&mut core, &backend, file),
        (1, false),
        "a prefetch could not take data the application had read whole"
    );
    assert!(matches!(core.find(file, 0), Found::Missing));
    assert_eq!(core.stats.wasted_bytes, 0, "nothing of it went unread");
    core.check();
}

/// A release that cuts out the only pages of a prefetched chunk nobody has read leaves a
/// piece read on every page: used data a prefetch may take, not read-ahead to keep.
#[test]
fn a_piece_left_with_only_read_pages_is_used_data() {
    let kib = 1u64 << 10;
    let (mut core, _backend, file, stream) = one_prefetched_chunk(1 << 20, 256 * kib);
    // Every page but the first two, back half first: not read from the chunk's start.
    for (from, to) in [(128 * kib, 256 * kib), (8 * kib, 128 * kib)] {
        let Found::Ready { chunk, .. } = core.find(file, from) else {
            panic!("byte {from} is in")
        };
        drop(core.pin(chunk));
        core.unpin(stream, chunk, from, to);
    }
    core.release(file, ByteRange::new(0, 8 * kib));
    assert_eq!(core.stats.wasted_bytes, 8 * kib);
    let Found::Ready { chunk, .. } = core.find(file, 8 * kib) else {
        panic!("the read piece is kept")
    };
    assert_eq!(
        core.chunk(chunk).lru.map(|(class, _)| class),
        Some(Lru::Used),
        "nothing of the piece is left unread"
    );
    core.check();
}

/// A prefetched chunk read in part and then dropped read ahead in vain the pages nobody read:
/// they count as wasted, and only the pages read as used, whether the chunk goes whole or a
/// release cuts it first. Before, the first read counted the whole chunk as used, so 8 KiB
/// read of 256 KiB reported 256 KiB used and nothing wasted, where the simulator's page cache
/// counts the 248 KiB never read as wasted.
#[test]
fn a_chunk_read_in_part_wastes_the_pages_nobody_read() {
    let kib = 1u64 << 10;
    let (mut core, _backend, file, stream) = one_prefetched_chunk(1 << 20, 256 * kib);
    let read = |core: &mut Core, from: u64, to: u64| read_through(core, file, stream, from, to);
    // 8 KiB from the middle, then 4 KiB of the same pages again and one page beside them.
    read(&mut core, 64 * kib, 72 * kib);
    read(&mut core, 66 * kib, 70 * kib);
    read(&mut core, 72 * kib, 76 * kib);
    assert_eq!(
        core.stats.prefetch_used_bytes,
        12 * kib,
        "each page counts once"
    );
    // A release cuts out 16 KiB, the 12 KiB read and the page before them, unread.
    core.release(file, ByteRange::new(60 * kib, 16 * kib));
    assert!(matches!(core.find(file, 64 * kib), Found::Missing));
    assert_eq!(core.stats.wasted_bytes, 4 * kib);
    // The pieces go (a demand read may take them): nothing of them was read.
    while core.evict_one(Purpose::Demand, Some(stream)) {}
    assert!(matches!(core.find(file, 0), Found::Missing));
    assert_eq!(core.stats.prefetched_bytes, 256 * kib);
    assert_eq!(core.stats.wasted_bytes, 256 * kib - 12 * kib);
    assert_eq!(
        core.stats.prefetch_used_bytes + core.stats.wasted_bytes,
        core.stats.prefetched_bytes
    );
    core.check();
}

/// Where a chunk's buffer is a piece of a mapping, a release inside the chunk cuts the buffer
/// rather than copying the pages it keeps: the kept chunks' buffers are the old buffer's own
/// pages at their old addresses, and only the released pages go back to the pool. Nothing is
/// allocated, so the pages are freed even when memory could not hold copies (the copy path
/// keeps the chunk whole then). A kept piece the reader has read to its end goes as well.
#[test]
fn a_release_inside_a_mapped_chunk_cuts_its_buffer_in_place() {
    let kib = 1u64 << 10;
    let mib = 1u64 << 20;
    let cfg = PolicyConfig {
        name: "none".into(),
        ..PolicyConfig::default()
    };
    let policy =
        foresight_policy::build(&cfg, Arc::new(foresight_policy::Layout::unplaced(&[]))).unwrap();
    let (mut core, backend, file, stream) = core_over_holding_with(policy, 4 * mib, mib, true);
    assert_eq!(
        core.fetch(FetchId(0), file, ByteRange::new(0, mib), None, None),
        (1, false)
    );
    fill_and_complete(&mut core, &backend);
    // The chunk holding file byte `pos`: its id, first byte, and its buffer's address and
    // capacity.
    let at = |core: &Core, pos: u64| {
        let Found::Ready {
            chunk, chunk_start, ..
        } = core.find(file, pos)
        else {
            panic!("byte {pos} is not cached")
        };
        let State::Ready { buf, .. } = &core.chunk(chunk).state else {
            unreachable!("found ready")
        };
        assert!(
            buf.is_mapped(),
            "a prefaulted pool lends pieces of its mapping"
        );
        for p in [pos, chunk_start] {
            let i = (p - chunk_start) as usize;
            assert_eq!(buf.as_slice()[i], (p % 251) as u8, "byte {p}");
        }
        (chunk, chunk_start, buf.addr() as u64, buf.capacity() as u64)
    };
    let (_, _, addr, cap) = at(&core, 0);
    assert_eq!(cap, mib);
    // Lend most of the rest, so that copies of the kept pages (1 MiB less 8 KiB, beside the
    // old buffer) would not fit.
    let filler = core.pool.alloc(5 * mib / 2, Purpose::Demand).unwrap();
    let (lent, held) = (core.pool.lent_bytes(), core.pool.held_bytes());
    assert_eq!((lent, held), (7 * mib / 2, 4 * mib));

    core.release(file, ByteRange::new(512 * kib, 8 * kib));
    assert!(matches!(core.find(file, 512 * kib), Found::Missing));
    assert!(matches!(core.find(file, 520 * kib - 1), Found::Missing));
    let (front, front_start, front_addr, front_cap) = at(&core, 511 * kib);
    assert_eq!((front_start, front_addr, front_cap), (0, addr, 512 * kib));
    let (_, back_start, back_addr, back_cap) = at(&core, 700 * kib);
    assert_eq!(
        (back_start, back_addr, back_cap),
        (520 * kib, addr + 520 * kib, mib - 520 * kib),
        "the pages after the cut stay where they were"
    );
    assert_eq!(
        (core.pool.lent_bytes(), core.pool.held_bytes()),
        (lent - 8 * kib, held),
        "the cut pages are free and kept in the pool"
    );
    core.check();

    // The reader has read the first 256 KiB; a release just after them leaves nothing of
    // that piece to keep before the cut.
    drop(core.pin(front));
    core.unpin(stream, front, 0, 256 * kib);
    core.release(file, ByteRange::new(256 * kib, 8 * kib));
    assert!(matches!(core.find(file, 0), Found::Missing));
    let (rest, rest_start, rest_addr, rest_cap) = at(&core, 300 * kib);
    assert_eq!(
        (rest_start, rest_addr, rest_cap),
        (264 * kib, addr + 264 * kib, 248 * kib)
    );
    assert_eq!(core.chunk(rest).consumed_bytes, 0);
    assert_eq!(core.pool.lent_bytes(), lent - 8 * kib - 264 * kib);
    core.pool.free(filler);
    let reserve = mib;
    assert_eq!(
        core.pool.prefetch_available_bytes(),
        4 * mib - reserve - (mib - 8 * kib - 264 * kib),
        "the policy is told the freed bytes are available"
    );
    core.check();
    // Released whole, the pieces go back and join the rest of the mapping.
    core.release(file, ByteRange::new(0, mib));
    assert_eq!(core.pool.lent_bytes(), 0);
    assert_eq!(core.pool.held_bytes(), 4 * mib);
    let whole = core.pool.alloc(4 * mib, Purpose::Demand).unwrap();
    assert_eq!(whole.addr() as u64, addr);
    core.pool.free(whole);
    core.check();
}

/// Defers every read of `file` (of any file, if `None`) that misses, and fetches nothing;
/// other reads it leaves to demand reads.
struct DeferAll {
    file: Option<FileId>,
    out: VecDeque<Output>,
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
    let (mut core, backend, file, sa) = core_over_holding_with(policy, 4 << 20, 64 << 10, false);
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

/// A reader's reads still waiting for a submission slot when it closes, while another reader
/// keeps the file open, are read for the file all the same, but no longer for that reader: its
/// id may already name a reader of another file, which the anticipatory scheduler must not
/// charge with them (a read charged to a reader it did not make ends that reader's
/// anticipation at once and skews its think-time and seek statistics).
#[test]
fn reads_queued_for_a_closed_reader_are_not_charged_to_the_next_reader_in_its_slot() {
    let (mut core, backend, file, sa) = core_over_holding(1 << 20, 64 << 10);
    let again = mem_file(&mut core, "mem", (1, 1));
    let (same, _sb, _, _) = core.open(again);
    assert_eq!(same, file, "one file, two readers");
    core.begin_read(Instant(0), sa, file, 0, 256 << 10);
    assert_eq!(
        (core.in_flight, core.urgent.len()),
        (2, 2),
        "two reads queued"
    );
    core.close(Instant(1), sa);
    let other = other_file(&mut core);
    let (_, sc, _, _) = core.open(other);
    assert_eq!(sc, sa, "the closed reader's slot is reused");
    core.complete_all(Instant(2), &mut completions(&backend));
    let readers: Vec<(u64, Option<StreamId>)> = backend
        .held
        .lock()
        .unwrap()
        .iter()
        .map(|r| (r.offset_bytes, r.reader))
        .collect();
    assert_eq!(readers, vec![(128 << 10, None), (192 << 10, None)]);
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
fn deferred_after_hinted_reads_with_gaps(gaps_ns: &[u64]) -> (Core, (FileId, StreamId), Instant) {
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
    let policy = Box::new(DeferAll {
        file: None,
        out: VecDeque::new(),
    });
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
