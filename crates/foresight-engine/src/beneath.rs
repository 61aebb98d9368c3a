//! Opening files under a directory so that the file opened is the file checked.
//!
//! A server that checks a path (canonicalizes it, sees that it lies under its root) and then
//! opens it by name gives anyone who can write under the root a window: swap a directory of the
//! path, or the file, for a symlink pointing out between the two, and the open follows it. Here
//! the lookup and the open are one operation on a descriptor of the root, opened once:
//! `openat2(2)` with `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`, so the kernel refuses (`EXDEV`,
//! `ELOOP`) any resolution that would leave the directory at any step, whatever the names point to
//! by then.
//!
//! The rules are the kernel's: a relative symlink is followed while every step of it stays beneath
//! the root (`sub/link -> ../other/f` is served); an absolute symlink is refused, even one pointing
//! inside, because it names a place by a path the root does not govern; a `..` that would climb
//! above the root is refused, even when the path comes back down into it; `/proc` magic links are
//! refused. Where `openat2` is missing (Linux before 5.6 answers `ENOSYS`; some container filters
//! answer `EPERM`), [`RootDir::open`] falls back to a walk that applies the same rules one component
//! at a time with `openat(O_PATH | O_NOFOLLOW)` from the root's descriptor, reading each symlink
//! itself. The walk holds one directory descriptor at a time (and the root's) and climbs `..` by
//! opening the parent of the one it holds; it keeps the device and inode of each directory it came
//! through, and a parent that is not the one it came through (the directory held was moved out of
//! the root meanwhile) stops the lookup with `EAGAIN`, as `openat2` answers a rename during a `..`
//! step, rather than climbing whatever tree the directory now lies in. Both are retried a few
//! times.

use std::ffi::{CString, OsStr, OsString};
use std::fs::{File, Metadata};
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::sys;

/// The most symlinks one lookup follows (Linux's own limit, `MAXSYMLINKS`); more is `ELOOP`.
const MAX_SYMLINKS: u32 = 40;

/// How often a lookup is retried when a rename or a mount raced with a `..` step (`EAGAIN`, from
/// the kernel's `openat2` or from the walk); beyond that the error is returned.
const MAX_RETRIES: u32 = 8;

/// How a [`RootDir`] resolves names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolver {
    /// `openat2(2)` with `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`.
    Openat2,
    /// The component walk, where `openat2` is missing.
    Walk,
}

/// A directory, opened once, under which files are opened without ever leaving it. See the
/// module documentation.
#[derive(Debug)]
pub struct RootDir {
    dir: File,
    path: PathBuf,
    resolver: Resolver,
}

