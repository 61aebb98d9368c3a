//! Mechanics of a disk drive: the arm's seek curve, the spinning platter, and the controller's
//! per-command overheads.
//!
//! **Seek.** The time to move the arm `d` cylinders is a curve fitted to measurements. Two forms are
//! offered: a table of measured points (DiskSim's "extracted" seek type, the `.seek` files in
//! `../shared/data/disksim/`) with linear interpolation, and the two-piece form of Ruemmler and Wilkes
//! ("An introduction to disk drive modeling", IEEE Computer 27(3), 1994, section "Seek time"), which
//! DiskSim also offers as its "HPL seek equation" (see the commented line in `atlas10k.model`):
//! `a + b*sqrt(d)` for short seeks, where the arm accelerates for half the way and decelerates for the
//! other half, and `c + e*d` for long seeks, where it coasts at top speed. A zero-distance seek costs
//! nothing. [`SeekCurve::from_datasheet`] builds the two-piece form from the three numbers a datasheet
//! gives.
//!
//! **Rotation.** The platter turns at a constant rate from time zero, so its angle is a function of
//! absolute time, `angle(t) = (t mod period) / period`. Rotational latency is therefore not drawn at
//! random: it is the time from the end of the seek until the target sector's angle (from the
//! [`Geometry`](super::geometry::Geometry)) comes under the head. Two requests for nearby sectors
//! issued back to back see the real, correlated latency.
//!
//! **Overheads.** Command processing time in the drive's controller depends on whether the command
//! hits the cache and on the kind of the previous command, as in DiskSim's
//! `Read hit over. after read` ... `Write miss over. after write` fields (the `.diskspecs` files).

use foresight_core::Duration;

use crate::error::DeviceError;
use crate::hdd::geometry::frac;
use crate::Op;

/// Seek time as a function of distance in cylinders. All times are in milliseconds.
#[derive(Clone, Debug, PartialEq)]
pub enum SeekCurve {
    /// Measured points `(distance_cyl, seek_ms)`, strictly increasing in distance, all distances at
    /// least 1. Between points the time is interpolated linearly; below the first point it is the first
    /// point's time (any non-zero move pays the settle); beyond the last point it is extrapolated along
    /// the last segment (to reach a full stroke the table did not measure).
    Points(Vec<(u32, f64)>),
    /// Ruemmler and Wilkes' two-piece curve, in milliseconds: `a + b*sqrt(d)` for
    /// `0 < d < boundary_cyl`, `c + e*d` for `d >= boundary_cyl`.
    RuemmlerWilkes {
        /// Constant of the short-seek piece, ms.
        a: f64,
        /// Coefficient of `sqrt(d)` in the short-seek piece, ms per sqrt(cylinder).
        b: f64,
        /// First distance, in cylinders, of the long-seek piece.
        boundary_cyl: u32,
        /// Constant of the long-seek piece, ms.
        c: f64,
        /// Slope of the long-seek piece, ms per cylinder.
        e: f64,
    },
    /// DiskSim's `hpl` seek type (`HPL seek equation values = [V1, V2, V3, V4, V5, V6]`, the form of
    /// Ruemmler and Wilkes 1994 for the HP 97560): `V2 + V3*sqrt(d)` for `0 < d < V1`, `V4 + V5*d`
    /// for `d >= V1`, and a one-cylinder seek of `V6` ms unless `V6` is -1 (then the equation
    /// applies to `d = 1` too).
    Hpl {
        /// `V1`: first distance of the linear piece, cylinders.
        boundary_cyl: u32,
        /// `V2`: constant of the square-root piece, ms.
        a: f64,
        /// `V3`: coefficient of `sqrt(d)`, ms.
        b: f64,
        /// `V4`: constant of the linear piece, ms.
        c: f64,
        /// `V5`: slope of the linear piece, ms per cylinder.
        e: f64,
        /// `V6`: the one-cylinder seek, ms, if given.
        single_cyl_ms: Option<f64>,
    },
}

