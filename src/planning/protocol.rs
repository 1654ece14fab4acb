//! The messages between the page and the planning service, and their one
//! codec ([`Envelope`]), used the same way on both sides of the Web Worker.
//!
//! Algorithms travel as the core's [`Algorithm`] (written by its name), the
//! work a progress report or failure is about as a [`Task`]. A built table
//! crosses as its grid in the JSON and its values beside it: the envelope
//! takes them out of [`Built`] when encoding and puts them back when
//! decoding; in the browser they move as a transferred `Float64Array`.

use crate::text::words::{grouped, model_words};
use remat_core::model::units::format_bytes;
use remat_core::schedule::Op;
use remat_core::solvers::persistent::{StepParts, TableGrid, TableParts, Variant};
use remat_core::solvers::Algorithm;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A failure that concerns no chain in particular (the worker died): shown
/// whatever chain is loaded.
pub const ANY_GENERATION: u64 = u64::MAX;

/// Page → planner.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Request {
    /// A new chain (`remat-chain/1` text); drops every table.
    Load { generation: u64, chain: String },
    /// Build the table of one algorithm for budgets up to `max_budget`.
    Build {
        generation: u64,
        #[serde(with = "algorithm_name")]
        algorithm: Algorithm,
        max_budget: u64,
    },
    /// The schedule for one budget, plus a summary of every built algorithm.
    /// `exact` builds a fresh table at exactly this budget (no grid rounding).
    Plan {
        generation: u64,
        /// Its fields travel beside `generation`, as if written here.
        #[serde(flatten)]
        ask: Ask,
    },
    /// One compare row solved in the worker: an offloading algorithm, or
    /// the exact optimum, at one budget. The page sends the rows one at a
    /// time (`service::compared_in_worker` lists them), so that they follow
    /// one by one and each can be cancelled; `id` is the page's round.
    Compare {
        generation: u64,
        id: u64,
        budget: u64,
        bandwidth: Option<f64>,
        #[serde(with = "algorithm_name")]
        algorithm: Algorithm,
    },
    /// POFO's two figures: overhead vs memory ratio α at `bandwidth`, and
    /// overhead vs bandwidth at a fixed α.
    Sweep { generation: u64, bandwidth: f64 },
    /// The largest batch of each method within a device's memory
    /// (`remat_core::maxbatch`), the chain taken as profiled at
    /// `device.batch`: scaled linearly, or fitted affinely through it and
    /// `second`.
    MaxBatch {
        generation: u64,
        device: BatchDevice,
        #[serde(default)]
        second: Option<SecondProfile>,
    },
}

/// What a [`Request::Plan`] asks: one algorithm's schedule at one budget,
/// kept by the service to answer it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ask {
    /// The page's number for this request, echoed in the answer.
    pub id: u64,
    #[serde(with = "algorithm_name")]
    pub algorithm: Algorithm,
    pub budget: u64,
    pub bandwidth: Option<f64>,
    pub exact: bool,
    /// pofo and offload-only: read at once from a table for every
    /// budget, or refined by the per-budget solve ([`Stage`]).
    #[serde(default)]
    pub stage: Stage,
}

/// A second profile of the loaded chain's stages at another batch, for the
/// max-batch search's affine fit (`remat maxbatch --second-profile CHAIN2
/// --second-batch N2`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecondProfile {
    /// `remat-chain/1` (or rotor) text, read by the worker as by the CLI.
    pub chain: String,
    /// The batch it was profiled at.
    pub batch: u64,
}

/// The device a max-batch search fits into, from the device-memory card.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchDevice {
    pub memory_bytes: u64,
    /// Weights, gradients, optimizer state: bytes that do not grow with the batch.
    pub fixed_bytes: u64,
    pub margin_bytes: u64,
    /// The batch the chain was profiled at.
    pub batch: u64,
}

