//! `informed`: TIP, iPipe, IPO and IPODS over a tier stack (paper 002_792ac46f2e9108f8.txt,
//! chapters 4 to 7).
//!
//! Part one reruns the paper's simulator tables in analytic mode (`device.kind = "constant"`, the
//! per-block times of chapter 3): Table 7.3 (iPipe, 10 MB blocks), 7.11 and 7.15 (IPO, 10 MB and
//! 200 MB, `max_bw` 15) and 7.19 (IPODS, 200 MB remote), each for hinted traces as long as LASR1
//! (11,686 reads) and LASR2 (51,206), with the paper's cell beside ours. The "without" columns are
//! `tip` alone over the same tiers. Table 7.15 is run twice: with algorithm 5's Pnext lead, and with
//! the lead of seven `X_cache` groups that the paper's column implies (see the report text). Part two
//! runs the same policies on device models: `ssd-850evo` over `st6000nm0024`, 10 MiB blocks, elapsed
//! and stall time against `X_cache`. Part three checks `x_cache = auto` against the best fixed count
//! of every workload above.

use serde_json::json;

use super::{config, run_all, Context, ExperimentError, Figure, Section};
use crate::plot::{LineChart, Series};

const LASR: [u64; 2] = [11_686, 51_206];
const X_7_3: [u32; 15] = [1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 25, 35, 45, 55, 63];
const X_IPO: [u32; 8] = [1, 3, 5, 7, 9, 11, 13, 15];

