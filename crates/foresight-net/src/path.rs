//! Mapping a request path to a file under the served root, refusing every way out of it.
//!
//! The path is split at its slashes and each segment percent-decoded, so `%2e%2e` is caught as
//! `..`. A `..` segment, a NUL byte, an escaped slash (`%2F`, which no file name holds) or a
//! broken escape is a bad request (400): no honest client sends one. Leading and doubled
//! slashes only separate segments, so an "absolute" path such as `//etc/passwd` names
//! `ROOT/etc/passwd`; a trailing slash (or `/.`) names a directory, which is not served (404),
//! even when the name before it is a file's. What is left is a path relative to the root, looked
//! up beneath the root's descriptor ([`foresight_engine::RootDir`]: `openat2` with
//! `RESOLVE_BENEATH`), and it must name a regular file; anything else is answered like a missing
//! file (404), so the server does not reveal what lies outside. A relative symlink is followed
//! while every step of it stays beneath the root; an absolute symlink is refused even when it
//! points inside (it names a place by a path the root does not govern), and so is a relative one
//! that climbs above the root on its way, even back into it. A regular file whose size is 0 but
//! which holds bytes (a file of /proc, served from a root there) is refused (403):
//! an answer is sent by the file's size, and the engine does not read such files. So is every
//! regular file of a file system that makes its files' bytes as they are read (procfs, sysfs,
//! debugfs and the like, told by `fstatfs`): their sizes need not be what they hold (sysfs
//! reports a page for a file of a few bytes), and the worker, finding fewer bytes than announced,
//! could only fail the answer. Those whose bytes match their sizes are refused too: each read
//! makes the bytes anew, perhaps others of another length, while the size and modification time
//! that make the tag stay, so nothing read before the answer promises what the worker reads.
//!
//! The check is not a promise about a later open by name, which a symlink swapped in between
//! would redirect: the headers are decided from the metadata of the descriptor the lookup opened,
//! and the worker opens the file again with the same lookup ([`foresight_engine::Engine::open_beneath`]),
//! so every open of a request refuses to leave the root, whenever the names under it change.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use foresight_engine::RootDir;

/// Why a request path does not name a servable file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathError {
    /// The path is malformed or tries to climb out of the root: 400.
    BadRequest(String),
    /// No regular file under the root has this name: 404.
    NotFound,
    /// The lookup failed for a reason other than the name (out of descriptors, an I/O error):
    /// 500, with the reason.
    Failed(String),
    /// A regular file the server cannot send as it is: its size is 0 but it holds bytes (a file
    /// of /proc), and an answer is sent by the file's size: 403, with the reason.
    Unservable(String),
}

/// Why a regular file the server's user may not read is refused (403), naming no path on the
/// server's disk.
pub const NOT_READABLE: &str =
    "this file is not served: the server may not read it (permission denied)";

