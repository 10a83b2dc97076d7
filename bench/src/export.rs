//! `catalogue-bench export-peers --data-dir DIR --out OUT`: the store of record as
//! tab-separated files in PostgreSQL's COPY text format, for the peers of bench/peers/
//! (PostgreSQL and SQLite) to load the same data the service serves.
//!
//! The rows are what the service computed: the matcher's model and brand of each listing, its US
//! dollar price through the rates in force (as the listings index prices it), each model's
//! listing count, the normalised references. Matching and pricing are not what is compared.
//! Everything streams from the store in id order: nothing is held but the brands, series,
//! calibres and providers (small), so millions of models and listings export in constant memory.
//!
//! Format: one row a line, fields separated by tabs, `\N` for NULL, and backslash, tab, newline
//! and carriage return escaped as `\\`, `\t`, `\n`, `\r` (PostgreSQL's `COPY … FROM` text
//! format). `--gzip` writes `NAME.tsv.gz` instead of `NAME.tsv`. `manifest.json` lists the
//! tables, their columns and row counts.
//!
//! `catalogue-bench replay --data-dir DIR --requests FILE` is the other half of the Rust side of
//! the peers: the requests `load --dump-requests` wrote, sent to the service's router
//! in-process (every layer and the JSON rendering, no socket), each kind alone, so ours can be
//! set beside SQLite, which the peers also run in-process (see [`replay`]).

use anyhow::Context;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use watch_catalogue::api::config::DEFAULT_MEDIA_BASE_URL;
use watch_catalogue::data_dir::DataDir;
use watch_catalogue::domain::{normalize_reference, Brand, BrandId, Caliber, CaliberId, Series};
use watch_catalogue::domain::{Complication, ComplicationId, SeriesId};
use watch_catalogue::store::Store;

/// One field of a row.
pub enum Cell<'a> {
    Null,
    Text(&'a str),
    Int(i64),
    Bool(bool),
}

impl<'a> From<&'a str> for Cell<'a> {
    fn from(value: &'a str) -> Cell<'a> {
        Cell::Text(value)
    }
}

impl<'a> From<Option<&'a str>> for Cell<'a> {
    fn from(value: Option<&'a str>) -> Cell<'a> {
        value.map_or(Cell::Null, Cell::Text)
    }
}

fn int<T: TryInto<i64>>(value: Option<T>) -> Cell<'static> {
    value
        .and_then(|v| v.try_into().ok())
        .map_or(Cell::Null, Cell::Int)
}

/// Appends `text` escaped for the COPY text format.
fn escape_into(out: &mut Vec<u8>, text: &str) {
    for byte in text.bytes() {
        match byte {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            _ => out.push(byte),
        }
    }
}

/// A row of cells as one COPY text line (with its newline).
pub fn encode_row(cells: &[Cell<'_>], out: &mut Vec<u8>) {
    use std::io::Write as _;
    for (i, cell) in cells.iter().enumerate() {
        if i > 0 {
            out.push(b'\t');
        }
        match cell {
            Cell::Null => out.extend_from_slice(b"\\N"),
            Cell::Text(text) => escape_into(out, text),
            Cell::Int(v) => {
                let _ = write!(out, "{v}");
            }
            Cell::Bool(v) => out.push(if *v { b't' } else { b'f' }),
        }
    }
    out.push(b'\n');
}

enum Sink {
    Plain(BufWriter<File>),
    Gzip(flate2::write::GzEncoder<BufWriter<File>>),
}

impl Sink {
    fn writer(&mut self) -> &mut dyn Write {
        match self {
            Sink::Plain(w) => w,
            Sink::Gzip(w) => w,
        }
    }

    fn finish(self) -> std::io::Result<()> {
        match self {
            Sink::Plain(mut w) => w.flush(),
            Sink::Gzip(w) => w.finish()?.flush(),
        }
    }
}

/// One table's file.
struct Table {
    name: &'static str,
    columns: &'static [&'static str],
    file: PathBuf,
    sink: Sink,
    rows: u64,
    line: Vec<u8>,
}

