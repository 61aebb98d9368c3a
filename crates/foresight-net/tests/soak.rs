//! A short soak: many clients at once, every byte checked. The full run is
//! `foresight net-soak --clients 1000 --duration 30s`.

use std::time::Duration;

use foresight_core::ByteLen;
use foresight_net::soak::{run, SoakConfig};

/// A soak's files live in one directory per process (`soak::files_dir`), so the tests here,
/// which share the process, run their soaks one at a time.
static ONE_SOAK_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_SOAK_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[test]
fn many_clients_see_no_errors_and_no_wrong_bytes() {
    let _alone = one_at_a_time();
    let r = run(&SoakConfig {
        clients: 64,
        duration: Duration::from_secs(2),
        files: 4,
        file_size: ByteLen::mib(2),
        max_read: ByteLen::kib(200),
        workers: 8,
        seed: 5,
    })
    .unwrap();
    assert_eq!(
        (r.errors, r.mismatches),
        (0, 0),
        "first error: {:?}",
        r.first_error
    );
    assert!(r.requests >= 64, "{} requests", r.requests);
}

/// The report's peak is the most memory the process held: `VmHWM` alone, which the kernel brings
/// up to date only now and then, came out below the largest resident size sampled during the run
/// and below the one at its end ("max sampled 23 MiB, end 23 MiB, peak 22 MiB").
#[test]
fn the_peak_is_never_below_a_resident_size_the_soak_saw() {
    let _alone = one_at_a_time();
    let r = run(&SoakConfig {
        clients: 2,
        duration: Duration::from_millis(1500),
        files: 16,
        file_size: ByteLen::mib(8),
        max_read: ByteLen::kib(256),
        workers: 32,
        seed: 9,
    })
    .unwrap();
    let peak = r.peak_rss_bytes.expect("this system reports VmHWM");
    for (what, seen) in [
        ("start", r.rss_start_bytes),
        ("max sampled", r.rss_max_sampled_bytes),
        ("end", r.rss_end_bytes),
    ] {
        let seen = seen.expect("this system reports VmRSS");
        assert!(peak >= seen, "peak {peak} below the {what} {seen}");
    }
}

/// A soak of 100 ms ran for a second: the memory sampler slept a whole second before it looked at
/// the deadline, and the report's time (and so its rate) was taken after it, though the clients
/// had stopped at 100 ms. Its time is now the clients' own: past the deadline only by the last
/// exchanges under way then (the bound is loose, for a loaded machine), and never a whole second.
#[test]
fn a_soak_shorter_than_a_second_reports_the_time_its_clients_read() {
    let _alone = one_at_a_time();
    let began = std::time::Instant::now();
    let r = run(&SoakConfig {
        clients: 2,
        duration: Duration::from_millis(100),
        files: 1,
        file_size: ByteLen::kib(64),
        max_read: ByteLen::kib(64),
        workers: 2,
        seed: 3,
    })
    .unwrap();
    assert_eq!((r.errors, r.mismatches), (0, 0), "{:?}", r.first_error);
    assert!(
        (0.1..0.9).contains(&r.seconds),
        "{} s reported for a 100 ms soak",
        r.seconds
    );
    assert!(r.seconds <= began.elapsed().as_secs_f64());
    let json = r.to_json();
    let mib_s = json["mib_s"].as_f64().unwrap();
    let expected = r.bytes as f64 / (1u64 << 20) as f64 / r.seconds;
    assert!(
        (mib_s - expected).abs() <= 1e-9 * expected.max(1.0),
        "{json}"
    );
}
