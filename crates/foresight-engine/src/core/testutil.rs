//! What the tests beside each mechanism of the core share: a backend that holds the reads it is
//! given ([`Holding`]) so a test decides when and how each completes, cores built over it with
//! one 1 MiB file open, and the steps most tests take (completing what the backend holds, a
//! prefetched chunk, the application reading through one). One copy here rather than one per
//! test module, so the fixtures cannot drift apart.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};

use foresight_core::{ByteRange, FetchId, FileId, Instant, StreamId};
use foresight_policy::{Policy, PolicyConfig};

use super::{Core, CoreConfig, Found};
use crate::backend::{BackendKind, FileHandle, IoBackend, IoCompletion, IoRequest};

/// Holds what it is given and records each `submit` call's batch size; completes nothing by
/// itself, so a test decides when and how completions arrive.
#[derive(Default)]
pub(super) struct Holding {
    pub(super) held: Mutex<Vec<IoRequest>>,
    pub(super) batches: Mutex<Vec<usize>>,
    /// Readers the core said had closed, in order.
    pub(super) closed: Mutex<Vec<StreamId>>,
}

impl IoBackend for Holding {
    fn kind(&self) -> BackendKind {
        BackendKind::Noop
    }
    fn open(&self, _: &Path, _: FileId, _: bool) -> io::Result<FileHandle> {
        unreachable!("the test registers its handle directly")
    }
    fn capacity(&self) -> usize {
        2
    }
    fn submit(&self, batch: &mut Vec<IoRequest>) {
        self.batches.lock().unwrap().push(batch.len());
        self.held.lock().unwrap().append(batch);
    }
    fn reader_closed(&self, reader: StreamId) {
        self.closed.lock().unwrap().push(reader);
    }
    fn shutdown(&self) {}
}

/// A core over `Holding` with queue depth 2, no readahead, `memory_bytes` of budget and
/// requests of at most `max_io_bytes`, and one 1 MiB file open.
pub(super) fn core_over_holding(
    memory_bytes: u64,
    max_io_bytes: u64,
) -> (Core, Arc<Holding>, FileId, StreamId) {
    core_over_holding_with(no_readahead(), memory_bytes, max_io_bytes, false)
}

/// The policy `none`: the test drives every fetch itself.
fn no_readahead() -> Box<dyn Policy> {
    let cfg = PolicyConfig {
        name: "none".into(),
        ..PolicyConfig::default()
    };
    foresight_policy::build(&cfg, Arc::new(foresight_policy::Layout::unplaced(&[]))).unwrap()
}

/// A 1 MiB file with no descriptor (the test backends read nothing): `mem`, identity (1, 1),
/// is the file every test core opens first (opening it again gives a second reader of that
/// file), and [`other_file`] a second file.
pub(super) fn mem_file(core: &mut Core, path: &str, identity: (u64, u64)) -> FileHandle {
    FileHandle {
        id: core.next_file_id(),
        path: PathBuf::from(path),
        file: None,
        direct: false,
        size_bytes: 1 << 20,
        identity,
        modified: None,
        volume_offset_bytes: None,
    }
}

/// A second 1 MiB file, for tests where another stream reads beside the first.
pub(super) fn other_file(core: &mut Core) -> FileHandle {
    mem_file(core, "other", (1, 2))
}

/// [`core_over_holding`] under `policy`, its pool prefaulted if `prefault` (every buffer is
/// then a piece of one mapping, whatever the kernel's huge-page setting).
pub(super) fn core_over_holding_with(
    policy: Box<dyn Policy>,
    memory_bytes: u64,
    max_io_bytes: u64,
    prefault: bool,
) -> (Core, Arc<Holding>, FileId, StreamId) {
    core_over_holding_cfg(policy, memory_bytes, max_io_bytes, prefault, None)
}

/// [`core_over_holding`], its pool prefaulted from `shelf` (see `pool::ArenaShelf`).
pub(super) fn core_over_holding_on_shelf(
    memory_bytes: u64,
    max_io_bytes: u64,
    shelf: &crate::pool::ArenaShelf,
) -> (Core, Arc<Holding>, FileId, StreamId) {
    core_over_holding_cfg(
        no_readahead(),
        memory_bytes,
        max_io_bytes,
        true,
        Some(shelf.clone()),
    )
}

fn core_over_holding_cfg(
    policy: Box<dyn Policy>,
    memory_bytes: u64,
    max_io_bytes: u64,
    prefault: bool,
    arena: Option<crate::pool::ArenaShelf>,
) -> (Core, Arc<Holding>, FileId, StreamId) {
    let backend = Arc::new(Holding::default());
    let mut core = Core::new(
        policy,
        backend.clone(),
        CoreConfig {
            memory_bytes,
            queue_depth: 2,
            max_io_bytes,
            prefault,
            arena,
        },
        Arc::new(Condvar::new()),
    );
    let handle = mem_file(&mut core, "mem", (1, 1));
    let (file, stream, _, _) = core.open(handle);
    (core, backend, file, stream)
}

/// Sends the core's queued reads, fills each buffer with the pattern `i % 251` (`i` the byte's
/// place in its read) and completes them at instant 1.
pub(super) fn fill_and_complete(core: &mut Core, backend: &Holding) {
    core.dispatch();
    let mut done = completions(backend);
    for c in &mut done {
        for (i, b) in c.buf.as_mut_slice().iter_mut().enumerate() {
            *b = (i % 251) as u8;
        }
    }
    core.complete_all(Instant(1), &mut done);
}

pub(super) fn completions(backend: &Holding) -> Vec<IoCompletion> {
    backend
        .held
        .lock()
        .unwrap()
        .drain(..)
        .map(|r| IoCompletion {
            token: r.token,
            buf: r.buf,
            result: Ok(r.len_bytes),
        })
        .collect()
}

/// The application copies file bytes `[from, to)` out of the chunk that holds `from`.
pub(super) fn read_through(core: &mut Core, file: FileId, stream: StreamId, from: u64, to: u64) {
    let Found::Ready { chunk, .. } = core.find(file, from) else {
        panic!("byte {from} is in")
    };
    drop(core.pin(chunk));
    core.unpin(stream, chunk, from, to);
}

/// A core over `memory_bytes` (chunks of at most `max_io_bytes`) whose first 256 KiB of the
/// file are prefetched, in one filled chunk nobody has read.
pub(super) fn one_prefetched_chunk(
    memory_bytes: u64,
    max_io_bytes: u64,
) -> (Core, Arc<Holding>, FileId, StreamId) {
    let (mut core, backend, file, stream) = core_over_holding(memory_bytes, max_io_bytes);
    assert_eq!(
        core.fetch(FetchId(0), file, ByteRange::new(0, 256 << 10), None, None),
        (1, false)
    );
    fill_and_complete(&mut core, &backend);
    (core, backend, file, stream)
}
