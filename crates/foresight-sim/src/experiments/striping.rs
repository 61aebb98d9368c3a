//! `striping`: striping-aware readahead on a RAID-0 (paper 000_a596543dd26dac72.txt, section 5).
//!
//! Five `cheetah-15k4` disks in RAID-0, a 1 GiB page cache and a 512 MiB RAID cache, IOzone-like
//! clients reading a fixed aggregate with 4 KiB records (Fig. 8), and FileBench's web server (Fig.
//! 10; its threads open files from one shared cursor, as the paper's FileBench 1.1.0 does).
//! Policies: SEQP, SASEQP, and each with MSP in the RAID layer. A table puts the paper's factors
//! beside ours with a measured cause for each departure: Fig. 8b's 64-stream point is taken apart
//! on the member disks (request sizes, merges, back-to-back requests, positioning per request, a
//! control run with merging capped at one strip, other file sizes), Fig. 8e's over file sizes and
//! Fig. 10a's under both readahead rules, each beside the gain the paper's own count of disk
//! accesses allows.

use serde_json::json;

use super::{config, run_all, Context, ExperimentError, Figure, Section};
use crate::metrics::Report;
use crate::plot::{LineChart, Series};

const DISK: &str = "cheetah-15k4";
const DISKS: u32 = 5;
/// Placements and drive queue policies Fig. 8b's 64-stream point is rerun with, beside its own
/// (`contiguous` files, the preset's C-LOOK).
const VARIANTS: [(&str, &str); 5] = [
    ("contiguous", "sptf"),
    ("spread", "clook"),
    ("spread", "sptf"),
    ("fragmented", "clook"),
    ("fragmented", "sptf"),
];
const POLICIES: [&str; 4] = ["seqp", "saseqp", "msp+seqp", "msp+saseqp"];
/// Host block schedulers Fig. 8b's 64-stream point is rerun with; the figures use the default,
/// `deadline`. Paper 000 (section 5.1) ran Linux 2.6's anticipatory scheduler.
const SCHEDULERS: [&str; 3] = ["noop", "deadline", "anticipatory"];
const STREAMS: [u32; 8] = [1, 2, 4, 8, 16, 32, 64, 128];

fn array(strip_kib: u64, ra_kib: u64, policy: &str) -> Vec<String> {
    vec![
        "device.kind=raid0".into(),
        format!("device.preset={DISK}"),
        format!("device.disks={DISKS}"),
        format!("device.strip={strip_kib}KiB"),
        "host.memory=1GiB".into(),
        "host.raid_cache=512MiB".into(),
        format!("policy.name={policy}"),
        format!("policy.readahead_max={ra_kib}KiB"),
    ]
}

fn iozone(n: u32, aggregate_mib: u64) -> Vec<String> {
    vec![
        "workload.kind=streams".into(),
        format!("workload.streams={n}"),
        format!(
            "workload.file_size={}MiB",
            (aggregate_mib / n as u64).max(1)
        ),
        "workload.request=4KiB".into(),
        "workload.placement=contiguous".into(),
    ]
}

/// What the member disks did in one run: the mean request size, the positioning time (seek and
/// rotational wait) per request, and the share of the run the disks were busy.
struct Members {
    mean_kib: f64,
    positioning_ms: f64,
    transfer_ms: f64,
    busy: f64,
}

impl Members {
    fn of(r: &Report) -> Members {
        let b = &r.breakdown;
        let n = r.device_requests.max(1) as f64;
        let busy_s = b.seek_s + b.rotate_s + b.transfer_s + b.overhead_s;
        Members {
            mean_kib: r.device_bytes as f64 / n / 1024.0,
            positioning_ms: (b.seek_s + b.rotate_s) / n * 1e3,
            transfer_ms: b.transfer_s / n * 1e3,
            busy: if r.elapsed_s > 0.0 {
                busy_s / (r.elapsed_s * DISKS as f64)
            } else {
                0.0
            },
        }
    }
}

fn cat(a: Vec<String>, b: Vec<String>) -> Vec<String> {
    a.into_iter().chain(b).collect()
}

fn line(name: &str, xs: &[u32], rs: &[Report]) -> Series {
    Series {
        name: name.into(),
        points: xs
            .iter()
            .zip(rs)
            .map(|(x, r)| (*x as f64, r.throughput_mib_s))
            .collect(),
        dashed: name.starts_with("msp"),
    }
}

fn chart(title: String, x_label: &str, series: Vec<Series>, x_log2: bool) -> LineChart {
    LineChart {
        title,
        x_label: x_label.into(),
        y_label: "aggregate MiB/s".into(),
        x_log2,
        y_log10: false,
        series,
    }
}