impl SeekCurve {
    /// Checks that the curve can be evaluated and gives non-negative, finite times.
    pub fn validate(&self) -> Result<(), DeviceError> {
        match self {
            SeekCurve::Points(points) => {
                if points.is_empty() {
                    return Err(DeviceError::SeekCurve(
                        "the point table is empty; give at least the single-cylinder seek".into(),
                    ));
                }
                let mut prev = 0u32;
                for &(d, ms) in points {
                    if d <= prev {
                        return Err(DeviceError::SeekCurve(format!(
                            "distance {d} follows {prev}: distances must start at 1 or more and strictly increase"
                        )));
                    }
                    if !(ms.is_finite() && ms >= 0.0) {
                        return Err(DeviceError::SeekCurve(format!(
                            "seek time {ms} ms at distance {d} must be finite and non-negative"
                        )));
                    }
                    prev = d;
                }
                Ok(())
            }
            &SeekCurve::RuemmlerWilkes {
                a,
                b,
                boundary_cyl,
                c,
                e,
            } => {
                if ![a, b, c, e].iter().all(|x| x.is_finite()) {
                    return Err(DeviceError::SeekCurve("coefficients must be finite".into()));
                }
                if b < 0.0 || e < 0.0 {
                    return Err(DeviceError::SeekCurve(format!(
                        "b = {b} and e = {e} must be non-negative so that longer seeks never get faster"
                    )));
                }
                if boundary_cyl == 0 {
                    return Err(DeviceError::SeekCurve(
                        "boundary_cyl must be at least 1".into(),
                    ));
                }
                if a + b < 0.0 || c + e * f64::from(boundary_cyl) < 0.0 {
                    return Err(DeviceError::SeekCurve(
                        "the curve goes negative; raise a or c".into(),
                    ));
                }
                Ok(())
            }
            &SeekCurve::Hpl {
                boundary_cyl,
                a,
                b,
                c,
                e,
                single_cyl_ms,
            } => {
                SeekCurve::RuemmlerWilkes {
                    a,
                    b,
                    boundary_cyl: boundary_cyl.max(1),
                    c,
                    e,
                }
                .validate()?;
                if let Some(s) = single_cyl_ms {
                    if !(s.is_finite() && s >= 0.0) {
                        return Err(DeviceError::SeekCurve(format!(
                            "the one-cylinder seek {s} ms must be finite and non-negative"
                        )));
                    }
                }
                Ok(())
            }
        }
    }

    /// Seek time in milliseconds for a move of `distance_cyl` cylinders (0 for no move).
    pub fn seek_ms(&self, distance_cyl: u32) -> f64 {
        if distance_cyl == 0 {
            return 0.0;
        }
        match self {
            SeekCurve::Points(points) => {
                let (d0, t0) = points[0];
                if distance_cyl <= d0 {
                    return t0;
                }
                // First point at or beyond the distance.
                let i = points.partition_point(|&(d, _)| d < distance_cyl);
                let (lo, hi) = if i < points.len() {
                    (points[i - 1], points[i])
                } else if points.len() >= 2 {
                    (points[points.len() - 2], points[points.len() - 1])
                } else {
                    return t0;
                };
                let slope = (hi.1 - lo.1) / f64::from(hi.0 - lo.0);
                let v = lo.1 + slope * (f64::from(distance_cyl) - f64::from(lo.0));
                if i >= points.len() {
                    // Extrapolation: never below the last measured time.
                    v.max(hi.1)
                } else {
                    v
                }
            }
            &SeekCurve::RuemmlerWilkes {
                a,
                b,
                boundary_cyl,
                c,
                e,
            } => {
                let d = f64::from(distance_cyl);
                if distance_cyl < boundary_cyl {
                    a + b * d.sqrt()
                } else {
                    c + e * d
                }
            }
            &SeekCurve::Hpl {
                boundary_cyl,
                a,
                b,
                c,
                e,
                single_cyl_ms,
            } => {
                let d = f64::from(distance_cyl);
                match single_cyl_ms {
                    Some(s) if distance_cyl == 1 => s,
                    _ if distance_cyl < boundary_cyl => a + b * d.sqrt(),
                    _ => c + e * d,
                }
            }
        }
    }

