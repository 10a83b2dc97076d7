//! The console through the router `serve` builds: an anonymous caller is sent to sign in and
//! shown nothing, a viewer sees the home page read-only, an admin sees it whole; every answer
//! carries the console's security headers and loads nothing but its own embedded assets.

use crate::support::{SessionClient, TestApp};
use reqwest::header::HeaderMap;
use reqwest::Method;
use watch_catalogue::domain::Role;

async fn app() -> TestApp {
    crate::support::admin_and_viewer_app().await
}

/// An answer of the console: status, headers, body as text.
struct Answer {
    status: u16,
    headers: HeaderMap,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }
}

async fn answer(
    app: &TestApp,
    session: Option<&SessionClient<'_>>,
    method: Method,
    path: &str,
) -> Answer {
    let request = match session {
        Some(session) => session.request(method, path),
        None => app.request(method, path),
    };
    let response = app.send(request).await;
    Answer {
        status: response.status().as_u16(),
        headers: response.headers().clone(),
        body: response.text().await.expect("body"),
    }
}

async fn get(app: &TestApp, session: Option<&SessionClient<'_>>, path: &str) -> Answer {
    answer(app, session, Method::GET, path).await
}

/// The console's policy: its own script, style and pictures, nothing inline, no frame.
const POLICY: &str =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
     connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

fn assert_locked_down(answer: &Answer, path: &str) {
    assert_eq!(answer.header("content-security-policy"), POLICY, "{path}");
    assert_eq!(answer.header("x-frame-options"), "DENY", "{path}");
    assert_eq!(answer.header("x-content-type-options"), "nosniff", "{path}");
}

