//! `foresight serve`: files under a root over HTTP/1.1 with ranges, one dedicated worker per
//! stream (paper 004_80004320b985afc3.txt, sections 6.1 and 6.2).
//!
//! The network side runs on tokio and hyper: it parses requests, resolves paths, decides the range
//! and answers the cheap requests (`HEAD`, errors, `/metrics`, `/.well-known/foresight`) itself.
//! Every body read goes to the stream's worker: a stream is the client's `x-foresight-stream`
//! header (or, without it, the connection's address and port) plus the file, pinned when first seen to the worker that
//! `WorkerChoice` picks (fewest queued requests, then fewest streams, then lowest id). Each worker
//! is an OS thread with a bounded `StreamGroupedQueue`, so it serves one stream's requests back to
//! back; it reads through a `foresight-engine` reader that it keeps per stream, so the engine's
//! readahead (the paper's server-side `ra_s`, one context per stream) runs on the server. The
//! headers are decided from the path's metadata when the request arrives; a kept reader serves a
//! request only if it was opened on that very file (device, inode, size and modification time),
//! and a reader opened for a request that finds the path naming another file by then answers 503
//! (retry) rather than send bytes of a file other than the one whose length was announced; readers
//! are kept per stream and file version, so a response begun before its file was replaced ends
//! from the file it began with. A file rewritten in place (same inode) while its response is sent
//! is caught by the size and modification time of the reader's descriptor, looked at after every
//! chunk is read: the response is cut short (503 before it begins) rather than send the new bytes
//! under the old headers. The same four figures make the file's `ETag` (weak until the file's
//! timestamps can no longer repeat, `strong_after`: about 50 ms after its last modification on a
//! file system whose times show sub-second figures, a second otherwise; strong after) and its
//! modification time the
//! `Last-Modified`, so a client that sends `If-Range` with the tag of the version it began with
//! gets the whole new file (200) rather than a range of it once the file is replaced; `If-Match`
//! and `If-Unmodified-Since` get 412, `If-None-Match` and `If-Modified-Since` 304
//! (`validators.rs`). Chunks go
//! to the connection through a small bounded channel (four chunks), and a worker
//! reads a chunk only once that channel has room for it: when a response's channel is full, its
//! connection is slower than the worker, so the worker sets the response aside ("parks" it, holding
//! no buffer) and serves the next request in its queue; the connection taking a chunk puts the
//! response back in the queue. A client that reads slowly, however steadily, thus pins at most
//! its channel's chunks and never its worker, and the streams pinned to that worker are served
//! meanwhile. A response parked for the send timeout is abandoned, and a connection whose writes
//! make no progress for that long is closed, with its permit, buffers and queued chunks.
//!
//! Limits: connections (`max_connections`; more are closed at once), request head bytes
//! (`max_header_bytes`, exact: hyper answers a longer head 431) and header lines
//! ([`MAX_HEADER_LINES`], hyper's), time a connection may sit without sending a complete
//! request header (`idle_timeout`, which also ends idle keep-alive connections), requests queued per worker
//! (`queue_per_worker`; more get 503), streams remembered (`max_streams`, least recently used
//! forgotten first, idle ones after `stream_idle`). SIGTERM (or [`ServerHandle::shutdown`]) stops
//! accepting, closes at once the connections with no request to answer (idle ones, and those
//! whose request head has not all come: the server reads nothing more), lets open requests
//! finish for up to `grace`, then stops the workers; the file responses still under way then
//! (bodies made and not yet dropped) are cut short, and [`Stopped`] counts them, with the
//! connections closed then and how long the stop waited.
//!
//! A server that can serve nothing more stops by itself: once its engine is broken (a panic in
//! the readahead policy or on one of the engine's threads; every read then fails) or a worker
//! thread panics (the streams pinned to it would wait for good), the accept loop, woken by the
//! worker that saw it, by a request whose read the broken engine refused (the engine's error
//! carries the panic's message, so the failure is recorded from it even before the engine
//! marks itself broken), or by its own look at the engine every `FAILURE_POLL` (200 ms), stops
//! accepting and shuts down as on SIGTERM, and [`ServerHandle::wait`] returns
//! [`NetError::Broken`] with the panic's message, for the command to log and exit on so that a
//! supervisor restarts it. Until
//! then, a request that reaches a worker gets 503 with `Retry-After` rather than 500, and a
//! response under way fails as its next chunk does. Before, the server stayed up answering every
//! request with an error for good, or left the streams of a dead worker waiting.

use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::io::{self, Read, Seek, SeekFrom};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use foresight_core::{Bandwidth, ByteLen, ByteRange, StreamId};
use foresight_engine::{Backend, Engine, EngineBuilder, RootDir};
use foresight_policy::adaptive::{StreamGroupedQueue, WorkerChoice, WorkerId, DEFAULT_PEAK_RATIO};
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::{Body, Frame, Incoming};
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::{mpsc, oneshot, Semaphore};

use crate::path::{resolve, PathError, ServedFile};
use crate::range::{content_range, decide, unsatisfied_content_range, RangeDecision};
use crate::streams::StreamTable;
use crate::validators::{evaluate, format_http_date, Answer, Conditions, Validators};
use crate::{NetError, PROC_HEADER, STREAM_HEADER, WELL_KNOWN_PATH};

/// Bytes of a page: the engine reads whole pages.
const PAGE_BYTES: u64 = 4096;

/// The largest readahead window: the engine's largest single read (`max_io`).
const MAX_READAHEAD_BYTES: u64 = 64 << 20;

/// The largest engine budget the engine accepts (1 PiB).
const MAX_MEMORY_BYTES: u64 = 1 << 50;

/// The largest peak-to-average ratio `p` a server publishes: no device peaks at a thousand times
/// its average rate.
const MAX_PEAK_RATIO: f64 = 1000.0;

/// Chunks a response may hold between its worker and its connection: the most a slow client pins
/// per response, with [`MAX_CHUNK_BYTES`], is this many chunks.
const RESPONSE_CHUNKS: usize = 4;

/// Room, in chunks, a parked response's channel needs before its worker takes it up again: more
/// than one, so that a worker faster than the connection fills several chunks per wake-up rather
/// than being woken for every chunk the connection takes.
const RESUME_ROOM: usize = RESPONSE_CHUNKS / 2;
const _: () = assert!(RESUME_ROOM >= 1 && RESUME_ROOM <= RESPONSE_CHUNKS);

/// The largest body chunk, so that a response pins at most [`RESPONSE_CHUNKS`] x 16 MiB.
const MAX_CHUNK_BYTES: usize = 16 << 20;

/// The most connections a server may be told to keep open. Each holds a descriptor, so a
/// million is more than usual descriptor limits allow, and far below what the connection
/// semaphore can count (2^61 - 1, beyond which it panics).
pub(crate) const MAX_CONNECTIONS: usize = 1 << 20;

/// The longest request head a server may be told to take. Each connection may buffer one, so
/// the bound keeps `--max-connections` heads within reach of a machine's memory; a mebibyte is
/// 64 times the default of 16 KiB.
pub(crate) const MAX_HEADER_BYTES: usize = 1 << 20;

/// The most header lines a request head may hold, whatever its length: hyper's parser's own
/// bound (its default, kept on the stack; a larger one is allocated for every request). The
/// 101st line gets 431, as a head past `max_header_bytes` does.
pub const MAX_HEADER_LINES: usize = 100;

/// Where the device figures published at `/.well-known/foresight` come from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DeviceSource {
    /// Read the largest file with no holes under the root with large direct reads at startup (at
    /// most 256 MiB or two seconds); fall back to [`ServerConfig::default_bandwidth`] when no file is large enough.
    Measure,
    /// The operator's figure.
    Configured(Bandwidth),
}

/// The server's settings; [`ServerConfig::new`] gives the defaults.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// The directory served.
    pub root: PathBuf,
    /// Where to listen.
    pub addr: SocketAddr,
    /// Dedicated I/O workers (paper 004 uses 32).
    pub workers: u32,
    /// The engine's largest readahead window per stream, published as `max_ra_sz`.
    pub readahead: ByteLen,
    /// The engine's hard memory budget.
    pub engine_memory: ByteLen,
    /// The engine backend.
    pub backend: Backend,
    /// Where `RB` comes from.
    pub device: DeviceSource,
    /// The `RB` published when measuring finds no file large enough.
    pub default_bandwidth: Bandwidth,
    /// `p`, the device's peak-to-average ratio, if the operator gave one; `None` publishes paper
    /// 004's 1.2 (section 7.1) with `peak_ratio_source` `default`.
    pub peak_ratio: Option<f64>,
    /// Most open connections, 1 to 1,048,576.
    pub max_connections: usize,
    /// Most bytes of request head (request line, header lines and the blank line that ends
    /// them); a longer one gets 431 and its connection is closed. A head also holds at most
    /// [`MAX_HEADER_LINES`] header lines.
    pub max_header_bytes: usize,
    /// How long a connection may wait for a complete request head.
    pub idle_timeout: Duration,
    /// Most requests queued at one worker.
    pub queue_per_worker: usize,
    /// Most streams remembered.
    pub max_streams: usize,
    /// How long an unused stream keeps its worker and engine reader.
    pub stream_idle: Duration,
    /// Bytes per body chunk a worker reads and sends, 4 KiB to 16 MiB.
    pub chunk_bytes: usize,
    /// How long a response may stay set aside because its client took no chunk before it is
    /// abandoned, and how long a connection's writes may make no progress before it is closed.
    pub send_timeout: Duration,
    /// How long open requests may run after shutdown begins.
    pub grace: Duration,
}

impl ServerConfig {
    /// Defaults: 32 workers, 1 MiB readahead, 256 MiB engine memory, device figures measured,
    /// 4096 connections, 16 KiB of request head, 30 s idle timeout, 1024 queued requests per
    /// worker, 65536 streams idle for at most 60 s, 256 KiB chunks.
    pub fn new(root: PathBuf, addr: SocketAddr) -> ServerConfig {
        ServerConfig {
            root,
            addr,
            workers: 32,
            readahead: ByteLen::mib(1),
            engine_memory: ByteLen::mib(256),
            backend: Backend::Auto,
            device: DeviceSource::Measure,
            default_bandwidth: Bandwidth::from_mib_s(200.0),
            peak_ratio: None,
            max_connections: 4096,
            max_header_bytes: 16 << 10,
            idle_timeout: Duration::from_secs(30),
            queue_per_worker: 1024,
            max_streams: 65536,
            stream_idle: Duration::from_secs(60),
            chunk_bytes: 256 << 10,
            send_timeout: Duration::from_secs(30),
            grace: Duration::from_secs(10),
        }
    }

    fn validate(&self) -> Result<(), NetError> {
        self.validate_settings()?;
        if !self.root.is_dir() {
            let what = if self.root.exists() {
                "is not a directory"
            } else {
                "does not exist"
            };
            return Err(NetError::Setting {
                key: "--root",
                message: format!(
                    "{} {what}; give the directory whose files are served",
                    self.root.display()
                ),
            });
        }
        Ok(())
    }

    /// Every check but the root's, for callers that check before they create the root.
    pub(crate) fn validate_settings(&self) -> Result<(), NetError> {
        let bad = |key, message: String| Err(NetError::Setting { key, message });
        if !(1..=4096).contains(&self.workers) {
            return bad(
                "--workers",
                format!("must be 1..=4096, got {}", self.workers),
            );
        }
        // The engine reads a window in single requests of at most `max_io`, which is set to the
        // readahead: its rules (whole pages, at most 64 MiB, a budget of four) are checked here
        // so that they name the server's own options.
        if self.readahead.0 < PAGE_BYTES
            || !self.readahead.0.is_multiple_of(PAGE_BYTES)
            || self.readahead.0 > MAX_READAHEAD_BYTES
        {
            return bad(
                "--readahead",
                format!(
                    "must be whole 4KiB pages from 4KiB to {}, got {}",
                    ByteLen(MAX_READAHEAD_BYTES),
                    self.readahead
                ),
            );
        }
        let least_memory = ByteLen(4 * self.readahead.0);
        if self.engine_memory.0 < least_memory.0 {
            return bad(
                "--memory",
                format!(
                    "{} is less than four times --readahead ({}); give at least {least_memory}",
                    self.engine_memory, self.readahead
                ),
            );
        }
        if self.engine_memory.0 > MAX_MEMORY_BYTES {
            return bad(
                "--memory",
                format!(
                    "{} is more than {}",
                    self.engine_memory,
                    ByteLen(MAX_MEMORY_BYTES)
                ),
            );
        }
        if !(1..=MAX_CONNECTIONS).contains(&self.max_connections) {
            return bad(
                "--max-connections",
                format!(
                    "must be 1..={MAX_CONNECTIONS}, got {}",
                    self.max_connections
                ),
            );
        }
        if self.idle_timeout.is_zero() {
            return bad(
                "--idle-timeout",
                "must be longer than zero: a zero timeout closes every connection whose request \
                 head is not there at once"
                    .into(),
            );
        }
        if !(8192..=MAX_HEADER_BYTES).contains(&self.max_header_bytes) {
            return bad(
                "--max-header-bytes",
                format!(
                    "must be 8192..={MAX_HEADER_BYTES}, got {}",
                    self.max_header_bytes
                ),
            );
        }
        // Bounded above so that `RB * (1 + p)`, which every client computes from the published
        // figures, stays a number for any rate the server can publish.
        if let Some(p) = self
            .peak_ratio
            .filter(|p| !(1.0..=MAX_PEAK_RATIO).contains(p))
        {
            return bad(
                "--peak-ratio",
                format!(
                    "must be a number from 1 to {MAX_PEAK_RATIO} (paper 004 uses 1.2), got {p}"
                ),
            );
        }
        if let DeviceSource::Configured(b) = self.device {
            if !(b.bytes_per_s.is_finite() && b.bytes_per_s > 0.0) {
                return bad(
                    "--device-bandwidth",
                    "must be a positive rate such as 450MB/s".into(),
                );
            }
        }
        if self.queue_per_worker == 0
            || self.max_streams == 0
            || !(4096..=MAX_CHUNK_BYTES).contains(&self.chunk_bytes)
        {
            return bad(
                "limits",
                format!(
                    "queue_per_worker and max_streams must be >= 1, chunk_bytes 4096..={MAX_CHUNK_BYTES}"
                ),
            );
        }
        Ok(())
    }
}

/// The device figures a server publishes (paper 004, section 6.2's adaptive prefetching
/// information), with where `RB` came from.
#[derive(Clone, Debug, PartialEq)]
pub struct PublishedFigures {
    /// `max_ra_sz` in bytes.
    pub max_readahead_bytes: u64,
    /// `RB` in bytes per second.
    pub avg_bandwidth_bytes_per_s: f64,
    /// `p`.
    pub peak_ratio: f64,
    /// `measured`, `configured` or `default` (measuring found nothing to read).
    pub bandwidth_source: String,
    /// `configured` (the operator's `p`) or `default` (paper 004, section 7.1's 1.2, which it
    /// sets for every device). `p` is never measured; `configured` means what it means in
    /// `bandwidth_source`, a figure the operator gave.
    pub peak_ratio_source: String,
    /// Dedicated workers.
    pub workers: u32,
}

