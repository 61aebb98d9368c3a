//! What a run measured, in the JSON shape of DESIGN.md section 7.
//!
//! Field order is fixed by the struct, and every value is computed from simulated events only
//! (except `wall_s`), so the same config and seed print byte-identical JSON apart from `wall_s`.
//!
//! Per-request records (`--requests-out`) are not kept: each driver hands every record to the
//! caller's [`RequestSink`] as its request completes (the CLI's writes CSV through a bounded
//! buffer), so a run's memory does not grow with its requests. A sink that fails stops the run.

use std::fmt;
use std::io::{self, BufWriter, Write};

use serde::Serialize;

/// Where device time went, summed over every device request (seconds).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct BreakdownReport {
    /// Arm movement.
    pub seek_s: f64,
    /// Rotational waits and head switches.
    pub rotate_s: f64,
    /// Media and bus transfer.
    pub transfer_s: f64,
    /// Waiting in the host block queue and the device's command queue (in a `[dfs]` run, the
    /// device's command queues only: its CFQ-like queue is the model's, outside the host stack).
    pub queue_s: f64,
    /// Controller command overhead.
    pub overhead_s: f64,
}

impl BreakdownReport {
    /// The device model's breakdown in seconds, as every driver reports it.
    pub fn from_device(b: &foresight_device::Breakdown) -> BreakdownReport {
        BreakdownReport {
            seek_s: b.seek.as_secs_f64(),
            rotate_s: b.rotate.as_secs_f64(),
            transfer_s: b.transfer.as_secs_f64(),
            queue_s: b.queue.as_secs_f64(),
            overhead_s: b.overhead.as_secs_f64(),
        }
    }
}

/// What one member disk of the volume did: an uneven share of the work (one member busy while
/// the others idle, so that every stream waits on it) shows here and in no total.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct MemberReport {
    /// Requests the member served.
    pub requests: u64,
    /// Bytes the member served.
    pub bytes: u64,
    /// Of those requests, the ones its drive cache served.
    pub cache_hits: u64,
    /// Time the member spent serving them (command overhead, seek, rotation and transfer; not
    /// the waits in queues), s. Over `elapsed_s` it is the share of the run the member was busy,
    /// except that fetches still in flight when the last application read completed are
    /// counted too, which in a very short run can make it more than `elapsed_s`.
    pub busy_s: f64,
}

