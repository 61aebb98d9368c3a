//! `foresight proxy`: a TCP relay that adds one-way delay and caps bandwidth, for measuring the
//! client against long or slow paths on one machine.
//!
//! Each direction of the relay is a link with a rate and a propagation delay, shared by every
//! connection through the proxy (as one physical link would be). A chunk read from one side is
//! serialized onto the link after the chunks before it (`free_at = max(now, free_at) + bytes /
//! rate`) and written to the other side `delay` later. Per connection and direction, a reader
//! thread stamps chunks and a writer thread sleeps until each chunk is due; the queue between them
//! is bounded to the link's bandwidth-delay product plus 1 MiB, so a fast sender is held back by
//! TCP flow control rather than by the proxy's memory. Plain threads rather than an async runtime
//! because their sleeps are precise to tens of microseconds, which the shortest delays need.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use foresight_core::Bandwidth;

use crate::NetError;

/// The proxy's settings.
#[derive(Clone, Debug)]
pub struct ProxyConfig {
    /// Where to listen.
    pub listen: SocketAddr,
    /// Where to relay to (`host:port`).
    pub upstream: String,
    /// One-way delay added in each direction.
    pub delay: Duration,
    /// The rate of each direction's link; `None` for no cap.
    pub bandwidth: Option<Bandwidth>,
    /// Most connections relayed at once; more are closed at once.
    pub max_connections: usize,
}

/// A running proxy.
#[derive(Debug)]
pub struct ProxyHandle {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    stats: Arc<ProxyStats>,
    thread: Option<JoinHandle<()>>,
}

/// Counters of a running proxy.
#[derive(Debug, Default)]
pub struct ProxyStats {
    /// Connections accepted.
    pub connections: AtomicU64,
    /// Connections refused at the limit or because the upstream did not answer.
    pub refused: AtomicU64,
    /// Bytes relayed client to upstream.
    pub bytes_up: AtomicU64,
    /// Bytes relayed upstream to client.
    pub bytes_down: AtomicU64,
}

impl ProxyHandle {
    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its counters.
    pub fn stats(&self) -> &ProxyStats {
        &self.stats
    }

    /// Stops accepting. Relayed connections finish when their ends close.
    pub fn shutdown(mut self) {
        self.stop_now();
    }

    /// Blocks until the proxy stops (never, unless stopped from another handle's drop).
    pub fn wait(mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }

