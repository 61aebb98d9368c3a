//! The simulation config: a TOML document with `seed` and the sections `device`, `host`, `policy`
//! and `workload` (and, for a distributed file system run, `dfs` and `network`, which
//! [`crate::dfs::config`] reads), plus `--set KEY=VALUE` overrides by dotted path.
//!
//! Parsing is strict on purpose. Every key is taken out of the document by name with its expected
//! type and unit; whatever is left over is an unknown key and is refused, so a typo never silently
//! falls back to a default. Every error names the dotted key (or the file and line for TOML syntax)
//! and says what to write instead; the CLI turns these into exit code 2.

use std::io::Read;
use std::path::{Path, PathBuf};

use foresight_core::{
    excerpt, parse_duration, parse_rate, parse_size, ByteLen, Duration, SECTOR_BYTES,
};
use foresight_device::{AlmostReadHits, QueuePolicy};
use foresight_policy::readahead::{MspSettings, WindowRule};
use foresight_policy::PolicyConfig;
use thiserror::Error;
use toml::{Table, Value};

use crate::trace::TraceFormat;

/// The most request slots a block queue may have (`host.nr_requests`): Linux's own bound on a
/// multi-queue device's `nr_requests` (`BLK_MQ_MAX_DEPTH`). The queue looks for a merge among,
/// and picks from, the requests it holds, so each event costs in proportion to them: with 2^20
/// slots allowed, 8 streams of 64 MiB requests cut into 4 KiB took 6.3 s of wall time for 10 ms
/// simulated (1.6 s at 65,536 slots, 0.05 s at this bound).
const NR_REQUESTS_MAX: u64 = 10_240;

/// A config problem, naming where it is and what to do.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// A key has a bad value or is unknown.
    #[error("config key `{shown}`: {message}", shown = excerpt(key))]
    Key {
        /// Dotted path of the key.
        key: String,
        /// What is wrong and what to write.
        message: String,
    },
    /// The config file could not be read or is not TOML.
    #[error("{file}: {message}")]
    File {
        /// The file.
        file: String,
        /// What is wrong.
        message: String,
    },
    /// A `--set` argument is not `KEY=VALUE`.
    #[error(
        "--set `{shown}`: expected KEY=VALUE, e.g. --set workload.streams=64",
        shown = excerpt(.0)
    )]
    SetSyntax(String),
}

/// Takes the top-level `seed` (default 1) out of a config table.
pub(crate) fn take_seed(root: &mut Table) -> Result<u64, ConfigError> {
    match root.remove("seed") {
        None => Ok(1),
        Some(Value::Integer(i)) if i >= 0 => Ok(i as u64),
        // A quoted number is read as the number, as every other whole-number key reads it; a
        // seed past TOML's largest integer (i64::MAX) can only come as text, quoted in a file
        // or from --set, and the seed is a u64.
        Some(Value::String(s)) if s.trim().parse::<u64>().is_ok() => {
            Ok(s.trim().parse::<u64>().expect("checked"))
        }
        Some(Value::String(s)) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => Err(
            key_err("seed", format!("must be at most {}, got {s}", u64::MAX)),
        ),
        Some(v) => Err(key_err(
            "seed",
            format!(
                "expected a non-negative whole number, got {shown}",
                shown = excerpt(&v.to_string())
            ),
        )),
    }
}

/// A key as written in the user's table, for a dotted path in a message: a bare key as it is,
/// any other (empty, or holding a dot, a space or another character a bare key cannot have) as
/// the quoted key TOML needs, so that `"device.kind" = 1` at the top level is not shown as the
/// valid `device.kind`, nor `"" = 1` as nothing.
pub(crate) fn shown_key(key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare {
        key.to_string()
    } else {
        Value::String(key.to_string()).to_string()
    }
}

/// The refusal of a key that nothing reads: "unknown key", with the key of `known` it is
/// nearest to when one is close enough to be a misspelling of it (see [`nearest_key`]), then
/// `otherwise`, where the keys are listed. `prefix` is the section's dotted path ("" at the top).
pub(crate) fn unknown_key_message<'k>(
    typed: &str,
    known: impl IntoIterator<Item = &'k str>,
    prefix: &str,
    otherwise: &str,
) -> String {
    match nearest_key(typed, known) {
        Some(k) if prefix.is_empty() => format!("unknown key; did you mean `{k}`? ({otherwise})"),
        Some(k) => format!("unknown key; did you mean `{prefix}.{k}`? ({otherwise})"),
        None => format!("unknown key; {otherwise}"),
    }
}

/// The key of `known` that `typed` is a misspelling of: the fewest single-character edits
/// (insertions, deletions, substitutions, swaps of two neighbours; letter case ignored), at most
/// two and fewer than half the typed key's length, so that `stream` finds `streams` and `nmae`
/// finds `name` while `bogus` finds nothing. Ties go to the key listed first. Failing that, a
/// key named by a word the other sections use for the same thing: `kind` where the section
/// takes `name` (`policy.kind` for `policy.name`), `name` for `preset` (`device.name`), and
/// `name` or `type` where the section takes `kind`.
pub(crate) fn nearest_key<'k>(
    typed: &str,
    known: impl IntoIterator<Item = &'k str>,
) -> Option<&'k str> {
    let typed_lower = typed.to_lowercase();
    let typed: Vec<char> = typed_lower.chars().collect();
    let known: Vec<&str> = known.into_iter().collect();
    let mut best: Option<(usize, &str)> = None;
    for &key in &known {
        let d = edit_distance(&typed, &key.to_lowercase().chars().collect::<Vec<_>>());
        if d <= 2 && 2 * d < typed.len() && best.is_none_or(|(b, _)| d < b) {
            best = Some((d, key));
        }
    }
    // In order of preference: `device.name` means the preset more likely than the kind.
    const SAME_THING: [(&str, &str); 6] = [
        ("kind", "name"),
        ("type", "name"),
        ("name", "preset"),
        ("model", "preset"),
        ("name", "kind"),
        ("type", "kind"),
    ];
    let same_thing = SAME_THING
        .iter()
        .filter(|(word, _)| *word == typed_lower)
        .find_map(|(_, meant)| known.iter().copied().find(|k| k == meant));
    best.map(|(_, k)| k).or(same_thing)
}

/// Edit distance with swaps (optimal string alignment): the fewest insertions, deletions,
/// substitutions and swaps of two neighbouring characters that turn `a` into `b`. A swap is the
/// commonest slip at a keyboard, and plain Levenshtein counts it as two edits.
fn edit_distance(a: &[char], b: &[char]) -> usize {
    // Three rows of the usual table: the swap looks two rows back.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current: Vec<usize> = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        current[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (previous[j - 1] + cost)
                .min(previous[j] + 1)
                .min(current[j - 1] + 1);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(before[j - 2] + 1);
            }
            current[j] = d;
        }
        std::mem::swap(&mut before, &mut previous);
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

pub(crate) fn key_err(key: &str, message: impl Into<String>) -> ConfigError {
    ConfigError::Key {
        key: key.to_string(),
        message: message.into(),
    }
}

/// The refusal of a size that is not a whole number of 512-byte sectors (`positive`: nor zero):
/// what was written, and the whole-sector sizes on either side of it to write instead.
pub(crate) fn not_whole_sectors(
    key: &str,
    given: &GivenValues,
    v: ByteLen,
    positive: bool,
) -> ConfigError {
    let below = v.0 / SECTOR_BYTES * SECTOR_BYTES;
    let above = below + SECTOR_BYTES;
    let choices = if below == 0 && positive {
        format!("`{}`", ByteLen(above))
    } else {
        format!("`{}` or `{}`", ByteLen(below), ByteLen(above))
    };
    key_err(
        key,
        format!(
            "must be a {}whole number of 512-byte sectors, got {}; write {choices}",
            if positive { "positive " } else { "" },
            given.value(key, v.rounded()),
        ),
    )
}

/// A size to suggest as an upper bound: rounded down to whole KiB so that it reads as a size
/// (`9637KiB`, not `9868928B`), with a rounded figure beside it when that is still long.
fn writable_at_most(b: ByteLen) -> String {
    let b = if b.0 >= 1024 {
        ByteLen(b.0 / 1024 * 1024)
    } else {
        b
    };
    let rounded = b.rounded();
    if rounded == b.to_string() {
        rounded
    } else {
        format!("{b} ({rounded})")
    }
}

/// Which kind of device the volume is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceKind {
    /// One hard disk.
    Hdd,
    /// One SSD.
    Ssd,
    /// A RAID-0 array of identical disks.
    Raid0,
    /// Independent identical disks behind one controller; files go round-robin over them.
    Jbod,
}

/// `[device]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceConfig {
    /// Kind of device.
    pub kind: DeviceKind,
    /// Preset name (for `raid0`, the member disk).
    pub preset: String,
    /// Member disks (`raid0`).
    pub disks: u32,
    /// Strip size (`raid0`).
    pub strip: ByteLen,
    /// Device command-queue depth, overriding the preset's.
    pub queue_depth: Option<u32>,
    /// How a disk picks its next queued command, overriding the preset's.
    pub queue_policy: Option<QueuePolicy>,
    /// A DiskSim 4.0 `.diskspecs` file to import the disk from instead of a preset (`hdd` and
    /// `raid0`), resolved relative to the config file like `workload.trace`.
    pub disksim: Option<PathBuf>,
    /// Aggregate bandwidth of the one controller all members sit behind (paper 001: 450 MB/s).
    pub controller_bytes_per_s: Option<u64>,
    /// Drive cache overrides: number of segments, segment size, drive read-ahead.
    pub cache_segments: Option<u32>,
    /// Size of one drive cache segment.
    pub segment_size: Option<ByteLen>,
    /// The drive's own read-ahead after a miss.
    pub drive_readahead: Option<ByteLen>,
    /// How far the drive reads ahead before it serves the next command (minimum read-ahead).
    pub drive_readahead_min: Option<ByteLen>,
    /// Which reads arriving during the drive's read-ahead, ahead of what it has read, join it
    /// (`none` and `head` are DiskSim's `Allow almost read hits` 0 and 1; `ahead`, every preset's
    /// and import's, lets any read the read-ahead will reach join it).
    pub almost_read_hits: Option<AlmostReadHits>,
    /// The controller's cache (0 = none): a block-level cache below the host (paper 001, Fig. 8).
    pub controller_cache: ByteLen,
    /// The controller's read-ahead beyond every missing read.
    pub controller_readahead: ByteLen,
    /// The drive cache keys (and the disks') as written: the checks comparing them with the
    /// drive's own figures run where the device is built (`build.rs`, and the volume's size in
    /// `sim.rs`), after the preset or import is read, and quote them as the other checks comparing
    /// two keys do.
    pub(crate) given: GivenValues,
}

/// The host block-queue scheduler (defined with the queue, which the engine shares).
pub use foresight_device::blockq::Scheduler;

/// The RAID driver's cache under `msp+...` when `host.raid_cache` is not given: paper 000's
/// 512 MiB, the engine's default (`EngineBuilder::raid_cache`) and `foresight bench`'s.
pub const DEFAULT_MSP_RAID_CACHE: ByteLen = ByteLen::mib(512);

/// `[host]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostConfig {
    /// Page-cache capacity: the memory budget.
    pub memory: ByteLen,
    /// Block-queue scheduler.
    pub scheduler: Scheduler,
    /// Largest block request after merging (Linux `max_sectors_kb`).
    pub max_request: ByteLen,
    /// How long a read may wait before the deadline scheduler serves it out of order.
    pub read_expire: Duration,
    /// How long the anticipatory scheduler holds a disk idle for the stream whose read just
    /// completed (Linux 2.6's `antic_expire`).
    pub antic_expire: Duration,
    /// The RAID driver's own cache, beside the page cache (0 = none; under `msp+...`
    /// [`DEFAULT_MSP_RAID_CACHE`] unless given).
    pub raid_cache: ByteLen,
    /// Request slots of each block queue (Linux `nr_requests`): the elevator sorts at most this
    /// many requests; other parts wait for a slot in arrival order.
    pub nr_requests: u32,
    /// `host.copy_rate`: how fast the host copies a read's bytes from the page cache into the
    /// application's buffer, bytes per second, on one memory bus that every copy queues for (see
    /// [`crate::host::copybus`]); `None` (`"free"`) when copies cost no time, as before the model.
    pub copy_bytes_per_s: Option<u64>,
}

/// `host.copy_rate`'s default, 10 GiB/s: a round figure below the 14.4 to 17.1 GiB/s (three runs)
/// that one thread copied 128 KiB pieces of a 256 MiB buffer at on the development machine,
/// measured with `cargo run --release -p foresight-sim --example copy_rate`. One thread,
/// because a `read()`'s copy runs on the caller's core, and the model serialises every copy of the
/// host: one core's rate is a lower bound on the host's aggregate.
pub const DEFAULT_COPY_BYTES_PER_S: u64 = 10 << 30;

/// The value of `host.copy_rate` that makes copies cost no time.
pub const FREE_COPY: &str = "free";

/// Reads `host.copy_rate`: a rate with its unit, at least 1 MiB/s, or `"free"`.
fn copy_rate(h: &mut Section) -> Result<Option<u64>, ConfigError> {
    const KEY: &str = "host.copy_rate";
    const HOW: &str = "give a rate with its unit, such as \"10GiB/s\" or \"8GB/s\", or \"free\" \
                       for copies that cost no time";
    match h.raw("copy_rate") {
        None => Ok(Some(DEFAULT_COPY_BYTES_PER_S)),
        Some(Value::String(s)) if s == FREE_COPY => Ok(None),
        // A zero rate could mean either "no copying" or "copies never end": refused, with both
        // ways to say what is meant.
        Some(Value::String(s)) if s.trim().trim_start_matches('0').is_empty() => Err(key_err(
            KEY,
            format!("`{}` is ambiguous; {HOW}", excerpt(&s)),
        )),
        Some(Value::String(s)) => {
            let r = parse_rate(&s).map_err(|e| key_err(KEY, format!("{e}; or \"free\"")))?;
            // At least 1 MiB/s: far below any host's memory, and a rate far below that stretches
            // one copy over years.
            if r.bytes_per_s < (1u64 << 20) as f64 {
                return Err(key_err(
                    KEY,
                    format!("`{}` is below 1MiB/s; {HOW}", excerpt(&s)),
                ));
            }
            Ok(Some(r.bytes_per_s.round() as u64))
        }
        Some(Value::Integer(0)) | Some(Value::Float(0.0)) => {
            Err(key_err(KEY, format!("0 is ambiguous; {HOW}")))
        }
        Some(v) => Err(key_err(
            KEY,
            format!(
                "expected a rate with its unit in quotes, got {shown}; {HOW}",
                shown = excerpt(&v.to_string())
            ),
        )),
    }
}

/// What the application does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkloadKind {
    /// N clients, each reading its own file sequentially.
    Streams,
    /// N clients reading uniformly random offsets of one file.
    Random,
    /// Replay of a block trace.
    Trace,
    /// FileBench's web server: threads each read whole files from a set whose sizes have mean
    /// `file_size`, picked as `pick` says.
    Webserver,
    /// A table scan through an index (paper 003): each client reads its own table of `file_size`
    /// in pages of `request` bytes, in a random-permutation order disclosed up front as a hint.
    Scan,
    /// A row-major image of `tiles_across` tiles per row, read column of tiles by column of tiles:
    /// each read is one tile row segment of `tile` bytes; the order is disclosed up front.
    Tiles,
    /// Sorted reads of `request` bytes separated by gaps of `gap` bytes (fixed, or exponentially
    /// distributed with that mean), disclosed up front: the infill sweep of paper 003, Fig. 2.
    Gaps,
}

/// How the gaps of a `gaps` workload are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GapDist {
    /// Every gap is `workload.gap`.
    Fixed,
    /// Gaps are exponential with mean `workload.gap` (sorted random reads in a region).
    Exponential,
}

/// How a `webserver` thread picks its next file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FilePick {
    /// Each thread draws every file uniformly at random from the set.
    Random,
    /// One cursor shared by all threads walks the set in file order, and each open takes the file
    /// under it: FileBench 1.x's `openfile` (without `rotatefd`), which paper 000's FileBench 1.1.0
    /// ran. FileBench creates the files in that same order, so with `contiguous` placement the
    /// threads read neighbouring files.
    Rotor,
}

pub use foresight_policy::layout::Placement;

/// `[workload]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadConfig {
    /// Kind of workload.
    pub kind: WorkloadKind,
    /// Number of clients.
    pub streams: u32,
    /// Size of each file (`random`: of the one shared file; `0` there means the whole volume).
    pub file_size: ByteLen,
    /// Bytes per application read.
    pub request: ByteLen,
    /// Time a client spends between one request completing and issuing the next.
    pub think: Duration,
    /// Stop after this much simulated time, if set.
    pub duration: Option<Duration>,
    /// Requests per client (`random`).
    pub requests: u64,
    /// File placement.
    pub placement: Placement,
    /// Files in the set (`webserver`).
    pub files: u32,
    /// How a thread picks its next file (`webserver`).
    pub pick: FilePick,
    /// Whether files carry ext3-like indirect blocks among their data (paper 000, Fig. 6).
    pub metadata: bool,
    /// Trace file (`trace`).
    pub trace: Option<PathBuf>,
    /// Trace format (`trace`).
    pub format: TraceFormat,
    /// Most records of the trace replayed (`trace`): its first ones, as `head` cuts a file; 0 (the
    /// default) replays it whole. A replay reads its trace as it goes, so memory does not limit
    /// its length.
    pub trace_records_max: u64,
    /// Replay the trace closed-loop (next request when the previous completes; for a DiskSim trace,
    /// its line's interarrival gap after, as DiskSim replays it) instead of at the trace's own
    /// arrival times.
    pub closed: bool,
    /// Bytes of one tile row segment (`tiles`).
    pub tile: ByteLen,
    /// Image width in tiles (`tiles`).
    pub tiles_across: u64,
    /// Gap between reads (`gaps`), or its mean.
    pub gap: ByteLen,
    /// How gaps are drawn (`gaps`).
    pub gap_dist: GapDist,
    /// The keys of the clients and their files as written: the checks that place the files and
    /// plan the reads run where the volume is built (`sim.rs`), and there `workload.files` left
    /// out means "as many as fit".
    pub(crate) given: GivenValues,
}

impl WorkloadConfig {
    /// Bytes of one application read: `tile` for a `tiles` workload, `request` for the others
    /// (a trace's records carry their own sizes).
    pub fn read_bytes(&self) -> ByteLen {
        match self.kind {
            WorkloadKind::Tiles => self.tile,
            _ => self.request,
        }
    }

    /// The key that sets [`WorkloadConfig::read_bytes`].
    pub fn read_key(&self) -> &'static str {
        match self.kind {
            WorkloadKind::Tiles => "workload.tile",
            _ => "workload.request",
        }
    }

    /// Whether every application read starts on a page: the reads are placed at multiples of
    /// [`WorkloadConfig::read_bytes`], plus, in a `gaps` workload, the gaps, which the plan rounds
    /// down to whole pages (a fixed gap and every exponential draw alike), so there the request
    /// alone decides. A trace's offsets are its own.
    pub fn reads_page_aligned(&self) -> bool {
        match self.kind {
            WorkloadKind::Trace => false,
            _ => self
                .read_bytes()
                .0
                .is_multiple_of(foresight_policy::PAGE_BYTES),
        }
    }
}

