//! The stream scheduler (paper 001_9c47c4c84914efc3.txt) in the real engine: readers of
//! sequential files get every byte right, the scheduler's R-byte reads serve them (their
//! requests wait for their stream's turn instead of going to the device on demand), and the
//! buffers stay within M.

mod common;

use std::io::Read;
use std::sync::Arc;
use std::time::Duration;

use common::{content, hash, join_within, recv_within, wait_for_engine};
use foresight_core::{ByteLen, Duration as SimDuration};
use foresight_engine::{Backend, Engine, Fault, FaultKind, NoopBackend};
use foresight_policy::streams::StreamsConfig;
use foresight_policy::PolicyConfig;

fn engine(noop: NoopBackend) -> Engine {
    let cfg = PolicyConfig {
        name: "streams".into(),
        streams: StreamsConfig {
            readahead_bytes: 1 << 20,
            memory_bytes: 4 << 20,
            timeout: SimDuration::from_secs(1),
            ..StreamsConfig::default()
        },
        ..PolicyConfig::default()
    };
    Engine::builder()
        .backend(Backend::Noop(noop))
        .memory(ByteLen::mib(64))
        .policy_config(cfg)
        .build()
        .unwrap()
}

#[test]
fn sequential_readers_are_served_by_the_scheduler_and_every_byte_is_right() {
    let noop = NoopBackend::new();
    let files: Vec<Vec<u8>> = (0..8)
        .map(|i| content(3 << 20 | (i * 4097), 40 + i as u64))
        .collect();
    for (i, f) in files.iter().enumerate() {
        noop.insert(format!("/mem/s{i}"), f.clone());
        // Slow completions, so that requests really queue behind the dispatch set.
        noop.inject(Fault {
            path: format!("/mem/s{i}").into(),
            range: 0..u64::MAX,
            kind: FaultKind::Delay(Duration::from_micros(300)),
            times: None,
        });
    }
    let engine = engine(noop);
    let files = Arc::new(files);
    let handles: Vec<_> = (0..files.len())
        .map(|i| {
            let engine = engine.clone();
            let files = files.clone();
            std::thread::spawn(move || {
                let mut r = engine.open(format!("/mem/s{i}")).unwrap();
                let mut got = Vec::new();
                let mut buf = vec![0u8; 65536];
                loop {
                    let n = r.read(&mut buf).unwrap();
                    if n == 0 {
                        break;
                    }
                    got.extend_from_slice(&buf[..n]);
                }
                assert_eq!(got.len(), files[i].len(), "reader {i} length");
                assert_eq!(hash(&got), hash(&files[i]), "reader {i} bytes");
            })
        })
        .collect();
    for (i, h) in handles.into_iter().enumerate() {
        join_within(h, &format!("reader {i} to finish")).unwrap();
    }
    let s = engine.stats();
    eprintln!(
        "fetches {} demand {} of {} bytes, peak {}",
        s.fetches, s.demand_bytes, s.app_bytes, s.memory_peak_bytes
    );
    engine.check_invariants();
    // Each file is 3 MiB and more: after the two demand reads that make a stream, R = 1 MiB reads
    // of the scheduler bring the rest.
    assert!(
        s.fetches >= 8 * 2,
        "the scheduler fetched {} times",
        s.fetches
    );
    assert!(
        s.demand_bytes < s.app_bytes / 4,
        "{} of {} bytes were read on demand",
        s.demand_bytes,
        s.app_bytes
    );
    assert!(s.memory_peak_bytes <= 64 << 20);
}

/// A deferred read whose fetch failed waits for nothing the scheduler will send again (it counts
/// those bytes as fetched). It must read them on demand at once, not wait until every other
/// stream's fetches have finished: here another stream's fetch takes a minute.
#[test]
fn a_deferred_read_whose_fetch_failed_does_not_wait_for_other_streams() {
    let noop = NoopBackend::new();
    let len = 1 << 20;
    let slow = content(len, 60);
    let failing = content(len, 61);
    noop.insert("/mem/slow", slow);
    noop.insert("/mem/failing", failing.clone());
    // The slow stream's first scheduled read (past its two demand reads) takes a minute.
    noop.inject(Fault {
        path: "/mem/slow".into(),
        range: (64 << 10)..u64::MAX,
        kind: FaultKind::Delay(Duration::from_secs(60)),
        times: None,
    });
    // The failing stream's first scheduled read fails once.
    noop.inject(Fault {
        path: "/mem/failing".into(),
        range: (64 << 10)..(64 << 10) + 1,
        kind: FaultKind::Eio,
        times: Some(1),
    });
    let cfg = PolicyConfig {
        name: "streams".into(),
        streams: StreamsConfig {
            readahead_bytes: 256 << 10,
            memory_bytes: 4 << 20,
            timeout: SimDuration::from_secs(30),
            ..StreamsConfig::default()
        },
        ..PolicyConfig::default()
    };
    let engine = Engine::builder()
        .backend(Backend::Noop(noop))
        .memory(ByteLen::mib(64))
        .policy_config(cfg)
        .build()
        .unwrap();
    // Left blocked on its minute-long fetch when the test ends.
    let e = engine.clone();
    std::thread::spawn(move || {
        let mut r = e.open("/mem/slow").unwrap();
        let mut buf = vec![0u8; 64 << 10];
        loop {
            if r.read(&mut buf).unwrap() == 0 {
                break;
            }
        }
    });
    wait_for_engine(&engine, "a fetch for the slow stream", || {
        engine.stats().fetches > 0
    });
    let (tx, rx) = std::sync::mpsc::channel();
    let e = engine.clone();
    std::thread::spawn(move || {
        let mut r = e.open("/mem/failing").unwrap();
        // Reads of 64 KiB: the first two make the stream, the second waits for its turn.
        let mut got = vec![0u8; 256 << 10];
        for part in got.chunks_mut(64 << 10) {
            r.read_exact(part).unwrap();
        }
        tx.send(got).unwrap();
    });
    let got = recv_within(
        &rx,
        &engine,
        "the deferred read, which must not wait for another stream's fetch",
    );
    assert_eq!(hash(&got), hash(&failing[..got.len()]));
    assert!(engine.stats().io_errors >= 1, "the fault fired");
}