    fn stop_now(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ProxyHandle {
    fn drop(&mut self) {
        self.stop_now();
    }
}

/// One direction's link, shared by every connection.
struct Link {
    free_at_ns: Mutex<u64>,
    ns_per_byte: f64,
    delay_ns: u64,
    epoch: Instant,
}

impl Link {
    /// When a chunk of `bytes` read now is due at the far side.
    fn schedule(&self, bytes: usize) -> u64 {
        let now = self.epoch.elapsed().as_nanos() as u64;
        let mut free = self.free_at_ns.lock().expect("link poisoned");
        let done = (*free).max(now) + (bytes as f64 * self.ns_per_byte) as u64;
        *free = done;
        done + self.delay_ns
    }
}

/// Largest chunk read at once.
const CHUNK_BYTES: usize = 64 << 10;

/// Starts the proxy and returns once it listens.
pub fn spawn(cfg: ProxyConfig) -> Result<ProxyHandle, NetError> {
    if let Some(b) = cfg.bandwidth {
        if !(b.bytes_per_s.is_finite() && b.bytes_per_s > 0.0) {
            return Err(NetError::Setting {
                key: "--bandwidth",
                message: "must be a positive rate such as 1Gbit or 100MB/s".into(),
            });
        }
    }
    if cfg.max_connections == 0 {
        return Err(NetError::Setting {
            key: "--max-connections",
            message: "must be at least 1".into(),
        });
    }
    let listener = TcpListener::bind(cfg.listen).map_err(|error| NetError::Bind {
        addr: cfg.listen,
        error,
    })?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let stop = Arc::new(AtomicBool::new(false));
    let stats = Arc::new(ProxyStats::default());
    let epoch = Instant::now();
    let ns_per_byte = cfg.bandwidth.map_or(0.0, |b| 1e9 / b.bytes_per_s);
    let link = || {
        Arc::new(Link {
            free_at_ns: Mutex::new(0),
            ns_per_byte,
            delay_ns: cfg.delay.as_nanos() as u64,
            epoch,
        })
    };
    let (up, down) = (link(), link());
    // Enough queue for the bandwidth-delay product plus 1 MiB, in chunks.
    let bdp_bytes = cfg.bandwidth.map_or(64 << 20, |b| {
        (b.bytes_per_s * cfg.delay.as_secs_f64()) as usize
    });
    let queue_chunks = (bdp_bytes + (1 << 20)).div_ceil(CHUNK_BYTES).max(16);
    let (st, stp) = (stats.clone(), stop.clone());
    let thread = std::thread::Builder::new()
        .name("foresight-proxy".into())
        .spawn(move || {
            let open = Arc::new(AtomicUsize::new(0));
            while !stp.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((client, _)) => {
                        if open.load(Ordering::SeqCst) >= cfg.max_connections {
                            st.refused.fetch_add(1, Ordering::Relaxed);
                            continue;
                        }
                        let Ok(server) = TcpStream::connect(&cfg.upstream) else {
                            st.refused.fetch_add(1, Ordering::Relaxed);
                            continue;
                        };
                        st.connections.fetch_add(1, Ordering::Relaxed);
                        let _ = client.set_nonblocking(false);
                        let _ = client.set_nodelay(true);
                        let _ = server.set_nodelay(true);
                        open.fetch_add(1, Ordering::SeqCst);
                        let _ = relay(client, server, &up, &down, queue_chunks, &st, &open);
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(2));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        })?;
    Ok(ProxyHandle {
        addr,
        stop,
        stats,
        thread: Some(thread),
    })
}

fn relay(
    client: TcpStream,
    server: TcpStream,
    up: &Arc<Link>,
    down: &Arc<Link>,
    queue_chunks: usize,
    stats: &Arc<ProxyStats>,
    open: &Arc<AtomicUsize>,
) -> io::Result<()> {
    // Two directions; the connection counts as closed when both writers have finished.
    let remaining = Arc::new(AtomicUsize::new(2));
    for (src, dst, link, up_dir) in [
        (client.try_clone()?, server.try_clone()?, up.clone(), true),
        (server, client, down.clone(), false),
    ] {
        let (tx, rx) = sync_channel::<Option<(u64, Vec<u8>)>>(queue_chunks);
        let (st, epoch) = (stats.clone(), link.epoch);
        std::thread::Builder::new()
            .name("proxy-read".into())
            .spawn(move || read_side(src, &link, &tx, &st, up_dir))?;
        let (open, remaining) = (open.clone(), remaining.clone());
        std::thread::Builder::new()
            .name("proxy-write".into())
            .spawn(move || {
                write_side(dst, &rx, epoch);
                if remaining.fetch_sub(1, Ordering::SeqCst) == 1 {
                    open.fetch_sub(1, Ordering::SeqCst);
                }
            })?;
    }
    Ok(())
}

fn read_side(
    mut src: TcpStream,
    link: &Link,
    tx: &SyncSender<Option<(u64, Vec<u8>)>>,
    stats: &ProxyStats,
    up_dir: bool,
) {
    let mut buf = vec![0u8; CHUNK_BYTES];
    loop {
        match src.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let due = link.schedule(n);
                let counter = if up_dir {
                    &stats.bytes_up
                } else {
                    &stats.bytes_down
                };
                counter.fetch_add(n as u64, Ordering::Relaxed);
                if tx.send(Some((due, buf[..n].to_vec()))).is_err() {
                    break;
                }
            }
        }
    }
    let _ = tx.send(None);
}

fn write_side(mut dst: TcpStream, rx: &Receiver<Option<(u64, Vec<u8>)>>, epoch: Instant) {
    while let Ok(Some((due, data))) = rx.recv() {
        let now = epoch.elapsed().as_nanos() as u64;
        if due > now {
            std::thread::sleep(Duration::from_nanos(due - now));
        }
        if dst.write_all(&data).is_err() {
            // The far side is gone: stop reading towards it too.
            let _ = dst.shutdown(Shutdown::Both);
            return;
        }
    }
    let _ = dst.shutdown(Shutdown::Write);
}
