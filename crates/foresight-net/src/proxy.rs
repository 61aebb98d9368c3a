//! `foresight proxy`: a TCP relay that adds one-way delay and caps bandwidth, for measuring the
//! client against long or slow paths on one machine.
//!
//! Each direction of the relay is a link with a rate and a propagation delay, shared by every
//! connection through the proxy (as one physical link would be). A chunk read from one side is
//! serialized onto the link after the chunks before it (`free_at = max(now, free_at) + bytes /
//! rate`) and written to the other side `delay` later. Per connection and direction, a reader
//! thread stamps chunks and a writer thread sleeps until each chunk is due; the queue between them
//! is bounded to the link's bandwidth-delay product (at most 256 MiB) plus 1 MiB, so a fast sender
//! is held back by TCP flow control rather than by the proxy's memory. A chunk that an end does
//! not take within the send timeout closes the connection both ways, so an end that stops reading
//! gives back its threads, queued bytes and slot instead of holding them. An end that closes its
//! side (a read reaching its end) has the other end's write side shut once everything it sent is
//! delivered, and the opposite direction goes on until it ends too: a server that half-closes and
//! still reads gets what its client sends afterwards, and so does a client waiting for an answer
//! after its own half-close. An end whose read or write fails otherwise (a reset, mostly) has the
//! other end reset in turn (`SO_LINGER` of zero, then the close), once what that end sent before
//! the failure is delivered: its peer sees an error, where a FIN would have made a response cut
//! short by an upstream's crash read as complete. A connection that carries no byte either way
//! for the idle timeout, with nothing queued, is closed both ways: a client that connects and then
//! neither sends nor closes (whether or not the upstream has closed its side) keeps its slot for
//! the idle timeout at most. Plain threads rather than an async runtime because their sleeps are
//! precise to tens of microseconds, which the shortest delays need.
//!
//! The accept thread only accepts: each connection resolves and connects to the upstream on a
//! thread of its own, with at most [`UPSTREAM_CONNECT_TIMEOUT`] per address, so an upstream slow
//! to answer holds back that connection alone, never the next ones or shutdown. A connection
//! counts against `max_connections` from the moment it is accepted, which also bounds the threads
//! waiting on the upstream.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
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
    /// How long either end may take to accept one chunk (64 KiB at most) before the connection
    /// is closed in both directions ([`DEFAULT_SEND_TIMEOUT`] for the command).
    pub send_timeout: Duration,
    /// How long a connection may carry no byte in either direction (with nothing queued) before
    /// it is closed both ways; at least [`MIN_IDLE_TIMEOUT`] ([`DEFAULT_IDLE_TIMEOUT`] for the
    /// command).
    pub idle_timeout: Duration,
}

/// The proxy's [`ProxyConfig::send_timeout`] unless told otherwise, the server's own default.
pub const DEFAULT_SEND_TIMEOUT: Duration = Duration::from_secs(30);

/// The proxy's [`ProxyConfig::idle_timeout`] unless told otherwise: twice the server's own idle
/// timeout, so that the upstream, which knows the protocol, ends idle connections first.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// The shortest idle timeout: shorter ones would cut a connection while its server thinks or its
/// client pauses between requests.
pub const MIN_IDLE_TIMEOUT: Duration = Duration::from_secs(1);

/// The most connections a proxy may be told to relay at once. Each takes four threads (a reader
/// and a writer per direction) and up to a bandwidth-delay product of queued bytes per direction,
/// so this many already asks for 40,000 threads: more than Linux's default `vm.max_map_count`
/// (65,530 mappings, two for each thread's stack and guard) lets one process start.
pub const MAX_CONNECTIONS: usize = 10_000;

/// Whether a proxy listening on `listen` and relaying to `upstream` would relay to itself: every
/// connection it accepted would open another to itself, until `max_connections` ran out (a
/// thousand connections and four thousand threads within seconds of one request). That is so
/// when the ports are the same and the upstream is the listening address itself, or the proxy
/// listens on a wildcard address (`0.0.0.0` for IPv4, `::` for both families) and the upstream
/// is a loopback or wildcard address or one of this machine's own ([`is_own_address`]).
pub fn relays_to_itself(listen: SocketAddr, upstream: SocketAddr) -> bool {
    if listen.port() != upstream.port() {
        return false;
    }
    let (from, to) = (listen.ip().to_canonical(), upstream.ip().to_canonical());
    // An IPv4 wildcard takes no IPv6 connection.
    let takes = !(from.is_ipv4() && to.is_ipv6());
    from == to
        || (from.is_unspecified()
            && takes
            && (to.is_loopback() || to.is_unspecified() || is_own_address(upstream)))
}

/// Whether `addr`'s IP address is one of this machine's own, those its wildcard listeners take
/// connections on: a socket can be bound to it (binding to a foreign address fails with
/// `AddrNotAvailable`). A system that lets sockets bind to any address (`ip_nonlocal_bind`) tells
/// nothing that way, and no address is taken for its own there.
pub fn is_own_address(addr: SocketAddr) -> bool {
    let sysctl = if addr.is_ipv4() {
        "/proc/sys/net/ipv4/ip_nonlocal_bind"
    } else {
        "/proc/sys/net/ipv6/ip_nonlocal_bind"
    };
    if std::fs::read_to_string(sysctl).is_ok_and(|v| v.trim() != "0") {
        return false;
    }
    let mut probe = addr;
    probe.set_port(0);
    // UDP: binding takes no port from a listener and sends nothing.
    std::net::UdpSocket::bind(probe).is_ok()
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
    /// Of those, the connections the upstream did not answer.
    pub upstream_failures: AtomicU64,
    /// Why the last of them failed, for the operator.
    pub upstream_error: std::sync::Mutex<Option<String>>,
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

    /// Its counters, to watch from another thread while [`ProxyHandle::wait`] blocks.
    pub fn shared_stats(&self) -> Arc<ProxyStats> {
        self.stats.clone()
    }

    /// Stops accepting. Relayed connections finish when their ends close; accepted ones still
    /// connecting to the upstream are relayed once connected (or closed after
    /// [`UPSTREAM_CONNECT_TIMEOUT`]).
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
        // Saturating: a clock that wrapped would send the chunk at once, uncapped.
        let done = (*free)
            .max(now)
            .saturating_add((bytes as f64 * self.ns_per_byte) as u64);
        *free = done;
        done.saturating_add(self.delay_ns)
    }
}

