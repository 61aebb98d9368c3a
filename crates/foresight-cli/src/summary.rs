//! The human summary `foresight sim` prints (without `--json`): a header line, then one labelled
//! line per part of the run (throughput, application, device, prefetch, device time, ...), and
//! for an array the `members` block.
//!
//! Every line keeps within [`WIDTH_CHARS`], the width the `members` block wraps at. A labelled
//! line that fits is printed as it is; one that does not (the `application` line of the default
//! run was 105 characters, and 117 with 256 streams, whose bytes, latencies and stalled seconds
//! have more digits) is broken between its `;`-separated clauses, as many to a line as fit, the
//! lines after the first indented to where the label's figures start, so the figures still read
//! as one column; a clause longer than a line on its own is broken between words. The header
//! breaks between its `,`-separated parts the same way.

use foresight_sim::metrics::Report;

use crate::members;

/// The widest line of the summary, in characters: the members block's width.
pub const WIDTH_CHARS: usize = members::WIDTH_CHARS;

/// Each labelled line's label column: two spaces, the label, and spaces to this width.
const LABEL_CHARS: usize = 15;

/// The lines `sim` prints for report `r`, in order.
pub fn summary_lines(r: &Report) -> Vec<String> {
    let mut lines = Vec::new();
    // A header line wrapped at the label column would read as a labelled line: it is indented
    // less.
    fit(
        "",
        "    ",
        ", ",
        &format!(
            "{} on {}, {} workload, {} stream(s), seed {}",
            r.policy, r.device, r.workload, r.streams, r.seed
        ),
        &mut lines,
    );
    if let Some(files) = r.webserver_files {
        let bytes = r.webserver_set_bytes.unwrap_or(0);
        let noun = if files == 1 { "file" } else { "files" };
        let body = match r.webserver_files_cut_from {
            // A set cut short reads fewer, so more often cached, files than the one asked for.
            Some(all) => format!(
                "{files:>10} {noun}, {bytes} bytes: cut from the default {all} (an 8 GiB set) to \
                 what fits the volume; set workload.files to choose the count"
            ),
            None => format!("{files:>10} {noun}, {bytes} bytes"),
        };
        labelled("file set", &body, &mut lines);
    }
    labelled(
        "throughput",
        &format!(
            "{:>10.2} MiB/s over {:.3} s simulated ({:.2} s on this host)",
            r.throughput_mib_s, r.elapsed_s, r.wall_s
        ),
        &mut lines,
    );
    // A host run's latencies hold the copies into the readers' buffers, which its stall does
    // not: the bus's time beside the stall lets the two be told apart.
    let copying = r
        .copy_s
        .map_or_else(String::new, |s| format!("; copying {s:.3} s"));
    labelled(
        "application",
        &format!(
            "{:>10} requests, {} bytes; latency mean {:.3} ms, p99 {:.3} ms; stalled {:.3} \
             s{copying}",
            r.app_requests, r.app_bytes, r.mean_latency_ms, r.p99_latency_ms, r.stall_s
        ),
        &mut lines,
    );
    labelled(
        "device",
        &format!(
            "{:>10} requests, {} bytes; drive cache hits {}",
            r.device_requests, r.device_bytes, r.device_cache_hits
        ),
        &mut lines,
    );
    labelled(
        "prefetch",
        &format!(
            "{:>10} fetches, {} bytes ahead, {} wasted; memory peak {} bytes",
            r.fetches, r.prefetched_bytes, r.wasted_bytes, r.memory_peak_bytes
        ),
        &mut lines,
    );
    if let Some(past) = r.past_file_end_bytes.filter(|&b| b > 0) {
        labelled(
            "past ends",
            &format!(
                "{past:>10} bytes of the stream scheduler's reads lay past the end of the file \
                 each began in"
            ),
            &mut lines,
        );
    }
    let b = &r.breakdown;
    let busy = b.seek_s + b.rotate_s + b.transfer_s + b.overhead_s;
    let pct = |x: f64| 100.0 * x / busy;
    let device_time = if busy > 0.0 {
        format!(
            "seek {:.1}%, rotate {:.1}%, transfer {:.1}%, overhead {:.1}% (queued {:.3} s)",
            pct(b.seek_s),
            pct(b.rotate_s),
            pct(b.transfer_s),
            pct(b.overhead_s),
            b.queue_s
        )
    } else {
        // Shares of nothing would read as a device that neither sought nor transferred: a stack
        // of constant tier levels has no breakdown, and a run may end before any device finished.
        "no breakdown recorded for this run".to_string()
    };
    labelled("device time", &device_time, &mut lines);
    if let Some(a) = r.after_end.filter(|a| a.device_requests > 0) {
        // The run's figures stop at its end; copies still climbing then are not in them.
        labelled(
            "after end",
            &format!(
                "{:>10} requests, {} bytes of copies completed until {:.3} s",
                a.device_requests, a.device_bytes, a.last_completion_s
            ),
            &mut lines,
        );
    }
    if r.members.len() > 1 {
        // An array's totals hide a member every stream waits on while the others idle.
        let busy: Vec<f64> = r
            .members
            .iter()
            .map(|m| {
                if r.elapsed_s > 0.0 {
                    m.busy_s / r.elapsed_s
                } else {
                    0.0
                }
            })
            .collect();
        let hits: Vec<f64> = r
            .members
            .iter()
            .map(|m| m.cache_hits as f64 / m.requests.max(1) as f64)
            .collect();
        lines.extend(members::member_lines(&busy, &hits));
    }
    lines
}

