//! The HDD model against DiskSim's validation traces: every drive imported from its files must stay
//! within twice DiskSim's own demerit figure, and broken drive files are config errors naming the
//! file and line.

use std::path::{Path, PathBuf};

use foresight_sim::experiments::drives::{replay, DRIVES};
use foresight_sim::{config::SimConfig, RunOptions, SimError};

/// `shared/data/disksim` beside the crate or one of its ancestors; fails naming `file` if absent.
fn disksim_dir(file: &str) -> PathBuf {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    for a in crate_dir.ancestors() {
        let d = a.join("shared").join("data").join("disksim");
        if d.is_dir() {
            assert!(
                d.join(file).is_file(),
                "test data file {} is missing",
                d.join(file).display()
            );
            return d;
        }
    }
    panic!(
        "test data file shared/data/disksim/{file} is missing: no `shared/data` beside {} or its \
         ancestors",
        crate_dir.display()
    );
}

#[test]
fn every_validation_trace_is_within_twice_disksims_demerit() {
    for (stem, drive, disksim) in DRIVES {
        let dir = disksim_dir(&format!("{stem}.trace"));
        disksim_dir(&format!("{stem}.diskspecs"));
        let r = replay(&dir, stem, drive, disksim).unwrap_or_else(|e| panic!("{stem}: {e}"));
        eprintln!(
            "{drive}: demerit {:.3} ms (DiskSim {:.3} ms, ratio {:.2})",
            r.demerit_ms,
            disksim,
            r.demerit_ms / disksim
        );
        assert_eq!(
            r.simulated_ms.len(),
            10_000,
            "{stem}: every request completes"
        );
        assert!(
            r.demerit_ms <= 2.0 * disksim,
            "{drive}: demerit {:.3} ms is above twice DiskSim's {disksim:.3} ms",
            r.demerit_ms
        );
    }
}

#[test]
fn a_broken_drive_file_is_a_config_error_naming_file_and_line() {
    let src = disksim_dir("atlas10k.diskspecs");
    let guard = tempfile::Builder::new()
        .prefix("foresight-disksim-")
        .tempdir()
        .unwrap();
    let tmp = guard.path();
    for f in ["atlas10k.diskspecs", "atlas10k.model", "atlas10k.seek"] {
        std::fs::copy(src.join(f), tmp.join(f)).unwrap();
    }
    let model = tmp.join("atlas10k.model");
    let text = std::fs::read_to_string(&model).unwrap();
    std::fs::write(
        &model,
        text.replacen(
            "Number of cylinders = 10042",
            "Number of cylinders = many",
            1,
        ),
    )
    .unwrap();
    let mut t = toml::Table::new();
    foresight_sim::config::apply_set(
        &mut t,
        &format!(
            "device.disksim=\"{}\"",
            tmp.join("atlas10k.diskspecs").display()
        ),
    )
    .unwrap();
    let cfg = SimConfig::from_table(t, None).unwrap();
    let e = foresight_sim::run(&cfg, RunOptions::default()).unwrap_err();
    assert!(matches!(e, SimError::Config(_)), "{e}");
    let msg = e.to_string();
    assert!(msg.contains("atlas10k.model:3:"), "{msg}");
    assert!(msg.contains("Number of cylinders"), "{msg}");
}

#[test]
fn validation_requests_are_issued_their_gap_after_the_previous_completes() {
    use foresight_sim::experiments::drives::replay_config;
    use foresight_sim::trace::{read_trace, TraceFormat};
    let dir = disksim_dir("atlas10k.trace");
    let cfg = replay_config(&dir, "atlas10k");
    let mut recs: Vec<foresight_sim::metrics::RequestRecord> = Vec::new();
    foresight_sim::run(
        &cfg,
        RunOptions {
            requests: Some(&mut recs),
            ..RunOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let trace = read_trace(&dir.join("atlas10k.trace"), TraceFormat::Disksim).unwrap();
    assert_eq!(recs.len(), trace.len());
    assert_eq!(recs[0].submit_s, 0.0);
    for i in 1..recs.len() {
        let gap_s = (trace[i].arrival.0 - trace[i - 1].arrival.0) as f64 * 1e-9;
        let want_s = recs[i - 1].complete_s + gap_s;
        assert!(
            (recs[i].submit_s - want_s).abs() < 1e-6,
            "request {i} submitted at {} s, want {want_s} s (previous completion + its gap)",
            recs[i].submit_s
        );
    }
}
