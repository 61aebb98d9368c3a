//! Parsers for the block traces Foresight replays: DiskSim validation traces, MSR Cambridge CSV and
//! MQSim text traces.
//!
//! Each format is read line by line into [`TraceRecord`]s with one shared rule set: blank lines and
//! lines whose first non-blank character is `#` are skipped; every other line must have exactly the
//! format's columns, each a plain number (or the format's keyword) in range, or parsing stops with a
//! [`TraceError`] naming the file, the 1-based line and what that column should hold. Times become
//! integer nanoseconds relative to the trace's earliest record, which arrives at 0: DiskSim lines
//! carry the gap to the *next* request, so record `i` arrives at the sum of the gaps of records
//! `0..i`; MSR lines carry absolute Windows FILETIME stamps (100 ns ticks, at most 2^64 ns, the
//! year 2185) and MQSim lines absolute nanoseconds, from which the earliest record's stamp is
//! subtracted. Records that step back in time, before the first one's too, are put in order with
//! a stable sort by arrival, so equal arrivals keep their file order. None of the shipped traces
//! needs that sort. MSR byte ranges become whole sectors covering them: `lba = floor(offset / 512)` and
//! `sectors = ceil((offset + size) / 512) - lba`. All arithmetic is checked, so absurd values give an
//! error instead of wrapping, and no input makes the parser panic.
//!
//! A file is parsed as it is read, one line at a time, and never held whole; a line longer than
//! `LINE_BYTES_MAX` is refused. The simulator streams the records too ([`TraceReader`]): it holds
//! a window of [`TRACE_REORDER_RECORDS`] records read ahead and hands out the earliest, so a trace
//! whose records step back by fewer than that many comes out in the stable sort's order, and one
//! that steps back further is refused at the line that does; a trace of any length then takes the
//! same memory. Its time zero is the earliest stamp of its first window, read before the first
//! record is handed out, which is the whole file's earliest unless a record is refused. [`read_trace`] keeps a whole trace in memory instead, at most
//! [`TRACE_RECORDS_MAX`] records (a pipe of valid lines that never ends is refused at the first
//! line beyond), for the tools that compare a trace's measured times.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use foresight_core::{excerpt, Duration, Instant, Lba, SECTOR_BYTES};
use foresight_device::Op;

/// Nanoseconds in one Windows FILETIME tick (MSR timestamps and response times).
const NANOS_PER_FILETIME_TICK: u64 = 100;
/// Nanoseconds per microsecond (DiskSim times).
const NANOS_PER_MICRO: f64 = 1_000.0;

/// The most columns a format's line has.
const COLUMNS_MAX: usize = 7;

/// The trace formats [`parse_trace`] understands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TraceFormat {
    /// DiskSim validation trace: `R|W Hit|Miss lbn blocks service_us interarrival_us`.
    Disksim,
    /// MSR Cambridge CSV: `FILETIME,host,disk,Read|Write,offset_bytes,size_bytes,response_ticks`.
    Msr,
    /// MQSim text trace: `arrival_ns device lba sectors type` with type 1 = read, 0 = write.
    Mqsim,
}

impl TraceFormat {
    /// Every format, in the order their names are listed in errors.
    pub const ALL: [TraceFormat; 3] = [TraceFormat::Disksim, TraceFormat::Msr, TraceFormat::Mqsim];

    /// The name [`FromStr`] accepts for this format.
    pub const fn name(self) -> &'static str {
        match self {
            TraceFormat::Disksim => "disksim",
            TraceFormat::Msr => "msr",
            TraceFormat::Mqsim => "mqsim",
        }
    }

    /// What one line of this format looks like, for error messages.
    pub const fn line_layout(self) -> &'static str {
        match self {
            TraceFormat::Disksim => {
                "6 whitespace-separated columns `R|W Hit|Miss lbn blocks service_us interarrival_us`"
            }
            TraceFormat::Msr => {
                "7 comma-separated columns \
                 `filetime_100ns,host,disk,Read|Write,offset_bytes,size_bytes,response_100ns`"
            }
            TraceFormat::Mqsim => {
                "5 whitespace-separated columns `arrival_ns device lba sectors type(1=read,0=write)`"
            }
        }
    }

    /// Columns in one of its lines; at most `COLUMNS_MAX`.
    fn column_count(self) -> usize {
        match self {
            TraceFormat::Disksim => 6,
            TraceFormat::Msr => 7,
            TraceFormat::Mqsim => 5,
        }
    }
}

impl fmt::Display for TraceFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A trace format name that is not one of [`TraceFormat::ALL`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownTraceFormat {
    /// The name that was given.
    pub given: String,
}

impl fmt::Display for UnknownTraceFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown trace format `{}`; expected one of: ",
            self.given
        )?;
        for (i, format) in TraceFormat::ALL.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(format.name())?;
        }
        Ok(())
    }
}

impl std::error::Error for UnknownTraceFormat {}

impl FromStr for TraceFormat {
    type Err = UnknownTraceFormat;

    /// Accepts `disksim`, `msr` or `mqsim`, ignoring ASCII case and surrounding blanks.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim();
        TraceFormat::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(wanted))
            .ok_or_else(|| UnknownTraceFormat {
                given: s.to_string(),
            })
    }
}

/// One request of a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceRecord {
    /// When the request arrives, relative to the trace's earliest record (which arrives at 0; for
    /// a [`TraceReader`], the earliest of its first window).
    pub arrival: Instant,
    /// Read or write.
    pub op: Op,
    /// First sector, in 512-byte sectors.
    pub lba: Lba,
    /// Number of 512-byte sectors; at least 1.
    pub sectors: u32,
    /// Device number in the trace (0 when the format has none).
    pub device: u32,
    /// The service or response time the trace measured: DiskSim `service_us`, MSR response time
    /// (queueing included, so the demerit figure is not computed from it); `None` for MQSim.
    pub measured_service: Option<Duration>,
    /// Whether the drive's cache hit, from DiskSim's `Hit`/`Miss` column; `None` for other formats.
    pub measured_hit: Option<bool>,
}

/// Why a trace could not be read: where, and what was expected there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceError {
    /// The file name (or path) the trace came from.
    pub file: String,
    /// 1-based line number, or 0 when the error is not about one line.
    pub line: usize,
    /// What was wrong and what was expected.
    pub message: String,
}

impl TraceError {
    fn new(file: &str, line: usize, message: impl Into<String>) -> TraceError {
        TraceError {
            file: file.to_string(),
            line,
            message: message.into(),
        }
    }
}

impl fmt::Display for TraceError {
    /// `FILE:LINE: message`, or `FILE: message` when the line is 0.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}:{}: {}", self.file, self.line, self.message)
        }
    }
}

impl std::error::Error for TraceError {}

/// The most records [`read_trace`] keeps in memory: 48 bytes each (72 in a trace out of arrival
/// order, the stable sort's buffer), so 1.2 to 1.8 GB at the limit. A replay streams its trace
/// ([`TraceReader`]) and has no such limit.
pub const TRACE_RECORDS_MAX: usize = 25_000_000;

/// Reads the trace at `path` in `format`, line by line, into memory. A missing or unreadable file,
/// one that is not UTF-8 text, one with a line longer than `LINE_BYTES_MAX`, or one with more than
/// [`TRACE_RECORDS_MAX`] records, is a [`TraceError`] naming the path and the line; the rest is as
/// in [`parse_trace`]. The simulator streams a trace instead ([`TraceReader`]); this is for the
/// tools that compare a whole trace's measured times.
pub fn read_trace(path: &Path, format: TraceFormat) -> Result<Vec<TraceRecord>, TraceError> {
    read_trace_at_most(path, format, TRACE_RECORDS_MAX)
}

/// [`read_trace`] with at most `records_max` records.
pub fn read_trace_at_most(
    path: &Path,
    format: TraceFormat,
    records_max: usize,
) -> Result<Vec<TraceRecord>, TraceError> {
    let name = path.display().to_string();
    let mut parser = Parser::new(format);
    let mut records = Vec::new();
    for_each_line(path, |line_no, line| {
        if let Some(r) = parser.line(&name, line_no, line)? {
            if records.len() == records_max {
                return Err(TraceError::new(
                    &name,
                    line_no,
                    format!(
                        "the trace holds more than {records_max} records, the most this reader \
                         keeps in memory; read it in parts of at most {records_max} records"
                    ),
                ));
            }
            records.push(r);
        }
        Ok(())
    })
    .map_err(|e| e.into_trace_error(&name, format))?;
    finish(&name, format, records)
}

/// The longest line a trace may have: a record is a few dozen bytes, a comment a few hundred.
pub(crate) const LINE_BYTES_MAX: u64 = 64 << 10;

/// Why [`for_each_line`] stopped.
pub(crate) enum LineError {
    /// The file could not be opened or read, or a line is longer than `LINE_BYTES_MAX`
    /// (`line` 0: the file).
    Read {
        /// 1-based line, or 0.
        line: usize,
        /// What went wrong.
        message: String,
    },
    /// The line is not UTF-8.
    NotUtf8 {
        /// 1-based line.
        line: usize,
    },
    /// The caller's parser refused the line.
    Parse(TraceError),
}

impl LineError {
    /// As a block trace's error: the file `name` in `format`.
    fn into_trace_error(self, name: &str, format: TraceFormat) -> TraceError {
        match self {
            LineError::Read { line, message } => {
                TraceError::new(name, line, format!("cannot read {format} trace: {message}"))
            }
            LineError::NotUtf8 { line } => {
                TraceError::new(name, line, "not UTF-8 text; expected a plain-text trace")
            }
            LineError::Parse(e) => e,
        }
    }
}

/// The lines of a text file, one at a time, each read only when asked for: one line is held at a
/// time, so that a reader can stop a file that never ends (a pipe) at its limit. A line longer
/// than `LINE_BYTES_MAX` is an error: a device or pipe without line ends (`/dev/zero`) would
/// otherwise be read until memory ran out.
pub(crate) struct Lines {
    /// A file, or bytes in memory (`TraceReader::from_bytes`).
    reader: std::io::BufReader<Box<dyn std::io::Read + Send>>,
    /// The last line's bytes, line end included; at most `LINE_BYTES_MAX + 1` of them.
    bytes: Vec<u8>,
    /// The number of the last line read (0 before the first).
    line: usize,
    /// Bytes read so far, line ends included.
    bytes_read: u64,
    /// The file's length when opened (0 for a pipe or device).
    file_bytes: u64,
}

impl Lines {
    /// Opens the text file at `path`.
    pub(crate) fn open(path: &Path) -> Result<Lines, LineError> {
        let file = std::fs::File::open(path).map_err(|e| LineError::Read {
            line: 0,
            message: e.to_string(),
        })?;
        let meta = file.metadata().ok();
        // A directory opens on Linux and fails at its first read, which would name line 1.
        if meta.as_ref().is_some_and(|m| m.is_dir()) {
            return Err(LineError::Read {
                line: 0,
                message: "is a directory; give the path of a trace file".into(),
            });
        }
        Ok(Lines::new(
            Box::new(file),
            meta.filter(|m| m.is_file()).map_or(0, |m| m.len()),
        ))
    }

    /// The lines of `source`, `file_bytes` long (0: not known).
    fn new(source: Box<dyn std::io::Read + Send>, file_bytes: u64) -> Lines {
        Lines {
            reader: std::io::BufReader::new(source),
            bytes: Vec::new(),
            line: 0,
            bytes_read: 0,
            file_bytes,
        }
    }

