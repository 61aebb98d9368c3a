//! `foresight get`'s client against `foresight serve`, nginx and the delay proxy.

mod common;

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{content, read_request_head, serve, write_file, BIG_BYTES};
use foresight_core::{Bandwidth, ByteLen};
use foresight_net::client::{Client, ClientConfig, Url};
use foresight_net::proxy::{self, ProxyConfig};
use foresight_policy::adaptive::AlphaMode;

fn client(alpha: AlphaMode) -> Client {
    Client::new(ClientConfig {
        alpha,
        ..ClientConfig::default()
    })
    .unwrap()
}

#[test]
fn get_is_byte_identical_from_serve() {
    let s = serve("get");
    for alpha in [AlphaMode::Auto, AlphaMode::Fixed(1), AlphaMode::Fixed(7)] {
        let url: Url = format!("http://{}/big.bin", s.addr()).parse().unwrap();
        let mut out = Vec::new();
        let r = client(alpha).get(&url, &mut out).unwrap();
        assert!(out == s.big, "{alpha}: {} bytes differ", out.len());
        assert_eq!(r.bytes, BIG_BYTES as u64);
        assert_eq!(r.wasted_bytes, 0);
        assert!(r.server.is_some(), "the server's figures were read");
        if let AlphaMode::Fixed(n) = alpha {
            assert_eq!(r.alpha, n);
        }
    }
    let url: Url = format!("http://{}/sub/small.txt", s.addr())
        .parse()
        .unwrap();
    let mut out = Vec::new();
    client(AlphaMode::Auto).get(&url, &mut out).unwrap();
    assert_eq!(out, b"hello, ranges\n");
    let missing: Url = format!("http://{}/nope", s.addr()).parse().unwrap();
    assert!(client(AlphaMode::Auto)
        .get(&missing, &mut Vec::new())
        .is_err());
}

/// Random reads of an empty file measure nothing: an error that says so, not a report of 64
/// reads with no request and 0 MiB/s that exits 0 (as `--reads 0` is refused for the same reason).
#[test]
fn random_reads_of_an_empty_file_are_an_error() {
    let s = serve("random-empty");
    let url: Url = format!("http://{}/empty", s.addr()).parse().unwrap();
    let r = client(AlphaMode::Auto).random_reads(&url, ByteLen(4096), 64, 1);
    let e = r.map(|r| r.requests).unwrap_err();
    assert!(e.to_string().contains("empty"), "{e}");
}

#[test]
fn random_reads_move_at_most_their_size_plus_one_unit() {
    let s = serve("random");
    let url: Url = format!("http://{}/big.bin", s.addr()).parse().unwrap();
    let unit = 1u64 << 20;
    for size in [4096u64, 64 << 10, 1 << 20, 3 << 20] {
        let reads = 12;
        let r = client(AlphaMode::Fixed(4))
            .random_reads(&url, ByteLen(size), reads, 3)
            .unwrap();
        let asked = size * u64::from(reads);
        assert_eq!(r.bytes, asked);
        let bound = (asked as f64 * 1.1) as u64 + u64::from(reads) * unit;
        assert!(
            r.transferred_bytes <= bound,
            "size {size}: {} transferred for {asked} asked",
            r.transferred_bytes
        );
    }
}

#[test]
fn the_proxy_adds_its_delay_and_keeps_the_bytes() {
    let s = serve("proxy");
    let delay = Duration::from_millis(5);
    let p = proxy::spawn(ProxyConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream: s.addr().to_string(),
        delay,
        bandwidth: Some(Bandwidth::from_bytes_per_s(1e9 / 8.0)),
        max_connections: 256,
        send_timeout: proxy::DEFAULT_SEND_TIMEOUT,
        idle_timeout: proxy::DEFAULT_IDLE_TIMEOUT,
    })
    .unwrap();
    let url: Url = format!("http://{}/big.bin", p.local_addr())
        .parse()
        .unwrap();
    let mut out = Vec::new();
    let r = client(AlphaMode::Auto).get(&url, &mut out).unwrap();
    assert!(out == s.big);
    // Every exchange crosses the proxy twice, so no round trip can be shorter than two delays.
    assert!(r.rtt_ms >= 10.0, "rtt {} ms", r.rtt_ms);
    // With a 10 ms round trip and a 1 Gbit/s path, condition 20 asks for more than one unit.
    assert!(r.alpha_max > 1, "alpha {}", r.alpha_max);
    assert!(
        p.stats()
            .bytes_down
            .load(std::sync::atomic::Ordering::Relaxed)
            >= BIG_BYTES as u64
    );
    p.shutdown();
}

struct Nginx {
    child: Child,
    dir: std::path::PathBuf,
    /// Removes `dir` once nginx is stopped (fields drop after `Drop::drop`), also when the
    /// test fails and unwinds.
    _tmp: tempfile::TempDir,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn nginx_binary() -> Option<std::path::PathBuf> {
    [
        "/usr/sbin/nginx",
        "/usr/bin/nginx",
        "/usr/local/sbin/nginx",
        "/usr/local/nginx/sbin/nginx",
    ]
    .iter()
    .map(std::path::PathBuf::from)
    .find(|p| p.exists())
}

#[test]
fn get_is_byte_identical_from_nginx() {
    let Some(bin) = nginx_binary() else {
        assert!(
            std::env::var("FORESIGHT_REQUIRE_NGINX").as_deref() != Ok("1"),
            "FORESIGHT_REQUIRE_NGINX=1 but nginx is not installed (apt-get install -y nginx)"
        );
        println!("nginx is not installed: the nginx check is skipped (set FORESIGHT_REQUIRE_NGINX=1 to fail instead)");
        return;
    };
    let tmp = tempfile::Builder::new()
        .prefix("foresight-nginx-")
        .tempdir()
        .unwrap();
    let dir = tmp.path().to_path_buf();
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(dir.join("logs")).unwrap();
    let data = content(3 * 1024 * 1024 + 777, 11);
    std::fs::write(root.join("data.bin"), &data).unwrap();
    // A free port: bind, read it, release it for nginx.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let conf = format!(
        "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/logs/error.log;\n\
events {{ worker_connections 256; }}\nhttp {{\n access_log off;\n client_body_temp_path {d}/cb;\n proxy_temp_path {d}/pt;\n\
 fastcgi_temp_path {d}/ft;\n uwsgi_temp_path {d}/ut;\n scgi_temp_path {d}/st;\n\
 server {{ listen 127.0.0.1:{port}; root {r}; }}\n}}\n",
        d = dir.display(),
        r = root.display()
    );
    std::fs::write(dir.join("nginx.conf"), conf).unwrap();
    let child = Command::new(&bin)
        .args([
            "-p",
            &dir.display().to_string(),
            "-c",
            &dir.join("nginx.conf").display().to_string(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut ng = Nginx {
        child,
        dir,
        _tmp: tmp,
    };
    let addr = format!("127.0.0.1:{port}");
    let mut up = false;
    for _ in 0..200 {
        if std::net::TcpStream::connect(&addr).is_ok() {
            up = true;
            break;
        }
        if let Ok(Some(status)) = ng.child.try_wait() {
            panic!(
                "nginx exited at startup: {status}; see {}",
                ng.dir.join("logs/error.log").display()
            );
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    assert!(up, "nginx did not listen on {addr}");
    let url: Url = format!("http://{addr}/data.bin").parse().unwrap();
    for alpha in [AlphaMode::Auto, AlphaMode::Fixed(3)] {
        let mut out = Vec::new();
        let r = client(alpha).get(&url, &mut out).unwrap();
        assert!(out == data, "{alpha}: nginx download differs");
        assert!(r.server.is_none(), "nginx publishes no figures");
        assert!(r.ranges);
    }
    let _ = &mut ng;
}

/// One request as a [`tiny_server`] handler sees it.
struct Req {
    method: String,
    path: String,
    /// How many requests for this method and path came before this one (any connection).
    seen: usize,
    /// The first and last byte of a `Range: bytes=first-last` header, if there was one.
    range: Option<(u64, u64)>,
    /// The `If-Range` header, if there was one.
    if_range: Option<String>,
    /// The `If-None-Match` or `If-Modified-Since` header, if there was one, as `name: value`.
    unless: Option<String>,
}

/// The headers of a scripted server that honours ranges, with the strong tag under which a client
/// puts ranges together (without one it fetches the file in one `GET`).
const RANGES: &str = "Accept-Ranges: bytes\r\nETag: \"v1\"\r\n";

/// A scripted HTTP server: each connection runs on its own thread and hands every request head
/// to `respond`, which writes the answer and says whether to keep the connection for another.
fn tiny_server(
    respond: impl Fn(&Req, &mut std::net::TcpStream) -> bool + Send + Sync + 'static,
) -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let respond = std::sync::Arc::new(respond);
    let counts = std::sync::Arc::new(std::sync::Mutex::new(std::collections::HashMap::<
        String,
        usize,
    >::new()));
    std::thread::spawn(move || {
        for c in listener.incoming() {
            let Ok(mut c) = c else { continue };
            let (respond, counts) = (respond.clone(), counts.clone());
            std::thread::spawn(move || loop {
                let Some((text, method, path)) = read_request_head(&mut c) else {
                    return;
                };
                let seen = {
                    let mut m = counts.lock().unwrap();
                    let n = m.entry(format!("{method} {path}")).or_default();
                    *n += 1;
                    *n - 1
                };
                let range = text.lines().find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    let v = v.trim().strip_prefix("bytes=")?;
                    let (first, last) = v.split_once('-')?;
                    k.eq_ignore_ascii_case("range")
                        .then(|| Some((first.parse().ok()?, last.parse().ok()?)))?
                });
                let if_range = text.lines().find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("if-range")
                        .then(|| v.trim().to_string())
                });
                let unless = text.lines().find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    (k.eq_ignore_ascii_case("if-none-match")
                        || k.eq_ignore_ascii_case("if-modified-since"))
                    .then(|| format!("{}: {}", k.to_ascii_lowercase(), v.trim()))
                });
                let req = Req {
                    method,
                    path,
                    seen,
                    range,
                    if_range,
                    unless,
                };
                if !respond(&req, &mut c) {
                    return;
                }
            });
        }
    });
    addr
}

