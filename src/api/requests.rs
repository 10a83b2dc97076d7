//! Request bodies: the `JsonBody` extractor every JSON body goes through (its rejection is an
//! [`ApiError`]; a key given twice is refused), and the bodies of sign-in and the back office's
//! writes, each documented in the OpenAPI document.

use super::error::ApiError;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{Map, Value};

/// Like axum's `Json`, answering 400 `invalid_request` for a body that is malformed, of the
/// wrong shape, not JSON, or larger than the body limit.
pub struct JsonBody<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> axum::extract::FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(
        request: axum::extract::Request,
        state: &S,
    ) -> Result<Self, Self::Rejection> {
        let limit = super::layers::BodyLimit::of(&request);
        if !declared_json(request.headers()) {
            return Err(ApiError::invalid(
                "the body is not declared as JSON",
                "send Content-Type: application/json",
            ));
        }
        let bytes = axum::body::Bytes::from_request(request, state)
            .await
            .map_err(|e| match e.status() {
                axum::http::StatusCode::PAYLOAD_TOO_LARGE => ApiError::body_too_large(limit),
                _ => ApiError::invalid(
                    format!("the body could not be read: {}", e.body_text()),
                    BODY_HINT,
                ),
            })?;
        let axum::Json(value) = axum::Json::<T>::from_bytes(&bytes).map_err(|e| {
            ApiError::invalid(
                format!("the JSON body could not be read: {}", e.body_text()),
                BODY_HINT,
            )
        })?;
        // Well-formed, so UTF-8: the text is walked again for a key given twice.
        refuse_repeated_key(&String::from_utf8_lossy(&bytes), "the body", BODY_HINT)?;
        Ok(JsonBody(value))
    }
}

/// `Content-Type: application/json`, or any `application/*+json`, parameters aside: what
/// axum's `Json` accepts.
fn declared_json(headers: &axum::http::HeaderMap) -> bool {
    let Some(value) = headers.get(axum::http::header::CONTENT_TYPE) else {
        return false;
    };
    let essence = value.to_str().unwrap_or("").split(';').next().unwrap_or("");
    let essence = essence.trim().to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

const BODY_HINT: &str = "send one JSON object with the documented fields";

/// Refuses JSON text (`what`: "the body", "`queries`") that gives a key twice in one object:
/// read as a value, the first would be dropped without a word.
pub fn refuse_repeated_key(json: &str, what: &str, hint: &str) -> Result<(), ApiError> {
    match crate::domain::repeated_key(json) {
        Some(path) => Err(ApiError::invalid(
            format!("{what} gives `{path}` twice; give each key once"),
            hint,
        )),
        None => Ok(()),
    }
}

/// What `POST /auth/login` takes.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Credentials {
    #[schema(example = "ana")]
    pub username: String,
    #[schema(example = "correct horse battery staple")]
    pub password: String,
}

/// `POST /reconciliation/link`: a group, or listings by id, and the model to link them to.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"group": "8bcf32a792c9e612", "model": "3"}))]
pub struct LinkBody {
    /// A group id of `GET /reconciliation`; give it or `listings`.
    #[schema(example = "8bcf32a792c9e612")]
    pub group: Option<String>,
    /// Listing ids (1 to 1000), matched or not; give them or `group`.
    #[schema(example = json!(["7", "11"]), min_items = 1, max_items = 1000)]
    pub listings: Option<Vec<String>>,
    /// The id of the model to link them to.
    #[schema(example = "3")]
    pub model: String,
}

/// `POST /reconciliation/models`: a group and the fields of the model to make of it.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"group": "8bcf32a792c9e612", "fields": {"series": "submariner", "name": "Submariner Date", "bezelColors": ["green"], "releaseYear": 2003}}))]
pub struct CreateModelBody {
    /// A group id of `GET /reconciliation`.
    #[schema(example = "8bcf32a792c9e612")]
    pub group: String,
    /// The model's fields, as a line of models.jsonl names them (docs/dataset-format.md):
    /// `series` and `name` are required; `brand` defaults to the group's brand (and must be it
    /// when the group has one), `referenceNumber` to the group's most used spelling, `slug` to
    /// one made of name and reference, free in the brand; `alternateReferences`, `caliber`
    /// (`brandSlug/caliberSlug`), `description`, `pictures` and every field of the model
    /// specification are optional. The group's reference becomes one of the model's.
    #[schema(value_type = Object, example = json!({"series": "submariner", "name": "Submariner Date", "bezelColors": ["green"]}))]
    pub fields: Map<String, Value>,
}

/// `POST /reconciliation/models/update`: a group, the model to update for it, and the fields
/// to change.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"group": "8bcf32a792c9e612", "model": "3", "fields": {"description": "Green bezel, the Kermit."}}))]
pub struct UpdateModelBody {
    /// A group id of `GET /reconciliation`.
    #[schema(example = "8bcf32a792c9e612")]
    pub group: String,
    /// The id of the model to update.
    #[schema(example = "3")]
    pub model: String,
    /// Fields to write over the model's, named as in models.jsonl; a field set to null is
    /// cleared. A model keeps its brand. The group's reference is added to
    /// `alternateReferences` unless the model has it.
    #[serde(default)]
    #[schema(value_type = Object, example = json!({"description": "Green bezel, the Kermit."}))]
    pub fields: Map<String, Value>,
}

/// `POST /duplicate-models/merge`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(example = json!({"keeperId": "3", "duplicateIds": ["41"]}))]
pub struct MergeBody {
    /// The surviving model.
    pub keeper_id: String,
    /// The models merged into it and deleted.
    pub duplicate_ids: Vec<String>,
}

/// `POST /duplicate-models/dismiss`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(example = json!({"modelIds": ["3", "41"]}))]
pub struct DismissBody {
    /// The models of a group, at least two different ones: every pair of them is dismissed.
    #[schema(min_items = 2)]
    pub model_ids: Vec<String>,
}

/// `PUT /picture-review/models/{id}/front-picture`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"url": "https://images.example.com/126610ln.jpg", "protected": true}))]
pub struct FrontPictureBody {
    /// A new image for the FRONT picture (http or https): it replaces the picture, or creates
    /// it when the model has none; the image pipeline fetches and crops it.
    #[schema(example = "https://images.example.com/126610ln.jpg")]
    pub url: Option<String>,
    /// Whether automatic processes must leave the picture alone.
    pub protected: bool,
}

/// `POST /admin/users`: a colleague to add. The password is hashed at once and never echoed,
/// logged or kept in the clear; so no `Debug` is derived here.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"name": "bea", "role": "viewer", "password": "a long password of hers"}))]
pub struct NewUserBody {
    /// 1 to 64 lowercase letters, digits, `.`, `_` or `-`.
    #[schema(pattern = "^[a-z0-9._-]{1,64}$")]
    pub name: String,
    /// `admin` (the back office) or `viewer` (reads only).
    #[schema(pattern = "^(admin|viewer)$")]
    pub role: String,
    /// At least 10 characters.
    #[schema(min_length = 10)]
    pub password: String,
}

/// `PUT /admin/users/{name}/role`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"role": "admin"}))]
pub struct RoleBody {
    /// `admin` or `viewer`.
    #[schema(pattern = "^(admin|viewer)$")]
    pub role: String,
}

/// `PUT /admin/users/{name}/password`; no `Debug`, as for [`NewUserBody`].
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"password": "a new long password"}))]
pub struct PasswordBody {
    /// At least 10 characters.
    #[schema(min_length = 10)]
    pub password: String,
}