/// What a progress report or a failure is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "task")]
pub enum Task {
    /// Building an algorithm's table (the slider's).
    Build {
        #[serde(with = "algorithm_name")]
        algorithm: Algorithm,
    },
    /// Solving one budget: an offloading algorithm, or an exact re-plan.
    Plan {
        #[serde(with = "algorithm_name")]
        algorithm: Algorithm,
    },
    /// pofo's or offload-only's table for every budget, built before its
    /// first quick answer ([`Stage::Quick`]), once per chain and link.
    Table {
        #[serde(with = "algorithm_name")]
        algorithm: Algorithm,
    },
    /// The per-budget solve refining a quick answer ([`Stage::Refine`],
    /// the refine worker). Its own task, so its progress and the table's,
    /// made at once in two workers, never share one bar (issue 44: the bar
    /// ran 84 → 67 → 86 → 71 %).
    Refine {
        #[serde(with = "algorithm_name")]
        algorithm: Algorithm,
    },
    /// A compare row solved in the worker.
    Compare,
    /// POFO's figures.
    Sweep,
    /// The max-batch search.
    MaxBatch,
}

/// Planner → page.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Response {
    /// The worker's wasm is running; requests sent before this are lost.
    Ready,
    Progress {
        generation: u64,
        task: Task,
        fraction: f64,
    },
    Built(Built),
    Failed {
        /// [`ANY_GENERATION`] when the worker itself failed.
        generation: u64,
        /// None for a chain that could not be read or a worker that died.
        task: Option<Task>,
        error: String,
    },
    Planned(Box<Planned>),
    /// One compare row.
    Compared {
        generation: u64,
        id: u64,
        budget: u64,
        summary: Summary,
    },
    Swept {
        generation: u64,
        sweep: Sweep,
    },
    MaxBatched {
        generation: u64,
        found: MaxBatch,
    },
}

/// What a max-batch search found: store-all first, then each method.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MaxBatch {
    pub device: BatchDevice,
    /// The second profile's batch when the chain was fitted affinely
    /// through two profiles; None: scaled linearly from one.
    pub second_batch: Option<u64>,
    /// What is left for activations: memory − fixed − margin.
    pub budget_bytes: u64,
    /// The largest batch tried.
    pub max_batch: u64,
    pub rows: Vec<BatchRow>,
}

impl MaxBatch {
    /// The device, the batch model and the batches searched, in one line.
    pub fn budget_line(&self) -> String {
        let second = self.second_batch.map(|b| b.to_string());
        format!(
            "{} GPU − {} fixed − {} margin = {} for activations · {} · tried up to {}",
            format_bytes(self.device.memory_bytes),
            format_bytes(self.device.fixed_bytes),
            format_bytes(self.device.margin_bytes),
            format_bytes(self.budget_bytes),
            model_words(&self.device.batch.to_string(), second.as_deref()),
            grouped(self.max_batch),
        )
    }
}

/// One method's largest batch and its throughput there.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BatchRow {
    #[serde(with = "algorithm_name")]
    pub algorithm: Algorithm,
    /// None when not even batch 1 fits.
    pub batch: Option<u64>,
    /// The batch is the largest tried: larger ones may fit too.
    pub at_limit: bool,
    pub samples_per_second: Option<f64>,
}

/// An algorithm's planner is built: its trade-off curve, and its table when
/// the table moves to the page (from the worker).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Built {
    pub generation: u64,
    #[serde(with = "algorithm_name")]
    pub algorithm: Algorithm,
    pub min_budget: u64,
    pub build_ms: f64,
    pub curve: Vec<CurvePoint>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<Table>,
    /// Set where the table is a grid (rotor/revolve falling back from the
    /// breakpoints): what the page says of it. None: exact in bytes, or no
    /// table.
    #[serde(default)]
    pub grid: Option<GridNote>,
}

/// A rotor/revolve table on a grid of slots, as the page describes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GridNote {
    pub slots: usize,
    pub slot_bytes: u64,
    /// The memory the grid table takes (what the breakpoints would pass).
    pub table_bytes: u64,
    /// Whether the breakpoints were given up for it (always, in the page).
    pub fallback: bool,
    /// The least budget this table's plans meet (sizes round up, so above
    /// M_low): the slider's left end.
    pub least_met: u64,
}

