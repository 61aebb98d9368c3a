//! The HTTP parsers on both ends against noise: the server's request-head handling (hyper's parser
//! and the server's own checks of the target, `Host` and `Range`) and the client's reading of
//! response heads (status, `Content-Length`, `Accept-Ranges`, `Content-Range`).
//!
//! Each case starts from a valid exchange and edits it at random places: a byte flipped, the head
//! cut short, a 24-digit number or a byte that is not UTF-8 spliced in. The server must answer
//! each request with a well-formed status line that is not a 5xx (a malformed request is the
//! client's fault) or close the connection, and keep serving. The client must end every download
//! with the file's exact bytes or with an error: never a panic, never other bytes. Every
//! connection that carries an edited message is closed after it, so no case waits on a timeout.
//! proptest prints the failing edits and saves them under `proptest-regressions/`, so a failure
//! replays.

mod common;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{content, get, read_request_head, serve};
use foresight_net::client::{Client, ClientConfig, Url};
use foresight_net::range::{parse_range_header, ParsedRange};
use foresight_policy::adaptive::AlphaMode;
use proptest::prelude::*;

/// One edit: where (an index into the message), what, and a byte to use.
type Edit = (prop::sample::Index, u8, u8);

fn edit() -> impl Strategy<Value = Edit> {
    (any::<prop::sample::Index>(), 0u8..5, any::<u8>())
}

/// Applies `edits` to the first `head_len` bytes of `msg` (the head; a body is left alone, since
/// no client can tell a flipped body byte from data).
fn apply(msg: &[u8], head_len: usize, edits: &[Edit]) -> Vec<u8> {
    let mut head = msg[..head_len].to_vec();
    let mut body = msg[head_len..].to_vec();
    for (at, kind, byte) in edits {
        // Inside the head: a byte spliced in after its last one would be the body's first.
        let i = at.index(head.len().max(1));
        match kind {
            0 if i < head.len() => head[i] ^= (*byte).max(1),
            0 | 1 => {
                head.truncate(i);
                body.clear();
            }
            2 => drop(head.splice(i..i, *b"999999999999999999999999")),
            3 => head.insert(i, 0xc3),
            _ => head.insert(i, *byte),
        }
    }
    head.extend_from_slice(&body);
    head
}

/// Request heads the server answers with 200 or 206.
const REQUESTS: &[&str] = &[
    "GET /sub/small.txt HTTP/1.1\r\nHost: t\r\nRange: bytes=2-6\r\n\r\n",
    "GET /big.bin HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nRange: bytes=1000-1999, -5\r\n\r\n",
    "HEAD /big.bin HTTP/1.1\r\nHost: t\r\nx-foresight-stream: s1\r\n\r\n",
    "GET /sub/small.txt HTTP/1.0\r\n\r\n",
    "GET /%73ub/small.txt?x=1 HTTP/1.1\r\nHost: t\r\nRange: bytes=-3\r\nIf-Range: x\r\n\r\n",
];

/// Everything the server sends back on one connection, read until it closes.
fn exchange(addr: SocketAddr, request: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).unwrap();
    // A safety net only: the half-close below ends every exchange long before.
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(request).unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    let mut out = Vec::new();
    match s.read_to_end(&mut out) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        Err(e) => panic!(
            "reading the answer to {:?}: {e}",
            String::from_utf8_lossy(request)
        ),
    }
    out
}

/// The status codes of the answers in `out`, each from a status line `HTTP/1.x NNN ...`.
fn statuses(out: &[u8]) -> Vec<u16> {
    let text = String::from_utf8_lossy(out);
    text.match_indices("HTTP/1.")
        .filter(|(i, _)| *i == 0 || text[..*i].ends_with('\n'))
        .filter_map(|(i, _)| text.get(i + 9..i + 12)?.parse().ok())
        .collect()
}

