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

use super::json::{check_syntax, present, read, FormatError};
use super::numbers::{Bytes, TimeUnits};
use crate::model::{Chain, ChainError, Stage};
use serde::{Deserialize, Deserializer};

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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RotorFile {
    #[serde(default, deserialize_with = "present")]
    name: Option<String>,
    fw: Vec<TimeUnits>,
    bw: Vec<TimeUnits>,
    cw: Vec<ExactSize>,
    cbw: Vec<ExactSize>,
    ftmp: Vec<ExactSize>,
    btmp: Vec<ExactSize>,
}

/// A size in rotor's layout, which holds sizes as floats: above 2^53 bytes
/// one would have been rounded silently, so it is refused.
#[derive(Clone, Copy)]
struct ExactSize(u64);

impl<'de> Deserialize<'de> for ExactSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let Bytes(b) = Bytes::deserialize(d)?;
        if b > 1 << 53 {
            return Err(serde::de::Error::custom(format!(
                "{b} bytes is above 2^53, which rotor's layout cannot hold exactly"
            )));
        }
        Ok(ExactSize(b))
    }
}

/// Reads rotor's chain parameters into a chain.
pub fn read_rotor(text: &str, unit: TimeUnit, name: &str) -> Result<Chain, FormatError> {
    check_syntax(text)?;
    let file: RotorFile = read(text)?;
    check_lengths(&file)?;
    let mut chain = chain_of(file, name);
    // Judged in the file's unit, so that a message quotes the file's number.
    chain.validate().map_err(in_rotor_terms)?;
    let scale = unit.to_seconds();
    for s in &mut chain.stages {
        s.forward_seconds *= scale;
        s.backward_seconds *= scale;
    }
    Ok(chain)
}

/// The lists' lengths against n = `fw.len()`, the layout's own rule.
fn check_lengths(f: &RotorFile) -> Result<(), FormatError> {
    let n = f.fw.len();
    for (field, len, allowed) in [
        ("bw", f.bw.len(), &[n, n + 1][..]),
        ("cw", f.cw.len(), &[n + 1]),
        ("cbw", f.cbw.len(), &[n + 1]),
        ("ftmp", f.ftmp.len(), &[n]),
        ("btmp", f.btmp.len(), &[n, n + 1]),
    ] {
        if !allowed.contains(&len) {
            let want: Vec<String> = allowed.iter().map(|a| a.to_string()).collect();
            return Err(FormatError::new(
                field,
                format!(
                    "has {len} entries; with {n} stages (the length of fw) it needs {}",
                    want.join(" or ")
                ),
            ));
        }
    }
    Ok(())
}

/// The chain the lists describe (lengths checked), times in the file's unit.
fn chain_of(f: RotorFile, name: &str) -> Chain {
    let n = f.fw.len();
    let stages = (0..n)
        .map(|i| {
            let l = i + 1;
            Stage {
                name: format!("stage {l}"),
                forward_seconds: f.fw[i].0,
                backward_seconds: f.bw[i].0,
                output_bytes: f.cw[l].0,
                saved_bytes: f.cbw[l].0,
                gradient_bytes: f.cw[l].0,
                parameter_gradient_bytes: 0,
                input_freed_bytes: 0,
                forward_overhead_bytes: f.ftmp[i].0 as i64,
                backward_overhead_bytes: f.btmp[i].0 as i64,
                forward_nograd_seconds: None,
                forward_nograd_overhead_bytes: None,
                module: None,
                parameters: Vec::new(),
                menu: Vec::new(),
            }
        })
        .collect();
    let dropped = f.bw.len() > n || f.btmp.len() > n;
    Chain {
        name: f.name.unwrap_or_else(|| name.to_string()),
        source: if dropped {
            "converted from rotor's chain parameters; the loss entry bw[n]/btmp[n] was dropped"
                .to_string()
        } else {
            "converted from rotor's chain parameters".to_string()
        },
        input_bytes: f.cw[0].0,
        input_gradient_bytes: f.cw[0].0,
        bandwidth_bytes_per_s: None,
        stages,
        ..Chain::default()
    }
}

/// Where each stage field comes from in rotor's layout: the list, and the
/// offset of stage i's entry in it (`cw[0]` is the input).
const LISTS: [(&str, &str, usize); 8] = [
    ("forward_nograd_seconds", "fw", 0),
    ("forward_seconds", "fw", 0),
    ("backward_seconds", "bw", 0),
    ("output_bytes", "cw", 1),
    ("gradient_bytes", "cw", 1),
    ("saved_bytes", "cbw", 1),
    ("forward_overhead_bytes", "ftmp", 0),
    ("backward_overhead_bytes", "btmp", 0),
];

/// `Chain::validate`'s error in the names of the file it came from:
/// `stages[0].saved_bytes: smaller than output_bytes` is
/// `cbw[1]: smaller than cw[1]`; the stage list is `fw`.
fn in_rotor_terms(e: ChainError) -> FormatError {
    let stage = e.path.strip_prefix("stages[").and_then(|p| {
        let (i, field) = p.split_once("].")?;
        Some((i.parse::<usize>().ok()?, field))
    });
    let Some((i, field)) = stage else {
        let path = if e.path == "stages" { "fw" } else { &e.path };
        return FormatError::new(path, e.message);
    };
    let entry = |f: &str| {
        LISTS
            .iter()
            .find(|(name, ..)| *name == f)
            .map(|(_, list, offset)| format!("{list}[{}]", i + offset))
    };
    let message = LISTS.iter().fold(e.message.clone(), |m, (name, ..)| {
        m.replace(name, &entry(name).expect("listed"))
    });
    FormatError::new(entry(field).unwrap_or(e.path), message)
}
