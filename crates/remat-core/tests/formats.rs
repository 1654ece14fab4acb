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
            Box::new(|v| v["stages"][1]["forward_nograd_overhead_bytes"] = (-1).into()),
            "stages[1].forward_nograd_overhead_bytes: must be ≥ 0, got -1: F^ℓ keeps what it computes",
        ),
        (
            Box::new(|v| v["stages"][0]["forward_nograd_overhead_bytes"] = 0.5.into()),
            "stages[0].forward_nograd_overhead_bytes: must be a whole number of bytes",
        ),
        (
            Box::new(|v| v["stages"][0]["forward_nograd_overhead_bytes"] = "1 MiB".into()),
            "stages[0].forward_nograd_overhead_bytes: expected a number of bytes, found the string \"1 MiB\"",
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
        (
            Box::new(|v| v["stages"][0]["input_freed_bytes"] = 1.into()),
            "stages[0].input_freed_bytes: must be 0 for the first stage",
        ),
        (
            Box::new(|v| v["stages"][1]["input_freed_bytes"] = 11.into()),
            "stages[1].input_freed_bytes: 11 is more than the stage's input (stages[0].output_bytes = 10)",
        ),
        (
            Box::new(|v| {
                v["stages"][1]["backward_overhead_bytes"] = (-8).into();
                v["stages"][1]["input_freed_bytes"] = 5.into();
            }),
            "stages[1].input_freed_bytes: 5 is more than B^ℓ leaves of δ^ℓ and ā^ℓ while it runs: backward_overhead_bytes + gradient_bytes + saved_bytes − parameter_gradient_bytes = 4",
        ),
        (
            Box::new(|v| v["stages"][1]["input_freed_bytes"] = (-1).into()),
            "stages[1].input_freed_bytes: must be ≥ 0",
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
    let err = rotor_error(
        r#"{"fw": [1], "bw": [1], "cw": [1], "cbw": [1, 1], "ftmp": [0], "btmp": [0]}"#,
    );
    assert!(err.starts_with("cw: has 1 entries; with 1 stages"), "{err}");
    // Rotor's sizes pass through f64: above 2^53 bytes they would round
    // silently, so they are refused naming the entry.
    let err = rotor_error(
        r#"{"fw": [1], "bw": [1, 1], "cw": [1, 9007199254740993], "cbw": [0, 9007199254740993],
            "ftmp": [0], "btmp": [0, 0]}"#,
    );
    assert!(err.starts_with("cw[1]:") && err.contains("2^53"), "{err}");
    let err = rotor_error(
        r#"{"fw": [1], "bw": [1], "cw": [1, 5], "cbw": [0, 2], "ftmp": [0], "btmp": [0]}"#,
    );
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

/// A chain of `n` identical stages, as JSON.
fn long_chain(n: usize) -> serde_json::Value {
    let mut v = good();
    let stage = v["stages"][0].clone();
    v["stages"] = serde_json::Value::Array(vec![stage; n]);
    v
}

/// How this can fail: a reader that loses the path (serde_json's own error,
/// or a path tracker not threaded through the stage list or the operation
/// list) says `(file): invalid type …`. Mutation tried: reading through
/// `serde_json::from_str` without `serde_path_to_error` — every case below
/// lost its path.
#[test]
fn a_wrong_type_deep_in_the_file_is_named_by_its_path() {
    let cases: Vec<(serde_json::Value, &str)> = vec![
        (
            {
                let mut v = long_chain(9);
                v["stages"][7]["saved_bytes"] = "big".into();
                v
            },
            "stages[7].saved_bytes: expected a number of bytes, found the string \"big\"",
        ),
        (
            {
                let mut v = long_chain(9);
                v["stages"][8]["forward_nograd_seconds"] = serde_json::json!([1]);
                v
            },
            "stages[8].forward_nograd_seconds: expected a number of seconds, found an array",
        ),
        (
            {
                let mut v = long_chain(9);
                v["stages"][3]["gradient_bytes"] = serde_json::Value::Null;
                v
            },
            "stages[3].gradient_bytes: expected a number of bytes, found null",
        ),
        (
            {
                let mut v = long_chain(9);
                v["stages"][5]["backward_overhead_bytes"] = 2.5.into();
                v
            },
            "stages[5].backward_overhead_bytes: must be a whole number of bytes, got 2.5",
        ),
        (
            {
                let mut v = long_chain(9);
                v["stages"][6]["forwrd_seconds"] = 1.into();
                v
            },
            "stages[6].forwrd_seconds: unknown field; did you mean `forward_seconds`?",
        ),
        (
            {
                let mut v = long_chain(9);
                v["stages"][2]["colour"] = 1.into();
                v
            },
            "stages[2].colour: unknown field; known fields: name, forward_seconds,",
        ),
    ];
    for (v, expected) in cases {
        let err = read_chain(&v.to_string()).unwrap_err().to_string();
        assert!(
            err.starts_with(expected),
            "got `{err}`, expected `{expected}`"
        );
    }
}

/// serde reads a struct from an array of its fields in order too; the
/// formats accept objects only. Mutation tried: `stages: Vec<StageFile>`
/// without `deserialize_with = "objects"` — the positional stage was read.
#[test]
fn arrays_in_place_of_objects_are_refused() {
    let positional = r#"{"format": "remat-chain/1", "input_bytes": 1,
        "stages": [["a", 1, 1, 1, 1]]}"#;
    let err = read_chain(positional).unwrap_err().to_string();
    assert_eq!(err, "stages[0]: expected an object, found an array");
    for text in [r#"["remat-chain/1"]"#, "3", "null"] {
        let err = read_any_chain(text).unwrap_err().to_string();
        assert!(err.starts_with("(file): expected an object"), "{err}");
    }
    let err = read_rotor(
        "[[1], [1], [1, 1], [1, 1], [0], [0]]",
        TimeUnit::Seconds,
        "r",
    )
    .unwrap_err()
    .to_string();
    assert!(err.starts_with("(file): expected an object"), "{err}");
}

