//! Every byte read through the engine equals the file: under 1,024 concurrent readers, random
//! seeks, injected EIO and short reads, and a file truncated while it is read. Each test checks a
//! hash of everything a reader got against a hash of the file's bytes over the same ranges.

mod common;

use std::io::{Read, Seek, SeekFrom};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{content, hash, join_within, real_backends, recv_within, wait_for_engine, TempDir};
use foresight_core::{ByteLen, ByteRange, FileId, Rng};
use foresight_engine::{ArenaShelf, Backend, Engine, Fault, FaultKind, NoopBackend};

/// The wait every test here goes through gives up, naming what it waited for, when the state
/// does not come within its guard: a hang fails the test rather than the run.
#[test]
#[should_panic(expected = "waiting for a state that never comes")]
fn a_wait_gives_up_after_its_guard() {
    common::wait_within(
        Duration::ZERO,
        "a state that never comes",
        || false,
        String::new,
    );
}

/// Reads a whole reader with request sizes drawn from `rng` (1 byte to `max_req`).
fn read_all_varied(r: &mut foresight_engine::Reader, rng: &mut Rng, max_req: u64) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; max_req as usize];
    loop {
        let n = 1 + rng.below(max_req) as usize;
        let got = r.read(&mut buf[..n]).expect("read");
        if got == 0 {
            return out;
        }
        out.extend_from_slice(&buf[..got]);
    }
}

fn run_concurrent_readers(
    name: &str,
    engine: Engine,
    paths: Vec<std::path::PathBuf>,
    files: Arc<Vec<Vec<u8>>>,
    readers: usize,
) {
    let started = Instant::now();
    let handles: Vec<_> = (0..readers)
        .map(|i| {
            let engine = engine.clone();
            let path = paths[i % paths.len()].clone();
            let files = files.clone();
            std::thread::Builder::new()
                .stack_size(256 << 10)
                .spawn(move || {
                    let mut r = engine.open(&path).expect("open");
                    let mut rng = Rng::new(i as u64);
                    let got = read_all_varied(&mut r, &mut rng, 48 << 10);
                    let want = &files[i % files.len()];
                    assert_eq!(got.len(), want.len(), "reader {i} length");
                    assert_eq!(hash(&got), hash(want), "reader {i} bytes");
                })
                .expect("spawn")
        })
        .collect();
    // A reader stuck is a bug, reported with the driver's state.
    for (i, h) in handles.into_iter().enumerate() {
        wait_for_engine(&engine, &format!("{name}: reader {i} to finish"), || {
            h.is_finished()
        });
        h.join().expect("a reader failed");
    }
    let s = engine.stats();
    engine.check_invariants();
    assert!(s.memory_peak_bytes <= s.memory_limit_bytes, "{s:?}");
    assert_eq!(s.io_errors, 0);
    eprintln!(
        "{name}: {readers} readers, {} MiB delivered in {:.2} s; {} fetches, {} demand reads, peak {} KiB of {} KiB, {} memory waits",
        s.app_bytes >> 20,
        started.elapsed().as_secs_f64(),
        s.fetches,
        s.demand_reads,
        s.memory_peak_bytes >> 10,
        s.memory_limit_bytes >> 10,
        s.memory_waits
    );
}

#[test]
fn a_thousand_and_twenty_four_concurrent_readers_get_every_byte() {
    let dir = TempDir::new("readers1024");
    let files: Vec<Vec<u8>> = (0..64).map(|i| content(192 << 10, 100 + i)).collect();
    let paths: Vec<_> = files
        .iter()
        .enumerate()
        .map(|(i, c)| dir.file(&format!("f{i}"), c))
        .collect();
    let files = Arc::new(files);
    for (name, backend) in
        real_backends("a_thousand_and_twenty_four_concurrent_readers_get_every_byte")
    {
        let engine = Engine::builder()
            .backend(backend)
            .memory(ByteLen::mib(16))
            .max_io(ByteLen::kib(256))
            .readahead_max(ByteLen::kib(128))
            .queue_depth(32)
            .build()
            .unwrap();
        run_concurrent_readers(name, engine, paths.clone(), files.clone(), 1024);
    }
    // The same on the in-memory backend, with a budget so small that readers wait for memory.
    let noop = NoopBackend::new();
    for (i, c) in files.iter().enumerate() {
        noop.insert(format!("/mem/f{i}"), c.clone());
    }
    let engine = Engine::builder()
        .backend(Backend::Noop(noop))
        .memory(ByteLen::mib(2))
        .max_io(ByteLen::kib(64))
        .queue_depth(8)
        .build()
        .unwrap();
    let paths = (0..64).map(|i| format!("/mem/f{i}").into()).collect();
    run_concurrent_readers("noop", engine, paths, files, 1024);
}

#[test]
fn random_seeks_read_the_right_bytes() {
    let dir = TempDir::new("seeks");
    let len = 3 << 20;
    let data = content(len, 7);
    let path = dir.file("f", &data);
    for (name, backend) in real_backends("random_seeks_read_the_right_bytes") {
        let engine = Engine::builder()
            .backend(backend)
            .memory(ByteLen::mib(4))
            .build()
            .unwrap();
        let threads: Vec<_> = (0..8u64)
            .map(|t| {
                let engine = engine.clone();
                let path = path.clone();
                let data = data.clone();
                std::thread::spawn(move || {
                    let mut r = engine.open(&path).unwrap();
                    let mut rng = Rng::new(t);
                    let mut buf = vec![0u8; 300_000];
                    for _ in 0..300 {
                        let off = rng.below(len as u64 + 1000);
                        let want = 1 + rng.below(300_000) as usize;
                        r.seek(SeekFrom::Start(off)).unwrap();
                        // A few sequential reads after each seek, so readahead kicks in.
                        let mut pos = off as usize;
                        for _ in 0..1 + rng.below(3) {
                            let got = r.read(&mut buf[..want]).unwrap();
                            let expect = want.min(len.saturating_sub(pos));
                            assert_eq!(got, expect, "read at {pos}");
                            assert_eq!(
                                hash(&buf[..got]),
                                hash(&data[pos..pos + got]),
                                "bytes at {pos}"
                            );
                            pos += got;
                        }
                    }
                    // Seeking from the end and before the start.
                    assert_eq!(r.seek(SeekFrom::End(-10)).unwrap(), len as u64 - 10);
                    let mut tail = Vec::new();
                    r.read_to_end(&mut tail).unwrap();
                    assert_eq!(tail, &data[len - 10..]);
                    assert!(r.seek(SeekFrom::Current(-(len as i64) - 1)).is_err());
                })
            })
            .collect();
        for (i, t) in threads.into_iter().enumerate() {
            join_within(t, &format!("{name}: seeking reader {i} to finish")).unwrap();
        }
        engine.check_invariants();
        let s = engine.stats();
        assert!(s.memory_peak_bytes <= s.memory_limit_bytes);
        eprintln!(
            "random seeks on {name}: {} reads, {} MiB, {} fetches, {} demand",
            s.app_reads,
            s.app_bytes >> 20,
            s.fetches,
            s.demand_reads
        );
    }
}

