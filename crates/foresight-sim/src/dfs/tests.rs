//! The DFS model against paper 004's shapes: every system moves data and stops at the end of each
//! file, dedicated workers beat the shared queue (Fig. 9a golden), APS raises alpha with the delay,
//! a small TCP window caps one stream, and the link carries no more than it could in the run.

use super::*;

fn quick(system: DfsSystem, streams: u32) -> DfsParams {
    DfsParams {
        system,
        streams,
        duration: Duration::from_millis(2000),
        ..DfsParams::default()
    }
}

#[test]
fn every_system_moves_data() {
    for s in foresight_policy::adaptive::dfs::DFS_SYSTEMS {
        let r = run(&quick(*s, 2)).unwrap();
        assert!(r.report.throughput_mib_s > 1.0, "{s}: {:?}", r.report);
    }
}

#[test]
fn a_stream_ends_at_the_end_of_its_file() {
    // Files of 1 MiB fit in every client cache: a stream that went back to the start would read
    // them from memory at no simulated time and the run would never reach its end.
    for s in foresight_policy::adaptive::dfs::DFS_SYSTEMS {
        let p = DfsParams {
            file_size: ByteLen::mib(1),
            ..quick(*s, 2)
        };
        let r = run(&p).unwrap().report;
        assert_eq!(r.app_bytes, 2 << 20, "{s}: {r:?}");
        assert!(
            r.elapsed_s < 2.0,
            "{s}: the streams end before the duration: {r:?}"
        );
    }
}

/// `stall_s` counts the reads still waiting when the run ends, as the host's does: two streams
/// that never think always have one read out, so over 200 ms they wait 0.4 s. Only completed
/// reads used to count.
#[test]
fn stall_counts_the_reads_still_waiting_when_the_run_ends() {
    for s in foresight_policy::adaptive::dfs::DFS_SYSTEMS {
        let p = DfsParams {
            duration: Duration::from_millis(200),
            ..quick(*s, 2)
        };
        let r = run(&p).unwrap().report;
        assert!(r.app_requests > 0, "{s}: {r:?}");
        assert!(
            (r.stall_s - 0.4).abs() < 1e-9,
            "{s}: stall_s {} != 0.4",
            r.stall_s
        );
    }
}

#[test]
fn requests_are_recorded_one_per_application_read() {
    let p = DfsParams {
        file_size: ByteLen::mib(1),
        ..quick(DfsSystem::Aps, 2)
    };
    let mut records: Vec<crate::metrics::RequestRecord> = Vec::new();
    let (r, _) = run_logged(&p, RequestLog::new(Some(&mut records)), None).unwrap();
    // `--requests-out` of a [dfs] run used to hold the CSV header alone.
    assert_eq!(records.len() as u64, r.report.app_requests);
    for s in 0..2 {
        let offsets: Vec<u64> = records
            .iter()
            .filter(|x| x.stream == s)
            .map(|x| x.offset)
            .collect();
        let want: Vec<u64> = (0..offsets.len() as u64).map(|i| i * p.request.0).collect();
        assert_eq!(offsets, want, "stream {s} reads its file in order");
    }
    assert!(records
        .iter()
        .all(|x| x.complete_s >= x.submit_s && x.bytes == p.request.0));
}

fn fig9a(system: DfsSystem, queue: Option<QueueKind>, streams: u32) -> f64 {
    let p = DfsParams {
        system,
        queue,
        streams,
        duration: Duration::from_millis(1500),
        ..DfsParams::default()
    };
    run(&p).unwrap().report.throughput_mib_s
}

/// Paper 004, Fig. 9a in the model (one `st6000nm0024`, 32 workers, 128 KiB reads, 1.5 s runs).
/// The golden values were measured with this model; a change of more than the stated tolerance
/// means the model changed and the report must be looked at again. The bounds (dedicated
/// workers at least 2x the shared queue at 16 streams; APS within 10% of the local file system up
/// to the worker count) are checked on their own as well. The golden ratio was 5.3 while CFQ took
/// its seek history at dispatch; taken as requests arrive, fewer of the shared queue's worker
/// queues are seeky when they run dry and fewer split, so the shared queue reads 48.1 MiB/s where
/// it read 25.4 and the ratio is 3.3.
#[test]
fn golden_fig9a_dedicated_over_shared_and_aps_over_local() {
    const GOLDEN_DEDICATED_OVER_SHARED_16: f64 = 3.3;
    const TOLERANCE: f64 = 0.25;
    let aps16 = fig9a(DfsSystem::Aps, None, 16);
    let shared16 = fig9a(DfsSystem::Aps, Some(QueueKind::Shared), 16);
    let ratio = aps16 / shared16;
    println!(
        "16 streams: dedicated {aps16:.1} MiB/s, shared {shared16:.1} MiB/s, ratio {ratio:.2}"
    );
    assert!(ratio >= 2.0, "dedicated/shared = {ratio:.2} < 2");
    assert!(
        (ratio / GOLDEN_DEDICATED_OVER_SHARED_16 - 1.0).abs() <= TOLERANCE,
        "dedicated/shared = {ratio:.2}, golden {GOLDEN_DEDICATED_OVER_SHARED_16} +- {TOLERANCE}"
    );
    for n in [1, 4, 16, 32] {
        let aps = fig9a(DfsSystem::Aps, None, n);
        let local = fig9a(DfsSystem::Local, None, n);
        println!("{n} streams: aps {aps:.1} MiB/s, local {local:.1} MiB/s");
        assert!(
            (aps / local - 1.0).abs() <= 0.10,
            "{n} streams: aps {aps:.1} vs local {local:.1} MiB/s"
        );
    }
}

