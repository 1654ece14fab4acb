//! `remat-run/1`: what is read, what is written, and every rule's error
//! named by its field. Each test says which mutation of the code it catches.

use super::{read_at_most, read_run, write_run, MeasuredOp, RunFile};
use crate::schedule::{Op, TensorKind};
use serde_json::{json, Value};

fn good() -> Value {
    json!({
        "format": "remat-run/1",
        "chain_name": "t",
        "chain_digest": "fnv1a64:0123456789abcdef",
        "algorithm": "rotor",
        "budget_bytes": 1000,
        "source": "measured by hand",
        "ops": [
            {"op": "forward_all", "stage": 1, "seconds": 0.5, "memory_bytes": 30, "peak_bytes": 40},
            {"op": "offload", "stage": 1, "tensor": "saved", "seconds": 0.25, "memory_bytes": 10, "peak_bytes": 30},
            {"op": "prefetch", "stage": 1, "tensor": "saved", "seconds": 0, "memory_bytes": 30, "peak_bytes": 30},
            {"op": "backward", "stage": 1, "seconds": 1.5e-3, "memory_bytes": 12, "peak_bytes": 5e1}
        ]
    })
}

fn error_of(edit: impl FnOnce(&mut Value)) -> String {
    let mut v = good();
    edit(&mut v);
    read_run(&v.to_string()).unwrap_err().to_string()
}

/// Catches a field not carried from the file to `RunFile` (or `op`,
/// `stage`, `tensor` read into another operation), and `write_run`
/// leaving one out (the round trip loses it).
#[test]
fn a_run_is_read_field_by_field_and_round_trips() {
    let run = read_run(&good().to_string()).unwrap();
    assert_eq!(
        run,
        RunFile {
            chain_name: "t".into(),
            chain_digest: Some("fnv1a64:0123456789abcdef".into()),
            algorithm: "rotor".into(),
            budget_bytes: 1000,
            source: "measured by hand".into(),
            ops: vec![
                MeasuredOp {
                    op: Op::forward_all(1),
                    seconds: 0.5,
                    memory_bytes: 30,
                    peak_bytes: 40
                },
                MeasuredOp {
                    op: Op::Offload {
                        stage: 1,
                        tensor: TensorKind::Saved
                    },
                    seconds: 0.25,
                    memory_bytes: 10,
                    peak_bytes: 30
                },
                MeasuredOp {
                    op: Op::Prefetch {
                        stage: 1,
                        tensor: TensorKind::Saved
                    },
                    seconds: 0.0,
                    memory_bytes: 30,
                    peak_bytes: 30
                },
                MeasuredOp {
                    op: Op::Backward { stage: 1 },
                    seconds: 1.5e-3,
                    memory_bytes: 12,
                    peak_bytes: 50
                },
            ],
        }
    );
    assert_eq!((run.peak_bytes(), run.seconds()), (50, 0.7515));
    let text = write_run(&run);
    assert_eq!(read_run(&text).unwrap(), run);
    // The documented order: `format` first, an op's `op` before its numbers.
    assert!(text
        .trim_start()
        .starts_with("{\n  \"format\": \"remat-run/1\""));
    let written: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(written["ops"][1], good()["ops"][1]);
    assert!(written["ops"][0].get("tensor").is_none(), "{text}");

    // Only `format`, `budget_bytes` and `ops` are required; `null` is an
    // absent digest, and a written run without one has none.
    let minimal = json!({"format": "remat-run/1", "budget_bytes": 5, "chain_digest": null,
        "ops": [{"op": "backward", "stage": 1, "seconds": 1, "memory_bytes": 0, "peak_bytes": 0}]});
    let run = read_run(&minimal.to_string()).unwrap();
    assert_eq!(
        (
            run.chain_name.as_str(),
            run.chain_digest.as_deref(),
            run.algorithm.as_str()
        ),
        ("", None, "")
    );
    assert!(!write_run(&run).contains("chain_digest"));
}

