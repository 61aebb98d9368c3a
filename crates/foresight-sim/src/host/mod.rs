//! The simulated host: cache layers (the page cache and, on arrays, the RAID driver's cache), the
//! block queues that order and merge requests, the volume that splits them over member disks, and
//! the memory bus that copies each read's bytes into the reader's buffer.

pub mod blockq;
pub mod copybus;
pub mod layer;
pub mod pagecache;
pub mod volume;
