//! `drives`: the HDD model against measurements from real drives (DiskSim 4.0's validation set).
//!
//! Each of the three drives in `shared/data/disksim/` that comes with a validation trace (Quantum
//! Atlas 10K, IBM Ultrastar 18ES, Seagate Cheetah 4LP) is imported from its DiskSim parameter files
//! (`device.disksim`) and its 10,000-request trace, measured on the real drive, is replayed as it was
//! measured and as DiskSim replays it: on one disk with the `noop` scheduler, each request issued its
//! line's interarrival gap after the previous one completes ([`replay_config`]). The simulated service times (each
//! request's physical access time, see [`crate::validate`]) are compared with the measured ones by
//! Ruemmler and Wilkes' demerit figure, next to the figure DiskSim 4.0 itself reaches on the same
//! traces (`shared/data/README.md`). Nothing is fitted to the traces: every parameter comes from the
//! drive files.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::{config, Context, ExperimentError, Figure, Section};
use crate::metrics::RequestRecord;
use crate::plot::{LineChart, Series};
use crate::sim::{run, RunOptions, SimError};
use crate::trace::{read_trace, TraceFormat};
use crate::validate::{cdf_points, service_times_ms};

/// `(file stem, drive, DiskSim 4.0's own demerit in ms)`.
// 0.318 ms is DiskSim's measured figure for the Cheetah 4LP, not an approximation of 1/pi.
#[allow(clippy::approx_constant)]
pub const DRIVES: [(&str, &str, f64); 3] = [
    ("atlas10k", "Quantum Atlas 10K", 0.268),
    ("ibm18es", "IBM Ultrastar 18ES", 0.136),
    ("cheetah4LP", "Seagate Cheetah 4LP", 0.318),
];

/// `shared/data/disksim`, looked for beside the working directory and its ancestors, then beside
/// this crate's source directory and its ancestors. If neither has it, the relative path is
/// returned and the run fails naming the missing file.
pub fn disksim_dir() -> PathBuf {
    let roots = std::env::current_dir()
        .into_iter()
        .chain(std::iter::once(PathBuf::from(env!("CARGO_MANIFEST_DIR"))));
    for root in roots {
        for a in root.ancestors() {
            let d = a.join("shared").join("data").join("disksim");
            if d.is_dir() {
                return d;
            }
        }
    }
    PathBuf::from("shared/data/disksim")
}

/// Whether drive `stem`'s files are in `dir`: a run without them would fail at the first one read
/// with an error about `device.disksim`, a key the user of `reproduce` never gave.
fn check_data(dir: &Path, stem: &str) -> Result<(), ExperimentError> {
    let missing = ["diskspecs", "model", "trace"]
        .iter()
        .map(|ext| dir.join(format!("{stem}.{ext}")))
        .find(|p| !p.is_file());
    match missing {
        None => Ok(()),
        Some(path) => Err(ExperimentError::MissingData {
            experiment: "drives",
            path,
            why: if dir.is_dir() {
                format!("{} lacks it", dir.display())
            } else {
                "no shared/data/disksim/ was found beside the working directory or its parents, \
                 nor beside the source tree"
                    .to_string()
            },
        }),
    }
}

/// Checks, before any experiment runs, that the measured drives' files are where `drives` will
/// read them, so that a catalogue run does not stop there after the experiments before it.
pub fn check_shared_data() -> Result<(), ExperimentError> {
    let dir = disksim_dir();
    DRIVES
        .iter()
        .try_for_each(|(stem, _, _)| check_data(&dir, stem))
}

/// One drive's replay.
pub struct DriveResult {
    /// File stem.
    pub stem: &'static str,
    /// Drive name.
    pub drive: &'static str,
    /// Our demerit figure, ms.
    pub demerit_ms: f64,
    /// DiskSim's.
    pub disksim_demerit_ms: f64,
    /// Simulated service times, ms, in completion order.
    pub simulated_ms: Vec<f64>,
    /// Measured service times, ms, in trace order.
    pub measured_ms: Vec<f64>,
}

/// Replays the validation trace of the drive `stem` found in `dir`.
pub fn replay(
    dir: &Path,
    stem: &'static str,
    drive: &'static str,
    disksim_demerit_ms: f64,
) -> Result<DriveResult, ExperimentError> {
    let wrap = |source: SimError| ExperimentError::Sim {
        experiment: "drives",
        source,
    };
    let trace = dir.join(format!("{stem}.trace"));
    check_data(dir, stem)?;
    let cfg = replay_config(dir, stem);
    let mut requests: Vec<RequestRecord> = Vec::new();
    let out = run(
        &cfg,
        RunOptions {
            requests: Some(&mut requests),
            ..RunOptions::default()
        },
    )
    .map_err(wrap)?;
    let measured_ms: Vec<f64> = read_trace(&trace, TraceFormat::Disksim)
        .map_err(|e| wrap(e.into()))?
        .iter()
        .filter_map(|r| r.measured_service.map(|d| d.as_millis_f64()))
        .collect();
    let simulated_ms = service_times_ms(&requests);
    let demerit_ms = out.report.demerit_ms.unwrap_or(f64::NAN);
    Ok(DriveResult {
        stem,
        drive,
        demerit_ms,
        disksim_demerit_ms,
        simulated_ms,
        measured_ms,
    })
}

