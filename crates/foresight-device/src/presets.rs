//! Named devices: real drives reduced to a handful of numbers each, with their sources.
//!
//! The four DiskSim drives take their numbers from the DiskSim 4.0 validation files in
//! `../shared/data/disksim/` (`NAME.model`: rpm, cylinders, surfaces, zones, skews, head switch, write
//! settle; `NAME.seek`: the measured seek curve; `NAME.diskspecs`: cache and overheads). Each zone table
//! is reduced to a [`ZoneProgression`]: the outer and inner sectors per track and the number of
//! distinct zones are read off the file, the skews are the file's as fractions of a revolution, and the
//! shape exponent was fitted (by bisection, offline) so that the capacity matches the file's
//! `Block count` within 0.1%. The seek curve is the three-number calibration of
//! [`SeekCurve::from_datasheet`] with the file's single-cylinder time, its `Full strobe seek time`
//! (or the curve extrapolated to the last cylinder where the model gives none), and the mean over
//! uniformly random cylinder pairs of the file's measured curve (computed offline with the same
//! interpolation as [`SeekCurve::Points`]); each curve is calibrated once in a process and
//! remembered, as every run builds its drives anew. The cache behaviour follows the `.diskspecs` files:
//! read-ahead scheme (`Buffer continuous read`), write-back level (`Fast write level`), write
//! segments, read hits on written data, `Read any free blocks`, `Read-ahead over requested` and
//! `Combine seq writes`. `Allow almost read hits` (0 in all four files) is not followed: every
//! preset lets a read that its running read-ahead will reach join it ([`AlmostReadHits::Ahead`]),
//! so that one sequential stream runs at the media rate, as the imports do by default (see
//! [`crate::disksim`]).
//!
//! These presets are the compact form, so that the binary needs no data files; [`crate::disksim`]
//! imports the files themselves (`device.disksim`). A test (`disksim/tests.rs`,
//! `presets_agree_with_the_imports`) checks each preset against its import: same rpm, geometry,
//! switch times, overheads and cache behaviour; capacity within 0.2% of the files' `Block count`;
//! mean seek within 1%; outer and inner media rates within 5%. One deliberate difference: the
//! Cheetah 15K.5 preset lets read-ahead run past a request as large as its segment (for paper 000's
//! large sequential requests), where DiskSim reads nothing ahead after it.
//!
//! The interface rate is the drive's nominal interface, not DiskSim's `Bulk sector transfer time`,
//! which in these files describes the validation host's path (0.015 to 0.106 ms per sector, i.e. 5 to
//! 34 MB/s) and would make every sequential workload bus-bound.
//!
//! The other presets come from datasheets and the papers in `../shared/papers/`; where a number is an
//! assumption (the datasheet does not give it), the preset's documentation says so.

use std::sync::{Mutex, PoisonError};

use foresight_core::{ByteLen, Duration};

use crate::error::DeviceError;
use crate::hdd::geometry::{LayoutRules, ZoneProgression};
use crate::hdd::mechanics::{CommandOverheads, SeekCurve};
use crate::hdd::{AlmostReadHits, Hdd, HddParams, QueuePolicy, ReadAheadMode, WriteCache};
use crate::ssd::{Ssd, SsdParams};
use crate::Device;

/// A device description that [`build`] turns into a model.
#[derive(Clone, Debug, PartialEq)]
pub enum DeviceSpec {
    /// A hard disk.
    Hdd(HddParams),
    /// A flash SSD.
    Ssd(SsdParams),
}

impl DeviceSpec {
    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), DeviceError> {
        match self {
            DeviceSpec::Hdd(p) => p.validate(),
            DeviceSpec::Ssd(p) => p.validate(),
        }
    }

    /// `"hdd"` or `"ssd"`.
    pub fn kind(&self) -> &'static str {
        match self {
            DeviceSpec::Hdd(_) => "hdd",
            DeviceSpec::Ssd(_) => "ssd",
        }
    }

    /// Addressable bytes.
    pub fn capacity(&self) -> ByteLen {
        match self {
            DeviceSpec::Hdd(p) => p.capacity(),
            DeviceSpec::Ssd(p) => p.capacity,
        }
    }

    /// The figures `directed`'s `infill_max = "auto"` weighs a gap with (paper
    /// 003_eb9cef22f2823582.txt, Fig. 1): the positioning time against distance, as
    /// `(distance_bytes, ns)` points at doubling distances from 4 KiB to the whole disk (the seek
    /// curve at the distance's cylinder count, plus half a revolution of rotational wait), and
    /// the outer-zone media rate in bytes per second, where files placed from the start of the
    /// volume live. An SSD has no positioning cost: `(vec![], 0)`.
    pub fn positioning_figures(&self) -> (Vec<(u64, u64)>, u64) {
        match self {
            DeviceSpec::Ssd(_) => (Vec::new(), 0),
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
                (curve, p.media_rate_max().bytes_per_s as u64)
            }
        }
    }
}

