//! Helpers the CLI's integration tests share.
//!
//! Tests of a refusal that depends on file permissions (a directory this user may not write or
//! search) need a user those permissions bind; root passes them all, so as root the binary runs as
//! `nobody` through `setpriv`.

use std::process::Command;

/// The binary as a user that file permissions bind: as it is when `privileged` is false (the test
/// could not get past a permission), else as `nobody` through `setpriv`, or `None` (with a note:
/// the test is skipped) where `setpriv` is not there.
pub fn unprivileged(privileged: bool) -> Option<Command> {
    if !privileged {
        return Some(Command::new(env!("CARGO_BIN_EXE_foresight")));
    }
    let setpriv = Command::new("setpriv")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !setpriv {
        eprintln!("note: running as a privileged user without setpriv; skipped");
        return None;
    }
    let mut c = Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_foresight"));
    Some(c)
}

/// The binary run by bash after `ulimit {limit}` (bash's words, e.g. `-n 256`, `-Sn 256`); a
/// limit bash may not set (a hard one above the one it has) leaves the limit it has.
pub fn under_ulimit(limit: &str) -> Command {
    let mut c = Command::new("bash");
    c.arg("-c")
        .arg(format!("ulimit {limit}; exec \"$@\""))
        .arg("bash")
        .arg(env!("CARGO_BIN_EXE_foresight"));
    c
}

/// The hard limit on open files the tests run under (`ulimit -Hn`); `None` when it is
/// `unlimited` or cannot be read.
pub fn hard_open_files_limit() -> Option<u64> {
    let out = Command::new("bash")
        .args(["-c", "ulimit -Hn"])
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}
