//! Where file bytes live: files as extents on a volume, and the volume striped over disks.
//!
//! A file is a sorted list of [`Extent`]s mapping file offsets to volume offsets. A volume may be a
//! single device or a RAID-0 array: with `disks` members and `strip_bytes` strips, volume strip `k`
//! lives on disk `k % disks` at member offset `(k / disks) * strip_bytes` (paper
//! 000_a596543dd26dac72.txt, section 1.1, Fig. 1, and section 3, Fig. 3). A stripe is `disks`
//! consecutive strips. Policies ask the layout, never a device, where a byte is ([`Layout::locate`]);
//! that is what lets striping-aware policies run unchanged in the simulator and the engine.
//!
//! Placements ([`Placement`], built by [`Layout::place`]) decide where each file's blocks go:
//! `spread` (files `volume / N` apart), `contiguous` (back to back), `aligned` (back to back, each
//! file starting on a strip boundary) and `fragmented` (files cut into extents of random length,
//! interleaved on the volume, from a seeded [`Rng`]). Paper 000, section 3, says why the last two
//! matter: SEQP works on files, and files may be "fragmented at the block level and stored unaligned
//! in strips", so a file-contiguous window need not be volume-contiguous.
//!
//! Optional [`Metadata`] gives each file map blocks (ext3's indirect blocks), one per
//! `data_blocks_per_map` data blocks. Reading a file then reads a map block before each group of data
//! blocks, so a read that is sequential at the file level is only *semi-sequential* at the block level
//! (paper 000, section 4, Fig. 6: blocks 0, 16, 17, 18, 1, 19, ...). Map blocks either sit inline,
//! just before the data they map (ext3 allocates an indirect block next to its data, so the file's
//! volume blocks skip one block every `data_blocks_per_map`), or in a region at the start of the
//! volume (the figure's layout: the file's map blocks in B0..B3, its data in B16..B27). The layout
//! only records where map blocks are ([`Layout::map_block`]); reading them is the driver's business.

use foresight_core::{ByteLen, ByteOffset, ByteRange, Extent, FileId, Rng};

/// Bytes in one file-system block. Equal to the page size ([`crate::PAGE_BYTES`]), as with ext3 on
/// x86 (paper 000, section 5.1: 4 KB blocks); placements allocate whole blocks.
pub const BLOCK_BYTES: u64 = 4096;

const _: () = assert!(
    BLOCK_BYTES == crate::PAGE_BYTES,
    "blocks and pages are the same size"
);

/// The reserved file id that names the volume itself. Array-level policies (MSP, which runs in the
/// RAID layer's cache) see and fetch volume byte ranges: `Input::Read { file: VOLUME_FILE, range }`
/// where `range` is in volume bytes. No placement ever hands out this id.
pub const VOLUME_FILE: FileId = FileId(u32::MAX);

/// How a volume is striped. A single device is one disk with one strip spanning it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Striping {
    /// Member disks, at least 1.
    pub disks: u32,
    /// Bytes per strip (the RAID chunk), at least one sector.
    pub strip_bytes: u64,
}

impl Striping {
    /// Bytes in one stripe: one strip on every disk.
    pub fn stripe_bytes(&self) -> u64 {
        self.strip_bytes * self.disks as u64
    }

    /// The volume strip that holds `volume_offset`.
    pub fn strip_of(&self, volume_offset: ByteOffset) -> u64 {
        volume_offset.0 / self.strip_bytes
    }

    /// The stripe that holds volume strip `strip`.
    pub fn stripe_of_strip(&self, strip: u64) -> u64 {
        strip / self.disks as u64
    }
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

/// The physical home of one file byte, as a striping-aware policy asks for it (paper 000, Fig. 5,
/// `GetPhysicalPosition`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Location {
    /// The byte's offset on the volume.
    pub volume_offset: ByteOffset,
    /// The volume block ([`BLOCK_BYTES`]) that holds it.
    pub volume_block: u64,
    /// Member disk index (0 on an unstriped volume).
    pub disk: u32,
    /// Volume strip number, counting across all disks (0 on an unstriped volume).
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
    /// The file's map blocks, if the layout models metadata.
    pub metadata: Option<FileMetadata>,
}

/// Where one file's map (indirect) blocks are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileMetadata {
    /// Data blocks each map block maps; at least 1.
    pub data_blocks_per_map: u64,
    /// Volume offset of map block `k`, which maps data blocks
    /// `[k * data_blocks_per_map, (k + 1) * data_blocks_per_map)`. There is one per started group.
    pub map_blocks: Vec<ByteOffset>,
}

