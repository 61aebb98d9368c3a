//! Prefetching policies as pure state machines.
//!
//! A policy never performs I/O, reads a clock or spawns a thread. A driver (the simulator or the real
//! engine) feeds it [`Input`]s with the current [`Instant`], drains [`Output`]s with
//! [`Policy::poll_output`] and executes them, and calls [`Policy::handle_timeout`] when the instant
//! from [`Policy::poll_timeout`] arrives. This is the shape of quinn-proto's and str0m's sans-IO cores:
//! both worlds drive the very same objects, so a decision made in simulation is the decision made on
//! real files. Policies see where file bytes live through [`layout::Layout`], never through a device.

pub mod adaptive;
pub mod budget;
pub mod directed;
pub mod informed;
pub mod layout;
pub mod readahead;
pub mod streams;

use std::sync::Arc;

use foresight_core::{ByteLen, ByteOffset, ByteRange, FetchId, FileId, Instant, StreamId};
use thiserror::Error;

pub use layout::Layout;

/// Bytes in one page-cache page. Readahead windows are counted in pages, as in Linux.
pub const PAGE_BYTES: u64 = 4096;

/// Where fetched data should land.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tier {
    /// The host's memory (the page cache or the engine's buffer pool).
    Memory,
    /// A lower tier of a tiered device, 1 = the tier just below memory.
    Level(u8),
}

/// What a driver tells a policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    /// The application asked for `range` of `file`. `miss` is the first byte of the range that is
    /// neither cached nor already being fetched (a page-cache miss), or `None` when every byte is
    /// cached or in flight. The driver reads any bytes still missing after the policy's fetches.
    Read {
        /// Who asked.
        stream: StreamId,
        /// Which file.
        file: FileId,
        /// The bytes asked for.
        range: ByteRange,
        /// First missing byte, if any.
        miss: Option<ByteOffset>,
    },
    /// The application disclosed future reads, in the order it will issue them.
    Hint {
        /// Who will read.
        stream: StreamId,
        /// Which file.
        file: FileId,
        /// The future reads, in order. Each lies within its file and none is empty: drivers
        /// clip what the application discloses (the engine's `hint` does; the simulator's plans
        /// never pass the end), so a policy may turn a hinted range into a fetch as it stands.
        ranges: Vec<ByteRange>,
    },
    /// A fetch the policy asked for has finished.
    Fetched {
        /// The id from the `Output::Fetch`.
        id: FetchId,
        /// Whether the data arrived (false on an I/O error).
        ok: bool,
    },
    /// Only `available` more bytes may be used for prefetching. Drivers send it when memory is
    /// short (a prefetch was cut short, or had to evict data fetched ahead), and the simulator also
    /// when the application discloses reads, so that a policy can size its window to what is free.
    MemoryPressure {
        /// Bytes still available.
        available: ByteLen,
    },
    /// `stream` ended (its reader was closed): it will issue no more reads or hints. A policy
    /// drops everything it keeps for the stream, because a driver that runs for long (the engine)
    /// gives the id to a new stream afterwards, which must start afresh rather than inherit the
    /// old stream's windows. Fetches issued for the stream may still complete; their `Fetched`
    /// must not touch the stream that now holds the id. Drivers whose streams live as long as the
    /// run (the simulator) need not send it.
    StreamClosed {
        /// The stream that ended.
        stream: StreamId,
    },
    /// The driver has forgotten `file`: no stream reads it, and nothing of it is cached or being
    /// read. A policy drops what it keeps for the file (`seqp`'s readahead marks, which live on
    /// its pages), because a driver that runs for long (the engine) gives the id to a new file
    /// afterwards ([`Policy::add_file`]), which must start afresh. It comes after every
    /// `Fetched` of the file's fetches and after `StreamClosed` of every stream that read it.
    /// Drivers whose files live as long as the run (the simulator) need not send it.
    FileClosed {
        /// The file forgotten.
        file: FileId,
    },
}