/// A rotor/revolve table on its way to the page: what it is goes in the
/// JSON, its numbers beside it as one `Float64Array` (see [`Envelope`]).
///
/// * `Grid`: the grid's values, one per cell and slot, as today.
/// * `Steps`: the breakpoint table ([`StepParts`]), rows of unequal
///   length, packed without padding: each cell's count of breakpoints, two
///   `u32` to a word, then every breakpoint's budget (a `u64`, its bits in
///   a word) and every value. 16 bytes a breakpoint and 4 a cell.
///
/// `min_budget` is the planner's least budget, kept as the worker found it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind")]
pub enum Table {
    Grid {
        grid: TableGrid,
        /// Why the breakpoints were given up (the core's words).
        fallback: Option<String>,
        min_budget: u64,
        /// How many of `values`' last numbers are the certificate's row
        /// (`TableParts::Grid::bound`; 0: none). They travel with the
        /// values: a row holds infinities, which JSON cannot.
        #[serde(default)]
        bound: usize,
        #[serde(skip)]
        values: Vec<f64>,
    },
    Steps {
        variant: Variant,
        stages: usize,
        cells: usize,
        points: usize,
        min_budget: u64,
        #[serde(skip)]
        values: Vec<f64>,
    },
}

impl Table {
    /// A planner's table ([`Planner::into_table`]), packed to travel.
    ///
    /// [`Planner::into_table`]: remat_core::solvers::Planner::into_table
    pub fn pack((parts, min_budget): (TableParts, u64)) -> Table {
        match parts {
            TableParts::Grid {
                grid,
                mut values,
                fallback,
                bound,
            } => {
                let row = bound.unwrap_or_default();
                values.extend_from_slice(&row);
                Table::Grid {
                    grid,
                    fallback,
                    min_budget,
                    bound: row.len(),
                    values,
                }
            }
            TableParts::Steps(p) => {
                let (cells, points) = (p.len.len(), p.mem.len());
                let mut values = Vec::with_capacity(cells.div_ceil(2) + 2 * points);
                values.extend(p.len.chunks(2).map(|pair| {
                    let high = pair.get(1).copied().unwrap_or(0) as u64;
                    f64::from_bits(pair[0] as u64 | high << 32)
                }));
                values.extend(p.mem.iter().map(|&m| f64::from_bits(m)));
                values.extend_from_slice(&p.val);
                Table::Steps {
                    variant: p.variant,
                    stages: p.stages,
                    cells,
                    points,
                    min_budget,
                    values,
                }
            }
        }
    }

    /// What [`pack`](Self::pack) packed, for [`Planner::from_table`];
    /// an error when the numbers are not as many as the JSON says.
    ///
    /// [`Planner::from_table`]: remat_core::solvers::Planner::from_table
    pub fn unpack(self) -> Result<(TableParts, u64), String> {
        match self {
            Table::Grid {
                grid,
                fallback,
                min_budget,
                bound,
                mut values,
            } => {
                if bound > values.len() {
                    return Err(format!(
                        "grid table: a lower bound of {bound} numbers among {}",
                        values.len()
                    ));
                }
                let row = values.split_off(values.len() - bound);
                Ok((
                    TableParts::Grid {
                        grid,
                        values,
                        fallback,
                        bound: (bound > 0).then_some(row),
                    },
                    min_budget,
                ))
            }
            Table::Steps {
                variant,
                stages,
                cells,
                points,
                min_budget,
                values,
            } => {
                let words = cells.div_ceil(2);
                if values.len() != words + 2 * points {
                    return Err(format!(
                        "breakpoint table: {} numbers for {cells} cells and {points} breakpoints",
                        values.len()
                    ));
                }
                let mut len = Vec::with_capacity(cells);
                for w in &values[..words] {
                    let bits = w.to_bits();
                    len.push(bits as u32);
                    len.push((bits >> 32) as u32);
                }
                len.truncate(cells);
                let mem = values[words..words + points]
                    .iter()
                    .map(|w| w.to_bits())
                    .collect();
                let val = values[words + points..].to_vec();
                let parts = StepParts {
                    variant,
                    stages,
                    len,
                    mem,
                    val,
                };
                Ok((TableParts::Steps(parts), min_budget))
            }
        }
    }

