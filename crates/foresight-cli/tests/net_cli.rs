//! `foresight serve`, `get` and `proxy` end to end through the binary: bad arguments exit 2 with a
//! message naming the argument, a download through the real processes is byte-identical, and
//! SIGTERM stops the server cleanly.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_foresight"))
}

#[test]
fn bad_network_arguments_exit_2_and_name_the_argument() {
    for (args, needle) in [
        (
            vec!["get", "--alpha", "0", "http://127.0.0.1:1/x"],
            "--alpha",
        ),
        (vec!["get", "ftp://x/y"], "http://"),
        (
            vec!["get", "http://127.0.0.1:1/x", "--readahead", "1KiB"],
            "--readahead",
        ),
        (
            vec!["serve", "--root", "/nonexistent-foresight-root"],
            "--root",
        ),
        (vec!["serve", "--root", ".", "--workers", "0"], "--workers"),
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
        (vec!["net-soak", "--clients", "0"], "--clients"),
    ] {
        let out = bin().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
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

#[test]
fn serve_get_and_sigterm_through_the_binary() {
    let dir = std::env::temp_dir().join(format!("foresight-cli-net-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let data: Vec<u8> = (0..3_000_017u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 11) as u8)
        .collect();
    std::fs::write(dir.join("d.bin"), &data).unwrap();
    let mut server = bin()
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
    let mut err = BufReader::new(server.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    let out = dir.join("out.bin");
    let st = bin()
        .args([
            "get",
            &format!("http://{addr}/d.bin"),
            "--out",
            out.to_str().unwrap(),
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&st.stdout).unwrap();
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
    // --out naming an existing directory puts the file in it under the URL's name; a failed
    // download leaves no file behind.
    let into = dir.join("into");
    std::fs::create_dir_all(&into).unwrap();
    let st = bin()
        .args(["get", &format!("http://{addr}/d.bin"), "--out"])
        .arg(&into)
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    assert!(std::fs::read(into.join("d.bin")).unwrap() == data);
    let missing = into.join("missing.bin");
    let st = bin()
        .args(["get", &format!("http://{addr}/missing.bin"), "--out"])
        .arg(&missing)
        .output()
        .unwrap();
    assert!(!st.status.success());
    assert!(String::from_utf8_lossy(&st.stderr).contains("404"));
    assert!(!missing.exists(), "a failed download left a file");
    let killed = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = server.wait().unwrap();
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(&mut err, &mut rest);
    assert!(status.success(), "{status}: {rest}");
    assert!(rest.contains("stopped"), "{rest}");
    std::fs::remove_dir_all(&dir).unwrap();
}