/// `format` is read first, so a file of the other kind is named as such
/// rather than by its first field the reader does not know. Mutation tried:
/// dropping `expect_format` from `read_chain` — a schedule read as a chain
/// then failed on `budget_bytes: unknown field`.
#[test]
fn a_file_of_another_format_is_named_by_its_format() {
    let schedule = r#"{"budget_bytes": 1, "format": "remat-schedule/1", "ops": []}"#;
    let err = read_chain(schedule).unwrap_err().to_string();
    assert_eq!(
        err,
        "format: expected \"remat-chain/1\", found \"remat-schedule/1\""
    );
    let chain = good().to_string();
    let err = read_schedule(&chain).unwrap_err().to_string();
    assert_eq!(
        err,
        "format: expected \"remat-schedule/1\", found \"remat-chain/1\""
    );
    let err = read_chain(r#"{"input_bytes": 1, "stages": []}"#)
        .unwrap_err()
        .to_string();
    assert_eq!(err, "format: missing");
    let err = read_schedule(r#"{"format": 1}"#).unwrap_err().to_string();
    assert_eq!(err, "format: expected a string, found the number 1");
    // `format: null` is a chain file with a bad format, not rotor's layout.
    let err = read_any_chain(
        r#"{"format": null, "fw": [1], "bw": [1], "cw": [1, 1], "cbw": [1, 1], "ftmp": [0], "btmp": [0]}"#,
    )
    .unwrap_err()
    .to_string();
    assert_eq!(err, "format: expected a string, found null");
}

/// Operations and the other fields of a schedule are named by their path.
/// Mutation tried: leaving out the key for an unknown field that serde reports
/// at the operation (internally tagged enums read from a buffer) — the
/// second case said `ops[2]: unknown field`.
#[test]
fn bad_schedule_fields_name_their_path() {
    let with = |field: &str| {
        format!(
            r#"{{"format": "remat-schedule/1", "budget_bytes": 100, {field}
                "ops": [{{"op": "forward_all", "stage": 1}}, {{"op": "forward_none", "stage": 2}},
                        {{"op": "offload", "stage": 2, "tensor": "output"}}]}}"#
        )
    };
    assert_eq!(read_schedule(&with("")).unwrap().ops.len(), 3);
    let cases = [
        (
            with("").replace("\"tensor\": \"output\"", "\"tensor\": \"both\""),
            "ops[2]: unknown variant `both`, expected `output` or `saved`",
        ),
        (
            with("").replace(
                "\"op\": \"forward_none\", \"stage\": 2",
                "\"op\": \"forward_none\", \"stage\": 2, \"tensor\": \"output\"",
            ),
            "ops[1].tensor: unknown field; known fields: stage",
        ),
        (
            with("").replace(", \"tensor\": \"output\"", ""),
            "ops[2].tensor: missing",
        ),
        (
            with("").replace("\"op\": \"forward_all\", ", ""),
            "ops[0].op: missing",
        ),
        (
            with("\"predicted\": {\"makespan_seconds\": 1, \"peak_byte\": 2},"),
            "predicted.peak_byte: unknown field; did you mean `peak_bytes`?",
        ),
        (
            with("\"stages\": -3,"),
            "stages: expected a whole number ≥ 0, found the number -3",
        ),
        (
            with("").replace("\"budget_bytes\": 100, ", ""),
            "budget_bytes: missing",
        ),
        (
            with("\"algorithmm\": \"rotor\","),
            "algorithmm: unknown field; did you mean `algorithm`?",
        ),
    ];
    for (text, expected) in cases {
        let err = read_schedule(&text).unwrap_err().to_string();
        assert_eq!(err, expected);
    }
}

