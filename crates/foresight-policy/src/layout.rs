//! Where file bytes live: files as extents on a volume, and the volume striped over disks.
//!
//! A file is a sorted list of [`Extent`]s mapping file offsets to volume offsets. A volume may be a
//! single device or a RAID-0 array: with `disks` members and `strip_bytes` strips, volume strip `k`
//! lives on disk `k % disks` at member offset `(k / disks) * strip_bytes` (paper
//! 000_a596543dd26dac72.txt, section 3, Fig. 3). Policies ask the layout, never a device, where a byte
//! is; that is what lets striping-aware policies run unchanged in the simulator and the engine.

use foresight_core::{ByteLen, ByteOffset, ByteRange, Extent, FileId};

/// How a volume is striped. A single device is one disk with one strip spanning it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Striping {
    /// Member disks, at least 1.
    pub disks: u32,
    /// Bytes per strip (the RAID chunk), at least one sector.
    pub strip_bytes: u64,
}

/// The physical home of one volume byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Physical {
    /// Member disk index.
    pub disk: u32,
    /// Volume strip number (counting across all disks).
    pub strip: u64,
    /// Byte offset on the member disk.
    pub disk_offset: ByteOffset,
}

/// One file's size and placement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileLayout {
    /// Bytes in the file.
    pub size: ByteLen,
    /// Extents sorted by file offset, covering `[0, size)` without gaps or overlaps.
    pub extents: Vec<Extent>,
}

/// All files and the volume they live on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    volume_bytes: ByteLen,
    striping: Option<Striping>,
    files: Vec<FileLayout>,
}

/// Why a layout could not be built.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum LayoutError {
    /// The files do not fit on the volume.
    #[error("{files} files of {size} need {need} but the volume holds only {volume}; use fewer or smaller files")]
    DoesNotFit {
        /// How many files.
        files: usize,
        /// Size of each.
        size: ByteLen,
        /// Bytes needed.
        need: ByteLen,
        /// Bytes available.
        volume: ByteLen,
    },
}

impl Layout {
    /// An empty volume of `volume_bytes`, striped as given.
    pub fn new(volume_bytes: ByteLen, striping: Option<Striping>) -> Layout {
        if let Some(s) = striping {
            assert!(s.disks >= 1 && s.strip_bytes >= 512, "bad striping {s:?}");
        }
        Layout {
            volume_bytes,
            striping,
            files: Vec::new(),
        }
    }

    /// A layout for files that are not on any modelled volume (real files the engine reads):
    /// each file is one extent at volume offset 0 of its own address space.
    pub fn unplaced(sizes: &[ByteLen]) -> Layout {
        let mut l = Layout::new(ByteLen(u64::MAX / 2), None);
        for &size in sizes {
            l.push_file(FileLayout {
                size,
                extents: vec![Extent {
                    file_offset: ByteOffset(0),
                    volume_offset: ByteOffset(0),
                    len: size,
                }],
            });
        }
        l
    }

    /// Places `count` files of `size` each, spread evenly over the volume: file `i` starts at
    /// `i * volume / count`, rounded down to a 1 MiB boundary. This is the placement of paper
    /// 001_9c47c4c84914efc3.txt, section 4 (streams start `disk_size / streams` apart), which makes
    /// every switch between streams a real seek.
    pub fn spread(
        volume_bytes: ByteLen,
        striping: Option<Striping>,
        count: usize,
        size: ByteLen,
    ) -> Result<Layout, LayoutError> {
        const ALIGN: u64 = 1 << 20;
        let mut l = Layout::new(volume_bytes, striping);
        let gap = if count == 0 {
            0
        } else {
            volume_bytes.0 / count as u64 / ALIGN * ALIGN
        };
        if count > 0 && (gap < size.0 || gap == 0) {
            return Err(LayoutError::DoesNotFit {
                files: count,
                size,
                need: ByteLen(size.0.saturating_mul(count as u64)),
                volume: volume_bytes,
            });
        }
        for i in 0..count {
            l.push_contiguous(ByteOffset(i as u64 * gap), size);
        }
        Ok(l)
    }

    /// Places `count` files of `size` back to back from volume offset 0, each starting on an
    /// `align_bytes` boundary.
    pub fn contiguous(
        volume_bytes: ByteLen,
        striping: Option<Striping>,
        count: usize,
        size: ByteLen,
        align_bytes: u64,
    ) -> Result<Layout, LayoutError> {
        assert!(align_bytes >= 1);
        let mut l = Layout::new(volume_bytes, striping);
        let step = size.0.div_ceil(align_bytes).saturating_mul(align_bytes);
        let need = step.saturating_mul(count as u64);
        if need > volume_bytes.0 {
            return Err(LayoutError::DoesNotFit {
                files: count,
                size,
                need: ByteLen(need),
                volume: volume_bytes,
            });
        }
        for i in 0..count {
            l.push_contiguous(ByteOffset(i as u64 * step), size);
        }
        Ok(l)
    }

    fn push_contiguous(&mut self, at: ByteOffset, size: ByteLen) -> FileId {
        self.push_file(FileLayout {
            size,
            extents: vec![Extent {
                file_offset: ByteOffset(0),
                volume_offset: at,
                len: size,
            }],
        })
    }

