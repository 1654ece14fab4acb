//! `remat-chain/1`: the chain file (`docs/formats.md`).

use super::fields::{self, FormatError};
use crate::model::{Chain, Stage};
use serde_json::{json, Map, Value};

pub const CHAIN_FORMAT: &str = "remat-chain/1";

const TOP_FIELDS: &[&str] = &[
    "format",
    "name",
    "source",
    "input_bytes",
    "input_gradient_bytes",
    "bandwidth_bytes_per_s",
    "stages",
];

const STAGE_FIELDS: &[&str] = &[
    "name",
    "forward_seconds",
    "backward_seconds",
    "output_bytes",
    "saved_bytes",
    "gradient_bytes",
    "forward_overhead_bytes",
    "backward_overhead_bytes",
    "forward_nograd_seconds",
];

/// Reads a `remat-chain/1` document.
pub fn read_chain(text: &str) -> Result<Chain, FormatError> {
    chain_from_value(&fields::parse_json(text)?)
}

pub(crate) fn chain_from_value(value: &Value) -> Result<Chain, FormatError> {
    let top = fields::as_object(value, "")?;
    let format = fields::string(fields::required(top, "format", "")?, "format")?;
    if format != CHAIN_FORMAT {
        return Err(FormatError::new(
            "format",
            format!("expected \"{CHAIN_FORMAT}\", found \"{format}\""),
        ));
    }
    fields::reject_unknown(top, TOP_FIELDS, "")?;
    let name = match top.get("name") {
        Some(v) => fields::string(v, "name")?,
        None => "unnamed chain".to_string(),
    };
    let source = match top.get("source") {
        Some(v) => fields::string(v, "source")?,
        None => String::new(),
    };
    let input_bytes = fields::bytes(fields::required(top, "input_bytes", "")?, "input_bytes")?;
    let input_gradient_bytes = match top.get("input_gradient_bytes") {
        Some(v) => fields::bytes(v, "input_gradient_bytes")?,
        None => input_bytes,
    };
    let bandwidth_bytes_per_s = match top.get("bandwidth_bytes_per_s") {
        None | Some(Value::Null) => None,
        Some(v) => Some(fields::non_negative(
            v,
            "bandwidth_bytes_per_s",
            "bytes per second",
        )?),
    };
    let list = fields::array(fields::required(top, "stages", "")?, "stages")?;
    if list.len() > crate::model::MAX_STAGES {
        return Err(FormatError::new(
            "stages",
            format!(
                "{} stages is more than the {} this tool accepts; group layers into blocks",
                list.len(),
                crate::model::MAX_STAGES
            ),
        ));
    }
    let stages = list
        .iter()
        .enumerate()
        .map(|(i, v)| stage_from_value(v, &format!("stages[{i}]")))
        .collect::<Result<Vec<_>, _>>()?;
    let chain = Chain {
        name,
        source,
        input_bytes,
        input_gradient_bytes,
        bandwidth_bytes_per_s,
        stages,
    };
    chain.validate()?;
    Ok(chain)
}

fn stage_from_value(v: &Value, path: &str) -> Result<Stage, FormatError> {
    let obj = fields::as_object(v, path)?;
    fields::reject_unknown(obj, STAGE_FIELDS, path)?;
    let get = |f: &str| fields::required(obj, f, path).map(|v| (v, fields::join(path, f)));
    let seconds = |f: &str| -> Result<f64, FormatError> {
        let (v, p) = get(f)?;
        fields::non_negative(v, &p, "seconds")
    };
    let size = |f: &str| -> Result<u64, FormatError> {
        let (v, p) = get(f)?;
        fields::bytes(v, &p)
    };
    let optional_size = |f: &str, default: u64| -> Result<u64, FormatError> {
        match obj.get(f) {
            Some(v) => fields::bytes(v, &fields::join(path, f)),
            None => Ok(default),
        }
    };
    let optional_signed = |f: &str| -> Result<i64, FormatError> {
        match obj.get(f) {
            Some(v) => fields::signed_bytes(v, &fields::join(path, f)),
            None => Ok(0),
        }
    };
    let name = match obj.get("name") {
        Some(v) => fields::string(v, &fields::join(path, "name"))?,
        None => String::new(),
    };
    let forward_nograd_seconds = match obj.get("forward_nograd_seconds") {
        None | Some(Value::Null) => None,
        Some(v) => Some(fields::non_negative(
            v,
            &fields::join(path, "forward_nograd_seconds"),
            "seconds",
        )?),
    };
    let output_bytes = size("output_bytes")?;
    let stage = Stage {
        name,
        forward_seconds: seconds("forward_seconds")?,
        backward_seconds: seconds("backward_seconds")?,
        output_bytes,
        saved_bytes: size("saved_bytes")?,
        gradient_bytes: optional_size("gradient_bytes", output_bytes)?,
        forward_overhead_bytes: optional_signed("forward_overhead_bytes")?,
        backward_overhead_bytes: optional_signed("backward_overhead_bytes")?,
        forward_nograd_seconds,
    };
    if stage.saved_bytes < stage.output_bytes {
        return Err(FormatError::new(
            fields::join(path, "saved_bytes"),
            format!(
                "smaller than output_bytes ({} < {}): ā^ℓ includes a^ℓ",
                stage.saved_bytes, stage.output_bytes
            ),
        ));
    }
    Ok(stage)
}

/// Writes a chain as pretty `remat-chain/1` JSON; optional fields at their
/// default are left out.
pub fn write_chain(chain: &Chain) -> String {
    let stages: Vec<Value> = chain
        .stages
        .iter()
        .map(|s| {
            let mut o = Map::new();
            o.insert("name".into(), json!(s.name));
            o.insert("forward_seconds".into(), json!(s.forward_seconds));
            o.insert("backward_seconds".into(), json!(s.backward_seconds));
            o.insert("output_bytes".into(), json!(s.output_bytes));
            o.insert("saved_bytes".into(), json!(s.saved_bytes));
            if s.gradient_bytes != s.output_bytes {
                o.insert("gradient_bytes".into(), json!(s.gradient_bytes));
            }
            if s.forward_overhead_bytes != 0 {
                o.insert(
                    "forward_overhead_bytes".into(),
                    json!(s.forward_overhead_bytes),
                );
            }
            if s.backward_overhead_bytes != 0 {
                o.insert(
                    "backward_overhead_bytes".into(),
                    json!(s.backward_overhead_bytes),
                );
            }
            if let Some(t) = s.forward_nograd_seconds {
                o.insert("forward_nograd_seconds".into(), json!(t));
            }
            Value::Object(o)
        })
        .collect();
    let mut top = Map::new();
    top.insert("format".into(), json!(CHAIN_FORMAT));
    top.insert("name".into(), json!(chain.name));
    top.insert("source".into(), json!(chain.source));
    top.insert("input_bytes".into(), json!(chain.input_bytes));
    if chain.input_gradient_bytes != chain.input_bytes {
        top.insert(
            "input_gradient_bytes".into(),
            json!(chain.input_gradient_bytes),
        );
    }
    if let Some(bw) = chain.bandwidth_bytes_per_s {
        top.insert("bandwidth_bytes_per_s".into(), json!(bw));
    }
    top.insert("stages".into(), Value::Array(stages));
    serde_json::to_string_pretty(&Value::Object(top)).expect("a JSON value always serializes")
}
