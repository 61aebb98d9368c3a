//! The delay-adaptive range client behind `foresight get` (paper 004_80004320b985afc3.txt,
//! condition 20 and Algorithm 1).
//!
//! A download opens with a `HEAD` (the paper's create-stream request: it yields the length, whether
//! ranges are honoured and a first round-trip sample, less the server's processing time when the
//! server reports it) and a `GET /.well-known/foresight` for the device figures. A server that has
//! no such document (nginx, an object store) is still read with ranges; the rate then comes from
//! the response bodies, once 10 ms of their arrival has been timed (until then `alpha` stays at 1).
//! From there every decision is `ApsStream`'s: the application
//! reads the file sequentially in `app_read` pieces, the stream machine answers with range requests,
//! and this module sends each on a pooled keep-alive connection (one request per connection at a
//! time, so `alpha` requests in flight means `alpha` connections busy), feeds every completion back
//! with its timings, and hands the bytes to the application in order. Every range request carries
//! `If-Range` with the strong `ETag` of the `HEAD` (from a server without tags, its strong
//! `Last-Modified`), so a file replaced on the server during the download comes back whole (200)
//! with another validator instead of as ranges of the new version; that, a 206 with another tag
//! (compared weakly) or date, or another length, is [`NetError::Changed`] (a download that has
//! written nothing yet starts over). Ranges are never put together under a weak tag: a `HEAD`
//! with one, for a file modified within the second, is sent again every 0.1 s until the tag is
//! strong, for a second at most, and a tag still weak gets the file in one `GET`. A
//! `Last-Modified` not yet a second old from a server without tags is waited on in the same way,
//! and a server with no validator at all has its file fetched in one `GET`. Once the last
//! byte of a download has arrived, a `HEAD` asks for the validator again (`confirm_unchanged`):
//! the validators of each answer were decided before its bytes were read, so only a look after
//! them sees a file rewritten in place that a server sent mixed. Random reads take their bytes
//! as they arrive and report a
//! unit received ahead of the read to the stream only once the read reaches it, so that the
//! stream's demand in flight bounds what a read of any size holds. A request that fails for
//! want of a connection or an answer (within the request timeout), or gets 503, is sent again
//! up to [`REQUEST_ATTEMPTS`] times in all, each retry handed to the client's [`Notes`], so a
//! server that stops answering ends a download within a bounded number of request timeouts. A
//! host name that does not resolve is final at once ([`NetError::Resolve`]).
//!
//! A server that does not honour ranges (no `Accept-Ranges: bytes`, or the whole file in answer to
//! a range, which RFC 9110 allows) is read in one plain `GET` whose body goes to the application
//! as it arrives, so memory stays bounded and only a pause in the data times it out. Connections
//! the server closes after a response (`Connection: close`, HTTP/1.0) are never pooled.
//!
//! A refusal's reason is the server's plain-text body: quoted from a range request's error
//! answer, and, since a `HEAD` has none, asked for once with a `GET` when the `HEAD` is refused
//! (`refusal_reason`); one line of at most 300 characters, control characters dropped.
//!
//! A `HEAD` answered 405, 501 or 403, which a server may give `HEAD` alone (an object store's URL
//! presigned for `GET` answers `HEAD` 403), is followed instead by a `GET` of the file's first
//! range (`first_range`), which plays the `HEAD`'s part: the length from its `Content-Range`,
//! the validator from its `ETag` or `Last-Modified`, its bytes the application's first read, from
//! whose end the stream goes on (held back until a later answer has confirmed their version, so
//! that a file replaced just after them starts over with nothing written). A 416 to it is an
//! empty file, and a 200 (ranges ignored) is read whole as the download. A refusal the `GET`
//! gets too is the file's, reported as the `HEAD`'s with the `GET`'s reason. Without `HEAD` the
//! closing look is a one-byte range under `If-Range` (`confirm_unchanged_by_range`), and a weak tag
//! gets the file in one `GET` at once. A download that came as one whole file (ranges ignored, or
//! a weak tag) is looked at with a `GET` under `If-None-Match` or `If-Modified-Since` instead
//! (`confirm_unchanged_by_condition`): a server that ignores ranges would answer a one-byte range
//! with the whole file, changed or not. No validator, no look.

use std::collections::BTreeMap;
use std::io::Write;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration as StdDuration;

use bytes::Bytes;
use foresight_core::{Bandwidth, ByteLen, ByteRange, Duration, FetchId, Instant, Rng};
use foresight_policy::adaptive::aps::ExchangeTiming;
use foresight_policy::adaptive::{
    AlphaMode, ApsConfig, ApsStream, DeviceFigures, DEFAULT_PEAK_RATIO,
};
use http_body_util::{BodyExt, Empty, LengthLimitError, Limited};
use hyper::client::conn::http1::SendRequest;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::sync::{mpsc, Notify, Semaphore};

use crate::range::{parse_content_range, range_header_for};
use crate::validators::{parse_http_date, year_of};
use crate::{NetError, PROC_HEADER, STREAM_HEADER, WELL_KNOWN_PATH};

/// An `http://host[:port]/path` URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Url {
    /// Host name or address (IPv6 without brackets).
    pub host: String,
    /// Port (80 when not given).
    pub port: u16,
    /// Path and query, starting with `/`.
    pub path: String,
}

impl Url {
    /// `host:port` for connecting and for the `Host` header.
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The same server, another path.
    pub fn with_path(&self, path: &str) -> Url {
        Url {
            path: path.into(),
            ..self.clone()
        }
    }
}

impl std::fmt::Display for Url {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "http://{}{}", self.authority(), self.path)
    }
}

/// `http` or `https` (in any case) at the start of `text` followed by colons and
/// slashes other than `://` (`http:/h`, `http:h`, `http//h`), and the text after them: a scheme
/// mistyped, which taken for a host name would be advised as `http://http:/h`. `http:8080/f` is
/// not one: it may also be the host `http` at port 8080 (see [`scheme_then_port`]).
fn misspelt_scheme(text: &str) -> Option<(&'static str, &str)> {
    let (scheme, after) = scheme_prefix(text)?;
    if !after.starts_with([':', '/'])
        || after.starts_with("://")
        || scheme_then_port(text).is_some()
    {
        return None;
    }
    Some((scheme, after.trim_start_matches([':', '/'])))
}

/// `http` or `https` (in any case) as the letters `text` starts with, and the text after them.
fn scheme_prefix(text: &str) -> Option<(&'static str, &str)> {
    let letters = text.find(|c: char| !c.is_ascii_alphabetic())?;
    let scheme = ["http", "https"]
        .into_iter()
        .find(|s| text[..letters].eq_ignore_ascii_case(s))?;
    Some((scheme, &text[letters..]))
}

/// The `HOST:PORT` that `text` names when it is an `http://` or `https://` URL (in any case):
/// the port the URL gives, or its scheme's default. For an option that takes an address, given
/// a URL (`--upstream http://127.0.0.1:8080/`), whose scheme a name lookup would take for part
/// of the host name. `None` for anything else.
pub fn address_in_url(text: &str) -> Option<String> {
    let (scheme, after) = scheme_prefix(text)?;
    let rest = after.strip_prefix("://")?;
    // The authority alone, without credentials (the address is what is asked for), read as
    // this client reads a URL's: brackets, host and port.
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    // An empty port (`h:`) is the scheme's default, as a missing one is.
    let host_port = host_port.strip_suffix(':').unwrap_or(host_port);
    let has_port = match host_port.rfind(']') {
        Some(i) => host_port[i..].contains(':'),
        None => host_port.contains(':'),
    };
    // The URL parser reads http, whose default port is 80.
    let host_port = match (scheme, has_port) {
        ("https", false) => format!("{host_port}:443"),
        _ => host_port.to_string(),
    };
    let url: Url = format!("http://{host_port}").parse().ok()?;
    Some(url.authority())
}

/// For `http:8080/f` (a scheme's name, a colon and a port), the text from the colon on.
fn scheme_then_port(text: &str) -> Option<&str> {
    let (_, after) = scheme_prefix(text)?;
    let port = after.strip_prefix(':')?.split(['/', '?']).next()?;
    (!port.is_empty() && port.bytes().all(|b| b.is_ascii_digit())).then_some(after)
}

impl FromStr for Url {
    type Err = String;

    fn from_str(text: &str) -> Result<Url, String> {
        // A scheme is case-insensitive (RFC 3986, section 3.1): `HTTP://` is `http://`.
        let port_form = scheme_then_port(text);
        let rest = text
            .get(.."http://".len())
            .filter(|scheme| scheme.eq_ignore_ascii_case("http://"))
            .map(|_| &text["http://".len()..])
            .ok_or_else(|| match (misspelt_scheme(text), text.split_once("://")) {
                // `http:/host`: the URL meant, not `http://http:/host`.
                (Some((_, "")), _) => {
                    format!("`{text}` is not a URL; write http://HOST[:PORT]/PATH")
                }
                (Some(("https", _)), _) => format!(
                    "`{text}`: `https://` is not supported; this client speaks plain HTTP (no \
                     TLS), so give an http:// URL"
                ),
                (Some((_, rest)), _) => format!(
                    "`{text}`: the scheme is written `http://`, a colon and two slashes; write \
                     http://{rest}"
                ),
                // `http:8080/f` is either the scheme without its slashes and the host, or the
                // host `http` at a port: both readings are offered, the likelier first.
                (None, None) if port_form.is_some() => {
                    let after = port_form.unwrap_or_default();
                    format!(
                        "`{text}` has no scheme, and no host if `{scheme}` was meant as one; \
                         write http://HOST{after} (or, for a host named `{scheme}`, \
                         http://{text})",
                        scheme = &text[..text.len() - after.len()],
                    )
                }
                // `host:port/path`, as a browser's address bar takes it.
                (None, None)
                    if text.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '[') =>
                {
                    format!("`{text}` has no scheme; write http://{text}")
                }
                (None, None) => format!("`{text}` is not a URL; write http://HOST[:PORT]/PATH"),
                (None, Some((scheme, _))) => format!(
                    "`{text}`: `{scheme}://` is not supported; this client speaks plain HTTP (no \
                     TLS), so give an http:// URL"
                ),
            })?;
        // The fragment is the client's own (RFC 3986, section 3.5): never sent, and not part of
        // the name a download is saved under.
        let rest = rest.split_once('#').map_or(rest, |(before, _)| before);
        // The authority ends at the path or, without one, at the query (section 3.2).
        let (auth, path) = match rest.find(['/', '?']) {
            Some(i) if rest[i..].starts_with('/') => (&rest[..i], rest[i..].to_string()),
            Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
            None => (rest, "/".to_string()),
        };
        // Credentials before the host (RFC 3986, section 3.2.1) are not sent by this client:
        // `user:pw@host` was refused as an IPv6 address without brackets, and `user@host` as a
        // host with a bad character, neither of which is what the user wrote.
        if let Some((userinfo, _)) = auth.rsplit_once('@') {
            return Err(format!(
                "`{text}`: `{userinfo}@` gives credentials, which this client does not send; \
                 write the URL without them (a URL presigned for GET carries its signature in \
                 the query instead)"
            ));
        }
        let (host, port) = if let Some(v6) = auth.strip_prefix('[') {
            let end = v6
                .find(']')
                .ok_or_else(|| format!("`{text}`: unclosed `[` in the host"))?;
            let after = &v6[end + 1..];
            let port = match after.strip_prefix(':') {
                Some(p) => Some(p),
                None if after.is_empty() => None,
                None => {
                    return Err(format!(
                        "`{text}`: after `]` comes `:port` or the path, not `{after}`"
                    ))
                }
            };
            (&v6[..end], port)
        } else {
            let (h, p) = match auth.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (auth, None),
            };
            if h.contains([':', '[', ']']) {
                return Err(format!(
                    "`{text}`: an IPv6 address goes in brackets, as in http://[::1]:8080/"
                ));
            }
            (h, p)
        };
        if host.is_empty() {
            return Err(format!(
                "`{text}`: no host; write http://HOST[:PORT]/PATH, e.g. http://127.0.0.1:8080/f"
            ));
        }
        if host
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || matches!(c, '@' | '[' | ']'))
        {
            return Err(format!(
                "`{text}`: the host `{host}` has a character a host name cannot have"
            ));
        }
        let port = match port {
            None => 80,
            Some(p) => p.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(|| {
                format!("`{text}`: the port `{p}` is not a number from 1 to 65535")
            })?,
        };
        if path
            .bytes()
            .any(|b| b.is_ascii_whitespace() || b.is_ascii_control())
        {
            return Err(format!(
                "`{text}`: spaces and control characters must be %-encoded"
            ));
        }
        // A `%` opens an escape of two hex digits (RFC 3986, section 2.1). Sent as it is, a
        // broken one (`/100%.txt`) was answered 400 by the server after the download began; it
        // is the user's text to fix, so it is refused before anything is sent.
        if crate::path::percent_decode(&path).is_none() {
            return Err(format!(
                "`{text}`: a `%` in the path must start an escape of two hex digits; write %25 \
                 for a percent sign"
            ));
        }
        Ok(Url {
            host: host.into(),
            port,
            path,
        })
    }
}

/// The client's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClientConfig {
    /// `auto` (condition 20) or a fixed number of readahead units in flight.
    pub alpha: AlphaMode,
    /// The readahead unit (`max_ra_sz`), 4 KiB to 256 MiB; `None` takes the server's (held to
    /// those bounds), or 1 MiB.
    pub readahead: Option<ByteLen>,
    /// The cap on `alpha` in auto mode.
    pub max_alpha: u32,
    /// Most connections to one server.
    pub max_connections: usize,
    /// The size of the application's sequential reads.
    pub app_read: ByteLen,
    /// How long one attempt of a request may take, connecting included (a request is sent at
    /// most [`REQUEST_ATTEMPTS`] times); without ranges, how long the one whole-file `GET` may go
    /// without receiving data once its answer has begun (it may take as long as the file needs).
    pub request_timeout: StdDuration,
    /// `p` when the server publishes none.
    pub peak_ratio: f64,
    /// The most bytes of readahead a download holds, requested or received and not yet handed
    /// to the application: `(alpha + 2) x unit + app_read` (`alpha + 1` units ahead of the read,
    /// the one it ends in, and the read) stays within it, so the unit is capped to a third of
    /// `max_buffer - app_read` (a quarter for a fixed `alpha` of 2, ...) and an automatic `alpha`
    /// to `(max_buffer - app_read) / unit - 2` ([`DEFAULT_MAX_BUFFER`] by default). A random
    /// read of any size (`random_reads`' `size`) is taken in units as they arrive and holds no
    /// more.
    pub max_buffer: ByteLen,
}

