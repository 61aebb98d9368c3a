//! The `[dfs]` and `[network]` config sections: a `[dfs]` section runs the `streams` or `random`
//! workload through the DFS model instead of the local host.
//!
//! ```toml
//! [dfs]
//! system = "aps"        # local | lustre | nfs | hdfs | gluster | dedicated | aps
//! queue = "dedicated"   # shared | dedicated (default: the system's)
//! workers = 32
//! alpha = "auto"        # or a fixed number of readahead units in flight
//! max_alpha = 256      # the cap on an `auto` alpha
//! slice = "100ms"       # CFQ time slice
//! slice_idle = "8ms"    # CFQ idle wait (default 0 on an SSD)
//! [network]
//! link = "lan-10g"      # a preset (`foresight sim --help` lists them)
//! delay = "4ms"         # one way; overrides the preset
//! bandwidth = "10Gbit"
//! window = "30MB"       # TCP buffer per connection; half of it is advertised (in flight)
//! ```

use foresight_core::{excerpt, parse_rate, Bandwidth, ByteLen, Duration};
use foresight_device::{link_preset, link_presets, presets, DeviceError, LinkParams};
use foresight_policy::adaptive::dfs::{DfsSystem, QueueKind};
use foresight_policy::adaptive::AlphaMode;
use toml::{Table, Value};

use super::{cfq::CfqTimes, default_cfq, DfsDevice, DfsParams, Pattern};
use crate::config::{
    as_given, shown_key, ConfigError, DeviceKind, Section, SimConfig, WorkloadKind,
};

/// The DFS settings of a config, as given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DfsSettings {
    /// `dfs.system`.
    pub system: DfsSystem,
    /// `dfs.queue`, when given.
    pub queue: Option<QueueKind>,
    /// `dfs.workers`.
    pub workers: u32,
    /// `dfs.alpha`.
    pub alpha: AlphaMode,
    /// `dfs.max_alpha`.
    pub max_alpha: u32,
    /// `dfs.slice`, when given.
    pub slice: Option<Duration>,
    /// `dfs.slice_idle`, when given.
    pub slice_idle: Option<Duration>,
    /// `network.link`.
    pub link: String,
    /// `network.delay`, when given.
    pub delay: Option<Duration>,
    /// `network.bandwidth` in bytes per second, when given.
    pub bandwidth_bytes_per_s: Option<u64>,
    /// `network.window`, when given.
    pub window: Option<ByteLen>,
}

/// The end of a run without `workload.duration`: 500 simulated years, as far as the host's clients
/// may issue reads (`sim.rs`), well inside the clock's range.
const RUN_TO_THE_END: Duration = Duration(crate::sim::LAST_ISSUE.0);

fn key_err(key: &str, message: impl Into<String>) -> ConfigError {
    ConfigError::Key {
        key: key.to_string(),
        message: message.into(),
    }
}

fn text(s: &mut Section, key: &str, full: &str) -> Result<Option<String>, ConfigError> {
    if !s.has(key) {
        return Ok(None);
    }
    let v = s.string(key, "")?;
    if v.trim().is_empty() {
        return Err(key_err(full, "must not be empty"));
    }
    Ok(Some(v))
}

/// The keys of the other sections a `[dfs]` run reads (see [`DfsSettings::params`]); the model
/// has its own clients, link, server and queue, so the page-cache host's keys mean nothing to it.
const DFS_READS: &[(&str, &[&str])] = &[
    ("device", &["kind", "preset", "disks", "strip"]),
    ("host", &["memory"]),
    (
        "workload",
        &[
            "kind",
            "streams",
            "file_size",
            "request",
            "requests",
            "duration",
        ],
    ),
];

