//! `foresight serve`, `get` and `proxy` end to end through the binary: bad arguments exit 2 with a
//! message naming the argument, a download through the real processes is byte-identical, and
//! SIGTERM stops the server cleanly.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

mod common;
use common::unprivileged;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_foresight"))
}

/// Runs the binary with `args`, which must be refused as bad input: exit code 2, no panic.
/// Returns its standard error, for the caller to check what the refusal says.
fn refused<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(args: &[S]) -> String {
    exits_with(2, args)
}

/// Runs the binary with `args`, which must fail with exit code 1 (a fault that is not bad input:
/// a refusal by the server, a connection that fails) and no panic; returns its standard error.
fn failed<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(args: &[S]) -> String {
    exits_with(1, args)
}

/// Runs the binary with `args`, which must exit with `code` and not panic; returns its standard
/// error.
fn exits_with<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(code: i32, args: &[S]) -> String {
    let out = bin().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    err
}

#[test]
fn bad_network_arguments_exit_2_and_name_the_argument() {
    for (args, needle) in [
        (
            vec!["get", "--alpha", "0", "http://127.0.0.1:1/x"],
            "--alpha",
        ),
        (vec!["get", "ftp://x/y"], "http://"),
        // A broken escape was sent as it was, and the server's 400 came after the start.
        (vec!["get", "http://127.0.0.1:1/100%.txt"], "%25"),
        // A value with a leading minus reaches the unit parser, which names the sign, instead of
        // being taken for an unknown flag.
        (
            vec![
                "proxy",
                "--listen",
                "127.0.0.1:0",
                "--upstream",
                "127.0.0.1:8080",
                "--delay",
                "-1ms",
            ],
            "--delay",
        ),
        (
            vec!["get", "http://127.0.0.1:1/x", "--request-timeout", "-5s"],
            "must not be negative",
        ),
        // Random reads are measured, not saved: the file would stay untouched and the command
        // exit 0.
        (
            vec![
                "get",
                "http://127.0.0.1:1/x",
                "--random",
                "4KiB",
                "--out",
                "/nonexistent-foresight-out/x",
            ],
            "--out",
        ),
        (
            vec!["get", "http://127.0.0.1:1/x", "--readahead", "1KiB"],
            "--readahead",
        ),
        (
            vec!["serve", "--root", "/nonexistent-foresight-root"],
            "--root",
        ),
        // A root that is not there was called "not a directory", which sent the user to look at
        // what kind of file it was.
        (
            vec!["serve", "--root", "/nonexistent-foresight-root"],
            "/nonexistent-foresight-root does not exist",
        ),
        (vec!["serve", "--root", ".", "--workers", "0"], "--workers"),
        // Beyond any machine's memory: the buffers would be taken until the process is killed.
        (
            vec![
                "serve",
                "--root",
                ".",
                "--addr",
                "127.0.0.1:0",
                "--memory",
                "100TiB",
            ],
            "--memory",
        ),
        // A request head of 100 GB per connection was accepted.
        (
            vec![
                "serve",
                "--root",
                ".",
                "--addr",
                "127.0.0.1:0",
                "--max-header-bytes",
                "100000000000",
            ],
            "--max-header-bytes",
        ),
        // 10^11 connections of four threads each was accepted.
        (
            vec![
                "proxy",
                "--listen",
                "127.0.0.1:0",
                "--upstream",
                "127.0.0.1:8080",
                "--max-connections",
                "100000000000",
            ],
            "--max-connections",
        ),
        // Above what the connection semaphore can count; it used to panic once serving.
        (
            vec![
                "serve",
                "--root",
                ".",
                "--addr",
                "127.0.0.1:0",
                "--max-connections",
                "2305843009213693952",
            ],
            "--max-connections",
        ),
        // The engine reads a readahead window in one request of at most 64 MiB, whole pages,
        // and needs a budget of four of them.
        (
            vec![
                "serve",
                "--root",
                ".",
                "--addr",
                "127.0.0.1:0",
                "--readahead",
                "128MiB",
            ],
            "--readahead",
        ),
        (
            vec![
                "serve",
                "--root",
                ".",
                "--addr",
                "127.0.0.1:0",
                "--readahead",
                "5000",
            ],
            "--readahead",
        ),
        (
            vec![
                "serve",
                "--root",
                ".",
                "--addr",
                "127.0.0.1:0",
                "--memory",
                "1MiB",
            ],
            "--memory",
        ),
        (
            vec![
                "proxy",
                "--listen",
                "127.0.0.1:0",
                "--upstream",
                "x:1",
                "--bandwidth",
                "fast",
            ],
            "--bandwidth",
        ),
        (
            vec!["proxy", "--listen", "127.0.0.1:0", "--upstream", "nope"],
            "--upstream",
        ),
        // Zero random reads measured nothing and still exited 0.
        (
            vec![
                "get",
                "http://127.0.0.1:1/x",
                "--random",
                "4KiB",
                "--reads",
                "0",
            ],
            "--reads",
        ),
        // A fixed alpha is not capped: --max-alpha would be ignored.
        (
            vec![
                "get",
                "http://127.0.0.1:1/x",
                "--alpha",
                "4",
                "--max-alpha",
                "8",
            ],
            "--max-alpha",
        ),
        (
            vec!["get", "http://127.0.0.1:1/x", "--request-timeout", "10ms"],
            "--request-timeout",
        ),
        // Without --random, --reads and --seed were ignored without a word.
        (
            vec!["get", "http://127.0.0.1:1/x", "--reads", "5"],
            "--reads",
        ),
        (vec!["get", "http://127.0.0.1:1/x", "--seed", "5"], "--seed"),
        // As the simulator's links: a one-way delay above 10 s describes no network.
        (
            vec![
                "proxy",
                "--listen",
                "127.0.0.1:0",
                "--upstream",
                "127.0.0.1:9",
                "--delay",
                "1000s",
            ],
            "--delay",
        ),
        // Port 0 resolves, but no server listens on it: every relayed connection would fail.
        (
            vec![
                "proxy",
                "--listen",
                "127.0.0.1:0",
                "--upstream",
                "127.0.0.1:0",
            ],
            "--upstream",
        ),
        // A listening address is an IP address: a host name was refused as "invalid socket
        // address syntax", which said neither what was wrong nor what to give.
        (
            vec!["serve", "--root", ".", "--addr", "localhost:8080"],
            "give an IP address and port",
        ),
        (
            vec![
                "proxy",
                "--listen",
                "localhost:9090",
                "--upstream",
                "127.0.0.1:8080",
            ],
            "give an IP address and port",
        ),
        // A zero idle timeout would close every connection before its first request.
        (
            vec![
                "proxy",
                "--listen",
                "127.0.0.1:0",
                "--upstream",
                "127.0.0.1:9",
                "--idle-timeout",
                "0s",
            ],
            "--idle-timeout",
        ),
        // 1024 + 2 units of 256 MiB would be 256 GiB of buffers.
        (
            vec![
                "get",
                "http://127.0.0.1:1/x",
                "--alpha",
                "1024",
                "--readahead",
                "256MiB",
            ],
            "--max-buffer",
        ),
        // Beyond the machine's memory the bound bounds nothing: a server publishing large units
        // could have the client take buffers until the process is killed.
        (
            vec!["get", "http://127.0.0.1:1/x", "--max-buffer", "100TiB"],
            "--max-buffer 100TiB is more than this machine's memory",
        ),
        (vec!["net-soak", "--clients", "0"], "--clients"),
        // A negative number is a bad value of the flag, not an unknown argument.
        (vec!["net-soak", "--clients", "-1"], "--clients"),
        (vec!["serve", "--root", ".", "--workers", "-3"], "--workers"),
        (vec!["net-soak", "--workers", "0"], "--workers"),
        (vec!["net-soak", "--file-size", "100GiB"], "--file-size"),
        // A random read stays within its file: a larger --max-read was cut to the file's size
        // without a word.
        (
            vec!["net-soak", "--file-size", "64KiB", "--max-read", "128KiB"],
            "--max-read: 128KiB is more than --file-size 64KiB",
        ),
        // Saved as a file named `-` in the current directory, where `-` means standard output
        // to other tools. Refused before the URL is asked for.
        (vec!["get", "http://127.0.0.1:1/x", "--out", "-"], "--out -"),
        // A URL was looked up as a host name, and refused as one that does not resolve.
        (
            vec![
                "proxy",
                "--listen",
                "127.0.0.1:0",
                "--upstream",
                "http://127.0.0.1:18100",
            ],
            "--upstream: `http://127.0.0.1:18100` is a URL; give the upstream's HOST:PORT without \
             the scheme, e.g. 127.0.0.1:18100",
        ),
        (
            vec!["serve", "--root", ".", "--addr", "http://127.0.0.1:8080/"],
            "is a URL; give the IP address and port without the scheme, e.g. 127.0.0.1:8080",
        ),
        // 1e29 B/s was accepted, and published at /.well-known/foresight as the device's rate.
        (
            vec![
                "serve",
                "--root",
                ".",
                "--addr",
                "127.0.0.1:0",
                "--device-bandwidth",
                "99999999999999999999999MB/s",
            ],
            "below 4EiB/s",
        ),
    ] {
        let err = refused(&args);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    for sub in ["serve", "get", "proxy", "net-soak"] {
        let out = bin().args([sub, "--help"]).output().unwrap();
        assert!(out.status.success());
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("Example"),
            "{sub} --help"
        );
    }
}

/// A proxy relaying to its own address opened a new connection to itself for every one it
/// accepted, until --max-connections ran out, and its clients saw only closed connections. The
/// address is held by this test, so that a proxy which did start would fail to listen rather than
/// run on. Only loopback and wildcard upstreams were taken for the proxy itself: one of the
/// machine's other addresses (eth0's) at the port of a proxy on `0.0.0.0` started a storm of
/// connections (some 3,000 threads from one `curl`), and so could a name whose first address
/// was not the listening one (`localhost` giving `::1` before `127.0.0.1`).
#[test]
fn a_proxy_whose_upstream_is_itself_is_refused() {
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = held.local_addr().unwrap().port();
    let mut cases = vec![
        (format!("127.0.0.1:{port}"), format!("127.0.0.1:{port}")),
        (format!("0.0.0.0:{port}"), format!("127.0.0.1:{port}")),
        (format!("127.0.0.1:{port}"), format!("localhost:{port}")),
    ];
    // One of this machine's addresses beyond loopback: the source of the route to a
    // documentation address (no packet is sent).
    let own = std::net::UdpSocket::bind("0.0.0.0:0")
        .and_then(|u| u.connect("198.51.100.1:9").and_then(|()| u.local_addr()))
        .map(|a| a.ip())
        .ok()
        .filter(|ip| !ip.is_loopback());
    match own {
        Some(ip) => cases.push((format!("0.0.0.0:{port}"), format!("{ip}:{port}"))),
        None => eprintln!("note: no address beyond loopback here; its case is skipped"),
    }
    for (listen, upstream) in cases {
        let err = refused(&["proxy", "--listen", &listen, "--upstream", &upstream]);
        assert!(
            err.contains("--upstream") && err.contains("itself"),
            "{listen} -> {upstream}: {err}"
        );
    }
}

