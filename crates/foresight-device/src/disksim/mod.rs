//! Import of DiskSim 4.0 drive descriptions: `NAME.diskspecs`, the `.model` it sources, the `.seek`
//! curve and the layout, turned into [`HddParams`].
//!
//! A DiskSim drive is a `disksim_disk` block in a `.diskspecs` file (the controller side: cache,
//! overheads, bus, queue), whose `Model = source X.model` entry names a `dm_disk` block (the
//! mechanism: surfaces, cylinders, a `dm_mech_g1` mechanical model and a layout). Files are named
//! relative to the `.diskspecs` file. The key names and their meaning follow the DiskSim 4.0 User's
//! Guide (Bucy, Schindler, Schlosser, Ganger; CMU-PDL-08-101), sections on the disk, the disk cache
//! and the `diskmodel` library; the syntax is read by [`syntax`].
//!
//! What is read, and how it maps onto the model:
//!
//! - **Mechanics** (`dm_mech_g1`): `Rotation speed (in rpms)`; `Seek type` `extracted` (the `Full
//!   seek curve` file: distance, time in ms per line, interpolated linearly; `Full strobe seek time`
//!   closes the curve at the last cylinder when the table stops short of it) or `hpl` (`HPL seek
//!   equation values`, the six-value form of Ruemmler and Wilkes 1994, see [`SeekCurve::Hpl`]), with
//!   `Single cylinder seek time`; `Head switch time`; `Add. write settling delay`.
//! - **Layout**: `dm_layout_g1` zones (first and last cylinder, blocks per track, track and cylinder
//!   skew in sectors), `Number of data surfaces`, `Number of cylinders`; a drive holds at most
//!   1 PiB. As in DiskSim, each zone's first block sits at the zone's `Offset of first block`
//!   (honoured at 0, the value every shipped zone gives) and its skews count from its own first
//!   track, not on from the zone before ([`LayoutRules`]). Cylinders no zone covers are spares that
//!   hold no blocks. The `LBN-to-PBN mapping scheme` orders each cylinder's surfaces as DiskSim's
//!   `g1_surfno_on_cyl` does ([`SurfaceOrder`]): 0 first to last on every cylinder; 1 last to
//!   first on the odd cylinders counted from the zone's first (the Atlas 10K); 2 the same on the
//!   odd cylinders of the disk. The track and cylinder skews follow the block order, not the
//!   surface number; the slips of per-track sparing (scheme 3) push the later surfaces of their
//!   cylinder by surface number, as DiskSim's `g1_map_pbn_skew` counts them. The model's mechanics
//!   cost a cylinder switch the same on any surface, so but for those slips the order changes
//!   which head `locate` names and no service time. Inside the zones, the `Sparing scheme used` (with
//!   `Rangesize for sparing`) and each zone's `Number of spares`, `Empty space at zone front`,
//!   `slips` and `defects` set sectors aside and move bad blocks to spares as DiskSim does (see
//!   `sparing.rs`; schemes 1, 5 and 6 are refused), so the capacity is DiskSim's own count of the
//!   zones' blocks. On the shipped drives that count is 0.008 to 0.66% above the files' `Block
//!   count` line, which DiskSim too replaces by its count.
//!   A `dm_layout_g4` layout (the Cheetah 15K.5's skews file) is **approximated by zones**: its
//!   track patterns and index tree are walked in LBN order to get the sequence of track sizes, which
//!   becomes zones of whole cylinders; the cylinder skew is the tree's per-track angle step; the
//!   serpentine surface order, per-track angles and slips are not represented (see `g4.rs`).
//! - **Cache** (`disksim_disk`): `Number of buffer segments`, `Segment size (in blks)`, `Enable
//!   caching in buffer`, `Buffer continuous read` ([`ReadAheadMode`]), `Maximum read-ahead (blks)`
//!   (0 with scheme 3 means "fill the segment"), `Fast write level` ([`WriteCache`]), `Maximum
//!   number of write segments`, `Use separate write segment`, `Allow read hits on write data`,
//!   `Combine seq writes`, `Read any free blocks` (keep the sectors passing under the head before a read's first sector),
//!   `Read-ahead over requested` (whether read-ahead may push the data just read out; as in DiskSim
//!   this bounds the read-ahead only when `Maximum read-ahead` is 0). `Allow almost read hits` is
//!   checked (0 or 1) but not followed, with a warning: the drive lets any read its running
//!   read-ahead will reach join it ([`crate::AlmostReadHits::Ahead`]).
//! - **Overheads**: the eight `Read|Write hit|miss over. after read|write` times, scaled by `Time
//!   scale for overheads` after adding `Per-request overhead time`.
//! - **Bus**: `Bulk sector transfer time` (ms per 512-byte sector, at most 1,000) is the
//!   interface rate.
//! - **Queue**: `Max queue length`; `Scheduling policy` 1 is FCFS, any other is approximated by
//!   C-LOOK.
//!
//! Every other key is either informational (statistics, the derived `Avg sectors per cylinder`), a
//! feature this model has at the value given (a zero overhead, a disabled option), or ignored: an
//! ignored key, or a key whose non-default value the model cannot honour, gives one
//! [`ImportWarning`] (once per key name), which the caller prints. A file that cannot be read or
//! parsed, a missing or malformed required key, or numbers that describe no working drive give a
//! [`DiskSimError`] naming the file and line. No input makes the importer panic.

mod g4;
mod sparing;
pub mod syntax;
#[cfg(test)]
mod tests;

use std::collections::BTreeSet;
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use foresight_core::{excerpt, Duration};

use crate::hdd::geometry::{LayoutRules, SurfaceOrder, Zone, ZoneSpares, ZoneStart};
use crate::hdd::mechanics::{CommandOverheads, SeekCurve};
use crate::hdd::{
    AlmostReadHits, HddParams, QueuePolicy, ReadAheadMode, WriteCache, QUEUE_DEPTH_MAX,
};
use syntax::{Block, Entry, Item, Value};

