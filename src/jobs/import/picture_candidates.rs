//! candidates.jsonl: photographs proposed for models' FRONT pictures. Each is keyed by its
//! model and image URL, so a re-import updates it in place (its id, picture and selection
//! kept); a candidate missing from a later file is kept (an admin may have chosen it).

use super::rows::CandidateRow;
use super::{ImportResult, KindCounts, Rows, Run};
use crate::domain::{
    CandidateId, CandidateOrigin, ModelId, PictureCandidate, PictureId, PictureRecord,
};
use crate::store::RecordKind;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

const FILE: &str = "candidates.jsonl";

impl Run<'_> {
    pub(super) fn candidates(&mut self, rows: Rows<CandidateRow>) -> ImportResult<KindCounts> {
        let mut counts = KindCounts::default();
        let mut seen: FxHashMap<(ModelId, String), usize> = FxHashMap::default();
        // Lines per model so far: a line without `rank` ranks by its place among them.
        let mut lines_of: BTreeMap<ModelId, u32> = BTreeMap::new();
        for (line, row) in rows {
            self.checking(FILE, line);
            let Some(model) = self.checked_candidate(&row)? else {
                continue;
            };
            if let Some(first) = Self::first_use(&mut seen, (model, row.url.clone()), line) {
                self.problem(
                    "url",
                    format!("the model has this candidate on line {first}"),
                );
                continue;
            }
            let position = lines_of.entry(model).or_default();
            *position += 1;
            let position = *position;
            self.upsert_candidate(model, row, position, &mut counts)?;
        }
        for model in lines_of.into_keys() {
            let review = self.store.pictures().picture_review(model)?;
            self.batch.put_picture_review(model, &review, true);
        }
        Ok(counts)
    }

    /// The candidate's model, when every field of the line is sound.
    fn checked_candidate(&mut self, row: &CandidateRow) -> ImportResult<Option<ModelId>> {
        let model = self.model_ref("model", &row.model)?;
        let mut sound = self.web_url("url", Some(&row.url));
        sound &= self.web_url("sourceUrl", row.source_url.as_deref());
        for (field, value) in [
            ("width", row.width),
            ("height", row.height),
            ("rank", row.rank),
        ] {
            if value == Some(0) {
                self.problem(field, "must be at least 1");
                sound = false;
            }
        }
        Ok(model.filter(|_| sound))
    }

    /// An absolute http or https URL, when given.
    fn web_url(&mut self, field: &str, value: Option<&str>) -> bool {
        let Some(value) = value else {
            return true;
        };
        let sound = crate::media::fetch::is_web_url(value);
        if !sound {
            self.problem(field, format!("`{value}` is not an http or https URL"));
        }
        sound
    }

    fn upsert_candidate(
        &mut self,
        model: ModelId,
        row: CandidateRow,
        position: u32,
        counts: &mut KindCounts,
    ) -> ImportResult<()> {
        let existing = self
            .store
            .pictures()
            .candidates_of(model)?
            .into_iter()
            .find(|c| c.origin == CandidateOrigin::Dataset && c.image_url == row.url);
        let (id, picture, selected_at, created_at) = match &existing {
            Some(c) => (c.id, c.picture, c.selected_at, c.created_at),
            None => {
                let picture = PictureId(self.batch.allocate_id(RecordKind::Picture)?);
                self.batch
                    .put_picture(&PictureRecord::pending(picture, row.url.clone(), self.now));
                let id = CandidateId(self.batch.allocate_id(RecordKind::Candidate)?);
                (id, picture, None, self.now)
            }
        };
        let candidate = PictureCandidate {
            id,
            model_id: model,
            picture,
            image_url: row.url,
            page_url: row.source_url,
            query: row.query.filter(|q| !q.trim().is_empty()),
            width: row.width,
            height: row.height,
            rank: row.rank.unwrap_or(position),
            origin: CandidateOrigin::Dataset,
            selected_at,
            created_at,
        };
        match existing {
            None => counts.created += 1,
            Some(old) if old == candidate => {
                counts.unchanged += 1;
                return Ok(());
            }
            Some(_) => counts.updated += 1,
        }
        self.batch.put_candidate(&candidate);
        Ok(())
    }
}
