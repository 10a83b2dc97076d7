//! The console in a real browser: headless Chromium (Debian's `chromium` and `chromium-driver`)
//! driven over WebDriver against the test server on loopback. A person signs in by keyboard
//! alone, sees home, filters the audit trail, signs out; a wrong password is shown; a viewer
//! sees the read-only note.
//! Each page's screenshot is written under `target/console-screenshots/`. In CI (`CI=true`) a
//! missing browser fails; elsewhere these tests skip, saying how to install one.

use crate::support::TestApp;
use fantoccini::key::Key;
use fantoccini::{Client, ClientBuilder, Locator};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use watch_catalogue::domain::Role;

/// The password `TestAppBuilder::user` gives every user.
const PASSWORD: &str = crate::support::TEST_PASSWORD;

/// A chromedriver of this test's own, stopped when dropped, and its browser's temporary
/// folder with it: Chromium leaves its profile's singleton socket and scoped folders in
/// `TMPDIR` (a dozen and more under `/tmp` per run otherwise).
struct Driver {
    process: Child,
    url: String,
    _temporary: tempfile::TempDir,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// Starts chromedriver on a free loopback port, or `None` (with why) where there is none and
/// this is not CI.
fn driver() -> Option<Driver> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let temporary = tempfile::tempdir().expect("a temporary folder");
    let started = Command::new("chromedriver")
        .arg(format!("--port={port}"))
        .env("TMPDIR", temporary.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    match started {
        Ok(process) => Some(Driver {
            process,
            url: format!("http://127.0.0.1:{port}"),
            _temporary: temporary,
        }),
        Err(error) if std::env::var("CI").as_deref() != Ok("true") => {
            eprintln!(
                "skipped: no chromedriver ({error}); install a browser with \
                 `apt-get install -y chromium chromium-driver` to run the console's browser tests"
            );
            None
        }
        Err(error) => panic!("CI runs the browser tests, and chromedriver is missing: {error}"),
    }
}

/// A headless Chromium session through `driver`, once it answers (within 20 s).
async fn browser(driver: &Driver) -> Client {
    let capabilities = serde_json::json!({
        "browserName": "chrome",
        "goog:chromeOptions": {
            "args": ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,900"]
        }
    });
    let capabilities = capabilities.as_object().expect("an object").clone();
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match ClientBuilder::new(connector.clone())
            .capabilities(capabilities.clone())
            .connect(&driver.url)
            .await
        {
            Ok(client) => return client,
            Err(error) if Instant::now() > deadline => panic!("no browser session: {error}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// Writes the page's screenshot as `target/console-screenshots/{name}.png`.
async fn screenshot(client: &Client, name: &str) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/console-screenshots");
    std::fs::create_dir_all(&dir).expect("screenshot dir");
    let png = client.screenshot().await.expect("screenshot");
    std::fs::write(dir.join(format!("{name}.png")), png).expect("write screenshot");
}

/// Waits (10 s at most) until the browser is at `path` of `app`.
async fn wait_for_path(client: &Client, path: &str) {
    eventually(&format!("the browser at {path}"), || async {
        let url = client.current_url().await.ok()?;
        (url.path() == path).then_some(())
    })
    .await
}

/// What `probe` finds, once it finds it (asked every 100 ms, for 10 s at most, else failing
/// with `what` was awaited).
async fn eventually<T, F, Fut>(what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(found) = probe().await {
            return found;
        }
        assert!(Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Signs in on the sign-in page with the keyboard alone: the name field has the focus, Tab
/// moves to the password, Enter submits.
async fn sign_in_by_keyboard(client: &Client, app: &TestApp, name: &str, password: &str) {
    client
        .goto(&format!("{}/console/", app.base))
        .await
        .expect("goto");
    wait_for_path(client, "/console/sign-in").await;
    let focused = client
        .execute("return document.activeElement.id", Vec::new())
        .await
        .expect("focus");
    assert_eq!(focused, "username", "the name field has the focus");
    let keys = format!(
        "{name}{}{password}{}",
        char::from(Key::Tab),
        char::from(Key::Enter)
    );
    client
        .active_element()
        .await
        .expect("focused element")
        .send_keys(&keys)
        .await
        .expect("type");
}

/// A browser where `ana` signed in by keyboard and then opened `path`.
async fn ana_at(driver: &Driver, app: &TestApp, path: &str) -> Client {
    let client = browser(driver).await;
    sign_in_by_keyboard(&client, app, "ana", PASSWORD).await;
    wait_for_path(&client, "/console/").await;
    client
        .goto(&format!("{}{path}", app.base))
        .await
        .expect("goto");
    client
}

async fn text_of(client: &Client, css: &str) -> String {
    let element = client
        .wait()
        .for_element(Locator::Css(css))
        .await
        .expect(css);
    element.text().await.expect("text")
}

#[tokio::test]
async fn a_person_signs_in_by_keyboard_sees_home_filters_the_audit_and_signs_out() {
    let Some(driver) = driver() else { return };
    let app = TestApp::build().user("ana", Role::Admin).start().await;
    let client = browser(&driver).await;
    client
        .goto(&format!("{}/console/sign-in", app.base))
        .await
        .expect("goto");
    screenshot(&client, "sign-in").await;
    sign_in_by_keyboard(&client, &app, "ana", PASSWORD).await;
    wait_for_path(&client, "/console/").await;
    assert_eq!(text_of(&client, "h1").await, "Home");
    let models = app
        .app
        .store()
        .count_of(watch_catalogue::store::Counted::Models)
        .expect("count");
    let shown = text_of(&client, ".counts div:nth-child(3) dd").await;
    assert_eq!(shown, models.to_string());
    assert!(text_of(&client, "#audit + table tbody")
        .await
        .contains("auth.login"));
    screenshot(&client, "home").await;
    // Readable on a phone: nothing wider than the window but the tables' own scroll.
    client.set_window_size(390, 844).await.expect("resize");
    let overflow = client
        .execute(
            "return document.documentElement.scrollWidth <= window.innerWidth",
            Vec::new(),
        )
        .await
        .expect("width");
    assert_eq!(overflow, true, "the page fits 390 px");
    screenshot(&client, "home-390").await;
    client.set_window_size(1280, 900).await.expect("resize");

    // The audit trail, filtered from its form by keyboard.
    client
        .find(Locator::LinkText("Audit"))
        .await
        .expect("the audit link")
        .click()
        .await
        .expect("click");
    wait_for_path(&client, "/console/audit").await;
    let action = client.find(Locator::Css("#action")).await.expect("action");
    action
        .send_keys(&format!("auth.login{}", char::from(Key::Enter)))
        .await
        .expect("type");
    eventually("the filter applied", || async {
        let url = client.current_url().await.ok()?;
        url.as_str().contains("action=auth.login").then_some(())
    })
    .await;
    assert_eq!(text_of(&client, "#total").await, "1 entry");
    screenshot(&client, "audit").await;

    client
        .find(Locator::Css("#sign-out"))
        .await
        .expect("sign-out")
        .click()
        .await
        .expect("click");
    wait_for_path(&client, "/console/sign-in").await;
    client
        .goto(&format!("{}/console/", app.base))
        .await
        .expect("goto");
    wait_for_path(&client, "/console/sign-in").await;
    client.close().await.expect("close");
}

#[tokio::test]
async fn a_wrong_password_is_shown_and_a_viewer_sees_home_read_only_and_cannot_write() {
    let Some(driver) = driver() else { return };
    let app = TestApp::build().user("vic", Role::Viewer).start().await;
    let client = browser(&driver).await;
    sign_in_by_keyboard(&client, &app, "vic", "not the password").await;
    let error = text_of(&client, "#sign-in-error:not([hidden])").await;
    assert!(!error.is_empty(), "the refusal is shown");
    assert_eq!(
        client.current_url().await.expect("url").path(),
        "/console/sign-in"
    );
    screenshot(&client, "sign-in-refused").await;

    sign_in_by_keyboard(&client, &app, "vic", PASSWORD).await;
    wait_for_path(&client, "/console/").await;
    assert!(text_of(&client, ".note").await.contains("viewer"));
    // A write forged from the viewer's own page, with the viewer's cookie: refused, unaudited.
    let entries = || {
        app.app
            .store()
            .audit()
            .page(Default::default(), 0, 1)
            .expect("audit")
            .1
    };
    let before = entries();
    let forged = client
        .execute(
            r#"const request = new XMLHttpRequest();
               request.open("POST", "/v1/duplicate-models/dismiss", false);
               request.setRequestHeader("content-type", "application/json");
               request.send('{"modelIds": ["1", "2"]}');
               return request.status;"#,
            Vec::new(),
        )
        .await
        .expect("the forged write");
    assert_eq!(forged, 403);
    assert_eq!(entries(), before);
    client.close().await.expect("close");
}

/// Presses `keys` where the page has the focus (its body, after a load).
async fn press(client: &Client, keys: &str) {
    let body = client.find(Locator::Css("body")).await.expect("body");
    body.send_keys(keys).await.expect("keys");
}

/// Waits (10 s at most) for the status line to say `what`.
async fn wait_for_status(client: &Client, what: &str) -> String {
    eventually(&format!("a status saying {what}"), || async {
        // The page's main part is replaced under the search at times: found again.
        let text = client
            .find(Locator::Css("#status"))
            .await
            .ok()?
            .text()
            .await
            .ok()?;
        text.contains(what).then_some(text)
    })
    .await
}

#[tokio::test]
async fn an_admin_triages_duplicates_by_keyboard_merging_and_dismissing() {
    let Some(driver) = driver() else { return };
    let dataset = crate::duplicates::planted_dataset();
    let app = crate::support::admin_app(dataset.path()).await;
    let ana = app.session("ana").await;
    let before = ana.ok("/v1/duplicate-models?pageSize=1").await;
    let total = before["total"].as_u64().expect("total");
    assert!(total >= 2, "two groups to triage: {before}");
    let models = before["data"][0]["models"]
        .as_array()
        .expect("models")
        .clone();

    let client = ana_at(&driver, &app, "/console/duplicates").await;
    assert_eq!(
        text_of(&client, "#group-title").await,
        format!("Group 1 of {total}")
    );
    screenshot(&client, "duplicates").await;

    // The second model is the keeper; m asks first, and the answer is yes.
    press(&client, "2m").await;
    let question = client.get_alert_text().await.expect("the confirmation");
    assert!(question.contains("slugs redirect"), "{question}");
    client.accept_alert().await.expect("accept");
    let merged = wait_for_status(&client, "Merged").await;
    assert!(
        merged.contains(models[1]["slug"].as_str().expect("slug")),
        "{merged}"
    );
    assert!(merged.ends_with("listing(s) moved."), "{merged}");
    // The next group came in without a reload, in the same place.
    assert_eq!(
        text_of(&client, "#group-title").await,
        format!("Group 1 of {}", total - 1)
    );
    let (brand, gone) = (
        models[0]["brandSlug"].as_str().expect("brand"),
        models[0]["slug"].as_str().expect("slug"),
    );
    let request = app.request(reqwest::Method::GET, &format!("/v1/models/{brand}/{gone}"));
    let redirect = app.send(request).await;
    assert_eq!(redirect.status().as_u16(), 301);
    let keeper = models[1]["slug"].as_str().expect("slug");
    assert_eq!(
        redirect.headers()["location"].to_str().expect("location"),
        format!("/v1/models/{brand}/{keeper}")
    );

    press(&client, "d").await;
    wait_for_status(&client, "Dismissed").await;
    let after = ana.ok("/v1/duplicate-models?pageSize=1").await;
    assert_eq!(after["total"].as_u64(), Some(total - 2));
    assert_audited(
        &client,
        &app,
        &ana,
        &["duplicates.dismiss", "duplicates.merge"],
    )
    .await;
    client.close().await.expect("close");
}

/// A merge of more listings than it relinks in its own write: the status says those past the
/// first move after the answer, not that they moved (D-231).
#[tokio::test]
async fn a_merge_of_a_duplicate_with_many_listings_says_the_rest_move_in_the_background() {
    const TWIN: &str = "submariner-126610ln-twin";
    let Some(driver) = driver() else { return };
    let dataset = crate::duplicates::planted_dataset();
    let app = crate::support::admin_app(dataset.path()).await;
    let many = watch_catalogue::jobs::merge::MOVED_WITH_THE_MERGE + 10;
    // The twin's own alternate: its listings match it alone.
    let lines: Vec<String> = (0..many)
        .map(|i| {
            format!(
                r#"{{"sourceId":"twin-{i}","url":"https://www.ebay.com/itm/twin-{i}","title":"Rolex Submariner Date 126610LN-TWIN","brand":"Rolex","reference":"126610LN-TWIN","price":{},"currency":"USD"}}"#,
                12000 + i
            )
        })
        .collect();
    crate::support::feed(&app, "ebay", &lines.join("\n"));
    let ana = app.session("ana").await;
    let twin = ana.ok(&format!("/v1/models/rolex/{TWIN}")).await;
    let listed = ana
        .ok(&format!("/v1/listings?brand=rolex&model={TWIN}&pageSize=1"))
        .await;
    assert_eq!(listed["total"].as_u64(), Some(many as u64), "{listed}");

    let client = ana_at(&driver, &app, "/console/duplicates?q=126610LN").await;
    // The keeper is the model beside the twin, the twin the duplicate.
    let keeper = client
        .find(Locator::Css(&format!(
            "input[name=keeper]:not([value='{}'])",
            twin["id"].as_str().expect("id")
        )))
        .await
        .expect("the other model");
    keeper.click().await.expect("choose the keeper");
    press(&client, "m").await;
    client.accept_alert().await.expect("accept");
    let merged = wait_for_status(&client, "Merged").await;
    assert!(
        merged.contains(&format!(
            "{many} listing(s) move to it, the first {} with the merge and the rest in the background",
            watch_catalogue::jobs::merge::MOVED_WITH_THE_MERGE
        )),
        "{merged}"
    );
    screenshot(&client, "duplicates-large-merge").await;
    client.close().await.expect("close");
}

#[tokio::test]
async fn an_admin_links_a_group_of_unmatched_listings_to_a_candidate() {
    let Some(driver) = driver() else { return };
    let app = TestApp::build().user("ana", Role::Admin).start().await;
    let ana = app.session("ana").await;
    let groups = ana.ok("/v1/reconciliation?pageSize=24").await;
    let group = (groups["data"].as_array().expect("groups").iter())
        .find(|g| {
            g["candidates"] != serde_json::json!([]) && g["spellings"] != serde_json::json!([])
        })
        .expect("a group with a reference and candidates")
        .clone();
    let (id, model) = (group["id"].as_str().expect("id"), &group["candidates"][0]);
    let model_id = model["id"].as_str().expect("model");
    let count = |item: &serde_json::Value| item["data"][0]["listingCount"].as_u64().expect("count");
    let before = count(&ana.ok(&format!("/v1/models?id={model_id}")).await);

    let client = ana_at(&driver, &app, "/console/reconciliation").await;
    screenshot(&client, "reconciliation").await;
    let css = format!(r#"article[data-group="{id}"] button.link-group"#);
    client
        .find(Locator::Css(&css))
        .await
        .expect("the group's link button")
        .click()
        .await
        .expect("click");
    let linked = wait_for_status(&client, "Linked").await;
    assert!(
        linked.contains(model["slug"].as_str().expect("slug")),
        "{linked}"
    );
    let gone = client
        .find(Locator::Css(&format!(r#"article[data-group="{id}"]"#)))
        .await;
    assert!(gone.is_err(), "the group left the page");
    let after = count(&ana.ok(&format!("/v1/models?id={model_id}")).await);
    assert_eq!(
        after,
        before + group["listingCount"].as_u64().expect("count")
    );
    assert_audited(&client, &app, &ana, &["reconciliation.link"]).await;
    client.close().await.expect("close");
}

#[tokio::test]
async fn an_admin_uploads_a_snapshot_and_watches_its_job_finish() {
    let Some(driver) = driver() else { return };
    let app = TestApp::build().user("ana", Role::Admin).start().await;
    let ana = app.session("ana").await;
    let snapshot = tempfile::Builder::new()
        .suffix(".jsonl")
        .tempfile()
        .expect("file");
    std::fs::write(
        snapshot.path(),
        r#"{"sourceId":"console-1","url":"https://www.chrono24.com/console-1","title":"Rolex Submariner Date 126610LN","brand":"Rolex","reference":"126610LN","price":12500,"currency":"USD"}
"#,
    )
    .expect("write");

    let client = ana_at(&driver, &app, "/console/jobs").await;
    // A mark on the upload form: what follows puts the list of jobs in place, never the form an
    // admin may be filling in.
    client
        .execute(
            r#"document.getElementById("snapshot").dataset.mark = "kept";"#,
            Vec::new(),
        )
        .await
        .expect("mark");
    let file = client
        .find(Locator::Css("#snapshot-file"))
        .await
        .expect("file input");
    file.send_keys(&snapshot.path().display().to_string())
        .await
        .expect("choose the file");
    let mass = client
        .find(Locator::Css("#allow-mass-delist"))
        .await
        .expect("checkbox");
    mass.click().await.expect("tick");
    let upload = client
        .find(Locator::Css("#snapshot button[type=submit]"))
        .await
        .expect("upload");
    upload.click().await.expect("click");
    let started = wait_for_status(&client, "(snapshot)").await;
    let id = started
        .split_whitespace()
        .nth(1)
        .expect("the job's id")
        .to_owned();
    // The page reads itself again until the job has ended.
    let state = format!(r#"tr[data-job="{id}"] td.state"#);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let shown = match client.find(Locator::Css(&state)).await {
            Ok(cell) => cell.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        };
        if shown == "succeeded" {
            break;
        }
        assert!(Instant::now() < deadline, "job {id} shows {shown:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    screenshot(&client, "jobs").await;
    let mark = client
        .execute(
            r#"return document.getElementById("snapshot").dataset.mark || "";"#,
            Vec::new(),
        )
        .await
        .expect("mark");
    assert_eq!(mark, "kept", "the upload form was replaced");
    assert!(
        text_of(&client, "#status").await.contains("(snapshot)"),
        "the status line stays"
    );
    let chosen = client
        .execute(
            r#"return document.getElementById("snapshot-file").files.length;"#,
            Vec::new(),
        )
        .await
        .expect("files");
    assert_eq!(
        chosen, 0,
        "the form is emptied once the snapshot is accepted"
    );
    let bar_hidden = client
        .execute(
            r#"return document.getElementById("upload-progress").hidden;"#,
            Vec::new(),
        )
        .await
        .expect("bar");
    assert_eq!(
        bar_hidden, true,
        "the upload's bar is put away once it is done"
    );
    let job = ana.ok(&format!("/v1/admin/jobs/{id}")).await;
    assert_eq!(job["subject"], "chrono24", "{job}");
    let listings = ana.ok("/v1/listings?q=126610LN&pageSize=50").await;
    assert!(listings.to_string().contains("console-1"), "{listings}");
    assert_audited(&client, &app, &ana, &["job.submit"]).await;
    client.close().await.expect("close");
}

#[tokio::test]
async fn an_admin_makes_a_candidate_the_front_picture_by_keyboard() {
    let Some(driver) = driver() else { return };
    let source = crate::pictures::source_server().await;
    let dataset = crate::picture_review::dataset_with(&crate::picture_review::candidates(source));
    let app = crate::support::admin_app(dataset.path()).await;
    let ana = app.session("ana").await;
    let queue = ana.ok("/v1/picture-review?pageSize=1").await;
    let total = queue["total"].as_u64().expect("total");
    let model = &queue["data"][0];
    let (model_id, second) = (model["id"].as_str().expect("id"), &model["candidates"][1]);

    let client = browser(&driver).await;
    sign_in_by_keyboard(&client, &app, "ana", PASSWORD).await;
    wait_for_path(&client, "/console/").await;
    // Once the image worker has fetched it (from the local source; the maker's host never
    // resolves), the first candidate is shown from its re-hosted copy, which the page's policy
    // lets it load.
    crate::pictures::pass(&app.app, &["127.0.0.1/32"]).await;
    client
        .goto(&format!("{}/console/pictures", app.base))
        .await
        .expect("goto");
    eventually("the fetched candidate shown", || async {
        let script = r#"const first = document.querySelector("figure.candidate img");
            return first !== null && first.complete && first.naturalWidth > 0;"#;
        let shown = client.execute(script, Vec::new()).await.ok()?;
        (shown == true).then_some(())
    })
    .await;
    screenshot(&client, "pictures").await;
    press(&client, "2s").await;
    wait_for_status(&client, "front picture now").await;
    // The next model came in without a reload.
    assert!(text_of(&client, "#model-title")
        .await
        .ends_with(&format!("1 of {}", total - 1)));
    let front = ana
        .ok(&format!(
            "/v1/picture-review/models/{model_id}/front-picture"
        ))
        .await;
    // The second by rank is the fixture's a.jpg (its re-hosted copy is the candidate's url).
    assert_eq!(second["rank"], 2);
    let source = front["picture"]["sourceUrl"].as_str().unwrap_or("");
    assert!(source.ends_with("/a.jpg"), "{front}");
    assert_audited(&client, &app, &ana, &["picture-review.select"]).await;
    client.close().await.expect("close");
}

/// The values of the options of the list `css`, joined by commas.
async fn options_of(client: &Client, css: &str) -> String {
    let script = format!(
        r#"return [...document.querySelectorAll("{css} option")].map(o => o.value).join(",");"#
    );
    let value = client.execute(&script, Vec::new()).await.expect("options");
    value.as_str().unwrap_or_default().to_owned()
}

/// Waits (10 s at most) until the list `css` offers `values`.
async fn wait_for_options(client: &Client, css: &str, values: &str) {
    eventually(&format!("{css} offering {values}"), || async {
        (options_of(client, css).await == values).then_some(())
    })
    .await
}

/// The slugs of a brand's series, as the series list of the form offers them.
async fn series_values(ana: &crate::support::SessionClient<'_>, brand: &str) -> String {
    let series = ana
        .ok(&format!("/v1/brands/{brand}/series?pageSize=100"))
        .await;
    let slugs: Vec<&str> = (series["data"].as_array().expect("series").iter())
        .map(|s| s["slug"].as_str().unwrap_or(""))
        .collect();
    if slugs.is_empty() {
        String::new()
    } else {
        slugs.join(",")
    }
}

async fn click(client: &Client, css: &str) {
    client
        .find(Locator::Css(css))
        .await
        .unwrap_or_else(|_| panic!("{css}"))
        .click()
        .await
        .expect("click");
}

#[tokio::test]
async fn an_admin_creates_a_model_from_a_group_and_teaches_another_model_a_reference() {
    let Some(driver) = driver() else { return };
    let app = TestApp::build().user("ana", Role::Admin).start().await;
    let ana = app.session("ana").await;
    // The group of a brand the catalogue lacks is made a model of a brand chosen from the list;
    // another group, with a reference, teaches its nearest model that reference.
    let all = ana.ok("/v1/reconciliation?pageSize=50").await;
    let all = all["data"].as_array().expect("groups").clone();
    let made = (all.iter())
        .find(|g| g["reason"] == "unknownBrand")
        .expect("a group of an unknown brand")
        .clone();
    let seller_brand = made["brand"].as_str().expect("the sellers' brand text");
    let taught = (all.iter())
        .find(|g| {
            g["candidates"] != serde_json::json!([]) && g["spellings"] != serde_json::json!([])
        })
        .expect("a group with a reference and candidates")
        .clone();
    let brand = "omega";
    let other = "rolex";
    let (own_series, other_series) = (
        series_values(&ana, brand).await,
        series_values(&ana, other).await,
    );

    let client = ana_at(&driver, &app, "/console/reconciliation").await;
    let made_id = made["id"].as_str().expect("id");
    click(
        &client,
        &format!(r#"article[data-group="{made_id}"] a.new-model"#),
    )
    .await;
    wait_for_path(&client, "/console/reconciliation/new-model").await;
    wait_for_options(&client, "#new-series", "").await;
    // Another brand brings its own series; back to the group's brand, its own again.
    let brands = client
        .find(Locator::Css("#new-brand"))
        .await
        .expect("brands");
    brands.clone().select_by_value(other).await.expect("other");
    wait_for_options(&client, "#new-series", &other_series).await;
    brands.select_by_value(brand).await.expect("own brand");
    wait_for_options(&client, "#new-series", &own_series).await;
    let first_series = own_series.split(',').next().expect("a series").to_owned();
    let series = client
        .find(Locator::Css("#new-series"))
        .await
        .expect("series");
    series
        .select_by_value(&first_series)
        .await
        .expect("a series");
    client
        .find(Locator::Css("#new-name"))
        .await
        .expect("name")
        .send_keys("Console Made")
        .await
        .expect("type");
    screenshot(&client, "new-model").await;
    click(&client, "#new-model button[type=submit]").await;
    let created = wait_for_status(&client, "Created Console Made").await;
    assert!(
        created.contains(&format!("“{seller_brand}” is now an alias")),
        "{created}"
    );
    let learnt = ana.ok(&format!("/v1/brands/{brand}")).await;
    assert!(
        learnt["aliases"].to_string().contains(seller_brand),
        "{learnt}"
    );
    let slug = created
        .split_once('(')
        .and_then(|(_, rest)| rest.split_once(')'))
        .map(|(slug, _)| slug.to_owned())
        .expect("the slug in the status");
    let model = ana.ok(&format!("/v1/models/{brand}/{slug}")).await;
    assert_eq!(model["series"]["slug"], first_series.as_str(), "{model}");
    assert_eq!(model["referenceNumber"], made["spellings"][0], "{model}");
    let id = model["id"].as_str().expect("id");
    let listed = ana.ok(&format!("/v1/models?id={id}")).await;
    assert_eq!(
        listed["data"][0]["listingCount"], made["listingCount"],
        "{listed}"
    );

    // Teaching: the second group's first candidate gains its reference and its listings.
    client
        .goto(&format!("{}/console/reconciliation?pageSize=50", app.base))
        .await
        .expect("goto");
    let taught_id = taught["id"].as_str().expect("id");
    let candidate = taught["candidates"][0]["id"].as_str().expect("candidate");
    let count = |item: &serde_json::Value| item["data"][0]["listingCount"].as_u64().expect("count");
    let before = count(&ana.ok(&format!("/v1/models?id={candidate}")).await);
    click(
        &client,
        &format!(r#"article[data-group="{taught_id}"] button.teach-group"#),
    )
    .await;
    let said = wait_for_status(&client, "now has the reference").await;
    assert!(
        said.contains(taught["spellings"][0].as_str().expect("spelling")),
        "{said}"
    );
    let after = count(&ana.ok(&format!("/v1/models?id={candidate}")).await);
    assert_eq!(
        after,
        before + taught["listingCount"].as_u64().expect("count")
    );
    assert_audited(
        &client,
        &app,
        &ana,
        &["reconciliation.update", "reconciliation.create"],
    )
    .await;
    client.close().await.expect("close");
}

#[tokio::test]
async fn an_admin_adds_a_colleague_changes_their_role_and_revokes_their_access() {
    let Some(driver) = driver() else { return };
    let app = TestApp::build().user("ana", Role::Admin).start().await;
    let ana = app.session("ana").await;
    let password = "bea's own long password";
    let client = ana_at(&driver, &app, "/console/users").await;
    let field = |css: &'static str| {
        let client = client.clone();
        async move { client.find(Locator::Css(css)).await.expect(css) }
    };
    field("#new-name")
        .await
        .send_keys("bea")
        .await
        .expect("name");
    field("#new-password")
        .await
        .send_keys(password)
        .await
        .expect("password");
    click(&client, "#add-user button[type=submit]").await;
    wait_for_status(&client, "Added bea (viewer)").await;
    let typed = client
        .execute(
            r#"return document.getElementById("new-password").value;"#,
            Vec::new(),
        )
        .await
        .expect("field");
    assert_eq!(typed, "", "the password is not left in the form");
    let source = client.source().await.expect("source");
    assert!(!source.contains(password), "the password is never shown");
    screenshot(&client, "users").await;
    let login = app
        .request(reqwest::Method::POST, "/v1/auth/login")
        .json(&serde_json::json!({"username": "bea", "password": password}));
    assert_eq!(app.send(login).await.status().as_u16(), 200, "bea signs in");

    field(r#"tr[data-user="bea"] select.user-role"#)
        .await
        .select_by_value("admin")
        .await
        .expect("role");
    click(&client, r#"tr[data-user="bea"] button.set-role"#).await;
    wait_for_status(&client, "bea is admin now").await;
    click(&client, r#"tr[data-user="bea"] button.remove-user"#).await;
    let question = client.get_alert_text().await.expect("the confirmation");
    assert!(question.contains("Revoke bea"), "{question}");
    client.accept_alert().await.expect("accept");
    wait_for_status(&client, "bea is removed").await;
    assert!(
        client
            .find(Locator::Css(r#"tr[data-user="bea"]"#))
            .await
            .is_err(),
        "bea left the list"
    );
    let users = ana.ok("/v1/admin/users").await;
    assert!(!users.to_string().contains("bea"), "{users}");
    assert_audited(
        &client,
        &app,
        &ana,
        &["user.remove", "user.role", "user.add"],
    )
    .await;
    client.close().await.expect("close");
}

/// `ana`'s newest actions are `expected`, in the API's audit trail and on the console's audit
/// page alike.
async fn assert_audited(
    client: &Client,
    app: &TestApp,
    ana: &crate::support::SessionClient<'_>,
    expected: &[&str],
) {
    let path = format!("/v1/admin/audit?user=ana&pageSize={}", expected.len());
    let audit = ana.ok(&path).await;
    let actions: Vec<&str> = (audit["data"].as_array().expect("entries").iter())
        .map(|e| e["action"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(actions, expected, "the audit trail");
    assert_eq!(
        audited_in_the_console(client, app, "ana", expected.len()).await,
        expected,
        "the audit page shows what was done"
    );
}

/// The actions the console's audit page shows of `user`, newest first, at most `most`.
async fn audited_in_the_console(
    client: &Client,
    app: &TestApp,
    user: &str,
    most: usize,
) -> Vec<String> {
    client
        .goto(&format!(
            "{}/console/audit?user={user}&pageSize={most}",
            app.base
        ))
        .await
        .expect("goto");
    let script = r#"return [...document.querySelectorAll("tbody tr td:nth-child(3)")].map(c => c.textContent);"#;
    let actions = client.execute(script, Vec::new()).await.expect("actions");
    (actions.as_array().expect("a list").iter())
        .map(|action| action.as_str().unwrap_or_default().to_owned())
        .collect()
}
