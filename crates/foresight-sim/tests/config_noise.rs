//! The config parser against noise: random bytes as a config file, the example configs with
//! bytes flipped, cut, or replaced by huge numbers and non-UTF-8 bytes, keys no section has,
//! random tier stacks, and random `--set` assignments of every documented key to values of every
//! kind. Bad input must come back as a `ConfigError` (which the CLI turns into exit code 2) that
//! names the file and line or the key, never as a panic; and a config that parses must run, or be
//! refused by `run` with an error, again without a panic.
//!
//! proptest prints the failing input (the bytes, or the assignments) and saves it under
//! `proptest-regressions/`, so a failure replays. A run that never ends prints nothing, so with
//! `NOISE_TRACE=1` set (and `--nocapture`) each config is printed before it runs.

use foresight_sim::config::{apply_set, parse_config_text, read_config_file, AsWritten, SimConfig};
use foresight_sim::{run, RunOptions};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

/// One assignment: a documented key, and either a value that suits it or one from [`VALUES`].
fn assignment() -> impl Strategy<Value = (&'static str, &'static str)> {
    (prop::sample::select(KEYS), any::<bool>()).prop_flat_map(|((key, suits), noise)| {
        let values = if noise { VALUES } else { suits };
        prop::sample::select(values).prop_map(move |v| (key, v))
    })
}

