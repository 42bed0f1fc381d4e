//! The pages a calibration sees, in bounded memory: [`PageSummary`] gathers
//! (planning rate, importance) pairs as [`WeightedPage`]s, identical pairs
//! counted once, and when too many distinct pairs come it merges pairs
//! whose values agree to a few significant bits. Summaries merge, so each
//! part of a store can summarise its own pages.

use crate::hash::FastMap;

/// Pages that share a planning rate and an importance, as a calibration
/// sees them: the allocation functions weigh each by its `count`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WeightedPage {
    /// The pages' planning rate (changes per second).
    pub rate: f64,
    /// Their importance.
    pub importance: f64,
    /// How many pages.
    pub count: u64,
}

/// A page, or pages with the same values, as the allocation functions
/// take them: a (rate, importance) pair is one page, a [`WeightedPage`]
/// is `count` of them.
pub trait Weighted {
    /// The (rate, importance) pair.
    fn pair(&self) -> (f64, f64);
    /// How many pages have it.
    fn count(&self) -> f64;
}

impl Weighted for (f64, f64) {
    fn pair(&self) -> (f64, f64) {
        *self
    }

    fn count(&self) -> f64 {
        1.0
    }
}

impl Weighted for WeightedPage {
    fn pair(&self) -> (f64, f64) {
        (self.rate, self.importance)
    }

    fn count(&self) -> f64 {
        self.count as f64
    }
}

/// Distinct cells a summary holds at most before it merges close values:
/// with its hash map's overhead, about 11 MiB (twice that for a moment
/// while it merges).
pub const SUMMARY_CELLS: usize = 1 << 17;

/// Low bits of a value's f64 pattern dropped once a summary merges close
/// values: 8 significant bits are left, so values within 2^-8 (0.4%) of
/// each other share a cell, at most.
const MERGED_DROP: u32 = 52 - 8;

/// Pages gathered one at a time ([`PageSummary::add`]) or from other
/// summaries ([`PageSummary::merge`]), in at most [`SUMMARY_CELLS`] cells.
///
/// Up to that many distinct (rate, importance) pairs it is exact: a cell
/// per pair, with its count, so the allocation functions see the same
/// values as a list of every page would give them. Past it, each value
/// keeps only its leading significant bits (8 first, fewer if still too
/// many: at the last, only its sign), and a cell stands for its pages by
/// their count and their mean rate and importance: an allocation multiplier computed from it differs
/// from the exact one by a fraction of the cells' width (a second-order
/// error in it, well under 0.1%).
#[derive(Debug, Clone, Default)]
pub struct PageSummary {
    /// Low bits dropped from each value's f64 pattern (0: none, exact).
    drop: u32,
    cells: FastMap<(u64, u64), Cell>,
}

/// The pages of one cell.
#[derive(Debug, Clone, Copy, Default)]
struct Cell {
    count: u64,
    rate_sum: f64,
    importance_sum: f64,
}

impl Cell {
    /// Adds the pages of `other`.
    fn absorb(&mut self, other: Cell) {
        self.count += other.count;
        self.rate_sum += other.rate_sum;
        self.importance_sum += other.importance_sum;
    }
}

/// A value's f64 bit pattern `bits` without its `drop` low bits.
fn truncated(bits: u64, drop: u32) -> u64 {
    (bits >> drop) << drop
}

impl PageSummary {
    /// An empty summary.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one page.
    pub fn add(&mut self, rate: f64, importance: f64) {
        self.add_cell(
            (rate.to_bits(), importance.to_bits()),
            Cell {
                count: 1,
                rate_sum: rate,
                importance_sum: importance,
            },
        );
    }

    /// Adds every page of `other`.
    pub fn merge(&mut self, other: &PageSummary) {
        if other.drop > self.drop {
            self.coarsen(other.drop);
        }
        for (&bits, cell) in &other.cells {
            self.add_cell(bits, *cell);
        }
    }

    /// Pages added, in all.
    pub fn count(&self) -> u64 {
        self.cells.values().map(|c| c.count).sum()
    }

    /// Whether no page was added.
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// Whether it holds every distinct pair as added (no close values
    /// merged).
    pub fn is_exact(&self) -> bool {
        self.drop == 0
    }

