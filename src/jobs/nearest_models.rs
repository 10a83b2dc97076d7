//! The catalogue models nearest to a group of unmatched listings (a `/reconciliation` group's
//! `candidates`): models of the group's brand found in the catalogue index by the group's
//! reference as a prefix, by its base reference, and by the words of its titles, each scored
//! by string similarity (`strsim`). Read-only: the back office shows them, an admin links one.

use super::reconciliation::ReconcileError;
use super::unmatched_groups::ShownGroup;
use crate::domain::{BrandId, Model, ModelId};
use crate::store::Store;
use catalogue_index::{CatalogueIndex, GenerationCache, ModelText};
use std::collections::BTreeMap;
use std::sync::Arc;

/// What the store and the catalogue index are read through.
type Result<T> = std::result::Result<T, ReconcileError>;

/// A model near a group: how near (0 to 1) and what found it.
#[derive(Debug, Clone)]
pub struct NearModel {
    pub model: Model,
    pub signal: Signal,
    pub score: f64,
}

/// Candidates shown per group at most.
pub const CANDIDATES_SHOWN: usize = 5;
/// Models each signal takes from the index at most.
const PER_SIGNAL: usize = 20;
/// Distinct titles of a group's newest listings its names are scored against (of the newest
/// its summary names).
const TITLES_SCORED: usize = 10;
/// Shortest reference prefix the index holds.
const MIN_PREFIX: usize = catalogue_index::MIN_REFERENCE_PREFIX;

/// What found a candidate, strongest first: a tie in score goes to the stronger signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Signal {
    /// A reference of the model begins with the group's reference (or is it).
    ReferencePrefix,
    /// A reference of the model begins with the group's base reference: the group's reference
    /// up to the end of its first run of digits (`16610` of `16610lv`).
    BaseReference,
    /// The model's name or series shares words with the group's titles.
    Name,
}

impl Signal {
    pub fn as_str(self) -> &'static str {
        match self {
            Signal::ReferencePrefix => "referencePrefix",
            Signal::BaseReference => "baseReference",
            Signal::Name => "name",
        }
    }
}

/// What a page shows of a group beyond its kept tally: the distinct titles of its newest
/// listings (read once, for the page's examples and the candidates' name scores) and the
/// models nearest to it.
#[derive(Debug, Clone)]
pub struct GroupSample {
    pub titles: Vec<String>,
    pub candidates: Vec<NearModel>,
}

/// `group`'s titles and nearest models, the models taken from `kept` when the same brand,
/// reference and titles were worked out at the index's model text edition.
pub fn sample(
    store: &Store,
    index: &CatalogueIndex,
    kept: &KeptCandidates,
    group: &ShownGroup,
) -> Result<GroupSample> {
    let titles = group.example_titles(TITLES_SCORED);
    let Some(brand) = group.tally.brand() else {
        return Ok(GroupSample {
            titles,
            candidates: Vec::new(),
        });
    };
    let inputs = CandidateInputs {
        brand,
        reference: group.identity().reference.clone(),
        titles,
    };
    let candidates = kept.nearest(store, index, &inputs)?;
    Ok(GroupSample {
        titles: inputs.titles,
        candidates,
    })
}

/// What a group's candidates are worked out from: its brand, its reference and the titles of
/// its newest listings. Two groups alike in these have the same candidates.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct CandidateInputs {
    brand: BrandId,
    reference: Option<String>,
    titles: Vec<String>,
}

/// A candidate as ranked and kept: its model by id (read when shown, so a picture or a
/// listing count is never stale), what found it, its score.
#[derive(Debug, Clone, Copy)]
struct Ranked {
    model: ModelId,
    signal: Signal,
    score: f64,
}

/// Groups' candidates kept per model text edition of the catalogue index (D-180): a link,
/// a match or an ingest leaves the models' words as they were, so the page an admin reloads
/// after resolving one group works out only the group that came in, not all fifty. At most
/// [`KEPT_GROUPS`] are kept, then it starts again.
pub struct KeptCandidates(GenerationCache<CandidateInputs, Arc<[Ranked]>>);

/// Groups whose candidates are kept at most (about two kilobytes each: the titles, and up to
/// sixty models ranked): four hundred pages of fifty.
const KEPT_GROUPS: usize = 20_000;

impl Default for KeptCandidates {
    fn default() -> KeptCandidates {
        KeptCandidates(GenerationCache::holding_at_most(KEPT_GROUPS))
    }
}