/// Rotor's lists are judged by `Chain::validate` and its errors are said in
/// the file's names and unit. Mutation tried: validating after converting
/// milliseconds to seconds — the first message said `got -0.002`.
#[test]
fn rotor_errors_are_in_the_files_names_and_unit() {
    let rotor = |fw: &str, ftmp: &str| {
        format!(
            r#"{{"fw": {fw}, "bw": [1, 1], "cw": [8, 8, 8], "cbw": [8, 8, 8], "ftmp": {ftmp}, "btmp": [0, 0]}}"#
        )
    };
    let error = |text: &str| {
        read_rotor(text, TimeUnit::Milliseconds, "r")
            .unwrap_err()
            .to_string()
    };
    for (text, expected) in [
        (rotor("[1, -2]", "[0, 0]"), "fw[1]: must be ≥ 0, got -2"),
        (rotor("[1, 2]", "[0, -1]"), "ftmp[1]: must be ≥ 0, got -1"),
        (
            rotor("[1, 2]", "[0, \"x\"]"),
            "ftmp[1]: expected a number of bytes, found the string \"x\"",
        ),
        (
            r#"{"fw": [], "bw": [], "cw": [1], "cbw": [1], "ftmp": [], "btmp": []}"#.to_string(),
            "fw: the chain has no stage",
        ),
    ] {
        assert_eq!(error(&text), expected);
    }
    let chain = read_rotor(&rotor("[1, 2]", "[0, 0]"), TimeUnit::Milliseconds, "r").unwrap();
    assert_eq!(chain.stage(2).forward_seconds, 0.002);
}

