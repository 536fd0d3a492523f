//! A heap buffer aligned for direct I/O (the probes' reads, io_uring).

/// A heap buffer aligned for direct I/O: a zeroed allocation one alignment
/// larger than asked, used from its first aligned byte.
pub struct AlignedBuf {
    mem: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuf {
    pub fn new(len: usize, align: usize) -> anyhow::Result<Self> {
        let align = align.max(1).checked_next_power_of_two().unwrap_or(0);
        let total = len.max(1).checked_add(align);
        anyhow::ensure!(
            align > 0 && total.is_some_and(|t| t <= isize::MAX as usize),
            "buffer of {len} B aligned to {align}: too large"
        );
        let mut mem = Vec::new();
        mem.try_reserve_exact(total.unwrap_or(0))
            .map_err(|_| anyhow::anyhow!("out of memory for a {len} B buffer"))?;
        mem.resize(total.unwrap_or(0), 0);
        let start = mem.as_ptr().align_offset(align);
        anyhow::ensure!(start < align, "cannot align a buffer of {len} B to {align}");
        Ok(AlignedBuf {
            mem,
            start,
            len: len.max(1),
        })
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.mem[self.start..self.start + self.len]
    }
}
