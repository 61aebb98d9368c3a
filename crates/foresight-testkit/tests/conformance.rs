//! The conformance suite: each scenario runs in the simulator and in the real engine's emulated
//! backend, and the policy must decide the same in both. Per client, the policy must see the same
//! reads and misses and answer each read and each hint the same way (fetches, deferrals,
//! releases), it must fetch the same ranges of the client's file in the same order, and the client
//! must get the same bytes (the file's); the total fetches must match. The global interleaving of
//! clients is printed, not required (see `foresight_testkit::conformance`). A scenario whose
//! decisions depend on timing says which checks it leaves out and why.

use foresight_core::{ByteLen, Duration};
use foresight_testkit::conformance::{
    file_bytes, plans, reads_per_stream, run_engine_within, run_engine_wrapped, write_files,
};
use foresight_testkit::{compare, run_engine, run_sim, Comparison, Scenario, Workload, WorldRun};

/// The harness's hang guard fails a run whose clients have not all ended when it fires, naming
/// them, instead of waiting for them. The clients here think for seconds between their two reads
/// and the guard is a hundredth of that, so they are all still running when it fires, however
/// loaded the machine; without the guard the run would succeed, seconds later.
#[test]
fn clients_still_running_when_the_hang_guard_fires_fail_the_run_by_name() {
    let s = Scenario {
        streams: 2,
        file_bytes: 128 << 10,
        request_bytes: 64 << 10,
        think: Duration::from_secs(3),
        ..Scenario::four_streams_seqp_wd800jd()
    };
    let files: Vec<Vec<u8>> = (0..s.workload.files(s.streams) as u64)
        .map(|i| file_bytes(s.file_bytes, i))
        .collect();
    let dir = tempfile::Builder::new()
        .prefix("foresight-conformance-hang-guard-")
        .tempdir()
        .unwrap();
    let paths = write_files(dir.path(), &files).unwrap();
    let run = run_engine_within(&s, &paths, std::time::Duration::from_millis(30));
    let Err(err) = run else {
        panic!("the run succeeded: the guard did not fire on clients still thinking")
    };
    assert!(
        err.contains("clients {0, 1} had not ended") && err.contains("hangs"),
        "{err}"
    );
}

/// Files under `dir` this process has open.
fn open_files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter(|target| target.starts_with(dir))
        .collect()
}

/// A client blocked in a read when the hang guard fires ends, and the engine is shut down before
/// the run returns, instead of running on beside later tests, kept alive by that client's reader.
/// The one client reads its 16 MiB file in one read from an emulated Cheetah 4LP (16 MB/s at
/// best), a second at least, and the guard here is 50 ms, so the guard fires with the client
/// blocked in the engine however loaded the machine. Before, the run returned with the client
/// still in its read and the engine's descriptor of the file still open.
#[test]
fn a_client_blocked_in_a_read_when_the_hang_guard_fires_ends_and_the_engine_stops() {
    let s = Scenario {
        device: "cheetah-4lp".into(),
        streams: 1,
        file_bytes: 16 << 20,
        request_bytes: 16 << 20,
        ..Scenario::four_streams_seqp_wd800jd()
    };
    let files: Vec<Vec<u8>> = (0..s.workload.files(s.streams) as u64)
        .map(|i| file_bytes(s.file_bytes, i))
        .collect();
    let dir = tempfile::Builder::new()
        .prefix("foresight-conformance-hang-release-")
        .tempdir()
        .unwrap();
    let paths = write_files(dir.path(), &files).unwrap();
    let run = run_engine_within(&s, &paths, std::time::Duration::from_millis(50));
    let Err(err) = run else {
        panic!("the run succeeded: no client was blocked when the guard fired")
    };
    assert!(err.contains("hangs"), "{err}");
    assert!(
        err.contains("its clients ended and it was shut down"),
        "the blocked client did not end: {err}"
    );
    let open = open_files_under(dir.path());
    assert!(open.is_empty(), "the engine still holds {open:?}: {err}");
}

/// A policy that panics, on the calling client's thread and under the engine's lock, at the first
/// input `panics_at` picks, after pausing `pause` there; it is the wrapped policy otherwise.
struct PanicsAt {
    inner: Box<dyn foresight_policy::Policy>,
    panics_at: fn(&foresight_policy::Input) -> Option<&'static str>,
    pause: std::time::Duration,
}

impl foresight_policy::Policy for PanicsAt {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn handle(&mut self, now: foresight_core::Instant, input: foresight_policy::Input) {
        if let Some(message) = (self.panics_at)(&input) {
            std::thread::sleep(self.pause);
            panic!("{message}");
        }
        self.inner.handle(now, input)
    }
    fn poll_output(&mut self) -> Option<foresight_policy::Output> {
        self.inner.poll_output()
    }
    fn poll_timeout(&self) -> Option<foresight_core::Instant> {
        self.inner.poll_timeout()
    }
    fn handle_timeout(&mut self, now: foresight_core::Instant) {
        self.inner.handle_timeout(now)
    }
    fn add_file(&mut self, id: foresight_core::FileId, file: foresight_policy::layout::FileLayout) {
        self.inner.add_file(id, file)
    }
}

/// Runs `s` through the engine, its policy wrapped in [`PanicsAt`], under a hang guard of
/// `hang_guard`; returns the run and the clients' paths.
fn run_panicking(
    s: &Scenario,
    prefix: &str,
    hang_guard: std::time::Duration,
    panics_at: fn(&foresight_policy::Input) -> Option<&'static str>,
    pause: std::time::Duration,
) -> (Result<WorldRun, String>, Vec<std::path::PathBuf>) {
    let files: Vec<Vec<u8>> = (0..s.workload.files(s.streams) as u64)
        .map(|i| file_bytes(s.file_bytes, i))
        .collect();
    let dir = tempfile::Builder::new().prefix(prefix).tempdir().unwrap();
    let paths = write_files(dir.path(), &files).unwrap();
    let run = run_engine_wrapped(
        s,
        &paths,
        hang_guard,
        Some(Box::new(move |inner| {
            Box::new(PanicsAt {
                inner,
                panics_at,
                pause,
            })
        })),
    );
    (run, paths)
}

