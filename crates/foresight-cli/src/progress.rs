//! Progress notes on standard error for commands that run for more than a few seconds.
//!
//! A note is worth printing when enough time has passed since the last one: a line per
//! simulation run floods the terminal (the quick catalogue made over a thousand), and none at all
//! leaves a 30-second soak or a long download looking hung. [`Every`] decides from the elapsed
//! time it is given, so the rule is tested without a clock; the callers read the clock.

use std::io::Write;
use std::time::Instant;

use foresight_sim::Progress;

/// Seconds between two progress notes.
pub const NOTE_INTERVAL_S: f64 = 5.0;

/// Whether a note is due: at most one per interval, the first one interval in.
#[derive(Debug)]
pub struct Every {
    interval_s: f64,
    next_s: f64,
}

impl Every {
    pub fn new(interval_s: f64) -> Every {
        Every {
            interval_s,
            next_s: interval_s,
        }
    }

    /// Whether a note is due at `elapsed_s`; if so, the next is due an interval later.
    pub fn due(&mut self, elapsed_s: f64) -> bool {
        if elapsed_s < self.next_s {
            return false;
        }
        self.next_s = elapsed_s + self.interval_s;
        true
    }
}

/// The time a run has left, from the time it has taken and the share of its work done: the rate
/// so far, carried to the end. (The progress bar's own estimate weighs each step by the time
/// since the one before, and the bar appears a second into a run with a quarter or more done at
/// once, a step that took no time: it read "eta 0s" for most of the run.)
pub fn eta_text(elapsed_s: f64, frac: f64) -> String {
    if !(frac > 0.0 && elapsed_s.is_finite() && elapsed_s >= 0.0) {
        return "eta ?".to_string();
    }
    let left_s = (elapsed_s * (1.0 - frac.min(1.0)) / frac).round() as u64;
    match left_s {
        s if s < 60 => format!("eta {s}s"),
        s if s < 3600 => format!("eta {}m {:02}s", s / 60, s % 60),
        s => format!("eta {}h {:02}m", s / 3600, s % 3600 / 60),
    }
}

/// What a run has done when its share is not known (a trace read from a pipe, whose length shows
/// only at its end): the records and bytes of its trace read, and the simulated time reached.
pub fn done_text(p: &Progress) -> String {
    let simulated = format!("{:.3} s simulated", p.simulated_s);
    match p.trace {
        Some(t) => format!(
            "{} trace records ({:.1} MiB) read, {simulated}",
            t.records,
            t.read_bytes as f64 / (1u64 << 20) as f64
        ),
        None => simulated,
    }
}

/// The line `foresight sim` notes once an interval when standard error is not a terminal: the
/// share done, or, while that is not known, what [`done_text`] says.
pub fn sim_note(p: &Progress, elapsed_s: f64) -> String {
    match p.share {
        Some(frac) => format!(
            "simulating: {:.0}% after {elapsed_s:.0} s",
            (frac * 100.0).clamp(0.0, 100.0)
        ),
        None => format!("simulating: {} after {elapsed_s:.0} s", done_text(p)),
    }
}

/// The progress bar `foresight sim` draws on a terminal: a share with its estimate of the time
/// left, or, for a run of unknown length (a trace from a pipe), a spinner and what is done.
pub struct SimBar {
    bar: indicatif::ProgressBar,
    /// Whether the bar's style shows a share; `None` before the first report.
    shows_share: Option<bool>,
}

impl SimBar {
    /// A bar drawn to `target` (standard error, in `foresight sim`).
    pub fn new(target: indicatif::ProgressDrawTarget) -> SimBar {
        SimBar {
            bar: indicatif::ProgressBar::with_draw_target(Some(1000), target),
            shows_share: None,
        }
    }

    /// Shows `p`, `elapsed_s` into the run.
    pub fn show(&mut self, p: &Progress, elapsed_s: f64) {
        let b = &self.bar;
        if self.shows_share != Some(p.share.is_some()) {
            self.shows_share = Some(p.share.is_some());
            let template = if p.share.is_some() {
                "{spinner} simulating [{bar:40}] {percent}% ({msg})"
            } else {
                // A trace from a pipe: no end to measure a share against until it is read.
                "{spinner} simulating: {msg}"
            };
            b.set_style(
                indicatif::ProgressStyle::with_template(template)
                    .expect("valid template")
                    .progress_chars("=> "),
            );
        }
        match p.share {
            Some(frac) => {
                // The estimate first: the share draws a frame, which showed `()` before the
                // first estimate and the previous estimate after.
                b.set_message(eta_text(elapsed_s, frac));
                b.set_position((frac * 1000.0) as u64);
            }
            None => {
                b.set_message(done_text(p));
                b.tick();
            }
        }
    }

