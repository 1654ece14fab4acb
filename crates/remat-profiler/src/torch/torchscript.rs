//! The user's own network from TorchScript (src/shim/torchscript.cpp): a scripted
//! `nn.Sequential` whose children are the stages, or one file per stage.
//! The conventions are in `user_model`; the parameters go into the net's
//! VarStore so that gradients are zeroed and compared as for built-in nets.

use super::net::{Net, StageFn};
use crate::arg_error::ArgError;
use crate::user_model::{Target, TorchScript};
use std::ffi::{c_int, c_void, CStr, CString};
use std::rc::Rc;
use tch::{nn, Device, Kind, Tensor};

use super::c_api::*;

fn ts_error() -> String {
    // SAFETY: a NUL-terminated thread-local string owned by the shim.
    unsafe { CStr::from_ptr(remat_ts_last_error()) }
        .to_string_lossy()
        .into_owned()
}

fn c_path(p: &std::path::Path) -> Result<CString, String> {
    CString::new(p.to_string_lossy().as_bytes())
        .map_err(|_| format!("{}: a path with a NUL byte", p.display()))
}

/// The loaded stages (owned by the shim).
struct Stages(*mut c_void);

impl Drop for Stages {
    fn drop(&mut self) {
        // SAFETY: allocated by remat_ts_new, freed once.
        unsafe { remat_ts_free(self.0) }
    }
}

impl Stages {
    fn load(ts: &TorchScript) -> Result<Stages, String> {
        // The graph executor's optimizations profile the first calls of each
        // method and then specialize it: the first steps would be slower and
        // could allocate differently from later ones, so a chain measured in
        // a few steps would not describe the run. Without them TorchScript
        // interprets each stage's graph the same way on every call.
        tch::jit::set_graph_executor_optimize(false);
        // SAFETY: a fresh object that Drop frees.
        let s = Stages(unsafe { remat_ts_new() });
        for (i, f) in ts.files.iter().enumerate() {
            let path = c_path(f)?;
            let prefix = if ts.split {
                String::new()
            } else {
                format!("stage_{:03}.", i + 1)
            };
            let prefix = CString::new(prefix).expect("no NUL");
            // SAFETY: live object and NUL-terminated strings.
            let rc =
                unsafe { remat_ts_add(s.0, path.as_ptr(), c_int::from(ts.split), prefix.as_ptr()) };
            if rc != 0 {
                return Err(format!("cannot load {}: {}", f.display(), ts_error()));
            }
        }
        Ok(s)
    }

    fn len(&self) -> usize {
        // SAFETY: live object.
        unsafe { remat_ts_len(self.0) as usize }
    }

    fn name(&self, i: usize) -> String {
        // SAFETY: i < len; the string lives as long as the object.
        unsafe { CStr::from_ptr(remat_ts_name(self.0, i as i64)) }
            .to_string_lossy()
            .into_owned()
    }

    fn parameters(&self) -> Vec<(String, Tensor)> {
        // SAFETY: live object.
        let n = unsafe { remat_ts_num_params(self.0) };
        (0..n)
            .map(|k| {
                // SAFETY: k < n; the shim returns a new at::Tensor* that tch owns.
                unsafe {
                    let name = CStr::from_ptr(remat_ts_param_name(self.0, k))
                        .to_string_lossy()
                        .into_owned();
                    (name, Tensor::from_ptr(remat_ts_param(self.0, k) as *mut _))
                }
            })
            .collect()
    }

    fn forward(&self, i: usize, x: &Tensor, target: Option<&Tensor>) -> Result<Tensor, String> {
        let t = target.map_or(std::ptr::null_mut(), |t| t.as_ptr() as *mut c_void);
        // SAFETY: live object and tensors; the shim only reads them and
        // returns a new at::Tensor* (or null with the error set).
        let out = unsafe { remat_ts_forward(self.0, i as i64, x.as_ptr() as *mut c_void, t) };
        if out.is_null() {
            Err(ts_error())
        } else {
            // SAFETY: a new tensor that tch now owns.
            Ok(unsafe { Tensor::from_ptr(out as *mut _) })
        }
    }
}

