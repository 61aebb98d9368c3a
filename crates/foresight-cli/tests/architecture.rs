//! The dependency rules of the design, checked on every test run.
//!
//! `foresight-policy` depends on `foresight-core` only and its sources never read a clock, spawn a
//! thread, do I/O, or draw unseeded randomness (including the randomly seeded default hasher of
//! `HashMap`); `foresight-device` never depends on `foresight-policy`; `foresight-engine` and
//! `foresight-net` never depend on `foresight-sim`; every crate inherits the workspace lints
//! (`missing_docs`, `unsafe_code = "forbid"`), except that the engine may allow unsafe code for
//! io_uring; only the binary depends on `anyhow`; every source file under a crate's `src/` opens
//! with a `//!` paragraph.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn manifest(krate: &str) -> Option<toml::Table> {
    let path = root().join("crates").join(krate).join("Cargo.toml");
    let text = std::fs::read_to_string(&path).ok()?;
    Some(
        text.parse()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
}

fn deps(m: &toml::Table) -> Vec<String> {
    let mut out = vec![];
    for section in ["dependencies", "build-dependencies"] {
        if let Some(t) = m.get(section).and_then(|v| v.as_table()) {
            out.extend(t.keys().cloned());
        }
    }
    out
}

fn crates() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(root().join("crates"))
        .expect("crates/ exists")
        .map(|e| {
            e.expect("dir entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|n| root().join("crates").join(n).join("Cargo.toml").exists())
        .collect();
    v.sort();
    v
}

#[test]
fn policy_depends_on_core_only() {
    let m = manifest("foresight-policy").expect("foresight-policy exists");
    let allowed_external = ["thiserror"];
    for d in deps(&m) {
        assert!(
            d == "foresight-core" || allowed_external.contains(&d.as_str()),
            "foresight-policy must depend on foresight-core only (and {allowed_external:?}); found `{d}`"
        );
    }
}

#[test]
fn device_does_not_depend_on_policy_and_io_crates_not_on_sim() {
    let m = manifest("foresight-device").expect("foresight-device exists");
    assert!(!deps(&m).contains(&"foresight-policy".to_string()));
    for k in ["foresight-engine", "foresight-net"] {
        if let Some(m) = manifest(k) {
            assert!(
                !deps(&m).contains(&"foresight-sim".to_string()),
                "{k} must not depend on foresight-sim"
            );
        }
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("readable dir") {
        let p = e.expect("dir entry").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn policy_sources_use_no_clock_thread_io_or_unseeded_randomness() {
    let forbidden = [
        "std::time",
        "Instant::now",
        "SystemTime",
        "std::thread",
        "thread::spawn",
        "std::fs",
        "std::net",
        "std::io",
        "std::process",
        "std::env",
        "rand::",
        "HashMap",
        "HashSet",
        "RandomState",
        "unsafe",
    ];
    let mut files = vec![];
    rust_files(&root().join("crates/foresight-policy/src"), &mut files);
    assert!(!files.is_empty());
    for f in files {
        let text = std::fs::read_to_string(&f).expect("readable");
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for word in forbidden {
                assert!(
                    !code.contains(word),
                    "{}:{}: `{word}` is not allowed in foresight-policy: {line}",
                    f.display(),
                    n + 1
                );
            }
        }
    }
}

#[test]
fn every_crate_inherits_the_workspace_lints() {
    for k in crates() {
        let m = manifest(&k).expect("manifest");
        let inherits = m
            .get("lints")
            .and_then(|l| l.get("workspace"))
            .and_then(|w| w.as_bool())
            == Some(true);
        if k == "foresight-engine" {
            continue;
        }
        assert!(
            inherits,
            "crates/{k}/Cargo.toml must have `[lints] workspace = true`"
        );
    }
    let ws: toml::Table = std::fs::read_to_string(root().join("Cargo.toml"))
        .expect("root manifest")
        .parse()
        .expect("TOML");
    let rust = &ws["workspace"]["lints"]["rust"];
    assert_eq!(rust["unsafe_code"].as_str(), Some("forbid"));
    assert!(rust.get("missing_docs").is_some());
}

/// DESIGN.md section 8: errors are `thiserror` enums in the libraries and `anyhow` only in the
/// binary, so a library's caller can match on what went wrong.
#[test]
fn only_the_binary_depends_on_anyhow() {
    for k in crates() {
        if k == "foresight-cli" {
            continue;
        }
        let m = manifest(&k).expect("listed crates have a manifest");
        assert!(
            !deps(&m).contains(&"anyhow".to_string()),
            "{k} depends on anyhow; a library returns its own thiserror enum"
        );
    }
}

/// DESIGN.md section 8: each module starts with a `//!` paragraph on its mechanism.
#[test]
fn every_module_opens_with_a_doc_paragraph() {
    for k in crates() {
        let mut files = vec![];
        rust_files(&root().join("crates").join(&k).join("src"), &mut files);
        for f in files {
            let text = std::fs::read_to_string(&f).expect("readable source");
            let first = text.lines().next().unwrap_or("");
            assert!(
                first.starts_with("//! ") && first.len() > 4,
                "{} does not open with a `//!` paragraph",
                f.display()
            );
        }
    }
}
