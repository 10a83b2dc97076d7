//! Calibres on the shared import skeleton, with one step between claiming and building, so that
//! a dataset may list them in any order: `parent` is resolved against the whole file and the
//! store, and parent cycles are refused, naming every calibre on them.

use super::kinds::{in_brand, stamped_record, Claim, Claimed, Key, Kind};
use super::rows::CaliberRow;
use super::{ImportResult, KindCounts, Rows, Run};
use crate::domain::{normalize_reference, BrandId, Caliber, CaliberId, Timestamp};
use crate::store::{RecordKind, Store, StoreResult, WriteBatch};
use std::collections::{HashMap, HashSet};
use std::hash::Hash;

impl Kind for Caliber {
    type Row = CaliberRow;
    type Checked = BrandId;
    const FILE: &'static str = "calibers.jsonl";
    const RECORD: RecordKind = RecordKind::Caliber;
    const NOUN: &'static str = "calibre";

    /// Everything but the parent, which may come later in the file.
    fn check(run: &mut Run<'_>, row: &CaliberRow) -> ImportResult<Option<(Key, BrandId)>> {
        let slug = run.slug("slug", &row.slug);
        let brand = run.brand("brand", &row.brand)?;
        let has_reference = run.required_text("reference", &row.reference)
            && !normalize_reference(&row.reference).is_empty();
        let (Some(slug), Some(brand), true) = (slug, brand, has_reference) else {
            return Ok(None);
        };
        Ok(Some(((Some(brand), slug), brand)))
    }
    fn brand_text(row: &CaliberRow) -> Option<&str> {
        Some(&row.brand)
    }
    fn stored(store: &Store, key: &Key) -> StoreResult<Option<Caliber>> {
        in_brand(key, |brand, slug| {
            store.catalogue().caliber_by_slug(brand, slug)
        })
    }
    stamped_record!();
    fn build(
        run: &mut Run<'_>,
        row: CaliberRow,
        brand: BrandId,
        claim: &Claim<Caliber>,
    ) -> ImportResult<Option<Caliber>> {
        let mut complication_ids = Vec::new();
        for slug in &row.complications {
            if let Some(id) = run.complication("complications", slug)? {
                complication_ids.push(id);
            }
        }
        let id = CaliberId(claim.id);
        // No parent entry: the parent named nothing, a problem already recorded.
        let Some(&parent_id) = run.caliber_parents.get(&id) else {
            return Ok(None);
        };
        Ok(Some(Caliber {
            id,
            brand_id: brand,
            slug: claim.key.1.clone(),
            reference: row.reference,
            name: row.name,
            kind: row.kind,
            parent_id,
            diameter: row.diameter,
            height: row.height,
            jewels: row.jewels,
            frequency: row.frequency,
            power_reserve: row.power_reserve,
            complication_ids,
            created_at: claim.created_at,
            updated_at: claim.updated_at,
        }))
    }
    fn put(batch: &mut WriteBatch<'_>, old: Option<&Caliber>, new: &Caliber) {
        batch.put_caliber(old, new);
    }
}

impl Run<'_> {
    /// Calibres in three steps: every line claims its slug and id, then every `parent` is
    /// resolved against the whole file and the store and parent cycles are refused, then the
    /// records are built.
    pub(super) fn calibers(&mut self, rows: Rows<CaliberRow>) -> ImportResult<KindCounts> {
        let claimed = self.claim::<Caliber>(rows)?;
        let mut parents = HashMap::with_capacity(claimed.len());
        for line in &claimed {
            self.at(Caliber::FILE, line.line);
            let id = CaliberId(line.claim.id);
            match &line.row.parent {
                Some(parent) => {
                    if let Some(parent) = self.caliber_ref("parent", parent)? {
                        parents.insert(id, Some(parent));
                    }
                }
                None => {
                    parents.insert(id, None);
                }
            }
        }
        if self.refuse_parent_cycles(&claimed, &parents)? {
            return Ok(KindCounts::default());
        }
        self.caliber_parents = parents;
        self.settle::<Caliber>(claimed)
    }

    /// Records one problem per parent cycle, at the line of its first calibre in the file;
    /// true when there was any. A cycle may run through calibres of the store that this
    /// import re-parents.
    fn refuse_parent_cycles(
        &mut self,
        claimed: &[Claimed<Caliber>],
        parents: &HashMap<CaliberId, Option<CaliberId>>,
    ) -> ImportResult<bool> {
        let starts: Vec<CaliberId> = claimed.iter().map(|c| CaliberId(c.claim.id)).collect();
        let store = self.store;
        let cycles = parent_cycles(&starts, |id| match parents.get(&id) {
            Some(parent) => Ok(*parent),
            None => store
                .catalogue()
                .caliber(id)
                .map(|c| c.and_then(|c| c.parent_id)),
        })?;
        let lines: HashMap<CaliberId, (usize, String)> = claimed
            .iter()
            .map(|c| {
                let name = format!("{}/{}", c.row.brand, c.claim.key.1);
                (CaliberId(c.claim.id), (c.line, name))
            })
            .collect();
        for cycle in &cycles {
            let mut names = Vec::with_capacity(cycle.len() + 1);
            for id in cycle.iter().chain(cycle.first()) {
                names.push(match lines.get(id) {
                    Some((_, name)) => name.clone(),
                    None => self.stored_caliber_name(*id)?,
                });
            }
            let line = cycle
                .first()
                .and_then(|id| lines.get(id))
                .map_or(0, |(line, _)| *line);
            self.at(Caliber::FILE, line);
            let path = names.join(" -> ");
            self.problem(
                "parent",
                match cycle.len() {
                    1 => format!("a calibre cannot be its own parent: {path}"),
                    _ => format!("parent cycle: {path}"),
                },
            );
        }
        Ok(!cycles.is_empty())
    }

    /// `brandSlug/caliberSlug` of a calibre the store holds.
    fn stored_caliber_name(&self, id: CaliberId) -> ImportResult<String> {
        let Some(caliber) = self.store.catalogue().caliber(id)? else {
            return Ok(format!("calibre #{}", id.0));
        };
        let brand = self.store.catalogue().brand(caliber.brand_id)?;
        Ok(match brand {
            Some(brand) => format!("{}/{}", brand.slug, caliber.slug),
            None => caliber.slug.to_string(),
        })
    }
}