fn input_fn(ts: &TorchScript) -> Box<dyn Fn() -> Tensor> {
    let shape = ts.input_shape.clone();
    match ts.vocab {
        Some(v) => {
            Box::new(move || Tensor::randint(v, shape.as_slice(), (Kind::Int64, Device::Cpu)))
        }
        None => Box::new(move || Tensor::randn(shape.as_slice(), (Kind::Float, Device::Cpu))),
    }
}

fn target_tensor(ts: &TorchScript) -> Option<Tensor> {
    match ts.target {
        Target::None => None,
        // The labels are the input batch's tokens: the same values as a^0
        // (the same seed as `Net::input`), held apart from it like any
        // target, so that a schedule that frees or offloads a^0 leaves them.
        Target::Input => {
            tch::manual_seed(0x5eed);
            Some(input_fn(ts)())
        }
        Target::Classes(n) => {
            tch::manual_seed(43);
            Some(Tensor::randint(
                n,
                [ts.input_shape[0]],
                (Kind::Int64, Device::Cpu),
            ))
        }
    }
}

/// The user's network as a [`Net`]: a stage per child (or file), the
/// parameters in its VarStore, the target fixed when it is built.
pub fn build(ts: &TorchScript) -> Result<Net, String> {
    let stages = Rc::new(Stages::load(ts)?);
    let vs = nn::VarStore::new(Device::Cpu);
    for (name, t) in stages.parameters() {
        let trainable = t.requires_grad();
        let _ = vs.root().add(&name.replace('.', "_"), t, trainable);
    }
    let n = stages.len();
    let target = target_tensor(ts);
    let mut fns: Vec<(String, StageFn)> = Vec::with_capacity(n);
    for i in 0..n {
        let s = Rc::clone(&stages);
        let name = s.name(i);
        let t = if i + 1 == n {
            target.as_ref().map(Tensor::shallow_clone)
        } else {
            None
        };
        let label = name.clone();
        fns.push((
            name,
            Box::new(move |x: &Tensor| {
                // Checked once before (check): a failure now is a bug.
                s.forward(i, x, t.as_ref())
                    .unwrap_or_else(|e| panic!("TorchScript stage {label} failed: {e}"))
            }),
        ));
    }
    Ok(Net::from_parts(vs, fns, input_fn(ts)))
}

