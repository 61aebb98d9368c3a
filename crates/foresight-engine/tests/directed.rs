//! Property: under the `directed` policy (paper 003_eb9cef22f2823582.txt), every byte the
//! application reads equals the file's byte, including the bytes that infill brought in.
//!
//! Each case writes a few files of random sizes to the in-memory backend, discloses a random list of
//! reads (random files, lengths and gaps, some overlapping, some repeated) whose gaps are small
//! enough that infill reads through them, and then reads the list in order through the engine's
//! `Read + Seek` readers, sprinkling in reads the application never disclosed, some of which fall
//! inside infilled gaps. Every returned byte is compared with the file and the memory budget is
//! checked after every step. A fixed case below shows that infill really serves gap bytes, so the
//! property does not pass for want of infill.

mod common;

use std::io::{Read, Seek, SeekFrom};
use std::time::Duration;

use common::content;
use foresight_core::{ByteLen, ByteRange};
use foresight_engine::{Backend, Engine, Fault, FaultKind, NoopBackend};
use foresight_policy::directed::{DirectedConfig, Infill};
use foresight_policy::PolicyConfig;
use proptest::prelude::*;

/// One application step: a disclosed read (by index into the hint list) or an undisclosed one.
#[derive(Clone, Debug)]
enum Step {
    Hinted,
    Extra {
        file: usize,
        at_permille: u64,
        len: usize,
    },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => Just(Step::Hinted),
        1 => (0usize..3, 0u64..1000, 1usize..20_000)
            .prop_map(|(file, at_permille, len)| Step::Extra { file, at_permille, len }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn every_byte_read_under_directed_is_the_files_byte(
        sizes in prop::collection::vec(64_000usize..600_000, 1..4),
        reads in prop::collection::vec((0usize..3, 0u64..1000, 1usize..24_000), 8..80),
        steps in prop::collection::vec(step(), 8..120),
        infill_kib in prop_oneof![Just(0u64), 8u64..128],
        window_pages in 64u64..256,
        delayed in any::<bool>(),
    ) {
        let case = format!(
            "sizes {sizes:?} reads {reads:?} steps {steps:?} infill_kib {infill_kib} \
             window_pages {window_pages} delayed {delayed}"
        );
        let noop = NoopBackend::new();
        let files: Vec<Vec<u8>> =
            sizes.iter().enumerate().map(|(i, &n)| content(n, 100 + i as u64)).collect();
        for (i, f) in files.iter().enumerate() {
            noop.insert(format!("/mem/d{i}"), f.clone());
        }
        if delayed {
            noop.inject(Fault {
                path: "/mem/d0".into(),
                range: 0..u64::MAX,
                kind: FaultKind::Delay(Duration::from_micros(200)),
                times: Some(30),
            });
        }
        // The hinted list: reads clipped to their file, in the order the application will issue them.
        let hinted: Vec<(usize, ByteRange)> = reads
            .iter()
            .map(|&(f, at, len)| {
                let f = f % files.len();
                let size = files[f].len() as u64;
                let start = size * at / 1000;
                (f, ByteRange::new(start, (len as u64).min(size - start)))
            })
            .collect();
        let window_bytes = window_pages * 4096;
        let cfg = PolicyConfig {
            name: "directed".into(),
            directed: DirectedConfig {
                memory_bytes: window_bytes,
                infill_max: Infill::Bytes(infill_kib << 10),
                contention: true,
                ..DirectedConfig::default()
            },
            ..PolicyConfig::default()
        };
        let budget = window_bytes + (1 << 20);
        let engine = Engine::builder()
            .backend(Backend::Noop(noop))
            .memory(ByteLen(budget))
            .policy_config(cfg)
            .queue_depth(4)
            .build()
            .unwrap();
        // Dropped when the case ends, however it ends (a failed assertion returns early).
        let _watchdog = common::watchdog(&engine, case, Duration::from_secs(20));
        // One reader per file; the application discloses each file's reads through its reader, in
        // the order it will issue them.
        let mut readers: Vec<_> =
            (0..files.len()).map(|i| engine.open(format!("/mem/d{i}")).unwrap()).collect();
        for (f, r) in readers.iter().enumerate() {
            let mine: Vec<ByteRange> =
                hinted.iter().filter(|(g, _)| *g == f).map(|&(_, r)| r).collect();
            if !mine.is_empty() {
                r.hint(&mine).unwrap();
            }
        }
        let mut next = 0;
        let mut buf = vec![0u8; 24_000];
        let mut check = |f: usize, start: u64, len: usize, readers: &mut Vec<foresight_engine::Reader>| {
            let r = &mut readers[f];
            let data = &files[f];
            r.seek(SeekFrom::Start(start)).unwrap();
            let mut got = 0;
            while got < len {
                let n = r.read(&mut buf[got..len]).unwrap();
                if n == 0 {
                    break;
                }
                got += n;
            }
            let s = start as usize;
            prop_assert_eq!(got, len.min(data.len().saturating_sub(s)), "length at {} of file {}", s, f);
            prop_assert!(buf[..got] == data[s..s + got], "bytes at {} of file {}", s, f);
            Ok(())
        };
        // The disclosed reads, in order, with the undisclosed ones interleaved; then whatever
        // disclosed reads the steps did not reach.
        for st in steps.iter().chain(std::iter::repeat(&Step::Hinted)) {
            match *st {
                Step::Hinted => {
                    let Some(&(f, r)) = hinted.get(next) else { break };
                    next += 1;
                    check(f, r.start.0, r.len.0 as usize, &mut readers)?;
                }
                Step::Extra { file, at_permille, len } => {
                    let f = file % files.len();
                    let start = files[f].len() as u64 * at_permille / 1000;
                    check(f, start, len, &mut readers)?;
                }
            }
            let s = engine.stats();
            prop_assert!(s.memory_peak_bytes <= budget, "peak {} over {}", s.memory_peak_bytes, budget);
            engine.check_invariants();
        }
    }
}

/// Infill, seen from the application: three disclosed reads with 4 KiB gaps between them are
/// fetched as one sweep, and the disclosed reads come from it, with the file's bytes. The policy
/// releases the undisclosed gap bytes as soon as the sweep lands, and the engine frees them (as
/// the simulator's page cache drops released pages), so a read of a gap goes to the device again
/// and gets the file's bytes.
#[test]
fn gap_bytes_brought_in_by_infill_are_the_files_bytes() {
    let noop = NoopBackend::new();
    let data = content(1 << 20, 7);
    noop.insert("/mem/g", data.clone());
    let cfg = PolicyConfig {
        name: "directed".into(),
        directed: DirectedConfig {
            memory_bytes: 1 << 20,
            infill_max: Infill::Bytes(64 << 10),
            ..DirectedConfig::default()
        },
        ..PolicyConfig::default()
    };
    let engine = Engine::builder()
        .backend(Backend::Noop(noop))
        .memory(ByteLen(4 << 20))
        .policy_config(cfg)
        .build()
        .unwrap();
    let mut r = engine.open("/mem/g").unwrap();
    let reads = [
        ByteRange::new(0, 4096),
        ByteRange::new(8192, 4096),
        ByteRange::new(16384, 4096),
    ];
    r.hint(&reads).unwrap();
    let mut buf = vec![0u8; 4096];
    r.seek(SeekFrom::Start(0)).unwrap();
    r.read_exact(&mut buf).unwrap();
    assert_eq!(buf[..], data[..4096]);
    let after_first = engine.stats();
    assert_eq!(
        after_first.device_bytes, 20480,
        "one sweep over the three reads and their gaps"
    );
    for range in &reads[1..] {
        r.seek(SeekFrom::Start(range.start.0)).unwrap();
        r.read_exact(&mut buf).unwrap();
        assert_eq!(
            buf[..],
            data[range.start.0 as usize..range.end().0 as usize]
        );
    }
    let hinted = engine.stats();
    assert_eq!(
        hinted.device_reads, after_first.device_reads,
        "the disclosed reads came from the sweep"
    );
    for gap in [4096u64, 12288] {
        r.seek(SeekFrom::Start(gap)).unwrap();
        r.read_exact(&mut buf).unwrap();
        assert_eq!(
            buf[..],
            data[gap as usize..gap as usize + 4096],
            "gap at {gap}"
        );
    }
    let end = engine.stats();
    assert_eq!(
        end.device_bytes,
        20480 + 2 * 4096,
        "the released gaps were read again"
    );
    engine.check_invariants();
}

/// A fetch that memory refuses whole is memory pressure, and the policy hears it: four disclosed
/// 1 MiB reads under a 4 MiB budget, of which prefetches may use 3 MiB, so the fourth fetch gets
/// nothing. The engine completed that fetch at once (`ok: false`) and then, with the completion
/// handled first, forgot the shortage, so the policy was never told memory was short unless some
/// other fetch was cut short in part; the simulator tells it either way.
#[test]
fn a_fetch_refused_whole_is_reported_as_memory_pressure() {
    let noop = NoopBackend::new();
    noop.insert("/mem/p", content(4 << 20, 3));
    let engine = Engine::builder()
        .backend(Backend::Noop(noop))
        .memory(ByteLen::mib(4))
        .policy("directed")
        .build()
        .unwrap();
    let r = engine.open("/mem/p").unwrap();
    let reads: Vec<ByteRange> = (0..4).map(|i| ByteRange::new(i << 20, 1 << 20)).collect();
    r.hint(&reads).unwrap();
    let s = engine.stats();
    assert_eq!(s.fetches, 4, "{s:?}");
    assert_eq!(s.memory_pressure_events, 1, "{s:?}");
    engine.check_invariants();
}