/// The bytes `write_chain` writes, pinned: keys in alphabetical order (as
/// chain files have always been written), fields at their default left out.
/// Mutation tried: serializing the file struct directly instead of through a
/// `serde_json::Value` — the keys came out in declaration order.
#[test]
fn written_chains_keep_their_bytes() {
    let mut chain = read_chain(&good().to_string()).unwrap();
    chain.input_gradient_bytes = 7;
    chain.stages[1].gradient_bytes = 5;
    chain.stages[1].forward_nograd_seconds = Some(0.05);
    chain.stages[1].forward_nograd_overhead_bytes = Some(3);
    let expected = r#"{
  "bandwidth_bytes_per_s": 12000000000.0,
  "format": "remat-chain/1",
  "input_bytes": 100,
  "input_gradient_bytes": 7,
  "name": "t",
  "source": "",
  "stages": [
    {
      "backward_seconds": 0.2,
      "forward_seconds": 0.1,
      "name": "a",
      "output_bytes": 10,
      "saved_bytes": 20
    },
    {
      "backward_overhead_bytes": 2,
      "backward_seconds": 0.2,
      "forward_nograd_overhead_bytes": 3,
      "forward_nograd_seconds": 0.05,
      "forward_overhead_bytes": 1,
      "forward_seconds": 0.1,
      "gradient_bytes": 5,
      "name": "b",
      "output_bytes": 4,
      "saved_bytes": 8
    }
  ]
}"#;
    assert_eq!(write_chain(&chain), expected);
    assert_eq!(read_chain(expected).unwrap(), chain);
}

/// Optional fields: `null` means absent where the format says so
/// (`bandwidth_bytes_per_s`, `forward_nograd_seconds`,
/// `forward_nograd_overhead_bytes`) and is refused
/// elsewhere, as before. Mutation tried: `Option<Bytes>` without
/// `deserialize_with = "present"` — a `null` gradient was read as absent.
#[test]
fn null_is_absent_only_where_the_format_says_so() {
    let mut v = good();
    v["bandwidth_bytes_per_s"] = serde_json::Value::Null;
    v["stages"][0]["forward_nograd_seconds"] = serde_json::Value::Null;
    v["stages"][0]["forward_nograd_overhead_bytes"] = serde_json::Value::Null;
    let chain = read_chain(&v.to_string()).unwrap();
    assert_eq!(chain.bandwidth_bytes_per_s, None);
    assert_eq!(chain.stages[0].forward_nograd_seconds, None);
    assert_eq!(chain.stages[0].forward_nograd_overhead_bytes, None);
    for (field, expected) in [
        (
            "input_gradient_bytes",
            "input_gradient_bytes: expected a number of bytes, found null",
        ),
        ("name", "name: expected a string, found null"),
        ("source", "source: expected a string, found null"),
    ] {
        let mut v = good();
        v[field] = serde_json::Value::Null;
        assert_eq!(
            read_chain(&v.to_string()).unwrap_err().to_string(),
            expected
        );
    }
}

/// The message `read_rotor` refuses `text` with (times in seconds).
fn rotor_error(text: &str) -> String {
    read_rotor(text, TimeUnit::Seconds, "r")
        .unwrap_err()
        .to_string()
}

/// `forward_nograd_overhead_bytes` is optional like `forward_nograd_seconds`:
/// a chain without it keeps its digest (every schedule made for it stays
/// valid), one with it is another chain for the digest (even at o_f's
/// value, as a given no-grad time equal to u_f is), and it survives a
/// rescaling. Could fail if the digest hashed the field when absent (the
/// pinned digest of the teaching chain changes), or ignored it when given
/// (a schedule made for another transient would be accepted).
#[test]
fn the_nograd_overhead_is_optional_and_in_the_digest_when_given() {
    let teaching = examples::teaching();
    assert_eq!(teaching.digest(), "fnv1a64:3638b1b952894e9f");
    let mut given = teaching.clone();
    given.stages[2].forward_nograd_overhead_bytes = Some(given.stages[2].forward_overhead_bytes);
    assert_ne!(given.digest(), teaching.digest());
    let mut other = given.clone();
    other.stages[2].forward_nograd_overhead_bytes = Some(1 << 20);
    assert_ne!(other.digest(), given.digest());
    let text = write_chain(&other);
    assert!(
        text.contains("\"forward_nograd_overhead_bytes\": 1048576"),
        "{text}"
    );
    assert_eq!(read_chain(&text).unwrap().digest(), other.digest());
    assert!(!write_chain(&teaching).contains("forward_nograd_overhead_bytes"));
    let twice = remat_core::model::scaled(&other, remat_core::model::Scale::bytes(2.0)).unwrap();
    assert_eq!(twice.stages[2].forward_nograd_overhead_bytes, Some(2 << 20));
}

