//! The contention controller: resizes one stream's prefetch window to the memory it can keep.
//!
//! Paper 003_eb9cef22f2823582.txt, section I: when the memory available changes, a contention
//! controller shrinks or grows the prefetch window to match, so that instances competing for memory
//! do not collapse and a larger memory is put to use. The paper gives no formula; this is additive
//! increase, multiplicative decrease:
//!
//! - **decrease**: when prefetched data was evicted before the application used it (the policy sees
//!   a read miss inside a range it fetched and that completed), the window halves, at most once per
//!   half window of progress so that one burst of evictions counts once; under
//!   `Input::MemoryPressure` the policy grants it a share of the memory in use (see
//!   [`crate::directed`]: the leading stream's share is large, the others' small), so that the
//!   windows of several instances fit together at once instead of halving in turn;
//! - **increase**: every byte used from a prefetch that survived adds `step / window` bytes, so the
//!   window grows by `step` (1/16 of the memory the policy may use) per window consumed without loss.
//!
//! The window stays within `[min_bytes, max_bytes]`; when the controller is disabled it stays at
//! `max_bytes` whatever happens.

/// One stream's window size. See the module documentation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Contention {
    enabled: bool,
    limit_bytes: u64,
    /// Most the window may grow back to while memory is over-committed (the share the policy
    /// granted); `max_bytes` otherwise.
    cap_bytes: u64,
    min_bytes: u64,
    max_bytes: u64,
    step_bytes: u64,
    progress_since_cut_bytes: u64,
    cuts: u64,
}

impl Contention {
    /// A controller starting at `max_bytes`, never below `min_bytes`.
    pub fn new(enabled: bool, min_bytes: u64, max_bytes: u64) -> Contention {
        assert!(
            min_bytes >= 1 && min_bytes <= max_bytes,
            "window bounds {min_bytes}..={max_bytes}"
        );
        Contention {
            enabled,
            limit_bytes: max_bytes,
            cap_bytes: max_bytes,
            min_bytes,
            max_bytes,
            step_bytes: (max_bytes / 16).max(min_bytes),
            progress_since_cut_bytes: max_bytes,
            cuts: 0,
        }
    }

    /// The current window limit, bytes.
    pub fn limit_bytes(&self) -> u64 {
        self.limit_bytes
    }

    /// How many times the window was cut.
    pub fn cuts(&self) -> u64 {
        self.cuts
    }

    /// Prefetched data was evicted before use.
    pub fn on_evicted(&mut self) {
        if !self.enabled || self.progress_since_cut_bytes < self.limit_bytes / 2 {
            return;
        }
        self.limit_bytes = (self.limit_bytes / 2).max(self.min_bytes);
        self.progress_since_cut_bytes = 0;
        self.cuts += 1;
        self.check();
    }

    /// Memory is over-committed: the window may hold at most `cap_bytes` (what the stream holds
    /// now plus what is still free, as the policy reckons it).
    pub fn on_pressure(&mut self, cap_bytes: u64) {
        if !self.enabled {
            return;
        }
        self.limit_bytes = cap_bytes.clamp(self.min_bytes, self.limit_bytes);
        self.progress_since_cut_bytes = 0;
        self.check();
    }

    /// The policy grants the window exactly `share_bytes` of the over-committed memory: the limit
    /// moves there at once, up or down, and growth stops there until [`Contention::ungrant`].
    pub fn grant(&mut self, share_bytes: u64) {
        if !self.enabled {
            return;
        }
        self.cap_bytes = self.cap_for(share_bytes);
        if self.cap_bytes < self.limit_bytes {
            self.progress_since_cut_bytes = 0;
        }
        self.limit_bytes = self.cap_bytes;
        self.check();
    }

    /// The limit a grant of `share_bytes` sets: the share, within the window's bounds.
    pub fn cap_for(&self, share_bytes: u64) -> u64 {
        share_bytes.clamp(self.min_bytes, self.max_bytes)
    }

    /// What a series of grants ending with `share_bytes`, with nothing else between them, leaves:
    /// the policy records the grants it makes to the streams it leaves alone, and applies them
    /// at once when it next looks at one. `lowered` says whether one of them set a limit below
    /// the one before (the window's own limit, for the first), which restarts the progress since
    /// a cut as [`Contention::grant`] does. Without one the grants never fell, so the last is at
    /// least the current limit.
    pub fn regrant(&mut self, share_bytes: u64, lowered: bool) {
        if !self.enabled {
            return;
        }
        self.cap_bytes = self.cap_for(share_bytes);
        debug_assert!(
            lowered || self.cap_bytes >= self.limit_bytes,
            "a grant below the limit that lowered nothing"
        );
        if lowered {
            self.progress_since_cut_bytes = 0;
        }
        self.limit_bytes = self.cap_bytes;
        self.check();
    }

    /// Memory is no longer split by the policy: the window may grow back to its maximum.
    pub fn ungrant(&mut self) {
        self.cap_bytes = self.max_bytes;
    }

    /// The application used `bytes` of data; `kept` says whether the prefetch survived until then.
    pub fn on_used(&mut self, bytes: u64, kept: bool) {
        self.progress_since_cut_bytes = self.progress_since_cut_bytes.saturating_add(bytes);
        if !self.enabled || !kept {
            return;
        }
        let grow = (bytes as u128 * self.step_bytes as u128 / self.limit_bytes as u128) as u64;
        self.limit_bytes = (self.limit_bytes + grow.max(1)).min(self.cap_bytes);
        self.check();
    }

    fn check(&self) {
        assert!(
            self.limit_bytes >= self.min_bytes && self.limit_bytes <= self.cap_bytes,
            "window limit {} outside {}..={}",
            self.limit_bytes,
            self.min_bytes,
            self.cap_bytes
        );
        assert!(self.cap_bytes <= self.max_bytes, "cap over the maximum");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_on_eviction_once_per_half_window_and_grows_back() {
        let mut c = Contention::new(true, 1 << 20, 64 << 20);
        c.on_evicted();
        assert_eq!(c.limit_bytes(), 32 << 20);
        c.on_evicted();
        assert_eq!(c.limit_bytes(), 32 << 20, "a burst counts once");
        c.on_used(16 << 20, false);
        c.on_evicted();
        assert_eq!(c.limit_bytes(), 16 << 20);
        for _ in 0..10_000 {
            c.on_used(8192, true);
        }
        assert!(c.limit_bytes() > 16 << 20);
        for _ in 0..1_000_000 {
            c.on_used(8192, true);
        }
        assert_eq!(c.limit_bytes(), 64 << 20);
        c.on_pressure(100);
        assert_eq!(c.limit_bytes(), 1 << 20);
        assert_eq!(c.cuts(), 2);
    }

    #[test]
    fn disabled_controller_keeps_the_maximum() {
        let mut c = Contention::new(false, 1 << 20, 64 << 20);
        c.on_evicted();
        c.on_pressure(0);
        assert_eq!(c.limit_bytes(), 64 << 20);
    }
}
