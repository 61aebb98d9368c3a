//! The io_uring backend: `O_DIRECT` reads through one ring, batched.
//!
//! One ring thread owns the ring and every buffer in flight. Submitters (the driver, under its
//! lock) append requests to a bounded queue and write to an `eventfd`; the ring keeps one read of
//! that eventfd outstanding, so a submission wakes the ring thread out of `io_uring_enter`. Each
//! turn the thread moves every queued request into submission entries, submits them all with one
//! `io_uring_enter` that also waits for at least one completion, then reaps every completion queue
//! entry and delivers them as one burst, with no lock of its own held. Batching happens on both
//! sides: a burst of reads from many application threads costs one system call, and a burst of
//! completions costs one system call and one turn of the driver's lock. The second matters on this
//! kind of virtual disk, which completes its whole queue at once: handing the driver 32 completions
//! one by one, each through a lock contended by a thousand readers, left the device idle about 5% of
//! a 1,024-stream run (in-flight count sampled from `/proc/diskstats`); one burst cut that to 2%.
//!
//! A request's buffer and file stay owned by the ring thread's in-flight table from submission to
//! completion, so the kernel writes into memory nobody else can reach or free. Shutdown and drop
//! keep the lifecycle every backend keeps (`lifecycle.rs`): after shutdown the thread starts no
//! read (a request it takes then, queued or submitted later, completes with an error it
//! delivers), while the reads in the kernel complete as they come; dropping the backend tells
//! the thread to end: it asks the kernel to cancel the reads it holds (so a read that waits for
//! its file, on a pipe or a hung network mount, does not hold the drop), waits for every one
//! (including its own eventfd read) to complete, and only then drops the ring and the buffers
//! and ends; the drop joins it, waiting at most `lifecycle::STUCK_READ_GRACE` (10 s), as the
//! thread pool's drop waits for a stuck `pread`. A read the kernel cannot cancel (one asleep
//! uninterruptibly on a hard-mounted network file system) then leaves the ring thread detached,
//! still owning the ring and every buffer and file the kernel holds, which it frees only once
//! their reads have completed. A ring thread that unwinds instead (a panic) leaks the buffers
//! of the reads the kernel still holds rather than free them under it.
//!
//! [`UringBackend::start`] creates the ring and pushes a no-op through it before returning, so a
//! kernel or sandbox that refuses io_uring (ENOSYS, EPERM, a seccomp filter) is detected when the
//! engine is built, and the engine falls back to the threads backend.

#![allow(unsafe_code)]

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use foresight_core::FileId;
use io_uring::{opcode, types, IoUring};

use super::lifecycle::{refuse, Joined, PanicAlarm, Phase, STUCK_READ_GRACE};
use super::{
    real_handle, real_handle_beneath, BackendKind, CompletionPort, FileHandle, IoBackend,
    IoCompletion, IoRequest,
};
use crate::beneath::RootDir;
use crate::sys;

/// User data of the ring's own eventfd read.
const WAKE_TOKEN: u64 = u64::MAX;
/// User data of the start-up probe.
const PROBE_TOKEN: u64 = u64::MAX - 1;
/// User data of the cancellations sent when the backend is dropped.
const CANCEL_TOKEN: u64 = u64::MAX - 2;

struct Queue {
    requests: VecDeque<IoRequest>,
    phase: Phase,
}

struct Shared {
    queue: Mutex<Queue>,
    wake: File,
    capacity: usize,
    /// Whether the ring thread asks the kernel to cancel its reads when the backend is dropped.
    /// Always, but in a test that stands for a read the kernel cannot cancel.
    cancel_at_end: bool,
}

/// io_uring with `O_DIRECT`. See the module documentation.
pub struct UringBackend {
    shared: Arc<Shared>,
    /// The ring thread, joined when the backend is dropped.
    threads: Joined,
    /// How long the drop waits for the ring thread: `lifecycle::STUCK_READ_GRACE`, shorter in
    /// tests.
    grace: Duration,
}

impl UringBackend {
    /// Creates a ring for `capacity` outstanding reads, checks that the kernel accepts io_uring
    /// operations, and starts the ring thread. An error means io_uring is not available here.
    pub fn start(capacity: usize, port: Arc<CompletionPort>) -> io::Result<UringBackend> {
        Self::start_with(capacity, port, STUCK_READ_GRACE, true)
    }