impl KeptCandidates {
    /// The models nearest to what `inputs` describe, ranked as kept or else worked out and
    /// kept, the first [`CANDIDATES_SHOWN`] the store holds read.
    fn nearest(
        &self,
        store: &Store,
        index: &CatalogueIndex,
        inputs: &CandidateInputs,
    ) -> Result<Vec<NearModel>> {
        // Read before the search: a commit meanwhile moves it, so what is kept under it is
        // never asked for again.
        let edition = index.model_text_edition();
        let ranked = match self.0.get(edition, inputs) {
            Some(ranked) => ranked,
            None => {
                let ranked: Arc<[Ranked]> = ranked_models(store, index, inputs)?.into();
                self.0.keep(edition, inputs.clone(), ranked.clone());
                ranked
            }
        };
        shown(store, &ranked)
    }
}

/// Every model the signals find for `inputs`, ranked, its name scored against its titles on
/// the words the index holds of it: none is read from the store (D-181).
fn ranked_models(
    store: &Store,
    index: &CatalogueIndex,
    inputs: &CandidateInputs,
) -> Result<Vec<Ranked>> {
    let brand = inputs.brand;
    let mut found = Found::default();
    if let Some(reference) = inputs.reference.as_deref() {
        found.add(
            models_with_prefix(index, brand.0, reference)?,
            Signal::ReferencePrefix,
        );
        if let Some(base) = base_reference(reference) {
            found.add(
                models_with_prefix(index, brand.0, base)?,
                Signal::BaseReference,
            );
        }
    }
    let named = index.models_named_like(brand.0, &inputs.titles.join(" "), PER_SIGNAL)?;
    found.add(named, Signal::Name);
    let brand_name = store
        .catalogue()
        .brand(brand)?
        .map(|b| b.name.to_lowercase())
        .unwrap_or_default();
    let scores = Scores {
        reference: inputs.reference.as_deref(),
        titles: inputs
            .titles
            .iter()
            .map(|t| Bigrams::of(&t.to_lowercase()))
            .collect(),
        brand_name,
    };
    let texts = index.model_texts(&found.ids())?;
    Ok(found.ranked(&texts, &scores))
}

/// The first [`CANDIDATES_SHOWN`] of `ranked` that the store holds, read.
fn shown(store: &Store, ranked: &[Ranked]) -> Result<Vec<NearModel>> {
    let mut shown = Vec::with_capacity(CANDIDATES_SHOWN);
    for candidate in ranked {
        if shown.len() == CANDIDATES_SHOWN {
            break;
        }
        if let Some(model) = store.catalogue().model(candidate.model)? {
            shown.push(NearModel {
                model,
                signal: candidate.signal,
                score: candidate.score,
            });
        }
    }
    Ok(shown)
}

/// The ids of the brand's models with a reference beginning with `prefix`.
fn models_with_prefix(index: &CatalogueIndex, brand: u64, prefix: &str) -> Result<Vec<u64>> {
    if prefix.chars().count() < MIN_PREFIX {
        return Ok(Vec::new());
    }
    Ok(index.models_with_reference_prefix(brand, prefix, PER_SIGNAL)?)
}

/// What a candidate is scored against: the group's reference (normalised) for the reference
/// signals, its titles' bigrams and its brand's name (lowercased) for the name signal.
struct Scores<'a> {
    reference: Option<&'a str>,
    titles: Vec<Bigrams>,
    brand_name: String,
}

impl Scores<'_> {
    fn of(&self, signal: Signal, model: &ModelText) -> f64 {
        match (signal, self.reference) {
            (Signal::Name, _) => name_similarity(&self.titles, &self.brand_name, model),
            (_, Some(reference)) => reference_similarity(reference, model),
            (_, None) => 0.0,
        }
    }
}

/// The models the signals found, each with the signals that found it, strongest first.
#[derive(Default)]
struct Found(BTreeMap<u64, Vec<Signal>>);

impl Found {
    fn add(&mut self, ids: Vec<u64>, signal: Signal) {
        for id in ids {
            self.0.entry(id).or_default().push(signal);
        }
    }

    fn ids(&self) -> Vec<u64> {
        self.0.keys().copied().collect()
    }

