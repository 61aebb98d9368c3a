//! Page-aligned, zero-initialised byte buffers for direct I/O.
//!
//! `O_DIRECT` needs the memory address, the file offset and the length aligned to the device's
//! logical block; this module hands out buffers aligned to [`ALIGN_BYTES`] (4 KiB, which covers every
//! logical block size Linux uses for data) with a capacity that is a whole number of blocks. A buffer
//! is owned by exactly one party at a time: the engine's buffer pool, a backend while the I/O into it
//! is in flight (the request moves the buffer in and the completion moves it back), or a chunk of
//! prefetched data behind an `Arc` once it is filled and only read. That ownership is what makes the
//! kernel's writes through the raw pointer sound: nobody else can see the bytes while they change.
//! Memory is zeroed when allocated so a slice over it is always initialised, whatever a short read
//! left behind.
//!
//! Buffers of [`HUGE_BYTES`] or more are mapped on a 2 MiB boundary and advised as transparent huge
//! pages. The reason is the device, not the TLB: a block device accepts at most `max_segments`
//! physically contiguous pieces per request (254 on the virtio disk `foresight bench` measured), so
//! a 4 MiB read into scattered 4 KiB pages reached that disk as requests of about 660 KiB, while the
//! same read into two huge pages is one request. Kernel readahead fills large page-cache folios and gets large requests for free; an
//! O_DIRECT reader has to bring contiguous memory itself. Where huge pages are refused the advice is
//! ignored and the buffer is ordinary memory, only slower.

#![allow(unsafe_code)]

use std::alloc::{self, Layout};
use std::ptr::NonNull;

/// Alignment and size granule of every buffer: one 4 KiB page.
pub const ALIGN_BYTES: usize = 4096;

/// Buffers at least this large are mapped on this boundary and advised as huge pages (x86-64's and
/// aarch64's 2 MiB transparent huge page).
pub const HUGE_BYTES: usize = 2 << 20;

/// Whether the kernel gives transparent huge pages to a mapping that asks for them
/// (`/sys/kernel/mm/transparent_hugepage/enabled` is `always` or `madvise`). Read once.
pub fn huge_pages_enabled() -> bool {
    static ENABLED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ENABLED.get_or_init(|| {
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .map(|s| s.contains("[always]") || s.contains("[madvise]"))
            .unwrap_or(false)
    })
}

/// A heap buffer aligned to [`ALIGN_BYTES`], with a capacity that is a multiple of it.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    cap_bytes: usize,
    /// Whether the memory is (a piece of) anonymous mappings made by `map_huge`, freed with
    /// `munmap` and open to `split_off` and `join`, rather than from the global allocator.
    mapped: bool,
}

