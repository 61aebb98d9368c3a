//! The few operating-system calls the engine makes outside the standard library, each a thin safe
//! wrapper over `libc` calls:
//! - page-cache eviction (`posix_fadvise(DONTNEED)`) and process CPU time (`getrusage`);
//! - free disk space (`statvfs`), whether a file system lives in memory (`statfs`), which one a
//!   file lies on (`fstatfs`), and where a file's first hole is (`lseek(SEEK_HOLE)`);
//! - the open-files limit (`getrlimit`, `setrlimit`);
//! - clearing a descriptor's `O_NONBLOCK` or setting its `O_DIRECT` (`fcntl`), and the `eventfd`
//!   the io_uring backend uses to wake its ring thread;
//! - the calling thread's timer slack (`prctl(PR_SET_TIMERSLACK)` and `PR_GET_TIMERSLACK`, for
//!   the emulated backend's clock), and a child process ended with its parent
//!   (`prctl(PR_SET_PDEATHSIG)`);
//! - the calls that open a file relative to a directory descriptor (`openat`, `openat2`,
//!   `readlinkat`) for [`crate::beneath`].
//!
//! Opening a file by path with `O_DIRECT` needs no wrapper: it is a flag of
//! `std::fs::OpenOptions`.

#![allow(unsafe_code)]

use std::ffi::{CStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;

/// Asks the kernel to drop `file`'s pages from the page cache (`posix_fadvise(POSIX_FADV_DONTNEED)`
/// over the whole file), so the next read of it goes to the device. Dirty pages are not dropped;
/// callers write their files and `sync` them first.
pub fn evict_from_page_cache(file: &File) -> io::Result<()> {
    // SAFETY: the descriptor is valid for the life of `file`; the call only reads its arguments.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    // posix_fadvise returns the error number instead of setting errno.
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(rc))
    }
}

/// The offset of `file`'s first hole (`lseek(SEEK_HOLE)` from 0): its length when it has none.
/// File systems count a preallocated extent not yet written (`fallocate`) as a hole here, as
/// they do for a sparse range, since neither holds data a read would fetch from the disk. The
/// descriptor's offset is moved; callers open the file for this alone.
pub fn first_hole(file: &File) -> io::Result<u64> {
    // SAFETY: the descriptor is valid for the life of `file`; the call only reads its arguments.
    let at = unsafe { libc::lseek(file.as_raw_fd(), 0, libc::SEEK_HOLE) };
    if at < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(at as u64)
}

/// Preallocates `bytes` of `file` from offset 0 (`fallocate` with no flags): unwritten extents,
/// which read as zeros without reaching the disk.
#[cfg(test)]
pub fn preallocate(file: &File, bytes: u64) -> io::Result<()> {
    // SAFETY: the descriptor is valid for the life of `file`; the call only reads its arguments.
    let rc = unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, bytes as libc::off_t) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Makes the child `cmd` starts receive SIGTERM when the thread that starts it ends
