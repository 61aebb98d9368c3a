//! The importer on the shipped DiskSim drives, on broken files, and on random bytes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use proptest::prelude::*;

use super::*;
use crate::presets;
use crate::DeviceSpec;

/// The path of `rel` under the project's `shared/data`, found as `shared/data` beside the crate
/// directory or one of its ancestors. A missing file fails the test with its name.
pub(crate) fn shared_data(rel: &str) -> PathBuf {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    for ancestor in crate_dir.ancestors() {
        let data = ancestor.join("shared").join("data");
        if data.is_dir() {
            let file = data.join(rel);
            assert!(
                file.is_file(),
                "test data file {} is missing",
                file.display()
            );
            return file;
        }
    }
    panic!(
        "test data file shared/data/{rel} is missing: no `shared/data` directory beside {} or any \
         of its ancestors",
        crate_dir.display()
    );
}

const DRIVES: [(&str, &str); 4] = [
    ("Seagate-Cheetah15k5.diskspecs", "cheetah-15k5"),
    ("atlas10k.diskspecs", "atlas-10k"),
    ("ibm18es.diskspecs", "ibm-18es"),
    ("cheetah4LP.diskspecs", "cheetah-4lp"),
];

fn import_shared(name: &str) -> DiskSimDrive {
    let path = shared_data(&format!("disksim/{name}"));
    import(&path).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn every_shared_drive_imports_and_builds() {
    for (file, _) in DRIVES {
        let d = import_shared(file);
        let hdd = crate::Hdd::try_new(d.params.clone()).unwrap();
        let cap = hdd.geometry().capacity_sectors();
        let blocks = d
            .block_count
            .expect("the shipped models give a block count");
        let over = (cap as f64 - blocks as f64) / blocks as f64;
        eprintln!(
            "{file}: {} rpm, {} zones, capacity {cap} sectors ({:+.2}% vs Block count {blocks}), \
             avg seek {:.3} ms, {} warnings",
            d.params.rpm,
            d.params.zones.len(),
            100.0 * over,
            d.params.avg_seek().as_millis_f64(),
            d.warnings.len()
        );
        for w in &d.warnings {
            eprintln!("  warning: {w}");
        }
        // The g4 approximation maps whole cylinders of its track sizes, a little past the drive.
        assert!(
            (0.0..0.01).contains(&over),
            "{file}: capacity off by {over}"
        );
    }
}

/// With its spares, slips and empty space set aside, each `dm_layout_g1` drive holds exactly the
/// blocks DiskSim 4.0 counts for it: per zone, cylinders x surfaces x blocks per track, less the
/// empty space at the front, less `Number of spares` once per zone (atlas10k, scheme 9), per whole
/// range of 12 cylinders (cheetah4LP, scheme 8), or one sector per slip (ibm18es, scheme 7). DiskSim
/// takes that sum as the drive's size in place of the `Block count` line, which the files give a
/// little lower: the extracted zones do not account for every sector the real drives hide.
#[test]
fn g1_capacities_are_disksim_zone_sums() {
    for (file, sum, block_count) in [
        ("atlas10k.diskspecs", 17_966_953, 17_938_986),
        ("ibm18es.diskspecs", 18_033_753, 17_916_240),
        ("cheetah4LP.diskspecs", 8_887_940, 8_887_200),
    ] {
        let d = import_shared(file);
        let cap = crate::Hdd::try_new(d.params.clone())
            .unwrap()
            .geometry()
            .capacity_sectors();
        assert_eq!(cap, sum, "{file}");
        assert_eq!(d.params.capacity().0, sum * 512, "{file}");
        assert_eq!(d.block_count, Some(block_count), "{file}");
        // Nothing about spares, slips or defects is left to a warning.
        for w in &d.warnings {
            for key in ["spares", "slips", "defects", "Empty space"] {
                assert!(!w.message.contains(key), "{file}: {w}");
            }
        }
    }
}

#[test]
fn atlas_numbers_come_from_the_files() {
    let d = import_shared("atlas10k.diskspecs");
    let p = &d.params;
    assert_eq!(d.name, "QUANTUM_TORNADO_validate");
    assert_eq!(p.rpm, 10_025.0);
    assert_eq!((p.cylinders, p.surfaces), (10_042, 6));
    assert_eq!(p.zones.len(), 24);
    assert_eq!(p.zones[0].sectors_per_track, 334);
    assert_eq!(
        (p.zones[0].track_skew_sectors, p.zones[0].cyl_skew_sectors),
        (63, 113)
    );
    assert_eq!(p.zones[23].last_cyl, 10_041);
    assert_eq!(p.seek.seek_ms(1), 1.245);
    assert!((p.seek.seek_ms(10_041) - 10.828).abs() < 1e-9);
    assert_eq!(p.head_switch, Duration::from_micros(176));
    assert_eq!(p.write_settle, Duration::from_micros(487));
    assert_eq!((p.cache_segments, p.cache_segment_sectors), (10, 374));
    assert_eq!(p.readahead_mode, ReadAheadMode::TrackAhead);
    assert_eq!(p.readahead_max_sectors, 354);
    assert_eq!(p.write_cache, WriteCache::Full);
    assert!(p.read_hits_on_write_data);
    assert!((p.bus_bytes_per_s - 512.0 / 0.099e-3).abs() < 1e-6);
    assert_eq!(p.overhead.read_hit_after_read, Duration::from_micros(184));
    assert_eq!(
        p.overhead.write_miss_after_write,
        Duration::from_nanos(496_730)
    );
    assert_eq!(p.queue_depth, 1);
    assert!(p.read_free_blocks);
    // `Immediate buffer read = 1` is imported; the warning says what is not followed.
    assert!(p.immediate_read);
    assert!(d.warnings.iter().any(|w| w.line == 50
        && w.message.contains("Immediate buffer read")
        && w.message.contains("not for the read-ahead")));
    // `Read-ahead over requested = 0` with a non-zero maximum read-ahead: DiskSim reads 354 past
    // the request regardless.
    assert!(p.readahead_over_request);
    // `LBN-to-PBN mapping scheme = 1` is modelled, not warned about: DiskSim's
    // `g1_surfno_on_cyl` puts the k-th track of a cylinder whose number counted from its zone's
    // first is odd on surface 5 - k (6 surfaces). Zone 0 holds 334 x 6 = 2,004 sectors a cylinder
    // and its first slip is at sector 55,017, so block 2,004 + 334 + 7 is cylinder 1's second
    // track to fill, sector 7: surface 4. Zone 1 starts at cylinder 433, odd on the disk but the
    // zone's first, so its first block is on surface 0 and its next cylinder's on surface 5.
    assert!(d
        .warnings
        .iter()
        .all(|w| !w.message.contains("LBN-to-PBN mapping scheme")));
    let g = p.geometry().unwrap();
    let at = |lba: u64| {
        let c = g.locate(foresight_core::Lba(lba));
        (c.cylinder, c.head, c.sector)
    };
    assert_eq!(at(2_004 + 334 + 7), (1, 4, 7));
    assert_eq!(at(333), (0, 0, 333));
    let zone1 = g.zone_first_lba(1).0;
    assert_eq!(at(zone1), (433, 0, 0));
    assert_eq!(at(zone1 + 2_004), (434, 5, 0));
}

#[test]
fn ibm_has_spare_cylinders_and_a_separate_write_segment() {
    let d = import_shared("ibm18es.diskspecs");
    let p = &d.params;
    assert_eq!(p.zones[0].last_cyl, 256);
    assert_eq!(p.zones[1].first_cyl, 258, "cylinder 257 is a spare");
    assert!(p.separate_write_segment);
    assert!(!p.read_hits_on_write_data);
    assert_eq!(p.write_segments, 1);
    assert_eq!(p.readahead_mode, ReadAheadMode::Budget);
}

#[test]
fn cheetah_15k5_g4_layout_is_approximated_by_zones() {
    let d = import_shared("Seagate-Cheetah15k5.diskspecs");
    let p = &d.params;
    assert_eq!(p.rpm, 15_020.0);
    let spts: Vec<u32> = p.zones.iter().map(|z| z.sectors_per_track).collect();
    assert_eq!(spts.first(), Some(&1_200));
    assert_eq!(spts.last(), Some(&720));
    assert!(spts.windows(2).all(|w| w[0] != w[1]));
    assert_eq!(
        p.zones[0].cyl_skew_sectors, 171,
        "0.1417 of a 1,200-sector revolution"
    );
    assert_eq!(p.queue_depth, 8);
    assert_eq!(p.queue_policy, QueuePolicy::CLook);
    assert!(d
        .warnings
        .iter()
        .any(|w| w.message.contains("dm_layout_g4") && w.message.contains("approximated")));
}

/// The compact presets are checked against the imports (they stay compact so that the binary needs
/// no data files): same rpm; capacity within 0.2% of the files' `Block count` and within 1% of the
/// import (DiskSim's own block count, up to 0.66% above `Block count`; the presets' zone
/// progressions are approximate and set nothing aside); mean seek within 1%; outer and inner media rates
/// within 5% (the presets' zone progressions keep the outer and inner track sizes); the same cache,
/// switch times and overheads. The presets keep a nominal interface rate instead of the validation
/// host's `Bulk sector transfer time` (see `presets.rs`).
#[test]
fn presets_agree_with_the_imports() {
    for (file, name) in DRIVES {
        let d = import_shared(file);
        let Some(DeviceSpec::Hdd(p)) = presets::preset(name) else {
            panic!("{name} is an HDD preset")
        };
        let i = &d.params;
        let rel = |a: f64, b: f64| (a - b).abs() / b;
        assert_eq!(p.rpm, i.rpm, "{name} rpm");
        let cap_p = p.capacity().0 as f64;
        let cap_i = i.capacity().0 as f64;
        assert!(
            rel(cap_p, cap_i) < 0.01,
            "{name}: capacity {cap_p} vs import {cap_i}"
        );
        let blocks = d.block_count.unwrap() as f64 * 512.0;
        assert!(
            rel(cap_p, blocks) < 0.002,
            "{name}: capacity {cap_p} vs Block count {blocks}"
        );
        let seek_p = p.avg_seek().as_millis_f64();
        let seek_i = i.avg_seek().as_millis_f64();
        assert!(
            rel(seek_p, seek_i) < 0.01,
            "{name}: avg seek {seek_p} vs {seek_i}"
        );
        for (a, b, what) in [
            (
                p.media_rate_max().bytes_per_s,
                i.media_rate_max().bytes_per_s,
                "outer rate",
            ),
            (
                p.media_rate_min().bytes_per_s,
                i.media_rate_min().bytes_per_s,
                "inner rate",
            ),
        ] {
            assert!(rel(a, b) < 0.05, "{name}: {what} {a} vs import {b}");
        }
        assert_eq!(p.cylinders, i.cylinders, "{name}");
        assert_eq!(p.surfaces, i.surfaces, "{name}");
        assert_eq!(p.cache_segments, i.cache_segments, "{name}");
        assert_eq!(p.cache_segment_sectors, i.cache_segment_sectors, "{name}");
        assert_eq!(p.readahead_mode, i.readahead_mode, "{name}");
        assert_eq!(p.write_cache, i.write_cache, "{name}");
        assert_eq!(p.read_free_blocks, i.read_free_blocks, "{name}");
        assert_eq!(p.immediate_read, i.immediate_read, "{name}");
        assert_eq!(p.almost_read_hits, i.almost_read_hits, "{name}");
        if name != "cheetah-15k5" {
            // The 15K.5 preset lets read-ahead run past a request as large as its segment, so
            // that streams of large requests keep streaming (paper 000's workloads); the import
            // follows DiskSim, which reads nothing ahead after such a request.
            assert_eq!(p.readahead_over_request, i.readahead_over_request, "{name}");
        }
        assert_eq!(
            p.read_hits_on_write_data, i.read_hits_on_write_data,
            "{name}"
        );
        assert_eq!(p.separate_write_segment, i.separate_write_segment, "{name}");
        assert_eq!(p.head_switch, i.head_switch, "{name}");
        assert_eq!(p.write_settle, i.write_settle, "{name}");
        assert_eq!(p.overhead, i.overhead, "{name}");
        eprintln!(
            "{name}: rpm {} | capacity {:.4}% | avg seek {seek_p:.3} vs {seek_i:.3} ms | outer \
             {:.1} vs {:.1} MB/s | inner {:.1} vs {:.1} MB/s",
            p.rpm,
            100.0 * (cap_p - cap_i) / cap_i,
            p.media_rate_max().bytes_per_s / 1e6,
            i.media_rate_max().bytes_per_s / 1e6,
            p.media_rate_min().bytes_per_s / 1e6,
            i.media_rate_min().bytes_per_s / 1e6,
        );
    }
}

/// The shipped files, in memory, for the tests that edit them.
fn shared_files() -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for f in [
        "atlas10k.diskspecs",
        "atlas10k.model",
        "atlas10k.seek",
        "cheetah4LP.diskspecs",
        "cheetah4LP.model",
        "cheetah4LP.seek",
    ] {
        let text = std::fs::read_to_string(shared_data(&format!("disksim/{f}"))).unwrap();
        m.insert(f.to_string(), text);
    }
    m
}

