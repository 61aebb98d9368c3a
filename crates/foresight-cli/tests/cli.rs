//! The `foresight` binary end to end: exit codes, messages, and the JSON contract.

use std::process::Command;

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

/// Runs `foresight args`, which must exit 2 naming `must_name` without a panic; returns its
/// standard error, for a caller that checks more of the message.
fn expect_input_error(args: &[&str], must_name: &str) -> String {
    let (code, _, err) = foresight(args);
    assert_eq!(code, 2, "{args:?} should exit 2; stderr: {err}");
    assert!(
        err.contains(must_name),
        "{args:?}: message should name `{must_name}`: {err}"
    );
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    err
}

/// A new directory of the test's own under the system's temporary directory (`foresight-NAME-`
/// and a random suffix), removed with everything in it when the guard is dropped, also when the
/// test fails; a test's files and the outputs it asks for go inside it.
fn temp_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("foresight-{name}-"))
        .tempdir()
        .expect("making a temporary directory")
}

/// Sizes past TiB are read in PiB and EiB, the units the bound is stated in: `1EiB` and `20EiB`
/// were refused as unknown units, the second while the bound read "(4 EiB)". Past the bound a size
/// is refused as too large, naming the key.
#[test]
fn sizes_in_eib_are_read_and_one_past_the_bound_is_refused_as_too_large() {
    let err = expect_input_error(&["sim", "--set", "host.memory=20EiB"], "host.memory");
    assert!(err.contains("too large"), "{err}");
    assert!(!err.contains("unknown unit"), "{err}");
    // 1 EiB is read, and refused only as more memory than a host may be given.
    let err = expect_input_error(&["sim", "--set", "host.memory=1EiB"], "host.memory");
    assert!(err.contains("must be between"), "{err}");
}

/// A size past TiB is printed in PiB or EiB, and an exact one without "about": the refusal of
/// `host.memory=1EiB` read "must be between 1MiB and 1024TiB, got `1EiB` (about 1048576.0TiB)".
#[test]
fn sizes_past_tib_are_printed_in_pib_and_eib_and_exact_ones_without_about() {
    let err = expect_input_error(&["sim", "--set", "host.memory=1EiB"], "host.memory");
    assert!(
        err.contains("must be between 1MiB and 1PiB, got `1EiB`"),
        "{err}"
    );
    assert!(!err.contains("about") && !err.contains("TiB"), "{err}");
    let err = expect_input_error(
        &["sim", "--set", "workload.file_size=4EiB"],
        "workload.file_size",
    );
    assert!(err.contains("and 1PiB, got `4EiB`"), "{err}");
    assert!(!err.contains("about"), "{err}");
    let dir = temp_dir("huge-memory");
    let dir = dir.path().to_str().expect("a UTF-8 temporary path");
    let err = expect_input_error(&["bench", "--dir", dir, "--memory", "2EiB"], "--memory");
    assert!(err.contains("--memory: 2EiB is more than"), "{err}");
}

/// `foresight devices` lists the network link presets beside the drives, yet `device.preset =
/// "lan-10g"` was told "`lan-10g` is not a preset". The refusal says it is a link and where it goes.
#[test]
fn a_link_preset_given_as_a_device_says_where_links_go() {
    let err = expect_input_error(&["sim", "--set", "device.preset=lan-10g"], "device.preset");
    assert!(err.contains("`lan-10g` is a network link preset"), "{err}");
    assert!(err.contains("[network] link = \"lan-10g\""), "{err}");
    assert!(!err.contains("is not a preset"), "{err}");
    let err = expect_input_error(&["sim", "--set", "device.preset=nope"], "device.preset");
    assert!(
        err.contains("`nope` is not a preset") && err.contains("cheetah-15k4"),
        "{err}"
    );
}

#[test]
fn bad_input_exits_2_naming_the_problem() {
    expect_input_error(&["sim", "--set", "workload.bogus=1"], "workload.bogus");
    // Refused at once, not after the first experiment has run.
    expect_input_error(
        &[
            "reproduce",
            "collapse",
            "--quick",
            "--out",
            "/proc/foresight-out",
        ],
        "--out",
    );
    expect_input_error(&["sim", "--set", "host.memory=12parsecs"], "host.memory");
    expect_input_error(
        &["sim", "--set", "workload.request=4Kb"],
        "workload.request",
    );
    expect_input_error(&["sim", "--set", "workload.streams=0"], "workload.streams");
    expect_input_error(&["sim", "--set", "workload.streams=-5"], "workload.streams");
    expect_input_error(&["sim", "--set", "device.preset=floppy"], "device.preset");
    expect_input_error(
        &["sim", "--config", "/nonexistent/foresight.toml"],
        "/nonexistent/foresight.toml",
    );
    expect_input_error(
        &[
            "sim",
            "--set",
            "workload.kind=trace",
            "--set",
            "workload.trace=/nonexistent/t.trace",
        ],
        "/nonexistent/t.trace",
    );
    // A link of 1e29 bytes/s ran (exit 0) as though it were one.
    expect_input_error(
        &[
            "sim",
            "--set",
            "dfs.system=aps",
            "--set",
            "network.bandwidth=99999999999999999999999MB/s",
            "--set",
            "workload.duration=1s",
        ],
        "network.bandwidth",
    );
    // Empty: valid TOML, but it ran the defaults under the file's name with exit 0.
    expect_input_error(
        &["sim", "--config", "/dev/null"],
        "/dev/null: holds no keys",
    );
    expect_input_error(&["reproduce", "nonesuch"], "nonesuch");
    // Refused before the simulation runs, like `reproduce --out`.
    expect_input_error(
        &[
            "sim",
            "--set",
            "workload.duration=1s",
            "--requests-out",
            "/nonexistent/requests.csv",
        ],
        "--requests-out",
    );
    expect_input_error(&["sim", "--set", "novalue"], "KEY=VALUE");
    // Written as a file named `-` in the current directory (exit 0), where `-` means standard
    // output to other tools.
    expect_input_error(
        &[
            "sim",
            "--set",
            "workload.duration=1s",
            "--requests-out",
            "-",
        ],
        "--requests-out -",
    );
    assert!(
        !std::path::Path::new("-").exists(),
        "a file named - was written"
    );
    // An --out that is a file was refused with the operating system's "File exists", which
    // reads as though the directory were fine.
    let file_guard = temp_dir("out-file");
    let file = file_guard.path().join("file");
    std::fs::write(&file, b"a file").unwrap();
    let shown = file.display().to_string();
    expect_input_error(
        &["reproduce", "collapse", "--quick", "--out", &shown],
        "is not a directory",
    );
}

/// MSP on a volume without stripes is refused naming the key; on a JBOD, several disks, the
/// advice said to use seqp or saseqp "on a single device".
#[test]
fn msp_without_stripes_is_refused_with_advice_true_of_every_device_kind() {
    for kind in ["hdd", "ssd", "jbod"] {
        let err = expect_input_error(
            &[
                "sim",
                "--set",
                &format!("device.kind={kind}"),
                "--set",
                "policy.name=msp+seqp",
            ],
            "policy.name",
        );
        assert!(
            err.contains("needs a striped volume") && !err.contains("single device"),
            "{kind}: {err}"
        );
    }
}

/// Changing only the device to a small drive gave no run: the webserver's default 8 GiB set was
/// refused as though the user had asked for `workload.files = 2048`. Left out, the count is now
/// what fits; given, a count that does not fit is refused naming the most that do.
#[test]
fn a_webserver_on_a_small_drive_runs_with_the_files_that_fit() {
    let web = [
        "sim",
        "--set",
        "workload.kind=webserver",
        "--set",
        "device.preset=cheetah-4lp",
        "--set",
        "workload.duration=1s",
    ];
    let (code, out, err) = foresight(&[&web[..], &["--json"]].concat());
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"app_requests\""), "{out}");
    let err = expect_input_error(
        &[&web[..], &["--set", "workload.files=2048"]].concat(),
        "workload.files`: `2048`",
    );
    assert!(err.contains("give workload.files at most"), "{err}");
}

