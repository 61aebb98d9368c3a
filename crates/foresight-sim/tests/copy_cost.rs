//! The copy of every application read into its buffer (`host.copy_rate`): a read served from
//! memory takes the time to copy its bytes, the copies of all clients share one memory bus, and
//! `"free"` gives back the figures of a host whose copies cost nothing.

use foresight_sim::experiments::config;
use foresight_sim::metrics::{RequestRecord, RequestSink};
use foresight_sim::{run, Report, RunOptions};

/// The default copy rate, 10 GiB/s, in MiB/s.
const DEFAULT_RATE_MIB_S: f64 = 10.0 * 1024.0;

fn sim(sets: &[&str]) -> Report {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    run(&config(&sets), RunOptions::default())
        .expect("runs")
        .report
}

/// Every request's record, kept.
#[derive(Default)]
struct Kept(Vec<RequestRecord>);

impl RequestSink for Kept {
    fn push(&mut self, r: &RequestRecord) -> std::io::Result<()> {
        self.0.push(*r);
        Ok(())
    }
}

/// 32 threads reading one 1 MiB file: all but the first reads are served from memory, and before
/// the copy was charged they read 1.3 TB/s. Now the memory bus paces them: at most the copy rate,
/// and within 3% of it (the first 2% of the second is the disk reading the file).
#[test]
fn a_one_file_webserver_reads_no_faster_than_the_copy_rate() {
    let r = sim(&[
        "workload.kind=webserver",
        "workload.files=1",
        "workload.duration=1s",
    ]);
    assert!(
        r.throughput_mib_s <= DEFAULT_RATE_MIB_S,
        "{:.1} MiB/s is over the copy rate, {DEFAULT_RATE_MIB_S} MiB/s",
        r.throughput_mib_s
    );
    assert!(
        r.throughput_mib_s >= 0.97 * DEFAULT_RATE_MIB_S,
        "{:.1} MiB/s is more than 3% below the copy rate, {DEFAULT_RATE_MIB_S} MiB/s",
        r.throughput_mib_s
    );
}

/// One client, so the bus is idle whenever its data is ready: each read served from memory takes
/// exactly the copy of its 64 KiB at 10 GiB/s, 6103.5 ns rounded up to 6104 ns, and every other
/// read takes longer.
#[test]
fn a_hit_on_an_idle_bus_takes_its_bytes_over_the_copy_rate() {
    let sets: Vec<String> = [
        "workload.streams=1",
        "workload.request=64KiB",
        "workload.file_size=64MiB",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut kept = Kept::default();
    let r = run(
        &config(&sets),
        RunOptions {
            requests: Some(&mut kept),
            ..Default::default()
        },
    )
    .expect("runs")
    .report;
    let copy_s = 6104e-9;
    assert!(r.hit_requests > 0, "no read was served from memory");
    let at_copy = kept
        .0
        .iter()
        .filter(|q| ((q.complete_s - q.submit_s) - copy_s).abs() < 1e-10)
        .count() as u64;
    assert_eq!(
        at_copy, r.hit_requests,
        "reads that took the copy's time alone, against the hits"
    );
    assert!(kept
        .0
        .iter()
        .all(|q| q.complete_s - q.submit_s > copy_s - 1e-10));
}

/// Two threads reading the same file, which stays in memory after their first pass, copy one
/// after the other: the run with two takes as long as the run with one plus the one's copies
/// again. Only during the first pass, while the disk reads the file, may the bus copy one
/// thread's read while the other waits on the disk, so the two may differ by at most that pass's
/// 16 copies. (Before the copy was charged, both runs took the disk's time alone.)
#[test]
fn two_clients_reading_from_memory_copy_one_after_the_other() {
    let run_of = |threads: &str| {
        sim(&[
            "workload.kind=webserver",
            "workload.files=1",
            "workload.file_size=1MiB",
            "workload.request=64KiB",
            "workload.requests=200",
            threads,
        ])
    };
    let one = run_of("workload.streams=1");
    let two = run_of("workload.streams=2");
    assert_eq!(two.app_bytes, 2 * one.app_bytes);
    assert_eq!(two.copy_s, one.copy_s.map(|s| 2.0 * s));
    let one_copies_s = one.copy_s.expect("a host run");
    // One 64 KiB copy at the default 10 GiB/s, rounded up to a whole nanosecond as the bus
    // rounds it: 6,103.5 ns, so 6,104.
    let copy_64k_s = (65_536.0 * 1e9 / (10.0 * f64::from(1u32 << 30))).ceil() * 1e-9;
    let first_pass_s = 16.0 * copy_64k_s;
    let extra_s = two.elapsed_s - one.elapsed_s;
    assert!(
        (extra_s - one_copies_s).abs() <= first_pass_s,
        "two threads took {extra_s:.9} s longer than one; one's copies take {one_copies_s:.9} s"
    );
}

/// With `host.copy_rate = "free"` every figure is what the simulator reported before copies were
/// charged: the JSON of that version for the same config, but `wall_s` and the new `copy_s` (0).
#[test]
fn free_copies_give_back_the_figures_of_a_host_without_them() {
    let r = sim(&[
        "host.copy_rate=free",
        "workload.streams=8",
        "workload.request=64KiB",
        "workload.duration=5s",
    ]);
    assert_eq!(r.copy_s, Some(0.0));
    let mut ours = serde_json::to_value(&r).expect("serializes");
    let mut before: serde_json::Value =
        serde_json::from_str(include_str!("data/free_copies_streams8.json")).expect("JSON");
    for v in [&mut ours, &mut before] {
        let m = v.as_object_mut().expect("an object");
        m.remove("wall_s");
        m.remove("copy_s");
    }
    assert_eq!(ours, before);
}

/// A stream scheduler with one buffer (M = R = 8 MiB, one stream dispatched) at 100 streams
/// keeps its throughput when copies cost time: within 1% of free copies (40.36 against 40.56
/// MiB/s). Reads the policy parked are released to the disk on their own only once nothing is in
/// flight; a read on the memory bus counts as in flight, since its client's next read, once the
/// copy ends, consumes the buffer the policy waits on. Released while the copy ran, every waiting
/// stream's read went to the disk alone, and the run fell to 26.93 MiB/s.
#[test]
fn a_copy_under_way_keeps_parked_reads_waiting_for_the_policy() {
    let run_of = |copy: &str| {
        sim(&[
            "policy.name=streams",
            "policy.readahead=8MiB",
            "policy.memory=8MiB",
            "workload.streams=100",
            "workload.file_size=700MiB",
            "workload.duration=40s",
            copy,
        ])
    };
    let charged = run_of("host.copy_rate=10GiB/s");
    let free = run_of("host.copy_rate=free");
    assert!(
        charged.throughput_mib_s >= 0.99 * free.throughput_mib_s,
        "{:.2} MiB/s with copies against {:.2} without",
        charged.throughput_mib_s,
        free.throughput_mib_s
    );
}