#[test]
fn edited_request_heads_are_answered_with_a_4xx_or_closed_and_the_server_keeps_serving() {
    let s = serve("noise");
    let addr = s.addr();
    for r in REQUESTS {
        let st = statuses(&exchange(addr, r.as_bytes()));
        assert!(matches!(st.first(), Some(200 | 206)), "{r:?}: {st:?}");
    }
    // One server for every case; the runner is built by hand for that, and told this file so
    // that a failure is saved and replayed as the macro's are.
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 192,
        source_file: Some(file!()),
        ..ProptestConfig::default()
    });
    let strategy = (
        0..REQUESTS.len(),
        proptest::collection::vec(edit(), 1..4),
        any::<bool>(),
    );
    runner
        .run(&strategy, |(which, edits, twice)| {
            let r = REQUESTS[which].as_bytes();
            let mut request = apply(r, r.len(), &edits);
            if twice {
                // Pipelined after a valid request: the edited one must not spoil its answer.
                request.splice(0..0, REQUESTS[0].bytes());
            }
            let out = exchange(addr, &request);
            let st = statuses(&out);
            prop_assert!(
                out.is_empty() || out.starts_with(b"HTTP/1."),
                "{:?} got {:?}",
                String::from_utf8_lossy(&request),
                String::from_utf8_lossy(&out[..out.len().min(200)])
            );
            prop_assert!(
                st.iter().all(|c| (200..500).contains(c)),
                "{:?} got {:?}",
                String::from_utf8_lossy(&request),
                st
            );
            if twice {
                prop_assert_eq!(st.first(), Some(&206));
            }
            Ok(())
        })
        .unwrap();
    assert_eq!(get(addr, "/sub/small.txt", None).status, 200);
}

/// A server that answers like a correct one (ranges, `HEAD`, 404 for other paths) except that
/// the answer numbered `edited` (counted from 0 over all connections) has its head edited, after
/// which that connection is closed.
struct Scripted {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
}

impl Scripted {
    fn start(data: Arc<Vec<u8>>, edited: usize, edits: Vec<Edit>) -> Scripted {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let (count, edits) = (Arc::new(AtomicUsize::new(0)), Arc::new(edits));
        let halt = stop.clone();
        std::thread::spawn(move || {
            for c in listener.incoming() {
                if halt.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(c) = c else { continue };
                let (data, count, edits) = (data.clone(), count.clone(), edits.clone());
                std::thread::spawn(move || serve_connection(c, &data, &count, edited, &edits));
            }
        });
        Scripted { addr, stop }
    }
}

impl Drop for Scripted {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
    }
}

fn serve_connection(
    mut c: TcpStream,
    data: &[u8],
    count: &AtomicUsize,
    edited: usize,
    edits: &[Edit],
) {
    loop {
        let Some((text, method, path)) = read_request_head(&mut c) else {
            return;
        };
        let (method, path) = (method.as_str(), path.as_str());
        let range = text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("range")
                .then(|| v.trim().to_string())
        });
        let len = data.len() as u64;
        let (head_out, body): (String, &[u8]) = if path != "/f.bin" {
            (
                "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".into(),
                &[],
            )
        } else if let Some(Ok(ParsedRange::Bytes(specs))) =
            range.map(|r| parse_range_header(r.as_bytes()))
        {
            let r = specs[0]
                .resolve(len)
                .expect("the client asks inside the file");
            let (first, end) = (r.start.0, r.end().0);
            (
                format!(
                    "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {first}-{}/{len}\r\n\
                     Content-Length: {}\r\n\r\n",
                    end - 1,
                    end - first
                ),
                &data[first as usize..end as usize],
            )
        } else {
            (
                format!("HTTP/1.1 200 OK\r\nAccept-Ranges: bytes\r\nContent-Length: {len}\r\n\r\n"),
                if method == "HEAD" { &[] } else { data },
            )
        };
        let mut msg = head_out.into_bytes();
        let head_len = msg.len();
        msg.extend_from_slice(body);
        if count.fetch_add(1, Ordering::SeqCst) == edited {
            let _ = c.write_all(&apply(&msg, head_len, edits));
            return;
        }
        if c.write_all(&msg).is_err() {
            return;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// One answer of a download with an edited head: the download ends with the file's exact
    /// bytes (the client retried, or the edit changed nothing it reads) or with an error naming
    /// the server, never with other bytes.
    #[test]
    fn an_edited_response_head_ends_in_the_right_bytes_or_an_error(
        edited in 0usize..6,
        edits in proptest::collection::vec(edit(), 1..3),
    ) {
        let data = Arc::new(content(40_000, 9));
        let server = Scripted::start(data.clone(), edited, edits);
        let url: Url = format!("http://{}/f.bin", server.addr).parse().unwrap();
        let client = Client::new(ClientConfig {
            alpha: AlphaMode::Fixed(2),
            readahead: Some(foresight_core::ByteLen::kib(8)),
            // A safety net only: every edited answer is followed by a close.
            request_timeout: Duration::from_secs(30),
            ..ClientConfig::default()
        })
        .unwrap();
        let mut out = Vec::new();
        match client.get(&url, &mut out) {
            Ok(_) => prop_assert!(out == *data, "{} bytes, not the file's", out.len()),
            Err(e) => prop_assert!(e.to_string().contains(&server.addr.to_string()), "{}", e),
        }
    }
}