// SAFETY: `AlignedBuf` owns its allocation exclusively (like `Box<[u8]>`); shared references give
// only read access and mutation needs `&mut self`, so it is as thread-safe as `Box<[u8]>`.
unsafe impl Send for AlignedBuf {}
// SAFETY: as above; `&AlignedBuf` exposes only `&[u8]`.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// A zeroed buffer of `cap_bytes`, which must be a positive multiple of [`ALIGN_BYTES`].
    /// Returns `None` if the allocator refuses.
    pub fn new(cap_bytes: usize) -> Option<AlignedBuf> {
        assert!(
            cap_bytes > 0 && cap_bytes.is_multiple_of(ALIGN_BYTES),
            "buffer capacity {cap_bytes} is not a positive multiple of {ALIGN_BYTES}"
        );
        if cap_bytes >= HUGE_BYTES {
            if let Some(ptr) = map_huge(cap_bytes) {
                return Some(AlignedBuf {
                    ptr,
                    cap_bytes,
                    mapped: true,
                });
            }
        }
        Self::heap(cap_bytes)
    }

    /// A zeroed buffer of `cap_bytes` cut from the front of a fresh mapping of `mapping_bytes` on a
    /// huge-page boundary, and the rest of the mapping as a second buffer (`None` if nothing is
    /// left). Both are page multiples; `None` if the kernel refuses the mapping. The pieces are
    /// freed separately (a partial `munmap` splits a huge page and leaves the other piece's memory
    /// where it is, still physically contiguous).
    pub fn new_huge_split(
        cap_bytes: usize,
        mapping_bytes: usize,
    ) -> Option<(AlignedBuf, Option<AlignedBuf>)> {
        assert!(
            cap_bytes > 0
                && cap_bytes.is_multiple_of(ALIGN_BYTES)
                && mapping_bytes.is_multiple_of(ALIGN_BYTES)
                && cap_bytes <= mapping_bytes,
            "cannot cut {cap_bytes} bytes from a mapping of {mapping_bytes}"
        );
        let start = map_huge(mapping_bytes)?;
        let buf = AlignedBuf {
            ptr: start,
            cap_bytes,
            mapped: true,
        };
        let rest = (mapping_bytes > cap_bytes).then(|| AlignedBuf {
            // SAFETY: `cap_bytes < mapping_bytes`, so the pointer stays inside the mapping.
            ptr: unsafe { start.add(cap_bytes) },
            cap_bytes: mapping_bytes - cap_bytes,
            mapped: true,
        });
        Some((buf, rest))
    }

    /// Writes every page once, so that the kernel maps (and zeroes) it now rather than when a read
    /// first lands in it. The contents do not change.
    pub fn fault_in(&mut self) {
        self.fault_in_range(0..self.cap_bytes);
    }

    /// As [`AlignedBuf::fault_in`], for the bytes of `range` only.
    pub fn fault_in_range(&mut self, range: std::ops::Range<usize>) {
        for page in self.as_mut_slice()[range].chunks_mut(ALIGN_BYTES) {
            let first: *mut u8 = &mut page[0];
            // SAFETY: `first` points into the slice borrowed mutably just above. Volatile, so that
            // storing back the byte just read is not elided.
            unsafe { std::ptr::write_volatile(first, std::ptr::read_volatile(first)) };
        }
    }

    /// Gives the memory behind the bytes of `range` (whole pages) back to the system
    /// (`madvise(MADV_DONTNEED)`), so that the process no longer holds it while the buffer is
    /// kept unused. The range stays mapped and reads as zeroes; the kernel faults each page in
    /// again, zeroed, when it is next touched. Only on a mapped buffer (heap memory is the
    /// allocator's to give back). A range that cuts a huge page splits it into small pages, so
    /// callers give back whole huge pages where they can.
    pub fn release_pages(&mut self, range: std::ops::Range<usize>) {
        assert!(
            self.mapped
                && range.start <= range.end
                && range.end <= self.cap_bytes
                && range.start.is_multiple_of(ALIGN_BYTES)
                && range.end.is_multiple_of(ALIGN_BYTES),
            "cannot give back {range:?} of {self:?}"
        );
        if range.is_empty() {
            return;
        }
        // SAFETY: the range lies inside this buffer's own part of a private anonymous mapping
        // (asserted above), which `&mut self` keeps anyone else from reading or writing
        // meanwhile; afterwards it reads as zeroes, still initialised memory.
        let rc = unsafe {
            libc::madvise(
                self.ptr.as_ptr().add(range.start).cast(),
                range.len(),
                libc::MADV_DONTNEED,
            )
        };
        // A refusal leaves the memory held, which is what happened before the call.
        debug_assert_eq!(rc, 0, "madvise(MADV_DONTNEED) of an engine buffer failed");
    }

    /// Whether the buffer is (part of) a huge-page mapping, so that it can be split and joined.
    pub fn is_mapped(&self) -> bool {
        self.mapped
    }

    /// The address of the first byte (for keeping pieces of mappings in address order).
    pub fn addr(&self) -> usize {
        self.ptr.as_ptr() as usize
    }

    /// Cuts a mapped buffer in two at `at_bytes`, a positive page multiple below the capacity.
    pub fn split_off(self, at_bytes: usize) -> (AlignedBuf, AlignedBuf) {
        assert!(
            self.mapped
                && at_bytes > 0
                && at_bytes < self.cap_bytes
                && at_bytes.is_multiple_of(ALIGN_BYTES),
            "cannot split {self:?} at {at_bytes}"
        );
        let whole = std::mem::ManuallyDrop::new(self);
        let front = AlignedBuf {
            ptr: whole.ptr,
            cap_bytes: at_bytes,
            mapped: true,
        };
        let back = AlignedBuf {
            // SAFETY: `at_bytes < cap_bytes`, so the pointer stays inside the buffer.
            ptr: unsafe { whole.ptr.add(at_bytes) },
            cap_bytes: whole.cap_bytes - at_bytes,
            mapped: true,
        };
        (front, back)
    }

    /// Whether `next` starts where this buffer ends and both are mapped, so they can be joined.
    pub fn adjoins(&self, next: &AlignedBuf) -> bool {
        self.mapped && next.mapped && self.addr() + self.cap_bytes == next.addr()
    }

    /// One buffer over this one and `next`, which must adjoin it. Pieces of different mappings
    /// may be joined: `munmap` of a range that spans several mappings unmaps each part.
    pub fn join(self, next: AlignedBuf) -> AlignedBuf {
        assert!(self.adjoins(&next), "{self:?} and {next:?} do not adjoin");
        let (a, b) = (
            std::mem::ManuallyDrop::new(self),
            std::mem::ManuallyDrop::new(next),
        );
        AlignedBuf {
            ptr: a.ptr,
            cap_bytes: a.cap_bytes + b.cap_bytes,
            mapped: true,
        }
    }

    fn heap(cap_bytes: usize) -> Option<AlignedBuf> {
        let layout = Layout::from_size_align(cap_bytes, ALIGN_BYTES).ok()?;
        // SAFETY: the layout has a non-zero size (asserted above).
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        NonNull::new(raw).map(|ptr| AlignedBuf {
            ptr,
            cap_bytes,
            mapped: false,
        })
    }

    /// Whether the buffer starts on a [`HUGE_BYTES`] boundary of its own mapping (and so may be
    /// backed by huge pages).
    pub fn is_huge_aligned(&self) -> bool {
        self.mapped && (self.ptr.as_ptr() as usize).is_multiple_of(HUGE_BYTES)
    }

    /// The capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.cap_bytes
    }

    /// The whole buffer.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: the pointer is valid for `cap_bytes` initialised (zeroed at allocation) bytes and
        // lives as long as `self`; `&self` excludes writers.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.cap_bytes) }
    }

    /// The whole buffer, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`, and `&mut self` makes this the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.cap_bytes) }
    }

    /// The start of the buffer for a kernel interface that writes into it (io_uring). The caller
    /// keeps the buffer alive and untouched until the kernel is done with it.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        if self.mapped {
            // SAFETY: `ptr..ptr + cap_bytes` is this buffer's own part of a `map_huge` mapping,
            // owned by nobody else and unmapped once.
            let rc = unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.cap_bytes) };
            debug_assert_eq!(rc, 0, "munmap of an engine buffer failed");
            return;
        }
        let layout = Layout::from_size_align(self.cap_bytes, ALIGN_BYTES)
            .expect("the layout was valid at allocation");
        // SAFETY: `ptr` came from `alloc_zeroed` with this very layout and is freed once.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), layout) }
    }
}