fn one_stream_at(system: DfsSystem, delay_ms: u64, window_bytes: u64) -> DfsReport {
    let mut p = quick(system, 1);
    p.duration = Duration::from_millis(1500);
    p.link.delay = Duration::from_millis(delay_ms);
    p.link.window = ByteLen(window_bytes);
    run(&p).unwrap()
}

/// Paper 004, Fig. 12b: with a 30 MB window, APS raises alpha with the delay and keeps one stream at
/// the disk's rate, while a client with no readahead (Gluster-like) pays a round trip per request.
#[test]
fn aps_raises_alpha_with_the_delay_and_keeps_the_rate() {
    let near = one_stream_at(DfsSystem::Aps, 0, 30_000_000);
    let far = one_stream_at(DfsSystem::Aps, 8, 30_000_000);
    assert!(
        far.figures.alpha >= 20,
        "alpha {} at 8 ms",
        far.figures.alpha
    );
    assert!(far.figures.alpha > near.figures.alpha);
    let kept = far.report.throughput_mib_s / near.report.throughput_mib_s;
    assert!(kept >= 0.9, "APS keeps {kept:.2} of its rate at 8 ms");
    let gluster = one_stream_at(DfsSystem::Gluster, 8, 30_000_000);
    assert!(
        gluster.report.throughput_mib_s < 0.2 * near.report.throughput_mib_s,
        "gluster {:.1} MiB/s at 8 ms",
        gluster.report.throughput_mib_s
    );
}

/// The window bounds one connection: at 25 ms one way a 6 MB buffer, of which Linux advertises
/// 3 MB, carries at most 3 MB / 50 ms = 57 MiB/s, less than the disk delivers.
#[test]
fn a_small_window_caps_one_stream_at_long_delays() {
    let r = one_stream_at(DfsSystem::Aps, 25, 6_000_000);
    let cap_mib_s = 3e6 / 0.05 / (1u64 << 20) as f64;
    assert!(
        r.report.throughput_mib_s <= cap_mib_s * 1.02,
        "{:.1} MiB/s above the window's {cap_mib_s:.1}",
        r.report.throughput_mib_s
    );
    assert!(r.report.throughput_mib_s >= cap_mib_s * 0.6);
}

/// Paper 004, section 7.2.4: the 6 MB TCP buffer of its machines costs a lone stream from 8 ms one
/// way, because only half of the buffer is advertised (3 MB per 16 ms round trip is 179 MiB/s,
/// below the disk's rate); a 30 MB buffer does not. The link once let the whole buffer be in
/// flight, and APS lost nothing at 8 ms with either.
#[test]
fn a_6mb_buffer_binds_a_lone_stream_from_8ms_and_a_30mb_one_does_not() {
    let small = one_stream_at(DfsSystem::Aps, 8, 6_000_000);
    let large = one_stream_at(DfsSystem::Aps, 8, 30_000_000);
    let (s, l) = (small.report.throughput_mib_s, large.report.throughput_mib_s);
    let cap_mib_s = 3e6 / 0.016 / (1u64 << 20) as f64;
    assert!(s <= cap_mib_s * 1.02, "{s:.1} MiB/s above {cap_mib_s:.1}");
    assert!(s < 0.9 * l, "6 MB: {s:.1} MiB/s, 30 MB: {l:.1} MiB/s");
}