/// [`ClientConfig::max_buffer`] unless told otherwise: a 1 MiB unit (`foresight serve`'s
/// default) at the largest automatic alpha, 64, needs 66 MiB and a read; a 64 MiB unit (its
/// largest) gets an alpha of at most 1.
pub const DEFAULT_MAX_BUFFER: ByteLen = ByteLen(256 << 20);

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            alpha: AlphaMode::Auto,
            readahead: None,
            max_alpha: 64,
            max_connections: 66,
            app_read: ByteLen::kib(128),
            request_timeout: StdDuration::from_secs(60),
            peak_ratio: DEFAULT_PEAK_RATIO,
            max_buffer: DEFAULT_MAX_BUFFER,
        }
    }
}

/// What one download or random-read run did.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// Bytes handed to the application.
    pub bytes: u64,
    /// Wall seconds.
    pub seconds: f64,
    /// `bytes` per second in MiB/s.
    pub mib_s: f64,
    /// `alpha` at the end.
    pub alpha: u32,
    /// The largest `alpha` used.
    pub alpha_max: u32,
    /// The round trip condition 20 used, in milliseconds.
    pub rtt_ms: f64,
    /// Range requests sent (the opening `HEAD` and figures request not counted; the first range
    /// sent in place of a refused `HEAD` counted).
    pub requests: u64,
    /// Body bytes received but never handed to the application.
    pub wasted_bytes: u64,
    /// Body bytes received.
    pub transferred_bytes: u64,
    /// The readahead unit used.
    pub unit_bytes: u64,
    /// The most readahead bytes held at once (requested or received, not yet handed on), at most
    /// [`ClientConfig::max_buffer`].
    pub buffered_peak_bytes: u64,
    /// The path rate measured from response bodies, MiB/s: their bytes over the time any of them
    /// was arriving, each timed from the earliest moment its first byte could have come; `None`
    /// until 10 ms of arrival has been timed (see `RateEstimator`), so a path too fast for its
    /// bodies to be timed reports none.
    pub path_mib_s: Option<f64>,
    /// The server's figures, if it published them.
    pub server: Option<DeviceFigures>,
    /// Whether the server honoured ranges (otherwise the file came in one plain `GET`).
    pub ranges: bool,
}

impl Report {
    /// The JSON object `foresight get --json` prints.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "bytes": self.bytes,
            "mib_s": self.mib_s,
            "alpha": self.alpha,
            "rtt_ms": self.rtt_ms,
            "requests": self.requests,
            "wasted_bytes": self.wasted_bytes,
            "seconds": self.seconds,
            "alpha_max": self.alpha_max,
            "transferred_bytes": self.transferred_bytes,
            "unit_bytes": self.unit_bytes,
            "buffered_peak_bytes": self.buffered_peak_bytes,
            "path_mib_s": self.path_mib_s,
            "server_figures": self.server.map(|d| serde_json::json!({
                "max_readahead_bytes": d.max_readahead.0,
                "avg_bandwidth_bytes_per_s": d.avg_bandwidth.bytes_per_s,
                "peak_ratio": d.peak_ratio,
            })),
            "ranges": self.ranges,
        })
    }
}

/// A blocking client: each call runs on the client's own small tokio runtime.
#[derive(Debug)]
pub struct Client {
    cfg: ClientConfig,
    rt: tokio::runtime::Runtime,
    notes: Notes,
}

/// Where a download's notes go while it runs: each request that failed and is sent again, which
/// one, after how long and why. A download that waits on a silent server would otherwise say
/// nothing until it gives up. `foresight get` prints them on standard error; by default they go
/// nowhere.
#[derive(Clone)]
pub struct Notes(Arc<dyn Fn(&str) + Send + Sync>);

impl Notes {
    /// Notes handed to `f`.
    pub fn new(f: impl Fn(&str) + Send + Sync + 'static) -> Notes {
        Notes(Arc::new(f))
    }

    fn note(&self, text: &str) {
        (self.0)(text)
    }
}

impl Default for Notes {
    fn default() -> Notes {
        Notes::new(|_| {})
    }
}

impl std::fmt::Debug for Notes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Notes")
    }
}

/// How many times a request (the opening `HEAD`, a range, the plain `GET` up to its answer's
/// head) is sent before the download gives up: the first time and two more, 0.1 s and then 0.2 s
/// after the failure before. Each attempt, connecting included, has one request timeout, so a
/// server that stops answering costs a request at most this many timeouts and 0.3 s.
pub const REQUEST_ATTEMPTS: u32 = 3;

/// The pause before attempt `next` (2 or more) of a request.
fn retry_pause(next: u32) -> StdDuration {
    StdDuration::from_millis(100 * u64::from(next.saturating_sub(1)))
}

static STREAM_SEQ: AtomicU64 = AtomicU64::new(0);

/// The most units a download holds at its least alpha (1 when automatic): `alpha + 1` units
/// ahead of the application's read, and the one it is reading in.
fn least_units(alpha: AlphaMode) -> u64 {
    match alpha {
        AlphaMode::Fixed(n) => u64::from(n) + 2,
        AlphaMode::Auto => 3,
    }
}

/// `least`, rounded up to a whole number of the smallest binary unit that writes it in at most
/// four digits (`140KiB`, `257MiB`, `257GiB`): a size a user can read and type, and still enough.
fn least_readably(least: ByteLen) -> ByteLen {
    if least.0 < 1 << 10 {
        return least;
    }
    for unit in [1u64 << 10, 1 << 20, 1 << 30, 1 << 40] {
        let n = least.0.div_ceil(unit);
        if n <= 9999 {
            return ByteLen(n * unit);
        }
    }
    least
}

/// The smallest readahead unit (`--readahead`, or the one a server publishes).
const MIN_UNIT_BYTES: u64 = 4 << 10;
/// The largest readahead unit.
const MAX_UNIT_BYTES: u64 = 256 << 20;

impl Client {
    /// A client with these settings.
    pub fn new(cfg: ClientConfig) -> Result<Client, NetError> {
        let bad = |key, message: String| Err(NetError::Setting { key, message });
        if cfg.max_connections < 2 {
            return bad("max_connections", "must be at least 2".into());
        }
        if cfg.app_read.0 == 0 {
            return bad("app_read", "must be at least one byte".into());
        }
        if let Some(r) = cfg.readahead {
            if !(MIN_UNIT_BYTES..=MAX_UNIT_BYTES).contains(&r.0) {
                return bad("--readahead", format!("must be 4KiB..=256MiB, got {r}"));
            }
        }
        let units = least_units(cfg.alpha);
        let least = ByteLen(
            units
                .saturating_mul(cfg.readahead.map_or(MIN_UNIT_BYTES, |r| r.0))
                .saturating_add(cfg.app_read.0),
        );
        if cfg.max_buffer.0 < least.0 {
            return bad(
                "--max-buffer",
                format!(
                    "{} cannot hold {units} readahead units of {} (alpha {} ahead, plus one, plus \
                     the one being read) and a read of {}; give at least {}, or a smaller \
                     --alpha or --readahead",
                    cfg.max_buffer,
                    ByteLen(cfg.readahead.map_or(MIN_UNIT_BYTES, |r| r.0)),
                    units - 2,
                    cfg.app_read,
                    least_readably(least)
                ),
            );
        }
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .thread_name("foresight-get")
            .build()?;
        Ok(Client {
            cfg,
            rt,
            notes: Notes::default(),
        })
    }

    /// The same client, its notes (see [`Notes`]) handed to `notes`.
    pub fn with_notes(mut self, notes: Notes) -> Client {
        self.notes = notes;
        self
    }

    /// Downloads `url` into `sink`.
    /// A file replaced on the server before any byte was written is downloaded again from the
    /// start (three attempts in all); once bytes are written, a change is
    /// [`NetError::Changed`], since a writer cannot take them back.
    pub fn get(&self, url: &Url, sink: &mut dyn Write) -> Result<Report, NetError> {
        let mut attempt = 1;
        // The server's figures are the server's, not the file's: asked for once, they serve
        // every start, and a failure to get them is noted once.
        let mut figures = None;
        loop {
            match self.rt.block_on(download(
                self.cfg,
                &self.notes,
                url,
                Some(&mut *sink),
                None,
                &mut figures,
            )) {
                Err(NetError::Changed {
                    written_bytes: 0, ..
                }) if attempt < CHANGED_ATTEMPTS => attempt += 1,
                other => return other,
            }
        }
    }

    /// `reads` reads of `size` bytes at random 4 KiB-aligned offsets of `url` (seeded), to see
    /// what random reads cost: the report's `bytes` is what was asked, `transferred_bytes` what
    /// came over the wire.
    pub fn random_reads(
        &self,
        url: &Url,
        size: ByteLen,
        reads: u32,
        seed: u64,
    ) -> Result<Report, NetError> {
        self.rt.block_on(download(
            self.cfg,
            &self.notes,
            url,
            None,
            Some((size, reads, seed)),
            &mut None,
        ))
    }
}

/// One response, fully received (but for [`Exchange::whole`]).
struct Exchange {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
    timing: ExchangeTiming,
    /// The unread body of a whole file (200) sent in answer to a range, when the request asked
    /// to keep it ([`Pool::first_range_exchange`]); otherwise that body is dropped unread.
    whole: Option<hyper::body::Incoming>,
}

struct Pool {
    authority: String,
    /// The URL's host, as a lookup that fails names it.
    host: String,
    idle: Mutex<Vec<SendRequest<Empty<Bytes>>>>,
    /// Exchanges holding a connection now.
    out: AtomicUsize,
    /// Notified whenever an exchange ends (its connection back in `idle`, or dropped).
    returned: Notify,
    permits: Semaphore,
    epoch: std::time::Instant,
    stream_tag: String,
    timeout: StdDuration,
    notes: Notes,
}

impl Pool {
    fn now(&self) -> Instant {
        Instant(self.epoch.elapsed().as_nanos() as u64)
    }

    /// A pooled idle connection that is still open, if there is one.
    fn pooled(&self) -> Option<SendRequest<Empty<Bytes>>> {
        loop {
            let c = self.idle.lock().expect("pool poisoned").pop()?;
            if !c.is_closed() {
                return Some(c);
            }
        }
    }

