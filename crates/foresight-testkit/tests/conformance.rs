//! The conformance suite: four clients under `seqp` on a WD800JD, in the simulator and in the real
//! engine's emulated backend. Per client, the policy must see the same reads and misses and make the
//! same fetches, and the client must get the same bytes (the file's). The global interleaving is
//! printed, not required (see `foresight_testkit::conformance`).

use foresight_testkit::conformance::{file_bytes, reads_per_stream, write_files};
use foresight_testkit::{compare, run_engine, run_sim, Scenario};

#[test]
fn four_streams_under_seqp_decide_the_same_in_both_worlds() {
    let s = Scenario::four_streams_seqp_wd800jd();
    let files: Vec<Vec<u8>> = (0..s.streams as u64)
        .map(|i| file_bytes(s.file_bytes, i))
        .collect();
    let dir = std::env::temp_dir().join(format!("foresight-conformance-{}", std::process::id()));
    let paths = write_files(&dir, &files).unwrap();
    let sim = run_sim(&s, &files).unwrap();
    let engine = run_engine(&s, &paths).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let c = compare(&sim, &engine);
    eprintln!(
        "conformance: sim {:.3} s ({:.1} MiB/s simulated), engine {:.3} s ({:.1} MiB/s on the emulated drive); \
         fetches {} vs {}; reads per stream {:?} vs {:?}; per-stream decisions equal: {}; bytes equal: {}; \
         global order equal: {}",
        sim.elapsed_s,
        sim.throughput_mib_s,
        engine.elapsed_s,
        engine.throughput_mib_s,
        c.fetches.0,
        c.fetches.1,
        reads_per_stream(&sim),
        reads_per_stream(&engine),
        c.per_stream_equal,
        c.bytes_equal,
        c.global_equal
    );
    assert!(c.fetches.0 > 0, "the scenario must exercise the policy");
    assert!(c.per_stream_equal, "{:?}", c.first_difference);
    assert!(c.bytes_equal, "{:?}", c.first_difference);
    // Per-stream traces hold the fetches answered to reads; fetches a policy issues on a
    // completion or a timer are in neither, so the totals are compared as well.
    assert_eq!(
        c.fetches.0, c.fetches.1,
        "fetch ranges issued in all, sim against engine"
    );
    for (t, f) in engine.streams.iter().zip(&files) {
        assert_eq!(t.bytes, f.len() as u64, "every client read its whole file");
    }
    // The emulated drive is the simulator's drive: the same work takes about the same time
    // (generous bounds: the engine adds the host's real latencies).
    let ratio = engine.elapsed_s / sim.elapsed_s;
    assert!(
        (0.5..3.0).contains(&ratio),
        "engine/sim time ratio {ratio:.2}"
    );
}