/// Appends the line `label` `body`, the label padded to the label column, wrapped under it.
fn labelled(label: &str, body: &str, lines: &mut Vec<String>) {
    let prefix = format!("  {label:<width$}", width = LABEL_CHARS - 2);
    let indent = " ".repeat(prefix.len());
    fit(&prefix, &indent, "; ", body, lines);
}

/// Appends `prefix` + `body` to `lines` as one line when it fits in [`WIDTH_CHARS`]; otherwise
/// the body's clauses (each ending at a `separator`, which stays on the line it ends) as many to
/// a line as fit, each line after the first opening with `indent`, and a clause that does not
/// fit on a line of its own broken between words (a word longer than a line stays whole).
fn fit(prefix: &str, indent: &str, separator: &str, body: &str, lines: &mut Vec<String>) {
    let one = format!("{prefix}{body}");
    if chars(&one) <= WIDTH_CHARS {
        lines.push(one);
        return;
    }
    let mut line = Line {
        text: prefix.to_string(),
        indent,
        has_figures: false,
    };
    for clause in body.split_inclusive(separator) {
        if !line.fits(clause) {
            line.break_into(lines);
        }
        if line.fits(clause) {
            line.push(clause);
        } else {
            for word in clause.split_inclusive(' ') {
                if !line.fits(word) {
                    line.break_into(lines);
                }
                line.push(word);
            }
        }
    }
    lines.push(line.text.trim_end().to_string());
}

/// The width of `s` in characters, the unit of [`WIDTH_CHARS`] (a name from a config or a
/// file may hold letters of more than one byte).
fn chars(s: &str) -> usize {
    s.chars().count()
}

/// The line being filled by [`fit`].
struct Line<'a> {
    text: String,
    indent: &'a str,
    /// Whether anything but spaces has been put after the prefix or indent.
    has_figures: bool,
}

