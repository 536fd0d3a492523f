//! CRC-32 of a range from the CRCs of two prefixes: what lets the frame
//! scan check every frame head in one pass over the data, however the
//! frames claimed overlap (see [`super::frame::valid_frames`]).
//!
//! For the CRC-32 of zlib (crc32fast), `crc(A ++ B) = shift(crc(A), |B|)
//! ^ crc(B)`, where `shift(c, n)` multiplies `c` by x^(8n) modulo the
//! polynomial (zlib's `crc32_combine`). So, with `P(x)` the CRC of the
//! first `x` bytes, `crc(data[s..e]) = P(e) ^ shift(P(s), e - s)`: two
//! prefix CRCs taken as one pass reaches `s` and `e`, and O(log n) work.

/// The reflected CRC-32 polynomial.
const POLY: u32 = 0xedb8_8320;

/// `a * b` modulo the polynomial (reflected: bit 31 is x^0).
fn mult(a: u32, mut b: u32) -> u32 {
    let mut p = 0;
    for bit in (0..32).rev() {
        if a & (1 << bit) != 0 {
            p ^= b;
        }
        b = if b & 1 != 0 { (b >> 1) ^ POLY } else { b >> 1 };
    }
    p
}

/// x^(2^k) modulo the polynomial, for k in 0..64.
fn x2k(k: u32) -> u32 {
    // x^1 is bit 30; squaring k times.
    let mut p = 1 << 30;
    for _ in 0..k {
        p = mult(p, p);
    }
    p
}

/// x^(8n) modulo the polynomial.
fn x8n(n: u64) -> u32 {
    use std::sync::OnceLock;
    static TABLE: OnceLock<[u32; 64]> = OnceLock::new();
    let table = TABLE.get_or_init(|| std::array::from_fn(|k| x2k(k as u32)));
    // x^0 is bit 31; 8n = n << 3: start at x^(2^3).
    let (mut p, mut n, mut k) = (1u32 << 31, n, 3usize);
    while n != 0 {
        if n & 1 != 0 {
            p = mult(table[k % 64], p);
        }
        n >>= 1;
        k += 1;
    }
    p
}

/// `crc(A ++ B)`'s part from A: `crc` (of A) shifted over `n` more bytes.
pub fn shift(crc: u32, n: u64) -> u32 {
    mult(x8n(n), crc)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crc(b: &[u8]) -> u32 {
        crc32fast::hash(b)
    }

    #[test]
    fn a_range_crc_comes_from_two_prefix_crcs() {
        let data: Vec<u8> = (0..5000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for (s, e) in [(0, 0), (0, 1), (3, 3), (7, 100), (1, 4999), (1000, 5000), (4096, 4097)] {
            let got = crc(&data[..e]) ^ shift(crc(&data[..s]), (e - s) as u64);
            assert_eq!(got, crc(&data[s..e]), "{s}..{e}");
        }
        assert_eq!(shift(crc(b"ab"), 3) ^ crc(b"cde"), crc(b"abcde"));
    }
}
