//! `import DIR`: a dataset into the data dir, all of it or nothing, marked as under way until
//! it ends.

use super::batch::{print_report, without_transparent_huge_pages};
use super::stop::stop_on_signal;
use super::Local;
use std::path::PathBuf;
use std::sync::Arc;
use watch_catalogue::data_dir::{self, ImportMark};
use watch_catalogue::domain::Timestamp;
use watch_catalogue::jobs::batch;
use watch_catalogue::jobs::dataset::import_dataset;
use watch_catalogue::jobs::import::{DatasetSource, DirectorySource};
use watch_catalogue::jobs::progress::{JobControl, TestPacing};
use watch_catalogue::jobs::writer::WriteError;

/// sled page cache of `import` when none is given: the duplicate pass and the index rebuild
/// read back every model the import wrote, and a larger cache shortens them without raising
/// the import's peak, which comes earlier, while it checks the dataset (docs/decisions.md,
/// D-22).
pub const IMPORT_CACHE_BYTES: u64 = 512 << 20;

/// `import DIR`: the dataset into the data dir, marked as under way until it ends, so a crash
/// part-way is found by the next `serve` rather than served or topped up with the demo.
pub fn run(local: &Local, dir: PathBuf, observed_at: Option<Timestamp>) -> anyhow::Result<()> {
    let data_dir = &local.data_dir;
    anyhow::ensure!(dir.is_dir(), "{} is not a dataset directory", dir.display());
    anyhow::ensure!(
        !data_dir::is_marked(&dir),
        "{} is a data dir, not a dataset: the dataset is `import`'s argument, the data dir is --data-dir",
        dir.display()
    );
    let source = std::fs::canonicalize(&dir)
        .unwrap_or_else(|_| dir.clone())
        .display()
        .to_string();
    if let Some(under_way) = data_dir::import_under_way(data_dir)? {
        anyhow::ensure!(
            under_way.source == source,
            "an import of {} into {} (started {}) was cut short: import it again to complete it first, or remove {} to accept the store as it is",
            under_way.source,
            data_dir.path().display(),
            under_way.started_at,
            data_dir.path().join("import-under-way.json").display()
        );
    }
    without_transparent_huge_pages();
    // Marked once the store is ours (its lock taken), before the import's first write.
    let app = local.open()?;
    let mark = ImportMark::begin(data_dir, &source)?;
    let source = DirectorySource(dir);
    // A stop ends the import between two chunks of its snapshots, marked as cut short.
    let control = Arc::new(JobControl::default().paced(TestPacing::from_env()));
    stop_on_signal(control.clone());
    // Its catalogue's lines are counted as they are checked, then its snapshots' lines.
    eprintln!(
        "importing {}: its catalogue, then its snapshots",
        source.describe()
    );
    let ran = {
        let _shown = super::progress::watch(control.clone(), "import", "lines");
        app.writer()
            .run(|turn| import_dataset(turn, &source, app.media(), observed_at, &control))
    };
    let imported = match ran {
        Ok(done) => done.value,
        Err(WriteError::Job(error)) if error.is_refusal() => {
            mark.finish()?;
            return Err(error.into());
        }
        Err(error) => return Err(error.into()),
    };
    println!("imported {}\n{}", source.describe(), imported.catalogue);
    for (provider, report) in imported.feeds {
        print_report(&batch::ingest_lines(&provider, &report));
    }
    app.prepare(false)?;
    mark.finish()?;
    drop(app);
    local.snapshot_store();
    Ok(())
}