/// Lustre asks for 40 MiB ahead of each stream; over a 100 Mbit/s link most of it is still
/// waiting for the wire when the run ends. The bytes reported as carried to the clients cannot
/// exceed what the link carries in the run's time.
#[test]
fn network_bytes_are_what_the_link_carried_within_the_run() {
    for system in [DfsSystem::Lustre, DfsSystem::Hdfs, DfsSystem::Aps] {
        let mut p = quick(system, 4);
        p.link.bandwidth = Bandwidth::from_bytes_per_s(100e6 / 8.0);
        p.link.delay = Duration::from_millis(1);
        let r = run(&p).unwrap();
        let carried = r.figures.network_bytes as f64;
        let cap = p.link.bandwidth.bytes_per_s * r.report.elapsed_s;
        assert!(
            carried <= cap,
            "{system}: {carried} bytes reported over a link that carries {cap} in {} s",
            r.report.elapsed_s
        );
        // Every byte the applications got crossed the link.
        assert!(carried >= r.report.app_bytes as f64, "{system}: {r:?}");
    }
}

/// A `[dfs]` run counts its events, its caches' fetches (summed over the hosts, as
/// `prefetched_bytes` is), the server fetches a RAID-0 splits over members, and the reads its
/// caches served without I/O; all four used to be reported as 0.
#[test]
fn events_fetches_splits_and_hits_are_counted() {
    let mut prefetching = 0;
    for s in foresight_policy::adaptive::dfs::DFS_SYSTEMS {
        let single = run(&DfsParams {
            file_size: ByteLen::mib(8),
            request: ByteLen::kib(16),
            ..quick(*s, 2)
        })
        .unwrap()
        .report;
        assert!(single.events > single.app_requests, "{s}: {single:?}");
        // A system that reads ahead (gluster's 16 KiB reads do not) issues fetches, and reads
        // of 16 KiB through its windows find their bytes in memory.
        let reads_ahead = single.prefetched_bytes > 0;
        prefetching += u32::from(reads_ahead);
        assert_eq!(single.fetches > 0, reads_ahead, "{s}: {single:?}");
        assert_eq!(single.hit_requests > 0, reads_ahead, "{s}: {single:?}");
        assert!(single.hit_requests <= single.app_requests, "{s}");
        assert_eq!(single.split_fetches, 0, "{s}: one device has no strips");
    }
    assert!(prefetching >= 5, "{prefetching} systems read ahead");
    let disk = presets::preset("st6000nm0024").expect("preset exists");
    let striped = run(&DfsParams {
        device: DfsDevice::Raid0 {
            disk,
            disks: 4,
            strip: ByteLen::kib(64),
        },
        file_size: ByteLen::mib(8),
        ..quick(DfsSystem::Local, 2)
    })
    .unwrap()
    .report;
    assert!(striped.split_fetches > 0, "{striped:?}");
    assert!(striped.split_fetches <= striped.fetches, "{striped:?}");
}

/// A larger TCP buffer never makes a lone stream slower, all else equal: it only lets responses
/// arrive sooner. Cases (system, one-way delay, two buffers) are drawn from printed seeds, with no
/// tolerance. NFS is among them since its server's CFQ merges the queues of the workers serving
/// one stream, as Linux does: before, one stream's reads sat in several workers' queues, and when
/// a slice ended with one worker's requests behind another's readahead they waited a whole slice,
/// depending on when requests arrived (seed 10 drew NFS at 4 ms: 165.0 MiB/s with a 3.7 MB
/// buffer, 160.0 with 5.8 MB).
#[test]
fn a_larger_buffer_never_slows_a_lone_stream() {
    let systems = [
        DfsSystem::Aps,
        DfsSystem::Dedicated,
        DfsSystem::Lustre,
        DfsSystem::Hdfs,
        DfsSystem::Gluster,
        DfsSystem::Nfs,
    ];
    for seed in 0..40u64 {
        let mut rng = Rng::new(seed);
        let system = systems[rng.below(systems.len() as u64) as usize];
        let delay_us = [200, 1_000, 4_000, 8_000, 12_000, 25_000][rng.below(6) as usize];
        let small = 8 * 1024 + rng.below(30_000_000);
        let large = small + 1 + rng.below(30_000_000);
        let rate = |window: u64| {
            let mut p = quick(system, 1);
            p.duration = Duration::from_millis(1500);
            p.link.delay = Duration::from_micros(delay_us);
            p.link.window = ByteLen(window);
            run(&p).unwrap().report.throughput_mib_s
        };
        let (s, l) = (rate(small), rate(large));
        println!("seed {seed}: {system} at {delay_us} us: {s:.2} -> {l:.2} MiB/s");
        assert!(
            l >= s,
            "seed {seed}: {system} at {delay_us} us one way: {l:.2} MiB/s with a {large}-byte \
             buffer, {s:.2} with {small} bytes"
        );
    }
}