/// What `foresight devices` prints about a preset; every number is computed from the model.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct PresetInfo {
    /// The preset's name.
    pub name: &'static str,
    /// `"hdd"` or `"ssd"`.
    pub kind: &'static str,
    /// Spindle speed; `None` (JSON `null`) for an SSD, which has no spindle.
    pub rpm: Option<f64>,
    /// Mean seek over uniformly random cylinder pairs, ms; `None` (JSON `null`) for an SSD,
    /// which does not seek.
    pub avg_seek_ms: Option<f64>,
    /// Outer-zone raw media rate (an SSD's read bandwidth), MiB/s.
    pub media_mib_s_max: f64,
    /// Inner-zone raw media rate (an SSD's read bandwidth), MiB/s.
    pub media_mib_s_min: f64,
    /// Addressable bytes.
    pub capacity_bytes: u64,
    /// Where the numbers come from.
    pub source: &'static str,
}

struct PresetDef {
    name: &'static str,
    source: &'static str,
    make: fn() -> DeviceSpec,
}

const PRESETS: &[PresetDef] = &[
    PresetDef {
        name: "cheetah-15k5",
        source: CHEETAH_15K5_SOURCE,
        make: || DeviceSpec::Hdd(cheetah_15k5()),
    },
    PresetDef {
        name: "cheetah-15k4",
        source: CHEETAH_15K4_SOURCE,
        make: || DeviceSpec::Hdd(cheetah_15k4()),
    },
    PresetDef {
        name: "atlas-10k",
        source: ATLAS_10K_SOURCE,
        make: || DeviceSpec::Hdd(atlas_10k()),
    },
    PresetDef {
        name: "ibm-18es",
        source: IBM_18ES_SOURCE,
        make: || DeviceSpec::Hdd(ibm_18es()),
    },
    PresetDef {
        name: "cheetah-4lp",
        source: CHEETAH_4LP_SOURCE,
        make: || DeviceSpec::Hdd(cheetah_4lp()),
    },
    PresetDef {
        name: "wd800jd",
        source: WD800JD_SOURCE,
        make: || DeviceSpec::Hdd(wd800jd()),
    },
    PresetDef {
        name: "st6000nm0024",
        source: ST6000NM0024_SOURCE,
        make: || DeviceSpec::Hdd(st6000nm0024()),
    },
    PresetDef {
        name: "ssd-850evo",
        source: SSD_850EVO_SOURCE,
        make: || DeviceSpec::Ssd(ssd_850evo()),
    },
];

/// The names of [`PRESETS`], in its order, taken from it so that the list cannot fall out of
/// step with the presets.
const NAMES: &[&str] = &{
    let mut names = [""; PRESETS.len()];
    let mut i = 0;
    while i < names.len() {
        names[i] = PRESETS[i].name;
        i += 1;
    }
    names
};

/// The names [`preset`] knows, in listing order.
pub fn preset_names() -> &'static [&'static str] {
    NAMES
}

/// The named preset, or `None` for an unknown name.
pub fn preset(name: &str) -> Option<DeviceSpec> {
    PRESETS.iter().find(|p| p.name == name).map(|p| (p.make)())
}

/// Where the named preset's numbers come from.
pub fn preset_source(name: &str) -> Option<&'static str> {
    PRESETS.iter().find(|p| p.name == name).map(|p| p.source)
}

/// Builds the model a spec describes; panics with the validation message if the spec is invalid (the
/// presets never are). Use [`try_build`] for specs edited by a user.
pub fn build(spec: &DeviceSpec) -> Box<dyn Device> {
    match try_build(spec) {
        Ok(d) => d,
        Err(e) => panic!("invalid device spec: {e}"),
    }
}

