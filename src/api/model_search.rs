//! What `GET /models` adds to a plain list: filters by specification (checked against the
//! catalogue's vocabulary), the typo switch, and facet counts with their view. The handler is
//! [`super::models::list_models`].

use super::error::{ApiError, ApiResult};
use super::params::{non_empty_schema, parse_bool, parse_choice};
use super::views::{FacetValueView, FacetsView};
use crate::app::App;
use crate::domain::{BrandId, SeriesId, Slug};
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use catalogue_index::{spec_key, Bounds, Facet, FacetCounts, FacetValue, SpecFilters, SpecTerm};
use serde::Deserialize;
use std::collections::BTreeMap;

/// The single-valued specification parameters of `GET /models`.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct SpecParams {
    /// Smallest case diameter, in millimetres (0 to 100).
    #[param(value_type = Option<f64>, minimum = 0, maximum = 100)]
    min_diameter: Option<String>,
    /// Largest case diameter, in millimetres (0 to 100).
    #[param(value_type = Option<f64>, minimum = 0, maximum = 100)]
    max_diameter: Option<String>,
    /// Least water resistance, in metres (0 to 20000).
    #[param(value_type = Option<f64>, minimum = 0, maximum = 20000)]
    min_water_resistance: Option<String>,
    /// Earliest release year.
    #[param(value_type = Option<u32>, minimum = 1700, maximum = 2100)]
    min_year: Option<String>,
    /// Latest release year.
    #[param(value_type = Option<u32>, minimum = 1700, maximum = 2100)]
    max_year: Option<String>,
    /// Only limited editions (`true`), or none (`false`).
    #[param(value_type = Option<bool>)]
    limited: Option<String>,
    /// Only discontinued models (`true`), or only current ones (`false`).
    #[param(value_type = Option<bool>)]
    discontinued: Option<String>,
    /// Only models with at least one listing (`true`), or with none (`false`).
    #[param(value_type = Option<bool>)]
    has_listings: Option<String>,
    /// `false` matches `q`'s words only as typed: no typos, no prefix. `true` by default.
    #[param(value_type = Option<bool>)]
    typo_tolerance: Option<String>,
    /// Facets to count, comma-separated: brand, series, caseMaterial, dialColor, movementType,
    /// complication, diameter.
    #[param(
        pattern = "^\\s*(brand|series|caseMaterial|dialColor|movementType|complication|diameter)\\s*(,\\s*(brand|series|caseMaterial|dialColor|movementType|complication|diameter)\\s*)*$"
    )]
    facets: Option<String>,
}

/// The repeatable specification parameters of `GET /models`, read from the raw query string
/// (`caseMaterial=steel&caseMaterial=gold`), which serde's form reader refuses.
#[derive(Debug, Default, utoipa::IntoParams)]
#[into_params(parameter_in = Query, style = Form, rename_all = "camelCase")]
pub struct SpecTermParams {
    /// Case material, any of; repeatable. Case-insensitive, on the catalogue's vocabulary.
    #[param(value_type = Option<Vec<String>>)]
    case_material: Vec<String>,
    /// Dial colour, any of; repeatable.
    #[param(value_type = Option<Vec<String>>)]
    dial_color: Vec<String>,
    /// Bezel material, any of; repeatable.
    #[param(value_type = Option<Vec<String>>)]
    bezel_material: Vec<String>,
    /// Band or bracelet material, any of; repeatable.
    #[param(value_type = Option<Vec<String>>)]
    band_material: Vec<String>,
    /// Movement type (automatic, manual, quartz, spring-drive...), any of; repeatable.
    #[param(value_type = Option<Vec<String>>)]
    movement_type: Vec<String>,
    /// Complication slug, all of; repeatable.
    #[param(value_type = Option<Vec<String>>)]
    complication: Vec<String>,
}

/// A worded field's values: never empty, else any word (a word of no model's is a 400 naming
/// the vocabulary, or an empty page when it is a known word no model has today).
pub fn term_schema() -> utoipa::openapi::Array {
    utoipa::openapi::ArrayBuilder::new()
        .items(non_empty_schema())
        .build()
}

/// The query-string name of each worded field.
pub const TERM_PARAMETERS: [(SpecTerm, &str); 6] = [
    (SpecTerm::CaseMaterial, "caseMaterial"),
    (SpecTerm::DialColor, "dialColor"),
    (SpecTerm::BezelMaterial, "bezelMaterial"),
    (SpecTerm::BandMaterial, "bandMaterial"),
    (SpecTerm::MovementType, "movementType"),
    (SpecTerm::Complication, "complication"),
];

/// The `facets` names and what each counts.
const FACET_NAMES: &[(&str, Facet)] = &[
    ("brand", Facet::Brand),
    ("series", Facet::Series),
    ("caseMaterial", Facet::Term(SpecTerm::CaseMaterial)),
    ("dialColor", Facet::Term(SpecTerm::DialColor)),
    ("movementType", Facet::Term(SpecTerm::MovementType)),
    ("complication", Facet::Term(SpecTerm::Complication)),
    ("diameter", Facet::Diameter),
];