/// For a `GET /f.bin`, writes the head of a 200 of `data` and returns true: the caller sends the
/// body its own way. Anything else gets the ordinary whole answer ([`answer`]) and false.
fn body_follows(req: &Req, c: &mut std::net::TcpStream, data: &[u8]) -> bool {
    use std::io::Write;
    if req.method != "GET" || req.path != "/f.bin" {
        let _ = answer(req, c, "HTTP/1.1", "", data);
        return false;
    }
    let _ = c
        .write_all(format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", data.len()).as_bytes());
    true
}

/// Writes a whole-file answer (headers only for HEAD; 404 for any other path than `/f.bin`).
fn answer(
    req: &Req,
    c: &mut std::net::TcpStream,
    version: &str,
    extra: &str,
    data: &[u8],
) -> std::io::Result<()> {
    use std::io::Write;
    if req.path != "/f.bin" {
        return c.write_all(
            format!("{version} 404 Not Found\r\nContent-Length: 0\r\n{extra}\r\n").as_bytes(),
        );
    }
    c.write_all(
        format!(
            "{version} 200 OK\r\nContent-Length: {}\r\n{extra}\r\n",
            data.len()
        )
        .as_bytes(),
    )?;
    if req.method == "GET" {
        c.write_all(data)?;
    }
    Ok(())
}

/// A server like `python3 -m http.server`: HTTP/1.0, no ranges, one request per connection.
#[test]
fn get_from_a_server_that_closes_after_each_response() {
    let data = std::sync::Arc::new(content(300_001, 5));
    let d = data.clone();
    let addr = tiny_server(move |req, c| {
        let _ = answer(req, c, "HTTP/1.0", "", &d);
        false
    });
    let url: Url = format!("http://{addr}/f.bin").parse().unwrap();
    // The connection of the HEAD must not be taken for the GET: each download would otherwise
    // fail whenever the client had not yet seen that connection close.
    for i in 0..40 {
        let mut out = Vec::new();
        let r = client(AlphaMode::Auto)
            .get(&url, &mut out)
            .unwrap_or_else(|e| panic!("download {i}: {e}"));
        assert!(out == *data, "download {i} differs");
        assert!(!r.ranges);
    }
    // A plain GET whose connection closes before any byte of an answer is sent again on a new
    // connection.
    let d = data.clone();
    let addr = tiny_server(move |req, c| {
        if req.method == "GET" && req.path == "/f.bin" && req.seen == 0 {
            return false;
        }
        let _ = answer(req, c, "HTTP/1.1", "", &d);
        true
    });
    let url: Url = format!("http://{addr}/f.bin").parse().unwrap();
    let mut out = Vec::new();
    client(AlphaMode::Auto).get(&url, &mut out).unwrap();
    assert!(out == *data);
}

/// A server that advertises no byte ranges (as `python3 -m http.server`), or gives no length, is
/// downloaded in one GET; that happened without a word, whatever `--alpha` asked for, and the
/// report's alpha of 0 was all there was to tell. A note now says why, naming the header.
#[test]
fn a_download_without_ranges_says_why_it_is_one_get() {
    use std::io::Write;
    let data = std::sync::Arc::new(content(300_001, 7));
    let d = data.clone();
    let addr = tiny_server(move |req, c| {
        if req.path == "/chunked.bin" {
            // Ranges advertised, but no length: the body is chunked.
            let _ = c.write_all(
                b"HTTP/1.1 200 OK\r\nAccept-Ranges: bytes\r\nTransfer-Encoding: chunked\r\n\r\n",
            );
            if req.method == "GET" {
                let _ = c.write_all(format!("{:x}\r\n", d.len()).as_bytes());
                let _ = c.write_all(&d);
                let _ = c.write_all(b"\r\n0\r\n\r\n");
            } else {
                let _ = c.write_all(b"0\r\n\r\n");
            }
            return false;
        }
        answer(req, c, "HTTP/1.1", "", &d).is_ok()
    });
    for (path, why) in [
        (
            "/f.bin",
            "does not advertise byte ranges (no `Accept-Ranges: bytes`",
        ),
        ("/chunked.bin", "gives no length (Content-Length)"),
    ] {
        let url: Url = format!("http://{addr}{path}").parse().unwrap();
        let notes = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let kept = notes.clone();
        let c =
            client(AlphaMode::Fixed(4)).with_notes(foresight_net::client::Notes::new(move |t| {
                kept.lock().unwrap().push(t.to_string())
            }));
        let mut out = Vec::new();
        let r = c
            .get(&url, &mut out)
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        assert!(out == *data, "{path}: {} bytes delivered", out.len());
        assert!(!r.ranges, "{path}");
        let notes = notes.lock().unwrap().clone();
        assert!(
            notes
                .iter()
                .any(|n| n.contains(why) && n.contains("in one GET") && n.contains(path)),
            "{path}: {notes:#?}"
        );
    }
}

/// A plain `GET` (the server honours no ranges) answered 503 is sent again, with a note, as
/// `get --help` says of the whole-file `GET` until its answer begins: a 503 is the server's way
/// of saying "not now", and nothing of the file has been handed on. Before, the 503 ended the
/// download at once with `GET answered 503`.
#[test]
fn a_plain_get_answered_503_is_sent_again_with_a_note() {
    use std::io::Write;
    let data = std::sync::Arc::new(content(300_001, 6));
    let d = data.clone();
    let addr = tiny_server(move |req, c| {
        if req.method == "GET" && req.path == "/f.bin" && req.seen < 2 {
            let _ = c.write_all(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n");
            return true;
        }
        answer(req, c, "HTTP/1.1", "", &d).is_ok()
    });
    let url: Url = format!("http://{addr}/f.bin").parse().unwrap();
    let notes = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let kept = notes.clone();
    let c = client(AlphaMode::Auto).with_notes(foresight_net::client::Notes::new(move |t| {
        kept.lock().unwrap().push(t.to_string())
    }));
    let mut out = Vec::new();
    let r = c
        .get(&url, &mut out)
        .unwrap_or_else(|e| panic!("the 503 was not sent again: {e}"));
    assert!(out == *data, "{} bytes delivered", out.len());
    assert!(!r.ranges);
    let notes = notes.lock().unwrap().clone();
    for attempt in 1..=2 {
        assert!(
            notes.iter().any(|n| n.contains("GET")
                && n.contains(&format!("attempt {attempt} of 3 failed"))
                && n.contains("503")),
            "no note of attempt {attempt}: {notes:#?}"
        );
    }
}

/// The opening `HEAD` whose connection the server closes without an answer (as `foresight serve`
/// does to connections beyond `--max-connections`) is sent again on a new connection, as range
/// requests are. Before, the download failed at once with `connection: channel closed` whenever
/// another client held the server's last connection slot for a moment.
#[test]
fn a_head_whose_connection_closes_unanswered_is_sent_again() {
    let data = std::sync::Arc::new(content(300_001, 8));
    let d = data.clone();
    let addr = tiny_server(move |req, c| {
        if req.method == "HEAD" && req.seen < 2 {
            return false;
        }
        answer(req, c, "HTTP/1.1", RANGES, &d).is_ok()
    });
    let url: Url = format!("http://{addr}/f.bin").parse().unwrap();
    let mut out = Vec::new();
    client(AlphaMode::Auto)
        .get(&url, &mut out)
        .unwrap_or_else(|e| panic!("the HEAD was not sent again: {e}"));
    assert!(out == *data);
}

/// Downloads from `addr`, whose server answers nothing, and checks that the error names the
/// server's close and its likely cause (a connection limit).
fn assert_named_a_close_without_an_answer(addr: std::net::SocketAddr) {
    let url: Url = format!("http://{addr}/f.bin").parse().unwrap();
    let e = client(AlphaMode::Auto)
        .get(&url, &mut Vec::new())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("closed the connection without answering") && e.contains("connection limit"),
        "{e}"
    );
}

/// A server that closes every connection at once, as `foresight serve` does beyond
/// `--max-connections`, is reported as closing connections without an answer, with the likely
/// cause. Before, the message was hyper's alone: `connection: channel closed`.
#[test]
fn a_server_that_closes_every_connection_unanswered_is_named_as_such() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for c in listener.incoming() {
            drop(c);
        }
    });
    assert_named_a_close_without_an_answer(addr);
}

/// A server that closes each connection once its request has arrived, unread, resets it (the
/// kernel's answer to closing a socket with data unread): that too is a close without an answer.
/// Before, it read "HEAD: request failed: connection error: Connection reset by peer", and which
/// of the two messages a server at its limit drew depended on how fast the request came in.
#[test]
fn a_server_that_resets_every_connection_unanswered_is_named_as_such() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for c in listener.incoming().flatten() {
            c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            // Wait for the request, leave it unread, and close: a reset, not an end of file.
            let _ = c.peek(&mut [0u8; 1]);
            drop(c);
        }
    });
    assert_named_a_close_without_an_answer(addr);
}

/// A sink that reports the first bytes it is given.
struct Signalling {
    out: Vec<u8>,
    first: Option<std::sync::mpsc::Sender<()>>,
}

impl std::io::Write for Signalling {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.out.extend_from_slice(b);
        if !b.is_empty() {
            if let Some(tx) = self.first.take() {
                let _ = tx.send(());
            }
        }
        Ok(b.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Without ranges the body is handed on as it arrives, not gathered first, and the request
/// timeout bounds the time without data, not the whole download.
#[test]
fn a_plain_get_streams_its_body_and_times_out_only_when_idle() {
    use std::io::Write;
    let data = std::sync::Arc::new(content(1_000_003, 9));
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let rx = std::sync::Mutex::new(rx);
    let d = data.clone();
    let addr = tiny_server(move |req, c| {
        if !body_follows(req, c, &d) {
            return true;
        }
        let half = d.len() / 2;
        let _ = c.write_all(&d[..half]);
        // The rest only once the client's sink has seen the first half: a client that gathers
        // the body before handing it on never gets it.
        if rx
            .lock()
            .unwrap()
            .recv_timeout(Duration::from_secs(2))
            .is_err()
        {
            return false;
        }
        let _ = c.write_all(&d[half..]);
        true
    });
    let url: Url = format!("http://{addr}/f.bin").parse().unwrap();
    let mut sink = Signalling {
        out: Vec::new(),
        first: Some(tx),
    };
    client(AlphaMode::Auto).get(&url, &mut sink).unwrap();
    assert!(sink.out == *data);

    // Pieces a third of the timeout apart, for twice the timeout in all.
    let timeout = Duration::from_millis(900);
    let d = data.clone();
    let addr = tiny_server(move |req, c| {
        if !body_follows(req, c, &d) {
            return true;
        }
        for piece in d.chunks(d.len().div_ceil(6)) {
            let _ = c.write_all(piece);
            std::thread::sleep(timeout / 3);
        }
        true
    });
    let slow = Client::new(ClientConfig {
        request_timeout: timeout,
        ..ClientConfig::default()
    })
    .unwrap();
    let url: Url = format!("http://{addr}/f.bin").parse().unwrap();
    let mut out = Vec::new();
    slow.get(&url, &mut out).unwrap();
    assert!(out == *data);

    // A body that stops arriving is an error once the timeout passes without data.
    let d = data.clone();
    let addr = tiny_server(move |req, c| {
        if !body_follows(req, c, &d) {
            return true;
        }
        let _ = c.write_all(&d[..1000]);
        std::thread::sleep(Duration::from_secs(30));
        false
    });
    let url: Url = format!("http://{addr}/f.bin").parse().unwrap();
    let e = slow.get(&url, &mut Vec::new()).unwrap_err();
    assert!(e.to_string().contains("no data"), "{e}");
}

/// RFC 9110 lets a server answer a range request with the whole file (200), even one that
/// advertised ranges.
#[test]
fn a_server_that_answers_ranges_with_the_whole_file_is_still_read() {
    let data = std::sync::Arc::new(content(3_000_017, 2));
    let d = data.clone();
    let addr = tiny_server(move |req, c| answer(req, c, "HTTP/1.1", RANGES, &d).is_ok());
    let url: Url = format!("http://{addr}/f.bin").parse().unwrap();
    for alpha in [AlphaMode::Auto, AlphaMode::Fixed(4)] {
        let mut out = Vec::new();
        let r = client(alpha).get(&url, &mut out).unwrap();
        assert!(out == *data, "{alpha}: the download differs");
        assert_eq!(r.bytes, data.len() as u64);
        assert!(!r.ranges);
    }
    // Random reads need ranges: an error, not a wrong answer.
    let e = client(AlphaMode::Fixed(2))
        .random_reads(&url, ByteLen::kib(4), 4, 1)
        .unwrap_err();
    assert!(e.to_string().contains("range"), "{e}");
}

/// A `HEAD` answered with a redirect (as nginx and `python3 -m http.server` answer a directory's
/// path without its closing `/`) was reported as its status alone, `HEAD answered 301 Moved
/// Permanently`, leaving the user to find where the file is. The error now gives the
/// `Location`, as a whole URL when it is a path on the same server, and says that redirects are
/// not followed.
#[test]
fn a_redirect_is_reported_with_where_it_points() {
    use std::io::Write;
    let addr = tiny_server(|req, c| {
        let location = if req.path == "/elsewhere" {
            "http://example.org/f.bin"
        } else {
            "/dir/"
        };
        c.write_all(
            format!(
                "HTTP/1.1 301 Moved Permanently\r\nLocation: {location}\r\nContent-Length: 0\r\n\r\n"
            )
            .as_bytes(),
        )
        .is_ok()
    });
    for (path, to) in [
        ("/dir", format!("http://{addr}/dir/")),
        ("/elsewhere", "http://example.org/f.bin".to_string()),
    ] {
        let url: Url = format!("http://{addr}{path}").parse().unwrap();
        let e = client(AlphaMode::Auto)
            .get(&url, &mut Vec::new())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("301 Moved Permanently")
                && e.contains(&format!("redirects to {to},"))
                && e.contains("not followed"),
            "{path}: {e}"
        );
    }
}

/// A range answered with a body far longer than the range (a broken or hostile server: a huge
/// `Content-Length`, or a chunked body that never ends) is refused, not gathered into memory:
/// the client hangs up as soon as it knows, and the server can write little more than the
/// sockets' buffers. The server here offers 256 MiB per answer and then waits.
#[test]
fn a_range_answer_longer_than_the_range_is_refused_without_gathering_it() {
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    for chunked in [false, true] {
        let data = Arc::new(content(1 << 20, 3));
        let most_written = Arc::new(AtomicU64::new(0));
        let (d, most) = (data.clone(), most_written.clone());
        let addr = tiny_server(move |req, c| {
            if req.method != "GET" || req.path != "/f.bin" {
                return answer(req, c, "HTTP/1.1", RANGES, &d).is_ok();
            }
            let framing = if chunked {
                "Transfer-Encoding: chunked".to_string()
            } else {
                format!("Content-Length: {}", 1u64 << 40)
            };
            let head = format!(
                "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-131071/{}\r\n\
                 {framing}\r\n\r\n",
                d.len()
            );
            if c.write_all(head.as_bytes()).is_err() {
                return false;
            }
            let piece = vec![0u8; 1 << 20];
            let mut written = 0u64;
            while written < 256 << 20 {
                let ok = if chunked {
                    c.write_all(format!("{:x}\r\n", piece.len()).as_bytes())
                        .and_then(|()| c.write_all(&piece))
                        .and_then(|()| c.write_all(b"\r\n"))
                } else {
                    c.write_all(&piece)
                };
                if ok.is_err() {
                    break;
                }
                written += piece.len() as u64;
                most.fetch_max(written, Ordering::SeqCst);
            }
            // Wait for the client to hang up.
            let _ = c.read(&mut [0u8; 1]);
            false
        });
        let url: Url = format!("http://{addr}/f.bin").parse().unwrap();
        let client = Client::new(ClientConfig {
            alpha: AlphaMode::Fixed(1),
            request_timeout: Duration::from_secs(2),
            ..ClientConfig::default()
        })
        .unwrap();
        let e = client.get(&url, &mut Vec::new()).unwrap_err();
        let refused = if chunked {
            "206 Partial Content sent a body longer than"
        } else {
            "206 Partial Content announces a 1099511627776-byte body"
        };
        assert!(e.to_string().contains(refused), "chunked {chunked}: {e}");
        let most = most_written.load(Ordering::SeqCst);
        assert!(
            most < 64 << 20,
            "chunked {chunked}: the client took {most} bytes of one answer"
        );
    }
}

/// A file whose length changes during a download (the server answers later ranges from a longer
/// version, as `foresight serve` does once a file is replaced or grown) cannot be delivered as one
/// file: the bytes would come from two versions of it. The download fails, naming both lengths.
#[test]
fn a_file_whose_length_changes_during_a_download_is_an_error() {
    use std::io::Write;
    let old = std::sync::Arc::new(content(2_000_000, 4));
    let new = content(2_000_001, 5);
    let addr = tiny_server(move |req, c| {
        let Some((first, last)) = req.range.filter(|_| req.method == "GET") else {
            return answer(req, c, "HTTP/1.1", RANGES, &old).is_ok();
        };
        // After the first range, the file has been replaced by a longer one.
        let file = if req.seen == 0 { &old[..] } else { &new[..] };
        let total = file.len();
        let last = last.min(total as u64 - 1) as usize;
        let body = &file[first as usize..=last];
        let head = format!(
            "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {first}-{last}/{total}\r\n\
             Content-Length: {}\r\n\r\n",
            body.len()
        );
        c.write_all(head.as_bytes()).is_ok() && c.write_all(body).is_ok()
    });
    let url: Url = format!("http://{addr}/f.bin").parse().unwrap();
    let e = client(AlphaMode::Fixed(2))
        .get(&url, &mut Vec::new())
        .unwrap_err();
    assert!(e.to_string().contains("2000001"), "{e}");
    assert!(e.to_string().contains("2000000"), "{e}");
}

/// A download started over because its file changed before any byte was written (here a server
/// whose ranges give another total than its `HEAD`, every time) asked for the server's figures
/// again at each start, three requests of `/.well-known/foresight` and three notes that it went
/// on without them, where `get --help` says that request is sent once. It is sent once per
/// download now, and its answer (or its failure, noted once) serves every start.
#[test]
fn a_download_started_over_asks_for_the_servers_figures_once() {
    use std::io::Write;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let data = std::sync::Arc::new(content(300_000, 8));
    let (figures, heads) = (
        std::sync::Arc::new(AtomicUsize::new(0)),
        std::sync::Arc::new(AtomicUsize::new(0)),
    );
    let (f, h) = (figures.clone(), heads.clone());
    let addr = tiny_server(move |req, c| {
        if req.path == "/.well-known/foresight" {
            // Closed unanswered: the figures request fails, and is noted.
            f.fetch_add(1, Ordering::SeqCst);
            return false;
        }
        if req.method == "HEAD" {
            h.fetch_add(1, Ordering::SeqCst);
        }
        let Some((first, last)) = req.range.filter(|_| req.method == "GET") else {
            return answer(req, c, "HTTP/1.1", RANGES, &data).is_ok();
        };
        let last = last.min(data.len() as u64 - 1);
        let body = &data[first as usize..=last as usize];
        let head = format!(
            "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {first}-{last}/{}\r\n\
             ETag: \"v1\"\r\nContent-Length: {}\r\n\r\n",
            data.len() + 1,
            body.len()
        );
        c.write_all(head.as_bytes()).is_ok() && c.write_all(body).is_ok()
    });
    let notes = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let kept = notes.clone();
    let c = Client::new(ClientConfig {
        alpha: AlphaMode::Fixed(1),
        readahead: Some(ByteLen::kib(64)),
        ..ClientConfig::default()
    })
    .unwrap()
    .with_notes(foresight_net::client::Notes::new(move |t| {
        kept.lock().unwrap().push(t.to_string())
    }));
    let url: Url = format!("http://{addr}/f.bin").parse().unwrap();
    let mut out = Vec::new();
    let e = c.get(&url, &mut out).unwrap_err();
    assert!(out.is_empty(), "{e}");
    assert!(
        heads.load(Ordering::SeqCst) > 1,
        "the download was not started over: {e}"
    );
    assert_eq!(figures.load(Ordering::SeqCst), 1, "{e}");
    let notes = notes.lock().unwrap();
    let without = notes
        .iter()
        .filter(|n| n.contains("going on without the server's figures"))
        .count();
    assert_eq!(without, 1, "{notes:?}");
}

/// Without ranges, the whole file comes in one plain `GET`; a body that runs past the length the
/// `HEAD` announced is refused as soon as it does, before the excess reaches the output (a server
/// streaming without end would otherwise fill the disk under `--out`).
#[test]
fn a_plain_get_longer_than_announced_stops_at_the_announced_length() {
    use std::io::Write;
    let data = std::sync::Arc::new(content(100_000, 6));
    let d = data.clone();
    let addr = tiny_server(move |req, c| {
        if req.method != "GET" || req.path != "/f.bin" {
            return answer(req, c, "HTTP/1.1", "", &d).is_ok();
        }
        let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", 1u64 << 40);
        let mut ok = c.write_all(head.as_bytes()).is_ok();
        let piece = vec![1u8; 1 << 20];
        for _ in 0..64 {
            ok = ok && c.write_all(&piece).is_ok();
        }
        // Then nothing more: wait for the client to hang up.
        let _ = std::io::Read::read(c, &mut [0u8; 1]);
        false
    });
    let url: Url = format!("http://{addr}/f.bin").parse().unwrap();
    let c = Client::new(ClientConfig {
        request_timeout: Duration::from_secs(2),
        ..ClientConfig::default()
    })
    .unwrap();
    let mut out = Vec::new();
    let e = c.get(&url, &mut out).unwrap_err();
    assert!(e.to_string().contains("100000"), "{e}");
    assert!(out.len() <= data.len(), "{} bytes written", out.len());
}

/// Without ranges, a resource that changes length between the opening `HEAD` and the `GET` (a
/// file replaced meanwhile, or a generated page such as `foresight serve`'s own `/metrics`, whose
/// counters grow with each request) is fetched again, since nothing of it was written yet.
/// Before, the `GET`'s whole, self-consistent answer was refused as running past the `HEAD`'s
/// length (`foresight get http://HOST/metrics` failed whenever a counter gained a digit).
#[test]
fn a_plain_get_whose_length_changed_since_the_head_is_fetched_again() {
    let old = std::sync::Arc::new(content(100_000, 6));
    let new = std::sync::Arc::new(content(100_001, 7));
    let (o, n) = (old.clone(), new.clone());
    // The first `HEAD` sees the old version; everything after it, the new one.
    let addr = tiny_server(move |req, c| {
        let first_head = req.method == "HEAD" && req.seen == 0;
        answer(req, c, "HTTP/1.1", "", if first_head { &o } else { &n }).is_ok()
    });
    let url: Url = format!("http://{addr}/f.bin").parse().unwrap();
    let mut out = Vec::new();
    let r = client(AlphaMode::Auto)
        .get(&url, &mut out)
        .unwrap_or_else(|e| panic!("the changed resource was not fetched again: {e}"));
    assert!(out == *new, "{} bytes, not the new version", out.len());
    assert_eq!(r.bytes, new.len() as u64);
}

/// A server publishing `unit_bytes` as its `max_readahead_bytes`, with a fast device (so that an
/// automatic alpha climbs), serving `data` as `/f.bin`; it records the largest range asked for.
fn server_publishing_unit(
    unit_bytes: u64,
    data: std::sync::Arc<Vec<u8>>,
) -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::atomic::AtomicU64>,
) {
    server_publishing(unit_bytes, "1e12", "1.2", data)
}