/// What a policy asks a driver to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    /// Read `range` of `file` into `into`. The driver answers with `Input::Fetched { id, .. }`.
    Fetch {
        /// Identity of this fetch.
        id: FetchId,
        /// Which file.
        file: FileId,
        /// The bytes to fetch, clipped to the file.
        range: ByteRange,
        /// Where the data goes.
        into: Tier,
    },
    /// Abandon a fetch that has not completed.
    Cancel {
        /// The fetch to abandon.
        id: FetchId,
    },
    /// The policy no longer needs `range` of `file` kept in memory.
    Release {
        /// Which file.
        file: FileId,
        /// The bytes to release.
        range: ByteRange,
    },
    /// Drop the copy of `range` of `file` held on `tier` (a storage level above the block's home
    /// level). Copies made by the informed policies are duplicates: the original on the home level
    /// is never dropped (paper 002_792ac46f2e9108f8.txt, section 3.2.2). Drivers without storage
    /// tiers ignore it.
    Evict {
        /// Which file.
        file: FileId,
        /// The bytes whose copy goes.
        range: ByteRange,
        /// The level that holds the copy.
        tier: Tier,
    },
    /// Answer to the `Input::Read` just handled: do not read the missing bytes of `range` on
    /// demand; the policy will fetch them itself (a stream scheduler queues the request until the
    /// stream's turn). The driver must keep the request waiting until they arrive.
    Defer {
        /// Which file.
        file: FileId,
        /// The bytes the request waits for.
        range: ByteRange,
    },
}

/// The interface every policy implements.
///
/// Policies are `Send` because a real driver (the engine) keeps one behind a lock that many
/// application threads take in turn; a policy is pure data, so this costs nothing.
pub trait Policy: Send {
    /// The policy's name as the config spells it (`none`, `seqp`, ...).
    fn name(&self) -> &str;
    /// Feeds one input at `now`.
    fn handle(&mut self, now: Instant, input: Input);
    /// The next thing the driver should do, if any.
    fn poll_output(&mut self) -> Option<Output>;
    /// When the policy wants `handle_timeout` called, if ever.
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    /// Called by the driver once `now` has reached the instant from `poll_timeout`.
    fn handle_timeout(&mut self, _now: Instant) {}
    /// A new file, `file`, is placed under the id `id`: the next id (the layout's file count),
    /// or one the driver gave up with [`Input::FileClosed`]. A driver whose files appear over time
    /// (the engine, which opens files on demand) calls this before the first input that names
    /// the new file. A policy that keeps the layout must put the file in it ([`Layout::put_file`],
    /// in constant time when the policy's `Arc` is its own, so that a process opening many files
    /// does not copy the whole layout each time); the default ignores the call, which is right
    /// only for policies that never look at the layout.
    fn add_file(&mut self, _id: FileId, _file: crate::layout::FileLayout) {}
}

/// A policy's settings, as plain data. The simulator, the engine and the CLI all build policies from
/// this one struct, by name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyConfig {
    /// Which policy: see [`POLICY_NAMES`].
    pub name: String,
    /// The largest readahead window (Linux `read_ahead_kb`), for the readahead family.
    pub readahead_max: ByteLen,
    /// How `seqp` and `saseqp` size windows and when they fetch the next one: Linux's on-demand
    /// rules with asynchronous readahead at the marked page, or synchronous SEQP (paper
    /// 000_a596543dd26dac72.txt, section 2.4: a window is fetched only when a read misses).
    pub readahead_rule: readahead::WindowRule,
    /// MSP's `SC_max`: the cap of its sequential counter, in strip steps (paper
    /// 000_a596543dd26dac72.txt, Fig. 7: 42).
    pub sc_max: u32,
    /// MSP's `SC_thresh`: the counter value at which it starts prefetching stripes (Fig. 7: 38).
    pub sc_thresh: u32,
    /// MSP's `SPS_max`: the most stripes it queues per sequential step (Fig. 7: 8).
    pub sps_max_stripes: u32,
    /// The stream scheduler's settings (`D`, `R`, `N`, `M`, timeout, classifier), paper
    /// 001_9c47c4c84914efc3.txt section 4.
    pub streams: streams::StreamsConfig,
    /// The `directed` policy's settings (paper 003_eb9cef22f2823582.txt): window memory, infill,
    /// contention controller and the device figures `infill_max = "auto"` needs.
    pub directed: directed::DirectedConfig,
    /// The informed policies' settings (`tip`, `ipipe`, `ipo`, `ipods`; paper
    /// 002_792ac46f2e9108f8.txt): `X_cache`, `max_bw` and the tier timings they plan with.
    pub informed: informed::InformedConfig,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        let msp = readahead::MspSettings::default();
        PolicyConfig {
            name: "seqp".into(),
            readahead_max: ByteLen::kib(128),
            readahead_rule: readahead::WindowRule::Linux,
            sc_max: msp.sc_max,
            sc_thresh: msp.sc_thresh,
            sps_max_stripes: msp.sps_max_stripes,
            streams: streams::StreamsConfig::default(),
            directed: directed::DirectedConfig::default(),
            informed: informed::InformedConfig::default(),
        }
    }
}

