//! Query-string parameters: our own extractor (its rejection is an [`ApiError`]), pagination,
//! sort names and free text, each validated once with a hint naming what is allowed.

use super::error::ApiError;
use axum::extract::{FromRequestParts, Path, Query};
use axum::http::request::Parts;
use catalogue_index::{DocKind, Filters, SearchRequest, SortOrder, TextQuery};
use serde::de::DeserializeOwned;
use serde::Deserialize;

/// Like axum's `Query`, answering our JSON error when the query string cannot be read.
/// Parameters not named by `T` are ignored.
pub struct Params<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Params<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(value)| Params(value))
            .map_err(|e| {
                ApiError::invalid(
                    format!("the query string could not be read: {}", e.body_text()),
                    "send parameters as name=value pairs, percent-encoded",
                )
            })
    }
}

/// Like axum's `Path`, answering our JSON error when a segment cannot be read (bad UTF-8).
pub struct PathParams<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for PathParams<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Path::<T>::from_request_parts(parts, state)
            .await
            .map(|Path(value)| PathParams(value))
            .map_err(|e| {
                ApiError::invalid(
                    format!("the path could not be read: {}", e.body_text()),
                    "path segments are slugs: lowercase letters, digits and hyphens",
                )
            })
    }
}

/// Default `pageSize` of every list.
pub const DEFAULT_PAGE_SIZE: usize = 24;
/// Largest `pageSize` of every list but the sitemaps.
pub const MAX_PAGE_SIZE: usize = 100;
/// Largest `pageSize` of a sitemap list: the sitemap protocol's cap on URLs per file.
pub const MAX_SITEMAP_PAGE_SIZE: usize = 50_000;
/// Largest `page`: the largest 32-bit integer, as the document's `int32` says.
pub const MAX_PAGE: usize = i32::MAX as usize;
/// Longest accepted `q`.
pub const MAX_QUERY_CHARS: usize = 200;

/// `page` and `pageSize` of every ordinary list, documented and read in one place: a list
/// handler takes them beside its own parameters (`params(PageParams, ...)`).
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct PageParams {
    /// Page number, from 1.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 2147483647, default = 1)]
    page: Option<String>,
    /// Items per page, 1 to 100.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100, default = 24)]
    page_size: Option<String>,
}

impl PageParams {
    /// The validated page: 400 `invalid_request` naming the parameter when out of range.
    pub fn pagination(&self) -> Result<Pagination, ApiError> {
        Pagination::list(self.page.as_deref(), self.page_size.as_deref())
    }
}

/// A validated `page` and `pageSize`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pagination {
    pub page: usize,
    pub page_size: usize,
}

impl Pagination {
    /// Parses `page` (from 1) and `pageSize` (1 to `max`, default `default`).
    pub fn parse(
        page: Option<&str>,
        page_size: Option<&str>,
        default: usize,
        max: usize,
    ) -> Result<Pagination, ApiError> {
        let page = positive("page", page, 1, MAX_PAGE, "page counts from 1")?;
        let page_size = positive(
            "pageSize",
            page_size,
            default,
            max,
            &format!("pageSize is an integer from 1 to {max} (default {default})"),
        )?;
        Ok(Pagination { page, page_size })
    }

    /// `page` and `pageSize` of an ordinary list.
    pub fn list(page: Option<&str>, page_size: Option<&str>) -> Result<Pagination, ApiError> {
        Self::parse(page, page_size, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
    }

    pub fn offset(&self) -> usize {
        (self.page - 1) * self.page_size
    }
}

fn positive(
    name: &str,
    value: Option<&str>,
    default: usize,
    max: usize,
    hint: &str,
) -> Result<usize, ApiError> {
    let Some(raw) = value else { return Ok(default) };
    match raw.parse::<usize>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(ApiError::invalid(
            format!("`{name}` must be an integer from 1 to {max}, not `{raw}`"),
            hint,
        )),
    }
}

/// The `sort` values of one list: each name and the order it means, the order without `sort`,
/// and the relevance order (the default when searching; without text it means the default).
pub trait SortParam {
    type Order: Copy + PartialEq + 'static;
    const CHOICES: &'static [(&'static str, Self::Order)];
    const DEFAULT: Self::Order;
    const RELEVANCE: Self::Order;
}

/// The OpenAPI schema of a `sort` parameter: a string enum of `S`'s names.
pub fn sort_schema<S: SortParam>() -> utoipa::openapi::Object {
    choice_schema(S::CHOICES)
}

/// The OpenAPI schema of a parameter read with [`parse_choice`] from `choices`: a string
/// enum of their names, so the document refuses what the handler refuses.
pub fn choice_schema<T>(choices: &[(&str, T)]) -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::SchemaType::String)
        .enum_values(Some(choices.iter().map(|(name, _)| *name)))
        .build()
}

/// A string that is never empty (a vocabulary word).
pub fn non_empty_schema() -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::SchemaType::String)
        .min_length(Some(1))
        .build()
}

/// The order a list is sorted by: `sort` when given, else relevance when searching, else the
/// list's default; relevance without text falls back to the default.
pub fn resolve_sort<S: SortParam>(
    value: Option<&str>,
    searching: bool,
) -> Result<S::Order, ApiError> {
    Ok(match parse_choice("sort", value, S::CHOICES)? {
        Some(sort) if sort == S::RELEVANCE && !searching => S::DEFAULT,
        Some(sort) => sort,
        None if searching => S::RELEVANCE,
        None => S::DEFAULT,
    })
}

