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

#![allow(unsafe_code)]

use std::alloc::{self, Layout};
use std::ptr::NonNull;

/// Alignment and size granule of every buffer: one 4 KiB page.
pub const ALIGN_BYTES: usize = 4096;

/// A heap buffer aligned to [`ALIGN_BYTES`], with a capacity that is a multiple of it.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    cap_bytes: usize,
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
        let layout = Layout::from_size_align(cap_bytes, ALIGN_BYTES).ok()?;
        // SAFETY: the layout has a non-zero size (asserted above).
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        NonNull::new(raw).map(|ptr| AlignedBuf { ptr, cap_bytes })
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
        let layout = Layout::from_size_align(self.cap_bytes, ALIGN_BYTES)
            .expect("the layout was valid at allocation");
        // SAFETY: `ptr` came from `alloc_zeroed` with this very layout and is freed once.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), layout) }
    }
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
    #[should_panic(expected = "multiple")]
    fn unaligned_capacity_is_a_programmer_error() {
        let _ = AlignedBuf::new(100);
    }
}
