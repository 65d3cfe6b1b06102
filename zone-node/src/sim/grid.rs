//! Uniform spatial grid over XZ, updated incrementally as actors move.
//!
//! The grid is dense over the area's content bounds plus a margin; cells on the border
//! also hold everything outside the bounds (coordinates are clamped into the grid), so
//! they are flagged as *overflow* cells: queries always check the actors in them one by
//! one, while an inner cell whose whole rectangle lies inside a radius can be taken
//! wholesale. Each actor knows its cell and its position in the cell's list, so moves and
//! removals are O(1) (swap-remove).
//!
//! Each entry also keeps the actor's X/Z, written by `ZoneState::grid_update` on every
//! move, so a query filters candidates without touching the actors themselves (at 50,000
//! actors those would be cache misses). **Invariant:** whoever writes an actor's `x`/`z`
//! calls `ZoneState::grid_update` (the harness resyncs before each tick, for tests that
//! poke positions directly).

use super::area::AreaData;

/// Sentinel index: not linked / no actor (the grid's cells and the state's chains).
pub const NIL: u32 = u32::MAX;

/// Margin around the content bounds, in world units.
const MARGIN: f32 = 1500.0;
/// Upper bound on cells per side (the cell grows if the area is larger).
const MAX_SIDE: u32 = 1024;
/// Grids of at most this many cells pre-allocate [`RESERVE_PER_CELL`] entries per cell.
const RESERVE_CELLS: u32 = 1 << 16;
/// Entries reserved per cell (12 bytes each).
const RESERVE_PER_CELL: usize = 8;

/// One grid entry: a slab index and the actor's X/Z.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Entry {
    /// Slab index.
    pub idx: u32,
    /// X.
    pub x: f32,
    /// Z.
    pub z: f32,
}

/// The grid.
#[derive(Clone, Debug)]
pub struct Grid {
    /// Cell size.
    pub cell: f32,
    inv: f32,
    /// World X of the grid's left edge.
    pub x0: f32,
    /// World Z of the grid's top edge.
    pub z0: f32,
    /// Cells along X.
    pub nx: u32,
    /// Cells along Z.
    pub nz: u32,
    cells: Vec<Vec<Entry>>,
}

impl Grid {
    /// A grid covering the area's content with `cell`-sized cells.
    pub fn for_area(area: &AreaData, cell: f32) -> Self {
        let (minx, minz, maxx, maxz) = area.bounds().unwrap_or((0.0, 0.0, 0.0, 0.0));
        Self::new(
            minx - MARGIN,
            minz - MARGIN,
            maxx + MARGIN,
            maxz + MARGIN,
            cell,
        )
    }

    /// A grid covering `[x0, x1] × [z0, z1]`.
    pub fn new(x0: f32, z0: f32, x1: f32, z1: f32, cell: f32) -> Self {
        let mut cell = if cell.is_finite() && cell >= 1.0 {
            cell
        } else {
            125.0
        };
        let w = (x1 - x0).max(cell);
        let h = (z1 - z0).max(cell);
        while (w / cell).ceil() as u32 + 2 > MAX_SIDE || (h / cell).ceil() as u32 + 2 > MAX_SIDE {
            cell *= 2.0;
        }
        // One overflow ring on each side.
        let nx = (w / cell).ceil() as u32 + 2;
        let nz = (h / cell).ceil() as u32 + 2;
        // Reserve a few entries per cell up front, all cells back to back, so the entries
        // of a region sit together instead of between the actors' own allocations (at
        // 50,000 actors every `set_pos` was a cache and TLB miss). Bounded to
        // `RESERVE_CELLS` cells (6 MB).
        let reserve = if nx * nz <= RESERVE_CELLS {
            RESERVE_PER_CELL
        } else {
            0
        };
        Self {
            cell,
            inv: 1.0 / cell,
            x0: x0 - cell,
            z0: z0 - cell,
            nx,
            nz,
            cells: (0..nx * nz).map(|_| Vec::with_capacity(reserve)).collect(),
        }
    }

    /// Column of a world X (clamped into the grid).
    #[inline]
    pub fn col(&self, x: f32) -> u32 {
        // A saturating float-to-int cast: NaN becomes 0, no libm `floor` call; values
        // below the origin clamp to the overflow column 0 anyway.
        let c = ((x - self.x0) * self.inv) as i64;
        c.clamp(0, i64::from(self.nx - 1)) as u32
    }

    /// Row of a world Z (clamped into the grid).
    #[inline]
    pub fn row(&self, z: f32) -> u32 {
        let c = ((z - self.z0) * self.inv) as i64;
        c.clamp(0, i64::from(self.nz - 1)) as u32
    }

    /// Cell index of a position.
    #[inline]
    pub fn cell_of(&self, x: f32, z: f32) -> u32 {
        self.row(z) * self.nx + self.col(x)
    }

    /// Number of cells.
    pub fn len(&self) -> u32 {
        self.nx * self.nz
    }

