//! Property: whatever the readers do, the bytes held in prefetched, in-flight and demand buffers
//! never exceed the memory budget, and every byte returned is the file's.
//!
//! Each case builds an engine on the in-memory backend with a small budget (8 to 96 pages), a
//! random policy (any the engine runs) and window, a few files of random sizes, and some
//! completions delayed; then runs a random interleaving of reads (some with a read deadline) and
//! seeks by several readers, checking after every step the budget (the peak, which covers every
//! instant in between), the engine's own accounting, and the bytes.
//!
//! A second property covers releases of parts of cached chunks (what `directed` does with the gaps
//! an infill fetch read, and with each read it has used): a policy fetches a file and then releases
//! random ranges of it, and a reader that had read a random prefix reads the rest, which must be
//! the file's bytes, with the budget and the engine's accounting checked as before. With the pool
//! prefaulted every buffer is a piece of one mapping, so those releases cut the chunks' own
//! buffers; without, small chunks are ordinary memory and their kept pages are copied.

mod common;

use std::collections::VecDeque;
use std::io::{Read, Seek, SeekFrom};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::content;
use foresight_core::{ByteLen, ByteRange, FetchId, FileId};
use foresight_engine::{Backend, Engine, Fault, FaultKind, NoopBackend};
use foresight_policy::{Input, Output, Policy, Tier};
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

    #[test]
    fn releases_of_parts_of_chunks_keep_the_other_bytes(
        size in 1usize..3_000_000,
        max_io_pages in prop::sample::select(vec![16u64, 128, 256]),
        prefault in any::<bool>(),
        prefix_permille in 0usize..1000,
        cuts in prop::collection::vec((0u64..1000, 1u64..300_000), 1..12),
        reads in prop::collection::vec(1usize..200_000, 1..40),
    ) {
        let case = format!("size {size} max_io_pages {max_io_pages} prefault {prefault} prefix_permille {prefix_permille} cuts {cuts:?} reads {reads:?}");
        let noop = NoopBackend::new();
        let data = content(size, 7);
        noop.insert("/mem/f", data.clone());
        let released = Arc::new(AtomicBool::new(false));
        let flag = released.clone();
        let cuts: Vec<ByteRange> = cuts
            .iter()
            .map(|&(at_permille, len)| ByteRange::new(size as u64 * at_permille / 1000, len))
            .collect();
        let limit = 8u64 << 20;
        let engine = Engine::builder()
            .backend(Backend::Noop(noop))
            .memory(ByteLen(limit))
            .max_io(ByteLen(max_io_pages * 4096))
            .queue_depth(4)
            .prefault(prefault)
            .wrap_policy(Box::new(move |_| {
                Box::new(FetchThenCut {
                    cuts: cuts.clone(),
                    fetch: None,
                    released: flag.clone(),
                    out: VecDeque::new(),
                })
            }))
            .build()
            .unwrap();
        let _watchdog = common::watchdog(&engine, case, Duration::from_secs(20));
        let mut r = engine.open("/mem/f").unwrap();
        let mut buf = vec![0u8; 200_000];
        // Read a prefix on demand, so that some chunks are partly read when the cuts come.
        let prefix = size * prefix_permille / 1000;
        let mut pos = 0;
        while pos < prefix {
            let n = r.read(&mut buf[..(prefix - pos).min(64 << 10)]).unwrap();
            prop_assert!(n > 0);
            prop_assert!(buf[..n] == data[pos..pos + n], "bytes at {}", pos);
            pos += n;
        }
        r.hint(&[ByteRange::new(0, size as u64)]).unwrap();
        common::wait_for_engine(&engine, "the fetch to complete and be released", || {
            released.load(Ordering::Acquire)
        });
        engine.check_invariants();
        for len in reads.iter().cycle() {
            let n = r.read(&mut buf[..*len]).unwrap();
            prop_assert_eq!(n, (*len).min(size - pos));
            if n == 0 {
                break;
            }
            prop_assert!(buf[..n] == data[pos..pos + n], "bytes at {}", pos);
            pos += n;
            engine.check_invariants();
        }
        prop_assert_eq!(pos, size);
        let s = engine.stats();
        prop_assert!(s.memory_peak_bytes <= limit, "peak {} over {}", s.memory_peak_bytes, limit);
        drop(r);
        engine.check_invariants();
    }
}

/// Fetches the first hinted range, and when it has arrived releases `cuts`, one after another.
struct FetchThenCut {
    cuts: Vec<ByteRange>,
    fetch: Option<(FetchId, FileId)>,
    /// Set once the last release has been handed to the engine (which carries it out under the
    /// same lock, before any read can look).
    released: Arc<AtomicBool>,
    out: VecDeque<Output>,
}

impl Policy for FetchThenCut {
    fn name(&self) -> &str {
        "fetch-then-cut"
    }
    fn handle(&mut self, _now: foresight_core::Instant, input: Input) {
        match input {
            Input::Hint { file, ranges, .. } if self.fetch.is_none() => {
                if let Some(&range) = ranges.first() {
                    let id = FetchId(1);
                    self.fetch = Some((id, file));
                    self.out.push_back(Output::Fetch {
                        id,
                        file,
                        range,
                        into: Tier::Memory,
                    });
                }
            }
            Input::Fetched { id, .. } if self.fetch.is_some_and(|(f, _)| f == id) => {
                let file = self.fetch.expect("checked").1;
                for &range in &self.cuts {
                    self.out.push_back(Output::Release { file, range });
                }
            }
            _ => {}
        }
    }
    fn poll_output(&mut self) -> Option<Output> {
        let o = self.out.pop_front();
        if matches!(o, Some(Output::Release { .. })) && self.out.is_empty() {
            self.released.store(true, Ordering::Release);
        }
        o
    }
}
