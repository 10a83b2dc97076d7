//! An HTTP load driver for a running catalogue service (`catalogue-bench load`).
//!
//! At start it learns what to ask from the server itself (`/v1/sitemap/models`, `/v1/brands`,
//! `/v1/listings`, a sample of `/v1/models/{brand}/{slug}`), so it works on any dataset, and
//! builds a pool of requests per [`Kind`]. It then runs `concurrency` keep-alive HTTP/1.1
//! clients for the duration; request number `n` of a run is fixed by the seed (kinds come in
//! shuffled decks of the mix's weights, so every deck of `sum(weights)` consecutive requests
//! holds each kind exactly its weight), whichever client sends it.
//!
//! Latency is measured from sending a request to having read its whole body; percentiles are
//! over the successful (2xx) requests, errors (non-2xx or transport) are counted apart. The
//! service limits each client IP (600 requests per 60 s by default): start it with
//! `watch-catalogue serve --rate-limit 1000000000` to measure it, or the driver mostly measures
//! `429 rate_limited` answers (it warns when it sees any).

use crate::query_value;
use anyhow::{bail, Context};
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use reqwest::Url;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// What a request asks; each kind is reported separately.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// `GET /v1/models/{brand}/{slug}`.
    ModelBySlugs,
    /// `GET /v1/models?q=<a reference, respelled>`.
    ReferenceSearch,
    /// `GET /v1/models?q=<one word>`.
    TextSearch1w,
    /// `GET /v1/models?q=<two words>`.
    TextSearch2w,
    /// `GET /v1/models?q=<three words>`.
    TextSearch3w,
    /// `GET /v1/models?brand=X&sort=newest`.
    ModelsFiltered,
    /// `GET /v1/listings?brand=X&sort=price_asc` or `?minPriceUSD=…&maxPriceUSD=…&condition=UNWORN`.
    ListingsFiltered,
    /// `GET /v1/listings/stats?brand=X&model=Y`.
    ListingStats,
    /// `GET /v1/listings/{id}`.
    ListingById,
    /// `GET /v1/models?q=<one to three words, one of them misspelt>` (issue 18).
    TextSearchTypo,
    /// `GET /v1/models?facets=<all seven>`, alone, with a brand or with a word (issue 18).
    ModelsFaceted,
}

impl Kind {
    pub const ALL: [Kind; 11] = [
        Kind::ModelBySlugs,
        Kind::ReferenceSearch,
        Kind::TextSearch1w,
        Kind::TextSearch2w,
        Kind::TextSearch3w,
        Kind::ModelsFiltered,
        Kind::ListingsFiltered,
        Kind::ListingStats,
        Kind::ListingById,
        Kind::TextSearchTypo,
        Kind::ModelsFaceted,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::ModelBySlugs => "model_by_slugs",
            Kind::ReferenceSearch => "reference_search",
            Kind::TextSearch1w => "text_search_1w",
            Kind::TextSearch2w => "text_search_2w",
            Kind::TextSearch3w => "text_search_3w",
            Kind::ModelsFiltered => "models_filtered",
            Kind::ListingsFiltered => "listings_filtered",
            Kind::ListingStats => "listing_stats",
            Kind::ListingById => "listing_by_id",
            Kind::TextSearchTypo => "text_search_typo",
            Kind::ModelsFaceted => "models_faceted",
        }
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Kind {
    type Err = String;
    fn from_str(s: &str) -> Result<Kind, String> {
        Kind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
                format!("unknown kind `{s}`; one of: {}", names.join(", "))
            })
    }
}

/// Weights of the kinds in a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mix {
    pub name: String,
    pub weights: Vec<(Kind, u32)>,
}

impl Mix {
    /// 30 % model by slugs, 15 % reference search, 20 % text search (7/7/6 for one, two and
    /// three words), 10 % filtered models, 15 % filtered listings, 5 % stats, 5 % listing by id.
    pub fn default_mix() -> Mix {
        Mix {
            name: "default".to_owned(),
            weights: vec![
                (Kind::ModelBySlugs, 30),
                (Kind::ReferenceSearch, 15),
                (Kind::TextSearch1w, 7),
                (Kind::TextSearch2w, 7),
                (Kind::TextSearch3w, 6),
                (Kind::ModelsFiltered, 10),
                (Kind::ListingsFiltered, 15),
                (Kind::ListingStats, 5),
                (Kind::ListingById, 5),
            ],
        }
    }

    /// One kind alone.
    pub fn only(kind: Kind) -> Mix {
        Mix {
            name: format!("only {kind}"),
            weights: vec![(kind, 1)],
        }
    }

    fn weight(&self, kind: Kind) -> u32 {
        self.weights
            .iter()
            .filter(|(k, _)| *k == kind)
            .map(|(_, w)| *w)
            .sum()
    }
}