#[test]
fn eio_goes_to_the_reader_that_hit_it_and_nobody_else() {
    let noop = NoopBackend::new();
    let len = 2 << 20;
    let files: Vec<Vec<u8>> = (0..8).map(|i| content(len, 500 + i)).collect();
    for (i, c) in files.iter().enumerate() {
        noop.insert(format!("/mem/{i}"), c.clone());
    }
    // File 3 fails at bytes [1 MiB, 1 MiB + 100), every time.
    let bad = 1u64 << 20;
    noop.inject(Fault {
        path: "/mem/3".into(),
        range: bad..bad + 100,
        kind: FaultKind::Eio,
        times: None,
    });
    let engine = Engine::builder()
        .backend(Backend::Noop(noop.clone()))
        .memory(ByteLen::mib(8))
        .build()
        .unwrap();
    let files = Arc::new(files);
    let handles: Vec<_> = (0..8usize)
        .map(|i| {
            let engine = engine.clone();
            let files = files.clone();
            std::thread::spawn(move || {
                let mut r = engine.open(format!("/mem/{i}")).unwrap();
                let mut got = Vec::new();
                let mut buf = vec![0u8; 64 << 10];
                loop {
                    match r.read(&mut buf) {
                        Ok(0) => break Ok(got),
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                        Err(e) => break Err((got, e, Box::new(r))),
                    }
                }
                .map(|g| (i, g))
                .map_err(|(g, e, r)| (i, g, e, r, files))
            })
        })
        .collect();
    let mut failed = None;
    for h in handles {
        match join_within(h, "a reader of the faulty engine to finish").unwrap() {
            Ok((i, got)) => {
                assert_ne!(i, 3, "the faulty file read clean");
                assert_eq!(hash(&got), hash(&files[i]), "reader {i} disturbed");
            }
            Err((i, got, e, r, _)) => {
                assert_eq!(i, 3, "reader {i} got someone else's error: {e}");
                assert_eq!(e.raw_os_error(), Some(libc::EIO), "{e}");
                // Everything before the bad page arrived, and nothing after it.
                assert!(got.len() as u64 <= bad && got.len() as u64 >= bad - (64 << 10));
                assert_eq!(hash(&got), hash(&files[3][..got.len()]));
                failed = Some((got, r));
            }
        }
    }
    let (mut got, mut r) = failed.expect("reader 3 saw EIO");
    // The fault clears (the disk remapped the sector): the same reader carries on and the file
    // reads whole.
    noop.clear_faults();
    r.read_to_end(&mut got).unwrap();
    assert_eq!(hash(&got), hash(&files[3]));
    let s = engine.stats();
    assert!(s.io_errors >= 1);
    engine.check_invariants();
    eprintln!(
        "eio: {} I/O errors, all reported to reader 3 only",
        s.io_errors
    );
}

#[test]
fn short_reads_are_completed_and_delays_do_not_reorder_bytes() {
    let noop = NoopBackend::new();
    let len = (3 << 20) + 12_345;
    let data = content(len, 9);
    noop.insert("/mem/f", data.clone());
    // Short reads everywhere in the first MiB, a few delayed reads further on.
    noop.inject(Fault {
        path: "/mem/f".into(),
        range: 0..1 << 20,
        kind: FaultKind::Short { max_bytes: 1000 },
        times: None,
    });
    noop.inject(Fault {
        path: "/mem/f".into(),
        range: (2 << 20)..(2 << 20) + 1,
        kind: FaultKind::Delay(Duration::from_millis(30)),
        times: Some(3),
    });
    let engine = Engine::builder()
        .backend(Backend::Noop(noop.clone()))
        .memory(ByteLen::mib(4))
        .build()
        .unwrap();
    let mut handles = vec![];
    for t in 0..4u64 {
        let engine = engine.clone();
        let data = data.clone();
        handles.push(std::thread::spawn(move || {
            let mut r = engine.open("/mem/f").unwrap();
            let got = read_all_varied(&mut r, &mut Rng::new(t), 100_000);
            assert_eq!(hash(&got), hash(&data));
        }));
    }
    for h in handles {
        join_within(h, "a reader of short reads to finish").unwrap();
    }
    let s = engine.stats();
    assert!(s.short_reads > 100, "{s:?}");
    eprintln!("short reads: {} re-issued, every byte right", s.short_reads);
}

/// Reads `path` slowly while `shrink` truncates it; the reader must end (no hang) with a prefix of
/// the original bytes.
fn truncated_while_read(
    engine: Engine,
    path: String,
    data: Vec<u8>,
    shrink: impl FnOnce() + Send + 'static,
) {
    let (tx, rx) = mpsc::channel();
    let watched = engine.clone();
    let reader = std::thread::spawn(move || {
        let mut r = engine.open(&path).unwrap();
        let mut got = Vec::new();
        let mut buf = vec![0u8; 32 << 10];
        let mut shrink = Some(shrink);
        loop {
            let n = r
                .read(&mut buf)
                .expect("a truncated file reads to an early end, not an error");
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
            if got.len() >= 256 << 10 {
                if let Some(s) = shrink.take() {
                    s();
                }
            }
        }
        tx.send(got).unwrap();
    });
    let got = recv_within(&rx, &watched, "the reader of a truncated file to end");
    reader.join().unwrap();
    assert!(
        got.len() < data.len(),
        "the reader never saw the truncation"
    );
    assert!(got.len() >= 256 << 10);
    assert_eq!(
        hash(&got),
        hash(&data[..got.len()]),
        "bytes after truncation are not the file's"
    );
}

