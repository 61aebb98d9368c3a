//! The policy contract, checked on random but valid input sequences.
//!
//! A small driver keeps a page set and the fetches in flight, as the simulator's layers do, and
//! feeds a policy reads (random and sequential), hints, completions (in any order, some failed),
//! memory pressure, closed streams and the passing of time. Whatever the sequence:
//!
//! - no input makes the policy panic;
//! - every `Fetch` has a fresh id and lies within its file (or the volume), every `Cancel` names a
//!   fetch in flight, every `Release` lies within the file's last page;
//! - when every fetch succeeds and memory is never short, a read answered with `Defer` finds its
//!   bytes once the fetches in flight have completed: a deferral is a promise to fetch (drivers
//!   fall back to demand reads only when a fetch failed or memory refused it);
//! - the stream scheduler holds no more than `M`, and once every fetch is in and the timeout has
//!   passed it keeps no stream.
//!
//! A failure prints the input sequence that replays it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use foresight_core::{
    ByteLen, ByteOffset, ByteRange, Duration, Extent, FetchId, FileId, Instant, StreamId,
};
use foresight_policy::layout::{FileLayout, Striping, VOLUME_FILE};
use foresight_policy::streams::{StreamScheduler, StreamsConfig};
use foresight_policy::{
    build, build_stack, Input, Layout, Output, Policy, PolicyConfig, PAGE_BYTES,
};
use proptest::prelude::*;

const SLOT_BYTES: u64 = 1 << 20;

/// Files of `sizes_bytes` back to back, each starting on a 1 MiB boundary with a 1 MiB gap after.
fn layout(sizes_bytes: &[u64], striped: bool) -> Layout {
    let slot = |s: u64| s.div_ceil(SLOT_BYTES) * SLOT_BYTES + SLOT_BYTES;
    let volume_bytes = sizes_bytes.iter().map(|&s| slot(s)).sum::<u64>() + 8 * SLOT_BYTES;
    let mut l = Layout::new(
        ByteLen(volume_bytes),
        striped.then_some(Striping {
            disks: 3,
            strip_bytes: 64 << 10,
        }),
    );
    let mut at = 0u64;
    for &size in sizes_bytes {
        let extents = if size == 0 {
            vec![]
        } else {
            vec![Extent {
                file_offset: ByteOffset(0),
                volume_offset: ByteOffset(at),
                len: ByteLen(size),
            }]
        };
        l.push_file(FileLayout {
            size: ByteLen(size),
            extents,
            metadata: None,
        });
        at += slot(size);
    }
    l
}

#[derive(Debug, Clone)]
enum Op {
    /// A read at `off_frac / 65536` of the file.
    Read {
        stream: u32,
        file: usize,
        off_frac: u16,
        len_bytes: u32,
    },
    /// A read where the stream's last read ended.
    Next {
        stream: u32,
        len_bytes: u32,
    },
    Hint {
        stream: u32,
        file: usize,
        count: u8,
        seed: u32,
    },
    Complete {
        which: u16,
        ok: bool,
    },
    Pressure {
        available_bytes: u32,
    },
    Close {
        stream: u32,
    },
    Tick {
        ms: u16,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u32..3, 0usize..4, any::<u16>(), 1u32..300_000).prop_map(
            |(stream, file, off_frac, len_bytes)| Op::Read { stream, file, off_frac, len_bytes }
        ),
        8 => (0u32..3, prop_oneof![Just(4096u32), Just(65536), 1u32..300_000])
            .prop_map(|(stream, len_bytes)| Op::Next { stream, len_bytes }),
        1 => (0u32..3, 0usize..4, 1u8..20, any::<u32>())
            .prop_map(|(stream, file, count, seed)| Op::Hint { stream, file, count, seed }),
        4 => (any::<u16>(), prop::bool::weighted(0.9))
            .prop_map(|(which, ok)| Op::Complete { which, ok }),
        1 => (0u32..4_000_000).prop_map(|available_bytes| Op::Pressure { available_bytes }),
        1 => (0u32..3).prop_map(|stream| Op::Close { stream }),
        1 => (0u16..5000).prop_map(|ms| Op::Tick { ms }),
    ]
}