impl FromStr for Mix {
    type Err = String;
    /// `default`, or `kind=weight,kind=weight,…`.
    fn from_str(s: &str) -> Result<Mix, String> {
        if s == "default" {
            return Ok(Mix::default_mix());
        }
        let mut weights = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (kind, weight) = part.split_once('=').ok_or_else(|| {
                format!("mix is `default` or `kind=weight,…`, not `{s}` (at `{part}`)")
            })?;
            let kind: Kind = kind.trim().parse()?;
            let weight: u32 = weight
                .trim()
                .parse()
                .map_err(|_| format!("weight of {kind} is not a whole number: `{weight}`"))?;
            if weight > 0 {
                weights.push((kind, weight));
            }
        }
        if weights.is_empty() {
            return Err(format!("mix `{s}` gives no kind a weight"));
        }
        Ok(Mix {
            name: s.to_owned(),
            weights,
        })
    }
}

/// Requests a second for `--rate`: a finite number above zero.
pub fn parse_rate(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(rate) if rate.is_finite() && rate > 0.0 => Ok(rate),
        _ => Err(format!(
            "`{s}` is not a rate: give requests a second above 0 (leave --rate out for a closed loop)"
        )),
    }
}

/// `10s`, `500ms`, `2m`, or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (number, unit) = match s.find(|c: char| c.is_ascii_alphabetic()) {
        Some(at) => s.split_at(at),
        None => (s, "s"),
    };
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a duration (10s, 500ms, 2m)"))?;
    let seconds = match unit {
        "ms" => value / 1000.0,
        "s" => value,
        "m" | "min" => value * 60.0,
        _ => return Err(format!("`{s}`: the unit is ms, s or m")),
    };
    if !seconds.is_finite() || seconds < 0.0 {
        return Err(format!("`{s}` is not a duration"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// Settings of a run.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    /// `http://host:port`, without `/v1`.
    pub base: String,
    pub concurrency: usize,
    /// Measured time, after the warm-up.
    pub duration: Duration,
    /// Time run first and left out of the figures.
    pub warmup: Duration,
    pub seed: u64,
    pub mix: Mix,
    /// Models whose details are read at start, for references and words.
    pub sample_models: usize,
    /// Longest wait for one response (a timeout counts as a transport error).
    pub timeout: Duration,
    /// Requests a second in all, sent on schedule whatever the answers (an open loop, as real
    /// readers are), each timed from when it was due; `None`: each client sends again as soon
    /// as it is answered (a closed loop, the machine's most).
    pub rate: Option<f64>,
}

impl LoadConfig {
    pub fn new(base: impl Into<String>) -> LoadConfig {
        LoadConfig {
            base: base.into(),
            concurrency: 32,
            duration: Duration::from_secs(10),
            warmup: Duration::ZERO,
            seed: 42,
            mix: Mix::default_mix(),
            sample_models: 64,
            timeout: Duration::from_secs(30),
            rate: None,
        }
    }
}

/// Figures of one kind, or of all together. Latencies are of the successful requests, in
/// microseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KindReport {
    pub kind: String,
    pub weight: u32,
    /// Candidate requests the pool held for this kind.
    pub pool: usize,
    /// Requests completed in the measured time, errors included.
    pub count: u64,
    /// Non-2xx answers and transport failures.
    pub errors: u64,
    /// Errors by HTTP status, or `transport`.
    pub errors_by_status: BTreeMap<String, u64>,
    /// The first error seen, for diagnosis.
    pub first_error: Option<String>,
    /// Completed requests per second (errors included), rounded to 0.1.
    pub rps: f64,
    /// Successful requests per second, rounded to 0.1.
    pub ok_rps: f64,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
    pub mean_us: u64,
    /// Mean body size of the successful answers.
    pub mean_bytes: u64,
}

/// A run's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadReport {
    pub base: String,
    pub mix: String,
    pub concurrency: usize,
    pub seed: u64,
    pub warmup_secs: f64,
    pub duration_secs: f64,
    /// From the end of the warm-up to the last measured answer, rounded to 1 ms.
    pub measured_secs: f64,
    pub overall: KindReport,
    pub kinds: Vec<KindReport>,
    pub warnings: Vec<String>,
}

impl LoadReport {
    /// The figures as a markdown table (milliseconds).
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        out.push_str(
            "| kind | weight | pool | requests | errors | req/s | ok/s | p50 ms | p90 ms | p99 ms | max ms | mean KiB |\n",
        );
        out.push_str("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
        let ms = |us: u64| us as f64 / 1000.0;
        for k in self.kinds.iter().chain(std::iter::once(&self.overall)) {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {:.1} | {:.1} | {:.2} | {:.2} | {:.2} | {:.2} | {:.1} |",
                k.kind,
                k.weight,
                k.pool,
                k.count,
                k.errors,
                k.rps,
                k.ok_rps,
                ms(k.p50_us),
                ms(k.p90_us),
                ms(k.p99_us),
                ms(k.max_us),
                k.mean_bytes as f64 / 1024.0,
            );
        }
        out
    }
}

