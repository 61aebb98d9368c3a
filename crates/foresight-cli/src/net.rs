//! The network subcommands: `serve`, `get`, `proxy` and `net-soak` (paper
//! 004_80004320b985afc3.txt), thin wrappers over `foresight-net`.

use std::io::{IsTerminal as _, Write};
use std::net::SocketAddr;
use std::os::fd::AsFd as _;
use std::path::PathBuf;
use std::time::Duration as StdDuration;

use anyhow::Context as _;
use clap::Args;
use foresight_core::{parse_duration, parse_rate, parse_size, Bandwidth, ByteLen};
use foresight_net::client::{Client, ClientConfig, Notes, Url};
use foresight_net::proxy::{self, ProxyConfig};
use foresight_net::server::{self, DeviceSource, ServerConfig};
use foresight_net::soak::{self, SoakConfig};
use foresight_net::NetError;
use foresight_policy::adaptive::AlphaMode;

use crate::input;

fn size_arg(s: &str) -> Result<ByteLen, String> {
    parse_size(s).map_err(|e| e.to_string())
}

fn duration_arg(s: &str) -> Result<StdDuration, String> {
    parse_duration(s)
        .map(|d| StdDuration::from_nanos(d.as_nanos()))
        .map_err(|e| e.to_string())
}

fn rate_arg(s: &str) -> Result<Bandwidth, String> {
    parse_rate(s).map_err(|e| e.to_string())
}

/// A listening address: an IP address and a port. A host name is not looked up (it may name
/// several addresses, and which one a socket would take is not the user's choice).
fn listen_arg(s: &str) -> Result<SocketAddr, String> {
    let text = s.trim();
    text.parse().map_err(|_| {
        // An address whose only fault is its port (`127.0.0.1:70000`) was called "not an IP
        // address and port", which sent the user to look at the address.
        if let Some((ip, port)) = text.rsplit_once(':') {
            let ip = ip
                .strip_prefix('[')
                .and_then(|v6| v6.strip_suffix(']'))
                .unwrap_or(ip);
            let digits = port.strip_prefix('-').unwrap_or(port);
            if ip.parse::<std::net::IpAddr>().is_ok()
                && !digits.is_empty()
                && digits.bytes().all(|b| b.is_ascii_digit())
            {
                return format!(
                    "`{s}`: the port {port} is out of range; give a port from 0 to 65535 (0 \
                     picks a free one)"
                );
            }
        }
        if let Some(addr) = foresight_net::client::address_in_url(text) {
            let example = addr
                .parse::<SocketAddr>()
                .map_or("127.0.0.1:8080".to_string(), |a| a.to_string());
            return format!(
                "`{s}` is a URL; give the IP address and port without the scheme, e.g. {example}"
            );
        }
        format!("`{s}` is not an IP address and port; give an IP address and port, e.g. 127.0.0.1:8080 or [::1]:8080 (host names are not looked up)")
    })
}

/// A decimal number such as `1.2` (the range is checked where the setting is read). Clap's own
/// parser refused `abc` as "invalid float literal", which said neither what was wrong in words a
/// user reads nor what to write.
fn ratio_arg(s: &str) -> Result<f64, String> {
    s.trim().parse().map_err(|_| {
        format!(
            "`{s}` is not a number; write a decimal number such as 1.2 (--help gives the range)"
        )
    })
}

fn alpha_arg(s: &str) -> Result<AlphaMode, String> {
    s.parse()
}

fn url_arg(s: &str) -> Result<Url, String> {
    s.parse()
}

/// The exit code of `foresight serve` when it stopped because its engine broke or a worker
/// thread panicked (`NetError::Broken`): the process must be restarted, which is not bad input
/// (2) and not a failure to start (1).
pub const SERVE_BROKEN_EXIT: u8 = 3;

/// A setting error from the library is the user's to fix: exit code 2. An I/O error is passed on
/// as itself, so that a reader that went away (a broken pipe) is recognised and ends quietly.
pub(crate) fn net(e: NetError) -> anyhow::Error {
    match e {
        NetError::Setting { .. } | NetError::Bind { .. } => input(e),
        NetError::Io(io) => anyhow::Error::new(io),
        other => anyhow::Error::new(other),
    }
}

/// `e` as [`net`] has it, except that an address the command cannot listen on names its `flag`
/// and says what to give instead: the system's words (`Address already in use`) say neither.
pub(crate) fn listen_failure(flag: &str, e: NetError) -> anyhow::Error {
    let NetError::Bind { addr, error } = &e else {
        return net(e);
    };
    let fix = match error.kind() {
        std::io::ErrorKind::AddrInUse => {
            "another program listens there; choose another port, or 0 to pick a free one"
        }
        std::io::ErrorKind::AddrNotAvailable => {
            "this machine has no such address; give one of its own (127.0.0.1 for this machine \
             alone, 0.0.0.0 for every interface)"
        }
        std::io::ErrorKind::PermissionDenied if addr.port() < 1024 => {
            "ports below 1024 need privilege; choose a port from 1024 up, or 0 to pick a free one"
        }
        // Refused above 1024 too: a security module's rule, or a system that privileges more
        // ports than the usual ones. The port given is then not what a lower bound would fix.
        std::io::ErrorKind::PermissionDenied => {
            "this user may not listen on that port here; choose another port, or 0 to pick a \
             free one"
        }
        _ => "give another address",
    };
    input(format!(
        "{flag} {addr}: cannot listen there ({error}); {fix}"
    ))
}

/// Refuses to pass bytes holding a NUL to a terminal: a file's binary bytes shown there are noise,
/// and their escape sequences can leave the terminal unusable (curl refuses them the same way).
/// Text, which holds no NUL, goes through; so does anything when the output is not a terminal.
struct TerminalSafe<W> {
    inner: W,
    terminal: bool,
}

/// The error [`TerminalSafe`] refuses binary data with, told apart from a failed write by its type.
#[derive(Debug)]
struct BinaryToTerminal;

impl std::fmt::Display for BinaryToTerminal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            "the file holds binary data (a NUL byte), which standard output, a terminal, would \
             show as noise and could be left unusable by; give --out FILE, or redirect standard \
             output (> FILE, | xxd)",
        )
    }
}

impl std::error::Error for BinaryToTerminal {}

impl<W: Write> Write for TerminalSafe<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.terminal && buf.contains(&0) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                BinaryToTerminal,
            ));
        }
        self.inner.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Whether `e` is [`TerminalSafe`]'s refusal.
fn is_binary_to_terminal(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .is_some_and(|inner| inner.is::<BinaryToTerminal>())
    })
}

/// A writer whose errors name where the bytes were going ("writing standard output: No space
/// left on device"), of the same kind as the error they replace.
struct Named<'a, W> {
    inner: W,
    what: &'a str,
}

impl<W: Write> Named<'_, W> {
    fn name(&self, e: std::io::Error) -> std::io::Error {
        std::io::Error::new(e.kind(), format!("writing {}: {e}", self.what))
    }
}

impl<W: Write> Write for Named<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.inner.write(buf).map_err(|e| self.name(e))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush().map_err(|e| self.name(e))
    }
}

/// A download's sink that notes on standard error, every few seconds, how much has arrived.
fn counted<W: Write>(inner: W, url: &Url) -> crate::progress::Counting<W, std::io::Stderr> {
    crate::progress::Counting::new(
        inner,
        std::io::stderr(),
        url.to_string(),
        crate::progress::NOTE_INTERVAL_S,
    )
}

pub const SERVE_HELP: &str = "Serve the files under --root over HTTP/1.1 with byte ranges.

GET and HEAD of files under the root; Range as RFC 9110 defines it (one range, suffix and open \
ranges: 206 with Content-Range; 416 with `bytes */LEN` when nothing is satisfiable; 400 for a \
malformed bytes range, two Range lines included; several ranges in one line are answered with \
the whole file). An HTTP/1.1 request needs exactly one Host header of the form host[:port], its \
port digits or empty (RFC 9112, section 3.2; RFC 3986, section 3.2.3), or it gets 400. Paths \
with `..` (also %-encoded) are refused with 400; \
anything that does not resolve to a regular file inside the root is 404, and so is a file's path \
with a trailing `/`. A file the server's user may not read is 403. A file whose size is 0 but which holds bytes (a file of /proc) is 403: an \
answer is sent by the file's size; so is any file of procfs, sysfs, debugfs, tracefs, \
securityfs, configfs or cgroupfs, whose sizes need not be what a read gives (/sys reports 4096 \
bytes for a file of two) and whose bytes are made anew at each read under an unchanged size and \
time, even where they match the size: serve a copy of such a file. Paths are looked up beneath the root's descriptor (openat2 with \
RESOLVE_BENEATH), never opened by name: a relative symlink is followed while it stays beneath the \
root, an absolute symlink is not followed (404) even when it points inside, and a symlink swapped \
in after the check cannot lead the open out.

Each stream (one client's sequential reads of one file: the x-foresight-stream header, or \
without it the connection's address and port, plus the path) is pinned to one of --workers dedicated I/O threads, chosen by \
fewest queued requests, then fewest streams, then lowest id (paper 004, section 6.2). A worker \
serves its queue grouped by stream and reads through the engine with --readahead server-side \
readahead per stream. A response holds at most four 256 KiB chunks between its worker and its \
connection; when its client has not taken them, the worker sets that response aside and serves \
the other streams' requests, so a client that reads slowly holds neither its worker nor more \
than 1 MiB of the server's memory. A response whose client takes nothing for 30 s is abandoned \
and its connection closed.

