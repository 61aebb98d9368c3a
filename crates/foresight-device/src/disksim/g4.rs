//! `dm_layout_g4` layouts, approximated by zones.
//!
//! A g4 layout (DiskSim 4.0 `diskmodel`, the format DIXtrac writes for drives with serpentine
//! layouts, such as `Seagate-Cheetah15k5-skews.layout`) lists track patterns `TP = [first, last,
//! count, ...]` (triples; `count` is the sectors per track) and an index tree `IDX = [ [entries], ...
//! ]` whose last node is the root. Each entry reads `lbn, cyl, angle, unit_lbns, unit_cyls,
//! unit_angle, total_lbns, total_cyls, KIND, child[, surface]`: starting at `lbn`, the unit (one
//! track of pattern `child` for `KIND = TRACK`, one copy of index node `child` for `KIND = IDX`)
//! repeats `total_lbns / unit_lbns` times, each repetition shifted by `unit_angle` of a revolution.
//!
//! This model does not keep per-track angles or serpentine surface order. It walks the tree in LBN
//! order, collecting how many sectors lie on tracks of each size, and turns each run of equal track
//! size into a zone of whole cylinders (tracks / surfaces, rounded), so capacity, zone media rates and
//! the LBN-to-cylinder mapping are kept. The cylinder skew is the first track entry's angle step (the
//! angle between consecutive tracks of a surface, which a serpentine layout crosses by a one-cylinder
//! seek); the track skew is the smallest that covers the head switch. The walk refuses child indices
//! that do not point to an earlier node (so it cannot loop) and stops after [`WORK_MAX`] steps.

use super::syntax::{Block, Value};
use super::{err, parse_number, DiskSimError};
use crate::hdd::geometry::Zone;

/// Most entry expansions one layout may take (the Cheetah 15K.5's needs about 10^4).
const WORK_MAX: u64 = 50_000_000;

/// Entries may each map up to 10^15 blocks, so a large tree can pass what a u64 counts.
const TOO_MANY_BLOCKS: &str = "the layout maps more than 2^64 blocks";

#[derive(Clone, Copy, Debug)]
enum Kind {
    Track { spt: u32 },
    Index { child: usize },
}

#[derive(Clone, Copy, Debug)]
struct IdxEntry {
    unit_lbns: u64,
    total_lbns: u64,
    angle_step: f64,
    kind: Kind,
}

/// Zones approximating the layout, and a one-line note saying so. `head_switch_rev` is the head
/// switch as a fraction of a revolution.
pub(super) fn zones(
    file: &str,
    layout: &Block,
    surfaces: u32,
    cylinders: u32,
    head_switch_rev: f64,
) -> Result<(Vec<Zone>, String), DiskSimError> {
    let tp_entry = layout.get("TP").ok_or_else(|| {
        err(
            file,
            layout.line,
            "the `dm_layout_g4` block has no `TP` list",
        )
    })?;
    let idx_entry = layout.get("IDX").ok_or_else(|| {
        err(
            file,
            layout.line,
            "the `dm_layout_g4` block has no `IDX` list",
        )
    })?;
    // Track patterns: triples, the third being the sectors per track.
    let Value::List {
        items: tp_items, ..
    } = &tp_entry.value
    else {
        return Err(err(file, tp_entry.line, "`TP` should be a list of numbers"));
    };
    let mut spts = Vec::with_capacity(tp_items.len() / 3);
    for chunk in tp_items.chunks(3) {
        let line = chunk[0].line();
        let [_, _, count] = chunk else {
            return Err(err(
                file,
                line,
                "`TP` should hold triples `first, last, count`",
            ));
        };
        let n = word_number(count)
            .filter(|n| n.fract() == 0.0 && *n >= 1.0 && *n <= f64::from(1u32 << 24))
            .ok_or_else(|| {
                err(
                    file,
                    count.line(),
                    "a track pattern's sector count should be a whole number from 1",
                )
            })?;
        spts.push(n as u32);
    }
    // Index nodes.
    let Value::List {
        items: nodes_v,
        line: idx_line,
    } = &idx_entry.value
    else {
        return Err(err(file, idx_entry.line, "`IDX` should be a list of lists"));
    };
    let mut nodes: Vec<Vec<IdxEntry>> = Vec::with_capacity(nodes_v.len());
    for (node_index, node) in nodes_v.iter().enumerate() {
        let Value::List { items, line } = node else {
            return Err(err(
                file,
                node.line(),
                "each `IDX` node should be a `[ ... ]` list",
            ));
        };
        nodes.push(parse_node(file, *line, items, node_index, &spts)?);
    }
    if nodes.is_empty() {
        return Err(err(file, *idx_line, "`IDX` has no nodes"));
    }
    // Walk from the root (the last node), collecting (sectors per track, sectors) in LBN order.
    let mut runs: Vec<(u32, u64)> = Vec::new();
    let mut work = 0u64;
    let mut first_step: Option<f64> = None;
    walk(
        &nodes,
        nodes.len() - 1,
        &mut runs,
        &mut work,
        &mut first_step,
        0,
    )
    .map_err(|m| err(file, *idx_line, m))?;
    let total = runs
        .iter()
        .try_fold(0u64, |t, r| t.checked_add(r.1))
        .ok_or_else(|| err(file, *idx_line, TOO_MANY_BLOCKS))?;
    if total == 0 {
        return Err(err(file, *idx_line, "the layout maps no blocks"));
    }
    // Runs to zones of whole cylinders.
    let s = u64::from(surfaces);
    let mut zones: Vec<Zone> = Vec::new();
    let mut cum_tracks = 0.0f64;
    let mut next_cyl = 0u32;
    let step = first_step.unwrap_or(0.0).rem_euclid(1.0);
    for &(spt, sectors) in &runs {
        cum_tracks += sectors as f64 / f64::from(spt);
        // Runs shorter than a cylinder (the odd-sized track at each zone's end) make no zone of
        // their own: the next zone absorbs their tracks.
        if sectors < u64::from(spt) * s {
            continue;
        }
        let end_cyl = ((cum_tracks / s as f64).round() as u64).min(u64::from(cylinders)) as u32;
        if end_cyl <= next_cyl {
            continue;
        }
        let skew = |rev: f64| ((rev * f64::from(spt) - 1e-6).ceil().max(0.0) as u32).min(spt - 1);
        let track_skew_sectors = skew(head_switch_rev).max(u32::from(spt > 1));
        match zones.last_mut() {
            Some(z) if z.sectors_per_track == spt => z.last_cyl = end_cyl - 1,
            _ => zones.push(Zone {
                first_cyl: next_cyl,
                last_cyl: end_cyl - 1,
                sectors_per_track: spt,
                track_skew_sectors,
                cyl_skew_sectors: skew(step),
            }),
        }
        next_cyl = end_cyl;
    }
    let Some(last) = zones.last_mut() else {
        return Err(err(
            file,
            *idx_line,
            "the layout covers less than one cylinder",
        ));
    };
    last.last_cyl = cylinders - 1;
    crate::hdd::geometry::Geometry::new(cylinders, surfaces, &zones).map_err(|e| {
        err(
            file,
            *idx_line,
            format!("the layout gives no usable zones: {e}"),
        )
    })?;
    let note = format!(
        "`dm_layout_g4` is approximated by {} zones of constant track size ({} blocks mapped); \
         serpentine surface order, per-track angles and slips are not modelled",
        zones.len(),
        total
    );
    Ok((zones, note))
}

