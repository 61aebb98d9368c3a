//! Measuring tools for `foresight bench`: page-cache eviction, process CPU time, and the device's
//! sequential limit.
//!
//! The limit is what one reader gets with no policy in the way: large reads of one file, back to
//! back, several in flight, straight through a backend (io_uring with `O_DIRECT` here, or the
//! emulated device). Each completion immediately starts the next read, so the device never idles
//! while the reader is behind; with `depth` reads of `io_bytes` in flight this is the rate fio
//! reports for `--rw=read --bs=io_bytes --iodepth=depth --direct=1`.

use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

use foresight_core::FileId;

use crate::backend::emulated::EmulatedBackend;
use crate::backend::threads::ThreadsBackend;
use crate::backend::{
    BackendKind, CompletionPort, CompletionSink, FileHandle, IoBackend, IoCompletion, IoRequest,
};
use crate::beneath::RootDir;
use crate::buffer::{AlignedBuf, ALIGN_BYTES};
use crate::engine::Backend;
use crate::error::EngineError;

/// Drops `path` from the page cache (`posix_fadvise(DONTNEED)`), so the next read goes to the
/// device.
pub fn evict_from_page_cache(path: &Path) -> std::io::Result<()> {
    crate::sys::evict_from_page_cache(&File::open(path)?)
}

/// [`evict_from_page_cache`] for `rel` beneath `root`, looked up as [`RootDir::open_read`] does, so
/// the file dropped is one of the root's own. Anything but a regular file is refused (and not
/// opened for reading long enough to block: the open is non-blocking).
pub fn evict_beneath_from_page_cache(root: &RootDir, rel: &Path) -> std::io::Result<()> {
    let file = root.open_read(rel, libc::O_NONBLOCK)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} is not a regular file", root.display_path(rel).display()),
        ));
    }
    crate::sys::evict_from_page_cache(&file)
}

/// Whether the file at `path` holds data over all of its length: no sparse range and no
/// preallocated range not yet written, which read as zeros without touching the disk. A file
/// system that cannot tell (`SEEK_HOLE` unsupported) is taken at its word that it has none.
pub fn all_data(path: &Path) -> std::io::Result<bool> {
    let file = File::open(path)?;
    let len = file.metadata()?.len();
    match crate::sys::first_hole(&file) {
        Ok(at) => Ok(at >= len),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(true),
        Err(e) => Err(e),
    }
}

/// Makes the child `cmd` starts (fio, say) receive SIGTERM when this process ends, even by a
/// signal's default action or SIGKILL (`prctl(PR_SET_PDEATHSIG)`). The kernel sends it when the
/// thread that started the child ends, so start it from a thread that outlives it, such as the
/// main thread.
pub fn end_with_parent(cmd: &mut std::process::Command) {
    crate::sys::end_with_parent(cmd)
}

/// Bytes free on the file system holding `path`.
pub fn free_disk_bytes(path: &Path) -> std::io::Result<u64> {
    crate::sys::free_bytes(path)
}

/// Whether the file system holding `path` keeps its files in memory (tmpfs, ramfs), where no
/// read reaches a disk and dropping pages from the page cache does nothing.
pub fn in_memory_fs(path: &Path) -> std::io::Result<bool> {
    crate::sys::in_memory_fs(path)
}

/// Whether this user may create files in the directory `dir` (as the kernel's permission check
/// for the real user decides it, a read-only mount included).
pub fn may_create_in(dir: &Path) -> bool {
    crate::sys::may_create_in(dir)
}

/// This process's limit on open files, `(soft, hard)` (`ulimit -Sn`, `ulimit -Hn`).
pub fn open_files_limit() -> std::io::Result<(u64, u64)> {
    crate::sys::open_files_limit()
}

/// Raises this process's soft limit on open files toward `need_files` within the hard one, never
/// lowering it; returns the soft limit in force afterwards.
pub fn raise_open_files_limit(need_files: u64) -> std::io::Result<u64> {
    crate::sys::raise_open_files_limit(need_files)
}

/// User plus system CPU seconds this process has used.
pub fn process_cpu_seconds() -> f64 {
    crate::sys::process_cpu_seconds()
}

/// User plus system CPU seconds of this process's children that have ended and been waited for
/// (such as fio, run by `foresight bench --fio`).
pub fn children_cpu_seconds() -> f64 {
    crate::sys::children_cpu_seconds()
}