    /// As [`UringBackend::start`], with the drop's grace and whether the drop cancels the reads
    /// the kernel holds.
    fn start_with(
        capacity: usize,
        port: Arc<CompletionPort>,
        grace: Duration,
        cancel_at_end: bool,
    ) -> io::Result<UringBackend> {
        assert!(capacity >= 1, "a backend needs room for one request");
        // One extra entry for the eventfd read; the completion queue is twice the size by default.
        let entries = (capacity as u32 + 1).next_power_of_two();
        let mut ring = IoUring::new(entries)?;
        probe(&mut ring)?;
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                requests: VecDeque::with_capacity(capacity),
                phase: Phase::Running,
            }),
            wake: sys::eventfd()?,
            capacity,
            cancel_at_end,
        });
        let s = shared.clone();
        let ring_thread = std::thread::Builder::new()
            .name("foresight-uring".into())
            .spawn(move || {
                // Sounds after the ring thread's state is dropped, which leaks what the kernel
                // holds.
                PanicAlarm(port.clone()).watch(|| RingThread::new(ring, s, port, capacity).run())
            })?;
        let threads = Joined::default();
        threads.push(ring_thread);
        Ok(UringBackend {
            shared,
            threads,
            grace,
        })
    }

    /// Moves the backend to `phase` and wakes the ring thread if that moved it.
    fn enter(&self, phase: Phase) {
        let moved = {
            let mut q = self.shared.queue.lock().expect("uring queue poisoned");
            q.phase.advance(phase)
        };
        if moved {
            self.wake();
        }
    }

    fn wake(&self) {
        // A full eventfd counter (2^64 - 2 writes unread) cannot happen: the ring thread reads it
        // every turn. Any other error would leave the ring thread asleep, which is a bug.
        (&self.shared.wake)
            .write_all(&1u64.to_ne_bytes())
            .expect("writing the io_uring wake-up eventfd");
    }
}

/// Submits a no-op and waits for it: proves `io_uring_enter` works, not only `io_uring_setup`.
fn probe(ring: &mut IoUring) -> io::Result<()> {
    let nop = opcode::Nop::new().build().user_data(PROBE_TOKEN);
    // SAFETY: a no-op references no memory.
    unsafe { ring.submission().push(&nop) }
        .map_err(|_| io::Error::other("io_uring submission queue full at start"))?;
    ring.submit_and_wait(1)?;
    let cqe = ring
        .completion()
        .next()
        .ok_or_else(|| io::Error::other("io_uring returned no completion for the probe"))?;
    if cqe.result() < 0 {
        return Err(io::Error::from_raw_os_error(-cqe.result()));
    }
    Ok(())
}

struct RingThread {
    ring: IoUring,
    shared: Arc<Shared>,
    port: Arc<CompletionPort>,
    /// Requests in the kernel, by slot; the slot number is the entry's user data.
    slots: Vec<Option<IoRequest>>,
    free_slots: Vec<usize>,
    in_kernel: usize,
    /// Target of the eventfd read; boxed so its address is stable while the kernel holds it.
    wake_buf: Box<[u8; 8]>,
    wake_armed: bool,
    local: Vec<IoRequest>,
    done: Vec<IoCompletion>,
    cqes: Vec<(u64, i32)>,
    /// Whether the reads in the kernel have been asked to stop (once, when the backend ends).
    cancelled: bool,
}

impl RingThread {
    fn new(ring: IoUring, shared: Arc<Shared>, port: Arc<CompletionPort>, capacity: usize) -> Self {
        RingThread {
            ring,
            shared,
            port,
            slots: (0..capacity).map(|_| None).collect(),
            free_slots: (0..capacity).rev().collect(),
            in_kernel: 0,
            wake_buf: Box::new([0; 8]),
            wake_armed: false,
            local: Vec::with_capacity(capacity),
            done: Vec::with_capacity(capacity),
            cqes: Vec::with_capacity(2 * capacity + 2),
            cancelled: false,
        }
    }

