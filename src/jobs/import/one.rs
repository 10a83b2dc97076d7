//! One model line checked and built outside a dataset import, for the back office's edits: the
//! import's own checks and skeleton (fields, parents, slug, references, pictures), so a model
//! made or changed by hand is one an import would have accepted.

use super::kinds::{Claim, Kind};
use super::rows::ModelRow;
use super::{ImportResult, Problem, Run};
use crate::domain::Model;
use crate::store::{RecordKind, Store, WriteBatch};

/// Which model a line is to become.
#[derive(Debug, Clone, Copy)]
pub enum RowTarget<'m> {
    /// A new model, with a new id; its slug must be free in its brand.
    New,
    /// This model, keeping its id, creation time and picture ids; its slug must be its own or
    /// free in its brand.
    Existing(&'m Model),
}

/// Checks `row` as a line of models.jsonl is checked and builds the model `target` becomes,
/// taking any new id from `batch`. Returns the batch, and the model or every problem found
/// (each naming its field). Nothing is added to the batch but ids.
pub fn build_model<'a>(
    store: &'a Store,
    batch: WriteBatch<'a>,
    row: ModelRow,
    target: RowTarget<'_>,
) -> ImportResult<(WriteBatch<'a>, Result<Model, Vec<Problem>>)> {
    let mut run = Run::over(store, batch);
    run.at(Model::FILE, 0);
    let built = run.one_model(row, target)?;
    let Run {
        batch, problems, ..
    } = run;
    let outcome = match built {
        Some(model) if problems.is_empty() => Ok(model),
        _ => Err(problems),
    };
    Ok((batch, outcome))
}

impl Run<'_> {
    fn one_model(&mut self, row: ModelRow, target: RowTarget<'_>) -> ImportResult<Option<Model>> {
        let Some((key, parents)) = Model::check(self, &row)? else {
            return Ok(None);
        };
        let own = match target {
            RowTarget::New => None,
            RowTarget::Existing(model) => Some(model),
        };
        if let Some(holder) = Model::stored(self.store, &key)? {
            if own.is_none_or(|own| own.id != holder.id) {
                self.problem(
                    "slug",
                    format!(
                        "`{}` is the slug of model {} (`{}`) of the brand already; slugs are unique within a brand",
                        key.1, holder.id, holder.name
                    ),
                );
                return Ok(None);
            }
        }
        let id = self.id_for(own.map(|m| m.id.0), RecordKind::Model)?;
        let claim = Claim {
            key,
            id,
            existing: own.cloned().map(Box::new),
            created_at: own.map_or(self.now, |m| m.created_at),
            updated_at: self.now,
        };
        Model::build(self, row, parents, &claim)
    }
}
