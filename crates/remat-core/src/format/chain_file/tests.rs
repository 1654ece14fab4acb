//! The descriptive fields of `remat-chain/1`: the top-level `inputs` (the
//! batch the chain was measured on) and each stage's `module`. Each test
//! says which mutation of the code it catches.

use super::{read_chain, write_chain};
use crate::model::{Chain, InputTensor};
use serde_json::{json, Value};

/// A chain without the descriptive fields, as files were before them.
fn plain() -> Value {
    json!({
        "format": "remat-chain/1", "name": "t", "input_bytes": 100,
        "stages": [
            {"name": "a", "forward_seconds": 0.1, "backward_seconds": 0.2, "output_bytes": 10, "saved_bytes": 20},
            {"name": "b", "forward_seconds": 0.1, "backward_seconds": 0.2, "output_bytes": 4, "saved_bytes": 8}
        ]
    })
}

/// `plain()` with a batch of two tensors and a module on the first stage.
fn described() -> Value {
    let mut v = plain();
    v["inputs"] = json!([
        {"name": "input_ids", "shape": [4, 128], "dtype": "int64"},
        {"name": "", "shape": [], "dtype": "float32"}
    ]);
    v["stages"][0]["module"] = "transformer.h.3".into();
    v
}

fn read(v: &Value) -> Chain {
    read_chain(&v.to_string()).unwrap()
}

/// The error reading `described()` after `edit`.
fn error_of(edit: impl FnOnce(&mut Value)) -> String {
    let mut v = described();
    edit(&mut v);
    read_chain(&v.to_string()).unwrap_err().to_string()
}

/// Catches a field left out of the file struct or of `From<ChainFile>`
/// (the values would not arrive), and a default that is not None (old
/// files would gain inputs or modules).
#[test]
fn inputs_and_modules_are_read_when_given_and_none_otherwise() {
    let old = read(&plain());
    assert_eq!(old.inputs, None);
    assert!(old.stages.iter().all(|s| s.module.is_none()));

    let chain = read(&described());
    assert_eq!(
        chain.inputs,
        Some(vec![
            InputTensor {
                name: "input_ids".into(),
                shape: vec![4, 128],
                dtype: "int64".into()
            },
            InputTensor {
                name: String::new(),
                shape: vec![],
                dtype: "float32".into()
            },
        ])
    );
    assert_eq!(chain.stages[0].module.as_deref(), Some("transformer.h.3"));
    assert_eq!(chain.stages[1].module, None);
    assert_eq!(
        chain.inputs_summary().as_deref(),
        Some("input_ids int64 [4, 128], float32 []")
    );
    assert_eq!(old.inputs_summary(), None);

    // `null` is absent, as for the other optional descriptive fields; a
    // tensor's `name` may be left out (positional); a whole float is a dim.
    let mut v = described();
    v["stages"][0]["module"] = Value::Null;
    v["inputs"] = Value::Null;
    let chain = read(&v);
    assert_eq!((chain.inputs, chain.stages[0].module.clone()), (None, None));
    let mut v = plain();
    v["inputs"] = json!([{"shape": [2.0, 3], "dtype": "bfloat16"}]);
    assert_eq!(
        read(&v).inputs.unwrap()[0],
        InputTensor {
            name: String::new(),
            shape: vec![2, 3],
            dtype: "bfloat16".into()
        }
    );
}