/// Runs the experiment.
pub fn run(ctx: &Context<'_>) -> Result<Section, ExperimentError> {
    let aggregate_mib: u64 = if ctx.quick { 1024 } else { 8192 };
    let mut md = String::from("## striping: striping-aware readahead on RAID-0\n\n");
    md.push_str(&format!(
        "Five `{DISK}` in RAID-0, 1 GiB page cache, 512 MiB RAID cache; IOzone-like clients read {aggregate_mib} MiB \
         in all with 4 KiB records, files back to back (paper 000, section 5.2).\n\n"
    ));
    let mut figures = vec![];
    let mut results = serde_json::Map::new();

    // Fig. 8 a, b, d, e.
    let panels: [(&str, u64, u64); 4] = [
        ("a", 128, 128),
        ("b", 128, 512),
        ("d", 256, 128),
        ("e", 256, 512),
    ];
    let mut configs = vec![];
    for (_, strip, ra) in panels {
        for p in POLICIES {
            for n in STREAMS {
                configs.push(config(&cat(array(strip, ra, p), iozone(n, aggregate_mib))));
            }
        }
    }
    let fig8 = run_all("striping fig8", &configs, ctx)?;
    let per_panel = POLICIES.len() * STREAMS.len();
    let at = |panel: usize, pol: usize, n: u32| -> &Report {
        let ni = STREAMS.iter().position(|&x| x == n).expect("listed");
        &fig8[panel * per_panel + pol * STREAMS.len() + ni]
    };
    for (pi, (name, strip, ra)) in panels.iter().enumerate() {
        let mut csv = String::from(FIG8_CSV_HEADER);
        let mut series = vec![];
        for (qi, p) in POLICIES.iter().enumerate() {
            let rs = &fig8
                [pi * per_panel + qi * STREAMS.len()..pi * per_panel + (qi + 1) * STREAMS.len()];
            for (n, r) in STREAMS.iter().zip(rs) {
                csv.push_str(&fig8_csv_row(p, *n, r));
            }
            series.push(line(p, &STREAMS, rs));
        }
        figures.push(Figure {
            stem: format!("striping_fig8{name}"),
            chart: chart(
                format!("Fig. 8{name}: strip {strip} KiB, max readahead {ra} KiB"),
                "concurrent streams",
                series,
                true,
            ),
            csv,
        });
    }

    // Fig. 8c: SEQP against its maximum readahead; Fig. 8f: MSP+SEQP128 against SC_thresh.
    let ras: [u64; 5] = [64, 128, 256, 512, 1024];
    let c_streams: [u32; 3] = [1, 8, 64];
    let mut configs = vec![];
    for n in c_streams {
        for ra in ras {
            configs.push(config(&cat(
                array(128, ra, "seqp"),
                iozone(n, aggregate_mib),
            )));
        }
    }
    let threshes: [u32; 4] = [4, 8, 16, 38];
    let f_streams: [u32; 4] = [1, 2, 4, 8];
    for t in threshes {
        for n in f_streams {
            let mut v = cat(array(128, 128, "msp+seqp"), iozone(n, aggregate_mib));
            v.push(format!("policy.sc_thresh={t}"));
            configs.push(config(&v));
        }
    }
    let cf = run_all("striping fig8c/f", &configs, ctx)?;
    let (c_runs, f_runs) = cf.split_at(c_streams.len() * ras.len());
    let ra_x: Vec<u32> = ras.iter().map(|&r| r as u32).collect();
    let mut csv = String::from("streams,readahead_kib,throughput_mib_s\n");
    let mut series = vec![];
    for (i, n) in c_streams.iter().enumerate() {
        let rs = &c_runs[i * ras.len()..(i + 1) * ras.len()];
        for (ra, r) in ras.iter().zip(rs) {
            csv.push_str(&format!("{n},{ra},{:.3}\n", r.throughput_mib_s));
        }
        let streams_word = if *n == 1 { "stream" } else { "streams" };
        series.push(line(&format!("{n} {streams_word}"), &ra_x, rs));
    }
    figures.push(Figure {
        stem: "striping_fig8c".into(),
        chart: chart(
            "Fig. 8c: SEQP against its maximum readahead, strip 128 KiB".into(),
            "max readahead, KiB",
            series,
            true,
        ),
        csv,
    });
    let mut csv = String::from("sc_thresh,streams,throughput_mib_s\n");
    let mut series = vec![];
    for (i, t) in threshes.iter().enumerate() {
        let rs = &f_runs[i * f_streams.len()..(i + 1) * f_streams.len()];
        for (n, r) in f_streams.iter().zip(rs) {
            csv.push_str(&format!("{t},{n},{:.3}\n", r.throughput_mib_s));
        }
        series.push(line(&format!("SC_thresh {t}"), &f_streams, rs));
    }
    figures.push(Figure {
        stem: "striping_fig8f".into(),
        chart: chart(
            "Fig. 8f: MSP+SEQP128 against SC_thresh".into(),
            "concurrent streams",
            series,
            true,
        ),
        csv,
    });

    // Fig. 10: the web server, against readahead (a) and mean file size (d). Paper 000 ran
    // FileBench 1.1.0, whose `openfile` takes the next file of the set from one rotor the threads
    // share.
    let duration = if ctx.quick { "10s" } else { "60s" };
    let web = |ra: u64, file_mib: u64, policy: &str, rule: &str| {
        let files = 8192 / file_mib;
        let mut v = array(128, ra, policy);
        v.extend([
            "workload.kind=webserver".into(),
            "workload.streams=32".into(),
            format!("workload.files={files}"),
            format!("workload.file_size={file_mib}MiB"),
            "workload.request=4KiB".into(),
            "workload.pick=rotor".into(),
            format!("workload.duration={duration}"),
            format!("policy.readahead_rule={rule}"),
        ]);
        config(&v)
    };
    let web_ras: [u64; 4] = [64, 128, 256, 512];
    // Fig. 10d's file sizes at 64 KiB readahead; its 4 MiB point is Fig. 10a's first, run once.
    let sizes: [u64; 4] = [1, 4, 16, 64];
    let other_sizes: Vec<u64> = sizes.iter().copied().filter(|&s| s != 4).collect();
    let mut configs = vec![];
    for p in ["seqp", "saseqp"] {
        for ra in web_ras {
            configs.push(web(ra, 4, p, "linux"));
        }
        for &s in &other_sizes {
            configs.push(web(64, s, p, "linux"));
        }
    }
    let w = run_all("striping fig10", &configs, ctx)?;
    // Fig. 10a again with synchronous readahead, where no window waits in a queue beside the next.
    let mut configs = vec![];
    for p in ["seqp", "saseqp"] {
        for ra in web_ras {
            configs.push(web(ra, 4, p, "synchronous"));
        }
    }
    let w_sync = run_all("striping fig10a synchronous", &configs, ctx)?;
    let (w_sync_seqp, w_sync_sa) = w_sync.split_at(web_ras.len());
    let k = web_ras.len() + other_sizes.len();
    let (w_seqp, w_sa) = w.split_at(k);
    // Each policy's runs over `sizes`, in order: the 4 MiB one from the readahead sweep.
    let by_size = |rs: &[Report]| -> Vec<Report> {
        let mut others = rs[web_ras.len()..].iter();
        sizes
            .iter()
            .map(|&s| {
                if s == 4 {
                    rs[0].clone()
                } else {
                    others.next().expect("a run per other size").clone()
                }
            })
            .collect()
    };
    let (d_seqp, d_sa) = (by_size(w_seqp), by_size(w_sa));
    let mut csv = String::from("policy,readahead_kib,file_mib,throughput_mib_s,mean_latency_ms\n");
    let mut csv_d = csv.clone();
    for (p, rs, ds) in [("seqp", w_seqp, &d_seqp), ("saseqp", w_sa, &d_sa)] {
        for (ra, r) in web_ras.iter().zip(&rs[..web_ras.len()]) {
            csv.push_str(&format!(
                "{p},{ra},4,{:.3},{:.3}\n",
                r.throughput_mib_s, r.mean_latency_ms
            ));
        }
        for (s, r) in sizes.iter().zip(ds) {
            csv_d.push_str(&format!(
                "{p},64,{s},{:.3},{:.3}\n",
                r.throughput_mib_s, r.mean_latency_ms
            ));
        }
    }
    let web_ra_x: Vec<u32> = web_ras.iter().map(|&r| r as u32).collect();
    figures.push(Figure {
        stem: "striping_fig10".into(),
        chart: chart(
            "Fig. 10a: web server, 32 threads, 4 MiB mean files, strip 128 KiB".into(),
            "max readahead, KiB",
            vec![
                line("seqp", &web_ra_x, &w_seqp[..web_ras.len()]),
                line("saseqp", &web_ra_x, &w_sa[..web_ras.len()]),
            ],
            true,
        ),
        csv,
    });
    let size_x: Vec<u32> = sizes.iter().map(|&s| s as u32).collect();
    figures.push(Figure {
        stem: "striping_fig10d".into(),
        chart: chart(
            "Fig. 10d: web server, 32 threads, max readahead 64 KiB, strip 128 KiB".into(),
            "mean file size, MiB",
            vec![
                line("seqp", &size_x, &d_seqp),
                line("saseqp", &size_x, &d_sa),
            ],
            true,
        ),
        csv: csv_d,
    });
    let fig10d_md = explain_fig10d(&sizes, &d_seqp, &d_sa, 128, &mut results);

    // Why SASEQP512 trails SEQP512 at 64 streams (Fig. 8b): a control run with merging capped at
    // one strip; the same point with other file sizes, and with other placements and drive queue
    // policies, each under both readahead rules.
    let base_mib = aggregate_mib / 64;
    let sizes_mib: Vec<u64> = (6u64..=10).map(|k| base_mib * k / 8).collect();
    let rules_and_policies = |extra: &[String]| {
        let mut v = vec![];
        for rule in ["linux", "synchronous"] {
            for p in ["seqp", "saseqp"] {
                let mut sets = extra.to_vec();
                sets.push(format!("policy.readahead_rule={rule}"));
                v.push((p, sets));
            }
        }
        v
    };
    let mut configs = vec![config(&cat(
        cat(array(128, 512, "seqp"), iozone(64, aggregate_mib)),
        vec!["host.max_request=128KiB".into()],
    ))];
    for &mib in &sizes_mib {
        for (p, sets) in rules_and_policies(&[]) {
            configs.push(config(&cat(
                cat(array(128, 512, p), iozone(64, mib * 64)),
                sets,
            )));
        }
    }
    for &(placement, queue) in &VARIANTS {
        let extra = [
            format!("workload.placement={placement}"),
            format!("device.queue_policy={queue}"),
        ];
        for (p, sets) in rules_and_policies(&extra) {
            configs.push(config(&cat(
                cat(array(128, 512, p), iozone(64, aggregate_mib)),
                sets,
            )));
        }
    }
    for sched in SCHEDULERS {
        for p in ["seqp", "saseqp"] {
            configs.push(config(&cat(
                cat(array(128, 512, p), iozone(64, aggregate_mib)),
                vec![format!("host.scheduler={sched}")],
            )));
        }
    }
    let why = run_all("striping fig8b at 64 streams", &configs, ctx)?;
    // Fig. 8e's 64-stream point at other file sizes.
    let mut configs = vec![];
    for &mib in &sizes_mib {
        for p in ["seqp", "saseqp"] {
            configs.push(config(&cat(array(256, 512, p), iozone(64, mib * 64))));
        }
    }
    let e_by_size = run_all("striping fig8e at 64 streams", &configs, ctx)?;
    // Every SASEQP run of the section (Figs. 8 and 10 and the points taken apart).
    let (saseqp_runs, split_total) = saseqp_splits(
        fig8.iter()
            .chain(&w)
            .chain(&w_sync)
            .chain(&why)
            .chain(&e_by_size),
    );
    let (why, by_scheduler) = why.split_at(why.len() - 2 * SCHEDULERS.len());
    let (by_size, by_variant) = why[1..].split_at(4 * sizes_mib.len());
    let why_md = explain_fig8b(
        &Fig8bRuns {
            seqp: at(1, 0, 64),
            saseqp: at(1, 1, 64),
            capped: &why[0],
            base_mib,
            by_size: sizes_mib.iter().copied().zip(by_size.chunks(4)).collect(),
            by_variant: VARIANTS.iter().copied().zip(by_variant.chunks(4)).collect(),
            fig8d: (at(2, 0, 64), at(2, 1, 64)),
        },
        &mut results,
    );
    let sched_md = by_scheduler_table(by_scheduler, &mut results);

    // The paper's factors beside ours.
    let ratio = |a: &Report, b: &Report| a.throughput_mib_s / b.throughput_mib_s;
    let rows: Vec<(String, f64, f64)> = vec![
        (
            "Fig. 8a: SASEQP / SEQP at 64 streams".into(),
            1.12,
            ratio(at(0, 1, 64), at(0, 0, 64)),
        ),
        (
            "Fig. 8b: SASEQP / SEQP at 64 streams".into(),
            1.69,
            ratio(at(1, 1, 64), at(1, 0, 64)),
        ),
        (
            "Fig. 8d: SASEQP / SEQP at 64 streams".into(),
            2.08,
            ratio(at(2, 1, 64), at(2, 0, 64)),
        ),
        (
            "Fig. 8e: SASEQP / SEQP at 64 streams".into(),
            1.82,
            ratio(at(3, 1, 64), at(3, 0, 64)),
        ),
        (
            "Fig. 8a: MSP+SASEQP / SASEQP, 1 stream".into(),
            2.4,
            ratio(at(0, 3, 1), at(0, 1, 1)),
        ),
        // Paper 000 gives no figure for this point; it designs MSP to switch itself off when more
        // processes read than there are disks (sections 1.2 and 4), so 1 is expected, not quoted.
        (
            "Fig. 8b: MSP+SASEQP / SASEQP at 64 streams (MSP is designed to stay off)".into(),
            f64::NAN,
            ratio(at(1, 3, 64), at(1, 1, 64)),
        ),
        (
            "Fig. 8b: SEQP512 / SEQP128, 1 stream".into(),
            1.56,
            ratio(at(1, 0, 1), at(0, 0, 1)),
        ),
        // Paper 000 section 5: at many streams "SEQP512 is inferior to SEQP128 by 43 percent", read
        // as 1 - 0.43; the report also gives 1 / 1.43, the reading that matches the paper's way of
        // wording gains ("outperforms by 56 percent" is 1.56x).
        (
            "Fig. 8b: SEQP512 / SEQP128 at 64 streams".into(),
            0.57,
            ratio(at(1, 0, 64), at(0, 0, 64)),
        ),
        (
            "Fig. 10a: SASEQP / SEQP, web server, 64 KiB".into(),
            3.1,
            ratio(&w_sa[0], &w_seqp[0]),
        ),
        (
            "Fig. 10a: SASEQP / SEQP, web server, 128 KiB".into(),
            1.3,
            ratio(&w_sa[1], &w_seqp[1]),
        ),
        (
            "Fig. 10a: SASEQP / SEQP, web server, 256 KiB".into(),
            2.6,
            ratio(&w_sa[2], &w_seqp[2]),
        ),
        (
            "Fig. 10a: SASEQP / SEQP, web server, 512 KiB".into(),
            1.9,
            ratio(&w_sa[3], &w_seqp[3]),
        ),
    ];
    md.push_str(&format!(
        "Fig. 10 (section 5.4) is FileBench's web server instead: 32 threads each read whole files of 4 MiB on \
         average (gamma-distributed sizes, 8 GiB of files, back to back) in 4 KiB records, 128 KiB strips, \
         {duration} simulated per point. Each thread opens the next file of the set from one cursor the threads \
         share, as the paper's FileBench 1.1.0 does (`workload.pick = \"rotor\"`).\n\n"
    ));
    md.push_str("![fig8a](striping_fig8a.png)\n![fig8b](striping_fig8b.png)\n![fig8d](striping_fig8d.png)\n![fig8e](striping_fig8e.png)\n");
    md.push_str("![fig8c](striping_fig8c.png)\n![fig8f](striping_fig8f.png)\n![fig10](striping_fig10.png)\n![fig10d](striping_fig10d.png)\n\n");
    let (fig10a_md, fig10a_why) = explain_fig10a(
        &Fig10aRuns {
            ras_kib: &web_ras,
            paper: [3.1, 1.3, 2.6, 1.9],
            seqp: &w_seqp[..web_ras.len()],
            saseqp: &w_sa[..web_ras.len()],
            seqp_sync: w_sync_seqp,
            saseqp_sync: w_sync_sa,
        },
        &mut results,
    );
    let (fig8e_md, fig8e_why) = explain_fig8e(
        at(3, 0, 64),
        at(3, 1, 64),
        &sizes_mib
            .iter()
            .copied()
            .zip(e_by_size.chunks(2))
            .collect::<Vec<_>>(),
        &mut results,
    );
    // Why each factor departs from the paper, in the row order above: its one-line cause, taken
    // apart in this report.
    let seqp128_pieces = pieces_reason(at(0, 0, 64));
    let fig8d_why = fig8d_reason(at(2, 0, 64), at(2, 1, 64));
    // At one stream the member drives' own read-ahead, which hits carry on, can stream ahead of
    // SEQP128's pieces, so the window's size no longer sets the rate.
    let (one128, one512) = (at(0, 0, 1), at(1, 0, 1));
    let one_stream_seqp = if ratio(one512, one128) < 1.56 {
        format!(
            "at one stream SEQP128 runs at {:.1} MiB/s against SEQP512's {:.1}: the drives' \
             read-ahead, carried on by the hits on their segments, streams ahead of its pieces",
            one128.throughput_mib_s, one512.throughput_mib_s
        )
    } else {
        seqp128_pieces.to_string()
    };
    let mut why: Vec<&str> = vec![
        seqp128_pieces,
        merge_reason(at(1, 0, 64), at(1, 1, 64)),
        &fig8d_why,
        &fig8e_why,
        msp_one_stream_reason(ratio(at(0, 3, 1), at(0, 1, 1)), 2.4),
        "",
        &one_stream_seqp,
        if seqp128_pieces == UNEXAMINED {
            UNEXAMINED
        } else {
            "SEQP128's half-strip pieces; the paper's own count also puts SEQP512 ahead (below)"
        },
    ];
    why.extend(fig10a_why.iter().map(String::as_str));
    assert_eq!(why.len(), rows.len(), "one reason per row");
    md.push_str(&factor_table(&rows, &why));
    md.push_str(&format!(
        "\nFetches SASEQP issued that became more than one disk request, over all {saseqp_runs} SASEQP \
         runs (with and without MSP) of this section: {split_total}.\n"
    ));
    let (s128, s512) = (at(0, 0, 64), at(1, 0, 64));
    md.push_str(&format!(
        "\nAt 64 streams the paper found SEQP512 \"inferior to SEQP128 by 43 percent\" (0.57x, or \
         0.70x if read as SEQP128 ahead by 43%, the way it words gains); here SEQP512 / SEQP128 is \
         {:.2}x ({:.1} against {:.1} MiB/s). A 128 KiB window on 128 KiB strips is almost never aligned, so SEQP128 \
         sends two half-strip pieces per window ({:.0} KiB per disk request on average, against {:.0} KiB \
         for SEQP512). The paper's own count of one disk access per piece also puts SEQP512 ahead: two \
         accesses per 128 KiB against five per 512 KiB.\n",
        ratio(s512, s128),
        s512.throughput_mib_s,
        s128.throughput_mib_s,
        s128.device_bytes as f64 / s128.device_requests.max(1) as f64 / 1024.0,
        s512.device_bytes as f64 / s512.device_requests.max(1) as f64 / 1024.0,
    ));
    let c_thr: Vec<Vec<f64>> = c_runs
        .chunks(ras.len())
        .map(|rs| rs.iter().map(|r| r.throughput_mib_s).collect())
        .collect();
    md.push_str(&fig8c_md(&ras, &c_streams, &c_thr, 128));
    md.push_str(&why_md);
    md.push_str(&sched_md);
    md.push_str(&fig8e_md);
    md.push_str(&fig10a_md);
    md.push_str(&fig10d_md);
    results.insert("factors".into(), super::paper_rows_json(&rows));
    results.insert("saseqp_split_fetches".into(), json!(split_total));
    Ok(Section {
        markdown: md,
        results: serde_json::Value::Object(results),
        figures,
    })
}

