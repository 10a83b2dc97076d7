//! `GET /console/reconciliation/new-model`: the form that creates a catalogue model from a
//! group of unmatched listings, filled from the group, its brand and series chosen from lists;
//! `console.js` posts it to `POST /v1/reconciliation/models`.

use super::reconciliation::GroupCard;
use super::*;
use crate::api::assemble;
use crate::api::brands::series_of;
use crate::api::error::ApiError;
use crate::domain::{Brand, BrandId};

/// Series a brand's list offers at most: more than any real brand has.
const MOST_SERIES: usize = 2000;

/// Query of the page: the group, and the brand chosen (the group's own by default).
#[derive(Debug, Deserialize)]
pub struct NewModelQuery {
    group: Option<String>,
    brand: Option<String>,
}

/// An option of a list.
pub struct Choice {
    pub value: String,
    pub label: String,
    pub selected: bool,
}

#[derive(Template)]
#[template(path = "new_model.html", config = "src/console/askama.toml")]
struct NewModelPage {
    signed: Option<Signed>,
    card: GroupCard,
    /// The brand text sellers used when the catalogue has no such brand: it is learnt as an
    /// alias of the brand chosen.
    brand_text: Option<String>,
    brands: Vec<Choice>,
    brand_chosen: bool,
    /// The chosen brand's series; empty until a brand is chosen.
    series: Vec<Choice>,
    reference: String,
    /// The page itself, for the brand list to ask for another brand's series.
    here: String,
}

/// `GET /console/reconciliation/new-model?group=ID[&brand=SLUG]` (admins only: the form writes).
pub async fn new_model(
    work: Work,
    SignedCaller(signed): SignedCaller,
    Extension(media): Extension<MediaBase>,
    Params(query): Params<NewModelQuery>,
) -> ApiResult<Response> {
    if signed.user.role != Role::Admin {
        return Err(ApiError::Forbidden);
    }
    let group_id = query
        .group
        .clone()
        .filter(|g| !g.is_empty())
        .ok_or_else(|| {
            ApiError::invalid(
                "`group`: which group the model is made from is required",
                "open this form from a group of the reconciliation page",
            )
        })?;
    let page = work
        .run(move |app| {
            let group = reconciliation_api::group_view(app, &group_id, &media)?;
            let own_brand = match &group.brand {
                Some(ClaimedBrandView::Known(brand)) => Some(brand.slug.clone()),
                _ => None,
            };
            let brand_text = match &group.brand {
                Some(ClaimedBrandView::Text(text)) => Some(text.clone()),
                _ => None,
            };
            let chosen = match query.brand.as_deref().filter(|b| !b.is_empty()) {
                Some(slug) => Some(assemble::brand_by_slug(app, slug)?),
                None => own_brand
                    .map(|slug| assemble::brand_by_slug(app, &slug))
                    .transpose()?,
            };
            let series = match &chosen {
                Some(brand) => series_choices(app, brand.id)?,
                None => Vec::new(),
            };
            let reference = (group.spellings.first().cloned())
                .or_else(|| group.reference.clone())
                .unwrap_or_default();
            Ok(NewModelPage {
                signed: Some(Signed::of(&signed)),
                brand_chosen: chosen.is_some(),
                brands: brand_choices(app, chosen.as_ref())?,
                here: link("/console/reconciliation/new-model", &[("group", &group_id)]),
                card: GroupCard::of(group),
                brand_text,
                series,
                reference,
            })
        })
        .await?;
    render(&page)
}

/// Every brand by name, `chosen` selected.
fn brand_choices(app: &App, chosen: Option<&Brand>) -> ApiResult<Vec<Choice>> {
    let mut brands = (app.store().catalogue().brands()).collect::<Result<Vec<Brand>, _>>()?;
    brands.sort_by_cached_key(|brand| brand.name.to_lowercase());
    Ok(brands
        .into_iter()
        .map(|brand| Choice {
            selected: chosen.is_some_and(|c| c.id == brand.id),
            value: brand.slug.to_string(),
            label: brand.name,
        })
        .collect())
}

/// The series of `brand`, by name.
fn series_choices(app: &App, brand: BrandId) -> ApiResult<Vec<Choice>> {
    Ok(series_of(app, brand, MOST_SERIES)?
        .into_iter()
        .map(|series| Choice {
            value: series.slug.to_string(),
            label: series.name,
            selected: false,
        })
        .collect())
}