/// The result of [`sequential_read`].
#[derive(Clone, Debug, PartialEq)]
pub struct SequentialRead {
    /// Bytes read.
    pub bytes: u64,
    /// Wall seconds from the first submission to the last completion.
    pub seconds: f64,
    /// This process's CPU seconds over the same interval (the backend's start, the files'
    /// opening and the buffers' faulting in are before it).
    pub cpu_seconds: f64,
    /// The backend that did it.
    pub backend: BackendKind,
    /// Whether the file was read with `O_DIRECT`.
    pub direct: bool,
    /// The read buffers' bytes (each read's buffer is `io_bytes`): no more than the reads the
    /// data takes, so a file shorter than `depth` reads never has `depth` of them.
    pub buffer_peak_bytes: u64,
}

impl SequentialRead {
    /// The rate in MiB/s.
    pub fn mib_s(&self) -> f64 {
        if self.seconds > 0.0 {
            self.bytes as f64 / (1u64 << 20) as f64 / self.seconds
        } else {
            0.0
        }
    }
}

#[derive(Default)]
struct Collector {
    done: Mutex<VecDeque<IoCompletion>>,
    ready: Condvar,
}

impl CompletionSink for Collector {
    fn complete(&self, c: IoCompletion) {
        self.done.lock().expect("collector poisoned").push_back(c);
        self.ready.notify_one();
    }
}

/// Reads the first `bytes` of `path` (or up to its end) in `io_bytes` pieces, `depth` at once,
/// through `backend` (`Auto`, `Uring`, `Threads` or `Emulated`), stopping early after `time_limit`.
pub fn sequential_read(
    backend: Backend,
    path: &Path,
    bytes: u64,
    io_bytes: u64,
    depth: usize,
    time_limit: Option<Duration>,
) -> Result<SequentialRead, EngineError> {
    sequential_read_files(
        backend,
        &[path.to_path_buf()],
        bytes,
        io_bytes,
        depth,
        time_limit,
    )
}

/// Like [`sequential_read`], over several files read one after another as one sequence: the
/// first `bytes_each` of each (or up to its end), `depth` reads in flight across file boundaries,
/// so small files do not starve the device of reads.
pub fn sequential_read_files(
    backend: Backend,
    paths: &[std::path::PathBuf],
    bytes_each: u64,
    io_bytes: u64,
    depth: usize,
    time_limit: Option<Duration>,
) -> Result<SequentialRead, EngineError> {
    read_opened(
        backend,
        paths,
        |b, i, id| b.open(&paths[i], id, true),
        bytes_each,
        io_bytes,
        depth,
        time_limit,
    )
}

/// [`sequential_read`] of `rel` beneath `root`: the file is looked up and opened in one step that
/// cannot leave the directory (see [`crate::beneath`]), so a name swapped for a symlink out of
/// it after the caller chose the file is refused, not followed.
pub fn sequential_read_beneath(
    backend: Backend,
    root: &RootDir,
    rel: &Path,
    bytes: u64,
    io_bytes: u64,
    depth: usize,
    time_limit: Option<Duration>,
) -> Result<SequentialRead, EngineError> {
    read_opened(
        backend,
        &[root.display_path(rel)],
        |b, _, id| b.open_beneath(root, rel, id, true),
        bytes,
        io_bytes,
        depth,
        time_limit,
    )
}

