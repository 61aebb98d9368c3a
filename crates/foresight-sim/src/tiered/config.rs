//! The config of a hinted run over a tier stack: `device.kind = "tiered"` or `"constant"`,
//! `workload.kind = "hinted"`, and the informed policies' keys.
//!
//! A config is diverted here when any of these is set (or the policy is one of the informed ones),
//! and every section is parsed strictly: a key of the page-cache host (`host.*`, `workload.streams`)
//! is refused with a message that says it does not apply to a tier stack. Shapes:
//!
//! ```toml
//! [device]
//! kind = "constant"            # the paper's analytic mode: fixed per-block times
//! t_upper = "52ms"             # T_ss-cache: upper level to memory
//! t_lower = "120ms"            # T_hdd-cache: lower level to memory
//! t_lower_to_upper = "122ms"   # T_hdd-ss: lower level to upper level
//! upper_capacity = "4GiB"      # default 64GiB
//! memory = "64GiB"             # memory for prefetch buffers
//!
//! [device]
//! kind = "tiered"              # fastest first; every tier but the last has a capacity
//! [[device.tiers]]
//! preset = "ssd-850evo"        # a device model, or fixed times: t_read = "52ms"
//! capacity = "4GiB"
//! [[device.tiers]]
//! preset = "st6000nm0024"      # or t_read = "120ms", t_copy_up = "122ms"
//! disks = 4                    # independent disks, blocks round-robin (default 1)
//! [device.link]                # optional: the tiers sit on a storage node behind a network
//! delay = "200us"
//! bandwidth = "110MiB/s"
//! ```

use std::path::{Path, PathBuf};

use foresight_core::{excerpt, parse_rate, ByteLen, Duration};
use foresight_policy::informed::{InformedConfig, LevelTiming, XCache};
use foresight_policy::PolicyConfig;
use toml::{Table, Value};

use crate::config::{
    as_given, key_err, shown_key, unknown_key_message, ConfigError, GivenValues, Section, SimConfig,
};

/// How one storage level is timed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TierModel {
    /// Fixed per-block times (analytic mode).
    Constant {
        /// One block from this level into memory.
        read: Duration,
        /// One block from this level to the level above (unused on level 1).
        copy_up: Duration,
    },
    /// A device model from `foresight-device` by preset name.
    Preset(String),
}

/// One storage level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TierSpec {
    /// Its timing.
    pub model: TierModel,
    /// Bytes it may hold besides originals; `None` on the last (home) level.
    pub capacity: Option<ByteLen>,
    /// Independent identical devices on this level (`disks`, presets only); block `b` lives on
    /// device `b mod disks` (a copy slot `s` on device `s mod disks`).
    pub disks: u32,
}

/// A network between the client's memory and the storage node that holds every level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkSpec {
    /// One-way delay added to every block sent to the client.
    pub delay: Duration,
    /// Bytes per second the link carries; transfers go one after another.
    pub bytes_per_s: u64,
}

/// Where the hinted reads come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AccessOrder {
    /// Blocks 0, 1, 2, ... (the paper lays hinted blocks out in a log, section 4.5.1).
    Sequential,
    /// A seeded random permutation of the blocks.
    Random,
    /// Block numbers from a trace file, one per line.
    Trace(PathBuf),
}

/// `[workload]` of a hinted run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HintedWorkload {
    /// Hinted reads (unused with a trace, which sets its own count; the key is refused there).
    pub reads: u64,
    /// Bytes per block; one read is one block.
    pub block: ByteLen,
    /// Application time per block, `T_cpu + T_hit + T_driver`.
    pub consume: Duration,
    /// Which blocks, in which order.
    pub order: AccessOrder,
}

/// A whole hinted run over a tier stack.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TieredConfig {
    /// Memory for prefetch buffers.
    pub memory: ByteLen,
    /// Levels 1 (fastest) to L (home of every block).
    pub tiers: Vec<TierSpec>,
    /// The network to the storage node, if remote.
    pub link: Option<LinkSpec>,
    /// The reads.
    pub workload: HintedWorkload,
    /// Device kind as written (`tiered` or `constant`), for the report.
    pub kind: String,
}