    /// Bytes that cross beside the JSON.
    pub fn values_bytes(&self) -> usize {
        8 * self.values().len()
    }

    fn values(&self) -> &Vec<f64> {
        match self {
            Table::Grid { values, .. } | Table::Steps { values, .. } => values,
        }
    }

    fn values_mut(&mut self) -> &mut Vec<f64> {
        match self {
            Table::Grid { values, .. } | Table::Steps { values, .. } => values,
        }
    }
}

/// The figures of POFO Section 5: makespans over α at one bandwidth and over
/// bandwidths at one α, for the offloading algorithms and rotor.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sweep {
    /// The α figure's bandwidth (bytes/s).
    pub bandwidth: f64,
    /// M_low and M_high: the budgets at α = 0 and α = 1.
    pub range: (u64, u64),
    /// The step with no memory limit, which the overheads are over.
    pub sequential_seconds: f64,
    /// Every algorithm at every α at `bandwidth`, then at every bandwidth
    /// at the fixed α.
    pub by_alpha: Vec<SweepPoint>,
    pub by_bandwidth: Vec<SweepPoint>,
}

/// One solve of the sweep, measured by the simulator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    pub alpha: f64,
    pub bandwidth: f64,
    #[serde(with = "algorithm_name")]
    pub algorithm: Algorithm,
    /// None where the algorithm has no schedule within the budget.
    pub makespan_seconds: Option<f64>,
}

/// How an offloading plan is asked for and answered (issue 25, item 3).
/// pofo's and offload-only's DP on the paper's grid (N slots of ⌊B / N⌋)
/// is a solve of its own for every budget (seconds at L = 100); one table
/// on the grid of the top budget (`offload::Tables`) answers every
/// budget in an O(L) read-out, on a coarser grid below the top. So a
/// budget is answered at once from that table, said as such, and refined
/// by the per-budget solve in a worker of its own, which a newer budget
/// ends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Stage {
    /// Solved for this budget: every algorithm but pofo and offload-only,
    /// and those when their table cannot be built.
    #[default]
    Whole,
    /// Read from the table for every budget, on the top budget's grid.
    Quick,
    /// The per-budget solve refining a quick answer (the refine worker).
    Refine,
}

impl Stage {
    /// Its name on the page's root (`data-plan-stage`), for tests and CSS.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Whole => "whole",
            Stage::Quick => "quick",
            Stage::Refine => "refined",
        }
    }
}

/// The schedule for one budget (the answer to a `Plan`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Planned {
    pub generation: u64,
    /// The request's id: the page shows only the latest plan.
    pub id: u64,
    #[serde(with = "algorithm_name")]
    pub algorithm: Algorithm,
    pub budget: u64,
    #[serde(default)]
    pub bandwidth: Option<f64>,
    pub exact: bool,
    pub ops: Option<Vec<Op>>,
    pub predicted_seconds: Option<f64>,
    pub predicted_peak_bytes: Option<u64>,
    pub detail: String,
    /// Set when the budget could not be answered (a table over the size
    /// limit): an error, shown as one, never as "infeasible".
    #[serde(default)]
    pub error: Option<String>,
    pub summaries: Vec<Summary>,
    /// Where a rotor/revolve plan comes from a grid: the most bytes of the
    /// budget its rounding may hide (Some(0): on a grid, exact at this
    /// budget). None: no grid.
    #[serde(default)]
    pub grid_loss: Option<u64>,
    /// The certificate (issue 44): how far the plan's time may be above the
    /// best of its algorithm's class at this budget, as a fraction (0.003:
    /// within 0.3 %; 0: optimal). None: no certificate (no grid, or not
    /// built).
    #[serde(default)]
    pub gap: Option<f64>,
    /// Quick: read from the table for every budget, a refinement to come.
    #[serde(default)]
    pub stage: Stage,
}