    /// The pages, a [`WeightedPage`] per cell, in the order of their values
    /// (not of the map's). Exact, a calibration is a function of the pages
    /// whatever order they came in; once close values are merged, a cell's
    /// mean may differ in its last bits with that order.
    pub fn pages(&self) -> Vec<WeightedPage> {
        let mut keys: Vec<_> = self.cells.iter().collect();
        keys.sort_unstable_by_key(|(k, _)| **k);
        keys.into_iter()
            .map(|(&(r, i), c)| {
                let (rate, importance) = if self.is_exact() {
                    (f64::from_bits(r), f64::from_bits(i))
                } else {
                    let n = c.count as f64;
                    (c.rate_sum / n, c.importance_sum / n)
                };
                WeightedPage {
                    rate,
                    importance,
                    count: c.count,
                }
            })
            .collect()
    }

    /// Adds `cell`'s pages under the values whose bit patterns are `bits`.
    fn add_cell(&mut self, bits: (u64, u64), cell: Cell) {
        let key = (truncated(bits.0, self.drop), truncated(bits.1, self.drop));
        self.cells.entry(key).or_default().absorb(cell);
        if self.cells.len() > SUMMARY_CELLS {
            self.coarsen(self.drop.max(MERGED_DROP - 1) + 1);
        }
    }

    /// Drops the `drop` low bits of every value (more when that still
    /// leaves more than [`SUMMARY_CELLS`] cells), merging the cells that
    /// then share a key.
    fn coarsen(&mut self, mut drop: u32) {
        loop {
            let mut merged: FastMap<(u64, u64), Cell> = FastMap::default();
            for (&(r, i), c) in &self.cells {
                let key = (truncated(r, drop), truncated(i, drop));
                merged.entry(key).or_default().absorb(*c);
            }
            self.drop = drop;
            self.cells = merged;
            // With 63 bits dropped only the signs are left: four cells at
            // most.
            if self.cells.len() <= SUMMARY_CELLS || drop >= 63 {
                return;
            }
            drop += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_pairs_share_a_cell_and_stay_exact() {
        let mut s = PageSummary::new();
        for _ in 0..3 {
            s.add(0.1, 0.5);
        }
        s.add(0.2, 0.5);
        assert!(s.is_exact());
        assert_eq!(s.count(), 4);
        assert_eq!(
            s.pages(),
            [
                WeightedPage {
                    rate: 0.1,
                    importance: 0.5,
                    count: 3
                },
                WeightedPage {
                    rate: 0.2,
                    importance: 0.5,
                    count: 1
                },
            ]
        );
    }

    /// Past its cap a summary merges close values: its size stays bounded,
    /// its count whole, and its cells' means within their width.
    #[test]
    fn too_many_distinct_pairs_merge_into_bounded_cells() {
        let mut s = PageSummary::new();
        let n = SUMMARY_CELLS as u64 * 3;
        let mut rate_total = 0.0;
        for k in 0..n {
            let rate = 1e-6 * (1.0 + k as f64 / n as f64);
            rate_total += rate;
            s.add(rate, 1.0 + (k % 7) as f64);
        }
        assert!(!s.is_exact());
        assert!(s.cells.len() <= SUMMARY_CELLS);
        assert_eq!(s.count(), n);
        let pages = s.pages();
        let total: f64 = pages.iter().map(|p| p.rate * p.count as f64).sum();
        assert!(
            (total - rate_total).abs() / rate_total < 1e-9,
            "{total} vs {rate_total}"
        );
        assert!(pages.iter().all(|p| (1e-6..=2e-6).contains(&p.rate)));
    }

    /// Values spread over every binade still fit: the summary drops bits
    /// until they do.
    #[test]
    fn values_over_every_binade_stay_bounded() {
        let mut s = PageSummary::new();
        let mut x = 1u64;
        for k in 0..(SUMMARY_CELLS as u64 * 2) {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            s.add(
                f64::from_bits(x >> 1),
                f64::from_bits((x.rotate_left(17)) >> 1),
            );
            assert!(s.cells.len() <= SUMMARY_CELLS, "{k}");
        }
        assert_eq!(s.count(), SUMMARY_CELLS as u64 * 2);
    }

    /// Merged summaries hold what one summary of every page holds.
    #[test]
    fn merging_is_adding() {
        let (mut a, mut b, mut all) = (PageSummary::new(), PageSummary::new(), PageSummary::new());
        for k in 0..1000u32 {
            let pair = (f64::from(k % 13) * 0.01, f64::from(k % 5));
            if k % 2 == 0 {
                a.add(pair.0, pair.1)
            } else {
                b.add(pair.0, pair.1)
            }
            all.add(pair.0, pair.1);
        }
        a.merge(&b);
        assert_eq!(a.pages(), all.pages());
    }
}
