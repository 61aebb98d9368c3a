//! One scenario, two worlds: the simulator and the engine's emulated backend, compared.
//!
//! A [`Scenario`] is N clients each reading its own file sequentially with fixed-size requests,
//! one outstanding, on one modelled drive, files spread over the disk (the simulator's `streams`
//! workload). [`run_sim`] runs it in the simulator; [`run_engine`] runs it through the real engine
//! on the `emulated` backend with the same device preset and placement, one thread per client
//! reading a real file. Both record the policy's inputs and outputs ([`crate::recording`]).
//!
//! What must match, and why not more. The policy is the same object in both worlds, so given the
//! same inputs it makes the same decisions. Each client's inputs (its reads and their first
//! missing byte) depend only on its own earlier reads and the fetches issued for its own file, so
//! per client the sequence of reads, misses and fetch ranges must be identical: that is what
//! [`compare`] asserts, together with the bytes each client received. The interleaving of the
//! clients' decisions, by contrast, is not a property of the policy: in the engine the clients are
//! operating-system threads, and which of two reads that become ready within microseconds of each
//! other reaches the policy first is up to the scheduler; the emulated device also sees requests
//! at the real instants they are issued, which differ from the simulator's by the host's own
//! latencies. The global sequence is therefore reported ([`Comparison::global_equal`]) but not
//! required; fetch ids, which number decisions globally, are left out of the per-client
//! comparison for the same reason.

use std::collections::BTreeMap;
use std::hash::Hasher;
use std::io::Read;
use std::path::{Path, PathBuf};

use foresight_core::{ByteLen, ByteOffset, ByteRange, StreamId};
use foresight_engine::{Backend, EmulatedConfig, Engine};
use foresight_policy::{Input, Output};
use foresight_sim::config::{apply_set, SimConfig};
use foresight_sim::RunOptions;

use crate::recording::{Decision, DecisionLog};

/// A scenario both worlds can run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scenario {
    /// The drive preset (see `foresight devices`).
    pub device: String,
    /// Clients, each reading its own file.
    pub streams: u32,
    /// Bytes per file.
    pub file_bytes: u64,
    /// Bytes per request.
    pub request_bytes: u64,
    /// The policy.
    pub policy: String,
    /// Its largest readahead window (given to the simulator only under a policy with windows,
    /// whose config refuses the key otherwise).
    pub readahead_max: ByteLen,
    /// The memory budget (page cache in the simulator, buffer pool in the engine).
    pub memory: ByteLen,
}

impl Scenario {
    /// Four clients reading 4 MiB each with 64 KiB requests under `seqp` (128 KiB windows) on one
    /// WD800JD: the paper-001 setting, small enough to run in a second or two of real time.
    pub fn four_streams_seqp_wd800jd() -> Scenario {
        Scenario {
            device: "wd800jd".into(),
            streams: 4,
            file_bytes: 4 << 20,
            request_bytes: 64 << 10,
            policy: "seqp".into(),
            readahead_max: ByteLen::kib(128),
            memory: ByteLen::mib(256),
        }
    }
}

/// One client's view: its reads, what the policy answered to each, and the bytes it got.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamTrace {
    /// Each read: the range and the first missing byte, with the ranges the policy fetched in
    /// answer.
    pub reads: Vec<(ByteRange, Option<ByteOffset>, Vec<ByteRange>)>,
    /// Bytes the client received.
    pub bytes: u64,
    /// A hash of those bytes, in order.
    pub bytes_hash: u64,
}

/// What one world did.
#[derive(Clone, Debug)]
pub struct WorldRun {
    /// `"sim"` or `"engine"`.
    pub world: &'static str,
    /// Per client, by stream id.
    pub streams: Vec<StreamTrace>,
    /// Every decision, in order.
    pub decisions: Vec<Decision>,
    /// Seconds the run took (simulated, or real time on the emulated device).
    pub elapsed_s: f64,
    /// Application throughput over that time, MiB/s.
    pub throughput_mib_s: f64,
}

/// The result of [`compare`].
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// Per client, the same reads, misses and fetch ranges in the same order.
    pub per_stream_equal: bool,
    /// Per client, the same bytes.
    pub bytes_equal: bool,
    /// The whole sequence of decisions, across clients, in the same order (not required; see
    /// the module documentation).
    pub global_equal: bool,
    /// Fetches in each world.
    pub fetches: (usize, usize),
    /// The first difference, if any.
    pub first_difference: Option<String>,
}