/// The result of one simulation run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Report {
    /// Application bytes delivered per simulated second, MiB/s.
    pub throughput_mib_s: f64,
    /// Simulated seconds until the workload finished (or the duration limit).
    pub elapsed_s: f64,
    /// Application requests completed.
    pub app_requests: u64,
    /// Application bytes completed.
    pub app_bytes: u64,
    /// Requests the device served.
    pub device_requests: u64,
    /// Bytes the device served.
    pub device_bytes: u64,
    /// Bytes brought into memory ahead of demand, summed over every prefetching cache of the
    /// host: the page cache and, when there is one, the host's block-level cache (the RAID
    /// driver's cache under `msp+...`, the stream scheduler's buffers under `streams`), each
    /// counting what it fetched ahead of the reads that reach it, so a block the RAID layer reads
    /// ahead and the page cache then reads ahead from it counts once in each (`raid_prefetched_bytes`
    /// is the block-level part). A controller cache is the device's and counts, like a drive's
    /// cache, in neither. A `[dfs]` run sums its hosts' caches the same way: a block the server
    /// reads ahead and a client then reads ahead from it counts once in each. A tier stack counts
    /// the blocks fetched into memory and the copies into its staging levels. A cache's pages
    /// are whole, so the bytes of a page a demand read brought in without asking for them (the
    /// rest of a page it asked part of) count too, and as wasted unless a later read takes one.
    pub prefetched_bytes: u64,
    /// Of those, bytes evicted or left unread at the end (summed over the same caches).
    pub wasted_bytes: u64,
    /// Mean application request latency, ms.
    pub mean_latency_ms: f64,
    /// 99th percentile application request latency, ms.
    pub p99_latency_ms: f64,
    /// Total time applications waited on I/O, s: for each completed request, the time from its
    /// issue until its bytes were all in memory (its latency less the copy into its buffer, see
    /// `copy_s`), plus, for a request still out when the run ends (at `workload.duration`), its
    /// wait until then, or until its data was in memory if it was being copied. A client that
    /// never thinks and whose reads all miss therefore stalls for `elapsed_s` less its copies.
    pub stall_s: f64,
    /// A host run: the time the host's memory bus spent copying reads' bytes from the page
    /// cache into the applications' buffers, s, up to `elapsed_s` (`host.copy_rate`; 0 when
    /// copies are free). It is in the reads' latencies and the elapsed time, not in `stall_s`.
    /// Absent for a trace replay, whose block requests are never copied into a buffer, and for
    /// a `[dfs]` run and a tier stack, which do not model the copy as a bus (see ARCHITECTURE.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub copy_s: Option<f64>,
    /// Device time by component, summed over the devices. A tier stack sums its preset levels'
    /// devices (with the wait for room in a device's command queue as queue time) over the
    /// requests that completed by `elapsed_s`, as do its `device_requests` and `device_bytes`
    /// (later ones are `after_end`); a constant level's fixed per-block time has no components
    /// and is in none, so a stack of constant levels reports every part 0.
    pub breakdown: BreakdownReport,
    /// Host seconds the run took.
    pub wall_s: f64,
    /// Most bytes the host's caches held at once (cached and in flight): the page cache plus, when
    /// there is one, the block-level cache (the RAID driver's cache or the stream scheduler's
    /// buffers). A `[dfs]` run has one cache per host (the server's and each client's); there it
    /// is the sum of each host's own peak, which the hosts need not reach at the same moment.
    pub memory_peak_bytes: u64,
    /// The run's seed.
    pub seed: u64,
    /// Policy name.
    pub policy: String,
    /// Device description.
    pub device: String,
    /// Workload kind.
    pub workload: String,
    /// Client streams; for a block trace, the distinct devices (streams) of the records the
    /// replay submitted.
    pub streams: u32,
    /// Fetches the policies issued, summed over the same caches as `prefetched_bytes`
    /// (`raid_fetches` is the block-level part): every fetch a policy asked for, counted when it
    /// asked, whatever the cache then made of it. That includes a fetch whose bytes were all in
    /// memory or in flight already, which reads nothing (only `directed` asks for such, when its
    /// disclosed reads fall on pages held), and one memory cut short. It counts the policy's
    /// decisions, the same in the engine's `fetches`, so that both worlds count alike whatever
    /// their caches hold; the bytes the devices read ahead are `prefetched_bytes`.
    pub fetches: u64,
    /// Of those, fetches that spanned more than one strip of a RAID-0, so became more than one
    /// disk request (`raid_split_fetches` is the block-level part; in a `[dfs]` run, the server's
    /// fetches: a client's cross the link, not a strip).
    pub split_fetches: u64,
    /// Application requests served entirely from memory (in a `[dfs]` run, from the reader's own
    /// cache: the client's, or the server's for a `local` process).
    pub hit_requests: u64,
    /// Device requests the drive's own cache served.
    pub device_cache_hits: u64,
    /// Block-queue merges.
    pub block_merges: u64,
    /// Times a block queue held its disk idle waiting for a stream's next request (the
    /// anticipatory scheduler).
    ///
    /// This key and the others of the host stack below (`device_sequential_requests`, the
    /// `raid_*` keys, `trace_lba_wrapped`) are `None`, so absent from the JSON, in a run whose
    /// driver has no such part (a `[dfs]` run, a hinted run over a tier stack), where a 0 would
    /// read as a measurement.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub antic_waits: Option<u64>,
    /// Device requests that began at the sector after the request the same disk completed before
    /// them (back-to-back sequential commands, served without a seek or rotational wait when the
    /// drive is still streaming).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_sequential_requests: Option<u64>,
    /// Bytes the array-level policy brought into the RAID cache ahead of demand (part of
    /// `prefetched_bytes`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raid_prefetched_bytes: Option<u64>,
    /// Of those, bytes evicted or never read (part of `wasted_bytes`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raid_wasted_bytes: Option<u64>,
    /// Most bytes the RAID cache held at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raid_cache_peak_bytes: Option<u64>,
    /// Fetches the array-level policy issued (part of `fetches`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raid_fetches: Option<u64>,
    /// Of those, fetches that spanned more than one strip (part of `split_fetches`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raid_split_fetches: Option<u64>,
    /// Simulated events processed by the run's event loop (the host stack's, the tier driver's
    /// or the DFS model's: each counts what it handles one at a time, so counts of different
    /// drivers are not comparable).
    pub events: u64,
    /// Trace requests whose LBA lay beyond the device and was wrapped (trace workloads only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_lba_wrapped: Option<u64>,
    /// Clients stopped with reads left because their next read would have been issued more than
    /// 500 simulated years in (long think times over very many reads); absent when none was.
    #[serde(skip_serializing_if = "is_zero")]
    pub clients_stopped_at_horizon: u32,
    /// A `gaps` workload with exponential gaps: clients whose drawn gaps left room for only one
    /// read in a file that holds two, so they measured one read; absent when none did.
    #[serde(skip_serializing_if = "is_zero")]
    pub gaps_single_read_clients: u32,
    /// A `webserver` workload: the files in the set that ran (absent for other workloads). Left
    /// to its default, `workload.files` is the count that makes an 8 GiB set; on a smaller volume
    /// the set is cut to the files that fit, and `webserver_files_cut_from` says so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webserver_files: Option<u32>,
    /// A `webserver` workload: the bytes of those files (sizes are drawn around
    /// `workload.file_size`, so this is not `webserver_files` times the mean).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webserver_set_bytes: Option<u64>,
    /// A `webserver` workload whose default file count did not fit the volume: that default
    /// count, of which only `webserver_files` ran; absent when the whole set ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webserver_files_cut_from: Option<u32>,
    /// Under the stream scheduler (`policy = "streams"`), with a workload of files: bytes of its
    /// reads that lay past the end of the file each read began in, counted as the reads are
    /// issued (as `fetches` counts them). The scheduler reads `policy.readahead` (R) bytes at a
    /// time and, working below the file system as paper 001's does, knows no file's end, so an
    /// R larger than the files reads this much of what lies beyond them. Absent for other
    /// policies and for traces (whose reads are of no file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub past_file_end_bytes: Option<u64>,
    /// Ruemmler and Wilkes' demerit figure, ms: the RMS horizontal distance between the simulated
    /// and the measured service-time distributions (see [`crate::validate`]). Only for a trace whose
    /// every record carries a measured service time (a DiskSim validation trace); `null` otherwise.
    pub demerit_ms: Option<f64>,
    /// Each member disk of the host's volume, in member order (one entry for a single device);
    /// absent for runs without one (`[dfs]` runs, and hinted runs over a tier stack).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<MemberReport>,
    /// Device work of a tier stack that completed after `elapsed_s` (hinted runs over a tier stack
    /// only; absent otherwise): copies still climbing when the application consumed its last
    /// block. `device_requests`, `device_bytes` and `breakdown` count only what completed by then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after_end: Option<AfterEndReport>,
    /// The DFS model's own figures (runs with a `[dfs]` section only; absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dfs: Option<crate::dfs::DfsFigures>,
}