fn import_map(root: &str, files: &BTreeMap<String, String>) -> Result<DiskSimDrive, DiskSimError> {
    let mut load = |name: &str| {
        files
            .get(name)
            .cloned()
            .ok_or_else(|| "cannot read: no such file".to_string())
    };
    import_with(root, &mut load)
}

/// `Allow almost read hits` is checked, 0 (every shipped file) or 1, and not followed: the drive
/// keeps the model's default, with one warning naming the line and the simulator's key that
/// follows the file; anything else is an error naming the line.
#[test]
fn allow_almost_read_hits_is_checked_and_not_followed() {
    let base = shared_files();
    let with = |value: &str| {
        let mut m = base.clone();
        let t = m.get_mut("atlas10k.diskspecs").unwrap();
        let from = "Allow almost read hits = 0,";
        assert!(t.contains(from));
        *t = t.replacen(from, &format!("Allow almost read hits = {value},"), 1);
        import_map("atlas10k.diskspecs", &m)
    };
    for (value, key) in [("0", "\"none\""), ("1", "\"head\"")] {
        let d = with(value).unwrap();
        assert_eq!(
            d.params.almost_read_hits,
            crate::AlmostReadHits::Ahead,
            "{value}"
        );
        let warned: Vec<_> = d
            .warnings
            .iter()
            .filter(|w| w.message.contains("Allow almost read hits"))
            .collect();
        assert_eq!(warned.len(), 1, "{:?}", d.warnings);
        assert_eq!(warned[0].line, 8, "{}", warned[0]);
        assert!(warned[0].message.contains(key), "{}", warned[0]);
    }
    let e = with("2").unwrap_err();
    assert_eq!((e.file.as_str(), e.line), ("atlas10k.diskspecs", 8), "{e}");
    assert!(e.to_string().contains("Allow almost read hits"), "{e}");
}

