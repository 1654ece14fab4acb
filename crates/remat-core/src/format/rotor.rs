//! Rotor's chain parameters, the layout rotor and ColossalAI use:
//!
//! ```json
//! { "fw": [..n], "bw": [..n or n+1], "cw": [..n+1], "cbw": [..n+1],
//!   "ftmp": [..n], "btmp": [..n or n+1] }
//! ```
//!
//! Stage i (0-based) of rotor is stage ℓ = i+1 here: `cw[ℓ]` = ω_a^ℓ
//! (`cw[0]` is the input), `cbw[ℓ]` = ω_ā^ℓ, `fw[i]` = u_f, `bw[i]` = u_b,
//! `ftmp[i]` = o_f, `btmp[i]` = o_b. Rotor measures times in milliseconds.
//! A trailing `bw[n]` / `btmp[n]` (rotor's loss entry) is dropped, and said so
//! in the chain's `source`.

use super::fields::{self, FormatError};
use crate::model::{Chain, Stage};
use serde_json::Value;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeUnit {
    Seconds,
    Milliseconds,
}

impl TimeUnit {
    fn to_seconds(self) -> f64 {
        match self {
            TimeUnit::Seconds => 1.0,
            TimeUnit::Milliseconds => 1e-3,
        }
    }
}

const FIELDS: &[&str] = &["name", "fw", "bw", "cw", "cbw", "ftmp", "btmp"];

/// Reads rotor's chain parameters into a chain.
pub fn read_rotor(text: &str, unit: TimeUnit, name: &str) -> Result<Chain, FormatError> {
    rotor_from_value(&fields::parse_json(text)?, unit, name)
}

pub(crate) fn rotor_from_value(
    value: &Value,
    unit: TimeUnit,
    name: &str,
) -> Result<Chain, FormatError> {
    let top = fields::as_object(value, "")?;
    fields::reject_unknown(top, FIELDS, "")?;
    let numbers = |field: &str, sizes: bool| -> Result<Vec<f64>, FormatError> {
        let list = fields::array(fields::required(top, field, "")?, field)?;
        list.iter()
            .enumerate()
            .map(|(i, v)| {
                let path = format!("{field}[{i}]");
                if sizes {
                    // Rotor's sizes are carried as f64 here: above 2^53 bytes
                    // they would be rounded silently, so refuse them.
                    let b = fields::bytes(v, &path)?;
                    if b > 1 << 53 {
                        return Err(FormatError::new(
                            path,
                            format!(
                                "{b} bytes is above 2^53, which rotor's layout cannot hold exactly"
                            ),
                        ));
                    }
                    Ok(b as f64)
                } else {
                    fields::non_negative(v, &path, "time units")
                }
            })
            .collect()
    };
    let fw = numbers("fw", false)?;
    let bw = numbers("bw", false)?;
    let cw = numbers("cw", true)?;
    let cbw = numbers("cbw", true)?;
    let ftmp = numbers("ftmp", true)?;
    let btmp = numbers("btmp", true)?;
    let n = fw.len();
    if n == 0 {
        return Err(FormatError::new("fw", "empty: the chain has no stage"));
    }
    let expect = |field: &str, len: usize, allowed: &[usize]| -> Result<(), FormatError> {
        if allowed.contains(&len) {
            Ok(())
        } else {
            let want: Vec<String> = allowed.iter().map(|a| a.to_string()).collect();
            Err(FormatError::new(
                field,
                format!(
                    "has {len} entries; with {n} stages (the length of fw) it needs {}",
                    want.join(" or ")
                ),
            ))
        }
    };
    expect("bw", bw.len(), &[n, n + 1])?;
    expect("cw", cw.len(), &[n + 1])?;
    expect("cbw", cbw.len(), &[n + 1])?;
    expect("ftmp", ftmp.len(), &[n])?;
    expect("btmp", btmp.len(), &[n, n + 1])?;
    let scale = unit.to_seconds();
    let stages = (0..n)
        .map(|i| {
            let l = i + 1;
            let output = cw[l] as u64;
            let saved = cbw[l] as u64;
            if saved < output {
                return Err(FormatError::new(
                    format!("cbw[{l}]"),
                    format!("smaller than cw[{l}] ({saved} < {output}): x̄ includes the output"),
                ));
            }
            Ok(Stage {
                name: format!("stage {l}"),
                forward_seconds: fw[i] * scale,
                backward_seconds: bw[i] * scale,
                output_bytes: output,
                saved_bytes: saved,
                gradient_bytes: output,
                forward_overhead_bytes: ftmp[i] as i64,
                backward_overhead_bytes: btmp[i] as i64,
                forward_nograd_seconds: None,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let dropped = bw.len() > n || btmp.len() > n;
    let name = match top.get("name") {
        Some(v) => fields::string(v, "name")?,
        None => name.to_string(),
    };
    let chain = Chain {
        name,
        source: if dropped {
            "converted from rotor's chain parameters; the loss entry bw[n]/btmp[n] was dropped"
                .to_string()
        } else {
            "converted from rotor's chain parameters".to_string()
        },
        input_bytes: cw[0] as u64,
        input_gradient_bytes: cw[0] as u64,
        bandwidth_bytes_per_s: None,
        stages,
    };
    chain.validate()?;
    Ok(chain)
}