fn hasher() -> impl Hasher {
    #[allow(deprecated)]
    std::hash::SipHasher::new()
}

fn fetch_ranges(outputs: &[Output]) -> Vec<ByteRange> {
    outputs
        .iter()
        .filter_map(|o| match o {
            Output::Fetch { range, .. } => Some(*range),
            _ => None,
        })
        .collect()
}

/// Splits a decision log into per-client traces (the reads of stream `s` and their answers).
fn traces(decisions: &[Decision], streams: u32) -> Vec<StreamTrace> {
    let mut out = vec![StreamTrace::default(); streams as usize];
    for d in decisions {
        if let Some(Input::Read {
            stream,
            range,
            miss,
            ..
        }) = &d.input
        {
            if let Some(t) = out.get_mut(stream.0 as usize) {
                t.reads.push((*range, *miss, fetch_ranges(&d.outputs)));
            }
        }
    }
    out
}

/// A world-independent key for a decision: what was asked and what was answered, without fetch
/// ids.
fn key(d: &Decision) -> String {
    let input = match &d.input {
        Some(Input::Read {
            stream,
            range,
            miss,
            ..
        }) => format!("read {} {range} miss {:?}", stream.0, miss.map(|m| m.0)),
        Some(Input::Fetched { ok, .. }) => format!("fetched {ok}"),
        Some(other) => format!("{other:?}"),
        None => "timer".into(),
    };
    format!("{input} -> {:?}", fetch_ranges(&d.outputs))
}

/// Runs the scenario in the simulator. `files` are the files' bytes (the simulator reads none; the
/// bytes a client would get are the file's bytes over the ranges it read).
pub fn run_sim(s: &Scenario, files: &[Vec<u8>]) -> Result<WorldRun, String> {
    let mut table = toml::Table::new();
    let mut sets = vec![
        format!("device.preset={}", s.device),
        format!("policy.name={}", s.policy),
        "workload.kind=streams".to_string(),
        format!("workload.streams={}", s.streams),
        format!("workload.request={}", s.request_bytes),
        format!("workload.file_size={}", s.file_bytes),
        format!("host.memory={}", s.memory.0),
    ];
    if s.policy.ends_with("seqp") {
        sets.push(format!("policy.readahead_max={}", s.readahead_max.0));
    }
    for set in sets {
        apply_set(&mut table, &set).map_err(|e| e.to_string())?;
    }
    let cfg = SimConfig::from_table(table, None).map_err(|e| e.to_string())?;
    let log = DecisionLog::new();
    let out = foresight_sim::sim::run_wrapped(
        &cfg,
        RunOptions {
            record_requests: true,
            progress: None,
        },
        &mut |p| log.wrap(p),
    )
    .map_err(|e| e.to_string())?;
    let decisions = log.decisions();
    let mut streams = traces(&decisions, s.streams);
    let mut records = out.requests.clone();
    records.sort_by(|a, b| a.submit_s.total_cmp(&b.submit_s).then(a.id.cmp(&b.id)));
    for (i, t) in streams.iter_mut().enumerate() {
        let mut h = hasher();
        for r in records.iter().filter(|r| r.stream as usize == i) {
            let f = &files[i];
            let end = ((r.offset + r.bytes) as usize).min(f.len());
            h.write(&f[r.offset as usize..end]);
            t.bytes += (end - r.offset as usize) as u64;
        }
        t.bytes_hash = h.finish();
    }
    Ok(WorldRun {
        world: "sim",
        streams,
        decisions,
        elapsed_s: out.report.elapsed_s,
        throughput_mib_s: out.report.throughput_mib_s,
    })
}

