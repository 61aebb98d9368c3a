//! Foresight over the network: an HTTP/1.1 range server with dedicated per-stream I/O workers, a
//! delay-adaptive range client, and a TCP proxy that adds delay and caps bandwidth (paper
//! 004_80004320b985afc3.txt).
//!
//! The decisions live in `foresight_policy::adaptive`: which worker a new stream is pinned to, in
//! what order a worker serves its queue, how many readahead units the client keeps in flight and
//! which ranges it asks for. This crate only executes them over sockets and files:
//!
//! - [`server`]: `GET`/`HEAD` of files under a root with RFC 9110 ranges, each stream's requests
//!   served by its own worker thread through a `foresight-engine` reader (server-side readahead),
//!   `/.well-known/foresight` with the device figures condition 20 needs, `/metrics`;
//! - [`client`]: downloads and random reads driven by `ApsStream`, over a pool of keep-alive
//!   connections, against this server or any server that honours `Range`;
//! - [`proxy`]: one-way delay and a bandwidth cap in both directions, for tests and measurements;
//! - [`soak`]: many concurrent clients against one server, checking every byte;
//! - [`range`], [`validators`] and [`path`]: the `Range` header, entity tags, dates and
//!   conditional requests, and request-path safety, pure functions.

pub mod client;
pub mod path;
pub mod proxy;
pub mod range;
pub mod server;
pub mod soak;
mod streams;
pub mod validators;

use std::io;
use std::net::SocketAddr;

/// Why a network operation failed.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// A setting is out of range; the message names it and says what would do.
    #[error("{key}: {message}")]
    Setting {
        /// The setting (as the command line spells it).
        key: &'static str,
        /// What is wrong and what to write instead.
        message: String,
    },
    /// The listening socket could not be opened.
    #[error("cannot listen on {addr}: {error}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// What the system said.
        error: io::Error,
    },
    /// A connection to a server failed.
    #[error("cannot connect to {addr}: {error}")]
    Connect {
        /// Host and port.
        addr: String,
        /// What the system said.
        error: io::Error,
    },
    /// The host name of a URL could not be resolved to an address: the lookup failed, which a
    /// request sent again would not mend.
    #[error(
        "the host name {host} could not be resolved ({error}); check the host in the URL (a \
         misspelt name, or a name this machine's resolver does not know)"
    )]
    Resolve {
        /// The host as the URL gives it.
        host: String,
        /// What the resolver said.
        error: io::Error,
    },
    /// The server answered something this client cannot use.
    #[error("{url}: {message}")]
    Http {
        /// The URL asked for.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// The file changed on the server during a download: an answer came from another version
    /// (another entity tag or length) than the one the download began with, so the bytes could
    /// not be put together into either file.
    #[error(
        "{url}: the file changed on the server during the download ({what}) after {written_bytes} \
         bytes had been handed on; download it again"
    )]
    Changed {
        /// The URL asked for.
        url: String,
        /// Which validator changed, from what to what.
        what: String,
        /// Bytes of the old version already handed on (written, or read by random reads).
        written_bytes: u64,
    },
    /// The server stopped because it could serve nothing more: its engine broke (a panic in
    /// the readahead policy or on one of the engine's threads), or one of its worker threads
    /// panicked. `why` names which, with the panic's message.
    #[error(
        "{why}; the server stopped accepting connections and shut down, for a supervisor to \
         restart it"
    )]
    Broken {
        /// What broke, and the panic's message.
        why: String,
    },
    /// The engine refused to start.
    #[error(transparent)]
    Engine(#[from] foresight_engine::EngineError),
    /// Any other I/O failure.
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// The response header carrying the server's processing time of a request in nanoseconds (paper
/// 004, section 6.2: `T[Proc(cs)_s]`, which the client subtracts from its round-trip sample).
pub const PROC_HEADER: &str = "x-foresight-proc-ns";

/// The request header naming the client's stream, so that the parallel connections of one
/// sequential reader land on one worker. Without it, a stream is the peer's address and port (one
/// connection) and the path.
pub const STREAM_HEADER: &str = "x-foresight-stream";

/// Where a Foresight server publishes its device figures.
pub const WELL_KNOWN_PATH: &str = "/.well-known/foresight";

/// A duration in a message, as a user writes one: Rust's `Debug` form (`500ms`, `1.5s`), except
/// that zero, which it prints as `0ns`, is `0s`.
pub fn duration_text(d: std::time::Duration) -> String {
    if d.is_zero() {
        "0s".to_string()
    } else {
        format!("{d:?}")
    }
}

/// Peak resident set size of this process in bytes (`VmHWM`), where the system reports it.
pub fn peak_rss_bytes() -> Option<u64> {
    proc_status_kib("VmHWM:").map(|k| k * 1024)
}

/// Current resident set size of this process in bytes (`VmRSS`), where the system reports it.
pub fn rss_bytes() -> Option<u64> {
    proc_status_kib("VmRSS:").map(|k| k * 1024)
}

fn proc_status_kib(key: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(key))?;
    line[key.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}