impl PolicyConfig {
    /// The MSP part of the settings.
    pub fn msp_settings(&self) -> readahead::MspSettings {
        readahead::MspSettings {
            sc_max: self.sc_max,
            sc_thresh: self.sc_thresh,
            sps_max_stripes: self.sps_max_stripes,
        }
    }

    /// Checks the MSP settings (`sc_thresh <= sc_max`, `sps_max_stripes >= 1`, ...) whichever
    /// policy the name picks, so that a bad value is reported before the run that would use it.
    /// `readahead_max` is checked by the readahead policies that use it.
    pub fn validate(&self) -> Result<(), PolicyError> {
        self.msp_settings().validate()?;
        self.directed.validate()
    }

    /// The most bytes one read that the named policy's layers send towards the device may span,
    /// when the application reads at most `app_read_bytes` at a time (at offsets that are all
    /// whole pages when `app_reads_page_aligned`) and, on a RAID-0, a stripe (one strip of every
    /// member) is `stripe_bytes`. A device that must hold each read whole beside its own
    /// read-ahead (a disk controller's cache) checks its room against this.
    ///
    /// The driver's demand reads and a readahead policy's fetch of a random read are at most the
    /// application's read, in whole pages; on top of that come the policy's own fetches: a
    /// `seqp`/`saseqp` window of at most `readahead_max`, a `directed` piece
    /// ([`directed::PIECE_BYTES`]), the stream scheduler's `R`, and under `msp+...` one stripe.
    /// The informed policies fetch hinted blocks, which are the application's reads. An
    /// application read and a `directed` piece start where the read does, so unless the reads are
    /// page-aligned each is counted as the pages it can straddle: one more than its length fills
    /// when it starts just before a page's end (a 1 MiB piece from byte 5 KiB spans 257 pages).
    pub fn largest_read_bytes(
        &self,
        app_read_bytes: u64,
        app_reads_page_aligned: bool,
        stripe_bytes: Option<u64>,
    ) -> u64 {
        let pages = |bytes: u64| bytes.div_ceil(PAGE_BYTES) * PAGE_BYTES;
        // The most pages `bytes` starting where an application read may start touch: its first
        // byte's page, and as many as the other `bytes - 1` reach past it.
        let straddled = |bytes: u64| {
            if app_reads_page_aligned {
                pages(bytes).max(PAGE_BYTES)
            } else {
                ((bytes.max(1) - 1).div_ceil(PAGE_BYTES) + 1) * PAGE_BYTES
            }
        };
        let app = straddled(app_read_bytes);
        let file_level = |name: &str| match name {
            "seqp" | "saseqp" => pages(self.readahead_max.0),
            "directed" => straddled(directed::PIECE_BYTES),
            "streams" => pages(self.streams.readahead_bytes),
            _ => 0,
        };
        let own = match self.name.strip_prefix("msp+") {
            Some(file_name) => file_level(file_name).max(stripe_bytes.unwrap_or(0)),
            None => file_level(&self.name),
        };
        app.max(own)
    }
}

/// The policies this build knows, by name. `msp+X` runs MSP in the array cache beside `X` in the
/// page cache; build those with [`build_stack`].
pub const POLICY_NAMES: &[&str] = &[
    "none",
    "seqp",
    "saseqp",
    "msp+seqp",
    "msp+saseqp",
    "streams",
    "directed",
    "tip",
    "ipipe",
    "ipo",
    "ipods",
];

/// Why a policy could not be built.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum PolicyError {
    /// The name is not one of [`POLICY_NAMES`].
    #[error("unknown policy `{0}`; choose one of: {names}", names = POLICY_NAMES.join(", "))]
    UnknownName(String),
    /// The name picks policies at two layers, which [`build`] cannot return as one policy.
    #[error(
        "policy `{0}` runs at two layers (page cache and array cache); build it with build_stack"
    )]
    NeedsStack(String),
    /// A setting is out of range; the message names the key and the bound.
    #[error("policy.{key}: {message}")]
    BadSetting {
        /// The config key, without the `policy.` prefix.
        key: &'static str,
        /// What is wrong and what to write instead.
        message: String,
    },
}

