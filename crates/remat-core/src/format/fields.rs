//! Field-by-field reading of JSON values with errors that carry a path.

use serde_json::{Map, Value};

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

/// Parses JSON text; a syntax error names the line and column.
pub fn parse_json(text: &str) -> Result<Value, FormatError> {
    serde_json::from_str(text).map_err(|e| {
        FormatError::new(
            "(file)",
            format!(
                "not valid JSON: {} (line {}, column {})",
                strip_position(&e.to_string()),
                e.line(),
                e.column()
            ),
        )
    })
}

fn strip_position(msg: &str) -> &str {
    msg.split(" at line ").next().unwrap_or(msg)
}

pub fn join(path: &str, field: &str) -> String {
    if path.is_empty() {
        field.to_string()
    } else {
        format!("{path}.{field}")
    }
}

pub fn as_object<'v>(v: &'v Value, path: &str) -> Result<&'v Map<String, Value>, FormatError> {
    v.as_object().ok_or_else(|| {
        FormatError::new(
            if path.is_empty() { "(file)" } else { path },
            format!("expected an object, found {}", kind(v)),
        )
    })
}

pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Rejects fields outside `known`, suggesting the closest known name.
pub fn reject_unknown(
    obj: &Map<String, Value>,
    known: &[&str],
    path: &str,
) -> Result<(), FormatError> {
    for key in obj.keys() {
        if !known.contains(&key.as_str()) {
            let hint = closest(key, known)
                .map(|k| format!("; did you mean `{k}`?"))
                .unwrap_or_else(|| format!("; known fields: {}", known.join(", ")));
            return Err(FormatError::new(
                join(path, key),
                format!("unknown field{hint}"),
            ));
        }
    }
    Ok(())
}

fn closest<'k>(key: &str, known: &[&'k str]) -> Option<&'k str> {
    known
        .iter()
        .map(|k| (edit_distance(key, k), *k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 4))
        .min()
        .map(|(_, k)| k)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + (ca != *cb) as usize).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

pub fn required<'v>(
    obj: &'v Map<String, Value>,
    field: &str,
    path: &str,
) -> Result<&'v Value, FormatError> {
    obj.get(field)
        .ok_or_else(|| FormatError::new(join(path, field), "missing"))
}

pub fn string(v: &Value, path: &str) -> Result<String, FormatError> {
    v.as_str()
        .map(str::to_string)
        .ok_or_else(|| FormatError::new(path, format!("expected a string, found {}", kind(v))))
}

/// A finite number ≥ 0 (seconds, bandwidth).
pub fn non_negative(v: &Value, path: &str, what: &str) -> Result<f64, FormatError> {
    let x = v.as_f64().ok_or_else(|| {
        FormatError::new(
            path,
            format!("expected a number of {what}, found {}", describe(v)),
        )
    })?;
    if !x.is_finite() {
        return Err(FormatError::new(path, format!("must be finite, got {x}")));
    }
    if x < 0.0 {
        return Err(FormatError::new(path, format!("must be ≥ 0, got {x}")));
    }
    Ok(x)
}

/// A whole number of bytes ≥ 0 (`1.5e9` is accepted, `12.5` is not).
pub fn bytes(v: &Value, path: &str) -> Result<u64, FormatError> {
    if let Some(b) = v.as_u64() {
        return Ok(b);
    }
    let x = non_negative(v, path, "bytes")?;
    if x.fract() != 0.0 {
        return Err(FormatError::new(
            path,
            format!("must be a whole number of bytes, got {x}"),
        ));
    }
    if x >= 2f64.powi(62) {
        return Err(FormatError::new(path, format!("{x} bytes is too large")));
    }
    Ok(x as u64)
}

/// A whole, possibly negative, number of bytes (a signed overhead).
pub fn signed_bytes(v: &Value, path: &str) -> Result<i64, FormatError> {
    if let Some(b) = v.as_i64() {
        return Ok(b);
    }
    let x = v.as_f64().ok_or_else(|| {
        FormatError::new(
            path,
            format!("expected a number of bytes, found {}", describe(v)),
        )
    })?;
    if !x.is_finite() || x.fract() != 0.0 {
        return Err(FormatError::new(
            path,
            format!("must be a whole number of bytes, got {x}"),
        ));
    }
    if x.abs() >= 2f64.powi(62) {
        return Err(FormatError::new(path, format!("{x} bytes is too large")));
    }
    Ok(x as i64)
}

fn describe(v: &Value) -> String {
    match v {
        Value::String(s) => format!("the string \"{s}\""),
        other => kind(other).to_string(),
    }
}

pub fn array<'v>(v: &'v Value, path: &str) -> Result<&'v Vec<Value>, FormatError> {
    v.as_array()
        .ok_or_else(|| FormatError::new(path, format!("expected an array, found {}", kind(v))))
}
