//! `GET /console/pictures`: the picture review queue, one model at a time.

use super::*;

#[derive(Template)]
#[template(path = "pictures.html", config = "src/console/askama.toml")]
struct PicturesPage {
    signed: Option<Signed>,
    writes: bool,
    statuses: Vec<KindChoice>,
    filtered: bool,
    model: Option<ReviewQueueItem>,
    /// The model's FRONT picture, if it has one.
    front: Option<ReviewPicture>,
    position: usize,
    total: usize,
    previous: Option<String>,
    next: Option<String>,
}

/// `GET /console/pictures`: one model of the review queue at a time, its front picture beside
/// its candidates with their sources and sizes; for an admin, the choices `console.js` posts to
/// the API (a candidate selected, the picture kept, a picture set by its address).
pub async fn pictures(
    work: Work,
    SignedCaller(signed): SignedCaller,
    Extension(media): Extension<MediaBase>,
    Params(filter): Params<ReviewParams>,
    Params(position): Params<Position>,
) -> ApiResult<Response> {
    let at = Pagination::parse(position.page.as_deref(), None, 1, 1)?;
    let page = work
        .run(move |app| {
            let found = picture_review::queue_page(app, &filter, at, &media)?;
            let status = shown(&filter.status);
            let filters = [("status", status.as_str())];
            let pager = Pager::one_at_a_time("/console/pictures", &filters, at.page, found.total);
            let model = found.data.into_iter().next();
            let front = model
                .as_ref()
                .and_then(|m| m.pictures.iter().find(|p| p.kind == "FRONT").cloned());
            let statuses = [
                ("", "waiting for review"),
                ("reviewed", "reviewed"),
                ("all", "all"),
            ]
            .into_iter()
            .map(|(value, label)| KindChoice {
                value,
                label: label.to_owned(),
                selected: status == value || (value.is_empty() && status == "pending"),
            })
            .collect();
            Ok(PicturesPage {
                signed: Some(Signed::of(&signed)),
                writes: signed.user.role == Role::Admin,
                statuses,
                filtered: !(status.is_empty() || status == "pending"),
                model,
                front,
                position: at.page,
                total: found.total,
                previous: pager.previous,
                next: pager.next,
            })
        })
        .await?;
    render(&page)
}
