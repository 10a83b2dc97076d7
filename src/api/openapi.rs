//! The OpenAPI 3.0.3 document of v1, served at `GET /v1/openapi.json`. Operations and schemas
//! come from the handlers' annotations and the response types; what every operation shares
//! (error responses, rate-limit, version and request-id headers, caching headers, the admin
//! session scheme) is added once here.

use super::error::{Documented, ErrorBody, ERROR_TABLE};
use super::views::*;
use super::{brands, calibers, listings, models, rates, sitemap};
use super::{requests, views};
use super::{Access, Caching, RoutePolicy};
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use std::sync::OnceLock;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::path::PathItemType;
use utoipa::openapi::schema::{AllOf, AnyOf, OneOf};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{
    ContentBuilder, ObjectBuilder, OpenApi as Document, Ref, RefOr, ResponseBuilder, Schema,
    SchemaType,
};
use utoipa::{Modify, OpenApi};

use crate::auth::SESSION_COOKIE;

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
        models::compare_models,
        calibers::get_caliber,
        listings::list_listings,
        listings::listing_stats,
        super::stats_history::listing_stats_history,
        listings::get_listing,
        rates::get_rates,
        sitemap::models,
        sitemap::catalog,
        sitemap::calibers,
        super::w3c_reconcile::reconcile_get,
        super::w3c_reconcile::reconcile_post,
        super::w3c_reconcile::suggest_entity,
        super::w3c_reconcile::suggest_type,
        super::w3c_reconcile::suggest_property,
        super::w3c_reconcile::preview,
        super::w3c_reconcile::propose_properties,
        super::back_office::auth::login,
        super::back_office::auth::logout,
        super::back_office::auth::session,
        super::back_office::admin::stats,
        super::back_office::admin::unmatched_listings,
        super::back_office::admin::audit,
        super::back_office::admin_jobs::submit_snapshot,
        super::back_office::admin_jobs::submit_rates,
        super::back_office::admin_jobs::submit_match,
        super::back_office::admin_jobs::submit_reindex,
        super::back_office::admin_jobs::submit_duplicates,
        super::back_office::admin_jobs::list_jobs,
        super::back_office::admin_jobs::get_job,
        super::back_office::admin_users::list,
        super::back_office::admin_users::add,
        super::back_office::admin_users::set_role,
        super::back_office::admin_users::set_password,
        super::back_office::admin_users::remove,
        super::back_office::reconciliation::groups,
        super::back_office::reconciliation::link,
        super::back_office::reconciliation::create_model,
        super::back_office::reconciliation::update_model,
        super::back_office::picture_review::queue,
        super::back_office::duplicate_models::groups,
        super::back_office::duplicate_models::merge,
        super::back_office::duplicate_models::dismiss,
        super::back_office::picture_review::select,
        super::back_office::picture_review::keep,
        super::back_office::picture_review::front_picture,
        super::back_office::picture_review::set_front_picture,
    ),
    components(schemas(
        ErrorBody, EntityRef, ModelListItem, PictureView, FullModel, ModelSpecBody, ComplicationView, ParentCaliber,
        CaliberView, CaliberDetail, BrandPicture, BrandItem, BrandDetail, SeriesItem, SeriesDetail, YearRange,
        DiameterRange, StatsView, ModelSitemapEntry, CatalogSitemapEntry, CaliberSitemapEntry,
        ListingView, ListingPictureView, ListingDetail, PriceHistoryPoint, ListingStats, StatsGroup, super::stats_groups::StatsGrouping, ListingPage,
        PriceSeriesView, SeriesPeriodView,
        ModelComparison, ComparedModel, HighlightedBrands, RatesView, EcbTable, UsdTable, BrandPage, SeriesPage,
        ModelPage, FacetsView, FacetValueView, ModelSitemapPage, CatalogSitemapPage, CaliberSitemapPage,
        views::back_office::SessionView, views::back_office::AdminStats, views::back_office::UnmatchedListing, views::back_office::AuditEntryView,
        views::back_office::UserView, views::back_office::UserList, views::back_office::RemovedUser,
        requests::NewUserBody, requests::RoleBody, requests::PasswordBody,
        UnmatchedListingPage, AuditPage, views::back_office::JobView, views::back_office::JobProgressView, JobPage,
        views::back_office::ReconciliationGroup, views::back_office::ClaimedBrandView, views::back_office::ProviderCount, views::back_office::PriceRange,
        views::back_office::Candidate, ReconciliationGroupPage, views::back_office::ReconciledView,
        views::back_office::LearntView,
        views::back_office::ReviewPicture, views::back_office::CandidateView, views::back_office::ReviewQueueItem, views::back_office::FetchView,
        views::back_office::FrontPicture, views::back_office::FrontPictureAnswer, ReviewQueuePage,
        views::back_office::DuplicateModel, views::back_office::SeriesRef, views::back_office::DuplicateGroup, views::back_office::KindSummary,
        views::back_office::DuplicateGroupPage, views::back_office::KeeperRef, views::back_office::MergeView, views::back_office::DismissView,
        requests::Credentials, requests::LinkBody, requests::CreateModelBody, requests::UpdateModelBody,
        requests::MergeBody, requests::DismissBody, requests::FrontPictureBody,
        super::w3c_reconcile::ServiceParams,
    )),
    modifiers(&SharedResponses),
    tags(
        (name = "brands", description = "Brands and their series"),
        (name = "models", description = "Models: search, filters, the full record"),
        (name = "calibers", description = "Movements"),
        (name = "listings", description = "Marketplace listings matched to the catalogue, and their asking prices"),
        (name = "rates", description = "ECB reference rates and the USD conversion table"),
        (name = "sitemap", description = "Every page, for crawlers"),
        (name = "reconcile", description = "The W3C Entity Reconciliation API 0.2 (what OpenRefine speaks): rows of a spreadsheet tied to catalogue models, suggest, preview, data extension. Public, callable from any origin. Not the back office's /reconciliation"),
        (name = "auth", description = "Admin sessions: log in, log out, who am I"),
        (name = "admin", description = "Back office: counts, unmatched listings, the audit trail (admin session)"),
        (name = "jobs", description = "Back office: batch jobs against the running server (a provider's snapshot, rates, match, reindex, duplicates), run one at a time, and where each stands (admin session)"),
        (name = "reconciliation", description = "Back office: unmatched listings grouped by the identity their sellers claim, linked to a model, or made into one (admin session)"),
        (name = "picture-review", description = "Back office: candidate photographs per model, the FRONT picture chosen, kept or set and protected (admin session)"),
        (name = "duplicate-models", description = "Back office: models of one brand that may be one watch entered twice, merged or dismissed (admin session)"),
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
        apply_route_policies(doc, super::v1_policies(), &common_headers);
        apply_checked_parameters(doc, &checked_parameters());
        add_json_reconcile_body(doc);
        let requests = request_body_schemas(doc);
        let components = doc.components.get_or_insert_with(Default::default);
        for (name, schema) in components.schemas.iter_mut() {
            if !PARTIAL_SCHEMAS.contains(&name.as_str()) && !requests.contains(name) {
                require_every_property(schema);
            }
        }
        strict_forms(components);
        components.add_security_scheme(
            ADMIN_SESSION,
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(SESSION_COOKIE, "Admin session, required by /admin, /picture-review, /reconciliation and /duplicate-models"))),
        );
    }
}

