//! Byte offsets, lengths, ranges, sector addresses and bandwidths as newtypes.
//!
//! A file byte, a volume byte and a disk sector are different things that are all `u64` underneath;
//! keeping them apart in the type system catches the classic bug of passing a byte offset where a
//! sector number is expected. Conversions are explicit and name their unit.

use std::fmt;
use std::ops::{Add, Sub};

use crate::time::{Duration, NANOS_PER_SEC};

/// Bytes in one logical block address (sector). Every drive model and trace here uses 512.
pub const SECTOR_BYTES: u64 = 512;

/// An offset in bytes (into a file or a volume, as the holder's name says).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ByteOffset(pub u64);

/// A length in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ByteLen(pub u64);

/// A logical block address on a device, in 512-byte sectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Lba(pub u64);

/// A half-open byte range `[start, start + len)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ByteRange {
    /// First byte of the range.
    pub start: ByteOffset,
    /// Number of bytes.
    pub len: ByteLen,
}

/// A piece of a file placed on a volume: `len` bytes from `file_offset` live at `volume_offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Extent {
    /// Where the piece starts in the file.
    pub file_offset: ByteOffset,
    /// Where the piece starts on the volume.
    pub volume_offset: ByteOffset,
    /// Length of the piece.
    pub len: ByteLen,
}

/// A data rate in bytes per second.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Default)]
pub struct Bandwidth {
    /// Bytes per second.
    pub bytes_per_s: f64,
}

impl ByteOffset {
    /// The offset `len` bytes further on.
    pub const fn plus(self, len: ByteLen) -> ByteOffset {
        ByteOffset(self.0 + len.0)
    }

    /// The sector that holds this byte.
    pub const fn to_lba_floor(self) -> Lba {
        Lba(self.0 / SECTOR_BYTES)
    }
}

impl ByteLen {
    /// Zero bytes.
    pub const ZERO: ByteLen = ByteLen(0);

    /// `n` kibibytes.
    pub const fn kib(n: u64) -> ByteLen {
        ByteLen(n << 10)
    }

    /// `n` mebibytes.
    pub const fn mib(n: u64) -> ByteLen {
        ByteLen(n << 20)
    }

    /// `n` gibibytes.
    pub const fn gib(n: u64) -> ByteLen {
        ByteLen(n << 30)
    }

    /// The number of whole sectors needed to hold this many bytes.
    pub const fn sectors_ceil(self) -> u64 {
        self.0.div_ceil(SECTOR_BYTES)
    }

    /// Length in mebibytes, for reports.
    pub fn as_mib_f64(self) -> f64 {
        self.0 as f64 / (1u64 << 20) as f64
    }

    /// The length for a message: exact when it is a whole number of a binary unit with at most
    /// four digits (`64MiB`, `900B`, `1EiB`), else to a tenth of the largest unit it reaches
    /// (`about 13.5GiB`, not `14205772KiB`). A length that is a whole number of tenths of that
    /// unit (`1.5KiB`, `10.5GiB`, and `1.5PiB` rather than `1536TiB`) is printed without
    /// "about": it is exact, and it parses back.
    pub fn rounded(self) -> String {
        let exact = self.to_string();
        let digits = exact.chars().take_while(char::is_ascii_digit).count();
        let short_exact = digits <= 4 && exact.ends_with("iB");
        if self.0 < 1024 {
            return exact;
        }
        // Units from the largest down; the first one the length reaches is the one printed,
        // unless the length rounds up to 1024.0 of it, which reads better as 1.0 of the next.
        let at = BINARY_UNITS
            .iter()
            .position(|(u, _)| self.0 >= *u)
            .expect("at least 1 KiB here");
        // Tenths of a unit, rounded to the nearest, in integers: an f64 holds no more than 2^53
        // exactly, and the test for "exact" must not be fooled by a rounded quotient.
        let tenths_of = |unit_bytes: u64| {
            let scaled = u128::from(self.0) * 10;
            let unit = u128::from(unit_bytes);
            ((scaled + unit / 2) / unit, scaled % unit == 0)
        };
        let (mut unit_bytes, mut unit) = BINARY_UNITS[at];
        let (mut tenths, mut whole_tenths) = tenths_of(unit_bytes);
        if tenths >= 10_240 && at > 0 {
            (unit_bytes, unit) = BINARY_UNITS[at - 1];
            (tenths, whole_tenths) = tenths_of(unit_bytes);
        }
        // A short whole number is printed as it is (`64MiB`, `1025MiB`), unless it is in a unit
        // below the one the length reaches and is a whole tenth of that one: `1.5PiB` reads
        // better than `1536TiB`, and both are exact.
        if short_exact && (!whole_tenths || exact.ends_with(unit)) {
            return exact;
        }
        let about = if whole_tenths { "" } else { "about " };
        format!("{about}{}.{}{unit}", tenths / 10, tenths % 10)
    }
}

