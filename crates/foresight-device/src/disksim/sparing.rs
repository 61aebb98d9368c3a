//! Where a `dm_layout_g1` zone's blocks sit once its spare sectors, slips, empty space and defects
//! are set aside: the zone's [`ZoneSpares`].
//!
//! DiskSim 4.0 (`diskmodel`'s first-generation layout) numbers a zone's physical sectors in block
//! order from its first cylinder, and its `Sparing scheme used` says where the spares lie. The zone
//! is cut into sparing units (a track, a cylinder, a range of `Rangesize for sparing` cylinders, or
//! the whole zone); each unit holds a fixed number of blocks, its quota, and its blocks fill the
//! unit's sectors in order, passing over the slipped sectors (`slips`: sectors found bad at the
//! factory). A slip thus moves every later block of its unit one sector on, into the unit's spare
//! room at its end; the sectors left over at the end of a unit are the unused spares. The schemes
//! whose slips go "to the end" of the zone make the zone one unit whose quota already leaves out
//! one sector per slip. `Empty space at zone front` takes the first sectors that would hold blocks.
//! A `defects` pair (bad sector, spare sector) moves the block of the bad sector to the spare,
//! without moving any other block. The quotas match DiskSim's block count per zone, so the imported
//! capacity equals the drive's `Block count` when the file is consistent.
//!
//! Schemes, by number: 0 no sparing (slips and defects ignored, as DiskSim ignores them); 2 spares
//! at the end of each cylinder, slips within the cylinder; 3 the same per track; 4 spares at the
//! end of each cylinder, slips pushing blocks on to the end of the zone; 7 no spares but one sector
//! per slip at the end of the zone; 8 spares at the end of each range of cylinders (a last, partial
//! range has none); 9 spares at the end of the zone; 10 the same plus one per slip. With schemes 2,
//! 3 and 4, DiskSim also turns each later track (per-track: each later track; per-cylinder: each
//! track of a later cylinder) one sector further round per slip before it, which is kept. Schemes
//! 1 (whole spare tracks) and 5 and 6 (spares at the front of each cylinder, which DiskSim's block
//! lookup does not honour) are refused by the caller.

use crate::hdd::geometry::{ZoneSpares, HOLE_RUNS_MAX};

#[cfg(test)]
thread_local! {
    /// Runs looked at while placing the defects, for a test that bounds the work.
    static RUN_PROBES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Counts one run looked at while placing a defect (tests only).
#[inline]
fn probe() {
    #[cfg(test)]
    RUN_PROBES.with(|p| p.set(p.get() + 1));
}

/// A supported `Sparing scheme used`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scheme {
    /// 0.
    None,
    /// 2 (`slip_to_end` false) and 4 (true).
    PerCylinder { slip_to_end: bool },
    /// 3.
    PerTrack,
    /// 7.
    AtZoneEnd,
    /// 8, with the cylinders per range.
    PerRange { cylinders: u64 },
    /// 9 (`slip_to_end` false) and 10 (true).
    PerZone { slip_to_end: bool },
}

impl Scheme {
    /// The scheme numbered `n` in DiskSim, with its range size; `Err` names what is not supported.
    pub(crate) fn from_number(n: u64, range_cylinders: u64) -> Result<Scheme, &'static str> {
        Ok(match n {
            0 => Scheme::None,
            2 => Scheme::PerCylinder { slip_to_end: false },
            3 => Scheme::PerTrack,
            4 => Scheme::PerCylinder { slip_to_end: true },
            7 => Scheme::AtZoneEnd,
            8 => Scheme::PerRange {
                cylinders: range_cylinders,
            },
            9 => Scheme::PerZone { slip_to_end: false },
            10 => Scheme::PerZone { slip_to_end: true },
            1 => return Err("1 (whole spare tracks)"),
            5 | 6 => return Err("5 and 6 (spares at the front of each cylinder)"),
            _ => return Err("numbers above 10"),
        })
    }
}

/// One zone as the file states it.
#[derive(Clone, Debug, Default)]
pub(crate) struct ZoneIn {
    pub sectors_per_track: u64,
    pub surfaces: u64,
    pub cylinders: u64,
    /// `Number of spares` (per unit).
    pub spares: u64,
    /// `Empty space at zone front`, sectors.
    pub front_sectors: u64,
    /// `slips`, zone sectors.
    pub slips: Vec<u64>,
    /// `defects`, (bad sector, spare sector) pairs.
    pub defects: Vec<(u64, u64)>,
}