impl Table {
    fn create(
        dir: &Path,
        name: &'static str,
        columns: &'static [&'static str],
        gzip: bool,
    ) -> anyhow::Result<Table> {
        let file = dir.join(if gzip {
            format!("{name}.tsv.gz")
        } else {
            format!("{name}.tsv")
        });
        let raw = BufWriter::with_capacity(
            1 << 20,
            File::create(&file).with_context(|| format!("creating {}", file.display()))?,
        );
        let sink = if gzip {
            Sink::Gzip(flate2::write::GzEncoder::new(
                raw,
                flate2::Compression::fast(),
            ))
        } else {
            Sink::Plain(raw)
        };
        Ok(Table {
            name,
            columns,
            file,
            sink,
            rows: 0,
            line: Vec::with_capacity(4096),
        })
    }

    fn row(&mut self, cells: &[Cell<'_>]) -> anyhow::Result<()> {
        anyhow::ensure!(
            cells.len() == self.columns.len(),
            "{}: {} cells for {} columns",
            self.name,
            cells.len(),
            self.columns.len()
        );
        self.line.clear();
        encode_row(cells, &mut self.line);
        self.sink
            .writer()
            .write_all(&self.line)
            .with_context(|| format!("writing {}", self.file.display()))?;
        self.rows += 1;
        Ok(())
    }

    fn finish(self) -> anyhow::Result<Value> {
        let file = self.file.clone();
        self.sink
            .finish()
            .with_context(|| format!("writing {}", file.display()))?;
        let bytes = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
        Ok(json!({
            "name": self.name,
            "file": file.file_name().and_then(|f| f.to_str()).unwrap_or_default(),
            "columns": self.columns,
            "rows": self.rows,
            "bytes": bytes,
        }))
    }
}

const BRANDS: &[&str] = &["id", "slug", "name", "aliases"];
const SERIES: &[&str] = &["id", "brand_id", "slug", "name"];
const PROVIDERS: &[&str] = &["id", "slug", "name"];
const CALIBERS: &[&str] = &["id", "brand_id", "slug", "reference", "detail"];
const RATES: &[&str] = &["currency", "usd_to"];
const MODELS: &[&str] = &[
    "id",
    "brand_id",
    "series_id",
    "caliber_id",
    "slug",
    "name",
    "reference_number",
    "ref_norm",
    "alt_refs_norm",
    "release_year",
    "brand_names",
    "series_name",
    "description",
    "listing_count",
    "thumbnail_url",
    "thumbnail_is_cropped",
    "detail",
];
const LISTINGS: &[&str] = &[
    "id",
    "provider_id",
    "model_id",
    "brand_id",
    "status",
    "condition",
    "availability",
    "price",
    "currency",
    "price_usd",
    "title",
    "scraped_brand",
    "scraped_reference",
    "ref_norm",
    "created_at",
    "detail",
];

/// What the export wrote.
pub struct ExportReport {
    pub manifest: Value,
}

/// The calibre as `GET /models/{brand}/{slug}` shows it: specification, complications, parent.
fn caliber_detail(
    caliber: &Caliber,
    calibers: &HashMap<CaliberId, Caliber>,
    brands: &HashMap<BrandId, Brand>,
    complications: &HashMap<ComplicationId, Complication>,
) -> Value {
    let brand = |id: BrandId| {
        brands
            .get(&id)
            .map(|b| json!({"id": b.id.to_string(), "name": b.name, "slug": b.slug.as_str()}))
    };
    let parent = caliber.parent_id.and_then(|id| calibers.get(&id)).map(|p| {
        json!({"id": p.id.to_string(), "slug": p.slug.as_str(), "reference": p.reference,
               "name": p.name, "brand": brand(p.brand_id)})
    });
    let complications: Vec<Value> = caliber
        .complication_ids
        .iter()
        .filter_map(|id| complications.get(id))
        .map(|c| json!({"id": c.id.to_string(), "slug": c.slug.as_str(), "name": c.name}))
        .collect();
    json!({
        "id": caliber.id.to_string(),
        "slug": caliber.slug.as_str(),
        "reference": caliber.reference,
        "name": caliber.name,
        "type": caliber.kind,
        "brand": brand(caliber.brand_id),
        "diameter": caliber.diameter,
        "height": caliber.height,
        "jewels": caliber.jewels,
        "frequency": caliber.frequency,
        "powerReserve": caliber.power_reserve,
        "complications": complications,
        "parent": parent,
    })
}