impl Line<'_> {
    /// Whether `piece` (its trailing spaces dropped, as they are at a line's end) fits.
    fn fits(&self, piece: &str) -> bool {
        let piece = if self.has_figures {
            piece
        } else {
            self.leading(piece)
        };
        chars(&self.text) + chars(piece.trim_end()) <= WIDTH_CHARS
    }

    /// `piece` as it opens this line: the body's own leading spaces align the first line's
    /// figures, but on a wrapped line the indent does.
    fn leading<'p>(&self, piece: &'p str) -> &'p str {
        if self.text == self.indent {
            piece.trim_start()
        } else {
            piece
        }
    }

    fn push(&mut self, piece: &str) {
        let piece = if self.has_figures {
            piece
        } else {
            self.leading(piece)
        };
        self.text.push_str(piece);
        self.has_figures |= !piece.trim().is_empty();
    }

    /// Ends this line (if it holds anything) into `lines` and starts the next at the indent.
    fn break_into(&mut self, lines: &mut Vec<String>) {
        if self.has_figures {
            lines.push(self.text.trim_end().to_string());
            self.text = self.indent.to_string();
            self.has_figures = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use foresight_sim::metrics::{AfterEndReport, BreakdownReport, MemberReport};

    /// A report with every line the summary prints, and each figure as wide as a long run of
    /// many streams, a wide array and a cut webserver set make it.
    fn widest_report() -> Report {
        Report {
            policy: "msp+saseqp".to_string(),
            device: "raid0 256 x cheetah-15k4, 128KiB strips".to_string(),
            workload: "webserver".to_string(),
            streams: 4096,
            seed: u64::MAX,
            webserver_files: Some(1_000_000),
            webserver_set_bytes: Some(8 << 30),
            webserver_files_cut_from: Some(2_000_000),
            throughput_mib_s: 12345.67,
            elapsed_s: 1_234_567.891,
            wall_s: 12345.67,
            app_requests: 1_234_567_890,
            app_bytes: 123_456_789_012_345,
            mean_latency_ms: 123_456.789,
            p99_latency_ms: 1_234_567.891,
            stall_s: 123_456_789.012,
            copy_s: Some(1_234_567.891),
            device_requests: 1_234_567_890,
            device_bytes: 123_456_789_012_345,
            device_cache_hits: 1_234_567_890,
            fetches: 1_234_567_890,
            prefetched_bytes: 123_456_789_012_345,
            wasted_bytes: 123_456_789_012_345,
            memory_peak_bytes: 123_456_789_012,
            past_file_end_bytes: Some(123_456_789_012),
            breakdown: BreakdownReport {
                seek_s: 1.0,
                rotate_s: 1.0,
                transfer_s: 1.0,
                queue_s: 123_456_789.012,
                overhead_s: 0.001,
            },
            after_end: Some(AfterEndReport {
                device_requests: 1_234_567_890,
                device_bytes: 123_456_789_012_345,
                breakdown: BreakdownReport::default(),
                last_completion_s: 1_234_567.891,
            }),
            members: (0..256)
                .map(|i| MemberReport {
                    requests: 1000,
                    bytes: 1 << 30,
                    cache_hits: i,
                    busy_s: 1000.0 + i as f64,
                })
                .collect(),
            ..Report::default()
        }
    }

    /// The `application` line of `sim`'s default run was 105 characters, past the 100 the
    /// members block keeps; with every figure at its widest each line still fits.
    #[test]
    fn every_line_of_the_widest_summary_fits_the_members_width() {
        let lines = summary_lines(&widest_report());
        for l in &lines {
            assert!(l.len() <= WIDTH_CHARS, "{} characters: {l}", l.len());
        }
        // Nothing is lost in the wrapping: the figures are all there, in order.
        let text = lines.join(" ");
        for figure in [
            "123456789012345 bytes;",
            "latency mean 123456.789 ms, p99 1234567.891 ms;",
            "stalled 123456789.012 s",
            "cut from the default 2000000",
            "seed 18446744073709551615",
        ] {
            assert!(text.contains(figure), "{figure} in {lines:#?}");
        }
    }

    /// A host run's summary gives the memory bus's copying time beside the stall, since its
    /// latencies hold the copies and its stall does not; a run with no bus (`copy_s` absent: a
    /// trace, a `[dfs]` run, a tier stack) gives none.
    #[test]
    fn a_host_run_gives_its_copying_time_beside_the_stall() {
        let app_line = |copy_s| {
            let r = Report {
                stall_s: 2.5,
                copy_s,
                ..Report::default()
            };
            // The clauses as one line: a long line breaks between them.
            let text = summary_lines(&r).join(" ");
            let words: Vec<&str> = text.split_whitespace().collect();
            let words = words.join(" ");
            let (_, from_app) = words
                .split_once("application")
                .expect("an application line");
            let (app, _) = from_app.split_once(" device ").expect("a device line");
            app.to_string()
        };
        assert!(
            app_line(Some(0.034)).contains("stalled 2.500 s; copying 0.034 s"),
            "{}",
            app_line(Some(0.034))
        );
        assert!(!app_line(None).contains("copying"), "{}", app_line(None));
    }

    /// A line that fits is printed as it was; one that does not breaks between clauses, its
    /// second line indented to where the label's figures start.
    #[test]
    fn a_long_line_breaks_between_clauses_under_its_figures() {
        let mut lines = Vec::new();
        labelled("device", "        12 requests, 4096 bytes", &mut lines);
        assert_eq!(
            lines,
            ["  device               12 requests, 4096 bytes".to_string()]
        );
        let mut lines = Vec::new();
        labelled(
            "application",
            "      2048 requests, 134217728 bytes; latency mean 1.134 ms, p99 3.961 ms; stalled \
             2.322 s",
            &mut lines,
        );
        assert_eq!(
            lines,
            [
                "  application        2048 requests, 134217728 bytes; latency mean 1.134 ms, p99 \
                 3.961 ms;"
                    .to_string(),
                "               stalled 2.322 s".to_string()
            ]
        );
    }

    /// A clause longer than a line is broken between words, and the wrapped lines open at the
    /// indent, not with the spaces that separated the words.
    #[test]
    fn a_clause_longer_than_a_line_breaks_between_words() {
        let mut lines = Vec::new();
        let words = "word ".repeat(40);
        labelled("past ends", words.trim_end(), &mut lines);
        assert!(lines.len() > 1, "{lines:?}");
        for l in &lines {
            assert!(l.len() <= WIDTH_CHARS, "{l}");
            assert!(!l.ends_with(' '), "{l:?}");
        }
        for l in &lines[1..] {
            assert!(l.starts_with("               word"), "{l:?}");
        }
        let count: usize = lines.iter().map(|l| l.matches("word").count()).sum();
        assert_eq!(count, 40);
    }

    /// The width is counted in characters, not bytes: a header whose device name has letters of
    /// two bytes each, 100 characters in all but more bytes, stays one line.
    #[test]
    fn the_width_is_counted_in_characters() {
        let mut lines = Vec::new();
        let body = format!("seqp on {}", "\u{e9}".repeat(92));
        assert_eq!(body.chars().count(), WIDTH_CHARS);
        assert!(body.len() > WIDTH_CHARS);
        fit("", "    ", ", ", &body, &mut lines);
        assert_eq!(lines, [body]);
    }
}