/// Operations under which every fetch succeeds and memory is never short.
fn kind_op() -> impl Strategy<Value = Op> {
    op().prop_filter("no failure, no pressure", |o| {
        !matches!(o, Op::Complete { ok: false, .. } | Op::Pressure { .. })
    })
}

fn sizes() -> impl Strategy<Value = Vec<u64>> {
    prop::collection::vec(
        prop_oneof![
            Just(0u64),
            1u64..10_000,
            1u64..3_000_000,
            Just(PAGE_BYTES),
            Just(3 * 65536)
        ],
        1..4,
    )
}

fn pages(r: ByteRange) -> std::ops::Range<u64> {
    r.start.0 / PAGE_BYTES..r.end().0.div_ceil(PAGE_BYTES)
}

struct Driver {
    sizes_bytes: Vec<u64>,
    layout: Arc<Layout>,
    /// Reads go to the policy in volume bytes (an array-level policy).
    volume_level: bool,
    cached: BTreeSet<(u32, u64)>,
    in_flight: BTreeMap<FetchId, (FileId, ByteRange)>,
    ids_seen: BTreeSet<FetchId>,
    now: Instant,
    deferred: bool,
    /// Where each stream's last read ended.
    pos: BTreeMap<u32, (usize, u64)>,
}

impl Driver {
    fn new(sizes_bytes: &[u64], layout: Arc<Layout>, volume_level: bool) -> Driver {
        Driver {
            sizes_bytes: sizes_bytes.to_vec(),
            layout,
            volume_level,
            cached: BTreeSet::new(),
            in_flight: BTreeMap::new(),
            ids_seen: BTreeSet::new(),
            now: Instant::ZERO,
            deferred: false,
            pos: BTreeMap::new(),
        }
    }

    fn size_bytes(&self, file: FileId) -> u64 {
        if file == VOLUME_FILE {
            self.layout.volume_bytes().0
        } else {
            self.sizes_bytes[file.0 as usize]
        }
    }

    fn drain(&mut self, p: &mut dyn Policy) -> Result<(), TestCaseError> {
        while let Some(o) = p.poll_output() {
            match o {
                Output::Fetch {
                    id, file, range, ..
                } => {
                    prop_assert!(self.ids_seen.insert(id), "fetch id {:?} used twice", id);
                    let size = self.size_bytes(file);
                    prop_assert!(
                        range.end().0 <= size,
                        "fetch {} of {:?} runs past its end at {}",
                        range,
                        file,
                        size
                    );
                    self.in_flight.insert(id, (file, range));
                }
                Output::Cancel { id } => {
                    prop_assert!(
                        self.in_flight.remove(&id).is_some(),
                        "cancel of {:?}, which is not in flight",
                        id
                    );
                }
                Output::Release { file, range } => {
                    let end = self.size_bytes(file).div_ceil(PAGE_BYTES) * PAGE_BYTES;
                    prop_assert!(range.end().0 <= end, "release {} past {}", range, end);
                }
                Output::Defer { .. } => self.deferred = true,
                Output::Evict { .. } => {}
            }
        }
        Ok(())
    }

    fn complete(&mut self, p: &mut dyn Policy, id: FetchId, ok: bool) -> Result<(), TestCaseError> {
        let (file, range) = self.in_flight.remove(&id).expect("in flight");
        if ok {
            self.cached.extend(pages(range).map(|pg| (file.0, pg)));
        }
        p.handle(self.now, Input::Fetched { id, ok });
        self.drain(p)
    }

    fn first_missing(&self, file: FileId, range: ByteRange) -> Option<ByteOffset> {
        let coming: BTreeSet<(u32, u64)> = self
            .in_flight
            .values()
            .flat_map(|(f, r)| pages(*r).map(move |pg| (f.0, pg)))
            .collect();
        pages(range)
            .find(|pg| !self.cached.contains(&(file.0, *pg)) && !coming.contains(&(file.0, *pg)))
            .map(|pg| ByteOffset((pg * PAGE_BYTES).max(range.start.0)))
    }

