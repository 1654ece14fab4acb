//! `remat-chain/1`: the chain file (`docs/formats.md`).
//!
//! The file structs say which fields exist, which are optional and their
//! defaults; serde reads them; [`Chain::validate`] judges the values.

use super::json::{
    check_syntax, expect_format, objects, optional_objects, present, read, FormatError,
};
use super::numbers::{Bytes, Dim, Rate, Seconds, SignedBytes};
use crate::model::{Chain, InputTensor, MenuOption, Peer, Stage};
use serde::{Deserialize, Serialize};

pub const CHAIN_FORMAT: &str = "remat-chain/1";

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct ChainFile {
    format: String,
    #[serde(default = "unnamed")]
    name: String,
    #[serde(default)]
    source: String,
    input_bytes: Bytes,
    /// Absent: `input_bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "present")]
    input_gradient_bytes: Option<Bytes>,
    /// Absent or `null`: no host link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    bandwidth_bytes_per_s: Option<Rate>,
    #[serde(deserialize_with = "objects")]
    stages: Vec<StageFile>,
    /// Absent or `null`: not described.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "optional_objects")]
    inputs: Option<Vec<InputFile>>,
    /// Absent or `null`: not known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model_fingerprint: Option<String>,
    /// Absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "optional_objects")]
    peers: Option<Vec<PeerFile>>,
    /// Absent or `null`: not known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    constant_bytes: Option<Bytes>,
}

/// A step measured another way (`crate::model::Peer`).
#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct PeerFile {
    name: String,
    peak_bytes: Bytes,
    seconds: Seconds,
    /// Absent: true.
    #[serde(default = "right", skip_serializing_if = "is_right")]
    gradients_right: bool,
}

fn right() -> bool {
    true
}

fn is_right(b: &bool) -> bool {
    *b
}

/// One tensor of the batch the chain was measured on (a chain's `inputs`,
/// and a schedule's, copied from its chain).
#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(super) struct InputFile {
    #[serde(default)]
    name: String,
    shape: Vec<Dim>,
    dtype: String,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct StageFile {
    #[serde(default)]
    name: String,
    forward_seconds: Seconds,
    backward_seconds: Seconds,
    output_bytes: Bytes,
    saved_bytes: Bytes,
    /// Absent: `output_bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "present")]
    gradient_bytes: Option<Bytes>,
    /// g^ℓ; absent: 0 (the parameter gradients are outside the chain).
    #[serde(default, skip_serializing_if = "Bytes::is_zero")]
    parameter_gradient_bytes: Bytes,
    #[serde(default, skip_serializing_if = "SignedBytes::is_zero")]
    forward_overhead_bytes: SignedBytes,
    #[serde(default, skip_serializing_if = "SignedBytes::is_zero")]
    backward_overhead_bytes: SignedBytes,
    /// ι^ℓ; absent: 0 (B^ℓ runs beside its whole input).
    #[serde(default, skip_serializing_if = "Bytes::is_zero")]
    input_freed_bytes: Bytes,
    /// Absent or `null`: the same as `forward_seconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    forward_nograd_seconds: Option<Seconds>,
    /// Absent or `null`: the same as `forward_overhead_bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    forward_nograd_overhead_bytes: Option<SignedBytes>,
    /// Absent or `null`: not described.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    module: Option<String>,
    /// Absent or `[]`: not described.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    parameters: Vec<String>,
    /// Absent, `null` or `[]`: only the classic F_all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "optional_objects")]
    menu: Option<Vec<MenuFile>>,
}

/// One entry of a stage's menu ([`MenuOption`]).
#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct MenuFile {
    policy: String,
    saved_bytes: Bytes,
    backward_extra_seconds: Seconds,
    #[serde(default, skip_serializing_if = "SignedBytes::is_zero")]
    backward_overhead_bytes: SignedBytes,
    /// Absent or `null`: the stage's `forward_overhead_bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    forward_overhead_bytes: Option<SignedBytes>,
}

fn unnamed() -> String {
    "unnamed chain".to_string()
}