/// Every key `foresight sim --help` documents, the tiered and DFS ones included, each with values
/// that suit it (which the tests mix with [`VALUES`], so that many configs get as far as a run).
const KEYS: &[(&str, &[&str])] = &[
    ("seed", &["1", "7"]),
    (
        "device.kind",
        &["hdd", "ssd", "raid0", "jbod", "tiered", "constant"],
    ),
    (
        "device.preset",
        &[
            "wd800jd",
            "cheetah-15k5",
            "ssd-850evo",
            "st6000nm0024",
            "atlas-10k",
        ],
    ),
    ("device.disks", &["1", "2", "5"]),
    ("device.strip", &["\"4KiB\"", "\"128KiB\""]),
    ("device.queue_depth", &["1", "8", "32"]),
    ("device.queue_policy", &["fcfs", "clook", "sptf"]),
    ("device.cache_segments", &["1", "16"]),
    ("device.segment_size", &["\"64KiB\"", "\"512KiB\""]),
    ("device.drive_readahead", &["0", "\"512KiB\""]),
    ("device.drive_readahead_min", &["0", "\"64KiB\""]),
    ("device.almost_read_hits", &["none", "head", "ahead"]),
    ("device.controller_mib_s", &["100", "450"]),
    ("device.controller_cache", &["0", "\"4KiB\"", "\"64MiB\""]),
    ("device.controller_readahead", &["0", "\"1MiB\""]),
    ("device.t_upper", &["\"1ms\""]),
    ("device.t_lower", &["\"10ms\""]),
    ("device.t_lower_to_upper", &["\"5ms\""]),
    ("device.upper_capacity", &["\"1MiB\""]),
    ("device.memory", &["\"1MiB\""]),
    ("device.tiers", &["[\"ssd-850evo\", \"wd800jd\"]"]),
    ("device.link", &["lan-1g"]),
    ("host.memory", &["\"1MiB\"", "\"64MiB\""]),
    ("host.scheduler", &["noop", "deadline", "anticipatory"]),
    ("host.max_request", &["\"4KiB\"", "\"512KiB\""]),
    ("host.read_expire", &["\"1ms\"", "\"500ms\""]),
    ("host.antic_expire", &["\"0ms\"", "\"6ms\""]),
    ("host.nr_requests", &["1", "128"]),
    ("host.raid_cache", &["0", "\"4KiB\"", "\"16MiB\""]),
    ("policy.name", foresight_policy::POLICY_NAMES),
    ("policy.readahead_max", &["0", "\"128KiB\"", "\"4MiB\""]),
    ("policy.readahead_rule", &["linux", "synchronous"]),
    ("policy.sc_max", &["1", "42"]),
    ("policy.sc_thresh", &["1", "38"]),
    ("policy.sps_max", &["1", "8"]),
    ("policy.readahead", &["\"4KiB\"", "\"8MiB\""]),
    ("policy.per_turn", &["1", "4"]),
    ("policy.memory", &["\"4KiB\"", "\"16MiB\""]),
    ("policy.dispatch", &["1", "2"]),
    ("policy.timeout", &["\"1ms\"", "\"2s\""]),
    ("policy.offset", &["1", "32"]),
    ("policy.threshold", &["1", "2"]),
    ("policy.turn_order", &["arrival", "position"]),
    ("policy.directed_memory", &["0", "\"8KiB\"", "\"1MiB\""]),
    ("policy.infill_max", &["auto", "0", "\"64KiB\""]),
    ("policy.contention", &["true", "false"]),
    ("policy.x_cache", &["auto", "1", "8"]),
    ("policy.max_bw", &["1", "4"]),
    ("policy.pnext_groups", &["1", "2"]),
    ("policy.lru_hit_gain", &["0", "0.5"]),
    (
        "workload.kind",
        &[
            "streams",
            "random",
            "webserver",
            "scan",
            "tiles",
            "gaps",
            "hinted",
        ],
    ),
    ("workload.streams", &["1"]),
    ("workload.file_size", &["1"]),
    ("workload.files", &["1"]),
    ("workload.request", &["\"4KiB\"", "\"64KiB\"", "\"1MiB\""]),
    ("workload.think", &["\"0ms\"", "\"1ms\""]),
    ("workload.duration", &["1"]),
    ("workload.requests", &["1"]),
    (
        "workload.placement",
        &["spread", "shuffled", "contiguous", "aligned", "fragmented"],
    ),
    ("workload.extent", &["\"4KiB\"", "\"1MiB\""]),
    ("workload.metadata", &["true", "false"]),
    ("workload.closed", &["true", "false"]),
    ("workload.tile", &["\"8KiB\""]),
    ("workload.tiles_across", &["1"]),
    ("workload.gap", &["0", "\"16KiB\""]),
    ("workload.gap_dist", &["fixed", "exponential"]),
    ("workload.reads", &["1"]),
    ("workload.block", &["\"4KiB\"", "\"64KiB\""]),
    ("workload.consume", &["\"0ms\"", "\"1ms\""]),
    ("workload.order", &["sequential", "random"]),
    (
        "dfs.system",
        &[
            "local",
            "lustre",
            "nfs",
            "hdfs",
            "gluster",
            "dedicated",
            "aps",
        ],
    ),
    ("dfs.queue", &["shared", "dedicated"]),
    ("dfs.workers", &["1"]),
    ("dfs.alpha", &["auto", "1", "4"]),
    ("dfs.max_alpha", &["1", "16"]),
    ("dfs.slice", &["\"1ms\"", "\"100ms\""]),
    ("dfs.slice_idle", &["\"0ms\"", "\"8ms\""]),
    ("network.link", &["lan-1g", "wan-10g"]),
    ("network.delay", &["\"0ms\"", "\"4ms\""]),
    ("network.bandwidth", &["\"1Gbit/s\"", "\"100MB/s\""]),
    ("network.window", &["\"64KiB\"", "\"30MiB\""]),
];

