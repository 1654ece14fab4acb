//! The messages between the page and the planning service, and their one
//! codec ([`Envelope`]), used the same way on both sides of the Web Worker.
//!
//! Algorithms travel as the core's [`Algorithm`] (written by its name), the
//! work a progress report or failure is about as a [`Task`]. A built table
//! crosses as its grid in the JSON and its values beside it: the envelope
//! takes them out of [`Built`] when encoding and puts them back when
//! decoding; in the browser they move as a transferred `Float64Array`.

use remat_core::schedule::Op;
use remat_core::solvers::persistent::TableGrid;
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
        id: u64,
        #[serde(with = "algorithm_name")]
        algorithm: Algorithm,
        budget: u64,
        bandwidth: Option<f64>,
        exact: bool,
    },
    /// Every offloading algorithm at one budget (the compare rows).
    Compare {
        generation: u64,
        id: u64,
        budget: u64,
        bandwidth: Option<f64>,
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
    /// The offloading algorithms' compare rows.
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
    Compared {
        generation: u64,
        id: u64,
        budget: u64,
        summaries: Vec<Summary>,
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
}

/// A rotor/revolve table on its way to the page: the grid goes in the JSON,
/// the values beside it (see [`Envelope`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Table {
    pub grid: TableGrid,
    #[serde(skip)]
    pub values: Vec<f64>,
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
            }) => Some(std::mem::take(&mut table.values)),
            _ => None,
        }
    }

    fn put_values(&mut self, values: Option<Vec<f64>>) -> Result<(), ProtocolError> {
        if let Response::Built(Built {
            table: Some(table), ..
        }) = self
        {
            table.values = values.ok_or(ProtocolError::MissingTable)?;
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
    // text) or were not put back when the message is read. Mutation tried:
    // `put_values` ignoring the values.
    #[test]
    fn a_built_table_travels_beside_the_json_and_is_put_back() {
        let chain = examples::teaching();
        let planner = Planner::build(
            &chain,
            Algorithm::Rotor,
            1 << 30,
            &Options::default(),
            &mut no_progress(),
        )
        .unwrap();
        let (grid, _) = planner.into_table().unwrap();
        let values = vec![1.0, 2.5, f64::INFINITY];
        let message = built(Some(Table {
            grid,
            values: values.clone(),
        }));
        let envelope = Envelope::encode(message.clone());
        assert_eq!(envelope.values.as_deref(), Some(&values[..]));
        assert!(!envelope.text.contains("2.5"), "{}", envelope.text);
        assert_eq!(envelope.clone().decode::<Response>(), Ok(message));
        let torn = Envelope {
            values: None,
            ..envelope
        };
        assert_eq!(torn.decode::<Response>(), Err(ProtocolError::MissingTable));
        // Without a table nothing is expected beside the text.
        let plain = Envelope::encode(built(None));
        assert_eq!(plain.values, None);
        assert_eq!(plain.decode::<Response>(), Ok(built(None)));
    }
}