    /// A pooled idle connection, or a new one (always a new one when `fresh`), by `deadline`.
    /// With `wait`, and while other exchanges have connections out, it waits (for at most half of
    /// the time left, so that a connect still has the rest) for one of theirs rather than open a
    /// new one: the server may be closing connections beyond its limit, and a new one would only
    /// be closed again.
    async fn connection(
        &self,
        fresh: bool,
        wait: bool,
        deadline: tokio::time::Instant,
    ) -> Result<SendRequest<Empty<Bytes>>, NetError> {
        if !fresh {
            let wait_for_one = async {
                loop {
                    // Registered before looking, so a return in between still wakes this.
                    let returned = self.returned.notified();
                    tokio::pin!(returned);
                    returned.as_mut().enable();
                    if let Some(c) = self.pooled() {
                        return Some(c);
                    }
                    if !wait || self.out.load(Ordering::SeqCst) == 0 {
                        return None;
                    }
                    returned.await;
                }
            };
            let now = tokio::time::Instant::now();
            let wait_until = now + deadline.saturating_duration_since(now) / 2;
            if let Ok(Some(c)) = tokio::time::timeout_at(wait_until, wait_for_one).await {
                return Ok(c);
            }
        }
        // The connect is within the attempt's time too: a server whose accept queue is full (or
        // a host that drops SYNs) would otherwise hold the download for the kernel's SYN
        // retries, over two minutes, whatever `--request-timeout` says.
        let connect = async {
            // Looked up apart from the connect, so that a host name that does not resolve is
            // told from a server that does not answer: it is final (`NetError::Resolve`), not
            // sent again. A lookup that fails now fails the same way a moment later, far more
            // often than a dead server comes back within the retries.
            let addrs: Vec<std::net::SocketAddr> = tokio::net::lookup_host(&self.authority)
                .await
                .map_err(|error| NetError::Resolve {
                    host: self.host.clone(),
                    error,
                })?
                .collect();
            if addrs.is_empty() {
                return Err(NetError::Resolve {
                    host: self.host.clone(),
                    error: std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        "the lookup gave no address",
                    ),
                });
            }
            let tcp = tokio::net::TcpStream::connect(&addrs[..])
                .await
                .map_err(|error| NetError::Connect {
                    addr: self.authority.clone(),
                    error,
                })?;
            let _ = tcp.set_nodelay(true);
            hyper::client::conn::http1::handshake(TokioIo::new(tcp))
                .await
                .map_err(|e| NetError::Connect {
                    addr: self.authority.clone(),
                    error: std::io::Error::other(e),
                })
        };
        let (send, conn) = tokio::time::timeout_at(deadline, connect)
            .await
            .map_err(|_| NetError::Connect {
                addr: self.authority.clone(),
                error: std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("no connection within {:?}", self.timeout),
                ),
            })??;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(send)
    }

    /// One request and its answer, sent once (see [`Pool::exchange_tries`]).
    async fn exchange(
        &self,
        url: &Url,
        method: Method,
        range: Option<ByteRange>,
        if_range: Option<&HeaderValue>,
    ) -> Result<Exchange, NetError> {
        self.exchange_tries(url, method, range, if_range, 1).await
    }

    /// One request and its answer, sent up to `attempts` times: a busy server (503), a connection
    /// that failed or a request that got no complete answer within the request timeout is tried
    /// again, a little later each time ([`retry_pause`]), with a note saying so; anything else is
    /// final. The connection slot is held from the first attempt to the last, so the attempts
    /// follow one another without queueing behind other requests, and the whole costs at most
    /// `attempts` request timeouts and the pauses. A retry goes on a connection the server has
    /// kept, if others are out: the failed one may have been a new connection closed at the
    /// server's limit.
    async fn exchange_tries(
        &self,
        url: &Url,
        method: Method,
        range: Option<ByteRange>,
        if_range: Option<&HeaderValue>,
        attempts: u32,
    ) -> Result<Exchange, NetError> {
        let condition = if_range.map(Condition::IfRange);
        self.tries(url, method, range, condition, attempts, false)
            .await
    }

    /// A `GET` of `range` sent as [`Pool::exchange_tries`] sends it, except that a whole file
    /// (200) in answer keeps its body, unread, in [`Exchange::whole`]: the first range of a
    /// download from a server that refuses `HEAD` is, from a server that ignores ranges, the
    /// download itself.
    async fn first_range_exchange(
        &self,
        url: &Url,
        range: ByteRange,
    ) -> Result<Exchange, NetError> {
        self.tries(url, Method::GET, Some(range), None, REQUEST_ATTEMPTS, true)
            .await
    }

    /// A `GET` of the whole file under `If-None-Match` (or `If-Modified-Since`) with `was`, sent
    /// as [`Pool::exchange_tries`] sends a request: a 304, or the head of a 200 whose body is
    /// not read (the connection carrying it is dropped). See [`confirm_unchanged_by_condition`].
    async fn conditional_exchange(&self, url: &Url, was: &Validator) -> Result<Exchange, NetError> {
        let condition = Some(Condition::Unchanged(was));
        self.tries(url, Method::GET, None, condition, REQUEST_ATTEMPTS, false)
            .await
    }

    /// [`Pool::exchange_tries`] with any [`Condition`], a 200 to a range keeping its body when
    /// `keep_whole`.
    async fn tries(
        &self,
        url: &Url,
        method: Method,
        range: Option<ByteRange>,
        condition: Option<Condition<'_>>,
        attempts: u32,
        keep_whole: bool,
    ) -> Result<Exchange, NetError> {
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| http_errors_of(url)("client closed".into()))?;
        let what = match range {
            Some(r) => format!("bytes {}-{}", r.start.0, r.end().0.saturating_sub(1)),
            None => method.to_string(),
        };
        let began = std::time::Instant::now();
        let mut attempt = 1;
        loop {
            let tried = std::time::Instant::now();
            let r = self
                .attempt(
                    url,
                    method.clone(),
                    range,
                    condition,
                    attempt > 1,
                    keep_whole,
                )
                .await;
            let why = match &r {
                Ok(ex) if ex.status == StatusCode::SERVICE_UNAVAILABLE => ex.status.to_string(),
                Err(e @ (NetError::Connect { .. } | NetError::Http { .. })) => failure_text(e),
                _ => return r,
            };
            if attempt >= attempts {
                return r.map_err(|e| gave_up(e, url, &what, attempts, began.elapsed()));
            }
            self.notes.note(&format!(
                "{url}: {what}: attempt {attempt} of {attempts} failed after {:.1} s ({why}); \
                 sending it again",
                tried.elapsed().as_secs_f64()
            ));
            attempt += 1;
            tokio::time::sleep(retry_pause(attempt)).await;
        }
    }

    /// One attempt of a request: connecting (or taking a pooled connection), sending, and the
    /// whole answer, within one request timeout. With `wait`, the request goes on a connection
    /// that has answered before when other exchanges have one out (see [`Pool::connection`]).
    /// With `keep_whole`, a whole file (200) in answer to a range is handed back unread, its time
    /// bounded from there by the caller. A whole file in answer to a [`Condition::Unchanged`]
    /// look is never read: its head is the answer.
    async fn attempt(
        &self,
        url: &Url,
        method: Method,
        range: Option<ByteRange>,
        condition: Option<Condition<'_>>,
        wait: bool,
        keep_whole: bool,
    ) -> Result<Exchange, NetError> {
        let http_err = http_errors_of(url);
        let deadline = tokio::time::Instant::now() + self.timeout;
        let mut conn = self.connection(false, wait, deadline).await?;
        // Counted out until this exchange ends; its end (the connection back in the pool, or
        // dropped) wakes exchanges waiting for a connection.
        let _out = Out::new(self);
        let head = method == Method::HEAD;
        let mut req = Request::builder()
            .method(method)
            .uri(url.path.as_str())
            .header(header::HOST, url.authority())
            .header(STREAM_HEADER, self.stream_tag.as_str());
        if let Some(r) = range {
            req = req.header(header::RANGE, range_header_for(r));
            if let Some(Condition::IfRange(v)) = condition {
                req = req.header(header::IF_RANGE, v.clone());
            }
        }
        let look = match condition {
            Some(Condition::Unchanged(Validator::Tag(v))) => Some((header::IF_NONE_MATCH, v)),
            Some(Condition::Unchanged(Validator::Date(v))) => Some((header::IF_MODIFIED_SINCE, v)),
            _ => None,
        };
        let looking = look.is_some();
        if let Some((name, v)) = look {
            req = req.header(name, v.clone());
        }
        let req = req
            .body(Empty::<Bytes>::new())
            .map_err(|e| http_err(format!("building the request: {e}")))?;
        let work = async {
            conn.ready()
                .await
                .map_err(|e| http_err(request_failure("connection", &e)))?;
            let sent = self.now();
            let resp = conn
                .send_request(req)
                .await
                .map_err(|e| http_err(request_failure("request failed", &e)))?;
            let first_byte = self.now();
            let (parts, body) = resp.into_parts();
            // A whole file sent in answer to a range request, or to a look at the validator, is
            // not gathered here: the caller reads the file another way (or only wanted the
            // head), and the connection, busy with it, is dropped.
            if (range.is_some() || looking) && parts.status == StatusCode::OK {
                let whole = keep_whole.then_some(body);
                return Ok::<_, NetError>((parts, None, sent, first_byte, whole));
            }
            // A body longer than asked for is a broken server's, not data: it is refused from
            // its announced length, or as soon as it runs past, never gathered whole (a huge
            // `Content-Length` or an endless chunked body would take all the memory there is).
            // (The `Content-Length` of an answer to `HEAD` is the file's; it has no body.)
            let limit = body_limit(range);
            let announced = parts
                .headers
                .get(header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok())
                .filter(|_| !head);
            if let Some(n) = announced.filter(|n| *n > limit) {
                return Err(http_err(format!(
                    "{} announces a {n}-byte body where {limit} bytes at most were asked for",
                    parts.status
                )));
            }
            let body = Limited::new(body, limit as usize)
                .collect()
                .await
                .map_err(|e| {
                    if e.is::<LengthLimitError>() {
                        http_err(format!(
                            "{} sent a body longer than the {limit} bytes at most asked for",
                            parts.status
                        ))
                    } else {
                        http_err(format!("body cut short: {}", with_causes(&*e)))
                    }
                })?
                .to_bytes();
            Ok((parts, Some(body), sent, first_byte, None))
        };
        let (parts, body, sent, first_byte, whole) = tokio::time::timeout_at(deadline, work)
            .await
            .map_err(|_| http_err(format!("no complete answer within {:?}", self.timeout)))??;
        let last_byte = self.now();
        if body.is_some() && reusable(&parts) && !conn.is_closed() {
            self.idle.lock().expect("pool poisoned").push(conn);
        }
        let body = body.unwrap_or_default();
        let server_proc = parts
            .headers
            .get(PROC_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok())
            .map(Duration);
        Ok(Exchange {
            status: parts.status,
            timing: ExchangeTiming {
                sent,
                first_byte,
                last_byte,
                body: ByteLen(body.len() as u64),
                server_proc,
            },
            headers: parts.headers,
            body,
            whole,
        })
    }
}

/// Makes the [`NetError::Http`] errors of a request for `url`, each naming the URL.
fn http_errors_of(url: &Url) -> impl Fn(String) -> NetError + '_ {
    move |message| NetError::Http {
        url: url.to_string(),
        message,
    }
}

/// Makes the [`NetError::Changed`] errors of a look at `url`'s validator taken after the last
/// byte, `written_bytes` having been handed on: the change was seen once the download had ended.
fn changed_once_ended(url: &Url, written_bytes: u64) -> impl Fn(String) -> NetError + '_ {
    move |what| NetError::Changed {
        url: url.to_string(),
        what: format!("{what}, seen once the download had ended"),
        written_bytes,
    }
}

/// What went wrong, without the URL a note or message already names.
fn failure_text(e: &NetError) -> String {
    match e {
        NetError::Http { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

/// `e`, the last of `attempts` failures of the request for `what` of `url`, saying that it was
/// the last and how long all of them took. A failure to connect names the URL and the request
/// too, as a failed answer's message does: the host and port alone do not say which download,
/// or which part of it, failed.
fn gave_up(e: NetError, url: &Url, what: &str, attempts: u32, took: StdDuration) -> NetError {
    let after = if attempts < 2 {
        String::new()
    } else {
        format!(
            " (gave up after {attempts} attempts in {:.1} s)",
            took.as_secs_f64()
        )
    };
    match e {
        NetError::Http { url, message } if attempts >= 2 => NetError::Http {
            url,
            message: format!("{what}: {message}{after}"),
        },
        e @ NetError::Connect { .. } => http_errors_of(url)(format!("{what}: {e}{after}")),
        other => other,
    }
}

/// An error and its causes, outermost first. hyper's messages leave the cause out ("error reading
/// a body from connection"), and the cause (a reset, an end of file before the announced length)
/// is what tells a server that crashed from a network fault.
fn with_causes(e: &(dyn std::error::Error + 'static)) -> String {
    let mut shown = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !shown.contains(&text) {
            shown.push_str(": ");
            shown.push_str(&text);
        }
        cause = c.source();
    }
    shown
}

/// What a request that got no answer head says: the server's close named as such when it is
/// one. A closed connection reads in hyper's words as "channel closed", which says neither who
/// closed it nor why a server might; a server at its connection limit closes new ones at once.
fn request_failure(what: &str, e: &hyper::Error) -> String {
    if e.is_closed() || e.is_incomplete_message() || e.is_canceled() || reset_by_peer(e) {
        format!(
            "the server closed the connection without answering ({}); a server at its \
             connection limit closes new connections at once, so try again later or with a \
             smaller --alpha",
            with_causes(e)
        )
    } else {
        format!("{what}: {}", with_causes(e))
    }
}

/// Whether the connection was reset by the server. A server that closes a connection at once
/// (at its connection limit) while the request is arriving resets it rather than ending it, as
/// a socket closed with unread data does, so before any answer a reset is the same close.
fn reset_by_peer(e: &hyper::Error) -> bool {
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        if c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionReset)
        {
            return true;
        }
        cause = c.source();
    }
    false
}

/// The longest body an answer without a range (the figures document, an error page) may have.
const SMALL_BODY_BYTES: u64 = 64 << 10;

/// The longest body accepted in answer to a request for `range` (or for no range): the range,
/// or a small document such as an error page, whichever is longer.
fn body_limit(range: Option<ByteRange>) -> u64 {
    range.map_or(0, |r| r.len.0).max(SMALL_BODY_BYTES)
}

/// An exchange's count in [`Pool::out`], taken back (and the waiters woken) when it ends.
struct Out<'a>(&'a Pool);

impl<'a> Out<'a> {
    fn new(pool: &'a Pool) -> Out<'a> {
        pool.out.fetch_add(1, Ordering::SeqCst);
        Out(pool)
    }
}

impl Drop for Out<'_> {
    fn drop(&mut self) {
        self.0.out.fetch_sub(1, Ordering::SeqCst);
        self.0.returned.notify_waiters();
    }
}

/// Whether the connection that carried this response may carry another: not when the server said
/// it will close it (`Connection: close`), nor after an HTTP/1.0 answer (HTTP/1.0 closes unless
/// told otherwise). Pooled anyway, it would be handed to the next request, which fails with
/// "channel closed" whenever the close arrives first.
fn reusable(parts: &hyper::http::response::Parts) -> bool {
    let close = parts
        .headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim().eq_ignore_ascii_case("close"));
    !close && parts.version != hyper::Version::HTTP_10
}

/// The most characters of a server's reason for a refusal quoted in an error.
const REASON_CHARS: usize = 300;

/// Why the server refused `url` with `status`, as `: REASON`, or nothing. An answer to `HEAD`
/// has no body, so the server's reason (`foresight serve` says why it will not send a file of
/// /proc, a lookup that failed, a malformed path) never reached the user, who saw only the
/// status. It is asked for once with a `GET`, whose body a refusal carries: quoted when the
/// answer is the same refusal in plain text (at most [`SMALL_BODY_BYTES`] are taken, and
/// [`REASON_CHARS`] quoted), left out otherwise, as by a server whose `GET` would send a file.
async fn refusal_reason(pool: &Pool, url: &Url, status: StatusCode) -> String {
    if !(status.is_client_error() || status.is_server_error()) {
        return String::new();
    }
    let Ok(ex) = pool.exchange(url, Method::GET, None, None).await else {
        return String::new();
    };
    if ex.status != status {
        return String::new();
    }
    quoted_reason(&ex)
}

/// Where a redirect `ex` (a 3xx answer with a `Location`) points, as `: it redirects to LOC,
/// ...`, or nothing. This client follows no redirect (a download's ranges and their validator
/// belong to one URL), and the status alone (`HEAD answered 301 Moved Permanently`, what nginx
/// and Python's http.server answer for a directory's path without its closing `/`) left the user
/// to find out where the file is. A `Location` that is a path on the same server is shown as a
/// whole URL, ready to be given instead; one that is not valid text, or too long to quote
/// ([`REASON_CHARS`]), is left out.
fn redirect_reason(url: &Url, ex: &Exchange) -> String {
    if !ex.status.is_redirection() {
        return String::new();
    }
    let Some(location) = ex
        .headers
        .get(header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|l| !l.is_empty() && l.len() <= REASON_CHARS && !l.contains(char::is_control))
    else {
        return String::new();
    };
    let to = if location.starts_with('/') && !location.starts_with("//") {
        url.with_path(location).to_string()
    } else {
        location.to_string()
    };
    format!(": it redirects to {to}, and redirects are not followed; download that URL instead")
}

/// The plain-text body of a refusal `ex`, as `: REASON` on one line, or nothing: a body that is
/// not `text/plain` in UTF-8, or only repeats the status (`404 Not Found: not found`), or is
/// empty. At most [`REASON_CHARS`] are quoted, control characters dropped: the text is the
/// server's, printed to a terminal.
fn quoted_reason(ex: &Exchange) -> String {
    let plain = ex
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.trim_start().starts_with("text/plain"));
    let text = match std::str::from_utf8(&ex.body) {
        Ok(t) if plain => t.trim(),
        _ => return String::new(),
    };
    let line: String = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .filter(|c| !c.is_control())
        .collect();
    match line.char_indices().nth(REASON_CHARS) {
        _ if line.is_empty()
            || ex
                .status
                .canonical_reason()
                .is_some_and(|r| r.eq_ignore_ascii_case(&line)) =>
        {
            String::new()
        }
        Some((cut, _)) => format!(": {}...", &line[..cut]),
        None => format!(": {line}"),
    }
}

