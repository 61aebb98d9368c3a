//! Replay speed of a block trace whose records step back far in time, against the same records
//! in order: the measurement behind the trace reader's window design (`trace::TraceReader`).
//!
//! It writes 2 million MQSim records, 100 us apart on average, once in arrival order and once
//! shuffled within blocks of 4,096 records (nearly every record then steps back past the window's
//! queue), replays each on an SSD five times, alternating, and prints every run's `wall_s`, the
//! medians and their ratio. Both replays must give the same report but for `wall_s`; the times are
//! printed, not checked. Run it optimised, on an otherwise idle machine:
//!
//! ```text
//! cargo test --release -p foresight-sim --test trace_reorder_speed -- --ignored --nocapture
//! ```
//!
//! The same figures come from `foresight sim --set device.kind=ssd --set workload.kind=trace
//! --set workload.format=mqsim --set workload.trace=FILE --json` on the files it writes (kept
//! when `FORESIGHT_TRACE_BENCH_DIR` names a directory to write them to), which is how two builds
//! are compared: alternate their binaries on the same files.

use std::io::Write;
use std::path::{Path, PathBuf};

use foresight_sim::config::{apply_set, SimConfig};
use foresight_sim::{run, Report, RunOptions};

const RECORDS: u64 = 2_000_000;
const SHUFFLE_BLOCK_RECORDS: usize = 4_096;
const ROUNDS: usize = 5;

/// Writes `lines` as an MQSim trace at `path`.
fn write_trace(path: &Path, lines: &[String]) {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("creates the trace"));
    for line in lines {
        out.write_all(line.as_bytes()).expect("writes the trace");
    }
    out.flush().expect("writes the trace");
}

/// The in-order and the shuffled trace's paths in `dir`, written from a seeded generator.
fn write_traces(dir: &Path, seed: u64) -> (PathBuf, PathBuf) {
    let mut rng = foresight_core::Rng::new(seed);
    let mut stamp_ns = 1_000_000u64;
    let lines: Vec<String> = (0..RECORDS)
        .map(|_| {
            stamp_ns += 50_000 + rng.below(100_000);
            // 4 KiB reads anywhere in the first 1 TiB.
            let lba = rng.below(1 << 28) * 8;
            format!("{stamp_ns} 0 {lba} 8 1\n")
        })
        .collect();
    let in_order = dir.join("in-order.trace");
    write_trace(&in_order, &lines);
    // The first record stays first, as the in-order trace's time zero.
    let mut shuffled = lines;
    for block in shuffled[1..].chunks_mut(SHUFFLE_BLOCK_RECORDS) {
        // Fisher-Yates, from the seeded generator.
        for i in (1..block.len()).rev() {
            block.swap(i, rng.below(i as u64 + 1) as usize);
        }
    }
    let stepped_back = dir.join("shuffled.trace");
    write_trace(&stepped_back, &shuffled);
    (in_order, stepped_back)
}

fn replay(trace: &Path) -> Report {
    let mut t = toml::Table::new();
    for s in [
        "device.kind=ssd".to_string(),
        "workload.kind=trace".to_string(),
        "workload.format=mqsim".to_string(),
        format!(
            "workload.trace={}",
            toml::Value::String(trace.display().to_string())
        ),
    ] {
        apply_set(&mut t, &s).expect("a valid setting");
    }
    let cfg = SimConfig::from_table(t, None).expect("a valid config");
    run(&cfg, RunOptions::default())
        .expect("the trace replays")
        .report
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

#[test]
#[ignore = "a timing measurement: run with --release --ignored --nocapture"]
fn shuffled_trace_replay_time_against_in_order() {
    let seed = 0x7265_6f72;
    eprintln!("seed {seed:#x}");
    let temp = tempfile::tempdir().expect("a temporary directory");
    let dir = std::env::var_os("FORESIGHT_TRACE_BENCH_DIR")
        .map_or_else(|| temp.path().to_path_buf(), PathBuf::from);
    let (in_order, shuffled) = write_traces(&dir, seed);
    let (mut in_order_s, mut shuffled_s) = (Vec::new(), Vec::new());
    let mut reports = Vec::new();
    for round in 0..ROUNDS {
        // Alternate which goes first, so that a neighbour's burst does not favour one.
        let order = if round % 2 == 0 {
            [(&in_order, true), (&shuffled, false)]
        } else {
            [(&shuffled, false), (&in_order, true)]
        };
        for (trace, is_in_order) in order {
            let mut report = replay(trace);
            let wall_s = std::mem::take(&mut report.wall_s);
            eprintln!("round {round}: {} {wall_s:.3} s", trace.display());
            if is_in_order {
                in_order_s.push(wall_s);
            } else {
                shuffled_s.push(wall_s);
            }
            reports.push(report);
        }
    }
    assert!(
        reports.windows(2).all(|w| w[0] == w[1]),
        "seed {seed:#x}: the shuffled trace's report differs from the in-order one's"
    );
    let (a, b) = (median(in_order_s), median(shuffled_s));
    eprintln!(
        "median wall_s: in order {a:.3} s, shuffled within {SHUFFLE_BLOCK_RECORDS} records \
         {b:.3} s, ratio {:.3}",
        b / a
    );
}