    /// Seek time for a move of `distance_cyl` cylinders.
    pub fn seek_time(&self, distance_cyl: u32) -> Duration {
        Duration::from_millis_f64(self.seek_ms(distance_cyl))
    }

    /// Mean seek time, in ms, between a start and an end cylinder drawn independently and uniformly
    /// from `0..cylinders` (the usual definition of a datasheet's "average seek"). The distance `k`
    /// then has probability `2 (C - k) / C^2` for `k >= 1` (and `1 / C` for zero, which costs
    /// nothing). O(cylinders).
    pub fn mean_seek_ms(&self, cylinders: u32) -> f64 {
        let c = f64::from(cylinders);
        let mut sum = 0.0;
        for k in 1..cylinders {
            sum += 2.0 * (c - f64::from(k)) * self.seek_ms(k);
        }
        sum / (c * c)
    }

    /// Builds a Ruemmler-Wilkes curve from a datasheet's single-cylinder, average and full-stroke
    /// seek times for a drive with `cylinders` cylinders.
    ///
    /// Calibration: for a boundary `B`, four conditions fix `a, b, c, e`: `seek(1) = single`,
    /// `seek(cylinders - 1) = full`, and the two pieces meet at `B` with equal value and equal slope
    /// (`e = b / (2 sqrt(B))`), so the arm's speed has no jump. That gives
    /// `b = (full - single) / (sqrt(B)/2 + (C-1)/(2 sqrt(B)) - 1)`, `a = single - b`,
    /// `c = a + b sqrt(B)/2`. Moving `B` from 1 (nearly a straight line) to `C - 1` (a pure
    /// square root) raises the mean seek monotonically, so one sweep over `B` with running sums of the
    /// distance weights finds the boundary whose mean (as in [`SeekCurve::mean_seek_ms`]) is closest to
    /// `avg`; the result is within a small fraction of a percent whenever `avg` is reachable. If it is
    /// not (an average too close to the single-cylinder or to the full-stroke time), the error gives the
    /// reachable range.
    pub fn from_datasheet(
        single_ms: f64,
        avg_ms: f64,
        full_ms: f64,
        cylinders: u32,
    ) -> Result<SeekCurve, DeviceError> {
        if cylinders < 3 {
            return Err(crate::error::bad(
                "cylinders",
                cylinders,
                "seek calibration needs at least 3 cylinders",
            ));
        }
        if !(single_ms.is_finite() && single_ms > 0.0) {
            return Err(crate::error::bad(
                "single_ms",
                single_ms,
                "give a positive single-cylinder seek time",
            ));
        }
        if !(full_ms.is_finite() && full_ms > single_ms) {
            return Err(crate::error::bad(
                "full_ms",
                full_ms,
                "the full-stroke seek must exceed the single-cylinder seek",
            ));
        }
        if !avg_ms.is_finite() {
            return Err(crate::error::bad(
                "avg_ms",
                avg_ms,
                "give a finite average seek time",
            ));
        }
        let c_cyl = f64::from(cylinders);
        let coeffs = |boundary: u32| {
            let sb = f64::from(boundary).sqrt();
            let b = (full_ms - single_ms) / (sb / 2.0 + (c_cyl - 1.0) / (2.0 * sb) - 1.0);
            let a = single_ms - b;
            let e = b / (2.0 * sb);
            let c = a + b * sb - e * f64::from(boundary);
            (a, b, c, e)
        };
        // Totals over k = 1..C-1 of the weights w_k = 2 (C - k) / C^2, w_k * k.
        let mut total_w = 0.0;
        let mut total_wk = 0.0;
        for k in 1..cylinders {
            let w = 2.0 * (c_cyl - f64::from(k)) / (c_cyl * c_cyl);
            total_w += w;
            total_wk += w * f64::from(k);
        }
        // Sweep the boundary; below it the sqrt piece applies (running sums of w and w*sqrt(k)).
        let mut below_w = 0.0;
        let mut below_wsqrt = 0.0;
        let mut below_wk = 0.0;
        let mut best: Option<(f64, u32, f64)> = None; // (|error|, boundary, mean)
        let (mut min_mean, mut max_mean) = (f64::INFINITY, f64::NEG_INFINITY);
        for boundary in 1..cylinders {
            if boundary > 1 {
                let k = f64::from(boundary - 1);
                let w = 2.0 * (c_cyl - k) / (c_cyl * c_cyl);
                below_w += w;
                below_wsqrt += w * k.sqrt();
                below_wk += w * k;
            }
            let (a, b, c, e) = coeffs(boundary);
            let mean =
                a * below_w + b * below_wsqrt + c * (total_w - below_w) + e * (total_wk - below_wk);
            min_mean = min_mean.min(mean);
            max_mean = max_mean.max(mean);
            let err = (mean - avg_ms).abs();
            let better = match best {
                None => true,
                Some((best_err, _, _)) => err < best_err,
            };
            if better {
                best = Some((err, boundary, mean));
            }
        }
        let (_, boundary, mean) = best.expect("cylinders >= 3 gives at least one boundary");
        if (mean - avg_ms).abs() > 0.005 * avg_ms {
            return Err(DeviceError::SeekCalibration {
                single_ms,
                avg_ms,
                full_ms,
                cylinders,
                min_avg_ms: min_mean,
                max_avg_ms: max_mean,
            });
        }
        let (a, b, c, e) = coeffs(boundary);
        Ok(SeekCurve::RuemmlerWilkes {
            a,
            b,
            boundary_cyl: boundary,
            c,
            e,
        })
    }
}