/// Builds the single-layer policy named in `cfg` over the given layout, for a driver that reads
/// files and has no block layer of its own (the engine): `streams` comes as the scheduler over
/// files ([`streams::FileStreams`]). Names with an array-level part (`msp+...`) return
/// [`PolicyError::NeedsStack`]: use [`build_stack`] for those.
pub fn build(cfg: &PolicyConfig, layout: Arc<Layout>) -> Result<Box<dyn Policy>, PolicyError> {
    cfg.validate()?;
    build_file_level(&cfg.name, cfg, layout)
}

fn build_file_level(
    name: &str,
    cfg: &PolicyConfig,
    layout: Arc<Layout>,
) -> Result<Box<dyn Policy>, PolicyError> {
    match name {
        "none" => Ok(Box::new(readahead::NoPrefetch::new())),
        "seqp" => Ok(Box::new(readahead::Seqp::with_rule(
            cfg.readahead_max,
            cfg.readahead_rule,
            layout,
        )?)),
        "saseqp" => Ok(Box::new(readahead::Saseqp::with_rule(
            cfg.readahead_max,
            cfg.readahead_rule,
            layout,
        )?)),
        "directed" => Ok(Box::new(directed::Directed::new(&cfg.directed, layout)?)),
        // Alone (a driver with no block layer: the engine), the scheduler runs over files.
        "streams" => Ok(Box::new(streams::FileStreams::new(cfg.streams, layout)?)),
        "tip" => Ok(Box::new(informed::Informed::new(name, &cfg.informed)?)),
        other if POLICY_NAMES.contains(&other) => Err(PolicyError::NeedsStack(other.to_string())),
        other => Err(PolicyError::UnknownName(other.to_string())),
    }
}

/// The policies of one configuration, one per cache layer (paper 000_a596543dd26dac72.txt, section
/// 5.1: "The Linux kernel and the RAID driver have their own cache memory").
pub struct PolicyStack {
    /// The page-cache policy: sees file reads, fetches file ranges into [`Tier::Memory`].
    pub file: Box<dyn Policy>,
    /// The array-cache policy, if the name has one (`msp+...`): sees every block request that
    /// reaches the array as a read of [`layout::VOLUME_FILE`] in volume bytes and fetches
    /// stripe-aligned volume ranges into `Tier::Level(1)`; see [`readahead::msp`] for the
    /// full contract.
    pub array: Option<Box<dyn Policy>>,
    /// Bytes of array-level cache the array policy brings with it, when it sets its own budget
    /// (the stream scheduler's `M`); `None` means the host's configured array cache.
    pub array_cache_bytes: Option<u64>,
    /// The file-level policy needs memory that keeps what it fetched until it is read: a
    /// prefetch may not evict prefetched data nobody has read yet (it is cut short instead, and
    /// the policy hears `Input::MemoryPressure`). `directed` asks for this, as libprefetch asks
    /// the kernel (paper 003_eb9cef22f2823582.txt, section I).
    pub keep_prefetched_until_read: bool,
}

impl std::fmt::Debug for PolicyStack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyStack")
            .field("file", &self.file.name())
            .field("array", &self.array.as_ref().map(|a| a.name().to_string()))
            .finish()
    }
}

