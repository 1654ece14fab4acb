#![cfg(not(target_arch = "wasm32"))]
//! Round-trips of both formats, every validation error, rotor import, and a
//! schedule applied to the wrong chain.

mod common;

use proptest::prelude::*;
use remat_core::examples;
use remat_core::format::{
    read_any_chain, read_chain, read_rotor, read_schedule, write_chain, write_schedule, Predicted,
    ScheduleError, ScheduleFile, TimeUnit,
};
use remat_core::solvers::{solve, Algorithm, Options};

fn good() -> serde_json::Value {
    serde_json::json!({
        "format": "remat-chain/1", "name": "t", "input_bytes": 100,
        "bandwidth_bytes_per_s": 12e9,
        "stages": [
            {"name": "a", "forward_seconds": 0.1, "backward_seconds": 0.2, "output_bytes": 10, "saved_bytes": 20},
            {"name": "b", "forward_seconds": 0.1, "backward_seconds": 0.2, "output_bytes": 4, "saved_bytes": 8,
             "gradient_bytes": 4, "forward_overhead_bytes": 1, "backward_overhead_bytes": 2}
        ]
    })
}

/// Applies `edit` to a good chain and returns the error text.
fn error_of(edit: impl FnOnce(&mut serde_json::Value)) -> String {
    let mut v = good();
    edit(&mut v);
    read_chain(&v.to_string()).unwrap_err().to_string()
}

#[test]
fn every_validation_error_names_its_field() {
    type Edit = Box<dyn FnOnce(&mut serde_json::Value)>;
    let cases: Vec<(Edit, &str)> = vec![
        (
            Box::new(|v| v["stages"][1]["saved_bytes"] = 3.into()),
            "stages[1].saved_bytes: smaller than output_bytes",
        ),
        (
            Box::new(|v| v["stages"][0]["forward_seconds"] = (-1.0).into()),
            "stages[0].forward_seconds: must be ≥ 0",
        ),
        (
            Box::new(|v| v["stages"][0]["backward_seconds"] = "fast".into()),
            "stages[0].backward_seconds: expected a number of seconds, found the string \"fast\"",
        ),
        (
            Box::new(|v| v["stages"][0]["output_bytes"] = (-5).into()),
            "stages[0].output_bytes: must be ≥ 0",
        ),
        (
            Box::new(|v| v["stages"][0]["output_bytes"] = 1.5.into()),
            "stages[0].output_bytes: must be a whole number of bytes",
        ),
        (
            Box::new(|v| {
                v["stages"][0]
                    .as_object_mut()
                    .unwrap()
                    .remove("saved_bytes");
            }),
            "stages[0].saved_bytes: missing",
        ),
        (
            Box::new(|v| v["stages"][0]["forward_overhead_bytes"] = (-1).into()),
            "stages[0].forward_overhead_bytes: must be ≥ 0",
        ),
        (
            Box::new(|v| v["stages"][0]["backward_overhead_bytes"] = (-1e12).into()),
            "stages[0].backward_overhead_bytes: -1000000000000 is below",
        ),
        (
            Box::new(|v| v["stages"][0]["backward_overhead_bytes"] = 0.5.into()),
            "stages[0].backward_overhead_bytes: must be a whole number of bytes",
        ),
        (
            Box::new(|v| v["stages"][1]["forward_nograd_seconds"] = (-0.5).into()),
            "stages[1].forward_nograd_seconds: must be ≥ 0",
        ),
        (
            Box::new(|v| v["stages"][0]["saved_byte"] = 3.into()),
            "stages[0].saved_byte: unknown field; did you mean `saved_bytes`?",
        ),
        (
            Box::new(|v| v["input_byte"] = 3.into()),
            "input_byte: unknown field; did you mean `input_bytes`?",
        ),
        (
            Box::new(|v| {
                v.as_object_mut().unwrap().remove("input_bytes");
            }),
            "input_bytes: missing",
        ),
        (
            Box::new(|v| v["format"] = "remat-chain/9".into()),
            "format: expected \"remat-chain/1\"",
        ),
        (
            Box::new(|v| v["stages"] = serde_json::json!([])),
            "stages: the chain has no stage",
        ),
        (
            Box::new(|v| v["stages"] = 3.into()),
            "stages: expected an array",
        ),
        (
            Box::new(|v| v["stages"][1] = 3.into()),
            "stages[1]: expected an object",
        ),
        (
            Box::new(|v| v["bandwidth_bytes_per_s"] = (-1.0).into()),
            "bandwidth_bytes_per_s: must be ≥ 0",
        ),
        (
            Box::new(|v| v["name"] = 3.into()),
            "name: expected a string",
        ),
    ];
    for (edit, expected) in cases {
        let err = error_of(edit);
        assert!(err.contains(expected), "got `{err}`, expected `{expected}`");
    }
}

