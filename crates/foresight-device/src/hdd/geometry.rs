//! Zoned recording layout: which cylinder, surface and sector holds a logical block, and where on the
//! revolution that sector sits.
//!
//! A drive records more sectors on the longer outer tracks than on the inner ones, so the cylinders are
//! grouped into zones of constant sectors per track (zoned bit recording). Logical blocks are numbered
//! cylinder-major, outer to inner: every sector of track (c, 0), then (c, 1) up to the last surface, then
//! cylinder c + 1. Lookups binary-search a per-zone table of first LBAs, so they cost O(log zones) and
//! never allocate.
//!
//! The angular position of a sector follows DiskSim's first-generation layout (`dm_layout_g1`, the
//! `Skew for track switch` / `Skew for cylinder switch` fields of the `.model` files in
//! `../shared/data/disksim/`): the first sector of each track is shifted from the first sector of the
//! previous track by the track skew (same cylinder, next surface) or the cylinder skew (next cylinder),
//! and these shifts accumulate across the zone. A skew exists so that after reading the last sector of a
//! track the head can switch (or seek one cylinder) before the next track's first sector arrives; a skew
//! shorter than the switch costs almost a full revolution per track. Zones are chained: the first track
//! of a zone is one cylinder skew (of that zone) after the last track of the previous zone, so the
//! skews accumulate over the whole disk the way a continuous sequential read experiences them.

use foresight_core::{Bandwidth, ByteLen, Duration, Lba, SECTOR_BYTES};

use crate::error::DeviceError;

/// One recording zone: a range of cylinders with the same number of sectors per track.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Zone {
    /// First cylinder of the zone (cylinder 0 is the outermost).
    pub first_cyl: u32,
    /// Last cylinder of the zone, inclusive.
    pub last_cyl: u32,
    /// Sectors on every track of the zone.
    pub sectors_per_track: u32,
    /// Angular shift, in this zone's sectors, of a track's first sector relative to the previous
    /// track on the same cylinder (covers a head switch).
    pub track_skew_sectors: u32,
    /// Angular shift, in this zone's sectors, of the first track of a cylinder relative to the last
    /// track of the previous cylinder (covers a one-cylinder seek).
    pub cyl_skew_sectors: u32,
}

impl Zone {
    /// Cylinders in the zone.
    pub fn cylinder_count(&self) -> u32 {
        self.last_cyl - self.first_cyl + 1
    }
}

/// A compact, parametric description of a zone table, for presets that should not carry a drive's
/// full zone list.
///
/// `zone_count` bands of (nearly) equal cylinder count; band `k` of `Z` has
/// `spt_outer - (spt_outer - spt_inner) * (k / (Z - 1))^shape_exponent` sectors per track, rounded.
/// An exponent of 1 is a straight line in the cylinder number, which is what constant linear bit
/// density gives (track length grows linearly with radius, and cylinders are evenly spaced in radius);
/// real drives keep their outer zones wider, which an exponent above 1 reproduces. Skews are given as
/// fractions of a revolution and rounded up to whole sectors of each zone.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ZoneProgression {
    /// Number of zones.
    pub zone_count: u32,
    /// Sectors per track in the outermost zone.
    pub spt_outer: u32,
    /// Sectors per track in the innermost zone.
    pub spt_inner: u32,
    /// Shape of the outer-to-inner decline (1 = linear in the cylinder number).
    pub shape_exponent: f64,
    /// Track skew as a fraction of a revolution.
    pub track_skew_rev: f64,
    /// Cylinder skew as a fraction of a revolution.
    pub cyl_skew_rev: f64,
}

