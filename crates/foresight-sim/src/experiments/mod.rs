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

use std::collections::BTreeSet;
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
    /// Another run is writing into the same output directory.
    #[error(
        "{} is the output directory of another `foresight reproduce` still running; wait for it \
         to end, or give another --out",
        .0.display()
    )]
    Busy(PathBuf),
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
    format!(
        "# Foresight: reproduced results\n\n\
         This run has not finished: it is still running, or it was stopped. Experiments whose \
         figures it has written in full: {}. Other figures beside this file are being \
         written by it or are from an earlier run. `results.json` is written with this report \
         when the run ends.\n",
        done_list(done)
    )
}

/// What `report.md` holds after a run that failed (a figure that could not be written, a run that
/// could not start): the unfinished report said "still running, or stopped", neither of which
/// was so, and did not say why the run ended.
fn failed_report(done: &[&str], error: &ExperimentError) -> String {
    format!(
        "# Foresight: reproduced results\n\n\
         This run failed, and wrote no `results.json`: {error}. Experiments whose figures it \
         wrote in full: {}. Other figures beside this file are partly written by it or are from \
         an earlier run.\n",
        done_list(done)
    )
}

fn done_list(done: &[&str]) -> String {
    if done.is_empty() {
        "none".to_string()
    } else {
        done.join(", ")
    }
}

/// Figures in `out` (PNG and CSV files, not hidden) that are not among `written`, by name. A run
/// of some experiments into a directory that holds a whole catalogue's figures leaves the others
/// there, and its finished report must not read as describing them.
fn figures_not_written(out: &Path, written: &BTreeSet<String>) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(out) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| !n.starts_with('.') && (n.ends_with(".png") || n.ends_with(".csv")))
        .filter(|n| !written.contains(n))
        .collect();
    names.sort();
    names
}

/// The finished report's note on the figures beside it that this run did not write.
fn earlier_figures_note(names: &[String]) -> String {
    const SHOWN: usize = 8;
    let mut list = names
        .iter()
        .take(SHOWN)
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        list.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    format!(
        "This directory also holds {} figure file{} this run did not write, from an earlier run \
         ({list}); this report does not describe {}. Remove them, or give each run an `--out` of \
         its own.\n\n",
        names.len(),
        if names.len() == 1 { "" } else { "s" },
        if names.len() == 1 { "it" } else { "them" },
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
    // The hidden file goes on any failure, of the write (a full disk) as of the rename.
    std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::rename(&tmp, path))
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
}

/// Removes `path`, so that there is no file of that name to read; a symbolic link is kept and
/// the file it leads to is removed instead, as [`write_whole`] writes through it.
fn remove_through(path: &Path) -> std::io::Result<()> {
    let target = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => match std::fs::canonicalize(path) {
            Ok(target) => target,
            // A link that leads nowhere already gives nothing to read.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        },
        _ => path.to_path_buf(),
    };
    match std::fs::remove_file(target) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// An advisory lock on `out` itself (`flock` on the directory, so no file is left behind),
/// released when the returned handle is dropped or the process ends, however it ends.
fn lock_dir(out: &Path) -> Result<std::fs::File, ExperimentError> {
    let io = |source| ExperimentError::Io {
        path: out.to_path_buf(),
        source,
    };
    let dir = std::fs::File::open(out).map_err(io)?;
    match dir.try_lock() {
        Ok(()) => Ok(dir),
        Err(std::fs::TryLockError::WouldBlock) => Err(ExperimentError::Busy(out.to_path_buf())),
        Err(std::fs::TryLockError::Error(e)) => Err(io(e)),
    }
}

/// What a run has changed in its output directory so far.
#[derive(Default)]
struct OutDirState {
    /// Whether `report.md` says the run has not finished (from its first figure on).
    marked_unfinished: bool,
    /// The experiments whose figures are all written.
    done: Vec<&'static str>,
    /// The figure files written, by name.
    written: BTreeSet<String>,
}

/// Runs the named experiments (all when `names` is empty) and writes `report.md`, `results.json`
/// and each figure's PNG and CSV into `out`. From the first figure written until the end,
/// `report.md` says that the run has not finished and there is no `results.json`; a run that
/// fails says so there, with why. One run at a time may write into `out`: another is refused
/// with [`ExperimentError::Busy`]. `results.json` holds a key per experiment and `run`: the
/// mode (`quick` or `full`), the experiments in order, and `wall_s`.
pub fn reproduce(
    names: &[String],
    quick: bool,
    out: &Path,
    log: &(dyn Fn(&str) + Sync),
) -> Result<(), ExperimentError> {
    let started = std::time::Instant::now();
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
    // Two runs into one directory mixed their figures, report and results without a word.
    let _lock = lock_dir(out)?;
    let ctx = Context { quick, log };
    let mut report = String::from("# Foresight: reproduced results\n\n");
    report.push_str(&mode_note(quick, &chosen));
    let notes_at = report.len();
    let mut results = serde_json::Map::new();
    let md = out.join("report.md");
    let js = out.join("results.json");
    let mut progress = OutDirState::default();
    let mut run_chosen = |progress: &mut OutDirState| -> Result<(), ExperimentError> {
        for e in &chosen {
            log(&format!("{}: {}", e.name, e.about));
            let started = std::time::Instant::now();
            let section = (e.run)(&ctx)?;
            if !progress.marked_unfinished && !section.figures.is_empty() {
                // From the first figure on, a previous run's report and results would describe
                // figures this run replaces; a run stopped before its end (Ctrl-C, a write that
                // fails) would leave them looking current. The report says so until it is
                // written.
                write_whole(&md, unfinished_report(&progress.done).as_bytes()).map_err(io(&md))?;
                remove_through(&js).map_err(io(&js))?;
                progress.marked_unfinished = true;
            }
            for f in &section.figures {
                let png = out.join(format!("{}.png", f.stem));
                let bytes = f.chart.png().map_err(io(&png))?;
                write_whole(&png, &bytes).map_err(io(&png))?;
                let csv = out.join(format!("{}.csv", f.stem));
                write_whole(&csv, f.csv.as_bytes()).map_err(io(&csv))?;
                progress
                    .written
                    .extend([format!("{}.png", f.stem), format!("{}.csv", f.stem)]);
            }
            if progress.marked_unfinished && !section.figures.is_empty() {
                progress.done.push(e.name);
                write_whole(&md, unfinished_report(&progress.done).as_bytes()).map_err(io(&md))?;
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
        Ok(())
    };
    if let Err(e) = run_chosen(&mut progress) {
        if progress.marked_unfinished {
            // Best effort: the write may fail for the reason the run did. On a full disk there is
            // no room for the hidden copy, but there is in place of the unfinished report.
            let text = failed_report(&progress.done, &e);
            let _ = write_whole(&md, text.as_bytes()).or_else(|_| std::fs::write(&md, &text));
        }
        return Err(e);
    }
    let earlier = figures_not_written(out, &progress.written);
    if !earlier.is_empty() {
        report.insert_str(notes_at, &earlier_figures_note(&earlier));
    }
    write_whole(&md, report.as_bytes()).map_err(io(&md))?;
    results.insert(
        "run".into(),
        serde_json::json!({
            "mode": if quick { "quick" } else { "full" },
            "experiments": chosen.iter().map(|e| e.name).collect::<Vec<_>>(),
            "wall_s": started.elapsed().as_secs_f64(),
        }),
    );
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
