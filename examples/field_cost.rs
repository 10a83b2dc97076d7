//! What each catalogue index field costs to index: the models of a stopped data dir, made into
//! documents once, then indexed on one tantivy thread into one segment as an import's rebuild
//! does, once per variant, each leaving some fields out.
//!
//! `cargo run --release --example field_cost -- DATA_DIR VARIANT...`, a variant being `all`
//! or the fields left out, comma-separated (`ref_prefix`, `id,doc_key`); prefixed `shuffled:`
//! the documents arrive in a random order, `unsorted:` the index is not sorted by id.
//! Calibre movements are left out of the documents (they are few terms).

use catalogue_index::schema_parts::{build, names, register, sorted_by};
use catalogue_index::{CatalogueDoc, ModelDoc};
use std::collections::HashMap;
use std::time::Instant;
use tantivy::schema::{Field, Schema};
use tantivy::{Index, IndexSettings, TantivyDocument};
use watch_catalogue::jobs::reindex::model_doc;
use watch_catalogue::store::Store;

type Failure = Box<dyn std::error::Error>;

fn main() -> Result<(), Failure> {
    let mut args = std::env::args().skip(1);
    let dir = args.next().ok_or("usage: field_cost DATA_DIR VARIANT...")?;
    let docs = model_docs(&std::path::Path::new(&dir).join("store"))?;
    eprintln!("{} model documents", docs.len());
    let (schema, fields) = build();
    for variant in args {
        let (shuffled, rest) = match variant.strip_prefix("shuffled:") {
            Some(rest) => (true, rest),
            None => (false, variant.as_str()),
        };
        let (sorted, rest) = match rest.strip_prefix("unsorted:") {
            Some(rest) => (false, rest),
            None => (true, rest),
        };
        let left_out = fields_named(&schema, rest)?;
        let mut documents: Vec<TantivyDocument> = docs
            .iter()
            .map(|doc| {
                without(
                    fields.document(&CatalogueDoc::Model(doc.clone())),
                    &left_out,
                )
            })
            .collect();
        if shuffled {
            shuffle(&mut documents);
        }
        let settings = match sorted {
            true => sorted_by(names::ID),
            false => IndexSettings::default(),
        };
        let (cpu_before, started) = (cpu_seconds()?, Instant::now());
        let bytes = index(&schema, settings, documents)?;
        println!(
            "{variant:40} {:6.2} s wall {:6.2} s CPU {:5} MiB",
            started.elapsed().as_secs_f64(),
            cpu_seconds()? - cpu_before,
            bytes >> 20
        );
    }
    Ok(())
}

/// Every model's document, read from the store at `path`.
fn model_docs(path: &std::path::Path) -> Result<Vec<ModelDoc>, Failure> {
    let store = Store::open(path, 1 << 30)?;
    let brands: HashMap<_, _> = store
        .catalogue()
        .brands()
        .map(|b| b.map(|b| (b.id, b)))
        .collect::<Result<_, _>>()?;
    let series: HashMap<_, _> = store
        .catalogue()
        .all_series()
        .map(|s| s.map(|s| (s.id, s)))
        .collect::<Result<_, _>>()?;
    let docs = store
        .catalogue()
        .all_models()
        .map(|model| {
            model.map(|m| {
                let (brand, series) = (brands.get(&m.brand_id), series.get(&m.series_id));
                model_doc(&m, brand, series, None, 0)
            })
        })
        .collect::<Result<_, _>>()?;
    Ok(docs)
}

fn fields_named(schema: &Schema, names: &str) -> Result<Vec<Field>, Failure> {
    names
        .split(',')
        .filter(|name| !name.is_empty() && *name != "all")
        .map(|name| Ok(schema.get_field(name)?))
        .collect()
}

fn without(full: TantivyDocument, left_out: &[Field]) -> TantivyDocument {
    let mut out = TantivyDocument::new();
    for (field, value) in full.field_values() {
        if !left_out.contains(&field) {
            out.add_field_value(field, value);
        }
    }
    out
}

/// A fixed pseudo-random order (xorshift), the same every run.
fn shuffle(documents: &mut [TantivyDocument]) {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in (1..documents.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        documents.swap(i, (x % (i as u64 + 1)) as usize);
    }
}

/// Indexes `documents` into a new index as the import's rebuild does; returns its size.
fn index(
    schema: &Schema,
    settings: IndexSettings,
    documents: Vec<TantivyDocument>,
) -> Result<u64, Failure> {
    let dir = tempfile::tempdir()?;
    let index = Index::builder()
        .schema(schema.clone())
        .settings(settings)
        .create_in_dir(dir.path())?;
    register(&index);
    // The rebuild's one thread and its room for a whole segment (`RebuildShape::OneSegment`).
    let mut writer: tantivy::IndexWriter<TantivyDocument> =
        index.writer_with_num_threads(1, 1536 << 20)?;
    for document in documents {
        writer.add_document(document)?;
    }
    writer.commit()?;
    writer.wait_merging_threads()?;
    let mut bytes = 0;
    for entry in std::fs::read_dir(dir.path())? {
        bytes += entry?.metadata()?.len();
    }
    Ok(bytes)
}

/// User and system CPU time of this process so far, from /proc (Linux).
fn cpu_seconds() -> Result<f64, Failure> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    let after_name = stat
        .rfind(')')
        .ok_or("no command name in /proc/self/stat")?
        + 2;
    let fields: Vec<&str> = stat[after_name..].split(' ').collect();
    let ticks = |at: usize| -> Result<f64, Failure> {
        Ok(fields
            .get(at)
            .ok_or("short /proc/self/stat")?
            .parse::<f64>()?)
    };
    // utime and stime, fields 14 and 15 of the line, in clock ticks of 1/100 s.
    Ok((ticks(11)? + ticks(12)?) / 100.0)
}