Every file answer carries an ETag (from the file's device, inode, length and modification time; \
weak, W/, until the file's timestamps can no longer repeat: about 50 ms after a change where \
the file's times show sub-second figures, a second where they show whole seconds; strong \
after. A modification time later than the file's status change, ctime, was set by hand, as \
by touch -d, or by another clock: such a tag also carries the ctime, which every write and \
every setting of the time stamps anew, and is strong as long after the ctime) and a \
Last-Modified: the modification time, but no later than the ctime nor the clock. Conditional requests follow RFC 9110, section 13.2.2: If-Match (strong \
comparison, * for any file), else If-Unmodified-Since, failing gives 412; then If-None-Match \
(weak comparison), else If-Modified-Since, gives 304; If-Range honours Range only for a strong \
match (the strong ETag, or the Last-Modified once the clock is two whole seconds past it, which \
is 1 to 2 s after the modification: a date names a whole second, and a file system may stamp a \
write made just after that second with it, from a clock a little behind this one), and \
otherwise the whole file is sent. A modification time ahead of the clock is never sent (RFC 9110, 8.8.2.1): the date is \
then the ctime, when that time was set, which holds from one answer to the next, and the date \
conditions weigh that same date, so such a date sent back holds until the file changes.

GET /.well-known/foresight publishes the device figures the adaptive client needs: \
max_readahead_bytes (--readahead), avg_bandwidth_bytes_per_s (RB: measured at startup by reading \
the largest regular file in the root or one level below, symlinks, sparse files and files \
preallocated but never written not chosen, \
with direct I/O, `measured`; or --device-bandwidth, `configured`; or, when no such file holds \
four reads of --readahead (4 MiB at least) or it cannot be read, 200 MiB/s, `default`, a \
stand-in that no device was timed for, so give --device-bandwidth then, as a warning on \
standard error at startup says; `bandwidth_source` says which) and peak_ratio (p: --peak-ratio, `configured`; or 1.2 as in paper 004, `default`; \
`peak_ratio_source` says which). GET /metrics is Prometheus \
text; its foresight_requests_total and foresight_responses_total count the requests refused \
before they reach the server's own code too (400 for a head that does not parse, as with a \
malformed Content-Length, 414, 431), each once its connection has ended. Both are found by their decoded names (/%6detrics and //metrics are /metrics), so files of \
the root at those paths are not served. SIGTERM or SIGINT stops accepting, closes at once the \
connections with no request to answer (idle ones, and those whose request head has not all come), \
and lets open requests finish (up to 10 s); responses still under way then are cut short, and the \
last line on standard error says how many (\"stopped; the 10s grace period ran out with 1 \
response under way, cut short\"), or, when the answers under way took half a second or more to \
end, how long the stop waited for them. That stop was asked for, so it exits 0 all the same.

A server that can serve nothing more stops by itself: when its engine breaks (a panic in the \
readahead policy or on one of the engine's I/O threads, after which every read fails) or one of \
its worker threads panics. It stops accepting connections, answers requests that reach a worker \
meanwhile with 503 and Retry-After: 1, lets responses under way end (they fail: the client sees \
them cut short), writes one line to standard error (after the panic's own report) saying what \
broke, with the panic's message, and exits with code 3, so that a supervisor (systemd's Restart=on-failure, a container's restart \
policy) starts it again. Bad input exits with code 2, any other failure with 1.

Examples:
  foresight serve --root ./data --addr 127.0.0.1:8080
  curl -s -r 0-99 http://127.0.0.1:8080/file.bin | xxd | head
  curl -s http://127.0.0.1:8080/.well-known/foresight";

/// `foresight serve`.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Directory whose files are served.
    #[arg(long, value_name = "DIR")]
    root: PathBuf,
    /// Address to listen on: an IP address and port (0 picks a free port).
    #[arg(long, value_name = "IP:PORT", default_value = "127.0.0.1:8080", value_parser = listen_arg)]
    addr: SocketAddr,
    /// Dedicated I/O worker threads, 1 to 4096.
    #[arg(long, default_value_t = 32, value_parser = crate::whole_arg::<u32>)]
    workers: u32,
    /// Server-side readahead window per stream (also published as max_readahead_bytes): whole
    /// 4KiB pages, at most 64MiB.
    #[arg(allow_hyphen_values = true, long, value_name = "SIZE", default_value = "1MiB", value_parser = size_arg)]
    readahead: ByteLen,
    /// Publish this average device bandwidth (RB) instead of measuring it, e.g. 450MB/s.
    #[arg(allow_hyphen_values = true, long, value_name = "RATE", value_parser = rate_arg)]
    device_bandwidth: Option<Bandwidth>,
    /// The device's peak-to-average ratio p, 1 to 1000; published as `configured`. Without it,
    /// paper 004's 1.2, published as `default`.
    #[arg(allow_hyphen_values = true, long, value_name = "RATIO", value_parser = ratio_arg)]
    peak_ratio: Option<f64>,
    /// Hard memory budget of the engine's buffers: at least four times --readahead, at most this
    /// machine's memory.
    #[arg(allow_hyphen_values = true, long, value_name = "SIZE", default_value = "256MiB", value_parser = size_arg)]
    memory: ByteLen,
    /// Most open connections (at most 1048576); more are closed at once. The soft open-files
    /// limit (ulimit -n) is raised toward two per connection, and a hard one below that is warned of.
    #[arg(long, default_value_t = 4096, value_parser = crate::whole_arg::<usize>)]
    max_connections: usize,
    /// Longest request head in bytes (request line, header lines and the blank line that ends
    /// them), 8192 to 1048576; a longer one gets 431 and its connection is closed. A head may
    /// also hold at most 100 header lines (431 past them) and a path of at most 65534 bytes
    /// (414 past it), whatever this says.
    #[arg(long, default_value_t = 16384, value_parser = crate::whole_arg::<usize>)]
    max_header_bytes: usize,
    /// How long a connection may wait for a complete request head (also ends idle keep-alive).
    /// At least 1s.
    #[arg(allow_hyphen_values = true, long, value_name = "DURATION", default_value = "30s", value_parser = duration_arg)]
    idle_timeout: StdDuration,
}

/// Runs `foresight serve` until SIGTERM or SIGINT.
pub fn run_serve(a: &ServeArgs) -> anyhow::Result<()> {
    // hyper's header timer also runs while a keep-alive connection waits for its next request,
    // so a short one closes such connections between a client's requests, and requests whose
    // head comes in pieces, without a word.
    if a.idle_timeout < StdDuration::from_secs(1) {
        return Err(input(format!(
            "--idle-timeout {} would close keep-alive connections between requests and \
             requests whose head arrives in pieces; give at least 1s",
            foresight_net::duration_text(a.idle_timeout)
        )));
    }
    // The budget is taken as buffers are needed, so one larger than the machine would only show
    // as the process killed under load.
    if let Some(machine) = crate::bench::machine_memory_bytes() {
        if a.memory.0 > machine {
            return Err(input(format!(
                "--memory {} is more than this machine's memory ({}); give less, e.g. 256MiB",
                a.memory,
                ByteLen(machine).rounded()
            )));
        }
    }
    let mut cfg = ServerConfig::new(a.root.clone(), a.addr);
    cfg.workers = a.workers;
    cfg.readahead = a.readahead;
    cfg.peak_ratio = a.peak_ratio;
    cfg.engine_memory = a.memory;
    cfg.max_connections = a.max_connections;
    cfg.max_header_bytes = a.max_header_bytes;
    cfg.idle_timeout = a.idle_timeout;
    if let Some(b) = a.device_bandwidth {
        cfg.device = DeviceSource::Configured(b);
    }
    let grace = cfg.grace;
    let handle = server::serve_until_signal(cfg).map_err(|e| listen_failure("--addr", e))?;
    // After the settings were checked and the server started, before it takes connections in
    // numbers: a refused start needs no limit, and warns of none.
    fit_open_files_limit(
        2 * a.max_connections as u64 + u64::from(a.workers) + 64,
        a.max_connections,
        "a socket and a file",
    );
    let f = handle.figures();
    note!(
        "foresight serve: http://{} (root {}, {} worker{}, RB {:.1} MiB/s {}, p {} {}, max readahead {})",
        handle.local_addr(),
        a.root.display(),
        f.workers,
        if f.workers == 1 { "" } else { "s" },
        f.avg_bandwidth_bytes_per_s / (1u64 << 20) as f64,
        f.bandwidth_source,
        f.peak_ratio,
        f.peak_ratio_source,
        ByteLen(f.max_readahead_bytes),
    );
    // The published RB sets every adaptive client's alpha (condition 20); a stand-in that no
    // device was timed for showed only as the word `default` at the end of the line above.
    if f.bandwidth_source == "default" {
        note!(
            "warning: RB {:.1} MiB/s is a stand-in, not this device's rate: no regular file in \
             the root or one level below holds four reads of --readahead (4 MiB at least) \
             without holes (a sparse or preallocated file reads as zeros the device never \
             gave), or it could \
             not be read; give --device-bandwidth RATE (e.g. 450MB/s), which clients size their \
             readahead by",
            f.avg_bandwidth_bytes_per_s / (1u64 << 20) as f64
        );
    }
    let stopped = handle.wait().map_err(net)?;
    note!("foresight serve: {}", stop_line(&stopped, grace));
    Ok(())
}

/// A stop that waited no longer than this is not said to have waited: closing idle connections
/// takes milliseconds.
const STOP_WAIT_WORTH_SAYING: StdDuration = StdDuration::from_millis(500);

