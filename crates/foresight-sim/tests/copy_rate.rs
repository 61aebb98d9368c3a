//! The host's memory-copy rate, the figure `host.copy_rate` defaults to: one thread copying
//! 128 KiB pieces of a 256 MiB source, far larger than any processor cache, into one 128 KiB
//! buffer that it reuses, as a `read()` copies pages of the page cache into the caller's buffer.
//! Run it optimised, on an otherwise idle core, and read the figure it prints:
//!
//! ```text
//! cargo test --release -p foresight-sim --test copy_rate -- --ignored --nocapture
//! ```
//!
//! One thread, because the kernel copies a `read()`'s bytes on the caller's core, and the
//! simulator serialises every copy of a host on one server: a single core's rate is a lower bound
//! on what the host's memory moves for all of its readers at once.

use std::hint::black_box;

/// Bytes of each copy: a 128 KiB read, Linux's default readahead window.
const PIECE_BYTES: usize = 128 << 10;
/// Bytes of the source the copies walk through, so that what they read comes from memory rather
/// than from a cache, as pages of the page cache mostly do.
const SOURCE_BYTES: usize = 256 << 20;
/// Passes over the source after one to warm it (fault its pages in).
const PASSES: usize = 8;

#[test]
#[ignore = "a timing measurement: run with --release --ignored --nocapture"]
fn single_thread_copy_rate() {
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
    let start = std::time::Instant::now();
    for _ in 0..PASSES {
        pass(&mut buffer);
    }
    let wall_s = start.elapsed().as_secs_f64();
    let bytes = (PASSES * SOURCE_BYTES) as f64;
    let gib_s = bytes / wall_s / (1u64 << 30) as f64;
    println!(
        "copied {} x {} KiB in {wall_s:.3} s: {gib_s:.2} GiB/s on one thread",
        PASSES * SOURCE_BYTES / PIECE_BYTES,
        PIECE_BYTES >> 10
    );
    assert!(gib_s > 0.0);
}
