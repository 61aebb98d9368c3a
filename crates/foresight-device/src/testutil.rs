//! A minimal driver for tests: feeds timed arrivals to a device following the [`Device`] protocol and
//! checks the invariants every completion must satisfy.

use std::collections::HashMap;

use foresight_core::{Duration, Instant, Lba};

use crate::{Completion, DevRequest, Device, Op};

/// A request and the instant it arrives at the driver.
#[derive(Clone, Copy, Debug)]
pub struct Arrival {
    pub at_ns: u64,
    pub op: Op,
    pub lba: u64,
    pub sectors: u32,
}

impl Arrival {
    pub fn at(at_ns: u64, op: Op, lba: u64, sectors: u32) -> Arrival {
        Arrival {
            at_ns,
            op,
            lba,
            sectors,
        }
    }
}

/// Runs `arrivals` (sorted by time) through `dev`, submitting each at its arrival or, if the device
/// is full, as soon as it can accept. Request ids are arrival indices. Returns `(submission,
/// completion)` in completion order, after checking that every breakdown adds up to the latency,
/// completions come in time order and every request completes exactly once.
pub fn drive(dev: &mut dyn Device, arrivals: &[Arrival]) -> Vec<(Instant, Completion)> {
    let mut submitted: HashMap<u64, Instant> = HashMap::new();
    let mut results = Vec::with_capacity(arrivals.len());
    let mut out = Vec::new();
    let mut now = Instant::ZERO;
    let mut next = 0usize;
    let mut steps = 0u64;
    loop {
        steps += 1;
        assert!(steps < 50_000_000, "driver made no progress");
        let arrival = arrivals.get(next).map(|a| Instant(a.at_ns).max(now));
        let event = dev.next_event();
        match (arrival, event) {
            (Some(ta), ev) if dev.can_accept() && ev.is_none_or_later(ta) => {
                now = ta;
                let a = arrivals[next];
                let req = DevRequest {
                    id: next as u64,
                    op: a.op,
                    lba: Lba(a.lba),
                    sectors: a.sectors,
                };
                dev.submit(now, req);
                submitted.insert(next as u64, now);
                next += 1;
            }
            (_, Some(te)) => {
                now = te.max(now);
                dev.advance(now, &mut out);
            }
            (Some(_), None) => panic!("device is full but reports no event"),
            (None, None) => break,
        }
        for c in out.drain(..) {
            let s = submitted
                .remove(&c.id)
                .expect("completion for an unknown or finished id");
            assert!(c.at >= s, "completed before submission: {c:?}");
            assert!(c.at <= now, "completion from the future: {c:?} at {now}");
            assert_eq!(
                c.breakdown.total(),
                c.at - s,
                "breakdown does not add up: {c:?}"
            );
            if let Some((_, prev)) = results.last() {
                let prev: &Completion = prev;
                assert!(c.at >= prev.at, "completions out of order");
            }
            results.push((s, c));
        }
    }
    assert!(
        submitted.is_empty(),
        "requests never completed: {submitted:?}"
    );
    assert_eq!(dev.outstanding(), 0);
    results
}

/// Back-to-back requests: each is submitted the moment the previous one completes (queue depth 1 from
/// the host, no think time).
pub fn drive_serial(dev: &mut dyn Device, reqs: &[(Op, u64, u32)]) -> Vec<(Instant, Completion)> {
    drive_serial_think(dev, reqs, Duration::ZERO)
}

/// Like [`drive_serial`], with the host idle for `think` between a completion and the next request.
pub fn drive_serial_think(
    dev: &mut dyn Device,
    reqs: &[(Op, u64, u32)],
    think: Duration,
) -> Vec<(Instant, Completion)> {
    let mut now = Instant::ZERO;
    let mut results = Vec::with_capacity(reqs.len());
    let mut out = Vec::new();
    for (i, &(op, lba, sectors)) in reqs.iter().enumerate() {
        dev.submit(
            now,
            DevRequest {
                id: i as u64,
                op,
                lba: Lba(lba),
                sectors,
            },
        );
        while out.is_empty() {
            let t = dev.next_event().expect("a submitted request completes");
            dev.advance(t, &mut out);
        }
        let c = out.pop().expect("one completion");
        assert!(out.is_empty());
        assert_eq!(c.breakdown.total(), c.at - now);
        results.push((now, c));
        now = c.at + think;
    }
    results
}

trait NoneOrLater {
    fn is_none_or_later(&self, t: Instant) -> bool;
}

impl NoneOrLater for Option<Instant> {
    fn is_none_or_later(&self, t: Instant) -> bool {
        match self {
            None => true,
            Some(x) => *x > t,
        }
    }
}
