//! `groupBy` of `GET /listings/stats`: the groupings of what buyers pay for, their groups' keys
//! in a fixed order, and the model's listings of each group as the listings index splits them
//! (docs/decisions.md, D-206).

use super::error::ApiResult;
use super::params::{choice_schema, parse_choice};
use crate::domain::{BoxPapers, Condition};
use catalogue_index::{GroupedPrices, PriceGrouping, PricedListings};
use serde::Serialize;
use utoipa::openapi::{ObjectBuilder, SchemaType};

/// What `groupBy` splits the figures by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub enum StatsGrouping {
    /// The listing's condition: NEW, UNWORN, VERY_GOOD, GOOD, FAIR, POOR, then `unknown`.
    Condition,
    /// What comes with the watch: `fullSet`, `boxOnly`, `papersOnly`, `neither`, then `unknown`.
    BoxPapers,
}

/// The values of `groupBy`, as serde spells them (a test holds them to it).
const CHOICES: [(&str, StatsGrouping); 2] = [
    ("condition", StatsGrouping::Condition),
    ("boxPapers", StatsGrouping::BoxPapers),
];

/// The last group of every grouping: the listings whose seller did not say.
pub const UNKNOWN: &str = "unknown";

impl StatsGrouping {
    /// `groupBy`: `None` when absent; 400 naming the values otherwise.
    pub fn parse(value: Option<&str>) -> ApiResult<Option<StatsGrouping>> {
        parse_choice("groupBy", value, &CHOICES)
    }

    /// The index's split of a model's listings that this grouping reads.
    pub fn index_grouping(self) -> PriceGrouping {
        match self {
            StatsGrouping::Condition => PriceGrouping::Condition,
            StatsGrouping::BoxPapers => PriceGrouping::BoxPapers,
        }
    }

    /// Its groups in their order: each key with the index code of its listings, the code
    /// `reindex::listing_doc` gives; [`UNKNOWN`] last, for the listings without one.
    fn keys(self) -> Vec<(&'static str, Option<u64>)> {
        let known: Vec<(&'static str, Option<u64>)> = match self {
            StatsGrouping::Condition => (Condition::ALL.iter())
                .map(|&condition| (condition.as_str(), Some(condition as u64)))
                .collect(),
            StatsGrouping::BoxPapers => (BoxPapers::ALL.iter())
                .map(|&pair| (pair.as_str(), Some(pair as u64)))
                .collect(),
        };
        known.into_iter().chain([(UNKNOWN, None)]).collect()
    }
}

/// The listings of each group of `grouping`, in the groups' order, every group there (with
/// none when none of its listings are). A code no key names joins [`UNKNOWN`]: the groups
/// always hold every listing of `split`, once.
pub fn in_key_order(
    grouping: StatsGrouping,
    split: GroupedPrices,
) -> Vec<(&'static str, PricedListings)> {
    let keys = grouping.keys();
    let mut groups: Vec<(&'static str, PricedListings)> = (keys.iter())
        .map(|&(key, _)| (key, PricedListings::default()))
        .collect();
    let unknown = groups.len() - 1;
    for (code, listings) in split {
        let at = (keys.iter())
            .position(|&(_, known)| known.is_some() && known == code)
            .unwrap_or(unknown);
        let group = &mut groups[at].1;
        group.count += listings.count;
        group.priced.extend(listings.priced);
    }
    groups
}

/// The schema of `groupBy`, the parameter: what [`StatsGrouping::parse`] accepts.
pub fn grouping_schema() -> utoipa::openapi::Object {
    choice_schema(&CHOICES)
}

/// The schema of a group's `key`: every key of every grouping, said per grouping.
pub fn group_key_schema() -> utoipa::openapi::Object {
    let keys = (CHOICES.iter()).flat_map(|(_, grouping)| grouping.keys());
    let mut names: Vec<&str> = Vec::new();
    for (key, _) in keys {
        if !names.contains(&key) {
            names.push(key);
        }
    }
    ObjectBuilder::new()
        .schema_type(SchemaType::String)
        .enum_values(Some(names))
        .description(Some(
            "The group: with groupBy=condition one of NEW, UNWORN, VERY_GOOD, GOOD, FAIR, POOR \
             (as a listing's `condition`) or unknown (no condition); with groupBy=boxPapers one \
             of fullSet (box and papers), boxOnly, papersOnly, neither (no box, no papers) or \
             unknown (the seller did not say both).",
        ))
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parameter_and_the_echo_spell_the_groupings_alike() {
        for (name, grouping) in CHOICES {
            assert_eq!(serde_json::to_value(grouping).ok(), Some(name.into()));
            assert_eq!(StatsGrouping::parse(Some(name)), Ok(Some(grouping)));
        }
        assert_eq!(StatsGrouping::parse(None), Ok(None));
        let error = StatsGrouping::parse(Some("colour")).expect_err("unknown");
        assert_eq!(error.code(), "invalid_request");
    }

    #[test]
    fn every_group_is_there_in_order_and_stray_codes_count_as_unknown() {
        let listings = |count| PricedListings {
            count,
            priced: Vec::new(),
        };
        let split: GroupedPrices = [
            (Some(BoxPapers::Neither as u64), listings(2)),
            (None, listings(3)),
            (Some(77), listings(4)),
        ]
        .into_iter()
        .collect();
        let groups = in_key_order(StatsGrouping::BoxPapers, split);
        let counts: Vec<(&str, usize)> = (groups.iter())
            .map(|(key, listings)| (*key, listings.count))
            .collect();
        assert_eq!(
            counts,
            [
                ("fullSet", 0),
                ("boxOnly", 0),
                ("papersOnly", 0),
                ("neither", 2),
                ("unknown", 7)
            ]
        );
        let conditions = in_key_order(StatsGrouping::Condition, GroupedPrices::new());
        let keys: Vec<&str> = conditions.iter().map(|(key, _)| *key).collect();
        assert_eq!(
            keys,
            [
                "NEW",
                "UNWORN",
                "VERY_GOOD",
                "GOOD",
                "FAIR",
                "POOR",
                "unknown"
            ]
        );
    }
}
