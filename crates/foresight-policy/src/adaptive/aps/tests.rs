//! The APS client stream against paper 004's Algorithm 1 and condition 20: the ramp to alpha units
//! in flight, the window bound, random reads costing at most one extra unit, clipping at the end of
//! the file, and the policy face that drivers see.

use super::*;
use proptest::prelude::*;

fn drain(s: &mut ApsStream) -> Vec<RangeRequest> {
    std::iter::from_fn(|| s.poll_request()).collect()
}

fn cfg(alpha: AlphaMode) -> ApsConfig {
    ApsConfig {
        max_readahead: ByteLen::kib(1024),
        initial_readahead: ByteLen::kib(128),
        alpha,
        ..ApsConfig::default()
    }
}

/// Reads the whole file in `read_bytes` steps, completing every request at once, and returns every
/// request issued.
fn read_sequentially(s: &mut ApsStream, file_bytes: u64, read_bytes: u64) -> Vec<RangeRequest> {
    let mut all = Vec::new();
    let mut off = 0;
    while off < file_bytes {
        s.on_read(ByteRange::new(off, read_bytes));
        let reqs = drain(s);
        for r in &reqs {
            s.on_complete(r.id, None);
        }
        all.extend(reqs);
        all.extend(drain(s));
        off += read_bytes;
    }
    all
}

#[test]
fn a_sequential_reader_ramps_up_then_keeps_alpha_plus_one_units_ahead() {
    let mut s = ApsStream::new(cfg(AlphaMode::Fixed(4)), ByteLen::mib(64)).unwrap();
    let reqs = read_sequentially(&mut s, 64 << 20, 128 << 10);
    // Every byte is fetched exactly once, in order, with no gaps.
    let mut end = 0;
    for r in &reqs {
        assert_eq!(r.range.start.0, end, "{r:?}");
        end = r.range.end().0;
        assert!(r.range.len <= ByteLen::mib(1));
    }
    assert_eq!(end, 64 << 20);
    // The first two reads are demand; then the unit doubles 128 KiB -> 256 KiB -> 512 KiB -> 1 MiB
    // (128 KiB is not below 1 MiB / 16, so it doubles rather than quadruples).
    let lens: Vec<(u64, FetchKind)> = reqs
        .iter()
        .take(5)
        .map(|r| (r.range.len.0 >> 10, r.kind))
        .collect();
    use FetchKind::*;
    assert_eq!(
        lens,
        vec![
            (128, Demand),
            (128, Demand),
            (256, Readahead),
            (512, Readahead),
            (1024, Readahead)
        ]
    );
    assert_eq!(next_unit_bytes(16 << 10, 1 << 20), 64 << 10);
    assert_eq!(s.cur_ra_num(), 4);
}

#[test]
fn the_window_never_holds_more_than_alpha_plus_one_units() {
    for alpha in [1, 2, 5] {
        let mut s = ApsStream::new(cfg(AlphaMode::Fixed(alpha)), ByteLen::mib(256)).unwrap();
        let mut off = 0;
        while off < (256 << 20) {
            s.on_read(ByteRange::new(off, 64 << 10));
            drain(&mut s);
            assert!(
                s.window_ahead().0 <= u64::from(alpha + 1) << 20,
                "alpha {alpha}: {} ahead",
                s.window_ahead()
            );
            off += 64 << 10;
        }
    }
}

#[test]
fn a_random_read_fetches_its_bytes_plus_at_most_one_unit() {
    let mut s = ApsStream::new(cfg(AlphaMode::Fixed(8)), ByteLen::gib(1)).unwrap();
    // Small: rounded up to one initial unit.
    s.on_read(ByteRange::new(10 << 20, 4096));
    let r = drain(&mut s);
    let total: u64 = r.iter().map(|r| r.range.len.0).sum();
    assert_eq!(total, 128 << 10);
    for q in &r {
        s.on_complete(q.id, None);
    }
    // Large: exactly the bytes, in 1 MiB pieces, at most alpha + 1 at a time.
    s.on_read(ByteRange::new(500 << 20, 64 << 20));
    let first = drain(&mut s);
    assert_eq!(first.len(), 9);
    assert!(first.iter().all(|r| r.kind == FetchKind::Demand));
    let mut all = first.clone();
    let mut pending: VecDeque<_> = first.into_iter().collect();
    while let Some(r) = pending.pop_front() {
        s.on_complete(r.id, None);
        let more = drain(&mut s);
        pending.extend(more.iter().copied());
        all.extend(more);
        assert!(s.in_flight() <= 9);
    }
    let total: u64 = all.iter().map(|r| r.range.len.0).sum();
    assert_eq!(total, 64 << 20);
}