/// Catches each rule left out (a negative time, a peak below the memory,
/// an operation read loosely), a missing `deny_unknown_fields`, and an
/// error that loses its path.
#[test]
fn every_rule_names_its_field() {
    type Edit = Box<dyn FnOnce(&mut Value)>;
    let cases: Vec<(Edit, &str)> = vec![
        (
            Box::new(|v| v["format"] = "remat-schedule/1".into()),
            "format: expected \"remat-run/1\", found \"remat-schedule/1\"",
        ),
        (
            Box::new(|v| {
                v.as_object_mut().unwrap().remove("budget_bytes");
            }),
            "budget_bytes: missing",
        ),
        (
            Box::new(|v| v["budget_byte"] = 3.into()),
            "budget_byte: unknown field; did you mean `budget_bytes`?",
        ),
        (
            Box::new(|v| v["ops"][3]["peak_bytes"] = 11.into()),
            "ops[3].peak_bytes: smaller than memory_bytes (11 < 12): the peak during an operation is at least what it leaves",
        ),
        (
            Box::new(|v| v["ops"][3]["peak_byte"] = 11.into()),
            "ops[3].peak_byte: unknown field; did you mean `peak_bytes`?",
        ),
        (
            Box::new(|v| v["ops"][2]["seconds"] = (-1.0).into()),
            "ops[2].seconds: must be ≥ 0, got -1",
        ),
        (
            Box::new(|v| v["ops"][2]["seconds"] = "fast".into()),
            "ops[2].seconds: expected a number of seconds, found the string \"fast\"",
        ),
        (
            Box::new(|v| v["ops"][0]["memory_bytes"] = 1.5.into()),
            "ops[0].memory_bytes: must be a whole number of bytes, got 1.5",
        ),
        (
            Box::new(|v| v["ops"][0]["memory_bytes"] = (-2).into()),
            "ops[0].memory_bytes: must be ≥ 0, got -2",
        ),
        (
            Box::new(|v| {
                v["ops"][1].as_object_mut().unwrap().remove("peak_bytes");
            }),
            "ops[1].peak_bytes: missing",
        ),
        (
            Box::new(|v| {
                v["ops"][1].as_object_mut().unwrap().remove("seconds");
            }),
            "ops[1].seconds: missing",
        ),
        (
            Box::new(|v| v["ops"][0]["op"] = "forward_sometimes".into()),
            "ops[0]: unknown variant `forward_sometimes`, expected one of `forward_all`, `forward_checkpoint`, `forward_none`, `backward`, `offload`, `prefetch`, `release`",
        ),
        (
            Box::new(|v| {
                v["ops"][1].as_object_mut().unwrap().remove("tensor");
            }),
            "ops[1].tensor: missing",
        ),
        (
            Box::new(|v| v["ops"][0]["tensor"] = "output".into()),
            "ops[0].tensor: forward_all names no tensor; only offload, prefetch and release do",
        ),
        (
            Box::new(|v| v["ops"][1]["tensor"] = "gradient".into()),
            "ops[1].tensor: unknown variant `gradient`, expected `output` or `saved`",
        ),
        (
            Box::new(|v| v["ops"][0]["stage"] = (-1).into()),
            "ops[0].stage: expected a whole number ≥ 0, found the number -1",
        ),
        (
            Box::new(|v| v["ops"][2] = json!([1, 2])),
            "ops[2]: expected an object, found an array",
        ),
        (
            Box::new(|v| v["ops"] = json!([])),
            "ops: the run has no operation",
        ),
        (
            Box::new(|v| {
                v["ops"][0]["seconds"] = 1.7e308.into();
                v["ops"][1]["seconds"] = 1.7e308.into();
            }),
            "ops: the seconds add up to more than a double holds; check the units (seconds)",
        ),
    ];
    for (edit, expected) in cases {
        assert_eq!(error_of(edit), expected);
    }
    let syntax = read_run("{\"format\": \"remat-run/1\",").unwrap_err();
    assert!(
        syntax.to_string().starts_with("(file): not valid JSON"),
        "{syntax}"
    );
    // A number past a double names its field, as in chains.
    let huge = read_run(r#"{"format": "remat-run/1", "budget_bytes": 1e400, "ops": []}"#)
        .unwrap_err()
        .to_string();
    assert_eq!(huge, "budget_bytes: number out of range");
}

/// Catches the operation limit left out, or off by one.
#[test]
fn more_operations_than_the_limit_are_refused() {
    let text = good().to_string();
    assert_eq!(
        read_at_most(&text, 3).unwrap_err().to_string(),
        "ops: 4 operations is more than the 3 this tool accepts"
    );
    assert_eq!(read_at_most(&text, 4).unwrap().ops.len(), 4);
}

/// Catches a run file that loses a forward_all's menu option (the run then
/// differs from its schedule at that op) or refuses the field.
#[test]
fn a_menu_option_is_read_and_written() {
    let mut v = good();
    v["ops"][0]["option"] = json!(2);
    let run = read_run(&v.to_string()).unwrap();
    assert_eq!(
        run.ops[0].op,
        Op::ForwardAll {
            stage: 1,
            option: 2
        }
    );
    assert_eq!(read_run(&write_run(&run)).unwrap(), run);
    let mut bad = good();
    bad["ops"][3]["option"] = json!(1);
    let err = read_run(&bad.to_string()).unwrap_err().to_string();
    assert!(err.starts_with("ops[3]"), "{err}");
}
