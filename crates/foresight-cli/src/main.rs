//! The `foresight` command line.
//!
//! Subcommands map one to one onto the libraries: `sim` runs one simulation from a TOML config with
//! `--set` overrides, `devices` lists the device and link presets, `reproduce` runs the experiment
//! catalogue (`foresight-sim`); `bench` measures the real engine against the kernel's reads and the
//! device's limit (`bench.rs`, `foresight-engine`); `serve`, `get`, `proxy` and `net-soak` run the
//! networked storage of `foresight-net` (`net.rs`).
//! Bad input (a config key, a value, a file) exits with code 2 and a message naming it; a
//! `foresight serve` whose engine broke exits with 3 (`net::SERVE_BROKEN_EXIT`), for a supervisor
//! to restart it; any other failure exits with code 1.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use foresight_policy::PAGE_BYTES;
use foresight_sim::config::{
    apply_set, apply_unset, read_config_file_as_written, set_paths, AsWritten, SimConfig,
};
use foresight_sim::metrics::{Report, RequestSink};
use foresight_sim::{Progress, RunOptions, SimError};

/// `println!` that returns an error instead of panicking when standard output is closed or full.
macro_rules! outln {
    ($($arg:tt)*) => {
        writeln!(std::io::stdout().lock(), $($arg)*).context(crate::WritingStdout)?
    };
}

/// `eprintln!` that never panics: a line for standard error that cannot be written (its reader
/// closed the pipe, as `foresight reproduce 2>&1 | head` does) is dropped, and the command goes on
/// with its work and its exit status. Every note and error line of the command goes through it.
macro_rules! note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

mod bench;
mod cleanup;
mod members;
mod net;
mod progress;
mod requests_out;
mod summary;

use requests_out::RequestsOut;

#[derive(Parser)]
#[command(
    name = "foresight",
    version,
    about = "Prefetching for storage: policies, a device-accurate simulator, and the papers' results",
    long_about = "Foresight makes data arrive before the application asks for it. This command runs \
its prefetching policies in a discrete-event simulator with timing models of disks, RAID-0 arrays \
and SSDs, and reproduces the results of the papers the policies come from; it also runs them on \
real files through its I/O engine (`bench`), and serves and downloads files over HTTP with them \
(`serve`, `get`; `proxy` and `net-soak` to measure those).\n\n\
Start with `foresight reproduce --quick`, or `foresight sim --set workload.streams=64 --json`."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run one simulation and print its measurements.
    #[command(long_about = SIM_HELP)]
    Sim {
        // The help text is given as an attribute: rustdoc would take its section names in
        // brackets for links.
        #[arg(
            long,
            value_name = "FILE.toml",
            help = "TOML config file of at least one key (`seed` and sections [device], [host], [policy], [workload], [dfs], [network])"
        )]
        config: Option<PathBuf>,
        /// The config file given without `--config` (`foresight sim examples/collapse-64.toml`).
        #[arg(value_name = "FILE.toml", conflicts_with = "config")]
        config_file: Option<PathBuf>,
        /// Override one key by its dotted path, e.g. --set workload.streams=64, or a key of a
        /// list element the config has, e.g. `--set 'device.tiers[0].preset=wd800jd'`. Repeatable.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        /// Remove a key the config file sets, so its default applies (or, for a key only some
        /// policies or workloads read, so another one can be chosen with --set), e.g. --unset
        /// policy.readahead_max --set policy.name=streams. Applied before the --sets. Repeatable.
        #[arg(long = "unset", value_name = "KEY")]
        unsets: Vec<String>,
        /// Print one JSON object instead of the readable summary.
        #[arg(long)]
        json: bool,
        /// Write one CSV line per application request to FILE, as each completes (not one of the
        /// run's own input files, nor `-`); a run stopped by Ctrl-C or by a write that fails (a
        /// full disk) removes it.
        #[arg(long, value_name = "FILE.csv")]
        requests_out: Option<PathBuf>,
    },
    /// List the device presets and the network link presets, with where their numbers come from.
    Devices {
        /// Print a JSON array instead of the tables (links have `kind` = "link"), each entry's
        /// keys in the order of the table's columns. An SSD's `rpm` and `avg_seek_ms` are null
        /// (a dash in the table): it has no spindle and does not seek.
        #[arg(long)]
        json: bool,
    },
    /// Rerun the papers' experiments; writes report.md, results.json and a PNG and CSV per figure.
    // Written out: clap's own usage line after a conflict with --list named the conflicting
    // arguments beside it, as though `--list EXPERIMENT` were a form the command takes.
    #[command(
        override_usage = "foresight reproduce [--quick] [--out DIR] [EXPERIMENTS]...\n       \
                                foresight reproduce --list"
    )]
    Reproduce {
        /// Experiments to run, in catalogue order when none is named: collapse, drives, striping,
        /// streams, directed, informed, network. `--list` says what each reproduces.
        experiments: Vec<String>,
        /// A reduced setup with every point of every figure: shorter simulated runs, and smaller
        /// files and memory in striping and directed (under a minute for the whole catalogue on two
        /// cores). report.md opens with what each experiment reduced; rerun without --quick for the
        /// full figures.
        #[arg(long)]
        quick: bool,
        /// Output directory, one run at a time (a second run into it is refused). From the run's
        /// first figure until its end, report.md there says that the run has not finished (or,
        /// if it failed, why) and there is no results.json. A finished report names the figures
        /// beside it that the run did not write; results.json has a key per experiment and `run`
        /// (mode, experiments, wall_s).
        #[arg(long, value_name = "DIR", default_value = "out")]
        out: PathBuf,
        /// List the experiments and exit.
        #[arg(long, conflicts_with_all = ["experiments", "quick", "out"])]
        list: bool,
    },
    /// Measure the real engine on this machine's disk against the kernel and the device's limit.
    #[command(long_about = BENCH_HELP, allow_negative_numbers = true)]
    Bench(Box<bench::BenchArgs>),
    /// Serve files over HTTP/1.1 with ranges and dedicated per-stream workers.
    #[command(long_about = net::SERVE_HELP, allow_negative_numbers = true)]
    Serve(Box<net::ServeArgs>),
    /// Download over HTTP with delay-adaptive readahead (alpha requests in flight).
    #[command(long_about = net::GET_HELP, allow_negative_numbers = true)]
    Get(Box<net::GetArgs>),
    /// A TCP relay that adds one-way delay and caps bandwidth.
    #[command(long_about = net::PROXY_HELP, allow_negative_numbers = true)]
    Proxy(Box<net::ProxyArgs>),
    /// Many concurrent clients against one server, every byte checked.
    #[command(name = "net-soak", long_about = net::SOAK_HELP, allow_negative_numbers = true)]
    NetSoak(Box<net::SoakArgs>),
}