/// How [`Layout::place`] lays files out on the volume.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// File `i` of `N` starts at `i * volume / N`, rounded down to 1 MiB (paper
    /// 001_9c47c4c84914efc3.txt, section 4), so switching between files is a real seek.
    Spread,
    /// The slots of [`Placement::Spread`], dealt to the files in a seeded random order, so that the
    /// order in which streams start is not their order on the disk (a drive that serves commands in
    /// arrival order then seeks across the disk between them, as it would for files an ordinary
    /// file system placed).
    Shuffled,
    /// Files back to back from the start of the volume, each on a block boundary.
    Contiguous,
    /// Files back to back, each starting on a strip boundary (on a block boundary when the volume
    /// is not striped).
    Aligned,
    /// Each file cut into extents whose lengths are uniform in `[1, 2m - 1]` blocks, where
    /// `m = extent_bytes_mean / BLOCK_BYTES` (at least 1), so their mean is `m` blocks. The files
    /// take turns placing one extent each at the next free block, and every extent is followed by a
    /// free gap of 1 to `max(1, m / 4)` blocks, so no two extents of a file are volume-contiguous, even
    /// for a single file. Extents start anywhere in a strip.
    Fragmented {
        /// Mean extent length.
        extent_bytes_mean: ByteLen,
    },
}

impl Placement {
    /// Every placement's name, as a config spells it.
    pub const NAMES: &'static [&'static str] =
        &["spread", "shuffled", "contiguous", "aligned", "fragmented"];

    /// The placement's name.
    pub fn name(&self) -> &'static str {
        match self {
            Placement::Spread => "spread",
            Placement::Shuffled => "shuffled",
            Placement::Contiguous => "contiguous",
            Placement::Aligned => "aligned",
            Placement::Fragmented { .. } => "fragmented",
        }
    }
}

/// Where map blocks go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetadataPlacement {
    /// Just before the data blocks each maps, inside the file's run on the volume (ext3's indirect
    /// blocks): the file's data blocks skip one volume block every `data_blocks_per_map`. Map block 0
    /// stands for the inode's direct pointers and sits before data block 0.
    Inline,
    /// Packed at the start of the volume, file after file, before any file data (paper 000, Fig. 6).
    Region,
}

/// Metadata blocks that make a file read semi-sequential at the block level (paper 000, Fig. 6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Metadata {
    /// Data blocks each map block maps; at least 1.
    pub data_blocks_per_map: u64,
    /// Where the map blocks go.
    pub placement: MetadataPlacement,
}

impl Metadata {
    /// Block pointers in one 4 KiB ext3 indirect block (4-byte pointers).
    pub const EXT3_POINTERS_PER_BLOCK: u64 = BLOCK_BYTES / 4;

    /// ext3's pattern: an indirect block inline before every 1,024 data blocks.
    pub fn ext3() -> Metadata {
        Metadata {
            data_blocks_per_map: Self::EXT3_POINTERS_PER_BLOCK,
            placement: MetadataPlacement::Inline,
        }
    }
}

/// A file being placed, block by block.
struct FileBuilder {
    size_bytes: u64,
    data_blocks: u64,
    placed_blocks: u64,
    extents: Vec<Extent>,
    maps: Vec<ByteOffset>,
}

impl FileBuilder {
    fn new(size: ByteLen) -> FileBuilder {
        FileBuilder {
            size_bytes: size.0,
            data_blocks: size.0.div_ceil(BLOCK_BYTES),
            placed_blocks: 0,
            extents: Vec::new(),
            maps: Vec::new(),
        }
    }

    fn done(&self) -> bool {
        self.placed_blocks == self.data_blocks
    }

    /// Volume blocks the whole file takes in one run (data plus inline map blocks).
    fn footprint_blocks(&self, inline_every: Option<u64>) -> u64 {
        self.data_blocks + inline_every.map_or(0, |n| self.data_blocks.div_ceil(n))
    }

    /// Places up to `max_data_blocks` more data blocks from volume block `*cursor` on, putting an
    /// inline map block before each group of `inline_every` data blocks, and moves the cursor past
    /// them. Adjacent pieces are merged into one extent.
    fn place_run(&mut self, cursor: &mut u64, max_data_blocks: u64, inline_every: Option<u64>) {
        let mut left = max_data_blocks.min(self.data_blocks - self.placed_blocks);
        while left > 0 {
            let run = match inline_every {
                Some(n) => {
                    if self.placed_blocks.is_multiple_of(n)
                        && self.maps.len() as u64 == self.placed_blocks / n
                    {
                        self.maps.push(ByteOffset(*cursor * BLOCK_BYTES));
                        *cursor += 1;
                    }
                    left.min(n - self.placed_blocks % n)
                }
                None => left,
            };
            let file_offset = self.placed_blocks * BLOCK_BYTES;
            let len = (run * BLOCK_BYTES).min(self.size_bytes - file_offset);
            let volume_offset = *cursor * BLOCK_BYTES;
            match self.extents.last_mut() {
                Some(e) if e.volume_offset.0 + e.len.0 == volume_offset => e.len.0 += len,
                _ => self.extents.push(Extent {
                    file_offset: ByteOffset(file_offset),
                    volume_offset: ByteOffset(volume_offset),
                    len: ByteLen(len),
                }),
            }
            *cursor += run;
            self.placed_blocks += run;
            left -= run;
        }
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
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
    #[error(
        "{files} {} of {} {} {}{} but the volume holds only {}; use fewer {}",
        if *.files == 1 { "file" } else { "files" },
        (*.size).rounded(),
        if *.files == 1 { "needs" } else { "need" },
        need_text(*.need),
        slot_text(*.size, *.slot),
        (*.volume).rounded(),
        if slot.0 > size.0 { "files" } else { "or smaller files" }
    )]
    DoesNotFit {
        /// How many files.
        files: usize,
        /// Size of each (the mean, when sizes differ).
        size: ByteLen,
        /// The room each file takes: its size, or more where files start on aligned boundaries
        /// (a smaller file then needs as much).
        slot: ByteLen,
        /// Bytes needed.
        need: ByteLen,
        /// Bytes available.
        volume: ByteLen,
    },
}

