//! Helpers shared by the integration tests: a served directory with known files and a raw HTTP/1.1
//! exchange that sends exactly the bytes given (so malformed requests reach the server as written).

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::time::Duration;

use foresight_core::Bandwidth;
use foresight_net::server::{spawn, DeviceSource, ServerConfig, ServerHandle};

/// Bytes of `big.bin`: not a multiple of any unit, so the last range is short.
pub const BIG_BYTES: usize = 5 * 1024 * 1024 + 12345;

pub fn content(len: usize, salt: u8) -> Vec<u8> {
    (0..len)
        .map(|i| ((i as u64).wrapping_mul(2654435761) >> 7) as u8 ^ salt ^ (i as u8))
        .collect()
}

pub struct Served {
    pub dir: PathBuf,
    /// Removes `dir`, with everything in it, once the server has stopped (fields drop after
    /// `Drop::drop`), also when a test fails and unwinds.
    _tmp: tempfile::TempDir,
    pub root: PathBuf,
    pub big: Vec<u8>,
    pub server: Option<ServerHandle>,
}

impl Served {
    pub fn addr(&self) -> SocketAddr {
        self.server.as_ref().unwrap().local_addr()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(s) = self.server.take() {
            s.shutdown().unwrap();
        }
    }
}

/// A root with `big.bin`, `sub/small.txt`, an empty file, a symlink out of the root, a relative
/// and an absolute symlink to `sub/small.txt`, and a file outside it, served by a fresh server.
pub fn serve(label: &str) -> Served {
    serve_with(label, |_| {})
}

/// Like [`serve`], with the server's settings adjusted by `tweak` first.
pub fn serve_with(label: &str, tweak: impl FnOnce(&mut ServerConfig)) -> Served {
    let tmp = tempfile::Builder::new()
        .prefix(&format!("foresight-net-{label}-"))
        .tempdir()
        .unwrap();
    let dir = tmp.path().to_path_buf();
    let root = dir.join("root");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    let big = content(BIG_BYTES, 7);
    std::fs::write(root.join("big.bin"), &big).unwrap();
    std::fs::write(root.join("sub/small.txt"), b"hello, ranges\n").unwrap();
    std::fs::write(root.join("empty"), b"").unwrap();
    std::fs::write(dir.join("secret.txt"), b"do not serve").unwrap();
    std::os::unix::fs::symlink(dir.join("secret.txt"), root.join("escape")).unwrap();
    std::os::unix::fs::symlink("sub/small.txt", root.join("inside")).unwrap();
    std::os::unix::fs::symlink(root.join("sub/small.txt"), root.join("inside-absolute")).unwrap();
    let mut cfg = ServerConfig::new(root.clone(), "127.0.0.1:0".parse().unwrap());
    cfg.workers = 4;
    cfg.device = DeviceSource::Configured(Bandwidth::from_mib_s(400.0));
    cfg.engine_memory = foresight_core::ByteLen::mib(64);
    tweak(&mut cfg);
    let server = spawn(cfg).unwrap();
    Served {
        dir,
        _tmp: tmp,
        root,
        big,
        server: Some(server),
    }
}

/// A parsed response.
#[derive(Debug)]
pub struct Raw {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Raw {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Reads one response from `s` (Content-Length bodies only; `head` for a HEAD answer).
pub fn read_response(s: &mut TcpStream, head: bool) -> Raw {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        let n = s.read(&mut byte).unwrap();
        assert!(
            n > 0,
            "connection closed inside the response head: {:?}",
            String::from_utf8_lossy(&buf)
        );
        buf.push(byte[0]);
    }
    let text = String::from_utf8(buf).unwrap();
    let mut lines = text.split("\r\n");
    let status: u16 = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (k, v) = l.split_once(':').unwrap();
            (k.trim().to_string(), v.trim().to_string())
        })
        .collect();
    let len: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .map_or(0, |(_, v)| v.parse().unwrap());
    let mut body = vec![0u8; if head { 0 } else { len }];
    s.read_exact(&mut body).unwrap();
    Raw {
        status,
        headers,
        body,
    }
}

/// Sends `request` as written on a new connection and reads one response.
pub fn raw(addr: SocketAddr, request: &str) -> Raw {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    read_response(&mut s, request.starts_with("HEAD "))
}

/// A GET of `path` with an optional Range header.
pub fn get(addr: SocketAddr, path: &str, range: Option<&str>) -> Raw {
    let range = range.map_or(String::new(), |r| format!("Range: {r}\r\n"));
    raw(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: t\r\n{range}Connection: close\r\n\r\n"),
    )
}

/// A GET of `path` as stream `stream` (the `x-foresight-stream` header), so that successive
/// requests reach the same worker and its engine reader.
pub fn get_as_stream(addr: SocketAddr, path: &str, stream: &str) -> Raw {
    raw(
        addr,
        &format!(
            "GET {path} HTTP/1.1\r\nHost: t\r\nx-foresight-stream: {stream}\r\nConnection: close\r\n\r\n"
        ),
    )
}

/// The value of an unlabelled metric in the server's `/metrics` text.
pub fn metric(addr: SocketAddr, name: &str) -> f64 {
    let r = get(addr, "/metrics", None);
    let text = String::from_utf8(r.body).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no metric {name} in {text}"))
}

/// Writes a file of `len` bytes under the served root.
pub fn write_file(s: &Served, name: &str, len: usize) {
    std::fs::write(s.root.join(name), content(len, 3)).unwrap();
}

/// A connection with a receive buffer of a few KiB that asks for `path` (without a stream header)
/// and then reads nothing: a client that stopped reading. Its small buffer makes the server's
/// writes stall after a few KiB instead of filling megabytes of socket buffer first.
pub fn stalled_reader(addr: SocketAddr, path: &str) -> TcpStream {
    let mut s = small_buffer_connection(addr);
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes())
        .unwrap();
    s
}

/// A blocking connection to `addr` whose receive buffer is set to 4 KiB before it connects (the
/// kernel takes the window from it at the handshake), so that a peer's writes to it stall soon
/// once it stops reading.
pub fn small_buffer_connection(addr: SocketAddr) -> TcpStream {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let s = rt
        .block_on(socket.connect(addr))
        .unwrap()
        .into_std()
        .unwrap();
    s.set_nonblocking(false).unwrap();
    s
}

/// A fake server's read of one request head from `c`, byte by byte up to the blank line: the head
/// as text, its method and its target. `None` once the client closes or fails.
pub fn read_request_head(c: &mut TcpStream) -> Option<(String, String, String)> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match c.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return None,
        }
    }
    let text = String::from_utf8_lossy(&head).into_owned();
    let mut words = text.split_whitespace();
    let method = words.next().unwrap_or("").to_string();
    let path = words.next().unwrap_or("").to_string();
    Some((text, method, path))
}

/// A client that reads slowly but steadily: a connection with a receive buffer of a few KiB that
/// asks for `path` (without a stream header) and then takes 4 KiB every 100 ms (about 40 KiB/s,
/// never long enough without reading for a send timeout to catch it) until `stop` is set or the
/// response ends. Returns the bytes it read.
pub fn slow_reader(
    addr: SocketAddr,
    path: &str,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<usize> {
    let mut s = stalled_reader(addr, path);
    std::thread::spawn(move || {
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut buf = [0u8; 4096];
        let mut total = 0;
        while !stop.load(std::sync::atomic::Ordering::SeqCst) {
            match s.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => total += n,
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        total
    })
}