/// Writes every table of the store under `data_dir` into `out`.
pub fn export_peers(data_dir: &Path, out: &Path, gzip: bool) -> anyhow::Result<ExportReport> {
    let data = DataDir::new(data_dir);
    let store_dir = data.store();
    anyhow::ensure!(
        store_dir.is_dir(),
        "{} holds no store (import a dataset first)",
        store_dir.display()
    );
    // sled locks its directory: the server on this data dir must be stopped first.
    let store = Store::open(&store_dir, 64 << 20).with_context(|| {
        format!(
            "opening the store {} (stop any server using this data dir)",
            store_dir.display()
        )
    })?;
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let mut written = Vec::new();

    let brands: HashMap<BrandId, Brand> = store
        .catalogue()
        .brands()
        .map(|b| b.map(|b| (b.id, b)))
        .collect::<Result<_, _>>()?;
    let mut table = Table::create(out, "brands", BRANDS, gzip)?;
    let mut ids: Vec<&BrandId> = brands.keys().collect();
    ids.sort_unstable_by_key(|id| id.0);
    for id in ids {
        let b = &brands[id];
        let aliases = b.aliases.join(" ");
        table.row(&[
            int(Some(b.id.0)),
            b.slug.as_str().into(),
            b.name.as_str().into(),
            aliases.as_str().into(),
        ])?;
    }
    written.push(table.finish()?);

    let series: HashMap<SeriesId, Series> = store
        .catalogue()
        .all_series()
        .map(|s| s.map(|s| (s.id, s)))
        .collect::<Result<_, _>>()?;
    let mut table = Table::create(out, "series", SERIES, gzip)?;
    let mut ids: Vec<&SeriesId> = series.keys().collect();
    ids.sort_unstable_by_key(|id| id.0);
    for id in ids {
        let s = &series[id];
        table.row(&[
            int(Some(s.id.0)),
            int(Some(s.brand_id.0)),
            s.slug.as_str().into(),
            s.name.as_str().into(),
        ])?;
    }
    written.push(table.finish()?);

    let mut table = Table::create(out, "providers", PROVIDERS, gzip)?;
    for provider in store.listings().providers() {
        let p = provider?;
        table.row(&[
            int(Some(p.id.0)),
            p.slug.as_str().into(),
            p.name.as_str().into(),
        ])?;
    }
    written.push(table.finish()?);

    let calibers: HashMap<CaliberId, Caliber> = store
        .catalogue()
        .calibers()
        .map(|c| c.map(|c| (c.id, c)))
        .collect::<Result<_, _>>()?;
    let mut complications: HashMap<ComplicationId, Complication> = HashMap::new();
    for caliber in calibers.values() {
        for id in &caliber.complication_ids {
            if !complications.contains_key(id) {
                if let Some(c) = store.catalogue().complication(*id)? {
                    complications.insert(*id, c);
                }
            }
        }
    }
    let mut table = Table::create(out, "calibers", CALIBERS, gzip)?;
    let mut ids: Vec<&CaliberId> = calibers.keys().collect();
    ids.sort_unstable_by_key(|id| id.0);
    for id in ids {
        let c = &calibers[id];
        let detail = caliber_detail(c, &calibers, &brands, &complications).to_string();
        table.row(&[
            int(Some(c.id.0)),
            int(Some(c.brand_id.0)),
            c.slug.as_str().into(),
            c.reference.as_str().into(),
            detail.as_str().into(),
        ])?;
    }
    written.push(table.finish()?);

    let rates = store.rates().table_in_force()?;
    let mut table = Table::create(out, "rates", RATES, gzip)?;
    if let Some(rates) = &rates {
        for (currency, usd_to) in rates.rates() {
            table.row(&[currency.into(), usd_to.as_str().into()])?;
        }
    }
    written.push(table.finish()?);

    // Brand names and aliases, and series names, denormalised onto each model for full text.
    let brand_names: HashMap<BrandId, String> = brands
        .values()
        .map(|b| {
            let names: Vec<&str> = std::iter::once(b.name.as_str())
                .chain(b.aliases.iter().map(String::as_str))
                .collect();
            (b.id, names.join(" "))
        })
        .collect();
    let mut table = Table::create(out, "models", MODELS, gzip)?;
    for model in store.catalogue().all_models() {
        let m = model?;
        let alternates: Vec<String> = m
            .alternate_references
            .iter()
            .map(|r| normalize_reference(r))
            .collect();
        let front = m.front_picture();
        let cropped = front.and_then(|p| p.cropped_url.as_deref());
        let thumbnail = cropped.or_else(|| front.map(|p| p.url.as_str()));
        let pictures: Vec<Value> = m
            .pictures
            .iter()
            .map(|p| {
                json!({"id": p.id.to_string(), "url": p.url, "type": p.kind.as_str(),
                       "croppedUrl": p.cropped_url})
            })
            .collect();
        let mut detail = json!({
            "alternateReferences": m.alternate_references,
            "updatedAt": m.updated_at.to_rfc3339(),
            "pictures": pictures,
        });
        if let (Some(object), Ok(Value::Object(spec))) =
            (detail.as_object_mut(), serde_json::to_value(&m.spec))
        {
            object.extend(spec);
        }
        let detail = detail.to_string();
        let reference = normalize_reference(&m.reference_number);
        let alternates = alternates.join(" ");
        let listing_count = store.listings().listing_count(m.id)?;
        table.row(&[
            int(Some(m.id.0)),
            int(Some(m.brand_id.0)),
            int(Some(m.series_id.0)),
            int(m.caliber_id.map(|c| c.0)),
            m.slug.as_str().into(),
            m.name.as_str().into(),
            m.reference_number.as_str().into(),
            reference.as_str().into(),
            alternates.as_str().into(),
            int(m.spec.release_year),
            brand_names.get(&m.brand_id).map(String::as_str).into(),
            series.get(&m.series_id).map(|s| s.name.as_str()).into(),
            m.description.as_deref().into(),
            int(Some(listing_count)),
            thumbnail.into(),
            Cell::Bool(cropped.is_some()),
            detail.as_str().into(),
        ])?;
    }
    written.push(table.finish()?);

    let mut table = Table::create(out, "listings", LISTINGS, gzip)?;
    let media = DEFAULT_MEDIA_BASE_URL.trim_end_matches('/');
    for listing in store.listings().all_listings() {
        let l = listing?;
        let d = &l.details;
        let price_usd = rates
            .as_ref()
            .and_then(|t| t.usd_price(d.price, d.currency.as_deref()));
        let time = |t: watch_catalogue::domain::Timestamp| t.to_rfc3339();
        let pictures: Vec<Value> = l
            .pictures
            .iter()
            .map(|p| json!({"id": p.id.to_string(), "url": format!("{media}/pictures/{}", p.id)}))
            .collect();
        let detail = json!({
            "url": d.url,
            "providerCode": l.provider_code,
            "year": d.year,
            "countryCode": d.country_code,
            "country": d.country,
            "city": d.city,
            "state": d.state,
            "boxAvailable": d.box_available,
            "papersAvailable": d.papers_available,
            "lastSeenAt": time(l.last_seen_at),
            "delistedAt": l.delisted_at.map(time),
            "reservedAt": l.reserved_at.map(time),
            "createdAt": time(l.created_at),
            "updatedAt": time(l.updated_at),
            "pictures": pictures,
        })
        .to_string();
        let reference = d.scraped_reference.as_deref().map(normalize_reference);
        let created = time(l.created_at);
        table.row(&[
            int(Some(l.id.0)),
            int(Some(l.provider_id.0)),
            int(l.model_id.map(|m| m.0)),
            int(l.brand_id.map(|b| b.0)),
            l.status.as_str().into(),
            d.condition.map(|c| c.as_str()).into(),
            d.availability.map(|a| a.as_str()).into(),
            int(d.price),
            d.currency.as_deref().into(),
            int(price_usd),
            d.title.as_deref().into(),
            d.scraped_brand.as_deref().into(),
            d.scraped_reference.as_deref().into(),
            reference.as_deref().into(),
            created.as_str().into(),
            detail.as_str().into(),
        ])?;
    }
    written.push(table.finish()?);

    let manifest = json!({
        "format": "PostgreSQL COPY text (tab-separated, \\N for NULL)",
        "gzip": gzip,
        "data_dir": data_dir.display().to_string(),
        "store_generation": store.generation()?.0,
        "rates_date": rates.as_ref().map(|r| r.date.clone()),
        "media_base_url": DEFAULT_MEDIA_BASE_URL,
        "tables": written,
    });
    std::fs::write(
        out.join("manifest.json"),
        serde_json::to_string_pretty(&manifest)?,
    )
    .with_context(|| format!("writing {}", out.join("manifest.json").display()))?;
    Ok(ExportReport { manifest })
}

