//! Reading one dataset file into typed rows, with every problem tied to its file, line and
//! field: malformed JSON, a field the file does not have, a missing or mistyped field.

use super::rows::{allowed_fields, Row};
use super::{DatasetSource, ImportError, Problem};
use std::io::BufRead;

/// The rows of `file` with their 1-based line numbers; an absent file has none.
pub fn read_rows<T: Row>(
    source: &dyn DatasetSource,
    file: &str,
    problems: &mut Vec<Problem>,
) -> Result<Vec<(usize, T)>, ImportError> {
    let Some(reader) = source.open(file).map_err(|e| ImportError::io(file, e))? else {
        return Ok(Vec::new());
    };
    let allowed = allowed_fields::<T>();
    let mut rows = Vec::new();
    for (index, line) in reader.lines().enumerate() {
        let line = line.map_err(|e| ImportError::io(file, e))?;
        let number = index + 1;
        if line.trim().is_empty() {
            continue;
        }
        match parse_line(&line, &allowed) {
            Ok(row) => rows.push((number, row)),
            Err(found) => problems.extend(found.into_iter().map(|(field, message)| Problem {
                file: file.to_owned(),
                line: number,
                field,
                message,
            })),
        }
    }
    Ok(rows)
}

/// What is wrong with one line: each problem's field, when known, and message.
pub type LineProblems = Vec<(Option<String>, String)>;

fn parse_line<T: Row>(line: &str, allowed: &[String]) -> Result<T, LineProblems> {
    let value: serde_json::Value =
        serde_json::from_str(line).map_err(|e| vec![(None, format!("malformed JSON: {e}"))])?;
    let serde_json::Value::Object(object) = value else {
        return Err(vec![(None, "expected a JSON object".to_owned())]);
    };
    parse_object(object, allowed)
}

/// One line's object as a row of `T`: every field it names must be one of `allowed` (the
/// fields of `T`), every field `T` needs present and of its type.
pub fn parse_object<T: Row>(
    object: serde_json::Map<String, serde_json::Value>,
    allowed: &[String],
) -> Result<T, LineProblems> {
    let unknown: LineProblems = object
        .keys()
        .filter(|key| !allowed.contains(key))
        .map(|key| {
            let message = format!(
                "unknown field; this file's fields are: {}",
                allowed.join(", ")
            );
            (Some(key.clone()), message)
        })
        .collect();
    if !unknown.is_empty() {
        return Err(unknown);
    }
    T::from_object(object).map_err(|problem| vec![problem])
}

#[cfg(test)]
mod tests {
    use super::super::rows::BrandRow;
    use super::*;

    fn problems_of(line: &str) -> LineProblems {
        match parse_line::<BrandRow>(line, &allowed_fields::<BrandRow>()) {
            Ok(_) => Vec::new(),
            Err(problems) => problems,
        }
    }

    #[test]
    fn a_mistyped_model_spec_field_is_named() {
        use super::super::rows::ModelRow;
        let line = r#"{"slug":"a","brand":"b","series":"c","name":"N","referenceNumber":"1","diameter":"big"}"#;
        let problems = parse_line::<ModelRow>(line, &allowed_fields::<ModelRow>())
            .err()
            .unwrap_or_default();
        assert_eq!(problems[0].0.as_deref(), Some("diameter"));
        let ok = r#"{"slug":"a","brand":"b","series":"c","name":"N","referenceNumber":"1","diameter":40.5}"#;
        let row = parse_line::<ModelRow>(ok, &allowed_fields::<ModelRow>())
            .ok()
            .map(|r| r.spec.diameter);
        assert_eq!(row, Some(Some(40.5)));
    }

    #[test]
    fn every_problem_names_its_field() {
        let unknown = problems_of(r#"{"slug":"a","name":"A","colour":"red"}"#);
        assert_eq!(unknown[0].0.as_deref(), Some("colour"));
        let missing = problems_of(r#"{"slug":"a"}"#);
        assert_eq!(missing[0].0.as_deref(), Some("name"));
        let mistyped = problems_of(r#"{"slug":"a","name":"A","founded":"1905"}"#);
        assert_eq!(mistyped[0].0.as_deref(), Some("founded"));
        let malformed = problems_of(r#"{"slug":"a","#);
        assert!(malformed[0].1.starts_with("malformed JSON"));
        assert!(problems_of(r#"{"slug":"a","name":"A"}"#).is_empty());
    }
}