    /// Takes the bar off the terminal.
    pub fn finish(self) {
        self.bar.finish_and_clear();
    }
}

/// `(done, of)` when `line` is an experiment's count of finished runs (`NAME: D/N runs`).
fn run_count(line: &str) -> Option<(u64, u64)> {
    let (_, count) = line.rsplit_once(": ")?;
    let (d, n) = count.strip_suffix(" runs")?.split_once('/')?;
    Some((d.parse().ok()?, n.parse().ok()?))
}

/// Which of `reproduce`'s log lines are printed: every line that is not a count of runs, and of
/// the counts the last of each batch and those that are due.
#[derive(Debug)]
pub struct RunCounts {
    every: Every,
}

impl RunCounts {
    pub fn new(interval_s: f64) -> RunCounts {
        RunCounts {
            every: Every::new(interval_s),
        }
    }

    pub fn admit(&mut self, line: &str, elapsed_s: f64) -> bool {
        match run_count(line) {
            None => true,
            Some((d, n)) if d >= n => true,
            Some(_) => self.every.due(elapsed_s),
        }
    }
}

/// A writer that passes bytes on and notes how many have gone through, at most once an interval.
pub struct Counting<W, N> {
    inner: W,
    notes: N,
    what: String,
    bytes: u64,
    started: Instant,
    every: Every,
}

impl<W: Write, N: Write> Counting<W, N> {
    /// Notes go to `notes` (standard error), each naming `what`.
    pub fn new(inner: W, notes: N, what: String, interval_s: f64) -> Self {
        Counting {
            inner,
            notes,
            what,
            bytes: 0,
            started: Instant::now(),
            every: Every::new(interval_s),
        }
    }
}