/// A request path that names a regular file beneath the root.
#[derive(Debug)]
pub struct ServedFile {
    /// The file's path relative to the root, to open with [`foresight_engine::Engine::open_beneath`].
    pub rel: PathBuf,
    /// The file's metadata, taken from the descriptor the lookup opened.
    pub metadata: std::fs::Metadata,
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

/// The file `uri_path` (the path part of the request target, still percent-encoded) names beneath
/// `root`.
pub fn resolve(root: &RootDir, uri_path: &str) -> Result<ServedFile, PathError> {
    if !uri_path.starts_with('/') {
        return Err(PathError::BadRequest(
            "the request target must be an absolute path".into(),
        ));
    }
    // Split on the slashes written, then decode each segment: an escaped slash is part of a
    // name, not a separator, and no file name holds one. Decoding first had `a%2Fb` name the
    // file `b` in the directory `a`.
    let mut rel = PathBuf::new();
    let mut last = Vec::new();
    for raw in uri_path.split('/') {
        let seg = percent_decode(raw)
            .ok_or_else(|| PathError::BadRequest("broken percent escape in the path".into()))?;
        if seg.contains(&0) {
            return Err(PathError::BadRequest("NUL byte in the path".into()));
        }
        if seg.contains(&b'/') {
            return Err(PathError::BadRequest(format!(
                "the path segment `{raw}` holds an escaped slash (%2F), which no file name \
                 holds; write `/` to separate directories"
            )));
        }
        match seg.as_slice() {
            b"" | b"." => {}
            b".." => return Err(PathError::BadRequest("`..` is not allowed in paths".into())),
            s => rel.push(OsStr::from_bytes(s)),
        }
        last = seg;
    }
    // A path whose last segment is empty or `.` names a directory, which is never served; the
    // loop above dropped that segment, and would have `/f.bin/` serve the file `f.bin`.
    if last.is_empty() || last == b"." {
        return Err(PathError::NotFound);
    }
    match root.metadata_and_fs_magic(&rel) {
        // The engine refuses such a file when a worker opens it; asked here, before the
        // headers, it is refused rather than answered as an empty file.
        Ok((m, _)) if m.is_file() && m.len() == 0 => {
            match foresight_engine::backend::open_real_beneath(root, &rel, false) {
                Ok(_) => Ok(ServedFile { rel, metadata: m }),
                // The engine's message speaks to a program opening the file; this one to the
                // client asking for it.
                Err(e) if e.kind() == std::io::ErrorKind::Unsupported => {
                    Err(PathError::Unservable(
                        "this file is not served: its size is 0 bytes but it holds data (a \
                         file of /proc, or of another file system that makes a file's bytes as \
                         they are read), and an answer is sent by the file's size"
                            .into(),
                    ))
                }
                // Was 404 through `lookup_error`, while the same file with bytes in it is 403
                // (`NOT_READABLE`) once a worker fails to open it.
                Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                    Err(PathError::Unservable(NOT_READABLE.into()))
                }
                Err(e) => Err(lookup_error(&e)),
            }
        }
        // The engine reads such a file to its end, but the answer's length was announced from
        // its size, and the worker, finding fewer bytes, could only fail the answer (500). A
        // file whose bytes match its size (an ACPI table, a device's configuration space) is
        // refused too: a read made here to check would promise nothing of the worker's read, nor
        // of the next request's, since each read makes the bytes anew and may make others of
        // another length (a configuration space is shorter for an unprivileged reader, and its
        // status registers move), while the size and modification time, of which the tag that
        // lets a client join ranges is made, stay as they were. Ranges of two reads would be
        // joined under one tag without a word.
        Ok((m, fs)) if m.is_file() && generated_fs(fs).is_some() => {
            Err(PathError::Unservable(format!(
                "this file is not served: it lies on {}, a file system that makes a file's bytes \
                 anew at each read, so its size ({} bytes) need not be what a read gives (a \
                 text file of /sys reports a page and holds a line) and its bytes may change \
                 between reads while its size and modification time stay; an answer is sent by \
                 the file's size, and its ranges are joined by a tag made of those figures, so \
                 neither can be promised; copy the file to a regular file system and serve the \
                 copy",
                generated_fs(fs).unwrap_or_default(),
                m.len()
            )))
        }
        Ok((m, _)) if m.is_file() => Ok(ServedFile { rel, metadata: m }),
        Ok(_) => Err(PathError::NotFound),
        Err(e) => Err(lookup_error(&e)),
    }
}

/// The name of the file system with magic number `magic` (`statfs`'s `f_type`, as in Linux's
/// `linux/magic.h`) if its files' sizes are not what they hold: their bytes are made as they are
/// read, and a size is 0 (procfs) or a page (sysfs: `4096` for a file of a few bytes), whatever
/// the text is.
fn generated_fs(magic: i64) -> Option<&'static str> {
    const GENERATED: [(i64, &str); 8] = [
        (0x9fa0, "procfs"),
        (0x6265_6572, "sysfs"),
        (0x6462_6720, "debugfs"),
        (0x7472_6163, "tracefs"),
        (0x7363_6673, "securityfs"),
        (0x6265_6570, "configfs"),
        (0x0027_e0eb, "cgroupfs"),
        (0x6367_7270, "cgroup2fs"),
    ];
    GENERATED
        .iter()
        .find(|(m, _)| *m == magic)
        .map(|(_, name)| *name)
}