/// Builds the model a spec describes, or says which parameter is wrong.
pub fn try_build(spec: &DeviceSpec) -> Result<Box<dyn Device>, DeviceError> {
    Ok(match spec {
        DeviceSpec::Hdd(p) => Box::new(Hdd::try_new(p.clone())?),
        DeviceSpec::Ssd(p) => Box::new(Ssd::try_new(p.clone())?),
    })
}

/// One [`PresetInfo`] per preset, computed from the models.
pub fn preset_infos() -> Vec<PresetInfo> {
    PRESETS
        .iter()
        .map(|p| {
            let spec = (p.make)();
            let capacity_bytes = spec.capacity().0;
            match spec {
                DeviceSpec::Hdd(h) => PresetInfo {
                    name: p.name,
                    kind: "hdd",
                    rpm: Some(h.rpm),
                    avg_seek_ms: Some(h.avg_seek().as_millis_f64()),
                    media_mib_s_max: h.media_rate_max().as_mib_s(),
                    media_mib_s_min: h.media_rate_min().as_mib_s(),
                    capacity_bytes,
                    source: p.source,
                },
                DeviceSpec::Ssd(s) => {
                    let mib_s = s.read_bytes_per_s / (1u64 << 20) as f64;
                    PresetInfo {
                        name: p.name,
                        kind: "ssd",
                        rpm: None,
                        avg_seek_ms: None,
                        media_mib_s_max: mib_s,
                        media_mib_s_min: mib_s,
                        capacity_bytes,
                        source: p.source,
                    }
                }
            }
        })
        .collect()
}

fn ms(x: f64) -> Duration {
    Duration::from_millis_f64(x)
}

/// The presets' calibrated seek curves, by datasheet numbers (as bits) and cylinders. Calibrating
/// sweeps every cylinder, and a simulation builds its drives anew for each run, so a reproduction's
/// hundreds of runs calibrated the same few curves again and again (about 3% of the host's time in
/// its `striping` section). The calibration is a function of these numbers alone, so a remembered
/// curve is the one it would compute again.
static SEEK_CURVES: Mutex<Vec<SeekEntry>> = Mutex::new(Vec::new());

/// Datasheet numbers `[single, avg, full]` as bits, cylinders, and the curve calibrated from them.
type SeekEntry = ([u64; 3], u32, SeekCurve);

/// Most curves `SEEK_CURVES` keeps: more than the presets' distinct ones; past it, curves are
/// calibrated each time.
const SEEK_CURVES_MAX: usize = 32;

fn seek(single_ms: f64, avg_ms: f64, full_ms: f64, cylinders: u32) -> SeekCurve {
    let key = [single_ms.to_bits(), avg_ms.to_bits(), full_ms.to_bits()];
    // A panic elsewhere while the lock was held leaves the list whole: entries are pushed complete.
    let mut known = SEEK_CURVES.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, _, curve)) = known.iter().find(|(k, c, _)| *k == key && *c == cylinders) {
        return curve.clone();
    }
    let curve = SeekCurve::from_datasheet(single_ms, avg_ms, full_ms, cylinders)
        .unwrap_or_else(|e| panic!("preset seek calibration: {e}"));
    if known.len() < SEEK_CURVES_MAX {
        known.push((key, cylinders, curve.clone()));
    }
    curve
}

/// Overheads in the order of DiskSim's `.diskspecs`: read hit after read, after write; read miss after
/// read, after write; write hit after read, after write; write miss after read, after write (ms).
fn overheads(v: [f64; 8]) -> CommandOverheads {
    CommandOverheads {
        read_hit_after_read: ms(v[0]),
        read_hit_after_write: ms(v[1]),
        read_miss_after_read: ms(v[2]),
        read_miss_after_write: ms(v[3]),
        write_hit_after_read: ms(v[4]),
        write_hit_after_write: ms(v[5]),
        write_miss_after_read: ms(v[6]),
        write_miss_after_write: ms(v[7]),
    }
}

