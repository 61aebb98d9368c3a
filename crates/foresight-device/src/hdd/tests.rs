//! Behaviour of the whole drive model on the presets.

use super::*;
use crate::presets::{atlas_10k, cheetah_15k5};
use crate::testutil::{drive_serial, drive_serial_think};
use foresight_core::Rng;

fn mib_s(bytes_per_s: f64) -> f64 {
    bytes_per_s / (1u64 << 20) as f64
}

/// Back-to-back 1 MiB reads: each arrives as its predecessor's last sector crosses the bus, before
/// the read-ahead has finished reading the sector after it. When such a read may join the
/// read-ahead (`Head`, DiskSim's almost read hits, or the default `Ahead`) every read after the
/// first does and the stream runs near the media rate; under `None` (the Cheetah 15K.5 file's
/// setting) each is a miss that waits most of a revolution for that sector.
#[test]
fn sequential_1mib_reads_run_near_the_outer_media_rate_unless_almost_read_hits_are_refused() {
    for almost in [
        AlmostReadHits::Ahead,
        AlmostReadHits::Head,
        AlmostReadHits::None,
    ] {
        let mut p = cheetah_15k5();
        p.almost_read_hits = almost;
        let mut d = Hdd::new(p.clone());
        let n = 200u64;
        let reqs: Vec<(Op, u64, u32)> = (0..n).map(|i| (Op::Read, i * 2048, 2048)).collect();
        let res = drive_serial(&mut d, &reqs);
        let elapsed = res.last().unwrap().1.at.as_secs_f64();
        let rate = (n * (1 << 20)) as f64 / elapsed;
        let media = p.media_rate_max().bytes_per_s;
        let frac = rate / media;
        eprintln!(
            "cheetah-15k5 sequential 1 MiB QD1, almost_read_hits = {almost:?}: {:.1} MiB/s = \
             {:.1}% of the outer media rate {:.1} MiB/s",
            mib_s(rate),
            100.0 * frac,
            mib_s(media)
        );
        let half_rev = Duration(p.rotation_period().0 / 2);
        if almost != AlmostReadHits::None {
            assert!((0.90..=1.0).contains(&frac), "{frac}");
            // After the first request every read continues the read-ahead stream: no seek.
            assert!(res[1..]
                .iter()
                .all(|(_, c)| c.breakdown.seek.as_nanos() < 1_000_000));
            assert!(res[1..].iter().all(|(_, c)| c.breakdown.rotate < half_rev));
        } else {
            assert!(frac < 0.8, "{frac}");
            // Those that follow a read ending at a track's end find the next track's first sector
            // still to come after the skew.
            let lost = res[1..]
                .iter()
                .filter(|(_, c)| c.breakdown.rotate > half_rev)
                .count();
            eprintln!("{lost} of {} reads lost over half a revolution", n - 1);
            assert!(lost as u64 > (n - 1) / 2, "{lost}");
        }
    }
}

#[test]
fn random_4k_reads_match_seek_plus_half_rotation_plus_transfer() {
    let p = cheetah_15k5();
    let mut d = Hdd::new(p.clone());
    let cap = d.geometry().capacity_sectors();
    let mut rng = Rng::new(42);
    let n = 4000;
    let reqs: Vec<(Op, u64, u32)> = (0..n)
        .map(|_| (Op::Read, rng.below(cap / 8) * 8, 8))
        .collect();
    let res = drive_serial(&mut d, &reqs);
    let mean_ms = res
        .iter()
        .map(|(s, c)| (c.at - *s).as_millis_f64())
        .sum::<f64>()
        / n as f64;
    // Transfer: 8 sectors at the capacity-weighted mean sector time, plus the last sector on the bus.
    let g = d.geometry();
    let period_ms = p.rotation_period().as_millis_f64();
    let sector_ms: f64 = (0..g.zones().len())
        .map(|z| {
            g.zone_sectors(z) as f64 / cap as f64 * period_ms
                / f64::from(g.zones()[z].sectors_per_track)
        })
        .sum();
    let transfer_ms = 8.0 * sector_ms + 512.0 / p.bus_bytes_per_s * 1e3;
    let overhead_ms = p.overhead.read_miss_after_read.as_millis_f64();
    let expected = p.avg_seek().as_millis_f64() + period_ms / 2.0 + transfer_ms + overhead_ms;
    eprintln!(
        "cheetah-15k5 random 4 KiB QD1: mean {mean_ms:.3} ms, expected {expected:.3} ms \
         (seek {:.3} + half turn {:.3} + transfer {transfer_ms:.3} + overhead {overhead_ms:.3}); \
         mean parts: seek {:.3} rotate {:.3}",
        p.avg_seek().as_millis_f64(),
        period_ms / 2.0,
        res.iter()
            .map(|(_, c)| c.breakdown.seek.as_millis_f64())
            .sum::<f64>()
            / n as f64,
        res.iter()
            .map(|(_, c)| c.breakdown.rotate.as_millis_f64())
            .sum::<f64>()
            / n as f64,
    );
    assert!(
        (mean_ms - expected).abs() / expected < 0.10,
        "{mean_ms} vs {expected}"
    );
}

#[test]
fn rereading_just_read_data_is_a_hit_with_no_seek() {
    let mut d = Hdd::new(cheetah_15k5());
    let res = drive_serial_think(
        &mut d,
        &[
            (Op::Read, 50_000_000, 64),
            (Op::Read, 100_000, 8),
            (Op::Read, 50_000_000, 64),
        ],
        Duration::from_millis(1),
    );
    let first = res[0].1;
    let again = res[2].1;
    assert!(!first.cache_hit);
    assert!(again.cache_hit, "{again:?}");
    assert_eq!(again.breakdown.seek, Duration::ZERO);
    assert_eq!(again.breakdown.rotate, Duration::ZERO);
    let p = cheetah_15k5();
    assert_eq!(again.breakdown.overhead, p.overhead.read_hit_after_read);
    // Hit = overhead + 64 sectors on the bus.
    let bus = Duration::from_secs_f64(64.0 * 512.0 / p.bus_bytes_per_s);
    assert!(again.breakdown.transfer.as_nanos().abs_diff(bus.as_nanos()) <= 1);
}

#[test]
fn read_ahead_turns_a_later_sequential_read_into_a_hit() {
    let mut d = Hdd::new(cheetah_15k5());
    // After the first read the drive idles 2 ms and reads ahead about 600 sectors.
    let res = drive_serial_think(
        &mut d,
        &[(Op::Read, 0, 8), (Op::Read, 8, 64)],
        Duration::from_millis(2),
    );
    assert!(res[1].1.cache_hit);
}

/// Round-robin sequential streams with host think time: hits while every stream keeps a segment,
/// none once there are more streams than segments (LRU reclaims each segment before its stream comes
/// back).
#[test]
fn more_streams_than_segments_lose_their_hits() {
    let hit_rate = |streams: u64| {
        let mut p = cheetah_15k5();
        p.cache_segments = 4;
        p.write_segments = 1;
        let mut d = Hdd::new(p);
        let mut reqs = Vec::new();
        for round in 0..20u64 {
            for s in 0..streams {
                reqs.push((Op::Read, s * 10_000_000 + round * 8, 8));
            }
        }
        let res = drive_serial_think(&mut d, &reqs, Duration::from_millis(1));
        let later = &res[streams as usize..];
        later.iter().filter(|(_, c)| c.cache_hit).count() as f64 / later.len() as f64
    };
    let few = hit_rate(3);
    let many = hit_rate(8);
    assert!(few > 0.95, "3 streams on 4 segments: hit rate {few}");
    assert!(many < 0.05, "8 streams on 4 segments: hit rate {many}");
}

/// A Cheetah 15K.5 without a cache that queues 8 commands and orders them by `policy`, so that
/// the order and the positioning the queue policy chooses are all a test sees.
fn queued_cheetah(policy: QueuePolicy) -> Hdd {
    let mut p = cheetah_15k5();
    p.cache_enabled = false;
    p.write_cache = WriteCache::Off;
    p.queue_depth = 8;
    p.queue_policy = policy;
    Hdd::new(p)
}