impl<W, N> Counting<W, N> {
    /// The bytes passed on so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl<W: Write, N: Write> Write for Counting<W, N> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        let elapsed_s = self.started.elapsed().as_secs_f64();
        if self.every.due(elapsed_s) {
            // A note that cannot be written is no reason to stop the download.
            let _ = writeln!(
                self.notes,
                "{}: {:.1} MiB received in {:.0} s",
                self.what,
                self.bytes as f64 / (1u64 << 20) as f64,
                elapsed_s
            );
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use foresight_sim::TraceProgress;

    /// The frames a bar drew, each as written.
    #[derive(Debug, Clone, Default)]
    struct Frames(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

    impl indicatif::TermLike for Frames {
        fn width(&self) -> u16 {
            100
        }
        fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn write_line(&self, s: &str) -> std::io::Result<()> {
            self.write_str(s)
        }
        fn write_str(&self, s: &str) -> std::io::Result<()> {
            if !s.is_empty() {
                self.0.lock().unwrap().push(s.to_string());
            }
            Ok(())
        }
        fn clear_line(&self) -> std::io::Result<()> {
            Ok(())
        }
        fn flush(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// The bar's first frame showed its share with empty parentheses, `3% ()`, the estimate of
    /// the time left set only after the share had drawn the frame.
    #[test]
    fn the_sim_bar_never_draws_an_empty_estimate() {
        let frames = Frames::default();
        let mut bar = SimBar::new(indicatif::ProgressDrawTarget::term_like(Box::new(
            frames.clone(),
        )));
        for (frac, elapsed_s) in [(0.03, 1.0), (0.25, 2.0), (0.5, 4.0)] {
            bar.show(&Progress::share(frac), elapsed_s);
        }
        bar.finish();
        let drawn = frames.0.lock().unwrap().clone();
        assert!(
            drawn.iter().any(|f| f.contains("3% (eta ")),
            "no frame at 3%: {drawn:?}"
        );
        assert!(
            drawn.iter().all(|f| !f.contains("()")),
            "a frame without its estimate: {drawn:?}"
        );
    }

    /// A run a quarter done after 1 s has about 3 s left, whatever the bar saw before it appeared.
    #[test]
    fn the_eta_carries_the_rate_so_far_to_the_end() {
        assert_eq!(eta_text(1.0, 0.25), "eta 3s");
        assert_eq!(eta_text(6.0, 0.5), "eta 6s");
        assert_eq!(eta_text(60.0, 0.5), "eta 1m 00s");
        assert_eq!(eta_text(100.0, 0.4), "eta 2m 30s");
        assert_eq!(eta_text(3600.0, 0.5), "eta 1h 00m");
        assert_eq!(eta_text(5.0, 1.0), "eta 0s");
        assert_eq!(eta_text(1.0, 0.0), "eta ?");
        assert_eq!(eta_text(1.0, f64::NAN), "eta ?");
    }

    /// A trace read from a pipe has no length until its end: its note said "simulating: 0%" for
    /// the whole replay. It now says how much of the trace was read and how far the simulated
    /// time got; a run whose share is known keeps its percentage.
    #[test]
    fn a_run_of_unknown_length_notes_what_it_has_read_not_a_share() {
        let pipe = Progress {
            share: None,
            simulated_s: 120.5,
            trace: Some(TraceProgress {
                records: 1_200_000,
                read_bytes: 60 << 20,
            }),
        };
        assert_eq!(
            sim_note(&pipe, 5.2),
            "simulating: 1200000 trace records (60.0 MiB) read, 120.500 s simulated after 5 s"
        );
        let file = Progress {
            share: Some(0.413),
            ..pipe
        };
        assert_eq!(sim_note(&file, 5.0), "simulating: 41% after 5 s");
        assert_eq!(
            done_text(&Progress::share(0.5)),
            "0.000 s simulated",
            "a run without a trace"
        );
    }

    #[test]
    fn a_note_is_due_once_an_interval_and_not_before_the_first() {
        let mut e = Every::new(5.0);
        let due: Vec<f64> = [0.0, 1.0, 4.9, 5.0, 5.1, 9.9, 10.2, 10.3, 16.0]
            .into_iter()
            .filter(|&t| e.due(t))
            .collect();
        assert_eq!(due, vec![5.0, 10.2, 16.0]);
    }

    /// The quick catalogue printed a line for each of its 1,100-odd runs.
    #[test]
    fn reproduce_prints_a_batch_of_runs_as_due_notes_and_its_last_count() {
        let mut r = RunCounts::new(1.0);
        let mut printed = Vec::new();
        for line in ["informed: the paper's tables"] {
            if r.admit(line, 0.0) {
                printed.push(line.to_string());
            }
        }
        for d in 1..=415 {
            let line = format!("informed: {d}/415 runs");
            // Ten runs a second of this host's time.
            if r.admit(&line, d as f64 / 10.0) {
                printed.push(line);
            }
        }
        assert_eq!(printed.first().unwrap(), "informed: the paper's tables");
        assert_eq!(printed.last().unwrap(), "informed: 415/415 runs");
        assert!(printed.len() <= 44, "{} lines: {printed:?}", printed.len());
        assert!(printed.len() >= 40, "{} lines: {printed:?}", printed.len());
        // A name with a colon, and lines that only look like counts, are passed as they are.
        assert_eq!(run_count("network fig9: 16/64 runs"), Some((16, 64)));
        assert_eq!(run_count("striping: 3 runs"), None);
        assert_eq!(run_count("done in 3.1 s"), None);
    }

    #[test]
    fn the_counting_writer_passes_every_byte_and_notes_the_count() {
        let mut out = Vec::new();
        let mut notes = Vec::new();
        {
            // An interval of zero: every write is due, so the test needs no clock.
            let mut w = Counting::new(&mut out, &mut notes, "http://h/f".into(), 0.0);
            w.write_all(&[7u8; 1 << 20]).unwrap();
            w.write_all(&[8u8; 1 << 19]).unwrap();
            w.flush().unwrap();
        }
        assert_eq!(out.len(), 3 << 19);
        let notes = String::from_utf8(notes).unwrap();
        assert!(
            notes
                .lines()
                .last()
                .unwrap()
                .starts_with("http://h/f: 1.5 MiB received in "),
            "{notes}"
        );
    }
}
