//! The places a replica spent from its place block, by time: a block allows its places per
//! burst window (any [`BURST_WINDOW_MS`]), not once, so it can be held for several windows.

use crate::state::BURST_WINDOW_MS;

/// Spends are counted in slots of this many ms.
const SLOT_MS: i64 = 100;
/// Enough slots to cover a window and the slot it starts in.
const SLOTS: usize = (BURST_WINDOW_MS / SLOT_MS) as usize + 1;

/// Places spent per slot, by slot number modulo [`SLOTS`].
#[derive(Default)]
pub struct Spends([(i64, u64); SLOTS]);

impl Spends {
    pub fn add(&mut self, now_ms: i64) {
        let slot = now_ms.div_euclid(SLOT_MS);
        let cell = &mut self.0[slot.rem_euclid(SLOTS as i64) as usize];
        if cell.0 != slot {
            *cell = (slot, 0);
        }
        cell.1 += 1;
    }

    /// The places spent in the window that ends at `at_ms`, counted by whole slots: never fewer
    /// than the window holds (the store counts a closed block's spends as taken at its last
    /// one; the limit is checked against this), at most a slot's worth more.
    pub fn in_window(&self, at_ms: i64) -> u64 {
        let slot = at_ms.div_euclid(SLOT_MS);
        self.0.iter().filter(|(s, _)| *s <= slot && *s > slot - SLOTS as i64).map(|(_, n)| n).sum()
    }

    pub fn clear(&mut self) {
        *self = Self::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_counts_at_least_what_it_holds() {
        let mut spends = Spends::default();
        // Spends every 7 ms over 5 s: any window ending at a spend counts at least the spends
        // whose time is within BURST_WINDOW_MS before it, and at most a slot's more.
        let times: Vec<i64> = (0..700).map(|i| 1_000_000 + i * 7).collect();
        for (i, &t) in times.iter().enumerate() {
            spends.add(t);
            let held = times[..=i].iter().filter(|&&s| s > t - BURST_WINDOW_MS).count() as u64;
            let slack = times[..=i].iter().filter(|&&s| s > t - BURST_WINDOW_MS - SLOT_MS).count() as u64;
            let counted = spends.in_window(t);
            assert!(counted >= held && counted <= slack, "at {t}: counted {counted}, held {held}, slack {slack}");
        }
        spends.clear();
        assert_eq!(spends.in_window(times[699]), 0);
    }
}
