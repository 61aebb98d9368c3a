//! What an engine measured: the application's bytes, the device's, the policy's fetches and their
//! waste, memory, and the time readers spent waiting.

use crate::backend::BackendKind;

/// A snapshot of an engine's counters, from [`crate::Engine::stats`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// The backend the engine runs on.
    pub backend: BackendKind,
    /// `read` calls that returned data or an error.
    pub app_reads: u64,
    /// Bytes returned to the application.
    pub app_bytes: u64,
    /// Reads the backend completed (retries of short reads included).
    pub device_reads: u64,
    /// Bytes the backend read.
    pub device_bytes: u64,
    /// Fetches the policy asked for, each counted when asked, as the simulator counts its
    /// `fetches`: also one whose pages were all in memory or in flight already, which reads
    /// nothing.
    pub fetches: u64,
    /// Bytes read ahead of the application's requests.
    pub prefetched_bytes: u64,
    /// Of those, the bytes of the pages the application went on to read (counted by the page, as
    /// the simulator counts: a page read in part counts whole, and once).
    pub prefetch_used_bytes: u64,
    /// Of those, the bytes of pages dropped unread (evicted, released, or left when the file was
    /// closed). Used and wasted add up to `prefetched_bytes` once nothing read ahead is held.
    pub wasted_bytes: u64,
    /// Reads the engine issued for the application's own misses.
    pub demand_reads: u64,
    /// Bytes of those.
    pub demand_bytes: u64,
    /// The memory budget.
    pub memory_limit_bytes: u64,
    /// Buffer bytes held now (prefetched, in flight, being copied, and kept for reuse).
    pub memory_used_bytes: u64,
    /// The most buffer bytes ever held at once; never above the limit.
    pub memory_peak_bytes: u64,
    /// Of `memory_used_bytes`, the bytes in buffers handed out now (prefetched, in flight, being
    /// copied), without those kept for reuse: zero once every reader is closed.
    pub memory_lent_bytes: u64,
    /// The most bytes in buffers handed out at once (prefetched, in flight, being copied),
    /// without those kept for reuse: an engine built with `prefault` holds its whole budget from
    /// the start, and this is what its reads needed of it.
    pub buffers_peak_bytes: u64,
    /// `read` calls that had to wait for the device or for memory.
    pub stalls: u64,
    /// Total time `read` calls waited, nanoseconds.
    pub stall_ns: u64,
    /// Times the policy was told memory was short.
    pub memory_pressure_events: u64,
    /// Times a demand read waited for memory.
    pub memory_waits: u64,
    /// Reads that failed with an I/O error.
    pub io_errors: u64,
    /// Short reads re-issued for their remainder.
    pub short_reads: u64,
    /// Files opened with `O_DIRECT`.
    pub files_direct: u64,
    /// Files opened buffered (the file system refused `O_DIRECT`, or it was not asked for).
    pub files_buffered: u64,
    /// Under `msp+...`, the RAID driver's cache beneath the driver (`backend::array`); then
    /// `device_reads` and `device_bytes` are the reads that cache sent the device, the driver's
    /// reads served from it included in none of them.
    pub array: Option<crate::backend::array::ArrayStats>,
}