// --- in-process replay ------------------------------------------------------------------------

/// Settings of `catalogue-bench replay`.
#[derive(Debug, Clone, clap::Args)]
pub struct ReplayConfig {
    /// The service's data dir, its indexes current.
    #[arg(long)]
    pub data_dir: PathBuf,
    /// JSON lines `{"kind", "url"}` (`catalogue-bench load --dump-requests`).
    #[arg(long)]
    pub requests: PathBuf,
    /// Comma-separated kinds (all in the file by default), each run alone, in the file's order.
    #[arg(long, value_delimiter = ',')]
    pub kinds: Vec<String>,
    /// Clients, each a task with one request in flight.
    #[arg(long, default_value_t = 32)]
    pub concurrency: usize,
    /// Measured time per kind.
    #[arg(long, default_value = "10s", value_parser = crate::load::parse_duration)]
    pub duration: std::time::Duration,
    /// Time run first per kind and left out of the figures.
    #[arg(long, default_value = "2s", value_parser = crate::load::parse_duration)]
    pub warmup: std::time::Duration,
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Requests kept per kind, evenly spread; 0 keeps the whole pool. The peers keep 128
    /// (pgbench's limit of scripts).
    #[arg(long, default_value_t = 128)]
    pub max_per_kind: usize,
    /// Runtime worker threads (one per core, as the server).
    #[arg(long, default_value_t = std::thread::available_parallelism().map_or(2, usize::from))]
    pub workers: usize,
}