#[test]
fn a_file_truncated_while_read_ends_early_without_hanging() {
    let len = 8 << 20;
    let data = content(len, 11);
    // In memory.
    let noop = NoopBackend::new();
    noop.insert("/mem/t", data.clone());
    let engine = Engine::builder()
        .backend(Backend::Noop(noop.clone()))
        .memory(ByteLen::mib(2))
        .readahead_max(ByteLen::kib(128))
        .build()
        .unwrap();
    truncated_while_read(engine, "/mem/t".into(), data.clone(), move || {
        noop.truncate("/mem/t", 300_000)
    });
    // Real files, on each real backend (O_DIRECT under uring; the cut is not page-aligned).
    let dir = TempDir::new("truncate");
    for (name, backend) in real_backends("a_file_truncated_while_read_ends_early_without_hanging") {
        let path = dir.file(&format!("t-{name}"), &data);
        let engine = Engine::builder()
            .backend(backend)
            .memory(ByteLen::mib(2))
            .readahead_max(ByteLen::kib(128))
            .build()
            .unwrap();
        let p = path.clone();
        truncated_while_read(engine, common::path_str(&path), data.clone(), move || {
            std::fs::OpenOptions::new()
                .write(true)
                .open(&p)
                .unwrap()
                .set_len(1_000_001)
                .unwrap();
        });
        eprintln!("truncation on {name}: ended early, bytes right");
    }
}

/// Hints go to the policy, clipped to the file (a range wholly past its end is dropped), and
/// hints the engine refuses (too many ranges, a closed stream's) reach nothing. Before, the test
/// checked only the refusals: a hint the engine accepted and then lost passed it.
#[test]
fn hints_are_checked_and_passed_on() {
    let noop = NoopBackend::new();
    noop.insert("/mem/h", content(1 << 20, 3));
    let hints = Arc::new(Mutex::new(Vec::new()));
    let log = hints.clone();
    let engine = Engine::builder()
        .backend(Backend::Noop(noop))
        .wrap_policy(Box::new(move |inner| {
            Box::new(HintLog { inner, hints: log })
        }))
        .build()
        .unwrap();
    let r = engine.open("/mem/h").unwrap();
    engine
        .hint(
            r.handle(),
            &[ByteRange::new(0, 4096), ByteRange::new(10 << 20, 5)],
        )
        .unwrap();
    r.hint(&[ByteRange::new(4096, 4096)]).unwrap();
    let too_many = vec![ByteRange::new(0, 1); foresight_engine::MAX_HINT_RANGES + 1];
    assert!(engine.hint(r.handle(), &too_many).is_err());
    let h = r.handle();
    drop(r);
    assert!(
        engine.hint(h, &[ByteRange::new(0, 1)]).is_err(),
        "closed stream"
    );
    assert_eq!(
        *hints.lock().unwrap(),
        vec![
            vec![ByteRange::new(0, 4096)],
            vec![ByteRange::new(4096, 4096)]
        ],
        "the policy heard the accepted hints, clipped, and nothing of the refused ones"
    );
}

/// Passes every call to the policy inside and keeps the ranges of each hint it is given.
struct HintLog {
    inner: Box<dyn foresight_policy::Policy>,
    hints: Arc<Mutex<Vec<Vec<ByteRange>>>>,
}

impl foresight_policy::Policy for HintLog {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn handle(&mut self, now: foresight_core::Instant, input: foresight_policy::Input) {
        if let foresight_policy::Input::Hint { ranges, .. } = &input {
            self.hints.lock().unwrap().push(ranges.clone());
        }
        self.inner.handle(now, input);
    }
    fn poll_output(&mut self) -> Option<foresight_policy::Output> {
        self.inner.poll_output()
    }
    fn add_file(&mut self, id: FileId, file: foresight_policy::layout::FileLayout) {
        self.inner.add_file(id, file);
    }
}

/// "From here to the end" is naturally written with a length of `u64::MAX`; the engine clips it to
/// the file (as `hint` promises) instead of overflowing while it holds its lock.
#[test]
fn a_hint_to_the_end_of_the_file_is_clipped_to_the_file_not_a_panic() {
    let noop = NoopBackend::new();
    noop.insert("/mem/to-end", content(1 << 20, 2));
    let hints = Arc::new(Mutex::new(Vec::new()));
    let log = hints.clone();
    let engine = Engine::builder()
        .backend(Backend::Noop(noop))
        .wrap_policy(Box::new(move |inner| {
            Box::new(HintLog { inner, hints: log })
        }))
        .build()
        .unwrap();
    let mut r = engine.open("/mem/to-end").unwrap();
    let asked = [
        ByteRange::new(1, u64::MAX),
        ByteRange::new(u64::MAX, u64::MAX),
        ByteRange::new(4096, u64::MAX - 4096),
    ];
    let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| r.hint(&asked)));
    if res.is_err() {
        // The panic poisoned the engine's lock: dropping the engine would panic again.
        std::mem::forget(r);
        std::mem::forget(engine);
        panic!("a hint to the end of the file panicked");
    }
    res.unwrap().unwrap();
    assert_eq!(
        *hints.lock().unwrap(),
        vec![vec![
            ByteRange::new(1, (1 << 20) - 1),
            ByteRange::new(4096, (1 << 20) - 4096)
        ]],
        "clipped to the file, the range past it dropped"
    );
    // The engine still serves reads.
    let mut b = [0u8; 4];
    r.seek(SeekFrom::Start(0)).unwrap();
    assert_eq!(r.read(&mut b).unwrap(), 4);
    assert_eq!(&b[..], &content(4, 2)[..]);
}

/// A SEQP policy the test keeps a hold of, to count the windows it keeps.
struct SharedSeqp(Arc<Mutex<foresight_policy::readahead::Seqp>>);

impl foresight_policy::Policy for SharedSeqp {
    fn name(&self) -> &str {
        "seqp"
    }
    fn handle(&mut self, now: foresight_core::Instant, input: foresight_policy::Input) {
        self.0.lock().unwrap().handle(now, input);
    }
    fn poll_output(&mut self) -> Option<foresight_policy::Output> {
        self.0.lock().unwrap().poll_output()
    }
    fn add_file(&mut self, id: FileId, file: foresight_policy::layout::FileLayout) {
        self.0.lock().unwrap().add_file(id, file);
    }
}