/// The binary units a length is printed in, largest first. EiB is the largest a `u64` reaches
/// (2^64 bytes is 16 EiB), and the largest the size parser reads.
const BINARY_UNITS: [(u64, &str); 6] = [
    (1 << 60, "EiB"),
    (1 << 50, "PiB"),
    (1 << 40, "TiB"),
    (1 << 30, "GiB"),
    (1 << 20, "MiB"),
    (1 << 10, "KiB"),
];

impl Lba {
    /// The byte offset of the first byte of this sector.
    pub const fn to_byte_offset(self) -> ByteOffset {
        ByteOffset(self.0 * SECTOR_BYTES)
    }
}

impl ByteRange {
    /// A range from a start and a length.
    pub const fn new(start: u64, len: u64) -> ByteRange {
        ByteRange {
            start: ByteOffset(start),
            len: ByteLen(len),
        }
    }

    /// One past the last byte.
    pub const fn end(self) -> ByteOffset {
        ByteOffset(self.start.0 + self.len.0)
    }

    /// Whether the range holds no bytes.
    pub const fn is_empty(self) -> bool {
        self.len.0 == 0
    }

    /// Whether `off` lies inside the range.
    pub const fn contains(self, off: ByteOffset) -> bool {
        off.0 >= self.start.0 && off.0 < self.start.0 + self.len.0
    }

    /// The overlap of two ranges, if any.
    pub fn intersect(self, other: ByteRange) -> Option<ByteRange> {
        let s = self.start.0.max(other.start.0);
        let e = self.end().0.min(other.end().0);
        (s < e).then(|| ByteRange::new(s, e - s))
    }
}

impl Bandwidth {
    /// A rate in bytes per second.
    pub const fn from_bytes_per_s(bytes_per_s: f64) -> Self {
        Bandwidth { bytes_per_s }
    }

    /// A rate in MiB/s.
    pub fn from_mib_s(mib_s: f64) -> Self {
        Bandwidth {
            bytes_per_s: mib_s * (1u64 << 20) as f64,
        }
    }

    /// The rate in MiB/s.
    pub fn as_mib_s(self) -> f64 {
        self.bytes_per_s / (1u64 << 20) as f64
    }

    /// How long `len` bytes take at this rate. An infinite or zero rate is a programmer error.
    pub fn time_for(self, len: ByteLen) -> Duration {
        assert!(
            self.bytes_per_s > 0.0 && self.bytes_per_s.is_finite(),
            "bandwidth must be positive and finite, got {}",
            self.bytes_per_s
        );
        Duration((len.0 as f64 * NANOS_PER_SEC as f64 / self.bytes_per_s).round() as u64)
    }
}

impl Add<ByteLen> for ByteOffset {
    type Output = ByteOffset;
    fn add(self, rhs: ByteLen) -> ByteOffset {
        self.plus(rhs)
    }
}

impl Sub for ByteOffset {
    type Output = ByteLen;
    fn sub(self, rhs: ByteOffset) -> ByteLen {
        ByteLen(
            self.0
                .checked_sub(rhs.0)
                .expect("byte offset subtraction went negative"),
        )
    }
}

impl Add for ByteLen {
    type Output = ByteLen;
    fn add(self, rhs: ByteLen) -> ByteLen {
        ByteLen(self.0 + rhs.0)
    }
}

