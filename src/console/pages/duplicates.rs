//! `GET /console/duplicates`: the duplicate groups one at a time, their models side by side with
//! the fields `GET /models/compare` finds different marked (D-183).

use super::*;

/// A row of the side-by-side table: a field and each model's value of it.
pub struct Row {
    pub label: &'static str,
    pub cells: Vec<String>,
    pub differs: bool,
}

#[derive(Template)]
#[template(path = "duplicates.html", config = "src/console/askama.toml")]
struct DuplicatesPage {
    signed: Option<Signed>,
    writes: bool,
    kinds: Vec<KindChoice>,
    brand: String,
    q: String,
    filtered: bool,
    group: Option<DuplicateGroup>,
    model_ids: String,
    /// Listings a merge relinks in its own write, its duplicates' in all; the script says
    /// those past it move after its answer.
    moved_with_merge: usize,
    rows: Vec<Row>,
    position: usize,
    total: usize,
    previous: Option<String>,
    next: Option<String>,
}

/// `GET /console/duplicates`: one duplicate group at a time, its models side by side, the
/// fields they differ on marked (as `GET /models/compare` finds them); for an admin, the keeper
/// to choose and the merge and dismiss that `console.js` posts to the API.
pub async fn duplicates(
    work: Work,
    SignedCaller(signed): SignedCaller,
    Extension(media): Extension<MediaBase>,
    Params(filters): Params<GroupParams>,
    Params(position): Params<Position>,
) -> ApiResult<Response> {
    let at = Pagination::parse(position.page.as_deref(), None, 1, 1)?;
    let page = work
        .run(move |app| duplicates_page(app, &signed, &filters, at, &media))
        .await?;
    render(&page)
}

fn duplicates_page(
    app: &App,
    signed: &SignedIn,
    filters: &GroupParams,
    at: Pagination,
    media: &MediaBase,
) -> ApiResult<DuplicatesPage> {
    let found = duplicate_models::group_page(app, filters, at, media)?;
    let group = found.data.into_iter().next();
    let rows = match &group {
        Some(group) => side_by_side_rows(app, group, media)?,
        None => Vec::new(),
    };
    let (kind, brand, q) = (
        shown(&filters.kind),
        shown(&filters.brand),
        shown(&filters.q),
    );
    let filters = [("kind", kind.as_str()), ("brand", &brand), ("q", &q)];
    let pager = Pager::one_at_a_time("/console/duplicates", &filters, at.page, found.total);
    let summary = &found.summary;
    let counts = [
        (
            "",
            "all kinds",
            summary.same_reference + summary.alternate_overlap + summary.base_variant,
        ),
        ("sameReference", "same reference", summary.same_reference),
        (
            "alternateOverlap",
            "alternate overlap",
            summary.alternate_overlap,
        ),
        ("baseVariant", "base variant", summary.base_variant),
    ];
    Ok(DuplicatesPage {
        signed: Some(Signed::of(signed)),
        writes: signed.user.role == Role::Admin,
        kinds: (counts.into_iter())
            .map(|(value, label, count)| KindChoice {
                value,
                label: format!("{label} ({count})"),
                selected: kind.as_str() == value || (value.is_empty() && kind == "all"),
            })
            .collect(),
        filtered: !(kind.is_empty() || kind == "all") || !brand.is_empty() || !q.is_empty(),
        model_ids: group.as_ref().map_or(String::new(), |g| {
            g.models
                .iter()
                .map(|m| m.id.as_str())
                .collect::<Vec<_>>()
                .join(",")
        }),
        group,
        moved_with_merge: crate::jobs::merge::MOVED_WITH_THE_MERGE,
        rows,
        position: at.page,
        total: found.total,
        previous: pager.previous,
        next: pager.next,
        brand,
        q,
    })
}

/// The fields a person compares duplicates on, as the full model's JSON names them.
const COMPARED_FIELDS: [(&str, &str); 9] = [
    ("reference", "referenceNumber"),
    ("alternates", "alternateReferences"),
    ("series", "series"),
    ("calibre", "caliber"),
    ("released", "releaseYear"),
    ("discontinued", "discontinuationYear"),
    ("diameter", "diameter"),
    ("case", "caseMaterials"),
    ("description", "description"),
];

/// The group's models side by side: the compared fields (marked where the models differ, as
/// `GET /models/compare` finds it), their listing counts and when each was added.
fn side_by_side_rows(app: &App, group: &DuplicateGroup, media: &MediaBase) -> ApiResult<Vec<Row>> {
    let ids: Vec<ModelId> = (group.models.iter())
        .filter_map(|m| m.id.parse().ok())
        .collect();
    let models = app.store().catalogue().models(&ids)?;
    let side = models::side_by_side(app, &models, media)?;
    let mut rows: Vec<Row> = (COMPARED_FIELDS.iter())
        .map(|&(label, field)| Row {
            label,
            cells: side.fields.iter().map(|f| cell(f.get(field))).collect(),
            differs: side.differences.iter().any(|d| d == field),
        })
        .collect();
    let counts: Vec<String> = group
        .models
        .iter()
        .map(|m| m.listing_count.to_string())
        .collect();
    rows.push(Row {
        label: "listings",
        differs: counts.iter().any(|c| *c != counts[0]),
        cells: counts,
    });
    rows.push(Row {
        label: "added",
        cells: group.models.iter().map(|m| m.created_at.clone()).collect(),
        differs: false,
    });
    Ok(rows)
}

/// A field's value as a cell shows it: a name for an entity, a list joined, a dash for none.
fn cell(value: Option<&serde_json::Value>) -> String {
    use serde_json::Value;
    match value {
        None | Some(Value::Null) => "—".into(),
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(items)) if items.is_empty() => "—".into(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| cell(Some(i)))
            .collect::<Vec<_>>()
            .join(", "),
        // An entity by its name; a calibre without one by its reference.
        Some(Value::Object(entity)) => match entity.get("name") {
            Some(Value::String(name)) => name.clone(),
            _ => cell(entity.get("reference")),
        },
        Some(other) => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_cell_shows_names_lists_and_a_dash_for_nothing() {
        assert_eq!(cell(Some(&json!("126610LN"))), "126610LN");
        assert_eq!(cell(Some(&json!(41.0))), "41.0");
        assert_eq!(cell(Some(&json!(["a", "b"]))), "a, b");
        assert_eq!(
            cell(Some(&json!({"name": "Submariner", "slug": "s"}))),
            "Submariner"
        );
        assert_eq!(
            cell(Some(&json!({"name": null, "reference": "3235"}))),
            "3235"
        );
        for nothing in [None, Some(&json!(null)), Some(&json!([]))] {
            assert_eq!(cell(nothing), "—");
        }
    }
}