impl SpecTermParams {
    fn values(&mut self, term: SpecTerm) -> &mut Vec<String> {
        match term {
            SpecTerm::CaseMaterial => &mut self.case_material,
            SpecTerm::DialColor => &mut self.dial_color,
            SpecTerm::BezelMaterial => &mut self.bezel_material,
            SpecTerm::BandMaterial => &mut self.band_material,
            SpecTerm::MovementType => &mut self.movement_type,
            SpecTerm::Complication => &mut self.complication,
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for SpecTermParams {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let query = parts.uri.query().unwrap_or("");
        let mut params = SpecTermParams::default();
        for (name, value) in form_urlencoded::parse(query.as_bytes()) {
            if let Some((term, _)) = TERM_PARAMETERS.iter().find(|(_, n)| *n == name) {
                params.values(*term).push(value.into_owned());
            }
        }
        Ok(params)
    }
}

impl SpecParams {
    /// `typoTolerance`, on unless `false`.
    pub fn typo_tolerance(&self) -> ApiResult<bool> {
        Ok(parse_bool("typoTolerance", self.typo_tolerance.as_deref())?.unwrap_or(true))
    }

    /// The facets asked, each once, in the order named; 400 for an unknown name.
    pub fn facets(&self) -> ApiResult<Vec<Facet>> {
        let Some(list) = self.facets.as_deref() else {
            return Ok(Vec::new());
        };
        let mut facets = Vec::new();
        for name in list.split(',').map(str::trim) {
            if let Some(facet) = parse_choice("facet", Some(name), FACET_NAMES)? {
                if !facets.contains(&facet) {
                    facets.push(facet);
                }
            }
        }
        Ok(facets)
    }

    /// The specification filters of the request; 400 naming the first bad parameter.
    pub fn filters(&self, app: &App, mut terms: SpecTermParams) -> ApiResult<SpecFilters> {
        let mut spec = SpecFilters {
            diameter: bounds(
                ("minDiameter", self.min_diameter.as_deref()),
                ("maxDiameter", self.max_diameter.as_deref()),
                |name, raw| number(name, raw, 100.0, "millimetres"),
            )?,
            min_water_resistance: self
                .min_water_resistance
                .as_deref()
                .map(|raw| number("minWaterResistance", raw, 20_000.0, "metres"))
                .transpose()?,
            release_year: bounds(
                ("minYear", self.min_year.as_deref()),
                ("maxYear", self.max_year.as_deref()),
                year,
            )?,
            limited: parse_bool("limited", self.limited.as_deref())?,
            discontinued: parse_bool("discontinued", self.discontinued.as_deref())?,
            has_listings: parse_bool("hasListings", self.has_listings.as_deref())?,
            terms: BTreeMap::new(),
        };
        for term in SpecTerm::ALL {
            let values = std::mem::take(terms.values(term));
            if !values.is_empty() {
                spec.terms.insert(term, known_values(app, term, values)?);
            }
        }
        Ok(spec)
    }
}

/// The movement types a caliber's `type` takes (docs/dataset-format.md): a filter on one that no
/// model has today finds none, rather than being refused as a typo.
const MOVEMENT_TYPES: [&str; 6] = [
    "automatic",
    "manual",
    "quartz",
    "spring-drive",
    "solar",
    "kinetic",
];

/// The values of `term` the dataset format documents, whether or not a model has one.
fn documented(term: SpecTerm) -> &'static [&'static str] {
    match term {
        SpecTerm::MovementType => &MOVEMENT_TYPES,
        _ => &[],
    }
}

/// `values` case-folded, each once, each one the catalogue's models have or the dataset format
/// documents; else 400 listing those the models have. Once: a value repeated thousands of
/// times in a URL would otherwise be as many postings lists read for one request.
fn known_values(app: &App, term: SpecTerm, values: Vec<String>) -> ApiResult<Vec<String>> {
    let vocabulary = app.index().vocabulary(term)?;
    let name = parameter_name(term);
    let mut keys = values
        .into_iter()
        .map(|value| {
            let key = spec_key(&value);
            let known =
                vocabulary.binary_search(&key).is_ok() || documented(term).contains(&key.as_str());
            match known {
                true => Ok(key),
                false => Err(ApiError::invalid(
                    format!("unknown {name} `{value}`"),
                    allowed_values(name, &vocabulary),
                )),
            }
        })
        .collect::<ApiResult<Vec<String>>>()?;
    keys.sort_unstable();
    keys.dedup();
    Ok(keys)
}

/// The allowed values in a hint: all of them up to a screenful.
fn allowed_values(name: &str, vocabulary: &[String]) -> String {
    const SHOWN: usize = 50;
    if vocabulary.is_empty() {
        return format!("no model has a {name} yet");
    }
    let mut hint = format!(
        "{name} is one of: {}",
        vocabulary[..vocabulary.len().min(SHOWN)].join(", ")
    );
    if vocabulary.len() > SHOWN {
        hint.push_str(&format!(
            " and {} more (facets={name} counts them all)",
            vocabulary.len() - SHOWN
        ));
    }
    hint
}

fn parameter_name(term: SpecTerm) -> &'static str {
    TERM_PARAMETERS
        .iter()
        .find(|(t, _)| *t == term)
        .map_or("", |(_, name)| name)
}

