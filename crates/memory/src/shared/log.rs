//! Where a shared store's change log stands, for `status`: its size, the window it is pruned
//! to, and how far each daemon sharing it has applied it. The server reports these from
//! [`SharedStore::checkpoint`](super::SharedStore::checkpoint); the engine keeps the last answer.

use serde::Serialize;

/// The change log on the server and the daemons following it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LogStatus {
    /// Changes the log holds now.
    pub rows: i64,
    /// The oldest and newest change held (None when the log is empty).
    pub oldest_seq: Option<i64>,
    pub newest_seq: Option<i64>,
    /// The log's size on disk, with its indexes and compressed overflow, when the server says.
    pub bytes: Option<i64>,
    /// Every change up to here has been pruned (or predates a store moved in whole): a copy
    /// that applied less than this is loaded again from a snapshot, not from the log.
    pub horizon_seq: i64,
    /// The window: changes younger than `keep_days`, and the newest `keep_rows` whatever
    /// their age, are kept.
    pub keep_days: u64,
    pub keep_rows: u64,
    /// Every daemon that has reported its position, by name.
    pub devices: Vec<DevicePosition>,
    /// When the server answered (milliseconds since 1970, the server's clock).
    pub checked_at_ms: i64,
}

/// One daemon's position in the log.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DevicePosition {
    pub machine: String,
    /// The last change applied (and searchable) on that daemon.
    pub applied_seq: i64,
    /// Changes of the log it has not applied yet.
    pub lag: i64,
    /// When it last reported (milliseconds since 1970, the server's clock).
    pub seen_at_ms: i64,
    /// It applied less than the horizon: its next catch-up loads a snapshot.
    pub behind_horizon: bool,
}