/// A server publishing the figures given (as JSON number text for RB and p), serving `data` as
/// `/f.bin` with ranges; it records the largest range asked for.
fn server_publishing(
    unit_bytes: u64,
    rb: &'static str,
    p: &'static str,
    data: std::sync::Arc<Vec<u8>>,
) -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::atomic::AtomicU64>,
) {
    use std::io::Write;
    use std::sync::atomic::{AtomicU64, Ordering};
    let largest = std::sync::Arc::new(AtomicU64::new(0));
    let seen = largest.clone();
    let addr = tiny_server(move |req, c| {
        if req.path == "/.well-known/foresight" {
            let doc = format!(
                "{{\"server\":\"foresight\",\"max_readahead_bytes\":{unit_bytes},\
                 \"avg_bandwidth_bytes_per_s\":{rb},\"peak_ratio\":{p}}}"
            );
            let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", doc.len());
            return c.write_all(head.as_bytes()).is_ok() && c.write_all(doc.as_bytes()).is_ok();
        }
        let Some((first, last)) = req.range.filter(|_| req.method == "GET") else {
            return answer(req, c, "HTTP/1.1", RANGES, &data).is_ok();
        };
        let last = last.min(data.len() as u64 - 1);
        seen.fetch_max(last + 1 - first, Ordering::SeqCst);
        let body = &data[first as usize..=last as usize];
        let head = format!(
            "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {first}-{last}/{}\r\n\
             Content-Length: {}\r\n\r\n",
            data.len(),
            body.len()
        );
        c.write_all(head.as_bytes()).is_ok() && c.write_all(body).is_ok()
    });
    (addr, largest)
}

/// The readahead unit a server publishes is a figure from the network: one far beyond what
/// `--readahead` accepts (here 1 TiB) is held to that bound and to a third of the client's
/// buffer budget (less one read), not adopted, since every range of one unit is gathered in memory.
#[test]
fn a_published_readahead_beyond_the_clients_bound_is_held_to_it() {
    let data = std::sync::Arc::new(content(3_000_000, 8));
    let (addr, _) = server_publishing_unit(1 << 40, data.clone());
    let url: Url = format!("http://{addr}/f.bin").parse().unwrap();
    let mut out = Vec::new();
    let r = client(AlphaMode::Auto).get(&url, &mut out).unwrap();
    assert!(out == *data);
    assert_eq!(r.server.map(|f| f.max_readahead.0), Some(1 << 40));
    let app_read = ClientConfig::default().app_read.0;
    let third = (foresight_net::client::DEFAULT_MAX_BUFFER.0 - app_read) / 3;
    assert_eq!(r.unit_bytes, third / 4096 * 4096);
}

/// A download holds at most `max_buffer` bytes of readahead however large a unit the server
/// publishes and however high alpha climbs: the unit is capped to a third of the budget (less
/// for a fixed alpha above 1) and alpha to the units that fit. Before, a server publishing a huge unit had the client gather 256 MiB
/// ranges, 65 of them at once at the largest alpha; here, with a 1 MiB budget, the whole 3 MB
/// file was one range.
#[test]
fn a_download_holds_no_more_than_its_buffer_budget() {
    use std::sync::atomic::Ordering;
    let data = std::sync::Arc::new(content(3_000_000, 9));
    let (addr, largest) = server_publishing_unit(1 << 40, data.clone());
    let url: Url = format!("http://{addr}/f.bin").parse().unwrap();
    let budget = ByteLen::mib(1);
    for alpha in [AlphaMode::Auto, AlphaMode::Fixed(3)] {
        let c = Client::new(ClientConfig {
            alpha,
            max_buffer: budget,
            ..ClientConfig::default()
        })
        .unwrap();
        let mut out = Vec::new();
        let r = c.get(&url, &mut out).unwrap();
        assert!(out == *data, "{alpha}");
        assert!(r.buffered_peak_bytes <= budget.0, "{alpha}: {r:?}");
        assert!(r.buffered_peak_bytes > 0, "{alpha}: {r:?}");
        assert!(largest.load(Ordering::SeqCst) <= budget.0 / 3, "{alpha}");
    }
    // A small published unit: an automatic alpha climbs, but no further than the budget holds.
    let (addr, _) = server_publishing_unit(64 << 10, data.clone());
    let url: Url = format!("http://{addr}/f.bin").parse().unwrap();
    let c = Client::new(ClientConfig {
        max_buffer: budget,
        ..ClientConfig::default()
    })
    .unwrap();
    let mut out = Vec::new();
    let r = c.get(&url, &mut out).unwrap();
    assert!(out == *data);
    assert!(r.alpha_max > 1, "{r:?}");
    assert!(r.buffered_peak_bytes <= budget.0, "{r:?}");
    // A fixed alpha whose units cannot fit the budget at the given unit is refused up front.
    let e = Client::new(ClientConfig {
        alpha: AlphaMode::Fixed(8),
        readahead: Some(ByteLen::kib(256)),
        max_buffer: budget,
        ..ClientConfig::default()
    })
    .unwrap_err();
    assert!(e.to_string().contains("--max-buffer"), "{e}");
}

