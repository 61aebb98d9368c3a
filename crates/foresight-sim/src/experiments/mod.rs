//! The `reproduce` catalogue: experiments that rerun the papers' measurements in the simulator.
//!
//! Each experiment builds its configs, runs them (in parallel across the host's cores; every run is
//! deterministic, so the order of execution does not matter), and returns a [`Section`]: Markdown for
//! `report.md`, a JSON value for `results.json`, and the figures (CSV and PNG) it drew. `--quick`
//! shortens the simulated time of each run but keeps every point of every figure.

mod collapse;
mod directed;
pub mod drives;
mod informed;
mod network;
mod streams;
mod striping;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::Value;
use thiserror::Error;

use crate::config::SimConfig;
use crate::metrics::Report;
use crate::plot::LineChart;
use crate::sim::{run, RunOptions, SimError};

/// Why an experiment failed.
#[derive(Debug, Error)]
pub enum ExperimentError {
    /// A run could not start (a bug in the experiment's configs, or missing data).
    #[error("experiment {experiment}: {source}")]
    Sim {
        /// Which experiment.
        experiment: &'static str,
        /// The run's error.
        source: SimError,
    },
    /// Writing the outputs failed.
    #[error("writing {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// No experiment of that name.
    #[error("unknown experiment `{0}`; choose from: {names}", names = names().join(", "))]
    Unknown(String),
    /// An experiment's input files (the measured drives in `shared/data/`) are not there.
    #[error(
        "experiment {experiment} reads {path}, which is not there: {why}; run from a directory \
         with shared/data/ beside it or above it (the repository's ../shared/data/), or name the \
         other experiments, as in `foresight reproduce {others}`",
        path = .path.display(),
        others = names().into_iter().filter(|n| n != experiment).collect::<Vec<_>>().join(" ")
    )]
    MissingData {
        /// Which experiment.
        experiment: &'static str,
        /// The first file missing.
        path: PathBuf,
        /// Where the folder was looked for.
        why: String,
    },
}

/// A figure an experiment drew.
pub struct Figure {
    /// File stem (`collapse` gives `collapse.png` and `collapse.csv`).
    pub stem: String,
    /// The chart.
    pub chart: LineChart,
    /// CSV text with a header line.
    pub csv: String,
}

/// What one experiment contributes to the outputs.
pub struct Section {
    /// Markdown for `report.md`, starting with a `##` heading.
    pub markdown: String,
    /// The entry for `results.json`.
    pub results: Value,
    /// Figures to write.
    pub figures: Vec<Figure>,
}

/// Settings every experiment receives.
pub struct Context<'a> {
    /// Shorter runs.
    pub quick: bool,
    /// Progress lines for the user.
    pub log: &'a (dyn Fn(&str) + Sync),
}

/// An entry of the catalogue.
pub struct Experiment {
    /// Name on the command line.
    pub name: &'static str,
    /// One line on what it reproduces.
    pub about: &'static str,
    /// What `--quick` reduces, for the report's opening; empty when the quick run is the full one.
    pub quick: &'static str,
    /// Runs it.
    pub run: fn(&Context<'_>) -> Result<Section, ExperimentError>,
}

/// The catalogue, in report order.
pub fn catalogue() -> Vec<Experiment> {
    vec![
        Experiment {
            name: "collapse",
            about: "throughput of 1-256 sequential streams on one HDD under none and seqp (papers 000, 001)",
            quick: "4 s simulated per point instead of 30 s",
            run: collapse::run,
        },
        Experiment {
            name: "drives",
            about: "the HDD model against three real drives' measured service times (DiskSim validation traces)",
            quick: "",
            run: drives::run_experiment,
        },
        Experiment {
            name: "striping",
            about: "striping-aware readahead (SASEQP) and stripe prefetching (MSP) on RAID-0 (paper 000)",
            quick: "IOzone clients read 1 GiB in all instead of the paper's 8 GiB (files an eighth the size), \
                    and 10 s simulated per web-server point instead of 60 s",
            run: striping::run,
        },
        Experiment {
            name: "streams",
            about: "hundreds of sequential streams per disk: the stream scheduler against readahead (paper 001)",
            quick: "40 s simulated per point instead of 240 s (the DiskSim study 10 s instead of 60 s, \
                    eight disks 20 s instead of 120 s)",
            run: streams::run,
        },
        Experiment {
            name: "directed",
            about: "application-directed prefetching: seek vs read cost, infill, scan and tile speedups, contention (paper 003)",
            quick: "32 MiB of host memory instead of 128 MiB, with tables and scans scaled to it, 100 reads per \
                    Fig. 1 point instead of 400, and infill files of 64 MiB and 1 GiB instead of 512 MiB and 4 GiB",
            run: directed::run,
        },
        Experiment {
            name: "informed",
            about: "informed prefetching over storage tiers: TIP, iPipe, IPO, IPODS against the paper's simulator tables, then device models (paper 002)",
            quick: "the paper's tables are as in the full run; the device models read 300 blocks instead of 2,000",
            run: informed::run,
        },
        Experiment {
            name: "network",
            about: "DFS streams, random reads and delay: dedicated workers and delay-adaptive readahead (paper 004)",
            quick: "1.5 s simulated per sequential point instead of 10 s, 3 reads per random point instead of 12, \
                    1.5 s per delay point instead of 8 s",
            run: network::run,
        },
    ]
}

/// Names of every experiment.
pub fn names() -> Vec<&'static str> {
    catalogue().iter().map(|e| e.name).collect()
}

