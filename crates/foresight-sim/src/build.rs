//! Builds the simulated volume from `[device]`: a preset disk or SSD, or a RAID-0 of preset disks.

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

fn spec(cfg: &DeviceConfig) -> Result<DeviceSpec, ConfigError> {
    let mut spec = presets::preset(&cfg.preset).ok_or_else(|| unknown_preset(&cfg.preset))?;
    let kind_ok = matches!(
        (&spec, cfg.kind),
        (DeviceSpec::Hdd(_), DeviceKind::Hdd | DeviceKind::Raid0)
            | (DeviceSpec::Ssd(_), DeviceKind::Ssd)
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
    Ok(spec)
}

/// Builds the device the config describes.
pub fn build_device(cfg: &DeviceConfig) -> Result<Box<dyn Device>, ConfigError> {
    let spec = spec(cfg)?;
    Ok(match cfg.kind {
        DeviceKind::Hdd | DeviceKind::Ssd => presets::build(&spec),
        DeviceKind::Raid0 => {
            let members = (0..cfg.disks).map(|_| presets::build(&spec)).collect();
            Box::new(foresight_device::raid0::Raid0::new(members, cfg.strip.0))
        }
    })
}

/// The striping the layout should know about.
pub fn striping(cfg: &DeviceConfig) -> Option<Striping> {
    (cfg.kind == DeviceKind::Raid0).then_some(Striping {
        disks: cfg.disks,
        strip_bytes: cfg.strip.0,
    })
}

/// A short description for reports, e.g. `raid0 5 x cheetah-15k5, 128KiB strips`.
pub fn describe(cfg: &DeviceConfig) -> String {
    match cfg.kind {
        DeviceKind::Raid0 => format!("raid0 {} x {}, {} strips", cfg.disks, cfg.preset, cfg.strip),
        _ => cfg.preset.clone(),
    }
}