#[test]
fn reads_past_the_end_are_clipped() {
    let mut s = ApsStream::new(cfg(AlphaMode::Fixed(2)), ByteLen(1000)).unwrap();
    s.on_read(ByteRange::new(900, 500));
    let r = drain(&mut s);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].range, ByteRange::new(900, 100));
    s.on_read(ByteRange::new(5000, 10));
    assert!(drain(&mut s).is_empty());
}

#[test]
fn auto_alpha_follows_condition_20_with_the_slower_of_device_and_path() {
    let mut c = cfg(AlphaMode::Auto);
    c.device =
        Some(DeviceFigures::new(ByteLen::mib(1), Bandwidth::from_mib_s(100.0), 1.2).unwrap());
    let mut s = ApsStream::new(c, ByteLen::gib(1)).unwrap();
    assert_eq!(s.alpha(), 1, "no round trip yet");
    // 50 ms round trip, device only: 50 / 4.545 - 1 = 10.0.
    s.observe_rtt(Duration::from_millis(50));
    assert_eq!(s.alpha(), 10);
    // A 1 MiB body in 40 ms (25 MiB/s) makes the path the bottleneck: the read time of one unit
    // becomes 1 MiB / (25 MiB/s * 2.2) = 18.2 ms and SendAndReq = 50 + 40 ms: alpha = ceil(4.95 - 1).
    s.observe_exchange(ExchangeTiming {
        sent: Instant(0),
        first_byte: Instant(50_000_000),
        last_byte: Instant(90_000_000),
        body: ByteLen::mib(1),
        server_proc: None,
    });
    assert_eq!(s.rtt(), Some(Duration::from_millis(50)));
    assert_eq!(s.alpha(), 4);
    // The cap holds.
    let mut c2 = cfg(AlphaMode::Auto);
    c2.max_alpha = 3;
    c2.rtt_hint = Some(Duration::from_secs(1));
    c2.device = c.device;
    assert_eq!(ApsStream::new(c2, ByteLen::gib(1)).unwrap().alpha(), 3);
}

/// One exchange per millisecond whose head is read 100 us after the request left (60 us of it the
/// server's) and whose 1 MiB body was all waiting by then, gathered in 300 ns: a path too fast to
/// time, as loopback is.
fn too_fast_to_time(s: &mut ApsStream, body: ByteLen) {
    for i in 0..20u64 {
        let sent = i * 1_000_000;
        s.observe_exchange(ExchangeTiming {
            sent: Instant(sent),
            first_byte: Instant(sent + 100_000),
            last_byte: Instant(sent + 100_300),
            body,
            server_proc: Some(Duration(60_000)),
        });
    }
}

/// Such bodies give no path rate, so no made-up rate drives alpha: against a server without
/// figures it stays at one unit ahead (the fastest body's "3,300,000 MiB/s" used to send it to
/// `max_alpha`), and with figures it follows the device as if no body had been timed.
#[test]
fn a_path_too_fast_to_time_does_not_drive_alpha() {
    let mut s = ApsStream::new(cfg(AlphaMode::Auto), ByteLen::gib(1)).unwrap();
    too_fast_to_time(&mut s, ByteLen::mib(1));
    assert_eq!(s.path_rate(), None);
    assert_eq!(s.rtt(), Some(Duration(40_000)));
    assert_eq!(s.alpha(), 1);
    let mut c = cfg(AlphaMode::Auto);
    c.device = Some(DeviceFigures::new(ByteLen::mib(1), Bandwidth::from_mib_s(2.0), 1.2).unwrap());
    let mut timed = ApsStream::new(c, ByteLen::gib(1)).unwrap();
    too_fast_to_time(&mut timed, ByteLen::mib(1));
    let mut untimed = ApsStream::new(c, ByteLen::gib(1)).unwrap();
    too_fast_to_time(&mut untimed, ByteLen::ZERO);
    assert_eq!(timed.path_rate(), None);
    assert_eq!(timed.alpha(), untimed.alpha());
}