/// A `seqp` policy (128 KiB windows) the test keeps a handle on, to look inside it.
fn shared_seqp() -> Arc<Mutex<foresight_policy::readahead::Seqp>> {
    Arc::new(Mutex::new(
        foresight_policy::readahead::Seqp::new(
            ByteLen::kib(128),
            Arc::new(foresight_policy::Layout::unplaced(&[])),
        )
        .unwrap(),
    ))
}

/// A long-running process (the server) opens readers without end. A closed reader's stream slot
/// goes to the next reader and the policy forgets the closed stream, so neither grows with the
/// number of opens, and the new stream does not inherit the old one's readahead.
#[test]
fn closed_readers_free_their_stream_slot_and_policy_state() {
    let noop = NoopBackend::new();
    noop.insert("/mem/f", content(256 << 10, 1));
    noop.insert("/mem/g", content(256 << 10, 2));
    let seqp = shared_seqp();
    let held = seqp.clone();
    let engine = Engine::builder()
        .backend(Backend::Noop(noop))
        .wrap_policy(Box::new(move |_| Box::new(SharedSeqp(held))))
        .build()
        .unwrap();
    let mut buf = vec![0u8; 16 << 10];
    // One reader stays open throughout.
    let mut kept = engine.open("/mem/g").unwrap();
    kept.read_exact(&mut buf).unwrap();
    for i in 0..5_000 {
        let mut r = engine.open("/mem/f").unwrap();
        assert_eq!(
            r.handle().stream,
            foresight_core::StreamId(1),
            "open {i} took a new slot"
        );
        assert!(
            seqp.lock()
                .unwrap()
                .window(r.handle().stream, r.handle().file)
                .is_none(),
            "open {i} inherited the closed stream's window"
        );
        r.read_exact(&mut buf).unwrap();
        r.read_exact(&mut buf).unwrap();
    }
    assert_eq!(engine.stream_slots(), 2, "one slot per reader open at once");
    assert_eq!(
        seqp.lock().unwrap().window_count(),
        1,
        "only the open reader's window is kept"
    );
    // A handle kept from a closed reader does not name the reader that took its slot.
    let old = engine.open("/mem/f").unwrap();
    let stale = old.handle();
    drop(old);
    let new = engine.open("/mem/f").unwrap();
    assert_eq!(new.handle().stream, stale.stream);
    assert!(engine.hint(stale, &[ByteRange::new(0, 4096)]).is_err());
    assert!(engine
        .hint(new.handle(), &[ByteRange::new(0, 4096)])
        .is_ok());
    drop((new, kept));
    assert_eq!(seqp.lock().unwrap().window_count(), 0);
    engine.check_invariants();
}

/// A server opens every file it serves through one engine. A file that no reader holds, with
/// nothing cached and no read in flight, is forgotten, by the engine and by its policy, and its
/// id goes to a later file: neither grows with the number of distinct files served. (The
/// engine kept about 220 bytes for each distinct file for its whole life.)
#[test]
fn distinct_files_read_and_closed_are_forgotten() {
    const FILES: u64 = 2_000;
    const QUEUE_DEPTH: usize = 32;
    let noop = NoopBackend::new();
    let seqp = shared_seqp();
    let held = seqp.clone();
    let engine = Engine::builder()
        .backend(Backend::Noop(noop.clone()))
        .queue_depth(QUEUE_DEPTH as u32)
        .wrap_policy(Box::new(move |_| Box::new(SharedSeqp(held))))
        .build()
        .unwrap();
    let mut buf = vec![0u8; 16 << 10];
    for i in 0..FILES {
        // A new inode each time, as a server sees when it serves many files: a distinct file.
        noop.insert("/mem/f", content(64 << 10, i));
        let mut r = engine.open("/mem/f").unwrap();
        r.read_exact(&mut buf).unwrap();
        assert_eq!(
            hash(&buf),
            hash(&content(64 << 10, i)[..16 << 10]),
            "file {i}"
        );
        drop(r);
        // One file open, and closed ones whose readahead is still in flight.
        assert!(
            engine.file_slots() <= 1 + QUEUE_DEPTH,
            "{} file slots after {} distinct files",
            engine.file_slots(),
            i + 1
        );
    }
    // The last readahead completes in the backend's own time.
    wait_for_engine(&engine, "every closed file to be forgotten", || {
        engine.files_remembered() == 0
    });
    let p = seqp.lock().unwrap();
    assert_eq!(
        (p.marked_files(), p.window_count()),
        (0, 0),
        "the policy's readahead marks and windows"
    );
    drop(p);
    engine.check_invariants();
}

#[test]
fn opening_a_missing_file_names_it() {
    let e = Engine::builder()
        .backend(Backend::Threads)
        .build()
        .unwrap()
        .open("/nonexistent/foresight-file")
        .unwrap_err();
    assert!(e.to_string().contains("/nonexistent/foresight-file"), "{e}");
}

#[test]
fn empty_files_and_reads_past_the_end_return_nothing() {
    let dir = TempDir::new("empty");
    let p = dir.file("e", &[]);
    let engine = Engine::builder().backend(Backend::Threads).build().unwrap();
    let mut r = engine.open(&p).unwrap();
    let mut buf = [0u8; 10];
    assert_eq!(r.read(&mut buf).unwrap(), 0);
    let q = dir.file("q", b"hello");
    let mut r = engine.open(&q).unwrap();
    r.seek(SeekFrom::Start(100)).unwrap();
    assert_eq!(r.read(&mut buf).unwrap(), 0);
    r.seek(SeekFrom::Start(1)).unwrap();
    assert_eq!(r.read(&mut buf).unwrap(), 4);
    assert_eq!(&buf[..4], b"ello");
}