    fn arm_wake(&mut self) {
        let e = opcode::Read::new(
            types::Fd(self.shared.wake.as_raw_fd()),
            self.wake_buf.as_mut_ptr(),
            8,
        )
        .build()
        .user_data(WAKE_TOKEN);
        // SAFETY: `wake_buf` is heap memory owned by this thread that is not touched until the read
        // completes, and the thread never exits with the read outstanding (see `run`).
        self.push(&e);
        self.wake_armed = true;
    }

    fn push(&mut self, e: &io_uring::squeue::Entry) {
        loop {
            // SAFETY: every entry pushed here references memory that outlives its completion (the
            // callers' comments say why).
            if unsafe { self.ring.submission().push(e) }.is_ok() {
                return;
            }
            // The submission queue is full: hand what is there to the kernel and retry.
            if let Err(err) = self.ring.submit() {
                let pause =
                    retry_pause(&err).unwrap_or_else(|| panic!("io_uring submit failed: {err}"));
                self.reap();
                std::thread::sleep(pause);
            }
        }
    }

    fn run(mut self) {
        loop {
            let phase = {
                let mut q = self.shared.queue.lock().expect("uring queue poisoned");
                self.local.extend(q.requests.drain(..));
                q.phase
            };
            // Re-arm the wake-up read unless ending. The drop moves the phase before it writes
            // the eventfd, so a read armed after a stale look at the phase still completes.
            if !self.wake_armed && phase != Phase::Ending {
                self.arm_wake();
            }
            let mut batch = std::mem::take(&mut self.local);
            for req in batch.drain(..) {
                if phase.running() {
                    self.start_read(req);
                } else {
                    self.done.push(refuse(req, BackendKind::Uring));
                }
            }
            self.local = batch;
            if !self.done.is_empty() {
                // Refused requests: delivered now, not after the next completion, which may be
                // long in coming. What was pushed is submitted next turn.
                self.port.deliver_all(&mut self.done);
                continue;
            }
            if phase == Phase::Ending && self.in_kernel == 0 && !self.wake_armed {
                // Nothing of ours is left in the kernel: the ring and the buffers may go.
                return;
            }
            if phase == Phase::Ending && !self.cancelled && self.shared.cancel_at_end {
                self.cancel_reads();
            }
            if let Err(e) = self.ring.submit_and_wait(1) {
                let pause = retry_pause(&e).unwrap_or_else(|| panic!("io_uring_enter failed: {e}"));
                std::thread::sleep(pause);
            }
            self.reap();
            // One delivery per burst: the driver takes its lock once for all of them and hands
            // the reads they free up back in one batch, which the next turn submits.
            self.port.deliver_all(&mut self.done);
        }
    }

    /// Asks the kernel to stop every read of ours it holds: the backend is being dropped, and
    /// the drop waits for them. A read that waits for its file (a pipe, a hung network mount)
    /// would otherwise hold the drop for as long; one already under way on a disk completes as
    /// it would have. Each completes once either way, cancelled (`ECANCELED`) or not.
    fn cancel_reads(&mut self) {
        self.cancelled = true;
        let held: Vec<u64> = (0..self.slots.len())
            .filter(|&i| self.slots[i].is_some())
            .map(|i| i as u64)
            .collect();
        for slot in held {
            let e = opcode::AsyncCancel::new(slot)
                .build()
                .user_data(CANCEL_TOKEN);
            // A cancellation references no memory.
            self.push(&e);
        }
    }

    fn start_read(&mut self, mut req: IoRequest) {
        req.assert_valid();
        let slot = self
            .free_slots
            .pop()
            .expect("uring backend over its bound: more requests than capacity");
        let fd = req
            .file
            .file
            .as_ref()
            .expect("the uring backend opens real files only")
            .as_raw_fd();
        // SAFETY: `buf_offset + len_bytes <= capacity` was asserted, so the pointer stays inside
        // the buffer.
        let ptr = unsafe { req.buf.as_mut_ptr().add(req.buf_offset) };
        let e = opcode::Read::new(types::Fd(fd), ptr, req.len_bytes as u32)
            .offset(req.offset_bytes)
            .build()
            .user_data(slot as u64);
        self.slots[slot] = Some(req);
        self.in_kernel += 1;
        // SAFETY (for the push): the buffer and the file are owned by `slots[slot]` until the
        // completion for this slot is reaped; nothing else can reach them meanwhile.
        self.push(&e);
    }