    /// The next line with its 1-based number, without its line end (`\n` or `\r\n`, as
    /// `str::lines`); `None` at the end of the file.
    pub(crate) fn next_line(&mut self) -> Result<Option<(usize, &str)>, LineError> {
        use std::io::{BufRead, Read};
        self.line += 1;
        let line = self.line;
        self.bytes.clear();
        let n = (&mut self.reader)
            .take(LINE_BYTES_MAX + 1)
            .read_until(b'\n', &mut self.bytes)
            .map_err(|e| LineError::Read {
                line,
                message: e.to_string(),
            })?;
        if n == 0 {
            self.line -= 1;
            return Ok(None);
        }
        self.bytes_read += n as u64;
        if n as u64 > LINE_BYTES_MAX && self.bytes.last() != Some(&b'\n') {
            return Err(LineError::Read {
                line,
                message: format!(
                    "line is longer than {LINE_BYTES_MAX} bytes; expected one record per line"
                ),
            });
        }
        let text = std::str::from_utf8(&self.bytes).map_err(|_| LineError::NotUtf8 { line })?;
        let text = text.strip_suffix('\n').unwrap_or(text);
        let text = text.strip_suffix('\r').unwrap_or(text);
        Ok(Some((line, text)))
    }
}

/// Hands each line of the text file at `path` to `each` with its 1-based number, without its line
/// end, as it is read (see [`Lines`]).
pub(crate) fn for_each_line(
    path: &Path,
    mut each: impl FnMut(usize, &str) -> Result<(), TraceError>,
) -> Result<(), LineError> {
    let mut lines = Lines::open(path)?;
    while let Some((line, text)) = lines.next_line()? {
        each(line, text).map_err(LineError::Parse)?;
    }
    Ok(())
}

/// Parses the text of a trace in `format`; `file_name` only labels errors. Returns the records in
/// arrival order (see the module documentation for the rules), or the first error found. A trace
/// with no records, or with more than [`TRACE_RECORDS_MAX`], is an error.
pub fn parse_trace(
    text: &str,
    format: TraceFormat,
    file_name: &str,
) -> Result<Vec<TraceRecord>, TraceError> {
    let mut parser = Parser::new(format);
    let mut records = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if let Some(r) = parser.line(file_name, index + 1, line)? {
            if records.len() == TRACE_RECORDS_MAX {
                return Err(TraceError::new(
                    file_name,
                    index + 1,
                    format!("the trace holds more than {TRACE_RECORDS_MAX} records"),
                ));
            }
            records.push(r);
        }
    }
    finish(file_name, format, records)
}

/// The error for a trace without records.
fn no_records(file_name: &str, format: TraceFormat) -> TraceError {
    TraceError::new(
        file_name,
        0,
        format!(
            "no records: the {format} trace is empty or holds only blank and `#` comment lines; \
             expected lines of {}",
            format.line_layout()
        ),
    )
}

/// A whole trace's records in arrival order.
fn finish(
    file_name: &str,
    format: TraceFormat,
    mut records: Vec<TraceRecord>,
) -> Result<Vec<TraceRecord>, TraceError> {
    if records.is_empty() {
        return Err(no_records(file_name, format));
    }
    if records.windows(2).any(|w| w[1].arrival < w[0].arrival) {
        // `sort_by_key` is stable: records with equal arrivals keep their order in the file.
        records.sort_by_key(|r| r.arrival);
    }
    // The earliest record arrives at time zero.
    let zero = records[0].arrival;
    for r in &mut records {
        *r = at_time_zero(*r, zero);
    }
    Ok(records)
}

/// Records a [`TraceReader`] holds to put a trace in arrival order: a record may come fewer than
/// this many records later in the file than one that arrives after it (65,535 later is put in
/// order, 65,536 is refused: the record it must precede was handed out as it was read). 72 bytes
/// each, so 4.5 MiB; at most 202 bytes a record allocated (12.6 MiB), as the window's parts each
/// grow to the whole window: the queue's records and the slots' (72 bytes each), the pool's keys
/// and the heap's (24 each) and the free slots (4); and a batch of keys a quarter of the window
/// (6 bytes a record) and `READY_RECORDS_MAX` records copied out (4.5 KiB).
pub const TRACE_REORDER_RECORDS: usize = 1 << 16;

/// The most records of a [`TraceReader`]'s queue that a record stepping back may be inserted
/// behind (72 bytes each to shift); one stepping back further goes to the stepped-back part.
const INSERT_SHIFT_MAX: usize = 64;

/// The most records a [`Window`] copies out of their slots at once, just before handing them out:
/// few enough (4.5 KiB) that they are still in the first-level cache when handed out, many
/// enough that the reads of their slots overlap.
const READY_RECORDS_MAX: usize = 64;

/// The window's records over the most keys a [`Window`] sorts out of its pool at once (16,384
/// for a replay's window, 384 KiB of keys). Each batch costs a selection pass over the whole
/// pool, up to the window, so a larger batch costs fewer passes a record, and sorting it one more
/// comparison a record for each doubling. On a trace shuffled over 4,096 records, a replay with a
/// quarter took about 6% less processor time than with a sixteenth, and with a half or the whole
/// window no less, within the noise, for two or four times the keys.
const WINDOW_PER_BATCH: usize = 4;

/// One record waiting in a [`TraceReader`]'s window.
#[derive(Clone, Copy, Debug)]
struct Held {
    record: TraceRecord,
    /// Records before it in the file.
    seq: u64,
    /// Its line.
    line: usize,
    /// Bytes of the file up to the end of its line.
    end_bytes: u64,
}

impl Held {
    /// The order records are handed out in: by arrival, then by place in the file (the order of
    /// a stable sort).
    fn key(&self) -> (Instant, u64) {
        (self.record.arrival, self.seq)
    }
}

/// A stepped-back record's order, and the slot of `Window::slots` that holds it. The pool and the
/// heap move only these 24 bytes, not the record's 72.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct HeapKey {
    arrival: Instant,
    /// Unique among the records held, so `slot` never decides the order.
    seq: u64,
    slot: u32,
}

impl HeapKey {
    fn order(&self) -> (Instant, u64) {
        (self.arrival, self.seq)
    }
}

/// The records of a [`Window`] that stepped back too far for its queue, in parts ordered by key:
/// a heap of those before `batch_last`; the batch, every record up to `batch_last` that was in
/// the pool when the batch was sorted, its earliest copied out into `ready`; and the pool, those
/// after `batch_last`, unsorted.
///
/// A trace whose records are shuffled over thousands of records sends nearly every record here,
/// and the window holds up to 65,536 of them. One heap over all of them (the design before this
/// one) walked 16 levels of keys, 1.5 MiB, past a core's second-level cache, for each record
/// handed out, and then read the record from a slot anywhere in 4.5 MiB: a replay of such a
/// trace took half as long again as the same records in order. The pool takes a record by
/// appending its key. Only when its earliest record is the window's earliest are its earliest
/// keys (half the pool, at most `batch_records_max`) put first by one selection pass and sorted;
/// the batch is then handed out from its end, its records copied out of their slots a few dozen
/// at a time just before, so that the copies overlap and are still cached when handed out.
struct SteppedBack {
    /// Keys of records waiting in slots, each after `batch_last`, in no order.
    pool: Vec<HeapKey>,
    /// The earliest key of `pool` (`None` when it is empty).
    pool_first: Option<(Instant, u64)>,
    /// The last batch's keys whose records are still in slots, latest first.
    batch: Vec<HeapKey>,
    /// The last batch's next records, copied out of their slots, latest first: at most
    /// `READY_RECORDS_MAX`, all before the keys left in `batch`.
    ready: Vec<Held>,
    /// The last key of the last batch sorted (`None` before the first): the pool holds only keys
    /// after it, and a record stepping back before it waits in `heap`.
    batch_last: Option<(Instant, u64)>,
    /// Keys of records before `batch_last` that came after its batch was sorted, their records
    /// in slots: a trace whose records step back behind records that themselves stepped back.
    heap: std::collections::BinaryHeap<std::cmp::Reverse<HeapKey>>,
    /// The most keys a batch takes: a `WINDOW_PER_BATCH`th of the window.
    batch_records_max: usize,
}

impl SteppedBack {
    fn len(&self) -> usize {
        self.pool.len() + self.batch.len() + self.ready.len() + self.heap.len()
    }

    /// Records that wait in slots.
    fn in_slots(&self) -> usize {
        self.pool.len() + self.batch.len() + self.heap.len()
    }
}

/// A [`TraceReader`]'s records read ahead, in two parts: a queue sorted by arrival (`in_order`),
/// which a record arriving no earlier than its last joins at its end, at no cost for a trace in
/// order, and one stepping back behind at most `INSERT_SHIFT_MAX` of its records is inserted
/// into, a short shift for a trace whose stamps jitter; and the records stepping back further,
/// whose insertion would shift up to the whole window (`stepped_back`, see [`SteppedBack`]),
/// which wait in `slots` until they are about to be handed out, a slot freed by a copy out or a
/// pop taken by the next record. The earliest of the two parts' first records is the earliest
/// record held.
struct Window {
    in_order: std::collections::VecDeque<Held>,
    stepped_back: SteppedBack,
    /// The records of `stepped_back`'s pool, batch and heap, and free slots.
    slots: Vec<Held>,
    /// Slots of `slots` that hold no record.
    free_slots: Vec<u32>,
}

impl Window {
    /// An empty window for `window_records` records. Its parts grow as records come, so a short
    /// trace takes little; doubling from a power of two, each part's capacity stays within the
    /// bound too.
    fn new(window_records: usize) -> Window {
        Window {
            in_order: std::collections::VecDeque::new(),
            stepped_back: SteppedBack {
                pool: Vec::new(),
                pool_first: None,
                batch: Vec::new(),
                ready: Vec::new(),
                batch_last: None,
                heap: std::collections::BinaryHeap::new(),
                batch_records_max: (window_records / WINDOW_PER_BATCH).max(1),
            },
            slots: Vec::new(),
            free_slots: Vec::new(),
        }
    }

    fn len(&self) -> usize {
        self.in_order.len() + self.stepped_back.len()
    }

    fn push(&mut self, held: Held) {
        // `seq` grows, so placing a record after every one that arrives no later than it keeps
        // the queue sorted by arrival, then by place in the file.
        let arrival = held.record.arrival;
        let len = self.in_order.len();
        let reach = INSERT_SHIFT_MAX.min(len);
        // Sorted: if the record just out of reach arrives later, so does every one in reach.
        let place = if len > reach && self.in_order[len - reach - 1].record.arrival > arrival {
            None
        } else {
            (0..=reach)
                .map(|behind| len - behind)
                .find(|&i| i == 0 || self.in_order[i - 1].record.arrival <= arrival)
        };
        match place {
            Some(i) if i == len => self.in_order.push_back(held),
            Some(i) => self.in_order.insert(i, held),
            None => self.push_stepped_back(held),
        }
    }

