//! The trace as Chrome trace-event JSON, for Perfetto and chrome://tracing.
//!
//! Two threads (compute, copy) of complete events ("ph": "X", times in µs)
//! and a counter track of device memory.

use super::{Lane, Trace};
use crate::model::Chain;
use crate::schedule::Op;
use serde_json::{json, Value};

pub fn chrome_trace_json(chain: &Chain, ops: &[Op], trace: &Trace) -> String {
    let us = |s: f64| s * 1e6;
    let mut events: Vec<Value> = vec![
        json!({"ph": "M", "pid": 1, "name": "process_name", "args": {"name": chain.name}}),
        json!({"ph": "M", "pid": 1, "tid": 1, "name": "thread_name", "args": {"name": "GPU compute"}}),
        json!({"ph": "M", "pid": 1, "tid": 2, "name": "thread_name", "args": {"name": "PCIe copy"}}),
    ];
    for span in &trace.spans {
        let op = ops[span.op];
        let cat = match op {
            Op::ForwardAll { .. } | Op::ForwardCheckpoint { .. } | Op::ForwardNone { .. } => {
                "forward"
            }
            Op::Backward { .. } => "backward",
            Op::Offload { .. } => "offload",
            Op::Prefetch { .. } => "prefetch",
            Op::Release { .. } => "release",
        };
        events.push(json!({
            "ph": "X",
            "pid": 1,
            "tid": if span.lane == Lane::Compute { 1 } else { 2 },
            "name": op.to_string(),
            "cat": cat,
            "ts": us(span.start),
            "dur": us(span.end - span.start),
            "args": {"op_index": span.op, "stage": op.stage(), "op": op.kind_name()},
        }));
    }
    for step in &trace.memory {
        events.push(json!({
            "ph": "C", "pid": 1, "name": "device memory",
            "ts": us(step.time), "args": {"bytes": step.bytes},
        }));
    }
    serde_json::to_string(&json!({"traceEvents": events, "displayTimeUnit": "ms"}))
        .expect("a JSON value always serializes")
}
