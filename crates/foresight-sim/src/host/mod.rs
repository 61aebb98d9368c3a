//! The simulated host: cache layers (the page cache and, on arrays, the RAID driver's cache), the
//! block queues that order and merge requests, and the volume that splits them over member disks.

pub mod blockq;
pub mod layer;
pub mod pagecache;
pub mod volume;