/// Values of every kind the keys take, valid for some and wrong for others: numbers (zero,
/// negative, huge, fractional), sizes, durations, rates, booleans, names of every enumeration,
/// arrays, tables and plain garbage.
const VALUES: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "5",
    "8",
    "64",
    "1000",
    "-1",
    "0.5",
    "1e300",
    "18446744073709551615",
    "\"0B\"",
    "\"4KiB\"",
    "\"64KiB\"",
    "\"128KiB\"",
    "\"1MiB\"",
    "\"8MiB\"",
    "\"64MiB\"",
    "\"1GiB\"",
    "\"1024TiB\"",
    "\"0ms\"",
    "\"1ms\"",
    "\"50ms\"",
    "\"2s\"",
    "\"100MB/s\"",
    "\"1Gbit/s\"",
    "true",
    "false",
    "auto",
    "none",
    "seqp",
    "saseqp",
    "msp+seqp",
    "streams",
    "directed",
    "tip",
    "ipipe",
    "ipods",
    "hdd",
    "ssd",
    "raid0",
    "jbod",
    "tiered",
    "constant",
    "wd800jd",
    "cheetah-15k5",
    "ssd-850evo",
    "st6000nm0024",
    "fcfs",
    "clook",
    "sptf",
    "noop",
    "deadline",
    "anticipatory",
    "random",
    "webserver",
    "scan",
    "tiles",
    "gaps",
    "hinted",
    "trace",
    "spread",
    "shuffled",
    "position",
    "contiguous",
    "fragmented",
    "exponential",
    "fixed",
    "lustre",
    "aps",
    "local",
    "lan-1g",
    "wan-10g",
    "[1, 2]",
    "[\"ssd-850evo\", \"wd800jd\"]",
    "{ a = 1 }",
    "\"\"",
    "\u{fffd}\u{0}",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Random bytes as a config file: an error or a config, never a panic; read as the command
    /// line reads a file too (its values as written, for the messages).
    #[test]
    fn random_bytes_as_a_config_file_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let text = String::from_utf8_lossy(&bytes);
        if let Ok(table) = parse_config_text(&text, "noise.toml") {
            let _ = SimConfig::from_table(table.clone(), None);
            as_written_refusal_is_whole(&text, table)?;
        }
    }

    /// TOML-shaped noise over the real section and key names.
    #[test]
    fn toml_shaped_noise_never_panics(
        lines in proptest::collection::vec(assignment(), 0..12)
    ) {
        let mut text = String::new();
        for (key, value) in &lines {
            match key.split_once('.') {
                Some((section, k)) => text.push_str(&format!("[{section}]\n{k} = {value}\n")),
                None => text.push_str(&format!("{key} = {value}\n")),
            }
        }
        if let Ok(table) = parse_config_text(&text, "noise.toml") {
            let _ = SimConfig::from_table(table.clone(), None);
            as_written_refusal_is_whole(&text, table)?;
        }
    }
}