/// Applies `f` to every item on up to `available_parallelism` threads, each taking the next item
/// as it frees up, and returns the results in input order. `progress(done, total)` hears of every
/// finished item.
pub fn par_map<T: Sync, R: Send>(
    items: &[T],
    f: impl Fn(&T) -> R + Sync,
    progress: impl Fn(usize, usize) + Sync,
) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(items.len().max(1));
    let next = Mutex::new(0usize);
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    let done = Mutex::new(0usize);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = {
                    let mut n = next.lock().expect("lock");
                    let i = *n;
                    *n += 1;
                    i
                };
                if i >= items.len() {
                    break;
                }
                let r = f(&items[i]);
                results.lock().expect("lock")[i] = Some(r);
                let mut d = done.lock().expect("lock");
                *d += 1;
                progress(*d, items.len());
            });
        }
    });
    results
        .into_inner()
        .expect("lock")
        .into_iter()
        .map(|r| r.expect("every item finished"))
        .collect()
}

/// Runs `configs` on up to `available_parallelism` threads and returns the reports in input order.
pub fn run_all(
    experiment: &'static str,
    configs: &[SimConfig],
    ctx: &Context<'_>,
) -> Result<Vec<Report>, ExperimentError> {
    par_map(
        configs,
        |c| run(c, RunOptions::default()).map(|o| o.report),
        |d, n| (ctx.log)(&format!("{experiment}: {d}/{n} runs")),
    )
    .into_iter()
    .map(|r| r.map_err(|source| ExperimentError::Sim { experiment, source }))
    .collect()
}

/// The report's opening paragraph on the mode. A quick run says, experiment by experiment, what
/// it reduced, so that no figure of a reduced setup passes for the full one, and how to get the
/// full figures.
fn mode_note(quick: bool, chosen: &[&Experiment]) -> String {
    if !quick {
        return "Mode: full (`foresight reproduce` without `--quick`).\n\n".to_string();
    }
    let mut note = String::from(
        "Mode: `--quick`, a reduced setup. Every point of every figure is kept, but the figures below \
         come from shorter runs or smaller data than the full setup, so they can differ from it:\n\n",
    );
    for e in chosen {
        let what = if e.quick.is_empty() {
            "not reduced (the same as the full run)"
        } else {
            e.quick
        };
        note.push_str(&format!("- `{}`: {what}.\n", e.name));
    }
    note.push_str(
        "\nFor the full figures, run the same command without `--quick` (`foresight reproduce`, or \
         `cargo run --release -- reproduce`); it simulates several times longer.\n\n",
    );
    note
}

/// What `report.md` holds from a run's first figure until its report is written, `done` being
/// the experiments whose figures are all written. An output directory may hold an earlier run's
/// figures of other experiments (or of ones this run has not reached), so the note names the
/// experiments whose figures are this run's rather than claim every file beside it.
fn unfinished_report(done: &[&str]) -> String {
    let done = if done.is_empty() {
        "none yet".to_string()
    } else {
        done.join(", ")
    };
    format!(
        "# Foresight: reproduced results\n\n\
         This run has not finished: it is still running, or it was stopped. Experiments whose \
         figures it has written in full: {done}. Other figures beside this file are being \
         written by it or are from an earlier run. `results.json` is written with this report \
         when the run ends.\n"
    )
}

