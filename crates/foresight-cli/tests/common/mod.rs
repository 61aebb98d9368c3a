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