/// A client whose thread panics (here the policy panics at its first read, on the client's
/// thread) fails the run with an error that names the client, its stream and its file, and
/// carries the panic's message. Before, the run said only "a client thread panicked".
#[test]
fn a_client_that_panics_is_named_with_the_panic_message() {
    let s = Scenario {
        streams: 2,
        file_bytes: 128 << 10,
        request_bytes: 64 << 10,
        ..Scenario::four_streams_seqp_wd800jd()
    };
    let (run, paths) = run_panicking(
        &s,
        "foresight-conformance-panic-",
        std::time::Duration::from_secs(60),
        |input| match input {
            foresight_policy::Input::Read { stream, .. } if stream.0 == 1 => {
                Some("the test's policy panics at a read of stream 1")
            }
            _ => None,
        },
        std::time::Duration::ZERO,
    );
    let Err(err) = run else {
        panic!("the run succeeded although its policy panicked")
    };
    let file = paths[1].display().to_string();
    assert!(
        err.contains(&format!("client 1 (stream 1, file 1, {file}) panicked"))
            && err.contains("the test's policy panics at a read of stream 1"),
        "{err}"
    );
}

/// A client that dies in its turn to hint (here the policy panics at client 0's hint) passes
/// the turn on: the client after it hints into the engine the panic broke, fails, and the run
/// reports both clients' outcomes at once, not a hang. The policy pauses before it panics so
/// that client 1 is waiting for its turn by then. (Before the turns passed on a dead client's
/// turn, this run hung only when client 1 began waiting before client 0 took its turn, which
/// threads started in order seldom do; the turns' own tests in `conformance.rs` make that case
/// every time.)
#[test]
fn a_client_that_dies_in_its_turn_to_hint_passes_the_turn_on() {
    let s = Scenario {
        workload: Workload::Scan,
        streams: 2,
        file_bytes: 128 << 10,
        request_bytes: 64 << 10,
        policy: "directed".into(),
        ..Scenario::four_streams_seqp_wd800jd()
    };
    // A guard far beyond the run, so that it fires only on the hang.
    let (run, paths) = run_panicking(
        &s,
        "foresight-conformance-turn-",
        std::time::Duration::from_secs(20),
        |input| match input {
            foresight_policy::Input::Hint { stream, .. } if stream.0 == 0 => {
                Some("the test's policy panics at the hint of stream 0")
            }
            _ => None,
        },
        std::time::Duration::from_millis(300),
    );
    let Err(err) = run else {
        panic!("the run succeeded although its policy panicked")
    };
    assert!(!err.contains("hangs"), "{err}");
    let file0 = paths[0].display().to_string();
    let file1 = paths[1].display().to_string();
    assert!(
        err.contains(&format!("client 0 (stream 0, file 0, {file0}) panicked"))
            && err.contains("the test's policy panics at the hint of stream 0"),
        "{err}"
    );
    // Client 1 hints into the engine client 0's panic broke, and fails with the panic's reason.
    assert!(
        err.contains(&format!("client 1 (stream 1, file 1, {file1}) failed")),
        "{err}"
    );
}

/// The engine runs of this suite's tests share the machine: a first run holds this lock shared,
/// so the tests run theirs side by side, and a run repeated because its time was out of bounds
/// holds it alone ([`run_both_alone`]), so that the other tests' engines no longer take the cores
/// its timing needs. On two cores a time measured beside the other tests ran up to 1.69 times the
/// simulator's in all five tries where the same scenario alone takes about 1.1 times.
static ENGINE_RUNS: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// Runs `s` in both worlds and prints how they compare. Every client must have read every byte it
/// planned, and got the file's bytes, in both worlds.
fn run_both(name: &str, s: &Scenario) -> (WorldRun, WorldRun, Comparison) {
    run_both_sharing(name, s, false)
}

/// [`run_both`] with no other test's engine running beside this one's: for a run repeated because
/// its time was out of bounds.
fn run_both_alone(name: &str, s: &Scenario) -> (WorldRun, WorldRun, Comparison) {
    run_both_sharing(name, s, true)
}

/// The `attempt`th run (from 1) of a scenario tried up to a few times: the first beside the other
/// tests, a repeat alone.
fn attempt_run(attempt: u32, name: &str, s: &Scenario) -> (WorldRun, WorldRun, Comparison) {
    if attempt == 1 {
        run_both(name, s)
    } else {
        run_both_alone(name, s)
    }
}

fn run_both_sharing(name: &str, s: &Scenario, alone: bool) -> (WorldRun, WorldRun, Comparison) {
    let files: Vec<Vec<u8>> = (0..s.workload.files(s.streams) as u64)
        .map(|i| file_bytes(s.file_bytes, i))
        .collect();
    // Removed with the files once both runs are done, also when one fails.
    let dir = tempfile::Builder::new()
        .prefix(&format!("foresight-conformance-{name}-"))
        .tempdir()
        .unwrap();
    let paths = write_files(dir.path(), &files).unwrap();
    let sim = run_sim(s, &files).unwrap();
    // A test that failed while holding the lock leaves nothing behind that another must not see.
    let engine = if alone {
        let _only = ENGINE_RUNS.write().unwrap_or_else(|e| e.into_inner());
        run_engine(s, &paths)
    } else {
        let _shared = ENGINE_RUNS.read().unwrap_or_else(|e| e.into_inner());
        run_engine(s, &paths)
    };
    drop(dir);
    let engine = engine.unwrap();
    // The simulator runs the stream scheduler at the block level, where it sees volume bytes:
    // its decisions are restated in the files the engine placed at the same volume offsets.
    let sim = if s.policy == "streams" {
        assert_eq!(engine.files.len(), s.streams as usize, "unplaced files");
        sim.in_files(&engine.files)
    } else {
        sim
    };
    let c = compare(&sim, &engine);
    eprintln!(
        "conformance {name}: sim {:.3} s ({:.1} MiB/s simulated, {} device bytes), engine {:.3} s \
         ({:.1} MiB/s on the emulated drive, {} device bytes); fetches {} vs {}; reads per stream \
         {:?} vs {:?}; per-stream decisions equal: {}; fetch sequences equal: {}; bytes equal: {}; \
         global order equal: {}",
        sim.elapsed_s,
        sim.throughput_mib_s,
        sim.device_bytes,
        engine.elapsed_s,
        engine.throughput_mib_s,
        engine.device_bytes,
        c.fetches.0,
        c.fetches.1,
        reads_per_stream(&sim),
        reads_per_stream(&engine),
        c.per_stream_equal,
        c.fetch_sequences_equal,
        c.bytes_equal,
        c.global_equal
    );
    assert!(c.bytes_equal, "{:?}", c.first_difference);
    let plans = plans(s).unwrap();
    for world in [&sim, &engine] {
        // Checked first: the zip below would check only the streams both have.
        assert_eq!(
            world.streams.len(),
            plans.len(),
            "{}: a stream trace per client",
            world.world
        );
        for (t, plan) in world.streams.iter().zip(&plans) {
            let planned: u64 = plan.iter().map(|&(_, l)| l).sum();
            assert_eq!(t.bytes, planned, "{}: a client missed bytes", world.world);
            assert_eq!(
                t.reads.iter().map(|r| r.range).collect::<Vec<_>>(),
                plan.iter()
                    .map(|&(o, l)| foresight_core::ByteRange::new(o, l))
                    .collect::<Vec<_>>(),
                "{}: the policy saw other reads than the client's",
                world.world
            );
        }
    }
    (sim, engine, c)
}

