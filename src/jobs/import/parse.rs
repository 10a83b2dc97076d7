//! Reading one dataset file into typed rows, with every problem tied to its file, line and
//! field: malformed JSON, a field the file does not have, a missing or mistyped field.

use super::rows::{allowed_fields, Row};
use super::{DatasetSource, ImportError, Problem};
use crate::domain::repeated_key;
use rayon::prelude::*;
use std::io::BufRead;

/// Lines parsed together on rayon's threads, so that parsing takes both cores
/// (docs/decisions.md, D-21), and a batch of them is all the text held at once.
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
    if let Some(row) = parse_well_formed(line, allowed) {
        return Ok(row);
    }
    let value: serde_json::Value =
        serde_json::from_str(line).map_err(|e| vec![(None, format!("malformed JSON: {e}"))])?;
    let serde_json::Value::Object(object) = value else {
        return Err(vec![(None, "expected a JSON object".to_owned())]);
    };
    if let Some(path) = repeated_key(line) {
        let message = "given twice in the line; give each field once".to_owned();
        return Err(vec![(Some(path), message)]);
    }
    parse_object(object, allowed)
}

/// A line of known fields only, each of its type, read straight into its row: nearly every
/// line of a dataset. Building a JSON value first, then splitting off and reading the spec's
/// fields with their paths tracked, was most of an import's parse. `None` for any other line
/// (one with a problem to name, or that a typed read takes otherwise, such as a repeated
/// field), which the path that names each problem then reads.
fn parse_well_formed<T: Row>(line: &str, allowed: &[String]) -> Option<T> {
    use serde::de::DeserializeSeed;
    let mut keys = serde_json::Deserializer::from_str(line);
    let known = KnownKeys(allowed).deserialize(&mut keys).ok()?;
    keys.end().ok()?;
    known.then(|| serde_json::from_str(line).ok()).flatten()
}

/// Whether every key of a JSON object is one of the given names; the values are skipped.
struct KnownKeys<'a>(&'a [String]);

impl<'de> serde::de::DeserializeSeed<'de> for KnownKeys<'_> {
    type Value = bool;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for KnownKeys<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<M: serde::de::MapAccess<'de>>(self, mut map: M) -> Result<bool, M::Error> {
        let mut known = true;
        // Borrowed from the line: a key with an escape fails here, and its line goes the way
        // that names problems, which reads it as well.
        while let Some(key) = map.next_key::<&'de str>()? {
            known &= self.0.iter().any(|name| name == key);
            map.next_value::<serde::de::IgnoredAny>()?;
        }
        Ok(known)
    }
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
    fn a_field_given_twice_is_named_wherever_it_is() {
        use super::super::rows::ModelRow;
        let model = |rest: &str| {
            let line = format!(
                r#"{{"slug":"a","brand":"b","series":"c","name":"N","referenceNumber":"1"{rest}}}"#
            );
            parse_line::<ModelRow>(&line, &allowed_fields::<ModelRow>())
                .err()
                .unwrap_or_default()
        };
        let named = |problems: LineProblems| -> Vec<Option<String>> {
            problems.into_iter().map(|(field, _)| field).collect()
        };
        assert_eq!(
            named(problems_of(r#"{"slug":"a","name":"A","slug":"b"}"#)),
            [Some("slug".to_owned())]
        );
        assert_eq!(
            named(model(r#","diameter":40,"diameter":41"#)),
            [Some("diameter".to_owned())]
        );
        let pictures =
            r#","pictures":[{"type":"FRONT","url":"x"},{"url":"y","type":"FRONT","url":"z"}]"#;
        assert_eq!(named(model(pictures)), [Some("pictures[1].url".to_owned())]);
        assert_eq!(
            named(model(r#","caseMaterials":["steel","steel"]"#)),
            Vec::<Option<String>>::new(),
            "a value repeated in a list is not a repeated field"
        );
        assert!(model(r#","diameter":40"#).is_empty());
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

    /// The row the path that names problems reads from `line`, as JSON.
    fn named_path<T: Row>(line: &str) -> Result<serde_json::Value, LineProblems> {
        let object = match serde_json::from_str(line) {
            Ok(serde_json::Value::Object(object)) => object,
            _ => return Err(vec![(None, "not an object".into())]),
        };
        let row: T = parse_object(object, &allowed_fields::<T>())?;
        Ok(serde_json::to_value(row).unwrap_or_default())
    }

    #[test]
    fn a_well_formed_line_reads_as_the_path_that_names_problems_reads_it() {
        use super::super::rows::ModelRow;
        let allowed = allowed_fields::<ModelRow>();
        let fixtures = include_str!("../../../fixtures/models.jsonl");
        let lines: Vec<&str> = fixtures.lines().filter(|l| !l.trim().is_empty()).collect();
        assert!(lines.len() > 10, "the fixtures' model lines");
        for line in &lines {
            let fast = parse_well_formed::<ModelRow>(line, &allowed)
                .map(|row| serde_json::to_value(row).unwrap_or_default());
            assert_eq!(
                fast.as_ref(),
                named_path::<ModelRow>(line).ok().as_ref(),
                "{line}"
            );
            assert!(
                fast.is_some(),
                "a fixture line takes the direct read: {line}"
            );
        }
        let base = r#""slug":"a","brand":"b","series":"c","name":"N","referenceNumber":"1""#;
        for (rest, direct) in [
            (r#","diameter":40"#, true),
            (
                r#","diameter":40.5,"caseMaterials":["steel"],"releaseYear":null"#,
                true,
            ),
            (r#","diameter":"big""#, false),
            (r#","colour":"red""#, false),
            (r#","diameter":40,"diameter":41"#, false),
            (r#","name":"M""#, false),
            (r#","pictures":[{"type":"FRONT","url":"x"}]"#, true),
            (
                r#","pictures":[{"type":"FRONT","url":"x","extra":1}]"#,
                false,
            ),
        ] {
            let line = format!("{{{base}{rest}}}");
            let fast = parse_well_formed::<ModelRow>(&line, &allowed)
                .map(|row| serde_json::to_value(row).unwrap_or_default());
            assert_eq!(fast.is_some(), direct, "{line}");
            if let Some(fast) = fast {
                assert_eq!(Ok(fast), named_path::<ModelRow>(&line), "{line}");
            }
        }
        let escaped = format!(r#"{{{base},"diam\u0065ter":40}}"#);
        assert!(
            named_path::<ModelRow>(&escaped).is_ok(),
            "an escaped key is read the old way"
        );
        for line in [
            "[1]",
            r#"{"slug":"a"} trailing"#,
            r#"{"slug":"a","#,
            &escaped,
        ] {
            assert!(
                parse_well_formed::<ModelRow>(line, &allowed).is_none(),
                "{line}"
            );
        }
    }

    #[test]
    fn a_picture_s_unknown_field_is_named_with_its_place() {
        use super::super::rows::ModelRow;
        let line = r#"{"slug":"a","brand":"b","series":"c","name":"N","referenceNumber":"1","pictures":[{"type":"FRONT","url":"x"},{"type":"BACK","url":"y","cropedUrl":"z"}]}"#;
        let problems = parse_line::<ModelRow>(line, &allowed_fields::<ModelRow>())
            .err()
            .unwrap_or_default();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].0.as_deref(), Some("pictures[1].cropedUrl"));
        assert!(
            problems[0].1.contains("unknown field `cropedUrl`"),
            "{problems:?}"
        );
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