/// "1 stream", "8 streams", "8 and 64 streams", "1, 8 and 64 streams".
fn stream_counts(counts: &[String]) -> String {
    let noun = if counts == ["1"] { "stream" } else { "streams" };
    match counts {
        [] => format!("no {noun}"),
        [one] => format!("{one} {noun}"),
        [init @ .., last] => format!("{} and {last} {noun}", init.join(", ")),
    }
}

/// Fig. 8c set against the paper's finding (paper 000, section 5.2): SEQP does best where its
/// largest window equals the strip, and otherwise the larger the better. `thr[i][j]` is SEQP's
/// rate at `streams[i]` with the largest window `ras_kib[j]`; the paragraph names the stream
/// counts, if any, where the strip's size is a peak (above both neighbours).
fn fig8c_md(ras_kib: &[u64], streams: &[u32], thr: &[Vec<f64>], strip_kib: u64) -> String {
    assert_eq!(
        thr.len(),
        streams.len(),
        "one row of rates per stream count"
    );
    let Some(j) = ras_kib.iter().position(|&r| r == strip_kib) else {
        return String::new();
    };
    if j == 0 || j + 1 >= ras_kib.len() {
        return String::new();
    }
    let mut peaks = vec![];
    let mut points = vec![];
    for (n, row) in streams.iter().zip(thr) {
        assert_eq!(row.len(), ras_kib.len(), "one rate per window size");
        if row[j] > row[j - 1] && row[j] > row[j + 1] {
            peaks.push(n.to_string());
        }
        points.push(format!(
            "{n}: {:.1}, {:.1}, {:.1}",
            row[j - 1],
            row[j],
            row[j + 1]
        ));
    }
    // "Gains with the window" only where every count's rate rises through the strip's size: a
    // rate that falls from the smaller window to the strip's is no peak, but no gain either.
    let rising = thr
        .iter()
        .all(|row| row[j - 1] < row[j] && row[j] < row[j + 1]);
    let verdict = if peaks.is_empty() && rising {
        format!(
            "here {strip_kib} KiB is a peak at no stream count: SEQP gains with the window. A \
             window the size of a strip is almost never aligned with one, so it costs two disk \
             accesses, as a larger window does, for fewer bytes"
        )
    } else if peaks.is_empty() {
        let flat: Vec<String> = streams
            .iter()
            .zip(thr)
            .filter(|(_, row)| row[j] <= row[j - 1])
            .map(|(n, _)| n.to_string())
            .collect();
        format!(
            "here {strip_kib} KiB is a peak at no stream count, and it is no faster than {} KiB \
             with {}",
            ras_kib[j - 1],
            stream_counts(&flat)
        )
    } else {
        format!(
            "here {strip_kib} KiB is a peak with {} (of the {} stream counts run)",
            stream_counts(&peaks),
            streams.len()
        )
    };
    format!(
        "\nFig. 8c: the paper finds SEQP best where its largest window equals the strip \
         ({strip_kib} KiB) and otherwise the better the larger (section 5.2); {verdict}. SEQP \
         MiB/s at {}, {} and {} KiB, by stream count: {}.\n",
        ras_kib[j - 1],
        ras_kib[j],
        ras_kib[j + 1],
        points.join("; ")
    )
}

/// Within this share of the paper's factor ours reproduces it.
const FACTOR_TOLERANCE: f64 = 0.10;
/// Within this of 1 a factor the design expects to be 1 is as designed.
const DESIGN_TOLERANCE: f64 = 0.05;

/// The paper-beside-ours table: the sentence that states its tolerances, its header and its rows.
fn factor_table(rows: &[(String, f64, f64)], why: &[&str]) -> String {
    format!(
        "A factor of ours reproduces the paper's within {:.0}% of it; a factor the paper does not \
         give, which the design expects to be 1, is as designed within {:.0}% of 1.\n\n\
         | comparison | paper | ours | against the paper | why |\n|---|---|---|---|---|\n{}",
        100.0 * FACTOR_TOLERANCE,
        100.0 * DESIGN_TOLERANCE,
        factor_rows(rows, why)
    )
}

/// The rows of the paper-beside-ours table, each with a verdict and, when the factor is not
/// reproduced, `why[i]`; a paper factor of NaN is one the paper's text does not give, where a
/// factor of 1 (within [`DESIGN_TOLERANCE`]) is what the design expects.
fn factor_rows(rows: &[(String, f64, f64)], why: &[&str]) -> String {
    rows.iter()
        .enumerate()
        .map(|(i, (what, paper, ours))| {
            let (paper_cell, verdict) = if paper.is_nan() {
                let v = if (ours - 1.0).abs() <= DESIGN_TOLERANCE {
                    "as designed (1x)"
                } else {
                    "not as designed (1x expected)"
                };
                ("not given".to_string(), v.to_string())
            } else {
                (format!("{paper:.2}x"), factor_verdict(*paper, *ours))
            };
            let reproduced =
                verdict.starts_with("reproduced") || verdict.starts_with("as designed");
            let reason = if reproduced {
                ""
            } else {
                why.get(i).copied().unwrap_or("")
            };
            format!("| {what} | {paper_cell} | {ours:.2}x | {verdict} | {reason} |\n")
        })
        .collect()
}

/// Whether a factor of ours reproduces the paper's: within [`FACTOR_TOLERANCE`] of it, or else on
/// the same side of 1 (the same policy ahead) with a smaller or larger lead, or on the other side
/// (reversed).
fn factor_verdict(paper: f64, ours: f64) -> String {
    if (ours / paper - 1.0).abs() <= FACTOR_TOLERANCE {
        return format!("reproduced ({:+.0}%)", 100.0 * (ours / paper - 1.0));
    }
    if (paper > 1.0) != (ours > 1.0) {
        return "not reproduced: reversed".to_string();
    }
    let further = (ours - 1.0).abs() > (paper - 1.0).abs();
    format!(
        "not reproduced: {} lead",
        if further { "larger" } else { "smaller" }
    )
}

/// The columns of a Fig. 8 panel's CSV. `fetches` and `split_fetches` are the JSON keys, which
/// under `msp+...` hold MSP's stripe fetches too; `raid_fetches` and `raid_split_fetches` are
/// MSP's part, so SASEQP's or SEQP's own are the difference.
const FIG8_CSV_HEADER: &str =
    "policy,streams,throughput_mib_s,fetches,split_fetches,raid_fetches,raid_split_fetches,\
     device_requests,mean_request_kib,block_merges,sequential_requests,positioning_ms,disks_busy\n";

/// One run's row of a Fig. 8 panel's CSV.
fn fig8_csv_row(p: &str, n: u32, r: &Report) -> String {
    let m = Members::of(r);
    format!(
        "{p},{n},{:.3},{},{},{},{},{},{:.1},{},{},{:.3},{:.4}\n",
        r.throughput_mib_s,
        r.fetches,
        r.split_fetches,
        r.raid_fetches.unwrap_or(0),
        r.raid_split_fetches.unwrap_or(0),
        r.device_requests,
        m.mean_kib,
        r.block_merges,
        r.device_sequential_requests.unwrap_or(0),
        m.positioning_ms,
        m.busy
    )
}

/// How many of `runs` used SASEQP (alone or under MSP), and how many of SASEQP's own fetches
/// became more than one disk request: MSP's, in the layer below, are not SASEQP's.
fn saseqp_splits<'a>(runs: impl Iterator<Item = &'a Report>) -> (usize, u64) {
    runs.filter(|r| r.policy.ends_with("saseqp"))
        .fold((0, 0), |(n, s), r| {
            (
                n + 1,
                s + r.split_fetches - r.raid_split_fetches.unwrap_or(0),
            )
        })
}