/// The query parameters a handler checks against a list of its own, with the schema that list
/// gives: the document then refuses what the handler refuses. Set here rather than with
/// `#[param(schema_with)]`, which drops the parameter's description and style.
fn checked_parameters() -> Vec<(&'static str, &'static str, RefOr<Schema>)> {
    use super::back_office::{admin_jobs, duplicate_models, picture_review, reason_schema};
    use super::params::sort_schema;
    let mut checked: Vec<(&str, &str, RefOr<Schema>)> = vec![
        (
            "/brands",
            "sort",
            sort_schema::<brands::GroupSorts>().into(),
        ),
        (
            "/brands/{brandSlug}/series",
            "sort",
            sort_schema::<brands::GroupSorts>().into(),
        ),
        (
            "/models",
            "sort",
            sort_schema::<models::ModelSorts>().into(),
        ),
        (
            "/listings",
            "sort",
            sort_schema::<listings::ListingSorts>().into(),
        ),
        (
            "/listings",
            "condition",
            listings::condition_schema().into(),
        ),
        (
            "/listings",
            "availability",
            listings::availability_schema().into(),
        ),
        ("/listings", "status", listings::status_schema().into()),
        (
            "/listings/stats",
            "groupBy",
            super::stats_groups::grouping_schema().into(),
        ),
        (
            "/listings/stats/history",
            "interval",
            super::stats_history::interval_schema().into(),
        ),
        (
            "/admin/unmatched-listings",
            "reason",
            reason_schema().into(),
        ),
        ("/reconciliation", "reason", reason_schema().into()),
        (
            "/duplicate-models",
            "kind",
            duplicate_models::kind_schema().into(),
        ),
        (
            "/picture-review",
            "status",
            picture_review::status_schema().into(),
        ),
        ("/admin/reindex", "index", admin_jobs::index_schema().into()),
    ];
    for (_, name) in super::model_search::TERM_PARAMETERS {
        checked.push(("/models", name, super::model_search::term_schema().into()));
    }
    checked
}