const CHEETAH_15K5_SOURCE: &str = "DiskSim 4.0 specification of the Seagate Cheetah 15K.5 ST3146855FC \
(shared/data/disksim/Seagate-Cheetah15k5.{model,diskspecs,seeks,-skews.layout}); interface: FC 4 Gb/s";
const ATLAS_10K_SOURCE: &str = "DiskSim 4.0 validated model of the Quantum Atlas 10K \
(shared/data/disksim/atlas10k.{model,diskspecs,seek}); interface: Ultra2 SCSI 80 MB/s (assumed)";
const IBM_18ES_SOURCE: &str = "DiskSim 4.0 validated model of the IBM Ultrastar 18ES \
(shared/data/disksim/ibm18es.{model,diskspecs,seek}); interface: Ultra2 SCSI 80 MB/s (assumed)";
const CHEETAH_4LP_SOURCE: &str = "DiskSim 4.0 validated model of the Seagate Cheetah 4LP \
(shared/data/disksim/cheetah4LP.{model,diskspecs,seek}); interface: Ultra SCSI 40 MB/s (assumed)";
const WD800JD_SOURCE: &str = "WD Caviar SE WD800JD as used in paper 001 (section 5: 7,200 rpm, 8.9 ms \
average seek, 55-60 MB/s measured, SATA 150 MB/s); 8 MB cache from WD's product line; 2.0/21.0 ms \
track-to-track/full-stroke seek, layout and cache split assumed (typical of 7,200 rpm desktop drives, not \
checked against a datasheet)";
const ST6000NM0024_SOURCE: &str = "Seagate Enterprise Capacity 3.5 HDD v4 ST6000NM0024 datasheet \
(7,200 rpm, 6 TB, 128 MB cache, 216 MB/s max sustained, 8.5/9.5 ms average read/write seek, SATA 6 Gb/s, \
NCQ 32), the drive of paper 004 section 7; layout, single/full seek and overheads assumed";
const SSD_850EVO_SOURCE: &str =
    "Samsung 850 EVO 1 TB datasheet (540/520 MB/s sequential read/write, \
4 KiB random read 10K IOPS at QD1 and 98K at QD32, random write 40K at QD1), the SSD of paper 004 \
section 7";

/// Seagate Cheetah 15K.5 (ST3146855FC, 146 GB, 15,000 rpm, Fibre Channel).
///
/// From `Seagate-Cheetah15k5.model`: 15,020 rpm (measured), 72,170 cylinders, 4 surfaces, head switch
/// 0.001 ms, no write settle. From `Seagate-Cheetah15k5-skews.layout`: 14 distinct track sizes from
/// 1,200 (outer) to 720 (inner) sectors; cylinder-to-cylinder skew 0.1417 of a revolution (the
/// layout's angle step between consecutive cylinders, which just covers the 0.5525 ms one-cylinder
/// seek); the track skew is the smallest that covers the 0.001 ms head switch (one sector). The layout
/// is serpentine; this model numbers cylinder-major, and the layout's 0.19-revolution surface-switch
/// skew is not represented. Shape exponent 1.36 matches the 286,749,487-block capacity. Seek
/// (`.seeks`): 0.5525 ms single cylinder, 3.795 ms mean over random pairs, 6.927 ms full stroke (the
/// curve extrapolated to cylinder 72,169). Cache (`.diskspecs`): 32 segments of 1,200 sectors,
/// `Buffer continuous read = 3` (read ahead until the segment is full), overheads as listed there;
/// queue of 8 (`Max queue length`), scheduled C-LOOK here. Interface: 4 Gb/s Fibre Channel (400 MB/s).
pub fn cheetah_15k5() -> HddParams {
    let cylinders = 72_170;
    let rev_ns = 60e9 / 15_020.0;
    HddParams {
        rpm: 15_020.0,
        cylinders,
        surfaces: 4,
        zones: ZoneProgression {
            zone_count: 14,
            spt_outer: 1_200,
            spt_inner: 720,
            shape_exponent: 1.36,
            // One sector's worth at the outer zone covers the 1 us head switch.
            track_skew_rev: 1_000.0 / rev_ns,
            cyl_skew_rev: 0.1417,
        }
        .zones(cylinders),
        seek: seek(0.5525, 3.795, 6.927, cylinders),
        head_switch: ms(0.001),
        write_settle: Duration::ZERO,
        overhead: overheads([0.162, 0.158, 0.0, 0.105657, 0.276, 0.456, 0.62867, 0.22798]),
        cache_segments: 32,
        cache_segment_sectors: 1_200,
        readahead_max_sectors: 1_200,
        readahead_min_sectors: 0,
        cache_enabled: true,
        readahead_mode: ReadAheadMode::Budget,
        write_cache: WriteCache::Full,
        write_segments: 11,
        separate_write_segment: false,
        read_hits_on_write_data: true,
        combine_sequential_writes: true,
        read_free_blocks: false,
        readahead_over_request: true,
        immediate_read: false,
        almost_read_hits: AlmostReadHits::Ahead,
        bus_bytes_per_s: 400e6,
        queue_depth: 8,
        queue_policy: QueuePolicy::CLook,
        spares: Vec::new(),
        layout: LayoutRules::default(),
    }
}

