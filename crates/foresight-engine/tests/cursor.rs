//! Property: a reader through the engine behaves as `std::io::Cursor` over the file's bytes, on
//! the backends that read real files. Each case writes a few files of random sizes (most not a
//! whole number of pages, so `O_DIRECT` reads meet the file's end inside a page), builds an
//! engine on the thread pool or io_uring with a small budget and a random policy, and drives
//! several readers and one cursor per reader through the same random reads (of 0 bytes to more
//! than the budget) and seeks (from the start, the end and the current position, before the
//! start and past `u64::MAX` included); every result must be the cursor's: the bytes, the count,
//! the position, and an error where the cursor gives one, with the position kept.
//!
//! `tests/budget.rs` checks the bytes and the budget on the in-memory backend; this one checks
//! the `Read + Seek` contract on real files, where seeks from the end and the current position
//! and reads larger than the budget were not drawn.

mod common;

use std::io::{Cursor, Read, Seek, SeekFrom};
use std::time::Duration;

use common::{content, real_backends, TempDir};
use foresight_core::ByteLen;
use foresight_engine::Engine;
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Read { reader: usize, len: usize },
    Seek { reader: usize, to: SeekFrom },
}

/// Seeks near the places that matter (the start, the end, a page boundary) and far beyond.
fn seek_from() -> impl Strategy<Value = SeekFrom> {
    prop_oneof![
        3 => (0u64..400_000).prop_map(SeekFrom::Start),
        1 => prop::sample::select(vec![u64::MAX, u64::MAX - 1, i64::MAX as u64 + 1])
            .prop_map(SeekFrom::Start),
        3 => (-400_000i64..5_000).prop_map(SeekFrom::End),
        3 => (-300_000i64..300_000).prop_map(SeekFrom::Current),
        1 => prop::sample::select(vec![i64::MIN, i64::MAX, -1, 1]).prop_map(SeekFrom::Current),
        1 => prop::sample::select(vec![i64::MIN, i64::MAX]).prop_map(SeekFrom::End),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0usize..3, prop_oneof![Just(0usize), 1usize..300_000])
            .prop_map(|(reader, len)| Op::Read { reader, len }),
        2 => (0usize..3, seek_from()).prop_map(|(reader, to)| Op::Seek { reader, to }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn a_reader_on_a_real_file_is_a_cursor_over_its_bytes(
        backend in 0usize..2,
        direct in any::<bool>(),
        policy in prop::sample::select(vec!["none", "seqp", "saseqp", "streams", "directed"]),
        budget_pages in 16u64..64,
        sizes in prop::collection::vec(prop_oneof![
            Just(0usize), 1usize..9_000, 9_000usize..300_000,
        ], 1..3),
        ops in prop::collection::vec(op(), 1..50),
    ) {
        let backends = real_backends("cursor");
        let (name, chosen) = backends[backend % backends.len()].clone();
        let case = format!("{name} direct {direct} policy {policy} budget_pages {budget_pages} sizes {sizes:?} ops {ops:?}");
        let dir = TempDir::new("cursor");
        let files: Vec<Vec<u8>> =
            sizes.iter().enumerate().map(|(i, &n)| content(n, 7 + i as u64)).collect();
        let paths: Vec<_> =
            files.iter().enumerate().map(|(i, f)| dir.file(&format!("f{i}"), f)).collect();
        let engine = Engine::builder()
            .backend(chosen)
            .direct_io(direct)
            .memory(ByteLen(budget_pages * 4096))
            .max_io(ByteLen::kib(16))
            .readahead_max(ByteLen::kib(32))
            .policy(policy)
            .build()
            .unwrap();
        let _watchdog = common::watchdog(&engine, case.clone(), Duration::from_secs(20));
        let mut readers: Vec<_> =
            (0..3).map(|i| engine.open(&paths[i % paths.len()]).unwrap()).collect();
        let mut cursors: Vec<_> =
            (0..3).map(|i| Cursor::new(files[i % files.len()].as_slice())).collect();
        let mut got = vec![0u8; 300_000];
        let mut want = vec![0u8; 300_000];
        for op in ops {
            match op {
                Op::Read { reader, len } => {
                    let n = readers[reader].read(&mut got[..len]).unwrap();
                    let m = cursors[reader].read(&mut want[..len]).unwrap();
                    prop_assert_eq!(n, m, "read of {} bytes: {}", len, case);
                    prop_assert!(got[..n] == want[..m], "bytes differ: {}", case);
                }
                Op::Seek { reader, to } => {
                    let e = readers[reader].seek(to);
                    let c = cursors[reader].seek(to);
                    match (e, c) {
                        (Ok(e), Ok(c)) => prop_assert_eq!(e, c, "seek {:?}: {}", to, case),
                        (Err(e), Err(_)) => prop_assert_eq!(
                            e.kind(), std::io::ErrorKind::InvalidInput, "seek {:?}: {}", to, case
                        ),
                        (e, c) => prop_assert!(false, "seek {:?}: engine {:?}, cursor {:?}: {}", to, e, c, case),
                    }
                }
            }
            for (r, c) in readers.iter().zip(&cursors) {
                prop_assert_eq!(r.position(), c.position(), "position: {}", case);
            }
        }
        drop(readers);
        engine.check_invariants();
    }
}