    /// Each model of `texts` at its best score (a tie goes to the stronger signal), ranked:
    /// highest score, then strongest signal, then id.
    fn ranked(&self, texts: &[ModelText], scores: &Scores) -> Vec<Ranked> {
        let mut ranked: Vec<Ranked> = texts
            .iter()
            .filter_map(|text| {
                let signals = self.0.get(&text.id)?;
                let mut best: Option<Ranked> = None;
                for &signal in signals {
                    let score = scores.of(signal, text);
                    if best.is_none_or(|b| score > b.score) {
                        best = Some(Ranked {
                            model: ModelId(text.id),
                            signal,
                            score,
                        });
                    }
                }
                best
            })
            .collect();
        ranked.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then(a.signal.cmp(&b.signal))
                .then(a.model.cmp(&b.model))
        });
        ranked
    }
}

/// `reference` up to the end of its first run of digits, when that is shorter than it:
/// `16610` of `16610lv`, `m79030` of `m79030n0001`.
fn base_reference(reference: &str) -> Option<&str> {
    let digits_start = reference.find(|c: char| c.is_ascii_digit())?;
    let digits_end = reference[digits_start..]
        .find(|c: char| !c.is_ascii_digit())
        .map_or(reference.len(), |end| digits_start + end);
    (digits_end < reference.len()).then(|| &reference[..digits_end])
}

/// How close `reference` (normalised) is to the nearest of the model's references.
fn reference_similarity(reference: &str, model: &ModelText) -> f64 {
    model
        .references
        .iter()
        .map(|r| strsim::normalized_levenshtein(reference, r))
        .fold(0.0, f64::max)
}

/// How close the nearest of `titles` is to the model's brand and name (both lowercased), as
/// bigrams of characters (Sørensen–Dice).
fn name_similarity(titles: &[Bigrams], brand: &str, model: &ModelText) -> f64 {
    let name = Bigrams::of(&format!("{brand} {}", model.name));
    titles
        .iter()
        .map(|title| title.dice(&name))
        .fold(0.0, f64::max)
}

/// A text's character bigrams, whitespace dropped, sorted: `strsim::sorensen_dice`'s measure
/// with each side's bigrams made once, where strsim builds a map of both sides on every call
/// (a group's ten titles against up to sixty models made it a fifth of a page's time).
struct Bigrams {
    text: String,
    pairs: Vec<(char, char)>,
}

impl Bigrams {
    fn of(text: &str) -> Bigrams {
        let text: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let mut pairs: Vec<(char, char)> = text.chars().zip(text.chars().skip(1)).collect();
        pairs.sort_unstable();
        Bigrams { text, pairs }
    }

    /// `strsim::sorensen_dice` of the two texts, to the bit (lengths in bytes, as strsim's).
    fn dice(&self, other: &Bigrams) -> f64 {
        if self.text == other.text {
            return 1.0;
        }
        if self.text.len() < 2 || other.text.len() < 2 {
            return 0.0;
        }
        let common = common_count(&self.pairs, &other.pairs);
        (2 * common) as f64 / (self.text.len() + other.text.len() - 2) as f64
    }
}

/// How many items two sorted lists share, repeats counted as often as both hold them.
fn common_count<T: Ord>(a: &[T], b: &[T]) -> usize {
    let (mut i, mut j, mut common) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    common
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_base_reference_ends_with_the_first_run_of_digits() {
        assert_eq!(base_reference("16610lv"), Some("16610"));
        assert_eq!(base_reference("m79030n0001"), Some("m79030"));
        assert_eq!(base_reference("16610"), None);
        assert_eq!(base_reference("abc"), None);
    }

    proptest::proptest! {
        #[test]
        fn dice_of_bigrams_is_strsims(a in "[ aAbé\\t]{0,12}", b in "[ aAbé\\t]{0,12}") {
            let ours = Bigrams::of(&a).dice(&Bigrams::of(&b));
            proptest::prop_assert_eq!(ours.to_bits(), strsim::sorensen_dice(&a, &b).to_bits());
        }
    }

    #[test]
    fn dice_matches_strsim_on_titles() {
        let title = "rolex submariner date 126610ln box & papers";
        for name in ["rolex submariner date", "rolex datejust 41", "omega", ""] {
            let ours = Bigrams::of(title).dice(&Bigrams::of(name));
            assert_eq!(ours, strsim::sorensen_dice(title, name), "{name}");
        }
    }

    #[test]
    fn stronger_signals_sort_first() {
        assert!(Signal::ReferencePrefix < Signal::BaseReference);
        assert!(Signal::BaseReference < Signal::Name);
    }
}
