//! Builds the simulated volume from `[device]`: a preset disk or SSD, a disk imported from DiskSim
//! 4.0 parameter files (`device.disksim`), or a RAID-0 of either kind of disk.
//!
//! An import's warnings (keys the model ignores) are printed to stderr once per file per process,
//! one line each, so that an experiment running the same drive many times says it once.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use foresight_core::ByteLen;
use foresight_device::disksim;
use foresight_device::presets::{self, DeviceSpec};
use foresight_device::{Device, HddParams, WriteCache};
use foresight_policy::layout::Striping;

use crate::config::{ConfigError, DeviceConfig, DeviceKind};

fn unknown_preset(name: &str) -> ConfigError {
    // `foresight devices` lists link presets beside the drives, so a link's name given as a drive
    // is a likely slip: say where it goes instead of calling it no preset at all.
    let link_hint = if foresight_device::link_preset(name).is_some() {
        format!(
            "`{name}` is a network link preset, which goes in [network] link = \"{name}\" of a \
             [dfs] run, not in device.preset; "
        )
    } else {
        format!("`{name}` is not a preset; ")
    };
    ConfigError::Key {
        key: "device.preset".into(),
        message: format!(
            "{link_hint}choose a drive or SSD: {} (see `foresight devices`)",
            presets::preset_names().join(", ")
        ),
    }
}

/// The preset names of one kind of device: hard disks or SSDs.
fn presets_of(ssd: bool) -> Vec<&'static str> {
    presets::preset_names()
        .iter()
        .copied()
        .filter(|n| matches!(presets::preset(n), Some(DeviceSpec::Ssd(_))) == ssd)
        .collect()
}

/// A preset of the other kind than `device.kind` takes: says what the preset is, what the kind
/// needs (an array's members are hard disks, as its seek-ordered queues and strip model assume),
/// and the presets that would do.
fn wrong_kind_of_preset(cfg: &DeviceConfig) -> ConfigError {
    let name = &cfg.preset;
    let message = match cfg.kind {
        DeviceKind::Ssd => format!(
            "`{name}` is a hard disk, and device.kind = \"ssd\" takes an SSD preset: {}; or \
             set device.kind = \"hdd\" to run this disk",
            presets_of(true).join(", ")
        ),
        DeviceKind::Hdd => format!(
            "`{name}` is an SSD, and device.kind = \"hdd\" takes a hard disk preset: {}; or \
             set device.kind = \"ssd\" to run this SSD",
            presets_of(false).join(", ")
        ),
        DeviceKind::Raid0 | DeviceKind::Jbod => {
            let kind = if cfg.kind == DeviceKind::Raid0 {
                "raid0"
            } else {
                "jbod"
            };
            format!(
                "`{name}` is an SSD, and a {kind} array's members (device.preset, one for every \
                 disk) are hard disks: choose one of {}; or set device.kind = \"ssd\" to run \
                 one SSD",
                presets_of(false).join(", ")
            )
        }
    };
    ConfigError::Key {
        key: "device.preset".into(),
        message,
    }
}

/// Imports the DiskSim drive at `path`, printing its warnings the first time this process sees it.
fn import_disksim(path: &Path) -> Result<DeviceSpec, ConfigError> {
    static WARNED: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());
    let drive = disksim::import(path).map_err(|e| ConfigError::Key {
        key: "device.disksim".into(),
        message: e.to_string(),
    })?;
    let first = WARNED
        .lock()
        .map(|mut w| w.insert(path.to_path_buf()))
        .unwrap_or(false);
    if first {
        // A warning that cannot be written (standard error closed by its reader) is no reason
        // to stop, nor to panic as `eprintln!` would.
        let mut err = std::io::stderr().lock();
        for w in &drive.warnings {
            let _ = std::io::Write::write_fmt(&mut err, format_args!("warning: {w}\n"));
        }
    }
    Ok(DeviceSpec::Hdd(drive.params))
}

