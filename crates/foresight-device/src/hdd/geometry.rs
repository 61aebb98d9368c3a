//! Zoned recording layout: which cylinder, surface and sector holds a logical block, and where on the
//! revolution that sector sits.
//!
//! A drive records more sectors on the longer outer tracks than on the inner ones, so the cylinders are
//! grouped into zones of constant sectors per track (zoned bit recording). Logical blocks are numbered
//! cylinder-major, outer to inner: every sector of track (c, 0), then (c, 1) up to the last surface, then
//! cylinder c + 1. A layout may instead run the surfaces of every other cylinder from the last to the
//! first ([`SurfaceOrder`]), so that a sequential read passes to the next cylinder on the surface it
//! ended on; the track and cylinder skews follow the block order either way (the slips of per-track
//! sparing push by surface number, as in DiskSim). Lookups binary-search a per-zone table of first
//! LBAs, so they cost O(log zones) and never allocate.
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
//! DiskSim's own layout does not chain them: there each zone's first block sits at the zone's
//! `Offset of first block` and the skews count from the zone's first track. A drive imported from
//! DiskSim's files says so in its [`LayoutRules`] ([`ZoneStart::AtIndex`]).
//!
//! A real drive also sets sectors aside inside its zones ([`ZoneSpares`]): spare sectors kept to
//! replace bad ones, sectors "slipped" because they were bad at the factory, and empty space. Such
//! sectors take room on the platter (the head passes over them) but hold no block, so the blocks
//! after them sit further on than the arithmetic above puts them; and a block whose sector went
//! bad later ("defect") is moved to a spare elsewhere. A zone with such sectors keeps their
//! physical runs, sorted, with the number of blocks before each run, and a table of moved blocks;
//! a lookup binary-searches both, so it stays O(log runs) and never allocates. Zones without them
//! take the arithmetic path alone.

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

/// Rules of a layout beyond its zone table and set-aside sectors; the default (every preset) chains
/// the zones' skews over the whole disk and fills every cylinder first surface to last.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LayoutRules {
    /// Where each zone's first block sits.
    pub zone_start: ZoneStart,
    /// The order in which each cylinder's surfaces take blocks.
    pub surface_order: SurfaceOrder,
}

/// Where a zone's first block sits on the revolution; the skews of its later tracks count from it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ZoneStart {
    /// One cylinder skew of the zone after the last track of the zone before (the first zone at
    /// angle 0), as a continuous sequential read meets them.
    #[default]
    Chained,
    /// At angle 0, the skews counting from the zone's own first track: DiskSim's placement for a
    /// zone whose `Offset of first block` is 0.
    AtIndex,
}

/// The order in which a cylinder's surfaces take blocks (DiskSim's `LBN-to-PBN mapping scheme`).
/// Skews follow the blocks: the `k`-th track of a cylinder to take blocks is skewed as the `k`-th,
/// whatever its surface, as in DiskSim's `g1_map_pbn_skew`. The one exception, also DiskSim's: a
/// per-track sparing slip pushes the tracks of its cylinder by surface number
/// ([`ZoneSpares::skew_slips`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SurfaceOrder {
    /// First surface to last on every cylinder (scheme 0).
    #[default]
    Ascending,
    /// Last surface to first on the odd cylinders counted from the zone's first (scheme 1), so
    /// that blocks pass from one cylinder to the next on the same surface; each zone's first
    /// cylinder runs first to last.
    AlternatePerZone,
    /// Last surface to first on the odd cylinders of the disk (scheme 2).
    AlternatePerDisk,
}

/// Most runs of set-aside sectors a drive may list, over all its zones: a million, which holds one
/// run per track of the largest drives DiskSim describes. Each run costs 24 bytes of lookup table.
pub const HOLE_RUNS_MAX: usize = 1 << 20;

/// The sectors of one zone that hold no block, and the blocks moved to a spare. Sector and block
/// numbers count from the zone's first sector and first block; sectors are numbered in block order
/// (cylinder-major from the zone's first cylinder, then surface, then sector within the track).
/// The zone holds one block per sector outside the holes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ZoneSpares {
    /// Runs of sectors that hold no block, as `(first sector, sectors)`: sorted, disjoint, none
    /// empty.
    pub holes: Vec<(u64, u64)>,
    /// Blocks whose own sector is bad, as `(block, sector of the spare that holds it)`: sorted by
    /// block, each spare inside a hole and used once.
    pub remaps: Vec<(u64, u64)>,
    /// Slipped sectors that push the first sector of every later track one sector further round
    /// (DiskSim's per-cylinder and per-track sparing), sorted. With per-track sparing, the track
    /// on surface `h` is pushed by the slips of its cylinder's first `h` tracks to take blocks,
    /// whatever the surface order (DiskSim's `g1_map_pbn_skew` counts by surface number).
    pub skew_slips: Vec<u64>,
    /// Whether a slip pushes the later tracks of its own cylinder too (per-track sparing), rather
    /// than only the tracks of the later cylinders.
    pub skew_slips_per_track: bool,
}