/// Whether a `HEAD` answered `status` may be the method's refusal rather than the file's, so
/// that the file is asked for with a range instead ([`first_range`]). 405 (Method Not Allowed)
/// and 501 (Not Implemented) say so by definition (RFC 9110, sections 15.5.6 and 15.6.2). 403 is
/// what an object store answers a URL presigned for `GET` only: the signature covers the method,
/// and an answer to `HEAD` has no body to say which was refused. A 403 for the file itself (as
/// `foresight serve` refuses a file of /proc) is refused again to the range, and is reported
/// then with that answer's reason, as a refused `HEAD` always was; so no field of the `HEAD`'s
/// answer needs reading to tell the two apart. Any other status is the file's (404, 401, a 5xx
/// but 501): reported at once.
fn head_refused(status: StatusCode) -> bool {
    matches!(
        status,
        StatusCode::METHOD_NOT_ALLOWED | StatusCode::NOT_IMPLEMENTED | StatusCode::FORBIDDEN
    )
}

/// The stream's first readahead unit, whatever the readahead unit: a fresh read is rounded up
/// to it (see `ApsStream`).
const INITIAL_UNIT_BYTES: u64 = 128 << 10;

/// The length of the first range asked for in place of a refused `HEAD`: the stream's first
/// unit as it would be without the server's figures (not yet known: a server that refuses `HEAD`
/// is not likely to publish them), within what `max_buffer` allows a unit.
fn first_range_bytes(cfg: &ClientConfig) -> u64 {
    let for_units = cfg.max_buffer.0.saturating_sub(cfg.app_read.0);
    let unit_cap = (for_units / least_units(cfg.alpha)) / MIN_UNIT_BYTES * MIN_UNIT_BYTES;
    let unit = cfg.readahead.map_or(1 << 20, |r| r.0);
    // Both bounds are constants, the least below the greatest.
    unit.min(unit_cap).clamp(MIN_UNIT_BYTES, INITIAL_UNIT_BYTES)
}

/// What the first range of a file whose `HEAD` was refused showed.
enum FirstRange {
    /// 206: the range's bytes (the whole file when it is shorter), with the file's length from
    /// its `Content-Range`.
    Piece(Exchange, u64),
    /// 200: the server ignores ranges, and this answer, its body unread, is the download.
    Whole(Exchange),
    /// 416 to a range from the first byte: the file is empty.
    Empty(Exchange),
}

/// Asks for `range` (from byte 0) of `url` in place of a `HEAD` answered `head_status`. Any
/// answer but 206, 200 or an empty file's 416 is a refusal: reported as the `HEAD`'s status
/// when it is the same, and with the server's plain-text reason (`quoted_reason`), as
/// `refusal_reason` reports a refused `HEAD`.
async fn first_range(
    pool: &Pool,
    url: &Url,
    range: ByteRange,
    head_status: StatusCode,
) -> Result<FirstRange, NetError> {
    let http_err = http_errors_of(url);
    let what = format!("bytes {}-{}", range.start.0, range.end().0 - 1);
    let ex = pool.first_range_exchange(url, range).await?;
    let sent_range = ex.headers.get(header::CONTENT_RANGE);
    let shown = sent_range.map_or("no Content-Range".into(), |v| {
        format!("Content-Range `{}`", String::from_utf8_lossy(v.as_bytes()))
    });
    match ex.status {
        StatusCode::OK => Ok(FirstRange::Whole(ex)),
        StatusCode::PARTIAL_CONTENT => {
            let got = sent_range.and_then(|v| parse_content_range(v.as_bytes()));
            match got {
                Some((r, Some(len)))
                    if r.start.0 == 0
                        && r.len.0 == range.len.0.min(len)
                        && ex.body.len() as u64 == r.len.0 =>
                {
                    Ok(FirstRange::Piece(ex, len))
                }
                _ => Err(http_err(format!(
                    "HEAD answered {head_status}, so the file's length was to come from the \
                     answer to {what}, which came with {shown} and {} bytes",
                    ex.body.len()
                ))),
            }
        }
        // `bytes */0`: no byte at all. A 416 naming no length says as much of a range from 0.
        StatusCode::RANGE_NOT_SATISFIABLE
            if sent_range.is_none_or(|v| trim_bytes(v.as_bytes()) == b"bytes */0") =>
        {
            Ok(FirstRange::Empty(ex))
        }
        s if s == head_status => Err(http_err(format!(
            "HEAD answered {head_status}{}",
            quoted_reason(&ex)
        ))),
        s => Err(http_err(format!(
            "HEAD answered {head_status}, and GET of {what} answered {s}{}{}",
            if s == StatusCode::RANGE_NOT_SATISFIABLE {
                format!(" with {shown}")
            } else {
                String::new()
            },
            quoted_reason(&ex)
        ))),
    }
}

/// `value` without the spaces and tabs around it.
fn trim_bytes(value: &[u8]) -> &[u8] {
    let start = value
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t'))
        .unwrap_or(value.len());
    let end = value
        .iter()
        .rposition(|b| !matches!(b, b' ' | b'\t'))
        .map_or(start, |i| i + 1);
    &value[start..end]
}

/// The report of an empty file's download from a server that refused `HEAD`: one range asked
/// for (answered 416), no byte.
fn empty_report(started: std::time::Instant, timing: ExchangeTiming) -> Report {
    Report {
        bytes: 0,
        seconds: started.elapsed().as_secs_f64(),
        mib_s: 0.0,
        alpha: 0,
        alpha_max: 0,
        rtt_ms: timing
            .first_byte
            .saturating_since(timing.sent)
            .as_millis_f64(),
        requests: 1,
        wasted_bytes: 0,
        transferred_bytes: 0,
        unit_bytes: 0,
        buffered_peak_bytes: 0,
        path_mib_s: None,
        server: None,
        ranges: true,
    }
}

/// The figures at `/.well-known/foresight`, if the server publishes them.
async fn server_figures(pool: &Pool, url: &Url) -> Option<DeviceFigures> {
    let figures_url = url.with_path(WELL_KNOWN_PATH);
    // Sent once: the figures are a help, not a need. A server without them answers 404 at once;
    // one that fails to answer is said to, as the wait (up to a request timeout) is otherwise
    // unexplained.
    let ex = match pool.exchange(&figures_url, Method::GET, None, None).await {
        Ok(ex) => ex,
        Err(e) => {
            pool.notes.note(&format!(
                "{figures_url}: {}; going on without the server's figures",
                failure_text(&e)
            ));
            return None;
        }
    };
    if ex.status != StatusCode::OK {
        return None;
    }
    let v: serde_json::Value = serde_json::from_slice(&ex.body).ok()?;
    if v.get("server")?.as_str()? != "foresight" {
        return None;
    }
    DeviceFigures::new(
        ByteLen(v.get("max_readahead_bytes")?.as_u64()?),
        Bandwidth::from_bytes_per_s(v.get("avg_bandwidth_bytes_per_s")?.as_f64()?),
        v.get("peak_ratio")?.as_f64()?,
    )
    .ok()
}

type Done = (FetchId, ByteRange, Result<Exchange, NetError>);

/// One download's range requests go out with these: the pool, the URL, the `If-Range` validator
/// (the strong `ETag` of the opening `HEAD`, so that every range, retries included, comes from
/// the version the download began with or the whole new file comes instead), and where answers go.
struct Ask<'a> {
    pool: &'a Arc<Pool>,
    url: &'a Url,
    if_range: Option<&'a HeaderValue>,
    tx: &'a mpsc::Sender<Done>,
}

/// A download's range requests out now: the tasks that send them (dropped on every way out,
/// which stops those still out), where their answers arrive, how many are unanswered, and the
/// bytes those asked for, which count in the download's buffer until they arrive.
struct Requests {
    tasks: tokio::task::JoinSet<()>,
    answers: mpsc::Receiver<Done>,
    in_flight: usize,
    requested_bytes: u64,
}

impl Requests {
    /// Sends every request `stream` has ready.
    fn dispatch(&mut self, stream: &mut ApsStream, ask: &Ask<'_>) {
        // Finished requests are forgotten, so the set holds only those still out.
        while self.tasks.try_join_next().is_some() {}
        while let Some(req) = stream.poll_request() {
            let (pool, url, tx) = (ask.pool.clone(), ask.url.clone(), ask.tx.clone());
            let if_range = ask.if_range.cloned();
            self.in_flight += 1;
            self.requested_bytes += req.range.len.0;
            self.tasks.spawn(async move {
                let r = pool
                    .exchange_tries(
                        &url,
                        Method::GET,
                        Some(req.range),
                        if_range.as_ref(),
                        REQUEST_ATTEMPTS,
                    )
                    .await;
                // The channel is bounded; a full one makes this task wait for the download
                // to take an answer, which it does until it stops (and then the send fails).
                let _ = tx.send((req.id, req.range, r)).await;
            });
        }
    }

    /// The next answer, whose request is then no longer in flight nor its bytes requested;
    /// `None` when every request has stopped.
    async fn next(&mut self) -> Option<Done> {
        let done = self.answers.recv().await?;
        self.in_flight -= 1;
        self.requested_bytes = self.requested_bytes.saturating_sub(done.1.len.0);
        Some(done)
    }
}

/// Whether `pieces` hold every byte of `[from, to)`.
fn covered(pieces: &BTreeMap<u64, Bytes>, from: u64, to: u64) -> bool {
    let mut at = from;
    while at < to {
        match pieces.range(..=at).next_back() {
            Some((s, b)) if s + b.len() as u64 > at => at = s + b.len() as u64,
            _ => return false,
        }
    }
    true
}

/// Hands `bytes` to the application's sink, if it has one (random reads, which only measure,
/// have none), and returns how many were delivered.
fn deliver(sink: &mut Option<&mut dyn Write>, bytes: &[u8]) -> std::io::Result<u64> {
    if let Some(s) = sink.as_mut() {
        s.write_all(bytes)?;
    }
    Ok(bytes.len() as u64)
}

/// Copies `[from, to)` out of `pieces` (which must cover it) into `out`.
fn copy_out(pieces: &BTreeMap<u64, Bytes>, from: u64, to: u64, out: &mut Vec<u8>) {
    let mut at = from;
    while at < to {
        let Some((s, b)) = pieces.range(..=at).next_back() else {
            return;
        };
        let off = (at - s) as usize;
        let end = ((to - s) as usize).min(b.len());
        out.extend_from_slice(&b[off..end]);
        at = s + end as u64;
    }
}

