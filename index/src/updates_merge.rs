//! How the kept writer of updates merges the small segments that every write's commit makes:
//! in tiers of fixed size, so that a merge rewrites about what the writes since the last one
//! added, never again and again one segment of thousands of documents (docs/decisions.md, D-227).

use tantivy::index::{SegmentId, SegmentMeta};
use tantivy::indexer::{LogMergePolicy, MergeCandidate, MergePolicy};

/// The tiers of small segments, by live documents: each holds the segments below its bound and
/// above the previous tier's, and is merged whole once it holds the count given. Four of a few
/// documents each merge in milliseconds; the segments a first tier's merges make (from 256
/// documents) wait for six of their kind.
const TIERS: [(u32, usize); 2] = [(256, 4), (10_000, 6)];

/// Segments of at least the last tier's bound are merged as tantivy's own policy merges them:
/// those of similar sizes, eight at a time.
#[derive(Debug, Default)]
pub struct UpdatesMergePolicy {
    larger: LogMergePolicy,
}

impl MergePolicy for UpdatesMergePolicy {
    fn compute_merge_candidates(&self, segments: &[SegmentMeta]) -> Vec<MergeCandidate> {
        let mut candidates = Vec::new();
        let mut floor = 0;
        for (below, merged_at) in TIERS {
            let tier: Vec<SegmentId> = segments
                .iter()
                .filter(|segment| (floor..below).contains(&segment.num_docs()))
                .map(SegmentMeta::id)
                .collect();
            if tier.len() >= merged_at {
                candidates.push(MergeCandidate(tier));
            }
            floor = below;
        }
        let larger: Vec<SegmentMeta> = segments
            .iter()
            .filter(|segment| segment.num_docs() >= floor)
            .cloned()
            .collect();
        candidates.extend(self.larger.compute_merge_candidates(&larger));
        candidates
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::schema::{Schema, INDEXED};
    use tantivy::Index;

    /// The merges the policy asks for among segments of `sizes` documents, each as its sizes
    /// in the order given.
    fn merges(sizes: &[u32]) -> Vec<Vec<u32>> {
        let mut schema = Schema::builder();
        schema.add_u64_field("id", INDEXED);
        let index = Index::create_in_ram(schema.build());
        let metas: Vec<SegmentMeta> = sizes
            .iter()
            .map(|&size| index.new_segment_meta(SegmentId::generate_random(), size))
            .collect();
        let size_of = |id: &SegmentId| {
            metas
                .iter()
                .find(|meta| meta.id() == *id)
                .map(SegmentMeta::num_docs)
        };
        UpdatesMergePolicy::default()
            .compute_merge_candidates(&metas)
            .into_iter()
            .map(|candidate| candidate.0.iter().filter_map(size_of).collect())
            .collect()
    }

    #[test]
    fn a_segment_of_thousands_is_not_merged_again_with_every_few_small_ones() {
        // tantivy's default merged the 9,000 with the seven small ones: every document below
        // 10,000 counted as 10,000, so the largest small segment was rewritten with every
        // seventh write.
        assert_eq!(
            merges(&[1_000_000, 9_000, 3, 2, 5, 4]),
            vec![vec![3, 2, 5, 4]]
        );
        assert!(merges(&[1_000_000, 9_000, 3, 2, 5]).is_empty());
    }

    #[test]
    fn the_segments_made_by_merging_small_ones_wait_for_six_of_their_kind() {
        assert!(merges(&[300, 400, 2_000, 9_999, 600]).is_empty());
        assert_eq!(
            merges(&[300, 400, 2_000, 9_999, 600, 256]),
            vec![vec![300, 400, 2_000, 9_999, 600, 256]]
        );
    }

    #[test]
    fn larger_segments_are_merged_as_tantivys_policy_merges_them() {
        let similar = [20_000; 8];
        assert_eq!(merges(&similar), vec![similar.to_vec()]);
        assert!(merges(&[20_000, 20_000, 1_000_000, 10_000]).is_empty());
    }
}