/// The checks a scenario whose decisions do not depend on timing must pass.
fn same_decisions(c: &Comparison) {
    assert!(c.fetches.0 > 0, "the scenario must exercise the policy");
    assert!(c.per_stream_equal, "{:?}", c.first_difference);
    assert!(c.fetch_sequences_equal, "{:?}", c.first_difference);
    // Per-stream read traces hold the fetches answered to reads; fetches a policy issues on a
    // completion or a timer are in the fetch sequences, and the totals are compared as well.
    assert_eq!(
        c.fetches.0, c.fetches.1,
        "fetch ranges issued in all, sim against engine"
    );
}

/// The emulated drive is the simulator's drive: the same work takes about the same time
/// (generous bounds: the engine adds the host's real latencies).
fn similar_time(sim: &WorldRun, engine: &WorldRun) {
    let ratio = engine.elapsed_s / sim.elapsed_s;
    assert!(
        (0.5..3.0).contains(&ratio),
        "engine/sim time ratio {ratio:.2}"
    );
}

/// The emulated array is the simulator's array: a RAID-0 scenario must read the same device bytes
/// (within 1%) in the same time (within -20% and +30%). Host noise only ever slows the engine
/// down, so when the time is out of bounds the scenario runs again, up to [`TIME_RUNS`] runs in
/// all, and the fastest counts. (While the emulated array had one host queue in front of it, where the
/// simulator keeps one per member disk, two hinted 4 MiB `directed` scans took 0.089 to 0.149 s
/// on it against the simulator's 0.063 s.)
fn same_costs_on_raid0(name: &str, s: &Scenario, sim: &WorldRun, engine: &WorldRun) {
    same_costs_within(name, s, sim, engine, 0.8);
}

/// [`same_costs_on_raid0`] with the engine allowed to be faster than the simulator by at most
/// `1 - lowest` of its time.
fn same_costs_within(name: &str, s: &Scenario, sim: &WorldRun, engine: &WorldRun, lowest: f64) {
    let bytes = engine.device_bytes as f64 / sim.device_bytes as f64;
    assert!(
        (0.99..=1.01).contains(&bytes),
        "device bytes, engine/sim {bytes:.3} ({} vs {})",
        engine.device_bytes,
        sim.device_bytes
    );
    similar_time_on_raid0(name, s, sim, engine, lowest);
}

/// The time bound of [`same_costs_within`] alone: within `-(1 - lowest)` and +30% of the
/// simulator's, the fastest of up to [`TIME_RUNS`] engine runs.
fn similar_time_on_raid0(name: &str, s: &Scenario, sim: &WorldRun, engine: &WorldRun, lowest: f64) {
    similar_time_between(name, s, sim, engine, lowest, 1.3);
}

/// Engine runs a time bound may take, the fastest counting. Three were not always enough on a
/// two-core machine running the other conformance tests beside it: `saseqp` on the RAID-0 under
/// anticipation once took 0.495, 0.356 and 0.316 s against the simulator's 0.241 (1.31x, the
/// bound 1.3x), where on an idle machine it takes about 0.27 s. Five run back to back were not
/// always enough either, on a virtual machine whose host slowed it for a few seconds: the same
/// scenario took 0.351 to 0.392 s in all five (1.46x), where it took 0.274 to 0.282 s in most runs
/// alone before and after. So a repeat first waits [`repeat_pause`], which spreads eight runs
/// over about ten seconds.
const TIME_RUNS: usize = 8;

/// How long the `attempt`th repeat (from 1) of a run out of its time bound waits first: 0.25 s,
/// doubling to at most 2 s, so that a few seconds of a slowed host do not take every repeat.
fn repeat_pause(attempt: usize) -> std::time::Duration {
    std::time::Duration::from_millis((250u64 << (attempt - 1).min(3)).min(2000))
}

/// The engine's time within `lowest` and `highest` times the simulator's, the fastest of up to
/// [`TIME_RUNS`] engine runs.
fn similar_time_between(
    name: &str,
    s: &Scenario,
    sim: &WorldRun,
    engine: &WorldRun,
    lowest: f64,
    highest: f64,
) {
    let mut best_s = engine.elapsed_s;
    for attempt in 1..TIME_RUNS {
        if best_s / sim.elapsed_s < highest {
            break;
        }
        std::thread::sleep(repeat_pause(attempt));
        let (_, again, _) = run_both_alone(name, s);
        best_s = best_s.min(again.elapsed_s);
    }
    let ratio = best_s / sim.elapsed_s;
    assert!(
        (lowest..highest).contains(&ratio),
        "engine/sim time ratio {ratio:.2} ({best_s:.3} s, the fastest of up to {TIME_RUNS} runs, vs {:.3} s)",
        sim.elapsed_s
    );
}

#[test]
fn four_streams_under_seqp_decide_the_same_in_both_worlds() {
    let (sim, engine, c) = run_both("seqp", &Scenario::four_streams_seqp_wd800jd());
    same_decisions(&c);
    similar_time(&sim, &engine);
}

/// `seqp` with requests that are not whole pages (100,000 bytes) over files that end inside a
/// page: misses that fall inside a page, and windows clipped at the end of each file.
#[test]
fn unaligned_requests_under_seqp_decide_the_same_in_both_worlds() {
    let s = Scenario {
        request_bytes: 100_000,
        file_bytes: (4 << 20) + 12_345,
        ..Scenario::four_streams_seqp_wd800jd()
    };
    let (sim, engine, c) = run_both("seqp-unaligned", &s);
    same_decisions(&c);
    similar_time(&sim, &engine);
}

/// `directed` (paper 003) with two clients, each scanning its own 2 MiB table in 8 KiB pages in a
/// seeded random order that it discloses before its first read. The window holds the whole
/// table, so the policy plans every fetch when it hears the hints.
#[test]
fn two_scans_under_directed_decide_the_same_in_both_worlds() {
    let s = Scenario {
        workload: Workload::Scan,
        streams: 2,
        file_bytes: 2 << 20,
        request_bytes: 8 << 10,
        policy: "directed".into(),
        ..Scenario::four_streams_seqp_wd800jd()
    };
    let (_, _, c) = run_both("directed-scan", &s);
    same_decisions(&c);
}