/// What a tier stack's devices did after the application's end (`elapsed_s`): copies under way
/// when it consumed its last block, which nobody reads. They complete (the run's checks drain
/// them) but lie outside the run, so they are counted here rather than in the run's figures. Their
/// bytes are also in `prefetched_bytes` and `wasted_bytes`, which count a copy when it is issued.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct AfterEndReport {
    /// Device requests that completed after `elapsed_s` (a copy on device models is two: a read
    /// below and a write above).
    pub device_requests: u64,
    /// Their bytes.
    pub device_bytes: u64,
    /// Their device time by component, as `breakdown` counts it.
    pub breakdown: BreakdownReport,
    /// When the last device request of the run completed, simulated seconds (`elapsed_s` when
    /// none completed after it).
    pub last_completion_s: f64,
}

/// One application request, for `--requests-out`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RequestRecord {
    /// Sequence number.
    pub id: u64,
    /// Client stream.
    pub stream: u32,
    /// Issue time, s.
    pub submit_s: f64,
    /// Completion time, s.
    pub complete_s: f64,
    /// Byte offset (file offset; volume byte offset for block traces).
    pub offset: u64,
    /// Bytes.
    pub bytes: u64,
    /// `R` or `W`.
    pub op: char,
}

impl RequestRecord {
    /// The CSV header `--requests-out` writes.
    pub const CSV_HEADER: &'static str = "id,stream,submit_s,complete_s,latency_ms,offset,bytes,op";

