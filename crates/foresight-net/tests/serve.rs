//! `foresight serve` over real sockets: ranges return exactly the file's bytes, bad ranges and
//! escapes are refused, the limits hold.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{content, get, get_as_stream, raw, read_response, serve, serve_with, BIG_BYTES};

#[test]
fn ranges_return_exactly_the_files_bytes() {
    let s = serve("ranges");
    let a = s.addr();
    let n = BIG_BYTES;
    for (header, start, len) in [
        ("bytes=0-0", 0, 1),
        ("bytes=0-99", 0, 100),
        ("bytes=1048575-2097152", 1048575, 1048578),
        ("bytes=5000000-", 5000000, n - 5000000),
        ("bytes=-777", n - 777, 777),
        ("bytes=-99999999", 0, n),
        ("bytes=5242880-999999999", 5242880, n - 5242880),
    ] {
        let r = get(a, "/big.bin", Some(header));
        assert_eq!(r.status, 206, "{header}");
        assert_eq!(r.body, s.big[start..start + len], "{header}");
        assert_eq!(
            r.header("content-range").unwrap(),
            format!("bytes {}-{}/{n}", start, start + len - 1)
        );
        assert_eq!(r.header("accept-ranges"), Some("bytes"));
    }
    let whole = get(a, "/big.bin", None);
    assert_eq!(whole.status, 200);
    assert_eq!(whole.body, s.big);
    // Several ranges are answered with the whole file; a unit we do not know is ignored.
    assert_eq!(get(a, "/big.bin", Some("bytes=0-1,5-6")).status, 200);
    assert_eq!(get(a, "/big.bin", Some("pages=1-2")).status, 200);
    let small = get(a, "/sub/small.txt", Some("bytes=7-"));
    assert_eq!(small.body, b"ranges\n");
    let inside = get(a, "/inside", None);
    assert_eq!(inside.body, b"hello, ranges\n");
}

#[test]
fn unsatisfiable_ranges_get_416_and_malformed_ones_400() {
    let s = serve("bad-ranges");
    let a = s.addr();
    for h in ["bytes=6000000-", "bytes=-0", "bytes=99999999999999999999-"] {
        let r = get(a, "/big.bin", Some(h));
        assert_eq!(r.status, 416, "{h}");
        assert_eq!(
            r.header("content-range"),
            Some(format!("bytes */{BIG_BYTES}").as_str())
        );
    }
    assert_eq!(get(a, "/empty", Some("bytes=0-0")).status, 416);
    for h in [
        "bytes=5-1",
        "bytes=a-b",
        "bytes=",
        "bytes=1",
        "bytes 1-2",
        "bytes=--5",
    ] {
        assert_eq!(get(a, "/big.bin", Some(h)).status, 400, "{h}");
    }
}

/// RFC 9110, section 14.1.1: a suffix-range of non-zero length is satisfiable on an empty file
/// (it selects the whole, empty, representation), alone or among unsatisfiable ranges.
#[test]
fn a_suffix_range_on_an_empty_file_gets_200_with_an_empty_body() {
    let s = serve("empty-suffix");
    let a = s.addr();
    for h in ["bytes=-5", "bytes=0-0,-5"] {
        let r = get(a, "/empty", Some(h));
        assert_eq!(r.status, 200, "{h}");
        assert!(r.body.is_empty(), "{h}");
        assert_eq!(r.header("content-length"), Some("0"), "{h}");
        assert_eq!(r.header("content-range"), None, "{h}");
    }
    assert_eq!(get(a, "/empty", Some("bytes=-0")).status, 416);
}

/// A worker keeps a stream's engine reader open between its requests. A file replaced under the
/// path in between (a new inode of the same length, as a deploy or `rsync` renames it into place)
/// is served from the new file, not from the reader still open on the old one.
#[test]
fn a_file_replaced_under_a_stream_is_served_from_the_new_file() {
    let s = serve("replaced");
    let a = s.addr();
    let old = content(200_000, 1);
    let new = content(200_000, 2);
    std::fs::write(s.root.join("f.bin"), &old).unwrap();
    assert_eq!(get_as_stream(a, "/f.bin", "one").body, old);
    std::fs::write(s.root.join("f.tmp"), &new).unwrap();
    std::fs::rename(s.root.join("f.tmp"), s.root.join("f.bin")).unwrap();
    let r = get_as_stream(a, "/f.bin", "one");
    assert_eq!(r.status, 200);
    assert!(r.body == new, "old bytes served: {}", r.body == old);
}

/// A file that grew or shrank between two requests of one stream is served whole at its new
/// length: the Content-Length and the body describe the same file.
#[test]
fn a_file_grown_or_shrunk_under_a_stream_is_served_at_its_new_length() {
    let s = serve("resized");
    let a = s.addr();
    let path = s.root.join("log.bin");
    let mut bytes = content(100_000, 3);
    std::fs::write(&path, &bytes).unwrap();
    assert_eq!(get_as_stream(a, "/log.bin", "two").body, bytes);
    let more = content(50_000, 4);
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(&more)
        .unwrap();
    bytes.extend_from_slice(&more);
    let grown = get_as_stream(a, "/log.bin", "two");
    assert_eq!(grown.status, 200);
    assert_eq!(grown.body.len(), bytes.len());
    assert!(grown.body == bytes, "grown file: wrong bytes");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(30_000)
        .unwrap();
    let shrunk = get_as_stream(a, "/log.bin", "two");
    assert_eq!(shrunk.status, 200);
    assert!(shrunk.body == bytes[..30_000], "shrunk file: wrong bytes");
}