/// `directed` with infill: one client reads 8 KiB every 32 KiB and discloses it; the sweep reads
/// through the gaps (at most 64 KiB of them) and releases the gap bytes.
#[test]
fn a_gapped_sweep_under_directed_with_infill_decides_the_same_in_both_worlds() {
    let s = Scenario {
        workload: Workload::Gaps {
            gap_bytes: 24 << 10,
        },
        streams: 1,
        file_bytes: 4 << 20,
        request_bytes: 8 << 10,
        policy: "directed".into(),
        policy_sets: vec!["policy.infill_max=64KiB".into()],
        ..Scenario::four_streams_seqp_wd800jd()
    };
    let (_, _, c) = run_both("directed-gaps", &s);
    same_decisions(&c);
}

/// `directed` with a window of 512 KiB over a 4 MiB scan: the window slides as the client reads,
/// and each new sweep reads through gaps it released before, so the same pages are fetched more
/// than once. Which reads a new sweep takes in depends on how many the client has used when it
/// starts, that is on when each earlier fetch completed relative to the client's reads, so the
/// per-read answers and the fetch sequence are not compared (the simulator's and the emulated
/// drive's completions differ by the host's microseconds, and by how each splits a fetch into
/// device requests). What the policy's decisions cost is compared instead: the device must read
/// about as many bytes, in about the same time, in both worlds.
#[test]
fn a_scan_through_a_sliding_directed_window_costs_the_same_in_both_worlds() {
    let s = Scenario {
        workload: Workload::Scan,
        streams: 1,
        file_bytes: 4 << 20,
        request_bytes: 8 << 10,
        policy: "directed".into(),
        policy_sets: vec!["policy.directed_memory=512KiB".into()],
        ..Scenario::four_streams_seqp_wd800jd()
    };
    let (sim, engine, c) = run_both("directed-window", &s);
    assert!(c.fetches.0 > 10, "the window must slide");
    let ratio = engine.device_bytes as f64 / sim.device_bytes as f64;
    assert!(
        (0.8..1.25).contains(&ratio),
        "device bytes, engine/sim {ratio:.2} ({} vs {})",
        engine.device_bytes,
        sim.device_bytes
    );
    similar_time(&sim, &engine);
}

/// `directed` over a RAID-0 of four WD800JDs with 64 KiB strips: two hinted 4 MiB scans, the
/// sweep ordered by position on the striped volume. The decisions do not depend on timing, and
/// both worlds queue and merge each member disk's parts on their own, so the costs agree too.
#[test]
fn two_scans_under_directed_on_raid0_decide_the_same_in_both_worlds() {
    let s = Scenario {
        raid0: Some((4, 64 << 10)),
        workload: Workload::Scan,
        streams: 2,
        file_bytes: 4 << 20,
        request_bytes: 8 << 10,
        policy: "directed".into(),
        ..Scenario::four_streams_seqp_wd800jd()
    };
    let (sim, engine, c) = run_both("directed-raid0", &s);
    same_decisions(&c);
    same_costs_on_raid0("directed-raid0", &s, &sim, &engine);
}

/// `directed` with three hinted 4 MiB scans and memory for less than one of them: 4 MiB of page
/// cache in the simulator, a 5 MiB budget in the engine (of which it keeps 1 MiB for demand
/// reads), so both may prefetch 4 MiB. Memory is over-committed from the first hint, the
/// contention controller passes the lead from stream to stream, and hinted pages are read and
/// released 8 KiB at a time. Which reads a sweep takes in depends on completion timing, as in
/// the sliding-window scenario, so the costs are compared: the number of fetches, the device
/// bytes and the time. (While the engine did not report a fetch that memory refused whole as
/// memory pressure, its `directed` made 529 fetches against the simulator's 255, in 12.3 s
/// against 3.3 s.)
///
/// How much the fetches vary with timing depends on how large the runs are. While the leader
/// reserved a whole 4 MiB run in flight, the window stayed at its minimum: 255 fetches in the
/// simulator, 262 to 281 in the engine (15 runs). When it reserved at most half its pool, and
/// infill gaps did not count against the window's memory, fewer, longer runs did the scan: 111
/// fetches in the simulator, and in the engine 84 in 8 runs of 15 and 79 to 123 in the rest, on a
/// shared two-core machine (0.71 to 1.11; this comparison failed in 9 of those 15 runs). With the
/// gaps counted, runs are short and many: 802 fetches in the simulator and 751 to 841 in the engine
/// (0.94 to 1.05), 0.93 to 1.11 times the device bytes and 0.89 to 1.13 times the time, over 94
/// runs (45 alone, 30 beside two busy loops on two cores, 19 in the whole suite, 8 of those beside
/// the busy loops). The fetches are bounded within -15% and +12%, which an engine given 1 MiB less
/// or more memory than the simulator misses in every attempt (1.14 to 1.18 in 12 attempts, 0.72 to
/// 0.82 in 11); the device bytes within -20% and +25%, and the time as [`similar_time`] does. An
/// attempt outside a bound is run again, and one of up to three must meet them all: a different
/// memory moves every attempt alike, so a retry cannot hide it.
#[test]
fn three_scans_under_directed_contending_for_memory_cost_the_same_in_both_worlds() {
    let s = Scenario {
        workload: Workload::Scan,
        streams: 3,
        file_bytes: 4 << 20,
        request_bytes: 8 << 10,
        policy: "directed".into(),
        memory: ByteLen::mib(4),
        engine_memory: Some(ByteLen::mib(5)),
        ..Scenario::four_streams_seqp_wd800jd()
    };
    let name = "directed-contention";
    let mut failures = Vec::new();
    for attempt in 1..=3 {
        let (sim, engine, c) = attempt_run(attempt, name, &s);
        let checks = [
            (
                "fetches",
                c.fetches.1 as f64 / c.fetches.0 as f64,
                0.85..1.12,
                format!("{} vs {}", c.fetches.1, c.fetches.0),
            ),
            (
                "device bytes",
                engine.device_bytes as f64 / sim.device_bytes as f64,
                0.8..1.25,
                format!("{} vs {}", engine.device_bytes, sim.device_bytes),
            ),
            (
                "time",
                engine.elapsed_s / sim.elapsed_s,
                0.5..3.0,
                format!("{:.3} s vs {:.3} s", engine.elapsed_s, sim.elapsed_s),
            ),
        ];
        let missed: Vec<String> = checks
            .iter()
            .filter(|(_, ratio, bounds, _)| !bounds.contains(ratio))
            .map(|(what, ratio, _, figures)| format!("{what}, engine/sim {ratio:.2} ({figures})"))
            .collect();
        if missed.is_empty() {
            return;
        }
        failures.push(format!("attempt {attempt}: {}", missed.join("; ")));
    }
    panic!(
        "{name}: no attempt of three cost the same:\n{}",
        failures.join("\n")
    );
}