/// A zone's [`ZoneSpares`], checked and indexed for lookups.
#[derive(Clone, Debug)]
struct Spared {
    /// `(first sector, sectors)` of each hole, merged where they touch.
    holes: Vec<(u64, u64)>,
    /// Blocks before each hole: a block `b` sits at sector `b + hidden[j]`, where `j` counts the
    /// holes whose `blocks_before` is at most `b`.
    blocks_before: Vec<u64>,
    /// Sectors in the holes before each hole (`hidden[0] == 0`), one more entry than `holes`.
    hidden: Vec<u64>,
    remaps: Vec<(u64, u64)>,
    skew_slips: Vec<u64>,
    skew_slips_per_track: bool,
    blocks: u64,
}

impl Spared {
    /// Checks `zs` against a zone of `sectors` sectors and indexes it; the error says what is wrong.
    fn new(zs: &ZoneSpares, sectors: u64) -> Result<Spared, String> {
        let mut holes: Vec<(u64, u64)> = Vec::with_capacity(zs.holes.len());
        let mut end = 0u64;
        for (k, &(first, len)) in zs.holes.iter().enumerate() {
            if len == 0 || first < end || first.checked_add(len).is_none_or(|e| e > sectors) {
                return Err(format!(
                    "set-aside run {k} (sectors {first}, {len} long) is empty, out of order, \
                     overlaps the one before or passes the zone's {sectors} sectors"
                ));
            }
            match holes.last_mut() {
                Some(last) if last.0 + last.1 == first => last.1 += len,
                _ => holes.push((first, len)),
            }
            end = first + len;
        }
        let mut hidden = Vec::with_capacity(holes.len() + 1);
        let mut blocks_before = Vec::with_capacity(holes.len());
        let mut sum = 0u64;
        for &(first, len) in &holes {
            hidden.push(sum);
            blocks_before.push(first - sum);
            sum += len;
        }
        hidden.push(sum);
        let blocks = sectors - sum;
        if blocks == 0 {
            return Err(
                "every sector of the zone is set aside; a zone holds at least one block".into(),
            );
        }
        let mut s = Spared {
            holes,
            blocks_before,
            hidden,
            remaps: Vec::new(),
            skew_slips: zs.skew_slips.clone(),
            skew_slips_per_track: zs.skew_slips_per_track,
            blocks,
        };
        if !zs.skew_slips.windows(2).all(|w| w[0] <= w[1]) {
            return Err("the slips that push the skew must be sorted".into());
        }
        let mut spares_used = Vec::with_capacity(zs.remaps.len());
        for (k, &(block, spare)) in zs.remaps.iter().enumerate() {
            if block >= blocks || k > 0 && zs.remaps[k - 1].0 >= block {
                return Err(format!(
                    "moved block {block} is past the zone's {blocks} blocks or out of order; \
                     list each block once, in increasing order"
                ));
            }
            let j = s.holes.partition_point(|&(first, _)| first <= spare);
            if j == 0 || spare >= s.holes[j - 1].0 + s.holes[j - 1].1 {
                return Err(format!(
                    "block {block} is moved to sector {spare}, which holds a block of its own; \
                     move it to a spare sector"
                ));
            }
            spares_used.push(spare);
        }
        spares_used.sort_unstable();
        if let Some(w) = spares_used.windows(2).find(|w| w[0] == w[1]) {
            return Err(format!(
                "two blocks are moved to spare sector {}; give each its own spare",
                w[0]
            ));
        }
        s.remaps = zs.remaps.clone();
        Ok(s)
    }

    /// The sector holding block `b` were it not moved to a spare, and the index of the first hole
    /// after it.
    fn natural(&self, b: u64) -> (u64, usize) {
        let j = self.blocks_before.partition_point(|&n| n <= b);
        (b + self.hidden[j], j)
    }

    /// The first block whose natural sector is at or after `sector`.
    fn block_at_or_after(&self, sector: u64) -> u64 {
        // Holes that start at or before `sector`; if the last of them covers it, count it whole.
        let j = self.holes.partition_point(|&(first, _)| first <= sector);
        if j == 0 {
            return sector;
        }
        let (first, len) = self.holes[j - 1];
        if sector < first + len {
            first - self.hidden[j - 1]
        } else {
            sector - self.hidden[j]
        }
    }

    fn remap_of(&self, b: u64) -> Option<u64> {
        if self.remaps.is_empty() {
            return None;
        }
        self.remaps
            .binary_search_by_key(&b, |&(block, _)| block)
            .ok()
            .map(|i| self.remaps[i].1)
    }