impl ZoneProgression {
    /// The zone table for a drive with `cylinders` cylinders. Panics if `zone_count` is zero or larger
    /// than `cylinders`, or if the fractions are not finite: presets are fixed at compile time, so
    /// these are programmer errors; `Geometry::new` validates the resulting table.
    pub fn zones(&self, cylinders: u32) -> Vec<Zone> {
        assert!(
            self.zone_count >= 1 && self.zone_count <= cylinders,
            "zone_count must be in 1..=cylinders"
        );
        assert!(self.shape_exponent.is_finite() && self.shape_exponent > 0.0);
        assert!(self.track_skew_rev.is_finite() && self.cyl_skew_rev.is_finite());
        let z = u64::from(self.zone_count);
        let c = u64::from(cylinders);
        let outer = f64::from(self.spt_outer);
        let inner = f64::from(self.spt_inner);
        (0..z)
            .map(|k| {
                let x = if z == 1 {
                    0.0
                } else {
                    k as f64 / (z - 1) as f64
                };
                let spt = (outer - (outer - inner) * x.powf(self.shape_exponent))
                    .round()
                    .max(1.0) as u32;
                // Round up (a skew too short loses a revolution), but not on floating-point dust:
                // 63/334 of a revolution must give 63 sectors of 334, not 64.
                let skew = |rev: f64| {
                    (((rev * f64::from(spt)) - 1e-6).ceil().max(0.0) as u32).min(spt - 1)
                };
                Zone {
                    first_cyl: (k * c / z) as u32,
                    last_cyl: ((k + 1) * c / z - 1) as u32,
                    sectors_per_track: spt,
                    track_skew_sectors: skew(self.track_skew_rev),
                    cyl_skew_sectors: skew(self.cyl_skew_rev),
                }
            })
            .collect()
    }
}

/// The physical address of a sector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chs {
    /// Index of the zone in the geometry's zone list.
    pub zone: usize,
    /// Cylinder (0 = outermost).
    pub cylinder: u32,
    /// Surface (head) number.
    pub head: u32,
    /// Sector within the track, counted from the track's first (skewed) sector.
    pub sector: u32,
}

/// A validated zoned layout with O(log zones) address translation.
#[derive(Clone, Debug)]
pub struct Geometry {
    cylinders: u32,
    surfaces: u32,
    zones: Vec<Zone>,
    /// First LBA of each zone; `zone_first_lba[0] == 0`, strictly increasing.
    zone_first_lba: Vec<u64>,
    /// Angle (fraction of a revolution) of the first sector of each zone's first track.
    zone_base_angle: Vec<f64>,
    capacity_sectors: u64,
}

impl Geometry {
    /// Builds and validates a layout. Zones must be listed outer to inner without overlapping, the last
    /// one must end at the last cylinder, and skews must be shorter than a track. Cylinders that no
    /// zone covers (before a zone's first cylinder) are spares: they hold no blocks, but seeks cross
    /// them.
    pub fn new(cylinders: u32, surfaces: u32, zones: &[Zone]) -> Result<Geometry, DeviceError> {
        if cylinders == 0 {
            return Err(crate::error::bad(
                "cylinders",
                0,
                "a drive needs at least one cylinder",
            ));
        }
        if surfaces == 0 {
            return Err(crate::error::bad(
                "surfaces",
                0,
                "a drive needs at least one surface",
            ));
        }
        if zones.is_empty() {
            return Err(crate::error::bad(
                "zones",
                "[]",
                "give at least one zone ending at the last cylinder",
            ));
        }
        let mut expected_first = 0u32;
        for (index, z) in zones.iter().enumerate() {
            // A zone may start after the previous one ends: the cylinders between hold no blocks
            // (DiskSim's `dm_layout_g1` files skip spare cylinders that way, e.g. `ibm18es.model`).
            if z.first_cyl < expected_first || z.last_cyl < z.first_cyl {
                return Err(DeviceError::ZoneGap {
                    index,
                    first_cyl: z.first_cyl,
                    last_cyl: z.last_cyl,
                    expected_first,
                });
            }
            if z.sectors_per_track == 0 {
                return Err(DeviceError::BadZone {
                    index,
                    problem: "sectors_per_track is 0; every track holds at least one sector".into(),
                });
            }
            if z.track_skew_sectors >= z.sectors_per_track
                || z.cyl_skew_sectors >= z.sectors_per_track
            {
                return Err(DeviceError::BadZone {
                    index,
                    problem: format!(
                        "skews ({} track, {} cylinder) must be shorter than the track ({} sectors); \
                         take them modulo sectors_per_track",
                        z.track_skew_sectors, z.cyl_skew_sectors, z.sectors_per_track
                    ),
                });
            }
            expected_first = z.last_cyl.checked_add(1).ok_or(DeviceError::BadZone {
                index,
                problem: "last_cyl overflows".into(),
            })?;
        }
        let last = zones[zones.len() - 1].last_cyl;
        if last != cylinders - 1 {
            return Err(DeviceError::ZonesDontCover {
                last_cyl: last,
                cylinders,
                expected_last: cylinders - 1,
            });
        }

        let mut zone_first_lba = Vec::with_capacity(zones.len());
        let mut zone_base_angle = Vec::with_capacity(zones.len());
        let mut lba = 0u64;
        for (i, z) in zones.iter().enumerate() {
            zone_first_lba.push(lba);
            let base = if i == 0 {
                0.0
            } else {
                // The previous zone's last track, then one cylinder skew of this zone.
                let prev = &zones[i - 1];
                let last_track = Self::track_angle_in(
                    prev,
                    zone_base_angle[i - 1],
                    surfaces,
                    prev.last_cyl,
                    surfaces - 1,
                );
                frac(last_track + f64::from(z.cyl_skew_sectors) / f64::from(z.sectors_per_track))
            };
            zone_base_angle.push(base);
            // A geometry a parameter file can state may hold more than 2^64 sectors.
            lba = u64::from(z.cylinder_count())
                .checked_mul(u64::from(surfaces))
                .and_then(|t| t.checked_mul(u64::from(z.sectors_per_track)))
                .and_then(|n| lba.checked_add(n))
                .ok_or_else(|| DeviceError::BadZone {
                    index: i,
                    problem: "the drive would hold more than 2^64 sectors".into(),
                })?;
        }
        // Capacities are also given in bytes (`capacity`, `Device::capacity`), which must fit too.
        if lba.checked_mul(SECTOR_BYTES).is_none() {
            return Err(DeviceError::BadZone {
                index: zones.len() - 1,
                problem: format!("the drive would hold {lba} sectors, more than 2^64 bytes"),
            });
        }
        Ok(Geometry {
            cylinders,
            surfaces,
            zones: zones.to_vec(),
            zone_first_lba,
            zone_base_angle,
            capacity_sectors: lba,
        })
    }