/// An anonymous, zero-filled mapping of `len_bytes` starting on a [`HUGE_BYTES`] boundary, advised
/// as huge pages; `None` if the kernel refuses the mapping. Over-maps by one huge page and unmaps
/// the slack on both sides, because `mmap` only promises page alignment.
fn map_huge(len_bytes: usize) -> Option<NonNull<u8>> {
    let over_bytes = len_bytes.checked_add(HUGE_BYTES)?;
    // SAFETY: an anonymous private mapping at an address of the kernel's choosing touches no
    // existing memory; failure is reported as MAP_FAILED.
    let raw = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            over_bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if raw == libc::MAP_FAILED {
        return None;
    }
    let base = raw as usize;
    let start = base.next_multiple_of(HUGE_BYTES);
    let head_bytes = start - base;
    let tail_bytes = over_bytes - head_bytes - len_bytes;
    // SAFETY: both ranges lie inside the mapping just made, are page-aligned (the base is, and
    // `HUGE_BYTES` and `len_bytes` are page multiples) and are not used by anyone.
    unsafe {
        if head_bytes > 0 {
            libc::munmap(raw, head_bytes);
        }
        if tail_bytes > 0 {
            libc::munmap((start + len_bytes) as *mut libc::c_void, tail_bytes);
        }
    }
    #[cfg(target_os = "linux")]
    // SAFETY: advice on a range this function owns; a refusal (no THP support) leaves ordinary
    // pages, which is correct, so the result is ignored.
    unsafe {
        libc::madvise(start as *mut libc::c_void, len_bytes, libc::MADV_HUGEPAGE);
    }
    NonNull::new(start as *mut u8)
}