/// Loads the model and runs one no-grad forward on its input, so that a bad
/// file, a shape the stages do not take, or a last stage that does not
/// return the loss exits 2 naming the flag.
pub fn check(ts: &TorchScript) -> Result<(), ArgError> {
    super::ffi::install();
    let flag = if ts.split {
        "--torchscript"
    } else {
        "--torchscript-dir"
    };
    let err = |flag: &'static str, message: String| ArgError { flag, message };
    let stages = Stages::load(ts).map_err(|e| err(flag, e))?;
    let n = stages.len();
    let target = target_tensor(ts);
    tch::manual_seed(0x5eed);
    let mut x = input_fn(ts)();
    let mut inputs: Vec<Tensor> = Vec::with_capacity(n);
    let stage = |i: usize| format!("stage {} (\"{}\")", i + 1, stages.name(i));
    for i in 0..n {
        let t = if i + 1 == n { target.as_ref() } else { None };
        if i > 0 && !x.is_floating_point() {
            // F_all runs a stage on its input as a leaf that requires grad,
            // and B^ℓ hands δ^{ℓ-1} back through it: only floats can.
            return Err(err(
                flag,
                format!(
                    "{} takes the output of {}, which is {:?}, not floating point: only the first stage \
                     may take integers (tokens); put the two in one stage",
                    stage(i),
                    stage(i - 1),
                    x.kind()
                ),
            ));
        }
        inputs.push(x.shallow_clone());
        let before = x.copy();
        let y = tch::no_grad(|| stages.forward(i, &x, t));
        if y.is_ok() && !x.equal(&before) {
            // A schedule recomputes a stage from its kept input: the input
            // must be the same afterwards.
            return Err(err(
                flag,
                format!(
                    "{} writes its input in place: a stage's input must not be modified (a schedule \
                     recomputes the stage from it); {}",
                    stage(i),
                    if i == 0 {
                        "make the operation out-of-place"
                    } else {
                        "move the in-place operation into the previous stage, or make it out-of-place"
                    }
                ),
            ));
        }
        drop(before);
        x = y.map_err(|e| {
            if let Some(kind) = e.strip_suffix(", not a tensor").and_then(|m| m.rsplit(' ').next()) {
                return err(
                    flag,
                    format!("{} returns a {kind}, not one tensor: a stage maps one tensor to one tensor", stage(i)),
                );
            }
            let which = if i + 1 == n {
                format!(
                    "the last stage (\"{}\", called as forward(x{})) failed (check --target, and --input-shape)",
                    stages.name(i),
                    if t.is_some() { ", target" } else { "" }
                )
            } else {
                format!(
                    "stage {} (\"{}\") failed on the input of --input-shape {:?}",
                    i + 1,
                    stages.name(i),
                    ts.input_shape
                )
            };
            // A missing or unexpected target shows as an argument error.
            let about_target = e.contains("target") || e.contains("argument");
            let flag = if i + 1 == n && about_target {
                "--target"
            } else {
                "--input-shape"
            };
            err(flag, format!("{which}: {}", essential(&e)))
        })?;
    }
    // The recording forward runs a stage on a leaf that requires grad (its
    // backward is measured from there): an in-place first operation
    // (`ReLU(inplace=True)` at the top of a stage) fails on it, which the
    // no-grad pass above cannot see. Refused here, naming the stage, rather
    // than in the middle of the measurement (it was a panic, exit 101).
    for (i, input) in inputs.iter().enumerate().skip(1) {
        if !input.is_floating_point() {
            continue;
        }
        let t = if i + 1 == n { target.as_ref() } else { None };
        let leaf = input.detach().set_requires_grad(true);
        let recorded = tch::with_grad(|| stages.forward(i, &leaf, t));
        if let Ok(y) = &recorded {
            if !y.requires_grad() {
                return Err(err(
                    flag,
                    format!(
                        "{}'s output does not depend on its input through autograd (it is detached, \
                         or computed without grad): its backward could not hand δ to the stage before",
                        stage(i)
                    ),
                ));
            }
        }
        if let Err(e) = recorded {
            let why = if e.contains("in-place") || e.contains("inplace") {
                "writes its input in place: a stage's input must not be modified in place (the \
                 profiler measures the stage's backward from it, and a schedule may recompute or \
                 share it); move the in-place operation into the previous stage, or make it \
                 out-of-place"
            } else {
                "failed when recording its graph"
            };
            return Err(err(
                flag,
                format!(
                    "stage {} (\"{}\") {why}: {}",
                    i + 1,
                    stages.name(i),
                    essential(&e)
                ),
            ));
        }
    }
    if x.numel() == 1 && !x.double_value(&[]).is_finite() {
        return Err(err(
            "--target",
            format!(
                "the last stage (\"{}\") returned a loss of {} on the input of --input-shape",
                stages.name(n - 1),
                x.double_value(&[])
            ),
        ));
    }
    if x.numel() != 1 {
        return Err(err(
            "--target",
            format!(
                "the last stage (\"{}\") returned shape {:?}, not the loss (a scalar)",
                stages.name(n - 1),
                x.size()
            ),
        ));
    }
    Ok(())
}

/// The line of a libtorch error that says what went wrong: TorchScript
/// puts it last ("RuntimeError: …") after the failing code; other errors
/// have it first, with a C++ backtrace after it.
fn essential(e: &str) -> &str {
    e.lines()
        .rev()
        .find(|l| l.contains("Error: "))
        .or_else(|| e.lines().next())
        .unwrap_or(e)
        .trim()
}

/// Writes the example model (the tiny net as TorchScript, for 3×16×16 images
/// and 10 classes): a Sequential file, or stage files in a folder.
pub fn write_example(path: &std::path::Path, dir: bool) -> Result<(), String> {
    let p = c_path(path)?;
    // SAFETY: a NUL-terminated path.
    if unsafe { remat_ts_write_example(p.as_ptr(), c_int::from(dir)) } != 0 {
        return Err(format!("cannot write {}: {}", path.display(), ts_error()));
    }
    Ok(())
}