#[test]
fn syntax_errors_and_nan_are_reported_not_panicked() {
    let err = read_chain("{\"format\": ").unwrap_err().to_string();
    assert!(err.contains("not valid JSON"), "{err}");
    // JSON has no NaN; a file that writes one is a syntax error with a position.
    let err = read_chain(&good().to_string().replace("0.1", "NaN"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("line 1"), "{err}");
    let err = read_chain("[1, 2]").unwrap_err().to_string();
    assert!(err.contains("expected an object"), "{err}");
}

#[test]
fn a_huge_chain_is_refused_with_a_reason() {
    let mut v = good();
    let stage = v["stages"][0].clone();
    v["stages"] = serde_json::Value::Array(vec![stage; remat_core::model::MAX_STAGES + 1]);
    let err = read_chain(&v.to_string()).unwrap_err().to_string();
    assert!(err.starts_with("stages: 5001 stages is more than"), "{err}");
}

#[test]
fn chain_round_trip_keeps_everything() {
    for name in examples::names() {
        let chain = examples::by_name(name).unwrap();
        let again = read_chain(&write_chain(&chain)).unwrap();
        assert_eq!(chain, again, "{name}");
        assert_eq!(chain.digest(), again.digest());
    }
    let chain = read_chain(&good().to_string()).unwrap();
    assert_eq!(read_chain(&write_chain(&chain)).unwrap(), chain);
}

proptest! {
    #[test]
    fn random_chains_round_trip(chain in common::real_chain(30)) {
        let again = read_chain(&write_chain(&chain)).unwrap();
        prop_assert_eq!(&chain, &again);
    }
}

#[test]
fn rotor_import_maps_the_lists() {
    let text = r#"{"fw": [2, 3], "bw": [4, 5, 1], "cw": [100, 10, 4], "cbw": [0, 20, 8],
                   "ftmp": [1, 0], "btmp": [0, 2, 9]}"#;
    let chain = read_rotor(text, TimeUnit::Milliseconds, "r").unwrap();
    assert_eq!(chain.len(), 2);
    assert_eq!(chain.input_bytes, 100);
    assert_eq!(chain.stage(1).output_bytes, 10);
    assert_eq!(chain.stage(2).saved_bytes, 8);
    assert_eq!(chain.stage(1).forward_seconds, 0.002);
    assert_eq!(chain.stage(2).backward_seconds, 0.005);
    assert_eq!(chain.stage(1).forward_overhead_bytes, 1);
    assert_eq!(chain.stage(2).backward_overhead_bytes, 2);
    assert!(chain.source.contains("dropped"));
    // read_any_chain recognizes the layout.
    assert_eq!(read_any_chain(text).unwrap().len(), 2);
    let err = read_rotor(
        r#"{"fw": [1], "bw": [1], "cw": [1], "cbw": [1, 1], "ftmp": [0], "btmp": [0]}"#,
        TimeUnit::Seconds,
        "r",
    )
    .unwrap_err()
    .to_string();
    assert!(err.starts_with("cw: has 1 entries; with 1 stages"), "{err}");
    // Rotor's sizes pass through f64: above 2^53 bytes they would round
    // silently, so they are refused naming the entry.
    let err = read_rotor(
        r#"{"fw": [1], "bw": [1, 1], "cw": [1, 9007199254740993], "cbw": [0, 9007199254740993],
            "ftmp": [0], "btmp": [0, 0]}"#,
        TimeUnit::Seconds,
        "r",
    )
    .unwrap_err()
    .to_string();
    assert!(err.starts_with("cw[1]:") && err.contains("2^53"), "{err}");
    let err = read_rotor(
        r#"{"fw": [1], "bw": [1], "cw": [1, 5], "cbw": [0, 2], "ftmp": [0], "btmp": [0]}"#,
        TimeUnit::Seconds,
        "r",
    )
    .unwrap_err()
    .to_string();
    assert!(err.starts_with("cbw[1]: smaller than cw[1]"), "{err}");
}