/// The contention scenario at half size: three hinted 2 MiB scans in 3 MiB of page cache (a
/// 4 MiB engine budget). Here the streams that wait for the lead get reads deferred
/// (`Output::Defer`) while the leader reads on demand, and a deferred read must stay parked
/// across the moment between the leader's completion and its next read, as in the simulator,
/// where the read waits while anything is in flight. (While the engine ended a deferral as soon
/// as the policy had no fetch under way, the waiting streams read on demand between the leader's
/// reads: 32 to 69 fetches in 2.6 to 3.1 s against the simulator's 124 fetches in 0.96 s.)
///
/// The engine used to run it three ways. Two were engine or harness faults, now fixed. The
/// buffer pool refused a prefetch when its kept memory lay in pieces too small for it, while
/// telling the policy that memory was available, so a stream's sweeps were refused at every read
/// (about 400 fetches, 0.55 times the device bytes, 2.4 s). And the clients' threads hinted in
/// whatever order the OS ran them: when client 2 hinted before client 1, memory refused client
/// 1's fetches instead of client 2's (all 18 such runs of 118 made fewer than 110 fetches), and
/// with the pool's refusals that run took 64 fetches, 1.46 times the device bytes and 1.35 s.
/// The clients now hint in client order, as the simulator's
/// do. What is left depends on timing the simulator does not model: its clients read cached
/// data in the microseconds its memory bus takes to copy it (`host.copy_rate`), the engine's in
/// tens of microseconds each (more while a release copies the
/// rest of a 1 MiB chunk under the engine's lock, and milliseconds when the host preempts that
/// thread), so a completion can reach the policy before another stream's reads of cached data
/// rather than after them, and a sweep then takes in other reads: 98 to 102 fetches and 1.11
/// to 1.15 times the device bytes in 3 of 59 runs of the scenario alone (idle, beside a busy
/// process, three at once), which took 0.85 to 1.15 s and read 0.93 to 1.15 times the device
/// bytes in all. In the whole suite beside a busy process, one run in five went the old second
/// way still (61 fetches, 1.31 times the bytes, 1.26 s). Compared by the time and the device
/// bytes of the fastest of up to three runs: the time within -20% and +60% (the engine runs in
/// real time, and a loaded machine stretches it), the bytes within -15% and +40%.
#[test]
fn three_small_scans_under_directed_wait_for_the_lead_in_both_worlds() {
    let s = Scenario {
        workload: Workload::Scan,
        streams: 3,
        file_bytes: 2 << 20,
        request_bytes: 8 << 10,
        policy: "directed".into(),
        memory: ByteLen::mib(3),
        engine_memory: Some(ByteLen::mib(4)),
        ..Scenario::four_streams_seqp_wd800jd()
    };
    let name = "directed-contention-small";
    let (sim, mut best, c) = run_both(name, &s);
    assert!(c.fetches.0 > 0 && c.fetches.1 > 0, "no fetches");
    for _ in 1..3 {
        if best.elapsed_s / sim.elapsed_s < 1.25 {
            break;
        }
        let (_, again, _) = run_both_alone(name, &s);
        if again.elapsed_s < best.elapsed_s {
            best = again;
        }
    }
    let ratio = best.elapsed_s / sim.elapsed_s;
    assert!(
        (0.8..1.6).contains(&ratio),
        "engine/sim time ratio {ratio:.2} ({:.3} s, the fastest of up to three runs, vs {:.3} s)",
        best.elapsed_s,
        sim.elapsed_s
    );
    let bytes = best.device_bytes as f64 / sim.device_bytes as f64;
    assert!(
        (0.85..1.4).contains(&bytes),
        "device bytes of the fastest run, engine/sim {bytes:.2} ({} vs {})",
        best.device_bytes,
        sim.device_bytes
    );
}

/// The half-size contention scenario with clients that think 2 ms between reads: hinted reads, a
/// deferring policy and think time together. The simulator lets a parked read go to the disk
/// once nothing is in flight at the end of an instant, so while the lead thinks, the reads
/// deferred for its sweep read on demand at once. The engine cannot see an instant: it tells a
/// stream that thinks by its gaps between reads (each of the last few, at least one, 0.3 ms or
/// longer, which a sleep never undercuts), and ends a deferral as soon as it is idle when no
/// other stream may read at once. (Before, it waited up to 20 ms for any stream with hinted reads
/// left, thinking or not: the waiting streams' reads came in the lead's sweeps instead, 136 to
/// 169 fetches against the simulator's 70, 20 to 33 deferred reads against its 121, in 0.61 to
/// 0.65 of its 3.12 s.) Since `directed` charges infill gaps in flight to the window (and its
/// leader reserves at most half its pool for a run in flight), the simulator defers 39 reads in
/// 265 fetches of 7.98 MB in 1.125 s; the engine, run alone (20 runs), 40 to 53 reads in 215 to
/// 265 fetches, 0.97 to 0.99 of the device bytes in 1.05 to 1.11 of the time; beside two busy
/// loops, alone or with the rest of the suite (18 runs), 39 to 65 reads (up to 1.67 times) in 186
/// to 267 fetches, the second attempt within every bound where the first was not. Which reads
/// a sweep takes in still depends on when completions arrive, and the engine's memory accounting
/// differs (see the contention scenarios), so the clients' decisions part after a few dozen
/// reads. Compared by the deferred reads (within -20% and +25%), the fetches (within 50%), and
/// the device bytes and time as the scenario without think time is; an attempt outside any bound
/// is run again, and one of up to three must meet them all.
#[test]
fn three_small_scans_thinking_under_directed_defer_alike_in_both_worlds() {
    let s = Scenario {
        workload: Workload::Scan,
        streams: 3,
        file_bytes: 2 << 20,
        request_bytes: 8 << 10,
        policy: "directed".into(),
        memory: ByteLen::mib(3),
        engine_memory: Some(ByteLen::mib(4)),
        think: Duration::from_millis(2),
        ..Scenario::four_streams_seqp_wd800jd()
    };
    defer_alike("directed-contention-think", &s);
}

