//! I/O backends: one trait, four ways of reading bytes.
//!
//! The engine's driver decides what to read (the policy's fetches and the application's demand)
//! and hands each read to an [`IoBackend`] as an [`IoRequest`] that owns its buffer. The backend
//! performs it however it does I/O and hands the buffer back in an [`IoCompletion`] through a
//! [`CompletionPort`], from whatever thread it completes on. This is the shape of foyer's
//! `IoEngine`: io_uring and a thread pool behind one trait, so the driver is written once.
//!
//! - [`uring`]: io_uring, `O_DIRECT`, one ring thread that batches submissions and reaps
//!   completions;
//! - [`threads`]: `pread` on a bounded pool of threads; portable, and the fallback when io_uring
//!   is refused;
//! - [`noop`]: files held in memory, with injectable faults (EIO, short reads, delays), for tests;
//! - [`emulated`]: reads the real bytes but completes each read when a `foresight-device` model
//!   says the modelled device would have, so the engine can be measured against hardware this
//!   machine does not have;
//! - [`array`](mod@array): not a way of reading but a layer over [`emulated`] on a RAID-0: the RAID driver's
//!   cache, driven by the array-level policy of `msp+...`.
//!
//! The contract every backend keeps: `submit` never blocks (the driver never has more than
//! [`IoBackend::capacity`] requests outstanding, and a backend asserts it); every request completes
//! exactly once, successfully or not; a completion's `Ok(n)` with `n` short of the request means the
//! file ended (or a transient short read; the driver re-reads the remainder and only a zero-length
//! read ends the file); completions are delivered without holding any backend lock, so the driver
//! may submit from inside its completion handler.
//!
//! Shutdown and drop (`lifecycle.rs`, the one state machine every backend keeps): after
//! [`IoBackend::shutdown`] a backend starts no read, and a request it has not started (queued,
//! or submitted later) completes with an error, delivered by the backend's own thread; reads
//! already started complete as they come. Dropping the backend joins every thread it started
//! (but the one the drop runs on, if it is one of them), once they have delivered what they hold;
//! a thread of a blocking backend stuck in a `pread` past `lifecycle::STUCK_READ_GRACE` is left
//! detached instead, owning its request, and so is the io_uring ring thread waiting for a read
//! the kernel did not cancel, owning the ring and what the kernel holds (see `lifecycle.rs`).
//!
//! A backend thread that ends in a panic (in the sink it delivers to, or a bug of its own) tells
//! its port so, with the panic's message, as it ends ([`CompletionPort::backend_panicked`]): the
//! reads it held never complete, and the engine above breaks rather than leave their readers
//! waiting.

pub mod array;
pub mod emulated;
pub(crate) mod lifecycle;
pub mod noop;
pub mod threads;
#[cfg(target_os = "linux")]
pub mod uring;

use std::fs::File;
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};

use foresight_core::{ByteLen, FileId, StreamId};
use foresight_policy::layout::Striping;

use crate::beneath::RootDir;
use crate::buffer::AlignedBuf;

/// Which backend an engine runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum BackendKind {
    /// io_uring with `O_DIRECT`.
    #[default]
    Uring,
    /// `pread` on a thread pool.
    Threads,
    /// In-memory files with injectable faults.
    Noop,
    /// Real bytes, completion times from a device model.
    Emulated,
}

impl BackendKind {
    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Uring => "uring",
            BackendKind::Threads => "threads",
            BackendKind::Noop => "noop",
            BackendKind::Emulated => "emulated",
        }
    }
}

impl std::fmt::Display for BackendKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// An open file as a backend sees it.
#[derive(Debug)]
pub struct FileHandle {
    /// The engine's id for the file.
    pub id: FileId,
    /// Where it was opened from.
    pub path: PathBuf,
    /// The descriptor, for backends that read real files (`None` for in-memory files).
    pub file: Option<File>,
    /// Whether the descriptor was opened with `O_DIRECT` (every read must then be aligned to
    /// [`crate::buffer::ALIGN_BYTES`] in offset, length and memory).
    pub direct: bool,
    /// Size when opened.
    pub size_bytes: u64,
    /// Identity for recognising a file opened twice: `(device, inode)` for real files. The engine
    /// also compares size and `modified`, since a file rewritten in place keeps both numbers.
    pub identity: (u64, u64),
    /// Last modification time when opened, where the file system keeps one (`None` for
    /// in-memory files).
    pub modified: Option<std::time::SystemTime>,
    /// Where the file starts on the modelled volume (emulated backend only).
    pub volume_offset_bytes: Option<u64>,
}