/// Refuses, in a config with a `[dfs]` section, any key of `[device]`, `[host]`, `[policy]` or
/// `[workload]` the DFS model would not read, so that no setting is silently ignored.
pub fn refuse_unread_keys(root: &Table) -> Result<(), ConfigError> {
    if !root.contains_key("dfs") {
        return Ok(());
    }
    // Before the host parser reads the kind's own keys, whose advice (a trace file, a duration
    // for a webserver) would lead to a run the DFS model then refuses.
    if let Some(Value::Table(w)) = root.get("workload") {
        if let Some(Value::String(kind)) = w.get("kind") {
            if kind != "streams" && kind != "random" {
                return Err(key_err(
                    "workload.kind",
                    format!(
                        "a [dfs] run takes `streams` or `random`, not `{}`",
                        excerpt(kind)
                    ),
                ));
            }
        }
        // A stream reads its file until the run's duration; only random clients count reads.
        let random = matches!(w.get("kind"), Some(Value::String(k)) if k == "random");
        if !random && w.contains_key("requests") {
            return Err(key_err(
                "workload.requests",
                "a `streams` workload does not read this key (it applies to: random); drop it \
                 (from a config file: --unset workload.requests)",
            ));
        }
    }
    for section in ["device", "host", "policy", "workload"] {
        let Some(Value::Table(t)) = root.get(section) else {
            continue;
        };
        let reads = DFS_READS
            .iter()
            .find(|(s, _)| *s == section)
            .map_or(&[][..], |(_, keys)| *keys);
        if let Some(key) = t.keys().find(|k| !reads.contains(&k.as_str())) {
            let takes = if reads.is_empty() {
                format!("takes nothing from [{section}]")
            } else {
                format!("reads only {} from [{section}]", reads.join(", "))
            };
            return Err(key_err(
                &format!("{section}.{}", shown_key(key)),
                format!(
                    "a [dfs] run {takes} (its clients, link, server and queue are set in [dfs] and [network]); drop this key"
                ),
            ));
        }
    }
    Ok(())
}