/// A page's HTML runs no inline script and sets no inline style (the policy would block them).
fn assert_nothing_inline(html: &str) {
    assert_eq!(
        html.matches("<script").count(),
        html.matches(r#"<script src="/console/assets/console.js" defer></script>"#)
            .count(),
        "only the console's own script: {html}"
    );
    for inline in [
        " style=",
        " onclick=",
        " onload=",
        " onsubmit=",
        "javascript:",
    ] {
        assert!(!html.contains(inline), "{inline} in {html}");
    }
}

#[tokio::test]
async fn an_anonymous_caller_is_sent_to_sign_in_and_shown_nothing() {
    let app = app().await;
    for path in [
        "/console",
        "/console/",
        "/console/duplicates",
        "/console/?page=2",
    ] {
        let answer = get(&app, None, path).await;
        assert_eq!(answer.status, 303, "{path}");
        assert_eq!(answer.header("location"), "/console/sign-in", "{path}");
        assert!(answer.body.is_empty(), "{path}: {}", answer.body);
    }
    let sign_in = get(&app, None, "/console/sign-in").await;
    assert_eq!(sign_in.status, 200);
    assert_locked_down(&sign_in, "/console/sign-in");
    assert_nothing_inline(&sign_in.body);
    assert!(sign_in.header("content-type").starts_with("text/html"));
    assert!(sign_in.body.contains(r#"<label for="username">"#));
    assert!(sign_in.body.contains(r#"<label for="password">"#));
    assert!(!sign_in.body.contains("Sign out"), "no one is signed in");
    assert!(
        !sign_in.body.contains("listings"),
        "no figure of the catalogue"
    );
}

#[tokio::test]
async fn the_assets_are_embedded_with_their_types_and_anything_else_is_404() {
    let app = app().await;
    let script = get(&app, None, "/console/assets/console.js").await;
    assert_eq!(script.status, 200);
    assert_eq!(
        script.header("content-type"),
        "text/javascript; charset=utf-8"
    );
    assert!(script.body.contains("/v1/auth/login"));
    let style = get(&app, None, "/console/assets/console.css").await;
    assert_eq!(style.status, 200);
    assert_eq!(style.header("content-type"), "text/css; charset=utf-8");
    assert_locked_down(&style, "/console/assets/console.css");
    let missing = get(&app, None, "/console/assets/evil.js").await;
    assert_eq!(missing.status, 404);
}

#[tokio::test]
async fn a_viewer_sees_home_read_only_and_an_admin_sees_it_whole() {
    let app = app().await;
    let ana = app.session("ana").await;
    let vic = app.session("vic").await;
    let stats = ana.ok("/v1/admin/stats").await;
    for (session, name, role) in [(&vic, "vic", "viewer"), (&ana, "ana", "admin")] {
        let home = get(&app, Some(session), "/console/").await;
        assert_eq!(home.status, 200, "{name}: {}", home.body);
        assert_locked_down(&home, "/console/");
        assert_nothing_inline(&home.body);
        assert_eq!(home.header("cache-control"), "private, no-store");
        assert!(home
            .body
            .contains(&format!(r#"{name} <span class="role">{role}</span>"#)));
        let models = format!("<dt>models</dt><dd>{}</dd>", stats["models"]);
        assert!(home.body.contains(&models), "{models} in {}", home.body);
        let unmatched = format!(
            "<dt>unmatched listings</dt><dd>{}</dd>",
            stats["unmatchedListings"]
        );
        assert!(home.body.contains(&unmatched), "{unmatched}");
        // Each sign-in is in the audit trail the page shows.
        assert!(home.body.contains("<td>auth.login</td>"));
        assert_eq!(
            home.body.contains("signed in as a viewer"),
            role == "viewer",
            "{name}"
        );
        // Signed in, the sign-in page sends the caller home.
        let sign_in = get(&app, Some(session), "/console/sign-in").await;
        assert_eq!(
            (sign_in.status, sign_in.header("location")),
            (303, "/console/")
        );
    }
    // The viewer is refused the API's back office all the same.
    assert_eq!(vic.get("/v1/admin/stats").await.0, 403);
}

#[tokio::test]
async fn home_shows_the_open_work_and_a_job_as_it_goes() {
    let app = app().await;
    let ana = app.session("ana").await;
    let (status, job) = ana.call(Method::POST, "/v1/admin/match", None).await;
    assert_eq!(status, 202, "{job}");
    let home = get(&app, Some(&ana), "/console/").await;
    let id = job["id"].as_str().expect("id");
    assert!(
        home.body
            .contains(&format!("<tr><td>{id}</td><td>match</td>")),
        "{}",
        home.body
    );
    let groups = ana.ok("/v1/reconciliation?reason=unknownReference").await;
    let row = format!(
        "<td>reconciliation</td><td>unknownReference</td><td class=\"n\">{}</td>",
        groups["total"]
    );
    assert!(home.body.contains(&row), "{row} in {}", home.body);
    let duplicates = ana.ok("/v1/duplicate-models?kind=sameReference").await;
    let row = format!(
        "<td>duplicate models</td><td>sameReference</td><td class=\"n\">{}</td>",
        duplicates["total"]
    );
    assert!(home.body.contains(&row), "{row}");
}

#[tokio::test]
async fn a_write_to_the_console_from_another_origin_is_refused() {
    let app = app().await;
    let ana = app.session("ana").await;
    let request = ana
        .request(Method::POST, "/console/")
        .header("origin", "https://evil.example");
    let response = app.send(request).await;
    assert_eq!(response.status().as_u16(), 403);
}

#[tokio::test]
async fn the_audit_page_filters_by_user_and_action_a_page_at_a_time() {
    let app = app().await;
    let ana = app.session("ana").await;
    let vic = app.session("vic").await;
    // Two sign-ins (ana's, vic's) and the two users added: four entries.
    let all = get(&app, Some(&vic), "/console/audit").await;
    assert_eq!(all.status, 200, "{}", all.body);
    assert_locked_down(&all, "/console/audit");
    assert_nothing_inline(&all.body);
    let api = ana.ok("/v1/admin/audit").await;
    assert!(all
        .body
        .contains(&format!("<p id=\"total\">{} entries", api["total"])));

    let logins = get(&app, Some(&vic), "/console/audit?action=auth.login&user=").await;
    assert!(
        logins.body.contains("<p id=\"total\">2 entries"),
        "{}",
        logins.body
    );
    assert_eq!(logins.body.matches("<td>auth.login</td>").count(), 2);
    assert!(!logins.body.contains("<td>user.add</td>"));
    assert!(
        logins.body.contains(r#"value="auth.login""#),
        "the filter is kept"
    );

    let vics = get(
        &app,
        Some(&vic),
        "/console/audit?user=vic&action=auth.login",
    )
    .await;
    assert!(
        vics.body.contains("<p id=\"total\">1 entry"),
        "{}",
        vics.body
    );
    assert!(vics.body.contains("<td>vic</td>") && !vics.body.contains("<td>ana</td>"));

    // One a page: the newest login first, a link to the next with the same filter.
    let first = get(
        &app,
        Some(&vic),
        "/console/audit?action=auth.login&pageSize=1",
    )
    .await;
    assert!(first.body.contains("page 1 of 2"), "{}", first.body);
    assert!(first.body.contains(r#"<a rel="next" href="/console/audit?action=auth.login&#38;page=2&#38;pageSize=1">Older</a>"#), "{}", first.body);
    assert!(!first.body.contains("rel=\"prev\""));
    let second = get(
        &app,
        Some(&vic),
        "/console/audit?action=auth.login&page=2&pageSize=1",
    )
    .await;
    assert!(
        second.body.contains("<td>ana</td>"),
        "ana signed in first: {}",
        second.body
    );
    assert!(second.body.contains("rel=\"prev\""));

    // A page number the API refuses is refused here too, changing nothing.
    let refused = get(&app, Some(&vic), "/console/audit?page=0").await;
    assert_eq!(refused.status, 400);
    assert_eq!(get(&app, None, "/console/audit").await.status, 303);
}

#[tokio::test]
async fn the_duplicates_page_shows_one_group_side_by_side_with_controls_for_admins_only() {
    let app = app().await;
    let ana = app.session("ana").await;
    let vic = app.session("vic").await;
    let api = ana.ok("/v1/duplicate-models?pageSize=1").await;
    let total = api["total"].as_u64().expect("total");
    assert!(
        total >= 1,
        "the test catalogue has a duplicate group: {api}"
    );
    let group = &api["data"][0];

    let page = get(&app, Some(&ana), "/console/duplicates").await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert_locked_down(&page, "/console/duplicates");
    assert_nothing_inline(&page.body);
    assert!(
        page.body.contains(&format!("Group 1 of {total}")),
        "{}",
        page.body
    );
    let models = group["models"].as_array().expect("models");
    let ids: Vec<&str> = models
        .iter()
        .map(|m| m["id"].as_str().expect("id"))
        .collect();
    assert!(page
        .body
        .contains(&format!(r#"data-models="{}""#, ids.join(","))));
    for (at, model) in models.iter().enumerate() {
        let name = model["name"].as_str().expect("name");
        assert!(
            page.body.contains(&format!("{}. {name}</th>", at + 1)),
            "{name}"
        );
        let reference = model["referenceNumber"].as_str().expect("reference");
        assert!(
            page.body.contains(&format!("<td>{reference}</td>")),
            "{reference}"
        );
    }
    // The fields the compare endpoint names as differences are the ones marked.
    let names: Vec<String> = models
        .iter()
        .map(|m| {
            format!(
                "{}/{}",
                m["brandSlug"].as_str().unwrap_or(""),
                m["slug"].as_str().unwrap_or("")
            )
        })
        .collect();
    let compared = ana
        .ok(&format!("/v1/models/compare?models={}", names.join(",")))
        .await;
    let marked = page.body.matches(r#"<tr class="differs">"#).count();
    let differences = compared["differences"].as_array().expect("differences");
    let shown = [
        "referenceNumber",
        "alternateReferences",
        "series",
        "caliber",
        "releaseYear",
        "discontinuationYear",
        "diameter",
        "caseMaterials",
        "description",
    ];
    let expected = differences
        .iter()
        .filter(|d| shown.contains(&d.as_str().unwrap_or("")))
        .count();
    let listings_differ = models
        .iter()
        .any(|m| m["listingCount"] != models[0]["listingCount"]);
    assert_eq!(
        marked,
        expected + usize::from(listings_differ),
        "{compared}"
    );
    assert_eq!(page.body.matches(r#"name="keeper""#).count(), models.len());
    assert!(page.body.contains(r#"id="merge""#) && page.body.contains(r#"id="dismiss""#));

    let viewed = get(&app, Some(&vic), "/console/duplicates").await;
    assert_eq!(viewed.status, 200);
    assert!(viewed.body.contains(&format!("Group 1 of {total}")));
    for control in [r#"name="keeper""#, r#"id="merge""#, r#"id="dismiss""#] {
        assert!(!viewed.body.contains(control), "a viewer has no {control}");
    }

    let past = get(
        &app,
        Some(&ana),
        &format!("/console/duplicates?page={}", total + 1),
    )
    .await;
    assert!(past.body.contains(r#"<p id="none">"#), "{}", past.body);
    assert!(past.body.contains(r#"rel="prev""#));
    let filtered = get(
        &app,
        Some(&ana),
        "/console/duplicates?kind=sameReference&q=nothing-like-it",
    )
    .await;
    assert!(
        filtered.body.contains("under these filters"),
        "{}",
        filtered.body
    );
    assert!(filtered
        .body
        .contains(r#"<option value="sameReference" selected>"#));
    assert_eq!(
        get(&app, Some(&ana), "/console/duplicates?page=0")
            .await
            .status,
        400
    );
    assert_eq!(
        get(&app, Some(&ana), "/console/duplicates?kind=bogus")
            .await
            .status,
        400
    );
    assert_eq!(get(&app, None, "/console/duplicates").await.status, 303);
}

#[tokio::test]
async fn the_reconciliation_page_shows_the_apis_groups_beside_their_candidates() {
    let app = app().await;
    let ana = app.session("ana").await;
    let vic = app.session("vic").await;
    let api = ana.ok("/v1/reconciliation?pageSize=24").await;
    let groups = api["data"].as_array().expect("groups");
    assert!(!groups.is_empty(), "{api}");

    let page = get(&app, Some(&ana), "/console/reconciliation").await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert_locked_down(&page, "/console/reconciliation");
    assert_nothing_inline(&page.body);
    assert!(page
        .body
        .contains(&format!("<p id=\"total\">{} group", api["total"])));
    assert_eq!(
        page.body.matches("<article class=\"group\"").count(),
        groups.len()
    );
    let mut radios = 0;
    for group in groups {
        let id = group["id"].as_str().expect("id");
        assert!(page.body.contains(&format!(r#"data-group="{id}""#)), "{id}");
        for title in group["exampleTitles"].as_array().expect("titles") {
            let title = title
                .as_str()
                .expect("title")
                .replace('&', "&#38;")
                .replace('\'', "&#39;")
                .replace('"', "&#34;");
            assert!(page.body.contains(&format!("<li>{title}</li>")), "{title}");
        }
        let candidates = group["candidates"].as_array().expect("candidates");
        for candidate in candidates {
            let value = format!(
                r#"name="model-{id}" value="{}""#,
                candidate["id"].as_str().expect("id")
            );
            assert!(page.body.contains(&value), "{value}");
        }
        radios += candidates.len();
    }
    let with_candidates = groups
        .iter()
        .filter(|g| g["candidates"] != serde_json::json!([]))
        .count();
    assert_eq!(
        page.body.matches("class=\"link-group\"").count(),
        with_candidates
    );
    assert_eq!(page.body.matches("type=\"radio\"").count(), radios);

    let viewed = get(&app, Some(&vic), "/console/reconciliation").await;
    assert_eq!(viewed.status, 200);
    assert!(!viewed.body.contains("type=\"radio\"") && !viewed.body.contains("link-group"));

    let filtered = get(
        &app,
        Some(&ana),
        "/console/reconciliation?reason=unknownBrand",
    )
    .await;
    let unknown = ana.ok("/v1/reconciliation?reason=unknownBrand").await;
    assert!(filtered
        .body
        .contains(&format!("<p id=\"total\">{} group", unknown["total"])));
    assert!(filtered
        .body
        .contains(r#"<option value="unknownBrand" selected>"#));
    assert_eq!(
        get(&app, Some(&ana), "/console/reconciliation?reason=bogus")
            .await
            .status,
        400
    );
    assert_eq!(get(&app, None, "/console/reconciliation").await.status, 303);
}

/// Every page of the console (the sign-in page aside).
const PAGES: [&str; 7] = [
    "/console/",
    "/console/duplicates",
    "/console/reconciliation",
    "/console/pictures",
    "/console/unmatched",
    "/console/jobs",
    "/console/audit",
];

/// What only an admin's pages hold: the controls that write.
const WRITE_CONTROLS: [&str; 13] = [
    r#"id="select-candidate""#,
    r#"id="front-by-url""#,
    r#"name="keeper""#,
    r#"id="merge""#,
    r#"id="dismiss""#,
    "link-group",
    "teach-group",
    "/console/reconciliation/new-model",
    r#"type="radio""#,
    "start-job",
    r#"id="snapshot""#,
    r#"id="add-user""#,
    "/console/users",
];

/// The pages only an admin may open (they write): a viewer is shown a refusal, as a page.
async fn admin_pages(admin: &SessionClient<'_>) -> Vec<String> {
    let groups = admin.ok("/v1/reconciliation?pageSize=1").await;
    let group = groups["data"][0]["id"].as_str().expect("a group");
    vec![
        "/console/users".to_owned(),
        format!("/console/reconciliation/new-model?group={group}"),
    ]
}

#[tokio::test]
async fn every_page_is_walked_as_anonymous_viewer_and_admin() {
    // Duplicates planted and picture candidates: every page has something to act on.
    let dataset = crate::duplicates::planted_dataset();
    let source = crate::pictures::source_server().await;
    let candidates = crate::picture_review::candidates(source);
    std::fs::write(dataset.path().join("candidates.jsonl"), candidates).expect("candidates");
    let app = TestApp::build()
        .dataset(dataset.path())
        .user("ana", Role::Admin)
        .user("vic", Role::Viewer)
        .start()
        .await;
    let ana = app.session("ana").await;
    let vic = app.session("vic").await;
    let mut admin_controls = 0;
    for path in PAGES {
        let anonymous = get(&app, None, path).await;
        assert_eq!(
            (anonymous.status, anonymous.header("location")),
            (303, "/console/sign-in"),
            "{path}"
        );
        assert!(anonymous.body.is_empty(), "{path} leaks {}", anonymous.body);

        let viewed = get(&app, Some(&vic), path).await;
        assert_eq!(viewed.status, 200, "{path}: {}", viewed.body);
        assert_locked_down(&viewed, path);
        assert_nothing_inline(&viewed.body);
        for control in WRITE_CONTROLS {
            assert!(
                !viewed.body.contains(control),
                "a viewer has {control} on {path}"
            );
        }

        let admin = get(&app, Some(&ana), path).await;
        assert_eq!(admin.status, 200, "{path}: {}", admin.body);
        assert_locked_down(&admin, path);
        assert_nothing_inline(&admin.body);
        admin_controls += WRITE_CONTROLS
            .iter()
            .filter(|c| admin.body.contains(*c))
            .count();
    }
    for path in admin_pages(&ana).await {
        let anonymous = get(&app, None, &path).await;
        assert_eq!(anonymous.status, 303, "{path}");
        assert!(anonymous.body.is_empty(), "{path} leaks {}", anonymous.body);

        let refused = get(&app, Some(&vic), &path).await;
        assert_eq!(refused.status, 403, "{path}: {}", refused.body);
        assert!(refused.header("content-type").starts_with("text/html"));
        assert_locked_down(&refused, &path);
        assert_nothing_inline(&refused.body);
        assert!(refused.body.contains("this session may not do this"));
        assert!(
            refused.body.contains("This page is for admins"),
            "{}",
            refused.body
        );
        for control in WRITE_CONTROLS {
            assert!(!refused.body.contains(control), "{control} on {path}");
        }
        assert!(!refused.body.contains("<td>ana</td>"), "nothing of {path}");

        let admin = get(&app, Some(&ana), &path).await;
        assert_eq!(admin.status, 200, "{path}: {}", admin.body);
        assert_locked_down(&admin, &path);
        assert_nothing_inline(&admin.body);
        admin_controls += WRITE_CONTROLS
            .iter()
            .filter(|c| admin.body.contains(*c))
            .count();
    }
    assert!(
        admin_controls >= WRITE_CONTROLS.len(),
        "an admin has every write control somewhere"
    );
}

#[tokio::test]
async fn a_refused_page_is_a_page_of_the_console_with_its_status_and_what_to_do() {
    let app = app().await;
    let vic = app.session("vic").await;
    let refused = get(&app, Some(&vic), "/console/audit?page=0").await;
    assert_eq!(refused.status, 400);
    assert!(refused.header("content-type").starts_with("text/html"));
    assert_locked_down(&refused, "/console/audit?page=0");
    assert!(
        refused.body.contains("<h1>Bad Request</h1>"),
        "{}",
        refused.body
    );
    assert!(
        refused.body.contains("`page`"),
        "the message: {}",
        refused.body
    );
    assert!(refused
        .body
        .contains(r#"vic <span class="role">viewer</span>"#));
    // The API's own answers stay JSON.
    let (status, body) = vic.get("/v1/admin/audit?page=0").await;
    assert_eq!((status, body["error"].as_str()), (403, Some("forbidden")));
}

#[tokio::test]
async fn the_users_page_lists_everyone_with_controls_for_others_and_never_a_password() {
    let app = app().await;
    let ana = app.session("ana").await;
    let page = get(&app, Some(&ana), "/console/users").await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("<td>ana</td>") && page.body.contains("<td>vic</td>"));
    assert!(page.body.contains("admin (you)"), "{}", page.body);
    // Controls for vic's row only: ana cannot lock herself out.
    assert_eq!(page.body.matches(r#"class="remove-user""#).count(), 1);
    assert_eq!(page.body.matches(r#"class="user-role""#).count(), 1);
    assert!(page.body.contains(r#"<tr data-user="vic">"#));
    assert!(page
        .body
        .contains(r#"<option value="viewer" selected>viewer</option>"#));
    assert!(page
        .body
        .contains(r#"type="password" required minlength="10" autocomplete="new-password""#));
    assert!(!page.body.contains("argon2") && !page.body.contains(crate::support::TEST_PASSWORD));
    assert!(page.body.contains(r#"<a href="/console/users">Users</a>"#));
    let vic = app.session("vic").await;
    let home = get(&app, Some(&vic), "/console/").await;
    assert!(
        !home.body.contains("/console/users"),
        "no link for a viewer"
    );
}

#[tokio::test]
async fn the_new_model_form_is_filled_from_its_group_and_lists_the_chosen_brands_series() {
    let app = app().await;
    let ana = app.session("ana").await;
    let groups = ana
        .ok("/v1/reconciliation?reason=unknownReference&pageSize=1")
        .await;
    let group = &groups["data"][0];
    let id = group["id"].as_str().expect("a group");
    let brand = group["brand"]["slug"].as_str().expect("a known brand");
    let path = format!("/console/reconciliation/new-model?group={id}");
    let page = get(&app, Some(&ana), &path).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains(&format!(r#"data-group="{id}""#)));
    assert!(
        page.body
            .contains(&format!(r#"<option value="{brand}" selected>"#)),
        "{}",
        page.body
    );
    let spelling = group["spellings"][0].as_str().expect("a spelling");
    assert!(page
        .body
        .contains(&format!(r#"name="referenceNumber" value="{spelling}""#)));
    let series = ana
        .ok(&format!("/v1/brands/{brand}/series?pageSize=100"))
        .await;
    for one in series["data"].as_array().expect("series") {
        let slug = one["slug"].as_str().expect("slug");
        assert!(
            page.body.contains(&format!(r#"<option value="{slug}">"#)),
            "{slug}"
        );
    }

    // Another brand chosen: that brand's series.
    let other = ana.ok("/v1/brands?pageSize=100").await;
    let other = (other["data"].as_array().expect("brands").iter())
        .map(|b| b["slug"].as_str().unwrap_or("").to_owned())
        .find(|slug| slug != brand)
        .expect("another brand");
    let switched = get(&app, Some(&ana), &format!("{path}&brand={other}")).await;
    assert!(switched
        .body
        .contains(&format!(r#"<option value="{other}" selected>"#)));
    let theirs = ana
        .ok(&format!("/v1/brands/{other}/series?pageSize=100"))
        .await;
    let count = switched.body.matches(r#"<option value=""#).count();
    let brands = ana.ok("/v1/brands?pageSize=1").await["total"]
        .as_u64()
        .expect("total");
    let listed = theirs["total"].as_u64().expect("total");
    // Every brand and the empty choice, then that brand's series (or the one saying it has none).
    assert_eq!(
        count as u64,
        brands + 1 + listed.max(1),
        "{}",
        switched.body
    );

    for (query, status) in [
        ("group=ffffffffffffffff", 404),
        ("group=", 400),
        ("", 400),
        (&format!("group={id}&brand=no-such-brand") as &str, 404),
    ] {
        let refused = get(
            &app,
            Some(&ana),
            &format!("/console/reconciliation/new-model?{query}"),
        )
        .await;
        assert_eq!(refused.status, status, "{query}: {}", refused.body);
        assert!(
            refused.header("content-type").starts_with("text/html"),
            "{query}"
        );
    }
}

#[tokio::test]
async fn the_unmatched_page_lists_the_apis_listings_linked_to_their_sources() {
    let app = app().await;
    let ana = app.session("ana").await;
    let api = ana.ok("/v1/admin/unmatched-listings?pageSize=24").await;
    let listings = api["data"].as_array().expect("listings");
    assert!(!listings.is_empty(), "{api}");
    let page = get(&app, Some(&ana), "/console/unmatched").await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page
        .body
        .contains(&format!("<p id=\"total\">{} unmatched", api["total"])));
    for listing in listings {
        let url = listing["url"].as_str().expect("url");
        let row = format!(
            "<tr><td>{}</td>\n    <td><a href=\"{}\" rel=\"noopener noreferrer\">",
            listing["id"].as_str().expect("id"),
            url.replace('&', "&#38;")
        );
        assert!(page.body.contains(&row), "{row} in {}", page.body);
        let reason = listing["unmatchedReason"].as_str().expect("reason");
        assert!(page.body.contains(&format!("<td>{reason}</td>")));
    }
    let ambiguous = get(&app, Some(&ana), "/console/unmatched?reason=ambiguous").await;
    let api = ana
        .ok("/v1/admin/unmatched-listings?reason=ambiguous")
        .await;
    assert!(ambiguous
        .body
        .contains(&format!("<p id=\"total\">{} unmatched", api["total"])));
    assert_eq!(
        get(&app, Some(&ana), "/console/unmatched?reason=bogus")
            .await
            .status,
        400
    );
}

#[tokio::test]
async fn the_jobs_page_lists_the_apis_jobs_and_reads_itself_again_while_one_runs() {
    let app = app().await;
    let ana = app.session("ana").await;
    let vic = app.session("vic").await;
    let (status, job) = ana.call(Method::POST, "/v1/admin/match", None).await;
    assert_eq!(status, 202, "{job}");
    let page = get(&app, Some(&ana), "/console/jobs").await;
    assert_eq!(page.status, 200, "{}", page.body);
    let id = job["id"].as_str().expect("id");
    assert!(
        page.body.contains(&format!(
            r#"<tr data-job="{id}"><td>{id}</td><td>match</td>"#
        )),
        "{}",
        page.body
    );
    for control in [
        "start-job",
        r#"id="snapshot""#,
        r#"<option value="chrono24">"#,
    ] {
        assert!(page.body.contains(control), "{control}");
    }
    // The job ends; the page then stops reading itself again.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let state = ana.ok(&format!("/v1/admin/jobs/{id}")).await["state"].clone();
        if state == "succeeded" {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{state}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let ended = get(&app, Some(&vic), "/console/jobs").await;
    assert!(
        ended.body.contains(r#"data-live="false""#),
        "{}",
        ended.body
    );
    assert!(ended.body.contains("<td class=\"state\">succeeded</td>"));
    assert!(ended.body.contains("<summary>report</summary>"));
    assert!(!ended.body.contains("start-job") && !ended.body.contains(r#"id="snapshot""#));
}

#[tokio::test]
async fn the_picture_review_shows_a_model_beside_its_candidates_with_controls_for_admins_only() {
    let source = crate::pictures::source_server().await;
    let dataset = crate::picture_review::dataset_with(&crate::picture_review::candidates(source));
    let app = TestApp::build()
        .dataset(dataset.path())
        .user("ana", Role::Admin)
        .user("vic", Role::Viewer)
        .start()
        .await;
    let ana = app.session("ana").await;
    let vic = app.session("vic").await;
    let queue = ana.ok("/v1/picture-review?pageSize=1").await;
    let model = &queue["data"][0];
    let page = get(&app, Some(&ana), "/console/pictures").await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert_nothing_inline(&page.body);
    let title = format!(
        "{} {} <span class=\"ref\">{}</span> · 1 of {}",
        model["brand"].as_str().expect("brand"),
        model["name"].as_str().expect("name"),
        model["referenceNumber"].as_str().expect("reference"),
        queue["total"]
    );
    assert!(page.body.contains(&title), "{title} in {}", page.body);
    let candidates = model["candidates"].as_array().expect("candidates");
    for candidate in candidates {
        let radio = format!(
            r#"name="candidate" value="{}""#,
            candidate["id"].as_str().expect("id")
        );
        assert!(page.body.contains(&radio), "{radio}");
        assert!(page.body.contains(&format!(
            r#"<img src="{}""#,
            candidate["url"].as_str().expect("url")
        )));
    }
    assert!(page.body.contains("640 × 480"), "the candidate's size");
    assert!(
        page.body.contains("https://maker.example/126610lv"),
        "its source"
    );

    let viewed = get(&app, Some(&vic), "/console/pictures").await;
    assert!(viewed.body.contains(&title));
    for control in [
        r#"name="candidate""#,
        r#"id="select-candidate""#,
        r#"id="front-by-url""#,
    ] {
        assert!(!viewed.body.contains(control), "a viewer has no {control}");
    }
    let reviewed = get(&app, Some(&ana), "/console/pictures?status=reviewed").await;
    assert!(
        reviewed.body.contains("under this filter"),
        "{}",
        reviewed.body
    );
    assert_eq!(
        get(&app, Some(&ana), "/console/pictures?status=bogus")
            .await
            .status,
        400
    );
}

#[tokio::test]
async fn the_sign_in_form_works_without_the_script_and_says_why_it_refuses() {
    let app = app().await;
    let post = |form: &[(&str, &str)]| {
        app.request(Method::POST, "/console/sign-in")
            .form(&form.to_vec())
    };
    let signed = app
        .send(post(&[
            ("username", "ana"),
            ("password", crate::support::TEST_PASSWORD),
        ]))
        .await;
    assert_eq!(signed.status().as_u16(), 303);
    assert_eq!(signed.headers()["location"], "/console/");
    let cookie = (signed.headers()["set-cookie"].to_str().expect("cookie"))
        .split(';')
        .next()
        .expect("the session")
        .to_owned();
    let home = app
        .send(
            app.request(Method::GET, "/console/")
                .header("cookie", cookie),
        )
        .await;
    assert_eq!(home.status().as_u16(), 200);

    let wrong = app
        .send(post(&[("username", "ana"), ("password", "a guess")]))
        .await;
    let status = wrong.status().as_u16();
    let headers = wrong.headers().clone();
    let page = wrong.text().await.expect("page");
    assert_eq!(status, 401, "{page}");
    assert!(headers.get("set-cookie").is_none());
    assert!(
        page.contains(
            r#"<p id="sign-in-error" class="error" role="alert">wrong username or password</p>"#
        ),
        "{page}"
    );
    assert!(!page.contains("a guess"), "the password is not shown back");

    let half = app.send(post(&[("username", "ana")])).await;
    assert_eq!(half.status().as_u16(), 400);
    assert!(half.text().await.expect("page").contains("password"));

    let forged = app
        .send(
            post(&[
                ("username", "ana"),
                ("password", crate::support::TEST_PASSWORD),
            ])
            .header("origin", "https://evil.example"),
        )
        .await;
    assert_eq!(forged.status().as_u16(), 403);
    assert!(forged.headers().get("set-cookie").is_none());
}
