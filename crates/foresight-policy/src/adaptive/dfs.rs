//! The prefetching of the distributed file systems paper 004_80004320b985afc3.txt compares, as
//! data a driver can execute: where readahead happens (client, server, both), how large it is,
//! how large one network request is, and whether the server serves a shared request queue or
//! dedicated per-stream workers.
//!
//! Section 2.1 of the paper describes the systems: Lustre reads ahead 40 MB at the client in 1 MB
//! RPCs and none at the server; NFS keeps a 7.5 MB readahead at both ends; HDFS has no VFS
//! readahead at the client (its own API) and prefetches aggressively at the server, streaming a
//! block to the client ahead of its reads; Gluster's readahead translator does not
//! prefetch on a disk (section 7.2.1). All of them serve from one shared queue (section 3.2.1,
//! Fig. 4). APS pins each stream to a dedicated worker (section 6.1) and keeps `alpha` units of
//! `max_ra_sz` in flight at the client (Algorithm 1, condition 20); "dedicated" is the paper's
//! "only the dedicated I/O worker" variant (dedicated workers, ordinary readahead). "local" is the
//! local file system baseline (EXT4 on the server itself, no network).
//!
//! The sizes the paper does not state are this model's assumptions and are marked so below.
//! Device defaults follow section 2.2.1 (EXT4: 128 KiB on a disk, `2 * P * S` on a striped RAID)
//! and section 4.2.1 (APS reads a striped RAID in strips, `max_ra_sz = S`).

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use foresight_core::ByteLen;

use super::aps::{Aps, ApsConfig};
use crate::readahead::{NoPrefetch, Seqp};
use crate::{Layout, Policy, PolicyError};

/// Lustre's client readahead (paper 004, section 2.1: "40 MB"; Lustre's `max_read_ahead_mb`
/// counts binary megabytes, and readahead windows are whole pages).
pub const LUSTRE_CLIENT_READAHEAD: ByteLen = ByteLen(40 << 20);
/// NFS's readahead (paper 004, section 2.1: "7.5 MB", taken as 7.5 MiB, a whole number of pages).
pub const NFS_READAHEAD: ByteLen = ByteLen(15 << 19);
/// HDFS's server prefetch window. Assumed: the paper says only "aggressive"; 8 MiB is 1/8 of
/// its 64 MB chunk.
pub const HDFS_SERVER_READAHEAD: ByteLen = ByteLen(8 << 20);
/// HDFS's transfer unit (paper 004, section 7.1: `io.file.buffer.size` = 128 KB).
pub const HDFS_TRANSFER: ByteLen = ByteLen(128 << 10);
/// Lustre's and NFS's largest network request (1 MiB RPCs / `rsize`); assumed from those systems'
/// defaults.
pub const LARGE_RPC: ByteLen = ByteLen(1 << 20);
/// EXT4's readahead on a single device (paper 004, section 2.2.1).
pub const DISK_READAHEAD: ByteLen = ByteLen(128 << 10);

/// Which system a client and server behave like.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DfsSystem {
    /// The local file system on the server: no network, device-default readahead.
    Local,
    /// 40 MB client readahead in 1 MB RPCs, no server readahead, shared queue.
    Lustre,
    /// 7.5 MB readahead at client and server, 1 MB requests, shared queue.
    Nfs,
    /// Aggressive server prefetch streamed ahead of the reader, 128 KiB transfers, shared queue.
    Hdfs,
    /// No readahead anywhere, shared queue.
    Gluster,
    /// Dedicated workers with ordinary (device default) readahead at both ends.
    Dedicated,
    /// Dedicated workers and `alpha` client readaheads from condition 20.
    Aps,
}

/// Every system, in report order.
pub const DFS_SYSTEMS: &[DfsSystem] = &[
    DfsSystem::Local,
    DfsSystem::Lustre,
    DfsSystem::Nfs,
    DfsSystem::Hdfs,
    DfsSystem::Gluster,
    DfsSystem::Dedicated,
    DfsSystem::Aps,
];

