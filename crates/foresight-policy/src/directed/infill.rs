//! Infill: read the gap between two wanted reads instead of seeking over it.
//!
//! Paper 003_eb9cef22f2823582.txt, section III and Fig. 1: up to about 2.7 MB, reading over a
//! distance can cost less than seeking across it, so two wanted reads with a small gap between them
//! may be served faster by one read that spans the gap, whose bytes are then dropped; section IV
//! and Fig. 2 measure it: infill up to 32 KB helps, 32 KB to 2 MB changes nothing, beyond 2 MB it
//! hurts.
//!
//! Two reads are merged when the gap between them is at most the threshold. The threshold is either
//! a size ([`Infill::Bytes`]) or derived from the device ([`Infill::Auto`]): the break-even of Fig. 1,
//! the largest gap `g` whose read time `g / media_rate` is still no more than the positioning time
//! `pos(g)` the drive spends to skip over it. `pos` is the device model's curve, given as points
//! `(distance_bytes, ns)` (the driver builds it from the seek curve plus the mean rotational wait;
//! the policy never sees the device). A device with no positioning cost (an SSD: an empty curve)
//! gives a threshold of zero.
//!
//! Gap bytes take memory from their fetch until it completes and they are released, so a stream's
//! gaps in flight count against its window's limit beside the hinted bytes it holds: a run reads
//! a gap only if that room is left. A window that fills memory thus reads no gaps, and infill never
//! pushes a fetch past memory that infill 0 would not (a refused fetch is swept again, gaps and
//! all, so uncharged gaps made a small page cache read its file over and over).

/// How much gap between two wanted reads may be read and dropped (`policy.infill_max`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Infill {
    /// Merge reads whose gap is at most this many bytes (0 = never read a gap).
    Bytes(u64),
    /// Merge up to the break-even of the device's positioning curve and media rate.
    Auto,
}

impl Infill {
    /// The config spelling: `auto` or the byte count.
    pub fn name(&self) -> String {
        match self {
            Infill::Bytes(b) => format!("{b}"),
            Infill::Auto => "auto".into(),
        }
    }
}

/// Positioning time at `distance_bytes`, ns, by linear interpolation between the points of `curve`
/// (held flat before the first and after the last point). `curve` must be sorted by distance.
pub fn positioning_ns(curve: &[(u64, u64)], distance_bytes: u64) -> f64 {
    let Some(&(d0, t0)) = curve.first() else {
        return 0.0;
    };
    if distance_bytes <= d0 {
        return t0 as f64;
    }
    for w in curve.windows(2) {
        let ((a, ta), (b, tb)) = (w[0], w[1]);
        if distance_bytes <= b {
            let f = (distance_bytes - a) as f64 / (b - a).max(1) as f64;
            return ta as f64 + f * (tb as f64 - ta as f64);
        }
    }
    curve.last().map_or(0.0, |&(_, t)| t as f64)
}

/// The break-even gap of paper 003, Fig. 1: the largest `g` with `g / media <= pos(g)`, in bytes,
/// or 0 when the device has no positioning cost or no known media rate.
pub fn auto_threshold_bytes(curve: &[(u64, u64)], media_bytes_per_s: u64) -> u64 {
    if curve.is_empty() || media_bytes_per_s == 0 || curve.iter().all(|&(_, t)| t == 0) {
        return 0;
    }
    assert!(
        curve.windows(2).all(|w| w[0].0 < w[1].0),
        "positioning curve must be sorted by strictly increasing distance"
    );
    let read_ns = |d: f64| d * 1e9 / media_bytes_per_s as f64;
    // f(d) = pos(d) - read(d) is piecewise linear: check each segment, including the flat parts
    // before the first point and after the last, and keep the largest d where f >= 0.
    let mut knots: Vec<u64> = vec![0];
    knots.extend(curve.iter().map(|&(d, _)| d).filter(|&d| d > 0));
    let f = |d: u64| positioning_ns(curve, d) - read_ns(d as f64);
    let mut best = 0.0f64;
    for w in knots.windows(2) {
        let (a, b) = (w[0], w[1]);
        let (fa, fb) = (f(a), f(b));
        if fb >= 0.0 {
            best = best.max(b as f64);
        } else if fa >= 0.0 {
            best = best.max(a as f64 + (b - a) as f64 * fa / (fa - fb));
        }
    }
    // Beyond the last point the positioning time is flat at its last value.
    let last = *knots.last().expect("starts with 0");
    let t_last = positioning_ns(curve, last);
    let cross = t_last * media_bytes_per_s as f64 / 1e9;
    if cross >= last as f64 {
        best = best.max(cross);
    }
    best as u64
}

/// The threshold in bytes for `infill` on the given device figures.
pub fn threshold_bytes(infill: Infill, curve: &[(u64, u64)], media_bytes_per_s: u64) -> u64 {
    match infill {
        Infill::Bytes(b) => b,
        Infill::Auto => auto_threshold_bytes(curve, media_bytes_per_s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssd_and_unknown_devices_never_infill() {
        assert_eq!(auto_threshold_bytes(&[], 500 << 20), 0);
        assert_eq!(
            auto_threshold_bytes(&[(4096, 0), (1 << 30, 0)], 500 << 20),
            0
        );
        assert_eq!(auto_threshold_bytes(&[(4096, 5_000_000)], 0), 0);
    }

    #[test]
    fn break_even_of_a_flat_curve_is_time_times_rate() {
        // 10 ms everywhere at 100 MB/s: reading 1 MB takes 10 ms.
        let t = auto_threshold_bytes(&[(1, 10_000_000), (1 << 40, 10_000_000)], 100_000_000);
        assert!((999_000..=1_001_000).contains(&t), "{t}");
    }

    #[test]
    fn break_even_on_a_rising_curve_lies_inside_it() {
        // pos rises from 2 ms at 4 KiB to 12 ms at 64 MiB; media 60 MB/s.
        let curve = [
            (4096, 2_000_000),
            (1 << 20, 6_000_000),
            (64 << 20, 12_000_000),
        ];
        let media = 60_000_000;
        let t = auto_threshold_bytes(&curve, media);
        let read_ms = t as f64 / media as f64 * 1e3;
        let pos_ms = positioning_ns(&curve, t) / 1e6;
        assert!((read_ms - pos_ms).abs() < 0.05, "{read_ms} vs {pos_ms}");
        assert!(t > 1 << 16 && t < 1 << 20, "{t}");
        assert_eq!(threshold_bytes(Infill::Bytes(7), &curve, media), 7);
        assert_eq!(threshold_bytes(Infill::Auto, &curve, media), t);
    }
}