    /// Whether the grid has no cells (never).
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// Whether a cell is on the overflow border.
    #[inline]
    pub fn is_overflow(&self, cell: u32) -> bool {
        let (c, r) = (cell % self.nx, cell / self.nx);
        c == 0 || r == 0 || c + 1 >= self.nx || r + 1 >= self.nz
    }

    /// The rectangle `(x0, z0, x1, z1)` of a cell.
    #[inline]
    pub fn rect(&self, cell: u32) -> (f32, f32, f32, f32) {
        let (c, r) = (cell % self.nx, cell / self.nx);
        let x0 = self.x0 + c as f32 * self.cell;
        let z0 = self.z0 + r as f32 * self.cell;
        (x0, z0, x0 + self.cell, z0 + self.cell)
    }

    /// The actors in a cell.
    #[inline]
    pub fn members(&self, cell: u32) -> &[Entry] {
        self.cells.get(cell as usize).map_or(&[], Vec::as_slice)
    }

    /// Update the stored position of the entry at `pos` of `cell`.
    #[inline]
    pub fn set_pos(&mut self, cell: u32, pos: u32, x: f32, z: f32) {
        if let Some(e) = self
            .cells
            .get_mut(cell as usize)
            .and_then(|v| v.get_mut(pos as usize))
        {
            e.x = x;
            e.z = z;
        }
    }

    /// Append to a cell; returns the position.
    pub fn push(&mut self, cell: u32, idx: u32, x: f32, z: f32) -> u32 {
        match self.cells.get_mut(cell as usize) {
            Some(v) => {
                v.push(Entry { idx, x, z });
                u32::try_from(v.len() - 1).unwrap_or(NIL)
            }
            None => NIL,
        }
    }

    /// Swap-remove position `pos` from a cell; returns the actor moved into `pos`, if any.
    pub fn swap_remove(&mut self, cell: u32, pos: u32) -> Option<u32> {
        let v = self.cells.get_mut(cell as usize)?;
        let p = pos as usize;
        if p >= v.len() {
            return None;
        }
        v.swap_remove(p);
        v.get(p).map(|e| e.idx)
    }

    /// Cells whose rectangle may intersect the disc `(x, z, r)`: `(col0, row0, col1, row1)`
    /// inclusive.
    pub fn span(&self, x: f32, z: f32, r: f32) -> (u32, u32, u32, u32) {
        (
            self.col(x - r),
            self.row(z - r),
            self.col(x + r),
            self.row(z + r),
        )
    }

    /// Squared distance from a point to the nearest and the farthest point of a cell.
    #[inline]
    pub fn dist2_range(&self, cell: u32, x: f32, z: f32) -> (f32, f32) {
        let (x0, z0, x1, z1) = self.rect(cell);
        let nx = (x0 - x).max(0.0).max(x - x1);
        let nz = (z0 - z).max(0.0).max(z - z1);
        let fx = (x - x0).abs().max((x1 - x).abs());
        let fz = (z - z0).abs().max((z1 - z).abs());
        (nx * nx + nz * nz, fx * fx + fz * fz)
    }

    /// Visit every actor index within radius `r` of `(x, z)` by XZ distance (strictly
    /// less), in cell order, using the positions stored in the grid. `_pos` is kept for
    /// callers written against the first version and is not called.
    pub fn for_each_near(
        &self,
        x: f32,
        z: f32,
        r: f32,
        _pos: impl FnMut(u32) -> Option<(f32, f32)>,
        mut f: impl FnMut(u32),
    ) {
        let r2 = r * r;
        let (c0, r0, c1, r1) = self.span(x, z, r);
        for row in r0..=r1 {
            for col in c0..=c1 {
                let cell = row * self.nx + col;
                let (near, far) = self.dist2_range(cell, x, z);
                let overflow = self.is_overflow(cell);
                if near > r2 && !overflow {
                    continue;
                }
                let whole = far < r2 && !overflow;
                for e in self.members(cell) {
                    if whole {
                        f(e.idx);
                    } else {
                        let (dx, dz) = (e.x - x, e.z - z);
                        if dx * dx + dz * dz < r2 {
                            f(e.idx);
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clamps_outside_points_into_overflow_cells() {
        let g = Grid::new(0.0, 0.0, 1000.0, 1000.0, 125.0);
        let c = g.cell_of(1e9, -1e9);
        assert!(g.is_overflow(c));
        assert!(g.is_overflow(g.cell_of(f32::NAN, 0.0)));
        assert!(!g.is_overflow(g.cell_of(500.0, 500.0)));
    }

    #[test]
    fn swap_remove_reports_the_moved_member() {
        let mut g = Grid::new(0.0, 0.0, 1000.0, 1000.0, 125.0);
        let c = g.cell_of(10.0, 10.0);
        assert_eq!(g.push(c, 7, 10.0, 10.0), 0);
        assert_eq!(g.push(c, 8, 11.0, 10.0), 1);
        assert_eq!(g.swap_remove(c, 0), Some(8));
        assert_eq!(
            g.members(c),
            &[Entry {
                idx: 8,
                x: 11.0,
                z: 10.0
            }]
        );
    }
}