/// The request pools of a `--dump-requests` file, by kind, in the file's order.
pub fn read_requests(path: &Path) -> anyhow::Result<Vec<(String, Vec<String>)>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut pools: Vec<(String, Vec<String>)> = Vec::new();
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let value: Value = serde_json::from_str(line)
            .with_context(|| format!("{}:{}: not JSON", path.display(), n + 1))?;
        let (Some(kind), Some(url)) = (value["kind"].as_str(), value["url"].as_str()) else {
            anyhow::bail!("{}:{}: no kind or url", path.display(), n + 1);
        };
        match pools.iter_mut().find(|(k, _)| k == kind) {
            Some((_, urls)) => urls.push(url.to_owned()),
            None => pools.push((kind.to_owned(), vec![url.to_owned()])),
        }
    }
    Ok(pools)
}

/// At most `count` items of `pool` evenly spread, in order: the peers' choice (bench/peers).
fn spread(pool: Vec<String>, count: usize) -> Vec<String> {
    if count == 0 || pool.len() <= count {
        return pool;
    }
    (0..count)
        .map(|i| pool[i * pool.len() / count].clone())
        .collect()
}

/// What one in-process client measured.
#[derive(Default)]
struct Measured {
    latencies_us: Vec<u32>,
    bytes: u64,
    errors: std::collections::BTreeMap<String, u64>,
    first_error: Option<String>,
}

async fn replay_client(
    router: axum::Router,
    urls: std::sync::Arc<Vec<String>>,
    seed: u64,
    measure_from: tokio::time::Instant,
    stop_at: tokio::time::Instant,
    queue: bool,
) -> Measured {
    use axum::body::Body;
    use axum::http::Request;
    use rand::{Rng, SeedableRng};
    use tower::ServiceExt;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let mut out = Measured::default();
    loop {
        let sent = tokio::time::Instant::now();
        if sent >= stop_at {
            break;
        }
        if queue {
            // Into the back of the run queue, as a request arriving at a busy server waits for
            // a worker: a task whose handler never waits would otherwise keep its worker, and
            // the other clients starve rather than queue.
            tokio::task::yield_now().await;
        }
        let url = &urls[rng.random_range(0..urls.len())];
        let outcome = match Request::get(url.as_str()).body(Body::empty()) {
            Ok(request) => match router.clone().oneshot(request).await {
                Ok(response) => {
                    let status = response.status().as_u16();
                    axum::body::to_bytes(response.into_body(), usize::MAX)
                        .await
                        .map(|body| (status, body))
                        .map_err(|e| format!("{url}: body: {e}"))
                }
                Err(e) => Err(format!("{url}: {e}")),
            },
            Err(e) => Err(format!("{url}: {e}")),
        };
        let done = tokio::time::Instant::now();
        if sent < measure_from {
            continue;
        }
        match outcome {
            Ok((status, body)) if (200..300).contains(&status) => {
                let us = done.duration_since(sent).as_micros();
                out.latencies_us.push(u32::try_from(us).unwrap_or(u32::MAX));
                out.bytes += body.len() as u64;
            }
            Ok((status, body)) => {
                *out.errors.entry(status.to_string()).or_default() += 1;
                out.first_error.get_or_insert_with(|| {
                    format!(
                        "{url}: {status}: {}",
                        String::from_utf8_lossy(&body[..body.len().min(200)])
                    )
                });
            }
            Err(e) => {
                *out.errors.entry("transport".to_owned()).or_default() += 1;
                out.first_error.get_or_insert(e);
            }
        }
    }
    out
}