    /// Number of cylinders.
    pub fn cylinders(&self) -> u32 {
        self.cylinders
    }

    /// Number of recording surfaces (heads).
    pub fn surfaces(&self) -> u32 {
        self.surfaces
    }

    /// The zone table, outer to inner.
    pub fn zones(&self) -> &[Zone] {
        &self.zones
    }

    /// Addressable sectors: the sum over zones of cylinders x surfaces x sectors per track.
    pub fn capacity_sectors(&self) -> u64 {
        self.capacity_sectors
    }

    /// Addressable bytes.
    pub fn capacity(&self) -> ByteLen {
        ByteLen(self.capacity_sectors * SECTOR_BYTES)
    }

    /// First LBA of zone `zone`.
    pub fn zone_first_lba(&self, zone: usize) -> Lba {
        Lba(self.zone_first_lba[zone])
    }

    /// Sectors in zone `zone`.
    pub fn zone_sectors(&self, zone: usize) -> u64 {
        let end = self
            .zone_first_lba
            .get(zone + 1)
            .copied()
            .unwrap_or(self.capacity_sectors);
        end - self.zone_first_lba[zone]
    }

    /// The zone holding `lba` (binary search). Panics if `lba` is past the end.
    pub fn zone_index(&self, lba: Lba) -> usize {
        assert!(
            lba.0 < self.capacity_sectors,
            "LBA {} past capacity {}",
            lba.0,
            self.capacity_sectors
        );
        self.zone_first_lba.partition_point(|&first| first <= lba.0) - 1
    }

    /// The track holding `lba`: its first LBA and one past its last. Panics if `lba` is past the end.
    pub fn track_bounds(&self, lba: Lba) -> (u64, u64) {
        let zone = self.zone_index(lba);
        let spt = u64::from(self.zones[zone].sectors_per_track);
        let rel = lba.0 - self.zone_first_lba[zone];
        let first = lba.0 - rel % spt;
        (first, first + spt)
    }

    /// The cylinder holding `lba`: its first LBA and one past its last. Panics if `lba` is past the
    /// end.
    pub fn cylinder_bounds(&self, lba: Lba) -> (u64, u64) {
        let zone = self.zone_index(lba);
        let per_cyl = u64::from(self.zones[zone].sectors_per_track) * u64::from(self.surfaces);
        let rel = lba.0 - self.zone_first_lba[zone];
        let first = lba.0 - rel % per_cyl;
        (first, first + per_cyl)
    }

