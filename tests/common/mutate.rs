//! Random edits of captured files, shared by the property tests of the
//! parsers and of whole captured trees.
#![allow(dead_code)]

/// Pieces that have broken parsers before: multi-byte characters (a slice
/// inside one), numbers beyond u64, NaN and infinity, signs, empty fields.
pub const NASTY: &[&str] = &[
    "é",
    "日本",
    "\u{9b}",
    "\u{7f}",
    "\0",
    "\n",
    " ",
    "\t",
    ":",
    "=",
    "-1",
    "18446744073709551616",
    "99999999999999999999999999999999999999999",
    "1e309",
    "NaN",
    "inf",
    "-inf",
    "../../etc",
    "(",
    ")",
    ") ",
    "kB",
    "0::/",
    "avg10=",
    "total=",
];

#[derive(Debug, Clone)]
pub enum Edit {
    Set(usize, u8),
    Insert(usize, usize),
    Remove(usize, usize),
    Cut(usize),
    DupLine(usize, usize),
}

impl Edit {
    pub fn apply(self, b: &mut Vec<u8>) {
        let at = |i: usize, b: &Vec<u8>| if b.is_empty() { 0 } else { i % (b.len() + 1) };
        match self {
            Edit::Set(i, v) if !b.is_empty() => {
                let n = b.len();
                b[i % n] = v;
            }
            Edit::Set(..) => {}
            Edit::Insert(i, n) => {
                let i = at(i, b);
                b.splice(i..i, NASTY[n].bytes());
            }
            Edit::Remove(i, n) => {
                let i = at(i, b);
                let end = (i + n).min(b.len());
                b.drain(i..end);
            }
            Edit::Cut(i) => {
                let i = at(i, b);
                b.truncate(i);
            }
            Edit::DupLine(i, j) => {
                let lines: Vec<Vec<u8>> = b.split(|c| *c == b'\n').map(<[u8]>::to_vec).collect();
                let l = lines[i % lines.len()].clone();
                let mut out = lines;
                let j = j % (out.len() + 1);
                out.insert(j, l);
                *b = out.join(&b'\n');
            }
        }
    }
}

/// A small seeded generator (xorshift64*), for the tree mutations.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// One random edit.
    pub fn edit(&mut self) -> Edit {
        let (i, j) = (self.next() as usize, self.next() as usize);
        match self.below(5) {
            0 => Edit::Set(i, j as u8),
            1 => Edit::Insert(i, j % NASTY.len()),
            2 => Edit::Remove(i, 1 + j % 63),
            3 => Edit::Cut(i),
            _ => Edit::DupLine(i, j),
        }
    }
}