/// A server that takes fewer connections than the client keeps requests in flight (as
/// `foresight serve --max-connections` does, closing the others at once) is still read: a
/// request whose new connection was closed unanswered is sent again on a connection the server
/// kept, rather than on another new one that meets the same fate.
#[test]
fn a_server_that_refuses_connections_beyond_its_limit_is_still_read() {
    use std::io::{BufRead, BufReader, Write};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    const LIMIT: usize = 2;
    let data = Arc::new(content(4_000_000, 12));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let live = Arc::new(AtomicUsize::new(0));
    let d = data.clone();
    std::thread::spawn(move || {
        for c in listener.incoming() {
            let Ok(c) = c else { continue };
            if live.load(Ordering::SeqCst) >= LIMIT {
                drop(c);
                continue;
            }
            live.fetch_add(1, Ordering::SeqCst);
            let (d, live) = (d.clone(), live.clone());
            std::thread::spawn(move || {
                let mut w = c.try_clone().unwrap();
                let mut r = BufReader::new(c);
                loop {
                    let mut head = Vec::new();
                    loop {
                        let mut line = String::new();
                        if r.read_line(&mut line).unwrap_or(0) == 0 {
                            live.fetch_sub(1, Ordering::SeqCst);
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        head.push(line);
                    }
                    let range = head.iter().find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        if !k.eq_ignore_ascii_case("range") {
                            return None;
                        }
                        let (a, b) = v.trim().strip_prefix("bytes=")?.split_once('-')?;
                        Some((a.parse::<usize>().ok()?, b.parse::<usize>().ok()?))
                    });
                    let answer = if head[0].starts_with("HEAD /f.bin ") {
                        format!(
                            "HTTP/1.1 200 OK\r\n{RANGES}Content-Length: {}\r\n\r\n",
                            d.len()
                        )
                        .into_bytes()
                    } else if let (true, Some((a, b))) = (head[0].starts_with("GET /f.bin "), range)
                    {
                        let b = b.min(d.len() - 1);
                        let mut v = format!(
                            "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {a}-{b}/{}\r\n\
                             Content-Length: {}\r\n\r\n",
                            d.len(),
                            b + 1 - a
                        )
                        .into_bytes();
                        v.extend_from_slice(&d[a..=b]);
                        v
                    } else {
                        b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_vec()
                    };
                    if w.write_all(&answer).is_err() {
                        live.fetch_sub(1, Ordering::SeqCst);
                        return;
                    }
                }
            });
        }
    });
    let url: Url = format!("http://{addr}/f.bin").parse().unwrap();
    let c = Client::new(ClientConfig {
        alpha: AlphaMode::Fixed(8),
        readahead: Some(ByteLen::kib(64)),
        ..ClientConfig::default()
    })
    .unwrap();
    let mut out = Vec::new();
    let r = c.get(&url, &mut out).unwrap();
    assert!(out == *data);
    assert_eq!(r.bytes, data.len() as u64);
}

/// A listener whose accept queue is full (backlog 0, one connection waiting that is never
/// accepted): the kernel drops every further SYN, so a connect to it makes no progress until the
/// kernel's SYN retries run out, over two minutes on Linux's defaults. The listener and the
/// waiting connection are returned so that the caller keeps them open.
fn never_accepting_listener() -> (std::net::TcpListener, std::net::TcpStream) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let listener = rt.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        socket.listen(0).unwrap().into_std().unwrap()
    });
    let waiting = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    (listener, waiting)
}

/// `--request-timeout` bounds the connect as well as the answer: a server that never accepts is
/// an error naming the timeout once it has passed, not a hang for as long as the kernel keeps
/// resending the SYN. (The bound checked, 30 s for a timeout of 1 s, only tells an answer after
/// the timeout from one after the kernel's retries.)
#[test]
fn a_server_that_never_accepts_is_an_error_after_the_request_timeout() {
    let (listener, _waiting) = never_accepting_listener();
    let url: Url = format!("http://{}/f.bin", listener.local_addr().unwrap())
        .parse()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let c = Client::new(ClientConfig {
            request_timeout: Duration::from_secs(1),
            ..ClientConfig::default()
        })
        .unwrap();
        let _ = tx.send(c.get(&url, &mut Vec::new()).map(|r| r.bytes));
    });
    let got = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the client was still connecting 30 s after a 1 s request timeout");
    let e = got.expect_err("a server that never accepts gave a file");
    let shown = e.to_string();
    assert!(
        shown.contains("cannot connect") && shown.contains("1s"),
        "{shown}"
    );
}

/// An upstream that answers `flood` with bytes until the connection fails and `ping` with
/// `pong`, one connection per thread.
fn flood_or_pong_upstream() -> std::net::SocketAddr {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for c in listener.incoming() {
            let Ok(mut c) = c else { continue };
            std::thread::spawn(move || {
                let mut word = [0u8; 4];
                if c.read_exact(&mut word).is_err() {
                    return;
                }
                if &word == b"ping" {
                    let _ = c.write_all(b"pong");
                    return;
                }
                let block = vec![0x5au8; 64 << 10];
                while c.write_all(&block).is_ok() {}
            });
        }
    });
    addr
}

/// A client of the proxy that stops reading (and never closes) is cut off once it has not taken a
/// chunk within the send timeout, and its connection's slot, threads and queued bytes go with it. Before, the writer waited on the client forever, its reader on
/// the full queue, and the slot was never given back: here, with one slot, no other client was
/// ever relayed again. (The 60 s bound only tells a slot given back from one kept for good.)
#[test]
fn a_proxy_client_that_stops_reading_is_cut_off_and_frees_its_slot() {
    use std::io::{Read, Write};
    let upstream = flood_or_pong_upstream();
    let p = proxy::spawn(ProxyConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream: upstream.to_string(),
        delay: Duration::ZERO,
        bandwidth: None,
        max_connections: 1,
        send_timeout: Duration::from_secs(1),
        idle_timeout: proxy::DEFAULT_IDLE_TIMEOUT,
    })
    .unwrap();
    let mut stalled = common::small_buffer_connection(p.local_addr());
    stalled.write_all(b"flood").unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let relayed = loop {
        assert!(
            std::time::Instant::now() < deadline,
            "the stalled client's slot was never given back"
        );
        // Refused at the limit, a connection is closed unanswered.
        let Ok(mut c) = std::net::TcpStream::connect(p.local_addr()) else {
            continue;
        };
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut got = [0u8; 4];
        if c.write_all(b"ping").is_ok() && c.read_exact(&mut got).is_ok() {
            break got;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(&relayed, b"pong");
    drop(stalled);
    p.shutdown();
}

/// A range answered with the wrong bytes is an error that shows what the server sent: the
/// `Content-Range` as written and the body's length, not the client's internal types.
#[test]
fn a_wrong_content_range_is_reported_as_the_server_wrote_it() {
    use std::io::Write;
    let data = std::sync::Arc::new(content(300_000, 6));
    let d = data.clone();
    let addr = tiny_server(move |req, c| {
        let Some((first, last)) = req.range.filter(|_| req.method == "GET") else {
            return answer(req, c, "HTTP/1.1", RANGES, &d).is_ok();
        };
        // One byte further on than asked, as a server with an off-by-one would answer.
        let body = &d[first as usize + 1..=last as usize + 1];
        let head = format!(
            "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {}-{}/{}\r\n\
             Content-Length: {}\r\n\r\n",
            first + 1,
            last + 1,
            d.len(),
            body.len()
        );
        c.write_all(head.as_bytes())
            .and_then(|()| c.write_all(body))
            .is_ok()
    });
    let url: Url = format!("http://{addr}/f.bin").parse().unwrap();
    let e = client(AlphaMode::Fixed(1))
        .get(&url, &mut Vec::new())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("Content-Range `bytes 1-131072/300000`") && !e.contains("ByteRange"),
        "{e}"
    );
}

/// A range whose body stops short, because the server closed the connection or reset it, is an
/// error (after the retries) that says which: hyper's own message, "error reading a body from
/// connection", leaves out the cause, and the cause is what tells a crashed or restarted server
/// from a network fault.
#[test]
fn a_body_cut_short_is_an_error_that_names_the_cause() {
    use std::io::Write;
    let data = std::sync::Arc::new(content(300_000, 8));
    for reset in [false, true] {
        let d = data.clone();
        let addr = tiny_server(move |req, c| {
            let Some((first, last)) = req.range.filter(|_| req.method == "GET") else {
                return answer(req, c, "HTTP/1.1", RANGES, &d).is_ok();
            };
            let body = &d[first as usize..=last as usize];
            let head = format!(
                "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {first}-{last}/{}\r\n\
                 Content-Length: {}\r\n\r\n",
                d.len(),
                body.len()
            );
            let _ = c
                .write_all(head.as_bytes())
                .and_then(|()| c.write_all(&body[..body.len() / 2]))
                .and_then(|()| c.flush());
            if reset {
                // A zero linger time makes the close send a reset instead of a FIN (std cannot
                // set it yet, tokio can).
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                let c = c.try_clone().unwrap();
                c.set_nonblocking(true).unwrap();
                let t = rt
                    .block_on(async { tokio::net::TcpStream::from_std(c) })
                    .unwrap();
                t.set_zero_linger().unwrap();
            }
            false
        });
        let url: Url = format!("http://{addr}/f.bin").parse().unwrap();
        let e = client(AlphaMode::Fixed(1))
            .get(&url, &mut Vec::new())
            .unwrap_err()
            .to_string();
        let cause = if reset {
            "reset"
        } else {
            "end of file before message length reached"
        };
        assert!(e.contains(cause), "reset {reset}: {e}");
    }
}

/// Published figures whose `RB * (1 + p)` is beyond what a float holds (a broken or hostile
/// server: each figure finite, their product not) are not figures at all: the download goes on
/// as against a server without them. Before, condition 20 divided by that infinite rate and the
/// client panicked.
#[test]
fn figures_whose_product_overflows_are_ignored_not_a_panic() {
    let data = std::sync::Arc::new(content(1_000_000, 10));
    for (rb, p) in [("1e308", "1.2"), ("1e200", "1e200")] {
        let (addr, _) = server_publishing(131072, rb, p, data.clone());
        let url: Url = format!("http://{addr}/f.bin").parse().unwrap();
        let mut out = Vec::new();
        let r = client(AlphaMode::Auto).get(&url, &mut out).unwrap();
        assert!(out == *data, "RB {rb}, p {p}");
        assert_eq!(r.server, None, "RB {rb}, p {p}");
    }
}

/// Whether `c` is closed by its far end (end of file or a reset) within 20 s.
fn closed_within_20s(c: &mut std::net::TcpStream) -> bool {
    use std::io::Read;
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut buf = [0u8; 64];
    match c.read(&mut buf) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
    }
}

