//! `foresight bench` end to end: bad input exits 2 naming the flag, and a small run on a temporary
//! directory prints one JSON object per (N, method) with the contract's keys.

use std::process::Command;

mod common;
use common::unprivileged;

fn foresight(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_foresight"))
        .args(args)
        .output()
        .expect("the binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Where a bench run of the test writes: `bench` under a new directory of the test's own in the
/// system's temporary directory (not made yet, so a refusal can be seen to write nothing), and
/// the guard that removes that directory with everything in it when dropped, also when the
/// test fails.
fn dir(tag: &str) -> (tempfile::TempDir, String) {
    let guard = tempfile::Builder::new()
        .prefix(&format!("foresight-bench-test-{tag}-"))
        .tempdir()
        .expect("making a temporary directory");
    let d = guard.path().join("bench").display().to_string();
    (guard, d)
}

#[test]
fn bad_bench_input_exits_2_naming_the_flag() {
    for (args, name) in [
        (vec!["--policy", "psychic"], "psychic"),
        (vec!["--policy", "msp+seqp"], "msp+seqp"),
        (vec!["--emulate", "floppy"], "floppy"),
        (vec!["--file-size", "12parsecs"], "--file-size"),
        (vec!["--streams", "0"], "--streams"),
        // A negative number is a bad value of the flag, not an unknown argument.
        (vec!["--queue-depth", "-1"], "--queue-depth"),
        (vec!["--backend", "magic"], "--backend"),
        (vec!["--duration", "soon"], "--duration"),
        (vec!["--duration", "0s"], "--duration"),
        (vec!["--file-size", "-1GiB"], "must not be negative"),
        (vec!["--memory", "plenty"], "--memory"),
        (vec!["--memory", "1KiB"], "--memory"),
        (vec!["--queue-depth", "0"], "--queue-depth"),
        (vec!["--max-io", "100MiB"], "--max-io"),
        (vec!["--file-size", "1KiB"], "--file-size"),
        // Not whole pages: seqp cannot run with it, and used to be left out of the default
        // policies without a word.
        (vec!["--readahead-max", "5000"], "--readahead-max"),
        // Nothing ahead under every policy: `none` says that.
        (vec!["--readahead-max", "0"], "--policy none"),
        // Both would be ignored: the emulated engine has its own backend, and fio reads the real
        // disk.
        (
            vec!["--emulate", "wd800jd", "--backend", "threads"],
            "--backend",
        ),
        (vec!["--emulate", "wd800jd", "--fio"], "--fio"),
        (vec!["--emulate", "wd800jd", "--scheduler", "cfq"], "`cfq`"),
        (
            vec![
                "--emulate",
                "wd800jd",
                "--scheduler",
                "anticipatory",
                "--antic-expire",
                "5s",
            ],
            "--antic-expire",
        ),
        (
            vec![
                "--emulate",
                "wd800jd",
                "--scheduler",
                "anticipatory",
                "--antic-expire",
                "soon",
            ],
            "--antic-expire",
        ),
        // An array past the simulator's 256 drives used to be built and measured. Short runs, so
        // that a bench that is not refused ends soon.
        (
            vec![
                "--emulate",
                "wd800jd",
                "--disks",
                "257",
                "--streams",
                "1",
                "--repeat",
                "1",
                "--duration",
                "10ms",
            ],
            "--disks",
        ),
        (vec!["--emulate", "wd800jd", "--disks", "0"], "--disks"),
        // The allocator refused a 1 TiB buffer once the files were written (exit 1); budgets past
        // the machine's memory were taken at their word (exit 0). Short runs, so that a bench
        // that is not refused ends soon.
        (
            vec!["--limit-io", "1TiB", "--streams", "1", "--repeat", "1"],
            "--limit-io",
        ),
        (
            vec![
                "--memory",
                "1000TiB",
                "--streams",
                "1",
                "--repeat",
                "1",
                "--duration",
                "10ms",
            ],
            "more than this machine's memory",
        ),
        (
            vec![
                "--emulate",
                "wd800jd",
                "--disks",
                "2",
                "--policy",
                "msp+seqp",
                "--raid-cache",
                "1000TiB",
                "--streams",
                "1",
                "--repeat",
                "1",
                "--duration",
                "10ms",
            ],
            "--raid-cache",
        ),
        // A RAID cache size with no `msp+...` policy to use it was taken and ignored (exit 0).
        (
            vec![
                "--emulate",
                "wd800jd",
                "--disks",
                "2",
                "--raid-cache",
                "8MiB",
                "--policy",
                "seqp",
                "--streams",
                "1",
                "--repeat",
                "1",
                "--duration",
                "10ms",
            ],
            "--raid-cache",
        ),
        // A window larger than the engine's whole budget was taken and printed as the run's
        // readahead_max (exit 0), though no fetch could be that large; the simulator refuses
        // policy.readahead_max above host.memory.
        (
            vec![
                "--readahead-max",
                "100GiB",
                "--streams",
                "1",
                "--repeat",
                "1",
                "--duration",
                "10ms",
            ],
            "--readahead-max",
        ),
        (
            vec![
                "--emulate",
                "wd800jd",
                "--memory",
                "64MiB",
                "--readahead-max",
                "128MiB",
                "--streams",
                "1",
                "--repeat",
                "1",
                "--duration",
                "10ms",
            ],
            "raise --memory",
        ),
        // Only the anticipatory scheduler waits: under deadline the wait would change nothing.
        (
            vec!["--emulate", "wd800jd", "--antic-expire", "10ms"],
            "--scheduler anticipatory",
        ),
    ] {
        let (_guard, d) = dir("bad");
        // Small sizes, so that if checking ever moved after file creation this test would write
        // megabytes, not the default's gigabytes.
        let mut all = vec!["bench", "--dir", d.as_str(), "--total-size", "64MiB"];
        if args[0] != "--file-size" {
            all.extend(["--file-size", "1MiB"]);
        }
        all.extend(args.iter().copied());
        let (code, _, err) = foresight(&all);
        // Refused before anything is written.
        let wrote = std::path::Path::new(&d).exists();
        assert!(!wrote, "{all:?} created {d} before refusing");
        assert_eq!(code, 2, "{all:?} should exit 2: {err}");
        assert!(
            err.contains(name),
            "{all:?}: the message should name {name}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// A simulator policy the engine cannot run was refused with the library's advice to a programmer
/// ("build it with build_stack"), and for `ipo`, a tier pipeline, with the wrong two layers.
#[test]
fn a_policy_the_engine_cannot_run_is_refused_in_the_users_terms() {
    for p in ["msp+seqp", "msp+saseqp", "ipipe", "ipo", "ipods"] {
        let (_guard, d) = dir("two-layer");
        let (code, _, err) = foresight(&["bench", "--dir", &d, "--policy", p]);
        assert_eq!(code, 2, "{p}: {err}");
        assert!(err.contains(&format!("`{p}`")), "{p}: {err}");
        assert!(!err.contains("build_stack"), "{p}: {err}");
        assert!(err.contains("The engine runs: "), "{p}: {err}");
        assert!(!std::path::Path::new(&d).exists(), "{p}: {d} was created");
    }
}

/// The host scheduler is the emulated disk's to choose; on the real disk the kernel's runs, so
/// `--scheduler` and `--antic-expire` without `--emulate` are refused, saying so, before anything
/// is written.
#[test]
fn a_scheduler_without_emulate_is_refused() {
    for args in [
        vec!["--scheduler", "anticipatory"],
        vec!["--antic-expire", "10ms"],
    ] {
        let (_guard, d) = dir("sched");
        let mut all = vec!["bench", "--dir", d.as_str(), "--file-size", "1MiB"];
        all.extend(args.iter().copied());
        let (code, _, err) = foresight(&all);
        let wrote = std::path::Path::new(&d).exists();
        assert!(!wrote, "{all:?} created {d} before refusing");
        assert_eq!(code, 2, "{all:?} should exit 2: {err}");
        assert!(
            err.contains(args[0]) && err.contains("--emulate") && err.contains("kernel"),
            "{all:?}: the message should name {} and say it needs --emulate: {err}",
            args[0]
        );
    }
}

/// Files larger than the free disk space are refused before any directory is made, so the
/// refusal leaves nothing behind.
/// A --dir beneath a regular file can never be made; with large files the refusal used to be about
/// free space (the file's file system's), which sent the user to look for disk space.
#[test]
fn a_dir_that_is_a_file_is_refused_as_one() {
    let (_guard, d) = dir("file");
    std::fs::write(&d, b"not a directory").unwrap();
    for target in [d.clone(), format!("{d}/sub")] {
        let (code, _, err) = foresight(&[
            "bench",
            "--dir",
            &target,
            "--total-size",
            "100TiB",
            "--file-size",
            "100TiB",
            "--streams",
            "1",
        ]);
        assert_eq!(code, 2, "{target}: {err}");
        assert!(
            err.contains("--dir") && err.contains("not a directory"),
            "{target}: {err}"
        );
    }
}

#[test]
fn files_beyond_the_free_space_are_refused_before_anything_is_created() {
    let (_guard, d) = dir("full");
    let (code, _, err) = foresight(&[
        "bench",
        "--dir",
        &format!("{d}/sub"),
        "--total-size",
        "100TiB",
        "--file-size",
        "100TiB",
        "--streams",
        "1",
    ]);
    let made = std::path::Path::new(&d).exists();
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--dir") && err.contains("free"), "{err}");
    assert!(!made, "the refused run created {d}");
}

#[test]
fn a_small_bench_prints_the_json_contract() {
    let (_guard, d) = dir("small");
    let (code, out, err) = foresight(&[
        "bench",
        "--streams",
        "1,2",
        "--file-size",
        "4MiB",
        "--total-size",
        "8MiB",
        "--dir",
        &d,
        "--duration",
        "5s",
        "--repeat",
        "1",
        "--json",
        "--memory",
        "64MiB",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON array");
    let rows = v.as_array().expect("an array");
    // Two N values, each with limit, kernel and the engine under seqp and streams.
    assert_eq!(rows.len(), 8, "{out}");
    for r in rows {
        for k in [
            "streams",
            "method",
            "policy",
            "mib_s",
            "ratio_to_limit",
            "memory_peak_bytes",
            "cpu_s",
        ] {
            assert!(r.get(k).is_some(), "missing {k}: {r}");
        }
        assert!(r["mib_s"].as_f64().unwrap() > 0.0, "{r}");
        assert_eq!(r["stopped_by_duration"], false, "8 MiB within 5 s: {r}");
    }
    for policy in ["seqp", "streams"] {
        assert!(rows
            .iter()
            .any(|r| r["method"] == "engine" && r["policy"] == policy));
    }
    // The engine's memory peak is its buffers', as --help says, not its budget: on the real disk
    // the whole budget is mapped before the reads, and the column used to show just that, 64 MiB,
    // for streams that read 4 MiB each.
    for r in rows.iter().filter(|r| r["method"] == "engine") {
        let peak = r["memory_peak_bytes"].as_u64().expect("a byte count");
        assert!(peak > 0 && peak < 64 << 20, "{r}");
    }
    // Nor is the limit reader's its depth times its read size (16 x 4 MiB): N streams of 4 MiB
    // take N reads of 4 MiB, so N buffers (the column said 64 MiB for both).
    for r in rows.iter().filter(|r| r["method"] == "limit") {
        let n = r["streams"].as_u64().expect("a count");
        assert_eq!(r["memory_peak_bytes"].as_u64(), Some(n * (4 << 20)), "{r}");
    }
    // What a row needs to be read or checked without the table: the device, the backend, each
    // stream's bytes and read size, the engine's budget and window, the rounds and their spread
    // (a row said only its rate and ratio).
    for r in rows {
        let n = r["streams"].as_u64().unwrap();
        assert_eq!(r["device"], "disk", "{r}");
        assert_eq!(r["emulated_device"], serde_json::Value::Null, "{r}");
        // min(--file-size, --total-size / N): 4 MiB for both.
        assert_eq!(r["file_bytes"].as_u64(), Some(4 << 20), "N={n}: {r}");
        assert_eq!(r["rounds"].as_u64(), Some(1), "{r}");
        assert!(r["mib_s_min"].as_f64() <= r["mib_s"].as_f64(), "{r}");
        assert!(r["mib_s"].as_f64() <= r["mib_s_max"].as_f64(), "{r}");
        let engine = r["method"] == "engine";
        assert_eq!(r["memory_bytes"].as_u64().is_some(), engine, "{r}");
        assert_eq!(r["readahead_max_bytes"].as_u64().is_some(), engine, "{r}");
        if engine || r["method"] == "kernel" {
            assert_eq!(r["request_bytes"].as_u64(), Some(1 << 20), "{r}");
        }
        if engine || r["method"] == "limit" {
            let backend = r["backend"]
                .as_str()
                .unwrap_or_else(|| panic!("no backend: {r}"));
            assert!(["uring", "threads"].contains(&backend), "{r}");
        }
    }
    assert!(err.contains("N = 2"), "progress goes to stderr: {err}");
}

/// A table that cannot be written is named as `sim`'s and `devices`' output is: "writing to
/// standard output". The system's words alone ("No space left on device") read as a fault of the
/// disk under test.
#[test]
fn a_full_standard_output_is_named_as_such() {
    let (_guard, d) = dir("full-stdout");
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full: a Linux device that is always full");
    let out = Command::new(env!("CARGO_BIN_EXE_foresight"))
        .args([
            "bench",
            "--emulate",
            "wd800jd",
            "--streams",
            "1",
            "--file-size",
            "1MiB",
            "--total-size",
            "1MiB",
            "--policy",
            "seqp",
            "--repeat",
            "1",
            "--dir",
            &d,
        ])
        .stdout(full)
        .output()
        .expect("the binary runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("error: writing to standard output: No space left on device"),
        "{err}"
    );
}

#[test]
fn an_emulated_bench_runs_on_the_model() {
    let (_guard, d) = dir("emu");
    let (code, out, err) = foresight(&[
        "bench",
        "--emulate",
        "wd800jd",
        "--streams",
        "2",
        "--file-size",
        "2MiB",
        "--total-size",
        "4MiB",
        "--dir",
        &d,
        "--duration",
        "5s",
        "--repeat",
        "1",
        "--json",
        "--memory",
        "64MiB",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON array");
    let rows = v.as_array().unwrap();
    assert!(rows.iter().all(|r| r["method"] != "kernel"), "{out}");
    // A 7,200 rpm SATA disk of 2005 cannot deliver 200 MiB/s: the model, not the real disk, sets
    // the pace.
    for r in rows {
        assert!(r["mib_s"].as_f64().unwrap() < 200.0, "{r}");
        // The simulator's default host scheduler, which does not wait.
        assert_eq!(r["scheduler"], "deadline", "{r}");
        assert!(r["antic_expire_ns"].is_null(), "{r}");
        // The rows name the model they measured (the table and the JSON said only "emulated").
        assert_eq!(r["device"], "emulated", "{r}");
        assert_eq!(r["emulated_device"], "wd800jd", "{r}");
        assert_eq!(r["backend"], "emulated", "{r}");
    }
}

/// `--scheduler anticipatory` runs the emulated disk's queues under the anticipatory scheduler,
/// with the `--antic-expire` given, and the JSON rows and the table's head say so.
#[test]
fn an_emulated_bench_runs_the_scheduler_asked_for() {
    let (_guard, d) = dir("antic");
    let common = [
        "bench",
        "--emulate",
        "wd800jd",
        "--scheduler",
        "anticipatory",
        "--antic-expire",
        "10ms",
        "--streams",
        "2",
        "--file-size",
        "1MiB",
        "--total-size",
        "2MiB",
        "--dir",
        &d,
        "--duration",
        "5s",
        "--repeat",
        "1",
        "--memory",
        "64MiB",
        "--policy",
        "seqp",
    ];
    let (code, out, err) = foresight(&[&common[..], &["--json"]].concat());
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON array");
    let rows = v.as_array().unwrap();
    assert!(rows.iter().any(|r| r["method"] == "engine"), "{out}");
    for r in rows {
        assert_eq!(r["scheduler"], "anticipatory", "{r}");
        assert_eq!(r["antic_expire_ns"], 10_000_000, "{r}");
        assert!(r["mib_s"].as_f64().unwrap() > 0.0, "{r}");
    }
    let (code, out, err) = foresight(&common);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("anticipatory scheduler, antic_expire 10.000ms"),
        "{out}"
    );
}

/// fio runs as a child process, whose CPU time the bench's own (`RUSAGE_SELF`) does not include:
/// its row said 0.00 CPU seconds, as if reading were free. Where fio is not installed `--fio` is
/// refused up front (exit 2), and this test is skipped unless `FORESIGHT_REQUIRE_FIO` is set, as
/// CI sets it after installing fio.
#[test]
fn the_fio_row_counts_fios_own_cpu_time() {
    let installed = Command::new("fio")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !installed {
        assert!(
            std::env::var_os("FORESIGHT_REQUIRE_FIO").is_none(),
            "FORESIGHT_REQUIRE_FIO is set but fio is not installed (apt install fio)"
        );
        let (code, _, err) = foresight(&["bench", "--fio", "--streams", "1", "--dir", "unused"]);
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains("--fio") && err.contains("not installed"),
            "{err}"
        );
        eprintln!("fio is not installed; only its refusal was checked");
        return;
    }
    let (_guard, d) = dir("fio");
    let (code, out, err) = foresight(&[
        "bench",
        "--streams",
        "1",
        "--file-size",
        "8MiB",
        "--total-size",
        "8MiB",
        "--dir",
        &d,
        "--repeat",
        "1",
        "--json",
        "--memory",
        "64MiB",
        "--policy",
        "seqp",
        "--fio",
    ]);
    assert_eq!(code, 0, "{err}");
    let fio = fio_row(&out);
    assert!(fio["cpu_s"].as_f64().unwrap() > 0.0, "{fio}");
}

/// A file of the right size with holes reads its holes as zeros without touching the disk; it is
/// written again rather than reused.
#[test]
fn a_sparse_file_of_the_right_size_is_written_again() {
    use std::os::unix::fs::MetadataExt as _;
    let (_guard, d) = dir("sparse");
    let file = std::path::Path::new(&d).join("n1/stream-0000.dat");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::File::create(&file)
        .unwrap()
        .set_len(4 << 20)
        .unwrap();
    let (code, _, err) = foresight(&[
        "bench",
        "--streams",
        "1",
        "--file-size",
        "4MiB",
        "--total-size",
        "4MiB",
        "--dir",
        &d,
        "--repeat",
        "1",
        "--json",
        "--memory",
        "64MiB",
        "--policy",
        "seqp",
        "--duration",
        "5s",
    ]);
    let m = std::fs::metadata(&file);
    assert_eq!(code, 0, "{err}");
    let m = m.unwrap();
    assert_eq!(m.len(), 4 << 20);
    assert!(m.blocks() * 512 >= m.len(), "still sparse: {m:?}\n{err}");
}

/// A file preallocated to the right size (`fallocate`) has all its blocks but no data: its
/// unwritten extents read as zeros without touching the disk, as holes do. It is written again;
/// it was reused ("0B to write"), and the disk's limit read at 33 GiB/s.
#[test]
fn a_preallocated_file_of_the_right_size_is_written_again() {
    use std::os::unix::fs::MetadataExt as _;
    let (_guard, d) = dir("prealloc");
    let file = std::path::Path::new(&d).join("n1/stream-0000.dat");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    // util-linux's `fallocate`, as a user would make such a file (this crate makes no system
    // calls of its own).
    let made = std::process::Command::new("fallocate")
        .args(["-l", "4MiB"])
        .arg(&file)
        .status()
        .expect("util-linux's fallocate runs");
    assert!(made.success(), "fallocate failed: {made}");
    let m = std::fs::metadata(&file).unwrap();
    assert!(m.blocks() * 512 >= m.len(), "not preallocated: {m:?}");
    let (code, _, err) = foresight(&[
        "bench",
        "--streams",
        "1",
        "--file-size",
        "4MiB",
        "--total-size",
        "4MiB",
        "--dir",
        &d,
        "--repeat",
        "1",
        "--json",
        "--memory",
        "64MiB",
        "--policy",
        "seqp",
        "--duration",
        "5s",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("(4MiB to write)"), "{err}");
}

/// `msp+...` runs on an emulated RAID-0 (`--emulate PRESET --disks N`), where MSP has the RAID
/// driver's cache to prefetch stripes into; the JSON rows carry that cache's figures, as
/// `sim --json` does, and `null` for a policy without it. `--disks`, `--strip` and
/// `--raid-cache` without what they qualify are refused, naming the flag, before anything is
/// written.
#[test]
fn msp_runs_on_an_emulated_raid0_and_reports_the_raid_cache() {
    let (_guard, d) = dir("msp");
    let (code, out, err) = foresight(&[
        "bench",
        "--emulate",
        "cheetah-15k4",
        "--disks",
        "5",
        "--strip",
        "128KiB",
        "--policy",
        "msp+saseqp,saseqp",
        "--streams",
        "1",
        "--file-size",
        "16MiB",
        "--total-size",
        "16MiB",
        "--dir",
        &d,
        "--repeat",
        "1",
        "--json",
        "--memory",
        "64MiB",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON array");
    let rows = v.as_array().unwrap();
    let msp = rows
        .iter()
        .find(|r| r["policy"] == "msp+saseqp")
        .expect("an msp row");
    assert!(msp["raid_fetches"].as_u64().unwrap() > 0, "{msp}");
    assert!(msp["raid_prefetched_bytes"].as_u64().unwrap() > 0, "{msp}");
    let peak = msp["raid_cache_peak_bytes"].as_u64().unwrap();
    assert!(peak > 0 && peak <= 512 << 20, "{msp}");
    let alone = rows
        .iter()
        .find(|r| r["policy"] == "saseqp")
        .expect("a saseqp row");
    assert!(alone["raid_fetches"].is_null(), "{alone}");
    for (args, flag) in [
        (vec!["--disks", "5"], "--disks"),
        (vec!["--emulate", "wd800jd", "--strip", "64KiB"], "--strip"),
        (
            vec!["--emulate", "wd800jd", "--raid-cache", "8MiB"],
            "--raid-cache",
        ),
        (vec!["--emulate", "wd800jd", "--disks", "0"], "--disks"),
        (
            vec![
                "--emulate",
                "wd800jd",
                "--disks",
                "2",
                "--raid-cache",
                "100",
            ],
            "--raid-cache",
        ),
    ] {
        let (_guard, d) = dir("msp-bad");
        let mut all = vec!["bench", "--dir", d.as_str()];
        all.extend(args);
        let (code, _, err) = foresight(&all);
        assert_eq!(code, 2, "{flag}: {err}");
        assert!(err.contains(flag), "{flag}: {err}");
        assert!(
            !std::path::Path::new(&d).exists(),
            "{flag}: {d} was created"
        );
    }
}

/// `--streams` is one thread and one file per stream; past the documented 4,096 the bench would
/// start that many threads and write that many files before measuring anything. The refusal says
/// the bound, `--help` states it, and nothing is written.
#[test]
fn streams_beyond_the_documented_bound_are_refused_saying_it() {
    let (_guard, d) = dir("streams-max");
    let (code, _, err) = foresight(&["bench", "--dir", &d, "--streams", "1,100000"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--streams") && err.contains("give at most 4096"),
        "{err}"
    );
    assert!(!std::path::Path::new(&d).exists(), "{d} was created");
    let (code, help, _) = foresight(&["bench", "--help"]);
    assert_eq!(code, 0);
    assert!(help.contains("1 to 4096"), "{help}");
}

/// A --dir this user may not write in failed with the system's bare "Permission denied", which
/// says nothing of what to do. A privileged user writes anyway, so as root the bench runs as
/// `nobody` through `setpriv` (skipped, with a note, where neither way is open).
#[test]
fn a_dir_that_cannot_be_written_is_refused_saying_what_to_do() {
    use std::os::unix::fs::PermissionsExt;
    let (guard, _) = dir("unwritable");
    // `nobody` must reach the read-only directory's name.
    std::fs::set_permissions(guard.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let ro = guard.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
    let privileged = std::fs::File::create(ro.join("probe")).is_ok();
    if privileged {
        std::fs::remove_file(ro.join("probe")).unwrap();
    }
    if unprivileged(privileged).is_none() {
        return;
    }
    let bench = || {
        let mut c = unprivileged(privileged).expect("setpriv was found above");
        c.args(["bench", "--streams", "1", "--file-size", "1MiB"])
            .args(["--total-size", "1MiB", "--policy", "seqp", "--dir"]);
        c
    };
    for target in [ro.clone(), ro.join("sub")] {
        let out = bench().arg(&target).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{}: {err}", target.display());
        assert!(
            err.contains("--dir")
                && err.contains(&target.display().to_string())
                && err.contains("give a --dir this user may write in"),
            "{}: {err}",
            target.display()
        );
        // Files larger than the free space: the free-space check came first and asked for
        // smaller files, which would fail all the same.
        let mut huge = unprivileged(privileged).expect("setpriv was found above");
        huge.args(["bench", "--streams", "1", "--file-size", "100TiB"])
            .args(["--total-size", "100TiB", "--policy", "seqp", "--dir"]);
        let out = huge.arg(&target).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{}: {err}", target.display());
        assert!(
            err.contains("give a --dir this user may write in") && !err.contains("lower"),
            "{}: {err}",
            target.display()
        );
    }
}

/// A bench file of the right size that this user may not read ended the bench when the first
/// method opened it, with "evicting ...: Permission denied" (exit 1) and no way out named. It
/// is refused before anything is measured or written, naming the file and what to do.
#[test]
fn a_bench_file_this_user_may_not_read_is_refused_saying_what_to_do() {
    use std::os::unix::fs::PermissionsExt;
    let (guard, d) = dir("unreadable");
    let args = [
        "bench",
        "--streams",
        "1",
        "--file-size",
        "1MiB",
        "--total-size",
        "1MiB",
        "--policy",
        "seqp",
        "--repeat",
        "1",
        "--dir",
        &d,
    ];
    let (code, _, err) = foresight(&args);
    assert_eq!(code, 0, "{err}");
    // `nobody` must reach the file's name, and may write beside it: only the file is barred.
    std::fs::set_permissions(guard.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    for open in [d.clone(), format!("{d}/n1")] {
        std::fs::set_permissions(open, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let file = std::path::Path::new(&d).join("n1/stream-0000.dat");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o000)).unwrap();
    let privileged = std::fs::File::open(&file).is_ok();
    let Some(mut bench) = unprivileged(privileged) else {
        return;
    };
    let out = bench.args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "{} is a bench file this user may not read",
            file.display()
        )) && err.contains("make it readable"),
        "{err}"
    );
}

/// Every stream reads its own file, open for the whole measurement, so N streams need N open
/// files. Past the process's limit a bench wrote its files and then failed at the first file it
/// could not open (`ulimit -n 256` with --streams 300: "Too many open files", exit 1). A soft
/// limit below what the largest N needs is raised up to the hard one, and past the hard one
/// the bench is refused before it writes anything, naming --streams and the limit.
#[test]
fn streams_beyond_the_open_files_limit_are_refused_before_any_file_is_written() {
    let bench_under = |limit: &str, d: &str| {
        common::under_ulimit(limit)
            .args([
                "bench",
                "--dir",
                d,
                "--streams",
                "300",
                "--file-size",
                "64KiB",
            ])
            .args(["--total-size", "64MiB", "--repeat", "1", "--policy", "seqp"])
            .output()
            .expect("bash runs")
    };
    let (_guard, d) = dir("nofile");
    let out = bench_under("-n 256", &d);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--streams") && err.contains("ulimit -n"),
        "{err}"
    );
    let wrote = std::path::Path::new(&d).exists();
    assert!(!wrote, "{d} was created before the refusal");
    let hard_room = common::hard_open_files_limit().is_none_or(|hard| hard >= 1024);
    if hard_room {
        let out = bench_under("-Sn 256", &d);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
    }
}

/// A --dir on tmpfs (here /dev/shm, where it is one) has no disk beneath it and its files cannot
/// be dropped from the page cache, yet the table's header said "on the disk under DIR" and
/// nothing warned that every row measured memory copies.
#[test]
fn a_bench_on_tmpfs_says_it_measures_memory_not_a_disk() {
    let shm = std::path::Path::new("/dev/shm");
    let on_tmpfs = std::fs::read_to_string("/proc/mounts").is_ok_and(|m| {
        m.lines().any(|l| {
            l.split_whitespace().take(3).collect::<Vec<_>>() == ["tmpfs", "/dev/shm", "tmpfs"]
        })
    });
    if !on_tmpfs || !foresight_engine_may_write(shm) {
        eprintln!("skipped: /dev/shm is not a writable tmpfs here");
        return;
    }
    let guard = tempfile::Builder::new()
        .prefix("foresight-bench-test-tmpfs-")
        .tempdir_in(shm)
        .expect("making a directory on /dev/shm");
    let d = guard.path().join("bench").display().to_string();
    let (code, out, err) = foresight(&[
        "bench",
        "--dir",
        &d,
        "--streams",
        "1",
        "--file-size",
        "4MiB",
        "--repeat",
        "1",
        "--policy",
        "seqp",
    ]);
    assert_eq!(code, 0, "stderr: {err}");
    assert!(
        !out.contains("on the disk under"),
        "a tmpfs dir is not a disk: {out}"
    );
    assert!(out.contains("in memory, not on a disk"), "{out}");
    assert!(err.contains("warning:") && err.contains("tmpfs"), "{err}");
}

fn foresight_engine_may_write(dir: &std::path::Path) -> bool {
    tempfile::Builder::new().tempfile_in(dir).is_ok()
}

/// A measurement that --duration ends before the streams' files are read was reported like any
/// other, under a footer saying every stream reads its file whole: with `--duration 1ms` and
/// 64 MiB files nothing said the rates came from a fraction of the data.
#[test]
fn a_measurement_stopped_by_duration_says_so() {
    let (_guard, d) = dir("cut");
    let args = [
        "bench",
        "--streams",
        "1",
        "--file-size",
        "64MiB",
        "--request",
        "4KiB",
        "--policy",
        "seqp",
        "--dir",
        &d,
        "--duration",
        "1ms",
        "--repeat",
        "1",
    ];
    let (code, out, err) = foresight(&args);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("stopped by --duration"), "{out}");
    let mut json_args = args.to_vec();
    json_args.push("--json");
    let (code, out, err) = foresight(&json_args);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON array");
    let engine = v
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["method"] == "engine")
        .expect("an engine row");
    assert_eq!(engine["stopped_by_duration"], true, "{engine}");
}

/// `--fio` ran fio without a runtime, so --duration, which stops every other method, did not
/// stop fio: it read its files whole whatever --duration said. Skipped where fio is not
/// installed.
#[test]
fn fio_is_stopped_by_duration_like_the_other_methods() {
    let fio = std::process::Command::new("fio")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !fio {
        eprintln!("note: fio is not installed; skipped");
        return;
    }
    let (_guard, d) = dir("fio-cut");
    let (code, out, err) = foresight(&[
        "bench",
        "--streams",
        "1",
        "--file-size",
        "256MiB",
        "--limit-io",
        "4KiB",
        "--limit-depth",
        "1",
        "--policy",
        "seqp",
        "--fio",
        "--dir",
        &d,
        "--duration",
        "5ms",
        "--repeat",
        "1",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let fio = fio_row(&out);
    assert_eq!(fio["stopped_by_duration"], true, "{fio}");
}

/// fio reads whole blocks only. Given the limit's 4 MiB block over files it does not divide, it
/// left each file's tail unread (6 MiB files: the row said `stopped by --duration` though nothing
/// stopped it), read nothing of a file smaller than a block (1.5 MiB files: a row of 0.0 MiB/s),
/// and refused a 4 KiB file outright ("blocksize is larger than data set range"), which ended the
/// whole bench. Skipped where fio is not installed.
#[test]
fn fio_reads_files_its_block_size_does_not_divide_to_their_end() {
    let fio = std::process::Command::new("fio")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !fio {
        assert!(
            std::env::var_os("FORESIGHT_REQUIRE_FIO").is_none(),
            "FORESIGHT_REQUIRE_FIO is set but fio is not installed (apt install fio)"
        );
        eprintln!("note: fio is not installed; skipped");
        return;
    }
    let (_guard, d) = dir("fio-tail");
    // N = 1 reads a 6 MiB file, N = 4 four of 1.5 MiB; then one of a single page.
    for (streams, file_size) in [("1,4", "6MiB"), ("1", "4KiB")] {
        let (code, out, err) = foresight(&[
            "bench",
            "--streams",
            streams,
            "--file-size",
            file_size,
            "--total-size",
            "6MiB",
            "--memory",
            "64MiB",
            "--policy",
            "seqp",
            "--fio",
            "--dir",
            &d,
            "--repeat",
            "1",
            "--json",
        ]);
        assert_eq!(code, 0, "--file-size {file_size}: {err}");
        let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON array");
        let rows: Vec<_> = v
            .as_array()
            .expect("a JSON array")
            .iter()
            .filter(|r| r["method"] == "fio")
            .collect();
        assert_eq!(rows.len(), streams.split(',').count(), "{out}");
        for r in rows {
            assert_eq!(r["stopped_by_duration"], false, "{r}");
            assert!(r["mib_s"].as_f64().unwrap() > 0.0, "{r}");
        }
    }
}

/// A bench file's path held something other than a regular file. A FIFO there hung the bench
/// for good (creating the file opened the FIFO for writing, which waits for a reader), and a
/// dangling symbolic link had the bench write its data where the link pointed, outside --dir.
/// Each is refused (exit 2, naming the path) and nothing is written.
#[test]
fn a_bench_file_path_that_is_not_a_regular_file_is_refused() {
    let (_guard, d) = dir("not-file");
    let bench = std::path::Path::new(&d);
    let file = bench.join("n1/stream-0000.dat");
    let outside = bench.parent().unwrap().join("outside");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let args = [
        "bench",
        "--streams",
        "1",
        "--file-size",
        "4MiB",
        "--policy",
        "seqp",
        "--repeat",
        "1",
        "--dir",
        &d,
    ];
    std::os::unix::fs::symlink(&outside, &file).unwrap();
    let (code, _, err) = foresight(&args);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&file.display().to_string()) && err.contains("symbolic link"),
        "{err}"
    );
    assert!(!outside.exists(), "the bench wrote through the link");
    std::fs::remove_file(&file).unwrap();
    let made = Command::new("mkfifo").arg(&file).status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("note: mkfifo did not run; the FIFO case is skipped");
        return;
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_foresight"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    // The bench refuses at once; a minute is only the limit past which it hangs.
    let waited_from = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if waited_from.elapsed() > std::time::Duration::from_secs(60) {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("the bench hung on a FIFO at {}", file.display());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(
        err.contains(&file.display().to_string()) && err.contains("FIFO"),
        "{err}"
    );
}

/// The `fio` row of `bench --json`'s output.
fn fio_row(out: &str) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON array");
    v.as_array()
        .expect("a JSON array")
        .iter()
        .find(|r| r["method"] == "fio")
        .cloned()
        .unwrap_or_else(|| panic!("no fio row: {out}"))
}

/// A --memory too small for any read was refused as a bad --readahead-max, a flag the user had
/// not given: "--readahead-max: 4KiB is more than the engine's memory budget (0B ...); give at
/// most 0B, or raise --memory". The refusal now names --memory and the least that would do.
#[test]
fn a_memory_budget_too_small_is_refused_by_its_own_flag() {
    for memory in ["0", "1KiB", "1MiB"] {
        let (_guard, d) = dir("small-memory");
        let (code, _, err) = foresight(&[
            "bench",
            "--dir",
            &d,
            "--total-size",
            "64MiB",
            "--file-size",
            "1MiB",
            "--memory",
            memory,
        ]);
        assert_eq!(code, 2, "--memory {memory}: {err}");
        assert!(
            err.starts_with("error: --memory: "),
            "--memory {memory}: {err}"
        );
        assert!(!err.contains("--readahead-max"), "--memory {memory}: {err}");
        assert!(err.contains("give at least"), "--memory {memory}: {err}");
    }
}

/// Waits for `child` to exit, at most a minute; past that it is killed and the test fails.
fn exit_status(child: &mut std::process::Child, why: &str) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{why}");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// A bench stopped by Ctrl-C (or SIGTERM, SIGHUP) while it wrote its files left the file it was
/// writing cut short under its final name: the space stayed taken, and nothing told it from a
/// bench file but its size. A complete file is kept (the next run reuses it); the one under way
/// is removed.
#[test]
fn a_bench_stopped_while_writing_its_files_leaves_no_partial_file() {
    let (_guard, d) = dir("sigint");
    let file_bytes: u64 = 1 << 30;
    let file = std::path::Path::new(&d).join("n1/stream-0000.dat");
    for signal in ["-INT", "-TERM"] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_foresight"))
            .args([
                "bench",
                "--streams",
                "1",
                "--file-size",
                "1GiB",
                "--total-size",
                "1GiB",
                "--policy",
                "seqp",
                "--repeat",
                "1",
                "--dir",
                &d,
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("the binary runs");
        // The writing is under way once the file holds bytes.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !std::fs::metadata(&file).is_ok_and(|m| m.len() > 0) {
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the bench never began {}", file.display());
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let sent = Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let status = exit_status(&mut child, "the signal did not stop the bench");
        assert!(!status.success(), "{signal}: {status}");
        // A disk fast enough to finish the file before the signal leaves it whole, and reusable.
        let left = std::fs::metadata(&file).map(|m| m.len());
        assert!(
            left.as_ref().map_or(true, |&n| n == file_bytes),
            "{signal}: {} left at {left:?} bytes of {file_bytes}",
            file.display()
        );
        let _ = std::fs::remove_file(&file);
    }
}

/// The running children of process `pid` whose command is `comm` and whose arguments include
/// `arg`, from `/proc`.
fn children_named(pid: u32, comm: &str, arg: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|child| {
            // `PID (COMM) STATE PPID ...`; a command has no `)` here.
            std::fs::read_to_string(format!("/proc/{child}/stat")).is_ok_and(|stat| {
                let Some((head, tail)) = stat.rsplit_once(") ") else {
                    return false;
                };
                head.ends_with(&format!("({comm}"))
                    && !tail.starts_with('Z')
                    && tail.split(' ').nth(1) == Some(pid.to_string().as_str())
            })
        })
        .filter(|child| {
            std::fs::read(format!("/proc/{child}/cmdline"))
                .is_ok_and(|c| c.split(|&b| b == 0).any(|a| a == arg.as_bytes()))
        })
        .collect()
}

/// A bench stopped by SIGINT while fio measured the disk left fio running under init, reading
/// the disk for the rest of its runtime. fio now ends with the bench.
#[test]
fn a_bench_stopped_while_fio_runs_takes_fio_with_it() {
    let (_guard, d) = dir("fio-stop");
    let mut child = Command::new(env!("CARGO_BIN_EXE_foresight"))
        .args([
            "bench",
            "--dir",
            &d,
            "--streams",
            "1",
            "--file-size",
            "512MiB",
            "--total-size",
            "512MiB",
            "--policy",
            "seqp",
            "--repeat",
            "1",
            "--fio",
            // fio reads 4 KiB at a time, one in flight (64 MiB in 1.1 s on the development
            // machine, so about 9 s for the file), for up to 30 s: it is stopped long before.
            "--limit-io",
            "4KiB",
            "--limit-depth",
            "1",
            "--duration",
            "30s",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the binary runs");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let fio = loop {
        // The measuring fio, not the `fio --version` that checks it is installed.
        if let Some(&fio) = children_named(child.id(), "fio", "--name=foresight-limit").first() {
            break fio;
        }
        if std::time::Instant::now() > deadline || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            let _ = child.wait();
            panic!("fio never started under the bench");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success());
    let status = exit_status(&mut child, "the signal did not stop the bench");
    assert_eq!(status.code(), Some(130), "{status}");
    // Gone, or a zombie until init reaps it, within 2 s: the signal ends it at once, where left
    // alone it reads on for seconds.
    let running = || {
        std::fs::read_to_string(format!("/proc/{fio}/stat")).is_ok_and(|stat| {
            stat.rsplit_once(") ")
                .is_some_and(|(_, tail)| !tail.starts_with('Z'))
        })
    };
    let until = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while running() && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let left = running();
    if left {
        let _ = Command::new("kill")
            .args(["-KILL", &fio.to_string()])
            .status();
    }
    assert!(
        !left,
        "fio (pid {fio}) still runs 2 s after the bench was stopped"
    );
}

/// fio is given an N's directory and reads every file in it: a file of the user's there made
/// its rate cover other data than the limit beside it (a 256 MiB file beside 16 MiB of bench
/// data). Such a file is now refused, exit 2, naming it.
#[test]
fn fio_refuses_a_directory_holding_files_not_the_benchs() {
    let (_guard, d) = dir("fio-foreign");
    let stray = std::path::Path::new(&d).join("n1/extra.bin");
    std::fs::create_dir_all(stray.parent().unwrap()).unwrap();
    std::fs::write(&stray, vec![1u8; 8192]).unwrap();
    let (code, _, err) = foresight(&[
        "bench",
        "--dir",
        &d,
        "--streams",
        "1",
        "--file-size",
        "4MiB",
        "--total-size",
        "4MiB",
        "--policy",
        "seqp",
        "--repeat",
        "1",
        "--fio",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("error: --fio: ") && err.contains("extra.bin is not one of the bench's files"),
        "{err}"
    );
}

/// A --dir whose name is not UTF-8 reaches fio as its bytes: it was passed as its lossy display
/// (a replacement character), and fio failed to find it after everything else had run.
#[test]
fn fio_reads_a_directory_whose_name_is_not_utf8() {
    use std::os::unix::ffi::OsStrExt as _;
    let (guard, _) = dir("fio-bytes");
    let d = guard
        .path()
        .join(std::ffi::OsStr::from_bytes(b"bad\xffdir"));
    let out = Command::new(env!("CARGO_BIN_EXE_foresight"))
        .args([
            "bench",
            "--streams",
            "1",
            "--file-size",
            "4MiB",
            "--total-size",
            "4MiB",
            "--policy",
            "seqp",
            "--repeat",
            "1",
            "--fio",
            "--json",
            "--dir",
        ])
        .arg(&d)
        .output()
        .expect("the binary runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let fio = fio_row(&String::from_utf8_lossy(&out.stdout));
    assert!(fio["mib_s"].as_f64().unwrap() > 0.0, "{fio}");
}

/// Files that are not whole MiB (a total split over N streams, cut to whole pages) were counted in
/// KiB in the progress lines, `101 files, 3145376KiB in all` and `written 1490MiB of 3145376KiB`
/// for the README's 100-stream run; they are rounded to a tenth of the largest unit now.
#[test]
fn the_bench_files_are_counted_in_a_readable_unit() {
    let (_guard, d) = dir("readable");
    let (code, _, err) = foresight(&[
        "bench",
        "--streams",
        "3",
        "--total-size",
        "10MiB",
        "--policy",
        "seqp",
        "--repeat",
        "1",
        "--dir",
        &d,
    ]);
    assert_eq!(code, 0, "{err}");
    // 3 files of 853 pages: 10,236 KiB.
    assert!(
        err.contains("3 files, about 10.0MiB in all") && err.contains("(about 10.0MiB to write)"),
        "{err}"
    );
}

/// A bench stopped by Ctrl-C said "one cut short was removed" whatever it was doing: stopped
/// while it measured, with every file already written by an earlier run, it had cut nothing
/// short and removed nothing. The note now names a removal only when the stop made one.
#[test]
fn a_bench_stopped_while_measuring_says_it_removed_nothing() {
    use std::io::BufRead as _;
    let (_guard, d) = dir("stop");
    let args = [
        "bench",
        "--dir",
        &d,
        "--streams",
        "1",
        "--file-size",
        "4MiB",
        "--total-size",
        "4MiB",
        "--policy",
        "seqp",
        "--memory",
        "64MiB",
        "--readahead-max",
        "1MiB",
        "--max-io",
        "1MiB",
    ];
    // The first run writes the file.
    let (code, _, err) = foresight(&[&args[..], &["--repeat", "1"]].concat());
    assert_eq!(code, 0, "{err}");
    // The second finds it written, and measures for 100 rounds: it is stopped long before.
    let mut child = Command::new(env!("CARGO_BIN_EXE_foresight"))
        .args(args)
        .args(["--repeat", "100"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    err.read_line(&mut first).unwrap();
    assert!(first.contains("0B to write"), "{first:?}");
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success());
    let status = child.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    assert_eq!(status.code(), Some(130), "{status}: {rest}");
    let note = rest
        .lines()
        .find(|l| l.contains("stopped by SIGINT"))
        .unwrap_or_else(|| panic!("no note of the stop: {rest:?}"));
    assert!(note.contains("the bench had not finished"), "{note}");
    assert!(!note.contains("removed"), "nothing was removed: {note}");
    let kept = std::fs::read_dir(&d).map_or(0, |e| e.count());
    assert!(kept > 0, "the written file is kept");
}