impl RootDir {
    /// Opens the directory at `path` (followed if it is a symlink: the root is the caller's
    /// choice), with `openat2` if the kernel has it and the walk otherwise.
    pub fn open(path: &Path) -> io::Result<RootDir> {
        let dir = open_dir(path)?;
        let resolver = match sys::openat2(&dir, c".", libc::O_PATH, RESOLVE) {
            Ok(_) => Resolver::Openat2,
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOSYS | libc::EPERM)) => {
                Resolver::Walk
            }
            Err(e) => return Err(e),
        };
        Ok(RootDir {
            dir,
            path: path.to_path_buf(),
            resolver,
        })
    }

    /// Like [`RootDir::open`], with the resolver chosen by the caller (to test the walk on a
    /// kernel that has `openat2`). `Resolver::Openat2` fails where the kernel lacks it.
    pub fn open_with(path: &Path, resolver: Resolver) -> io::Result<RootDir> {
        let dir = open_dir(path)?;
        if resolver == Resolver::Openat2 {
            sys::openat2(&dir, c".", libc::O_PATH, RESOLVE)?;
        }
        Ok(RootDir {
            dir,
            path: path.to_path_buf(),
            resolver,
        })
    }

    /// The directory's path, as given when it was opened.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How names are resolved under it.
    pub fn resolver(&self) -> Resolver {
        self.resolver
    }

    /// Where `rel` would be under the root, by name (for messages; never opened by it).
    pub fn display_path(&self, rel: &Path) -> PathBuf {
        self.path.join(rel)
    }

    /// The metadata of what `rel` names beneath the root (symlinks followed under the rules of
    /// the module documentation), taken from a descriptor opened with `O_PATH`: nothing is opened
    /// for reading, so a FIFO or a device does not notice.
    pub fn metadata(&self, rel: &Path) -> io::Result<Metadata> {
        self.lookup(rel, libc::O_PATH)?.metadata()
    }

    /// [`RootDir::metadata`], and the magic number of the file system what `rel` names lies on
    /// (`fstatfs`'s `f_type`), both from one `O_PATH` descriptor: a lookup may cross into another
    /// file system mounted beneath the root.
    pub fn metadata_and_fs_magic(&self, rel: &Path) -> io::Result<(Metadata, i64)> {
        let file = self.lookup(rel, libc::O_PATH)?;
        Ok((file.metadata()?, sys::fs_magic(&file)?))
    }

    /// Opens what `rel` names beneath the root for reading, with `flags` added to `O_RDONLY |
    /// O_NOCTTY` (`O_NONBLOCK`, `O_DIRECT`...). The caller checks what kind of file it got.
    pub fn open_read(&self, rel: &Path, flags: libc::c_int) -> io::Result<File> {
        self.lookup(rel, libc::O_RDONLY | libc::O_NOCTTY | flags)
    }

    fn lookup(&self, rel: &Path, flags: libc::c_int) -> io::Result<File> {
        let c = match self.resolver {
            Resolver::Openat2 => Some(cstring(rel.as_os_str())?),
            Resolver::Walk => None,
        };
        let mut tries = 0;
        loop {
            let r = match &c {
                Some(c) => sys::openat2(&self.dir, c, flags, RESOLVE),
                None => walk(&self.dir, rel, flags),
            };
            match r {
                Err(e) if e.raw_os_error() == Some(libc::EAGAIN) && tries < MAX_RETRIES => {
                    tries += 1;
                }
                r => return r,
            }
        }
    }
}

const RESOLVE: u64 = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS;

fn open_dir(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_DIRECTORY)
        .open(path)
}

fn cstring(s: &OsStr) -> io::Result<CString> {
    CString::new(s.as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL byte in a path"))
}

/// A directory's device and inode: what the walk knows the directories it came through by.
fn identity(dir: &File) -> io::Result<(u64, u64)> {
    let m = dir.metadata()?;
    Ok((m.dev(), m.ino()))
}

fn errno(code: i32) -> io::Error {
    io::Error::from_raw_os_error(code)
}

/// The path's components in order, split at every `/` (empty and `.` ones kept, so that a trailing
/// slash still asks for a directory).
fn components(path: &OsStr) -> impl DoubleEndedIterator<Item = OsString> + '_ {
    path.as_bytes()
        .split(|b| *b == b'/')
        .map(|c| OsString::from_vec(c.to_vec()))
}

/// Resolves `rel` from `root` one component at a time under `openat2`'s `RESOLVE_BENEATH` rules
/// and opens the result with `flags`. See the module documentation.
fn walk(root: &File, rel: &Path, flags: libc::c_int) -> io::Result<File> {
    walk_observed(root, rel, flags, &mut |_| {})
}