    /// One CSV line, without the newline.
    pub fn csv_line(&self) -> String {
        CsvLine(self).to_string()
    }
}

/// A record as one CSV line, without the newline: written straight into a buffer, with no string
/// of its own per record.
struct CsvLine<'a>(&'a RequestRecord);

impl fmt::Display for CsvLine<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self.0;
        write!(
            f,
            "{},{},{:.9},{:.9},{:.6},{},{},{}",
            r.id,
            r.stream,
            r.submit_s,
            r.complete_s,
            (r.complete_s - r.submit_s) * 1e3,
            r.offset,
            r.bytes,
            r.op
        )
    }
}

/// Where a run sends one [`RequestRecord`] per application request, as each completes.
pub trait RequestSink {
    /// Takes the next record. An error stops the run, which then returns it
    /// (`SimError::Requests`).
    fn push(&mut self, record: &RequestRecord) -> io::Result<()>;
}

/// Keeps every record in memory, for callers that look at them after the run (tests, the
/// `drives` experiment); their memory grows with the run.
impl RequestSink for Vec<RequestRecord> {
    fn push(&mut self, record: &RequestRecord) -> io::Result<()> {
        Vec::push(self, *record);
        Ok(())
    }
}

/// Bytes a [`CsvRequests`] gathers before writing them out.
const CSV_BUFFER_BYTES: usize = 64 << 10;

/// Writes records as the CSV of `--requests-out`: the header first, then one line per record,
/// through a buffer of `CSV_BUFFER_BYTES`.
pub struct CsvRequests<W: Write> {
    out: BufWriter<W>,
}

impl<W: Write> CsvRequests<W> {
    /// Starts the CSV on `out` with its header.
    pub fn new(out: W) -> io::Result<CsvRequests<W>> {
        let mut out = BufWriter::with_capacity(CSV_BUFFER_BYTES, out);
        writeln!(out, "{}", RequestRecord::CSV_HEADER)?;
        Ok(CsvRequests { out })
    }

    /// Writes out what is still buffered and returns the writer.
    pub fn finish(self) -> io::Result<W> {
        self.out
            .into_inner()
            .map_err(io::IntoInnerError::into_error)
    }
}

impl<W: Write> RequestSink for CsvRequests<W> {
    fn push(&mut self, record: &RequestRecord) -> io::Result<()> {
        writeln!(self.out, "{}", CsvLine(record))
    }
}

/// A driver's end of the caller's sink: numbers the records, and keeps the first error, after
/// which it sends nothing more and the driver stops its run.
#[derive(Default)]
pub(crate) struct RequestLog<'r> {
    sink: Option<&'r mut dyn RequestSink>,
    sent: u64,
    error: Option<io::Error>,
}