/// Whether `root` describes a hinted run over tiers.
pub fn wants_tiers(root: &Table) -> bool {
    let get = |sec: &str, key: &str| {
        root.get(sec)
            .and_then(|s| s.get(key))
            .and_then(|v| v.as_str())
            .map(str::to_string)
    };
    matches!(
        get("device", "kind").as_deref(),
        Some("tiered" | "constant")
    ) || get("workload", "kind").as_deref() == Some("hinted")
        || get("policy", "name")
            .is_some_and(|n| foresight_policy::informed::NAMES.contains(&n.as_str()))
}

const MAX_SIZE: ByteLen = ByteLen(1 << 50);

/// The most cache buffers `policy.x_cache` may name, as a number or a quoted number: far more than
/// any memory the tiers model holds in blocks.
const X_CACHE_MAX: i64 = 1 << 20;

fn positive(d: Duration, key: &str) -> Result<Duration, ConfigError> {
    if d.0 == 0 {
        return Err(key_err(key, "must be a positive duration, e.g. \"52ms\""));
    }
    Ok(d)
}

fn tier_from(i: usize, last: bool, v: Value) -> Result<TierSpec, ConfigError> {
    let prefix = format!("device.tiers[{i}]");
    let Value::Table(t) = v else {
        return Err(key_err(&prefix, "must be a table ([[device.tiers]])"));
    };
    let mut s = Section::from_parts(prefix.clone(), t);
    let model = if s.has("preset") {
        let name = s.string("preset", "")?;
        if foresight_device::preset(&name).is_none() {
            return Err(key_err(
                &format!("{prefix}.preset"),
                format!(
                    "`{}` is not a device preset; choose one of: {}",
                    excerpt(&name),
                    foresight_device::preset_names().join(", ")
                ),
            ));
        }
        // Left to the unread-key check, a fixed time beside a preset was refused as an unknown
        // key, which it is not: the tier beside it reads it.
        if let Some(k) = ["t_read", "t_copy_up"].into_iter().find(|k| s.has(k)) {
            return Err(key_err(
                &format!("{prefix}.{k}"),
                format!(
                    "a preset tier takes its times from the device model `{name}`: drop {k}, \
                     or drop preset for a tier of fixed times"
                ),
            ));
        }
        TierModel::Preset(name)
    } else {
        if s.has("disks") {
            return Err(key_err(
                &format!("{prefix}.disks"),
                "only a preset tier has disks; a constant tier already runs any number of reads at once",
            ));
        }
        let read = s
            .opt_duration("t_read")?
            .ok_or_else(|| key_err(&format!("{prefix}.t_read"), "give a preset or t_read"))?;
        let copy_up = if i == 0 {
            Duration::ZERO
        } else {
            positive(
                s.opt_duration("t_copy_up")?.ok_or_else(|| {
                    key_err(
                        &format!("{prefix}.t_copy_up"),
                        "a lower level needs the time to copy a block one level up",
                    )
                })?,
                &format!("{prefix}.t_copy_up"),
            )?
        };
        TierModel::Constant {
            read: positive(read, &format!("{prefix}.t_read"))?,
            copy_up,
        }
    };
    let disks = s.int("disks", 1, 1, 256)? as u32;
    let capacity = if last {
        if s.has("capacity") {
            return Err(key_err(
                &format!("{prefix}.capacity"),
                "the last tier is the home of every block and has no copy capacity",
            ));
        }
        None
    } else {
        Some(s.opt_int_or_size("capacity")?.ok_or_else(|| {
            key_err(
                &format!("{prefix}.capacity"),
                "every tier but the last needs a capacity, e.g. \"4GiB\"",
            )
        })?)
    };
    s.finish()?;
    Ok(TierSpec {
        model,
        capacity,
        disks,
    })
}

