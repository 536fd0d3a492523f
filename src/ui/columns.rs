//! The columns of the devices pane: their display order and the names the
//! config file uses for them (the processes pane's are in
//! [`crate::present::process`]).

pub use crate::present::process::ProcCol;

/// A column of the devices pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DevCol {
    Name,
    Mount,
    ReadIops,
    ReadMb,
    ReadAwait,
    ReadReqSz,
    ReadMerge,
    WriteIops,
    WriteMb,
    WriteAwait,
    WriteReqSz,
    WriteMerge,
    FlushIops,
    QueueSize,
    Util,
    Pattern,
    /// p99 of the traced requests' total time (reads and writes).
    P99,
    Spark,
}

impl DevCol {
    /// Display order.
    pub const ALL: [DevCol; 18] = [
        DevCol::Name,
        DevCol::Mount,
        DevCol::ReadIops,
        DevCol::ReadMb,
        DevCol::ReadAwait,
        DevCol::ReadReqSz,
        DevCol::ReadMerge,
        DevCol::WriteIops,
        DevCol::WriteMb,
        DevCol::WriteAwait,
        DevCol::WriteReqSz,
        DevCol::WriteMerge,
        DevCol::FlushIops,
        DevCol::QueueSize,
        DevCol::Util,
        DevCol::Pattern,
        DevCol::P99,
        DevCol::Spark,
    ];

    pub fn key(self) -> &'static str {
        match self {
            DevCol::Name => "name",
            DevCol::Mount => "mount",
            DevCol::ReadIops => "r/s",
            DevCol::ReadMb => "rMB/s",
            DevCol::ReadAwait => "r_await",
            DevCol::ReadReqSz => "rareq-sz",
            DevCol::ReadMerge => "%rrqm",
            DevCol::WriteIops => "w/s",
            DevCol::WriteMb => "wMB/s",
            DevCol::WriteAwait => "w_await",
            DevCol::WriteReqSz => "wareq-sz",
            DevCol::WriteMerge => "%wrqm",
            DevCol::FlushIops => "f/s",
            DevCol::QueueSize => "aqu-sz",
            DevCol::Util => "%util",
            DevCol::Pattern => "pattern",
            DevCol::P99 => "p99",
            DevCol::Spark => "history",
        }
    }

    pub fn from_key(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.key() == s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_keys_round_trip() {
        for c in DevCol::ALL {
            assert_eq!(DevCol::from_key(c.key()), Some(c));
        }
    }
}
