//! Measures the host's memory-copy rate, the figure `host.copy_rate` defaults to: one thread
//! copying 128 KiB pieces of a 256 MiB source, far larger than any processor cache, into one
//! 128 KiB buffer that it reuses, as a `read()` copies pages of the page cache into the caller's
//! buffer. Run it optimised, on an otherwise idle core:
//!
//! ```text
//! cargo run --release -p foresight-sim --example copy_rate
//! ```
//!
//! One thread, because the kernel copies a `read()`'s bytes on the caller's core, and the
//! simulator serialises every copy of a host on one server: a single core's rate is a lower bound
//! on what the host's memory moves for all of its readers at once. It prints each round and their
//! median, since one round on a shared machine can be slowed by a neighbour.

use std::hint::black_box;

/// Bytes of each copy: a 128 KiB read, Linux's default readahead window.
const PIECE_BYTES: usize = 128 << 10;
/// Bytes of the source the copies walk through, so that what they read comes from memory rather
/// than from a cache, as pages of the page cache mostly do.
const SOURCE_BYTES: usize = 256 << 20;
/// Passes over the source per round, after one to warm it (fault its pages in).
const PASSES: usize = 8;
/// Rounds, each timed on its own.
const ROUNDS: usize = 3;

fn main() {
    // Every byte written, so that the source's pages are real memory, not the shared zero page.
    let source: Vec<u8> = (0..SOURCE_BYTES).map(|i| (i % 251) as u8).collect();
    let mut buffer = vec![0u8; PIECE_BYTES];
    let pass = |buffer: &mut [u8]| {
        for piece in source.chunks_exact(PIECE_BYTES) {
            buffer.copy_from_slice(black_box(piece));
            black_box(&mut *buffer);
        }
    };
    pass(&mut buffer);
    let mut gib_s: Vec<f64> = (0..ROUNDS)
        .map(|round| {
            let start = std::time::Instant::now();
            for _ in 0..PASSES {
                pass(&mut buffer);
            }
            let wall_s = start.elapsed().as_secs_f64();
            let rate = (PASSES * SOURCE_BYTES) as f64 / wall_s / (1u64 << 30) as f64;
            println!(
                "round {}: copied {} x {} KiB in {wall_s:.3} s: {rate:.2} GiB/s on one thread",
                round + 1,
                PASSES * SOURCE_BYTES / PIECE_BYTES,
                PIECE_BYTES >> 10
            );
            rate
        })
        .collect();
    gib_s.sort_by(f64::total_cmp);
    println!("median of {ROUNDS} rounds: {:.2} GiB/s", gib_s[ROUNDS / 2]);
}
