//! PyTorch's CUDA memory snapshot: the pickle that
//! `torch.cuda.memory._dump_snapshot(path)` writes after
//! `torch.cuda.memory._record_memory_history()` (issue 45, item 4), read
//! for the allocator's trace of each device.
//!
//! **What is read.** The snapshot is a dict (`torch.cuda.memory._snapshot`,
//! its `Snapshot` / `TraceEntry` TypedDicts); only `device_traces` is
//! needed: one list of events per device, each with an `action`, an
//! `addr`, a `size` in bytes and, since PyTorch 2.1, a `time_us`. Its
//! `segments`, frames and settings are skipped. The pickle is read by
//! `serde-pickle` into plain values and never runs anything (a class it
//! does not know becomes a placeholder; a list or dict pickled a second
//! time, as Python shares the frames, reads as None there).
//!
//! **The allocated bytes.** As PyTorch's own memory viewer
//! (`_memory_viz`'s active-memory timeline) counts them: an `alloc` adds
//! its block, a `free_completed` takes it away (a `free_requested` only
//! waits on a stream; `segment_*` events are the cache's reserved memory,
//! not tensors). The curve starts at 0 when recording started: blocks
//! allocated before (the weights, the batch) are not in the trace.

use super::json::FormatError;
use serde_pickle::value::{HashableValue, Value};

/// The most events read from one snapshot: far beyond one training step's
/// (a ResNet-50 step allocates a few thousand blocks), and a clear error
/// before a runaway recording is drawn.
pub const MAX_SNAPSHOT_EVENTS: usize = 10_000_000;

/// What an allocator event did to the allocated bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// A block handed to a tensor: + size.
    Alloc,
    /// A block back in the cache: − size.
    FreeCompleted,
    /// Anything else (`free_requested`, `segment_alloc`, `snapshot`, …):
    /// no change to the allocated bytes.
    Other,
}

/// One event of a device's trace.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TraceEvent {
    pub action: Action,
    pub size: u64,
    /// Microseconds on the recording's clock (None before PyTorch 2.1).
    pub time_us: Option<i64>,
}

/// A snapshot's traces, one per device (empty lists included, so that an
/// index is a CUDA device number).
#[derive(Clone, Debug, PartialEq)]
pub struct CudaSnapshot {
    pub devices: Vec<Vec<TraceEvent>>,
}

/// Bytes allocated at one moment of a trace.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AllocatedPoint {
    /// Seconds since the trace's first event (its index where the trace
    /// has no times: then the events are spread evenly).
    pub seconds: f64,
    /// Allocated bytes since recording started, after this event (negative
    /// where the step freed blocks allocated before recording).
    pub bytes: i64,
}

impl CudaSnapshot {
    /// The device whose trace has the most events (None: no events at all),
    /// the one a single-GPU step ran on.
    pub fn busiest_device(&self) -> Option<usize> {
        (0..self.devices.len())
            .filter(|&d| !self.devices[d].is_empty())
            .max_by_key(|&d| (self.devices[d].len(), std::cmp::Reverse(d)))
    }

    /// The allocated bytes of `device` after each event that changes them.
    pub fn allocated_curve(&self, device: usize) -> Vec<AllocatedPoint> {
        let Some(events) = self.devices.get(device) else {
            return Vec::new();
        };
        let timed = events.iter().all(|e| e.time_us.is_some());
        let t0 = events.first().and_then(|e| e.time_us).unwrap_or(0);
        let mut bytes = 0i64;
        let mut curve = Vec::new();
        for (i, e) in events.iter().enumerate() {
            let change = match e.action {
                Action::Alloc => e.size as i64,
                Action::FreeCompleted => -(e.size as i64),
                Action::Other => continue,
            };
            bytes = bytes.saturating_add(change);
            let seconds = if timed {
                (e.time_us.unwrap_or(t0) - t0) as f64 / 1e6
            } else {
                i as f64
            };
            curve.push(AllocatedPoint { seconds, bytes });
        }
        curve
    }
}

