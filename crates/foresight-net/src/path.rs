//! Mapping a request path to a file under the served root, refusing every way out of it.
//!
//! The path is percent-decoded first, so `%2e%2e` is caught as `..`. A `..` segment, a NUL byte
//! or a broken escape is a bad request (400): no honest client sends one. Leading and doubled
//! slashes only separate segments, so an "absolute" path such as `//etc/passwd` names
//! `ROOT/etc/passwd`; a trailing slash (or `/.`) names a directory, which is not served (404),
//! even when the name before it is a file's. Finally the candidate is canonicalized (which follows
//! symlinks) and must still lie under the canonical root and be a regular file; a symlink pointing
//! out of the root is answered like a missing file (404), so the server does not reveal what lies
//! outside.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Why a request path does not name a servable file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathError {
    /// The path is malformed or tries to climb out of the root: 400.
    BadRequest(String),
    /// No regular file under the root has this name: 404.
    NotFound,
}

/// Percent-decodes a URL path. `None` on a `%` not followed by two hex digits.
pub fn percent_decode(path: &str) -> Option<Vec<u8>> {
    let b = path.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = |c: u8| (c as char).to_digit(16);
            let hi = hex(*b.get(i + 1)?)?;
            let lo = hex(*b.get(i + 2)?)?;
            out.push((hi * 16 + lo) as u8);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Some(out)
}

/// The file `uri_path` (the path part of the request target, still percent-encoded) names under
/// `root`, which must already be canonical.
pub fn resolve(root: &Path, uri_path: &str) -> Result<PathBuf, PathError> {
    if !uri_path.starts_with('/') {
        return Err(PathError::BadRequest(
            "the request target must be an absolute path".into(),
        ));
    }
    let decoded = percent_decode(uri_path)
        .ok_or_else(|| PathError::BadRequest("broken percent escape in the path".into()))?;
    if decoded.contains(&0) {
        return Err(PathError::BadRequest("NUL byte in the path".into()));
    }
    let mut candidate = root.to_path_buf();
    for seg in decoded.split(|b| *b == b'/') {
        match seg {
            b"" | b"." => {}
            b".." => return Err(PathError::BadRequest("`..` is not allowed in paths".into())),
            s => candidate.push(OsStr::from_bytes(s)),
        }
    }
    // A path whose last segment is empty or `.` names a directory, which is never served; the
    // loop above dropped that segment, and would have `/f.bin/` serve the file `f.bin`.
    let last = decoded.rsplit(|b| *b == b'/').next().unwrap_or_default();
    if last.is_empty() || last == b"." {
        return Err(PathError::NotFound);
    }
    let real = candidate.canonicalize().map_err(|_| PathError::NotFound)?;
    if !real.starts_with(root) {
        return Err(PathError::NotFound);
    }
    match std::fs::metadata(&real) {
        Ok(m) if m.is_file() => Ok(real),
        _ => Err(PathError::NotFound),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoding_handles_escapes_and_refuses_broken_ones() {
        assert_eq!(percent_decode("/a%20b").unwrap(), b"/a b");
        assert_eq!(percent_decode("/%2e%2E").unwrap(), b"/..");
        assert_eq!(percent_decode("/%2"), None);
        assert_eq!(percent_decode("/%zz"), None);
    }

    #[test]
    fn escapes_from_the_root_are_refused() {
        let dir = std::env::temp_dir().join(format!("foresight-path-{}", std::process::id()));
        let root = dir.join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/f.bin"), b"x").unwrap();
        std::fs::write(dir.join("secret"), b"s").unwrap();
        let _ = std::fs::remove_file(root.join("link"));
        std::os::unix::fs::symlink(dir.join("secret"), root.join("link")).unwrap();
        let root = root.canonicalize().unwrap();
        assert!(resolve(&root, "/sub/f.bin").is_ok());
        assert!(resolve(&root, "//sub//./f.bin").is_ok());
        assert!(resolve(&root, "/sub%2ff.bin").is_ok());
        for bad in [
            "/../secret",
            "/sub/%2e%2e/%2e%2e/secret",
            "/%2E%2E/secret",
            "/a%00b",
            "/%",
            "/sub/../",
            "/../.",
        ] {
            assert!(
                matches!(resolve(&root, bad), Err(PathError::BadRequest(_))),
                "{bad}"
            );
        }
        assert_eq!(resolve(&root, "/link"), Err(PathError::NotFound));
        assert_eq!(resolve(&root, "/sub"), Err(PathError::NotFound));
        // A trailing slash names a directory, even when the name before it is a file's.
        for dir_form in ["/sub/f.bin/", "/sub/f.bin/.", "/sub/f.bin%2f", "/sub/", "/"] {
            assert_eq!(
                resolve(&root, dir_form),
                Err(PathError::NotFound),
                "{dir_form}"
            );
        }
        assert_eq!(resolve(&root, "/etc/passwd"), Err(PathError::NotFound));
        assert!(matches!(
            resolve(&root, "sub/f.bin"),
            Err(PathError::BadRequest(_))
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 512, ..Default::default() })]

        /// Whatever the request path, built from the pieces escapes are made of (dot segments,
        /// encoded dots and slashes, broken escapes, NULs, a symlink out of the root, a file
        /// beside the root), `resolve` never panics, and what it accepts is a regular file under
        /// the root. proptest prints the path that breaks it.
        #[test]
        fn no_path_resolves_outside_the_root(
            pieces in proptest::collection::vec(
                proptest::sample::select(vec![
                    "/", ".", "..", "%2e", "%2E", "%2f", "%2F", "%", "%2", "%00", "%zz", "sub",
                    "f.bin", "link", "secret", "root", "//", "\\", "%5c", "\u{e9}", "%c3%a9",
                ]),
                0..10,
            )
        ) {
            let dir = std::env::temp_dir().join(format!("foresight-path-prop-{}", std::process::id()));
            let root = dir.join("root");
            std::fs::create_dir_all(root.join("sub")).unwrap();
            std::fs::write(root.join("sub/f.bin"), b"x").unwrap();
            std::fs::write(dir.join("secret"), b"s").unwrap();
            let _ = std::os::unix::fs::symlink(dir.join("secret"), root.join("link"));
            let root = root.canonicalize().unwrap();
            let path: String = pieces.concat();
            let got = resolve(&root, &path);
            let inside = got.as_ref().map_or(true, |f| f.starts_with(&root) && f.is_file());
            std::fs::remove_dir_all(&dir).unwrap();
            proptest::prop_assert!(inside, "{path} -> {got:?}");
        }
    }
}
