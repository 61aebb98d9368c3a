//! One scenario, two worlds: the simulator and the engine's emulated backend, compared.
//!
//! A [`Scenario`] is N clients, each reading its own file with one request outstanding (and
//! thinking between requests if asked, as the simulator's clients do), on one
//! modelled drive or a RAID-0 of them, files spread over the volume: front to back
//! ([`Workload::Sequential`], the simulator's `streams` workload), or in an order disclosed up
//! front as one hint ([`Workload::Scan`], [`Workload::Gaps`], the simulator's `scan` and `gaps`);
//! or all N reading one shared file at seeded random places ([`Workload::Random`], the
//! simulator's `random`), so that a file's readers are not the file.
//! [`run_sim`] runs it in the simulator; [`run_engine`] runs it through the real engine on the
//! `emulated` backend with the same device, placement and policy settings, one thread per client
//! reading a real file and issuing the reads the simulator's client issues (the same seeded plan,
//! hinted just before the first read). Both record the policy's inputs and outputs
//! ([`crate::recording`]).
//!
//! What must match, and why not more. The policy is the same object in both worlds, so given the
//! same inputs it makes the same decisions. Each client's inputs (its reads, its hint, and the
//! first missing byte of each read) depend only on its own earlier reads and the fetches issued
//! for its own file, so per client the sequence of reads, misses and answers (fetch, deferral and
//! release ranges) must be identical, and so must the sequence of ranges fetched from its file,
//! whatever prompted each: that is what [`compare`] checks, together with the bytes each client
//! received. The interleaving of the clients' decisions, by contrast, is not a property of the
//! policy: in the engine the clients are operating-system threads, and which of two reads that
//! become ready within microseconds of each other reaches the policy first is up to the
//! scheduler; the emulated device also sees requests at the real instants they are issued, which
//! differ from the simulator's by the host's own latencies. The global sequence is therefore
//! reported ([`Comparison::global_equal`]) but not required; fetch ids, which number decisions
//! globally, are left out of the per-client comparison for the same reason. A policy whose
//! answer to a read depends on which of its fetches have completed by then (`directed` with a
//! window smaller than the hinted reads) makes timing-dependent decisions; its scenarios compare
//! bytes and costs instead (see the suite).

use std::collections::BTreeMap;
use std::hash::Hasher;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};

use foresight_core::{ByteLen, ByteOffset, ByteRange, Duration, FileId, StreamId};
use foresight_engine::{Backend, EmulatedConfig, Engine};
use foresight_policy::layout::{FileLayout, VOLUME_FILE};
use foresight_policy::{Input, Output};
use foresight_sim::config::{apply_set, SimConfig};
use foresight_sim::RunOptions;

use crate::recording::{Decision, DecisionLog};

/// What each client reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Workload {
    /// Its own file, front to back, one request after another (the simulator's `streams`).
    Sequential,
    /// Its own file in pages of `request_bytes`, in a seeded random order disclosed up front as
    /// one hint (the simulator's `scan`, paper 003's index scan).
    Scan,
    /// Reads of `request_bytes` in increasing order, each `gap_bytes` after the end of the last,
    /// disclosed up front (the simulator's `gaps`, paper 003's infill sweep).
    Gaps {
        /// Bytes between one read's end and the next read.
        gap_bytes: u64,
    },
    /// Every client reads the one file 0, `requests` reads of `request_bytes` each at
    /// request-aligned places drawn from its own seeded generator (the simulator's `random`).
    Random {
        /// Reads per client.
        requests: u64,
    },
}

impl Workload {
    /// The file client `client` reads: its own, or the shared one.
    pub fn file_of(&self, client: usize) -> usize {
        match self {
            Workload::Random { .. } => 0,
            _ => client,
        }
    }

    /// How many files `streams` clients read.
    pub fn files(&self, streams: u32) -> u32 {
        match self {
            Workload::Random { .. } => 1,
            _ => streams,
        }
    }
}

/// A scenario both worlds can run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scenario {
    /// The drive preset (see `foresight devices`).
    pub device: String,
    /// A RAID-0 of `disks` such drives with strips of `strip_bytes`, instead of one drive.
    pub raid0: Option<(u32, u64)>,
    /// What each client reads.
    pub workload: Workload,
    /// Clients, each reading its own file (but under [`Workload::Random`]).
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
    /// The engine's budget, when it is not `memory`. The engine keeps the last eighth of its
    /// budget (at least one largest read) for the application's own reads, where the simulator's
    /// page cache lets prefetches use all of it, so a scenario whose memory binds gives the engine
    /// that much more for the same room to prefetch.
    pub engine_memory: Option<ByteLen>,
    /// The RAID driver's cache under `msp+...` (the simulator's `host.raid_cache`, the engine's
    /// `EngineBuilder::raid_cache`); zero for none.
    pub raid_cache: ByteLen,
    /// Further `policy.KEY=VALUE` settings, in the simulator's `--set` syntax; the engine gets
    /// the policy settings the simulator's config parsed from them.
    pub policy_sets: Vec<String>,
    /// The host block queues' scheduler (`noop`, `deadline` or `anticipatory`), the simulator's
    /// `host.scheduler` and the emulated backend's `EmulatedConfig::scheduler`.
    pub scheduler: String,
    /// How long an anticipatory queue holds its disk for a stream's next read, when not the
    /// simulator's default 6 ms (`host.antic_expire`, `EmulatedConfig::antic_expire`).
    pub antic_expire: Option<Duration>,
    /// The time each client spends between one read completing and issuing the next (the
    /// simulator's `workload.think`; the engine's clients sleep it, in real time).
    pub think: Duration,
    /// The seed of the simulator's draws (placement and the disclosed orders), which the engine's
    /// clients replay.
    pub seed: u64,
}