/// Largest chunk read at once.
const CHUNK_BYTES: usize = 64 << 10;

/// The most bytes of the bandwidth-delay product one direction of one connection queues. The
/// queue's slots are allocated when the connection opens; beyond this, a long delay at a high
/// rate holds the rate of one connection to this many bytes per delay.
const MAX_QUEUE_BYTES: usize = 256 << 20;

/// Chunks queued per direction of a connection: the bandwidth-delay product (64 MiB without a
/// rate cap, at most [`MAX_QUEUE_BYTES`]) plus 1 MiB, and at least 16.
fn queue_chunks(bandwidth: Option<Bandwidth>, delay: Duration) -> usize {
    let bdp_bytes = bandwidth.map_or(64 << 20, |b| {
        // A float beyond usize saturates, and is then capped.
        (b.bytes_per_s * delay.as_secs_f64()) as usize
    });
    (bdp_bytes.min(MAX_QUEUE_BYTES) + (1 << 20))
        .div_ceil(CHUNK_BYTES)
        .max(16)
}

/// How long a connection waits for each of the upstream's addresses to accept it before trying
/// the next (and, after the last, closing the client). A handshake across the world takes well
/// under a second, and the kernel resends a lost SYN after one, so ten seconds leaves room for a
/// far or loaded upstream while cutting short the two minutes of SYN retries an upstream that
/// drops them would cost.
pub const UPSTREAM_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Opens a connection to the upstream (`host:port`); the proxy calls it once per client.
type Connector = Arc<dyn Fn(&str) -> io::Result<TcpStream> + Send + Sync>;