/// A parameter taking one of a fixed set of names; `None` when absent.
pub fn parse_choice<T: Copy>(
    name: &str,
    value: Option<&str>,
    choices: &[(&str, T)],
) -> Result<Option<T>, ApiError> {
    let Some(raw) = value else { return Ok(None) };
    choices
        .iter()
        .find(|(choice, _)| *choice == raw)
        .map(|(_, value)| Some(*value))
        .ok_or_else(|| {
            let names: Vec<_> = choices.iter().map(|(choice, _)| *choice).collect();
            ApiError::invalid(
                format!("unknown {name} `{raw}`"),
                format!("{name} is one of: {}", names.join(", ")),
            )
        })
}

/// The index request of a searchable list from its `q`, `sort` (one of `S`) and paging.
pub fn list_request<S: SortParam<Order = SortOrder>>(
    kind: DocKind,
    filters: Filters,
    q: Option<&str>,
    sort: Option<&str>,
    pagination: Pagination,
) -> Result<SearchRequest, ApiError> {
    let text = parse_text_query(q)?;
    Ok(SearchRequest {
        kind,
        sort: resolve_sort::<S>(sort, text.is_some())?,
        text,
        filters,
        offset: pagination.offset(),
        limit: pagination.page_size,
    })
}

/// A boolean parameter: `true` or `false`; `None` when absent.
pub fn parse_bool(name: &str, value: Option<&str>) -> Result<Option<bool>, ApiError> {
    match value {
        None => Ok(None),
        Some("true") => Ok(Some(true)),
        Some("false") => Ok(Some(false)),
        Some(raw) => Err(ApiError::invalid(
            format!("`{name}` must be true or false, not `{raw}`"),
            format!("{name} is true or false"),
        )),
    }
}

/// A whole-number parameter such as a price bound (non-negative); `None` when absent.
pub fn parse_whole(name: &str, value: Option<&str>) -> Result<Option<u64>, ApiError> {
    let Some(raw) = value else { return Ok(None) };
    raw.parse::<u64>().map(Some).map_err(|_| {
        ApiError::invalid(
            format!("`{name}` must be a whole number, not `{raw}`"),
            format!("{name} is an integer of 0 or more, in whole currency units"),
        )
    })
}

/// `q` as the index takes it: the text and its normalised-reference form, matched as typed
/// (a list that tolerates typos turns them on).
pub fn parse_text_query(value: Option<&str>) -> Result<Option<TextQuery>, ApiError> {
    Ok(parse_text(value)?.map(|text| crate::jobs::typed_text(&text)))
}

/// The free-text `q`, trimmed; `None` when absent or blank.
pub fn parse_text(value: Option<&str>) -> Result<Option<String>, ApiError> {
    let Some(text) = value.map(str::trim).filter(|t| !t.is_empty()) else {
        return Ok(None);
    };
    if text.chars().count() > MAX_QUERY_CHARS {
        return Err(ApiError::invalid(
            format!("`q` is longer than {MAX_QUERY_CHARS} characters"),
            "search with a few words or a reference number",
        ));
    }
    Ok(Some(text.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_is_a_leaf_of_the_api_naming_only_its_errors() {
        let source = include_str!("params.rs");
        let code = &source[..source.find("#[cfg(test)]").unwrap_or(source.len())];
        let named: Vec<&str> = code
            .lines()
            .filter(|line| !line.trim_start().starts_with("//"))
            .flat_map(|line| {
                line.split("super::")
                    .skip(1)
                    .chain(line.split("crate::api::").skip(1))
            })
            .map(|rest| {
                rest.split(|c: char| !c.is_alphanumeric() && c != '_')
                    .next()
                    .unwrap_or("")
            })
            .collect();
        assert!(!named.is_empty(), "params names the API's errors");
        assert!(named.iter().all(|module| *module == "error"), "{named:?}");
    }

    #[test]
    fn booleans_and_whole_numbers_are_strict() {
        assert_eq!(parse_bool("unmatched", Some("true")), Ok(Some(true)));
        assert_eq!(parse_bool("unmatched", None), Ok(None));
        for bad in ["yes", "1", "TRUE", ""] {
            assert!(parse_bool("unmatched", Some(bad)).is_err(), "{bad}");
        }
        assert_eq!(parse_whole("minPriceUSD", Some("1500")), Ok(Some(1500)));
        for bad in ["1.5", "-3", "1e3", "abc", ""] {
            let error = parse_whole("minPriceUSD", Some(bad)).expect_err(bad);
            assert_eq!(error.code(), "invalid_request");
        }
    }

    #[test]
    fn pagination_defaults_and_bounds() {
        assert_eq!(
            Pagination::list(None, None),
            Ok(Pagination {
                page: 1,
                page_size: 24
            })
        );
        assert_eq!(
            Pagination::list(Some("3"), Some("100")),
            Ok(Pagination {
                page: 3,
                page_size: 100
            })
        );
        for (page, size) in [
            (Some("0"), None),
            (Some("abc"), None),
            (None, Some("101")),
            (None, Some("-1")),
            (None, Some("0")),
            (Some("1.5"), None),
        ] {
            assert!(Pagination::list(page, size).is_err(), "{page:?} {size:?}");
        }
        let p = Pagination {
            page: 2,
            page_size: 10,
        };
        let page = p.wrap(vec![1], 11);
        assert_eq!((page.total, page.total_pages), (11, 2));
    }
}