#[test]
fn c_look_serves_ascending_from_the_head_then_wraps() {
    let order = |policy: QueuePolicy| {
        let mut d = queued_cheetah(policy);
        let lbas = [400_000u64, 500_000, 100_000, 900_000, 300_000, 700_000];
        for (i, &l) in lbas.iter().enumerate() {
            d.submit(
                Instant::ZERO,
                DevRequest {
                    id: i as u64,
                    op: Op::Read,
                    lba: Lba(l),
                    sectors: 8,
                },
            );
        }
        let mut out = Vec::new();
        while let Some(t) = d.next_event() {
            d.advance(t, &mut out);
        }
        out.iter().map(|c| lbas[c.id as usize]).collect::<Vec<_>>()
    };
    assert_eq!(
        order(QueuePolicy::CLook),
        vec![400_000, 500_000, 700_000, 900_000, 100_000, 300_000]
    );
    assert_eq!(
        order(QueuePolicy::Fcfs),
        vec![400_000, 500_000, 100_000, 900_000, 300_000, 700_000]
    );
}

/// A cheetah-15k5 with an 8-command queue under `policy` that has served one read of sectors
/// [0, 1024) from idle, and when that read completed; its read-ahead runs on from there.
fn after_one_read(policy: QueuePolicy) -> (Hdd, Instant) {
    let mut p = cheetah_15k5();
    p.queue_depth = 8;
    p.queue_policy = policy;
    let mut d = Hdd::new(p);
    d.submit(
        Instant::ZERO,
        DevRequest {
            id: 0,
            op: Op::Read,
            lba: Lba(0),
            sectors: 1024,
        },
    );
    let mut out = Vec::new();
    while out.is_empty() {
        let t = d.next_event().expect("the first read is in service");
        d.advance(t, &mut out);
    }
    (d, out[0].at)
}