const CHEETAH_15K4_SOURCE: &str = "Seagate Cheetah 15K.4 ST373454LC (73.4 GB, 15,000 rpm, Ultra320 SCSI), \
the disk of paper 000 section 5.1: capacity 143,374,744 sectors, 96 to 58 MB/s sustained, 3.5 ms average read \
seek, 0.2 ms track-to-track, 8 MB cache from its datasheet; full-stroke seek, overheads, segment layout and \
skews derived from the Cheetah 15K.5 DiskSim files (shared/data/disksim), the same family one generation on";

/// Seagate Cheetah 15K.4 (ST373454LC, 73.4 GB, 15,000 rpm, Ultra320 SCSI): the array member of
/// paper 000 (section 5.1, five of them in RAID-0).
///
/// Datasheet figures: 143,374,744 sectors, 96 MB/s sustained at the outer edge and 58 MB/s at the
/// inner (so 750 and 453 sectors per track at 250 revolutions a second), 3.5 ms average read seek,
/// 0.2 ms track-to-track, 8 MB cache, Ultra320 (320 MB/s). Derived from the Cheetah 15K.5 files
/// (same family, next generation): 4 surfaces, the full-stroke seek (6.9 ms), the command overheads,
/// cylinder skew covering the one-cylinder seek, a linear fall of track size over the zones, and
/// the cache split as 16 segments of 512 KiB reading ahead to the segment's end; cylinders follow
/// from the capacity.
pub fn cheetah_15k4() -> HddParams {
    let surfaces = 4u64;
    let mean_spt = (750.0 + 453.0) / 2.0;
    let cylinders = (143_374_744.0 / (surfaces as f64 * mean_spt)).round() as u32;
    let rev_ns = 60e9 / 15_000.0;
    HddParams {
        rpm: 15_000.0,
        cylinders,
        surfaces: surfaces as u32,
        zones: ZoneProgression {
            zone_count: 14,
            spt_outer: 750,
            spt_inner: 453,
            shape_exponent: 1.0,
            track_skew_rev: 1_000.0 / rev_ns,
            cyl_skew_rev: 0.2e6 / rev_ns + 0.02,
        }
        .zones(cylinders),
        seek: seek(0.2, 3.5, 6.927, cylinders),
        ..cheetah_15k5_family(cylinders)
    }
}

/// The Cheetah 15K.5 file's cache, overhead and interface settings, shared by the 15K.4 preset,
/// which has no DiskSim description of its own. Geometry and seek fields are placeholders the caller
/// replaces.
fn cheetah_15k5_family(cylinders: u32) -> HddParams {
    HddParams {
        cylinders,
        cache_segments: 16,
        cache_segment_sectors: 1_024,
        readahead_max_sectors: 1_024,
        readahead_min_sectors: 0,
        bus_bytes_per_s: 320e6,
        ..cheetah_15k5()
    }
}