/// One read: `len_bytes` at `offset_bytes` of `file` into `buf[buf_offset..]`.
#[derive(Debug)]
pub struct IoRequest {
    /// The driver's identity for the read, echoed in the completion.
    pub token: u64,
    /// The file.
    pub file: Arc<FileHandle>,
    /// File offset of the first byte.
    pub offset_bytes: u64,
    /// The buffer, owned by the backend until the completion hands it back.
    pub buf: AlignedBuf,
    /// Where in `buf` the first byte goes.
    pub buf_offset: usize,
    /// Bytes to read; `buf_offset + len_bytes <= buf.capacity()`.
    pub len_bytes: usize,
    /// The reader the read is done for: the stream whose read missed, or whose read made the
    /// policy fetch (a fetch on a completion, a timer or a hint goes to the file's last reader,
    /// as the simulator charges it), `None` when no reader has read the file yet. The emulated
    /// backend's anticipatory scheduler waits for a reader's next request by it, as Linux's
    /// waits for a process; backends that schedule nothing ignore it.
    pub reader: Option<StreamId>,
}

impl IoRequest {
    /// Checks the request's own consistency (a driver bug otherwise).
    pub fn assert_valid(&self) {
        assert!(
            self.buf_offset + self.len_bytes <= self.buf.capacity() && self.len_bytes > 0,
            "request {} of {} bytes at buffer offset {} overflows a {} byte buffer",
            self.token,
            self.len_bytes,
            self.buf_offset,
            self.buf.capacity()
        );
    }
}

/// A finished read.
#[derive(Debug)]
pub struct IoCompletion {
    /// The request's token.
    pub token: u64,
    /// The buffer, back with the driver.
    pub buf: AlignedBuf,
    /// Bytes read, or the error.
    pub result: io::Result<usize>,
}

/// Receives completions: the engine's driver, or a backend wrapping another.
pub trait CompletionSink: Send + Sync {
    /// Handles one completion. Called from a backend thread, with no backend lock held.
    fn complete(&self, c: IoCompletion);

    /// Handles every completion in `cs`, in order, leaving it empty. A backend that reaps
    /// completions in bursts (the ring) calls this once per burst, so a sink behind a lock takes
    /// it once per burst rather than once per read.
    fn complete_all(&self, cs: &mut Vec<IoCompletion>) {
        for c in cs.drain(..) {
            self.complete(c);
        }
    }

    /// A thread of the backend delivering here ended in a panic (a policy's, in this sink or
    /// one it delivers to, or a bug of the backend's own), so reads it held, and with some
    /// backends every later read, will never complete. A sink that waits for completions must
    /// stop waiting: the engine breaks, so that its readers get an error rather than wait
    /// forever, and a backend layered over another passes it on. `why` is the panic's message
    /// (and where it was raised, when known). Called on the thread that panicked, with the
    /// panic caught, so it must not panic. The default, for a sink that waits for nothing,
    /// does nothing.
    fn backend_panicked(&self, _why: &str) {}
}

/// Where a backend delivers completions. It is connected to its sink after the backend starts
/// (the sink, the engine, owns the backend), and holds the sink weakly so the two do not keep each
/// other alive: once the engine is gone, completions are dropped with their buffers.
///
/// A delivery holds the sink for as long as the sink takes, so a backend thread delivering as the
/// engine is dropped can hold the engine's last reference, and drop the engine (and the backend,
/// which cannot join the thread it runs on) after the application's drop returned.
/// [`CompletionPort::close`] ends that: the engine closes its port as it drops, which waits for
/// the deliveries under way and drops every later completion, so its own reference is the last.
#[derive(Default)]
pub struct CompletionPort {
    target: OnceLock<Weak<dyn CompletionSink>>,
    /// Deliveries under way, and whether the port is closed.
    deliveries: Mutex<Deliveries>,
    /// Signalled when the last delivery under way ends on a closed port.
    idle: Condvar,
}