/// The runs that take Fig. 8b's 64-stream point apart.
struct Fig8bRuns<'a> {
    /// SEQP512 and SASEQP512 at the point itself.
    seqp: &'a Report,
    saseqp: &'a Report,
    /// SEQP512 with member requests capped at one strip, so that nothing merges past a strip.
    capped: &'a Report,
    /// The file size at the point, MiB.
    base_mib: u64,
    /// Per file size (MiB): SEQP512 and SASEQP512 under the Linux rule, then under the synchronous one.
    by_size: Vec<(u64, &'a [Report])>,
    /// The same four per (placement, drive queue policy), at the point's file size.
    by_variant: Vec<((&'static str, &'static str), &'a [Report])>,
    /// SEQP128 and SASEQP128 at Fig. 8d's 64-stream point, set against the paper's count there.
    fig8d: (&'a Report, &'a Report),
}

/// What the paper's count allows at Fig. 8d (128 KiB windows on 256 KiB strips), against the
/// paper's 2.08x and ours: the testbed's excess is put down to disk time this model lacks only
/// while this model stays within the count itself.
fn fig8d_count_note(seqp: &Report, saseqp: &Report) -> String {
    let ours = saseqp.throughput_mib_s / seqp.throughput_mib_s;
    // With no transfer time, the most the count allows whatever the disk.
    let bound = paper_count_bound(128.0, 256.0, 1.0, 0.0);
    let allows = format!(
        "By the same count Fig. 8d (128 KiB windows on 256 KiB strips: three requests per 256 KiB \
         against two) allows {bound:.1}x where the paper measured 2.08x"
    );
    if ours > bound {
        format!(
            "{allows}, and here it is {ours:.2}x, above the count too ({}). At Fig. 8b the paper's \
             testbed lost disk time under SEQP in some way its mechanism does not describe and this \
             model does not have;",
            fig8d_above_count(seqp, saseqp)
        )
    } else {
        format!(
            "{allows}; here it is {ours:.2}x. The paper's testbed lost disk time under SEQP in \
             some way its mechanism does not describe and this model does not have;"
        )
    }
}

/// The Fig. 8b 64-stream point taken apart: what the member disks did under SEQP512, under SEQP512
/// with merging capped at one strip, and under SASEQP512; the gain paper 000's own accounting
/// allows; and the ratio at other file sizes under both readahead rules. Records the figures in
/// `results` and returns the markdown.
fn explain_fig8b(
    runs: &Fig8bRuns<'_>,
    results: &mut serde_json::Map<String, serde_json::Value>,
) -> String {
    let (seqp, saseqp, capped) = (runs.seqp, runs.saseqp, runs.capped);
    let (ms, ma, mc) = (Members::of(seqp), Members::of(saseqp), Members::of(capped));
    let mut md = String::from("\n### Why SASEQP512 trails SEQP512 at 64 streams (Fig. 8b)\n\n");
    md.push_str(
        "| run | MiB/s | disk requests | mean KiB | merges | back to back | positioning ms/request | disks busy |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    for (name, r, m) in [
        ("SEQP512", seqp, &ms),
        ("SEQP512, merging capped at 128 KiB", capped, &mc),
        ("SASEQP512", saseqp, &ma),
    ] {
        md.push_str(&format!(
            "| {name} | {:.1} | {} | {:.0} | {} | {} | {:.2} | {:.1}% |\n",
            r.throughput_mib_s,
            r.device_requests,
            m.mean_kib,
            r.block_merges,
            r.device_sequential_requests.unwrap_or(0),
            m.positioning_ms,
            m.busy * 100.0
        ));
    }
    // Paper 000, section 1.1 and Figs. 2-3: each piece of a split window is one more disk access.
    // Per 512 KiB, a window not aligned to a 128 KiB strip is five pieces where SASEQP fetches four
    // whole strips, so with positioning P and strip transfer T per request the most SASEQP can gain
    // is (5P + 4T) / (4P + 4T), and 5/4 when T is nothing.
    let (p, t) = (ma.positioning_ms, ma.transfer_ms);
    let bound = (5.0 * p + 4.0 * t) / (4.0 * p + 4.0 * t);
    // Positionings per MiB: every request that does not start where the disk's last one ended.
    let positionings_per_mib = |r: &Report| {
        r.device_requests
            .saturating_sub(r.device_sequential_requests.unwrap_or(0)) as f64
            / (r.device_bytes as f64 / 1_048_576.0).max(1.0)
    };
    let busy = [&ms, &mc, &ma].iter().map(|m| m.busy).fold(1.0, f64::min);
    let busy_note = if busy >= 0.95 {
        format!(
            "The disks are busy at least {:.0}% of the run in all three, so throughput follows disk time per \
             byte. ",
            (100.0 * busy).floor()
        )
    } else {
        String::new()
    };
    let fewer = positionings_per_mib(saseqp) > positionings_per_mib(seqp)
        && positionings_per_mib(saseqp) > positionings_per_mib(capped);
    let fewer_note = if fewer {
        " Either way SEQP positions the heads fewer times per byte than SASEQP."
    } else {
        ""
    };
    let fig8d = fig8d_count_note(runs.fig8d.0, runs.fig8d.1);
    md.push_str(&format!(
        "\n{busy_note}A \
         SASEQP fetch is one strip and a stream's next strip is on the next disk, so every fetch is a disk \
         request with a positioning of its own. A SEQP window becomes five pieces on five disks, but the \
         stream's next window is fetched at its readahead mark while this one's pieces still wait in the \
         member queues, and on a RAID-0 the piece of strip s + 5 starts on the same disk where the piece of \
         strip s ends. So the pieces of consecutive windows merge, into requests of {:.0} KiB on average. \
         Capped at 128 KiB they are served back to back instead ({} of {} requests start where the disk's \
         previous one ended, {:.2} ms of positioning per request), at {:.1} MiB/s.{fewer_note}\n\n\
         Without merging or back-to-back service, the paper's own accounting (each piece of a split window is \
         one more disk access, Figs. 2 and 3) still caps the gain: per 512 KiB an unaligned SEQP window costs \
         five positionings and SASEQP four, so with the {p:.2} ms positioning and {t:.2} ms strip transfer \
         SASEQP pays here it could be at most {bound:.2}x faster, and no disk allows more than 1.25x. {fig8d} \
         Linux's anticipatory scheduler, which idles a disk after a read to wait for the same process, is \
         tried below.\n",
        ms.mean_kib,
        capped.device_sequential_requests.unwrap_or(0),
        capped.device_requests,
        mc.positioning_ms,
        capped.throughput_mib_s,
    ));
    // The same point, laid out and scheduled other ways: (label, the four runs).
    let mut variants: Vec<(String, &[Report])> = vec![];
    if let Some((_, r)) = runs.by_size.iter().find(|(mib, _)| *mib == runs.base_mib) {
        variants.push(("contiguous, C-LOOK (the point)".into(), r));
    }
    for ((placement, queue), r) in &runs.by_variant {
        let queue = if *queue == "sptf" { "SPTF" } else { "C-LOOK" };
        variants.push((format!("{placement}, {queue}"), r));
    }
    let ratio = |a: &Report, b: &Report| b.throughput_mib_s / a.throughput_mib_s;
    md.push_str(
        "\nWith synchronous readahead (`policy.readahead_rule = \"synchronous\"`: a stream fetches its next \
         window only when a read misses, so its windows never wait in a queue together) the pieces have \
         nothing to merge with, and each is a disk request, as the paper counts them. The point again, with other \
         placements and with a drive that picks its next command by shortest positioning time \
         (`device.queue_policy = \"sptf\"`) instead of C-LOOK:\n\n\
         | files, drive queue | SASEQP / SEQP, Linux readahead | SEQP512 requests / SASEQP512's | SASEQP / SEQP, synchronous | SEQP512 requests / SASEQP512's |\n\
         |---|---|---|---|---|\n",
    );
    let mut variant_json = vec![];
    for (label, r) in &variants {
        md.push_str(&format!(
            "| {label} | {:.2}x | {:.2} | {:.2}x | {:.2} |\n",
            ratio(&r[0], &r[1]),
            r[0].device_requests as f64 / r[1].device_requests.max(1) as f64,
            ratio(&r[2], &r[3]),
            r[2].device_requests as f64 / r[3].device_requests.max(1) as f64,
        ));
        variant_json.push(json!({
            "layout": label,
            "linux": {"seqp_mib_s": r[0].throughput_mib_s, "saseqp_mib_s": r[1].throughput_mib_s},
            "synchronous": {"seqp_mib_s": r[2].throughput_mib_s, "saseqp_mib_s": r[3].throughput_mib_s},
        }));
    }
    md.push_str(&variants_summary(&variants));
    md.push_str(
        "\nThe files are equal and back to back and the model is deterministic, so the streams keep in \
         step and the rotational wait between one request and the next repeats all run instead of \
         averaging out; the point moves with the file size:\n\n\
         | file MiB | SEQP512 MiB/s | SASEQP512 MiB/s | SASEQP / SEQP | synchronous: SEQP512 | SASEQP512 | SASEQP / SEQP |\n\
         |---|---|---|---|---|---|---|\n",
    );
    let mut by_size = vec![];
    let (mut linux_ratios, mut sync_ratios) = (vec![], vec![]);
    for (mib, r) in &runs.by_size {
        let (a, b, c, d) = (
            r[0].throughput_mib_s,
            r[1].throughput_mib_s,
            r[2].throughput_mib_s,
            r[3].throughput_mib_s,
        );
        md.push_str(&format!(
            "| {mib} | {a:.1} | {b:.1} | {:.2}x | {c:.1} | {d:.1} | {:.2}x |\n",
            b / a,
            d / c
        ));
        linux_ratios.push(b / a);
        sync_ratios.push(d / c);
        by_size.push(json!({
            "file_mib": mib,
            "seqp_mib_s": a,
            "saseqp_mib_s": b,
            "seqp_synchronous_mib_s": c,
            "saseqp_synchronous_mib_s": d,
        }));
    }
    let span = |v: &[f64]| {
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(0.0, f64::max);
        let mean = v.iter().sum::<f64>() / v.len().max(1) as f64;
        (lo, hi, mean)
    };
    let (l_lo, l_hi, l_mean) = span(&linux_ratios);
    let (s_lo, s_hi, s_mean) = span(&sync_ratios);
    md.push_str(&format!(
        "\nSASEQP / SEQP over these sizes: {l_lo:.2}x to {l_hi:.2}x (mean {l_mean:.2}x) with Linux's \
         readahead, {s_lo:.2}x to {s_hi:.2}x (mean {s_mean:.2}x) with synchronous readahead.\n"
    ));
    let runs_json: Vec<serde_json::Value> = [
        ("seqp", seqp),
        ("seqp, max_request 128KiB", capped),
        ("saseqp", saseqp),
    ]
    .iter()
    .map(|(name, r)| {
        let m = Members::of(r);
        json!({
            "run": name,
            "throughput_mib_s": r.throughput_mib_s,
            "device_requests": r.device_requests,
            "mean_request_kib": m.mean_kib,
            "block_merges": r.block_merges,
            "sequential_requests": r.device_sequential_requests.unwrap_or(0),
            "positioning_ms": m.positioning_ms,
            "disks_busy": m.busy,
        })
    })
    .collect();
    results.insert(
        "fig8b_64_streams".into(),
        json!({
            "runs": runs_json,
            "paper_accounting_bound": bound,
            "by_file_size": by_size,
            "by_layout": variant_json,
        }),
    );
    md
}

/// What the table of Fig. 8b's point laid out and scheduled other ways shows (`variants`: label,
/// then SEQP512 and SASEQP512 under Linux's readahead and under the synchronous rule): SASEQP's
/// best ratio under each rule, and, under the synchronous one, why it trails where it does and
/// why it leads by more than the paper's count of accesses allows on any disk where it does.
fn variants_summary(variants: &[(String, &[Report])]) -> String {
    let ratio = |a: &Report, b: &Report| b.throughput_mib_s / a.throughput_mib_s;
    let linux_max = variants
        .iter()
        .map(|(_, r)| ratio(&r[0], &r[1]))
        .fold(0.0, f64::max);
    let sync: Vec<f64> = variants.iter().map(|(_, r)| ratio(&r[2], &r[3])).collect();
    let sync_wins = sync.iter().filter(|x| **x > 1.0).count();
    let sync_max = sync.iter().copied().fold(0.0, f64::max);
    // Where synchronous SASEQP still trails, does each of its requests cost more positioning?
    let dearer = variants
        .iter()
        .filter(|(_, r)| ratio(&r[2], &r[3]) <= 1.0)
        .all(|(_, r)| Members::of(&r[3]).positioning_ms > Members::of(&r[2]).positioning_ms);
    // Per 512 KiB five pieces against four strips: with no transfer time the most any disk allows.
    let count_bound = paper_count_bound(512.0, 128.0, 1.0, 0.0);
    let beyond: Vec<String> = variants
        .iter()
        .filter(|(_, r)| ratio(&r[2], &r[3]) > count_bound)
        .map(|(label, r)| {
            let (s, a) = (Members::of(&r[2]), Members::of(&r[3]));
            let cause = if a.positioning_ms < s.positioning_ms {
                format!(
                    "each of SASEQP's requests paid {:.2} ms of positioning against SEQP's {:.2}",
                    a.positioning_ms, s.positioning_ms
                )
            } else {
                UNEXAMINED.to_string()
            };
            format!(
                "{label}: {}x, SEQP512 sending {:.2}x SASEQP512's requests, and {cause}",
                super::beyond_bound(ratio(&r[2], &r[3]), count_bound, 2),
                r[2].device_requests as f64 / r[3].device_requests.max(1) as f64
            )
        })
        .collect();
    let beyond_note = if beyond.is_empty() {
        String::new()
    } else {
        format!(
            " It leads by more than the {count_bound:.2}x the paper's count of accesses allows on any \
             disk at {}.",
            beyond.join("; ")
        )
    };
    format!(
        "\nWith Linux's readahead SASEQP512 is at most {linux_max:.2}x SEQP512 in these {n} setups. With \
         synchronous readahead it is ahead in {sync_wins} of them, by at most {sync_max:.2}x{}.{beyond_note}\n",
        if dearer && sync_wins < variants.len() {
            "; where it is not, each of its requests paid more positioning than each of SEQP's"
        } else {
            ""
        },
        n = variants.len(),
    )
}

/// Why a figure departs where nothing in the report takes it apart.
const UNEXAMINED: &str = "not taken apart here";

/// Fig. 8a's reason, where SEQP128 at 64 streams (`seqp128`) sends pieces of windows that straddle
/// strips: under three quarters of a 128 KiB strip per disk request on average, as the paragraph
/// below the table shows.
fn pieces_reason(seqp128: &Report) -> &'static str {
    if Members::of(seqp128).mean_kib < 0.75 * 128.0 {
        "SEQP128's windows straddle strips, two half-strip pieces each (below)"
    } else {
        UNEXAMINED
    }
}