/// The thinking scenario with five clients at 2 ms, memory scaled with them (5 MiB, 6 MiB in the
/// engine: a stream's share as with three). Five deferred streams end their deferrals together
/// when the engine is idle, as the simulator releases its parked reads; while the engine ended
/// only the first reader's to look, the others waited for the next idle moment behind it, and
/// it deferred 0.79 to 0.91 times the simulator's 140 reads (one run of three outside the bound,
/// so this scenario alone would not have caught it; in 3 MiB, 0.48 to 0.56 times 325).
/// Now 0.95 to 1.12 times, the fetches 0.86 to 1.06, the time 0.98 to 1.06 and the device bytes
/// 0.97 to 1.09 (six runs, each within every bound at its first attempt). Compared as the
/// three-client scenario is.
#[test]
fn five_small_scans_thinking_under_directed_defer_alike_in_both_worlds() {
    let s = Scenario {
        workload: Workload::Scan,
        streams: 5,
        file_bytes: 2 << 20,
        request_bytes: 8 << 10,
        policy: "directed".into(),
        memory: ByteLen::mib(5),
        engine_memory: Some(ByteLen::mib(6)),
        think: Duration::from_millis(2),
        ..Scenario::four_streams_seqp_wd800jd()
    };
    defer_alike("directed-contention-think-5", &s);
}