#[derive(Default)]
struct Deliveries {
    under_way: usize,
    closed: bool,
}

thread_local! {
    /// The ports with a delivery under way on this thread, by address (a sink may deliver to
    /// another port, or close one).
    static DELIVERING_HERE: std::cell::RefCell<Vec<usize>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A delivery under way: holds the sink, and ends the delivery when dropped, also when the sink
/// panics, so that [`CompletionPort::close`] does not wait for it forever.
struct Delivery<'a> {
    port: &'a CompletionPort,
    sink: Option<Arc<dyn CompletionSink>>,
}

impl Delivery<'_> {
    fn sink(&self) -> &dyn CompletionSink {
        self.sink.as_deref().expect("held until the drop")
    }
}

impl Drop for Delivery<'_> {
    fn drop(&mut self) {
        // The sink goes first: once the count falls, a closer may drop what owns it.
        drop(self.sink.take());
        let me = self.port.address();
        DELIVERING_HERE.with(|d| {
            let mut d = d.borrow_mut();
            if let Some(i) = d.iter().rposition(|&p| p == me) {
                d.remove(i);
            }
        });
        let mut d = self
            .port
            .deliveries
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        d.under_way -= 1;
        if d.closed {
            self.port.idle.notify_all();
        }
    }
}

impl CompletionPort {
    /// An unconnected port.
    pub fn new() -> Arc<CompletionPort> {
        Arc::new(CompletionPort::default())
    }

    /// Connects the port to its sink; a second call is a programmer error.
    pub fn connect(&self, sink: Weak<dyn CompletionSink>) {
        assert!(
            self.target.set(sink).is_ok(),
            "completion port connected twice"
        );
    }

    fn address(&self) -> usize {
        self as *const CompletionPort as usize
    }

    /// A delivery to the sink, or `None` if the port is closed or the sink gone.
    fn enter(&self) -> Option<Delivery<'_>> {
        // Called after a panic too (`backend_panicked`), which may have poisoned this lock; the
        // counts under it are whole whenever it is let go.
        let mut d = self.deliveries.lock().unwrap_or_else(|e| e.into_inner());
        if d.closed {
            return None;
        }
        let sink = self.target.get().and_then(Weak::upgrade)?;
        d.under_way += 1;
        DELIVERING_HERE.with(|d| d.borrow_mut().push(self.address()));
        Some(Delivery {
            port: self,
            sink: Some(sink),
        })
    }

    /// Hands a completion to the sink, if it still exists and the port is open.
    pub fn deliver(&self, c: IoCompletion) {
        if let Some(d) = self.enter() {
            d.sink().complete(c);
        }
    }

    /// Hands a burst of completions to the sink, in order, if it still exists and the port is
    /// open; `cs` is left empty either way (otherwise the buffers are dropped, as in
    /// [`CompletionPort::deliver`]).
    pub fn deliver_all(&self, cs: &mut Vec<IoCompletion>) {
        match self.enter() {
            Some(d) => d.sink().complete_all(cs),
            None => cs.clear(),
        }
        debug_assert!(cs.is_empty(), "a sink left completions undelivered");
    }

    /// Tells the sink, if it still exists and the port is open, that a thread of the backend
    /// ended in a panic (see [`CompletionSink::backend_panicked`]). A backend's threads call
    /// it through a `PanicAlarm` (`lifecycle.rs`), which catches the panic and gives its
    /// message as `why`.
    pub fn backend_panicked(&self, why: &str) {
        if let Some(d) = self.enter() {
            d.sink().backend_panicked(why);
        }
    }

    /// Whether the calling thread is delivering through this port (a sink that drops what it
    /// delivers to, or closes the port, must not wait for its own delivery).
    pub(crate) fn delivering_here(&self) -> bool {
        let me = self.address();
        DELIVERING_HERE.with(|d| d.borrow().contains(&me))
    }

    /// Closes the port: every later completion is dropped with its buffer, and this returns once
    /// the deliveries under way have ended (on other threads: one under way on the calling
    /// thread, which closes from inside a sink, cannot end first), so that no backend thread
    /// holds the sink any more. Idempotent.
    pub fn close(&self) {
        let me = self.address();
        let here = DELIVERING_HERE.with(|d| d.borrow().iter().filter(|&&p| p == me).count());
        let mut d = self.deliveries.lock().expect("completion port poisoned");
        d.closed = true;
        while d.under_way > here {
            d = self.idle.wait(d).expect("completion port poisoned");
        }
    }
}

