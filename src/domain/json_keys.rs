//! A key given twice in one JSON object: serde_json's value keeps the last and drops the
//! first without a word, so JSON read through a value or a map (a dataset line, a request
//! body, a reconciliation batch) is checked for one and refused with its path. A snapshot line
//! is read straight into a flat struct, whose derived reader refuses a repeated field itself.

/// The path (`slug`, `pictures[0].url`) of the first key that an object of `json`, at any
/// depth, gives twice: a JSON value keeps only the last of them, and the text would be read as
/// if the first were not there. `None` also for text that is not JSON (its reader says why).
pub fn repeated_key(json: &str) -> Option<String> {
    use serde::de::DeserializeSeed;
    let mut reader = serde_json::Deserializer::from_str(json);
    FirstRepeat {
        path: String::new(),
    }
    .deserialize(&mut reader)
    .ok()
    .flatten()
}

/// Walks a JSON value and finds the first repeated key in it, named by its path from `path`.
struct FirstRepeat {
    path: String,
}

impl FirstRepeat {
    fn key(&self, key: &str) -> String {
        match self.path.is_empty() {
            true => key.to_owned(),
            false => format!("{}.{key}", self.path),
        }
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for FirstRepeat {
    type Value = Option<String>;

    fn deserialize<D: serde::Deserializer<'de>>(self, json: D) -> Result<Self::Value, D::Error> {
        json.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for FirstRepeat {
    type Value = Option<String>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut first = None;
        let mut index = 0;
        loop {
            let path = format!("{}[{index}]", self.path);
            match seq.next_element_seed(FirstRepeat { path })? {
                Some(found) => first = first.or(found),
                None => return Ok(first),
            }
            index += 1;
        }
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        // Every entry is read even after a repeat is found: the reader requires the whole.
        let (mut first, mut keys) = (None, std::collections::HashSet::new());
        while let Some(key) = map.next_key::<String>()? {
            let path = self.key(&key);
            let inner = map.next_value_seed(FirstRepeat { path: path.clone() })?;
            let repeat = (!keys.insert(key)).then_some(path);
            first = first.or(repeat).or(inner);
        }
        Ok(first)
    }
}
