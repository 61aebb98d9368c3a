//! `foresight bench`: the real engine against the kernel and against the device's own limit.
//!
//! For each number of streams N the bench reads N files at once, one thread per file, each reading
//! its file sequentially with `--request`-sized reads, three ways:
//!
//! - `engine`: through a [`foresight_engine::Engine`] (io_uring and `O_DIRECT` where allowed), once
//!   per `--policy`;
//! - `kernel`: plain buffered `read()` calls, with the kernel's own readahead;
//! - `limit`: one reader, no policy, large `O_DIRECT` reads with several in flight straight through
//!   the backend, over the same bytes the N streams read (their files one after another, reads in
//!   flight across file boundaries): the best rate the device gives a sequential reader of that data
//!   (and, with `--fio`, fio's figure for one sequential job over the same files, its CPU time
//!   that of the fio process).
//!
//! The files are created once under `--dir` (default `./foresight-bench`, relative to where the
//! command runs) and reused when they have the right size and no holes; they are written, synced,
//! and dropped from the page cache (`posix_fadvise(DONTNEED)`) before every measurement, so each
//! one starts cold. A `--dir` on tmpfs or ramfs (`statfs`) can do neither: its files have no disk
//! and stay in memory, so the run warns and its header says it measured memory, not a disk.
//! Each N has its own N files (`n{N}/stream-{i}.dat`) of `min(--file-size, --total-size / N)` bytes, and
//! every stream reads its file whole, so one N never reads more than `--total-size` in all. Sharing
//! files between the N values would leave streams stopping short of their files' ends, and every
//! readahead past that point (the engine's and the kernel's, not the limit reader's) would be waste
//! the benchmark made: 1,024 streams reading 8 MiB of the 32 MiB files that 256 streams need read
//! 0.8-1.5 GiB more than their 8 GiB under `seqp` (five rounds). A measurement also stops after
//! `--duration`. An engine read still waiting then stops (`Reader::set_read_deadline`), so
//! 4,096 emulated streams on `wd800jd`, which took about 36 s for their first 64 KiB reads, stop
//! at 1 s under `--duration 1s`. A buffered read of the kernel row cannot be called back, so it
//! is finished; the rate counts that whole time, and a row that ran well past the deadline says so
//! in its note. The note of an engine or kernel row says when half the streams had read their
//! whole files, or, when the deadline stopped some, how many of them got through their files.
//!
//! `--emulate PRESET` runs the engine on the `emulated` backend instead: the same real bytes, but
//! every read completes when the named device model says it would (files spread over the modelled
//! disk, one slot per stream); `limit` is then the model's single-reader rate, and `kernel` is not
//! measured (the kernel reads the real disk, not the modelled one). `--scheduler` picks the
//! modelled disk's host queue scheduler (`deadline` by default, `noop`, or `anticipatory`, which
//! holds the disk after a reader's read for that reader's next one for `--antic-expire`); both
//! are refused without `--emulate`, since the real disk's scheduler is the kernel's. `--disks N`
//! (with `--strip`, 128 KiB by default) makes the emulated device a RAID-0 of N such drives, the
//! one device on which the engine runs `msp+seqp` and `msp+saseqp` (MSP in the RAID driver's
//! cache beneath the engine's buffers, `--raid-cache` of its own, 512 MiB by default); elsewhere
//! those are refused, naming the flags.
//!
//! Progress goes to stderr; the table, or with `--json` one JSON array of objects, one per
//! (N, method), goes to stdout. The keys are listed in `--json`'s help: with the rate and the
//! ratio, what a row needs to be checked without the table (the device and backend, each
//! stream's bytes and read size, the engine's budget and window, the rounds and their spread).
//! `scheduler` and `antic_expire_ns` are the emulated disk's scheduler and, under
//! `anticipatory`, its wait, `null` on the real disk; the `raid_*` keys are the RAID driver's
//! cache under `msp+...`, as `sim --json` names them, from the first round, `null` for other
//! policies. `mib_s` is the median over the rounds; `ratio_to_limit` is the median of the
//! per-round ratios, each method against the limit measured in the same round.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use foresight_core::{parse_duration, parse_size, ByteLen};
use foresight_engine::measure::{
    children_cpu_seconds, evict_from_page_cache, free_disk_bytes, in_memory_fs, may_create_in,
    process_cpu_seconds, sequential_read_files,
};
use foresight_engine::{
    check_policy, check_policy_on, ArenaShelf, ArrayStats, Backend, EmulatedConfig, Engine,
    EngineError, NoopBackend, Scheduler,
};
use foresight_policy::streams::DispatchLimit;
use foresight_policy::PolicyConfig;
use serde_json::json;

use crate::input;

/// The policies benchmarked when `--policy` is not given, in this order; those this build's engine
/// cannot run are left out.
const DEFAULT_POLICIES: &[&str] = &["seqp", "streams"];
/// Bytes per write when creating files.
const WRITE_CHUNK_BYTES: usize = 8 << 20;
/// The most drives `--disks` emulates, as the simulator's `device.disks` allows.
const DISKS_MAX: u32 = 256;
/// The most streams one N may have: each is a thread of its own reading a file of its own, and
/// 4,096 is the most this bench has been run with (emulated, see the module docs); many more would
/// start as many threads and write as many files before measuring anything.
const STREAMS_MAX: u32 = 4096;

/// `foresight bench` arguments.
#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// Numbers of concurrent streams to measure, comma-separated, each 1 to 4096 (one thread and
    /// one open file per stream: a soft open-files limit, ulimit -n, below the largest N and 64
    /// is raised up to the hard one, and an N that with 16 more is past the hard one is refused).
    #[arg(long, value_delimiter = ',', default_value = "1,16,256,1024", value_parser = crate::whole_arg::<u32>)]
    streams: Vec<u32>,
    /// The largest file a stream reads (whole), at least 4KiB; with many streams, --total-size /
    /// N is smaller. Each file is whole 4KiB pages, the size rounded down to them.
    #[arg(
        long,
        allow_hyphen_values = true,
        default_value = "1GiB",
        value_name = "SIZE"
    )]
    file_size: String,
    /// The most bytes one N reads in all: each stream reads min(--file-size, this / N).
    #[arg(
        long,
        allow_hyphen_values = true,
        default_value = "8GiB",
        value_name = "SIZE"
    )]
    total_size: String,
    /// Where the bench files live (created if missing; regular files of the right size, with no
    /// holes and no preallocated range never written, are reused; a symbolic link, FIFO or other
    /// non-file at a file's path is refused; a file whose writing fails, or is stopped by SIGINT,
    /// SIGTERM or SIGHUP, is removed, the files already complete kept). Relative paths are taken
    /// from the current directory. Each N has its own files, read whole, in a directory `nN` of
    /// their own: they take min(N x --file-size, --total-size) for each N (25GiB for the
    /// defaults).
    #[arg(long, default_value = "foresight-bench", value_name = "DIR")]
    dir: PathBuf,
    /// Print one JSON array instead of the table: an object per (N, method) with `streams`,
    /// `method`, `policy`, `mib_s` (the median over the rounds), `mib_s_min`, `mib_s_max`,
    /// `rounds`, `ratio_to_limit`, `memory_peak_bytes`, `cpu_s`, `stopped_by_duration`, `device`
    /// (`disk`, `memory` for tmpfs, or `emulated`), `emulated_device`, `backend` (the limit's
    /// and the engine's), `file_bytes` (each stream's), `request_bytes` (the read size),
    /// `memory_bytes` and `readahead_max_bytes` (the engine's), `scheduler`, `antic_expire_ns`
    /// and the `raid_*` figures of an emulated RAID-0; `null` where a key does not apply.
    #[arg(long)]
    json: bool,
    /// Engine policies, comma-separated [default: those of seqp,streams the engine can run].
    /// `msp+seqp` and `msp+saseqp` run only with --emulate PRESET --disks N.
    /// On the real disk `streams` runs with R = 8 MiB, N = 4, M = 256 MiB (D = 8: 64 MiB in
    /// flight, as the limit reader keeps; 256 streams of 16 MiB on this machine, 14 rounds
    /// alternated with D = 4: median 0.99 of the limit against 0.82, faster in 13 rounds), its
    /// dispatch set counted in bytes in flight, at most D*R, so that reads cut short at small
    /// files' ends leave room for more streams (1,024 streams of 4 MiB, 15 rounds alternated
    /// with a set of 8 streams: median 0.85 of the limit against 0.70, faster in 14 rounds);
    /// under --emulate with paper 001's R = 8 MiB, N = 1, M = 16 MiB, D = 2 streams.
    #[arg(long, value_delimiter = ',', value_name = "NAME,...")]
    policy: Vec<String>,
    /// Also run fio (refused if it is not installed): one sequential O_DIRECT job over the same
    /// files, one after another, with the limit's block size and depth (fio reads whole blocks
    /// only, so a file the limit's size does not divide is read in even blocks of whole pages at
    /// most that size, a page or less per block left unread; the table's note then gives it). fio's buffers come from
    /// reserved huge pages when enough are free (`vm.nr_hugepages`), and otherwise from ordinary
    /// 4 KiB pages, which a disk with a per-request segment limit splits (this machine's virtio
    /// disk: 254 segments, so 4 MiB reads reach it as about 660 KiB requests and fio reads well
    /// under the limit); the table's note says which. Its cpu s is the fio process's own;
    /// --duration stops it as it stops the other methods, and it ends with the bench. fio is
    /// given each N's directory, so a file there that is not the bench's is refused. Not with
    /// --emulate.
    #[arg(long)]
    fio: bool,
    /// Run the engine on the emulated backend with this device preset (see `foresight devices`).
    #[arg(long, value_name = "PRESET")]
    emulate: Option<String>,
    /// Emulate a RAID-0 of this many --emulate drives instead of one, 1 to 256 (the simulator's
    /// `device.kind=raid0`, `device.disks`); files are spread over the striped volume. Only with
    /// --emulate. The policies `msp+seqp` and `msp+saseqp` need it: MSP runs in the RAID
    /// driver's cache, which the engine has on an emulated RAID-0 only.
    #[arg(long, value_name = "N", value_parser = crate::whole_arg::<u32>)]
    disks: Option<u32>,
    /// The emulated RAID-0's strip size (the simulator's `device.strip`) [default: 128KiB]. Only
    /// with --disks.
    #[arg(long, allow_hyphen_values = true, value_name = "SIZE")]
    strip: Option<String>,
    /// The RAID driver's cache under `msp+...` (the simulator's `host.raid_cache`), its own
    /// budget besides --memory, at most this machine's memory [default: 512MiB]. Only with
    /// --disks and an `msp+...` policy.
    #[arg(long, allow_hyphen_values = true, value_name = "SIZE")]
    raid_cache: Option<String>,
    /// The emulated disk's host block queue scheduler: noop, deadline or anticipatory (the
    /// simulator's `host.scheduler`) [default: deadline]. Only with --emulate: on the real disk
    /// the kernel's scheduler runs.
    #[arg(long, value_name = "NAME")]
    scheduler: Option<String>,
    /// How long the anticipatory scheduler holds the emulated disk, after a reader's read
    /// completes, for that reader's next request, at most 1s (the simulator's
    /// `host.antic_expire`) [default: 6ms]. Only with --emulate --scheduler anticipatory.
    #[arg(long, allow_hyphen_values = true, value_name = "DURATION")]
    antic_expire: Option<String>,
    /// Bytes per application read, 1 byte to 1GiB [default: 1MiB; 64KiB with --emulate].
    #[arg(long, allow_hyphen_values = true, value_name = "SIZE")]
    request: Option<String>,
    /// The policy's largest readahead window, whole 4KiB pages, at most the engine's memory
    /// budget (--memory) [default: for each N, --queue-depth x --max-io shared among the N
    /// streams, at least --max-io, at most --memory or 1GiB: 128MiB for 1 stream, 8MiB for 16,
    /// 4MiB for 256; 128KiB with --emulate]. This machine's disk completes the reads it holds
    /// together, so a stream whose two windows fit at the device at once left it idle while it
    /// copied the first out (8-9% of the time with 8MiB to 64MiB windows); with larger windows
    /// reads wait in the engine's queue for each completion, as the limit reader's do (0.6%).
    /// Many streams fill the queue together: 16 streams read a median 0.94 of the limit with
    /// 8MiB windows and 1.00 with 128MiB (30 rounds of each, alternated; `streams`, which takes
    /// no window, moved as much between the same runs, 0.92 and 0.99), holding 256MiB at the
    /// peak instead of 4032MiB.
    #[arg(long, allow_hyphen_values = true, value_name = "SIZE")]
    readahead_max: Option<String>,
    /// The engine's memory budget for prefetched and in-flight buffers [default on the real disk:
    /// for each N, room for two readahead windows per stream (or what a stream reads, if less) and
    /// an eighth for demand reads, at least 1GiB and at most a quarter of this machine's memory;
    /// 1GiB with --emulate]. Under it, `seqp` halves its windows when memory refuses a fetch (256
    /// streams of `seqp` with 32MiB windows read 0.91-1.05 of the limit with 2GiB and 0.88-1.11
    /// with 4GiB, round by round, on this machine in earlier runs: within the noise). On the real disk each engine
    /// is built with its whole budget mapped and faulted in (`prefault`), so that no read waits
    /// for fresh memory; the run keeps that memory from one engine to the next and faults it in
    /// again only for a larger budget, so the first engine's build pays for it (the "built in"
    /// figure of the progress lines, up to a second or two per GiB on a virtual machine) and the
    /// others are built in well under a second. The memory stays held between engines, while the
    /// limit and kernel rows run too (up to a quarter of this machine's memory that their page
    /// cache does not have: on this machine that changed nothing measurable in the kernel row,
    /// and leaving it to the kernel for those rows instead made some engines fault it in again
    /// after them, with several times the stalls; see ARCHITECTURE.md). An engine with a smaller
    /// budget than the one before gives the rest back and holds only its own (and at most 2MiB
    /// more). At most this machine's memory.
    #[arg(long, allow_hyphen_values = true, value_name = "SIZE")]
    memory: Option<String>,
    /// The engine's queue depth (reads in flight at the device), 1 to 4096.
    #[arg(long, default_value_t = 32, value_parser = crate::whole_arg::<u32>)]
    queue_depth: u32,
    /// The engine's largest single read, whole 4KiB pages from 4KiB to 64MiB (this disk's
    /// max_sectors_kb is a good choice).
    #[arg(
        long,
        allow_hyphen_values = true,
        default_value = "4MiB",
        value_name = "SIZE"
    )]
    max_io: String,
    /// Stop each measurement after this long. An engine read still waiting then stops, and the
    /// bytes it did not get are not counted; a plain buffered read (the kernel row) or a limit
    /// read under way is finished, and the row's note says so when that took long. A row
    /// stopped before the end of its data says so too (`stopped by --duration` in the table,
    /// `stopped_by_duration` in --json), its rate being that of the part it read, and an engine
    /// or kernel row's progress note says how many streams got through their files.
    #[arg(
        long,
        allow_hyphen_values = true,
        default_value = "30s",
        value_name = "DURATION"
    )]
    duration: String,
    /// The limit reader's read size, whole 4KiB pages from 4KiB to 64MiB (its reads in flight
    /// together at most this machine's memory).
    #[arg(
        long,
        allow_hyphen_values = true,
        default_value = "4MiB",
        value_name = "SIZE"
    )]
    limit_io: String,
    /// The limit reader's reads in flight, 1 to 1024.
    #[arg(long, default_value_t = 16, value_parser = crate::whole_arg::<usize>)]
    limit_depth: usize,
    /// The engine's backend: auto (io_uring, or threads where refused), uring or threads. Not
    /// with --emulate, whose engine reads through the model.
    #[arg(long, default_value = "auto", value_name = "NAME")]
    backend: String,
    /// Rounds per N, 1 to 100: every method is measured once per round, in an order rotated by one each
    /// round, and the median is reported (shared and virtual disks drift, and a virtual disk's host
    /// may still hold what the previous method read; interleaving keeps the comparison fair). The
    /// ratio to the limit is the median of the rounds' ratios, each against its own round's limit.
    #[arg(long, default_value_t = 3, value_parser = crate::whole_arg::<u32>)]
    repeat: u32,
}