/// A file whose size is 0 but which holds bytes (every file of /proc) is refused at open with an
/// error that says why and what to do, on every real backend, direct or not, and on the emulated
/// one, which reads real files too. Before, it opened and read as empty: `Ok(0)` at once, as if
/// the file had nothing in it; so did one whose first byte cannot be read (`/proc/self/mem`).
/// An empty regular file still opens, and reads nothing.
#[test]
fn a_file_whose_size_is_0_but_holds_bytes_is_refused_with_the_reason() {
    let proc_file = std::path::Path::new("/proc/self/status");
    if !proc_file.exists() {
        eprintln!("skipped: no /proc here");
        return;
    }
    assert_eq!(std::fs::metadata(proc_file).unwrap().len(), 0);
    assert!(!std::fs::read(proc_file).unwrap().is_empty());
    let dir = TempDir::new("size-0");
    let empty = dir.file("empty", &[]);
    let mut backends = real_backends("size-0");
    backends.push((
        "emulated",
        Backend::Emulated(foresight_engine::EmulatedConfig::preset("ssd-850evo").unwrap()),
    ));
    for (name, backend) in backends {
        for direct in [true, false] {
            let engine = Engine::builder()
                .backend(backend.clone())
                .direct_io(direct)
                .build()
                .unwrap();
            let e = engine.open(proc_file).unwrap_err();
            let text = e.to_string();
            assert!(text.contains("/proc/self/status"), "{name}: {text}");
            assert!(
                text.contains("size is 0 bytes but it holds data"),
                "{name}: {text}"
            );
            assert!(text.contains("std::fs::read"), "{name}: {text}");
            match e {
                foresight_engine::EngineError::Open { source, .. } => {
                    assert_eq!(source.kind(), std::io::ErrorKind::Unsupported, "{name}")
                }
                other => panic!("{name}: not an open error: {other:?}"),
            }
            // A file of size 0 whose first byte cannot be read is not an empty file either
            // (here EIO: nothing is mapped at address 0); it opened and read as empty.
            let e = engine.open("/proc/self/mem").unwrap_err().to_string();
            assert!(e.contains("/proc/self/mem"), "{name}: {e}");
            assert!(e.contains("a read of its first byte failed"), "{name}: {e}");
            let mut r = engine.open(&empty).unwrap();
            let mut buf = [0u8; 16];
            assert_eq!(r.read(&mut buf).unwrap(), 0, "{name}");
        }
    }
}

/// A seek to a position before 0 or past `u64::MAX` is an error that leaves the position where
/// it was, as for `std::fs::File`; seeks within that range, past the end of the file included,
/// are taken, and a read there returns nothing. Before, a seek past `u64::MAX` was cut to it, so
/// `Current(d)` and then `Current(-d)` did not come back.
#[test]
fn seeks_out_of_range_are_errors_that_leave_the_position() {
    let dir = TempDir::new("seek-range");
    let p = dir.file("f", b"0123456789");
    let engine = Engine::builder().backend(Backend::Threads).build().unwrap();
    let mut r = engine.open(&p).unwrap();
    assert_eq!(r.seek(SeekFrom::End(-3)).unwrap(), 7);
    let mut buf = [0u8; 8];
    assert_eq!(r.read(&mut buf).unwrap(), 3);
    assert_eq!(&buf[..3], b"789");
    assert!(r.seek(SeekFrom::End(-11)).is_err());
    assert!(r.seek(SeekFrom::Current(-11)).is_err());
    assert_eq!(r.stream_position().unwrap(), 10);
    let far = r.seek(SeekFrom::Current(i64::MAX)).unwrap();
    assert_eq!(far, 10 + i64::MAX as u64);
    let e = r.seek(SeekFrom::Current(i64::MAX)).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    assert_eq!(r.stream_position().unwrap(), far);
    assert_eq!(r.read(&mut buf).unwrap(), 0);
    assert_eq!(r.seek(SeekFrom::Current(-i64::MAX)).unwrap(), 10);
    assert_eq!(r.seek(SeekFrom::Start(u64::MAX)).unwrap(), u64::MAX);
    assert!(r.seek(SeekFrom::Current(1)).is_err());
    assert_eq!(r.read(&mut buf).unwrap(), 0);
    assert_eq!(r.seek(SeekFrom::Start(2)).unwrap(), 2);
    assert_eq!(r.read(&mut buf).unwrap(), 8);
    assert_eq!(&buf, b"23456789");
}

/// A hint names its stream by a handle from one engine's reader; another engine, whose first
/// reader has the same stream id, file id and open count, refuses it. Before, it took the hint
/// for its own reader's stream, another file's.
#[test]
fn a_hint_given_to_another_engine_is_refused() {
    let build = || {
        let noop = NoopBackend::new();
        noop.insert("/mem/a", content(1 << 20, 1));
        noop.insert("/mem/b", content(1 << 20, 2));
        Engine::builder()
            .backend(Backend::Noop(noop))
            .policy("directed")
            .build()
            .unwrap()
    };
    let (one, two) = (build(), build());
    let a = one.open("/mem/a").unwrap();
    let b = two.open("/mem/b").unwrap();
    assert_eq!(
        (a.handle().stream, a.handle().file),
        (b.handle().stream, b.handle().file)
    );
    let range = [ByteRange::new(0, 4096)];
    let e = two.hint(a.handle(), &range).unwrap_err();
    assert!(
        matches!(e, foresight_engine::EngineError::UnknownStream(_)),
        "{e}"
    );
    assert!(one.hint(b.handle(), &range).is_err());
    one.hint(a.handle(), &range).unwrap();
    two.hint(b.handle(), &range).unwrap();
}

/// Fetches every hinted range and releases each as soon as it arrives, as a policy does with data
/// nobody will read (the stream scheduler with a stale stream's buffers, `directed` with infill).
struct FetchThenRelease {
    ids: foresight_policy::FetchIds,
    fetched:
        std::collections::HashMap<foresight_core::FetchId, (foresight_core::FileId, ByteRange)>,
    out: std::collections::VecDeque<foresight_policy::Output>,
}

/// An engine over `noop` whose policy is [`FetchThenRelease`].
fn fetch_then_release_engine(noop: NoopBackend) -> Engine {
    Engine::builder()
        .backend(Backend::Noop(noop))
        .wrap_policy(Box::new(|_| {
            Box::new(FetchThenRelease {
                ids: Default::default(),
                fetched: Default::default(),
                out: Default::default(),
            })
        }))
        .build()
        .unwrap()
}