/// Sends each kind's requests to the router in-process, `concurrency` clients (tasks on a
/// runtime of `workers` threads, as the server runs) for the duration, one kind after the
/// other. With more clients than workers, a request's latency runs from before it queues for a
/// worker to its whole body.
/// Figures as `catalogue-bench load` reports them, `base` `in-process:DATA_DIR`.
pub fn replay(config: &ReplayConfig) -> anyhow::Result<catalogue_bench::load::LoadReport> {
    use catalogue_bench::load::{kind_report, KindReport, LoadReport};
    anyhow::ensure!(config.concurrency > 0, "concurrency must be at least 1");
    let pools = read_requests(&config.requests)?;
    let data = DataDir::new(&config.data_dir);
    let app =
        watch_catalogue::app::App::open(&data, watch_catalogue::data_dir::DEFAULT_CACHE_BYTES)?;
    anyhow::ensure!(
        app.index_is_current()?,
        "the indexes of {} are behind its store: serve or reindex it once first",
        config.data_dir.display()
    );
    let router =
        watch_catalogue::api::router(std::sync::Arc::new(app), &catalogue_bench::unlimited_api());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.workers.max(1))
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let mut kinds: Vec<KindReport> = Vec::new();
    let mut all = Measured::default();
    let mut total_secs = 0.0;
    for (kind, urls) in pools {
        if !config.kinds.is_empty() && !config.kinds.contains(&kind) {
            continue;
        }
        let pool = urls.len();
        let urls = std::sync::Arc::new(spread(urls, config.max_per_kind));
        let (measured, secs) = runtime.block_on(async {
            let start = tokio::time::Instant::now();
            let measure_from = start + config.warmup;
            let stop_at = measure_from + config.duration;
            let tasks: Vec<_> = (0..config.concurrency)
                .map(|c| {
                    let seed = config.seed ^ ((c as u64) << 32) ^ kind.len() as u64;
                    tokio::spawn(replay_client(
                        router.clone(),
                        urls.clone(),
                        seed,
                        measure_from,
                        stop_at,
                        config.concurrency > config.workers,
                    ))
                })
                .collect();
            let mut merged = Measured::default();
            for task in tasks {
                let m = task.await.context("a client task failed")?;
                merged.latencies_us.extend(m.latencies_us);
                merged.bytes += m.bytes;
                for (status, n) in m.errors {
                    *merged.errors.entry(status).or_default() += n;
                }
                if merged.first_error.is_none() {
                    merged.first_error = m.first_error;
                }
            }
            let secs = measure_from.elapsed().as_secs_f64().max(0.001);
            anyhow::Ok((merged, secs))
        })?;
        all.latencies_us.extend(&measured.latencies_us);
        all.bytes += measured.bytes;
        for (status, n) in &measured.errors {
            *all.errors.entry(status.clone()).or_default() += n;
        }
        total_secs += secs;
        let report = kind_report(
            &kind,
            pool,
            measured.latencies_us,
            measured.bytes,
            measured.errors,
            measured.first_error,
            secs,
        );
        eprintln!(
            "in-process {kind}: {} requests, p50 {:.2} ms",
            report.count,
            report.p50_us as f64 / 1000.0
        );
        kinds.push(report);
    }
    let overall = kind_report(
        "all",
        kinds.iter().map(|k| k.pool).sum(),
        all.latencies_us,
        all.bytes,
        all.errors,
        None,
        total_secs,
    );
    Ok(LoadReport {
        base: format!("in-process:{}", config.data_dir.display()),
        mix: "each kind alone, in-process".to_owned(),
        concurrency: config.concurrency,
        seed: config.seed,
        warmup_secs: config.warmup.as_secs_f64(),
        duration_secs: config.duration.as_secs_f64(),
        measured_secs: (total_secs * 1000.0).round() / 1000.0,
        overall,
        kinds,
        warnings: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_copy_text() {
        let mut out = Vec::new();
        encode_row(
            &[
                Cell::Int(7),
                Cell::Null,
                Cell::Text("a\tb\\c\nd\re"),
                Cell::Bool(true),
            ],
            &mut out,
        );
        assert_eq!(out, b"7\t\\N\ta\\tb\\\\c\\nd\\re\tt\n".to_vec());
    }

    #[test]
    fn spread_keeps_an_even_sample_in_order() {
        let pool: Vec<String> = (0..10).map(|i| i.to_string()).collect();
        assert_eq!(spread(pool.clone(), 0), pool);
        assert_eq!(spread(pool.clone(), 20), pool);
        assert_eq!(spread(pool, 4), vec!["0", "2", "5", "7"]);
    }
}
