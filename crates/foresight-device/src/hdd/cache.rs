//! The drive's segmented read cache and its lazily computed read-ahead.
//!
//! The on-board buffer is split into a fixed number of segments, each holding one contiguous run of
//! sectors (paper `001_9c47c4c84914efc3.txt`, section 2.1: "The disk cache is usually divided in a
//! number of cache segments ... used to hold contiguous data"; DiskSim's `Number of buffer segments`
//! and `Segment size (in blks)`). A segment is a ring: it keeps the newest `segment_sectors` sectors of
//! its run, so a long read or a long read-ahead pushes the oldest sectors out.
//!
//! After a read that went to the media, the drive keeps reading the following sectors into the same
//! segment (read-ahead; DiskSim's `Buffer continuous read = 3`, "prefetching up to the point that the
//! current cache segment is full", bounded by `Maximum read-ahead`) until it needs the head for
//! another command. Nothing is simulated per sector: a running read-ahead is stored as
//! [`ReadAhead`] (when and where the stream started and where it must stop) and its progress at any
//! instant is computed from the layout and the rotation by the drive, which owns those
//! (`Hdd::stream_reach`). At most one read-ahead runs at a time because there is one head.
//!
//! A read served from a segment while its read-ahead still runs moves the read-ahead's stop to where
//! a media read of the same sectors would have put it, so a stream the drive serves from the buffer
//! keeps being read ahead of until the read-ahead is a whole budget ahead of it. That is what
//! DiskSim 4.0's controller does: a read hit in the segment being prefetched takes the head over
//! from the read-ahead without stopping it (`disk_buffer_stopable_access`,
//! `disk_buffer_attempt_access_swap`) and raises the segment's read-ahead goal to the hit's end plus
//! the budget (`disk_check_hda_pending`, `disk_buffer_get_max_readahead`). Every other command
//! stops the read-ahead where it has got to, once it has read its minimum: a miss, a write, and also
//! a read served wholly from another segment, which needs no media access but, in DiskSim, is
//! activated like any read and stops a prefetch whose segment is not its own
//! (`disk_activate_read` calls `disk_buffer_stop_access`; with `Preseeking level = 0` once the read
//! that started the prefetch has completed, and with `Stop prefetch in sector = 0` at once, inside
//! a sector). With a minimum read-ahead DiskSim does not let such a command stop the prefetch
//! before the minimum (`disk_buffer_stopable_access`), so that command, the hit included, waits
//! for it, and a read whose sectors the read-ahead has brought in by then is served from its
//! segment or joins it (`disk_check_prefetch_swap` looks for the waiting read's segment again). Segments are told apart by what they hold, not by whose data it is: a stream whose reads
//! arrive out of order (a DFS server's concurrent workers) stops its own read-ahead when a late read
//! hits what an earlier read-ahead left in an older segment. A read served after the read-ahead has
//! stopped does not start it again, as DiskSim with `Read-ahead on idle hit = 0` (the value in every
//! shipped drive file): the stream's next read past the segment goes to the media and waits for the
//! platter.
//!
//! A read that starts in what the read-ahead has brought into its segment and ends past it joins
//! the read-ahead as well (DiskSim's partial hit on a segment being read): the read-ahead carries
//! on and serves it as it reads. Which reads starting further on join it is the drive's
//! [`super::AlmostReadHits`]; any other stops the read-ahead and is a miss.
//!
//! Segments are replaced least-recently-used. With more interleaved sequential streams than segments,
//! each stream's segment is reclaimed before the stream comes back to it, which is the collapse that
//! paper 001 (section 3, Figure 7) describes; it falls out of LRU without special handling.
//!
//! Written data also lives in segments (write-back caching, DiskSim's `Fast write level`): a segment
//! that holds a write is *dirty* until the drive has destaged it to the media, and cannot be
//! reclaimed before then. After the destage its data stays readable if the drive allows read hits on
//! write data (DiskSim's `Allow read hits on write data`), and is dropped otherwise. Drives with a
//! dedicated write segment (`Use separate write segment`) keep one extra segment for writes only, so
//! writes never push read data out. Both instants are stored with the segment, so the cache needs no
//! event of its own: every lookup takes the current time.