fn spec(cfg: &DeviceConfig) -> Result<DeviceSpec, ConfigError> {
    let mut spec = match &cfg.disksim {
        Some(path) => import_disksim(path)?,
        None => presets::preset(&cfg.preset).ok_or_else(|| unknown_preset(&cfg.preset))?,
    };
    let kind_ok = matches!(
        (&spec, cfg.kind),
        (
            DeviceSpec::Hdd(_),
            DeviceKind::Hdd | DeviceKind::Raid0 | DeviceKind::Jbod
        ) | (DeviceSpec::Ssd(_), DeviceKind::Ssd)
    );
    if !kind_ok {
        return Err(wrong_kind_of_preset(cfg));
    }
    if let Some(depth) = cfg.queue_depth {
        match &mut spec {
            DeviceSpec::Hdd(p) => p.queue_depth = depth,
            DeviceSpec::Ssd(p) => p.queue_depth = depth,
        }
    }
    if let (Some(policy), DeviceSpec::Hdd(p)) = (cfg.queue_policy, &mut spec) {
        p.queue_policy = policy;
    }
    if let DeviceSpec::Hdd(p) = &mut spec {
        // Drive cache overrides (paper 001, section 3: segment count, segment size, read-ahead).
        if let Some(n) = cfg.cache_segments {
            p.cache_segments = n;
        }
        if let Some(b) = cfg.segment_size {
            p.cache_segment_sectors = (b.0 / 512) as u32;
            // The preset's read-ahead fills its own segment, so a smaller segment takes a
            // read-ahead that fills the new one; a size given explicitly is checked below.
            p.readahead_max_sectors = p.readahead_max_sectors.min(p.cache_segment_sectors);
            p.readahead_min_sectors = p.readahead_min_sectors.min(p.cache_segment_sectors);
        }
        if let Some(b) = cfg.drive_readahead {
            p.readahead_max_sectors = (b.0 / 512) as u32;
        }
        if let Some(b) = cfg.drive_readahead_min {
            p.readahead_min_sectors = (b.0 / 512) as u32;
        }
        if let Some(almost) = cfg.almost_read_hits {
            p.almost_read_hits = almost;
        }
        check_drive_cache(cfg, p)?;
        p.validate().map_err(|e| ConfigError::Key {
            key: "device".into(),
            message: e.to_string(),
        })?;
    }
    Ok(spec)
}

/// Checks the drive cache after `cfg`'s overrides, in the terms of the keys that set it: the
/// model's own check names its internal fields (`readahead_max_sectors`), which no user wrote, and
/// the key at fault may be a preset value that an override of another key contradicts. A key given
/// is quoted as written (`DeviceConfig::given`), as the config's other checks comparing two keys
/// quote theirs; a figure no key gave is named as the drive's.
fn check_drive_cache(cfg: &DeviceConfig, p: &HddParams) -> Result<(), ConfigError> {
    let bytes = |sectors: u32| ByteLen(u64::from(sectors) * 512);
    let drive = match &cfg.disksim {
        Some(_) => "the DiskSim drive".to_string(),
        None => cfg.preset.clone(),
    };
    let segment = bytes(p.cache_segment_sectors);
    let segment_shown = if cfg.given.has("device.segment_size") {
        cfg.given.key("device.segment_size", segment.rounded())
    } else {
        format!("{} ({drive}'s)", segment.rounded())
    };
    let err = |key: &str, message: String| ConfigError::Key {
        key: key.into(),
        message,
    };
    for (key, what, sectors) in [
        (
            "device.drive_readahead",
            "read-ahead",
            p.readahead_max_sectors,
        ),
        (
            "device.drive_readahead_min",
            "minimum read-ahead",
            p.readahead_min_sectors,
        ),
    ] {
        if sectors <= p.cache_segment_sectors {
            continue;
        }
        // A preset's read-ahead shrinks with a smaller segment (see `spec`), so only a
        // read-ahead given explicitly, or an imported drive's own, can be too large for its
        // segment.
        let value = bytes(sectors).rounded();
        let value = if cfg.given.has(key) {
            cfg.given.value(key, value)
        } else {
            format!("{value} ({drive}'s)")
        };
        return Err(err(
            key,
            format!(
                "{value} is more than one cache segment, {segment_shown}, and the drive's {what} \
                 fills at most one segment; give at most {segment} or raise device.segment_size"
            ),
        ));
    }
    let shares_segments = p.write_cache != WriteCache::Off && !p.separate_write_segment;
    if cfg.cache_segments.is_some() && shares_segments && p.write_segments > p.cache_segments {
        return Err(err(
            "device.cache_segments",
            format!(
                "{} is fewer than the {} segments {drive} writes back into; give at least {}",
                cfg.given.value("device.cache_segments", p.cache_segments),
                p.write_segments,
                p.write_segments
            ),
        ));
    }
    Ok(())
}

/// Builds the volume's member devices: one for `hdd` and `ssd`, `disks` identical ones for
/// `raid0` (the simulator's volume layer does the striping, so each member keeps its own queue).
pub fn build_members(cfg: &DeviceConfig) -> Result<Vec<Box<dyn Device>>, ConfigError> {
    let spec = spec(cfg)?;
    let count = if matches!(cfg.kind, DeviceKind::Raid0 | DeviceKind::Jbod) {
        cfg.disks
    } else {
        1
    };
    Ok((0..count).map(|_| presets::build(&spec)).collect())
}

/// The striping the layout should know about.
pub fn striping(cfg: &DeviceConfig) -> Option<Striping> {
    (cfg.kind == DeviceKind::Raid0).then_some(Striping {
        disks: cfg.disks,
        strip_bytes: cfg.strip.0,
    })
}