/// One download of `url` into `sink` (or `random` reads of it): the opening `HEAD`, the
/// figures, the ranges and the closing look. `asked_figures` holds the server's figures once
/// asked for (`None` until then), so that a download started over does not ask again.
async fn download(
    cfg: ClientConfig,
    notes: &Notes,
    url: &Url,
    mut sink: Option<&mut dyn Write>,
    random: Option<(ByteLen, u32, u64)>,
    asked_figures: &mut Option<Option<DeviceFigures>>,
) -> Result<Report, NetError> {
    let started = std::time::Instant::now();
    let http_err = http_errors_of(url);
    let pool = Arc::new(Pool {
        authority: url.authority(),
        host: url.host.clone(),
        idle: Mutex::new(Vec::new()),
        out: AtomicUsize::new(0),
        returned: Notify::new(),
        permits: Semaphore::new(cfg.max_connections),
        epoch: started,
        // Unique per download: process, wall clock and a counter.
        stream_tag: format!(
            "{:x}-{:x}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
            STREAM_SEQ.fetch_add(1, Ordering::Relaxed)
        ),
        timeout: cfg.request_timeout,
        notes: notes.clone(),
    });
    // Tried as often as a range request: a server at its connection limit closes new
    // connections at once, and one that has stalled is given as many timeouts, with a note each.
    let mut head = pool
        .exchange_tries(url, Method::HEAD, None, None, REQUEST_ATTEMPTS)
        .await?;
    // A server that refuses `HEAD` (`head_refused`) is asked for the file's first range instead:
    // its `Content-Range` gives the length, and its validators stand in for the `HEAD`'s. `first`
    // holds that range's bytes, and `len` the length it gave.
    let headless = !head.status.is_success() && head_refused(head.status);
    let mut first: Option<(Bytes, u64)> = None;
    if headless {
        let range = ByteRange::new(0, first_range_bytes(&cfg));
        match first_range(&pool, url, range, head.status).await? {
            FirstRange::Piece(ex, len) => {
                first = Some((ex.body.clone(), len));
                head = ex;
            }
            FirstRange::Whole(mut ex) if random.is_none() => {
                let Some(body) = ex.whole.take() else {
                    return Err(http_err(
                        "the whole file's answer came without its body".into(),
                    ));
                };
                let whole = Whole {
                    headers: &ex.headers,
                    body,
                    sent: ex.timing.sent,
                    first_byte: ex.timing.first_byte,
                    permit: None,
                };
                let expect_len = content_length(&ex.headers);
                let terms = WholeTerms {
                    started,
                    expect_len,
                    expect_etag: None,
                    skip_bytes: 0,
                    closing_look: ClosingLook::Conditional,
                };
                return take_whole(&pool, url, whole, sink, terms).await;
            }
            FirstRange::Whole(_) => {
                return Err(http_err(
                    "the server does not honour ranges, so random reads are impossible".into(),
                ))
            }
            FirstRange::Empty(_) if random.is_some() => {
                return Err(http_err(
                    "the file is empty (0 bytes), so random reads of it measure nothing".into(),
                ))
            }
            FirstRange::Empty(ex) => {
                if let Some(s) = sink.as_mut() {
                    s.flush()?;
                }
                return Ok(empty_report(started, ex.timing));
            }
        }
    } else if !head.status.is_success() {
        return Err(http_err(format!(
            "HEAD answered {}{}{}",
            head.status,
            redirect_reason(url, &head),
            refusal_reason(&pool, url, head.status).await
        )));
    }
    // How a whole-file `GET` from here on is checked once it has arrived: a server that refused
    // `HEAD` is asked with a conditional `GET` instead.
    let closing_whole = if headless {
        ClosingLook::Conditional
    } else {
        ClosingLook::Head
    };
    // A first range that holds the whole file is one answer: nothing is put together.
    let whole_in_first = first
        .as_ref()
        .is_some_and(|(b, len)| b.len() as u64 == *len);
    // Once per download, whatever starts it takes (`Client::get`).
    let figures = match *asked_figures {
        Some(figures) => figures,
        None => *asked_figures.insert(server_figures(&pool, url).await),
    };
    // Parts of a file can be put together only under one strong validator (RFC 9110, section
    // 15.3.7.3), and a weak tag can go in no `If-Range` (section 13.1.5): under it, a file
    // rewritten between two ranges (at a size and time that leave the tag as it was, which is
    // what a weak tag warns of) would be delivered as a mix. A tag weak because the file was
    // modified within the second (its `Last-Modified` not a second before the `Date`, as
    // `foresight serve` makes it) is asked for again every `FRESH_TAG_POLL` until it is strong,
    // for at most `FRESH_TAG_WAIT` (`foresight serve` makes it strong some 50 ms after the
    // change on a file system with sub-second times, a second after it otherwise); a tag still
    // weak, or weak for good, gets the file in one `GET`. Random reads keep their bytes only to
    // measure them, and go on with ranges.
    // A server without tags gives a strong validator in its `Last-Modified` only a second after
    // the change (`begun_version`): before, the date is asked for again as a fresh weak tag is.
    let not_yet_strong = |h: &HeaderMap| match begun_version(h) {
        Some(v) => v.is_weak(),
        None => h.contains_key(header::LAST_MODIFIED),
    };
    if random.is_none() && !whole_in_first && not_yet_strong(&head.headers) {
        // Without `HEAD`, the tag is not asked for again: each look would be a range.
        if !headless && modified_within_a_second(&head.headers) {
            let waiting = std::time::Instant::now();
            while not_yet_strong(&head.headers) && waiting.elapsed() < FRESH_TAG_WAIT {
                tokio::time::sleep(FRESH_TAG_POLL).await;
                head = pool
                    .exchange_tries(url, Method::HEAD, None, None, REQUEST_ATTEMPTS)
                    .await?;
                if !head.status.is_success() {
                    return Err(http_err(format!(
                        "HEAD answered {}{}{}",
                        head.status,
                        redirect_reason(url, &head),
                        refusal_reason(&pool, url, head.status).await
                    )));
                }
            }
        }
        if let Some(Validator::Tag(tag)) = begun_version(&head.headers).filter(|v| v.is_weak()) {
            pool.notes.note(&format!(
                "{url}: the server's ETag {} is weak, so ranges of the file cannot be put \
                 together safely; fetching it in one GET",
                String::from_utf8_lossy(tag.as_bytes())
            ));
            let len = first
                .as_ref()
                .map(|f| f.1)
                .or_else(|| content_length(&head.headers));
            let terms = WholeTerms {
                started,
                expect_len: len,
                expect_etag: None,
                skip_bytes: 0,
                closing_look: closing_whole,
            };
            return plain_get(&pool, url, sink, terms).await;
        }
    }
    let len = first
        .as_ref()
        .map(|f| f.1)
        .or_else(|| content_length(&head.headers));
    // A 206 to the first range shows that ranges are honoured.
    let ranges = headless
        || head
            .headers
            .get(header::ACCEPT_RANGES)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.split(',').any(|u| u.trim().eq_ignore_ascii_case("bytes")));
    // The version the download begins with: for a download, a strong tag (see above), or from a
    // server without tags its `Last-Modified` when that is strong, sent in every `If-Range`. Any
    // tag that changes tells of another version.
    let etag = begun_version(&head.headers);
    let (Some(len), true) = (len, ranges) else {
        if random.is_some() {
            return Err(http_err(
                "the server does not honour ranges, so random reads are impossible".into(),
            ));
        }
        // Without a word, the download ran as one GET whatever --alpha asked for, and its report
        // gave an alpha of 0; a weak tag's single GET is noted in the same way.
        pool.notes.note(&if ranges {
            format!(
                "{url}: the server's answer to HEAD gives no length (Content-Length), so ranges \
                 cannot be planned; fetching the file in one GET, without readahead"
            )
        } else {
            format!(
                "{url}: the server does not advertise byte ranges (no `Accept-Ranges: bytes` \
                 in its answer to HEAD); fetching the file in one GET, without readahead"
            )
        });
        let terms = WholeTerms {
            started,
            expect_len: len,
            expect_etag: None,
            skip_bytes: 0,
            closing_look: ClosingLook::Head,
        };
        return plain_get(&pool, url, sink, terms).await;
    };
    // Ranges are put together only under a strong validator (RFC 9110, section 15.3.7.3): with
    // none (no `ETag`, and no `Last-Modified` a second before the `Date`), a file replaced
    // between two ranges by one of the same length was delivered as a mix of both, exit 0.
    // Random reads keep their bytes only to measure them, and go on with ranges.
    if random.is_none() && !whole_in_first && etag.is_none() {
        pool.notes.note(&format!(
            "{url}: the server gives no validator for the file (no ETag, and no Last-Modified \
             a second before its Date), so ranges of it cannot be put together safely; \
             fetching it in one GET, without readahead"
        ));
        let terms = WholeTerms {
            started,
            expect_len: Some(len),
            expect_etag: None,
            skip_bytes: 0,
            closing_look: closing_whole,
        };
        return plain_get(&pool, url, sink, terms).await;
    }
    // As with no reads at all, a report of reads that moved nothing would pass for a measurement.
    if random.is_some() && len == 0 {
        return Err(http_err(
            "the file is empty (0 bytes), so random reads of it measure nothing".into(),
        ));
    }
    // The server's unit is held to the bounds of `--readahead`, and to what `max_buffer` holds
    // at the least alpha: a range of one unit is gathered whole in memory, and a published figure
    // is the network's word, not the user's. (`Client::new` checked that `--readahead` fits.)
    let for_units = cfg.max_buffer.0.saturating_sub(cfg.app_read.0);
    let unit_cap = (for_units / least_units(cfg.alpha)) / MIN_UNIT_BYTES * MIN_UNIT_BYTES;
    let unit = cfg
        .readahead
        .or(figures.map(|f| ByteLen(f.max_readahead.0.clamp(MIN_UNIT_BYTES, MAX_UNIT_BYTES))))
        .unwrap_or(ByteLen::mib(1));
    let unit = ByteLen(unit.0.min(unit_cap).max(MIN_UNIT_BYTES));
    // An automatic alpha keeps its `alpha + 2` units within `max_buffer`.
    let max_alpha = cfg
        .max_alpha
        .min(u32::try_from((for_units / unit.0).saturating_sub(2)).unwrap_or(u32::MAX))
        .max(1);
    let aps_cfg = ApsConfig {
        max_readahead: unit,
        initial_readahead: ByteLen(unit.0.min(INITIAL_UNIT_BYTES)),
        alpha: cfg.alpha,
        max_alpha,
        peak_ratio: cfg.peak_ratio,
        device: figures,
        rtt_hint: None,
        fetch_demand: true,
    };
    let mut stream = ApsStream::new(aps_cfg, ByteLen(len)).map_err(|e| NetError::Setting {
        key: "--alpha/--readahead",
        message: e.to_string(),
    })?;
    // The HEAD (or the first range) is the paper's create-stream request: its round trip, less
    // the server's time.
    stream.observe_exchange(head.timing);
    // Room for the answers of as many requests as alpha keeps out, and of the demand beside
    // them; more requests out than that wait to hand theirs over.
    let answers_max =
        usize::try_from(max_alpha).map_or(1 << 16, |a| a.saturating_add(2).min(1 << 16));
    let (tx, answers) = mpsc::channel::<Done>(answers_max);
    let mut requests = Requests {
        tasks: tokio::task::JoinSet::new(),
        answers,
        in_flight: 0,
        requested_bytes: 0,
    };
    // Readahead bytes received and not yet handed on.
    let mut held_bytes = 0u64;
    let mut buffered_peak = 0u64;
    let mut delivered = 0u64;
    let mut transferred = 0u64;
    let mut alpha_max = stream.alpha();
    let ask = Ask {
        pool: &pool,
        url,
        if_range: etag.as_ref().and_then(Validator::for_if_range),
        tx: &tx,
    };
    let check = Checker {
        url,
        len,
        etag: etag.as_ref(),
    };
    let mut next_seq = 0u64;
    // The first range's bytes are the application's first read (random reads only count them):
    // the stream then meets its first read at their end, a fresh read there as at 0. They are
    // held, not written, until another answer has been checked against their validator (the
    // next read's), or the download turns out to be the first range alone: a file replaced just
    // after the first range then fails with nothing written, and `Client::get` starts over, as
    // when a `HEAD` opened the download. At most one first range (`first_range_bytes`) is held,
    // counted in `held_bytes`.
    let mut held_first: Option<Bytes> = None;
    if let Some((body, _)) = &first {
        transferred += body.len() as u64;
        if random.is_none() {
            held_bytes += body.len() as u64;
            next_seq = body.len() as u64;
            held_first = Some(body.clone());
        }
    }
    if let Some((size, n, seed)) = random {
        let mut rng = Rng::new(seed);
        let span = len.saturating_sub(size.0);
        // Pieces received and not yet passed, keyed by (first byte, fetch): those of the read
        // being served that arrived before the bytes ahead of them, and the stream's readahead
        // beyond it, which a read continuing this one takes (the stream counts on those bytes
        // and does not ask for them again). A piece of the read being served keeps its
        // completion until the read takes it, so that the stream's demand in flight (at most
        // `alpha + 1` units) counts it and no more is asked for meanwhile; a read of any size
        // then holds what a download does, never its size.
        let mut ahead: BTreeMap<(u64, FetchId), (Bytes, Option<ExchangeTiming>)> = BTreeMap::new();
        // The stream's window ahead of the reader holds the requests it made from the read that
        // began it (a read not continuing the last one) on: ids from `window_first_id`. Older
        // requests still out belong to windows left behind, and are kept only for the bytes of
        // the read being served.
        let mut window_first_id = 0u64;
        let mut last_to: Option<u64> = None;
        for _ in 0..n {
            let want = ByteRange::new(rng.below(span + 1) & !4095, size.0.min(len));
            let (from, to) = (want.start.0, want.end().0);
            if last_to != Some(from) {
                // Ids are handed out from 0, one per request.
                window_first_id = stream.requests();
            }
            stream.on_read(want);
            // What neither this read nor the stream's window covers is not wanted any more.
            let window_end = to + stream.window_ahead().0;
            let in_window =
                |s: u64, id: FetchId| s >= to && s < window_end && id.0 >= window_first_id;
            ahead.retain(|&(s, id), (body, timing)| {
                let e = s + body.len() as u64;
                let keep = (s < to && e > from) || (e > to && in_window(s.max(to), id));
                if !keep {
                    held_bytes -= body.len() as u64;
                    if let Some(t) = timing.take() {
                        stream.on_complete(id, Some(t));
                    }
                }
                keep
            });
            requests.dispatch(&mut stream, &ask);
            buffered_peak = buffered_peak.max(held_bytes + requests.requested_bytes);
            let mut at = from;
            while at < to {
                // Hand on whatever is contiguous from `at`, reporting each piece as it is taken.
                loop {
                    let mut reach = at;
                    for (&(s, id), (body, timing)) in ahead.range_mut(..=(at, FetchId(u64::MAX))) {
                        let e = s + body.len() as u64;
                        if e > at {
                            reach = reach.max(e);
                            if let Some(t) = timing.take() {
                                stream.on_complete(id, Some(t));
                            }
                        }
                    }
                    if reach == at {
                        break;
                    }
                    at = reach.min(to);
                    if at >= to {
                        break;
                    }
                }
                // What is passed is handed on; a piece reaching beyond the read stays for the next.
                ahead.retain(|&(s, _), (body, timing)| {
                    let keep = s + body.len() as u64 > at || timing.is_some();
                    if !keep {
                        held_bytes -= body.len() as u64;
                    }
                    keep
                });
                alpha_max = alpha_max.max(stream.alpha());
                requests.dispatch(&mut stream, &ask);
                buffered_peak = buffered_peak.max(held_bytes + requests.requested_bytes);
                if at >= to {
                    break;
                }
                if requests.in_flight == 0 {
                    // Nothing is on its way: the stream holds back the demand for `at` while the
                    // pieces kept for this read count as in flight. Reporting them lets it go.
                    let mut released = false;
                    for (&(_, id), (_, timing)) in ahead.iter_mut() {
                        if let Some(t) = timing.take() {
                            stream.on_complete(id, Some(t));
                            released = true;
                        }
                    }
                    requests.dispatch(&mut stream, &ask);
                    if requests.in_flight == 0 {
                        // `ask` holds a sender, so waiting would never end.
                        return Err(http_err(format!(
                            "random read {want}: bytes from {at} on were never asked for{}",
                            if released {
                                ""
                            } else {
                                " (nothing was held back)"
                            }
                        )));
                    }
                }
                let Some((id, range, result)) = requests.next().await else {
                    return Err(http_err("all requests stopped".into()));
                };
                let (body, timing) = match check.answer(range, result?, delivered)? {
                    Answered::Piece(body, timing) => (body, timing),
                    Answered::Whole => {
                        return Err(http_err(format!(
                            "asked for {range} and got the whole file (200): the server does not \
                             honour ranges, so random reads are impossible"
                        )))
                    }
                };
                transferred += body.len() as u64;
                let (s, e) = (range.start.0, range.end().0);
                if e > at && s < to {
                    held_bytes += body.len() as u64;
                    ahead.insert((s, id), (body, Some(timing)));
                } else if in_window(s, id) {
                    // Readahead beyond this read: a read that continues it counts on these bytes.
                    stream.on_complete(id, Some(timing));
                    held_bytes += body.len() as u64;
                    ahead.insert((s, id), (body, None));
                } else {
                    // Another read's bytes (a readahead that came late): not this read's to hold.
                    stream.on_complete(id, Some(timing));
                }
            }
            // The pieces this read has passed, unless they reach beyond it.
            ahead.retain(|&(s, id), (body, timing)| {
                let keep = s + body.len() as u64 > to;
                if !keep {
                    held_bytes -= body.len() as u64;
                    if let Some(t) = timing.take() {
                        stream.on_complete(id, Some(t));
                    }
                }
                keep
            });
            last_to = Some(to);
            delivered += to - from;
        }
    } else {
        let mut pieces: BTreeMap<u64, Bytes> = BTreeMap::new();
        let mut out = Vec::new();
        while next_seq < len {
            let want = ByteRange::new(next_seq, cfg.app_read.0.min(len - next_seq));
            stream.on_read(want);
            requests.dispatch(&mut stream, &ask);
            buffered_peak = buffered_peak.max(held_bytes + requests.requested_bytes);
            let (from, to) = (want.start.0, want.end().0);
            while !covered(&pieces, from, to) {
                let Some((id, range, result)) = requests.next().await else {
                    return Err(http_err("all requests stopped".into()));
                };
                let (body, timing) = match check.answer(range, result?, delivered)? {
                    Answered::Piece(body, timing) => (body, timing),
                    Answered::Whole => {
                        // The whole file, of the version begun with, in answer to a range (RFC
                        // 9110 allows it): ranges are not honoured after all. The file is read
                        // in one plain GET, from where the application has got to (the first
                        // range's bytes, confirmed by this answer, written first).
                        requests.tasks.abort_all();
                        if let Some(b) = held_first.take() {
                            deliver(&mut sink, &b)?;
                        }
                        let terms = WholeTerms {
                            started,
                            expect_len: Some(len),
                            expect_etag: etag.as_ref(),
                            skip_bytes: next_seq,
                            closing_look: closing_whole,
                        };
                        return plain_get(&pool, url, sink, terms).await;
                    }
                };
                transferred += body.len() as u64;
                held_bytes += body.len() as u64;
                pieces.insert(range.start.0, body);
                stream.on_complete(id, Some(timing));
                alpha_max = alpha_max.max(stream.alpha());
                requests.dispatch(&mut stream, &ask);
                buffered_peak = buffered_peak.max(held_bytes + requests.requested_bytes);
            }
            // An answer has been checked by now: the first range's bytes are of its version.
            if let Some(b) = held_first.take() {
                delivered += deliver(&mut sink, &b)?;
            }
            out.clear();
            copy_out(&pieces, from, to, &mut out);
            delivered += deliver(&mut sink, &out)?;
            // Drop what the reader has passed.
            pieces.retain(|s, b| s + b.len() as u64 > to);
            held_bytes = pieces.values().map(|b| b.len() as u64).sum();
            next_seq = to;
        }
        // The download was the first range alone.
        if let Some(b) = held_first.take() {
            delivered += deliver(&mut sink, &b)?;
        }
    }
    // Let the requests still out arrive, so the transfer count is honest.
    while requests.in_flight > 0 {
        let Some((_, _, result)) = requests.next().await else {
            break;
        };
        if let Ok(ex) = result {
            transferred += ex.body.len() as u64;
        }
    }
    if let Some(s) = sink.as_mut() {
        s.flush()?;
    }
    if random.is_none() && !headless {
        confirm_unchanged(&pool, url, etag.as_ref(), Some(len), delivered).await?;
    } else if random.is_none() {
        confirm_unchanged_by_range(&pool, url, etag.as_ref(), len, delivered).await?;
    }
    let seconds = started.elapsed().as_secs_f64();
    Ok(Report {
        bytes: delivered,
        seconds,
        mib_s: delivered as f64 / (1u64 << 20) as f64 / seconds.max(1e-9),
        alpha: stream.alpha(),
        alpha_max,
        rtt_ms: stream.rtt().map_or(0.0, |d| d.as_millis_f64()),
        requests: stream.requests() + u64::from(headless),
        wasted_bytes: transferred.saturating_sub(delivered),
        transferred_bytes: transferred,
        unit_bytes: unit.0,
        buffered_peak_bytes: buffered_peak,
        path_mib_s: stream.path_rate().map(|r| r.as_mib_s()),
        server: figures,
        ranges: true,
    })
}

