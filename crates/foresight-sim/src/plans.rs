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
//!   draw with that mean) after the end of the previous one, as many as the file holds.

use foresight_core::Rng;

use crate::config::{GapDist, WorkloadConfig, WorkloadKind};

/// The read plan of one client. Empty for workloads that do not disclose their reads.
pub fn plan(w: &WorkloadConfig, rng: &mut Rng) -> Vec<(u64, u64)> {
    let size = w.file_size.0;
    match w.kind {
        WorkloadKind::Scan => {
            let req = w.request.0;
            let mut pages: Vec<u64> = (0..size / req).collect();
            rng.shuffle(&mut pages);
            pages.into_iter().map(|p| (p * req, req)).collect()
        }
        WorkloadKind::Tiles => {
            let (tile, across) = (w.tile.0, w.tiles_across);
            let rows = size / (tile * across);
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
                v.push((off, req));
                let gap = match w.gap_dist {
                    GapDist::Fixed => w.gap.0,
                    GapDist::Exponential => rng.exponential(w.gap.0 as f64) as u64,
                };
                // Reads stay page-aligned, as a database's pages are.
                off += req + gap / 4096 * 4096;
            }
            v
        }
        _ => Vec::new(),
    }
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
        let mut p = plan(&w(WorkloadKind::Scan), &mut Rng::new(1));
        assert_eq!(p.len(), 128);
        assert_ne!(p.windows(2).filter(|x| x[0] < x[1]).count(), 127);
        p.sort_unstable();
        assert!(p
            .iter()
            .enumerate()
            .all(|(i, &(o, l))| o == i as u64 * 8192 && l == 8192));
    }

    #[test]
    fn tiles_walk_columns_and_gaps_are_sorted() {
        let mut t = w(WorkloadKind::Tiles);
        t.tile = ByteLen::kib(4);
        t.tiles_across = 4;
        let p = plan(&t, &mut Rng::new(1));
        assert_eq!(p.len(), 256);
        assert_eq!(&p[..3], &[(0, 4096), (16384, 4096), (32768, 4096)]);
        assert_eq!(p[64], (4096, 4096));
        let mut g = w(WorkloadKind::Gaps);
        g.gap = ByteLen::kib(24);
        let p = plan(&g, &mut Rng::new(1));
        assert_eq!(p.len(), 32);
        assert!(p.windows(2).all(|x| x[1].0 - x[0].0 == 32768));
    }
}