impl PublishedFigures {
    /// The JSON document served at `/.well-known/foresight`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "server": "foresight",
            "version": env!("CARGO_PKG_VERSION"),
            "max_readahead_bytes": self.max_readahead_bytes,
            "avg_bandwidth_bytes_per_s": self.avg_bandwidth_bytes_per_s,
            "peak_ratio": self.peak_ratio,
            "bandwidth_source": self.bandwidth_source,
            "peak_ratio_source": self.peak_ratio_source,
            "workers": self.workers,
        })
    }
}

/// How a server that was told to stop ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stopped {
    /// File responses still under way when the grace period ran out, and so cut short: their
    /// clients saw them end before their `Content-Length`.
    pub cut_short_responses: u64,
    /// Connections still open when the grace period ran out, closed then: those of the
    /// responses cut short, and those whose answer had not all been sent (waiting for a worker,
    /// or for a client that took nothing). 0 when every connection ended within it.
    pub closed_connections: u64,
    /// How long the stop waited for the connections to end: about nothing when no answer was
    /// under way, the grace period when it ran out.
    pub waited: Duration,
}

/// A running server.
#[derive(Debug)]
pub struct ServerHandle {
    addr: SocketAddr,
    figures: PublishedFigures,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<Result<Stopped, NetError>>>,
}

impl ServerHandle {
    /// The address it listens on (with the real port when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The figures it publishes.
    pub fn figures(&self) -> &PublishedFigures {
        &self.figures
    }

    /// Stops accepting, lets open requests finish (up to the grace period), stops the workers;
    /// says how many responses the grace period cut short.
    pub fn shutdown(mut self) -> Result<Stopped, NetError> {
        self.stop_and_join()
    }

    /// Waits until the server stops by itself: on SIGTERM or SIGINT when started with
    /// [`serve_until_signal`] (`Ok`, with the responses its grace period cut short), or because
    /// its engine broke or a worker thread panicked ([`NetError::Broken`], see the module
    /// documentation).
    pub fn wait(mut self) -> Result<Stopped, NetError> {
        self.wait_inner()
    }

    fn stop_and_join(&mut self) -> Result<Stopped, NetError> {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        self.wait_inner()
    }

    fn wait_inner(&mut self) -> Result<Stopped, NetError> {
        match self.thread.take() {
            Some(t) => t
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("server thread panicked").into())),
            None => Ok(Stopped::default()),
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        let _ = self.stop_and_join();
    }
}

/// Starts a server on its own threads and returns once it listens. It stops on
/// [`ServerHandle::shutdown`] (or when the handle is dropped).
pub fn spawn(cfg: ServerConfig) -> Result<ServerHandle, NetError> {
    start(cfg, false)
}

/// Starts a server that also stops on SIGTERM or SIGINT; [`ServerHandle::wait`] blocks until then.
pub fn serve_until_signal(cfg: ServerConfig) -> Result<ServerHandle, NetError> {
    start(cfg, true)
}

fn start(cfg: ServerConfig, on_signal: bool) -> Result<ServerHandle, NetError> {
    start_with(cfg, on_signal, |engine| engine)
}

/// [`start`], with the engine's settings passed through `engine_settings` last (tests make
/// the policy panic this way; nothing outside this module can).
fn start_with(
    mut cfg: ServerConfig,
    on_signal: bool,
    engine_settings: impl FnOnce(EngineBuilder) -> EngineBuilder,
) -> Result<ServerHandle, NetError> {
    cfg.validate()?;
    // A root this user may not search (mode 000, or r-- without x) passes `is_dir` and fails
    // here; the system's bare "Permission denied" would name neither the flag nor the path.
    let unopenable = |e: io::Error| NetError::Setting {
        key: "--root",
        message: format!(
            "cannot open {}: {e}; give a directory this user can read and search",
            cfg.root.display()
        ),
    };
    let canonical = cfg.root.canonicalize().map_err(unopenable)?;
    let root = RootDir::open(&canonical).map_err(unopenable)?;
    cfg.root = canonical;
    let figures = measure_figures(&cfg, &root);
    let engine = engine_settings(
        Engine::builder()
            .memory(cfg.engine_memory)
            .policy("seqp")
            .readahead_max(cfg.readahead)
            .max_io(cfg.readahead)
            .backend(cfg.backend.clone()),
    )
    .build()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("foresight-net")
        .build()?;
    let std_listener = std::net::TcpListener::bind(cfg.addr).map_err(|error| NetError::Bind {
        addr: cfg.addr,
        error,
    })?;
    std_listener.set_nonblocking(true)?;
    let addr = std_listener.local_addr()?;
    // Taken here, before the caller learns the address and announces it: taken by the accept
    // loop on its own thread, a SIGTERM sent as soon as the address showed could come first and
    // kill the process by the signal's default action, with no clean stop. (After the bind, its
    // likeliest failure: a handler once taken stays for the process's life.)
    let signals = if on_signal {
        use tokio::signal::unix::{signal, SignalKind};
        let _in_runtime = rt.enter();
        Some((
            signal(SignalKind::terminate())?,
            signal(SignalKind::interrupt())?,
        ))
    } else {
        None
    };
    let (stop_tx, stop_rx) = oneshot::channel();
    let state = Arc::new(State::new(&cfg, root, engine, figures.clone()));
    let workers = start_workers(&state)?;
    let serve_state = state.clone();
    let thread = std::thread::Builder::new()
        .name("foresight-serve".into())
        .spawn(move || {
            let state = serve_state;
            let result = rt.block_on(accept_loop(state.clone(), std_listener, stop_rx, signals));
            stop_workers(&state, workers);
            rt.shutdown_timeout(Duration::from_secs(1));
            result
        })
        .inspect_err(|_| {
            // The workers' handles went with the closure; told to stop, they end on their own.
            tell_workers_to_stop(&state);
        })?;
    Ok(ServerHandle {
        addr,
        figures,
        stop: Some(stop_tx),
        thread: Some(thread),
    })
}

fn measure_figures(cfg: &ServerConfig, root: &RootDir) -> PublishedFigures {
    let (bw, source) = match cfg.device {
        DeviceSource::Configured(b) => (b.bytes_per_s, "configured"),
        DeviceSource::Measure => match measure_device(cfg, root) {
            Some(b) => (b, "measured"),
            None => (cfg.default_bandwidth.bytes_per_s, "default"),
        },
    };
    // Said `configured` for paper 004's default too, which told a reader of the document that the
    // operator had chosen 1.2, where `bandwidth_source` says `configured` only for a given figure.
    let (peak_ratio, peak_ratio_source) = match cfg.peak_ratio {
        Some(p) => (p, "configured"),
        None => (DEFAULT_PEAK_RATIO, "default"),
    };
    PublishedFigures {
        max_readahead_bytes: cfg.readahead.0,
        avg_bandwidth_bytes_per_s: bw,
        peak_ratio,
        bandwidth_source: source.into(),
        peak_ratio_source: peak_ratio_source.into(),
        workers: cfg.workers,
    }
}

/// The largest file in the root or one level below, read with large direct reads (the rate `fio`
/// would report), after dropping it from the page cache. Symlinks are not chosen, and the chosen
/// file is opened beneath `root` (the descriptor requests are served from), so a name swapped for
/// a symlink out of the root after the choice is refused: the measurement stays on the root's own
/// files and device. None of the file is served.
fn measure_device(cfg: &ServerConfig, root: &RootDir) -> Option<f64> {
    let (len_bytes, path) = largest_file(cfg)?;
    measure_file(cfg, root, path.strip_prefix(&cfg.root).ok()?, len_bytes)
}

/// The largest regular file (not a symlink) with no holes in the root or one level below: its
/// length and path. A sparse file's holes read as zeros the file system makes up without
/// touching the device, so timing one publishes the memory's rate as the device's (a 3 GiB
/// `truncate`d file gave 61,350 MiB/s); its allocated blocks tell it apart. A file preallocated
/// and never written (`fallocate`) has all its blocks but reads as zeros all the same: the file
/// system's first hole (`SEEK_HOLE`, which counts such a range as one) tells it apart.
fn largest_file(cfg: &ServerConfig) -> Option<(u64, PathBuf)> {
    use std::os::unix::fs::MetadataExt;
    let mut best: Option<(u64, PathBuf)> = None;
    let mut consider = |p: PathBuf| {
        if let Ok(m) = std::fs::symlink_metadata(&p) {
            let allocated_bytes = m.blocks().saturating_mul(512);
            if m.is_file()
                && allocated_bytes >= m.len()
                && best.as_ref().is_none_or(|(l, _)| m.len() > *l)
                && foresight_engine::measure::all_data(&p).unwrap_or(false)
            {
                best = Some((m.len(), p));
            }
        }
    };
    for e in std::fs::read_dir(&cfg.root).ok()?.flatten().take(10_000) {
        let p = e.path();
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            if let Ok(rd) = std::fs::read_dir(&p) {
                for e2 in rd.flatten().take(1000) {
                    consider(e2.path());
                }
            }
        } else {
            consider(p);
        }
    }
    best
}

/// The sequential rate of `rel` beneath `root`, or `None` if it is too short to time (under four
/// reads of at least 1 MiB) or cannot be read there.
fn measure_file(cfg: &ServerConfig, root: &RootDir, rel: &Path, len_bytes: u64) -> Option<f64> {
    let io = cfg.readahead.0.div_ceil(4096) * 4096;
    if len_bytes < 4 * io.max(1 << 20) {
        return None;
    }
    let _ = foresight_engine::measure::evict_beneath_from_page_cache(root, rel);
    let r = foresight_engine::measure::sequential_read_beneath(
        cfg.backend.clone(),
        root,
        rel,
        len_bytes.min(256 << 20),
        io,
        4,
        Some(Duration::from_secs(2)),
    )
    .ok()?;
    (r.seconds > 0.0 && r.bytes > 0).then(|| r.bytes as f64 / r.seconds)
}

/// How far the time the kernel stamps on a file may lag behind the clock the server reads: the
/// stamps come from a clock that advances once a tick (Linux's coarse clock; its ticks are 1 to
/// 10 ms, `CONFIG_HZ` 1000 to 100), and a file served from another system's disk (a network mount)
/// carries that system's stamps (Windows' default timer ticks every 15.6 ms). Bounded with room
/// to spare.
const STAMP_LAG_BOUND: Duration = Duration::from_millis(50);

/// The finest timestamp granularity a file system can be proven to keep, with no sub-second
/// figure in evidence: a second (ext3, and ext4 on 128-byte inodes, keep whole seconds).
const COARSE_GRANULARITY: Duration = Duration::from_secs(1);

/// How long after its last modification a file's entity tag is strong: from then on, any write
/// stamps another modification time, so the tag's figures change with the bytes (RFC 9110,
/// section 8.8.1). Two writes get the same time only when both fall within one granularity step
/// `g` of the file system's timestamps after the clock's lag: a time stamped at or after `M + g +
/// lag` differs from `M`. A file system's times are whole multiples of its granularity (the
/// kernel truncates every time it stamps or is given, `timestamp_truncate`), so the sub-second
/// parts of the file's modification and status-change times bound `g` from above by their
/// greatest common divisor with a second: `123_456_789` ns proves a granularity of 1 ns, `0` ns
/// proves nothing, and leaves the second of [`COARSE_GRANULARITY`]. `mtime_nsec` and `ctime_nsec`
/// are those parts (`st_mtime_nsec`, `st_ctime_nsec`). Before, every file's tag was weak for a
/// second, so a download of a file modified within the second waited one second more for a
/// strong one; on ext4 it now waits about 50 ms. A file system coarser than a second (FAT keeps
/// even seconds) is not told apart from one of whole seconds, as before.
fn strong_after(mtime_nsec: i64, ctime_nsec: i64) -> Duration {
    fn gcd(a: u64, b: u64) -> u64 {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    let second_ns = COARSE_GRANULARITY.as_nanos() as u64;
    let part = |ns: i64| u64::try_from(ns).unwrap_or(0) % second_ns;
    let granularity_ns = gcd(gcd(second_ns, part(mtime_nsec)), part(ctime_nsec));
    Duration::from_nanos(granularity_ns) + STAMP_LAG_BOUND
}

/// Which file a path named when a request's headers were decided: the body must come from the
/// same one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct FileVersion {
    device: u64,
    inode: u64,
    len_bytes: u64,
    /// `None` where the file system keeps no modification time; then only the other three
    /// are compared.
    modified: Option<std::time::SystemTime>,
}

impl FileVersion {
    fn of(meta: &std::fs::Metadata) -> FileVersion {
        use std::os::unix::fs::MetadataExt;
        FileVersion {
            device: meta.dev(),
            inode: meta.ino(),
            len_bytes: meta.len(),
            modified: meta.modified().ok(),
        }
    }

    /// How long after its modification this version's tag is strong, from the file system's
    /// timestamps in `meta` (the same metadata as [`FileVersion::of`]'s): see [`strong_after`].
    fn strong_after(meta: &std::fs::Metadata) -> Duration {
        use std::os::unix::fs::MetadataExt;
        strong_after(meta.mtime_nsec(), meta.ctime_nsec())
    }

    /// The inode's last status change (`ctime`) in `meta`, to the nanosecond; `None` before 1970.
    fn changed(meta: &std::fs::Metadata) -> Option<std::time::SystemTime> {
        use std::os::unix::fs::MetadataExt;
        let secs = u64::try_from(meta.ctime()).ok()?;
        let nanos = u32::try_from(meta.ctime_nsec()).ok()?;
        std::time::UNIX_EPOCH.checked_add(Duration::new(secs, nanos))
    }

    /// This version's validators at `now`: an entity tag of the four figures that tell versions
    /// apart (so a tag changes exactly when `read_by` would refuse a reader opened before), and
    /// the modification time in whole seconds for `Last-Modified`, with `changed`, the inode's
    /// last status change (`ctime`), for the date conditions.
    ///
    /// The tag is weak while a later write could leave its figures as they are: while the file
    /// was modified less than `strong_after` before `now` (or has no modification time), since
    /// a rewrite within the file system's timestamp granularity, at the same size and inode,
    /// would stamp the same time (see [`strong_after`]). A modification time later than the
    /// status change was set by hand (`touch -d`, an archive's times) or by another clock: it
    /// says nothing of when the next write comes, and one ahead of the clock would keep the tag
    /// weak until the clock reached it. Such a tag also carries the status change, which the
    /// kernel stamps from its clock at every write and every setting of the time, and which
    /// nothing can set; the tag is then weak only while that change is less than `strong_after`
    /// old.
    fn validators(
        &self,
        now: std::time::SystemTime,
        changed: Option<std::time::SystemTime>,
        strong_after: Duration,
    ) -> Validators {
        use std::time::UNIX_EPOCH;
        let stamp = |t: std::time::SystemTime| match t.duration_since(UNIX_EPOCH) {
            Ok(d) => format!("{:x}", d.as_nanos()),
            // Before 1970: told apart from the same distance after it.
            Err(e) => format!("n{:x}", e.duration().as_nanos()),
        };
        let modified = self
            .modified
            .map_or(String::new(), |m| format!("-{}", stamp(m)));
        let set_ahead = match (self.modified, changed) {
            (Some(m), Some(c)) => m > c,
            _ => false,
        };
        let (changed_part, settles_from) = if set_ahead {
            (
                changed.map_or(String::new(), |c| format!("-c{}", stamp(c))),
                changed,
            )
        } else {
            (String::new(), self.modified)
        };
        let settled = settles_from
            .and_then(|t| now.duration_since(t).ok())
            .is_some_and(|age| age >= strong_after);
        let whole_s = |t: Option<std::time::SystemTime>| {
            t.and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map(|d| d.as_secs())
        };
        Validators {
            etag: format!(
                "\"{:x}-{:x}-{:x}{modified}{changed_part}\"",
                self.device, self.inode, self.len_bytes
            ),
            weak: !settled,
            modified_s: whole_s(self.modified),
            changed_s: whole_s(changed),
        }
    }

