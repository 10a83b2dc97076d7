//! The OpenAPI 3.0.3 document of v1, served at `GET /v1/openapi.json`. Operations and schemas
//! come from the handlers' annotations and the response types; what every operation shares
//! (error responses, rate-limit, version and request-id headers, caching headers, the admin
//! session scheme) is added once here.

use super::error::ErrorBody;
use super::views::*;
use super::{brands, calibers, listings, models, rates, sitemap};
use axum::http::header;
use axum::response::IntoResponse;
use std::sync::OnceLock;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityScheme};
use utoipa::openapi::{
    ContentBuilder, ObjectBuilder, OpenApi as Document, Ref, RefOr, ResponseBuilder, Schema,
    SchemaType,
};
use utoipa::{Modify, OpenApi};

/// Name of the admin session cookie declared in the security scheme.
pub const SESSION_COOKIE: &str = "watch_catalogue_session";

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Watch catalogue API",
        version = "1.0.0",
        description = "Read-only JSON API over a reference catalogue of wristwatches (brands, series, models, calibres). \
            Paths are relative to the server URL, which ends in the version prefix /v1; the same paths answer unversioned. \
            Units: millimetres for diameter, thickness, lugWidth, bandWidth and calibre sizes; metres for waterResistance; \
            vph for frequency; hours for powerReserve. Timestamps are RFC 3339 in UTC."
    ),
    servers((url = "/v1", description = "This server, version 1")),
    paths(
        brands::list_brands,
        brands::highlighted_brands,
        brands::get_brand,
        brands::list_series,
        brands::get_series,
        models::list_models,
        models::get_model,
        calibers::get_caliber,
        listings::list_listings,
        listings::listing_stats,
        listings::get_listing,
        rates::get_rates,
        sitemap::models,
        sitemap::catalog,
        sitemap::calibers,
    ),
    components(schemas(
        ErrorBody, EntityRef, ModelListItem, PictureView, FullModel, ModelSpecBody, ComplicationView, ParentCaliber,
        CaliberView, CaliberDetail, BrandPicture, BrandItem, BrandDetail, SeriesItem, SeriesDetail, YearRange,
        DiameterRange, StatsView, ModelSitemapEntry, CatalogSitemapEntry, CaliberSitemapEntry,
        ListingView, ListingPictureView, ListingDetail, ListingStats, super::params::ListingPage,
        brands::HighlightedBrands,
        rates::RatesView,
        rates::EcbTable,
        rates::UsdTable, super::params::BrandPage, super::params::SeriesPage, super::params::ModelPage,
        super::params::ModelSitemapPage, super::params::CatalogSitemapPage, super::params::CaliberSitemapPage,
    )),
    modifiers(&SharedResponses),
    tags(
        (name = "brands", description = "Brands and their series"),
        (name = "models", description = "Models: search, filters, the full record"),
        (name = "calibers", description = "Movements"),
        (name = "listings", description = "Marketplace listings matched to the catalogue, and their asking prices"),
        (name = "rates", description = "ECB reference rates and the USD conversion table"),
        (name = "sitemap", description = "Every page, for crawlers"),
    )
)]
pub struct ApiDoc;

/// Adds to every operation what the shared layers give every response.
struct SharedResponses;

fn integer_header(description: &str) -> utoipa::openapi::header::Header {
    HeaderBuilder::new()
        .schema(ObjectBuilder::new().schema_type(SchemaType::Integer))
        .description(Some(description))
        .build()
}

fn string_header(description: &str) -> utoipa::openapi::header::Header {
    HeaderBuilder::new()
        .schema(ObjectBuilder::new().schema_type(SchemaType::String))
        .description(Some(description))
        .build()
}

