//! Which models each recent write of the duplicate finder's pairs or dismissals touched, kept in
//! memory by the process that holds the store, so that the groups read after a merge are joined
//! again around those models only instead of around a million.

use crate::domain::ModelId;
use std::collections::VecDeque;

/// Models remembered in all: a write touching more (a full pass) leaves a gap, and readers
/// join every group again instead.
const KEEP_MODELS: usize = 100_000;

/// The models touched per duplicates generation, oldest first, consecutive generations.
#[derive(Debug, Default)]
pub(super) struct TouchLog {
    entries: VecDeque<(u64, Vec<ModelId>)>,
    models: usize,
}

impl TouchLog {
    /// Notes that the write of duplicates generation `generation` touches `models`. Written
    /// before the write is applied, so a reader that sees the generation finds its entry; a
    /// write that then fails leaves an entry the next write of that generation adds to, and a
    /// few models too many only cost a little regrouping.
    pub(super) fn record(&mut self, generation: u64, models: impl IntoIterator<Item = ModelId>) {
        let before = match self.entries.back_mut() {
            Some((at, ids)) if *at == generation => ids.len(),
            _ => {
                if self.entries.back().is_some_and(|(at, _)| *at > generation) {
                    // Generations only grow in one process: anything else is a store replaced
                    // under it, and what was noted before says nothing about it.
                    self.clear();
                }
                self.entries.push_back((generation, Vec::new()));
                0
            }
        };
        if let Some((_, ids)) = self.entries.back_mut() {
            ids.extend(models);
            self.models += ids.len() - before;
        }
        while self.models > KEEP_MODELS {
            match self.entries.pop_front() {
                Some((_, ids)) => self.models -= ids.len(),
                None => break,
            }
        }
    }

    /// Every model touched by the writes after generation `after` up to `upto`, sorted and
    /// each once; `None` when a write in between is not in the log (not written by this
    /// process since it opened the store, or too large to keep).
    pub(super) fn touched_between(&self, after: u64, upto: u64) -> Option<Vec<ModelId>> {
        let mut expected = after + 1;
        let mut touched = Vec::new();
        for (generation, ids) in self
            .entries
            .iter()
            .filter(|(g, _)| *g > after && *g <= upto)
        {
            if *generation != expected {
                return None;
            }
            touched.extend_from_slice(ids);
            expected += 1;
        }
        if expected != upto + 1 {
            return None;
        }
        touched.sort_unstable();
        touched.dedup();
        Some(touched)
    }

    fn clear(&mut self) {
        self.entries.clear();
        self.models = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(raw: &[u64]) -> Vec<ModelId> {
        raw.iter().copied().map(ModelId).collect()
    }

    #[test]
    fn the_models_of_every_write_in_between_each_once() {
        let mut log = TouchLog::default();
        log.record(1, ids(&[5, 3]));
        log.record(2, ids(&[3, 9]));
        log.record(3, ids(&[1]));
        assert_eq!(log.touched_between(0, 3), Some(ids(&[1, 3, 5, 9])));
        assert_eq!(log.touched_between(1, 2), Some(ids(&[3, 9])));
        assert_eq!(log.touched_between(3, 3), Some(Vec::new()));
    }

    #[test]
    fn a_write_not_in_the_log_is_a_gap() {
        let mut log = TouchLog::default();
        log.record(4, ids(&[1]));
        log.record(5, ids(&[2]));
        assert_eq!(log.touched_between(2, 5), None, "generation 3 is unknown");
        assert_eq!(log.touched_between(4, 6), None, "generation 6 is unknown");
        assert_eq!(log.touched_between(3, 5), Some(ids(&[1, 2])));
    }

    #[test]
    fn a_failed_write_and_its_retry_share_an_entry() {
        let mut log = TouchLog::default();
        log.record(1, ids(&[1]));
        log.record(1, ids(&[2]));
        assert_eq!(log.touched_between(0, 1), Some(ids(&[1, 2])));
    }

    #[test]
    fn a_write_too_large_to_keep_leaves_a_gap() {
        let mut log = TouchLog::default();
        log.record(1, ids(&[1]));
        log.record(2, (0..KEEP_MODELS as u64 + 1).map(ModelId));
        log.record(3, ids(&[7]));
        assert_eq!(log.touched_between(0, 3), None);
        assert_eq!(log.touched_between(2, 3), Some(ids(&[7])));
    }
}