impl Scenario {
    /// Four clients reading 4 MiB each with 64 KiB requests under `seqp` (128 KiB windows) on one
    /// WD800JD: the paper-001 setting, small enough to run in a second or two of real time.
    pub fn four_streams_seqp_wd800jd() -> Scenario {
        Scenario {
            device: "wd800jd".into(),
            raid0: None,
            workload: Workload::Sequential,
            streams: 4,
            file_bytes: 4 << 20,
            request_bytes: 64 << 10,
            policy: "seqp".into(),
            readahead_max: ByteLen::kib(128),
            memory: ByteLen::mib(256),
            engine_memory: None,
            raid_cache: ByteLen(0),
            policy_sets: Vec::new(),
            scheduler: "deadline".into(),
            antic_expire: None,
            think: Duration::ZERO,
            seed: 1,
        }
    }
}

/// One read as a client's policy saw it, and what the policy answered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadStep {
    /// The bytes asked for.
    pub range: ByteRange,
    /// The first byte neither cached nor in flight.
    pub miss: Option<ByteOffset>,
    /// The ranges the policy fetched in answer.
    pub fetches: Vec<ByteRange>,
    /// The ranges it told the driver to let the read wait for (`Output::Defer`).
    pub defers: Vec<ByteRange>,
    /// The ranges it released in answer.
    pub releases: Vec<ByteRange>,
}

/// One client's view: its reads, what the policy answered to each, and the bytes it got.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamTrace {
    /// Each read, in the client's order.
    pub reads: Vec<ReadStep>,
    /// The ranges the client disclosed (in hints, in order) and the fetches answered to each hint.
    pub hints: Vec<(usize, Vec<ByteRange>)>,
    /// Every range fetched from the client's file, in the order the policy asked, whatever input
    /// prompted it (a read, a hint, a completion, a memory report or the policy's timer).
    pub fetches: Vec<ByteRange>,
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
    /// Where the driver placed the clients' files on its volume, as it told the policy (the
    /// engine; the simulator gives its policies the whole layout up front, so this is empty).
    pub files: Vec<FileLayout>,
    /// Seconds the run took (simulated, or real time on the emulated device).
    pub elapsed_s: f64,
    /// Bytes the (modelled) device read.
    pub device_bytes: u64,
    /// Under `msp+...`, the volume ranges the array policy (MSP) fetched, in the order it asked.
    pub array_fetches: Vec<ByteRange>,
    /// Application throughput over that time, MiB/s.
    pub throughput_mib_s: f64,
}

/// The result of [`compare`].
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// Per client, the same reads, misses and answers to each read and hint, in the same order.
    pub per_stream_equal: bool,
    /// Per client, the same fetch ranges of its file in the same order, whatever prompted them.
    pub fetch_sequences_equal: bool,
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