/// Clients that connect through the proxy and neither send nor close give their slots back once
/// the upstream has closed its side and the connection has carried nothing for the proxy's idle
/// timeout. Before the idle timeout, the proxy kept reading from them for good: with two slots,
/// two such clients kept every later client out although the server had closed their
/// connections after its idle timeout. (The upstream's close only half-closes the client, which
/// may still send to an upstream that reads on, so it is the idle timeout that frees the slot.)
/// The bounds are generous: the slots come back within a few seconds, and never when nothing
/// ends such connections.
#[test]
fn proxy_clients_whose_upstream_closed_give_their_slots_back() {
    use std::io::{Read, Write};
    let s = common::serve_with("proxy-upstream-closed", |c| {
        c.idle_timeout = Duration::from_secs(1);
    });
    let p = proxy::spawn(ProxyConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream: s.addr().to_string(),
        delay: Duration::ZERO,
        bandwidth: None,
        max_connections: 2,
        send_timeout: proxy::DEFAULT_SEND_TIMEOUT,
        idle_timeout: proxy::MIN_IDLE_TIMEOUT,
    })
    .unwrap();
    let mut idle: Vec<_> = (0..2)
        .map(|_| std::net::TcpStream::connect(p.local_addr()).unwrap())
        .collect();
    for c in &mut idle {
        assert!(closed_within_20s(c), "an idle client was never closed");
    }
    // The slots come back just after the clients see their close: a connection refused at the
    // limit is closed unanswered, so a new one is tried until one is answered.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        assert!(
            std::time::Instant::now() < deadline,
            "no slot was given back"
        );
        let mut c = std::net::TcpStream::connect(p.local_addr()).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let _ = c.write_all(b"GET /sub/small.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
        let mut answer = Vec::new();
        let _ = c.read_to_end(&mut answer);
        if !answer.is_empty() {
            assert!(
                answer.starts_with(b"HTTP/1.1 200"),
                "{:?}",
                String::from_utf8_lossy(&answer)
            );
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    p.shutdown();
}

/// A scripted server of a file that is replaced: `version(req)` says which of `files` (content
/// and entity tag) a request sees. It honours `If-Range` as RFC 9110 asks: a range under another
/// tag than the file's gets the whole file (200).
fn replacing_server(
    files: Vec<(Vec<u8>, &'static str)>,
    version: impl Fn(&Req) -> usize + Send + Sync + 'static,
) -> std::net::SocketAddr {
    replacing_server_with("ETag: ", files, version)
}

/// [`replacing_server`] sending each version's validator as `field` (`ETag: `, or
/// `Last-Modified: ` for a server without tags, whose `Date` is then the present).
fn replacing_server_with(
    field: &'static str,
    files: Vec<(Vec<u8>, &'static str)>,
    version: impl Fn(&Req) -> usize + Send + Sync + 'static,
) -> std::net::SocketAddr {
    replacing_server_full(field, false, files, version)
}

/// Answers a `HEAD` as a server that serves `GET` only: 405 Method Not Allowed, no body.
fn refuse_head_405(c: &mut std::net::TcpStream) -> bool {
    use std::io::Write;
    c.write_all(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
        .is_ok()
}

/// The `Date` a server puts on an answer sent now (whole seconds, RFC 9110's format).
fn http_date_now() -> String {
    let now_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    foresight_net::validators::format_http_date(now_s).unwrap()
}

/// [`replacing_server_with`], answering every `HEAD` 405 when `refuse_head` (as a server that
/// serves `GET` only), so that the download learns the file from its first range.
fn replacing_server_full(
    field: &'static str,
    refuse_head: bool,
    files: Vec<(Vec<u8>, &'static str)>,
    version: impl Fn(&Req) -> usize + Send + Sync + 'static,
) -> std::net::SocketAddr {
    use std::io::Write;
    tiny_server(move |req, c| {
        if refuse_head && req.method == "HEAD" {
            return refuse_head_405(c);
        }
        let (data, tag) = &files[version(req)];
        let date = http_date_now();
        let validators = format!("Accept-Ranges: bytes\r\n{field}{tag}\r\nDate: {date}\r\n");
        let Some((first, last)) = req.range.filter(|_| req.method == "GET") else {
            return answer(req, c, "HTTP/1.1", &validators, data).is_ok();
        };
        if req.if_range.as_deref().is_some_and(|t| t != *tag) {
            return answer(req, c, "HTTP/1.1", &validators, data).is_ok();
        }
        let last = last.min(data.len() as u64 - 1) as usize;
        let body = &data[first as usize..=last];
        let head = format!(
            "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {first}-{last}/{}\r\n\
             {validators}Content-Length: {}\r\n\r\n",
            data.len(),
            body.len()
        );
        c.write_all(head.as_bytes()).is_ok() && c.write_all(body).is_ok()
    })
}

/// A file replaced by one of the same length after the first range of a download: the later
/// ranges, asked for under `If-Range` with the first version's tag, come back as the whole new
/// file, and the download fails saying so rather than deliver bytes of both versions.
#[test]
fn a_file_replaced_during_a_download_is_never_delivered_mixed() {
    let (addr, old, new) = replaced_after_the_first_range(["\"one\"", "\"two\""], 4);
    let (r, out) = download(addr);
    let mixed = !out.is_empty() && out != old && out != new;
    let e = r.expect_err(&format!("delivered {} bytes, mixed: {mixed}", out.len()));
    let text = e.to_string();
    assert!(
        text.contains("changed") && text.contains("\"one\"") && text.contains("\"two\""),
        "{text}"
    );
    assert!(
        matches!(e, foresight_net::NetError::Changed { .. }),
        "{e:?}"
    );
}

/// The same from a server that sends no `ETag` but a `Last-Modified` a long time past (a strong
/// validator): the ranges go out under `If-Range` with that date, so the replaced file comes back
/// whole and the download fails saying the date changed. Before, without a tag the client sent no
/// `If-Range` and delivered the new file's ranges after the old one's.
#[test]
fn a_file_replaced_on_a_server_without_tags_is_never_delivered_mixed() {
    let old = content(2_000_000, 4);
    let new = content(2_000_000, 5);
    let (one, two) = (
        "Tue, 14 Nov 2023 22:13:20 GMT",
        "Wed, 15 Nov 2023 22:13:20 GMT",
    );
    let addr = replacing_server_with(
        "Last-Modified: ",
        vec![(old.clone(), one), (new.clone(), two)],
        |req| usize::from(req.method == "GET" && req.range.is_some() && req.seen > 0),
    );
    refused_unmixed(addr, &old, &["Last-Modified", one, two]);
}

/// Downloads `f.bin` from `addr`, whose file is replaced after the download began (the old one
/// was `old`): the download must fail with a message holding every one of `names`, having
/// written nothing but the old file's beginning.
fn refused_unmixed(addr: std::net::SocketAddr, old: &[u8], names: &[&str]) {
    let (r, out) = download(addr);
    // What was written before the change was seen is the old file's beginning, nothing else.
    let mixed = !old.starts_with(&out);
    let e = r.expect_err(&format!("delivered {} bytes, mixed: {mixed}", out.len()));
    assert!(!mixed, "delivered a mix of both files");
    let text = e.to_string();
    assert!(names.iter().all(|n| text.contains(n)), "{text}");
}

/// A server of two 2,000,000-byte versions of `f.bin` (made from `seed` and `seed + 1`) under
/// the entity tags `tags`, which answers the first ranged `GET` from the first version and every
/// later request from the second. Returns its address and both versions.
fn replaced_after_the_first_range(
    tags: [&'static str; 2],
    seed: u8,
) -> (std::net::SocketAddr, Vec<u8>, Vec<u8>) {
    let old = content(2_000_000, seed);
    let new = content(2_000_000, seed + 1);
    let addr = replacing_server(
        vec![(old.clone(), tags[0]), (new.clone(), tags[1])],
        |req| usize::from(req.method == "GET" && req.range.is_some() && req.seen > 0),
    );
    (addr, old, new)
}

/// Downloads `f.bin` from `addr` with two ranges in flight: the result and what was written.
fn download(
    addr: std::net::SocketAddr,
) -> (
    Result<foresight_net::client::Report, foresight_net::NetError>,
    Vec<u8>,
) {
    let url: Url = format!("http://{addr}/f.bin").parse().unwrap();
    let mut out = Vec::new();
    let r = client(AlphaMode::Fixed(2)).get(&url, &mut out);
    (r, out)
}

/// Downloads `/f.bin` from `addr`, which must fail saying the file changed from `"one"` to
/// `"two"`, seen once the download had ended; `mixed` is what a success would have delivered.
fn fails_as_changed_at_the_end(addr: std::net::SocketAddr, mixed: &[u8]) {
    let (r, out) = download(addr);
    let e = r.expect_err(&format!(
        "delivered {} bytes, the mix: {}",
        out.len(),
        out == mixed
    ));
    let text = e.to_string();
    assert!(
        matches!(e, foresight_net::NetError::Changed { .. })
            && text.contains("\"one\"")
            && text.contains("\"two\"")
            && text.contains("once the download had ended"),
        "{text}"
    );
}

/// Two versions of a 2,000,000-byte file (contents of salts `old_salt` and `new_salt`) and the
/// mix a reader gets when the rewrite lands halfway through its download: the old first half,
/// the new second.
fn rewritten_halfway(old_salt: u8, new_salt: u8) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let old = content(2_000_000, old_salt);
    let new = content(2_000_000, new_salt);
    let mut mixed = old[..1_000_000].to_vec();
    mixed.extend_from_slice(&new[1_000_000..]);
    (old, new, mixed)
}

/// The same from a server whose tags lack their quotes (`ETag: one`, which some servers send):
/// the tag is still the validator the download began with, and another one is a change. Before,
/// a value without a leading quote or `W/` was taken for a date and compared with the answers'
/// `Last-Modified`, of which this server sends none: the replaced file's 200 passed as the
/// version begun with, the download went on with a plain `GET` and succeeded, and from a server
/// whose plain `GET` gives the new file, after ranges of the old one were written, that is a mix.
#[test]
fn a_file_replaced_on_a_server_with_unquoted_tags_is_never_delivered_mixed() {
    let (addr, old, _) = replaced_after_the_first_range(["one", "two"], 6);
    refused_unmixed(addr, &old, &["ETag", "one", "two"]);
}

/// A file replaced (here by a longer one) between the opening `HEAD` and the first range:
/// nothing has been written, so the download starts over and delivers the new file whole.
#[test]
fn a_file_replaced_before_any_byte_is_written_is_downloaded_again() {
    let new = content(2_000_100, 5);
    let addr = replacing_server(
        vec![(content(2_000_000, 4), "\"one\""), (new.clone(), "\"two\"")],
        // Only the first HEAD sees the old file.
        |req| usize::from(req.method != "HEAD" || req.seen > 0),
    );
    let url: Url = format!("http://{addr}/f.bin").parse().unwrap();
    let mut out = Vec::new();
    let r = client(AlphaMode::Fixed(2)).get(&url, &mut out).unwrap();
    assert!(out == new, "{} bytes, not the new file", out.len());
    assert_eq!(r.bytes, new.len() as u64);
}

/// The proxy relays bytes: validators and conditional headers cross it both ways unchanged.
#[test]
fn conditional_requests_pass_through_the_proxy() {
    let s = serve("proxy-validators");
    // Modified an hour ago, so that the tag is strong and satisfies If-Range.
    std::fs::File::options()
        .write(true)
        .open(s.root.join("sub/small.txt"))
        .unwrap()
        .set_modified(std::time::SystemTime::now() - Duration::from_secs(3600))
        .unwrap();
    let p = proxy::spawn(ProxyConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream: s.addr().to_string(),
        delay: Duration::from_micros(100),
        bandwidth: None,
        max_connections: 16,
        send_timeout: proxy::DEFAULT_SEND_TIMEOUT,
        idle_timeout: proxy::DEFAULT_IDLE_TIMEOUT,
    })
    .unwrap();
    let ask = |addr: std::net::SocketAddr, extra: &str| {
        common::raw(
            addr,
            &format!("GET /sub/small.txt HTTP/1.1\r\nHost: t\r\n{extra}Connection: close\r\n\r\n"),
        )
    };
    let direct = ask(s.addr(), "");
    let proxied = ask(p.local_addr(), "");
    let etag = direct.header("etag").expect("an ETag").to_string();
    assert_eq!(proxied.header("etag"), Some(etag.as_str()));
    let modified = direct.header("last-modified").expect("a Last-Modified");
    assert_eq!(proxied.header("last-modified"), Some(modified));
    let r = ask(p.local_addr(), &format!("If-None-Match: {etag}\r\n"));
    assert_eq!((r.status, r.header("etag")), (304, Some(etag.as_str())));
    assert!(r.body.is_empty());
    let r = ask(
        p.local_addr(),
        &format!("If-Modified-Since: {modified}\r\n"),
    );
    assert_eq!(r.status, 304);
    let r = ask(
        p.local_addr(),
        &format!("Range: bytes=0-4\r\nIf-Range: {etag}\r\n"),
    );
    assert_eq!((r.status, &r.body[..]), (206, &b"hello"[..]));
    let r = ask(
        p.local_addr(),
        "Range: bytes=0-4\r\nIf-Range: \"other\"\r\n",
    );
    assert_eq!((r.status, &r.body[..]), (200, &b"hello, ranges\n"[..]));
    p.shutdown();
}

/// A random read larger than `max_buffer` is taken in units as they arrive: what the client
/// holds (requested or received, not yet taken) stays within the buffer, where it used to hold
/// the whole read.
#[test]
fn a_random_read_larger_than_the_buffer_stays_within_it() {
    let s = serve("random-bounded");
    let url: Url = format!("http://{}/big.bin", s.addr()).parse().unwrap();
    let max_buffer = ByteLen::mib(1);
    let c = Client::new(ClientConfig {
        alpha: AlphaMode::Fixed(2),
        readahead: Some(ByteLen::kib(64)),
        max_buffer,
        ..ClientConfig::default()
    })
    .unwrap();
    let size = 3u64 << 20;
    let r = c.random_reads(&url, ByteLen(size), 4, 9).unwrap();
    assert_eq!(r.bytes, 4 * size);
    assert!(
        r.buffered_peak_bytes <= max_buffer.0,
        "held {} bytes with a buffer of {}",
        r.buffered_peak_bytes,
        max_buffer.0
    );
    assert!(r.transferred_bytes >= r.bytes);
}

/// Random reads of a small file often continue one another (a read starting where the last one
/// ended): the stream then counts on the readahead it issued for the first, which may arrive
/// while the first is still being served. Those bytes must be kept for the next read, not
/// dropped, or the next read waits for ever. Each run has a watchdog; the seeds are printed.
#[test]
fn random_reads_that_continue_one_another_get_the_readahead_they_count_on() {
    let s = serve("random-continue");
    write_file(&s, "small.bin", 200 << 10);
    let url: Url = format!("http://{}/small.bin", s.addr()).parse().unwrap();
    for seed in 0..8u64 {
        let (tx, rx) = std::sync::mpsc::channel();
        let u = url.clone();
        std::thread::spawn(move || {
            let c = Client::new(ClientConfig {
                alpha: AlphaMode::Fixed(1),
                ..ClientConfig::default()
            })
            .unwrap();
            let _ = tx.send(c.random_reads(&u, ByteLen::kib(8), 64, seed));
        });
        // Generous: 64 reads of 8 KiB over loopback take milliseconds.
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(r) => assert_eq!(r.unwrap().bytes, 64 * 8192, "seed {seed}"),
            Err(_) => panic!("seed {seed}: random reads still waiting after 60 s"),
        }
    }
}

/// A server that answers the `HEAD` (ranges honoured) and then sends half of each range's body
/// and stops, holding the connection open: every range request times out mid-body. Each is sent
/// three times at most, each retry is noted (which range, which attempt, after how long), and
/// the download fails saying it gave up after three attempts. Before, retries were silent.
#[test]
fn a_server_that_stalls_mid_body_is_retried_with_notes_and_given_up_on() {
    use std::io::Write;
    let data = content(1 << 20, 9);
    let asked = std::sync::Arc::new(std::sync::Mutex::new(std::collections::BTreeMap::<
        (u64, u64),
        usize,
    >::new()));
    let seen = asked.clone();
    let addr = tiny_server(move |req, c| {
        let Some((first, last)) = req.range.filter(|_| req.method == "GET") else {
            let _ = answer(req, c, "HTTP/1.1", RANGES, &data);
            return true;
        };
        *seen.lock().unwrap().entry((first, last)).or_default() += 1;
        let len = last - first + 1;
        let _ = c.write_all(
            format!(
                "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {first}-{last}/{}\r\n\
                 Content-Length: {len}\r\n\r\n",
                data.len()
            )
            .as_bytes(),
        );
        let _ = c.write_all(&data[first as usize..(first + len / 2) as usize]);
        std::thread::sleep(Duration::from_secs(30));
        false
    });
    let url: Url = format!("http://{addr}/f.bin").parse().unwrap();
    let notes = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let kept = notes.clone();
    let c = Client::new(ClientConfig {
        alpha: AlphaMode::Fixed(1),
        request_timeout: Duration::from_secs(1),
        ..ClientConfig::default()
    })
    .unwrap()
    .with_notes(foresight_net::client::Notes::new(move |t| {
        kept.lock().unwrap().push(t.to_string())
    }));
    let e = c
        .get(&url, &mut Vec::new())
        .expect_err("a stalled server gave a file");
    let text = e.to_string();
    let notes = notes.lock().unwrap().clone();
    assert!(
        text.contains("bytes ")
            && text.contains("no complete answer within 1s")
            && text.contains("gave up after 3 attempts"),
        "{text}"
    );
    for attempt in 1..=2 {
        assert!(
            notes.iter().any(|n| n.contains("bytes ")
                && n.contains(&format!("attempt {attempt} of 3 failed after"))
                && n.contains("no complete answer within 1s")),
            "no note of attempt {attempt}: {notes:#?}"
        );
    }
    let asked = asked.lock().unwrap();
    assert!(
        asked.values().all(|n| *n <= 3),
        "a range sent more than three times: {asked:?}"
    );
}

/// A server whose entity tags are weak, and the same for two versions of the file (as a rewrite
/// within the file system's timestamp granularity leaves them; that is what a weak tag warns
/// of), replaces the file after the first range: parts under a weak tag cannot be put together
/// safely (RFC 9110, section 15.3.7.3), so the file comes in one `GET`, all of one version.
/// Before, the ranges went out without `If-Range` (a weak tag cannot be sent in one), their
/// tags compared equal, and the download was the first range of one version spliced onto the
/// rest of the other.
#[test]
fn a_download_under_a_weak_tag_is_never_spliced_from_two_versions() {
    let (addr, old, new) = replaced_after_the_first_range(["W/\"v\"", "W/\"v\""], 4);
    let (r, out) = download(addr);
    let r = r.unwrap();
    let mixed = out != old && out != new;
    assert!(!mixed, "{} bytes delivered mixed", out.len());
    assert!(out == old, "not the version the download began with");
    assert!(!r.ranges, "fetched with ranges under a weak tag");
}

/// One request to [`fresh_file_server`], as it came: the method, the range and the `If-Range`.
type Asked = (String, Option<(u64, u64)>, Option<String>);

/// A server of `data` at `/f.bin` whose entity tag is weak, its `Last-Modified` the answer's
/// `Date` (a file modified within the second, as `foresight serve` answers one), for the first
/// `weak_heads` `HEAD`s, and strong, modified ten seconds before, from then on; ranged `GET`s
/// get their range, under the validators the `HEAD`s have reached. Returns the address and every
/// request, in order.
fn fresh_file_server(
    data: std::sync::Arc<Vec<u8>>,
    weak_heads: usize,
) -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::Mutex<Vec<Asked>>>,
) {
    fresh_file_server_with(data, weak_heads, true)
}

/// [`fresh_file_server`], sending no `ETag` at all unless `tags`: its validator is then the
/// `Last-Modified` alone, no validator while it is the answer's `Date`.
fn fresh_file_server_with(
    data: std::sync::Arc<Vec<u8>>,
    weak_heads: usize,
    tags: bool,
) -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::Mutex<Vec<Asked>>>,
) {
    use std::io::Write;
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::<Asked>::new()));
    let log = asked.clone();
    let heads = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let addr = tiny_server(move |req, c| {
        use std::sync::atomic::Ordering;
        if req.path == "/f.bin" {
            log.lock()
                .unwrap()
                .push((req.method.clone(), req.range, req.if_range.clone()));
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let headed = if req.method == "HEAD" && req.path == "/f.bin" {
            heads.fetch_add(1, Ordering::SeqCst) + 1
        } else {
            heads.load(Ordering::SeqCst)
        };
        let (tag, modified) = if headed <= weak_heads {
            ("W/\"v\"", now)
        } else {
            ("\"v\"", now - 10)
        };
        let tag = if tags {
            format!("ETag: {tag}\r\n")
        } else {
            String::new()
        };
        let validators = format!(
            "Accept-Ranges: bytes\r\n{tag}Last-Modified: {}\r\nDate: {}\r\n",
            foresight_net::validators::format_http_date(modified).unwrap(),
            foresight_net::validators::format_http_date(now).unwrap()
        );
        let Some((first, last)) = req.range.filter(|_| req.method == "GET") else {
            return answer(req, c, "HTTP/1.1", &validators, &data).is_ok();
        };
        let last = last.min(data.len() as u64 - 1) as usize;
        let body = &data[first as usize..=last];
        let head = format!(
            "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {first}-{last}/{}\r\n\
             {validators}Content-Length: {}\r\n\r\n",
            data.len(),
            body.len()
        );
        c.write_all(head.as_bytes()).is_ok() && c.write_all(body).is_ok()
    });
    (addr, asked)
}