impl Modify for SharedResponses {
    fn modify(&self, doc: &mut Document) {
        let common_headers = [
            (
                "X-API-Version",
                string_header("The version that served the response (v1)"),
            ),
            (
                "X-Request-Id",
                string_header("The request's id, as sent or as assigned"),
            ),
            (
                "RateLimit-Limit",
                integer_header("Requests allowed per window (600)"),
            ),
            (
                "RateLimit-Remaining",
                integer_header("Requests left in the current window"),
            ),
            (
                "RateLimit-Reset",
                integer_header("Seconds until the window rolls over"),
            ),
            (
                "RateLimit-Policy",
                string_header("`<limit>;w=<window seconds>;policy=public`"),
            ),
            (
                "Deprecation",
                string_header("`true` when this version winds down"),
            ),
            (
                "Sunset",
                string_header("HTTP-date when a winding-down version stops answering"),
            ),
            (
                "Link",
                string_header(
                    "`<successor>; rel=\"successor-version\"` when this version winds down",
                ),
            ),
        ];
        let error_content = ContentBuilder::new()
            .schema(RefOr::Ref(Ref::from_schema_name("ErrorBody")))
            .build();
        let errors = [
            (
                "400",
                "invalid_request: a parameter or the path shape was rejected",
            ),
            ("404", "not_found: no such resource or path"),
            (
                "405",
                "invalid_request: the path does not answer this method (see Allow)",
            ),
            (
                "429",
                "rate_limited: over budget; retry after Retry-After seconds",
            ),
            (
                "500",
                "internal_error: server fault; safe to retry with backoff",
            ),
        ];
        for item in doc.paths.paths.values_mut() {
            for operation in item.operations.values_mut() {
                let responses = &mut operation.responses.responses;
                for (status, description) in errors {
                    let mut response = ResponseBuilder::new()
                        .description(description)
                        .content("application/json", error_content.clone());
                    if status == "429" {
                        response = response.header(
                            "Retry-After",
                            integer_header("Seconds to wait, equal to RateLimit-Reset"),
                        );
                    }
                    responses
                        .entry(status.to_owned())
                        .or_insert_with(|| RefOr::T(response.build()));
                }
                for (status, response) in responses.iter_mut() {
                    let RefOr::T(response) = response else {
                        continue;
                    };
                    for (name, header) in &common_headers {
                        response.headers.insert((*name).to_owned(), header.clone());
                    }
                    if status == "200" {
                        response.headers.insert(
                            "ETag".into(),
                            string_header(
                                "Weak tag of the body; send it back in If-None-Match for a 304",
                            ),
                        );
                        response
                            .headers
                            .insert("Cache-Control".into(), string_header("public, max-age=60"));
                    }
                }
            }
        }
        let components = doc.components.get_or_insert_with(Default::default);
        for (name, schema) in components.schemas.iter_mut() {
            if name != "ErrorBody" {
                require_every_property(schema);
            }
        }
        components.add_security_scheme(
            "adminSession",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(SESSION_COOKIE, "Admin session, required by /admin, /picture-review, /reconciliation and /duplicate-models"))),
        );
    }
}

/// The properties a response carries only on request: a listing's conversion into `currency`.
const OPTIONAL_PROPERTIES: [&str; 2] = ["convertedPrice", "convertedCurrency"];

/// Response bodies carry every field, null or [] when empty: each property is required, but
/// for [`OPTIONAL_PROPERTIES`].
fn require_every_property(schema: &mut RefOr<Schema>) {
    match schema {
        RefOr::T(Schema::Object(object)) => {
            object.required = object
                .properties
                .keys()
                .filter(|name| !OPTIONAL_PROPERTIES.contains(&name.as_str()))
                .cloned()
                .collect()
        }
        RefOr::T(Schema::AllOf(all)) => all.items.iter_mut().for_each(require_every_property),
        _ => {}
    }
}

/// The document as JSON, built once.
pub fn document_json() -> &'static str {
    static DOCUMENT: OnceLock<String> = OnceLock::new();
    DOCUMENT.get_or_init(|| {
        ApiDoc::openapi()
            .to_pretty_json()
            .unwrap_or_else(|_| "{}".to_owned())
    })
}

/// `GET /v1/openapi.json`.
pub async fn document() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/json")],
        document_json(),
    )
}