impl foresight_policy::Policy for FetchThenRelease {
    fn name(&self) -> &str {
        "fetch-then-release"
    }
    fn handle(&mut self, _now: foresight_core::Instant, input: foresight_policy::Input) {
        use foresight_policy::{Input, Output, Tier};
        match input {
            Input::Hint { file, ranges, .. } => {
                for range in ranges {
                    let id = self.ids.next_id();
                    self.fetched.insert(id, (file, range));
                    self.out.push_back(Output::Fetch {
                        id,
                        file,
                        range,
                        into: Tier::Memory,
                    });
                }
            }
            Input::Fetched { id, .. } => {
                if let Some((file, range)) = self.fetched.remove(&id) {
                    self.out.push_back(Output::Release { file, range });
                }
            }
            _ => {}
        }
    }
    fn poll_output(&mut self) -> Option<foresight_policy::Output> {
        self.out.pop_front()
    }
}

/// A policy releases what it fetched up to the end of a file whose size is not a whole number of
/// pages: the range ends at the file's last byte, and the chunk holding the last partial page is
/// released with the rest instead of being kept until something evicts it.
#[test]
fn a_release_up_to_the_end_of_a_file_frees_its_last_partial_page() {
    let noop = NoopBackend::new();
    let len = 3 * 4096 + 1000;
    noop.insert("/mem/tail", content(len, 4));
    let engine = fetch_then_release_engine(noop);
    let r = engine.open("/mem/tail").unwrap();
    r.hint(&[ByteRange::new(0, len as u64)]).unwrap();
    wait_for_engine(&engine, "the fetch to complete", || {
        engine.stats().device_reads > 0
    });
    let s = engine.stats();
    assert_eq!(
        s.wasted_bytes,
        len as u64,
        "every fetched byte was released unread: {}",
        engine.describe()
    );
    drop(r);
}

/// Answers a read that misses by deferring it and fetching the file's last page (not the bytes the
/// read wants), then cancels that fetch on a timer: the deferred read is left with nothing under
/// way that could bring its bytes.
struct DeferThenCancel {
    ids: foresight_policy::FetchIds,
    pending: Option<foresight_core::FetchId>,
    wake: Option<foresight_core::Instant>,
    tail: ByteRange,
    out: std::collections::VecDeque<foresight_policy::Output>,
}

impl foresight_policy::Policy for DeferThenCancel {
    fn name(&self) -> &str {
        "defer-then-cancel"
    }
    fn handle(&mut self, now: foresight_core::Instant, input: foresight_policy::Input) {
        use foresight_policy::{Input, Output, Tier};
        if let Input::Read {
            file,
            range,
            miss: Some(_),
            ..
        } = input
        {
            if self.pending.is_none() {
                let id = self.ids.next_id();
                self.pending = Some(id);
                self.wake = Some(now + foresight_core::Duration::from_millis(20));
                self.out.push_back(Output::Fetch {
                    id,
                    file,
                    range: self.tail,
                    into: Tier::Memory,
                });
                self.out.push_back(Output::Defer { file, range });
            }
        }
    }
    fn poll_output(&mut self) -> Option<foresight_policy::Output> {
        self.out.pop_front()
    }
    fn poll_timeout(&self) -> Option<foresight_core::Instant> {
        self.wake
    }
    fn handle_timeout(&mut self, _now: foresight_core::Instant) {
        self.wake = None;
        if let Some(id) = self.pending {
            self.out.push_back(foresight_policy::Output::Cancel { id });
        }
    }
}

/// A policy that cancels the last fetch a deferred read was waiting on: the read stops waiting and
/// reads its bytes on demand, instead of waiting for a wake-up that never comes.
#[test]
fn a_deferred_read_whose_fetches_are_cancelled_reads_on_demand() {
    let noop = NoopBackend::new();
    let len = 1 << 20;
    let data = content(len, 6);
    noop.insert("/mem/c", data.clone());
    let tail = ByteRange::new(len as u64 - 4096, 4096);
    // The fetch of the tail is still in flight when it is cancelled.
    noop.inject(Fault {
        path: "/mem/c".into(),
        range: tail.start.0..tail.end().0,
        kind: FaultKind::Delay(Duration::from_millis(200)),
        times: None,
    });
    let engine = Engine::builder()
        .backend(Backend::Noop(noop))
        .wrap_policy(Box::new(move |_| {
            Box::new(DeferThenCancel {
                ids: Default::default(),
                pending: None,
                wake: None,
                tail,
                out: Default::default(),
            })
        }))
        .build()
        .unwrap();
    let mut r = engine.open("/mem/c").unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 8192];
        let n = r.read(&mut buf).unwrap();
        tx.send((n, buf)).unwrap();
    });
    let (n, buf) = recv_within(
        &rx,
        &engine,
        "the deferred read to end after its fetch was cancelled",
    );
    assert_eq!(n, 8192);
    assert_eq!(buf[..], data[..8192]);
}

/// A file rewritten in place keeps its device, inode and size, so those alone cannot tell the
/// new bytes from the old. A reader opened after the rewrite, while an earlier reader still holds
/// the file (and its cached chunks), must read the new bytes; the earlier reader's
/// `identity_now` shows the new time.
#[test]
fn a_reader_opened_after_a_same_size_rewrite_reads_the_new_bytes() {
    let dir = TempDir::new("rewrite");
    let len = 256 * 1024;
    let old = content(len, 7);
    let new = content(len, 8);
    let p = dir.file("f", &old);
    for (name, backend) in real_backends("a_reader_opened_after_a_same_size_rewrite") {
        std::fs::write(&p, &old).unwrap();
        let engine = Engine::builder().backend(backend).build().unwrap();
        let mut first = engine.open(&p).unwrap();
        // Reading the start leaves the readahead beyond it cached.
        let mut start = vec![0u8; 64 * 1024];
        first.read_exact(&mut start).unwrap();
        assert_eq!(start, old[..start.len()], "{name}: first reader");
        std::thread::sleep(Duration::from_millis(50));
        {
            let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
            std::io::Write::write_all(&mut &f, &new).unwrap();
            // Some file systems keep coarse times; the rewrite must be seen as one.
            let later = std::time::SystemTime::now() + Duration::from_secs(10);
            f.set_modified(later).unwrap();
        }
        // The earlier reader's descriptor tells the rewrite, though its identity at open does
        // not change (a server compares the two to cut a response begun on the old bytes).
        let now = first.identity_now().unwrap();
        assert_ne!(now, first.file_identity(), "{name}: rewrite not seen");
        assert_eq!(
            (now.device, now.inode, now.size_bytes),
            (
                first.file_identity().device,
                first.file_identity().inode,
                len as u64
            ),
            "{name}"
        );
        let mut second = engine.open(&p).unwrap();
        assert_eq!(second.identity_now().unwrap(), second.file_identity());
        let mut got = vec![0u8; len];
        second.read_exact(&mut got).unwrap();
        assert_eq!(
            hash(&got),
            hash(&new),
            "{name}: reader opened after the rewrite"
        );
        drop(first);
    }
}