    /// Puts `held` in a slot and its key in the pool, or in the heap if it comes before the last
    /// batch's last record.
    fn push_stepped_back(&mut self, held: Held) {
        let slot = match self.free_slots.pop() {
            Some(slot) => {
                self.slots[slot as usize] = held;
                slot
            }
            None => {
                // A new slot only when every slot holds a record of the pool, batch or heap, and at
                // most `TRACE_REORDER_RECORDS` records are held, so a slot number fits in 32
                // bits.
                assert!(
                    self.slots.len() == self.stepped_back.in_slots()
                        && self.slots.len() < TRACE_REORDER_RECORDS,
                    "a new trace window slot past {} slots for {} records in slots",
                    self.slots.len(),
                    self.stepped_back.in_slots()
                );
                self.slots.push(held);
                u32::try_from(self.slots.len() - 1).expect("slots below 2^32")
            }
        };
        let key = HeapKey {
            arrival: held.record.arrival,
            seq: held.seq,
            slot,
        };
        let sb = &mut self.stepped_back;
        if sb.batch_last.is_some_and(|last| key.order() < last) {
            sb.heap.push(std::cmp::Reverse(key));
        } else {
            sb.pool.push(key);
            if sb.pool_first.is_none_or(|first| key.order() < first) {
                sb.pool_first = Some(key.order());
            }
        }
    }

    /// Sorts the pool's earliest keys (half of them, at least one, at most `batch_records_max`)
    /// into the batch, which must be empty, as must `ready` and the heap.
    fn sort_batch(&mut self) {
        let sb = &mut self.stepped_back;
        debug_assert!(sb.batch.is_empty() && sb.ready.is_empty() && sb.heap.is_empty());
        let n = sb.pool.len();
        let take = n.div_ceil(2).min(sb.batch_records_max);
        if take == 0 {
            return;
        }
        // One pass puts the `take` earliest keys first, in no order; only they are sorted.
        if take < n {
            sb.pool.select_nth_unstable(take - 1);
        }
        let earliest = &mut sb.pool[..take];
        earliest.sort_unstable();
        sb.batch_last = Some(earliest[take - 1].order());
        // Latest first, so the batch is handed out by `Vec::pop`. Reserved exactly, as `extend`
        // would double a smaller capacity past the batch's bound.
        sb.batch.reserve_exact(take);
        sb.batch.extend(earliest.iter().rev());
        // The pool has no order: the keys left fill the batch's places from the end.
        let moved = take.min(n - take);
        sb.pool.copy_within(n - moved.., 0);
        sb.pool.truncate(n - take);
        sb.pool_first = sb.pool.iter().map(HeapKey::order).min();
    }

    /// Copies the batch's next records (at most `READY_RECORDS_MAX`) out of their slots into
    /// `ready`, which must be empty, freeing the slots.
    fn copy_ready(&mut self) {
        let sb = &mut self.stepped_back;
        debug_assert!(sb.ready.is_empty());
        let keep = sb.batch.len().saturating_sub(READY_RECORDS_MAX);
        // The batch is latest first, so its earliest keys are its last: copied in the same order,
        // the earliest record is the last of `ready` too. The slots lie anywhere in the window,
        // but no copy waits on another, so their reads overlap.
        let (slots, free_slots) = (&self.slots, &mut self.free_slots);
        sb.ready.reserve_exact(sb.batch.len() - keep);
        sb.ready.extend(sb.batch.drain(keep..).map(|key| {
            free_slots.push(key.slot);
            slots[key.slot as usize]
        }));
    }

    /// The earliest record (equal arrivals: the first in the file).
    fn pop(&mut self) -> Option<Held> {
        let queue_first = self.in_order.front().map(Held::key);
        let sb = &self.stepped_back;
        if sb.batch.is_empty()
            && sb.ready.is_empty()
            && sb.heap.is_empty()
            && sb
                .pool_first
                .is_some_and(|first| queue_first.is_none_or(|q| first < q))
        {
            // The pool is sorted only when it holds the earliest record, so a record far ahead
            // does not set the batch's last key far ahead and send the records after it to the
            // heap.
            self.sort_batch();
        }
        if self.stepped_back.ready.is_empty() && !self.stepped_back.batch.is_empty() {
            self.copy_ready();
        }
        let sb = &mut self.stepped_back;
        let batch_first = sb.ready.last().map(Held::key);
        let heap_first = sb.heap.peek().map(|std::cmp::Reverse(k)| k.order());
        // Keys are unique (`seq`), so no two candidates tie.
        let earliest = [queue_first, batch_first, heap_first]
            .into_iter()
            .enumerate()
            .filter_map(|(part, key)| key.map(|k| (k, part)))
            .min()?;
        match earliest.1 {
            0 => self.in_order.pop_front(),
            1 => sb.ready.pop(),
            _ => {
                let std::cmp::Reverse(key) = sb.heap.pop()?;
                self.free_slots.push(key.slot);
                Some(self.slots[key.slot as usize])
            }
        }
    }

    /// The bytes its parts have allocated.
    fn allocated_bytes(&self) -> usize {
        let sb = &self.stepped_back;
        (self.in_order.capacity() + self.slots.capacity() + sb.ready.capacity())
            * std::mem::size_of::<Held>()
            + (sb.pool.capacity() + sb.batch.capacity()) * std::mem::size_of::<HeapKey>()
            + sb.heap.capacity() * std::mem::size_of::<std::cmp::Reverse<HeapKey>>()
            + self.free_slots.capacity() * std::mem::size_of::<u32>()
    }
}

/// A trace read as it is replayed: [`TraceReader::next_record`] hands out its records in arrival
/// order, reading the file only as far as it must, so a trace of any length takes the same memory.
///
/// It keeps a window of at most `window_records` records read ahead, and hands out the earliest
/// of them (equal arrivals in file order), so records that step back in time within the window
/// come out as the whole-file sort ([`read_trace`]) puts them, the earliest of the first window
/// (read before any is handed out) at time zero, wherever it is in the window. A record that
/// arrives before one already handed out is an error naming its line: the stream cannot take
/// back what the replay has sent. A bad line is found when the window reaches it, up to `window_records` records
/// before the replay does; lines past where a caller stops asking are never read.
pub struct TraceReader {
    name: String,
    format: TraceFormat,
    lines: Lines,
    parser: Parser,
    /// Records read ahead.
    window: Window,
    window_records: usize,
    /// Records read after which the file is not read further (`u64::MAX`: no cap).
    records_max: u64,
    /// Whether the file has no more records to give (its end, or `records_max` reached).
    read_all: bool,
    /// The earliest arrival read so far, on the format's clock (see [`Parser::line`]).
    earliest_read: Option<Instant>,
    /// Time zero on the format's clock: the earliest arrival of the first window, set once that
    /// is read, so that any record within the window may arrive before the file's first.
    time_zero: Instant,
    /// The last record handed out: its arrival on the format's clock, and its line.
    last_out: Option<(Instant, usize)>,
    /// The largest `end_bytes` of the records handed out.
    done_bytes: u64,
    /// Records handed out.
    records_out: u64,
}

impl TraceReader {
    /// Opens the trace at `path` in `format` and reads its first `window_records` records, so
    /// that a file without records, or with a bad line among its first ones, is refused before
    /// a replay starts. `records_max` caps the records read (the file's first ones, as `head`
    /// would cut them); 0 means no cap.
    pub fn open(
        path: &Path,
        format: TraceFormat,
        records_max: u64,
        window_records: usize,
    ) -> Result<TraceReader, TraceError> {
        let name = path.display().to_string();
        let lines = Lines::open(path).map_err(|e| e.into_trace_error(&name, format))?;
        TraceReader::start(name, lines, format, records_max, window_records)
    }

    /// [`TraceReader::open`] on a trace held in memory, `name` labelling its errors: for checks
    /// that drive the reader over many inputs without a file for each.
    pub fn from_bytes(
        name: &str,
        bytes: Vec<u8>,
        format: TraceFormat,
        records_max: u64,
        window_records: usize,
    ) -> Result<TraceReader, TraceError> {
        let file_bytes = bytes.len() as u64;
        let lines = Lines::new(Box::new(std::io::Cursor::new(bytes)), file_bytes);
        TraceReader::start(name.to_string(), lines, format, records_max, window_records)
    }

    /// A reader of `lines`, its first window read.
    fn start(
        name: String,
        lines: Lines,
        format: TraceFormat,
        records_max: u64,
        window_records: usize,
    ) -> Result<TraceReader, TraceError> {
        assert!(
            (1..=TRACE_REORDER_RECORDS).contains(&window_records),
            "a trace window of {window_records} records; expected 1 to {TRACE_REORDER_RECORDS}"
        );
        let mut reader = TraceReader {
            format,
            lines,
            parser: Parser::new(format),
            window: Window::new(window_records),
            window_records,
            records_max: if records_max == 0 {
                u64::MAX
            } else {
                records_max
            },
            read_all: false,
            earliest_read: None,
            time_zero: Instant::ZERO,
            last_out: None,
            done_bytes: 0,
            records_out: 0,
            name,
        };
        reader.fill()?;
        if reader.window.len() == 0 {
            return Err(no_records(&reader.name, format));
        }
        // The first window is read, and nothing handed out: its earliest record, the first out,
        // arrives at zero, and a record read later that arrives before it steps back before a
        // record already sent (`fill`).
        reader.time_zero = reader.earliest_read.expect("a window of records");
        Ok(reader)
    }

    /// The file's name, as errors give it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Reads records until the window is full or the file has no more.
    fn fill(&mut self) -> Result<(), TraceError> {
        while !self.read_all && self.window.len() < self.window_records {
            if self.parser.records == self.records_max {
                self.read_all = true;
                break;
            }
            let line = self
                .lines
                .next_line()
                .map_err(|e| e.into_trace_error(&self.name, self.format))?;
            let Some((line_no, text)) = line else {
                self.read_all = true;
                break;
            };
            let seq = self.parser.records;
            let Some(record) = self.parser.line(&self.name, line_no, text)? else {
                continue;
            };
            if let Some((out, out_line)) = self.last_out.filter(|&(t, _)| record.arrival < t) {
                // Seconds from time zero; the record may arrive before it.
                let zero = self.time_zero.0 as i128;
                let secs = |t: Instant| (t.0 as i128 - zero) as f64 / 1e9;
                return Err(TraceError::new(
                    &self.name,
                    line_no,
                    format!(
                        "the record arrives at {:.9} s, before the record of line {out_line} \
                         ({:.9} s), which the replay has already sent: a trace is replayed as it \
                         is read and put in arrival order only within {} records; sort the \
                         trace by its time stamps first (`sort -s -n{} -k1,1`)",
                        secs(record.arrival),
                        secs(out),
                        self.window_records,
                        if self.format == TraceFormat::Msr {
                            " -t,"
                        } else {
                            ""
                        },
                    ),
                ));
            }
            if self.earliest_read.is_none_or(|t| record.arrival < t) {
                self.earliest_read = Some(record.arrival);
            }
            self.window.push(Held {
                record,
                seq,
                line: line_no,
                end_bytes: self.lines.bytes_read,
            });
        }
        assert!(
            self.window.len() <= self.window_records,
            "the trace window holds {} records, past its bound of {}",
            self.window.len(),
            self.window_records
        );
        Ok(())
    }

    /// The next record in arrival order with its line, or `None` once every record is out.
    pub fn next_record(&mut self) -> Result<Option<(usize, TraceRecord)>, TraceError> {
        self.fill()?;
        let Some(held) = self.window.pop() else {
            return Ok(None);
        };
        self.last_out = Some((held.record.arrival, held.line));
        self.done_bytes = self.done_bytes.max(held.end_bytes);
        self.records_out += 1;
        Ok(Some((held.line, at_time_zero(held.record, self.time_zero))))
    }

