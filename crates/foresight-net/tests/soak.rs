//! A short soak: many clients at once, every byte checked. The full run is
//! `foresight net-soak --clients 1000 --duration 30s`.

use std::time::Duration;

use foresight_core::ByteLen;
use foresight_net::soak::{run, SoakConfig};

#[test]
fn many_clients_see_no_errors_and_no_wrong_bytes() {
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