#[test]
fn escapes_from_the_root_are_refused() {
    let s = serve("escapes");
    let a = s.addr();
    for (path, want) in [
        ("/../secret.txt", 400),
        ("/sub/../../secret.txt", 400),
        ("/%2e%2e/secret.txt", 400),
        ("/sub/%2E%2E/%2e%2e/secret.txt", 400),
        ("/..%2fsecret.txt", 400),
        ("/escape", 404),
        // Absolute symlinks are not followed, even to a file inside the root.
        ("/inside-absolute", 404),
        ("//etc/passwd", 404),
        ("/etc/passwd", 404),
        ("/sub", 404),
        ("/missing", 404),
        ("/a%00b", 400),
    ] {
        let r = get(a, path, None);
        assert_eq!(r.status, want, "{path}");
        assert!(!String::from_utf8_lossy(&r.body).contains("do not serve"));
    }
    // An absolute-form target outside the root.
    let r = raw(
        a,
        "GET http://t/../secret.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    );
    assert!(r.status == 400 || r.status == 404, "{}", r.status);
}

#[test]
fn head_keep_alive_methods_and_service_documents() {
    let s = serve("misc");
    let a = s.addr();
    let mut c = TcpStream::connect(a).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    // Two requests on one connection.
    c.write_all(b"HEAD /big.bin HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let h = read_response(&mut c, true);
    assert_eq!(h.status, 200);
    assert_eq!(
        h.header("content-length"),
        Some(BIG_BYTES.to_string().as_str())
    );
    assert_eq!(h.header("accept-ranges"), Some("bytes"));
    c.write_all(b"GET /sub/small.txt HTTP/1.1\r\nHost: t\r\nRange: bytes=0-4\r\n\r\n")
        .unwrap();
    let g = read_response(&mut c, false);
    assert_eq!((g.status, g.body.as_slice()), (206, &b"hello"[..]));
    assert!(g.header("x-foresight-proc-ns").is_some());
    let p = raw(
        a,
        "POST /big.bin HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(p.status, 405);
    assert_eq!(p.header("allow"), Some("GET, HEAD"));
    let w = get(a, "/.well-known/foresight", None);
    let v: serde_json::Value = serde_json::from_slice(&w.body).unwrap();
    assert_eq!(v["server"], "foresight");
    assert_eq!(v["max_readahead_bytes"], 1 << 20);
    assert_eq!(v["bandwidth_source"], "configured");
    assert_eq!(v["peak_ratio"], 1.2);
    assert_eq!(v["peak_ratio_source"], "default");
    let m = String::from_utf8(get(a, "/metrics", None).body).unwrap();
    assert!(m.contains("# TYPE foresight_requests_total counter"), "{m}");
    assert!(m.contains("foresight_worker_queued{worker=\"3\"}"), "{m}");
    assert!(m.contains("foresight_responses_total{code=\"206\"}"), "{m}");
}

#[test]
fn oversized_heads_are_refused() {
    let s = serve("limits");
    let mut c = TcpStream::connect(s.addr()).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let big = "x".repeat(64 << 10);
    // The server may close before reading everything: a failed write is a refusal too.
    let sent =
        c.write_all(format!("GET /big.bin HTTP/1.1\r\nHost: t\r\nX-Big: {big}\r\n\r\n").as_bytes());
    if sent.is_ok() {
        let mut buf = Vec::new();
        let _ = std::io::Read::read_to_end(&mut c, &mut buf);
        let text = String::from_utf8_lossy(&buf);
        assert!(
            text.is_empty() || text.starts_with("HTTP/1.1 431"),
            "{text}"
        );
    }
}

/// Sends a request head of exactly `bytes` bytes (request line, `lines` header lines padded to
/// length, and the blank line that ends them) and returns the status, or `None` when the server
/// closed the connection before or instead of answering (a refusal too).
fn head_of(addr: std::net::SocketAddr, bytes: usize, lines: usize) -> Option<u16> {
    use std::io::{BufRead, BufReader};
    let start = "GET /sub/small.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n";
    let mut head = start.to_string();
    for i in 2..lines.saturating_sub(1) {
        head.push_str(&format!("X-Line-{i}: a\r\n"));
    }
    // The last line takes up what is left: `X-Pad: ` and its padding.
    let pad = bytes - head.len() - "X-Pad: \r\n\r\n".len();
    head.push_str(&format!("X-Pad: {}\r\n\r\n", "p".repeat(pad)));
    assert_eq!(head.len(), bytes);
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    // The server may close before reading everything: a failed write is a refusal.
    c.write_all(head.as_bytes()).ok()?;
    let mut status = String::new();
    BufReader::new(c).read_line(&mut status).ok()?;
    status.split_whitespace().nth(1)?.parse().ok()
}

/// `--max-header-bytes` was given to hyper as its read buffer's size, which a read may overrun:
/// with 100000, heads of 100,001 and 110,000 bytes were served (200), and with 1048576 one of
/// 1,200,000. It is now the longest head served to the byte (request line, header lines and the
/// blank line that ends them), a longer one getting 431, at every size; and the header lines
/// are at most 100 (hyper's parser's bound, which `--help` now gives), the 101st getting 431.
#[test]
fn the_head_limit_is_exact_at_every_size() {
    for limit in [16_384, 100_000, 1 << 20] {
        let s = serve_with(&format!("head-{limit}"), |c| c.max_header_bytes = limit);
        let a = s.addr();
        assert_eq!(head_of(a, limit, 4), Some(200), "{limit} bytes");
        for over in [limit + 1, limit + limit / 10] {
            let status = head_of(a, over, 4);
            assert!(
                matches!(status, None | Some(431)),
                "{over} bytes under a limit of {limit}: {status:?}"
            );
        }
    }
    let s = serve("header-lines");
    assert_eq!(head_of(s.addr(), 4096, 100), Some(200));
    assert_eq!(head_of(s.addr(), 4096, 101), Some(431));
}

/// Requests hyper answers itself, before the server's handler sees them (a head that does not
/// parse, such as a malformed `Content-Length`: 400; a head past `--max-header-bytes`: 431; a URI
/// past 65,534 bytes: 414), were missing from `foresight_requests_total` and
/// `foresight_responses_total`: the metrics showed none of the refusals a client saw. Each is
/// counted now, once its connection ends (hence the wait).
#[test]
fn requests_refused_before_the_handler_are_in_the_metrics() {
    let s = serve_with("refused-counted", |c| c.max_header_bytes = 1 << 17);
    let a = s.addr();
    let count = |text: &str, line: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(line)?.trim().parse().ok())
            .unwrap_or(0)
    };
    let r = raw(
        a,
        "GET /sub/small.txt HTTP/1.1\r\nHost: t\r\nContent-Length: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 400);
    assert!(matches!(head_of(a, (1 << 17) + 1, 4), None | Some(431)));
    let long_uri = format!(
        "GET /{} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
        "u".repeat(70_000)
    );
    assert_eq!(raw(a, &long_uri).status, 414);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let m = String::from_utf8(get(a, "/metrics", None).body).unwrap();
        let codes = ["400", "414", "431"]
            .map(|code| count(&m, &format!("foresight_responses_total{{code=\"{code}\"}}")));
        // The refusals, and the /metrics requests answered before this one.
        let answered = count(&m, "foresight_responses_total{code=\"200\"}");
        if codes == [1, 1, 1] {
            assert_eq!(
                count(&m, "foresight_requests_total"),
                3 + answered + 1,
                "{m}"
            );
            break;
        }
        assert!(Instant::now() < deadline, "{codes:?} counted: {m}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn curl_range_requests_match_the_file() {
    let Ok(out) = std::process::Command::new("curl").arg("--version").output() else {
        println!("curl is not installed: the curl check is skipped");
        return;
    };
    assert!(out.status.success());
    let s = serve("curl");
    let a = s.addr();
    for (r, start, end) in [
        ("0-1023", 0, 1024),
        ("4000000-", 4000000, BIG_BYTES),
        ("-4096", BIG_BYTES - 4096, BIG_BYTES),
    ] {
        let out = std::process::Command::new("curl")
            .args(["-s", "-f", "-r", r, &format!("http://{a}/big.bin")])
            .output()
            .unwrap();
        assert!(out.status.success(), "curl -r {r}");
        assert_eq!(out.stdout, s.big[start..end], "curl -r {r}");
    }
    let out = std::process::Command::new("curl")
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "-r",
            "9999999-",
            &format!("http://{a}/big.bin"),
        ])
        .output()
        .unwrap();
    assert_eq!(out.stdout, b"416");
    let out = std::process::Command::new("curl")
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "--path-as-is",
            &format!("http://{a}/%2e%2e/secret.txt"),
        ])
        .output()
        .unwrap();
    assert_eq!(out.stdout, b"400");
}

/// Whether the server closes the connection without sending a byte (false as well when 20 s pass).
fn closed_unanswered(c: &mut TcpStream) -> bool {
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut buf = [0u8; 256];
    match std::io::Read::read(c, &mut buf) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
    }
}

