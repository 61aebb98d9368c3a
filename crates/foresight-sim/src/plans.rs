//! Read plans of the workloads that disclose their reads up front (paper 003_eb9cef22f2823582.txt):
//! each client's whole list of `(offset, bytes)` reads of its own file, which the simulator hands to
//! the policy as one `Input::Hint` before the first read and then issues in order.
//!
//! - `scan`: the table's `file_size / request` pages in a random permutation (an index scan over a
//!   heap table; the paper's SQLite scan);
//! - `tiles`: a row-major image `tiles_across` tiles of `tile` bytes wide, read column of tiles by
//!   column of tiles, top to bottom: for column `c`, row `r` reads `tile` bytes at
//!   `(r * tiles_across + c) * tile`;
//! - `gaps`: reads of `request` bytes in increasing order, each `gap` bytes (or an exponential
//!   draw with that mean) after the end of the previous one, as many as the file holds. Each gap
//!   is rounded down to whole pages, so reads stay page-aligned, as a database's pages are (a
//!   fixed gap of 10,000 bytes puts reads 8 KiB apart); the config refuses a fixed gap that
//!   leaves room for only one read, and the run reports clients whose exponential draws did.
//!
//! A plan is held whole in memory and handed to the policy as one hint, so the clients of one run
//! disclose at most [`MAX_DISCLOSED_READS`] reads in all; a longer plan is refused before it is
//! built rather than allocated until the process aborts.

use foresight_core::Rng;

use foresight_policy::PAGE_BYTES;

use crate::config::{GapDist, WorkloadConfig, WorkloadKind};

/// Most reads the clients of one run may disclose together: 4 Mi reads, about 100 MiB with the
/// policy's copy of the hint, eight times the largest plan the experiments use (a 4 GiB table in
/// 8 KiB pages).
pub const MAX_DISCLOSED_READS: u64 = 1 << 22;

// `directed` drops the hinted ranges past its per-stream bound; a plan is one range a read, so no
// plan the simulator accepts loses one.
const _: () = assert!(
    MAX_DISCLOSED_READS <= foresight_policy::directed::window::QUEUED_RANGES_MAX as u64,
    "a plan the simulator accepts would overflow directed's hinted list"
);

