//! Values worked out from one generation (the index as one commit left it, or the store), kept
//! until the next, so that they are never stale: facet counts and the loose forms of a word
//! here, the brands and series the API names beside each model.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;

/// At most `most` values of the generation last asked for; when full, it starts again.
pub struct GenerationCache<K, V> {
    kept: Mutex<(u64, HashMap<K, V>)>,
    most: usize,
}

impl<K: Hash + Eq, V: Clone> GenerationCache<K, V> {
    pub fn holding_at_most(most: usize) -> GenerationCache<K, V> {
        GenerationCache {
            kept: Mutex::new((0, HashMap::new())),
            most,
        }
    }

    /// The value kept for `key` at `generation`.
    pub fn get(&self, generation: u64, key: &K) -> Option<V> {
        let kept = self.kept.lock().ok()?;
        (kept.0 == generation)
            .then(|| kept.1.get(key).cloned())
            .flatten()
    }

    /// Keeps `value` for `key` at `generation`, forgetting every value of another generation.
    pub fn keep(&self, generation: u64, key: K, value: V) {
        if let Ok(mut kept) = self.kept.lock() {
            if kept.0 != generation || kept.1.len() >= self.most {
                *kept = (generation, HashMap::new());
            }
            kept.1.insert(key, value);
        }
    }

    /// How many values are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.kept.lock().map_or(0, |kept| kept.1.len())
    }
}
