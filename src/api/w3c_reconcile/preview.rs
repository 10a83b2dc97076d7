//! `GET /reconcile/preview?id=`: a small HTML card of an entity (name, reference, brand,
//! series, calibre, thumbnail) for OpenRefine's hover. Every value is escaped, and a
//! Content-Security-Policy lets the card show pictures and its inline style and nothing else.

use super::entity::{caliber_label, Entity, EntityId};
use crate::api::assemble::{self, Lookups};
use crate::api::error::{ApiError, ApiResult};
use crate::api::layers::capacity::Work;
use crate::api::listings::MediaBase;
use crate::api::params::Params;
use crate::app::App;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use serde::Deserialize;
use std::fmt::Write;

/// No scripts, frames, forms or fetches: pictures (ours or the CDN's) and inline style only.
pub const PREVIEW_CSP: &str = "default-src 'none'; img-src 'self' https: http:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'";

/// Query of `GET /reconcile/preview`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PreviewParams {
    /// An id from a result: `models/{brand}/{model}`, `calibers/{brand}/{caliber}` or
    /// `brands/{brand}`.
    #[param(required = true)]
    id: Option<String>,
}

/// The entity's card, as HTML.
#[utoipa::path(get, path = "/reconcile/preview", operation_id = "reconcile_preview", tag = "reconcile",
    params(PreviewParams),
    responses((status = 200, description = "An HTML card of the entity", content_type = "text/html", body = String)))]
pub async fn preview(
    work: Work,
    Extension(media): Extension<MediaBase>,
    Params(params): Params<PreviewParams>,
) -> ApiResult<Response> {
    let not_found = || {
        ApiError::not_found(
            "no such entity",
            "ids are those of reconciliation results, e.g. models/rolex/submariner-date-16610",
        )
    };
    let Some(id) = params.id.as_deref() else {
        return Err(ApiError::invalid(
            "`id` is required",
            "GET /v1/reconcile/preview?id=models/rolex/submariner-date-16610",
        ));
    };
    let id = EntityId::parse(id).ok_or_else(not_found)?;
    let card = work
        .run(move |app| {
            let entity = Entity::read(app, &id)?.ok_or_else(not_found)?;
            card_of(app, &media, entity)?.ok_or_else(not_found)
        })
        .await?;
    let mut response = card.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(PREVIEW_CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    Ok(response)
}

/// The card of `entity`; `None` when a model's brand or series vanished.
fn card_of(app: &App, media: &MediaBase, entity: Entity) -> ApiResult<Option<String>> {
    Ok(match entity {
        Entity::Model(_, model) => {
            let Some(item) = assemble::model_item(app, model.id, &mut Lookups::new(media))? else {
                return Ok(None);
            };
            let caliber = match model.caliber_id {
                Some(id) => app.store().catalogue().caliber(id)?.map(|c| c.reference),
                None => None,
            };
            Some(card(
                &format!("{} {}", item.brand.name, item.name),
                item.thumbnail_url.as_deref(),
                &[
                    ("Reference", Some(item.reference_number)),
                    ("Brand", Some(item.brand.name)),
                    ("Series", Some(item.series.name)),
                    ("Caliber", caliber),
                ],
            ))
        }
        Entity::Caliber(brand, caliber) => Some(card(
            &caliber_label(&brand, &caliber),
            None,
            &[
                ("Reference", Some(caliber.reference.clone())),
                ("Brand", Some(brand.name.clone())),
                ("Type", caliber.kind.clone()),
            ],
        )),
        Entity::Brand(brand) => Some(card(
            &brand.name,
            None,
            &[
                ("Country", brand.country.clone()),
                ("Founded", brand.founded.map(|y| y.to_string())),
            ],
        )),
    })
}

/// The HTML of a card: a title, an optional picture and labelled rows (empty ones left out).
fn card(title: &str, thumbnail: Option<&str>, rows: &[(&str, Option<String>)]) -> String {
    let mut html = String::from("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>");
    html.push_str(&escape(title));
    html.push_str("</title></head><body style=\"margin:0;font:13px/1.4 sans-serif\"><div style=\"display:flex;gap:10px;padding:6px\">");
    if let Some(url) = thumbnail {
        let _ = write!(
            html,
            "<img src=\"{}\" alt=\"\" width=\"120\" height=\"120\" style=\"object-fit:contain\">",
            escape(url)
        );
    }
    let _ = write!(html, "<div><strong>{}</strong>", escape(title));
    for (label, value) in rows {
        if let Some(value) = value.as_deref().filter(|v| !v.is_empty()) {
            let _ = write!(html, "<br>{}: {}", escape(label), escape(value));
        }
    }
    html.push_str("</div></div></body></html>");
    html
}

/// Text safe inside HTML elements and quoted attributes.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_in_values_is_escaped() {
        let html = card(
            "<script>alert('x')</script>",
            Some("https://cdn/x.jpg\" onerror=\"alert(1)"),
            &[("Series", Some("A & B".into())), ("Caliber", None)],
        );
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"));
        assert!(
            html.contains("x.jpg&quot; onerror=&quot;alert(1)"),
            "{html}"
        );
        assert!(html.contains("Series: A &amp; B"));
        assert!(!html.contains("Caliber"));
    }
}