/// Quantum Atlas 10K (9 GB, 10,025 rpm).
///
/// From `atlas10k.model`: 10,025 rpm, 10,042 cylinders, 6 surfaces, 13 distinct track sizes from 334 to
/// 229 sectors over 24 bands, track skew 63/334 and cylinder skew 113/334 of a revolution (outer zone;
/// the inner zones keep about the same fractions), head switch 0.176 ms, write settle 0.487 ms. Shape
/// exponent 2.01 matches the 17,938,986-block capacity. Seek (`atlas10k.seek`): 1.245 ms single
/// cylinder, 5.599 ms mean over random pairs, 10.828 ms full strobe. Cache (`atlas10k.diskspecs`):
/// 10 segments of 374 sectors, read-ahead up to 354 sectors, zero-latency reads (`Immediate buffer
/// read = 1`), overheads as listed, no queue.
pub fn atlas_10k() -> HddParams {
    let cylinders = 10_042;
    HddParams {
        rpm: 10_025.0,
        cylinders,
        surfaces: 6,
        zones: ZoneProgression {
            zone_count: 13,
            spt_outer: 334,
            spt_inner: 229,
            shape_exponent: 2.01,
            track_skew_rev: 63.0 / 334.0,
            cyl_skew_rev: 113.0 / 334.0,
        }
        .zones(cylinders),
        seek: seek(1.245, 5.599, 10.828, cylinders),
        head_switch: ms(0.176),
        write_settle: ms(0.487),
        overhead: overheads([0.184, 0.184, 0.0, 0.0, 0.186, 0.189, 0.34492, 0.49673]),
        cache_segments: 10,
        cache_segment_sectors: 374,
        readahead_max_sectors: 354,
        readahead_min_sectors: 0,
        cache_enabled: true,
        readahead_mode: ReadAheadMode::TrackAhead,
        write_cache: WriteCache::Full,
        write_segments: 1,
        separate_write_segment: false,
        read_hits_on_write_data: true,
        combine_sequential_writes: true,
        read_free_blocks: true,
        readahead_over_request: true,
        immediate_read: true,
        almost_read_hits: AlmostReadHits::Ahead,
        bus_bytes_per_s: 80e6,
        queue_depth: 1,
        queue_policy: QueuePolicy::Fcfs,
        spares: Vec::new(),
        layout: LayoutRules::default(),
    }
}

/// IBM Ultrastar 18ES (18 GB, 7,200 rpm).
///
/// From `ibm18es.model`: 7,200 rpm, 11,474 cylinders, 5 surfaces, 11 distinct track sizes from 390 to
/// 247 sectors over 55 bands, track skew 58/390 and cylinder skew 101/390 of a revolution, head switch
/// 0.062 ms, write settle 0.126 ms. Shape exponent 0.82 matches the 17,916,240-block capacity. Seek
/// (`ibm18es.seek`): 1.062 ms single cylinder, 7.201 ms mean over random pairs, 12.742 ms full strobe.
/// Cache (`ibm18es.diskspecs`): 7 segments of 511 sectors, read-ahead up to 511, overheads as listed,
/// no queue.
pub fn ibm_18es() -> HddParams {
    let cylinders = 11_474;
    HddParams {
        rpm: 7_200.0,
        cylinders,
        surfaces: 5,
        zones: ZoneProgression {
            zone_count: 11,
            spt_outer: 390,
            spt_inner: 247,
            shape_exponent: 0.82,
            track_skew_rev: 58.0 / 390.0,
            cyl_skew_rev: 101.0 / 390.0,
        }
        .zones(cylinders),
        seek: seek(1.062, 7.201, 12.742, cylinders),
        head_switch: ms(0.062),
        write_settle: ms(0.126),
        overhead: overheads([
            0.082, 0.121, 0.25229, 0.42386, 0.083, 0.1852, 0.49386, 0.79329,
        ]),
        cache_segments: 7,
        cache_segment_sectors: 511,
        readahead_max_sectors: 511,
        readahead_min_sectors: 0,
        cache_enabled: true,
        readahead_mode: ReadAheadMode::Budget,
        write_cache: WriteCache::Full,
        write_segments: 1,
        separate_write_segment: true,
        read_hits_on_write_data: false,
        combine_sequential_writes: true,
        read_free_blocks: true,
        readahead_over_request: true,
        immediate_read: false,
        almost_read_hits: AlmostReadHits::Ahead,
        bus_bytes_per_s: 80e6,
        queue_depth: 1,
        queue_policy: QueuePolicy::Fcfs,
        spares: Vec::new(),
        layout: LayoutRules::default(),
    }
}