    /// Whether `reader` reads this version of the file: the same inode, opened at the same
    /// size, not modified since (a file rewritten in place keeps its inode and maybe its size,
    /// and the reader's readahead may hold its old bytes).
    fn read_by(&self, reader: &foresight_engine::Reader) -> bool {
        self.is(reader.file_identity())
    }

    /// Whether `id` describes this version: the figures its tag is made of.
    fn is(&self, id: foresight_engine::FileIdentity) -> bool {
        id.device == self.device
            && id.inode == self.inode
            && id.size_bytes == self.len_bytes
            && (self.modified.is_none() || id.modified.is_none() || id.modified == self.modified)
    }
}

/// The path names another file than the one the response's headers describe (it was replaced,
/// or resized, after they were decided); the request is answered 503 so that the client retries.
#[derive(Debug)]
struct FileChanged;

impl std::fmt::Display for FileChanged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the file changed while the request was being served; retry")
    }
}

impl std::error::Error for FileChanged {}

/// A body read: which stream, which bytes of which version of the file, and where the chunks go.
struct Job {
    /// Tells a parked job apart from the others of its worker.
    id: u64,
    stream: StreamId,
    /// The file's path relative to the root, opened beneath it.
    rel: Arc<PathBuf>,
    version: FileVersion,
    /// The bytes still to send: it shrinks from the front as chunks go out.
    range: ByteRange,
    tx: mpsc::Sender<io::Result<Bytes>>,
    /// The worker's reader ([`KeptReader::id`]) this response has begun on and is counted by.
    begun_on: Option<u64>,
}

struct WorkerSlot {
    jobs: Mutex<WorkerJobs>,
    ready: Condvar,
}

/// A worker's requests: those waiting to be served, and the responses set aside because their
/// connection has not taken the chunks already sent. Parked jobs keep their place in the count
/// that admits requests, so putting one back in the queue always finds room, and a worker holds
/// at most `queue_per_worker + 1` responses (the one in service besides), each pinning at most
/// [`RESPONSE_CHUNKS`] chunks.
struct WorkerJobs {
    queue: StreamGroupedQueue<Job>,
    /// Each with when its connection last took a chunk (or when it was parked).
    parked: BTreeMap<u64, (Job, Instant)>,
    /// Requests admitted beside those parked and the one in service: `queue_per_worker`.
    admit: usize,
    /// The worker ended in a panic: nothing is admitted, since no one would serve it.
    dead: bool,
}

impl WorkerJobs {
    fn new(queue_per_worker: usize) -> WorkerJobs {
        WorkerJobs {
            queue: StreamGroupedQueue::new(queue_per_worker.saturating_add(1), None),
            parked: BTreeMap::new(),
            admit: queue_per_worker,
            dead: false,
        }
    }

    /// Requests waiting or parked.
    fn len(&self) -> usize {
        self.queue.len() + self.parked.len()
    }

    /// Queues a new request, or gives it back when the worker holds its share already.
    fn admit(&mut self, job: Job) -> Result<(), Job> {
        if self.dead || self.len() >= self.admit {
            return Err(job);
        }
        self.queue.push(job.stream, job)
    }

    /// Puts a job back in the queue (it was parked, or in service): it had a place already, so
    /// there is room; should there be none, the job is dropped, which ends its response short
    /// rather than queue beyond the bound.
    fn requeue(&mut self, job: Job) {
        debug_assert!(self.len() < self.queue.capacity());
        let _ = self.queue.push(job.stream, job);
    }

    /// The connection of parked job `id` took a chunk, or went away: once its channel has
    /// [`RESUME_ROOM`] chunks of room (or is closed), back to the queue, where the worker sends it
    /// more or finds it closed.
    fn resume(&mut self, id: u64) -> bool {
        match self.parked.get_mut(&id) {
            None => return false,
            Some((job, _)) if may_resume(job) => {}
            // Progress, if not yet room enough: the send timeout counts from the last chunk taken.
            Some((_, since)) => {
                *since = Instant::now();
                return false;
            }
        }
        match self.parked.remove(&id) {
            Some((job, _)) => {
                self.requeue(job);
                true
            }
            None => false,
        }
    }
}

/// Whether a blocked job's worker should take it up: its channel has room for a few chunks, or its
/// connection is gone.
fn may_resume(job: &Job) -> bool {
    job.tx.capacity() >= RESUME_ROOM || job.tx.is_closed()
}

#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    by_status: Mutex<HashMap<u16, u64>>,
    body_bytes: AtomicU64,
    connections_open: AtomicU64,
    connections_total: AtomicU64,
    connections_refused: AtomicU64,
    busy_rejections: AtomicU64,
    abandoned_responses: AtomicU64,
    streams_created: AtomicU64,
    /// File responses whose body is under way: made, and not yet ended or dropped.
    responses_open: AtomicU64,
}

struct State {
    /// The next job's id.
    next_job: AtomicU64,
    root: RootDir,
    cfg: ServerConfig,
    engine: Engine,
    figures: PublishedFigures,
    workers: Vec<WorkerSlot>,
    streams: Mutex<StreamTable>,
    counters: Counters,
    shutting_down: AtomicBool,
    /// Why the server must stop (see the module documentation); set once.
    failed: std::sync::OnceLock<String>,
    /// Wakes the accept loop when `failed` is set (a stored permit if it is not waiting).
    failed_wake: tokio::sync::Notify,
}

impl State {
    fn new(cfg: &ServerConfig, root: RootDir, engine: Engine, figures: PublishedFigures) -> State {
        State {
            next_job: AtomicU64::new(0),
            root,
            cfg: cfg.clone(),
            engine,
            figures,
            workers: (0..cfg.workers)
                .map(|_| WorkerSlot {
                    jobs: Mutex::new(WorkerJobs::new(cfg.queue_per_worker)),
                    ready: Condvar::new(),
                })
                .collect(),
            streams: Mutex::new(StreamTable::new(
                WorkerChoice::new(cfg.workers).expect("workers validated"),
                cfg.max_streams,
                cfg.stream_idle,
            )),
            counters: Counters::default(),
            shutting_down: AtomicBool::new(false),
            failed: std::sync::OnceLock::new(),
            failed_wake: tokio::sync::Notify::new(),
        }
    }

    /// Records why the server must stop (the first reason only, on one line for the log) and
    /// wakes the accept loop.
    fn fail(&self, why: String) {
        let line = why.replace(['\n', '\r'], " ");
        if self.failed.set(line).is_ok() {
            self.failed_wake.notify_one();
        }
    }

    /// Why the server must stop, if it must: a recorded failure, or a broken engine (recorded
    /// as it is found).
    fn failure(&self) -> Option<String> {
        if self.failed.get().is_none() {
            let why = self.engine.broken_reason()?;
            self.fail(format!("the engine broke, by a panic: {why}"));
        }
        self.failed.get().cloned()
    }

    /// Worker `me` ended in a panic with `message`. The jobs left in its queue, or parked, are
    /// dropped, which ends their responses (503 for those not begun), and it admits no more;
    /// the server stops.
    fn worker_died(&self, me: WorkerId, message: &str) {
        let why = match self.engine.broken_reason() {
            // A policy's panic in the worker's read: the engine says where.
            Some(engine) => format!("the engine broke, by a panic: {engine}"),
            None => format!("I/O worker {} panicked: {message}", me.0),
        };
        self.fail(why);
        if let Some(slot) = self.workers.get(me.0 as usize) {
            // The panic may have struck under this lock; the queue is only emptied here.
            let mut jobs = slot.jobs.lock().unwrap_or_else(|p| p.into_inner());
            jobs.dead = true;
            while jobs.queue.pop().is_some() {}
            jobs.parked.clear();
        }
    }

    fn count_status(&self, status: StatusCode) {
        *self
            .counters
            .by_status
            .lock()
            .expect("counters poisoned")
            .entry(status.as_u16())
            .or_default() += 1;
    }

    /// The stream for this client and file, pinned to its worker when first seen.
    fn stream_for(&self, client: String, path: &Path) -> (StreamId, WorkerId) {
        let mut t = self.streams.lock().expect("stream table poisoned");
        let (id, worker, created) = t.stream_for((client, path.to_path_buf()), Instant::now());
        if created.is_some() {
            self.counters
                .streams_created
                .fetch_add(1, Ordering::Relaxed);
        }
        (id, worker)
    }

    /// Queues `job` at `worker`, or gives it back if the queue is full.
    fn enqueue(&self, worker: WorkerId, job: Job) -> Result<(), Job> {
        let slot = &self.workers[worker.0 as usize];
        // Counted before it is pushed: once pushed, a worker may serve it and count it done at
        // once, and a `request_done` that came before its `request_queued` would saturate at zero
        // and leave the worker counted busy for good. Counting first keeps every decrement after
        // its increment; a refused job takes its count back.
        let choice = |f: fn(&mut WorkerChoice, WorkerId)| {
            f(
                &mut self.streams.lock().expect("stream table poisoned").choice,
                worker,
            )
        };
        choice(WorkerChoice::request_queued);
        // A queue its worker's panic poisoned is marked dead (`worker_died`) and refuses the job;
        // panicking here would end the connection's task without an answer.
        let pushed = slot
            .jobs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .admit(job);
        match pushed {
            Ok(()) => slot.ready.notify_one(),
            Err(_) => choice(WorkerChoice::request_done),
        }
        pushed
    }

    /// The connection of `worker`'s job `id` took a chunk (so its channel has room) or closed:
    /// if the job was parked, the worker takes it up again.
    fn resume(&self, worker: WorkerId, id: u64) {
        let Some(slot) = self.workers.get(worker.0 as usize) else {
            return;
        };
        // Called from a response body's drop: a queue a dead worker poisoned must not panic it.
        if slot
            .jobs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .resume(id)
        {
            slot.ready.notify_one();
        }
    }
}

/// Starts one thread per worker. If one cannot be started, those already running are stopped and
/// the error returned: a missing worker would leave every stream pinned to it waiting for good.
fn start_workers(state: &Arc<State>) -> io::Result<Vec<std::thread::JoinHandle<()>>> {
    let mut started = Vec::with_capacity(state.workers.len());
    for i in 0..state.workers.len() {
        let st = state.clone();
        match std::thread::Builder::new()
            .name(format!("foresight-w{i}"))
            .spawn(move || {
                let me = WorkerId(i as u32);
                // Caught to stop the server, not to go on: the thread ends either way.
                let ran =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| worker_loop(&st, me)));
                if let Err(payload) = ran {
                    st.worker_died(me, &foresight_engine::panic_payload_text(payload.as_ref()));
                }
            }) {
            Ok(h) => started.push(h),
            Err(e) => {
                stop_workers(state, started);
                return Err(io::Error::new(
                    e.kind(),
                    format!("starting I/O worker {i} of {}: {e}", state.workers.len()),
                ));
            }
        }
    }
    Ok(started)
}

/// Tells the workers to stop once their queues are empty, and waits for them.
fn stop_workers(state: &State, workers: Vec<std::thread::JoinHandle<()>>) {
    tell_workers_to_stop(state);
    for w in workers {
        let _ = w.join();
    }
}

/// Tells the workers to stop once their queues are empty.
fn tell_workers_to_stop(state: &State) {
    state.shutting_down.store(true, Ordering::SeqCst);
    for w in &state.workers {
        w.ready.notify_all();
    }
}

/// A worker's engine reader of one version of a stream's file.
struct KeptReader {
    reader: foresight_engine::Reader,
    /// Tells this reader apart from one opened later under the same key.
    id: u64,
    used: Instant,
    /// Responses that have begun on this reader and not ended.
    in_flight: usize,
    /// The stream's path has since been opened on another version: the reader stays only for
    /// the responses begun on it, and is closed when the last of them ends.
    superseded: bool,
}

/// A worker's readers, one per stream and version of its file. A stream has one current version;
/// a version the path no longer names keeps its reader while responses begun on it are under way,
/// so that a response begun before its file was replaced ends from the file it began with (whose
/// bytes are those its headers announced) rather than being cut short.
type Readers = HashMap<(StreamId, FileVersion), KeptReader>;

/// Closes the readers that no response is using and that have not been used for `idle`. One a
/// response is still using stays however long that response has waited: closing a superseded
/// reader would cut its response short (the path now names another file), and a response only
/// waits as long as the send timeout allows before it is dropped and releases its reader.
fn sweep_idle(readers: &mut Readers, idle: Duration) {
    readers.retain(|_, kept| kept.in_flight > 0 || kept.used.elapsed() <= idle);
}

/// The response `job` has ended: it no longer holds its reader, which is closed if the stream has
/// moved on to another version of the file and no other response began on it.
fn release(readers: &mut Readers, job: &Job) {
    let key = (job.stream, job.version);
    let Some(kept) = readers.get_mut(&key) else {
        return;
    };
    if job.begun_on != Some(kept.id) {
        return;
    }
    kept.in_flight = kept.in_flight.saturating_sub(1);
    if kept.in_flight == 0 && kept.superseded {
        readers.remove(&key);
    }
}

/// The most engine readers one worker keeps open. Beyond it the least recently used is closed,
/// preferring one no response is reading, then one the path still names (`reader_for`).
const READERS_PER_WORKER: usize = 256;

/// How often a busy worker looks for parked responses that were abandoned.
const SWEEP_EVERY: Duration = Duration::from_millis(100);

/// Where a job went when the worker stopped serving it.
enum Served {
    /// Its response is complete, failed or abandoned.
    Done(Job),
    /// Its channel is full: the client has not taken the chunks sent yet.
    Blocked(Job),
}

