//! Validation of a disk model against measurements: Ruemmler and Wilkes' demerit figure.
//!
//! Ruemmler and Wilkes ("An introduction to disk drive modeling", IEEE Computer 27(3), 1994,
//! section "Validation") compare a model with a real drive by the distributions of the service times
//! each gives for the same requests: the demerit figure is the root mean square of the horizontal
//! distance between the two cumulative distribution functions. DiskSim's `rms` tool computes it as
//! its validation measure: it steps the cumulative fraction `p` from 0.0001 to 1 in steps of 0.0001,
//! reads the service time at which each distribution reaches `p` (interpolating linearly between the
//! points of the distribution), and takes the RMS of the differences. [`demerit_ms`] does the same
//! over the exact samples: the empirical distribution of `n` samples is the polyline through the
//! points `(x_(k), k/n)` of the sorted samples, so the time at which it reaches `p` is found by
//! linear interpolation between the order statistics around position `p * n` ([`quantile`]).
//!
//! The service time DiskSim compares is the *physical access time*: from the moment the drive
//! starts a request to its completion, without time spent queued before it (`rms`'s "IOdriver
//! Physical access time distribution" against the trace's measured times). The simulator measures
//! the same thing for a trace replayed on one drive that serves one request at a time in arrival
//! order: a request starts when it arrives or when the previous one completes, whichever is later
//! ([`service_times_ms`]).

use crate::metrics::RequestRecord;

/// Cumulative-fraction steps at which the distributions are compared, as in DiskSim's `rms`
/// (`RMS_INCR = 0.0001`).
pub const STEPS: u32 = 10_000;

/// The value at which the empirical distribution of `sorted` (ascending, non-empty) reaches the
/// cumulative fraction `p` in `[0, 1]`: linear interpolation between the order statistics around
/// position `p * n` (1-based), clamped to the smallest and largest sample.
pub fn quantile(sorted: &[f64], p: f64) -> f64 {
    assert!(!sorted.is_empty(), "quantile of no samples");
    let n = sorted.len();
    let h = p * n as f64;
    if h <= 1.0 {
        return sorted[0];
    }
    if h >= n as f64 {
        return sorted[n - 1];
    }
    let k = h.floor() as usize; // 1-based index of the point at or below h
    let f = h - k as f64;
    sorted[k - 1] + f * (sorted[k] - sorted[k - 1])
}

/// Ruemmler and Wilkes' demerit figure between two samples of service times (same unit in, same
/// unit out; ms here): the RMS over `p = 1/STEPS .. 1` of `quantile(simulated, p) -
/// quantile(measured, p)`. `None` if either sample is empty or holds a non-finite value.
pub fn demerit_ms(simulated_ms: &[f64], measured_ms: &[f64]) -> Option<f64> {
    let sorted = |v: &[f64]| -> Option<Vec<f64>> {
        if v.is_empty() || v.iter().any(|x| !x.is_finite()) {
            return None;
        }
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        Some(s)
    };
    let (s, m) = (sorted(simulated_ms)?, sorted(measured_ms)?);
    let mut squares = 0.0;
    for step in 1..=STEPS {
        let p = f64::from(step) / f64::from(STEPS);
        let d = quantile(&s, p) - quantile(&m, p);
        squares += d * d;
    }
    Some((squares / f64::from(STEPS)).sqrt())
}

/// Physical access times, ms, of requests recorded in completion order on a drive that serves one
/// request at a time: each started at its submission or at the previous completion, whichever is
/// later.
pub fn service_times_ms(records: &[RequestRecord]) -> Vec<f64> {
    let mut prev_done = f64::NEG_INFINITY;
    records
        .iter()
        .map(|r| {
            let start = r.submit_s.max(prev_done);
            prev_done = r.complete_s;
            (r.complete_s - start) * 1e3
        })
        .collect()
}

/// Points `(value, cumulative fraction)` of the empirical distribution of `samples`, thinned to at
/// most `points_max` points, for plotting.
pub fn cdf_points(samples: &[f64], points_max: usize) -> Vec<(f64, f64)> {
    let mut s: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n == 0 || points_max == 0 {
        return Vec::new();
    }
    let step = n.div_ceil(points_max).max(1);
    let mut out: Vec<(f64, f64)> = (0..n)
        .step_by(step)
        .map(|i| (s[i], (i + 1) as f64 / n as f64))
        .collect();
    if out.last().is_some_and(|p| p.1 < 1.0) {
        out.push((s[n - 1], 1.0));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_distributions_have_no_demerit() {
        let a = [1.0, 2.0, 3.0, 10.0];
        assert_eq!(demerit_ms(&a, &a), Some(0.0));
        // Order does not matter.
        assert_eq!(demerit_ms(&[10.0, 1.0, 3.0, 2.0], &a), Some(0.0));
    }

    #[test]
    fn a_constant_shift_is_the_demerit() {
        let m: Vec<f64> = (0..1000).map(|i| f64::from(i) * 0.01).collect();
        let s: Vec<f64> = m.iter().map(|x| x + 0.25).collect();
        let d = demerit_ms(&s, &m).unwrap();
        assert!((d - 0.25).abs() < 1e-12, "{d}");
    }

    #[test]
    fn a_known_small_case() {
        // Two samples each. Measured {1, 3}: 1 up to p = 1/2, then 1 + 2 (2p - 1) up to 3.
        // Simulated {2, 2}: 2 everywhere. Difference: 1 for p <= 1/2, |1 - 2(2p - 1)| after, whose
        // mean square over (1/2, 1] is (1/2) * (1/3) = 1/6. Total: (1/2 + 1/6) = 2/3.
        let d = demerit_ms(&[2.0, 2.0], &[1.0, 3.0]).unwrap();
        let exact = (2.0f64 / 3.0).sqrt();
        assert!((d - exact).abs() < 1e-3, "{d} vs {exact}");
        assert_eq!(quantile(&[1.0, 3.0], 0.75), 2.0);
        assert_eq!(quantile(&[1.0, 3.0], 0.1), 1.0);
        assert_eq!(quantile(&[1.0, 3.0], 1.0), 3.0);
    }

    #[test]
    fn empty_or_broken_samples_have_no_figure() {
        assert_eq!(demerit_ms(&[], &[1.0]), None);
        assert_eq!(demerit_ms(&[1.0], &[]), None);
        assert_eq!(demerit_ms(&[f64::NAN], &[1.0]), None);
    }

    #[test]
    fn service_times_start_at_arrival_or_previous_completion() {
        let rec = |submit_s: f64, complete_s: f64| RequestRecord {
            id: 0,
            stream: 0,
            submit_s,
            complete_s,
            offset: 0,
            bytes: 512,
            op: 'R',
        };
        // The second arrives while the first is in service: it starts at 0.010.
        let s = service_times_ms(&[rec(0.0, 0.010), rec(0.005, 0.012), rec(0.020, 0.021)]);
        let want = [10.0, 2.0, 1.0];
        for (a, b) in s.iter().zip(want) {
            assert!((a - b).abs() < 1e-9, "{s:?}");
        }
    }

    #[test]
    fn cdf_points_end_at_one() {
        let p = cdf_points(&[3.0, 1.0, 2.0], 2);
        assert_eq!(p.first(), Some(&(1.0, 1.0 / 3.0)));
        assert_eq!(p.last(), Some(&(3.0, 1.0)));
        assert!(cdf_points(&[], 10).is_empty());
    }
}