/// Settings after checking.
struct Plan {
    streams: Vec<u32>,
    per_stream: Vec<u64>,
    /// Every file: its name under `dir` and its size.
    files: Vec<(String, u64)>,
    /// For each N (as in `streams`), the index in `files` of the first of its N files.
    first_file: Vec<usize>,
    dir: PathBuf,
    policies: Vec<String>,
    emulate: Option<EmulatedConfig>,
    /// The emulated device as the table and the JSON name it (`wd800jd`, `raid0 of 5 x
    /// cheetah-15k4, 128KiB strips`).
    emulated_label: Option<String>,
    /// The RAID driver's cache under `msp+...`.
    raid_cache: ByteLen,
    request: u64,
    /// The policy's largest readahead window for each N (as in `streams`).
    readahead_max: Vec<ByteLen>,
    /// The engine's budget for each N.
    memory: Vec<ByteLen>,
    max_io: ByteLen,
    queue_depth: u32,
    duration: Duration,
    limit_io: u64,
    limit_depth: usize,
    backend: Backend,
    repeat: u32,
}

/// One measurement.
struct Row {
    streams: u32,
    method: &'static str,
    policy: Option<String>,
    mib_s: f64,
    memory_peak_bytes: Option<u64>,
    cpu_s: f64,
    note: String,
    /// The RAID driver's cache under `msp+...`.
    array: Option<ArrayStats>,
    /// Whether --duration stopped it before it had read all its data: the table's claim that
    /// every stream reads its file whole is then not true of it.
    cut_short: bool,
    /// The I/O backend that read (`uring`, `threads`, `emulated`), for the limit and the engine.
    backend: Option<String>,
}

fn size(flag: &str, text: &str) -> anyhow::Result<u64> {
    parse_size(text)
        .map(|b| b.0)
        .map_err(|e| input(format!("--{flag}: {e}")))
}

/// Open files a bench is given room for besides its streams' files: the limit reader's, the
/// engine's ring and files, the standard streams. The soft limit is raised toward this much
/// room; the few it takes are [`OPEN_FILES_BESIDES_STREAMS_MIN`].
const OPEN_FILES_BESIDES_STREAMS: u64 = 64;

/// Open files a bench uses besides its streams' files, with a margin: below this room the bench
/// is refused. 1 stream ran with a limit of 16; 300 ran with 310 and failed with 300 and 305;
/// 1,000 ran with 1,008.
const OPEN_FILES_BESIDES_STREAMS_MIN: u64 = 16;

/// Open files a bench of `n` streams is given room for: every stream holds its own file open.
fn open_files_needed(n: u32) -> u64 {
    u64::from(n) + OPEN_FILES_BESIDES_STREAMS
}

/// Why a bench whose largest count is `n` streams cannot run under a hard open-files limit of
/// `hard`, if it cannot. Only the open files it takes count here, not the room the soft limit is
/// raised toward: `--streams 1000` runs under a limit of 1,024.
fn open_files_refusal(n: u32, hard: u64) -> Option<String> {
    let need = u64::from(n) + OPEN_FILES_BESIDES_STREAMS_MIN;
    (need > hard).then(|| {
        let fix = match hard.saturating_sub(OPEN_FILES_BESIDES_STREAMS_MIN) {
            0 => format!(
                "raise the limit to at least {}",
                1 + OPEN_FILES_BESIDES_STREAMS_MIN
            ),
            most => format!("give at most {most} streams, or raise the limit"),
        };
        format!(
            "--streams: {n} streams need about {need} open files (each reads its own file), but \
             this process may open at most {hard} (ulimit -n); {fix}"
        )
    })
}