/// Takes `[dfs]` and `[network]` out of `root`. `None` when there is no `[dfs]` section; a
/// `[network]` section without one is an error.
pub fn take(root: &mut Table) -> Result<Option<DfsSettings>, ConfigError> {
    if !root.contains_key("dfs") {
        if root.contains_key("network") {
            return Err(key_err(
                "network",
                "a [network] section needs a [dfs] section (for example `--set dfs.system=aps`)",
            ));
        }
        return Ok(None);
    }
    // `alpha` is a number or `auto`, which no typed getter of `Section` takes: read it first.
    let alpha_raw = match root.get_mut("dfs") {
        Some(Value::Table(t)) => t.remove("alpha"),
        _ => None,
    };
    let mut d = Section::take(root, "dfs")?;
    let system = match text(&mut d, "system", "dfs.system")? {
        None => DfsSystem::Aps,
        Some(s) => s.parse().map_err(|e: String| key_err("dfs.system", e))?,
    };
    if system == DfsSystem::Local {
        if let Some(Value::Table(n)) = root.get("network") {
            if let Some(k) = n.keys().next() {
                return Err(key_err(
                    &format!("network.{}", shown_key(k)),
                    "a `local` run has no network (its streams are processes on the server \
                     itself); drop it, or choose a dfs.system that has one",
                ));
            }
        }
        // Nor does it go through the DFS server's workers or their queue: both keys would
        // change nothing.
        if let Some(key) = ["workers", "queue"].into_iter().find(|k| d.has(k)) {
            return Err(key_err(
                &format!("dfs.{key}"),
                "a `local` run has no DFS server workers or request queue (its streams are \
                 processes on the server itself); drop it, or choose a dfs.system that has them",
            ));
        }
    }
    let queue = match text(&mut d, "queue", "dfs.queue")? {
        None => None,
        Some(s) => Some(s.parse().map_err(|e: String| key_err("dfs.queue", e))?),
    };
    let workers = d.int("workers", 32, 1, 4096)? as u32;
    let (alpha_raw_given, max_alpha_given) = (alpha_raw.is_some(), d.has("max_alpha"));
    let alpha = match alpha_raw {
        None => AlphaMode::Auto,
        Some(Value::Integer(i)) if (1..=1024).contains(&i) => AlphaMode::Fixed(i as u32),
        Some(Value::String(s)) => match s.parse::<AlphaMode>() {
            Ok(AlphaMode::Fixed(n)) if !(1..=1024).contains(&n) => {
                return Err(key_err(
                    "dfs.alpha",
                    format!("must be `auto` or 1..=1024, got {n}"),
                ))
            }
            Ok(a) => a,
            Err(e) => return Err(key_err("dfs.alpha", e)),
        },
        Some(v) => {
            return Err(key_err(
                "dfs.alpha",
                format!(
                    "must be `auto` or a whole number 1..=1024, got {shown}",
                    shown = excerpt(&v.to_string())
                ),
            ))
        }
    };
    let max_alpha = d.int("max_alpha", 256, 1, 1024)? as u32;
    // Only APS's client keeps `alpha` readaheads in flight (paper 004, condition 20); the other
    // systems have readahead windows of their own and would ignore both keys.
    if system != DfsSystem::Aps {
        if let Some(key) = [("alpha", alpha_raw_given), ("max_alpha", max_alpha_given)]
            .into_iter()
            .find_map(|(k, given)| given.then_some(k))
        {
            return Err(key_err(
                &format!("dfs.{key}"),
                format!(
                    "only the `aps` system reads it, and this run's system is `{system}`; drop it"
                ),
            ));
        }
    }
    // The cap bounds the `alpha` condition 20 picks; a fixed `alpha` is used as given.
    if let (AlphaMode::Fixed(n), true) = (alpha, max_alpha_given) {
        return Err(key_err(
            "dfs.max_alpha",
            format!(
                "caps alpha only when dfs.alpha = \"auto\", and this run fixes alpha at {n}; \
                 drop one of the two keys"
            ),
        ));
    }
    let slice = d.opt_duration("slice")?;
    // CFQ counts its slices in jiffies, so none is shorter than 1 ms (HZ = 1000). A slice of 1 ns
    // was taken, and its queue switched at every nanosecond: Gluster on `metro-10g` took 11.4 s
    // of wall time for 0.2 s simulated, against under 0.01 s with the default slice.
    if let Some(s) = slice.filter(|s| *s < Duration::from_millis(1)) {
        return Err(key_err(
            "dfs.slice",
            format!(
                "a CFQ slice lasts at least 1 ms (a jiffy at HZ = 1000; Linux's default is \
                 100 ms), not {s}; give 1ms or more"
            ),
        ));
    }
    let slice_idle = d.opt_duration("slice_idle")?;
    d.finish()?;

    let mut n = Section::take(root, "network")?;
    let link = n.string("link", "lan-10g")?;
    if link_preset(&link).is_none() {
        let names: Vec<&str> = link_presets().iter().map(|p| p.name).collect();
        return Err(key_err(
            "network.link",
            format!(
                "`{}` is not a link preset; choose one of: {}",
                excerpt(&link),
                names.join(", ")
            ),
        ));
    }
    // As every other key of its kind: a duration and a rate carry their unit, a size may be a
    // plain number of bytes.
    let given = |key| n.given(key).unwrap_or_default();
    let (delay_given, bandwidth_given, window_given) =
        (given("delay"), given("bandwidth"), given("window"));
    let delay = n.opt_duration("delay")?;
    let bandwidth_bytes_per_s = match n.raw("bandwidth") {
        None => None,
        Some(Value::String(s)) => {
            let r = parse_rate(&s).map_err(|e| key_err("network.bandwidth", e.to_string()))?;
            // Kept in whole bytes per second: a rate that rounds to none would be refused by
            // the link as "0", which the user never wrote.
            if r.bytes_per_s < 1.0 {
                return Err(key_err(
                    "network.bandwidth",
                    format!(
                        "`{}` is below 1 byte/s; give a rate such as \"10Gbit\" or \"1GB/s\"",
                        excerpt(&s)
                    ),
                ));
            }
            Some(r.bytes_per_s.round() as u64)
        }
        Some(v) => {
            return Err(key_err(
                "network.bandwidth",
                format!(
                    "expected a rate with its unit, such as \"10Gbit\" or \"1GB/s\", got {shown}",
                    shown = excerpt(&v.to_string())
                ),
            ))
        }
    };
    let window = n.opt_int_or_size("window")?;
    n.finish()?;
    let settings = DfsSettings {
        system,
        queue,
        workers,
        alpha,
        max_alpha,
        slice,
        slice_idle,
        link,
        delay,
        bandwidth_bytes_per_s,
        window,
    };
    // The link checks its figures itself; a refusal is reported under the key that set the
    // figure, with the figure as a size or duration rather than the link's raw integer.
    let params = settings.link_params();
    params.validate().map_err(|e| match e {
        DeviceError::BadValue { field, fix, .. } => {
            // A preset's own figure is in range; the one refused is the user's, shown as
            // written.
            let shown = match field {
                "window" => as_given(&window_given, params.window.rounded()),
                "delay" => as_given(&delay_given, params.delay),
                _ => as_given(
                    &bandwidth_given,
                    format!("{} bytes/s", params.bandwidth.bytes_per_s),
                ),
            };
            key_err(
                &format!("network.{field}"),
                format!("{shown} is out of range: {fix}"),
            )
        }
        other => key_err("network", other.to_string()),
    })?;
    Ok(Some(settings))
}