/// A schedule carries its chain's `inputs` (the batch), so that a runtime
/// can check its batch without the chain. Catches the copy left out of
/// `ScheduleFile::new`, the field lost on writing or reading, a schedule
/// without it gaining `"inputs": null`, its values not validated as a
/// chain's, and the field entering the digest check.
#[test]
fn schedules_carry_the_chains_inputs() {
    let chain = examples::by_name("gpt2-cpu-torch").unwrap();
    let inputs = chain.inputs.clone().expect("described by remat_torch");
    let sol = solve(
        &chain,
        Algorithm::StoreAll,
        u64::MAX / 4,
        &Options::default(),
    )
    .unwrap();
    let predicted = Predicted {
        makespan_seconds: 1.0,
        peak_bytes: 1,
    };
    let file = ScheduleFile::new(
        &chain,
        "store-all",
        1 << 40,
        None,
        predicted.clone(),
        sol.ops.unwrap(),
    );
    assert_eq!(file.inputs.as_ref(), Some(&inputs));
    let text = write_schedule(&file);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["inputs"][0]["dtype"], "int64", "{text}");
    assert!(v["inputs"][0]["shape"].is_array());
    let again = read_schedule(&text).unwrap();
    assert_eq!(again, file);
    assert_eq!(again.check_chain(&chain).unwrap(), None);

    // A chain without inputs: no field at all, and old files still load.
    let teaching = examples::teaching();
    let plain = ScheduleFile::new(&teaching, "x", 1, None, predicted, vec![]);
    let text = write_schedule(&plain);
    assert!(!text.contains("inputs"), "{text}");
    assert_eq!(read_schedule(&text).unwrap().inputs, None);

    // Read and judged as a chain's: the error names the field.
    let mut bad = v.clone();
    bad["inputs"][0]["dtype"] = "".into();
    assert_eq!(
        read_schedule(&bad.to_string()).unwrap_err().to_string(),
        "inputs[0].dtype: must name the element type (\"float32\", \"bfloat16\", \"int64\", …)"
    );
    let mut bad = v.clone();
    bad["inputs"][0]["shape"][0] = (-4).into();
    assert_eq!(
        read_schedule(&bad.to_string()).unwrap_err().to_string(),
        "inputs[0].shape[0]: must be a whole number ≥ 0, got -4"
    );
    let mut bad = v.clone();
    bad["inputs"][0]["dtyp"] = "int64".into();
    assert_eq!(
        read_schedule(&bad.to_string()).unwrap_err().to_string(),
        "inputs[0].dtyp: unknown field; did you mean `dtype`?"
    );
    let mut null = v;
    null["inputs"] = serde_json::Value::Null;
    assert_eq!(read_schedule(&null.to_string()).unwrap().inputs, None);
}