fn worker_loop(state: &State, me: WorkerId) {
    let slot = &state.workers[me.0 as usize];
    let mut readers = Readers::new();
    let mut next_reader = 0u64;
    let mut swept = Instant::now();
    let done = || {
        state
            .streams
            .lock()
            .expect("stream table poisoned")
            .choice
            .request_done(me);
    };
    loop {
        let (job, dropped) = {
            let mut jobs = slot.jobs.lock().expect("worker queue poisoned");
            let mut dropped = Vec::new();
            let job = loop {
                let stopping = state.shutting_down.load(Ordering::SeqCst);
                if stopping || swept.elapsed() >= SWEEP_EVERY {
                    // A parked response whose connection went away, or whose client has taken no
                    // chunk for the send timeout, is abandoned; all are at shutdown.
                    swept = Instant::now();
                    let send_timeout = state.cfg.send_timeout;
                    let gone: Vec<u64> = jobs
                        .parked
                        .iter()
                        .filter(|(_, (job, since))| {
                            stopping || job.tx.is_closed() || since.elapsed() >= send_timeout
                        })
                        .map(|(id, _)| *id)
                        .collect();
                    for id in gone {
                        if let Some((job, _)) = jobs.parked.remove(&id) {
                            dropped.push(job);
                        }
                    }
                    if !dropped.is_empty() {
                        break None;
                    }
                }
                if let Some((_, job)) = jobs.queue.pop() {
                    break Some(job);
                }
                if stopping && jobs.parked.is_empty() {
                    break None;
                }
                let wait = if jobs.parked.is_empty() {
                    Duration::from_secs(1)
                } else {
                    SWEEP_EVERY
                };
                let (g, _) = slot
                    .ready
                    .wait_timeout(jobs, wait)
                    .expect("worker queue poisoned");
                jobs = g;
                sweep_idle(&mut readers, state.cfg.stream_idle);
            };
            (job, dropped)
        };
        if !dropped.is_empty() {
            state
                .counters
                .abandoned_responses
                .fetch_add(dropped.len() as u64, Ordering::Relaxed);
            for job in dropped {
                release(&mut readers, &job);
                done();
            }
            continue;
        }
        let Some(job) = job else {
            return;
        };
        match serve_job(state, &mut readers, &mut next_reader, job) {
            Served::Done(job) => {
                release(&mut readers, &job);
                done();
                // A read that failed because the engine broke wakes the accept loop now.
                let _ = state.failure();
            }
            Served::Blocked(job) => {
                let mut jobs = slot.jobs.lock().expect("worker queue poisoned");
                // The connection may have taken chunks (or closed) between the worker finding
                // the channel full and this lock, and `resume` would then have found nothing
                // parked: looking again under the lock, which `resume` takes too, loses no wake.
                if may_resume(&job) {
                    jobs.requeue(job);
                } else {
                    jobs.parked.insert(job.id, (job, Instant::now()));
                }
            }
        }
    }
}

/// The worker's reader for `job`'s stream and version of the file, opened beneath the root if it
/// has none. The first time a response gets its reader, it is counted by it.
fn reader_for<'r>(
    state: &State,
    readers: &'r mut Readers,
    next_reader: &mut u64,
    job: &mut Job,
) -> io::Result<&'r mut foresight_engine::Reader> {
    let key = (job.stream, job.version);
    // A reader kept under the key was checked to read that version when it was opened, and its
    // identity does not change; a reader of another version (the file replaced or resized since)
    // is never used for this response, whose headers announced this one.
    if !readers.contains_key(&key) {
        if readers.len() >= READERS_PER_WORKER {
            // Least recently used first among those no response is reading; then among those
            // the path still names, whose responses open it again unharmed; a superseded reader
            // in use last, since its responses can only be cut short (FileChanged) without it.
            if let Some(old) = readers
                .iter()
                .min_by_key(|(_, k)| (k.in_flight > 0, k.in_flight > 0 && k.superseded, k.used))
                .map(|(k, _)| *k)
            {
                readers.remove(&old);
            }
        }
        match state.engine.open_beneath(&state.root, &job.rel) {
            // The path changed again between the headers' metadata and this open: no reader of
            // the announced file can be had any more.
            Ok(r) if !job.version.read_by(&r) => return Err(io::Error::other(FileChanged)),
            Ok(r) => {
                // The path names this version now: the stream's readers of other versions are
                // closed, or kept only for the responses under way on them.
                readers.retain(|(stream, _), kept| {
                    if *stream != job.stream {
                        return true;
                    }
                    kept.superseded = true;
                    kept.in_flight > 0
                });
                *next_reader += 1;
                readers.insert(
                    key,
                    KeptReader {
                        reader: r,
                        id: *next_reader,
                        used: Instant::now(),
                        in_flight: 0,
                        superseded: false,
                    },
                );
            }
            // The engine's error itself, so that a refusal by a broken engine is still one.
            Err(e) => return Err(io::Error::other(e)),
        }
    }
    let kept = readers
        .get_mut(&key)
        .ok_or_else(|| io::Error::other("reader vanished"))?;
    kept.used = Instant::now();
    if job.begun_on != Some(kept.id) {
        // Begun here, or its earlier reader was closed for room and this one opened anew.
        job.begun_on = Some(kept.id);
        kept.in_flight += 1;
    }
    Ok(&mut kept.reader)
}

/// Sends `job`'s chunks while its channel has room; a chunk is read only once there is room for
/// it, so a blocked job holds no buffer.
fn serve_job(state: &State, readers: &mut Readers, next_reader: &mut u64, mut job: Job) -> Served {
    let abandoned = |job| {
        state
            .counters
            .abandoned_responses
            .fetch_add(1, Ordering::Relaxed);
        Served::Done(job)
    };
    while job.range.len.0 > 0 {
        // A shutdown whose grace period has run out ends the response at once.
        if state.shutting_down.load(Ordering::SeqCst) {
            return abandoned(job);
        }
        let permit = match job.tx.clone().try_reserve_owned() {
            Ok(p) => p,
            Err(mpsc::error::TrySendError::Full(_)) => return Served::Blocked(job),
            Err(mpsc::error::TrySendError::Closed(_)) => return abandoned(job),
        };
        // Another job of the stream may have moved the reader since this one's last chunk.
        let reader = match reader_for(state, readers, next_reader, &mut job).and_then(|r| {
            r.seek(SeekFrom::Start(job.range.start.0))?;
            Ok(r)
        }) {
            Ok(r) => r,
            Err(e) => {
                permit.send(Err(e));
                return Served::Done(job);
            }
        };
        let want = job.range.len.0.min(state.cfg.chunk_bytes as u64) as usize;
        let mut buf = vec![0u8; want];
        let mut got = 0;
        while got < want {
            match reader.read(&mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    permit.send(Err(e));
                    return Served::Done(job);
                }
            }
        }
        // The chunk may hold bytes of a rewrite in place (same inode) that began after the
        // headers were decided: a reader keeps its descriptor, and the page cache serves whatever
        // was written last. Sent, those bytes would end a response of the old length under the old
        // tag, a mix no client can detect; the descriptor's size and modification time, looked
        // at after the read, tell. They are looked at after it because Linux's write path (ext4,
        // xfs, btrfs, tmpfs: `file_modified` before `generic_perform_write`, and before a direct
        // write) sets the modification time before it copies a byte: a read that saw
        // any new byte began after that, so an `fstat` after the read sees the new time. A
        // changed file cuts the response (503 if nothing was sent yet; else the connection closes
        // before the announced length, which a client must take for a failure) so that the
        // client retries and gets the new version whole under its own tag. What still slips
        // through: a rewrite of the same size within the file system's timestamp granularity of
        // the previous modification (the time does not move; the tag is weak for
        // `strong_after` for this reason), stores through a shared `mmap` into a page already
        // dirtied (the time moves only at the first write fault after writeback), and a time set
        // back by hand to the very nanosecond. One `fstat` a chunk (256 KiB by default). A short
        // read is looked at the same way: a file truncated in place (`>` in a shell) is a
        // rewrite like any other, and gets 503 (a retry) before the response begins, not 500.
        match reader.identity_now() {
            Ok(now) if job.version.is(now) => {}
            Ok(_) => {
                permit.send(Err(io::Error::other(FileChanged)));
                return Served::Done(job);
            }
            Err(e) => {
                permit.send(Err(e));
                return Served::Done(job);
            }
        }
        if got < want {
            // Shorter than announced though the descriptor tells no change (a file without one,
            // or a change within the timestamp granularity): end the body early so the client
            // sees a short response.
            permit.send(Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "file shorter than announced",
            )));
            return Served::Done(job);
        }
        permit.send(Ok(Bytes::from(buf)));
        job.range = ByteRange::new(job.range.start.0 + got as u64, job.range.len.0 - got as u64);
    }
    Served::Done(job)
}

async fn accept_loop(
    state: Arc<State>,
    std_listener: std::net::TcpListener,
    mut stop: oneshot::Receiver<()>,
    signals: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
) -> Result<Stopped, NetError> {
    let listener = tokio::net::TcpListener::from_std(std_listener)?;
    let permits = Arc::new(Semaphore::new(state.cfg.max_connections));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    // Set when the stop begins: every connection's reads end there (see `ConnSocket`).
    let stopping = Arc::new(AtomicBool::new(false));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(state.cfg.idle_timeout)
        // The head's own limit, checked on the bytes the head takes: the read buffer's limit
        // alone is not exact, since a read may fill the buffer's spare room past it (heads of
        // 100,001 bytes were served under 100,000). The header lines are pinned to hyper's own
        // default, which it keeps on the stack; its parser also takes a URI of at most 65,534
        // bytes (414 past it).
        .max_header_size(state.cfg.max_header_bytes)
        .max_headers(MAX_HEADER_LINES)
        .max_buf_size(state.cfg.max_header_bytes.max(8192))
        .keep_alive(true)
        // A client that shuts its sending side after its request still wants the answer; by
        // default hyper takes the end of the stream for a hang-up and drops the request. A
        // client that is really gone is noticed when writing to it fails.
        .half_close(true);
    let signals = async {
        match signals {
            Some((mut terminate, mut interrupt)) => {
                tokio::select! {
                    _ = terminate.recv() => {}
                    _ = interrupt.recv() => {}
                }
            }
            None => std::future::pending::<()>().await,
        }
    };
    tokio::pin!(signals);
    let mut failure_poll = tokio::time::interval(FAILURE_POLL);
    loop {
        tokio::select! {
            _ = &mut stop => break,
            _ = &mut signals => break,
            _ = state.failed_wake.notified() => break,
            _ = failure_poll.tick() => {
                if state.failure().is_some() {
                    break;
                }
            }
            accepted = listener.accept() => {
                let (tcp, peer) = match accepted {
                    Ok(x) => x,
                    // Out of descriptors or a connection reset before accept: keep serving.
                    Err(_) => {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    }
                };
                let Ok(permit) = permits.clone().try_acquire_owned() else {
                    state.counters.connections_refused.fetch_add(1, Ordering::Relaxed);
                    drop(tcp);
                    continue;
                };
                let _ = tcp.set_nodelay(true);
                state.counters.connections_total.fetch_add(1, Ordering::Relaxed);
                state.counters.connections_open.fetch_add(1, Ordering::Relaxed);
                let st = state.clone();
                let svc = hyper::service::service_fn(move |req| {
                    let st = st.clone();
                    async move { Ok::<_, Infallible>(handle(st, req, peer).await) }
                });
                let io = ConnSocket::new(tcp, state.cfg.send_timeout, stopping.clone());
                let conn = http.serve_connection(TokioIo::new(io), svc);
                let watched = graceful.watch(conn);
                let st = state.clone();
                tokio::spawn(async move {
                    // A request hyper answered itself never reached `handle`, which counts the
                    // others: its refusal ends the connection, with the error it answered.
                    if let Some(status) = watched.await.err().as_ref().and_then(answered_by_hyper)
                    {
                        st.counters.requests.fetch_add(1, Ordering::Relaxed);
                        st.count_status(status);
                    }
                    st.counters.connections_open.fetch_sub(1, Ordering::Relaxed);
                    drop(permit);
                });
            }
        }
    }
    drop(listener);
    let began = Instant::now();
    // Before hyper is told: its graceful shutdown closes an idle keep-alive connection at once,
    // but lets one that holds part of a request head wait for the rest, under the header timeout
    // (30 s by default), so a client that sent half a head held the stop for the whole grace
    // period. Such a request has no answer under way; with its reads ended, hyper sees the head
    // cut short and closes the connection as soon as graceful shutdown polls it.
    stopping.store(true, Ordering::SeqCst);
    let finished = tokio::time::timeout(state.cfg.grace, graceful.shutdown())
        .await
        .is_ok();
    let waited = began.elapsed();
    // The responses still under way now are cut short: the workers stop, and the runtime drops
    // their connections.
    let (cut_short_responses, closed_connections) = if finished {
        (0, 0)
    } else {
        (
            state.counters.responses_open.load(Ordering::Relaxed),
            state.counters.connections_open.load(Ordering::Relaxed),
        )
    };
    match state.failure() {
        Some(why) => Err(NetError::Broken { why }),
        None => Ok(Stopped {
            cut_short_responses,
            closed_connections,
            waited,
        }),
    }
}

/// The status hyper answered a request with itself, from the error that ended its connection: a
/// head that did not parse (400), one past `max_header_bytes` or `MAX_HEADER_LINES` (431), a URI
/// past hyper's 65,534 bytes (414). `None` for the errors hyper answers with nothing (a broken or
/// timed-out connection, an HTTP/2 preface, a fault of its own).
fn answered_by_hyper(e: &hyper::Error) -> Option<StatusCode> {
    if !e.is_parse() || e.is_parse_version_h2() || e.is_parse_status() {
        return None;
    }
    // hyper tells its two refusals for size apart only in its words.
    let text = e.to_string();
    if e.is_parse_too_large() {
        Some(if text.contains("URI too long") {
            StatusCode::URI_TOO_LONG
        } else {
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE
        })
    } else if text.contains("internal error") {
        None
    } else {
        Some(StatusCode::BAD_REQUEST)
    }
}

/// How often the accept loop looks whether the engine broke with no worker reading to see it
/// (a panic of the policy's timer). A worker that sees a read fail wakes it at once.
const FAILURE_POLL: Duration = Duration::from_millis(200);

/// The answer to a request for a file once the server must stop: 503 and a retry, by which time
/// a supervisor will have restarted it. The panic is the log's, not the client's.
fn stopping() -> Response<ResBody> {
    let mut r = plain(
        StatusCode::SERVICE_UNAVAILABLE,
        "the server is stopping after an internal failure; retry",
    );
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    r
}

/// A connection's socket whose writes fail once they have made no progress for `timeout`, and
/// whose reads end (as if the client had closed its side) once the server is stopping.
///
/// hyper has no write timeout: a client that stops reading leaves its connection task waiting
/// for the socket forever, holding the connection's permit, hyper's buffer and the chunks in the
/// response's channel, long after the worker has given up on it. Failing the stalled write makes
/// hyper drop the connection, and everything it held goes with it.
///
/// The end of reads is what closes, at the stop, a connection whose request head has not all
/// come: hyper, reading the rest, finds the head cut short and ends the connection with no
/// answer. A head hyper already holds whole is still answered. A response under way is not
/// touched: with half-close allowed, hyper does not read while it answers, and an end of reads
/// found then would only be a client's half-close, which it answers anyway.
struct ConnSocket<T> {
    io: T,
    timeout: Duration,
    /// Armed when a write finds the socket full, cleared when a write goes through.
    stalled_since: Option<Pin<Box<tokio::time::Sleep>>>,
    /// The server's stop has begun.
    stopping: Arc<AtomicBool>,
}