/// The spinning platter: a constant rotation rate and an angle that is a function of absolute time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rotation {
    period_ns: f64,
}

/// Angles closer than this to a full turn count as "already there": it absorbs floating-point
/// rounding (about 1e-9 of a turn after hours of simulated time) and is far below one sector
/// (1/1200 of a turn on the densest drive here).
const ANGLE_EPSILON_REV: f64 = 1e-7;

impl Rotation {
    /// A platter turning at `rpm` revolutions per minute. Panics unless `rpm` is positive and finite
    /// (validated parameters never are).
    pub fn from_rpm(rpm: f64) -> Rotation {
        assert!(
            rpm.is_finite() && rpm > 0.0,
            "rpm must be positive, got {rpm}"
        );
        Rotation {
            period_ns: 60e9 / rpm,
        }
    }

    /// One revolution, in (fractional) nanoseconds.
    pub fn period_ns(&self) -> f64 {
        self.period_ns
    }

    /// One revolution, rounded to whole nanoseconds.
    pub fn period(&self) -> Duration {
        Duration(self.period_ns.round() as u64)
    }

    /// The angle under the head at absolute time `t_ns`, as a fraction of a revolution in `[0, 1)`.
    pub fn angle_at(&self, t_ns: f64) -> f64 {
        frac(t_ns / self.period_ns)
    }

    /// Time, in ns, from absolute time `t_ns` until angle `angle` (fraction of a revolution) is next
    /// under the head: zero if it is there now, never a full revolution or more.
    pub fn wait_ns(&self, t_ns: f64, angle: f64) -> f64 {
        let d = frac(angle - self.angle_at(t_ns));
        if !(ANGLE_EPSILON_REV..=1.0 - ANGLE_EPSILON_REV).contains(&d) {
            0.0
        } else {
            d * self.period_ns
        }
    }
}

/// Controller processing time per command, by the command's kind and the previous command's kind
/// (DiskSim's eight `... over. after ...` fields).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommandOverheads {
    /// A read served from the cache, after a read.
    pub read_hit_after_read: Duration,
    /// A read served from the cache, after a write.
    pub read_hit_after_write: Duration,
    /// A read that goes to the media, after a read.
    pub read_miss_after_read: Duration,
    /// A read that goes to the media, after a write.
    pub read_miss_after_write: Duration,
    /// A write absorbed by the cache (write-back caching), after a read.
    pub write_hit_after_read: Duration,
    /// A write absorbed by the cache, after a write.
    pub write_hit_after_write: Duration,
    /// A write that goes to the media, after a read.
    pub write_miss_after_read: Duration,
    /// A write that goes to the media, after a write.
    pub write_miss_after_write: Duration,
}