/// The measurement behind [`sequential_read_files`] and [`sequential_read_beneath`]: file `i`
/// (called `names[i]` in errors) is opened by `open` on the backend built here.
fn read_opened(
    backend: Backend,
    names: &[std::path::PathBuf],
    open: impl Fn(&dyn IoBackend, usize, FileId) -> std::io::Result<FileHandle>,
    bytes_each: u64,
    io_bytes: u64,
    depth: usize,
    time_limit: Option<Duration>,
) -> Result<SequentialRead, EngineError> {
    let setting = |setting, message: String| EngineError::Setting { setting, message };
    if io_bytes == 0 || !io_bytes.is_multiple_of(ALIGN_BYTES as u64) {
        return Err(setting(
            "io_bytes",
            format!("{io_bytes} is not whole 4 KiB pages"),
        ));
    }
    if !(1..=1024).contains(&depth) {
        return Err(setting("depth", format!("must be 1 to 1024, got {depth}")));
    }
    let port = CompletionPort::new();
    let collector = Arc::new(Collector::default());
    let sink: Arc<dyn CompletionSink> = collector.clone();
    let weak: Weak<dyn CompletionSink> = Arc::downgrade(&sink);
    port.connect(weak);
    let b: Arc<dyn IoBackend> = match backend {
        Backend::Auto => match uring(depth, port.clone()) {
            Ok(b) => b,
            Err(_) => {
                Arc::new(ThreadsBackend::start(depth, depth, port).map_err(EngineError::Spawn)?)
            }
        },
        Backend::Uring => uring(depth, port).map_err(|e| EngineError::BackendUnavailable {
            backend: "uring",
            reason: e.to_string(),
        })?,
        Backend::Threads => {
            Arc::new(ThreadsBackend::start(depth, depth, port).map_err(EngineError::Spawn)?)
        }
        Backend::Emulated(cfg) => {
            cfg.validate()?;
            Arc::new(EmulatedBackend::start(cfg, depth, port).map_err(EngineError::Spawn)?)
        }
        Backend::Noop(_) => {
            return Err(setting(
                "backend",
                "the limit is measured on a real or emulated device".into(),
            ))
        }
    };
    if names.is_empty() {
        return Err(setting("paths", "no file to read".into()));
    }
    let mut files = Vec::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        let handle = open(&*b, i, FileId(i as u32)).map_err(|source| EngineError::Open {
            path: name.clone(),
            source,
        })?;
        let end = bytes_each.min(handle.size_bytes);
        files.push((Arc::new(handle), end));
    }
    let direct = files.iter().all(|(h, _)| h.direct);
    let kind = b.kind();
    let run = read_in_sequence(&*b, &collector, &files, io_bytes, depth, time_limit);
    b.shutdown();
    let (bytes, seconds, cpu_seconds, buffer_peak_bytes) = run?;
    Ok(SequentialRead {
        bytes,
        seconds,
        cpu_seconds,
        backend: kind,
        direct,
        buffer_peak_bytes,
    })
}

/// Reads `files` (each up to its end offset) one after another through `b`, `depth` reads of
/// `io_bytes` in flight, and returns the bytes read, the seconds it took, the CPU seconds
/// this process used meanwhile and the bytes of the buffers it made. A failed read fails
/// the measurement: a device that returns errors has no rate, and counting only the reads that
/// worked would report one.
fn read_in_sequence(
    b: &dyn IoBackend,
    collector: &Collector,
    files: &[(Arc<FileHandle>, u64)],
    io_bytes: u64,
    depth: usize,
    time_limit: Option<Duration>,
) -> Result<(u64, f64, f64, u64), EngineError> {
    let setting = |setting, message: String| EngineError::Setting { setting, message };
    let total: u64 = files.iter().map(|(_, end)| end).sum();
    // The buffers are mapped and faulted in before the clock starts, as the engine's are
    // (`prefault`): faulting 16 fresh 4 MiB buffers in while the first reads wait is not reading,
    // and charged the limit alone.
    let reads: u64 = files.iter().map(|(_, end)| end.div_ceil(io_bytes)).sum();
    let mut free: Vec<AlignedBuf> = Vec::with_capacity(depth);
    // Every buffer made is held to the end (a finished read's goes back to `free`).
    let mut buffers_made = 0u64;
    for _ in 0..reads.min(depth as u64) {
        buffers_made += 1;
        let mut buf = AlignedBuf::new(io_bytes as usize)
            .ok_or_else(|| setting("io_bytes", "the allocator refused the buffer".into()))?;
        buf.fault_in();
        free.push(buf);
    }
    let cpu0 = process_cpu_seconds();
    let started = Instant::now();
    // The next read: file index and offset in it.
    let (mut at, mut next) = (0usize, 0u64);
    let mut outstanding = 0usize;
    let mut read = 0u64;
    let mut batch = Vec::with_capacity(depth);
    let mut stop = false;
    let mut failure: Option<EngineError> = None;
    // Each read's token is its own (a backend may track reads by token, as the emulated one
    // does); the file it reads is kept beside it, to name the file if the read fails.
    let mut next_token = 0u64;
    let mut file_of: HashMap<u64, usize> = HashMap::with_capacity(depth);
    loop {
        while !stop && outstanding < depth && at < files.len() {
            let (handle, end) = (files[at].0.clone(), files[at].1);
            if next >= end {
                at += 1;
                next = 0;
                continue;
            }
            let buf = match free.pop() {
                Some(b) => b,
                None => {
                    buffers_made += 1;
                    AlignedBuf::new(io_bytes as usize).ok_or_else(|| {
                        setting("io_bytes", "the allocator refused the buffer".into())
                    })?
                }
            };
            let len = io_bytes.min(end - next).div_ceil(ALIGN_BYTES as u64) * ALIGN_BYTES as u64;
            let token = next_token;
            next_token += 1;
            file_of.insert(token, at);
            batch.push(IoRequest {
                token,
                file: handle,
                offset_bytes: next,
                buf,
                buf_offset: 0,
                len_bytes: len as usize,
                // One reader reads every file in turn, as one process would.
                reader: Some(foresight_core::StreamId(0)),
            });
            next += len;
            outstanding += 1;
        }
        b.submit(&mut batch);
        if outstanding == 0 {
            break;
        }
        let mut done = collector.done.lock().expect("collector poisoned");
        while done.is_empty() {
            done = collector.ready.wait(done).expect("collector poisoned");
        }
        for c in done.drain(..) {
            outstanding -= 1;
            let file = file_of
                .remove(&c.token)
                .expect("a completion answers a read this measurement issued");
            match c.result {
                Ok(n) if n > 0 => read += n as u64,
                // The end of the file (it shrank): stop issuing, let the rest drain.
                Ok(_) => stop = true,
                // Stop issuing, let the rest drain (their buffers are the kernel's until then),
                // and report the first error.
                Err(source) => {
                    stop = true;
                    failure.get_or_insert(EngineError::Read {
                        path: files[file].0.path.clone(),
                        source,
                    });
                }
            }
            free.push(c.buf);
        }
        drop(done);
        if time_limit.is_some_and(|t| started.elapsed() >= t) {
            stop = true;
        }
    }
    match failure {
        Some(e) => Err(e),
        None => Ok((
            read.min(total),
            started.elapsed().as_secs_f64(),
            process_cpu_seconds() - cpu0,
            buffers_made * io_bytes,
        )),
    }
}

