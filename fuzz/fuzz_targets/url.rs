//! Fuzzes the client's URL parser: any text parses or is refused with a message quoting it, and
//! a URL that parses prints back to text that parses to the same URL.

#![no_main]

use foresight_net::client::Url;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    match text.parse::<Url>() {
        Ok(url) => assert_eq!(url.to_string().parse::<Url>(), Ok(url)),
        Err(e) => assert!(e.contains(&format!("`{text}`")), "{e}"),
    }
});