    fn read(
        &mut self,
        p: &mut dyn Policy,
        stream: u32,
        file: usize,
        start: u64,
        len_bytes: u64,
        strict_defer: bool,
    ) -> Result<(), TestCaseError> {
        let size = self.sizes_bytes[file];
        if start >= size {
            return Ok(());
        }
        let len = len_bytes.clamp(1, size - start);
        self.pos.insert(stream, (file, start + len));
        let (f, range) = if self.volume_level {
            let v = self
                .layout
                .to_volume(FileId(file as u32), ByteOffset(start))
                .expect("inside the file");
            (VOLUME_FILE, ByteRange::new(v.0, len))
        } else {
            (FileId(file as u32), ByteRange::new(start, len))
        };
        self.deferred = false;
        let miss = self.first_missing(f, range);
        p.handle(
            self.now,
            Input::Read {
                stream: StreamId(stream),
                file: f,
                range,
                miss,
            },
        );
        self.drain(p)?;
        if self.deferred && strict_defer {
            // The reader waits: fetches complete, oldest first, until its bytes are in.
            while pages(range).any(|pg| !self.cached.contains(&(f.0, pg))) {
                let Some(&id) = self.in_flight.keys().next() else {
                    return Err(TestCaseError::fail(format!(
                        "read {range} of {f:?} was deferred, and no fetch is left to serve it"
                    )));
                };
                self.complete(p, id, true)?;
            }
        }
        // What is still missing is read on demand.
        self.cached.extend(pages(range).map(|pg| (f.0, pg)));
        Ok(())
    }

    fn run(
        &mut self,
        p: &mut dyn Policy,
        ops: Vec<Op>,
        strict_defer: bool,
    ) -> Result<(), TestCaseError> {
        let files = self.sizes_bytes.len();
        for o in ops {
            match o {
                Op::Read {
                    stream,
                    file,
                    off_frac,
                    len_bytes,
                } => {
                    let file = file % files;
                    let start = self.sizes_bytes[file] * u64::from(off_frac) / 65536;
                    self.read(p, stream, file, start, len_bytes.into(), strict_defer)?;
                }
                Op::Next { stream, len_bytes } => {
                    let (file, at) = self
                        .pos
                        .get(&stream)
                        .copied()
                        .unwrap_or((stream as usize % files, 0));
                    self.read(p, stream, file, at, len_bytes.into(), strict_defer)?;
                }
                Op::Hint {
                    stream,
                    file,
                    count,
                    seed,
                } => {
                    let file = file % files;
                    let size = self.sizes_bytes[file].max(1);
                    let mut x = u64::from(seed);
                    let ranges = (0..count)
                        .map(|_| {
                            x = x
                                .wrapping_mul(6364136223846793005)
                                .wrapping_add(1442695040888963407);
                            ByteRange::new((x >> 20) % size, 1 + (x >> 7) % 200_000)
                        })
                        .collect();
                    p.handle(
                        self.now,
                        Input::Hint {
                            stream: StreamId(stream),
                            file: FileId(file as u32),
                            ranges,
                        },
                    );
                    self.drain(p)?;
                }
                Op::Complete { which, ok } => {
                    if let Some(&id) = self
                        .in_flight
                        .keys()
                        .nth(usize::from(which) % self.in_flight.len().max(1))
                    {
                        self.complete(p, id, ok)?;
                    }
                }
                Op::Pressure { available_bytes } => {
                    p.handle(
                        self.now,
                        Input::MemoryPressure {
                            available: ByteLen(available_bytes.into()),
                        },
                    );
                    self.drain(p)?;
                }
                Op::Close { stream } => {
                    self.pos.remove(&stream);
                    p.handle(
                        self.now,
                        Input::StreamClosed {
                            stream: StreamId(stream),
                        },
                    );
                    self.drain(p)?;
                }
                Op::Tick { ms } => self.advance(p, Duration::from_millis(ms.into()))?,
            }
        }
        Ok(())
    }

    fn advance(&mut self, p: &mut dyn Policy, by: Duration) -> Result<(), TestCaseError> {
        self.now += by;
        while p.poll_timeout().is_some_and(|t| t <= self.now) {
            p.handle_timeout(self.now);
            self.drain(p)?;
        }
        Ok(())
    }

    /// Completes every fetch, oldest first, successfully.
    fn settle(&mut self, p: &mut dyn Policy) -> Result<(), TestCaseError> {
        for _ in 0..100_000 {
            let Some(&id) = self.in_flight.keys().next() else {
                return Ok(());
            };
            self.complete(p, id, true)?;
        }
        Err(TestCaseError::fail("fetches never stop coming"))
    }
}