/// Why files need more than their sizes add up to, when they do.
fn slot_text(size: ByteLen, slot: ByteLen) -> String {
    if slot.0 > size.0 {
        format!(
            ", as each starts on a boundary and takes a slot of {},",
            slot.rounded()
        )
    } else {
        String::new()
    }
}

/// A byte count for an error message; sums that saturated say so rather than print 2^64 - 1.
fn need_text(need: ByteLen) -> String {
    if need.0 == u64::MAX {
        "more than 16 EiB".into()
    } else {
        need.rounded()
    }
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
                metadata: None,
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
            let slot = size.0.max(1).div_ceil(ALIGN) * ALIGN;
            return Err(LayoutError::DoesNotFit {
                files: count,
                size,
                slot: ByteLen(slot),
                need: ByteLen(slot.saturating_mul(count as u64)),
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
                slot: ByteLen(step),
                need: ByteLen(need),
                volume: volume_bytes,
            });
        }
        for i in 0..count {
            l.push_contiguous(ByteOffset(i as u64 * step), size);
        }
        Ok(l)
    }

    /// Places `count` files of `size` back to back, each starting on a strip boundary (a block
    /// boundary on an unstriped volume), with no metadata. See [`Placement::Aligned`].
    pub fn aligned(
        volume_bytes: ByteLen,
        striping: Option<Striping>,
        count: usize,
        size: ByteLen,
    ) -> Result<Layout, LayoutError> {
        // Aligned placement draws nothing; the generator only satisfies `place`'s signature.
        let mut unused = Rng::new(0);
        Layout::place(
            volume_bytes,
            striping,
            &vec![size; count],
            Placement::Aligned,
            None,
            &mut unused,
        )
    }

    /// Places `count` files of `size` as interleaved extents of random length with mean
    /// `extent_bytes_mean`, drawn from `rng`, with no metadata. See [`Placement::Fragmented`].
    pub fn fragmented(
        volume_bytes: ByteLen,
        striping: Option<Striping>,
        count: usize,
        size: ByteLen,
        extent_bytes_mean: ByteLen,
        rng: &mut Rng,
    ) -> Result<Layout, LayoutError> {
        Layout::place(
            volume_bytes,
            striping,
            &vec![size; count],
            Placement::Fragmented { extent_bytes_mean },
            None,
            rng,
        )
    }

    /// Places one file per entry of `sizes` (file `i` gets `FileId(i)`) as `placement` says, with
    /// optional map blocks. Every file occupies whole blocks; `rng` is drawn from only by
    /// [`Placement::Fragmented`], so the same seed gives the same layout.
    pub fn place(
        volume_bytes: ByteLen,
        striping: Option<Striping>,
        sizes: &[ByteLen],
        placement: Placement,
        metadata: Option<Metadata>,
        rng: &mut Rng,
    ) -> Result<Layout, LayoutError> {
        const SPREAD_ALIGN_BLOCKS: u64 = (1 << 20) / BLOCK_BYTES;
        let mut layout = Layout::new(volume_bytes, striping);
        let volume_blocks = volume_bytes.0 / BLOCK_BYTES;
        // In u128: many large files may together pass 2^64 bytes; their mean does not.
        let total: u128 = sizes.iter().map(|s| s.0 as u128).sum();
        let mean = ByteLen((total / sizes.len().max(1) as u128) as u64);
        let too_big = |need_blocks: u64, slot: ByteLen| LayoutError::DoesNotFit {
            files: sizes.len(),
            size: mean,
            slot,
            need: ByteLen(need_blocks.saturating_mul(BLOCK_BYTES)),
            volume: volume_bytes,
        };
        if let Some(m) = metadata {
            assert!(m.data_blocks_per_map >= 1, "bad metadata {m:?}");
        }
        let inline_every = metadata
            .filter(|m| m.placement == MetadataPlacement::Inline)
            .map(|m| m.data_blocks_per_map);
        let mut files: Vec<FileBuilder> = sizes.iter().map(|&s| FileBuilder::new(s)).collect();
        let mut cursor = 0u64;
        if let Some(m) = metadata.filter(|m| m.placement == MetadataPlacement::Region) {
            for f in &mut files {
                for _ in 0..f.data_blocks.div_ceil(m.data_blocks_per_map) {
                    f.maps.push(ByteOffset(cursor * BLOCK_BYTES));
                    cursor += 1;
                }
            }
        }
        match placement {
            Placement::Contiguous | Placement::Aligned => {
                let align_blocks = match (placement, striping) {
                    (Placement::Aligned, Some(s)) => {
                        // The smallest run of whole blocks that is also whole strips.
                        let align_bytes =
                            s.strip_bytes / gcd(s.strip_bytes, BLOCK_BYTES) * BLOCK_BYTES;
                        align_bytes / BLOCK_BYTES
                    }
                    _ => 1,
                };
                for f in &mut files {
                    cursor = cursor.div_ceil(align_blocks) * align_blocks;
                    f.place_run(&mut cursor, u64::MAX, inline_every);
                }
            }
            Placement::Spread | Placement::Shuffled => {
                let base = cursor.div_ceil(SPREAD_ALIGN_BLOCKS) * SPREAD_ALIGN_BLOCKS;
                let count = files.len() as u64;
                let gap = volume_blocks
                    .saturating_sub(base)
                    .checked_div(count)
                    .map_or(0, |g| g / SPREAD_ALIGN_BLOCKS * SPREAD_ALIGN_BLOCKS);
                let widest = files
                    .iter()
                    .map(|f| f.footprint_blocks(inline_every))
                    .max()
                    .unwrap_or(0);
                if count > 0 && (gap == 0 || gap < widest) {
                    // Each file's place is a whole number of 1 MiB units, at least one.
                    let slot = widest.max(1).div_ceil(SPREAD_ALIGN_BLOCKS) * SPREAD_ALIGN_BLOCKS;
                    return Err(too_big(
                        base.saturating_add(slot.saturating_mul(count)),
                        ByteLen(slot.saturating_mul(BLOCK_BYTES)),
                    ));
                }
                let mut slots: Vec<u64> = (0..count).collect();
                if placement == Placement::Shuffled {
                    rng.shuffle(&mut slots);
                }
                for (f, slot) in files.iter_mut().zip(slots) {
                    cursor = base + slot * gap;
                    f.place_run(&mut cursor, u64::MAX, inline_every);
                }
            }
            Placement::Fragmented { extent_bytes_mean } => {
                let mean_blocks = (extent_bytes_mean.0 / BLOCK_BYTES).max(1);
                let gap_max_blocks = (mean_blocks / 4).max(1);
                // Each pass places one extent of every unfinished file, so each pass places at
                // least one block and the loop ends.
                let mut first = true;
                while files.iter().any(|f| !f.done()) {
                    for f in files.iter_mut().filter(|f| !f.done()) {
                        if !first {
                            // Free space between extents: the previous one never touches this one.
                            cursor += 1 + rng.below(gap_max_blocks);
                        }
                        first = false;
                        let len = 1 + rng.below(2 * mean_blocks - 1);
                        f.place_run(&mut cursor, len, inline_every);
                        if cursor > volume_blocks {
                            return Err(too_big(cursor, mean));
                        }
                    }
                }
            }
        }
        if cursor > volume_blocks {
            return Err(too_big(cursor, mean));
        }
        for f in files {
            debug_assert!(f.done());
            layout.push_file(FileLayout {
                size: ByteLen(f.size_bytes),
                extents: f.extents,
                metadata: metadata.map(|m| FileMetadata {
                    data_blocks_per_map: m.data_blocks_per_map,
                    map_blocks: f.maps,
                }),
            });
        }
        Ok(layout)
    }

    fn push_contiguous(&mut self, at: ByteOffset, size: ByteLen) -> FileId {
        self.push_file(FileLayout {
            size,
            extents: vec![Extent {
                file_offset: ByteOffset(0),
                volume_offset: at,
                len: size,
            }],
            metadata: None,
        })
    }

    /// Adds a file. Its extents must be sorted, gap-free and cover exactly `[0, size)`.
    pub fn push_file(&mut self, file: FileLayout) -> FileId {
        let id = FileId(self.files.len() as u32);
        self.put_file(id, file);
        id
    }

    /// Puts a file under `id`: a new id (the file count) adds it, an existing one replaces the
    /// file it named (a driver that recycles the ids of files it has forgotten). Its extents must
    /// be sorted, gap-free and cover exactly `[0, size)`. Panics on an id past the file count (a
    /// driver bug).
    pub fn put_file(&mut self, id: FileId, file: FileLayout) {
        assert!(
            id.0 as usize <= self.files.len(),
            "file {} put past the {} files of the layout",
            id.0,
            self.files.len()
        );
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
        if let Some(m) = &file.metadata {
            assert!(
                m.data_blocks_per_map >= 1,
                "a map block maps at least one block"
            );
            assert_eq!(
                m.map_blocks.len() as u64,
                file.size
                    .0
                    .div_ceil(BLOCK_BYTES)
                    .div_ceil(m.data_blocks_per_map),
                "one map block per started group of data blocks"
            );
            assert!(
                m.map_blocks
                    .iter()
                    .all(|b| b.0 + BLOCK_BYTES <= self.volume_bytes.0),
                "map block past the volume"
            );
        }
        match self.files.get_mut(id.0 as usize) {
            Some(slot) => *slot = file,
            None => self.files.push(file),
        }
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

    /// Where a file byte lives physically: volume offset and block, disk and strip (paper 000,
    /// Fig. 5, `GetPhysicalPosition`). `None` past the end of the file.
    pub fn locate(&self, file: FileId, offset: ByteOffset) -> Option<Location> {
        let volume_offset = self.to_volume(file, offset)?;
        let p = self.physical(volume_offset);
        Some(Location {
            volume_offset,
            volume_block: volume_offset.0 / BLOCK_BYTES,
            disk: p.disk,
            strip: p.strip,
            disk_offset: p.disk_offset,
        })
    }

    /// The volume offset of the map block a reader needs before it can read file byte `offset`,
    /// or `None` when the layout models no metadata or the byte is past the end of the file.
    pub fn map_block(&self, file: FileId, offset: ByteOffset) -> Option<ByteOffset> {
        let f = &self.files[file.0 as usize];
        let m = f.metadata.as_ref()?;
        if offset.0 >= f.size.0 {
            return None;
        }
        let group = offset.0 / BLOCK_BYTES / m.data_blocks_per_map;
        Some(m.map_blocks[group as usize])
    }

    /// The volume's strip size, if it is striped.
    pub fn strip_bytes(&self) -> Option<u64> {
        self.striping.map(|s| s.strip_bytes)
    }

    /// The volume's stripe size (a strip on every disk), if it is striped.
    pub fn stripe_bytes(&self) -> Option<u64> {
        self.striping.map(|s| s.stripe_bytes())
    }

    /// How many disk requests a read of the volume-contiguous `volume_range` becomes: a RAID-0
    /// splits it at every strip boundary, one request per strip touched (paper 000, section 1.1,
    /// Fig. 2a, and Figs. 3 and 4). An unstriped volume serves it as one request; an empty range
    /// makes none.
    pub fn disk_requests(&self, volume_range: ByteRange) -> u64 {
        if volume_range.is_empty() {
            return 0;
        }
        match self.striping {
            None => 1,
            Some(s) => {
                s.strip_of(ByteOffset(volume_range.end().0 - 1)) - s.strip_of(volume_range.start)
                    + 1
            }
        }
    }

    /// How many disk requests a read of `range` of `file` becomes: its volume pieces, with
    /// volume-contiguous neighbours merged (as a block layer merges them), each split at strip
    /// boundaries ([`Layout::disk_requests`]). The range is clipped to the file.
    pub fn file_disk_requests(&self, file: FileId, range: ByteRange) -> u64 {
        let mut total = 0;
        let mut run: Option<ByteRange> = None;
        self.for_each_volume_piece(file, range, |off, len| match run.as_mut() {
            Some(r) if r.end() == off => r.len.0 += len.0,
            _ => {
                if let Some(r) = run.replace(ByteRange::new(off.0, len.0)) {
                    total += self.disk_requests(r);
                }
            }
        });
        total + run.map_or(0, |r| self.disk_requests(r))
    }

    /// Whether all of `range` of `file` (clipped to the file) lies in volume strip `strip`. Always
    /// true on an unstriped volume, whose one strip spans it.
    pub fn file_range_in_strip(&self, file: FileId, range: ByteRange, strip: u64) -> bool {
        let Some(s) = self.striping else {
            return true;
        };
        let mut inside = true;
        self.for_each_volume_piece(file, range, |off, len| {
            inside &=
                s.strip_of(off) == strip && s.strip_of(ByteOffset(off.0 + len.0 - 1)) == strip;
        });
        inside
    }

    /// Whether `range` of `file` (clipped to the file) touches more than one strip, i.e. whether a
    /// RAID-0 must split a read of it across disks (paper 000, section 1.1: independency loss).
    /// Never on an unstriped volume.
    pub fn crosses_strip(&self, file: FileId, range: ByteRange) -> bool {
        match self.locate(file, range.start) {
            Some(first) => !self.file_range_in_strip(file, range, first.strip),
            None => false,
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
    // Named explicitly: proptest's prelude also exports an `Rng`.
    use foresight_core::Rng;
    use proptest::prelude::*;

    /// Spread files each start on a 1 MiB boundary, so 100,000 files of 64 KiB need about 98 GiB:
    /// the refusal said so without saying why, and advised smaller files, which need as much.
    #[test]
    fn a_refusal_for_files_in_slots_names_the_slot_and_does_not_advise_smaller_files() {
        let volume = ByteLen::gib(74);
        // As the simulator places them (Layout::place), and through the shortcut.
        let sizes = vec![ByteLen::kib(64); 100_000];
        let e = Layout::place(
            volume,
            None,
            &sizes,
            Placement::Spread,
            None,
            &mut Rng::new(1),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("a slot of 1MiB") && !e.contains("smaller"),
            "{e}"
        );
        let e = Layout::spread(volume, None, 100_000, ByteLen::kib(64))
            .unwrap_err()
            .to_string();
        assert!(e.contains("a slot of 1MiB"), "{e}");
        assert!(!e.contains("smaller"), "{e}");
        // Files as large as their slots: fewer or smaller files both help.
        let e = Layout::spread(volume, None, 100, ByteLen::gib(1))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("fewer or smaller files") && !e.contains("slot"),
            "{e}"
        );
    }

    fn one_extent(size: u64, at: u64) -> FileLayout {
        FileLayout {
            size: ByteLen(size),
            extents: vec![Extent {
                file_offset: ByteOffset(0),
                volume_offset: ByteOffset(at),
                len: ByteLen(size),
            }],
            metadata: None,
        }
    }

    #[test]
    fn put_file_adds_under_the_next_id_and_replaces_under_an_old_one() {
        let mut l = Layout::new(ByteLen(1 << 30), None);
        assert_eq!(l.push_file(one_extent(4096, 0)), FileId(0));
        l.put_file(FileId(1), one_extent(8192, 1 << 20));
        l.put_file(FileId(0), one_extent(100, 2 << 20));
        assert_eq!(l.file_count(), 2);
        assert_eq!(l.file_size(FileId(0)), ByteLen(100));
        assert_eq!(
            l.to_volume(FileId(0), ByteOffset(5)),
            Some(ByteOffset((2 << 20) + 5))
        );
        assert_eq!(l.file_size(FileId(1)), ByteLen(8192));
    }

    #[test]
    #[should_panic(expected = "past the 1 files")]
    fn put_file_refuses_an_id_past_the_next() {
        let mut l = Layout::new(ByteLen(1 << 30), None);
        l.push_file(one_extent(4096, 0));
        l.put_file(FileId(2), one_extent(4096, 0));
    }

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
    fn a_spread_that_does_not_fit_names_what_it_needs() {
        let place = |count: usize, size: ByteLen| {
            Layout::place(
                ByteLen::gib(1),
                None,
                &vec![size; count],
                Placement::Spread,
                None,
                &mut Rng::new(1),
            )
            .unwrap_err()
        };
        // Each spread file takes at least a 1 MiB place, however small it is.
        let e = place(2000, ByteLen::kib(64)).to_string();
        assert!(e.contains("need 2000MiB"), "{e}");
        // One file is one file, and a size with no short exact form is rounded.
        let e = place(1, ByteLen::gib(2)).to_string();
        assert!(e.starts_with("1 file of 2GiB needs 2GiB"), "{e}");
        let e = place(3, ByteLen(500_000_001)).to_string();
        assert!(e.contains("3 files of about 476.8MiB need"), "{e}");
        // A total past 2^64 bytes neither wraps the mean nor prints 2^64 - 1.
        let e = place(20_000, ByteLen(1 << 50)).to_string();
        assert!(
            e.contains("files of 1PiB") && e.contains("more than 16 EiB"),
            "{e}"
        );
    }

    #[test]
    fn shuffled_deals_the_spread_places_in_a_seeded_order() {
        let sizes = vec![ByteLen::mib(1); 16];
        let starts = |placement, seed| -> Vec<u64> {
            let l = Layout::place(
                ByteLen::gib(1),
                None,
                &sizes,
                placement,
                None,
                &mut Rng::new(seed),
            )
            .unwrap();
            (0..sizes.len())
                .map(|i| l.file(FileId(i as u32)).extents[0].volume_offset.0)
                .collect()
        };
        let spread = starts(Placement::Spread, 1);
        let shuffled = starts(Placement::Shuffled, 1);
        assert_ne!(shuffled, spread, "the order is dealt anew");
        assert_eq!(
            shuffled,
            starts(Placement::Shuffled, 1),
            "and the seed fixes it"
        );
        let mut sorted = shuffled.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, spread, "on the same places");
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
            metadata: None,
        });
        let mut pieces = vec![];
        l.for_each_volume_piece(f, ByteRange::new(50, 100), |o, n| pieces.push((o.0, n.0)));
        assert_eq!(pieces, vec![(1050, 50), (5000, 50)]);
        assert_eq!(l.to_volume(f, ByteOffset(299)), Some(ByteOffset(5199)));
    }

    fn fig_striping() -> Option<Striping> {
        Some(Striping {
            disks: 5,
            strip_bytes: 4 * BLOCK_BYTES,
        })
    }

    #[test]
    fn locate_and_disk_requests_follow_the_figures() {
        // Paper 000, Fig. 3: the file at B16..B35; its block 3 is B19 (strip 4, disk 4), block 4
        // is B20 (strip 5, disk 0).
        let mut l = Layout::new(ByteLen::mib(1), fig_striping());
        let f = l.push_file(FileLayout {
            size: ByteLen(20 * BLOCK_BYTES),
            extents: vec![Extent {
                file_offset: ByteOffset(0),
                volume_offset: ByteOffset(16 * BLOCK_BYTES),
                len: ByteLen(20 * BLOCK_BYTES),
            }],
            metadata: None,
        });
        let at = |b: u64| l.locate(f, ByteOffset(b * BLOCK_BYTES + 5)).unwrap();
        assert_eq!((at(3).volume_block, at(3).strip, at(3).disk), (19, 4, 4));
        assert_eq!((at(4).volume_block, at(4).strip, at(4).disk), (20, 5, 0));
        assert_eq!(at(4).disk_offset, ByteOffset(4 * BLOCK_BYTES + 5));
        assert_eq!(l.locate(f, ByteOffset(20 * BLOCK_BYTES)), None);
        let blocks = |a: u64, n: u64| ByteRange::new(a * BLOCK_BYTES, n * BLOCK_BYTES);
        // Fig. 3's third prefetch, B19..B22, is two disk requests; B20..B23 is one.
        assert_eq!(l.disk_requests(blocks(19, 4)), 2);
        assert_eq!(l.disk_requests(blocks(20, 4)), 1);
        assert_eq!(l.disk_requests(blocks(3, 13)), 4);
        assert_eq!(l.disk_requests(blocks(3, 0)), 0);
        assert_eq!(l.file_disk_requests(f, blocks(3, 4)), 2);
        assert!(l.crosses_strip(f, blocks(3, 4)));
        assert!(!l.crosses_strip(f, blocks(4, 4)));
        assert_eq!(
            Layout::new(ByteLen::mib(1), None).disk_requests(blocks(3, 100)),
            1
        );
    }

    #[test]
    fn aligned_files_start_on_strip_boundaries() {
        let strip = 4 * BLOCK_BYTES;
        let l = Layout::aligned(
            ByteLen::mib(1),
            fig_striping(),
            3,
            ByteLen(5 * BLOCK_BYTES + 1),
        )
        .unwrap();
        let starts: Vec<u64> = (0..3)
            .map(|i| l.to_volume(FileId(i), ByteOffset(0)).unwrap().0)
            .collect();
        assert_eq!(starts, vec![0, 2 * strip, 4 * strip]);
        assert!(
            Layout::aligned(ByteLen(7 * strip), fig_striping(), 4, ByteLen(strip + 1)).is_err()
        );
        // Unstriped: block-aligned, back to back.
        let l = Layout::aligned(ByteLen::mib(1), None, 2, ByteLen(100)).unwrap();
        assert_eq!(
            l.to_volume(FileId(1), ByteOffset(0)),
            Some(ByteOffset(BLOCK_BYTES))
        );
    }

    #[test]
    fn fragmented_files_are_cut_and_repeatable() {
        let size = ByteLen::mib(2);
        let make = |seed| {
            Layout::fragmented(
                ByteLen::mib(64),
                fig_striping(),
                1,
                size,
                ByteLen::kib(64),
                &mut Rng::new(seed),
            )
            .unwrap()
        };
        let l = make(7);
        assert_eq!(l, make(7));
        assert_ne!(l, make(8));
        let e = &l.file(FileId(0)).extents;
        // 512 blocks in extents of mean 16 blocks: dozens of them, none touching the next.
        assert!(e.len() > 10, "{}", e.len());
        assert!(e
            .windows(2)
            .all(|w| w[0].volume_offset.0 + w[0].len.0 < w[1].volume_offset.0));
        assert!(e.iter().any(|x| x.volume_offset.0 % (4 * BLOCK_BYTES) != 0));
    }

    #[test]
    fn inline_metadata_skips_one_block_per_group() {
        let meta = Metadata {
            data_blocks_per_map: 3,
            placement: MetadataPlacement::Inline,
        };
        let l = Layout::place(
            ByteLen::mib(1),
            fig_striping(),
            &[ByteLen(8 * BLOCK_BYTES)],
            Placement::Contiguous,
            Some(meta),
            &mut Rng::new(1),
        )
        .unwrap();
        let f = FileId(0);
        let vb: Vec<u64> = (0..8)
            .map(|b| {
                l.locate(f, ByteOffset(b * BLOCK_BYTES))
                    .unwrap()
                    .volume_block
            })
            .collect();
        // Map block, three data blocks, map block, ...: B0 map, B1-B3, B4 map, B5-B7, B8 map, B9-B10.
        assert_eq!(vb, vec![1, 2, 3, 5, 6, 7, 9, 10]);
        let maps: Vec<u64> = (0..8)
            .map(|b| l.map_block(f, ByteOffset(b * BLOCK_BYTES)).unwrap().0 / BLOCK_BYTES)
            .collect();
        assert_eq!(maps, vec![0, 0, 0, 4, 4, 4, 8, 8]);
        assert_eq!(Metadata::ext3().data_blocks_per_map, 1024);
    }

    #[test]
    fn region_metadata_gives_the_semisequential_read_of_figure_6() {
        // Fig. 6: a 12-block file whose map blocks (one per three data blocks) are B0..B3, read
        // block by block, each map block read before the data it maps.
        let meta = Metadata {
            data_blocks_per_map: 3,
            placement: MetadataPlacement::Region,
        };
        let l = Layout::place(
            ByteLen::mib(1),
            fig_striping(),
            &[ByteLen(12 * BLOCK_BYTES)],
            Placement::Aligned,
            Some(meta),
            &mut Rng::new(1),
        )
        .unwrap();
        let f = FileId(0);
        let mut seq = vec![];
        let mut last_map = None;
        for b in 0..12 {
            let off = ByteOffset(b * BLOCK_BYTES);
            let m = l.map_block(f, off).unwrap().0 / BLOCK_BYTES;
            if last_map != Some(m) {
                seq.push(m);
                last_map = Some(m);
            }
            seq.push(l.locate(f, off).unwrap().volume_block);
        }
        // The region ends at B4, the next strip boundary; the data is B4..B15.
        assert_eq!(
            seq,
            vec![0, 4, 5, 6, 1, 7, 8, 9, 2, 10, 11, 12, 3, 13, 14, 15]
        );
    }

    fn any_placement() -> impl Strategy<Value = Placement> {
        prop_oneof![
            Just(Placement::Spread),
            Just(Placement::Shuffled),
            Just(Placement::Contiguous),
            Just(Placement::Aligned),
            (1u64..100).prop_map(|b| Placement::Fragmented {
                extent_bytes_mean: ByteLen(b * BLOCK_BYTES)
            }),
        ]
    }

    fn any_metadata() -> impl Strategy<Value = Option<Metadata>> {
        prop_oneof![
            Just(None),
            (1u64..50).prop_map(|n| Some(Metadata {
                data_blocks_per_map: n,
                placement: MetadataPlacement::Inline
            })),
            (1u64..50).prop_map(|n| Some(Metadata {
                data_blocks_per_map: n,
                placement: MetadataPlacement::Region
            })),
        ]
    }

    proptest! {
        /// Every placement covers each file exactly, in whole blocks, inside the volume, and no
        /// two files or map blocks share a volume byte.
        #[test]
        fn placements_never_overlap(
            seed in any::<u64>(),
            placement in any_placement(),
            metadata in any_metadata(),
            disks in 1u32..8,
            strip_blocks in 1u64..40,
            sizes in prop::collection::vec(0u64..3_000_000, 0..6),
        ) {
            let striping = Some(Striping { disks, strip_bytes: strip_blocks * BLOCK_BYTES });
            let sizes: Vec<ByteLen> = sizes.into_iter().map(ByteLen).collect();
            let volume = ByteLen::mib(128);
            let l = Layout::place(volume, striping, &sizes, placement, metadata, &mut Rng::new(seed))
                .unwrap();
            prop_assert_eq!(l.file_count(), sizes.len());
            let mut used: Vec<(u64, u64)> = vec![];
            for (i, size) in sizes.iter().enumerate() {
                let f = l.file(FileId(i as u32));
                prop_assert_eq!(f.size, *size);
                for e in &f.extents {
                    prop_assert_eq!(e.volume_offset.0 % BLOCK_BYTES, 0);
                    used.push((e.volume_offset.0, e.len.0.div_ceil(BLOCK_BYTES) * BLOCK_BYTES));
                }
                if let Some(m) = &f.metadata {
                    used.extend(m.map_blocks.iter().map(|b| (b.0, BLOCK_BYTES)));
                }
                if placement == Placement::Aligned && size.0 > 0 && metadata.is_none() {
                    prop_assert_eq!(f.extents[0].volume_offset.0 % (strip_blocks * BLOCK_BYTES), 0);
                }
            }
            used.sort();
            for w in used.windows(2) {
                prop_assert!(w[0].0 + w[0].1 <= w[1].0, "{:?} overlaps {:?}", w[0], w[1]);
            }
            prop_assert!(used.last().is_none_or(|u| u.0 + u.1 <= volume.0));
        }
    }
}
