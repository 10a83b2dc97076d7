//! `GET /console/`: the catalogue's counts, the open work by kind, the newest jobs and audit
//! entries.

use super::*;

/// Jobs and audit entries the home page shows.
const NEWEST_SHOWN: usize = 10;

/// A row of the home page's open work.
pub struct Attention {
    pub work: &'static str,
    pub kind: &'static str,
    pub open: u64,
}

#[derive(Template)]
#[template(path = "home.html", config = "src/console/askama.toml")]
struct HomePage {
    signed: Option<Signed>,
    /// True for an admin: the controls that change something are shown.
    writes: bool,
    counts: Vec<(&'static str, u64)>,
    attention: Vec<Attention>,
    jobs: Vec<JobView>,
    audit: Vec<AuditEntryView>,
}

/// `GET /console/`: the home page of a signed-in caller (the guard sent anyone else to sign in).
pub async fn home(work: Work, SignedCaller(signed): SignedCaller) -> ApiResult<Response> {
    let page = work.run(move |app| home_page(app, &signed)).await?;
    render(&page)
}

fn home_page(app: &App, signed: &SignedIn) -> ApiResult<HomePage> {
    let store = app.store();
    let mut counts = Vec::new();
    for (label, counted) in [
        ("brands", Counted::Brands),
        ("series", Counted::Series),
        ("models", Counted::Models),
        ("calibres", Counted::Calibers),
        ("providers", Counted::Providers),
        ("listings", Counted::Listings),
        ("unmatched listings", Counted::UnmatchedListings),
    ] {
        counts.push((label, store.count_of(counted)?));
    }
    let newest = Pagination {
        page: 1,
        page_size: NEWEST_SHOWN,
    };
    let jobs = admin_jobs::job_page(app, newest)?.data;
    let (audit, _) = store
        .audit()
        .page(AuditFilter::default(), 0, NEWEST_SHOWN)?;
    Ok(HomePage {
        signed: Some(Signed::of(signed)),
        writes: signed.user.role == Role::Admin,
        counts,
        attention: attention(app)?,
        jobs,
        audit: audit.into_iter().map(AuditEntryView::from).collect(),
    })
}

/// The open work: duplicate groups by the signal that formed them, groups of unmatched listings
/// by reason, models whose pictures wait for review.
fn attention(app: &App) -> ApiResult<Vec<Attention>> {
    let mut rows = Vec::new();
    let groups = app.duplicate_groups()?;
    for kind in DuplicateSignal::ALL {
        let open = groups.iter().filter(|group| group.kind == kind).count() as u64;
        rows.push(Attention {
            work: "duplicate models",
            kind: kind.as_str(),
            open,
        });
    }
    for reason in MatchOutcome::REASONS {
        let (Some(name), Some(code)) = (reason.reason(), reason.reason_code()) else {
            continue;
        };
        rows.push(Attention {
            work: "reconciliation",
            kind: name,
            open: app.store().unmatched().count(GroupOrder::Reason(code))?,
        });
    }
    let pending = app
        .store()
        .pictures()
        .review_queue(&[ReviewStatus::Pending])?;
    rows.push(Attention {
        work: "picture review",
        kind: "pending",
        open: pending.len() as u64,
    });
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_is_escaped() {
        let hostile = "<script>alert(1)</script>";
        let page = HomePage {
            signed: Some(Signed {
                name: hostile.into(),
                role: "admin",
            }),
            writes: true,
            counts: vec![("models", 1)],
            attention: Vec::new(),
            jobs: Vec::new(),
            audit: vec![AuditEntryView {
                id: "1".into(),
                at: "2026-11-29T10:00:00Z".into(),
                user: "ana".into(),
                action: "reconciliation.link".into(),
                targets: Vec::new(),
                detail: r#"<img src=x onerror="alert(2)">"#.into(),
            }],
        };
        let html = page.render().expect("render");
        assert!(!html.contains("<script>alert"), "{html}");
        assert!(!html.contains("<img src=x"), "{html}");
        assert!(
            html.contains("&#60;script&#62;alert(1)&#60;/script&#62;"),
            "{html}"
        );
        assert!(
            html.contains("&#60;img src=x onerror=&#34;alert(2)&#34;&#62;"),
            "{html}"
        );
    }
}