#[test]
fn connections_beyond_the_limit_are_closed_and_idle_ones_time_out() {
    let s = serve_with("conn-limits", |c| {
        c.max_connections = 2;
        c.idle_timeout = Duration::from_millis(300);
    });
    let a = s.addr();
    let mut first = TcpStream::connect(a).unwrap();
    let _second = TcpStream::connect(a).unwrap();
    // Give the server time to accept both before the third arrives.
    std::thread::sleep(Duration::from_millis(100));
    let mut third = TcpStream::connect(a).unwrap();
    // A served connection would answer this request before any idle timer could close it.
    let _ = third.write_all(b"GET /sub/small.txt HTTP/1.1\r\nHost: t\r\n\r\n");
    assert!(
        closed_unanswered(&mut third),
        "the third connection was served"
    );
    // The first one never sends a request: the idle timer ends it.
    assert!(
        closed_unanswered(&mut first),
        "an idle connection stayed open"
    );
    // Once they are gone, new connections are served again.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(get(a, "/sub/small.txt", None).status, 200);
}

/// A client that had sent half a request head held the server's stop for the whole grace period
/// (10 s), where an idle connection was closed at once: hyper's graceful shutdown waits for the
/// rest of a head, under the header timeout (30 s). Such a connection has no answer under way,
/// and the stop now closes it at once. An answer under way when the stop begins is still sent
/// whole, and the stop waits for it.
#[test]
fn a_stop_closes_a_connection_holding_half_a_request_head_at_once() {
    use std::io::Read;
    let mut s = serve("half-head");
    let a = s.addr();
    let mut half = TcpStream::connect(a).unwrap();
    half.write_all(b"GET /sub/small.txt HTTP/1.1\r\nHo")
        .unwrap();
    // An answer under way when the stop begins: its head sent, most of its body not, as the
    // client takes nothing until then.
    let mut under_way = common::small_buffer_connection(a);
    under_way
        .write_all(b"GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let mut first = [0u8; 12];
    under_way.read_exact(&mut first).unwrap();
    assert_eq!(&first, b"HTTP/1.1 200");
    // Both are the server's (the metrics' own connection is the third), and it has had time to
    // read the half head.
    let deadline = Instant::now() + Duration::from_secs(20);
    while common::metric(a, "foresight_connections_open") < 3.0 {
        assert!(Instant::now() < deadline, "the connections were not taken");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    let server = s.server.take().unwrap();
    let began = Instant::now();
    let stop = std::thread::spawn(move || server.shutdown());
    // Half the grace period: a connection still open then waits for the whole of it.
    half.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = [0u8; 256];
    let closed = match half.read(&mut buf) {
        Ok(0) => true,
        Ok(n) => panic!("the half head was answered: {:?}", &buf[..n]),
        Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
    };
    assert!(
        closed,
        "the connection holding half a request head was still open {:?} into the stop",
        began.elapsed()
    );
    let mut rest = first.to_vec();
    under_way.read_to_end(&mut rest).unwrap();
    let body_at = rest
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head")
        + 4;
    assert!(
        rest[body_at..] == s.big[..],
        "the answer under way was not sent whole"
    );
    let stopped = stop.join().unwrap().unwrap();
    assert_eq!(
        (stopped.cut_short_responses, stopped.closed_connections),
        (0, 0)
    );
    assert!(stopped.waited < Duration::from_secs(10), "{stopped:?}");
}

/// Bytes of the file a stalled client asks for: far more than socket buffers, the worker's channel
/// and hyper's buffer hold together, so the server's writes stall.
const HUGE_BYTES: usize = 48 << 20;

#[test]
fn a_client_that_stops_reading_is_disconnected_after_the_send_timeout() {
    let s = serve_with("stalled", |c| {
        c.send_timeout = Duration::from_millis(200);
    });
    let a = s.addr();
    common::write_file(&s, "huge.bin", HUGE_BYTES);
    let stalled = common::stalled_reader(a, "/huge.bin");
    // The server closes the connection once its writes have made no progress for the send
    // timeout; until then it counts as open beside the one asking for the metrics. The bound is
    // generous: the test waits for the close, not for a time.
    let mut seen_open = false;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let open = common::metric(a, "foresight_connections_open");
        seen_open |= open >= 2.0;
        if seen_open && open == 1.0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "a client that stopped reading still holds its connection ({open} open)"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(stalled);
    // The server still serves.
    assert_eq!(get(a, "/sub/small.txt", None).status, 200);
}

#[test]
fn connections_without_a_stream_header_are_separate_streams() {
    let s = serve_with("conn-streams", |c| {
        // Long enough that a request queued behind the stalled one would wait far beyond the
        // reading timeout below.
        c.send_timeout = Duration::from_secs(300);
    });
    let a = s.addr();
    common::write_file(&s, "huge.bin", HUGE_BYTES);
    let created = |a| common::metric(a, "foresight_streams_created_total");
    // Two connections from one address, each its own stream.
    assert_eq!(get(a, "/big.bin", Some("bytes=0-99")).status, 206);
    assert_eq!(get(a, "/big.bin", Some("bytes=100-199")).status, 206);
    assert_eq!(created(a), 2.0);
    // With the header, several connections are one stream.
    for _ in 0..2 {
        assert_eq!(get_as_stream(a, "/big.bin", "one").status, 200);
    }
    assert_eq!(created(a), 3.0);
    // A client that stopped reading in the middle of a file holds back only its own stream:
    // another connection from the same address reading the same file is answered.
    let _stalled = common::stalled_reader(a, "/huge.bin");
    let deadline = Instant::now() + Duration::from_secs(60);
    while created(a) < 4.0 {
        assert!(
            Instant::now() < deadline,
            "the stalled request never arrived"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let r = get(a, "/huge.bin", Some("bytes=0-99"));
    assert_eq!(r.status, 206);
    assert_eq!(created(a), 5.0);
}

/// A client may shut its sending side once its request is out (`nc -N`, some HTTP/1.0 clients,
/// or a relay passing on such a client's end of stream): the requests it sent are still answered
/// before the connection closes.
#[test]
fn requests_from_a_client_that_half_closes_are_answered() {
    let s = serve("half-close");
    let mut c = TcpStream::connect(s.addr()).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    c.write_all(
        b"GET /sub/small.txt HTTP/1.1\r\nHost: t\r\n\r\n\
          GET /big.bin HTTP/1.1\r\nHost: t\r\nRange: bytes=5-9\r\n\r\n",
    )
    .unwrap();
    c.shutdown(std::net::Shutdown::Write).unwrap();
    let first = read_response(&mut c, false);
    assert_eq!(
        (first.status, first.body.as_slice()),
        (200, &b"hello, ranges\n"[..])
    );
    let second = read_response(&mut c, false);
    assert_eq!(
        (second.status, second.body.as_slice()),
        (206, &s.big[5..10])
    );
    // Then the server closes its side too.
    let mut rest = Vec::new();
    std::io::Read::read_to_end(&mut c, &mut rest).unwrap();
    assert!(rest.is_empty());
}

/// RFC 9112, section 3.2: an HTTP/1.1 request without a `Host`, or any request with two, is
/// answered 400 (a server that guesses which host was meant can be led to serve another one's
/// view of the request). HTTP/1.0 may leave it out.
#[test]
fn a_request_without_exactly_one_host_is_refused() {
    let s = serve("host");
    let a = s.addr();
    for (request, want) in [
        (
            "GET /sub/small.txt HTTP/1.1\r\nConnection: close\r\n\r\n",
            400,
        ),
        (
            "GET /sub/small.txt HTTP/1.1\r\nHost: t\r\nHost: u\r\nConnection: close\r\n\r\n",
            400,
        ),
        (
            "GET /sub/small.txt HTTP/1.0\r\nHost: t\r\nHost: u\r\n\r\n",
            400,
        ),
        (
            "HEAD /sub/small.txt HTTP/1.1\r\nConnection: close\r\n\r\n",
            400,
        ),
        (
            "GET /sub/small.txt HTTP/1.1\r\nHost: a b\r\nConnection: close\r\n\r\n",
            400,
        ),
        (
            "GET /sub/small.txt HTTP/1.1\r\nHost: user@t\r\nConnection: close\r\n\r\n",
            400,
        ),
        // The port is digits (RFC 3986, section 3.2.3); `x:abc` was served.
        (
            "GET /sub/small.txt HTTP/1.1\r\nHost: t:abc\r\nConnection: close\r\n\r\n",
            400,
        ),
        (
            "GET /sub/small.txt HTTP/1.1\r\nHost: t:80a\r\nConnection: close\r\n\r\n",
            400,
        ),
        (
            "GET /sub/small.txt HTTP/1.1\r\nHost: [::1]:http\r\nConnection: close\r\n\r\n",
            400,
        ),
        (
            "GET /sub/small.txt HTTP/1.1\r\nHost: t:80:90\r\nConnection: close\r\n\r\n",
            400,
        ),
        ("GET /sub/small.txt HTTP/1.0\r\n\r\n", 200),
        (
            "GET /sub/small.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
            200,
        ),
        (
            "GET /sub/small.txt HTTP/1.1\r\nHost: [::1]:8080\r\nConnection: close\r\n\r\n",
            200,
        ),
        (
            "GET /sub/small.txt HTTP/1.1\r\nHost: [::1]\r\nConnection: close\r\n\r\n",
            200,
        ),
        // An empty port is one RFC 3986 allows (`port = *DIGIT`): the scheme's default.
        (
            "GET /sub/small.txt HTTP/1.1\r\nHost: t:\r\nConnection: close\r\n\r\n",
            200,
        ),
        // The target has no authority: the client sends an empty Host (RFC 9112, section 3.2).
        (
            "GET /sub/small.txt HTTP/1.1\r\nHost:\r\nConnection: close\r\n\r\n",
            200,
        ),
    ] {
        let r = raw(a, request);
        assert_eq!(r.status, want, "{request:?}");
    }
}

/// RFC 9110, section 9.3.2: a HEAD is answered with the header fields a GET would get, which
/// for the server's own documents includes the length of the body a GET would carry.
#[test]
fn head_of_the_service_documents_gives_their_length() {
    let s = serve("head-docs");
    let a = s.addr();
    let g = get(a, "/.well-known/foresight", None);
    let h = raw(
        a,
        "HEAD /.well-known/foresight HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    );
    assert_eq!((h.status, g.status), (200, 200));
    assert_eq!(
        h.header("content-length"),
        Some(g.body.len().to_string().as_str())
    );
    assert_eq!(h.header("content-type"), g.header("content-type"));
    // The metrics text grows as counters do, so only its presence can be compared.
    let m = raw(
        a,
        "HEAD /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(m.status, 200);
    let len: usize = m
        .header("content-length")
        .expect("HEAD /metrics has a Content-Length")
        .parse()
        .unwrap();
    assert!(len > 0);
    // And still no body: the next answer on the connection starts right after the head.
    let mut c = TcpStream::connect(a).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    c.write_all(b"HEAD /metrics HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    assert_eq!(read_response(&mut c, true).status, 200);
    c.write_all(b"GET /sub/small.txt HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let next = read_response(&mut c, false);
    assert_eq!(
        (next.status, next.body.as_slice()),
        (200, &b"hello, ranges\n"[..])
    );
}

/// `Range` is not a list of field lines (RFC 9110, sections 5.3 and 14.2): two of them combine to
/// `bytes=0-4, bytes=6-8`, which is broken syntax, answered 400 like any malformed range rather
/// than by whichever line the server happens to read (a cache in front may read the other).
#[test]
fn two_range_header_lines_are_a_malformed_range() {
    let s = serve("two-ranges");
    let r = raw(
        s.addr(),
        "GET /sub/small.txt HTTP/1.1\r\nHost: t\r\nRange: bytes=0-4\r\nRange: bytes=7-12\r\n\
         Connection: close\r\n\r\n",
    );
    assert_eq!(r.status, 400, "{:?}", String::from_utf8_lossy(&r.body));
    // With If-Range, which this server cannot validate, every Range is ignored: the whole file.
    let r = raw(
        s.addr(),
        "GET /sub/small.txt HTTP/1.1\r\nHost: t\r\nRange: bytes=0-4\r\nRange: bytes=7-12\r\n\
         If-Range: \"x\"\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(
        (r.status, r.body.as_slice()),
        (200, &b"hello, ranges\n"[..])
    );
}

/// Polls the unlabelled metric `name` until `done` holds for its value, for at most a minute
/// (the test waits for a state, not for a time).
fn wait_for_metric(addr: std::net::SocketAddr, name: &str, done: impl Fn(f64) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let v = common::metric(addr, name);
        if done(v) {
            return;
        }
        assert!(Instant::now() < deadline, "{name} stayed at {v}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The engine buffers lent to the readers of streams whose responses were abandoned (a client
/// that stopped reading, one that hung up mid-body) all come back once those streams idle out:
/// `/metrics` shows them lent while the readers live and zero after. (The memory held, which
/// counts buffers kept for reuse as well, does not return to zero, so it cannot show this.)
#[test]
fn engine_memory_lent_to_abandoned_streams_returns_to_zero() {
    use std::io::Read;
    let s = serve_with("lent", |c| {
        c.send_timeout = Duration::from_millis(200);
        c.stream_idle = Duration::from_secs(1);
    });
    let a = s.addr();
    common::write_file(&s, "huge.bin", HUGE_BYTES);
    let stalled = common::stalled_reader(a, "/huge.bin");
    let mut cut = TcpStream::connect(a).unwrap();
    cut.write_all(b"GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let mut some = [0u8; 64 << 10];
    cut.read_exact(&mut some).unwrap();
    drop(cut);
    wait_for_metric(a, "foresight_engine_memory_lent_bytes", |v| v > 0.0);
    drop(stalled);
    wait_for_metric(a, "foresight_engine_memory_lent_bytes", |v| v == 0.0);
    assert!(common::metric(a, "foresight_engine_memory_used_bytes") > 0.0);
    assert_eq!(get(a, "/sub/small.txt", None).status, 200);
}

/// A zero idle timeout is refused when the server starts: hyper's header timer would close every
/// connection whose request head is not there at once, keep-alive ones included.
#[test]
fn a_zero_idle_timeout_is_refused() {
    let mut cfg = foresight_net::server::ServerConfig::new(
        std::env::temp_dir(),
        "127.0.0.1:0".parse().unwrap(),
    );
    cfg.idle_timeout = Duration::ZERO;
    let e = foresight_net::server::spawn(cfg).unwrap_err().to_string();
    assert!(e.contains("--idle-timeout"), "{e}");
}

/// A peak ratio no device has is refused by its flag: the server published it, and its product
/// with `RB` overflowed in every client's condition 20 (`foresight get` panicked; now it ignores
/// such figures, so the mistake would go unnoticed).
#[test]
fn an_absurd_peak_ratio_is_refused() {
    for p in [1e308, 1e9] {
        let mut cfg = foresight_net::server::ServerConfig::new(
            std::env::temp_dir(),
            "127.0.0.1:0".parse().unwrap(),
        );
        cfg.peak_ratio = Some(p);
        let e = foresight_net::server::spawn(cfg).unwrap_err().to_string();
        assert!(e.contains("--peak-ratio"), "{p}: {e}");
    }
}

/// Clients that read slowly but steadily, one on every worker, do not keep a worker from the other
/// streams pinned to it: a worker whose response channel is full sets that response aside and
/// serves the next stream's request. (Before, each held its worker until its 48 MiB were sent, and
/// the small request waited behind it for hours.) The bound is generous: the request is answered
/// in milliseconds when the workers interleave, and never when they do not.
#[test]
fn slow_readers_on_every_worker_do_not_stall_other_streams() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let s = serve_with("slow-readers", |c| c.workers = 2);
    let a = s.addr();
    common::write_file(&s, "huge.bin", HUGE_BYTES);
    let stop = Arc::new(AtomicBool::new(false));
    let slow: Vec<_> = (0..2)
        .map(|_| common::slow_reader(a, "/huge.bin", stop.clone()))
        .collect();
    // Both slow responses are under way, one on each worker, before the small request arrives.
    wait_for_metric(a, "foresight_streams_created_total", |v| v >= 2.0);
    wait_for_metric(a, "foresight_body_bytes_total", |v| v > 0.0);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(get(a, "/sub/small.txt", None));
    });
    let answer = rx.recv_timeout(Duration::from_secs(20));
    stop.store(true, Ordering::SeqCst);
    for h in slow {
        assert!(h.join().unwrap() > 0, "a slow reader received nothing");
    }
    let answer = answer.expect("a request waited behind slow readers on every worker");
    assert_eq!(answer.status, 200);
    assert_eq!(answer.body, b"hello, ranges\n");
}

/// A request with `extra` header lines (each ending in CRLF) on a new connection.
fn get_with(addr: std::net::SocketAddr, method: &str, path: &str, extra: &str) -> common::Raw {
    common::raw(
        addr,
        &format!("{method} {path} HTTP/1.1\r\nHost: t\r\n{extra}Connection: close\r\n\r\n"),
    )
}

/// The server sends a strong `ETag` and a `Last-Modified` with every file, answers
/// `If-None-Match` (weakly compared, `*` for any file) and `If-Modified-Since` (only without
/// `If-None-Match`) with 304, and honours `Range` under `If-Range` only for a strong match.
#[test]
fn validators_are_sent_and_conditional_requests_are_answered() {
    let s = serve("validators");
    let a = s.addr();
    let path = s.root.join("v.bin");
    let old = content(100_000, 1);
    std::fs::write(&path, &old).unwrap();
    // An old modification time, so that the date is a strong validator for If-Range.
    let modified = std::time::UNIX_EPOCH + std::time::Duration::new(1_700_000_000, 123_456_789);
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(modified)
        .unwrap();
    let whole = get(a, "/v.bin", None);
    assert_eq!(whole.status, 200);
    let etag = whole.header("etag").expect("an ETag").to_string();
    assert!(
        etag.starts_with('"') && etag.ends_with('"'),
        "strong: {etag}"
    );
    assert_eq!(
        whole.header("last-modified"),
        Some("Tue, 14 Nov 2023 22:13:20 GMT")
    );
    let head = get_with(a, "HEAD", "/v.bin", "");
    assert_eq!(head.header("etag"), Some(etag.as_str()));
    let ranged = get(a, "/v.bin", Some("bytes=10-19"));
    assert_eq!(ranged.header("etag"), Some(etag.as_str()));

    let weak = format!("W/{etag}");
    for (method, extra) in [
        ("GET", format!("If-None-Match: {etag}\r\n")),
        ("GET", format!("If-None-Match: {weak}\r\n")),
        ("GET", "If-None-Match: *\r\n".to_string()),
        (
            "GET",
            format!("If-None-Match: \"x\"\r\nIf-None-Match: {etag}\r\n"),
        ),
        ("HEAD", format!("If-None-Match: \"x\", {etag}\r\n")),
        (
            "GET",
            "If-Modified-Since: Tue, 14 Nov 2023 22:13:20 GMT\r\n".into(),
        ),
        (
            "GET",
            "If-Modified-Since: Wed, 15 Nov 2023 00:00:00 GMT\r\n".into(),
        ),
        // A Range does not turn a 304 into a 206.
        (
            "GET",
            format!("If-None-Match: {etag}\r\nRange: bytes=0-9\r\n"),
        ),
    ] {
        let r = get_with(a, method, "/v.bin", &extra);
        assert_eq!(r.status, 304, "{method} {extra:?}");
        assert!(r.body.is_empty(), "{extra:?}: a 304 has no body");
        assert_eq!(r.header("etag"), Some(etag.as_str()), "{extra:?}");
    }
    for extra in [
        "If-None-Match: \"x\"\r\n",
        "If-Modified-Since: Tue, 14 Nov 2023 22:13:19 GMT\r\n",
        "If-Modified-Since: not a date\r\n",
        // If-None-Match present and not matching: If-Modified-Since is not looked at.
        "If-None-Match: \"x\"\r\nIf-Modified-Since: Wed, 15 Nov 2023 00:00:00 GMT\r\n",
    ] {
        let r = get_with(a, "GET", "/v.bin", extra);
        assert_eq!(r.status, 200, "{extra:?}");
        assert!(r.body == old, "{extra:?}");
    }

    // If-Range: the range for a strong match (the tag, or the exact date), else the whole file.
    for (if_range, status) in [
        (etag.clone(), 206),
        ("Tue, 14 Nov 2023 22:13:20 GMT".to_string(), 206),
        (weak.clone(), 200),
        ("\"x\"".to_string(), 200),
        ("Tue, 14 Nov 2023 22:13:21 GMT".to_string(), 200),
    ] {
        let r = get_with(
            a,
            "GET",
            "/v.bin",
            &format!("Range: bytes=10-19\r\nIf-Range: {if_range}\r\n"),
        );
        assert_eq!(r.status, status, "If-Range: {if_range}");
        let want = if status == 206 {
            &old[10..20]
        } else {
            &old[..]
        };
        assert!(r.body == want, "If-Range: {if_range}");
    }

    // Replaced by a file of the same length: a new tag, and the old one gets the whole new file.
    let new = content(100_000, 2);
    std::fs::write(s.root.join("v.tmp"), &new).unwrap();
    std::fs::rename(s.root.join("v.tmp"), &path).unwrap();
    // Modified a while ago, so that the new tag is strong (a file modified within the second
    // gets a weak one, which no If-Range satisfies).
    set_modified(&path, modified + std::time::Duration::from_secs(60));
    let r = get_with(
        a,
        "GET",
        "/v.bin",
        &format!("Range: bytes=10-19\r\nIf-Range: {etag}\r\n"),
    );
    assert_eq!(r.status, 200);
    assert!(r.body == new);
    let new_etag = r.header("etag").unwrap().to_string();
    assert_ne!(new_etag, etag);
    assert_eq!(
        get_with(a, "GET", "/v.bin", &format!("If-None-Match: {etag}\r\n")).status,
        200
    );
    let r = get_with(
        a,
        "GET",
        "/v.bin",
        &format!("Range: bytes=10-19\r\nIf-Range: {new_etag}\r\n"),
    );
    assert_eq!((r.status, &r.body[..]), (206, &new[10..20]));
}

/// A file whose modification time is ahead of the server's clock (a clock set wrong when it was
/// written, or a `touch -d` into the future) never gets that time as its `Last-Modified` (RFC
/// 9110, section 8.8.2.1: a server with a clock must not send a later one), but the time its
/// time was set (its status change), and sent back as a precondition that date is weighed
/// against the same, so a client echoing it is not refused (412) while the file is unchanged.
/// (A change after the date is `validators.rs`'s unit test: seconds are too coarse to make one
/// here without sleeping.)
#[test]
fn a_modification_time_in_the_future_is_not_sent_as_the_files_date() {
    use foresight_net::validators::{format_http_date, parse_http_date};
    let s = serve("future-mtime");
    let a = s.addr();
    let body = content(10_000, 4);
    touched_years_ahead(&s.root.join("f.bin"), &body, 10);
    for method in ["GET", "HEAD"] {
        let r = get_with(a, method, "/f.bin", "");
        assert_eq!(r.status, 200);
        let date = r.header("date").expect("a Date");
        let modified = r.header("last-modified").expect("a Last-Modified");
        let (date_s, modified_s) = (
            parse_http_date(date, 2026).unwrap(),
            parse_http_date(modified, 2026).unwrap(),
        );
        assert!(
            modified_s <= date_s,
            "{method}: Last-Modified {modified} is later than Date {date}"
        );
        // The date sent back is weighed against when the file's time was set (its status
        // change), not against that later time, which no date sent reaches: the file has not
        // changed since the date, so `If-Unmodified-Since` holds and `If-Modified-Since` gets
        // 304. Before, the file's own time was weighed: 412 and 200. A date from before the
        // time was set still fails the precondition.
        let r = get_with(
            a,
            "GET",
            "/f.bin",
            &format!("If-Unmodified-Since: {modified}\r\n"),
        );
        assert_eq!(r.status, 200, "If-Unmodified-Since: {modified}");
        assert!(r.body == body);
        let r = get_with(
            a,
            "GET",
            "/f.bin",
            &format!("If-Modified-Since: {modified}\r\n"),
        );
        assert_eq!(r.status, 304, "If-Modified-Since: {modified}");
        let an_hour_before = format_http_date(modified_s - 3600).unwrap();
        let r = get_with(
            a,
            "GET",
            "/f.bin",
            &format!("If-Unmodified-Since: {an_hour_before}\r\n"),
        );
        assert_eq!(r.status, 412, "If-Unmodified-Since: {an_hour_before}");
    }
}

/// Writes `body` to `path` and sets its modification time `years` ahead, as `touch -d` does.
fn touched_years_ahead(path: &std::path::Path, body: &[u8], years: u64) {
    std::fs::write(path, body).unwrap();
    let ahead = std::time::SystemTime::now() + Duration::from_secs(years * 365 * 86_400);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(ahead)
        .unwrap();
}

/// A file touched years ahead (`touch -d 2030-06-01`) kept a weak tag, and a `Last-Modified` of
/// the answer's date, a new one every second: `If-Range` never matched, and `foresight get` polled
/// a second for a strong tag and then took the file in one GET. Its tag is now strong once the
/// time was set a moment before (within a second and a little, on any file system), its date
/// is when the time was set and holds from one answer to the next, and `If-Range` with either
/// honours a `Range`. The bounds are loose, for a loaded machine.
#[test]
fn a_file_touched_into_the_future_gets_a_strong_tag_and_a_date_that_holds() {
    let s = serve("future-strong");
    let a = s.addr();
    let path = s.root.join("t.bin");
    let body = content(10_000, 6);
    touched_years_ahead(&path, &body, 5);
    let within = |what: &str, ok: &dyn Fn() -> bool| {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !ok() {
            assert!(Instant::now() < deadline, "no {what} within 10 s");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let head = || get_with(a, "HEAD", "/t.bin", "");
    within("strong tag", &|| {
        head().header("etag").is_some_and(|t| !t.starts_with("W/"))
    });
    let first = head();
    std::thread::sleep(Duration::from_millis(1100));
    let second = head();
    for name in ["etag", "last-modified"] {
        assert_eq!(first.header(name), second.header(name), "{name}");
    }
    let etag = first.header("etag").unwrap().to_string();
    let date = first.header("last-modified").unwrap().to_string();
    for if_range in [etag, date] {
        within(&format!("206 for If-Range: {if_range}"), &|| {
            let r = get_with(
                a,
                "GET",
                "/t.bin",
                &format!("Range: bytes=10-19\r\nIf-Range: {if_range}\r\n"),
            );
            r.status == 206 && r.body == body[10..20]
        });
    }
}

/// Sets `path`'s modification time.
/// A rewrite in place at the same size, whose modification time stays within the same whole
/// second (the same inode, length and `Last-Modified`), is another version to `If-None-Match`
/// and `If-Range`: the tag carries the time in nanoseconds. Only a date condition cannot tell
/// the two apart (`If-Modified-Since` with the old date is 304), as HTTP-dates hold whole
/// seconds; a client that has a tag sends it, and `If-None-Match` then overrides the date.
#[test]
fn a_same_size_rewrite_within_the_second_moves_the_tag_but_not_the_date() {
    use std::os::unix::fs::MetadataExt;
    let s = serve("same-second");
    let a = s.addr();
    let path = s.root.join("r.bin");
    let old = content(50_000, 3);
    std::fs::write(&path, &old).unwrap();
    let second = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
    set_modified(&path, second + std::time::Duration::from_millis(100));
    let first = get(a, "/r.bin", None);
    let tag = first.header("etag").unwrap().to_string();
    let date = first.header("last-modified").unwrap().to_string();
    assert!(tag.starts_with('"'), "strong: {tag}");
    let ino = std::fs::metadata(&path).unwrap().ino();
    // In place, the same length, 0.8 s later within the same second.
    let new = content(50_000, 4);
    std::fs::write(&path, &new).unwrap();
    set_modified(&path, second + std::time::Duration::from_millis(900));
    assert_eq!(std::fs::metadata(&path).unwrap().ino(), ino);
    let second_look = get(a, "/r.bin", None);
    assert_eq!(second_look.header("last-modified"), Some(date.as_str()));
    assert_ne!(second_look.header("etag"), Some(tag.as_str()));
    let r = get_with(a, "GET", "/r.bin", &format!("If-None-Match: {tag}\r\n"));
    assert_eq!(r.status, 200, "the old tag matched the new version");
    assert!(r.body == new);
    let r = get_with(
        a,
        "GET",
        "/r.bin",
        &format!("Range: bytes=0-9\r\nIf-Range: {tag}\r\n"),
    );
    assert_eq!(
        r.status, 200,
        "a range of the new version under the old tag"
    );
    assert!(r.body == new);
    let r = get_with(
        a,
        "GET",
        "/r.bin",
        &format!("If-None-Match: {tag}\r\nIf-Modified-Since: {date}\r\n"),
    );
    assert_eq!(r.status, 200, "the date overrode the tag");
    let r = get_with(
        a,
        "GET",
        "/r.bin",
        &format!("If-Modified-Since: {date}\r\n"),
    );
    assert_eq!(
        r.status, 304,
        "a date of whole seconds cannot see the rewrite"
    );
}

/// `/metrics` and `/.well-known/foresight` are the server's own documents however the path is
/// written: `/%6detrics` (an escaped letter) and `//metrics` name `/metrics` as they name a
/// file. Compared as written, those served the root's file `metrics`, which `/metrics` never
/// reaches, so one resource had two answers by the spelling of its name.
#[test]
fn the_servers_documents_are_found_by_their_decoded_names() {
    let s = serve("documents");
    let a = s.addr();
    std::fs::write(s.root.join("metrics"), b"a file").unwrap();
    std::fs::create_dir_all(s.root.join(".well-known")).unwrap();
    std::fs::write(s.root.join(".well-known/foresight"), b"a file").unwrap();
    for path in [
        "/metrics",
        "/%6detrics",
        "//metrics",
        "/./metrics",
        "/%6D%65trics",
    ] {
        let r = get(a, path, None);
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(
            r.header("content-type"),
            Some("text/plain; version=0.0.4"),
            "{path}: {:?}",
            String::from_utf8_lossy(&r.body)
        );
    }
    for path in [
        "/.well-known/foresight",
        "/.well-known/%66oresight",
        "//.well-known//foresight",
        "/%2ewell-known/foresight",
    ] {
        let r = get(a, path, None);
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(r.header("content-type"), Some("application/json"), "{path}");
    }
    // A directory's form is a directory's, as for a file.
    assert_eq!(get(a, "/metrics/", None).status, 404);
    // An escaped slash separates nothing: it named the document, as it named a file's directory.
    let r = get(a, "/.well-known%2Fforesight", None);
    assert_eq!(r.status, 400, "{:?}", String::from_utf8_lossy(&r.body));
}

/// An escaped slash (`%2F`) is part of a name, not a separator. The path was decoded before it
/// was split, so `/sub%2Ff.bin` served the file `f.bin` in the directory `sub`; now it is a bad
/// request that says what to write, and `/sub/f.bin` still serves the file.
#[test]
fn an_escaped_slash_is_no_separator() {
    let s = serve("escaped-slash");
    let a = s.addr();
    std::fs::create_dir_all(s.root.join("sub")).unwrap();
    std::fs::write(s.root.join("sub/f.bin"), b"inside").unwrap();
    assert_eq!(get(a, "/sub/f.bin", None).status, 200);
    for path in ["/sub%2Ff.bin", "/sub%2ff.bin", "/sub/f.bin%2F"] {
        let r = get(a, path, None);
        let body = String::from_utf8_lossy(&r.body);
        assert_eq!(r.status, 400, "{path}: {body}");
        assert!(
            body.contains("%2F") && body.contains("write `/`"),
            "{path}: {body}"
        );
    }
}

fn set_modified(path: &std::path::Path, t: std::time::SystemTime) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

/// `If-Match` (strong comparison, `*` for any file) and `If-Unmodified-Since` (only without
/// `If-Match`; a date that does not parse is ignored) are honoured: failing, they get 412, ahead
/// of any 304, on a connection that goes on serving. Before, both were ignored.
#[test]
fn if_match_and_if_unmodified_since_fail_with_412() {
    let s = serve("preconditions");
    let a = s.addr();
    let path = s.root.join("p.bin");
    let body = content(50_000, 5);
    std::fs::write(&path, &body).unwrap();
    set_modified(
        &path,
        std::time::UNIX_EPOCH + Duration::new(1_700_000_000, 0),
    );
    let etag = get(a, "/p.bin", None).header("etag").unwrap().to_string();
    assert!(etag.starts_with('"'), "strong: {etag}");
    let date = "Tue, 14 Nov 2023 22:13:20 GMT";
    let before = "Tue, 14 Nov 2023 22:13:19 GMT";
    for (method, extra, status) in [
        ("GET", format!("If-Match: {etag}\r\n"), 200),
        ("GET", "If-Match: *\r\n".to_string(), 200),
        ("GET", format!("If-Match: \"x\", {etag}\r\n"), 200),
        ("GET", format!("If-Match: W/{etag}\r\n"), 412),
        ("GET", "If-Match: \"x\"\r\n".to_string(), 412),
        ("HEAD", "If-Match: \"x\"\r\n".to_string(), 412),
        ("GET", format!("If-Unmodified-Since: {date}\r\n"), 200),
        ("GET", format!("If-Unmodified-Since: {before}\r\n"), 412),
        (
            "GET",
            "If-Unmodified-Since: not a date\r\n".to_string(),
            200,
        ),
        // If-Match present: If-Unmodified-Since is not looked at.
        (
            "GET",
            format!("If-Match: {etag}\r\nIf-Unmodified-Since: {before}\r\n"),
            200,
        ),
        // A failed precondition comes before a 304.
        (
            "GET",
            format!("If-Match: \"x\"\r\nIf-None-Match: {etag}\r\n"),
            412,
        ),
        (
            "GET",
            format!("If-Unmodified-Since: {before}\r\nIf-Modified-Since: {date}\r\n"),
            412,
        ),
        (
            "GET",
            format!("If-Match: {etag}\r\nIf-None-Match: {etag}\r\n"),
            304,
        ),
        // Holding, it leaves Range and If-Range to decide as before.
        (
            "GET",
            format!("If-Match: {etag}\r\nRange: bytes=0-9\r\nIf-Range: {etag}\r\n"),
            206,
        ),
    ] {
        let r = get_with(a, method, "/p.bin", &extra);
        assert_eq!(r.status, status, "{method} {extra:?}");
        match status {
            200 if method == "GET" => assert!(r.body == body, "{extra:?}"),
            206 => assert_eq!(r.body, &body[..10]),
            412 | 304 => assert!(!r.body.windows(4).any(|w| w == &body[..4])),
            _ => {}
        }
    }
    // A 412 leaves its connection open for the next request, as other refusals do.
    let mut c = TcpStream::connect(a).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    c.write_all(b"GET /p.bin HTTP/1.1\r\nHost: t\r\nIf-Match: \"x\"\r\n\r\n")
        .unwrap();
    let refused = read_response(&mut c, false);
    assert_eq!(refused.status, 412);
    assert!(String::from_utf8_lossy(&refused.body).contains("precondition failed"));
    c.write_all(b"GET /p.bin HTTP/1.1\r\nHost: t\r\nRange: bytes=5-9\r\n\r\n")
        .unwrap();
    let next = read_response(&mut c, false);
    assert_eq!((next.status, &next.body[..]), (206, &body[5..10]));
}

/// A tag is strong only for a file modified at least a second before the answer. A file set an
/// hour ahead of the clock (as a just-written one is within the second) gets a weak tag, which
/// no `If-Range` or `If-Match` naming it satisfies and `If-None-Match` still does; set an hour
/// back, the same file gets the tag strong, and `If-Range` with it honours the range.
#[test]
fn a_recently_modified_file_gets_a_weak_tag() {
    let s = serve("weak-tag");
    let a = s.addr();
    let path = s.root.join("w.bin");
    let body = content(20_000, 6);
    std::fs::write(&path, &body).unwrap();
    let now = std::time::SystemTime::now();
    set_modified(&path, now + Duration::from_secs(3600));
    let weak = get_with(a, "HEAD", "/w.bin", "")
        .header("etag")
        .unwrap()
        .to_string();
    let opaque = weak.strip_prefix("W/").expect("a weak tag").to_string();
    for (extra, status) in [
        (format!("Range: bytes=0-9\r\nIf-Range: {opaque}\r\n"), 200),
        (format!("If-Match: {opaque}\r\n"), 412),
        (format!("If-Match: {weak}\r\n"), 412),
        ("If-Match: *\r\n".to_string(), 200),
        (format!("If-None-Match: {weak}\r\n"), 304),
        (format!("If-None-Match: {opaque}\r\n"), 304),
    ] {
        let r = get_with(a, "GET", "/w.bin", &extra);
        assert_eq!(r.status, status, "{extra:?}");
        assert_eq!(r.header("etag").unwrap_or(weak.as_str()), weak, "{extra:?}");
    }
    set_modified(&path, now - Duration::from_secs(3600));
    let strong = get_with(a, "HEAD", "/w.bin", "")
        .header("etag")
        .unwrap()
        .to_string();
    assert!(strong.starts_with('"'), "{strong}");
    let r = get_with(
        a,
        "GET",
        "/w.bin",
        &format!("Range: bytes=0-9\r\nIf-Range: {strong}\r\n"),
    );
    assert_eq!((r.status, &r.body[..]), (206, &body[..10]));
}

/// Reads a response head from `c` (byte by byte, so that nothing of the body is taken) and
/// returns its status and Content-Length.
fn read_head_only(c: &mut TcpStream) -> (u16, usize) {
    use std::io::Read;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(c.read(&mut byte).unwrap(), 1, "closed inside the head");
        head.push(byte[0]);
    }
    let text = String::from_utf8(head).unwrap();
    let status = text.split(' ').nth(1).unwrap().parse().unwrap();
    let len = text
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().unwrap())
        })
        .unwrap();
    (status, len)
}

/// Two responses of one stream, the file replaced between them: the older, begun on the old
/// file and held up by its client, ends with the old file's bytes after the newer one (the new
/// file) is served on the same worker. Before, the newer request's reader replaced the stream's
/// only reader, and the older response, taken up again, found the path naming another file and
/// was cut short (`FileChanged`).
#[test]
fn a_response_begun_before_its_file_was_replaced_ends_from_the_old_file() {
    use std::io::Read;
    let s = serve("two-versions");
    let a = s.addr();
    // Far more than the response's channel (four 256 KiB chunks) and the small socket buffers
    // hold, so that the older response is still under way when the newer one is served.
    let old = content(16 << 20, 8);
    let new = content(16 << 20, 9);
    std::fs::write(s.root.join("r.bin"), &old).unwrap();
    let mut older = common::small_buffer_connection(a);
    older
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    older
        .write_all(b"GET /r.bin HTTP/1.1\r\nHost: t\r\nx-foresight-stream: shared\r\n\r\n")
        .unwrap();
    assert_eq!(read_head_only(&mut older), (200, old.len()));
    std::fs::write(s.root.join("r.tmp"), &new).unwrap();
    std::fs::rename(s.root.join("r.tmp"), s.root.join("r.bin")).unwrap();
    let newer = get_as_stream(a, "/r.bin", "shared");
    assert_eq!(newer.status, 200);
    assert!(newer.body == new, "the newer request got other bytes");
    // Read up to its length (the connection stays open for another request), or its end.
    let mut rest = vec![0u8; old.len()];
    let mut got = 0;
    let end = loop {
        match older.read(&mut rest[got..]) {
            Ok(0) => break "the connection closed".to_string(),
            Ok(n) => got += n,
            Err(e) => break e.to_string(),
        }
        if got == old.len() {
            break String::new();
        }
    };
    assert!(
        got == old.len(),
        "the older response was cut after {got} of {} bytes: {end}",
        old.len()
    );
    assert!(rest == old, "the older response mixed in other bytes");
}

/// A file rewritten in place (same inode, same length, other bytes, a later time) while its
/// response is under way: the response must not end cleanly at its full length with new bytes
/// after old ones under the old tag; it is cut short instead (the client sees the connection close
/// before the announced length). Before, the worker read on through its open descriptor and sent
/// the rest of the new version, a mix no client could detect.
#[test]
fn a_file_rewritten_in_place_during_its_response_is_never_sent_mixed() {
    use std::io::Read;
    use std::os::unix::fs::FileExt;
    let s = serve("rewritten");
    let a = s.addr();
    // Far more than the response's channel, the socket buffers and the readahead hold, so that
    // most of the response is read from the file after the rewrite.
    let old = content(32 << 20, 10);
    let new = content(32 << 20, 11);
    let path = s.root.join("w.bin");
    std::fs::write(&path, &old).unwrap();
    let mut c = common::small_buffer_connection(a);
    c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    c.write_all(b"GET /w.bin HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    assert_eq!(read_head_only(&mut c), (200, old.len()));
    // A slow start: a little taken, so the response is begun and then held up by its client.
    let mut body = vec![0u8; old.len()];
    let mut got = 0;
    while got < 64 << 10 {
        match c.read(&mut body[got..(64 << 10)]) {
            Ok(0) | Err(_) => panic!("the response ended after {got} bytes before the rewrite"),
            Ok(n) => got += n,
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let f = std::fs::File::options().write(true).open(&path).unwrap();
    f.write_all_at(&new, 0).unwrap();
    // A time clearly apart from the first, whatever the file system's timestamp granularity.
    f.set_modified(std::time::SystemTime::now() + Duration::from_secs(5))
        .unwrap();
    drop(f);
    let end = loop {
        match c.read(&mut body[got..]) {
            Ok(0) => break "the connection closed".to_string(),
            Ok(n) => got += n,
            Err(e) => break e.to_string(),
        }
        if got == old.len() {
            break String::new();
        }
    };
    let first_new = body[..got]
        .iter()
        .zip(&new)
        .zip(&old)
        .position(|((b, n), o)| b == n && n != o);
    assert!(
        got < old.len(),
        "a complete response ({got} bytes) after an in-place rewrite; first new byte at \
         {first_new:?}, old throughout: {}",
        body == old
    );
    assert!(!end.is_empty(), "cut short without an end");
    // Whatever arrived was read before the rewrite: the old file's beginning.
    assert!(
        body[..got] == old[..got],
        "the {got} bytes sent hold new bytes from {first_new:?}"
    );
    // A fresh request gets the new version whole.
    let again = common::get(a, "/w.bin", None);
    assert_eq!(again.status, 200);
    assert!(again.body == new, "the next response is not the new file");
}
