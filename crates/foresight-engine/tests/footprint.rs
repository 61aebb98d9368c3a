//! What an engine keeps per distinct file it has served: nothing, once the file is closed.
//!
//! A server keeps one engine for its whole life and opens every file it serves through it. This
//! binary counts the heap bytes in use (its own global allocator adds up every allocation less
//! every free), opens, reads and closes distinct files one after another under each policy that
//! keeps state per file, and compares the heap after a first batch with the heap after ten times
//! as many. Before the engine forgot closed files, each distinct file left 205 (`none`) to 487
//! (`seqp`) heap bytes behind: the engine's file table and identity map, the policy's layout
//! entry and readahead marks, and the spare capacity of the tables growing to hold them.

use foresight_core::ByteLen;
use foresight_engine::{Backend, Engine, NoopBackend};
use std::io::Read;

mod common;
#[path = "common/counting_alloc.rs"]
mod counting_alloc;

/// Opens, reads 16 KiB of and closes `n` distinct files (the in-memory backend's one path,
/// replaced each time, which makes a new inode), then waits until the engine remembers none.
fn serve(engine: &Engine, noop: &NoopBackend, n: u64, buf: &mut [u8]) {
    for _ in 0..n {
        noop.insert("/mem/f", vec![7u8; 64 << 10]);
        let mut r = engine.open("/mem/f").expect("an inserted file");
        r.read_exact(buf).expect("an in-memory read");
    }
    common::wait_for_engine(engine, "every closed file to be forgotten", || {
        engine.files_remembered() == 0
    });
}

#[test]
fn closed_files_leave_nothing_behind() {
    const FIRST: u64 = 2_000;
    const MORE: u64 = 20_000;
    for policy in ["none", "seqp", "directed", "streams"] {
        let noop = NoopBackend::new();
        let engine = Engine::builder()
            .backend(Backend::Noop(noop.clone()))
            .policy(policy)
            .memory(ByteLen::mib(16))
            .build()
            .expect("an engine on the in-memory backend");
        let mut buf = vec![0u8; 16 << 10];
        serve(&engine, &noop, FIRST, &mut buf);
        let before = counting_alloc::live_bytes();
        serve(&engine, &noop, MORE, &mut buf);
        let after = counting_alloc::live_bytes();
        let per_file = (after - before) as f64 / MORE as f64;
        println!(
            "{policy}: heap {before} bytes after {FIRST} distinct files, {after} after {MORE} \
             more: {per_file:.1} bytes a file"
        );
        // A few hundred bytes of slack for whatever the backend's threads hold at the instant
        // of each count; a file's entry is hundreds of bytes, so 20,000 kept would be megabytes.
        assert!(
            per_file < 2.0,
            "{policy}: the heap grew by {per_file:.1} bytes for each distinct file served"
        );
    }
}