/// An engine with 4 MiB of memory over one in-memory file, `data` at `path`, whose reads within
/// `slow` each take `delay`.
fn engine_over_a_slow_range(
    path: &str,
    data: Vec<u8>,
    slow: std::ops::Range<u64>,
    delay: Duration,
) -> Engine {
    let noop = NoopBackend::new();
    noop.insert(path, data);
    noop.inject(Fault {
        path: path.into(),
        range: slow,
        kind: FaultKind::Delay(delay),
        times: None,
    });
    Engine::builder()
        .backend(Backend::Noop(noop))
        .memory(ByteLen::mib(4))
        .build()
        .unwrap()
}

/// A read whose bytes have not arrived by the reader's deadline stops waiting: with nothing
/// copied it fails with `TimedOut`, with some copied it returns them. The read it waited for goes
/// on, and a later read without a deadline gets every byte; nothing is left claimed or waiting.
#[test]
fn a_read_past_its_deadline_stops_waiting_and_loses_nothing() {
    let len = 256 * 1024;
    let data = content(len, 12);
    // Every read of the second half takes a second.
    let engine = engine_over_a_slow_range(
        "/mem/slow",
        data.clone(),
        (len as u64 / 2)..len as u64,
        Duration::from_secs(1),
    );
    let mut r = engine.open("/mem/slow").unwrap();
    let mut got = vec![0u8; len];
    r.read_exact(&mut got[..len / 4]).unwrap();
    r.set_read_deadline(Some(std::time::Instant::now() + Duration::from_millis(20)));
    // Reads return what has arrived (at most the first half) until one finds nothing there.
    let mut done = len / 4;
    let e = loop {
        match r.read(&mut got[done..]) {
            Ok(n) => {
                assert!(n > 0 && done + n <= len / 2, "{done} + {n}");
                done += n;
            }
            Err(e) => break e,
        }
    };
    assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
    assert!(e.to_string().contains("/mem/slow"), "{e}");
    engine.check_invariants();
    r.set_read_deadline(None);
    r.read_exact(&mut got[done..]).unwrap();
    assert_eq!(hash(&got), hash(&data));
    engine.check_invariants();
}

/// Reads on demand until it is given a hint; from then on it defers every read that misses and
/// fetches the read's bytes 20 ms later, on its timer (as a scheduler does when the stream's turn
/// comes).
struct DeferAfterHint {
    ids: foresight_policy::FetchIds,
    hinted: bool,
    due: Option<(foresight_core::FileId, ByteRange)>,
    wake: Option<foresight_core::Instant>,
    out: std::collections::VecDeque<foresight_policy::Output>,
}

impl foresight_policy::Policy for DeferAfterHint {
    fn name(&self) -> &str {
        "defer-after-hint"
    }
    fn handle(&mut self, now: foresight_core::Instant, input: foresight_policy::Input) {
        use foresight_policy::{Input, Output};
        match input {
            Input::Hint { .. } => self.hinted = true,
            Input::Read {
                file,
                range,
                miss: Some(_),
                ..
            } if self.hinted => {
                self.due = Some((file, range));
                self.wake = Some(now + foresight_core::Duration::from_millis(20));
                self.out.push_back(Output::Defer { file, range });
            }
            _ => {}
        }
    }
    fn poll_output(&mut self) -> Option<foresight_policy::Output> {
        self.out.pop_front()
    }
    fn poll_timeout(&self) -> Option<foresight_core::Instant> {
        self.wake
    }
    fn handle_timeout(&mut self, _now: foresight_core::Instant) {
        self.wake = None;
        if let Some((file, range)) = self.due.take() {
            self.out.push_back(foresight_policy::Output::Fetch {
                id: self.ids.next_id(),
                file,
                range,
                into: foresight_policy::Tier::Memory,
            });
        }
    }
}

/// A demand read fails once in the middle of a read, and the next read gets those bytes on the
/// retry. The failure is over: reading the same bytes again later returns them, not the old error
/// (here the later read is deferred, so nothing was re-read before the reader looked).
#[test]
fn an_error_whose_bytes_were_read_since_is_not_reported_again() {
    let noop = NoopBackend::new();
    let len = 256 << 10;
    let data = content(len, 13);
    noop.insert("/mem/once", data.clone());
    noop.inject(Fault {
        path: "/mem/once".into(),
        range: (64 << 10)..(64 << 10) + 1,
        kind: FaultKind::Eio,
        times: Some(1),
    });
    let engine = Engine::builder()
        .backend(Backend::Noop(noop))
        .memory(ByteLen::mib(1))
        .max_io(ByteLen::kib(64))
        .wrap_policy(Box::new(|_| {
            Box::new(DeferAfterHint {
                ids: Default::default(),
                hinted: false,
                due: None,
                wake: None,
                out: Default::default(),
            })
        }))
        .build()
        .unwrap();
    let mut r = engine.open("/mem/once").unwrap();
    let mut buf = vec![0u8; 128 << 10];
    // The second 64 KiB fails: the read returns the first.
    assert_eq!(r.read(&mut buf).unwrap(), 64 << 10);
    // The next read retries them, and they arrive.
    let n = r.read(&mut buf[..64 << 10]).unwrap();
    assert_eq!(n, 64 << 10);
    assert_eq!(buf[..n], data[64 << 10..128 << 10]);
    assert_eq!(engine.stats().io_errors, 1);
    r.seek(SeekFrom::Start(64 << 10)).unwrap();
    r.hint(&[ByteRange::new(64 << 10, 64 << 10)]).unwrap();
    let n = r
        .read(&mut buf[..64 << 10])
        .expect("the bytes read fine the last time");
    assert_eq!(buf[..n], data[64 << 10..(64 << 10) + n]);
}

