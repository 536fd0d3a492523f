//! The presentation layer: what every output shows of a row, defined once.
//!
//! One column table per row type ([`process::PROC_COLUMNS`], ...): each
//! column's id, config key, headings (dashboard, batch text, raw units,
//! CSV, and the JSON and exporter names it maps to), width, alignment, the
//! value (one function over the row) and its human and raw formatting. The
//! dashboard panes (`ui`), the batch text and CSV (`batch`) are generated
//! from these tables, and the text helpers they share (command lines,
//! devices, labels, units) live here, with the dashboard's theme (palette
//! and severity thresholds, which the config file sets): `ui`, `batch` and
//! `config` import this module; `ui` and `batch` never each other.

pub mod cgroup;
pub mod cgroup_text;
pub mod device;
pub mod files;
pub mod findings;
pub mod process;
pub mod text;
pub mod theme;
pub mod trace_json;
pub mod transfer;
pub mod units;

/// Where a column's text sits in its cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// Which output a text value is for: the dashboard, or the batch text and
/// CSV (which show the same value, CSV quoting it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Out {
    Pane,
    Text,
}

/// Defines a column id enum (in display order, with `ALL`) and its table
/// (a static array of `$def` structs, one per id, with `id` set): one entry
/// per column, the only place a column is listed.
macro_rules! column_table {
    (
        $(#[$meta:meta])*
        enum $name:ident, static $table:ident: $def:ident = [
            $( $(#[$vmeta:meta])* $id:ident { $($field:ident: $val:expr),* $(,)? } ),* $(,)?
        ];
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $id ),*
        }

        impl $name {
            /// Every column, in display order.
            pub const ALL: [$name; <[&str]>::len(&[$(stringify!($id)),*])] = [$($name::$id),*];

            /// The column's definition in the table.
            pub fn def(self) -> &'static $def {
                &$table[self as usize]
            }

            /// Name used in the config file (also the sort key).
            pub fn key(self) -> &'static str {
                self.def().key
            }

            /// The column whose config key is `s`.
            pub fn from_key(s: &str) -> Option<Self> {
                Self::ALL.into_iter().find(|c| c.key() == s)
            }
        }

        /// The column table, in display order (indexed by the id).
        pub static $table: [$def; <[&str]>::len(&[$(stringify!($id)),*])] = [
            $( $def { id: $name::$id, $($field: $val),* } ),*
        ];
    };
}
pub(crate) use column_table;

#[cfg(test)]
mod tests;
