//! Invariants of whole simulation runs, over random configs.
//!
//! proptest prints the failing config's inputs and saves them, so a failure replays; each config
//! also carries its own `seed`, printed with the failure. The tests over every policy, workload
//! and device print the failing `--set` assignments, which `foresight sim` replays as they are;
//! `PROPTEST_CASES=5000` searches longer than the default few dozen cases.

use foresight_sim::experiments::config;
use foresight_sim::{run, RunOptions};
use proptest::prelude::*;

fn small_run(sets: Vec<String>) -> foresight_sim::Report {
    let cfg = config(&sets);
    run(&cfg, RunOptions::default())
        .expect("valid config runs")
        .report
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// The page cache never holds more than `host.memory`, whatever the policy, the number of
    /// streams or the request and window sizes; and every requested byte is delivered.
    #[test]
    fn page_cache_never_exceeds_memory(
        seed in 0u64..1000,
        streams in 1u32..48,
        memory_mib in 1u64..8,
        request_kib in prop::sample::select(vec![4u64, 16, 64, 256]),
        ra_kib in prop::sample::select(vec![0u64, 128, 512, 2048]),
        policy in prop::sample::select(vec!["none", "seqp"]),
        preset in prop::sample::select(vec!["wd800jd", "cheetah-15k5", "ssd-850evo"]),
    ) {
        let kind = if preset.starts_with("ssd") { "ssd" } else { "hdd" };
        let file_kib = 4 * 1024;
        let mut sets = vec![
            format!("seed={seed}"),
            format!("device.kind={kind}"),
            format!("device.preset={preset}"),
            format!("host.memory={memory_mib}MiB"),
            format!("policy.name={policy}"),
            format!("workload.streams={streams}"),
            format!("workload.request={request_kib}KiB"),
            format!("workload.file_size={file_kib}KiB"),
        ];
        // `none` has no window, and its config refuses the key; a window larger than the page
        // cache is refused too, so the largest drawn is the whole cache.
        if policy == "seqp" {
            sets.push(format!("policy.readahead_max={}KiB", ra_kib.min(memory_mib * 1024)));
        }
        let r = small_run(sets);
        prop_assert!(r.memory_peak_bytes <= memory_mib << 20, "seed {seed}: peak {} > memory {} MiB", r.memory_peak_bytes, memory_mib);
        prop_assert_eq!(r.app_bytes, streams as u64 * file_kib * 1024, "seed {}: not every byte delivered", seed);
        prop_assert!(r.wasted_bytes <= r.prefetched_bytes);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// The stream scheduler's buffers never pass M: the block-level cache holds at most M plus
    /// one request per client passing through on demand, and the page cache above it holds only
    /// demand data (it prefetches nothing), so `memory_peak_bytes` stays within M plus the page
    /// cache's own demand data. Every requested byte is delivered.
    #[test]
    fn stream_scheduler_stays_within_m(
        seed in 0u64..1000,
        streams in 1u32..64,
        r_kib in prop::sample::select(vec![256u64, 1024, 4096]),
        n in 1u32..3,
        d in 1u32..4,
        timeout_ms in prop::sample::select(vec![50u64, 2000]),
        turn_order in prop::sample::select(vec!["arrival", "position"]),
        placement in prop::sample::select(vec!["spread", "shuffled"]),
    ) {
        let m_kib = r_kib * n as u64 * d as u64;
        let request_kib = 64;
        let r = small_run(vec![
            format!("seed={seed}"),
            "policy.name=streams".into(),
            format!("policy.readahead={r_kib}KiB"),
            format!("policy.per_turn={n}"),
            format!("policy.memory={m_kib}KiB"),
            format!("policy.dispatch={d}"),
            format!("policy.timeout={timeout_ms}ms"),
            format!("policy.turn_order={turn_order}"),
            format!("workload.placement={placement}"),
            "host.memory=64MiB".into(),
            format!("workload.streams={streams}"),
            format!("workload.request={request_kib}KiB"),
            "workload.file_size=8MiB".into(),
        ]);
        let allowance = streams as u64 * request_kib * 1024;
        prop_assert!(r.raid_cache_peak_bytes.unwrap() <= m_kib * 1024 + allowance,
            "seed {seed}: buffers peaked at {} > M {} KiB + {} pass-through", r.raid_cache_peak_bytes.unwrap(), m_kib, allowance);
                prop_assert!(r.memory_peak_bytes <= (64 << 20) + m_kib * 1024 + allowance);
        // The page cache above the scheduler reads on demand only: every byte read ahead is the
        // scheduler's.
        prop_assert_eq!(r.prefetched_bytes, r.raid_prefetched_bytes.unwrap(), "seed {}", seed);
        prop_assert_eq!(r.wasted_bytes, r.raid_wasted_bytes.unwrap(), "seed {}", seed);
        prop_assert_eq!(r.fetches, r.raid_fetches.unwrap(), "seed {}", seed);
        prop_assert_eq!(r.app_bytes, (streams as u64 * 8) << 20, "seed {}: not every byte delivered", seed);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// On a RAID-0 with a RAID cache, under every striping policy, placement, strip size and
    /// member count, with and without ext3-like metadata blocks: memory stays within the page cache
    /// plus the RAID cache, no prefetch is wasted that was not fetched, SASEQP never issues a fetch
    /// that becomes more than one disk request (paper 000, Fig. 4), and a `streams` run that ends
    /// early has delivered every byte.
    #[test]
    fn striping_policies_keep_memory_and_split_bounds(
        seed in 0u64..1000,
        streams in 1u32..24,
        memory_mib in 1u64..16,
        request_kib in prop::sample::select(vec![4u64, 8, 64, 256]),
        ra_kib in prop::sample::select(vec![0u64, 128, 512, 2048]),
        policy in prop::sample::select(vec!["seqp", "saseqp", "msp+seqp", "msp+saseqp"]),
        placement in prop::sample::select(vec!["spread", "shuffled", "contiguous", "aligned", "fragmented"]),
        strip_kib in prop::sample::select(vec![4u64, 64, 128, 1024]),
        disks in 1u32..6,
        metadata in any::<bool>(),
        kind in prop::sample::select(vec!["streams", "webserver", "random"]),
    ) {
        let file_kib = 2 * 1024;
        let raid_cache_mib = 8;
        let mut sets = vec![
            format!("seed={seed}"),
            "device.kind=raid0".to_string(),
            "device.preset=cheetah-15k5".to_string(),
            format!("device.disks={disks}"),
            format!("device.strip={strip_kib}KiB"),
            format!("host.memory={memory_mib}MiB"),
            format!("host.raid_cache={raid_cache_mib}MiB"),
            format!("policy.name={policy}"),
            // A window larger than the page cache is refused: the largest drawn is the cache.
            format!("policy.readahead_max={}KiB", ra_kib.min(memory_mib * 1024)),
            format!("workload.kind={kind}"),
            format!("workload.streams={streams}"),
            format!("workload.request={request_kib}KiB"),
            format!("workload.file_size={file_kib}KiB"),
            "workload.duration=2s".to_string(),
        ];
        // A `random` workload reads one contiguous file and refuses the placement keys.
        if kind != "random" {
            sets.push(format!("workload.placement={placement}"));
            sets.push(format!("workload.metadata={metadata}"));
        }
        let r = small_run(sets.clone());
        prop_assert!(
            r.memory_peak_bytes <= (memory_mib + raid_cache_mib) << 20,
            "{sets:?}: peak {}", r.memory_peak_bytes
        );
        prop_assert!(r.wasted_bytes <= r.prefetched_bytes, "{sets:?}");
        prop_assert!(r.raid_prefetched_bytes.unwrap() <= r.prefetched_bytes, "{sets:?}");
        prop_assert!(r.raid_fetches.unwrap() <= r.fetches, "{sets:?}");
        if policy.ends_with("saseqp") {
            // SASEQP's own fetches; MSP's, below it, may span strips.
            prop_assert_eq!(r.split_fetches, r.raid_split_fetches.unwrap(), "{:?}", sets);
        }
        if kind == "streams" && r.elapsed_s < 2.0 {
            prop_assert_eq!(r.app_bytes, streams as u64 * file_kib * 1024, "{:?}", sets);
        }
    }
}

#[test]
fn same_config_and_seed_give_identical_reports() {
    let sets: Vec<String> = [
        "seed=42",
        "device.preset=wd800jd",
        "workload.kind=random",
        "workload.streams=4",
        "workload.requests=300",
        "workload.request=4KiB",
        "workload.file_size=1GiB",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut a = small_run(sets.clone());
    let mut b = small_run(sets.clone());
    a.wall_s = 0.0;
    b.wall_s = 0.0;
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        serde_json::to_string(&b).unwrap()
    );
    let mut other = sets;
    other[0] = "seed=43".into();
    let mut c = small_run(other);
    c.wall_s = 0.0;
    assert_ne!(
        a.elapsed_s, c.elapsed_s,
        "a different seed should draw different offsets"
    );
}

/// `PROPTEST_CASES` when set (to search longer), else `default`.
fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One valid config of the page-cache host, drawn across device kinds and presets, every host
/// policy, every workload kind and the scheduler, with small sizes so that a case runs in
/// milliseconds (MSP stripes, so its policies run on a RAID-0). Returns the `--set` assignments
/// and the bytes the workload asks for (`None` for `webserver`, which runs for a set time).
#[allow(clippy::too_many_arguments)]
fn host_case(
    seed: u64,
    device: usize,
    disks: u32,
    policy: &str,
    kind: &str,
    streams: u32,
    request_bytes: u64,
    file_kib: u64,
    memory_mib: u64,
    scheduler: &str,
    cache: usize,
    think_us: u64,
    shape: u64,
) -> (Vec<String>, Option<u64>) {
    let (dev_kind, preset) = [
        ("hdd", "wd800jd"),
        ("hdd", "st6000nm0024"),
        ("hdd", "atlas-10k"),
        ("ssd", "ssd-850evo"),
        ("raid0", "cheetah-15k5"),
        ("jbod", "wd800jd"),
        // 256 disks of 6 TB: a volume of 1.5 PB, past 2^36 pages.
        ("raid0", "st6000nm0024"),
    ][if policy.starts_with("msp+") && device < 6 {
        4
    } else {
        device
    }];
    let mut sets = vec![
        format!("seed={seed}"),
        format!("device.kind={dev_kind}"),
        format!("device.preset={preset}"),
        format!("host.memory={memory_mib}MiB"),
        format!("host.scheduler={scheduler}"),
        format!("policy.name={policy}"),
        format!("workload.kind={kind}"),
        format!("workload.streams={streams}"),
        format!("workload.think={think_us}us"),
    ];
    let huge = preset == "st6000nm0024" && dev_kind == "raid0";
    if huge {
        sets.push("device.disks=256".into());
    } else if matches!(dev_kind, "raid0" | "jbod") {
        sets.push(format!("device.disks={disks}"));
    }
    if dev_kind == "raid0" {
        sets.push(format!("device.strip={}KiB", 4 << (shape % 6)));
    }
    // The block-level caches: the RAID driver's (which the `msp+` policies need), or the
    // controller's (which neither the RAID cache nor the stream scheduler combines with).
    // (The stream scheduler's own M is its block-level cache: it refuses host.raid_cache.)
    let raid_cache = policy.starts_with("msp+") || (cache == 1 && policy != "streams");
    if raid_cache {
        sets.push("host.raid_cache=4MiB".into());
    } else if cache == 2 && policy != "streams" {
        sets.push("device.controller_cache=2MiB".into());
        sets.push("device.controller_readahead=256KiB".into());
    }
    match policy {
        "seqp" | "saseqp" | "msp+seqp" | "msp+saseqp" => sets.push(format!(
            "policy.readahead_max={}KiB",
            [0, 32, 128, 512][shape as usize % 4]
        )),
        "streams" => {
            sets.push(format!(
                "policy.readahead={}KiB",
                [64, 256][shape as usize % 2]
            ));
            sets.push("policy.memory=2MiB".into());
            sets.push(format!("policy.timeout={}ms", [1, 100][shape as usize % 2]));
        }
        _ => {}
    }
    let file_bytes = (file_kib << 10).max(request_bytes);
    sets.push(format!("workload.file_size={file_bytes}"));
    let placed = !(kind == "random" || dev_kind == "jbod" && kind == "streams");
    if placed {
        let placement = ["spread", "shuffled", "contiguous", "aligned", "fragmented"];
        sets.push(format!(
            "workload.placement={}",
            placement[shape as usize % 5]
        ));
        sets.push(format!("workload.metadata={}", shape.is_multiple_of(3)));
    }
    let n = u64::from(streams);
    let expected = match kind {
        "streams" => {
            sets.push(format!("workload.request={request_bytes}"));
            Some(n * file_bytes)
        }
        "random" => {
            let requests = 1 + shape % 40;
            if huge {
                // The one shared file is the whole volume.
                sets.retain(|s| !s.starts_with("workload.file_size"));
                sets.push("workload.file_size=0".into());
            }
            sets.push(format!("workload.request={request_bytes}"));
            sets.push(format!("workload.requests={requests}"));
            Some(n * requests * request_bytes)
        }
        "webserver" => {
            sets.push(format!("workload.request={request_bytes}"));
            sets.push(format!("workload.files={}", 1 + shape % 16));
            sets.push("workload.duration=200ms".into());
            None
        }
        "scan" => {
            sets.push(format!("workload.request={request_bytes}"));
            Some(n * (file_bytes / request_bytes) * request_bytes)
        }
        "tiles" => {
            let across = 1 + shape % 8;
            let tile = (file_bytes / across / 512 * 512).clamp(512, 64 << 10);
            sets.push(format!("workload.tile={tile}"));
            sets.push(format!("workload.tiles_across={across}"));
            Some(n * (file_bytes / (tile * across)) * across * tile)
        }
        "gaps" => {
            // Fixed gaps, so that the read count is known: reads start every `request + gap`
            // bytes (the gap rounded down to whole pages) while a whole read still fits.
            // A gap that leaves room for one read where the file holds two is refused.
            let room = file_bytes
                .checked_sub(2 * request_bytes)
                .map_or(u64::MAX, |r| r / 4096 * 4096);
            let gap = [0u64, 4096, 10_000, 65_536][shape as usize % 4].min(room);
            sets.push(format!("workload.request={request_bytes}"));
            sets.push(format!("workload.gap={gap}"));
            let stride = request_bytes + gap / 4096 * 4096;
            Some(n * ((file_bytes - request_bytes) / stride + 1) * request_bytes)
        }
        other => unreachable!("{other}"),
    };
    (sets, expected)
}

/// Settings at the edges of their ranges, a few of which each case adds (the `device.` ones on
/// hard disks only, `readahead_rule` to the readahead family only, an expiry to the schedulers
/// that read it).
const KNOBS: &[&str] = &[
    "host.nr_requests=1",
    "host.max_request=4KiB",
    "host.read_expire=1ns",
    "host.antic_expire=1s",
    "policy.readahead_rule=synchronous",
    "device.queue_depth=32",
    "device.queue_policy=sptf",
    "device.cache_segments=4096",
    "device.segment_size=512",
    "device.drive_readahead_min=512",
    "device.controller_mib_s=1",
];

/// The report's numbers are finite and not negative (NaN would not even be JSON), and its counters
/// agree with each other.
fn check_consistent(r: &foresight_sim::Report) -> Result<(), String> {
    let b = &r.breakdown;
    for (name, v) in [
        ("throughput_mib_s", r.throughput_mib_s),
        ("elapsed_s", r.elapsed_s),
        ("mean_latency_ms", r.mean_latency_ms),
        ("p99_latency_ms", r.p99_latency_ms),
        ("stall_s", r.stall_s),
        ("seek_s", b.seek_s),
        ("rotate_s", b.rotate_s),
        ("transfer_s", b.transfer_s),
        ("queue_s", b.queue_s),
        ("overhead_s", b.overhead_s),
    ] {
        if !v.is_finite() || v < 0.0 {
            return Err(format!("{name} = {v}"));
        }
    }
    // The host stack's own keys are absent from the reports of a `[dfs]` run and of a hinted run
    // over a tier stack (neither model has such parts) and present in every other; an absent key
    // bounds nothing below.
    let host_keys = [
        r.antic_waits,
        r.device_sequential_requests,
        r.raid_prefetched_bytes,
        r.raid_wasted_bytes,
        r.raid_cache_peak_bytes,
        r.raid_fetches,
        r.raid_split_fetches,
        r.trace_lba_wrapped,
    ];
    let other_driver = r.dfs.is_some() || r.workload == "hinted";
    if host_keys.iter().any(|k| k.is_some() == other_driver) {
        return Err(format!(
            "host-stack keys {host_keys:?} in a run of the dfs or tier driver: {other_driver}"
        ));
    }
    let pairs = [
        (
            "wasted_bytes <= prefetched_bytes",
            r.wasted_bytes,
            r.prefetched_bytes,
        ),
        ("split_fetches <= fetches", r.split_fetches, r.fetches),
        (
            "raid_split_fetches <= raid_fetches",
            r.raid_split_fetches.unwrap_or(0),
            r.raid_fetches.unwrap_or(0),
        ),
        (
            "raid_prefetched_bytes <= prefetched_bytes",
            r.raid_prefetched_bytes.unwrap_or(0),
            r.prefetched_bytes,
        ),
        (
            "raid_fetches <= fetches",
            r.raid_fetches.unwrap_or(0),
            r.fetches,
        ),
        (
            "hit_requests <= app_requests",
            r.hit_requests,
            r.app_requests,
        ),
        (
            "device_cache_hits <= device_requests",
            r.device_cache_hits,
            r.device_requests,
        ),
        (
            "device_sequential_requests <= device_requests",
            r.device_sequential_requests.unwrap_or(0),
            r.device_requests,
        ),
        (
            "raid_wasted <= raid_prefetched",
            r.raid_wasted_bytes.unwrap_or(0),
            r.raid_prefetched_bytes.unwrap_or(0),
        ),
    ];
    for (what, small, large) in pairs {
        if small > large {
            return Err(format!("{what}: {small} > {large}"));
        }
    }
    if r.app_bytes > 0 && r.elapsed_s > 0.0 && r.throughput_mib_s <= 0.0 {
        return Err("bytes delivered in positive time, but no throughput".into());
    }
    check_members(r)
}

/// The member disks' figures add up to the volume's. (Runs of the tiered and DFS models, which
/// have no host volume, report none.)
fn check_members(r: &foresight_sim::Report) -> Result<(), String> {
    let sum = |f: fn(&foresight_sim::metrics::MemberReport) -> u64| -> u64 {
        r.members.iter().map(f).sum()
    };
    if r.members.is_empty() {
        return Ok(());
    }
    for (what, members, total) in [
        ("requests", sum(|m| m.requests), r.device_requests),
        ("bytes", sum(|m| m.bytes), r.device_bytes),
        ("cache_hits", sum(|m| m.cache_hits), r.device_cache_hits),
    ] {
        if members != total {
            return Err(format!(
                "members' {what} add up to {members}, the run's to {total}"
            ));
        }
    }
    for (i, m) in r.members.iter().enumerate() {
        if !m.busy_s.is_finite() || m.busy_s < 0.0 || m.cache_hits > m.requests {
            return Err(format!("member {i}: {m:?}"));
        }
    }
    Ok(())
}

/// The report as JSON without the host's `wall_s`: what must repeat byte for byte.
fn json_without_wall(mut r: foresight_sim::Report) -> String {
    r.wall_s = 0.0;
    serde_json::to_string(&r).expect("a report is JSON")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(64), ..ProptestConfig::default() })]

    /// Every host policy on every device kind under every workload kind runs to the end with its
    /// invariants: every byte the workload asks for delivered, the page cache (and the block-level
    /// cache beside it) within its budget, consistent counters, finite figures, and the same JSON
    /// from a second run of the same config. A failure prints the assignments (`seed` among them);
    /// `foresight sim --set ...` with them replays it.
    #[test]
    fn every_policy_workload_and_device_keeps_the_invariants(
        seed in 0u64..1_000_000,
        device in 0usize..7,
        disks in 1u32..4,
        policy in prop::sample::select(vec![
            "none", "seqp", "saseqp", "msp+seqp", "msp+saseqp", "streams", "directed",
        ]),
        kind in prop::sample::select(vec!["streams", "random", "webserver", "scan", "tiles", "gaps"]),
        streams in prop::sample::select(vec![1u32, 2, 3, 8]),
        request_bytes in prop::sample::select(vec![512u64, 4096, 12_288, 65_536]),
        file_kib in prop::sample::select(vec![4u64, 60, 256, 1024]),
        memory_mib in 1u64..6,
        scheduler in prop::sample::select(vec!["noop", "deadline", "anticipatory"]),
        cache in 0usize..3,
        think_us in prop::sample::select(vec![0u64, 0, 300]),
        shape in 0u64..1000,
        knobs in prop::sample::subsequence(KNOBS.to_vec(), 0..5),
    ) {
        let (mut sets, expected) = host_case(
            seed, device, disks, policy, kind, streams, request_bytes, file_kib, memory_mib,
            scheduler, cache, think_us, shape,
        );
        let ssd = sets.iter().any(|s| s == "device.kind=ssd");
        let windowed = sets.iter().any(|s| s.starts_with("policy.readahead_max"));
        sets.extend(
            knobs
                .iter()
                .filter(|k| !(ssd && k.starts_with("device.")))
                .filter(|k| windowed || !k.starts_with("policy.readahead_rule"))
                .filter(|k| scheduler == "anticipatory" || !k.starts_with("host.antic_expire"))
                .filter(|k| scheduler != "noop" || !k.starts_with("host.read_expire"))
                .map(|k| k.to_string()),
        );
        let cfg = config(&sets);
        let r = run(&cfg, RunOptions::default())
            .unwrap_or_else(|e| panic!("{sets:?}: {e}"))
            .report;
        if let Some(bytes) = expected {
            prop_assert_eq!(r.app_bytes, bytes, "not every byte delivered: {:?}", sets);
        } else {
            prop_assert!(r.elapsed_s <= 0.2 + 1e-9, "{:?}: ran past its duration", sets);
        }
        let mut budget = memory_mib << 20;
        if cfg.host.raid_cache.0 > 0 {
            budget += cfg.host.raid_cache.0;
        }
        if policy == "streams" {
            // The scheduler's M, plus one read per client passing through its cache.
            budget += (2 << 20) + u64::from(streams) * cfg.workload.read_bytes().0.div_ceil(4096) * 4096;
        }
        prop_assert!(r.memory_peak_bytes <= budget, "{:?}: memory peak {} > {}", sets, r.memory_peak_bytes, budget);
        if let Err(e) = check_consistent(&r) {
            prop_assert!(false, "{:?}: {}", sets, e);
        }
        let again = run(&cfg, RunOptions::default()).expect("ran once").report;
        prop_assert_eq!(json_without_wall(r), json_without_wall(again), "{:?}: not deterministic", sets);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(32), ..ProptestConfig::default() })]

    /// The other two drivers under the same invariants: a hinted workload over a tier stack (the
    /// analytic constant mode or device models, every informed policy), and a `[dfs]` run (every
    /// system, streams or random). Every block or byte asked for arrives, memory stays within
    /// the budget, the figures are finite and a second run prints the same JSON.
    #[test]
    fn tier_stacks_and_dfs_runs_keep_the_invariants(
        seed in 0u64..1_000_000,
        tiered in any::<bool>(),
        informed in prop::sample::select(vec!["tip", "ipipe", "ipo", "ipods"]),
        constant in any::<bool>(),
        reads in 1u64..60,
        block_kib in prop::sample::select(vec![4u64, 64, 1024]),
        memory_blocks in 1u64..8,
        random_order in any::<bool>(),
        system in prop::sample::select(vec!["local", "lustre", "nfs", "hdfs", "gluster", "dedicated", "aps"]),
        streams in 1u32..5,
        random in any::<bool>(),
        file_kib in prop::sample::select(vec![4u64, 64, 1024]),
        request_kib in prop::sample::select(vec![4u64, 128]),
        preset in prop::sample::select(vec!["wd800jd", "ssd-850evo", "st6000nm0024"]),
    ) {
        let mut sets = vec![format!("seed={seed}")];
        let (expected, budget) = if tiered {
            let block = block_kib << 10;
            let memory = (memory_blocks * block).max(1 << 20);
            sets.push(format!("policy.name={informed}"));
            sets.push(format!("device.memory={memory}"));
            sets.push(format!("workload.reads={reads}"));
            sets.push(format!("workload.block={block}"));
            sets.push("workload.consume=500us".into());
            sets.push(format!("workload.order={}", if random_order { "random" } else { "sequential" }));
            if matches!(informed, "ipo" | "ipods") {
                sets.push(format!("policy.max_bw={}", 1 + seed % 8));
            }
            if constant {
                sets.push("device.kind=constant".into());
                sets.push("device.t_upper=1ms".into());
                sets.push("device.t_lower=5ms".into());
                sets.push("device.t_lower_to_upper=6ms".into());
                sets.push(format!("device.upper_capacity={}", block * (1 + seed % 16)));
            } else {
                sets.push("device.kind=tiered".into());
                sets.push(format!(
                    "device.tiers=[{{preset = \"ssd-850evo\", capacity = {}}}, {{preset = \"{preset}\"}}]",
                    block * (1 + seed % 16)
                ));
            }
            (reads * block, memory)
        } else {
            let request = request_kib << 10;
            let file = (file_kib << 10).max(request);
            let memory = 32u64 << 20;
            sets.push(format!("dfs.system={system}"));
            sets.push(format!("device.preset={preset}"));
            if preset == "ssd-850evo" {
                sets.push("device.kind=ssd".into());
            }
            sets.push(format!("host.memory={memory}"));
            sets.push(format!("workload.streams={streams}"));
            sets.push(format!("workload.request={request}"));
            sets.push(format!("workload.file_size={file}"));
            let n = u64::from(streams);
            let expected = if random {
                sets.push("workload.kind=random".into());
                sets.push(format!("workload.requests={reads}"));
                n * reads * request
            } else {
                n * file
            };
            // The server's cache, and each client's share of it (at least 1 MiB).
            (expected, memory + n * (memory / n).max(1 << 20))
        };
        let cfg = config(&sets);
        let r = run(&cfg, RunOptions::default())
            .unwrap_or_else(|e| panic!("{sets:?}: {e}"))
            .report;
        prop_assert_eq!(r.app_bytes, expected, "not every byte delivered: {:?}", sets);
        prop_assert!(r.memory_peak_bytes <= budget, "{:?}: memory peak {} > {}", sets, r.memory_peak_bytes, budget);
        if let Err(e) = check_consistent(&r) {
            prop_assert!(false, "{:?}: {}", sets, e);
        }
        let again = run(&cfg, RunOptions::default()).expect("ran once").report;
        prop_assert_eq!(json_without_wall(r), json_without_wall(again), "{:?}: not deterministic", sets);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(48), ..ProptestConfig::default() })]

    /// `directed` with hints equal to the accesses (`scan`, `tiles` and `gaps` disclose their whole
    /// order up front) reads from the device at most what `none` reads on demand plus what it
    /// counts as wasted: with whole-page reads each page is asked for once, so `none` reads each
    /// page once, and `directed` reads a page beyond that only as an infill gap or again after a
    /// prefetched copy left the cache unread, both of which count as wasted. Conversely a wasted
    /// page is one the device read and nobody used, so the waste is at most what `directed` read
    /// beyond `none`. With one stream and
    /// no infill nothing is wasted, because its window stays within the free memory and the page
    /// cache keeps a prefetched page until it is read: the hinted run reads exactly the bytes the
    /// run without hints reads. (Reads of part of a page are left out: `none` then reads a page
    /// again after evicting it between two reads of it, and so do ext3-like metadata blocks.) A
    /// failure prints the assignments (`seed` among them) that `foresight sim --set` replays.
    #[test]
    fn directed_with_exact_hints_reads_what_none_reads_plus_its_waste(
        seed in 0u64..1_000_000,
        device in 0usize..5,
        disks in 1u32..4,
        kind in prop::sample::select(vec!["scan", "tiles", "gaps"]),
        streams in prop::sample::select(vec![1u32, 1, 2, 3]),
        request_bytes in prop::sample::select(vec![4096u64, 12_288, 65_536]),
        file_kib in prop::sample::select(vec![60u64, 256, 1024, 4096]),
        memory_mib in 1u64..8,
        scheduler in prop::sample::select(vec!["noop", "deadline", "anticipatory"]),
        infill in prop::sample::select(vec!["0", "0", "64KiB", "auto"]),
        contention in any::<bool>(),
        shape in 0u64..1000,
    ) {
        directed_with_exact_hints(
            seed, device, disks, kind, streams, request_bytes, file_kib, memory_mib, scheduler,
            infill, contention, shape,
        )?;
    }
}