/// An offloading schedule carries where the simulator frees each
/// offload's device copy (`offload_frees`), so that a runtime frees it
/// there. Catches the field lost on writing or reading, written for a
/// schedule without offloads, and entries naming no offload, one offload
/// twice, or an operation before it, read without a word naming the field.
#[test]
fn offloading_schedules_say_where_each_copy_is_freed() {
    let chain = examples::teaching();
    let bw = Some(1e10);
    let high = remat_core::solvers::max_useful_budget(&chain);
    let budget = high * 3 / 10;
    let options = Options {
        bandwidth_bytes_per_s: bw,
        ..Options::default()
    };
    let ops = solve(&chain, Algorithm::Pofo, budget, &options)
        .unwrap()
        .ops
        .expect("pofo fits at 30 % of M_high");
    let trace = remat_core::simulator::judge(&chain, &ops, budget, bw).unwrap();
    let file = ScheduleFile::judged(&chain, "pofo", budget, bw, ops, &trace);
    assert_eq!(
        file.predicted
            .as_ref()
            .map(|p| (p.makespan_seconds, p.peak_bytes)),
        Some((trace.makespan_seconds, trace.peak_bytes))
    );
    let offloads = file
        .ops
        .iter()
        .filter(|op| matches!(op, remat_core::Op::Offload { .. }))
        .count();
    assert!(offloads > 0, "the plan offloads");
    assert_eq!(file.offload_frees.len(), offloads);
    // On this chain some copy outlasts the next compute operation.
    assert!(file.offload_frees.iter().any(|f| f.after > f.offload));
    let text = write_schedule(&file);
    assert_eq!(read_schedule(&text).unwrap(), file);

    let store_all = solve(&chain, Algorithm::StoreAll, high, &Options::default())
        .unwrap()
        .ops
        .unwrap();
    let store_all_trace = remat_core::simulator::judge(&chain, &store_all, high, None).unwrap();
    let plain = ScheduleFile::judged(&chain, "store-all", high, None, store_all, &store_all_trace);
    assert!(!write_schedule(&plain).contains("offload_frees"));

    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let first = file.offload_frees[0];
    let error = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut bad = v.clone();
        edit(&mut bad);
        read_schedule(&bad.to_string()).unwrap_err().to_string()
    };
    assert_eq!(
        error(&|b| b["offload_frees"][0]["offload"] = 0.into()),
        "offload_frees[0].offload: ops[0] is not an offload"
    );
    assert_eq!(
        error(&|b| b["offload_frees"][1]["offload"] = first.offload.into()),
        format!(
            "offload_frees[1].offload: ops[{}] is freed twice",
            first.offload
        )
    );
    assert!(
        error(&|b| b["offload_frees"][0]["after"] = (first.offload - 1).into())
            .starts_with("offload_frees[0].after: expected the offload")
    );
    assert!(error(&|b| b["offload_frees"][0]["when"] = 1.into()).contains("when"));
}

/// ι^ℓ (`input_freed_bytes`): B^ℓ runs beside its input less ι^ℓ, so a
/// peak set during B^ℓ is ι^ℓ lower, the simulator's as the planners'; the
/// field round-trips and is in the digest only when given. Fails if the
/// field is dropped on reading or writing, left out of the digest, or if
/// the simulator ignores it (mutation run: the simulator's B^ℓ without
/// `- input_freed_bytes` → both chains simulated at 144 B, not 10 B apart).
#[test]
fn a_freed_input_lowers_the_backward_and_enters_the_digest() {
    let mut v = good();
    // B^2 sets the peak: a^0 100, ā^1 20, ā^2 8 and δ^2 4 resident, then
    // δ^1 10 and o_b 2 while it runs (144 B; B^1's 130 with no δ^0).
    v["input_gradient_bytes"] = 0.into();
    let plain = read_chain(&v.to_string()).unwrap();
    v["stages"][1]["input_freed_bytes"] = 10.into();
    let freed = read_chain(&v.to_string()).unwrap();
    assert_eq!(freed.stages[1].input_freed_bytes, 10);
    assert_ne!(plain.digest(), freed.digest());
    let back = read_chain(&write_chain(&freed)).unwrap();
    assert_eq!(back, freed);
    assert_eq!(back.digest(), freed.digest());
    assert_eq!(plain.backward_bytes(2) - freed.backward_bytes(2), 10);
    let peak = |c: &remat_core::Chain| {
        let s = solve(c, Algorithm::StoreAll, 1 << 40, &Options::default()).unwrap();
        let judged = remat_core::simulator::simulate(c, s.ops.as_ref().unwrap()).unwrap();
        assert_eq!(s.predicted_peak_bytes, Some(judged.peak_bytes));
        judged.peak_bytes
    };
    assert_eq!(peak(&plain) - peak(&freed), 10);
}