/// Gives each parameter of [`checked_parameters`] its schema, keeping its description.
fn apply_checked_parameters(doc: &mut Document, checked: &[(&str, &str, RefOr<Schema>)]) {
    for (path, item) in doc.paths.paths.iter_mut() {
        for operation in item.operations.values_mut() {
            for parameter in operation.parameters.iter_mut().flatten() {
                if let Some((_, _, schema)) = checked
                    .iter()
                    .find(|(at, name, _)| at == path && *name == parameter.name)
                {
                    parameter.schema = Some(schema.clone());
                }
            }
        }
    }
}

/// `POST /reconcile` takes a JSON body as well as a form (utoipa's `request_body` names one
/// content type): the batch itself, or `{"queries": ...}` / `{"extend": ...}`.
fn add_json_reconcile_body(doc: &mut Document) {
    let post = doc
        .paths
        .paths
        .get_mut("/reconcile")
        .and_then(|item| item.operations.get_mut(&PathItemType::Post));
    if let Some(body) = post.and_then(|operation| operation.request_body.as_mut()) {
        let object = ObjectBuilder::new().schema_type(SchemaType::Object).build();
        body.content.insert(
            "application/json".to_owned(),
            utoipa::openapi::Content::new(object),
        );
    }
}

/// Name of the security scheme of admin sessions.
const ADMIN_SESSION: &str = "adminSession";

/// What each operation's row of the route table says: the error responses of the error table
/// that apply to it (401 and 403 only where an admin session is required), the security
/// requirement of admin routes, and the caching headers of a success.
fn apply_route_policies(
    doc: &mut Document,
    policies: &[RoutePolicy],
    common_headers: &[(&str, utoipa::openapi::header::Header)],
) {
    let error_content = ContentBuilder::new()
        .schema(RefOr::Ref(Ref::from_schema_name("ErrorBody")))
        .build();
    for (path, item) in doc.paths.paths.iter_mut() {
        let (access, caching) = policies
            .iter()
            .find(|policy| policy.path == path)
            .map_or((Access::Public, Caching::Shared), |policy| {
                (policy.access, policy.caching)
            });
        for (method, operation) in item.operations.iter_mut() {
            // The shared cache layer tags reads only: a POST to a shared route is not cached.
            let caching = match (caching, method) {
                (Caching::Shared, PathItemType::Get) => Some(Caching::Shared),
                (Caching::Shared, _) => None,
                (Caching::NoStore, _) => Some(Caching::NoStore),
            };
            if access == Access::Admin {
                let requirement = SecurityRequirement::new(ADMIN_SESSION, Vec::<String>::new());
                operation
                    .security
                    .get_or_insert_with(Vec::new)
                    .push(requirement);
            }
            let responses = &mut operation.responses.responses;
            for row in ERROR_TABLE {
                let documented = match row.documented {
                    Documented::Everywhere => true,
                    Documented::AdminRoutes => access == Access::Admin,
                    Documented::Nowhere => false,
                };
                if !documented {
                    continue;
                }
                let mut response = ResponseBuilder::new()
                    .description(format!("{}: {}", row.code, row.meaning))
                    .content("application/json", error_content.clone());
                if row.status == StatusCode::TOO_MANY_REQUESTS {
                    response = response.header(
                        "Retry-After",
                        integer_header("Seconds to wait, equal to RateLimit-Reset"),
                    );
                } else if row.status == StatusCode::SERVICE_UNAVAILABLE {
                    response = response.header(
                        "Retry-After",
                        integer_header("Seconds to wait, when every request slot is taken"),
                    );
                }
                responses
                    .entry(row.status.as_str().to_owned())
                    .or_insert_with(|| RefOr::T(response.build()));
            }
            for (status, response) in responses.iter_mut() {
                let RefOr::T(response) = response else {
                    continue;
                };
                for (name, header) in common_headers {
                    response.headers.insert((*name).to_owned(), header.clone());
                }
                if let (Some(caching), "200") = (caching, status.as_str()) {
                    add_caching_headers(response, caching);
                }
            }
            if caching == Some(Caching::Shared) {
                responses.insert("304".to_owned(), RefOr::T(not_modified(common_headers)));
            }
        }
    }
}