/// What `serve` says as it stops. A stop that cut downloads short is still the stop that was
/// asked for (exit 0), but the operator should know that clients got less than their answers
/// announced; and a stop that took seconds says what it waited for, where a bare "stopped" after
/// the whole grace period left the operator to guess.
fn stop_line(stopped: &server::Stopped, grace: StdDuration) -> String {
    let plural = |n: u64| if n == 1 { "" } else { "s" };
    let grace = foresight_net::duration_text(grace);
    match (stopped.cut_short_responses, stopped.closed_connections) {
        (0, 0) if stopped.waited < STOP_WAIT_WORTH_SAYING => "stopped".to_string(),
        (0, 0) => format!(
            "stopped after {:.1} s, the time the answers under way took to be sent",
            stopped.waited.as_secs_f64()
        ),
        (0, c) => format!(
            "stopped; the {grace} grace period ran out with {c} connection{} still answering \
             (waiting for a worker, or for a client that took nothing), closed",
            plural(c)
        ),
        (n, _) => format!(
            "stopped; the {grace} grace period ran out with {n} response{} under way, cut short \
             (their clients got less than the length announced)",
            plural(n)
        ),
    }
}

/// Raises the soft open-files limit (`ulimit -n`) toward `need`, what a command holding
/// `--max-connections {max_connections}` may have open at once (two per connection, the
/// listener, the engine and the runtime). Past the limit, opening a file or a socket fails with
/// nothing logged (`serve` answers 500, connections wait to be accepted), so a hard limit that
/// holds less is said on standard error.
fn fit_open_files_limit(need: u64, max_connections: usize, each: &str) {
    use foresight_engine::measure::{open_files_limit, raise_open_files_limit};
    let Ok(limit) = raise_open_files_limit(need).or_else(|_| open_files_limit().map(|l| l.0))
    else {
        return;
    };
    if limit < need {
        note!(
            "warning: --max-connections {max_connections} may need about {need} open files \
             ({each} per connection), but this process may open at most {limit} (ulimit -n); \
             past that, connections fail or wait to be accepted: lower --max-connections or \
             raise the limit"
        );
    }
}

pub const GET_HELP: &str = "Download files with range requests, keeping alpha readahead requests \
in flight over parallel connections (paper 004, Algorithm 1).