/// Runs the scenario through the real engine on the emulated backend; `paths[i]` is client `i`'s
/// file.
pub fn run_engine(s: &Scenario, paths: &[PathBuf]) -> Result<WorldRun, String> {
    let emulated = EmulatedConfig::preset(&s.device)
        .map_err(|e| e.to_string())?
        .spread(s.streams);
    let log = DecisionLog::new();
    let recorder = log.clone();
    let engine = Engine::builder()
        .backend(Backend::Emulated(emulated))
        .policy(&s.policy)
        .readahead_max(s.readahead_max)
        .memory(s.memory)
        .queue_depth(32)
        .wrap_policy(Box::new(move |p| recorder.wrap(p)))
        .build()
        .map_err(|e| e.to_string())?;
    // Open in client order, so stream i reads file i, as in the simulator.
    let readers = paths
        .iter()
        .take(s.streams as usize)
        .map(|p| engine.open(p).map_err(|e| e.to_string()))
        .collect::<Result<Vec<_>, _>>()?;
    for (i, r) in readers.iter().enumerate() {
        if r.handle().stream != StreamId(i as u32) {
            return Err(format!("reader {i} got {:?}", r.handle().stream));
        }
    }
    let started = std::time::Instant::now();
    let request = s.request_bytes as usize;
    let handles: Vec<_> = readers
        .into_iter()
        .map(|mut r| {
            std::thread::spawn(move || -> std::io::Result<(u64, u64)> {
                let mut h = hasher();
                let mut buf = vec![0u8; request];
                let mut total = 0u64;
                loop {
                    let n = r.read(&mut buf)?;
                    if n == 0 {
                        return Ok((total, h.finish()));
                    }
                    h.write(&buf[..n]);
                    total += n as u64;
                }
            })
        })
        .collect();
    let mut got = Vec::new();
    for h in handles {
        got.push(
            h.join()
                .map_err(|_| "a client thread panicked".to_string())?
                .map_err(|e| e.to_string())?,
        );
    }
    let elapsed_s = started.elapsed().as_secs_f64();
    let decisions = log.decisions();
    let mut streams = traces(&decisions, s.streams);
    for (t, (bytes, hash)) in streams.iter_mut().zip(got) {
        t.bytes = bytes;
        t.bytes_hash = hash;
    }
    let total: u64 = streams.iter().map(|t| t.bytes).sum();
    Ok(WorldRun {
        world: "engine",
        streams,
        decisions,
        elapsed_s,
        throughput_mib_s: total as f64 / (1u64 << 20) as f64 / elapsed_s.max(1e-9),
    })
}

/// Compares two runs of the same scenario.
pub fn compare(a: &WorldRun, b: &WorldRun) -> Comparison {
    let mut first = None;
    let mut per_stream_equal = a.streams.len() == b.streams.len();
    let mut bytes_equal = per_stream_equal;
    for (i, (x, y)) in a.streams.iter().zip(&b.streams).enumerate() {
        if x.reads != y.reads {
            per_stream_equal = false;
            if first.is_none() {
                let k = x
                    .reads
                    .iter()
                    .zip(&y.reads)
                    .position(|(p, q)| p != q)
                    .unwrap_or(x.reads.len().min(y.reads.len()));
                first = Some(format!(
                    "stream {i}, read {k}: {} {:?} vs {} {:?}",
                    a.world,
                    x.reads.get(k),
                    b.world,
                    y.reads.get(k)
                ));
            }
        }
        if (x.bytes, x.bytes_hash) != (y.bytes, y.bytes_hash) {
            bytes_equal = false;
            if first.is_none() {
                first = Some(format!(
                    "stream {i}: {} got {} bytes (hash {:x}), {} got {} (hash {:x})",
                    a.world, x.bytes, x.bytes_hash, b.world, y.bytes, y.bytes_hash
                ));
            }
        }
    }
    let keys = |w: &WorldRun| -> Vec<String> {
        w.decisions
            .iter()
            .filter(|d| matches!(d.input, Some(Input::Read { .. })))
            .map(key)
            .collect()
    };
    let count = |w: &WorldRun| {
        w.decisions
            .iter()
            .map(|d| fetch_ranges(&d.outputs).len())
            .sum::<usize>()
    };
    Comparison {
        per_stream_equal,
        bytes_equal,
        global_equal: keys(a) == keys(b),
        fetches: (count(a), count(b)),
        first_difference: first,
    }
}

/// Writes `files` under `dir` as `client-{i}.dat` and returns their paths.
pub fn write_files(dir: &Path, files: &[Vec<u8>]) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    files
        .iter()
        .enumerate()
        .map(|(i, bytes)| {
            let p = dir.join(format!("client-{i}.dat"));
            std::fs::write(&p, bytes)?;
            Ok(p)
        })
        .collect()
}

/// Deterministic file contents for client `i`.
pub fn file_bytes(len: u64, i: u64) -> Vec<u8> {
    let mut rng = foresight_core::Rng::new(0xF0E5_1687 ^ i);
    let mut v = Vec::with_capacity(len as usize + 8);
    while (v.len() as u64) < len {
        v.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    v.truncate(len as usize);
    v
}

/// Per-client read counts, for reports.
pub fn reads_per_stream(w: &WorldRun) -> BTreeMap<usize, usize> {
    w.streams
        .iter()
        .enumerate()
        .map(|(i, t)| (i, t.reads.len()))
        .collect()
}