/// Parses a hinted run. The returned [`SimConfig`] carries defaults in its host sections and the
/// informed policy in `policy`.
pub fn parse(mut root: Table, base_dir: Option<&Path>) -> Result<SimConfig, ConfigError> {
    // For the checks that compare two keys, and the link's, after the values were read.
    let given = GivenValues::of(&root);
    let seed = crate::config::take_seed(&mut root)?;
    let mut d = Section::take(&mut root, "device")?;
    let kind = d.choice(
        "kind",
        "",
        &[("tiered", "tiered"), ("constant", "constant")],
    )?;
    if kind.is_empty() {
        return Err(key_err(
            "device.kind",
            "a hinted workload or an informed policy runs over tiers: set device.kind = \"tiered\" or \"constant\"",
        ));
    }
    let memory = d.size("memory", ByteLen::gib(64), ByteLen::mib(1), MAX_SIZE)?;
    // Each mode's keys are the tier-stack keys the other mode never reads: name the mode.
    const CONSTANT_KEYS: [&str; 4] = ["t_upper", "t_lower", "t_lower_to_upper", "upper_capacity"];
    if kind == "constant" && d.has("tiers") {
        return Err(key_err(
            "device.tiers",
            "device.kind = \"constant\" reads t_upper, t_lower and t_lower_to_upper, not a tier \
             list: set device.kind = \"tiered\" to list tiers, or drop it",
        ));
    }
    if kind != "constant" {
        if let Some(k) = CONSTANT_KEYS.iter().find(|k| d.has(k)) {
            return Err(key_err(
                &format!("device.{k}"),
                "only device.kind = \"constant\" reads this key; a tiered stack takes each \
                 tier's times from its [[device.tiers]] table: drop it",
            ));
        }
    }
    let tiers = if kind == "constant" {
        let t = |d: &mut Section, k: &str| -> Result<Duration, ConfigError> {
            let key = format!("device.{k}");
            positive(
                d.opt_duration(k)?.ok_or_else(|| {
                    key_err(
                        &key,
                        "analytic mode needs t_upper, t_lower and t_lower_to_upper, each a \
                         duration, e.g. --set device.t_upper=52ms --set device.t_lower=120ms \
                         --set device.t_lower_to_upper=122ms",
                    )
                })?,
                &key,
            )
        };
        let upper = t(&mut d, "t_upper")?;
        let lower = t(&mut d, "t_lower")?;
        let l2u = t(&mut d, "t_lower_to_upper")?;
        vec![
            TierSpec {
                model: TierModel::Constant {
                    read: upper,
                    copy_up: Duration::ZERO,
                },
                capacity: Some(d.size("upper_capacity", ByteLen::gib(64), ByteLen(1), MAX_SIZE)?),
                disks: 1,
            },
            TierSpec {
                model: TierModel::Constant {
                    read: lower,
                    copy_up: l2u,
                },
                capacity: None,
                disks: 1,
            },
        ]
    } else {
        let list =
            match d.raw("tiers") {
                Some(Value::Array(a)) if !a.is_empty() => a,
                _ => return Err(key_err(
                    "device.tiers",
                    "list the storage tiers fastest first as [[device.tiers]] tables (at least \
                 one; a capacity on every tier but the last), or on the command line as one \
                 list, e.g. --set 'device.tiers=[{preset=\"ssd-850evo\", capacity=\"64GiB\"}, \
                 {preset=\"wd800jd\"}]'",
                )),
            };
        if list.len() > 8 {
            return Err(key_err("device.tiers", "at most 8 tiers"));
        }
        let n = list.len();
        list.into_iter()
            .enumerate()
            .map(|(i, v)| tier_from(i, i + 1 == n, v))
            .collect::<Result<Vec<_>, _>>()?
    };
    let link = match d.raw("link") {
        None => None,
        Some(Value::Table(t)) => {
            let mut l = Section::from_parts("device.link".into(), t);
            let delay_given = l.given("delay");
            let delay = l.duration("delay", Duration::ZERO)?;
            if delay > foresight_device::link::DELAY_MAX {
                // As for network.delay: no network takes that long one way.
                return Err(key_err(
                    "device.link.delay",
                    format!(
                        "{} is out of range: one-way delays above 10 s describe no network; use \
                         for example \"200us\"",
                        as_given(&delay_given.unwrap_or_default(), delay)
                    ),
                ));
            }
            let bandwidth_given = l.given("bandwidth");
            let bw = match l.raw("bandwidth") {
                Some(Value::String(s)) => {
                    parse_rate(&s).map_err(|e| key_err("device.link.bandwidth", e.to_string()))?
                }
                _ => {
                    return Err(key_err(
                        "device.link.bandwidth",
                        "give the link's rate, e.g. \"110MiB/s\"",
                    ))
                }
            };
            l.finish()?;
            let bytes_per_s = bw.as_mib_s() * (1u64 << 20) as f64;
            if bytes_per_s.is_nan() || bytes_per_s < 1.0 {
                return Err(key_err(
                    "device.link.bandwidth",
                    format!(
                        "{} is out of range: must be at least 1 byte/s (8bit), e.g. \"110MiB/s\"",
                        as_given(
                            &bandwidth_given.unwrap_or_default(),
                            format!("{bytes_per_s} bytes/s")
                        )
                    ),
                ));
            }
            Some(LinkSpec {
                delay,
                bytes_per_s: bytes_per_s as u64,
            })
        }
        Some(_) => return Err(key_err("device.link", "must be a table ([device.link])")),
    };
    d.finish()?;

    // An empty [host] is harmless; anything in it, or a `host` that is not a section, is refused.
    match root.remove("host") {
        None => {}
        Some(Value::Table(h)) => {
            if let Some(k) = h.keys().next() {
                return Err(key_err(
                    &format!("host.{}", shown_key(k)),
                    "the page-cache host does not apply to a tier stack; memory is device.memory",
                ));
            }
        }
        Some(_) => return Err(key_err("host", "must be a section ([host]), not a value")),
    }

    let mut w = Section::take(&mut root, "workload")?;
    w.choice("kind", "hinted", &[("hinted", "hinted")])
        .map_err(|_| key_err("workload.kind", "a tier stack runs the `hinted` workload"))?;
    let block = w.size("block", ByteLen::mib(10), ByteLen(512), ByteLen::gib(4))?;
    if !block.0.is_multiple_of(512) {
        return Err(crate::config::not_whole_sectors(
            "workload.block",
            &given,
            block,
            true,
        ));
    }
    // A level with room for no whole block takes no copy, so a pipelining policy would quietly
    // run as TIP alone.
    for (i, tier) in tiers.iter().enumerate() {
        if let Some(capacity) = tier.capacity.filter(|c| *c < block) {
            let key = if kind == "constant" {
                "device.upper_capacity".to_string()
            } else {
                format!("device.tiers[{i}].capacity")
            };
            return Err(key_err(
                &key,
                format!(
                    "{} holds no block of {}; give it at least one",
                    given.value(&key, capacity.rounded()),
                    given.key("workload.block", block.rounded()),
                ),
            ));
        }
    }
    if w.has("trace") && w.has("reads") {
        return Err(key_err(
            "workload.reads",
            "workload.trace reads one block per line of the trace; drop workload.reads",
        ));
    }
    if w.has("trace") && w.has("order") {
        // Left to the unread-key check, it was refused as a key "only a tier stack reads", in
        // a config that is one.
        return Err(key_err(
            "workload.order",
            "workload.trace gives the order of the reads (one block per line, read in that \
             order); drop workload.order",
        ));
    }
    let reads = w.int("reads", 1000, 1, super::hinted::MAX_READS as u64)?;
    let consume = positive(
        w.duration("consume", Duration::from_micros(1_920))?,
        "workload.consume",
    )?;
    let trace = w.file_path(
        "trace",
        "a hinted trace (one block number per line)",
        base_dir,
    )?;
    let order = match trace {
        Some(p) => AccessOrder::Trace(p),
        None => match w.choice("order", false, &[("sequential", false), ("random", true)])? {
            true => AccessOrder::Random,
            false => AccessOrder::Sequential,
        },
    };
    w.finish()?;

    let mut p = Section::take(&mut root, "policy")?;
    let name = p.string("name", "tip")?;
    if !foresight_policy::informed::NAMES.contains(&name.as_str()) {
        return Err(key_err(
            "policy.name",
            format!(
                "`{}` does not run over tiers; choose one of: {}",
                excerpt(&name),
                foresight_policy::informed::NAMES.join(", ")
            ),
        ));
    }
    // A count is taken as a number or as a quoted number alike, within the same range.
    let x_cache_ok = |i: i64| (1..=X_CACHE_MAX).contains(&i);
    let x_cache_err = |got: String| {
        key_err(
            "policy.x_cache",
            format!("expected a buffer count from 1 to {X_CACHE_MAX} or \"auto\", got {got}"),
        )
    };
    let x_cache = match p.raw("x_cache") {
        None => XCache::Auto,
        Some(Value::String(s)) if s.trim() == "auto" => XCache::Auto,
        Some(Value::Integer(i)) if x_cache_ok(i) => XCache::Fixed(i as u32),
        Some(Value::String(s)) => match s.trim().parse::<i64>() {
            Ok(i) if x_cache_ok(i) => XCache::Fixed(i as u32),
            _ => return Err(x_cache_err(format!("`{}`", excerpt(&s)))),
        },
        Some(v) => return Err(x_cache_err(v.to_string())),
    };
    let max_bw = p.opt_int("max_bw", 1, 1 << 20)?.map(|v| v as u32);
    let pnext_groups = p.opt_int("pnext_groups", 1, 1 << 20)?.map(|v| v as u32);
    let lru_given = p.has("lru_hit_gain");
    let lru_hit_gain_ppm = match p.raw("lru_hit_gain") {
        None => 0,
        Some(Value::Float(f)) if (0.0..=1.0).contains(&f) => (f * 1e6).round() as u32,
        Some(Value::Integer(0)) => 0,
        Some(Value::Integer(1)) => 1_000_000,
        Some(v) => {
            return Err(key_err(
                "policy.lru_hit_gain",
                format!(
                    "expected the LRU cache's hit ratio gained per buffer, 0.0 to 1.0, got {}",
                    excerpt(&v.to_string())
                ),
            ))
        }
    };
    p.finish()?;
    // As the host refuses a [policy] key only other policies read: these would change nothing
    // and say nothing (TIP and iPipe never cap their reads, and only IPO's and IPODS's Pnext
    // leads; a fixed X_cache weighs no LRU gain).
    let chain = matches!(name.as_str(), "ipo" | "ipods");
    for (key, given) in [
        ("max_bw", max_bw.is_some()),
        ("pnext_groups", pnext_groups.is_some()),
    ] {
        if given && !chain {
            return Err(key_err(
                &format!("policy.{key}"),
                format!(
                    "the `{name}` policy does not read this key (it applies to: ipo, ipods); \
                     drop it (from a config file: --unset policy.{key})"
                ),
            ));
        }
    }
    if lru_given && !matches!(x_cache, XCache::Auto) {
        return Err(key_err(
            "policy.lru_hit_gain",
            "only policy.x_cache = \"auto\" weighs it (TIP's cost-benefit choice of X_cache); \
             drop it, or set policy.x_cache = \"auto\"",
        ));
    }
    if let Some(k) = root.keys().next() {
        return Err(key_err(
            &shown_key(k),
            unknown_key_message(
                k,
                ["seed", "device", "policy", "workload"],
                "",
                "the top level takes `seed` and the sections [device], [policy], [workload]",
            ),
        ));
    }
    if matches!(name.as_str(), "ipo" | "ipods") && max_bw.is_none() {
        return Err(key_err(
            "policy.max_bw",
            format!("`{name}` needs the most concurrent reads, e.g. policy.max_bw = 15"),
        ));
    }
    if name != "tip" && tiers.len() < 2 {
        return Err(key_err(
            "policy.name",
            format!("`{name}` pipelines between tiers: list two or more [[device.tiers]]"),
        ));
    }
    let tiered = TieredConfig {
        memory,
        tiers,
        link,
        workload: HintedWorkload {
            reads,
            block,
            consume,
            order,
        },
        kind: kind.to_string(),
    };
    // The policy's own copy of the per-block times is filled in by the driver, which knows the
    // device models; here it gets the settings.
    let informed = InformedConfig {
        x_cache,
        max_bw,
        consume,
        levels: vec![LevelTiming {
            read_to_memory: consume,
            copy_up: Duration::ZERO,
            capacity_blocks: None,
        }],
        memory_blocks: memory.0 / block.0,
        lru_hit_gain_ppm,
        pnext_groups,
    };
    if informed.memory_blocks == 0 {
        return Err(key_err(
            "device.memory",
            format!(
                "{} holds no block of {}; give it at least one",
                given.value("device.memory", memory.rounded()),
                given.key("workload.block", block.rounded()),
            ),
        ));
    }
    // A fixed X_cache is a count of buffers in memory: more than memory holds would be held to
    // memory's count without a word, and the run would not be the one asked for.
    if let XCache::Fixed(x) = informed.x_cache {
        if u64::from(x) > informed.memory_blocks {
            return Err(key_err(
                "policy.x_cache",
                format!(
                    "{x} buffers of {} need {}, more than {} holds ({} buffers); lower \
                     policy.x_cache, or raise device.memory",
                    given.key("workload.block", block.rounded()),
                    ByteLen(block.0.saturating_mul(u64::from(x))).rounded(),
                    given.key("device.memory", memory.rounded()),
                    informed.memory_blocks,
                ),
            ));
        }
    }
    let mut cfg = SimConfig::from_table(Table::new(), None)?;
    cfg.seed = seed;
    cfg.policy = PolicyConfig {
        name,
        informed,
        ..PolicyConfig::default()
    };
    cfg.tiered = Some(Box::new(tiered));
    Ok(cfg)
}
