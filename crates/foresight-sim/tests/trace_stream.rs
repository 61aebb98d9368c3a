//! Block traces replayed as they are read: the figures of the shared traces are those of the build
//! that loaded a trace whole before replaying it (`data/trace_replays.json`), a trace whose records
//! step back in time within the reader's window replays as its sorted self, and a bad record past
//! the window ends the run with an error naming its line instead of a report.

use std::path::{Path, PathBuf};

use foresight_sim::config::{apply_set, SimConfig};
use foresight_sim::{run, Report, RunOptions};

/// The project's `shared/data`, found beside the crate directory or one of its ancestors. A
/// missing directory fails the test rather than skipping it.
fn shared_data() -> PathBuf {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    crate_dir
        .ancestors()
        .map(|a| a.join("shared").join("data"))
        .find(|d| d.is_dir())
        .unwrap_or_else(|| {
            panic!(
                "test data missing: no `shared/data` beside {} or its ancestors",
                crate_dir.display()
            )
        })
}

/// A TOML string holding `path`.
fn toml_path(path: &Path) -> String {
    toml::Value::String(path.display().to_string()).to_string()
}

fn replay(sets: &[String]) -> Result<Report, String> {
    let mut t = toml::Table::new();
    for s in sets {
        apply_set(&mut t, s).map_err(|e| e.to_string())?;
    }
    let cfg = SimConfig::from_table(t, None).map_err(|e| e.to_string())?;
    run(&cfg, RunOptions::default())
        .map(|o| o.report)
        .map_err(|e| e.to_string())
}

/// The report as `foresight sim --json` prints it, less `wall_s`, read back as the golden file is
/// (serde_json's reading of a decimal may differ from the value printed by a bit, but not between
/// two readings of one text).
fn figures(report: &Report) -> serde_json::Map<String, serde_json::Value> {
    let text = serde_json::to_string(report).unwrap();
    let serde_json::Value::Object(mut m) = serde_json::from_str(&text).unwrap() else {
        panic!("a report is a JSON object");
    };
    m.remove("wall_s");
    m
}

#[test]
fn streamed_replays_of_the_shared_traces_give_the_loaded_replays_figures() {
    let data = shared_data();
    let golden: serde_json::Value = serde_json::from_str(include_str!("data/trace_replays.json"))
        .expect("trace_replays.json is JSON");
    let runs = golden["runs"].as_array().expect("runs");
    assert!(runs.len() >= 6);
    for case in runs {
        let name = case["name"].as_str().unwrap();
        let sets: Vec<String> = case["sets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                let s = s.as_str().unwrap();
                match s.split_once('=') {
                    Some((key @ ("workload.trace" | "device.disksim"), rel)) => {
                        format!("{key}={}", toml_path(&data.join(rel)))
                    }
                    _ => s.to_string(),
                }
            })
            .collect();
        let got = figures(&replay(&sets).unwrap_or_else(|e| panic!("{name}: {e}")));
        let want = case["report"].as_object().unwrap();
        let moved: Vec<String> = want
            .keys()
            .chain(got.keys())
            .filter(|k| want.get(*k) != got.get(*k))
            .map(|k| format!("{k}: {:?} -> {:?}", want.get(k), got.get(k)))
            .collect();
        assert!(moved.is_empty(), "{name}: {moved:#?}");
    }
}

/// The MQSim trace from `lines`, written to `dir`, replayed with `sets`.
fn replay_lines(dir: &Path, name: &str, lines: &[String], sets: &[&str]) -> Result<Report, String> {
    let path = dir.join(name);
    std::fs::write(&path, lines.join("\n")).unwrap();
    let mut all: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    all.extend([
        "workload.kind=trace".to_string(),
        "workload.format=mqsim".to_string(),
        format!("workload.trace={}", toml_path(&path)),
    ]);
    replay(&all)
}

/// The shared TPC-C trace with each run of 40 lines after the first put in falling time order
/// (lines of equal stamps keep their order, as a stable sort does): the reader's window puts it
/// back in order, and the replay is the original's.
#[test]
fn a_trace_out_of_order_within_the_window_replays_as_its_sorted_self() {
    let text = std::fs::read_to_string(shared_data().join("traces/tpcc-small.trace")).unwrap();
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    let stamp = |l: &String| -> u64 { l.split_whitespace().next().unwrap().parse().unwrap() };
    let mut shuffled = lines.clone();
    for chunk in shuffled[1..].chunks_mut(40) {
        chunk.sort_by_key(|l| std::cmp::Reverse(stamp(l)));
    }
    assert_ne!(shuffled, lines);
    let dir = tempfile::tempdir().unwrap();
    for sets in [
        &["policy.name=streams"][..],
        &[
            "workload.closed=true",
            "device.kind=ssd",
            "device.preset=ssd-850evo",
        ][..],
    ] {
        let sorted = replay_lines(dir.path(), "sorted", &lines, sets).unwrap();
        let out_of_order = replay_lines(dir.path(), "shuffled", &shuffled, sets).unwrap();
        assert_eq!(figures(&out_of_order), figures(&sorted), "{sets:?}");
    }
}

/// A record refused after the run has started (past the reader's first window of records) ends
/// the run with an error naming the file and the line, not with a report of the part replayed;
/// so does a request too long for the block queue.
#[test]
fn a_bad_record_past_the_window_ends_the_run_with_its_line() {
    let good = foresight_sim::trace::TRACE_REORDER_RECORDS + 100;
    let mut lines: Vec<String> = (0..good)
        .map(|i| format!("{} 0 {} 8 1", i * 1000, i * 8))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let sets = [
        "device.kind=ssd",
        "device.preset=ssd-850evo",
        "policy.name=none",
    ];
    lines.push("1 0 8".to_string());
    let e = replay_lines(dir.path(), "bad.mqsim", &lines, &sets).unwrap_err();
    assert!(e.contains(&format!("bad.mqsim:{}:", good + 1)), "{e}");
    assert!(e.contains("5 whitespace-separated columns"), "{e}");
    // 1,060,865 sectors are 1,037 requests of 512 KiB; the queue takes 1,036.
    lines.pop();
    lines.push(format!("{} 0 0 1060865 1", good * 1000));
    let e = replay_lines(dir.path(), "long.mqsim", &lines, &sets).unwrap_err();
    assert!(
        e.contains(&format!("long.mqsim:{}:", good + 1)) && e.contains("host.max_request"),
        "{e}"
    );
    lines.pop();
    let r = replay_lines(dir.path(), "good.mqsim", &lines, &sets).unwrap();
    assert_eq!(r.app_requests, good as u64);
}