/// What the answer to a range request held.
enum Answered {
    /// The range's bytes, and the exchange's timing.
    Piece(Bytes, ExchangeTiming),
    /// The whole file (200) of the version the download began with: the server does not honour
    /// ranges after all.
    Whole,
}

/// How an answer to a range request is checked against the file the download began with: its
/// length and, when the server sent one, its entity tag.
struct Checker<'a> {
    url: &'a Url,
    len: u64,
    etag: Option<&'a Validator>,
}

/// The validator a download begins with, and the field it came in. The field is remembered rather
/// than guessed from the value's form: a server may send a tag without its quotes (`ETag: one`),
/// which read as a date would be compared with the answers' `Last-Modified` instead of their
/// `ETag`, and a replaced file would pass for the one the download began with.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Validator {
    /// The `ETag`, as sent (weak or strong, quoted or not).
    Tag(HeaderValue),
    /// A strong `Last-Modified`, from a server that sends no `ETag`.
    Date(HeaderValue),
}

/// A precondition a request carries.
#[derive(Clone, Copy, Debug)]
enum Condition<'a> {
    /// `If-Range` (sent with a range only): the range if the file is still that version, else
    /// the whole file.
    IfRange(&'a HeaderValue),
    /// `If-None-Match` with a tag, `If-Modified-Since` with a date: 304 if the file is still that
    /// version (RFC 9110, sections 13.1.2 and 13.1.3), else the whole file.
    Unchanged(&'a Validator),
}

impl Validator {
    /// Whether this is a weak tag (`W/`), under which parts cannot be put together.
    fn is_weak(&self) -> bool {
        matches!(self, Validator::Tag(v) if v.as_bytes().starts_with(b"W/"))
    }

    /// What goes in `If-Range`: anything but a weak tag (RFC 9110, section 13.1.5).
    fn for_if_range(&self) -> Option<&HeaderValue> {
        match self {
            Validator::Tag(v) if v.as_bytes().starts_with(b"W/") => None,
            Validator::Tag(v) | Validator::Date(v) => Some(v),
        }
    }
}

/// How long a download waits at most, asking again every [`FRESH_TAG_POLL`], for a tag that was
/// weak because its file was modified within the second to turn strong: a `Last-Modified` a
/// second before the answer's date is strong (RFC 9110, section 8.8.2.2), and `foresight
/// serve`'s tags turn strong a second after the change at the latest (some 50 ms after it on a
/// file system whose times show sub-second figures).
const FRESH_TAG_WAIT: StdDuration = StdDuration::from_secs(1);

/// How often a weak tag of a file modified within the second is asked for again, for at most
/// [`FRESH_TAG_WAIT`]: a `HEAD` each time, ten at most. Before, the download waited the whole
/// second once, so a file modified just before cost every download of it a second more, where
/// `foresight serve`'s tag is strong after some 50 ms.
const FRESH_TAG_POLL: StdDuration = StdDuration::from_millis(100);

/// The `Content-Length` of `headers`, if it is a number.
fn content_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
}

/// Whether `headers` say the file was modified less than a second before the answer: its
/// `Last-Modified` is not a second before its `Date` (in whole seconds, so within two).
fn modified_within_a_second(headers: &HeaderMap) -> bool {
    let date = |name| {
        let v = headers.get(name)?.to_str().ok()?;
        let now_s = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        parse_http_date(v, year_of(now_s))
    };
    match (date(header::LAST_MODIFIED), date(header::DATE)) {
        (Some(modified_s), Some(date_s)) => modified_s + 1 >= date_s,
        _ => false,
    }
}

/// What tells the version a download begins with from later ones, from the opening `HEAD`'s
/// `headers`: its `ETag`, or, from a server that sends none, its `Last-Modified` when that is a
/// strong validator, at least a second before the answer's `Date` (RFC 9110, sections 8.8.2.2
/// and 13.1.5, which allow a date in `If-Range` only then). `None` when there is neither.
fn begun_version(headers: &HeaderMap) -> Option<Validator> {
    if let Some(tag) = headers.get(header::ETAG) {
        return Some(Validator::Tag(tag.clone()));
    }
    let modified = headers.get(header::LAST_MODIFIED)?;
    let now_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let date_s = parse_http_date(headers.get(header::DATE)?.to_str().ok()?, year_of(now_s))?;
    let modified_s = parse_http_date(modified.to_str().ok()?, year_of(date_s))?;
    (modified_s < date_s).then(|| Validator::Date(modified.clone()))
}

/// Asks for the file's validator once more after the last byte of a download arrived, and fails
/// the download ([`NetError::Changed`], `written_bytes` handed on) if it is not `was`, the one
/// the download began with, or the length is not `len`. A file rewritten in place while a
/// server sent a response of it may have sent bytes of both versions under the old headers; the
/// validators sent with each answer were decided before its bytes were read, so only a look
/// after the last byte sees such a rewrite. It does as long as the server's validator moves
/// with every write (a modification time of finer granularity than the time between the
/// download's first `HEAD` and the rewrite): a write made before the server read a byte moved
/// the time before this `HEAD` was answered. `foresight serve` cuts such a response itself;
/// other servers (nginx, an object store) send it whole, and a range download from them was
/// delivered as a mix of two versions, exit code 0. Nothing to compare with (`was` `None`), the
/// look is skipped. One request more per download, a round trip.
async fn confirm_unchanged(
    pool: &Pool,
    url: &Url,
    was: Option<&Validator>,
    len: Option<u64>,
    written_bytes: u64,
) -> Result<(), NetError> {
    if was.is_none() {
        return Ok(());
    }
    let changed = changed_once_ended(url, written_bytes);
    let head = pool
        .exchange_tries(url, Method::HEAD, None, None, REQUEST_ATTEMPTS)
        .await?;
    if !head.status.is_success() {
        return Err(http_errors_of(url)(format!(
            "HEAD answered {} once the download had ended, so whether the file changed \
             meanwhile is unknown",
            head.status
        )));
    }
    if let Some(what) = changed_tag(was, &head.headers) {
        return Err(changed(what));
    }
    if let (Some(was), Some(now)) = (len, content_length(&head.headers)) {
        if was != now {
            return Err(changed(format!(
                "its length was {was} bytes and is now {now}"
            )));
        }
    }
    Ok(())
}

/// [`confirm_unchanged`] for a server that refuses `HEAD`: the look is a `GET` of the file's first
/// byte (`Range: bytes=0-0`) carrying `was` in `If-Range`, so the server itself compares the
/// validator. A 206 is the version begun with (its validator and length are still checked, as a
/// range's are, for a server that ignores `If-Range`); a 200 is the server sending the whole of
/// another version because `If-Range` failed: its body is not read (`Pool::attempt` drops the
/// connection carrying it) and the download fails as [`NetError::Changed`], as after the `HEAD`.
/// Any other answer leaves the download unvouched for, an error as a failed `HEAD` is. A weak tag
/// goes in no `If-Range` (RFC 9110, section 13.1.5) and nothing (`was` `None`) has nothing to
/// compare: no look then. One request more per download, a round trip and at most one byte.
async fn confirm_unchanged_by_range(
    pool: &Pool,
    url: &Url,
    was: Option<&Validator>,
    len: u64,
    written_bytes: u64,
) -> Result<(), NetError> {
    let Some(if_range) = was.and_then(Validator::for_if_range) else {
        return Ok(());
    };
    let changed = changed_once_ended(url, written_bytes);
    let look = ByteRange::new(0, 1);
    let ex = pool
        .exchange_tries(
            url,
            Method::GET,
            Some(look),
            Some(if_range),
            REQUEST_ATTEMPTS,
        )
        .await?;
    if !matches!(ex.status, StatusCode::OK | StatusCode::PARTIAL_CONTENT) {
        return Err(http_errors_of(url)(format!(
            "GET of bytes 0-0 under If-Range answered {} once the download had ended, so \
             whether the file changed meanwhile is unknown",
            ex.status
        )));
    }
    if let Some(what) = changed_tag(was, &ex.headers) {
        return Err(changed(what));
    }
    if ex.status == StatusCode::OK {
        return Err(changed(format!(
            "its validator {} no longer matched: the whole file came (200) in answer to \
             If-Range",
            String::from_utf8_lossy(if_range.as_bytes())
        )));
    }
    let now = ex
        .headers
        .get(header::CONTENT_RANGE)
        .and_then(|v| parse_content_range(v.as_bytes()))
        .and_then(|(_, l)| l);
    if let Some(now) = now.filter(|&n| n != len) {
        return Err(changed(format!(
            "its length was {len} bytes and is now {now}"
        )));
    }
    Ok(())
}

/// [`confirm_unchanged`] for a whole-file download from a server that refuses `HEAD`, where a
/// one-byte range under `If-Range` proves nothing: a server that ignores ranges answers it with
/// the whole file (200) whether or not the file changed. The look is a `GET` of the file under
/// `If-None-Match` with the tag `was` (compared weakly by the server, RFC 9110, section 13.1.2,
/// so a weak tag can be asked about too), or `If-Modified-Since` with its date (section
/// 13.1.3). A 304 is the version begun with. A 200 is the server's answer that the condition
/// failed, or a server that ignores conditions: either way its head carries the file's present
/// validator and length, compared as the closing `HEAD`'s are, and its body is not read (the
/// connection carrying it is dropped). So a 200 fails the download only when it shows another
/// version. Any other answer leaves the download unvouched for, an error as a failed `HEAD` is.
/// Without a validator (`was` `None`) nothing can be compared: no look. A date has the
/// closing `HEAD`'s limit (a rewrite within the same second as the modification before it keeps
/// it, and is not seen), and one more: a file replaced by one modified earlier is "not modified
/// since" to the server, and its 304 is taken for the file begun with unless it carries the new
/// `Last-Modified`.
async fn confirm_unchanged_by_condition(
    pool: &Pool,
    url: &Url,
    was: Option<&Validator>,
    len: u64,
    written_bytes: u64,
) -> Result<(), NetError> {
    let Some(validator) = was else {
        return Ok(());
    };
    let changed = changed_once_ended(url, written_bytes);
    let ex = pool.conditional_exchange(url, validator).await?;
    let asked = match validator {
        Validator::Tag(_) => "If-None-Match",
        Validator::Date(_) => "If-Modified-Since",
    };
    if !matches!(ex.status, StatusCode::OK | StatusCode::NOT_MODIFIED) {
        return Err(http_errors_of(url)(format!(
            "GET under {asked} answered {} once the download had ended, so whether the file \
             changed meanwhile is unknown",
            ex.status
        )));
    }
    if let Some(what) = changed_tag(was, &ex.headers) {
        return Err(changed(what));
    }
    // A 304 carries no length of its own (its `Content-Length`, if any, may be the file's).
    if ex.status == StatusCode::OK {
        if let Some(now) = content_length(&ex.headers).filter(|&n| n != len) {
            return Err(changed(format!(
                "its length was {len} bytes and is now {now}"
            )));
        }
    }
    Ok(())
}