/// The `ETag` and `Cache-Control` headers of a success under `caching`.
fn add_caching_headers(response: &mut utoipa::openapi::Response, caching: Caching) {
    let cache_control = match caching {
        Caching::Shared => {
            response.headers.insert(
                "ETag".into(),
                string_header("Weak tag of the body; send it back in If-None-Match for a 304"),
            );
            super::layers::caching::CACHE_CONTROL
        }
        Caching::NoStore => super::layers::caching::NO_STORE,
    };
    response
        .headers
        .insert("Cache-Control".into(), string_header(cache_control));
}

/// The answer of a shared read whose `If-None-Match` names the current body's tag: no body,
/// the same headers as a 200.
fn not_modified(
    common_headers: &[(&str, utoipa::openapi::header::Header)],
) -> utoipa::openapi::Response {
    let mut response = ResponseBuilder::new()
        .description("Not Modified: `If-None-Match` names the current body's `ETag`; no body")
        .build();
    for (name, header) in common_headers {
        response.headers.insert((*name).to_owned(), header.clone());
    }
    add_caching_headers(&mut response, Caching::Shared);
    response
}

/// The schemas operations take as request bodies: they say themselves which fields a client
/// must send (the rest are optional), unlike response bodies, which carry every field.
fn request_body_schemas(doc: &Document) -> Vec<String> {
    doc.paths
        .paths
        .values()
        .flat_map(|item| item.operations.values())
        .filter_map(|operation| operation.request_body.as_ref())
        .flat_map(|body| body.content.values())
        .filter_map(|content| match &content.schema {
            RefOr::Ref(reference) => reference
                .ref_location
                .strip_prefix("#/components/schemas/")
                .map(str::to_owned),
            RefOr::T(_) => None,
        })
        .collect()
}

/// The properties a response carries only on request: a listing's conversion into `currency`,
/// a model page's facet counts, the stats' groups of `groupBy`.
const OPTIONAL_PROPERTIES: [&str; 5] = [
    "convertedPrice",
    "convertedCurrency",
    "facets",
    "groupBy",
    "groups",
];

/// Response schemas whose properties are each present only sometimes: an error's hint and
/// details, the facets a request names.
const PARTIAL_SCHEMAS: [&str; 2] = ["ErrorBody", "FacetsView"];

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

/// Rewrites what utoipa writes in a form OpenAPI 3.0 validators read otherwise than meant
/// (openapi-core, openapi-schema-validator: D-195).
fn strict_forms(components: &mut utoipa::openapi::Components) {
    for schema in components.schemas.values_mut() {
        nullable_references(schema);
    }
    if let Some(link) = components.schemas.get_mut("LinkBody") {
        exactly_one_of(link, &["group", "listings"]);
    }
}

/// `allOf: [$ref]` with `nullable: true`, utoipa's form of an optional object, is never null
/// to a strict validator: 3.0.3 lets `nullable` widen only a `type` beside it. The form it
/// reads as meant is `anyOf` the object or a null-only schema (the OAI's clarification of
/// `nullable`, 2019).
fn nullable_references(schema: &mut RefOr<Schema>) {
    let RefOr::T(inner) = schema else {
        return;
    };
    match inner {
        Schema::AllOf(all) if all.nullable && all.items.len() == 1 => {
            let mut any = AnyOf::new();
            any.items = vec![all.items[0].clone(), only_null().into()];
            any.description = all.description.take();
            *inner = Schema::AnyOf(any);
        }
        Schema::AllOf(all) => all.items.iter_mut().for_each(nullable_references),
        Schema::Object(object) => object.properties.values_mut().for_each(nullable_references),
        Schema::Array(array) => nullable_references(&mut array.items),
        _ => {}
    }
}