/// The `HEAD`s among `asked` before its first `GET`: the download's opening one and those
/// asking again for a weak tag.
fn heads_before_the_first_get(asked: &[Asked]) -> usize {
    asked.iter().take_while(|(m, _, _)| m == "HEAD").count()
}

/// A file modified within the second before the download's `HEAD` gets a weak tag from
/// `foresight serve`, strong once its timestamps cannot repeat. The download asks again (every
/// 0.1 s, for a second at most) and fetches the file with ranges under the strong tag
/// (`If-Range`), rather than giving up ranges for every fresh file. The server here sends the
/// weak tag to the first `HEAD` only.
#[test]
fn a_fresh_files_weak_tag_is_asked_again_and_ranges_go_under_the_strong_one() {
    let data = std::sync::Arc::new(content(1_500_000, 6));
    let (addr, asked) = fresh_file_server(data.clone(), 1);
    let url: Url = format!("http://{addr}/f.bin").parse().unwrap();
    let mut out = Vec::new();
    let r = client(AlphaMode::Fixed(2)).get(&url, &mut out).unwrap();
    assert!(out == *data);
    assert!(r.ranges, "a fresh file's weak tag gave up ranges");
    let asked = asked.lock().unwrap();
    let if_ranges: Vec<_> = asked.iter().filter(|(m, _, _)| m == "GET").collect();
    assert!(!if_ranges.is_empty());
    assert!(
        if_ranges
            .iter()
            .all(|(_, range, tag)| range.is_some() && tag.as_deref() == Some("\"v\"")),
        "{if_ranges:?}"
    );
}

/// From a server without tags, a file modified within the second has no validator: its
/// `Last-Modified` is the answer's `Date`. The download asks again, as for a weak tag, and puts
/// ranges together under the date once it is a second old (`If-Range`). Before, it sent its
/// ranges with no `If-Range` at all, so a replacement between two of them went unseen.
#[test]
fn a_fresh_files_date_from_a_server_without_tags_is_asked_again_and_ranges_go_under_it() {
    let data = std::sync::Arc::new(content(1_500_000, 8));
    let (addr, asked) = fresh_file_server_with(data.clone(), 2, false);
    let url: Url = format!("http://{addr}/f.bin").parse().unwrap();
    let mut out = Vec::new();
    let r = client(AlphaMode::Fixed(2)).get(&url, &mut out).unwrap();
    assert!(out == *data);
    assert!(r.ranges, "the date turned strong, yet no ranges");
    let asked = asked.lock().unwrap();
    assert_eq!(heads_before_the_first_get(&asked), 3, "{asked:?}");
    let gets: Vec<_> = asked.iter().filter(|(m, _, _)| m == "GET").collect();
    assert!(!gets.is_empty());
    assert!(
        gets.iter().all(|(_, range, date)| range.is_some()
            && date.as_deref().is_some_and(|d| d.ends_with(" GMT"))),
        "{gets:?}"
    );
}

/// A server that honours ranges but sends no validator at all (no `ETag`, no `Last-Modified`):
/// its file, replaced by one of the same length after the first range, was delivered as a mix of
/// both, exit 0. Ranges are now put together only under a validator: the file comes in one
/// `GET`, whole from one version, and a note says why.
#[test]
fn a_file_from_a_server_without_validators_is_fetched_in_one_get_never_mixed() {
    let old = content(2_000_000, 9);
    let new = content(2_000_000, 10);
    // `X-Version` is no validator: the server sends none.
    let addr = replacing_server_with(
        "X-Version: ",
        vec![(old.clone(), "1"), (new.clone(), "2")],
        |req| usize::from(req.method == "GET" && req.range.is_some() && req.seen > 0),
    );
    let (c, notes) = noted_client();
    let url: Url = format!("http://{addr}/f.bin").parse().unwrap();
    let mut out = Vec::new();
    let r = c.get(&url, &mut out).unwrap();
    assert!(
        out == old,
        "delivered {} bytes, the new file: {}",
        out.len(),
        out == new
    );
    assert!(!r.ranges);
    let notes = notes.lock().unwrap();
    assert!(
        notes
            .iter()
            .any(|n| n.contains("no validator") && n.contains("one GET")),
        "{notes:?}"
    );
}

/// A tag weak for the first three `HEAD`s and strong at the fourth: the download sends exactly
/// four `HEAD`s before its first range (the opening one and three asking again, 0.1 s apart,
/// well within the second it waits at most), every range under the strong tag, and one `HEAD`
/// more, after the last byte (the look for a rewrite).
#[test]
fn a_fresh_files_tag_strong_at_the_fourth_head_is_asked_for_exactly_three_times_more() {
    let data = std::sync::Arc::new(content(1_500_000, 7));
    let (addr, asked) = fresh_file_server(data.clone(), 3);
    let url: Url = format!("http://{addr}/f.bin").parse().unwrap();
    let mut out = Vec::new();
    let r = client(AlphaMode::Fixed(2)).get(&url, &mut out).unwrap();
    assert!(out == *data);
    assert!(r.ranges, "the tag turned strong, yet no ranges");
    let asked = asked.lock().unwrap();
    assert_eq!(heads_before_the_first_get(&asked), 4, "{asked:?}");
    let after: Vec<_> = asked
        .iter()
        .skip(4)
        .filter(|(m, _, _)| m == "HEAD")
        .collect();
    assert_eq!(after.len(), 1, "HEADs after the first range: {asked:?}");
    assert_eq!(
        asked.last().map(|(m, _, _)| m.as_str()),
        Some("HEAD"),
        "{asked:?}"
    );
    assert!(
        asked
            .iter()
            .filter(|(m, _, _)| m == "GET")
            .all(|(_, range, tag)| range.is_some() && tag.as_deref() == Some("\"v\"")),
        "{asked:?}"
    );
}

/// A tag that stays weak, its file modified within the second at every `HEAD`: the download
/// asks again every 0.1 s for a second at most (ten `HEAD`s more at most, at least one), then
/// gives up ranges and gets the file in one `GET` without a range, with a note saying why, and
/// looks again once after the last byte.
#[test]
fn a_fresh_files_tag_weak_for_good_is_fetched_in_one_get_after_a_second_of_asking() {
    let data = std::sync::Arc::new(content(300_000, 8));
    let (addr, asked) = fresh_file_server(data.clone(), usize::MAX);
    let url: Url = format!("http://{addr}/f.bin").parse().unwrap();
    let notes = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let kept = notes.clone();
    let c = client(AlphaMode::Fixed(2)).with_notes(foresight_net::client::Notes::new(move |t| {
        kept.lock().unwrap().push(t.to_string())
    }));
    let mut out = Vec::new();
    let r = c.get(&url, &mut out).unwrap();
    assert!(out == *data);
    assert!(!r.ranges, "ranges under a weak tag");
    let asked = asked.lock().unwrap();
    let heads = heads_before_the_first_get(&asked);
    println!("{heads} HEADs before the GET");
    assert!((2..=11).contains(&heads), "{heads} HEADs first: {asked:?}");
    let rest: Vec<_> = asked.iter().skip(heads).collect();
    assert!(
        matches!(
            rest.as_slice(),
            [(get, None, None), (head, None, None)] if get == "GET" && head == "HEAD"
        ),
        "after the HEADs: {rest:?}"
    );
    let notes = notes.lock().unwrap();
    assert!(
        notes
            .iter()
            .any(|n| n.contains("W/\"v\" is weak") && n.contains("one GET")),
        "{notes:?}"
    );
}