impl DfsSystem {
    /// The name the config uses.
    pub fn name(self) -> &'static str {
        match self {
            DfsSystem::Local => "local",
            DfsSystem::Lustre => "lustre",
            DfsSystem::Nfs => "nfs",
            DfsSystem::Hdfs => "hdfs",
            DfsSystem::Gluster => "gluster",
            DfsSystem::Dedicated => "dedicated",
            DfsSystem::Aps => "aps",
        }
    }

    /// The system's prefetching on a device whose readahead figures are `device`.
    pub fn profile(self, device: DeviceReadahead) -> DfsProfile {
        use ClientReadahead as C;
        let (client, server, queue, rpc) = match self {
            DfsSystem::Local => (C::None, Some(device.local), QueueKind::Shared, None),
            DfsSystem::Lustre => (
                C::Window(LUSTRE_CLIENT_READAHEAD),
                None,
                QueueKind::Shared,
                Some(LARGE_RPC),
            ),
            DfsSystem::Nfs => (
                C::Window(NFS_READAHEAD),
                Some(NFS_READAHEAD),
                QueueKind::Shared,
                Some(LARGE_RPC),
            ),
            // The server streams a block ahead of the reader without waiting for requests; the
            // bytes it may run ahead are the client's window here, fetched in the 128 KiB
            // transfers the paper configured (`io.file.buffer.size`, section 7.1).
            DfsSystem::Hdfs => (
                C::Window(HDFS_SERVER_READAHEAD),
                Some(HDFS_SERVER_READAHEAD),
                QueueKind::Shared,
                Some(HDFS_TRANSFER),
            ),
            DfsSystem::Gluster => (C::None, None, QueueKind::Shared, None),
            DfsSystem::Dedicated => (
                C::Window(device.local),
                Some(device.local),
                QueueKind::Dedicated,
                None,
            ),
            DfsSystem::Aps => (
                C::Aps,
                Some(device.local),
                QueueKind::Dedicated,
                Some(device.unit),
            ),
        };
        DfsProfile {
            system: self,
            client,
            server_readahead: server,
            queue,
            rpc_max: rpc,
            unit: device.unit,
        }
    }
}

impl fmt::Display for DfsSystem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for DfsSystem {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DFS_SYSTEMS
            .iter()
            .copied()
            .find(|d| d.name() == s.trim())
            .ok_or_else(|| {
                let names: Vec<&str> = DFS_SYSTEMS.iter().map(|d| d.name()).collect();
                format!("`{s}` is not a system; choose one of: {}", names.join(", "))
            })
    }
}

/// How the server hands requests to its workers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QueueKind {
    /// One queue; any idle worker takes the oldest request (paper 004, Fig. 4).
    Shared,
    /// One queue per worker; a stream's requests all go to the worker it was pinned to (Fig. 6).
    Dedicated,
}

impl QueueKind {
    /// The name the config uses.
    pub fn name(self) -> &'static str {
        match self {
            QueueKind::Shared => "shared",
            QueueKind::Dedicated => "dedicated",
        }
    }
}

impl FromStr for QueueKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "shared" => Ok(QueueKind::Shared),
            "dedicated" => Ok(QueueKind::Dedicated),
            other => Err(format!(
                "`{other}` is not a queue kind; choose `shared` or `dedicated`"
            )),
        }
    }
}

/// The client's readahead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientReadahead {
    /// None: every application read goes to the server as it is.
    None,
    /// Linux-style on-demand readahead up to this window.
    Window(ByteLen),
    /// Algorithm 1 with `alpha` units of `unit` in flight.
    Aps,
}

/// A device's readahead figures, as the paper's rules derive them from its geometry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceReadahead {
    /// The local file system's readahead on it (paper 004, section 2.2.1).
    pub local: ByteLen,
    /// APS's `max_ra_sz` on it (section 4.2.1).
    pub unit: ByteLen,
}

impl DeviceReadahead {
    /// A single disk or an SSD: 128 KiB both ways.
    pub fn single() -> DeviceReadahead {
        DeviceReadahead {
            local: DISK_READAHEAD,
            unit: DISK_READAHEAD,
        }
    }

    /// A RAID-0 of `disks` disks with `strip` bytes per strip: EXT4 reads `2 * P * S` ahead, APS
    /// reads in strips when a strip is at least the normal readahead (section 4.2.1).
    pub fn striped(disks: u32, strip: ByteLen) -> DeviceReadahead {
        assert!(
            disks >= 1 && strip.0 > 0,
            "a striped device has disks and strips"
        );
        DeviceReadahead {
            local: ByteLen(2 * u64::from(disks) * strip.0),
            unit: ByteLen(strip.0.max(DISK_READAHEAD.0)),
        }
    }
}