    /// The physical address of `lba`. Panics if `lba` is past the end.
    pub fn locate(&self, lba: Lba) -> Chs {
        let zone = self.zone_index(lba);
        let z = &self.zones[zone];
        let rel = lba.0 - self.zone_first_lba[zone];
        let spt = u64::from(z.sectors_per_track);
        let track = rel / spt;
        let surfaces = u64::from(self.surfaces);
        Chs {
            zone,
            cylinder: z.first_cyl + (track / surfaces) as u32,
            head: (track % surfaces) as u32,
            sector: (rel % spt) as u32,
        }
    }

    /// The LBA at a physical address; the inverse of [`Geometry::locate`]. Panics on an address that
    /// does not exist (cylinder outside its zone, head or sector out of range).
    pub fn lba_of(&self, chs: Chs) -> Lba {
        let z = &self.zones[chs.zone];
        assert!(
            chs.cylinder >= z.first_cyl && chs.cylinder <= z.last_cyl,
            "cylinder {} is not in zone {}",
            chs.cylinder,
            chs.zone
        );
        assert!(
            chs.head < self.surfaces && chs.sector < z.sectors_per_track,
            "bad head or sector"
        );
        let track =
            u64::from(chs.cylinder - z.first_cyl) * u64::from(self.surfaces) + u64::from(chs.head);
        Lba(self.zone_first_lba[chs.zone]
            + track * u64::from(z.sectors_per_track)
            + u64::from(chs.sector))
    }

    /// Angle, as a fraction of a revolution in `[0, 1)`, of the first sector of track (`cylinder`,
    /// `head`) in zone `zone`, including every skew accumulated since the start of the disk.
    pub fn track_start_angle(&self, zone: usize, cylinder: u32, head: u32) -> f64 {
        Self::track_angle_in(
            &self.zones[zone],
            self.zone_base_angle[zone],
            self.surfaces,
            cylinder,
            head,
        )
    }

    /// Angle, as a fraction of a revolution in `[0, 1)`, at which sector `lba` begins.
    pub fn sector_angle(&self, lba: Lba) -> f64 {
        let chs = self.locate(lba);
        let spt = f64::from(self.zones[chs.zone].sectors_per_track);
        frac(self.track_start_angle(chs.zone, chs.cylinder, chs.head) + f64::from(chs.sector) / spt)
    }

    /// Media rate of zone `zone` for a revolution of `period`: one track per revolution.
    pub fn zone_media_rate(&self, zone: usize, period: Duration) -> Bandwidth {
        let bytes = f64::from(self.zones[zone].sectors_per_track) * SECTOR_BYTES as f64;
        Bandwidth::from_bytes_per_s(bytes / period.as_secs_f64())
    }

    fn track_angle_in(z: &Zone, base: f64, surfaces: u32, cylinder: u32, head: u32) -> f64 {
        let spt = u128::from(z.sectors_per_track);
        // Skew accumulated from the zone's first track: every full cylinder contributes
        // (surfaces - 1) track skews and one cylinder skew; then `head` track skews. In u128,
        // since the product passes 2^64 on the largest geometries a parameter file may state.
        let per_cyl = u128::from(surfaces - 1) * u128::from(z.track_skew_sectors)
            + u128::from(z.cyl_skew_sectors);
        let acc = u128::from(cylinder - z.first_cyl) * per_cyl
            + u128::from(head) * u128::from(z.track_skew_sectors);
        frac(base + (acc % spt) as f64 / spt as f64)
    }
}