/// The candidate requests of each kind, learnt from the server.
#[derive(Debug, Clone, Default)]
pub struct Targets {
    pub pools: BTreeMap<Kind, Vec<Url>>,
}

const RATE_LIMIT_HINT: &str =
    "the service limits each client IP (600 requests per 60 s by default); \
start it with `watch-catalogue serve --rate-limit 1000000000` to measure it";

/// A pooled keep-alive HTTP/1.1 client for `concurrency` connections.
pub fn client(concurrency: usize, timeout: Duration) -> anyhow::Result<reqwest::Client> {
    Ok(reqwest::Client::builder()
        .pool_max_idle_per_host(concurrency.max(1))
        .pool_idle_timeout(Duration::from_secs(90))
        .tcp_nodelay(true)
        .timeout(timeout)
        .build()?)
}

async fn get_json(client: &reqwest::Client, base: &str, path: &str) -> anyhow::Result<Value> {
    let url = format!("{base}{path}");
    let response = client
        .get(&url)
        .send()
        .await
        .with_context(|| format!("GET {url}"))?;
    let status = response.status();
    let body = response
        .bytes()
        .await
        .with_context(|| format!("GET {url}: body"))?;
    if status.as_u16() == 429 {
        bail!("GET {url}: 429 rate_limited while learning the dataset: {RATE_LIMIT_HINT}");
    }
    if !status.is_success() {
        bail!(
            "GET {url}: {status}: {}",
            String::from_utf8_lossy(&body[..body.len().min(300)])
        );
    }
    serde_json::from_slice(&body).with_context(|| format!("GET {url}: body is not JSON"))
}

fn data(page: &Value) -> &[Value] {
    page["data"].as_array().map_or(&[], Vec::as_slice)
}

fn text(value: &Value) -> Option<String> {
    value.as_str().map(str::to_owned)
}

/// Lowercase words of a name, in order, without repeats.
fn words(names: &[&str]) -> Vec<String> {
    let mut seen = BTreeSet::new();
    names
        .iter()
        .flat_map(|name| name.split(|c: char| !c.is_alphanumeric()))
        .filter(|w| w.chars().count() >= 2)
        .map(str::to_lowercase)
        .filter(|w| seen.insert(w.clone()))
        .collect()
}

/// A reference as a user might type it: lowercase, its parts joined by dashes, and a dash
/// between letters and digits when it has no separator (`126610LN` → `126610-ln`).
pub fn respell_dashed(reference: &str) -> String {
    let parts: Vec<String> = reference
        .split(|c: char| !c.is_alphanumeric())
        .filter(|p| !p.is_empty())
        .map(str::to_lowercase)
        .collect();
    if parts.len() > 1 {
        return parts.join("-");
    }
    let word = parts.into_iter().next().unwrap_or_default();
    let chars: Vec<char> = word.chars().collect();
    match chars
        .windows(2)
        .position(|w| w[0].is_ascii_digit() != w[1].is_ascii_digit())
    {
        Some(at) => {
            let (head, tail) = chars.split_at(at + 1);
            format!(
                "{}-{}",
                head.iter().collect::<String>(),
                tail.iter().collect::<String>()
            )
        }
        None => word,
    }
}

