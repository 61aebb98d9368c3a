//! The portable backend: `pread` on a bounded pool of worker threads.
//!
//! Requests wait in one FIFO queue that holds at most `capacity` of them (the driver never submits
//! more; the bound is asserted); each worker takes the oldest, performs it with `pread` (retrying
//! interruptions and short reads, so a short result means the end of the file), and delivers the
//! completion with no lock held. With `capacity` workers, every submitted request is being served,
//! so the device sees up to `capacity` reads in flight, like io_uring at that queue depth. Files are
//! opened with `O_DIRECT` when asked, and buffered where the file system refuses it.
//!
//! Shutdown and drop keep the lifecycle every backend keeps (`lifecycle.rs`): after shutdown a worker fails each
//! request it takes instead of reading it (requests still queued then, and any submitted later), and
//! the workers end only when the backend is dropped, which joins them once the queue is empty,
//! waiting at most a grace (`lifecycle.rs`) for one stuck in a `pread`, which is then left
//! detached with the request it owns.

use std::collections::VecDeque;
use std::io;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};

use foresight_core::FileId;

use super::lifecycle::{refuse, Joined, PanicAlarm, Phase, STUCK_READ_GRACE};
use super::{
    perform_blocking, real_handle, real_handle_beneath, BackendKind, CompletionPort, FileHandle,
    IoBackend, IoRequest,
};
use crate::beneath::RootDir;

struct Queue {
    requests: VecDeque<IoRequest>,
    phase: Phase,
    /// Workers waiting for a request.
    idle_workers: usize,
    /// Times a worker woke to an empty queue with the backend running: the cost of waking
    /// more workers than there were requests.
    idle_wakes: u64,
}

struct Shared {
    queue: Mutex<Queue>,
    ready: Condvar,
    capacity: usize,
    port: Arc<CompletionPort>,
}

impl Shared {
    /// Moves the backend forward to `to`, and wakes the workers to see it.
    fn enter(&self, to: Phase) {
        self.queue
            .lock()
            .expect("threads backend queue poisoned")
            .phase
            .advance(to);
        self.ready.notify_all();
    }
}

/// `pread` on a pool of threads. See the module documentation.
pub struct ThreadsBackend {
    shared: Arc<Shared>,
    /// The workers, joined when the backend is dropped.
    threads: Joined,
}

impl ThreadsBackend {
    /// Starts `workers` threads serving at most `capacity` outstanding requests; completions go to
    /// `port`. `workers` is clamped to `1..=capacity`.
    pub fn start(
        workers: usize,
        capacity: usize,
        port: Arc<CompletionPort>,
    ) -> io::Result<ThreadsBackend> {
        assert!(capacity >= 1, "a backend needs room for one request");
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                requests: VecDeque::with_capacity(capacity),
                phase: Phase::Running,
                idle_workers: 0,
                idle_wakes: 0,
            }),
            ready: Condvar::new(),
            capacity,
            port,
        });
        let backend = ThreadsBackend {
            shared,
            threads: Joined::default(),
        };
        for i in 0..workers.clamp(1, capacity) {
            let s = backend.shared.clone();
            // On an error the backend is dropped, which ends and joins the workers started.
            let t = std::thread::Builder::new()
                .name(format!("foresight-io-{i}"))
                .spawn(move || PanicAlarm(s.port.clone()).watch(|| worker(&s)))?;
            backend.threads.push(t);
        }
        Ok(backend)
    }

    /// Whether no request waits in the queue (each was taken by a worker).
    #[cfg(test)]
    pub(crate) fn queue_is_empty(&self) -> bool {
        self.shared
            .queue
            .lock()
            .expect("threads backend queue poisoned")
            .requests
            .is_empty()
    }

    /// Shuts the backend down and joins its workers once they have delivered every request
    /// queued (see `lifecycle.rs`), waiting at most [`STUCK_READ_GRACE`] for them: a worker
    /// whose `pread` is stuck in the kernel is left detached, owning its request (the buffer,
    /// and the file's descriptor, kept open until the read returns), and delivers it, if
    /// anyone still listens, when it returns. Returns whether one was left so. Idempotent;
    /// the drop calls it.
    pub(crate) fn end(&self) -> bool {
        self.shared.enter(Phase::Ending);
        self.threads.join_within(STUCK_READ_GRACE) > 0
    }
}