/// One algorithm at one budget, measured by the simulator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    #[serde(with = "algorithm_name")]
    pub algorithm: Algorithm,
    pub feasible: bool,
    pub makespan_seconds: Option<f64>,
    pub peak_bytes: Option<u64>,
    pub detail: String,
    /// The solve failed (not "infeasible": no answer at all).
    #[serde(default)]
    pub error: Option<String>,
}

impl Summary {
    /// A row for a solve that failed: an error, not an infeasible budget.
    pub fn failed(algorithm: Algorithm, error: String) -> Summary {
        Summary {
            algorithm,
            feasible: false,
            makespan_seconds: None,
            peak_bytes: None,
            detail: String::new(),
            error: Some(error),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    pub budget: u64,
    /// None where the algorithm has no schedule for this budget.
    pub makespan_seconds: Option<f64>,
}

/// A message that can cross between the page and the worker.
pub trait Message: Serialize + DeserializeOwned {
    /// Takes out the bulk numbers that travel beside the JSON.
    fn take_values(&mut self) -> Option<Vec<f64>> {
        None
    }
    /// Puts back what [`take_values`](Message::take_values) took out.
    fn put_values(&mut self, _values: Option<Vec<f64>>) -> Result<(), ProtocolError> {
        Ok(())
    }
}

impl Message for Request {}

impl Message for Response {
    fn take_values(&mut self) -> Option<Vec<f64>> {
        match self {
            Response::Built(Built {
                table: Some(table), ..
            }) => Some(std::mem::take(table.values_mut())),
            _ => None,
        }
    }

    fn put_values(&mut self, values: Option<Vec<f64>>) -> Result<(), ProtocolError> {
        if let Response::Built(Built {
            table: Some(table), ..
        }) = self
        {
            *table.values_mut() = values.ok_or(ProtocolError::MissingTable)?;
        }
        Ok(())
    }
}

/// Why a message could not be read.
#[derive(Debug, PartialEq)]
pub enum ProtocolError {
    /// The JSON part does not parse as the message expected.
    Json(String),
    /// A built table's grid arrived without its values.
    MissingTable,
    /// Neither text nor `{text, values}`.
    NotAMessage,
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtocolError::Json(e) => write!(f, "bad message: {e}"),
            ProtocolError::MissingTable => f.write_str("the table's values are missing"),
            ProtocolError::NotAMessage => f.write_str("a message is text or {text, values}"),
        }
    }
}

impl std::error::Error for ProtocolError {}

/// One message on the wire: its JSON text and, for a built table, the
/// table's values (which the browser moves rather than copies).
#[derive(Clone, Debug, PartialEq)]
pub struct Envelope {
    pub text: String,
    pub values: Option<Vec<f64>>,
}

impl Envelope {
    pub fn encode<M: Message>(mut message: M) -> Envelope {
        let values = message.take_values();
        Envelope {
            // Our own types, with string keys only: they always serialize.
            text: serde_json::to_string(&message).expect("protocol messages serialize"),
            values,
        }
    }

    pub fn decode<M: Message>(self) -> Result<M, ProtocolError> {
        let mut message: M =
            serde_json::from_str(&self.text).map_err(|e| ProtocolError::Json(e.to_string()))?;
        message.put_values(self.values)?;
        Ok(message)
    }
}

#[cfg(target_arch = "wasm32")]
mod js {
    use super::{Envelope, ProtocolError};
    use wasm_bindgen::{JsCast, JsValue};

    impl Envelope {
        /// The value to post, and what to transfer with it: plain text, or
        /// `{text, values}` with the values' buffer moved (not cloned).
        pub fn into_js(self) -> (JsValue, Option<js_sys::Array>) {
            let Some(values) = self.values else {
                return (JsValue::from_str(&self.text), None);
            };
            // One copy out of wasm memory; the buffer then changes owner.
            let array = js_sys::Float64Array::from(&values[..]);
            drop(values);
            let message = js_sys::Object::new();
            let _ = js_sys::Reflect::set(&message, &"text".into(), &self.text.into());
            let _ = js_sys::Reflect::set(&message, &"values".into(), &array);
            (message.into(), Some(js_sys::Array::of1(&array.buffer())))
        }

