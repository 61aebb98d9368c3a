//! The host's memory bus: the copy of every application read's bytes from the page cache into the
//! reader's buffer, served one copy at a time, first come first served, at `host.copy_rate`.
//!
//! A buffered `read()` ends with the kernel copying the bytes from the page cache into the
//! caller's buffer: at once for a read whose pages are all in memory, after the last of them
//! arrives for one that waited on the device. The copy costs time, and the copies of all the
//! host's readers share one memory. The model is the simplest that keeps both true: one FIFO
//! server per host, busy for `bytes / rate` per copy, so a copy that finds the bus busy waits for
//! the copies ahead of it, and the host's readers together never copy faster than the rate,
//! however many read at once. A host with more memory channels than one core can keep busy would
//! copy faster than this in aggregate; the default rate (one core's, see
//! `config::DEFAULT_COPY_BYTES_PER_S`) makes the model a lower bound there.
//!
//! The queue holds the reads whose data is in memory and whose copy has not finished. Each client
//! has at most its one outstanding read in it, so it is bounded by the client count, which
//! [`CopyBus::new`] sizes it to and [`CopyBus::push`] asserts.

use std::collections::VecDeque;

use foresight_core::time::NANOS_PER_SEC;
use foresight_core::{Duration, Instant};

/// One read's copy, queued or being served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PendingCopy {
    /// The application read whose bytes these are (the simulator's request slot).
    app: u32,
    /// When the bus starts it: when the data was ready, or when the copy before it ends.
    start: Instant,
    /// When the bus finishes it and the read completes to the application.
    end: Instant,
}

/// A host's memory bus: one FIFO server copying reads' bytes at a fixed rate.
#[derive(Clone, Debug)]
pub struct CopyBus {
    rate_bytes_per_s: u64,
    /// Copies in arrival order; the front is being served, the others wait behind it.
    queue: VecDeque<PendingCopy>,
    /// The most copies `queue` may hold: one per client.
    capacity: usize,
    /// When the last queued copy ends (the bus is idle from then on).
    free_at: Instant,
    /// Bus time of the copies that have finished, ns.
    done_busy_ns: u128,
}

impl CopyBus {
    /// A bus copying at `rate_bytes_per_s` for `clients` readers, each with at most one read in it.
    pub fn new(rate_bytes_per_s: u64, clients: usize) -> CopyBus {
        assert!(
            rate_bytes_per_s > 0,
            "a copy rate of 0 bytes/s never copies"
        );
        let capacity = clients.max(1);
        CopyBus {
            rate_bytes_per_s,
            queue: VecDeque::with_capacity(capacity),
            capacity,
            free_at: Instant::ZERO,
            done_busy_ns: 0,
        }
    }

    /// The time the bus takes to copy `bytes`: `bytes / rate`, rounded up to a whole nanosecond
    /// so that no copy of at least one byte is free.
    pub fn copy_time(&self, bytes: u64) -> Duration {
        let ns = (bytes as u128 * NANOS_PER_SEC as u128).div_ceil(self.rate_bytes_per_s as u128);
        Duration(ns.min(u64::MAX as u128) as u64)
    }

    /// Queues the copy of read `app`'s `bytes`, whose data is in memory at `now`; returns when the
    /// copy will end.
    pub fn push(&mut self, now: Instant, app: u32, bytes: u64) -> Instant {
        assert!(
            self.queue.len() < self.capacity,
            "copy bus holds {} reads, one per client of {}",
            self.queue.len() + 1,
            self.capacity
        );
        let start = now.max(self.free_at);
        let end = start.saturating_add(self.copy_time(bytes));
        self.free_at = end;
        self.queue.push_back(PendingCopy { app, start, end });
        end
    }

    /// When the copy being served ends, if any.
    pub fn next_event(&self) -> Option<Instant> {
        self.queue.front().map(|c| c.end)
    }

    /// Whether no copy is queued or being served.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Copies queued or being served.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Takes the copies that have ended by `now`, in order, onto `done` as their reads' slots.
    pub fn pop_done(&mut self, now: Instant, done: &mut Vec<u32>) {
        while let Some(c) = self.queue.front().filter(|c| c.end <= now) {
            self.done_busy_ns += (c.end - c.start).as_nanos() as u128;
            done.push(c.app);
            self.queue.pop_front();
        }
    }

    /// The time the bus spent copying up to `until`: the copies that ended, and the part before
    /// `until` of those still queued.
    pub fn busy_until(&self, until: Instant) -> Duration {
        let open: u128 = self
            .queue
            .iter()
            .map(|c| c.end.min(until).saturating_since(c.start).as_nanos() as u128)
            .sum();
        Duration((self.done_busy_ns + open).min(u64::MAX as u128) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn a_copy_on_an_idle_bus_takes_bytes_over_the_rate() {
        let mut bus = CopyBus::new(GIB, 1);
        // 1 MiB at 1 GiB/s: 1/1024 s.
        let end = bus.push(Instant(5), 0, 1 << 20);
        assert_eq!(end, Instant(5 + 976_563));
        assert_eq!(bus.next_event(), Some(end));
    }

    #[test]
    fn copies_ready_at_once_are_served_one_after_the_other() {
        let mut bus = CopyBus::new(GIB, 2);
        let first = bus.push(Instant(0), 7, 1 << 20);
        let second = bus.push(Instant(0), 8, 1 << 20);
        assert_eq!(second, Instant(2 * first.0));
        let mut done = Vec::new();
        bus.pop_done(first, &mut done);
        assert_eq!(done, vec![7]);
        bus.pop_done(second, &mut done);
        assert_eq!(done, vec![7, 8]);
        assert_eq!(bus.busy_until(second), Duration(second.0));
        assert!(bus.is_empty());
    }

    #[test]
    fn an_idle_gap_is_not_busy_time() {
        let mut bus = CopyBus::new(GIB, 1);
        let end = bus.push(Instant(1_000_000_000), 0, GIB);
        assert_eq!(end, Instant(2_000_000_000));
        assert_eq!(
            bus.busy_until(Instant(1_500_000_000)),
            Duration(500_000_000)
        );
    }

    #[test]
    fn a_byte_is_never_copied_for_free() {
        assert_eq!(CopyBus::new(u64::MAX, 1).copy_time(1), Duration(1));
    }

    #[test]
    #[should_panic(expected = "one per client")]
    fn more_reads_than_clients_is_a_bug() {
        let mut bus = CopyBus::new(GIB, 1);
        bus.push(Instant(0), 0, 1);
        bus.push(Instant(0), 1, 1);
    }
}
