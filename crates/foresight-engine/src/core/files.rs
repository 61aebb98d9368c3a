//! The file and stream tables. A long-running server opens far more files and streams than it
//! holds at once, so both tables reuse slots: a closed stream's id goes to the next open, and a
//! file nobody reads, with nothing cached, queued or in flight, is forgotten and its id goes to a
//! later new file. Reuse is only safe once nothing still names the old owner (a chunk, a queued
//! read, a waiter, the policy, the backend), which is what `close` and `forget_if_idle` see to.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use foresight_core::{FileId, Instant, StreamId};
use foresight_policy::Input;

use crate::backend::FileHandle;

use super::{Core, FileState, State, StreamState, THINK_SAMPLES};

impl Core {
    /// The id the next new file gets: a forgotten file's, or a new one.
    pub(crate) fn next_file_id(&self) -> FileId {
        FileId(
            self.free_files
                .front()
                .copied()
                .unwrap_or(self.files.len() as u32),
        )
    }

    /// Registers an opened file (or recognises one opened before) and a new stream reading it, in
    /// a free stream slot if there is one. Returns the file, the stream, the stream's open
    /// sequence number and the file's size.
    pub(crate) fn open(&mut self, mut handle: FileHandle) -> (FileId, StreamId, u64, u64) {
        let key = (
            handle.identity.0,
            handle.identity.1,
            handle.size_bytes,
            handle.modified,
        );
        let file = match self.identities.get(&key) {
            Some(&f) => {
                // The file is known: the handle's id and place are not kept, and a backend that
                // placed the file there (the array cache) forgets that placement.
                self.backend
                    .file_forgotten(handle.id, handle.volume_offset_bytes);
                let st = &mut self.files[f.0 as usize];
                if st.handle.is_none() {
                    // The file was closed by all its readers and is open again: the new
                    // descriptor takes the file's id and place, not the id it was opened under.
                    handle.id = f;
                    handle.volume_offset_bytes = st.volume_offset_bytes;
                    st.handle = Some(Arc::new(handle));
                }
                f
            }
            None => {
                assert_eq!(handle.id, self.next_file_id(), "opened with a stale id");
                let f = handle.id;
                if handle.direct {
                    self.stats.files_direct += 1;
                } else {
                    self.stats.files_buffered += 1;
                }
                let st = FileState {
                    key,
                    remembered: true,
                    size_bytes: handle.size_bytes,
                    volume_offset_bytes: handle.volume_offset_bytes,
                    handle: Some(Arc::new(handle)),
                    chunks: BTreeMap::new(),
                    live_chunks: 0,
                    readers: 0,
                    deferred: Vec::new(),
                    last_reader: None,
                };
                if self.free_files.front() == Some(&f.0) {
                    self.free_files.pop_front();
                    self.files[f.0 as usize] = st;
                } else {
                    self.files.push(st);
                }
                self.identities.insert(key, f);
                // Only the new file goes to the policy: rebuilding the whole layout on every new
                // file made opening n distinct files take time quadratic in n.
                let added = Self::file_layout(&self.files[f.0 as usize]);
                self.policy.add_file(f, added);
                f
            }
        };
        let st = &mut self.files[file.0 as usize];
        st.readers += 1;
        let size = st.size_bytes;
        self.opens += 1;
        let open_seq = self.opens;
        let state = StreamState {
            waits_for_memory: false,
            waiting_on: None,
            open: true,
            file,
            errors: VecDeque::new(),
            deferred: false,
            read: (0, 0),
            delivered: Vec::new(),
            open_seq,
            hinted_reads_left: 0,
            lapsed: false,
            read_at: None,
            read_end_at: None,
            gaps_ns: [0; THINK_SAMPLES],
            gaps_seen: 0,
        };
        let stream = StreamId(foresight_core::take_slot(
            &mut self.streams,
            &mut self.free_streams,
            state,
        ));
        // Every remembered file has a reader (at most one file per open stream) or a chunk whose
        // read is in flight (its last reader closed, which dropped its other chunks).
        let remembered = self.files.len() - self.free_files.len() - self.forgotten.len();
        let open_streams = self.streams.len() - self.free_streams.len();
        assert!(
            remembered <= open_streams + self.in_flight,
            "{remembered} files remembered with {open_streams} streams open and {} reads in flight",
            self.in_flight
        );
        (file, stream, open_seq, size)
    }

    /// Forgets `file` once nothing needs it: no reader, and no chunk cached, queued or in flight.
    /// Its identity goes at once, so a later open of the same file is a new file with nothing
    /// cached; its slot goes to a later new file once the policy has been told, so the policy
    /// never hears of the new file before it has forgotten the old one.
    pub(super) fn forget_if_idle(&mut self, file: FileId) {
        let f = &mut self.files[file.0 as usize];
        if !f.remembered || f.readers > 0 || f.live_chunks > 0 {
            return;
        }
        f.remembered = false;
        f.handle = None;
        f.chunks = BTreeMap::new();
        f.deferred = Vec::new();
        let key = f.key;
        self.identities.remove(&key);
        self.forgotten.push(file);
    }