/// How a failed lookup (or open) beneath the root is answered: a name that leads nowhere, or out,
/// is a missing file; running out of descriptors or memory, or an I/O error, is the server's fault.
pub fn lookup_error(e: &std::io::Error) -> PathError {
    match e.raw_os_error() {
        Some(
            libc::EMFILE | libc::ENFILE | libc::ENOMEM | libc::EIO | libc::EAGAIN | libc::EINTR,
        ) => PathError::Failed(e.to_string()),
        _ => PathError::NotFound,
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
        // Removed, with everything in it, when the guard drops, also if an assertion fails.
        let guard = tempfile::Builder::new()
            .prefix("foresight-path-")
            .tempdir()
            .unwrap();
        let dir = guard.path();
        let root = dir.join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/f.bin"), b"x").unwrap();
        std::fs::write(dir.join("secret"), b"s").unwrap();
        std::os::unix::fs::symlink(dir.join("secret"), root.join("link")).unwrap();
        std::os::unix::fs::symlink("sub/f.bin", root.join("rel-inside")).unwrap();
        std::os::unix::fs::symlink(root.join("sub/f.bin"), root.join("abs-inside")).unwrap();
        let root = RootDir::open(&root.canonicalize().unwrap()).unwrap();
        let root = &root;
        assert!(resolve(root, "/sub/f.bin").is_ok());
        assert!(resolve(root, "//sub//./f.bin").is_ok());
        // An escaped slash is part of a segment, not a separator: it named `sub/f.bin`.
        assert!(matches!(
            resolve(root, "/sub%2ff.bin"),
            Err(PathError::BadRequest(m)) if m.contains("%2F")
        ));
        // A relative symlink that stays beneath the root is followed; an absolute one is not,
        // even to a file inside.
        let found = resolve(root, "/rel-inside").unwrap();
        assert_eq!(found.rel, PathBuf::from("rel-inside"));
        assert!(found.metadata.is_file());
        assert_eq!(
            resolve(root, "/abs-inside").unwrap_err(),
            PathError::NotFound
        );
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
                matches!(resolve(root, bad), Err(PathError::BadRequest(_))),
                "{bad}"
            );
        }
        assert_eq!(resolve(root, "/link").unwrap_err(), PathError::NotFound);
        assert_eq!(resolve(root, "/sub").unwrap_err(), PathError::NotFound);
        // A trailing slash names a directory, even when the name before it is a file's.
        for dir_form in ["/sub/f.bin/", "/sub/f.bin/.", "/sub/", "/"] {
            assert_eq!(
                resolve(root, dir_form).unwrap_err(),
                PathError::NotFound,
                "{dir_form}"
            );
        }
        assert_eq!(
            resolve(root, "/etc/passwd").unwrap_err(),
            PathError::NotFound
        );
        assert!(matches!(
            resolve(root, "sub/f.bin"),
            Err(PathError::BadRequest(_))
        ));
    }

    /// A file whose size is 0 but which holds bytes is refused (403) with the reason, where it
    /// was taken for an empty file and answered 200 with no body; an empty file is still served.
    #[test]
    fn a_file_of_size_0_that_holds_bytes_is_refused_and_an_empty_one_served() {
        if std::fs::metadata("/proc/self/status").is_err() {
            eprintln!("skipped: no /proc here");
            return;
        }
        let proc_root = RootDir::open(std::path::Path::new("/proc/self")).unwrap();
        // Matched by its text, so that the test also builds on the code before the variant.
        let got = resolve(&proc_root, "/status");
        assert!(
            got.as_ref().is_err_and(|e| format!("{e:?}").starts_with(
                "Unservable(\"this file is not served: its size is 0 bytes but it holds data"
            )),
            "/proc/self/status: {got:?}"
        );
        let guard = tempfile::Builder::new()
            .prefix("foresight-path-empty-")
            .tempdir()
            .unwrap();
        std::fs::write(guard.path().join("empty"), b"").unwrap();
        let root = RootDir::open(&guard.path().canonicalize().unwrap()).unwrap();
        assert_eq!(resolve(&root, "/empty").unwrap().metadata.len(), 0);
    }

    /// A file of /sys reports a page (4096 bytes) whatever it holds; it was served, announced
    /// at that length, and its answer failed with 500 when the worker found it shorter. It is
    /// refused (403) with the reason, as is any file of the file systems that make their bytes as
    /// they are read; a regular file elsewhere is not.
    #[test]
    fn a_file_of_sys_is_refused_naming_its_file_system() {
        let Ok(sys) = RootDir::open(std::path::Path::new("/sys/kernel")) else {
            eprintln!("skipped: no /sys here");
            return;
        };
        let Some(name) = [
            "profiling",
            "uevent_seqnum",
            "mm/transparent_hugepage/enabled",
        ]
        .into_iter()
        .find(|n| std::path::Path::new("/sys/kernel").join(n).is_file()) else {
            eprintln!("skipped: none of the files looked for is in /sys/kernel");
            return;
        };
        let got = resolve(&sys, &format!("/{name}"));
        assert!(
            got.as_ref()
                .is_err_and(|e| matches!(e, PathError::Unservable(why)
                if why.contains("it lies on sysfs") && why.contains("(4096 bytes)"))),
            "/sys/kernel/{name}: {got:?}"
        );
        assert_eq!(generated_fs(0x0102_1994), None, "tmpfs");
    }

    /// A file of /sys whose bytes match its size (a device's configuration space, an ACPI
    /// table) is refused as the others are, and the reason given is true of it: it said the
    /// size "is not what it holds", false of this file, and gave no way to serve it. Now it says
    /// why no length can be promised (each read makes the bytes anew, under an unchanged tag)
    /// and to serve a copy.
    #[test]
    fn a_file_of_sys_whose_bytes_match_its_size_is_refused_saying_why() {
        let found = std::fs::read_dir("/sys/bus/pci/devices")
            .into_iter()
            .flatten()
            .flatten()
            .map(|d| d.path().join("config"))
            .chain([std::path::PathBuf::from("/sys/firmware/acpi/tables/DSDT")])
            .find(|p| match (std::fs::metadata(p), std::fs::read(p)) {
                (Ok(m), Ok(bytes)) => m.is_file() && bytes.len() as u64 == m.len(),
                _ => false,
            });
        let Some(path) = found else {
            eprintln!("skipped: no file of /sys here whose bytes match its size");
            return;
        };
        let (dir, name) = (path.parent().unwrap(), path.file_name().unwrap());
        let root = RootDir::open(dir).unwrap();
        let got = resolve(&root, &format!("/{}", name.to_string_lossy()));
        let len = std::fs::metadata(&path).unwrap().len();
        assert!(
            got.as_ref().is_err_and(|e| matches!(e, PathError::Unservable(why)
                if why.contains("it lies on sysfs")
                    && why.contains(&format!("its size ({len} bytes) need not be what a read gives"))
                    && why.contains("may change between reads")
                    && why.contains("serve the copy")
                    && !why.contains("is not what it holds"))),
            "{}: {got:?}",
            path.display()
        );
        assert_eq!(generated_fs(0xef53), None, "ext4");
    }

    #[test]
    fn lookups_that_lead_nowhere_are_404_and_the_servers_own_failures_are_not() {
        for code in [
            libc::ENOENT,
            libc::ENOTDIR,
            libc::EXDEV,
            libc::ELOOP,
            libc::EACCES,
        ] {
            let e = std::io::Error::from_raw_os_error(code);
            assert_eq!(lookup_error(&e), PathError::NotFound, "{e}");
        }
        for code in [libc::EMFILE, libc::ENFILE, libc::ENOMEM, libc::EIO] {
            let e = std::io::Error::from_raw_os_error(code);
            assert!(matches!(lookup_error(&e), PathError::Failed(_)), "{e}");
        }
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
            let guard = tempfile::Builder::new()
                .prefix("foresight-path-prop-")
                .tempdir()
                .unwrap();
            let dir = guard.path();
            let root = dir.join("root");
            std::fs::create_dir_all(root.join("sub")).unwrap();
            std::fs::write(root.join("sub/f.bin"), b"x").unwrap();
            std::fs::write(dir.join("secret"), b"s").unwrap();
            let _ = std::os::unix::fs::symlink(dir.join("secret"), root.join("link"));
            let root = root.canonicalize().unwrap();
            let path: String = pieces.concat();
            let got = resolve(&RootDir::open(&root).unwrap(), &path);
            // In this tree nothing changes, so the name may be followed to check the answer.
            let inside = got.as_ref().map_or(true, |f| {
                use std::os::unix::fs::MetadataExt;
                let named = root.join(&f.rel);
                named.canonicalize().is_ok_and(|c| c.starts_with(&root))
                    && named.is_file()
                    && std::fs::metadata(&named).is_ok_and(|m| m.ino() == f.metadata.ino())
            });
            drop(guard);
            proptest::prop_assert!(inside, "{path} -> {got:?}");
        }
    }
}