    /// Moves every available completion into `done`, and notes a completed wake-up read.
    fn reap(&mut self) {
        let mut cqes = std::mem::take(&mut self.cqes);
        cqes.extend(self.ring.completion().map(|c| (c.user_data(), c.result())));
        for (token, res) in cqes.drain(..) {
            if token == CANCEL_TOKEN {
                // The read it names completes on its own (cancelled, or done already).
                continue;
            }
            if token == WAKE_TOKEN {
                self.wake_armed = false;
                continue;
            }
            let slot = token as usize;
            let req = self.slots[slot]
                .take()
                .expect("completion for an empty slot");
            self.free_slots.push(slot);
            self.in_kernel -= 1;
            let result = if res < 0 {
                Err(io::Error::from_raw_os_error(-res))
            } else {
                Ok(res as usize)
            };
            self.done.push(IoCompletion {
                token: req.token,
                buf: req.buf,
                result,
            });
        }
        self.cqes = cqes;
    }
}

impl Drop for RingThread {
    /// `run` returns only once nothing of ours is in the kernel; a thread that unwinds (a panic
    /// in the sink it delivered to, or in the ring's own checks) drops this with reads, and the
    /// eventfd read, still there. Closing the ring does not wait for them, and the kernel may
    /// still write into their buffers: those are leaked, not freed under it.
    fn drop(&mut self) {
        if self.in_kernel > 0 || self.wake_armed {
            std::mem::forget(std::mem::take(&mut self.slots));
            std::mem::forget(std::mem::replace(&mut self.wake_buf, Box::new([0; 8])));
        }
    }
}

/// How long to wait before entering the ring again after `io_uring_enter` failed with `e`, or
/// `None` when the failure is not one a retry can cure (a bad descriptor or argument: a bug here).
///
/// - `EINTR`: a signal arrived; enter again at once.
/// - `EBUSY`: the completion queue is full; the caller reaps, which makes room, then enters again.
/// - `EAGAIN`, `ENOMEM`: the kernel is short of memory for new requests. The reads already in the
///   kernel still complete, so a short pause and a reap free what they hold; panicking here
///   stranded every reader waiting on the ring.
fn retry_pause(e: &io::Error) -> Option<std::time::Duration> {
    if e.kind() == io::ErrorKind::Interrupted {
        return Some(std::time::Duration::ZERO);
    }
    match e.raw_os_error() {
        Some(libc::EBUSY) => Some(std::time::Duration::ZERO),
        Some(libc::EAGAIN) | Some(libc::ENOMEM) => Some(std::time::Duration::from_millis(1)),
        _ => None,
    }
}

impl IoBackend for UringBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Uring
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
        {
            let mut q = self.shared.queue.lock().expect("uring queue poisoned");
            assert!(
                q.requests.len() + batch.len() <= self.shared.capacity,
                "uring backend over its bound of {} requests",
                self.shared.capacity
            );
            q.requests.extend(batch.drain(..));
        }
        self.wake();
    }

    fn shutdown(&self) {
        self.enter(Phase::Shut);
    }
}

impl Drop for UringBackend {
    /// Ends the ring thread and joins it, waiting at most the grace
    /// (`lifecycle::STUCK_READ_GRACE`): a ring thread still waiting then for a read the kernel
    /// did not cancel is left detached. It owns the ring and every buffer and file of the reads
    /// in the kernel, and frees them only once the kernel has completed each (`run` returns only
    /// then), so nothing is freed while the kernel may still write into it; what it delivers
    /// meanwhile lands in a closed port or a sink that is gone, and is dropped with its buffer.
    fn drop(&mut self) {
        self.enter(Phase::Ending);
        self.threads.join_within(self.grace);
    }
}

#[cfg(test)]
mod tests {
    use super::super::lifecycle::testing::{
        assert_drop_delivers_what_it_held, assert_refused_after_shutdown, opened, page_read,
        pattern_file, race_submits_with_shutdown, Collect, FILE, PATIENCE,
    };
    use super::*;

    /// A ring for `capacity` reads delivering to `port`, or `None` (and why, on stderr) where
    /// io_uring is refused.
    fn ring_or_skip(
        test: &str,
        capacity: usize,
        port: Arc<CompletionPort>,
    ) -> Option<UringBackend> {
        match UringBackend::start(capacity, port) {
            Ok(b) => Some(b),
            Err(e) => {
                eprintln!("{test}: skipped: io_uring is refused here ({e})");
                None
            }
        }
    }