/// A short description for reports, e.g. `raid0 5 x cheetah-15k5, 128KiB strips` or
/// `disksim atlas10k.diskspecs`.
pub fn describe(cfg: &DeviceConfig) -> String {
    let disk = match &cfg.disksim {
        Some(p) => format!(
            "disksim {}",
            p.file_name().map_or_else(
                || p.display().to_string(),
                |n| n.to_string_lossy().into_owned()
            )
        ),
        None => cfg.preset.clone(),
    };
    match cfg.kind {
        DeviceKind::Raid0 => format!("raid0 {} x {disk}, {} strips", cfg.disks, cfg.strip),
        DeviceKind::Jbod => format!("jbod {} x {disk}", cfg.disks),
        _ => disk,
    }
}

/// The device figures `policy.infill_max = "auto"` needs, from the member disk of `cfg` (see
/// [`DeviceSpec::positioning_figures`]).
pub fn positioning_figures(cfg: &DeviceConfig) -> Result<(Vec<(u64, u64)>, u64), ConfigError> {
    Ok(spec(cfg)?.positioning_figures())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{apply_set, SimConfig};

    fn config(sets: &[&str]) -> Result<SimConfig, ConfigError> {
        let mut t = toml::Table::new();
        for s in sets {
            apply_set(&mut t, s).unwrap();
        }
        SimConfig::from_table(t, None)
    }

    /// The key `build_members` (or the config before it) refuses `sets` with.
    fn refused_key(sets: &[&str]) -> Option<String> {
        let e = match config(sets) {
            Err(e) => e,
            Ok(c) => build_members(&c.device).err()?,
        };
        match e {
            ConfigError::Key { key, .. } => Some(key),
            other => panic!("expected a key error, got {other}"),
        }
    }

    fn hdd(sets: &[&str]) -> foresight_device::hdd::HddParams {
        let built = config(sets).and_then(|c| spec(&c.device));
        match built.unwrap_or_else(|e| panic!("{sets:?}: {e}")) {
            DeviceSpec::Hdd(p) => p,
            DeviceSpec::Ssd(_) => panic!("{sets:?}: not a disk"),
        }
    }

    /// A preset of the wrong kind is refused with what the kind takes and the presets that
    /// would do: an array's members are hard disks, which `ssd-850evo` is not.
    #[test]
    fn a_preset_of_the_wrong_kind_names_the_kind_needed_and_the_presets() {
        let refusal = |sets: &[&str]| {
            let c = config(sets).unwrap();
            build_members(&c.device).err().unwrap().to_string()
        };
        for kind in ["raid0", "jbod"] {
            let e = refusal(&[&format!("device.kind={kind}"), "device.preset=ssd-850evo"]);
            assert!(
                e.contains("device.preset")
                    && e.contains("are hard disks")
                    && e.contains("wd800jd, st6000nm0024")
                    && !e.contains("ssd-850evo,"),
                "{e}"
            );
        }
        let e = refusal(&["device.kind=hdd", "device.preset=ssd-850evo"]);
        assert!(
            e.contains("hard disk preset") && e.contains("wd800jd"),
            "{e}"
        );
        let e = refusal(&["device.kind=ssd", "device.preset=wd800jd"]);
        assert!(e.contains("SSD preset: ssd-850evo;"), "{e}");
    }

    #[test]
    fn drive_cache_overrides_are_refused_by_the_key_at_fault() {
        // 2 TiB is 2^32 sectors: it used to wrap to 0, a drive silently without read-ahead.
        assert_eq!(
            refused_key(&["device.drive_readahead=2TiB"]).as_deref(),
            Some("device.drive_readahead")
        );
        assert_eq!(
            refused_key(&["device.segment_size=2199023256064"]).as_deref(),
            Some("device.segment_size")
        );
        // wd800jd reads ahead a whole 512 KiB segment: a larger read-ahead given explicitly, or
        // one that does not fit a smaller segment given with it, is the key at fault.
        assert_eq!(
            refused_key(&["device.drive_readahead=1MiB"]).as_deref(),
            Some("device.drive_readahead")
        );
        assert_eq!(
            refused_key(&["device.segment_size=64KiB", "device.drive_readahead=1MiB"]).as_deref(),
            Some("device.drive_readahead")
        );
        assert_eq!(
            refused_key(&["device.drive_readahead_min=1MiB"]).as_deref(),
            Some("device.drive_readahead_min")
        );
        // The Cheetah writes back into 11 segments.
        assert_eq!(
            refused_key(&["device.preset=cheetah-15k5", "device.cache_segments=1"]).as_deref(),
            Some("device.cache_segments")
        );
        assert_eq!(
            refused_key(&["device.segment_size=4KiB", "device.drive_readahead=4KiB"]),
            None
        );
        assert_eq!(refused_key(&["device.drive_readahead=0"]), None);
        // A drive cache key on an ssd is named as given.
        assert_eq!(
            refused_key(&[
                "device.kind=ssd",
                "device.preset=ssd-850evo",
                "device.drive_readahead=0"
            ])
            .as_deref(),
            Some("device.drive_readahead")
        );
    }

    #[test]
    fn almost_read_hits_default_to_ahead_and_can_be_set() {
        use foresight_device::AlmostReadHits;
        for preset in ["cheetah-15k5", "wd800jd"] {
            let p = hdd(&[&format!("device.preset={preset}")]);
            assert_eq!(p.almost_read_hits, AlmostReadHits::Ahead, "{preset}");
            for (v, want) in [
                ("none", AlmostReadHits::None),
                ("head", AlmostReadHits::Head),
                ("ahead", AlmostReadHits::Ahead),
            ] {
                let set = format!("device.almost_read_hits={v}");
                let p = hdd(&[&format!("device.preset={preset}"), &set]);
                assert_eq!(p.almost_read_hits, want, "{preset} {v}");
            }
        }
        assert_eq!(
            refused_key(&["device.almost_read_hits=false"]).as_deref(),
            Some("device.almost_read_hits")
        );
        assert_eq!(
            refused_key(&["device.almost_read_hits=sometimes"]).as_deref(),
            Some("device.almost_read_hits")
        );
        assert_eq!(
            refused_key(&[
                "device.kind=ssd",
                "device.preset=ssd-850evo",
                "device.almost_read_hits=none"
            ])
            .as_deref(),
            Some("device.almost_read_hits")
        );
    }

    /// The drive cache checks compare a key with the drive's own figures: each key given is
    /// quoted as written, with its conversion beside it, and a figure the key was left out for is
    /// named as the drive's. They showed converted values only (`1000KiB` for `1024000`).
    #[test]
    fn drive_cache_refusals_quote_the_keys_as_written() {
        let message = |sets: &[&str]| {
            let c = config(sets).unwrap_or_else(|e| panic!("{sets:?}: {e}"));
            match build_members(&c.device) {
                Err(e) => e.to_string(),
                Ok(_) => panic!("{sets:?} was accepted"),
            }
        };
        for (sets, shown) in [
            (
                &["device.drive_readahead=1024000"][..],
                "`device.drive_readahead`: `1024000` (1000KiB) is more than one cache \
                 segment, 512KiB (wd800jd's),",
            ),
            (
                &["device.segment_size=64000", "device.drive_readahead=102400"],
                "`device.drive_readahead`: `102400` (100KiB) is more than one cache \
                 segment, device.segment_size = `64000` (62.5KiB),",
            ),
            (
                &[
                    "device.segment_size=64KiB",
                    "device.drive_readahead_min=524288",
                ],
                "`device.drive_readahead_min`: `524288` (512KiB) is more than one cache \
                 segment, device.segment_size = `64KiB`,",
            ),
            (
                &["device.preset=cheetah-15k5", "device.cache_segments=1"],
                "`device.cache_segments`: `1` is fewer than the 11 segments cheetah-15k5 \
                 writes back into; give at least 11",
            ),
        ] {
            let e = message(sets);
            assert!(e.contains(shown), "{sets:?}: {e}");
        }
        // The same from a config file, its sizes written as integers.
        let mut t = crate::config::parse_config_text(
            "[device]\nsegment_size = 65536\ndrive_readahead = 131072\n",
            "drive.toml",
        )
        .unwrap();
        apply_set(&mut t, "workload.duration=1s").unwrap();
        let c = SimConfig::from_table(t, None).unwrap();
        let e = build_members(&c.device).err().expect("refused").to_string();
        assert!(
            e.contains(
                "`131072` (128KiB) is more than one cache segment, device.segment_size = \
                 `65536` (64KiB),"
            ),
            "{e}"
        );
    }

    #[test]
    fn a_smaller_segment_takes_a_read_ahead_that_fits_it() {
        // wd800jd reads ahead a whole 512 KiB segment; shrinking the segment alone shrinks the
        // preset's read-ahead with it rather than being refused.
        let p = hdd(&["device.preset=wd800jd", "device.segment_size=64KiB"]);
        assert_eq!(p.cache_segment_sectors, 128);
        assert_eq!(p.readahead_max_sectors, 128);
        assert_eq!(refused_key(&["device.segment_size=4KiB"]), None);
        let p = hdd(&[
            "device.preset=wd800jd",
            "device.segment_size=64KiB",
            "device.drive_readahead=32KiB",
        ]);
        assert_eq!(p.readahead_max_sectors, 64);
    }
}