/// Fig. 8b's reason, where SEQP512's pieces merged in the member queues: it merged at all, and
/// its disk requests are larger than SASEQP512's.
fn merge_reason(seqp: &Report, saseqp: &Report) -> &'static str {
    if seqp.block_merges > 0 && Members::of(seqp).mean_kib > Members::of(saseqp).mean_kib {
        "SEQP's consecutive windows merge in the member queues (taken apart below)"
    } else {
        UNEXAMINED
    }
}

/// Why SASEQP128 leads SEQP128 at Fig. 8d's point by more than the paper's count allows, where
/// the runs show it: the count has one disk access per SASEQP window, but its consecutive
/// 128 KiB windows within a 256 KiB strip merge into larger requests.
fn fig8d_above_count(seqp: &Report, saseqp: &Report) -> String {
    let (ms, ma) = (Members::of(seqp), Members::of(saseqp));
    if saseqp.block_merges > 0 && ma.mean_kib > 1.1 * 128.0 {
        format!(
            "SASEQP's consecutive 128 KiB windows within a strip merge into disk requests of {:.0} \
             KiB on average ({} merges), where the count has one access per window, and each pays \
             {:.2} ms of positioning against SEQP's {:.2} at {:.0} KiB",
            ma.mean_kib, saseqp.block_merges, ma.positioning_ms, ms.positioning_ms, ms.mean_kib
        )
    } else {
        UNEXAMINED.to_string()
    }
}

/// Fig. 8d's reason: within what the paper's count of accesses allows (1.5x with no transfer
/// time) that bound, above it what the paragraph below shows of it.
fn fig8d_reason(seqp: &Report, saseqp: &Report) -> String {
    let ours = saseqp.throughput_mib_s / seqp.throughput_mib_s;
    if ours <= paper_count_bound(128.0, 256.0, 1.0, 0.0) {
        "the paper's own count of disk accesses per piece allows at most 1.5x here (below)".into()
    } else if fig8d_above_count(seqp, saseqp) == UNEXAMINED {
        UNEXAMINED.into()
    } else {
        "SASEQP's windows within a strip merge, which the paper's count leaves out (below)".into()
    }
}

/// Fig. 8a's one-stream MSP reason, which explains a lead larger than the paper's only.
fn msp_one_stream_reason(ours: f64, paper: f64) -> &'static str {
    if ours > paper {
        "SASEQP alone reads a stream a strip per window, so most of the five disks idle, and a \
         drive whose read-ahead has stopped makes the next strip wait for the platter"
    } else {
        UNEXAMINED
    }
}

/// The most SASEQP can gain over SEQP by paper 000's count of disk accesses (section 1.1, Figs.
/// 2-3), with positioning `positioning_ms` per access and `transfer_ms_per_kib` per KiB. A window
/// of W KiB at an offset unaligned with S KiB strips is one piece plus one per strip boundary
/// inside it, 1 + W / S on average, and each piece is an access; SASEQP's windows stop at every
/// boundary, one access per min(W, S) KiB. With no transfer time this is the bound on any disk.
fn paper_count_bound(
    window_kib: f64,
    strip_kib: f64,
    positioning_ms: f64,
    transfer_ms_per_kib: f64,
) -> f64 {
    let seqp_accesses_per_kib = (1.0 + window_kib / strip_kib) / window_kib;
    let saseqp_accesses_per_kib = 1.0 / window_kib.min(strip_kib);
    (seqp_accesses_per_kib * positioning_ms + transfer_ms_per_kib)
        / (saseqp_accesses_per_kib * positioning_ms + transfer_ms_per_kib)
}

/// Transfer time per KiB the member disks spent in a run.
fn transfer_ms_per_kib(r: &Report) -> f64 {
    r.breakdown.transfer_s * 1e3 / (r.device_bytes as f64 / 1024.0).max(1.0)
}

/// Share of a run's member requests that started where the disk's previous request ended.
fn back_to_back_share(r: &Report) -> f64 {
    r.device_sequential_requests.unwrap_or(0) as f64 / r.device_requests.max(1) as f64
}

/// Fig. 10a's runs, one per maximum readahead of `ras_kib`, each policy under Linux's readahead
/// rule and under the synchronous one; `paper` is the paper's SASEQP / SEQP at each.
struct Fig10aRuns<'a> {
    ras_kib: &'a [u64],
    paper: [f64; 4],
    seqp: &'a [Report],
    saseqp: &'a [Report],
    seqp_sync: &'a [Report],
    saseqp_sync: &'a [Report],
}