impl std::fmt::Debug for CompletionPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "CompletionPort(connected: {})",
            self.target.get().is_some()
        )
    }
}

/// The volume a backend models, for the layout policies see (emulated backend only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelledVolume {
    /// Bytes on the modelled volume.
    pub volume_bytes: ByteLen,
    /// Its striping, if it is an array.
    pub striping: Option<Striping>,
}

/// The interface every backend implements. See the module documentation for the contract.
pub trait IoBackend: Send + Sync {
    /// Which backend this is.
    fn kind(&self) -> BackendKind;
    /// Opens `path` for reading as file `id`; with `direct`, tries `O_DIRECT` first and falls back
    /// to buffered reads where the file system refuses it (the handle says which it got).
    fn open(&self, path: &Path, id: FileId, direct: bool) -> io::Result<FileHandle>;
    /// Opens `rel` beneath `root` (see [`crate::beneath`]: the lookup cannot leave the
    /// directory) for reading as file `id`, as [`IoBackend::open`] does otherwise. Backends that
    /// read no files of their own refuse it (`Unsupported`).
    fn open_beneath(
        &self,
        root: &RootDir,
        rel: &Path,
        id: FileId,
        direct: bool,
    ) -> io::Result<FileHandle> {
        let _ = (root, rel, id, direct);
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "the {} backend opens no files beneath a directory",
                self.kind()
            ),
        ))
    }
    /// The most requests that may be outstanding at once.
    fn capacity(&self) -> usize;
    /// Starts every request in `batch` (leaving it empty). Never blocks.
    fn submit(&self, batch: &mut Vec<IoRequest>);
    /// The reader `reader` (an [`IoRequest::reader`]) has closed, and its id may name a later
    /// reader: a backend that keeps figures per reader (the emulated anticipatory scheduler's
    /// think times) starts the next one afresh. Requests already submitted for it are still its.
    fn reader_closed(&self, reader: StreamId) {
        let _ = reader;
    }
    /// The engine is done with file `file`, placed at `volume_offset_bytes` (as the handle an
    /// [`IoBackend::open`] returned said): it forgot the file, and its id may name a later file
    /// (at the same place, under the emulated backend's spread placement), or it did not keep the
    /// handle an open returned (the file was open already, and is read through its first
    /// handle). A backend that keeps state per placed file (the array cache) drops it, so that
    /// state does not grow with the opens and no later file is served the forgotten one's bytes.
    /// Requests already submitted for it are still its.
    fn file_forgotten(&self, file: FileId, volume_offset_bytes: Option<u64>) {
        let _ = (file, volume_offset_bytes);
    }
    /// The modelled volume, if the backend models one.
    fn volume(&self) -> Option<ModelledVolume> {
        None
    }
    /// What the array-level cache did, if the backend is one ([`array`](mod@array)).
    fn array_stats(&self) -> Option<array::ArrayStats> {
        None
    }
    /// Stops the backend starting reads: from now on a request not yet started (queued, or
    /// submitted later) completes with an error, and reads started complete as they come. The
    /// backend's threads end, and are joined, when it is dropped. Idempotent.
    fn shutdown(&self);
}