/// `foresight get` through a slow path from `foresight serve`, the file rewritten in place (same
/// inode and length) while the last range is under way, every range asked for already: that
/// range is cut short by the server, its retry under `If-Range` gets the new version whole, and
/// the download fails saying the file changed, having written only the old file's beginning (or,
/// had nothing been written, delivers the new file whole; or, had the server read its last byte
/// before the rewrite, the old file whole). Before, the server sent the rest of
/// that range from the rewritten file under the old tag, no later answer showed the change, and
/// the download ended "successfully" with new bytes after old ones.
#[test]
fn a_file_rewritten_in_place_during_a_download_is_never_delivered_mixed() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let s = serve("get-rewritten");
    let unit_bytes = 32 << 20;
    // Where the ranges the client asks for end, their size ramping from 128 KiB up to the unit
    // (128 KiB twice, then 512 KiB, 2, 4, 8, 16 and 32 MiB twice): the last range is then the
    // last request, and no later answer shows the rewrite but the one that range's cut brings.
    let len = 131_072 * 2 + 524_288 + (2 + 4 + 8 + 16 + 32 + 32) * (1 << 20);
    let old = content(len, 12);
    let new = content(len, 13);
    let path = s.root.join("w.bin");
    std::fs::write(&path, &old).unwrap();
    // An hour old, so that the tag is strong and goes in `If-Range`.
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(std::time::SystemTime::now() - Duration::from_secs(3600))
        .unwrap();
    let p = proxy::spawn(ProxyConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream: s.addr().to_string(),
        delay: Duration::from_micros(100),
        bandwidth: Some(Bandwidth::from_bytes_per_s(100e6)),
        max_connections: 64,
        send_timeout: proxy::DEFAULT_SEND_TIMEOUT,
        idle_timeout: proxy::DEFAULT_IDLE_TIMEOUT,
    })
    .unwrap();
    let stats = p.stats();
    let rewritten = AtomicBool::new(false);
    let stop = AtomicBool::new(false);
    let url: Url = format!("http://{}/w.bin", p.local_addr()).parse().unwrap();
    let c = Client::new(ClientConfig {
        alpha: AlphaMode::Fixed(1),
        readahead: Some(ByteLen(unit_bytes as u64)),
        ..ClientConfig::default()
    })
    .unwrap();
    let mut out = Vec::new();
    let r = std::thread::scope(|scope| {
        // Once all but 24 MiB have crossed the proxy: every range has been asked for, and the
        // last one's rest is more than the proxy and the sockets between hold, so the server
        // reads most of it after the rewrite.
        let at_bytes = (new.len() - (24 << 20)) as u64;
        let (stop, rewritten, path, new) = (&stop, &rewritten, &path, &new);
        scope.spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                if stats.bytes_down.load(Ordering::Relaxed) >= at_bytes {
                    use std::os::unix::fs::FileExt;
                    let f = std::fs::File::options().write(true).open(path).unwrap();
                    f.write_all_at(new, 0).unwrap();
                    f.set_modified(std::time::SystemTime::now()).unwrap();
                    rewritten.store(true, Ordering::SeqCst);
                    return;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        let r = c.get(&url, &mut out);
        stop.store(true, Ordering::SeqCst);
        r
    });
    p.shutdown();
    assert!(
        rewritten.load(Ordering::SeqCst),
        "the download ended before the rewrite: {:?}",
        r.as_ref().err()
    );
    let first_new = out
        .iter()
        .zip(&new)
        .zip(&old)
        .position(|((b, n), o)| b == n && n != o);
    match r {
        // Whole, of one version: the new one, or the old one when the rewrite landed after the
        // server's last read of the file (a loaded machine can deschedule the rewriting thread
        // while the last 24 MiB drain from the sockets and the proxy, 0.24 s at 100 MB/s).
        Ok(_) => assert!(
            out == new || out == old,
            "delivered {} bytes, mixed: new ones from {first_new:?}",
            out.len()
        ),
        Err(e) => {
            assert!(
                old.starts_with(&out),
                "delivered {} bytes, new ones from {first_new:?}: {e}",
                out.len()
            );
            assert!(
                matches!(e, foresight_net::NetError::Changed { .. }),
                "{e:?}"
            );
        }
    }
}

/// A file rewritten in place on a server that, like nginx, decides a response's headers before it
/// reads the bytes: the ranges all come under the tag of the version the download began with
/// (`"one"`), the later ones holding the rewritten bytes, and only a `HEAD` after the last byte
/// sees the new tag (`"two"`). The download fails saying the file changed, seen once it had
/// ended. Before, it succeeded and delivered the first version's first ranges followed by the
/// second's (from nginx with `--alpha 1 --readahead 64MiB`, a file of 100,000,000 bytes rewritten
/// 1 s into a 2 s download: 76,316,672 bytes of the old version and 23,683,328 of the new, exit
/// code 0).
#[test]
fn a_file_rewritten_in_place_during_its_last_responses_is_not_delivered_as_a_success() {
    let (old, new, mixed) = rewritten_halfway(8, 9);
    let addr = replacing_server(
        vec![
            (old.clone(), "\"one\""),
            (new, "\"two\""),
            (mixed.clone(), "\"one\""),
        ],
        // The opening HEAD sees the first version, every range the mix under its tag, and any
        // later HEAD the second version.
        |req| match (req.method.as_str(), req.seen) {
            ("HEAD", 0) => 0,
            ("HEAD", _) => 1,
            _ => 2,
        },
    );
    fails_as_changed_at_the_end(addr, &mixed);
}

/// The same in one plain `GET`, from a server that does not honour ranges (nginx with
/// `max_ranges 0`): the body comes under the first version's tag with the rewritten bytes after
/// the old, and a `HEAD` after it sees the new tag. Before, the download succeeded with the mix.
#[test]
fn a_file_rewritten_in_place_during_a_plain_get_is_not_delivered_as_a_success() {
    let (old, new, mixed) = rewritten_halfway(10, 11);
    let addr = tiny_server(move |req, c| {
        let (data, tag) = match (req.method.as_str(), req.seen) {
            ("HEAD", 0) => (&old, "\"one\""),
            ("HEAD", _) => (&new, "\"two\""),
            _ => (&mixed, "\"one\""),
        };
        answer(req, c, "HTTP/1.1", &format!("ETag: {tag}\r\n"), data).is_ok()
    });
    let (r, out) = download(addr);
    let e = r.expect_err(&format!("delivered {} bytes", out.len()));
    let text = e.to_string();
    assert!(
        matches!(e, foresight_net::NetError::Changed { .. })
            && text.contains("\"two\"")
            && text.contains("once the download had ended"),
        "{text}"
    );
}

/// The requests a test server saw, one line each, in order (each server's doc gives the form).
type RequestLog = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

/// A server of `data` at `/f.bin` that answers every `HEAD` with `head_status` (a status line's
/// code and reason, no body, as an object store answers a URL signed for `GET` only) and serves
/// `GET`: with `ranges`, a range gets 206 under the strong tag `"v1"` (416 with `bytes */LEN`
/// when it starts at or past the end, an empty file's case), and without, every `GET` gets the
/// whole file (200). Every other path is 404. Returns the address and every request as
/// `METHOD RANGE IF-RANGE`, in order.
fn head_refusing_server(
    head_status: &'static str,
    data: std::sync::Arc<Vec<u8>>,
    ranges: bool,
) -> (std::net::SocketAddr, RequestLog) {
    use std::io::Write;
    let asked = RequestLog::default();
    let log = asked.clone();
    let addr = tiny_server(move |req, c| {
        if req.path != "/f.bin" {
            return c
                .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                .is_ok();
        }
        log.lock()
            .unwrap()
            .push(format!("{} {:?} {:?}", req.method, req.range, req.if_range));
        let len = data.len() as u64;
        if req.method == "HEAD" {
            return c
                .write_all(
                    format!(
                        "HTTP/1.1 {head_status}\r\nContent-Type: application/xml\r\n\
                         Content-Length: 0\r\n\r\n"
                    )
                    .as_bytes(),
                )
                .is_ok();
        }
        match req.range.filter(|_| ranges) {
            Some((first, _)) if first >= len => c
                .write_all(
                    format!(
                        "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */{len}\r\n\
                         Content-Length: 0\r\n\r\n"
                    )
                    .as_bytes(),
                )
                .is_ok(),
            Some((first, last)) => {
                let last = last.min(len - 1);
                let body = &data[first as usize..=last as usize];
                c.write_all(
                    format!(
                        "HTTP/1.1 206 Partial Content\r\nETag: \"v1\"\r\n\
                         Content-Range: bytes {first}-{last}/{len}\r\nContent-Length: {}\r\n\r\n",
                        body.len()
                    )
                    .as_bytes(),
                )
                .and_then(|_| c.write_all(body))
                .is_ok()
            }
            None => c
                .write_all(
                    format!("HTTP/1.1 200 OK\r\nETag: \"v1\"\r\nContent-Length: {len}\r\n\r\n")
                        .as_bytes(),
                )
                .and_then(|_| c.write_all(&data))
                .is_ok(),
        }
    });
    (addr, asked)
}

/// A server that refuses `HEAD` (405 Method Not Allowed, 501 Not Implemented, or 403 Forbidden
/// with no reason, as an object store answers a URL signed for `GET` only) while serving `GET`
/// with ranges is still downloaded: the length and the validator come from the first range's
/// `Content-Range` and `ETag`, every later range carries `If-Range` with that tag, and no `HEAD`
/// is sent after the first. Files of several units, shorter than the first range, and empty (the
/// first range answered 416). Before, every such download failed with `HEAD answered 405`.
#[test]
fn a_server_that_refuses_head_is_read_with_ranges_learnt_from_the_first_get() {
    for head_status in [
        "405 Method Not Allowed",
        "501 Not Implemented",
        "403 Forbidden",
    ] {
        for len in [3_000_017usize, 1000, 0] {
            let data = std::sync::Arc::new(content(len, 9));
            let (addr, asked) = head_refusing_server(head_status, data.clone(), true);
            let url: Url = format!("http://{addr}/f.bin").parse().unwrap();
            let mut out = Vec::new();
            let r = client(AlphaMode::Fixed(3))
                .get(&url, &mut out)
                .unwrap_or_else(|e| panic!("{head_status}, {len} bytes: {e}"));
            assert!(
                out == *data,
                "{head_status}, {len} bytes: {} bytes delivered",
                out.len()
            );
            assert_eq!(r.bytes, len as u64);
            assert!(r.ranges, "{head_status}, {len} bytes");
            let asked = asked.lock().unwrap().clone();
            assert_eq!(
                asked.iter().filter(|a| a.starts_with("HEAD")).count(),
                1,
                "{head_status}, {len} bytes: {asked:#?}"
            );
            let gets: Vec<&String> = asked.iter().filter(|a| a.starts_with("GET")).collect();
            assert!(
                gets[0].starts_with("GET Some((0, ")
                    && gets[1..]
                        .iter()
                        .all(|g| g.starts_with("GET Some(") && g.ends_with("Some(\"\\\"v1\\\"\")")),
                "{head_status}, {len} bytes: {asked:#?}"
            );
            if len > 1 << 20 {
                assert!(gets.len() > 2, "{asked:#?}");
            }
        }
    }
    // Random reads learn the length the same way.
    let data = std::sync::Arc::new(content(3_000_017, 11));
    let (addr, _) = head_refusing_server("403 Forbidden", data, true);
    let url: Url = format!("http://{addr}/f.bin").parse().unwrap();
    let r = client(AlphaMode::Fixed(2))
        .random_reads(&url, ByteLen::kib(64), 8, 4)
        .unwrap();
    assert_eq!(r.bytes, 8 * (64 << 10));
}

/// A download from a server that refuses `HEAD` holds its first range's bytes until a later
/// answer confirms their version; those bytes count against `max_buffer` like any other, and the
/// download stays within it, at the smallest budgets as at the default.
#[test]
fn a_download_without_head_holds_no_more_than_its_buffer_budget() {
    let data = std::sync::Arc::new(content(3_000_017, 13));
    let mut ran = Vec::new();
    for (budget, alpha) in [
        (ByteLen::mib(1), AlphaMode::Fixed(1)),
        (ByteLen::mib(1), AlphaMode::Fixed(3)),
        (ByteLen::mib(1), AlphaMode::Auto),
        (ByteLen::kib(512), AlphaMode::Fixed(1)),
        (ByteLen::mib(32), AlphaMode::Auto),
    ] {
        let (addr, _) = head_refusing_server("405 Method Not Allowed", data.clone(), true);
        let url: Url = format!("http://{addr}/f.bin").parse().unwrap();
        let Ok(c) = Client::new(ClientConfig {
            alpha,
            max_buffer: budget,
            ..ClientConfig::default()
        }) else {
            continue;
        };
        let mut out = Vec::new();
        let r = c
            .get(&url, &mut out)
            .unwrap_or_else(|e| panic!("{budget} {alpha}: {e}"));
        assert!(out == *data, "{budget} {alpha}");
        assert!(r.buffered_peak_bytes <= budget.0, "{budget} {alpha}: {r:?}");
        ran.push(format!("{budget} {alpha}: peak {}", r.buffered_peak_bytes));
    }
    // A budget too small for its alpha is refused up front; the others ran.
    assert!(ran.len() >= 4, "{ran:#?}");
}

/// A first range (in place of a refused `HEAD`) whose answer cannot give the file's length is an
/// error that says what came: a `Content-Range` without the length (`/*`), and a 416 naming a
/// length that a range from byte 0 would have fitted.
#[test]
fn a_first_range_that_cannot_give_the_length_is_an_error_naming_what_came() {
    use std::io::Write;
    for (answer, shown) in [
        (
            "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-9/*\r\nContent-Length: 10\r\n\r\n0123456789",
            "Content-Range `bytes 0-9/*`",
        ),
        (
            "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */500\r\nContent-Length: 0\r\n\r\n",
            "416 Range Not Satisfiable with Content-Range `bytes */500`",
        ),
    ] {
        let addr = tiny_server(move |req, c| {
            let text = if req.method == "HEAD" {
                "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n"
            } else if req.path == "/f.bin" {
                answer
            } else {
                "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"
            };
            c.write_all(text.as_bytes()).is_ok()
        });
        let url: Url = format!("http://{addr}/f.bin").parse().unwrap();
        let mut out = Vec::new();
        let e = client(AlphaMode::Auto)
            .get(&url, &mut out)
            .unwrap_err()
            .to_string();
        assert!(e.contains("HEAD answered 405") && e.contains(shown), "{e}");
        assert!(out.is_empty());
    }
}