/// Catches a dim read as a plain `u64` (serde's own message, without the
/// value), a missing `deny_unknown_fields` on the tensor, and each limit or
/// the dtype check left out of `Chain::validate`.
#[test]
fn bad_inputs_and_modules_are_named_by_their_field() {
    type Edit = Box<dyn FnOnce(&mut Value)>;
    let cases: Vec<(Edit, &str)> = vec![
        (
            Box::new(|v| v["inputs"][0]["shape"][1] = (-3).into()),
            "inputs[0].shape[1]: must be a whole number ≥ 0, got -3",
        ),
        (
            Box::new(|v| v["inputs"][1]["shape"] = json!([1.5])),
            "inputs[1].shape[0]: must be a whole number ≥ 0, got 1.5",
        ),
        (
            Box::new(|v| v["inputs"][0]["shape"][0] = "4".into()),
            "inputs[0].shape[0]: expected a whole number ≥ 0, found the string \"4\"",
        ),
        (
            Box::new(|v| v["inputs"][0]["shape"] = 4.into()),
            "inputs[0].shape: expected an array, found the number 4",
        ),
        (
            Box::new(|v| v["inputs"][1]["dtype"] = "".into()),
            "inputs[1].dtype: must name the element type (\"float32\", \"bfloat16\", \"int64\", …)",
        ),
        (
            Box::new(|v| {
                v["inputs"][0].as_object_mut().unwrap().remove("dtype");
            }),
            "inputs[0].dtype: missing",
        ),
        (
            Box::new(|v| {
                v["inputs"][0].as_object_mut().unwrap().remove("shape");
            }),
            "inputs[0].shape: missing",
        ),
        (
            Box::new(|v| v["inputs"][0]["dtyp"] = "int64".into()),
            "inputs[0].dtyp: unknown field; did you mean `dtype`?",
        ),
        (
            Box::new(|v| v["inputs"][0]["name"] = 3.into()),
            "inputs[0].name: expected a string, found the number 3",
        ),
        (
            Box::new(|v| v["inputs"][1] = json!([4, 128])),
            "inputs[1]: expected an object, found an array",
        ),
        (
            Box::new(|v| v["inputs"] = json!({"input_ids": [4, 128]})),
            "inputs: expected an array, found an object",
        ),
        (
            Box::new(|v| v["input"] = json!([])),
            "input: unknown field; did you mean `inputs`?",
        ),
        (
            Box::new(|v| {
                let t = v["inputs"][0].clone();
                v["inputs"] = Value::Array(vec![t; crate::model::MAX_INPUTS + 1]);
            }),
            "inputs: 65 tensors is more than the 64 this tool accepts",
        ),
        (
            Box::new(|v| {
                v["inputs"][1]["shape"] = json!(vec![1; crate::model::MAX_INPUT_DIMS + 1])
            }),
            "inputs[1].shape: 17 dimensions is more than the 16 this tool accepts",
        ),
        (
            Box::new(|v| v["stages"][1]["module"] = json!(["fc"])),
            "stages[1].module: expected a string, found an array",
        ),
        (
            Box::new(|v| v["stages"][1]["modules"] = "fc".into()),
            "stages[1].modules: unknown field; did you mean `module`?",
        ),
    ];
    for (edit, expected) in cases {
        assert_eq!(error_of(edit), expected);
    }
    // The limits themselves are accepted.
    let mut v = described();
    v["inputs"] = Value::Array(vec![v["inputs"][0].clone(); crate::model::MAX_INPUTS]);
    v["inputs"][0]["shape"] = json!(vec![0; crate::model::MAX_INPUT_DIMS]);
    assert_eq!(read(&v).inputs.unwrap().len(), crate::model::MAX_INPUTS);
}

/// Catches `write_chain` leaving either field out (the round trip loses
/// it) or writing it when absent (`"inputs": null` in an old chain's file).
#[test]
fn written_files_keep_inputs_and_modules_and_only_when_given() {
    let chain = read(&described());
    let text = write_chain(&chain);
    assert_eq!(read_chain(&text).unwrap(), chain);
    let written: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(written["inputs"], described()["inputs"]);
    assert_eq!(written["stages"][0]["module"], "transformer.h.3");
    assert!(written["stages"][1].get("module").is_none(), "{text}");

    let old = write_chain(&read(&plain()));
    assert!(!old.contains("inputs") && !old.contains("module"), "{old}");
}

/// Catches `inputs` or `module` entering `Chain::digest`: a schedule made
/// for a chain must still match it once the describer names its batch
/// and modules.
#[test]
fn the_digest_ignores_inputs_and_modules() {
    let (old, new) = (read(&plain()), read(&described()));
    assert_ne!(old, new);
    assert_eq!(old.digest(), new.digest());
    let mut other = new.clone();
    other.inputs.as_mut().unwrap()[0].shape[0] = 8;
    other.stages[1].module = Some("fc".into());
    assert_eq!(other.digest(), old.digest());
}

/// `plain()` with two peers, the second training on wrong gradients.
fn with_peers() -> Value {
    let mut v = plain();
    v["peers"] = json!([
        {"name": "torch.compile, budget 0.6", "peak_bytes": 90, "seconds": 0.25},
        {"name": "torch.compile, budget 0.2", "peak_bytes": 70, "seconds": 0.31, "gradients_right": false}
    ]);
    v
}