/// A body is timed from the earliest moment its first byte could have arrived (sent + server
/// time + smallest round trip), not from when its head was read: a client that read the head
/// late must not see the body arrive faster than it did.
#[test]
fn a_late_read_head_does_not_shorten_the_body() {
    let mut s = ApsStream::new(cfg(AlphaMode::Auto), ByteLen::gib(1)).unwrap();
    s.observe_rtt(Duration::from_millis(10));
    // Sent at 0, the server took 5 ms, the head was read at 35 ms (20 ms late) and the last byte
    // at 55 ms: the body can have been arriving since 15 ms, so 1 MiB in 40 ms, not in 20.
    s.observe_exchange(ExchangeTiming {
        sent: Instant(0),
        first_byte: Instant(35_000_000),
        last_byte: Instant(55_000_000),
        body: ByteLen::mib(1),
        server_proc: Some(Duration::from_millis(5)),
    });
    let mib_s = s.path_rate().unwrap().as_mib_s();
    assert!((mib_s - 25.0).abs() < 1e-9, "{mib_s}");
}

#[test]
fn bad_settings_name_their_key() {
    let key = |c: ApsConfig| match ApsStream::new(c, ByteLen::mib(1)) {
        Err(PolicyError::BadSetting { key, .. }) => key,
        other => panic!("{other:?}"),
    };
    let base = cfg(AlphaMode::Auto);
    assert_eq!(
        key(ApsConfig {
            initial_readahead: ByteLen::mib(2),
            ..base
        }),
        "initial_readahead"
    );
    assert_eq!(
        key(ApsConfig {
            max_readahead: ByteLen::ZERO,
            ..base
        }),
        "max_readahead"
    );
    assert_eq!(
        key(ApsConfig {
            max_alpha: 0,
            ..base
        }),
        "max_alpha"
    );
    assert_eq!(
        key(ApsConfig {
            alpha: AlphaMode::Fixed(0),
            ..base
        }),
        "alpha"
    );
    assert_eq!(
        key(ApsConfig {
            peak_ratio: 0.5,
            ..base
        }),
        "peak_ratio"
    );
}

#[test]
fn the_policy_face_fetches_readahead_only() {
    let layout = Arc::new(Layout::unplaced(&[ByteLen::mib(16)]));
    let mut p = Aps::new(cfg(AlphaMode::Fixed(2)), layout).unwrap();
    assert_eq!(p.name(), "aps");
    let mut fetched = 0;
    let mut off = 0;
    while off < 16 << 20 {
        p.handle(
            Instant::ZERO,
            Input::Read {
                stream: StreamId(0),
                file: FileId(0),
                range: ByteRange::new(off, 128 << 10),
                miss: None,
            },
        );
        while let Some(o) = p.poll_output() {
            match o {
                Output::Fetch { id, range, .. } => {
                    assert!(range.start.0 >= off + (128 << 10));
                    fetched += range.len.0;
                    p.handle(Instant::ZERO, Input::Fetched { id, ok: true });
                }
                other => panic!("{other:?}"),
            }
        }
        off += 128 << 10;
    }
    // The first two reads (a fresh one, then the first sequential one, which only starts the ramp)
    // are left to the driver.
    assert_eq!(fetched, (16 << 20) - (256 << 10));
    assert_eq!(p.stream(StreamId(0), FileId(0)).unwrap().cur_ra_num(), 2);
}

#[test]
fn a_closed_stream_is_forgotten_with_its_fetches() {
    let layout = Arc::new(Layout::unplaced(&[ByteLen::mib(16), ByteLen::mib(16)]));
    let mut p = Aps::new(cfg(AlphaMode::Fixed(2)), layout).unwrap();
    let mut pending = Vec::new();
    for (stream, file) in [(0, 0), (0, 1), (1, 0)] {
        for off in [0, 128 << 10, 256 << 10] {
            p.handle(
                Instant::ZERO,
                Input::Read {
                    stream: StreamId(stream),
                    file: FileId(file),
                    range: ByteRange::new(off, 128 << 10),
                    miss: None,
                },
            );
            while let Some(o) = p.poll_output() {
                if let Output::Fetch { id, .. } = o {
                    pending.push(id);
                }
            }
        }
    }
    assert!(!pending.is_empty(), "the streams fetch ahead");
    p.handle(
        Instant::ZERO,
        Input::StreamClosed {
            stream: StreamId(0),
        },
    );
    assert!(p.stream(StreamId(0), FileId(0)).is_none());
    assert!(p.stream(StreamId(0), FileId(1)).is_none());
    assert!(p.stream(StreamId(1), FileId(0)).is_some());
    assert!(
        p.fetches.values().all(|((s, _), _)| *s == StreamId(1)),
        "the closed stream's fetches are forgotten"
    );
    // Their completions (and the others') are taken without touching a stream of the old id.
    for id in pending {
        p.handle(Instant::ZERO, Input::Fetched { id, ok: true });
    }
    assert!(p.stream(StreamId(0), FileId(0)).is_none());
}

