//! What an engine leaves behind once dropped: nothing, however it ended.
//!
//! A server builds and drops engines (one per configuration it is asked to measure, or one
//! rebuilt after a fault), so an engine that kept a buffer, a descriptor or a table alive past
//! its drop would leak with every one. This binary counts the heap bytes in use (its own global
//! allocator adds up every allocation less every free), builds and drops engines along each way
//! an engine ends (read to the end and closed; dropped with a fetch held in the device; poisoned
//! by a policy's panic; the array cache over an emulated RAID-0 dropped with reads in flight, or
//! poisoned by its policy's panic),
//! and compares the heap after one of each, which fills whatever the process sets up once, with
//! the heap after ten more. Every engine buffer is at least a 4 KiB page, so one kept per engine
//! would show as 40 KiB.

use std::io::Read;
use std::time::Duration;

use foresight_core::{ByteLen, ByteRange};
use foresight_engine::{Backend, EmulatedConfig, Engine, Fault, FaultKind, NoopBackend};

mod common;
#[path = "common/counting_alloc.rs"]
mod counting_alloc;

const FILE_BYTES: usize = 256 << 10;

/// An engine on the in-memory backend over one file at `/f`, `policy` with a 4 MiB budget.
fn noop_engine(policy: &str) -> (Engine, NoopBackend) {
    let noop = NoopBackend::new();
    noop.insert("/f", vec![2u8; FILE_BYTES]);
    let engine = Engine::builder()
        .backend(Backend::Noop(noop.clone()))
        .memory(ByteLen::mib(4))
        .policy(policy)
        .build()
        .expect("an engine on the in-memory backend");
    (engine, noop)
}

/// Reads the file to its end, closes it, waits until the engine has lent every buffer back
/// (checked), and drops the engine.
fn read_whole_and_close() {
    let (engine, _noop) = noop_engine("seqp");
    let mut got = Vec::new();
    engine.open("/f").unwrap().read_to_end(&mut got).unwrap();
    assert_eq!(got.len(), FILE_BYTES);
    common::wait_for_engine(
        &engine,
        "every buffer to be lent back after the close",
        || engine.stats().memory_lent_bytes == 0,
    );
}

/// Drops the engine while the device holds a fetch (an injected hour-long delay).
fn drop_with_a_fetch_held() {
    let (engine, noop) = noop_engine("tip");
    noop.inject(Fault {
        path: "/f".into(),
        range: (FILE_BYTES as u64 / 2)..FILE_BYTES as u64,
        kind: FaultKind::Delay(Duration::from_secs(3600)),
        times: None,
    });
    let mut r = engine.open("/f").unwrap();
    let half = FILE_BYTES as u64 / 2;
    r.hint(&[ByteRange::new(0, 4096), ByteRange::new(half, half)])
        .unwrap();
    let mut buf = vec![0u8; 4096];
    std::io::Read::read_exact(&mut r, &mut buf).unwrap();
    // Some time for the fetch of the delayed half to reach the device; the drop must let it go
    // whether it has or not.
    std::thread::sleep(Duration::from_millis(5));
    drop(r);
}

/// Panics on the first read it is shown, under the engine's lock, which it poisons.
struct PanicOnRead;

impl foresight_policy::Policy for PanicOnRead {
    fn name(&self) -> &str {
        "panic-on-read"
    }
    fn handle(&mut self, _now: foresight_core::Instant, input: foresight_policy::Input) {
        if let foresight_policy::Input::Read { .. } = input {
            panic!("a policy bug, on purpose");
        }
    }
    fn poll_output(&mut self) -> Option<foresight_policy::Output> {
        None
    }
}

/// Drops an engine a policy's panic poisoned.
fn drop_poisoned() {
    let noop = NoopBackend::new();
    noop.insert("/f", vec![3u8; FILE_BYTES]);
    let engine = Engine::builder()
        .backend(Backend::Noop(noop))
        .memory(ByteLen::mib(4))
        .wrap_policy(Box::new(|_| Box::new(PanicOnRead)))
        .build()
        .unwrap();
    assert_a_read_panics(engine.open("/f").unwrap(), "the policy");
}

