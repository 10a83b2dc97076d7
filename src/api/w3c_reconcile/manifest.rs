//! The service manifest: what `GET /reconcile` answers without `queries`. Its URLs are
//! absolute, built from the request's `Host` (OpenRefine needs them so); the identifier and
//! schema spaces are fixed names, the same whatever host serves them.

use super::entity::EntityType;
use super::SERVICE_PATH;
use crate::api::views::w3c::{Extend, Manifest, Preview, Service, Suggest, UrlTemplate};
use axum::http::{header, HeaderMap};

/// The namespace of this catalogue's ids (an `id` is `models/{brand}/{model}` under it).
pub const IDENTIFIER_SPACE: &str = "https://watchcatalogue.example/v1/";
/// The namespace of the property ids of queries and extensions.
pub const SCHEMA_SPACE: &str = "https://watchcatalogue.example/v1/reconcile/properties/";
/// Size OpenRefine gives the preview card's frame.
const PREVIEW_WIDTH: u32 = 420;
const PREVIEW_HEIGHT: u32 = 150;

impl Manifest {
    /// The manifest of the service as `headers` reached it.
    pub fn for_request(headers: &HeaderMap) -> Manifest {
        let origin = origin(headers);
        let v1 = format!("{origin}/v1");
        let service = |path: &str| Service {
            service_url: v1.clone(),
            service_path: format!("{SERVICE_PATH}{path}"),
        };
        Manifest {
            versions: ["0.2"],
            name: "Watch catalogue",
            identifier_space: IDENTIFIER_SPACE,
            schema_space: SCHEMA_SPACE,
            documentation: format!("{v1}/openapi.json"),
            view: UrlTemplate {
                url: format!("{v1}/{{{{id}}}}"),
            },
            preview: Preview {
                url: format!("{v1}{SERVICE_PATH}/preview?id={{{{id}}}}"),
                width: PREVIEW_WIDTH,
                height: PREVIEW_HEIGHT,
            },
            default_types: EntityType::ALL.into_iter().map(EntityType::view).collect(),
            suggest: Suggest {
                entity: service("/suggest/entity"),
                kind: service("/suggest/type"),
                property: service("/suggest/property"),
            },
            extend: Extend {
                propose_properties: service("/propose_properties"),
                property_settings: [],
            },
        }
    }
}

/// `scheme://host` of the request: `https` when a proxy says so (`X-Forwarded-Proto`), and
/// the `Host` header when it is a plain host name or address with a port, else `localhost`
/// (nothing a client sent goes into the manifest unchecked).
fn origin(headers: &HeaderMap) -> String {
    let text = |name| headers.get(name).and_then(|v| v.to_str().ok());
    let scheme = match text(header::HeaderName::from_static("x-forwarded-proto")) {
        Some(proto) if proto.eq_ignore_ascii_case("https") => "https",
        _ => "http",
    };
    let host = text(header::HOST)
        .filter(|host| {
            !host.is_empty()
                && host.len() <= 255
                && host
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || ".-:[]".contains(c))
        })
        .unwrap_or("localhost");
    format!("{scheme}://{host}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn urls_follow_the_host_and_refuse_what_is_no_host() {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, HeaderValue::from_static("127.0.0.1:8080"));
        let manifest = Manifest::for_request(&headers);
        assert_eq!(manifest.view.url, "http://127.0.0.1:8080/v1/{{id}}");
        assert_eq!(
            manifest.preview.url,
            "http://127.0.0.1:8080/v1/reconcile/preview?id={{id}}"
        );
        headers.insert("x-forwarded-proto", HeaderValue::from_static("HTTPS"));
        headers.insert(header::HOST, HeaderValue::from_static("evil\"/x"));
        assert_eq!(origin(&headers), "https://localhost");
    }
}
