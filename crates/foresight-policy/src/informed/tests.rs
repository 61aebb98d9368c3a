//! Unit tests of the informed policies against a tiny constant-latency driver written here, so the
//! policy crate checks its own decisions without the simulator.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::*;

const BLOCK: u64 = 1 << 20;

/// Runs `policy` over `n` hinted blocks with constant per-block times and returns (elapsed ns,
/// order in which the application got the blocks, peak copies per level).
fn drive(policy: &mut Informed, cfg: &InformedConfig, n: usize) -> (u64, Vec<usize>, Vec<u64>) {
    let climb = |src: u8, into: u8| -> u64 {
        (into + 1..=src)
            .map(|k| cfg.levels[k as usize - 1].copy_up.0)
            .sum()
    };
    let (elapsed, order, peak, _) = drive_with(policy, cfg, n, climb);
    (elapsed, order, peak)
}

/// [`drive`] with copies from level `src` into level `into` taking `copy_ns(src, into)`; also
/// returns the copies each level (index = level) still holds at the end.
fn drive_with(
    policy: &mut Informed,
    cfg: &InformedConfig,
    n: usize,
    copy_ns: impl Fn(u8, u8) -> u64,
) -> (u64, Vec<usize>, Vec<u64>, Vec<u64>) {
    let levels = cfg.levels.len();
    let file = FileId(0);
    let stream = StreamId(0);
    let ranges: Vec<ByteRange> = (0..n as u64)
        .map(|b| ByteRange::new(b * BLOCK, BLOCK))
        .collect();
    // Where each block has copies (levels 1..levels-1); the home level always has it.
    let mut copies: Vec<BTreeSet<u8>> = vec![BTreeSet::new(); n];
    let mut held = vec![0u64; levels];
    let mut peak = vec![0u64; levels];
    let mut in_memory = vec![false; n];
    // (time, seq) -> (fetch id, block, into)
    let mut events: BTreeMap<(u64, u64), (FetchId, usize, Tier)> = BTreeMap::new();
    let mut seq = 0;
    let mut now = 0u64;
    let mut order = vec![];
    let nearest = |copies: &Vec<BTreeSet<u8>>, b: usize| -> u8 {
        copies[b].iter().next().copied().unwrap_or(levels as u8)
    };
    policy.handle(
        Instant(0),
        Input::Hint {
            stream,
            file,
            ranges: ranges.clone(),
        },
    );
    let mut next = 0usize;
    let mut busy_until = 0u64;
    loop {
        while let Some(o) = policy.poll_output() {
            match o {
                Output::Fetch {
                    id, range, into, ..
                } => {
                    let b = (range.start.0 / BLOCK) as usize;
                    let src = nearest(&copies, b);
                    let t = match into {
                        Tier::Memory => cfg.levels[src as usize - 1].read_to_memory.0,
                        Tier::Level(j) => {
                            assert!(src > j, "copy of block {b} into level {j} from level {src}");
                            held[j as usize] += 1;
                            peak[j as usize] = peak[j as usize].max(held[j as usize]);
                            if let Some(c) = cfg.levels[j as usize - 1].capacity_blocks {
                                assert!(held[j as usize] <= c, "level {j} over capacity");
                            }
                            copy_ns(src, j)
                        }
                    };
                    seq += 1;
                    events.insert((now + t, seq), (id, b, into));
                }
                Output::Evict { range, tier, .. } => {
                    let b = (range.start.0 / BLOCK) as usize;
                    let Tier::Level(j) = tier else {
                        panic!("evict from memory")
                    };
                    if copies[b].remove(&j) {
                        held[j as usize] -= 1;
                    }
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        // IPO and IPODS: TIP's reads and the copies together stay within max_bw (eq. 5.1).
        if policy.mode == Mode::Chain {
            let bw = cfg.max_bw.expect("validated") as usize;
            assert!(
                events.len() <= bw,
                "{} reads in flight, max_bw {bw}",
                events.len()
            );
        }
        // Copies still on their way when the application is done land too, as in the simulator.
        if next == n && events.is_empty() {
            break;
        }
        // The application takes block `next` once it is in memory and it is free.
        if next < n && in_memory[next] && busy_until <= now {
            order.push(next);
            policy.handle(
                Instant(now),
                Input::Read {
                    stream,
                    file,
                    range: ranges[next],
                    miss: None,
                },
            );
            next += 1;
            busy_until = now + cfg.consume.0;
            continue;
        }
        let wake = if next < n && in_memory[next] {
            busy_until
        } else {
            u64::MAX
        };
        let (&(t, s), _) = match events.iter().next() {
            Some(e) if e.0 .0 <= wake => e,
            _ => {
                assert!(
                    next < n && wake != u64::MAX,
                    "block {next} was never fetched"
                );
                now = wake;
                continue;
            }
        };
        let (id, b, into) = events.remove(&(t, s)).expect("present");
        now = t;
        match into {
            Tier::Memory => in_memory[b] = true,
            Tier::Level(j) => {
                copies[b].insert(j);
            }
        }
        policy.handle(Instant(now), Input::Fetched { id, ok: true });
    }
    (busy_until, order, peak, held)
}

/// Block `b` of the file, as a byte range.
fn block(b: u64) -> ByteRange {
    ByteRange::new(b * BLOCK, BLOCK)
}

/// Stream 0 reads block `b` of file 0 at `at`, missing it or not.
fn read_block(p: &mut Informed, at: u64, b: u64, miss: bool) {
    p.handle(
        Instant(at),
        Input::Read {
            stream: StreamId(0),
            file: FileId(0),
            range: block(b),
            miss: miss.then_some(block(b).start),
        },
    );
}

fn ten_mb(x: u32) -> InformedConfig {
    InformedConfig {
        x_cache: XCache::Fixed(x),
        ..InformedConfig::default()
    }
}

#[test]
fn tip_alone_takes_n_times_t_disk_over_x() {
    // Table 7.3 without iPipe: N x max(T_hdd / X, step), plus the first read when the step bounds.
    for (x, per_block) in [(1u64, 120_000_000u64), (3, 40_000_000), (63, 1_920_000)] {
        let cfg = ten_mb(x as u32);
        let mut p = Informed::new("tip", &cfg).unwrap();
        let (elapsed, order, _) = drive(&mut p, &cfg, 600);
        assert_eq!(order, (0..600).collect::<Vec<_>>());
        let model = 600 * per_block + if x == 63 { 120_000_000 } else { 0 };
        let err = elapsed.abs_diff(model) as f64 / model as f64;
        assert!(err < 0.01, "x {x}: {elapsed} vs {model}");
    }
}

#[test]
fn a_block_whose_fetch_was_refused_is_still_taken_and_tip_goes_on() {
    // A driver that sends one `Read` per application read (the engine): TIP's fetch of block 1
    // comes back cut short, so that read misses and the driver reads the block on demand.
    let cfg = ten_mb(2);
    let mut p = Informed::new("tip", &cfg).unwrap();
    let fetches = |p: &mut Informed| -> Vec<(FetchId, u64)> {
        std::iter::from_fn(|| p.poll_output())
            .filter_map(|o| match o {
                Output::Fetch { id, range, .. } => Some((id, range.start.0 / BLOCK)),
                _ => None,
            })
            .collect()
    };
    let read = |p: &mut Informed, b: u64, miss: bool| read_block(p, 2, b, miss);
    p.handle(
        Instant(0),
        Input::Hint {
            stream: StreamId(0),
            file: FileId(0),
            ranges: (0..4).map(block).collect(),
        },
    );
    let first = fetches(&mut p);
    assert_eq!(first.iter().map(|f| f.1).collect::<Vec<_>>(), vec![0, 1]);
    p.handle(
        Instant(1),
        Input::Fetched {
            id: first[0].0,
            ok: true,
        },
    );
    p.handle(
        Instant(1),
        Input::Fetched {
            id: first[1].0,
            ok: false,
        },
    );
    read(&mut p, 0, false);
    assert_eq!(
        fetches(&mut p).iter().map(|f| f.1).collect::<Vec<_>>(),
        vec![2]
    );
    // Block 1 is read on demand; its buffer is free all the same, for block 3.
    read(&mut p, 1, true);
    assert_eq!(
        fetches(&mut p).iter().map(|f| f.1).collect::<Vec<_>>(),
        vec![3]
    );
    read(&mut p, 2, false);
    read(&mut p, 3, false);
    assert_eq!(p.poll_output(), None);
}

#[test]
fn a_new_stream_given_the_closed_hinted_streams_id_is_not_taken_for_it() {
    let cfg = ten_mb(3);
    let mut p = Informed::new("tip", &cfg).unwrap();
    p.handle(
        Instant(0),
        Input::Hint {
            stream: StreamId(0),
            file: FileId(0),
            ranges: (0..10).map(block).collect(),
        },
    );
    let fetched: Vec<FetchId> = std::iter::from_fn(|| p.poll_output())
        .filter_map(|o| match o {
            Output::Fetch { id, .. } => Some(id),
            _ => None,
        })
        .collect();
    assert_eq!(fetched.len(), 3, "X_cache blocks ahead");
    for id in fetched {
        p.handle(Instant(1), Input::Fetched { id, ok: true });
    }
    p.handle(
        Instant(2),
        Input::StreamClosed {
            stream: StreamId(0),
        },
    );
    // A new stream with the same id reads the first block: it is not the hinted application
    // taking its block, so TIP fetches nothing further for it.
    read_block(&mut p, 3, 0, false);
    assert_eq!(p.poll_output(), None);
    // Nor does a hint from it start a second list.
    p.handle(
        Instant(4),
        Input::Hint {
            stream: StreamId(0),
            file: FileId(0),
            ranges: vec![block(20)],
        },
    );
    assert_eq!(p.poll_output(), None);
}

#[test]
fn ipipe_serves_nearly_everything_from_the_upper_level() {
    let cfg = InformedConfig {
        max_bw: None,
        ..ten_mb(1)
    };
    let mut p = Informed::new("ipipe", &cfg).unwrap();
    assert_eq!(p.plan(), vec![(2, 4, 0)]);
    let (elapsed, _, _) = drive(&mut p, &cfg, 1000);
    let st = p.stats();
    assert!(st.tip_reads_by_level[0] >= 995, "{st:?}");
    // About N x T_ss (Table 7.3: 607.6 s for 11,686 blocks, i.e. 52 ms each).
    let per_block = elapsed as f64 / 1000.0 / 1e6;
    assert!((per_block - 52.0).abs() < 0.5, "{per_block} ms per block");
}

#[test]
fn the_example_of_section_4_4_4_pipelines_accesses_7_to_15() {
    // Section 4.4.4 (Fig. 4.4): T_hdd-ss = 8, T_ss-cache = 4, T_hdd-cache = 5 time units, one unit
    // per access, X_cache = 3. iPipe first copies accesses 7 through 15 (1-based): Pstart = 7
    // (algorithm 1) and nine blocks deep (algorithm 2).
    let cfg = InformedConfig {
        x_cache: XCache::Fixed(3),
        max_bw: None,
        consume: Duration(1),
        levels: vec![
            LevelTiming {
                read_to_memory: Duration(4),
                copy_up: Duration::ZERO,
                capacity_blocks: None,
            },
            LevelTiming {
                read_to_memory: Duration(5),
                copy_up: Duration(8),
                capacity_blocks: None,
            },
        ],
        ..InformedConfig::default()
    };
    let p = Informed::new("ipipe", &cfg).unwrap();
    // 0-based: access 6 (the paper's 7), nine blocks, so up to access 14 (the paper's 15).
    assert_eq!(p.plan(), vec![(6, 9, 0)]);
}

#[test]
fn ipo_respects_max_bw_and_the_chain_lead() {
    let cfg = ten_mb(5);
    let mut p = Informed::new("ipo", &cfg).unwrap();
    // eq. 5.1: 15 - 5 = 10 spare reads; algorithm 5: four groups of five.
    assert_eq!(p.plan()[0].1, 10);
    assert_eq!(p.plan()[0].2, 20);
    let (_, order, _) = drive(&mut p, &cfg, 800);
    assert_eq!(order.len(), 800);
    let st = p.stats();
    // Half the blocks come from the SSD (Table 7.11's 28% gain at X_cache = 5 is half of 57%).
    let share = st.tip_reads_by_level[0] as f64 / 800.0;
    assert!((share - 0.5).abs() < 0.02, "{share}");
}

#[test]
fn auto_x_cache_reaches_the_horizon() {
    let cfg = InformedConfig::default();
    assert_eq!(Informed::new("tip", &cfg).unwrap().x_cache(), 63);
    // With iPipe the horizon is the SSD's: 0.052 / 0.00192 = 27.1.
    assert_eq!(Informed::new("ipipe", &cfg).unwrap().x_cache(), 28);
    // IPO cannot use more buffers than max_bw.
    assert_eq!(Informed::new("ipo", &cfg).unwrap().x_cache(), 15);
}

#[test]
fn an_auto_x_cache_past_u32_is_held_to_u32_max_not_cut_to_its_low_bits() {
    // TIP alone plans with the home level's 20 s read against 1 ns of consumption: a horizon of
    // 2 x 10^10 buffers, more than a u32 holds, with memory for more still.
    let mut cfg = ten_mb(1);
    cfg.x_cache = XCache::Auto;
    cfg.consume = Duration(1);
    cfg.levels[1].read_to_memory = Duration::from_secs(20);
    cfg.memory_blocks = 1 << 40;
    assert_eq!(Informed::new("tip", &cfg).unwrap().x_cache(), u32::MAX);
}

#[test]
fn bad_settings_name_their_key() {
    let key = |name: &str, cfg: InformedConfig| match Informed::new(name, &cfg) {
        Err(PolicyError::BadSetting { key, .. }) => key,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        key(
            "ipo",
            InformedConfig {
                max_bw: None,
                ..Default::default()
            }
        ),
        "max_bw"
    );
    assert_eq!(key("tip", ten_mb(0)), "x_cache");
    let one_level = InformedConfig {
        levels: vec![InformedConfig::default().levels[1]],
        ..Default::default()
    };
    assert_eq!(key("ipipe", one_level.clone()), "name");
    assert!(Informed::new("tip", &one_level).is_ok());
}

fn three_levels() -> InformedConfig {
    let ms = Duration::from_millis;
    InformedConfig {
        levels: vec![
            LevelTiming {
                read_to_memory: ms(5),
                copy_up: Duration::ZERO,
                capacity_blocks: Some(6),
            },
            LevelTiming {
                read_to_memory: ms(50),
                copy_up: ms(20),
                capacity_blocks: Some(10),
            },
            LevelTiming {
                read_to_memory: ms(120),
                copy_up: ms(130),
                capacity_blocks: None,
            },
        ],
        consume: ms(2),
        ..InformedConfig::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    /// No level holds more copies than its capacity and every hinted block reaches the application
    /// once, in order, for every policy, buffer count, bandwidth cap and 2 or 3 levels.
    #[test]
    fn capacity_holds_and_blocks_arrive_once_in_order(
        name in prop::sample::select(vec!["tip", "ipipe", "ipo", "ipods"]),
        x in 1u32..20,
        max_bw in 1u32..30,
        n in 1usize..300,
        three in any::<bool>(),
        cap1 in 1u64..12,
    ) {
        let mut cfg = if three { three_levels() } else { ten_mb(x) };
        cfg.x_cache = XCache::Fixed(x);
        cfg.max_bw = Some(max_bw);
        cfg.levels[0].capacity_blocks = Some(cap1);
        let mut p = Informed::new(name, &cfg).unwrap();
        let (_, order, peak) = drive(&mut p, &cfg, n);
        prop_assert_eq!(order, (0..n).collect::<Vec<_>>());
        for (j, c) in cfg.levels.iter().enumerate() {
            if let Some(c) = c.capacity_blocks {
                prop_assert!(peak[j + 1] <= c);
            }
        }
    }
}

#[test]
fn a_copy_that_lands_after_a_higher_copy_of_its_block_is_dropped() {
    // Three levels under iPipe: the lower prefetcher copies a block to level 2 and the upper one,
    // not finding it there yet, copies the same block from level 3 straight to level 1. On device
    // models that copy may land first (here every copy into level 1 takes 1 ms, into level 2
    // 130 ms). The level-2 copy that lands after it is of no use (TIP reads level 1): it must be
    // dropped, or it stays on level 2 for good and the lower prefetcher loses its slot.
    let cfg = InformedConfig {
        x_cache: XCache::Fixed(1),
        ..three_levels()
    };
    let mut p = Informed::new("ipipe", &cfg).unwrap();
    let copy_ns = |_src: u8, into: u8| if into == 1 { 1_000_000 } else { 130_000_000 };
    let (_, order, _, held) = drive_with(&mut p, &cfg, 2000, copy_ns);
    assert_eq!(order, (0..2000).collect::<Vec<_>>());
    assert!(
        held.iter().all(|&h| h == 0),
        "copies nobody read are left on the levels: {held:?}"
    );
}

/// TIP keeps at most `HINTED_RANGES_LIVE_MAX` live hinted ranges (lowered to 4 here): it fetches
/// none of the ranges hinted past it, in the same hint or a later one sent before the application
/// moved on, and ignores their reads, which the driver serves on demand.
#[test]
fn ranges_hinted_past_tips_bound_are_dropped_and_read_on_demand() {
    let cfg = ten_mb(2);
    let mut p = Informed::new("tip", &cfg)
        .unwrap()
        .with_hinted_ranges_live_max(4);
    let mut fetched = vec![];
    hint_blocks(&mut p, 0..6);
    hint_blocks(&mut p, 6..7);
    assert_eq!(p.stats().hinted_ranges_dropped, 3);
    complete_fetches(&mut p, &mut fetched);
    for b in 0..7 {
        read_block(&mut p, 2, b, b >= 4);
        complete_fetches(&mut p, &mut fetched);
    }
    assert_eq!(fetched, vec![0, 1, 2, 3]);
}

/// Stream 0 hints `blocks` of file 0.
fn hint_blocks(p: &mut Informed, blocks: std::ops::Range<u64>) {
    p.handle(
        Instant(0),
        Input::Hint {
            stream: StreamId(0),
            file: FileId(0),
            ranges: blocks.map(block).collect(),
        },
    );
}

/// Completes every fetch the policy asks for at once, noting the blocks fetched.
fn complete_fetches(p: &mut Informed, fetched: &mut Vec<u64>) {
    while let Some(o) = p.poll_output() {
        match o {
            Output::Fetch { id, range, .. } => {
                fetched.push(range.start.0 / BLOCK);
                p.handle(Instant(1), Input::Fetched { id, ok: true });
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}

/// An application that hints 4 blocks at a time and reads them before hinting more keeps at
/// most a few entries live, so a list bounded to 8 live entries loses none of its 400 hints.
/// The list used to be bounded over the stream's whole life, and dropped every hint past the
/// 8th.
#[test]
fn entries_every_reader_is_past_are_dropped_and_make_room_for_later_hints() {
    let cfg = ten_mb(2);
    let mut p = Informed::new("tip", &cfg)
        .unwrap()
        .with_hinted_ranges_live_max(8);
    let mut fetched = vec![];
    for round in 0..100 {
        hint_blocks(&mut p, round * 4..round * 4 + 4);
        complete_fetches(&mut p, &mut fetched);
        for b in round * 4..round * 4 + 4 {
            read_block(&mut p, 2, b, false);
            complete_fetches(&mut p, &mut fetched);
        }
        assert!(p.entries_held() <= 8, "{} entries held", p.entries_held());
    }
    assert_eq!(p.stats().hinted_ranges_dropped, 0);
    assert_eq!(fetched, (0..400).collect::<Vec<_>>());
    // TIP's next two fetches stay live; everything the application read is gone.
    assert!(p.entries_held() <= 2, "{} entries held", p.entries_held());
}

/// What the application of [`dropping_the_front_changes_no_decision`] does next.
#[derive(Clone, Debug)]
enum Step {
    /// Hints the next `n` blocks.
    Hint(u64),
    /// Reads its next block, missing it or not; a miss is read again later.
    Read { miss: bool },
    /// Reads a block it never hinted.
    Stray,
    /// Completes the fetch `pick` (modulo those pending), or refuses it.
    Complete { pick: usize, ok: bool },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (1u64..6).prop_map(Step::Hint),
        4 => any::<bool>().prop_map(|miss| Step::Read { miss }),
        1 => Just(Step::Stray),
        8 => (any::<usize>(), prop::bool::weighted(0.9))
            .prop_map(|(pick, ok)| Step::Complete { pick, ok }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// Dropping the entries every reader is past changes no decision: the policy sends what a
    /// reference keeping its whole list sends (same live bound, so the same hints are dropped),
    /// on random hints, reads, stray reads, completions in any order, refusals and closes, and it
    /// never holds more than its live bound. An entry dropped while still needed panics on its
    /// position (below the list's base) or changes an output.
    #[test]
    fn dropping_the_front_changes_no_decision(
        name in prop::sample::select(vec!["tip", "ipipe", "ipo", "ipods"]),
        x in 1u32..5,
        max_bw in 1u32..10,
        three in any::<bool>(),
        cap1 in 1u64..6,
        consume_ms in 5u64..40,
        copy_ms in prop::collection::vec(1u64..60, 2),
        live_max in 1usize..24,
        close_at in prop::option::weighted(0.2, 0usize..400),
        steps in prop::collection::vec(step(), 1..400),
    ) {
        let mut cfg = if three { three_levels() } else { ten_mb(x) };
        cfg.x_cache = XCache::Fixed(x);
        cfg.max_bw = Some(max_bw);
        cfg.consume = Duration::from_millis(consume_ms);
        cfg.levels[0].capacity_blocks = Some(cap1);
        for (level, ms) in cfg.levels.iter_mut().skip(1).zip(&copy_ms) {
            level.copy_up = Duration::from_millis(*ms);
        }
        let mut p = Informed::new(name, &cfg).unwrap().with_hinted_ranges_live_max(live_max);
        let mut reference = Informed::new(name, &cfg)
            .unwrap()
            .with_hinted_ranges_live_max(live_max)
            .keeping_whole_list();
        let (mut hinted, mut read) = (0u64, 0u64);
        let mut pending: Vec<FetchId> = vec![];
        let stream = StreamId(0);
        for (i, s) in steps.iter().enumerate() {
            let input = match *s {
                Step::Hint(n) => {
                    hinted += n;
                    Input::Hint { stream, file: FileId(0), ranges: (hinted - n..hinted).map(block).collect() }
                }
                Step::Read { miss } => {
                    if read >= hinted {
                        continue;
                    }
                    let b = read;
                    if !miss {
                        read += 1;
                    }
                    Input::Read { stream, file: FileId(0), range: block(b), miss: miss.then_some(block(b).start) }
                }
                Step::Stray => Input::Read { stream, file: FileId(0), range: block(1 << 30), miss: None },
                Step::Complete { pick, ok } => {
                    if pending.is_empty() {
                        continue;
                    }
                    let id = pending.remove(pick % pending.len());
                    Input::Fetched { id, ok }
                }
            };
            let input = if close_at == Some(i) { Input::StreamClosed { stream } } else { input };
            p.handle(Instant(i as u64), input.clone());
            reference.handle(Instant(i as u64), input);
            loop {
                let (o, r) = (p.poll_output(), reference.poll_output());
                prop_assert_eq!(&o, &r, "step {} ({:?})", i, s);
                match o {
                    None => break,
                    Some(Output::Fetch { id, .. }) => pending.push(id),
                    Some(_) => {}
                }
            }
            prop_assert!(p.entries_held() <= live_max, "{} entries held, bound {}", p.entries_held(), live_max);
        }
        prop_assert_eq!(p.stats(), reference.stats());
    }
}

/// What a policy asked for and dropped, per level (index = level), over a run that
/// [`run_then_close`] drives.
#[derive(Debug, Default)]
struct LevelTally {
    copies: Vec<u64>,
    evicts: Vec<u64>,
}

/// Hints `n` blocks, then for `rounds` rounds completes the older half of the fetches under way
/// and has the application read its next block if it is in memory; then closes the stream and
/// completes every fetch still under way. Returns what went to and came off each level.
fn run_then_close(p: &mut Informed, levels: usize, n: u64, rounds: usize) -> LevelTally {
    let mut tally = LevelTally {
        copies: vec![0; levels + 1],
        evicts: vec![0; levels + 1],
    };
    let mut pending: VecDeque<(FetchId, Tier, u64)> = VecDeque::new();
    let mut in_memory = BTreeSet::new();
    let mut next = 0u64;
    let drain =
        |p: &mut Informed, pending: &mut VecDeque<(FetchId, Tier, u64)>, tally: &mut LevelTally| {
            while let Some(o) = p.poll_output() {
                match o {
                    Output::Fetch {
                        id, range, into, ..
                    } => {
                        if let Tier::Level(j) = into {
                            tally.copies[j as usize] += 1;
                        }
                        pending.push_back((id, into, range.start.0 / BLOCK));
                    }
                    Output::Evict {
                        tier: Tier::Level(j),
                        ..
                    } => tally.evicts[j as usize] += 1,
                    Output::Defer { .. } => {}
                    other => panic!("unexpected {other:?}"),
                }
            }
        };
    hint_blocks(p, 0..n);
    for round in 0..rounds {
        drain(p, &mut pending, &mut tally);
        for _ in 0..pending.len().div_ceil(2) {
            let (id, into, b) = pending.pop_front().expect("counted");
            if into == Tier::Memory {
                in_memory.insert(b);
            }
            p.handle(Instant(round as u64), Input::Fetched { id, ok: true });
            drain(p, &mut pending, &mut tally);
        }
        if in_memory.remove(&next) {
            read_block(p, round as u64, next, false);
            next += 1;
        }
    }
    drain(p, &mut pending, &mut tally);
    assert!(
        !pending.is_empty(),
        "the stream closes with fetches under way"
    );
    p.handle(
        Instant(rounds as u64),
        Input::StreamClosed {
            stream: StreamId(0),
        },
    );
    drain(p, &mut pending, &mut tally);
    while let Some((id, ..)) = pending.pop_front() {
        p.handle(Instant(rounds as u64), Input::Fetched { id, ok: true });
        drain(p, &mut pending, &mut tally);
    }
    tally
}

/// Once its hinted stream closes, a policy holds none of its list (a stream that hinted 4 Mi
/// ranges kept 96 MiB until the policy was dropped) and drops every copy it placed on a level,
/// landed or still on its way, since no reader of the stream will take it; the tiered driver
/// keeps a copy until it is told to drop it.
#[test]
fn closing_the_hinted_stream_drops_its_list_and_every_copy_it_placed() {
    for name in ["tip", "ipipe", "ipo", "ipods"] {
        let cfg = InformedConfig {
            x_cache: XCache::Fixed(2),
            max_bw: Some(8),
            ..three_levels()
        };
        let mut p = Informed::new(name, &cfg).unwrap();
        let tally = run_then_close(&mut p, 3, 500, 60);
        assert_eq!(p.hinted_ranges_live(), 0, "{name}");
        assert_eq!(p.hinted_ranges_capacity(), 0, "{name}");
        if name != "tip" {
            assert!(tally.copies[1] > 0, "{name} copied nothing: {tally:?}");
        }
        assert_eq!(
            tally.copies, tally.evicts,
            "{name}: copies left on the levels"
        );
    }
}

/// What the application of [`the_list_shrinks_after_a_burst_and_empties_on_close`] does next.
#[derive(Clone, Debug)]
enum Burst {
    /// Hints its next `n` blocks at once.
    Hint(u64),
    /// Reads its next `n` hinted blocks, each as soon as it is fetched.
    Read(u64),
    /// Closes the stream.
    Close,
}

/// Completes every fetch the policy asks for at once, ignoring the copies it drops.
fn complete_all(p: &mut Informed, at: u64) {
    while let Some(o) = p.poll_output() {
        if let Output::Fetch { id, .. } = o {
            p.handle(Instant(at), Input::Fetched { id, ok: true });
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, failure_persistence: None, ..ProptestConfig::default() })]

    /// After bursts of hints that the application then reads, the list's room stays within a
    /// constant factor of what is live (or of the floor), and after the stream closes nothing is
    /// live or held. A list that held 20,000 hints once kept room for them all while 3 were live.
    #[test]
    fn the_list_shrinks_after_a_burst_and_empties_on_close(
        name in prop::sample::select(vec!["tip", "ipipe", "ipo", "ipods"]),
        x in 1u32..4,
        steps in prop::collection::vec(prop_oneof![
            2 => (0u64..20_000).prop_map(Burst::Hint),
            3 => (1u64..20_000).prop_map(Burst::Read),
            1 => Just(Burst::Close),
        ], 1..8),
    ) {
        let mut cfg = ten_mb(x);
        cfg.max_bw = Some(x + 2);
        let mut p = Informed::new(name, &cfg).unwrap();
        // The policy takes the stream for its hinted one at its first hint; a close before
        // that ends no hinted stream, and the next hint starts one.
        let (mut hinted, mut read, mut claimed, mut closed) = (0u64, 0u64, false, false);
        let floor = HINTED_RANGES_CAPACITY_FLOOR;
        for (i, s) in steps.iter().enumerate() {
            match *s {
                Burst::Hint(n) => {
                    hint_blocks(&mut p, hinted..hinted + n);
                    hinted += n;
                    claimed = true;
                }
                Burst::Read(n) => {
                    let end = (read + n).min(hinted);
                    while read < end {
                        // Every fetch completed at once, so the block is in memory.
                        read_block(&mut p, i as u64, read, false);
                        read += 1;
                        complete_all(&mut p, i as u64);
                    }
                }
                Burst::Close => {
                    closed |= claimed;
                    p.handle(Instant(i as u64), Input::StreamClosed { stream: StreamId(0) });
                }
            }
            complete_all(&mut p, i as u64);
            let (live, room) = (p.hinted_ranges_live(), p.hinted_ranges_capacity());
            prop_assert!(
                room <= 4 * live.max(floor),
                "step {} ({:?}): room for {} entries, {} live", i, s, room, live
            );
            if closed {
                prop_assert_eq!((live, room), (0, 0), "step {} ({:?})", i, s);
            }
        }
    }
}