/// A read-ahead in progress.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReadAhead {
    /// Absolute time, in (fractional) nanoseconds, at which the head is at the leading edge of
    /// `origin_lba`, on that sector's track.
    pub origin_ns: f64,
    /// The next sector the stream reads from `origin_ns` on.
    pub origin_lba: u64,
    /// The stream stops before this sector (read-ahead budget, segment size or end of the disk).
    pub limit_lba: u64,
    /// The drive reads ahead at least to this sector before it serves another command that needs
    /// the head (minimum read-ahead); equal to `origin_lba` when there is no minimum.
    pub floor_lba: u64,
}

/// One cache segment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Segment {
    /// The oldest sector the segment may hold; the ring rule may have pushed out more.
    pub first_lba: u64,
    /// One past the newest sector held when no read-ahead runs into this segment.
    pub end_lba: u64,
    /// The read-ahead filling this segment, if any.
    pub readahead: Option<ReadAhead>,
    /// Until when (absolute ns) the segment holds data not yet on the media; 0 when clean.
    pub dirty_until_ns: f64,
    /// From when (absolute ns) the segment no longer holds anything (written data the drive does not
    /// keep after destaging); infinity for data that stays.
    pub drop_at_ns: f64,
    /// Recency stamp for LRU replacement (larger = more recent).
    stamp: u64,
}

impl Segment {
    /// Whether the segment still holds data at `now_ns`.
    pub fn live(&self, now_ns: f64) -> bool {
        now_ns < self.drop_at_ns
    }

    /// Whether the segment holds data not yet destaged at `now_ns`.
    pub fn dirty(&self, now_ns: f64) -> bool {
        now_ns < self.dirty_until_ns
    }
}

/// A fixed set of segments with LRU replacement. Its size is fixed at construction; nothing allocates
/// afterwards.
#[derive(Clone, Debug)]
pub struct SegmentCache {
    segments: Vec<Option<Segment>>,
    segment_sectors: u64,
    readahead_budget_sectors: u64,
    enabled: bool,
    stamp: u64,
    streaming: Option<usize>,
    /// The dedicated write segment (the last slot), if the drive has one.
    write_segment: Option<usize>,
}

impl SegmentCache {
    /// `count` segments of `segment_sectors` sectors; after a media read the drive reads ahead up to
    /// `min(readahead_max_sectors, segment_sectors)` sectors. A disabled cache holds nothing and never
    /// reads ahead. Panics if an enabled cache has no segments or empty segments (validated params
    /// never do).
    pub fn new(
        count: u32,
        segment_sectors: u32,
        readahead_max_sectors: u32,
        enabled: bool,
    ) -> SegmentCache {
        SegmentCache::with_write_segment(
            count,
            segment_sectors,
            readahead_max_sectors,
            enabled,
            false,
        )
    }

    /// As [`SegmentCache::new`], plus one dedicated write segment when `separate_write_segment`.
    pub fn with_write_segment(
        count: u32,
        segment_sectors: u32,
        readahead_max_sectors: u32,
        enabled: bool,
        separate_write_segment: bool,
    ) -> SegmentCache {
        assert!(
            !enabled || (count > 0 && segment_sectors > 0),
            "an enabled cache needs segments"
        );
        let extra = usize::from(enabled && separate_write_segment);
        let count = if enabled { count as usize + extra } else { 0 };
        let segments = vec![None; count];
        assert_eq!(segments.len(), count, "segment table is sized once, here");
        SegmentCache {
            segments,
            segment_sectors: u64::from(segment_sectors),
            readahead_budget_sectors: u64::from(readahead_max_sectors.min(segment_sectors)),
            enabled,
            stamp: 0,
            streaming: None,
            write_segment: (extra == 1).then(|| count - 1),
        }
    }