/// Catches `peers` left out of the file struct, of `From<ChainFile>` or of
/// `write_chain` (the round trip loses them), `gradients_right` defaulting
/// to false (an old measurer's peers would all read wrong), and peers
/// entering the digest (a plan would no longer match its chain once the
/// peers are measured). Mutation run: `right()` returning false → fails.
#[test]
fn peers_are_read_written_and_kept_out_of_the_digest() {
    let chain = read(&with_peers());
    assert_eq!(chain.peers.len(), 2);
    assert_eq!(
        (
            chain.peers[0].peak_bytes,
            chain.peers[0].gradients_right,
            chain.peers[1].gradients_right
        ),
        (90, true, false)
    );
    assert_eq!(read_chain(&write_chain(&chain)).unwrap(), chain);
    assert_eq!(chain.digest(), read(&plain()).digest());
    assert!(!write_chain(&read(&plain())).contains("peers"));
}

/// Catches a peer's bad value read as given: each is named by its field.
#[test]
fn bad_peers_are_named_by_their_field() {
    let error = |edit: fn(&mut Value)| {
        let mut v = with_peers();
        edit(&mut v);
        read_chain(&v.to_string()).unwrap_err().to_string()
    };
    assert_eq!(
        error(|v| v["peers"][1]["seconds"] = json!(0.0)),
        "peers[1].seconds: must be a finite time above 0, got 0"
    );
    assert_eq!(
        error(|v| v["peers"][0]["name"] = json!(" ")),
        "peers[0].name: must say what ran"
    );
    assert_eq!(
        error(|v| v["peers"][0]["peak_bytes"] = json!(0)),
        "peers[0].peak_bytes: must be above 0"
    );
    assert!(error(|v| v["peers"][0]["colour"] = json!("red")).contains("colour"));
    let many: Vec<Value> = (0..65)
        .map(|i| json!({"name": format!("p{i}"), "peak_bytes": 1, "seconds": 1.0}))
        .collect();
    let mut v = plain();
    v["peers"] = Value::Array(many);
    assert!(read_chain(&v.to_string())
        .unwrap_err()
        .to_string()
        .starts_with("peers: 65 peers is more than the 64"));
}

/// Catches `constant_bytes` left out of the file struct, of
/// `From<ChainFile>` or of `write_chain` (the round trip loses it), a
/// negative or fractional count read as given, and the constants entering
/// the digest (they change no plan). Mutation run: `From<ChainFile>`
/// reading `constant_bytes: None` → fails.
#[test]
fn constant_bytes_are_read_written_and_kept_out_of_the_digest() {
    let mut v = plain();
    v["constant_bytes"] = json!(73_732);
    let chain = read(&v);
    assert_eq!(chain.constant_bytes, Some(73_732));
    assert_eq!(read_chain(&write_chain(&chain)).unwrap(), chain);
    assert_eq!(chain.digest(), read(&plain()).digest());
    assert_eq!(read(&plain()).constant_bytes, None);
    assert!(!write_chain(&read(&plain())).contains("constant_bytes"));
    for bad in [json!(-1), json!(1.5), json!("many")] {
        v["constant_bytes"] = bad;
        let e = read_chain(&v.to_string()).unwrap_err().to_string();
        assert!(e.starts_with("constant_bytes"), "{e}");
    }
}

/// Catches `remat scale`'s answer keeping the constants a batch of another
/// size does not hold (a mask scales with it), and the line between two
/// measured batches dropping them. Mutation run: the single-factor scale
/// not clearing `constant_bytes` → fails.
#[test]
fn constant_bytes_follow_the_batch_or_are_dropped() {
    use crate::model::{scaled, AffineFit, Scale};
    let mut v = plain();
    v["constant_bytes"] = json!(1000);
    let chain = read(&v);
    assert_eq!(
        scaled(&chain, Scale::batch(4, 8)).unwrap().constant_bytes,
        None
    );
    let mut w = plain();
    w["constant_bytes"] = json!(1800);
    let line = AffineFit::new(chain, 4, read(&w), 8).unwrap();
    assert_eq!(line.at(6).unwrap().constant_bytes, Some(1400));
    assert_eq!(line.at(4).unwrap().constant_bytes, Some(1000));
}