    /// Adds a file. Its extents must be sorted, gap-free and cover exactly `[0, size)`.
    pub fn push_file(&mut self, file: FileLayout) -> FileId {
        let mut expect = 0u64;
        for e in &file.extents {
            assert_eq!(
                e.file_offset.0, expect,
                "extents must be sorted and gap-free"
            );
            assert!(e.len.0 > 0, "empty extent");
            assert!(
                e.volume_offset.0 + e.len.0 <= self.volume_bytes.0,
                "extent runs past the volume"
            );
            expect += e.len.0;
        }
        assert_eq!(expect, file.size.0, "extents must cover the file");
        self.files.push(file);
        FileId(self.files.len() as u32 - 1)
    }

    /// Number of files.
    pub fn file_count(&self) -> usize {
        self.files.len()
    }

    /// The volume's size.
    pub fn volume_bytes(&self) -> ByteLen {
        self.volume_bytes
    }

    /// The striping, if the volume is an array.
    pub fn striping(&self) -> Option<Striping> {
        self.striping
    }

    /// A file's size. Panics on an unknown file (a driver bug).
    pub fn file_size(&self, file: FileId) -> ByteLen {
        self.files[file.0 as usize].size
    }

    /// A file's placement.
    pub fn file(&self, file: FileId) -> &FileLayout {
        &self.files[file.0 as usize]
    }

    /// The volume offset of a file byte, or `None` past the end of the file.
    pub fn to_volume(&self, file: FileId, offset: ByteOffset) -> Option<ByteOffset> {
        let f = &self.files[file.0 as usize];
        if offset.0 >= f.size.0 {
            return None;
        }
        let i = f.extents.partition_point(|e| e.file_offset.0 <= offset.0) - 1;
        let e = f.extents[i];
        Some(ByteOffset(e.volume_offset.0 + (offset.0 - e.file_offset.0)))
    }

    /// Calls `each(volume_offset, len)` for the volume pieces of `range` of `file`, in file order,
    /// one per extent touched. The range is clipped to the file.
    pub fn for_each_volume_piece(
        &self,
        file: FileId,
        range: ByteRange,
        mut each: impl FnMut(ByteOffset, ByteLen),
    ) {
        let f = &self.files[file.0 as usize];
        let end = range.end().0.min(f.size.0);
        let mut pos = range.start.0;
        if pos >= end {
            return;
        }
        let mut i = f.extents.partition_point(|e| e.file_offset.0 <= pos) - 1;
        while pos < end {
            let e = f.extents[i];
            let e_end = e.file_offset.0 + e.len.0;
            let piece_end = end.min(e_end);
            each(
                ByteOffset(e.volume_offset.0 + (pos - e.file_offset.0)),
                ByteLen(piece_end - pos),
            );
            pos = piece_end;
            i += 1;
        }
    }

    /// Where a volume byte lives physically.
    pub fn physical(&self, volume_offset: ByteOffset) -> Physical {
        match self.striping {
            None => Physical {
                disk: 0,
                strip: 0,
                disk_offset: volume_offset,
            },
            Some(s) => {
                let strip = volume_offset.0 / s.strip_bytes;
                let within = volume_offset.0 % s.strip_bytes;
                Physical {
                    disk: (strip % s.disks as u64) as u32,
                    strip,
                    disk_offset: ByteOffset((strip / s.disks as u64) * s.strip_bytes + within),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raid0_mapping_matches_the_papers_figure() {
        // Paper 000, Fig. 3: five disks, four-block strips; block 16 is the first block of strip 4,
        // which lives on disk 4; block 20 starts strip 5 on disk 0, second row.
        let block = 4096;
        let l = Layout::new(
            ByteLen(1 << 30),
            Some(Striping {
                disks: 5,
                strip_bytes: 4 * block,
            }),
        );
        let p = l.physical(ByteOffset(16 * block));
        assert_eq!((p.disk, p.strip, p.disk_offset.0), (4, 4, 0));
        let p = l.physical(ByteOffset(21 * block));
        assert_eq!((p.disk, p.strip, p.disk_offset.0), (0, 5, 5 * block));
    }

    #[test]
    fn spread_and_pieces() {
        let l = Layout::spread(ByteLen::gib(8), None, 4, ByteLen::mib(100)).unwrap();
        assert_eq!(
            l.to_volume(FileId(2), ByteOffset(5)),
            Some(ByteOffset((4 << 30) + 5))
        );
        assert_eq!(l.to_volume(FileId(2), ByteOffset(100 << 20)), None);
        let mut pieces = vec![];
        l.for_each_volume_piece(FileId(1), ByteRange::new(0, 1 << 40), |o, n| {
            pieces.push((o, n))
        });
        assert_eq!(pieces, vec![(ByteOffset(2 << 30), ByteLen::mib(100))]);
        assert!(Layout::spread(ByteLen::mib(10), None, 20, ByteLen::mib(1)).is_err());
    }

    #[test]
    fn multi_extent_pieces_split_at_extent_edges() {
        let mut l = Layout::new(ByteLen(1 << 20), None);
        let f = l.push_file(FileLayout {
            size: ByteLen(300),
            extents: vec![
                Extent {
                    file_offset: ByteOffset(0),
                    volume_offset: ByteOffset(1000),
                    len: ByteLen(100),
                },
                Extent {
                    file_offset: ByteOffset(100),
                    volume_offset: ByteOffset(5000),
                    len: ByteLen(200),
                },
            ],
        });
        let mut pieces = vec![];
        l.for_each_volume_piece(f, ByteRange::new(50, 100), |o, n| pieces.push((o.0, n.0)));
        assert_eq!(pieces, vec![(1050, 50), (5000, 50)]);
        assert_eq!(l.to_volume(f, ByteOffset(299)), Some(ByteOffset(5199)));
    }
}