/// `schema` without `nullable`, and without the words the full schema already gives.
fn not_null(schema: Schema) -> Schema {
    match schema {
        Schema::Object(mut object) => {
            (object.nullable, object.description, object.example) = (false, None, None);
            Schema::Object(object)
        }
        Schema::Array(mut array) => {
            (array.nullable, array.description, array.example) = (false, None, None);
            Schema::Array(array)
        }
        other => other,
    }
}

/// The schema only `null` is valid under, in 3.0's words.
fn only_null() -> utoipa::openapi::Object {
    ObjectBuilder::new()
        .schema_type(SchemaType::Object)
        .nullable(true)
        .enum_values(Some([serde_json::Value::Null]))
        .build()
}

/// A body that takes exactly one of `fields`, not null: the object and a `oneOf` with one
/// member per field.
fn exactly_one_of(schema: &mut RefOr<Schema>, fields: &[&str]) {
    let RefOr::T(Schema::Object(object)) = schema else {
        return;
    };
    let mut one = OneOf::new();
    for field in fields {
        let Some(RefOr::T(property)) = object.properties.get(*field) else {
            continue;
        };
        let member = ObjectBuilder::new()
            .property(*field, not_null(property.clone()))
            .required(*field)
            .build();
        one.items.push(member.into());
    }
    let mut both = AllOf::new();
    both.items = vec![
        Schema::Object(object.clone()).into(),
        Schema::OneOf(one).into(),
    ];
    *schema = Schema::AllOf(both).into();
}

/// `GET /v1/openapi.json`.
pub async fn document() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/json")],
        document_json(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Methods;
    use utoipa::openapi::path::{OperationBuilder, PathItem};
    use utoipa::openapi::{OpenApiBuilder, PathsBuilder};

    /// A document with one GET at each of `paths`, its policies applied.
    fn documented(policies: &[RoutePolicy]) -> serde_json::Value {
        let mut paths = PathsBuilder::new();
        for policy in policies {
            let operation = OperationBuilder::new()
                .response("200", ResponseBuilder::new().description("ok").build())
                .build();
            paths = paths.path(policy.path, PathItem::new(PathItemType::Get, operation));
        }
        let mut doc = OpenApiBuilder::new().paths(paths.build()).build();
        apply_route_policies(&mut doc, policies, &[]);
        serde_json::to_value(&doc).expect("json")
    }

    #[test]
    fn admin_operations_require_a_session_document_401_403_and_are_never_cacheable() {
        let admin = RoutePolicy {
            path: "/admin/probe",
            methods: Methods::GET,
            access: Access::Admin,
            caching: Caching::NoStore,
        };
        let public = RoutePolicy {
            path: "/public/probe",
            methods: Methods::GET,
            access: Access::Public,
            caching: Caching::Shared,
        };
        let doc = documented(&[admin, public]);
        let admin = &doc["paths"]["/admin/probe"]["get"];
        assert_eq!(
            admin["security"],
            serde_json::json!([{ "adminSession": [] }])
        );
        let statuses = |op: &serde_json::Value| -> Vec<String> {
            op["responses"]
                .as_object()
                .expect("responses")
                .keys()
                .cloned()
                .collect()
        };
        assert_eq!(
            statuses(admin),
            ["200", "400", "401", "403", "404", "405", "429", "500", "503"]
        );
        let headers = &admin["responses"]["200"]["headers"];
        assert_eq!(headers["Cache-Control"]["description"], "private, no-store");
        assert!(headers.get("ETag").is_none());

        let public = &doc["paths"]["/public/probe"]["get"];
        assert!(public.get("security").is_none());
        assert_eq!(
            statuses(public),
            ["200", "304", "400", "404", "405", "429", "500", "503"]
        );
        assert!(public["responses"]["304"].get("content").is_none());
        assert!(public["responses"]["304"]["headers"]["ETag"].is_object());
        let headers = &public["responses"]["200"]["headers"];
        assert_eq!(
            headers["Cache-Control"]["description"],
            "public, max-age=60"
        );
        assert!(headers.get("ETag").is_some());
    }
}
