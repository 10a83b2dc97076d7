//! `GET /console/unmatched`: the listings matched to no model, with why and a link to the seller.

use super::*;

/// An unmatched listing as its page's row shows it.
pub struct UnmatchedRow {
    pub id: String,
    pub title: String,
    /// Its page at the seller's, when it is a web address (never another scheme).
    pub source: Option<String>,
    pub brand: String,
    pub reference: String,
    pub price: String,
    pub reason: &'static str,
    pub seen: String,
}

impl UnmatchedRow {
    fn of(unmatched: UnmatchedListing) -> UnmatchedRow {
        let listing = unmatched.listing;
        let dash = |text: Option<String>| text.unwrap_or_else(|| "—".to_owned());
        UnmatchedRow {
            id: listing.id,
            title: dash(listing.title),
            source: web_address(listing.url),
            brand: dash(listing.scraped_brand),
            reference: dash(listing.scraped_reference),
            price: match (listing.price, listing.currency) {
                (Some(price), Some(currency)) => format!("{price} {currency}"),
                _ => "—".to_owned(),
            },
            reason: unmatched.unmatched_reason,
            seen: listing.last_seen_at,
        }
    }
}

/// `url` when it is a web address: a seller's text is never made a `javascript:` link.
fn web_address(url: String) -> Option<String> {
    is_web_url(&url).then_some(url)
}

#[derive(Template)]
#[template(path = "unmatched.html", config = "src/console/askama.toml")]
struct UnmatchedPage {
    signed: Option<Signed>,
    reasons: Vec<KindChoice>,
    brand: String,
    provider: String,
    rows: Vec<UnmatchedRow>,
    total: usize,
    page: usize,
    pages: usize,
    previous: Option<String>,
    next: Option<String>,
}

/// `GET /console/unmatched`: the listings matched to no model, newest first, with why, under
/// the filters of `GET /admin/unmatched-listings`; each links to its page at the seller's.
pub async fn unmatched(
    work: Work,
    SignedCaller(signed): SignedCaller,
    Extension(media): Extension<MediaBase>,
    Params(page): Params<PageParams>,
    Params(filters): Params<UnmatchedParams>,
) -> ApiResult<Response> {
    let pagination = page.pagination()?;
    let page = work
        .run(move |app| {
            let found = admin::unmatched_page(app, &filters, pagination, &media)?;
            let (reason, brand, provider) = (
                shown(&filters.reason),
                shown(&filters.brand),
                shown(&filters.provider),
            );
            let filters = [
                ("reason", reason.as_str()),
                ("brand", &brand),
                ("provider", &provider),
            ];
            let Pager {
                pages,
                previous,
                next,
            } = Pager::list("/console/unmatched", &filters, pagination, found.total);
            Ok(UnmatchedPage {
                signed: Some(Signed::of(&signed)),
                reasons: reason_choices(&reason),
                previous,
                next,
                rows: found.data.into_iter().map(UnmatchedRow::of).collect(),
                total: found.total,
                page: pagination.page,
                pages,
                brand,
                provider,
            })
        })
        .await?;
    render(&page)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_web_addresses_are_links() {
        for url in ["https://www.ebay.com/itm/1", "HTTP://example.com/a"] {
            assert_eq!(web_address(url.into()).as_deref(), Some(url));
        }
        for url in [
            "javascript:alert(1)",
            "data:text/html,x",
            "//evil.example/",
            "ftp://a/b",
        ] {
            assert_eq!(web_address(url.into()), None, "{url}");
        }
    }
}