impl<T> ConnSocket<T> {
    fn new(io: T, timeout: Duration, stopping: Arc<AtomicBool>) -> ConnSocket<T> {
        ConnSocket {
            io,
            timeout,
            stalled_since: None,
            stopping,
        }
    }

    /// What a write that found no room returns: still pending, or an error once the socket has
    /// taken nothing for `timeout`. The timer wakes the connection's task when it expires, so
    /// the write is polled again even if the socket never becomes writable.
    fn stalled<R>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<R>> {
        let timeout = self.timeout;
        let timer = self
            .stalled_since
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        match std::future::Future::poll(timer.as_mut(), cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("the client took no data for {timeout:?}"),
            ))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn progress<R>(&mut self, cx: &mut Context<'_>, r: Poll<io::Result<R>>) -> Poll<io::Result<R>> {
        match r {
            Poll::Pending => self.stalled(cx),
            ready => {
                self.stalled_since = None;
                ready
            }
        }
    }
}

impl<T: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for ConnSocket<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.stopping.load(Ordering::SeqCst) {
            // Nothing put in `buf`: the end of the stream.
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.io).poll_read(cx, buf)
    }
}

impl<T: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for ConnSocket<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.io).poll_write(cx, buf);
        this.progress(cx, r)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        this.progress(cx, r)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.io).poll_flush(cx);
        this.progress(cx, r)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

type ResBody = http_body_util::combinators::BoxBody<Bytes, io::Error>;

fn empty() -> ResBody {
    Empty::new().map_err(|never| match never {}).boxed()
}

fn full(b: impl Into<Bytes>) -> ResBody {
    Full::new(b.into()).map_err(|never| match never {}).boxed()
}

fn plain(status: StatusCode, msg: &str) -> Response<ResBody> {
    let mut r = Response::new(full(format!("{msg}\n")));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// A response body fed by a worker through a bounded channel. Taking a chunk makes room, and
/// the worker takes the job up again if it parked it for want of room; so does dropping the body.
struct ChannelBody {
    first: Option<Bytes>,
    rx: mpsc::Receiver<io::Result<Bytes>>,
    state: Arc<State>,
    worker: WorkerId,
    job: u64,
}

impl ChannelBody {
    /// A body fed through `rx`, counted as under way until it is dropped.
    fn new(
        first: Bytes,
        rx: mpsc::Receiver<io::Result<Bytes>>,
        state: Arc<State>,
        worker: WorkerId,
        job: u64,
    ) -> ChannelBody {
        state
            .counters
            .responses_open
            .fetch_add(1, Ordering::Relaxed);
        ChannelBody {
            first: Some(first),
            rx,
            state,
            worker,
            job,
        }
    }
}

impl Drop for ChannelBody {
    fn drop(&mut self) {
        self.rx.close();
        self.state.resume(self.worker, self.job);
        self.state
            .counters
            .responses_open
            .fetch_sub(1, Ordering::Relaxed);
    }
}

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        if let Some(b) = self.first.take() {
            self.state
                .counters
                .body_bytes
                .fetch_add(b.len() as u64, Ordering::Relaxed);
            return Poll::Ready(Some(Ok(Frame::data(b))));
        }
        let got = self.rx.poll_recv(cx);
        if matches!(got, Poll::Ready(Some(_))) {
            self.state.resume(self.worker, self.job);
        }
        match got {
            Poll::Ready(Some(Ok(b))) => {
                self.state
                    .counters
                    .body_bytes
                    .fetch_add(b.len() as u64, Ordering::Relaxed);
                Poll::Ready(Some(Ok(Frame::data(b))))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

async fn handle(state: Arc<State>, req: Request<Incoming>, peer: SocketAddr) -> Response<ResBody> {
    let arrived = Instant::now();
    state.counters.requests.fetch_add(1, Ordering::Relaxed);
    let mut resp = route(&state, &req, peer, arrived).await;
    let h = resp.headers_mut();
    h.insert(header::SERVER, HeaderValue::from_static("foresight"));
    if let Ok(v) = HeaderValue::from_str(&arrived.elapsed().as_nanos().to_string()) {
        h.entry(PROC_HEADER).or_insert(v);
    }
    state.count_status(resp.status());
    resp
}

async fn route(
    state: &Arc<State>,
    req: &Request<Incoming>,
    peer: SocketAddr,
    arrived: Instant,
) -> Response<ResBody> {
    if let Err(why) = check_host(req) {
        return plain(StatusCode::BAD_REQUEST, why);
    }
    let head = match *req.method() {
        Method::GET => false,
        Method::HEAD => true,
        _ => {
            let mut r = plain(
                StatusCode::METHOD_NOT_ALLOWED,
                "only GET and HEAD are served",
            );
            r.headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            return r;
        }
    };
    let path = req.uri().path();
    // The documents are built for HEAD too: hyper sends no body in answer to HEAD but takes the
    // Content-Length from it, which RFC 9110 (section 9.3.2) wants to be the GET's.
    let document = served_document(path);
    if document == Some(Document::Metrics) {
        let mut r = Response::new(full(metrics_text(state)));
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4"),
        );
        return r;
    }
    if document == Some(Document::Figures) {
        let mut r = Response::new(full(state.figures.to_json().to_string()));
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        return r;
    }
    let file = match resolve(&state.root, path) {
        Ok(f) => f,
        Err(e) => return path_error(e),
    };
    // Range applies to GET only (RFC 9110, section 14.2); `If-Range` is weighed in `serve_file`,
    // against the validators of the file as found.
    // Several `Range` lines are read as one, joined by commas as RFC 9110 (section 5.3) combines
    // field lines: `bytes=0-4, bytes=7-9` is then malformed (400), where reading only the first
    // would answer a request that a cache in front may have read by its last line.
    let range_header = if head {
        None
    } else {
        let lines: Vec<&[u8]> = req
            .headers()
            .get_all(header::RANGE)
            .iter()
            .map(HeaderValue::as_bytes)
            .collect();
        (!lines.is_empty()).then(|| lines.join(&b", "[..]))
    };
    let client = req
        .headers()
        .get(STREAM_HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|s| s.len() <= 128)
        // Without the header, the peer's address and port: each connection is its own stream,
        // so two clients behind one address reading one file do not wait for each other.
        .map_or_else(|| peer.to_string(), |s| format!("h:{s}"));
    // A list field's lines are one value joined by commas (RFC 9110, section 5.3); for a field
    // that takes one value, two lines joined make an invalid value, which is ignored.
    let joined = |name: header::HeaderName| {
        let lines: Vec<String> = req
            .headers()
            .get_all(name)
            .iter()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .collect();
        (!lines.is_empty()).then(|| lines.join(", "))
    };
    let conditions = Conditions {
        if_match: joined(header::IF_MATCH),
        if_unmodified_since: joined(header::IF_UNMODIFIED_SINCE),
        if_none_match: joined(header::IF_NONE_MATCH),
        if_modified_since: joined(header::IF_MODIFIED_SINCE),
        if_range: joined(header::IF_RANGE),
    };
    serve_file(
        state,
        file,
        head,
        range_header.as_deref(),
        &conditions,
        client,
        arrived,
    )
    .await
}

/// The documents the server makes itself, at paths that would otherwise name files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Document {
    /// `/metrics`.
    Metrics,
    /// [`WELL_KNOWN_PATH`].
    Figures,
}

/// The document `path` (still percent-encoded) names, if any, by the name it gives once decoded
/// and its empty and `.` segments dropped, as [`resolve`] reads a file's path: `/%6detrics` and
/// `//metrics` are `/metrics` (RFC 3986, sections 6.2.2.2 and 6.2.2.3). Compared as written,
/// they named the file `metrics` under the root, which `/metrics` itself never reaches.
fn served_document(path: &str) -> Option<Document> {
    // Split at the slashes written, then decode, as `resolve` does: `%2F` is no separator, so
    // `/.well-known%2Fforesight` names no document (and is refused there).
    let decoded: Vec<Vec<u8>> = path
        .split('/')
        .map(crate::path::percent_decode)
        .collect::<Option<_>>()?;
    // A trailing `/` or `/.` names a directory, as it does for a file's path (a 404 there).
    if decoded.len() > 1 && decoded.last().is_some_and(|l| l.is_empty() || l == b".") {
        return None;
    }
    let segments: Vec<&[u8]> = decoded
        .iter()
        .map(Vec::as_slice)
        .filter(|s| !s.is_empty() && *s != b".")
        .collect();
    let named = |p: &str| {
        let want: Vec<&[u8]> = p
            .split('/')
            .filter(|s| !s.is_empty())
            .map(str::as_bytes)
            .collect();
        segments == want
    };
    if named("/metrics") {
        Some(Document::Metrics)
    } else if named(WELL_KNOWN_PATH) {
        Some(Document::Figures)
    } else {
        None
    }
}

fn path_error(e: PathError) -> Response<ResBody> {
    match e {
        PathError::BadRequest(why) => plain(StatusCode::BAD_REQUEST, &why),
        PathError::NotFound => plain(StatusCode::NOT_FOUND, "not found"),
        PathError::Failed(why) => plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("cannot look the file up: {why}"),
        ),
        PathError::Unservable(why) => plain(StatusCode::FORBIDDEN, &why),
    }
}

/// Answers a request for `file`, whose path `resolve` checked: the headers from the metadata that
/// lookup took, the body from the stream's worker, which opens the file beneath the root again.
/// Nothing here looks the file up by name.
async fn serve_file(
    state: &Arc<State>,
    file: ServedFile,
    head: bool,
    range_header: Option<&[u8]>,
    conditions: &Conditions,
    client: String,
    arrived: Instant,
) -> Response<ResBody> {
    let version = FileVersion::of(&file.metadata);
    let len = version.len_bytes;
    let now = std::time::SystemTime::now();
    let now_s = now
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let validators = version.validators(
        now,
        FileVersion::changed(&file.metadata),
        FileVersion::strong_after(&file.metadata),
    );
    let mut validator_headers = Vec::with_capacity(2);
    if let Ok(v) = HeaderValue::from_str(&validators.etag_value()) {
        validator_headers.push((header::ETAG, v));
    }
    // The date the conditions weigh: the modification time, but no later than the inode's
    // status change nor the clock (`last_modified_s`). A time ahead of the clock is never sent
    // (RFC 9110, section 8.8.2.1), nor the clock in its place, which moves on every second.
    let last_modified_s = validators.last_modified_s(now_s);
    if let Some(date) = last_modified_s.and_then(format_http_date) {
        if let Ok(v) = HeaderValue::from_str(&date) {
            validator_headers.push((header::LAST_MODIFIED, v));
        }
    }
    let range_header = match evaluate(conditions, &validators, now_s) {
        Answer::PreconditionFailed => {
            return plain(
                StatusCode::PRECONDITION_FAILED,
                "precondition failed: the file does not match If-Match or was modified after \
                 If-Unmodified-Since",
            )
        }
        Answer::NotModified => {
            // No body, and the validators the 200 would have carried (RFC 9110, section 15.4.5).
            let mut r = Response::new(empty());
            *r.status_mut() = StatusCode::NOT_MODIFIED;
            for (k, v) in validator_headers {
                r.headers_mut().insert(k, v);
            }
            return r;
        }
        Answer::Send { honour_range } => range_header.filter(|_| honour_range),
    };
    let (status, range) = match decide(range_header, len) {
        RangeDecision::Full => (StatusCode::OK, ByteRange::new(0, len)),
        RangeDecision::Partial(r) => (StatusCode::PARTIAL_CONTENT, r),
        RangeDecision::Unsatisfiable => {
            let mut r = plain(StatusCode::RANGE_NOT_SATISFIABLE, "range not satisfiable");
            if let Ok(v) = HeaderValue::from_str(&unsatisfied_content_range(len)) {
                r.headers_mut().insert(header::CONTENT_RANGE, v);
            }
            r.headers_mut()
                .insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
            return r;
        }
        RangeDecision::Malformed(why) => return plain(StatusCode::BAD_REQUEST, &why),
    };
    let mut headers = vec![
        (header::ACCEPT_RANGES, HeaderValue::from_static("bytes")),
        (
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/octet-stream"),
        ),
        (header::CONTENT_LENGTH, HeaderValue::from(range.len.0)),
    ];
    headers.extend(validator_headers);
    if status == StatusCode::PARTIAL_CONTENT {
        if let Ok(v) = HeaderValue::from_str(&content_range(range, len)) {
            headers.push((header::CONTENT_RANGE, v));
        }
    }
    let build = |body: ResBody, proc_ns: Option<u128>| {
        let mut r = Response::new(body);
        *r.status_mut() = status;
        for (k, v) in headers.iter() {
            r.headers_mut().insert(k.clone(), v.clone());
        }
        if let Some(ns) = proc_ns {
            if let Ok(v) = HeaderValue::from_str(&ns.to_string()) {
                r.headers_mut().insert(PROC_HEADER, v);
            }
        }
        r
    };
    if head || range.len.0 == 0 {
        // A GET of bytes learns that the server may not read the file when its worker opens it
        // (403, `first_chunk_failed`); a HEAD reaches no worker, and answered 200 for the file
        // the GET refuses. One open tells, at the cost of an open and a close per HEAD (a
        // download sends one). An empty file (the only one a GET asks no bytes of) was opened
        // by the lookup already (`path::resolve`).
        if len > 0 {
            if let Err(e) = state.root.open_read(&file.rel, libc::O_NONBLOCK) {
                if e.kind() == io::ErrorKind::PermissionDenied {
                    return not_readable();
                }
            }
        }
        return build(empty(), None);
    }
    if state.failure().is_some() {
        return stopping();
    }
    let (stream, worker) = state.stream_for(client, &file.rel);
    // What a slow client can pin: RESPONSE_CHUNKS chunks of at most MAX_CHUNK_BYTES (validated).
    assert!(state.cfg.chunk_bytes <= MAX_CHUNK_BYTES);
    let (tx, mut rx) = mpsc::channel(RESPONSE_CHUNKS);
    let id = state.next_job.fetch_add(1, Ordering::Relaxed);
    let job = Job {
        id,
        stream,
        rel: Arc::new(file.rel),
        version,
        range,
        tx,
        begun_on: None,
    };
    if state.enqueue(worker, job).is_err() {
        if state.failure().is_some() {
            return stopping();
        }
        state
            .counters
            .busy_rejections
            .fetch_add(1, Ordering::Relaxed);
        let mut r = plain(StatusCode::SERVICE_UNAVAILABLE, "worker queue full, retry");
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        return r;
    }
    // Wait for the first chunk so that the status can still change if the read fails, and so
    // that the processing time the client subtracts from its round trip covers the worker's
    // queue and the first read.
    let first = rx.recv().await;
    state.resume(worker, id);
    match first {
        Some(Ok(first)) => {
            let body = ChannelBody::new(first, rx, state.clone(), worker, id);
            build(body.boxed(), Some(arrived.elapsed().as_nanos()))
        }
        Some(Err(e)) => first_chunk_failed(state, e),
        // The job was dropped unserved: the server is stopping (a shutdown whose grace ran out,
        // or a worker that panicked, whose failure may not be recorded yet as its jobs go).
        None => stopping(),
    }
}