/// Seagate Cheetah 4LP (ST34501, 4.5 GB, 10,033 rpm).
///
/// From `cheetah4LP.model`: 10,033 rpm, 6,581 cylinders, 8 surfaces, 7 zones from 195 to 131 sectors
/// per track, track skew 22/195 and cylinder skew 37/195 of a revolution, head switch 0.195 ms, no write
/// settle. Shape exponent 1.56 matches the 8,887,200-block capacity. Seek (`cheetah4LP.seek`):
/// 0.636 ms single cylinder, 7.961 ms mean over random pairs, 16.107 ms full strobe. Cache
/// (`cheetah4LP.diskspecs`): 3 segments of 282 sectors, read-ahead up to 282, overheads as listed, no
/// queue.
pub fn cheetah_4lp() -> HddParams {
    let cylinders = 6_581;
    HddParams {
        rpm: 10_033.0,
        cylinders,
        surfaces: 8,
        zones: ZoneProgression {
            zone_count: 7,
            spt_outer: 195,
            spt_inner: 131,
            shape_exponent: 1.56,
            track_skew_rev: 22.0 / 195.0,
            cyl_skew_rev: 37.0 / 195.0,
        }
        .zones(cylinders),
        seek: seek(0.636, 7.961, 16.107, cylinders),
        head_switch: ms(0.195),
        write_settle: Duration::ZERO,
        overhead: overheads([
            0.068, 0.309, 0.60773, 0.56883, 0.474, 0.095, 0.43133, 0.53776,
        ]),
        cache_segments: 3,
        cache_segment_sectors: 282,
        readahead_max_sectors: 282,
        readahead_min_sectors: 0,
        cache_enabled: true,
        readahead_mode: ReadAheadMode::Budget,
        write_cache: WriteCache::Limited,
        write_segments: 1,
        separate_write_segment: false,
        read_hits_on_write_data: true,
        combine_sequential_writes: true,
        read_free_blocks: false,
        readahead_over_request: true,
        immediate_read: false,
        almost_read_hits: AlmostReadHits::Ahead,
        bus_bytes_per_s: 40e6,
        queue_depth: 1,
        queue_policy: QueuePolicy::Fcfs,
        spares: Vec::new(),
        layout: LayoutRules::default(),
    }
}

/// WD Caviar SE WD800JD (80 GB, 7,200 rpm, SATA 1.5 Gb/s, 8 MB cache), the drive of paper 001.
///
/// Paper 001 (section 5): 7,200 rpm, 8.9 ms average seek (manufacturer), about 55-60 MB/s measured at
/// the application, SATA at 150 MB/s; the Caviar SE line's 8 MB buffer. Assumed, typical of 7,200 rpm
/// desktop drives and not checked against a datasheet: 2.0 ms track-to-track and 21.0 ms full-stroke
/// seek, one platter with two surfaces (80 GB per platter),
/// 16 zones declining linearly to 55% of the outer track size, 0.6 ms head switch (track skew
/// 0.075 revolution), a cylinder skew covering the 2.0 ms one-cylinder seek, 16 segments of 512 KiB
/// reading ahead a whole segment, 0.1/0.2 ms hit/miss overheads, no command queue. The outer track
/// size (1,092 sectors) was chosen so that back-to-back 1 MiB reads at the outer edge run at 58 MB/s
/// in this model; the cylinder count makes the capacity 80 GB (156,301,488 sectors) within 0.1%.
pub fn wd800jd() -> HddParams {
    let cylinders = 92_322;
    let rev_ms = 60e3 / 7_200.0;
    HddParams {
        rpm: 7_200.0,
        cylinders,
        surfaces: 2,
        zones: ZoneProgression {
            zone_count: 16,
            spt_outer: 1_092,
            spt_inner: 601,
            shape_exponent: 1.0,
            track_skew_rev: 0.6 / rev_ms,
            cyl_skew_rev: 2.0 / rev_ms,
        }
        .zones(cylinders),
        seek: seek(2.0, 8.9, 21.0, cylinders),
        head_switch: ms(0.6),
        write_settle: ms(0.5),
        overhead: CommandOverheads::uniform(ms(0.1), ms(0.2), ms(0.1), ms(0.2)),
        cache_segments: 16,
        cache_segment_sectors: 1_024,
        readahead_max_sectors: 1_024,
        readahead_min_sectors: 0,
        cache_enabled: true,
        readahead_mode: ReadAheadMode::Budget,
        write_cache: WriteCache::Off,
        write_segments: 1,
        separate_write_segment: false,
        read_hits_on_write_data: true,
        combine_sequential_writes: true,
        read_free_blocks: false,
        readahead_over_request: true,
        immediate_read: false,
        almost_read_hits: AlmostReadHits::Ahead,
        bus_bytes_per_s: 150e6,
        queue_depth: 1,
        queue_policy: QueuePolicy::Fcfs,
        spares: Vec::new(),
        layout: LayoutRules::default(),
    }
}