/// Whether `bytes` look like a pickle (protocol 2 or later: what
/// `pickle.dump` has written since Python 3.0), so an importer can tell
/// it from a JSON file before reading it.
pub fn is_pickle(bytes: &[u8]) -> bool {
    bytes.len() >= 2 && bytes[0] == 0x80 && (2..=5).contains(&bytes[1])
}

/// Reads a snapshot; every error names where in the file it is
/// (`device_traces[0][12].size`).
pub fn read_cuda_snapshot(bytes: &[u8]) -> Result<CudaSnapshot, FormatError> {
    const WRITE_IT: &str =
        "a CUDA memory snapshot is the pickle torch.cuda.memory._dump_snapshot(path) writes";
    if !is_pickle(bytes) {
        return Err(FormatError::new(
            "(file)",
            format!("not a pickle of protocol 2 to 5: {WRITE_IT}"),
        ));
    }
    // A container pickled twice (the same frames list in many events, as
    // Python memoizes it) is read once and None after: serde-pickle cannot
    // tell sharing from recursion. Only ints and strings are read here.
    let options = serde_pickle::DeOptions::new()
        .replace_unresolved_globals()
        .replace_recursive_structures();
    let value = serde_pickle::value_from_slice(bytes, options).map_err(|e| {
        FormatError::new("(file)", format!("an unreadable pickle ({e}): {WRITE_IT}"))
    })?;
    let Value::Dict(top) = value else {
        return Err(FormatError::new(
            "(file)",
            format!("a pickle of {}, not a dict: {WRITE_IT}", kind(&value)),
        ));
    };
    let traces = get(&top, "device_traces").ok_or_else(|| {
        FormatError::new(
            "device_traces",
            "missing: record the allocator's history first (torch.cuda.memory._record_memory_history()), then run the step and dump the snapshot",
        )
    })?;
    let devices = list(traces, "device_traces")?;
    let mut total = 0usize;
    let mut out = Vec::with_capacity(devices.len());
    for (d, trace) in devices.iter().enumerate() {
        let at = format!("device_traces[{d}]");
        let events = list(trace, &at)?;
        total += events.len();
        if total > MAX_SNAPSHOT_EVENTS {
            return Err(FormatError::new(
                at,
                format!("more than {MAX_SNAPSHOT_EVENTS} events: record one training step"),
            ));
        }
        out.push(
            events
                .iter()
                .enumerate()
                .map(|(i, e)| event(e, &format!("{at}[{i}]")))
                .collect::<Result<Vec<_>, _>>()?,
        );
    }
    Ok(CudaSnapshot { devices: out })
}

fn event(value: &Value, at: &str) -> Result<TraceEvent, FormatError> {
    let Value::Dict(fields) = value else {
        return Err(FormatError::new(
            at,
            format!("expected an event (a dict), found {}", kind(value)),
        ));
    };
    let action = match get(fields, "action") {
        Some(Value::String(s)) => match s.as_str() {
            "alloc" => Action::Alloc,
            "free_completed" => Action::FreeCompleted,
            _ => Action::Other,
        },
        Some(other) => {
            return Err(FormatError::new(
                format!("{at}.action"),
                format!("expected a string, found {}", kind(other)),
            ))
        }
        None => return Err(FormatError::new(format!("{at}.action"), "missing")),
    };
    let size = match get(fields, "size") {
        Some(Value::I64(n)) if *n >= 0 => *n as u64,
        Some(Value::I64(n)) => {
            return Err(FormatError::new(
                format!("{at}.size"),
                format!("must be ≥ 0 bytes, got {n}"),
            ))
        }
        // `snapshot` and `oom` events may carry no block.
        None if action == Action::Other => 0,
        Some(other) => {
            return Err(FormatError::new(
                format!("{at}.size"),
                format!("expected a number of bytes, found {}", kind(other)),
            ))
        }
        None => return Err(FormatError::new(format!("{at}.size"), "missing")),
    };
    let time_us = match get(fields, "time_us") {
        Some(Value::I64(t)) => Some(*t),
        None | Some(Value::None) => None,
        Some(other) => {
            return Err(FormatError::new(
                format!("{at}.time_us"),
                format!("expected microseconds, found {}", kind(other)),
            ))
        }
    };
    Ok(TraceEvent {
        action,
        size,
        time_us,
    })
}