impl std::fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AlignedBuf({} bytes)", self.cap_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_aligned_zeroed_and_writable() {
        let mut b = AlignedBuf::new(3 * ALIGN_BYTES).unwrap();
        assert_eq!(b.as_mut_ptr() as usize % ALIGN_BYTES, 0);
        assert!(b.as_slice().iter().all(|&x| x == 0));
        b.as_mut_slice()[5] = 7;
        assert_eq!(b.as_slice()[5], 7);
        assert_eq!(b.capacity(), 3 * ALIGN_BYTES);
    }

    #[test]
    fn large_buffers_are_mapped_on_a_huge_page_boundary_zeroed_and_writable() {
        let mut b = AlignedBuf::new(HUGE_BYTES + 3 * ALIGN_BYTES).unwrap();
        assert!(b.is_huge_aligned());
        assert!(b.as_slice().iter().all(|&x| x == 0));
        let last = b.capacity() - 1;
        b.as_mut_slice()[last] = 9;
        b.as_mut_slice()[0] = 1;
        assert_eq!((b.as_slice()[0], b.as_slice()[last]), (1, 9));
        assert!(!AlignedBuf::new(HUGE_BYTES - ALIGN_BYTES)
            .unwrap()
            .is_huge_aligned());
    }

    #[test]
    fn a_split_mapping_gives_two_independent_buffers() {
        let (mut a, rest) = AlignedBuf::new_huge_split(HUGE_BYTES / 2, HUGE_BYTES).unwrap();
        let mut b = rest.unwrap();
        assert!(a.is_huge_aligned());
        assert_eq!(
            (a.capacity(), b.capacity()),
            (HUGE_BYTES / 2, HUGE_BYTES / 2)
        );
        assert_eq!(
            a.as_mut_ptr() as usize + HUGE_BYTES / 2,
            b.as_mut_ptr() as usize
        );
        a.as_mut_slice().fill(1);
        b.as_mut_slice().fill(2);
        drop(a);
        assert!(
            b.as_slice().iter().all(|&x| x == 2),
            "the rest outlives the front"
        );
        let (whole, none) = AlignedBuf::new_huge_split(HUGE_BYTES, HUGE_BYTES).unwrap();
        assert!(none.is_none());
        assert!(whole.as_slice().iter().all(|&x| x == 0));
        // Split and joined again, it is the same memory.
        let (front, mut back) = whole.split_off(3 * ALIGN_BYTES);
        back.as_mut_slice()[0] = 5;
        assert!(front.adjoins(&back) && !back.adjoins(&front));
        let whole = front.join(back);
        assert_eq!(whole.capacity(), HUGE_BYTES);
        assert_eq!(whole.as_slice()[3 * ALIGN_BYTES], 5);
    }

    #[test]
    #[should_panic(expected = "multiple")]
    fn unaligned_capacity_is_a_programmer_error() {
        let _ = AlignedBuf::new(100);
    }
}