#[test]
fn malformed_files_are_errors_naming_file_and_line() {
    let base = shared_files();
    let edit = |file: &str, from: &str, to: &str| {
        let mut m = base.clone();
        let t = m.get_mut(file).unwrap();
        assert!(t.contains(from), "{from}");
        *t = t.replacen(from, to, 1);
        import_map("atlas10k.diskspecs", &m).unwrap_err()
    };
    let e = edit(
        "atlas10k.diskspecs",
        "Number of buffer segments = 10,",
        "Number of buffer segments = ten,",
    );
    assert_eq!(e.file, "atlas10k.diskspecs");
    assert_eq!(e.line, 34, "{e}");
    assert!(e.to_string().contains("should be a number"), "{e}");
    let e = edit(
        "atlas10k.model",
        "Rotation speed (in rpms) = 10025,",
        "Rotation speed (in rpms) 10025,",
    );
    assert_eq!(e.file, "atlas10k.model");
    assert_eq!(e.line, 18, "{e}");
    let e = edit("atlas10k.seek", "5,\t1.35500", "5,\tfast");
    assert_eq!((e.file.as_str(), e.line), ("atlas10k.seek", 6), "{e}");
    let e = edit(
        "atlas10k.diskspecs",
        "source atlas10k.model",
        "source nowhere.model",
    );
    assert_eq!(e.file, "nowhere.model");
    assert!(e.to_string().contains("cannot read"), "{e}");
    let e = edit(
        "atlas10k.model",
        "Seek type = extracted",
        "Seek type = magic",
    );
    assert!(e.to_string().contains("`Seek type` = magic"), "{e}");
    let e = edit(
        "atlas10k.model",
        "Blocks per track = 334,",
        "Blocks per track = 0,",
    );
    assert!(e.to_string().contains("Blocks per track"), "{e}");
    let e = edit(
        "atlas10k.model",
        "Blocks per track = 334,",
        "Blocks per track = 1e300,",
    );
    assert!(
        e.to_string().contains("`Blocks per track` = 1e300 must be"),
        "{e}"
    );
    let e = edit(
        "atlas10k.model",
        "Last cylinder number = 432,",
        "Last cylinder number = 500,",
    );
    assert!(e.to_string().contains("zones"), "{e}");
    let e = import_map("nothing.diskspecs", &base).unwrap_err();
    assert_eq!(
        e.to_string(),
        "nothing.diskspecs: cannot read: no such file"
    );
}