/// The controller holds the host's read that missed and its read-ahead whole. The check used to
/// set the read-ahead against `workload.request` alone, so a host read as large as seqp's window
/// or a directed piece went down with more read-ahead than the cache holds, and was accepted.
#[test]
fn a_controller_read_ahead_must_fit_beside_the_hosts_largest_read() {
    let controller = ["--set", "device.controller_cache=4MiB", "--set"];
    let (code, _, err) = foresight(
        &[
            &["sim"][..],
            &controller,
            &[
                "device.controller_readahead=2MiB",
                "--set",
                "policy.readahead_max=4MiB",
                "--set",
                "workload.duration=1s",
            ],
        ]
        .concat(),
    );
    assert_eq!(code, 2, "{err}");
    for part in [
        "device.controller_readahead",
        "2MiB",
        "device.controller_cache = `4MiB`",
        "policy.readahead_max = `4MiB`",
        "workload.request = 64KiB (default)",
    ] {
        assert!(err.contains(part), "should name `{part}`: {err}");
    }
    // A directed piece is 1 MiB, whatever the request.
    let (code, _, err) = foresight(&[
        "sim",
        "--set",
        "policy.name=directed",
        "--set",
        "workload.kind=scan",
        "--set",
        "device.controller_cache=1536KiB",
        "--set",
        "device.controller_readahead=1MiB",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("device.controller_readahead") && err.contains("`directed`"),
        "{err}"
    );
    // Read-ahead and the largest window together fill the cache: that runs.
    let (code, _, err) = foresight(
        &[
            &["sim"][..],
            &controller,
            &[
                "device.controller_readahead=2MiB",
                "--set",
                "policy.readahead_max=2MiB",
                "--set",
                "workload.duration=1s",
            ],
        ]
        .concat(),
    );
    assert_eq!(code, 0, "{err}");
}

#[test]
fn a_requests_file_that_cannot_be_written_is_named() {
    // /dev/full opens, so the failure comes from a write after the run, not from the create.
    if !std::path::Path::new("/dev/full").exists() {
        return;
    }
    let (code, _, err) = foresight(&[
        "sim",
        "--set",
        "workload.duration=1s",
        "--requests-out",
        "/dev/full",
    ]);
    assert_eq!(code, 1, "a write error is an I/O failure: {err}");
    assert!(
        err.contains("--requests-out /dev/full"),
        "the message should name the file: {err}"
    );
}

#[test]
fn reproduce_runs_an_experiment_named_twice_once_and_list_takes_no_names() {
    let out_guard = temp_dir("cli-twice");
    let out = out_guard.path().join("out");
    let out_s = out.to_str().unwrap();
    let (code, _, err) = foresight(&[
        "reproduce",
        "collapse",
        "collapse",
        "--quick",
        "--out",
        out_s,
    ]);
    assert_eq!(code, 0, "{err}");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert_eq!(report.matches("\n## collapse").count(), 1, "{report}");
    // `--list` would list everything and ignore the names (a mistyped one included).
    let (code, _, err) = foresight(&["reproduce", "--list", "colapse"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--list"), "{err}");
    // The usage under the refusal shows the two forms the command takes, not the refused pair as
    // though it were one (clap's own line read `foresight reproduce --list [EXPERIMENTS]...`).
    assert!(
        !err.contains("--list [") && err.contains("foresight reproduce --list\n"),
        "{err}"
    );
    // Nor a directory, which it ignored (exit 0, nothing written there).
    let (code, _, err) = foresight(&["reproduce", "--list", "--out", out_s]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--list") && err.contains("--out"), "{err}");
}

/// `reproduce --help` names every experiment of the catalogue, so that it cannot fall behind
/// `--list`, and says where the quick run's reductions are told.
#[test]
fn reproduce_help_names_every_experiment_and_the_quick_setup() {
    let (code, list, err) = foresight(&["reproduce", "--list"]);
    assert_eq!(code, 0, "{err}");
    let (code, help, err) = foresight(&["reproduce", "--help"]);
    assert_eq!(code, 0, "{err}");
    let names: Vec<&str> = list
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(names.len() >= 7, "{list}");
    for name in names {
        assert!(
            help.contains(name),
            "--help does not name `{name}`:\n{help}"
        );
    }
    assert!(help.contains("without --quick"), "{help}");
}

/// A relative path given with `--set` is taken from the current directory, however the `--set`
/// names it: by its key, with blanks around the dots, or inside an inline table of its section
/// (which was taken from the config file's directory, as only the exact dotted key was looked
/// for). One the config file gives is still taken from the file's directory.
#[test]
fn a_path_given_with_set_is_taken_from_the_current_directory() {
    let dir_guard = temp_dir("cli-setpath");
    let dir = dir_guard.path().join("dir");
    std::fs::create_dir_all(dir.join("cfg")).unwrap();
    std::fs::write(dir.join("cfg/c.toml"), "seed = 3\n").unwrap();
    std::fs::write(
        dir.join("cfg/f.toml"),
        "[workload]\nkind = \"trace\"\ntrace = \"../t.trace\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("t.trace"),
        "R Miss 1000 8 1000.0 0.0\nR Miss 2000 8 1000.0 500.0\n",
    )
    .unwrap();
    for (config, sets) in [
        (
            "cfg/c.toml",
            &["workload.kind=trace", "workload.trace=t.trace"][..],
        ),
        (
            "cfg/c.toml",
            &["workload . trace = t.trace", "workload.kind=trace"][..],
        ),
        (
            "cfg/c.toml",
            &["workload={kind=\"trace\", trace=\"t.trace\"}"][..],
        ),
        ("cfg/f.toml", &["workload.closed=true"][..]),
    ] {
        let mut args = vec!["sim", "--config", config, "--json"];
        for set in sets {
            args.extend(["--set", set]);
        }
        let out = Command::new(env!("CARGO_BIN_EXE_foresight"))
            .current_dir(&dir)
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        // It used to look for cfg/t.trace, beside the config file.
        assert_eq!(out.status.code(), Some(0), "{sets:?}: {err}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("\"app_requests\":2"),
            "{sets:?}"
        );
    }
}

/// A list or table where a config file's key takes a plain value, and a list of sections
/// (`[[workload]]`) where it takes one, are refused with the file and line, a `--set` into that
/// list too (which used to be told to name an element, `workload[0]`, which the config then
/// refused as well).
#[test]
fn a_list_or_table_in_a_config_file_is_refused_with_its_line() {
    let dir = temp_dir("cli-list");
    for (text, sets, line) in [
        ("[workload]\nrequest = [\"4KiB\"]\n", &[][..], 2),
        ("[workload]\nrequest = {size=\"4KiB\"}\n", &[][..], 2),
        ("seed = 1\n[[workload]]\nstreams = 2\n", &[][..], 2),
        (
            "seed = 1\n[[workload]]\nstreams = 2\n",
            &["--set", "workload.streams=3"][..],
            2,
        ),
    ] {
        let cfg = dir.path().join("l.toml");
        std::fs::write(&cfg, text).unwrap();
        let mut args = vec!["sim", cfg.to_str().unwrap()];
        args.extend(sets);
        let err = expect_input_error(&args, &format!("(set at {}:{line})", cfg.display()));
        assert!(!err.contains("workload[0]"), "{text}: {err}");
    }
}

#[test]
fn malformed_files_name_file_and_line() {
    let dir_guard = temp_dir("cli-test");
    let dir = dir_guard.path().join("dir");
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("bad.toml");
    std::fs::write(&cfg, "seed = 1\n[workload\nstreams = 2\n").unwrap();
    expect_input_error(&["sim", "--config", cfg.to_str().unwrap()], "bad.toml:2");
    let trace = dir.join("bad.trace");
    std::fs::write(&trace, "R Hit 100 8 1.0 2.0\nR Hit 200 eight 1.0 2.0\n").unwrap();
    expect_input_error(
        &[
            "sim",
            "--set",
            "workload.kind=trace",
            "--set",
            &format!("workload.trace={}", trace.display()),
        ],
        "bad.trace:2",
    );
}

/// A `--config` that names a directory, or nothing, was refused with the operating system's
/// words alone (`DIR: cannot read: Is a directory (os error 21)`), which say what is wrong but
/// not what to give instead.
#[test]
fn a_config_path_that_is_no_file_says_to_give_a_config_file() {
    let dir = temp_dir("config-dir");
    let shown = dir.path().display().to_string();
    let missing = dir.path().join("missing.toml").display().to_string();
    for path in [shown.as_str(), missing.as_str()] {
        expect_refusal_saying(
            &["sim", "--config", path],
            path,
            "give the path of a TOML config file",
        );
    }
}

/// The `--set`s of paper 002's analytic tier stack, two levels of fixed per-block times, under a
/// hinted workload; a run adds its policy and reads.
const CONSTANT_TIERS_HINTED: [&str; 10] = [
    "--set",
    "device.kind=constant",
    "--set",
    "device.t_upper=52ms",
    "--set",
    "device.t_lower=120ms",
    "--set",
    "device.t_lower_to_upper=122ms",
    "--set",
    "workload.kind=hinted",
];

/// An empty file path names no file. `--set workload.trace=` was read as the current directory's
/// "" and refused as `: cannot read disksim trace: No such file or directory`, naming neither the
/// key nor a file; in a config file, `trace = ""` became the config's own directory.
#[test]
fn an_empty_file_path_is_refused_naming_its_key() {
    let hinted: Vec<&str> = ["sim"]
        .into_iter()
        .chain(CONSTANT_TIERS_HINTED)
        .chain(["--set", "workload.trace="])
        .collect();
    for args in [
        &[
            "sim",
            "--set",
            "workload.kind=trace",
            "--set",
            "workload.trace=",
        ][..],
        &["sim", "--set", "device.disksim="][..],
        &hinted[..],
    ] {
        let key = args.last().unwrap().trim_end_matches('=');
        expect_refusal_saying(
            args,
            &format!("config key `{key}`: is empty"),
            "give the path of",
        );
    }
    let dir = temp_dir("empty-path");
    let cfg = dir.path().join("sim.toml");
    std::fs::write(&cfg, "[workload]\nkind = \"trace\"\ntrace = \"\"\n").unwrap();
    let err = expect_input_error(
        &["sim", "--config", cfg.to_str().unwrap()],
        "config key `workload.trace`: is empty",
    );
    assert!(err.contains("sim.toml:3"), "{err}");
}

#[test]
fn sim_json_has_every_contract_key() {
    let (code, out, err) = foresight(&[
        "sim",
        "--json",
        "--set",
        "workload.streams=4",
        "--set",
        "workload.file_size=8MiB",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON object");
    for key in [
        "throughput_mib_s",
        "elapsed_s",
        "app_requests",
        "app_bytes",
        "device_requests",
        "device_bytes",
        "prefetched_bytes",
        "wasted_bytes",
        "mean_latency_ms",
        "p99_latency_ms",
        "stall_s",
        "breakdown",
        "wall_s",
        "memory_peak_bytes",
    ] {
        assert!(v.get(key).is_some(), "missing `{key}` in {out}");
    }
    for key in ["seek_s", "rotate_s", "transfer_s", "queue_s", "overhead_s"] {
        assert!(v["breakdown"].get(key).is_some(), "missing breakdown.{key}");
    }
    assert_eq!(v["app_bytes"], 4 * 8 * 1024 * 1024);
}

/// DESIGN.md section 7's `sim --json` keys, with the unit each name states.
const DESIGN_KEYS: &[&str] = &[
    "throughput_mib_s",
    "elapsed_s",
    "app_requests",
    "app_bytes",
    "device_requests",
    "device_bytes",
    "prefetched_bytes",
    "wasted_bytes",
    "mean_latency_ms",
    "p99_latency_ms",
    "stall_s",
    "breakdown",
];

/// DESIGN.md promises its keys for every `sim --json`, not only the default run: each kind of run
/// (a host over each device kind and block-level policy, each workload, a trace replay, a `[dfs]`
/// model, a tier stack) has every key, as a number of the kind its unit says, and
/// `throughput_mib_s` is `app_bytes` in MiB over `elapsed_s`.
#[test]
fn every_kind_of_run_has_the_design_json_keys_in_their_units() {
    let dir_guard = temp_dir("kinds");
    let trace = dir_guard.path().join("t.trace");
    std::fs::write(&trace, "R Hit 100 8 1.0 1.0\nR Hit 5000 16 1.0 1.0\n").unwrap();
    let trace_key = format!("workload.trace={}", trace.display());
    let kinds: &[&[&str]] = &[
        &["workload.file_size=1MiB"],
        &[
            "device.kind=ssd",
            "device.preset=ssd-850evo",
            "workload.file_size=1MiB",
        ],
        &[
            "device.kind=raid0",
            "host.raid_cache=8MiB",
            "policy.name=msp+saseqp",
            "workload.file_size=1MiB",
        ],
        &[
            "device.kind=jbod",
            "device.disks=2",
            "workload.streams=2",
            "workload.file_size=1MiB",
        ],
        &[
            "device.kind=raid0",
            "policy.name=streams",
            "workload.streams=4",
            "workload.file_size=1MiB",
        ],
        &["workload.kind=random", "workload.requests=20"],
        &[
            "workload.kind=webserver",
            "workload.duration=100ms",
            "workload.files=10",
            "workload.file_size=128KiB",
        ],
        &[
            "workload.kind=scan",
            "policy.name=directed",
            "workload.file_size=1MiB",
        ],
        &[
            "workload.kind=trace",
            "workload.format=disksim",
            trace_key.as_str(),
        ],
        &["dfs.system=aps", "workload.duration=50ms"],
        &[
            "device.kind=constant",
            "device.t_upper=1ms",
            "device.t_lower=2ms",
            "device.t_lower_to_upper=3ms",
            "workload.kind=hinted",
            "workload.reads=20",
        ],
    ];
    for sets in kinds {
        let mut args = vec!["sim", "--json"];
        for s in sets.iter() {
            args.extend(["--set", s]);
        }
        let (code, out, err) = foresight(&args);
        assert_eq!(code, 0, "{sets:?}: {err}");
        let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON object");
        for key in DESIGN_KEYS {
            let value = v
                .get(key)
                .unwrap_or_else(|| panic!("{sets:?}: no `{key}` in {out}"));
            if key.ends_with("_requests") || key.ends_with("_bytes") {
                assert!(value.is_u64(), "{sets:?}: `{key}` is {value}, not a count");
            } else if *key != "breakdown" {
                let x = value.as_f64();
                assert!(x.is_some_and(|x| x >= 0.0), "{sets:?}: `{key}` is {value}");
            }
        }
        for key in ["seek_s", "rotate_s", "transfer_s", "queue_s", "overhead_s"] {
            let x = v["breakdown"].get(key).and_then(|x| x.as_f64());
            assert!(
                x.is_some_and(|x| x >= 0.0),
                "{sets:?}: breakdown.{key} is {x:?}"
            );
        }
        let app_mib = v["app_bytes"].as_f64().unwrap() / (1u64 << 20) as f64;
        let elapsed_s = v["elapsed_s"].as_f64().unwrap();
        let mib_s = v["throughput_mib_s"].as_f64().unwrap();
        assert!(app_mib > 0.0 && elapsed_s > 0.0, "{sets:?}: {out}");
        assert!(
            (mib_s * elapsed_s - app_mib).abs() <= 1e-6 * app_mib,
            "{sets:?}: {mib_s} MiB/s over {elapsed_s} s is not {app_mib} MiB"
        );
    }
}

/// The keys of a device preset in `devices --json`, in the order of the table's columns.
const DEVICE_KEYS: [&str; 8] = [
    "name",
    "kind",
    "rpm",
    "avg_seek_ms",
    "media_mib_s_max",
    "media_mib_s_min",
    "capacity_bytes",
    "source",
];
/// The keys of a link preset in `devices --json`, in the order of the table's columns.
const LINK_KEYS: [&str; 6] = [
    "name",
    "kind",
    "delay_ms",
    "bandwidth_mib_s",
    "window_bytes",
    "source",
];

#[test]
fn devices_json_lists_every_preset_with_the_contract_keys() {
    let (code, out, err) = foresight(&["devices", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON array");
    let arr = v.as_array().expect("array");
    for name in [
        "cheetah-15k5",
        "atlas-10k",
        "ibm-18es",
        "cheetah-4lp",
        "wd800jd",
        "st6000nm0024",
        "ssd-850evo",
    ] {
        let p = arr
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("preset {name} missing"));
        for key in DEVICE_KEYS {
            assert!(p.get(key).is_some(), "{name} lacks {key}");
        }
    }
    // The link presets `network.link` takes are listed too (they were not).
    for name in [
        "lan-10g",
        "lan-10g-w30m",
        "lan-1g",
        "metro-10g",
        "wan-10g",
        "wan-1g",
    ] {
        let l = arr
            .iter()
            .find(|l| l["name"] == name)
            .unwrap_or_else(|| panic!("link preset {name} missing"));
        assert_eq!(l["kind"], "link", "{l}");
        for key in LINK_KEYS {
            assert!(l.get(key).is_some(), "{name} lacks {key}");
        }
    }
    let lan = arr.iter().find(|l| l["name"] == "lan-10g").unwrap();
    assert_eq!(lan["delay_ms"], 0.05);
    assert_eq!(lan["window_bytes"], 6_000_000);
}

/// An SSD has no spindle and does not seek. Its row showed `rpm 0` and `seek 0.00 ms`, figures
/// that read as measured; the table now shows a dash and the JSON `null`.
#[test]
fn devices_shows_no_rpm_or_seek_for_an_ssd() {
    let (code, out, err) = foresight(&["devices"]);
    assert_eq!(code, 0, "{err}");
    let row = out
        .lines()
        .find(|l| l.starts_with("ssd-850evo"))
        .unwrap_or_else(|| panic!("no SSD row in:\n{out}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[1..4], ["ssd", "-", "-"], "{row}");
    let hdd = out.lines().find(|l| l.starts_with("wd800jd")).unwrap();
    assert_eq!(hdd.split_whitespace().nth(2), Some("7200"), "{hdd}");
    let (code, out, err) = foresight(&["devices", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let ssd = v
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "ssd-850evo")
        .unwrap();
    assert!(
        ssd["rpm"].is_null() && ssd["avg_seek_ms"].is_null(),
        "{ssd}"
    );
}

/// Each entry's keys come in the order of the text table's columns (name, kind, then the
/// figures, then the source), not sorted by name as a JSON map would have them (`avg_seek_ms`
/// first, `name` in the middle). Read from the text, since a parsed map has no order.
#[test]
fn devices_json_keys_come_in_the_order_of_the_table() {
    let (code, out, err) = foresight(&["devices", "--json"]);
    assert_eq!(code, 0, "{err}");
    // The pretty printer puts each key of an entry on its own line, indented by four spaces.
    let mut entries: Vec<Vec<String>> = Vec::new();
    for line in out.lines() {
        if line == "  {" {
            entries.push(Vec::new());
        } else if let Some(rest) = line.strip_prefix("    \"") {
            let key = rest.split('"').next().unwrap().to_string();
            entries.last_mut().expect("a key inside an entry").push(key);
        }
    }
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON array");
    let arr = v.as_array().expect("array");
    assert_eq!(entries.len(), arr.len(), "{out}");
    for (keys, entry) in entries.iter().zip(arr) {
        let want: &[&str] = if entry["kind"] == "link" {
            &LINK_KEYS
        } else {
            &DEVICE_KEYS
        };
        assert_eq!(keys, want, "{entry}");
    }
}

#[test]
fn the_devices_table_puts_each_figure_under_its_heading() {
    let (code, out, err) = foresight(&["devices"]);
    assert_eq!(code, 0, "{err}");
    // Two tables, devices then links, a blank line between them.
    let tables: Vec<&str> = out.trim_end().split("\n\n").collect();
    assert_eq!(tables.len(), 2, "{out}");
    let headings: [&[&str]; 2] = [
        &[
            "rpm",
            "seek ms",
            "outer MiB/s",
            "inner MiB/s",
            "capacity bytes",
        ],
        &["delay ms", "MiB/s", "window bytes"],
    ];
    for (table, headings) in tables.iter().zip(headings) {
        let header = table.lines().next().unwrap();
        for heading in headings {
            // Right-aligned: a figure's last digit (or the dash of a figure that does not
            // apply) sits under its heading's last letter.
            let end = header.find(heading).unwrap() + heading.len();
            for row in table.lines().skip(1) {
                let (figure, rest) = row.split_at(end);
                assert!(
                    figure.ends_with(|c: char| c.is_ascii_digit() || c == '-')
                        && rest.starts_with(' '),
                    "`{heading}` is not above its figure in:\n{header}\n{row}"
                );
            }
        }
    }
    assert!(tables[1].contains("\nwan-1g "), "{out}");
}

#[test]
fn requests_out_writes_one_line_per_request() {
    let path_guard = temp_dir("req");
    let path = path_guard.path().join("path.csv");
    let (code, _, err) = foresight(&[
        "sim",
        "--set",
        "workload.file_size=1MiB",
        "--set",
        "workload.streams=2",
        "--requests-out",
        path.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("id,stream,submit_s,complete_s,latency_ms,offset,bytes,op")
    );
    assert_eq!(lines.count(), 2 * 16);
}

/// `--requests-out` used to keep every record in memory until the run ended: 48 bytes a request,
/// 96 MiB more for this run of two million. Written out as they complete, through a bounded
/// buffer, they cost nothing that grows. The run gets a data limit (heap and anonymous maps) of
/// 64 MiB, which it fits in without the records (about 30 MiB here), and must fit in with them.
#[test]
fn requests_out_does_not_keep_the_records_in_memory() {
    let path_guard = temp_dir("req-mem");
    let path = path_guard.path().join("path.csv");
    let limited = |requests_out: bool| {
        let mut args = vec![
            "-c",
            "ulimit -d 65536 && exec \"$0\" \"$@\"",
            env!("CARGO_BIN_EXE_foresight"),
            "sim",
            "--set",
            "device.kind=ssd",
            "--set",
            "workload.streams=4",
            "--set",
            "workload.request=4KiB",
            "--set",
            "workload.file_size=2GiB",
        ];
        if requests_out {
            args.extend(["--requests-out", path.to_str().unwrap()]);
        }
        let out = Command::new("sh").args(&args).output().expect("sh runs");
        (
            out.status,
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // Without the records the run fits: otherwise the limit says nothing about them.
    let (status, err) = limited(false);
    assert!(
        status.success(),
        "the run alone needs more than 64 MiB: {status} {err}"
    );
    let (status, err) = limited(true);
    let lines = std::fs::read_to_string(&path).map_or(0, |t| t.lines().count());
    assert!(status.success(), "with --requests-out: {status} {err}");
    assert_eq!(lines, 1 + 4 * 524_288);
}

#[test]
fn a_full_standard_output_is_an_error_and_a_closed_one_ends_quietly() {
    use std::io::Read;
    use std::process::Stdio;
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full: a Linux device that is always full");
    for args in [&["devices"][..], &["reproduce", "--list"][..]] {
        let out = Command::new(env!("CARGO_BIN_EXE_foresight"))
            .args(args)
            .stdout(full.try_clone().unwrap())
            .output()
            .expect("the binary runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("standard output") && !err.contains("panicked"),
            "{args:?}: {err}"
        );
    }
    // A reader that leaves after the first line: nothing to report.
    let mut child = Command::new(env!("CARGO_BIN_EXE_foresight"))
        .args(["devices"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    drop(child.stdout.take());
    let status = child.wait().unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(status.success() && err.is_empty(), "{status:?}: {err}");
}

/// `--help` and `--version` are printed by the argument parser, which ignored a write that
/// failed: `foresight sim --help > /dev/full` exited 0 having written nothing. They fail as the
/// commands' own output does (exit 1, saying standard output), and a reader that leaves early
/// (`foresight sim --help | head -1`) still ends them quietly.
#[test]
fn help_and_version_that_cannot_be_written_are_errors() {
    use std::io::Read;
    use std::process::Stdio;
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full: a Linux device that is always full");
    for args in [
        &["--help"][..],
        &["sim", "--help"],
        &["--version"],
        &["help"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_foresight"))
            .args(args)
            .stdout(full.try_clone().unwrap())
            .output()
            .expect("the binary runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("standard output"), "{args:?}: {err}");
        let ok = foresight(args);
        assert_eq!(ok.0, 0, "{args:?}: {}", ok.2);
        assert!(
            ok.1.contains("foresight") || ok.1.contains("Usage"),
            "{args:?}"
        );
    }
    // Usage errors still go to standard error with exit 2.
    let (code, _, err) = foresight(&["sim", "--bogus"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--bogus"), "{err}");
    let mut child = Command::new(env!("CARGO_BIN_EXE_foresight"))
        .args(["sim", "--help"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    drop(child.stdout.take());
    let status = child.wait().unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(status.success() && err.is_empty(), "{status:?}: {err}");
}

/// Standard error closed by its reader (`foresight reproduce 2>&1 | head`) made every note a
/// panic: a bad key exited with 101 instead of 2, and a run stopped at its first progress line
/// without writing its report. Notes that cannot be written are dropped; the work goes on.
#[test]
fn a_closed_standard_error_neither_panics_nor_stops_the_work() {
    use std::process::Stdio;
    let run = |args: &[&str]| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_foresight"))
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary runs");
        drop(child.stderr.take());
        child.wait().unwrap()
    };
    let bad = run(&["sim", "--set", "workload.streams=0"]);
    assert_eq!(bad.code(), Some(2), "a bad key with standard error closed");
    let out_guard = temp_dir("closed-stderr");
    let out = out_guard.path().join("out");
    let status = run(&[
        "reproduce",
        "--quick",
        "collapse",
        "--out",
        out.to_str().unwrap(),
    ]);
    let report = out.join("report.md").exists();
    assert!(
        status.success() && report,
        "{status:?}, report written: {report}"
    );
}

/// `sim -h` describes --config by the sections a config may hold; it named four of the six, so
/// a user reading it would not know that [dfs] and [network] go in the same file. The list the
/// config parser gives for an unknown top-level key is the reference.
#[test]
fn the_config_flag_help_names_every_section_the_parser_takes() {
    let (code, _, err) = foresight(&["sim", "--set", "nonsense=1"]);
    assert_eq!(code, 2, "{err}");
    let sections: Vec<&str> = err.split(['[', ']']).skip(1).step_by(2).collect();
    assert!(sections.len() >= 4, "no sections in: {err}");
    let (code, help, _) = foresight(&["sim", "-h"]);
    assert_eq!(code, 0);
    let config_line = help
        .lines()
        .find(|l| l.trim_start().starts_with("--config"))
        .expect("a --config line");
    for s in sections {
        assert!(
            config_line.contains(&format!("[{s}]")),
            "`sim -h` does not name [{s}]: {config_line}"
        );
    }
}

/// A [dfs] run named its device by kind alone ("hdd", "raid0x5"), where every other run names
/// the preset: two runs on different disks could not be told apart by their reports.
#[test]
fn a_dfs_run_names_its_device_as_other_runs_do() {
    for (sets, device) in [
        (
            vec!["device.preset=st6000nm0024"],
            "st6000nm0024".to_string(),
        ),
        (
            vec!["device.kind=raid0", "device.preset=wd800jd"],
            "raid0 5 x wd800jd, 128KiB strips".to_string(),
        ),
    ] {
        let mut args = vec!["sim", "--json", "--set", "dfs.system=aps"];
        args.extend(["--set", "workload.duration=100ms"]);
        for s in &sets {
            args.extend(["--set", s]);
        }
        let (code, out, err) = foresight(&args);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON object");
        assert_eq!(v["device"], device.as_str(), "{sets:?}");
    }
}

/// The keys of the host stack's own parts, which the DFS model does not have.
const HOST_STACK_KEYS: [&str; 8] = [
    "antic_waits",
    "device_sequential_requests",
    "raid_prefetched_bytes",
    "raid_wasted_bytes",
    "raid_cache_peak_bytes",
    "raid_fetches",
    "raid_split_fetches",
    "trace_lba_wrapped",
];

/// A [dfs] run printed the host stack's keys as 0, although the model has no anticipatory
/// scheduler, block-level cache or trace and does not track back-to-back commands: a 0 read as a
/// measurement. So did a hinted run over a tier stack. They are absent there and present, as
/// before, in a host run.
#[test]
fn dfs_and_tier_runs_leave_out_the_keys_of_parts_they_do_not_have() {
    let json = |extra: &[&str]| -> serde_json::Map<String, serde_json::Value> {
        let mut args = vec!["sim", "--json", "--set", "workload.duration=100ms"];
        for s in extra {
            args.extend(["--set", s]);
        }
        let (code, out, err) = foresight(&args);
        assert_eq!(code, 0, "{extra:?}: {err}");
        let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON object");
        v.as_object().expect("a JSON object").clone()
    };
    for extra in [
        &["dfs.system=aps"][..],
        &["dfs.system=nfs", "device.kind=raid0"],
    ] {
        let dfs = json(extra);
        assert!(dfs.contains_key("dfs"), "{extra:?}: {dfs:?}");
        assert!(!dfs.contains_key("after_end"), "{extra:?}: {dfs:?}");
        for key in HOST_STACK_KEYS {
            assert!(!dfs.contains_key(key), "{extra:?}: a dfs run has `{key}`");
        }
    }
    // A tier stack has none of these parts either; it printed them as 0.
    let mut args = vec!["sim", "--json"];
    for s in [
        "device.kind=constant",
        "device.t_upper=1ms",
        "device.t_lower=2ms",
        "device.t_lower_to_upper=3ms",
        "workload.kind=hinted",
        "workload.reads=20",
    ] {
        args.extend(["--set", s]);
    }
    let (code, out, err) = foresight(&args);
    assert_eq!(code, 0, "{err}");
    let tiers: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON object");
    let tiers = tiers.as_object().expect("a JSON object");
    for key in HOST_STACK_KEYS {
        assert!(!tiers.contains_key(key), "a tier stack's run has `{key}`");
    }
    // Its own: the device work that completed after the application's end.
    assert!(tiers["after_end"]["device_requests"].is_u64(), "{tiers:?}");
    for extra in [
        &[][..],
        &[
            "device.kind=raid0",
            "host.raid_cache=8MiB",
            "policy.name=msp+saseqp",
        ],
    ] {
        let host = json(extra);
        assert!(!host.contains_key("dfs"), "{extra:?}: {host:?}");
        assert!(!host.contains_key("after_end"), "{extra:?}: {host:?}");
        for key in HOST_STACK_KEYS {
            assert!(
                host[key].is_u64(),
                "{extra:?}: a host run's `{key}` is {:?}",
                host.get(key)
            );
        }
    }
}

/// `--requests-out` naming one of the run's own input files truncated it before the run read it:
/// the trace was destroyed and the run then refused it as empty. The config, read first, was
/// overwritten by the CSV.
#[test]
fn requests_out_refuses_to_overwrite_an_input_of_the_run() {
    let dir_guard = temp_dir("requests-in");
    let dir = dir_guard.path().join("dir");
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("t.trace");
    let trace_text = "R Hit 100 8 1.0 1.0\nR Hit 200 8 1.0 1.0\n";
    std::fs::write(&trace, trace_text).unwrap();
    let config = dir.join("c.toml");
    let config_text = "[workload]\nkind = \"trace\"\nformat = \"disksim\"\ntrace = \"t.trace\"\n";
    std::fs::write(&config, config_text).unwrap();
    let (trace_s, config_s) = (trace.display().to_string(), config.display().to_string());
    // The same file under another name, too.
    let trace_other_name = format!(
        "{}/../{}/t.trace",
        dir.display(),
        dir.file_name().unwrap().to_string_lossy()
    );
    for (out, key) in [
        (trace_s.as_str(), "workload.trace"),
        (trace_other_name.as_str(), "workload.trace"),
        (config_s.as_str(), "--config"),
    ] {
        let (code, _, err) = foresight(&["sim", "--config", &config_s, "--requests-out", out]);
        assert_eq!(code, 2, "{out}: {err}");
        assert!(
            err.contains("--requests-out") && err.contains(key),
            "{out}: {err}"
        );
        assert_eq!(std::fs::read_to_string(&trace).unwrap(), trace_text);
        assert_eq!(std::fs::read_to_string(&config).unwrap(), config_text);
    }
    // Another file is written as usual.
    let csv = dir.join("r.csv").display().to_string();
    let (code, _, err) = foresight(&["sim", "--config", &config_s, "--requests-out", &csv]);
    assert_eq!(code, 0, "{err}");
}

/// The files a DiskSim drive sources (`.model`, seek curve) are inputs of the run as much as its
/// `.diskspecs`: `--requests-out atlas10k.model` replaced the drive's model with the CSV (the run
/// had read it already, so it went on and exited 0), and the next run could not import the drive.
#[test]
fn requests_out_refuses_to_overwrite_a_file_the_disksim_drive_sources() {
    let shared =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/disksim");
    let dir = temp_dir("requests-disksim");
    let names = ["atlas10k.diskspecs", "atlas10k.model", "atlas10k.seek"];
    let mut texts = Vec::new();
    for name in names {
        let from = shared.join(name);
        let text = std::fs::read(&from)
            .unwrap_or_else(|e| panic!("{}: {e} (shared data missing)", from.display()));
        std::fs::write(dir.path().join(name), &text).unwrap();
        texts.push(text);
    }
    let specs = dir.path().join(names[0]).display().to_string();
    let disksim = format!("device.disksim={specs}");
    for name in names {
        let out = dir.path().join(name).display().to_string();
        let args = [
            "sim",
            "--set",
            &disksim,
            "--set",
            "workload.duration=10ms",
            "--requests-out",
            &out,
        ];
        expect_refusal_saying(&args, "--requests-out", "device.disksim");
        for (name, text) in names.iter().zip(&texts) {
            assert_eq!(
                &std::fs::read(dir.path().join(name)).unwrap(),
                text,
                "--requests-out {out} changed {name}"
            );
        }
    }
}

/// `--unset` lets a run over a config file switch to a policy the file's keys do not fit, and
/// `--set` reaches a tier the file lists: both as `sim --help` shows them.
#[test]
fn unset_and_indexed_set_change_a_config_files_run() {
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let collapse = examples.join("collapse-64.toml");
    let collapse = collapse.to_str().expect("a UTF-8 path");
    let switch = [
        "--set",
        "policy.name=streams",
        "--set",
        "workload.duration=1s",
    ];
    let mut args = vec!["sim", "--config", collapse, "--json"];
    args.extend(switch);
    expect_input_error(&args, "--unset policy.readahead_max");
    args.extend(["--unset", "policy.readahead_max"]);
    let (code, out, err) = foresight(&args);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"policy\":\"streams\""), "{out}");
    expect_input_error(
        &[
            "sim",
            "--config",
            collapse,
            "--unset",
            "policy.readahed_max",
        ],
        "policy.readahed_max",
    );
    let tiered = examples.join("informed-tiered.toml");
    let tiered = tiered.to_str().expect("a UTF-8 path");
    let (code, out, err) = foresight(&[
        "sim",
        "--config",
        tiered,
        "--set",
        "device.tiers[1].preset=wd800jd",
        "--set",
        "workload.reads=20",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("wd800jd"), "{out}");
    expect_input_error(
        &[
            "sim",
            "--config",
            tiered,
            "--set",
            "device.tiers[2].preset=x",
        ],
        "device.tiers[2]",
    );
}

/// A `report.md` in the way (here a directory) is refused before any experiment runs: the run
/// used to take all its experiments and then fail writing it.
#[test]
fn an_output_file_in_the_way_is_refused_before_the_experiments() {
    let out_guard = temp_dir("out-in-way");
    let out = out_guard.path().join("out");
    std::fs::create_dir_all(out.join("report.md")).unwrap();
    let start = std::time::Instant::now();
    let (code, _, err) = foresight(&[
        "reproduce",
        "informed",
        "--quick",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("report.md") && err.contains("is a directory"),
        "{err}"
    );
    // A dangling symlink is not in the way: writing it creates its target.
    let dangling_guard = temp_dir("out-link");
    let dangling = dangling_guard.path().join("dangling");
    std::fs::create_dir_all(&dangling).unwrap();
    std::os::unix::fs::symlink("nowhere.md", dangling.join("report.md")).unwrap();
    let (code, _, err) = foresight(&[
        "reproduce",
        "collapse",
        "--quick",
        "--out",
        dangling.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(dangling.join("nowhere.md").exists());
    assert!(
        !std::fs::read_dir(&out).unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".png")),
        "an experiment ran before the refusal ({:?})",
        start.elapsed()
    );
}

/// A child process that is killed if the test fails before it ends.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `sim` with minutes of host time, writing its requests to `requests_out` and its progress and
/// notes to `stderr`: a run the signal tests interrupt long before it ends.
fn long_sim_writing_requests(
    requests_out: &std::path::Path,
    stderr: impl Into<std::process::Stdio>,
) -> KillOnDrop {
    let child = Command::new(env!("CARGO_BIN_EXE_foresight"))
        .args([
            "sim",
            "--set",
            "policy.name=streams",
            "--set",
            "workload.streams=1000",
            "--set",
            "workload.request=4KiB",
            "--set",
            "workload.file_size=64MiB",
            "--requests-out",
        ])
        .arg(requests_out)
        .stdout(std::process::Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("the binary runs");
    KillOnDrop(child)
}

/// Sends SIGINT, as Ctrl-C does, to `child`.
fn interrupt(child: &std::process::Child) {
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success());
}

/// Ctrl-C during `sim --requests-out` left the CSV as far as the buffer had last been flushed,
/// cut in the middle of a line, with nothing to say that the run had not finished. The file is
/// removed, as a download's partial file is, and the exit status is the signal's (128 + 2).
#[test]
fn an_interrupted_run_removes_its_requests_file() {
    let dir_guard = temp_dir("req-int");
    let dir = dir_guard.path().join("dir");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("requests.csv");
    // Minutes of host time: it is interrupted long before it ends.
    let mut child = long_sim_writing_requests(&path, std::process::Stdio::piped());
    // Interrupted once records are on disk, the state a user's Ctrl-C finds.
    while std::fs::metadata(&path).map_or(true, |m| m.len() == 0) {
        assert!(
            child.0.try_wait().unwrap().is_none(),
            "the run ended before it wrote a record"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    interrupt(&child.0);
    let status = child.0.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(child.0.stderr.as_mut().unwrap(), &mut err).unwrap();
    let left = path.exists();
    assert!(!left, "the cut-short requests file was left behind");
    assert_eq!(status.code(), Some(130), "{status}");
    // It says so: a stop by the signal's default action ended without a word.
    assert!(
        err.contains("stopped by SIGINT: the simulation had not finished")
            && err.contains(&format!("; removed {}", path.display())),
        "no note of the stop: {err:?}"
    );
}

/// The note of a stop names only what the signal removed. A `--requests-out` that is not a regular
/// file (a FIFO here, or /dev/null) is written as it is and never removed, but the note said it
/// was removed, and so it did for a file the run found and had not emptied yet.
#[test]
fn an_interrupted_run_does_not_say_it_removed_a_requests_out_it_kept() {
    let dir_guard = temp_dir("req-fifo");
    let fifo = dir_guard.path().join("requests.fifo");
    make_fifo(&fifo);
    let mut child = long_sim_writing_requests(&fifo, std::process::Stdio::piped());
    // A record read from the FIFO means the run is under way, its note left.
    let mut records = std::fs::File::open(&fifo).expect("the FIFO opens");
    let mut first = [0u8; 64];
    std::io::Read::read_exact(&mut records, &mut first).expect("a record arrives");
    interrupt(&child.0);
    let status = child.0.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(child.0.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(130), "{status}: {err}");
    assert!(fifo.exists(), "the FIFO was removed");
    assert!(
        err.contains("stopped by SIGINT: the simulation had not finished"),
        "no note of the stop: {err:?}"
    );
    assert!(
        !err.contains("removed"),
        "it says it removed the FIFO: {err:?}"
    );
}

/// A FIFO at `path`, which blocks whoever opens it until the other end is opened too.
fn make_fifo(path: &std::path::Path) {
    let made = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
}

/// Opens the FIFO `path` for writing, which returns once the child has opened it for reading: from
/// then on the child is held up reading it, with nothing written. Gives up, failing the test, when
/// the child has not opened it within a minute (a guard against a hang, not a measure of time).
fn writer_once_read(path: &std::path::Path) -> std::fs::File {
    let (tx, rx) = std::sync::mpsc::channel();
    let path = path.to_path_buf();
    std::thread::spawn(move || {
        let _ = tx.send(std::fs::OpenOptions::new().write(true).open(path));
    });
    rx.recv_timeout(std::time::Duration::from_secs(60))
        .expect("the command never opened the FIFO")
        .expect("the FIFO opens for writing")
}

/// A stop while `sim` read its config took the signal's default action: the handler that writes
/// the note was installed only once the run was about to start, so a run held up reading its
/// config (a FIFO here, that nobody writes to) ended without a word and not with 128 + 2. The
/// signal is sent once the config is open and its read blocks.
#[test]
fn a_stop_while_the_config_is_read_says_nothing_was_written() {
    let dir_guard = temp_dir("cfg-fifo");
    let fifo = dir_guard.path().join("config.toml");
    make_fifo(&fifo);
    let child = Command::new(env!("CARGO_BIN_EXE_foresight"))
        .args(["sim", "--config"])
        .arg(&fifo)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut child = KillOnDrop(child);
    let _writer = writer_once_read(&fifo);
    interrupt(&child.0);
    let status = ended_within_a_minute(&mut child.0, "the interrupted config read went on");
    let mut err = String::new();
    std::io::Read::read_to_string(child.0.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(130), "{status}: {err:?}");
    assert!(
        err.contains(
            "stopped by SIGINT: the simulation had not begun, so it has no figures and wrote \
             nothing"
        ),
        "no note of the stop: {err:?}"
    );
}

/// Waits up to a minute for `child` to end, and returns how it ended; a child still running then is
/// a hang, reported as `why`. (A guard against a hang, not a measure of time: the child is killed.)
fn ended_within_a_minute(child: &mut std::process::Child, why: &str) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(std::time::Instant::now() < deadline, "{why}");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// A pipe that is full before the child starts, and kept full: every write to it blocks. Returns
/// its read end, which the caller keeps (unread) while the child runs, its write end for the
/// child, and the thread that keeps it full, which ends once the read end is dropped. A pipe holds
/// 64 KiB, or one page when its owner has many: the first 64 KiB are written (a full pipe) or the
/// filler has blocked on a full page before this returns.
fn full_pipe() -> (
    std::io::PipeReader,
    std::io::PipeWriter,
    std::thread::JoinHandle<()>,
) {
    use std::io::Write as _;
    let (unread, pipe) = std::io::pipe().expect("a pipe");
    let mut filler = pipe.try_clone().expect("the pipe's write end is cloned");
    let (full_tx, full_rx) = std::sync::mpsc::channel();
    let filling = std::thread::spawn(move || {
        if filler.write_all(&[b'.'; 64 << 10]).is_ok() {
            let _ = full_tx.send(());
            let _ = filler.write_all(&vec![b'.'; 1 << 20]);
        }
    });
    let _ = full_rx.recv_timeout(std::time::Duration::from_secs(5));
    (unread, pipe, filling)
}

/// Whether the main thread of process `pid` is blocked writing to its standard output, as
/// /proc/PID/syscall tells: the call's number, then its arguments, the first the descriptor.
fn blocked_writing_stdout(pid: u32) -> bool {
    // `write` on this architecture.
    let write = if cfg!(target_arch = "aarch64") {
        "64"
    } else {
        "1"
    };
    std::fs::read_to_string(format!("/proc/{pid}/syscall")).is_ok_and(|s| {
        let mut fields = s.split_whitespace();
        fields.next() == Some(write) && fields.next() == Some("0x1")
    })
}

/// A stop after the simulation had finished, while its summary was printed (standard output a
/// full pipe), said "the simulation had not finished, so it has no figures": the note was left
/// once before the run and held for the rest of the command. It now says the run finished and
/// what the stop cuts short, and that the `--requests-out` file was written in full and kept.
#[test]
fn a_stop_while_the_summary_is_printed_says_the_run_had_finished() {
    let dir_guard = temp_dir("sum-int");
    let path = dir_guard.path().join("requests.csv");
    let (unread, out_pipe, filling) = full_pipe();
    let child = Command::new(env!("CARGO_BIN_EXE_foresight"))
        .args(["sim", "--json", "--requests-out"])
        .arg(&path)
        .stdout(out_pipe)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut child = KillOnDrop(child);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !blocked_writing_stdout(child.0.id()) {
        assert!(child.0.try_wait().unwrap().is_none(), "the run ended");
        assert!(
            std::time::Instant::now() < deadline,
            "the run never blocked writing its summary"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    interrupt(&child.0);
    let status = ended_within_a_minute(&mut child.0, "the interrupted summary went on");
    let mut err = String::new();
    std::io::Read::read_to_string(child.0.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(130), "{status}: {err:?}");
    assert!(
        err.contains(&format!(
            "stopped by SIGINT: the simulation had finished and --requests-out {} was written \
             in full, but the summary on standard output may be cut short",
            path.display()
        )),
        "{err:?}"
    );
    assert!(!err.contains("removed"), "{err:?}");
    let records = std::fs::read_to_string(&path).expect("the requests file is kept");
    assert!(records.ends_with('\n'), "{records:?}");
    drop(unread);
    filling.join().unwrap();
}

/// A second Ctrl-C while the first one's cleanup ran did nothing: the handler stayed installed,
/// so a stop that could not write its note (standard error a full pipe that nobody reads) waited
/// forever, and only SIGKILL ended it. A second signal, past the moment when it would be taken for
/// a copy of the first, ends the process at once with the signal's default action.
#[test]
fn a_second_interrupt_ends_a_stop_blocked_writing_its_note() {
    use std::os::unix::process::ExitStatusExt as _;
    let dir_guard = temp_dir("req-twice");
    let path = dir_guard.path().join("requests.csv");
    let (unread, err_pipe, filling) = full_pipe();
    let mut child = long_sim_writing_requests(&path, err_pipe);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::fs::metadata(&path).map_or(true, |m| m.len() == 0) {
        assert!(child.0.try_wait().unwrap().is_none(), "the run ended early");
        assert!(
            std::time::Instant::now() < deadline,
            "no record was written"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    interrupt(&child.0);
    // The file gone, the first stop has done its removal; its note, next, cannot be written.
    while path.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the stop removed nothing"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Twice the 250 ms (`SAME_STOP_MS`) within which a second signal is taken for a copy of the
    // first: a lower bound, which a slow machine only lengthens.
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(
        child.0.try_wait().unwrap().is_none(),
        "the first stop ended, its note not blocked: there was no cleanup left to cut short"
    );
    interrupt(&child.0);
    let status = ended_within_a_minute(
        &mut child.0,
        "a second Ctrl-C did not end a stop blocked writing its note",
    );
    assert_eq!(status.signal(), Some(2), "{status}");
    drop(unread);
    filling.join().unwrap();
}

/// `reproduce` stopped by Ctrl-C in its middle says so, and where its report stands, instead of
/// ending without a word (its exit status is still 128 + 2).
#[test]
fn an_interrupted_reproduce_says_it_stopped() {
    use std::io::BufRead as _;
    let out_guard = temp_dir("repro-int");
    let out = out_guard.path().join("out");
    // The full striping experiment takes minutes: it is interrupted long before it ends.
    let child = Command::new(env!("CARGO_BIN_EXE_foresight"))
        .args(["reproduce", "striping", "--out"])
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut child = KillOnDrop(child);
    let mut err = std::io::BufReader::new(child.0.stderr.take().unwrap());
    // The first progress line comes once the run is under way, its note left.
    let mut first = String::new();
    err.read_line(&mut first).unwrap();
    assert!(first.contains("striping"), "{first:?}");
    interrupt(&child.0);
    let status = child.0.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    assert_eq!(status.code(), Some(130), "{status}: {rest}");
    assert!(
        rest.contains("stopped by SIGINT: reproduce had not finished")
            && rest.contains("report.md"),
        "no note of the stop: {rest:?}"
    );
}

/// A `--requests-out` write that failed (a full disk; here the file size limit, `ulimit -f`)
/// stopped the run with exit 1 naming the file, but left the file cut short in the middle of a
/// line, as a signal no longer does. The file is removed.
#[test]
fn a_run_whose_requests_file_write_fails_removes_it() {
    let dir_guard = temp_dir("req-full");
    let path = dir_guard.path().join("requests.csv");
    // SIGXFSZ ignored (the disposition survives exec), so the write past the limit fails with
    // EFBIG, as one on a full disk fails with ENOSPC, instead of killing the process.
    let out = Command::new("bash")
        .arg("-c")
        .arg("trap '' XFSZ; ulimit -f 64; exec \"$@\"")
        .arg("bash")
        .arg(env!("CARGO_BIN_EXE_foresight"))
        .args([
            "sim",
            "--set",
            "workload.streams=8",
            "--set",
            "workload.duration=20s",
            "--requests-out",
        ])
        .arg(&path)
        .output()
        .expect("bash runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "a write error exits 1: {err}");
    assert!(
        err.contains(&format!("--requests-out {}", path.display())),
        "the message should name the file: {err}"
    );
    let left = std::fs::metadata(&path).map(|m| m.len());
    assert!(left.is_err(), "the cut-short file was left: {left:?}");
}

/// Runs `reproduce collapse drives striping --quick --out OUT` and interrupts it once `file`
/// appears in OUT (or lets it finish, on a machine fast enough to end first); its exit status.
fn reproduce_interrupted_once(out: &std::path::Path, file: &str) -> std::process::ExitStatus {
    let child = Command::new(env!("CARGO_BIN_EXE_foresight"))
        .args([
            "reproduce",
            "collapse",
            "drives",
            "striping",
            "--quick",
            "--out",
        ])
        .arg(out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the binary runs");
    let mut child = KillOnDrop(child);
    while !out.join(file).exists() && child.0.try_wait().unwrap().is_none() {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    interrupt(&child.0);
    child.0.wait().unwrap()
}

/// `reproduce` writes each experiment's figures as it finishes and `report.md` and `results.json`
/// at the end. Stopped in between (Ctrl-C, or a figure that cannot be written), it left the
/// previous run's report and results beside figures they no longer describe, with nothing to
/// tell them apart. Once the run has written a figure, the old results are gone and the report
/// says that the run has not finished.
#[test]
fn an_interrupted_reproduce_leaves_no_stale_report_beside_new_figures() {
    let out_guard = temp_dir("repro-int");
    let out = out_guard.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("report.md"), "# stale report\n").unwrap();
    std::fs::write(out.join("results.json"), "{\"stale\": 1}\n").unwrap();
    // The first experiment's figures are written: the directory now holds some of this run.
    let status = reproduce_interrupted_once(&out, "collapse.csv");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap_or_default();
    let results = std::fs::read_to_string(out.join("results.json")).unwrap_or_default();
    assert!(
        !report.contains("stale"),
        "{status}: the old report was left: {report}"
    );
    assert!(
        !results.contains("stale"),
        "{status}: the old results were left: {results}"
    );
    if !status.success() {
        assert!(report.contains("not finished"), "{report}");
        assert!(results.is_empty(), "{results}");
    }
}

/// An interrupted run's report said "The figures beside this file are from it", while the
/// directory still held an earlier run's figures of experiments this one had not reached (or
/// not chosen). It names the experiments whose figures it wrote and says that others may be
/// from an earlier run.
#[test]
fn an_interrupted_reproduce_does_not_claim_an_earlier_runs_figures() {
    let out_guard = temp_dir("repro-claim");
    let out = out_guard.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("streams_fig4.csv"), "an earlier run's figure\n").unwrap();
    // Stopped while `striping` runs (seconds, even quick): `collapse` and `drives` are done.
    let status = reproduce_interrupted_once(&out, "drives_atlas10k.csv");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    if status.success() {
        // Finished before the signal: the final report, which describes its own figures.
        assert!(!report.contains("not finished"), "{report}");
        return;
    }
    assert!(report.contains("not finished"), "{report}");
    assert!(
        !report.contains("figures beside this file are from it"),
        "the report claims every figure beside it: {report}"
    );
    assert!(
        report.contains("in full: collapse") && report.contains("from an earlier run"),
        "{report}"
    );
}

/// A run whose devices report no service-time breakdown (a stack of constant tier levels)
/// printed "seek 0.0%, rotate 0.0%, transfer 0.0%, overhead 0.0%": shares of nothing, which add
/// up to none. A tier stack of device models has a breakdown (its levels' devices' own), and
/// shows its shares like any run.
#[test]
fn a_run_without_a_breakdown_does_not_print_shares_of_nothing() {
    let device_time = |out: &str| -> String {
        out.lines()
            .find(|l| l.trim_start().starts_with("device time"))
            .unwrap_or_else(|| panic!("no device time line: {out}"))
            .to_string()
    };
    let tip: Vec<&str> = ["sim"]
        .into_iter()
        .chain(CONSTANT_TIERS_HINTED)
        .chain(["--set", "policy.name=tip", "--set", "workload.reads=20"])
        .collect();
    let (code, out, err) = foresight(&tip);
    assert_eq!(code, 0, "{err}");
    let line = device_time(&out);
    assert!(!line.contains('%'), "{line}");
    assert!(line.contains("no breakdown"), "{line}");
    // Runs that have one keep their shares: the host stack's, and a stack of device models.
    let (code, out, err) = foresight(&["sim", "--set", "workload.duration=1s"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("device time  seek "), "{out}");
    let config = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/informed-tiered.toml"
    );
    let (code, out, err) = foresight(&["sim", "--config", config]);
    assert_eq!(code, 0, "{err}");
    assert!(device_time(&out).contains("seek "), "{out}");
}

/// A config refused once the run is being built (here: files that do not fit the disk) exits 2,
/// but the requests file had already been created, or truncated, and was left holding only the
/// CSV header: bad input destroyed a file. A file that was there is now left as it was, and one
/// that was not is not left behind.
#[test]
fn a_refused_run_leaves_the_requests_file_as_it_found_it() {
    let dir_guard = temp_dir("req-refused");
    let dir = dir_guard.path().join("dir");
    std::fs::create_dir_all(&dir).unwrap();
    let existing = dir.join("existing.csv");
    std::fs::write(&existing, "kept\n").unwrap();
    let fresh = dir.join("fresh.csv");
    for path in [&existing, &fresh] {
        let (code, _, err) = foresight(&[
            "sim",
            "--set",
            "workload.streams=100000",
            "--requests-out",
            path.to_str().unwrap(),
        ]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("workload.file_size"), "{err}");
    }
    let kept = std::fs::read_to_string(&existing).unwrap_or_default();
    let fresh_left = fresh.exists();
    assert_eq!(kept, "kept\n", "the existing file was overwritten");
    assert!(!fresh_left, "a requests file was left by a refused run");
}

/// `workload.extent` is read only by the `fragmented` placement but accepted with every one (the
/// sim config tests take it beside `aligned`), unlike the keys only some workload kinds read;
/// `sim --help` says why, so the exception is not taken for an oversight.
#[test]
fn sim_help_says_why_workload_extent_passes_with_any_placement() {
    assert_sim_help_says("fragmented: mean extent size (accepted with any placement, so that one config can sweep the placements");
}

/// `queue_s` is documented as the wait "in the host block queue and the device's command
/// queue", but a [dfs] run's requests wait in the model's CFQ-like queue, which it does not
/// count: 64 streams on one disk reported `queue_s` 0 with reads waiting 100 ms on average.
/// `sim --help` says what a [dfs] run's `queue_s` holds.
#[test]
fn sim_help_says_what_a_dfs_runs_queue_s_counts() {
    let (code, out, err) = foresight(&[
        "sim",
        "--set",
        "dfs.system=aps",
        "--set",
        "workload.streams=64",
        "--set",
        "workload.duration=2s",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let r: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(r["breakdown"]["queue_s"], 0.0, "{r}");
    assert!(r["mean_latency_ms"].as_f64().unwrap() > 50.0, "{r}");
    assert_sim_help_says(
        "a [dfs] run's queue_s is the wait in the device's own command queues only",
    );
}

/// `sim --help` says `text`, however its lines wrap it.
fn assert_sim_help_says(text: &str) {
    let (code, help, err) = foresight(&["sim", "--help"]);
    assert_eq!(code, 0, "{err}");
    let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains(text),
        "`sim --help` does not say {text:?}:\n{help}"
    );
}

/// Exits 2 with a message that names `key` and contains `fix` (what to do about it).
fn expect_refusal_saying(args: &[&str], key: &str, fix: &str) {
    let err = expect_input_error(args, key);
    assert!(
        err.contains(fix),
        "{args:?}: message should say `{fix}`: {err}"
    );
}

/// A preset tier takes its times from its device model. A fixed time given beside the preset was
/// refused as an "unknown key", although `--help` lists it and the tier beside it reads it, and
/// the message did not say that the preset and the time conflict.
#[test]
fn a_preset_tier_with_a_fixed_time_is_refused_as_a_conflict() {
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let tiered = examples.join("informed-tiered.toml");
    let tiered = tiered.to_str().expect("a UTF-8 path");
    for (key, value) in [
        ("device.tiers[0].t_read", "1ms"),
        ("device.tiers[1].t_read", "5ms"),
        ("device.tiers[1].t_copy_up", "5ms"),
    ] {
        let set = format!("{key}={value}");
        expect_refusal_saying(
            &["sim", "--config", tiered, "--set", &set],
            key,
            "takes its times from the device model",
        );
    }
}

/// A block trace is read as it is replayed, so a bad line past the reader's first 65,536 records
/// is met once the run is under way, here after a thousand requests have completed: the run exits
/// with code 2 naming the file and line, prints no figures, and takes away the `--requests-out`
/// file it had begun, which would hold the records of part of a run (the old cleanup removed only
/// a file the run had not yet written to, and left this one behind).
#[test]
fn a_bad_trace_line_met_during_the_run_exits_2_and_leaves_no_records() {
    let dir = temp_dir("trace-midrun");
    let good = 65_536 + 1_000;
    let mut text: String = (0..good)
        .map(|i| format!("{} 0 {} 8 1\n", i * 1000, i * 8))
        .collect();
    text.push_str("1 0 8\n");
    let trace = dir.path().join("t.mqsim");
    std::fs::write(&trace, text).unwrap();
    let set = format!("workload.trace={}", trace.to_str().unwrap());
    for existed in [false, true] {
        let out = dir.path().join("req.csv");
        if existed {
            std::fs::write(&out, "old\n").unwrap();
        }
        let (code, stdout, err) = foresight(&[
            "sim",
            "--set",
            "workload.kind=trace",
            "--set",
            "workload.format=mqsim",
            "--set",
            &set,
            "--set",
            "device.kind=ssd",
            "--set",
            "device.preset=ssd-850evo",
            "--json",
            "--requests-out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(code, 2, "existed {existed}: {err}");
        assert!(
            err.contains(&format!("t.mqsim:{}:", good + 1)) && !err.contains("panicked"),
            "{err}"
        );
        assert!(stdout.trim().is_empty(), "figures printed: {stdout}");
        assert!(
            !out.exists(),
            "existed {existed}: the partial --requests-out file is left"
        );
    }
}

/// A block number of a hinted trace past what a `u64` holds was reported as "expected a whole
/// number" (it is one), and one past 2^40 did not say what to give instead.
#[test]
fn a_hinted_trace_block_too_large_is_named_with_its_limit() {
    let dir = temp_dir("hint-big");
    let tiers = "device.tiers=[{t_read = \"1ms\", capacity = \"2MiB\"}, \
                 {t_read = \"2ms\", t_copy_up = \"1ms\"}]";
    for (name, big) in [
        ("u64.trace", "99999999999999999999999"),
        ("2p40.trace", "1099511627776"),
    ] {
        let trace = dir.path().join(name);
        std::fs::write(&trace, format!("0\n{big}\n")).unwrap();
        let set = format!("workload.trace={}", trace.to_str().unwrap());
        expect_refusal_saying(
            &[
                "sim",
                "--set",
                "device.kind=tiered",
                "--set",
                tiers,
                "--set",
                "workload.kind=hinted",
                "--set",
                "workload.block=1MiB",
                "--set",
                &set,
            ],
            &format!("{name}:2"),
            "give block numbers below 2^40 (1099511627776)",
        );
    }
}

/// An input error quotes at most the first 80 characters of the offending text, however long
/// the line: a hinted trace's block, a block trace's column, a config file's value or key, a
/// `--set`. Before, a hinted trace's 60 kB line, a config value of a megabyte and the like came
/// back whole in the message (a trace line over 64 KiB is refused for its length).
#[test]
fn an_error_quotes_a_long_line_cut_short() {
    let dir = temp_dir("long-line");
    let mb = 1 << 20;
    // Linux takes no argument longer than 128 KiB.
    let arg = 100_000;
    let write = |name: &str, text: String| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().expect("a UTF-8 path").to_string()
    };
    let tiers = "device.tiers=[{t_read = \"1ms\", capacity = \"2MiB\"}, \
                 {t_read = \"2ms\", t_copy_up = \"1ms\"}]";
    let hinted = |trace: &str| {
        vec![
            "sim".to_string(),
            "--set".into(),
            "device.kind=tiered".into(),
            "--set".into(),
            tiers.into(),
            "--set".into(),
            "workload.kind=hinted".into(),
            "--set".into(),
            "workload.block=1MiB".into(),
            "--set".into(),
            format!("workload.trace={trace}"),
        ]
    };
    // A trace line of more than 64 KiB is refused for its length; one just under is parsed.
    let words = write("words.trace", format!("0\n{}\n", "x".repeat(60_000)));
    let digits = write("digits.trace", format!("0\n{}\n", "9".repeat(60_000)));
    let huge = write("huge.trace", format!("0\n{}\n", "x".repeat(mb)));
    let msr = write(
        "msr.trace",
        format!("1,h,0,{},0,4096,10\n", "Q".repeat(60_000)),
    );
    let value = write(
        "value.toml",
        format!("[workload]\nkind = \"{}\"\n", "y".repeat(mb)),
    );
    let key = write("key.toml", format!("[workload]\n{} = 1\n", "k".repeat(mb)));
    let list = write(
        "list.toml",
        format!("[workload]\nkind = [{}]\n", "1,".repeat(mb / 2)),
    );
    let cases: Vec<(Vec<String>, String)> = vec![
        (hinted(&words), format!("{words}:2")),
        (hinted(&digits), format!("{digits}:2")),
        (hinted(&huge), format!("{huge}:2")),
        (
            [
                "sim",
                "--set",
                "workload.kind=trace",
                "--set",
                "workload.format=msr",
            ]
            .map(String::from)
            .into_iter()
            .chain(
                [format!("workload.trace={msr}")]
                    .into_iter()
                    .flat_map(|t| ["--set".into(), t]),
            )
            .collect(),
            format!("{msr}:1"),
        ),
        (
            vec!["sim".into(), "--config".into(), value],
            "workload.kind".into(),
        ),
        (
            vec!["sim".into(), "--config".into(), key],
            "workload.kkk".into(),
        ),
        (
            vec!["sim".into(), "--config".into(), list],
            "workload.kind".into(),
        ),
        (
            vec![
                "sim".into(),
                "--set".into(),
                format!("workload.streams={}", "9".repeat(arg)),
            ],
            "workload.streams".into(),
        ),
        (
            vec![
                "sim".into(),
                "--set".into(),
                format!("host.memory={}x", "9".repeat(arg)),
            ],
            "host.memory".into(),
        ),
        (
            vec!["sim".into(), "--set".into(), "z".repeat(arg)],
            "--set".into(),
        ),
    ];
    for (args, names) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let err = expect_input_error(&args, &names);
        let shown = |a: &str| a.chars().take(100).collect::<String>();
        let shown_args: Vec<String> = args.iter().map(|a| shown(a)).collect();
        assert!(
            err.len() < 1_000,
            "{shown_args:?}: the message should quote the long text cut short, but is {} bytes: {}",
            err.len(),
            shown(&err)
        );
    }
}

/// A `gaps` workload whose fixed gap leaves room for one read ends after that read and measures
/// nothing; it used to exit 0 so. It is refused naming the gap, the file size and the largest gap
/// that fits. A file that holds one read whatever the gap still runs.
#[test]
fn a_fixed_gap_that_leaves_room_for_one_read_is_refused() {
    let (code, _, err) = foresight(&[
        "sim",
        "--set",
        "workload.kind=gaps",
        "--set",
        "workload.gap=60GiB",
        "--set",
        "workload.gap_dist=fixed",
    ]);
    assert_eq!(code, 2, "{err}");
    for must in ["workload.gap", "workload.file_size = 128MiB", "at most"] {
        assert!(err.contains(must), "should name `{must}`: {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
    let (code, _, err) = foresight(&[
        "sim",
        "--set",
        "workload.kind=gaps",
        "--set",
        "workload.request=64KiB",
        "--set",
        "workload.file_size=100KiB",
        "--set",
        "workload.gap=60GiB",
    ]);
    assert_eq!(code, 0, "{err}");
}

/// Exponential gaps make the count of reads a draw: a mean above the room after the first read
/// still gives two reads about a third of the time, and one below may give one. So the mean is
/// not refused; the run goes on and warns of each client its draws left one read. Before, a mean
/// above the room was refused as though every draw equalled it.
#[test]
fn exponential_gaps_that_leave_one_read_are_a_warning_not_a_refusal() {
    let run = |mean: &str| {
        let gap = format!("workload.gap={mean}");
        let (code, out, err) = foresight(&[
            "sim",
            "--set",
            "workload.kind=gaps",
            "--set",
            "workload.gap_dist=exponential",
            "--set",
            "workload.streams=4",
            "--set",
            &gap,
            "--json",
        ]);
        assert_eq!(code, 0, "{mean}: {err}");
        let r: serde_json::Value = serde_json::from_str(&out).expect("one JSON report");
        (r, err)
    };
    // A mean 500 times the 128 MiB file: every client draws one read (the chance of a draw
    // below the room is about 1 in 500 each, seed 1 draws none).
    let (r, err) = run("60GiB");
    assert_eq!(r["gaps_single_read_clients"], 4, "{r}");
    assert!(
        err.contains("warning: 4 client(s) measured one read") && err.contains("workload.gap"),
        "{err}"
    );
    // A mean well inside the file: no client is left one read, and nothing is said.
    let (r, err) = run("64KiB");
    assert!(r.get("gaps_single_read_clients").is_none(), "{r}");
    assert!(!err.contains("warning"), "{err}");
}

/// `sim --help` gives a hinted trace's limits on its block numbers, which the parser enforces
/// (a block past 2^40, or one given twice, is refused naming its line). Before, the help said
/// only "one block number per line", and a user met the limits as errors first.
#[test]
fn sim_help_gives_the_limits_of_a_hinted_traces_block_numbers() {
    assert_sim_help_says("at most 4,194,304, each below 2^40 and given once");
}

/// The key listing of `sim --help`: (section, key, value shown, its description with the
/// description's continuation lines), for every `key = value` line under a `[section]` line, up
/// to the JSON keys' paragraph.
fn sim_help_key_lines() -> Vec<(String, String, String, String)> {
    let (code, help, err) = foresight(&["sim", "--help"]);
    assert_eq!(code, 0, "{err}");
    let mut lines = Vec::new();
    let mut section = String::new();
    for line in help.lines().take_while(|l| !l.starts_with("JSON keys")) {
        let body = line.trim_start();
        let indent = line.len() - body.len();
        if indent == 2 && body.starts_with('[') {
            section = body[1..body.find(']').expect("a section line")].to_string();
        } else if indent == 2 && body.contains(" = ") {
            let (key, rest) = body.split_once(" = ").expect("checked");
            // The value runs to the first gap of two spaces, where the description starts.
            let (value, description) = rest.split_once("  ").unwrap_or((rest, ""));
            let name = if key == "seed" {
                String::new()
            } else {
                section.clone()
            };
            lines.push((
                name,
                key.to_string(),
                value.to_string(),
                description.trim().to_string(),
            ));
        } else if indent > 20 {
            if let Some(last) = lines.last_mut() {
                last.3 = format!("{} {body}", last.3);
            }
        }
    }
    lines
}

/// `sim --help` lists each key with a value: that value is the default unless the line says
/// otherwise (`default: ...`, or `no default`), so setting it changes no figure of a run that
/// reads the key. Checked against runs of each kind of config the listing covers; a key no
/// such run reads fails the test, so a new key needs a context here. Before, `controller_mib_s
/// = 429` was listed with no word that a run without it has no controller at all, so setting
/// the listed value changed the default run's figures.
#[test]
fn every_value_sim_help_lists_is_the_default_unless_it_says_so() {
    let dir = temp_dir("help-defaults");
    let trace = dir.path().join("small.trace");
    // DiskSim's format: R|W, Hit|Miss, block number, blocks, service us, interarrival us.
    let records: String = (0..64)
        .map(|i| format!("R Miss {} 8 1000.0 2000.0\n", 1000 + 64 * i))
        .collect();
    std::fs::write(&trace, records).expect("writing the trace");
    let trace_set = format!("workload.trace={}", trace.display());
    let short = "workload.duration=2s";
    let tier_stack = [
        "device.kind=constant",
        "device.t_upper=52ms",
        "device.t_lower=120ms",
        "device.t_lower_to_upper=122ms",
    ];
    let contexts: Vec<Vec<&str>> = vec![
        vec![short],
        vec![short, "policy.name=streams"],
        vec![short, "device.kind=raid0", "device.preset=cheetah-15k4"],
        vec![
            short,
            "device.kind=raid0",
            "device.preset=cheetah-15k4",
            "policy.name=msp+saseqp",
        ],
        vec!["policy.name=directed", "workload.kind=scan"],
        vec!["policy.name=directed", "workload.kind=tiles"],
        vec!["policy.name=directed", "workload.kind=gaps"],
        vec![short, "workload.kind=webserver"],
        vec!["workload.kind=random", "workload.requests=50"],
        vec!["workload.kind=trace", &trace_set],
        tier_stack.to_vec(),
        [&tier_stack[..], &["policy.name=ipo", "policy.max_bw=15"]].concat(),
    ];
    let run = |sets: &[&str]| -> Option<serde_json::Value> {
        let mut args = vec!["sim", "--json"];
        for set in sets {
            args.extend(["--set", set]);
        }
        let (code, out, err) = foresight(&args);
        if code == 2 {
            return None; // a key this kind of run does not read
        }
        assert_eq!(code, 0, "{args:?}: {err}");
        let mut report: serde_json::Value = serde_json::from_str(&out).expect("one JSON object");
        report.as_object_mut().expect("an object").remove("wall_s");
        Some(report)
    };
    let bases: Vec<serde_json::Value> = contexts
        .iter()
        .map(|sets| run(sets).unwrap_or_else(|| panic!("context {sets:?} runs")))
        .collect();
    let mut untested = Vec::new();
    let mut differing = Vec::new();
    for (section, key, value, description) in sim_help_key_lines() {
        let placeholder = value.contains("PATH") || value.contains("...");
        if placeholder
            || description.contains("default")
            || section == "dfs"
            || section == "network"
        {
            continue; // [dfs] and [network] keys make the run a DFS run: not a host's default
        }
        let path = if section.is_empty() {
            key.clone()
        } else {
            format!("{section}.{key}")
        };
        let set = format!("{path}={value}");
        let mut read = false;
        for (sets, base) in contexts.iter().zip(&bases) {
            if sets.contains(&format!("{path}={}", value.trim_matches('"')).as_str()) {
                read = true; // the context itself runs with the listed value
                continue;
            }
            if sets.iter().any(|s| s.starts_with(&format!("{path}="))) {
                continue; // the context chose another value of this key
            }
            let mut with = sets.clone();
            with.push(&set);
            if let Some(report) = run(&with) {
                read = true;
                if &report != base {
                    differing.push(format!("{set} on {sets:?}"));
                }
            }
        }
        if !read {
            untested.push(set);
        }
    }
    assert!(
        differing.is_empty(),
        "`sim --help` lists these values as if they were the defaults, but setting them changes \
         the run: {differing:?}"
    );
    assert!(
        untested.is_empty(),
        "no context of this test reads these keys; add one: {untested:?}"
    );
}

/// DESIGN.md names `cfq` among the host schedulers and `aps` among the policy names; here both
/// live in the [dfs] model (ARCHITECTURE.md, departures). Asked of a host, each was refused with
/// the list of what a host takes, which left the user without the way to get what they asked
/// for; the refusal now says where it is.
#[test]
fn design_names_a_host_does_not_take_point_to_the_dfs_model() {
    expect_refusal_saying(
        &["sim", "--set", "host.scheduler=cfq"],
        "host.scheduler",
        "dfs.system",
    );
    expect_refusal_saying(
        &["sim", "--set", "policy.name=aps"],
        "policy.name",
        "dfs.system = \"aps\"",
    );
    // What the refusal says to do runs.
    let (code, _, err) = foresight(&[
        "sim",
        "--set",
        "dfs.system=aps",
        "--set",
        "workload.duration=20ms",
    ]);
    assert_eq!(code, 0, "{err}");
}

/// `foresight reproduce collapse --out OUT`, with `--quick` when `quick`: its exit code, standard
/// output and standard error.
fn reproduce_collapse(out: &std::path::Path, quick: bool) -> (i32, String, String) {
    let out = out.to_str().expect("a UTF-8 temporary path");
    let quick_flag: &[&str] = if quick { &["--quick"] } else { &[] };
    let args: Vec<&str> = ["reproduce", "collapse", "--out", out]
        .into_iter()
        .chain(quick_flag.iter().copied())
        .collect();
    foresight(&args)
}

/// Two runs into one `--out` both exited 0, and the directory held one run's report beside the
/// other's figures. The second is refused while the first holds the directory: here the test
/// holds it, as a run does (an advisory lock on the directory).
#[test]
fn a_reproduce_into_a_directory_another_run_is_writing_is_refused() {
    let out_guard = temp_dir("repro-busy");
    let out = out_guard.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let held = std::fs::File::open(&out).unwrap();
    held.try_lock()
        .expect("nothing else holds a fresh directory");
    let err = expect_input_error(
        &[
            "reproduce",
            "collapse",
            "--quick",
            "--out",
            out.to_str().unwrap(),
        ],
        "another `foresight reproduce` still running",
    );
    assert!(err.contains("give another --out"), "{err}");
    assert!(!out.join("report.md").exists(), "the refused run wrote");
    held.unlock().unwrap();
    let (code, _, err) = reproduce_collapse(&out, true);
    assert_eq!(code, 0, "{err}");
}

/// A run of one experiment into a directory holding a whole catalogue's figures ended with a
/// report that covered that experiment alone and said nothing of the figures beside it, and a
/// results.json that did not say which mode it came from. The report now names the figures it
/// did not write, and results.json has a `run` key.
#[test]
fn a_finished_reproduce_names_the_earlier_figures_beside_it() {
    let out_guard = temp_dir("repro-earlier");
    let out = out_guard.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("streams_fig4.csv"), "an earlier run's figure\n").unwrap();
    let (code, _, err) = reproduce_collapse(&out, true);
    assert_eq!(code, 0, "{err}");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        report.contains(
            "1 figure file this run did not write, from an earlier run (`streams_fig4.csv`)"
        ) && !report.contains("`collapse.csv`"),
        "{report}"
    );
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert_eq!(results["run"]["mode"], "quick", "{results}");
    assert_eq!(
        results["run"]["experiments"],
        serde_json::json!(["collapse"])
    );
    assert!(
        results["run"]["wall_s"].as_f64().is_some_and(|s| s >= 0.0),
        "{results}"
    );
    // Run again with nothing else beside it: no such note.
    std::fs::remove_file(out.join("streams_fig4.csv")).unwrap();
    let (code, _, err) = reproduce_collapse(&out, false);
    assert_eq!(code, 0, "{err}");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(!report.contains("did not write"), "{report}");
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert_eq!(results["run"]["mode"], "full", "{results}");
}

/// A run whose figure could not be written exited 1, and left a report saying "it is still
/// running, or it was stopped", neither of which was so, and a hidden partial file when the
/// write itself failed. The report now says the run failed and why.
#[test]
fn a_reproduce_whose_figure_cannot_be_written_says_so_in_its_report() {
    let out_guard = temp_dir("repro-failed");
    let out = out_guard.path().join("out");
    // A directory where the CSV goes: the rename over it fails.
    std::fs::create_dir_all(out.join("collapse.csv")).unwrap();
    let (code, _, err) = reproduce_collapse(&out, true);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("collapse.csv"), "{err}");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        report.contains("This run failed, and wrote no `results.json`: writing ")
            && report.contains("collapse.csv")
            && !report.contains("still running"),
        "{report}"
    );
    let hidden: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(hidden.is_empty(), "{hidden:?}");
}

/// A `results.json` that is a symbolic link was replaced by a regular file, while a `report.md`
/// link was written through. Both are written through now: the link is kept, and the file it
/// leads to holds this run's results.
#[test]
fn a_results_json_link_is_written_through_as_the_report_link_is() {
    let guard = temp_dir("repro-link");
    let out = guard.path().join("out");
    let target = guard.path().join("kept");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::create_dir_all(&target).unwrap();
    std::fs::write(target.join("r.json"), "{\"stale\": 1}\n").unwrap();
    std::os::unix::fs::symlink("../kept/r.json", out.join("results.json")).unwrap();
    let (code, _, err) = reproduce_collapse(&out, true);
    assert_eq!(code, 0, "{err}");
    let link = std::fs::symlink_metadata(out.join("results.json")).unwrap();
    assert!(link.file_type().is_symlink(), "the link was replaced");
    let kept = std::fs::read_to_string(target.join("r.json")).unwrap();
    assert!(
        kept.contains("\"collapse\"") && !kept.contains("stale"),
        "{kept}"
    );
}

/// A trace record arriving 2^64 - 1 ns after the first overflowed the clock (exit 101) in the
/// stream scheduler, the SSD model and the controller; MSR's FILETIME stamps reached it too. It is
/// refused by its line, as a synthetic client is held to its last issue time.
#[test]
fn a_trace_record_past_the_clock_is_refused_by_its_line() {
    let dir = temp_dir("trace-far");
    let mqsim = dir.path().join("far.mqsim");
    std::fs::write(&mqsim, "0 0 0 16 1\n18446744073709551615 0 0 16 1\n").unwrap();
    let msr = dir.path().join("far.csv");
    std::fs::write(
        &msr,
        "0,hm,0,Read,0,4096,1\n184467440737095516,hm,0,Read,0,4096,1\n",
    )
    .unwrap();
    for (file, format) in [(&mqsim, "mqsim"), (&msr, "msr")] {
        for extra in [
            "policy.name=streams",
            "device.kind=ssd",
            "device.controller_mib_s=100000",
        ] {
            let trace = format!("workload.trace={}", file.to_str().unwrap());
            let format = format!("workload.format={format}");
            let err = expect_input_error(
                &[
                    "sim",
                    "--set",
                    "workload.kind=trace",
                    "--set",
                    &format,
                    "--set",
                    &trace,
                    "--set",
                    extra,
                ],
                ":2: the request arrives 585 years after the trace's earliest",
            );
            assert!(err.contains("past the 500 years a run may last"), "{err}");
        }
    }
}

/// DESIGN.md section 7: `reproduce` writes `DIR/report.md`, one PNG and one CSV per figure, and
/// `DIR/results.json`, whose key per experiment holds its measurements.
#[test]
fn reproduce_writes_the_report_results_and_a_png_and_csv_per_figure() {
    let out_guard = temp_dir("cli-outputs");
    let out = out_guard.path().join("out");
    let (code, _, err) = foresight(&[
        "reproduce",
        "collapse",
        "--quick",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("\n## collapse"), "{report}");
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap())
            .expect("results.json is JSON");
    assert!(results.get("collapse").is_some(), "{results}");
    let mut stems = std::collections::BTreeMap::<String, Vec<String>>::new();
    for entry in std::fs::read_dir(&out).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if let Some((stem, ext)) = name.rsplit_once('.') {
            if ext == "png" || ext == "csv" {
                stems
                    .entry(stem.to_string())
                    .or_default()
                    .push(ext.to_string());
            }
        }
    }
    assert!(stems.contains_key("collapse"), "{stems:?}");
    for (stem, mut exts) in stems {
        exts.sort();
        assert_eq!(exts, ["csv", "png"], "figure `{stem}` lacks a file");
    }
}

/// A hinted trace whose blocks, times workload.block, pass the 2^63 bytes of the data's address
/// space (block 2^40 - 1 of 10 MiB, on constant-time levels that bound no capacity) made the run
/// panic ("extent runs past the volume") instead of refusing the trace.
#[test]
fn a_hinted_trace_past_the_data_address_space_is_refused() {
    let dir = temp_dir("hint-far");
    let tiers = "device.tiers=[{t_read = \"1ms\", capacity = \"20MiB\"}, \
                 {t_read = \"2ms\", t_copy_up = \"1ms\"}]";
    let trace = dir.path().join("far.trace");
    std::fs::write(&trace, "0\n1099511627775\n").unwrap();
    let set = format!("workload.trace={}", trace.to_str().unwrap());
    expect_refusal_saying(
        &[
            "sim",
            "--set",
            "device.kind=tiered",
            "--set",
            tiers,
            "--set",
            "workload.kind=hinted",
            "--set",
            "workload.block=10MiB",
            "--set",
            &set,
        ],
        "workload.block",
        "2^63 bytes",
    );
}

/// The stream scheduler reads the disk in R-byte stretches and knows no file's end, so an R
/// larger than the files reads mostly surplus (R = 1 GiB over four 16 MiB files: 2 GiB read for
/// 64 MiB). The run goes on, but says why its device bytes dwarf the application's, and which
/// key to change; an R that fits the files says nothing.
#[test]
fn a_stream_scheduler_read_larger_than_the_files_is_warned_of() {
    let run = |r: &str| {
        foresight(&[
            "sim",
            "--set",
            "device.preset=wd800jd",
            "--set",
            "policy.name=streams",
            "--set",
            &format!("policy.readahead={r}"),
            "--set",
            "policy.memory=1GiB",
            "--set",
            "workload.streams=4",
            "--set",
            "workload.file_size=16MiB",
            "--json",
        ])
    };
    let (code, stdout, stderr) = run("1GiB");
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("\"device_bytes\""), "{stdout}");
    assert!(
        stderr.contains(
            "warning: policy.readahead (R = 1GiB) is larger than workload.file_size (16MiB)"
        ) && stderr.contains("up to 1008MiB past the file")
            && stderr.contains("set policy.readahead to at most workload.file_size"),
        "{stderr}"
    );
    let (code, _, stderr) = run("8MiB");
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("policy.readahead"), "{stderr}");
}

/// A webserver set left to its default (the files of an 8 GiB set) is cut to what fits a smaller
/// volume; the summary and the JSON say how many files ran and what they were cut from, and a
/// set that ran whole says its count and no cut.
#[test]
fn a_webserver_set_cut_to_fit_the_volume_says_so() {
    let web = |preset: &str, json: bool| {
        let preset = format!("device.preset={preset}");
        let mut args = vec![
            "sim",
            "--set",
            "workload.kind=webserver",
            "--set",
            &preset,
            "--set",
            "workload.duration=1s",
        ];
        if json {
            args.push("--json");
        }
        let (code, out, err) = foresight(&args);
        assert_eq!(code, 0, "{err}");
        out
    };
    let v: serde_json::Value =
        serde_json::from_str(web("cheetah-4lp", true).trim()).expect("one JSON object");
    let files = v["webserver_files"].as_u64().expect("webserver_files");
    assert!((1000..2048).contains(&files), "{v}");
    assert_eq!(v["webserver_files_cut_from"], 2048, "{v}");
    // cheetah-4lp holds 4.55 GB.
    let set_bytes = v["webserver_set_bytes"]
        .as_u64()
        .expect("webserver_set_bytes");
    assert!((3 << 30..4_550_000_000).contains(&set_bytes), "{v}");
    let summary = web("cheetah-4lp", false);
    assert!(
        summary.contains(&format!("file set{files:>15} files, {set_bytes} bytes"))
            && summary.contains("cut from the default 2048"),
        "{summary}"
    );

    let v: serde_json::Value =
        serde_json::from_str(web("wd800jd", true).trim()).expect("one JSON object");
    assert_eq!(v["webserver_files"], 2048, "{v}");
    assert!(v.get("webserver_files_cut_from").is_none(), "{v}");
    let summary = web("wd800jd", false);
    assert!(
        summary.contains("file set") && !summary.contains("cut from"),
        "{summary}"
    );

    // A set of one file says "1 file".
    let (code, out, err) = foresight(&[
        "sim",
        "--set",
        "workload.kind=webserver",
        "--set",
        "workload.file_size=100GiB",
        "--set",
        "workload.duration=1s",
    ]);
    assert_eq!(code, 0, "{err}");
    let line = out
        .lines()
        .find(|l| l.contains("file set"))
        .expect("a file set line");
    assert!(line.contains(" 1 file, "), "{out}");
}

/// A size written as a TOML float (`1e9`) is refused quoting it as written, not as TOML prints
/// it back (`1000000000.0`), with the whole number to write instead; from a config file the
/// refusal also names the file and line that set it.
#[test]
fn a_size_written_as_a_float_is_quoted_as_written() {
    for (set, key, written, reprint, whole) in [
        (
            "host.memory=1e9",
            "host.memory",
            "1e9",
            "1000000000.0",
            "1000000000",
        ),
        (
            "workload.request=4.096e3",
            "workload.request",
            "4.096e3",
            "4096.0",
            "4096",
        ),
        // A key of an inline table given whole.
        (
            "host={memory=2e9}",
            "host.memory",
            "2e9",
            "2000000000.0",
            "2000000000",
        ),
    ] {
        let err = expect_input_error(&["sim", "--set", set], key);
        assert!(
            err.contains(&format!("got {written}, a TOML float"))
                && err.contains(&format!("bytes, {whole},"))
                && !err.contains(reprint),
            "{err}"
        );
    }
    let dir = temp_dir("float-size");
    let config = dir.path().join("float.toml");
    std::fs::write(
        &config,
        "seed = 3\n[host]\nscheduler = \"noop\"\nmemory = 1e9\n",
    )
    .expect("writing the config");
    let config = config.to_str().expect("a UTF-8 path");
    let err = expect_input_error(&["sim", "--config", config], "host.memory");
    assert!(
        err.contains("got 1e9, a TOML float")
            && err.contains(&format!("(set at {config}:4)"))
            && !err.contains("1000000000.0"),
        "{err}"
    );
    // A --set replaces the file's value, and with it the place it was written.
    let err = expect_input_error(
        &["sim", "--config", config, "--set", "host.memory=2.5e9"],
        "host.memory",
    );
    assert!(
        err.contains("got 2.5e9") && !err.contains("set at"),
        "{err}"
    );
}

/// The warning of an R larger than the files says what it cost: the bytes read past the files'
/// ends, which the JSON gives as `past_file_end_bytes` (R = 1 GiB over four 16 MiB files spread
/// over the disk: every byte the device read beyond the application's lay past a file's end),
/// and the R to set instead. Other policies have no such key.
#[test]
fn a_stream_scheduler_read_past_the_files_says_what_it_cost() {
    let run = |policy: &str, r: &str| {
        let (code, out, err) = foresight(&[
            "sim",
            "--set",
            &format!("policy.name={policy}"),
            "--set",
            &format!("policy.readahead={r}"),
            "--set",
            "policy.memory=1GiB",
            "--set",
            "workload.streams=4",
            "--set",
            "workload.file_size=16MiB",
            "--json",
        ]);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON object");
        (v, err)
    };
    let (v, err) = run("streams", "1GiB");
    let past = v["past_file_end_bytes"]
        .as_u64()
        .expect("past_file_end_bytes");
    let (device, app) = (v["device_bytes"].as_u64(), v["app_bytes"].as_u64());
    assert_eq!(Some(past), device.zip(app).map(|(d, a)| d - a), "{v}");
    assert!(
        err.contains(&format!("this run read {past} bytes"))
            && err.contains("(past_file_end_bytes)")
            && err.contains("--set policy.readahead=16MiB"),
        "{err}"
    );
    // Given before the run as well, so that a long run is not waited out for it: the first
    // warning cannot know the cost yet.
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("warning: policy.readahead"))
        .collect();
    assert_eq!(warnings.len(), 2, "{err}");
    assert!(!warnings[0].contains("this run read"), "{err}");
    // An R that fits the files is not warned of, but the stretches begin where the classifier
    // took each stream (after its first reads, on demand), so each stream's last one still runs
    // past its file, by less than R.
    let (v, err) = run("streams", "8MiB");
    let past = v["past_file_end_bytes"]
        .as_u64()
        .expect("past_file_end_bytes");
    assert!(past < 4 * (8 << 20), "{v}");
    assert!(!err.contains("warning"), "{err}");
    // seqp reads no policy.readahead; the key is the stream scheduler's.
    let (code, out, err) = foresight(&["sim", "--set", "workload.file_size=16MiB", "--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("past_file_end_bytes"), "{out}");
}

/// A duration in hours runs as the same time in minutes: `workload.duration=2h` was refused as an
/// unknown unit while `120min` ran. One past every bound is refused with exit 2, not wrapped.
#[test]
fn a_duration_in_hours_runs_and_one_past_the_bound_is_refused() {
    let run = |d: &str| {
        let (code, out, err) =
            foresight(&["sim", "--set", &format!("workload.duration={d}"), "--json"]);
        assert_eq!(code, 0, "{d}: {err}");
        let mut report: serde_json::Value = serde_json::from_str(&out).expect("one JSON object");
        report.as_object_mut().expect("an object").remove("wall_s");
        report
    };
    assert_eq!(run("0.0001h"), run("0.36s"));
    for d in ["1e30h", "99999999999999999999999999999h", "300000h"] {
        expect_input_error(
            &["sim", "--set", &format!("workload.duration={d}")],
            "config key `workload.duration`",
        );
    }
    expect_refusal_saying(
        &["sim", "--set", "workload.duration=2hours"],
        "config key `workload.duration`",
        "`ns`, `us`, `ms`, `s`, `min`, `h`",
    );
}

/// A path key that names a directory is refused naming the key and what to give. `--set
/// device.disksim=DIR` showed only the system's "Is a directory (os error 21)", and a trace
/// directory was refused naming the directory but not the key that gave it.
#[test]
fn a_directory_given_for_a_file_is_refused_naming_the_key() {
    let dir = temp_dir("dir-for-file");
    let d = dir.path().to_str().unwrap();
    let disksim = format!("device.disksim={d}");
    let trace = format!("workload.trace={d}");
    let hinted: Vec<&str> = ["sim"]
        .into_iter()
        .chain(CONSTANT_TIERS_HINTED)
        .chain(["--set", &trace])
        .collect();
    for (args, key, fix) in [
        (
            &["sim", "--set", &disksim][..],
            "device.disksim",
            "give the path of a DiskSim .diskspecs file (device.disksim = \"X.diskspecs\")",
        ),
        (
            &["sim", "--set", "workload.kind=trace", "--set", &trace][..],
            "workload.trace",
            "give the path of a trace file",
        ),
        (
            &hinted[..],
            "workload.trace",
            "give the path of a hinted trace",
        ),
    ] {
        let err = expect_input_error(args, &format!("config key `{key}`: `{d}` is a directory"));
        assert!(
            err.contains(fix),
            "{args:?}: message should say `{fix}`: {err}"
        );
        assert!(!err.contains("os error"), "{args:?}: {err}");
    }
    // From a file, relative to it: the line that set it is named.
    let cfg = dir.path().join("sim.toml");
    std::fs::write(&cfg, "[workload]\nkind = \"trace\"\ntrace = \".\"\n").unwrap();
    let err = expect_input_error(
        &["sim", "--config", cfg.to_str().unwrap()],
        "config key `workload.trace`",
    );
    assert!(
        err.contains("is a directory") && err.contains("sim.toml:3"),
        "{err}"
    );
    expect_refusal_saying(
        &["sim", "--set", "workload.duration=1s", "--requests-out", d],
        &format!("--requests-out {d}: is a directory"),
        "give the path of a file to write",
    );
}

/// A path in a config file that TOML reads as a number or a boolean is refused saying to quote
/// it, naming the line; the same text given by `--set` is taken as the path (here, of a hinted
/// trace that is not there, so the run is refused for reading it, not for its type).
#[test]
fn a_path_toml_reads_as_a_number_is_quoted_in_a_file_and_taken_as_written_by_set() {
    let dir = temp_dir("path-as-number");
    let cfg = dir.path().join("sim.toml");
    for (value, quoted) in [("2024", "trace = \"2024\""), ("true", "trace = \"true\"")] {
        std::fs::write(
            &cfg,
            format!("[workload]\nkind = \"trace\"\ntrace = {value}\n"),
        )
        .unwrap();
        let err = expect_input_error(
            &["sim", "--config", cfg.to_str().unwrap()],
            "config key `workload.trace`",
        );
        assert!(
            err.contains(&format!("quote it: {quoted}")) && err.contains("sim.toml:3"),
            "{err}"
        );
    }
    let set = "workload.trace=2024";
    let hinted: Vec<&str> = ["sim"]
        .into_iter()
        .chain(CONSTANT_TIERS_HINTED)
        .chain(["--set", set])
        .collect();
    for args in [
        &["sim", "--set", "workload.kind=trace", "--set", set][..],
        &hinted[..],
    ] {
        let err = expect_input_error(args, "2024: cannot read");
        assert!(!err.contains("expected the path"), "{args:?}: {err}");
    }
}

/// A path given by `--set` is its text as written, except a TOML string in quotes, which is the
/// text inside them (`--set 'workload.trace="2024"'` names `2024`, not `"2024"`). `sim --help`
/// and the README said a path was "taken as written" / "always the text as written", which the
/// quoted form is not.
#[test]
fn the_docs_say_a_quoted_path_set_is_the_text_inside_its_quotes() {
    let err = expect_input_error(
        &[
            "sim",
            "--set",
            "workload.kind=trace",
            "--set",
            "workload.trace=\"2024\"",
        ],
        "2024: cannot read",
    );
    assert!(!err.contains("\"2024\""), "{err}");
    let (code, help, _) = foresight(&["sim", "--help"]);
    assert_eq!(code, 0);
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("the README");
    for (doc, text) in [("sim --help", help), ("README", readme)] {
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            text.contains("in quotes is the text inside them"),
            "{doc} does not say what a quoted path given by --set names"
        );
    }
}

/// A wide array's members line listed every member's busy share and drive cache hits on one line
/// (about 1,900 characters for 256 members). Each list has its own line; in a list that does not
/// fit, members in a row with the same figure are grouped and the figures are wrapped, each line
/// naming the first member it shows.
#[test]
fn a_wide_array_prints_its_members_on_readable_lines() {
    let (code, out, err) = foresight(&[
        "sim",
        "--set",
        "device.kind=raid0",
        "--set",
        "device.disks=256",
        "--set",
        "device.preset=cheetah-15k4",
    ]);
    assert_eq!(code, 0, "{err}");
    // The members block ends the report.
    let from = out.find("  members ").expect("a members line");
    for line in out[from..].lines() {
        assert!(
            line.len() <= 100,
            "a line of {} characters: {line}",
            line.len()
        );
    }
    assert!(
        out[from..].starts_with("  members      busy of the run"),
        "{out}"
    );
    assert!(
        out.contains(" x 1%"),
        "identical members are grouped: {out}"
    );
    // A narrow array's lists fit their lines.
    let (code, out, err) = foresight(&["sim", "--set", "device.kind=raid0"]);
    assert_eq!(code, 0, "{err}");
    let from = out.find("  members ").expect("a members line");
    let members: Vec<&str> = out[from..].lines().collect();
    assert_eq!(members.len(), 2, "{out}");
    assert!(
        members[0].starts_with("  members      busy ") && members[0].ends_with(" of the run"),
        "{out}"
    );
    assert!(
        members[1].starts_with("               drive cache hits ")
            && members[1].ends_with(" of their requests"),
        "{out}"
    );
}

/// The default run's `application` line was 105 characters, wider than the 100 the members block
/// wraps at; a line too long is now broken between its clauses, under its figures.
#[test]
fn every_line_of_the_sim_summary_fits_100_columns() {
    let (code, out, err) = foresight(&["sim"]);
    assert_eq!(code, 0, "{err}");
    for line in out.lines() {
        assert!(
            line.len() <= 100,
            "a line of {} characters: {line}",
            line.len()
        );
    }
    let from = out.find("  application ").expect("an application line");
    let application: Vec<&str> = out[from..].lines().take(2).collect();
    assert!(
        application[0].contains(" requests, ") && application[0].contains("latency mean"),
        "{out}"
    );
    assert!(
        application[1].starts_with("               stalled "),
        "the wrapped clause opens under the figures: {out}"
    );
}

/// The paragraph `cmd --help` gives `flag`, on one line: from the flag's own line to the next
/// option's.
fn option_help(cmd: &str, flag: &str) -> String {
    let (code, help, err) = foresight(&[cmd, "--help"]);
    assert_eq!(code, 0, "{err}");
    let head = format!("{flag} ");
    let mut lines = help
        .lines()
        .skip_while(|l| !l.trim_start().starts_with(&head));
    let first = lines
        .next()
        .unwrap_or_else(|| panic!("`{cmd} --help` has no {flag}:\n{help}"));
    let rest = lines.take_while(|l| {
        let l = l.trim_start();
        !(l.starts_with("--") || l.starts_with("-h,"))
    });
    std::iter::once(first)
        .chain(rest)
        .flat_map(str::split_whitespace)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Every option that refuses numbers outside a range says that range in its `--help`, so that a
/// user learns the bounds before a refusal: these said only what the option is, and each refused
/// a value (here the first past the bound) with a range the help did not give.
#[test]
fn each_bounded_option_gives_its_bounds_in_its_help() {
    let dir = temp_dir("bounds-help");
    let bench_dir = dir.path().join("bench");
    let bench_dir = bench_dir.to_str().unwrap();
    let cases: &[(&str, &str, &str, &str)] = &[
        ("bench", "--queue-depth", "4097", "1 to 4096"),
        ("bench", "--limit-depth", "1025", "1 to 1024"),
        ("bench", "--repeat", "101", "1 to 100"),
        ("bench", "--request", "1025MiB", "1 byte to 1GiB"),
        (
            "bench",
            "--max-io",
            "68MiB",
            "whole 4KiB pages from 4KiB to 64MiB",
        ),
        ("bench", "--file-size", "4095", "at least 4KiB"),
        ("serve", "--workers", "4097", "1 to 4096"),
        ("net-soak", "--workers", "4097", "1 to 4096"),
    ];
    for &(cmd, flag, past, says) in cases {
        let args: Vec<&str> = match cmd {
            "bench" => vec![cmd, "--dir", bench_dir, "--streams", "1", flag, past],
            "serve" => vec![cmd, "--root", ".", flag, past],
            _ => vec![cmd, flag, past],
        };
        expect_input_error(&args, flag);
        let help = option_help(cmd, flag);
        assert!(
            help.contains(says),
            "`{cmd} --help` does not give {flag}'s bounds ({says:?}): {help}"
        );
    }
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "a refused bench wrote files"
    );
}

/// A whole-number option given a sign, a point, a word or nothing is refused naming the option
/// and saying what to write: clap's own parser answered `-1` with "-1 is not in 0..=4294967295"
/// (the integer type's range, which no option takes) and `x` with "invalid digit found in
/// string".
#[test]
fn whole_number_options_say_what_to_write() {
    let dir = temp_dir("whole-numbers");
    let bench_dir = dir.path().join("bench");
    let bench_dir = bench_dir.to_str().unwrap();
    let url = "http://127.0.0.1:1/f";
    let cases: &[(&[&str], &str, &str)] = &[
        (&["bench", "--dir", bench_dir], "--streams", "-1"),
        (&["bench", "--dir", bench_dir], "--streams", "1,,2"),
        (&["bench", "--dir", bench_dir], "--queue-depth", "-1"),
        (&["bench", "--dir", bench_dir], "--limit-depth", "1.5"),
        (&["bench", "--dir", bench_dir], "--repeat", "x"),
        // The message says "no sign": a plus was taken all the same (and the run went ahead,
        // hence sizes that keep such a run small).
        (
            &[
                "bench",
                "--dir",
                bench_dir,
                "--total-size",
                "8MiB",
                "--file-size",
                "4MiB",
            ],
            "--repeat",
            "+3",
        ),
        (
            &["bench", "--dir", bench_dir, "--emulate", "wd800jd"],
            "--disks",
            "-1",
        ),
        (&["serve", "--root", "."], "--workers", "-1"),
        (&["serve", "--root", "."], "--max-connections", "x"),
        (&["serve", "--root", "."], "--max-header-bytes", "1e4"),
        (&["get", url, "--random", "4KiB"], "--reads", "-1"),
        (&["get", url, "--random", "4KiB"], "--seed", "-1"),
        (&["get", url], "--max-alpha", "-1"),
        (&["net-soak"], "--clients", "-1"),
        (&["net-soak"], "--files", "x"),
        (&["net-soak"], "--workers", "-1"),
        (
            &[
                "proxy",
                "--listen",
                "127.0.0.1:0",
                "--upstream",
                "127.0.0.1:1",
            ],
            "--max-connections",
            "-5",
        ),
    ];
    for &(head, flag, value) in cases {
        let mut args = head.to_vec();
        args.extend([flag, value]);
        let err = expect_input_error(&args, flag);
        assert!(
            err.contains("whole number")
                && !err.contains("4294967295")
                && !err.contains("digit found"),
            "{args:?}: the refusal should say to write a whole number: {err}"
        );
    }
    let err = expect_input_error(
        &[
            "bench",
            "--dir",
            bench_dir,
            "--repeat",
            "99999999999999999999",
        ],
        "--repeat",
    );
    assert!(err.contains("too large"), "{err}");
    // Past the type's largest number, that number is named: not every option's --help gives an
    // upper bound, and the message sent the user there for one (`get --reads`: "at least 1").
    assert!(err.contains("at most 4294967295 fits this option"), "{err}");
    let err = expect_input_error(
        &[
            "get",
            "http://127.0.0.1:1/f",
            "--random",
            "4KiB",
            "--reads",
            "99999999999999999999",
        ],
        "--reads",
    );
    assert!(err.contains("at most 4294967295 fits this option"), "{err}");
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "a refused bench wrote files"
    );
}

/// A trace file that cannot be opened is refused naming the key its path came from and how a
/// relative path is read: the message gave only the path, joined to the config file's directory,
/// which is not the text the config holds.
#[test]
fn a_missing_trace_names_workload_trace_and_how_its_path_is_read() {
    let dir = temp_dir("missing-trace");
    let block = dir.path().join("block.toml");
    std::fs::write(
        &block,
        "[workload]\nkind = \"trace\"\nformat = \"disksim\"\ntrace = \"missing.trace\"\n",
    )
    .unwrap();
    let hinted = dir.path().join("hinted.toml");
    std::fs::write(
        &hinted,
        "[device]\nkind = \"constant\"\nt_upper = \"1ms\"\nt_lower = \"2ms\"\n\
         t_lower_to_upper = \"3ms\"\n[policy]\nname = \"tip\"\n\
         [workload]\nkind = \"hinted\"\ntrace = \"missing.txt\"\n",
    )
    .unwrap();
    for (config, file) in [(&block, "missing.trace"), (&hinted, "missing.txt")] {
        let err = expect_input_error(
            &["sim", "--config", config.to_str().unwrap()],
            &dir.path().join(file).display().to_string(),
        );
        assert!(
            err.contains("workload.trace") && err.contains("config file's directory"),
            "{config:?}: the refusal should name the key and how its path is read: {err}"
        );
    }
}

/// A hinted trace with no block numbers is refused as a whole too, and says so as a block trace
/// with no records does: it gave only the path and "the trace is empty", without the key the path
/// came from or how a relative one is read.
#[test]
fn an_empty_hinted_trace_names_workload_trace_and_how_its_path_is_read() {
    let dir = temp_dir("empty-hinted-trace");
    let hinted = dir.path().join("hinted.toml");
    std::fs::write(
        &hinted,
        "[device]\nkind = \"constant\"\nt_upper = \"1ms\"\nt_lower = \"2ms\"\n\
         t_lower_to_upper = \"3ms\"\n[policy]\nname = \"tip\"\n\
         [workload]\nkind = \"hinted\"\ntrace = \"empty.txt\"\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("empty.txt"), "# no blocks\n\n").unwrap();
    let err = expect_input_error(
        &["sim", "--config", hinted.to_str().unwrap()],
        "no block numbers",
    );
    assert!(
        err.contains("workload.trace") && err.contains("config file's directory"),
        "the refusal should name the key and how its path is read: {err}"
    );
}

/// `foresight sim FILE.toml` reads the file as `--config FILE.toml` does: it was refused as an
/// unexpected argument, the first thing a user types with an example config. Both at once are
/// refused, naming the clash.
#[test]
fn sim_takes_its_config_file_without_the_flag() {
    let dir = temp_dir("positional");
    let path = dir.path().join("c.toml");
    std::fs::write(
        &path,
        "[workload]\nkind = \"streams\"\nstreams = 2\nduration = \"200ms\"\n",
    )
    .unwrap();
    let path = path.to_str().unwrap();
    let (code, by_flag, err) = foresight(&["sim", "--config", path, "--json"]);
    assert_eq!(code, 0, "{err}");
    let (code, bare, err) = foresight(&["sim", path, "--json"]);
    assert_eq!(code, 0, "{err}");
    let without_wall = |text: &str| {
        let mut v: serde_json::Value = serde_json::from_str(text).unwrap();
        v.as_object_mut().unwrap().remove("wall_s");
        v
    };
    assert_eq!(without_wall(&bare), without_wall(&by_flag));
    assert_eq!(without_wall(&bare)["streams"], 2, "{bare}");
    let (code, _, err) = foresight(&["sim", path, "--config", path]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cannot be used with"), "{err}");
}