impl fmt::Display for ByteLen {
    /// Prints the largest binary unit that divides the length exactly, else plain bytes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (size, name) in BINARY_UNITS {
            if self.0 >= size && self.0.is_multiple_of(size) {
                return write!(f, "{}{}", self.0 / size, name);
            }
        }
        write!(f, "{}B", self.0)
    }
}

impl fmt::Display for ByteRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}, {})", self.start.0, self.end().0)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn rounded_lengths_are_exact_when_short_and_a_tenth_of_a_unit_otherwise() {
        use super::ByteLen;
        assert_eq!(ByteLen::mib(64).rounded(), "64MiB");
        assert_eq!(ByteLen(900).rounded(), "900B");
        assert_eq!(ByteLen(14_205_772 << 10).rounded(), "about 13.5GiB");
        assert_eq!(ByteLen(5000).rounded(), "about 4.9KiB");
        assert_eq!(ByteLen::kib(10_000).rounded(), "about 9.8MiB");
        assert_eq!(ByteLen(u64::MAX).rounded(), "about 16.0EiB");
    }

    /// Lengths past TiB print in PiB and EiB, the units the parser reads them in: 1 EiB printed
    /// as "about 1048576.0TiB", an exact value called approximate in a unit nobody writes. A
    /// length that is an exact number of tenths of its unit is not called "about" either.
    #[test]
    fn rounded_lengths_reach_exbibytes_and_call_only_inexact_ones_about() {
        use super::ByteLen;
        assert_eq!(ByteLen(1 << 60).rounded(), "1EiB");
        assert_eq!(ByteLen(1 << 62).rounded(), "4EiB");
        assert_eq!(ByteLen(1 << 50).rounded(), "1PiB");
        assert_eq!(ByteLen(20 << 50).rounded(), "20PiB");
        // 1.5 PiB is also 1536 TiB; the larger unit reads better, and both are exact.
        assert_eq!(ByteLen(3 << 49).rounded(), "1.5PiB");
        assert_eq!(ByteLen((1 << 60) + (1 << 59)).rounded(), "1.5EiB");
        assert_eq!(ByteLen(1536 << 20).rounded(), "1.5GiB");
        // A whole number of the smaller unit that is no whole tenth of the larger stays whole.
        assert_eq!(ByteLen(1025 << 20).rounded(), "1025MiB");
        assert_eq!(ByteLen(1024 << 20).rounded(), "1GiB");
        assert_eq!(ByteLen(21 << 59).rounded(), "10.5EiB");
        assert_eq!(ByteLen(21 << 29).rounded(), "10.5GiB");
        assert_eq!(ByteLen(1536).rounded(), "1.5KiB");
        assert_eq!(ByteLen((1 << 60) + 1).rounded(), "about 1.0EiB");
        // Just under a unit rounds to 1.0 of it, not to 1024.0 of the unit below.
        assert_eq!(ByteLen((1 << 50) - 1).rounded(), "about 1.0PiB");
        assert_eq!(ByteLen((1 << 30) - 1).rounded(), "about 1.0GiB");
        assert_eq!(ByteLen((1023 << 20) + (1 << 19)).rounded(), "1023.5MiB");
        assert_eq!(ByteLen(1 << 60).to_string(), "1EiB");
        assert_eq!(ByteLen(5 << 50).to_string(), "5PiB");
    }

    use super::*;

    #[test]
    fn conversions() {
        assert_eq!(ByteLen(4097).sectors_ceil(), 9);
        assert_eq!(Lba(3).to_byte_offset(), ByteOffset(1536));
        assert_eq!(ByteOffset(1535).to_lba_floor(), Lba(2));
        assert_eq!(ByteLen::kib(128).to_string(), "128KiB");
        assert_eq!(ByteLen(1000).to_string(), "1000B");
        let r = ByteRange::new(10, 10);
        assert_eq!(
            r.intersect(ByteRange::new(15, 100)),
            Some(ByteRange::new(15, 5))
        );
        assert_eq!(r.intersect(ByteRange::new(20, 1)), None);
        assert_eq!(
            Bandwidth::from_mib_s(1.0).time_for(ByteLen::mib(2)),
            Duration::from_secs(2)
        );
    }
}