    /// A request submitted after shutdown completes with an error the driver sees. Before, the
    /// ring thread ended at shutdown once nothing was in the kernel, and it never completed.
    #[test]
    fn a_request_after_shutdown_gets_an_error() {
        let test = "a_request_after_shutdown_gets_an_error";
        let start = |port, path: &Path| Some(opened(ring_or_skip(test, 4, port)?, path));
        // A ring thread that would end at shutdown (nothing is in the kernel) holds the shared
        // state.
        assert_refused_after_shutdown("uring-after", start, |b| Arc::strong_count(&b.shared) > 1);
    }

    /// Dropping the backend joins the ring thread, so what it held is delivered (its buffer and
    /// descriptor let go) by the time the drop returns; here a sink that takes its time. Before,
    /// the thread was left to run on, and the drop returned first.
    #[test]
    fn dropping_the_backend_joins_the_ring_thread() {
        let test = "dropping_the_backend_joins_the_ring_thread";
        let start = |port, path: &Path| Some(opened(ring_or_skip(test, 4, port)?, path));
        assert_drop_delivers_what_it_held("uring-join", start);
    }

    /// A read of one page (token 1) from the read end of a new pipe, its file, and the pipe's
    /// write end: the kernel holds the read until something is written there.
    fn pipe_read() -> (IoRequest, Arc<FileHandle>, std::io::PipeWriter) {
        let (reader, writer) = std::io::pipe().unwrap();
        let f = Arc::new(FileHandle {
            id: FILE,
            path: "pipe".into(),
            file: Some(File::from(std::os::fd::OwnedFd::from(reader))),
            direct: false,
            size_bytes: 4096,
            identity: (0, 0),
            modified: None,
            volume_offset_bytes: None,
        });
        let mut req = page_read(1, &f, 0);
        // A pipe has no offsets: read at the current position.
        req.offset_bytes = u64::MAX;
        (req, f, writer)
    }

    /// Submits `req` to `b` and waits until the ring thread has taken it: from then on, running,
    /// the read is in the kernel.
    fn submit_until_taken(b: &UringBackend, req: IoRequest) {
        b.submit(&mut vec![req]);
        crate::testutil::wait_until("the ring thread to take the read", || {
            b.shared.queue.lock().unwrap().requests.is_empty()
        });
    }