/// Connects to the first of `upstream`'s addresses that answers within
/// [`UPSTREAM_CONNECT_TIMEOUT`].
fn connect_upstream(upstream: &str) -> io::Result<TcpStream> {
    let mut last = io::Error::new(
        io::ErrorKind::NotFound,
        format!("{upstream} resolves to no address"),
    );
    for addr in upstream.to_socket_addrs()? {
        match TcpStream::connect_timeout(&addr, UPSTREAM_CONNECT_TIMEOUT) {
            Ok(s) => return Ok(s),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// Starts the proxy and returns once it listens.
pub fn spawn(cfg: ProxyConfig) -> Result<ProxyHandle, NetError> {
    spawn_with(cfg, Arc::new(connect_upstream))
}

fn spawn_with(cfg: ProxyConfig, connect: Connector) -> Result<ProxyHandle, NetError> {
    if let Some(b) = cfg.bandwidth {
        // As the simulator's links (`foresight_device::LinkParams`): below a byte per second
        // one chunk's transfer time runs past the link's 64-bit nanosecond clock.
        if !(b.bytes_per_s.is_finite() && b.bytes_per_s >= 1.0) {
            return Err(NetError::Setting {
                key: "--bandwidth",
                message: "must be at least 1 byte/s (8bit), e.g. 1Gbit or 100MB/s".into(),
            });
        }
    }
    if cfg.send_timeout.is_zero() {
        return Err(NetError::Setting {
            key: "send_timeout",
            message: "must be longer than zero".into(),
        });
    }
    if cfg.idle_timeout < MIN_IDLE_TIMEOUT {
        return Err(NetError::Setting {
            key: "--idle-timeout",
            message: format!(
                "{} would cut connections whose client pauses between requests; give at least {}",
                crate::duration_text(cfg.idle_timeout),
                crate::duration_text(MIN_IDLE_TIMEOUT)
            ),
        });
    }
    if !(1..=MAX_CONNECTIONS).contains(&cfg.max_connections) {
        return Err(NetError::Setting {
            key: "--max-connections",
            message: format!(
                "must be 1..={MAX_CONNECTIONS} (each connection takes four threads), got {}",
                cfg.max_connections
            ),
        });
    }
    // The simulator's links refuse the same (`foresight_device::LinkParams`): a client's
    // timeouts would end every exchange before the delay did.
    if cfg.delay > Duration::from_secs(10) {
        return Err(NetError::Setting {
            key: "--delay",
            message: format!(
                "{:?} one way describes no network; give at most 10s, e.g. 25ms",
                cfg.delay
            ),
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
    let limits = Limits {
        queue_chunks: queue_chunks(cfg.bandwidth, cfg.delay),
        send_timeout: cfg.send_timeout,
        idle_timeout: cfg.idle_timeout,
    };
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
                        // The slot is taken before connecting upstream, so connections still
                        // connecting count against the limit (and bound the connecting threads).
                        open.fetch_add(1, Ordering::SeqCst);
                        let (up, down, st2, open2) =
                            (up.clone(), down.clone(), st.clone(), open.clone());
                        let (connect, upstream) = (connect.clone(), cfg.upstream.clone());
                        let spawned = std::thread::Builder::new()
                            .name("proxy-connect".into())
                            .spawn(move || {
                                let server = match connect(&upstream) {
                                    Ok(server) => server,
                                    Err(e) => {
                                        if let Ok(mut last) = st2.upstream_error.lock() {
                                            *last = Some(e.to_string());
                                        }
                                        st2.upstream_failures.fetch_add(1, Ordering::Relaxed);
                                        st2.refused.fetch_add(1, Ordering::Relaxed);
                                        open2.fetch_sub(1, Ordering::SeqCst);
                                        return;
                                    }
                                };
                                st2.connections.fetch_add(1, Ordering::Relaxed);
                                let _ = client.set_nonblocking(false);
                                let _ = client.set_nodelay(true);
                                let _ = server.set_nodelay(true);
                                let _ = relay(client, server, &up, &down, limits, &st2, &open2);
                            });
                        if spawned.is_err() {
                            // The client went with the closure: it is closed, unserved.
                            st.refused.fetch_add(1, Ordering::Relaxed);
                            open.fetch_sub(1, Ordering::SeqCst);
                        }
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

/// What bounds each direction of one connection.
#[derive(Clone, Copy, Debug)]
struct Limits {
    /// Chunks queued between the reader and the writer ([`queue_chunks`]).
    queue_chunks: usize,
    /// How long the writer's end may take to accept one chunk.
    send_timeout: Duration,
    /// How long a connection may carry nothing before it is closed.
    idle_timeout: Duration,
}

/// When a connection last carried a byte, and how many chunks it has queued: it is idle when
/// nothing is queued and nothing was read or written for the idle timeout.
struct Activity {
    /// Nanoseconds since the link's epoch.
    last_ns: AtomicU64,
    queued_chunks: AtomicUsize,
    epoch: Instant,
    /// Set when either end failed (a read or write error other than a timeout): from then on
    /// neither socket is shut for writing, whose FIN would read as a clean end, and both are
    /// reset as they close ([`abort`]).
    aborted: AtomicBool,
}

/// What a reader hands its writer.
enum Relayed {
    /// Bytes read, and when they are due at the other end (ns since the link's epoch).
    Chunk(u64, Vec<u8>),
    /// The end read from: it closed its side (or went idle), so the other end's write side is
    /// shut once everything before is delivered.
    End,
    /// The end read from failed (a reset, say): the other end is reset too once everything
    /// before is delivered, so that it learns the transfer failed instead of seeing an end.
    Failed,
}

/// Resets `s` when its last descriptor closes (`SO_LINGER` of zero: an RST rather than a FIN,
/// queued bytes dropped), and shuts it for reading, which wakes the reader of the opposite
/// direction (its read ends at once) without sending anything to the peer, so that every thread
/// lets go of its descriptors and the close happens now.
fn abort(s: &TcpStream) {
    let _ = socket2::SockRef::from(s).set_linger(Some(Duration::ZERO));
    let _ = s.shutdown(Shutdown::Read);
}

impl Activity {
    fn touch(&self) {
        self.last_ns
            .fetch_max(self.epoch.elapsed().as_nanos() as u64, Ordering::SeqCst);
    }

    fn idle_for(&self, timeout: Duration) -> bool {
        let now = self.epoch.elapsed().as_nanos() as u64;
        self.queued_chunks.load(Ordering::SeqCst) == 0
            && now.saturating_sub(self.last_ns.load(Ordering::SeqCst)) >= timeout.as_nanos() as u64
    }
}

/// How often a reader with nothing to read looks whether its connection has gone idle: a quarter
/// of the idle timeout, at most a second.
fn idle_check_every(idle_timeout: Duration) -> Duration {
    (idle_timeout / 4).clamp(Duration::from_millis(10), Duration::from_secs(1))
}

fn relay(
    client: TcpStream,
    server: TcpStream,
    up: &Arc<Link>,
    down: &Arc<Link>,
    limits: Limits,
    stats: &Arc<ProxyStats>,
    open: &Arc<AtomicUsize>,
) -> io::Result<()> {
    relay_spawning(
        client,
        server,
        [up, down],
        limits,
        stats,
        open,
        &|name, work| {
            std::thread::Builder::new()
                .name(name.into())
                .spawn(work)
                .map(drop)
        },
    )
}

/// Starts a thread running `work`, named `name`; a parameter so that tests can refuse one.
type Spawn<'a> = dyn Fn(&'static str, Box<dyn FnOnce() + Send>) -> io::Result<()> + 'a;

/// `relay`, starting its four threads through `spawn`. The connection's slot in `open` is given
/// back on every path: by each writer as it ends, and here for a direction whose writer never
/// started. Every socket clone is taken before any thread starts, so running out of descriptors
/// leaves nothing running; when a thread cannot start, both sockets are shut, so the threads
/// that did start end at once instead of waiting out the idle timeout.
fn relay_spawning(
    client: TcpStream,
    server: TcpStream,
    [up, down]: [&Arc<Link>; 2],
    limits: Limits,
    stats: &Arc<ProxyStats>,
    open: &Arc<AtomicUsize>,
    spawn: &Spawn<'_>,
) -> io::Result<()> {
    // Two directions; the connection counts as closed when both have finished.
    let remaining = Arc::new(AtomicUsize::new(2));
    let finish = {
        let (open, remaining) = (open.clone(), remaining.clone());
        move || {
            if remaining.fetch_sub(1, Ordering::SeqCst) == 1 {
                open.fetch_sub(1, Ordering::SeqCst);
            }
        }
    };
    let clones = (|| {
        Ok::<_, io::Error>((
            [
                client.try_clone()?,
                client.try_clone()?,
                client.try_clone()?,
            ],
            [
                server.try_clone()?,
                server.try_clone()?,
                server.try_clone()?,
            ],
        ))
    })();
    let ([client_up, client_feed, client_ctl], [server_up, server_feed, server_ctl]) = match clones
    {
        Ok(clones) => clones,
        Err(e) => {
            let _ = client.shutdown(Shutdown::Both);
            let _ = server.shutdown(Shutdown::Both);
            finish();
            finish();
            return Err(e);
        }
    };
    let activity = Arc::new(Activity {
        last_ns: AtomicU64::new(0),
        queued_chunks: AtomicUsize::new(0),
        epoch: up.epoch,
        aborted: AtomicBool::new(false),
    });
    activity.touch();
    let mut writers_started = 0;
    let start_threads = || -> io::Result<()> {
        for (src, dst, feeder, link, up_dir) in [
            (client_up, server_up, client_feed, up.clone(), true),
            (server, client, server_feed, down.clone(), false),
        ] {
            let (tx, rx) = sync_channel::<Relayed>(limits.queue_chunks);
            let (st, epoch, act) = (stats.clone(), link.epoch, activity.clone());
            spawn(
                "proxy-read",
                Box::new(move || {
                    read_side(src, &link, &tx, &st, up_dir, &act, limits.idle_timeout)
                }),
            )?;
            let (act, finish) = (activity.clone(), finish.clone());
            // The writer closes the side it relays from too (`feeder`) when its own end stops
            // taking chunks: that side's reader may be waiting in `read` with chunks still
            // counted as queued, and would otherwise hold its thread and socket for as long as
            // that end keeps quiet.
            spawn(
                "proxy-write",
                Box::new(move || {
                    // One end's close shuts only the other's write side: that end may still send
                    // (a server answering after its client's half-close, a client sending after
                    // its server's), and the idle timeout ends a connection where it never does.
                    write_side(dst, &feeder, &rx, epoch, limits.send_timeout, &act);
                    finish();
                }),
            )?;
            writers_started += 1;
        }
        Ok(())
    };
    let result = start_threads();
    if result.is_err() {
        let _ = client_ctl.shutdown(Shutdown::Both);
        let _ = server_ctl.shutdown(Shutdown::Both);
        for _ in writers_started..2 {
            finish();
        }
    }
    result
}

fn read_side(
    mut src: TcpStream,
    link: &Link,
    tx: &SyncSender<Relayed>,
    stats: &ProxyStats,
    up_dir: bool,
    activity: &Activity,
    idle_timeout: Duration,
) {
    let mut buf = vec![0u8; CHUNK_BYTES];
    if src
        .set_read_timeout(Some(idle_check_every(idle_timeout)))
        .is_err()
    {
        let _ = tx.send(Relayed::End);
        return;
    }
    loop {
        match src.read(&mut buf) {
            Ok(0) => break,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) =>
            {
                if activity.aborted.load(Ordering::SeqCst) {
                    // The other end failed; its writer shut this side for reading, which ends
                    // the read at once, and this is only the fallback.
                    break;
                }
                if activity.idle_for(idle_timeout) {
                    // The other direction's reader sees the same and closes its end too.
                    let _ = src.shutdown(Shutdown::Both);
                    break;
                }
            }
            Err(_) => {
                // A reset (or any failure but the end): this side is reset as it closes, and
                // the writer resets the other once what came before is delivered. A shut write
                // side there would read as the sender's clean end, a truncated answer as whole.
                activity.aborted.store(true, Ordering::SeqCst);
                let _ = socket2::SockRef::from(&src).set_linger(Some(Duration::ZERO));
                let _ = tx.send(Relayed::Failed);
                return;
            }
            Ok(n) => {
                activity.touch();
                activity.queued_chunks.fetch_add(1, Ordering::SeqCst);
                let due = link.schedule(n);
                let counter = if up_dir {
                    &stats.bytes_up
                } else {
                    &stats.bytes_down
                };
                counter.fetch_add(n as u64, Ordering::Relaxed);
                if tx.send(Relayed::Chunk(due, buf[..n].to_vec())).is_err() {
                    activity.queued_chunks.fetch_sub(1, Ordering::SeqCst);
                    break;
                }
            }
        }
    }
    let _ = tx.send(Relayed::End);
}

fn write_side(
    mut dst: TcpStream,
    feeder: &TcpStream,
    rx: &Receiver<Relayed>,
    epoch: Instant,
    send_timeout: Duration,
    activity: &Activity,
) {
    loop {
        let (due, data) = match rx.recv() {
            Ok(Relayed::Chunk(due, data)) => (due, data),
            Ok(Relayed::Failed) => {
                abort(&dst);
                return;
            }
            Ok(Relayed::End) | Err(_) => break,
        };
        let now = epoch.elapsed().as_nanos() as u64;
        if due > now {
            std::thread::sleep(Duration::from_nanos(due - now));
        }
        let written = write_within(&mut dst, &data, send_timeout);
        activity.touch();
        activity.queued_chunks.fetch_sub(1, Ordering::SeqCst);
        match written {
            Ok(()) => {}
            Err(e)
                if e.kind() == io::ErrorKind::TimedOut
                    && !activity.aborted.load(Ordering::SeqCst) =>
            {
                // The far side has stopped reading: stop reading towards it too, which ends the
                // other direction and gives back the connection's slot, and close the side these
                // chunks came from, whose reader would otherwise wait on it.
                let _ = dst.shutdown(Shutdown::Both);
                let _ = feeder.shutdown(Shutdown::Both);
                return;
            }
            Err(_) => {
                // The far side is gone (reset, or failed): the side these chunks came from is
                // reset too rather than closed, so it does not take what it sent for delivered.
                activity.aborted.store(true, Ordering::SeqCst);
                abort(&dst);
                abort(feeder);
                return;
            }
        }
    }
    // After a failure of the other end, a FIN here would make this end's peer take what it got
    // for the whole; that end is being reset instead.
    if !activity.aborted.load(Ordering::SeqCst) {
        let _ = dst.shutdown(Shutdown::Write);
    }
}

/// Writes all of `data` within `timeout`, or fails. A socket's own write timeout bounds each
/// `write` call, not the chunk: the kernel goes on taking a few bytes into its send buffer now and
/// then although the peer reads nothing, and each such partial write starts the timeout again, so
/// a peer that stopped reading kept a writer for minutes rather than the timeout.
fn write_within(dst: &mut TcpStream, mut data: &[u8], timeout: Duration) -> io::Result<()> {
    let deadline = Instant::now() + timeout;
    let timed_out = || {
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!("the peer took no chunk for {timeout:?}"),
        )
    };
    while !data.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(timed_out());
        }
        dst.set_write_timeout(Some(left))?;
        match dst.write(data) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => data = &data[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // The socket's write timeout expiring with nothing taken reads as `EAGAIN`: the
            // peer stopped reading, which the caller closes gracefully, unlike a reset.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(timed_out())
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// One of this machine's addresses other than loopback: the source address of the route to a
    /// documentation address (no packet is sent). `None` on a machine with no such route.
    fn own_address_beyond_loopback() -> Option<std::net::IpAddr> {
        let probe = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
        probe.connect("198.51.100.1:9").ok()?;
        Some(probe.local_addr().ok()?.ip()).filter(|ip| !ip.is_loopback())
    }

    /// A proxy on a wildcard address relaying to one of this machine's own addresses at its own
    /// port relays to itself: only loopback and wildcard upstreams were taken for it, and one
    /// `curl` through `--listen 0.0.0.0:P --upstream <eth0's address>:P` made some 2,000
    /// threads in 2.5 s. Another port, or a proxy listening on loopback alone, is no loop.
    #[test]
    fn a_proxy_relaying_to_its_own_port_on_any_of_its_addresses_loops() {
        let at = |ip: &str, port: u16| SocketAddr::new(ip.parse().unwrap(), port);
        let any = at("0.0.0.0", 8080);
        for upstream in ["127.0.0.1", "127.0.0.2", "0.0.0.0", "::ffff:127.0.0.1"] {
            assert!(relays_to_itself(any, at(upstream, 8080)), "{upstream}");
            assert!(!relays_to_itself(any, at(upstream, 8081)), "{upstream}");
        }
        assert!(relays_to_itself(at("::", 8080), at("::1", 8080)));
        assert!(relays_to_itself(at("::", 8080), at("127.0.0.1", 8080)));
        assert!(!relays_to_itself(any, at("::1", 8080)));
        assert!(relays_to_itself(
            at("127.0.0.1", 8080),
            at("127.0.0.1", 8080)
        ));
        assert!(!relays_to_itself(
            at("127.0.0.1", 8080),
            at("127.0.0.3", 8080)
        ));
        // TEST-NET-3, which no machine running these tests holds.
        assert!(!is_own_address(at("203.0.113.77", 0)));
        let Some(own) = own_address_beyond_loopback() else {
            eprintln!("note: no address beyond loopback here; its case is skipped");
            return;
        };
        assert!(is_own_address(SocketAddr::new(own, 0)), "{own}");
        assert!(relays_to_itself(any, SocketAddr::new(own, 8080)), "{own}");
        assert!(relays_to_itself(at("::", 8080), SocketAddr::new(own, 8080)));
        assert!(!relays_to_itself(any, SocketAddr::new(own, 8081)));
        assert!(!relays_to_itself(
            at("127.0.0.1", 8080),
            SocketAddr::new(own, 8080)
        ));
    }

    use super::*;
    use std::sync::mpsc::channel;

    /// An upstream that echoes what it receives, on its own threads.
    fn echo_upstream() -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            for s in l.incoming().flatten() {
                std::thread::spawn(move || {
                    let mut r = s.try_clone().unwrap();
                    let mut w = s;
                    let _ = io::copy(&mut r, &mut w);
                });
            }
        });
        addr
    }

    /// The queue between a direction's reader and writer is allocated whole when a connection
    /// opens, so it must stay small whatever the delay and rate: 10 Gbit/s for 100,000 s asked
    /// for 76 GB and aborted the proxy at its first connection.
    #[test]
    fn the_queue_stays_bounded_for_any_delay_and_rate() {
        let rate = Some(Bandwidth::from_bytes_per_s(1.25e9));
        let long = queue_chunks(rate, Duration::from_secs(100_000));
        assert!(
            long * CHUNK_BYTES <= MAX_QUEUE_BYTES + (1 << 20),
            "{long} chunks"
        );
        // A short path still gets its bandwidth-delay product and a MiB.
        let short = queue_chunks(rate, Duration::from_millis(10));
        assert_eq!(short, (12_500_000usize + (1 << 20)).div_ceil(CHUNK_BYTES));
        assert_eq!(queue_chunks(None, Duration::from_secs(1)), 1040);
    }

    /// A rate below a byte per second is refused when the proxy starts, by its flag; such a rate
    /// made a chunk's transfer time overflow the link's clock (a panic in the relay thread, or,
    /// wrapped, no rate cap at all).
    #[test]
    fn a_rate_below_one_byte_per_second_is_refused_and_the_clock_saturates() {
        for bytes_per_s in [0.5, 1e-12, 0.0, f64::NAN] {
            let e = spawn_with(
                ProxyConfig {
                    listen: "127.0.0.1:0".parse().unwrap(),
                    upstream: "127.0.0.1:9".into(),
                    delay: Duration::ZERO,
                    bandwidth: Some(Bandwidth::from_bytes_per_s(bytes_per_s)),
                    max_connections: 1,
                    send_timeout: DEFAULT_SEND_TIMEOUT,
                    idle_timeout: DEFAULT_IDLE_TIMEOUT,
                },
                Arc::new(connect_upstream),
            )
            .err()
            .unwrap_or_else(|| panic!("{bytes_per_s} bytes/s accepted"));
            let shown = e.to_string();
            assert!(
                shown.contains("--bandwidth") && shown.contains("1 byte/s"),
                "{shown}"
            );
        }
        let slow = Link {
            free_at_ns: Mutex::new(0),
            ns_per_byte: 1e21,
            delay_ns: 5,
            epoch: Instant::now(),
        };
        assert_eq!(slow.schedule(CHUNK_BYTES), u64::MAX);
        assert_eq!(slow.schedule(CHUNK_BYTES), u64::MAX);
    }

    /// An upstream slow to accept one connection must hold back that connection only: others are
    /// relayed meanwhile, and the proxy stops when asked. The first connect here blocks until the
    /// test lets it go, so the check does not depend on timing.
    #[test]
    fn a_slow_upstream_connect_holds_back_only_its_own_connection() {
        let upstream = echo_upstream();
        let (release_tx, release_rx) = channel::<()>();
        let release_rx = Mutex::new(release_rx);
        let calls = Arc::new(AtomicUsize::new(0));
        let seen = calls.clone();
        let connect: Connector = Arc::new(move |to: &str| {
            if seen.fetch_add(1, Ordering::SeqCst) == 0 {
                let _ = release_rx.lock().unwrap().recv();
            }
            TcpStream::connect(to)
        });
        let p = spawn_with(
            ProxyConfig {
                listen: "127.0.0.1:0".parse().unwrap(),
                upstream: upstream.to_string(),
                delay: Duration::ZERO,
                bandwidth: None,
                max_connections: 16,
                send_timeout: DEFAULT_SEND_TIMEOUT,
                idle_timeout: DEFAULT_IDLE_TIMEOUT,
            },
            connect,
        )
        .unwrap();
        let _stuck = TcpStream::connect(p.local_addr()).unwrap();
        // Wait until the proxy is connecting the first client to the upstream.
        let deadline = Instant::now() + Duration::from_secs(10);
        while calls.load(Ordering::SeqCst) == 0 {
            assert!(
                Instant::now() < deadline,
                "the proxy never connected upstream"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        let mut second = TcpStream::connect(p.local_addr()).unwrap();
        second
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        second.write_all(b"ping").unwrap();
        let mut got = [0u8; 4];
        let answered = second.read_exact(&mut got).is_ok();
        // Stopping must not wait for the stuck connect either; it is let go only afterwards.
        let (stopped_tx, stopped_rx) = channel();
        std::thread::spawn(move || {
            p.shutdown();
            let _ = stopped_tx.send(());
        });
        let stopped = stopped_rx.recv_timeout(Duration::from_secs(10)).is_ok();
        let _ = release_tx.send(());
        assert!(
            answered,
            "the second connection waited for the first one's upstream"
        );
        assert_eq!(&got, b"ping");
        assert!(stopped, "shutdown waited for a connect to the upstream");
    }

    /// Two ends of one loopback TCP connection.
    fn tcp_pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let near = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (far, _) = l.accept().unwrap();
        (near, far)
    }

    /// A link with no delay and no bandwidth cap.
    fn instant_link() -> Arc<Link> {
        Arc::new(Link {
            free_at_ns: Mutex::new(0),
            ns_per_byte: 0.0,
            delay_ns: 0,
            epoch: Instant::now(),
        })
    }

    /// A thread of the four a connection needs that cannot start (the process is out of threads
    /// or memory) gives the connection's slot back and shuts both sockets, whichever of the four
    /// it is. Before, the slot stayed taken for good: the writers that count it down never
    /// started, and enough such failures would have refused every later client.
    #[test]
    fn a_relay_thread_that_cannot_start_gives_the_slot_back_and_shuts_both_sockets() {
        let limits = Limits {
            queue_chunks: 4,
            send_timeout: DEFAULT_SEND_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
        };
        for refused in 0..4 {
            let (mut client_peer, client) = tcp_pair();
            let (server, mut server_peer) = tcp_pair();
            let open = Arc::new(AtomicUsize::new(1));
            let calls = AtomicUsize::new(0);
            let spawn = |name: &'static str, work: Box<dyn FnOnce() + Send>| {
                if calls.fetch_add(1, Ordering::SeqCst) == refused {
                    return Err(io::Error::other("refused by the test"));
                }
                std::thread::Builder::new()
                    .name(name.into())
                    .spawn(work)
                    .map(drop)
            };
            let (up, down) = (instant_link(), instant_link());
            let result = relay_spawning(
                client,
                server,
                [&up, &down],
                limits,
                &Arc::new(ProxyStats::default()),
                &open,
                &spawn,
            );
            assert!(result.is_err(), "thread {refused} refused, yet Ok");
            let deadline = Instant::now() + Duration::from_secs(20);
            while open.load(Ordering::SeqCst) != 0 {
                assert!(
                    Instant::now() < deadline,
                    "thread {refused} refused: the slot was kept"
                );
                std::thread::sleep(Duration::from_millis(10));
            }
            // The 20 s only tell a socket shut from one left open for good.
            for peer in [&mut client_peer, &mut server_peer] {
                peer.set_read_timeout(Some(Duration::from_secs(20)))
                    .unwrap();
                let mut buf = [0u8; 1];
                assert!(
                    matches!(peer.read(&mut buf), Ok(0) | Err(_)),
                    "thread {refused} refused: a socket was left open"
                );
            }
        }
    }

    /// A client that stops reading closes the connection both ways once a chunk waits for it past
    /// the send timeout: the upstream's side too, not only its write half. The upstream here sent
    /// its answer and then neither sends nor closes; the chunks left queued for the client were
    /// still counted, so the reader of the upstream never found the connection idle and held its
    /// thread and socket for as long as the upstream kept quiet. The 20 s bounds only tell a
    /// socket shut from one kept for good.
    #[test]
    fn a_client_that_stops_reading_closes_the_upstreams_side_both_ways() {
        // The client never reads; the upstream sends more than the client's socket buffers hold
        // and less than the proxy's queue, then keeps its socket open without a word.
        let (client_peer, client) = tcp_pair();
        let (server, mut server_peer) = tcp_pair();
        let server_probe = server.try_clone().unwrap();
        let sent = std::thread::spawn(move || {
            let _ = server_peer.write_all(&vec![7u8; 32 << 20]);
            server_peer
        });
        relay_until_the_slot_is_freed(client, server);
        let _server_peer = sent.join().unwrap();
        // Shut for reading, the proxy's socket to the upstream reads as ended once the bytes the
        // relay had not read yet are taken (under load the send timeout can fire before the relay
        // drained the upstream); open, a read waits for bytes that do not come.
        server_probe
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut buf = vec![0u8; 1 << 20];
        let mut unread_bytes = 0usize;
        let end = loop {
            match (&server_probe).read(&mut buf) {
                Ok(0) => break Ok(()),
                Ok(n) => unread_bytes += n,
                Err(e) => break Err(e),
            }
        };
        assert!(
            end.is_ok() && unread_bytes <= 32 << 20,
            "the upstream's side of the connection was left open ({end:?} after {unread_bytes} \
             bytes the relay had not read)"
        );
        drop(client_peer);
    }

    /// Relays `client` and `server` with a 200 ms send timeout and a queue that holds 32 MiB,
    /// and waits (20 s at most, which only tells an end from a hang) until the connection has
    /// given its slot back.
    fn relay_until_the_slot_is_freed(client: TcpStream, server: TcpStream) {
        let limits = Limits {
            queue_chunks: queue_chunks(None, Duration::ZERO),
            send_timeout: Duration::from_millis(200),
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
        };
        assert!(limits.queue_chunks * CHUNK_BYTES > 32 << 20);
        let open = Arc::new(AtomicUsize::new(1));
        relay(
            client,
            server,
            &instant_link(),
            &instant_link(),
            limits,
            &Arc::new(ProxyStats::default()),
            &open,
        )
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while open.load(Ordering::SeqCst) != 0 {
            assert!(
                Instant::now() < deadline,
                "the stalled client kept its slot"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The send timeout closes both ends, it does not reset them: nothing failed, one end only
    /// stopped reading, so the upstream reads a clean end and the client, when it reads again,
    /// gets what was handed to its socket and then the end. A write that finds the socket's
    /// buffer full and stays blocked for the whole timeout ends with `WouldBlock` (`EAGAIN`),
    /// which the writer took for a reset and answered with `SO_LINGER` 0 on both ends; the
    /// client's socket buffer is filled before the relay starts so that the first write does.
    /// The 20 s bounds only tell an end from a hang.
    #[test]
    fn the_send_timeout_closes_both_ends_without_resetting_them() {
        let (mut client_peer, client) = tcp_pair();
        client.set_nonblocking(true).unwrap();
        let mut prefilled = 0usize;
        loop {
            match (&client).write(&[1u8; 1 << 16]) {
                Ok(n) => prefilled += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("filling the client's socket: {e}"),
            }
        }
        client.set_nonblocking(false).unwrap();
        let (server, mut server_peer) = tcp_pair();
        let mut server_reader = server_peer.try_clone().unwrap();
        let sent = std::thread::spawn(move || {
            let _ = server_peer.write_all(&vec![7u8; 32 << 20]);
            server_peer
        });
        relay_until_the_slot_is_freed(client, server);
        let _server_peer = sent.join().unwrap();
        server_reader
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut buf = [0u8; 1];
        let upstream_saw = server_reader.read(&mut buf);
        assert!(
            matches!(upstream_saw, Ok(0)),
            "the upstream saw {upstream_saw:?}, not a clean end"
        );
        client_peer
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut got = Vec::new();
        let client_saw = client_peer.read_to_end(&mut got);
        assert!(
            client_saw.is_ok() && got.len() >= prefilled,
            "the client saw {client_saw:?} after {} bytes of {prefilled} prefilled, not a clean end",
            got.len()
        );
    }

    /// A client that connects and then neither sends nor closes, to an upstream that keeps the
    /// connection open too, is closed once the connection has carried nothing for the idle
    /// timeout, and its slot (the only one) is given back. The 20 s bounds only tell a slot given
    /// back from one kept for good.
    #[test]
    fn idle_connections_are_closed_after_the_idle_timeout() {
        let upstream = echo_upstream();
        let p = spawn_with(
            ProxyConfig {
                listen: "127.0.0.1:0".parse().unwrap(),
                upstream: upstream.to_string(),
                delay: Duration::ZERO,
                bandwidth: None,
                max_connections: 1,
                send_timeout: DEFAULT_SEND_TIMEOUT,
                idle_timeout: MIN_IDLE_TIMEOUT,
            },
            Arc::new(connect_upstream),
        )
        .unwrap();
        let mut idle = TcpStream::connect(p.local_addr()).unwrap();
        idle.set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut buf = [0u8; 16];
        assert!(
            matches!(idle.read(&mut buf), Ok(0) | Err(_)),
            "the idle client was not closed"
        );
        // Its slot is free: a new client is relayed (refused at the limit, it would be closed
        // unanswered, so it is tried until the proxy has seen the first one go).
        let deadline = Instant::now() + Duration::from_secs(20);
        let relayed = loop {
            assert!(
                Instant::now() < deadline,
                "the idle client's slot was never given back"
            );
            let mut c = TcpStream::connect(p.local_addr()).unwrap();
            c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
            let mut got = [0u8; 4];
            if c.write_all(b"pong").is_ok() && c.read_exact(&mut got).is_ok() {
                break got;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        assert_eq!(&relayed, b"pong");
        let e = spawn_with(
            ProxyConfig {
                idle_timeout: Duration::from_millis(999),
                ..ProxyConfig {
                    listen: "127.0.0.1:0".parse().unwrap(),
                    upstream: upstream.to_string(),
                    delay: Duration::ZERO,
                    bandwidth: None,
                    max_connections: 2,
                    send_timeout: DEFAULT_SEND_TIMEOUT,
                    idle_timeout: MIN_IDLE_TIMEOUT,
                }
            },
            Arc::new(connect_upstream),
        )
        .expect_err("a sub-second idle timeout was accepted");
        assert!(e.to_string().contains("--idle-timeout"), "{e}");
    }

    /// A proxy to `upstream`, with the command's timeouts.
    fn proxy_to(upstream: SocketAddr) -> ProxyHandle {
        spawn_with(
            ProxyConfig {
                listen: "127.0.0.1:0".parse().unwrap(),
                upstream: upstream.to_string(),
                delay: Duration::ZERO,
                bandwidth: None,
                max_connections: 4,
                send_timeout: DEFAULT_SEND_TIMEOUT,
                idle_timeout: DEFAULT_IDLE_TIMEOUT,
            },
            Arc::new(connect_upstream),
        )
        .unwrap()
    }

    /// Everything `s` sends until it shuts its write side (20 s at most, a safety net only).
    fn read_to_end(s: &mut TcpStream) -> Vec<u8> {
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut got = Vec::new();
        s.read_to_end(&mut got)
            .expect("the peer never shut its side");
        got
    }

    /// A half-close crosses the proxy either way and leaves the other direction open: an upstream
    /// that sends, shuts its write side and then reads still gets what the client sends after
    /// seeing that end, and a client that half-closes still gets the upstream's answer. Before,
    /// the upstream's end closed the client's socket both ways, so what the client sent next
    /// never reached the upstream.
    #[test]
    fn a_half_close_either_way_leaves_the_other_direction_open() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let upstream = l.local_addr().unwrap();
        let (heard_tx, heard) = channel();
        std::thread::spawn(move || {
            // The first connection: the server speaks first and half-closes, then listens.
            let (mut s, _) = l.accept().unwrap();
            s.write_all(b"hello").unwrap();
            s.shutdown(Shutdown::Write).unwrap();
            heard_tx.send(read_to_end(&mut s)).unwrap();
            // The second: the client speaks and half-closes, then the server answers.
            let (mut s, _) = l.accept().unwrap();
            let asked = read_to_end(&mut s);
            s.write_all(&[b"answer to ", &asked[..]].concat()).unwrap();
        });
        let p = proxy_to(upstream);

        let mut c = TcpStream::connect(p.local_addr()).unwrap();
        assert_eq!(read_to_end(&mut c), b"hello");
        c.write_all(b"sent after the server's end").unwrap();
        c.shutdown(Shutdown::Write).unwrap();
        let heard = heard
            .recv_timeout(Duration::from_secs(20))
            .expect("the upstream never saw the client's end");
        assert_eq!(
            String::from_utf8_lossy(&heard),
            "sent after the server's end"
        );

        let mut c = TcpStream::connect(p.local_addr()).unwrap();
        c.write_all(b"a question").unwrap();
        c.shutdown(Shutdown::Write).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&read_to_end(&mut c)),
            "answer to a question"
        );
        p.shutdown();
    }

    /// An upstream that resets its connection mid-answer (linger 0, then close): the proxy
    /// resets the client's connection too, so the client's read ends in an error, not in the
    /// clean end of stream that would pass a truncated answer for a whole one. Before, the reset
    /// was relayed as a half-close and the client read the end of the stream. The reverse: a
    /// client that resets makes the upstream's read fail as well.
    #[test]
    fn a_reset_at_either_end_resets_the_other() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let upstream = l.local_addr().unwrap();
        let (heard_tx, heard) = channel();
        std::thread::spawn(move || {
            // The first connection: a request, part of an answer, then a reset.
            let (mut s, _) = l.accept().unwrap();
            let mut asked = [0u8; 4];
            s.read_exact(&mut asked).unwrap();
            s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\npart")
                .unwrap();
            socket2::SockRef::from(&s)
                .set_linger(Some(Duration::ZERO))
                .unwrap();
            drop(s);
            // The second: the client resets; what does the upstream's read see?
            let (mut s, _) = l.accept().unwrap();
            s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
            let mut got = Vec::new();
            heard_tx.send(s.read_to_end(&mut got).map(|_| got)).unwrap();
        });
        let p = proxy_to(upstream);

        let mut c = TcpStream::connect(p.local_addr()).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        c.write_all(b"GET ").unwrap();
        let mut got = Vec::new();
        let end = c.read_to_end(&mut got);
        assert!(
            String::from_utf8_lossy(&got).starts_with("HTTP/1.1 200 OK"),
            "{got:?}"
        );
        let e = end.expect_err("the upstream's reset reached the client as a clean end");
        assert_eq!(e.kind(), io::ErrorKind::ConnectionReset, "{e}");

        let c = TcpStream::connect(p.local_addr()).unwrap();
        (&c).write_all(b"half a request").unwrap();
        socket2::SockRef::from(&c)
            .set_linger(Some(Duration::ZERO))
            .unwrap();
        drop(c);
        let heard = heard
            .recv_timeout(Duration::from_secs(20))
            .expect("the upstream's read never ended");
        let e = heard.expect_err("the client's reset reached the upstream as a clean end");
        assert_eq!(e.kind(), io::ErrorKind::ConnectionReset, "{e}");
        p.shutdown();
    }
}