/// Builds every layer of the policy named in `cfg`: `msp+X` gives `X` at the file level and MSP
/// at the array level (paper 000, section 4, pairs MSP with a file-level scheme rather than
/// running it alone); a plain name gives that policy and no array policy.
pub fn build_stack(cfg: &PolicyConfig, layout: Arc<Layout>) -> Result<PolicyStack, PolicyError> {
    cfg.validate()?;
    if !POLICY_NAMES.contains(&cfg.name.as_str()) {
        return Err(PolicyError::UnknownName(cfg.name.clone()));
    }
    if cfg.name == "streams" {
        // The scheduler works on block requests in front of the block queue; the page cache
        // above it reads on demand only (paper 001's server uses direct I/O).
        let array = streams::StreamScheduler::new(cfg.streams, layout)?;
        return Ok(PolicyStack {
            file: Box::new(readahead::NoPrefetch::new()),
            array: Some(Box::new(array)),
            array_cache_bytes: Some(cfg.streams.memory_bytes),
            keep_prefetched_until_read: false,
        });
    }
    if matches!(cfg.name.as_str(), "ipipe" | "ipo" | "ipods") {
        // One policy object runs TIP in memory and the prefetchers between storage levels, so it
        // needs a driver with tiers (the simulator's tiered driver); `build` refuses it.
        return Ok(PolicyStack {
            file: Box::new(informed::Informed::new(&cfg.name, &cfg.informed)?),
            array: None,
            array_cache_bytes: None,
            keep_prefetched_until_read: false,
        });
    }
    match cfg.name.strip_prefix("msp+") {
        Some(file_name) => {
            let array = readahead::Msp::new(cfg.msp_settings(), &layout)?;
            Ok(PolicyStack {
                file: build_file_level(file_name, cfg, layout)?,
                array: Some(Box::new(array)),
                array_cache_bytes: None,
                keep_prefetched_until_read: false,
            })
        }
        None => Ok(PolicyStack {
            file: build_file_level(&cfg.name, cfg, layout)?,
            array: None,
            array_cache_bytes: None,
            keep_prefetched_until_read: cfg.name == "directed",
        }),
    }
}

/// Hands out fetch ids in increasing order, so a policy's decisions are numbered the same way in
/// every world.
#[derive(Clone, Debug, Default)]
pub struct FetchIds {
    next: u64,
}

