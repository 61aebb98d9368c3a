//! Fuzzes the DiskSim 4.0 importer: the bytes as a `.diskspecs` file that is also every file it
//! sources (model, seek curve, layout). An import that succeeds must build a drive; a refusal
//! names the file; the grammar and the seek-curve reader never panic on their own either.

#![no_main]

use foresight_device::disksim::{import_with, parse_seek_file, syntax};
use foresight_device::Hdd;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data).into_owned();
    let _ = syntax::parse(&text);
    let _ = parse_seek_file(&text);
    let mut load = |_: &str| Ok(text.clone());
    match import_with("fuzz.diskspecs", &mut load) {
        Ok(drive) => {
            Hdd::try_new(drive.params).expect("an imported drive builds");
        }
        Err(e) => assert!(!e.file.is_empty() && !e.message.is_empty(), "{e}"),
    }
});
