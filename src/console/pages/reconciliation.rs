//! `GET /console/reconciliation`: the groups of unmatched listings, each beside its nearest models.

use super::*;

/// A group of unmatched listings as the reconciliation page shows it.
pub struct GroupCard {
    pub id: String,
    pub brand: String,
    pub reference: String,
    /// Whether sellers gave a reference, which a model can be taught.
    pub has_reference: bool,
    pub reason: &'static str,
    pub listing_count: usize,
    pub spellings: String,
    pub providers: String,
    pub prices: String,
    pub titles: Vec<String>,
    pub candidates: Vec<Candidate>,
}

impl GroupCard {
    pub(super) fn of(group: ReconciliationGroup) -> GroupCard {
        let dash = |text: String| {
            if text.is_empty() {
                "—".to_owned()
            } else {
                text
            }
        };
        let providers = (group.providers.iter())
            .map(|p| format!("{} {}", p.provider.name, p.listing_count))
            .collect::<Vec<_>>()
            .join(", ");
        let price = |usd: Option<u64>| usd.map_or("?".to_owned(), |p| format!("{p} USD"));
        let range = &group.price_range_usd;
        GroupCard {
            brand: match group.brand {
                Some(ClaimedBrandView::Known(brand)) => brand.name,
                Some(ClaimedBrandView::Text(text)) => format!("“{text}” (no such brand)"),
                None => "no brand".to_owned(),
            },
            has_reference: group.reference.is_some(),
            reference: group.reference.unwrap_or_else(|| "no reference".to_owned()),
            reason: group.reason,
            listing_count: group.listing_count,
            spellings: dash(group.spellings.join(", ")),
            providers: dash(providers),
            prices: match (range.low, range.high) {
                (None, None) => "—".to_owned(),
                (low, high) if low == high => price(low),
                (low, high) => format!("{} to {}", price(low), price(high)),
            },
            titles: group.example_titles,
            candidates: group.candidates,
            id: group.id,
        }
    }
}

#[derive(Template)]
#[template(path = "reconciliation.html", config = "src/console/askama.toml")]
struct ReconciliationPage {
    signed: Option<Signed>,
    writes: bool,
    reasons: Vec<KindChoice>,
    brand: String,
    provider: String,
    q: String,
    cards: Vec<GroupCard>,
    total: usize,
    page: usize,
    pages: usize,
    previous: Option<String>,
    next: Option<String>,
}

/// `GET /console/reconciliation`: a page of the groups of unmatched listings under the API's
/// filters, each beside its nearest models; for an admin, the link that `console.js` posts to
/// the API.
pub async fn reconciliation(
    work: Work,
    SignedCaller(signed): SignedCaller,
    Extension(media): Extension<MediaBase>,
    Params(page): Params<PageParams>,
    Params(filters): Params<ReconciliationParams>,
) -> ApiResult<Response> {
    let pagination = page.pagination()?;
    let page = work
        .run(move |app| {
            let found = reconciliation_api::group_page(app, &filters, pagination, &media)?;
            let reason = shown(&filters.reason);
            let (brand, provider, q) = (
                shown(&filters.brand),
                shown(&filters.provider),
                shown(&filters.q),
            );
            let filters = [
                ("reason", reason.as_str()),
                ("brand", &brand),
                ("provider", &provider),
                ("q", &q),
            ];
            let Pager {
                pages,
                previous,
                next,
            } = Pager::list("/console/reconciliation", &filters, pagination, found.total);
            let reasons = reason_choices(&reason);
            Ok(ReconciliationPage {
                signed: Some(Signed::of(&signed)),
                writes: signed.user.role == Role::Admin,
                reasons,
                previous,
                next,
                cards: found.data.into_iter().map(GroupCard::of).collect(),
                total: found.total,
                page: pagination.page,
                pages,
                brand,
                provider,
                q,
            })
        })
        .await?;
    render(&page)
}