/// Most files one import may read (the `.diskspecs`, `.model`, `.seek` and a layout).
const FILES_MAX: usize = 8;
/// Largest parameter file read (the Cheetah 15K.5's layout is 0.6 MB).
const FILE_BYTES_MAX: u64 = 64 << 20;
/// Largest drive imported, in 512-byte sectors: 1 PiB, 30 times today's largest disks. Capacities
/// are counted in bytes, and a RAID-0 of 256 such drives still fits in 64 bits.
const CAPACITY_SECTORS_MAX: u64 = 1 << 41;

/// Why a drive could not be imported: the file, the 1-based line (0 when not about one line), and
/// what to fix.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct DiskSimError {
    /// The file, as named by the caller or by a `source` entry.
    pub file: String,
    /// 1-based line, or 0.
    pub line: u32,
    /// What is wrong and what was expected.
    pub message: String,
}

impl fmt::Display for DiskSimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}:{}: {}", self.file, self.line, self.message)
        }
    }
}

/// Something in the files the model does not honour; the import still succeeds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportWarning {
    /// The file.
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// What is ignored or approximated.
    pub message: String,
}

impl fmt::Display for ImportWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.message)
    }
}

/// An imported drive.
#[derive(Clone, Debug, PartialEq)]
pub struct DiskSimDrive {
    /// The `disksim_disk` block's name, e.g. `QUANTUM_TORNADO_validate`.
    pub name: String,
    /// The model's parameters.
    pub params: HddParams,
    /// The `dm_disk` block's `Block count`, if given (the drive's real capacity in sectors).
    pub block_count: Option<u64>,
    /// What the model ignores or approximates, one line per key name.
    pub warnings: Vec<ImportWarning>,
    /// Every file the import read, the `.diskspecs` first: as `load` was asked for them, and from
    /// [`import`] as paths beside the `.diskspecs`. A program that writes a file checks that it is
    /// none of these, since a drive's `.model` or seek curve is as much an input as its specs.
    pub files: Vec<PathBuf>,
}

/// Imports the drive described by the `.diskspecs` file at `path`; the files it sources are read
/// relative to its directory.
pub fn import(path: &Path) -> Result<DiskSimDrive, DiskSimError> {
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let root = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    let shown = |name: &str| dir.join(name).display().to_string();
    let mut load = |name: &str| -> Result<String, String> {
        let p = dir.join(name);
        let meta = std::fs::metadata(&p).map_err(|e| format!("cannot read: {e}"))?;
        if meta.len() > FILE_BYTES_MAX {
            return Err(format!(
                "is {} bytes; parameter files larger than {FILE_BYTES_MAX} bytes are refused",
                meta.len()
            ));
        }
        // The length above is a regular file's; a device or a pipe reports none and may never
        // end, so the read itself stops one byte past the bound.
        let mut bytes = Vec::new();
        std::fs::File::open(&p)
            .and_then(|f| f.take(FILE_BYTES_MAX + 1).read_to_end(&mut bytes))
            .map_err(|e| format!("cannot read: {e}"))?;
        if bytes.len() as u64 > FILE_BYTES_MAX {
            return Err(format!(
                "holds more than {FILE_BYTES_MAX} bytes; parameter files larger than that are refused"
            ));
        }
        String::from_utf8(bytes).map_err(|_| "is not UTF-8 text".to_string())
    };
    import_with(&root, &mut load)
        .map_err(|mut e| {
            e.file = shown(&e.file);
            e
        })
        .map(|mut d| {
            for w in &mut d.warnings {
                w.file = shown(&w.file);
            }
            for f in &mut d.files {
                *f = dir.join(&*f);
            }
            d
        })
}

/// Imports a drive whose files come from `load`, which maps a file name (the root `.diskspecs`
/// first, then each `source` and seek-curve name as written) to its text or a reason it cannot be
/// read. Errors and warnings name files as `load` was asked for them.
pub fn import_with(
    root: &str,
    load: &mut dyn FnMut(&str) -> Result<String, String>,
) -> Result<DiskSimDrive, DiskSimError> {
    let mut cx = Importer {
        load,
        files: Vec::new(),
        warnings: Vec::new(),
        warned: BTreeSet::new(),
    };
    let items = cx.parse_file(root)?;
    let disk = items
        .into_iter()
        .find_map(|i| match i {
            Item::Block(b) if b.kind == "disksim_disk" => Some(b),
            _ => None,
        })
        .ok_or_else(|| DiskSimError {
            file: root.to_string(),
            line: 0,
            message: "no `disksim_disk NAME { ... }` block; expected a DiskSim 4.0 .diskspecs file"
                .into(),
        })?;
    let drive = cx.disk(root, &disk)?;
    Ok(DiskSimDrive {
        warnings: cx.warnings,
        files: cx.files,
        ..drive
    })
}

fn err(file: &str, line: u32, message: impl Into<String>) -> DiskSimError {
    DiskSimError {
        file: file.to_string(),
        line,
        message: message.into(),
    }
}

/// What to do about an entry nobody read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Unread {
    /// Informational: say nothing.
    Silent,
    /// The model behaves as this key asks when its value is 0: warn otherwise.
    ZeroOk,
    /// The model behaves as this key asks when its value is 1: warn otherwise.
    OneOk,
    /// Not modelled: warn.
    Warn,
}

struct Importer<'l> {
    load: &'l mut dyn FnMut(&str) -> Result<String, String>,
    /// The files asked for so far, in order (a `source` cycle is stopped by their count).
    files: Vec<PathBuf>,
    warnings: Vec<ImportWarning>,
    warned: BTreeSet<String>,
}

/// A block being read, with the file it came from and which entries were used.
struct Reader<'b> {
    file: String,
    block: &'b Block,
    used: Vec<bool>,
}