impl DfsSettings {
    /// The link: the preset with the overrides applied.
    pub fn link_params(&self) -> LinkParams {
        let mut p = link_preset(&self.link).expect("link preset checked when parsed");
        if let Some(d) = self.delay {
            p.delay = d;
        }
        if let Some(b) = self.bandwidth_bytes_per_s {
            p.bandwidth = Bandwidth::from_bytes_per_s(b as f64);
        }
        if let Some(w) = self.window {
            p.window = w;
        }
        p
    }

    /// The run's parameters from the whole config (device, memory, workload and these settings).
    pub fn params(&self, cfg: &SimConfig) -> Result<DfsParams, ConfigError> {
        let w = &cfg.workload;
        let pattern = match w.kind {
            WorkloadKind::Streams => Pattern::Streams,
            WorkloadKind::Random => Pattern::Random,
            other => {
                return Err(key_err(
                    "workload.kind",
                    format!(
                        "a [dfs] run takes `streams` or `random`, not `{}`",
                        format!("{other:?}").to_lowercase()
                    ),
                ))
            }
        };
        if cfg.device.disksim.is_some() {
            return Err(key_err(
                "device.disksim",
                "a [dfs] run uses a preset device; drop device.disksim",
            ));
        }
        let spec = presets::preset(&cfg.device.preset).ok_or_else(|| {
            key_err(
                "device.preset",
                format!(
                    "`{}` is not a preset; choose one of: {}",
                    excerpt(&cfg.device.preset),
                    presets::preset_names().join(", ")
                ),
            )
        })?;
        let device = match cfg.device.kind {
            DeviceKind::Hdd | DeviceKind::Ssd => DfsDevice::Single(spec),
            DeviceKind::Raid0 => DfsDevice::Raid0 {
                disk: spec,
                disks: cfg.device.disks,
                strip: cfg.device.strip,
            },
            DeviceKind::Jbod => {
                return Err(key_err(
                    "device.kind",
                    "a [dfs] server has one device: hdd, ssd or raid0",
                ))
            }
        };
        let cfq = match (self.slice, self.slice_idle) {
            (None, None) => None,
            (slice, idle) => {
                let d: CfqTimes = default_cfq(&device);
                Some(CfqTimes {
                    slice: slice.unwrap_or(d.slice),
                    idle: idle.unwrap_or(d.idle),
                })
            }
        };
        let file_size = if w.file_size.0 == 0 {
            // Unset (`random`'s default): each stream reads a file of its own, not one shared
            // file as on a host, so the volume is shared out among the streams, in whole MiB
            // (the places `Layout::spread` gives them), up to paper 004's 40 GiB.
            let volume_bytes = device
                .build()
                .map_err(|e| key_err("device", e.to_string()))?
                .capacity()
                .0;
            let share_bytes = (volume_bytes / u64::from(w.streams.max(1))) >> 20 << 20;
            ByteLen(share_bytes.min(ByteLen::gib(40).0))
        } else {
            w.file_size
        };
        Ok(DfsParams {
            system: self.system,
            queue: self.queue,
            workers: self.workers,
            link: self.link_params(),
            device,
            pattern,
            streams: w.streams,
            file_size,
            request: w.request,
            requests: w.requests,
            // No duration runs to the end, as every run does: each stream stops after its file
            // (or its `requests`), so the horizon only keeps the end instant representable.
            duration: w.duration.unwrap_or(RUN_TO_THE_END),
            memory: cfg.host.memory,
            cfq,
            alpha: self.alpha,
            max_alpha: self.max_alpha,
            seed: cfg.seed,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{apply_set, SimConfig};

    fn cfg(sets: &[&str]) -> Result<SimConfig, ConfigError> {
        let mut t = Table::new();
        for s in sets {
            apply_set(&mut t, s)?;
        }
        SimConfig::from_table(t, None)
    }

    /// `local` runs its streams on the server itself: a [network] key, or the server's workers or
    /// queue, was read and then unused.
    #[test]
    fn a_local_run_refuses_network_and_server_keys() {
        for set in [
            "network.delay=4ms",
            "network.link=wan-1g",
            "network.window=30MB",
        ] {
            let e = cfg(&["dfs.system=local", set]).expect_err(set).to_string();
            let key = set.split('=').next().unwrap();
            assert!(
                e.contains(key) && e.contains("local") && e.contains("drop it"),
                "{set}: {e}"
            );
        }
        assert!(cfg(&["dfs.system=local"]).is_ok());
        // Nor server workers or their queue: both were taken and changed nothing (the same
        // figures with 1 and 32 workers, shared or dedicated, at 64 streams).
        for set in ["dfs.workers=4", "dfs.queue=shared"] {
            let e = cfg(&["dfs.system=local", set]).expect_err(set).to_string();
            let key = set.split('=').next().unwrap();
            assert!(
                e.contains(key) && e.contains("local") && e.contains("drop it"),
                "{set}: {e}"
            );
        }
        assert!(cfg(&["dfs.system=nfs", "network.delay=4ms"]).is_ok());
    }

    /// A workload kind the DFS model does not run was reported by the host parser first, with
    /// advice that led nowhere: `trace` asked for a trace file, which [dfs] then refused.
    #[test]
    fn a_workload_kind_dfs_does_not_run_is_refused_first() {
        for kind in ["trace", "webserver", "scan", "tiles", "gaps"] {
            let e = cfg(&["dfs.system=aps", &format!("workload.kind={kind}")])
                .expect_err(kind)
                .to_string();
            assert!(
                e.contains("workload.kind") && e.contains("`streams` or `random`"),
                "{kind}: {e}"
            );
        }
    }

    /// A [dfs] streams run took workload.requests and read each stream's file until the duration
    /// regardless (the host refuses the key on streams).
    /// `dfs.slice = "1ns"` was taken, and a run of 0.2 s took 11.4 s as the scheduler
    /// switched queues every nanosecond; CFQ's slices are whole jiffies.
    #[test]
    fn a_cfq_slice_under_a_jiffy_is_refused() {
        for slice in ["1ns", "999us", "0ms"] {
            let e = cfg(&["dfs.system=gluster", &format!("dfs.slice={slice}")])
                .expect_err("a slice under 1 ms")
                .to_string();
            assert!(
                e.contains("dfs.slice") && e.contains("at least 1 ms"),
                "{e}"
            );
        }
        assert!(cfg(&["dfs.system=gluster", "dfs.slice=1ms"]).is_ok());
    }

    #[test]
    fn a_streams_run_over_a_dfs_refuses_workload_requests() {
        let e = cfg(&["dfs.system=aps", "workload.requests=5"])
            .expect_err("requests on streams")
            .to_string();
        assert!(
            e.contains("workload.requests") && e.contains("random"),
            "{e}"
        );
        assert!(cfg(&[
            "dfs.system=aps",
            "workload.kind=random",
            "workload.requests=5",
            "workload.file_size=1GiB",
        ])
        .is_ok());
    }

    /// A [dfs] `random` stream reads a file of its own, not one shared file as on a host. With
    /// no workload.file_size each was 40 GiB, so two streams on the default `wd800jd` (74.5 GiB)
    /// were refused for "2 files of 40GiB", a size nobody had given.
    #[test]
    fn random_streams_default_to_their_share_of_the_volume_at_most_40_gib() {
        let params = |sets: &[&str]| {
            let c = cfg(sets).unwrap();
            c.dfs.as_ref().unwrap().params(&c).unwrap()
        };
        let mib = 1u64 << 20;
        for (sets, disks) in [
            (&["workload.streams=2"][..], 1),
            (
                &["workload.streams=3", "device.kind=raid0", "device.disks=5"][..],
                5,
            ),
        ] {
            let mut all = vec!["dfs.system=aps", "workload.kind=random"];
            all.extend_from_slice(sets);
            let p = params(&all);
            let streams = u64::from(p.streams);
            let volume = super::super::DfsDevice::build(&p.device)
                .unwrap()
                .capacity()
                .0;
            assert!(volume >= disks * (70 << 30), "{sets:?}: {volume}");
            let share = volume / streams / mib * mib;
            assert_eq!(p.file_size.0, share.min(40 << 30), "{sets:?}");
            let short = DfsParams {
                duration: Duration::from_millis(100),
                requests: 4,
                ..p
            };
            super::super::run(&short).unwrap_or_else(|e| panic!("{sets:?}: {e}"));
        }
        // Where the volume holds 40 GiB per stream, the paper's 40 GiB files, as before.
        let big = params(&[
            "dfs.system=aps",
            "workload.kind=random",
            "device.preset=st6000nm0024",
            "workload.streams=16",
        ]);
        assert_eq!(big.file_size, ByteLen::gib(40));
        let given = params(&[
            "dfs.system=aps",
            "workload.kind=random",
            "workload.file_size=1GiB",
            "workload.streams=2",
        ]);
        assert_eq!(given.file_size, ByteLen::gib(1));
    }

    #[test]
    fn no_dfs_section_means_a_local_run() {
        assert!(cfg(&[]).unwrap().dfs.is_none());
        let e = cfg(&["network.delay=4ms"]).unwrap_err().to_string();
        assert!(e.contains("network") && e.contains("[dfs]"), "{e}");
    }

    #[test]
    fn keys_parse_and_errors_name_them() {
        let c = cfg(&[
            "dfs.system=aps",
            "dfs.queue=dedicated",
            "dfs.workers=8",
            "dfs.alpha=4",
            "network.link=wan-1g",
            "network.delay=4ms",
            "network.window=30MB",
        ])
        .unwrap();
        let d = c.dfs.clone().unwrap();
        assert_eq!(d.system, DfsSystem::Aps);
        assert_eq!(d.queue, Some(QueueKind::Dedicated));
        assert_eq!(d.alpha, AlphaMode::Fixed(4));
        let l = d.link_params();
        assert_eq!(l.delay, Duration::from_millis(4));
        assert_eq!(l.window, ByteLen(30_000_000));
        // A size in bytes, as `sim --help` says sizes may be written.
        let w = cfg(&["dfs.system=aps", "network.window=6000000"]).unwrap();
        assert_eq!(w.dfs.unwrap().link_params().window, ByteLen(6_000_000));
        let p = d.params(&c).unwrap();
        assert_eq!(p.workers, 8);
        assert_eq!(
            cfg(&["dfs.alpha=auto"]).unwrap().dfs.unwrap().alpha,
            AlphaMode::Auto
        );
        for (set, key) in [
            ("dfs.system=ceph", "dfs.system"),
            ("dfs.queue=fifo", "dfs.queue"),
            ("dfs.workers=0", "dfs.workers"),
            ("dfs.alpha=lots", "dfs.alpha"),
            ("dfs.system=lustre,dfs.alpha=4", "dfs.alpha"),
            ("dfs.system=nfs,dfs.max_alpha=8", "dfs.max_alpha"),
            // A fixed alpha is not capped: the cap would change nothing.
            (
                "dfs.system=aps,dfs.alpha=5,dfs.max_alpha=2",
                "dfs.max_alpha",
            ),
            ("dfs.bogus=1", "dfs.bogus"),
            ("network.link=moon", "network.link"),
            ("network.bandwidth=fast", "network.bandwidth"),
            ("network.bandwidth=10", "a rate with its unit"),
            ("network.delay=4", "a duration"),
        ] {
            let mut sets: Vec<&str> = set.split(',').collect();
            if !set.starts_with("dfs.") {
                sets.push("dfs.system=aps");
            }
            let e = cfg(&sets).unwrap_err().to_string();
            assert!(e.contains(key), "{set}: {e}");
        }
    }

    #[test]
    fn a_link_figure_out_of_range_is_refused_by_its_own_key_as_written() {
        for (set, key, shown) in [
            ("network.bandwidth=1bit", "`network.bandwidth`", "`1bit`"),
            (
                "network.bandwidth=0.5B/s",
                "`network.bandwidth`",
                "`0.5B/s`",
            ),
            ("network.window=1", "`network.window`", "`1` (1B)"),
            ("network.window=1KB", "`network.window`", "`1KB` (1000B)"),
            ("network.delay=20s", "`network.delay`", "`20s` (20.000s)"),
            (
                "network.delay=20000ms",
                "`network.delay`",
                "`20000ms` (20.000s)",
            ),
        ] {
            let e = cfg(&["dfs.system=aps", set]).unwrap_err().to_string();
            assert!(e.contains(key) && e.contains(shown), "{set}: {e}");
        }
        let one = cfg(&["dfs.system=aps", "network.bandwidth=8bit/s"]).unwrap();
        assert_eq!(one.dfs.unwrap().link_params().bandwidth.bytes_per_s, 1.0);
    }

    #[test]
    fn keys_the_dfs_model_would_not_read_are_refused_by_name() {
        for set in [
            "workload.think=50ms",
            "device.queue_depth=1",
            "host.scheduler=noop",
            "policy.name=none",
        ] {
            let e = cfg(&["dfs.system=aps", set]).unwrap_err().to_string();
            let key = set.split('=').next().unwrap();
            assert!(e.contains(&format!("`{key}`")) && e.contains("drop"), "{e}");
        }
        assert!(cfg(&[
            "dfs.system=aps",
            "workload.streams=4",
            "device.kind=raid0",
            "host.memory=1GiB",
        ])
        .is_ok());
    }

    /// Without `workload.duration` a run goes to the end, as `foresight sim --help` says for every
    /// run: a `[dfs]` run used to stop at 10 simulated seconds on its own, with reads left and no
    /// word of it, so `app_bytes` fell short of what the workload asked for.
    #[test]
    fn without_a_duration_a_dfs_run_reads_every_byte() {
        let sets = [
            "dfs.system=nfs",
            "device.preset=wd800jd",
            "workload.streams=2",
            "workload.request=64KiB",
            "workload.file_size=1GiB",
        ];
        let r = crate::run(&cfg(&sets).unwrap(), crate::RunOptions::default())
            .unwrap()
            .report;
        assert_eq!(r.app_bytes, 2 << 30);
        assert!(r.elapsed_s > 10.0, "{}", r.elapsed_s);
        let mut limited = sets.to_vec();
        limited.push("workload.duration=2s");
        let r = crate::run(&cfg(&limited).unwrap(), crate::RunOptions::default())
            .unwrap()
            .report;
        assert!(r.app_bytes < 2 << 30 && r.elapsed_s == 2.0, "{r:?}");
    }

    #[test]
    fn only_streams_and_random_run_over_a_dfs() {
        let e = cfg(&[
            "dfs.system=aps",
            "workload.kind=webserver",
            "workload.duration=1s",
        ])
        .unwrap_err()
        .to_string();
        assert!(e.contains("workload.kind"), "{e}");
    }
}