/// What changed when `headers` carry another validator than `was`, the one the download began
/// with (neither missing): another entity tag, or another `Last-Modified` when the download
/// began with that date. Tags are compared weakly, and that is enough: this only detects another
/// version. Whether parts may be put together is settled before: a download does so only under
/// a strong tag, sent in every range's `If-Range`, so the server's strong comparison vouches for
/// each part (a download begun under a weak tag is one `GET`). Random reads may begin under a
/// weak tag, which `foresight serve` sends strong for the same version once its timestamps cannot
/// repeat (`server::strong_after`: some 50 ms later, a second on whole-second times): compared
/// strictly, that would be a needless failure.
fn changed_tag(was: Option<&Validator>, headers: &HeaderMap) -> Option<String> {
    let (name, field, was) = match was? {
        Validator::Tag(v) => (header::ETAG, "ETag", v),
        Validator::Date(v) => (header::LAST_MODIFIED, "Last-Modified", v),
    };
    let now = headers.get(&name)?;
    let opaque = |v: &HeaderValue| -> Vec<u8> {
        let b = v.as_bytes();
        b.strip_prefix(b"W/").unwrap_or(b).to_vec()
    };
    let differ = if name == header::ETAG {
        opaque(was) != opaque(now)
    } else {
        was != now
    };
    differ.then(|| {
        format!(
            "its {field} was {} and is now {}",
            String::from_utf8_lossy(was.as_bytes()),
            String::from_utf8_lossy(now.as_bytes())
        )
    })
}

impl Checker<'_> {
    /// Checks the answer to a request for `range`, `written_bytes` having been handed on so far.
    fn answer(
        &self,
        range: ByteRange,
        ex: Exchange,
        written_bytes: u64,
    ) -> Result<Answered, NetError> {
        let http_err = http_errors_of(self.url);
        let changed = |what: String| NetError::Changed {
            url: self.url.to_string(),
            what,
            written_bytes,
        };
        // A 200 under `If-Range`, or a 206 from a server that ignores it, of another version:
        // put together with the ranges received so far, the bytes would be neither file.
        if matches!(ex.status, StatusCode::OK | StatusCode::PARTIAL_CONTENT) {
            if let Some(what) = changed_tag(self.etag, &ex.headers) {
                return Err(changed(what));
            }
        }
        if ex.status == StatusCode::OK {
            return Ok(Answered::Whole);
        }
        if ex.status != StatusCode::PARTIAL_CONTENT {
            return Err(http_err(format!(
                "asked for {range} and got {} instead of 206{}",
                ex.status,
                quoted_reason(&ex)
            )));
        }
        let sent_range = ex.headers.get(header::CONTENT_RANGE);
        let got = sent_range.and_then(|v| parse_content_range(v.as_bytes()));
        if got.map(|g| g.0) != Some(range) || ex.body.len() as u64 != range.len.0 {
            // Shown as the server wrote it: that is what its operator can look for.
            let sent_range = sent_range.map_or("no Content-Range".into(), |v| {
                format!("Content-Range `{}`", String::from_utf8_lossy(v.as_bytes()))
            });
            return Err(http_err(format!(
                "asked for {range}, got {sent_range} and {} bytes",
                ex.body.len()
            )));
        }
        // The bytes come from a file of another length than the one the download began with:
        // it was replaced or resized on the server (by a server that sends no entity tag).
        if let Some(now) = got.and_then(|g| g.1).filter(|&n| n != self.len) {
            return Err(changed(format!(
                "its length was {} bytes and is now {now}",
                self.len
            )));
        }
        Ok(Answered::Piece(ex.body, ex.timing))
    }
}

/// How many times a download starts over when the file changes on the server before any of its
/// bytes was handed on: the first time and two more.
const CHANGED_ATTEMPTS: u32 = 3;

/// What a download's whole-file answer is held to, and what is done after it ([`plain_get`],
/// [`take_whole`]).
struct WholeTerms<'a> {
    /// When the download began, for its report.
    started: std::time::Instant,
    /// The file's length, when known beforehand; the answer must bring exactly it.
    expect_len: Option<u64>,
    /// The validator of the version the bytes already handed on belong to.
    expect_etag: Option<&'a Validator>,
    /// The bytes the application already has, dropped from the front of the answer.
    skip_bytes: u64,
    /// How the validator is asked for again once the body has arrived.
    closing_look: ClosingLook,
}

/// How a whole-file download looks at the file's validator once its body has arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ClosingLook {
    /// A `HEAD` ([`confirm_unchanged`]).
    Head,
    /// A conditional `GET`, for a server that refuses `HEAD` ([`confirm_unchanged_by_condition`]).
    Conditional,
}

/// The file in one `GET` without a range (the server does not honour ranges), streamed to `sink`
/// as it arrives: memory stays bounded whatever the file's length, and the request timeout
/// bounds the time without data rather than the whole transfer. The first `terms.skip_bytes` (those
/// the application already has) are dropped; `terms.expect_len`, when known, is checked. With
/// the validator is asked for again once the body has arrived, as `terms.closing_look` says: a
/// `HEAD` ([`confirm_unchanged`]), or for a server that refuses `HEAD` a conditional `GET`
/// ([`confirm_unchanged_by_condition`]; a one-byte range would be answered with the whole file
/// too, by a server that ignores ranges, which is no sign of a change).
async fn plain_get(
    pool: &Pool,
    url: &Url,
    sink: Option<&mut dyn Write>,
    terms: WholeTerms<'_>,
) -> Result<Report, NetError> {
    let http_err = http_errors_of(url);
    let idle = pool.timeout;
    let _permit = pool
        .permits
        .acquire()
        .await
        .map_err(|_| http_err("client closed".into()))?;
    // Sent up to `REQUEST_ATTEMPTS` times, each time on a new connection, while no byte of an
    // answer has come (a kept-alive connection the server closed, a reset, no answer head
    // within the request timeout, a 503); a note says each time why.
    let began = std::time::Instant::now();
    let mut attempt = 0;
    let (resp, sent, first_byte) = loop {
        attempt += 1;
        let sent = pool.now();
        let tried = std::time::Instant::now();
        let deadline = tokio::time::Instant::now() + idle;
        let ask = async {
            // A retry never takes a pooled connection: the last one failed for a reason.
            let mut conn = pool.connection(attempt > 1, false, deadline).await?;
            conn.ready()
                .await
                .map_err(|e| http_err(request_failure("connection", &e)))?;
            let req = Request::builder()
                .method(Method::GET)
                .uri(url.path.as_str())
                .header(header::HOST, url.authority())
                .header(STREAM_HEADER, pool.stream_tag.as_str())
                .body(Empty::<Bytes>::new())
                .map_err(|e| http_err(format!("building the request: {e}")))?;
            conn.send_request(req)
                .await
                .map_err(|e| http_err(request_failure("request failed", &e)))
        };
        let r = tokio::time::timeout_at(deadline, ask)
            .await
            .unwrap_or_else(|_| Err(http_err(format!("no answer within {idle:?}"))))
            // A busy server's 503 is sent again, as for the `HEAD` and ranges: its body is not
            // the file, and the connection carrying it is dropped.
            .and_then(|resp| {
                if resp.status() == StatusCode::SERVICE_UNAVAILABLE {
                    Err(http_err(format!("GET answered {}", resp.status())))
                } else {
                    Ok(resp)
                }
            });
        match r {
            Ok(resp) => break (resp, sent, pool.now()),
            // Nothing of an answer has arrived, so nothing was handed on: safe to send again.
            Err(e @ (NetError::Connect { .. } | NetError::Http { .. }))
                if attempt < REQUEST_ATTEMPTS =>
            {
                pool.notes.note(&format!(
                    "{url}: GET: attempt {attempt} of {REQUEST_ATTEMPTS} failed after {:.1} s \
                     ({}); sending it again",
                    tried.elapsed().as_secs_f64(),
                    failure_text(&e)
                ));
                tokio::time::sleep(retry_pause(attempt + 1)).await;
            }
            Err(e) => {
                return Err(gave_up(
                    e,
                    url,
                    "GET",
                    if attempt < REQUEST_ATTEMPTS {
                        1
                    } else {
                        attempt
                    },
                    began.elapsed(),
                ))
            }
        }
    };
    if resp.status() != StatusCode::OK {
        return Err(http_err(format!("GET answered {}", resp.status())));
    }
    let (parts, body) = resp.into_parts();
    let whole = Whole {
        headers: &parts.headers,
        body,
        sent,
        first_byte,
        permit: Some(_permit),
    };
    take_whole(pool, url, whole, sink, terms).await
}

/// A whole file's answer (200) whose body is still to be read, and when it was asked for and
/// its head came.
struct Whole<'a> {
    headers: &'a HeaderMap,
    body: hyper::body::Incoming,
    sent: Instant,
    first_byte: Instant,
    /// The connection slot the answer holds until its body has arrived, if it holds one.
    permit: Option<tokio::sync::SemaphorePermit<'a>>,
}

/// Reads the body of `whole` into `sink` as it arrives, as [`plain_get`] describes.
async fn take_whole(
    pool: &Pool,
    url: &Url,
    whole: Whole<'_>,
    mut sink: Option<&mut dyn Write>,
    terms: WholeTerms<'_>,
) -> Result<Report, NetError> {
    let WholeTerms {
        started,
        expect_len,
        expect_etag,
        skip_bytes: skip,
        closing_look,
    } = terms;
    let http_err = http_errors_of(url);
    let idle = pool.timeout;
    let Whole {
        headers,
        mut body,
        sent,
        first_byte,
        permit,
    } = whole;
    // The bytes already handed on are the version the download began with; the rest must be too.
    if let Some(what) = changed_tag(expect_etag, headers).filter(|_| skip > 0) {
        return Err(NetError::Changed {
            url: url.to_string(),
            what,
            written_bytes: skip,
        });
    }
    // An answer announcing another length than the `HEAD` is another version of the resource (a
    // file replaced since, a generated page): with nothing handed on yet the download starts
    // over, and after ranges of the old version it cannot be spliced on. An answer without a
    // length is still held to the `HEAD`'s below.
    let announced = content_length(headers);
    if let (Some(was), Some(now)) = (expect_len, announced) {
        if was != now {
            return Err(NetError::Changed {
                url: url.to_string(),
                what: format!("its length was {was} bytes and is now {now}"),
                written_bytes: skip,
            });
        }
    }
    // Whatever validator the answer carries, weak or strong, is asked for again once the body
    // has arrived (`confirm_unchanged`).
    let answered = headers
        .get(header::ETAG)
        .map(|v| Validator::Tag(v.clone()))
        .or_else(|| {
            headers
                .get(header::LAST_MODIFIED)
                .map(|v| Validator::Date(v.clone()))
        });
    let mut n = 0u64;
    loop {
        let frame = tokio::time::timeout(idle, body.frame())
            .await
            .map_err(|_| http_err(format!("no data for {idle:?} after {n} bytes")))?;
        let Some(frame) = frame else { break };
        let frame = frame.map_err(|e| {
            http_err(format!(
                "body cut short after {n} bytes: {}",
                with_causes(&e)
            ))
        })?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        let from = skip.saturating_sub(n).min(data.len() as u64) as usize;
        n += data.len() as u64;
        // Bytes past the announced length are not the file's: refused before they are written,
        // so a server that never stops cannot fill the output.
        if let Some(l) = expect_len.filter(|l| n > *l) {
            return Err(http_err(format!(
                "the whole file runs past its length of {l} bytes (at least {n} sent)"
            )));
        }
        if let Some(s) = sink.as_mut() {
            s.write_all(&data[from..])?;
        }
    }
    if let Some(l) = expect_len.filter(|l| *l != n) {
        return Err(http_err(format!(
            "the whole file came with {n} bytes where its length is {l}"
        )));
    }
    if n < skip {
        return Err(http_err(format!(
            "the whole file came with {n} bytes, fewer than the {skip} already read"
        )));
    }
    if let Some(s) = sink.as_mut() {
        s.flush()?;
    }
    drop(permit);
    let was = expect_etag.or(answered.as_ref());
    match closing_look {
        ClosingLook::Head => confirm_unchanged(pool, url, was, Some(n), n).await?,
        ClosingLook::Conditional => confirm_unchanged_by_condition(pool, url, was, n, n).await?,
    }
    let seconds = started.elapsed().as_secs_f64();
    let rtt = first_byte.saturating_since(sent);
    Ok(Report {
        bytes: n,
        seconds,
        mib_s: n as f64 / (1u64 << 20) as f64 / seconds.max(1e-9),
        alpha: 0,
        alpha_max: 0,
        rtt_ms: rtt.as_millis_f64(),
        requests: 1,
        wasted_bytes: 0,
        transferred_bytes: n,
        unit_bytes: 0,
        buffered_peak_bytes: 0,
        path_mib_s: None,
        server: None,
        ranges: false,
    })
}

#[cfg(test)]
mod tests {
    /// A --max-buffer too small for the units asked for named the least that would do in KiB,
    /// however large: `give at least 268959872KiB` for --alpha 1024 --readahead 256MiB. It is
    /// now rounded up to a whole unit of at most four digits (257GiB), still enough.
    #[test]
    fn the_least_max_buffer_is_named_readably_and_rounded_up() {
        let refusal = |alpha: u32, unit: ByteLen| {
            let cfg = ClientConfig {
                alpha: AlphaMode::Fixed(alpha),
                readahead: Some(unit),
                ..ClientConfig::default()
            };
            Client::new(cfg).err().map(|e| e.to_string())
        };
        let got = refusal(1024, ByteLen::mib(256)).expect("refused");
        assert!(got.contains("give at least 257GiB,"), "{got}");
        let got = refusal(1024, ByteLen::kib(256)).expect("refused");
        // 1,026 units of 256 KiB and a read of 128 KiB: 262,784 KiB, 256.6 MiB.
        assert!(got.contains("give at least 257MiB,"), "{got}");
        assert!(
            refusal(1, ByteLen::kib(4)).is_none(),
            "the default buffer holds three 4 KiB units"
        );
        assert_eq!(least_readably(ByteLen::kib(140)), ByteLen::kib(140));
        assert_eq!(least_readably(ByteLen(1000)), ByteLen(1000));
        assert_eq!(least_readably(ByteLen(10_000 << 10)), ByteLen::mib(10));
    }