/// One system's prefetching on one device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DfsProfile {
    /// Which system.
    pub system: DfsSystem,
    /// The client's readahead.
    pub client: ClientReadahead,
    /// The server's readahead window, `None` for no server readahead.
    pub server_readahead: Option<ByteLen>,
    /// Shared queue or dedicated workers.
    pub queue: QueueKind,
    /// The largest network request the client sends; `None` sends each read the client's cache
    /// misses as one request.
    pub rpc_max: Option<ByteLen>,
    /// APS's `max_ra_sz` on this device.
    pub unit: ByteLen,
}

impl DfsProfile {
    /// The client's policy for this system. `aps` carries condition 20's inputs (the device's
    /// figures and the measured round trip) and is used only by [`ClientReadahead::Aps`]; its
    /// `max_readahead` is set to the profile's unit.
    pub fn client_policy(
        &self,
        layout: Arc<Layout>,
        aps: ApsConfig,
    ) -> Result<Box<dyn Policy>, PolicyError> {
        Ok(match self.client {
            ClientReadahead::None => Box::new(NoPrefetch::new()),
            ClientReadahead::Window(max) => Box::new(Seqp::new(max, layout)?),
            ClientReadahead::Aps => {
                let cfg = ApsConfig {
                    max_readahead: self.unit,
                    initial_readahead: aps.initial_readahead.min(self.unit),
                    ..aps
                };
                Box::new(Aps::new(cfg, layout)?)
            }
        })
    }

    /// The server's page-cache policy (the readahead of the file system under the server).
    pub fn server_policy(&self, layout: Arc<Layout>) -> Result<Box<dyn Policy>, PolicyError> {
        Ok(match self.server_readahead {
            None => Box::new(NoPrefetch::new()),
            Some(max) => Box::new(Seqp::new(max, layout)?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for s in DFS_SYSTEMS {
            assert_eq!(s.name().parse::<DfsSystem>().unwrap(), *s);
        }
        let e = "ceph".parse::<DfsSystem>().unwrap_err();
        assert!(e.contains("lustre") && e.contains("aps"), "{e}");
        assert_eq!("dedicated".parse::<QueueKind>(), Ok(QueueKind::Dedicated));
        assert!("fifo".parse::<QueueKind>().is_err());
    }

    #[test]
    fn striped_readahead_follows_section_2_2_1_and_4_2_1() {
        let d = DeviceReadahead::striped(4, ByteLen::kib(512));
        assert_eq!(d.local, ByteLen::mib(4));
        assert_eq!(d.unit, ByteLen::kib(512));
        // Small strips are read in normal readahead units.
        assert_eq!(
            DeviceReadahead::striped(4, ByteLen::kib(64)).unit,
            DISK_READAHEAD
        );
    }

    #[test]
    fn only_aps_and_dedicated_use_dedicated_workers() {
        let d = DeviceReadahead::single();
        for s in DFS_SYSTEMS {
            let p = s.profile(d);
            let dedicated = matches!(s, DfsSystem::Aps | DfsSystem::Dedicated);
            assert_eq!(p.queue == QueueKind::Dedicated, dedicated, "{s}");
        }
        let lustre = DfsSystem::Lustre.profile(d);
        assert_eq!(
            lustre.client,
            ClientReadahead::Window(LUSTRE_CLIENT_READAHEAD)
        );
        assert_eq!(lustre.server_readahead, None);
        assert_eq!(DfsSystem::Gluster.profile(d).client, ClientReadahead::None);
    }

    #[test]
    fn policies_build_for_every_system() {
        let layout = Arc::new(Layout::unplaced(&[ByteLen::mib(64)]));
        for s in DFS_SYSTEMS {
            let p = s.profile(DeviceReadahead::single());
            let c = p
                .client_policy(layout.clone(), ApsConfig::default())
                .unwrap();
            let _ = p.server_policy(layout.clone()).unwrap();
            if *s == DfsSystem::Aps {
                assert_eq!(c.name(), "aps");
            }
        }
    }
}