/// A whole simulation config.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimConfig {
    /// The one seed every random draw comes from.
    pub seed: u64,
    /// `[device]`.
    pub device: DeviceConfig,
    /// `[host]`.
    pub host: HostConfig,
    /// `[policy]`.
    pub policy: PolicyConfig,
    /// `[workload]`.
    pub workload: WorkloadConfig,
    /// A hinted workload over a tier stack (`device.kind = "tiered"` or `"constant"`,
    /// `workload.kind = "hinted"`), run by [`crate::tiered`] instead of the page-cache host.
    pub tiered: Option<Box<crate::tiered::TieredConfig>>,
    /// `[dfs]` and `[network]`: run the workload through the DFS model (see `crate::dfs`).
    pub dfs: Option<crate::dfs::config::DfsSettings>,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig::from_table(Table::new(), None).expect("the empty config is valid")
    }
}

/// The largest config file read: thousands of times any real one.
const CONFIG_BYTES_MAX: u64 = 16 << 20;

/// Reads a config file into a TOML table.
pub fn read_config_file(path: &Path) -> Result<Table, ConfigError> {
    read_config_file_as_written(path).map(|(table, _)| table)
}

/// Reads a config file into a TOML table, with its values as written and their lines, for
/// [`SimConfig::from_table_as_written`].
pub fn read_config_file_as_written(path: &Path) -> Result<(Table, AsWritten), ConfigError> {
    let file_err = |message: String| ConfigError::File {
        file: path.display().to_string(),
        message,
    };
    // Read through a bound, not to the end: a device or a pipe (`/dev/zero`) may never end.
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(CONFIG_BYTES_MAX + 1).read_to_end(&mut bytes))
        .map_err(|e| {
            file_err(format!(
                "cannot read: {e}; give the path of a TOML config file (see `foresight sim \
                 --help` for its keys)"
            ))
        })?;
    if bytes.len() as u64 > CONFIG_BYTES_MAX {
        return Err(file_err(format!(
            "holds more than {} bytes; a config is a few hundred bytes of TOML",
            CONFIG_BYTES_MAX
        )));
    }
    // A TOML file is UTF-8 by definition: one saved in another encoding is refused at the line
    // of its first foreign byte, which is where the user has to look.
    let text = String::from_utf8(bytes).map_err(|e| {
        let good = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        ConfigError::File {
            file: format!(
                "{}:{}",
                path.display(),
                good.iter().filter(|&&b| b == b'\n').count() + 1
            ),
            message: "not UTF-8 text; save the config as UTF-8".into(),
        }
    })?;
    let file = path.display().to_string();
    let table = parse_config_text(&text, &file)?;
    // An empty file is valid TOML, but one given by name is a mistake (a file cut short, the
    // wrong path): running the defaults under its name would report a run nobody asked for.
    if table.is_empty() {
        return Err(file_err(
            "holds no keys (it is empty, or only blank lines and comments); put the keys to \
             change in it, or give no config file to run the defaults"
                .into(),
        ));
    }
    Ok((table, AsWritten::of_text(&text, &file)))
}

/// Parses config text into a TOML table; syntax errors name the file and line.
pub fn parse_config_text(text: &str, file: &str) -> Result<Table, ConfigError> {
    let mut table = text.parse::<Table>().map_err(|e| {
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
        ConfigError::File {
            file: match line {
                Some(l) => format!("{file}:{l}"),
                None => file.to_string(),
            },
            // The parser's message spans lines (what it found, then what it expected); an
            // error is printed as one line.
            message: format!(
                "not valid TOML: {}{}",
                e.message()
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .collect::<Vec<_>>()
                    .join("; "),
                // A seed may be any u64, written quoted past TOML's integers; every other
                // whole-number key stops well below them, so quoting its number only trades
                // this message for the key's range.
                if e.message().contains("number too large") {
                    format!(
                        "; TOML's integers stop at {}: only `seed` takes a larger number, and \
                         then quoted (seed = \"18446744073709551615\"); any other key's \
                         number must be smaller",
                        i64::MAX
                    )
                } else {
                    String::new()
                }
            ),
        }
    })?;
    table.iter_mut().for_each(|(_, v)| datetimes_as_text(v));
    Ok(table)
}

/// No key takes a TOML date or time, but a value such as `00:01:00` (a duration written as a
/// clock) parses as one, and `toml` prints a date inside a message as its serde stand-in,
/// `{ "$__toml_private_datetime" = "00:01:00" }`. As text, each key refuses it in its own words,
/// showing it as written.
fn datetimes_as_text(v: &mut Value) {
    match v {
        Value::Datetime(d) => *v = Value::String(d.to_string()),
        Value::Table(t) => t.iter_mut().for_each(|(_, v)| datetimes_as_text(v)),
        Value::Array(a) => a.iter_mut().for_each(datetimes_as_text),
        _ => {}
    }
}

/// One step of a dotted key: a key of a table, and for an array of tables the element it names
/// (`tiers[0]`).
struct Step<'a> {
    name: &'a str,
    index: Option<usize>,
}

/// Splits a dotted key (`device.tiers[1].preset`) into its steps; `shown` is the whole
/// argument, for messages.
fn key_steps<'a>(key: &'a str, shown: &str) -> Result<Vec<Step<'a>>, ConfigError> {
    let syntax = || ConfigError::SetSyntax(shown.to_string());
    key.split('.')
        .map(|part| {
            let part = part.trim();
            let (name, index) = match part.split_once('[') {
                None => (part, None),
                Some((name, rest)) => {
                    let digits = rest.strip_suffix(']').ok_or_else(syntax)?;
                    let index = digits.trim().parse::<usize>().map_err(|_| {
                        key_err(
                            key,
                            format!("`[{digits}]` is not an element number; count from 0, as in device.tiers[0]"),
                        )
                    })?;
                    (name.trim(), Some(index))
                }
            };
            if name.is_empty() {
                return Err(syntax());
            }
            Ok(Step { name, index })
        })
        .collect()
}

/// The table that holds the last step of `steps`, made on the way where `create` allows (tables
/// only: an element of an array must already be in the config).
fn parent_table<'t>(
    table: &'t mut Table,
    steps: &[Step],
    create: bool,
) -> Result<Option<&'t mut Table>, ConfigError> {
    let mut cur = table;
    for (i, step) in steps[..steps.len() - 1].iter().enumerate() {
        let here = || {
            steps[..=i]
                .iter()
                .map(|s| match s.index {
                    Some(n) => format!("{}[{n}]", s.name),
                    None => s.name.to_string(),
                })
                .collect::<Vec<_>>()
                .join(".")
        };
        if !create && !cur.contains_key(step.name) {
            return Ok(None);
        }
        let entry = cur
            .entry(step.name.to_string())
            .or_insert_with(|| Value::Table(Table::new()));
        cur = match (entry, step.index) {
            (Value::Table(t), None) => t,
            (Value::Array(a), Some(n)) => {
                let len = a.len();
                match a.get_mut(n) {
                    Some(Value::Table(t)) => t,
                    Some(_) => {
                        return Err(key_err(&here(), "is a value, not a section, so it has no sub-keys"))
                    }
                    None => {
                        return Err(key_err(
                            &here(),
                            format!(
                                "is past the end: the config has {len} element(s), numbered from 0; add elements in the config file"
                            ),
                        ))
                    }
                }
            }
            // Every top-level key is one section or a value: a list there is a mistake (a
            // file's `[[workload]]`), not a list to pick an element of.
            (Value::Array(_), None) if i == 0 => {
                return Err(key_err(&here(), one_section_not_a_list(step.name)))
            }
            (Value::Array(_), None) => {
                return Err(key_err(
                    &here(),
                    format!("is a list; name an element, e.g. {}[0]", here()),
                ))
            }
            (_, Some(_)) => {
                return Err(key_err(
                    &here(),
                    format!("`{}` is not a list of sections in the config", step.name),
                ))
            }
            (_, None) => {
                return Err(key_err(
                    &here(),
                    "is a value, not a section, so it has no sub-keys",
                ))
            }
        };
    }
    Ok(Some(cur))
}

/// The keys that take the path of a file (read by [`Section::file_path`]). A `--set` of one takes
/// its text as written, since a shell gives no easy way to pass TOML's quotes and a file may be
/// named `2024` or `true`; a config file, where quoting is easy, still writes a path as a string.
const PATH_KEYS: [&str; 2] = ["device.disksim", "workload.trace"];

/// The keys that take a path (`device.disksim`, `workload.trace`) whose value the `--set`
/// `assignment` writes: the one it names, or those inside the section it sets whole
/// (`workload={kind="trace", trace="t.trace"}`). Right
/// after [`apply_set`] of it, a path at one of these keys is the assignment's, not the config
/// file's, so a caller may resolve it from elsewhere than the file's directory. None when the key
/// is malformed or steps through an element of a list (no path is in one).
pub fn set_paths(assignment: &str) -> Vec<&'static str> {
    let Some((key, _)) = assignment.split_once('=') else {
        return Vec::new();
    };
    let Ok(steps) = key_steps(key.trim(), assignment) else {
        return Vec::new();
    };
    if steps.iter().any(|s| s.index.is_some()) {
        return Vec::new();
    }
    let names: Vec<&str> = steps.iter().map(|s| s.name).collect();
    let set = names.join(".");
    PATH_KEYS
        .into_iter()
        .filter(|p| {
            p.strip_prefix(set.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
        })
        .collect()
}

/// Applies one `--set KEY=VALUE`. The value is read as a TOML value when it is one (`64`, `true`,
/// `"x"`, `[1, 2]`), else as a string (`128KiB`, `seqp`); a key that names a file
/// (`device.disksim`, `workload.trace`) takes any value but a quoted TOML string as the text
/// written (`workload.trace=2024` is the file `2024`). A step may name an element of a list of
/// sections that the config already has (`device.tiers[0].preset=wd800jd`).
pub fn apply_set(table: &mut Table, assignment: &str) -> Result<(), ConfigError> {
    let (key, raw) = assignment
        .split_once('=')
        .ok_or_else(|| ConfigError::SetSyntax(assignment.to_string()))?;
    let key = key.trim();
    let steps = key_steps(key, assignment)?;
    let last = steps.last().expect("split yields a step");
    if last.index.is_some() {
        return Err(key_err(
            key,
            "names a whole element; set its keys one by one, e.g. device.tiers[0].preset=wd800jd",
        ));
    }
    let raw = raw.trim();
    // Exactly one key: a value holding a newline could otherwise add keys of its own, and
    // `4\nstreams = 64` would be read as 4 with the rest dropped.
    let mut value = format!("v = {raw}")
        .parse::<Table>()
        .ok()
        .filter(|t| t.len() == 1)
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| Value::String(raw.to_string()));
    let names: Vec<&str> = steps.iter().map(|s| s.name).collect();
    let is_path = steps.iter().all(|s| s.index.is_none()) && PATH_KEYS.contains(&&*names.join("."));
    if is_path && !value.is_str() {
        value = Value::String(raw.to_string());
    }
    datetimes_as_text(&mut value);
    let cur = parent_table(table, &steps, true)?.expect("made on the way");
    cur.insert(last.name.to_string(), value);
    Ok(())
}

/// Applies one `--unset KEY`: removes a key the config file set, so that the run takes its
/// default (or, for a key only some policies or workloads read, so that another one may be
/// chosen with `--set`). A key the config does not set is refused, so that a misspelt one is
/// not silently ignored.
pub fn apply_unset(table: &mut Table, key: &str) -> Result<(), ConfigError> {
    let key = key.trim();
    let steps = key_steps(key, key)?;
    let last = steps.last().expect("split yields a step");
    let missing = || {
        key_err(
            key,
            "is not set in the config, so there is nothing to unset; check its spelling",
        )
    };
    if last.index.is_some() {
        return Err(key_err(
            key,
            "names a whole element; unset its keys one by one, e.g. device.tiers[0].capacity",
        ));
    }
    let cur = parent_table(table, &steps, false)?.ok_or_else(missing)?;
    cur.remove(last.name).map(|_| ()).ok_or_else(missing)
}

/// A value out of range, for a message: as the user wrote it (`given`, from [`Section::given`]),
/// then as read (`as_read`) when that reads differently, e.g. `` `6GB` (about 5.6GiB) ``.
pub(crate) fn as_given(given: &str, as_read: impl std::fmt::Display) -> String {
    let as_read = as_read.to_string();
    if as_read == given {
        format!("`{given}`")
    } else {
        format!("`{given}` ({as_read})")
    }
}

/// A value as the user wrote it, for a message: a string without its quotes, anything else as
/// TOML prints it, cut as [`excerpt`] cuts.
fn given_text(v: &Value) -> String {
    match v {
        Value::String(s) => excerpt(s.trim()).to_string(),
        v => excerpt(&v.to_string()).to_string(),
    }
}

/// Every value of a config as the user wrote it, by its full key (`host.memory`,
/// `device.tiers[0].capacity`, `device.link.delay`), taken before the sections are read: a check
/// that compares two keys runs after both were converted, and quotes each as written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct GivenValues {
    by_key: std::collections::BTreeMap<String, String>,
}

impl GivenValues {
    /// The values of `root`'s sections.
    pub(crate) fn of(root: &Table) -> GivenValues {
        fn walk(out: &mut std::collections::BTreeMap<String, String>, key: String, v: &Value) {
            match v {
                Value::Table(t) => {
                    for (k, v) in t {
                        walk(out, format!("{key}.{}", shown_key(k)), v);
                    }
                }
                Value::Array(a) if !a.is_empty() && a.iter().all(Value::is_table) => {
                    for (i, v) in a.iter().enumerate() {
                        walk(out, format!("{key}[{i}]"), v);
                    }
                }
                v => {
                    out.insert(key, given_text(v));
                }
            }
        }
        let mut by_key = std::collections::BTreeMap::new();
        for (k, v) in root {
            if let Value::Table(t) = v {
                for (k2, v2) in t {
                    walk(
                        &mut by_key,
                        format!("{}.{}", shown_key(k), shown_key(k2)),
                        v2,
                    );
                }
            }
        }
        GivenValues { by_key }
    }

    /// The value of `key` for a message: as written with its conversion beside it
    /// ([`as_given`]), or `as_read` marked `(default)` when the config leaves the key out.
    pub(crate) fn value(&self, key: &str, as_read: impl std::fmt::Display) -> String {
        match self.by_key.get(key) {
            Some(given) => as_given(given, as_read),
            None => format!("{as_read} (default)"),
        }
    }

    /// Another key and its value, for a message about the key refused: `key = ` and
    /// [`GivenValues::value`].
    pub(crate) fn key(&self, key: &str, as_read: impl std::fmt::Display) -> String {
        format!("{key} = {}", self.value(key, as_read))
    }

    /// Whether the config gives `key`.
    pub(crate) fn has(&self, key: &str) -> bool {
        self.by_key.contains_key(key)
    }

    /// These values, with each one `written` differently from its reprint as it was written.
    fn quoting(mut self, written: &AsWritten) -> GivenValues {
        for (key, w) in &written.by_key {
            if let Some(v) = self.by_key.get_mut(key) {
                if *v == w.reprint {
                    *v = excerpt(&w.text);
                }
            }
        }
        self
    }

    /// The values of `keys` alone, for a part of the config that keeps them beyond parsing.
    fn only(&self, keys: &[&str]) -> GivenValues {
        GivenValues {
            by_key: keys
                .iter()
                .filter_map(|&k| Some((k.to_string(), self.by_key.get(k)?.clone())))
                .collect(),
        }
    }
}

/// A config's values as the user wrote them, with where: TOML reads `1e9` as a float and prints
/// it back as `1000000000.0` (and `1_000` as `1000`, `0x10` as `16`), so a message quoting the
/// value read would show text the user never wrote and cannot find. Built from the file's text
/// (each value with its `FILE:LINE`) and from each `--set` (whose text is the argument's);
/// [`SimConfig::from_table_as_written`] puts the written text back into a refusal of the key and
/// says where the file set it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AsWritten {
    by_key: std::collections::BTreeMap<String, Written>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Written {
    /// The value's text as written (`1e9`).
    text: String,
    /// The value as messages print it once read (`1000000000.0`).
    reprint: String,
    /// `FILE:LINE`, for a value from a config file.
    at: Option<String>,
}

impl AsWritten {
    /// The values of a config file's text (one that parses: [`parse_config_text`] reports a
    /// syntax error first), by their dotted paths (`host.memory`, `device.tiers[0].capacity`).
    pub fn of_text(text: &str, file: &str) -> AsWritten {
        use toml_edit::{Item, Value as Edit};
        type Span = std::ops::Range<usize>;
        fn scalar(out: &mut AsWritten, text: &str, file: &str, key: String, v: &Edit) {
            let Some(span) = v.span() else { return };
            let Some(raw) = text.get(span.clone()) else {
                return;
            };
            let line = text[..span.start].matches('\n').count() + 1;
            // As `toml` reads the same text, for the reprint messages quote.
            let Ok(read) = format!("v = {raw}").parse::<Table>() else {
                return;
            };
            let Some(read) = read.get("v") else { return };
            // A string is quoted as it is; only a number or a boolean is printed back differently.
            let reprint = given_text(read);
            let written = match read {
                Value::String(_) => reprint.clone(),
                _ => raw.trim().to_string(),
            };
            out.by_key.insert(
                key,
                Written {
                    text: written,
                    reprint,
                    at: Some(format!("{file}:{line}")),
                },
            );
        }
        /// A section's header line (`[host]`, the first `[[device.tiers]]`), for a refusal of
        /// the section as a whole.
        fn header(out: &mut AsWritten, text: &str, file: &str, key: String, span: Option<Span>) {
            let Some(span) = span else { return };
            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
            out.by_key.insert(
                key,
                Written {
                    text: String::new(),
                    reprint: String::new(),
                    at: Some(format!("{file}:{line}")),
                },
            );
        }
        fn value(out: &mut AsWritten, text: &str, file: &str, key: String, v: &Edit) {
            // A list or inline table as a whole too, where a plain value is refused.
            if matches!(v, Edit::InlineTable(_) | Edit::Array(_)) {
                scalar(out, text, file, key.clone(), v);
            }
            match v {
                Edit::InlineTable(t) => {
                    for (k, v) in t.iter() {
                        value(out, text, file, format!("{key}.{}", shown_key(k)), v);
                    }
                }
                Edit::Array(a) => {
                    if !a.is_empty() && a.iter().all(Edit::is_inline_table) {
                        for (i, v) in a.iter().enumerate() {
                            value(out, text, file, format!("{key}[{i}]"), v);
                        }
                    }
                }
                v => scalar(out, text, file, key, v),
            }
        }
        fn item(out: &mut AsWritten, text: &str, file: &str, key: String, it: &Item) {
            match it {
                Item::Value(v) => value(out, text, file, key, v),
                Item::Table(t) => {
                    header(out, text, file, key.clone(), t.span());
                    for (k, it) in t.iter() {
                        item(out, text, file, format!("{key}.{}", shown_key(k)), it);
                    }
                }
                Item::ArrayOfTables(a) => {
                    header(
                        out,
                        text,
                        file,
                        key.clone(),
                        a.iter().next().and_then(|t| t.span()),
                    );
                    for (i, t) in a.iter().enumerate() {
                        for (k, it) in t.iter() {
                            item(out, text, file, format!("{key}[{i}].{}", shown_key(k)), it);
                        }
                    }
                }
                Item::None => {}
            }
        }
        let mut out = AsWritten::default();
        if let Ok(doc) = toml_edit::ImDocument::parse(text) {
            for (k, it) in doc.as_table().iter() {
                item(&mut out, text, file, shown_key(k), it);
            }
        }
        out
    }