    use super::*;

    fn headers(fields: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in fields {
            h.insert(k.clone(), HeaderValue::from_str(v).unwrap());
        }
        h
    }

    /// A tag sent weak while the file was fresh and strong once it settled names one version;
    /// random reads that began with the weak one are not told the file changed (a download
    /// never puts ranges together under a weak tag, see `download`, so the weak comparison only
    /// detects changes). Another opaque part, or another date for a download that began with a
    /// date, is a change.
    #[test]
    fn tags_are_compared_weakly_and_dates_exactly() {
        let weak = Validator::Tag(HeaderValue::from_static("W/\"1-2-3\""));
        let strong = Validator::Tag(HeaderValue::from_static("\"1-2-3\""));
        let etag = |v: &str| headers(&[(header::ETAG, v)]);
        assert_eq!(changed_tag(Some(&weak), &etag("\"1-2-3\"")), None);
        assert_eq!(changed_tag(Some(&strong), &etag("W/\"1-2-3\"")), None);
        let other = changed_tag(Some(&weak), &etag("\"1-2-4\"")).expect("a change");
        assert!(other.contains("ETag"), "{other}");
        let date = Validator::Date(HeaderValue::from_static("Tue, 14 Nov 2023 22:13:20 GMT"));
        let lm = |v: &str| headers(&[(header::LAST_MODIFIED, v)]);
        assert_eq!(
            changed_tag(Some(&date), &lm("Tue, 14 Nov 2023 22:13:20 GMT")),
            None
        );
        let other = changed_tag(Some(&date), &lm("Tue, 14 Nov 2023 22:13:21 GMT"));
        assert!(other.expect("a change").contains("Last-Modified"));
        // A date is not compared with a tag, nor a tag with a date.
        assert_eq!(changed_tag(Some(&date), &etag("\"x\"")), None);
        assert_eq!(changed_tag(None, &etag("\"x\"")), None);
        // A tag without its quotes is still a tag: compared with the answers' ETag, never with
        // their Last-Modified, and sent in If-Range as it came.
        let unquoted = Validator::Tag(HeaderValue::from_static("one"));
        let both = |tag: &str| {
            headers(&[
                (header::ETAG, tag),
                (header::LAST_MODIFIED, "Tue, 14 Nov 2023 22:13:20 GMT"),
            ])
        };
        assert_eq!(changed_tag(Some(&unquoted), &both("one")), None);
        let other = changed_tag(Some(&unquoted), &both("two")).expect("a change");
        assert!(other.contains("ETag"), "{other}");
        assert_eq!(
            unquoted.for_if_range().map(|v| v.as_bytes()),
            Some(&b"one"[..])
        );
        assert_eq!(weak.for_if_range(), None);
        assert!(date.for_if_range().is_some());
        assert!(weak.is_weak() && !strong.is_weak() && !date.is_weak() && !unquoted.is_weak());
    }

    /// A `Last-Modified` within a second of the `Date` (two whole seconds at most apart) is a
    /// file modified within the second, whose weak tag is worth asking for again; an older one,
    /// or a missing field, is not.
    #[test]
    fn a_last_modified_within_a_second_of_the_date_is_fresh() {
        let at = |modified: &str| {
            headers(&[
                (header::DATE, "Tue, 14 Nov 2023 22:13:21 GMT"),
                (header::LAST_MODIFIED, modified),
            ])
        };
        assert!(modified_within_a_second(&at(
            "Tue, 14 Nov 2023 22:13:21 GMT"
        )));
        assert!(modified_within_a_second(&at(
            "Tue, 14 Nov 2023 22:13:20 GMT"
        )));
        assert!(!modified_within_a_second(&at(
            "Tue, 14 Nov 2023 22:13:19 GMT"
        )));
        assert!(!modified_within_a_second(&headers(&[(
            header::DATE,
            "Tue, 14 Nov 2023 22:13:21 GMT"
        )])));
    }

    /// The version a download begins with is the `ETag` when there is one; else a
    /// `Last-Modified` at least a second before the `Date`, which alone may go in `If-Range`.
    #[test]
    fn a_strong_last_modified_stands_in_for_a_missing_tag() {
        let date = "Tue, 14 Nov 2023 22:13:21 GMT";
        let lm = "Tue, 14 Nov 2023 22:13:20 GMT";
        let begun = |f: &[(header::HeaderName, &str)]| {
            begun_version(&headers(f)).map(|v| match v {
                Validator::Tag(v) => format!("tag {}", v.to_str().unwrap()),
                Validator::Date(v) => format!("date {}", v.to_str().unwrap()),
            })
        };
        assert_eq!(
            begun(&[
                (header::ETAG, "W/\"t\""),
                (header::LAST_MODIFIED, lm),
                (header::DATE, date)
            ]),
            Some("tag W/\"t\"".into())
        );
        assert_eq!(
            begun(&[(header::LAST_MODIFIED, lm), (header::DATE, date)]),
            Some(format!("date {lm}"))
        );
        // Within the second of the answer, without a Date, or unreadable: no validator.
        assert_eq!(
            begun(&[(header::LAST_MODIFIED, lm), (header::DATE, lm)]),
            None
        );
        assert_eq!(begun(&[(header::LAST_MODIFIED, lm)]), None);
        assert_eq!(
            begun(&[(header::LAST_MODIFIED, "soon"), (header::DATE, date)]),
            None
        );
    }

    /// A URL given where an address is asked for names the address to give instead; anything
    /// else is not a URL.
    #[test]
    fn the_address_in_a_url_is_its_host_and_port() {
        for (text, want) in [
            ("http://127.0.0.1:18100", Some("127.0.0.1:18100")),
            ("HTTP://127.0.0.1:18100/f?x#y", Some("127.0.0.1:18100")),
            ("http://example.com/", Some("example.com:80")),
            ("https://example.com", Some("example.com:443")),
            ("http://[::1]:8080/", Some("[::1]:8080")),
            ("http://[::1]/", Some("[::1]:80")),
            ("http://u@h:81", Some("h:81")),
            ("http://h:/", Some("h:80")),
            ("http://", None),
            ("127.0.0.1:8080", None),
            ("http:8080", None),
            ("localhost:80", None),
        ] {
            assert_eq!(address_in_url(text).as_deref(), want, "{text}");
        }
    }

    #[test]
    fn urls_parse_with_and_without_ports() {
        let u: Url = "http://127.0.0.1:8080/a/b?x=1".parse().unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("127.0.0.1", 8080, "/a/b?x=1")
        );
        let u: Url = "http://example.org".parse().unwrap();
        assert_eq!((u.port, u.path.as_str()), (80, "/"));
        let u: Url = "http://[::1]:9/f".parse().unwrap();
        assert_eq!(u.authority(), "[::1]:9");
        // RFC 3986, section 3.2: the authority ends at `/`, `?` or `#`; a fragment is the
        // client's own and is never sent.
        for (text, host, path) in [
            ("http://h?x=1", "h", "/?x=1"),
            ("http://h:81?x=1", "h", "/?x=1"),
            ("http://h#top", "h", "/"),
            ("http://h/d/f.bin#part-2", "h", "/d/f.bin"),
            ("http://h/f?q=1#frag", "h", "/f?q=1"),
            ("http://[::1]?x", "::1", "/?x"),
            // The scheme in any case (section 3.1); it was refused as "only http://".
            ("HTTP://h/x", "h", "/x"),
            ("Http://h", "h", "/"),
        ] {
            let u: Url = text.parse().unwrap();
            assert_eq!((u.host.as_str(), u.path.as_str()), (host, path), "{text}");
        }
        for bad in [
            "https://x/",
            "ftp://x",
            "http://:80/",
            "http://x:0/",
            "http://x:99999/",
            "http://x/a b",
            "http://[::1]x:9/",
            "http://a:b:80/",
            "http://a b/",
            "http://user@x/",
        ] {
            assert!(bad.parse::<Url>().is_err(), "{bad}");
        }
        // A broken escape is refused, naming what to write; whole escapes parse as they are.
        for bad in [
            "http://x/100%.txt",
            "http://x/a%2",
            "http://x/a%zz",
            "http://x/f?q=%",
        ] {
            let e = bad.parse::<Url>().unwrap_err();
            assert!(e.contains(bad) && e.contains("%25"), "{bad}: {e}");
        }
        let u: Url = "http://x/100%25.txt?q=%2F".parse().unwrap();
        assert_eq!(u.path, "/100%25.txt?q=%2F");
    }

    /// Credentials in a URL were refused for another fault: `user:pw@host:80` as an IPv6
    /// address without brackets, `user@host` as a host with a character a host cannot have.
    /// The refusal now names the credentials and says to drop them; an `@` after the authority
    /// (in the path or query) is no credential.
    #[test]
    fn credentials_in_a_url_are_refused_as_credentials() {
        for bad in [
            "http://user:pw@127.0.0.1:8080/f",
            "http://user@x/f",
            "http://a@b@x:80/",
            "http://user:pw@[::1]:8080/f",
        ] {
            let e = bad.parse::<Url>().unwrap_err();
            assert!(
                e.contains("gives credentials") && !e.contains("IPv6") && !e.contains("character"),
                "{bad}: {e}"
            );
        }
        let u: Url = "http://x/a@b?c=@".parse().unwrap();
        assert_eq!((u.host.as_str(), u.path.as_str()), ("x", "/a@b?c=@"));
    }

    /// A URL without a scheme, with another scheme, without a host or with a port that is no
    /// number was refused as "only http:// URLs are supported", "no host" or "the port must be
    /// 1..=65535", which say neither what the user wrote wrong nor what to write instead. Each
    /// refusal now names the fault and gives the URL form to write.
    #[test]
    fn a_refused_url_names_its_fault_and_what_to_write() {
        for (bad, needles) in [
            (
                "127.0.0.1:8080/big.bin",
                &["no scheme", "http://127.0.0.1:8080/big.bin"][..],
            ),
            ("localhost/f", &["no scheme", "http://localhost/f"][..]),
            ("/srv/f.bin", &["not a URL", "http://HOST[:PORT]/PATH"][..]),
            (
                "https://x/f",
                &["`https://`", "plain HTTP", "no TLS", "http://"][..],
            ),
            ("ftp://x", &["`ftp://`", "http://"][..]),
            ("http://", &["no host", "http://HOST[:PORT]/PATH"][..]),
            ("http://:80/f", &["no host", "http://HOST[:PORT]/PATH"][..]),
            ("http://x:80x/f", &["`80x`", "1 to 65535"][..]),
            ("http://x:0/f", &["`0`", "1 to 65535"][..]),
            ("http://x:99999/f", &["`99999`", "1 to 65535"][..]),
            ("http:8080/f", &["no scheme", "http://http:8080/f"][..]),
        ] {
            let e = bad.parse::<Url>().unwrap_err();
            for needle in needles {
                assert!(e.contains(needle), "{bad}: {e} lacks {needle}");
            }
        }
    }

    /// A URL missing a slash or the colon of `http://` was advised as a host name:
    /// `http:/127.0.0.1:38111/small.txt` "has no scheme; write
    /// http://http:/127.0.0.1:38111/small.txt". The advice is now the URL meant.
    #[test]
    fn a_mistyped_scheme_is_advised_as_the_url_meant() {
        let meant = "http://127.0.0.1:38111/small.txt";
        for bad in [
            "http:/127.0.0.1:38111/small.txt",
            "http:127.0.0.1:38111/small.txt",
            "http//127.0.0.1:38111/small.txt",
            "http/127.0.0.1:38111/small.txt",
            "HTTP:/127.0.0.1:38111/small.txt",
        ] {
            let e = bad.parse::<Url>().unwrap_err();
            assert!(
                e.ends_with(&format!("write {meant}")) && !e.contains("http://http"),
                "{bad}: {e}"
            );
        }
        let e = "https:/x/f".parse::<Url>().unwrap_err();
        assert!(e.contains("`https://`") && e.contains("no TLS"), "{e}");
        let e = "http:/".parse::<Url>().unwrap_err();
        assert!(e.contains("not a URL"), "{e}");
    }

    /// `http:8080/f` was advised only as the host `http` at port 8080 ("write
    /// http://http:8080/f"), where the user more likely left out the slashes and the host.
    /// Both readings are now offered.
    #[test]
    fn a_scheme_then_a_port_is_advised_both_ways() {
        let e = "http:8080/f".parse::<Url>().unwrap_err();
        assert!(
            e.contains("write http://HOST:8080/f") && e.contains("http://http:8080/f"),
            "{e}"
        );
        let e = "HTTPS:443".parse::<Url>().unwrap_err();
        assert!(
            e.contains("http://HOST:443") && e.contains("named `HTTPS`"),
            "{e}"
        );
        let e = "localhost:8080/f".parse::<Url>().unwrap_err();
        assert!(e.ends_with("write http://localhost:8080/f"), "{e}");
    }

    proptest::proptest! {
        /// Any text parses or is refused without a panic, and a URL that parses prints back to
        /// text that parses to the same URL.
        #[test]
        fn url_text_parses_or_is_refused_and_round_trips(
            text in proptest::prop_oneof![
                proptest::string::string_regex("http://[a-z0-9:\\[\\]@. /%?\\t]{0,24}").unwrap(),
                proptest::prelude::any::<String>(),
            ]
        ) {
            if let Ok(u) = text.parse::<Url>() {
                let again: Url = u.to_string().parse().map_err(|e| {
                    proptest::test_runner::TestCaseError::fail(format!("{u} does not parse back: {e}"))
                })?;
                proptest::prop_assert_eq!(again, u);
            }
        }
    }

    #[test]
    fn coverage_and_copy_follow_the_pieces() {
        let mut p = BTreeMap::new();
        p.insert(0u64, Bytes::from_static(b"abcd"));
        p.insert(4u64, Bytes::from_static(b"efgh"));
        p.insert(10u64, Bytes::from_static(b"kl"));
        assert!(covered(&p, 1, 8));
        assert!(!covered(&p, 6, 11));
        let mut out = Vec::new();
        copy_out(&p, 2, 7, &mut out);
        assert_eq!(out, b"cdefg");
    }
}
