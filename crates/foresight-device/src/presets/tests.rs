//! The presets are valid, match their sources, and every device keeps the breakdown contract.

use super::*;
use crate::raid0::Raid0;
use crate::testutil::{drive, drive_serial, Arrival};
use crate::Op;
use foresight_core::{Rng, SECTOR_BYTES};
use proptest::prelude::*;

#[test]
fn names_list_every_preset_and_all_build() {
    assert_eq!(NAMES.len(), PRESETS.len());
    for (n, p) in NAMES.iter().zip(PRESETS) {
        assert_eq!(*n, p.name);
        let spec = preset(n).unwrap();
        spec.validate().unwrap_or_else(|e| panic!("{n}: {e}"));
        let dev = build(&spec);
        assert_eq!(dev.capacity(), spec.capacity());
        assert!(preset_source(n).is_some());
    }
    assert!(preset("no-such-drive").is_none());
}

#[test]
fn capacities_match_the_sources() {
    let sectors = |name: &str| preset(name).unwrap().capacity().0 / SECTOR_BYTES;
    for (name, blocks) in [
        ("cheetah-15k5", 286_749_487u64),
        ("atlas-10k", 17_938_986),
        ("ibm-18es", 17_916_240),
        ("cheetah-4lp", 8_887_200),
        ("wd800jd", 156_301_488),
        ("st6000nm0024", 11_721_045_168),
        ("ssd-850evo", 1_953_525_168),
    ] {
        let got = sectors(name);
        let err = (got as f64 - blocks as f64).abs() / blocks as f64;
        assert!(
            err < 0.002,
            "{name}: {got} sectors vs {blocks} ({:.3}%)",
            100.0 * err
        );
    }
}

#[test]
fn infos_are_computed_from_the_models_and_serialize() {
    let infos = preset_infos();
    assert_eq!(infos.len(), NAMES.len());
    for i in &infos {
        eprintln!(
            "{:<13} {} rpm {:>7?} avg seek {:>6.3?} ms media {:>6.1}..{:>6.1} MiB/s capacity {:>15} B",
            i.name, i.kind, i.rpm, i.avg_seek_ms, i.media_mib_s_min, i.media_mib_s_max, i.capacity_bytes
        );
        assert!(i.media_mib_s_max >= i.media_mib_s_min && i.media_mib_s_min > 0.0);
    }
    let c = infos.iter().find(|i| i.name == "cheetah-15k5").unwrap();
    assert_eq!(c.rpm, Some(15_020.0));
    let seek_ms = |i: &PresetInfo| i.avg_seek_ms.expect("an HDD seeks");
    assert!((seek_ms(c) - 3.795).abs() < 0.03, "{:?}", c.avg_seek_ms);
    // 1,200 sectors per revolution at 15,020 rpm.
    assert!((c.media_mib_s_max - 1200.0 * 512.0 * 15_020.0 / 60.0 / 1_048_576.0).abs() < 1e-9);
    let wd = infos.iter().find(|i| i.name == "wd800jd").unwrap();
    assert!((seek_ms(wd) - 8.9).abs() < 0.09);
    let st = infos.iter().find(|i| i.name == "st6000nm0024").unwrap();
    assert!((seek_ms(st) - 8.5).abs() < 0.085);
    // An SSD has neither a spindle nor seeks: no figure, rather than a 0 that reads as one.
    let ssd = infos.iter().find(|i| i.name == "ssd-850evo").unwrap();
    assert_eq!((ssd.rpm, ssd.avg_seek_ms), (None, None));
    let json = serde_json::to_string(&infos).unwrap();
    assert!(json.contains("\"rpm\":null,\"avg_seek_ms\":null"), "{json}");
    assert!(json.contains("\"name\":\"ssd-850evo\"") && json.contains("\"kind\":\"hdd\""));
}

/// Back-to-back 1 MiB reads at the outer edge: the sustained rate each HDD preset delivers.
fn sustained_mb_s(p: &HddParams) -> f64 {
    let mut d = Hdd::new(p.clone());
    let n = 100u64;
    let reqs: Vec<(Op, u64, u32)> = (0..n).map(|i| (Op::Read, i * 2048, 2048)).collect();
    let res = drive_serial(&mut d, &reqs);
    (n * (1 << 20)) as f64 / res.last().unwrap().1.at.as_secs_f64() / 1e6
}