    /// Takes in one `--set KEY=VALUE` that [`apply_set`] applied: the value replaces whatever the
    /// file wrote for the key, and its text is the argument's.
    pub fn note_set(&mut self, assignment: &str) {
        let Some((key, raw)) = assignment.split_once('=') else {
            return;
        };
        let Some(key) = Self::full_key(key) else {
            return;
        };
        self.forget(&key);
        // Read as `apply_set` reads it (a value that is not TOML is a string, quoted as it is),
        // the keys of an inline table included.
        let value = AsWritten::of_text(&format!("v = {}", raw.trim()), "");
        for (k, w) in value.by_key {
            let Some(rest) = k.strip_prefix('v') else {
                continue;
            };
            if rest.is_empty() || rest.starts_with(['.', '[']) {
                self.by_key
                    .insert(format!("{key}{rest}"), Written { at: None, ..w });
            }
        }
    }

    /// Takes in one `--unset KEY` that [`apply_unset`] applied.
    pub fn note_unset(&mut self, key: &str) {
        if let Some(key) = Self::full_key(key) {
            self.forget(&key);
        }
    }

    /// A `--set` or `--unset` key named as [`GivenValues`] names keys.
    fn full_key(key: &str) -> Option<String> {
        let steps = key_steps(key.trim(), key).ok()?;
        Some(
            steps
                .iter()
                .map(|s| match s.index {
                    Some(i) => format!("{}[{i}]", shown_key(s.name)),
                    None => shown_key(s.name),
                })
                .collect::<Vec<_>>()
                .join("."),
        )
    }

    /// Drops `key` and every key under it.
    fn forget(&mut self, key: &str) {
        self.by_key.retain(|k, _| {
            k != key && !k.starts_with(&format!("{key}.")) && !k.starts_with(&format!("{key}["))
        });
    }

    /// A refusal of a key, with the key's value as written in place of its reprint and, for a
    /// value from a file, the file and line that set it (for a section, its header's); used on
    /// a `--set` that the file's value refuses, too.
    pub fn explain(&self, e: ConfigError) -> ConfigError {
        let ConfigError::Key { key, mut message } = e else {
            return e;
        };
        if let Some(w) = self.by_key.get(&key) {
            if w.reprint != w.text {
                message = replace_token(&message, &w.reprint, &w.text);
            }
            if let Some(at) = &w.at {
                message = format!("{message} (set at {at})");
            }
        }
        ConfigError::Key { key, message }
    }
}

/// `message` with each `from` that stands alone (not inside a longer number or word) replaced by
/// `to`; `from` cut as [`excerpt`] cuts a long value is looked for too.
fn replace_token(message: &str, from: &str, to: &str) -> String {
    // A long value is quoted cut short, so its written text is too.
    let to = excerpt(to);
    let from = if message.contains(from) {
        from.to_string()
    } else {
        excerpt(from)
    };
    let word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || "_.+-".contains(c));
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(i) = rest.find(&from) {
        let end = i + from.len();
        let alone = !word(rest[..i].chars().next_back())
            && !rest[end..]
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        out.push_str(&rest[..i]);
        out.push_str(if alone { &to } else { &from });
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// The refusal of a list where the config takes one section (a file's `[[workload]]`).
fn one_section_not_a_list(name: &str) -> String {
    format!(
        "is a list of sections ([[{name}]]), but the config takes one [{name}] section: write \
         its header as [{name}], once"
    )
}

/// Takes typed keys out of one section and refuses whatever is left.
pub struct Section {
    prefix: String,
    table: Table,
    /// Every key the parser asked for, set or not: the section's own keys under this config,
    /// among which a key left over (a misspelt one) finds the one it was meant to be.
    asked: std::cell::RefCell<Vec<String>>,
}

impl Section {
    /// The section `name` of `root` (absent = empty).
    pub fn take(root: &mut Table, name: &str) -> Result<Section, ConfigError> {
        let table = match root.remove(name) {
            None => Table::new(),
            Some(Value::Table(t)) => t,
            Some(Value::Array(a)) if a.iter().all(Value::is_table) => {
                return Err(key_err(name, one_section_not_a_list(name)))
            }
            Some(_) => {
                return Err(key_err(
                    name,
                    format!("must be a section ([{name}]), not a value"),
                ))
            }
        };
        Ok(Section::from_parts(name.to_string(), table))
    }

    fn path(&self, key: &str) -> String {
        format!("{}.{key}", self.prefix)
    }

    /// Whether the section sets `key`.
    pub fn has(&self, key: &str) -> bool {
        self.asked.borrow_mut().push(key.to_string());
        self.table.contains_key(key)
    }

    /// A section over `table`, whose keys are reported under `prefix` (an entry of an array of
    /// tables, such as `device.tiers[1]`).
    pub(crate) fn from_parts(prefix: String, table: Table) -> Section {
        Section {
            prefix,
            table,
            asked: Default::default(),
        }
    }

    pub(crate) fn raw(&mut self, key: &str) -> Option<Value> {
        self.asked.get_mut().push(key.to_string());
        self.table.remove(key)
    }

    /// A key that names a file, `what` saying which ("a trace file"); `None` when absent. A
    /// relative path is taken from `base_dir`, the config file's directory. An empty one names no
    /// file: refused here, naming the key, where it would otherwise reach the file system as the
    /// current directory, or the config file's own. A directory is refused here too, naming the
    /// key and saying what to give.
    pub(crate) fn file_path(
        &mut self,
        key: &str,
        what: &str,
        base_dir: Option<&Path>,
    ) -> Result<Option<PathBuf>, ConfigError> {
        debug_assert!(
            PATH_KEYS.contains(&self.path(key).as_str()),
            "{} reads a path: add it to PATH_KEYS, so that --set takes it as written",
            self.path(key)
        );
        match self.raw(key) {
            None => Ok(None),
            Some(Value::String(s)) if s.is_empty() => Err(key_err(
                &self.path(key),
                format!("is empty; give the path of {what}"),
            )),
            Some(Value::String(s)) => {
                let p = PathBuf::from(s);
                let p = match base_dir {
                    Some(b) if p.is_relative() => b.join(p),
                    _ => p,
                };
                // Opened later, a directory is refused in the system's words ("Is a directory"),
                // which name neither the key nor what it takes. A path that is not there yet is
                // left to the reader, which says why it cannot be read.
                if p.is_dir() {
                    return Err(key_err(
                        &self.path(key),
                        format!(
                            "`{}` is a directory; give the path of {what}",
                            excerpt(&p.display().to_string())
                        ),
                    ));
                }
                Ok(Some(p))
            }
            // Only a file can say this: a `--set` of a path key takes its text as written.
            Some(v @ (Value::Integer(_) | Value::Float(_) | Value::Boolean(_))) => Err(key_err(
                &self.path(key),
                format!(
                    "expected the path of {what}, got {shown}, which TOML reads as a {kind}; a \
                     path is a string, so quote it: {key} = \"{shown}\"",
                    shown = given_text(&v),
                    kind = if v.is_bool() { "boolean" } else { "number" },
                ),
            )),
            Some(v) => Err(key_err(
                &self.path(key),
                format!(
                    "expected the path of {what}, got {shown}",
                    shown = excerpt(&v.to_string())
                ),
            )),
        }
    }

    /// A string key.
    pub fn string(&mut self, key: &str, default: &str) -> Result<String, ConfigError> {
        match self.raw(key) {
            None => Ok(default.to_string()),
            Some(Value::String(s)) => Ok(s),
            Some(v) => Err(key_err(
                &self.path(key),
                format!(
                    "expected a string, got {shown}",
                    shown = excerpt(&v.to_string())
                ),
            )),
        }
    }

    /// One of a fixed set of names.
    pub fn choice<T: Copy>(
        &mut self,
        key: &str,
        default: T,
        options: &[(&str, T)],
    ) -> Result<T, ConfigError> {
        self.choice_noting(key, default, options, "")
    }

    /// One of a fixed set of names, where a refusal also says `also`: the values of the key that
    /// another part of the config reads (a tier stack's kinds, which send the whole config to
    /// [`crate::tiered::config`] before this section is read), so that the list is complete.
    pub fn choice_noting<T: Copy>(
        &mut self,
        key: &str,
        default: T,
        options: &[(&str, T)],
        also: &str,
    ) -> Result<T, ConfigError> {
        match self.raw(key) {
            None => Ok(default),
            Some(Value::String(s)) => options
                .iter()
                .find(|(n, _)| *n == s)
                .map(|(_, v)| *v)
                .ok_or_else(|| {
                    let names: Vec<&str> = options.iter().map(|(n, _)| *n).collect();
                    let also = if also.is_empty() {
                        String::new()
                    } else {
                        format!("; {also}")
                    };
                    key_err(
                        &self.path(key),
                        format!(
                            "`{}` is not one of: {}{also}",
                            excerpt(&s),
                            names.join(", ")
                        ),
                    )
                }),
            Some(v) => Err(key_err(
                &self.path(key),
                format!(
                    "expected a string, got {shown}",
                    shown = excerpt(&v.to_string())
                ),
            )),
        }
    }

    /// A whole number in `[min, max]`.
    pub fn int(&mut self, key: &str, default: u64, min: u64, max: u64) -> Result<u64, ConfigError> {
        let v = match self.raw(key) {
            None => return Ok(default),
            Some(Value::Integer(i)) => i,
            Some(Value::String(s)) => s.trim().parse::<i64>().map_err(|_| {
                // Digits beyond TOML's 64-bit integers arrive as text: a whole number, out of
                // range.
                let digits = s.trim().strip_prefix('-').unwrap_or(s.trim());
                let message = if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
                    format!("must be between {min} and {max}, got {}", excerpt(s.trim()))
                } else {
                    format!("expected a whole number, got `{}`", excerpt(&s))
                };
                key_err(&self.path(key), message)
            })?,
            Some(v) => {
                return Err(key_err(
                    &self.path(key),
                    format!(
                        "expected a whole number, got {shown}",
                        shown = excerpt(&v.to_string())
                    ),
                ))
            }
        };
        if v < min as i64 || (v as u64) > max {
            return Err(key_err(
                &self.path(key),
                format!(
                    "must be between {min} and {max}, got {shown}",
                    shown = excerpt(&v.to_string())
                ),
            ));
        }
        Ok(v as u64)
    }

    /// An optional whole number.
    pub fn opt_int(&mut self, key: &str, min: u64, max: u64) -> Result<Option<u64>, ConfigError> {
        if !self.has(key) {
            return Ok(None);
        }
        self.int(key, 0, min, max).map(Some)
    }

    /// The value of `key` as the user wrote it, for a message about its range: a refusal that
    /// showed the converted value instead (`6GB` as `5859375KiB`) would not be recognised.
    pub(crate) fn given(&self, key: &str) -> Option<String> {
        self.table.get(key).map(given_text)
    }

    /// A size (`128KiB`, `10MB`, `4096`) in `[min, max]`.
    pub fn size(
        &mut self,
        key: &str,
        default: ByteLen,
        min: ByteLen,
        max: ByteLen,
    ) -> Result<ByteLen, ConfigError> {
        let given = self.given(key);
        let v = match self.raw(key) {
            None => return Ok(default),
            Some(Value::String(s)) => {
                parse_size(&s).map_err(|e| key_err(&self.path(key), e.to_string()))?
            }
            Some(Value::Integer(i)) if i >= 0 => ByteLen(i as u64),
            // `1e9` is a TOML float, not a whole number of bytes: say what to write instead.
            Some(Value::Float(f)) if f >= 0.0 && f.fract() == 0.0 && f < u64::MAX as f64 => {
                return Err(key_err(
                    &self.path(key),
                    format!(
                        "expected a size such as \"128KiB\" or 4096, got {}, a TOML float; \
                         write the whole number of bytes, {}, or a size with a unit in quotes",
                        Value::Float(f),
                        f as u64
                    ),
                ))
            }
            Some(v) => {
                return Err(key_err(
                    &self.path(key),
                    format!(
                        "expected a size such as \"128KiB\" or 4096, got {shown}",
                        shown = excerpt(&v.to_string())
                    ),
                ))
            }
        };
        if v < min || v > max {
            return Err(key_err(
                &self.path(key),
                format!(
                    "must be between {min} and {max}, got {}",
                    as_given(&given.unwrap_or_default(), v.rounded())
                ),
            ));
        }
        Ok(v)
    }

    /// The size of an optional cache: 0 turns it off; otherwise it must hold at least one page.
    pub fn cache_size(&mut self, key: &str) -> Result<ByteLen, ConfigError> {
        let given = self.given(key);
        let v = self.size(key, ByteLen(0), ByteLen(0), MAX_SIZE)?;
        if v.0 > 0 && v.0 < foresight_policy::PAGE_BYTES {
            return Err(key_err(
                &self.path(key),
                format!(
                    "a cache holds whole pages: give 0 (no cache) or at least {}, got {}",
                    ByteLen(foresight_policy::PAGE_BYTES),
                    as_given(&given.unwrap_or_default(), v.rounded())
                ),
            ));
        }
        Ok(v)
    }

    /// A duration (`250us`, `1.92ms`, `60s`).
    pub fn duration(&mut self, key: &str, default: Duration) -> Result<Duration, ConfigError> {
        self.opt_duration(key).map(|d| d.unwrap_or(default))
    }

    /// An optional size.
    pub fn opt_int_or_size(&mut self, key: &str) -> Result<Option<ByteLen>, ConfigError> {
        self.opt_size(key, ByteLen(0), MAX_SIZE)
    }

    /// An optional size in `[min, max]`.
    pub fn opt_size(
        &mut self,
        key: &str,
        min: ByteLen,
        max: ByteLen,
    ) -> Result<Option<ByteLen>, ConfigError> {
        if !self.has(key) {
            return Ok(None);
        }
        self.size(key, ByteLen(0), min, max).map(Some)
    }

    /// An optional duration.
    pub fn opt_duration(&mut self, key: &str) -> Result<Option<Duration>, ConfigError> {
        match self.raw(key) {
            None => Ok(None),
            Some(Value::String(s)) => parse_duration(&s)
                .map(Some)
                .map_err(|e| key_err(&self.path(key), e.to_string())),
            Some(v) => Err(key_err(
                &self.path(key),
                format!(
                    "expected a duration such as \"250us\" or \"60s\", got {shown}",
                    shown = excerpt(&v.to_string())
                ),
            )),
        }
    }

    /// A boolean.
    pub fn boolean(&mut self, key: &str, default: bool) -> Result<bool, ConfigError> {
        match self.raw(key) {
            None => Ok(default),
            Some(Value::Boolean(b)) => Ok(b),
            Some(v) => Err(key_err(
                &self.path(key),
                format!(
                    "expected true or false, got {shown}",
                    shown = excerpt(&v.to_string())
                ),
            )),
        }
    }

    /// Fails on the first key nobody took.
    pub fn finish(self) -> Result<(), ConfigError> {
        let Some(k) = self.table.keys().next() else {
            return Ok(());
        };
        // A key of the other kind of config is documented: "unknown" would send the reader
        // looking for a typo. Each parser takes all of its own keys before this.
        let listed = |lists: &[(&str, &[&str])]| {
            lists
                .iter()
                .any(|(section, keys)| *section == self.prefix && keys.contains(&k.as_str()))
        };
        let host_policy_key = self.prefix == "policy"
            && POLICY_FAMILY_KEYS
                .iter()
                .any(|(_, keys)| keys.contains(&k.as_str()));
        let message = if listed(&TIER_STACK_KEYS) {
            "only a tier stack reads this key: set device.kind = \"tiered\" or \"constant\" (see \
             the tier-stack keys in `foresight sim --help`), or drop it"
                .to_string()
        } else if listed(&HOST_KEYS) || host_policy_key {
            "a tier stack does not read this key, and this config is one (device.kind is tiered \
             or constant, workload.kind is hinted, or the policy is an informed one); drop it"
                .to_string()
        } else {
            // The keys of this section: those the parser asked for, and those of the other
            // kinds of config (under `seqp`, the stream scheduler's are not asked for).
            let asked = self.asked.borrow();
            let other_kinds = TIER_STACK_KEYS
                .iter()
                .chain(&HOST_KEYS)
                .filter(|(section, _)| *section == self.prefix);
            let other_policies = POLICY_FAMILY_KEYS
                .iter()
                .filter(|_| self.prefix == "policy");
            let known = asked.iter().map(String::as_str).chain(
                other_kinds
                    .chain(other_policies)
                    .flat_map(|(_, keys)| keys.iter().copied()),
            );
            unknown_key_message(
                k,
                known,
                &self.prefix,
                "see `foresight sim --help` for the keys of each section",
            )
        };
        Err(key_err(
            &format!("{}.{}", self.prefix, shown_key(k)),
            message,
        ))
    }
}

const MAX_SIZE: ByteLen = ByteLen(1 << 50);
/// The largest drive cache segment or drive read-ahead: far beyond any drive's whole cache, and
/// well inside the model's 32-bit sector counts, which a larger size would wrap around.
const MAX_DRIVE_CACHE: ByteLen = ByteLen(1 << 30);

/// Most files a `webserver` workload may have; each needs its own page keys.
const MAX_FILES: u64 = 10_000_000;
const _: () = assert!(MAX_FILES < crate::host::pagecache::MAX_FILES);

/// A `webserver` workload's defaults for the keys the user leaves out.
#[derive(Clone, Copy)]
struct WebserverDefaults {
    threads: u32,
    /// The file set's bytes: `files` defaults to this over the mean file size.
    set_bytes: ByteLen,
    file_size: ByteLen,
    request: ByteLen,
    duration: Duration,
}

/// Paper 000's FileBench web server (000_a596543dd26dac72.txt, Fig. 10 caption and section 5.4):
/// 32 threads, 4 KiB reads, files of 4 MB mean, as many as make an 8 GB set (2048 of the
/// default size). A set of 8 GiB fits the default wd800jd's 74.5 GiB whatever file size is
/// given (1000 files of the other kinds' 128 MiB would need 128 GiB), and every other preset but
/// cheetah-4lp (4.2 GiB), where a `files` left out is cut to as many as fit (`Sim::new`). A web
/// server serves until stopped, so the run stops at a set time: one minute, as
/// `reproduce striping` runs Fig. 10 (the paper averages 10 snapshots).
const WEBSERVER_DEFAULTS: WebserverDefaults = WebserverDefaults {
    threads: 32,
    set_bytes: ByteLen::gib(8),
    file_size: ByteLen::mib(4),
    request: ByteLen::kib(4),
    duration: Duration::from_secs(60),
};

impl WebserverDefaults {
    /// The default file count for files of mean size `file_size`: the set's bytes over it, at
    /// least one file and at most `MAX_FILES` (a size of 0 is refused later, by its own key).
    fn files_of(&self, file_size: ByteLen) -> u64 {
        (self.set_bytes.0 / file_size.0.max(1)).clamp(1, MAX_FILES)
    }
}

/// What a refused `device.kind` adds to the host's kinds: the tier stack's, which
/// [`crate::tiered::config`] reads.
const TIER_DEVICE_KINDS: &str =
    "a tier stack (informed prefetching, paper 002) takes \"tiered\" or \"constant\"";
/// What a refused `workload.kind` adds to the host's kinds: the tier stack's.
const TIER_WORKLOAD_KIND: &str = "a tier stack (informed prefetching, paper 002) takes \"hinted\"";

/// Every workload kind by its config name.
const WORKLOAD_KINDS: [(&str, WorkloadKind); 7] = [
    ("streams", WorkloadKind::Streams),
    ("random", WorkloadKind::Random),
    ("trace", WorkloadKind::Trace),
    ("webserver", WorkloadKind::Webserver),
    ("scan", WorkloadKind::Scan),
    ("tiles", WorkloadKind::Tiles),
    ("gaps", WorkloadKind::Gaps),
];