/// The zone's set-aside sectors under `scheme`, in at most `runs_max` runs (what the drive's
/// [`HOLE_RUNS_MAX`] leaves after the zones before, so that no zone builds a table the geometry
/// would refuse), or what is wrong with the zone's numbers.
pub(crate) fn zone_spares(
    scheme: Scheme,
    z: &ZoneIn,
    runs_max: usize,
) -> Result<ZoneSpares, String> {
    let track = z.sectors_per_track;
    let cyl = track.saturating_mul(z.surfaces);
    let total = cyl.saturating_mul(z.cylinders);
    // The caller refuses larger drives; below this bound no sum here overflows.
    if total > 1 << 50 {
        return Err(format!("the zone holds {total} sectors, more than 2^50"));
    }
    // DiskSim's no-sparing lookup ignores slips and defects; the caller warns about them.
    let mut slips = if scheme == Scheme::None {
        Vec::new()
    } else {
        z.slips.clone()
    };
    slips.sort_unstable();
    slips.dedup();
    if let Some(&s) = slips.iter().find(|&&s| s >= total) {
        return Err(format!(
            "slip {s} is past the zone's {total} sectors; slips count sectors from the zone's first"
        ));
    }
    let nslips = slips.len() as u64;
    let s = z.spares;
    // (first sector, one past the last, blocks) of each unit, made on the fly: a per-track scheme
    // on a large zone has many units, and only units with spares or slips leave holes.
    let unit_len = match scheme {
        Scheme::PerTrack => track,
        Scheme::PerCylinder { slip_to_end: false } => cyl,
        Scheme::PerRange { cylinders } => cyl.saturating_mul(cylinders),
        _ => total,
    };
    let per_unit_spares = match scheme {
        Scheme::PerTrack | Scheme::PerCylinder { slip_to_end: false } | Scheme::PerRange { .. } => {
            s
        }
        _ => 0,
    };
    if per_unit_spares >= unit_len {
        return Err(format!(
            "`Number of spares` = {s} leaves no room for blocks in a sparing unit of {unit_len} \
             sectors; give fewer spares"
        ));
    }
    let units = total.div_ceil(unit_len);
    if per_unit_spares > 0 && units > runs_max as u64 {
        return Err(format!(
            "the zone has {units} sparing units with spares, more than the {runs_max} runs of \
             set-aside sectors left to it of the {HOLE_RUNS_MAX} the model keeps for the whole \
             drive; use a coarser `Sparing scheme used`"
        ));
    }
    // Sectors that hold no block wherever the blocks go: slips, and the fixed spare room at the
    // end of each cylinder when slips push on to the end of the zone.
    let mut fixed: Vec<(u64, u64)> = Vec::new();
    if let Scheme::PerCylinder { slip_to_end: true } = scheme {
        if s >= cyl {
            return Err(format!(
                "`Number of spares` = {s} leaves no room for blocks in a cylinder of {cyl} \
                 sectors; give fewer spares"
            ));
        }
        if s > 0 {
            if z.cylinders > runs_max as u64 {
                return Err(format!(
                    "the zone has {} cylinders with spares, more than the {runs_max} runs of \
                     set-aside sectors left to it of the {HOLE_RUNS_MAX} the model keeps for the \
                     whole drive; use a coarser `Sparing scheme used`",
                    z.cylinders
                ));
            }
            let mut k = 0;
            for c in 0..z.cylinders {
                let spare_first = c * cyl + cyl - s;
                while k < slips.len() && slips[k] < spare_first {
                    fixed.push((slips[k], 1));
                    k += 1;
                }
                fixed.push((spare_first, s));
                // A slip inside the spare room is already set aside.
                while k < slips.len() && slips[k] < (c + 1) * cyl {
                    k += 1;
                }
            }
            fixed.extend(slips[k..].iter().map(|&x| (x, 1)));
        } else {
            fixed.extend(slips.iter().map(|&x| (x, 1)));
        }
    } else {
        fixed.extend(slips.iter().map(|&x| (x, 1)));
    }
    let whole_zone_quota = match scheme {
        Scheme::None => Some(total),
        Scheme::AtZoneEnd => Some(total.saturating_sub(nslips)),
        Scheme::PerZone { slip_to_end } => {
            Some(total.saturating_sub(s.saturating_add(if slip_to_end { nslips } else { 0 })))
        }
        Scheme::PerCylinder { slip_to_end: true } => {
            Some(total.saturating_sub(s.saturating_mul(z.cylinders).saturating_add(nslips)))
        }
        _ => None,
    };
    if let Some(q) = whole_zone_quota {
        if q == 0 {
            return Err(format!(
                "the spares and slips take all {total} sectors of the zone; give fewer"
            ));
        }
    }

    let mut holes: Vec<(u64, u64)> = Vec::new();
    let push = |holes: &mut Vec<(u64, u64)>, first: u64, len: u64| -> Result<(), String> {
        if len == 0 {
            return Ok(());
        }
        match holes.last_mut() {
            Some(last) if last.0 + last.1 >= first => {
                last.1 = last.1.max(first + len - last.0);
            }
            _ => {
                if holes.len() >= runs_max {
                    return Err(format!(
                        "the zone sets aside more than the {runs_max} separate runs of sectors \
                         left to it of the {HOLE_RUNS_MAX} the model keeps for the whole drive"
                    ));
                }
                holes.push((first, len));
            }
        }
        Ok(())
    };
    let mut fi = 0;
    let mut place = |holes: &mut Vec<(u64, u64)>, u: u64, start: u64, end: u64, quota: u64| {
        let mut pos = start;
        let mut left = quota;
        while fi < fixed.len() && fixed[fi].0 + fixed[fi].1 <= pos {
            fi += 1;
        }
        while left > 0 {
            match fixed.get(fi) {
                Some(&(first, len)) if first < end && first < pos + left => {
                    left -= first.saturating_sub(pos);
                    push(holes, first.max(pos), first + len - first.max(pos))?;
                    pos = pos.max(first + len);
                    fi += 1;
                }
                _ => {
                    pos += left;
                    left = 0;
                }
            }
        }
        if pos > end {
            return Err(format!(
                "sparing unit {u} (sectors {start} to {}) has more slips than spares: its {quota} \
                 blocks run {} sectors past its end; check `slips` and `Number of spares`",
                end - 1,
                pos - end
            ));
        }
        push(holes, pos, end - pos)?;
        while fi < fixed.len() && fixed[fi].0 < end {
            fi += 1;
        }
        Ok::<(), String>(())
    };
    match whole_zone_quota {
        Some(q) => place(&mut holes, 0, 0, total, q)?,
        None if per_unit_spares == 0 && slips.is_empty() => {}
        None if per_unit_spares == 0 => {
            // Without spares a unit holding a slip overflows; say which.
            let u = slips[0] / unit_len;
            place(
                &mut holes,
                u,
                u * unit_len,
                (u + 1).saturating_mul(unit_len).min(total),
                unit_len,
            )?;
        }
        None => {
            for u in 0..units {
                let start = u * unit_len;
                let end = start.saturating_add(unit_len).min(total);
                // A last, partial range has no spares (DiskSim counts spares per whole range).
                let quota = if end - start == unit_len {
                    unit_len - per_unit_spares
                } else {
                    end - start
                };
                place(&mut holes, u, start, end, quota)?;
            }
        }
    }

    // Where a defect may be moved: the units' spare room, not a slipped (bad) sector, nor the
    // empty space at the front, which the next step adds to the holes.
    let spare_room = if z.defects.is_empty() {
        Vec::new()
    } else {
        holes.clone()
    };
    // The empty space at the front takes the first sectors that would hold blocks.
    if z.front_sectors > 0 {
        let mut front = Vec::with_capacity(holes.len() + 1);
        let mut pos = 0u64;
        let mut left = z.front_sectors;
        let mut k = 0;
        while left > 0 {
            let next = holes.get(k).copied();
            let room = next.map_or(total, |h| h.0) - pos;
            let take = left.min(room);
            push(&mut front, pos, take)?;
            left -= take;
            pos += take;
            match next {
                Some(h) if left > 0 => {
                    push(&mut front, h.0, h.1)?;
                    pos = h.0 + h.1;
                    k += 1;
                }
                None if left > 0 => {
                    return Err(format!(
                        "`Empty space at zone front` = {} takes more than the zone's blocks; \
                         give less",
                        z.front_sectors
                    ))
                }
                _ => {}
            }
        }
        for &(first, len) in &holes[k..] {
            push(&mut front, first, len)?;
        }
        holes = front;
    }
    let hole_sectors: u64 = holes.iter().map(|h| h.1).sum();
    if hole_sectors >= total {
        return Err(format!(
            "the spares, slips and empty space take all {total} sectors of the zone; give fewer"
        ));
    }

    let mut remaps = Vec::with_capacity(z.defects.len());
    if scheme != Scheme::None && !z.defects.is_empty() {
        // Sectors set aside before each run, so that a defect's block number is one binary
        // search away rather than a sum over every run before it.
        let mut hidden_before = Vec::with_capacity(holes.len());
        let mut sum = 0u64;
        for h in &holes {
            hidden_before.push(sum);
            sum += h.1;
        }
        // The runs starting at or before `x`, and whether the last of them covers `x`.
        let runs_upto = |runs: &[(u64, u64)], x: u64| {
            let j = runs.partition_point(|h| {
                probe();
                h.0 <= x
            });
            (j, j > 0 && x < runs[j - 1].0 + runs[j - 1].1)
        };
        for &(bad, spare) in &z.defects {
            // DiskSim's lookup skips a defect "moved" to its own sector.
            if bad == spare {
                continue;
            }
            let (j, bad_in_hole) = runs_upto(&holes, bad);
            if bad >= total || bad_in_hole {
                return Err(format!(
                    "defect {bad} is not a sector holding a block (it is past the zone, a spare, \
                     a slip or empty space); defects list (bad sector, spare sector) pairs"
                ));
            }
            let (_, in_spare_room) = runs_upto(&spare_room, spare);
            if spare >= total || !in_spare_room || slips.binary_search(&spare).is_ok() {
                return Err(format!(
                    "defect {bad} is moved to sector {spare}, which is not a spare (a sector \
                     holding a block, a slipped sector or empty space); move it to an unused \
                     spare sector"
                ));
            }
            // `bad` lies in no run, so the `j` runs starting at or before it all end before it.
            let before = if j == 0 {
                0
            } else {
                hidden_before[j - 1] + holes[j - 1].1
            };
            remaps.push((bad - before, spare));
        }
        remaps.sort_unstable();
        if let Some(w) = remaps.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(format!(
                "block {} of the zone is moved to two spares ({} and {}); list each defect once",
                w[0].0, w[0].1, w[1].1
            ));
        }
    }
    let skew_slips = match scheme {
        Scheme::PerCylinder { .. } | Scheme::PerTrack => slips,
        _ => Vec::new(),
    };
    Ok(ZoneSpares {
        holes,
        remaps,
        skew_slips,
        skew_slips_per_track: scheme == Scheme::PerTrack,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hdd::geometry::{Geometry, Zone};
    use foresight_core::Lba;
    use proptest::prelude::*;

    fn spares_of(scheme: Scheme, z: &ZoneIn) -> Result<ZoneSpares, String> {
        zone_spares(scheme, z, HOLE_RUNS_MAX)
    }

    /// A zone of `cylinders` cylinders, 2 surfaces and 10 sectors per track (20 per cylinder),
    /// with no skews, so that sector numbers read off directly.
    fn zone_in(cylinders: u64, spares: u64, slips: &[u64]) -> ZoneIn {
        ZoneIn {
            sectors_per_track: 10,
            surfaces: 2,
            cylinders,
            spares,
            slips: slips.to_vec(),
            ..ZoneIn::default()
        }
    }

    fn geometry(z: &ZoneIn, zs: ZoneSpares) -> Geometry {
        let zone = Zone {
            first_cyl: 0,
            last_cyl: z.cylinders as u32 - 1,
            sectors_per_track: z.sectors_per_track as u32,
            track_skew_sectors: 0,
            cyl_skew_sectors: 0,
        };
        Geometry::with_spares(z.cylinders as u32, z.surfaces as u32, &[zone], &[zs]).unwrap()
    }

    /// (cylinder, head, sector) of `lba`.
    fn at(g: &Geometry, lba: u64) -> (u32, u32, u32) {
        let c = g.locate(Lba(lba));
        (c.cylinder, c.head, c.sector)
    }

    #[test]
    fn per_zone_spares_take_the_slips_and_a_defect_moves_one_block() {
        // Scheme 9: 80 sectors, 5 spares, so 75 blocks. Sector 3 is slipped: blocks from 3 on sit
        // one sector further. Sector 12 (block 11) is bad and moved to spare sector 77.
        let mut z = zone_in(4, 5, &[3]);
        z.defects = vec![(12, 77)];
        let zs = spares_of(Scheme::PerZone { slip_to_end: false }, &z).unwrap();
        assert_eq!(zs.holes, vec![(3, 1), (76, 4)]);
        assert_eq!(zs.remaps, vec![(11, 77)]);
        let g = geometry(&z, zs);
        assert_eq!(g.capacity_sectors(), 75);
        assert_eq!(at(&g, 2), (0, 0, 2));
        assert_eq!(at(&g, 3), (0, 0, 4));
        assert_eq!(at(&g, 9), (0, 1, 0));
        assert_eq!(at(&g, 10), (0, 1, 1));
        assert_eq!(at(&g, 11), (3, 1, 7), "moved to spare sector 77");
        assert_eq!(at(&g, 12), (0, 1, 3), "the blocks after a defect stay put");
        assert_eq!(at(&g, 74), (3, 1, 5));
        // The sweep from block 3 stops before the moved block; the moved block is a sweep alone.
        assert_eq!(g.run_sectors(Lba(3), g.locate(Lba(3))), 6);
        assert_eq!(g.run_sectors(Lba(10), g.locate(Lba(10))), 1);
        assert_eq!(g.run_sectors(Lba(11), g.locate(Lba(11))), 1);
        assert_eq!(
            g.track_bounds(Lba(5)),
            (0, 9),
            "track 0 holds blocks 0 to 8"
        );
        assert_eq!(g.track_bounds(Lba(11)), (11, 12));
        assert_eq!(g.track_bounds(Lba(12)), (9, 19));
        assert_eq!(g.cylinder_bounds(Lba(74)), (59, 75));
        // Scheme 10 also sets one sector aside per slip: 74 blocks.
        let zs = spares_of(Scheme::PerZone { slip_to_end: true }, &zone_in(4, 5, &[3])).unwrap();
        assert_eq!(zs.holes, vec![(3, 1), (75, 5)]);
    }

    #[test]
    fn per_range_spares_end_each_whole_range_and_slips_stay_in_their_range() {
        // Scheme 8, ranges of 2 cylinders (40 sectors) with 3 spares each; 5 cylinders make two
        // whole ranges and a partial one without spares: 37 + 37 + 20 = 94 blocks, DiskSim's
        // 100 - 3 x (5 / 2). Sector 41 is slipped inside range 1.
        let z = zone_in(5, 3, &[41]);
        let zs = spares_of(Scheme::PerRange { cylinders: 2 }, &z).unwrap();
        assert_eq!(zs.holes, vec![(37, 3), (41, 1), (78, 2)]);
        let g = geometry(&z, zs);
        assert_eq!(g.capacity_sectors(), 94);
        assert_eq!(at(&g, 36), (1, 1, 6));
        assert_eq!(at(&g, 37), (2, 0, 0));
        assert_eq!(at(&g, 38), (2, 0, 2));
        assert_eq!(at(&g, 73), (3, 1, 7));
        assert_eq!(at(&g, 74), (4, 0, 0));
        assert_eq!(at(&g, 93), (4, 1, 9));
        // Four slips in a range of three spares do not fit.
        let e = spares_of(
            Scheme::PerRange { cylinders: 2 },
            &zone_in(5, 3, &[1, 2, 3, 4]),
        )
        .unwrap_err();
        assert!(e.contains("more slips than spares"), "{e}");
    }

    #[test]
    fn slips_at_zone_end_with_empty_space_in_front() {
        // Scheme 7, as ibm18es: one sector per slip at the end, and a whole cylinder (20 sectors)
        // empty at the front: 80 - 20 - 2 = 58 blocks.
        let mut z = zone_in(4, 0, &[25, 60]);
        z.front_sectors = 20;
        let zs = spares_of(Scheme::AtZoneEnd, &z).unwrap();
        assert_eq!(zs.holes, vec![(0, 20), (25, 1), (60, 1)]);
        let g = geometry(&z, zs);
        assert_eq!(g.capacity_sectors(), 58);
        assert_eq!(at(&g, 0), (1, 0, 0));
        assert_eq!(at(&g, 4), (1, 0, 4));
        assert_eq!(at(&g, 5), (1, 0, 6));
        assert_eq!(at(&g, 38), (2, 1, 9));
        assert_eq!(at(&g, 39), (3, 0, 1));
        assert_eq!(at(&g, 57), (3, 1, 9));
        // DiskSim's scheme 7 counts no spares in its capacity: a spare count is refused upstream,
        // and the zone alone holds exactly one sector per slip less.
    }

    #[test]
    fn per_track_and_per_cylinder_spares_and_the_skew_slips_push() {
        // Scheme 3: one spare per 10-sector track, 72 blocks; sector 13 slipped on track 1.
        let z = zone_in(4, 1, &[13]);
        let zs = spares_of(Scheme::PerTrack, &z).unwrap();
        assert_eq!(zs.holes.first(), Some(&(9, 1)));
        assert_eq!(zs.holes[1], (13, 1));
        assert_eq!(zs.skew_slips, vec![13]);
        let g = geometry(&z, zs);
        assert_eq!(g.capacity_sectors(), 72);
        assert_eq!(at(&g, 8), (0, 0, 8));
        assert_eq!(at(&g, 9), (0, 1, 0));
        assert_eq!(at(&g, 12), (0, 1, 4));
        assert_eq!(at(&g, 17), (0, 1, 9));
        assert_eq!(at(&g, 18), (1, 0, 0));
        // The slip turns every later track one sector (of ten) further round, not its own.
        assert_eq!(g.track_start_angle(0, 0, 1), 0.0);
        assert!((g.track_start_angle(0, 1, 0) - 0.1).abs() < 1e-12);

        // Scheme 2: two spares per cylinder, the slip shifts blocks within its cylinder.
        let z = zone_in(4, 2, &[5]);
        let zs = spares_of(Scheme::PerCylinder { slip_to_end: false }, &z).unwrap();
        assert_eq!(zs.holes[..3], [(5, 1), (19, 1), (38, 2)]);
        let g = geometry(&z, zs);
        assert_eq!(g.capacity_sectors(), 72);
        assert_eq!(at(&g, 5), (0, 0, 6));
        assert_eq!(at(&g, 17), (0, 1, 8));
        assert_eq!(at(&g, 18), (1, 0, 0));
        // Per cylinder, only the tracks of later cylinders turn.
        assert_eq!(g.track_start_angle(0, 0, 1), 0.0);
        assert!((g.track_start_angle(0, 1, 1) - 0.1).abs() < 1e-12);

        // Scheme 4: the cylinders' spares stay put and the slip pushes blocks across them:
        // 80 - 2 x 4 - 1 = 71 blocks.
        let zs = spares_of(Scheme::PerCylinder { slip_to_end: true }, &z).unwrap();
        assert_eq!(zs.holes, vec![(5, 1), (18, 2), (38, 2), (58, 2), (78, 2)]);
        let g = geometry(&z, zs);
        assert_eq!(g.capacity_sectors(), 71);
        assert_eq!(at(&g, 16), (0, 1, 7));
        assert_eq!(at(&g, 17), (1, 0, 0));
        assert_eq!(at(&g, 70), (3, 1, 7));
    }

    #[test]
    fn no_sparing_ignores_slips_and_defects_as_disksim_does() {
        let mut z = zone_in(4, 7, &[3]);
        z.defects = vec![(12, 77)];
        assert_eq!(spares_of(Scheme::None, &z).unwrap(), ZoneSpares::default());
    }

    #[test]
    fn bad_defects_are_refused_with_a_fix() {
        let mut z = zone_in(4, 5, &[3]);
        z.defects = vec![(12, 40)];
        let e = spares_of(Scheme::PerZone { slip_to_end: false }, &z).unwrap_err();
        assert!(e.contains("not a spare"), "{e}");
        z.defects = vec![(3, 77)];
        let e = spares_of(Scheme::PerZone { slip_to_end: false }, &z).unwrap_err();
        assert!(e.contains("not a sector holding a block"), "{e}");
        z.defects = vec![(12, 77), (12, 78)];
        let e = spares_of(Scheme::PerZone { slip_to_end: false }, &z).unwrap_err();
        assert!(e.contains("two spares"), "{e}");
        // A defect "moved" to itself changes nothing.
        z.defects = vec![(12, 12)];
        let zs = spares_of(Scheme::PerZone { slip_to_end: false }, &z).unwrap();
        assert!(zs.remaps.is_empty());
        // A slipped sector is bad, and the empty space at the front holds nothing: neither is a
        // spare a block can move to.
        z.defects = vec![(12, 3)];
        let e = spares_of(Scheme::PerZone { slip_to_end: false }, &z).unwrap_err();
        assert!(e.contains("not a spare"), "{e}");
        z.front_sectors = 2;
        z.defects = vec![(12, 0)];
        let e = spares_of(Scheme::PerZone { slip_to_end: false }, &z).unwrap_err();
        assert!(e.contains("not a spare"), "{e}");
        z.defects = vec![(12, 77)];
        assert!(spares_of(Scheme::PerZone { slip_to_end: false }, &z).is_ok());
    }

    #[test]
    fn many_defects_over_many_runs_cost_a_binary_search_each() {
        // Scheme 3 on one surface of 10-sector tracks with one spare each: 40,000 tracks, so
        // 40,000 runs of set-aside sectors. Each of 4,000 defects moves sector 3 of a track to the
        // spare at the end of another track. Placing a defect looks at O(log runs) runs, not at
        // every run before it (which was 40,000 x 4,000 / 2 looks).
        let tracks = 40_000u64;
        let defects: Vec<(u64, u64)> = (0..4_000u64)
            .map(|k| (k * 10 * 10 + 3, (k * 10 + 5) * 10 + 9))
            .collect();
        let z = ZoneIn {
            sectors_per_track: 10,
            surfaces: 1,
            cylinders: tracks,
            spares: 1,
            defects: defects.clone(),
            ..ZoneIn::default()
        };
        RUN_PROBES.with(|p| p.set(0));
        let zs = spares_of(Scheme::PerTrack, &z).unwrap();
        let probes = RUN_PROBES.with(|p| p.get());
        assert_eq!(zs.holes.len() as u64, tracks);
        // Block of track t's sector 3: 9 blocks per track before it.
        let expected: Vec<(u64, u64)> = defects
            .iter()
            .map(|&(bad, spare)| ((bad / 10) * 9 + 3, spare))
            .collect();
        assert_eq!(zs.remaps, expected);
        let per_defect_max = 3 * (u64::from(tracks.ilog2()) + 2);
        assert!(
            probes <= defects.len() as u64 * per_defect_max,
            "{probes} runs looked at for {} defects over {tracks} runs",
            defects.len()
        );
    }

    fn scheme_of(k: u8, range: u64) -> Scheme {
        match k % 8 {
            0 => Scheme::None,
            1 => Scheme::PerCylinder { slip_to_end: false },
            2 => Scheme::PerTrack,
            3 => Scheme::PerCylinder { slip_to_end: true },
            4 => Scheme::AtZoneEnd,
            5 => Scheme::PerRange { cylinders: range },
            6 => Scheme::PerZone { slip_to_end: false },
            _ => Scheme::PerZone { slip_to_end: true },
        }
    }

    /// DiskSim's blocks in a zone (`dm_layout_g1_compute_blksinband`).
    fn disksim_blocks(scheme: Scheme, z: &ZoneIn, slips: u64) -> u64 {
        let cyl = z.sectors_per_track * z.surfaces;
        let total = cyl * z.cylinders - z.front_sectors;
        let s = z.spares;
        match scheme {
            Scheme::None => total,
            Scheme::PerCylinder { slip_to_end } => {
                total - s * z.cylinders - if slip_to_end { slips } else { 0 }
            }
            Scheme::PerTrack => total - s * z.cylinders * z.surfaces,
            Scheme::AtZoneEnd => total - slips,
            Scheme::PerRange { cylinders } => total - s * (z.cylinders / cylinders),
            Scheme::PerZone { slip_to_end } => total - s - if slip_to_end { slips } else { 0 },
        }
    }

    proptest! {
        /// Whatever the scheme, spares, slips, empty space and defects: the blocks go one to one
        /// onto the sectors that are neither set aside nor bad, in increasing order but for the
        /// moved blocks, and their number is DiskSim's.
        #[test]
        fn blocks_map_one_to_one_onto_the_usable_sectors(
            scheme_k in 0u8..8, range in 1u64..4, spt in 3u64..12, surfaces in 1u64..4,
            cylinders in 1u64..9, spares in 0u64..6, front in 0u64..15,
            slip_picks in proptest::collection::vec(0.0f64..1.0, 0..5),
            defect_picks in proptest::collection::vec((0.0f64..1.0, 0.0f64..1.0), 0..3),
        ) {
            let scheme = scheme_of(scheme_k, range);
            let total = spt * surfaces * cylinders;
            let mut slips: Vec<u64> = slip_picks.iter().map(|f| (f * total as f64) as u64).collect();
            slips.sort_unstable();
            slips.dedup();
            let z = ZoneIn {
                sectors_per_track: spt,
                surfaces,
                cylinders,
                spares: if scheme == Scheme::AtZoneEnd { 0 } else { spares },
                front_sectors: front,
                slips: slips.clone(),
                defects: Vec::new(),
            };
            // Numbers that leave no room are refused, not mapped.
            let Ok(plain) = spares_of(scheme, &z) else { return Ok(()) };
            // Defects: a block-holding sector to an unused spare sector (a hole that is neither a
            // slip nor empty space at the front), both picked at random.
            let in_hole = |x: u64| plain.holes.iter().any(|&(f, l)| f <= x && x < f + l);
            let usable: Vec<u64> = (0..total).filter(|&x| !in_hole(x)).collect();
            let room = spares_of(scheme, &ZoneIn { front_sectors: 0, ..z.clone() }).unwrap();
            let spare: Vec<u64> = (0..total)
                .filter(|&x| {
                    room.holes.iter().any(|&(f, l)| f <= x && x < f + l) && !slips.contains(&x)
                })
                .collect();
            let mut defects = Vec::new();
            for &(a, b) in &defect_picks {
                if usable.is_empty() || spare.is_empty() { break; }
                let bad = usable[(a * usable.len() as f64) as usize];
                let to = spare[(b * spare.len() as f64) as usize];
                if defects.iter().any(|&(d, s)| d == bad || s == to) { continue; }
                defects.push((bad, to));
            }
            if scheme == Scheme::None {
                // Ignored with no sparing, as in DiskSim.
                defects.clear();
            } else {
                // Slips hold no block.
                prop_assert!(slips.iter().all(|&x| in_hole(x)));
            }
            let z = ZoneIn { defects: defects.clone(), ..z };
            let zs = spares_of(scheme, &z).unwrap();
            prop_assert_eq!(&zs.holes, &plain.holes);
            let g = geometry(&z, zs);
            let used_slips = if scheme == Scheme::None { 0 } else { slips.len() as u64 };
            prop_assert_eq!(g.capacity_sectors(), disksim_blocks(scheme, &z, used_slips));
            prop_assert_eq!(g.capacity_sectors(), usable.len() as u64);
            let moved_to: Vec<u64> = defects.iter().map(|d| d.1).collect();
            let bad: Vec<u64> = defects.iter().map(|d| d.0).collect();
            let mut seen = vec![false; total as usize];
            let mut last_natural = None;
            for lba in 0..g.capacity_sectors() {
                let c = g.locate(Lba(lba));
                let s = (u64::from(c.cylinder) * surfaces + u64::from(c.head)) * spt + u64::from(c.sector);
                prop_assert!(!seen[s as usize], "sector {} holds two blocks", s);
                seen[s as usize] = true;
                prop_assert_eq!(g.lba_of(c), Lba(lba));
                if !moved_to.contains(&s) {
                    prop_assert!(!in_hole(s) && !bad.contains(&s));
                    prop_assert!(last_natural.is_none_or(|p| p < s), "block {} goes back", lba);
                    last_natural = Some(s);
                }
                // A sweep covers consecutive sectors of one track.
                let run = g.run_sectors(Lba(lba), c);
                prop_assert!(run >= 1);
                if lba + 1 < g.capacity_sectors() && run > 1 {
                    let n = g.locate(Lba(lba + 1));
                    prop_assert_eq!((n.cylinder, n.head, n.sector), (c.cylinder, c.head, c.sector + 1));
                }
                let (first, end) = g.track_bounds(Lba(lba));
                prop_assert!(first <= lba && lba < end);
            }
            // Every usable sector holds a block, and with the moved blocks nothing else does.
            for x in 0..total {
                let holds = !in_hole(x) && !bad.contains(&x) || moved_to.contains(&x);
                prop_assert_eq!(seen[x as usize], holds, "sector {}", x);
            }
        }
    }
}
