//! Reading one dataset file into typed rows, with every problem tied to its file, line and
//! field: malformed JSON, a field the file does not have, a missing or mistyped field.

use super::rows::{allowed_fields, Row};
use super::{DatasetSource, ImportError, Problem};
use rayon::prelude::*;
use std::io::BufRead;

/// Lines parsed together on rayon's threads: a million models' lines parse in half the time
/// on two cores, and a batch of them is all the text held at once.
const LINES_PER_BATCH: usize = 16_384;

/// The rows of `file` with their 1-based line numbers; an absent file has none.
pub fn read_rows<T: Row + Send>(
    source: &dyn DatasetSource,
    file: &str,
    problems: &mut Vec<Problem>,
) -> Result<Vec<(usize, T)>, ImportError> {
    let Some(reader) = source.open(file).map_err(|e| ImportError::io(file, e))? else {
        return Ok(Vec::new());
    };
    let allowed = allowed_fields::<T>();
    let mut rows = Vec::new();
    let mut lines = reader.lines().enumerate();
    loop {
        let mut batch = Vec::with_capacity(LINES_PER_BATCH);
        let mut read = 0;
        for (index, line) in lines.by_ref().take(LINES_PER_BATCH) {
            read += 1;
            let line = line.map_err(|e| ImportError::io(file, e))?;
            if !line.trim().is_empty() {
                batch.push((index + 1, line));
            }
        }
        if read == 0 {
            return Ok(rows);
        }
        let parsed: Vec<(usize, Result<T, LineProblems>)> = batch
            .into_par_iter()
            .map(|(number, line)| (number, parse_line(&line, &allowed)))
            .collect();
        for (number, parsed) in parsed {
            match parsed {
                Ok(row) => rows.push((number, row)),
                Err(found) => problems.extend(found.into_iter().map(|(field, message)| Problem {
                    file: file.to_owned(),
                    line: number,
                    field,
                    message,
                })),
            }
        }
    }
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

    /// One file of text, as a dataset.
    struct OneFile(String);

    impl DatasetSource for OneFile {
        fn describe(&self) -> String {
            "memory".into()
        }
        fn open(&self, _file: &str) -> std::io::Result<Option<Box<dyn BufRead + '_>>> {
            Ok(Some(Box::new(self.0.as_bytes())))
        }
    }

    #[test]
    fn rows_and_problems_keep_their_line_numbers_across_parse_batches() {
        // Two and a half batches, blank lines among them, a bad line in the second batch.
        let lines = LINES_PER_BATCH * 5 / 2;
        let bad = LINES_PER_BATCH + 7;
        let text: String = (1..=lines)
            .map(|number| match number {
                _ if number == bad => "{\"slug\":\"broken\"}\n".to_owned(),
                _ if number % 1000 == 0 => "\n".to_owned(),
                _ => format!("{{\"slug\":\"b-{number}\",\"name\":\"B {number}\"}}\n"),
            })
            .collect();
        let mut problems = Vec::new();
        let rows: Vec<(usize, BrandRow)> =
            read_rows(&OneFile(text), "brands.jsonl", &mut problems).expect("read");
        let expected: Vec<usize> = (1..=lines).filter(|n| *n != bad && n % 1000 != 0).collect();
        let numbers: Vec<usize> = rows.iter().map(|(n, _)| *n).collect();
        assert_eq!(numbers, expected);
        assert!(rows.iter().all(|(n, row)| row.slug == format!("b-{n}")));
        assert_eq!(problems.len(), 1);
        assert_eq!(
            (problems[0].line, problems[0].field.as_deref()),
            (bad, Some("name"))
        );
    }
}