    /// The segment at `index` if it holds anything at `now_ns`.
    fn live_at(&self, index: usize, now_ns: f64) -> Option<&Segment> {
        self.segments
            .get(index)
            .and_then(|s| s.as_ref())
            .filter(|s| s.live(now_ns))
    }

    /// Whether the cache is in use.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Sectors per segment.
    pub fn segment_sectors(&self) -> u64 {
        self.segment_sectors
    }

    /// How many sectors a read-ahead may fetch past the end of a read.
    pub fn readahead_budget_sectors(&self) -> u64 {
        self.readahead_budget_sectors
    }

    /// The segment at `index`, if it holds anything.
    pub fn segment(&self, index: usize) -> Option<&Segment> {
        self.segments.get(index).and_then(|s| s.as_ref())
    }

    /// Number of segments.
    pub fn len(&self) -> usize {
        self.segments.len()
    }

    /// Whether the cache has no segments (it is disabled).
    pub fn is_empty(&self) -> bool {
        self.segments.is_empty()
    }

    /// The segment being filled by a read-ahead, and the read-ahead.
    pub fn streaming(&self) -> Option<(usize, ReadAhead)> {
        let i = self.streaming?;
        let ra = self.segments[i].as_ref()?.readahead?;
        Some((i, ra))
    }

    /// The sectors `[first, end)` a segment holds, given how far its read-ahead (if any) has got:
    /// `reach` is the stream's next unread sector and is ignored for a segment without read-ahead.
    pub fn held(&self, seg: &Segment, reach: Option<u64>) -> (u64, u64) {
        let end = match (seg.readahead, reach) {
            (Some(_), Some(r)) => r,
            _ => seg.end_lba,
        };
        (
            seg.first_lba.max(end.saturating_sub(self.segment_sectors)),
            end,
        )
    }

    /// A segment that holds all of `[lba, end)` at `now_ns`; `reach` is the running read-ahead's
    /// progress.
    pub fn find_full_hit(
        &self,
        lba: u64,
        end: u64,
        reach: Option<u64>,
        now_ns: f64,
    ) -> Option<usize> {
        (0..self.segments.len()).find_map(|i| {
            let s = self.live_at(i, now_ns)?;
            let r = if self.streaming == Some(i) {
                reach
            } else {
                None
            };
            let (first, held_end) = self.held(s, r);
            (first <= lba && end <= held_end).then_some(i)
        })
    }

    /// A segment (with no read-ahead running) whose held run contains `lba` but ends before `end`:
    /// the request's first sectors can come from it. Returns the segment and the end of the cached
    /// prefix.
    pub fn find_prefix(&self, lba: u64, end: u64, now_ns: f64) -> Option<(usize, u64)> {
        (0..self.segments.len()).find_map(|i| {
            let s = self.live_at(i, now_ns)?;
            if s.readahead.is_some() || s.dirty(now_ns) || self.write_segment == Some(i) {
                return None;
            }
            let (first, held_end) = self.held(s, None);
            (first <= lba && lba < held_end && held_end < end).then_some((i, held_end))
        })
    }

    /// Replaces the running read-ahead of segment `index` by `readahead`, the same stream going on
    /// to a further limit, and drops other segments holding any of the sectors it now reaches, so no
    /// sector is held twice. Panics if `index` is not the segment being filled.
    pub fn carry_readahead_on(&mut self, index: usize, readahead: ReadAhead) {
        assert_eq!(
            self.streaming,
            Some(index),
            "only the running read-ahead can go on"
        );
        let first_lba = match self.segments[index].as_mut() {
            Some(s) => {
                s.readahead = Some(readahead);
                s.first_lba
            }
            None => panic!("the streaming segment holds its run"),
        };
        let limit = readahead.limit_lba;
        for (i, s) in self.segments.iter_mut().enumerate() {
            if i != index && s.is_some_and(|seg| seg.first_lba < limit && first_lba < seg.end_lba) {
                *s = None;
            }
        }
    }