/// Opens a real file for reading, with `O_DIRECT` when asked and allowed. Returns the file and
/// whether it is direct. Only regular files are accepted.
pub fn open_real(path: &Path, direct: bool) -> io::Result<(File, bool)> {
    open_real_with(path, direct, |flags| {
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(flags)
            .open(path)
    })
}

/// [`open_real`] for `rel` beneath `root`: the lookup and the open are one operation that cannot
/// leave the directory (see [`crate::beneath`]).
pub fn open_real_beneath(root: &RootDir, rel: &Path, direct: bool) -> io::Result<(File, bool)> {
    open_real_with(&root.display_path(rel), direct, |flags| {
        root.open_read(rel, flags)
    })
}

/// Opens with `open(flags)`, trying `O_DIRECT` first when asked; `name` is for messages.
fn open_real_with(
    name: &Path,
    direct: bool,
    open: impl Fn(libc::c_int) -> io::Result<File>,
) -> io::Result<(File, bool)> {
    // Opened non-blocking and checked on the descriptor, not the path: a FIFO put in the file's
    // place between a check of the path and the open would block the open, and the engine opens
    // under its lock, so every reader would wait with it.
    let open = |flags: libc::c_int| open(flags | libc::O_NONBLOCK);
    let (file, direct) = match direct.then(|| open(libc::O_DIRECT)) {
        Some(Ok(f)) => (f, true),
        // EINVAL: the file system does not do direct I/O (tmpfs, some FUSE); read buffered.
        Some(Err(e)) if e.raw_os_error() == Some(libc::EINVAL) => (open(0)?, false),
        Some(Err(e)) => return Err(e),
        None => (open(0)?, false),
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a regular file", name.display()),
        ));
    }
    if meta.len() == 0 && holds_bytes(&file)? {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "its size is 0 bytes but it holds data (a file of /proc, or of another file system \
             that makes a file's bytes as they are read and reports no size): the engine reads \
             a file up to its size when opened, so it would read nothing; read such a file \
             with std::fs::read instead",
        ));
    }
    // io_uring answers reads of a non-blocking file with EAGAIN instead of waiting for them.
    crate::sys::clear_nonblocking(&file)?;
    Ok((file, direct))
}

/// Whether `file`, whose size is 0, has a byte to read all the same. The engine reads a file up
/// to the size it had when opened (its chunks, the policy's layout and every reader's end of
/// file come from it), and the files of /proc (and of other file systems that make their bytes
/// as they are read) report a size of 0: they used to read as empty, without a word. One byte
/// read here tells them from empty files. `file` is still non-blocking, so a file whose bytes
/// are yet to come (a kernel log) answers `EAGAIN` at once, which counts as holding bytes: its
/// size says nothing of them either. A read that fails otherwise (`/proc/self/mem` at 0 is
/// `EIO`) is the open's error: an empty file reads nothing without failing, so this is not one,
/// and opened it would read as empty too. Every file is asked, however it was opened: a file
/// system that takes `O_DIRECT` may still make its bytes as they are read (a FUSE file system
/// whose server does not know a file's length), and one opened direct was once let through
/// unasked, to read as empty. On such a descriptor `O_DIRECT` is cleared for the probe and set
/// again after it: a direct read of one byte is refused for its alignment, and the question is
/// what a plain read of the file gives.
fn holds_bytes(file: &File) -> io::Result<bool> {
    let was_direct = crate::sys::set_direct(file, false)?;
    let probe = first_byte_read(file);
    if was_direct {
        crate::sys::set_direct(file, true)?;
    }
    probe
}

/// [`holds_bytes`]'s read of the first byte, on a descriptor without `O_DIRECT`.
fn first_byte_read(file: &File) -> io::Result<bool> {
    use std::os::unix::fs::FileExt;
    let mut one = [0u8; 1];
    loop {
        match file.read_at(&mut one, 0) {
            Ok(n) => return Ok(n > 0),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(true),
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!(
                        "its size is 0 bytes and a read of its first byte failed ({e}), which \
                         an empty file's does not; the engine reads a file up to its size when \
                         opened, so it would read nothing"
                    ),
                ))
            }
        }
    }
}