/// [`walk`], calling `step(name)` before each component is resolved (tests change the tree
/// there, to play the races the walk must survive).
fn walk_observed(
    root: &File,
    rel: &Path,
    flags: libc::c_int,
    step: &mut dyn FnMut(&OsStr),
) -> io::Result<File> {
    match rel.as_os_str().as_bytes() {
        [] => return Err(errno(libc::ENOENT)),
        [b'/', ..] => return Err(errno(libc::EXDEV)),
        _ => {}
    }
    let mut todo: std::collections::VecDeque<OsString> = components(rel.as_os_str()).collect();
    // The directory the next component is looked up in (`None`: the root), and the device and
    // inode of every directory from the root down to it: a `..` must reach the directory the walk
    // came through, and so it never reaches above the root, whose descriptor is held (its inode
    // cannot go to another directory meanwhile). As long as the components walked, which
    // `MAX_SYMLINKS` and `PATH_MAX` bound.
    let mut cur: Option<File> = None;
    let mut chain = vec![identity(root)?];
    let mut links = 0u32;
    while let Some(name) = todo.pop_front() {
        step(&name);
        let here = cur.as_ref().unwrap_or(root);
        match name.as_bytes() {
            b"" | b"." => continue,
            b".." => {
                if chain.len() == 1 {
                    return Err(errno(libc::EXDEV));
                }
                let up = sys::openat(here, c"..", libc::O_PATH | libc::O_DIRECTORY)?;
                chain.pop();
                if Some(&identity(&up)?) != chain.last() {
                    // The directory held was moved since the walk entered it, and its parent
                    // now may lie outside the root: counting levels up from there would climb
                    // the outside tree. `openat2` answers a rename during a `..` step so too.
                    return Err(errno(libc::EAGAIN));
                }
                cur = Some(up);
                continue;
            }
            _ => {}
        }
        let c = cstring(&name)?;
        let entry = sys::openat(here, &c, libc::O_PATH | libc::O_NOFOLLOW)?;
        let meta = entry.metadata()?;
        let kind = meta.file_type();
        if kind.is_symlink() {
            links += 1;
            if links > MAX_SYMLINKS {
                return Err(errno(libc::ELOOP));
            }
            let target = sys::read_link_fd(&entry)?;
            if target.is_empty() {
                return Err(errno(libc::ENOENT));
            }
            if target.as_bytes().starts_with(b"/") {
                return Err(errno(libc::EXDEV));
            }
            for c in components(&target).rev() {
                todo.push_front(c);
            }
            continue;
        }
        if todo.is_empty() {
            // The last component: opened again with the caller's flags, never following a
            // symlink put in its place since (that open fails with ELOOP instead).
            return if flags & libc::O_PATH != 0 {
                Ok(entry)
            } else {
                sys::openat(here, &c, flags | libc::O_NOFOLLOW)
            };
        }
        if !kind.is_dir() {
            return Err(errno(libc::ENOTDIR));
        }
        chain.push((meta.dev(), meta.ino()));
        cur = Some(entry);
    }
    // The path ended on a directory step (`.`, `..`, a trailing slash): what it names is the
    // directory held.
    let here = cur.as_ref().unwrap_or(root);
    sys::openat(here, c".", flags)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::unix::fs::MetadataExt;

    /// A tree with the symlinks every rule is about, beside a secret outside the root.
    struct Tree {
        /// Removes the tree when the test ends, also when it fails.
        _guard: tempfile::TempDir,
        dir: PathBuf,
        root: PathBuf,
    }

    impl Tree {
        fn new(label: &str) -> Tree {
            let guard = crate::testutil::temp_dir(&format!("beneath-{label}"));
            let dir = guard.path().to_path_buf();
            let root = dir.join("root");
            std::fs::create_dir_all(root.join("sub/deeper")).unwrap();
            std::fs::write(root.join("sub/f.bin"), b"inside").unwrap();
            std::fs::write(root.join("sub/deeper/g.bin"), b"deeper").unwrap();
            std::fs::write(dir.join("secret"), b"outside").unwrap();
            std::fs::create_dir_all(dir.join("outside")).unwrap();
            std::fs::write(dir.join("outside/f.bin"), b"outside").unwrap();
            let link = |target: &str, at: &str| {
                std::os::unix::fs::symlink(target, root.join(at)).unwrap();
            };
            link("sub/f.bin", "in_rel");
            link(root.join("sub/f.bin").to_str().unwrap(), "in_abs");
            link("../secret", "out_rel");
            link(dir.join("secret").to_str().unwrap(), "out_abs");
            link("../sub/f.bin", "sub/up");
            link("..", "sub/back");
            link("../..", "sub/back2");
            link("loop", "loop");
            link("sub", "dirlink");
            link("deeper/../../in_rel", "sub/chain");
            link("../root/sub/f.bin", "around");
            link("/proc/self/root", "magic");
            Tree {
                _guard: guard,
                dir,
                root,
            }
        }
    }

    fn read(root: &RootDir, rel: &str) -> io::Result<Vec<u8>> {
        let mut f = root.open_read(Path::new(rel), libc::O_NONBLOCK)?;
        let mut v = Vec::new();
        f.read_to_end(&mut v)?;
        Ok(v)
    }

    fn both(tree: &Tree) -> Vec<RootDir> {
        let mut v = vec![RootDir::open_with(&tree.root, Resolver::Walk).unwrap()];
        match RootDir::open_with(&tree.root, Resolver::Openat2) {
            Ok(r) => v.push(r),
            Err(e) => eprintln!("openat2 not available here ({e}); testing the walk alone"),
        }
        v
    }

    #[test]
    fn links_that_stay_beneath_are_followed_and_others_refused() {
        let tree = Tree::new("rules");
        for root in both(&tree) {
            let r = root.resolver();
            for ok in [
                "sub/f.bin",
                "in_rel",
                "sub/up",
                "sub/back/sub/f.bin",
                "dirlink/f.bin",
                "dirlink/deeper/../f.bin",
                "sub/chain",
                "./sub//f.bin",
            ] {
                assert_eq!(read(&root, ok).unwrap(), b"inside", "{r:?} {ok}");
            }
            for refused in [
                "in_abs",
                "out_rel",
                "out_abs",
                "sub/back2/secret",
                "../secret",
                "/etc/passwd",
                "around",
                "loop",
                "magic/etc/passwd",
                "missing",
                "sub/f.bin/",
            ] {
                assert!(read(&root, refused).is_err(), "{r:?} {refused}");
            }
            assert!(root.metadata(Path::new("sub")).unwrap().is_dir());
            assert!(root.metadata(Path::new("sub/back")).unwrap().is_dir());
        }
    }

    /// The race a name check leaves: the path is checked, then a directory on it (or the file)
    /// becomes a symlink out of the root before the open. Opening by name would follow it (the
    /// test shows that it does, so the swap is real); opening beneath the root refuses.
    #[test]
    fn a_component_swapped_for_a_symlink_after_the_check_is_not_followed() {
        let tree = Tree::new("swap");
        for root in both(&tree) {
            let r = root.resolver();
            let rel = Path::new("sub/f.bin");
            let checked = root.metadata(rel).unwrap();
            assert!(checked.is_file());
            for target in [
                tree.dir.join("outside"),
                PathBuf::from("../outside"),
                PathBuf::from("sub-was/../../outside"),
            ] {
                std::fs::rename(tree.root.join("sub"), tree.root.join("sub-was")).unwrap();
                std::os::unix::fs::symlink(&target, tree.root.join("sub")).unwrap();
                let by_name = std::fs::read(root.display_path(rel)).unwrap();
                assert_eq!(by_name, b"outside", "the swap did not take");
                assert!(read(&root, "sub/f.bin").is_err(), "{r:?} {target:?}");
                assert!(root.metadata(rel).is_err(), "{r:?} {target:?}");
                std::fs::remove_file(tree.root.join("sub")).unwrap();
                std::fs::rename(tree.root.join("sub-was"), tree.root.join("sub")).unwrap();
            }
            // The file itself swapped.
            std::fs::rename(tree.root.join("sub/f.bin"), tree.root.join("sub/f.was")).unwrap();
            std::os::unix::fs::symlink(tree.dir.join("secret"), tree.root.join("sub/f.bin"))
                .unwrap();
            assert!(read(&root, "sub/f.bin").is_err(), "{r:?}");
            std::fs::remove_file(tree.root.join("sub/f.bin")).unwrap();
            std::fs::rename(tree.root.join("sub/f.was"), tree.root.join("sub/f.bin")).unwrap();
            assert_eq!(read(&root, "sub/f.bin").unwrap(), b"inside");
        }
    }

    #[test]
    fn a_fifo_is_opened_without_blocking() {
        let tree = Tree::new("fifo");
        let fifo = CString::new(tree.root.join("fifo").as_os_str().as_bytes()).unwrap();
        // Made with mkfifo(1): std has no call for it, and a test needs no `unsafe` of its own.
        let made = std::process::Command::new("mkfifo")
            .arg(tree.root.join("fifo"))
            .status();
        if !made.is_ok_and(|s| s.success()) {
            eprintln!("mkfifo unavailable; {fifo:?} not tested");
            return;
        }
        for root in both(&tree) {
            let f = root.open_read(Path::new("fifo"), libc::O_NONBLOCK).unwrap();
            assert!(!f.metadata().unwrap().is_file());
            assert!(!root.metadata(Path::new("fifo")).unwrap().is_file());
        }
    }

    /// The race `openat2` guards its `..` steps against: a directory the walk holds is moved out
    /// of the root before the walk climbs out of it. Climbing by opening the parent of the
    /// directory held, and counting levels, then climbs the outside tree, and the path's
    /// descent after that reads what lies outside. Here `a/b/../../secret` is asked for and `b`
    /// moves to `outside/x/b` just before its `..` is resolved: the two `..` then lead to
    /// `outside`, whose `secret` must not be opened.
    #[test]
    fn a_directory_moved_out_of_the_root_during_the_walk_does_not_lead_out() {
        let tree = Tree::new("moved");
        std::fs::create_dir_all(tree.root.join("a/b")).unwrap();
        std::fs::create_dir_all(tree.dir.join("outside/x")).unwrap();
        std::fs::write(tree.dir.join("outside/secret"), b"outside").unwrap();
        let root = RootDir::open_with(&tree.root, Resolver::Walk).unwrap();
        let mut moved = false;
        let got = walk_observed(
            &root.dir,
            Path::new("a/b/../../secret"),
            libc::O_RDONLY | libc::O_NONBLOCK,
            &mut |name| {
                if name == ".." && !moved {
                    moved = true;
                    std::fs::rename(tree.root.join("a/b"), tree.dir.join("outside/x/b")).unwrap();
                }
            },
        );
        assert!(moved, "the walk never climbed");
        let mut bytes = Vec::new();
        if let Ok(mut f) = got.as_ref() {
            f.read_to_end(&mut bytes).unwrap();
        }
        assert_ne!(bytes, b"outside", "the walk left the root");
        // As `openat2` answers a rename during a `..` step, so that the lookup is tried again.
        assert_eq!(got.err().and_then(|e| e.raw_os_error()), Some(libc::EAGAIN));
        // Asked again once the tree has settled, the path leads nowhere: `a/b` is gone.
        assert!(read(&root, "a/b/../../secret").is_err());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 512, ..Default::default() })]

        /// Whatever path is asked for, made of the tree's names, dot segments and slashes, the walk
        /// and `openat2` agree (both refuse, or both open the same inode), and nothing opened is
        /// outside the root. proptest prints the path that breaks it.
        #[test]
        fn the_walk_agrees_with_openat2_and_never_leaves(
            pieces in proptest::collection::vec(
                proptest::sample::select(vec![
                    "sub", "f.bin", "deeper", "g.bin", "in_rel", "in_abs", "out_rel", "out_abs",
                    "up", "back", "back2", "loop", "dirlink", "chain", "around", "magic", "secret",
                    "root", "..", ".", "", "/",
                ]),
                1..8,
            )
        ) {
            let tree = Tree::new("prop");
            let path = pieces.join("/");
            let inside: Vec<u64> = walk_inodes(&tree.root);
            let secret = std::fs::metadata(tree.dir.join("secret")).unwrap().ino();
            let roots = both(&tree);
            let got: Vec<Option<u64>> = roots
                .iter()
                .map(|r| r.metadata(Path::new(&path)).ok().map(|m| m.ino()))
                .collect();
            for g in got.iter().flatten() {
                proptest::prop_assert!(*g != secret && inside.contains(g), "{path}: {got:?}");
            }
            proptest::prop_assert!(got.windows(2).all(|w| w[0] == w[1]), "{path}: {got:?}");
        }
    }

    /// The inodes of the root and everything in it (symlinks not followed).
    fn walk_inodes(root: &Path) -> Vec<u64> {
        let mut out = vec![std::fs::metadata(root).unwrap().ino()];
        let mut dirs = vec![root.to_path_buf()];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let m = std::fs::symlink_metadata(e.path()).unwrap();
                out.push(m.ino());
                if m.is_dir() {
                    dirs.push(e.path());
                }
            }
        }
        out
    }
}