/// Bytes a prefetch never brought in (its read failed) are not counted as read ahead, so that
/// what was read ahead is what the application used plus what was wasted.
#[test]
fn a_failed_prefetch_counts_no_bytes_read_ahead() {
    let noop = NoopBackend::new();
    let len = 64 << 10;
    noop.insert("/mem/bad", content(len, 14));
    noop.inject(Fault {
        path: "/mem/bad".into(),
        range: 0..u64::MAX,
        kind: FaultKind::Eio,
        times: Some(1),
    });
    let engine = fetch_then_release_engine(noop);
    let r = engine.open("/mem/bad").unwrap();
    let settled = |reads: u64| {
        wait_for_engine(&engine, &format!("{reads} fetches to complete"), || {
            let s = engine.stats();
            s.io_errors + s.device_reads >= reads
        });
        engine.stats()
    };
    r.hint(&[ByteRange::new(0, len as u64)]).unwrap();
    let s = settled(1);
    assert_eq!(s.io_errors, 1);
    assert_eq!(s.prefetched_bytes, 0, "nothing was read ahead: {s:?}");
    // The fault has fired: the same fetch now brings the bytes in, and they are released unread.
    r.hint(&[ByteRange::new(0, len as u64)]).unwrap();
    let s = settled(2);
    assert_eq!(s.prefetched_bytes, len as u64, "{s:?}");
    assert_eq!(s.prefetch_used_bytes + s.wasted_bytes, s.prefetched_bytes);
}

/// An owner that gives up on the engine (`Engine::abandon`, as a hang guard does) wakes a reader
/// blocked in a read that would not complete for an hour: the read fails with the owner's
/// reason, the engine says it is broken for that reason, later opens are refused, and the reader
/// and the engine then drop without waiting for the delayed read.
#[test]
fn abandoning_the_engine_ends_a_read_blocked_in_it_with_the_reason() {
    let engine = engine_over_a_slow_range(
        "/mem/f",
        content(1 << 20, 3),
        0..1 << 20,
        Duration::from_secs(3600),
    );
    let mut reader = engine.open("/mem/f").unwrap();
    let blocked = std::thread::spawn(move || {
        let mut buf = vec![0u8; 4096];
        reader.read(&mut buf).map_err(|e| e.to_string())
    });
    wait_for_engine(&engine, "the read to wait for its delayed fetch", || {
        engine.describe().contains("waiters 1")
    });
    engine.abandon("the test gave up on the engine");
    let read = join_within(
        blocked,
        "the blocked read to end once the engine was abandoned",
    )
    .expect("the reader's thread panicked");
    let err = read.expect_err("the read succeeded although its fetch is delayed an hour");
    assert!(err.contains("the test gave up on the engine"), "{err}");
    assert_eq!(
        engine.broken_reason().as_deref(),
        Some("the test gave up on the engine")
    );
    assert!(
        engine.open("/mem/f").is_err(),
        "an abandoned engine opened a file"
    );
}

/// Engines built one after another from one shelf share one prefaulted mapping, and what an
/// earlier engine's reads left in it never reaches a later engine's reader: the second file, whose
/// size is not whole pages and whose first MiB comes in short reads, is read exactly, though
/// every buffer it lands in held the first file's bytes.
#[test]
fn engines_on_one_shelf_share_a_mapping_and_no_earlier_byte_reaches_a_reader() {
    let shelf = ArenaShelf::new();
    let memory = ByteLen::mib(4);
    let build = |noop: &NoopBackend| {
        Engine::builder()
            .backend(Backend::Noop(noop.clone()))
            .memory(memory)
            .readahead_max(ByteLen::kib(512))
            .prefault_from(&shelf)
            .build()
            .unwrap()
    };
    // The first engine fills every buffer of its budget with 0xAA, over and over.
    let first = NoopBackend::new();
    first.insert("/mem/a", vec![0xAA; 16 << 20]);
    let engine = build(&first);
    assert_eq!(shelf.kept_bytes(), 0, "the engine holds the mapping");
    let mut r = engine.open("/mem/a").unwrap();
    let mut got = Vec::new();
    r.read_to_end(&mut got).unwrap();
    assert!(got.len() == 16 << 20 && got.iter().all(|&b| b == 0xAA));
    drop(r);
    drop(engine);
    assert_eq!(
        shelf.kept_bytes(),
        memory.0,
        "put back when the engine went"
    );

    let second = NoopBackend::new();
    let len = (3 << 20) + 12_345;
    let data = content(len, 21);
    second.insert("/mem/b", data.clone());
    second.inject(Fault {
        path: "/mem/b".into(),
        range: 0..1 << 20,
        kind: FaultKind::Short { max_bytes: 1000 },
        times: None,
    });
    let engine = build(&second);
    assert_eq!(shelf.kept_bytes(), 0, "the second engine took it");
    for t in 0..3u64 {
        let mut r = engine.open("/mem/b").unwrap();
        let got = read_all_varied(&mut r, &mut Rng::new(t), 100_000);
        assert_eq!(got.len(), len, "seed {t}");
        assert_eq!(hash(&got), hash(&data), "seed {t}");
    }
    drop(engine);
    assert_eq!(shelf.kept_bytes(), memory.0);
}

/// A file of /sys reports a page (4096 bytes) whatever it holds: a reader of it reads what the
/// file holds and ends there, as at the end of a file truncated while open, on every real
/// backend (README: "or earlier where its bytes end").
#[test]
fn a_file_of_sys_reads_what_it_holds_not_its_size() {
    let Some(path) = [
        "/sys/kernel/profiling",
        "/sys/kernel/uevent_seqnum",
        "/sys/kernel/mm/transparent_hugepage/enabled",
    ]
    .into_iter()
    .find(|p| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.len() > 0)
            && std::fs::read(p)
                .is_ok_and(|b| (b.len() as u64) < std::fs::metadata(p).unwrap().len())
    }) else {
        eprintln!("skipped: no file of /sys here whose size is not what it holds");
        return;
    };
    let want = std::fs::read(path).unwrap();
    for (name, backend) in real_backends("a_file_of_sys_reads_what_it_holds_not_its_size") {
        let engine = Engine::builder()
            .backend(backend)
            .memory(ByteLen::mib(16))
            .build()
            .unwrap();
        let mut r = engine.open(path).unwrap();
        let mut got = Vec::new();
        r.read_to_end(&mut got).unwrap();
        assert_eq!(got, want, "{path} on {name}");
        assert!(
            r.len_bytes() > got.len() as u64,
            "{path}: size {}",
            r.len_bytes()
        );
    }
}