/// Builds a [`FileHandle`] for a real file.
pub fn real_handle(path: &Path, id: FileId, direct: bool) -> io::Result<FileHandle> {
    let (file, direct) = open_real(path, direct)?;
    handle_for(file, path.to_path_buf(), id, direct)
}

/// Builds a [`FileHandle`] for a real file `rel` beneath `root`.
pub fn real_handle_beneath(
    root: &RootDir,
    rel: &Path,
    id: FileId,
    direct: bool,
) -> io::Result<FileHandle> {
    let (file, direct) = open_real_beneath(root, rel, direct)?;
    handle_for(file, root.display_path(rel), id, direct)
}

fn handle_for(file: File, path: PathBuf, id: FileId, direct: bool) -> io::Result<FileHandle> {
    let meta = file.metadata()?;
    Ok(FileHandle {
        id,
        path,
        file: Some(file),
        direct,
        size_bytes: meta.len(),
        identity: (meta.dev(), meta.ino()),
        modified: meta.modified().ok(),
        volume_offset_bytes: None,
    })
}

/// Reads `buf.len()` bytes at `offset` with `pread`, retrying interrupted calls and continuing
/// after short reads; stops early only at the end of the file (a read of zero bytes). An error
/// after some bytes were read returns those bytes (the caller re-reads the rest and meets the error
/// then).
pub fn pread_full(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    use std::os::unix::fs::FileExt;
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) if done > 0 => break,
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// Performs one request synchronously on the calling thread (the threads backend's workers and
/// the emulated backend's readers use it).
pub fn perform_blocking(mut req: IoRequest) -> IoCompletion {
    req.assert_valid();
    let result = match req.file.file.as_ref() {
        Some(f) => {
            let range = req.buf_offset..req.buf_offset + req.len_bytes;
            pread_full(f, &mut req.buf.as_mut_slice()[range], req.offset_bytes)
        }
        None => Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this backend reads only real files",
        )),
    };
    IoCompletion {
        token: req.token,
        buf: req.buf,
        result,
    }
}

#[cfg(test)]
mod tests {
    use super::lifecycle::testing::Held;
    use super::*;
    use std::sync::Mutex;

    /// Records the tokens it is handed and how many times it was called.
    #[derive(Default)]
    struct Recorder {
        tokens: Mutex<Vec<u64>>,
        calls: Mutex<u32>,
    }

    impl CompletionSink for Recorder {
        fn complete(&self, c: IoCompletion) {
            *self.calls.lock().unwrap() += 1;
            self.tokens.lock().unwrap().push(c.token);
        }
    }

    fn burst(tokens: &[u64]) -> Vec<IoCompletion> {
        tokens
            .iter()
            .map(|&token| IoCompletion {
                token,
                buf: AlignedBuf::new(4096).expect("a 4 KiB buffer"),
                result: Ok(4096),
            })
            .collect()
    }

    #[test]
    fn a_burst_reaches_the_sink_in_order_and_leaves_the_vector_empty() {
        let port = CompletionPort::new();
        let rec = Arc::new(Recorder::default());
        let sink: Arc<dyn CompletionSink> = rec.clone();
        port.connect(Arc::downgrade(&sink));
        let mut cs = burst(&[7, 3, 9]);
        port.deliver_all(&mut cs);
        assert!(cs.is_empty());
        // The default `complete_all` hands each completion to `complete`, in arrival order.
        assert_eq!(*rec.tokens.lock().unwrap(), vec![7, 3, 9]);
        assert_eq!(*rec.calls.lock().unwrap(), 3);
    }