fn worker(s: &Shared) {
    loop {
        let (req, running) = {
            let mut q = s.queue.lock().expect("threads backend queue poisoned");
            loop {
                if let Some(r) = q.requests.pop_front() {
                    break (r, q.phase.running());
                }
                if q.phase == Phase::Ending {
                    return;
                }
                q.idle_workers += 1;
                q = s.ready.wait(q).expect("threads backend queue poisoned");
                q.idle_workers -= 1;
                if q.requests.is_empty() && q.phase == Phase::Running {
                    q.idle_wakes += 1;
                }
            }
        };
        let c = if running {
            perform_blocking(req)
        } else {
            refuse(req, BackendKind::Threads)
        };
        s.port.deliver(c);
    }
}

impl IoBackend for ThreadsBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Threads
    }

    fn open(&self, path: &Path, id: FileId, direct: bool) -> io::Result<FileHandle> {
        real_handle(path, id, direct)
    }

    fn open_beneath(
        &self,
        root: &RootDir,
        rel: &Path,
        id: FileId,
        direct: bool,
    ) -> io::Result<FileHandle> {
        real_handle_beneath(root, rel, id, direct)
    }

    fn capacity(&self) -> usize {
        self.shared.capacity
    }

    fn submit(&self, batch: &mut Vec<IoRequest>) {
        if batch.is_empty() {
            return;
        }
        let n = batch.len();
        {
            let mut q = self
                .shared
                .queue
                .lock()
                .expect("threads backend queue poisoned");
            assert!(
                q.requests.len() + n <= self.shared.capacity,
                "threads backend over its bound of {} requests",
                self.shared.capacity
            );
            for r in batch.drain(..) {
                r.assert_valid();
                q.requests.push_back(r);
            }
        }
        // One worker per request: waking every idle worker for a batch (up to the queue depth,
        // 4,096) had all but `n` of them take the lock to find the queue empty again. A worker
        // busy now takes what is left when it comes back, before it waits.
        for _ in 0..n {
            self.shared.ready.notify_one();
        }
    }

    fn shutdown(&self) {
        self.shared.enter(Phase::Shut);
    }
}

impl Drop for ThreadsBackend {
    fn drop(&mut self) {
        self.end();
    }
}

#[cfg(test)]
mod tests {
    use super::super::lifecycle::testing::{
        assert_drop_delivers_what_it_held, assert_read, assert_refused_after_shutdown, opened,
        page_read, pattern_file, race_submits_with_shutdown, refused, Collect, PATIENCE,
    };
    use super::super::lifecycle::testing::{drop_returns, on_a_stuck_read, StuckRun};
    use super::*;
    use std::time::Duration;

    /// A request submitted after shutdown completes with an error the driver sees. Before, it
    /// was read as if nothing had happened while a worker was still up, and never completed
    /// once they had all gone.
    #[test]
    fn a_request_after_shutdown_gets_an_error() {
        // The workers stay up until the drop: none ends at shutdown.
        let start =
            |port, path: &Path| Some(opened(ThreadsBackend::start(2, 4, port).unwrap(), path));
        assert_refused_after_shutdown("threads-after", start, |_| false);
    }

    /// Requests still queued at shutdown complete, with an error: the backend starts no read
    /// after it. Here one worker is held up delivering the first read while two more wait.
    /// Before, the queued ones were read after the shutdown.
    #[test]
    fn requests_queued_at_shutdown_complete_with_an_error() {
        let (_dir, path) = pattern_file("threads-queued", 4 * 4096);
        let (got, port) = Collect::port(Duration::from_millis(300));
        let (b, f) = opened(ThreadsBackend::start(1, 3, port).unwrap(), &path);
        b.submit(&mut vec![page_read(1, &f, 0)]);
        // The worker has taken read 1 once the queue is empty; reads 2 and 3 then wait.
        crate::testutil::wait_until("the worker to take the read", || {
            b.shared.queue.lock().unwrap().requests.is_empty()
        });
        b.submit(&mut vec![page_read(2, &f, 1), page_read(3, &f, 2)]);
        b.shutdown();
        let mut done = got.take_within(3, PATIENCE);
        done.sort_by_key(|c| c.token);
        assert_eq!(done.len(), 3, "a request never completed");
        assert_read(&done[0], 0);
        assert!(refused(&done[1]) && refused(&done[2]));
        drop(b);
    }