    /// The share of the replay handed out so far, from 0 to 1: of the file's bytes, or of
    /// `records_max` when that is the larger (a cap ends the replay before the file does, and
    /// gives a pipe its length), or, once the file's end has been read, of the records read.
    /// `None` for a pipe without a cap before its end: its length is not known.
    pub fn progress(&self) -> Option<f64> {
        if self.read_all && self.window.len() == 0 {
            return Some(1.0);
        }
        let of_file = (self.lines.file_bytes > 0)
            .then(|| self.done_bytes as f64 / self.lines.file_bytes as f64);
        let of_cap = (self.records_max != u64::MAX)
            .then(|| self.records_out as f64 / self.records_max as f64);
        // Every record is read: what is left is the window.
        let of_read = self.read_all.then(|| {
            self.records_out as f64 / (self.records_out + self.window.len() as u64) as f64
        });
        // Each share only grows, so their largest never goes backwards.
        [of_file, of_cap, of_read]
            .into_iter()
            .flatten()
            .reduce(f64::max)
            .map(|f| f.min(1.0))
    }

    /// Records handed out so far.
    pub fn records_out(&self) -> u64 {
        self.records_out
    }

    /// Bytes of the file up to the end of the last line of the records handed out.
    pub fn done_bytes(&self) -> u64 {
        self.done_bytes
    }

    /// The bytes the reader holds on the heap: its window, its line buffer and its file buffer.
    /// They do not grow with the trace's length.
    pub fn held_bytes(&self) -> usize {
        self.window.allocated_bytes() + self.lines.bytes.capacity() + self.lines.reader.capacity()
    }
}

/// A trace's records as its lines come in, each on its own: what a record's arrival depends on
/// (DiskSim's running sum of gaps) is all it keeps.
struct Parser {
    format: TraceFormat,
    /// Records parsed so far.
    records: u64,
    /// DiskSim: running sum of gaps (the next record's arrival).
    next_arrival_ns: u64,
    /// Whether a first line with the wrong column count is tried in the other formats, to name
    /// the one it reads in (not in the parsers that try it).
    guess_format: bool,
}

impl Parser {
    fn new(format: TraceFormat) -> Parser {
        Parser {
            format,
            records: 0,
            next_arrival_ns: 0,
            guess_format: true,
        }
    }

    /// Line `line_no` of the trace `file_name`, without its line end: its record, or `None` for
    /// a blank or comment line. The record's `arrival` is its stamp in nanoseconds on the
    /// format's own clock (an MSR FILETIME's since 1601, an MQSim stamp as written, a DiskSim
    /// record's sum of the gaps before it): its reader sets time zero once it knows the earliest
    /// record ([`at_time_zero`]).
    fn line<'l>(
        &mut self,
        file_name: &str,
        line_no: usize,
        raw_line: &'l str,
    ) -> Result<Option<TraceRecord>, TraceError> {
        let format = self.format;
        let line = raw_line.trim();
        if line.is_empty() || line.starts_with('#') {
            return Ok(None);
        }
        let err = |message: String| TraceError::new(file_name, line_no, message);
        // Split into a buffer on the stack: a long trace has tens of millions of lines, and
        // a vector for each cost the replay a tenth of its time in the allocator.
        let mut buf = [""; COLUMNS_MAX];
        let mut count = 0;
        let mut keep = |col: &'l str| {
            if let Some(slot) = buf.get_mut(count) {
                *slot = col;
            }
            count += 1;
        };
        match format {
            TraceFormat::Msr => line.split(',').map(str::trim).for_each(&mut keep),
            _ => line.split_whitespace().for_each(&mut keep),
        }
        if count != format.column_count() {
            // At the first record a wrong column count most likely means a wrong format; only a
            // line that reads completely in another one names it.
            let reads_as = TraceFormat::ALL
                .into_iter()
                .filter(|_| self.guess_format && self.records == 0)
                .filter(|&other| other != format)
                .find(|&other| {
                    let mut p = Parser::new(other);
                    p.guess_format = false;
                    p.line(file_name, line_no, raw_line).is_ok()
                });
            return Err(err(format!(
                "expected {}, found {} column{}{}",
                format.line_layout(),
                count,
                if count == 1 { "" } else { "s" },
                reads_as.map_or(String::new(), |f| format!(
                    "; the line reads as a {f} trace: set workload.format = \"{f}\""
                ))
            )));
        }
        let cols = &buf[..count];
        let record = match format {
            TraceFormat::Disksim => {
                let (record, gap_ns) = disksim_line(cols, self.next_arrival_ns).map_err(err)?;
                self.next_arrival_ns =
                    self.next_arrival_ns.checked_add(gap_ns).ok_or_else(|| {
                        err(format!(
                            "column 6 (interarrival_us): the arrival times add up past {} ns; \
                         expected gaps whose sum fits in 64-bit nanoseconds",
                            u64::MAX
                        ))
                    })?;
                record
            }
            TraceFormat::Msr => {
                let stamp = unsigned(
                    cols[0],
                    1,
                    "filetime_100ns, a Windows FILETIME in 100 ns ticks",
                )
                .map_err(&err)?;
                let arrival_ns = stamp.checked_mul(NANOS_PER_FILETIME_TICK).ok_or_else(|| {
                    err(format!(
                        "column 1: time stamp {stamp} is past 64-bit nanoseconds (FILETIME ticks \
                         of 100 ns since 1601, so past the year 2185); expected a Windows \
                         FILETIME"
                    ))
                })?;
                msr_line(cols, Instant(arrival_ns)).map_err(err)?
            }
            TraceFormat::Mqsim => {
                let stamp = unsigned(cols[0], 1, "arrival_ns, the arrival time in nanoseconds")
                    .map_err(&err)?;
                mqsim_line(cols, Instant(stamp)).map_err(err)?
            }
        };
        self.records += 1;
        Ok(Some(record))
    }
}

/// `record`, read by [`Parser::line`] on its format's clock, with its arrival counted from
/// `zero`, the earliest record's arrival on that clock (no later than `record`'s).
fn at_time_zero(mut record: TraceRecord, zero: Instant) -> TraceRecord {
    debug_assert!(zero <= record.arrival, "time zero is the earliest arrival");
    record.arrival = Instant(record.arrival.0 - zero.0);
    record
}

/// One DiskSim line; returns the record (arriving at `arrival_ns`) and its gap to the next request.
fn disksim_line(cols: &[&str], arrival_ns: u64) -> Result<(TraceRecord, u64), String> {
    let op = match cols[0] {
        "R" | "r" => Op::Read,
        "W" | "w" => Op::Write,
        other => {
            return Err(format!(
                "column 1 should be `R` or `W` (read or write), found `{}`",
                excerpt(other)
            ))
        }
    };
    let hit = match cols[1] {
        "Hit" | "hit" | "HIT" => true,
        "Miss" | "miss" | "MISS" => false,
        other => {
            return Err(format!(
                "column 2 should be `Hit` or `Miss` (what the drive's cache did), found `{}`",
                excerpt(other)
            ))
        }
    };
    let lba = unsigned(cols[2], 3, "lbn, the first 512-byte block")?;
    let sectors = sector_count(cols[3], 4, "blocks, the request size in 512-byte blocks")?;
    check_end(lba, sectors, 3)?;
    let service_ns = micros_to_nanos(
        cols[4],
        5,
        "service_us, the measured service time in microseconds",
    )?;
    let gap_ns = micros_to_nanos(
        cols[5],
        6,
        "interarrival_us, the gap to the next request in microseconds",
    )?;
    let record = TraceRecord {
        arrival: Instant(arrival_ns),
        op,
        lba: Lba(lba),
        sectors,
        device: 0,
        measured_service: Some(Duration(service_ns)),
        measured_hit: Some(hit),
    };
    Ok((record, gap_ns))
}

/// One MSR line, whose time stamp (column 1) has already become `arrival`.
fn msr_line(cols: &[&str], arrival: Instant) -> Result<TraceRecord, String> {
    if cols[1].is_empty() {
        return Err("column 2 should be the host name, found an empty column".to_string());
    }
    let device = unsigned_u32(cols[2], 3, "disk, the disk number")?;
    let op = if cols[3].eq_ignore_ascii_case("read") {
        Op::Read
    } else if cols[3].eq_ignore_ascii_case("write") {
        Op::Write
    } else {
        return Err(format!(
            "column 4 should be `Read` or `Write`, found `{}`",
            excerpt(cols[3])
        ));
    };
    let offset = unsigned(cols[4], 5, "offset_bytes, the byte offset on the disk")?;
    let size = unsigned(cols[5], 6, "size_bytes, the request size in bytes")?;
    if size == 0 {
        return Err("column 6 (size_bytes) should be at least 1 byte, found 0".to_string());
    }
    let end = offset.checked_add(size).ok_or_else(|| {
        format!("columns 5 and 6: offset {offset} + size {size} bytes overflows 64 bits; expected a byte range on a disk")
    })?;
    let first_sector = offset / SECTOR_BYTES;
    let sectors = end.div_ceil(SECTOR_BYTES) - first_sector;
    let sectors = u32::try_from(sectors).map_err(|_| {
        format!(
            "column 6 (size_bytes): {size} bytes span {sectors} sectors; expected at most {} sectors",
            u32::MAX
        )
    })?;
    let response = unsigned(
        cols[6],
        7,
        "response_100ns, the response time in 100 ns ticks",
    )?;
    let response_ns = response
        .checked_mul(NANOS_PER_FILETIME_TICK)
        .ok_or_else(|| {
            format!("column 7 (response_100ns): {response} ticks overflow 64-bit nanoseconds")
        })?;
    Ok(TraceRecord {
        arrival,
        op,
        lba: Lba(first_sector),
        sectors,
        device,
        measured_service: Some(Duration(response_ns)),
        measured_hit: None,
    })
}

/// One MQSim line, whose time stamp (column 1) has already become `arrival`.
fn mqsim_line(cols: &[&str], arrival: Instant) -> Result<TraceRecord, String> {
    let device = unsigned_u32(cols[1], 2, "device, the device number")?;
    let lba = unsigned(cols[2], 3, "lba, the first 512-byte sector")?;
    let sectors = sector_count(cols[3], 4, "sectors, the request size in 512-byte sectors")?;
    check_end(lba, sectors, 3)?;
    let op = match cols[4] {
        "1" => Op::Read,
        "0" => Op::Write,
        other => {
            return Err(format!(
                "column 5 should be the type, 1 (read) or 0 (write), found `{}`",
                excerpt(other)
            ))
        }
    };
    Ok(TraceRecord {
        arrival,
        op,
        lba: Lba(lba),
        sectors,
        device,
        measured_service: None,
        measured_hit: None,
    })
}

/// A non-negative integer in 64 bits; `what` names the column's meaning for the error.
fn unsigned(text: &str, column: usize, what: &str) -> Result<u64, String> {
    if !text.bytes().all(|b| b.is_ascii_digit()) || text.is_empty() {
        return Err(format!(
            "column {column} should be {what} (a non-negative integer), found `{}`",
            excerpt(text)
        ));
    }
    text.parse::<u64>().map_err(|_| {
        format!(
            "column {column} should be {what}, but `{}` does not fit in 64 bits",
            excerpt(text)
        )
    })
}