impl CommandOverheads {
    /// The same overhead whatever the previous command was.
    pub fn uniform(
        read_hit: Duration,
        read_miss: Duration,
        write_hit: Duration,
        write_miss: Duration,
    ) -> Self {
        CommandOverheads {
            read_hit_after_read: read_hit,
            read_hit_after_write: read_hit,
            read_miss_after_read: read_miss,
            read_miss_after_write: read_miss,
            write_hit_after_read: write_hit,
            write_hit_after_write: write_hit,
            write_miss_after_read: write_miss,
            write_miss_after_write: write_miss,
        }
    }

    /// The overhead of a command of kind `op`, cache `hit` or not, following a command of kind
    /// `previous`.
    pub fn get(&self, op: Op, hit: bool, previous: Op) -> Duration {
        match (op, hit, previous) {
            (Op::Read, true, Op::Read) => self.read_hit_after_read,
            (Op::Read, true, Op::Write) => self.read_hit_after_write,
            (Op::Read, false, Op::Read) => self.read_miss_after_read,
            (Op::Read, false, Op::Write) => self.read_miss_after_write,
            (Op::Write, true, Op::Read) => self.write_hit_after_read,
            (Op::Write, true, Op::Write) => self.write_hit_after_write,
            (Op::Write, false, Op::Read) => self.write_miss_after_read,
            (Op::Write, false, Op::Write) => self.write_miss_after_write,
        }
    }

