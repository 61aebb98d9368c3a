//! What the unit tests share for files on disk: a directory of a test's own under the system's
//! temporary directory, held by a guard ([`tempfile::TempDir`]) that removes it, with everything
//! in it, when dropped, so also when the test fails and unwinds. Before, each test removed its
//! directory at the end of its body, and a failing test left it behind.

use std::path::PathBuf;

/// A new directory named after `name` (`foresight-NAME-` and a random suffix, so that tests
/// running at once never share one), removed when the guard is dropped.
pub(crate) fn temp_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("foresight-{name}-"))
        .tempdir()
        .expect("making a temporary directory")
}

/// A file `f` holding `bytes` in a new [`temp_dir`] named after `name`: the directory's guard
/// (the file goes with it) and the file's path.
pub(crate) fn temp_file(name: &str, bytes: &[u8]) -> (tempfile::TempDir, PathBuf) {
    let dir = temp_dir(name);
    let path = dir.path().join("f");
    std::fs::write(&path, bytes).expect("writing a temporary file");
    (dir, path)
}