/// A reference lowercase without separators (`2254.50` → `225450`).
pub fn respell_compact(reference: &str) -> String {
    reference
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// `count` distinct positions below `len`, ascending.
fn pick_ascending(rng: &mut SmallRng, len: usize, count: usize) -> Vec<usize> {
    let mut all: Vec<usize> = (0..len).collect();
    all.shuffle(rng);
    let mut picked: Vec<usize> = all.into_iter().take(count).collect();
    picked.sort_unstable();
    picked
}

/// Learns brand and model slugs, references, names, listing ids and prices from the server
/// and builds each kind's pool of requests. Deterministic for a seed and a dataset.
pub async fn discover(
    client: &reqwest::Client,
    base: &str,
    seed: u64,
    sample_models: usize,
) -> anyhow::Result<Targets> {
    let base = base.trim_end_matches('/');
    let sitemap = get_json(client, base, "/v1/sitemap/models?pageSize=1000").await?;
    // (id, brand slug, slug)
    let models: Vec<(String, String, String)> = data(&sitemap)
        .iter()
        .filter_map(|m| Some((text(&m["id"])?, text(&m["brandSlug"])?, text(&m["slug"])?)))
        .collect();
    if models.is_empty() {
        bail!("{base}/v1/sitemap/models lists no model: nothing to ask");
    }
    let brands_page = get_json(client, base, "/v1/brands?pageSize=100").await?;
    let brands: Vec<String> = data(&brands_page)
        .iter()
        .filter(|b| b["modelCount"].as_u64().unwrap_or(1) > 0)
        .filter_map(|b| text(&b["slug"]))
        .collect();
    // (id, model id, price in USD)
    let mut listings: Vec<(String, Option<String>, Option<u64>)> = Vec::new();
    for page in 1..=3 {
        let body = get_json(
            client,
            base,
            &format!("/v1/listings?pageSize=100&page={page}"),
        )
        .await?;
        let items = data(&body);
        listings.extend(
            items.iter().filter_map(|l| {
                Some((text(&l["id"])?, text(&l["modelId"]), l["priceUSD"].as_u64()))
            }),
        );
        if items.len() < 100 {
            break;
        }
    }

    let mut rng = SmallRng::seed_from_u64(seed);
    // Models with listings, by slug: from the sitemap page, else asked by id (a few).
    let by_id: HashMap<&str, (&str, &str)> = models
        .iter()
        .map(|(id, b, s)| (id.as_str(), (b.as_str(), s.as_str())))
        .collect();
    let listed_ids: BTreeSet<&str> = listings
        .iter()
        .filter_map(|(_, model, _)| model.as_deref())
        .collect();
    let mut listed_models: Vec<(String, String)> = Vec::new();
    let mut asked = 0;
    for id in listed_ids {
        if let Some((b, s)) = by_id.get(id) {
            listed_models.push(((*b).to_owned(), (*s).to_owned()));
        } else if asked < 32 {
            asked += 1;
            let page =
                get_json(client, base, &format!("/v1/models?id={}", query_value(id))).await?;
            if let Some(m) = data(&page).first() {
                if let (Some(b), Some(s)) = (text(&m["brand"]["slug"]), text(&m["slug"])) {
                    listed_models.push((b, s));
                }
            }
        }
    }

    // A sample of models read in full: references, names, series and brand names.
    let mut sample: Vec<&(String, String, String)> = models.iter().collect();
    sample.shuffle(&mut rng);
    sample.truncate(sample_models.max(1));
    let mut references = Vec::new();
    let mut named: Vec<Vec<String>> = Vec::new();
    for (_, brand, slug) in &sample {
        let m = get_json(
            client,
            base,
            &format!("/v1/models/{}/{}", query_value(brand), query_value(slug)),
        )
        .await?;
        if let Some(reference) = m["referenceNumber"].as_str() {
            references.push(reference.to_owned());
        }
        let names: Vec<&str> = [&m["brand"]["name"], &m["series"]["name"], &m["name"]]
            .into_iter()
            .filter_map(Value::as_str)
            .collect();
        named.push(words(&names));
    }

    let url = |path: String| Url::parse(&format!("{base}{path}"));
    let mut pools: BTreeMap<Kind, Vec<Url>> = BTreeMap::new();
    let mut add = |kind: Kind, path: String| -> anyhow::Result<()> {
        let pool = pools.entry(kind).or_default();
        let url = url(path)?;
        if !pool.contains(&url) {
            pool.push(url);
        }
        Ok(())
    };
    for (_, brand, slug) in &models {
        add(
            Kind::ModelBySlugs,
            format!("/v1/models/{}/{}", query_value(brand), query_value(slug)),
        )?;
    }
    for reference in &references {
        for spelling in [respell_dashed(reference), respell_compact(reference)] {
            add(
                Kind::ReferenceSearch,
                format!("/v1/models?q={}", query_value(&spelling)),
            )?;
        }
    }
    for words in &named {
        for (kind, count) in [
            (Kind::TextSearch1w, 1),
            (Kind::TextSearch2w, 2),
            (Kind::TextSearch3w, 3),
        ] {
            if words.len() >= count {
                let q: Vec<&str> = pick_ascending(&mut rng, words.len(), count)
                    .into_iter()
                    .map(|i| words[i].as_str())
                    .collect();
                add(kind, format!("/v1/models?q={}", query_value(&q.join(" "))))?;
            }
        }
    }
    for brand in &brands {
        add(
            Kind::ModelsFiltered,
            format!("/v1/models?brand={}&sort=newest", query_value(brand)),
        )?;
    }
    // Listings by the brands that have listings (all brands when none is known).
    let listed_brands: BTreeSet<&str> = listed_models.iter().map(|(b, _)| b.as_str()).collect();
    let listing_brands: Vec<&str> = if listed_brands.is_empty() {
        brands.iter().map(String::as_str).collect()
    } else {
        listed_brands.into_iter().collect()
    };
    for brand in &listing_brands {
        add(
            Kind::ListingsFiltered,
            format!("/v1/listings?brand={}&sort=price_asc", query_value(brand)),
        )?;
    }
    let mut prices: Vec<u64> = listings.iter().filter_map(|(_, _, p)| *p).collect();
    prices.sort_unstable();
    let ranges: Vec<(u64, u64)> = if prices.is_empty() {
        vec![(1_000, 20_000), (5_000, 20_000)]
    } else {
        let at = |q: f64| {
            let price = prices[((prices.len() - 1) as f64 * q).round() as usize];
            (price / 100) * 100
        };
        [(0.0, 0.3), (0.1, 0.5), (0.25, 0.75), (0.5, 0.9), (0.7, 1.0)]
            .into_iter()
            .map(|(lo, hi)| (at(lo), at(hi).max(at(lo) + 100)))
            .collect()
    };
    for (low, high) in ranges {
        add(
            Kind::ListingsFiltered,
            format!("/v1/listings?minPriceUSD={low}&maxPriceUSD={high}&condition=UNWORN"),
        )?;
    }
    // Stats of the models with listings; of sampled models when none is known.
    let stats_models: Vec<(String, String)> = if listed_models.is_empty() {
        sample
            .iter()
            .map(|(_, b, s)| (b.clone(), s.clone()))
            .collect()
    } else {
        listed_models
    };
    for (brand, slug) in &stats_models {
        add(
            Kind::ListingStats,
            format!(
                "/v1/listings/stats?brand={}&model={}",
                query_value(brand),
                query_value(slug)
            ),
        )?;
    }
    for (id, _, _) in &listings {
        add(
            Kind::ListingById,
            format!("/v1/listings/{}", query_value(id)),
        )?;
    }
    // Drawn last, so that the pools above stay what they were for a seed.
    for words in &named {
        let count = rng.random_range(1..=words.len().clamp(1, 3));
        let mut q: Vec<String> = pick_ascending(&mut rng, words.len(), count)
            .into_iter()
            .map(|i| words[i].clone())
            .collect();
        if let Some(longest) = q.iter_mut().max_by_key(|w| w.chars().count()) {
            *longest = misspell(longest);
        }
        add(
            Kind::TextSearchTypo,
            format!("/v1/models?q={}", query_value(&q.join(" "))),
        )?;
    }
    const EVERY_FACET: &str =
        "brand,series,caseMaterial,dialColor,movementType,complication,diameter";
    add(
        Kind::ModelsFaceted,
        format!("/v1/models?facets={EVERY_FACET}"),
    )?;
    for brand in &brands {
        add(
            Kind::ModelsFaceted,
            format!(
                "/v1/models?brand={}&facets={EVERY_FACET}",
                query_value(brand)
            ),
        )?;
    }
    for words in &named {
        if let Some(word) = words.first() {
            add(
                Kind::ModelsFaceted,
                format!("/v1/models?q={}&facets={EVERY_FACET}", query_value(word)),
            )?;
        }
    }
    Ok(Targets { pools })
}

/// `word` with its two middle letters swapped, or its last letter dropped when they are the
/// same or it is short: one typo, as a user makes it.
pub fn misspell(word: &str) -> String {
    let mut letters: Vec<char> = word.chars().collect();
    let middle = letters.len() / 2;
    if letters.len() >= 5 && letters[middle - 1] != letters[middle] {
        letters.swap(middle - 1, middle);
    } else if letters.len() > 1 {
        letters.pop();
    }
    letters.into_iter().collect()
}

/// Every kind's request pool as JSON lines, `{"kind": "…", "url": "/v1/…"}` (the path and
/// query, without the base), kinds in [`Kind::ALL`] order and each pool in its own order: what
/// the peers of bench/peers/ translate into SQL, so they run the requests this driver sends.
pub fn request_lines(targets: &Targets) -> String {
    let mut out = String::new();
    for (kind, pool) in &targets.pools {
        for url in pool {
            let path = match url.query() {
                Some(query) => format!("{}?{query}", url.path()),
                None => url.path().to_owned(),
            };
            let line = serde_json::json!({"kind": kind.name(), "url": path});
            let _ = writeln!(out, "{line}");
        }
    }
    out
}

/// 64-bit mix of `seed` and `n` (splitmix64), to seed one request's or one deck's choices.
fn mix64(seed: u64, n: u64) -> u64 {
    let mut z = seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The request sequence of a run: request `n` is fixed by the seed.
#[derive(Debug, Clone)]
pub struct Plan {
    seed: u64,
    /// One deck: each kind as many times as its weight, in kind order (shuffled per deck).
    deck: Vec<Kind>,
    pools: BTreeMap<Kind, Vec<Url>>,
}

impl Plan {
    /// Kinds with no candidate requests are left out (with a warning in `dropped`).
    pub fn new(mix: &Mix, targets: &Targets, seed: u64) -> anyhow::Result<(Plan, Vec<String>)> {
        let mut deck = Vec::new();
        let mut dropped = Vec::new();
        for kind in Kind::ALL {
            let weight = mix.weight(kind);
            if weight == 0 {
                continue;
            }
            if targets.pools.get(&kind).is_none_or(Vec::is_empty) {
                dropped.push(format!(
                    "{kind}: the dataset gave no request of this kind; left out of the mix"
                ));
                continue;
            }
            deck.extend(std::iter::repeat_n(kind, weight as usize));
        }
        if deck.is_empty() {
            bail!(
                "no kind of the mix `{}` has requests on this dataset ({})",
                mix.name,
                dropped.join("; ")
            );
        }
        Ok((
            Plan {
                seed,
                deck,
                pools: targets.pools.clone(),
            },
            dropped,
        ))
    }

    /// Request number `n` of the run.
    pub fn request(&self, n: u64) -> (Kind, &Url) {
        let len = self.deck.len() as u64;
        let kind = if len == 1 {
            self.deck[0]
        } else {
            let mut deck = self.deck.clone();
            deck.shuffle(&mut SmallRng::seed_from_u64(mix64(self.seed, n / len)));
            deck[(n % len) as usize]
        };
        let pool = &self.pools[&kind];
        let mut rng = SmallRng::seed_from_u64(mix64(self.seed ^ 0x5EED, n));
        (kind, &pool[rng.random_range(0..pool.len())])
    }

    pub fn pool_size(&self, kind: Kind) -> usize {
        self.pools.get(&kind).map_or(0, Vec::len)
    }
}

/// What one client measured.
#[derive(Default)]
struct Tally {
    latencies_us: Vec<u32>,
    bytes: u64,
    count: u64,
    errors: BTreeMap<String, u64>,
    first_error: Option<String>,
}

impl Tally {
    fn merge(&mut self, other: Tally) {
        self.latencies_us.extend(other.latencies_us);
        self.bytes += other.bytes;
        self.count += other.count;
        for (status, n) in other.errors {
            *self.errors.entry(status).or_default() += n;
        }
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
    }
}

struct Shared {
    plan: Plan,
    next: AtomicU64,
    saw_429: AtomicBool,
    measure_from: Instant,
    stop_at: Instant,
    start: Instant,
    rate: Option<f64>,
}

impl Shared {
    /// When request `n` is due: now in a closed loop; on the schedule in an open one, waited
    /// for. A request waiting for a free client is late, and its lateness counts in its time.
    async fn due(&self, n: u64) -> Instant {
        match self.rate {
            None => Instant::now(),
            Some(rate) => {
                let at = self.start + Duration::from_secs_f64(n as f64 / rate);
                tokio::time::sleep_until(at).await;
                at
            }
        }
    }
}

async fn client_loop(
    shared: Arc<Shared>,
    client: reqwest::Client,
) -> (BTreeMap<Kind, Tally>, Instant) {
    let mut tallies: BTreeMap<Kind, Tally> = BTreeMap::new();
    let mut last = shared.measure_from;
    loop {
        let n = shared.next.fetch_add(1, Ordering::Relaxed);
        let sent = shared.due(n).await;
        if sent >= shared.stop_at {
            break;
        }
        let (kind, url) = shared.plan.request(n);
        let outcome = match client.get(url.clone()).send().await {
            Ok(response) => {
                let status = response.status().as_u16();
                match response.bytes().await {
                    Ok(body) => Ok((status, body)),
                    Err(e) => Err(format!("{url}: reading the body: {e}")),
                }
            }
            Err(e) => Err(format!("{url}: {e}")),
        };
        let done = Instant::now();
        if let Ok((429, _)) = outcome {
            if !shared.saw_429.swap(true, Ordering::Relaxed) {
                eprintln!("warning: 429 rate_limited from {url}: {RATE_LIMIT_HINT}");
            }
        }
        if sent < shared.measure_from {
            continue; // warm-up
        }
        last = last.max(done);
        let tally = tallies.entry(kind).or_default();
        tally.count += 1;
        match outcome {
            Ok((status, body)) if (200..300).contains(&status) => {
                let us = done.duration_since(sent).as_micros();
                tally
                    .latencies_us
                    .push(u32::try_from(us).unwrap_or(u32::MAX));
                tally.bytes += body.len() as u64;
            }
            Ok((status, body)) => {
                *tally.errors.entry(status.to_string()).or_default() += 1;
                tally.first_error.get_or_insert_with(|| {
                    format!(
                        "{url}: {status}: {}",
                        String::from_utf8_lossy(&body[..body.len().min(200)])
                    )
                });
            }
            Err(e) => {
                *tally.errors.entry("transport".to_owned()).or_default() += 1;
                tally.first_error.get_or_insert(e);
            }
        }
    }
    (tallies, last)
}

/// Nearest-rank percentile of sorted values.
fn percentile(sorted: &[u32], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    u64::from(sorted[rank - 1])
}

/// `value` rounded to `1 / per_unit` (10: tenths): the nearest double to a short decimal, so
/// it prints short and parses back to the same value.
fn round_to(value: f64, per_unit: f64) -> f64 {
    (value * per_unit).round() / per_unit
}

fn summarize(kind: String, weight: u32, pool: usize, tally: &mut Tally, secs: f64) -> KindReport {
    tally.latencies_us.sort_unstable();
    let ok = tally.latencies_us.len() as u64;
    let sum: u64 = tally.latencies_us.iter().map(|&us| u64::from(us)).sum();
    // Rates rounded to 0.1 so the JSON round-trips exactly.
    let rate = |n: u64| round_to(n as f64 / secs.max(1e-9), 10.0);
    KindReport {
        kind,
        weight,
        pool,
        count: tally.count,
        errors: tally.errors.values().sum(),
        errors_by_status: tally.errors.clone(),
        first_error: tally.first_error.clone(),
        rps: rate(tally.count),
        ok_rps: rate(ok),
        p50_us: percentile(&tally.latencies_us, 0.50),
        p90_us: percentile(&tally.latencies_us, 0.90),
        p99_us: percentile(&tally.latencies_us, 0.99),
        max_us: tally.latencies_us.last().map_or(0, |&us| u64::from(us)),
        mean_us: sum.checked_div(ok).unwrap_or(0),
        mean_bytes: tally.bytes.checked_div(ok).unwrap_or(0),
    }
}

/// The figures of one kind measured by another driver (`catalogue-bench replay`, in-process):
/// the latencies (µs) and body bytes of the successful requests, the errors by status, over
/// `secs` measured seconds.
pub fn kind_report(
    kind: &str,
    pool: usize,
    latencies_us: Vec<u32>,
    bytes: u64,
    errors: BTreeMap<String, u64>,
    first_error: Option<String>,
    secs: f64,
) -> KindReport {
    let count = latencies_us.len() as u64 + errors.values().sum::<u64>();
    let mut tally = Tally {
        latencies_us,
        bytes,
        count,
        errors,
        first_error,
    };
    summarize(kind.to_owned(), 1, pool, &mut tally, secs)
}

/// Learns the dataset, then runs the load and returns its figures.
pub async fn run(config: &LoadConfig) -> anyhow::Result<LoadReport> {
    if config.concurrency == 0 {
        bail!("concurrency must be at least 1");
    }
    let base = config.base.trim_end_matches('/').to_owned();
    let client = client(config.concurrency, config.timeout)?;
    let targets = discover(&client, &base, config.seed, config.sample_models).await?;
    let (plan, mut warnings) = Plan::new(&config.mix, &targets, config.seed)?;
    let start = Instant::now();
    let shared = Arc::new(Shared {
        plan,
        next: AtomicU64::new(0),
        saw_429: AtomicBool::new(false),
        measure_from: start + config.warmup,
        stop_at: start + config.warmup + config.duration,
        start,
        rate: config.rate,
    });
    let tasks: Vec<_> = (0..config.concurrency)
        .map(|_| tokio::spawn(client_loop(shared.clone(), client.clone())))
        .collect();
    let mut tallies: BTreeMap<Kind, Tally> = BTreeMap::new();
    // Clients stop sending at `stop_at`; the answers in flight then still count.
    let mut last = shared.stop_at;
    for task in tasks {
        let (tally, done) = task.await.context("a client task failed")?;
        last = last.max(done);
        for (kind, t) in tally {
            tallies.entry(kind).or_default().merge(t);
        }
    }
    let secs = round_to(
        last.duration_since(shared.measure_from)
            .as_secs_f64()
            .max(0.001),
        1000.0,
    );
    let mut overall = Tally::default();
    let mut kinds = Vec::new();
    for kind in Kind::ALL {
        let weight = config.mix.weight(kind);
        if weight == 0 || shared.plan.pool_size(kind) == 0 {
            continue;
        }
        let mut tally = tallies.remove(&kind).unwrap_or_default();
        let pool = shared.plan.pool_size(kind);
        let report = summarize(kind.name().to_owned(), weight, pool, &mut tally, secs);
        overall.merge(tally);
        kinds.push(report);
    }
    let pool_total = kinds.iter().map(|k| k.pool).sum();
    let weight_total = kinds.iter().map(|k| k.weight).sum();
    let overall = summarize(
        "all".to_owned(),
        weight_total,
        pool_total,
        &mut overall,
        secs,
    );
    if let Some(n) = overall.errors_by_status.get("429") {
        warnings.push(format!(
            "{n} of {} requests were refused with 429 rate_limited: {RATE_LIMIT_HINT}",
            overall.count
        ));
    }
    Ok(LoadReport {
        base,
        mix: config.mix.name.clone(),
        concurrency: config.concurrency,
        seed: config.seed,
        warmup_secs: round_to(config.warmup.as_secs_f64(), 1000.0),
        duration_secs: round_to(config.duration.as_secs_f64(), 1000.0),
        measured_secs: secs,
        overall,
        kinds,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn respellings() {
        assert_eq!(respell_dashed("126610LN"), "126610-ln");
        assert_eq!(respell_dashed("SARB033"), "sarb-033");
        assert_eq!(respell_dashed("2254.50"), "2254-50");
        assert_eq!(respell_dashed("M79030N-0001"), "m79030n-0001");
        assert_eq!(respell_dashed("124270"), "124270");
        assert_eq!(respell_compact("311.32.42.30.04.003"), "31132423004003");
    }

    #[test]
    fn durations_and_mixes() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert!(parse_duration("ten").is_err());
        assert_eq!(parse_rate("200"), Ok(200.0));
        assert_eq!(parse_rate("0.5"), Ok(0.5));
        for refused in ["0", "-5", "inf", "NaN", "fast"] {
            assert!(parse_rate(refused).is_err(), "{refused}");
        }
        assert_eq!("default".parse::<Mix>(), Ok(Mix::default_mix()));
        let mix: Mix = "model_by_slugs=3, listing_by_id=1".parse().expect("mix");
        assert_eq!(
            mix.weights,
            vec![(Kind::ModelBySlugs, 3), (Kind::ListingById, 1)]
        );
        assert!("nope=1".parse::<Mix>().is_err());
        let total: u32 = Mix::default_mix().weights.iter().map(|(_, w)| w).sum();
        assert_eq!(total, 100);
    }

    #[test]
    fn decks_hold_the_weights_and_the_sequence_is_fixed_by_the_seed() {
        let base = Url::parse("http://127.0.0.1:1/").expect("url");
        let pools = Kind::ALL
            .into_iter()
            .map(|k| {
                let urls = (0..5)
                    .map(|i| base.join(&format!("{k}/{i}")).expect("url"))
                    .collect();
                (k, urls)
            })
            .collect();
        let targets = Targets { pools };
        let mix = Mix::default_mix();
        let (plan, dropped) = Plan::new(&mix, &targets, 7).expect("plan");
        assert!(dropped.is_empty());
        for deck in 0..3u64 {
            let mut counts: BTreeMap<Kind, u32> = BTreeMap::new();
            for n in deck * 100..(deck + 1) * 100 {
                *counts.entry(plan.request(n).0).or_default() += 1;
            }
            for (kind, weight) in &mix.weights {
                assert_eq!(counts.get(kind), Some(weight), "{kind} in deck {deck}");
            }
        }
        let (again, _) = Plan::new(&mix, &targets, 7).expect("plan");
        let (other, _) = Plan::new(&mix, &targets, 8).expect("plan");
        let seq =
            |p: &Plan| -> Vec<String> { (0..300).map(|n| p.request(n).1.to_string()).collect() };
        assert_eq!(seq(&plan), seq(&again));
        assert_ne!(seq(&plan), seq(&other));
    }

    #[test]
    fn request_lines_are_json_with_path_and_query() {
        let base = Url::parse("http://127.0.0.1:1/").expect("url");
        let mut pools = BTreeMap::new();
        pools.insert(
            Kind::TextSearch1w,
            vec![base.join("/v1/models?q=speedmaster").expect("url")],
        );
        pools.insert(
            Kind::ModelBySlugs,
            vec![base.join("/v1/models/rolex/sub").expect("url")],
        );
        let lines = request_lines(&Targets { pools });
        assert_eq!(
            lines,
            "{\"kind\":\"model_by_slugs\",\"url\":\"/v1/models/rolex/sub\"}\n\
             {\"kind\":\"text_search_1w\",\"url\":\"/v1/models?q=speedmaster\"}\n"
        );
    }

    #[test]
    fn a_misspelling_is_one_typo() {
        assert_eq!(misspell("speedmaster"), "speemdaster");
        assert_eq!(misspell("rolex"), "rloex");
        assert_eq!(misspell("date"), "dat");
        assert_eq!(misspell("seeing"), "seieng");
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<u32> = (1..=100).collect();
        assert_eq!(percentile(&v, 0.5), 50);
        assert_eq!(percentile(&v, 0.99), 99);
        assert_eq!(percentile(&v, 1.0), 100);
        assert_eq!(percentile(&[], 0.5), 0);
    }
}