fn config(name: &str) -> PolicyConfig {
    let mut cfg = PolicyConfig {
        name: name.into(),
        ..PolicyConfig::default()
    };
    cfg.streams.readahead_bytes = 256 << 10;
    cfg.streams.memory_bytes = 2 << 20;
    cfg.directed.memory_bytes = 1 << 20;
    cfg
}

/// Runs `ops` against the file-level policy `name` (built alone, as the engine does).
fn file_level(
    name: &str,
    sizes_bytes: Vec<u64>,
    striped: bool,
    ops: Vec<Op>,
    strict_defer: bool,
) -> Result<(), TestCaseError> {
    let l = Arc::new(layout(&sizes_bytes, striped));
    let mut p = build(&config(name), l.clone()).expect("valid");
    let mut d = Driver::new(&sizes_bytes, l, false);
    d.run(p.as_mut(), ops, strict_defer)?;
    if strict_defer {
        d.settle(p.as_mut())?;
    }
    Ok(())
}

/// Runs `ops` against the array-level policy of `name` (`streams`, `msp+...`), in volume bytes.
fn array_level(
    name: &str,
    sizes_bytes: Vec<u64>,
    striped: bool,
    ops: Vec<Op>,
    strict_defer: bool,
) -> Result<(), TestCaseError> {
    let l = Arc::new(layout(&sizes_bytes, striped));
    let mut stack = build_stack(&config(name), l.clone()).expect("valid");
    let p = stack.array.as_mut().expect("an array policy");
    let mut d = Driver::new(&sizes_bytes, l, true);
    d.run(p.as_mut(), ops, strict_defer)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn seqp_keeps_the_contract(s in sizes(), striped in any::<bool>(), ops in prop::collection::vec(op(), 0..150)) {
        file_level("seqp", s, striped, ops, false)?;
    }

    #[test]
    fn saseqp_keeps_the_contract(s in sizes(), striped in any::<bool>(), ops in prop::collection::vec(op(), 0..150)) {
        file_level("saseqp", s, striped, ops, false)?;
    }

    #[test]
    fn directed_keeps_the_contract(s in sizes(), striped in any::<bool>(), ops in prop::collection::vec(op(), 0..150)) {
        file_level("directed", s, striped, ops, false)?;
    }

    #[test]
    fn directed_serves_every_deferred_read(s in sizes(), striped in any::<bool>(), ops in prop::collection::vec(kind_op(), 0..150)) {
        file_level("directed", s, striped, ops, true)?;
    }

    #[test]
    fn file_streams_keep_the_contract(s in sizes(), ops in prop::collection::vec(op(), 0..150)) {
        file_level("streams", s, false, ops, false)?;
    }

    #[test]
    fn file_streams_serve_every_deferred_read(s in sizes(), ops in prop::collection::vec(kind_op(), 0..150)) {
        file_level("streams", s, false, ops, true)?;
    }

    #[test]
    fn msp_keeps_the_contract(s in sizes(), ops in prop::collection::vec(op(), 0..300)) {
        array_level("msp+seqp", s, true, ops, false)?;
    }

    #[test]
    fn the_stream_scheduler_keeps_the_contract(s in sizes(), striped in any::<bool>(), ops in prop::collection::vec(op(), 0..150)) {
        array_level("streams", s, striped, ops, false)?;
    }

    #[test]
    fn the_stream_scheduler_serves_every_deferred_read_within_m_and_forgets_idle_streams(
        s in sizes(),
        ops in prop::collection::vec(kind_op(), 0..150),
    ) {
        let l = Arc::new(layout(&s, false));
        let cfg: StreamsConfig = config("streams").streams;
        let mut p = StreamScheduler::new(cfg, l.clone()).expect("valid");
        let mut d = Driver::new(&s, l, true);
        for o in ops {
            d.run(&mut p, vec![o], true)?;
            prop_assert!(p.held_bytes() <= cfg.memory_bytes, "{} held, M = {}", p.held_bytes(), cfg.memory_bytes);
        }
        // Everything arrives, nobody reads any more: after the timeout no stream is kept.
        for _ in 0..4 {
            d.settle(&mut p)?;
            d.advance(&mut p, cfg.timeout + cfg.timeout)?;
        }
        prop_assert_eq!(p.stream_count(), 0);
        prop_assert_eq!(p.held_bytes(), 0);
    }
}