/// Every cycle that following `parent_of` from `starts` runs into, each once, as its members in
/// parent order beginning with the one that comes first in `starts`. A chain that ends, or
/// joins one already walked, is no cycle.
pub fn parent_cycles<K, E>(
    starts: &[K],
    mut parent_of: impl FnMut(K) -> Result<Option<K>, E>,
) -> Result<Vec<Vec<K>>, E>
where
    K: Copy + Eq + Hash,
{
    let order: HashMap<K, usize> = starts.iter().enumerate().map(|(i, k)| (*k, i)).collect();
    let mut walked: HashSet<K> = HashSet::new();
    let mut cycles = Vec::new();
    for &start in starts {
        let mut path = vec![start];
        let mut on_path: HashMap<K, usize> = HashMap::from([(start, 0)]);
        let mut current = start;
        while !walked.contains(&current) {
            let Some(parent) = parent_of(current)? else {
                break;
            };
            if let Some(&at) = on_path.get(&parent) {
                cycles.push(rotate_to_first(&path[at..], &order));
                break;
            }
            on_path.insert(parent, path.len());
            path.push(parent);
            current = parent;
        }
        walked.extend(path);
    }
    Ok(cycles)
}

/// The cycle turned to begin with its member that comes first in the file.
fn rotate_to_first<K: Copy + Eq + Hash>(cycle: &[K], order: &HashMap<K, usize>) -> Vec<K> {
    let first = (0..cycle.len())
        .min_by_key(|&i| order.get(&cycle[i]).copied().unwrap_or(usize::MAX))
        .unwrap_or(0);
    cycle[first..]
        .iter()
        .chain(&cycle[..first])
        .copied()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::parent_cycles;
    use proptest::prelude::*;
    use std::collections::HashMap;

    fn cycles(parents: &[(u32, u32)], starts: &[u32]) -> Vec<Vec<u32>> {
        let map: HashMap<u32, u32> = parents.iter().copied().collect();
        parent_cycles::<u32, ()>(starts, |k| Ok(map.get(&k).copied())).expect("no error")
    }

    #[test]
    fn chains_that_end_are_no_cycle() {
        assert!(cycles(&[(1, 2), (2, 3)], &[1, 2, 3]).is_empty());
    }

    #[test]
    fn a_self_parent_is_a_cycle_of_one() {
        assert_eq!(cycles(&[(1, 1)], &[1]), vec![vec![1]]);
    }

    #[test]
    fn each_cycle_is_named_once_from_its_first_member() {
        // 5 leads into the cycle 2 -> 3 -> 4 -> 2 but is not on it.
        let found = cycles(&[(5, 3), (2, 3), (3, 4), (4, 2)], &[5, 3, 2, 4]);
        assert_eq!(found, vec![vec![3, 4, 2]]);
    }

    #[test]
    fn two_cycles_are_two_problems() {
        let found = cycles(&[(1, 2), (2, 1), (3, 3)], &[1, 2, 3]);
        assert_eq!(found, vec![vec![1, 2], vec![3]]);
    }

    proptest! {
        /// A forest (every parent smaller than its child) never has a cycle, and adding one
        /// edge back from a node to one of its descendants always makes exactly one.
        #[test]
        fn forests_have_none_and_one_back_edge_makes_one(
            raw in proptest::collection::vec(0u32..1000, 1..40),
            pick in 0usize..1000,
        ) {
            let parents: Vec<(u32, u32)> = raw
                .iter()
                .enumerate()
                .skip(1)
                .map(|(i, r)| (i as u32, r % i as u32))
                .collect();
            let starts: Vec<u32> = (0..raw.len() as u32).rev().collect();
            prop_assert!(cycles(&parents, &starts).is_empty());
            let leaf = (pick % raw.len()) as u32;
            let mut with_back_edge = parents.clone();
            with_back_edge.push((0, leaf));
            let found = cycles(&with_back_edge, &starts);
            prop_assert_eq!(found.len(), 1);
            prop_assert!(found[0].contains(&0) && found[0].contains(&leaf));
        }
    }
}
