//! `RunOptions::progress` on each of the three drivers: the host simulator, a `[dfs]` run and a
//! hinted workload over a tier stack. `foresight sim` draws its progress bar (or its line every
//! 5 s) from these calls, so a driver that never makes them leaves a long run silent.

use foresight_sim::experiments::config;
use foresight_sim::{run, Progress, RunOptions};

/// What one run reports, in order.
fn reports(sets: &[String]) -> Vec<Progress> {
    let cfg = config(sets);
    let mut seen = Vec::new();
    let mut record = |p: Progress| seen.push(p);
    run(
        &cfg,
        RunOptions {
            progress: Some(&mut record),
            ..RunOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("{sets:?}: {e}"));
    seen
}

/// The shares one run reports, in order; each is known.
fn fractions(sets: &[&str]) -> Vec<f64> {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    reports(&sets)
        .iter()
        .map(|p| {
            p.share
                .unwrap_or_else(|| panic!("{sets:?}: no share in {p:?}"))
        })
        .collect()
}

/// Reported during the run (not only at its end), from 0 to 1, never backwards, ending at 1.
fn check(what: &str, seen: &[f64]) {
    assert!(
        seen.iter().any(|&f| f < 1.0),
        "{what}: no progress before the end: {seen:?}"
    );
    assert!(
        seen.iter().all(|f| (0.0..=1.0).contains(f)),
        "{what}: {seen:?}"
    );
    assert!(
        seen.windows(2).all(|w| w[0] <= w[1]),
        "{what}: went backwards: {seen:?}"
    );
    assert_eq!(seen.last(), Some(&1.0), "{what}: did not end at 1");
}

#[test]
fn the_host_simulator_reports_progress() {
    check(
        "host",
        &fractions(&[
            "workload.streams=16",
            "workload.request=4KiB",
            "workload.duration=20s",
        ]),
    );
}

#[test]
fn a_dfs_run_reports_progress() {
    check(
        "dfs",
        &fractions(&[
            "dfs.system=aps",
            "device.preset=st6000nm0024",
            "workload.streams=16",
            "workload.request=128KiB",
            "workload.file_size=10GiB",
            "workload.duration=20s",
        ]),
    );
}

/// A host run whose files end long before its `workload.duration` reports the share of its reads
/// done when that is the further: 16 streams of 32 MiB end after about 10 simulated seconds, and
/// the share of a 100,000 s duration stayed below 0.01% until the end, so `foresight sim` showed
/// 0% and an estimate of hours for a run that was about to finish.
#[test]
fn a_host_run_that_ends_before_its_duration_reports_its_reads() {
    let seen = fractions(&[
        "workload.streams=16",
        "workload.request=4KiB",
        "workload.file_size=32MiB",
        "workload.duration=100000s",
    ]);
    check("host, reads end first", &seen);
    assert!(
        seen.iter().any(|&f| f > 0.1 && f < 1.0),
        "stuck near 0 until the end: {seen:?}"
    );
}

/// A trace replay with a `workload.duration` longer than the trace reports the share of its trace
/// read when that is the further, as it does without a duration.
#[test]
fn a_trace_that_ends_before_its_duration_reports_its_records() {
    let (_dir, trace) = mqsim_trace(200_000, None);
    let seen = fractions(&[
        "workload.kind=trace",
        "workload.format=mqsim",
        "device.kind=ssd",
        "device.preset=ssd-850evo",
        "workload.duration=100000s",
        trace.as_str(),
    ]);
    check("trace, records end first", &seen);
    assert!(
        seen.iter().any(|&f| f > 0.1 && f < 1.0),
        "stuck near 0 until the end: {seen:?}"
    );
}

/// Without a duration a `[dfs]` run's horizon is centuries away: its progress is its reads.
#[test]
fn a_dfs_run_without_a_duration_reports_its_reads() {
    let seen = fractions(&[
        "dfs.system=aps",
        "workload.streams=4",
        "workload.request=16KiB",
        "workload.file_size=256MiB",
    ]);
    check("dfs to the end", &seen);
    assert!(
        seen.iter().any(|&f| f > 0.1 && f < 1.0),
        "stuck near 0 until the end: {seen:?}"
    );
}

#[test]
fn a_tier_stack_run_reports_progress() {
    check(
        "tiered",
        &fractions(&[
            "device.kind=constant",
            "device.t_upper=52ms",
            "device.t_lower=120ms",
            "device.t_lower_to_upper=122ms",
            "policy.name=ipipe",
            "policy.x_cache=1",
            "workload.kind=hinted",
            "workload.reads=20000",
            "workload.block=4KiB",
        ]),
    );
}

/// An MQSim trace of `records` reads, one every microsecond, in a new directory.
fn mqsim_trace(records: u64, last_line: Option<&str>) -> (tempfile::TempDir, String) {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.trace");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    for i in 0..records {
        writeln!(out, "{} 0 {} 8 1", i * 1_000, i * 8).unwrap();
    }
    if let Some(line) = last_line {
        writeln!(out, "{line}").unwrap();
    }
    out.flush().unwrap();
    let set = format!(
        "workload.trace={}",
        toml::Value::String(path.display().to_string())
    );
    (dir, set)
}