/// The fractional part of `x`, in `[0, 1)`.
pub(crate) fn frac(x: f64) -> f64 {
    let f = x - x.floor();
    if f >= 1.0 {
        0.0
    } else {
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn three_zones() -> Geometry {
        let zones = [
            Zone {
                first_cyl: 0,
                last_cyl: 9,
                sectors_per_track: 100,
                track_skew_sectors: 5,
                cyl_skew_sectors: 10,
            },
            Zone {
                first_cyl: 10,
                last_cyl: 24,
                sectors_per_track: 80,
                track_skew_sectors: 4,
                cyl_skew_sectors: 8,
            },
            Zone {
                first_cyl: 25,
                last_cyl: 29,
                sectors_per_track: 60,
                track_skew_sectors: 3,
                cyl_skew_sectors: 6,
            },
        ];
        Geometry::new(30, 4, &zones).unwrap()
    }

    #[test]
    fn capacity_is_the_sum_of_zones() {
        let g = three_zones();
        assert_eq!(
            g.capacity_sectors(),
            10 * 4 * 100 + 15 * 4 * 80 + 5 * 4 * 60
        );
        let sum: u64 = (0..3).map(|z| g.zone_sectors(z)).sum();
        assert_eq!(sum, g.capacity_sectors());
        assert_eq!(g.capacity(), ByteLen(g.capacity_sectors() * 512));
    }

    #[test]
    fn zone_boundaries() {
        let g = three_zones();
        let b1 = 10 * 4 * 100;
        assert_eq!(
            g.locate(Lba(b1 - 1)),
            Chs {
                zone: 0,
                cylinder: 9,
                head: 3,
                sector: 99
            }
        );
        assert_eq!(
            g.locate(Lba(b1)),
            Chs {
                zone: 1,
                cylinder: 10,
                head: 0,
                sector: 0
            }
        );
        let b2 = b1 + 15 * 4 * 80;
        assert_eq!(
            g.locate(Lba(b2 - 1)),
            Chs {
                zone: 1,
                cylinder: 24,
                head: 3,
                sector: 79
            }
        );
        assert_eq!(
            g.locate(Lba(b2)),
            Chs {
                zone: 2,
                cylinder: 25,
                head: 0,
                sector: 0
            }
        );
        assert_eq!(g.zone_first_lba(2), Lba(b2));
        let last = g.capacity_sectors() - 1;
        assert_eq!(
            g.locate(Lba(last)),
            Chs {
                zone: 2,
                cylinder: 29,
                head: 3,
                sector: 59
            }
        );
        // Cylinder-major numbering: after the last head of a cylinder comes head 0 of the next.
        assert_eq!(
            g.locate(Lba(400)),
            Chs {
                zone: 0,
                cylinder: 1,
                head: 0,
                sector: 0
            }
        );
        assert_eq!(
            g.locate(Lba(100)),
            Chs {
                zone: 0,
                cylinder: 0,
                head: 1,
                sector: 0
            }
        );
    }

    #[test]
    fn skews_accumulate_and_chain_across_zones() {
        let g = three_zones();
        assert_eq!(g.track_start_angle(0, 0, 0), 0.0);
        assert!((g.track_start_angle(0, 0, 1) - 0.05).abs() < 1e-12);
        // Cylinder 1: three track skews and one cylinder skew = 25 sectors of 100.
        assert!((g.track_start_angle(0, 1, 0) - 0.25).abs() < 1e-12);
        // Last track of zone 0: cylinder 9 head 3 = 9 * 25 + 15 = 240 sectors -> 0.40; zone 1 starts one
        // cylinder skew (8 of 80 sectors) later.
        assert!((g.track_start_angle(0, 9, 3) - 0.40).abs() < 1e-12);
        assert!((g.track_start_angle(1, 10, 0) - 0.50).abs() < 1e-12);
        assert!((g.sector_angle(Lba(10 * 4 * 100 + 40)) - 0.0).abs() < 1e-12);
    }

    #[test]
    fn spare_cylinders_between_zones_hold_no_blocks() {
        let z = |f, l, spt| Zone {
            first_cyl: f,
            last_cyl: l,
            sectors_per_track: spt,
            track_skew_sectors: 1,
            cyl_skew_sectors: 2,
        };
        // Cylinder 5 is a spare.
        let g = Geometry::new(10, 2, &[z(0, 4, 10), z(6, 9, 8)]).unwrap();
        assert_eq!(g.capacity_sectors(), 5 * 2 * 10 + 4 * 2 * 8);
        let first_of_second = g.zone_first_lba(1);
        assert_eq!(first_of_second, Lba(100));
        assert_eq!(g.locate(first_of_second).cylinder, 6);
        assert_eq!(g.track_bounds(Lba(105)), (100, 108));
        assert_eq!(g.cylinder_bounds(Lba(105)), (100, 116));
        assert_eq!(g.track_bounds(Lba(19)), (10, 20));
        assert_eq!(g.cylinder_bounds(Lba(19)), (0, 20));
    }

    #[test]
    fn bad_zone_tables_are_rejected_with_a_fix() {
        let z = |f, l| Zone {
            first_cyl: f,
            last_cyl: l,
            sectors_per_track: 10,
            track_skew_sectors: 1,
            cyl_skew_sectors: 2,
        };
        let e = Geometry::new(10, 2, &[z(0, 5), z(5, 9)]).unwrap_err();
        assert!(
            matches!(
                e,
                DeviceError::ZoneGap {
                    index: 1,
                    expected_first: 6,
                    ..
                }
            ),
            "{e}"
        );
        let e = Geometry::new(10, 2, &[z(0, 4), z(5, 8)]).unwrap_err();
        assert!(e.to_string().contains("end at cylinder 9"), "{e}");
        let e = Geometry::new(10, 2, &[z(3, 2)]).unwrap_err();
        assert!(matches!(e, DeviceError::ZoneGap { index: 0, .. }));
        let mut bad = z(0, 9);
        bad.cyl_skew_sectors = 10;
        assert!(Geometry::new(10, 2, &[bad]).is_err());
        assert!(Geometry::new(10, 0, &[z(0, 9)]).is_err());
        assert!(Geometry::new(10, 2, &[]).is_err());
    }

    #[test]
    fn a_geometry_whose_bytes_pass_2_to_the_64_is_rejected() {
        // 2^56 sectors fit a u64, but their 2^65 bytes do not: `capacity()` could not say them.
        let zone = Zone {
            first_cyl: 0,
            last_cyl: (1 << 30) - 1,
            sectors_per_track: 1 << 10,
            track_skew_sectors: 0,
            cyl_skew_sectors: 0,
        };
        let e = Geometry::new(1 << 30, 1 << 16, &[zone]).unwrap_err();
        assert!(e.to_string().contains("2^64 bytes"), "{e}");
        // The largest whole number of tracks that still fits is accepted and says its size.
        let zone = Zone {
            last_cyl: (1 << 29) - 1,
            sectors_per_track: (1 << 10) - 1,
            ..zone
        };
        let g = Geometry::new(1 << 29, 1 << 16, &[zone]).unwrap();
        assert_eq!(g.capacity().0, g.capacity_sectors() * 512);
    }

    #[test]
    fn progression_tiles_cylinders_and_declines() {
        let p = ZoneProgression {
            zone_count: 7,
            spt_outer: 195,
            spt_inner: 131,
            shape_exponent: 1.0,
            track_skew_rev: 0.113,
            cyl_skew_rev: 0.19,
        };
        let zones = p.zones(6581);
        assert_eq!(zones.len(), 7);
        assert_eq!(zones[0].sectors_per_track, 195);
        assert_eq!(zones[6].sectors_per_track, 131);
        assert!(zones
            .windows(2)
            .all(|w| w[0].sectors_per_track >= w[1].sectors_per_track));
        assert_eq!(zones[0].track_skew_sectors, 23);
        Geometry::new(6581, 8, &zones).unwrap();
    }

    proptest! {
        #[test]
        fn lba_chs_round_trip(lba in 0u64..(10 * 4 * 100 + 15 * 4 * 80 + 5 * 4 * 60)) {
            let g = three_zones();
            let chs = g.locate(Lba(lba));
            prop_assert_eq!(g.lba_of(chs), Lba(lba));
            let a = g.sector_angle(Lba(lba));
            prop_assert!((0.0..1.0).contains(&a));
        }

        #[test]
        fn round_trip_on_progressions(zone_count in 1u32..20, outer in 50u32..2000, drop in 0.2f64..0.9,
                                      exp in 0.5f64..2.5, pick in 0.0f64..1.0) {
            let p = ZoneProgression {
                zone_count,
                spt_outer: outer,
                spt_inner: ((f64::from(outer) * drop) as u32).max(1),
                shape_exponent: exp,
                track_skew_rev: 0.1,
                cyl_skew_rev: 0.2,
            };
            let g = Geometry::new(5000, 3, &p.zones(5000)).unwrap();
            let lba = ((g.capacity_sectors() - 1) as f64 * pick) as u64;
            prop_assert_eq!(g.lba_of(g.locate(Lba(lba))), Lba(lba));
        }
    }
}
