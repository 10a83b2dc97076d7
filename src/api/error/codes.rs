//! How each lower layer's error is answered: one [`ErrorCode`] impl per error type a handler
//! meets, written here so that the store, the jobs and the domain never import the API. With
//! them `?` in a handler answers any of these errors; no handler maps one by hand.

use super::{internal, ApiError};
use crate::auth::AuthError;
use crate::domain::rates::RatesError;
use crate::jobs::ingest::IngestError;
use crate::jobs::merge::MergeError;
use crate::jobs::picture_review::ReviewError;
use crate::jobs::queue::SubmitError;
use crate::jobs::reconciliation::{Field, ReconcileError};
use crate::jobs::snapshot_rules::{ObservedAtError, ShareError};
use crate::jobs::users::UserError;
use crate::jobs::writer::WriteError;
use crate::store::StoreError;
use catalogue_index::IndexError;

/// An error of a lower layer that reaches a handler, and its answer: a refusal (400, naming
/// what to change), an unknown id (404, naming where the ids are listed), a 503, or a server
/// fault (500, its causes logged, nothing of them told).
pub trait ErrorCode: std::error::Error + 'static {
    fn api_error(&self) -> ApiError;
}

impl<E: ErrorCode> From<E> for ApiError {
    fn from(error: E) -> ApiError {
        error.api_error()
    }
}

impl ApiError {
    /// 404 for a model id that names no model.
    pub fn unknown_model(id: &str) -> ApiError {
        no_such("model", id, "GET /v1/models lists models and their ids")
    }

    /// 404 for a listing id that names no listing.
    pub fn unknown_listing(id: &str) -> ApiError {
        no_such(
            "listing",
            id,
            "GET /v1/listings lists listings and their ids",
        )
    }
}

/// `no model with id `41``, and where the ids are listed.
fn no_such(what: &str, id: &str, hint: &str) -> ApiError {
    ApiError::not_found(format!("no {what} with id `{id}`"), hint)
}

/// 400 naming the field of the body at fault.
fn invalid_field(field: &str, message: &str, hint: &str) -> ApiError {
    ApiError::invalid(format!("`{field}`: {message}"), hint)
}

/// What a refused rates file is told to send instead.
pub const ECB_HINT: &str =
    "send the ECB's eurofxref-daily.xml (or a history: eurofxref-hist-90d.xml, eurofxref-hist.xml) as it is published";

impl ErrorCode for StoreError {
    fn api_error(&self) -> ApiError {
        internal(self)
    }
}

impl ErrorCode for IndexError {
    fn api_error(&self) -> ApiError {
        internal(self)
    }
}

impl ErrorCode for crate::jobs::w3c_candidates::CandidatesError {
    fn api_error(&self) -> ApiError {
        internal(self)
    }
}

impl ErrorCode for AuthError {
    fn api_error(&self) -> ApiError {
        match self {
            AuthError::WeakPassword => {
                ApiError::invalid(self.to_string(), "choose a longer password")
            }
            AuthError::Hash(_) | AuthError::Random(_) => internal(self),
        }
    }
}

/// A write's own refusal is the job's answer; an index left behind by it is a server fault
/// (what was committed stays, and the index is rebuilt at the next start or job).
impl<E: ErrorCode> ErrorCode for WriteError<E> {
    fn api_error(&self) -> ApiError {
        match self {
            WriteError::Job(error) => error.api_error(),
            WriteError::Index(_) => internal(self),
        }
    }
}

impl ErrorCode for SubmitError {
    fn api_error(&self) -> ApiError {
        match self {
            SubmitError::Stopping => ApiError::Unavailable {
                message: self.to_string(),
                retry_after: None,
            },
            SubmitError::Store(error) => internal(error),
        }
    }
}

/// A snapshot refused before it was queued: the provider unknown (404), or the snapshot empty,
/// half invalid or delisting too much of the stock (400, what to do and its first problems in
/// the hint).
impl ErrorCode for IngestError {
    fn api_error(&self) -> ApiError {
        match self {
            IngestError::UnknownProvider(slug) => ApiError::not_found(
                format!("no provider with slug `{slug}`"),
                "providers come from a dataset's providers.jsonl",
            ),
            IngestError::Refused { refusal, .. } => {
                let report = crate::jobs::batch::refusal(self).unwrap_or_default();
                let hint = match report.is_empty() {
                    true => refusal.advice().to_owned(),
                    false => format!("{}; the first problems:\n{report}", refusal.advice()),
                };
                ApiError::invalid(refusal.to_string(), hint)
            }
            IngestError::Io(error) => internal(error),
            IngestError::Store(error) => internal(error),
            IngestError::Feed { .. } | IngestError::Interrupted(_) => internal(self),
        }
    }
}

impl ErrorCode for ObservedAtError {
    fn api_error(&self) -> ApiError {
        ApiError::invalid(
            format!("{} `{}` is not a time", self.name, self.text),
            self.to_string(),
        )
    }
}

impl ErrorCode for ShareError {
    fn api_error(&self) -> ApiError {
        ApiError::invalid(
            format!("{} `{}` is not a share", self.name, self.text),
            self.to_string(),
        )
    }
}

/// A posted rates file that does not parse, or gives no US dollar table.
impl ErrorCode for RatesError {
    fn api_error(&self) -> ApiError {
        ApiError::invalid(format!("not an ECB rates file: {self}"), ECB_HINT)
    }
}