    /// Freezes the running read-ahead at `reached` (its next unread sector): the head is needed
    /// elsewhere.
    pub fn stop_streaming(&mut self, reached: u64) {
        if let Some(i) = self.streaming.take() {
            if let Some(s) = self.segments[i].as_mut() {
                s.end_lba = reached;
                s.first_lba = s
                    .first_lba
                    .max(reached.saturating_sub(self.segment_sectors));
                s.readahead = None;
            }
        }
    }

    /// The segment a media read starting at `lba` should fill at `now_ns`. With `keep_run`, one
    /// whose run contains or ends at `lba` (so a stream keeps its segment), else an empty one, else
    /// the least recently used. Without it, only an empty one or the least recently used, as
    /// DiskSim 4.0 picks for a read that matches no segment (`disk_buffer_select_read_segment`
    /// ranks an empty segment first and a clean one with no pending request next, the earliest in
    /// its list, which it keeps least recently used first; a segment whose run merely ends at the
    /// read's first sector is such a clean one). Dirty segments and the dedicated write segment are
    /// never chosen, so this is `None` when every read segment holds data not yet destaged (the
    /// read then bypasses the cache).
    pub fn choose_for_miss(&self, lba: u64, now_ns: f64, keep_run: bool) -> Option<usize> {
        assert!(self.enabled && !self.segments.is_empty());
        let reads = |i: &usize| self.write_segment != Some(*i);
        let continuing = (0..self.segments.len())
            .filter(reads)
            .filter(|_| keep_run)
            .find(|&i| {
                self.live_at(i, now_ns).is_some_and(|s| {
                    let (first, end) = self.held(s, None);
                    s.readahead.is_none() && !s.dirty(now_ns) && first <= lba && lba <= end
                })
            });
        continuing.or_else(|| self.replaceable(now_ns, reads))
    }

    /// The segment a write accepted at `now_ns` goes to: the dedicated write segment if there is
    /// one, else an empty or the least recently used clean segment. `None` if every candidate holds
    /// data not yet destaged (the write must wait).
    pub fn choose_for_write(&self, now_ns: f64) -> Option<usize> {
        assert!(self.enabled && !self.segments.is_empty());
        match self.write_segment {
            Some(w) => (!self.live_at(w, now_ns).is_some_and(|s| s.dirty(now_ns))).then_some(w),
            None => self.replaceable(now_ns, |_| true),
        }
    }

    /// A segment holding data not yet destaged at `now_ns` whose run ends exactly at `lba`.
    pub fn dirty_ending_at(&self, lba: u64, now_ns: f64) -> Option<usize> {
        (0..self.segments.len()).find(|&i| {
            self.live_at(i, now_ns)
                .is_some_and(|s| s.dirty(now_ns) && s.end_lba == lba)
        })
    }

    /// An empty segment among `allowed`, else the least recently used clean one.
    fn replaceable(&self, now_ns: f64, allowed: impl Fn(&usize) -> bool) -> Option<usize> {
        let mut best: Option<(u64, usize)> = None;
        for i in (0..self.segments.len()).filter(|i| allowed(i)) {
            let stamp = match self.live_at(i, now_ns) {
                None => return Some(i),
                Some(s) if s.dirty(now_ns) || s.readahead.is_some() => continue,
                Some(s) => s.stamp,
            };
            if best.is_none_or(|(b, _)| stamp < b) {
                best = Some((stamp, i));
            }
        }
        best.map(|(_, i)| i)
    }

    /// Makes segment `index` hold the written sectors `[first_lba, end_lba)`, dirty until
    /// `dirty_until_ns` and dropped at `drop_at_ns` (infinity to keep it), most recently used; drops
    /// other segments that overlap it. Stop any read-ahead first.
    pub fn fill_write(
        &mut self,
        index: usize,
        first_lba: u64,
        end_lba: u64,
        dirty_until_ns: f64,
        drop_at_ns: f64,
    ) {
        assert!(
            self.streaming.is_none(),
            "stop the read-ahead before a write"
        );
        self.fill(index, first_lba, end_lba, None);
        if let Some(s) = self.segments[index].as_mut() {
            s.dirty_until_ns = dirty_until_ns;
            s.drop_at_ns = drop_at_ns;
        }
    }