/// The read plan of one client, or `None` when it would hold more than `max_reads` reads. Empty
/// for workloads that do not disclose their reads.
pub fn plan(w: &WorkloadConfig, rng: &mut Rng, max_reads: u64) -> Option<Vec<(u64, u64)>> {
    let size = w.file_size.0;
    Some(match w.kind {
        WorkloadKind::Scan => {
            let req = w.request.0;
            if size / req > max_reads {
                return None;
            }
            let mut pages: Vec<u64> = (0..size / req).collect();
            rng.shuffle(&mut pages);
            pages.into_iter().map(|p| (p * req, req)).collect()
        }
        WorkloadKind::Tiles => {
            let (tile, across) = (w.tile.0, w.tiles_across);
            let rows = size / (tile * across);
            if rows * across > max_reads {
                return None;
            }
            let mut v = Vec::with_capacity((rows * across) as usize);
            for c in 0..across {
                for r in 0..rows {
                    v.push(((r * across + c) * tile, tile));
                }
            }
            v
        }
        WorkloadKind::Gaps => {
            let req = w.request.0;
            let mut v = Vec::new();
            let mut off = 0u64;
            while off + req <= size {
                // Exponential gaps make the count a draw, so it is checked as the plan grows.
                if v.len() as u64 == max_reads {
                    return None;
                }
                v.push((off, req));
                let gap = match w.gap_dist {
                    GapDist::Fixed => w.gap.0,
                    GapDist::Exponential => rng.exponential(w.gap.0 as f64) as u64,
                };
                // Reads stay page-aligned, as a database's pages are.
                off += req + gap / PAGE_BYTES * PAGE_BYTES;
            }
            v
        }
        _ => Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SimConfig;
    use foresight_core::ByteLen;

    fn w(kind: WorkloadKind) -> WorkloadConfig {
        let mut w = SimConfig::default().workload;
        w.kind = kind;
        w.file_size = ByteLen::mib(1);
        w.request = ByteLen::kib(8);
        w
    }

    #[test]
    fn scan_is_a_permutation_of_every_page() {
        let mut p = plan(&w(WorkloadKind::Scan), &mut Rng::new(1), 128).unwrap();
        assert_eq!(p.len(), 128);
        assert_ne!(p.windows(2).filter(|x| x[0] < x[1]).count(), 127);
        p.sort_unstable();
        assert!(p
            .iter()
            .enumerate()
            .all(|(i, &(o, l))| o == i as u64 * 8192 && l == 8192));
    }

    /// A disclosed plan is held whole in memory (and handed to the policy), so one whose read
    /// count no memory holds is refused with the key to change instead of aborting the process.
    #[test]
    fn plans_too_long_to_hold_are_refused_naming_the_key() {
        for sets in [
            // 8 GiB in 512-byte pages: 16 M reads.
            &[
                "workload.kind=scan",
                "workload.request=512",
                "workload.file_size=8GiB",
            ][..],
            &[
                "workload.kind=tiles",
                "workload.tile=512",
                "workload.tiles_across=1",
                "workload.file_size=8GiB",
            ],
            &[
                "workload.kind=gaps",
                "workload.gap=0",
                "workload.request=512",
                "workload.file_size=8GiB",
            ],
            // 2 M reads each, 8 M in all.
            &[
                "workload.kind=scan",
                "workload.request=512",
                "workload.file_size=1GiB",
                "workload.streams=4",
            ],
        ] {
            let mut sets = sets.to_vec();
            sets.push("workload.duration=1ms");
            let cfg =
                crate::experiments::config(&sets.iter().map(|s| s.to_string()).collect::<Vec<_>>());
            let e = crate::run(&cfg, crate::RunOptions::default())
                .err()
                .unwrap_or_else(|| panic!("{sets:?} ran"))
                .to_string();
            // The key that sets the reads' size: a tiles workload's is workload.tile.
            let read_key = if sets[0] == "workload.kind=tiles" {
                "workload.tile"
            } else {
                "workload.request"
            };
            assert!(
                e.contains("workload.file_size") && e.contains(read_key),
                "{sets:?}: {e}"
            );
        }
        // The values are quoted as written, each with its key.
        let cfg = crate::experiments::config(&[
            "workload.kind=gaps".to_string(),
            "workload.gap=0".to_string(),
            "workload.request=512".to_string(),
            "workload.file_size=\"8GiB\"".to_string(),
            "workload.streams=3".to_string(),
            "workload.duration=1ms".to_string(),
        ]);
        let e = crate::run(&cfg, crate::RunOptions::default())
            .err()
            .unwrap_or_else(|| panic!("a plan too long to hold ran"))
            .to_string();
        assert!(
            e.contains(
                "workload.streams = `3` reading files of `8GiB` in reads of workload.request = \
                 `512` (512B) with gaps of workload.gap = `0` (0B) would disclose more than \
                 4194304 reads"
            ),
            "{e}"
        );
        // The largest plan the experiments disclose still runs.
        let cfg = crate::experiments::config(&[
            "workload.kind=scan".to_string(),
            "workload.request=8KiB".to_string(),
            "workload.file_size=4GiB".to_string(),
            "workload.duration=1ms".to_string(),
        ]);
        assert!(crate::run(&cfg, crate::RunOptions::default()).is_ok());
    }

    proptest::proptest! {
        /// `Input::Hint` promises policies that every disclosed range lies within its file and
        /// is not empty (`tip` turns a hinted range into a fetch as it stands), so every plan
        /// must keep that promise whatever the sizes and gaps.
        #[test]
        fn every_planned_read_lies_within_the_file(
            kind in 0..3u8,
            size_bytes in 0u64..(1 << 22),
            request_pages in 1u64..64,
            tile_bytes in 1u64..(1 << 16),
            across in 1u64..16,
            gap_bytes in 0u64..(1 << 18),
            exponential: bool,
            seed: u64,
        ) {
            let kinds = [WorkloadKind::Scan, WorkloadKind::Tiles, WorkloadKind::Gaps];
            let mut w = w(kinds[kind as usize]);
            w.file_size = ByteLen(size_bytes);
            w.request = ByteLen(request_pages * 512);
            w.tile = ByteLen(tile_bytes);
            w.tiles_across = across;
            w.gap = ByteLen(gap_bytes);
            w.gap_dist = if exponential { GapDist::Exponential } else { GapDist::Fixed };
            let p = plan(&w, &mut Rng::new(seed), 1 << 16).unwrap_or_default();
            for &(offset, len) in &p {
                proptest::prop_assert!(len > 0, "empty read at {offset}");
                proptest::prop_assert!(
                    offset + len <= size_bytes,
                    "read {offset}+{len} runs past the end of a {size_bytes}-byte file"
                );
            }
        }
    }

    /// Gaps are rounded down to whole pages, exponential draws and fixed gaps alike, so a `gaps`
    /// workload of whole-page requests reads at page boundaries only, as
    /// `WorkloadConfig::reads_page_aligned` tells the controller-cache check. It used to say
    /// otherwise for exponential gaps and fixed gaps off a page boundary.
    #[test]
    fn gaps_reads_start_on_pages_whenever_the_request_is_whole_pages() {
        for dist in [GapDist::Fixed, GapDist::Exponential] {
            for gap_bytes in [0u64, 3000, 10_000, 65_536] {
                let mut g = w(WorkloadKind::Gaps);
                g.file_size = ByteLen::mib(4);
                g.gap = ByteLen(gap_bytes);
                g.gap_dist = dist;
                assert!(g.reads_page_aligned(), "{dist:?} gap {gap_bytes}");
                let p = plan(&g, &mut Rng::new(7), 1 << 16).unwrap();
                assert!(p.len() > 1);
                assert!(
                    p.iter().all(|&(o, _)| o % PAGE_BYTES == 0),
                    "{dist:?} {gap_bytes}"
                );
                g.request = ByteLen(6000);
                assert!(!g.reads_page_aligned());
            }
        }
    }

    #[test]
    fn tiles_walk_columns_and_gaps_are_sorted() {
        let mut t = w(WorkloadKind::Tiles);
        t.tile = ByteLen::kib(4);
        t.tiles_across = 4;
        let p = plan(&t, &mut Rng::new(1), 256).unwrap();
        assert_eq!(p.len(), 256);
        assert_eq!(&p[..3], &[(0, 4096), (16384, 4096), (32768, 4096)]);
        assert_eq!(p[64], (4096, 4096));
        let mut g = w(WorkloadKind::Gaps);
        g.gap = ByteLen::kib(24);
        let p = plan(&g, &mut Rng::new(1), 32).unwrap();
        assert_eq!(p.len(), 32);
        assert!(p.windows(2).all(|x| x[1].0 - x[0].0 == 32768));
    }
}
