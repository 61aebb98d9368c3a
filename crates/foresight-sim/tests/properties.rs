//! Invariants of whole simulation runs, over random configs.
//!
//! proptest prints the failing config's inputs and saves them, so a failure replays; each config
//! also carries its own `seed`, printed with the failure.

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
        // `none` has no window, and its config refuses the key.
        if policy == "seqp" {
            sets.push(format!("policy.readahead_max={ra_kib}KiB"));
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
        prop_assert!(r.raid_cache_peak_bytes <= m_kib * 1024 + allowance,
            "seed {seed}: buffers peaked at {} > M {} KiB + {} pass-through", r.raid_cache_peak_bytes, m_kib, allowance);
                prop_assert!(r.memory_peak_bytes <= (64 << 20) + m_kib * 1024 + allowance);
        prop_assert_eq!(r.prefetched_bytes, 0, "the page cache above the scheduler reads on demand only");
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
            format!("policy.readahead_max={ra_kib}KiB"),
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
        if policy.ends_with("saseqp") {
            prop_assert_eq!(r.split_fetches, 0, "{:?}", sets);
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