/// Reads `text` (parsed to `table`) as the command line reads a config file, its values as
/// written: a config, or a refusal with a message; never a panic.
fn as_written_refusal_is_whole(text: &str, table: toml::Table) -> Result<(), TestCaseError> {
    let written = AsWritten::of_text(text, "noise.toml");
    if let Err(e) = SimConfig::from_table_as_written(table, None, &written) {
        let shown = e.to_string();
        prop_assert!(!shown.trim().is_empty(), "an empty refusal for {text:?}");
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Random `--set` assignments: refused with an error or accepted; an accepted config runs or
    /// `run` refuses it with an error. Neither panics. (Keys that size the work get small values,
    /// so that each run takes a moment.)
    #[test]
    fn random_assignments_parse_and_run_without_panics(
        sets in proptest::collection::vec(assignment(), 1..8)
    ) {
        let mut table = toml::Table::new();
        let mut ok = true;
        for (key, value) in &sets {
            // Keys that set how much work a run is get small values, so that a run takes a moment.
            let value = match *key {
                "workload.duration" => "\"20ms\"",
                "workload.streams" | "workload.files" | "device.disks" | "dfs.workers" => "2",
                "workload.file_size" | "device.memory" | "device.upper_capacity" => "\"1MiB\"",
                "workload.requests" | "workload.reads" | "workload.tiles_across" => "50",
                _ => value,
            };
            ok &= apply_set(&mut table, &format!("{key}={value}")).is_ok();
        }
        if ok {
            if let Ok(cfg) = SimConfig::from_table(table.clone(), None) {
                if std::env::var_os("NOISE_TRACE").is_some() {
                    eprintln!("RUN {table:?}");
                }
                let _ = run(&cfg, RunOptions::default());
            }
        }
    }
}

/// The shipped example configs, the seeds of the edited-file property.
const EXAMPLES: &[&str] = &[
    include_str!("../../../examples/collapse-64.toml"),
    include_str!("../../../examples/informed-tiered.toml"),
];

/// One edit to a file's bytes at a random place: a byte flipped, the file cut there, a number far
/// beyond every key's range, a byte that is not UTF-8, or a random byte spliced in.
fn edit() -> impl Strategy<Value = (prop::sample::Index, u8, u8)> {
    (any::<prop::sample::Index>(), 0u8..5, any::<u8>())
}

fn apply_edits(text: &str, edits: &[(prop::sample::Index, u8, u8)]) -> Vec<u8> {
    let mut b = text.as_bytes().to_vec();
    for (at, kind, byte) in edits {
        let i = at.index(b.len() + 1);
        match kind {
            0 if i < b.len() => b[i] ^= (*byte).max(1),
            0 | 1 => b.truncate(i),
            2 => drop(b.splice(i..i, *b"184467440737095516160000")),
            3 => b.insert(i, 0xff),
            _ => b.insert(i, *byte),
        }
    }
    b
}

/// What every refusal must do: say where (the file and line, or the key's dotted path) and what
/// is wrong, so that the user can fix it without reading the code.
fn assert_helpful(e: &foresight_sim::config::ConfigError, file: &str) -> Result<(), TestCaseError> {
    use foresight_sim::config::ConfigError;
    let shown = e.to_string();
    match e {
        ConfigError::File { file: at, message } => {
            prop_assert!(at.starts_with(file), "{shown}");
            prop_assert!(!message.trim().is_empty(), "{shown}");
        }
        ConfigError::Key { key, message } => {
            prop_assert!(
                !key.is_empty() && !key.starts_with('.') && !key.ends_with('.'),
                "{shown}"
            );
            prop_assert!(!message.trim().is_empty(), "{shown}");
        }
        ConfigError::SetSyntax(_) => {}
    }
    Ok(())
}

/// A directory of its own under the system's temporary directory, removed with everything in it
/// when dropped, so that a test leaves nothing behind, also when it fails (a panic unwinds through
/// the drop): the workspace's one guard for this, [`tempfile::TempDir`], whose random suffix
/// tells apart the ones tests make at once.
struct ScratchDir(tempfile::TempDir);

impl ScratchDir {
    fn new(tag: &str) -> ScratchDir {
        ScratchDir(
            tempfile::Builder::new()
                .prefix(&format!("foresight-{tag}-"))
                .tempdir()
                .unwrap(),
        )
    }

    fn path(&self) -> &std::path::Path {
        self.0.path()
    }
}

/// `text` read the way `foresight sim --config` reads a file, then checked as a config.
fn check_file(bytes: &[u8]) -> Result<(), TestCaseError> {
    let dir = ScratchDir::new("config-noise");
    let path = dir.path().join("edited.toml");
    std::fs::write(&path, bytes).unwrap();
    let shown = path.display().to_string();
    let outcome = read_config_file(&path);
    drop(dir);
    match outcome {
        Err(e) => assert_helpful(&e, &shown),
        Ok(table) => match SimConfig::from_table(table, None) {
            Err(e) => assert_helpful(&e, &shown),
            Ok(_) => Ok(()),
        },
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// The example configs with a few edits: each parses, or is refused with an error naming
    /// the file and line or the key.
    #[test]
    fn edited_example_configs_parse_or_name_what_is_wrong(
        which in 0..EXAMPLES.len(),
        edits in proptest::collection::vec(edit(), 0..4),
    ) {
        let bytes = apply_edits(EXAMPLES[which], &edits);
        check_file(&bytes)?;
        if edits.is_empty() {
            let table = parse_config_text(EXAMPLES[which], "example.toml").unwrap();
            prop_assert!(SimConfig::from_table(table, None).is_ok());
        }
    }

    /// One `--set` of a key no section has: refused, naming that key (or the part of it that is
    /// a value, not a section).
    #[test]
    fn an_unknown_key_is_refused_by_its_name(
        section in prop::sample::select(vec!["", "device.", "host.", "policy.", "workload.", "dfs.", "network.", "device.link.", "seed."]),
        name in "[a-z_]{1,8}",
        value in prop::sample::select(VALUES),
    ) {
        let key = format!("{section}{name}");
        prop_assume!(!KEYS.iter().any(|(k, _)| *k == key));
        prop_assume!(!["workload.trace", "workload.format", "device.disksim", "seed"].contains(&key.as_str()));
        let mut table = toml::Table::new();
        apply_set(&mut table, &format!("{key}={value}")).unwrap();
        match SimConfig::from_table(table, None) {
            Ok(_) => prop_assert!(false, "`{}={}` was accepted", key, value),
            Err(e) => {
                assert_helpful(&e, "")?;
                let named = match &e {
                    foresight_sim::config::ConfigError::Key { key: k, .. } => k.clone(),
                    other => other.to_string(),
                };
                prop_assert!(
                    key == named || key.starts_with(&format!("{named}.")),
                    "`{}={}` was refused as `{}`", key, value, e
                );
            }
        }
    }
}

#[test]
fn a_config_file_that_is_not_utf8_is_refused_naming_the_line() {
    let mut bytes = b"seed = 1\n[device]\nkind = \"hdd\"\npreset = \"wd".to_vec();
    bytes.extend_from_slice(&[0xff, 0xfe]);
    bytes.extend_from_slice(b"\"\n");
    let dir = ScratchDir::new("config-utf8");
    let path = dir.path().join("latin1.toml");
    std::fs::write(&path, &bytes).unwrap();
    let e = read_config_file(&path).unwrap_err().to_string();
    drop(dir);
    assert!(e.contains("latin1.toml:4"), "{e}");
    assert!(e.contains("UTF-8"), "{e}");
}

/// The checks above write their files in a [`ScratchDir`]; it used to be one directory per run,
/// left behind empty. It goes with its files when dropped, and also when the check in it panics.
#[test]
fn a_scratch_dir_is_removed_when_dropped_even_on_a_panic() {
    let dir = ScratchDir::new("config-scratch");
    let kept = dir.path().to_path_buf();
    std::fs::write(kept.join("a.toml"), "seed = 1\n").unwrap();
    drop(dir);
    assert!(!kept.exists(), "{} is still there", kept.display());

    let mut made = None;
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let dir = ScratchDir::new("config-scratch");
        made = Some(dir.path().to_path_buf());
        std::fs::write(dir.path().join("b.toml"), "seed = 1\n").unwrap();
        panic!("a failing check");
    }));
    assert!(outcome.is_err());
    let made = made.expect("the directory was made");
    assert!(!made.exists(), "{} is still there", made.display());
}

