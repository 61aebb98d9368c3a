//! Replaying random block traces: whatever records a trace file holds, a run replays it or refuses
//! it with an error, never a panic.
//!
//! The records are MQSim lines (`arrival_ns device lba sectors type`) with extreme values mixed in:
//! LBAs past the device (wrapped into it), one-sector and huge lengths, equal and out-of-order arrivals,
//! writes. proptest prints the failing lines and the settings, so a failure replays.

use foresight_sim::config::{apply_set, SimConfig};
use foresight_sim::{run, RunOptions};
use proptest::prelude::*;

/// One record's fields but its arrival: the gap to the previous arrival (now and then negative,
/// which the parser sorts, or zero), the LBA, the length and read/write, mostly plausible and now
/// and then extreme.
fn record() -> impl Strategy<Value = (i64, u64, u64, u8)> {
    (
        prop_oneof![8 => 0i64..20_000_000, 1 => Just(0i64), 1 => -1_000_000i64..0],
        prop_oneof![8 => 0u64..1 << 24, 1 => 0u64..1 << 40, 1 => Just(u64::MAX >> 10)],
        prop_oneof![
            32 => 1u64..2048,
            4 => Just(1u64),
            4 => 2048u64..1 << 20,
            1 => 1u64 << 20..1 << 32,
        ],
        0u8..2,
    )
}