/// Fig. 10a taken apart: what each policy sent the member disks at each maximum readahead, the
/// gain the paper's own access count allows there, and the ratio with synchronous readahead.
/// Records the figures in `results` and returns the markdown and a one-line cause per point.
fn explain_fig10a(
    runs: &Fig10aRuns<'_>,
    results: &mut serde_json::Map<String, serde_json::Value>,
) -> (String, Vec<String>) {
    const STRIP_KIB: f64 = 128.0;
    let mut md = String::from(
        "\n### Fig. 10a: why the web server's SASEQP / SEQP departs from the paper's\n\n\
         | max readahead KiB | paper | ours | synchronous readahead | paper's count allows | at these disk times | \
         KiB per disk request, SEQP / SASEQP | positioning ms per request, SEQP / SASEQP | back to back, SEQP / SASEQP |\n\
         |---|---|---|---|---|---|---|---|---|\n",
    );
    let (mut why, mut rows, mut sync, mut bounds) = (vec![], vec![], vec![], vec![]);
    let (mut busy_min, mut hits_max) = (1.0f64, 0.0f64);
    for (i, &ra) in runs.ras_kib.iter().enumerate() {
        let (s, a) = (&runs.seqp[i], &runs.saseqp[i]);
        let (ms, ma) = (Members::of(s), Members::of(a));
        let ours = a.throughput_mib_s / s.throughput_mib_s;
        let ours_sync = runs.saseqp_sync[i].throughput_mib_s / runs.seqp_sync[i].throughput_mib_s;
        let w = ra as f64;
        let bound = paper_count_bound(w, STRIP_KIB, 1.0, 0.0);
        let bound_here = paper_count_bound(w, STRIP_KIB, ma.positioning_ms, transfer_ms_per_kib(a));
        for r in [s, a] {
            busy_min = busy_min.min(Members::of(r).busy);
            hits_max = hits_max.max(r.device_cache_hits as f64 / r.device_requests.max(1) as f64);
        }
        md.push_str(&format!(
            "| {ra} | {:.2}x | {ours:.2}x | {ours_sync:.2}x | {bound:.2}x | {bound_here:.2}x | {:.0} / {:.0} | {:.2} / {:.2} | {:.0}% / {:.0}% |\n",
            runs.paper[i],
            ms.mean_kib,
            ma.mean_kib,
            ms.positioning_ms,
            ma.positioning_ms,
            100.0 * back_to_back_share(s),
            100.0 * back_to_back_share(a),
        ));
        let merged = if ms.mean_kib > ma.mean_kib && s.block_merges > 0 {
            "; SEQP's consecutive windows merge in the member queues"
        } else {
            ""
        };
        // Ours beyond the count too: the count is the paper's reasoning, not a limit of the model.
        let ours_over = if ours > bound {
            format!(", which ours ({ours:.2}x) exceeds too")
        } else {
            String::new()
        };
        why.push(format!(
            "the paper's count of disk accesses allows at most {bound:.2}x{ours_over} ({bound_here:.2}x at \
             these disk times); SEQP{ra} reads {:.0} KiB per disk request, SASEQP{ra} {:.0}{merged} (below)",
            ms.mean_kib, ma.mean_kib
        ));
        rows.push(json!({
            "readahead_kib": ra,
            "seqp_mib_s": s.throughput_mib_s,
            "saseqp_mib_s": a.throughput_mib_s,
            "seqp_synchronous_mib_s": runs.seqp_sync[i].throughput_mib_s,
            "saseqp_synchronous_mib_s": runs.saseqp_sync[i].throughput_mib_s,
            "paper_accounting_bound": bound,
            "paper_accounting_bound_at_disk_times": bound_here,
            "seqp_request_kib": ms.mean_kib,
            "saseqp_request_kib": ma.mean_kib,
        }));
        sync.push(ours_sync);
        bounds.push(bound);
    }
    let list = |v: &[(u64, f64)]| {
        v.iter()
            .map(|(ra, x)| format!("{x:.2}x at {ra} KiB"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let beyond: Vec<(u64, f64)> = runs
        .ras_kib
        .iter()
        .zip(runs.paper.iter().zip(&bounds))
        .filter(|(_, (p, b))| *p > *b)
        .map(|(ra, (p, _))| (*ra, *p))
        .collect();
    let argmax = |v: &[f64]| {
        (0..v.len())
            .max_by(|&i, &j| v[i].total_cmp(&v[j]))
            .map(|i| runs.ras_kib[i])
            .unwrap_or(0)
    };
    let sync_within = sync.iter().zip(&bounds).all(|(x, b)| x <= b);
    let count_best = argmax(&bounds);
    let paper_least = argmax(&runs.paper.iter().map(|p| -p).collect::<Vec<_>>());
    let beyond_note = if beyond.is_empty() {
        "none of the paper's gains exceeds it".to_string()
    } else {
        format!(
            "the paper's {} exceed{} it{}",
            list(&beyond),
            if beyond.len() == 1 { "s" } else { "" },
            if paper_least == count_best {
                format!(", and its smallest gain is at {paper_least} KiB, where the count allows the most")
            } else {
                String::new()
            },
        )
    };
    let sync_order = if argmax(&sync) == count_best {
        format!(", largest at {count_best} KiB as the count has it")
    } else {
        String::new()
    };
    // Where SASEQP beats the bound at its own disk times, its windows of one strip met in a queue.
    let above: Vec<String> = runs
        .ras_kib
        .iter()
        .enumerate()
        .filter(|&(i, &ra)| {
            let a = &runs.saseqp[i];
            let ours = a.throughput_mib_s / runs.seqp[i].throughput_mib_s;
            let m = Members::of(a);
            ours > paper_count_bound(ra as f64, STRIP_KIB, m.positioning_ms, transfer_ms_per_kib(a))
        })
        .map(|(i, &ra)| {
            let a = &runs.saseqp[i];
            let ours = a.throughput_mib_s / runs.seqp[i].throughput_mib_s;
            let bound = paper_count_bound(ra as f64, STRIP_KIB, 1.0, 0.0);
            let even = if ours > bound {
                format!(", and even the {bound:.2}x it allows with no transfer time")
            } else {
                String::new()
            };
            format!(
                " At {ra} KiB ours is above the bound at these disk times{even}: SASEQP's windows within one \
                 strip merge or run back to back ({} merges, {:.0}% of its requests back to back), which the \
                 count leaves out.",
                runs.saseqp[i].block_merges,
                100.0 * back_to_back_share(&runs.saseqp[i])
            )
        })
        .collect();
    let last = runs.ras_kib.len() - 1;
    let (ms, ma) = (
        Members::of(&runs.seqp[last]),
        Members::of(&runs.saseqp[last]),
    );
    md.push_str(&format!(
        "\nThe disks are busy at least {:.0}% of every run here and their caches serve at most {:.1}% of the \
         requests, so throughput follows disk time per byte. Counted as the paper counts (one disk access per \
         piece of a window, Figs. 2 and 3), a SEQP window of W KiB at an offset unaligned with the strips is \
         1 + W / 128 accesses on average and SASEQP one per strip, or per window when W is smaller. Even with \
         no transfer time that allows SASEQP the gains in the fifth column; {beyond_note}.{} With \
         synchronous readahead no window waits in a queue beside the next, nothing merges, and SASEQP / SEQP is \
         {}: {} the fifth column{sync_order}. Under Linux's rule a stream's next \
         window is fetched while this one's pieces still wait on the members, so SEQP's pieces merge: at {} KiB \
         SEQP reads {:.0} KiB per disk request and SASEQP {:.0}, never more than a strip, with {:.2} against \
         {:.2} ms of positioning each. ARCHITECTURE.md gives the ratios with other placements, ext3-like \
         indirect blocks, other file sizes and seeds, and files picked at random.\n",
        (100.0 * busy_min).floor(),
        100.0 * hits_max,
        above.concat(),
        list(
            &runs
                .ras_kib
                .iter()
                .copied()
                .zip(sync.iter().copied())
                .collect::<Vec<_>>()
        ),
        if sync_within { "each within" } else { "not each within" },
        runs.ras_kib[last],
        ms.mean_kib,
        ma.mean_kib,
        ms.positioning_ms,
        ma.positioning_ms,
    ));
    results.insert("fig10a".into(), json!(rows));
    (md, why)
}

/// The gain paper 000 calls noticeable, for Fig. 10d's finding (section 5.4): SASEQP over SEQP
/// by at least this factor.
const NOTICEABLE_GAIN: f64 = 1.1;

/// Fig. 10d (paper 000, section 5.4): the web server over mean file sizes (`sizes_mib`), SEQP's
/// and SASEQP's runs at each, with `strip_kib` strips. The paper finds a noticeable gain once the
/// files are four strips long or more. Records the rows in `results` and returns the paragraph.
fn explain_fig10d(
    sizes_mib: &[u64],
    seqp: &[Report],
    saseqp: &[Report],
    strip_kib: u64,
    results: &mut serde_json::Map<String, serde_json::Value>,
) -> String {
    assert_eq!(sizes_mib.len(), seqp.len(), "a SEQP run per size");
    assert_eq!(sizes_mib.len(), saseqp.len(), "a SASEQP run per size");
    let long_kib = 4 * strip_kib;
    let mut rows = vec![];
    let mut ratios = vec![];
    let mut short = vec![];
    for ((&mib, a), b) in sizes_mib.iter().zip(seqp).zip(saseqp) {
        let r = b.throughput_mib_s / a.throughput_mib_s;
        rows.push(json!({
            "file_mib": mib,
            "seqp_mib_s": a.throughput_mib_s,
            "saseqp_mib_s": b.throughput_mib_s,
            "saseqp_over_seqp": r,
        }));
        ratios.push(format!("{r:.2}x at {mib} MiB"));
        if mib << 10 >= long_kib && r < NOTICEABLE_GAIN {
            short.push(format!("{mib} MiB"));
        }
    }
    results.insert("fig10d".into(), json!(rows));
    let verdict = if short.is_empty() {
        "borne out: every size here is at least that long, and SASEQP gains at each".to_string()
    } else {
        format!(
            "not borne out at {}, files at least that long where SASEQP gains less",
            short.join(", ")
        )
    };
    format!(
        "\nFig. 10d (section 5.4) is the same web server over the files' mean size, with 64 KiB \
         readahead: SASEQP / SEQP is {}. The paper finds that SASEQP gains noticeably once files \
         are four strips long ({long_kib} KiB here; noticeable taken as {NOTICEABLE_GAIN}x or \
         more): {verdict}.\n",
        ratios.join(", ")
    )
}

/// Fig. 8e's 64-stream point (256 KiB strips, 512 KiB readahead) taken apart: the member requests
/// each policy sent, the gain the paper's count allows, and the ratio over file sizes (`by_size`:
/// SEQP512 then SASEQP512 per file size in MiB). Records the figures in `results` and returns the
/// markdown and the point's one-line cause.
fn explain_fig8e(
    seqp: &Report,
    saseqp: &Report,
    by_size: &[(u64, &[Report])],
    results: &mut serde_json::Map<String, serde_json::Value>,
) -> (String, String) {
    let (ms, ma) = (Members::of(seqp), Members::of(saseqp));
    let bound = paper_count_bound(512.0, 256.0, 1.0, 0.0);
    let bound_here =
        paper_count_bound(512.0, 256.0, ma.positioning_ms, transfer_ms_per_kib(saseqp));
    let requests = saseqp.device_requests as f64 / seqp.device_requests.max(1) as f64;
    let merge_note = if seqp.block_merges > 0 {
        ", some of which merge with the next window's"
    } else {
        ""
    };
    let mut md = String::from(
        "\n### Fig. 8e at 64 streams: 256 KiB strips, 512 KiB readahead\n\n\
         | file MiB | SEQP512 MiB/s | SASEQP512 MiB/s | SASEQP / SEQP | disk requests, SASEQP / SEQP | positioning ms per request, SEQP / SASEQP |\n\
         |---|---|---|---|---|---|\n",
    );
    let mut ratios = vec![];
    let mut json_rows = vec![];
    for (mib, r) in by_size {
        let (s, a) = (&r[0], &r[1]);
        let ratio = a.throughput_mib_s / s.throughput_mib_s;
        md.push_str(&format!(
            "| {mib} | {:.1} | {:.1} | {ratio:.2}x | {:.2} | {:.2} / {:.2} |\n",
            s.throughput_mib_s,
            a.throughput_mib_s,
            a.device_requests as f64 / s.device_requests.max(1) as f64,
            Members::of(s).positioning_ms,
            Members::of(a).positioning_ms,
        ));
        ratios.push(ratio);
        json_rows.push(json!({"file_mib": mib, "seqp_mib_s": s.throughput_mib_s, "saseqp_mib_s": a.throughput_mib_s}));
    }
    let lo = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = ratios.iter().copied().fold(0.0, f64::max);
    let mean = ratios.iter().sum::<f64>() / ratios.len().max(1) as f64;
    md.push_str(&format!(
        "\nAt the point SASEQP512 sends {requests:.2}x SEQP512's disk requests ({:.0} KiB each against {:.0}: a \
         SEQP window unaligned with the strips is three pieces{merge_note}), \
         but each of its requests pays {:.2} ms of positioning against SEQP's {:.2}, and it runs at {:.2}x. \
         Which policy's requests meet the longer rotational waits follows the streams' phase on a deterministic \
         disk and moves with the file size: over these sizes SASEQP / SEQP runs from {lo:.2}x to {hi:.2}x \
         (mean {mean:.2}x). The paper's own count of disk accesses (three per 512 KiB against two) allows at \
         most {bound:.2}x even with no transfer time and {bound_here:.2}x at the disk times SASEQP pays here; \
         the paper measured 1.82x.\n",
        ma.mean_kib,
        ms.mean_kib,
        ma.positioning_ms,
        ms.positioning_ms,
        saseqp.throughput_mib_s / seqp.throughput_mib_s,
    ));
    results.insert(
        "fig8e_64_streams".into(),
        json!({
            "paper_accounting_bound": bound,
            "paper_accounting_bound_at_disk_times": bound_here,
            "saseqp_over_seqp_requests": requests,
            "by_file_size": json_rows,
        }),
    );
    let why = format!(
        "SASEQP sends {requests:.2}x SEQP's disk requests but pays {:.2} ms positioning each against {:.2}; \
         {lo:.2}x to {hi:.2}x over file sizes; the paper's count allows at most {bound:.2}x (below)",
        ma.positioning_ms, ms.positioning_ms
    );
    (md, why)
}

/// Fig. 8b's 64-stream point under each host block scheduler (`runs`: SEQP512 then SASEQP512 per
/// entry of [`SCHEDULERS`]). Records the figures in `results` and returns the markdown.
fn by_scheduler_table(
    runs: &[Report],
    results: &mut serde_json::Map<String, serde_json::Value>,
) -> String {
    let mut md = String::from(
        "\n### Fig. 8b at 64 streams under each host block scheduler\n\n\
         Paper 000 ran Linux 2.6's anticipatory scheduler (section 5.1), which after a read holds the disk \
         idle for up to `host.antic_expire` (6 ms) for the same stream's next request. The figures above use \
         `deadline`. Here each member disk has its own queue, as under Linux's md, and a stream's think \
         time is measured across all of them.\n\n\
         | scheduler | SEQP512 MiB/s | SASEQP512 MiB/s | SASEQP / SEQP | disk requests, SEQP / SASEQP | idle waits, SEQP / SASEQP |\n\
         |---|---|---|---|---|---|\n",
    );
    let mut rows = vec![];
    for (sched, r) in SCHEDULERS.iter().zip(runs.chunks(2)) {
        let (seqp, saseqp) = (&r[0], &r[1]);
        let ratio = saseqp.throughput_mib_s / seqp.throughput_mib_s;
        md.push_str(&format!(
            "| {sched} | {:.1} | {:.1} | {ratio:.2}x | {} / {} | {} / {} |\n",
            seqp.throughput_mib_s,
            saseqp.throughput_mib_s,
            seqp.device_requests,
            saseqp.device_requests,
            seqp.antic_waits.unwrap_or(0),
            saseqp.antic_waits.unwrap_or(0),
        ));
        rows.push(json!({
            "scheduler": sched,
            "seqp_mib_s": seqp.throughput_mib_s,
            "saseqp_mib_s": saseqp.throughput_mib_s,
            "saseqp_over_seqp": ratio,
            "antic_waits": {"seqp": seqp.antic_waits.unwrap_or(0), "saseqp": saseqp.antic_waits.unwrap_or(0)},
        }));
    }
    let ratio_of = |i: usize| runs[2 * i + 1].throughput_mib_s / runs[2 * i].throughput_mib_s;
    let (deadline, antic) = (ratio_of(1), ratio_of(2));
    // Why anticipation costs SASEQP more, stated only when it does and SASEQP's disks idled more.
    let (seqp_waits, saseqp_waits) = (
        runs[4].antic_waits.unwrap_or(0),
        runs[5].antic_waits.unwrap_or(0),
    );
    let why = if antic < deadline && saseqp_waits > seqp_waits {
        format!(
            " SASEQP's disks idled {saseqp_waits} times, SEQP's {seqp_waits}: a SASEQP fetch is one strip, \
             and the same stream's next strip is on the next disk, so a disk that waits for that stream \
             after serving its strip gets nothing from it within `antic_expire` unless the stream's next \
             window reaches it; a SEQP stream usually has its next window queued already, which ends a \
             wait before it starts."
        )
    } else {
        String::new()
    };
    md.push_str(&format!(
        "\nSASEQP / SEQP is {antic:.2}x under anticipation against {deadline:.2}x under `deadline` (paper: \
         1.69x).{why}\n"
    ));
    results.insert("fig8b_64_streams_by_scheduler".into(), json!(rows));
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(policy: &str, split_fetches: u64, raid_split_fetches: u64) -> Report {
        Report {
            policy: policy.into(),
            split_fetches,
            raid_split_fetches: Some(raid_split_fetches),
            ..Report::default()
        }
    }

    /// A Fig. 8 row gives the block-level part of `fetches` and `split_fetches` beside them, so
    /// that MSP's stripe fetches, which span strips by design, are not read as SASEQP's splits (the
    /// report's count of SASEQP's splits is the difference).
    #[test]
    fn a_fig8_row_gives_the_block_level_fetches_apart() {
        let r = Report {
            fetches: 30 + 12,
            split_fetches: 12,
            raid_fetches: Some(12),
            raid_split_fetches: Some(12),
            ..run("msp+saseqp", 0, 0)
        };
        let header: Vec<&str> = FIG8_CSV_HEADER.trim_end().split(',').collect();
        let row = fig8_csv_row("msp+saseqp", 4, &r);
        let row: Vec<&str> = row.trim_end().split(',').collect();
        assert_eq!(header.len(), row.len(), "{header:?} {row:?}");
        let col = |name: &str| -> u64 {
            let i = header.iter().position(|h| *h == name);
            let i = i.unwrap_or_else(|| panic!("no column {name} in {header:?}"));
            row[i].parse().unwrap()
        };
        assert_eq!(col("fetches"), 42);
        assert_eq!(col("raid_fetches"), 12);
        assert_eq!(col("split_fetches") - col("raid_split_fetches"), 0);
    }

    /// The split count covers every SASEQP run, with or without MSP, and no other policy's; of a
    /// run under MSP it counts SASEQP's fetches, not MSP's (which `split_fetches` also holds).
    #[test]
    fn saseqp_splits_counts_every_saseqp_run() {
        let runs = [
            run("seqp", 7, 0),
            run("saseqp", 1, 0),
            run("msp+seqp", 5, 3),
            run("msp+saseqp", 2 + 40, 40),
        ];
        assert_eq!(saseqp_splits(runs.iter()), (2, 3));
    }

    /// A run whose member disks served `requests` requests of `kib` KiB with `positioning_ms` and
    /// `transfer_ms` each, at `mib_s`, with `merges` block merges and `back_to_back` requests that
    /// continued the disk's previous one.
    fn disk_run(
        mib_s: f64,
        requests: u64,
        kib: f64,
        positioning_ms: f64,
        transfer_ms: f64,
        merges: u64,
        back_to_back: u64,
    ) -> Report {
        let n = requests as f64;
        Report {
            throughput_mib_s: mib_s,
            elapsed_s: 10.0,
            device_requests: requests,
            device_bytes: (kib * 1024.0 * n) as u64,
            block_merges: merges,
            device_sequential_requests: Some(back_to_back),
            breakdown: crate::metrics::BreakdownReport {
                seek_s: 0.0,
                rotate_s: positioning_ms * n / 1e3,
                transfer_s: transfer_ms * n / 1e3,
                queue_s: 0.0,
                overhead_s: 0.0,
            },
            ..Report::default()
        }
    }

    /// Under synchronous readahead each piece is a disk request, as the paper counts them, so a
    /// lead beyond the 1.25x that count allows on any disk is named with what the runs show (the
    /// report once said the paper's accounting applies beside a 1.46x it cannot allow); a lead
    /// within it is not.
    #[test]
    fn a_synchronous_lead_beyond_the_count_is_named() {
        let linux = [
            disk_run(260.0, 5000, 195.0, 1.5, 1.4, 5000, 0),
            disk_run(200.0, 8000, 127.0, 1.7, 1.4, 60, 0),
        ];
        let beyond: Vec<Report> = linux
            .iter()
            .cloned()
            .chain([
                disk_run(100.0, 1250, 102.0, 2.0, 0.7, 0, 0),
                disk_run(146.0, 1000, 128.0, 1.5, 1.4, 0, 0),
            ])
            .collect();
        let within: Vec<Report> = linux
            .iter()
            .cloned()
            .chain([
                disk_run(100.0, 1250, 102.0, 2.0, 0.7, 0, 0),
                disk_run(120.0, 1000, 128.0, 1.9, 1.4, 0, 0),
            ])
            .collect();
        let md = variants_summary(&[("contiguous, C-LOOK (the point)".into(), &beyond)]);
        assert!(
            md.contains(
                "It leads by more than the 1.25x the paper's count of accesses allows on any disk \
                 at contiguous, C-LOOK (the point): 1.46x, SEQP512 sending 1.25x SASEQP512's \
                 requests, and each of SASEQP's requests paid 1.50 ms of positioning against \
                 SEQP's 2.00."
            ),
            "{md}"
        );
        let md = variants_summary(&[("contiguous, C-LOOK (the point)".into(), &within)]);
        assert!(
            md.contains("by at most 1.20x.") && !md.contains("leads by more"),
            "{md}"
        );
    }

    /// The reasons beside the paper's Fig. 8 factors come from the runs: each is given only where
    /// the figures it cites show it, and "not taken apart here" otherwise (they were constants).
    #[test]
    fn fig8_reasons_follow_the_runs() {
        // SEQP128 at 85 KiB per request: pieces; at 120 KiB: not.
        let pieces = disk_run(120.0, 1000, 85.0, 1.5, 0.6, 0, 0);
        let whole = disk_run(120.0, 1000, 120.0, 1.5, 0.9, 0, 0);
        assert!(pieces_reason(&pieces).starts_with("SEQP128's windows straddle strips"));
        assert_eq!(pieces_reason(&whole), UNEXAMINED);
        // SEQP512 merged into 195 KiB requests against SASEQP512's 127: merging; unmerged: not.
        let merged = disk_run(260.0, 5000, 195.0, 1.5, 1.4, 5000, 0);
        let unmerged = disk_run(260.0, 9000, 112.0, 0.9, 0.8, 0, 4000);
        let saseqp = disk_run(200.0, 8000, 127.0, 1.7, 1.4, 60, 0);
        assert!(merge_reason(&merged, &saseqp).starts_with("SEQP's consecutive windows merge"));
        assert_eq!(merge_reason(&unmerged, &saseqp), UNEXAMINED);
        // Fig. 8d: 1.18x is within the count's 1.5x; 2.0x is not, and is SASEQP's windows
        // merging where they do, not taken apart where they do not.
        let seqp128 = disk_run(150.0, 68000, 123.5, 2.76, 0.6, 30000, 2500);
        let within = disk_run(177.0, 8000, 128.0, 3.0, 1.3, 0, 0);
        let merging = disk_run(300.0, 33000, 255.0, 1.51, 2.6, 32800, 0);
        let apart = disk_run(300.0, 66000, 128.0, 1.51, 1.3, 0, 0);
        assert!(fig8d_reason(&seqp128, &within).contains("allows at most 1.5x"));
        assert!(
            fig8d_reason(&seqp128, &merging).starts_with("SASEQP's windows within a strip merge")
        );
        assert_eq!(fig8d_reason(&seqp128, &apart), UNEXAMINED);
        // MSP for one stream: a larger lead than the paper's 2.4x is the idle disks'; a smaller
        // one is not.
        assert!(msp_one_stream_reason(2.77, 2.4).contains("most of the five disks idle"));
        assert_eq!(msp_one_stream_reason(1.9, 2.4), UNEXAMINED);
    }

    /// The paper's access count: an unaligned window of W KiB is 1 + W / S pieces, SASEQP's one per
    /// strip (or per window when smaller); with no transfer time the most SASEQP gains is the ratio
    /// of the two, and with transfer it is Fig. 8b's (5P + 4T) / (4P + 4T) at W = 512, S = 128.
    #[test]
    fn the_paper_count_bound_counts_one_access_per_piece() {
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        for (w, s, bound) in [
            (64.0, 128.0, 1.5),
            (128.0, 128.0, 2.0),
            (256.0, 128.0, 1.5),
            (512.0, 128.0, 1.25),
            (512.0, 256.0, 1.5),
        ] {
            let b = paper_count_bound(w, s, 1.0, 0.0);
            assert!(close(b, bound), "W {w} S {s}: {b}");
        }
        let (p, t) = (1.7, 1.4);
        let b = paper_count_bound(512.0, 128.0, p, t / 128.0);
        assert!(close(b, (5.0 * p + 4.0 * t) / (4.0 * p + 4.0 * t)), "{b}");
    }

    /// The web server's points are explained from their own runs: each "why" cell gives the bound
    /// the paper's count allows and each policy's bytes per disk request, and says SEQP's windows
    /// merged only where its requests were the larger and merges happened; the paragraph names the
    /// paper's gains beyond the bound and whether the synchronous ratios stay within it.
    /// Fig. 10d's runs (file sizes at 64 KiB readahead) were made and written to the Fig. 10a CSV
    /// without a column telling the sweeps apart, and were in no figure, report line or
    /// results.json. They are a figure of their own now, checked against the paper's finding.
    #[test]
    fn fig10d_is_checked_against_the_papers_four_strips() {
        let run = |mib_s: f64| disk_run(mib_s, 1, 1.0, 1.0, 1.0, 0, 0);
        let seqp = [run(100.0), run(100.0), run(100.0)];
        let mut results = serde_json::Map::new();
        let md = explain_fig10d(
            &[1, 4, 16],
            &seqp,
            &[run(140.0), run(105.0), run(150.0)],
            128,
            &mut results,
        );
        assert!(
            md.contains("1.40x at 1 MiB, 1.05x at 4 MiB, 1.50x at 16 MiB")
                && md.contains("(512 KiB here")
                && md.contains("not borne out at 4 MiB"),
            "{md}"
        );
        assert_eq!(results["fig10d"].as_array().map(Vec::len), Some(3));
        let md = explain_fig10d(&[1], &seqp[..1], &[run(120.0)], 128, &mut results);
        assert!(md.contains("borne out: every size"), "{md}");
    }

    #[test]
    fn fig10a_causes_come_from_the_runs() {
        let seqp = [
            disk_run(105.0, 20000, 53.0, 1.6, 0.7, 4800, 4200),
            disk_run(129.0, 16700, 79.0, 1.8, 1.1, 4400, 1300),
            disk_run(142.0, 14800, 98.0, 1.9, 1.5, 3200, 150),
            disk_run(192.0, 12500, 158.0, 1.7, 2.3, 8200, 400),
        ];
        let saseqp = [
            disk_run(163.0, 21600, 77.0, 1.15, 1.0, 5700, 7600),
            disk_run(159.0, 13600, 119.0, 1.9, 1.7, 200, 130),
            disk_run(159.0, 13600, 119.0, 1.9, 1.7, 200, 130),
            disk_run(162.0, 13700, 121.0, 1.8, 1.8, 150, 130),
        ];
        let sync = |x: [f64; 4]| x.map(|mib_s| disk_run(mib_s, 1, 1.0, 1.0, 1.0, 0, 0));
        let explain = |saseqp_sync: [f64; 4]| {
            explain_fig10a(
                &Fig10aRuns {
                    ras_kib: &[64, 128, 256, 512],
                    paper: [3.1, 1.3, 2.6, 1.9],
                    seqp: &seqp,
                    saseqp: &saseqp,
                    seqp_sync: &sync([100.0; 4]),
                    saseqp_sync: &sync(saseqp_sync),
                },
                &mut serde_json::Map::new(),
            )
        };
        let (md, why) = explain([126.0, 153.0, 129.0, 117.0]);
        assert_eq!(why.len(), 4);
        assert!(
            why.iter().all(|w| !w.contains("not taken apart")),
            "{why:?}"
        );
        assert!(
            why[3].starts_with("the paper's count of disk accesses allows at most 1.25x")
                && why[3].contains("SEQP512 reads 158 KiB per disk request, SASEQP512 121")
                && why[3].contains("merge in the member queues"),
            "{}",
            why[3]
        );
        assert!(
            why[0].contains("at most 1.50x") && !why[0].contains("merge"),
            "{}",
            why[0]
        );
        // 163 / 105 is above what the count allows even with no transfer time: the cell and the
        // paragraph say so rather than leave "at most 1.50x" beside our 1.55x.
        assert!(
            why[0].contains("at most 1.50x, which ours (1.55x) exceeds too"),
            "{}",
            why[0]
        );
        assert!(!why[1].contains("exceeds too"), "{}", why[1]);
        assert!(
            md.contains(
                "At 64 KiB ours is above the bound at these disk times, and even the 1.50x it \
                 allows with no transfer time:"
            ),
            "{md}"
        );
        assert!(
            why[2].contains("SEQP256 reads 98 KiB") && !why[2].contains("merge"),
            "{}",
            why[2]
        );
        assert!(
            md.contains("the paper's 3.10x at 64 KiB, 2.60x at 256 KiB, 1.90x at 512 KiB exceed it, and its smallest gain is at 128 KiB"),
            "{md}"
        );
        assert!(
            md.contains("each within the fifth column, largest at 128 KiB"),
            "{md}"
        );
        assert!(
            md.contains("At 64 KiB ours is above the bound at these disk times"),
            "{md}"
        );
        assert!(!md.contains("At 512 KiB ours is above"), "{md}");
        // A synchronous gain beyond the count's bound, and largest elsewhere, is not passed off.
        let (md, _) = explain([126.0, 153.0, 129.0, 160.0]);
        assert!(
            md.contains("not each within the fifth column.") && !md.contains("as the count has it"),
            "{md}"
        );
    }

    /// Fig. 8e's cause gives what each policy sent the disks and the spread over file sizes.
    #[test]
    fn fig8e_cause_comes_from_the_runs() {
        let seqp = disk_run(266.0, 5249, 200.0, 1.53, 2.1, 1087, 0);
        let saseqp = disk_run(248.0, 4224, 248.0, 2.23, 2.65, 64, 0);
        let other = [
            disk_run(200.0, 4500, 204.0, 2.76, 2.1, 900, 0),
            disk_run(274.0, 3700, 247.0, 3.08, 2.6, 64, 0),
        ];
        let point = [seqp.clone(), saseqp.clone()];
        let (md, why) = explain_fig8e(
            &seqp,
            &saseqp,
            &[(14, &other[..]), (16, &point[..])],
            &mut serde_json::Map::new(),
        );
        assert_eq!(
            why,
            "SASEQP sends 0.80x SEQP's disk requests but pays 2.23 ms positioning each against 1.53; \
             0.93x to 1.37x over file sizes; the paper's count allows at most 1.50x (below)"
        );
        assert!(md.contains("three pieces, some of which merge"), "{md}");
        assert!(
            md.contains("| 14 | 200.0 | 274.0 | 1.37x | 0.82 | 2.76 / 3.08 |"),
            "{md}"
        );
    }

    #[test]
    fn stream_counts_read_as_a_list() {
        let c = |v: &[&str]| stream_counts(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(c(&["1"]), "1 stream");
        assert_eq!(c(&["8"]), "8 streams");
        assert_eq!(c(&["8", "64"]), "8 and 64 streams");
        assert_eq!(c(&["1", "8", "64"]), "1, 8 and 64 streams");
    }

    #[test]
    fn fig8c_names_where_the_strip_sized_window_is_a_peak() {
        let ras = [64, 128, 256, 512];
        let none = fig8c_md(
            &ras,
            &[1, 64],
            &[
                vec![115.9, 184.3, 251.5, 446.9],
                vec![94.0, 122.9, 137.4, 260.7],
            ],
            128,
        );
        assert!(none.contains("a peak at no stream count"), "{none}");
        assert!(none.contains("64: 94.0, 122.9, 137.4"), "{none}");
        let one = fig8c_md(
            &ras,
            &[1, 64],
            &[
                vec![115.9, 184.3, 251.5, 446.9],
                vec![94.0, 150.0, 137.4, 260.7],
            ],
            128,
        );
        assert!(one.contains("a peak with 64 streams (of the 2"), "{one}");
        // The quick run's 8 streams: 128 KiB a hair below 64 KiB is no peak, and no gain either.
        let dip = fig8c_md(
            &ras,
            &[1, 8],
            &[
                vec![115.9, 184.3, 251.5, 446.9],
                vec![133.5, 133.3, 195.9, 300.0],
            ],
            128,
        );
        assert!(dip.contains("a peak at no stream count"), "{dip}");
        assert!(!dip.contains("gains with the window"), "{dip}");
        assert!(
            dip.contains("no faster than 64 KiB with 8 streams"),
            "{dip}"
        );
        assert!(!one.contains("no stream count"), "{one}");
        // A strip the sweep does not reach into on both sides gives nothing to compare.
        assert_eq!(fig8c_md(&ras, &[1], &[vec![1.0, 2.0, 3.0, 4.0]], 64), "");
    }

    /// The count allows 1.5x at Fig. 8d; the paper's 2.08x beyond it is put down to disk time this
    /// model lacks only while ours stays within it (the full run's 2.02x does not).
    #[test]
    fn fig8d_count_note_names_our_ratio_against_the_bound() {
        let seqp = disk_run(100.0, 68000, 123.5, 2.76, 0.6, 30000, 2500);
        let within = fig8d_count_note(&seqp, &disk_run(118.0, 8000, 128.0, 3.0, 1.3, 0, 0));
        assert!(within.contains("allows 1.5x where the paper measured 2.08x; here it is 1.18x"));
        assert!(within.contains("this model does not have"), "{within}");
        // Above the count with SASEQP's windows merging into whole strips: said, from the runs.
        let merging = disk_run(202.0, 33000, 255.0, 1.51, 2.6, 32832, 0);
        let above = fig8d_count_note(&seqp, &merging);
        assert!(
            above.contains(
                "here it is 2.02x, above the count too (SASEQP's consecutive 128 KiB windows within \
                 a strip merge into disk requests of 255 KiB on average (32832 merges), where the \
                 count has one access per window, and each pays 1.51 ms of positioning against \
                 SEQP's 2.76 at 124 KiB)"
            ),
            "{above}"
        );
        assert!(above.contains("At Fig. 8b the paper's testbed"), "{above}");
        // Above it with no merging: not taken apart.
        let apart = fig8d_count_note(&seqp, &disk_run(202.0, 66000, 128.0, 1.51, 1.3, 0, 0));
        assert!(
            apart.contains("above the count too (not taken apart here)"),
            "{apart}"
        );
    }

    /// The table states the tolerance of its verdicts, and the verdict flips at it: against the
    /// paper's 2.00x, 2.18x and 1.82x reproduce it, 2.21x is a larger lead and 1.79x a smaller one.
    #[test]
    fn factor_table_states_its_tolerance() {
        let md = factor_table(&[("a".into(), 2.0, 2.18)], &["why"]);
        assert!(
            md.starts_with(
                "A factor of ours reproduces the paper's within 10% of it; a factor the paper does \
                 not give, which the design expects to be 1, is as designed within 5% of 1.\n\n"
            ),
            "{md}"
        );
        assert!(
            md.ends_with("| a | 2.00x | 2.18x | reproduced (+9%) |  |\n"),
            "{md}"
        );
        assert_eq!(factor_verdict(2.0, 1.82), "reproduced (-9%)");
        assert_eq!(factor_verdict(2.0, 2.21), "not reproduced: larger lead");
        assert_eq!(factor_verdict(2.0, 1.79), "not reproduced: smaller lead");
        assert_eq!(factor_verdict(2.0, 0.9), "not reproduced: reversed");
    }

    /// A factor the paper does not give is not printed as a number, and a factor of ours is never
    /// left beside the paper's without saying whether it reproduces it: 0.78x against 1.69x is
    /// reversed and says why, 2.20x against 2.40x is reproduced and needs no reason.
    #[test]
    fn factor_rows_mark_missing_paper_figures() {
        let md = factor_rows(
            &[
                ("a".into(), 1.69, 0.78),
                ("b".into(), f64::NAN, 1.0),
                ("c".into(), 2.4, 2.2),
                ("d".into(), 3.1, 1.57),
                ("e".into(), 1.12, 1.63),
            ],
            &["merging", "off", "unused", "untested", "pieces"],
        );
        assert_eq!(
            md,
            "| a | 1.69x | 0.78x | not reproduced: reversed | merging |\n\
             | b | not given | 1.00x | as designed (1x) |  |\n\
             | c | 2.40x | 2.20x | reproduced (-8%) |  |\n\
             | d | 3.10x | 1.57x | not reproduced: smaller lead | untested |\n\
             | e | 1.12x | 1.63x | not reproduced: larger lead | pieces |\n"
        );
    }
}