/// One `[[device.tiers]]` entry: a preset (0..3) or constant times (3), and now and then a key
/// set to a value of any kind (or a key no tier has).
fn tier_entry() -> impl Strategy<Value = (usize, Option<(&'static str, &'static str)>)> {
    let key = prop::sample::select(vec![
        "preset",
        "t_read",
        "t_copy_up",
        "capacity",
        "disks",
        "bogus",
    ]);
    let value = prop_oneof![
        prop::sample::select(vec![
            "\"ssd-850evo\"",
            "\"5ms\"",
            "\"999999999s\"",
            "\"0ms\"",
            "\"2MiB\"",
            "\"1PiB\"",
            "2",
            "300",
        ]),
        prop::sample::select(VALUES),
    ];
    (0usize..4, proptest::option::weighted(0.2, (key, value)))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 384, ..ProptestConfig::default() })]

    /// Random tier stacks (preset and constant tiers with a key now and then set to anything, an
    /// optional link, random policies and memory): refused with an error naming the key, or run
    /// to the end or refused by the run with an error. The hinted reads are few and small, so
    /// that each run takes a moment.
    #[test]
    fn random_tier_stacks_run_or_name_the_key(
        tiers in proptest::collection::vec(tier_entry(), 1..4),
        link in prop::sample::select(vec![
            "",
            "",
            "delay = \"1ms\", bandwidth = \"1Gbit\"",
            "delay = \"200us\", bandwidth = \"10MiB/s\"",
            "delay = \"20s\", bandwidth = \"1Gbit\"",
            "bandwidth = \"1bit\"",
            "delay = 5",
        ]),
        policy in prop::sample::select(vec!["tip", "ipipe", "ipo", "ipods", "seqp"]),
        memory in prop::sample::select(vec!["\"2MiB\"", "\"2MiB\"", "\"8MiB\"", "\"64GiB\"", "0"]),
        reads in 1u32..40,
    ) {
        // `max_bw` only where it is read: the others refuse it by name before the tiers.
        let max_bw = if matches!(policy, "ipo" | "ipods") { "max_bw = 4\n" } else { "" };
        let mut text = format!(
            "[device]\nkind = \"tiered\"\nmemory = {memory}\n\n[policy]\nname = \"{policy}\"\n{max_bw}\n\
             [workload]\nkind = \"hinted\"\nreads = {reads}\nblock = \"1MiB\"\n"
        );
        if !link.is_empty() {
            text.push_str(&format!("\n[device.link]\n{link}\n"));
        }
        let presets = ["ssd-850evo", "wd800jd", "st6000nm0024"];
        for (i, (kind, noise)) in tiers.iter().enumerate() {
            let last = i + 1 == tiers.len();
            let mut keys: Vec<(&str, String)> = match presets.get(*kind) {
                Some(p) => vec![("preset", format!("\"{p}\""))],
                None if i == 0 => vec![("t_read", "\"5ms\"".into())],
                None => vec![("t_read", "\"40ms\"".into()), ("t_copy_up", "\"20ms\"".into())],
            };
            if !last {
                keys.push(("capacity", "\"4MiB\"".into()));
            }
            if let Some((k, v)) = noise {
                keys.retain(|(key, _)| key != k);
                // A bare word, which `--set` takes as a string, is one in a file too.
                let v = if format!("v = {v}").parse::<toml::Table>().is_ok() {
                    v.to_string()
                } else {
                    format!("{v:?}")
                };
                keys.push((k, v));
            }
            text.push_str("\n[[device.tiers]]\n");
            for (k, v) in keys {
                text.push_str(&format!("{k} = {v}\n"));
            }
        }
        match parse_config_text(&text, "tiers.toml") {
            Err(e) => assert_helpful(&e, "tiers.toml")?,
            Ok(table) => match SimConfig::from_table(table, None) {
                Err(e) => assert_helpful(&e, "tiers.toml")?,
                Ok(cfg) => {
                    if std::env::var_os("NOISE_TRACE").is_some() {
                        eprintln!("RUN {text}");
                    }
                    if let Err(e) = run(&cfg, RunOptions::default()) {
                        prop_assert!(!e.to_string().trim().is_empty());
                    }
                }
            },
        }
    }
}

/// A config the file system gives no length for (a device, a pipe) is read up to a bound:
/// `--config /dev/zero` used to be read until memory ran out.
#[cfg(target_os = "linux")]
#[test]
fn an_endless_config_file_is_refused_at_the_size_bound() {
    let e = read_config_file(std::path::Path::new("/dev/zero"))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("/dev/zero") && e.contains("more than"), "{e}");
}
