//! `GET /media/pictures/{id}` and `/media/pictures/{id}/cropped`: the stored bytes of a
//! fetched picture and of its crop, immutable under a strong ETag (their SHA-256).

use super::error::ApiError;
use super::layers::caching::matches;
use crate::api::layers::capacity::Work;
use crate::domain::{ContentHash, ImageFormat, PictureId};
use axum::body::Body;
use axum::extract::Path;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// The bytes under a hash never change, so any cache may keep them for a year.
pub const IMMUTABLE: &str = "public, max-age=31536000, immutable";

pub async fn original(
    work: Work,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let picture = fetched_file(&work, id, |f| Some((f.hash, f.format))).await?;
    serve(&work, picture, &headers).await
}

pub async fn cropped(
    work: Work,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let picture = fetched_file(&work, id, |f| f.cropped.map(|c| (c, ImageFormat::Jpeg))).await?;
    serve(&work, picture, &headers).await
}

/// The hash and format of the file `pick` chooses, or the 404 of a picture not fetched (or
/// not cropped) yet: an unknown id answers the same. The record is read in a request slot,
/// like every store read; the file is read asynchronously after.
async fn fetched_file(
    work: &Work,
    id: String,
    pick: fn(&crate::domain::Fetched) -> Option<(ContentHash, ImageFormat)>,
) -> Result<(ContentHash, ImageFormat), ApiError> {
    let Ok(id) = id.parse::<PictureId>() else {
        return Err(not_fetched());
    };
    work.run(move |app| {
        app.store()
            .pictures()
            .picture(id)?
            .as_ref()
            .and_then(|p| p.fetched())
            .and_then(pick)
            .ok_or_else(not_fetched)
    })
    .await
}

async fn serve(
    work: &Work,
    (hash, format): (ContentHash, ImageFormat),
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    let tag = format!("\"{}\"", hash.hex());
    let mut response = if headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| matches(v, &tag))
    {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let Ok(bytes) = tokio::fs::read(work.media().path_of(&hash)).await else {
            // The record says fetched but the file is gone (a media dir not copied along).
            return Err(not_fetched());
        };
        let mut ok = Body::from(bytes).into_response();
        ok.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(format.content_type()),
        );
        ok
    };
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(IMMUTABLE));
    if let Ok(value) = HeaderValue::from_str(&tag) {
        headers.insert(header::ETAG, value);
    }
    Ok(response)
}

/// Until the image worker has fetched a picture, its media URL answers this 404.
pub fn not_fetched() -> ApiError {
    ApiError::not_found(
        "this picture has not been fetched yet",
        "listing pictures are re-hosted by the image worker; the source is never hotlinked",
    )
}