const BENCH_HELP: &str = "Measure the real engine on this machine's disk against plain buffered \
reads (the kernel's readahead) and the device's single-reader limit (large O_DIRECT reads, several \
in flight), for each number of concurrent streams in --streams.

Files are created once under --dir (default ./foresight-bench, relative to the current \
directory), reused when they have the right size and no holes, and dropped from the page cache \
before every measurement (a --dir on tmpfs cannot drop them and has no disk: the run warns, and \
the table's header says it measured memory). Each N has its own N files of min(--file-size, --total-size / N) bytes, \
and each stream reads its file whole. --emulate PRESET \
runs the engine on a modelled device instead (real bytes, modelled completion times).

Columns: MiB/s is all streams' bytes read over the time from the start of the reads to the end of \
the last (files opened, engine built and buffers faulted in before), the median over the rounds. \
x limit is the median of each round's rate over that round's limit. memory peak is the most \
buffer bytes held at once, the largest over the rounds: the engine's prefetched and in-flight \
buffers (not its resident memory: its whole budget, in the header, is mapped beforehand), the \
limit reader's reads in flight; the kernel's page cache is not counted (to a tenth of its unit \
where marked ~, exact in --json). cpu s is this process's \
user and system time over the reads (all its threads, io_uring workers included; fio's own \
process for fio), the median over the rounds.

Example:
  foresight bench --streams 1,16,256,1024 --dir /tmp/foresight-bench --json";

const SIM_HELP: &str = "Run one simulation and print its measurements.