impl FetchIds {
    /// The next unused id.
    pub fn next_id(&mut self) -> FetchId {
        let id = FetchId(self.next);
        self.next += 1;
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use layout::Striping;

    fn striped() -> Arc<Layout> {
        Arc::new(
            Layout::aligned(
                ByteLen::gib(1),
                Some(Striping {
                    disks: 5,
                    strip_bytes: 128 << 10,
                }),
                4,
                ByteLen::mib(8),
            )
            .unwrap(),
        )
    }

    fn cfg(name: &str) -> PolicyConfig {
        PolicyConfig {
            name: name.into(),
            ..PolicyConfig::default()
        }
    }

    #[test]
    fn every_name_builds_as_a_stack_and_plain_names_build_alone() {
        for &name in POLICY_NAMES {
            let stack = build_stack(&cfg(name), striped()).unwrap();
            // The stream scheduler runs below a demand-only page cache.
            let file_name = match name {
                "streams" => "none",
                other => other.strip_prefix("msp+").unwrap_or(other),
            };
            assert_eq!(stack.file.name(), file_name);
            let array = match name {
                "streams" => Some("streams".to_string()),
                other => other.starts_with("msp+").then(|| "msp".to_string()),
            };
            assert_eq!(stack.array.as_ref().map(|a| a.name().to_string()), array);
            // Alone, every name but the two-layer ones builds (`streams` over files).
            match build(&cfg(name), striped()) {
                Ok(p) => assert_eq!(p.name(), name),
                Err(e) => assert_eq!(e, PolicyError::NeedsStack(name.into())),
            }
        }
        assert!(matches!(
            build_stack(&cfg("msp"), striped()),
            Err(PolicyError::UnknownName(_))
        ));
        assert!(matches!(
            build(&cfg("nope"), striped()),
            Err(PolicyError::UnknownName(_))
        ));
    }

    #[test]
    fn bad_msp_settings_name_their_key() {
        let key = |c: PolicyConfig| match build_stack(&c, striped()) {
            Err(PolicyError::BadSetting { key, .. }) => key,
            other => panic!("{other:?}"),
        };
        let base = cfg("msp+saseqp");
        assert_eq!(
            key(PolicyConfig {
                sc_thresh: 50,
                ..base.clone()
            }),
            "sc_thresh"
        );
        assert_eq!(
            key(PolicyConfig {
                sps_max_stripes: 0,
                ..base.clone()
            }),
            "sps_max"
        );
        // MSP needs stripes to fetch.
        let single = Arc::new(Layout::new(ByteLen::gib(1), None));
        assert!(matches!(
            build_stack(&base, single.clone()),
            Err(PolicyError::BadSetting { key: "name", .. })
        ));
        assert!(build_stack(&cfg("saseqp"), single).is_ok());
        let d = PolicyConfig::default();
        assert_eq!((d.sc_max, d.sc_thresh, d.sps_max_stripes), (42, 38, 8));
    }

    #[test]
    fn no_seqp_fetch_is_larger_than_its_largest_read_and_the_window_reaches_it() {
        // One reader of 64 KiB sequential reads, then one read elsewhere: the windows grow to
        // `readahead_max`, and no fetch, the random read's included, is larger than the bound.
        let layout =
            Arc::new(Layout::aligned(ByteLen::gib(1), None, 1, ByteLen::mib(512)).unwrap());
        for (max_kib, app_kib) in [(128u64, 64u64), (4096, 64), (1024, 3072)] {
            let c = PolicyConfig {
                readahead_max: ByteLen::kib(max_kib),
                ..cfg("seqp")
            };
            let mut p = build(&c, layout.clone()).unwrap();
            let mut largest = 0;
            // The pages fetched so far, so that a read misses only where nothing was fetched, as
            // in a page cache that keeps everything.
            let mut fetched = std::collections::BTreeSet::new();
            let mut read = |p: &mut Box<dyn Policy>, off: u64, len: u64| {
                let miss = (off / PAGE_BYTES..(off + len).div_ceil(PAGE_BYTES))
                    .find(|page| !fetched.contains(page))
                    .map(|page| ByteOffset((page * PAGE_BYTES).max(off)));
                p.handle(
                    Instant::ZERO,
                    Input::Read {
                        stream: StreamId(0),
                        file: FileId(0),
                        range: ByteRange::new(off, len),
                        miss,
                    },
                );
                while let Some(o) = p.poll_output() {
                    if let Output::Fetch { range, .. } = o {
                        largest = largest.max(range.len.0);
                        fetched
                            .extend(range.start.0 / PAGE_BYTES..range.end().0.div_ceil(PAGE_BYTES));
                    }
                }
            };
            for i in 0..256 {
                read(&mut p, i * (64 << 10), 64 << 10);
            }
            read(&mut p, 100 << 20, app_kib << 10);
            let bound = c.largest_read_bytes(app_kib << 10, true, None);
            assert!(
                largest <= bound,
                "readahead_max {max_kib} KiB, reads of {app_kib} KiB: a fetch of {largest} bytes"
            );
            assert_eq!(largest, max_kib << 10, "the windows reach readahead_max");
        }
    }

    #[test]
    fn the_largest_read_is_each_policys_own_fetch_or_the_applications_read() {
        let stripe = Some(5 * (128 << 10));
        let with = |name: &str| PolicyConfig {
            readahead_max: ByteLen::mib(2),
            ..cfg(name)
        };
        // Page-aligned reads: each read is its own length in pages.
        let at = |name: &str, app: u64, stripe| with(name).largest_read_bytes(app, true, stripe);
        assert_eq!(at("none", 64 << 10, stripe), 64 << 10);
        assert_eq!(at("none", 1, None), PAGE_BYTES);
        assert_eq!(at("seqp", 64 << 10, None), 2 << 20);
        assert_eq!(at("saseqp", 8 << 20, None), 8 << 20);
        assert_eq!(at("directed", 4096, None), directed::PIECE_BYTES);
        assert_eq!(at("streams", 64 << 10, None), 8 << 20);
        assert_eq!(
            cfg("msp+seqp").largest_read_bytes(64 << 10, true, stripe),
            5 * (128 << 10)
        );
        assert_eq!(at("msp+saseqp", 64 << 10, stripe), 2 << 20);
        assert_eq!(at("tip", 10 << 20, None), 10 << 20);
        // Reads at any byte offset (a 5 KiB request, a 1 KiB gap): a read, and a directed piece
        // that starts where one does, may straddle one page more than its length fills.
        let anywhere = |name: &str, app: u64| with(name).largest_read_bytes(app, false, None);
        let page = PAGE_BYTES;
        assert_eq!(anywhere("none", 64 << 10), (64 << 10) + page);
        assert_eq!(anywhere("none", 1), page);
        assert_eq!(anywhere("none", 5 << 10), 3 * page);
        assert_eq!(anywhere("seqp", 64 << 10), 2 << 20);
        assert_eq!(anywhere("saseqp", 8 << 20), (8 << 20) + page);
        assert_eq!(anywhere("directed", 4096), directed::PIECE_BYTES + page);
        assert_eq!(anywhere("tip", 10 << 20), (10 << 20) + page);
    }
}