impl<'r> RequestLog<'r> {
    /// A log into `sink`, or one that records nothing.
    pub(crate) fn new(sink: Option<&'r mut dyn RequestSink>) -> RequestLog<'r> {
        RequestLog {
            sink,
            sent: 0,
            error: None,
        }
    }

    /// Sends the record `make` builds from its sequence number (0 for the first record), if
    /// records are wanted.
    pub(crate) fn push(&mut self, make: impl FnOnce(u64) -> RequestRecord) {
        let Some(sink) = self.sink.as_deref_mut() else {
            return;
        };
        let record = make(self.sent);
        self.sent += 1;
        if let Err(e) = sink.push(&record) {
            self.error = Some(e);
            self.sink = None;
        }
    }

    /// Whether the sink failed: the run should stop.
    pub(crate) fn failed(&self) -> bool {
        self.error.is_some()
    }

    /// The sink's error, if it failed.
    pub(crate) fn take_error(&mut self) -> Option<io::Error> {
        self.error.take()
    }
}

/// The 99th percentile of values sorted ascending: the value at rank `ceil(0.99 n)` (1-based), so
/// that of 100 latencies it is the 99th, not the largest; `None` with no values. Every driver
/// reports `p99_latency_ms` through it.
pub(crate) fn p99<T: Copy>(sorted: &[T]) -> Option<T> {
    let rank = (sorted.len() * 99).div_ceil(100);
    rank.checked_sub(1).map(|i| sorted[i])
}

/// Latencies kept exactly up to this many; past it they go into [`Latencies`]' histogram, so a
/// run of any length holds at most 8 MiB of them.
const EXACT_LATENCIES_MAX: usize = 1 << 20;

/// Mantissa bits of the histogram's buckets: a bucket spans 1/1024 of its values' magnitude.
const BUCKET_MANTISSA_BITS: u32 = 10;

/// The request latencies of a run, in nanoseconds, for their mean and 99th percentile in bounded
/// memory. Up to [`EXACT_LATENCIES_MAX`] values are kept as they are, and the percentile is exact
/// (see [`p99`]). Past that they are counted in log-linear buckets, each spanning 2^-10 of its
/// values' magnitude: the percentile is then the midpoint of the bucket holding the rank, within
/// 0.05% of the exact value, and a run of a billion requests needs 440 KiB for it rather than 8 GB.
/// The mean is always exact.
#[derive(Clone, Debug, Default)]
pub(crate) struct Latencies {
    exact_ns: Vec<u64>,
    /// Counts per bucket, once the values outgrew `exact_ns` (which is then empty).
    buckets: Option<Box<[u64]>>,
    count: u64,
    sum_ns: u128,
}

impl Latencies {
    /// Records one latency.
    pub(crate) fn push(&mut self, ns: u64) {
        self.count += 1;
        self.sum_ns += u128::from(ns);
        match &mut self.buckets {
            Some(b) => b[bucket_of(ns)] += 1,
            None if self.exact_ns.len() < EXACT_LATENCIES_MAX => self.exact_ns.push(ns),
            None => {
                let mut b = vec![0u64; BUCKET_COUNT].into_boxed_slice();
                for &v in self.exact_ns.iter().chain(std::iter::once(&ns)) {
                    b[bucket_of(v)] += 1;
                }
                self.exact_ns = Vec::new();
                self.buckets = Some(b);
            }
        }
    }

    /// The sum of every latency, seconds.
    pub(crate) fn sum_s(&self) -> f64 {
        self.sum_ns as f64 / 1e9
    }

    /// The mean, ms; 0 with no values.
    pub(crate) fn mean_ms(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum_ns as f64 / self.count as f64 / 1e6
        }
    }

    /// The 99th percentile, ms (the value at rank `ceil(0.99 n)`, as [`p99`]); 0 with no values.
    pub(crate) fn p99_ms(&self) -> f64 {
        let ns = match &self.buckets {
            None => {
                let mut sorted = self.exact_ns.clone();
                sorted.sort_unstable();
                p99(&sorted)
            }
            Some(b) => {
                let rank = (self.count * 99).div_ceil(100);
                let mut seen = 0u64;
                b.iter()
                    .position(|&c| {
                        seen += c;
                        seen >= rank
                    })
                    .map(bucket_mid)
            }
        };
        ns.map_or(0.0, |ns| ns as f64 / 1e6)
    }
}

/// Buckets: values below 2^10 one each, then 2^10 buckets per power of two up to 2^64.
const BUCKET_COUNT: usize = (1 << BUCKET_MANTISSA_BITS) * (64 - BUCKET_MANTISSA_BITS as usize + 1);