/// One of the paper's tables: settings and published cells (`[trace][with/without][x]`, NaN where
/// the extracted text lost the cell).
struct Table {
    id: &'static str,
    title: &'static str,
    policy: &'static str,
    device: [&'static str; 3],
    consume: &'static str,
    block: &'static str,
    xs: &'static [u32],
    pnext_groups: Option<u32>,
    paper: [[&'static [f64]; 2]; 2],
    tolerance: f64,
}

const NAN: f64 = f64::NAN;

fn tables() -> Vec<Table> {
    let ten = ["52ms", "120ms", "122ms"];
    let two_hundred = ["1.5s", "2.3s", "4.5s"];
    let t_7_15 = [
        [
            &[
                17533.0, 7181.56, 4842.92, 3650.45, 2900.08, 2408.85, 2059.59, 1793.48,
            ][..],
            &[26877.8, 8960.76, 5377.32, 3840.85, NAN, NAN, NAN, NAN][..],
        ],
        [
            &[76813.0, 31457.1, 21215.7, 15988.5, NAN, NAN, NAN, NAN][..],
            &[117774.0, 39258.7, 23556.5, 16826.6, NAN, NAN, NAN, NAN][..],
        ],
    ];
    vec![
        Table {
            id: "7.3",
            title: "iPipe, 10 MB blocks",
            policy: "ipipe",
            device: ten,
            consume: "1.92ms",
            block: "10MiB",
            xs: &X_7_3,
            pnext_groups: None,
            paper: [
                [
                    &[
                        607.612, 202.537, 121.522, 86.8018, 67.5125, 55.2375, 46.7394, 40.5075,
                        35.7419, 31.9796, 24.3045, 22.4358, 22.4365, 22.4369, 22.4371,
                    ],
                    &[
                        1402.32, 467.44, 280.464, 200.331, 155.813, 127.484, 107.871, 93.488,
                        82.4894, 73.8063, 56.0928, 40.0663, 31.1627, 25.4967, 22.4371,
                    ],
                ],
                [
                    &[
                        2662.65, 887.551, 532.53, 380.379, 295.85, 242.059, 204.819, 177.51,
                        156.627, 140.14, 106.506, 98.3142, 98.3149, 98.3153, 98.3155,
                    ],
                    &[
                        6144.72, 2048.24, 1228.94, 877.817, 682.747, 558.611, 472.671, 409.648,
                        361.454, 323.406, 245.789, 175.563, 136.549, 111.722, 98.3155,
                    ],
                ],
            ],
            tolerance: 0.01,
        },
        Table {
            id: "7.11",
            title: "IPO, 10 MB blocks, max_bw 15",
            policy: "ipo",
            device: ten,
            consume: "1.92ms",
            block: "10MiB",
            xs: &X_IPO,
            pnext_groups: None,
            paper: [
                [
                    &[
                        607.876, 202.792, 201.128, 172.036, 155.768, 127.448, 107.878, 93.5731,
                    ],
                    &[
                        1402.32, 467.516, 280.552, 200.392, 155.87, 127.547, 107.878, 93.5731,
                    ],
                ],
                [
                    &[
                        2662.92, 887.79, 880.872, 753.498, 682.69, 558.602, 472.678, 409.672,
                    ],
                    &[
                        6144.72, 2048.28, 1229.03, 877.908, 682.792, 558.701, 472.678, 409.672,
                    ],
                ],
            ],
            tolerance: 0.05,
        },
        Table {
            id: "7.15",
            title: "IPO, 200 MB blocks, max_bw 15, algorithm 5's Pnext",
            policy: "ipo",
            device: two_hundred,
            consume: "37ms",
            block: "200MiB",
            xs: &X_IPO,
            pnext_groups: None,
            paper: t_7_15,
            tolerance: 0.05,
        },
        Table {
            id: "7.15 (lead 7 X_cache)",
            title: "IPO, 200 MB blocks, max_bw 15, Pnext lead of 7 X_cache groups",
            policy: "ipo",
            device: two_hundred,
            consume: "37ms",
            block: "200MiB",
            xs: &X_IPO,
            pnext_groups: Some(7),
            paper: t_7_15,
            tolerance: 0.05,
        },
        Table {
            id: "7.19",
            title: "IPODS, 200 MB blocks over a network, max_bw 15",
            policy: "ipods",
            device: ["4.158s", "4.43s", "4.5s"],
            consume: "20ms",
            block: "200MiB",
            xs: &X_IPO,
            pnext_groups: None,
            paper: [
                [
                    &[
                        48590.9, 16200.0, 9933.42, 7246.72, 5750.29, 4704.81, 3982.53, 3454.88,
                    ],
                    &[
                        51769.0, 17259.2, 10357.2, 7397.95, 5754.39, 4708.83, 3982.53, 3454.88,
                    ],
                ],
                [
                    &[
                        212915.0, 70973.4, 43515.0, 31742.4, 25202.5, 20621.7, 17449.7, 15123.9,
                    ],
                    &[
                        226843.0, 75615.6, 45371.9, 32409.7, 25206.6, 20625.7, 17449.7, 15123.9,
                    ],
                ],
            ],
            tolerance: 0.01,
        },
    ]
}

fn analytic(t: &Table, policy: &str, reads: u64, x: Option<u32>) -> crate::SimConfig {
    let mut sets = vec![
        "device.kind=constant".to_string(),
        format!("device.t_upper={}", t.device[0]),
        format!("device.t_lower={}", t.device[1]),
        format!("device.t_lower_to_upper={}", t.device[2]),
        "device.memory=1TiB".into(),
        "device.upper_capacity=1TiB".into(),
        format!("policy.name={policy}"),
        match x {
            Some(x) => format!("policy.x_cache={x}"),
            None => "policy.x_cache=auto".into(),
        },
        "workload.kind=hinted".into(),
        format!("workload.reads={reads}"),
        format!("workload.block={}", t.block),
        format!("workload.consume={}", t.consume),
    ];
    // Only IPO and IPODS cap their reads and lead with Pnext; the config refuses both keys
    // under the other policies, which would not read them.
    if matches!(policy, "ipo" | "ipods") {
        sets.push("policy.max_bw=15".into());
        if let Some(g) = t.pnext_groups {
            sets.push(format!("policy.pnext_groups={g}"));
        }
    }
    config(&sets)
}

/// Bytes of one hinted block in the device-model runs.
const FULL_BLOCK_BYTES: u64 = 10 << 20;

fn full_device(
    policy: &str,
    reads: u64,
    x: Option<u32>,
    (ssds, hdds): (u32, u32),
) -> crate::SimConfig {
    let mut sets = vec![
        "device.kind=tiered".into(),
        format!(
            "device.tiers=[{{preset = \"ssd-850evo\", capacity = \"4GiB\", disks = {ssds}}}, \
             {{preset = \"st6000nm0024\", disks = {hdds}}}]"
        ),
        format!("policy.name={policy}"),
        match x {
            Some(x) => format!("policy.x_cache={x}"),
            None => "policy.x_cache=auto".into(),
        },
        "workload.kind=hinted".into(),
        format!("workload.reads={reads}"),
        format!("workload.block={FULL_BLOCK_BYTES}"),
        "workload.consume=1.92ms".into(),
    ];
    if matches!(policy, "ipo" | "ipods") {
        sets.push("policy.max_bw=15".into());
    }
    config(&sets)
}

/// `x_cache = auto` beside the best of the fixed counts a workload was run with.
struct AutoRow {
    workload: String,
    policy: &'static str,
    /// The fixed counts tried, as `1-15 (8 values)`.
    tried: String,
    auto_s: f64,
    best_s: f64,
}

/// `1-15 (8 values)` for a sorted list of counts.
fn x_range(xs: &[u32]) -> String {
    match (xs.first(), xs.last()) {
        (Some(a), Some(b)) if a != b => format!("{a}-{b} ({} values)", xs.len()),
        (Some(a), _) => a.to_string(),
        _ => String::new(),
    }
}

/// The auto-against-fixed table and what it shows, from the rows.
fn auto_table(rows: &[AutoRow]) -> String {
    let mut md = String::from(
        "### x_cache = auto against the best fixed X_cache\n\n\
         | workload | fixed X_cache tried | auto s | best fixed s | auto / best |\n|---|---|---|---|---|\n",
    );
    let mut worst: f64 = 0.0;
    let mut past: Vec<&AutoRow> = vec![];
    for r in rows {
        let ratio = r.auto_s / r.best_s;
        worst = worst.max(ratio);
        if ratio < 0.99 {
            past.push(r);
        }
        md.push_str(&format!(
            "| {} | {} | {:.2} | {:.2} | {ratio:.4} |\n",
            r.workload, r.tried, r.auto_s, r.best_s
        ));
    }
    md.push_str(&format!(
        "\nWorst auto / best fixed: {worst:.4} ({}). Auto grows X_cache while \
         eq. 4.6's benefit exceeds the LRU cost, which is zero here (no block is read twice), so it \
         settles at the horizon (capped by max_bw for IPO and IPODS).",
        if worst <= 1.05 {
            "auto is within 5% of the best fixed count everywhere"
        } else {
            "auto is more than 5% slower than the best fixed count somewhere"
        }
    ));
    if !past.is_empty() {
        let mut policies: Vec<&str> = past.iter().map(|r| r.policy).collect();
        policies.sort_unstable();
        policies.dedup();
        let mut tried: Vec<&str> = past.iter().map(|r| r.tried.as_str()).collect();
        tried.sort_unstable();
        tried.dedup();
        let why = if policies == ["tip"] {
            "max_bw does not cap tip, so its auto goes past the last count tried"
        } else {
            "auto goes past the last count tried"
        };
        md.push_str(&format!(
            " In {} rows ({}) auto is more than 1% faster than every fixed count tried, {}: {why}, and \
             those rows compare auto with the range tried, not with the best fixed count.",
            past.len(),
            policies.join(", "),
            tried.join(", ")
        ));
    }
    md.push('\n');
    md
}

/// Why Table 7.15 is rerun with a lead of seven groups: the published cells with a partial gain
/// against that lead (`lead7_worst`, the largest difference) and, as the evidence that the paper
/// used algorithm 5's lead elsewhere, the tables run with it that stay within their tolerance
/// (`outside` names those that do not).
fn lead_note(lead7_worst: f64, outside: &[String]) -> String {
    let same_rule = if outside.is_empty() {
        "The same rule (a lead of whole groups from algorithm 5) reproduces the 10 MB table (four \
         groups) and the remote table (three groups), so the 200 MB column was evidently computed \
         with a different lead than the parameters the paper prints"
            .to_string()
    } else {
        format!(
            "The same rule (a lead of whole groups from algorithm 5) gives the 10 MB table (four \
             groups) and the remote table (three groups), but {} is outside its tolerance here, so \
             which lead the paper used is not settled by these runs",
            outside.join(" and ")
        )
    };
    format!(
        "Why Table 7.15 needs a longer lead: with the 200 MB parameters algorithm 5 walks 4.5 s + 1.5 s \
         of copy and SSD read in groups of 1.5 s and returns a lead of four groups (4 X_cache + 1), \
         while every published IPO cell with a partial gain (X_cache = 3, 5, 7) equals the chain \
         model's with a lead of seven groups to within {:.2}%. {same_rule}; `policy.pnext_groups = 7` \
         reruns it that way.\n\n",
        100.0 * lead7_worst
    )
}

fn pct(ours: f64, paper: f64) -> String {
    if paper.is_nan() {
        "n/a".into()
    } else {
        format!("{:+.2}%", 100.0 * (ours / paper - 1.0))
    }
}

/// A paper cell for the CSV: the published figure, or an empty field where the paper gives none
/// (the report's "n/a", `null` in results.json), rather than Rust's "NaN".
fn csv_paper(v: f64) -> String {
    if v.is_nan() {
        String::new()
    } else {
        v.to_string()
    }
}

fn num(v: f64) -> String {
    if v.is_nan() {
        "n/a".into()
    } else {
        format!("{v:.2}")
    }
}

/// Runs the experiment.
pub fn run(ctx: &Context<'_>) -> Result<Section, ExperimentError> {
    let tables = tables();
    // Part one: every table, both traces, with and without the pipeline, plus auto.
    let mut configs = vec![];
    let mut keys = vec![];
    for (ti, t) in tables.iter().enumerate() {
        for (li, &reads) in LASR.iter().enumerate() {
            for (wi, policy) in [t.policy, "tip"].into_iter().enumerate() {
                for &x in t.xs {
                    configs.push(analytic(t, policy, reads, Some(x)));
                    keys.push((ti, li, wi, Some(x)));
                }
                configs.push(analytic(t, policy, reads, None));
                keys.push((ti, li, wi, None));
            }
        }
    }
    // Table 7.3's curve at every X_cache from 1 to 63 (LASR1).
    let curve_x: Vec<u32> = (1..=63).collect();
    let curve_start = configs.len();
    for policy in ["ipipe", "tip"] {
        for &x in &curve_x {
            configs.push(analytic(&tables[0], policy, LASR[0], Some(x)));
        }
    }
    // Part two: device models.
    let full_reads = if ctx.quick { 300 } else { 2_000 };
    let full_x: Vec<u32> = vec![1, 2, 3, 5, 7, 9, 11, 15];
    // (SSDs, disks): the plain pair, then more disks, then more SSD interface bandwidth.
    let full_stacks = [(1u32, 1u32), (1, 4), (2, 4)];
    let full_policies = ["tip", "ipipe", "ipo"];
    let full_start = configs.len();
    for &h in &full_stacks {
        for p in full_policies {
            for &x in &full_x {
                configs.push(full_device(p, full_reads, Some(x), h));
            }
            configs.push(full_device(p, full_reads, None, h));
        }
    }
    let reports = run_all("informed", &configs, ctx)?;

    let mut md =
        String::from("## informed: TIP, iPipe, IPO and IPODS over storage tiers (paper 002)\n\n");
    md.push_str(
        "Analytic mode: every read or copy takes its fixed per-block time from chapter 3 and any number \
         run at once; the application consumes a block in `T_cpu + T_hit + T_driver` and TIP fetches the \
         next hinted block when the application takes one. Traces of 11,686 (LASR1) and 51,206 (LASR2) \
         sequential hinted reads. `with` is the table's pipelining policy, `without` is `tip` alone; \
         elapsed seconds, ours beside the paper's, and our difference from the paper.\n\n",
    );
    let mut results_tables = vec![];
    let mut figures = vec![];
    let mut worst = vec![];
    let mut auto_rows = vec![];
    for (ti, t) in tables.iter().enumerate() {
        let find = |li: usize, wi: usize, x: Option<u32>| {
            let i = keys
                .iter()
                .position(|k| *k == (ti, li, wi, x))
                .expect("configured");
            &reports[i]
        };
        md.push_str(&format!(
            "### Table {}: {} (tolerance {:.0}%)\n\n| X_cache | trace | with (ours) | with (paper) | diff | without (ours) | without (paper) | diff |\n|---|---|---|---|---|---|---|---|\n",
            t.id,
            t.title,
            100.0 * t.tolerance
        ));
        let mut csv = String::from("table,x_cache,trace_reads,with_s,with_paper_s,without_s,without_paper_s,with_stall_s,without_stall_s\n");
        let mut max_err: f64 = 0.0;
        let mut rows = vec![];
        for (li, &reads) in LASR.iter().enumerate() {
            for (xi, &x) in t.xs.iter().enumerate() {
                let w = find(li, 0, Some(x));
                let wo = find(li, 1, Some(x));
                let pw = t.paper[li][0][xi];
                let pwo = t.paper[li][1][xi];
                for (o, p) in [(w.elapsed_s, pw), (wo.elapsed_s, pwo)] {
                    if !p.is_nan() {
                        max_err = max_err.max((o / p - 1.0).abs());
                    }
                }
                md.push_str(&format!(
                    "| {x} | {reads} | {:.2} | {} | {} | {:.2} | {} | {} |\n",
                    w.elapsed_s,
                    num(pw),
                    pct(w.elapsed_s, pw),
                    wo.elapsed_s,
                    num(pwo),
                    pct(wo.elapsed_s, pwo)
                ));
                csv.push_str(&format!(
                    "{},{x},{reads},{:.6},{},{:.6},{},{:.6},{:.6}\n",
                    t.id,
                    w.elapsed_s,
                    csv_paper(pw),
                    wo.elapsed_s,
                    csv_paper(pwo),
                    w.stall_s,
                    wo.stall_s
                ));
                rows.push(json!({"x_cache": x, "reads": reads, "with_s": w.elapsed_s, "with_paper_s": if pw.is_nan() { None } else { Some(pw) },
                    "without_s": wo.elapsed_s, "without_paper_s": if pwo.is_nan() { None } else { Some(pwo) }}));
            }
            // auto against the best fixed count, for both policies of the table.
            for (wi, policy) in [t.policy, "tip"].into_iter().enumerate() {
                let best =
                    t.xs.iter()
                        .map(|&x| find(li, wi, Some(x)).elapsed_s)
                        .fold(f64::INFINITY, f64::min);
                let auto = find(li, wi, None).elapsed_s;
                auto_rows.push(AutoRow {
                    workload: format!("Table {} {policy}, {reads} reads", t.id),
                    policy,
                    tried: x_range(t.xs),
                    auto_s: auto,
                    best_s: best,
                });
            }
        }
        md.push_str(&format!(
            "\nLargest difference from the paper's published cells: {:.2}%, {} the {:.0}% tolerance.\n\n",
            100.0 * max_err,
            if max_err <= t.tolerance {
                "within"
            } else {
                "outside"
            },
            100.0 * t.tolerance
        ));
        worst.push(json!({"table": t.id, "max_abs_diff": max_err, "tolerance": t.tolerance}));
        results_tables
            .push(json!({"table": t.id, "title": t.title, "rows": rows, "max_abs_diff": max_err}));
        let stem = format!(
            "informed-table-{}",
            t.id.split(' ').next().unwrap_or("x").replace('.', "_")
        ) + if t.pnext_groups.is_some() {
            "-lead7"
        } else {
            ""
        };
        md.push_str(&format!("![Table {}]({stem}.png)\n\n", t.id));
        let mut series = vec![];
        for (wi, label) in [(0, t.policy), (1, "tip")] {
            series.push(Series {
                name: format!("{label} (ours, LASR1)"),
                points: t
                    .xs
                    .iter()
                    .map(|&x| (f64::from(x), find(0, wi, Some(x)).elapsed_s))
                    .collect(),
                dashed: false,
            });
            series.push(Series {
                name: format!("{label} (paper, LASR1)"),
                points: t
                    .xs
                    .iter()
                    .enumerate()
                    .filter(|(xi, _)| !t.paper[0][wi][*xi].is_nan())
                    .map(|(xi, &x)| (f64::from(x), t.paper[0][wi][xi]))
                    .collect(),
                dashed: true,
            });
        }
        figures.push(Figure {
            stem,
            chart: LineChart {
                title: format!("Table {}: {}", t.id, t.title),
                x_label: "X_cache (prefetch buffers)".into(),
                y_label: "elapsed s".into(),
                x_log2: false,
                y_log10: true,
                series,
            },
            csv,
        });
    }
    // The lead-7 run against the published IPO cells at X_cache = 3, 5 and 7, both traces.
    let lead7 = tables
        .iter()
        .position(|t| t.pnext_groups == Some(7))
        .expect("Table 7.15 is run with a lead of seven groups");
    let mut lead7_worst: f64 = 0.0;
    for li in 0..LASR.len() {
        for (xi, &x) in tables[lead7].xs.iter().enumerate() {
            let paper = tables[lead7].paper[li][0][xi];
            if [3, 5, 7].contains(&x) && !paper.is_nan() {
                let i = keys
                    .iter()
                    .position(|k| *k == (lead7, li, 0, Some(x)))
                    .expect("configured");
                lead7_worst = lead7_worst.max((reports[i].elapsed_s / paper - 1.0).abs());
            }
        }
    }
    // Whether the tables run with algorithm 5's own lead are within their tolerances.
    let outside: Vec<String> = worst
        .iter()
        .filter(|w| w["table"] == "7.11" || w["table"] == "7.19")
        .filter(|w| {
            w["max_abs_diff"].as_f64().unwrap_or(f64::INFINITY)
                > w["tolerance"].as_f64().unwrap_or(0.0)
        })
        .map(|w| format!("Table {}", w["table"].as_str().unwrap_or("?")))
        .collect();
    md.push_str(&lead_note(lead7_worst, &outside));

    // The 1..63 curve.
    let curve = |pi: usize| -> Vec<(f64, f64)> {
        curve_x
            .iter()
            .enumerate()
            .map(|(i, &x)| {
                (
                    f64::from(x),
                    reports[curve_start + pi * curve_x.len() + i].elapsed_s,
                )
            })
            .collect()
    };
    let mut csv = String::from("x_cache,ipipe_s,tip_s\n");
    for (i, &x) in curve_x.iter().enumerate() {
        csv.push_str(&format!(
            "{x},{:.6},{:.6}\n",
            reports[curve_start + i].elapsed_s,
            reports[curve_start + curve_x.len() + i].elapsed_s
        ));
    }
    figures.push(Figure {
        stem: "informed-xcache-1-63".into(),
        chart: LineChart {
            title: "iPipe vs TIP, 10 MB analytic, 11,686 reads, X_cache 1..63".into(),
            x_label: "X_cache".into(),
            y_label: "elapsed s".into(),
            x_log2: false,
            y_log10: true,
            series: vec![
                Series {
                    name: "ipipe".into(),
                    points: curve(0),
                    dashed: false,
                },
                Series {
                    name: "tip".into(),
                    points: curve(1),
                    dashed: false,
                },
            ],
        },
        csv,
    });
    md.push_str("![X_cache 1..63](informed-xcache-1-63.png)\n\n");

    // Part two.
    md.push_str(&format!(
        "### Device models: ssd-850evo (4 GiB of copies) over st6000nm0024, 10 MiB blocks\n\n\
         {full_reads} sequential hinted reads, 1.92 ms per block, `max_bw` 15 for ipo. A copy is a read \
         on a disk and then a write on an SSD, and an SSD's one host interface carries both the copies' \
         writes and TIP's reads. Three stacks: one SSD over one disk; one SSD over four disks (blocks \
         round-robin, the paper's parallel disks); two SSDs (copies round-robin) over four disks.\n\n\
         | SSDs | disks | X_cache | tip elapsed s | tip stall s | ipipe elapsed s | ipipe stall s | ipo elapsed s | ipo stall s | ipipe vs tip |\n|---|---|---|---|---|---|---|---|---|---|\n"
    ));
    let per = full_x.len() + 1;
    let fr = |hi: usize, pi: usize, xi: usize| {
        &reports[full_start + (hi * full_policies.len() + pi) * per + xi]
    };
    let mut csv = String::from("ssds,disks,policy,x_cache,elapsed_s,stall_s\n");
    let mut full_rows = vec![];
    let mut elapsed_series = vec![];
    let mut stall_series = vec![];
    for (hi, &(sd, h)) in full_stacks.iter().enumerate() {
        for (xi, &x) in full_x.iter().enumerate() {
            let (t, i, o) = (fr(hi, 0, xi), fr(hi, 1, xi), fr(hi, 2, xi));
            md.push_str(&format!(
                "| {sd} | {h} | {x} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:+.1}% |\n",
                t.elapsed_s,
                t.stall_s,
                i.elapsed_s,
                i.stall_s,
                o.elapsed_s,
                o.stall_s,
                100.0 * (i.elapsed_s / t.elapsed_s - 1.0)
            ));
            full_rows.push(json!({"ssds": sd, "disks": h, "x_cache": x, "tip_s": t.elapsed_s, "tip_stall_s": t.stall_s,
                "ipipe_s": i.elapsed_s, "ipipe_stall_s": i.stall_s, "ipo_s": o.elapsed_s, "ipo_stall_s": o.stall_s}));
        }
        for (pi, p) in full_policies.iter().enumerate() {
            for (xi, &x) in full_x.iter().enumerate() {
                let r = fr(hi, pi, xi);
                csv.push_str(&format!(
                    "{sd},{h},{p},{x},{:.6},{:.6}\n",
                    r.elapsed_s, r.stall_s
                ));
            }
            let best = (0..full_x.len())
                .map(|xi| fr(hi, pi, xi).elapsed_s)
                .fold(f64::INFINITY, f64::min);
            auto_rows.push(AutoRow {
                workload: format!("device models, {sd} SSD(s) over {h} disk(s), {p}"),
                policy: p,
                tried: x_range(&full_x),
                auto_s: fr(hi, pi, full_x.len()).elapsed_s,
                best_s: best,
            });
            let ssds_word = if sd == 1 { "SSD" } else { "SSDs" };
            let disks_word = if h == 1 { "disk" } else { "disks" };
            let label = format!("{p}, {sd} {ssds_word} / {h} {disks_word}");
            elapsed_series.push(Series {
                name: label.clone(),
                points: full_x
                    .iter()
                    .enumerate()
                    .map(|(xi, &x)| (f64::from(x), fr(hi, pi, xi).elapsed_s))
                    .collect(),
                dashed: hi == 0,
            });
            stall_series.push(Series {
                name: label,
                points: full_x
                    .iter()
                    .enumerate()
                    .map(|(xi, &x)| (f64::from(x), fr(hi, pi, xi).stall_s))
                    .collect(),
                dashed: hi == 0,
            });
        }
    }
    let cut = |hi: usize| 1.0 - fr(hi, 1, 0).elapsed_s / fr(hi, 0, 0).elapsed_s;
    // TIP alone at X_cache = 1 on one disk: the disk's time per block.
    let disk_ms_per_block = 1e3 * fr(0, 0, 0).elapsed_s / full_reads as f64;
    // Through one SSD a block crosses its interface twice, written by the copy and read by TIP,
    // which no pipeline can overlap: on the one-SSD, four-disk stack the gain over TIP alone is at
    // most about 1 - interface time / TIP alone's time.
    let ssd = foresight_device::presets::ssd_850evo();
    let block = FULL_BLOCK_BYTES as f64;
    let interface_ms_per_block =
        1e3 * (block / ssd.write_bytes_per_s + block / ssd.read_bytes_per_s);
    let interface_s = interface_ms_per_block * full_reads as f64 / 1e3;
    let tip_four_s = fr(1, 0, 0).elapsed_s;
    let gain_bound = 1.0 - interface_s / tip_four_s;
    // The paper's text: iPipe cuts the elapsed time by up to 56% with 10 MB blocks.
    let paper_cut = 0.56;
    let one_disk = if cut(0) <= 0.0 {
        "; the copies' deeper queue and the trip through the SSD only add time"
    } else {
        ""
    };
    let approaches = if (cut(2) - paper_cut).abs() < (cut(1) - paper_cut).abs() {
        " and the gain approaches the paper's"
    } else {
        ""
    };
    // From which X_cache on TIP alone beats ipipe at every larger count, on each four-disk stack.
    let overtakes: Vec<String> = [(1, "one SSD"), (2, "two SSDs")]
        .iter()
        .filter_map(|&(hi, what)| {
            let from = (0..full_x.len())
                .rev()
                .take_while(|&xi| fr(hi, 0, xi).elapsed_s < fr(hi, 1, xi).elapsed_s)
                .last()?;
            Some(format!("{} ({what})", full_x[from]))
        })
        .collect();
    let overtakes = if overtakes.is_empty() {
        String::new()
    } else {
        format!(
            " From X_cache = {} on, TIP alone reads several disks at once and is faster than ipipe, \
             which funnels every block through the SSDs.",
            overtakes.join(" and ")
        )
    };
    md.push_str(&format!(
        "\nAt X_cache = 1, ipipe's elapsed time against tip alone changes by {:+.1}% (one SSD, one \
         disk), {:+.1}% (one SSD, four disks) and {:+.1}% (two SSDs, four disks); the paper reports \
         up to -{:.0}%. \
         With one disk, every block still has to come off that disk and TIP alone already keeps it \
         streaming ({disk_ms_per_block:.1} ms per 10 MiB block){one_disk}. With one SSD, every block \
         crosses its interface twice (the copy's write, TIP's read: {interface_ms_per_block:.1} ms per \
         block, {interface_s:.2} s for the {full_reads} blocks against TIP alone's {tip_four_s:.2} s on \
         four disks), which bounds the gain at about {:.0}%. With two SSDs the interface time per block \
         halves{approaches}.{overtakes}\n\n![elapsed](informed-devices-elapsed.png)\n\n\
         ![stall](informed-devices-stall.png)\n\n",
        -100.0 * cut(0),
        -100.0 * cut(1),
        -100.0 * cut(2),
        100.0 * paper_cut,
        100.0 * gain_bound
    ));
    figures.push(Figure {
        stem: "informed-devices-elapsed".into(),
        chart: LineChart {
            title: "ssd-850evo over st6000nm0024, 10 MiB blocks: elapsed".into(),
            x_label: "X_cache".into(),
            y_label: "elapsed s".into(),
            x_log2: false,
            y_log10: false,
            series: elapsed_series,
        },
        csv: csv.clone(),
    });
    figures.push(Figure {
        stem: "informed-devices-stall".into(),
        chart: LineChart {
            title: "ssd-850evo over st6000nm0024, 10 MiB blocks: stall".into(),
            x_label: "X_cache".into(),
            y_label: "stall s".into(),
            x_log2: false,
            y_log10: false,
            series: stall_series,
        },
        csv,
    });

    // Part three.
    md.push_str(&auto_table(&auto_rows));
    let worst_auto = auto_rows
        .iter()
        .map(|r| r.auto_s / r.best_s)
        .fold(0.0, f64::max);
    let auto_json: Vec<_> = auto_rows
        .iter()
        .map(|r| json!({"workload": r.workload, "x_cache_tried": r.tried, "auto_s": r.auto_s, "best_fixed_s": r.best_s}))
        .collect();
    Ok(Section {
        markdown: md,
        results: json!({
            "tables": results_tables,
            "max_diffs": worst,
            "devices": {"reads": full_reads, "rows": full_rows, "ipipe_cut_x1": [cut(0), cut(1), cut(2)]},
            "auto": {"rows": auto_json, "worst_ratio": worst_auto},
        }),
        figures,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cell the paper does not publish is an empty CSV field, as it is "n/a" in the report and
    /// null in results.json (the CSV once said "NaN"); a published one is written as printed.
    #[test]
    fn a_paper_cell_not_given_is_an_empty_csv_field() {
        assert_eq!(csv_paper(f64::NAN), "");
        assert_eq!(csv_paper(2900.08), "2900.08");
        assert_eq!(csv_paper(17533.0), "17533");
    }

    /// The note on Table 7.15's lead says the other tables bear out algorithm 5's lead only while
    /// they are within their tolerances (it was a constant sentence).
    #[test]
    fn the_lead_note_rests_on_the_other_tables() {
        let held = lead_note(0.0001, &[]);
        assert!(
            held.contains("to within 0.01%. The same rule (a lead of whole groups from algorithm 5) reproduces the 10 MB table"),
            "{held}"
        );
        let failed = lead_note(0.0001, &["Table 7.11".to_string()]);
        assert!(
            failed.contains("but Table 7.11 is outside its tolerance here")
                && !failed.contains("reproduces"),
            "{failed}"
        );
    }

    fn row(policy: &'static str, auto_s: f64, best_s: f64) -> AutoRow {
        AutoRow {
            workload: format!("w {policy}"),
            policy,
            tried: x_range(&X_IPO),
            auto_s,
            best_s,
        }
    }

    /// The worst ratio is computed from the rows, and rows where auto beats every count tried are
    /// called out as such.
    #[test]
    fn auto_table_states_what_the_rows_show() {
        let md = auto_table(&[row("ipo", 93.6, 93.6), row("tip", 22.56, 93.6)]);
        assert!(
            md.contains("| w tip | 1-15 (8 values) | 22.56 | 93.60 | 0.2410 |"),
            "{md}"
        );
        assert!(md.contains("Worst auto / best fixed: 1.0000"), "{md}");
        assert!(md.contains("In 1 rows (tip)"), "{md}");
        assert!(md.contains("max_bw does not cap tip"), "{md}");
        let md = auto_table(&[row("ipo", 1.02, 1.0)]);
        assert!(md.contains("Worst auto / best fixed: 1.0200"), "{md}");
        assert!(!md.contains("more than 1% faster"), "{md}");
        assert_eq!(x_range(&[1, 2, 3, 5, 15]), "1-15 (5 values)");
    }
}
