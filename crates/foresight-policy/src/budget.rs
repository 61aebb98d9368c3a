//! Memory budget accounting shared by both worlds.
//!
//! A budget is a hard byte limit. Callers reserve before they allocate (or before a simulated page
//! enters the cache) and release when the bytes are freed; a reservation that would pass the limit is
//! refused rather than granted, so the invariant `used <= limit` holds at every instant. The peak is
//! kept for reports (`memory_peak_bytes`).

use foresight_core::ByteLen;

/// A hard limit on bytes held, with the current use and the peak.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Budget {
    limit: ByteLen,
    used: ByteLen,
    peak: ByteLen,
}

impl Budget {
    /// A budget of `limit` bytes, none used.
    pub fn new(limit: ByteLen) -> Budget {
        Budget {
            limit,
            used: ByteLen::ZERO,
            peak: ByteLen::ZERO,
        }
    }

    /// Reserves `bytes` if they fit; returns whether they did.
    #[must_use]
    pub fn try_reserve(&mut self, bytes: ByteLen) -> bool {
        if bytes.0 > self.available().0 {
            return false;
        }
        self.used.0 += bytes.0;
        self.peak.0 = self.peak.0.max(self.used.0);
        debug_assert!(self.used <= self.limit);
        true
    }

    /// Returns `bytes` to the budget. Releasing more than is held is a programmer error.
    pub fn release(&mut self, bytes: ByteLen) {
        assert!(
            bytes <= self.used,
            "released {bytes} but only {} held",
            self.used
        );
        self.used.0 -= bytes.0;
    }

    /// Bytes that may still be reserved.
    pub fn available(&self) -> ByteLen {
        ByteLen(self.limit.0 - self.used.0)
    }

    /// Bytes held now.
    pub fn used(&self) -> ByteLen {
        self.used
    }

    /// The most bytes ever held at once.
    pub fn peak(&self) -> ByteLen {
        self.peak
    }

    /// The limit.
    pub fn limit(&self) -> ByteLen {
        self.limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn never_exceeds_the_limit(limit in 0u64..10_000, ops in prop::collection::vec((any::<bool>(), 0u64..3_000), 0..200)) {
            let mut b = Budget::new(ByteLen(limit));
            let mut held: Vec<u64> = vec![];
            for (reserve, n) in ops {
                if reserve {
                    if b.try_reserve(ByteLen(n)) { held.push(n); }
                } else if let Some(n) = held.pop() {
                    b.release(ByteLen(n));
                }
                prop_assert!(b.used().0 <= limit);
                prop_assert_eq!(b.used().0, held.iter().sum::<u64>());
                prop_assert!(b.peak() >= b.used());
            }
        }
    }
}
