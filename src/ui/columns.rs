//! The columns of the processes and devices panes (their tables are in
//! [`crate::present`]).

pub use crate::present::device::DevCol;
pub use crate::present::process::ProcCol;