/// (`prctl(PR_SET_PDEATHSIG)`), as it does when this process ends: by a signal's default action,
/// an `exit` from the stop handler, or a SIGKILL, where no code of ours runs to stop it. Without
/// it such a child (fio, measuring the disk) goes on under init. The thread matters: a child
/// started from a thread that ends before it is ended with that thread.
pub fn end_with_parent(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt as _;
    let parent = std::process::id() as libc::pid_t;
    let ask = move || {
        // SAFETY: runs in the child between fork and exec, and makes only async-signal-safe
        // calls (prctl, getppid) with plain integer arguments.
        if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // A parent that ended before the request will send nothing: fail the start instead.
        // SAFETY: getppid has no arguments and cannot fail.
        if unsafe { libc::getppid() } != parent {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        Ok(())
    };
    // SAFETY: the closure allocates nothing, takes no lock and only makes the calls above, which
    // are safe between fork and exec.
    unsafe {
        cmd.pre_exec(ask);
    }
}

/// User plus system CPU seconds this process has used so far.
pub fn process_cpu_seconds() -> f64 {
    cpu_seconds(libc::RUSAGE_SELF)
}

/// User plus system CPU seconds of this process's children that have ended and been waited for.
pub fn children_cpu_seconds() -> f64 {
    cpu_seconds(libc::RUSAGE_CHILDREN)
}

fn cpu_seconds(who: libc::c_int) -> f64 {
    // SAFETY: an all-zero `rusage` is a valid value of this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable `rusage`; callers pass RUSAGE_SELF or RUSAGE_CHILDREN.
    let rc = unsafe { libc::getrusage(who, &mut usage) };
    if rc != 0 {
        return 0.0;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// Whether every page of `bytes` (page-aligned) is resident in memory now (`mincore`).
#[cfg(test)]
pub fn all_resident(bytes: &[u8]) -> io::Result<bool> {
    Ok(resident_bytes(bytes)? == bytes.len().div_ceil(4096) * 4096)
}

/// How many bytes of `bytes` (page-aligned) lie in pages resident in memory now (`mincore`).
#[cfg(test)]
pub fn resident_bytes(bytes: &[u8]) -> io::Result<usize> {
    let mut pages = vec![0u8; bytes.len().div_ceil(4096)];
    // SAFETY: `pages` has a byte for each 4 KiB page of `bytes`, which the kernel only reads the
    // residency of; the caller passes a page-aligned slice.
    let rc = unsafe { libc::mincore(bytes.as_ptr() as *mut _, bytes.len(), pages.as_mut_ptr()) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(pages.iter().filter(|p| *p & 1 == 1).count() * 4096)
}

/// Sets the calling thread's timer slack to `slack_ns` (`prctl(PR_SET_TIMERSLACK)`): how late
/// the kernel may end the thread's timed sleeps so as to batch wake-ups. A thread starts with its
/// creator's slack, 50 us by default; 0 would restore that default, so the least is 1 ns.
pub fn set_thread_timer_slack(slack_ns: u64) -> io::Result<()> {
    assert!(slack_ns > 0, "a timer slack of 0 restores the default");
    // SAFETY: PR_SET_TIMERSLACK reads its integer argument and touches no memory of ours.
    let rc = unsafe {
        libc::prctl(
            libc::PR_SET_TIMERSLACK,
            slack_ns as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The calling thread's timer slack, ns (`prctl(PR_GET_TIMERSLACK)`). A thread may read its own
/// slack without privilege, whereas another thread's `/proc/TID/timerslack_ns` needs
/// `CAP_SYS_NICE`.
pub fn thread_timer_slack_ns() -> io::Result<u64> {
    // SAFETY: PR_GET_TIMERSLACK takes no argument and touches no memory of ours.
    let rc = unsafe {
        libc::prctl(
            libc::PR_GET_TIMERSLACK,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(rc as u64)
}

/// `path` as the NUL-terminated string the C calls take; a path holding a NUL byte names no file.
fn c_path(path: &std::path::Path) -> io::Result<std::ffi::CString> {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))
}

/// The file system type (`f_type`, its magic number) that `call` fills in: `statfs` on a path or
/// `fstatfs` on a descriptor, which differ only in how they name the file.
fn statfs_type(call: impl FnOnce(&mut libc::statfs) -> libc::c_int) -> io::Result<i64> {
    // SAFETY: an all-zero `statfs` is a valid value of this plain C struct.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    if call(&mut st) != 0 {
        return Err(io::Error::last_os_error());
    }
    #[allow(clippy::unnecessary_cast)] // f_type's width differs between targets
    Ok(st.f_type as i64)
}

/// Bytes free for an unprivileged user on the file system holding `path` (`statvfs`).
pub fn free_bytes(path: &std::path::Path) -> io::Result<u64> {
    let c = c_path(path)?;
    // SAFETY: an all-zero `statvfs` is a valid value of this plain C struct.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid NUL-terminated string and `st` a valid, writable `statvfs`.
    let rc = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st.f_bavail as u64 * st.f_frsize as u64)
}

/// Whether the file system holding `path` keeps its files in memory (tmpfs or ramfs, by
/// `statfs`'s magic number): such a file has no disk beneath it and its pages cannot be dropped.
pub fn in_memory_fs(path: &std::path::Path) -> io::Result<bool> {
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    const RAMFS_MAGIC: i64 = 0x8584_58f6;
    let c = c_path(path)?;
    // SAFETY: `c` is a valid NUL-terminated string and `st` a valid, writable `statfs`.
    let kind = statfs_type(|st| unsafe { libc::statfs(c.as_ptr(), st) })?;
    Ok(kind == TMPFS_MAGIC || kind == RAMFS_MAGIC)
}

/// The magic number (`fstatfs`'s `f_type`) of the file system `file` lies on; `file` may be an
/// `O_PATH` descriptor.
pub fn fs_magic(file: &File) -> io::Result<i64> {
    // SAFETY: the descriptor is valid for the life of `file`, and `st` a valid, writable `statfs`.
    statfs_type(|st| unsafe { libc::fstatfs(file.as_raw_fd(), st) })
}

/// This process's limit on open files (`RLIMIT_NOFILE`): `(soft, hard)`.
pub fn open_files_limit() -> io::Result<(u64, u64)> {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `l` is a valid, writable `rlimit`, the one struct getrlimit writes.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((l.rlim_cur, l.rlim_max))
}

/// Raises this process's soft limit on open files toward `need_files`, up to the hard one, and
/// never lowers it; returns the soft limit in force afterwards. One place for the rule, which
/// `serve`, `proxy`, `bench` and `net-soak` each repeated.
pub fn raise_open_files_limit(need_files: u64) -> io::Result<u64> {
    let (soft, hard) = open_files_limit()?;
    if soft >= need_files {
        return Ok(soft);
    }
    // `hard` may be RLIM_INFINITY (u64::MAX), which `min` leaves as it is.
    let raised = need_files.min(hard);
    let l = libc::rlimit {
        rlim_cur: raised as libc::rlim_t,
        rlim_max: hard as libc::rlim_t,
    };
    // SAFETY: `l` is a valid `rlimit`, which setrlimit only reads.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &l) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(raised)
}

/// Whether this process's real user may create entries in the directory `dir` (`access` with
/// write and search permission: a read-only mount says no too).
pub fn may_create_in(dir: &std::path::Path) -> bool {
    let Ok(c) = c_path(dir) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated string that outlives the call; access only reads it.
    unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) == 0 }
}

/// An `eventfd` (blocking, close-on-exec) as a `File`: writing 8 bytes wakes whoever reads it.
pub fn eventfd() -> io::Result<File> {
    // SAFETY: eventfd takes no pointers; a negative return is an error reported through errno.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor that nothing else owns.
    Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// Clears `O_NONBLOCK` on `file`'s descriptor (`fcntl(F_SETFL)`), keeping its other status flags.
pub fn clear_nonblocking(file: &File) -> io::Result<()> {
    let fd = file.as_raw_fd();
    // SAFETY: `fd` is an open descriptor owned by `file` for the duration of both calls.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above; only the O_NONBLOCK status flag changes.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sets (`on`) or clears `O_DIRECT` on `file`'s descriptor (`fcntl(F_SETFL)`), keeping its other
/// status flags; returns whether it was set before. Setting it fails (`EINVAL`) on a file whose
/// file system does not do direct I/O.
pub fn set_direct(file: &File, on: bool) -> io::Result<bool> {
    let fd = file.as_raw_fd();
    // SAFETY: `fd` is an open descriptor owned by `file` for the duration of both calls.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    let was = flags & libc::O_DIRECT != 0;
    if was != on {
        let flags = if on {
            flags | libc::O_DIRECT
        } else {
            flags & !libc::O_DIRECT
        };
        // SAFETY: as above; only the O_DIRECT status flag changes.
        if unsafe { libc::fcntl(fd, libc::F_SETFL, flags) } < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(was)
}

/// Opens `name` relative to the directory `dir` (`openat`) with `flags` (`O_CLOEXEC` added). No
/// mode is passed, so `flags` must not ask to create a file.
pub fn openat(dir: &File, name: &CStr, flags: libc::c_int) -> io::Result<File> {
    debug_assert_eq!(flags & libc::O_CREAT, 0, "openat here never creates files");
    // SAFETY: `dir` is an open descriptor for the duration of the call and `name` a valid
    // NUL-terminated string; without O_CREAT the call reads no mode argument.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor that nothing else owns.
    Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// Opens `path` relative to the directory `dir` with `openat2(2)`: `flags` (`O_CLOEXEC` added) and
/// the `RESOLVE_*` bits in `resolve`. Kernels before 5.6 answer `ENOSYS`.
pub fn openat2(dir: &File, path: &CStr, flags: libc::c_int, resolve: u64) -> io::Result<File> {
    debug_assert_eq!(flags & libc::O_CREAT, 0, "openat2 here never creates files");
    // SAFETY: an all-zero `open_how` is a valid value of this plain C struct (mode 0, no flags).
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (flags | libc::O_CLOEXEC) as u32 as u64;
    how.resolve = resolve;
    // SAFETY: `dir` is an open descriptor for the duration of the call, `path` a valid
    // NUL-terminated string, and `how` a valid `open_how` whose size is passed with it.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            path.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = libc::c_int::try_from(rc).map_err(|_| io::Error::other("openat2 returned no fd"))?;
    // SAFETY: `fd` is a fresh descriptor that nothing else owns.
    Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// The target of the symbolic link `link` was opened on (with `O_PATH | O_NOFOLLOW`), read with
/// `readlinkat(fd, "")`.
pub fn read_link_fd(link: &File) -> io::Result<OsString> {
    // PATH_MAX: Linux refuses to store longer targets.
    let mut buf = vec![0u8; libc::PATH_MAX as usize + 1];
    // SAFETY: the descriptor is open for the duration of the call, the empty path is a valid
    // NUL-terminated string, and `buf` has `buf.len()` writable bytes.
    let n = unsafe {
        libc::readlinkat(
            link.as_raw_fd(),
            c"".as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let n = n as usize;
    if n >= buf.len() {
        return Err(io::Error::from_raw_os_error(libc::ENAMETOOLONG));
    }
    buf.truncate(n);
    Ok(OsString::from_vec(buf))
}

/// The descriptor's status flags (`fcntl(F_GETFL)`).
#[cfg(test)]
pub fn status_flags(file: &File) -> io::Result<libc::c_int> {
    // SAFETY: the descriptor is valid for the life of `file`; F_GETFL takes no argument.
    let flags = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(flags)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child started with [`end_with_parent`] gets SIGTERM when the thread that started it
    /// ends; without the request a `sleep 30` started the same way runs on.
    #[test]
    fn a_child_ends_with_the_thread_that_started_it() {
        use std::os::unix::process::ExitStatusExt as _;
        let start = |end: bool| {
            std::thread::spawn(move || {
                let mut cmd = std::process::Command::new("sleep");
                cmd.arg("30");
                if end {
                    end_with_parent(&mut cmd);
                }
                cmd.spawn().expect("sleep starts")
            })
            .join()
            .unwrap()
        };
        let wait = |child: &mut std::process::Child| {
            let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while std::time::Instant::now() < until {
                if let Some(status) = child.try_wait().unwrap() {
                    return Some(status);
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            None
        };
        let mut ended = start(true);
        let status = wait(&mut ended).expect("the child ended with its thread");
        assert_eq!(status.signal(), Some(libc::SIGTERM), "{status}");
        let mut kept = start(false);
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert!(
            kept.try_wait().unwrap().is_none(),
            "ended without the request"
        );
        kept.kill().unwrap();
        kept.wait().unwrap();
    }

    /// A written file has its first hole at its end; a sparse one and a preallocated one at 0,
    /// though the preallocated one has every block it needs.
    #[test]
    fn the_first_hole_of_written_sparse_and_preallocated_files() {
        use std::io::Write as _;
        let dir = tempfile::tempdir().unwrap();
        let written = dir.path().join("written");
        std::fs::File::create(&written)
            .unwrap()
            .write_all(&vec![7u8; 1 << 20])
            .unwrap();
        let f = File::open(&written).unwrap();
        f.sync_all().unwrap();
        assert_eq!(first_hole(&f).unwrap(), 1 << 20);
        let sparse = File::create(dir.path().join("sparse")).unwrap();
        sparse.set_len(1 << 20).unwrap();
        assert_eq!(first_hole(&sparse).unwrap(), 0);
        let pre = File::create(dir.path().join("pre")).unwrap();
        match preallocate(&pre, 1 << 20) {
            Ok(()) => {
                use std::os::unix::fs::MetadataExt as _;
                assert!(pre.metadata().unwrap().blocks() * 512 >= 1 << 20);
                assert_eq!(first_hole(&pre).unwrap(), 0);
            }
            // A file system without fallocate (some network ones) has no such files to catch.
            Err(e) => assert_eq!(e.raw_os_error(), Some(libc::EOPNOTSUPP), "{e}"),
        }
    }

    /// The soft limit is raised within the hard one and never lowered: a need below the soft
    /// limit leaves it as it was (the setter this replaced set whatever it was given).
    #[test]
    fn the_open_files_limit_is_raised_within_the_hard_one_and_never_lowered() {
        let (soft, hard) = open_files_limit().unwrap();
        assert_eq!(
            raise_open_files_limit(soft.saturating_sub(1)).unwrap(),
            soft
        );
        assert_eq!(raise_open_files_limit(0).unwrap(), soft);
        assert_eq!(open_files_limit().unwrap(), (soft, hard));
        assert_eq!(raise_open_files_limit(u64::MAX).unwrap(), hard);
        assert_eq!(open_files_limit().unwrap(), (hard, hard));
    }
    use std::io::{Read, Write};

    /// The path and the descriptor forms of `statfs` read the same file system, and a path that
    /// names no file (missing, or holding a NUL byte) is an error, not a guess.
    #[test]
    fn statfs_by_path_and_by_descriptor_agree() {
        let dir = tempfile::tempdir().unwrap();
        let memory = [0x0102_1994, 0x8584_58f6];
        for path in [
            dir.path(),
            std::path::Path::new("/proc"),
            std::path::Path::new("/"),
        ] {
            let magic = fs_magic(&File::open(path).unwrap()).unwrap();
            assert_eq!(
                in_memory_fs(path).unwrap(),
                memory.contains(&magic),
                "{}",
                path.display()
            );
        }
        assert_eq!(fs_magic(&File::open("/proc").unwrap()).unwrap(), 0x9fa0);
        assert!(in_memory_fs(&dir.path().join("missing")).is_err());
        assert_eq!(
            in_memory_fs(std::path::Path::new("a\0b"))
                .unwrap_err()
                .kind(),
            io::ErrorKind::InvalidInput
        );
        assert!(free_bytes(dir.path()).unwrap() > 0);
        assert!(free_bytes(std::path::Path::new("a\0b")).is_err());
    }

    #[test]
    fn eventfd_counts_writes() {
        let mut e = eventfd().unwrap();
        e.write_all(&1u64.to_ne_bytes()).unwrap();
        e.write_all(&2u64.to_ne_bytes()).unwrap();
        let mut b = [0u8; 8];
        e.read_exact(&mut b).unwrap();
        assert_eq!(u64::from_ne_bytes(b), 3);
    }

    #[test]
    fn cpu_time_moves_forward() {
        let a = process_cpu_seconds();
        let mut x = 0u64;
        for i in 0..3_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(process_cpu_seconds() >= a);
    }
}