#[test]
fn hpl_seek_type_reads_six_values() {
    let mut m = shared_files();
    let t = m.get_mut("atlas10k.model").unwrap();
    *t = t
        .replacen("Seek type = extracted,", "Seek type = hpl,", 1)
        .replacen(
            "#      HPL seek equation values =\n#         [ 0.0, 0.0, 0.0, 0.0, 0.0, 0.0 ],",
            "HPL seek equation values = [ 600, 1.5, 0.15, 4.0, 0.0007, 1 ],",
            1,
        );
    let d = import_map("atlas10k.diskspecs", &m).unwrap();
    assert_eq!(
        d.params.seek,
        SeekCurve::Hpl {
            boundary_cyl: 600,
            a: 1.5,
            b: 0.15,
            c: 4.0,
            e: 0.0007,
            single_cyl_ms: Some(1.245),
        }
    );
    assert!((d.params.seek.seek_ms(100) - 3.0).abs() < 1e-12);
}

#[test]
fn seek_files_in_both_shipped_layouts_parse() {
    let p = parse_seek_file("Seek distances measured: 2\n1,\t1.0\n10,\t2.0\n").unwrap();
    assert_eq!(p, vec![(1, 1.0), (10, 2.0)]);
    let p = parse_seek_file("1, 0.55, 0.002\n2, 0.57, 0.004\n").unwrap();
    assert_eq!(p, vec![(1, 0.55), (2, 0.57)]);
    assert_eq!(
        parse_seek_file("Seek distances measured: 3\n1, 1.0\n")
            .unwrap_err()
            .0,
        1
    );
    assert_eq!(parse_seek_file("2, 1.0\n1, 0.5\n").unwrap_err().0, 2);
    assert!(parse_seek_file("").is_err());
}