/// The checks of `directed_with_exact_hints_reads_what_none_reads_plus_its_waste` for one case.
#[allow(clippy::too_many_arguments)]
fn directed_with_exact_hints(
    seed: u64,
    device: usize,
    disks: u32,
    kind: &str,
    streams: u32,
    request_bytes: u64,
    file_kib: u64,
    memory_mib: u64,
    scheduler: &str,
    infill: &str,
    contention: bool,
    shape: u64,
) -> Result<(), TestCaseError> {
    let case = |policy: &str| {
        host_case(
            seed,
            device,
            disks,
            policy,
            kind,
            streams,
            request_bytes,
            file_kib,
            memory_mib,
            scheduler,
            0,
            0,
            shape,
        )
        .0
        .into_iter()
        .map(|s| {
            if s.starts_with("workload.metadata") {
                "workload.metadata=false".into()
            } else {
                s
            }
        })
        .collect::<Vec<String>>()
    };
    let mut directed = case("directed");
    directed.push(format!("policy.infill_max={infill}"));
    directed.push(format!("policy.contention={contention}"));
    let none = case("none");
    let d = run(&config(&directed), RunOptions::default())
        .unwrap_or_else(|e| panic!("{directed:?}: {e}"))
        .report;
    let n = run(&config(&none), RunOptions::default())
        .unwrap_or_else(|e| panic!("{none:?}: {e}"))
        .report;
    prop_assert_eq!(d.app_bytes, n.app_bytes, "{:?}", directed);
    prop_assert!(
        d.device_bytes <= n.device_bytes + d.wasted_bytes,
        "{:?}: directed read {} bytes, none {}, directed wasted {}",
        directed,
        d.device_bytes,
        n.device_bytes,
        d.wasted_bytes
    );
    // And the waste is no more than what it read beyond `none`: a page counts as wasted only
    // once the device has read it. A prefetch still in flight when the last read completed
    // used to count, though `device_bytes` leaves out reads not done by then.
    prop_assert!(
        d.wasted_bytes <= d.device_bytes.saturating_sub(n.device_bytes),
        "{:?}: directed read {} bytes, none {}, directed wasted {}",
        directed,
        d.device_bytes,
        n.device_bytes,
        d.wasted_bytes
    );
    if streams == 1 && infill == "0" {
        prop_assert_eq!(d.wasted_bytes, 0, "{:?}", directed);
        prop_assert_eq!(d.device_bytes, n.device_bytes, "{:?}", directed);
    }
    Ok(())
}

