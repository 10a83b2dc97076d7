//! The candidates of one query of a `/reconcile` batch, as the protocol shows them: the query
//! handed to the scoring service (`jobs::w3c_candidates`), its scored records turned into the
//! protocol's candidates (ids, types, features), best first, at most the query's limit.

use super::entity::{EntityId, EntityType};
use super::query_batch::Query;
use crate::api::error::ApiResult;
use crate::api::params::MAX_QUERY_CHARS;
use crate::api::views::w3c::{Candidate, Feature, FeatureValue};
use crate::app::App;
use crate::jobs::w3c_candidates::{self, CandidateQuery, Catalogue, Kind, Named, Scored};

/// The candidates of `query`, best first, at most its limit.
pub fn candidates(app: &App, query: &Query) -> ApiResult<Vec<Candidate>> {
    let asked = CandidateQuery {
        text: cut(&query.text),
        kind: match query.kind {
            EntityType::Model => Kind::Model,
            EntityType::Caliber => Kind::Caliber,
            EntityType::Brand => Kind::Brand,
        },
        limit: query.limit,
        clues: &query.clues,
    };
    let catalogue = Catalogue {
        store: app.store(),
        index: app.index(),
        brand_names: &app.kept().brand_names,
    };
    let mut found: Vec<Candidate> = w3c_candidates::candidates(catalogue, &asked)?
        .into_iter()
        .map(candidate_view)
        .collect();
    // Best first; equal scores by id, so answers are stable.
    found.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
    found.truncate(query.limit);
    Ok(found)
}

/// At most [`MAX_QUERY_CHARS`] characters of `text`: what a search reads.
fn cut(text: &str) -> &str {
    text.char_indices()
        .nth(MAX_QUERY_CHARS)
        .map_or(text, |(at, _)| &text[..at])
}

fn candidate_view(scored: Scored) -> Candidate {
    let id = match &scored.named {
        Named::Model { brand, model } => EntityId::model(brand, model),
        Named::Caliber { brand, caliber } => EntityId::caliber(brand, caliber),
        Named::Brand { brand } => EntityId::brand(brand),
    };
    Candidate {
        types: [id.kind.view()],
        id: id.to_string(),
        name: scored.name,
        score: scored.score,
        matched: scored.matched,
        description: scored.description,
        features: scored
            .features
            .into_iter()
            .map(|(id, value)| Feature {
                id,
                value: match value {
                    w3c_candidates::FeatureValue::Flag(flag) => FeatureValue::Flag(flag),
                    w3c_candidates::FeatureValue::Number(number) => FeatureValue::Number(number),
                },
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_is_cut_on_a_character_boundary() {
        let long = "é".repeat(MAX_QUERY_CHARS + 5);
        assert_eq!(cut(&long).chars().count(), MAX_QUERY_CHARS);
        assert_eq!(cut("Rolex"), "Rolex");
    }
}
