//! From JSON text to a format's serde structs, with errors that name the
//! field (`stages[3].saved_bytes: …`) in words for people.
//!
//! serde does the reading; `serde_path_to_error` tracks the path; this file
//! only turns serde's wording (`invalid type: string "fast", expected a
//! number of seconds`) into the formats' (`expected a number of seconds,
//! found the string "fast"`).

use serde::de::value::MapAccessDeserializer;
use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use std::fmt;
use std::marker::PhantomData;

/// A problem in an input file; `path` names the field (`stages[3].saved_bytes`).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct FormatError {
    pub path: String,
    pub message: String,
}

impl FormatError {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> FormatError {
        FormatError {
            path: path.into(),
            message: message.into(),
        }
    }
}

impl From<crate::model::ChainError> for FormatError {
    fn from(e: crate::model::ChainError) -> FormatError {
        FormatError::new(e.path, e.message)
    }
}

/// The path of the document itself, for errors about the whole file.
const FILE: &str = "(file)";

/// Checks that `text` is JSON, before any field is read: a syntax error
/// names the line and column, wherever a field is also wrong.
pub(super) fn check_syntax(text: &str) -> Result<(), FormatError> {
    serde_json::from_str::<IgnoredAny>(text)
        .map(drop)
        .map_err(|e| {
            FormatError::new(
                FILE,
                format!(
                    "not valid JSON: {} (line {}, column {})",
                    without_position(&e),
                    e.line(),
                    e.column()
                ),
            )
        })
}

/// Reads `T` from the JSON object `text` (its syntax checked), fields in the
/// order the file gives them; an error names the field it is about.
pub(super) fn read<'t, T: Deserialize<'t>>(text: &'t str) -> Result<T, FormatError> {
    let mut json = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize::<_, Object<T>>(&mut json)
        .map(|o| o.0)
        .map_err(|e| in_words(&e.path().to_string(), &without_position(e.inner())))
}

/// serde_json's message without its " at line L column C": the path says
/// where.
fn without_position(e: &serde_json::Error) -> String {
    let message = e.to_string();
    match message.rsplit_once(" at line ") {
        Some((m, _)) => m.to_string(),
        None => message,
    }
}

/// Checks `format` before anything else, so that a file of another kind (a
/// schedule given as a chain) is named as such, not by its first field the
/// other format does not know.
pub(super) fn expect_format(text: &str, expected: &str) -> Result<(), FormatError> {
    #[derive(Deserialize)]
    struct Tagged {
        format: String,
    }
    let Tagged { format } = read(text)?;
    if format == expected {
        Ok(())
    } else {
        Err(FormatError::new(
            "format",
            format!("expected \"{expected}\", found \"{format}\""),
        ))
    }
}

/// A JSON object read as `T`. serde also reads a struct from an array of its
/// fields in order; the formats have only ever accepted objects.
pub(super) struct Object<T>(pub T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ObjectVisitor<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
            type Value = T;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map))
            }
        }
        d.deserialize_map(ObjectVisitor(PhantomData)).map(Object)
    }
}

/// For `#[serde(deserialize_with = "objects")]`: a list of JSON objects.
pub(super) fn objects<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Vec::<Object<T>>::deserialize(d).map(unwrapped)
}

/// For `#[serde(default, deserialize_with = "optional_objects")]`: an
/// optional list of JSON objects, `null` read as absent.
pub(super) fn optional_objects<'de, D, T>(d: D) -> Result<Option<Vec<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<Object<T>>>::deserialize(d)?.map(unwrapped))
}

fn unwrapped<T>(list: Vec<Object<T>>) -> Vec<T> {
    list.into_iter().map(|o| o.0).collect()
}

/// For `#[serde(default, deserialize_with = "present")]`: an optional field
/// that, when given, holds a value (`null` is refused, not read as absent).
pub(super) fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

/// serde's message at `path` (`.` is the document) in the formats' words.
pub(super) fn in_words(path: &str, message: &str) -> FormatError {
    let here = if path == "." { FILE } else { path };
    if let Some(field) = message
        .strip_prefix("missing field `")
        .and_then(|m| m.strip_suffix('`'))
    {
        // serde reports a missing field at the object that lacks it.
        let path = if path == "." {
            field.to_string()
        } else {
            format!("{path}.{field}")
        };
        return FormatError::new(path, "missing");
    }
    if message.starts_with("unknown variant `") {
        // serde names the tag (`ops[1].op`); the formats name the operation
        // (`ops[1]`), as they always have.
        let path = path.strip_suffix(".op").unwrap_or(here);
        return FormatError::new(path, message);
    }
    if let Some((key, known)) = message
        .strip_prefix("unknown field `")
        .and_then(|m| m.rsplit_once("`, expected "))
    {
        let known: Vec<&str> = known.split('`').skip(1).step_by(2).collect();
        // The path ends with the key, unless serde read the object from a
        // buffer (an operation, after its tag).
        let path = if path.rsplit(['.', ']']).next() == Some(key) {
            here.to_string()
        } else if path == "." {
            key.to_string()
        } else {
            format!("{path}.{key}")
        };
        return FormatError::new(path, format!("unknown field{}", hint(key, &known)));
    }
    for prefix in ["invalid type: ", "invalid value: "] {
        if let Some((found, expected)) = message
            .strip_prefix(prefix)
            .and_then(|m| m.rsplit_once(", expected "))
        {
            return FormatError::new(
                here,
                format!(
                    "expected {}, found {}",
                    expected_in_words(expected),
                    found_in_words(found)
                ),
            );
        }
    }
    FormatError::new(here, message)
}

/// "; did you mean `saved_bytes`?" when a known name is close, else the list.
fn hint(key: &str, known: &[&str]) -> String {
    let closest = known
        .iter()
        .map(|k| (strsim::levenshtein(key, k), *k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 4))
        .min();
    match closest {
        Some((_, k)) => format!("; did you mean `{k}`?"),
        None => format!("; known fields: {}", known.join(", ")),
    }
}

/// serde's name of what a field takes, as people say it.
fn expected_in_words(expected: &str) -> &str {
    match expected {
        "a sequence" => "an array",
        "u64" | "usize" => "a whole number ≥ 0",
        "f64" => "a number",
        e if e.starts_with("struct ") || e.starts_with("internally tagged enum ") => "an object",
        e => e,
    }
}

/// serde's `Unexpected` (`string "fast"`, `integer `3``, `map`) as people say
/// it.
fn found_in_words(found: &str) -> String {
    let literal = |prefix: &str| {
        let f = found.strip_prefix(prefix)?.strip_prefix('`')?;
        f.strip_suffix('`').map(str::to_string)
    };
    if let Some(s) = found.strip_prefix("string ") {
        return format!("the string {s}");
    }
    if let Some(n) = literal("integer ").or_else(|| literal("floating point ")) {
        return format!("the number {n}");
    }
    match found {
        "map" => "an object".to_string(),
        "sequence" => "an array".to_string(),
        "unit value" => "null".to_string(),
        other => literal("boolean ").unwrap_or_else(|| other.to_string()),
    }
}