    /// The descriptor is opened non-blocking, so that a FIFO swapped in cannot block the open,
    /// and handed over blocking, since io_uring answers reads of a non-blocking file with EAGAIN;
    /// a FIFO is refused without blocking.
    #[test]
    fn a_real_file_is_handed_over_blocking_and_a_fifo_is_refused() {
        let (dir, file) = crate::testutil::temp_file("open-real", &[7u8; 8192]);
        for direct in [false, true] {
            let (f, _) = open_real(&file, direct).unwrap();
            let flags = crate::sys::status_flags(&f).unwrap();
            assert_eq!(flags & libc::O_NONBLOCK, 0, "direct {direct}");
        }
        let fifo = dir.path().join("p");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            let e = open_real(&fifo, true).unwrap_err();
            assert!(e.to_string().contains("not a regular file"), "{e}");
        }
    }

    /// A file opened direct whose size is 0 but which holds bytes is refused as one opened
    /// buffered is. No file system here both takes `O_DIRECT` and makes its bytes as they are
    /// read, so the open below stands in for one (a FUSE file system may be both): it reports
    /// `/proc/self/status`, size 0 and some bytes, as opened with the `O_DIRECT` it was asked
    /// for. Before, a file opened direct skipped the check and read as empty.
    #[test]
    fn a_file_opened_direct_whose_size_is_0_but_holds_bytes_is_refused() {
        let proc_file = Path::new("/proc/self/status");
        if !proc_file.exists() {
            eprintln!("skipped: no /proc here");
            return;
        }
        let takes_direct = |flags: libc::c_int| {
            std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(flags & !libc::O_DIRECT)
                .open(proc_file)
        };
        let e = open_real_with(proc_file, true, takes_direct).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::Unsupported, "{e}");
        assert!(
            e.to_string().contains("size is 0 bytes but it holds data"),
            "{e}"
        );
    }

    /// The probe of a file of size 0 opened direct leaves the descriptor direct, and an empty
    /// file still opens (here on the file system of the temporary directory, when it takes
    /// `O_DIRECT`).
    #[test]
    fn an_empty_file_opened_direct_opens_and_stays_direct() {
        let (_dir, file) = crate::testutil::temp_file("empty-direct", &[]);
        let (f, direct) = open_real(&file, true).unwrap();
        if !direct {
            eprintln!("skipped: the temporary directory's file system refuses O_DIRECT");
            return;
        }
        let flags = crate::sys::status_flags(&f).unwrap();
        assert_ne!(flags & libc::O_DIRECT, 0);
        assert_eq!(flags & libc::O_NONBLOCK, 0);
    }

    /// Closing a port waits for the delivery under way on another thread (so that thread no
    /// longer holds the sink), and drops every later completion.
    #[test]
    fn closing_a_port_waits_for_the_delivery_under_way_and_drops_later_ones() {
        let (held, port) = Held::port();
        let p = port.clone();
        let t = std::thread::spawn(move || p.deliver_all(&mut burst(&[1])));
        held.wait_entered();
        port.close();
        assert_eq!(held.tokens(), vec![1], "close returned first");
        assert_eq!(
            Arc::strong_count(&held),
            1,
            "a delivery still holds the sink"
        );
        port.deliver_all(&mut burst(&[2]));
        assert_eq!(held.tokens(), vec![1]);
        t.join().unwrap();
    }

    /// Closes its own port from inside a delivery.
    struct Closer(Arc<CompletionPort>, Mutex<u32>);

    impl CompletionSink for Closer {
        fn complete(&self, _: IoCompletion) {
            self.0.close();
            *self.1.lock().unwrap() += 1;
        }
    }

    /// A port closed from inside one of its own deliveries does not wait for that delivery
    /// (it would wait for itself).
    #[test]
    fn a_port_closed_from_inside_its_delivery_does_not_wait_for_itself() {
        let port = CompletionPort::new();
        let closer = Arc::new(Closer(port.clone(), Mutex::new(0)));
        let sink: Arc<dyn CompletionSink> = closer.clone();
        port.connect(Arc::downgrade(&sink));
        let p = port.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            p.deliver_all(&mut burst(&[1]));
            tx.send(()).unwrap();
        });
        rx.recv_timeout(std::time::Duration::from_secs(30))
            .expect("the close inside the delivery returned");
        assert_eq!(*closer.1.lock().unwrap(), 1);
    }

    #[test]
    fn a_burst_without_a_sink_is_dropped() {
        let port = CompletionPort::new();
        let mut cs = burst(&[1, 2]);
        port.deliver_all(&mut cs);
        assert!(cs.is_empty());
    }
}
