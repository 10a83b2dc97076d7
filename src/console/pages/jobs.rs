//! `GET /console/jobs`: the jobs with their progress and reports, and the controls that start one.

use super::*;

#[derive(Template)]
#[template(path = "jobs.html", config = "src/console/askama.toml")]
struct JobsPage {
    signed: Option<Signed>,
    writes: bool,
    providers: Vec<EntityRef>,
    jobs: Vec<JobView>,
    /// True while a job shown is queued or running: `console.js` reads the page again.
    live: bool,
    total: usize,
    page: usize,
    pages: usize,
    previous: Option<String>,
    next: Option<String>,
}

/// `GET /console/jobs`: the jobs, newest first, with their progress, reports and errors; for an
/// admin, the buttons that start a match, a reindex or the duplicate finder's pass and the form
/// that uploads a provider's snapshot, each posted by `console.js` to the API.
pub async fn jobs(
    work: Work,
    SignedCaller(signed): SignedCaller,
    Params(page): Params<PageParams>,
) -> ApiResult<Response> {
    let pagination = page.pagination()?;
    let page = work
        .run(move |app| {
            let found = admin_jobs::job_page(app, pagination)?;
            let providers = (app.store().listings().providers())
                .map(|provider| Ok(EntityRef::from(&provider?)))
                .collect::<ApiResult<Vec<_>>>()?;
            let Pager {
                pages,
                previous,
                next,
            } = Pager::list("/console/jobs", &[], pagination, found.total);
            Ok(JobsPage {
                signed: Some(Signed::of(&signed)),
                writes: signed.user.role == Role::Admin,
                providers,
                live: (found.data.iter()).any(|job| matches!(job.state, "queued" | "running")),
                previous,
                next,
                jobs: found.data,
                total: found.total,
                page: pagination.page,
                pages,
            })
        })
        .await?;
    render(&page)
}