A run longer than a second shows a progress bar on standard error, or, when standard error is not
a terminal, a line every 5 s (\"simulating: 41% after 5 s\"). A trace read from a pipe has no
length until its end: it shows the records and bytes read and the simulated time instead
(\"simulating: 1200000 trace records (60.0 MiB) read, 120.500 s simulated after 5 s\").

A config is TOML; every key can also be set with --set KEY=VALUE (later wins; a step may name an
element of a list the config has, as in device.tiers[0].preset), and a key the config file sets
can be taken out with --unset KEY (before the --sets apply). Sizes take 4096, 4KiB, 128KiB, 1MiB,
2GiB, 10MB, 6GB (units B, KiB to EiB, kB to EB; at most 4EiB); durations 250us, 1.92ms, 60s,
2min, 2h (units ns, us, ms, s, min, h); rates (bandwidth keys) 1Gbit, 450MB/s, 110MiB/s.
A relative path (trace, disksim) is taken from the config file's directory, or from the current
one when given by --set, by its key or in an inline table (--set 'workload={trace=\"t\"}'). A
path given by --set is taken as written (--set workload.trace=2024 is the file 2024), but a TOML
string in quotes is the text inside them; in a config file a path is a TOML string, quoted
(trace = \"2024\").

  seed = 1                       every random draw comes from this: 0 to 2^64-1 (in a file,
                                 quote one above TOML's largest integer, 2^63-1)
  [device]                       (a key below that only other kinds read is refused)
  kind = \"hdd\"                   hdd | ssd | raid0 | jbod
  preset = \"wd800jd\"             see `foresight devices` (raid0/jbod: the member disk,
                                 a hard disk preset)
  disksim = \"PATH.diskspecs\"     import the disk from DiskSim 4.0 files instead of a preset
  disks = 5                      raid0/jbod members
  strip = \"128KiB\"               raid0 strip size
  queue_depth = 1                device command queue (default: the preset's)
  queue_policy = \"clook\"         disk's pick from its queue: fcfs | clook | sptf (shortest
                                 positioning time) (default: the preset's)
  cache_segments = 16            drive cache: number of segments (default: the preset's)
  segment_size = \"512KiB\"        drive cache: segment size (a smaller one also lowers the
                                 preset's read-ahead to fit it) (default: the preset's)
  drive_readahead = \"512KiB\"     drive read-ahead after a miss, at most segment_size
                                 (default: the preset's)
  drive_readahead_min = \"0\"      drive reads ahead at least this far before the next command
                                 (default: the preset's)
  almost_read_hits = \"ahead\"     which reads starting past what the drive's read-ahead has
                                 read join it: \"ahead\" any it will reach (default), \"head\"
                                 one at the sector it is reading, \"none\" none (DiskSim's
                                 `Allow almost read hits` 1 and 0); the others stop it and
                                 wait for the platter
  controller_mib_s = 429         one controller's aggregate bandwidth in front of every member
                                 (default: none, no controller)
  controller_cache = \"0\"         controller cache (block level, below the host)
  controller_readahead = \"0\"     controller read-ahead beyond each miss, never cut
                                 short: one without room in the cache waits for it; with
                                 the host's largest read (workload.request, or the policy's
                                 largest window or piece, one page more when reads start off
                                 page boundaries) it must fit in controller_cache
  [host]                         (a key below that only other schedulers read is refused)
  memory = \"1GiB\"                page cache: the memory budget
  scheduler = \"deadline\"         noop | deadline | anticipatory (one queue per member disk;
                                 anticipatory = deadline's order, plus holding the disk
                                 idle after a stream's read for that stream's next request)
  max_request = \"512KiB\"         largest merged block request
  read_expire = \"500ms\"          deadline/anticipatory schedulers' read deadline
  antic_expire = \"6ms\"           anticipatory: longest idle wait for the stream's next
                                 request, from its read's completion (Linux 2.6's default)
  nr_requests = 128              request slots per block queue (Linux nr_requests, 1 to
                                 10240): the elevator sorts at most this many; other parts wait
  copy_rate = \"10GiB/s\"          memory bus: every application read is copied from the page
                                 cache into its buffer at this rate (a hit at once, a miss
                                 when its data arrives), one copy after another for the
                                 whole host; in the latencies, not in stall_s; \"free\" = no
                                 cost (the figures before the model). Default: below one
                                 thread's memcpy rate on the development machine (not read
                                 by a trace replay, whose block requests are never copied)
  raid_cache = \"0\"               the RAID driver's own cache (msp+... prefetches into it:
                                 512MiB by default there, as in bench; not with streams,
                                 whose cache is its own policy.memory)
  [policy]                       (a key below that only other policies read is refused)
  name = \"seqp\"                  none | seqp | saseqp | msp+seqp | msp+saseqp | streams | directed
                                 (a trace bypasses the page cache: none, its default, streams
                                 or msp+..., whose MSP alone acts; page-cache keys refused)
  readahead_max = \"128KiB\"       largest readahead window (seqp, saseqp); at most host.memory
  readahead_rule = \"linux\"       linux (next window fetched at the marked page, ahead of
                                 the reader) | synchronous (only when a read misses)
  sc_max = 42                    MSP: sequential counter cap
  sc_thresh = 38                 MSP: counter value that starts stripe prefetching
  sps_max = 8                    MSP: most stripes prefetched per step (1 to 1024)
  readahead = \"8MiB\"             streams: R, bytes per disk read (the scheduler knows no
                                 file's end: one larger than workload.file_size reads
                                 past the files, see past_file_end_bytes below)
  per_turn = 1                   streams: N, reads per turn in the dispatch set
  memory = \"16MiB\"               streams: M, buffer memory (M >= D*R*N)
  dispatch = 2                   streams: D (default M / (R*N))
  timeout = \"2s\"                 streams: how long unread buffers and idle streams live
                                 (collected on a grid every timeout, at least 1ms apart;
                                 the run wakes only at instants with something stale)
  offset = 32                    streams: classifier region half-width, 4 KiB blocks
  threshold = 2                  streams: distinct requests that make a stream
  turn_order = \"arrival\"         streams: which waiting stream goes next: arrival (the
                                 paper's round-robin) | position (round-robin by disk
                                 position, one sweep over the waiting streams)
  directed_memory = \"896MiB\"     directed: most bytes one stream's window holds, hinted
                                 data plus infill gaps in flight (default 7/8 of
                                 host.memory, at most host.memory; with the contention
                                 controller the window also stays within the free memory
                                 less one 4 MiB run in flight, or half that memory when it
                                 is below 8 MiB)
  infill_max = \"auto\"            directed: largest gap read through, a size or auto (from
                                 the drive's seek curve and media rate; 0 on an SSD)
  contention = true              directed: shrink the window when prefetches are evicted
  [workload]
  kind = \"streams\"               streams | random | trace | webserver | scan | tiles | gaps
                                 (a key below that only other kinds read is refused)
  streams = 1                    concurrent clients (webserver: threads, 32 by default)
  file_size = \"128MiB\"           per-client file (random: one shared file, 0 = whole volume,
                                 its default; webserver: mean file size, 4MiB by default)
  files = 2048                   webserver: files in the set (default: as many as make an
                                 8 GiB set, 8GiB / file_size, paper 000's Fig. 10; on a
                                 smaller volume, as many of them as fit, which the summary
                                 and webserver_files_cut_from report)
  pick = \"random\"                webserver: how a thread picks its next file: random |
                                 rotor (one cursor, shared by the threads, walks the set in
                                 file order: FileBench 1.x's openfile)
  request = \"64KiB\"              bytes per read (webserver: 4KiB by default)
  think = \"0s\"                   pause between a completion and the next read (at most
                                 3600s)
  duration = \"30s\"               stop after this much simulated time (default: run to the
                                 end; webserver: 60s, as it serves until stopped)
  requests = 1000                random: reads per client; webserver: files per thread
  placement = \"spread\"           spread | shuffled (spread's places, dealt in a seeded
                                 random order) | contiguous | aligned | fragmented
                                 (webserver: contiguous by default)
  extent = \"1MiB\"                fragmented: mean extent size (accepted with any placement,
                                 so that one config can sweep the placements with --set
                                 workload.placement=NAME)
  metadata = false               ext3-like indirect blocks among file data
  trace = \"PATH\"                 trace: the file, read as the replay goes (any length; out
                                 of order by fewer than 65536 records, else sort it first;
                                 arrivals within 500 years of the earliest)
  format = \"disksim\"             trace: disksim | msr | mqsim
                                 (every record goes to the one simulated volume; its
                                 disk or device number is the stream the policy sees)
  trace_records_max = 0          trace: replay only the first N records; 0 = all of them
  closed = false                 trace: issue each request when the previous completes
                                 (disksim: the line's gap after it, as DiskSim does)
  tile = \"8KiB\"                  tiles: bytes of one tile row segment (one read)
  tiles_across = 64              tiles: image width in tiles (read column by column)
  gap = \"64KiB\"                  gaps: bytes between reads, rounded down to whole 4 KiB
                                 pages (reads stay page-aligned); a fixed one that leaves
                                 room for a single read is refused (scan, tiles, gaps
                                 disclose their whole order to the policy before the first
                                 read)
  gap_dist = \"fixed\"             gaps: fixed | exponential (gaps drawn with mean `gap`;
                                 the count of reads is then a draw, and a client whose
                                 draws leave it one read is warned of, not refused)
  [dfs]                          run streams/random through a DFS model (paper 004):
                                 clients, link, server workers, CFQ-like queue, [device]
                                 (kind, preset, disks, strip), host.memory and workload
                                 kind, streams, file_size, request, requests, duration;
                                 other keys are refused. Every stream reads a file of its
                                 own; random's default file_size is the volume's share per
                                 stream, at most 40GiB
  system = \"aps\"                 local | lustre | nfs | hdfs | gluster | dedicated | aps
  queue = \"dedicated\"            shared | dedicated (default: the system's; not with local)
  workers = 32                   server I/O workers (not with local)
  alpha = \"auto\"                 aps: readahead units in flight, auto (condition 20) or N
  max_alpha = 256                aps: the cap on alpha = \"auto\"
  slice = \"100ms\"                CFQ time slice (1ms at least)
  slice_idle = \"8ms\"             CFQ idle wait (default 0 on an SSD)
  [network]                      the link of a [dfs] run (refused with system = \"local\")
  link = \"lan-10g\"               lan-10g | lan-10g-w30m | lan-1g | metro-10g | wan-10g | wan-1g
                                 (`foresight devices` lists their figures and sources)
  delay = \"50us\"                 one-way delay (overrides the preset's)
  bandwidth = \"10Gbit\"           wire rate each way
  window = \"6MB\"                 TCP buffer per connection (tcp_rmem); Linux advertises
                                 half of it, the most bytes in flight

Tier stacks (paper 002's informed prefetching) take their own keys; a config is one when
device.kind is tiered or constant, workload.kind is hinted, or the policy is an informed one:
  [device]
  kind = \"constant\"              constant (analytic: fixed per-block times) | tiered
  t_upper = \"52ms\"               constant: upper level to memory (T_ss-cache); the three
                                 t_ keys have no default: constant needs all of them
  t_lower = \"120ms\"              constant: lower level to memory (T_hdd-cache)
  t_lower_to_upper = \"122ms\"     constant: lower to upper level (T_hdd-ss)
  upper_capacity = \"64GiB\"       constant: room for copies on the upper level
  memory = \"64GiB\"               memory for TIP's prefetch buffers
  tiers = [{...}, {...}]         tiered, fastest first ([[device.tiers]] tables): preset =
                                 \"ssd-850evo\" or t_read = \"52ms\" (+ t_copy_up below the
                                 first: the whole copy one level up, its write included),
                                 capacity on every tier but the last, disks = 1
  link = {delay = \"200us\", bandwidth = \"110MiB/s\"}   optional network to the tiers
                                 (default: none, the tiers are local)
  [policy]                       (a key below that the policy does not read is refused)
  name = \"tip\"                   tip | ipipe | ipo | ipods
  x_cache = \"auto\"               TIP's prefetch buffers, a count (1 to 1048576) or auto (cost-benefit);
                                 a count at most the buffers device.memory holds
  max_bw = 15                    ipo/ipods: most reads in flight (TIP's and the copies');
                                 no default: ipo and ipods need it
  pnext_groups = 7               ipo/ipods: Pnext lead in X_cache groups (default: algorithm 5)
  lru_hit_gain = 0.0             auto: LRU cache hit ratio lost per buffer taken (TIP's cost)
  [workload]
  kind = \"hinted\"                the access list is disclosed up front, one block per read
  reads = 1000                   hinted reads (distinct blocks), at most 4,194,304
  block = \"10MiB\"                bytes per block
  consume = \"1.92ms\"             application time per block (T_cpu + T_hit + T_driver)
  order = \"sequential\"           sequential | random (seeded permutation)
  trace = \"PATH\"                 one block number per line instead (# comments), at
                                 most 4,194,304, each below 2^40 and given once

JSON keys (--json) beside the common ones (throughput_mib_s, elapsed_s, app_* and device_*
counts, latencies, stall_s, breakdown, memory_peak_bytes, seed): prefetched_bytes, wasted_bytes, fetches and
split_fetches sum every prefetching cache of the host, each counting what it fetched ahead of the
reads that reach it: the page cache, plus the block-level cache below it when there is one (the
RAID driver's under msp+..., the stream scheduler's buffers under streams); raid_prefetched_bytes,
raid_wasted_bytes, raid_fetches and raid_split_fetches are the block-level part. A controller
cache is the device's and counts in neither. A page counts as prefetched once the device has
read it, and as wasted when it is then evicted, released or left at the end unread; a prefetch
still in flight at the end is in neither, as its read is not in device_bytes (but the pages of a
read split across RAID-0 members whose own part is done are in both). A cache reads whole pages,
so a read of part of a page (a 512-byte trace record under streams or msp+...) brings in the rest
of it too: those bytes count as prefetched, and as wasted unless a later read takes one of them
(under none as well). split_fetches are
fetches that spanned more than one RAID-0 strip. fetches counts every fetch a policy asked for,
when it asked, also one whose bytes were all in memory or in flight already and so read nothing
(only directed asks for such) and one memory cut short: the policy's decisions, counted as the
engine counts them. A [dfs] run sums its server's and clients' caches
the same way, a client's page counting once the server's reply brought it (split_fetches: the
server's fetches; its device_bytes counts a read when it goes to the disk); its JSON has no
antic_waits, device_sequential_requests, raid_* or trace_lba_wrapped, because the model has no
such part (see ARCHITECTURE.md), and neither has a tier stack's; a [dfs] run's queue_s is the
wait in the device's own command queues only (the wait in its CFQ-like queue before them is in
the requests' latency, not in queue_s). A tier stack's breakdown sums
its preset levels' devices; a constant level's fixed time has no parts and is in none of them.
Its device_requests, device_bytes and breakdown count the requests that completed by elapsed_s
(when the application consumed its last block); those of copies still climbing then are under
after_end (device_requests, device_bytes, breakdown, last_completion_s), a key only a tier stack's
JSON has. Its prefetched_bytes counts blocks fetched into memory and copies into levels, its
wasted_bytes the copies dropped or left at the end unread. gaps_single_read_clients, present
only when not 0, counts the clients of a gaps workload whose exponential gaps left them one read
(a warning on standard error says so too). A webserver run gives its set's files and bytes as
webserver_files and webserver_set_bytes, and webserver_files_cut_from, present only when the
default set did not fit the volume and was cut to the files that fit, the count it was cut from
(the summary's file set line says the same). past_file_end_bytes, present under the streams
policy with a workload of files, counts the bytes of the scheduler's reads that lay past the
end of the file each began in (it reads R-byte stretches below the file system and knows no
file's end; an R larger than workload.file_size is warned of, with this figure). Of the common
keys, a trace's streams counts the distinct device numbers of its records (up to 65,536; a
figure of 65,536 means at least that many), stall_s adds to the completed requests' waits on I/O the wait of each request still out
when a run stops at workload.duration (the latency keys count completed requests only), and a
trace's app_requests and app_bytes count its writes too. On a host, a read's wait on I/O ends
when its data is in memory: its copy into the buffer after that (host.copy_rate) is in its
latency and in elapsed_s but not in stall_s, and copy_s is the time the host's memory bus spent
copying (0 with host.copy_rate = \"free\"; no copy_s for a trace, a [dfs] run or a tier stack).

Examples:
  foresight sim --set device.preset=cheetah-15k5 --set workload.streams=64 --json
  foresight sim --set policy.name=streams --set workload.streams=100 --set workload.duration=60s
  foresight sim --set dfs.system=aps --set device.preset=st6000nm0024 --set workload.streams=16 \\
      --set workload.request=128KiB --set workload.file_size=10GiB --set workload.duration=10s --json
  foresight sim --set workload.kind=trace --set workload.format=disksim \\
      --set workload.trace=../shared/data/disksim/atlas10k.trace \\
      --set device.disksim=../shared/data/disksim/atlas10k.diskspecs --set host.scheduler=noop --json
  foresight sim --set device.kind=constant --set device.t_upper=52ms --set device.t_lower=120ms \\
      --set device.t_lower_to_upper=122ms --set policy.name=ipipe --set policy.x_cache=1 \\
      --set workload.kind=hinted --set workload.reads=11686 --set workload.consume=1.92ms";

/// An error caused by the user's input: exit code 2.
#[derive(Debug)]
struct InputError(String);

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InputError {}

fn input(e: impl std::fmt::Display) -> anyhow::Error {
    // `{:#}` keeps an anyhow context's cause ("creating X: Permission denied"), not just "creating X".
    anyhow::Error::new(InputError(format!("{e:#}")))
}

/// An unsigned type [`whole_arg`] reads, with its largest value for the message past it.
pub(crate) trait Whole: std::fmt::Display + Sized {
    const MAX: Self;
}

impl Whole for u32 {
    const MAX: Self = u32::MAX;
}

impl Whole for u64 {
    const MAX: Self = u64::MAX;
}

impl Whole for usize {
    const MAX: Self = usize::MAX;
}

/// The value of an option that takes a whole number (a count, a depth, a seed). Clap's own parser
/// refused `-1` as "not in 0..=4294967295", the integer type's range rather than the option's,
/// and `x` as "invalid digit found in string", neither saying what to write; the option's own
/// range is checked, and named, where the command reads it.
pub(crate) fn whole_arg<T>(s: &str) -> Result<T, String>
where
    T: std::str::FromStr<Err = std::num::ParseIntError> + Whole,
{
    use std::num::IntErrorKind;
    let not_digits = || {
        format!(
            "`{s}` is not a whole number in digits (no sign, point, exponent or unit); write \
             e.g. 32 (--help gives the range)"
        )
    };
    // The integer parser takes a leading `+`, which the message refuses.
    if s.starts_with('+') {
        return Err(not_digits());
    }
    s.parse::<T>().map_err(|e| match e.kind() {
        // Not every option's --help gives an upper bound (`--reads`: "at least 1"), so the
        // largest that fits is named here; an option with a lower one says so where it is read.
        IntErrorKind::PosOverflow => format!(
            "`{s}` is too large: at most {} fits this option (its --help says if it takes less)",
            T::MAX
        ),
        IntErrorKind::Empty => {
            "no number given; write a whole number in digits, e.g. 32 (--help gives the range)"
                .to_string()
        }
        _ => not_digits(),
    })
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return parse_stop(&e),
    };
    let result = match cli.command {
        Command::Sim {
            config,
            config_file,
            sets,
            unsets,
            json,
            requests_out,
        } => cmd_sim(
            config.or(config_file).as_deref(),
            &unsets,
            &sets,
            json,
            requests_out.as_deref(),
        ),
        Command::Devices { json } => cmd_devices(json),
        Command::Reproduce {
            experiments,
            quick,
            out,
            list,
        } => cmd_reproduce(&experiments, quick, &out, list),
        Command::Bench(args) => bench::run(&args),
        Command::Serve(args) => net::run_serve(&args),
        Command::Get(args) => net::run_get(&args),
        Command::Proxy(args) => net::run_proxy(&args),
        Command::NetSoak(args) => net::run_soak(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if reader_went_away(&e) => {
            // `foresight devices | head -1`: the reader has what it wanted.
            ExitCode::SUCCESS
        }
        Err(e) => {
            note!("error: {}", describe(&e));
            ExitCode::from(exit_code(&e))
        }
    }
}

/// Where the argument parser stopped: help or the version (standard output, exit 0), or a usage
/// error (standard error, exit 2). clap's own exit drops a write that fails, so `--help` into a
/// full disk exited 0 having written nothing; here it fails as the commands' output does, and a
/// reader that left early (`foresight sim --help | head -1`) ends it quietly.
fn parse_stop(e: &clap::Error) -> ExitCode {
    if e.use_stderr() {
        let _ = e.print();
        return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
    }
    match e.print().and_then(|()| std::io::stdout().flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(io) if io.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(io) => {
            note!("error: writing to standard output: {io}");
            ExitCode::from(1)
        }
    }
}

/// The exit code of a failed command: 2 for bad input, 3 for a server that stopped because its
/// engine broke, 1 for anything else.
fn exit_code(e: &anyhow::Error) -> u8 {
    if e.downcast_ref::<InputError>().is_some() {
        2
    } else if e
        .downcast_ref::<foresight_net::NetError>()
        .is_some_and(|n| matches!(n, foresight_net::NetError::Broken { .. }))
    {
        net::SERVE_BROKEN_EXIT
    } else {
        1
    }
}

/// The context of an error in writing to standard output, and the mark that tells such an
/// error apart: only there does a closed pipe mean that the reader took what it wanted
/// (`foresight devices | head -1`). A closed pipe anywhere else, such as a FIFO given as a
/// command's output file, is a failure like any other.
#[derive(Debug)]
pub(crate) struct WritingStdout;

impl std::fmt::Display for WritingStdout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("writing to standard output")
    }
}

/// Whether `e` is standard output's reader closing the pipe early: a broken pipe under the
/// [`WritingStdout`] context.
fn reader_went_away(e: &anyhow::Error) -> bool {
    e.downcast_ref::<WritingStdout>().is_some() && is_broken_pipe(e)
}

/// Whether `e` holds a broken pipe: the reader of an output went away.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// The error and its causes on one line, each cause once: many of the library errors already
/// name their cause in their own message, and printing the chain as it is would repeat it.
fn describe(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

fn load_config(
    path: Option<&Path>,
    unsets: &[String],
    sets: &[String],
) -> anyhow::Result<SimConfig> {
    let (mut table, mut written) = match path {
        Some(p) => read_config_file_as_written(p).map_err(input)?,
        None => (toml::Table::new(), AsWritten::default()),
    };
    for k in unsets {
        apply_unset(&mut table, k).map_err(input)?;
        written.note_unset(k);
    }
    for s in sets {
        // A --set that a file's value refuses (into its `[[workload]]`) names that line.
        apply_set(&mut table, s).map_err(|e| input(written.explain(e)))?;
        written.note_set(s);
        if path.is_some() {
            // By its key or inside an inline table of its section (`set_paths`).
            for key in set_paths(s) {
                anchor_set_path(&mut table, key)?;
            }
        }
    }
    let base = path.and_then(Path::parent);
    SimConfig::from_table_as_written(table, base, &written).map_err(input)
}

/// Makes the relative path at dotted `key` absolute from the current directory, when a `--set`
/// has just written it. In a config file a relative path is taken from the file's directory;
/// given with `--set`, it was typed in a shell, so it is taken from the current one, and the
/// config file's directory must not be put in front of it.
fn anchor_set_path(table: &mut toml::Table, key: &str) -> anyhow::Result<()> {
    let (sections, name) = key.rsplit_once('.').unwrap_or(("", key));
    let mut cur = table;
    for section in sections.split('.').filter(|s| !s.is_empty()) {
        match cur.get_mut(section) {
            Some(toml::Value::Table(t)) => cur = t,
            // Not a section: the config's reader refuses it, naming the key.
            _ => return Ok(()),
        }
    }
    let Some(toml::Value::String(text)) = cur.get_mut(name) else {
        return Ok(());
    };
    if Path::new(text.as_str()).is_absolute() {
        return Ok(());
    }
    let cwd = std::env::current_dir()
        .map_err(|e| input(format!("--set {key}: cannot resolve `{text}`: {e}")))?;
    *text = cwd.join(text.as_str()).display().to_string();
    Ok(())
}

/// A warning when the stream scheduler's read size R is larger than the files the workload reads
/// whole. The scheduler works on the disk's blocks, as paper 001's host scheduler does below the
/// file system, so it knows no file's end: each stream's first read of R bytes runs past its file
/// and brings in data nobody asked for, which a user comparing R values would take for the
/// policy's own cost. It is given before the run, so that a long run is not waited out for it, and
/// again after it with what that cost (`report`'s `past_file_end_bytes`). `None` when R fits, or
/// the workload has no file size.
fn streams_readahead_past_files(cfg: &SimConfig, report: Option<&Report>) -> Option<String> {
    use foresight_sim::config::WorkloadKind;
    if cfg.policy.name != "streams" || cfg.tiered.is_some() || cfg.dfs.is_some() {
        return None;
    }
    let r_bytes = cfg.policy.streams.readahead_bytes;
    let file_bytes = cfg.workload.file_size.0;
    let files = match cfg.workload.kind {
        WorkloadKind::Streams => "each stream's file",
        WorkloadKind::Webserver => "the workload's mean file",
        _ => return None,
    };
    let cost = match report.and_then(|r| r.past_file_end_bytes.map(|past| (past, r))) {
        Some((past, report)) => format!(
            "; this run read {past} bytes ({}) past the ends of the files its reads began in \
             (past_file_end_bytes), {:.0}% of the {} bytes the device read",
            foresight_core::ByteLen(past).rounded(),
            100.0 * past as f64 / report.device_bytes.max(1) as f64,
            report.device_bytes
        ),
        None => String::new(),
    };
    (file_bytes > 0 && r_bytes > file_bytes).then(|| {
        format!(
            "warning: policy.readahead (R = {}) is larger than workload.file_size ({}), {files}: \
             the stream scheduler reads whole R-byte stretches of the disk and knows no file's \
             end, so each read runs up to {} past the file and the surplus is read for \
             nothing{cost}; set policy.readahead to at most workload.file_size (--set \
             policy.readahead={})",
            foresight_core::ByteLen(r_bytes),
            foresight_core::ByteLen(file_bytes),
            foresight_core::ByteLen(r_bytes - file_bytes),
            // R is read in whole pages.
            foresight_core::ByteLen((file_bytes / PAGE_BYTES * PAGE_BYTES).max(PAGE_BYTES)),
        )
    })
}
fn cmd_sim(
    config: Option<&Path>,
    unsets: &[String],
    sets: &[String],
    json: bool,
    requests_out: Option<&Path>,
) -> anyhow::Result<()> {
    // Before the config is read: reading it can block (a FIFO, a file on a hung mount), and a
    // stop there took the signal's default action and ended without a word.
    cleanup::say_on_signal("the simulation had not begun, so it has no figures and wrote nothing");
    let cfg = load_config(config, unsets, sets)?;
    if let Some(out) = requests_out {
        if out == Path::new("-") {
            // `-` means standard output to most tools, where the summary goes; here it would be
            // a file named `-`.
            return Err(input(
                "--requests-out -: the records go to a file, not to standard output (which has \
                 the run's summary); give a file name (./- for a file of that name)",
            ));
        }
        // The system's own refusal ("Is a directory (os error 21)") would not say what to give.
        if out.is_dir() {
            return Err(input(format!(
                "--requests-out {}: is a directory; give the path of a file to write the records \
                 to, e.g. {}",
                out.display(),
                out.join("requests.csv").display()
            )));
        }
        refuse_overwriting_an_input(out, config, &cfg)?;
    }
    // Opened before the run, so that a path that cannot be written is refused at once, not after
    // minutes of simulation (but emptied only at the first record: see `requests_out`).
    let mut requests_csv = requests_out
        .map(|path| {
            RequestsOut::open(path).map_err(|e| {
                input(format!(
                    "--requests-out: cannot create {}: {e}; give a file you can write",
                    path.display()
                ))
            })
        })
        .transpose()?;
    // Every write names the file: a full disk shows on whichever write fills the buffer, and
    // stops the run there.
    let requests_context = || {
        format!(
            "writing --requests-out {}",
            requests_out.map_or_else(String::new, |p| p.display().to_string())
        )
    };
    let started = std::time::Instant::now();
    let show_bar = std::io::stderr().is_terminal();
    let mut bar: Option<progress::SimBar> = None;
    // Redirected to a file or a pipe, a bar's redraws would be noise: a plain line instead, at
    // most one per interval, so that a long run in a log does not look hung.
    let mut notes = progress::Every::new(progress::NOTE_INTERVAL_S);
    let mut progress = |p: Progress| {
        let elapsed_s = started.elapsed().as_secs_f64();
        if !show_bar {
            if notes.due(elapsed_s) {
                note!("{}", progress::sim_note(&p, elapsed_s));
            }
            return;
        }
        if elapsed_s < 1.0 {
            return;
        }
        bar.get_or_insert_with(|| progress::SimBar::new(indicatif::ProgressDrawTarget::stderr()))
            .show(&p, elapsed_s);
    };
    if let Some(warning) = streams_readahead_past_files(&cfg, None) {
        note!("{warning}");
    }
    // A `--requests-out` file the signal removes is named by the removal: one it keeps (a FIFO,
    // or a file found there and not yet emptied for the run) is not said to be removed.
    cleanup::say_on_signal("the simulation had not finished, so it has no figures");
    let run = foresight_sim::run(
        &cfg,
        RunOptions {
            requests: requests_csv.as_mut().map(|c| c as &mut dyn RequestSink),
            progress: Some(&mut progress),
        },
    );
    if let Some(b) = bar.take() {
        b.finish();
    }
    let out = run.map_err(|e| match e {
        SimError::Config(_) | SimError::Trace(_) => {
            if let Some(csv) = requests_csv.take() {
                csv.abandon();
            }
            input(e)
        }
        SimError::Requests(e) => {
            if let Some(csv) = requests_csv.take() {
                csv.failed();
            }
            anyhow::Error::new(e).context(requests_context())
        }
    })?;
    // The run has its figures from here on: a stop is told what it cuts short instead, first the
    // records still buffered (a regular file is removed, and the removal names it; a FIFO keeps
    // what it was given), then the summary.
    if let (Some(csv), Some(path)) = (requests_csv, requests_out) {
        cleanup::say_on_signal(format!(
            "the simulation had finished, but its summary was not printed and --requests-out {} \
             was not written in full",
            path.display()
        ));
        csv.finish().with_context(requests_context)?;
    }
    cleanup::say_on_signal(match requests_out {
        Some(path) => format!(
            "the simulation had finished and --requests-out {} was written in full, but the \
             summary on standard output may be cut short",
            path.display()
        ),
        None => "the simulation had finished, but the summary on standard output may be cut short"
            .to_string(),
    });
    let r = &out.report;
    // Again after the run, now saying what reading past the files cost.
    if let Some(warning) = streams_readahead_past_files(&cfg, Some(r)) {
        note!("{warning}");
    }
    if r.clients_stopped_at_horizon > 0 {
        note!(
            "warning: {} client(s) stopped with reads left: their next read would have been issued \
             more than 500 simulated years in; lower workload.think, or give each client fewer reads",
            r.clients_stopped_at_horizon
        );
    }
    if r.gaps_single_read_clients > 0 {
        note!(
            "warning: {} client(s) measured one read: their exponential gaps (mean workload.gap) \
             drew one past the room left after the first read of workload.file_size; lower \
             workload.gap or enlarge the file",
            r.gaps_single_read_clients
        );
    }
    if json {
        outln!("{}", serde_json::to_string(r)?);
        return Ok(());
    }
    for line in summary::summary_lines(r) {
        outln!("{line}");
    }
    Ok(())
}

/// Refuses a `--requests-out` that is one of the run's own input files: creating it truncates
/// it, and a trace is read only once the run starts, so it would be gone by then; a file read
/// before the first record (the config, a DiskSim drive's files) would be replaced by the CSV.
fn refuse_overwriting_an_input(
    out: &Path,
    config: Option<&Path>,
    cfg: &SimConfig,
) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt as _;
    let Ok(out_meta) = std::fs::metadata(out) else {
        // Not there yet: it cannot be an input.
        return Ok(());
    };
    let mut inputs: Vec<(&str, &Path)> = Vec::new();
    if let Some(c) = config {
        inputs.push(("--config", c));
    }
    if let Some(t) = &cfg.workload.trace {
        inputs.push(("workload.trace", t));
    }
    // The `.diskspecs` sources a `.model`, which names a seek curve (and a layout): each one is
    // the drive's as much as the specs. A drive that does not import has no list here, and its
    // run is refused while it is built, before anything is written.
    let drive_files = cfg
        .device
        .disksim
        .as_deref()
        .and_then(|d| foresight_device::disksim::import(d).ok())
        .map(|drive| drive.files)
        .unwrap_or_default();
    if let Some(d) = &cfg.device.disksim {
        inputs.push(("device.disksim", d));
    }
    // The first is the `.diskspecs`, named above as given.
    inputs.extend(
        drive_files
            .iter()
            .skip(1)
            .map(|f| ("file sourced by device.disksim", f.as_path())),
    );
    if let Some(t) = &cfg.tiered {
        if let foresight_sim::tiered::config::AccessOrder::Trace(p) = &t.workload.order {
            inputs.push(("workload.trace", p));
        }
    }
    for (what, path) in inputs {
        let same = std::fs::metadata(path)
            .is_ok_and(|m| m.dev() == out_meta.dev() && m.ino() == out_meta.ino());
        if same {
            return Err(input(format!(
                "--requests-out {}: is the run's {what} ({}); writing it would destroy it, so \
                 give another file",
                out.display(),
                path.display()
            )));
        }
    }
    Ok(())
}

/// One entry of `devices --json`, serialized from fields so that its keys come in the order of
/// the text table's columns: a `serde_json::Value` map (this build does not preserve insertion
/// order, which would change every other JSON the tool writes) sorts them by name.
#[derive(serde::Serialize)]
#[serde(untagged)]
enum DevicesEntry<'a> {
    /// A device preset: name, kind, rpm, seek, outer and inner rates, capacity, source.
    Device(&'a foresight_device::presets::PresetInfo),
    /// A link preset, `kind` = "link".
    Link {
        name: &'static str,
        kind: &'static str,
        delay_ms: f64,
        bandwidth_mib_s: f64,
        window_bytes: u64,
        source: &'static str,
    },
}

fn cmd_devices(json: bool) -> anyhow::Result<()> {
    let infos = foresight_device::presets::preset_infos();
    // The links are presets too (`network.link`), so they are listed with the devices: a name
    // the config takes should be found where DESIGN.md says presets are listed.
    let links = foresight_device::link::link_presets();
    if json {
        let all: Vec<DevicesEntry> = infos
            .iter()
            .map(DevicesEntry::Device)
            .chain(links.iter().map(|l| DevicesEntry::Link {
                name: l.name,
                kind: "link",
                delay_ms: l.params.delay.as_millis_f64(),
                bandwidth_mib_s: l.params.bandwidth.as_mib_s(),
                window_bytes: l.params.window.0,
                source: l.source,
            }))
            .collect();
        outln!("{}", serde_json::to_string_pretty(&all)?);
        return Ok(());
    }
    outln!(
        "{:<14} {:<4} {:>6} {:>9} {:>11} {:>11} {:>14}  source",
        "name",
        "kind",
        "rpm",
        "seek ms",
        "outer MiB/s",
        "inner MiB/s",
        "capacity bytes"
    );
    for p in infos {
        // An SSD has no spindle and does not seek: a dash, not a 0 that reads as a figure.
        let rpm = p.rpm.map_or_else(|| "-".to_string(), |r| format!("{r:.0}"));
        let seek_ms = p
            .avg_seek_ms
            .map_or_else(|| "-".to_string(), |s| format!("{s:.2}"));
        outln!(
            "{:<14} {:<4} {:>6} {:>9} {:>11.1} {:>11.1} {:>14}  {}",
            p.name,
            p.kind,
            rpm,
            seek_ms,
            p.media_mib_s_max,
            p.media_mib_s_min,
            p.capacity_bytes,
            p.source
        );
    }
    outln!();
    outln!(
        "{:<14} {:>9} {:>11} {:>14}  source",
        "link",
        "delay ms",
        "MiB/s",
        "window bytes"
    );
    for l in links {
        outln!(
            "{:<14} {:>9.3} {:>11.1} {:>14}  {}",
            l.name,
            l.params.delay.as_millis_f64(),
            l.params.bandwidth.as_mib_s(),
            l.params.window.0,
            l.source
        );
    }
    Ok(())
}

fn cmd_reproduce(names: &[String], quick: bool, out: &Path, list: bool) -> anyhow::Result<()> {
    if list {
        for e in foresight_sim::experiments::catalogue() {
            outln!("{:<12} {}", e.name, e.about);
        }
        return Ok(());
    }
    // Before anything is checked or read (the shared data can be on a slow mount): a stop there
    // took the signal's default action and ended without a word. `--list` only prints.
    cleanup::say_on_signal(format!(
        "reproduce had not begun its experiments, so nothing was written in {}",
        out.display()
    ));
    let known = foresight_sim::experiments::names();
    if let Some(bad) = names.iter().find(|n| !known.contains(&n.as_str())) {
        return Err(input(format!(
            "unknown experiment `{bad}`; choose from: {}",
            known.join(", ")
        )));
    }
    // An experiment named twice is run once, where it was first named: its section of the
    // report and its key in results.json are one.
    let mut seen = std::collections::BTreeSet::new();
    let names: Vec<String> = names
        .iter()
        .filter(|n| seen.insert(n.as_str()))
        .cloned()
        .collect();
    check_writable_dir(out)?;
    // Refused at once, like a bad --out, rather than after the experiments before it.
    if names.is_empty() || names.iter().any(|n| n == "drives") {
        foresight_sim::experiments::drives::check_shared_data().map_err(input)?;
    }
    let started = std::time::Instant::now();
    // A count of finished runs is printed at most once a second (and at the end of its batch):
    // one line per run made over a thousand lines for the quick catalogue.
    let run_counts = std::sync::Mutex::new(progress::RunCounts::new(1.0));
    let log = |line: &str| {
        let elapsed_s = started.elapsed().as_secs_f64();
        let admit = run_counts
            .lock()
            .map_or(true, |mut r| r.admit(line, elapsed_s));
        if admit {
            note!("[{elapsed_s:>6.1}s] {line}");
        }
    };
    // Before the first figure nothing in `out` has changed; from it on, report.md says which
    // experiments were written in full.
    cleanup::say_on_signal(format!(
        "reproduce had not finished, and {} has no results.json of this run; where its report.md \
         says that the run has not finished, it names the experiments whose figures were written \
         in full; otherwise none were",
        out.display()
    ));
    foresight_sim::experiments::reproduce(&names, quick, out, &log).map_err(|e| match e {
        // The user's choice of --out to fix, as a directory that cannot be written is.
        foresight_sim::experiments::ExperimentError::Busy(_) => input(e.to_string()),
        e => e.into(),
    })?;
    cleanup::say_on_signal(format!(
        "reproduce had finished, and {} and {} were written in full",
        out.join("report.md").display(),
        out.join("results.json").display()
    ));
    note!(
        "wrote {} and {} in {:.1} s",
        out.join("report.md").display(),
        out.join("results.json").display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Creates `dir` if needed and checks that a file can be written in it, so that a bad `--out` is
/// refused before minutes of experiments rather than at the first figure.
fn check_writable_dir(dir: &Path) -> anyhow::Result<()> {
    let bad = |what: &str, e: std::io::Error| {
        input(format!(
            "--out: cannot {what} {}: {e}; give a directory you can write",
            dir.display()
        ))
    };
    if dir.exists() && !dir.is_dir() {
        return Err(input(format!(
            "--out: {} is not a directory; give a directory (it is created if missing)",
            dir.display()
        )));
    }
    std::fs::create_dir_all(dir).map_err(|e| bad("create", e))?;
    let probe = dir.join(format!(".foresight-write-test-{}", std::process::id()));
    // Registered while it exists, so that a stop between its creation and removal takes it too.
    let ((), registered) =
        cleanup::create_removed_on_signal(probe.clone(), |p| std::fs::write(p, b""))
            .map_err(|e| bad("write in", e))?;
    std::fs::remove_file(&probe).map_err(|e| bad("write in", e))?;
    drop(registered);
    // The two files every run writes last: one that is in the way (a directory, a file that may
    // not be written) is found now, not after the experiments.
    for name in ["report.md", "results.json"] {
        let path = dir.join(name);
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let fault = if meta.is_dir() {
            Some("is a directory".to_string())
        } else {
            // A symlink whose target is missing is fine: writing creates the target.
            std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .err()
                .filter(|e| e.kind() != std::io::ErrorKind::NotFound)
                .map(|e| format!("cannot be written: {e}"))
        };
        if let Some(fault) = fault {
            return Err(input(format!(
                "--out: {} {fault}; the run writes it, so move it away or give another directory",
                path.display()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server that stopped because its engine broke exits with the code `serve --help`
    /// documents, distinct from bad input's, and its one line says what broke and that the
    /// server stopped. Before, there was no such error: the server never stopped.
    #[test]
    fn a_broken_server_exits_with_the_documented_code() {
        let e = net::net(foresight_net::NetError::Broken {
            why: "the engine broke, by a panic: a policy bug".into(),
        });
        assert_eq!(exit_code(&e), net::SERVE_BROKEN_EXIT);
        assert_ne!(net::SERVE_BROKEN_EXIT, 2);
        assert_ne!(net::SERVE_BROKEN_EXIT, 1);
        let line = describe(&e);
        assert!(!line.contains('\n'), "{line}");
        assert!(
            line.contains("the engine broke, by a panic: a policy bug")
                && line.contains("the server stopped accepting connections")
                && line.contains("supervisor"),
            "{line}"
        );
        let documented = format!("exits with code {}", net::SERVE_BROKEN_EXIT);
        assert!(
            net::SERVE_HELP.replace('\n', " ").contains(&documented),
            "serve --help does not document the exit code"
        );
        assert_eq!(exit_code(&input("bad")), 2);
        assert_eq!(exit_code(&anyhow::anyhow!("other")), 1);
    }

    /// A port that may not be listened on is refused with what to give instead. The advice to
    /// take a port from 1024 up is true only of a port below 1024: refused at 8080 (a security
    /// module, or a system that privileges more ports), the advice named a port that was not the
    /// cause and one the user had already given.
    #[test]
    fn a_listen_refusal_advises_a_port_from_1024_only_for_a_port_below_it() {
        let refused = |addr: &str| {
            describe(&net::listen_failure(
                "--addr",
                foresight_net::NetError::Bind {
                    addr: addr.parse().unwrap(),
                    error: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
                },
            ))
        };
        let low = refused("127.0.0.1:80");
        assert!(
            low.contains("--addr 127.0.0.1:80") && low.contains("from 1024 up"),
            "{low}"
        );
        let high = refused("127.0.0.1:8080");
        assert!(high.contains("--addr 127.0.0.1:8080"), "{high}");
        assert!(
            !high.contains("below 1024") && !high.contains("from 1024 up"),
            "{high}"
        );
        assert!(high.contains("another port, or 0"), "{high}");
    }

    #[test]
    fn describe_names_each_cause_once() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        // A library error that already prints its cause, with the cause also as its source.
        #[derive(Debug)]
        struct Writing {
            source: std::io::Error,
        }
        impl std::fmt::Display for Writing {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "writing out/report.md: {}", self.source)
            }
        }
        impl std::error::Error for Writing {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.source)
            }
        }
        let e = anyhow::Error::new(Writing { source: io });
        assert_eq!(describe(&e), "writing out/report.md: no such file");
        let e = anyhow::anyhow!("inner").context("outer");
        assert_eq!(describe(&e), "outer: inner");
    }
}