/// The answer to a request whose first chunk could not be read, with `e`.
fn first_chunk_failed(state: &State, e: io::Error) -> Response<ResBody> {
    if e.get_ref().is_some_and(|inner| inner.is::<FileChanged>()) {
        let mut r = plain(StatusCode::SERVICE_UNAVAILABLE, &e.to_string());
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("0"));
        return r;
    }
    // A read refused by a broken engine says why, before the engine may have marked itself
    // broken for `failure` to see (a panic's poisoned lock refuses reads a moment earlier): the
    // server stops on it at once, and the panic goes to the log, not to the client.
    if let Some(foresight_engine::EngineError::Broken { reason }) = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<foresight_engine::EngineError>())
    {
        state.fail(format!("the engine broke, by a panic: {reason}"));
    }
    // The read failed because the server must stop (its engine broke).
    if state.failure().is_some() {
        return stopping();
    }
    // The worker's open of the file failed. The engine's error names the file by its path on
    // the server's disk, root included, which is not the client's to know: a file the server's
    // user may not read was answered 500 "read failed: opening /srv/data/f.bin: Permission
    // denied". It is the file's refusal (403), as other servers answer it; any other failure to
    // open stays the server's (500), with the system's words alone.
    if let Some(foresight_engine::EngineError::Open { source, .. }) = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<foresight_engine::EngineError>())
    {
        if source.kind() == io::ErrorKind::PermissionDenied {
            return not_readable();
        }
        return plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("read failed: opening the file: {source}"),
        );
    }
    plain(
        StatusCode::INTERNAL_SERVER_ERROR,
        &format!("read failed: {e}"),
    )
}

/// The answer for a file the server's user may not read: the file's refusal, as other servers
/// answer it, naming no path on the server's disk.
fn not_readable() -> Response<ResBody> {
    plain(StatusCode::FORBIDDEN, crate::path::NOT_READABLE)
}

/// RFC 9112, section 3.2: a server MUST answer 400 to an HTTP/1.1 request without a `Host`, and to
/// any request with more than one or with one that is not `host[:port]`. hyper leaves this to the
/// service. An empty value is what a client sends for a target without an authority. The port is
/// digits (RFC 3986, section 3.2.3: `port = *DIGIT`), which includes none: `host:` is valid, and
/// means the scheme's default port (section 6.2.3).
fn check_host<B>(req: &Request<B>) -> Result<(), &'static str> {
    let mut hosts = req.headers().get_all(header::HOST).iter();
    match (hosts.next(), hosts.next()) {
        (None, _) if req.version() == hyper::Version::HTTP_10 => Ok(()),
        (None, _) => Err("an HTTP/1.1 request needs a Host header"),
        (Some(_), Some(_)) => Err("more than one Host header"),
        (Some(v), None) if v.is_empty() => Ok(()),
        (Some(v), None) => {
            // `Authority` also takes `user@host`, which a Host never holds, and any port text
            // (`x:abc`): it reads the port only when asked for its number.
            let valid = !v.as_bytes().contains(&b'@')
                && hyper::http::uri::Authority::try_from(v.as_bytes()).is_ok()
                && port_is_digits(v.as_bytes());
            if valid {
                Ok(())
            } else {
                Err("the Host header is not host[:port]")
            }
        }
    }
}

/// Whether the port of `host`, a `Host` value that parsed as an authority, is digits or empty;
/// true without a port. An IPv6 address's colons are inside its brackets, so the port's colon is
/// the first one after the closing bracket.
fn port_is_digits(host: &[u8]) -> bool {
    let after_address = match host.iter().rposition(|&b| b == b']') {
        Some(i) => &host[i + 1..],
        None => host,
    };
    match after_address.iter().position(|&b| b == b':') {
        Some(i) => after_address[i + 1..].iter().all(u8::is_ascii_digit),
        None => true,
    }
}

