//! The simulated host: the page cache that holds file data in memory, and the block queue that
//! orders and merges requests on their way to the device.

pub mod blockq;
pub mod pagecache;