fn bucket_of(ns: u64) -> usize {
    let m = BUCKET_MANTISSA_BITS;
    if ns < 1 << m {
        return ns as usize;
    }
    let exp = 63 - ns.leading_zeros();
    let shift = exp - m;
    let mantissa = (ns >> shift) as usize & ((1 << m) - 1);
    ((shift as usize + 1) << m) + mantissa
}

/// The middle of a bucket's values.
fn bucket_mid(bucket: usize) -> u64 {
    let m = BUCKET_MANTISSA_BITS as usize;
    if bucket < 1 << m {
        return bucket as u64;
    }
    let shift = (bucket >> m) - 1;
    let mantissa = (bucket & ((1 << m) - 1)) as u64;
    let low = ((1u64 << m) + mantissa) << shift;
    low + (1u64 << shift) / 2
}

/// For `skip_serializing_if`: a count that is zero is left out of the JSON.
fn is_zero(n: &u32) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::{bucket_mid, bucket_of, p99, Latencies, BUCKET_COUNT, EXACT_LATENCIES_MAX};
    use foresight_core::Rng;

    #[test]
    fn buckets_hold_their_values_within_a_twentieth_of_a_percent() {
        let mut rng = Rng::new(11);
        let check = |v: u64| {
            let b = bucket_of(v);
            assert!(b < BUCKET_COUNT, "{v}");
            let mid = bucket_mid(b);
            let err = (mid as f64 - v as f64).abs() / v.max(1) as f64;
            assert!(err <= 1.0 / 2048.0, "{v} -> bucket {b} mid {mid}: {err}");
        };
        for v in (0..5000).chain([u64::MAX, u64::MAX / 3, 1 << 40, (1 << 40) - 1]) {
            check(v);
        }
        for _ in 0..100_000 {
            check(rng.next_u64() >> (rng.next_u64() % 64));
        }
        // Buckets are ordered as their values.
        assert!((1..BUCKET_COUNT).all(|b| bucket_mid(b - 1) < bucket_mid(b)));
    }

    #[test]
    fn past_the_exact_limit_the_percentile_stays_within_a_twentieth_of_a_percent() {
        let mut rng = Rng::new(5);
        let mut lat = Latencies::default();
        let mut all = Vec::new();
        for _ in 0..EXACT_LATENCIES_MAX + 12_345 {
            // Milliseconds to seconds, as a disk's latencies spread.
            let v = 1_000_000 + rng.next_u64() % 2_000_000_000;
            lat.push(v);
            all.push(v);
        }
        assert!(lat.buckets.is_some() && lat.exact_ns.is_empty());
        all.sort_unstable();
        let exact_ms = p99(&all).unwrap() as f64 / 1e6;
        let got_ms = lat.p99_ms();
        assert!(
            (got_ms - exact_ms).abs() <= exact_ms / 2000.0,
            "{got_ms} against {exact_ms}"
        );
        let mean_ms =
            all.iter().map(|&v| u128::from(v)).sum::<u128>() as f64 / all.len() as f64 / 1e6;
        assert_eq!(lat.mean_ms(), mean_ms);
        assert_eq!(lat.count, all.len() as u64);
    }

    #[test]
    fn below_the_exact_limit_the_percentile_is_exact() {
        let mut lat = Latencies::default();
        for v in (1..=100u64).rev() {
            lat.push(v * 1_000_000);
        }
        assert_eq!(lat.p99_ms(), 99.0);
        assert_eq!(lat.mean_ms(), 50.5);
        assert_eq!(Latencies::default().p99_ms(), 0.0);
        assert_eq!(Latencies::default().mean_ms(), 0.0);
    }

    #[test]
    fn p99_is_the_value_at_rank_ceil_99_percent() {
        // 100 latencies of 1..=100: 99 of them are at most 99, so the 99th percentile is 99, not
        // the maximum.
        let lat: Vec<u64> = (1..=200).collect();
        assert_eq!(p99(&lat[..100]), Some(99));
        assert_eq!(p99(&lat), Some(198));
        assert_eq!(p99(&lat[..1]), Some(1));
        assert_eq!(p99(&lat[..150]), Some(149));
        assert_eq!(p99::<u64>(&[]), None);
    }
}