fn metrics_text(state: &State) -> String {
    use std::fmt::Write as _;
    let c = &state.counters;
    let mut s = String::new();
    let mut counter = |name: &str, help: &str, kind: &str, v: f64| {
        let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {v}");
    };
    counter(
        "foresight_requests_total",
        "HTTP requests received, those hyper refused before the handler (400, 414, 431) included.",
        "counter",
        c.requests.load(Ordering::Relaxed) as f64,
    );
    counter(
        "foresight_body_bytes_total",
        "Response body bytes handed to connections.",
        "counter",
        c.body_bytes.load(Ordering::Relaxed) as f64,
    );
    counter(
        "foresight_connections_open",
        "Connections open now.",
        "gauge",
        c.connections_open.load(Ordering::Relaxed) as f64,
    );
    counter(
        "foresight_connections_total",
        "Connections accepted.",
        "counter",
        c.connections_total.load(Ordering::Relaxed) as f64,
    );
    counter(
        "foresight_connections_refused_total",
        "Connections closed at once because the connection limit was reached.",
        "counter",
        c.connections_refused.load(Ordering::Relaxed) as f64,
    );
    counter(
        "foresight_busy_rejections_total",
        "Requests answered 503 because their worker's queue was full.",
        "counter",
        c.busy_rejections.load(Ordering::Relaxed) as f64,
    );
    counter(
        "foresight_abandoned_responses_total",
        "Responses abandoned because the client stopped reading.",
        "counter",
        c.abandoned_responses.load(Ordering::Relaxed) as f64,
    );
    counter(
        "foresight_streams_created_total",
        "Streams pinned to a worker.",
        "counter",
        c.streams_created.load(Ordering::Relaxed) as f64,
    );
    let es = state.engine.stats();
    counter(
        "foresight_engine_device_bytes_total",
        "Bytes the engine read from files.",
        "counter",
        es.device_bytes as f64,
    );
    counter(
        "foresight_engine_prefetched_bytes_total",
        "Bytes the engine's readahead fetched.",
        "counter",
        es.prefetched_bytes as f64,
    );
    counter(
        "foresight_engine_memory_used_bytes",
        "Engine buffer memory held now, lent or kept for reuse (at most the budget).",
        "gauge",
        es.memory_used_bytes as f64,
    );
    counter(
        "foresight_engine_memory_lent_bytes",
        "Engine buffer memory handed out now (prefetched, in flight, being copied): zero once every stream's reader is closed.",
        "gauge",
        es.memory_lent_bytes as f64,
    );
    counter(
        "foresight_engine_memory_peak_bytes",
        "Most engine buffer memory ever in use.",
        "gauge",
        es.memory_peak_bytes as f64,
    );
    let _ = writeln!(
        s,
        "# HELP foresight_responses_total Responses by status code, hyper's own refusals (400, 414, 431) included once their connection ends.\n# TYPE foresight_responses_total counter"
    );
    let mut codes: Vec<(u16, u64)> = c
        .by_status
        .lock()
        .expect("counters poisoned")
        .iter()
        .map(|(k, v)| (*k, *v))
        .collect();
    codes.sort_unstable();
    for (code, n) in codes {
        let _ = writeln!(s, "foresight_responses_total{{code=\"{code}\"}} {n}");
    }
    let t = state.streams.lock().expect("stream table poisoned");
    let _ = writeln!(
        s,
        "# HELP foresight_streams Streams remembered now.\n# TYPE foresight_streams gauge\nforesight_streams {}",
        t.len()
    );
    let _ = writeln!(
        s,
        "# HELP foresight_worker_queued Requests queued or in service per worker.\n# TYPE foresight_worker_queued gauge"
    );
    for w in 0..t.choice.workers() {
        let _ = writeln!(
            s,
            "foresight_worker_queued{{worker=\"{w}\"}} {}",
            t.choice.queued(WorkerId(w))
        );
    }
    let _ = writeln!(
        s,
        "# HELP foresight_worker_streams Streams pinned per worker.\n# TYPE foresight_worker_streams gauge"
    );
    for w in 0..t.choice.workers() {
        let _ = writeln!(
            s,
            "foresight_worker_streams{{worker=\"{w}\"}} {}",
            t.choice.streams(WorkerId(w))
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// The device rate the server publishes is measured on the root's own files: a symlink to a
    /// large file elsewhere (another device, or a file the server must not touch) is not read.
    #[test]
    fn the_device_measurement_follows_no_symlink_out_of_the_root() {
        let tmp = temp_dir("measure");
        let dir = tmp.path().to_path_buf();
        let root = dir.join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(dir.join("outside")).unwrap();
        std::fs::write(dir.join("outside/big.bin"), vec![7u8; 8 << 20]).unwrap();
        std::fs::write(root.join("small.bin"), b"too small to time").unwrap();
        std::os::unix::fs::symlink(dir.join("outside/big.bin"), root.join("big.bin")).unwrap();
        std::os::unix::fs::symlink(dir.join("outside"), root.join("sub/outside")).unwrap();
        std::os::unix::fs::symlink(dir.join("outside"), root.join("dirlink")).unwrap();
        let mut cfg = ServerConfig::new(root.clone(), "127.0.0.1:0".parse().unwrap());
        cfg.backend = Backend::Threads;
        let rd = RootDir::open(&root).unwrap();
        assert_eq!(
            measure_device(&cfg, &rd),
            None,
            "a symlinked file was measured"
        );
        // The same file placed in the root is measured, so the test can tell the two apart.
        std::fs::remove_file(root.join("big.bin")).unwrap();
        std::fs::copy(dir.join("outside/big.bin"), root.join("big.bin")).unwrap();
        assert!(measure_device(&cfg, &rd).is_some_and(|r| r > 0.0));
    }

    /// A sparse file's holes are read as zeros the file system makes up, without the device: a
    /// 3 GiB `truncate`d file in the root published an RB of 61,350 MiB/s. A preallocated file
    /// never written reads the same way, though its blocks are all allocated. The measurement
    /// takes the largest file with data over all its length instead.
    #[test]
    fn the_device_measurement_does_not_time_a_sparse_file() {
        use std::os::unix::fs::MetadataExt;
        let tmp = temp_dir("net-measure-sparse");
        let root = tmp.path().to_path_buf();
        let sparse = std::fs::File::create(root.join("sparse.bin")).unwrap();
        sparse.set_len(64 << 20).unwrap();
        let meta = sparse.metadata().unwrap();
        assert!(
            meta.blocks() * 512 < meta.len(),
            "the file system under {} allocated the whole of a file that was only extended; \
             this test needs one that keeps holes (ext4, xfs, btrfs, tmpfs)",
            root.display()
        );
        std::fs::write(root.join("dense.bin"), vec![5u8; 8 << 20]).unwrap();
        // Preallocated and never written, by util-linux's `fallocate` (this crate makes no system
        // calls of its own): every block allocated, none holding data.
        let made = std::process::Command::new("fallocate")
            .args(["-l", "32MiB"])
            .arg(root.join("preallocated.bin"))
            .status()
            .expect("util-linux's fallocate runs");
        assert!(made.success(), "fallocate failed: {made}");
        let cfg = ServerConfig::new(root.clone(), "127.0.0.1:0".parse().unwrap());
        let (len_bytes, path) = largest_file(&cfg).expect("the root holds a file to measure");
        assert_eq!(
            (len_bytes, path.as_path()),
            (8 << 20, root.join("dense.bin").as_path()),
            "a file without data was chosen"
        );
    }

    /// The file the measurement chose is opened beneath the root: a directory on its path
    /// swapped for a symlink out of the root between the choice and the read leaves nothing to
    /// measure, where opening the chosen path by name would time the outside file.
    #[test]
    fn a_directory_swapped_after_the_measurement_chose_its_file_is_not_read() {
        let tmp = temp_dir("measure-swap");
        let dir = tmp.path().to_path_buf();
        let root = dir.join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(dir.join("outside")).unwrap();
        std::fs::write(root.join("sub/big.bin"), vec![3u8; 8 << 20]).unwrap();
        std::fs::write(dir.join("outside/big.bin"), vec![7u8; 8 << 20]).unwrap();
        let mut cfg = ServerConfig::new(root.clone(), "127.0.0.1:0".parse().unwrap());
        cfg.backend = Backend::Threads;
        let rd = RootDir::open(&root).unwrap();
        let (len_bytes, path) = largest_file(&cfg).expect("the root holds a file to measure");
        assert_eq!(path, root.join("sub/big.bin"));
        let rel = path.strip_prefix(&root).unwrap();
        std::fs::rename(root.join("sub"), dir.join("moved")).unwrap();
        std::os::unix::fs::symlink(dir.join("outside"), root.join("sub")).unwrap();
        assert_eq!(
            measure_file(&cfg, &rd, rel, len_bytes),
            None,
            "the outside file was read through the swapped directory"
        );
        // Put back, the same choice is measured, so the test can tell the two apart.
        std::fs::remove_file(root.join("sub")).unwrap();
        std::fs::rename(dir.join("moved"), root.join("sub")).unwrap();
        assert!(measure_file(&cfg, &rd, rel, len_bytes).is_some_and(|r| r > 0.0));
    }

    /// A file modified less than `strong_after` before the answer gets a weak tag, since a
    /// rewrite within the file system's timestamp granularity could keep all four figures; one
    /// modified an hour before gets a strong one. The opaque part is the same either way, so a
    /// client's weak comparison sees one version.
    #[test]
    fn a_tag_is_weak_until_strong_after_the_files_modification() {
        use std::time::SystemTime;
        let tmp = temp_dir("net-weak");
        let dir = tmp.path().to_path_buf();
        let path = dir.join("f");
        std::fs::write(&path, b"tagged").unwrap();
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        let now = SystemTime::now();
        let set = |t: SystemTime| {
            file.set_times(std::fs::FileTimes::new().set_modified(t))
                .unwrap();
            let meta = std::fs::metadata(&path).unwrap();
            (FileVersion::of(&meta), FileVersion::changed(&meta))
        };
        let (fresh, changed) = set(now);
        let wait = Duration::from_millis(1050);
        for at in [now, now + Duration::from_millis(1049)] {
            let v = fresh.validators(at, changed, wait);
            assert!(
                v.weak,
                "modified {:?} before the answer",
                at.duration_since(now)
            );
            assert!(v.etag_value().starts_with("W/\""), "{}", v.etag_value());
        }
        let settled = fresh.validators(now + wait, changed, wait);
        assert!(!settled.weak);
        assert_eq!(settled.etag, fresh.validators(now, changed, wait).etag);
        // Ahead of the answer's clock: weak too.
        assert!(
            fresh
                .validators(now - Duration::from_secs(5), changed, wait)
                .weak
        );
        let (old, changed) = set(now - Duration::from_secs(3600));
        let old = old.validators(now, changed, wait);
        assert!(!old.weak);
        assert!(old.etag_value().starts_with('"'), "{}", old.etag_value());
    }

    /// A modification time set ahead of the status change (`touch -d 2030-06-01`) kept the tag
    /// weak until the clock reached it, years on: `foresight get` polled a second for a strong
    /// tag and then fell back to one GET. Such a tag also carries the status change, which every
    /// write stamps anew, and is strong once that change is `strong_after` old; a write then
    /// moves the tag, though the time it stamps is not the one set ahead.
    #[test]
    fn a_modification_time_set_ahead_settles_by_the_status_change() {
        use std::time::SystemTime;
        let tmp = temp_dir("net-ahead");
        let path = tmp.path().join("f");
        std::fs::write(&path, b"ahead").unwrap();
        let ahead = SystemTime::now() + Duration::from_secs(5 * 365 * 86_400);
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.set_times(std::fs::FileTimes::new().set_modified(ahead))
            .unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        let (version, changed) = (FileVersion::of(&meta), FileVersion::changed(&meta));
        let changed_at = changed.expect("a status change after 1970");
        let wait = Duration::from_millis(1050);
        let v = version.validators(changed_at, changed, wait);
        assert!(v.weak, "{}", v.etag_value());
        let settled = version.validators(changed_at + wait, changed, wait);
        assert!(!settled.weak, "{}", settled.etag_value());
        assert_eq!(settled.etag, v.etag);
        // Its date is the status change, not the time ahead nor the clock.
        let changed_s = changed_at
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        assert_eq!(settled.last_modified_s(changed_s + 100), Some(changed_s));
        // A later status change (a write, a new time set) is another tag.
        let later = version.validators(changed_at + 3 * wait, Some(changed_at + wait), wait);
        assert!(!later.weak);
        assert_ne!(later.etag, settled.etag);
    }

    /// How long a tag stays weak follows the granularity the file's timestamps prove: times with
    /// a sub-second part that only 1 ns divides prove 1 ns, and the tag is strong once the stamp
    /// lag has passed; times in whole hundredths prove no finer than 10 ms; whole seconds (or
    /// no evidence) leave a second. The status change counts as evidence too (the same file
    /// system stamps it): a modification time set by hand to a whole second on a file system of
    /// nanoseconds still proves nanoseconds through it.
    #[test]
    fn a_tag_is_strong_once_the_granularity_the_timestamps_prove_has_passed() {
        let lag = STAMP_LAG_BOUND;
        assert_eq!(
            strong_after(123_456_789, 987_654_321),
            Duration::from_nanos(1) + lag
        );
        assert_eq!(strong_after(0, 987_654_321), Duration::from_nanos(1) + lag);
        assert_eq!(
            strong_after(120_000_000, 0),
            Duration::from_millis(40) + lag
        );
        assert_eq!(
            strong_after(250_000_000, 500_000_000),
            Duration::from_millis(250) + lag
        );
        assert_eq!(strong_after(0, 0), COARSE_GRANULARITY + lag);
        // Times before 1970 (negative seconds) keep a sub-second part in 0..1e9.
        assert_eq!(strong_after(-1, -1), COARSE_GRANULARITY + lag);
        // A real file on the file system the tests run on: whatever it proves, never longer
        // than the coarse bound.
        let tmp = temp_dir("net-granularity");
        let path = tmp.path().join("f");
        std::fs::write(&path, b"stamped").unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        assert!(FileVersion::strong_after(&meta) <= COARSE_GRANULARITY + lag);
    }

    /// A file just written on the file system the tests run on (whose times have nanoseconds)
    /// gets a strong tag a tenth of a second after its modification. Before, every tag was weak
    /// for a whole second, and `foresight get` of a file modified within the second waited that
    /// second before its first range.
    #[test]
    fn a_file_just_written_has_a_strong_tag_a_tenth_of_a_second_later() {
        let tmp = temp_dir("net-fresh");
        let path = tmp.path().join("f");
        std::fs::write(&path, b"fresh").unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        let version = FileVersion::of(&meta);
        let modified = version.modified.unwrap();
        let changed = FileVersion::changed(&meta);
        let v = version.validators(
            modified + Duration::from_millis(100),
            changed,
            FileVersion::strong_after(&meta),
        );
        assert!(!v.weak, "{}", v.etag_value());
        let v = version.validators(modified, changed, FileVersion::strong_after(&meta));
        assert!(v.weak, "{}", v.etag_value());
    }

    /// The check a worker makes before sending a byte: a reader serves a request only if it reads
    /// the very file whose metadata decided the headers. Here the path is replaced and resized
    /// between the metadata and the open, the order a request can meet when another process
    /// renames a file into place while the request waits in its worker's queue.
    #[test]
    fn a_reader_serves_only_the_file_version_the_headers_announced() {
        let tmp = temp_dir("net-version");
        let dir = tmp.path().to_path_buf();
        let path = dir.join("f");
        std::fs::write(&path, vec![1u8; 10_000]).unwrap();
        let engine = Engine::builder().backend(Backend::Threads).build().unwrap();
        let announced = FileVersion::of(&std::fs::metadata(&path).unwrap());
        let first = engine.open(&path).unwrap();
        assert!(announced.read_by(&first));
        // Replaced by another file of the same length after the headers were decided.
        std::fs::write(dir.join("g"), vec![2u8; 10_000]).unwrap();
        std::fs::rename(dir.join("g"), &path).unwrap();
        let second = engine.open(&path).unwrap();
        assert!(!announced.read_by(&second), "a reader of the new inode");
        let replaced = FileVersion::of(&std::fs::metadata(&path).unwrap());
        assert!(replaced.read_by(&second));
        assert!(!replaced.read_by(&first), "the old reader is not reused");
        // Grown in place: same inode, another length.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(&[3u8; 100])
            .unwrap();
        let grown = FileVersion::of(&std::fs::metadata(&path).unwrap());
        assert!(!grown.read_by(&second), "opened at the old size");
        assert!(grown.read_by(&engine.open(&path).unwrap()));
    }

    /// The race a check by name leaves open: a request's path passes the check, then a directory
    /// on it is swapped for a symlink out of the root before the file is opened. The response
    /// must not carry the outside file's bytes, whichever way the symlink points. (Reading the
    /// path by name after the swap does reach the outside file: the test checks that, so the swap
    /// is real.)
    #[test]
    fn a_directory_swapped_for_a_symlink_after_the_check_is_not_served() {
        let tmp = temp_dir("swap");
        let dir = tmp.path().to_path_buf();
        let root = dir.join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(dir.join("outside")).unwrap();
        std::fs::write(root.join("sub/f.bin"), b"inside, may be served").unwrap();
        std::fs::write(dir.join("outside/f.bin"), b"outside, never served").unwrap();
        let root = root.canonicalize().unwrap();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let mut cfg = ServerConfig::new(root.clone(), "127.0.0.1:0".parse().unwrap());
        cfg.workers = 2;
        let engine = Engine::builder()
            .backend(Backend::Threads)
            .memory(ByteLen::mib(16))
            .build()
            .unwrap();
        let rd = RootDir::open(&root).unwrap();
        let figures = measure_figures(
            &ServerConfig {
                device: DeviceSource::Configured(Bandwidth::from_mib_s(100.0)),
                ..cfg.clone()
            },
            &rd,
        );
        let state = Arc::new(State::new(&cfg, rd, engine, figures));
        let workers = start_workers(&state).unwrap();
        // Each request as a new client: a stream's worker keeps its reader, which was opened on
        // the file before the swap and would serve it.
        let clients = std::cell::Cell::new(0);
        let answer = |file: ServedFile| {
            clients.set(clients.get() + 1);
            let client = format!("t{}", clients.get());
            rt.block_on(async {
                let r = serve_file(
                    &state,
                    file,
                    false,
                    None,
                    &Conditions::default(),
                    client,
                    Instant::now(),
                )
                .await;
                let status = r.status();
                let body = r.into_body().collect().await.map(|b| b.to_bytes());
                (status, body.map(|b| b.to_vec()).unwrap_or_default())
            })
        };
        let (status, body) = answer(resolve(&state.root, "/sub/f.bin").unwrap());
        assert_eq!(
            (status, body.as_slice()),
            (StatusCode::OK, &b"inside, may be served"[..])
        );
        for target in [dir.join("outside"), PathBuf::from("../outside")] {
            let checked = resolve(&state.root, "/sub/f.bin").unwrap();
            std::fs::rename(root.join("sub"), root.join("sub-was")).unwrap();
            std::os::unix::fs::symlink(&target, root.join("sub")).unwrap();
            assert_eq!(
                std::fs::read(root.join("sub/f.bin")).unwrap(),
                b"outside, never served"
            );
            let (status, body) = answer(checked);
            assert!(
                !String::from_utf8_lossy(&body).contains("outside"),
                "{target:?}: {status} {:?}",
                String::from_utf8_lossy(&body)
            );
            assert_ne!(status, StatusCode::OK, "{target:?}");
            // Checked after the swap, the path is not found.
            assert_eq!(
                resolve(&state.root, "/sub/f.bin").unwrap_err(),
                PathError::NotFound
            );
            std::fs::remove_file(root.join("sub")).unwrap();
            std::fs::rename(root.join("sub-was"), root.join("sub")).unwrap();
        }
        stop_workers(&state, workers);
    }

    /// A server state with no worker threads: the test plays the worker.
    fn bare_state() -> Arc<State> {
        Arc::new(state_over(
            &std::env::temp_dir(),
            Backend::Noop(foresight_engine::NoopBackend::new()),
        ))
    }

    /// A server's state over `dir`, reading through `backend`, with fixed published figures.
    fn state_over(dir: &Path, backend: Backend) -> State {
        let cfg = ServerConfig::new(dir.to_path_buf(), "127.0.0.1:0".parse().unwrap());
        let engine = Engine::builder().backend(backend).build().unwrap();
        let figures = PublishedFigures {
            max_readahead_bytes: 1 << 20,
            avg_bandwidth_bytes_per_s: 1e8,
            peak_ratio: 1.2,
            bandwidth_source: "configured".into(),
            peak_ratio_source: "configured".into(),
            workers: cfg.workers,
        };
        State::new(&cfg, RootDir::open(dir).unwrap(), engine, figures)
    }

    /// A worker that takes a job and finishes it before `enqueue` counted it would lower the
    /// count first (saturating at zero) and leave it one too high for good, so the worker would
    /// look busy to `WorkerChoice` forever. The job must be counted before a worker can see it:
    /// while the count cannot be taken (the stream table is locked), the job stays invisible.
    #[test]
    fn a_job_is_counted_before_a_worker_can_take_it() {
        let state = bare_state();
        let worker = WorkerId(0);
        let (job, _rx) = one_byte_job(7);
        let table = state.streams.lock().unwrap();
        let st = state.clone();
        let enqueuer = std::thread::spawn(move || st.enqueue(worker, job).is_ok());
        // However long the enqueuer runs, it cannot publish the job before counting it.
        std::thread::sleep(Duration::from_millis(200));
        let visible = state.workers[0].jobs.lock().unwrap().len();
        drop(table);
        assert_eq!(
            visible, 0,
            "a worker could take the job before it was counted"
        );
        assert!(enqueuer.join().unwrap());
        assert_eq!(state.streams.lock().unwrap().choice.queued(worker), 1);
        // The worker serves it and says so: the count is back to zero.
        assert!(state.workers[0].jobs.lock().unwrap().queue.pop().is_some());
        state.streams.lock().unwrap().choice.request_done(worker);
        assert_eq!(state.streams.lock().unwrap().choice.queued(worker), 0);
    }

    /// A read refused by a broken engine carries the panic's message
    /// (`EngineError::Broken { reason }`). The answer is the 503 of a server that stops, and the
    /// failure that stops it is recorded from the error at once, naming the panic for the log,
    /// not for the client. The engine here still works: it is how the server sees one whose
    /// lock a panic poisoned before the engine marked itself broken. Before, such a read got
    /// 500 with the error's text, which names the panic, and the server served on until its
    /// next look at the engine.
    #[test]
    fn a_read_refused_by_a_broken_engine_stops_the_server_and_names_the_panic_in_the_log_only() {
        let tmp = temp_dir("net-broken-read");
        let state = state_over(tmp.path(), Backend::Threads);
        let refused = io::Error::other(foresight_engine::EngineError::Broken {
            reason: "a policy bug, on purpose (at policy.rs:1:1)".into(),
        });
        let r = first_chunk_failed(&state, refused);
        assert_eq!(
            r.status(),
            StatusCode::SERVICE_UNAVAILABLE,
            "the client was told the panic"
        );
        let why = state.failure();
        assert!(
            why.as_deref().is_some_and(
                |w| w.contains("the engine broke, by a panic: a policy bug, on purpose")
            ),
            "the failure was not recorded from the read's error: {why:?}"
        );
    }

    /// A worker thread that panics on its own (here on its queue's lock, which another thread's
    /// panic poisoned; not in the engine, which still works) records the failure that stops the
    /// server, naming the worker and the panic, drops the job it held queued (its response ends:
    /// the receiver sees the channel closed) and admits no more. Before, the thread ended
    /// silently and every stream pinned to it waited for good. Every wait is bounded.
    #[test]
    fn a_worker_that_panics_stops_the_server() {
        let tmp = temp_dir("net-worker-panic");
        let state = Arc::new(state_over(tmp.path(), Backend::Threads));
        let (job, mut rx) = one_byte_job(3);
        assert!(state.workers[0].jobs.lock().unwrap().admit(job).is_ok());
        let st = state.clone();
        let poisoner = std::thread::spawn(move || {
            let _held = st.workers[0].jobs.lock().unwrap();
            panic!("poisoning worker 0's queue, on purpose");
        });
        assert!(poisoner.join().is_err());
        let workers = start_workers(&state).unwrap();
        state.workers[0].ready.notify_all();
        let until = Instant::now() + Duration::from_secs(60);
        while state.failed.get().is_none() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        let why = state.failure();
        assert!(
            why.as_deref()
                .is_some_and(|w| w.contains("I/O worker 0 panicked") && w.contains("poisoned")),
            "the worker's panic was not recorded: {why:?}"
        );
        assert!(
            matches!(rx.try_recv(), Err(mpsc::error::TryRecvError::Disconnected)),
            "the dead worker's queued job was kept"
        );
        let (late, _late_rx) = one_byte_job(4);
        assert!(
            state.enqueue(WorkerId(0), late).is_err(),
            "the dead worker still admits jobs"
        );
        stop_workers(&state, workers);
    }

    /// At the bound of [`READERS_PER_WORKER`] with every reader in use, the reader closed for room
    /// is one the path still names, which the response using it opens again unharmed, rather than
    /// a superseded one, whose response could only be cut (the path names another file now). Here
    /// the superseded reader is the least recently used, which is what was closed before.
    #[test]
    fn at_the_reader_bound_a_superseded_reader_in_use_is_closed_last() {
        let tmp = temp_dir("net-bound");
        let dir = tmp.path().to_path_buf();
        std::fs::write(dir.join("a"), b"old").unwrap();
        std::fs::write(dir.join("b"), b"other").unwrap();
        let state = worker_state(&dir);
        let mut readers = Readers::new();
        let mut next_reader = 0u64;
        let mut receivers = Vec::new();
        let mut job_for = |stream: u32, rel: &str| {
            let (tx, rx) = mpsc::channel(1);
            receivers.push(rx);
            let meta = std::fs::metadata(dir.join(rel)).unwrap();
            Job {
                id: u64::from(stream),
                stream: StreamId(stream),
                rel: Arc::new(PathBuf::from(rel)),
                version: FileVersion::of(&meta),
                range: ByteRange::new(0, 1),
                tx,
                begun_on: None,
            }
        };
        // Stream 0 begins a response on the old file, which is then replaced, and begins another
        // on the new one: the old reader stays, superseded, for its response.
        let mut on_old = job_for(0, "a");
        reader_for(&state, &mut readers, &mut next_reader, &mut on_old).unwrap();
        std::fs::write(dir.join("a.tmp"), b"newer").unwrap();
        std::fs::rename(dir.join("a.tmp"), dir.join("a")).unwrap();
        let mut on_new = job_for(0, "a");
        reader_for(&state, &mut readers, &mut next_reader, &mut on_new).unwrap();
        let old_key = (on_old.stream, on_old.version);
        assert!(readers[&old_key].superseded && readers[&old_key].in_flight == 1);
        // Other streams fill the worker's readers up to the bound, each with a response under way.
        let mut others = Vec::new();
        for stream in 1..READERS_PER_WORKER as u32 - 1 {
            let mut job = job_for(stream, "b");
            reader_for(&state, &mut readers, &mut next_reader, &mut job).unwrap();
            others.push(job);
        }
        assert_eq!(readers.len(), READERS_PER_WORKER);
        // The superseded reader is the least recently used of all.
        let long_ago = Instant::now() - Duration::from_secs(10);
        readers.get_mut(&old_key).unwrap().used = long_ago;
        let mut one_more = job_for(READERS_PER_WORKER as u32, "b");
        reader_for(&state, &mut readers, &mut next_reader, &mut one_more).unwrap();
        assert_eq!(readers.len(), READERS_PER_WORKER, "the bound holds");
        assert!(
            readers.contains_key(&old_key),
            "the superseded reader in use was closed for room"
        );
        // Its response ends and closes it; the count never goes below zero.
        release(&mut readers, &on_old);
        assert!(!readers.contains_key(&old_key));
        release(&mut readers, &on_old);
    }

    /// The idle sweep closes a reader no response uses once it has been idle for `stream_idle`,
    /// and keeps one a response still uses, superseded or not, however long ago it was used.
    /// Before, a response that waited longer than `stream_idle` for its client lost its reader,
    /// and one begun on a file since replaced was cut short.
    #[test]
    fn the_idle_sweep_keeps_readers_a_response_still_uses() {
        let tmp = temp_dir("net-sweep");
        let dir = tmp.path().to_path_buf();
        std::fs::write(dir.join("a"), b"old").unwrap();
        let state = worker_state(&dir);
        let (mut readers, mut next_reader) = (Readers::new(), 0u64);
        let job_for = |stream: u32| {
            let meta = std::fs::metadata(dir.join("a")).unwrap();
            Job {
                id: u64::from(stream),
                stream: StreamId(stream),
                rel: Arc::new(PathBuf::from("a")),
                version: FileVersion::of(&meta),
                range: ByteRange::new(0, 1),
                tx: mpsc::channel(1).0,
                begun_on: None,
            }
        };
        // Stream 0's response begins on the old file, which is then replaced; stream 1's begins
        // and ends; stream 2's begins on the new file and is under way.
        let mut on_old = job_for(0);
        reader_for(&state, &mut readers, &mut next_reader, &mut on_old).unwrap();
        std::fs::write(dir.join("a.tmp"), b"newer").unwrap();
        std::fs::rename(dir.join("a.tmp"), dir.join("a")).unwrap();
        let mut on_new = job_for(0);
        reader_for(&state, &mut readers, &mut next_reader, &mut on_new).unwrap();
        release(&mut readers, &on_new);
        let mut ended = job_for(1);
        reader_for(&state, &mut readers, &mut next_reader, &mut ended).unwrap();
        release(&mut readers, &ended);
        let mut under_way = job_for(2);
        reader_for(&state, &mut readers, &mut next_reader, &mut under_way).unwrap();
        let long_ago = Instant::now() - Duration::from_secs(10);
        for kept in readers.values_mut() {
            kept.used = long_ago;
        }
        let key = |job: &Job| (job.stream, job.version);
        sweep_idle(&mut readers, Duration::from_secs(1));
        assert!(
            readers.contains_key(&key(&on_old)),
            "the superseded reader in use was swept"
        );
        assert!(
            readers.contains_key(&key(&under_way)),
            "the current reader in use was swept"
        );
        assert!(
            !readers.contains_key(&key(&ended)),
            "an idle reader was kept"
        );
        assert!(
            !readers.contains_key(&key(&on_new)),
            "an idle reader was kept"
        );
    }

    /// A file truncated and rewritten in place (`>` in a shell: same inode, shorter) after a
    /// response's headers were decided and its reader opened: the first chunk reads short, and the
    /// worker must say the file changed (503 and a retry, or a cut if begun) as for any other
    /// in-place rewrite. Before, the short read was told as a plain read error, which a response
    /// not yet begun answered with 500, and `foresight get` gave up instead of retrying.
    #[test]
    fn a_file_truncated_in_place_before_its_first_chunk_is_told_changed() {
        use std::os::unix::fs::MetadataExt;
        let tmp = temp_dir("net-truncated");
        let dir = tmp.path().to_path_buf();
        std::fs::write(dir.join("f"), b"the old contents").unwrap();
        let state = worker_state(&dir);
        let (mut readers, mut next_reader) = (Readers::new(), 0u64);
        let (tx, mut rx) = mpsc::channel(1);
        let meta = std::fs::metadata(dir.join("f")).unwrap();
        let mut job = Job {
            id: 1,
            stream: StreamId(1),
            rel: Arc::new(PathBuf::from("f")),
            version: FileVersion::of(&meta),
            range: ByteRange::new(0, meta.len()),
            tx,
            begun_on: None,
        };
        reader_for(&state, &mut readers, &mut next_reader, &mut job).unwrap();
        std::fs::write(dir.join("f"), b"new").unwrap();
        assert_eq!(std::fs::metadata(dir.join("f")).unwrap().ino(), meta.ino());
        assert!(matches!(
            serve_job(&state, &mut readers, &mut next_reader, job),
            Served::Done(_)
        ));
        let e = rx.try_recv().unwrap().unwrap_err();
        assert!(
            e.get_ref().is_some_and(|inner| inner.is::<FileChanged>()),
            "{e:?}"
        );
    }

    /// Runs seqp, but panics on its first read (on the worker's thread, which the panic ends,
    /// and under the engine's lock, which breaks the engine) or on its first finished fetch (on
    /// the engine's I/O thread: the engine breaks under a worker waiting for that fetch, and the
    /// worker lives on).
    struct PanicAt {
        inner: Box<dyn foresight_policy::Policy>,
        on_read: bool,
    }

    impl foresight_policy::Policy for PanicAt {
        fn name(&self) -> &str {
            "panic-at"
        }
        fn handle(&mut self, now: foresight_core::Instant, input: foresight_policy::Input) {
            match input {
                foresight_policy::Input::Read { .. } if self.on_read => {
                    panic!("a policy bug on a read, on purpose")
                }
                foresight_policy::Input::Fetched { .. } if !self.on_read => {
                    panic!("a policy bug on a finished fetch, on purpose")
                }
                _ => self.inner.handle(now, input),
            }
        }
        fn poll_output(&mut self) -> Option<foresight_policy::Output> {
            self.inner.poll_output()
        }
        fn poll_timeout(&self) -> Option<foresight_core::Instant> {
            self.inner.poll_timeout()
        }
        fn handle_timeout(&mut self, now: foresight_core::Instant) {
            self.inner.handle_timeout(now)
        }
        fn add_file(
            &mut self,
            id: foresight_core::FileId,
            file: foresight_policy::layout::FileLayout,
        ) {
            self.inner.add_file(id, file)
        }
    }

    /// A server whose engine breaks (a policy panic on a worker's read, or on the engine's I/O
    /// thread under a waiting worker) stops by itself: the request in flight gets 503 with
    /// Retry-After, or its response is cut short, and neither hangs; `wait` returns
    /// `NetError::Broken` naming the panic; the port no longer accepts. Before, the server kept
    /// answering every request with 500 and never stopped. Every wait is bounded.
    #[test]
    fn a_server_whose_engine_breaks_stops_and_says_why() {
        use std::io::Read as _;
        const PATIENCE: Duration = Duration::from_secs(60);
        for (on_read, what) in [(true, "on a read"), (false, "on a finished fetch")] {
            let tmp = temp_dir("net-broken");
            std::fs::write(tmp.path().join("f"), vec![1u8; 4 << 20]).unwrap();
            let mut cfg =
                ServerConfig::new(tmp.path().to_path_buf(), "127.0.0.1:0".parse().unwrap());
            cfg.backend = Backend::Threads;
            cfg.device = DeviceSource::Configured(Bandwidth::from_mib_s(100.0));
            cfg.workers = 2;
            let handle = start_with(cfg, false, move |b| {
                b.wrap_policy(Box::new(move |inner| Box::new(PanicAt { inner, on_read })))
            })
            .unwrap();
            let addr = handle.local_addr();
            let mut c = std::net::TcpStream::connect(addr).unwrap();
            c.set_read_timeout(Some(PATIENCE)).unwrap();
            c.write_all(b"GET /f HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .unwrap();
            let mut got = Vec::new();
            let read = c.read_to_end(&mut got);
            if let Err(e) = &read {
                // A reset ends a cut response too; only a timeout is a hang.
                assert!(
                    !matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ),
                    "{what}: the request hung: {e}"
                );
            }
            let text = String::from_utf8_lossy(&got).to_ascii_lowercase();
            let head = text.split("\r\n\r\n").next().unwrap_or("").to_string();
            eprintln!("{what}: {}", head.lines().next().unwrap_or("(no answer)"));
            if head.starts_with("http/1.1 503") {
                assert!(head.contains("retry-after: 1"), "{what}: {head}");
            } else {
                assert!(
                    head.starts_with("http/1.1 200") && got.len() < (4 << 20),
                    "{what}: neither 503 nor a response cut short: {head}"
                );
            }
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let _ = tx.send(handle.wait());
            });
            match rx.recv_timeout(PATIENCE) {
                Ok(Err(NetError::Broken { why })) => assert!(
                    why.contains("the engine broke") && why.contains("on purpose"),
                    "{what}: {why}"
                ),
                Ok(other) => panic!("{what}: the server ended with {other:?}"),
                Err(_) => panic!("{what}: the server did not stop within {PATIENCE:?}"),
            }
            assert!(
                std::net::TcpStream::connect(addr).is_err(),
                "{what}: the stopped server still accepts"
            );
        }
    }

    /// An empty scratch directory of this process, named after `label`.
    /// A new, empty directory of the test's own (`foresight-LABEL-` and a random suffix), removed
    /// with everything in it when the guard drops, also when the test fails and unwinds.
    fn temp_dir(label: &str) -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix(&format!("foresight-{label}-"))
            .tempdir()
            .unwrap()
    }

    /// A server's state over `dir`, for calling a worker's functions directly.
    fn worker_state(dir: &Path) -> State {
        state_over(dir, Backend::Threads)
    }

    /// A job for the first byte of a one-byte file, and the receiver its chunks would go to.
    fn one_byte_job(stream: u32) -> (Job, mpsc::Receiver<io::Result<Bytes>>) {
        let (tx, rx) = mpsc::channel(1);
        let job = Job {
            id: u64::from(stream),
            stream: StreamId(stream),
            rel: Arc::new(PathBuf::from("f")),
            version: FileVersion {
                device: 0,
                inode: 0,
                len_bytes: 1,
                modified: None,
            },
            range: ByteRange::new(0, 1),
            tx,
            begun_on: None,
        };
        (job, rx)
    }

    /// Parked jobs keep their place among the admitted requests, so a worker never holds more than
    /// `queue_per_worker + 1` responses, and a parked job goes back to the queue only once its
    /// channel has room for `RESUME_ROOM` chunks (or is closed).
    #[test]
    fn parked_jobs_count_against_admission_and_resume_with_room() {
        let mut jobs = WorkerJobs::new(2);
        let (mut a, _) = one_byte_job(1);
        let (tx, mut rx) = mpsc::channel(RESPONSE_CHUNKS);
        a.tx = tx;
        let (b, _rx_b) = one_byte_job(2);
        let (c, _rx_c) = one_byte_job(3);
        assert!(jobs.admit(a).is_ok() && jobs.admit(b).is_ok());
        // The worker takes `a`, fills its channel and parks it: it still counts, so `c` is refused.
        let (_, a) = jobs.queue.pop().unwrap();
        for _ in 0..RESPONSE_CHUNKS {
            a.tx.try_send(Ok(Bytes::new())).unwrap();
        }
        jobs.parked.insert(a.id, (a, Instant::now()));
        assert!(jobs.admit(c).is_err());
        assert!(!jobs.resume(1), "resumed with a full channel");
        for _ in 1..RESUME_ROOM {
            rx.try_recv().unwrap().unwrap();
            assert!(
                !jobs.resume(1),
                "resumed with room for fewer than RESUME_ROOM chunks"
            );
        }
        rx.try_recv().unwrap().unwrap();
        assert!(jobs.resume(1));
        assert!(jobs.parked.is_empty());
        assert_eq!((jobs.len(), jobs.queue.len()), (2, 2));
        // A closed connection resumes its job at once, for the worker to drop it.
        let (_, first) = jobs.queue.pop().unwrap();
        let (_, second) = jobs.queue.pop().unwrap();
        let a = if first.id == 1 { first } else { second };
        for _ in 0..RESPONSE_CHUNKS - RESUME_ROOM {
            a.tx.try_send(Ok(Bytes::new())).unwrap();
        }
        assert!(!may_resume(&a));
        drop(rx);
        assert!(a.tx.is_closed() && may_resume(&a));
    }

    /// A job refused by a full queue leaves the count as it was.
    #[test]
    fn a_refused_job_is_not_counted() {
        let state = bare_state();
        let worker = WorkerId(1);
        let cap = state.cfg.queue_per_worker;
        let mut refused = 0;
        for i in 0..cap + 3 {
            let (job, _rx) = one_byte_job(i as u32);
            refused += usize::from(state.enqueue(worker, job).is_err());
        }
        assert_eq!(refused, 3);
        assert_eq!(
            state.streams.lock().unwrap().choice.queued(worker),
            cap as u64
        );
    }
}