    /// Makes segment `index` hold `[first_lba, end_lba)` (and then whatever `readahead` fetches),
    /// marks it most recently used, and drops other segments that overlap it so no sector is held
    /// twice. Any running read-ahead must have been stopped first unless it is this segment's.
    pub fn fill(
        &mut self,
        index: usize,
        first_lba: u64,
        end_lba: u64,
        readahead: Option<ReadAhead>,
    ) {
        debug_assert!(first_lba <= end_lba);
        if self.streaming.is_some_and(|s| s != index) {
            panic!("fill while another segment streams: stop the read-ahead first");
        }
        let first_lba = first_lba.max(end_lba.saturating_sub(self.segment_sectors));
        let limit = readahead.map_or(end_lba, |r| r.limit_lba);
        for (i, s) in self.segments.iter_mut().enumerate() {
            if i == index {
                continue;
            }
            if let Some(seg) = s {
                if seg.first_lba < limit && first_lba < seg.end_lba {
                    *s = None;
                }
            }
        }
        self.stamp += 1;
        self.segments[index] = Some(Segment {
            first_lba,
            end_lba,
            readahead,
            dirty_until_ns: 0.0,
            drop_at_ns: f64::INFINITY,
            stamp: self.stamp,
        });
        self.streaming = readahead.map(|_| index);
    }

    /// Marks segment `index` most recently used.
    pub fn touch(&mut self, index: usize) {
        self.stamp += 1;
        if let Some(s) = self.segments[index].as_mut() {
            s.stamp = self.stamp;
        }
    }