#[test]
fn sustained_rates_match_the_datasheets() {
    for name in NAMES {
        if let Some(DeviceSpec::Hdd(p)) = preset(name) {
            let s = sustained_mb_s(&p);
            eprintln!(
                "{name:<13} sustained outer {s:>6.1} MB/s = {:.1}% of raw {:.1} MB/s",
                100.0 * s * 1e6 / p.media_rate_max().bytes_per_s,
                p.media_rate_max().bytes_per_s / 1e6
            );
        }
    }
    let Some(DeviceSpec::Hdd(wd)) = preset("wd800jd") else {
        panic!()
    };
    let s = sustained_mb_s(&wd);
    assert!((s - 58.0).abs() < 1.0, "wd800jd {s} MB/s");
    let Some(DeviceSpec::Hdd(st)) = preset("st6000nm0024") else {
        panic!()
    };
    let s = sustained_mb_s(&st);
    assert!((s - 216.0).abs() < 3.0, "st6000nm0024 {s} MB/s");
}

#[test]
fn ssd_850evo_matches_its_datasheet_iops() {
    let spec = preset("ssd-850evo").unwrap();
    let cap = spec.capacity().0 / SECTOR_BYTES;
    let mut rng = Rng::new(3);
    // Depth 32: keep the queue full.
    let mut d = build(&spec);
    let reqs: Vec<Arrival> = (0..20_000)
        .map(|_| Arrival::at(0, Op::Read, rng.below(cap / 8) * 8, 8))
        .collect();
    let res = drive(d.as_mut(), &reqs);
    let qd32 = reqs.len() as f64 / res.last().unwrap().1.at.as_secs_f64();
    // Depth 1.
    let mut d = build(&spec);
    let serial: Vec<(Op, u64, u32)> = (0..1000)
        .map(|_| (Op::Read, rng.below(cap / 8) * 8, 8))
        .collect();
    let res = drive_serial(d.as_mut(), &serial);
    let qd1 = serial.len() as f64 / res.last().unwrap().1.at.as_secs_f64();
    eprintln!("ssd-850evo 4 KiB random read: {qd1:.0} IOPS at QD1, {qd32:.0} IOPS at QD32");
    assert!((90_000.0..=100_000.0).contains(&qd32), "{qd32}");
    assert!((9_500.0..=10_500.0).contains(&qd1), "{qd1}");
}

/// A random mix of sequential runs, random jumps, reads and writes, with bursts that fill queues.
fn arrivals(seed: u64, count: usize, cap_sectors: u64) -> Vec<Arrival> {
    let mut rng = Rng::new(seed);
    let mut t = 0u64;
    let mut next_seq = 0u64;
    (0..count)
        .map(|_| {
            t += match rng.below(4) {
                0 => 0,
                1 => rng.below(200_000),
                _ => rng.below(8_000_000),
            };
            let sectors = 1 + rng.below(2048) as u32;
            let lba = if rng.below(3) == 0 {
                next_seq
            } else {
                rng.below(cap_sectors - 4096)
            };
            let lba = lba.min(cap_sectors - u64::from(sectors));
            next_seq = lba + u64::from(sectors);
            let op = if rng.below(5) == 0 {
                Op::Write
            } else {
                Op::Read
            };
            Arrival::at(t, op, lba, sectors)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// `drive` checks that every completion's breakdown adds up to its latency.
    #[test]
    fn breakdowns_add_up_on_every_preset(seed in any::<u64>()) {
        for name in NAMES {
            let spec = preset(name).unwrap();
            let mut dev = build(&spec);
            let cap = dev.capacity().0 / SECTOR_BYTES;
            let reqs = arrivals(seed, 300, cap);
            let res = drive(dev.as_mut(), &reqs);
            prop_assert_eq!(res.len(), reqs.len());
        }
    }

    #[test]
    fn breakdowns_add_up_on_a_five_disk_raid0(seed in any::<u64>(), strip_kib in 1u64..512) {
        let members: Vec<Box<dyn Device>> =
            (0..5).map(|_| build(&preset("cheetah-15k5").unwrap())).collect();
        let mut array = Raid0::new(members, strip_kib << 10);
        let cap = array.capacity().0 / SECTOR_BYTES;
        let reqs = arrivals(seed, 300, cap);
        let res = drive(&mut array, &reqs);
        prop_assert_eq!(res.len(), reqs.len());
        for (_, c) in &res {
            prop_assert!(c.parts >= 1 && c.parts <= 5);
        }
    }
}

/// A preset's seek curve is remembered after its first calibration; what comes back the second time
/// is the curve a fresh calibration gives, and another drive's numbers get their own curve.
#[test]
fn a_remembered_seek_curve_is_the_one_calibrated_afresh() {
    let fresh = SeekCurve::from_datasheet(0.5525, 3.795, 6.927, 72_170).expect("calibrates");
    assert_eq!(seek(0.5525, 3.795, 6.927, 72_170), fresh);
    assert_eq!(seek(0.5525, 3.795, 6.927, 72_170), fresh);
    let other = SeekCurve::from_datasheet(0.2, 3.5, 6.927, 72_170).expect("calibrates");
    assert_ne!(other, fresh);
    assert_eq!(seek(0.2, 3.5, 6.927, 72_170), other);
}