/// A lone NFS stream at 25 ms one way over buffers of 6 to 50 MB (the 1.5 s runs of
/// `one_stream_at`; ARCHITECTURE.md quotes 8 s runs). Without merged CFQ queues it read 165.0 MiB/s
/// with 30 MB and 135.0 with 40 MB; with them 185.0 from 30 MB on.
#[test]
fn a_lone_nfs_stream_gains_from_every_larger_buffer_at_25ms() {
    let mut last = (0, 0.0);
    for mb in [6u64, 10, 20, 30, 40, 50] {
        let r = one_stream_at(DfsSystem::Nfs, 25, mb * 1_000_000).report;
        println!(
            "nfs at 25 ms, {mb} MB buffer: {:.1} MiB/s",
            r.throughput_mib_s
        );
        assert!(
            r.throughput_mib_s >= last.1,
            "{:.1} MiB/s with {mb} MB, {:.1} with {} MB",
            r.throughput_mib_s,
            last.1,
            last.0
        );
        last = (mb, r.throughput_mib_s);
    }
}

/// A lone sequential stream that reads its file to the end reads every page its client's and
/// server's caches fetch ahead, so it wastes nothing. (A prefetch whose bytes have not reached
/// the client when the run ends counts as neither prefetched nor wasted, as in a host run.
/// Counted as wasted, a lone Lustre stream with its 40 MiB of RPCs in flight wasted 83,886,080
/// bytes in 2 s, and HDFS's caches counted more than twice the device's bytes ahead.)
#[test]
fn a_lone_sequential_stream_wastes_nothing() {
    for s in foresight_policy::adaptive::dfs::DFS_SYSTEMS {
        let r = run(&DfsParams {
            file_size: ByteLen::mib(64),
            duration: Duration::from_millis(60_000),
            ..quick(*s, 1)
        })
        .unwrap()
        .report;
        assert_eq!(r.app_bytes, 64 << 20, "{s}: read to its end: {r:?}");
        assert_eq!(r.wasted_bytes, 0, "{s}: {r:?}");
        assert!(r.prefetched_bytes <= 2 * r.device_bytes, "{s}: {r:?}");
    }
}

/// The `dfs` figures are `null` where they do not apply or are undefined: `local` has no network
/// and no server workers, so no round trip and no queue kind, and a run that asked for no byte
/// has no useless ratio (it used to divide by 1: a 1 ns `local` run reported the device's 131,072
/// bytes as a ratio, an `rtt_ms` of 0.205 and a `shared` queue). A networked system keeps all
/// three.
#[test]
fn figures_that_do_not_apply_are_null() {
    let nothing = run(&DfsParams {
        duration: Duration(1),
        ..quick(DfsSystem::Local, 1)
    })
    .unwrap();
    assert_eq!(nothing.report.app_bytes, 0);
    let f = &nothing.figures;
    assert_eq!(
        (&f.useless_ratio, &f.rtt_ms, &f.queue),
        (&None, &None, &None)
    );
    let json = serde_json::to_value(&nothing.report).unwrap();
    for key in ["useless_ratio", "rtt_ms", "queue"] {
        assert!(json["dfs"][key].is_null(), "{key}: {}", json["dfs"]);
    }
    let lustre = run(&quick(DfsSystem::Lustre, 1)).unwrap().figures;
    assert!(lustre.useless_ratio.is_some_and(|u| u >= 0.0), "{lustre:?}");
    assert!(lustre.rtt_ms.is_some_and(|ms| ms > 0.0), "{lustre:?}");
    assert_eq!(lustre.queue.as_deref(), Some("shared"));
}

/// The pages of a client's fetch whose RPC replies arrived before the run ended count as
/// prefetched and, unread, as wasted, though the rest of the fetch is still under way: they are in
/// `network_bytes`. A lone Lustre stream's 40 MiB window of 1 MiB RPCs cut at 1.5 s (`sim --set
/// dfs.system=lustre --set workload.duration=1500ms`) used to count 30.6 MB prefetched of the
/// 73.7 MB that reached its client and none wasted, leaving 43 MB nowhere (now 73.6 MB
/// prefetched, 43.0 MB of it wasted); here, on the model's default disk, 229.0 of 262.7 MB.
#[test]
fn the_replies_that_reached_a_client_count_though_their_fetch_is_under_way() {
    let r = run(&DfsParams {
        duration: Duration::from_millis(1500),
        ..quick(DfsSystem::Lustre, 1)
    })
    .unwrap();
    let (rep, net) = (&r.report, r.figures.network_bytes);
    // Lustre's server reads no further than it is asked: what reached the client is the
    // replies' bytes and headers, all of it read ahead but the first read's demand.
    assert!(rep.prefetched_bytes + (1 << 20) >= net, "{net}: {rep:?}");
    assert!(rep.prefetched_bytes <= net, "{net}: {rep:?}");
    // What the stream did not read of it by the end is wasted.
    assert!(rep.wasted_bytes > 0, "{rep:?}");
    assert!(
        rep.prefetched_bytes - rep.wasted_bytes <= rep.app_bytes,
        "{rep:?}"
    );
}