/// Splits a decision log into per-client traces. Client `s` reads file `s` (both drivers open
/// the files in client order), so a fetch belongs to the client whose file it reads.
fn traces(decisions: &[Decision], streams: u32) -> Vec<StreamTrace> {
    let mut out = vec![StreamTrace::default(); streams as usize];
    for d in decisions {
        for o in &d.outputs {
            if let Output::Fetch { file, range, .. } = o {
                if let Some(t) = out.get_mut(file.0 as usize) {
                    t.fetches.push(*range);
                }
            }
        }
        match &d.input {
            Some(Input::Read {
                stream,
                range,
                miss,
                ..
            }) => {
                if let Some(t) = out.get_mut(stream.0 as usize) {
                    let mut step = ReadStep {
                        range: *range,
                        miss: *miss,
                        ..ReadStep::default()
                    };
                    for o in &d.outputs {
                        match o {
                            Output::Fetch { range, .. } => step.fetches.push(*range),
                            Output::Defer { range, .. } => step.defers.push(*range),
                            Output::Release { range, .. } => step.releases.push(*range),
                            _ => {}
                        }
                    }
                    t.reads.push(step);
                }
            }
            Some(Input::Hint { stream, ranges, .. }) => {
                if let Some(t) = out.get_mut(stream.0 as usize) {
                    t.hints.push((ranges.len(), fetch_ranges(&d.outputs)));
                }
            }
            _ => {}
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
        Some(Input::Hint { stream, ranges, .. }) => {
            format!("hint {} of {} ranges", stream.0, ranges.len())
        }
        Some(other) => format!("{other:?}"),
        None => "timer".into(),
    };
    format!("{input} -> {:?}", fetch_ranges(&d.outputs))
}

/// The simulator's config for the scenario.
pub fn sim_config(s: &Scenario) -> Result<SimConfig, String> {
    let mut table = toml::Table::new();
    // TOML's integers stop at i64::MAX; the config reads a larger seed given as text.
    let seed = match i64::try_from(s.seed) {
        Ok(i) => toml::Value::Integer(i),
        Err(_) => toml::Value::String(s.seed.to_string()),
    };
    table.insert("seed".into(), seed);
    let mut sets = vec![
        format!("device.preset={}", s.device),
        format!("policy.name={}", s.policy),
        format!("workload.streams={}", s.streams),
        format!("workload.request={}", s.request_bytes),
        format!("workload.file_size={}", s.file_bytes),
        format!("host.memory={}", s.memory.0),
        format!("host.scheduler={}", s.scheduler),
    ];
    if let Some(d) = s.antic_expire {
        sets.push(format!("host.antic_expire={}ns", d.0));
    }
    if s.raid_cache.0 > 0 {
        sets.push(format!("host.raid_cache={}", s.raid_cache.0));
    }
    if s.think > Duration::ZERO {
        sets.push(format!("workload.think={}ns", s.think.0));
    }
    match s.workload {
        Workload::Sequential => sets.push("workload.kind=streams".into()),
        Workload::Scan => sets.push("workload.kind=scan".into()),
        Workload::Gaps { gap_bytes } => {
            sets.push("workload.kind=gaps".into());
            sets.push(format!("workload.gap={gap_bytes}"));
        }
        Workload::Random { requests } => {
            sets.push("workload.kind=random".into());
            sets.push(format!("workload.requests={requests}"));
        }
    }
    if let Some((disks, strip_bytes)) = s.raid0 {
        sets.push("device.kind=raid0".into());
        sets.push(format!("device.disks={disks}"));
        sets.push(format!("device.strip={strip_bytes}"));
    }
    if s.policy.ends_with("seqp") {
        sets.push(format!("policy.readahead_max={}", s.readahead_max.0));
    }
    sets.extend(s.policy_sets.iter().cloned());
    for set in sets {
        apply_set(&mut table, &set).map_err(|e| e.to_string())?;
    }
    SimConfig::from_table(table, None).map_err(|e| e.to_string())
}

/// Each client's reads, `(offset, bytes)` in order, as the simulator's clients issue them.
pub fn plans(s: &Scenario) -> Result<Vec<Vec<(u64, u64)>>, String> {
    let cfg = sim_config(s)?;
    let rng = foresight_core::Rng::new(cfg.seed);
    (0..s.streams as u64)
        .map(|i| match s.workload {
            Workload::Sequential => Ok((0..s.file_bytes.div_ceil(s.request_bytes))
                .map(|k| {
                    let at = k * s.request_bytes;
                    (at, s.request_bytes.min(s.file_bytes - at))
                })
                .collect()),
            // The simulator's clients draw from one generator each, forked from the run's seed,
            // a request-aligned place in the file (cut to whole requests) per read.
            Workload::Random { requests } => {
                let slots = s.file_bytes / s.request_bytes;
                let mut r = rng.fork(i);
                Ok((0..requests)
                    .map(|_| (r.below(slots) * s.request_bytes, s.request_bytes))
                    .collect())
            }
            // The simulator forks one generator per client from the run's seed.
            Workload::Scan | Workload::Gaps { .. } => foresight_sim::plans::plan(
                &cfg.workload,
                &mut rng.fork(i),
                foresight_sim::plans::MAX_DISCLOSED_READS,
            )
            .ok_or_else(|| "the plan is too long".to_string()),
        })
        .collect()
}

/// Runs the scenario in the simulator. `files` are the files' bytes (the simulator reads none; the
/// bytes a client would get are the file's bytes over the ranges it read).
pub fn run_sim(s: &Scenario, files: &[Vec<u8>]) -> Result<WorldRun, String> {
    let cfg = sim_config(s)?;
    let log = DecisionLog::new();
    let array_log = DecisionLog::new();
    let msp = s.policy.starts_with("msp+");
    // The simulator runs the stream scheduler at the block level, below a page cache that reads
    // on demand (paper 001's server): that is the policy the engine runs over files. Every other
    // policy here is the page cache's.
    let recorded_layer = usize::from(s.policy == "streams");
    let mut layer = 0;
    let mut records: Vec<foresight_sim::metrics::RequestRecord> = Vec::new();
    let out = foresight_sim::sim::run_wrapped(
        &cfg,
        RunOptions {
            requests: Some(&mut records),
            progress: None,
        },
        &mut |p| {
            layer += 1;
            if layer - 1 == recorded_layer {
                log.wrap(p)
            } else if msp && layer == 2 {
                // MSP, in the RAID driver's cache below the page cache.
                array_log.wrap(p)
            } else {
                p
            }
        },
    )
    .map_err(|e| e.to_string())?;
    let decisions = log.decisions();
    let mut streams = traces(&decisions, s.streams);
    records.sort_by(|a, b| a.submit_s.total_cmp(&b.submit_s).then(a.id.cmp(&b.id)));
    for (i, t) in streams.iter_mut().enumerate() {
        let mut h = hasher();
        for r in records.iter().filter(|r| r.stream as usize == i) {
            let f = &files[s.workload.file_of(i)];
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
        files: Vec::new(),
        elapsed_s: out.report.elapsed_s,
        device_bytes: out.report.device_bytes,
        array_fetches: all_fetches(&array_log.decisions()),
        throughput_mib_s: out.report.throughput_mib_s,
    })
}

/// The policy settings the engine runs with: the simulator's, with the device figures `directed`
/// derives its infill threshold from filled in from the same drive, as the simulator fills them
/// (the engine fills the same figures from its emulated drive when none are given).
pub fn engine_policy(s: &Scenario) -> Result<foresight_policy::PolicyConfig, String> {
    let cfg = sim_config(s)?;
    let mut policy = cfg.policy.clone();
    if policy.name == "directed" {
        let (curve, media) =
            foresight_sim::build::positioning_figures(&cfg.device).map_err(|e| e.to_string())?;
        policy.directed.positioning_curve_ns = curve;
        policy.directed.media_bytes_per_s = media;
    }
    Ok(policy)
}

/// How long [`run_engine`] waits for its clients to end before it calls the engine hung: far
/// beyond what any scenario takes on a loaded machine (seconds), so it guards against hangs and
/// times nothing.
pub const CLIENTS_HANG_GUARD: std::time::Duration = std::time::Duration::from_secs(60);

/// How long [`run_engine`] waits, once its hang guard has fired and it has abandoned the engine,
/// for the clients to end: a client woken from its read by the abandoned engine's error ends at
/// once, so this too only guards against a hang (a client blocked outside the engine).
pub const ABANDONED_CLIENTS_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

/// Tells [`run_engine`] that client `.0` has ended, however it ended (its read failed, it
/// panicked), when dropped at the end of the client's thread.
struct Finished(usize, std::sync::mpsc::Sender<usize>);

impl Drop for Finished {
    fn drop(&mut self) {
        // The receiver is gone only once `run_engine` has given up on the clients.
        let _ = self.1.send(self.0);
    }
}

/// The clients' turns to disclose their reads: the simulator's clients disclose theirs in client
/// order, so each engine client gives its hint only once every client before it has passed its
/// turn. A turn passes when its client has given its hint (or failed to), and also when the
/// client's thread ends without giving it (it failed or panicked before or during its hint),
/// so that a dead client never leaves the clients after it waiting; and every waiting client
/// is woken with an error when the harness abandons the run ([`HintTurns::abandon`]).
struct HintTurns {
    state: Mutex<TurnState>,
    /// Signalled when a turn passes or the turns are abandoned.
    turn: Condvar,
    /// Clients waiting for their turn now (the tests wait for a client to be waiting).
    #[cfg(test)]
    waiting: std::sync::atomic::AtomicUsize,
}

/// Which turns have passed.
#[derive(Default)]
struct TurnState {
    /// Every client before this one has passed its turn.
    next: usize,
    /// Clients at or after `next` that have passed their turns already (they died before their
    /// turn); at most one a client.
    early: std::collections::BTreeSet<usize>,
    /// The harness has given up on the run: no more turns are waited for.
    abandoned: bool,
}

/// Client `client`'s turn to hint, held by its thread from the thread's start; dropping it
/// passes the turn, however the thread ends.
struct HintTurn {
    turns: Arc<HintTurns>,
    client: usize,
}

impl HintTurns {
    fn new() -> Arc<HintTurns> {
        Arc::new(HintTurns {
            state: Mutex::new(TurnState::default()),
            turn: Condvar::new(),
            #[cfg(test)]
            waiting: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    /// Client `client`'s turn.
    fn turn(self: &Arc<Self>, client: usize) -> HintTurn {
        HintTurn {
            turns: self.clone(),
            client,
        }
    }

    /// The turns' state. No code panics while it holds the lock, so a poisoned lock (a panic
    /// elsewhere on a thread holding it, which none does) still guards a whole state.
    fn state(&self) -> std::sync::MutexGuard<'_, TurnState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wakes every client waiting for its turn with an error, and fails every later wait: the
    /// harness has abandoned the engine, and a client waiting for a turn that a client blocked
    /// outside the engine holds would otherwise outlive the run.
    fn abandon(&self) {
        self.state().abandoned = true;
        self.turn.notify_all();
    }
}

impl HintTurn {
    /// Waits for the clients before this one to pass their turns, gives this one's hint with
    /// `give`, and passes the turn on (also if `give` panics). The hint is given outside the
    /// turns' lock: the next client waits for this turn to pass, not for the lock.
    fn take<T>(self, give: impl FnOnce() -> T) -> std::io::Result<T> {
        {
            let turns = &*self.turns;
            let mut state = turns.state();
            while state.next < self.client && !state.abandoned {
                #[cfg(test)]
                turns
                    .waiting
                    .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                state = turns.turn.wait(state).unwrap_or_else(|p| p.into_inner());
                #[cfg(test)]
                turns
                    .waiting
                    .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            }
            if state.next < self.client {
                return Err(std::io::Error::other(
                    "the run was abandoned while this client waited for its turn to hint",
                ));
            }
        }
        Ok(give())
    }
}

impl Drop for HintTurn {
    fn drop(&mut self) {
        let mut guard = self.turns.state();
        let state = &mut *guard;
        if self.client == state.next {
            state.next += 1;
            while state.early.remove(&state.next) {
                state.next += 1;
            }
        } else if self.client > state.next {
            state.early.insert(self.client);
        }
        drop(guard);
        self.turns.turn.notify_all();
    }
}

/// Takes clients off `running` as they say they have ended, until none is left (`None`) or
/// `until` passes (`Some`, the clients still running).
fn wait_for_clients(
    finished: &std::sync::mpsc::Receiver<usize>,
    running: &mut std::collections::BTreeSet<usize>,
    until: std::time::Instant,
) -> Option<std::collections::BTreeSet<usize>> {
    while !running.is_empty() {
        let left = until.saturating_duration_since(std::time::Instant::now());
        match finished.recv_timeout(left) {
            Ok(client) => {
                running.remove(&client);
            }
            Err(_) => return Some(running.clone()),
        }
    }
    None
}

/// What client `client`'s thread ended with, as the run reports it: its bytes and their hash, or
/// an error naming the client, its stream and its file, with the read's error or the panic's
/// message.
fn client_outcome(
    client: usize,
    s: &Scenario,
    paths: &[PathBuf],
    joined: std::thread::Result<std::io::Result<(u64, u64)>>,
) -> Result<(u64, u64), String> {
    let file = s.workload.file_of(client);
    let who = format!(
        "client {client} (stream {client}, file {file}, {})",
        paths
            .get(file)
            .map_or_else(|| "no path".to_string(), |p| p.display().to_string())
    );
    match joined {
        Ok(Ok(got)) => Ok(got),
        Ok(Err(e)) => Err(format!("{who} failed: {e}")),
        Err(payload) => Err(format!(
            "{who} panicked: {}",
            foresight_engine::panic_payload_text(payload.as_ref())
        )),
    }
}

/// Runs the scenario through the real engine on the emulated backend; `paths[i]` is client `i`'s
/// file. A client that discloses its reads does so, as the simulator's does, just before its
/// first read, and after the clients before it have disclosed theirs.
/// Clients that have not all ended within [`CLIENTS_HANG_GUARD`] make the run an error that
/// names them, with the engine's state; the engine is then abandoned ([`Engine::abandon`]), so
/// that clients blocked in its reads end, and stopped before the run returns. A client that
/// fails or panics is named in the error with its stream, its file and the failure.
pub fn run_engine(s: &Scenario, paths: &[PathBuf]) -> Result<WorldRun, String> {
    run_engine_within(s, paths, CLIENTS_HANG_GUARD)
}

/// [`run_engine`] with a guard of `hang_guard` in place of [`CLIENTS_HANG_GUARD`]: the guard's
/// own test gives it one shorter than its clients take, so that the guard fires.
pub fn run_engine_within(
    s: &Scenario,
    paths: &[PathBuf],
    hang_guard: std::time::Duration,
) -> Result<WorldRun, String> {
    run_engine_wrapped(s, paths, hang_guard, None)
}

/// [`run_engine_within`] with the engine's policy (the recording one) wrapped once more by
/// `wrap`, outside the recording: the harness's own tests put a policy that panics there.
pub fn run_engine_wrapped(
    s: &Scenario,
    paths: &[PathBuf],
    hang_guard: std::time::Duration,
    wrap: Option<foresight_engine::PolicyWrapper>,
) -> Result<WorldRun, String> {
    let mut emulated = EmulatedConfig::preset(&s.device)
        .and_then(|e| e.scheduler(&s.scheduler))
        .map_err(|e| e.to_string())?
        .spread(s.streams);
    if let Some((disks, strip_bytes)) = s.raid0 {
        emulated = emulated.raid0(disks, strip_bytes);
    }
    if let Some(d) = s.antic_expire {
        emulated.antic_expire = d;
    }
    let think = std::time::Duration::from_nanos(s.think.0);
    let plans = plans(s)?;
    let hinted = !matches!(s.workload, Workload::Sequential | Workload::Random { .. });
    let log = DecisionLog::new();
    let recorder = log.clone();
    let array_log = DecisionLog::new();
    let array_recorder = array_log.clone();
    let mut builder = Engine::builder()
        .backend(Backend::Emulated(emulated))
        .policy_config(engine_policy(s)?)
        .memory(s.engine_memory.unwrap_or(s.memory))
        .queue_depth(32)
        .wrap_policy(Box::new(move |p| {
            let recorded = recorder.wrap(p);
            match wrap {
                Some(wrap) => wrap(recorded),
                None => recorded,
            }
        }))
        .wrap_array_policy(Box::new(move |p| array_recorder.wrap(p)));
    if s.raid_cache.0 > 0 {
        builder = builder.raid_cache(s.raid_cache);
    }
    let engine = builder.build().map_err(|e| e.to_string())?;
    // Open in client order, so stream i reads file i (or the shared file), as in the simulator.
    let readers = (0..s.streams as usize)
        .map(|i| {
            let p = paths
                .get(s.workload.file_of(i))
                .ok_or_else(|| format!("no file for client {i}"))?;
            engine.open(p).map_err(|e| e.to_string())
        })
        .collect::<Result<Vec<_>, _>>()?;
    for (i, r) in readers.iter().enumerate() {
        if r.handle().stream != StreamId(i as u32) {
            return Err(format!("reader {i} got {:?}", r.handle().stream));
        }
    }
    // The simulator's clients disclose their reads in client order. Threads started in that
    // order need not run in it, and under memory pressure the order of the hints decides whose
    // fetches memory refuses (the contention scenarios), so each client hints only once the
    // clients before it have passed their turns ([`HintTurns`]): the policy hears the hints in
    // the simulator's order, and a client that dies passes its turn on.
    let hint_turns = HintTurns::new();
    let (finished_tx, finished) = std::sync::mpsc::channel();
    let started = std::time::Instant::now();
    let handles: Vec<_> = readers
        .into_iter()
        .zip(plans)
        .enumerate()
        .map(|(client, (mut r, plan))| {
            let turn = hint_turns.turn(client);
            let finished = Finished(client, finished_tx.clone());
            std::thread::spawn(move || -> std::io::Result<(u64, u64)> {
                let _finished = finished;
                let mut h = hasher();
                let mut buf = Vec::new();
                let mut total = 0u64;
                if hinted {
                    let ranges: Vec<ByteRange> =
                        plan.iter().map(|&(o, l)| ByteRange::new(o, l)).collect();
                    turn.take(|| r.hint(&ranges))?
                        .map_err(std::io::Error::other)?;
                }
                for (k, (offset, bytes)) in plan.into_iter().enumerate() {
                    if k > 0 && !think.is_zero() {
                        std::thread::sleep(think);
                    }
                    buf.resize(bytes as usize, 0);
                    r.seek(SeekFrom::Start(offset))?;
                    r.read_exact(&mut buf)?;
                    h.write(&buf);
                    total += bytes;
                }
                Ok((total, h.finish()))
            })
        })
        .collect();
    // Every client is waited for at most `hang_guard`: an engine that never ends a read fails
    // the run, naming the clients and the engine's state, instead of hanging it.
    drop(finished_tx);
    let mut running: std::collections::BTreeSet<usize> = (0..handles.len()).collect();
    if let Some(hang) = wait_for_clients(&finished, &mut running, started + hang_guard) {
        let hang = format!(
            "clients {hang:?} had not ended {hang_guard:?} after the run began: the engine \
             hangs; {}",
            engine.describe()
        );
        // A client blocked in a read can be neither cancelled nor joined, and its reader keeps
        // the engine (its backend threads, its buffers, its open files) alive: the engine is
        // abandoned, which fails every read waiting in it and every later one, so that the
        // clients end and drop their readers, and the engine stops here, when its last handle
        // goes, instead of running beside the tests that follow.
        engine.abandon("the conformance harness's hang guard fired");
        hint_turns.abandon();
        let abandoned_at = std::time::Instant::now();
        let left = wait_for_clients(
            &finished,
            &mut running,
            abandoned_at + ABANDONED_CLIENTS_GRACE,
        );
        for (client, h) in handles.into_iter().enumerate() {
            if !running.contains(&client) {
                // Ended: its outcome (a failed read, most likely) adds nothing to the hang.
                let _ = h.join();
            }
        }
        drop(engine);
        return Err(match left {
            None => {
                format!("{hang}; the engine was abandoned, its clients ended and it was shut down")
            }
            Some(stuck) => format!(
                "{hang}; clients {stuck:?} were still running {ABANDONED_CLIENTS_GRACE:?} after \
                 the engine was abandoned, and keep it alive"
            ),
        });
    }
    let mut got = Vec::new();
    let mut failures = Vec::new();
    for (client, h) in handles.into_iter().enumerate() {
        match client_outcome(client, s, paths, h.join()) {
            Ok(g) => got.push(g),
            Err(e) => failures.push(e),
        }
    }
    if !failures.is_empty() {
        return Err(failures.join("; "));
    }
    let elapsed_s = started.elapsed().as_secs_f64();
    let device_bytes = engine.stats().device_bytes;
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
        files: log.files(),
        elapsed_s,
        device_bytes,
        array_fetches: all_fetches(&array_log.decisions()),
        throughput_mib_s: total as f64 / (1u64 << 20) as f64 / elapsed_s.max(1e-9),
    })
}

/// Every range fetched in `decisions`, in order.
fn all_fetches(decisions: &[Decision]) -> Vec<ByteRange> {
    decisions
        .iter()
        .flat_map(|d| fetch_ranges(&d.outputs))
        .collect()
}

/// The file and file range of a volume range, clipped to the extent it starts in; `None` outside
/// every file.
fn volume_to_file(files: &[FileLayout], range: ByteRange) -> Option<(FileId, ByteRange)> {
    files.iter().enumerate().find_map(|(k, f)| {
        f.extents.iter().find_map(|e| {
            let start = range.start.0.checked_sub(e.volume_offset.0)?;
            (start < e.len.0).then(|| {
                let len = range.len.0.min(e.len.0 - start);
                (
                    FileId(k as u32),
                    ByteRange::new(e.file_offset.0 + start, len),
                )
            })
        })
    })
}

impl WorldRun {
    /// This run with a block-level policy's decisions (reads and fetches of volume bytes, one
    /// anonymous stream) restated in the files of `files`: each read becomes a read of the file it
    /// falls in by the client reading that file (client `k` reads file `k`), and each fetch,
    /// deferral and release a range of that file, clipped to it, where the engine's scheduler
    /// over files stops its streams. A fetch, deferral or release that starts after a file's end
    /// and before the next file is left out: the block level does not know where a file ends and
    /// runs a turn on past it, while the engine's scheduler ends the turn at the file's end and
    /// never issues it, so keeping it (it used to be kept as an empty range at the end of the
    /// file) made every file that ends within a turn differ by one fetch. A range before every
    /// file stays in volume bytes, where a comparison shows it. Decisions of file-level policies
    /// are left as they are.
    pub fn in_files(&self, files: &[FileLayout]) -> WorldRun {
        // The file a range outside every file starts after, with where that file ends.
        let file_before = |r: ByteRange| -> Option<(FileId, u64)> {
            files
                .iter()
                .enumerate()
                .filter(|(_, f)| {
                    f.extents
                        .first()
                        .is_some_and(|e| e.volume_offset <= r.start)
                })
                .max_by_key(|(_, f)| f.extents[0].volume_offset)
                .map(|(k, f)| (FileId(k as u32), f.size.0))
        };
        // A client reads only its own file; a read outside it (none is expected) becomes an empty
        // read at the end of the file before it, where a comparison shows it.
        let read_in_file = |r: ByteRange| -> (FileId, ByteRange) {
            volume_to_file(files, r).unwrap_or_else(|| {
                file_before(r).map_or((VOLUME_FILE, r), |(f, end)| (f, ByteRange::new(end, 0)))
            })
        };
        // `None` for an answer that starts past the end of a file, before the next.
        let map = |r: ByteRange| -> Option<(FileId, ByteRange)> {
            volume_to_file(files, r)
                .or_else(|| file_before(r).is_none().then_some((VOLUME_FILE, r)))
        };
        let decisions: Vec<Decision> = self
            .decisions
            .iter()
            .map(|d| {
                let input = match &d.input {
                    Some(Input::Read {
                        file, range, miss, ..
                    }) if *file == VOLUME_FILE => {
                        let (f, r) = read_in_file(*range);
                        Some(Input::Read {
                            stream: StreamId(f.0),
                            file: f,
                            range: r,
                            miss: miss.map(|m| ByteOffset(r.start.0 + (m.0 - range.start.0))),
                        })
                    }
                    other => other.clone(),
                };
                let outputs = d
                    .outputs
                    .iter()
                    .filter_map(|o| match o {
                        Output::Fetch {
                            id,
                            file,
                            range,
                            into,
                        } if *file == VOLUME_FILE => {
                            map(*range).map(|(file, range)| Output::Fetch {
                                id: *id,
                                file,
                                range,
                                into: *into,
                            })
                        }
                        Output::Defer { file, range } if *file == VOLUME_FILE => {
                            map(*range).map(|(file, range)| Output::Defer { file, range })
                        }
                        Output::Release { file, range } if *file == VOLUME_FILE => {
                            map(*range).map(|(file, range)| Output::Release { file, range })
                        }
                        other => Some(other.clone()),
                    })
                    .collect();
                Decision {
                    input,
                    outputs,
                    at: d.at,
                }
            })
            .collect();
        let mut streams = traces(&decisions, self.streams.len() as u32);
        for (t, old) in streams.iter_mut().zip(&self.streams) {
            t.bytes = old.bytes;
            t.bytes_hash = old.bytes_hash;
        }
        WorldRun {
            streams,
            decisions,
            files: self.files.clone(),
            ..self.clone()
        }
    }
}

/// The first index where two sequences differ, with both sides, for a report.
fn first_diff<T: std::fmt::Debug + PartialEq>(
    what: &str,
    i: usize,
    (wa, a): (&str, &[T]),
    (wb, b): (&str, &[T]),
) -> Option<String> {
    if a == b {
        return None;
    }
    let k = a
        .iter()
        .zip(b)
        .position(|(p, q)| p != q)
        .unwrap_or(a.len().min(b.len()));
    Some(format!(
        "stream {i}, {what} {k} (of {} vs {}): {wa} {:?} vs {wb} {:?}",
        a.len(),
        b.len(),
        a.get(k),
        b.get(k)
    ))
}

/// Compares two runs of the same scenario.
pub fn compare(a: &WorldRun, b: &WorldRun) -> Comparison {
    let mut first = None;
    let same_len = a.streams.len() == b.streams.len();
    let (mut per_stream_equal, mut fetch_sequences_equal, mut bytes_equal) =
        (same_len, same_len, same_len);
    for (i, (x, y)) in a.streams.iter().zip(&b.streams).enumerate() {
        let reads = first_diff("read", i, (a.world, &x.reads), (b.world, &y.reads));
        let hints = first_diff("hint", i, (a.world, &x.hints), (b.world, &y.hints));
        if reads.is_some() || hints.is_some() {
            per_stream_equal = false;
            first = first.or(reads).or(hints);
        }
        let fetches = first_diff("fetch", i, (a.world, &x.fetches), (b.world, &y.fetches));
        if fetches.is_some() {
            fetch_sequences_equal = false;
            first = first.or(fetches);
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
            .filter(|d| matches!(d.input, Some(Input::Read { .. } | Input::Hint { .. })))
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
        fetch_sequences_equal,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// How long a test waits for a client thread before it calls the turns hung: far beyond the
    /// microseconds a turn takes, so it guards against a hang and times nothing.
    const HANG_GUARD: std::time::Duration = std::time::Duration::from_secs(10);

    /// Starts a thread that takes `turn`, giving no hint, and sends what the take returned.
    fn take_on_a_thread(turn: HintTurn) -> std::sync::mpsc::Receiver<Result<(), String>> {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(turn.take(|| ()).map_err(|e| e.to_string()));
        });
        rx
    }

    /// Waits for `n` clients to be waiting for their turns.
    fn until_waiting(turns: &HintTurns, n: usize) {
        let until = std::time::Instant::now() + HANG_GUARD;
        while turns.waiting.load(std::sync::atomic::Ordering::SeqCst) < n {
            assert!(
                std::time::Instant::now() < until,
                "no client waits for its turn"
            );
            std::thread::yield_now();
        }
    }

    /// A client that panics while it gives its hint passes its turn on: the client after it,
    /// already waiting, gives its own. Before, the panic poisoned the turn lock and left the
    /// waiting client asleep for good.
    #[test]
    fn a_client_that_panics_in_its_turn_passes_it_on() {
        let turns = HintTurns::new();
        let first = turns.turn(0);
        let second = take_on_a_thread(turns.turn(1));
        until_waiting(&turns, 1);
        let died = std::thread::spawn(move || {
            let _ = first.take(|| panic!("the test's hint panics"));
        })
        .join();
        assert!(died.is_err(), "the first client's hint did not panic");
        assert_eq!(
            second.recv_timeout(HANG_GUARD),
            Ok(Ok(())),
            "the second client did not get its turn"
        );
    }

    /// A client whose thread ends before its turn (it panicked, or failed, before it came to
    /// hint) passes its turn on: the client after it gives its hint once the client before the
    /// dead one has. Before, the dead client's turn was never counted and the client after it
    /// waited for good.
    #[test]
    fn a_client_that_dies_before_its_turn_passes_it_on() {
        let turns = HintTurns::new();
        let first = turns.turn(0);
        let dead = turns.turn(1);
        let third = take_on_a_thread(turns.turn(2));
        until_waiting(&turns, 1);
        let died = std::thread::spawn(move || {
            let _turn = dead;
            panic!("the test's client panics before its turn");
        })
        .join();
        assert!(died.is_err());
        first.take(|| ()).unwrap();
        assert_eq!(
            third.recv_timeout(HANG_GUARD),
            Ok(Ok(())),
            "the third client did not get its turn"
        );
    }

    /// Abandoning the turns wakes a client waiting for its turn with an error, although the
    /// client before it still holds its turn (blocked outside the engine, which the harness
    /// cannot wake otherwise).
    #[test]
    fn abandoning_the_turns_wakes_a_client_waiting_for_its_turn() {
        let turns = HintTurns::new();
        let _held = turns.turn(0);
        let second = take_on_a_thread(turns.turn(1));
        until_waiting(&turns, 1);
        turns.abandon();
        let got = second.recv_timeout(HANG_GUARD);
        assert!(
            matches!(&got, Ok(Err(e)) if e.contains("abandoned")),
            "{got:?}"
        );
    }

    /// Restating block-level fetches in files: one inside a file is clipped to it, one that
    /// starts past a file's end (a turn run on past it) is left out, as the engine's scheduler
    /// never issues it, and one before every file stays in volume bytes. The one past the end
    /// used to be kept as an empty fetch at the end of the file.
    #[test]
    fn a_fetch_past_a_files_end_is_left_out_of_the_restated_run() {
        let mib = 1u64 << 20;
        let file = |at: u64| FileLayout {
            size: ByteLen(mib),
            extents: vec![foresight_core::Extent {
                file_offset: ByteOffset(0),
                volume_offset: ByteOffset(at),
                len: ByteLen(mib),
            }],
            metadata: None,
        };
        let files = [file(mib), file(4 * mib)];
        let fetch = |id: u64, start: u64, len: u64| Output::Fetch {
            id: foresight_core::FetchId(id),
            file: VOLUME_FILE,
            range: ByteRange::new(start, len),
            into: foresight_policy::Tier::Memory,
        };
        let sim = WorldRun {
            world: "sim",
            streams: vec![StreamTrace::default(); 2],
            decisions: vec![Decision {
                input: None,
                outputs: vec![
                    fetch(1, mib + mib / 2, mib),
                    fetch(2, 2 * mib + mib / 2, mib / 2),
                    fetch(3, 4 * mib, mib / 2),
                    fetch(4, 0, mib / 2),
                ],
                at: foresight_core::Instant::ZERO,
            }],
            files: Vec::new(),
            elapsed_s: 0.0,
            device_bytes: 0,
            array_fetches: Vec::new(),
            throughput_mib_s: 0.0,
        };
        let restated = sim.in_files(&files);
        let ranges: Vec<_> = restated.decisions[0]
            .outputs
            .iter()
            .map(|o| match o {
                Output::Fetch { file, range, .. } => (file.0, range.start.0, range.len.0),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            ranges,
            vec![
                (0, mib / 2, mib / 2),
                (1, 0, mib / 2),
                (VOLUME_FILE.0, 0, mib / 2)
            ]
        );
        assert_eq!(
            restated.streams[0].fetches,
            vec![ByteRange::new(mib / 2, mib / 2)]
        );
        assert_eq!(
            restated.streams[1].fetches,
            vec![ByteRange::new(0, mib / 2)]
        );
    }

    /// A scenario's seed reaches the simulator's config whole, past TOML's largest integer too:
    /// it used to go in as an `i64`, so a seed above `i64::MAX` turned negative and the config
    /// was refused.
    #[test]
    fn every_u64_seed_reaches_the_config() {
        for seed in [0, 1, i64::MAX as u64, 1 << 63, u64::MAX] {
            let s = Scenario {
                seed,
                ..Scenario::four_streams_seqp_wd800jd()
            };
            assert_eq!(sim_config(&s).expect("a valid scenario").seed, seed);
        }
    }
}