impl<'b> Reader<'b> {
    fn new(file: &str, block: &'b Block) -> Reader<'b> {
        Reader {
            file: file.to_string(),
            used: vec![false; block.entries.len()],
            block,
        }
    }

    fn take(&mut self, key: &str) -> Option<&'b Entry> {
        let i = self.block.entries.iter().position(|e| e.key == key)?;
        self.used[i] = true;
        Some(&self.block.entries[i])
    }

    fn missing(&self, key: &str) -> DiskSimError {
        err(
            &self.file,
            self.block.line,
            format!(
                "the `{}` block has no `{key}` entry; add `{key} = ...`",
                self.block.kind
            ),
        )
    }

    fn word(&self, e: &'b Entry) -> Result<&'b str, DiskSimError> {
        match &e.value {
            Value::Word { text, .. } => Ok(text),
            v => Err(err(
                &self.file,
                e.line,
                format!("`{}` should be a single value, found {}", e.key, v.shape()),
            )),
        }
    }

    fn number(&self, e: &'b Entry) -> Result<f64, DiskSimError> {
        let w = self.word(e)?;
        parse_number(w).ok_or_else(|| {
            err(
                &self.file,
                e.line,
                format!("`{}` should be a number, found `{}`", e.key, excerpt(w)),
            )
        })
    }

    fn f64_opt(&mut self, key: &str) -> Result<Option<f64>, DiskSimError> {
        match self.take(key) {
            None => Ok(None),
            Some(e) => self.number(e).map(Some),
        }
    }

    /// A non-negative number of milliseconds (or another unit), required.
    fn nonneg(&mut self, key: &str) -> Result<f64, DiskSimError> {
        let e = self.take(key).ok_or_else(|| self.missing(key))?;
        let v = self.number(e)?;
        if v < 0.0 {
            return Err(err(
                &self.file,
                e.line,
                format!("`{key}` = {} must not be negative", shown(v)),
            ));
        }
        Ok(v)
    }

    fn nonneg_or(&mut self, key: &str, default: f64) -> Result<f64, DiskSimError> {
        if self.block.get(key).is_none() {
            return Ok(default);
        }
        self.nonneg(key)
    }

    /// A whole number in `lo..=hi`, required.
    fn int(&mut self, key: &str, lo: u64, hi: u64) -> Result<u64, DiskSimError> {
        let e = self.take(key).ok_or_else(|| self.missing(key))?;
        self.int_of(e, lo, hi)
    }

    fn int_or(&mut self, key: &str, lo: u64, hi: u64, default: u64) -> Result<u64, DiskSimError> {
        match self.take(key) {
            None => Ok(default),
            Some(e) => self.int_of(e, lo, hi),
        }
    }

    fn int_of(&self, e: &Entry, lo: u64, hi: u64) -> Result<u64, DiskSimError> {
        let v = self.number(e)?;
        if v.fract() != 0.0 || v < lo as f64 || v > hi as f64 {
            return Err(err(
                &self.file,
                e.line,
                format!(
                    "`{}` = {} must be a whole number from {lo} to {hi}",
                    e.key,
                    shown(v)
                ),
            ));
        }
        Ok(v as u64)
    }
}

/// `v` as an error message shows it: as written for ordinary magnitudes, in exponent form
/// beyond them, so that a value such as `1e300` reads back as that rather than 301 digits.
fn shown(v: f64) -> String {
    if v != 0.0 && !(1e-6..1e15).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// A decimal number as DiskSim writes them (`10025`, `0.099000`, `-1`, `1e-3`), finite.
fn parse_number(w: &str) -> Option<f64> {
    let ok = !w.is_empty()
        && w.bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E'));
    if !ok {
        return None;
    }
    w.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// How the unread keys of each kind of block are treated.
fn unread_policy(kind: &str, key: &str) -> Unread {
    match (kind, key) {
        (
            "disksim_disk",
            "Print stats" | "Avg sectors per cylinder" | "Set watermark by reqsize",
        ) => Unread::Silent,
        // The model transfers sector by sector into the buffer, sends partial hits at once and
        // stops read-ahead for a write, as these ask.
        (
            "disksim_disk",
            "Calc sector by sector"
            | "Read directly to buffer"
            | "Immed transfer partial hit"
            | "Write hit stop prefetch",
        ) => Unread::OneOk,
        ("disksim_disk", _) => Unread::ZeroOk,
        ("disksim_ioqueue", _) => Unread::ZeroOk,
        ("dm_disk", _) => Unread::Warn,
        ("dm_mech_g1", "HPL seek equation values" | "First ten seek times") => Unread::Silent,
        ("dm_mech_g1", "Percent error in rpms") => Unread::ZeroOk,
        ("dm_layout_g1", "Rangesize for sparing") => Unread::Silent,
        ("dm_layout_g1", _) => Unread::ZeroOk,
        ("dm_layout_g1_zone", "Offset of first block") => Unread::ZeroOk,
        _ => Unread::Warn,
    }
}

fn is_value(v: &Value, want: f64) -> bool {
    match v {
        Value::Word { text, .. } => parse_number(text) == Some(want),
        Value::List { items, .. } => items.is_empty() && want == 0.0,
        _ => false,
    }
}

impl Importer<'_> {
    fn warn(&mut self, file: &str, line: u32, key: &str, message: String) {
        if self.warned.insert(key.to_string()) {
            self.warnings.push(ImportWarning {
                file: file.to_string(),
                line,
                message,
            });
        }
    }

    /// Warns about every entry of `r` nobody read, by the block kind's policy.
    fn finish(&mut self, r: Reader<'_>) {
        for (i, e) in r.block.entries.iter().enumerate() {
            if r.used[i] {
                continue;
            }
            let quiet = match unread_policy(&r.block.kind, &e.key) {
                Unread::Silent => true,
                Unread::ZeroOk => is_value(&e.value, 0.0),
                Unread::OneOk => is_value(&e.value, 1.0),
                Unread::Warn => false,
            };
            if !quiet {
                let shown = match &e.value {
                    Value::Word { text, .. } => format!(" = {}", excerpt(text)),
                    v => format!(" = {}", v.shape()),
                };
                self.warn(
                    &r.file,
                    e.line,
                    &e.key,
                    format!("`{}`{shown} is not modelled; ignored", e.key),
                );
            }
        }
    }

    fn read_text(&mut self, name: &str) -> Result<String, DiskSimError> {
        self.files.push(PathBuf::from(name));
        if self.files.len() > FILES_MAX {
            return Err(err(
                name,
                0,
                format!("more than {FILES_MAX} files sourced; is there a `source` cycle?"),
            ));
        }
        (self.load)(name).map_err(|m| err(name, 0, m))
    }

    fn parse_file(&mut self, name: &str) -> Result<Vec<Item>, DiskSimError> {
        let text = self.read_text(name)?;
        syntax::parse(&text).map_err(|e| err(name, e.line, e.message))
    }

    /// The block a value stands for: a nested block, or the first block of a sourced file. Returns
    /// the file the block came from.
    fn block_of(
        &mut self,
        file: &str,
        e: &Entry,
        kinds: &[&str],
    ) -> Result<(String, Block), DiskSimError> {
        let (bfile, block) = match &e.value {
            Value::Block(b) => (file.to_string(), b.clone()),
            Value::Source { file: src, line } => {
                let items = self.parse_file(src)?;
                let b = items
                    .into_iter()
                    .find_map(|i| match i {
                        Item::Block(b) => Some(b),
                        Item::Source { .. } => None,
                    })
                    .ok_or_else(|| {
                        err(
                            file,
                            *line,
                            format!("`{}` sources `{src}`, which holds no block", e.key),
                        )
                    })?;
                (src.clone(), b)
            }
            v => {
                return Err(err(
                    file,
                    e.line,
                    format!(
                        "`{}` should be a block or `source FILE`, found {}",
                        e.key,
                        v.shape()
                    ),
                ))
            }
        };
        if !kinds.contains(&block.kind.as_str()) {
            return Err(err(
                &bfile,
                block.line,
                format!(
                    "`{}` is a `{}` block; this importer reads {}",
                    e.key,
                    block.kind,
                    kinds.join(" or ")
                ),
            ));
        }
        Ok((bfile, block))
    }

    fn disk(&mut self, file: &str, disk: &Block) -> Result<DiskSimDrive, DiskSimError> {
        let mut r = Reader::new(file, disk);
        let model_entry = r.take("Model").ok_or_else(|| r.missing("Model"))?;
        let (model_file, model) = self.block_of(file, model_entry, &["dm_disk"])?;

        // Bus and overheads.
        let bulk_ms = r.nonneg("Bulk sector transfer time")?;
        // A bus slower than a sector a second moves no drive's data; far slower, one read would
        // outlast the simulated clock.
        if bulk_ms > 1e3 {
            let line = r
                .block
                .get("Bulk sector transfer time")
                .map_or(0, |e| e.line);
            return Err(err(
                file,
                line,
                format!(
                    "`Bulk sector transfer time` = {bulk_ms:e} ms per sector is over 1,000 ms; \
                     give the bus's time for one 512-byte sector, e.g. 0.099"
                ),
            ));
        }
        let bus_bytes_per_s = if bulk_ms > 0.0 {
            512.0 / (bulk_ms * 1e-3)
        } else {
            // Zero: DiskSim moves data over the bus instantly.
            1e12
        };
        let per_request_ms = r.nonneg_or("Per-request overhead time", 0.0)?;
        let scale = r.nonneg_or("Time scale for overheads", 1.0)?;
        let mut ov = [0.0f64; 8];
        for (slot, key) in [
            "Read hit over. after read",
            "Read hit over. after write",
            "Read miss over. after read",
            "Read miss over. after write",
            "Write hit over. after read",
            "Write hit over. after write",
            "Write miss over. after read",
            "Write miss over. after write",
        ]
        .iter()
        .enumerate()
        {
            ov[slot] = (r.nonneg(key)? + per_request_ms) * scale;
            if ov[slot] > 1e6 {
                let line = r.block.get(key).map_or(0, |e| e.line);
                return Err(err(file, line, format!("`{key}` is over 1,000 s")));
            }
        }
        let ms = Duration::from_millis_f64;
        let overhead = CommandOverheads {
            read_hit_after_read: ms(ov[0]),
            read_hit_after_write: ms(ov[1]),
            read_miss_after_read: ms(ov[2]),
            read_miss_after_write: ms(ov[3]),
            write_hit_after_read: ms(ov[4]),
            write_hit_after_write: ms(ov[5]),
            write_miss_after_read: ms(ov[6]),
            write_miss_after_write: ms(ov[7]),
        };

        // Queue.
        let queue_depth = r.int_or("Max queue length", 1, u64::from(QUEUE_DEPTH_MAX), 1)? as u32;
        let mut queue_policy = QueuePolicy::Fcfs;
        if let Some(e) = r.take("Scheduler") {
            if let Value::Block(s) = &e.value {
                let mut sr = Reader::new(file, s);
                let policy = sr.int_or("Scheduling policy", 0, 1_000, 1)?;
                if policy != 1 {
                    queue_policy = QueuePolicy::CLook;
                    let line = s.get("Scheduling policy").map_or(s.line, |e| e.line);
                    self.warn(
                        file,
                        line,
                        "Scheduling policy",
                        format!(
                            "`Scheduling policy` = {policy} is approximated by C-LOOK (1, FCFS, is \
                             modelled exactly)"
                        ),
                    );
                }
                self.finish(sr);
            } else {
                return Err(err(
                    file,
                    e.line,
                    format!(
                        "`Scheduler` should be a `disksim_ioqueue {{ ... }}` block, found {}",
                        e.value.shape()
                    ),
                ));
            }
        }

        // Cache.
        let segments = r.int("Number of buffer segments", 0, 100_000)? as u32;
        let segment_sectors = r.int("Segment size (in blks)", 0, 1 << 31)? as u32;
        let cache_enabled = r.int_or("Enable caching in buffer", 0, 2, 1)? != 0;
        let contread_line = disk
            .get("Buffer continuous read")
            .map_or(disk.line, |e| e.line);
        let readahead_mode = match r.int_or("Buffer continuous read", 0, 4, 0)? {
            0 => ReadAheadMode::Off,
            1 => ReadAheadMode::TrackEnd,
            2 => ReadAheadMode::CylinderEnd,
            3 => ReadAheadMode::Budget,
            _ => ReadAheadMode::TrackAhead,
        };
        let max_ra = r.int_or("Maximum read-ahead (blks)", 0, 1 << 31, 0)? as u32;
        let min_ra = r.int_or("Minimum read-ahead (blks)", 0, 1 << 31, 0)? as u32;
        // DiskSim: a zero maximum with scheme 3 fills the segment. `Read-ahead over requested = 0`
        // (prefetched data may not replace the data just read) bounds the read-ahead only in that
        // case; with a non-zero maximum DiskSim reads that far past the request and the segment
        // keeps the newest sectors.
        let over_requested = r.int_or("Read-ahead over requested", 0, 1, 0)? == 1;
        let readahead_over_request = over_requested || max_ra > 0;
        let read_free_blocks = r.int_or("Read any free blocks", 0, 1, 0)? == 1;
        // DiskSim reads it as 0 to 2 and uses it as a flag (`currdisk->immed`): any non-zero value
        // makes the drive's media reads zero-latency. The model follows it for the reads the
        // drive serves, not for a read-ahead that moves to the next track, which reads in order.
        let immediate_read = match r.take("Immediate buffer read") {
            Some(e) => {
                let v = r.int_of(e, 0, 2)?;
                if v != 0 {
                    self.warn(
                        file,
                        e.line,
                        "Immediate buffer read",
                        format!(
                            "`Immediate buffer read` = {v} is followed for reads (zero-latency: \
                             a read that lands inside its sectors on a track reads on from the \
                             head) but not for the read-ahead, which reads each track from its \
                             first sector"
                        ),
                    );
                }
                v != 0
            }
            None => false,
        };
        // Checked, but not followed (see `AlmostReadHits::Ahead`): with 0 every back-to-back
        // sequential read over a fast interface would wait a revolution, which the validation
        // traces cannot tell from streaming (their demerits agree to the fourth digit).
        if let Some(e) = r.take("Allow almost read hits") {
            let allowed = r.int_of(e, 0, 1)?;
            self.warn(
                file,
                e.line,
                "Allow almost read hits",
                format!(
                    "`Allow almost read hits` = {allowed} is not followed: a read that the \
                     running read-ahead will reach joins it (the simulator's \
                     `device.almost_read_hits = \"{}\"` follows the file)",
                    if allowed == 1 { "head" } else { "none" }
                ),
            );
        }
        let combine_sequential_writes = r.int_or("Combine seq writes", 0, 1, 0)? == 1;
        let readahead_max_sectors = if max_ra == 0 {
            segment_sectors
        } else {
            max_ra.min(segment_sectors)
        };
        if readahead_mode != ReadAheadMode::Off && !cache_enabled {
            return Err(err(
                file,
                contread_line,
                "read-ahead needs the cache: set `Enable caching in buffer = 1` or `Buffer \
                 continuous read = 0`",
            ));
        }
        let fast_line = disk.get("Fast write level").map_or(disk.line, |e| e.line);
        let write_cache = match r.int_or("Fast write level", 0, 2, 0)? {
            0 => WriteCache::Off,
            1 => WriteCache::Limited,
            _ => WriteCache::Full,
        };
        if write_cache != WriteCache::Off && !cache_enabled {
            return Err(err(
                file,
                fast_line,
                "fast writes need the cache: set `Enable caching in buffer = 1` or `Fast write \
                 level = 0`",
            ));
        }
        let separate_write_segment = r.int_or("Use separate write segment", 0, 1, 0)? == 1;
        let write_segments_given = r.int_or("Maximum number of write segments", 0, 100_000, 1)?;
        let pool = if separate_write_segment {
            1
        } else {
            segments.max(1)
        };
        let write_segments = (write_segments_given as u32).clamp(1, pool);
        let read_hits_on_write_data = r.int_or("Allow read hits on write data", 0, 1, 0)? == 1;
        if cache_enabled && (segments == 0 || segment_sectors == 0) {
            return Err(err(
                file,
                disk.line,
                "an enabled cache needs `Number of buffer segments` and `Segment size (in blks)` \
                 of at least 1",
            ));
        }
        self.finish(r);

        // Mechanism and layout.
        let mech = self.model(&model_file, &model)?;
        let params = HddParams {
            rpm: mech.rpm,
            cylinders: mech.cylinders,
            surfaces: mech.surfaces,
            zones: mech.zones,
            seek: mech.seek,
            head_switch: mech.head_switch,
            write_settle: mech.write_settle,
            overhead,
            cache_segments: segments.max(1),
            cache_segment_sectors: segment_sectors.max(1),
            readahead_max_sectors: readahead_max_sectors.min(segment_sectors.max(1)),
            readahead_min_sectors: min_ra.min(readahead_max_sectors.min(segment_sectors.max(1))),
            cache_enabled,
            readahead_mode,
            write_cache,
            write_segments,
            separate_write_segment,
            read_hits_on_write_data,
            combine_sequential_writes,
            read_free_blocks,
            readahead_over_request,
            immediate_read,
            almost_read_hits: AlmostReadHits::Ahead,
            bus_bytes_per_s,
            queue_depth,
            queue_policy,
            spares: mech.spares,
            layout: mech.layout,
        };
        params
            .validate()
            .map_err(|e| err(file, disk.line, format!("the drive is not usable: {e}")))?;
        Ok(DiskSimDrive {
            name: disk.name.clone().unwrap_or_else(|| "disksim".into()),
            params,
            block_count: mech.block_count,
            warnings: Vec::new(),
            files: Vec::new(),
        })
    }

    fn model(&mut self, file: &str, model: &Block) -> Result<Mechanism, DiskSimError> {
        let mut r = Reader::new(file, model);
        let surfaces = r.int("Number of data surfaces", 1, 1 << 16)? as u32;
        let cylinders = r.int("Number of cylinders", 1, 1 << 30)? as u32;
        let block_count = r.int_or("Block count", 0, 1 << 48, 0)?;
        let mech_entry = r
            .take("Mechanical Model")
            .ok_or_else(|| r.missing("Mechanical Model"))?;
        let layout_entry = r
            .take("Layout Model")
            .ok_or_else(|| r.missing("Layout Model"))?;
        self.finish(r);

        let (mfile, mblock) = self.block_of(file, mech_entry, &["dm_mech_g1"])?;
        let mut m = Reader::new(&mfile, &mblock);
        let rpm = m.nonneg("Rotation speed (in rpms)")?;
        if !(1.0..=1e6).contains(&rpm) {
            let line = mblock.get("Rotation speed (in rpms)").map_or(0, |e| e.line);
            return Err(err(
                &mfile,
                line,
                format!("rpm {rpm} must be from 1 to 1,000,000"),
            ));
        }
        let head_switch_ms = m.nonneg_or("Head switch time", 0.0)?;
        let settle_ms = m.nonneg_or("Add. write settling delay", 0.0)?;
        if let Some(e) = m.take("Access time type") {
            let t = m.word(e)?.to_string();
            if t != "trackSwitchPlusRotation" {
                self.warn(
                    &mfile,
                    e.line,
                    "Access time type",
                    format!("`Access time type` = {t} is modelled as trackSwitchPlusRotation"),
                );
            }
        }
        let single_ms = m.f64_opt("Single cylinder seek time")?;
        let full_ms = m.f64_opt("Full strobe seek time")?;
        let seek_entry = m.take("Seek type").ok_or_else(|| m.missing("Seek type"))?;
        let seek_type = m.word(seek_entry)?.to_string();
        let seek = match seek_type.as_str() {
            "extracted" => {
                let e = m
                    .take("Full seek curve")
                    .ok_or_else(|| m.missing("Full seek curve"))?;
                let name = m.word(e)?.to_string();
                let text = self.read_text(&name)?;
                let mut points =
                    parse_seek_file(&text).map_err(|(line, msg)| err(&name, line, msg))?;
                if let Some(s) = single_ms {
                    if points.first().is_some_and(|p| p.0 > 1) && s > 0.0 {
                        points.insert(0, (1, s));
                    }
                }
                if let (Some(f), Some(&(last, _))) = (full_ms, points.last()) {
                    if f > 0.0 && last < cylinders.saturating_sub(1) {
                        points.push((cylinders - 1, f));
                    }
                }
                SeekCurve::Points(points)
            }
            "hpl" => {
                let e = m
                    .take("HPL seek equation values")
                    .ok_or_else(|| m.missing("HPL seek equation values"))?;
                let v = number_list(&mfile, e, 6)?;
                if !(v[0] >= 1.0 && v[0] <= f64::from(u32::MAX)) {
                    return Err(err(
                        &mfile,
                        e.line,
                        format!("the first HPL value (the boundary, cylinders) must be at least 1, found {}", v[0]),
                    ));
                }
                let single_cyl_ms = if v[5] == -1.0 {
                    None
                } else {
                    Some(single_ms.unwrap_or(v[5]))
                };
                SeekCurve::Hpl {
                    boundary_cyl: v[0] as u32,
                    a: v[1],
                    b: v[2],
                    c: v[3],
                    e: v[4],
                    single_cyl_ms,
                }
            }
            other => {
                return Err(err(
                    &mfile,
                    seek_entry.line,
                    format!(
                        "`Seek type` = {} is not supported; use `extracted` (a seek-curve file) or \
                         `hpl` (six HPL values)",
                        excerpt(other)
                    ),
                ))
            }
        };
        seek.validate()
            .map_err(|e| err(&mfile, seek_entry.line, e.to_string()))?;
        self.finish(m);

        let (lfile, lblock) =
            self.block_of(file, layout_entry, &["dm_layout_g1", "dm_layout_g4"])?;
        let period_ms = 60e3 / rpm;
        let (zones, spares, layout) = if lblock.kind == "dm_layout_g1" {
            let (zones, spares, surface_order) =
                self.layout_g1(&lfile, &lblock, surfaces, cylinders)?;
            // DiskSim starts each g1 zone's skews afresh at its `Offset of first block`, which
            // the model honours at 0 only (any other value is warned about when the zone is read).
            let layout = LayoutRules {
                zone_start: ZoneStart::AtIndex,
                surface_order,
            };
            (zones, spares, layout)
        } else {
            let (zones, note) = g4::zones(
                &lfile,
                &lblock,
                surfaces,
                cylinders,
                head_switch_ms / period_ms,
            )?;
            self.warn(&lfile, lblock.line, "dm_layout_g4", note);
            (zones, Vec::new(), LayoutRules::default())
        };
        let sectors = zones.iter().try_fold(0u64, |sum, z| {
            u64::from(z.cylinder_count())
                .checked_mul(u64::from(surfaces))?
                .checked_mul(u64::from(z.sectors_per_track))?
                .checked_add(sum)
        });
        if sectors.is_none_or(|n| n > CAPACITY_SECTORS_MAX) {
            return Err(err(
                file,
                model.line,
                format!(
                    "the layout holds more than the {CAPACITY_SECTORS_MAX} sectors (1 PiB) a \
                     drive may hold; check `Number of data surfaces`, `Number of cylinders` and \
                     `Blocks per track`"
                ),
            ));
        }
        Ok(Mechanism {
            rpm,
            cylinders,
            surfaces,
            zones,
            seek,
            head_switch: Duration::from_millis_f64(head_switch_ms.min(1e6)),
            write_settle: Duration::from_millis_f64(settle_ms.min(1e6)),
            block_count: (block_count > 0).then_some(block_count),
            spares,
            layout,
        })
    }

    fn layout_g1(
        &mut self,
        file: &str,
        layout: &Block,
        surfaces: u32,
        cylinders: u32,
    ) -> Result<(Vec<Zone>, Vec<ZoneSpares>, SurfaceOrder), DiskSimError> {
        let mut r = Reader::new(file, layout);
        let zones_entry = r.take("Zones").ok_or_else(|| r.missing("Zones"))?;
        let scheme_line = layout
            .get("Sparing scheme used")
            .map_or(layout.line, |e| e.line);
        let mapping_line = layout
            .get("LBN-to-PBN mapping scheme")
            .map_or(layout.line, |e| e.line);
        let surface_order =
            match r.int_or("LBN-to-PBN mapping scheme", 0, u64::from(u32::MAX), 0)? {
                0 => SurfaceOrder::Ascending,
                1 => SurfaceOrder::AlternatePerZone,
                2 => SurfaceOrder::AlternatePerDisk,
                n => {
                    return Err(err(
                        file,
                        mapping_line,
                        format!(
                        "`LBN-to-PBN mapping scheme` = {n} is not one of DiskSim's: use 0 (every \
                         cylinder first surface to last), 1 (odd cylinders of each zone last \
                         surface to first) or 2 (odd cylinders of the disk last to first)"
                    ),
                    ))
                }
            };
        let scheme_no = r.int_or("Sparing scheme used", 0, u64::from(u32::MAX), 0)?;
        let range_cylinders = r.int_or("Rangesize for sparing", 1, 1 << 30, 1)?;
        let scheme = sparing::Scheme::from_number(scheme_no, range_cylinders).map_err(|what| {
            err(
                file,
                scheme_line,
                format!(
                    "`Sparing scheme used` = {scheme_no} is not supported (schemes {what} are \
                     not); use 0, 2, 3, 4, 7, 8, 9 or 10"
                ),
            )
        })?;
        self.finish(r);
        let Value::List { items, line } = &zones_entry.value else {
            return Err(err(
                file,
                zones_entry.line,
                format!(
                    "`Zones` should be a list of `dm_layout_g1_zone` blocks, found {}",
                    zones_entry.value.shape()
                ),
            ));
        };
        let mut zones = Vec::with_capacity(items.len());
        let mut spares = Vec::with_capacity(items.len());
        // The runs of set-aside sectors the geometry keeps for the whole drive: each zone gets
        // what the zones before left, so that a file of many zones fails at the zone that passes
        // the bound instead of building every zone's table first.
        let mut runs_left = crate::hdd::geometry::HOLE_RUNS_MAX;
        for item in items {
            let Value::Block(z) = item else {
                return Err(err(
                    file,
                    item.line(),
                    format!(
                        "`Zones` should hold `dm_layout_g1_zone {{ ... }}` blocks, found {}",
                        item.shape()
                    ),
                ));
            };
            let mut zr = Reader::new(file, z);
            let first_cyl = zr.int("First cylinder number", 0, u64::from(u32::MAX))? as u32;
            let last_cyl = zr.int("Last cylinder number", 0, u64::from(u32::MAX))? as u32;
            let spt = zr.int("Blocks per track", 1, 1 << 24)? as u32;
            let skew = |zr: &mut Reader<'_>, key: &str| -> Result<u32, DiskSimError> {
                let v = zr.nonneg_or(key, 0.0)?;
                Ok((v.round() as u64 % u64::from(spt)) as u32)
            };
            let track_skew_sectors = skew(&mut zr, "Skew for track switch")?;
            let cyl_skew_sectors = skew(&mut zr, "Skew for cylinder switch")?;
            let spare_count = zr.int_or("Number of spares", 0, 1 << 48, 0)?;
            let front_sectors = zr.int_or("Empty space at zone front", 0, 1 << 48, 0)?;
            let mut lists: [Vec<u64>; 2] = [Vec::new(), Vec::new()];
            for (key, list) in ["slips", "defects"].into_iter().zip(lists.iter_mut()) {
                if let Some(e) = zr.take(key) {
                    *list = whole_list(file, e)?;
                    if scheme == sparing::Scheme::None && !list.is_empty() {
                        self.warn(
                            file,
                            e.line,
                            key,
                            format!(
                                "zone `{key}` are ignored with `Sparing scheme used` = 0, as \
                                 DiskSim ignores them"
                            ),
                        );
                    }
                }
            }
            let [slips, defect_list] = lists;
            if defect_list.len() % 2 != 0 {
                let line = z.get("defects").map_or(z.line, |e| e.line);
                return Err(err(
                    file,
                    line,
                    "`defects` should list (bad sector, spare sector) pairs: give an even \
                     number of values",
                ));
            }
            if scheme == sparing::Scheme::None && spare_count > 0 {
                let line = z.get("Number of spares").map_or(z.line, |e| e.line);
                self.warn(
                    file,
                    line,
                    "Number of spares",
                    "zone `Number of spares` are ignored with `Sparing scheme used` = 0, as \
                     DiskSim ignores them"
                        .into(),
                );
            }
            if scheme == sparing::Scheme::AtZoneEnd && spare_count > 0 {
                let line = z.get("Number of spares").map_or(z.line, |e| e.line);
                return Err(err(
                    file,
                    line,
                    format!(
                        "`Number of spares` = {spare_count} with `Sparing scheme used` = 7: that \
                         scheme sets one sector aside per slip and no others (DiskSim counts no \
                         spares in its capacity yet skips them in its lookup); give 0, or use \
                         scheme 4 for spares at the end of each cylinder"
                    ),
                ));
            }
            self.finish(zr);
            let zone = Zone {
                first_cyl,
                last_cyl,
                sectors_per_track: spt,
                track_skew_sectors,
                cyl_skew_sectors,
            };
            let zone_cylinders = (u64::from(last_cyl) + 1).saturating_sub(u64::from(first_cyl));
            let zone_sectors = zone_cylinders
                .checked_mul(u64::from(surfaces))
                .and_then(|t| t.checked_mul(u64::from(spt)));
            // A zone too large for any drive is refused below, by the layout's own check.
            if last_cyl >= first_cyl && zone_sectors.is_some_and(|n| n <= CAPACITY_SECTORS_MAX) {
                let zin = sparing::ZoneIn {
                    sectors_per_track: u64::from(spt),
                    surfaces: u64::from(surfaces),
                    cylinders: zone_cylinders,
                    spares: spare_count,
                    front_sectors,
                    slips,
                    defects: defect_list.chunks(2).map(|p| (p[0], p[1])).collect(),
                };
                let zs = sparing::zone_spares(scheme, &zin, runs_left).map_err(|m| {
                    err(
                        file,
                        z.line,
                        format!("the zone of cylinders {first_cyl} to {last_cyl}: {m}"),
                    )
                })?;
                runs_left = runs_left.saturating_sub(zs.holes.len());
                spares.push(zs);
            } else {
                spares.push(ZoneSpares::default());
            }
            zones.push(zone);
        }
        if spares.iter().all(|s| *s == ZoneSpares::default()) {
            spares.clear();
        }
        crate::hdd::geometry::Geometry::with_spares(cylinders, surfaces, &zones, &spares).map_err(
            |e| {
                err(
                    file,
                    *line,
                    format!("the zones describe no usable layout: {e}"),
                )
            },
        )?;
        Ok((zones, spares, surface_order))
    }
}

/// A list of whole, non-negative numbers (an empty list, or the single number 0, is none).
fn whole_list(file: &str, e: &Entry) -> Result<Vec<u64>, DiskSimError> {
    let bad = || {
        err(
            file,
            e.line,
            format!(
                "`{}` should be a list of whole sector numbers, e.g. `[ 1200, 5310 ]`",
                e.key
            ),
        )
    };
    match &e.value {
        Value::Word { .. } if is_value(&e.value, 0.0) => Ok(Vec::new()),
        Value::List { items, .. } => items
            .iter()
            .map(|i| match i {
                Value::Word { text, .. } => parse_number(text)
                    .filter(|v| v.fract() == 0.0 && *v >= 0.0 && *v < 2f64.powi(53))
                    .map(|v| v as u64)
                    .ok_or_else(bad),
                _ => Err(bad()),
            })
            .collect(),
        _ => Err(bad()),
    }
}

/// What the `dm_disk` block and its mechanics and layout give.
struct Mechanism {
    rpm: f64,
    cylinders: u32,
    surfaces: u32,
    zones: Vec<Zone>,
    seek: SeekCurve,
    head_switch: Duration,
    write_settle: Duration,
    block_count: Option<u64>,
    spares: Vec<ZoneSpares>,
    layout: LayoutRules,
}

/// A list of exactly `n` numbers.
fn number_list(file: &str, e: &Entry, n: usize) -> Result<Vec<f64>, DiskSimError> {
    let Value::List { items, .. } = &e.value else {
        return Err(err(
            file,
            e.line,
            format!(
                "`{}` should be a list of {n} numbers, found {}",
                e.key,
                e.value.shape()
            ),
        ));
    };
    let v: Option<Vec<f64>> = items
        .iter()
        .map(|i| match i {
            Value::Word { text, .. } => parse_number(text),
            _ => None,
        })
        .collect();
    match v {
        Some(v) if v.len() == n => Ok(v),
        _ => Err(err(
            file,
            e.line,
            format!("`{}` should be a list of {n} numbers", e.key),
        )),
    }
}

/// Parses a seek-curve file: an optional `Seek distances measured: N` line, then one point per
/// line, `distance, time_ms[, more columns]` (commas or blanks between). Distances must be whole,
/// at least 1 and increasing; times finite and non-negative. Errors carry the 1-based line.
pub fn parse_seek_file(text: &str) -> Result<Vec<(u32, f64)>, (u32, String)> {
    let mut points: Vec<(u32, f64)> = Vec::new();
    let mut expected: Option<(u32, usize)> = None;
    for (i, raw) in text.lines().enumerate() {
        let line_no = u32::try_from(i + 1).unwrap_or(u32::MAX);
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("Seek distances measured:") {
            let n = rest.trim().parse::<usize>().map_err(|_| {
                (
                    line_no,
                    format!(
                        "expected a count after `Seek distances measured:`, found `{}`",
                        excerpt(rest.trim())
                    ),
                )
            })?;
            expected = Some((line_no, n));
            continue;
        }
        let cols: Vec<&str> = line
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|c| !c.is_empty())
            .collect();
        if cols.len() < 2 {
            return Err((
                line_no,
                format!("expected `distance, time_ms`, found `{}`", excerpt(line)),
            ));
        }
        let d = parse_number(cols[0])
            .filter(|d| d.fract() == 0.0 && *d >= 1.0 && *d <= f64::from(u32::MAX))
            .ok_or_else(|| {
                (
                    line_no,
                    format!(
                        "the distance should be a whole number of cylinders, at least 1; found `{}`",
                        excerpt(cols[0])
                    ),
                )
            })? as u32;
        let t = parse_number(cols[1])
            .filter(|t| *t >= 0.0 && *t < 1e6)
            .ok_or_else(|| {
                (
                    line_no,
                    format!(
                        "the seek time should be a non-negative number of ms, found `{}`",
                        excerpt(cols[1])
                    ),
                )
            })?;
        if points.last().is_some_and(|&(p, _)| d <= p) {
            return Err((
                line_no,
                format!("distance {d} does not increase on the line before; sort the points"),
            ));
        }
        points.push((d, t));
    }
    if points.is_empty() {
        return Err((
            0,
            "no seek points; expected lines of `distance, time_ms`".into(),
        ));
    }
    if let Some((line, n)) = expected {
        if n != points.len() {
            return Err((
                line,
                format!(
                    "says {n} distances were measured, but the file lists {}",
                    points.len()
                ),
            ));
        }
    }
    Ok(points)
}
