//! The running service: a data dir opened (store + index), made ready (fixtures imported into
//! an empty store, an index behind its store rebuilt), then served over HTTP.

use crate::config::{DataDir, ServeConfig};
use crate::fixtures::EmbeddedFixtures;
use crate::jobs::listing_writes::WrittenListings;
use crate::jobs::{import, ingest, reindex};
use crate::rates::ConversionTable;
use crate::store::{
    MigrationPolicy, MigrationReport, Store, StoreError, StoreGeneration, StoreResult,
};
use anyhow::Context;
use catalogue_index::{CatalogueIndex, ListingIndex};
use std::sync::Arc;
use std::sync::Mutex;

/// Store and indexes of one data dir.
pub struct App {
    pub store: Store,
    pub index: CatalogueIndex,
    pub listings: ListingIndex,
    /// The conversion table and the store generation it was read at.
    rates: Mutex<Option<(StoreGeneration, Option<Arc<ConversionTable>>)>>,
}

impl App {
    /// Opens the data dir, creating it when absent. A store of an older schema is refused
    /// with the advice to run `watch-catalogue migrate`.
    pub fn open(data_dir: &DataDir, cache_bytes: u64) -> anyhow::Result<App> {
        Ok(App::open_with(data_dir, cache_bytes, MigrationPolicy::Refuse)?.0)
    }

    /// Opens the data dir for `serve`: a store of an older schema is migrated first when every
    /// pending step is safe at start-up (docs/operations.md), and refused otherwise.
    pub fn open_for_serving(data_dir: &DataDir, cache_bytes: u64) -> anyhow::Result<App> {
        let (app, report) = App::open_with(data_dir, cache_bytes, MigrationPolicy::StartupSafe)?;
        for step in &report.steps {
            tracing::info!(
                from = step.from,
                to = step.to,
                rewritten = step.rewritten,
                resumed = step.resumed,
                "store migrated at start-up: {}",
                step.summary
            );
        }
        Ok(app)
    }

    fn open_with(
        data_dir: &DataDir,
        cache_bytes: u64,
        policy: MigrationPolicy,
    ) -> anyhow::Result<(App, MigrationReport)> {
        std::fs::create_dir_all(data_dir.path())
            .with_context(|| format!("creating data dir {}", data_dir.path().display()))?;
        let (store, report) = open_store(data_dir, cache_bytes, policy)?;
        let index = CatalogueIndex::open(&data_dir.index()).with_context(|| {
            format!("opening the search index in {}", data_dir.index().display())
        })?;
        let listings = ListingIndex::open(&data_dir.listings_index()).with_context(|| {
            format!(
                "opening the listings index in {}",
                data_dir.listings_index().display()
            )
        })?;
        let app = App {
            store,
            index,
            listings,
            rates: Mutex::new(None),
        };
        Ok((app, report))
    }

    /// The conversion table of the ECB rates in force, read again after any write; `None`
    /// before rates are loaded.
    pub fn conversion_table(&self) -> StoreResult<Option<Arc<ConversionTable>>> {
        let generation = self.store.generation()?;
        let mut cached = self
            .rates
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((at, table)) = cached.as_ref() {
            if *at == generation {
                return Ok(table.clone());
            }
        }
        let table = crate::rates::table_in_force(&self.store)?.map(Arc::new);
        *cached = Some((generation, table.clone()));
        Ok(table)
    }

    /// True when both indexes reflect the store's last write.
    pub fn index_is_current(&self) -> anyhow::Result<bool> {
        Ok(self.index.generation()? == Some(self.store.generation()?.0)
            && self.listings_index_is_current()?)
    }

    fn listings_index_is_current(&self) -> anyhow::Result<bool> {
        let needed = self.store.listings_generation()?.0;
        Ok(self.listings.generation()?.is_some_and(|g| g >= needed))
    }

    /// Brings the indexes up to a committed listings write: the listings index takes the
    /// written listings, the catalogue index the models whose listing counts changed; either is
    /// rebuilt instead when it was behind before the write.
    pub fn index_listings_write(
        &self,
        written: &WrittenListings,
        listings_generation_before: StoreGeneration,
    ) -> anyhow::Result<()> {
        reindex::index_written_listings(
            &self.store,
            &self.listings,
            written,
            listings_generation_before,
        )?;
        reindex::recount_models(&self.store, &self.index, written)?;
        self.prepare(false)
    }

