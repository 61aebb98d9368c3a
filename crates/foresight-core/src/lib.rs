//! The vocabulary every Foresight crate speaks.
//!
//! Time is simulated or measured nanoseconds held in a `u64` ([`Instant`], [`Duration`]); bytes are
//! [`ByteOffset`] and [`ByteLen`]; disk addresses are [`Lba`] in 512-byte sectors. Nothing here reads a
//! clock, spawns a thread or touches a file, so the pure policy crate can depend on it. The only source
//! of randomness is [`rng::Rng`], which must be seeded explicitly.

pub mod excerpt;
pub mod fetch_parts;
pub mod ids;
pub mod parse;
pub mod rng;
pub mod slots;
pub mod time;
pub mod units;

pub use excerpt::excerpt;
pub use fetch_parts::FetchParts;
pub use ids::{FetchId, FileId, StreamId};
pub use parse::{parse_duration, parse_rate, parse_size, ParseError};
pub use rng::Rng;
pub use slots::take_slot;
pub use time::{Duration, Instant};
pub use units::{Bandwidth, ByteLen, ByteOffset, ByteRange, Extent, Lba, SECTOR_BYTES};