        pub fn from_js(data: &JsValue) -> Result<Envelope, ProtocolError> {
            if let Some(text) = data.as_string() {
                return Ok(Envelope { text, values: None });
            }
            let text = js_sys::Reflect::get(data, &"text".into())
                .ok()
                .and_then(|t| t.as_string())
                .ok_or(ProtocolError::NotAMessage)?;
            let values = js_sys::Reflect::get(data, &"values".into())
                .ok()
                .and_then(|v| v.dyn_into::<js_sys::Float64Array>().ok())
                .map(|a| a.to_vec());
            Ok(Envelope { text, values })
        }
    }
}

/// Writes an [`Algorithm`] as its name (`rotor`), reads it back with
/// [`Algorithm::from_name`].
mod algorithm_name {
    use remat_core::solvers::Algorithm;
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(algorithm: &Algorithm, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(algorithm.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Algorithm, D::Error> {
        let name = String::deserialize(d)?;
        Algorithm::from_name(&name).map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use remat_core::examples;
    use remat_core::solvers::{no_progress, Options, Planner};

    fn built(table: Option<Table>) -> Response {
        Response::Built(Built {
            generation: 3,
            algorithm: Algorithm::Rotor,
            min_budget: 10,
            build_ms: 1.5,
            curve: vec![CurvePoint {
                budget: 10,
                makespan_seconds: None,
            }],
            table,
            grid: None,
        })
    }

    // Fails if the algorithm were written by its Debug name (`OffloadOnly`)
    // or the task lost its kind: the page would read every progress report
    // as some other work. Mutation tried: the name written as `{:?}`.
    #[test]
    fn algorithms_and_tasks_cross_by_name_and_come_back_equal() {
        let messages = [
            Response::Progress {
                generation: 1,
                task: Task::Build {
                    algorithm: Algorithm::OffloadOnly,
                },
                fraction: 0.5,
            },
            Response::Progress {
                generation: 1,
                task: Task::Sweep,
                fraction: 0.25,
            },
            Response::Progress {
                generation: 1,
                task: Task::Table {
                    algorithm: Algorithm::Pofo,
                },
                fraction: 0.5,
            },
            Response::Progress {
                generation: 1,
                task: Task::Refine {
                    algorithm: Algorithm::Pofo,
                },
                fraction: 0.5,
            },
            Response::Failed {
                generation: ANY_GENERATION,
                task: Some(Task::Plan {
                    algorithm: Algorithm::Pofo,
                }),
                error: "x".into(),
            },
        ];
        for m in messages {
            let envelope = Envelope::encode(m.clone());
            assert_eq!(envelope.values, None);
            assert_eq!(envelope.decode::<Response>(), Ok(m));
        }
        let text = Envelope::encode(Request::Build {
            generation: 2,
            algorithm: Algorithm::OffloadOnly,
            max_budget: 7,
        })
        .text;
        assert!(text.contains(r#""algorithm":"offload-only""#), "{text}");
    }

    // Fails if an unknown name were read as some default algorithm (the
    // deserializer ignoring `from_name`'s error).
    #[test]
    fn an_unknown_algorithm_name_is_an_error_naming_it() {
        let text = r#"{"type":"Build","generation":1,"algorithm":"rotr","max_budget":5}"#;
        let e = Envelope {
            text: text.into(),
            values: None,
        }
        .decode::<Request>()
        .unwrap_err();
        assert!(e.to_string().contains("`rotr`"), "{e}");
    }

    // Fails if the values went into the JSON (a copy of megabytes of
    // text) or were not put back when the message is read, for both kinds
    // of table. Mutation run: `put_values` ignoring the values (the decoded
    // message came back without them).
    #[test]
    fn a_built_table_travels_beside_the_json_and_is_put_back() {
        use remat_core::solvers::SlotPolicy;
        let chain = examples::teaching();
        let fixed = Options {
            slot_policy: SlotPolicy::Fixed,
            ..Options::default()
        };
        for options in [Options::default(), fixed] {
            let planner = Planner::build(
                &chain,
                Algorithm::Rotor,
                1 << 30,
                &options,
                &mut no_progress(),
            )
            .unwrap();
            let table = Table::pack(planner.into_table().unwrap());
            let values = match &table {
                Table::Grid { values, .. } | Table::Steps { values, .. } => values.clone(),
            };
            let message = built(Some(table.clone()));
            let envelope = Envelope::encode(message.clone());
            assert_eq!(envelope.values.as_deref(), Some(&values[..]));
            assert!(envelope.text.len() < 400, "{}", envelope.text);
            assert_eq!(envelope.clone().decode::<Response>(), Ok(message));
            let torn = Envelope {
                values: None,
                ..envelope
            };
            assert_eq!(torn.decode::<Response>(), Err(ProtocolError::MissingTable));
            // Unpacked, it is the planner's table again.
            let again = Planner::build(
                &chain,
                Algorithm::Rotor,
                1 << 30,
                &options,
                &mut no_progress(),
            )
            .unwrap()
            .into_table()
            .unwrap();
            assert_eq!(table.unpack().unwrap(), again);
        }
        // Without a table nothing is expected beside the text.
        let plain = Envelope::encode(built(None));
        assert_eq!(plain.values, None);
        assert_eq!(plain.decode::<Response>(), Ok(built(None)));
    }

    // Fails if the certificate's row were dropped on the way (the page
    // would say "rounding may hide" again) or put back in the wrong place
    // (its bounds would be read from the grid's first cells). Mutation run:
    // `pack` leaving the row out: the unpacked planner had no bound.
    #[test]
    fn a_certified_grid_travels_with_its_lower_bound() {
        use remat_core::solvers::SlotPolicy;
        let chain = examples::gpt2();
        let fixed = Options {
            slot_policy: SlotPolicy::Fixed,
            ..Options::default()
        };
        let high = remat_core::solvers::max_useful_budget(&chain);
        let mut planner =
            Planner::build(&chain, Algorithm::Rotor, high, &fixed, &mut no_progress()).unwrap();
        planner.certify(&chain, &mut no_progress()).unwrap();
        let budgets: Vec<u64> = (6..=10).map(|i| high / 10 * i).collect();
        let bounds: Vec<Option<f64>> = budgets
            .iter()
            .map(|&b| planner.lower_bound_seconds(b))
            .collect();
        assert!(bounds.iter().all(Option::is_some), "{bounds:?}");
        let min = planner.min_budget_bytes();
        let table = Table::pack((planner.into_table().unwrap().0, min));
        assert!(matches!(table, Table::Grid { bound, .. } if bound > 0));
        let message = built(Some(table));
        let Response::Built(b) = Envelope::encode(message).decode::<Response>().unwrap() else {
            panic!("not Built");
        };
        let (parts, min) = b.table.unwrap().unpack().unwrap();
        let again = Planner::from_table(&chain, parts, min).unwrap();
        let read: Vec<Option<f64>> = budgets
            .iter()
            .map(|&b| again.lower_bound_seconds(b))
            .collect();
        assert_eq!(read, bounds);
    }

    // Fails if a count of numbers that does not match the JSON's cells and
    // breakpoints were read anyway (lengths taken from the wrong words).
    // Mutation run: the count check in `unpack` skipped: it unpacked.
    #[test]
    fn a_breakpoint_table_with_numbers_missing_is_refused() {
        let chain = examples::teaching();
        let planner = Planner::build(
            &chain,
            Algorithm::Revolve,
            1 << 30,
            &Options::default(),
            &mut no_progress(),
        )
        .unwrap();
        let mut table = Table::pack(planner.into_table().unwrap());
        if let Table::Steps { values, .. } = &mut table {
            values.pop();
        } else {
            panic!("the teaching chain is exact");
        }
        assert!(table.unpack().unwrap_err().contains("numbers for"));
    }
}