impl From<ChainFile> for Chain {
    fn from(f: ChainFile) -> Chain {
        Chain {
            name: f.name,
            source: f.source,
            input_bytes: f.input_bytes.0,
            input_gradient_bytes: f.input_gradient_bytes.unwrap_or(f.input_bytes).0,
            bandwidth_bytes_per_s: f.bandwidth_bytes_per_s.map(|r| r.0),
            stages: f.stages.into_iter().map(Stage::from).collect(),
            inputs: f
                .inputs
                .map(|list| list.into_iter().map(InputTensor::from).collect()),
            model_fingerprint: f.model_fingerprint,
            peers: f
                .peers
                .unwrap_or_default()
                .into_iter()
                .map(|p| Peer {
                    name: p.name,
                    peak_bytes: p.peak_bytes.0,
                    seconds: p.seconds.0,
                    gradients_right: p.gradients_right,
                })
                .collect(),
            constant_bytes: f.constant_bytes.map(|b| b.0),
        }
    }
}

impl From<StageFile> for Stage {
    fn from(f: StageFile) -> Stage {
        Stage {
            name: f.name,
            forward_seconds: f.forward_seconds.0,
            backward_seconds: f.backward_seconds.0,
            output_bytes: f.output_bytes.0,
            saved_bytes: f.saved_bytes.0,
            gradient_bytes: f.gradient_bytes.unwrap_or(f.output_bytes).0,
            parameter_gradient_bytes: f.parameter_gradient_bytes.0,
            forward_overhead_bytes: f.forward_overhead_bytes.0,
            backward_overhead_bytes: f.backward_overhead_bytes.0,
            input_freed_bytes: f.input_freed_bytes.0,
            forward_nograd_seconds: f.forward_nograd_seconds.map(|t| t.0),
            forward_nograd_overhead_bytes: f.forward_nograd_overhead_bytes.map(|b| b.0),
            module: f.module,
            parameters: f.parameters,
            menu: f
                .menu
                .unwrap_or_default()
                .into_iter()
                .map(|o| MenuOption {
                    policy: o.policy,
                    saved_bytes: o.saved_bytes.0,
                    backward_extra_seconds: o.backward_extra_seconds.0,
                    backward_overhead_bytes: o.backward_overhead_bytes.0,
                    forward_overhead_bytes: o.forward_overhead_bytes.map(|b| b.0),
                })
                .collect(),
        }
    }
}

impl From<InputFile> for InputTensor {
    fn from(f: InputFile) -> InputTensor {
        InputTensor {
            name: f.name,
            shape: f.shape.into_iter().map(|d| d.0).collect(),
            dtype: f.dtype,
        }
    }
}

/// The file of a chain, optional fields at their default left out.
impl From<&Chain> for ChainFile {
    fn from(c: &Chain) -> ChainFile {
        ChainFile {
            format: CHAIN_FORMAT.to_string(),
            name: c.name.clone(),
            source: c.source.clone(),
            input_bytes: Bytes(c.input_bytes),
            input_gradient_bytes: (c.input_gradient_bytes != c.input_bytes)
                .then_some(Bytes(c.input_gradient_bytes)),
            bandwidth_bytes_per_s: c.bandwidth_bytes_per_s.map(Rate),
            stages: c.stages.iter().map(StageFile::from).collect(),
            inputs: c
                .inputs
                .as_ref()
                .map(|list| list.iter().map(InputFile::from).collect()),
            model_fingerprint: c.model_fingerprint.clone(),
            peers: (!c.peers.is_empty()).then(|| {
                c.peers
                    .iter()
                    .map(|p| PeerFile {
                        name: p.name.clone(),
                        peak_bytes: Bytes(p.peak_bytes),
                        seconds: Seconds(p.seconds),
                        gradients_right: p.gradients_right,
                    })
                    .collect()
            }),
            constant_bytes: c.constant_bytes.map(Bytes),
        }
    }
}