    /// Seeds an empty store with the bundled fixtures (when `seed`), then rebuilds the index if
    /// it is missing or behind the store. Runs before the port opens.
    pub fn prepare(&self, seed: bool) -> anyhow::Result<()> {
        if seed && self.store.is_empty()? {
            tracing::info!("empty data dir: importing the bundled fixtures");
            let report = import::import(&self.store, &EmbeddedFixtures)
                .context("importing the bundled fixtures")?;
            tracing::info!(generation = report.generation.0, "fixtures imported");
            let feeds = ingest::ingest_dataset_feeds(
                &self.store,
                &EmbeddedFixtures,
                ingest::DEFAULT_MAX_INVALID,
            )
            .context("ingesting the bundled provider feeds")?;
            for (provider, report) in feeds {
                tracing::info!(%provider, created = report.created, matched = report.matched, "fixture feed ingested");
            }
        }
        if self.index.generation()? != Some(self.store.generation()?.0) {
            tracing::info!(
                store = self.store.generation()?.0,
                index = ?self.index.generation()?,
                "search index missing or behind the store: rebuilding"
            );
            let report = reindex::rebuild(&self.store, &self.index)?;
            tracing::info!(
                documents = report.documents,
                generation = report.generation,
                "search index rebuilt"
            );
        }
        if !self.listings_index_is_current()? {
            tracing::info!(
                listings = self.store.listings_generation()?.0,
                index = ?self.listings.generation()?,
                "listings index missing or behind the store: rebuilding"
            );
            let report = reindex::rebuild_listings(&self.store, &self.listings)?;
            tracing::info!(
                documents = report.documents,
                generation = report.generation,
                "listings index rebuilt"
            );
        }
        Ok(())
    }
}

/// Brings the store of `data_dir` up to this binary's schema (`watch-catalogue migrate`): every
/// pending step runs. The indexes are left alone: a step that changes what they hold bumps the
/// store generation, and the next start-up rebuilds them.
pub fn migrate(data_dir: &DataDir, cache_bytes: u64) -> anyhow::Result<MigrationReport> {
    let store_dir = data_dir.store();
    anyhow::ensure!(
        store_dir.is_dir(),
        "no store in {}: nothing to migrate",
        store_dir.display()
    );
    let (store, report) = open_store(data_dir, cache_bytes, MigrationPolicy::All)?;
    store.flush()?;
    Ok(report)
}

fn open_store(
    data_dir: &DataDir,
    cache_bytes: u64,
    policy: MigrationPolicy,
) -> anyhow::Result<(Store, MigrationReport)> {
    let store_dir = data_dir.store();
    Store::open_with(&store_dir, cache_bytes, policy).map_err(|error| {
        // sled's lock is the usual I/O failure at open; a schema error speaks for itself.
        let hint = match error {
            StoreError::Sled(_) => " (is another process using this data dir?)",
            _ => "",
        };
        anyhow::Error::new(error).context(format!(
            "opening the store in {}{hint}",
            store_dir.display()
        ))
    })
}

/// Opens and prepares the data dir, then serves until SIGINT or SIGTERM, finishing in-flight
/// requests and flushing the store before returning.
pub async fn serve(config: ServeConfig) -> anyhow::Result<()> {
    let app = tokio::task::spawn_blocking({
        let config = config.clone();
        move || -> anyhow::Result<App> {
            let app = App::open_for_serving(&config.data_dir, config.cache_bytes)?;
            app.prepare(true)?;
            Ok(app)
        }
    })
    .await??;
    let app = Arc::new(app);
    let listener = tokio::net::TcpListener::bind(config.addr)
        .await
        .with_context(|| format!("binding {}", config.addr))?;
    let base = format!("http://{}/v1", listener.local_addr()?);
    let data_dir = std::fs::canonicalize(config.data_dir.path())
        .unwrap_or_else(|_| config.data_dir.path().to_owned());
    tracing::info!(data_dir = %data_dir.display(), %base, "serving the watch catalogue");
    let router = crate::api::router(app.clone(), &config.api);
    axum::serve(
        listener,
        router.into_make_service_with_connect_info::<std::net::SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown_signal())
    .await?;
    app.store.flush()?;
    tracing::info!("stopped; store flushed");
    Ok(())
}

async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {},
        () = terminate => {},
    }
}
