//! Errors for device parameters that cannot describe a working device.
//!
//! Every model checks its parameters once, when it is built (`validate()` or a `try_new`
//! constructor), and reports the first problem as a [`DeviceError`] whose message names the field
//! and says what to change. After construction the models only panic on driver bugs (submitting to a
//! full queue, a request past the end of the device), never on parameter values.

use thiserror::Error;

/// Why a set of device parameters was rejected.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum DeviceError {
    /// A scalar parameter is out of its valid range.
    #[error("`{field}` = {value} is invalid: {fix}")]
    BadValue {
        /// The parameter's name as it appears in the params struct.
        field: &'static str,
        /// The offending value, printed.
        value: String,
        /// What to change.
        fix: &'static str,
    },
    /// The zone table overlaps itself or is out of order.
    #[error(
        "zone {index} covers cylinders {first_cyl}..={last_cyl}, but it must start at cylinder \
         {expected_first} or later: zones must be listed outer to inner without overlapping"
    )]
    ZoneGap {
        /// Position of the zone in the list.
        index: usize,
        /// Its first cylinder.
        first_cyl: u32,
        /// Its last cylinder.
        last_cyl: u32,
        /// The first cylinder the zone may start at.
        expected_first: u32,
    },
    /// The zones end before or after the last cylinder.
    #[error(
        "the zones end at cylinder {last_cyl} but the drive has {cylinders} cylinders: make the last \
         zone end at cylinder {expected_last}"
    )]
    ZonesDontCover {
        /// Last cylinder of the last zone.
        last_cyl: u32,
        /// The drive's cylinder count.
        cylinders: u32,
        /// The cylinder the last zone must end at (`cylinders - 1`).
        expected_last: u32,
    },
    /// A zone's own numbers are inconsistent.
    #[error("zone {index}: {problem}")]
    BadZone {
        /// Position of the zone in the list.
        index: usize,
        /// What is wrong and how to fix it.
        problem: String,
    },
    /// The seek curve cannot be evaluated or is not physical.
    #[error("seek curve: {0}")]
    SeekCurve(String),
    /// The three datasheet seek numbers admit no curve of the calibrated family.
    #[error(
        "an average seek of {avg_ms} ms cannot be reached with single-cylinder {single_ms} ms and \
         full-stroke {full_ms} ms over {cylinders} cylinders: the average must lie in \
         {min_avg_ms:.3}..{max_avg_ms:.3} ms; check the datasheet numbers or give a point curve"
    )]
    SeekCalibration {
        /// Requested single-cylinder seek.
        single_ms: f64,
        /// Requested average seek.
        avg_ms: f64,
        /// Requested full-stroke seek.
        full_ms: f64,
        /// Cylinder count.
        cylinders: u32,
        /// Smallest reachable average.
        min_avg_ms: f64,
        /// Largest reachable average.
        max_avg_ms: f64,
    },
    /// A RAID-0 array cannot be built from these members and strip size.
    #[error("RAID-0: {0}")]
    Raid0(String),
}

/// Shorthand for a [`DeviceError::BadValue`].
pub(crate) fn bad(
    field: &'static str,
    value: impl std::fmt::Display,
    fix: &'static str,
) -> DeviceError {
    DeviceError::BadValue {
        field,
        value: value.to_string(),
        fix,
    }
}
