//! Fuzzes the simulator's config: the bytes as a TOML file (read plainly, and with its values
//! as written, as the command line reads it), then each of their lines as a `--set KEY=VALUE`.
//! Either ends in a config or in an error that names the file and line, or the key, and says
//! what is wrong; nothing panics.

#![no_main]

use foresight_sim::config::{apply_set, parse_config_text, AsWritten, ConfigError, SimConfig};
use libfuzzer_sys::fuzz_target;

fn check(e: &ConfigError) {
    match e {
        ConfigError::File { file, message } => {
            assert!(
                file.starts_with("fuzz.toml") && !message.trim().is_empty(),
                "{e}"
            )
        }
        ConfigError::Key { key, message } => {
            assert!(!key.is_empty() && !message.trim().is_empty(), "{e}")
        }
        ConfigError::SetSyntax(_) => {}
    }
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    match parse_config_text(&text, "fuzz.toml") {
        Ok(table) => {
            if let Err(e) = SimConfig::from_table(table.clone(), None) {
                check(&e);
            }
            // As the command line reads a file: its values as written, for the messages.
            let written = AsWritten::of_text(&text, "fuzz.toml");
            if let Err(e) = SimConfig::from_table_as_written(table, None, &written) {
                check(&e);
            }
        }
        Err(e) => check(&e),
    }
    let mut table = toml::Table::new();
    for line in text.lines() {
        if let Err(e) = apply_set(&mut table, line) {
            check(&e);
            return;
        }
    }
    if let Err(e) = SimConfig::from_table(table, None) {
        check(&e);
    }
});