#[test]
fn c_look_serves_commands_inside_the_running_read_ahead_before_moving_on() {
    // One read of [0, 1024) on an idle C-LOOK drive that reads ahead; 200 us after it completes,
    // while the read-ahead runs on from sector 1024, three reads arrive at once: [1024, 1032) and
    // [1040, 1552), which the stream has passed the start of (the second not yet the end), and one
    // far ahead. The two inside the stream belong to this sweep: served first, in order, with no
    // seek and no rotational wait. Picking by how far the stream has run instead put them behind
    // the far read, in the next sweep, each then paying a seek back and a rotational wait.
    let (mut d, first_done) = after_one_read(QueuePolicy::CLook);
    let read = |id: u64, lba: u64, sectors: u32| DevRequest {
        id,
        op: Op::Read,
        lba: Lba(lba),
        sectors,
    };
    let mut out = Vec::new();
    let later = first_done + Duration::from_micros(200);
    assert!(
        d.head_lba_at(later).0 > 1040,
        "the read-ahead has passed sector 1040: {:?}",
        d.head_lba_at(later)
    );
    out.clear();
    let far = 2_000_000;
    for (id, lba, sectors) in [(1, 1024, 8), (2, 1040, 512), (3, far, 8)] {
        d.submit(later, read(id, lba, sectors));
    }
    while let Some(t) = d.next_event() {
        d.advance(t, &mut out);
    }
    let order: Vec<u64> = out.iter().map(|c| c.id).collect();
    assert_eq!(order, vec![1, 2, 3]);
    // A sector's worth of rounding at most: a lost rotation would cost milliseconds.
    for c in &out[..2] {
        assert_eq!(c.breakdown.seek, Duration::ZERO, "{c:?}");
        assert!(c.breakdown.rotate < Duration::from_micros(20), "{c:?}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 24, ..Default::default() })]

    /// On every HDD preset with a C-LOOK queue, reads that each start at or after the previous
    /// one's end, queued at random moments (several at once, or one at a time on a drive whose
    /// read-ahead runs on meanwhile), are served in LBA order: a sweep never leaves a command
    /// ahead of the last one served for the next sweep. A failure prints the seed that replays it.
    #[test]
    fn c_look_serves_ascending_reads_in_one_sweep_on_every_preset(seed in proptest::prelude::any::<u64>()) {
        for name in crate::presets::preset_names() {
            let Some(crate::presets::DeviceSpec::Hdd(mut p)) = crate::presets::preset(name) else {
                continue;
            };
            p.queue_depth = 8;
            p.queue_policy = QueuePolicy::CLook;
            let mut d = Hdd::new(p);
            let cap = d.geometry().capacity_sectors();
            let mut rng = Rng::new(seed);
            let mut lba = rng.below(cap / 2);
            let mut t = Instant::ZERO;
            let mut out = Vec::new();
            let mut submitted = 0u64;
            for _ in 0..60 {
                // A gap of up to 64 KiB, often none; a read of 4 KiB to 512 KiB.
                lba += if rng.below(3) == 0 { 0 } else { rng.below(128) };
                let sectors = 8 * (1 + rng.below(128)) as u32;
                if lba + u64::from(sectors) > cap {
                    break;
                }
                while !d.can_accept() {
                    let next = d.next_event().expect("a full queue has work");
                    d.advance(next, &mut out);
                    t = next;
                }
                d.submit(t, DevRequest { id: submitted, op: Op::Read, lba: Lba(lba), sectors });
                submitted += 1;
                lba += u64::from(sectors);
                // Now and then let time pass: the drive serves, and reads ahead when idle.
                if rng.below(4) == 0 {
                    let until = t + Duration::from_micros(rng.below(3_000));
                    while let Some(next) = d.next_event().filter(|&n| n <= until) {
                        d.advance(next, &mut out);
                    }
                    t = until;
                }
            }
            while let Some(next) = d.next_event() {
                d.advance(next, &mut out);
            }
            let order: Vec<u64> = out.iter().map(|c| c.id).collect();
            let sorted: Vec<u64> = (0..submitted).collect();
            proptest::prop_assert_eq!(order, sorted, "{} (seed {})", name, seed);
        }
    }
}

#[test]
fn sptf_positions_less_than_c_look_and_fcfs() {
    // Twenty batches of eight 4 KiB reads within 2 million sectors, each batch queued at once on an
    // idle drive: shortest positioning time first spends less on seeks and rotational waits in
    // all than either order that ignores the platter's angle.
    let positioning = |policy: QueuePolicy| {
        let mut d = queued_cheetah(policy);
        let mut rng = Rng::new(11);
        let mut t = Instant::ZERO;
        let mut total = Duration::ZERO;
        for batch in 0..20u64 {
            for i in 0..8 {
                d.submit(
                    t,
                    DevRequest {
                        id: batch * 8 + i,
                        op: Op::Read,
                        lba: Lba(50_000_000 + rng.below(2_000_000)),
                        sectors: 8,
                    },
                );
            }
            let mut out = Vec::new();
            while let Some(next) = d.next_event() {
                d.advance(next, &mut out);
                t = next;
            }
            assert_eq!(out.len(), 8);
            total += out
                .iter()
                .map(|c| c.breakdown.seek + c.breakdown.rotate)
                .sum::<Duration>();
        }
        total
    };
    let sptf = positioning(QueuePolicy::Sptf);
    let clook = positioning(QueuePolicy::CLook);
    let fcfs = positioning(QueuePolicy::Fcfs);
    assert!(
        sptf < clook && sptf < fcfs,
        "SPTF {sptf}, C-LOOK {clook}, FCFS {fcfs}"
    );
}

#[test]
fn a_cylinder_crossing_costs_the_one_cylinder_seek_inside_the_skew() {
    let p = cheetah_15k5();
    let mut d = Hdd::new(p.clone());
    let g = d.geometry().clone();
    let spt = u64::from(g.zones()[0].sectors_per_track);
    // The last track of cylinder 0 (head 3) and 100 sectors of cylinder 1.
    let start = 3 * spt;
    let res = drive_serial(&mut d, &[(Op::Read, start, (spt + 100) as u32)]);
    let c = res[0].1;
    let rot = Rotation::from_rpm(p.rpm);
    let st = rot.period_ns() / spt as f64;
    let ready = p.head_switch.as_nanos() as f64; // head 0 -> 3 on cylinder 0, no overhead after a read
    let wait = rot.wait_ns(ready, g.sector_angle(Lba(start)));
    let cyl_skew = f64::from(g.zones()[0].cyl_skew_sectors);
    assert!(
        cyl_skew * st >= p.seek.seek_ms(1) * 1e6,
        "skew covers the one-cylinder seek"
    );
    let bus = 512.0 / p.bus_bytes_per_s * 1e9;
    let expected = ready + wait + (spt as f64 + 100.0 + cyl_skew) * st + bus;
    assert!(
        (c.at.as_nanos() as f64 - expected).abs() <= 2.0,
        "{} vs {expected}",
        c.at.as_nanos()
    );
    assert_eq!(c.breakdown.seek, p.seek.seek_time(1));
}

#[test]
fn writes_add_the_settle_to_the_seek() {
    let seek_of = |op: Op| {
        let mut p = atlas_10k();
        p.write_cache = WriteCache::Off;
        let mut d = Hdd::new(p);
        let res = drive_serial(&mut d, &[(Op::Read, 1_000, 8), (op, 9_000_000, 8)]);
        res[1].1.breakdown.seek
    };
    let p = atlas_10k();
    assert_eq!(seek_of(Op::Write) - seek_of(Op::Read), p.write_settle);
}

#[test]
fn writes_drop_cached_copies() {
    let mut d = Hdd::new(cheetah_15k5());
    let res = drive_serial_think(
        &mut d,
        &[
            (Op::Read, 1_000, 64),
            (Op::Write, 1_010, 8),
            (Op::Read, 1_000, 64),
        ],
        Duration::from_millis(1),
    );
    assert!(!res[2].1.cache_hit);
}

#[test]
fn same_inputs_same_outputs() {
    let run = || {
        let mut d = Hdd::new(cheetah_15k5());
        let mut rng = Rng::new(7);
        let reqs: Vec<(Op, u64, u32)> = (0..300)
            .map(|i| {
                let op = if i % 5 == 0 { Op::Write } else { Op::Read };
                (op, rng.below(1_000_000), 1 + rng.below(512) as u32)
            })
            .collect();
        drive_serial(&mut d, &reqs)
    };
    assert_eq!(run(), run());
}

#[test]
fn bad_parameters_say_what_to_fix() {
    let mut p = cheetah_15k5();
    p.rpm = 0.0;
    assert!(Hdd::try_new(p).unwrap_err().to_string().contains("rpm"));
    let mut p = cheetah_15k5();
    p.readahead_max_sectors = p.cache_segment_sectors + 1;
    assert!(Hdd::try_new(p)
        .unwrap_err()
        .to_string()
        .contains("readahead_max_sectors"));
    let mut p = cheetah_15k5();
    p.zones.pop();
    assert!(matches!(
        Hdd::try_new(p),
        Err(DeviceError::ZonesDontCover { .. })
    ));
    let mut p = cheetah_15k5();
    p.queue_depth = 0;
    assert!(Hdd::try_new(p).is_err());
    let mut p = cheetah_15k5();
    p.bus_bytes_per_s = f64::NAN;
    assert!(Hdd::try_new(p).is_err());
}

#[test]
#[should_panic(expected = "full drive queue")]
fn submitting_to_a_full_queue_panics() {
    let mut p = cheetah_15k5();
    p.queue_depth = 1;
    let mut d = Hdd::new(p);
    d.submit(
        Instant::ZERO,
        DevRequest {
            id: 0,
            op: Op::Read,
            lba: Lba(0),
            sectors: 8,
        },
    );
    d.submit(
        Instant::ZERO,
        DevRequest {
            id: 1,
            op: Op::Read,
            lba: Lba(0),
            sectors: 8,
        },
    );
}

#[test]
fn requests_at_the_very_end_of_the_disk() {
    let mut d = Hdd::new(cheetah_15k5());
    let cap = d.geometry().capacity_sectors();
    let res = drive_serial_think(
        &mut d,
        &[
            (Op::Read, cap - 300, 300),
            (Op::Read, cap - 10, 10),
            (Op::Write, cap - 1, 1),
            (Op::Read, cap - 2, 2),
        ],
        Duration::from_millis(1),
    );
    assert!(res[1].1.cache_hit, "the tail was just read");
    assert!(!res[3].1.cache_hit, "the write dropped the cached tail");
}

#[test]
fn a_read_past_the_cached_run_sends_the_prefix_and_reads_the_rest() {
    let p = cheetah_15k5();
    let mut d = Hdd::new(p.clone());
    // Read 64 sectors, idle long enough for the read-ahead to fill the segment (1,200 sectors), then
    // read across the end of the cached run.
    let res = drive_serial_think(
        &mut d,
        &[(Op::Read, 0, 64), (Op::Read, 1_000, 2_000)],
        Duration::from_millis(20),
    );
    let c = res[1].1;
    assert!(!c.cache_hit);
    // Same cylinder (4 x 1,200 sectors): no seek to get there.
    assert_eq!(c.breakdown.seek, Duration::ZERO);
    // Cheaper than reading all 2,000 sectors: 1,736 sectors come from the media.
    let st_ns = p.rotation_period().as_nanos() as f64 / 1_200.0;
    assert!(
        (c.breakdown.transfer.as_nanos() as f64) < 1_800.0 * st_ns,
        "{c:?}"
    );
}

/// A Cheetah 4LP (0.61 ms read-miss overhead after a read, 195 sectors per outer track) with
/// `almost_read_hits` as given, that has served a read of sectors [100,000, 100,064) from idle and
/// reads ahead after it. Returns the drive, the read-ahead's next unread sector 0.3 ms after that
/// read completed, and the instant half-way through reading that sector.
fn read_ahead_half_a_sector_into(almost_read_hits: AlmostReadHits) -> (Hdd, u64, Instant) {
    let mut p = crate::presets::cheetah_4lp();
    p.almost_read_hits = almost_read_hits;
    let mut d = Hdd::new(p);
    let first = serve_one(&mut d, Instant::ZERO, 0, Op::Read, 100_000, 64);
    let (_, ra) = d
        .cache
        .streaming()
        .expect("the drive reads ahead after a miss");
    let probe = (first.at + Duration::from_micros(300)).as_nanos() as f64;
    let reach = d.stream_reach(&ra, probe);
    assert!(
        reach > ra.origin_lba && reach < ra.limit_lba,
        "{reach} {ra:?}"
    );
    let zone = d.geo.zone_index(Lba(reach));
    let half_way = d.stream_time_to(&ra, reach) + d.sector_ns[zone] / 2.0;
    assert_eq!(
        d.stream_reach(&ra, half_way),
        reach,
        "still reading that sector"
    );
    (d, reach, Instant(half_way.ceil() as u64))
}

/// DiskSim's `Allow almost read hits`: a read whose first sector is the one the read-ahead is
/// reading now is a partial hit that joins the read-ahead when allowed (`Head`, and the default
/// `Ahead`: served as the stream passes, no seek, no rotational wait), and otherwise a miss: after
/// the miss overhead the sector has passed and the read waits most of a revolution for it.
#[test]
fn a_read_at_the_sector_being_read_ahead_joins_it_unless_almost_read_hits_are_refused() {
    for almost in [
        AlmostReadHits::Ahead,
        AlmostReadHits::Head,
        AlmostReadHits::None,
    ] {
        let (mut d, reach, at) = read_ahead_half_a_sector_into(almost);
        let rev = d.params.rotation_period();
        let c = serve_one(&mut d, at, 1, Op::Read, reach, 16);
        eprintln!("almost_read_hits = {almost:?}: {c:?}");
        assert_eq!(c.breakdown.seek, Duration::ZERO, "{c:?}");
        if almost != AlmostReadHits::None {
            // The hit overhead, then 16 sectors as the stream passes them (about 31 us each).
            assert!(c.breakdown.rotate < Duration::from_micros(20), "{c:?}");
            assert!(c.at - at < Duration::from_micros(700), "{c:?}");
        } else {
            assert!(!c.cache_hit);
            assert!(c.breakdown.rotate > Duration(rev.0 / 2), "{c:?}");
        }
    }
}

/// A read starting past the sector the read-ahead is reading is a miss under both of DiskSim's
/// settings: the read-ahead stops, and here the target (7 sectors on, 0.2 ms) passes during the
/// 0.61 ms miss overhead, so the read waits most of a revolution. Under the default `Ahead` it
/// joins the read-ahead and is served as the head reaches it, in well under a millisecond.
#[test]
fn a_read_just_past_the_sector_being_read_ahead_joins_it_only_by_default() {
    let (mut d, reach, at) = read_ahead_half_a_sector_into(AlmostReadHits::Ahead);
    let c = serve_one(&mut d, at, 1, Op::Read, reach + 8, 16);
    eprintln!("almost_read_hits = Ahead: {c:?}");
    assert_eq!(c.breakdown.seek, Duration::ZERO, "{c:?}");
    assert!(c.at - at < Duration::from_micros(900), "{c:?}");
    // The sectors it skipped were read on the way: they are in the segment.
    let again = serve_one(&mut d, c.at, 2, Op::Read, reach, 8);
    assert!(again.cache_hit, "{again:?}");
    for almost in [AlmostReadHits::Head, AlmostReadHits::None] {
        let (mut d, reach, at) = read_ahead_half_a_sector_into(almost);
        let rev = d.params.rotation_period();
        let c = serve_one(&mut d, at, 1, Op::Read, reach + 8, 16);
        eprintln!("almost_read_hits = {almost:?}: {c:?}");
        assert!(!c.cache_hit);
        assert!(c.breakdown.rotate > Duration(rev.0 / 2), "{c:?}");
        // The sectors skipped were never read: reading them again is a miss.
        let again = serve_one(&mut d, c.at, 2, Op::Read, reach, 8);
        assert!(!again.cache_hit, "{again:?}");
    }
}

fn write_back(p: &mut HddParams, mode: WriteCache) {
    p.write_cache = mode;
    p.write_segments = 1;
    p.read_hits_on_write_data = true;
}

#[test]
fn write_back_completes_when_the_data_is_in_the_cache() {
    let mut p = atlas_10k();
    write_back(&mut p, WriteCache::Full);
    let bus_ns = 512.0 / p.bus_bytes_per_s * 1e9;
    let mut d = Hdd::new(p.clone());
    let res = drive_serial(&mut d, &[(Op::Read, 0, 8), (Op::Write, 9_000_000, 8)]);
    let (start, c) = res[1];
    assert!(c.cache_hit, "a write-back write is absorbed by the cache");
    let expected = p.overhead.write_hit_after_read.as_nanos() as f64 + 8.0 * bus_ns;
    assert!(
        ((c.at - start).as_nanos() as f64 - expected).abs() <= 2.0,
        "{c:?}"
    );
    // Write-through pays the seek, the settle and the rotation.
    let mut wt = p.clone();
    wt.write_cache = WriteCache::Off;
    let mut d = Hdd::new(wt);
    let res = drive_serial(&mut d, &[(Op::Read, 0, 8), (Op::Write, 9_000_000, 8)]);
    assert!(res[1].1.at - res[1].0 > Duration::from_millis(3));
}

#[test]
fn reads_of_written_data_hit_and_other_reads_wait_for_the_destage() {
    let mut p = atlas_10k();
    write_back(&mut p, WriteCache::Full);
    let mut d = Hdd::new(p.clone());
    // Write far away, then at once read what was written (hit), then read elsewhere: the head
    // first finishes the destage (a long seek), so the read takes longer than its own access.
    let res = drive_serial(
        &mut d,
        &[
            (Op::Write, 15_000_000, 8),
            (Op::Read, 15_000_000, 8),
            (Op::Read, 100, 8),
        ],
    );
    assert!(res[1].1.cache_hit, "{:?}", res[1]);
    let third = res[2].1;
    assert!(!third.cache_hit);
    let far_seek = p.seek.seek_time(p.cylinders - 10);
    assert!(
        third.breakdown.seek >= far_seek,
        "waits for the destage, then seeks back: {third:?}"
    );
    // Without read hits on written data, the segment is dropped after its destage.
    let mut q = p.clone();
    q.read_hits_on_write_data = false;
    let mut d = Hdd::new(q);
    let res = drive_serial_think(
        &mut d,
        &[(Op::Write, 15_000_000, 8), (Op::Read, 15_000_000, 8)],
        Duration::from_millis(100),
    );
    assert!(!res[1].1.cache_hit);
}

#[test]
fn limited_write_back_takes_only_sequential_writes_while_dirty() {
    let mut p = cheetah_15k5();
    write_back(&mut p, WriteCache::Limited);
    p.combine_sequential_writes = true;
    let mut d = Hdd::new(p.clone());
    let res = drive_serial(
        &mut d,
        &[
            (Op::Write, 50_000_000, 8),
            (Op::Write, 50_000_008, 8),
            (Op::Write, 1_000, 8),
        ],
    );
    let quick = Duration::from_millis(1);
    assert!(res[0].1.at - res[0].0 < quick);
    assert!(
        res[1].1.at - res[1].0 < quick,
        "a sequential write is taken at once"
    );
    assert!(
        res[2].1.at - res[2].0 > quick,
        "another write waits for the pending destages: {:?}",
        res[2]
    );
    // Full write-back with one write segment makes the third write wait too, but not the second
    // (the second waits for the first's destage only).
    let mut f = p.clone();
    f.write_cache = WriteCache::Full;
    f.write_segments = 2;
    let mut d = Hdd::new(f);
    let res = drive_serial(
        &mut d,
        &[
            (Op::Write, 50_000_000, 8),
            (Op::Write, 1_000, 8),
            (Op::Write, 90_000_000, 8),
        ],
    );
    assert!(res[1].1.at - res[1].0 < quick);
    assert!(res[2].1.at - res[2].0 > quick);
}

#[test]
fn read_any_free_blocks_keeps_the_sectors_passed_before_the_target() {
    let run = |free: bool| {
        let mut p = atlas_10k();
        p.read_free_blocks = free;
        let mut d = Hdd::new(p);
        // A read in the middle of a track, then one just before it on the same track.
        let res = drive_serial_think(
            &mut d,
            &[
                (Op::Read, 10_000_000 + 200, 4),
                (Op::Read, 10_000_000 + 150, 4),
            ],
            Duration::from_millis(30),
        );
        res[1].1.cache_hit
    };
    // Whether the earlier sectors passed under the head depends on where it landed; over several
    // targets some must have, and none without the option.
    let mut hits = 0;
    for k in 0..8u64 {
        let mut p = atlas_10k();
        p.read_free_blocks = true;
        let mut d = Hdd::new(p);
        let base = 10_000_000 + k * 40_000;
        let res = drive_serial_think(
            &mut d,
            &[(Op::Read, base + 300, 4), (Op::Read, base + 290, 4)],
            Duration::from_millis(30),
        );
        hits += usize::from(res[1].1.cache_hit);
    }
    assert!(hits > 0);
    assert!(!run(false));
}

#[test]
fn read_ahead_schemes_stop_where_disksim_says() {
    let limit = |mode: ReadAheadMode, over: bool, lba: u64, n: u32| {
        let mut p = atlas_10k();
        if !over {
            p.readahead_max_sectors = p.cache_segment_sectors;
        }
        p.readahead_mode = mode;
        p.readahead_over_request = over;
        p.read_free_blocks = false;
        let mut d = Hdd::new(p);
        drive_serial(&mut d, &[(Op::Read, lba, n)]);
        d.cache()
            .streaming()
            .map(|(_, ra)| ra.limit_lba)
            .unwrap_or(lba + u64::from(n))
    };
    // Outer zone: 334 sectors per track (track 2 is 668..1002), 6 surfaces (cylinder 0 is
    // 0..2004); read-ahead at most 354, segments of 374.
    assert_eq!(limit(ReadAheadMode::Off, true, 990, 8), 998);
    assert_eq!(limit(ReadAheadMode::TrackEnd, true, 990, 8), 1_002);
    assert_eq!(limit(ReadAheadMode::CylinderEnd, true, 990, 8), 998 + 354);
    assert_eq!(limit(ReadAheadMode::Budget, true, 990, 8), 998 + 354);
    // DEC: to the end of the track holding the next sector, one more track for a stream (capped
    // by the segment).
    assert_eq!(limit(ReadAheadMode::TrackAhead, true, 990, 8), 1_002);
    assert_eq!(limit(ReadAheadMode::TrackAhead, true, 990, 12), 1_002 + 374);
    // Not over the request: the read-ahead stops when the segment is full from the request on.
    assert_eq!(limit(ReadAheadMode::Budget, false, 990, 8), 990 + 374);
}

/// With a minimum read-ahead the drive finishes reading ahead before it turns to the next command,
/// so interleaved streams with no think time still find their next requests in the cache (the
/// DiskSim study of paper 001_9c47c4c84914efc3.txt, section 3, Fig. 6); without it each new command
/// stops the read-ahead at once and every request is a miss.
#[test]
fn a_minimum_read_ahead_survives_back_to_back_commands() {
    let hit_rate = |min_sectors: u32| {
        let mut p = cheetah_15k5();
        p.cache_segments = 8;
        p.write_segments = 1;
        p.readahead_min_sectors = min_sectors;
        let mut d = Hdd::new(p);
        let mut reqs = Vec::new();
        for round in 0..20u64 {
            for s in 0..4u64 {
                reqs.push((Op::Read, s * 10_000_000 + round * 128, 128));
            }
        }
        let res = drive_serial(&mut d, &reqs);
        let later = &res[4..];
        later.iter().filter(|(_, c)| c.cache_hit).count() as f64 / later.len() as f64
    };
    let without = hit_rate(0);
    let with = hit_rate(1_200);
    assert!(without < 0.05, "no minimum: hit rate {without}");
    assert!(with > 0.9, "a full-segment minimum: hit rate {with}");
}

/// A command that waits for the minimum read-ahead to finish waits for the arm: the wait is
/// counted with the seek, as a wait for a destage is, and the transfer stays the data's own time.
#[test]
fn the_wait_for_a_minimum_read_ahead_is_not_transfer() {
    for op in [Op::Read, Op::Write] {
        let mut p = cheetah_15k5();
        p.readahead_min_sectors = 1_200;
        if op == Op::Write {
            write_back(&mut p, WriteCache::Full);
        }
        let rev_ns = p.rotation_period().as_nanos();
        let mut d = Hdd::new(p);
        // The second command arrives as the first completes, a revolution before the read-ahead
        // has filled its minimum.
        let res = drive_serial(&mut d, &[(Op::Read, 0, 8), (op, 100_000_000, 8)]);
        let b = res[1].1.breakdown;
        assert!(b.transfer.as_nanos() < rev_ns / 10, "{op:?}: {b:?}");
        assert!(b.seek.as_nanos() > rev_ns * 9 / 10, "{op:?}: {b:?}");
    }
}

#[test]
fn sptf_counts_the_sector_after_a_finished_read_ahead_as_under_the_head() {
    // One read of [0, 1024) on an idle drive; long after, its read-ahead has run to its limit and
    // the head sits just past the limit's last sector. SPTF's estimate must then take a read that
    // starts at the limit as ready at once (the next sector to pass under the head), and one a
    // sector further as needing the rotational wait. Taking the head for the first unread sector
    // had it the other way round.
    let (d, first_done) = after_one_read(QueuePolicy::Sptf);
    let (_, ra) = d
        .cache
        .streaming()
        .expect("the drive reads ahead after the read");
    let t = (first_done + Duration::from_millis(50)).as_nanos() as f64;
    assert_eq!(
        d.stream_reach(&ra, t),
        ra.limit_lba,
        "the read-ahead has ended"
    );
    let head = d.head_lba_at_ns(t);
    let read = |lba: u64| DevRequest {
        id: 1,
        op: Op::Read,
        lba: Lba(lba),
        sectors: 8,
    };
    assert_eq!(d.ready_at(t, head, &read(ra.limit_lba)), t);
    assert!(d.ready_at(t, head, &read(ra.limit_lba + 1)) > t);
}

/// Past 2^53 ns (104 days) an instant no longer fits an f64 exactly, and the model works in f64
/// nanoseconds: a command started at such an instant was timed from the instant rounded down, and
/// a part of zero length (the overhead of a back-to-back sequential read) ended before the command
/// began, which panicked ("instant subtraction went negative"). Every part now starts no earlier
/// than the command.
#[test]
fn commands_issued_years_in_are_timed_from_their_own_instant() {
    for start_ns in [
        (1u64 << 53) + 1,
        (3 << 53) + 3,
        700 * 86_400 * 1_000_000_000 + 7,
    ] {
        let mut d = Hdd::new(cheetah_15k5());
        let t = Instant(start_ns);
        // Back-to-back sequential reads queued together: the later ones stream on.
        for i in 0..8u64 {
            d.submit(
                t,
                DevRequest {
                    id: i,
                    op: Op::Read,
                    lba: Lba(5_000 + i * 256),
                    sectors: 256,
                },
            );
        }
        let mut out = Vec::new();
        while out.len() < 8 {
            let next = d.next_event().expect("queued reads complete");
            d.advance(next, &mut out);
        }
        for c in &out {
            assert!(c.at >= t && c.breakdown.total() == c.at - t, "{c:?}");
        }
    }
}

/// atlas-10k with the given sectors of zone 0 set aside (and, optionally, moved blocks).
fn atlas_with_spares(holes: Vec<(u64, u64)>, remaps: Vec<(u64, u64)>) -> HddParams {
    let mut p = atlas_10k();
    p.cache_enabled = false;
    p.write_cache = WriteCache::Off;
    p.spares = vec![ZoneSpares::default(); p.zones.len()];
    p.spares[0] = ZoneSpares {
        holes,
        remaps,
        ..ZoneSpares::default()
    };
    p
}

#[test]
fn a_read_across_a_slipped_sector_waits_one_sector_for_it() {
    let plain = atlas_with_spares(Vec::new(), Vec::new());
    // Sector 5 of the first track is slipped: blocks 5 on sit one sector later.
    let slipped = atlas_with_spares(vec![(5, 1)], Vec::new());
    assert_eq!(
        plain.capacity().0 - slipped.capacity().0,
        512,
        "the slipped sector holds no block"
    );
    let sector_ns =
        plain.rotation_period().as_nanos() as f64 / f64::from(plain.zones[0].sectors_per_track);
    // From block 300 on the same track, read blocks 0..10 (sectors 0..10, or 0..11 past the
    // slip): the head waits for sector 0 either way, then passes one sector more over the slip.
    let read = |p: HddParams, from: u64, lba: u64| {
        let mut d = Hdd::new(p);
        drive_serial(&mut d, &[(Op::Read, from, 1), (Op::Read, lba, 10)])[1].1
    };
    let extra = |from: u64, lba: u64| {
        let (a, b) = (
            read(plain.clone(), from, lba),
            read(slipped.clone(), from, lba),
        );
        assert_eq!(
            (a.breakdown.seek, b.breakdown.seek),
            (Duration::ZERO, Duration::ZERO)
        );
        (b.at - a.at).as_nanos() as f64
    };
    let across = extra(300, 0);
    assert!(
        (across - sector_ns).abs() < 2.0,
        "passing the slip cost {across} ns, one sector is {sector_ns} ns"
    );
    // Blocks 100..110 lie one sector further round, past the slip: the same read a sector later.
    let after = extra(300, 100);
    assert!(
        (after - sector_ns).abs() < 2.0,
        "the shifted blocks cost {after} ns more, one sector is {sector_ns} ns"
    );
}

#[test]
fn a_moved_block_costs_a_seek_there_and_back() {
    // Block 10 is moved to a spare sector on the zone's last cylinder (sector 2000 of its last
    // 6 x 334-sector cylinder); the zone ends in a 2,004-sector hole that holds the spare.
    let zone0 = atlas_10k().zones[0];
    let per_cyl = 6 * u64::from(zone0.sectors_per_track);
    let zone_sectors = u64::from(zone0.cylinder_count()) * per_cyl;
    let last_cyl_first = zone_sectors - per_cyl;
    let plain = atlas_with_spares(vec![(last_cyl_first, per_cyl)], Vec::new());
    let moved = atlas_with_spares(
        vec![(last_cyl_first, per_cyl)],
        vec![(10, last_cyl_first + 2000)],
    );
    let g = Hdd::new(moved.clone()).geometry().clone();
    assert_eq!(g.locate(Lba(10)).cylinder, zone0.last_cyl);
    assert_eq!(g.locate(Lba(11)).cylinder, 0);
    let read = |p: HddParams| {
        let mut d = Hdd::new(p);
        drive_serial(&mut d, &[(Op::Read, 0, 1), (Op::Read, 5, 10)])[1].1
    };
    let (a, b) = (read(plain), read(moved.clone()));
    let seek_ns = moved.seek.seek_ms(zone0.last_cyl) * 1e6;
    assert_eq!(
        a.breakdown.seek.as_nanos(),
        0,
        "the plain read stays on its track"
    );
    assert!(
        b.breakdown.seek.as_nanos() as f64 >= 2.0 * seek_ns - 2.0,
        "a seek out to the spare and back: {:?}, one seek is {seek_ns} ns",
        b.breakdown.seek
    );
}

/// A sequential stream slower than the media, 64 sectors a request with 0.5 ms between them: after
/// the first read (a miss) every read is served from the segment the read-ahead fills. DiskSim
/// moves the read-ahead's stop to `Maximum read-ahead` past each read served from the segment
/// while the read-ahead still runs (`disk_buffer_attempt_access_swap` and `disk_check_hda_pending`
/// raise the segment's `maxreadaheadblkno`), so the read-ahead stays ahead of the stream until it
/// is a whole budget ahead; a read-ahead whose stop was fixed by the first read alone would stop
/// 1,200 sectors past it and the read that crosses that point would wait for the platter.
#[test]
fn reads_served_during_the_read_ahead_carry_it_on() {
    let mut d = Hdd::new(cheetah_15k5());
    let reqs: Vec<(Op, u64, u32)> = (0..28u64).map(|i| (Op::Read, i * 64, 64)).collect();
    let res = drive_serial_think(&mut d, &reqs, Duration::from_micros(500));
    for (i, (_, c)) in res.iter().enumerate() {
        eprintln!(
            "read {i:2} at {:5}: hit {} rotate {:?} seek {:?}",
            i * 64,
            c.cache_hit,
            c.breakdown.rotate,
            c.breakdown.seek
        );
    }
    assert!(!res[0].1.cache_hit);
    let waits: Vec<usize> = (1..res.len()).filter(|&i| !res[i].1.cache_hit).collect();
    // Reads 19 and 20 cross sector 1,264, where a read-ahead set by the first read alone stops.
    assert!(
        waits.iter().all(|&i| i > 20),
        "reads {waits:?} (sectors from {:?}) went to the media",
        waits.iter().map(|i| i * 64).collect::<Vec<_>>()
    );
    // It still stops once it is a whole budget ahead of the reads it serves (hits on a stopped
    // read-ahead do not restart it), so a later read goes to the media and waits for the platter.
    let next = waits.first().expect("the read-ahead stops somewhere");
    assert!(res[*next].1.breakdown.rotate > Duration::ZERO);
}

/// A read served from a segment whose read-ahead has already stopped does not start it again
/// (DiskSim's `Read-ahead on idle hit = 0`, the value of every shipped drive), so once the host has
/// read up to where the read-ahead stopped, its next read goes to the media and waits for the
/// platter.
#[test]
fn reads_served_after_the_read_ahead_stopped_do_not_restart_it() {
    let mut d = Hdd::new(cheetah_15k5());
    let res = drive_serial(&mut d, &[(Op::Read, 0, 64)]);
    // 10 ms after the first read its read-ahead (to sector 64 + 1,200) is long over.
    let mut now = res[0].1.at + Duration::from_millis(10);
    let mut out = Vec::new();
    let mut hits = Vec::new();
    for i in 1..20u64 {
        let lba = i * 64;
        d.submit(
            now,
            DevRequest {
                id: i,
                op: Op::Read,
                lba: Lba(lba),
                sectors: 64,
            },
        );
        while out.is_empty() {
            let t = d.next_event().expect("a submitted request completes");
            d.advance(t, &mut out);
        }
        let c = out.pop().expect("one completion");
        hits.push((lba, c.cache_hit, c.breakdown.rotate));
        now = c.at + Duration::from_micros(500);
    }
    let first_miss = hits
        .iter()
        .position(|h| !h.1)
        .expect("a read past the read-ahead");
    assert_eq!(hits[first_miss].0, 1_216, "{hits:?}");
    assert!(hits[first_miss].2 > Duration::ZERO, "{hits:?}");
}

/// A C-LOOK sweep goes on from the last command a running read-ahead served, including hits that
/// carried it on, not from the read that started it: with the stream carried far past its start,
/// a queued read behind the stream's last hit belongs to the next sweep, one inside the stream to
/// this one.
#[test]
fn c_look_sweeps_on_from_the_last_hit_that_carried_the_read_ahead_on() {
    let mut p = cheetah_15k5();
    p.queue_depth = 8;
    p.queue_policy = QueuePolicy::CLook;
    let mut d = Hdd::new(p);
    let mut out = Vec::new();
    let mut now = Instant::ZERO;
    let mut serve = |d: &mut Hdd, now: &mut Instant, id: u64, lba: u64| {
        d.submit(
            *now,
            DevRequest {
                id,
                op: Op::Read,
                lba: Lba(lba),
                sectors: 64,
            },
        );
        while out.is_empty() {
            let t = d.next_event().expect("a submitted request completes");
            d.advance(t, &mut out);
        }
        let c = out.pop().expect("one completion");
        *now = c.at + Duration::from_micros(500);
        c
    };
    assert!(!serve(&mut d, &mut now, 0, 0).cache_hit);
    for i in 1..16u64 {
        assert!(serve(&mut d, &mut now, i, i * 64).cache_hit, "read {i}");
    }
    // The stream served up to sector 1,024 and runs on; sector 200 has left the segment's ring.
    let (_, ra) = d.cache().streaming().expect("the read-ahead runs");
    assert!(d.head_lba_at(now).0 > 1_300, "{:?}", d.head_lba_at(now));
    assert_eq!(ra.origin_lba, 64);
    let behind = 200;
    let inside = 1_024 + 64;
    // A hit keeps the drive busy while the two arrive, so C-LOOK picks between them.
    for (id, lba) in [(99, 960), (100, behind), (101, inside)] {
        d.submit(
            now,
            DevRequest {
                id,
                op: Op::Read,
                lba: Lba(lba),
                sectors: 8,
            },
        );
    }
    let mut done = Vec::new();
    while let Some(t) = d.next_event() {
        d.advance(t, &mut done);
    }
    let order: Vec<u64> = done.iter().map(|c| c.id).collect();
    assert_eq!(order, vec![99, 101, 100]);
}

/// Submits one command at `now` on an otherwise idle drive and returns its completion.
fn serve_one(d: &mut Hdd, now: Instant, id: u64, op: Op, lba: u64, sectors: u32) -> Completion {
    d.submit(
        now,
        DevRequest {
            id,
            op,
            lba: Lba(lba),
            sectors,
        },
    );
    let mut out = Vec::new();
    while out.is_empty() {
        let t = d.next_event().expect("a submitted command completes");
        d.advance(t, &mut out);
    }
    out.pop().expect("one completion")
}

/// The Cheetah 15K.5 (32 segments of 1,200 sectors) with a segment that holds sectors 10,000,064 to
/// 10,001,264 (a read whose read-ahead has ended) and a read-ahead running after a read of sectors 0
/// to 64 into another segment. Returns the drive and an instant 0.2 ms after that read completed,
/// when its read-ahead has fetched a few dozen sectors of its 1,200.
fn read_ahead_running_beside_a_filled_segment(min_sectors: u32) -> (Hdd, Instant) {
    let mut p = cheetah_15k5();
    p.readahead_min_sectors = min_sectors;
    let mut d = Hdd::new(p);
    serve_one(&mut d, Instant::ZERO, 0, Op::Read, 10_000_000, 64);
    let c = serve_one(&mut d, Instant(20_000_000), 1, Op::Read, 0, 64);
    let now = c.at + Duration::from_micros(200);
    let (_, ra) = d.cache().streaming().expect("the read-ahead runs");
    let reach = d.stream_reach(&ra, now.as_nanos() as f64);
    assert!(reach > 64 && reach < 400, "reach {reach}");
    assert_eq!(ra.limit_lba, 1_264);
    (d, now)
}

/// Which commands stop a running read-ahead, as DiskSim 4.0's controller decides with the shipped
/// drives' settings (`Preseeking level = 0`, `Minimum read-ahead = 0`, `Stop prefetch in sector =
/// 0`): every read that is activated while the prefetch runs asks `disk_buffer_stopable_access`,
/// which lets a read hit in the prefetching segment take the head over and carry the prefetch on
/// (`disk_buffer_attempt_access_swap`), while any other read, a full hit in another segment as
/// much as a miss, makes `disk_activate_read` stop it (`disk_buffer_stop_access`), and so does a
/// write (`disk_activate_write`). The drive model stopped it for misses and writes but let a hit
/// in another segment leave it running.
#[test]
fn only_a_hit_in_its_own_segment_leaves_a_read_ahead_running() {
    let cases = [
        ("a hit in the prefetching segment", Op::Read, 0, true),
        ("a hit in another segment", Op::Read, 10_000_064, false),
        ("a miss", Op::Read, 50_000_000, false),
        ("a write", Op::Write, 50_000_000, false),
    ];
    for (what, op, lba, runs_on) in cases {
        let (mut d, now) = read_ahead_running_beside_a_filled_segment(0);
        let c = serve_one(&mut d, now, 2, op, lba, 64);
        if op == Op::Read && lba != 50_000_000 {
            assert!(c.cache_hit, "{what}: {c:?}");
        }
        // A miss starts a read-ahead of its own; the question is whether stream 0's goes on.
        assert_eq!(
            d.cache()
                .streaming()
                .is_some_and(|(_, ra)| ra.origin_lba == 64),
            runs_on,
            "{what}: read-ahead {:?}",
            d.cache().streaming()
        );
    }
    // Stopped by the hit in the other segment, the read-ahead holds only what it had fetched by
    // then, so stream 0's next read, 5 ms later, goes to the media; left running it would have
    // been a hit.
    let (mut d, now) = read_ahead_running_beside_a_filled_segment(0);
    serve_one(&mut d, now, 2, Op::Read, 10_000_064, 64);
    let next = serve_one(&mut d, now + Duration::from_millis(5), 3, Op::Read, 64, 256);
    assert!(!next.cache_hit, "{next:?}");
}

/// With a minimum read-ahead, DiskSim's controller does not stop the prefetch before it has read
/// its minimum (`disk_buffer_stopable_access` is false and cuts the prefetch to the minimum), so a
/// read hit in another segment waits for the head like a miss does, and is then served from the
/// buffer; a hit in the prefetching segment is served at once.
#[test]
fn a_hit_in_another_segment_waits_for_the_minimum_read_ahead() {
    let (mut d, now) = read_ahead_running_beside_a_filled_segment(1_136);
    let rev_ns = d.params().rotation_period().as_nanos();
    let c = serve_one(&mut d, now, 2, Op::Read, 10_000_064, 64);
    assert!(c.cache_hit, "{c:?}");
    // About a revolution of the 1,136 sectors is still to come: waited for as for the arm.
    assert!(c.breakdown.seek.as_nanos() > rev_ns / 2, "{c:?}");
    let seg = (0..d.cache().len())
        .filter_map(|i| d.cache().segment(i))
        .find(|s| s.first_lba == 0)
        .expect("the read-ahead's segment");
    assert_eq!((seg.end_lba, seg.readahead), (1_200, None));
    let (mut d, now) = read_ahead_running_beside_a_filled_segment(1_136);
    let c = serve_one(&mut d, now, 2, Op::Read, 0, 64);
    assert!(c.cache_hit && c.breakdown.seek == Duration::ZERO, "{c:?}");
    assert!(d.cache().streaming().is_some());
}

/// A stream whose reads reach the drive out of order (a DFS server's concurrent workers, each
/// serving one of a client's RPCs) stops its own read-ahead the same way: the read of sectors the
/// stream's earlier read-ahead left in an older segment is a hit in another segment, not in the one
/// being prefetched, so DiskSim's controller stops the prefetch at the stream's front, and the
/// stream's next read there goes to the media.
#[test]
fn a_late_read_of_the_same_stream_in_an_older_segment_stops_its_read_ahead() {
    let mut d = Hdd::new(cheetah_15k5());
    // The stream's first read, whose read-ahead ends (at 1,264) long before the next command.
    serve_one(&mut d, Instant::ZERO, 0, Op::Read, 0, 64);
    // A read further on in the same file arrives first: a miss with a read-ahead of its own.
    let c = serve_one(&mut d, Instant(20_000_000), 1, Op::Read, 5_000, 64);
    assert!(!c.cache_hit, "{c:?}");
    let now = c.at + Duration::from_micros(200);
    let (front, _) = d
        .cache()
        .streaming()
        .expect("the read-ahead at the front runs");
    // The late read of sectors 64 to 128, held by the first read's segment.
    let late = serve_one(&mut d, now, 2, Op::Read, 64, 64);
    assert!(late.cache_hit, "{late:?}");
    assert!(
        d.cache().streaming().is_none(),
        "{:?}",
        d.cache().streaming()
    );
    let seg = d.cache().segment(front).expect("the front's segment");
    assert!(seg.end_lba < 5_064 + 200, "{seg:?}");
    let next = serve_one(
        &mut d,
        now + Duration::from_millis(5),
        3,
        Op::Read,
        5_064 + 200,
        64,
    );
    assert!(!next.cache_hit, "{next:?}");
}

/// A read that misses just past where a segment's read-ahead stopped: under DiskSim's own rules
/// (`None`, `Head`) it matches no segment, so `disk_buffer_select_read_segment` gives it an empty
/// (or the least recently used) segment and the segment it follows keeps its data; the default
/// (`Ahead`) grows the run it continues, whose oldest sectors the new read-ahead pushes out. The
/// model kept the run under every rule.
#[test]
fn a_miss_just_past_a_read_ahead_takes_a_fresh_segment_under_disksims_rules() {
    for almost in [
        AlmostReadHits::Ahead,
        AlmostReadHits::Head,
        AlmostReadHits::None,
    ] {
        let mut p = cheetah_15k5();
        p.almost_read_hits = almost;
        let mut d = Hdd::new(p);
        serve_one(&mut d, Instant::ZERO, 0, Op::Read, 0, 64);
        let (_, ra) = d.cache().streaming().expect("the drive reads ahead");
        let limit = ra.limit_lba;
        // Long after the read-ahead has run to its limit, the next read starts there.
        let next = serve_one(&mut d, Instant(20_000_000), 1, Op::Read, limit, 64);
        assert!(!next.cache_hit, "{almost:?}: {next:?}");
        let holds_start = (0..d.cache().len())
            .filter_map(|i| d.cache().segment(i))
            .any(|s| s.first_lba < 128 && s.end_lba == limit);
        // The segment keeps the newest 1,200 sectors of [0, limit): the first 64 are gone.
        let again = serve_one(&mut d, Instant(40_000_000), 2, Op::Read, 64, 64);
        eprintln!(
            "almost_read_hits = {almost:?}: first segment kept {holds_start}, re-read hit {}",
            again.cache_hit
        );
        let fresh = almost != AlmostReadHits::Ahead;
        assert_eq!(holds_start, fresh, "{almost:?}");
        assert_eq!(again.cache_hit, fresh, "{almost:?}: {again:?}");
    }
}

/// A read that arrives while a minimum read-ahead is still to be read, ahead of where the
/// read-ahead has got but inside its minimum, waits for the head; once the minimum is in, DiskSim
/// looks for its segment again (`disk_check_prefetch_swap`), finds the sectors in the prefetching
/// segment and serves them from the buffer. One that starts inside the minimum and ends past it
/// joins the read-ahead. The model kept both misses: after the wait it positioned the head for
/// sectors the buffer held. A synthetic drive: the Cheetah 4LP with a 150-sector minimum and
/// DiskSim's own `Allow almost read hits = 0`.
#[test]
fn a_read_inside_the_minimum_read_ahead_is_a_hit_once_the_minimum_is_in() {
    let synthetic = || {
        let mut p = crate::presets::cheetah_4lp();
        p.almost_read_hits = AlmostReadHits::None;
        p.readahead_min_sectors = 150;
        p
    };
    for (what, offset, sectors) in [("inside", 100u64, 16u32), ("across", 140, 40)] {
        let mut d = Hdd::new(synthetic());
        let rev = d.params().rotation_period();
        let first = serve_one(&mut d, Instant::ZERO, 0, Op::Read, 100_000, 64);
        let (_, ra) = d.cache().streaming().expect("the drive reads ahead");
        assert_eq!(ra.floor_lba, 100_064 + 150);
        let at = first.at + Duration::from_micros(300);
        let reach = d.stream_reach(&ra, at.as_nanos() as f64);
        assert!(reach < 100_064 + offset, "{reach}");
        let t_floor = Instant(d.stream_time_to(&ra, ra.floor_lba).ceil() as u64);
        let c = serve_one(&mut d, at, 1, Op::Read, 100_064 + offset, sectors);
        eprintln!("{what} the minimum: {c:?}, minimum in at {t_floor:?}");
        assert!(
            c.at >= t_floor,
            "{what}: served before the minimum was in: {c:?}"
        );
        assert!(
            c.at - t_floor < Duration(rev.0 / 2),
            "{what}: positioned the head again: {c:?}"
        );
        assert_eq!(c.cache_hit, what == "inside", "{what}: {c:?}");
        // Served by the running read-ahead, which goes on (a hit carries it on; a read that
        // joins it reads on past its end).
        let (_, now_ra) = d.cache().streaming().expect("the read-ahead goes on");
        let origin = if what == "inside" {
            ra.origin_lba
        } else {
            100_064 + offset + u64::from(sectors)
        };
        assert_eq!(now_ra.origin_lba, origin, "{what}");
    }
}

/// The Atlas 10K preset with zero-latency reads on or off, and no free-block reads, so that a
/// read's time is its own media pass.
fn atlas_10k_reading_immediately(immediate_read: bool) -> Hdd {
    let mut p = atlas_10k();
    p.read_free_blocks = false;
    p.immediate_read = immediate_read;
    Hdd::new(p)
}

/// DiskSim's `Immediate buffer read` (the Atlas 10K file sets it): a read that lands on its track
/// past its first sector reads on from the head and takes the sectors before on the next turn,
/// so a whole-track read is done a revolution after the head lands, where without it the head
/// waits for the track's first sector and then reads a revolution. The model ignored the setting.
/// The sectors still go to the host in order, so the bus starts with the first sector. A read
/// of one sector cannot land inside itself and is timed as before.
#[test]
fn an_immediate_read_is_done_a_revolution_after_the_head_lands() {
    let drive = atlas_10k_reading_immediately;
    let probe = drive(false);
    let (first, end) = probe.geometry().track_bounds(Lba(5_000_000));
    let sectors = (end - first) as u32;
    let rev = probe.params().rotation_period();
    let zone = probe.geo.zone_index(Lba(first));
    let sector = Duration(probe.sector_ns[zone].ceil() as u64);
    let bus = Duration(probe.bus_sector_ns.ceil() as u64);
    let mut faster = 0;
    for k in 0..12u64 {
        let at = Instant(20_000_000 + k * 537_123);
        let run = |immediate_read: bool, lba: u64, n: u32| {
            let mut d = drive(immediate_read);
            serve_one(&mut d, Instant::ZERO, 0, Op::Read, 0, 8);
            serve_one(&mut d, at, 1, Op::Read, lba, n)
        };
        let (plain, immediate) = (run(false, first, sectors), run(true, first, sectors));
        let positioned = at + plain.breakdown.overhead + plain.breakdown.seek;
        eprintln!(
            "arrival {k}: plain {:?}, immediate {:?} after positioning",
            plain.at - positioned,
            immediate.at - positioned
        );
        assert!(immediate.at <= plain.at, "{immediate:?} {plain:?}");
        assert!(plain.at - positioned >= rev, "{plain:?}");
        assert!(
            immediate.at - positioned <= rev + sector + Duration(bus.0 * u64::from(sectors + 1)),
            "{immediate:?}"
        );
        if plain.at - immediate.at > Duration(rev.0 / 4) {
            faster += 1;
        }
        let one = |immediate_read| run(immediate_read, first + 100, 1);
        assert_eq!(one(true).at, one(false).at);
    }
    assert!(
        faster >= 6,
        "{faster} of 12 arrivals saved a quarter revolution"
    );
}

/// A zero-latency read's sectors still go to the host in order, so the sector just before the
/// landing, read last (a revolution after the landing), holds back every sector after it, which
/// then cross the bus one by one. The Atlas 10K preset's bus is faster than its media, and the
/// model let the read end a bus sector after its media pass, as if the sectors after the landing
/// could leave before the one before it had been read.
#[test]
fn an_immediate_read_keeps_the_host_in_sector_order() {
    let drive = atlas_10k_reading_immediately;
    let probe = drive(false);
    let (first, end) = probe.geometry().track_bounds(Lba(5_000_000));
    let sectors = end - first;
    let rev_ns = probe.params().rotation_period().as_nanos() as f64;
    let sector_ns = probe.sector_ns[probe.geo.zone_index(Lba(first))];
    let bus_ns = probe.bus_sector_ns;
    assert!(
        bus_ns < sector_ns,
        "the case needs a bus faster than the media"
    );
    let mut held_back = 0;
    for k in 0..12u64 {
        let at = Instant(20_000_000 + k * 537_123);
        let run = |immediate_read: bool| {
            let mut d = drive(immediate_read);
            serve_one(&mut d, Instant::ZERO, 0, Op::Read, 0, 8);
            serve_one(&mut d, at, 1, Op::Read, first, sectors as u32)
        };
        let (plain, immediate) = (run(false), run(true));
        let positioned = at + plain.breakdown.overhead + plain.breakdown.seek;
        // Without immediate reads the head waits `after` sectors (less than one more) for the
        // track's first sector and reads the track; the bus ends a sector after the media.
        let waited_ns = (plain.at - positioned).as_nanos() as f64 - rev_ns - bus_ns;
        let after = (waited_ns / sector_ns).floor().max(0.0) as u64;
        if after == 0 || after >= sectors {
            continue;
        }
        // With them the head lands `after` sectors before the track's end and reads those first;
        // the sector before the landing is read a revolution later, and it and the `after`
        // sectors behind it then go to the host.
        let floor_ns = rev_ns + after as f64 * bus_ns;
        let took_ns = (immediate.at - positioned).as_nanos() as f64;
        eprintln!("arrival {k}: {after} sectors after the landing, immediate took {took_ns} ns, at least {floor_ns} ns");
        assert!(took_ns + 1.0 >= floor_ns, "arrival {k}: {immediate:?}");
        if after > 1 {
            held_back += 1;
        }
    }
    assert!(
        held_back >= 4,
        "only {held_back} arrivals landed inside the track"
    );
}

/// The reach memo answers only the exact question it last computed: asking again, at another
/// instant, or for a read-ahead that differs in any field the reach depends on gives what a walk
/// from the read-ahead's origin gives.
#[test]
fn stream_reach_memo_answers_as_the_walk_does() {
    let mut d = Hdd::new(crate::presets::cheetah_4lp());
    let first = serve_one(&mut d, Instant::ZERO, 0, Op::Read, 100_000, 64);
    let (_, ra) = d
        .cache
        .streaming()
        .expect("the drive reads ahead after a miss");
    let t0 = first.at.as_nanos() as f64;
    let later = ReadAhead {
        origin_ns: ra.origin_ns + 1.0,
        ..ra
    };
    let shorter = ReadAhead {
        limit_lba: ra.origin_lba + 3,
        ..ra
    };
    let further = ReadAhead {
        origin_lba: ra.origin_lba + 1,
        ..ra
    };
    for step_us in [300u64, 300, 301, 5_000, 300, 300] {
        let t = t0 + (step_us * 1_000) as f64;
        for r in [ra, ra, later, shorter, further, ra] {
            assert_eq!(
                d.stream_reach(&r, t),
                d.compute_stream_reach(&r, t),
                "{r:?} at {t}"
            );
        }
    }
    // The memo is not stale after a question whose answer differs.
    let a = d.stream_reach(&ra, t0 + 300_000.0);
    let b = d.stream_reach(&shorter, t0 + 300_000.0);
    assert_ne!(a, b, "the shorter read-ahead stops first");
    assert_eq!(d.stream_reach(&ra, t0 + 300_000.0), a);
}