/// A range from its two parameters; 400 when the lower bound is above the upper one.
fn bounds<T: Copy + PartialOrd>(
    (min_name, min): (&str, Option<&str>),
    (max_name, max): (&str, Option<&str>),
    parse: impl Fn(&str, &str) -> ApiResult<T>,
) -> ApiResult<Bounds<T>> {
    let min = min.map(|raw| parse(min_name, raw)).transpose()?;
    let max = max.map(|raw| parse(max_name, raw)).transpose()?;
    if let (Some(low), Some(high)) = (min, max) {
        if low > high {
            return Err(ApiError::invalid(
                format!("`{min_name}` is above `{max_name}`"),
                format!("give {min_name} at most {max_name}"),
            ));
        }
    }
    Ok(Bounds { min, max })
}

/// A number from 0 to `max`, in `unit`.
fn number(name: &str, raw: &str, max: f64, unit: &str) -> ApiResult<f64> {
    match raw.parse::<f64>() {
        Ok(value) if (0.0..=max).contains(&value) => Ok(value),
        _ => Err(ApiError::invalid(
            format!("`{name}` must be a number from 0 to {max}, not `{raw}`"),
            format!("{name} is in {unit}, from 0 to {max}"),
        )),
    }
}

const YEARS: std::ops::RangeInclusive<u64> = 1700..=2100;

fn year(name: &str, raw: &str) -> ApiResult<u64> {
    match raw.parse::<u64>() {
        Ok(year) if YEARS.contains(&year) => Ok(year),
        _ => Err(ApiError::invalid(
            format!(
                "`{name}` must be a year from {} to {}, not `{raw}`",
                YEARS.start(),
                YEARS.end()
            ),
            format!("{name} is a release year such as 2020"),
        )),
    }
}

impl FacetsView {
    /// The view of the index's counts, with slugs and names read from the store.
    pub fn of(app: &App, counted: Vec<FacetCounts>) -> ApiResult<FacetsView> {
        let mut view = FacetsView::default();
        for FacetCounts { facet, values } in counted {
            let mut shown = Vec::with_capacity(values.len());
            for (value, count) in values {
                shown.extend(
                    facet_value(app, facet, value)?.map(|(value, name)| FacetValueView {
                        value,
                        name,
                        count,
                    }),
                );
            }
            if matches!(facet, Facet::Brand | Facet::Series) {
                // The index breaks ties by id; clients see slugs.
                shown.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.value.cmp(&b.value)));
            }
            if let Some(slot) = view.slot(facet) {
                *slot = Some(shown);
            }
        }
        Ok(view)
    }

    /// Where a facet's values go; bezel and band materials are filters, not facets.
    fn slot(&mut self, facet: Facet) -> Option<&mut Option<Vec<FacetValueView>>> {
        match facet {
            Facet::Brand => Some(&mut self.brand),
            Facet::Series => Some(&mut self.series),
            Facet::Term(SpecTerm::CaseMaterial) => Some(&mut self.case_material),
            Facet::Term(SpecTerm::DialColor) => Some(&mut self.dial_color),
            Facet::Term(SpecTerm::MovementType) => Some(&mut self.movement_type),
            Facet::Term(SpecTerm::Complication) => Some(&mut self.complication),
            Facet::Term(SpecTerm::BezelMaterial | SpecTerm::BandMaterial) => None,
            Facet::Diameter => Some(&mut self.diameter),
        }
    }
}

/// A facet value as the filter takes it, and its display name; `None` for a brand or series the
/// store no longer has (written since the index was read).
fn facet_value(
    app: &App,
    facet: Facet,
    value: FacetValue,
) -> ApiResult<Option<(String, Option<String>)>> {
    Ok(match (facet, value) {
        (Facet::Brand, FacetValue::Id(id)) => app
            .store()
            .catalogue()
            .brand(BrandId(id))?
            .map(|brand| (brand.slug.to_string(), Some(brand.name))),
        (Facet::Series, FacetValue::Id(id)) => {
            match app.store().catalogue().series(SeriesId(id))? {
                Some(series) => app
                    .store()
                    .catalogue()
                    .brand(series.brand_id)?
                    .map(|brand| {
                        let value = format!("{}/{}", brand.slug, series.slug);
                        (value, Some(series.name))
                    }),
                None => None,
            }
        }
        (Facet::Term(SpecTerm::Complication), FacetValue::Text(slug)) => {
            let name = match Slug::parse(&slug) {
                Ok(parsed) => app
                    .store()
                    .catalogue()
                    .complication_by_slug(&parsed)?
                    .map(|c| c.name),
                Err(_) => None,
            };
            Some((slug, name))
        }
        (_, FacetValue::Text(text)) => Some((text, None)),
        (_, FacetValue::Millimetres(mm)) => Some((mm.to_string(), None)),
        (_, FacetValue::Id(id)) => Some((id.to_string(), None)),
    })
}
