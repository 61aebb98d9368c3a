//! Counting the device reads one policy fetch became.
//!
//! A driver executes a policy's `Output::Fetch` as several device reads: only the pages neither
//! held nor in flight are read, and a range that spans strips or files is read piece by piece. The
//! policy hears `Input::Fetched` once, when the last piece lands, and `ok` is false if any piece
//! was cut short (no memory for it, or the device returned fewer bytes). The simulator's
//! block-level layer and the engine's array cache both keep this count; it lives here so that the
//! two drivers tell their policies the same thing by the same rule.

use std::collections::BTreeMap;

use crate::FetchId;

/// Fetches with reads still in flight: per fetch, the reads left and whether any was short.
#[derive(Debug, Default)]
pub struct FetchParts {
    parts: BTreeMap<FetchId, (u32, bool)>,
}

impl FetchParts {
    /// No fetch in flight.
    pub fn new() -> FetchParts {
        FetchParts::default()
    }

    /// Fetch `id` was issued as `reads` device reads (at least one: a fetch that read nothing is
    /// answered at once, not counted here); `short` if part of it was already cut before any read.
    pub fn started(&mut self, id: FetchId, reads: u32, short: bool) {
        assert!(reads > 0, "{id:?}: a fetch of no reads is answered at once");
        let before = self.parts.insert(id, (reads, short));
        assert!(before.is_none(), "{id:?} started twice");
    }

    /// One read of fetch `id` landed, `complete` if it brought every byte it asked for. Returns
    /// `Some(ok)` when it was the fetch's last read (then the fetch is forgotten), `None` while
    /// others are still in flight.
    pub fn part_done(&mut self, id: FetchId, complete: bool) -> Option<bool> {
        let (left, short) = self
            .parts
            .get_mut(&id)
            .expect("a read of a fetch in flight");
        *left -= 1;
        *short |= !complete;
        if *left > 0 {
            return None;
        }
        let ok = !*short;
        self.parts.remove(&id);
        Some(ok)
    }

    /// Fetches with reads still in flight.
    pub fn in_flight(&self) -> usize {
        self.parts.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_read_answers_and_any_short_read_makes_it_not_ok() {
        let mut p = FetchParts::new();
        p.started(FetchId(1), 3, false);
        p.started(FetchId(2), 2, false);
        p.started(FetchId(3), 1, true);
        assert_eq!(p.part_done(FetchId(1), true), None);
        assert_eq!(p.part_done(FetchId(2), false), None);
        assert_eq!(p.part_done(FetchId(1), true), None);
        assert_eq!(p.part_done(FetchId(1), true), Some(true));
        assert_eq!(p.part_done(FetchId(2), true), Some(false));
        // Cut before any read: not ok however its read ends.
        assert_eq!(p.part_done(FetchId(3), true), Some(false));
        assert_eq!(p.in_flight(), 0);
    }

    #[test]
    #[should_panic(expected = "started twice")]
    fn a_fetch_id_is_counted_once() {
        let mut p = FetchParts::new();
        p.started(FetchId(7), 1, false);
        p.started(FetchId(7), 1, false);
    }
}