/// A trace replayed up to `workload.trace_records_max` reports the share of those records done,
/// not of the file: a cap of a quarter of the file used to read at most 25% until the end.
#[test]
fn a_capped_trace_reports_the_share_of_its_cap() {
    let (_dir, trace) = mqsim_trace(200_000, None);
    let seen = fractions(&[
        "workload.kind=trace",
        "workload.format=mqsim",
        "device.kind=ssd",
        "device.preset=ssd-850evo",
        "workload.trace_records_max=50000",
        trace.as_str(),
    ]);
    check("capped trace", &seen);
    assert!(
        seen.iter().any(|&f| f > 0.5 && f < 1.0),
        "stuck below the cap's share of the file until the end: {seen:?}"
    );
}

/// A run that a trace stops with an error (here a request longer than the block queue takes,
/// met after 20,000 requests) does not report itself done: `foresight sim` would note 100%
/// just before the error.
#[test]
fn a_trace_run_stopped_by_an_error_does_not_report_100_percent() {
    let (_dir, trace) = mqsim_trace(20_000, Some("20000000 0 0 100000000 1"));
    let cfg = config(&[
        "workload.kind=trace".to_string(),
        "workload.format=mqsim".to_string(),
        "device.kind=ssd".to_string(),
        "device.preset=ssd-850evo".to_string(),
        trace,
    ]);
    let mut seen = Vec::new();
    let mut record = |p: Progress| seen.push(p.share.expect("a file's share is known"));
    let e = run(
        &cfg,
        RunOptions {
            progress: Some(&mut record),
            ..RunOptions::default()
        },
    )
    .unwrap_err();
    assert!(e.to_string().contains("100000000 sectors"), "{e}");
    assert!(!seen.is_empty(), "no progress during the run");
    assert!(
        seen.iter().all(|&f| f < 1.0),
        "a failed run reported 100%: {seen:?}"
    );
}

/// A trace read from a pipe has no length until its end, so its share is not known: its progress
/// was the share of a file size of 0, a 0 until the end, and `foresight sim` showed "0%" for the
/// whole replay. It now reports the records and bytes read and the simulated time, all growing
/// during the run, and a share once the pipe's end has been read, ending at 1.
#[cfg(target_os = "linux")]
#[test]
fn a_trace_from_a_pipe_reports_records_read_and_simulated_time() {
    use std::io::Write;
    const RECORDS: u64 = 200_000;
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("trace.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo {}", fifo.display());
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            // Opening blocks until the replay opens the other end.
            let mut out = std::io::BufWriter::new(std::fs::File::create(&fifo).unwrap());
            for i in 0..RECORDS {
                writeln!(out, "{} 0 {} 8 1", i * 1_000, i * 8).unwrap();
            }
        })
    };
    let seen = reports(&[
        "workload.kind=trace".to_string(),
        "workload.format=mqsim".to_string(),
        "device.kind=ssd".to_string(),
        "device.preset=ssd-850evo".to_string(),
        format!(
            "workload.trace={}",
            toml::Value::String(fifo.display().to_string())
        ),
    ]);
    writer.join().expect("the writer ends");
    let unknown: Vec<&Progress> = seen.iter().filter(|p| p.share.is_none()).collect();
    assert!(
        unknown.len() >= 2,
        "no report before the pipe's end: {seen:?}"
    );
    let records: Vec<u64> = unknown.iter().map(|p| p.trace.unwrap().records).collect();
    let bytes: Vec<u64> = unknown
        .iter()
        .map(|p| p.trace.unwrap().read_bytes)
        .collect();
    let simulated: Vec<f64> = unknown.iter().map(|p| p.simulated_s).collect();
    for (what, grows) in [
        ("records", records.windows(2).all(|w| w[0] < w[1])),
        ("bytes", bytes.windows(2).all(|w| w[0] < w[1])),
        ("simulated time", simulated.windows(2).all(|w| w[0] < w[1])),
    ] {
        assert!(grows, "{what} did not grow: {seen:?}");
    }
    assert!(records[0] > 0 && simulated[0] > 0.0, "{seen:?}");
    // Known shares come last (the pipe's end read), never go back, and end at 1 with every record.
    let first_known = seen.iter().position(|p| p.share.is_some()).unwrap();
    assert!(seen[first_known..].iter().all(|p| p.share.is_some()));
    let shares: Vec<f64> = seen[first_known..]
        .iter()
        .map(|p| p.share.unwrap())
        .collect();
    assert!(shares.windows(2).all(|w| w[0] <= w[1]), "{shares:?}");
    let last = seen.last().unwrap();
    assert_eq!(last.share, Some(1.0));
    assert_eq!(last.trace.unwrap().records, RECORDS);
}