    /// Slips that push a track of the cylinder starting at zone sector `cyl_first`; with
    /// per-track sparing, those before zone sector `track_cutoff` (where the track would start
    /// were its cylinder filled first surface to last, as DiskSim counts them).
    fn skew_pushes(&self, cyl_first: u64, track_cutoff: u64) -> u64 {
        let cutoff = if self.skew_slips_per_track {
            track_cutoff
        } else {
            cyl_first
        };
        self.skew_slips.partition_point(|&s| s < cutoff) as u64
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

impl Chs {
    /// Whether `other` is on this sector's track (same zone, cylinder and surface): the head
    /// reaches it by waiting for the platter to turn, with no seek or head switch.
    pub fn same_track(self, other: Chs) -> bool {
        self.zone == other.zone && self.cylinder == other.cylinder && self.head == other.head
    }
}

/// A validated zoned layout with O(log zones) address translation.
#[derive(Clone, Debug)]
pub struct Geometry {
    cylinders: u32,
    surfaces: u32,
    zones: Vec<Zone>,
    /// First LBA of each zone; `zone_first_lba[0] == 0`, strictly increasing.
    zone_first_lba: Vec<u64>,
    /// Angle (fraction of a revolution) from which each zone's skews count: its first track's,
    /// unless per-track slips push that track (a reversed first cylinder under mapping scheme 2).
    zone_base_angle: Vec<f64>,
    /// Per zone, its set-aside sectors, or `None` when every sector holds a block.
    spared: Vec<Option<Spared>>,
    surface_order: SurfaceOrder,
    capacity_sectors: u64,
}

impl Geometry {
    /// Builds and validates a layout. Zones must be listed outer to inner without overlapping, the last
    /// one must end at the last cylinder, and skews must be shorter than a track. Cylinders that no
    /// zone covers (before a zone's first cylinder) are spares: they hold no blocks, but seeks cross
    /// them.
    pub fn new(cylinders: u32, surfaces: u32, zones: &[Zone]) -> Result<Geometry, DeviceError> {
        Geometry::with_spares(cylinders, surfaces, zones, &[])
    }

    /// [`Geometry::new`] with sectors set aside inside the zones: `spares` is empty (none) or
    /// holds one [`ZoneSpares`] per zone.
    pub fn with_spares(
        cylinders: u32,
        surfaces: u32,
        zones: &[Zone],
        spares: &[ZoneSpares],
    ) -> Result<Geometry, DeviceError> {
        Geometry::with_layout(cylinders, surfaces, zones, spares, &LayoutRules::default())
    }

    /// [`Geometry::with_spares`] under the layout `rules`.
    pub fn with_layout(
        cylinders: u32,
        surfaces: u32,
        zones: &[Zone],
        spares: &[ZoneSpares],
        rules: &LayoutRules,
    ) -> Result<Geometry, DeviceError> {
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

        if !spares.is_empty() && spares.len() != zones.len() {
            return Err(crate::error::bad(
                "spares",
                spares.len(),
                "give one entry per zone, or none",
            ));
        }
        let runs: usize = spares.iter().map(|s| s.holes.len()).sum();
        if runs > HOLE_RUNS_MAX {
            return Err(crate::error::bad(
                "spares",
                runs,
                "at most 2^20 runs of set-aside sectors are kept; merge neighbouring runs",
            ));
        }

        let mut zone_first_lba = Vec::with_capacity(zones.len());
        let mut zone_base_angle = Vec::with_capacity(zones.len());
        let mut spared: Vec<Option<Spared>> = Vec::with_capacity(zones.len());
        let mut lba = 0u64;
        for (i, z) in zones.iter().enumerate() {
            zone_first_lba.push(lba);
            let base = if i == 0 || rules.zone_start == ZoneStart::AtIndex {
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
                    surface_of_rank(
                        rules.surface_order,
                        prev,
                        surfaces,
                        prev.last_cyl,
                        surfaces - 1,
                    ),
                    spared[i - 1].as_ref(),
                );
                frac(last_track + f64::from(z.cyl_skew_sectors) / f64::from(z.sectors_per_track))
            };
            zone_base_angle.push(base);
            // A geometry a parameter file can state may hold more than 2^64 sectors.
            let sectors = u64::from(z.cylinder_count())
                .checked_mul(u64::from(surfaces))
                .and_then(|t| t.checked_mul(u64::from(z.sectors_per_track)))
                .ok_or_else(|| DeviceError::BadZone {
                    index: i,
                    problem: "the drive would hold more than 2^64 sectors".into(),
                })?;
            let s = match spares.get(i) {
                Some(zs) if *zs != ZoneSpares::default() => Some(
                    Spared::new(zs, sectors)
                        .map_err(|problem| DeviceError::BadZone { index: i, problem })?,
                ),
                _ => None,
            };
            let blocks = s.as_ref().map_or(sectors, |s| s.blocks);
            spared.push(s);
            lba = lba
                .checked_add(blocks)
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
            spared,
            surface_order: rules.surface_order,
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

    /// Addressable sectors: the sum over zones of cylinders x surfaces x sectors per track, less the
    /// sectors set aside.
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

    /// The track holding `lba`: its first LBA and one past its last. Blocks moved to a spare count
    /// on the track of their own bad sector, not the spare's, as in DiskSim; a moved block itself
    /// gets `(lba, lba + 1)`. Panics if `lba` is past the end.
    pub fn track_bounds(&self, lba: Lba) -> (u64, u64) {
        let zone = self.zone_index(lba);
        let spt = u64::from(self.zones[zone].sectors_per_track);
        self.bounds_in(zone, lba.0, spt)
    }

    /// The cylinder holding `lba`: its first LBA and one past its last (moved blocks as in
    /// [`Geometry::track_bounds`]). Panics if `lba` is past the end.
    pub fn cylinder_bounds(&self, lba: Lba) -> (u64, u64) {
        let zone = self.zone_index(lba);
        let per_cyl = u64::from(self.zones[zone].sectors_per_track) * u64::from(self.surfaces);
        self.bounds_in(zone, lba.0, per_cyl)
    }

    /// The blocks of the `unit`-sector stretch (track or cylinder) of zone `zone` that holds `lba`.
    fn bounds_in(&self, zone: usize, lba: u64, unit: u64) -> (u64, u64) {
        let zone_first = self.zone_first_lba[zone];
        let rel = lba - zone_first;
        match &self.spared[zone] {
            None => {
                let first = lba - rel % unit;
                (first, first + unit)
            }
            Some(s) => {
                if s.remap_of(rel).is_some() {
                    return (lba, lba + 1);
                }
                let (sector, _) = s.natural(rel);
                let start = sector - sector % unit;
                let first = s.block_at_or_after(start);
                let end = s.block_at_or_after(start + unit).min(s.blocks);
                (zone_first + first, zone_first + end)
            }
        }
    }

    /// The physical address of `lba`. Panics if `lba` is past the end.
    pub fn locate(&self, lba: Lba) -> Chs {
        let zone = self.zone_index(lba);
        let rel = lba.0 - self.zone_first_lba[zone];
        let sector = match &self.spared[zone] {
            None => rel,
            Some(s) => s.remap_of(rel).unwrap_or_else(|| s.natural(rel).0),
        };
        self.chs_in(zone, sector)
    }

    /// The address of sector `sector` of zone `zone`, counted in block order from the zone's
    /// first sector.
    fn chs_in(&self, zone: usize, sector: u64) -> Chs {
        let z = &self.zones[zone];
        let spt = u64::from(z.sectors_per_track);
        let track = sector / spt;
        let surfaces = u64::from(self.surfaces);
        let cylinder = z.first_cyl + (track / surfaces) as u32;
        Chs {
            zone,
            cylinder,
            head: self.surface_of(zone, cylinder, (track % surfaces) as u32),
            sector: (sector % spt) as u32,
        }
    }

    /// The surface of the `k`-th track of `cylinder` (in zone `zone`) to take blocks; the same
    /// map takes a surface back to its rank, as reversing the order twice restores it.
    fn surface_of(&self, zone: usize, cylinder: u32, k: u32) -> u32 {
        surface_of_rank(
            self.surface_order,
            &self.zones[zone],
            self.surfaces,
            cylinder,
            k,
        )
    }

    /// How many blocks from `lba` on (at least 1) lie one after another on the track of `at`,
    /// which must be `locate(lba)`: the head reads them in one sweep. Without set-aside sectors
    /// this is the rest of the track.
    pub fn run_sectors(&self, lba: Lba, at: Chs) -> u64 {
        let spt = u64::from(self.zones[at.zone].sectors_per_track);
        let to_track_end = spt - u64::from(at.sector);
        let Some(s) = &self.spared[at.zone] else {
            return to_track_end;
        };
        let rel = lba.0 - self.zone_first_lba[at.zone];
        if s.remap_of(rel).is_some() {
            return 1;
        }
        let (sector, j) = s.natural(rel);
        let to_hole = s
            .holes
            .get(j)
            .map_or(u64::MAX, |&(first, _)| first - sector);
        // A moved block later on breaks the sweep there.
        let i = s.remaps.partition_point(|&(block, _)| block <= rel);
        let to_moved = s.remaps.get(i).map_or(u64::MAX, |&(block, _)| block - rel);
        to_track_end.min(to_hole).min(to_moved)
    }

    /// The first block whose own sector on the track of `at` is at or after `at.sector`, or the
    /// first block after the track if none is (moved blocks count at their own bad sector).
    pub fn block_at_or_after(&self, at: Chs) -> Lba {
        let z = &self.zones[at.zone];
        let spt = u64::from(z.sectors_per_track);
        let rank = self.surface_of(at.zone, at.cylinder, at.head);
        let sector = (u64::from(at.cylinder - z.first_cyl) * u64::from(self.surfaces)
            + u64::from(rank))
            * spt
            + u64::from(at.sector);
        let rel = match &self.spared[at.zone] {
            None => sector,
            Some(s) => s.block_at_or_after(sector),
        };
        Lba(self.zone_first_lba[at.zone] + rel)
    }

    /// The LBA at a physical address; the inverse of [`Geometry::locate`]. Panics on an address that
    /// does not exist (cylinder outside its zone, head or sector out of range) or holds no block
    /// (a set-aside sector that no moved block uses).
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
        let rank = self.surface_of(chs.zone, chs.cylinder, chs.head);
        let track =
            u64::from(chs.cylinder - z.first_cyl) * u64::from(self.surfaces) + u64::from(rank);
        let sector = track * u64::from(z.sectors_per_track) + u64::from(chs.sector);
        let rel = match &self.spared[chs.zone] {
            None => sector,
            Some(s) => {
                if let Some(&(block, _)) = s.remaps.iter().find(|&&(_, spare)| spare == sector) {
                    block
                } else {
                    let b = s.block_at_or_after(sector);
                    assert!(
                        b < s.blocks && s.natural(b).0 == sector,
                        "sector {sector} of zone {} holds no block",
                        chs.zone
                    );
                    b
                }
            }
        };
        Lba(self.zone_first_lba[chs.zone] + rel)
    }

    /// Angle, as a fraction of a revolution in `[0, 1)`, of the first sector of track (`cylinder`,
    /// `head`) in zone `zone`: the zone's start (chained on from the zones before, or at the index,
    /// by the [`LayoutRules`]) plus the skews and pushing slips since the zone's first track.
    pub fn track_start_angle(&self, zone: usize, cylinder: u32, head: u32) -> f64 {
        Self::track_angle_in(
            &self.zones[zone],
            self.zone_base_angle[zone],
            self.surfaces,
            cylinder,
            self.surface_of(zone, cylinder, head),
            head,
            self.spared[zone].as_ref(),
        )
    }

    /// Angle, as a fraction of a revolution in `[0, 1)`, at which sector `lba` begins.
    pub fn sector_angle(&self, lba: Lba) -> f64 {
        let chs = self.locate(lba);
        self.chs_angle(chs)
    }

    /// Angle, as a fraction of a revolution in `[0, 1)`, at which the sector at `chs` begins.
    pub fn chs_angle(&self, chs: Chs) -> f64 {
        let spt = f64::from(self.zones[chs.zone].sectors_per_track);
        frac(self.track_start_angle(chs.zone, chs.cylinder, chs.head) + f64::from(chs.sector) / spt)
    }

    /// Media rate of zone `zone` for a revolution of `period`: one track per revolution.
    pub fn zone_media_rate(&self, zone: usize, period: Duration) -> Bandwidth {
        let bytes = f64::from(self.zones[zone].sectors_per_track) * SECTOR_BYTES as f64;
        Bandwidth::from_bytes_per_s(bytes / period.as_secs_f64())
    }

    /// The angle of the track of `cylinder` that is the `rank`-th to take blocks and lies on
    /// surface `head`.
    fn track_angle_in(
        z: &Zone,
        base: f64,
        surfaces: u32,
        cylinder: u32,
        rank: u32,
        head: u32,
        spared: Option<&Spared>,
    ) -> f64 {
        let spt = u128::from(z.sectors_per_track);
        // Skew accumulated from the zone's first track: every full cylinder contributes
        // (surfaces - 1) track skews and one cylinder skew; then one per track that takes blocks
        // before this one on its cylinder (its `rank`). In u128, since the product passes 2^64 on
        // the largest geometries a parameter file may state.
        let per_cyl = u128::from(surfaces - 1) * u128::from(z.track_skew_sectors)
            + u128::from(z.cyl_skew_sectors);
        let mut acc = u128::from(cylinder - z.first_cyl) * per_cyl
            + u128::from(rank) * u128::from(z.track_skew_sectors);
        if let Some(s) = spared {
            let track_sectors = u64::from(z.sectors_per_track);
            let cyl_first = u64::from(cylinder - z.first_cyl) * u64::from(surfaces) * track_sectors;
            // DiskSim's `g1_map_pbn_skew` counts the per-track slips before the track's surface
            // number, not its rank: on a reversed cylinder (mapping schemes 1 and 2) the slips
            // of the tracks that fill first do not push the ones after them, and the first track
            // is pushed by the slips of the whole cylinder but its last. The track skews above do
            // follow the rank; the model does as DiskSim does in both.
            acc +=
                u128::from(s.skew_pushes(cyl_first, cyl_first + u64::from(head) * track_sectors));
        }
        frac(base + (acc % spt) as f64 / spt as f64)
    }
}

/// The surface of the `k`-th track of `cylinder` (in zone `z`) to take blocks under `order`, as
/// DiskSim's `g1_surfno_on_cyl`; the same map takes a surface back to its rank.
fn surface_of_rank(order: SurfaceOrder, z: &Zone, surfaces: u32, cylinder: u32, k: u32) -> u32 {
    let reversed = match order {
        SurfaceOrder::Ascending => false,
        SurfaceOrder::AlternatePerZone => (cylinder - z.first_cyl) % 2 == 1,
        SurfaceOrder::AlternatePerDisk => cylinder % 2 == 1,
    };
    if reversed {
        surfaces - 1 - k
    } else {
        k
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

    /// Two zones of 2 surfaces: cylinders 0 to 2 with 10 sectors per track (skews 3 and 4), and
    /// 3 to 5 with 8 (skews 2 and 5).
    fn two_skewed_zones() -> [Zone; 2] {
        [
            Zone {
                first_cyl: 0,
                last_cyl: 2,
                sectors_per_track: 10,
                track_skew_sectors: 3,
                cyl_skew_sectors: 4,
            },
            Zone {
                first_cyl: 3,
                last_cyl: 5,
                sectors_per_track: 8,
                track_skew_sectors: 2,
                cyl_skew_sectors: 5,
            },
        ]
    }

    #[test]
    fn alternate_surface_orders_reverse_odd_cylinders_as_disksim_does() {
        // DiskSim's `g1_surfno_on_cyl`: with mapping scheme 1 the surface of a cylinder whose
        // number counted from its zone's first is odd is `surfaces - 1 - k` for the k-th track to
        // take blocks; scheme 2 counts from cylinder 0. Zone 1 starts at (odd) cylinder 3, 8
        // sectors a track, 16 a cylinder, its first block is LBA 60.
        let zones = two_skewed_zones();
        let plain = Geometry::new(6, 2, &zones).unwrap();
        let rules = |surface_order| LayoutRules {
            surface_order,
            ..LayoutRules::default()
        };
        let per_zone =
            Geometry::with_layout(6, 2, &zones, &[], &rules(SurfaceOrder::AlternatePerZone))
                .unwrap();
        let per_disk =
            Geometry::with_layout(6, 2, &zones, &[], &rules(SurfaceOrder::AlternatePerDisk))
                .unwrap();
        let chs = |g: &Geometry, lba: u64| {
            let c = g.locate(Lba(lba));
            (c.cylinder, c.head, c.sector)
        };
        // Block 33: zone 0 (10 sectors a track, 20 a cylinder), cylinder 1 (odd both ways), its
        // second track to fill (k = 1), sector 3: surface 2 - 1 - 1 = 0.
        assert_eq!(chs(&plain, 33), (1, 1, 3));
        assert_eq!(chs(&per_zone, 33), (1, 0, 3));
        assert_eq!(chs(&per_disk, 33), (1, 0, 3));
        // Block 62: zone 1's first cylinder, 3, its first track: even in its zone, odd on the disk.
        assert_eq!(chs(&per_zone, 62), (3, 0, 2));
        assert_eq!(chs(&per_disk, 62), (3, 1, 2));
        // Block 60 + 16 + 5: cylinder 4, first track: odd in its zone, even on the disk.
        assert_eq!(chs(&per_zone, 81), (4, 1, 5));
        assert_eq!(chs(&per_disk, 81), (4, 0, 5));
        // The skew follows the block order: the k-th track to fill is skewed as the k-th, on
        // whichever surface it lies (`g1_map_pbn_skew` counts head + (surfaces - 1) x cylinder
        // track switches after reordering).
        for lba in 0..plain.capacity_sectors() {
            let c = per_zone.locate(Lba(lba));
            assert_eq!(per_zone.lba_of(c), Lba(lba));
            assert_eq!(
                per_zone.sector_angle(Lba(lba)),
                plain.sector_angle(Lba(lba))
            );
            assert_eq!(per_zone.block_at_or_after(c), Lba(lba));
            let c = per_disk.locate(Lba(lba));
            assert_eq!(per_disk.lba_of(c), Lba(lba));
            assert_eq!(
                per_disk.sector_angle(Lba(lba)),
                plain.sector_angle(Lba(lba))
            );
        }
    }

    #[test]
    fn per_track_slips_push_by_surface_number_on_reversed_cylinders_as_disksim_does() {
        // One zone of 2 cylinders, 2 surfaces, 10 sectors a track, skews 3 (track) and 4
        // (cylinder), mapping scheme 1, per-track sparing with one slip at zone sector 22: sector
        // 2 of cylinder 1's first track to fill, which is surface 1 (the cylinder is reversed).
        // DiskSim's `g1_map_pbn_skew` counts the track switches by rank but the slips before
        // (cylinder x surfaces + surface number) x sectors per track.
        let zones = [Zone {
            first_cyl: 0,
            last_cyl: 1,
            sectors_per_track: 10,
            track_skew_sectors: 3,
            cyl_skew_sectors: 4,
        }];
        let spares = [ZoneSpares {
            holes: vec![(22, 1)],
            skew_slips: vec![22],
            skew_slips_per_track: true,
            ..ZoneSpares::default()
        }];
        let rules = LayoutRules {
            zone_start: ZoneStart::AtIndex,
            surface_order: SurfaceOrder::AlternatePerZone,
        };
        let g = Geometry::with_layout(2, 2, &zones, &spares, &rules).unwrap();
        // Surface 1, rank 0: 1 track switch (3) and 1 cylinder switch (4); slips before sector
        // (2 + 1) x 10 = 30: the slip at 22, so 8 sectors of 10.
        assert!((g.track_start_angle(0, 1, 1) - 0.8).abs() < 1e-12);
        // Surface 0, rank 1: 2 track switches (6) and 1 cylinder switch (4); slips before sector
        // (2 + 0) x 10 = 20: none, so 10 sectors, back at 0.
        assert!(g.track_start_angle(0, 1, 0).abs() < 1e-12);
    }

    #[test]
    fn zones_chain_their_skews_unless_the_layout_starts_each_at_the_index() {
        let zones = two_skewed_zones();
        // Chained: zone 0's last track (cylinder 2, head 1) starts 2 x (3 + 4) + 3 = 17 sectors of
        // 10 round, at 0.7; zone 1 starts one of its cylinder skews on, 0.7 + 5/8 = 0.325.
        let chained = Geometry::new(6, 2, &zones).unwrap();
        assert!((chained.track_start_angle(0, 2, 1) - 0.7).abs() < 1e-12);
        assert!((chained.sector_angle(Lba(60)) - 0.325).abs() < 1e-12);
        // DiskSim (`g1_map_pbn_skew`): a zone's track starts at the zone's `Offset of first block`
        // (0 here) plus, counted from the zone's first cylinder, one track skew per track switch
        // (head + (surfaces - 1) x cylinder) and one cylinder skew per cylinder. Cylinder 4,
        // head 1 of zone 1: (1 + 1) x 2 + 1 x 5 = 9 sectors of 8, so 1/8.
        let rules = LayoutRules {
            zone_start: ZoneStart::AtIndex,
            ..LayoutRules::default()
        };
        let g = Geometry::with_layout(6, 2, &zones, &[], &rules).unwrap();
        assert_eq!(g.sector_angle(Lba(0)), 0.0);
        assert_eq!(g.sector_angle(Lba(60)), 0.0);
        assert!((g.track_start_angle(1, 4, 1) - 0.125).abs() < 1e-12);
        // Zone 0 is the same either way, and so are the blocks' places.
        assert_eq!(
            g.track_start_angle(0, 2, 1),
            chained.track_start_angle(0, 2, 1)
        );
        assert_eq!(g.locate(Lba(75)), chained.locate(Lba(75)));
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

    /// A splitmix64 step: the random layouts below come from one printed seed.
    fn next_u64(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    fn below(state: &mut u64, n: u64) -> u64 {
        next_u64(state) % n
    }

    /// A small random layout from `seed`: zones (some after spare cylinders), set-aside runs,
    /// moved blocks and skew-pushing slips, under a random surface order and zone start.
    fn random_layout(seed: u64) -> (u32, u32, Vec<Zone>, Vec<ZoneSpares>, LayoutRules) {
        let mut st = seed;
        let surfaces = 1 + below(&mut st, 4) as u32;
        let zone_count = 1 + below(&mut st, 4);
        let mut zones = Vec::new();
        let mut spares = Vec::new();
        let mut next_cyl = 0u32;
        for _ in 0..zone_count {
            let first_cyl = next_cyl + below(&mut st, 3) as u32;
            let last_cyl = first_cyl + below(&mut st, 4) as u32;
            let spt = 1 + below(&mut st, 6) as u32;
            zones.push(Zone {
                first_cyl,
                last_cyl,
                sectors_per_track: spt,
                track_skew_sectors: below(&mut st, u64::from(spt)) as u32,
                cyl_skew_sectors: below(&mut st, u64::from(spt)) as u32,
            });
            next_cyl = last_cyl + 1;
            let sectors =
                u64::from(last_cyl - first_cyl + 1) * u64::from(surfaces) * u64::from(spt);
            let mut zs = ZoneSpares::default();
            if below(&mut st, 3) > 0 {
                // Runs of one or two sectors after gaps of zero to three, leaving blocks behind.
                let mut at = below(&mut st, 3);
                while at + 2 < sectors {
                    let len = 1 + below(&mut st, 2);
                    zs.holes.push((at, len));
                    at += len + below(&mut st, 4);
                }
                let hidden: u64 = zs.holes.iter().map(|h| h.1).sum();
                let blocks = sectors - hidden;
                let mut spare_sectors: Vec<u64> =
                    zs.holes.iter().flat_map(|&(f, l)| f..f + l).collect();
                for b in 0..blocks {
                    if !spare_sectors.is_empty() && below(&mut st, 5) == 0 {
                        let k = below(&mut st, spare_sectors.len() as u64) as usize;
                        zs.remaps.push((b, spare_sectors.swap_remove(k)));
                    }
                }
                let mut slips: Vec<u64> = zs
                    .holes
                    .iter()
                    .map(|h| h.0)
                    .filter(|_| below(&mut st, 2) == 0)
                    .collect();
                slips.sort_unstable();
                zs.skew_slips = slips;
                zs.skew_slips_per_track = below(&mut st, 2) == 0;
            }
            spares.push(zs);
        }
        let surface_order = match below(&mut st, 3) {
            0 => SurfaceOrder::Ascending,
            1 => SurfaceOrder::AlternatePerZone,
            _ => SurfaceOrder::AlternatePerDisk,
        };
        let zone_start = if below(&mut st, 2) == 0 {
            ZoneStart::Chained
        } else {
            ZoneStart::AtIndex
        };
        let rules = LayoutRules {
            zone_start,
            surface_order,
        };
        (next_cyl, surfaces, zones, spares, rules)
    }

    /// DiskSim's `g1_surfno_on_cyl`, written out again from its rule: the `rank`-th track of
    /// `cylinder` to take blocks lies on the last surface but `rank` when the cylinder is odd,
    /// counted from the zone's first cylinder (scheme 1) or from cylinder 0 (scheme 2).
    fn disksim_surface(
        order: SurfaceOrder,
        zone: &Zone,
        surfaces: u32,
        cylinder: u32,
        rank: u32,
    ) -> u32 {
        let reversed = match order {
            SurfaceOrder::Ascending => false,
            SurfaceOrder::AlternatePerZone => (cylinder - zone.first_cyl) & 1 == 1,
            SurfaceOrder::AlternatePerDisk => cylinder & 1 == 1,
        };
        if reversed {
            surfaces - 1 - rank
        } else {
            rank
        }
    }

    /// The angle of track (`cylinder`, `head`) of zone `z`, by DiskSim's `g1_map_pbn_skew` written
    /// out again: from the zone's `base`, one track skew per track switch counted by rank, one
    /// cylinder skew per cylinder, and one sector per skew-pushing slip before (cylinder x
    /// surfaces, plus the surface number with per-track sparing) x sectors per track.
    fn disksim_track_angle(
        base: f64,
        z: &Zone,
        zs: Option<&ZoneSpares>,
        surfaces: u32,
        cylinder: u32,
        head: u32,
        rank: u32,
    ) -> f64 {
        let c = u64::from(cylinder - z.first_cyl);
        let spt = u64::from(z.sectors_per_track);
        let switches = u64::from(rank) + u64::from(surfaces - 1) * c;
        let mut sectors =
            switches * u64::from(z.track_skew_sectors) + c * u64::from(z.cyl_skew_sectors);
        if let Some(zs) = zs {
            let per_track = if zs.skew_slips_per_track {
                u64::from(head)
            } else {
                0
            };
            let cutoff = (c * u64::from(surfaces) + per_track) * spt;
            sectors += zs.skew_slips.iter().filter(|&&x| x < cutoff).count() as u64;
        }
        frac(base + (sectors % spt) as f64 / spt as f64)
    }

    #[test]
    fn every_surface_order_round_trips_and_places_tracks_as_disksim() {
        for seed in 0..3_000u64 {
            let (cylinders, surfaces, zones, spares, rules) = random_layout(seed);
            let g = Geometry::with_layout(cylinders, surfaces, &zones, &spares, &rules)
                .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            // The same layout with every cylinder filled first surface to last.
            let plain_rules = LayoutRules {
                surface_order: SurfaceOrder::Ascending,
                ..rules
            };
            let plain =
                Geometry::with_layout(cylinders, surfaces, &zones, &spares, &plain_rules).unwrap();
            assert_eq!(
                g.capacity_sectors(),
                plain.capacity_sectors(),
                "seed {seed}"
            );
            // Each zone's first-track angle: 0 at the index, or chained one cylinder skew after
            // the last track (in block order) of the zone before.
            let mut bases: Vec<f64> = Vec::new();
            for (zi, z) in zones.iter().enumerate() {
                let base = if zi == 0 || rules.zone_start == ZoneStart::AtIndex {
                    0.0
                } else {
                    let prev = &zones[zi - 1];
                    let rank = surfaces - 1;
                    let head =
                        disksim_surface(rules.surface_order, prev, surfaces, prev.last_cyl, rank);
                    let end = disksim_track_angle(
                        bases[zi - 1],
                        prev,
                        spares.get(zi - 1),
                        surfaces,
                        prev.last_cyl,
                        head,
                        rank,
                    );
                    frac(end + f64::from(z.cyl_skew_sectors) / f64::from(z.sectors_per_track))
                };
                bases.push(base);
            }
            let close = |a: f64, b: f64| {
                let d = frac(a - b);
                !(1e-9..=1.0 - 1e-9).contains(&d)
            };
            let mut taken = std::collections::HashSet::new();
            for lba in 0..g.capacity_sectors() {
                let c = g.locate(Lba(lba));
                let p = plain.locate(Lba(lba));
                let z = &zones[c.zone];
                // The block lies where the plain order puts it, on the surface DiskSim names.
                let want = Chs {
                    head: disksim_surface(rules.surface_order, z, surfaces, p.cylinder, p.head),
                    ..p
                };
                assert_eq!(c, want, "seed {seed}: block {lba} ({rules:?})");
                assert!(
                    taken.insert((c.cylinder, c.head, c.sector)),
                    "seed {seed}: {c:?} twice"
                );
                assert_eq!(g.lba_of(c), Lba(lba), "seed {seed}: block {lba} at {c:?}");
                // The block's angle: its track's, then its sector.
                let rank = disksim_surface(rules.surface_order, z, surfaces, c.cylinder, c.head);
                let track = disksim_track_angle(
                    bases[c.zone],
                    z,
                    spares.get(c.zone),
                    surfaces,
                    c.cylinder,
                    c.head,
                    rank,
                );
                let want = frac(track + f64::from(c.sector) / f64::from(z.sectors_per_track));
                let a = g.sector_angle(Lba(lba));
                assert!(
                    close(a, want),
                    "seed {seed}: block {lba} at {a}, DiskSim {want}"
                );
                assert_eq!(
                    g.track_bounds(Lba(lba)),
                    plain.track_bounds(Lba(lba)),
                    "seed {seed}"
                );
                assert_eq!(
                    g.run_sectors(Lba(lba), c),
                    plain.run_sectors(Lba(lba), p),
                    "seed {seed}: block {lba}"
                );
            }
            // Every physical sector: the first block at or after it is the plain order's at the
            // track of the same rank, and a sector holding a block gives that block back.
            for (zi, z) in zones.iter().enumerate() {
                for cylinder in z.first_cyl..=z.last_cyl {
                    for rank in 0..surfaces {
                        let head =
                            disksim_surface(rules.surface_order, z, surfaces, cylinder, rank);
                        let a = g.track_start_angle(zi, cylinder, head);
                        let b = disksim_track_angle(
                            bases[zi],
                            z,
                            spares.get(zi),
                            surfaces,
                            cylinder,
                            head,
                            rank,
                        );
                        assert!(
                            close(a, b),
                            "seed {seed}: track ({cylinder}, {head}) at {a}, DiskSim {b}"
                        );
                        for sector in 0..z.sectors_per_track {
                            let at = Chs {
                                zone: zi,
                                cylinder,
                                head,
                                sector,
                            };
                            let plain_at = Chs { head: rank, ..at };
                            assert_eq!(
                                g.block_at_or_after(at),
                                plain.block_at_or_after(plain_at),
                                "seed {seed}: {at:?}"
                            );
                            if taken.contains(&(cylinder, head, sector)) {
                                assert_eq!(g.locate(g.lba_of(at)), at, "seed {seed}: {at:?}");
                            }
                        }
                    }
                }
            }
        }
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