/// A case the property found: a read waiting on two fetches had the first one's pages evicted
/// before the second arrived, and they counted as wasted though the read got them (21 pages
/// wasted where `directed` read 18 beyond `none`); and a page the policy read again meanwhile
/// counted as used when the read finished, though the read had its first copy. A read now uses
/// each page once, as it walks a cached one or as an awaited fetch brings it in (18 wasted).
#[test]
fn a_read_waiting_on_two_fetches_uses_the_first_ones_pages_as_they_arrive() {
    directed_with_exact_hints(0, 0, 1, "gaps", 3, 12_288, 4096, 1, "noop", "0", false, 185)
        .unwrap_or_else(|e| panic!("{e}"));
}

/// Cases the property found on a RAID-0: a volume request split across the members was still
/// under way when the last application read completed, after one member had read its part.
/// `device_bytes` counts that part, but its pages stayed in flight, so they counted as neither
/// prefetched nor wasted: 4,096 bytes read beyond `none` and its waste with two streams over
/// 4 KiB strips, and 32,768 with three streams over 16 KiB strips. Such pages now count as
/// prefetched once their member has read them, and as wasted, being unread at the end.
#[test]
fn pages_a_member_read_of_a_split_prefetch_still_under_way_count_as_wasted() {
    directed_with_exact_hints(
        182_544, 4, 2, "gaps", 2, 4096, 1024, 1, "noop", "64KiB", false, 216,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    directed_with_exact_hints(
        0,
        4,
        2,
        "gaps",
        3,
        65_536,
        4096,
        5,
        "anticipatory",
        "64KiB",
        false,
        38,
    )
    .unwrap_or_else(|e| panic!("{e}"));
}

/// A case the property found on one disk: a read that had copied its first page and waited for
/// room for the next had that page evicted meanwhile; a fetch then read both again, and as the
/// read waited on it for its second page it copied the first once more, so that copy counted as
/// used though the read had the page already: 4,096 bytes read beyond `none` and its waste. A
/// read now copies from each fetch only the pages from where it began to wait on it.
#[test]
fn a_read_does_not_copy_again_a_page_it_had_before_it_waited() {
    directed_with_exact_hints(
        0,
        0,
        1,
        "gaps",
        3,
        12_288,
        4096,
        1,
        "anticipatory",
        "0",
        false,
        780,
    )
    .unwrap_or_else(|e| panic!("{e}"));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(24), ..ProptestConfig::default() })]

    /// Infill never makes `directed` read more than twice what the same run reads with infill 0,
    /// on workloads whose hints cover the whole file (`scan`, `tiles`): there every gap byte is
    /// also a hinted byte, so a gap read early is read again at most once, when its own read is
    /// fetched. That holds only while infill cannot push a fetch past memory: the gap bytes a
    /// stream has in flight count against its window beside the hinted bytes it holds. Before
    /// they did, a window that filled a small page cache sent runs spanning the whole 4 MiB file,
    /// memory refused them, and each application read swept the refused reads again, infill and
    /// all: up to 126x what infill 0 reads, in 1 to 3 MiB. A failure prints the assignments (`seed`
    /// among them) that `foresight sim --set` replays.
    #[test]
    fn directed_infill_reads_at_most_twice_what_no_infill_reads(
        seed in 0u64..1_000_000,
        memory_kib in prop::sample::select(vec![1024u64, 1536, 2048, 3072, 6144]),
        disks in 1u32..4,
        preset in prop::sample::select(vec!["cheetah-15k5", "wd800jd"]),
        kind in prop::sample::select(vec!["scan", "tiles"]),
        streams in 1u32..3,
        read_kib in prop::sample::select(vec![4u64, 8, 16]),
        infill in prop::sample::select(vec!["auto", "64KiB", "256KiB", "1MiB"]),
    ) {
        let case = |infill: &str| {
            let mut sets = vec![
                format!("seed={seed}"),
                format!("device.preset={preset}"),
                format!("host.memory={memory_kib}KiB"),
                "policy.name=directed".to_string(),
                format!("policy.infill_max={infill}"),
                format!("workload.kind={kind}"),
                format!("workload.streams={streams}"),
                "workload.file_size=4MiB".to_string(),
            ];
            if disks > 1 {
                sets.push("device.kind=raid0".into());
                sets.push(format!("device.disks={disks}"));
            }
            if kind == "tiles" {
                sets.push(format!("workload.tile={read_kib}KiB"));
                sets.push("workload.tiles_across=16".into());
            } else {
                sets.push(format!("workload.request={read_kib}KiB"));
            }
            sets
        };
        let with = case(infill);
        let without = case("0");
        let w = small_run(with.clone());
        let z = small_run(without);
        prop_assert_eq!(w.app_bytes, z.app_bytes, "{:?}", with);
        prop_assert!(
            w.device_bytes <= 2 * z.device_bytes,
            "{:?}: read {} bytes from the device, {} with infill 0",
            with, w.device_bytes, z.device_bytes
        );
    }
}