fn get<'a>(
    dict: &'a std::collections::BTreeMap<HashableValue, Value>,
    key: &str,
) -> Option<&'a Value> {
    dict.get(&HashableValue::String(key.to_string()))
}

fn list<'a>(value: &'a Value, at: &str) -> Result<&'a [Value], FormatError> {
    match value {
        Value::List(v) | Value::Tuple(v) => Ok(v),
        other => Err(FormatError::new(
            at,
            format!("expected a list, found {}", kind(other)),
        )),
    }
}

/// A value's Python type, for errors.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::None => "None",
        Value::Bool(_) => "a bool",
        Value::I64(_) | Value::Int(_) => "an int",
        Value::F64(_) => "a float",
        Value::Bytes(_) => "bytes",
        Value::String(_) => "a string",
        Value::List(_) => "a list",
        Value::Tuple(_) => "a tuple",
        Value::Set(_) | Value::FrozenSet(_) => "a set",
        Value::Dict(_) => "a dict",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_pickle::value::Value as V;
    use std::collections::BTreeMap;

    fn entry(action: &str, size: i64, time_us: i64) -> V {
        let mut d = BTreeMap::new();
        d.insert(
            HashableValue::String("action".into()),
            V::String(action.into()),
        );
        d.insert(HashableValue::String("addr".into()), V::I64(1 << 20));
        d.insert(HashableValue::String("size".into()), V::I64(size));
        d.insert(HashableValue::String("stream".into()), V::I64(0));
        d.insert(HashableValue::String("time_us".into()), V::I64(time_us));
        d.insert(HashableValue::String("frames".into()), V::List(vec![]));
        V::Dict(d)
    }

    fn pickle(traces: Vec<Vec<V>>) -> Vec<u8> {
        let mut top = BTreeMap::new();
        top.insert(HashableValue::String("segments".into()), V::List(vec![]));
        top.insert(
            HashableValue::String("device_traces".into()),
            V::List(traces.into_iter().map(V::List).collect()),
        );
        serde_pickle::value_to_vec(&V::Dict(top), serde_pickle::SerOptions::new()).unwrap()
    }

    // Could fail if free_requested were counted as a free (the block is
    // still allocated until the stream is done), segment events were
    // counted, or times were not taken from the first event.
    #[test]
    fn the_allocated_bytes_follow_alloc_and_free_completed() {
        let bytes = pickle(vec![
            vec![],
            vec![
                entry("segment_alloc", 2 << 20, 100),
                entry("alloc", 1000, 100),
                entry("alloc", 500, 300),
                entry("free_requested", 1000, 400),
                entry("free_completed", 1000, 600),
            ],
        ]);
        let s = read_cuda_snapshot(&bytes).unwrap();
        assert_eq!(s.busiest_device(), Some(1));
        let curve = s.allocated_curve(1);
        let got: Vec<(f64, i64)> = curve.iter().map(|p| (p.seconds, p.bytes)).collect();
        assert_eq!(got, vec![(0.0, 1000), (200e-6, 1500), (500e-6, 500)]);
    }

    // Could fail if a bad file were read as empty, or an error did not
    // name the field.
    #[test]
    fn bad_snapshots_are_refused_naming_the_field() {
        let err = |b: &[u8]| read_cuda_snapshot(b).unwrap_err();
        assert_eq!(err(b"{\"format\": 1}").path, "(file)");
        let no_traces =
            serde_pickle::value_to_vec(&V::Dict(BTreeMap::new()), serde_pickle::SerOptions::new())
                .unwrap();
        assert_eq!(err(&no_traces).path, "device_traces");
        let negative = pickle(vec![vec![entry("alloc", -4, 0)]]);
        let e = err(&negative);
        assert_eq!(e.path, "device_traces[0][0].size");
        assert!(e.message.contains("-4"), "{}", e.message);
        let truncated = &pickle(vec![vec![entry("alloc", 4, 0)]])[..20];
        assert_eq!(err(truncated).path, "(file)");
    }
}