    /// Dropping the backend joins its workers, so what they held is delivered (and its buffer
    /// and descriptor let go) by the time the drop returns; here a sink that takes its time.
    /// Before, the workers were left to run on, and the drop returned first.
    #[test]
    fn dropping_the_backend_joins_its_workers() {
        let start =
            |port, path: &Path| Some(opened(ThreadsBackend::start(2, 4, port).unwrap(), path));
        assert_drop_delivers_what_it_held("threads-join", start);
    }

    /// Dropping the backend while a worker's `pread` is stuck in the kernel (see
    /// `stuck_file`) returns once the grace has passed, leaving the worker detached: it still
    /// owns its request, the file's descriptor with it, so no file opened later is given that
    /// number while the read may still land. Before, the drop waited for the read forever.
    #[test]
    fn dropping_the_backend_leaves_a_stuck_read_to_its_worker() {
        let test = "threads: dropping_the_backend_leaves_a_stuck_read_to_its_worker";
        on_a_stuck_read(test, |f| {
            let (got, port) = Collect::port(Duration::ZERO);
            let b = ThreadsBackend::start(1, 2, port).unwrap();
            b.submit(&mut vec![page_read(1, f, 0)]);
            // Once the worker has taken it, the read is under way.
            crate::testutil::wait_until("the worker to take the read", || {
                b.shared.queue.lock().unwrap().requests.is_empty()
            });
            let drop_returned = drop_returns(b);
            // The detached worker still holds the request, and its file.
            StuckRun {
                drop_returned,
                read_held: Arc::strong_count(f) == 2 && got.tokens().is_empty(),
            }
        });
    }

    /// A batch of reads wakes as many workers as it has reads, not every idle worker. With
    /// `notify_all` a batch of 2 woke all 64 idle workers, 62 of them to an empty queue; at
    /// `--queue-depth 4096`, 4,096 workers woke for each batch, and 4 streams of `seqp` on the
    /// threads backend read at half the rate of depth 32 for ten times the CPU time.
    #[test]
    fn a_batch_wakes_one_worker_per_read() {
        let (_dir, path) = pattern_file("threads-wake", 4 * 4096);
        let (got, port) = Collect::port(Duration::ZERO);
        let (b, f) = opened(ThreadsBackend::start(64, 64, port).unwrap(), &path);
        let all_idle = || b.shared.queue.lock().unwrap().idle_workers == 64;
        crate::testutil::wait_until("every worker to wait for a request", all_idle);
        for round in 0..4u64 {
            b.submit(&mut vec![
                page_read(2 * round, &f, 0),
                page_read(2 * round + 1, &f, 1),
            ]);
            assert_eq!(
                got.take_within(2, PATIENCE).len(),
                2,
                "a read never completed"
            );
            crate::testutil::wait_until("every worker to wait again", all_idle);
        }
        let idle_wakes = b.shared.queue.lock().unwrap().idle_wakes;
        // Each read wakes one worker; a woken worker may find its read taken by one that was
        // already awake, and the futex may wake a waiter spuriously, so a few are allowed.
        assert!(
            idle_wakes < 16,
            "{idle_wakes} wakes to an empty queue for 8 reads in batches of 2"
        );
        drop(b);
    }

    /// Reads submitted on one thread while another shuts the backend down each come back
    /// once, read or refused, by the time the drop returns, however the two interleave.
    #[test]
    fn reads_racing_a_shutdown_each_complete_once() {
        let (_dir, path) = pattern_file("threads-race", 16 * 4096);
        race_submits_with_shutdown("threads", 300, 16, &|port| {
            let (b, f) = opened(ThreadsBackend::start(4, 16, port).unwrap(), &path);
            (Box::new(b), f)
        });
    }
}