/// `proxy` stopped by SIGINT or SIGTERM ended without a word (killed by the signal's default
/// action), where `serve` says it stopped; it now says so, and exits with 128 plus the signal's
/// number.
#[test]
fn a_proxy_stopped_by_a_signal_says_so() {
    use std::io::Read;
    for (signal, code) in [("-INT", 130), ("-TERM", 143)] {
        let mut cmd = bin();
        cmd.args([
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            "127.0.0.1:9",
        ]);
        let (mut proxy, mut err, first) = spawn_reading_first_line(cmd);
        assert!(first.contains("foresight proxy:"), "{first}");
        let killed = Command::new("kill")
            .args([signal, &proxy.0.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let status = wait_exit(&mut proxy, 20, "the signal did not stop it");
        let mut rest = String::new();
        err.read_to_string(&mut rest).unwrap();
        assert_eq!(
            status.code(),
            Some(code),
            "{signal}: {status}: {first}{rest}"
        );
        assert!(
            rest.contains("stopped by SIG") && rest.contains("proxy closed its connections"),
            "{signal}: {first}{rest}"
        );
    }
}

/// A rate given without its unit (bits? bytes? mebibytes?) was refused as "`10` has unknown unit
/// ``", naming an empty unit; the message now says the unit is missing and shows rates that parse.
#[test]
fn a_rate_without_its_unit_is_refused_as_missing_its_unit() {
    for args in [
        vec![
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            "127.0.0.1:8080",
            "--bandwidth",
            "10",
        ],
        vec![
            "serve",
            "--root",
            ".",
            "--addr",
            "127.0.0.1:0",
            "--device-bandwidth",
            "450",
        ],
    ] {
        let err = refused(&args);
        assert!(
            err.contains("has no unit; write e.g.") && err.contains("450MB/s"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("``"), "{args:?}: {err}");
    }
}

/// A listening address whose only fault is its port was refused as "not an IP address and
/// port", which sent the user to look at the address; the message now names the port's range.
#[test]
fn a_listening_port_out_of_range_is_named_as_such() {
    for (flag, addr) in [
        ("--addr", "127.0.0.1:70000"),
        ("--addr", "[::1]:65536"),
        ("--listen", "0.0.0.0:-1"),
    ] {
        let args: Vec<&str> = if flag == "--addr" {
            vec!["serve", "--root", ".", "--addr", addr]
        } else {
            vec!["proxy", "--listen", addr, "--upstream", "127.0.0.1:8080"]
        };
        let err = refused(&args);
        assert!(
            err.contains(flag) && err.contains("out of range") && err.contains("0 to 65535"),
            "{args:?}: {err}"
        );
    }
    // Anything else is still not an address, as before.
    let err = refused(&["serve", "--root", ".", "--addr", "localhost:70000"]);
    assert!(err.contains("give an IP address and port"), "{err}");
}

/// `--peak-ratio abc` was refused with clap's "invalid float literal", which said neither what
/// was wrong nor what to write; it now asks for a decimal number. A number out of range still
/// reaches the check that names the range.
#[test]
fn a_peak_ratio_that_is_no_number_says_what_to_write() {
    for (ratio, needle) in [
        (
            "abc",
            "`abc` is not a number; write a decimal number such as 1.2",
        ),
        ("-1", "from 1 to 1000"),
    ] {
        let err = refused(&[
            "serve",
            "--root",
            ".",
            "--addr",
            "127.0.0.1:0",
            "--peak-ratio",
            ratio,
        ]);
        assert!(
            err.contains("--peak-ratio") && err.contains(needle),
            "{ratio}: {err}"
        );
    }
}

/// A root with no file large enough to time publishes a stand-in RB of 200 MiB/s, by which
/// every adaptive client sizes its readahead; the startup line said only `default` at its end.
/// A warning now says so and names --device-bandwidth; a measured or configured RB has none.
/// A sparse file is never timed (its holes read as zeros no device gave), however large: the
/// warning said only that no file held four reads, beside a 64 MiB file; it now says why.
#[test]
fn serve_warns_when_its_device_rate_is_a_stand_in() {
    use std::io::Read;
    let (_guard, dir) = scratch("stand-in-rb");
    std::fs::write(dir.join("small.bin"), b"too small to time").unwrap();
    std::fs::File::create(dir.join("sparse.bin"))
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    for (args, warned) in [
        (vec![], true),
        (vec!["--device-bandwidth", "400MB/s"], false),
    ] {
        let args: Vec<&str> = ["--workers", "2"].into_iter().chain(args).collect();
        let (mut server, mut err, first) = start_serve(bin(), &dir, &args);
        let status = terminate(&mut server);
        let mut rest = String::new();
        err.read_to_string(&mut rest).unwrap();
        assert!(status.success(), "{args:?}: {first}{rest}");
        assert_eq!(
            rest.contains("warning: RB 200.0 MiB/s is a stand-in")
                && rest.contains("--device-bandwidth")
                && rest.contains("without holes"),
            warned,
            "{args:?}: {first}{rest}"
        );
    }
}

/// A child process that is killed if the test fails before it stops it.
/// `serve` printed its address before its server thread had taken SIGTERM and SIGINT, so either
/// signal sent as soon as the address showed (what a script that waits for that line does) killed
/// the process by the signal's default action: no clean stop, no `stopped`, exit by signal. The
/// signals are now taken before the line is printed. Each try races the signal against the server
/// thread's start; before, some try of forty lost it in most runs.
#[test]
fn serve_stops_cleanly_on_a_signal_sent_as_soon_as_its_address_shows() {
    use std::io::Read;
    let (_guard, dir) = scratch("early-signal");
    std::fs::write(dir.join("f.bin"), b"some bytes").unwrap();
    for (try_no, signal) in ["-TERM", "-INT"].iter().cycle().take(40).enumerate() {
        let args = ["--workers", "1", "--device-bandwidth", "400MB/s"];
        let (mut server, mut err, first) = start_serve(bin(), &dir, &args);
        let killed = Command::new("kill")
            .args([*signal, &server.0.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let status = wait_exit(&mut server, 20, "the signal did not stop it");
        let mut rest = String::new();
        err.read_to_string(&mut rest).unwrap();
        assert!(
            status.success() && rest.contains("foresight serve: stopped"),
            "try {try_no}, kill {signal}: {status}: {first}{rest}"
        );
    }
}

struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A proxy whose upstream does not answer closed each client's connection and said nothing: the
/// client saw a connection error, and the proxy's own output looked healthy.
#[test]
fn a_proxy_says_when_its_upstream_does_not_answer() {
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let mut proxy = KillOnDrop(
        bin()
            .args(["proxy", "--listen", "127.0.0.1:0", "--upstream"])
            .arg(closed.to_string())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = proxy.0.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // A guard against a hang, not a measurement.
    let wait = std::time::Duration::from_secs(30);
    let first = rx.recv_timeout(wait).expect("the proxy's first line");
    let listen = first
        .split_whitespace()
        .find(|w| w.starts_with("127.0.0.1:"))
        .unwrap_or_else(|| panic!("no address in {first:?}"))
        .to_string();
    let mut client = std::net::TcpStream::connect(&listen).unwrap();
    let _ = std::io::Write::write_all(&mut client, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    let note = rx
        .recv_timeout(wait)
        .expect("a note about the upstream on stderr");
    assert!(
        note.contains(&closed.to_string()) && note.contains("upstream"),
        "{note}"
    );
}

/// The note about an upstream that does not answer was written by a once-a-second thread, so
/// failures in the last second before a stop were never reported: three connections refused,
/// then SIGINT at once, and standard error said only that the proxy stopped. The stop now says
/// what the last note had not.
#[test]
fn a_proxy_stopped_says_the_upstream_failures_not_yet_noted() {
    use std::io::{Read, Write};
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let mut cmd = bin();
    cmd.args(["proxy", "--listen", "127.0.0.1:0", "--upstream"])
        .arg(closed.to_string());
    let (mut proxy, mut err, first) = spawn_reading_first_line(cmd);
    let listen = first
        .split_whitespace()
        .find(|w| w.starts_with("127.0.0.1:"))
        .unwrap_or_else(|| panic!("no address in {first:?}"))
        .to_string();
    for _ in 0..3 {
        let mut client = std::net::TcpStream::connect(&listen).unwrap();
        client
            .set_read_timeout(Some(std::time::Duration::from_secs(20)))
            .unwrap();
        let _ = client.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        // The proxy closes it once its connection upstream failed, counted by then.
        let mut buf = [0u8; 64];
        let got = client.read(&mut buf);
        assert!(
            matches!(got, Ok(0)) || got.is_err(),
            "the proxy relayed {got:?}"
        );
    }
    let killed = Command::new("kill")
        .args(["-INT", &proxy.0.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = wait_exit(&mut proxy, 20, "SIGINT did not stop it");
    let mut rest = String::new();
    err.read_to_string(&mut rest).unwrap();
    assert_eq!(status.code(), Some(130), "{first}{rest}");
    // The last note, whether the stop's or one a second before it, counts all three.
    let noted = rest
        .lines()
        .rfind(|l| l.contains("cannot connect to the upstream"))
        .unwrap_or_else(|| panic!("no note about the upstream: {first}{rest}"));
    assert!(
        noted.contains(&closed.to_string()) && noted.contains("3 connection(s)"),
        "{noted}"
    );
    assert!(
        rest.trim_end()
            .ends_with("stopped by SIGINT: foresight proxy closed its connections"),
        "{rest}"
    );
}

#[test]
fn serve_get_and_sigterm_through_the_binary() {
    let (_guard, dir) = scratch("net");
    let data: Vec<u8> = (0..3_000_017u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 11) as u8)
        .collect();
    std::fs::write(dir.join("d.bin"), &data).unwrap();
    let server = bin()
        .args([
            "serve",
            "--root",
            dir.to_str().unwrap(),
            "--addr",
            "127.0.0.1:0",
            "--workers",
            "4",
        ])
        .args(["--device-bandwidth", "400MB/s"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut server = KillOnDrop(server);
    let mut err = BufReader::new(server.0.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    // A file already at --out is replaced whole, even when it is longer than the download.
    let out = dir.join("out.bin");
    std::fs::write(&out, vec![0xAAu8; 4_000_000]).unwrap();
    let url = format!("http://{addr}/d.bin");
    let report = get_json(&[&url, "--out", out.to_str().unwrap()]);
    for key in [
        "bytes",
        "mib_s",
        "alpha",
        "rtt_ms",
        "requests",
        "wasted_bytes",
    ] {
        assert!(report.get(key).is_some(), "missing {key}: {report}");
    }
    assert_eq!(report["bytes"], 3_000_017);
    assert!(std::fs::read(&out).unwrap() == data);
    // Random reads larger than the file are cut to it; the report says what each read got, and
    // standard error says that they were cut.
    let st = bin()
        .args(["get", &url, "--random", "1TiB", "--reads", "2", "--json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&st.stderr);
    assert!(st.status.success(), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&st.stdout).unwrap();
    assert_eq!(report["bytes"], 2 * 3_000_017, "{report}");
    assert_eq!(report["random_read_bytes"], 3_000_017, "{report}");
    assert!(
        stderr.contains("--random 1TiB is larger than the file"),
        "{stderr}"
    );
    // --out naming an existing directory puts the file in it under the URL's name; a failed
    // download leaves no file behind.
    let into = dir.join("into");
    std::fs::create_dir_all(&into).unwrap();
    get_to(&format!("http://{addr}/d.bin"), &into);
    assert!(std::fs::read(into.join("d.bin")).unwrap() == data);
    // The name is the path's last segment decoded, as the server decoded it to find the file:
    // `a%20b.bin` was saved as `a%20b.bin`, a name the file does not have.
    std::fs::write(dir.join("a b.bin"), &data[..1000]).unwrap();
    get_to(&format!("http://{addr}/a%20b.bin"), &into);
    assert_eq!(std::fs::read(into.join("a b.bin")).unwrap(), data[..1000]);
    assert!(!into.join("a%20b.bin").exists());
    let missing = into.join("missing.bin");
    let st = bin()
        .args(["get", &format!("http://{addr}/missing.bin"), "--out"])
        .arg(&missing)
        .output()
        .unwrap();
    assert!(!st.status.success());
    assert!(String::from_utf8_lossy(&st.stderr).contains("404"));
    assert!(!missing.exists(), "a failed download left a file");
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .chain(std::fs::read_dir(&into).unwrap())
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("partial"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
    // Targets that are not regular files are written in place: /dev/null, and a FIFO whose
    // reader sees every byte.
    get_to(
        &format!("http://{addr}/d.bin"),
        std::path::Path::new("/dev/null"),
    );
    let fifo = fifo_in(&dir);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    get_to(&format!("http://{addr}/d.bin"), &fifo);
    assert!(
        reader.join().unwrap() == data,
        "the FIFO's reader got other bytes"
    );
    // A report that cannot be written is an error with a message, not a panic.
    let st = bin()
        .args(["get", &format!("http://{addr}/d.bin"), "--json"])
        .stdout(std::fs::File::create("/dev/full").unwrap())
        .output()
        .unwrap();
    let msg = String::from_utf8_lossy(&st.stderr);
    assert_eq!(st.status.code(), Some(1), "{msg}");
    assert!(msg.contains("standard output"), "{msg}");
    let killed = Command::new("kill")
        .args(["-TERM", &server.0.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = server.0.wait().unwrap();
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(&mut err, &mut rest);
    assert!(status.success(), "{status}: {rest}");
    assert!(rest.contains("stopped"), "{rest}");
}

/// A server that accepts every connection and closes it unanswered, so that any download from it
/// fails after the output was opened.
fn closing_server() -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for c in listener.incoming() {
            drop(c);
        }
    });
    addr
}

/// Runs `foresight get URL --out OUT`, which must succeed.
fn get_to(url: &str, out: &std::path::Path) {
    let st = bin().args(["get", url, "--out"]).arg(out).output().unwrap();
    assert!(
        st.status.success(),
        "get {url} --out {}: {}",
        out.display(),
        String::from_utf8_lossy(&st.stderr)
    );
}

/// Runs `foresight get ARGS --json`, which must succeed, and returns its report.
fn get_json(args: &[&str]) -> serde_json::Value {
    let st = bin().arg("get").args(args).arg("--json").output().unwrap();
    assert!(
        st.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&st.stderr)
    );
    serde_json::from_slice(&st.stdout).unwrap()
}

/// A new directory of the test's own under the system's temporary directory, and the guard
/// that removes it with everything in it when dropped, also when the test fails.
fn scratch(label: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let guard = tempfile::Builder::new()
        .prefix(&format!("foresight-cli-{label}-"))
        .tempdir()
        .expect("making a temporary directory");
    let dir = guard.path().to_path_buf();
    (guard, dir)
}

#[test]
fn a_failed_get_keeps_the_file_already_at_out() {
    let addr = closing_server();
    let (_guard, dir) = scratch("get-keep");
    let out = dir.join("keep.bin");
    std::fs::write(&out, b"precious bytes").unwrap();
    let st = bin()
        .args(["get", &format!("http://{addr}/keep.bin"), "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(
        st.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    assert_eq!(std::fs::read(&out).unwrap(), b"precious bytes");
    // The same through a directory, where the file is named after the URL.
    let st = bin()
        .args(["get", &format!("http://{addr}/keep.bin"), "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(st.status.code(), Some(1));
    assert_eq!(std::fs::read(&out).unwrap(), b"precious bytes");
    // Nothing else is left in the directory: no partial download.
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("keep.bin")]);
}

#[test]
fn urls_that_would_share_a_file_are_refused_up_front() {
    let (_guard, dir) = scratch("get-clash");
    let into = dir.join("into");
    let a = "http://127.0.0.1:1/a/x.bin";
    let b = "http://127.0.0.1:1/b/x.bin";
    let st = bin()
        .args(["get", a, "http://127.0.0.1:1/y.bin", b, "--out"])
        .arg(&into)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&st.stderr);
    assert_eq!(st.status.code(), Some(2), "{err}");
    for needle in [a, b, "x.bin", "--out"] {
        assert!(err.contains(needle), "should name {needle}: {err}");
    }
    assert!(!into.exists(), "the refused download created its directory");
}

/// A URL whose last segment decodes to no name one directory can hold (`%2F` is a `/`, `%00` a
/// NUL, `%2e%2e` is `..`) is refused before anything is fetched: exit
/// 2, naming the URL, the segment and --out. Decoded names are what the file is called; decoding
/// them must not let a URL choose another directory.
#[test]
fn get_refuses_url_names_that_decode_to_no_file_name() {
    let (_guard, dir) = scratch("get-unsafe-name");
    let into = dir.join("into");
    std::fs::create_dir_all(&into).unwrap();
    for (segment, why) in [
        ("..%2Fescape.bin", "`/`"),
        ("a%00b", "NUL"),
        ("%2e%2e", "`..`"),
        ("%2E", "`..`"),
    ] {
        let url = format!("http://127.0.0.1:1/d/{segment}");
        let st = bin()
            .args(["get", &url, "--out"])
            .arg(&into)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&st.stderr);
        assert_eq!(st.status.code(), Some(2), "{url}: {err}");
        for needle in [url.as_str(), segment, why, "--out"] {
            assert!(err.contains(needle), "{url}: should name {needle}: {err}");
        }
        assert!(
            !err.contains("connect"),
            "{url}: fetched before refusing: {err}"
        );
    }
    assert_eq!(std::fs::read_dir(&into).unwrap().count(), 0);
    assert!(!dir.join("escape.bin").exists());
}

/// `net-soak` at its smallest: two clients for 100 ms over one 64 KiB file and two workers.
fn small_soak() -> Command {
    small_soak_as(bin())
}

/// [`small_soak`] run through `c` (the binary, or a wrapper that runs it).
fn small_soak_as(mut c: Command) -> Command {
    c.args([
        "net-soak",
        "--clients",
        "2",
        "--duration",
        "100ms",
        "--files",
        "1",
        "--file-size",
        "64KiB",
        "--workers",
        "2",
    ]);
    c
}

/// A TMPDIR that did not exist was created (parents and all) for the soak's files, and left
/// behind when the soak removed its own directory; one that is a file failed with exit 1.
#[test]
fn net_soak_refuses_a_tmpdir_that_is_no_directory() {
    let (_guard, base) = scratch("soak-tmpdir");
    let missing = base.join("missing").join("tmp");
    let file = base.join("file");
    std::fs::write(&file, b"not a directory").unwrap();
    for (tmpdir, what) in [(&missing, "does not exist"), (&file, "is not a directory")] {
        let st = small_soak().env("TMPDIR", tmpdir).output().unwrap();
        let err = String::from_utf8_lossy(&st.stderr);
        assert_eq!(st.status.code(), Some(2), "{err}");
        assert!(err.contains("TMPDIR") && err.contains(what), "{err}");
    }
    let made = base.join("missing").exists();
    assert!(!made, "the soak created the missing TMPDIR");
}

/// An empty TMPDIR was refused ("TMPDIR:  does not exist", exit 2); like an unset one it means
/// /tmp, as it does to mktemp and most tools.
#[test]
fn net_soak_takes_an_empty_tmpdir_as_unset() {
    let st = small_soak().env("TMPDIR", "").output().unwrap();
    let err = String::from_utf8_lossy(&st.stderr);
    assert_eq!(st.status.code(), Some(0), "{err}");
    assert!(!err.contains("does not exist"), "{err}");
}

/// A TMPDIR this user may not write in failed at the soak's first file, with exit 1. Made mode
/// 555; a privileged user writes there anyway, so as root the soak runs as `nobody`.
#[test]
fn net_soak_refuses_a_tmpdir_it_cannot_write_in() {
    use std::os::unix::fs::PermissionsExt;
    let (_guard, base) = scratch("soak-readonly-tmpdir");
    let tmpdir = base.join("ro");
    std::fs::create_dir_all(&tmpdir).unwrap();
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&tmpdir, std::fs::Permissions::from_mode(0o555)).unwrap();
    let privileged = std::fs::write(tmpdir.join("probe"), b"").is_ok();
    let _ = std::fs::remove_file(tmpdir.join("probe"));
    let Some(cmd) = unprivileged(privileged) else {
        return;
    };
    let st = small_soak_as(cmd).env("TMPDIR", &tmpdir).output().unwrap();
    let err = String::from_utf8_lossy(&st.stderr);
    assert_eq!(st.status.code(), Some(2), "{err}");
    assert!(
        err.contains("TMPDIR") && err.contains("cannot be written"),
        "{err}"
    );
}

/// Both ends of every soak connection are in the one process, so its clients need twice their
/// number of open files. Past the process's limit (`ulimit -n`), a soak ran and failed its
/// connects in a loop: `--clients 200` under a limit of 256 reported 197,635 errors (exit 1), as
/// though the server were at fault. A soft limit below what the soak needs is raised up to the
/// hard one; past the hard one the soak is refused before it starts, naming --clients and the
/// limit.
#[test]
fn net_soak_fits_its_clients_within_the_open_files_limit() {
    let under_limit = |limit: &str| {
        let mut c = common::under_ulimit(limit);
        c.args([
            "net-soak",
            "--clients",
            "200",
            "--duration",
            "300ms",
            "--files",
            "1",
            "--file-size",
            "64KiB",
            "--workers",
            "2",
        ]);
        c.output().unwrap()
    };
    // Soft and hard limit 256: refused up front.
    let st = under_limit("-n 256");
    let err = String::from_utf8_lossy(&st.stderr);
    assert_eq!(st.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--clients") && err.contains("ulimit -n") && !err.contains("errors"),
        "{err}"
    );
    // A soft limit of 256 under a hard one with room: raised, and every exchange succeeds.
    let hard_room = common::hard_open_files_limit().is_none_or(|hard| hard >= 1024);
    if hard_room {
        let st = under_limit("-Sn 256");
        let err = String::from_utf8_lossy(&st.stderr);
        assert_eq!(st.status.code(), Some(0), "{err}");
    }
}

/// `serve` holds up to --max-connections connections, each with its stream's file open, but kept
/// the soft open-files limit it was started with: under `ulimit -n 128` its connections past
/// about a hundred were answered 500 (opening the file failed) or never accepted, and nothing
/// was logged. `proxy` holds two sockets per connection alike. Each raises the soft limit toward
/// what --max-connections needs, and says so when the hard limit holds less.
#[test]
fn serve_and_proxy_raise_their_open_files_limit_for_their_connections() {
    let (_guard, dir) = scratch("serve-nofile");
    let root = dir.display().to_string();
    let hard = common::hard_open_files_limit();
    let serve = [
        "serve",
        "--root",
        root.as_str(),
        "--addr",
        "127.0.0.1:0",
        "--workers",
        "2",
        "--device-bandwidth",
        "400MB/s",
        "--max-connections",
        "1000",
    ];
    let proxy = [
        "proxy",
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        "127.0.0.1:9",
        "--max-connections",
        "1000",
    ];
    for args in [&serve[..], &proxy[..]] {
        for (limit, warned) in [("-Sn 256", false), ("-n 256", true)] {
            if !warned && hard.is_some_and(|h| h < 4096) {
                continue;
            }
            let child = common::under_ulimit(limit)
                .args(args)
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let mut child = KillOnDrop(child);
            let mut err = BufReader::new(child.0.stderr.take().unwrap());
            let mut said = String::new();
            // The line that says it is up, with its address.
            while !said.contains(&format!("foresight {}: ", args[0])) {
                let mut line = String::new();
                if err.read_line(&mut line).unwrap() == 0 {
                    panic!("{args:?} {limit}: it ended: {said}");
                }
                said.push_str(&line);
            }
            let limits = std::fs::read_to_string(format!("/proc/{}/limits", child.0.id())).unwrap();
            let soft: u64 = limits
                .lines()
                .find(|l| l.starts_with("Max open files"))
                .and_then(|l| l.split_whitespace().nth(3))
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| panic!("no open-files limit in {limits}"));
            if warned {
                assert_eq!(soft, 256, "{args:?} {limit}: {limits}");
                assert!(
                    said.contains("--max-connections 1000") && said.contains("ulimit -n"),
                    "{args:?} {limit}: {said}"
                );
            } else {
                assert!(soft >= 2000, "{args:?} {limit}: soft limit {soft}: {said}");
                assert!(!said.contains("ulimit"), "{args:?} {limit}: {said}");
            }
            terminate(&mut child);
        }
    }
}

#[test]
fn net_soak_reports_a_stdout_it_cannot_write_as_an_error() {
    let st = small_soak()
        .arg("--json")
        .stdout(std::fs::File::create("/dev/full").unwrap())
        .output()
        .unwrap();
    let msg = String::from_utf8_lossy(&st.stderr);
    assert_eq!(st.status.code(), Some(1), "{msg}");
    assert!(msg.contains("standard output"), "{msg}");
}

/// A soak runs for its whole --duration (30 s by default) and used to print nothing until its
/// report. It says at once what it runs, and a refused one prints only its refusal.
#[test]
fn net_soak_says_what_it_runs_before_it_runs_it() {
    let st = small_soak().output().unwrap();
    let err = String::from_utf8_lossy(&st.stderr);
    assert_eq!(st.status.code(), Some(0), "{err}");
    let first = err.lines().next().unwrap_or_default();
    assert!(
        first.contains("net-soak") && first.contains("2 clients") && first.contains("100ms"),
        "{err}"
    );
    let st = bin().args(["net-soak", "--workers", "0"]).output().unwrap();
    let err = String::from_utf8_lossy(&st.stderr);
    assert_eq!(st.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// A test server on a free port: each connection gets a thread that reads a request head (up to
/// its blank line) and hands it, as text, to `answer` with the connection; `answer` writes the
/// reply and says whether the connection serves another request. A connection closed before a
/// whole head ends its thread.
fn scripted_server(answer: fn(&str, &mut std::net::TcpStream) -> bool) -> std::net::SocketAddr {
    use std::io::Read;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for c in listener.incoming() {
            let Ok(mut c) = c else { continue };
            std::thread::spawn(move || loop {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if c.read(&mut byte).unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                if !answer(&String::from_utf8_lossy(&head), &mut c) {
                    return;
                }
            });
        }
    });
    addr
}

/// A server that announces a file of a megabyte without ranges, sends its first 256 KiB, and then
/// holds the connection open without sending more: a download from it stays under way. Every
/// other path is 404, and every connection serves one request.
fn stalling_server() -> std::net::SocketAddr {
    scripted_server(|head, c| {
        use std::io::Write;
        if head.split_whitespace().nth(1) != Some("/slow.bin") {
            let _ = c.write_all(
                b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
            return false;
        }
        let _ =
            c.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1048576\r\nConnection: close\r\n\r\n");
        if head.starts_with("GET ") {
            let _ = c.write_all(&vec![7u8; 256 << 10]);
            std::thread::sleep(std::time::Duration::from_secs(60));
        }
        false
    })
}

/// Sends SIGTERM to `child` and waits for it, at most 20 s.
fn terminate(child: &mut KillOnDrop) -> std::process::ExitStatus {
    let killed = Command::new("kill")
        .args(["-TERM", &child.0.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    wait_exit(child, 20, "SIGTERM did not stop it")
}

/// Waits for `child` to exit, at most `secs` seconds; past that the test fails with `why`.
fn wait_exit(child: &mut KillOnDrop, secs: u64, why: &str) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            return status;
        }
        assert!(std::time::Instant::now() < deadline, "{why}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Waits up to 20 s for `ready`.
fn wait_for(what: &str, ready: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !ready() {
        assert!(std::time::Instant::now() < deadline, "never saw {what}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A download stopped by SIGTERM leaves no temporary file, and says that it stopped and what it
/// removed; it used to end without a word.
#[test]
fn a_get_stopped_by_sigterm_leaves_no_temporary_file() {
    let addr = stalling_server();
    let (_guard, dir) = scratch("get-sigterm");
    let out = dir.join("slow.bin");
    let mut get = KillOnDrop(
        bin()
            .args(["get", &format!("http://{addr}/slow.bin"), "--out"])
            .arg(&out)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut err = get.0.stderr.take().unwrap();
    let said = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut text);
        text
    });
    let names = || -> Vec<String> {
        std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    };
    // The download is under way once its temporary file holds bytes.
    wait_for("the temporary file fill", || {
        std::fs::read_dir(&dir).unwrap().any(|e| {
            let e = e.unwrap();
            e.file_name().to_string_lossy().contains("partial")
                && e.metadata().is_ok_and(|m| m.len() > 0)
        })
    });
    let status = terminate(&mut get);
    assert!(!status.success(), "{status}");
    assert_eq!(names(), Vec::<String>::new(), "left behind");
    // It ended without a word, where `sim`, `reproduce` and `bench` say what they leave.
    let said = said.join().unwrap();
    assert!(
        said.contains("stopped by SIGTERM: get had not finished")
            && said.contains("removed ")
            && said.contains("partial"),
        "{said}"
    );
}

#[test]
fn a_net_soak_stopped_by_sigterm_removes_its_files() {
    // The soak writes under its TMPDIR; one of the test's own is removed, with anything the
    // soak left in it, also when the test fails.
    let (_guard, tmp) = scratch("soak-tmpdir");
    let mut soak = KillOnDrop(
        bin()
            .env("TMPDIR", &tmp)
            .args([
                "net-soak",
                "--clients",
                "2",
                "--duration",
                "60s",
                "--files",
                "2",
                "--file-size",
                "64KiB",
                "--workers",
                "2",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut err = soak.0.stderr.take().unwrap();
    let said = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut text);
        text
    });
    let files = tmp.join(format!("foresight-soak-{}", soak.0.id()));
    wait_for("the soak's files", || files.join("f1.bin").exists());
    let status = terminate(&mut soak);
    assert!(!status.success(), "{status}");
    assert!(!files.exists(), "{} was left behind", files.display());
    // It ended without a word, where `sim`, `reproduce` and `bench` say what they leave.
    let said = said.join().unwrap();
    assert!(
        said.contains("stopped by SIGTERM: net-soak had not finished")
            && said.contains(&format!("removed {}", files.display())),
        "{said}"
    );
}

#[test]
fn a_get_names_the_output_it_cannot_write_and_ends_quietly_when_its_reader_leaves() {
    let url = format!("http://{}/slow.bin", stalling_server());
    let run = |out: Option<&str>, stdout: Stdio| {
        let mut cmd = bin();
        cmd.args(["get", &url]);
        if let Some(out) = out {
            cmd.args(["--out", out]);
        }
        let st = cmd.stdout(stdout).output().unwrap();
        (
            st.status.code(),
            String::from_utf8_lossy(&st.stderr).into_owned(),
        )
    };
    let (code, err) = run(None, std::fs::File::create("/dev/full").unwrap().into());
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("standard output"), "{err}");
    let (code, err) = run(Some("/dev/full"), Stdio::null());
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("--out /dev/full"), "{err}");
    // `foresight get URL | head -c 0`: the reader has what it wanted.
    let mut child = bin()
        .args(["get", &url])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let st = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&st.stderr);
    assert_eq!(st.status.code(), Some(0), "{err}");
    assert!(!err.contains("error"), "{err}");
}

/// `--out DIR/` names a directory; when there is none, the download is refused up front (exit 2,
/// naming --out) rather than made into a temporary file that cannot then be renamed to `DIR/`.
#[test]
fn an_out_path_ending_in_a_slash_that_names_no_directory_is_refused_up_front() {
    let addr = closing_server();
    let (_guard, dir) = scratch("get-slash");
    for out in ["missing/", "missing/."] {
        let st = bin()
            .args(["get", &format!("http://{addr}/f.bin"), "--out"])
            .arg(format!("{}/{out}", dir.display()))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&st.stderr);
        assert_eq!(st.status.code(), Some(2), "{out}: {err}");
        assert!(err.contains("--out") && err.contains("directory"), "{err}");
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert!(left.is_empty(), "{out}: {left:?}");
    }
}

/// Several URLs go into a directory; an `--out` that is a file is refused saying so, and the file
/// is left as it was. Before, the message was the system's alone: `creating the --out directory
/// F: File exists (os error 17)`, which named no remedy.
#[test]
fn several_urls_into_an_out_that_is_a_file_are_refused_saying_so() {
    let addr = closing_server();
    let (_guard, dir) = scratch("get-out-file");
    let file = dir.join("a-file");
    std::fs::write(&file, b"kept").unwrap();
    let st = bin()
        .args([
            "get",
            &format!("http://{addr}/a"),
            &format!("http://{addr}/b"),
        ])
        .arg("--out")
        .arg(&file)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&st.stderr);
    assert_eq!(st.status.code(), Some(2), "{err}");
    assert!(
        err.contains("is not a directory") && err.contains("give a directory"),
        "{err}"
    );
    assert_eq!(std::fs::read(&file).unwrap(), b"kept");
}

/// An idle timeout under a second is refused by its flag: with `0s` the server closed every
/// keep-alive connection before its second request and every request whose head came in two
/// pieces, without a word. The server is started for real, so a value it accepted would leave it
/// running: the test waits (at most 30 s) for it to exit.
#[test]
fn serve_refuses_an_idle_timeout_under_a_second() {
    for value in ["0s", "500ms"] {
        let child = bin()
            .args(["serve", "--root", ".", "--addr", "127.0.0.1:0"])
            .args(["--device-bandwidth", "400MB/s", "--idle-timeout", value])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut server = KillOnDrop(child);
        let status = wait_exit(
            &mut server,
            30,
            &format!("--idle-timeout {value} was accepted: the server is running"),
        );
        let mut err = String::new();
        std::io::Read::read_to_string(&mut server.0.stderr.take().unwrap(), &mut err).unwrap();
        assert_eq!(status.code(), Some(2), "{value}: {err}");
        assert!(
            err.contains(&format!("--idle-timeout {value} ")),
            "{value}: {err}"
        );
    }
}

/// A root the server's user may not search passed the existence check and then failed with the
/// system's bare "Permission denied" and exit 1, naming neither --root nor the path. The root is
/// made mode 000; a privileged user searches it anyway, so as root the server runs as `nobody`
/// through `setpriv` (skipped, with a note, where neither way is open).
#[test]
fn a_root_that_cannot_be_searched_is_refused_by_its_flag() {
    use std::os::unix::fs::PermissionsExt;
    let (_guard, dir) = scratch("unsearchable-root");
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("a.bin"), b"data").unwrap();
    // The scratch directory must let `nobody` reach the root's name.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o000)).unwrap();
    let Some(mut cmd) = unprivileged(std::fs::read_dir(&root).is_ok()) else {
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
        return;
    };
    let child = cmd
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--device-bandwidth",
            "400MB/s",
        ])
        .arg("--root")
        .arg(&root)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut server = KillOnDrop(child);
    let status = wait_exit(
        &mut server,
        30,
        "the server runs on a root it cannot search",
    );
    let mut err = String::new();
    std::io::Read::read_to_string(&mut server.0.stderr.take().unwrap(), &mut err).unwrap();
    // Searchable again, so that the guard can remove it.
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(
        err.contains("--root") && err.contains(&root.display().to_string()),
        "{err}"
    );
}

/// A file under the root that the server's user may not read was answered 500 Internal Server
/// Error with the engine's words, "read failed: opening /ROOT/secret.bin: Permission denied":
/// a fault of the server's, and the server's own path told to every client, while a `HEAD`
/// (and a `GET` of an empty such file), which open nothing, answered 200. All are now the
/// file's refusal, 403, naming no path. The files are made mode 000; a privileged user reads
/// them anyway, so as root the server runs as `nobody` through `setpriv`.
#[test]
fn a_file_the_server_may_not_read_is_403_without_the_servers_path() {
    use std::os::unix::fs::PermissionsExt;
    let (_guard, dir) = scratch("unreadable-file");
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let secret = root.join("secret.bin");
    std::fs::write(&secret, b"not for you").unwrap();
    let empty = root.join("empty.bin");
    std::fs::write(&empty, b"").unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o000)).unwrap();
    std::fs::set_permissions(&empty, std::fs::Permissions::from_mode(0o000)).unwrap();
    let Some(cmd) = unprivileged(std::fs::File::open(&secret).is_ok()) else {
        return;
    };
    let (_server, addr) = spawn_serve(
        cmd,
        &root,
        &["--workers", "2", "--device-bandwidth", "400MB/s"],
    );
    for request in [
        "GET /secret.bin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        "GET /secret.bin HTTP/1.1\r\nHost: x\r\nRange: bytes=0-3\r\nConnection: close\r\n\r\n",
        "HEAD /secret.bin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        "GET /empty.bin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    ] {
        let (status, body) = ask_raw(&addr, request);
        assert_eq!(status, "HTTP/1.1 403 Forbidden", "{request:?}: {body}");
        if !request.starts_with("HEAD ") {
            assert!(body.contains("permission denied"), "{body}");
        }
        assert!(!body.contains(&dir.display().to_string()), "{body}");
    }
    let err = failed(&["get", &format!("http://{addr}/secret.bin")]);
    assert!(
        err.contains("403 Forbidden") && err.contains("permission denied"),
        "{err}"
    );
    assert!(!err.contains(&dir.display().to_string()), "{err}");
}

/// `get` with several URLs fetches each of them whatever became of the ones before: every failure
/// is named on standard error with its cause, the others are saved and summarized, and the
/// command exits with 1 at the end, naming the URLs that failed.
#[test]
fn get_fetches_every_url_and_fails_at_the_end_naming_each_failure() {
    use foresight_net::server::{spawn, DeviceSource, ServerConfig};
    let (_guard, dir) = scratch("get-several");
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let a: Vec<u8> = (0..100_003u32).map(|i| (i % 251) as u8).collect();
    let c: Vec<u8> = (0..50_001u32).map(|i| (i % 241) as u8).collect();
    std::fs::write(root.join("a.bin"), &a).unwrap();
    std::fs::write(root.join("c.bin"), &c).unwrap();
    let mut cfg = ServerConfig::new(root, "127.0.0.1:0".parse().unwrap());
    cfg.workers = 2;
    cfg.device = DeviceSource::Configured(foresight_core::Bandwidth::from_mib_s(400.0));
    let server = spawn(cfg).unwrap();
    let addr = server.local_addr();
    let closed = closing_server();
    let urls = [
        format!("http://{addr}/a.bin"),
        format!("http://{addr}/missing.bin"),
        format!("http://{closed}/x.bin"),
        format!("http://{addr}/c.bin"),
    ];
    let out = dir.join("out");
    let st = bin()
        .arg("get")
        .args(&urls)
        .arg("--out")
        .arg(&out)
        .args(["--request-timeout", "5s"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&st.stderr);
    assert_eq!(st.status.code(), Some(1), "{err}");
    assert!(std::fs::read(out.join("a.bin")).unwrap() == a, "{err}");
    assert!(std::fs::read(out.join("c.bin")).unwrap() == c, "{err}");
    assert!(!out.join("missing.bin").exists() && !out.join("x.bin").exists());
    // Each failure on a line of its own, naming the URL and the cause.
    let line_of = |url: &str| {
        err.lines()
            .find(|l| l.starts_with(&format!("error: {url}:")))
            .unwrap_or_else(|| panic!("no error line for {url}: {err}"))
            .to_string()
    };
    assert!(line_of(&urls[1]).contains("404"), "{err}");
    assert!(
        line_of(&urls[2]).len() > urls[2].len() + 10,
        "a cause: {err}"
    );
    // The successful ones are summarized as for one URL.
    for (url, len) in [(&urls[0], a.len()), (&urls[3], c.len())] {
        assert!(
            err.contains(&format!("{url}: {len} bytes in")),
            "no summary for {url}: {err}"
        );
    }
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.contains("2 of 4 URLs failed") && last.contains(&urls[1]) && last.contains(&urls[2]),
        "{err}"
    );
    // With --json, standard output has a line for every URL in order: the reports of the
    // downloads that succeeded, and the failures with their causes.
    let st = bin()
        .arg("get")
        .args(&urls)
        .args(["--json", "--request-timeout", "5s"])
        .output()
        .unwrap();
    assert_eq!(st.status.code(), Some(1));
    let reports: Vec<serde_json::Value> = String::from_utf8_lossy(&st.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let got: Vec<&str> = reports.iter().map(|r| r["url"].as_str().unwrap()).collect();
    assert_eq!(got, urls.iter().map(String::as_str).collect::<Vec<_>>());
    let failed: Vec<bool> = reports.iter().map(|r| r["error"].is_string()).collect();
    assert_eq!(failed, [false, true, true, false]);
    assert!(
        reports[1]["error"].as_str().unwrap().contains("404"),
        "{}",
        reports[1]
    );
    assert_eq!(reports[0]["bytes"], a.len() as u64);
    server.shutdown().unwrap();
}

/// A URL that does not parse is refused (exit 2) before any of the others is fetched.
#[test]
fn an_unparsable_url_among_several_is_refused_before_any_fetch() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let st = bin()
        .args(["get", &format!("http://{addr}/a.bin"), "ftp://x/y"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&st.stderr);
    assert_eq!(st.status.code(), Some(2), "{err}");
    assert!(err.contains("ftp://x/y"), "{err}");
    assert!(
        listener.accept().is_err(),
        "a connection was made before the bad URL was refused"
    );
}

/// With several URLs, a reader of standard output that leaves ends the command without fetching
/// the rest, quietly as for one URL, unless a URL before had failed: that failure is still the
/// outcome (exit 1, named), not hidden behind a success.
#[test]
fn a_reader_leaving_after_a_failed_url_does_not_hide_the_failure() {
    let failing = format!("http://{}/x.bin", closing_server());
    let slow = format!("http://{}/slow.bin", stalling_server());
    let never = format!("http://{}/y.bin", closing_server());
    let run = |urls: &[&str]| {
        let mut child = bin()
            .arg("get")
            .args(urls)
            .args(["--request-timeout", "5s"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let st = child.wait_with_output().unwrap();
        (
            st.status.code(),
            String::from_utf8_lossy(&st.stderr).into_owned(),
        )
    };
    let (code, err) = run(&[&failing, &slow, &never]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.lines()
            .any(|l| l.starts_with(&format!("error: {failing}:"))),
        "{err}"
    );
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.contains("1 of 3 URLs failed") && last.contains("the last 1 were"),
        "{err}"
    );
    assert!(
        !err.contains(&format!("error: {never}")),
        "not fetched: {err}"
    );
    // Without a failure before it, the reader leaving is the quiet end it always was.
    let (code, err) = run(&[&slow, &failing]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("error"), "{err}");
}

/// A server that accepts every connection and then neither reads nor answers nor closes: the
/// connections are kept open until the test ends. Returns the address and the count of
/// connections accepted so far.
fn silent_server() -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        for c in listener.incoming() {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            kept.push(c);
        }
    });
    (addr, accepted)
}

/// A server that accepts and never answers: `get` notes each retry on standard error (which
/// request, which attempt, after how long) and then fails (exit 1) saying it gave up after three
/// attempts, having opened no more than three connections. Before, it failed after one timeout
/// with nothing said meanwhile and no retry; the bound of 60 s only tells a bounded give-up from
/// a hang (three attempts of 1 s each are expected).
#[test]
fn get_from_a_server_that_never_answers_notes_each_retry_and_gives_up() {
    let (addr, accepted) = silent_server();
    let mut get = KillOnDrop(
        bin()
            .args([
                "get",
                &format!("http://{addr}/f.bin"),
                "--request-timeout",
                "1s",
                "--json",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let status = wait_exit(
        &mut get,
        60,
        "get still waiting 60 s after a 1 s request timeout",
    );
    let mut err = String::new();
    std::io::Read::read_to_string(get.0.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(1), "{err}");
    for attempt in 1..=2 {
        assert!(
            err.lines().any(|l| l.contains("HEAD")
                && l.contains(&format!("attempt {attempt} of 3 failed after"))
                && l.contains("no complete answer within 1s")
                && l.contains("sending it again")),
            "no note of attempt {attempt}: {err}"
        );
    }
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.contains("no complete answer within 1s") && last.contains("gave up after 3 attempts"),
        "{err}"
    );
    let n = accepted.load(std::sync::atomic::Ordering::SeqCst);
    assert!((1..=3).contains(&n), "{n} connections for one request");
}

/// Starts `foresight serve --root ROOT` on a free port (two workers, a stated bandwidth) and
/// returns it with its address.
fn serve_root(root: &std::path::Path) -> (KillOnDrop, String) {
    serve_root_with(root, &["--workers", "2", "--device-bandwidth", "400MB/s"])
}

/// [`serve_root`] with `args` in place of its workers and bandwidth.
fn serve_root_with(root: &std::path::Path, args: &[&str]) -> (KillOnDrop, String) {
    spawn_serve(bin(), root, args)
}

/// [`serve_root_with`] run by `cmd`: the binary, or a wrapper that runs it as another user.
fn spawn_serve(cmd: Command, root: &std::path::Path, args: &[&str]) -> (KillOnDrop, String) {
    let (server, _, line) = start_serve(cmd, root, args);
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    (server, addr)
}

/// Starts `serve` on `root` with `args` on a free port, run by `cmd`, and reads the first line of
/// its standard error, which must give its address: the server, the rest of its standard error
/// and that line.
fn start_serve(
    mut cmd: Command,
    root: &std::path::Path,
    args: &[&str],
) -> (KillOnDrop, BufReader<std::process::ChildStderr>, String) {
    cmd.args(["serve", "--addr", "127.0.0.1:0"])
        .args(args)
        .arg("--root")
        .arg(root);
    let (server, err, line) = spawn_reading_first_line(cmd);
    assert!(line.contains("http://"), "no address in {line:?}");
    (server, err, line)
}

/// Spawns `cmd` with its standard error piped and reads that error's first line: the child,
/// the rest of its standard error and that line.
fn spawn_reading_first_line(
    mut cmd: Command,
) -> (KillOnDrop, BufReader<std::process::ChildStderr>, String) {
    let mut child = KillOnDrop(cmd.stderr(Stdio::piped()).spawn().unwrap());
    let mut err = BufReader::new(child.0.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    (child, err, line)
}

/// Sends `request` (a whole request head) on a new connection and returns the status line and
/// the body, read to the `Content-Length` the answer announces (none for a `HEAD`).
fn ask_raw(addr: &str, request: &str) -> (String, String) {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    c.write_all(request.as_bytes()).unwrap();
    let mut r = BufReader::new(c);
    let mut status = String::new();
    r.read_line(&mut status).unwrap();
    let mut len = 0usize;
    loop {
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        if line.trim().is_empty() {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap();
        }
    }
    if request.starts_with("HEAD ") {
        len = 0;
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body).unwrap();
    (
        status.trim_end().to_string(),
        String::from_utf8_lossy(&body).into_owned(),
    )
}

/// What the real server answers for what it refuses: a file whose size is 0 but which holds
/// bytes (a file of /proc) is 403 with the reason in the body, for `GET`, a range and `HEAD`
/// alike; a symlink to such a file from another root is not followed (404); an empty file is an
/// empty 200. `foresight get` of the refused file said only "HEAD answered 403 Forbidden": a
/// `HEAD` has no body, so the reason never reached the user.
#[test]
fn serve_refuses_a_proc_file_and_get_says_why() {
    if std::fs::metadata("/proc/self/status").is_err() {
        eprintln!("skipped: no /proc here");
        return;
    }
    let why = "its size is 0 bytes but it holds data";
    // /proc/self is the server's own directory: its files report size 0 and hold bytes.
    let (mut server, addr) = serve_root(std::path::Path::new("/proc/self"));
    let get = "GET /status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    let (status, body) = ask_raw(&addr, get);
    assert_eq!(status, "HTTP/1.1 403 Forbidden", "{body}");
    assert!(body.contains(why), "{body}");
    let ranged = "GET /status HTTP/1.1\r\nHost: x\r\nRange: bytes=0-9\r\nConnection: close\r\n\r\n";
    let (status, body) = ask_raw(&addr, ranged);
    assert_eq!(status, "HTTP/1.1 403 Forbidden", "{body}");
    assert!(body.contains(why), "{body}");
    let head = "HEAD /status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    assert_eq!(ask_raw(&addr, head).0, "HTTP/1.1 403 Forbidden");
    let st = bin()
        .args(["get", &format!("http://{addr}/status")])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&st.stderr);
    assert_eq!(st.status.code(), Some(1), "{err}");
    assert!(err.contains("403 Forbidden") && err.contains(why), "{err}");
    assert!(st.stdout.is_empty());
    terminate(&mut server);

    let (_guard, dir) = scratch("refusals");
    std::os::unix::fs::symlink("/proc/self/status", dir.join("status")).unwrap();
    std::fs::write(dir.join("empty"), b"").unwrap();
    let (mut server, addr) = serve_root(&dir);
    let (status, body) = ask_raw(
        &addr,
        "GET /status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(
        (status.as_str(), body.trim_end()),
        ("HTTP/1.1 404 Not Found", "not found")
    );
    let (status, body) = ask_raw(
        &addr,
        "GET /empty HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!((status.as_str(), body.as_str()), ("HTTP/1.1 200 OK", ""));
    let (status, body) = ask_raw(
        &addr,
        "GET /%2e%2e/etc/passwd HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, "HTTP/1.1 400 Bad Request", "{body}");
    assert!(body.contains("`..`"), "{body}");
    terminate(&mut server);
}

/// A server of one 4 MiB file, `/cut.bin`, with ranges and a strong tag, that answers ranges
/// starting in its first MiB and closes every connection asking for one past it (or for the
/// whole file). Every other path is 404.
fn cutting_server() -> std::net::SocketAddr {
    scripted_server(|head, c| {
        use std::io::Write;
        const LEN: u64 = 4 << 20;
        let text = head.to_ascii_lowercase();
        if text.split_whitespace().nth(1) != Some("/cut.bin") {
            let _ = c.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
            return true;
        }
        let whole = format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {LEN}\r\nAccept-Ranges: bytes\r\n\
             ETag: \"v1\"\r\n\r\n"
        );
        let range = text
            .lines()
            .find_map(|l| l.strip_prefix("range: bytes="))
            .and_then(|r| r.trim().split_once('-'))
            .map(|(a, b)| (a.parse::<u64>().unwrap(), b.parse::<u64>().unwrap()));
        match range {
            _ if text.starts_with("head ") => {
                let _ = c.write_all(whole.as_bytes());
                true
            }
            Some((a, b)) if a < 1 << 20 => {
                let n = b - a + 1;
                let _ = c.write_all(
                    format!(
                        "HTTP/1.1 206 Partial Content\r\nContent-Length: {n}\r\n\
                         ETag: \"v1\"\r\nContent-Range: bytes {a}-{b}/{LEN}\r\n\r\n"
                    )
                    .as_bytes(),
                );
                let _ = c.write_all(&vec![5u8; n as usize]);
                true
            }
            _ => false,
        }
    })
}

/// A download to standard output that fails keeps the bytes already written there; the error
/// said why the download failed (for ranges, only which range gave up) and not that standard
/// output held the first part of the file, nor how much of it.
#[test]
fn a_failed_get_to_standard_output_says_how_many_bytes_it_wrote() {
    let url = format!("http://{}/cut.bin", cutting_server());
    let ranges = ["--alpha", "1", "--readahead", "256KiB"];
    let st = bin().arg("get").arg(&url).args(ranges).output().unwrap();
    let err = String::from_utf8_lossy(&st.stderr);
    assert_eq!(st.status.code(), Some(1), "{err}");
    assert_eq!(st.stdout.len(), 1 << 20, "{err}");
    assert!(
        err.contains("the first 1048576 bytes of the file had been written to standard output"),
        "{err}"
    );
}

/// A file of /sys reports a size of a page (4096 bytes) whatever it holds (`0\n`, a line of
/// settings). The server announced that size, its worker found the file shorter, and the answer
/// was 500 "read failed: file shorter than announced" (and `foresight get` said only that a
/// range got 500). Now it is 403 saying why, as for a file of /proc.
#[test]
fn serve_refuses_a_sys_file_whose_size_is_not_what_it_holds() {
    let sys = std::path::Path::new("/sys");
    let Some(name) = [
        "kernel/profiling",
        "kernel/uevent_seqnum",
        "kernel/mm/transparent_hugepage/enabled",
        "power/state",
    ]
    .into_iter()
    .find(|n| {
        let p = sys.join(n);
        match (std::fs::metadata(&p), std::fs::read(&p)) {
            (Ok(m), Ok(bytes)) => m.is_file() && (bytes.len() as u64) < m.len(),
            _ => false,
        }
    }) else {
        eprintln!("skipped: no file of /sys here whose size is not what it holds");
        return;
    };
    let (mut server, addr) = serve_root(sys);
    let (status, body) = ask_raw(
        &addr,
        &format!("GET /{name} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
    );
    assert_eq!(status, "HTTP/1.1 403 Forbidden", "{name}: {body}");
    assert!(
        body.contains("sysfs") && body.contains("need not be what a read gives"),
        "{body}"
    );
    let err = failed(&["get", &format!("http://{addr}/{name}")]);
    assert!(
        err.contains("403 Forbidden") && err.contains("sysfs"),
        "{err}"
    );
    terminate(&mut server);
}

/// A server of one 1 MiB file, `/r.bin`, with ranges and a strong tag, that answers every range
/// request with 500 and a plain-text reason.
fn failing_ranges_server() -> std::net::SocketAddr {
    scripted_server(|head, c| {
        use std::io::Write;
        let text = head.to_ascii_lowercase();
        let answer = if text.split_whitespace().nth(1) != Some("/r.bin") {
            "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_string()
        } else if text.starts_with("head ") {
            "HTTP/1.1 200 OK\r\nContent-Length: 1048576\r\nAccept-Ranges: bytes\r\n\
             ETag: \"v1\"\r\n\r\n"
                .to_string()
        } else {
            let why = "read failed: the disk\u{7} is on fire\n";
            format!(
                "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain; \
                 charset=utf-8\r\nContent-Length: {}\r\n\r\n{why}",
                why.len()
            )
        };
        c.write_all(answer.as_bytes()).is_ok()
    })
}

/// A range request answered with an error status said only the status ("asked for [0, 131072)
/// and got 500 Internal Server Error instead of 206"); the server's reason, in the body, was
/// dropped. It is quoted now, on one line and without control characters.
#[test]
fn a_range_refused_with_an_error_quotes_the_servers_reason() {
    let url = format!("http://{}/r.bin", failing_ranges_server());
    let err = failed(&["get", &url, "--alpha", "1", "--readahead", "256KiB"]);
    assert!(
        err.contains("instead of 206: read failed: the disk is on fire"),
        "{err}"
    );
}

/// The first line of `serve`'s and `proxy`'s standard error, which says what they run with.
fn first_line(args: &[&str]) -> String {
    let mut child = KillOnDrop(bin().args(args).stderr(Stdio::piped()).spawn().unwrap());
    let mut line = String::new();
    BufReader::new(child.0.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    line
}

/// The startup lines said a proxy capped at 8 kbit/s ran at "0.0 Mbit/s each way" (a rate
/// under 0.05 Mbit/s printed as none), and a server with one worker had "1 workers".
#[test]
fn startup_lines_say_the_rate_and_the_workers_as_set() {
    let line = first_line(&[
        "proxy",
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        "127.0.0.1:9",
        "--bandwidth",
        "8kbit",
    ]);
    assert!(
        line.contains("(delay 0s each way, 8.0 kbit/s each way)"),
        "{line}"
    );
    let line = first_line(&[
        "proxy",
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        "127.0.0.1:9",
        "--bandwidth",
        "1Gbit",
    ]);
    assert!(line.contains("1.0 Gbit/s each way"), "{line}");
    let line = first_line(&[
        "serve",
        "--root",
        ".",
        "--addr",
        "127.0.0.1:0",
        "--workers",
        "1",
        "--device-bandwidth",
        "400MB/s",
    ]);
    assert!(line.contains(", 1 worker, "), "{line}");
}

/// A download whose output itself failed (/dev/full, written in place) claimed "the first 11
/// bytes of the file had been written to --out /dev/full": bytes taken into the output's buffer,
/// which never reached it. A failure to write the output says so and claims no count.
#[test]
fn a_get_whose_output_fails_claims_no_bytes_written_there() {
    let (_guard, dir) = scratch("full");
    std::fs::write(dir.join("h.txt"), b"hello world").unwrap();
    let (mut server, addr) = serve_root(&dir);
    let err = failed(&["get", &format!("http://{addr}/h.txt"), "--out", "/dev/full"]);
    assert!(err.contains("writing --out /dev/full"), "{err}");
    assert!(!err.contains("had been written"), "{err}");
    terminate(&mut server);
}

/// A download to an `--out` file cut short by its server said only why it failed (which range
/// gave up), not what became of the bytes received, which standard output's failure says: a user
/// could not tell whether the file held a part of the download. It says now that they went to a
/// temporary file, removed, and that --out was not created or keeps the file it held.
#[test]
fn a_get_cut_short_says_that_out_received_none_of_its_bytes() {
    let url = format!("http://{}/cut.bin", cutting_server());
    let ranges = ["--alpha", "1", "--readahead", "256KiB"];
    let (_guard, dir) = scratch("get-cut");
    let out = dir.join("cut.bin");
    for (before, said) in [(None, "was not created"), (Some(b"old"), "keeps the file")] {
        if let Some(bytes) = before {
            std::fs::write(&out, bytes).unwrap();
        }
        let st = bin()
            .args(["get", &url])
            .args(ranges)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&st.stderr);
        assert_eq!(st.status.code(), Some(1), "{err}");
        let last = err.lines().last().unwrap_or_default();
        for needle in ["1048576 bytes", &out.display().to_string(), said] {
            assert!(last.contains(needle), "should say {needle}: {err}");
        }
        assert_eq!(
            std::fs::read(&out).ok().as_deref(),
            before.map(|b| &b[..]),
            "{err}"
        );
    }
}

/// A port another program listens on was refused as `cannot listen on ADDR: Address already in
/// use`, naming neither the flag nor what to do; `serve --addr` and `proxy --listen` now name
/// their flag and say to choose another port or 0. Exit code 2, as for bad input.
#[test]
fn a_port_in_use_is_refused_naming_the_flag_and_what_to_do() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let (_guard, root) = scratch("port-taken");
    let serve: &[&str] = &["serve", "--root", root.to_str().unwrap(), "--addr", &addr];
    let proxy: &[&str] = &["proxy", "--listen", &addr, "--upstream", "127.0.0.1:1"];
    for (args, flag) in [(serve, "--addr"), (proxy, "--listen")] {
        let st = bin().args(args).output().unwrap();
        let err = String::from_utf8_lossy(&st.stderr);
        assert_eq!(st.status.code(), Some(2), "{args:?}: {err}");
        for needle in [flag, addr.as_str(), "in use", "another port", " 0 "] {
            assert!(err.contains(needle), "{args:?}: should say {needle}: {err}");
        }
    }
}

/// A request that could not connect three times ended the download with `cannot connect to
/// HOST:PORT: ... (gave up after 3 attempts ...)`, naming neither the URL nor the request (the
/// `HEAD`, or which range), where a request that failed otherwise names both.
#[test]
fn a_get_that_cannot_connect_names_the_url_and_the_request() {
    // A port nothing listens on: bound, its number taken, and closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/gone.bin");
    let st = bin().args(["get", &url]).output().unwrap();
    let err = String::from_utf8_lossy(&st.stderr);
    assert_eq!(st.status.code(), Some(1), "{err}");
    let last = err.lines().last().unwrap_or_default();
    for needle in [
        url.as_str(),
        "HEAD",
        "cannot connect",
        "gave up after 3 attempts",
    ] {
        assert!(last.contains(needle), "should say {needle}: {err}");
    }
}

/// A server given no --peak-ratio publishes paper 004's 1.2 as `default`: it said `configured`,
/// where `bandwidth_source` in the same document says `configured` only for a figure given.
#[test]
fn serve_publishes_a_peak_ratio_it_was_not_given_as_the_default() {
    let (_guard, root) = scratch("serve-default-p");
    std::fs::write(root.join("small.txt"), b"small\n").unwrap();
    let given = ["--workers", "1", "--device-bandwidth", "100MB/s"];
    for (more, p, source) in [
        (&[][..], 1.2, "default"),
        (&["--peak-ratio", "1.2"][..], 1.2, "configured"),
        (&["--peak-ratio", "2.5"][..], 2.5, "configured"),
    ] {
        let args: Vec<&str> = given.iter().chain(more).copied().collect();
        let (mut server, addr) = serve_root_with(&root, &args);
        let (_, body) = ask_raw(
            &addr,
            "GET /.well-known/foresight HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        );
        terminate(&mut server);
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["peak_ratio"], p, "{more:?}: {body}");
        assert_eq!(v["peak_ratio_source"], source, "{more:?}: {body}");
    }
}

/// A root with no file long enough to time publishes a bandwidth of 200 MiB/s, `default`, which
/// neither `serve --help` nor the README mentioned (they named `measured` and `configured`): a
/// user saw a figure of unknown origin in `/.well-known/foresight`. The help says now when it is
/// published and what to give instead.
#[test]
fn serve_help_names_the_bandwidth_it_publishes_when_it_cannot_measure() {
    let (_guard, root) = scratch("serve-default-rb");
    std::fs::write(root.join("small.txt"), b"too short to time\n").unwrap();
    let (mut server, addr) = serve_root_with(&root, &["--workers", "1"]);
    let (_, body) = ask_raw(
        &addr,
        "GET /.well-known/foresight HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["bandwidth_source"], "default", "{body}");
    let rb_mib_s = v["avg_bandwidth_bytes_per_s"].as_f64().unwrap() / f64::from(1 << 20);
    terminate(&mut server);
    let help = bin().args(["serve", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout).replace('\n', " ");
    for needle in [
        "`default`".to_string(),
        format!("{rb_mib_s:.0} MiB/s"),
        "--device-bandwidth".to_string(),
    ] {
        assert!(help.contains(&needle), "should say {needle}: {help}");
    }
}

/// `--request-timeout`'s help gave a server that stops answering "4 x this and 1.4 s at most
/// (see below)" to fail a download, where the command's description (and the README) give 4 x
/// the timeout and 0.3 s, 1.4 s only while a fresh file's weak tag is asked for again, and that
/// with the round trips of the HEADs answered meanwhile, so "at most" was not a bound; and
/// "below" the option there is nothing (`-h` shows no description at all).
#[test]
fn get_help_gives_one_bound_for_a_server_that_stops_answering() {
    for flag in ["-h", "--help"] {
        let out = bin().args(["get", flag]).output().unwrap();
        assert!(out.status.success());
        let help = String::from_utf8_lossy(&out.stdout).replace('\n', " ");
        let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
        let option = help
            .split("--request-timeout <DURATION>")
            .nth(1)
            .and_then(|rest| rest.split("--json").next())
            .expect("the --request-timeout option");
        for needle in [
            "4 x this and 0.3 s",
            "the round trips of the HEADs answered",
        ] {
            assert!(
                option.contains(needle),
                "get {flag}: should say {needle}: {option}"
            );
        }
        for wrong in ["1.4 s at most", "see below"] {
            assert!(
                !option.contains(wrong),
                "get {flag}: says {wrong}: {option}"
            );
        }
        if flag == "--help" {
            assert!(
                help.contains("within 4 x --request-timeout plus 0.3 s"),
                "get --help: the description's bound: {help}"
            );
        }
    }
}

/// An `--out` file in a directory that does not exist was refused with the system's words alone
/// (`creating a temporary file in DIR for --out FILE: No such file or directory`), not saying
/// what to do; and `net-soak --duration 0s` and `proxy --idle-timeout 0s` were refused quoting
/// `0ns`, a value nobody wrote.
#[test]
fn refusals_say_what_to_fix_in_the_users_terms() {
    let (_guard, dir) = scratch("out-no-dir");
    let out = dir.join("missing/x.bin");
    let st = bin()
        .args(["get", "http://127.0.0.1:1/x.bin", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&st.stderr);
    assert_eq!(st.status.code(), Some(2), "{err}");
    for needle in ["--out", &out.display().to_string(), "create it first"] {
        assert!(err.contains(needle), "should say {needle}: {err}");
    }
    let st = bin()
        .args(["net-soak", "--duration", "0s"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&st.stderr);
    assert_eq!(st.status.code(), Some(2), "{err}");
    assert!(err.contains("--duration: 0s checks nothing"), "{err}");
    let st = bin()
        .args([
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            "127.0.0.1:1",
        ])
        .args(["--idle-timeout", "0s"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&st.stderr);
    assert_eq!(st.status.code(), Some(2), "{err}");
    assert!(err.contains("--idle-timeout: 0s would cut"), "{err}");
}

/// An `--out` that is a directory where the file would go (`--out d` with `d/a.bin` a
/// directory) was refused as "opening --out d/a.bin: Is a directory", and one in a directory
/// this user may not write as "creating a temporary file in DIR for --out FILE: Permission
/// denied": the system's words, not what to do. Both now say what to give instead. As root the
/// second runs as `nobody` through `setpriv`.
#[test]
fn an_out_that_cannot_be_written_says_what_to_give_instead() {
    use std::os::unix::fs::PermissionsExt;
    let (_guard, dir) = scratch("out-unwritable");
    std::fs::create_dir_all(dir.join("d/a.bin")).unwrap();
    let out_dir = dir.join("d");
    let err = refused(&[
        std::ffi::OsStr::new("get"),
        "http://127.0.0.1:1/a.bin".as_ref(),
        "--out".as_ref(),
        out_dir.as_os_str(),
    ]);
    assert!(
        err.contains("is a directory") && err.contains("give another --out"),
        "{err}"
    );
    let ro = dir.join("ro");
    std::fs::create_dir(&ro).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
    let privileged = std::fs::File::create(ro.join("probe")).is_ok();
    let _ = std::fs::remove_file(ro.join("probe"));
    let Some(mut cmd) = common::unprivileged(privileged) else {
        return;
    };
    let st = cmd
        .args(["get", "http://127.0.0.1:1/a.bin", "--out"])
        .arg(ro.join("a.bin"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&st.stderr);
    assert_eq!(st.status.code(), Some(2), "{err}");
    assert!(
        err.contains("Permission denied") && err.contains("a directory this user can write"),
        "{err}"
    );
}

/// `foresight get URL` with standard output on a terminal wrote the file's bytes there whatever
/// they were: a binary file's escape sequences reached the terminal (and could leave it unusable).
/// Binary data (a NUL byte) is refused now, exit 2, saying to give --out or redirect; text still
/// goes to the terminal. The terminal is `script`'s pseudo-terminal (skipped where it is missing).
#[test]
fn get_refuses_to_write_binary_data_to_a_terminal() {
    if !Command::new("script")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        eprintln!("skipped: no `script` to give the download a terminal");
        return;
    }
    let (_guard, root) = scratch("get-tty");
    let mut binary = b"\x1b[31mred".to_vec();
    binary.extend(vec![0u8; 64 << 10]);
    std::fs::write(root.join("bin.dat"), &binary).unwrap();
    std::fs::write(root.join("text.txt"), b"plain text line\n").unwrap();
    let (mut server, addr) = serve_root(&root);
    let on_terminal = |path: &str| {
        let command = format!(
            "'{}' get http://{addr}/{path}",
            env!("CARGO_BIN_EXE_foresight")
        );
        let out = Command::new("script")
            .args(["-qec", &command, "/dev/null"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (code, shown) = on_terminal("bin.dat");
    assert_eq!(code, Some(2), "{shown}");
    assert!(
        !shown.contains("\x1b[31m"),
        "the binary bytes reached the terminal: {shown:?}"
    );
    for needle in ["binary data", "--out FILE"] {
        assert!(shown.contains(needle), "should say {needle}: {shown:?}");
    }
    let (code, shown) = on_terminal("text.txt");
    assert_eq!(code, Some(0), "{shown}");
    assert!(shown.contains("plain text line"), "{shown:?}");
    terminate(&mut server);
}

/// A FIFO named `pipe` made in `dir` (by `mkfifo`).
fn fifo_in(dir: &std::path::Path) -> std::path::PathBuf {
    let fifo = dir.join("pipe");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success(), "mkfifo {}: {made}", fifo.display());
    fifo
}

/// A FIFO given as --out whose reader takes 100 bytes of a 5 MB file and leaves: the download
/// failed to deliver, yet `get` exited 0 without a word, as if standard output's reader had left
/// (`get URL | head`), which is the only output whose reader may end a download quietly. Now it
/// fails (exit 1) naming --out, that its reader went away, and how many bytes reached it.
#[test]
fn a_get_to_a_fifo_whose_reader_leaves_early_fails_saying_how_much_it_took() {
    use std::io::Read;
    let (_guard, dir) = scratch("get-fifo-leaves");
    let data: Vec<u8> = (0..5_000_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(dir.join("big.bin"), &data).unwrap();
    let (mut server, addr) = serve_root(&dir);
    let fifo = fifo_in(&dir);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut first = [0u8; 100];
            std::fs::File::open(fifo)
                .unwrap()
                .read_exact(&mut first)
                .unwrap();
            first
        })
    };
    let err = failed(&[
        "get",
        &format!("http://{addr}/big.bin"),
        "--out",
        fifo.to_str().unwrap(),
    ]);
    assert_eq!(reader.join().unwrap()[..], data[..100]);
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.contains(&format!("--out {}", fifo.display()))
            && last.contains("its reader went away")
            && last.contains("bytes of the file had reached"),
        "{err}"
    );
    terminate(&mut server);
}

/// A download to standard output on a full device (/dev/full here; a full disk alike) failed
/// with "writing standard output: No space left on device" and no word of what the output
/// holds, where the same failure at `--out` says how many bytes reached it. Standard output is
/// now counted below the command's buffer, as an `--out` device is.
#[test]
fn a_get_to_a_full_standard_output_says_how_much_it_took() {
    if !std::path::Path::new("/dev/full").exists() {
        return;
    }
    let (_guard, dir) = scratch("get-stdout-full");
    std::fs::write(dir.join("f.bin"), vec![7u8; 300_000]).unwrap();
    let (mut server, addr) = serve_root(&dir);
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full: a Linux device that is always full");
    let out = bin()
        .args(["get", &format!("http://{addr}/f.bin")])
        .stdout(full)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("writing standard output")
            && err.contains("0 bytes of the file had reached standard output"),
        "{err}"
    );
    terminate(&mut server);
}

/// `--out` a symbolic link whose target does not exist yet (`ln -s sub/target.bin link.bin`):
/// the download replaced the link by a regular file, where the code meant a link to keep pointing
/// where it did (its target could not be canonicalized, and the link's own path was taken). The
/// target is created now, taken from the link's directory, through a chain of links too, and the
/// links are kept; a loop of links is refused (exit 2) naming --out.
#[test]
fn a_get_to_a_dangling_symlink_creates_its_target_and_keeps_the_link() {
    let (_guard, dir) = scratch("get-dangling");
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let data: Vec<u8> = (0..70_000u32).map(|i| (i % 253) as u8).collect();
    std::fs::write(root.join("d.bin"), &data).unwrap();
    let (mut server, addr) = serve_root(&root);
    let url = format!("http://{addr}/d.bin");
    let sub = dir.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    let link = dir.join("link.bin");
    std::os::unix::fs::symlink("sub/target.bin", &link).unwrap();
    // A link to that link, from another directory: each relative target is the link's own.
    let chained = sub.join("chain.bin");
    std::os::unix::fs::symlink("../link.bin", &chained).unwrap();
    for (out, target) in [
        (&link, sub.join("target.bin")),
        (&chained, sub.join("target.bin")),
    ] {
        let _ = std::fs::remove_file(&target);
        get_to(&url, out);
        let kind = std::fs::symlink_metadata(out).unwrap().file_type();
        assert!(kind.is_symlink(), "{} was replaced", out.display());
        assert!(
            std::fs::read(&target).unwrap() == data,
            "{} did not get the download",
            target.display()
        );
    }
    assert_eq!(
        std::fs::read_link(&link).unwrap(),
        std::path::Path::new("sub/target.bin")
    );
    let (a, b) = (dir.join("loop-a"), dir.join("loop-b"));
    std::os::unix::fs::symlink(&b, &a).unwrap();
    std::os::unix::fs::symlink(&a, &b).unwrap();
    let err = refused(&["get", &url, "--out", a.to_str().unwrap()]);
    assert!(
        err.contains(&format!("--out {}", a.display())) && err.contains("symbolic link"),
        "{err}"
    );
    terminate(&mut server);
}

/// A server stopped by SIGTERM while a client read a large file slowly cut that response short
/// when its 10 s grace period ran out, and said only "stopped", exit 0: the operator could not
/// tell a clean stop from one that cut downloads short. Its last line now says how many
/// responses were cut short (exit 0 still: the stop was asked for, as --help says). Takes the
/// grace period, 10 s.
#[test]
fn serve_says_how_many_responses_its_grace_period_cut_short() {
    use std::io::{Read, Write};
    let (_guard, dir) = scratch("serve-cut");
    // Sparse: 256 MiB of zeros that take no disk, more than any socket buffers hold.
    std::fs::File::create(dir.join("huge.bin"))
        .unwrap()
        .set_len(256 << 20)
        .unwrap();
    let (mut server, mut err, line) = start_serve(
        bin(),
        &dir,
        &["--workers", "2", "--device-bandwidth", "400MB/s"],
    );
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    let said = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = err.read_to_string(&mut text);
        text
    });
    // A reader that takes the answer's first bytes and then nothing: its response stays under
    // way until the grace period ends it.
    let mut slow = std::net::TcpStream::connect(&addr).unwrap();
    slow.write_all(b"GET /huge.bin HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let mut first = [0u8; 12];
    slow.read_exact(&mut first).unwrap();
    assert_eq!(&first, b"HTTP/1.1 200");
    let status = terminate(&mut server);
    let said = said.join().unwrap();
    assert!(status.success(), "{status}: {said}");
    let last = said.lines().last().unwrap_or_default();
    assert!(
        last.contains("stopped") && last.contains("1 response") && last.contains("cut short"),
        "{said}"
    );
    drop(slow);
}

/// `--out /dev/stdout` with standard output sent to a file led, through the link, to that file,
/// which was then replaced by a temporary file renamed over it: what the shell had written there
/// was gone, `>>` acted as `>`, and the shell went on writing to a file in no directory. The file
/// standard output is open on is now written through standard output, where it stands.
#[test]
fn an_out_that_is_the_file_standard_output_is_sent_to_is_written_through_it() {
    use std::io::Write as _;
    let (_guard, dir) = scratch("stdout-file");
    std::fs::write(dir.join("h.txt"), b"hello\n").unwrap();
    let (mut server, addr) = serve_root(&dir);
    let url = format!("http://{addr}/h.txt");
    for out in ["/dev/stdout", "/proc/self/fd/1"] {
        let log = dir.join("log.txt");
        std::fs::write(&log, b"start\n").unwrap();
        let append = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        let st = bin()
            .args(["get", &url, "--out", out])
            .stdout(append.try_clone().unwrap())
            .output()
            .unwrap();
        assert!(
            st.status.success(),
            "{out}: {}",
            String::from_utf8_lossy(&st.stderr)
        );
        // The shell's own descriptor still reaches the file that holds it all.
        writeln!(&append, "end").unwrap();
        assert_eq!(
            std::fs::read_to_string(&log).unwrap(),
            "start\nhello\nend\n",
            "--out {out}"
        );
        let leftovers: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("partial"))
            .collect();
        assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
    }
    terminate(&mut server);
}

/// A FIFO given as --out that nothing reads made `get` wait in its opening without a word. It
/// says now that it waits for a reader, and goes on once one comes.
#[test]
fn a_get_to_a_fifo_nothing_reads_says_it_waits_for_a_reader() {
    let (_guard, dir) = scratch("fifo-wait");
    std::fs::write(dir.join("h.txt"), b"hello\n").unwrap();
    let (mut server, addr) = serve_root(&dir);
    let fifo = fifo_in(&dir);
    let child = bin()
        .args(["get", &format!("http://{addr}/h.txt"), "--out"])
        .arg(&fifo)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = KillOnDrop(child);
    let mut err = BufReader::new(child.0.stderr.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = err.read_line(&mut line);
        let _ = tx.send(line);
    });
    // Read on a thread: a `get` that waits without a word would hold the test here for good.
    let line = rx.recv_timeout(std::time::Duration::from_secs(20));
    let got = std::fs::read(&fifo).unwrap();
    let line = line.expect("nothing said on standard error while waiting for the FIFO's reader");
    assert!(
        line.contains("is a FIFO that nothing reads yet: waiting for a reader"),
        "{line}"
    );
    assert_eq!(got, b"hello\n");
    let status = wait_exit(&mut child, 30, "get after its FIFO's reader came");
    assert!(status.success(), "{status}");
    terminate(&mut server);
}