/// The run that replays drive `stem`'s validation trace as the drive was measured: one disk,
/// `noop`, and each request issued the line's gap after the previous one completed. The measuring
/// host waited for each completion, so replaying the gaps as open-loop arrivals would let the drive
/// idle, read ahead and rotate for a different time before each request than it did when measured.
pub fn replay_config(dir: &Path, stem: &str) -> crate::config::SimConfig {
    let specs = dir.join(format!("{stem}.diskspecs"));
    let trace = dir.join(format!("{stem}.trace"));
    config(&[
        format!("device.disksim={}", toml_string(&specs)),
        "workload.kind=trace".into(),
        "workload.format=disksim".into(),
        format!("workload.trace={}", toml_string(&trace)),
        "host.scheduler=noop".into(),
        "workload.closed=true".into(),
    ])
}

/// A path as a TOML string value, so `--set`-style parsing keeps it whole.
fn toml_string(p: &Path) -> String {
    let s = p.display().to_string();
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Runs the experiment.
pub fn run_experiment(ctx: &Context<'_>) -> Result<Section, ExperimentError> {
    let dir = disksim_dir();
    let mut results = Vec::new();
    for (stem, drive, disksim) in DRIVES {
        (ctx.log)(&format!("drives: replaying {stem}.trace"));
        results.push(replay(&dir, stem, drive, disksim)?);
    }
    let mut md = String::from("## drives: the disk model against real drives\n\n");
    md.push_str(
        "Each drive is imported from its DiskSim 4.0 parameter files (`device.disksim`) and its \
         10,000-request validation trace, measured on the real drive, is replayed as it was \
         measured: each request issued its interarrival gap after the previous one completes (one \
         disk, `noop`). The demerit figure is the RMS horizontal distance, in ms, \
         between the simulated and the measured service-time distributions (Ruemmler and Wilkes \
         1994; DiskSim's `rms`). No parameter is fitted to the traces.\n\n",
    );
    md.push_str(
        "| drive | trace | our demerit (ms) | DiskSim 4.0 demerit (ms) | ours / DiskSim |\n|---|---|---|---|---|\n",
    );
    let mut figures = Vec::new();
    let mut rows = Vec::new();
    for r in &results {
        md.push_str(&format!(
            "| {} | `{}.trace` | {:.3} | {:.3} | {:.2} |\n",
            r.drive,
            r.stem,
            r.demerit_ms,
            r.disksim_demerit_ms,
            r.demerit_ms / r.disksim_demerit_ms
        ));
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
        rows.push(json!({
            "drive": r.drive,
            "trace": format!("{}.trace", r.stem),
            "requests": r.measured_ms.len(),
            "demerit_ms": r.demerit_ms,
            "disksim_demerit_ms": r.disksim_demerit_ms,
            "mean_simulated_ms": mean(&r.simulated_ms),
            "mean_measured_ms": mean(&r.measured_ms),
        }));
        let measured = cdf_points(&r.measured_ms, 400);
        let simulated = cdf_points(&r.simulated_ms, 400);
        let mut csv = String::from("drive,series,service_ms,cumulative_fraction\n");
        for (name, pts) in [("measured", &measured), ("simulated", &simulated)] {
            for (x, y) in pts.iter() {
                csv.push_str(&format!("{},{name},{x:.4},{y:.5}\n", r.stem));
            }
        }
        let stem = format!("drives_{}", r.stem.to_lowercase());
        figures.push(Figure {
            stem: stem.clone(),
            chart: LineChart {
                title: format!(
                    "{}: service times (DiskSim's demerit {:.3} ms)",
                    r.drive, r.disksim_demerit_ms
                ),
                x_label: "service time (ms)".into(),
                y_label: "fraction of requests".into(),
                x_log2: false,
                y_log10: false,
                series: vec![
                    Series {
                        name: "measured".into(),
                        points: measured,
                        dashed: false,
                    },
                    Series {
                        name: format!("sim: demerit {:.3}ms", r.demerit_ms),
                        points: simulated,
                        dashed: true,
                    },
                ],
            },
            csv,
        });
    }
    md.push('\n');
    for f in &figures {
        md.push_str(&format!("![{}]({}.png)\n", f.stem, f.stem));
    }
    Ok(Section {
        markdown: md,
        results: json!({ "drives": rows }),
        figures,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without the measured drives' files the replay failed with "config key `device.disksim`:
    /// shared/data/disksim/atlas10k.diskspecs: cannot read", naming a key `reproduce` takes no
    /// part of and no way out; it now names the file, where the folder is looked for, and the
    /// command that runs the other experiments.
    #[test]
    fn missing_drive_files_are_named_with_where_they_are_looked_for_and_the_way_round() {
        let e = replay(
            Path::new("shared/data/disksim-absent"),
            "atlas10k",
            "Atlas",
            0.3,
        )
        .err()
        .expect("no files, no replay")
        .to_string();
        assert!(
            e.contains("experiment drives reads shared/data/disksim-absent/atlas10k.diskspecs")
                && e.contains("beside the working directory or its parents")
                && e.contains("foresight reproduce collapse striping streams directed")
                && !e.contains("config key"),
            "{e}"
        );
        // A folder that is there but lacks a file says so.
        let dir = tempfile::tempdir().unwrap();
        let e = replay(dir.path(), "atlas10k", "Atlas", 0.3)
            .err()
            .expect("no files, no replay")
            .to_string();
        assert!(
            e.contains(&format!("{} lacks it", dir.path().display())),
            "{e}"
        );
    }
}