fn unsigned_u32(text: &str, column: usize, what: &str) -> Result<u32, String> {
    let value = unsigned(text, column, what)?;
    u32::try_from(value).map_err(|_| {
        format!(
            "column {column} should be {what}, but {value} is larger than {}",
            u32::MAX
        )
    })
}

/// A request size in sectors: an integer from 1 to `u32::MAX`.
fn sector_count(text: &str, column: usize, what: &str) -> Result<u32, String> {
    let value = unsigned_u32(text, column, what)?;
    if value == 0 {
        return Err(format!(
            "column {column} should be {what}, at least 1; found 0"
        ));
    }
    Ok(value)
}

/// Rejects a request whose last sector would lie past the 64-bit sector space.
fn check_end(lba: u64, sectors: u32, column: usize) -> Result<(), String> {
    match lba.checked_add(u64::from(sectors)) {
        Some(_) => Ok(()),
        None => Err(format!(
            "column {column}: sector {lba} + {sectors} sectors runs past the 64-bit sector space"
        )),
    }
}

/// A non-negative decimal number of microseconds (`663.00000`, `12`, `1.5e3`), rounded to whole
/// nanoseconds.
fn micros_to_nanos(text: &str, column: usize, what: &str) -> Result<u64, String> {
    let plain_decimal = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
        && text
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_digit() || b == b'.');
    let value = if plain_decimal {
        text.parse::<f64>().ok()
    } else {
        None
    };
    let Some(us) = value else {
        return Err(format!(
            "column {column} should be {what} (a non-negative decimal number), found `{}`",
            excerpt(text)
        ));
    };
    let ns = (us * NANOS_PER_MICRO).round();
    // 1.8e19 is just under 2^64; the comparison also rejects infinities.
    if !(0.0..1.8e19).contains(&ns) {
        return Err(format!(
            "column {column} should be {what}, but {} us is out of range",
            excerpt(text)
        ));
    }
    Ok(ns as u64)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::path::PathBuf;

    /// A trace in the wrong format was refused by its first line's column count alone; when the
    /// line reads in another format, the refusal says which (the shared data has traces of all
    /// three, and their names do not say).
    #[test]
    fn a_first_line_in_another_format_names_that_format() {
        for (line, given, right) in [
            ("938513000 4 264719034 16 0", TraceFormat::Disksim, "mqsim"),
            (
                "R Hit 4583176 4 663.0 45422.0",
                TraceFormat::Mqsim,
                "disksim",
            ),
            (
                "128166385295514663,hm,0,Write,9056014336,2048,2833",
                TraceFormat::Disksim,
                "msr",
            ),
        ] {
            let e = parse_trace(line, given, "t").unwrap_err().to_string();
            assert!(
                e.contains(&format!("workload.format = \"{right}\"")),
                "{given}: {e}"
            );
        }
        // A line no format reads gets no guess, and neither does a later line.
        let e = parse_trace("1 2 3", TraceFormat::Disksim, "t")
            .unwrap_err()
            .to_string();
        assert!(!e.contains("workload.format"), "{e}");
        let e = parse_trace(
            "R Hit 1 4 1.0 1.0\n938513000 4 264719034 16 0",
            TraceFormat::Disksim,
            "t",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("t:2:") && !e.contains("workload.format"),
            "{e}"
        );
    }

    /// The path of `rel` under the project's `shared/data`, found as `shared/data` beside the crate
    /// directory or one of its ancestors (so it resolves from the workspace and from a scratch copy).
    /// A missing file fails the test with its name rather than skipping it.
    fn shared_data(rel: &str) -> PathBuf {
        let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        for ancestor in crate_dir.ancestors() {
            let data = ancestor.join("shared").join("data");
            if data.is_dir() {
                let file = data.join(rel);
                assert!(
                    file.is_file(),
                    "test data file {} is missing",
                    file.display()
                );
                return file;
            }
        }
        panic!(
            "test data file shared/data/{rel} is missing: no `shared/data` directory beside {} or any \
             of its ancestors",
            crate_dir.display()
        );
    }

    fn read(rel: &str, format: TraceFormat) -> Vec<TraceRecord> {
        let path = shared_data(rel);
        read_trace(&path, format).unwrap_or_else(|e| panic!("{e}"))
    }

    fn assert_ordered(records: &[TraceRecord]) {
        assert_eq!(records.first().map(|r| r.arrival), Some(Instant::ZERO));
        assert!(records.windows(2).all(|w| w[0].arrival <= w[1].arrival));
        assert!(records.iter().all(|r| r.sectors >= 1));
    }

    fn us(n: u64) -> u64 {
        n * 1_000
    }

    #[test]
    fn format_names_parse() {
        assert_eq!("disksim".parse::<TraceFormat>(), Ok(TraceFormat::Disksim));
        assert_eq!(" MSR ".parse::<TraceFormat>(), Ok(TraceFormat::Msr));
        assert_eq!("mqsim".parse::<TraceFormat>(), Ok(TraceFormat::Mqsim));
        let err = "spc".parse::<TraceFormat>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown trace format `spc`; expected one of: disksim, msr, mqsim"
        );
        for f in TraceFormat::ALL {
            assert_eq!(f.to_string().parse::<TraceFormat>(), Ok(f));
        }
    }

    #[test]
    fn shipped_disksim_traces_parse() {
        // (file, first line fields, arrival of the last record in ns, reads, total sectors)
        let cases = [
            (
                "atlas10k",
                Op::Write,
                4_583_176,
                4,
                663,
                461_841_675_000,
                6569,
                63_052,
            ),
            (
                "cheetah4LP",
                Op::Read,
                8_437_604,
                4,
                10_232,
                445_409_221_000,
                6639,
                63_688,
            ),
            (
                "ibm18es",
                Op::Read,
                17_317_516,
                4,
                13_661,
                443_552_210_000,
                6582,
                62_324,
            ),
        ];
        for (name, op, lba, sectors, service_us, last_ns, reads, total_sectors) in cases {
            let records = read(&format!("disksim/{name}.trace"), TraceFormat::Disksim);
            assert_eq!(records.len(), 10_000, "{name}");
            assert_ordered(&records);
            let first = records[0];
            assert_eq!(first.op, op, "{name}");
            assert_eq!(first.lba, Lba(lba), "{name}");
            assert_eq!(first.sectors, sectors, "{name}");
            assert_eq!(first.device, 0);
            assert_eq!(
                first.measured_service,
                Some(Duration(us(service_us))),
                "{name}"
            );
            assert_eq!(first.measured_hit, Some(true));
            assert_eq!(records[9_999].arrival, Instant(last_ns), "{name}");
            assert_eq!(
                records.iter().filter(|r| r.op == Op::Read).count(),
                reads,
                "{name}"
            );
            let sum: u64 = records.iter().map(|r| u64::from(r.sectors)).sum();
            assert_eq!(sum, total_sectors, "{name}");
        }
        // atlas10k: record i arrives at the sum of the gaps of records 0..i.
        let atlas = read("disksim/atlas10k.trace", TraceFormat::Disksim);
        assert_eq!(atlas[1].arrival, Instant(us(45_422)));
        assert_eq!(atlas[2].arrival, Instant(us(45_422 + 34_200)));
        assert_eq!(atlas[2].lba, Lba(3_962_268));
        assert_eq!(atlas[2].sectors, 12);
        assert_eq!(atlas[2].measured_service, Some(Duration(us(6_657))));
    }

    #[test]
    fn shipped_msr_sample_parses() {
        let records = read("traces/msr-cambridge-hm0-sample.csv", TraceFormat::Msr);
        assert_eq!(records.len(), 1_000);
        assert_ordered(&records);
        // 128166385295514663,hm,0,Write,9056014336,2048,2833
        assert_eq!(
            records[0],
            TraceRecord {
                arrival: Instant::ZERO,
                op: Op::Write,
                lba: Lba(9_056_014_336 / 512),
                sectors: 4,
                device: 0,
                measured_service: Some(Duration(283_300)),
                measured_hit: None,
            }
        );
        // 128166385295514878,hm,0,Write,11855351808,512,2617: 215 ticks later.
        assert_eq!(records[1].arrival, Instant(21_500));
        assert_eq!(records[1].lba, Lba(23_154_984));
        assert_eq!(records[1].sectors, 1);
        // 128166386567849604,hm,0,Read,11946549248,4096,3499
        let last = records[999];
        assert_eq!(last.arrival, Instant(127_233_494_100));
        assert_eq!(
            (last.op, last.lba, last.sectors),
            (Op::Read, Lba(23_333_104), 8)
        );
        assert_eq!(last.measured_service, Some(Duration(349_900)));
        assert_eq!(records.iter().filter(|r| r.op == Op::Read).count(), 508);
    }

    #[test]
    fn shipped_tpcc_trace_parses() {
        let records = read("traces/tpcc-small.trace", TraceFormat::Mqsim);
        assert_eq!(records.len(), 6_999);
        assert_ordered(&records);
        // 938513000 4 264719034 16 0
        assert_eq!(
            records[0],
            TraceRecord {
                arrival: Instant::ZERO,
                op: Op::Write,
                lba: Lba(264_719_034),
                sectors: 16,
                device: 4,
                measured_service: None,
                measured_hit: None,
            }
        );
        // 938828000 3 197570570 16 0
        assert_eq!(records[1].arrival, Instant(315_000));
        assert_eq!(records[1].device, 3);
        // 1075002000 7 160057354 16 0
        let last = records[6_998];
        assert_eq!(last.arrival, Instant(1_075_002_000 - 938_513_000));
        assert_eq!(
            (last.device, last.lba, last.op),
            (7, Lba(160_057_354), Op::Write)
        );
        assert_eq!(records.iter().filter(|r| r.op == Op::Read).count(), 4_381);
    }

    #[test]
    fn missing_file_names_the_path() {
        let path = Path::new("/nonexistent/dir/trace.csv");
        let err = read_trace(path, TraceFormat::Msr).unwrap_err();
        assert_eq!(err.file, "/nonexistent/dir/trace.csv");
        assert_eq!(err.line, 0);
        assert!(
            err.to_string()
                .starts_with("/nonexistent/dir/trace.csv: cannot read msr trace"),
            "{err}"
        );
    }

    /// A directory opens, then fails its first read: it was reported at `DIR:1:`, a line of a
    /// file that does not exist. It is named as the path it is.
    #[test]
    fn a_directory_is_named_as_a_directory_not_at_a_line() {
        let dir = std::env::temp_dir();
        let err = read_trace(&dir, TraceFormat::Disksim).unwrap_err();
        assert_eq!(err.line, 0, "{err}");
        assert!(err.to_string().contains("is a directory"), "{err}");
        assert!(err.to_string().contains("trace file"), "{err}");
    }

    /// A trace past the record limit is refused at the first record beyond it; comment and blank
    /// lines do not count.
    #[test]
    fn a_trace_past_the_record_limit_is_refused_at_the_first_record_beyond() {
        let text = "# header\n0 0 0 8 1\n\n5 0 8 8 1\n# more\n9 0 16 8 1\n12 0 24 8 1\n";
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t");
        std::fs::write(&path, text).unwrap();
        let err = read_trace_at_most(&path, TraceFormat::Mqsim, 3).unwrap_err();
        assert_eq!(err.line, 7, "{err}");
        assert!(err.message.contains("more than 3 records"), "{err}");
        assert!(err.message.contains("parts of at most 3"), "{err}");
        let head: String = text.lines().take(6).map(|l| format!("{l}\n")).collect();
        std::fs::write(&path, head).unwrap();
        assert_eq!(
            read_trace_at_most(&path, TraceFormat::Mqsim, 3)
                .unwrap()
                .len(),
            3
        );
    }

    /// Every record of the trace at `path` as a [`TraceReader`] with a window of `window` records
    /// hands them out.
    fn stream(
        path: &Path,
        format: TraceFormat,
        window: usize,
    ) -> Result<Vec<TraceRecord>, TraceError> {
        drain(TraceReader::open(path, format, 0, window)?)
    }

    /// Every record `reader` hands out, checking that its progress never goes backwards.
    fn drain(mut reader: TraceReader) -> Result<Vec<TraceRecord>, TraceError> {
        let mut records = Vec::new();
        let mut progress = 0.0;
        while let Some((_, r)) = reader.next_record()? {
            records.push(r);
            let now = reader.progress().expect("a file's progress is known");
            assert!(now >= progress, "progress went backwards");
            progress = now;
        }
        assert_eq!(reader.progress(), Some(1.0));
        Ok(records)
    }

    /// What the streaming reader promises against the whole-file one, for the bytes of one file:
    /// with a window as long as the file, the same records or the same error; with any window,
    /// the same records, or the same error, or an earlier one refusing a record that steps back
    /// past the window.
    fn check_stream_matches_whole(bytes: &[u8], format: TraceFormat, window: usize) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fuzz");
        std::fs::write(&path, bytes).unwrap();
        let whole = read_trace(&path, format);
        let lines = bytes.split(|&b| b == b'\n').count();
        assert_eq!(
            stream(&path, format, lines.clamp(1, TRACE_REORDER_RECORDS)),
            whole,
            "{format}, a window of {lines} records"
        );
        // The same bytes from memory (the fuzz target's way in) read as the file does.
        let name = path.display().to_string();
        assert_eq!(
            TraceReader::from_bytes(&name, bytes.to_vec(), format, 0, window).and_then(drain),
            stream(&path, format, window),
            "{format}, window {window}, from memory"
        );
        match (stream(&path, format, window), &whole) {
            (Ok(streamed), Ok(whole)) => assert_eq!(&streamed, whole, "{format}, window {window}"),
            (Err(e), Ok(_)) => assert!(
                e.message.contains("which the replay has already sent"),
                "{format}, window {window}: {e}"
            ),
            (Err(e), Err(w)) => assert!(
                e == *w || (e.line <= w.line && e.message.contains("already sent")),
                "{format}, window {window}: {e} against {w}"
            ),
            (Ok(_), Err(w)) => panic!("{format}, window {window}: streamed, but whole: {w}"),
        }
    }

    /// Records that step back in time, but not past the window, come out in the order of the
    /// whole-file sort; one that steps back past it is refused at its line, naming the line of
    /// the record already sent and the fix.
    #[test]
    fn the_stream_sorts_within_its_window_and_refuses_past_it() {
        let text = "100 0 1 1 1\n300 0 2 1 1\n200 0 3 1 1\n300 0 4 1 0\n200 0 5 1 0\n";
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("q.trace");
        std::fs::write(&path, text).unwrap();
        let whole = read_trace(&path, TraceFormat::Mqsim).unwrap();
        assert_eq!(stream(&path, TraceFormat::Mqsim, 3).unwrap(), whole);
        // With two records held, line 2's (at 200 ns) is sent before line 5's (at 100 ns) is read.
        let err = stream(&path, TraceFormat::Mqsim, 2).unwrap_err();
        assert_eq!((err.line, err.file.as_str()), (5, path.to_str().unwrap()));
        assert!(err.message.contains("before the record of line 2"), "{err}");
        assert!(err.message.contains("sort -s -n -k1,1"), "{err}");
    }

    /// A record earlier than the first is put before it when the window holds both, as the
    /// whole-file sort does: time zero is the earliest stamp the first window holds. It used to be
    /// refused ("earlier than the first record's ..., which defines time zero"), though the window
    /// promised any order within it. One earlier than a record already sent is still refused.
    #[test]
    fn a_record_earlier_than_the_first_within_the_window_arrives_first() {
        let dir = tempfile::tempdir().unwrap();
        for (format, text, unit_ns) in [
            (
                TraceFormat::Mqsim,
                "1000 0 0 8 1\n500 0 8 8 1\n700 0 16 8 0\n",
                1,
            ),
            (
                TraceFormat::Msr,
                "1000,h,0,Read,0,4096,1\n500,h,0,Read,4096,4096,1\n700,h,0,Write,8192,4096,1\n",
                100,
            ),
        ] {
            let path = dir.path().join(format.name());
            std::fs::write(&path, text).unwrap();
            let whole = read_trace(&path, format).unwrap();
            let arrivals: Vec<(u64, u64)> = whole.iter().map(|r| (r.arrival.0, r.lba.0)).collect();
            assert_eq!(
                arrivals,
                [(0, 8), (200 * unit_ns, 16), (500 * unit_ns, 0)],
                "{format}"
            );
            assert_eq!(parse_trace(text, format, "t").unwrap(), whole, "{format}");
            for window in [3, TRACE_REORDER_RECORDS] {
                assert_eq!(
                    stream(&path, format, window).unwrap(),
                    whole,
                    "{format} {window}"
                );
            }
            // With two records held, the record at 500 is sent (time zero) before line 3's, at
            // 700, is read: that one is in order. With one, line 1's is sent first and line 2's
            // steps back before it.
            assert_eq!(stream(&path, format, 2).unwrap(), whole, "{format}");
            let err = stream(&path, format, 1).unwrap_err();
            assert_eq!(err.line, 2, "{format}: {err}");
            assert!(
                err.message.contains("before the record of line 1") && err.message.contains("sort"),
                "{format}: {err}"
            );
        }
    }

    /// Records that step back a few records (a trace whose stamps jitter) are put in place in the
    /// window's queue, not in its stepped-back part (then one heap): 2,000 MQSim records each
    /// stepping back by up to 8 records come out sorted without it (they all went through it, at
    /// a cost of a fifth of a replay's time against the loading build). The one stepping back
    /// further goes to the stepped-back part, and comes out in the stable sort's order. The
    /// records are drawn from a seeded generator; the seed is printed.
    #[test]
    fn records_stepping_back_a_little_are_put_in_place_without_the_heap() {
        let seed = 0x6a69_7474;
        println!("seed {seed:#x}");
        let mut rng = foresight_core::Rng::new(seed);
        let mut text = String::from("0 0 0 1 1\n");
        for i in 1..2_000u64 {
            let stamp = 1_000 + i * 10 - rng.below(80);
            text.push_str(&format!("{stamp} 0 {i} 1 1\n"));
        }
        // Steps back past every record but the first: the heap's.
        text.push_str("1 0 2000 1 1\n");
        text.push_str("30000 0 2001 1 1\n");
        let Replayed {
            whole,
            got,
            heap_max,
            ..
        } = replay_mqsim_text(&text, 4_096);
        assert_eq!(got, whole, "seed {seed:#x}");
        assert_eq!(
            heap_max, 1,
            "seed {seed:#x}: the heap held {heap_max} records"
        );
    }

    /// What [`replay_mqsim_text`] saw: the whole-file parse, the records the window handed out,
    /// the most records its stepped-back part held at once (`heap_max`, from when that part was
    /// one heap), the most keys its heap and its batch held at once, and the slots it had made by
    /// the end.
    struct Replayed {
        whole: Vec<TraceRecord>,
        got: Vec<TraceRecord>,
        heap_max: usize,
        heap_keys_max: usize,
        batch_keys_max: usize,
        slots: usize,
    }

    /// Replays MQSim `text` through a window of `window_records`.
    fn replay_mqsim_text(text: &str, window_records: usize) -> Replayed {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("window.trace");
        std::fs::write(&path, text).unwrap();
        let whole = read_trace(&path, TraceFormat::Mqsim).unwrap();
        let mut reader = TraceReader::open(&path, TraceFormat::Mqsim, 0, window_records).unwrap();
        let (mut got, mut heap_max, mut heap_keys_max, mut batch_keys_max) = (Vec::new(), 0, 0, 0);
        while let Some((_, r)) = reader.next_record().unwrap() {
            got.push(r);
            let stepped_back = &reader.window.stepped_back;
            heap_max = heap_max.max(stepped_back.len());
            heap_keys_max = heap_keys_max.max(stepped_back.heap.len());
            // The batch's keys were one batch with the records copied out of it; read after a
            // record is handed out, so at most one less than the batch sorted.
            batch_keys_max =
                batch_keys_max.max(stepped_back.batch.len() + stepped_back.ready.len());
        }
        let slots = reader.window.slots.len();
        Replayed {
            whole,
            got,
            heap_max,
            heap_keys_max,
            batch_keys_max,
            slots,
        }
    }

    /// Records stepping back by hundreds of records go through the window's stepped-back part
    /// (then one heap), whose records wait in slots that copies out free and later pushes take
    /// again: they come out in the whole-file sort's order, equal stamps in file order. The records are drawn from a seeded generator;
    /// the seed is printed.
    #[test]
    fn records_stepping_back_far_come_out_through_the_heap_in_sorted_order() {
        let seed = 0x6865_6170;
        println!("seed {seed:#x}");
        let mut rng = foresight_core::Rng::new(seed);
        let mut text = String::from("0 0 0 1 1\n");
        for i in 1..20_000u64 {
            // Coarse stamps, so many are equal; up to about 500 records back.
            let stamp = (1_000 + i * 10 + rng.below(5_000)) / 20 * 20;
            text.push_str(&format!("{stamp} 0 {i} 1 1\n"));
        }
        let Replayed {
            whole,
            got,
            heap_max,
            slots,
            ..
        } = replay_mqsim_text(&text, 2_048);
        assert!(heap_max > 100, "seed {seed:#x}: the heap held {heap_max}");
        assert!(slots <= 2_048, "seed {seed:#x}: {slots} slots");
        assert_eq!(got, whole, "seed {seed:#x}");
    }

    /// MQSim text of `records` records whose stamps rise by 10 ns a record, rounded down to
    /// `coarse` ns so that many are equal, shuffled within blocks of `block` records after the
    /// first (the earliest, at 0), drawn from `rng`.
    fn shuffled_in_blocks(
        rng: &mut foresight_core::Rng,
        records: u64,
        block: usize,
        coarse: u64,
    ) -> Vec<(u64, u64)> {
        let mut lines: Vec<(u64, u64)> = (1..records)
            .map(|i| ((1_000 + i * 10) / coarse * coarse, i))
            .collect();
        for chunk in lines.chunks_mut(block) {
            // Fisher-Yates, from the seeded generator.
            for i in (1..chunk.len()).rev() {
                chunk.swap(i, rng.below(i as u64 + 1) as usize);
            }
        }
        lines.insert(0, (0, 0));
        lines
    }

    fn mqsim_text(lines: &[(u64, u64)]) -> String {
        lines
            .iter()
            .map(|(stamp, lba)| format!("{stamp} 0 {lba} 1 1\n"))
            .collect()
    }

    /// A trace whose records are shuffled within blocks of 4,096 sends nearly every record past
    /// the window's queue. They used to wait in one heap over the whole window, walked for each
    /// record handed out, which made a replay of such a trace half as slow again as the same
    /// records in order; now they are sorted a batch at a time, a quarter of the window at most,
    /// and the heap, for records stepping back behind a batch, holds none of them. They come out
    /// in the whole-file sort's order, equal stamps in file order. The shuffle is drawn from a
    /// seeded generator; the seed is printed.
    #[test]
    fn records_shuffled_over_thousands_come_out_in_sorted_batches_not_through_a_heap() {
        let seed = 0x7368_7566;
        println!("seed {seed:#x}");
        let mut rng = foresight_core::Rng::new(seed);
        let text = mqsim_text(&shuffled_in_blocks(&mut rng, 200_000, 4_096, 40));
        let Replayed {
            whole,
            got,
            heap_max,
            heap_keys_max,
            batch_keys_max,
            ..
        } = replay_mqsim_text(&text, TRACE_REORDER_RECORDS);
        assert!(
            heap_max > TRACE_REORDER_RECORDS / 2,
            "seed {seed:#x}: {heap_max} records stepped back"
        );
        assert_eq!(
            heap_keys_max, 0,
            "seed {seed:#x}: the heap held {heap_keys_max} keys"
        );
        assert_eq!(
            batch_keys_max + 1,
            TRACE_REORDER_RECORDS / WINDOW_PER_BATCH,
            "seed {seed:#x}: the largest batch"
        );
        assert!(
            got == whole,
            "seed {seed:#x}: not the whole-file sort's order"
        );
    }

    /// Records that step back behind a batch already sorted, across most of the window, wait in
    /// the heap, and come out in the whole-file sort's order with the batches' and the queue's:
    /// blocks of 512 shuffled records through a window of 4,096, one record in 50 moved 3,000
    /// records later in the file. The records are drawn from a seeded generator; the seed is
    /// printed.
    #[test]
    fn records_stepping_back_behind_a_sorted_batch_wait_in_the_heap() {
        let seed = 0x6265_6869;
        println!("seed {seed:#x}");
        let mut rng = foresight_core::Rng::new(seed);
        let mut lines = shuffled_in_blocks(&mut rng, 60_000, 512, 20);
        for i in (1..lines.len() - 3_000).step_by(50) {
            let late = lines.remove(i);
            lines.insert(i + 3_000, late);
        }
        let Replayed {
            whole,
            got,
            heap_keys_max,
            batch_keys_max,
            slots,
            ..
        } = replay_mqsim_text(&mqsim_text(&lines), 4_096);
        assert!(
            heap_keys_max > 10,
            "seed {seed:#x}: the heap held {heap_keys_max} keys"
        );
        assert_eq!(
            batch_keys_max + 1,
            1_024,
            "seed {seed:#x}: the largest batch"
        );
        assert!(slots <= 4_096, "seed {seed:#x}: {slots} slots");
        assert!(
            got == whole,
            "seed {seed:#x}: not the whole-file sort's order"
        );
    }

    /// `records_max` replays a trace's first records, as `head` cuts it, and 0 replays it whole.
    #[test]
    fn the_stream_stops_at_its_record_cap() {
        let text = "# c\n0 0 1 1 1\n\n10 0 2 1 1\n5 0 3 1 1\nbad line\n";
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t");
        std::fs::write(&path, text).unwrap();
        for (cap, lbas) in [(1, vec![1]), (2, vec![1, 2]), (3, vec![1, 3, 2])] {
            let mut reader = TraceReader::open(&path, TraceFormat::Mqsim, cap, 4).unwrap();
            let mut got = Vec::new();
            while let Some((_, r)) = reader.next_record().unwrap() {
                got.push(r.lba.0);
            }
            assert_eq!(got, lbas, "cap {cap}");
        }
        let err = stream(&path, TraceFormat::Mqsim, 4).unwrap_err();
        assert_eq!(err.line, 6, "{err}");
    }

    /// The reader's memory stays within its window's bound however long the trace: here 2 million
    /// MSR records whose stamps step back within the window, read through. (It used to be read
    /// whole, 56 to 72 bytes a record.) The records are drawn from a seeded generator; the seed is
    /// printed.
    #[test]
    fn a_long_trace_streams_in_bounded_memory() {
        use std::io::Write;
        const RECORDS: u64 = 2_000_000;
        let seed = 0x7472_6163;
        println!("seed {seed:#x}");
        let mut rng = foresight_core::Rng::new(seed);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("long.csv");
        let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        for i in 0..RECORDS {
            // Stamps jitter by up to 1,000 records' worth, never to the first's or before it.
            let jitter = if i == 0 { 0 } else { 1 + rng.below(100_000) };
            let stamp = 1_000_000 + i * 100 + jitter;
            let offset = rng.below(1 << 30) * 512;
            writeln!(out, "{stamp},h,0,Read,{offset},4096,10").unwrap();
        }
        out.flush().unwrap();
        drop(out);
        let bound = TRACE_REORDER_RECORDS
            * (2 * std::mem::size_of::<Held>() + 2 * std::mem::size_of::<HeapKey>() + 4)
            + TRACE_REORDER_RECORDS / WINDOW_PER_BATCH * std::mem::size_of::<HeapKey>()
            + READY_RECORDS_MAX * std::mem::size_of::<Held>()
            + 2 * (LINE_BYTES_MAX as usize + 1)
            + (64 << 10);
        let mut reader =
            TraceReader::open(&path, TraceFormat::Msr, 0, TRACE_REORDER_RECORDS).unwrap();
        let (mut count, mut last, mut held_max) = (0u64, Instant::ZERO, 0);
        while let Some((_, r)) = reader.next_record().unwrap() {
            assert!(
                r.arrival >= last,
                "seed {seed:#x}: out of order at record {count}"
            );
            last = r.arrival;
            count += 1;
            held_max = held_max.max(reader.held_bytes());
        }
        assert_eq!(count, RECORDS, "seed {seed:#x}");
        assert!(
            held_max <= bound,
            "seed {seed:#x}: the reader held {held_max} bytes, past its bound of {bound}"
        );
    }

    /// A pipe that gives `line(0)`, `line(1)`, ... for ever, in a new directory of its own
    /// (`name` starts its name), whose guard removes both when dropped, also when the test
    /// fails; its path; and the thread that writes it, which ends once the reader closes the pipe.
    #[cfg(target_os = "linux")]
    pub(crate) fn endless_pipe(
        name: &str,
        line: fn(u64) -> String,
    ) -> (tempfile::TempDir, PathBuf, std::thread::JoinHandle<()>) {
        let dir = tempfile::Builder::new()
            .prefix(&format!("foresight-{name}-"))
            .tempdir()
            .expect("making a temporary directory");
        let path = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .expect("mkfifo runs");
        assert!(made.success(), "mkfifo {}", path.display());
        let fifo = path.clone();
        let writer = std::thread::spawn(move || {
            use std::io::Write;
            let mut out = std::io::BufWriter::new(std::fs::File::create(&fifo).expect("opens"));
            // A write fails once the reader has closed its end: the end of the test.
            for i in 0.. {
                if out.write_all(line(i).as_bytes()).is_err() {
                    break;
                }
            }
        });
        (dir, path, writer)
    }

    /// A trace fed from a pipe of valid lines that never ends used to be read whole before it
    /// was parsed, so it grew until memory ran out; it is now refused at its first record past
    /// the limit (here 1,000), having held no more than that.
    #[cfg(target_os = "linux")]
    #[test]
    fn an_endless_pipe_of_records_is_refused_past_the_record_limit() {
        let (_dir, path, writer) = endless_pipe("endless-trace", |_| "0 0 8 8 1\n".into());
        let err = read_trace_at_most(&path, TraceFormat::Mqsim, 1_000).unwrap_err();
        writer.join().expect("the writer ends");
        assert_eq!((err.file, err.line), (path.display().to_string(), 1_001));
        assert!(
            err.message.contains("more than 1000 records"),
            "{}",
            err.message
        );
    }

    /// A file without line ends (`/dev/zero`, a device or pipe that never ends) is refused at
    /// its first line once that line runs past any record's length; it used to be read until
    /// memory ran out.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_line_without_end_is_refused_at_the_line_bound() {
        let err = read_trace(Path::new("/dev/zero"), TraceFormat::Mqsim).unwrap_err();
        assert_eq!((err.file.as_str(), err.line), ("/dev/zero", 1));
        assert!(err.message.contains("longer than"), "{err}");
    }

    #[test]
    fn comments_blank_lines_and_crlf_are_skipped() {
        let text =
            "# header\r\n\r\n   \nR Miss 100 8 1500.5 10\r\n  # indented comment\nW Hit 7 1 2 0\n";
        let records = parse_trace(text, TraceFormat::Disksim, "t").unwrap();
        assert_eq!(records.len(), 2);
        assert_eq!(records[0].measured_hit, Some(false));
        assert_eq!(records[0].measured_service, Some(Duration(1_500_500)));
        assert_eq!(records[1].arrival, Instant(10_000));
    }

    #[test]
    fn disksim_arrival_is_the_sum_of_earlier_gaps() {
        let text = "R Hit 0 1 1 5\nR Hit 1 1 1 7\nR Hit 2 1 1 1000000\n";
        let arrivals: Vec<u64> = parse_trace(text, TraceFormat::Disksim, "t")
            .unwrap()
            .iter()
            .map(|r| r.arrival.as_nanos())
            .collect();
        assert_eq!(arrivals, [0, 5_000, 12_000]);
    }

    #[test]
    fn msr_unaligned_ranges_cover_whole_sectors() {
        let text = "100,h,2,Read,1000,100,5\n200,h,2,Write,1023,2,5\n300,h,2,Read,512,512,5\n";
        let records = parse_trace(text, TraceFormat::Msr, "t").unwrap();
        // Bytes 1000..1100 lie in sectors 1 and 2; bytes 1023..1025 in sectors 1 and 2; 512..1024 in 1.
        let got: Vec<(u64, u32)> = records.iter().map(|r| (r.lba.0, r.sectors)).collect();
        assert_eq!(got, [(1, 2), (1, 2), (1, 1)]);
        assert_eq!(records[1].arrival, Instant(10_000));
        assert_eq!(records[2].device, 2);
    }

    #[test]
    fn out_of_order_records_are_sorted_stably() {
        let text = "100 0 1 1 1\n300 0 2 1 1\n200 0 3 1 1\n300 0 4 1 0\n200 0 5 1 0\n";
        let records = parse_trace(text, TraceFormat::Mqsim, "t").unwrap();
        let got: Vec<(u64, u64)> = records.iter().map(|r| (r.arrival.0, r.lba.0)).collect();
        assert_eq!(got, [(0, 1), (100, 3), (100, 5), (200, 2), (200, 4)]);
    }

    /// The earliest record arrives at time zero, wherever it is in the file; a FILETIME too late
    /// for 64-bit nanoseconds is refused at its line (it used to be taken when the first record's
    /// was as late, its span from it fitting).
    #[test]
    fn the_earliest_stamp_is_time_zero_and_one_past_64_bit_nanoseconds_is_an_error() {
        let records =
            parse_trace("500 0 1 1 1\n# c\n400 0 2 1 1\n", TraceFormat::Mqsim, "q").unwrap();
        let got: Vec<(u64, u64)> = records.iter().map(|r| (r.arrival.0, r.lba.0)).collect();
        assert_eq!(got, [(0, 2), (100, 1)]);
        let late = u64::MAX / NANOS_PER_FILETIME_TICK + 1;
        let err = parse_trace(
            &format!("{late},h,0,Read,0,512,1\n{late},h,0,Read,0,512,1\n"),
            TraceFormat::Msr,
            "m.csv",
        )
        .unwrap_err();
        assert_eq!((err.file.as_str(), err.line), ("m.csv", 1));
        assert!(
            err.message.contains("column 1") && err.message.contains("FILETIME"),
            "{err}"
        );
    }

    #[test]
    fn malformed_lines_name_file_line_and_expectation() {
        let cases: [(TraceFormat, &str, usize, &str); 16] = [
            (
                TraceFormat::Disksim,
                "R Hit 1 1 1 1\nR Hit 1 1 1\n",
                2,
                "6 whitespace-separated columns",
            ),
            (
                TraceFormat::Disksim,
                "\n\nX Hit 1 1 1 1\n",
                3,
                "column 1 should be `R` or `W`",
            ),
            (
                TraceFormat::Disksim,
                "R Maybe 1 1 1 1\n",
                1,
                "column 2 should be `Hit` or `Miss`",
            ),
            (
                TraceFormat::Disksim,
                "R Hit -1 1 1 1\n",
                1,
                "column 3 should be lbn",
            ),
            (TraceFormat::Disksim, "R Hit 1 0 1 1\n", 1, "at least 1"),
            (
                TraceFormat::Disksim,
                "R Hit 1 1 nan 1\n",
                1,
                "column 5 should be service_us",
            ),
            (
                TraceFormat::Disksim,
                "R Hit 1 1 1 1e300\n",
                1,
                "out of range",
            ),
            (
                TraceFormat::Disksim,
                "R Hit 1 1 1 10000000000000000\nR Hit 1 1 1 10000000000000000\nR Hit 1 1 1 1\n",
                2,
                "add up past",
            ),
            (
                TraceFormat::Disksim,
                "R Hit 18446744073709551615 2 1 1\n",
                1,
                "64-bit sector space",
            ),
            (
                TraceFormat::Msr,
                "1,h,0,Read,0,512,1\n2,h,0,Read,0,0,1\n",
                2,
                "at least 1 byte",
            ),
            (
                TraceFormat::Msr,
                "1,h,0,Trim,0,512,1\n",
                1,
                "column 4 should be `Read` or `Write`",
            ),
            (
                TraceFormat::Msr,
                "1,h,0,Read,0,512\n",
                1,
                "7 comma-separated columns",
            ),
            (
                TraceFormat::Msr,
                "1,h,0,Read,18446744073709551615,512,1\n",
                1,
                "overflows 64 bits",
            ),
            (
                TraceFormat::Msr,
                "1,h,0,Read,0,99999999999999,1\n",
                1,
                "expected at most",
            ),
            (
                TraceFormat::Mqsim,
                "1 0 5 8 2\n",
                1,
                "column 5 should be the type",
            ),
            (
                TraceFormat::Mqsim,
                "1 0 5 99999999999999999999 1\n",
                1,
                "does not fit in 64 bits",
            ),
        ];
        for (format, text, line, needle) in cases {
            let err = parse_trace(text, format, "bad.trace").unwrap_err();
            assert_eq!(err.line, line, "{format} {text:?}: {err}");
            assert_eq!(err.file, "bad.trace");
            assert!(err.message.contains(needle), "{format} {text:?}: {err}");
            assert!(
                err.to_string().starts_with(&format!("bad.trace:{line}: ")),
                "{err}"
            );
        }
    }

    #[test]
    fn a_trace_without_records_is_an_error() {
        for format in TraceFormat::ALL {
            for text in ["", "\n\n", "# only a comment\n   \n"] {
                let err = parse_trace(text, format, "empty.trace").unwrap_err();
                assert_eq!(err.line, 0);
                assert!(err.message.starts_with("no records"), "{err}");
                assert!(
                    err.to_string().starts_with("empty.trace: no records"),
                    "{err}"
                );
            }
        }
    }

    const VALID_LINES: [(TraceFormat, &str); 3] = [
        (
            TraceFormat::Disksim,
            "W Hit    4583176   4    663.00000  45422.00000\nR Hit    3962268  12   6657.00000  64047.00000\n\
             R Miss 3962296 16 1825.00000 36016.00000\n",
        ),
        (
            TraceFormat::Msr,
            "128166385295514663,hm,0,Write,9056014336,2048,2833\n\
             128166385295514878,hm,0,Write,11855351808,512,2617\n\
             128166385301451520,hm,1,Read,3163095040,40960,3438\n",
        ),
        (
            TraceFormat::Mqsim,
            "938513000 4 264719034 16 0\n938828000 3 197570570 16 0\n938944000 13 93230992 32 1\n",
        ),
    ];

    /// Tokens that are likely to hit parser edge cases when spliced into a line.
    fn nasty_token() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(String::new()),
            Just("18446744073709551615".to_string()),
            Just("18446744073709551616".to_string()),
            Just("4294967295".to_string()),
            Just("4294967296".to_string()),
            Just("-1".to_string()),
            Just("0".to_string()),
            Just("1e308".to_string()),
            Just("NaN".to_string()),
            Just("inf".to_string()),
            Just(",".to_string()),
            Just("#".to_string()),
            Just("\u{00e9}\u{1f600}".to_string()),
            any::<u64>().prop_map(|v| v.to_string()),
            "[ -~]{0,12}",
        ]
    }

    #[derive(Clone, Debug)]
    enum Mutation {
        ReplaceToken(usize, String),
        DeleteToken(usize),
        InsertChar(usize, char),
        DuplicateLine(usize),
        SwapLines(usize, usize),
        Truncate(usize),
    }

    fn mutation() -> impl Strategy<Value = Mutation> {
        prop_oneof![
            (any::<usize>(), nasty_token()).prop_map(|(i, t)| Mutation::ReplaceToken(i, t)),
            any::<usize>().prop_map(Mutation::DeleteToken),
            (any::<usize>(), any::<char>()).prop_map(|(i, c)| Mutation::InsertChar(i, c)),
            any::<usize>().prop_map(Mutation::DuplicateLine),
            (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
            any::<usize>().prop_map(Mutation::Truncate),
        ]
    }

    fn apply(text: &str, format: TraceFormat, mutations: &[Mutation]) -> String {
        let sep = if format == TraceFormat::Msr { "," } else { " " };
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        for m in mutations {
            if lines.is_empty() {
                break;
            }
            let n = lines.len();
            match m {
                Mutation::ReplaceToken(i, _) | Mutation::DeleteToken(i) => {
                    let line = &mut lines[i % n];
                    let mut cols: Vec<String> = if sep == "," {
                        line.split(',').map(str::to_string).collect()
                    } else {
                        line.split_whitespace().map(str::to_string).collect()
                    };
                    if !cols.is_empty() {
                        let k = (i / n) % cols.len();
                        match m {
                            Mutation::ReplaceToken(_, t) => cols[k] = t.clone(),
                            _ => {
                                cols.remove(k);
                            }
                        }
                    }
                    *line = cols.join(sep);
                }
                Mutation::InsertChar(i, c) => {
                    let line = &mut lines[i % n];
                    let chars: Vec<char> = line.chars().collect();
                    let at = (i / n) % (chars.len() + 1);
                    *line = chars[..at]
                        .iter()
                        .chain(std::iter::once(c))
                        .chain(&chars[at..])
                        .collect();
                }
                Mutation::DuplicateLine(i) => {
                    let copy = lines[i % n].clone();
                    lines.insert(i % n, copy);
                }
                Mutation::SwapLines(a, b) => lines.swap(a % n, b % n),
                Mutation::Truncate(i) => lines.truncate(i % (n + 1)),
            }
        }
        lines.join("\n")
    }

    /// Checks what every successful parse promises and what every error promises.
    fn check_outcome(text: &str, format: TraceFormat) {
        match parse_trace(text, format, "fuzz") {
            Ok(records) => {
                assert!(!records.is_empty());
                assert_ordered(&records);
            }
            Err(e) => {
                assert_eq!(e.file, "fuzz");
                assert!(
                    e.line <= text.lines().count(),
                    "line {} of {}",
                    e.line,
                    text.lines().count()
                );
                assert!(!e.message.is_empty());
            }
        }
    }

    // Failing cases are saved by proptest's default failure persistence (a `proptest-regressions`
    // file beside the source) and replayed first on later runs.
    proptest! {
        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            let text = String::from_utf8_lossy(&bytes);
            for format in TraceFormat::ALL {
                check_outcome(&text, format);
            }
        }

        /// The streaming reader on any bytes: no panic, and what the whole-file reader gives.
        #[test]
        fn streamed_random_bytes_read_as_the_whole_file(
            bytes in proptest::collection::vec(any::<u8>(), 0..400),
            window in 1usize..6,
        ) {
            for format in TraceFormat::ALL {
                check_stream_matches_whole(&bytes, format, window);
            }
        }

        /// Valid lines with mutations (swapped and duplicated lines step back in time): the
        /// streaming reader gives the whole-file reader's records.
        #[test]
        fn streamed_mutated_lines_read_as_the_whole_file(
            which in 0..VALID_LINES.len(),
            mutations in proptest::collection::vec(mutation(), 0..6),
            window in 1usize..6,
        ) {
            let (format, text) = VALID_LINES[which];
            let mutated = apply(text, format, &mutations);
            check_stream_matches_whole(mutated.as_bytes(), format, window);
        }

        /// Up to 3,000 records whose stamps step back by up to 400 records, coarse so that many
        /// are equal, through windows from one record to 1,023 (the queue's inserts and its
        /// heap both): the order handed out is the stable whole-file sort's, or the trace is
        /// refused at a record stepping back past the window.
        #[test]
        fn records_stepping_back_come_out_in_the_stable_sorts_order(
            jitters in proptest::collection::vec(0u64..4_000, 1..3_000),
            window in 1usize..1_024,
            coarse in 1u64..40,
        ) {
            // The first record's stamp is later than those of up to 20 records after it: within
            // the window they arrive before it, as in the whole-file sort; past it, one is refused.
            let text: String = std::iter::once("1200 0 0 1 1\n".to_string())
                .chain(jitters.iter().enumerate().map(|(i, j)| {
                    let stamp = (1_000 + i as u64 * 10 + j) / coarse * coarse;
                    format!("{stamp} 0 {} 1 1\n", i + 1)
                }))
                .collect();
            let whole = parse_trace(&text, TraceFormat::Mqsim, "prop").unwrap();
            let streamed =
                TraceReader::from_bytes("prop", text.into_bytes(), TraceFormat::Mqsim, 0, window)
                    .and_then(drain);
            match streamed {
                Ok(got) => prop_assert_eq!(got, whole),
                Err(e) => prop_assert!(e.message.contains("already sent"), "{}", e),
            }
        }

        #[test]
        fn random_printable_lines_never_panic(text in "([ -~]{0,40}\n){0,8}") {
            for format in TraceFormat::ALL {
                check_outcome(&text, format);
            }
        }

        #[test]
        fn mutated_valid_lines_never_panic(
            which in 0..VALID_LINES.len(),
            mutations in proptest::collection::vec(mutation(), 0..6),
        ) {
            let (format, text) = VALID_LINES[which];
            let mutated = apply(text, format, &mutations);
            check_outcome(&mutated, format);
            if mutations.is_empty() {
                prop_assert_eq!(parse_trace(&mutated, format, "fuzz").map(|r| r.len()), Ok(3));
            }
        }
    }
}