/// Seagate Enterprise Capacity 3.5 HDD v4, ST6000NM0024 (6 TB, 7,200 rpm, SATA 6 Gb/s, 128 MB cache),
/// the disk of paper 004's testbed (section 7).
///
/// Datasheet: 7,200 rpm, 6 TB (11,721,045,168 sectors), 216 MB/s maximum sustained rate (outer
/// diameter), 8.5 ms average read seek and 9.5 ms average write seek (so a 1.0 ms write settle), 128 MB
/// cache, NCQ to 32 commands. Assumed: 12 surfaces (six platters), 24 zones declining linearly to half
/// the outer track size, 0.8 ms single-cylinder and 18 ms full-stroke seek, 0.5 ms head switch (track
/// skew 0.06 revolution), a 0.1-revolution cylinder skew covering the one-cylinder seek, 128 segments
/// of 1 MiB each reading ahead a whole segment, 0.05/0.1 ms hit/miss overheads, C-LOOK. The outer track
/// size (3,798 sectors) was chosen so that back-to-back 1 MiB reads at the outer edge run at 216 MB/s in
/// this model; the cylinder count makes the capacity 6 TB within 0.1%.
pub fn st6000nm0024() -> HddParams {
    let cylinders = 342_901;
    let rev_ms = 60e3 / 7_200.0;
    HddParams {
        rpm: 7_200.0,
        cylinders,
        surfaces: 12,
        zones: ZoneProgression {
            zone_count: 24,
            spt_outer: 3_798,
            spt_inner: 1_899,
            shape_exponent: 1.0,
            track_skew_rev: 0.5 / rev_ms,
            cyl_skew_rev: 0.1,
        }
        .zones(cylinders),
        seek: seek(0.8, 8.5, 18.0, cylinders),
        head_switch: ms(0.5),
        write_settle: ms(1.0),
        overhead: CommandOverheads::uniform(ms(0.05), ms(0.1), ms(0.05), ms(0.1)),
        cache_segments: 128,
        cache_segment_sectors: 2_048,
        readahead_max_sectors: 2_048,
        readahead_min_sectors: 0,
        cache_enabled: true,
        readahead_mode: ReadAheadMode::Budget,
        write_cache: WriteCache::Off,
        write_segments: 1,
        separate_write_segment: false,
        read_hits_on_write_data: true,
        combine_sequential_writes: true,
        read_free_blocks: false,
        readahead_over_request: true,
        immediate_read: false,
        almost_read_hits: AlmostReadHits::Ahead,
        bus_bytes_per_s: 600e6,
        queue_depth: 32,
        queue_policy: QueuePolicy::CLook,
        spares: Vec::new(),
        layout: LayoutRules::default(),
    }
}

/// Samsung 850 EVO 1 TB (SATA 6 Gb/s), the SSD of paper 004's testbed (section 7).
///
/// Datasheet: 540 MB/s sequential read, 520 MB/s sequential write, 4 KiB random read up to 10,000 IOPS
/// at queue depth 1 and 98,000 at depth 32, random write up to 40,000 IOPS at depth 1; 1 TB =
/// 1,000,204,886,016 bytes; NCQ depth 32. Derived: 10 parallel units and a read latency of 94 us, so
/// that a 4 KiB read takes 101.6 us with its 7.6 us transfer at 540 MB/s: 9,840 IOPS at depth 1 and
/// 98,400 at depth 32 (10 / 101.6 us); write latency 17 us (1 / 40,000 IOPS less the 7.9 us
/// transfer).
pub fn ssd_850evo() -> SsdParams {
    SsdParams {
        capacity: ByteLen(1_000_204_886_016),
        read_latency: Duration::from_micros(94),
        write_latency: Duration::from_micros(17),
        channels: 10,
        read_bytes_per_s: 540e6,
        write_bytes_per_s: 520e6,
        queue_depth: 32,
    }
}

#[cfg(test)]
mod tests;