proptest! {
    /// Whatever the reads, every byte asked for is covered by a request issued for it or
    /// earlier in the stream's window, requests stay inside the file and are at most one unit
    /// long, and the bytes issued for each fresh read are at most its size plus one unit.
    #[test]
    fn requests_cover_reads_and_stay_bounded(
        reads in proptest::collection::vec((0u64..(8 << 20), 1u64..(3 << 20), any::<bool>()), 1..40),
        alpha in 1u32..6,
    ) {
        let file = 8u64 << 20;
        let mut s = ApsStream::new(cfg(AlphaMode::Fixed(alpha)), ByteLen(file)).unwrap();
        let mut covered: Vec<ByteRange> = Vec::new();
        let mut next = 0u64;
        for (off, len, sequential) in reads {
            let start = if sequential { next } else { off };
            let before = s.issued_bytes().0;
            s.on_read(ByteRange::new(start, len));
            // Complete everything, as a client waiting for its read would.
            loop {
                let reqs = drain(&mut s);
                if reqs.is_empty() { break; }
                for r in reqs {
                    prop_assert!(r.range.end().0 <= file);
                    prop_assert!(r.range.len.0 <= 1 << 20 && r.range.len.0 > 0);
                    covered.push(r.range);
                    s.on_complete(r.id, None);
                }
            }
            let end = (start + len).min(file);
            if start < end && !sequential {
                let issued = s.issued_bytes().0 - before;
                prop_assert!(issued <= (end - start) + (128 << 10), "issued {issued} for {len}");
            }
            let mut b = start;
            while b < end {
                let hit = covered.iter().find(|r| r.contains(foresight_core::ByteOffset(b)));
                prop_assert!(hit.is_some(), "byte {b} of read {start}+{len} never fetched");
                b = hit.unwrap().end().0;
            }
            if start < end { next = end; }
        }
    }
}

#[test]
fn in_flight_is_the_read_in_progress_plus_at_most_alpha_plus_one_units_ahead() {
    // A reader of 4 MiB at a time outruns a window of 1 MiB units: what it lacks goes out as
    // demand beside the readahead. It waits for the requests its read overlaps (as a client
    // must); the others stay in flight.
    for alpha in [1u32, 2, 5] {
        let mut s = ApsStream::new(cfg(AlphaMode::Fixed(alpha)), ByteLen::mib(256)).unwrap();
        let mut out: BTreeMap<FetchId, ByteRange> = BTreeMap::new();
        let mut peak = 0u64;
        let mut off = 0u64;
        while off < 256 << 20 {
            let read = ByteRange::new(off, 4 << 20);
            let mut demand = 0u32;
            s.on_read(read);
            loop {
                for r in drain(&mut s) {
                    out.insert(r.id, r.range);
                    demand += u32::from(r.kind == FetchKind::Demand);
                }
                peak = peak.max(out.values().map(|r| r.len.0).sum());
                let wanted: Vec<FetchId> = out
                    .iter()
                    .filter(|(_, r)| r.start.0 < read.end().0)
                    .map(|(&id, _)| id)
                    .collect();
                if wanted.is_empty() {
                    break;
                }
                // Demand goes out at most alpha + 1 units at a time.
                assert!(
                    demand <= alpha + 1,
                    "alpha {alpha}: {demand} demand units out"
                );
                for id in wanted {
                    out.remove(&id);
                    s.on_complete(id, None);
                }
                demand = 0;
            }
            off += 4 << 20;
        }
        // The read's own 4 MiB (the earlier readahead and the demand that cover it) plus the
        // window ahead of it.
        let bound = (4 << 20) + u64::from(alpha + 1) * (1 << 20);
        assert!(peak <= bound, "alpha {alpha}: {peak} bytes in flight");
        assert!(
            peak > u64::from(alpha + 1) << 20,
            "alpha {alpha}: the read never outran"
        );
    }
}