#[test]
fn schedule_round_trip_and_wrong_chain() {
    let chain = examples::teaching();
    let sol = solve(&chain, Algorithm::Rotor, 600 << 20, &Options::default()).unwrap();
    let file = ScheduleFile::new(
        &chain,
        "rotor",
        600 << 20,
        None,
        Predicted {
            makespan_seconds: sol.predicted_seconds.unwrap(),
            peak_bytes: sol.predicted_peak_bytes.unwrap(),
        },
        sol.ops.unwrap(),
    );
    let again = read_schedule(&write_schedule(&file)).unwrap();
    assert_eq!(file, again);
    again.check_chain(&chain).unwrap();
    // Another chain of the same length: the digest tells them apart.
    let mut other = examples::teaching();
    other.name = "other".into();
    other.stages[0].forward_seconds *= 2.0;
    match again.check_chain(&other) {
        Err(ScheduleError::WrongChain { .. }) => {}
        other => panic!("expected WrongChain, got {other:?}"),
    }
    let msg = again.check_chain(&other).unwrap_err().to_string();
    assert!(
        msg.starts_with("chain_digest: this schedule was made for chain \"teaching"),
        "{msg}"
    );
    // Renaming a chain does not invalidate its schedules; changing a size does.
    let mut renamed = chain.clone();
    renamed.name = "renamed".into();
    assert!(again.check_chain(&renamed).is_ok());
    let mut resized = chain.clone();
    resized.stages[3].saved_bytes += 1;
    assert!(again.check_chain(&resized).is_err());
    assert_eq!(again.check_chain(&chain).unwrap(), None, "no warning");
    // A hand-written schedule may leave out the digest (and the prediction):
    // it is accepted with a warning and judged on the chain as given.
    let hand = r#"{"format": "remat-schedule/1", "budget_bytes": 629145600,
        "ops": [{"op": "forward_all", "stage": 1}]}"#;
    let hand = read_schedule(hand).unwrap();
    assert_eq!(
        (hand.chain_digest.as_deref(), hand.predicted.as_ref()),
        (None, None)
    );
    let warning = hand.check_chain(&other).unwrap().expect("a warning");
    assert!(warning.starts_with("chain_digest: absent"), "{warning}");
    // Solvers write the number of stages; a runtime refuses another length
    // before looking at the digest, with a message that says both lengths.
    assert_eq!(again.stages, Some(chain.len()));
    let mut longer = hand.clone();
    longer.stages = Some(chain.len() + 2);
    let msg = longer.check_chain(&chain).unwrap_err().to_string();
    assert!(
        msg.starts_with("stages: this schedule is for a chain of 12 stages, but \"teaching"),
        "{msg}"
    );
    let vgg = examples::vgg19();
    match again.check_chain(&vgg) {
        Err(ScheduleError::WrongLength { stages: 10, .. }) => {}
        other => panic!("expected WrongLength, got {other:?}"),
    }
}

#[test]
fn bad_schedule_files_name_the_op() {
    let chain = examples::teaching();
    let file = ScheduleFile::new(
        &chain,
        "x",
        1,
        None,
        Predicted {
            makespan_seconds: 0.0,
            peak_bytes: 0,
        },
        vec![],
    );
    let mut v: serde_json::Value = serde_json::from_str(&write_schedule(&file)).unwrap();
    v["ops"] = serde_json::json!([{"op": "forward_all", "stage": 1}, {"op": "forward_sometimes", "stage": 2}]);
    let err = read_schedule(&v.to_string()).unwrap_err().to_string();
    assert!(
        err.starts_with("ops[1]: unknown variant `forward_sometimes`"),
        "{err}"
    );
    v["ops"] = serde_json::json!([{"op": "forward_all", "stage": -1}]);
    let err = read_schedule(&v.to_string()).unwrap_err().to_string();
    assert!(err.starts_with("ops[0]:"), "{err}");
    v["format"] = "remat-chain/1".into();
    let err = read_schedule(&v.to_string()).unwrap_err().to_string();
    assert!(
        err.starts_with("format: expected \"remat-schedule/1\""),
        "{err}"
    );
}