impl From<&Stage> for StageFile {
    fn from(s: &Stage) -> StageFile {
        StageFile {
            name: s.name.clone(),
            forward_seconds: Seconds(s.forward_seconds),
            backward_seconds: Seconds(s.backward_seconds),
            output_bytes: Bytes(s.output_bytes),
            saved_bytes: Bytes(s.saved_bytes),
            gradient_bytes: (s.gradient_bytes != s.output_bytes).then_some(Bytes(s.gradient_bytes)),
            parameter_gradient_bytes: Bytes(s.parameter_gradient_bytes),
            forward_overhead_bytes: SignedBytes(s.forward_overhead_bytes),
            backward_overhead_bytes: SignedBytes(s.backward_overhead_bytes),
            input_freed_bytes: Bytes(s.input_freed_bytes),
            forward_nograd_seconds: s.forward_nograd_seconds.map(Seconds),
            forward_nograd_overhead_bytes: s.forward_nograd_overhead_bytes.map(SignedBytes),
            module: s.module.clone(),
            parameters: s.parameters.clone(),
            menu: (!s.menu.is_empty()).then(|| {
                s.menu
                    .iter()
                    .map(|o| MenuFile {
                        policy: o.policy.clone(),
                        saved_bytes: Bytes(o.saved_bytes),
                        backward_extra_seconds: Seconds(o.backward_extra_seconds),
                        backward_overhead_bytes: SignedBytes(o.backward_overhead_bytes),
                        forward_overhead_bytes: o.forward_overhead_bytes.map(SignedBytes),
                    })
                    .collect()
            }),
        }
    }
}

impl From<&InputTensor> for InputFile {
    fn from(t: &InputTensor) -> InputFile {
        InputFile {
            name: t.name.clone(),
            shape: t.shape.iter().copied().map(Dim).collect(),
            dtype: t.dtype.clone(),
        }
    }
}

/// `inputs` as an optional field of another format's struct (a schedule's):
/// `#[serde(default, with = "inputs_field")]`, read and written as a
/// chain's. Values are judged by [`crate::model::validate_inputs`].
pub(super) mod inputs_field {
    use super::{optional_objects, InputFile};
    use crate::model::InputTensor;
    use serde::{Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(
        inputs: &Option<Vec<InputTensor>>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        inputs
            .as_ref()
            .map(|list| list.iter().map(InputFile::from).collect::<Vec<_>>())
            .serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Vec<InputTensor>>, D::Error> {
        let list: Option<Vec<InputFile>> = optional_objects(d)?;
        Ok(list.map(|l| l.into_iter().map(InputTensor::from).collect()))
    }
}

/// Reads a `remat-chain/1` document; an error names the field.
///
/// ```
/// use remat_core::format::read_chain;
///
/// let text = r#"{"format": "remat-chain/1", "input_bytes": 8, "stages": [
///     {"forward_seconds": 0.1, "backward_seconds": 0.2, "output_bytes": 8, "saved_bytes": 16}]}"#;
/// let chain = read_chain(text).unwrap();
/// assert_eq!((chain.len(), chain.saved_bytes(1)), (1, 16));
///
/// let typo = text.replace("saved_bytes\": 16", "saved_bytes\": \"16 B\"");
/// assert_eq!(
///     read_chain(&typo).unwrap_err().to_string(),
///     "stages[0].saved_bytes: expected a number of bytes, found the string \"16 B\""
/// );
/// let small = text.replace("16}", "4}");
/// assert_eq!(
///     read_chain(&small).unwrap_err().to_string(),
///     "stages[0].saved_bytes: smaller than output_bytes (4 < 8): ā^ℓ includes a^ℓ"
/// );
/// ```
pub fn read_chain(text: &str) -> Result<Chain, FormatError> {
    check_syntax(text)?;
    expect_format(text, CHAIN_FORMAT)?;
    let chain = Chain::from(read::<ChainFile>(text)?);
    chain.validate()?;
    Ok(chain)
}

/// Writes a chain as pretty `remat-chain/1` JSON; optional fields at their
/// default are left out.
pub fn write_chain(chain: &Chain) -> String {
    // Through a `Value`, whose map orders the keys as chain files always
    // have been written (alphabetically, unless serde_json's
    // `preserve_order` is on).
    let value = serde_json::to_value(ChainFile::from(chain)).expect("a chain always serializes");
    serde_json::to_string_pretty(&value).expect("a JSON value always serializes")
}

#[cfg(test)]
mod tests;
