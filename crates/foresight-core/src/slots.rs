//! Slot tables: records kept in a `Vec` and named by their index, with freed indices reused.
//!
//! The simulator and the engine name every live request by a `u32` index that travels through
//! the event queue or the kernel as a token; the record stays put while the token is out, and a
//! finished record leaves its index on a free list, so the table grows only to the most records
//! live at once.

/// Stores `value` in a free slot of `slots` (one listed in `free`), or in a new one at the end;
/// returns its index.
pub fn take_slot<T>(slots: &mut Vec<T>, free: &mut Vec<u32>, value: T) -> u32 {
    match free.pop() {
        Some(i) => {
            slots[i as usize] = value;
            i
        }
        None => {
            assert!(
                slots.len() < u32::MAX as usize,
                "slot table over {} entries",
                u32::MAX
            );
            slots.push(value);
            (slots.len() - 1) as u32
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_freed_slots_before_growing() {
        let (mut slots, mut free) = (Vec::new(), Vec::new());
        assert_eq!(take_slot(&mut slots, &mut free, Some('a')), 0);
        assert_eq!(take_slot(&mut slots, &mut free, Some('b')), 1);
        slots[0] = None;
        free.push(0);
        assert_eq!(take_slot(&mut slots, &mut free, Some('c')), 0);
        assert_eq!(slots, vec![Some('c'), Some('b')]);
        assert_eq!(take_slot(&mut slots, &mut free, Some('d')), 2);
    }
}