/// Keys every kind but `trace` reads: its clients and their files.
const CLIENT_KEYS: [&str; 4] = ["streams", "file_size", "think", "duration"];
/// Keys of the simulator's file system, for the kinds that place files of their own.
const PLACEMENT_KEYS: [&str; 3] = ["placement", "extent", "metadata"];

/// Whether a `kind` workload reads the `[workload]` key `key` (besides `kind`). A key that only
/// other kinds read is refused, so a setting that would change nothing (`requests` on a `streams`
/// workload, which reads each file whole) never passes silently.
fn workload_reads(kind: WorkloadKind, key: &str) -> bool {
    let client = CLIENT_KEYS.contains(&key);
    let placed = client || PLACEMENT_KEYS.contains(&key);
    match kind {
        WorkloadKind::Streams | WorkloadKind::Scan => placed || key == "request",
        // One contiguous file, shared by the clients.
        WorkloadKind::Random => client || matches!(key, "request" | "requests"),
        WorkloadKind::Webserver => {
            placed || matches!(key, "request" | "requests" | "files" | "pick")
        }
        // A tile row segment is the read: `tile` takes the place of `request`.
        WorkloadKind::Tiles => placed || matches!(key, "tile" | "tiles_across"),
        WorkloadKind::Gaps => placed || matches!(key, "request" | "gap" | "gap_dist"),
        // The trace gives the requests, their sizes and their times.
        WorkloadKind::Trace => {
            matches!(
                key,
                "trace" | "format" | "trace_records_max" | "closed" | "duration"
            )
        }
    }
}

