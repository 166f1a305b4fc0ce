//! Fixed-width rows kept in blocks that never move once full.
//!
//! The index's per-row arrays (int8 rows, sign codes, scales, rowids, positions) grow with
//! every vector written. In one `Vec` each doubling copies the whole array into a new
//! allocation, and under the daemon's allocator (mimalloc) both are resident while it copies:
//! 10M rows of 256 dimensions peaked at 4.6 GiB that way, against 3.1 GiB in blocks
//! (`scan_timing`; `BENCHMARKS.md`, "The vector index in blocks"). A slab allocates
//! [`BLOCK_ROWS`] rows at a time instead (only the first block grows by doubling, so a small
//! index stays small), so what a large index holds is its rows plus one partly filled block.

use std::ops::Range;

/// Rows a block holds: 16 MB of int8 rows at 256 dimensions.
pub(crate) const BLOCK_ROWS: usize = 1 << 16;

/// Rows of `width` values each, in blocks of [`BLOCK_ROWS`] rows; rows are added and removed
/// at the end only, so every block but the last is full and row `i` is found by arithmetic.
/// A slab of width 0 (the sign tails of a narrow embedder) only counts its rows.
pub(crate) struct Slab<T> {
    width: usize,
    blocks: Vec<Vec<T>>,
    len: usize,
}

impl<T: Copy> Slab<T> {
    pub fn new(width: usize) -> Self {
        Slab { width, blocks: Vec::new(), len: 0 }
    }

    /// Rows held.
    pub fn len(&self) -> usize {
        self.len
    }

    fn block_len(&self) -> usize {
        BLOCK_ROWS * self.width
    }

    /// Adds `row` (`width` values) at the end.
    pub fn push(&mut self, row: &[T]) {
        debug_assert_eq!(row.len(), self.width);
        if self.width == 0 {
            self.len += 1;
            return;
        }
        let full = self.block_len();
        if self.blocks.last().is_none_or(|b| b.len() == full) {
            // Past the first, a block is allocated whole: it never grows, so never copies.
            let first = self.blocks.is_empty();
            self.blocks.push(if first { Vec::new() } else { Vec::with_capacity(full) });
        }
        let block = self.blocks.last_mut().expect("a block was just ensured");
        if block.capacity() - block.len() < row.len() {
            let want = (2 * block.capacity()).max(64 * self.width).min(full);
            block.reserve_exact(want - block.len());
        }
        block.extend_from_slice(row);
        self.len += 1;
    }

    /// Removes the last row.
    pub fn pop(&mut self) {
        if self.width == 0 {
            self.len = self.len.saturating_sub(1);
            return;
        }
        let Some(block) = self.blocks.last_mut() else { return };
        block.truncate(block.len().saturating_sub(self.width));
        if block.is_empty() {
            self.blocks.pop();
        }
        self.len = self.len.saturating_sub(1);
    }

    pub fn clear(&mut self) {
        self.blocks.clear();
        self.len = 0;
    }

    /// Row `i`.
    #[inline(always)]
    pub fn row(&self, i: usize) -> &[T] {
        if self.width == 0 {
            return &[];
        }
        let at = (i % BLOCK_ROWS) * self.width;
        &self.blocks[i / BLOCK_ROWS][at..at + self.width]
    }

    #[inline(always)]
    pub fn row_mut(&mut self, i: usize) -> &mut [T] {
        if self.width == 0 {
            return &mut [];
        }
        let at = (i % BLOCK_ROWS) * self.width;
        &mut self.blocks[i / BLOCK_ROWS][at..at + self.width]
    }

    /// The first value of row `i` (the value, for a slab of width 1).
    #[inline(always)]
    pub fn at(&self, i: usize) -> T {
        self.row(i)[0]
    }

    /// Copies row `from` over row `to`.
    pub fn copy_row(&mut self, from: usize, to: usize) {
        if from != to {
            let row = self.row(from).to_vec();
            self.row_mut(to).copy_from_slice(&row);
        }
    }

    /// The rows of `span` as contiguous pieces, one a block it crosses: `(first row, values)`.
    pub fn pieces(&self, span: Range<usize>) -> impl Iterator<Item = (usize, &[T])> + '_ {
        let end = span.end.min(self.len);
        let mut at = span.start;
        std::iter::from_fn(move || {
            if at >= end {
                return None;
            }
            let upto = ((at / BLOCK_ROWS + 1) * BLOCK_ROWS).min(end);
            let block = &self.blocks[at / BLOCK_ROWS];
            let piece = &block[(at % BLOCK_ROWS) * self.width..(upto - (at / BLOCK_ROWS) * BLOCK_ROWS) * self.width];
            let first = at;
            at = upto;
            Some((first, piece))
        })
    }

    /// Every row, in order.
    pub fn rows(&self) -> impl Iterator<Item = &[T]> + '_ {
        self.blocks.iter().flat_map(|b| b.chunks_exact(self.width.max(1)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_across_blocks_read_back_in_order() {
        let mut s = Slab::new(3);
        let n = 2 * BLOCK_ROWS + 5;
        for i in 0..n {
            s.push(&[i as u32, i as u32 + 1, 7]);
        }
        assert_eq!(s.len(), n);
        for i in [0, 1, BLOCK_ROWS - 1, BLOCK_ROWS, 2 * BLOCK_ROWS + 4] {
            assert_eq!(s.row(i), &[i as u32, i as u32 + 1, 7]);
        }
        assert_eq!(s.rows().count(), n);
        assert!(s.rows().enumerate().all(|(i, r)| r[0] == i as u32));
        // The pieces of a span crossing two block ends cover it exactly, in order.
        let span = BLOCK_ROWS - 2..2 * BLOCK_ROWS + 3;
        let pieces: Vec<(usize, usize)> = s.pieces(span.clone()).map(|(f, p)| (f, p.len() / 3)).collect();
        assert_eq!(pieces, vec![(BLOCK_ROWS - 2, 2), (BLOCK_ROWS, BLOCK_ROWS), (2 * BLOCK_ROWS, 3)]);
        let firsts: Vec<u32> = s.pieces(span.clone()).flat_map(|(_, p)| p.chunks_exact(3).map(|r| r[0])).collect();
        assert_eq!(firsts, span.map(|i| i as u32).collect::<Vec<_>>());
    }

    #[test]
    fn full_blocks_are_allocated_once_and_emptied_blocks_go() {
        let mut s = Slab::new(2);
        for i in 0..BLOCK_ROWS + 1 {
            s.push(&[i as u8, 0]);
        }
        // The second block was allocated whole.
        assert_eq!(s.blocks[1].capacity(), 2 * BLOCK_ROWS);
        assert_eq!(s.blocks[0].capacity(), 2 * BLOCK_ROWS);
        s.copy_row(BLOCK_ROWS, 3);
        assert_eq!(s.row(3), &[BLOCK_ROWS as u8, 0]);
        s.pop();
        assert_eq!((s.len(), s.blocks.len()), (BLOCK_ROWS, 1));
        s.row_mut(0)[1] = 9;
        assert_eq!(s.at(0), 0);
        assert_eq!(s.row(0), &[0, 9]);
        s.clear();
        assert_eq!(s.len(), 0);
        let mut none: Slab<u8> = Slab::new(0);
        none.push(&[]);
        none.push(&[]);
        none.pop();
        assert_eq!((none.len(), none.row(0)), (1, &[][..]));
        assert_eq!(s.pieces(0..10).count(), 0);
    }
}