/// A refused merge or dismissal: 400 naming the field, 404 naming the id.
impl ErrorCode for MergeError {
    fn api_error(&self) -> ApiError {
        match self {
            MergeError::Invalid {
                field,
                message,
                hint,
            } => invalid_field(field, message, hint),
            MergeError::UnknownModel(id) => no_such(
                "model",
                id,
                "GET /v1/duplicate-models lists the groups and their models' ids",
            ),
            MergeError::Store(_) | MergeError::Index(_) => internal(self),
        }
    }
}

/// A refused user change: 400 naming what to do instead, 404 naming where users are listed.
impl ErrorCode for UserError {
    fn api_error(&self) -> ApiError {
        match self {
            UserError::Exists(_) => invalid_field(
                "name",
                &self.to_string(),
                "choose another name, or change that user's role",
            ),
            UserError::OwnAccount(_) => ApiError::invalid(
                self.to_string(),
                "sign in as another admin to change this account",
            ),
            UserError::Unknown(name) => ApiError::not_found(
                self.to_string(),
                format!("GET /v1/admin/users lists the users; `{name}` is not one of them"),
            ),
            UserError::Auth(error) => error.api_error(),
            UserError::Store(error) => error.api_error(),
        }
    }
}

/// A refused reconciliation: 400 naming each field, 404 naming the id.
impl ErrorCode for ReconcileError {
    fn api_error(&self) -> ApiError {
        match self {
            ReconcileError::Invalid { problems, hint } => {
                let message = problems
                    .iter()
                    .map(|(field, message)| format!("`{}`: {message}", field_path(field)))
                    .collect::<Vec<_>>()
                    .join("; ");
                ApiError::invalid(message, hint)
            }
            ReconcileError::UnknownGroup(id) => no_such(
                "group of unmatched listings",
                id,
                "GET /v1/reconciliation lists the groups and their ids (a group resolved since is gone)",
            ),
            ReconcileError::UnknownListing(id) => ApiError::unknown_listing(id),
            ReconcileError::UnknownModel(id) => ApiError::unknown_model(id),
            ReconcileError::Inconsistent(_)
            | ReconcileError::Store(_)
            | ReconcileError::Index(_) => internal(self),
        }
    }
}

/// Where in a reconciliation's body a problem lies.
fn field_path(field: &Field) -> String {
    match field {
        Field::Group => "group".to_owned(),
        Field::Model(Some(name)) => format!("fields.{name}"),
        Field::Model(None) => "fields".to_owned(),
    }
}

/// A refused review write: 404 naming the id, 400 naming the field.
impl ErrorCode for ReviewError {
    fn api_error(&self) -> ApiError {
        match self {
            ReviewError::UnknownCandidate(id) => no_such(
                "picture-review candidate",
                id,
                "GET /v1/picture-review lists models with their candidates and ids",
            ),
            ReviewError::UnknownPicture(id) => no_such(
                "model picture",
                id,
                "GET /v1/picture-review lists models with their pictures and ids",
            ),
            ReviewError::UnknownModel(id) => ApiError::unknown_model(id),
            ReviewError::Invalid {
                field,
                message,
                hint,
            } => invalid_field(field, message, hint),
            ReviewError::Store(_) => internal(self),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message_and_hint(error: ApiError) -> (String, String) {
        match error {
            ApiError::InvalidRequest { message, hint } | ApiError::NotFound { message, hint } => {
                (message, hint.unwrap_or_default())
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_refused_write_is_the_jobs_answer_and_a_lagging_index_a_server_fault() {
        let refused: WriteError<MergeError> =
            WriteError::Job(MergeError::UnknownModel("41".into()));
        assert_eq!(
            message_and_hint(refused.into()),
            (
                "no model with id `41`".to_owned(),
                "GET /v1/duplicate-models lists the groups and their models' ids".to_owned()
            )
        );
        let lagging: WriteError<MergeError> =
            WriteError::Index(crate::jobs::reindex::ReindexError::Index(IndexError::Io(
                std::io::Error::other("disk gone"),
            )));
        assert_eq!(ApiError::from(lagging).status().as_u16(), 500);
    }

    #[test]
    fn a_reconciliation_names_each_field_as_its_body_does() {
        let error = ReconcileError::Invalid {
            problems: vec![
                (Field::Group, "has no brand".into()),
                (Field::Model(Some("series".into())), "is required".into()),
                (Field::Model(None), "name a model".into()),
            ],
            hint: "fix them".into(),
        };
        assert_eq!(
            message_and_hint(error.into()).0,
            "`group`: has no brand; `fields.series`: is required; `fields`: name a model"
        );
    }

    #[test]
    fn the_same_unknown_model_reads_the_same_from_every_write() {
        let reconciled = ApiError::from(ReconcileError::UnknownModel("7".into()));
        let reviewed = ApiError::from(ReviewError::UnknownModel("7".into()));
        assert_eq!(reconciled, reviewed);
        assert_eq!(reconciled, ApiError::unknown_model("7"));
        assert_eq!(reconciled.status().as_u16(), 404);
    }

    #[test]
    fn a_job_refused_while_stopping_is_a_503_without_retry_after() {
        assert_eq!(
            ApiError::from(SubmitError::Stopping),
            ApiError::Unavailable {
                message: SubmitError::Stopping.to_string(),
                retry_after: None,
            }
        );
    }
}