/// MQSim lines from records, arrivals as running sums of the gaps from 0, never before the first.
fn lines(records: &[(i64, u64, u64, u8)]) -> String {
    let mut t: i64 = 0;
    records
        .iter()
        .enumerate()
        .map(|(i, &(gap, lba, sectors, ty))| {
            if i > 0 {
                t = (t + gap).max(0);
            }
            format!("{t} 0 {lba} {sectors} {ty}")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_traces_replay_or_fail_with_an_error(
        records in proptest::collection::vec(record(), 1..40),
        device in prop::sample::select(vec![
            ("hdd", "wd800jd"),
            ("hdd", "cheetah-15k5"),
            ("hdd", "st6000nm0024"),
            ("hdd", "atlas-10k"),
            ("ssd", "ssd-850evo"),
            ("raid0", "cheetah-15k5"),
            ("jbod", "wd800jd"),
        ]),
        policy in prop::sample::select(vec!["none", "seqp", "msp+seqp", "msp+saseqp", "streams"]),
        cache in prop::sample::select(vec![
            "host.raid_cache=0",
            "host.raid_cache=\"64MiB\"",
            "device.controller_cache=\"1MiB\"",
        ]),
        closed in any::<bool>(),
    ) {
        let dir = tempfile::Builder::new()
            .prefix("foresight-trace-noise-")
            .tempdir()
            .unwrap();
        let path = dir.path().join("t.mqsim");
        std::fs::write(&path, lines(&records)).unwrap();
        let mut t = toml::Table::new();
        for s in [
            format!("device.kind={}", device.0),
            format!("device.preset={}", device.1),
            format!("policy.name={policy}"),
            cache.to_string(),
            format!("workload.closed={closed}"),
            "workload.kind=trace".to_string(),
            "workload.format=mqsim".to_string(),
            format!("workload.trace=\"{}\"", path.display()),
        ] {
            apply_set(&mut t, &s).unwrap();
        }
        // Refused or run: either is fine, as long as neither panics.
        if let Ok(cfg) = SimConfig::from_table(t, None) {
            let _ = run(&cfg, RunOptions::default());
        }
    }
}

/// Runs `lines` (MQSim) on `sets`.
fn replay(tag: &str, lines: &str, sets: &[&str]) -> Result<foresight_sim::Report, String> {
    let dir = tempfile::Builder::new()
        .prefix(&format!("foresight-trace-{tag}-"))
        .tempdir()
        .unwrap();
    let path = dir.path().join("t.mqsim");
    std::fs::write(&path, lines).unwrap();
    let mut t = toml::Table::new();
    let trace = format!("workload.trace=\"{}\"", path.display());
    for s in sets.iter().copied().chain([
        "workload.kind=trace",
        "workload.format=mqsim",
        trace.as_str(),
    ]) {
        apply_set(&mut t, s).unwrap();
    }
    let out = SimConfig::from_table(t, None)
        .map_err(|e| e.to_string())
        .and_then(|cfg| run(&cfg, RunOptions::default()).map_err(|e| e.to_string()));
    out.map(|o| o.report)
}

#[test]
fn a_block_cache_read_of_the_last_sector_stops_at_the_volume_end() {
    // atlas-10k holds 17,931,642 sectors: its last 4 KiB page has 2. The block-level caches work
    // in whole pages and used to send the volume a read 6 sectors past its end.
    for cache in ["host.raid_cache=1MiB", "device.controller_cache=1MiB"] {
        let r = replay(
            "end",
            "0 0 17931641 1 1\n",
            &["device.preset=atlas-10k", cache],
        )
        .unwrap();
        assert_eq!(r.app_requests, 1, "{cache}");
    }
}

#[test]
fn only_a_disksim_trace_gets_a_demerit_figure() {
    // MSR's times are response times, queueing included: nothing to set a service-time
    // distribution against.
    let msr = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/traces/msr-cambridge-hm0-sample.csv");
    assert!(msr.is_file(), "test data file {} is missing", msr.display());
    let mut t = toml::Table::new();
    for s in [
        "workload.kind=trace".to_string(),
        "workload.format=msr".to_string(),
        format!("workload.trace=\"{}\"", msr.display()),
    ] {
        apply_set(&mut t, &s).unwrap();
    }
    let cfg = SimConfig::from_table(t, None).unwrap();
    let r = run(&cfg, RunOptions::default()).unwrap().report;
    assert!(r.app_requests > 0);
    assert_eq!(r.demerit_ms, None);
}

#[test]
fn a_request_larger_than_the_block_queue_is_refused_naming_the_fix() {
    // 1,060,865 sectors are 1,037 requests of 512 KiB; the queue takes 1,036. Its submitter used
    // to wait for room that never comes, and the run stopped on the stall assertion.
    let e = replay("long", "0 0 0 1060865 1\n", &["policy.name=none"]).unwrap_err();
    assert!(
        e.contains("workload.trace") && e.contains("1060865") && e.contains("host.max_request"),
        "{e}"
    );
    let r = replay(
        "long-ok",
        "0 0 0 1060865 1\n",
        &["policy.name=none", "host.max_request=\"1MiB\""],
    )
    .unwrap();
    assert_eq!(r.app_bytes, 1_060_865 * 512);
}

#[test]
fn a_large_read_through_the_raid_cache_and_a_large_write_share_the_queues() {
    // A 512 MiB read fetched in parts through a 64 MiB RAID cache, then a 512 MiB write: the
    // write's 1,024 requests used to fill the member queue while the read still had parts to
    // send, and the next part overran the queue's bound.
    let r = replay(
        "share",
        "0 0 0 1 0\n0 0 0 1 0\n0 0 0 1048576 1\n0 0 0 1048576 0\n",
        &["policy.name=none", "host.raid_cache=\"64MiB\""],
    )
    .unwrap();
    assert_eq!(r.app_requests, 4);
    assert_eq!(r.app_bytes, 2 * 512 + 2 * (1 << 29));
}

/// `workload.trace_records_max` replays the trace's first records (it used to refuse a longer
/// trace, which was loaded whole); 0 replays it all.
#[test]
fn the_record_limit_replays_the_first_records() {
    let lines = "0 0 0 8 1\n1000 0 64 8 1\n2000 0 128 8 1\n3000 0 192 8 1\n";
    for (max, requests) in [(1, 1), (3, 3), (4, 4), (25_000_000, 4), (0, 4)] {
        let set = format!("workload.trace_records_max={max}");
        let r = replay("limit", lines, &[set.as_str()]).unwrap_or_else(|e| panic!("{set}: {e}"));
        assert_eq!(r.app_requests, requests, "{set}");
        assert_eq!(r.app_bytes, requests * 4096, "{set}");
    }
    let e = replay("limit", lines, &["workload.trace_records_max=-1"]).unwrap_err();
    assert!(e.contains("workload.trace_records_max"), "{e}");
}

/// A controller keeps its read-ahead whole, so a read that misses waits in the controller with
/// its read-ahead until there is room, not in the block queues: a burst of trace reads used to
/// pile up there past the controller's bound on waiting read-aheads and panic ("more than 1564
/// fetches waiting for room"). The trace submitter now blocks while the controller has no room
/// for another, as it does for full block queues, and every read is served.
#[test]
fn a_burst_of_trace_reads_waits_for_the_controllers_room() {
    let mut lines = String::new();
    let mut rng = foresight_core::Rng::new(7);
    for i in 0..2000u64 {
        let lba = rng.below(100_000_000) / 8 * 8;
        lines.push_str(&format!("{i} 0 {lba} 8 1\n"));
    }
    let r = replay(
        "controller-burst",
        &lines,
        &[
            "device.preset=wd800jd",
            "host.memory=1MiB",
            "device.controller_cache=1MiB",
            "device.controller_readahead=512KiB",
        ],
    )
    .unwrap();
    assert_eq!(r.app_requests, 2000, "{r:?}");
    assert_eq!(r.app_bytes, 2000 * 4096, "{r:?}");
}