fn import_never_panics(files: &BTreeMap<String, String>) {
    for root in ["atlas10k.diskspecs", "cheetah4LP.diskspecs"] {
        match import_map(root, files) {
            // Whatever imports must also build.
            Ok(d) => drop(crate::Hdd::try_new(d.params).unwrap()),
            // A refusal names a file and a line in it (0: the file as a whole), and says what.
            Err(e) => {
                assert!(!e.message.trim().is_empty(), "{e}");
                let lines = files.get(&e.file).map(|t| t.lines().count() + 1);
                match lines {
                    Some(n) => assert!(e.line as usize <= n, "{e}: the file has {n} lines"),
                    None => assert!(e.line == 0 && !e.file.is_empty(), "{e}"),
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let _ = syntax::parse(&text);
        let _ = parse_seek_file(&text);
        let mut m = BTreeMap::new();
        m.insert("x.diskspecs".to_string(), text.clone());
        m.insert("x.model".to_string(), text.clone());
        let _ = import_map("x.diskspecs", &m);
    }

    #[test]
    fn random_structured_text_never_panics(text in "([a-z ]{0,6}(=|\\{|\\}|\\[|\\]|,|source|[0-9.-]{1,4}) ?){0,40}") {
        let _ = syntax::parse(&text);
        let mut m = BTreeMap::new();
        m.insert("x.diskspecs".to_string(), format!("disksim_disk d {{ {text} }}"));
        let _ = import_map("x.diskspecs", &m);
    }

    /// Real files with a few bytes replaced, deleted or inserted.
    #[test]
    fn mutated_real_files_never_panic(
        which in 0usize..6,
        edits in proptest::collection::vec((any::<u32>(), 0u8..3, prop::sample::select(vec![
            "0", "-1", "1e308", "[", "]", "{", "}", ",", "=", "source", "x", "99999999999", ".", "#",
        ])), 1..6),
    ) {
        let mut m = shared_files();
        let key = m.keys().nth(which).unwrap().clone();
        let mut t: Vec<char> = m[&key].chars().collect();
        for (pos, op, tok) in edits {
            if t.is_empty() { break; }
            let at = pos as usize % t.len();
            match op {
                0 => { t.remove(at); }
                1 => { for (k, c) in tok.chars().enumerate() { t.insert(at + k, c); } }
                _ => { let end = (at + tok.len()).min(t.len()); t.splice(at..end, tok.chars()); }
            }
        }
        m.insert(key, t.into_iter().collect());
        import_never_panics(&m);
    }
}

// ---- geometries at the limits of what a parameter file may state ----
/// A `.model` file with one zone of the given geometry, on the Atlas 10K's seek curve.
fn one_zone_model(surfaces: u64, cylinders: u64, spt: u64) -> String {
    format!(
        "dm_disk X {{\n  Number of data surfaces = {surfaces},\n  Number of cylinders = {cylinders},\n  \
         Mechanical Model = dm_mech_g1 {{\n    Seek type = extracted,\n    Full seek curve = atlas10k.seek,\n    \
         Rotation speed (in rpms) = 10025\n  }},\n  Layout Model = dm_layout_g1 {{\n    Zones = [\n      \
         dm_layout_g1_zone {{\n        First cylinder number = 0,\n        Last cylinder number = {},\n        \
         Blocks per track = {spt}\n      }}\n    ]\n  }}\n}}\n",
        cylinders - 1
    )
}

#[test]
fn a_geometry_past_2_to_the_64_sectors_is_an_error_naming_the_file() {
    let mut m = shared_files();
    // Each value is within its key's accepted range; together they make 2^70 sectors.
    m.insert(
        "atlas10k.model".into(),
        one_zone_model(1 << 16, 1 << 30, 1 << 24),
    );
    let e = import_map("atlas10k.diskspecs", &m)
        .unwrap_err()
        .to_string();
    assert!(e.contains("atlas10k.model") && e.contains("2^64"), "{e}");
}

#[test]
fn a_geometry_past_2_to_the_64_bytes_is_an_error_naming_the_file() {
    let mut m = shared_files();
    // 2^56 sectors: a u64 counts them, but not their 2^65 bytes.
    m.insert(
        "atlas10k.model".into(),
        one_zone_model(1 << 16, 1 << 30, 1 << 10),
    );
    let e = import_map("atlas10k.diskspecs", &m)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("atlas10k.model") && e.contains("2^64 bytes"),
        "{e}"
    );
}

#[test]
fn a_g4_layout_mapping_more_than_2_to_the_64_blocks_is_an_error() {
    let mut m = BTreeMap::new();
    for f in [
        "Seagate-Cheetah15k5.diskspecs",
        "Seagate-Cheetah15k5.model",
        "Seagate-Cheetah15k5.seeks",
    ] {
        let text = std::fs::read_to_string(shared_data(&format!("disksim/{f}"))).unwrap();
        m.insert(f.to_string(), text);
    }
    // The root repeats a node of 9 x 10^14 blocks 30,000 times: 2.7 x 10^19 blocks.
    m.insert(
        "Seagate-Cheetah15k5-skews.layout".into(),
        "dm_layout_g4 {\nTP = [ 0, 99, 100 ],\nIDX = [\n  [ 0, 0, 0.0, 100, 1, 0.1, 900000000000000, 1, TRACK, 0, 0 ],\n  \
         [ 0, 0, 0.0, 1, 1, 0.1, 30000, 1, IDX, 0 ]\n]\n}\n"
            .into(),
    );
    let e = import_map("Seagate-Cheetah15k5.diskspecs", &m)
        .unwrap_err()
        .to_string();
    assert!(e.contains("2^64"), "{e}");
}

#[test]
fn a_bus_too_slow_to_serve_a_read_is_an_error_naming_the_line() {
    let mut m = shared_files();
    let t = m.get_mut("atlas10k.diskspecs").unwrap();
    // 10^12 ms per sector: one sector would take 31,000 years, past the simulated clock's range.
    *t = t.replacen(
        "Bulk sector transfer time = 0.099000,",
        "Bulk sector transfer time = 1e12,",
        1,
    );
    let e = import_map("atlas10k.diskspecs", &m).unwrap_err();
    assert_eq!((e.file.as_str(), e.line), ("atlas10k.diskspecs", 5), "{e}");
    assert!(e.message.contains("Bulk sector transfer time"), "{e}");
}

#[test]
fn a_drive_whose_bytes_overflow_a_volume_is_an_error_naming_the_file() {
    let mut m = shared_files();
    // 2^52 sectors: 2^61 bytes, which a u64 holds but an array of such drives would not. (A
    // layout past 2^64 bytes is refused earlier, by the geometry itself.)
    m.insert(
        "atlas10k.model".into(),
        one_zone_model(1 << 12, 1 << 30, 1 << 10),
    );
    let e = import_map("atlas10k.diskspecs", &m).unwrap_err();
    assert_eq!((e.file.as_str(), e.line), ("atlas10k.model", 1), "{e}");
    assert!(e.message.contains("1 PiB"), "{e}");
    // 1 PiB itself imports.
    m.insert(
        "atlas10k.model".into(),
        one_zone_model(1 << 10, 1 << 21, 1 << 10),
    );
    let d = import_map("atlas10k.diskspecs", &m).unwrap();
    assert_eq!(d.params.capacity().0, 1 << 50);
}

/// A file whose length the file system does not know (a device, a pipe) is read only up to the
/// bound on parameter files: `/dev/zero` as a `.diskspecs` used to be read until memory ran out.
#[cfg(target_os = "linux")]
#[test]
fn an_endless_file_is_refused_at_the_size_bound() {
    let e = import(Path::new("/dev/zero")).unwrap_err();
    assert_eq!(e.file, "/dev/zero");
    assert!(e.message.contains("more than"), "{e}");
}

#[test]
fn sparing_the_model_cannot_follow_is_an_error_naming_file_line_and_value() {
    let base = shared_files();
    let edit = |root: &str, file: &str, from: &str, to: &str| {
        let mut m = base.clone();
        let t = m.get_mut(file).unwrap();
        assert!(t.contains(from), "{from}");
        *t = t.replacen(from, to, 1);
        import_map(root, &m).unwrap_err()
    };
    let e = edit(
        "atlas10k.diskspecs",
        "atlas10k.model",
        "Sparing scheme used = 9,",
        "Sparing scheme used = 1,",
    );
    assert_eq!((e.file.as_str(), e.line), ("atlas10k.model", 24), "{e}");
    assert!(e.message.contains("`Sparing scheme used` = 1"), "{e}");
    // DiskSim knows LBN-to-PBN mapping schemes 0 to 2.
    let e = edit(
        "atlas10k.diskspecs",
        "atlas10k.model",
        "LBN-to-PBN mapping scheme = 1,",
        "LBN-to-PBN mapping scheme = 3,",
    );
    assert_eq!((e.file.as_str(), e.line), ("atlas10k.model", 23), "{e}");
    assert!(e.message.contains("`LBN-to-PBN mapping scheme` = 3"), "{e}");
    // Zone 0 slips five sectors: two spares cannot take them.
    let e = edit(
        "atlas10k.diskspecs",
        "atlas10k.model",
        "Number of spares = 89,",
        "Number of spares = 2,",
    );
    assert_eq!((e.file.as_str(), e.line), ("atlas10k.model", 27), "{e}");
    assert!(e.message.contains("more slips than spares"), "{e}");
    let e = edit(
        "cheetah4LP.diskspecs",
        "cheetah4LP.model",
        "233375,\n               233375",
        "233375",
    );
    assert_eq!(e.file, "cheetah4LP.model");
    assert!(e.message.contains("even number"), "{e}");
    // Sector 0 of the zone holds a block, so no defect can move there. (The file's own pair,
    // 233375 to itself, is the last spare of a range "moved" to itself, which DiskSim skips.)
    let e = edit(
        "cheetah4LP.diskspecs",
        "cheetah4LP.model",
        "233375,\n               233375",
        "1000,\n               0",
    );
    assert!(e.message.contains("not a spare"), "{e}");
    let e = edit(
        "cheetah4LP.diskspecs",
        "cheetah4LP.model",
        "Sparing scheme used = 8,",
        "Sparing scheme used = 7,",
    );
    assert!(
        e.message.contains("`Number of spares` = 108") && e.message.contains("scheme 4"),
        "{e}"
    );
}

/// The runs of set-aside sectors are bounded for the whole drive, not per zone: a file of many
/// zones each within the bound is refused at the zone that passes it (named by its line), before
/// the later zones' tables are built. Here each zone of 174,762 cylinders x 6 tracks with a spare
/// per track sets aside 1,048,572 runs, so the second one passes the drive's 2^20.
#[test]
fn set_aside_runs_are_bounded_over_the_whole_drive_at_the_zone_passing_the_bound() {
    const ZONES: u32 = 6;
    const PER_ZONE: u32 = 174_762;
    let mut m = shared_files();
    let model = m.get_mut("atlas10k.model").unwrap();
    let start = model.find("      Zones = [").unwrap();
    let end = model.find("      ] # Zones").unwrap();
    let mut zones = String::new();
    for k in 0..ZONES {
        let first = k * PER_ZONE;
        zones.push_str(&format!(
            "         dm_layout_g1_zone {{\n\
             First cylinder number = {first},\n\
             Last cylinder number = {},\n\
             Blocks per track = 334,\n\
             Number of spares = 1,\n\
             }}{}\n",
            first + PER_ZONE - 1,
            if k + 1 < ZONES { "," } else { "" }
        ));
    }
    let text = format!(
        "{}      Zones = [\n{zones}{}",
        &model[..start],
        &model[end..]
    )
    .replacen(
        "Number of cylinders = 10042,",
        &format!("Number of cylinders = {},", ZONES * PER_ZONE),
        1,
    )
    .replacen("Sparing scheme used = 9,", "Sparing scheme used = 3,", 1);
    // The line of the second zone's block.
    let second_zone_line = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains("dm_layout_g1_zone {"))
        .nth(1)
        .map(|(i, _)| i as u32 + 1)
        .unwrap();
    *model = text;
    let e = import_map("atlas10k.diskspecs", &m).unwrap_err();
    assert_eq!(
        (e.file.as_str(), e.line),
        ("atlas10k.model", second_zone_line),
        "{e}"
    );
    assert!(e.message.contains("whole drive"), "{e}");
}

#[test]
fn g1_zones_start_at_their_offset_of_first_block_as_in_disksim() {
    // DiskSim's `g1_map_pbn_skew` starts each zone's skews at the zone's `Offset of first block`
    // (0 in every shipped zone), counting track and cylinder switches from the zone's first
    // cylinder; it does not carry the previous zone's skews on.
    for file in [
        "atlas10k.diskspecs",
        "ibm18es.diskspecs",
        "cheetah4LP.diskspecs",
    ] {
        let d = import_shared(file);
        let g = d.params.geometry().unwrap();
        for (i, z) in d.params.zones.iter().enumerate() {
            assert_eq!(
                g.track_start_angle(i, z.first_cyl, 0),
                0.0,
                "{file}: zone {i} (cylinders {} to {})",
                z.first_cyl,
                z.last_cyl
            );
        }
        // The Cheetah 4LP's zone 1, cylinder 1346 head 3: 3 + 7 x 1 track switches of 22 sectors
        // and one cylinder switch of 35, 255 sectors, 68 of its 187-sector tracks.
        if file == "cheetah4LP.diskspecs" {
            let a = g.track_start_angle(1, 1346, 3);
            assert!((a - 68.0 / 187.0).abs() < 1e-12, "{a}");
        }
    }
}