#[cfg(target_os = "linux")]
fn uring(depth: usize, port: Arc<CompletionPort>) -> std::io::Result<Arc<dyn IoBackend>> {
    Ok(Arc::new(crate::backend::uring::UringBackend::start(
        depth, port,
    )?))
}

#[cfg(not(target_os = "linux"))]
fn uring(_: usize, _: Arc<CompletionPort>) -> std::io::Result<Arc<dyn IoBackend>> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "io_uring is Linux-only",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// Fails every read with EIO, the first `fail_after` reads excepted.
    struct Failing {
        port: Arc<CompletionPort>,
        served: Mutex<u32>,
        fail_after: u32,
    }

    impl IoBackend for Failing {
        fn kind(&self) -> BackendKind {
            BackendKind::Threads
        }
        fn open(&self, _: &Path, _: FileId, _: bool) -> std::io::Result<FileHandle> {
            unreachable!("the test makes its handle")
        }
        fn capacity(&self) -> usize {
            64
        }
        fn submit(&self, batch: &mut Vec<IoRequest>) {
            for r in batch.drain(..) {
                let mut served = self.served.lock().unwrap();
                *served += 1;
                let result = if *served > self.fail_after {
                    Err(std::io::Error::from_raw_os_error(libc::EIO))
                } else {
                    Ok(r.len_bytes)
                };
                drop(served);
                self.port.deliver(IoCompletion {
                    token: r.token,
                    buf: r.buf,
                    result,
                });
            }
        }
        fn shutdown(&self) {}
    }

    /// A completion port whose completions go to a fresh [`Collector`].
    fn connected_port() -> (Arc<CompletionPort>, Arc<Collector>) {
        let port = CompletionPort::new();
        let collector = Arc::new(Collector::default());
        let sink: Arc<dyn CompletionSink> = collector.clone();
        port.connect(Arc::downgrade(&sink));
        (port, collector)
    }

    /// A handle of `size_bytes` at `path` with no file behind it (the test backends make none).
    fn mem_handle(path: &str, size_bytes: u64) -> FileHandle {
        FileHandle {
            id: FileId(0),
            path: PathBuf::from(path),
            file: None,
            direct: false,
            size_bytes,
            identity: (0, 0),
            modified: None,
            volume_offset_bytes: None,
        }
    }

    #[test]
    fn a_failed_read_fails_the_measurement_instead_of_ending_it_early() {
        let (port, collector) = connected_port();
        let b = Failing {
            port,
            served: Mutex::new(0),
            fail_after: 3,
        };
        let handle = mem_handle("/mem/failing", 1 << 20);
        let files = [(Arc::new(handle), 1 << 20)];
        let e = read_in_sequence(&b, &collector, &files, 64 << 10, 2, None).unwrap_err();
        match e {
            EngineError::Read { path, source } => {
                assert_eq!(path, PathBuf::from("/mem/failing"));
                assert_eq!(source.raw_os_error(), Some(libc::EIO));
            }
            other => panic!("expected a read error, got {other}"),
        }
    }

    /// Completes every read at once, counting the submitted buffers whose pages were not all
    /// resident yet (`mincore`).
    struct Residency {
        port: Arc<CompletionPort>,
        cold_buffers: Mutex<u32>,
    }

    impl IoBackend for Residency {
        fn kind(&self) -> BackendKind {
            BackendKind::Threads
        }
        fn open(&self, _: &Path, _: FileId, _: bool) -> std::io::Result<FileHandle> {
            unreachable!("the test makes its handle")
        }
        fn capacity(&self) -> usize {
            64
        }
        fn submit(&self, batch: &mut Vec<IoRequest>) {
            for r in batch.drain(..) {
                if !crate::sys::all_resident(r.buf.as_slice()).expect("mincore") {
                    *self.cold_buffers.lock().unwrap() += 1;
                }
                self.port.deliver(IoCompletion {
                    token: r.token,
                    buf: r.buf,
                    result: Ok(r.len_bytes),
                });
            }
        }
        fn shutdown(&self) {}
    }

    /// The engine's buffers are faulted in before its clock starts (`prefault`); the limit's were
    /// faulted in by its first reads, inside its clock, which lowered the limit and raised every
    /// ratio to it.
    #[test]
    fn the_limit_reader_submits_only_buffers_already_faulted_in() {
        let (port, collector) = connected_port();
        let b = Residency {
            port,
            cold_buffers: Mutex::new(0),
        };
        let handle = mem_handle("/mem/resident", 64 << 20);
        let files = [(Arc::new(handle), 64 << 20)];
        let (bytes, _, _, buffer_bytes) =
            read_in_sequence(&b, &collector, &files, 4 << 20, 4, None).unwrap();
        assert_eq!(bytes, 64 << 20);
        assert_eq!(*b.cold_buffers.lock().unwrap(), 0);
        assert_eq!(buffer_bytes, 4 * (4 << 20), "depth 4 of 4 MiB buffers");
    }

    /// Data of fewer reads than the depth takes only that many buffers; the bench reported the
    /// limit reader's memory as depth x read size whatever the data (64 MiB for a 4 MiB file).
    #[test]
    fn the_limit_reader_holds_no_more_buffers_than_its_data_takes() {
        let (port, collector) = connected_port();
        let b = Residency {
            port,
            cold_buffers: Mutex::new(0),
        };
        let handle = mem_handle("/mem/short", 6 << 20);
        let files = [(Arc::new(handle), 6 << 20)];
        let (bytes, _, _, buffer_bytes) =
            read_in_sequence(&b, &collector, &files, 4 << 20, 16, None).unwrap();
        assert_eq!(bytes, 6 << 20);
        assert_eq!(buffer_bytes, 2 * (4 << 20), "two 4 MiB reads, two buffers");
    }

    /// The emulated backend tracks each read by its token, so reads in flight together must not
    /// share one: several reads of one file under one token were merged into one there, and the
    /// measurement waited for good for completions that never came.
    #[test]
    fn the_limit_of_an_emulated_device_is_measured_with_several_reads_in_flight() {
        let dir = crate::testutil::temp_dir("measure-emu");
        let paths: Vec<PathBuf> = (0..2).map(|i| dir.path().join(format!("f{i}"))).collect();
        for p in &paths {
            std::fs::write(p, vec![7u8; 1 << 20]).unwrap();
        }
        let backend =
            Backend::Emulated(crate::EmulatedConfig::preset("wd800jd").unwrap().spread(1));
        let (tx, rx) = std::sync::mpsc::channel();
        let files = paths.clone();
        std::thread::spawn(move || {
            let _ = tx.send(sequential_read_files(
                backend,
                &files,
                1 << 20,
                256 << 10,
                4,
                Some(Duration::from_secs(20)),
            ));
        });
        let r = rx.recv_timeout(Duration::from_secs(30));
        let r = r.expect("the measurement never ended").unwrap();
        assert_eq!(r.bytes, 2 << 20);
    }
}