    /// The largest of the eight overheads (for validation and reports).
    pub fn max(&self) -> Duration {
        [
            self.read_hit_after_read,
            self.read_hit_after_write,
            self.read_miss_after_read,
            self.read_miss_after_write,
            self.write_hit_after_read,
            self.write_hit_after_write,
            self.write_miss_after_read,
            self.write_miss_after_write,
        ]
        .into_iter()
        .max()
        .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_interpolate_and_extrapolate() {
        let c = SeekCurve::Points(vec![(1, 1.0), (11, 2.0), (111, 4.0)]);
        c.validate().unwrap();
        assert_eq!(c.seek_ms(0), 0.0);
        assert_eq!(c.seek_ms(1), 1.0);
        assert!((c.seek_ms(6) - 1.5).abs() < 1e-12);
        assert!((c.seek_ms(61) - 3.0).abs() < 1e-12);
        assert!(
            (c.seek_ms(211) - 6.0).abs() < 1e-12,
            "extrapolates along the last segment"
        );
        let single = SeekCurve::Points(vec![(5, 2.0)]);
        assert_eq!(single.seek_ms(3), 2.0);
        assert_eq!(single.seek_ms(500), 2.0);
        assert!(SeekCurve::Points(vec![]).validate().is_err());
        assert!(SeekCurve::Points(vec![(2, 1.0), (2, 2.0)])
            .validate()
            .is_err());
        assert!(SeekCurve::Points(vec![(0, 1.0)]).validate().is_err());
    }

    #[test]
    fn ruemmler_wilkes_pieces() {
        let c = SeekCurve::RuemmlerWilkes {
            a: 1.0,
            b: 0.5,
            boundary_cyl: 100,
            c: 5.0,
            e: 0.01,
        };
        c.validate().unwrap();
        assert_eq!(c.seek_ms(0), 0.0);
        assert!((c.seek_ms(4) - 2.0).abs() < 1e-12);
        assert!((c.seek_ms(100) - 6.0).abs() < 1e-12);
        assert!(SeekCurve::RuemmlerWilkes {
            a: 1.0,
            b: -0.5,
            boundary_cyl: 100,
            c: 5.0,
            e: 0.01
        }
        .validate()
        .is_err());
    }

    #[test]
    fn hpl_uses_its_one_cylinder_time() {
        // The HP 97560 of Ruemmler and Wilkes (1994): 3.24 + 0.400 sqrt(d) below 383 cylinders,
        // 8.00 + 0.008 d beyond.
        let mut c = SeekCurve::Hpl {
            boundary_cyl: 383,
            a: 3.24,
            b: 0.4,
            c: 8.0,
            e: 0.008,
            single_cyl_ms: Some(2.0),
        };
        c.validate().unwrap();
        assert_eq!(c.seek_ms(0), 0.0);
        assert_eq!(c.seek_ms(1), 2.0);
        assert!((c.seek_ms(100) - 7.24).abs() < 1e-12);
        assert!((c.seek_ms(1000) - 16.0).abs() < 1e-12);
        if let SeekCurve::Hpl { single_cyl_ms, .. } = &mut c {
            *single_cyl_ms = None;
        }
        assert!((c.seek_ms(1) - 3.64).abs() < 1e-12);
        if let SeekCurve::Hpl { single_cyl_ms, .. } = &mut c {
            *single_cyl_ms = Some(f64::NAN);
        }
        assert!(c.validate().is_err());
    }

    #[test]
    fn calibration_hits_the_average_and_is_monotone() {
        for &(single, avg, full, cyl) in &[
            (0.5525, 3.79, 6.93, 72_170u32),
            (1.245, 5.60, 10.828, 10_042),
            (2.0, 8.9, 21.0, 90_000),
            (0.8, 8.5, 18.0, 350_000),
            (1.062, 7.20, 12.742, 11_474),
        ] {
            let c = SeekCurve::from_datasheet(single, avg, full, cyl).unwrap();
            c.validate().unwrap();
            let mean = c.mean_seek_ms(cyl);
            assert!((mean - avg).abs() / avg < 0.01, "mean {mean} vs {avg}");
            assert!((c.seek_ms(1) - single).abs() < 1e-9);
            assert!((c.seek_ms(cyl - 1) - full).abs() < 1e-6 * full);
            let mut prev = 0.0;
            let step = (cyl / 5000).max(1);
            for d in (1..cyl).step_by(step as usize) {
                let t = c.seek_ms(d);
                assert!(t >= prev - 1e-9, "not monotone at {d}: {t} < {prev}");
                prev = t;
            }
        }
    }

    #[test]
    fn unreachable_averages_are_rejected_with_the_range() {
        let e = SeekCurve::from_datasheet(1.0, 1.5, 20.0, 10_000).unwrap_err();
        assert!(e.to_string().contains("must lie in"), "{e}");
        let e = SeekCurve::from_datasheet(1.0, 19.0, 20.0, 10_000).unwrap_err();
        assert!(matches!(e, DeviceError::SeekCalibration { .. }));
        assert!(SeekCurve::from_datasheet(2.0, 5.0, 1.0, 10_000).is_err());
    }

    #[test]
    fn rotation_is_a_function_of_absolute_time() {
        let r = Rotation::from_rpm(15_000.0);
        assert_eq!(r.period(), Duration::from_millis(4));
        assert!((r.angle_at(1_000_000.0) - 0.25).abs() < 1e-12);
        assert!((r.angle_at(5_000_000.0) - 0.25).abs() < 1e-12);
        assert!((r.wait_ns(1_000_000.0, 0.5) - 1_000_000.0).abs() < 1e-6);
        assert!((r.wait_ns(1_000_000.0, 0.0) - 3_000_000.0).abs() < 1e-6);
        assert_eq!(r.wait_ns(1_000_000.0, 0.25), 0.0);
    }

    #[test]
    fn overheads_by_kind() {
        let mut o = CommandOverheads::uniform(
            Duration::from_micros(1),
            Duration::from_micros(2),
            Duration::from_micros(3),
            Duration::from_micros(4),
        );
        o.read_miss_after_write = Duration::from_micros(9);
        assert_eq!(o.get(Op::Read, false, Op::Write), Duration::from_micros(9));
        assert_eq!(o.get(Op::Read, false, Op::Read), Duration::from_micros(2));
        assert_eq!(o.get(Op::Write, true, Op::Read), Duration::from_micros(3));
        assert_eq!(o.max(), Duration::from_micros(9));
    }
}