fn plan(a: &BenchArgs) -> anyhow::Result<Plan> {
    let mut streams = a.streams.clone();
    if streams.is_empty() || streams.contains(&0) {
        return Err(input(
            "--streams: give positive numbers, e.g. --streams 1,16,256",
        ));
    }
    if let Some(&n) = streams.iter().find(|&&n| n > STREAMS_MAX) {
        return Err(input(format!(
            "--streams: {n} streams would start {n} threads and write {n} files; give at most \
             {STREAMS_MAX}"
        )));
    }
    // Past the open-files limit a bench would write its files and fail at the first it could
    // not open; the soft limit is raised toward this in `run`, the hard one cannot be.
    if let Ok((_, hard)) = foresight_engine::measure::open_files_limit() {
        let n = streams.iter().copied().max().unwrap_or(1);
        if let Some(why) = open_files_refusal(n, hard) {
            return Err(input(why));
        }
    }
    // A count given twice is measured once, in the place it was first given.
    let mut seen = std::collections::HashSet::new();
    streams.retain(|n| seen.insert(*n));
    let emulate = match &a.emulate {
        None => None,
        Some(p) => Some(emulation(
            EmulatedConfig::preset(p).map_err(|e| input(format!("--emulate: {e}")))?,
            a.scheduler.as_deref(),
            a.antic_expire.as_deref(),
        )?),
    };
    let emulated = emulate.is_some();
    for (flag, given) in [
        ("--strip", a.strip.is_some()),
        ("--raid-cache", a.raid_cache.is_some()),
    ] {
        if given && a.disks.is_none() {
            return Err(input(format!(
                "{flag}: only an emulated RAID-0 has strips and a RAID driver's cache; add \
                 --emulate PRESET --disks N or drop {flag}"
            )));
        }
    }
    let emulate = match (emulate, a.disks) {
        (None, Some(_)) => {
            return Err(input(
                "--disks: only the emulated backend models an array; add --emulate PRESET or \
                 drop --disks",
            ))
        }
        (Some(e), Some(disks)) => {
            // The simulator's bound on `device.disks`: each member is a whole modelled drive with
            // its own queue, so a count past any real array's only costs memory and time.
            if !(1..=DISKS_MAX).contains(&disks) {
                return Err(input(format!(
                    "--disks: give 1 to {DISKS_MAX} drives (the simulator's device.disks), got \
                     {disks}"
                )));
            }
            let strip = size("strip", a.strip.as_deref().unwrap_or("128KiB"))?;
            let e = e.raid0(disks, strip);
            e.validate()
                .map_err(|err| input(format!("--disks/--strip: {err}")))?;
            Some(e)
        }
        (e, None) => e,
    };
    let emulated_label = a.emulate.as_ref().map(|preset| match a.disks {
        None => preset.clone(),
        Some(disks) => format!(
            "raid0 of {disks} x {preset}, {} strips",
            a.strip.as_deref().unwrap_or("128KiB")
        ),
    });
    let raid_cache = ByteLen(size(
        "raid-cache",
        a.raid_cache.as_deref().unwrap_or("512MiB"),
    )?);
    if raid_cache.0 < foresight_policy::PAGE_BYTES {
        return Err(input(format!(
            "--raid-cache: {raid_cache} holds no 4 KiB page; give at least 4KiB (the simulator's \
             and paper 000's is 512MiB)"
        )));
    }
    // The real disk's scheduler is the kernel's: these would be ignored.
    for (flag, given) in [
        ("--scheduler", a.scheduler.is_some()),
        ("--antic-expire", a.antic_expire.is_some()),
    ] {
        if given && !emulated {
            return Err(input(format!(
                "{flag}: only the emulated disk's host queue is the bench's to choose (on the real \
                 disk the kernel's scheduler runs); add --emulate PRESET or drop {flag}"
            )));
        }
    }
    let file_size = size("file-size", &a.file_size)?;
    let total = size("total-size", &a.total_size)?;
    let request = size(
        "request",
        a.request
            .as_deref()
            .unwrap_or(if emulated { "64KiB" } else { "1MiB" }),
    )?;
    if request == 0 || request > 1 << 30 {
        return Err(input("--request: give between 1 byte and 1GiB"));
    }
    let memory = a
        .memory
        .as_deref()
        .map(|m| size("memory", m).map(ByteLen))
        .transpose()?;
    let max_io = ByteLen(size("max-io", &a.max_io)?);
    let given_window = a
        .readahead_max
        .as_deref()
        .map(|given| size("readahead-max", given).map(ByteLen))
        .transpose()?;
    // Checked here rather than left to the policies: a default policy that cannot run is left
    // out, and one left out for the window given here would vanish from the results unsaid.
    if let Some(w) = given_window.filter(|w| !w.0.is_multiple_of(4096)) {
        return Err(input(format!(
            "--readahead-max: {w} is not whole 4 KiB pages; give e.g. 32MiB"
        )));
    }
    // A window of nothing turned every policy into `none` without a word.
    if given_window == Some(ByteLen(0)) {
        return Err(input(
            "--readahead-max: 0 would prefetch nothing under every policy; give at least 4KiB, or \
             --policy none for demand reads alone",
        ));
    }
    let readahead_max: Vec<ByteLen> = streams
        .iter()
        .map(|&n| match given_window {
            Some(w) => w,
            None if emulated => ByteLen::kib(128),
            None => real_disk_readahead_max(max_io, a.queue_depth, n, memory),
        })
        .collect();
    let limit_io = size("limit-io", &a.limit_io)?;
    // The engine's bound on one read (--max-io): a larger buffer was refused by the allocator
    // only once files had been written, with exit 1.
    if !(4096..=64 << 20).contains(&limit_io) || !limit_io.is_multiple_of(4096) {
        return Err(input(format!(
            "--limit-io: give whole 4KiB pages from 4KiB to 64MiB, e.g. 4MiB; got {}",
            ByteLen(limit_io)
        )));
    }
    if !(1..=100).contains(&a.repeat) {
        return Err(input("--repeat: give 1 to 100"));
    }
    if !(1..=1024).contains(&a.limit_depth) {
        return Err(input("--limit-depth: give 1 to 1024"));
    }
    // Budgets are taken as buffers are needed (or mapped and faulted in), so one beyond the
    // machine would only show as the process killed, or as a figure nobody could have had.
    if let Some(machine) = machine_memory_bytes() {
        let in_flight = limit_io * a.limit_depth as u64;
        for (flag, bytes) in [
            ("--memory", memory.map_or(0, |m| m.0)),
            (
                "--raid-cache",
                a.raid_cache.as_ref().map_or(0, |_| raid_cache.0),
            ),
            ("--limit-io x --limit-depth", in_flight),
        ] {
            if bytes > machine {
                return Err(input(format!(
                    "{flag}: {} is more than this machine's memory ({}); give less",
                    ByteLen(bytes),
                    ByteLen(machine).rounded()
                )));
            }
        }
    }
    let duration = parse_duration(&a.duration).map_err(|e| input(format!("--duration: {e}")))?;
    if duration.0 < 1_000_000 {
        return Err(input(format!(
            "--duration: {} stops every measurement before it has read anything; give 1ms or more",
            a.duration
        )));
    }
    let duration = Duration::from_nanos(duration.0);
    let backend = match a.backend.as_str() {
        "auto" => Backend::Auto,
        "uring" => Backend::Uring,
        "threads" => Backend::Threads,
        other => {
            return Err(input(format!(
                "--backend: `{other}` is not one of auto, uring, threads"
            )))
        }
    };
    // Both read the real disk, which --emulate replaces with a model: they would be ignored.
    if emulated && !matches!(backend, Backend::Auto) {
        return Err(input(format!(
            "--backend: under --emulate the engine reads through the modelled device, not `{}`; \
             drop one of the two",
            a.backend
        )));
    }
    if emulated && a.fio {
        return Err(input(
            "--fio: fio reads the real disk, which --emulate replaces with a model, so it would \
             measure nothing comparable; drop one of the two",
        ));
    }
    if a.fio && !fio_installed() {
        // Asked for by name, so refused before any file is written or read rather than skipped
        // after minutes of measuring.
        return Err(input(
            "--fio: fio is not installed (no `fio` on PATH); install it (apt install fio) or drop \
             --fio",
        ));
    }
    // Each N reads min(file_size, total / N) of each of its files, in whole pages.
    let per_stream: Vec<u64> = streams
        .iter()
        .map(|&n| (file_size.min(total / n as u64)) / 4096 * 4096)
        .collect();
    if file_size < 4096 {
        return Err(input(format!(
            "--file-size: {} is less than one 4 KiB page; give 4KiB or more",
            ByteLen(file_size)
        )));
    }
    if let Some(i) = per_stream.iter().position(|&b| b == 0) {
        return Err(input(format!(
            "--total-size: {} split over {} streams leaves less than a page each; raise it",
            ByteLen(total),
            streams[i]
        )));
    }
    let machine_bytes = physical_memory_bytes();
    // Every reader holds a buffer of one read, which is never more than its file: N of them must
    // fit in half this machine's memory beside the engine's budget, or the bench is stopped by
    // the allocator (or the kernel's OOM killer) after its files are written.
    if let Some((n, buf)) = streams
        .iter()
        .zip(&per_stream)
        .map(|(&n, &bytes)| (n, reader_buffer_bytes(request, bytes)))
        .find(|&(n, buf)| u64::from(n).saturating_mul(buf) > machine_bytes / 2)
    {
        return Err(input(format!(
            "--request: {n} readers each hold a buffer of one read ({}), {} in all, more than \
             half this machine's memory ({}); lower --request or --streams",
            ByteLen(buf),
            ByteLen(u64::from(n).saturating_mul(buf)),
            ByteLen(machine_bytes)
        )));
    }
    let memory: Vec<ByteLen> = streams
        .iter()
        .zip(&per_stream)
        .zip(&readahead_max)
        .map(|((&n, &bytes), &window)| match memory {
            Some(m) => m,
            None if emulated => ByteLen::gib(1),
            None => auto_memory(n, bytes, window, max_io, machine_bytes),
        })
        .collect();
    // The engine's own checks of --memory, --max-io and --queue-depth, on an in-memory engine,
    // before any file is written or measured, and before the window is weighed against the
    // budget: a budget too small for any read was refused as a bad --readahead-max, which the
    // user may not have given.
    for m in memory.iter().collect::<std::collections::BTreeSet<_>>() {
        Engine::builder()
            .memory(*m)
            .max_io(max_io)
            .queue_depth(a.queue_depth)
            .backend(Backend::Noop(NoopBackend::new()))
            .build()
            .map_err(|e| match e {
                EngineError::Setting { setting, message } => {
                    let flag = match setting {
                        "max_io" => "--max-io",
                        "queue_depth" => "--queue-depth",
                        "memory" => "--memory",
                        other => other,
                    };
                    // The engine's words name its settings; the user wrote flags.
                    let message = message.replace("max_io", "--max-io");
                    input(format!("{flag}: {message}"))
                }
                other => input(format!("engine: {other}")),
            })?;
    }
    // No fetch can be larger than the engine's whole budget (the policy halves a refused window
    // until it fits), so such a window would name a setting no read used; the simulator refuses
    // policy.readahead_max above host.memory alike.
    if let Some(((n, m), w)) = streams
        .iter()
        .zip(&memory)
        .zip(&readahead_max)
        .find(|((_, m), w)| **w > **m)
    {
        return Err(input(format!(
            "--readahead-max: {w} is more than the engine's memory budget ({m} for {n} \
             stream(s)), which every window must fit in; give at most {m}, or raise --memory"
        )));
    }
    // Each N gets its own files, exactly as large as its streams read (see the module docs); an N
    // listed twice reuses its set.
    let mut files: Vec<(String, u64)> = Vec::new();
    let mut first_file: Vec<usize> = Vec::with_capacity(streams.len());
    for (k, &n) in streams.iter().enumerate() {
        if let Some(j) = streams[..k].iter().position(|&m| m == n) {
            first_file.push(first_file[j]);
            continue;
        }
        first_file.push(files.len());
        files.extend((0..n).map(|i| (format!("n{n}/stream-{i:04}.dat"), per_stream[k])));
    }
    let names: Vec<String> = if a.policy.is_empty() {
        DEFAULT_POLICIES
            .iter()
            .filter(|p| {
                readahead_max
                    .iter()
                    .all(|w| check_policy(&policy_config(p, *w)).is_ok())
            })
            .map(|p| p.to_string())
            .collect()
    } else {
        // A policy named twice is one row of the results: measured once.
        let mut seen = std::collections::HashSet::new();
        a.policy
            .iter()
            .filter(|p| seen.insert(p.as_str()))
            .cloned()
            .collect()
    };
    // Only MSP runs in the RAID driver's cache: without an `msp+...` policy a size for it would
    // be taken and never used.
    if a.raid_cache.is_some() && !names.iter().any(|n| n.starts_with("msp+")) {
        return Err(input(format!(
            "--raid-cache: only `msp+seqp` and `msp+saseqp` use the RAID driver's cache, and \
             --policy runs {}; add one of them or drop --raid-cache",
            names.join(", ")
        )));
    }
    let engine_backend = match &emulate {
        Some(e) => Backend::Emulated(e.clone()),
        None => Backend::Auto,
    };
    // Each N's window, once: a policy must run under every one.
    let windows: std::collections::BTreeSet<ByteLen> = readahead_max.iter().copied().collect();
    for (p, w) in names
        .iter()
        .flat_map(|p| windows.iter().map(move |w| (p, *w)))
    {
        check_policy_on(&policy_config(p, w), &engine_backend).map_err(|e| {
            // The library's own words for this one are advice to a programmer (build_stack).
            let why = match e {
                foresight_engine::EngineError::Policy(
                    foresight_policy::PolicyError::NeedsStack(_),
                ) => "it prefetches into a second cache below the page cache (a storage \
                      tier's), which the engine does not have"
                    .to_string(),
                foresight_engine::EngineError::Setting { message, .. } => {
                    format!("{message} (here: --emulate PRESET --disks N)")
                }
                other => other.to_string(),
            };
            input(format!(
                "--policy: `{p}` cannot run in the engine: {why}. The engine runs: {}",
                foresight_policy::POLICY_NAMES
                    .iter()
                    .filter(|n| { check_policy_on(&policy_config(n, w), &engine_backend).is_ok() })
                    .copied()
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
    }
    Ok(Plan {
        streams,
        per_stream,
        files,
        first_file,
        dir: a.dir.clone(),
        policies: names,
        emulate,
        emulated_label,
        raid_cache,
        request,
        readahead_max,
        memory,
        max_io,
        queue_depth: a.queue_depth,
        duration,
        limit_io,
        limit_depth: a.limit_depth,
        backend,
        repeat: a.repeat,
    })
}

/// `cfg` with the host scheduler `--scheduler` names and the `--antic-expire` given, if any.
fn emulation(
    cfg: EmulatedConfig,
    scheduler: Option<&str>,
    antic_expire: Option<&str>,
) -> anyhow::Result<EmulatedConfig> {
    let mut cfg = match scheduler {
        None => cfg,
        Some(name) => cfg.scheduler(name).map_err(|_| {
            input(format!(
                "--scheduler: `{name}` is not a host scheduler; choose noop, deadline or \
                 anticipatory"
            ))
        })?,
    };
    if let Some(text) = antic_expire {
        if cfg.scheduler != Scheduler::Anticipatory {
            return Err(input(
                "--antic-expire: only the anticipatory scheduler holds the disk for a reader; \
                 add --scheduler anticipatory or drop --antic-expire",
            ));
        }
        let d = parse_duration(text).map_err(|e| input(format!("--antic-expire: {e}")))?;
        if d > foresight_core::Duration::from_secs(1) {
            // A disk held idle longer than a second for one reader is a stalled disk, not
            // anticipation (the simulator refuses it too).
            return Err(input(format!(
                "--antic-expire: {text} is more than 1s; Linux's default is 6ms"
            )));
        }
        cfg.antic_expire = d;
    }
    Ok(cfg)
}

/// The emulated disk's scheduler as the report names it, with its wait when it anticipates.
fn scheduler_label(cfg: &EmulatedConfig) -> String {
    match cfg.scheduler {
        Scheduler::Noop => "noop scheduler".into(),
        Scheduler::Deadline => "deadline scheduler".into(),
        Scheduler::Anticipatory => {
            format!("anticipatory scheduler, antic_expire {}", cfg.antic_expire)
        }
    }
}

fn policy_config(name: &str, readahead_max: ByteLen) -> PolicyConfig {
    PolicyConfig {
        name: name.to_string(),
        readahead_max,
        ..PolicyConfig::default()
    }
}

/// `N` of the stream scheduler on the real disk: reads per stream per turn.
const REAL_DISK_STREAMS_PER_TURN: u32 = 4;
/// `M` of the stream scheduler on the real disk: with R = 8 MiB and N = 4, D = M / (R*N) = 8.
const REAL_DISK_STREAMS_MEMORY_BYTES: u64 = 256 << 20;

/// The engine's policy settings for `policy` under plan `p`, with the window `readahead_max`
/// (the one of the N being measured).
fn engine_policy_config(p: &Plan, readahead_max: ByteLen, policy: &str) -> PolicyConfig {
    let mut cfg = policy_config(policy, readahead_max);
    if p.emulate.is_none() {
        // The stream scheduler's defaults are paper 001's, for a 55 MB/s disk (R = 8 MiB, N = 1,
        // M = 16 MiB): two 8 MiB reads in flight. Each dispatched stream has one R-byte read in
        // flight at a time, so the set keeps D*R bytes in flight; a device that wants as many
        // bytes in flight as the limit reader keeps (16 x 4 MiB) needs D = 8, and N = 4 gives
        // M = D*R*N = 256 MiB, each stream reading 32 MiB per turn (section 5.4: R, D, N and M
        // are set for the I/O subsystem at hand). With D = 4 (M = 128 MiB) a run of 256 streams
        // on this machine's virtual disk had 8 reads of 4 MiB in flight for 87% of its time, no
        // fetch refused for memory, and the disk completed the reads handed to it together, each
        // batch half the bytes the limit reader keeps in flight: 0.82 of the limit against
        // 0.99 with D = 8 (medians of 14 alternated rounds; at 16 streams, whose turns run on
        // in long files, D = 4 read as fast as D = 8).
        // Small files cut reads short: at 1,024 streams of 4 MiB files a stream's one read is
        // the 3 MiB after its first request, and 8 streams kept 24 MiB in flight (0.70 of the
        // limit). The set is counted in bytes in flight instead, D*R = 64 MiB, so 21 such
        // streams go at once (0.85; medians of 15 alternated rounds, ARCHITECTURE.md).
        cfg.streams.per_turn = REAL_DISK_STREAMS_PER_TURN;
        cfg.streams.memory_bytes = REAL_DISK_STREAMS_MEMORY_BYTES;
        cfg.streams.dispatch_limit = DispatchLimit::BytesInFlight;
        // M >= D*R*N (paper 001_9c47c4c84914efc3.txt, section 4.3), which also bounds the
        // turns a byte-counted set runs at once (`DispatchLimit`): `dispatch_set` refuses a
        // config that breaks it.
        if let Err(e) = cfg.streams.dispatch_set() {
            panic!("the real disk's stream scheduler: {e}");
        }
    }
    cfg
}

fn log(started: Instant, line: &str) {
    note!("[{:>7.1}s] {line}", started.elapsed().as_secs_f64());
}

/// Runs `foresight bench`.
pub fn run(a: &BenchArgs) -> anyhow::Result<()> {
    // Before the plan, which looks at the directory and the disk under it (a hung mount holds
    // it up): a stop there took the signal's default action and ended without a word.
    crate::cleanup::say_on_signal("the bench had not begun, so nothing was written");
    let p = plan(a)?;
    // `plan` compared the hard limit with what the largest N needs; the soft one may be lower.
    let need = open_files_needed(p.streams.iter().copied().max().unwrap_or(1));
    foresight_engine::measure::raise_open_files_limit(need)
        .with_context(|| format!("raising the open-files limit (ulimit -n) toward {need}"))?;
    let started = Instant::now();
    // The file being written when the signal comes, if one is, is registered for removal, and
    // the handler names it after this note; a stop while measuring removes nothing.
    crate::cleanup::say_on_signal(
        "the bench had not finished, so no table is printed; the files written in full are kept \
         for the next run",
    );
    let paths = prepare_files(&p, started)?;
    if a.fio {
        for (k, &n) in p.streams.iter().enumerate() {
            let files = &paths[p.first_file[k]..p.first_file[k] + n as usize];
            if let Some(other) = foreign_entry(files)? {
                return Err(input(format!(
                    "--fio: {} is not one of the bench's files, and fio reads every file in the \
                     directory of an N's files (a list of their names can be longer than fio \
                     takes); remove it or drop --fio",
                    other.display()
                )));
            }
        }
    }
    if p.emulate.is_some() {
        log(started, "kernel: not measured under --emulate (the kernel reads the real disk, not the modelled one)");
    } else if in_memory_fs(&p.dir).unwrap_or(false) {
        log(
            started,
            &format!(
                "warning: {} is in memory (tmpfs): its files stay cached, so every row measures \
                 memory copies, not a disk; give a --dir on a disk",
                p.dir.display()
            ),
        );
    }
    let mut rows: Vec<Summary> = Vec::new();
    // One prefaulted mapping for every engine of the run: faulting in gigabytes costs seconds
    // per engine on a virtual machine (the host backs each page the guest freed again).
    let arena = ArenaShelf::new();
    // Progress lines align their rates whichever policy's name is longest.
    let policy_w = p.policies.iter().map(String::len).max().unwrap_or(0).max(5);
    for (k, &n) in p.streams.iter().enumerate() {
        let bytes = p.per_stream[k];
        let memory = p.memory[k];
        let window = p.readahead_max[k];
        let files = &paths[p.first_file[k]..p.first_file[k] + n as usize];
        log(started, &n_line(n, bytes, p.repeat, memory, window));
        let mut samples: Vec<(u32, Row)> = Vec::new();
        for round in 0..p.repeat {
            let mut take = |r: Row| {
                log(
                    started,
                    &format!(
                        "  round {} {:<7} {:<policy_w$} {:>9.1} MiB/s  cpu {:.2} s  {}",
                        round + 1,
                        r.method,
                        r.policy.as_deref().unwrap_or(""),
                        r.mib_s,
                        r.cpu_s,
                        r.note
                    ),
                );
                samples.push((round, r));
            };
            // Each round runs the methods in a different order (rotated by one), so that no method
            // always follows the same one: a virtual disk's host may still hold what the method
            // before read, and the medians should not all inherit that advantage.
            let methods = p.policies.len() + 2;
            for k in 0..methods {
                match (k + round as usize) % methods {
                    0 => {
                        if p.emulate.is_some() {
                            // The model places one file; its single-reader rate does not depend
                            // on which.
                            take(measure_limit(&p, &files[..1], bytes, n)?);
                        } else {
                            take(measure_limit(&p, files, bytes, n)?);
                        }
                        if a.fio && p.emulate.is_none() {
                            take(run_fio(&p, files, bytes, n)?);
                        }
                    }
                    1 => {
                        if p.emulate.is_none() {
                            take(measure_kernel(&p, files, bytes, n)?);
                        }
                    }
                    i => take(measure_engine(
                        &p,
                        files,
                        bytes,
                        n,
                        (memory, window),
                        &p.policies[i - 2],
                        &arena,
                    )?),
                }
            }
        }
        rows.extend(medians(samples));
    }
    crate::cleanup::say_on_signal(
        "the bench had finished measuring, but its table on standard output may be cut short; \
         its files are kept for the next run",
    );
    // Named as `sim` and `devices` name it (the context's words): the system's words alone ("No
    // space left on device") read as a fault of the disk under test.
    print_rows(&p, &rows, a.json, &mut std::io::stdout().lock()).context(crate::WritingStdout)
}

/// One (method, policy) over all rounds of one N.
struct Summary {
    row: Row,
    /// The median over the rounds of this method's rate divided by the limit's rate in the same
    /// round; `None` when no round measured the limit.
    ratio_to_limit: Option<f64>,
    /// The rounds it was measured in.
    rounds: usize,
    /// The lowest and the highest of those rounds' rates, MiB/s.
    mib_s_range: (f64, f64),
}

/// The median of `v` (the mean of the middle two for an even count); `v` is not empty.
fn median(mut v: Vec<f64>) -> f64 {
    assert!(!v.is_empty(), "the median of nothing");
    v.sort_by(|a, b| a.total_cmp(b));
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// One summary per (method, policy): the median rate and CPU time over the rounds, the largest
/// memory peak, the spread of rates in the note, and the ratio to the limit.
///
/// The ratio is taken round by round, each method against the limit measured in the same round,
/// and the median of those ratios is reported. This disk's rate drifts by 10-20% from one half
/// minute to the next (the limit's own rounds spread that much), and a round's methods run within
/// seconds of each other, so pairing them within a round removes most of the drift that dividing
/// one median by another would keep.
fn medians(samples: Vec<(u32, Row)>) -> Vec<Summary> {
    let limit_in = |round: u32| {
        samples
            .iter()
            .find(|(k, r)| *k == round && r.method == "limit")
            .map(|(_, r)| r.mib_s)
            .filter(|&l| l > 0.0)
    };
    let mut keys: Vec<(&'static str, Option<String>)> = Vec::new();
    for (_, r) in &samples {
        let k = (r.method, r.policy.clone());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .map(|(method, policy)| {
            let of: Vec<&(u32, Row)> = samples
                .iter()
                .filter(|(_, r)| r.method == method && r.policy == policy)
                .collect();
            let rates: Vec<f64> = of.iter().map(|(_, r)| r.mib_s).collect();
            let lo = rates.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = rates.iter().copied().fold(0.0, f64::max);
            let ratios: Vec<f64> = of
                .iter()
                .filter_map(|(k, r)| limit_in(*k).map(|l| r.mib_s / l))
                .collect();
            let mut note = format!("{lo:.0}..{hi:.0}");
            let cut_short = of.iter().any(|(_, r)| r.cut_short);
            if cut_short {
                note.push_str(" (stopped by --duration before the end of the data)");
            }
            if method == "fio" {
                // Which buffers fio ran with, which decides what its figure means.
                note.push_str(&format!(" ({})", of[0].1.note));
            }
            if method != "limit" && ratios.len() > 1 {
                let rlo = ratios.iter().copied().fold(f64::INFINITY, f64::min);
                let rhi = ratios.iter().copied().fold(0.0, f64::max);
                note.push_str(&format!(" (x limit by round {rlo:.2}..{rhi:.2})"));
            }
            Summary {
                ratio_to_limit: (!ratios.is_empty()).then(|| median(ratios)),
                rounds: of.len(),
                mib_s_range: (lo, hi),
                row: Row {
                    streams: of[0].1.streams,
                    method,
                    policy,
                    mib_s: median(rates),
                    memory_peak_bytes: of.iter().filter_map(|(_, r)| r.memory_peak_bytes).max(),
                    cpu_s: median(of.iter().map(|(_, r)| r.cpu_s).collect()),
                    note,
                    // The first round's: the array policy's decisions vary little between rounds.
                    array: of[0].1.array,
                    cut_short,
                    backend: of[0].1.backend.clone(),
                },
            }
        })
        .collect()
}

/// The progress line that opens the rounds of `n` streams, each reading `bytes`.
fn n_line(n: u32, bytes: u64, repeat: u32, memory: ByteLen, readahead_max: ByteLen) -> String {
    format!(
        "N = {n}: {n} stream(s) x {} each, {repeat} round(s), engine memory {memory}, \
         readahead_max {readahead_max}",
        readable_size(bytes)
    )
}

/// A size for a person to read (a memory peak, a stream's file): exact when it is a short whole
/// number of a unit (`64MiB`), else to a tenth of its largest unit, marked `~` (`~16.1MiB`).
/// `ByteLen`'s own `Display` is exact, so a peak of no whole MiB printed as `16512KiB`, which
/// takes arithmetic to read.
fn readable_size(bytes: u64) -> String {
    let text = ByteLen(bytes).rounded();
    match text.strip_prefix("about ") {
        Some(rest) => format!("~{rest}"),
        None => text,
    }
}

fn print_rows(
    p: &Plan,
    rows: &[Summary],
    as_json: bool,
    out: &mut impl std::io::Write,
) -> anyhow::Result<()> {
    let ratio = |s: &Summary| s.ratio_to_limit.unwrap_or(0.0);
    let in_memory = p.emulate.is_none() && in_memory_fs(&p.dir).unwrap_or(false);
    if as_json {
        let device = match (&p.emulated_label, in_memory) {
            (Some(_), _) => "emulated",
            (None, true) => "memory",
            (None, false) => "disk",
        };
        let v: Vec<_> = rows
            .iter()
            .map(|s| {
                let r = &s.row;
                // The N's figures: the bytes each stream read, and what the engine ran with.
                let k = p.streams.iter().position(|&n| n == r.streams);
                let engine = r.method == "engine";
                json!({
                    "streams": r.streams,
                    "method": r.method,
                    "policy": r.policy,
                    "device": device,
                    "emulated_device": p.emulated_label,
                    "backend": r.backend,
                    "file_bytes": k.map(|k| p.per_stream[k]),
                    // The limit's read size; fio's blocks are in its note, per file size.
                    "request_bytes": match r.method {
                        "kernel" | "engine" => Some(p.request),
                        "limit" => Some(p.limit_io),
                        _ => None,
                    },
                    "memory_bytes": k.filter(|_| engine).map(|k| p.memory[k].0),
                    "readahead_max_bytes": k.filter(|_| engine).map(|k| p.readahead_max[k].0),
                    "rounds": s.rounds,
                    "mib_s": (r.mib_s * 10.0).round() / 10.0,
                    "mib_s_min": (s.mib_s_range.0 * 10.0).round() / 10.0,
                    "mib_s_max": (s.mib_s_range.1 * 10.0).round() / 10.0,
                    "stopped_by_duration": r.cut_short,
                    "ratio_to_limit": (ratio(s) * 1000.0).round() / 1000.0,
                    "memory_peak_bytes": r.memory_peak_bytes,
                    "cpu_s": (r.cpu_s * 100.0).round() / 100.0,
                    "scheduler": p.emulate.as_ref().map(|e| e.scheduler),
                    "antic_expire_ns": p.emulate.as_ref()
                        .filter(|e| e.scheduler == Scheduler::Anticipatory)
                        .map(|e| e.antic_expire.0),
                    "raid_fetches": r.array.map(|a| a.fetches),
                    "raid_prefetched_bytes": r.array.map(|a| a.prefetched_bytes),
                    "raid_wasted_bytes": r.array.map(|a| a.wasted_bytes),
                    "raid_cache_peak_bytes": r.array.map(|a| a.peak_bytes),
                })
            })
            .collect();
        writeln!(out, "{}", serde_json::to_string(&v)?)?;
        return Ok(());
    }
    // The policy column is as wide as its longest name (`msp+saseqp` is longer than the
    // header), so the columns after it stay aligned.
    let policy_w = rows
        .iter()
        .filter_map(|s| s.row.policy.as_deref())
        .map(str::len)
        .chain(["policy".len()])
        .max()
        .unwrap_or(0)
        .max(8);
    let device = match (&p.emulate, &p.emulated_label) {
        (Some(e), Some(label)) => format!("emulated {label} ({})", scheduler_label(e)),
        (Some(e), None) => format!("emulated device ({})", scheduler_label(e)),
        // On tmpfs every read is a copy from memory and the files cannot be made cold: calling
        // it a disk would pass memory-copy rates off as the device's.
        (None, _) if in_memory => format!(
            "{} (in memory, not on a disk: no row measures a device)",
            p.dir.display()
        ),
        (None, _) => format!("the disk under {}", p.dir.display()),
    };
    writeln!(
        out,
        "foresight bench on {device}: {} reads, readahead_max {}, engine memory {}, queue depth {}",
        ByteLen(p.request),
        p.readahead_max
            .iter()
            .map(|w| w.to_string())
            .collect::<Vec<_>>()
            .join("/"),
        p.memory
            .iter()
            .map(|m| m.to_string())
            .collect::<Vec<_>>()
            .join("/"),
        p.queue_depth
    )?;
    writeln!(
        out,
        "{:>7}  {:<7} {:<policy_w$} {:>10} {:>9} {:>14} {:>7}  MiB/s range",
        "streams", "method", "policy", "MiB/s", "x limit", "memory peak", "cpu s"
    )?;
    for s in rows {
        let r = &s.row;
        writeln!(
            out,
            "{:>7}  {:<7} {:<policy_w$} {:>10.1} {:>9.3} {:>14} {:>7.2}  {}",
            r.streams,
            r.method,
            r.policy.as_deref().unwrap_or("-"),
            r.mib_s,
            ratio(s),
            r.memory_peak_bytes
                .map(readable_size)
                .unwrap_or_else(|| "-".into()),
            r.cpu_s,
            r.note
        )?;
    }
    writeln!(
        out,
        "Medians of {} round(s) (memory peak: the largest); x limit is the median of each round's \
         rate over that round's limit.",
        p.repeat
    )?;
    writeln!(
        out,
        "Each stream reads its own file of min(--file-size, --total-size / N), whole: {}.",
        p.streams
            .iter()
            .zip(&p.per_stream)
            .map(|(n, b)| {
                // The exact bytes too when the readable size is rounded: what a file of the run
                // holds, to the byte.
                let readable = readable_size(*b);
                if readable.starts_with('~') {
                    format!("N={n}: {readable} ({b} bytes)")
                } else {
                    format!("N={n}: {readable}")
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    )?;
    if rows.iter().any(|s| s.row.cut_short) {
        writeln!(
            out,
            "Rows noted `stopped by --duration` read less than that: --duration {:?} ended them first.",
            p.duration
        )?;
    }
    Ok(())
}

/// Why files of `need` more bytes may not be written where `free` bytes are free, if they may not.
fn space_refusal(dir: &std::path::Path, need: u64, free: u64) -> Option<String> {
    // Where not one page is free (a full disk, or a pseudo file system such as /proc), no
    // smaller size fits either: the way out is another file system.
    if need > 0 && free - free / 10 < 4096 {
        return Some(format!(
            "--dir {}: its file system has {} free, not room for one 4 KiB page of the files; \
             give a --dir on a file system with free space",
            dir.display(),
            ByteLen(free).rounded()
        ));
    }
    (need.saturating_add(free / 10) > free).then(|| {
        format!(
            "--dir {}: the files need {} more, and a tenth of the free space is kept spare, but only {} is free; lower --total-size or --file-size",
            dir.display(),
            ByteLen(need).rounded(),
            ByteLen(free).rounded()
        )
    })
}

/// The refusal of a `--dir` (`dir`) in which `path` could not be made. The system's message alone
/// ("Permission denied") names neither the flag nor the way out.
fn dir_refusal(dir: &Path, path: &Path, e: &std::io::Error) -> anyhow::Error {
    let advice = match e.kind() {
        std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem => {
            "; give a --dir this user may write in (it is created if missing)"
        }
        _ => "; give a --dir where files can be made",
    };
    input(format!(
        "--dir {}: creating {}: {e}{advice}",
        dir.display(),
        path.display()
    ))
}

/// Creates (or reuses) the files; returns their paths.
fn prepare_files(p: &Plan, started: Instant) -> anyhow::Result<Vec<PathBuf>> {
    let paths: Vec<PathBuf> = p.files.iter().map(|(name, _)| p.dir.join(name)).collect();
    let size_of = |i: usize| p.files[i].1;
    // A file of the right size with holes (made by hand, or copied sparsely) is not reused: its
    // holes read as zeros without touching the disk, and every method would look faster. Nor is
    // one preallocated and never written (`fallocate`): it has all its blocks, but they read as
    // zeros from memory too (a 64 MiB one read at 12 GiB/s, the "limit" at 33 GiB/s).
    let reusable = |i: usize| {
        use std::os::unix::fs::MetadataExt as _;
        std::fs::symlink_metadata(&paths[i]).is_ok_and(|m| {
            m.file_type().is_file() && m.len() == size_of(i) && m.blocks() * 512 >= m.len()
        }) && foresight_engine::measure::all_data(&paths[i]).unwrap_or(false)
    };
    // The directory, or the nearest part of it that exists, must be one: beneath a file nothing
    // can be made, and the free space of the file's file system would be beside the point.
    if let Some(file) = p.dir.ancestors().find(|a| a.exists() && !a.is_dir()) {
        return Err(input(format!(
            "--dir {}: {} is not a directory; give a directory (it is created if missing)",
            p.dir.display(),
            file.display()
        )));
    }
    // A file this user may not read cannot be measured, nor written again: found when the first
    // method opened it, it ended the bench with the bare "Permission denied" after the others
    // were written.
    if let Some(i) = (0..paths.len()).find(|&i| {
        std::fs::symlink_metadata(&paths[i]).is_ok_and(|m| m.file_type().is_file())
            && std::fs::File::open(&paths[i])
                .is_err_and(|e| e.kind() == std::io::ErrorKind::PermissionDenied)
    }) {
        return Err(input(format!(
            "--dir {}: {} is a bench file this user may not read; make it readable, remove it, \
             or give a --dir of this user's",
            p.dir.display(),
            paths[i].display()
        )));
    }
    let missing: Vec<usize> = (0..paths.len()).filter(|&i| !reusable(i)).collect();
    // Only a regular file (or nothing) may stand where a file is to be written: creating over a
    // FIFO waits for a reader for good, and over a symbolic link writes wherever it points.
    for &i in &missing {
        if let Some(kind) = std::fs::symlink_metadata(&paths[i])
            .ok()
            .and_then(|m| not_a_file(m.file_type()))
        {
            return Err(input(format!(
                "--dir {}: {} is {kind}, where the bench would write one of its files; remove it or \
                 give another --dir",
                p.dir.display(),
                paths[i].display()
            )));
        }
    }
    // Saturating: the files of every N given can come to more than a u64 holds (`--streams
    // 1,2,3,4 --file-size 4EiB` is 16 EiB), and a sum that wrapped passed the check for space
    // and wrote until the disk was full.
    let need = missing
        .iter()
        .fold(0u64, |sum, &i| sum.saturating_add(size_of(i)));
    let total = p
        .files
        .iter()
        .fold(0u64, |sum, (_, b)| sum.saturating_add(*b));
    log(
        started,
        &format!(
            "{} files, {} in all under {} ({} to write)",
            paths.len(),
            ByteLen(total).rounded(),
            p.dir.display(),
            ByteLen(need).rounded()
        ),
    );
    if need > 0 {
        // Measured where the directory will be, before anything is created, so that a refusal
        // leaves nothing behind.
        let existing = p
            .dir
            .ancestors()
            .find(|a| a.exists())
            .unwrap_or(std::path::Path::new("."));
        // Where nothing can be made, no size fits: asking for smaller files would mislead.
        if !may_create_in(existing) {
            return Err(input(format!(
                "--dir {}: this user may not create files in {} (no write permission, or a \
                 read-only file system); give a --dir this user may write in (it is created if \
                 missing)",
                p.dir.display(),
                existing.display()
            )));
        }
        let free = free_disk_bytes(existing)
            .with_context(|| format!("checking free space under {}", existing.display()))?;
        if let Some(refusal) = space_refusal(&p.dir, need, free) {
            return Err(input(refusal));
        }
    }
    for dir in paths.iter().filter_map(|f| f.parent()) {
        std::fs::create_dir_all(dir).map_err(|e| dir_refusal(&p.dir, dir, &e))?;
    }
    let mut chunk = vec![0u8; WRITE_CHUNK_BYTES];
    let mut written = 0u64;
    let mut last_note = Instant::now();
    for &i in &missing {
        let path = &paths[i];
        // Created and registered in one step, so that no moment is left in which a signal would
        // leave it cut short under the name a complete file has.
        let (mut unfinished, mut f) =
            Unfinished::create(path).map_err(|e| dir_refusal(&p.dir, path, &e))?;
        let mut left = size_of(i);
        let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ (i as u64).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        while left > 0 {
            // xorshift64*: distinct, incompressible bytes, far faster than the disk.
            for word in chunk.chunks_exact_mut(8) {
                state ^= state >> 12;
                state ^= state << 25;
                state ^= state >> 27;
                word.copy_from_slice(&state.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
            }
            let n = left.min(chunk.len() as u64) as usize;
            f.write_all(&chunk[..n]).with_context(|| {
                format!(
                    "writing {} (the part written is removed; a full disk needs room, or a \
                     smaller --total-size or --file-size)",
                    path.display()
                )
            })?;
            left -= n as u64;
            written += n as u64;
            if last_note.elapsed() > Duration::from_secs(5) {
                log(
                    started,
                    &format!(
                        "  written {} of {}",
                        ByteLen((written >> 20) << 20).rounded(),
                        ByteLen(need).rounded()
                    ),
                );
                last_note = Instant::now();
            }
        }
        // Dirty pages survive DONTNEED: the data must be on disk before any measurement.
        f.sync_all()
            .with_context(|| format!("syncing {}", path.display()))?;
        unfinished.done();
    }
    Ok(paths)
}

/// A bench file being written: removed if the writing fails (a full disk) or a signal stops the
/// run before it is complete and synced. A file cut short would keep its space taken under the
/// name of a bench file; a complete one is kept, for the next run to reuse.
struct Unfinished<'a> {
    path: &'a Path,
    on_signal: Option<crate::cleanup::Registered>,
}

impl<'a> Unfinished<'a> {
    /// Creates (or empties) the file at `path`, registered for removal on a signal from the
    /// moment it exists.
    fn create(path: &'a Path) -> std::io::Result<(Unfinished<'a>, std::fs::File)> {
        let (file, on_signal) =
            crate::cleanup::create_removed_on_signal(path.to_path_buf(), |p| {
                std::fs::File::create(p)
            })?;
        let unfinished = Unfinished {
            path,
            on_signal: Some(on_signal),
        };
        Ok((unfinished, file))
    }

    /// The file is whole and on disk: it stays.
    fn done(&mut self) {
        self.on_signal = None;
    }
}

impl Drop for Unfinished<'_> {
    fn drop(&mut self) {
        // Still registered while it is removed: a signal meanwhile removes it too.
        if let Some(_registered) = self.on_signal.take() {
            let _ = std::fs::remove_file(self.path);
        }
    }
}

/// What a directory entry is, when it is not a regular file.
fn not_a_file(t: std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt as _;
    if t.is_file() {
        None
    } else if t.is_symlink() {
        Some("a symbolic link")
    } else if t.is_dir() {
        Some("a directory")
    } else if t.is_fifo() {
        Some("a FIFO")
    } else if t.is_socket() {
        Some("a socket")
    } else if t.is_block_device() || t.is_char_device() {
        Some("a device")
    } else {
        Some("something other than a regular file")
    }
}

fn evict(paths: &[PathBuf]) -> anyhow::Result<()> {
    for p in paths {
        evict_from_page_cache(p)
            .with_context(|| format!("evicting {} from the page cache", p.display()))?;
    }
    Ok(())
}

/// The limit reads the very bytes the N streams read (their files, one after another, as one
/// sequence), so that it meets the same caches below the page cache as the other methods (a
/// virtual disk's host may cache what was read recently).
fn measure_limit(p: &Plan, files: &[PathBuf], bytes: u64, n: u32) -> anyhow::Result<Row> {
    evict(files)?;
    let backend = match &p.emulate {
        Some(cfg) => Backend::Emulated(cfg.clone().spread(1)),
        None => Backend::Auto,
    };
    let r = sequential_read_files(
        backend,
        files,
        bytes,
        p.limit_io,
        p.limit_depth,
        Some(p.duration),
    )?;
    Ok(Row {
        streams: n,
        method: "limit",
        policy: None,
        mib_s: r.mib_s(),
        // The buffers it made: fewer than the depth when the data takes fewer reads.
        memory_peak_bytes: Some(r.buffer_peak_bytes),
        cpu_s: r.cpu_seconds,
        note: format!(
            "({} x {} in flight on {}, {})",
            p.limit_depth
                .min(r.buffer_peak_bytes.div_ceil(p.limit_io) as usize),
            ByteLen(p.limit_io),
            r.backend,
            if r.direct { "O_DIRECT" } else { "buffered" }
        ),
        array: None,
        cut_short: r.bytes < bytes * files.len() as u64,
        backend: Some(r.backend.to_string()),
    })
}

/// Whether a `fio` runs here (`fio --version` succeeds).
fn fio_installed() -> bool {
    std::process::Command::new("fio")
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// fio's read size for files of `file_bytes`: the file split into as few blocks of whole pages
/// as the limit's read size allows, as even as pages go (16 MiB files in 4 MiB reads, 6 MiB ones
/// in 3 MiB reads). fio reads whole blocks only, and refuses a file smaller than one block
/// ("blocksize is larger than data set range"); so the limit's size alone left up to a block of
/// each file unread, and the largest block dividing the file could be far below the limit's (4
/// KiB for a file of a prime number of pages), measuring another request size than the limit row
/// beside it. This one is more than half the limit's (or the whole file), and leaves less than a
/// page per block unread.
fn fio_block_bytes(limit_io: u64, file_bytes: u64) -> u64 {
    let pages = (file_bytes / 4096).max(1);
    let most = (limit_io / 4096).clamp(1, pages);
    pages / pages.div_ceil(most) * 4096
}

/// The bytes fio reads of one file of `file_bytes` in blocks of `block_bytes`: its whole blocks.
fn fio_bytes_of_file(file_bytes: u64, block_bytes: u64) -> u64 {
    file_bytes / block_bytes * block_bytes
}

/// An entry of the directory of `files` (one N's files, alone in it) that is not one of them,
/// if there is one: fio, given the directory, would read it too, and its rate would cover other
/// data than the limit's beside it.
fn foreign_entry(files: &[PathBuf]) -> anyhow::Result<Option<PathBuf>> {
    let Some(dir) = files.first().and_then(|f| f.parent()) else {
        return Ok(None);
    };
    let ours: std::collections::HashSet<&std::ffi::OsStr> =
        files.iter().filter_map(|f| f.file_name()).collect();
    for entry in std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let entry = entry.with_context(|| format!("listing {}", dir.display()))?;
        if !ours.contains(entry.file_name().as_os_str()) {
            return Ok(Some(entry.path()));
        }
    }
    Ok(None)
}

fn run_fio(p: &Plan, files: &[PathBuf], file_bytes: u64, n: u32) -> anyhow::Result<Row> {
    evict(files)?;
    let block_bytes = fio_block_bytes(p.limit_io, file_bytes);
    // Each N's files are alone in their directory, which fio reads whole (a list of 1,024 names
    // would pass fio's 4,096-character limit on an option's value).
    let dir = files[0].parent().context("a bench file has a directory")?;
    let huge = free_huge_page_bytes() >= p.limit_io * p.limit_depth as u64 + (2 << 20);
    // The directory's own bytes, not its lossy display: a name that is not UTF-8 was passed
    // with a replacement character, and fio failed to find it once everything else had run.
    let mut opendir = std::ffi::OsString::from("--opendir=");
    opendir.push(dir);
    let mut args = vec![
        "--name=foresight-limit".to_string(),
        "--file_service_type=sequential".to_string(),
        "--rw=read".to_string(),
        format!("--bs={block_bytes}"),
        format!("--iodepth={}", p.limit_depth),
        "--ioengine=io_uring".to_string(),
        "--direct=1".to_string(),
        "--output-format=terse".to_string(),
        "--terse-version=3".to_string(),
        // --duration bounds fio as it bounds every other method (fio stops at whichever of its
        // data's end and the runtime comes first).
        format!("--runtime={}ms", p.duration.as_millis().max(1)),
    ];
    if huge {
        args.push("--iomem=shmhuge".to_string());
    }
    // fio is a child process: its CPU time is not this process's, and is counted once it is
    // waited for.
    let cpu0 = children_cpu_seconds();
    let mut fio = std::process::Command::new("fio");
    fio.arg(opendir).args(&args);
    // A stop signal ends this process by `exit` from the stop thread (or by the default action):
    // fio, left running, went on reading the disk under init.
    foresight_engine::measure::end_with_parent(&mut fio);
    let out = fio.output().context("running fio")?;
    anyhow::ensure!(
        out.status.success(),
        "fio failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Terse v3: field 6 is the bytes read in KiB, field 7 the read bandwidth in KiB/s.
    let text = String::from_utf8_lossy(&out.stdout);
    let field = |i: usize| -> Option<f64> {
        text.lines()
            .last()
            .and_then(|l| l.split(';').nth(i))
            .and_then(|f| f.parse().ok())
    };
    let kib_s = field(6).context("reading fio's bandwidth")?;
    let read_kib = field(5).context("reading fio's bytes read")?;
    let data_bytes: u64 = files
        .iter()
        .map(|f| std::fs::metadata(f).map_or(0, |m| fio_bytes_of_file(m.len(), block_bytes)))
        .sum();
    let tail_bytes = file_bytes - fio_bytes_of_file(file_bytes, block_bytes);
    Ok(Row {
        streams: n,
        method: "fio",
        policy: None,
        mib_s: kib_s / 1024.0,
        memory_peak_bytes: None,
        cpu_s: children_cpu_seconds() - cpu0,
        note: format!(
            "{}{}",
            if huge {
                "huge-page buffers"
            } else {
                "4 KiB-page buffers (no free huge pages; see --fio)"
            },
            if tail_bytes > 0 {
                format!(
                    ", {} reads: the last {} of each {} file not read (fio reads whole blocks)",
                    ByteLen(block_bytes),
                    ByteLen(tail_bytes),
                    ByteLen(file_bytes)
                )
            } else if block_bytes == p.limit_io {
                String::new()
            } else {
                format!(
                    ", {} reads: the {} files in even blocks of at most --limit-io",
                    ByteLen(block_bytes),
                    ByteLen(file_bytes)
                )
            }
        ),
        array: None,
        cut_short: read_kib * 1024.0 < data_bytes as f64,
        backend: None,
    })
}

/// Bytes of reserved huge pages free now (`HugePages_Free` x `Hugepagesize` in `/proc/meminfo`),
/// or 0 where that cannot be read.
fn free_huge_page_bytes() -> u64 {
    meminfo(&["HugePages_Free:", "Hugepagesize:"]).map_or(0, |v| v[0] * v[1] * 1024)
}

/// The buffer a kernel or engine reader holds: one read of `request` bytes, or the whole file
/// when it is smaller (a read never asks for more than is left). Sized by the request alone, 4
/// KiB files read with `--request 1GiB` held 1 GiB per stream.
fn reader_buffer_bytes(request: u64, file_bytes: u64) -> u64 {
    request.min(file_bytes).max(1)
}

/// Runs `read_one(i, path, deadline, buf)` on one thread per file, all starting together; returns
/// the bytes read, the wall seconds until the last finished, the CPU seconds used, and which
/// readers got through their file's `file_bytes` (the length every file of the run has, passed in:
/// the emulated readers take no path, and a reader stopped by the deadline ends as a finished
/// one does, so only its count tells them apart). Each thread's `buf` of `buf_bytes` is written
/// before the clock starts: faulting in a fresh 1 MiB buffer for each of 1,024 threads costs
/// about a second on a virtual machine, which is not reading.
fn run_threads(
    files: &[PathBuf],
    file_bytes: u64,
    deadline_after: Duration,
    buf_bytes: usize,
    read_one: impl Fn(usize, &Path, Instant, &mut [u8]) -> std::io::Result<u64> + Send + Sync + 'static,
) -> anyhow::Result<Timing> {
    run_threads_with(
        files,
        file_bytes,
        deadline_after,
        move |_| vec![1u8; buf_bytes],
        read_one,
    )
}

/// [`run_threads`] with each thread's buffer made by `make_buf(i)`. The clock and the CPU count
/// start once every thread has made its buffer (a first barrier), and the readers start after
/// them (a second): taken before the threads were ready, as they once were, they counted the
/// faulting in of every buffer as reading, which made 4 KiB read with 256 MiB buffers take 0.8 s.
fn run_threads_with(
    files: &[PathBuf],
    file_bytes: u64,
    deadline_after: Duration,
    make_buf: impl Fn(usize) -> Vec<u8> + Send + Sync + 'static,
    read_one: impl Fn(usize, &Path, Instant, &mut [u8]) -> std::io::Result<u64> + Send + Sync + 'static,
) -> anyhow::Result<Timing> {
    let n = files.len();
    let ready = Arc::new(Barrier::new(n + 1));
    let go = Arc::new(Barrier::new(n + 1));
    let read_one = Arc::new(read_one);
    let make_buf = Arc::new(make_buf);
    let mut handles = Vec::with_capacity(n);
    for (i, path) in files.iter().enumerate() {
        let (ready, go) = (ready.clone(), go.clone());
        let read_one = read_one.clone();
        let make_buf = make_buf.clone();
        let path = path.clone();
        handles.push(
            std::thread::Builder::new()
                .name(format!("bench-{i}"))
                .stack_size(256 << 10)
                .spawn(move || {
                    let mut buf = make_buf(i);
                    ready.wait();
                    go.wait();
                    let deadline = Instant::now() + deadline_after;
                    read_one(i, &path, deadline, &mut buf).map(|b| (b, Instant::now()))
                })
                .context("starting a reader thread")?,
        );
    }
    ready.wait();
    let cpu0 = process_cpu_seconds();
    let t0 = Instant::now();
    go.wait();
    let mut bytes = 0;
    let mut through_s = Vec::with_capacity(n);
    for h in handles {
        let (b, end) = h
            .join()
            .map_err(|_| anyhow::anyhow!("a reader thread panicked"))?
            .context("a reader failed")?;
        bytes += b;
        if b >= file_bytes {
            through_s.push(end.duration_since(t0).as_secs_f64());
        }
    }
    through_s.sort_by(f64::total_cmp);
    Ok(Timing {
        bytes,
        secs: t0.elapsed().as_secs_f64(),
        cpu_s: process_cpu_seconds() - cpu0,
        streams: n,
        through: through_s.len(),
        // The (n/2 + 1)-th reader through: more than half of all the streams, counting only
        // those that read their whole file.
        half_done_s: through_s.get(n / 2).copied(),
        deadline_s: deadline_after.as_secs_f64(),
    })
}

/// What [`run_threads`] measured.
struct Timing {
    bytes: u64,
    /// Wall seconds until the last reader finished.
    secs: f64,
    cpu_s: f64,
    /// Readers, one per stream.
    streams: usize,
    /// Readers that read their whole file; the others were stopped by `--duration`.
    through: usize,
    /// Seconds until more than half of the readers had read their whole file, if they did: far
    /// below `secs` means a few streams were left behind and the run ended on a thin tail.
    half_done_s: Option<f64>,
    /// `--duration`, after which no reader starts a read.
    deadline_s: f64,
}

impl Timing {
    fn tail_note(&self) -> String {
        let mut note = if self.through == self.streams {
            format!(
                "half the streams done at {:.2} s of {:.2} s",
                self.half_done_s.unwrap_or(self.secs),
                self.secs
            )
        } else {
            // A reader stopped by the deadline has not read its file: counting it as done made
            // 100 streams of which none got through read "half the streams done at 20.00 s".
            format!(
                "stopped by --duration at {:.2} s with {} of {} streams through their files{}, \
                 the last reader ended at {:.2} s",
                self.deadline_s,
                self.through,
                self.streams,
                self.half_done_s
                    .map(|h| format!(" (half the streams through at {h:.2} s)"))
                    .unwrap_or_default(),
                self.secs
            )
        };
        if self.overran() {
            note += &format!(
                " (reads under way at the {:.2} s --duration deadline were waited for)",
                self.deadline_s
            );
        }
        note
    }

    /// Whether the reads under way at the deadline kept the measurement going for a noticeable
    /// while after it: a second, and a quarter of `--duration`.
    fn overran(&self) -> bool {
        self.secs > self.deadline_s + (self.deadline_s / 4.0).max(1.0)
    }
}

/// The default readahead window on the real disk for `n` streams: what the engine keeps at the
/// device at most, `queue_depth` reads of `max_io` (128 MiB with the defaults), shared among the
/// streams, at least one read of `max_io`, in whole pages, and no more than the budget (see
/// below): 128 MiB for one stream, 8 MiB for 16, 4 MiB for 256 and more.
///
/// This virtual disk completes the reads it holds together, not one by one: a `seqp` stream with
/// 32 MiB windows had its two windows (64 MiB, 16 reads) in flight, all 16 completed within about
/// 0.05 ms of each other, and the device then stood idle while the reader copied out the first
/// window (about 1.7 ms) before touching the mark that fetches the next: nothing in flight for
/// 8-9% of the run, once per two windows (the engine traced for one 4 GiB stream; 8 MiB and
/// 64 MiB windows idled as long, 7.5% and 9.6%, since the copy and the device's batch grow
/// together). With windows of at least the queue's bytes, the two windows a stream has asked for
/// are more than the engine may have at the device, so reads wait in its queue and each
/// completion hands the device the next, as the limit reader's do: nothing in flight for 0.6% of
/// the run. With many streams the streams together keep the queue full: n windows of the queue's
/// bytes over n, two each, are twice what the device may hold, as one stream's two windows are.
/// Each of them taking the one stream's 128 MiB instead made the default budget 4.5 GiB at 16
/// streams (4,032 MiB held at the peak) and a quarter of this machine's memory at 256 (5,273 MiB),
/// for no throughput the noise could show: alternated runs of `bench --streams 16` (10 of each,
/// 30 rounds) read a median 1.00 of the limit with 128 MiB windows and 0.94 with 8 MiB (a 1 GiB
/// budget, 256 MiB at the peak), while `streams`, which takes no window and ran beside them in
/// the same runs, moved as much (0.99 and 0.92); at 256 streams (4 runs of each, 12 rounds)
/// 0.96 with 128 MiB and 0.94 with 4 MiB (2,016 MiB at the peak); at 1,024 streams of 8 MiB,
/// where two 4 MiB windows are a stream's whole file and the budget is the same, 0.86 and 0.81,
/// with `streams`, identical in both, at 0.91 and 0.83 (ARCHITECTURE.md). The memory bound
/// (window <= budget) is checked where the plan is built; a default is kept within it, at most
/// the budget given or the 1 GiB every default budget has at least, so that a refusal names a
/// flag the user gave (a --max-io of 100MiB is the engine's to refuse, not a window of 3200MiB
/// the user never asked for).
fn real_disk_readahead_max(
    max_io: ByteLen,
    queue_depth: u32,
    n: u32,
    memory: Option<ByteLen>,
) -> ByteLen {
    let queue_bytes = max_io.0.saturating_mul(u64::from(queue_depth));
    let share_bytes = (queue_bytes / u64::from(n.max(1))).max(max_io.0);
    let window_bytes = share_bytes.min(memory.unwrap_or(ByteLen::gib(1)).0);
    ByteLen((window_bytes / 4096 * 4096).max(4096))
}

/// The engine's default budget on the real disk for `n` streams reading `bytes` each, with
/// readahead windows up to `readahead_max`: room for two windows per stream (the one being read
/// and the next, in flight: `seqp`'s steady state), or for what a stream reads if that is less,
/// plus the eighth of the budget the engine keeps for demand reads; within 1 GiB and a quarter of
/// the machine's memory, in whole MiB.
///
/// A smaller budget can cost throughput through memory pressure: `seqp` halves its windows when a
/// fetch is refused. Side by side on this machine's disk, round by round, 256 streams of 32 MiB
/// with 32 MiB windows (the default then) read 0.91-1.05 of the limit with 2 GiB and 0.88-1.11
/// with 4 GiB: no loss beyond the noise.
fn auto_memory(
    n: u32,
    bytes: u64,
    readahead_max: ByteLen,
    max_io: ByteLen,
    machine_bytes: u64,
) -> ByteLen {
    let per_stream_bytes = bytes.min(2 * readahead_max.0.max(max_io.0));
    let want = n as u64 * (per_stream_bytes + per_stream_bytes / 8);
    let cap = (machine_bytes / 4).max(1 << 30);
    ByteLen(want.clamp(1 << 30, cap).next_multiple_of(1 << 20))
}

/// This machine's memory (`MemTotal` of `/proc/meminfo`), or 4 GiB where it cannot be read.
fn physical_memory_bytes() -> u64 {
    machine_memory_bytes().unwrap_or(4 << 30)
}

/// This machine's memory (`MemTotal` of `/proc/meminfo`), if it can be read.
pub(crate) fn machine_memory_bytes() -> Option<u64> {
    meminfo(&["MemTotal:"]).map(|v| v[0] * 1024)
}

/// The values of `fields` (names with their colon) in `/proc/meminfo`, in order, as the numbers
/// it prints (kB for sizes, a count for `HugePages_*`); `None` if it cannot be read or a field is
/// missing.
fn meminfo(fields: &[&str]) -> Option<Vec<u64>> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    meminfo_fields(&text, fields)
}

fn meminfo_fields(text: &str, fields: &[&str]) -> Option<Vec<u64>> {
    fields
        .iter()
        .map(|name| {
            text.lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .collect()
}

fn mib_s(bytes: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        bytes as f64 / (1u64 << 20) as f64 / secs
    } else {
        0.0
    }
}

/// One stream's reads, the same for the kernel's buffered file and the engine's reader: up to
/// `bytes` in requests of `buf`'s length (the bench's request size), until the data ends or
/// `deadline` passes; returns how many bytes were read. With `timeout_ends` a read that times out
/// ends the stream as the deadline does: the engine's reader gives up at its read deadline with
/// `TimedOut`. A kernel file's `TimedOut` (a soft NFS mount, say) is a fault of the disk under
/// test, so without the flag it fails the measurement instead of shortening it quietly.
fn read_stream(
    r: &mut impl Read,
    bytes: u64,
    deadline: Instant,
    buf: &mut [u8],
    timeout_ends: bool,
) -> std::io::Result<u64> {
    let mut done = 0u64;
    while done < bytes && Instant::now() < deadline {
        let want = (bytes - done).min(buf.len() as u64) as usize;
        let got = match r.read(&mut buf[..want]) {
            Ok(n) => n,
            Err(e) if timeout_ends && e.kind() == std::io::ErrorKind::TimedOut => break,
            Err(e) => return Err(e),
        };
        if got == 0 {
            break;
        }
        done += got as u64;
    }
    Ok(done)
}

fn measure_kernel(p: &Plan, files: &[PathBuf], bytes: u64, n: u32) -> anyhow::Result<Row> {
    evict(files)?;
    // Opened before the clock starts, as the engine's readers and the limit's files are.
    let opened: Vec<_> = files
        .iter()
        .map(|f| std::fs::File::open(f).with_context(|| format!("opening {}", f.display())))
        .collect::<anyhow::Result<_>>()?;
    let opened = Arc::new(std::sync::Mutex::new(
        opened.into_iter().map(Some).collect::<Vec<_>>(),
    ));
    let t = run_threads(
        files,
        bytes,
        p.duration,
        reader_buffer_bytes(p.request, bytes) as usize,
        move |i, _, deadline, buf| {
            let mut f = opened.lock().expect("files")[i]
                .take()
                .expect("one file per thread");
            read_stream(&mut f, bytes, deadline, buf, false)
        },
    )?;
    Ok(Row {
        streams: n,
        method: "kernel",
        policy: None,
        mib_s: mib_s(t.bytes, t.secs),
        memory_peak_bytes: None,
        cpu_s: t.cpu_s,
        note: t.tail_note(),
        array: None,
        cut_short: t.bytes < bytes * u64::from(n),
        backend: None,
    })
}

fn measure_engine(
    p: &Plan,
    files: &[PathBuf],
    bytes: u64,
    n: u32,
    (memory, readahead_max): (ByteLen, ByteLen),
    policy: &str,
    arena: &ArenaShelf,
) -> anyhow::Result<Row> {
    evict(files)?;
    let backend = match &p.emulate {
        Some(cfg) => Backend::Emulated(cfg.clone().spread(n)),
        None => p.backend.clone(),
    };
    let cfg = engine_policy_config(p, readahead_max, policy);
    let built = Instant::now();
    let builder = Engine::builder().memory(memory);
    let builder = if p.emulate.is_none() {
        builder.prefault_from(arena)
    } else {
        builder.prefault(false)
    };
    let engine = builder
        .policy_config(cfg)
        .max_io(p.max_io)
        .queue_depth(p.queue_depth)
        .raid_cache(p.raid_cache)
        .backend(backend)
        .build()
        .map_err(|e| input(format!("engine: {e}")))?;
    let build_s = built.elapsed().as_secs_f64();
    // Open every file before the clock starts, in stream order (stream i reads file i).
    let readers: Vec<_> = files
        .iter()
        .map(|f| engine.open(f).map_err(|e| anyhow::anyhow!("{e}")))
        .collect::<anyhow::Result<_>>()?;
    let readers = Arc::new(std::sync::Mutex::new(
        readers.into_iter().map(Some).collect::<Vec<_>>(),
    ));
    let t = run_threads(
        files,
        bytes,
        p.duration,
        reader_buffer_bytes(p.request, bytes) as usize,
        move |i, _, deadline, buf| {
            let mut r = readers.lock().expect("readers")[i]
                .take()
                .expect("one reader per thread");
            // A read waiting at the deadline stops there, so the measurement ends on time even when
            // thousands of streams queue on a slow (emulated) device.
            r.set_read_deadline(Some(deadline));
            read_stream(&mut r, bytes, deadline, buf, true)
        },
    )?;
    let s = engine.stats();
    let note = format!(
        "{}{}, {} fetches, {} stalls, {} wasted, built in {build_s:.2} s, {}",
        s.backend,
        engine
            .fallback_reason()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default(),
        s.fetches,
        s.stalls,
        ByteLen(s.wasted_bytes / 4096 * 4096),
        t.tail_note()
    );
    Ok(Row {
        streams: n,
        method: "engine",
        policy: Some(policy.to_string()),
        mib_s: mib_s(t.bytes, t.secs),
        // The buffers the reads held: the pool's own peak is the whole budget once prefaulted.
        memory_peak_bytes: Some(s.buffers_peak_bytes),
        cpu_s: t.cpu_s,
        note,
        array: s.array,
        cut_short: t.bytes < bytes * u64::from(n),
        backend: Some(s.backend.to_string()),
    })
}

#[cfg(test)]
mod tests {
    /// A bench is refused only where it cannot run: 1,000 streams, which ran under a limit of
    /// 1,008, were refused under 1,024 as needing the 1,064 the soft limit is raised toward, and
    /// a limit of 50, under which 1 stream ran, was told "give at most 0 streams".
    #[test]
    fn only_a_bench_its_open_files_limit_cannot_hold_is_refused() {
        assert_eq!(super::open_files_refusal(1000, 1024), None);
        assert_eq!(super::open_files_refusal(1, 50), None);
        let e = super::open_files_refusal(300, 256).expect("300 streams under 256");
        assert!(
            e.starts_with("--streams: ") && e.contains("give at most 240 streams"),
            "{e}"
        );
        let e = super::open_files_refusal(1, 10).expect("1 stream under 10");
        assert!(e.contains("raise the limit to at least 17"), "{e}");
        assert!(!e.contains("at most 0"), "{e}");
    }

    /// A reader that gives `good` bytes in one read, then times out.
    struct TimesOutAfter {
        good: usize,
    }

    impl std::io::Read for TimesOutAfter {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.good == 0 {
                return Err(std::io::ErrorKind::TimedOut.into());
            }
            let n = self.good.min(buf.len());
            self.good -= n;
            Ok(n)
        }
    }

    /// Only the engine reader's `TimedOut` (its read deadline) shortens a stream; the same error
    /// from a kernel file is the disk's fault and fails the measurement.
    #[test]
    fn only_the_engines_read_timeout_ends_a_stream_quietly() {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let mut buf = vec![0u8; 4096];
        let got = super::read_stream(
            &mut TimesOutAfter { good: 4096 },
            1 << 20,
            deadline,
            &mut buf,
            true,
        )
        .expect("a timeout ends the engine's stream");
        assert_eq!(got, 4096);
        let e = super::read_stream(
            &mut TimesOutAfter { good: 4096 },
            1 << 20,
            deadline,
            &mut buf,
            false,
        )
        .expect_err("a kernel file's timeout is an error");
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
    }

    #[test]
    fn fio_reads_its_files_in_even_blocks_of_at_most_the_limits_size() {
        let (k, m) = (1u64 << 10, 1u64 << 20);
        let b = super::fio_block_bytes;
        assert_eq!(b(4 * m, 16 * m), 4 * m, "the limit's size where it divides");
        assert_eq!(b(4 * m, 6 * m), 3 * m);
        assert_eq!(b(4 * m, 1536 * k), 1536 * k, "a file smaller than a block");
        assert_eq!(b(4 * m, 4 * k), 4 * k);
        assert_eq!(
            b(4 * m, 4 * m + 4 * k),
            2 * m,
            "1,025 pages: two blocks of 512"
        );
        assert_eq!(
            b(4 * m, 6 * m + 4 * k),
            3 * m,
            "1,537 pages, 29 x 53: not 212 KiB"
        );
        assert_eq!(
            b(4 * m, 89_478_485),
            3968 * k,
            "1 GiB over 12 streams, 21,845 pages: 22 blocks of 992, not 257 pages"
        );
        assert_eq!(super::fio_bytes_of_file(4 * m + 4 * k, 2 * m), 4 * m);
        assert_eq!(super::fio_bytes_of_file(6 * m, 3 * m), 6 * m);
    }

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        bench: super::BenchArgs,
    }

    fn plan_of(args: &[&str]) -> super::Plan {
        use clap::Parser;
        let cli = Cli::try_parse_from(std::iter::once("bench").chain(args.iter().copied()))
            .expect("arguments parse");
        super::plan(&cli.bench).expect("a valid plan")
    }

    /// Readers' buffers are one read each, never more than the file, and all of them must fit in
    /// half this machine's memory. 1,000 streams of 1 GiB reads are refused before anything is
    /// written; 1,000 streams of 4 KiB files read with `--request 1GiB` hold 4 KiB each and run
    /// (their buffers were 1 GiB each, nearly 1 TB in all, and nothing checked them).
    #[test]
    fn readers_buffers_are_at_most_their_files_and_must_fit_in_memory() {
        use clap::Parser;
        assert_eq!(super::reader_buffer_bytes(1 << 30, 4096), 4096);
        assert_eq!(super::reader_buffer_bytes(1 << 20, 8 << 20), 1 << 20);
        let args = [
            "bench",
            "--streams",
            "1000",
            "--request",
            "1GiB",
            "--file-size",
            "1GiB",
            "--total-size",
            "1000GiB",
        ];
        let cli = Cli::try_parse_from(args).expect("arguments parse");
        let e = super::plan(&cli.bench).err().expect("refused").to_string();
        assert!(
            e.starts_with("--request: 1000 readers each hold a buffer of one read (1GiB)"),
            "{e}"
        );
        assert!(e.contains("lower --request or --streams"), "{e}");
        let p = plan_of(&[
            "--streams",
            "1000",
            "--request",
            "1GiB",
            "--file-size",
            "4KiB",
            "--total-size",
            "4000KiB",
        ]);
        assert_eq!(p.per_stream, [4096]);
    }

    /// This disk completes the reads it holds together: with `seqp`'s two 32 MiB windows all at
    /// the device at once, it then stood idle while the reader copied the first out (8-9% of a
    /// run). The default window is the queue's bytes shared among the streams, so the streams'
    /// two windows each always leave reads waiting in the engine's queue for each completion;
    /// it stays within the budget.
    #[test]
    fn the_real_disks_default_window_keeps_reads_queued_behind_the_device() {
        let p = plan_of(&["--streams", "1,16,256"]);
        let queue_bytes = p.max_io.0 * u64::from(p.queue_depth);
        for (&n, w) in p.streams.iter().zip(&p.readahead_max) {
            assert!(
                2 * u64::from(n) * w.0 > queue_bytes,
                "{n} streams' two windows of {w} fit in the queue's {}",
                ByteLen(queue_bytes)
            );
        }
        assert!(p.memory.iter().zip(&p.readahead_max).all(|(m, w)| w <= m));
        let p = plan_of(&["--streams", "1", "--memory", "64MiB"]);
        assert_eq!(p.readahead_max, [ByteLen::mib(64)]);
        let p = plan_of(&["--streams", "1", "--max-io", "1MiB", "--queue-depth", "8"]);
        assert_eq!(p.readahead_max, [ByteLen::mib(8)]);
        let p = plan_of(&["--streams", "1", "--queue-depth", "1024"]);
        assert_eq!(
            p.readahead_max,
            [ByteLen::gib(1)],
            "within every default budget"
        );
        let p = plan_of(&["--streams", "1,16", "--readahead-max", "32MiB"]);
        assert_eq!(
            p.readahead_max,
            [ByteLen::mib(32); 2],
            "a window given is every N's"
        );
    }

    /// Many streams keep the device busy together: the default window is the queue's bytes shared
    /// among them (at least one read), so that all of them together ask for about what one
    /// stream's two windows did, and the default budget follows it. Before, each of 16 streams
    /// had the one stream's 128 MiB window and the budget was 4.5 GiB (4,032 MiB held at the
    /// peak), at 256 streams a quarter of this machine's memory.
    #[test]
    fn the_real_disks_default_window_is_the_queues_bytes_shared_among_the_streams() {
        let p = plan_of(&["--streams", "1,16,256,1024,3"]);
        assert_eq!(
            p.readahead_max,
            [
                ByteLen::mib(128),
                ByteLen::mib(8),
                ByteLen::mib(4),
                ByteLen::mib(4),
                // 128 MiB / 3, down to whole pages.
                ByteLen(44_739_242 / 4096 * 4096)
            ],
            "the queue's 32 x 4 MiB over N, at least one 4 MiB read"
        );
        // Within a quarter of this machine's memory, as every default budget is.
        let cap = ByteLen((super::physical_memory_bytes() / 4).max(1 << 30)).0;
        let within = |b: ByteLen| ByteLen(b.0.min(cap.next_multiple_of(1 << 20)));
        assert_eq!(
            p.memory[..4],
            [
                ByteLen::gib(1),
                ByteLen::gib(1),
                within(ByteLen::mib(256 * 9)),
                within(ByteLen::mib(1024 * 9))
            ],
            "two windows and an eighth per stream (or what a stream reads), at least 1 GiB"
        );
    }

    /// On the real disk the stream scheduler keeps as many bytes in flight as the limit reader
    /// beside it (D*R, one R-byte read per dispatched stream): with D = 4 it kept 32 MiB, half the
    /// limit reader's 16 x 4 MiB, and read less.
    #[test]
    fn streams_on_the_real_disk_keep_the_limit_readers_bytes_in_flight() {
        let p = plan_of(&[]);
        let cfg = super::engine_policy_config(&p, p.readahead_max[0], "streams").streams;
        let d = u64::from(cfg.dispatch_set().expect("a valid stream scheduler"));
        let limit_in_flight = p.limit_io * p.limit_depth as u64;
        assert!(
            d * cfg.readahead_bytes >= limit_in_flight,
            "D = {d}, R = {}: {} bytes in flight, the limit reader {limit_in_flight}",
            cfg.readahead_bytes,
            d * cfg.readahead_bytes
        );
        // Every read of the set fits the engine's queue at once.
        assert!(d * cfg.readahead_bytes <= p.max_io.0 * u64::from(p.queue_depth));
    }

    /// At 1,024 streams of 4 MiB files each stream's one read is the 3 MiB after its first
    /// request (the file's end cuts R = 8 MiB short), and a set of D = 8 streams kept 24 MiB in
    /// flight, well under the limit reader's 64 MiB: a median 0.70 of the limit on this machine.
    /// The set keeps its D*R bytes in flight however short the reads.
    #[test]
    fn streams_on_the_real_disk_keep_the_limit_readers_bytes_in_flight_in_small_files() {
        use foresight_core::{ByteLen, ByteOffset, ByteRange, FileId, Instant, StreamId};
        use foresight_policy::{layout::Layout, Input, Output, Policy};
        let p = plan_of(&["--streams", "1024", "--total-size", "4GiB"]);
        assert_eq!(p.per_stream, [4 << 20]);
        let cfg = super::engine_policy_config(&p, p.readahead_max[0], "streams").streams;
        let n = 1024;
        let layout = std::sync::Arc::new(Layout::unplaced(&vec![ByteLen(p.per_stream[0]); n]));
        let mut policy = foresight_policy::streams::FileStreams::new(cfg, layout).expect("valid");
        // Every stream makes its first two requests, each missing, and no fetch completes.
        let mut in_flight_bytes = 0;
        for f in 0..n as u32 {
            for at in [0, p.request] {
                policy.handle(
                    Instant::ZERO,
                    Input::Read {
                        stream: StreamId(f),
                        file: FileId(f),
                        range: ByteRange::new(at, p.request),
                        miss: Some(ByteOffset(at)),
                    },
                );
                while let Some(o) = policy.poll_output() {
                    if let Output::Fetch { range, .. } = o {
                        in_flight_bytes += range.len.0;
                    }
                }
            }
        }
        let limit_in_flight = p.limit_io * p.limit_depth as u64;
        // Whole reads of 3 MiB: 21 of them, 63 MiB.
        assert!(
            in_flight_bytes + p.limit_io >= limit_in_flight,
            "{in_flight_bytes} bytes in flight, the limit reader {limit_in_flight}"
        );
        assert!(in_flight_bytes <= limit_in_flight, "{in_flight_bytes}");
    }

    #[test]
    fn a_measurement_that_ran_well_past_its_deadline_says_so() {
        let t = |secs: f64, deadline_s: f64| super::Timing {
            bytes: 0,
            secs,
            cpu_s: 0.0,
            streams: 2,
            through: 2,
            half_done_s: Some(secs / 2.0),
            deadline_s,
        };
        let says = |t: super::Timing| t.tail_note().contains("were waited for");
        assert!(says(t(36.4, 1.0)));
        assert!(says(t(40.0, 30.0)));
        // The last reads of a 30 s run finishing a little after it are not worth a note.
        assert!(!says(t(31.0, 30.0)));
        assert!(!says(t(1.5, 1.0)));
        assert!(!says(t(12.0, 30.0)));
        // Readers stopped by the deadline do not hide that the last reads were waited for.
        let stopped = super::Timing {
            through: 0,
            half_done_s: None,
            ..t(36.4, 1.0)
        };
        assert!(stopped.tail_note().contains("0 of 2 streams through"));
        assert!(says(stopped));
    }

    /// The clock starts once every reader has its buffer: a buffer that takes 300 ms to make
    /// (as faulting in 1,024 buffers of 1 MiB can on a virtual machine) is not counted as
    /// reading. Before the readers waited at a second barrier, the main thread took its clock
    /// before they were ready, and this run of no reads took over 300 ms.
    #[test]
    fn making_the_buffers_is_not_timed() {
        let files: Vec<_> = (0..2)
            .map(|i| std::path::PathBuf::from(format!("stream-{i}.dat")))
            .collect();
        let t = super::run_threads_with(
            &files,
            4096,
            std::time::Duration::from_secs(3600),
            |_| {
                std::thread::sleep(std::time::Duration::from_millis(300));
                vec![0u8; 4096]
            },
            |_, _, _, _| Ok(4096),
        )
        .unwrap();
        assert_eq!(t.bytes, 8192);
        // Reading nothing takes microseconds; 0.25 s leaves room for a loaded machine and is
        // still below the 0.3 s each buffer took.
        assert!(t.secs < 0.25, "{} s timed for no reading", t.secs);
    }

    /// Readers the deadline stopped short of their files' ends are not counted as done: with
    /// 100 emulated streams stopped at 20 s, none through its file, the note said "half the
    /// streams done at 20.00 s".
    #[test]
    fn streams_stopped_by_the_deadline_are_not_counted_as_done() {
        let file_bytes = 1 << 20;
        let files: Vec<_> = (0..4)
            .map(|i| std::path::PathBuf::from(format!("stream-{i}.dat")))
            .collect();
        // Stream 0 reads its whole file; the others stop part way, as at the deadline.
        let t = super::run_threads(
            &files,
            file_bytes,
            std::time::Duration::from_secs(3600),
            16,
            move |i, _, _, _| Ok(if i == 0 { file_bytes } else { file_bytes / 2 }),
        )
        .unwrap();
        let note = t.tail_note();
        assert!(!note.contains("half the streams"), "{note}");
        assert!(note.contains("stopped by --duration"), "{note}");
        assert!(
            note.contains("1 of 4 streams through their files"),
            "{note}"
        );
        // With three of four through, the time half of them were is known, and told as such.
        let note = super::run_threads(
            &files,
            file_bytes,
            std::time::Duration::from_secs(3600),
            16,
            move |i, _, _, _| Ok(if i < 3 { file_bytes } else { 0 }),
        )
        .unwrap()
        .tail_note();
        assert!(
            note.contains("3 of 4 streams through their files"),
            "{note}"
        );
        assert!(note.contains("(half the streams through at "), "{note}");
        // All through: the note is the one it always was.
        let note = super::run_threads(
            &files,
            file_bytes,
            std::time::Duration::from_secs(3600),
            16,
            move |_, _, _, _| Ok(file_bytes),
        )
        .unwrap()
        .tail_note();
        assert!(note.starts_with("half the streams done at "), "{note}");
        assert!(!note.contains("stopped"), "{note}");
    }

    /// Every column after the policy starts at the same place on every line, with a policy name
    /// longer than the header (`msp+saseqp` used to push its row's figures two places right).
    #[test]
    fn the_table_stays_aligned_with_long_policy_names() {
        let p = plan_of(&[
            "--emulate",
            "cheetah-15k4",
            "--disks",
            "5",
            "--streams",
            "1",
        ]);
        let row = |method: &'static str, policy: Option<&str>| super::Summary {
            row: super::Row {
                streams: 1,
                method,
                policy: policy.map(str::to_string),
                mib_s: 377.5,
                memory_peak_bytes: Some(256 << 10),
                cpu_s: 0.07,
                note: String::new(),
                array: None,
                cut_short: false,
                backend: None,
            },
            ratio_to_limit: Some(0.893),
            rounds: 1,
            mib_s_range: (377.5, 377.5),
        };
        let rows = [
            row("limit", None),
            row("engine", Some("seqp")),
            row("engine", Some("msp+saseqp")),
        ];
        let mut out = Vec::new();
        super::print_rows(&p, &rows, false, &mut out).expect("written to memory");
        let text = String::from_utf8(out).expect("utf-8");
        let table: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.trim_start().starts_with("streams"))
            .take(1 + rows.len())
            .collect();
        assert_eq!(table.len(), 1 + rows.len(), "{text}");
        // The header names the model measured; it said "emulated device" for any of them.
        assert!(
            text.starts_with(
                "foresight bench on emulated raid0 of 5 x cheetah-15k4, 128KiB strips (deadline \
                 scheduler): "
            ),
            "{text}"
        );
        // The rate column's right edge is where the header's "MiB/s" ends.
        let edge = table[0].find("MiB/s").expect("header") + "MiB/s".len();
        for line in &table[1..] {
            assert_eq!(
                line.get(edge - "377.5".len()..edge),
                Some("377.5"),
                "misaligned row:\n{text}"
            );
        }
    }

    /// A peak of no whole MiB printed as `16512KiB` in the table; it reads `~16.1MiB` now, and
    /// the JSON keeps the exact bytes.
    #[test]
    fn the_table_prints_memory_peaks_in_their_largest_unit() {
        let p = plan_of(&["--emulate", "wd800jd", "--streams", "1"]);
        let row = |policy: &str, peak_bytes: u64| super::Summary {
            row: super::Row {
                streams: 1,
                method: "engine",
                policy: Some(policy.to_string()),
                mib_s: 100.0,
                memory_peak_bytes: Some(peak_bytes),
                cpu_s: 0.1,
                note: String::new(),
                array: None,
                cut_short: false,
                backend: None,
            },
            ratio_to_limit: Some(0.9),
            rounds: 1,
            mib_s_range: (100.0, 100.0),
        };
        let rows = [row("seqp", 16_512 << 10), row("saseqp", 64 << 20)];
        let mut out = Vec::new();
        super::print_rows(&p, &rows, false, &mut out).expect("written to memory");
        let text = String::from_utf8(out).expect("utf-8");
        assert!(text.contains(" ~16.1MiB "), "{text}");
        assert!(!text.contains("16512KiB"), "{text}");
        assert!(text.contains(" 64MiB "), "whole units stay exact: {text}");
        let mut out = Vec::new();
        super::print_rows(&p, &rows, true, &mut out).expect("written to memory");
        let json = String::from_utf8(out).expect("utf-8");
        assert!(json.contains("16908288"), "{json}");
    }

    /// A stream's share of `--total-size` that is no whole MiB was printed exact, as
    /// `20968KiB`, in the progress line of its N and in the table's footer; both read `~20.5MiB`
    /// now, and the footer keeps the exact bytes beside it. A whole size stays as it is.
    #[test]
    fn stream_sizes_are_printed_readably_with_the_exact_bytes_in_the_footer() {
        let odd_bytes = 20_968u64 << 10;
        let p = plan_of(&[
            "--emulate",
            "wd800jd",
            "--streams",
            "1,3",
            "--file-size",
            "1GiB",
            "--total-size",
            "62904KiB",
        ]);
        assert_eq!(p.per_stream, vec![62_904 << 10, odd_bytes]);
        let line = super::n_line(
            3,
            odd_bytes,
            3,
            foresight_core::ByteLen::gib(1),
            foresight_core::ByteLen::mib(4),
        );
        assert_eq!(
            line,
            "N = 3: 3 stream(s) x ~20.5MiB each, 3 round(s), engine memory 1GiB, readahead_max \
             4MiB"
        );
        assert!(
            super::n_line(
                1,
                64 << 20,
                3,
                foresight_core::ByteLen::gib(1),
                foresight_core::ByteLen::mib(4)
            )
            .contains(" x 64MiB each"),
            "whole units stay exact"
        );
        let mut out = Vec::new();
        super::print_rows(&p, &[], false, &mut out).expect("written to memory");
        let text = String::from_utf8(out).expect("utf-8");
        assert!(!text.contains("20968KiB"), "{text}");
        assert!(
            text.contains(&format!("N=3: ~20.5MiB ({odd_bytes} bytes)")),
            "{text}"
        );
        assert!(text.contains("N=1: ~61.4MiB ("), "{text}");
    }

    #[test]
    fn a_stream_count_or_policy_given_twice_is_measured_once_in_its_first_place() {
        let p = plan_of(&[
            "--emulate",
            "wd800jd",
            "--streams",
            "1,4,1,16,4",
            "--policy",
            "seqp,none,seqp",
        ]);
        assert_eq!(p.streams, vec![1, 4, 16]);
        assert_eq!(p.policies, vec!["seqp", "none"]);
    }

    use super::*;

    #[test]
    fn meminfo_fields_are_read_by_name_and_a_missing_one_is_none() {
        let text =
            "MemTotal:       24598156 kB\nHugePages_Total:      40\nHugePages_Free:       38\n\
                    Hugepagesize:       2048 kB\n";
        assert_eq!(meminfo_fields(text, &["MemTotal:"]), Some(vec![24_598_156]));
        assert_eq!(
            meminfo_fields(text, &["HugePages_Free:", "Hugepagesize:"]),
            Some(vec![38, 2048])
        );
        assert_eq!(meminfo_fields(text, &["MemTotal:", "Shmem:"]), None);
        assert_eq!(meminfo_fields("MemTotal: lots kB\n", &["MemTotal:"]), None);
    }

    fn sample(round: u32, method: &'static str, mib_s: f64) -> (u32, Row) {
        let row = Row {
            streams: 8,
            method,
            policy: (method == "engine").then(|| "seqp".to_string()),
            mib_s,
            memory_peak_bytes: None,
            cpu_s: 0.0,
            note: String::new(),
            array: None,
            cut_short: false,
            backend: None,
        };
        (round, row)
    }

    #[test]
    fn the_ratio_to_the_limit_pairs_each_round_with_its_own_limit() {
        // The disk slows down in round 3 while the limit is measured, and the engine's rounds
        // fall in faster moments: 0.9, 1.0 and 0.8 of their own round's limit.
        let samples = vec![
            sample(0, "limit", 2000.0),
            sample(0, "engine", 1800.0),
            sample(1, "engine", 1500.0),
            sample(1, "limit", 1500.0),
            sample(2, "limit", 1900.0),
            sample(2, "engine", 1520.0),
        ];
        let out = medians(samples);
        let engine = out.iter().find(|s| s.row.method == "engine").unwrap();
        let limit = out.iter().find(|s| s.row.method == "limit").unwrap();
        assert_eq!(engine.row.mib_s, 1520.0, "the median rate");
        assert_eq!(limit.row.mib_s, 1900.0);
        // Dividing the medians would give 0.8; the median of the paired ratios is 0.9.
        assert!((engine.ratio_to_limit.unwrap() - 0.9).abs() < 1e-12);
        assert_eq!(limit.ratio_to_limit, Some(1.0));
        assert!(
            engine.row.note.contains("x limit by round 0.80..1.00"),
            "{}",
            engine.row.note
        );
    }

    #[test]
    fn a_round_without_a_limit_gives_no_ratio() {
        let out = medians(vec![sample(0, "engine", 100.0), sample(1, "engine", 300.0)]);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].row.mib_s, 200.0, "the mean of the middle two");
        assert_eq!(out[0].ratio_to_limit, None);
    }

    #[test]
    fn the_default_budget_is_two_windows_a_stream_within_a_gib_and_a_quarter_of_memory() {
        let gib = 1u64 << 30;
        let mib = 1u64 << 20;
        let (ra, io) = (ByteLen::mib(32), ByteLen::mib(4));
        let ram = 24 * gib;
        // The bench's own N: 1 GiB, 256 MiB, 16 MiB and 4 MiB read by each stream.
        assert_eq!(
            auto_memory(1, gib, ra, io, ram),
            ByteLen::gib(1),
            "at least 1 GiB"
        );
        // Two 32 MiB windows and an eighth: 72 MiB a stream.
        assert_eq!(
            auto_memory(16, gib / 4, ra, io, ram),
            ByteLen(16 * 72 * mib)
        );
        assert_eq!(
            auto_memory(256, 16 * mib, ra, io, ram),
            ByteLen(256 * 18 * mib),
            "what each reads, and an eighth"
        );
        assert_eq!(
            auto_memory(1024, 4 * mib, ra, io, ram),
            ByteLen(1024 * 9 * mib / 2)
        );
        // A window smaller than a read: two reads.
        assert_eq!(
            auto_memory(64, gib, ByteLen::mib(1), io, ram),
            ByteLen::gib(1),
            "64 x 9 MiB is under the floor"
        );
        assert_eq!(
            auto_memory(256, gib, ByteLen::mib(1), io, ram),
            ByteLen(256 * 9 * mib)
        );
        assert_eq!(
            auto_memory(4096, 16 * mib, ra, io, ram),
            ByteLen::gib(6),
            "a quarter of memory"
        );
        assert_eq!(
            auto_memory(4096, 16 * mib, ra, io, 2 * gib),
            ByteLen::gib(1),
            "never under 1 GiB"
        );
    }

    /// A tenth of the free space is kept spare, so files a little smaller than the free space are
    /// refused too; the message used to say they needed 25GiB where 25.1GiB was free, which
    /// reads as a contradiction.
    #[test]
    fn a_refusal_for_space_says_that_a_tenth_is_kept_spare() {
        let gib = 1u64 << 30;
        let dir = std::path::Path::new("bench-files");
        let e = super::space_refusal(dir, 25 * gib, 25 * gib + gib / 10).expect("refused");
        assert!(
            e.contains("--dir bench-files") && e.contains("a tenth"),
            "{e}"
        );
        assert!(super::space_refusal(dir, 25 * gib, 28 * gib).is_none());
    }

    /// Files of more bytes than a u64 holds less a tenth of the free space are refused: the sum
    /// wrapped, and `--streams 1,2,3,4 --file-size 4EiB` passed the check and filled the disk.
    #[test]
    fn files_larger_than_any_disk_are_refused_without_overflow() {
        let dir = std::path::Path::new("bench-files");
        let e = super::space_refusal(dir, u64::MAX, 100 << 30).expect("refused");
        assert!(e.contains("lower --total-size"), "{e}");
        assert!(super::space_refusal(dir, u64::MAX - (1 << 30), 100 << 30).is_some());
    }

    /// With nothing free (a full disk, or /proc), the refusal asked for smaller files, which
    /// cannot fit either.
    #[test]
    fn a_dir_with_no_free_space_is_refused_without_asking_for_smaller_files() {
        let dir = std::path::Path::new("bench-files");
        for free in [0, 4095] {
            let e = super::space_refusal(dir, 4 << 20, free).expect("refused");
            assert!(
                e.contains("--dir bench-files") && e.contains("file system with free space"),
                "{e}"
            );
            assert!(!e.contains("lower --total-size"), "{e}");
        }
    }
}
