//! Property: whatever the readers do, the bytes held in prefetched, in-flight and demand buffers
//! never exceed the memory budget, and every byte returned is the file's.
//!
//! Each case builds an engine on the in-memory backend with a small budget (8 to 96 pages), a
//! random policy (any the engine runs) and window, a few files of random sizes, and some
//! completions delayed; then runs a random interleaving of reads (some with a read deadline) and
//! seeks by several readers, checking after every step the budget (the peak, which covers every
//! instant in between), the engine's own accounting, and the bytes.

mod common;

use std::io::{Read, Seek, SeekFrom};
use std::time::Duration;

use common::content;
use foresight_core::ByteLen;
use foresight_engine::{Backend, Engine, Fault, FaultKind, NoopBackend};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Read {
        reader: usize,
        len: usize,
    },
    Seek {
        reader: usize,
        to_permille: u64,
    },
    /// A read with a deadline this many microseconds away (0: already passed).
    Hurried {
        reader: usize,
        len: usize,
        deadline_us: u64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0usize..4, 1usize..200_000).prop_map(|(reader, len)| Op::Read { reader, len }),
        1 => (0usize..4, 0u64..1100).prop_map(|(reader, to_permille)| Op::Seek { reader, to_permille }),
        1 => (0usize..4, 1usize..200_000, prop::sample::select(vec![0u64, 50, 400]))
            .prop_map(|(reader, len, deadline_us)| Op::Hurried { reader, len, deadline_us }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn the_memory_budget_is_never_exceeded(
        budget_pages in 8u64..96,
        policy in prop::sample::select(vec!["none", "seqp", "saseqp", "streams", "directed", "tip"]),
        ra_pages in 1u64..64,
        sizes in prop::collection::vec(0usize..400_000, 1..4),
        delayed in any::<bool>(),
        prefault in any::<bool>(),
        ops in prop::collection::vec(op(), 1..60),
    ) {
        let case = format!("budget_pages {budget_pages} policy {policy} ra_pages {ra_pages} sizes {sizes:?} delayed {delayed} prefault {prefault} ops {ops:?}");
        let noop = NoopBackend::new();
        let files: Vec<Vec<u8>> = sizes.iter().enumerate().map(|(i, &n)| content(n, i as u64)).collect();
        for (i, f) in files.iter().enumerate() {
            noop.insert(format!("/mem/{i}"), f.clone());
        }
        if delayed {
            noop.inject(Fault {
                path: "/mem/0".into(),
                range: 0..u64::MAX,
                kind: FaultKind::Delay(Duration::from_micros(300)),
                times: Some(20),
            });
        }
        let limit = budget_pages * 4096;
        let engine = Engine::builder()
            .backend(Backend::Noop(noop))
            .memory(ByteLen(limit))
            .policy(policy)
            .readahead_max(ByteLen(ra_pages * 4096))
            .queue_depth(4)
            .prefault(prefault)
            .build()
            .unwrap();
        // Dropped when the case ends, however it ends (a failed assertion returns early).
        let _watchdog = common::watchdog(&engine, case, Duration::from_secs(20));
        let mut readers: Vec<_> = (0..4)
            .map(|i| engine.open(format!("/mem/{}", i % files.len())).unwrap())
            .collect();
        let mut buf = vec![0u8; 200_000];
        for op in ops {
            match op {
                Op::Read { reader, len } => {
                    let r = &mut readers[reader];
                    let data = &files[reader % files.len()];
                    let pos = r.position() as usize;
                    let n = r.read(&mut buf[..len]).unwrap();
                    prop_assert_eq!(n, len.min(data.len().saturating_sub(pos)));
                    if n > 0 {
                        prop_assert!(buf[..n] == data[pos..pos + n], "bytes at {}", pos);
                    }
                }
                Op::Hurried { reader, len, deadline_us } => {
                    let r = &mut readers[reader];
                    let data = &files[reader % files.len()];
                    let pos = r.position() as usize;
                    let at = std::time::Instant::now() + Duration::from_micros(deadline_us);
                    r.set_read_deadline(Some(at));
                    let got = r.read(&mut buf[..len]);
                    r.set_read_deadline(None);
                    let want = len.min(data.len().saturating_sub(pos));
                    match got {
                        Ok(n) => {
                            prop_assert!(n <= want && (n > 0 || want == 0), "{} of {}", n, want);
                            if n > 0 {
                                prop_assert!(buf[..n] == data[pos..pos + n], "bytes at {}", pos);
                            }
                        }
                        Err(e) => prop_assert_eq!(e.kind(), std::io::ErrorKind::TimedOut),
                    }
                }
                Op::Seek { reader, to_permille } => {
                    let r = &mut readers[reader];
                    let size = files[reader % files.len()].len() as u64;
                    r.seek(SeekFrom::Start(size * to_permille / 1000)).unwrap();
                }
            }
            let s = engine.stats();
            prop_assert!(s.memory_peak_bytes <= limit, "peak {} over {}", s.memory_peak_bytes, limit);
            prop_assert!(s.memory_used_bytes <= limit);
            engine.check_invariants();
        }
    }
}