/// Writes `bytes` to `path` whole or not at all: into a hidden file beside it, then renamed over
/// it. A run stopped between `std::fs::write`'s truncation and its write (Ctrl-C lands anywhere)
/// left `report.md` empty, saying neither that the run had finished nor that it had not. A
/// symbolic link at `path` is written through, as before (renaming would replace the link).
fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return std::fs::write(path, bytes);
    }
    let name = path
        .file_name()
        .map_or_else(Default::default, |n| n.to_string_lossy());
    let tmp = path.with_file_name(format!(".{name}.partial"));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// Runs the named experiments (all when `names` is empty) and writes `report.md`, `results.json`
/// and each figure's PNG and CSV into `out`. From the first figure written until the end,
/// `report.md` says that the run has not finished and there is no `results.json`.
pub fn reproduce(
    names: &[String],
    quick: bool,
    out: &Path,
    log: &(dyn Fn(&str) + Sync),
) -> Result<(), ExperimentError> {
    let cat = catalogue();
    let chosen: Vec<&Experiment> = if names.is_empty() {
        cat.iter().collect()
    } else {
        names
            .iter()
            .map(|n| {
                cat.iter()
                    .find(|e| e.name == n)
                    .ok_or_else(|| ExperimentError::Unknown(n.clone()))
            })
            .collect::<Result<_, _>>()?
    };
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ExperimentError::Io { path, source }
    };
    std::fs::create_dir_all(out).map_err(io(out))?;
    let ctx = Context { quick, log };
    let mut report = String::from("# Foresight: reproduced results\n\n");
    report.push_str(&mode_note(quick, &chosen));
    let mut results = serde_json::Map::new();
    let md = out.join("report.md");
    let js = out.join("results.json");
    let mut marked_unfinished = false;
    let mut done: Vec<&str> = Vec::new();
    for e in chosen {
        log(&format!("{}: {}", e.name, e.about));
        let started = std::time::Instant::now();
        let section = (e.run)(&ctx)?;
        if !marked_unfinished && !section.figures.is_empty() {
            // From the first figure on, a previous run's report and results would describe
            // figures this run replaces; a run stopped before its end (Ctrl-C, a write that
            // fails) would leave them looking current. The report says so until it is written.
            write_whole(&md, unfinished_report(&done).as_bytes()).map_err(io(&md))?;
            match std::fs::remove_file(&js) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(&js)(e)),
                _ => {}
            }
            marked_unfinished = true;
        }
        for f in &section.figures {
            let png = out.join(format!("{}.png", f.stem));
            f.chart.write_png(&png).map_err(io(&png))?;
            let csv = out.join(format!("{}.csv", f.stem));
            write_whole(&csv, f.csv.as_bytes()).map_err(io(&csv))?;
        }
        if marked_unfinished && !section.figures.is_empty() {
            done.push(e.name);
            write_whole(&md, unfinished_report(&done).as_bytes()).map_err(io(&md))?;
        }
        report.push_str(&section.markdown);
        report.push('\n');
        results.insert(e.name.to_string(), section.results);
        log(&format!(
            "{}: done in {:.1} s",
            e.name,
            started.elapsed().as_secs_f64()
        ));
    }
    write_whole(&md, report.as_bytes()).map_err(io(&md))?;
    let text = serde_json::to_string_pretty(&Value::Object(results)).expect("JSON of plain values");
    write_whole(&js, (text + "\n").as_bytes()).map_err(io(&js))?;
    Ok(())
}

/// A config from `--set`-style assignments over the defaults. Experiment configs are code, so a
/// bad one is a programmer error and panics with the key.
pub fn config(sets: &[String]) -> SimConfig {
    let mut table = toml::Table::new();
    for s in sets {
        crate::config::apply_set(&mut table, s)
            .unwrap_or_else(|e| panic!("experiment config: {e}"));
    }
    SimConfig::from_table(table, None).unwrap_or_else(|e| panic!("experiment config: {e}"))
}

/// Rows of "the paper's figure beside ours" as JSON: `[{"what", "paper", "ours"}, ...]`.
pub fn paper_rows_json<W: AsRef<str>>(rows: &[(W, f64, f64)]) -> Value {
    Value::Array(
        rows.iter()
            .map(|(w, p, o)| serde_json::json!({"what": w.as_ref(), "paper": p, "ours": o}))
            .collect(),
    )
}