/// Refuses a `[workload]` key that `kind` does not read but another kind does (unknown keys are
/// left to `Section::finish`). `extent` passes with any placement, so that one set of keys can
/// sweep the placements.
fn refuse_keys_of_other_kinds(kind: WorkloadKind, w: &Section) -> Result<(), ConfigError> {
    let name = WORKLOAD_KINDS
        .iter()
        .find(|(_, k)| *k == kind)
        .map(|(n, _)| *n)
        .expect("every kind is listed");
    for key in w.table.keys().filter(|k| !workload_reads(kind, k)) {
        let takers: Vec<&str> = WORKLOAD_KINDS
            .iter()
            .filter(|(_, k)| workload_reads(*k, key))
            .map(|(n, _)| *n)
            .collect();
        if !takers.is_empty() {
            return Err(key_err(
                &format!("workload.{key}"),
                format!(
                    "a `{name}` workload does not read this key (it applies to: {}); drop it \
                     (from a config file: --unset workload.{key})",
                    takers.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// Keys only a tier stack (paper 002's hinted workloads) reads, by section.
const TIER_STACK_KEYS: [(&str, &[&str]); 3] = [
    (
        "device",
        &[
            "t_upper",
            "t_lower",
            "t_lower_to_upper",
            "upper_capacity",
            "memory",
            "tiers",
            "link",
        ],
    ),
    ("workload", &["reads", "block", "consume", "order"]),
    (
        "policy",
        &["x_cache", "max_bw", "pnext_groups", "lru_hit_gain"],
    ),
];

/// Keys only the host simulator reads, by section (its `[policy]` keys are
/// `POLICY_FAMILY_KEYS`'; a tier stack refuses `[host]` as a whole).
const HOST_KEYS: [(&str, &[&str]); 2] = [
    (
        "device",
        &[
            "preset",
            "disksim",
            "disks",
            "strip",
            "queue_depth",
            "queue_policy",
            "controller_mib_s",
            "cache_segments",
            "segment_size",
            "drive_readahead",
            "drive_readahead_min",
            "almost_read_hits",
            "controller_cache",
            "controller_readahead",
        ],
    ),
    (
        "workload",
        &[
            "streams",
            "file_size",
            "request",
            "think",
            "duration",
            "requests",
            "placement",
            "extent",
            "metadata",
            "files",
            "pick",
            "format",
            "trace_records_max",
            "closed",
            "tile",
            "tiles_across",
            "gap",
            "gap_dist",
        ],
    ),
];

/// The `[policy]` keys that one family of policies alone reads, and which names read them.
const POLICY_FAMILY_KEYS: [(&str, &[&str]); 4] = [
    (
        "seqp, saseqp, msp+seqp, msp+saseqp",
        &["readahead_max", "readahead_rule"],
    ),
    (
        "streams",
        &[
            "readahead",
            "per_turn",
            "memory",
            "dispatch",
            "timeout",
            "offset",
            "threshold",
            "turn_order",
        ],
    ),
    ("msp+seqp, msp+saseqp", &["sc_max", "sc_thresh", "sps_max"]),
    ("directed", &["directed_memory", "infill_max", "contention"]),
];

/// Whether the policy `name` reads `[policy]` key `key` (every policy reads the keys no family
/// claims).
pub(crate) fn policy_reads_key(name: &str, key: &str) -> bool {
    POLICY_FAMILY_KEYS
        .iter()
        .filter(|(_, keys)| keys.contains(&key))
        .all(|(readers, _)| readers.split(", ").any(|r| r == name))
}

/// Refuses a `[policy]` key that only other policies read, as `refuse_keys_of_other_kinds` does
/// for `[workload]`: `policy.readahead = "1MiB"` under `seqp` (whose window is `readahead_max`)
/// would otherwise change nothing and say nothing.
fn refuse_keys_of_other_policies(name: &str, given: &[String]) -> Result<(), ConfigError> {
    for (readers, keys) in POLICY_FAMILY_KEYS {
        if let Some(key) = given
            .iter()
            .find(|k| keys.contains(&k.as_str()) && !policy_reads_key(name, k))
        {
            return Err(key_err(
                &format!("policy.{key}"),
                format!(
                    "the `{name}` policy does not read this key (it applies to: {readers}); \
                     drop it (from a config file: --unset policy.{key})"
                ),
            ));
        }
    }
    Ok(())
}

/// The `[policy]` keys that only a page-cache policy reads (`seqp`'s and `saseqp`'s window,
/// `directed`'s memory and infill), which a trace replay never runs.
const PAGE_CACHE_POLICY_KEYS: [&str; 5] = [
    "readahead_max",
    "readahead_rule",
    "directed_memory",
    "infill_max",
    "contention",
];

/// Refuses, for a trace replay, a policy or a `[policy]` key that would not run. A trace's block
/// requests enter below the page cache (at the volume, or the block-level cache), so only a
/// block-level policy sees them: the stream scheduler (`streams`), or MSP in the RAID cache
/// (`msp+seqp`, `msp+saseqp`, whose page-cache half does not run). Without a name the replay's
/// policy is `none`; `seqp` there (the default of other workloads) would be named in the report
/// and change nothing.
fn refuse_page_cache_policy_of_a_trace(name: &str, given: &[String]) -> Result<(), ConfigError> {
    if !(name == "none" || name == "streams" || name.starts_with("msp+")) {
        return Err(key_err(
            "policy.name",
            format!(
                "`{name}` prefetches into the page cache, which a trace's block requests bypass, \
                 so it would not run; a trace replay runs none (its default), streams (the \
                 stream scheduler, below the page cache; a record's disk number is its stream) \
                 or msp+seqp / msp+saseqp (MSP in the RAID cache; the part after + does not \
                 run); drop it (from a config file: --unset policy.name)"
            ),
        ));
    }
    if let Some(key) = given
        .iter()
        .find(|k| PAGE_CACHE_POLICY_KEYS.contains(&k.as_str()))
    {
        return Err(key_err(
            &format!("policy.{key}"),
            format!(
                "a trace workload does not read this key: it sets a page-cache policy, and a \
                 trace's block requests enter below the page cache; drop it (from a config \
                 file: --unset policy.{key})"
            ),
        ));
    }
    Ok(())
}

impl SimConfig {
    /// The policy that acts in a run, as its report names it: a trace replay's requests bypass
    /// the page cache, so under `msp+X` only MSP, in the RAID cache, sees them.
    pub fn policy_that_runs(&self) -> &str {
        match self.workload.kind {
            WorkloadKind::Trace if self.policy.name.starts_with("msp+") => "msp",
            _ => &self.policy.name,
        }
    }

    /// Builds a config from a TOML table (after `--set`s). `base_dir` resolves relative trace paths.
    pub fn from_table(root: Table, base_dir: Option<&Path>) -> Result<SimConfig, ConfigError> {
        Self::from_table_as_written(root, base_dir, &AsWritten::default())
    }

    /// [`SimConfig::from_table`], whose refusals quote each value as `written` (`1e9`, not TOML's
    /// `1000000000.0`) and name the file and line that set it.
    pub fn from_table_as_written(
        root: Table,
        base_dir: Option<&Path>,
        written: &AsWritten,
    ) -> Result<SimConfig, ConfigError> {
        Self::build(root, base_dir, written).map_err(|e| written.explain(e))
    }

    fn build(
        mut root: Table,
        base_dir: Option<&Path>,
        written: &AsWritten,
    ) -> Result<SimConfig, ConfigError> {
        if crate::tiered::config::wants_tiers(&root) {
            return crate::tiered::config::parse(root, base_dir);
        }
        crate::dfs::config::refuse_unread_keys(&root)?;
        // For the checks that compare two keys, after both were read.
        let given = GivenValues::of(&root).quoting(written);
        // A [dfs] run checks its own [workload] keys (above).
        let dfs_run = root.contains_key("dfs");
        let seed = take_seed(&mut root)?;

        let mut d = Section::take(&mut root, "device")?;
        let kind = d.choice_noting(
            "kind",
            DeviceKind::Hdd,
            &[
                ("hdd", DeviceKind::Hdd),
                ("ssd", DeviceKind::Ssd),
                ("raid0", DeviceKind::Raid0),
                ("jbod", DeviceKind::Jbod),
            ],
            TIER_DEVICE_KINDS,
        )?;
        let default_preset = match kind {
            DeviceKind::Ssd => "ssd-850evo",
            _ => "wd800jd",
        };
        let preset_given = d.has("preset");
        let disksim = d.file_path(
            "disksim",
            "a DiskSim .diskspecs file (device.disksim = \"X.diskspecs\")",
            base_dir,
        )?;
        if disksim.is_some() && preset_given {
            return Err(key_err(
                "device.disksim",
                "`device.preset` and `device.disksim` are mutually exclusive: give a preset name \
                 or a DiskSim .diskspecs file, not both",
            ));
        }
        if disksim.is_some() && kind == DeviceKind::Ssd {
            return Err(key_err(
                "device.disksim",
                "a DiskSim drive is a disk: use device.kind = \"hdd\" or \"raid0\"",
            ));
        }
        // A key the kind does not read would be dropped without a word, as a policy's would.
        let kind_name = match kind {
            DeviceKind::Hdd => "hdd",
            DeviceKind::Ssd => "ssd",
            DeviceKind::Raid0 => "raid0",
            DeviceKind::Jbod => "jbod",
        };
        if d.has("disks") && !matches!(kind, DeviceKind::Raid0 | DeviceKind::Jbod) {
            return Err(key_err(
                "device.disks",
                format!(
                    "a `{kind_name}` device is one disk: set device.kind = \"raid0\" or \"jbod\" \
                     for an array, or drop it (from a config file: --unset device.disks)"
                ),
            ));
        }
        if d.has("strip") && kind != DeviceKind::Raid0 {
            return Err(key_err(
                "device.strip",
                format!(
                    "a `{kind_name}` device is not striped: set device.kind = \"raid0\", or drop \
                     it (from a config file: --unset device.strip)"
                ),
            ));
        }
        let device = DeviceConfig {
            kind,
            disksim,
            preset: d.string("preset", default_preset)?,
            disks: d.int("disks", 5, 1, 256)? as u32,
            strip: d.size("strip", ByteLen::kib(128), ByteLen(512), ByteLen::gib(1))?,
            queue_depth: d.opt_int("queue_depth", 1, 1024)?.map(|v| v as u32),
            queue_policy: if d.has("queue_policy") {
                Some(d.choice(
                    "queue_policy",
                    QueuePolicy::Fcfs,
                    &[
                        ("fcfs", QueuePolicy::Fcfs),
                        ("clook", QueuePolicy::CLook),
                        ("sptf", QueuePolicy::Sptf),
                    ],
                )?)
            } else {
                None
            },
            // At least 1 MiB/s: a tiny rate rounds to 0 bytes/s, which no controller moves data at,
            // and one far below any real controller's stretches a single transfer over years.
            controller_bytes_per_s: match d.raw("controller_mib_s") {
                None => None,
                Some(Value::Integer(i)) if (1..1_000_000_000).contains(&i) => {
                    Some((i as u64) << 20)
                }
                Some(Value::Float(f)) if (1.0..1e9).contains(&f) => {
                    Some((f * (1u64 << 20) as f64) as u64)
                }
                Some(v) => {
                    return Err(key_err(
                        "device.controller_mib_s",
                        format!(
                            "expected a number of MiB/s from 1 to below 1e9, got {shown}",
                            shown = excerpt(&v.to_string())
                        ),
                    ))
                }
            },
            cache_segments: d.opt_int("cache_segments", 1, 4096)?.map(|v| v as u32),
            segment_size: match d.opt_size("segment_size", ByteLen(0), MAX_DRIVE_CACHE)? {
                Some(b) if b.0 < 512 || !b.0.is_multiple_of(512) => {
                    return Err(not_whole_sectors("device.segment_size", &given, b, true))
                }
                other => other,
            },
            controller_cache: d.cache_size("controller_cache")?,
            controller_readahead: d.size(
                "controller_readahead",
                ByteLen(0),
                ByteLen(0),
                ByteLen::gib(1),
            )?,
            drive_readahead_min: match d.opt_size(
                "drive_readahead_min",
                ByteLen(0),
                MAX_DRIVE_CACHE,
            )? {
                Some(b) if !b.0.is_multiple_of(512) => {
                    return Err(not_whole_sectors(
                        "device.drive_readahead_min",
                        &given,
                        b,
                        false,
                    ))
                }
                other => other,
            },
            almost_read_hits: if d.has("almost_read_hits") {
                Some(d.choice(
                    "almost_read_hits",
                    AlmostReadHits::Ahead,
                    &[
                        ("none", AlmostReadHits::None),
                        ("head", AlmostReadHits::Head),
                        ("ahead", AlmostReadHits::Ahead),
                    ],
                )?)
            } else {
                None
            },
            drive_readahead: match d.opt_size("drive_readahead", ByteLen(0), MAX_DRIVE_CACHE)? {
                Some(b) if !b.0.is_multiple_of(512) => {
                    return Err(not_whole_sectors(
                        "device.drive_readahead",
                        &given,
                        b,
                        false,
                    ))
                }
                other => other,
            },
            given: given.only(&[
                "device.disks",
                "device.preset",
                "device.disksim",
                "device.cache_segments",
                "device.segment_size",
                "device.drive_readahead",
                "device.drive_readahead_min",
            ]),
        };
        if matches!(device.kind, DeviceKind::Ssd) {
            let hdd_only = [
                ("device.cache_segments", device.cache_segments.is_some()),
                ("device.segment_size", device.segment_size.is_some()),
                ("device.drive_readahead", device.drive_readahead.is_some()),
                (
                    "device.drive_readahead_min",
                    device.drive_readahead_min.is_some(),
                ),
                ("device.almost_read_hits", device.almost_read_hits.is_some()),
            ];
            if let Some((key, _)) = hdd_only.iter().find(|(_, set)| *set) {
                return Err(key_err(
                    key,
                    "drive cache settings apply to hard disks only; drop it for an ssd",
                ));
            }
            // The SSD model serves its queue in order over its channels: a disk's pick by
            // position would be ignored without a word.
            if device.queue_policy.is_some() {
                return Err(key_err(
                    "device.queue_policy",
                    "an ssd has no heads to position, so it has no pick by position (fcfs, \
                     clook or sptf are disks' queue policies); drop it for an ssd",
                ));
            }
        }
        if !device.strip.0.is_multiple_of(512) {
            return Err(not_whole_sectors(
                "device.strip",
                &given,
                device.strip,
                true,
            ));
        }
        d.finish()?;

        let mut h = Section::take(&mut root, "host")?;
        let host_keys: Vec<String> = h.table.keys().cloned().collect();
        // DESIGN.md's sketch names `cfq` among the host's schedulers; here the CFQ-like queue is
        // the [dfs] model's (ARCHITECTURE.md, departures), so the refusal says where it is.
        if h.table.get("scheduler").and_then(|v| v.as_str()) == Some("cfq") {
            return Err(key_err(
                "host.scheduler",
                "`cfq` is not a host scheduler (choose one of: noop, deadline, anticipatory); \
                 the CFQ-like queue is the [dfs] model's: set dfs.system (and dfs.slice, \
                 dfs.slice_idle)"
                    .to_string(),
            ));
        }
        let antic_given = h.given("antic_expire");
        let mut host = HostConfig {
            memory: h.size("memory", ByteLen::gib(1), ByteLen::mib(1), MAX_SIZE)?,
            scheduler: h.choice(
                "scheduler",
                Scheduler::Deadline,
                &[
                    ("noop", Scheduler::Noop),
                    ("deadline", Scheduler::Deadline),
                    ("anticipatory", Scheduler::Anticipatory),
                ],
            )?,
            max_request: h.size(
                "max_request",
                ByteLen::kib(512),
                ByteLen::kib(4),
                ByteLen::mib(64),
            )?,
            read_expire: h.duration("read_expire", Duration::from_millis(500))?,
            antic_expire: h.duration("antic_expire", Duration::from_millis(6))?,
            raid_cache: h.cache_size("raid_cache")?,
            nr_requests: h.int("nr_requests", 128, 1, NR_REQUESTS_MAX)? as u32,
            copy_bytes_per_s: copy_rate(&mut h)?,
        };
        if host.antic_expire > Duration::from_secs(1) {
            // A disk held idle longer than a second for one stream is a stalled disk, not
            // anticipation (Linux's default is 6 ms).
            return Err(key_err(
                "host.antic_expire",
                format!(
                    "must be at most 1s; Linux's default is 6ms; got {}",
                    as_given(&antic_given.unwrap_or_default(), host.antic_expire)
                ),
            ));
        }
        // A scheduler's key under a scheduler that does not read it would be dropped unread.
        let (scheduler_name, unread): (&str, &[&str]) = match host.scheduler {
            Scheduler::Noop => ("noop", &["read_expire", "antic_expire"]),
            Scheduler::Deadline => ("deadline", &["antic_expire"]),
            Scheduler::Anticipatory => ("anticipatory", &[]),
        };
        if let Some(key) = unread.iter().find(|k| host_keys.iter().any(|h| h == *k)) {
            let readers = if *key == "antic_expire" {
                "anticipatory"
            } else {
                "deadline, anticipatory"
            };
            return Err(key_err(
                &format!("host.{key}"),
                format!(
                    "the `{scheduler_name}` scheduler does not read this key (it applies to: \
                     {readers}); drop it (from a config file: --unset host.{key})"
                ),
            ));
        }
        if !host.max_request.0.is_multiple_of(4096) {
            return Err(key_err(
                "host.max_request",
                "must be a whole number of 4 KiB pages",
            ));
        }
        h.finish()?;

        // A trace's block requests enter below the page cache, so its policy is the block
        // level's alone: `none` unless one is named (see `refuse_page_cache_policy_of_a_trace`).
        let trace_run = !dfs_run
            && matches!(
                root.get("workload").and_then(|w| w.get("kind")),
                Some(Value::String(k)) if k == "trace"
            );
        let mut p = Section::take(&mut root, "policy")?;
        let policy_keys: Vec<String> = p.table.keys().cloned().collect();
        let defaults = PolicyConfig::default();
        let sd = defaults.streams;
        let policy = PolicyConfig {
            name: p.string("name", if trace_run { "none" } else { "seqp" })?,
            readahead_max: p.size(
                "readahead_max",
                ByteLen::kib(128),
                ByteLen(0),
                ByteLen::gib(1),
            )?,
            readahead_rule: p.choice(
                "readahead_rule",
                defaults.readahead_rule,
                &[
                    ("linux", WindowRule::Linux),
                    ("synchronous", WindowRule::Synchronous),
                ],
            )?,
            sc_max: p.int("sc_max", defaults.sc_max as u64, 1, 1 << 20)? as u32,
            sc_thresh: p.int("sc_thresh", defaults.sc_thresh as u64, 1, 1 << 20)? as u32,
            sps_max_stripes: p.int(
                "sps_max",
                defaults.sps_max_stripes as u64,
                1,
                u64::from(MspSettings::SPS_MAX_STRIPES_LIMIT),
            )? as u32,
            streams: foresight_policy::streams::StreamsConfig {
                dispatch: p.opt_int("dispatch", 1, 1 << 20)?.map(|d| d as u32),
                readahead_bytes: p
                    .size(
                        "readahead",
                        ByteLen(sd.readahead_bytes),
                        ByteLen(4096),
                        ByteLen::gib(1),
                    )?
                    .0,
                per_turn: p.int("per_turn", sd.per_turn as u64, 1, 1 << 20)? as u32,
                memory_bytes: p
                    .size("memory", ByteLen(sd.memory_bytes), ByteLen(4096), MAX_SIZE)?
                    .0,
                timeout: p.duration("timeout", sd.timeout)?,
                offset_blocks: p.int(
                    "offset",
                    sd.offset_blocks,
                    1,
                    foresight_policy::streams::classify::MAX_OFFSET_BLOCKS,
                )?,
                threshold: p.int("threshold", sd.threshold as u64, 1, 1000)? as u32,
                turn_order: p.choice(
                    "turn_order",
                    sd.turn_order,
                    &[
                        ("arrival", foresight_policy::streams::TurnOrder::Arrival),
                        ("position", foresight_policy::streams::TurnOrder::Position),
                    ],
                )?,
                // The block-level scheduler's reads stop short only at the volume's end: the
                // paper's count of streams.
                dispatch_limit: sd.dispatch_limit,
            },
            directed: foresight_policy::directed::DirectedConfig {
                memory_bytes: p
                    .size(
                        "directed_memory",
                        ByteLen(host.memory.0 / 8 * 7),
                        ByteLen(0),
                        MAX_SIZE,
                    )?
                    .0,
                infill_max: match p.raw("infill_max") {
                    None => foresight_policy::directed::Infill::Auto,
                    Some(Value::String(s)) if s.trim() == "auto" => {
                        foresight_policy::directed::Infill::Auto
                    }
                    Some(Value::String(s)) => foresight_policy::directed::Infill::Bytes(
                        parse_size(&s)
                            .map_err(|e| {
                                key_err("policy.infill_max", format!("{e}; or write \"auto\""))
                            })?
                            .0,
                    ),
                    Some(Value::Integer(i)) if i >= 0 => {
                        foresight_policy::directed::Infill::Bytes(i as u64)
                    }
                    Some(v) => {
                        return Err(key_err(
                            "policy.infill_max",
                            format!(
                                "expected a size such as \"1MiB\" or \"auto\", got {shown}",
                                shown = excerpt(&v.to_string())
                            ),
                        ))
                    }
                },
                contention: p.boolean("contention", true)?,
                ..foresight_policy::directed::DirectedConfig::default()
            },
            informed: foresight_policy::informed::InformedConfig::default(),
        };
        if policy.name == "aps" {
            // DESIGN.md lists `aps` among the policy names; it reads ahead across a network link,
            // which only the [dfs] model has, so it is chosen there.
            return Err(key_err(
                "policy.name",
                "`aps` runs in the clients of a [dfs] model, not in a host: set \
                 dfs.system = \"aps\" and leave policy.name out"
                    .to_string(),
            ));
        }
        if !foresight_policy::POLICY_NAMES.contains(&policy.name.as_str()) {
            return Err(key_err(
                "policy.name",
                format!(
                    "`{}` is not a policy; choose one of: {}",
                    excerpt(&policy.name),
                    foresight_policy::POLICY_NAMES.join(", ")
                ),
            ));
        }
        p.finish()?;
        if trace_run {
            refuse_page_cache_policy_of_a_trace(&policy.name, &policy_keys)?;
        }
        refuse_keys_of_other_policies(&policy.name, &policy_keys)?;
        // `msp+...` is chosen by its name alone, as in the engine and `foresight bench`: without
        // a size, its RAID cache is theirs.
        if policy.name.starts_with("msp+") && !host_keys.iter().any(|k| k == "raid_cache") {
            host.raid_cache = DEFAULT_MSP_RAID_CACHE;
        }
        // The policy's own checks state its settings in its terms (`M`, `sc_max`, bytes); the
        // keys they compare are quoted after them as the user wrote them.
        let as_written = |keys: &[(&str, String)]| -> String {
            let shown: Vec<String> = keys
                .iter()
                .map(|(key, as_read)| given.key(key, as_read))
                .collect();
            format!("; as written: {}", shown.join(", "))
        };
        if policy.name == "streams" {
            let st = &policy.streams;
            let mut keys = vec![
                ("policy.memory", ByteLen(st.memory_bytes).rounded()),
                ("policy.readahead", ByteLen(st.readahead_bytes).rounded()),
                ("policy.per_turn", st.per_turn.to_string()),
            ];
            if let Some(d) = st.dispatch {
                keys.push(("policy.dispatch", d.to_string()));
            }
            policy.streams.dispatch_set().map_err(|e| match e {
                foresight_policy::PolicyError::BadSetting { key, message } => {
                    // M, R, N and D are what the dispatch set's checks weigh; another key's
                    // refusal quotes that key alone (a timeout of 0.1ns is read as zero).
                    let shown = match key {
                        "memory" | "readahead" | "per_turn" | "dispatch" => as_written(&keys),
                        "timeout" => as_written(&[("policy.timeout", st.timeout.to_string())]),
                        _ => String::new(),
                    };
                    key_err(&format!("policy.{key}"), format!("{message}{shown}"))
                }
                other => key_err("policy", other.to_string()),
            })?;
        }
        if let Err(foresight_policy::PolicyError::BadSetting { key, message }) = policy.validate() {
            let keys = match key {
                "sc_thresh" => vec![
                    ("policy.sc_thresh", policy.sc_thresh.to_string()),
                    ("policy.sc_max", policy.sc_max.to_string()),
                ],
                "directed_memory" => vec![(
                    "policy.directed_memory",
                    ByteLen(policy.directed.memory_bytes).rounded(),
                )],
                _ => Vec::new(),
            };
            let shown = if keys.is_empty() {
                String::new()
            } else {
                as_written(&keys)
            };
            return Err(key_err(
                &format!("policy.{key}"),
                format!("{message}{shown}"),
            ));
        }

        let mut w = Section::take(&mut root, "workload")?;
        let kind = w.choice_noting(
            "kind",
            WorkloadKind::Streams,
            &WORKLOAD_KINDS,
            TIER_WORKLOAD_KIND,
        )?;
        if !dfs_run {
            refuse_keys_of_other_kinds(kind, &w)?;
        }
        let web = (kind == WorkloadKind::Webserver).then_some(WEBSERVER_DEFAULTS);
        let default_file = match kind {
            WorkloadKind::Random => ByteLen(0),
            WorkloadKind::Webserver => WEBSERVER_DEFAULTS.file_size,
            _ => ByteLen::mib(128),
        };
        let think_given = w.given("think");
        let streams = w.int("streams", web.map_or(1, |d| d.threads.into()), 1, 100_000)? as u32;
        let file_size = w.size("file_size", default_file, ByteLen(0), MAX_SIZE)?;
        let workload = WorkloadConfig {
            kind,
            streams,
            file_size,
            request: w.size(
                "request",
                web.map_or(ByteLen::kib(64), |d| d.request),
                ByteLen(512),
                ByteLen::mib(64),
            )?,
            think: w.duration("think", Duration::ZERO)?,
            duration: w.opt_duration("duration")?.or(web.map(|d| d.duration)),
            requests: w.int("requests", 1000, 1, 1 << 40)?,
            placement: {
                let default = if kind == WorkloadKind::Webserver {
                    "contiguous"
                } else {
                    "spread"
                };
                let extent = w.size("extent", ByteLen::mib(1), ByteLen(4096), ByteLen::gib(1))?;
                match w.string("placement", default)?.as_str() {
                    "spread" => Placement::Spread,
                    "shuffled" => Placement::Shuffled,
                    "contiguous" => Placement::Contiguous,
                    "aligned" => Placement::Aligned,
                    "fragmented" => Placement::Fragmented {
                        extent_bytes_mean: extent,
                    },
                    other => {
                        return Err(key_err(
                            "workload.placement",
                            format!(
                                "`{}` is not one of: {}",
                                excerpt(other),
                                Placement::NAMES.join(", ")
                            ),
                        ))
                    }
                }
            },
            files: w.int(
                "files",
                WEBSERVER_DEFAULTS.files_of(file_size),
                1,
                MAX_FILES,
            )? as u32,
            pick: w.choice(
                "pick",
                FilePick::Random,
                &[("random", FilePick::Random), ("rotor", FilePick::Rotor)],
            )?,
            metadata: w.boolean("metadata", false)?,
            trace: w.file_path("trace", "a trace file", base_dir)?,
            format: {
                let f = w.string("format", "disksim")?;
                f.parse::<TraceFormat>()
                    .map_err(|e| key_err("workload.format", e.to_string()))?
            },
            // Was the most records a trace loaded whole into memory could hold; a replay now
            // streams, so a config that set it still reads, as a cap.
            trace_records_max: w.int("trace_records_max", 0, 0, i64::MAX as u64)?,
            closed: w.boolean("closed", false)?,
            tile: w.size("tile", ByteLen::kib(8), ByteLen(512), ByteLen::mib(64))?,
            tiles_across: w.int("tiles_across", 64, 1, 1 << 20)?,
            gap: w.size("gap", ByteLen::kib(64), ByteLen(0), ByteLen::gib(64))?,
            gap_dist: w.choice(
                "gap_dist",
                GapDist::Fixed,
                &[
                    ("fixed", GapDist::Fixed),
                    ("exponential", GapDist::Exponential),
                ],
            )?,
            given: given.only(&[
                "workload.streams",
                "workload.files",
                "workload.file_size",
                "workload.request",
                "workload.tile",
                "workload.gap",
            ]),
        };
        w.finish()?;
        // A random workload's file of 0 is the whole volume; one given smaller than a request
        // holds no request to pick (the volume's bound is checked where the volume is built).
        let random_file_given = workload.kind == WorkloadKind::Random && workload.file_size.0 > 0;
        if (matches!(workload.kind, WorkloadKind::Scan | WorkloadKind::Gaps) || random_file_given)
            && workload.file_size < workload.request
        {
            return Err(key_err(
                "workload.file_size",
                format!(
                    "{} holds no whole request of {}; make the file larger or the request smaller",
                    given.value("workload.file_size", workload.file_size.rounded()),
                    given.key("workload.request", workload.request.rounded()),
                ),
            ));
        }
        if workload.kind == WorkloadKind::Gaps && workload.gap_dist == GapDist::Fixed {
            // Reads start every `request + gap` bytes, the gap rounded down to whole pages. A gap
            // that leaves room for one read where the file holds two without it studies nothing:
            // the run ends after that read. A file under two requests holds one whatever the gap.
            // Exponential gaps are draws: a mean above the room still gives two reads or more
            // about a third of the time and a mean below it may give one, so the mean decides
            // nothing here; the run warns of each client whose draws left it one read instead.
            let page = foresight_policy::PAGE_BYTES;
            let (request, size) = (workload.request.0, workload.file_size.0);
            let gap = workload.gap.0 / page * page;
            if size >= 2 * request && size - 2 * request < gap {
                return Err(key_err(
                    "workload.gap",
                    format!(
                        "{} (in whole 4 KiB pages: {}) leaves room for only one read of {} in {} \
                         (reads start every request + gap bytes); give a gap of at most {} or a \
                         file of at least {}",
                        given.value("workload.gap", workload.gap.rounded()),
                        ByteLen(gap),
                        given.key("workload.request", workload.request.rounded()),
                        given.key("workload.file_size", workload.file_size.rounded()),
                        ByteLen((size - 2 * request) / page * page),
                        ByteLen(2 * request + gap),
                    ),
                ));
            }
        }
        if workload.kind == WorkloadKind::Tiles
            && workload.file_size.0 < workload.tile.0 * workload.tiles_across
        {
            return Err(key_err(
                "workload.file_size",
                format!(
                    "{} holds no image row of {} x {} ({}); make the file larger or the row \
                     smaller",
                    given.value("workload.file_size", workload.file_size.rounded()),
                    given.key("workload.tile", workload.tile.rounded()),
                    given.key("workload.tiles_across", workload.tiles_across),
                    ByteLen(workload.tile.0 * workload.tiles_across).rounded(),
                ),
            ));
        }
        if workload.think > Duration::from_secs(3600) {
            return Err(key_err(
                "workload.think",
                format!(
                    "must be at most 3600s: a client that pauses longer is not a storage \
                     workload; got {}",
                    as_given(&think_given.unwrap_or_default(), workload.think)
                ),
            ));
        }
        if device.kind == DeviceKind::Jbod && workload.kind == WorkloadKind::Streams {
            // The JBOD places stream files itself: round-robin over members, spread on each.
            if workload.placement != Placement::Spread {
                return Err(key_err(
                    "workload.placement",
                    "a jbod places stream files round-robin over its disks, spread on each; drop this key or give \"spread\"",
                ));
            }
            if workload.metadata {
                return Err(key_err(
                    "workload.metadata",
                    "a jbod's stream files carry no metadata blocks; drop this key",
                ));
            }
        }
        if workload.kind == WorkloadKind::Webserver && workload.file_size.0 == 0 {
            return Err(key_err(
                "workload.file_size",
                "a webserver workload's files have this mean size; give a positive size, e.g. \"64KiB\"",
            ));
        }
        if device.controller_cache.0 > 0
            && (host.raid_cache.0 > 0
                || policy.name == "streams"
                || policy.name.starts_with("msp+"))
        {
            return Err(key_err(
                "device.controller_cache",
                "a controller cache cannot be combined with a RAID cache or the stream scheduler yet; drop one of them",
            ));
        }
        if device.controller_readahead.0 > 0 && device.controller_cache.0 == 0 {
            return Err(key_err(
                "device.controller_readahead",
                "needs a device.controller_cache to read ahead into",
            ));
        }
        // The controller reads the host's read that missed and its read-ahead as one piece, never
        // shortened (see `CacheLayer::with_whole_fetches`): both must fit in its cache, or every
        // read-ahead would be cut at the cache's size, and read one at a time. The host's largest
        // read is the policy's to say (its largest window or piece, or the application's read).
        let (host_read_bytes, host_read) = match workload.kind {
            // A trace's requests come from the file and bypass the page cache; a page is the
            // least one reads.
            WorkloadKind::Trace => (foresight_policy::PAGE_BYTES, "one page".to_string()),
            _ => {
                let stripe_bytes = (device.kind == DeviceKind::Raid0)
                    .then(|| u64::from(device.disks) * device.strip.0);
                let app = workload.read_bytes();
                let bytes =
                    policy.largest_read_bytes(app.0, workload.reads_page_aligned(), stripe_bytes);
                let request_key = workload.read_key();
                let mut why = format!(
                    "the largest read policy `{}` sends down with {}",
                    policy.name,
                    given.key(request_key, app.rounded())
                );
                if policy_reads_key(&policy.name, "readahead_max") {
                    why += &format!(
                        " and {}",
                        given.key("policy.readahead_max", policy.readahead_max.rounded())
                    );
                }
                if !workload.reads_page_aligned() {
                    why += ", its reads starting off page boundaries";
                }
                (bytes, format!("{} ({why})", ByteLen(bytes)))
            }
        };
        if device.controller_cache.0 > 0 && host_read_bytes > device.controller_cache.0 {
            return Err(key_err(
                "device.controller_cache",
                format!(
                    "{} is less than the host's largest read, {host_read}, which the controller \
                     reads whole; give at least {}",
                    given.value("device.controller_cache", device.controller_cache.rounded()),
                    ByteLen(host_read_bytes),
                ),
            ));
        }
        if device.controller_cache.0 > 0
            && device
                .controller_readahead
                .0
                .saturating_add(host_read_bytes)
                > device.controller_cache.0
        {
            return Err(key_err(
                "device.controller_readahead",
                format!(
                    "{} of read-ahead beyond the host's largest read, {host_read}, is more than \
                     {} holds, and the controller never shortens a read-ahead; give \
                     device.controller_readahead at most {}, a larger device.controller_cache or \
                     smaller host reads",
                    given.value(
                        "device.controller_readahead",
                        device.controller_readahead.rounded()
                    ),
                    given.key("device.controller_cache", device.controller_cache.rounded()),
                    writable_at_most(ByteLen(device.controller_cache.0 - host_read_bytes)),
                ),
            ));
        }
        // The scheduler's block-level cache is its own M; the RAID driver's size, even "0", is
        // never read. Refused when given at all, as the other keys only some runs read are.
        if host_keys.iter().any(|k| k == "raid_cache") && policy.name == "streams" {
            return Err(key_err(
                "host.raid_cache",
                "the stream scheduler keeps its buffers in its own memory, policy.memory (M), \
                 not in the RAID driver's cache, which it does not read; drop it (from a config \
                 file: --unset host.raid_cache)",
            ));
        }
        if host.raid_cache.0 == 0 && policy.name.starts_with("msp+") {
            return Err(key_err(
                "host.raid_cache",
                format!(
                    "`{}` prefetches into the RAID driver's cache, which 0 leaves out; give it a \
                     size, or leave the key out for {DEFAULT_MSP_RAID_CACHE} (paper 000)",
                    policy.name
                ),
            ));
        }
        if workload.kind == WorkloadKind::Streams && workload.file_size < workload.request {
            return Err(key_err(
                "workload.file_size",
                format!(
                    "{} is smaller than one request, {}; make the file larger or the request \
                     smaller",
                    given.value("workload.file_size", workload.file_size.rounded()),
                    given.key("workload.request", workload.request.rounded()),
                ),
            ));
        }
        if workload.kind == WorkloadKind::Trace && workload.trace.is_none() {
            return Err(key_err(
                "workload.trace",
                "a trace workload needs the path of a trace file",
            ));
        }
        if workload.kind == WorkloadKind::Trace && given.has("host.copy_rate") {
            // A block trace's requests enter below the page cache: no read copies them into an
            // application's buffer, so the rate would be taken and never used.
            return Err(key_err(
                "host.copy_rate",
                "a trace workload does not read this key: its block requests enter below the \
                 page cache and are never copied into an application's buffer; drop it (from a \
                 config file: --unset host.copy_rate)",
            ));
        }
        if workload.duration == Some(Duration::ZERO) {
            return Err(key_err("workload.duration", "must be longer than zero"));
        }
        if policy_reads_key(&policy.name, "readahead_max") && policy.readahead_max > host.memory {
            // A window is read into the page cache whole: one larger than the cache could never
            // be held, and the policy would be planning with memory the host does not have.
            return Err(key_err(
                "policy.readahead_max",
                format!(
                    "{} is larger than the page cache ({}); a window must fit in it",
                    given.value("policy.readahead_max", policy.readahead_max.rounded()),
                    given.key("host.memory", host.memory.rounded()),
                ),
            ));
        }
        if policy_reads_key(&policy.name, "directed_memory")
            && policy.directed.memory_bytes > host.memory.0
        {
            // A directed stream's window (its hinted data and the infill between) is read into
            // the page cache; more than the cache holds is memory the host does not have.
            return Err(key_err(
                "policy.directed_memory",
                format!(
                    "{} is larger than the page cache ({}); a stream's window must fit in it",
                    given.value(
                        "policy.directed_memory",
                        ByteLen(policy.directed.memory_bytes).rounded()
                    ),
                    given.key("host.memory", host.memory.rounded()),
                ),
            ));
        }
        // A tiles workload reads `tile` bytes at a time; its `request` is not used.
        let read_key = workload.read_key();
        if host.memory < workload.read_bytes() {
            return Err(key_err(
                "host.memory",
                format!(
                    "{} cannot hold even one request of {}",
                    given.value("host.memory", host.memory.rounded()),
                    given.key(read_key, workload.read_bytes().rounded()),
                ),
            ));
        }

        let dfs = crate::dfs::config::take(&mut root)?;
        if let Some(k) = root.keys().next() {
            return Err(key_err(
                &shown_key(k),
                unknown_key_message(
                    k,
                    [
                        "seed", "device", "host", "policy", "workload", "dfs", "network",
                    ],
                    "",
                    "the top level takes `seed` and the sections [device], [host], [policy], \
                     [workload], [dfs], [network]",
                ),
            ));
        }
        Ok(SimConfig {
            seed,
            device,
            host,
            policy,
            workload,
            tiered: None,
            dfs,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(text: &str, sets: &[&str]) -> Result<SimConfig, ConfigError> {
        let mut t = parse_config_text(text, "test.toml")?;
        for s in sets {
            apply_set(&mut t, s)?;
        }
        SimConfig::from_table(t, None)
    }

    /// `host.copy_rate` is a rate, `"free"`, or its default; a zero, which could mean free copies
    /// or copies that never end, is refused naming the key, as is a rate without its unit and a
    /// replay of a block trace, which copies nothing.
    #[test]
    fn the_copy_rate_is_a_rate_or_free_and_zero_is_refused() {
        let rate = |sets: &[&str]| cfg("", sets).map(|c| c.host.copy_bytes_per_s);
        assert_eq!(rate(&[]).unwrap(), Some(DEFAULT_COPY_BYTES_PER_S));
        assert_eq!(rate(&["host.copy_rate=8GiB/s"]).unwrap(), Some(8 << 30));
        assert_eq!(rate(&["host.copy_rate=free"]).unwrap(), None);
        for set in [
            "host.copy_rate=0",
            "host.copy_rate=0.0",
            "host.copy_rate=\"0\"",
            "host.copy_rate=8",
            "host.copy_rate=Free",
            "host.copy_rate=1KiB/s",
        ] {
            let e = rate(&[set]).unwrap_err().to_string();
            assert!(e.contains("`host.copy_rate`"), "{set}: {e}");
        }
        let e = rate(&["host.copy_rate=0"]).unwrap_err().to_string();
        assert!(e.contains("ambiguous") && e.contains("\"free\""), "{e}");
        let e = rate(&[
            "workload.kind=trace",
            "workload.trace=t.csv",
            "host.copy_rate=free",
        ])
        .unwrap_err()
        .to_string();
        assert!(e.contains("`host.copy_rate`") && e.contains("trace"), "{e}");
    }

    /// A trace's block requests enter below the page cache: its policy is `none` unless a
    /// block-level one is named, and a page-cache policy or one of its keys, which would change
    /// nothing, is refused by name (the run used to report `seqp`, the default, and take
    /// `policy.readahead_max` without a word).
    #[test]
    fn a_trace_refuses_a_page_cache_policy_and_its_keys() {
        let trace = ["workload.kind=trace", "workload.trace=t.csv"];
        let with = |sets: &[&str]| cfg("", &[&trace[..], sets].concat());
        let c = with(&[]).unwrap();
        assert_eq!(
            (c.policy.name.as_str(), c.policy_that_runs()),
            ("none", "none")
        );
        for (name, runs) in [
            ("none", "none"),
            ("streams", "streams"),
            ("msp+seqp", "msp"),
            ("msp+saseqp", "msp"),
        ] {
            let c = with(&[&format!("policy.name={name}")]).unwrap();
            assert_eq!(c.policy_that_runs(), runs, "{name}");
        }
        for name in ["seqp", "saseqp", "directed"] {
            let e = with(&[&format!("policy.name={name}")])
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("`policy.name`") && e.contains("page cache") && e.contains("--unset"),
                "{name}: {e}"
            );
        }
        for (set, key) in [
            ("policy.readahead_max=\"1GiB\"", "policy.readahead_max"),
            ("policy.readahead_rule=synchronous", "policy.readahead_rule"),
            ("policy.directed_memory=\"64MiB\"", "policy.directed_memory"),
            ("policy.contention=false", "policy.contention"),
        ] {
            for name in ["", "policy.name=msp+seqp"] {
                let sets: Vec<&str> = [set, name].into_iter().filter(|s| !s.is_empty()).collect();
                let e = with(&sets).unwrap_err().to_string();
                assert!(
                    e.contains(&format!("`{key}`")) && e.contains("trace"),
                    "{set} {name}: {e}"
                );
            }
        }
        // Other workloads keep `seqp` as their default.
        assert_eq!(cfg("", &[]).unwrap().policy_that_runs(), "seqp");
    }

    /// `policy.directed_memory` larger than the page cache is refused naming both keys, as
    /// `policy.readahead_max` is: a window is held in the page cache. It used to pass, the policy
    /// planning with memory the host does not have.
    #[test]
    fn a_directed_window_larger_than_the_page_cache_is_refused() {
        let directed = ["policy.name=directed", "workload.kind=scan"];
        let with = |sets: &[&str]| cfg("", &[&directed[..], sets].concat());
        let e = with(&["policy.directed_memory=\"2GiB\""])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`policy.directed_memory`")
                && e.contains("`2GiB`")
                && e.contains("host.memory = 1GiB (default)"),
            "{e}"
        );
        let e = with(&[
            "policy.directed_memory=\"300MiB\"",
            "host.memory=\"256MiB\"",
        ])
        .unwrap_err()
        .to_string();
        assert!(e.contains("host.memory = `256MiB`"), "{e}");
        for fits in ["\"1GiB\"", "\"896MiB\""] {
            let c = with(&[&format!("policy.directed_memory={fits}")]).unwrap();
            assert!(c.policy.directed.memory_bytes <= c.host.memory.0, "{fits}");
        }
        // Left out, it is 7/8 of the page cache, which fits whatever the memory.
        let c = with(&["host.memory=\"3MiB\""]).unwrap();
        assert_eq!(c.policy.directed.memory_bytes, (3 << 20) / 8 * 7);
    }

    /// A `--set` writes a path by its key or inside a section it sets whole; not by a key that
    /// only begins the same, a sibling, or a step through a list's element.
    #[test]
    fn a_set_writes_the_paths_it_names_or_holds() {
        for (set, paths) in [
            ("workload.trace=t", &["workload.trace"][..]),
            (" workload . trace = t", &["workload.trace"][..]),
            (
                "workload={kind=\"trace\", trace=\"t\"}",
                &["workload.trace"][..],
            ),
            ("device={disksim=\"d.diskspecs\"}", &["device.disksim"][..]),
            ("workload.kind=trace", &[][..]),
            ("workload.trace_records_max=3", &[][..]),
            ("work=1", &[][..]),
            ("device.tiers[0].preset=wd800jd", &[][..]),
            ("no equals sign", &[][..]),
        ] {
            assert_eq!(set_paths(set), paths, "{set}");
        }
    }

    /// A misspelt key is refused with the key it is nearest to, in every section and at the top
    /// level: the refusal used to point at `foresight sim --help` only, leaving the reader to
    /// find `streams` for `stream` among seventy keys. A word unlike every key gets no guess.
    #[test]
    fn an_sps_max_past_the_policys_bound_is_refused_by_the_key_with_that_bound() {
        // The config took up to 4,096 and the policy then refused 1,025 to 4,096 as
        // `policy.sps_max_stripes`, a key nobody can set, "outside 1..=1024".
        for v in ["1025", "4097"] {
            let e = cfg(
                "",
                &[
                    "device.kind=raid0",
                    "policy.name=msp+seqp",
                    &format!("policy.sps_max={v}"),
                ],
            )
            .unwrap_err()
            .to_string();
            assert!(
                e.contains("`policy.sps_max`") && e.contains("between 1 and 1024"),
                "{e}"
            );
        }
        let c = cfg(
            "",
            &[
                "device.kind=raid0",
                "policy.name=msp+seqp",
                "policy.sps_max=1024",
            ],
        )
        .unwrap();
        assert_eq!(c.policy.sps_max_stripes, 1024);
    }

    #[test]
    fn nr_requests_is_held_to_linuxs_bound() {
        // Up to 2^20 slots were taken, and a queue that long made each event walk it.
        let e = cfg("", &["host.nr_requests=10241"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`host.nr_requests`") && e.contains("between 1 and 10240"),
            "{e}"
        );
        assert_eq!(
            cfg("", &["host.nr_requests=10240"])
                .unwrap()
                .host
                .nr_requests,
            10_240
        );
    }

    #[test]
    fn a_misspelt_key_is_refused_naming_the_key_meant() {
        let d = |a: &str, b: &str| {
            let c = |s: &str| s.chars().collect::<Vec<_>>();
            super::edit_distance(&c(a), &c(b))
        };
        assert_eq!(
            [
                d("nmae", "name"),
                d("ab", "ba"),
                d("", "abc"),
                d("kitten", "sitting")
            ],
            [1, 1, 3, 3]
        );
        assert_eq!(
            [d("ca", "abc"), d("abc", "abc"), d("abcd", "badc")],
            [3, 0, 2]
        );
        for (set, meant) in [
            ("workload.stream=4", "`workload.streams`"),
            ("workload.Streams=4", "`workload.streams`"),
            ("policy.readahead_mx=1MiB", "`policy.readahead_max`"),
            // Under `seqp`, a key of the stream scheduler's that the parser does not ask for.
            ("policy.per_trun=2", "`policy.per_turn`"),
            ("host.shceduler=noop", "`host.scheduler`"),
            ("device.prest=wd800jd", "`device.preset`"),
            ("dfs.sytem=aps", "`dfs.system`"),
            ("polciy.name=seqp", "`policy`"),
            ("sed=3", "`seed`"),
            // A swap of two letters is one slip, not two edits: `nmae` found nothing.
            ("policy.nmae=seqp", "`policy.name`"),
            ("workload.knid=streams", "`workload.kind`"),
            // The word another section uses for the same thing.
            ("policy.kind=seqp", "`policy.name`"),
            ("workload.type=streams", "`workload.kind`"),
            ("device.name=wd800jd", "`device.preset`"),
        ] {
            let e = cfg("", &[set]).unwrap_err().to_string();
            assert!(
                e.contains("unknown key") && e.contains(&format!("did you mean {meant}?")),
                "{set}: {e}"
            );
        }
        let tiered = [
            "device.kind=constant",
            "device.t_upper=52ms",
            "device.t_lower=120ms",
            "device.t_lower_to_upper=122ms",
            "workload.kind=hinted",
            "policy.name=tip",
        ];
        for (set, meant) in [
            ("workload.consum=1ms", "`workload.consume`"),
            ("policy.xcache=4", "`policy.x_cache`"),
        ] {
            let sets: Vec<&str> = tiered.iter().copied().chain([set]).collect();
            let e = cfg("", &sets).unwrap_err().to_string();
            assert!(e.contains(&format!("did you mean {meant}?")), "{set}: {e}");
        }
        for set in ["workload.bogus=1", "zzz=1"] {
            let e = cfg("", &[set]).unwrap_err().to_string();
            assert!(
                e.contains("unknown key") && !e.contains("did you mean"),
                "{set}: {e}"
            );
        }
    }

    /// The controller read-ahead that fits beside the host's largest read is advised as a size
    /// (whole KiB, as one would write it); with reads off the page grid it was a byte count,
    /// "at most 9868928B".
    #[test]
    fn the_controller_read_ahead_advised_reads_as_a_size() {
        let e = cfg(
            "",
            &[
                "device.controller_cache=10MB",
                "device.controller_readahead=10MB",
                "workload.request=3000",
            ],
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("give device.controller_readahead at most 9637KiB,"),
            "{e}"
        );
        let e = cfg(
            "",
            &[
                "device.controller_cache=100MB",
                "device.controller_readahead=100MB",
            ],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("at most 97528KiB (about 95.2MiB),"), "{e}");
    }

    /// A size that is not a whole number of sectors is quoted as written, with the whole-sector
    /// sizes either side of it to write instead (a tier stack's block as the host's keys).
    #[test]
    fn a_size_off_the_sector_grid_is_quoted_with_the_sizes_either_side() {
        for (text, sets, shown) in [
            (
                "",
                &["device.kind=raid0", "device.strip=1000"][..],
                "device.strip`: must be a positive whole number of 512-byte sectors, got `1000` \
                 (1000B); write `512B` or `1KiB`",
            ),
            (
                "[device]\nkind = \"raid0\"\nstrip = \"100KB\"\n",
                &[][..],
                "got `100KB` (about 97.7KiB); write `99840B` or `98KiB`",
            ),
            (
                "",
                &["device.segment_size=300"][..],
                "device.segment_size`: must be a positive whole number of 512-byte sectors, got \
                 `300` (300B); write `512B`",
            ),
            (
                "",
                &["device.segment_size=1MB"][..],
                "got `1MB` (about 976.6KiB); write `999936B` or `977KiB`",
            ),
            (
                "",
                &["device.drive_readahead=1000"][..],
                "device.drive_readahead`: must be a whole number of 512-byte sectors, got `1000` \
                 (1000B); write `512B` or `1KiB`",
            ),
            (
                "",
                &["device.drive_readahead=100"][..],
                "got `100` (100B); write `0B` or `512B`",
            ),
            (
                "",
                &["device.drive_readahead_min=4097"][..],
                "device.drive_readahead_min`: must be a whole number of 512-byte sectors, got \
                 `4097` (about 4.0KiB); write `4KiB` or `4608B`",
            ),
            (
                "",
                &[
                    "device.kind=constant",
                    "device.t_upper=52ms",
                    "device.t_lower=120ms",
                    "device.t_lower_to_upper=122ms",
                    "workload.block=10MB",
                ][..],
                "workload.block`: must be a positive whole number of 512-byte sectors, got `10MB` \
                 (about 9.5MiB); write `9999872B` or `9766KiB`",
            ),
        ] {
            let e = cfg(text, sets).unwrap_err().to_string();
            assert!(e.contains(shown), "{sets:?}: {e}");
        }
    }

    /// A number TOML prints back differently (`1e9` as `1000000000.0`, `1_000` as `1000`) is
    /// quoted as written, in a section, a list of sections or an inline table, with the line a
    /// file wrote it on; only the value standing alone is replaced, not digits of another.
    #[test]
    fn a_number_is_quoted_as_written_with_its_line() {
        let text = "[host]\nmemory = 1e9\n[[device.tiers]]\ncapacity = 4e9\n\
                    link = { delay = 1_000 }\n";
        let w = AsWritten::of_text(text, "f.toml");
        let at = |key: &str| {
            let w = &w.by_key[key];
            (w.text.as_str(), w.reprint.as_str(), w.at.as_deref())
        };
        assert_eq!(at("host.memory"), ("1e9", "1000000000.0", Some("f.toml:2")));
        assert_eq!(
            at("device.tiers[0].capacity"),
            ("4e9", "4000000000.0", Some("f.toml:4"))
        );
        assert_eq!(
            at("device.tiers[0].link.delay"),
            ("1_000", "1000", Some("f.toml:5"))
        );
        let e = w.explain(key_err(
            "host.memory",
            "got 1000000000.0, not 11000000000.0",
        ));
        assert_eq!(
            e.to_string(),
            "config key `host.memory`: got 1e9, not 11000000000.0 (set at f.toml:2)"
        );
        // A --set takes the key over, with no line; an unset forgets it.
        let mut w = w;
        w.note_set("host.memory = 2.5e9");
        assert_eq!(w.by_key["host.memory"].at, None);
        assert_eq!(w.by_key["host.memory"].text, "2.5e9");
        w.note_unset("device.tiers[0]");
        assert!(w.by_key.keys().all(|k| !k.starts_with("device.tiers[0]")));
    }

    /// A list or inline table where a key takes a plain value, or a list of sections where the
    /// config takes one section, is refused with the file and line that wrote it, as a plain value
    /// is; they used to be refused without either, and `[[workload]]` with a --set into it was
    /// told to name an element (`workload[0]`), which the config then refused too.
    #[test]
    fn a_list_or_table_in_a_file_is_refused_with_its_line() {
        let refusal = |text: &str, sets: &[&str]| {
            let mut t = parse_config_text(text, "f.toml").unwrap();
            let mut w = AsWritten::of_text(text, "f.toml");
            for set in sets {
                apply_set(&mut t, set).map_err(|e| w.explain(e))?;
                w.note_set(set);
            }
            SimConfig::from_table_as_written(t, None, &w).map(|_| ())
        };
        for (text, key, shown) in [
            (
                "[workload]\nrequest = [\"4KiB\"]\n",
                "workload.request",
                "[\"4KiB\"]",
            ),
            (
                "[workload]\nrequest = {size=\"4KiB\"}\n",
                "workload.request",
                "{size=\"4KiB\"}",
            ),
            (
                "seed = 2\n[workload]\nstreams = [1]\n",
                "workload.streams",
                "[1]",
            ),
            (
                "[policy]\nname = [ \"seqp\" ]\n",
                "policy.name",
                "[ \"seqp\" ]",
            ),
        ] {
            let e = refusal(text, &[]).unwrap_err().to_string();
            let line = text.lines().count();
            assert!(
                e.contains(&format!("`{key}`"))
                    && e.contains(shown)
                    && e.ends_with(&format!("(set at f.toml:{line})")),
                "{text}: {e}"
            );
        }
        let text = "seed = 2\n[[workload]]\nstreams = 2\n";
        for sets in [&[][..], &["workload.streams=3"][..]] {
            let e = refusal(text, sets).unwrap_err().to_string();
            assert!(
                e.contains("`workload`")
                    && e.contains("[workload]")
                    && !e.contains("workload[0]")
                    && e.ends_with("(set at f.toml:2)"),
                "{sets:?}: {e}"
            );
        }
    }

    /// A value out of range is quoted as the user wrote it, with its conversion beside it,
    /// for every kind of key: sizes, a cache's size, durations, from --set and from a file.
    #[test]
    fn a_value_out_of_range_is_shown_as_written() {
        for (text, set, shown) in [
            ("", "workload.request=6GB", "got `6GB` (about 5.6GiB)"),
            ("", "workload.request=100", "got `100` (100B)"),
            ("", "host.memory=512KiB", "got `512KiB`"),
            (
                "",
                "host.max_request=65537KiB",
                "got `65537KiB` (about 64.0MiB)",
            ),
            ("", "device.strip=2GiB", "got `2GiB`"),
            (
                "",
                "policy.readahead_max=1200MB",
                "got `1200MB` (about 1.1GiB)",
            ),
            ("", "host.raid_cache=1000", "got `1000` (1000B)"),
            (
                "",
                "workload.think=7200000ms",
                "got `7200000ms` (7200.000s)",
            ),
            ("", "host.antic_expire=1500ms", "got `1500ms` (1.500s)"),
            (
                "[workload]\nrequest = \"100MB\"\n",
                "workload.streams=1",
                "got `100MB` (about 95.4MiB)",
            ),
        ] {
            let mut sets = vec![set];
            if set.starts_with("host.antic_expire") {
                sets.push("host.scheduler=anticipatory");
            }
            if set.starts_with("device.strip") {
                sets.push("device.kind=raid0");
            }
            let e = cfg(text, &sets).unwrap_err().to_string();
            assert!(e.contains(shown), "{set}: {e}");
        }
    }

    /// A check that compares two keys quotes both as the user wrote them, each with its
    /// conversion beside it, and marks a key left out as the default; the policy's own checks,
    /// which state the settings in the paper's terms, add the keys as written. These messages
    /// showed converted values only (`host.memory` as "1.0MiB" beside a request of
    /// "1953.1KiB"), or none at all.
    #[test]
    fn a_value_compared_with_another_keys_is_shown_as_written() {
        for (sets, key, shown) in [
            (
                &["host.memory=1MiB", "workload.request=2000KB"][..],
                "`host.memory`",
                "`1MiB` cannot hold even one request of workload.request = `2000KB` (about 1.9MiB)",
            ),
            // A tiles workload reads a tile at a time: its tile, not its unused request, must
            // fit (a 2 MiB tile in a 1 MiB cache used to run).
            (
                &[
                    "workload.kind=tiles",
                    "host.memory=1MiB",
                    "workload.tile=2MiB",
                ],
                "`host.memory`",
                "`1MiB` cannot hold even one request of workload.tile = `2MiB`",
            ),
            (
                &["host.memory=2000KB", "policy.readahead_max=2MiB"],
                "`policy.readahead_max`",
                "`2MiB` is larger than the page cache (host.memory = `2000KB` (about 1.9MiB))",
            ),
            (
                &["workload.file_size=100KB", "workload.request=1MB"],
                "`workload.file_size`",
                "`100KB` (about 97.7KiB) is smaller than one request, workload.request = `1MB` \
                 (about 976.6KiB)",
            ),
            (
                &[
                    "workload.kind=scan",
                    "workload.file_size=100KB",
                    "workload.request=1MB",
                ],
                "`workload.file_size`",
                "`100KB` (about 97.7KiB) holds no whole request of workload.request = `1MB` \
                 (about 976.6KiB)",
            ),
            (
                &[
                    "workload.kind=gaps",
                    "workload.file_size=1MB",
                    "workload.request=256KiB",
                    "workload.gap=600KB",
                ],
                "`workload.gap`",
                "`600KB` (about 585.9KiB) (in whole 4 KiB pages: 584KiB) leaves room for only \
                 one read of workload.request = `256KiB` in workload.file_size = `1MB` (about \
                 976.6KiB)",
            ),
            (
                &["workload.kind=tiles", "workload.file_size=100KB"],
                "`workload.file_size`",
                "`100KB` (about 97.7KiB) holds no image row of workload.tile = 8KiB (default) x \
                 workload.tiles_across = 64 (default) (512KiB)",
            ),
            (
                &["device.controller_cache=1MB", "policy.readahead_max=2MiB"],
                "`device.controller_cache`",
                "`1MB` (about 976.6KiB) is less than the host's largest read, 2MiB (the largest \
                 read policy `seqp` sends down with workload.request = 64KiB (default) and \
                 policy.readahead_max = `2MiB`)",
            ),
            (
                &[
                    "device.controller_cache=4MB",
                    "device.controller_readahead=4000KB",
                ],
                "`device.controller_readahead`",
                "`4000KB` (about 3.8MiB) of read-ahead beyond the host's largest read, 128KiB \
                 (the largest read policy `seqp` sends down with workload.request = 64KiB \
                 (default) and policy.readahead_max = 128KiB (default)), is more than \
                 device.controller_cache = `4MB` (about 3.8MiB) holds",
            ),
            (
                &[
                    "policy.name=streams",
                    "policy.memory=1MB",
                    "policy.readahead=512KiB",
                    "policy.per_turn=4",
                ],
                "`policy.memory`",
                "; as written: policy.memory = `1MB` (about 976.6KiB), policy.readahead = \
                 `512KiB`, policy.per_turn = `4`",
            ),
            (
                &[
                    "policy.name=streams",
                    "policy.memory=4MB",
                    "policy.dispatch=4",
                ],
                "`policy.memory`",
                "; as written: policy.memory = `4MB` (about 3.8MiB), policy.readahead = 8MiB \
                 (default), policy.per_turn = 1 (default), policy.dispatch = `4`",
            ),
            // A refusal of another stream scheduler key quotes that key, not M, R and N: 0.1ns
            // is read as zero, and the sizes were beside the point.
            (
                &["policy.name=streams", "policy.timeout=0.1ns"],
                "`policy.timeout`",
                "must be longer than zero; as written: policy.timeout = `0.1ns`",
            ),
            (
                &["policy.name=msp+seqp", "policy.sc_thresh=50"],
                "`policy.sc_thresh`",
                "; as written: policy.sc_thresh = `50`, policy.sc_max = 42 (default)",
            ),
            (
                &["policy.name=directed", "policy.directed_memory=100KB"],
                "`policy.directed_memory`",
                "; as written: policy.directed_memory = `100KB` (about 97.7KiB)",
            ),
        ] {
            let e = cfg("", sets).unwrap_err().to_string();
            assert!(e.contains(key) && e.contains(shown), "{sets:?}: {e}");
        }
        // A random workload's file (0: the whole volume) smaller than one request was refused
        // only when the run was built, as "must be between one request and the volume's ...",
        // quoting neither key.
        let e = cfg(
            "",
            &[
                "workload.kind=random",
                "workload.file_size=100KB",
                "workload.request=1MiB",
            ],
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains(
                "`workload.file_size`: `100KB` (about 97.7KiB) holds no whole request of \
                 workload.request = `1MiB`"
            ),
            "{e}"
        );
        assert!(cfg("", &["workload.kind=random", "workload.request=1MiB"]).is_ok());
        // The same from a config file.
        let e = cfg(
            "[host]\nmemory = \"1MiB\"\n[workload]\nrequest = \"2000KB\"\n",
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("`1MiB` cannot hold even one request of workload.request = `2000KB`"),
            "{e}"
        );
    }

    /// A misspelt `device.kind` or `workload.kind` listed only the page-cache host's kinds, so a
    /// reader of the error never learnt of the tier stack's (`tiered`, `constant`, `hinted`),
    /// which the same keys take.
    #[test]
    fn a_bad_kind_names_the_tier_stack_kinds_too() {
        let e = cfg("[device]\nkind = \"tierd\"\n", &[])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("device.kind")
                && e.contains("raid0")
                && e.contains("\"tiered\"")
                && e.contains("\"constant\""),
            "{e}"
        );
        let e = cfg("", &["workload.kind=hintd"]).unwrap_err().to_string();
        assert!(
            e.contains("workload.kind") && e.contains("gaps") && e.contains("\"hinted\""),
            "{e}"
        );
    }

    /// A config file with no keys ran the defaults with exit 0, as though the file had been read
    /// as meant.
    #[test]
    fn a_config_file_with_no_keys_is_refused_by_name() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        for (name, text) in [("empty.toml", ""), ("comments.toml", "# nothing yet\n\n")] {
            let path = dir.join(name);
            std::fs::write(&path, text).unwrap();
            let e = read_config_file(&path).unwrap_err().to_string();
            assert!(e.contains(name) && e.contains("holds no keys"), "{e}");
        }
        let path = dir.join("one.toml");
        std::fs::write(&path, "seed = 3\n").unwrap();
        assert!(read_config_file(&path).is_ok());
    }

    /// Under `streams`, `host.raid_cache` was taken and never read (the same figures with 0, 4 MiB
    /// or 512 MiB): the scheduler's cache is its own M.
    #[test]
    fn a_raid_cache_beside_the_stream_scheduler_is_refused_by_name() {
        let e = cfg("", &["policy.name=streams", "host.raid_cache=64MiB"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("host.raid_cache") && e.contains("policy.memory"),
            "{e}"
        );
        // Given at all, even at its default, it is a setting that changes nothing, refused as
        // a workload key only other kinds read is refused at any value.
        let e = cfg("", &["policy.name=streams", "host.raid_cache=0"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("host.raid_cache") && e.contains("--unset host.raid_cache"),
            "{e}"
        );
        cfg("", &["policy.name=streams"]).unwrap();
        cfg("", &["policy.name=seqp", "host.raid_cache=64MiB"]).unwrap();
    }

    /// `device.queue_policy` on an ssd was taken and then ignored (the SSD model has no pick by
    /// position), as the drive cache keys, which are refused there, would have been.
    #[test]
    fn a_disk_queue_policy_on_an_ssd_is_refused_by_name() {
        let e = cfg("", &["device.kind=ssd", "device.queue_policy=sptf"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("device.queue_policy") && e.contains("ssd"),
            "{e}"
        );
        let c = cfg("", &["device.kind=hdd", "device.queue_policy=sptf"]).unwrap();
        assert_eq!(c.device.queue_policy, Some(QueuePolicy::Sptf));
    }

    /// `seed = "7"` was refused as "must be at most 9223372036854775807 (TOML's largest
    /// integer), got 7", which 7 is; every other whole-number key reads a quoted number. The seed
    /// now does too, and quoted text that is no number is refused as such.
    #[test]
    fn a_quoted_seed_is_read_as_the_number_it_holds() {
        assert_eq!(cfg("seed = \"7\"\n", &[]).unwrap().seed, 7);
        assert_eq!(
            cfg("[workload]\nstreams = \"7\"\n", &[])
                .unwrap()
                .workload
                .streams,
            7
        );
        let e = cfg("seed = \"seven\"\n", &[]).unwrap_err().to_string();
        assert!(
            e.contains("seed") && e.contains("non-negative whole number"),
            "{e}"
        );
        let e = cfg("seed = \"-7\"\n", &[]).unwrap_err().to_string();
        assert!(
            e.contains("seed") && e.contains("non-negative whole number"),
            "{e}"
        );
    }

    /// A whole number too large for TOML's 64-bit signed integers reaches a key as text; it was
    /// refused as "expected a whole number", which it is. The refusal now gives the range.
    #[test]
    fn a_whole_number_beyond_toml_integers_is_refused_with_the_range() {
        for (set, key, range) in [
            (
                "workload.streams=18446744073709551615",
                "workload.streams",
                "between 1 and 100000",
            ),
            (
                "workload.streams=-99999999999999999999",
                "workload.streams",
                "between 1 and 100000",
            ),
            (
                "seed=18446744073709551616",
                "seed",
                "at most 18446744073709551615",
            ),
        ] {
            let e = cfg("", &[set]).unwrap_err().to_string();
            assert!(e.contains(key) && e.contains(range), "{set}: {e}");
        }
        // Text that is no number is still refused as such.
        let e = cfg("", &["workload.streams=many"]).unwrap_err().to_string();
        assert!(e.contains("expected a whole number"), "{e}");
    }

    /// `msp+...` is chosen by its name alone, as in the engine and `foresight bench`, whose RAID
    /// cache is 512 MiB unless given: the simulator used to refuse the name without a
    /// `host.raid_cache`. A cache given as 0 is still refused, by name.
    #[test]
    fn msp_takes_a_512_mib_raid_cache_unless_one_is_given() {
        for policy in ["msp+seqp", "msp+saseqp"] {
            let name = format!("policy.name={policy}");
            let c = cfg("", &["device.kind=raid0", &name]).unwrap();
            assert_eq!(c.host.raid_cache, DEFAULT_MSP_RAID_CACHE, "{policy}");
            assert_eq!(DEFAULT_MSP_RAID_CACHE, ByteLen::mib(512));
            let c = cfg("", &["device.kind=raid0", &name, "host.raid_cache=64MiB"]).unwrap();
            assert_eq!(c.host.raid_cache, ByteLen::mib(64), "{policy}");
            let e = cfg("", &["device.kind=raid0", &name, "host.raid_cache=0"])
                .unwrap_err()
                .to_string();
            assert!(e.contains("host.raid_cache"), "{policy}: {e}");
        }
        // Other policies keep no RAID cache unless one is given.
        let c = cfg("", &["device.kind=raid0", "policy.name=saseqp"]).unwrap();
        assert_eq!(c.host.raid_cache, ByteLen(0));
    }

    /// The seed is a `u64` (DESIGN.md: one `u64` seed draws everything random), but TOML's
    /// integers stop at `i64::MAX`: a larger seed, quoted in a file or given to --set, was
    /// refused, so half the seeds (those a library caller or a randomized test may print)
    /// could not be replayed through a config. Every `u64` is taken now, as text past
    /// `i64::MAX`.
    #[test]
    fn every_u64_seed_is_taken() {
        for (file, sets, want) in [
            ("seed = \"18446744073709551615\"\n", vec![], u64::MAX),
            ("", vec!["seed=18446744073709551615"], u64::MAX),
            ("", vec!["seed=9223372036854775808"], 1 << 63),
            ("seed = 9223372036854775807\n", vec![], i64::MAX as u64),
        ] {
            assert_eq!(cfg(file, &sets).unwrap().seed, want, "{file:?} {sets:?}");
        }
    }

    /// A seed past TOML's largest integer written bare in a file is a TOML error; it used to
    /// say only "number too large to fit in target type", not that quoting it is the way to
    /// write it. Only the seed takes such a number: the hint used to tell any key's number to
    /// be quoted (`streams = "99999999999999999999"` then only met the key's range).
    #[test]
    fn a_bare_number_past_toml_integers_is_told_to_be_quoted() {
        let e = parse_config_text("seed = 18446744073709551615\n", "big.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("big.toml:1") && e.contains("quoted"), "{e}");
        // Any other key stops far below TOML's integers: quoting its number is no fix.
        let e = parse_config_text("[workload]\nstreams = 99999999999999999999\n", "big.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("big.toml:2") && e.contains("only `seed`") && e.contains("smaller"),
            "{e}"
        );
        let mut t = parse_config_text("seed = \"18446744073709551615\"\n", "big.toml").unwrap();
        assert_eq!(take_seed(&mut t).unwrap(), u64::MAX);
    }

    /// The TOML parser's messages come in several lines ("invalid string" and below it what it
    /// expected); the CLI prints an error as one line after `error:`, so a second line stood
    /// apart from the file and line it belongs to.
    #[test]
    fn a_toml_syntax_error_is_one_line_naming_the_file_and_line() {
        for (text, line) in [
            ("seed = 1\n[workload]\nstreams = \n", 3),
            ("[workload]\nstreams = 4\n[workload]\n", 3),
            ("[device\n", 1),
        ] {
            let e = parse_config_text(text, "bad.toml").unwrap_err().to_string();
            assert!(!e.contains('\n'), "{text:?}: {e:?}");
            assert!(
                e.starts_with(&format!("bad.toml:{line}: ")),
                "{text:?}: {e}"
            );
        }
    }

    #[test]
    fn a_set_value_is_one_value_not_the_first_of_several_lines() {
        // `v = 4\nstreams = 64` is a TOML table of two keys: the value used to be read as 4,
        // the rest dropped without a word.
        for set in [
            "workload.streams=4\nstreams = 64",
            "workload.streams=4\n[device]\nkind = \"ssd\"",
        ] {
            let e = cfg("", &[set]).unwrap_err().to_string();
            assert!(e.contains("workload.streams"), "{set:?}: {e}");
        }
        assert_eq!(
            cfg("", &["workload.streams=4 # four"])
                .unwrap()
                .workload
                .streams,
            4
        );
    }

    #[test]
    fn an_unknown_key_that_is_not_a_bare_name_is_shown_quoted() {
        for (text, shown) in [
            ("\"\" = \"\"", "config key `\"\"`"),
            ("\"device.kind\" = \"ssd\"", "config key `\"device.kind\"`"),
            ("[device]\n\"\" = 1", "config key `device.\"\"`"),
            ("[device]\n\"a b\" = 1", "config key `device.\"a b\"`"),
            ("[host]\n\"x\" = 1", "config key `host.x`"),
            (
                "[device]\nkind = \"tiered\"\n[[device.tiers]]\npreset = \"wd800jd\"\n\"t.read\" = 1",
                "config key `device.tiers[0].\"t.read\"`",
            ),
            (
                "[device]\nkind = \"tiered\"\n[[device.tiers]]\npreset = \"wd800jd\"\n[\"a.b\"]",
                "config key `\"a.b\"`",
            ),
            ("[dfs]\n[host]\n\"\" = 1", "config key `host.\"\"`"),
        ] {
            let e = cfg(text, &[]).unwrap_err().to_string();
            assert!(e.contains(shown), "{text:?}: {e}");
        }
    }

    #[test]
    fn policy_keys_only_other_policies_read_are_refused() {
        for (sets, key) in [
            (&["policy.readahead=1MiB"][..], "policy.readahead"),
            (
                &["policy.name=streams", "policy.sc_max=4"][..],
                "policy.sc_max",
            ),
            (
                &["policy.name=none", "policy.infill_max=0"][..],
                "policy.infill_max",
            ),
            (
                &["policy.name=directed", "policy.memory=16MiB"][..],
                "policy.memory",
            ),
            // `none` has no window, and `streams` sizes its reads with `policy.readahead`.
            (
                &["policy.name=none", "policy.readahead_max=1MiB"][..],
                "policy.readahead_max",
            ),
            (
                &["policy.name=streams", "policy.readahead_max=8MiB"][..],
                "policy.readahead_max",
            ),
            (
                &["policy.name=directed", "policy.readahead_rule=synchronous"][..],
                "policy.readahead_rule",
            ),
        ] {
            let e = cfg("", sets).unwrap_err().to_string();
            assert!(
                e.contains(&format!("`{key}`")) && e.contains("drop it"),
                "{e}"
            );
        }
        for sets in [
            &[
                "policy.name=streams",
                "policy.readahead=4MiB",
                "policy.memory=8MiB",
            ][..],
            &[
                "policy.name=msp+saseqp",
                "policy.sc_thresh=4",
                "host.raid_cache=64MiB",
            ][..],
            &["policy.name=directed", "policy.contention=false"][..],
            &[
                "policy.name=msp+seqp",
                "policy.readahead_max=1MiB",
                "host.raid_cache=64MiB",
            ][..],
            &["policy.name=saseqp", "policy.readahead_rule=synchronous"][..],
        ] {
            assert!(cfg("", sets).is_ok(), "{sets:?}");
        }
    }

    #[test]
    fn a_date_or_time_is_shown_as_written() {
        // A duration written as a clock time is a TOML local time; it used to be shown as
        // `{ "$__toml_private_datetime" = "00:01:00" }`.
        for e in [
            cfg("", &["workload.duration=00:01:00"]).unwrap_err(),
            cfg("[workload]\nduration = 00:01:00\n", &[]).unwrap_err(),
            cfg("", &["seed=2024-01-01"]).unwrap_err(),
            cfg("", &["workload.streams=[12:00:00]"]).unwrap_err(),
        ] {
            let e = e.to_string();
            assert!(!e.contains("private"), "{e}");
        }
        let e = cfg("", &["workload.duration=00:01:00"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("workload.duration") && e.contains("`00:01:00`"),
            "{e}"
        );
    }

    #[test]
    fn defaults_and_sets() {
        let c = cfg(
            "",
            &[
                "workload.streams=64",
                "policy.readahead_max=1MiB",
                "device.preset=cheetah-15k5",
            ],
        )
        .unwrap();
        assert_eq!(c.workload.streams, 64);
        assert_eq!(c.policy.readahead_max, ByteLen::mib(1));
        assert_eq!(c.device.preset, "cheetah-15k5");
        assert_eq!(c.host.memory, ByteLen::gib(1));
        assert_eq!(c.policy.readahead_rule, WindowRule::Linux);
        let c = cfg("", &["policy.readahead_rule=synchronous"]).unwrap();
        assert_eq!(c.policy.readahead_rule, WindowRule::Synchronous);
        assert_eq!(c.device.queue_policy, None);
        let c = cfg("", &["device.queue_policy=sptf"]).unwrap();
        assert_eq!(c.device.queue_policy, Some(QueuePolicy::Sptf));
    }

    #[test]
    fn disksim_drives_resolve_beside_the_config_and_exclude_presets() {
        let mut t = parse_config_text("[device]\ndisksim = \"d/x.diskspecs\"\n", "c.toml").unwrap();
        let c = SimConfig::from_table(t.clone(), Some(Path::new("/cfg"))).unwrap();
        assert_eq!(c.device.disksim, Some(PathBuf::from("/cfg/d/x.diskspecs")));
        apply_set(&mut t, "device.preset=atlas-10k").unwrap();
        let e = SimConfig::from_table(t, None).unwrap_err().to_string();
        assert!(
            e.contains("device.preset") && e.contains("device.disksim"),
            "{e}"
        );
        let e = cfg("", &["device.disksim=x.diskspecs", "device.kind=ssd"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("device.disksim"), "{e}");
        assert_eq!(cfg("", &[]).unwrap().device.disksim, None);
    }

    /// A path given by `--set` is the text as written, whatever TOML would read it as: a file
    /// named `2024` or `true` was refused as "expected the path of a trace file, got 2024",
    /// and the shell gives the user no easy way to pass TOML's quotes.
    #[test]
    fn a_path_set_on_the_command_line_is_taken_as_written() {
        for text in ["2024", "true", "1e3", "0x10", "1_000", "[1]"] {
            let c = cfg(
                "",
                &["workload.kind=trace", &format!("workload.trace={text}")],
            )
            .unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(c.workload.trace, Some(PathBuf::from(text)));
            let c = cfg("", &[&format!("device.disksim={text}")])
                .unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(c.device.disksim, Some(PathBuf::from(text)));
        }
        // TOML's quotes, when given, are still TOML's.
        let c = cfg("", &["workload.kind=trace", "workload.trace=\"2024\""]).unwrap();
        assert_eq!(c.workload.trace, Some(PathBuf::from("2024")));
        // Every other key still reads a TOML value.
        assert_eq!(
            cfg("", &["workload.streams=4"]).unwrap().workload.streams,
            4
        );
    }

    #[test]
    fn a_key_only_other_workload_kinds_read_is_refused() {
        // `streams` reads each file whole, so `requests` would change nothing.
        let e = cfg("", &["workload.requests=10"]).unwrap_err().to_string();
        assert!(
            e.contains("workload.requests")
                && e.contains("`streams` workload")
                && e.contains("random, webserver"),
            "{e}"
        );
        let e = cfg("", &["workload.kind=random", "workload.placement=aligned"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("workload.placement"), "{e}");
        let e = cfg("", &["workload.kind=scan", "workload.tile=8KiB"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("workload.tile") && e.contains("tiles"), "{e}");
        // Each kind's own keys, and `extent` with any placement, pass.
        for sets in [
            &["workload.kind=random", "workload.requests=10"][..],
            &[
                "workload.kind=tiles",
                "workload.tile=8KiB",
                "workload.tiles_across=4",
            ],
            &[
                "workload.kind=gaps",
                "workload.gap=1MiB",
                "workload.gap_dist=exponential",
            ],
            &["workload.placement=aligned", "workload.extent=300KiB"],
        ] {
            cfg("", sets).unwrap_or_else(|e| panic!("{sets:?}: {e}"));
        }
        // Unknown keys keep their own message.
        let e = cfg("", &["workload.bogus=1"]).unwrap_err().to_string();
        assert!(e.contains("unknown key"), "{e}");
    }

    /// A controller reads the request that missed and its read-ahead after it as one piece, which
    /// it never shortens (`CacheLayer::with_whole_fetches`): a read-ahead of the whole cache left
    /// no room for the request, so every read-ahead was cut at the cache's size, one at a time,
    /// while the config was accepted. A read-ahead that fits beside the request is taken.
    #[test]
    fn a_controller_read_ahead_must_fit_its_cache_beside_the_request() {
        let sets = |cache: &str, ra: &str, request: &str| {
            cfg(
                "",
                &[
                    &format!("device.controller_cache={cache}"),
                    &format!("device.controller_readahead={ra}"),
                    &format!("workload.request={request}"),
                ],
            )
        };
        let e = sets("4MiB", "4MiB", "64KiB").unwrap_err().to_string();
        assert!(
            e.contains("device.controller_readahead") && e.contains("64KiB") && e.contains("4MiB"),
            "{e}"
        );
        let e = sets("4MiB", "3MiB", "2MiB").unwrap_err().to_string();
        assert!(e.contains("device.controller_readahead"), "{e}");
        sets("4MiB", "3MiB", "1MiB").unwrap();
        let e = sets("1MiB", "0", "2MiB").unwrap_err().to_string();
        assert!(
            e.contains("device.controller_cache") && e.contains("2MiB"),
            "{e}"
        );
        // A 7 KiB read at a multiple of 7 KiB may straddle three pages: 12 KiB beside the
        // read-ahead, not 8 KiB.
        let unaligned = |ra: &str| {
            cfg(
                "",
                &[
                    "policy.name=none",
                    "workload.kind=random",
                    "workload.request=7KiB",
                    "device.controller_cache=4MiB",
                    &format!("device.controller_readahead={ra}"),
                ],
            )
        };
        unaligned("4084KiB").unwrap();
        let e = unaligned("4088KiB").unwrap_err().to_string();
        assert!(
            e.contains("device.controller_readahead") && e.contains("off page boundaries"),
            "{e}"
        );
        // Beside seqp's 128 KiB windows (the default readahead_max), not just the request.
        sets("4MiB", "3968KiB", "64KiB").unwrap();
        let e = sets("4MiB", "4032KiB", "64KiB").unwrap_err().to_string();
        assert!(
            e.contains("device.controller_readahead")
                && e.contains("policy.readahead_max = 128KiB (default)")
                && e.contains("device.controller_cache = `4MiB`"),
            "{e}"
        );
    }

    #[test]
    fn errors_name_the_key() {
        let e = cfg("", &["workload.streams=0"]).unwrap_err().to_string();
        assert!(e.contains("workload.streams"), "{e}");
        // A controller cannot read ahead more than its cache holds.
        let e = cfg(
            "",
            &[
                "device.controller_cache=1MiB",
                "device.controller_readahead=4MiB",
            ],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("device.controller_readahead"), "{e}");
        cfg(
            "",
            &[
                "device.controller_cache=4MiB",
                "device.controller_readahead=3MiB",
            ],
        )
        .unwrap();
        let e = cfg("", &["workload.streams=-3"]).unwrap_err().to_string();
        assert!(e.contains("workload.streams"), "{e}");
        let e = cfg("[policy]\nreadahed_max = \"1MiB\"\n", &[])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("policy.readahed_max") && e.contains("unknown"),
            "{e}"
        );
        let e = cfg("", &["host.memory=12 parsecs"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("host.memory") && e.contains("unit"), "{e}");
        let e = cfg("[device]\nkind = \"tape\"\n", &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("device.kind") && e.contains("raid0"), "{e}");
        let e = cfg("seed = 1\n[host\n", &[]).unwrap_err().to_string();
        assert!(e.starts_with("test.toml:2"), "{e}");
        let e = cfg("", &["nonsense"]).unwrap_err().to_string();
        assert!(e.contains("KEY=VALUE"), "{e}");
        let e = cfg("bogus = 3", &[]).unwrap_err().to_string();
        assert!(e.contains("`bogus`"), "{e}");
        let e = cfg("", &["workload.kind=trace"]).unwrap_err().to_string();
        assert!(e.contains("workload.trace"), "{e}");
        let e = cfg("", &["host.antic_expire=10s"]).unwrap_err().to_string();
        assert!(e.contains("host.antic_expire") && e.contains("6ms"), "{e}");
        let e = cfg("", &["policy.name=magic"]).unwrap_err().to_string();
        assert!(e.contains("policy.name") && e.contains("seqp"), "{e}");
        let e = cfg("", &["policy.readahead_rule=lazy"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("policy.readahead_rule") && e.contains("synchronous"),
            "{e}"
        );
        for key in ["device.controller_cache", "host.raid_cache"] {
            let e = cfg("", &[&format!("{key}=100")]).unwrap_err().to_string();
            assert!(e.contains(key) && e.contains("4KiB"), "{e}");
            assert!(cfg("", &[&format!("{key}=0")]).is_ok());
        }
        // Values that used to wrap or reach a panic deep in a run.
        for (set, key) in [
            (
                "device.controller_mib_s=17592186044416",
                "device.controller_mib_s",
            ),
            ("workload.think=1000000000s", "workload.think"),
            // Rounded to 0 bytes/s, which panicked when the controller was built.
            ("device.controller_mib_s=1e-12", "device.controller_mib_s"),
            ("device.controller_mib_s=0.5", "device.controller_mib_s"),
        ] {
            let e = cfg("", &[set]).unwrap_err().to_string();
            assert!(e.contains(key), "{set}: {e}");
        }
        let e = cfg(
            "",
            &[
                "workload.kind=webserver",
                "workload.file_size=0",
                "workload.duration=1s",
            ],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("workload.file_size"), "{e}");
        let web = ["workload.kind=webserver", "workload.duration=1s"];
        let e = cfg("", &[&web[..], &["workload.pick=sequential"]].concat())
            .unwrap_err()
            .to_string();
        assert!(e.contains("workload.pick") && e.contains("rotor"), "{e}");
        let pick = |sets: &[&str]| cfg("", &[&web[..], sets].concat()).unwrap().workload.pick;
        assert_eq!(pick(&[]), FilePick::Random);
        assert_eq!(pick(&["workload.pick=rotor"]), FilePick::Rotor);
        // Only a webserver opens files one after another.
        let e = cfg("", &["workload.pick=rotor"]).unwrap_err().to_string();
        assert!(
            e.contains("workload.pick") && e.contains("webserver"),
            "{e}"
        );
        let e = cfg("", &["device.queue_policy=elevator"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("device.queue_policy") && e.contains("sptf"),
            "{e}"
        );
    }

    /// `--unset` takes a key out of the config, so that another policy may be chosen over a file
    /// that sets a key only the first one reads; a key the config does not set is refused by name.
    #[test]
    fn unset_removes_a_key_the_file_set_and_refuses_one_it_did_not() {
        let text = "[policy]\nname = \"seqp\"\nreadahead_max = \"1MiB\"\n";
        let mut t = parse_config_text(text, "test.toml").unwrap();
        apply_set(&mut t, "policy.name=streams").unwrap();
        let e = SimConfig::from_table(t.clone(), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--unset policy.readahead_max"), "{e}");
        apply_unset(&mut t, "policy.readahead_max").unwrap();
        assert_eq!(
            SimConfig::from_table(t.clone(), None).unwrap().policy.name,
            "streams"
        );
        for (key, names) in [
            ("policy.readahead_max", "policy.readahead_max"),
            ("policy.readahed", "policy.readahed"),
            ("nosuch.key", "nosuch.key"),
            ("policy.name.x", "policy.name"),
        ] {
            let e = apply_unset(&mut t, key).unwrap_err().to_string();
            assert!(e.contains(names), "{key}: {e}");
        }
    }

    /// A `--set` step may name an element of a list of sections the config has
    /// (`device.tiers[1].preset`), as the refusals of tier keys name them; an element past the end,
    /// a list named without an element and an index on a plain key are refused by name.
    #[test]
    fn set_reaches_into_an_element_of_a_list_of_sections() {
        let text = "[[device.tiers]]\npreset = \"a\"\n[[device.tiers]]\npreset = \"b\"\n";
        let mut t = parse_config_text(text, "test.toml").unwrap();
        apply_set(&mut t, "device.tiers[1].preset=wd800jd").unwrap();
        apply_set(&mut t, "device.tiers[0].disks=4").unwrap();
        let tiers = t["device"]["tiers"].as_array().unwrap();
        assert_eq!(tiers[1]["preset"].as_str(), Some("wd800jd"));
        assert_eq!(tiers[0]["preset"].as_str(), Some("a"));
        assert_eq!(tiers[0]["disks"].as_integer(), Some(4));
        apply_unset(&mut t, "device.tiers[0].disks").unwrap();
        assert!(t["device"]["tiers"][0].get("disks").is_none());
        for (set, names) in [
            ("device.tiers[2].preset=x", "device.tiers[2]"),
            ("device.tiers.preset=x", "device.tiers[0]"),
            ("device.preset[0].x=1", "`preset`"),
            ("device.tiers[1]=x", "device.tiers[1]"),
            ("device.tiers[one].preset=x", "element number"),
            ("device.tiers[0.preset=x", "device.tiers[0.preset=x"),
        ] {
            let mut t = t.clone();
            if set.starts_with("device.preset") {
                apply_set(&mut t, "device.preset=wd800jd").unwrap();
            }
            let e = apply_set(&mut t, set).unwrap_err().to_string();
            assert!(e.contains(names), "{set}: {e}");
        }
    }

    /// A readahead window must fit in the page cache it is read into.
    #[test]
    fn a_readahead_window_larger_than_the_page_cache_is_refused() {
        let e = cfg("", &["host.memory=1MiB", "policy.readahead_max=2MiB"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("policy.readahead_max") && e.contains("host.memory = `1MiB`"),
            "{e}"
        );
        assert!(cfg("", &["host.memory=2MiB", "policy.readahead_max=2MiB"]).is_ok());
    }

    /// `device.disks` on one disk and `device.strip` on anything but a RAID-0 were taken and
    /// dropped: `kind = "hdd"` with `disks = 5` ran one disk and said nothing. Like a key of
    /// another policy or workload kind, a device key the kind does not read is refused.
    #[test]
    fn array_keys_on_a_device_that_is_no_array_are_refused() {
        for (kind, set, key) in [
            ("hdd", "device.disks=5", "device.disks"),
            ("ssd", "device.disks=3", "device.disks"),
            ("hdd", "device.strip=64KiB", "device.strip"),
            ("ssd", "device.strip=64KiB", "device.strip"),
            ("jbod", "device.strip=64KiB", "device.strip"),
        ] {
            let e = cfg("", &[&format!("device.kind={kind}"), set])
                .expect_err(set)
                .to_string();
            assert!(
                e.contains(key) && e.contains(kind) && e.contains("drop it"),
                "{kind} {set}: {e}"
            );
        }
        assert!(cfg("", &["device.kind=jbod", "device.disks=8"]).is_ok());
        assert!(cfg(
            "",
            &["device.kind=raid0", "device.disks=2", "device.strip=64KiB"]
        )
        .is_ok());
    }

    /// The `--set`s of a small constant-time tier stack.
    const TIER_STACK_SETS: [&str; 5] = [
        "device.kind=constant",
        "device.t_upper=52ms",
        "device.t_lower=120ms",
        "device.t_lower_to_upper=122ms",
        "workload.kind=hinted",
    ];

    /// A documented key of the other kind of config (a tier stack's in a host run, or the
    /// other way round) was called an "unknown key", which sends the reader looking for a typo.
    #[test]
    fn a_key_of_the_other_kind_of_config_is_named_as_such() {
        let tier_stack = TIER_STACK_SETS;
        for (section, keys) in TIER_STACK_KEYS {
            for key in keys {
                let e = cfg("", &[&format!("{section}.{key}=1")])
                    .expect_err(key)
                    .to_string();
                assert!(
                    e.contains(&format!("{section}.{key}")) && e.contains("only a tier stack"),
                    "{e}"
                );
            }
        }
        let policy_keys = POLICY_FAMILY_KEYS.iter().flat_map(|(_, keys)| keys.iter());
        let host_keys = HOST_KEYS
            .iter()
            .flat_map(|(section, keys)| keys.iter().map(move |k| format!("{section}.{k}")))
            .chain(policy_keys.map(|k| format!("policy.{k}")));
        for key in host_keys {
            let mut sets = tier_stack.to_vec();
            let set = format!("{key}=1");
            sets.push(&set);
            let e = cfg("", &sets).expect_err(&key).to_string();
            assert!(
                e.contains(&key) && e.contains("a tier stack does not read"),
                "{e}"
            );
        }
        // A key of neither is unknown.
        let e = cfg("", &["workload.nosuch=1"]).unwrap_err().to_string();
        assert!(e.contains("unknown key"), "{e}");
    }

    /// The two key lists above name keys their own parser takes: a listed key set in its own
    /// kind of config may be refused for its value or its company, never as a key nobody reads.
    /// Without this a key renamed in a parser and not in its list would be misnamed as the other
    /// kind's.
    #[test]
    fn the_key_lists_name_keys_their_own_parser_takes() {
        let tier_stack = TIER_STACK_SETS;
        let not_read = |e: &str| {
            e.contains("unknown key")
                || e.contains("only a tier stack")
                || e.contains("a tier stack does not read")
        };
        for (section, keys) in TIER_STACK_KEYS {
            for key in keys {
                let mut sets = tier_stack.to_vec();
                let set = format!("{section}.{key}=1");
                sets.push(&set);
                if let Err(e) = cfg("", &sets) {
                    let e = e.to_string();
                    assert!(!not_read(&e), "{section}.{key} in a tier stack: {e}");
                }
            }
        }
        for (section, keys) in HOST_KEYS {
            for key in keys {
                if let Err(e) = cfg("", &[&format!("{section}.{key}=1")]) {
                    let e = e.to_string();
                    assert!(!not_read(&e), "{section}.{key} in a host run: {e}");
                }
            }
        }
    }

    /// `host.antic_expire` under `deadline` or `noop`, and `host.read_expire` under `noop`, were
    /// taken and dropped; a scheduler's key is refused under a scheduler that does not read it.
    #[test]
    fn a_scheduler_key_the_scheduler_does_not_read_is_refused() {
        for (scheduler, set, key) in [
            ("deadline", "host.antic_expire=3ms", "host.antic_expire"),
            ("noop", "host.antic_expire=3ms", "host.antic_expire"),
            ("noop", "host.read_expire=1ms", "host.read_expire"),
        ] {
            let e = cfg("", &[&format!("host.scheduler={scheduler}"), set])
                .expect_err(set)
                .to_string();
            assert!(
                e.contains(key) && e.contains(scheduler) && e.contains("drop it"),
                "{scheduler} {set}: {e}"
            );
        }
        // The default scheduler is deadline.
        assert!(cfg("", &["host.antic_expire=3ms"]).is_err());
        assert!(cfg("", &["host.read_expire=1ms"]).is_ok());
        assert!(cfg(
            "",
            &["host.scheduler=anticipatory", "host.antic_expire=3ms"]
        )
        .is_ok());
    }
}