/// A server that refuses `HEAD` and ignores `Range` (every `GET` gets the whole file, 200): the
/// answer to the first range is the download, read whole as it arrives, without a second `GET`.
#[test]
fn a_server_that_refuses_head_and_ignores_ranges_is_read_in_its_first_get() {
    for len in [3_000_017usize, 1000, 0] {
        let data = std::sync::Arc::new(content(len, 10));
        let (addr, asked) = head_refusing_server("405 Method Not Allowed", data.clone(), false);
        let url: Url = format!("http://{addr}/f.bin").parse().unwrap();
        let mut out = Vec::new();
        let r = client(AlphaMode::Auto)
            .get(&url, &mut out)
            .unwrap_or_else(|e| panic!("{len} bytes: {e}"));
        assert!(out == *data, "{len} bytes: {} bytes delivered", out.len());
        assert!(!r.ranges);
        let asked = asked.lock().unwrap().clone();
        // The last, the closing look under `If-None-Match`, is answered with the whole file
        // (this server ignores conditions too) under the same tag: no change.
        assert_eq!(
            asked.len(),
            3,
            "one HEAD, one GET and the closing look: {asked:#?}"
        );
    }
}

/// A refusal that is the file's and not the method's (the `GET` is refused as the `HEAD` was) is
/// still reported as the `HEAD`'s status with the server's plain-text reason.
#[test]
fn a_head_refusal_that_the_get_repeats_is_reported_with_its_reason() {
    use std::io::Write;
    let addr = tiny_server(move |req, c| {
        let body = if req.method == "HEAD" {
            ""
        } else {
            "this file is not yours\n"
        };
        c.write_all(
            format!(
                "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\n\
                 Content-Length: {}\r\n\r\n{body}",
                "this file is not yours\n".len()
            )
            .as_bytes(),
        )
        .is_ok()
    });
    let url: Url = format!("http://{addr}/f.bin").parse().unwrap();
    let e = client(AlphaMode::Auto)
        .get(&url, &mut Vec::new())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("HEAD answered 403 Forbidden: this file is not yours"),
        "{e}"
    );
}

/// A server that refuses `HEAD`, of a file rewritten in place during the last responses: every
/// data range is served from a mix of both versions under the first tag (`"one"`), and only a
/// request after the last byte sees the new tag (`"two"`). The download's closing look, a
/// `Range: bytes=0-0` under `If-Range: "one"`, gets the whole new file (200) and the download
/// fails saying the file changed, seen once it had ended. Before, without a `HEAD` there was no
/// closing look and the mix was delivered with success.
#[test]
fn a_file_rewritten_in_its_last_responses_from_a_server_refusing_head_is_not_a_success() {
    let (_, new, mixed) = rewritten_halfway(12, 13);
    let addr = replacing_server_full(
        "ETag: ",
        true,
        vec![(mixed.clone(), "\"one\""), (new, "\"two\"")],
        // Only the closing look (the one-byte range) sees the second version.
        |req| usize::from(req.range == Some((0, 0))),
    );
    fails_as_changed_at_the_end(addr, &mixed);
}

/// The same server with a file that does not change: the download succeeds, and its closing
/// look is exactly one request more, `Range: bytes=0-0` under `If-Range` with the file's tag.
/// Before, no such request was sent.
#[test]
fn a_server_refusing_head_gets_one_closing_look_as_a_one_byte_range_under_if_range() {
    let data = content(2_000_000, 14);
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = asked.clone();
    let addr = replacing_server_full(
        "ETag: ",
        true,
        vec![(data.clone(), "\"one\"")],
        move |req| {
            log.lock()
                .unwrap()
                .push((req.method.clone(), req.range, req.if_range.clone()));
            0
        },
    );
    let (r, out) = download(addr);
    r.unwrap();
    assert!(out == data, "{} bytes delivered", out.len());
    let asked = asked.lock().unwrap().clone();
    let looks: Vec<_> = asked
        .iter()
        .filter(|(m, range, _)| m == "GET" && *range == Some((0, 0)))
        .collect();
    assert_eq!(looks.len(), 1, "{asked:?}");
    assert_eq!(looks[0].2.as_deref(), Some("\"one\""), "{asked:?}");
    // It is the last request.
    assert_eq!(asked.last().map(|a| a.1), Some(Some((0, 0))), "{asked:?}");
}
/// A server that refuses `HEAD`, whose file is replaced just after the first range (which played
/// the `HEAD`'s part): the next range, under `If-Range` with the first tag, gets the whole new
/// file. The first range's bytes were held until an answer confirmed their version, so nothing
/// was written, and the download starts over and delivers the new file, as it does when a `HEAD`
/// opened it. Before, the first range's bytes were written at once and the download failed as
/// changed with them written.
#[test]
fn a_file_replaced_after_the_first_range_from_a_server_refusing_head_is_downloaded_again() {
    let old = content(2_000_000, 15);
    let new = content(2_000_000, 16);
    let addr = replacing_server_full(
        "ETag: ",
        true,
        vec![(old, "\"one\""), (new.clone(), "\"two\"")],
        // Only the first GET sees the old file.
        |req| usize::from(req.method != "GET" || req.seen > 0),
    );
    let (r, out) = download(addr);
    let r = r.unwrap_or_else(|e| panic!("{e}; {} bytes written", out.len()));
    assert!(out == new, "{} bytes, not the new file", out.len());
    assert_eq!(r.bytes, new.len() as u64);
}

/// The notes a client hands on, kept for a test to read.
fn noted_client() -> (Client, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    let notes = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let kept = notes.clone();
    let c = client(AlphaMode::Auto).with_notes(foresight_net::client::Notes::new(move |t| {
        kept.lock().unwrap().push(t.to_string())
    }));
    (c, notes)
}

/// A host name that does not resolve (the `.invalid` top-level domain never does, RFC 2606) is
/// final at the first attempt, and the error says the name could not be resolved and to check
/// the URL's host. Before, the lookup's failure was taken for a connect that might succeed a
/// moment later: three attempts, two notes and 0.3 s, then `cannot connect to ...: failed to
/// lookup address information`.
#[test]
fn a_host_name_that_does_not_resolve_is_tried_once() {
    let (c, notes) = noted_client();
    let url: Url = "http://no-such-host.invalid:8080/f.bin".parse().unwrap();
    let e = c
        .get(&url, &mut Vec::new())
        .expect_err("a name under .invalid never resolves");
    let text = e.to_string();
    assert!(
        matches!(e, foresight_net::NetError::Resolve { .. }),
        "{text}"
    );
    assert!(
        text.contains("no-such-host.invalid")
            && text.contains("could not be resolved")
            && text.contains("check the host in the URL"),
        "{text}"
    );
    assert!(!text.contains("attempts"), "{text}");
    let notes = notes.lock().unwrap().clone();
    assert!(
        notes.iter().all(|n| !n.contains("attempt")),
        "the lookup was tried again: {notes:#?}"
    );
}

/// A connect that is refused (nothing listens on the port) is still sent again, three times in
/// all, with a note each time, as before the lookup was made final.
#[test]
fn a_refused_connect_is_still_tried_three_times() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let (c, notes) = noted_client();
    let url: Url = format!("http://127.0.0.1:{port}/f.bin").parse().unwrap();
    let e = c
        .get(&url, &mut Vec::new())
        .expect_err("nothing listens there");
    let text = e.to_string();
    assert!(
        text.contains("cannot connect") && text.contains("gave up after 3 attempts"),
        "{text}"
    );
    let notes = notes.lock().unwrap().clone();
    for attempt in 1..=2 {
        assert!(
            notes
                .iter()
                .any(|n| n.contains(&format!("attempt {attempt} of 3 failed"))),
            "no note of attempt {attempt}: {notes:#?}"
        );
    }
}

/// A server that refuses `HEAD` (405) and ignores ranges, serving `/f.bin` in versions: the
/// version `version` picks for each request, its validator sent as `field` (`ETag: ` or
/// `Last-Modified: `). With `conditions`, a `GET` under `If-None-Match` or `If-Modified-Since`
/// naming the version served gets 304; without, conditions are ignored (the whole file, 200).
/// Every request to the file is logged as `METHOD condition`.
fn conditional_server(
    field: &'static str,
    conditions: bool,
    files: Vec<(Vec<u8>, &'static str)>,
    version: impl Fn(&Req) -> usize + Send + Sync + 'static,
) -> (std::net::SocketAddr, RequestLog) {
    use std::io::Write;
    let asked = RequestLog::default();
    let log = asked.clone();
    let addr = tiny_server(move |req, c| {
        if req.path == "/f.bin" {
            log.lock()
                .unwrap()
                .push(format!("{} {:?}", req.method, req.unless));
        }
        if req.method == "HEAD" {
            return refuse_head_405(c);
        }
        let (data, validator) = &files[version(req)];
        let date = http_date_now();
        let headers = format!("{field}{validator}\r\nDate: {date}\r\n");
        let same = if field == "ETag: " {
            format!("if-none-match: {validator}")
        } else {
            format!("if-modified-since: {validator}")
        };
        if conditions && req.unless.as_deref() == Some(same.as_str()) {
            return c
                .write_all(format!("HTTP/1.1 304 Not Modified\r\n{headers}\r\n").as_bytes())
                .is_ok();
        }
        answer(req, c, "HTTP/1.1", &headers, data).is_ok()
    });
    (addr, asked)
}

/// A server that refuses `HEAD` and ignores ranges, of a file rewritten in place while its one
/// `GET` was sent: the answer is a mix of both versions under the first validator, and only a
/// request after the last byte sees the second. The closing look, a `GET` under `If-None-Match`
/// (`If-Modified-Since` from a server without tags) with the first validator, gets the whole new
/// file (200, not read) with the second validator, and the download fails saying the file
/// changed, seen once it had ended. Before, a download from such a server had no closing look at
/// all, and the mix was delivered with success (exit code 0).
#[test]
fn a_file_rewritten_during_the_one_get_from_a_server_refusing_head_is_not_a_success() {
    let (_, new, mixed) = rewritten_halfway(17, 18);
    for (field, one, two) in [
        ("ETag: ", "\"one\"", "\"two\""),
        // A weak tag too: `If-None-Match` compares weakly.
        ("ETag: ", "W/\"one\"", "W/\"two\""),
        (
            "Last-Modified: ",
            "Mon, 02 Jan 2023 03:04:05 GMT",
            "Mon, 02 Jan 2023 03:04:06 GMT",
        ),
    ] {
        let (addr, asked) = conditional_server(
            field,
            true,
            vec![(mixed.clone(), one), (new.clone(), two)],
            // Only the first GET sees the first version.
            |req| usize::from(req.method == "GET" && req.seen > 0),
        );
        let url: Url = format!("http://{addr}/f.bin").parse().unwrap();
        let mut out = Vec::new();
        let e = client(AlphaMode::Auto)
            .get(&url, &mut out)
            .expect_err("a mix of two versions was delivered as a success");
        let text = e.to_string();
        assert!(
            matches!(e, foresight_net::NetError::Changed { .. })
                && text.contains("seen once the download had ended")
                && text.contains(one)
                && text.contains(two),
            "{field}{text}"
        );
        let asked = asked.lock().unwrap().clone();
        let condition = if field == "ETag: " {
            "if-none-match"
        } else {
            "if-modified-since"
        };
        assert_eq!(
            asked.last().map(String::as_str),
            Some(format!("GET {:?}", Some(format!("{condition}: {one}"))).as_str()),
            "{asked:#?}"
        );
    }
}

/// The same server with a file that does not change: one request more than before, the
/// conditional `GET`, answered 304 by a server that honours it; and a server that ignores
/// conditions answers it with the whole file (200) under the same validator, which is no change
/// and no failure (a one-byte range under `If-Range` would get such a 200 from a server that
/// ignores ranges, and could not tell it from a change).
#[test]
fn a_server_refusing_head_and_ignoring_ranges_gets_one_conditional_closing_look() {
    let data = content(1_000_003, 19);
    for conditions in [true, false] {
        let (addr, asked) =
            conditional_server("ETag: ", conditions, vec![(data.clone(), "\"one\"")], |_| 0);
        let url: Url = format!("http://{addr}/f.bin").parse().unwrap();
        let mut out = Vec::new();
        let r = client(AlphaMode::Auto)
            .get(&url, &mut out)
            .unwrap_or_else(|e| panic!("conditions honoured: {conditions}: {e}"));
        assert!(out == data, "{} bytes delivered", out.len());
        assert!(!r.ranges);
        let asked = asked.lock().unwrap().clone();
        assert_eq!(
            asked,
            [
                "HEAD None",
                "GET None",
                "GET Some(\"if-none-match: \\\"one\\\"\")"
            ],
            "conditions honoured: {conditions}"
        );
    }
}