/// Share of device time spent positioning the head (seek + rotation), excluding queueing.
pub fn positioning_share(r: &Report) -> f64 {
    let b = &r.breakdown;
    let busy = b.seek_s + b.rotate_s + b.transfer_s + b.overhead_s;
    if busy > 0.0 {
        (b.seek_s + b.rotate_s) / busy
    } else {
        0.0
    }
}

/// `value` printed with `decimals` decimals, or more (up to 4) where that many would print it
/// equal to `bound` or on the wrong side of it: a figure reported as beyond a threshold must not
/// read as the threshold itself ("more than 1.25x" beside "1.25x").
pub fn beyond_bound(value: f64, bound: f64, decimals: usize) -> String {
    let mut d = decimals;
    loop {
        let shown = format!("{value:.d$}");
        let printed: f64 = shown.parse().unwrap_or(value);
        let bound_printed: f64 = format!("{bound:.d$}").parse().unwrap_or(bound);
        let apart = if value > bound {
            printed > bound_printed
        } else {
            printed < bound_printed
        };
        if apart || d >= 4 || value == bound {
            return shown;
        }
        d += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `report.md` and `results.json` are replaced whole, and no hidden partial file is left
    /// beside them, whether the rename succeeds or not.
    #[test]
    fn a_report_is_replaced_whole_and_leaves_no_partial_file() {
        let dir =
            std::env::temp_dir().join(format!("foresight-write-whole-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let md = dir.join("report.md");
        std::fs::write(&md, "an earlier, longer report\n").unwrap();
        write_whole(&md, b"new\n").unwrap();
        assert_eq!(std::fs::read_to_string(&md).unwrap(), "new\n");
        // A directory in the way: the rename fails, the error reaches the caller and the
        // partial file is removed.
        let blocked = dir.join("results.json");
        std::fs::create_dir_all(blocked.join("inside")).unwrap();
        assert!(write_whole(&blocked, b"{}\n").is_err());
        let mut left: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["report.md", "results.json"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A figure beyond a threshold never prints as the threshold: 1.2514 beyond 1.25 gets a
    /// third decimal, 0.51 beyond 0.5 a second; figures clear of it keep their decimals.
    #[test]
    fn a_figure_beyond_its_bound_never_prints_as_the_bound() {
        assert_eq!(beyond_bound(1.2504, 1.25, 2), "1.2504");
        assert_eq!(beyond_bound(1.2514, 1.25, 2), "1.251");
        assert_eq!(beyond_bound(1.46, 1.25, 2), "1.46");
        assert_eq!(beyond_bound(0.51, 0.5, 1), "0.51");
        assert_eq!(beyond_bound(0.49, 0.5, 1), "0.49");
        assert_eq!(beyond_bound(11.3, 0.5, 1), "11.3");
    }

    /// A quick report must say of each experiment it ran what the quick setup reduced (or that
    /// nothing was), and how to get the full figures; a full report must not claim a reduction.
    #[test]
    fn the_quick_report_names_each_reduction_and_the_way_to_the_full_figures() {
        let cat = catalogue();
        let chosen: Vec<&Experiment> = cat.iter().collect();
        let note = mode_note(true, &chosen);
        for e in &chosen {
            let line = note
                .lines()
                .find(|l| l.starts_with(&format!("- `{}`: ", e.name)))
                .unwrap_or_else(|| panic!("no line for {} in:\n{note}", e.name));
            if e.quick.is_empty() {
                assert!(line.contains("not reduced"), "{line}");
            } else {
                assert!(line.contains(e.quick), "{line}");
            }
        }
        assert!(note.contains("without `--quick`"), "{note}");
        // The experiments whose setup --quick does change say so.
        for name in ["collapse", "striping", "streams", "directed", "network"] {
            let e = cat
                .iter()
                .find(|e| e.name == name)
                .expect("in the catalogue");
            assert!(!e.quick.is_empty(), "{name} has no quick note");
        }
        let only_drives: Vec<&Experiment> = cat.iter().filter(|e| e.name == "drives").collect();
        let note = mode_note(true, &only_drives);
        assert!(!note.contains("`collapse`"), "{note}");
        let full = mode_note(false, &chosen);
        assert!(full.starts_with("Mode: full"), "{full}");
        assert!(!full.contains("reduced"), "{full}");
    }
}