/// Reads from `r` on a thread of its own, which the panic of `policy` (a [`PanicOnRead`]) must
/// end: the panic poisons the engine's lock, and the test's thread goes on to drop the engine.
fn assert_a_read_panics(r: foresight_engine::Reader, policy: &str) {
    let read = std::thread::spawn(move || {
        let mut r = r;
        let mut buf = vec![0u8; 4096];
        let _ = r.read(&mut buf);
    });
    assert!(
        common::join_within(read, "the read to end in the policy's panic").is_err(),
        "{policy} did not panic in the read"
    );
}

/// An engine running MSP in the array cache over an emulated RAID-0 of five drives; with
/// `poisoning`, an array policy that panics on the first read it is shown.
fn array_engine(poisoning: bool) -> Engine {
    let cfg = EmulatedConfig::preset("cheetah-15k4")
        .unwrap()
        .raid0(5, 128 << 10);
    let builder = Engine::builder()
        .policy("msp+saseqp")
        .readahead_max(ByteLen::kib(128))
        .memory(ByteLen::mib(4))
        .backend(Backend::Emulated(cfg))
        .raid_cache(ByteLen::mib(4));
    let builder = if poisoning {
        builder.wrap_array_policy(Box::new(|_| Box::new(PanicOnRead)))
    } else {
        builder
    };
    builder.build().unwrap()
}

/// Drops an engine whose array cache a policy's panic poisoned.
fn drop_array_cache_poisoned(path: &std::path::Path) {
    let engine = array_engine(true);
    assert_a_read_panics(engine.open(path).unwrap(), "the array policy");
}

/// Drops an engine running MSP in the array cache over an emulated RAID-0 while the cache and
/// the device have reads in flight.
fn drop_array_cache_with_reads_in_flight(path: &std::path::Path) {
    let engine = array_engine(false);
    let mut r = engine.open(path).unwrap();
    let mut buf = vec![0u8; 320 << 10];
    r.read_exact(&mut buf).unwrap();
    drop(engine);
    drop(r);
}

#[test]
fn a_dropped_engine_leaves_no_heap_behind() {
    const MORE: isize = 10;
    // Removed with the file when the test ends, also when it fails.
    let dir = tempfile::Builder::new()
        .prefix("foresight-teardown-")
        .tempdir()
        .unwrap();
    let path = dir.path().join("f");
    std::fs::write(&path, vec![5u8; 4 << 20]).unwrap();
    // The policy's panic is on purpose: keep it off the output.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let ways: [(&str, &dyn Fn()); 5] = [
        ("read whole and closed", &read_whole_and_close),
        ("dropped with a fetch held", &drop_with_a_fetch_held),
        ("poisoned", &drop_poisoned),
        ("array cache, reads in flight", &|| {
            drop_array_cache_with_reads_in_flight(&path)
        }),
        ("array cache poisoned", &|| drop_array_cache_poisoned(&path)),
    ];
    let mut grew = Vec::new();
    for (name, way) in ways {
        way();
        let before = counting_alloc::live_bytes();
        for _ in 0..MORE {
            way();
        }
        let after = counting_alloc::live_bytes();
        grew.push((name, (after - before) / MORE));
    }
    std::panic::set_hook(hook);
    for &(name, per_engine) in &grew {
        println!("{name}: the heap grew {per_engine} bytes an engine");
    }
    // A little slack for what a thread of the test harness holds at the instant of a count; a
    // buffer kept per engine is at least a 4 KiB page.
    for (name, per_engine) in grew {
        assert!(
            per_engine < 1024,
            "{name}: the heap grew by {per_engine} bytes for each engine dropped"
        );
    }
}