    /// Drops `b` on a thread of its own; the receiver hears once the drop has returned.
    fn drop_on_a_thread(b: UringBackend) -> std::sync::mpsc::Receiver<()> {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            drop(b);
            let _ = tx.send(());
        });
        rx
    }

    /// Dropping the backend with a read the kernel holds until its file has data (here the read
    /// end of a pipe nobody writes to) returns: the read is cancelled, and completes with an
    /// error. Before, the drop waited for the read forever.
    #[test]
    fn dropping_the_backend_cancels_a_read_that_waits_for_its_file() {
        let (got, port) = Collect::port(Duration::ZERO);
        let test = "dropping_the_backend_cancels_a_read_that_waits_for_its_file";
        let Some(b) = ring_or_skip(test, 4, port) else {
            return;
        };
        let (req, _f, writer) = pipe_read();
        submit_until_taken(&b, req);
        drop_on_a_thread(b)
            .recv_timeout(PATIENCE)
            .expect("the drop waited for a read that never comes");
        let done = got.take_within(1, PATIENCE);
        assert_eq!(done.len(), 1, "the read never completed");
        let e = done[0].result.as_ref().unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ECANCELED), "{e}");
        drop(writer);
    }

    /// Dropping the backend while the kernel holds a read it does not cancel returns once the
    /// grace has passed, and leaves the read to the ring thread, detached: the thread still owns
    /// the read's buffer and file while the kernel may write into it, delivers the read when it
    /// completes, and only then frees the ring and ends. The read stands for one asleep
    /// uninterruptibly on a hard-mounted network file system: a read of a pipe nobody writes to
    /// yet, with the cancellation the drop sends turned off. Before, the drop waited for the read
    /// as long as it took (here, until the test gave up and wrote to the pipe).
    #[test]
    fn dropping_the_backend_leaves_a_read_the_kernel_does_not_cancel_to_the_ring_thread() {
        let test =
            "dropping_the_backend_leaves_a_read_the_kernel_does_not_cancel_to_the_ring_thread";
        let (got, port) = Collect::port(Duration::ZERO);
        let b = match UringBackend::start_with(4, port, Duration::from_millis(200), false) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("{test}: skipped: io_uring is refused here ({e})");
                return;
            }
        };
        let (req, f, mut writer) = pipe_read();
        submit_until_taken(&b, req);
        if drop_on_a_thread(b).recv_timeout(PATIENCE).is_err() {
            // Ends the read, and so the drop, before failing.
            let _ = writer.write_all(&[7u8; 4096]);
            panic!("{test}: the drop waited for a read the kernel holds");
        }
        assert_eq!(
            Arc::strong_count(&f),
            2,
            "the read's request was let go while the kernel held it"
        );
        assert!(
            got.tokens().is_empty(),
            "the read completed before its data"
        );
        writer.write_all(&[7u8; 4096]).unwrap();
        let done = got.take_within(1, PATIENCE);
        assert_eq!(done.len(), 1, "the detached ring thread never delivered");
        assert_eq!(done[0].result.as_ref().ok(), Some(&4096));
        assert!(done[0].buf.as_slice()[..4096].iter().all(|&x| x == 7));
        drop(done);
        crate::testutil::wait_until("the detached ring thread to let the file go", || {
            Arc::strong_count(&f) == 1
        });
    }

    /// A ring thread that unwinds (here dropped as a panic would drop it) while the kernel
    /// holds one of its reads (on a pipe nobody has written to yet) and its eventfd read does
    /// not free their buffers: the kernel may still write into them once the ring is closed.
    /// Before, the request (its buffer, its file) was freed with the thread's table.
    #[test]
    fn a_ring_thread_that_unwinds_frees_no_buffer_the_kernel_holds() {
        let mut ring = match IoUring::new(4) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("skipped: io_uring is refused here ({e})");
                return;
            }
        };
        if let Err(e) = probe(&mut ring) {
            eprintln!("skipped: io_uring is refused here ({e})");
            return;
        }
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                requests: VecDeque::new(),
                phase: Phase::Running,
            }),
            wake: sys::eventfd().unwrap(),
            capacity: 4,
            cancel_at_end: true,
        });
        let mut t = RingThread::new(ring, shared, CompletionPort::new(), 4);
        let (req, f, mut writer) = pipe_read();
        t.arm_wake();
        t.start_read(req);
        t.ring.submit().unwrap();
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
            let _held = t;
            panic!("a sink bug, on purpose");
        }));
        assert!(unwound.is_err());
        assert_eq!(
            Arc::strong_count(&f),
            2,
            "the read the kernel held was freed with the thread"
        );
        // The kernel may complete it now, into memory nobody else was given.
        let _ = writer.write_all(&[9u8; 4096]);
    }

    #[test]
    fn short_kernel_memory_and_interruptions_are_retried_and_bad_arguments_are_not() {
        let err = io::Error::from_raw_os_error;
        for code in [libc::EINTR, libc::EBUSY] {
            assert_eq!(retry_pause(&err(code)), Some(std::time::Duration::ZERO));
        }
        for code in [libc::EAGAIN, libc::ENOMEM] {
            let pause = retry_pause(&err(code)).expect("retried");
            assert!(pause > std::time::Duration::ZERO);
        }
        for code in [libc::EBADF, libc::EFAULT, libc::EINVAL] {
            assert_eq!(retry_pause(&err(code)), None);
        }
    }

    /// Reads submitted on one thread while another shuts the ring down each come back once,
    /// read or refused, by the time the drop returns, however the two interleave.
    #[test]
    fn reads_racing_a_shutdown_each_complete_once() {
        let test = "reads_racing_a_shutdown_each_complete_once";
        if ring_or_skip(test, 1, CompletionPort::new()).is_none() {
            return;
        }
        let (_dir, path) = pattern_file("uring-race", 16 * 4096);
        race_submits_with_shutdown("uring", 300, 16, &|port| {
            let (b, f) = opened(UringBackend::start(16, port).unwrap(), &path);
            (Box::new(b), f)
        });
    }
}