    /// Closes a stream: it lets go of its claims, waits and errors, the policy forgets it, and its
    /// slot is freed for the next open. When its file has no reader left, drops the file's chunks
    /// and queued reads.
    pub(crate) fn close(&mut self, now: Instant, stream: StreamId) {
        let st = &mut self.streams[stream.0 as usize];
        assert!(st.open, "{stream} closed twice");
        st.open = false;
        st.errors.clear();
        st.waiting_on = None;
        st.waits_for_memory = false;
        let file = st.file;
        st.hinted_reads_left = 0;
        self.undefer(stream);
        self.release_claims(stream);
        // Nothing may still name the stream once its id can be handed out again: a demand read
        // of it that fails later must not report to the next stream in the slot, and a waiter
        // entry left by a spurious wake-up must not wake (or be counted for) the new one.
        let ids: Vec<u32> = self.files[file.0 as usize]
            .chunks
            .values()
            .copied()
            .collect();
        for id in ids {
            let c = self.chunk_mut(id);
            if c.owner == Some(stream) {
                c.owner = None;
            }
            if c.reader == Some(stream) {
                c.reader = None;
            }
            c.waiters.retain(|(s, _)| *s != stream);
        }
        // Its reads still waiting for a slot carry its id to the backend too; the next reader in
        // the slot did not ask for them. (Reads already submitted keep it: the backend has them.)
        for r in self.urgent.iter_mut().chain(self.ahead.iter_mut()) {
            if r.reader == Some(stream) {
                r.reader = None;
            }
        }
        self.memory_waiters.retain(|(s, _, _)| *s != stream);
        self.defer_waiters.retain(|(s, _)| *s != stream);
        // The policy drops what it keeps for the stream before the id can name another, and so
        // does a backend that keeps figures per reader.
        self.policy.handle(now, Input::StreamClosed { stream });
        self.backend.reader_closed(stream);
        self.free_streams.push(stream.0);
        let f = &mut self.files[file.0 as usize];
        f.readers -= 1;
        // The slot may go to a reader of another file, which must not be charged for this one.
        if f.last_reader == Some(stream) {
            f.last_reader = None;
        }
        if f.readers == 0 {
            let ids: Vec<u32> = f.chunks.values().copied().collect();
            f.chunks.clear();
            f.handle = None;
            for id in ids {
                let c = self.chunk_mut(id);
                c.doomed = true;
                if matches!(c.state, State::Ready { .. }) && c.pins == 0 {
                    self.free_chunk(id);
                }
            }
            // Reads of the file still waiting for a slot are dropped now; in-flight ones free
            // their chunk when they complete.
            self.drop_queued(|c| c.file == file);
            self.wake_memory_waiters();
            self.forget_if_idle(file);
        }
        self.run_policy(now, None);
        self.dispatch();
    }

    /// Whether `stream` is open, reads `file`, and is the open numbered `open_seq` (not a later
    /// stream given the same slot).
    pub(crate) fn stream_reads(&self, stream: StreamId, file: FileId, open_seq: u64) -> bool {
        self.streams
            .get(stream.0 as usize)
            .is_some_and(|s| s.open && s.file == file && s.open_seq == open_seq)
    }

    /// Slots in the stream table: the most streams ever open at once.
    pub(crate) fn stream_slots(&self) -> usize {
        self.streams.len()
    }

    /// Slots in the file table.
    pub(crate) fn file_slots(&self) -> usize {
        self.files.len()
    }

    /// Files remembered now: open, or with chunks cached or in flight.
    pub(crate) fn files_remembered(&self) -> usize {
        self.identities.len()
    }

    /// The descriptor a file is read through while it is open.
    pub(crate) fn file_handle(&self, file: FileId) -> Option<Arc<FileHandle>> {
        self.files[file.0 as usize].handle.clone()
    }

    /// Size of a file at open.
    pub(crate) fn file_size(&self, file: FileId) -> u64 {
        self.files[file.0 as usize].size_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::*;

    /// A reader's close reaches the backend before its id can go to another reader, so that a
    /// backend keeping figures per reader (the emulated anticipatory scheduler) starts the next
    /// one afresh; the reader's reads already submitted keep its id.
    #[test]
    fn a_closed_reader_is_told_to_the_backend_before_its_id_is_reused() {
        let (mut core, backend, _, s) = core_over_holding(4 << 20, 64 << 10);
        core.begin_read(Instant(0), s, FileId(0), 0, 64 << 10);
        assert_eq!(backend.held.lock().unwrap()[0].reader, Some(s));
        core.close(Instant(1), s);
        assert_eq!(*backend.closed.lock().unwrap(), vec![s]);
        let handle = other_file(&mut core);
        let (_, again, _, _) = core.open(handle);
        assert_eq!(again, s, "the id goes to the next reader");
        assert_eq!(backend.held.lock().unwrap()[0].reader, Some(s));
        core.complete_all(Instant(2), &mut completions(&backend));
        core.check();
    }

    /// A reader's reads still waiting for a submission slot when it closes, while another reader
    /// keeps the file open, are read for the file all the same, but no longer for that reader: its
    /// id may already name a reader of another file, which the anticipatory scheduler must not
    /// charge with them (a read charged to a reader it did not make ends that reader's
    /// anticipation at once and skews its think-time and seek statistics).
    #[test]
    fn reads_queued_for_a_closed_reader_are_not_charged_to_the_next_reader_in_its_slot() {
        let (mut core, backend, file, sa) = core_over_holding(1 << 20, 64 << 10);
        let again = mem_file(&mut core, "mem", (1, 1));
        let (same, _sb, _, _) = core.open(again);
        assert_eq!(same, file, "one file, two readers");
        core.begin_read(Instant(0), sa, file, 0, 256 << 10);
        assert_eq!(
            (core.in_flight, core.urgent.len()),
            (2, 2),
            "two reads queued"
        );
        core.close(Instant(1), sa);
        let other = other_file(&mut core);
        let (_, sc, _, _) = core.open(other);
        assert_eq!(sc, sa, "the closed reader's slot is reused");
        core.complete_all(Instant(2), &mut completions(&backend));
        let readers: Vec<(u64, Option<StreamId>)> = backend
            .held
            .lock()
            .unwrap()
            .iter()
            .map(|r| (r.offset_bytes, r.reader))
            .collect();
        assert_eq!(readers, vec![(128 << 10, None), (192 << 10, None)]);
        core.check();
    }
}
