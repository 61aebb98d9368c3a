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
use foresight_device::Device;
use foresight_policy::layout::Striping;

use crate::config::{ConfigError, DeviceConfig, DeviceKind};

fn unknown_preset(name: &str) -> ConfigError {
    ConfigError::Key {
        key: "device.preset".into(),
        message: format!(
            "`{name}` is not a preset; choose one of: {} (see `foresight devices`)",
            presets::preset_names().join(", ")
        ),
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
        for w in &drive.warnings {
            eprintln!("warning: {w}");
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
        return Err(ConfigError::Key {
            key: "device.preset".into(),
            message: format!(
                "`{}` is not a device of kind `{:?}`; pick a matching preset or change device.kind",
                cfg.preset, cfg.kind
            )
            .to_lowercase(),
        });
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
        let segment_bytes = ByteLen(u64::from(p.cache_segment_sectors) * 512);
        let segment_from = if cfg.segment_size.is_some() {
            "device.segment_size"
        } else {
            "the preset's segment size"
        };
        for (key, value, field) in [
            (
                "device.drive_readahead",
                cfg.drive_readahead,
                &mut p.readahead_max_sectors,
            ),
            (
                "device.drive_readahead_min",
                cfg.drive_readahead_min,
                &mut p.readahead_min_sectors,
            ),
        ] {
            if let Some(b) = value {
                if b.0 > segment_bytes.0 {
                    return Err(ConfigError::Key {
                        key: key.into(),
                        message: format!(
                            "{b} does not fit in one cache segment ({segment_bytes}, \
                             {segment_from}), which the read-ahead fills; give at most \
                             {segment_bytes} or a larger device.segment_size"
                        ),
                    });
                }
                *field = (b.0 / 512) as u32;
            }
        }
        p.validate().map_err(|e| ConfigError::Key {
            key: "device".into(),
            message: e.to_string(),
        })?;
    }
    Ok(spec)
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

/// The device figures `policy.infill_max = "auto"` needs (paper 003_eb9cef22f2823582.txt, Fig. 1):
/// the positioning time against distance, as `(distance_bytes, ns)` points at doubling distances
/// from 4 KiB to the whole disk (the seek curve at the distance's cylinder count, plus half a
/// revolution of rotational wait), and the outer-zone media rate in bytes per second, where files
/// placed from the start of the volume live. An SSD has no positioning cost: `(vec![], 0)`.
pub fn positioning_figures(cfg: &DeviceConfig) -> Result<(Vec<(u64, u64)>, u64), ConfigError> {
    match spec(cfg)? {
        DeviceSpec::Ssd(_) => Ok((Vec::new(), 0)),
        DeviceSpec::Hdd(p) => {
            let capacity = p.capacity().0;
            let bytes_per_cyl = (capacity / u64::from(p.cylinders.max(1))).max(1);
            let half_turn_ns = p.rotation_period().as_nanos() as f64 / 2.0;
            let mut curve = Vec::new();
            let mut d = 4096u64;
            while d <= capacity {
                let cyl = (d / bytes_per_cyl).min(u64::from(p.cylinders - 1)) as u32;
                let ns = p.seek.seek_ms(cyl) * 1e6 + half_turn_ns;
                curve.push((d, ns as u64));
                d *= 2;
            }
            Ok((curve, p.media_rate_max().bytes_per_s as u64))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{apply_set, parse_config_text, SimConfig};

    fn device(sets: &[&str]) -> Result<DeviceSpec, ConfigError> {
        let mut t = parse_config_text("", "test.toml")?;
        for s in sets {
            apply_set(&mut t, s)?;
        }
        spec(&SimConfig::from_table(t, None)?.device)
    }

    fn hdd(sets: &[&str]) -> foresight_device::hdd::HddParams {
        match device(sets).unwrap_or_else(|e| panic!("{sets:?}: {e}")) {
            DeviceSpec::Hdd(p) => p,
            DeviceSpec::Ssd(_) => panic!("{sets:?}: not a disk"),
        }
    }

    #[test]
    fn a_smaller_segment_takes_a_read_ahead_that_fits_it() {
        // wd800jd reads ahead a whole 512 KiB segment; the override used to be refused with the
        // model's field name instead of a config key.
        let p = hdd(&["device.preset=wd800jd", "device.segment_size=64KiB"]);
        assert_eq!(p.cache_segment_sectors, 128);
        assert_eq!(p.readahead_max_sectors, 128);
        let p = hdd(&[
            "device.preset=wd800jd",
            "device.segment_size=64KiB",
            "device.drive_readahead=32KiB",
        ]);
        assert_eq!(p.readahead_max_sectors, 64);
        // A read-ahead given explicitly that cannot fit is refused, naming both keys.
        for (sets, key) in [
            (
                &["device.segment_size=64KiB", "device.drive_readahead=1MiB"][..],
                "device.drive_readahead",
            ),
            (
                &["device.drive_readahead_min=1MiB"][..],
                "device.drive_readahead_min",
            ),
        ] {
            let e = device(sets).unwrap_err().to_string();
            assert!(e.contains(key) && e.contains("device.segment_size"), "{e}");
        }
    }

    #[test]
    fn a_drive_cache_key_on_an_ssd_is_named() {
        let e = device(&[
            "device.kind=ssd",
            "device.preset=ssd-850evo",
            "device.drive_readahead=0",
        ])
        .unwrap_err()
        .to_string();
        assert!(e.contains("device.drive_readahead"), "{e}");
    }
}