fn word_number(v: &Value) -> Option<f64> {
    match v {
        Value::Word { text, .. } => parse_number(text),
        _ => None,
    }
}

fn parse_node(
    file: &str,
    _line: u32,
    items: &[Value],
    node_index: usize,
    spts: &[u32],
) -> Result<Vec<IdxEntry>, DiskSimError> {
    let mut entries = Vec::new();
    let mut i = 0;
    while i < items.len() {
        let at = items[i].line();
        let bad = |m: &str| err(file, at, format!("`IDX` node {node_index}: {m}"));
        if i + 10 > items.len() {
            return Err(bad("an entry needs `lbn, cyl, angle, unit_lbns, unit_cyls, unit_angle, total_lbns, total_cyls, TRACK|IDX, index`"));
        }
        let num = |k: usize| word_number(&items[i + k]);
        let (Some(unit), Some(angle_step), Some(total)) = (num(3), num(5), num(6)) else {
            return Err(bad("the first eight fields of an entry should be numbers"));
        };
        if !(unit >= 1.0
            && unit.fract() == 0.0
            && total >= 0.0
            && total.fract() == 0.0
            && total < 1e15)
        {
            return Err(bad(
                "unit_lbns should be a whole number from 1 and total_lbns a whole number",
            ));
        }
        let kind_word = match &items[i + 8] {
            Value::Word { text, .. } => text.as_str(),
            _ => "",
        };
        let child = num(9)
            .filter(|c| c.fract() == 0.0 && *c >= 0.0 && *c < 1e9)
            .ok_or_else(|| bad("the child index should be a whole number"))?
            as usize;
        let kind = match kind_word {
            "TRACK" => {
                let spt = *spts
                    .get(child)
                    .ok_or_else(|| bad("a TRACK entry names a track pattern `TP` does not have"))?;
                i += 11;
                Kind::Track { spt }
            }
            "IDX" => {
                if child >= node_index {
                    return Err(bad("an IDX entry must name an earlier node"));
                }
                i += 10;
                Kind::Index { child }
            }
            _ => return Err(bad("the ninth field of an entry should be TRACK or IDX")),
        };
        entries.push(IdxEntry {
            unit_lbns: unit as u64,
            total_lbns: total as u64,
            angle_step,
            kind,
        });
    }
    Ok(entries)
}

fn walk(
    nodes: &[Vec<IdxEntry>],
    node: usize,
    runs: &mut Vec<(u32, u64)>,
    work: &mut u64,
    first_step: &mut Option<f64>,
    depth: usize,
) -> Result<(), String> {
    if depth > 64 {
        return Err("the index tree is deeper than 64 levels".into());
    }
    for e in &nodes[node] {
        *work += 1;
        if *work > WORK_MAX {
            return Err(format!(
                "the index tree expands to more than {WORK_MAX} entries"
            ));
        }
        match e.kind {
            Kind::Track { spt } => {
                first_step.get_or_insert(e.angle_step);
                match runs.last_mut() {
                    Some((s, n)) if *s == spt => {
                        *n = n.checked_add(e.total_lbns).ok_or(TOO_MANY_BLOCKS)?;
                    }
                    _ => runs.push((spt, e.total_lbns)),
                }
            }
            Kind::Index { child } => {
                let reps = e.total_lbns / e.unit_lbns;
                for _ in 0..reps {
                    *work += 1;
                    if *work > WORK_MAX {
                        return Err(format!(
                            "the index tree expands to more than {WORK_MAX} entries"
                        ));
                    }
                    walk(nodes, child, runs, work, first_step, depth + 1)?;
                }
            }
        }
    }
    Ok(())
}
