//! The portable backend: `pread` on a bounded pool of worker threads.
//!
//! Requests wait in one FIFO queue that holds at most `capacity` of them (the driver never submits
//! more; the bound is asserted); each worker takes the oldest, performs it with `pread` (retrying
//! interruptions and short reads, so a short result means the end of the file), and delivers the
//! completion with no lock held. With `capacity` workers, every submitted request is being served,
//! so the device sees up to `capacity` reads in flight, like io_uring at that queue depth. Files are
//! opened with `O_DIRECT` when asked, and buffered where the file system refuses it.

use std::collections::VecDeque;
use std::io;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};

use foresight_core::FileId;

use super::{
    perform_blocking, real_handle, real_handle_beneath, BackendKind, CompletionPort, FileHandle,
    IoBackend, IoRequest,
};
use crate::beneath::RootDir;

struct Queue {
    requests: VecDeque<IoRequest>,
    shutdown: bool,
}

struct Shared {
    queue: Mutex<Queue>,
    ready: Condvar,
    capacity: usize,
    port: Arc<CompletionPort>,
}

/// `pread` on a pool of threads. See the module documentation.
pub struct ThreadsBackend {
    shared: Arc<Shared>,
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
                shutdown: false,
            }),
            ready: Condvar::new(),
            capacity,
            port,
        });
        for i in 0..workers.clamp(1, capacity) {
            let s = shared.clone();
            std::thread::Builder::new()
                .name(format!("foresight-io-{i}"))
                .spawn(move || worker(&s))?;
        }
        Ok(ThreadsBackend { shared })
    }
}

fn worker(s: &Shared) {
    loop {
        let req = {
            let mut q = s.queue.lock().expect("threads backend queue poisoned");
            loop {
                if let Some(r) = q.requests.pop_front() {
                    break r;
                }
                if q.shutdown {
                    return;
                }
                q = s.ready.wait(q).expect("threads backend queue poisoned");
            }
        };
        s.port.deliver(perform_blocking(req));
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
        if n == 1 {
            self.shared.ready.notify_one();
        } else {
            self.shared.ready.notify_all();
        }
    }

    fn shutdown(&self) {
        self.shared
            .queue
            .lock()
            .expect("threads backend queue poisoned")
            .shutdown = true;
        self.shared.ready.notify_all();
    }
}

impl Drop for ThreadsBackend {
    fn drop(&mut self) {
        self.shutdown();
    }
}
