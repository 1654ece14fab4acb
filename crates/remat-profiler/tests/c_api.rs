//! The shim's C API is declared twice: once in C++ (src/shim/remat_shim.h,
//! which every file of the shim includes, so the compiler checks each
//! definition against it) and once by hand for Rust (src/torch/c_api.rs).
//! Nothing but this test ties the two: it reads both files and asks for the
//! same functions, each with the same number of parameters, in the same
//! part (the CUDA functions under `#ifdef REMAT_CUDA` in the header, under
//! `#[cfg(feature = "cuda")]` in Rust). It needs no libtorch.
//!
//! How it fails: a function added to one file and not the other, a
//! parameter added on one side only (tried: `remat_storages_move` given a
//! third parameter in the header → "remat_storages_move: 3 parameters in
//! remat_shim.h, 2 in c_api.rs"), or a CUDA function declared outside the
//! CUDA part (tried: `remat_cuda_mark` moved above the `#ifdef` → "the
//! header's part outside CUDA and c_api.rs's: [\"remat_cuda_mark\"]
//! differ").

use std::collections::BTreeMap;

/// Function name → number of parameters.
type Api = BTreeMap<String, usize>;

fn read(path: &str) -> String {
    let full = format!("{}/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{full}: {e}"))
}

/// Comments dropped, whitespace collapsed, so a declaration is on one line.
fn flat(text: &str) -> String {
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Every `remat_…(params)` followed by `;` (C++) or a `fn remat_…(params)`
/// (Rust) in `text`, with its parameter count.
fn functions(text: &str, rust: bool) -> Api {
    let text = flat(text);
    let mut api = Api::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("remat_") {
        let before = &rest[..at];
        let after = &rest[at..];
        rest = &rest[at + 6..];
        let Some(open) = after.find('(') else { break };
        let name = &after[..open];
        if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let Some(close) = after[open..].find(')') else {
            break;
        };
        let params = after[open + 1..open + close].trim().trim_end_matches(',');
        let tail = after[open + close + 1..].trim_start();
        let declared = if rust {
            before.trim_end().ends_with("fn")
        } else {
            tail.starts_with(';')
        };
        if !declared {
            continue;
        }
        let count = if params.is_empty() || params == "void" {
            0
        } else {
            params.split(',').count()
        };
        assert!(
            api.insert(name.to_string(), count).is_none(),
            "{name} is declared twice"
        );
    }
    api
}

/// (the part outside CUDA, the CUDA part) of each file.
fn header() -> (Api, Api) {
    let text = read("src/shim/remat_shim.h");
    let (plain, cuda) = text
        .split_once("#ifdef REMAT_CUDA")
        .expect("remat_shim.h has a REMAT_CUDA part");
    let (cuda, after) = cuda.split_once("#endif").expect("…and its #endif");
    let mut plain = functions(plain, false);
    plain.extend(functions(after, false));
    (plain, functions(cuda, false))
}

fn rust() -> (Api, Api) {
    let text = read("src/torch/c_api.rs");
    let (plain, cuda) = text
        .split_once("#[cfg(feature = \"cuda\")]")
        .expect("c_api.rs has a cuda part");
    (functions(plain, true), functions(cuda, true))
}

fn same(part: &str, header: &Api, rust: &Api) {
    let only: Vec<&String> = header
        .keys()
        .filter(|k| !rust.contains_key(*k))
        .chain(rust.keys().filter(|k| !header.contains_key(*k)))
        .collect();
    assert!(
        only.is_empty(),
        "the header's {part} and c_api.rs's: {only:?} differ (declared in one only)"
    );
    for (name, n) in header {
        let r = rust[name];
        assert_eq!(
            *n, r,
            "{name}: {n} parameters in remat_shim.h, {r} in c_api.rs"
        );
    }
}

#[test]
fn rust_declares_the_header_s_functions_with_their_parameter_counts() {
    let (h_plain, h_cuda) = header();
    let (r_plain, r_cuda) = rust();
    same("part outside CUDA", &h_plain, &r_plain);
    same("CUDA part", &h_cuda, &r_cuda);
    // A parser that found nothing would pass vacuously.
    assert!(h_plain.len() >= 30, "{h_plain:?}");
    assert!(h_cuda.len() >= 8, "{h_cuda:?}");
}