With --alpha auto, alpha is the smallest whole number with (rtt + unit transfer) / (unit / \
(RB * (1 + p))) - 1 <= alpha (condition 20): rtt is the smallest round trip measured (less the \
server's processing time when it reports it), RB and p come from the server's \
/.well-known/foresight, lowered to the path rate measured from response bodies when the path is \
slower; a server without that document (nginx, MinIO, any Range server) is judged by the path rate \
alone, with p = 1.2. --alpha N fixes it (1 = one readahead unit ahead, the classic setting).

Data goes to --out (one URL: the file, or into it if it is a directory; several: a directory, each \
file under its URL's name: the last path segment, percent-decoded, so /a%20b.bin is saved as \
`a b.bin`, or `index` for a path ending in /; a segment that decodes to a `/`, a NUL byte, `.` \
or `..`, and URLs that would share a name, are refused (exit 2) before anything is \
downloaded), or to standard output. An --out that is a symbolic link is kept: the file it \
leads to (through any chain of links, each relative one taken from its link's directory) is \
the one written, and created when it does not exist yet. A file is written under a temporary name \
beside it and renamed into place when its download is complete, so a failed download (or one \
stopped by SIGINT, SIGTERM or SIGHUP, which says so on standard error) leaves no partial file \
and an existing file as it was; a \
device or FIFO (/dev/null) is written directly, and so is the file standard output or error is \
open on (--out /dev/stdout with standard output sent to a file writes there as standard output \
does, at its end when it was opened with >>); the error of a failed download to a file says \
how many bytes had gone to the temporary file (not when writing it failed, as on a full disk, \
where some of them never reached it) and that --out was not created or keeps the file it held. A failed download to standard output (or to a device or FIFO) keeps the bytes it wrote \
there, and its error says how many. Standard output whose reader leaves early (`foresight get \
URL | head -c 100`) ends the download quietly, exit 0, as such a pipe expects; standard output \
that is full (a full disk), or a device or FIFO given as --out that stops taking bytes (its \
reader left, or it is full), fails the download, exit 1, saying how many bytes of the file had \
reached it. \
Standard output on a terminal takes text only: a download whose bytes hold a NUL (binary data) \
stops there, exit 2, before those bytes reach the terminal (give --out, or redirect standard \
output). With --json and no --out the data is discarded and only the report is printed. A server \
whose answer to HEAD advertises no byte ranges (no Accept-Ranges: bytes) or gives no length is \
downloaded in one GET whatever --alpha says (alpha 0 in the report), with a note on standard \
error saying why. A download \
that lasts notes on standard error every 5 s how much has arrived. \
A request (the opening HEAD, each range, the whole-file GET until its answer begins) that gets no \
connection, a broken one, a 503, or no complete answer within --request-timeout (connecting \
included) is sent again 0.1 s and then 0.2 s later: 3 attempts in all, each retry noted on \
standard error (the request, as HEAD, GET or its byte range, which attempt failed, after how long \
and why); the third failure ends the download, saying it gave up after 3 attempts. A host name \
that does not resolve is not sent again: the download fails at once, naming the host to check. \
The device \
figures request is sent once per URL (a download started over because the file changed before \
any byte was written asks no more), and a failure of it is noted once and done without. A \
server that stops \
answering (or stops sending mid-body) thus fails a download within 4 x --request-timeout plus \
0.3 s: the figures request's timeout and one request's three attempts (1.4 s, and the round \
trips of the HEADs answered meanwhile, when the file's weak ETag is asked for again, see \
below). \
--random SIZE reads --reads random ranges of SIZE instead of the whole file, each from an offset \
drawn at random and rounded down to a multiple of 4 KiB (so a file shorter than SIZE + 4 KiB is \
read from byte 0 each time), to measure what \
random reads cost (bytes transferred against bytes asked); their bytes are not kept, so it takes \
no --out. A SIZE larger than the file reads the whole file each time, and standard error says so; \
an empty file has nothing to read and is an error.

Several URLs are fetched one after another, each whatever became of the ones before: a failure is \
reported on standard error as it happens (error: URL: cause), the others are downloaded and \
summarized as usual (with --json, a failure is also a line with url and error on standard \
output, in its place among the reports), and the command then exits with 1 (2 if a failure was \
bad input, such as an --out file that cannot be created), naming the URLs that failed. A URL that does not parse is \
refused (exit 2) before anything is fetched. A HEAD refused (a 4xx or 5xx status) is followed by \
one GET (of the first range, for the statuses below that a server may give HEAD alone), whose \
plain-text body, the server's reason, is quoted in the error, as is the body of \
a range request answered with an error. A redirect (3xx) is not followed: the error gives \
its Location, the URL to download instead. Range requests carry If-Range with the file's strong \
ETag from the opening HEAD (from a server without tags, its Last-Modified when that is at least a \
second before the HEAD's Date): a file replaced on the server during its download is downloaded \
again if nothing of it was written yet, and is otherwise an error rather than a mix of two \
versions. Ranges are never put together under a weak ETag (W/), which If-Range cannot \
carry: a HEAD whose tag is weak because the file was modified within the second (as foresight \
serve makes it), or whose Last-Modified from a server without tags is not yet a second old, is \
sent again every 0.1 s until its validator is strong, for a second at most, and a tag still \
weak gets the file in one GET, with a note on standard error. So does a server that sends no \
validator at all (neither ETag nor Last-Modified). Once the last byte has \
arrived, a HEAD asks for the validator again: a file rewritten in place meanwhile (which a server \
other than foresight serve may have sent mixed, under the old validator) fails the download, \
saying the file changed once the download had ended; the bytes already written stay written. \
A rewrite at the same size within the same second as the modification before it keeps a \
validator of whole seconds (nginx's ETag, any Last-Modified), and is not seen.

A server that refuses HEAD while serving GET (405 Method Not Allowed, 501 Not Implemented, or \
403 Forbidden, which an object store answers a URL presigned for GET only) is asked instead for \
the file's first 128 KiB (one --readahead unit when that is smaller) as a range: the length \
comes from its Content-Range, its ETag (or strong Last-Modified) goes in the If-Range of every \
later range, and its bytes are the download's first. A 416 to that range is an empty file; a \
200 means the server ignores ranges, and that answer, read whole as it arrives, is the \
download. The same refusal to the GET (as foresight serve refuses a file of /proc with 403) is \
reported as the HEAD's, with the reason the GET's body gives. From such a server the look after \
the last byte is a GET of its first byte (Range: bytes=0-0) under If-Range with the validator: a \
206 is the same file, and a 200 (the whole new file, not read) fails the download as changed, \
as the closing HEAD does. A download that came as one whole file (the server ignores ranges, or \
the tag is weak, which is not waited on: the file comes in one GET) is looked at instead with a \
GET under If-None-Match with the tag (If-Modified-Since with the date): a 304 is the same file, \
and a 200 (not read) fails the download as changed only if its validator or length shows \
another version, since a server that ignores conditions answers 200 anyway. No validator at \
all gets no look. The first range's bytes are written only once \
another answer has confirmed their version (or the file was that range alone), so a file \
replaced just after the first range is downloaded again, as after a HEAD.

The path rate (path_mib_s) is the bytes of the range responses over the time during which any of \
them was arriving, each timed from the earliest moment its first byte could have come (request \
sent, plus the server's reported time, plus the smallest round trip) to its last byte. It is null \
until 10 ms of arrival has been timed: bodies that arrive faster than that (loopback, a fast LAN \
with small units) are too quick for the client's clock and scheduling to time, and alpha auto then \
goes by the server's figures alone, or stays at 1 without them.

Memory: a download holds at most --max-buffer (256 MiB by default) of readahead: (alpha + 2) units \
plus one application read (128 KiB). The unit (the server's max_readahead_bytes, or --readahead) \
is capped to a third of it, so a server publishing an absurd unit cannot make the client gather \
gigabytes (a note on standard error says so), and an automatic alpha is capped to the units that \
fit; a fixed --alpha whose units cannot fit at --readahead is refused. --random reads of any \
SIZE stay within it too: each read is taken a unit at a time as its bytes arrive.

JSON keys: bytes, mib_s, alpha, rtt_ms, requests, wasted_bytes (plus seconds, alpha_max, \
transferred_bytes, unit_bytes, buffered_peak_bytes, path_mib_s, server_figures, ranges, url; with \
--random also random_read_bytes and reads).

Examples:
  foresight get http://127.0.0.1:8080/big.bin --out big.bin
  foresight get http://127.0.0.1:8080/big.bin --alpha 1 --json
  foresight get http://127.0.0.1:8080/big.bin --random 4KiB --reads 200 --json";

/// `foresight get`.
#[derive(Args, Debug)]
pub struct GetArgs {
    /// URLs to download (http:// only).
    #[arg(required = true, value_name = "URL", value_parser = url_arg)]
    urls: Vec<Url>,
    /// Where the data goes: a file for one URL, a directory for several (left out: standard
    /// output; `-` is refused rather than taken as a file name).
    #[arg(long, value_name = "PATH")]
    out: Option<PathBuf>,
    /// Readahead units in flight: `auto` (condition 20) or a whole number from 1 to 1024.
    #[arg(long, default_value = "auto", value_parser = alpha_arg)]
    alpha: AlphaMode,
    /// The readahead unit (max_ra_sz), 4KiB to 256MiB; default: the server's (held to those
    /// bounds), or 1MiB.
    #[arg(allow_hyphen_values = true, long, value_name = "SIZE", value_parser = size_arg)]
    readahead: Option<ByteLen>,
    /// The cap on alpha in auto mode, 1 to 1024 [default: 64]; a fixed --alpha takes none.
    #[arg(long, value_parser = crate::whole_arg::<u32>)]
    max_alpha: Option<u32>,
    /// The most readahead bytes one download holds (requested or received, not yet written):
    /// the unit is capped to a third of it and an automatic alpha to the units that fit. At most
    /// this machine's memory.
    #[arg(allow_hyphen_values = true, long, value_name = "SIZE", default_value = "256MiB", value_parser = size_arg)]
    max_buffer: ByteLen,
    /// Read random ranges of this size instead of whole files.
    #[arg(allow_hyphen_values = true, long, value_name = "SIZE", value_parser = size_arg)]
    random: Option<ByteLen>,
    /// With --random: how many reads, at least 1 [default: 64].
    #[arg(long, value_parser = crate::whole_arg::<u32>)]
    reads: Option<u32>,
    /// With --random: the seed of the offsets, 0 to 18446744073709551615 [default: 1].
    #[arg(long, value_parser = crate::whole_arg::<u64>)]
    seed: Option<u64>,
    /// How long one attempt of a request may take, connecting included, before it is sent again
    /// (a unit must arrive within it, so a slow path with a large --readahead needs more);
    /// without ranges, how long the whole-file GET may go without data. A request is sent at
    /// most 3 times, each retry noted on standard error, so a server that stops answering fails
    /// the download within 4 x this and 0.3 s (1.4 s, and the round trips of the HEADs answered
    /// meanwhile, when a fresh file's weak ETag is asked for again, as the command's description
    /// says). At least 1s.
    #[arg(allow_hyphen_values = true, long, value_name = "DURATION", default_value = "60s", value_parser = duration_arg)]
    request_timeout: StdDuration,
    /// Print one JSON object per URL instead of a summary line.
    #[arg(long)]
    json: bool,
}

/// Runs `foresight get`.
pub fn run_get(a: &GetArgs) -> anyhow::Result<()> {
    if let (Some(_), AlphaMode::Fixed(n)) = (a.max_alpha, a.alpha) {
        // It would be ignored: a fixed alpha is the number of units in flight.
        return Err(input(format!(
            "--max-alpha caps an automatic alpha, and --alpha {n} is fixed; drop one of them"
        )));
    }
    if a.request_timeout < StdDuration::from_secs(1) {
        return Err(input(format!(
            "--request-timeout {} would cut off nearly every request; give at least 1s",
            foresight_net::duration_text(a.request_timeout)
        )));
    }
    let max_alpha = a.max_alpha.unwrap_or(64);
    if !(1..=1024).contains(&max_alpha) {
        return Err(input(format!(
            "--max-alpha must be 1..=1024, got {max_alpha}"
        )));
    }
    if a.random.is_some_and(|r| r.0 == 0) {
        return Err(input("--random must be at least one byte"));
    }
    // Without --random these would be silently ignored, and zero reads would report success
    // having measured nothing.
    if a.random.is_none() {
        for (flag, given) in [("--reads", a.reads.is_some()), ("--seed", a.seed.is_some())] {
            if given {
                return Err(input(format!(
                    "{flag} applies only with --random SIZE; add --random or drop {flag}"
                )));
            }
        }
    }
    // The bound exists so that a server publishing a large unit cannot have the client take
    // buffers until the process is killed; above the machine's memory it bounds nothing.
    if let Some(machine) = crate::bench::machine_memory_bytes() {
        if a.max_buffer.0 > machine {
            return Err(input(format!(
                "--max-buffer {} is more than this machine's memory ({}); give less, e.g. 256MiB",
                a.max_buffer,
                ByteLen(machine).rounded()
            )));
        }
    }
    let reads = a.reads.unwrap_or(64);
    if reads == 0 {
        return Err(input("--reads must be at least 1"));
    }
    let seed = a.seed.unwrap_or(1);
    let client = Client::new(ClientConfig {
        alpha: a.alpha,
        readahead: a.readahead,
        max_alpha,
        max_connections: 2
            * (max_alpha.max(match a.alpha {
                AlphaMode::Fixed(n) => n,
                AlphaMode::Auto => 1,
            }) as usize
                + 1),
        request_timeout: a.request_timeout,
        max_buffer: a.max_buffer,
        ..ClientConfig::default()
    })
    .map_err(net)?
    .with_notes(Notes::new(|text| note!("{text}")));
    if a.out.as_deref() == Some(std::path::Path::new("-")) {
        // Elsewhere `-` means standard output; here it would be a file named `-`.
        return Err(input(
            "--out -: the data goes to standard output when --out is left out; drop --out (or \
             write ./- for a file of that name)",
        ));
    }
    let several = a.urls.len() > 1;
    // Several URLs, or an existing directory: each file under its URL's name.
    let into_dir = a.out.as_ref().is_some_and(|out| several || out.is_dir());
    if into_dir && a.random.is_none() {
        // Two downloads saved under one name would silently keep only the last; a name that
        // cannot be saved is refused before anything is downloaded.
        let mut seen = std::collections::BTreeMap::new();
        for url in &a.urls {
            let name = saved_name(url).map_err(input)?;
            if let Some(first) = seen.insert(name.clone(), url) {
                return Err(input(format!(
                    "--out: {first} and {url} would both be saved as `{}` in {}; \
                     download them into separate --out directories",
                    name.to_string_lossy(),
                    a.out
                        .as_deref()
                        .unwrap_or(std::path::Path::new("."))
                        .display()
                )));
            }
        }
    }
    if let (Some(_), Some(out)) = (a.random, &a.out) {
        // Random reads are measured and their bytes dropped; nothing would reach the file.
        return Err(input(format!(
            "--out {}: --random reads are measured, not saved; drop --out (the report goes to \
             standard error, or to standard output with --json)",
            out.display()
        )));
    }
    if several {
        if let Some(dir) = &a.out {
            // The system's `File exists` would not say that several URLs need a directory.
            if dir.exists() && !dir.is_dir() {
                return Err(input(format!(
                    "--out {}: is not a directory, and several URLs are saved into one; give a \
                     directory (it is created if missing)",
                    dir.display()
                )));
            }
            std::fs::create_dir_all(dir)
                .with_context(|| format!("creating the --out directory {}", dir.display()))
                .map_err(input)?;
        }
    }
    // A download stopped by a signal ended without a word, where `sim`, `reproduce` and `bench`
    // say what they leave; its temporary file's removal is added to this note by the removal.
    crate::cleanup::say_on_signal(
        "get had not finished: a URL downloaded to its end is saved, the one under way is not \
         (its --out keeps what it held), and bytes already written to standard output, a device \
         or a FIFO stay there",
    );
    // Each URL is fetched whatever became of the ones before it; a failure is reported as it
    // happens, and the command fails at the end.
    let fetch = |url: &Url| -> anyhow::Result<()> {
        let report = if let Some(size) = a.random {
            client.random_reads(url, size, reads, seed).map_err(net)?
        } else {
            match &a.out {
                Some(out) => {
                    let path = if into_dir {
                        // Checked before the first download (above).
                        out.join(saved_name(url).map_err(input)?)
                    } else {
                        out.clone()
                    };
                    // Whether a failure leaves a file there (the one it held) or none.
                    let existed = std::fs::metadata(&path).is_ok();
                    let mut target = OutTarget::open(&path)?;
                    let what = format!("--out {}", path.display());
                    let mut sink = counted(
                        Named {
                            inner: &mut target.writer,
                            what: &what,
                        },
                        url,
                    );
                    let in_place = target.staged.is_none();
                    let got = client.get(url, &mut sink);
                    let received = sink.bytes();
                    drop(sink);
                    let report = got.map_err(|e| {
                        // A file written under a temporary name is removed; a device or FIFO
                        // keeps what it was given.
                        let e = net(e);
                        if !in_place {
                            discarded_output(e, received, &what, existed)
                        } else if is_output_failure(&e, &what) {
                            // Some of the bytes received were still in the buffer: say what
                            // the device or FIFO took before it failed (its reader left, or it
                            // is full), which it keeps.
                            output_failed(e, target.writer.get_ref().delivered, &what)
                        } else {
                            partial_output(e, received, &what)
                        }
                    })?;
                    target.finish()?;
                    report
                }
                None if a.json => client
                    .get(url, &mut counted(std::io::sink(), url))
                    .map_err(net)?,
                None => {
                    let terminal = std::io::stdout().is_terminal();
                    // Standard output is written below a buffer of this command's own, and
                    // counted there as an --out device is: one that fails (a full disk) took
                    // only part of what was handed to the buffer, and the user is told how much.
                    let stdout = std::io::stdout()
                        .as_fd()
                        .try_clone_to_owned()
                        .context(crate::WritingStdout)?;
                    let mut out = std::io::BufWriter::new(Delivered {
                        file: std::fs::File::from(stdout),
                        delivered: 0,
                    });
                    let mut sink = counted(
                        Named {
                            inner: &mut out,
                            what: "standard output",
                        },
                        url,
                    );
                    // Outside the count: refused bytes are not written.
                    let got = client
                        .get(
                            url,
                            &mut TerminalSafe {
                                inner: &mut sink,
                                terminal,
                            },
                        )
                        .map_err(net)
                        .and_then(|report| Ok(sink.flush().map(|()| report)?));
                    let sent = sink.bytes();
                    drop(sink);
                    got.map_err(|e| {
                        if crate::is_broken_pipe(&e) {
                            // Standard output's reader left (`get URL | head -c 100`): the
                            // command ends quietly, as `head` expects.
                            e.context(crate::WritingStdout)
                        } else if is_binary_to_terminal(&e) {
                            // The user's choice of output to fix, as for an --out refused.
                            input(partial_output(
                                anyhow::anyhow!("{}", crate::describe(&e)),
                                sent,
                                "standard output",
                            ))
                        } else if is_output_failure(&e, "standard output") {
                            output_failed(e, out.get_ref().delivered, "standard output")
                        } else {
                            partial_output(e, sent, "standard output")
                        }
                    })?
                }
            }
        };
        if let Some(size) = a
            .random
            .filter(|s| reads > 0 && s.0 > report.bytes / u64::from(reads))
        {
            // Every read was cut to the file: say so, or the figures read as SIZE-byte reads.
            note!(
                    "{url}: --random {size} is larger than the file; each read took the whole file ({})",
                    ByteLen(report.bytes / u64::from(reads))
                );
        }
        // The unit a server publishes is its word; one beyond what --max-buffer holds is cut,
        // and the user should know why the unit is not the server's.
        if let Some(f) = report.server.filter(|f| {
            a.readahead.is_none() && report.ranges && f.max_readahead.0 > report.unit_bytes
        }) {
            note!(
                "{url}: the server publishes a readahead unit of {}; using {} (units are at \
                     most 256MiB, and alpha + 2 of them and a read must fit in --max-buffer {})",
                f.max_readahead,
                ByteLen(report.unit_bytes),
                a.max_buffer
            );
        }
        if a.json {
            let mut v = report.to_json();
            v["url"] = serde_json::Value::String(url.to_string());
            if let Some(size) = a.random {
                // A read larger than the file is cut to the file: report what each read got.
                let per_read_bytes = report.bytes / u64::from(reads);
                v["random_read_bytes"] = size.0.min(per_read_bytes).into();
                v["reads"] = reads.into();
            }
            print_line(v)?;
        } else {
            note!(
                    "{url}: {} bytes in {:.3} s, {:.1} MiB/s, alpha {} (max {}), rtt {:.3} ms, {} requests, {} wasted",
                    report.bytes,
                    report.seconds,
                    report.mib_s,
                    report.alpha,
                    report.alpha_max,
                    report.rtt_ms,
                    report.requests,
                    report.wasted_bytes
                );
        }

        Ok(())
    };
    let mut failed: Vec<(&Url, bool)> = Vec::new();
    let mut not_fetched = 0;
    let mut reader_left = false;
    for (k, url) in a.urls.iter().enumerate() {
        match fetch(url) {
            Ok(()) => {}
            // One URL: its error is the command's, as it always was.
            Err(e) if !several => return Err(e),
            // Standard output's reader left: nothing more can be delivered. That ends the
            // command quietly, unless URLs before failed: their failure is still the outcome.
            Err(e) if crate::reader_went_away(&e) => {
                if failed.is_empty() {
                    return Err(e);
                }
                not_fetched = a.urls.len() - k - 1;
                reader_left = true;
                break;
            }
            Err(e) => {
                let text = crate::describe(&e);
                let prefix = format!("{url}: ");
                let cause = text.strip_prefix(&prefix).unwrap_or(&text);
                note!("error: {url}: {cause}");
                failed.push((url, e.downcast_ref::<crate::InputError>().is_some()));
                // With --json, standard output holds a line for every URL, in order, so a
                // consumer reading only it sees what failed as well as what arrived.
                if a.json {
                    if let Err(e) = print_line(serde_json::json!({
                        "url": url.to_string(),
                        "error": cause,
                    })) {
                        if !crate::reader_went_away(&e) {
                            return Err(e);
                        }
                        not_fetched = a.urls.len() - k - 1;
                        reader_left = true;
                        break;
                    }
                }
            }
        }
    }
    if !failed.is_empty() {
        // A reader that left takes nothing more; flushing would only fail again.
        if !reader_left {
            std::io::stdout().flush().context(crate::WritingStdout)?;
        }
        let e = anyhow::anyhow!(
            "{} of {} URLs failed (each named above): {}{}",
            failed.len(),
            a.urls.len(),
            failed
                .iter()
                .map(|(u, _)| u.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            match (reader_left, not_fetched) {
                (false, _) => String::new(),
                (true, 0) => "; standard output's reader left".to_string(),
                (true, n) =>
                    format!("; standard output's reader left before the last {n} were fetched"),
            }
        );
        // Bad input (an --out that cannot be written) is the user's to fix: exit 2 as for one URL.
        return Err(if failed.iter().any(|(_, input)| *input) {
            input(e)
        } else {
            e
        });
    }
    std::io::stdout().flush().context(crate::WritingStdout)?;
    Ok(())
}

/// `e`, the failure of a download that wrote `written_bytes` to `what` (standard output, or a
/// device or FIFO written in place), which keeps them: the message says how many, so that a user
/// can tell the output holds only the first part of the file. A failure that already says how
/// many bytes were handed on (the file changed on the server), a failure to write the output
/// itself, or a reader that left, is passed as it is, and so is one before any byte was written.
fn partial_output(e: anyhow::Error, written_bytes: u64, what: &str) -> anyhow::Error {
    let counted = e
        .downcast_ref::<NetError>()
        .is_some_and(|n| matches!(n, NetError::Changed { .. }));
    // A failure to write the output itself: the bytes counted were taken into its buffer, and
    // some never reached it.
    if written_bytes == 0 || counted || is_output_failure(&e, what) || crate::reader_went_away(&e) {
        return e;
    }
    anyhow::anyhow!(
        "{}; the first {written_bytes} bytes of the file had been written to {what}, which \
         keeps them: the output is partial",
        crate::describe(&e)
    )
}

/// Whether `e` is a failure to write the output `what` itself (`Named` says "writing {what}"),
/// rather than one of the download.
fn is_output_failure(e: &anyhow::Error, what: &str) -> bool {
    let writing = format!("writing {what}");
    e.chain().any(|c| c.to_string().starts_with(&writing))
}

/// `e`, a failure to write `what` (a device or FIFO given as `--out`, written in place) after
/// `delivered_bytes` had reached it: the message says how many it keeps. A FIFO whose reader left
/// is such a failure too: the user named that output, and it did not take the file.
fn output_failed(e: anyhow::Error, delivered_bytes: u64, what: &str) -> anyhow::Error {
    let cause = if crate::is_broken_pipe(&e) {
        format!("{}: its reader went away", crate::describe(&e))
    } else {
        crate::describe(&e)
    };
    anyhow::anyhow!(
        "{cause}; {delivered_bytes} bytes of the file had reached {what}, which keeps them: \
         the output is partial"
    )
}

/// `e`, the failure of a download to `what` (an `--out` file) that wrote `received_bytes` to the
/// temporary file beside it, now removed: the message says that none of them were saved and what
/// `what` holds, so that a user need not wonder whether the file is a part of the download.
fn discarded_output(
    e: anyhow::Error,
    received_bytes: u64,
    what: &str,
    existed: bool,
) -> anyhow::Error {
    // Bad input keeps its kind (exit 2); it is refused before a download writes anything.
    if e.downcast_ref::<crate::InputError>().is_some() {
        return e;
    }
    let left = if existed {
        "keeps the file it held before"
    } else {
        "was not created"
    };
    // A failure to write the file itself: some of the bytes counted never reached it.
    let writing = format!("writing {what}");
    let temporary = if e.chain().any(|c| c.to_string().starts_with(&writing)) {
        "the temporary file was removed".to_string()
    } else if received_bytes == 0 {
        // "the 0 bytes written" reads as if something had come; a failed opening request is
        // the usual case. Bytes may have arrived all the same (a range cut short before the
        // file's first bytes were complete), so the words are about what was written.
        "no byte of the file had been written yet, and the temporary file was removed".to_string()
    } else {
        format!("the {received_bytes} bytes written went to a temporary file, now removed")
    };
    anyhow::anyhow!(
        "{}; nothing was saved: {temporary}, and {what} {left}",
        crate::describe(&e)
    )
}

/// A rate in bits per second, in the largest decimal unit (as `--bandwidth` is written) that
/// keeps a whole figure before the point: `8.0 kbit/s`, `100.0 Mbit/s`, `1.0 Gbit/s`. Always in
/// Mbit/s, a rate under 0.05 Mbit/s read `0.0`.
fn bits_text(bytes_per_s: f64) -> String {
    let bits = bytes_per_s * 8.0;
    let (unit, scale) = [("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)]
        .into_iter()
        .find(|&(_, scale)| bits >= scale)
        .unwrap_or(("bit/s", 1.0));
    format!("{:.1} {unit}", bits / scale)
}

/// Writes one line to standard output. A closed or full standard output (`| head`, /dev/full) is
/// an error with a message and exit code 1; `println!` would panic on it.
fn print_line(line: impl std::fmt::Display) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .context(crate::WritingStdout)
}

/// The file name a URL is saved under in an --out directory: its path's last segment,
/// percent-decoded as the server decodes it (`/a%20b.bin` is the file `a b.bin`, and is saved
/// so), or `index` when that segment is empty, `.` or `..` as written. A segment that decodes to
/// a name no file can have in one directory (one holding `/`, a NUL byte, or `.` or `..` alone)
/// or holds a broken escape is refused with the reason: saved as written it would not be the
/// file's name, and decoded it would be no name or another directory's.
fn saved_name(url: &Url) -> Result<std::ffi::OsString, String> {
    let segment = url
        .path
        .split('?')
        .next()
        .and_then(|p| p.rsplit('/').next())
        .filter(|n| !n.is_empty() && *n != "." && *n != "..")
        .unwrap_or("index");
    let refuse = |why: &str| {
        format!(
            "--out: {url} would be saved under its last path segment `{segment}`, which {why}; \
             give --out a file name for it (one URL), or download it on its own"
        )
    };
    let Some(name) = foresight_net::path::percent_decode(segment) else {
        return Err(refuse("has a `%` not followed by two hex digits"));
    };
    if name.contains(&b'/') {
        return Err(refuse("decodes to a name with `/` in it"));
    }
    if name.contains(&0) {
        return Err(refuse("decodes to a name with a NUL byte in it"));
    }
    if name.is_empty() || name == b"." || name == b".." {
        return Err(refuse("decodes to `.` or `..`, which name directories"));
    }
    Ok(std::os::unix::ffi::OsStringExt::from_vec(name))
}

/// The path a chain of symbolic links at `path` leads to, each link's target taken from the
/// link's own directory when it is relative; `path` itself when it is no link. Read link by link
/// rather than through `canonicalize`, which fails for a link whose target does not exist yet:
/// that target is the file to create, and the link is left as it is.
fn link_target(path: &std::path::Path) -> std::io::Result<PathBuf> {
    // The kernel's own bound on links followed in one lookup (`MAXSYMLINKS`).
    const MOST_LINKS: usize = 40;
    let mut at = path.to_path_buf();
    for _ in 0..MOST_LINKS {
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(&at)?;
                at = match at.parent() {
                    Some(dir) if to.is_relative() => dir.join(to),
                    _ => to,
                };
            }
            _ => return Ok(at),
        }
    }
    Err(std::io::Error::other(format!(
        "more than {MOST_LINKS} links, or a loop"
    )))
}

/// Opening a FIFO to write waits until something opens it to read, which may be never: a
/// download that waited there said nothing. A FIFO without a reader is said to be waited for.
/// Returns the FIFO opened without waiting when it has a reader, to be held until the
/// download's own opening is done: closed before, it would be the FIFO's only writer, and its
/// reader would see the end of the stream at once (it took none of the download then).
fn say_when_a_fifo_has_no_reader(path: &std::path::Path) -> Option<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    // Without waiting, the opening fails with ENXIO while the FIFO has no reader.
    let probe = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path);
    match probe {
        Ok(file) => Some(file),
        Err(e) => {
            if e.raw_os_error() == Some(libc::ENXIO) {
                note!(
                    "--out {} is a FIFO that nothing reads yet: waiting for a reader to open it \
                     (SIGINT stops the wait)",
                    path.display()
                );
            }
            None
        }
    }
}

/// Standard output or standard error, when it is open on the regular file `meta` describes: then
/// `--out` is written through that descriptor, in place, as standard output is without `--out`.
/// `--out /dev/stdout` (or `/dev/fd/1`, `/proc/self/fd/1`) with standard output sent to a file
/// leads to that file, and replacing it by a temporary file renamed over it destroyed what the
/// shell had written there, turned `>>` into `>`, and left the shell writing to a file no longer
/// in any directory.
fn standard_stream_on(meta: &std::fs::Metadata) -> Option<std::fs::File> {
    use std::os::unix::fs::MetadataExt;
    let (stdout, stderr) = (std::io::stdout(), std::io::stderr());
    let same = |fd: std::os::fd::BorrowedFd<'_>| {
        let file = std::fs::File::from(fd.try_clone_to_owned().ok()?);
        let m = file.metadata().ok()?;
        (m.dev() == meta.dev() && m.ino() == meta.ino()).then_some(file)
    };
    same(stdout.as_fd()).or_else(|| same(stderr.as_fd()))
}

/// Where one download's bytes go. A regular file (or a path where none exists yet) is written
/// beside its target under a temporary name and renamed over it only once the download is
/// complete, so that a failed download leaves a file that was already there as it was, and no
/// partial file either. Anything else (`/dev/null`, a FIFO, a terminal) cannot be renamed over and
/// holds nothing to protect: it is written in place and never removed. So is the file standard
/// output or error is open on ([`standard_stream_on`]), which the shell is writing.
struct OutTarget {
    writer: std::io::BufWriter<Delivered>,
    /// The path as given, for messages.
    path: PathBuf,
    /// The temporary file and the path it becomes; `None` when writing in place.
    staged: Option<Staged>,
}

/// The file an [`OutTarget`] writes, below its buffer, counting the bytes the file took: what a
/// device or FIFO that fails holds, where the bytes given to the buffer include some it never got.
struct Delivered {
    file: std::fs::File,
    delivered: u64,
}

impl Write for Delivered {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        self.delivered += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// A temporary file that is removed unless it was renamed over its target: every way out of a
/// download (an error, an early return, a panic) other than success drops it, and SIGINT, SIGTERM
/// or SIGHUP removes it too.
struct Staged {
    partial: PathBuf,
    target: PathBuf,
    renamed: bool,
    _on_signal: crate::cleanup::Registered,
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.renamed {
            let _ = std::fs::remove_file(&self.partial);
        }
    }
}

impl OutTarget {
    fn open(path: &std::path::Path) -> anyhow::Result<OutTarget> {
        let opening = || format!("opening --out {}", path.display());
        if let Ok(meta) = std::fs::metadata(path) {
            if let Some(file) = meta.is_file().then(|| standard_stream_on(&meta)).flatten() {
                return Ok(OutTarget {
                    writer: std::io::BufWriter::new(Delivered { file, delivered: 0 }),
                    path: path.to_path_buf(),
                    staged: None,
                });
            }
            if !meta.is_file() {
                let _reader_known = std::os::unix::fs::FileTypeExt::is_fifo(&meta.file_type())
                    .then(|| say_when_a_fifo_has_no_reader(path))
                    .flatten();
                // Opened without truncating: a device or a FIFO has no bytes to lose.
                let file = match std::fs::OpenOptions::new().write(true).open(path) {
                    Ok(f) => f,
                    // `--out d` saves into `d/NAME`, which may be a directory itself.
                    Err(e) if e.kind() == std::io::ErrorKind::IsADirectory => {
                        return Err(input(format!(
                            "--out {} is a directory, where the download would be saved; give \
                             another --out (a file name, or a directory without it)",
                            path.display()
                        )))
                    }
                    Err(e) => return Err(input(anyhow::Error::new(e).context(opening()))),
                };
                return Ok(OutTarget {
                    writer: std::io::BufWriter::new(Delivered { file, delivered: 0 }),
                    path: path.to_path_buf(),
                    staged: None,
                });
            }
        }
        // A path ending in `/` (or `/.`) names a directory, and there is none here (an existing
        // one is saved into): the download could never be renamed to it.
        let text = std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str());
        if text.ends_with(b"/") || text.ends_with(b"/.") {
            return Err(input(format!(
                "--out {}: no such directory; create it first, or give a file name",
                path.display()
            )));
        }
        // A symbolic link keeps pointing where it did: the file it names is the one replaced,
        // or created when there is none yet.
        let target = link_target(path).map_err(|e| {
            input(format!(
                "--out {}: cannot follow its symbolic link ({e}); give a file name or a link \
                 that leads to one",
                path.display()
            ))
        })?;
        let Some(name) = target.file_name() else {
            return Err(input(format!(
                "--out {}: names no file; give a file name or a directory",
                path.display()
            )));
        };
        // In the target's own directory, so that the rename stays on one file system.
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let stem = format!(
            ".{}.foresight-partial-{}",
            name.to_string_lossy(),
            std::process::id()
        );
        let mut attempt = 0u32;
        let (file, partial, on_signal) = loop {
            // Another download of this process may be writing beside the same target.
            let partial = dir.join(if attempt == 0 {
                stem.clone()
            } else {
                format!("{stem}-{attempt}")
            });
            // Registered as it is created: a signal that stops the download removes it.
            let created = crate::cleanup::create_removed_on_signal(partial.clone(), |p| {
                std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(p)
            });
            match created {
                Ok((f, on_signal)) => break (f, partial, on_signal),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 1000 => {
                    attempt += 1;
                }
                // The system's `No such file or directory` would not say which one, nor what to do.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && !dir.is_dir() => {
                    return Err(input(format!(
                        "--out {}: the directory {} does not exist; create it first, or give a \
                         file in a directory that exists",
                        path.display(),
                        dir.display()
                    )))
                }
                Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                    return Err(input(format!(
                        "--out {}: cannot create a file in {} ({e}); give --out in a directory \
                         this user can write",
                        path.display(),
                        dir.display()
                    )))
                }
                Err(e) => {
                    return Err(input(anyhow::Error::new(e).context(format!(
                        "creating a temporary file in {} for --out {}",
                        dir.display(),
                        path.display()
                    ))))
                }
            }
        };
        let staged = Staged {
            partial,
            target,
            renamed: false,
            _on_signal: on_signal,
        };
        // The replaced file's permissions carry over to its replacement.
        if let Ok(meta) = std::fs::metadata(&staged.target) {
            let _ = std::fs::set_permissions(&staged.partial, meta.permissions());
        }
        Ok(OutTarget {
            writer: std::io::BufWriter::new(Delivered { file, delivered: 0 }),
            path: path.to_path_buf(),
            staged: Some(staged),
        })
    }

    /// Flushes the bytes and, for a staged file, renames it over the target.
    fn finish(self) -> anyhow::Result<()> {
        let OutTarget {
            writer,
            path,
            staged,
        } = self;
        let what = format!("--out {}", path.display());
        writer.into_inner().map_err(|e| {
            let (error, writer) = e.into_parts();
            let delivered = writer.get_ref().delivered;
            let failed = anyhow::Error::new(error).context(format!("writing {what}"));
            if staged.is_none() {
                // A device or FIFO keeps what reached it; the last bytes did not.
                output_failed(failed, delivered, &what)
            } else {
                failed
            }
        })?;
        if let Some(mut s) = staged {
            std::fs::rename(&s.partial, &s.target).with_context(|| {
                format!(
                    "moving the download {} over {}",
                    s.partial.display(),
                    s.target.display()
                )
            })?;
            s.renamed = true;
        }
        Ok(())
    }
}