    /// Drops every segment holding any of `[lba, end)` (a write made them stale). Stop the running
    /// read-ahead first.
    pub fn invalidate(&mut self, lba: u64, end: u64) {
        assert!(
            self.streaming.is_none(),
            "stop the read-ahead before invalidating"
        );
        for s in self.segments.iter_mut() {
            if s.is_some_and(|seg| seg.first_lba < end && lba < seg.end_lba) {
                *s = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_replacement_and_ring_window() {
        let mut c = SegmentCache::new(2, 100, 50, true);
        let a = c.choose_for_miss(0, 0.0, true).unwrap();
        c.fill(a, 0, 10, None);
        let b = c.choose_for_miss(1000, 0.0, true).unwrap();
        assert_ne!(a, b);
        c.fill(b, 1000, 1010, None);
        assert_eq!(c.find_full_hit(2, 8, None, 0.0), Some(a));
        c.touch(a);
        // A third stream evicts the least recently used (b).
        let v = c.choose_for_miss(5000, 0.0, true).unwrap();
        assert_eq!(v, b);
        c.fill(v, 5000, 5300, None);
        // Only the newest 100 sectors are kept.
        assert_eq!(c.held(c.segment(v).unwrap(), None), (5200, 5300));
        assert_eq!(c.find_full_hit(5100, 5110, None, 0.0), None);
        assert_eq!(c.find_full_hit(5250, 5300, None, 0.0), Some(v));
    }

    #[test]
    fn read_ahead_progress_extends_hits_and_freezes() {
        let mut c = SegmentCache::new(4, 100, 60, true);
        assert_eq!(c.readahead_budget_sectors(), 60);
        let ra = ReadAhead {
            origin_ns: 0.0,
            origin_lba: 20,
            limit_lba: 80,
            floor_lba: 20,
        };
        c.fill(0, 0, 20, Some(ra));
        assert_eq!(c.streaming().map(|s| s.0), Some(0));
        assert_eq!(c.find_full_hit(20, 30, Some(25), 0.0), None);
        assert_eq!(c.find_full_hit(20, 30, Some(30), 0.0), Some(0));
        c.stop_streaming(45);
        assert!(c.streaming().is_none());
        assert_eq!(c.held(c.segment(0).unwrap(), None), (0, 45));
        assert_eq!(c.find_prefix(40, 60, 0.0), Some((0, 45)));
        // A new read at the end of the run reuses the segment.
        assert_eq!(c.choose_for_miss(45, 0.0, true), Some(0));
        // Without keeping runs, an empty segment comes first.
        assert_eq!(c.choose_for_miss(45, 0.0, false), Some(1));
        c.invalidate(10, 11);
        assert!(c.segment(0).is_none());
    }

    #[test]
    fn a_carried_on_read_ahead_takes_over_the_sectors_it_now_reaches() {
        let mut c = SegmentCache::new(4, 100, 60, true);
        c.fill(1, 90, 95, None);
        let ra = ReadAhead {
            origin_ns: 0.0,
            origin_lba: 20,
            limit_lba: 80,
            floor_lba: 20,
        };
        c.fill(0, 0, 20, Some(ra));
        assert!(c.segment(1).is_some(), "beyond the first limit");
        let further = ReadAhead {
            limit_lba: 100,
            ..ra
        };
        c.carry_readahead_on(0, further);
        assert_eq!(c.streaming(), Some((0, further)));
        assert!(c.segment(1).is_none(), "no sector is held twice");
        assert_eq!(c.find_full_hit(80, 100, Some(100), 0.0), Some(0));
    }

    #[test]
    #[should_panic(expected = "only the running read-ahead can go on")]
    fn only_the_running_read_ahead_can_be_carried_on() {
        let mut c = SegmentCache::new(2, 100, 60, true);
        c.fill(0, 0, 20, None);
        c.carry_readahead_on(
            0,
            ReadAhead {
                origin_ns: 0.0,
                origin_lba: 20,
                limit_lba: 80,
                floor_lba: 20,
            },
        );
    }

    #[test]
    fn disabled_cache_has_no_segments() {
        let c = SegmentCache::new(8, 100, 100, false);
        assert!(c.is_empty());
        assert_eq!(c.find_full_hit(0, 1, None, 0.0), None);
    }

    #[test]
    fn written_data_is_dirty_until_destaged_then_kept_or_dropped() {
        let mut c = SegmentCache::new(2, 100, 100, true);
        let w = c.choose_for_write(0.0).unwrap();
        c.fill_write(w, 500, 508, 10.0, f64::INFINITY);
        assert_eq!(c.find_full_hit(500, 508, None, 5.0), Some(w));
        // The dirty segment is not reclaimed by reads or another write before its destage.
        assert_ne!(c.choose_for_miss(0, 5.0, true), Some(w));
        let other = c.choose_for_write(5.0).unwrap();
        assert_ne!(other, w);
        c.fill_write(other, 900, 904, 20.0, 20.0);
        assert_eq!(c.choose_for_write(8.0), None, "both segments dirty");
        // After its destage the first stays readable; the second is dropped.
        assert_eq!(c.find_full_hit(500, 508, None, 25.0), Some(w));
        assert_eq!(c.find_full_hit(900, 904, None, 25.0), None);
        assert_eq!(
            c.choose_for_write(25.0),
            Some(other),
            "a dropped segment is empty"
        );
    }

    #[test]
    fn a_dedicated_write_segment_leaves_read_segments_alone() {
        let mut c = SegmentCache::with_write_segment(1, 100, 100, true, true);
        assert_eq!(c.len(), 2);
        let r = c.choose_for_miss(0, 0.0, true).unwrap();
        c.fill(r, 0, 50, None);
        let w = c.choose_for_write(1.0).unwrap();
        assert_ne!(w, r);
        c.fill_write(w, 1000, 1008, 5.0, f64::INFINITY);
        assert_eq!(c.find_full_hit(0, 50, None, 2.0), Some(r));
        assert_eq!(c.choose_for_write(2.0), None, "the write segment is dirty");
        assert_eq!(
            c.choose_for_miss(5000, 2.0, true),
            Some(r),
            "reads never take the write segment"
        );
    }
}