/// Compares a thinking contention scenario by its deferred reads (within -20% and +25%), its
/// fetches (within 50%), its time (-20%, +60%) and its device bytes (-15%, +40%): one attempt of
/// up to three, each printed, must meet every bound.
fn defer_alike(name: &str, s: &Scenario) {
    let deferred = |w: &WorldRun| -> usize {
        w.streams
            .iter()
            .map(|t| t.reads.iter().filter(|r| !r.defers.is_empty()).count())
            .sum()
    };
    // One attempt is the whole comparison. The engine's side depends on when completions
    // arrive on a shared machine, so an attempt that lands outside a bound is run again, up to
    // three in all; the engine before this scenario's rule failed every attempt by far (20 to 33
    // deferred reads against the simulator's 121 of the time), so a retry cannot hide that kind
    // of departure.
    let mut failures = Vec::new();
    for attempt in 1..=3 {
        let (sim, eng, c) = attempt_run(attempt, name, s);
        let checks = [
            (
                "deferred reads",
                deferred(&eng) as f64 / deferred(&sim) as f64,
                0.8..1.25,
                format!("{} vs {}", deferred(&eng), deferred(&sim)),
            ),
            (
                "fetches",
                c.fetches.1 as f64 / c.fetches.0 as f64,
                0.5..1.5,
                format!("{} vs {}", c.fetches.1, c.fetches.0),
            ),
            (
                "time",
                eng.elapsed_s / sim.elapsed_s,
                0.8..1.6,
                format!("{:.3} s vs {:.3} s", eng.elapsed_s, sim.elapsed_s),
            ),
            (
                "device bytes",
                eng.device_bytes as f64 / sim.device_bytes as f64,
                0.85..1.4,
                format!("{} vs {}", eng.device_bytes, sim.device_bytes),
            ),
        ];
        let missed: Vec<String> = checks
            .iter()
            .filter(|(_, ratio, bounds, _)| !bounds.contains(ratio))
            .map(|(what, ratio, bounds, figures)| {
                format!("{what}, engine/sim {ratio:.2} ({figures}), outside {bounds:?}")
            })
            .collect();
        eprintln!(
            "{name}: attempt {attempt}: {}",
            checks
                .iter()
                .map(|(what, ratio, _, figures)| format!("{what} {ratio:.2} ({figures})"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        if missed.is_empty() {
            return;
        }
        failures.push(format!("attempt {attempt}: {}", missed.join("; ")));
    }
    panic!(
        "{name}: no attempt of three within every bound:\n{}",
        failures.join("\n")
    );
}

/// `saseqp` (paper 000) over a RAID-0 of four WD800JDs with 64 KiB strips, compared by decisions
/// and costs.
#[test]
fn four_streams_under_saseqp_on_raid0_decide_the_same_in_both_worlds() {
    let s = Scenario {
        raid0: Some((4, 64 << 10)),
        policy: "saseqp".into(),
        readahead_max: ByteLen::kib(512),
        ..Scenario::four_streams_seqp_wd800jd()
    };
    let (sim, engine, c) = run_both("saseqp-raid0", &s);
    same_decisions(&c);
    same_costs_on_raid0("saseqp-raid0", &s, &sim, &engine);
}

/// The `saseqp` scenario on the RAID-0 under the `anticipatory` scheduler (paper 000's testbed
/// ran Linux 2.6's as-iosched), compared by decisions and costs. Each member disk waits after a
/// stream's read for that stream's next one, in the simulator's block queue and in the emulated
/// backend's, which is the same queue. The simulator takes 0.32 s (0.98 s under `deadline`), and
/// the engine took 0.28 to 0.34 s in four runs, so an array that did not anticipate would fail the
/// time bound.
#[test]
fn four_streams_under_saseqp_on_raid0_with_anticipation_cost_the_same_in_both_worlds() {
    let s = Scenario {
        raid0: Some((4, 64 << 10)),
        policy: "saseqp".into(),
        readahead_max: ByteLen::kib(512),
        scheduler: "anticipatory".into(),
        ..Scenario::four_streams_seqp_wd800jd()
    };
    let (sim, engine, c) = run_both("saseqp-raid0-antic", &s);
    same_decisions(&c);
    same_costs_on_raid0("saseqp-raid0-antic", &s, &sim, &engine);
}

/// Two clients reading one shared 64 MiB file at random places, 48 reads of 8 KiB each, thinking
/// 10 ms between reads (the simulator's `random` workload), with no prefetching, under the
/// `anticipatory` scheduler holding the disk up to 30 ms: each of the file's two readers is a
/// stream of its own to the scheduler in both worlds (the simulator tags a block request with the
/// application stream, the engine's reads name their reader), so after a reader's read the disk
/// waits out that reader's think time for its next read. The simulator takes 1.15 s (0.84 s under
/// `deadline`); the engine took 1.16 s, and 0.85 to 0.87 s while its emulated backend charged
/// each read to the file, which made the two readers one stream whose next read, the other
/// reader's, never waited. Compared by reads and misses, device bytes and time, as the RAID-0
/// scenarios are. The places are distinct, so no read finds another's data cached (the simulator
/// keeps read pages, the engine frees a chunk once it has been read). The time may be at most 10%
/// short of the simulator's, not 20%: the engine's clients think at least as long as the
/// simulator's (a sleep never ends early), and its drive is the same model, so an engine much
/// faster than the simulator waited less for a reader than the simulator did.
#[test]
fn two_readers_of_one_file_under_anticipation_cost_the_same_in_both_worlds() {
    let s = Scenario {
        workload: Workload::Random { requests: 48 },
        streams: 2,
        file_bytes: 64 << 20,
        request_bytes: 8 << 10,
        policy: "none".into(),
        scheduler: "anticipatory".into(),
        antic_expire: Some(Duration::from_millis(30)),
        think: Duration::from_millis(10),
        seed: 2,
        ..Scenario::four_streams_seqp_wd800jd()
    };
    let mut places: Vec<u64> = plans(&s).unwrap().concat().iter().map(|r| r.0).collect();
    places.sort_unstable();
    let n = places.len();
    places.dedup();
    assert_eq!(
        places.len(),
        n,
        "seed {}: a place drawn twice; pick another seed",
        s.seed
    );
    let (sim, engine, c) = run_both("random-shared-antic", &s);
    assert!(c.per_stream_equal, "{:?}", c.first_difference);
    same_costs_within("random-shared-antic", &s, &sim, &engine, 0.9);
}

/// The stream scheduler (paper 001) with `D` = 2 streams dispatched at a time, `R` = 512 KiB per
/// read, `N` = 2 reads per turn and `M` = 8 MiB, under four sequential clients. The simulator
/// runs it at the block level, below a page cache that reads on demand, where it sees volume
/// bytes and one anonymous stream; the engine runs the same scheduler over files. The
/// simulator's decisions are restated in the engine's files (`WorldRun::in_files`, in `run_both`)
/// before they are compared; its fetches that run past the end of a file (the block level does not know
/// where a file ends) are clipped there, where the engine's scheduler stops its streams, so the device
/// reads a little more in the simulator and device bytes are not compared (and those that start
/// past a file's end are left out: see the scenario on files that end halfway through a turn).
///
/// With two dispatch slots for four clients, which streams take the first turns follows the
/// order in which the clients' first reads arrive. The simulator starts them in client order;
/// the engine's client threads usually do too, but on a machine loaded by other work a thread
/// can start late, and then another stream takes its slot (about half the runs with two busy
/// processes beside the test on two cores). A run whose decisions differ is therefore run again,
/// up to three runs in all; a scheduler that decides differently fails all three.
///
/// The time must agree within -20% and +20%. A turn's second read is issued when its first
/// completes, while the other dispatched stream's read waits in the queue, and both worlds serve
/// that waiting read first: 0.79 s in the simulator, 0.78 s in the engine. While the simulator
/// let the scheduler's answer into the queue before it fed the disk, it served the turn's second
/// read at once and took 0.61 s, the engine 1.28 times that in every run, which the factor of
/// three this scenario allowed then let pass.
#[test]
fn four_streams_under_the_stream_scheduler_decide_the_same_in_both_worlds() {
    decide_alike_in_time(
        "streams",
        &four_streams_under_the_stream_scheduler(),
        0.8..1.2,
    );
}

/// The stream scheduler scenario on files of 3.5 MiB, which end halfway through a turn (`N` = 2
/// reads of 512 KiB from each megabyte): the engine's scheduler over files ends the turn at the
/// file's end, while the simulator's, at the block level, issues the turn's second read into the
/// space after the file. That read is no decision about the file, so the restated run leaves it
/// out, and the two worlds must decide alike as on files a whole number of turns long (the
/// restatement used to keep it as an empty fetch at the file's end: 32 fetches against 28).
#[test]
fn streams_on_files_that_end_halfway_through_a_turn_decide_the_same_in_both_worlds() {
    let s = Scenario {
        file_bytes: 7 << 19,
        ..four_streams_under_the_stream_scheduler()
    };
    decide_alike_in_time("streams-mid-turn", &s, 0.8..1.2);
}

/// The stream scheduler scenario: `D` = 2, `R` = 512 KiB, `N` = 2, `M` = 8 MiB, four clients.
fn four_streams_under_the_stream_scheduler() -> Scenario {
    Scenario {
        policy: "streams".into(),
        policy_sets: vec![
            "policy.readahead=512KiB".into(),
            "policy.dispatch=2".into(),
            "policy.per_turn=2".into(),
            "policy.memory=8MiB".into(),
        ],
        ..Scenario::four_streams_seqp_wd800jd()
    }
}

/// Whether two runs of a timing-independent scenario decided alike (see [`same_decisions`]).
fn decided_alike(c: &Comparison) -> bool {
    c.fetches.0 > 0 && c.per_stream_equal && c.fetch_sequences_equal && c.fetches.0 == c.fetches.1
}

/// The stream scheduler scenario under `anticipatory`: each disk waits after a stream's fetch for
/// that stream's next one, so a turn's `N` reads are served back to back in both worlds, and a
/// stream runs its turns to the end of its file before the next client reads again. Its file is
/// then forgotten (the engine's `FileClosed`) while the other clients have read once; the
/// scheduler used to forget their first reads' classifier regions with it, and each of those
/// clients read once more on demand before becoming a stream (22 or 23 misses against the
/// simulator's 20, in every run). Compared by decisions and time (within -20% and +30%: 0.399 s
/// against 0.400 s); one attempt of up to three, each printed, must meet both (the clients'
/// threads may start out of order on a loaded machine, as in the scenario under `deadline`).
#[test]
fn four_streams_under_the_stream_scheduler_with_anticipation_decide_the_same_in_both_worlds() {
    let s = Scenario {
        scheduler: "anticipatory".into(),
        ..four_streams_under_the_stream_scheduler()
    };
    decide_alike_in_time("streams-antic", &s, 0.8..1.3);
}

/// Runs `s` in both worlds until one attempt of up to three, each printed, decides alike and
/// takes the simulator's time within `time_bounds` (engine/sim).
fn decide_alike_in_time(name: &str, s: &Scenario, time_bounds: std::ops::Range<f64>) {
    let mut failures = Vec::new();
    for attempt in 1..=3 {
        let (sim, engine, c) = attempt_run(attempt, name, s);
        let time = engine.elapsed_s / sim.elapsed_s;
        let mut missed = Vec::new();
        if !decided_alike(&c) {
            missed.push(format!(
                "decided otherwise ({} vs {} fetches): {:?}",
                c.fetches.1, c.fetches.0, c.first_difference
            ));
        }
        if !time_bounds.contains(&time) {
            missed.push(format!(
                "time, engine/sim {time:.2} ({:.3} s vs {:.3} s), outside {time_bounds:?}",
                engine.elapsed_s, sim.elapsed_s
            ));
        }
        eprintln!(
            "{name}: attempt {attempt}: decisions alike {}, time {time:.2} ({:.3} s vs {:.3} s)",
            decided_alike(&c),
            engine.elapsed_s,
            sim.elapsed_s
        );
        if missed.is_empty() {
            return;
        }
        failures.push(format!("attempt {attempt}: {}", missed.join("; ")));
    }
    panic!(
        "{name}: no attempt of three decided alike in time:\n{}",
        failures.join("\n")
    );
}

/// `msp+saseqp` (paper 000, section 4) on a RAID-0 of five Cheetah 15K.4s with 128 KiB strips:
/// `streams` readers of 16 MiB each in 64 KiB requests, SASEQP's windows up to one strip, MSP
/// with the paper's thresholds in a 512 MiB RAID driver's cache, in the simulator's block-level
/// layer and in the engine's array cache (`backend::array`).
fn msp_on_cheetah_raid0(streams: u32) -> Scenario {
    Scenario {
        device: "cheetah-15k4".into(),
        raid0: Some((5, 128 << 10)),
        streams,
        file_bytes: 16 << 20,
        policy: "msp+saseqp".into(),
        readahead_max: ByteLen::kib(128),
        raid_cache: ByteLen::mib(512),
        ..Scenario::four_streams_seqp_wd800jd()
    }
}

/// Bytes of `fetches` (volume ranges) that lie in none of `files`: the engine's array cache
/// reads nothing there (it has no volume bytes outside its files), the simulator's reads the
/// volume.
fn outside_files(
    fetches: &[foresight_core::ByteRange],
    files: &[foresight_policy::layout::FileLayout],
) -> u64 {
    fetches
        .iter()
        .map(|r| {
            let inside: u64 = files
                .iter()
                .flat_map(|f| &f.extents)
                .map(|e| {
                    let a = r.start.0.max(e.volume_offset.0);
                    let b = r.end().0.min(e.volume_offset.0 + e.len.0);
                    b.saturating_sub(a)
                })
                .sum();
            r.len.0 - inside
        })
        .sum()
}

/// The device bytes and the time, compared across worlds. The engine reads the simulator's
/// device bytes but those of MSP's fetches that fall outside every file, which the simulator reads
/// from the volume and the engine's array cache cannot (it has no bytes there): so the engine's
/// bytes lie between the simulator's less all of MSP's fetched bytes outside the files (an upper
/// bound on what the simulator read there, as it stops when the last read returns) and the
/// simulator's, each within 1%. The time is bounded as on every RAID-0 scenario.
fn msp_costs(name: &str, s: &Scenario, sim: &WorldRun, engine: &WorldRun) {
    let outside = outside_files(&sim.array_fetches, &engine.files);
    eprintln!(
        "{name}: MSP fetches {} vs {}; device bytes {} (MSP fetched {outside} outside the files) \
         vs {}; time {:.3} s vs {:.3} s",
        sim.array_fetches.len(),
        engine.array_fetches.len(),
        sim.device_bytes,
        engine.device_bytes,
        sim.elapsed_s,
        engine.elapsed_s
    );
    let low = sim.device_bytes.saturating_sub(outside) as f64 * 0.99;
    let high = sim.device_bytes as f64 * 1.01;
    assert!(
        (low..=high).contains(&(engine.device_bytes as f64)),
        "{name}: engine device bytes {} outside [{low:.0}, {high:.0}]",
        engine.device_bytes
    );
    similar_time_on_raid0(name, s, sim, engine, 0.8);
}

/// One reader: MSP sees the same strips in the same order in both worlds, so it fetches the same
/// stripes in the same order; SASEQP decides the same above it.
#[test]
fn one_stream_under_msp_saseqp_on_raid0_fetches_the_same_stripes_in_both_worlds() {
    let s = msp_on_cheetah_raid0(1);
    let (sim, engine, c) = run_both("msp-1", &s);
    same_decisions(&c);
    assert!(!sim.array_fetches.is_empty(), "MSP never fetched");
    assert_eq!(
        sim.array_fetches, engine.array_fetches,
        "MSP's stripe fetches"
    );
    msp_costs("msp-1", &s, &sim, &engine);
}

/// One reader under plain SASEQP on the array MSP runs on: two 128 KiB windows in flight, each a
/// strip of its own member, and each member's next strip asked for four windows later. The drives'
/// read-ahead serves most windows from their caches; a window asked for after its drive has
/// stopped reading ahead waits about a revolution (4 ms). The simulator's host answers a
/// completion in no time (and copies a 64 KiB read in 6.1 us); the engine's takes a thread's
/// wake-up and a pass through the driver
/// (about 30 us from the model's completion to its delivery, and 25 to 35 us more to the next
/// window's submission, in release builds), enough to make more windows miss the read-ahead. The
/// simulator's client thinking 15 us between reads costs it 3% of its throughput, 30 us 20%. So
/// the decisions and device bytes are equal, and the time is allowed +50% (debug builds, sixteen
/// runs alone and in the suite: 1.32 to 1.41 times the simulator's 0.084 s). See ARCHITECTURE.md,
/// "One fast stream on a fast array".
#[test]
fn one_stream_under_saseqp_on_cheetah_raid0_decides_the_same_and_pays_the_hosts_latency() {
    let s = Scenario {
        policy: "saseqp".into(),
        raid_cache: ByteLen(0),
        ..msp_on_cheetah_raid0(1)
    };
    let (sim, engine, c) = run_both("saseqp-1-cheetah", &s);
    same_decisions(&c);
    assert_eq!(
        sim.device_bytes, engine.device_bytes,
        "device bytes, sim against engine"
    );
    similar_time_between("saseqp-1-cheetah", &s, &sim, &engine, 0.8, 1.5);
}

/// Four readers, each file in its own quarter of the volume: MSP's one detector sees their
/// strips interleaved, so its sequential counter stays below the threshold and it stays off in
/// the simulator (paper 000, section 4: MSP is off for many interleaved streams, which SASEQP
/// serves); SASEQP decides the same above it, and the array costs the same. In the engine the
/// interleaving is the threads': in one run of about twenty MSP turned on (the operating system
/// let one reader run several reads in a row), so the engine's MSP fetches are not required to
/// be none, but whatever it fetched must cost what the simulator's run costs.
#[test]
fn four_streams_under_msp_saseqp_on_raid0_cost_the_same_in_both_worlds() {
    let s = msp_on_cheetah_raid0(4);
    let (sim, engine, c) = run_both("msp-4", &s);
    same_decisions(&c);
    assert!(
        sim.array_fetches.is_empty(),
        "MSP turned on for interleaved streams"
    );
    msp_costs("msp-4", &s, &sim, &engine);
}