pub const PROXY_HELP: &str = "Relay TCP connections to --upstream, adding --delay in each \
direction and capping each direction at --bandwidth (shared by all connections, as one link).

The round trip through the proxy is twice --delay plus the upstream's own. Each connection holds \
at most the bandwidth-delay product (up to 256 MiB) plus 1 MiB in flight each way, so a delay \
longer than 256 MiB / --bandwidth also caps each connection's rate. A connection whose end does not take a \
64 KiB chunk within 30 s (an end that stopped reading) is closed both ways, and so is one that \
carries no byte either way for --idle-timeout (60 s by default). When either end closes its \
side, the other end's write side is shut once everything sent is delivered, and the other \
direction is relayed until it ends too (a server that half-closes still gets what its client \
sends, a client that half-closes still gets its answer). When either end's connection fails \
instead (a reset), the other end is reset too once what came before is delivered, so that it \
sees an error rather than an end that would pass a cut-off answer for a whole one. A connection the \
upstream does not answer is closed, and standard error says so (at most once a second, and \
once more when a signal stops the proxy, for the failures since the last note). An \
--upstream that is the proxy itself is refused (exit 2): any address its name gives at the \
--listen port that is the listening address, or, for a proxy on a wildcard address (0.0.0.0, \
::), a loopback address or any address of this machine (one a socket can be bound to; on a \
system that lets sockets bind to any address, ip_nonlocal_bind, only loopback and wildcard \
ones are found, and a loop is held to --max-connections). Use it to \
measure `foresight get` against long or slow paths on one machine; it runs until stopped by \
SIGINT, SIGTERM or SIGHUP, which closes its connections and says so on standard error (exit \
code 128 plus the signal's number).

Example:
  foresight proxy --listen 127.0.0.1:9090 --upstream 127.0.0.1:8080 --delay 10ms --bandwidth 1Gbit";

/// `foresight proxy`.
#[derive(Args, Debug)]
pub struct ProxyArgs {
    /// Address to listen on: an IP address and port (0 picks a free port).
    #[arg(long, value_name = "IP:PORT", value_parser = listen_arg)]
    listen: SocketAddr,
    /// Address to relay to: a host name or IP address and a port, without a scheme (a URL is
    /// refused, naming the HOST:PORT in it).
    #[arg(long, value_name = "HOST:PORT")]
    upstream: String,
    /// One-way delay added in each direction, e.g. 10ms or 50us; at most 10s.
    #[arg(allow_hyphen_values = true, long, value_name = "DURATION", default_value = "0s", value_parser = duration_arg)]
    delay: StdDuration,
    /// Rate cap of each direction, e.g. 1Gbit or 100MB/s (at least 1 byte/s); none when omitted.
    #[arg(allow_hyphen_values = true, long, value_name = "RATE", value_parser = rate_arg)]
    bandwidth: Option<Bandwidth>,
    /// Most connections relayed at once (at most 10000: each takes four threads); more are
    /// closed at once. The soft open-files limit (ulimit -n) is raised toward two per
    /// connection, and a hard one below that is warned of.
    #[arg(long, default_value_t = 1024, value_parser = crate::whole_arg::<usize>)]
    max_connections: usize,
    /// How long a connection may carry no byte either way before it is closed; at least 1s.
    #[arg(allow_hyphen_values = true, long, value_name = "DURATION", default_value = "60s", value_parser = duration_arg)]
    idle_timeout: StdDuration,
}

/// Runs `foresight proxy` until interrupted.
pub fn run_proxy(a: &ProxyArgs) -> anyhow::Result<()> {
    // A URL would be refused below as a name that does not resolve (the scheme taken for part
    // of the host), which sends the user to check the host rather than drop the scheme.
    if let Some(addr) = foresight_net::client::address_in_url(&a.upstream) {
        return Err(input(format!(
            "--upstream: `{}` is a URL; give the upstream's HOST:PORT without the scheme, e.g. \
             {addr}",
            a.upstream
        )));
    }
    // A mistyped upstream would otherwise show only as every relayed connection failing.
    let resolved: Vec<SocketAddr> =
        match std::net::ToSocketAddrs::to_socket_addrs(a.upstream.as_str()) {
            Ok(addrs) => addrs.collect(),
            Err(e) => {
                return Err(input(format!(
                    "--upstream: `{}` is not a HOST:PORT that resolves ({e}); give e.g. \
                     127.0.0.1:8080",
                    a.upstream
                )))
            }
        };
    if resolved.is_empty() {
        return Err(input(format!(
            "--upstream: `{}` resolves to no address",
            a.upstream
        )));
    }
    if resolved.iter().any(|addr| addr.port() == 0) {
        return Err(input(format!(
            "--upstream: `{}` has port 0, which no server listens on; give its real port",
            a.upstream
        )));
    }
    // Relaying to itself, every accepted connection would open another until
    // --max-connections ran out. Each address the name gives is one the proxy may connect to.
    if let Some(own) = resolved
        .iter()
        .find(|addr| proxy::relays_to_itself(a.listen, **addr))
    {
        return Err(input(format!(
            "--upstream: `{}` is the proxy itself ({own} is where --listen {} takes \
             connections); give the server's address",
            a.upstream, a.listen
        )));
    }
    let handle = proxy::spawn(ProxyConfig {
        listen: a.listen,
        upstream: a.upstream.clone(),
        delay: a.delay,
        bandwidth: a.bandwidth,
        max_connections: a.max_connections,
        send_timeout: proxy::DEFAULT_SEND_TIMEOUT,
        idle_timeout: a.idle_timeout,
    })
    .map_err(|e| listen_failure("--listen", e))?;
    fit_open_files_limit(
        2 * a.max_connections as u64 + 64,
        a.max_connections,
        "a socket to the client and one to the upstream",
    );
    // Stopped by a signal, it ended without a word, where `serve` says it stopped.
    crate::cleanup::say_on_signal("foresight proxy closed its connections");
    note!(
        "foresight proxy: {} -> {} (delay {} each way, {})",
        handle.local_addr(),
        a.upstream,
        foresight_net::duration_text(a.delay),
        a.bandwidth.map_or("no rate cap".to_string(), |b| format!(
            "{} each way",
            bits_text(b.bytes_per_s)
        ))
    );
    // The proxy closes a client's connection when the upstream does not answer; without a note
    // here the operator would see a healthy proxy and failing clients. At most one a second, and
    // one more as a signal stops the proxy, for the failures since the last.
    let failures = std::sync::Arc::new(UpstreamFailures {
        stats: handle.shared_stats(),
        upstream: a.upstream.clone(),
        noted: std::sync::Mutex::new(0),
    });
    let at_stop = failures.clone();
    crate::cleanup::say_first_on_signal(move || at_stop.news());
    std::thread::spawn(move || loop {
        std::thread::sleep(StdDuration::from_secs(1));
        failures.say_news();
    });
    handle.wait();
    Ok(())
}

/// The proxy's note about the connections it closed because the upstream did not answer.
struct UpstreamFailures {
    stats: std::sync::Arc<proxy::ProxyStats>,
    upstream: String,
    /// The failures the last note counted.
    noted: std::sync::Mutex<u64>,
}

impl UpstreamFailures {
    /// Writes the note if there were failures since the last one. The note is written holding
    /// the count, so that a stop asking for [`UpstreamFailures::news`] meanwhile waits for it
    /// rather than find the news taken and end the process before it is written.
    fn say_news(&self) {
        let mut noted = self.noted.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(line) = self.news_since(&mut noted) {
            note!("{line}");
        }
    }

    /// The note about the failures since the last one, if any, taken as said.
    fn news(&self) -> Option<String> {
        let mut noted = self.noted.lock().unwrap_or_else(|p| p.into_inner());
        self.news_since(&mut noted)
    }

    fn news_since(&self, noted: &mut u64) -> Option<String> {
        let failures = self
            .stats
            .upstream_failures
            .load(std::sync::atomic::Ordering::Relaxed);
        if failures <= *noted {
            return None;
        }
        *noted = failures;
        let why = self
            .stats
            .upstream_error
            .lock()
            .ok()
            .and_then(|e| e.clone())
            .unwrap_or_default();
        Some(format!(
            "foresight proxy: cannot connect to the upstream {} ({why}); {failures} connection(s) \
             closed unrelayed so far",
            self.upstream
        ))
    }
}

/// `net-soak`'s report as text: what `--json` gives, the rate included, on one line.
fn soak_line(r: &soak::SoakReport) -> String {
    let mib = |b: Option<u64>| {
        b.map_or("?".into(), |b| {
            format!("{:.0} MiB", b as f64 / (1u64 << 20) as f64)
        })
    };
    format!(
        "{} clients, {:.1} s: {} requests, {} bytes checked ({:.1} MiB/s), {} errors, {} \
         mismatches; RSS start {}, max sampled {}, end {}, peak {}",
        r.clients,
        r.seconds,
        r.requests,
        r.bytes,
        r.mib_s(),
        r.errors,
        r.mismatches,
        mib(r.rss_start_bytes),
        mib(r.rss_max_sampled_bytes),
        mib(r.rss_end_bytes),
        mib(r.peak_rss_bytes),
    )
}

pub const SOAK_HELP: &str = "Run many concurrent clients against one in-process server and \
check every byte they receive.

Generated files are served from a directory of their own in the temporary one (TMPDIR, which \
must be an existing directory this user may write in, or /tmp when it is unset or empty), removed when \
the soak ends (also by SIGINT, SIGTERM or SIGHUP, which says so on standard error, naming what it removed); files that would not fit in its free space, a \
tenth of it kept spare, are refused before any is written. Even-numbered clients read their file \
sequentially in 128 KiB ranges, odd-numbered ones read random ranges of up to --max-read. The \
report counts requests, errors and mismatches and gives the process's resident memory (server and \
clients together) at the start, the most sampled each second, at the end, and its peak. Its \
seconds are the clients' reading time, from their start until the last exchange under way at \
--duration ended, and its rate (mib_s) is the bytes checked over them. Exits 1 \
if any error or mismatch was seen. What it runs is said on standard error at the start, and the \
time every 5 s. Both ends of every connection are in this one process, and each client's stream holds \
its file open, so it needs about three open files per client (2 x --clients + the fewer of \
--clients and --files + 64): a soft limit (ulimit -n) below that is raised up \
to the hard one, and clients past the hard one are refused (exit 2) before anything is written.

Example:
  foresight net-soak --clients 1000 --duration 30s --json";

/// `foresight net-soak`.
#[derive(Args, Debug)]
pub struct SoakArgs {
    /// Concurrent clients, one connection each (at most 65536).
    #[arg(long, default_value_t = 1000, value_parser = crate::whole_arg::<usize>)]
    clients: usize,
    /// How long they read (at least 1ms).
    #[arg(allow_hyphen_values = true, long, value_name = "DURATION", default_value = "30s", value_parser = duration_arg)]
    duration: StdDuration,
    /// Files served (at most 1024).
    #[arg(long, default_value_t = 16, value_parser = crate::whole_arg::<usize>)]
    files: usize,
    /// Bytes per file, 4KiB to 1GiB (16GiB for all files together, and within the temporary
    /// directory's free space).
    #[arg(allow_hyphen_values = true, long, value_name = "SIZE", default_value = "8MiB", value_parser = size_arg)]
    file_size: ByteLen,
    /// Largest random read, at most --file-size (a read stays within one file) [default: 256KiB,
    /// or --file-size if that is smaller].
    #[arg(allow_hyphen_values = true, long, value_name = "SIZE", value_parser = size_arg)]
    max_read: Option<ByteLen>,
    /// Server workers, 1 to 4096.
    #[arg(long, default_value_t = 32, value_parser = crate::whole_arg::<u32>)]
    workers: u32,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

/// Runs `foresight net-soak`.
pub fn run_soak(a: &SoakArgs) -> anyhow::Result<()> {
    // The generated files go when the soak ends, also when a signal ends it.
    let cfg = SoakConfig {
        clients: a.clients,
        duration: a.duration,
        files: a.files,
        file_size: a.file_size,
        max_read: a
            .max_read
            .unwrap_or(ByteLen(SoakConfig::default().max_read.0.min(a.file_size.0))),
        workers: a.workers,
        seed: 1,
    };
    soak::check(&cfg).map_err(net)?;
    // A soak stopped by a signal ended without a word; the removal of its files is added to this
    // note by the removal.
    crate::cleanup::say_on_signal("net-soak had not finished, so it has no report");
    // Made and registered in one step (`soak::run_making_dir`): a signal that ends the soak
    // removes the directory with the files written into it so far.
    let mut on_signal = None;
    note!(
        "foresight net-soak: {} clients for {:?} over {} files of {}",
        a.clients,
        a.duration,
        a.files,
        a.file_size
    );
    // A note every few seconds, so that a long soak does not look hung; the channel closing ends
    // the notes when the soak returns.
    let (done, wait) = std::sync::mpsc::channel::<()>();
    let started = std::time::Instant::now();
    let notes = std::thread::spawn(move || {
        let interval = StdDuration::from_secs_f64(crate::progress::NOTE_INTERVAL_S);
        while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = wait.recv_timeout(interval) {
            note!(
                "foresight net-soak: {:.0} s in",
                started.elapsed().as_secs_f64()
            );
        }
    });
    let r = soak::run_making_dir(&cfg, |dir| {
        let ((), registered) = crate::cleanup::create_removed_on_signal(dir.to_path_buf(), |d| {
            std::fs::create_dir_all(d)
        })?;
        on_signal = Some(registered);
        Ok(())
    });
    // The soak removed the directory as it returned.
    drop(on_signal);
    drop(done);
    let _ = notes.join();
    let r = r.map_err(net)?;
    if a.json {
        print_line(r.to_json())?;
    } else {
        print_line(soak_line(&r))?;
        if let Some(e) = &r.first_error {
            print_line(format_args!("first error: {e}"))?;
        }
    }
    if r.errors > 0 || r.mismatches > 0 {
        anyhow::bail!("{} errors and {} mismatches", r.errors, r.mismatches);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::discarded_output;
    use super::{server::Stopped, soak::SoakReport, soak_line, stop_line};
    use std::time::Duration;

    /// The text report gives the rate, as --help says it does; only --json had it.
    #[test]
    fn the_soak_report_line_gives_the_rate() {
        let r = SoakReport {
            clients: 50,
            seconds: 2.0,
            requests: 11410,
            bytes: 3 << 20,
            errors: 0,
            mismatches: 0,
            first_error: None,
            rss_start_bytes: Some(6 << 20),
            rss_max_sampled_bytes: None,
            rss_end_bytes: None,
            peak_rss_bytes: None,
        };
        let line = soak_line(&r);
        assert!(
            line.starts_with(
                "50 clients, 2.0 s: 11410 requests, 3145728 bytes checked (1.5 MiB/s), 0 errors"
            ),
            "{line}"
        );
    }

    /// The last line says what a stop waited for: nothing, the answers under way, or the grace
    /// period, with what it cut.
    #[test]
    fn the_stop_line_says_what_the_stop_waited_for() {
        let grace = Duration::from_secs(10);
        let at = |cut_short_responses, closed_connections, waited_ms| {
            stop_line(
                &Stopped {
                    cut_short_responses,
                    closed_connections,
                    waited: Duration::from_millis(waited_ms),
                },
                grace,
            )
        };
        assert_eq!(at(0, 0, 12), "stopped");
        assert_eq!(
            at(0, 0, 2340),
            "stopped after 2.3 s, the time the answers under way took to be sent"
        );
        assert!(at(0, 2, 10_000).contains("ran out with 2 connections still answering"));
        let cut = at(1, 1, 10_000);
        assert!(
            cut.contains("10s grace period ran out with 1 response under way, cut short"),
            "{cut}"
        );
    }

    /// A download that failed before any byte was written said "the 0 bytes written went to a
    /// temporary file", as if some had come; one that had bytes still counts them. It then said
    /// "no byte had arrived", which was false of a server that sent part of the first range.
    #[test]
    fn a_failed_download_to_out_says_no_byte_was_written_when_none_was() {
        let none = discarded_output(anyhow::anyhow!("cannot connect"), 0, "--out f", false);
        let text = none.to_string();
        assert!(
            text.contains("no byte of the file had been written yet") && !text.contains("0 bytes"),
            "{text}"
        );
        assert!(text.ends_with("and --out f was not created"), "{text}");
        let some = discarded_output(anyhow::anyhow!("cut"), 4096, "--out f", true);
        let text = some.to_string();
        assert!(
            text.contains("the 4096 bytes written went to a temporary file, now removed")
                && text.ends_with("--out f keeps the file it held before"),
            "{text}"
        );
    }
}
