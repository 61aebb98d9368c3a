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
