//! Opening many distinct files: the cost of one open must not grow with the files opened before.
//!
//! A server keeps one engine for its whole life and opens every file it serves through it, so a
//! per-open cost that grows with the files already seen makes the total quadratic. This measures
//! the mean cost of an open (and a first 4 KiB read) over 5,000 and then 50,000 distinct files on
//! the in-memory backend, side by side in one run, and prints both:
//!
//! ```text
//! cargo test --release -p foresight-engine --test speed -- --ignored --nocapture
//! ```
//!
//! It fails when an open among 50,000 files costs more than three times one among 5,000 (it was
//! about 50 times before policies were handed only the new file instead of the whole layout).

use std::io::Read;

use foresight_engine::{Backend, Engine, NoopBackend};

/// Mean seconds per open-and-read over `n` distinct files, on a fresh engine.
fn seconds_per_open(n: usize) -> f64 {
    let noop = NoopBackend::new();
    for i in 0..n {
        noop.insert(format!("/f{i}"), vec![7u8; 8192]);
    }
    let engine = Engine::builder()
        .backend(Backend::Noop(noop))
        .build()
        .expect("an engine on the in-memory backend");
    let mut buf = [0u8; 4096];
    let start = std::time::Instant::now();
    for i in 0..n {
        let mut r = engine.open(format!("/f{i}")).expect("inserted file");
        assert_eq!(r.read(&mut buf).expect("in-memory read"), 4096);
    }
    start.elapsed().as_secs_f64() / n as f64
}

#[test]
#[ignore = "a timing measurement: run with --release --ignored --nocapture"]
fn an_open_costs_the_same_among_many_files() {
    let few = seconds_per_open(5_000);
    let many = seconds_per_open(50_000);
    println!(
        "per open: {:.1} us among 5,000 files, {:.1} us among 50,000 ({:.2}x)",
        few * 1e6,
        many * 1e6,
        many / few
    );
    assert!(
        many < 3.0 * few,
        "an open among 50,000 files costs {:.2}x one among 5,000",
        many / few
    );
}
