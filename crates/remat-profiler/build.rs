//! With feature `torch`: compiles the C++ shim (src/shim/, its C API in
//! src/shim/remat_shim.h) against
//! $LIBTORCH and puts $LIBTORCH/lib on the binary's rpath, so it runs without
//! LD_LIBRARY_PATH (scripts/setup-libtorch.sh installs that libtorch).
//! With feature `cuda` as well: the shim's CUDA section (REMAT_CUDA), the
//! CUDA runtime headers of the pip wheel next to libtorch, and libtorch_cuda /
//! libc10_cuda linked even though Rust calls none of their symbols directly
//! (`--no-as-needed`: loading libtorch_cuda registers the CUDA backend).
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "torch")]
    torch_shim();
}

/// The shim's files, one concern each (src/shim/remat_shim.h says which).
#[cfg(feature = "torch")]
const SHIM: [&str; 6] = [
    "memory.cpp",
    "autograd.cpp",
    "saved.cpp",
    "storages.cpp",
    "cuda.cpp",
    "torchscript.cpp",
];

#[cfg(feature = "torch")]
fn torch_shim() {
    println!("cargo:rerun-if-changed=src/shim");
    println!("cargo:rerun-if-env-changed=LIBTORCH");
    let libtorch = std::env::var("LIBTORCH").unwrap_or_else(|_| {
        panic!("feature `torch` needs LIBTORCH set to a libtorch 2.13 folder (scripts/setup-libtorch.sh)")
    });
    let root = std::path::Path::new(&libtorch);
    let mut build = cc::Build::new();
    build
        .cpp(true)
        .files(SHIM.iter().map(|f| format!("src/shim/{f}")))
        .include("src/shim")
        .include(root.join("include"))
        .include(root.join("include/torch/csrc/api/include"))
        .flag("-std=c++17")
        .flag("-D_GLIBCXX_USE_CXX11_ABI=1")
        .warnings(false);
    #[cfg(feature = "cuda")]
    let cuda_lib = cuda_shim(root, &mut build);
    build.compile("remat_torch_shim");
    // The version pip wrote next to the library, for the chain's `source`.
    let version = std::fs::read_to_string(root.join("version.py"))
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| {
                l.strip_prefix("__version__ = ")?
                    .split('\'')
                    .nth(1)
                    .map(str::to_string)
            })
        })
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=REMAT_LIBTORCH_VERSION={version}");
    let lib = root.join("lib");
    println!("cargo:rustc-link-search=native={}", lib.display());
    println!("cargo:rustc-link-lib=dylib=torch_cpu");
    println!("cargo:rustc-link-lib=dylib=c10");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib.display());
    #[cfg(feature = "cuda")]
    {
        println!("cargo:rustc-link-search=native={}", cuda_lib.display());
        println!("cargo:rustc-link-arg=-Wl,--no-as-needed");
        println!("cargo:rustc-link-arg=-ltorch_cuda");
        println!("cargo:rustc-link-arg=-lc10_cuda");
        println!("cargo:rustc-link-arg=-l:libcudart.so.13");
        println!("cargo:rustc-link-arg=-Wl,--as-needed");
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", cuda_lib.display());
    }
}

/// The CUDA runtime of the pip wheels: `$LIBTORCH/../nvidia/cu13` (headers
/// and libcudart), or `$REMAT_CUDA_HOME` (include/ and lib/) when set, plus
/// the folders in `$REMAT_CUDA_INCLUDE` (`:`-separated; e.g. where pip put
/// the `nvidia-cuda-crt` wheel, whose crt/host_config.h cuda_runtime.h
/// includes). Returns the folder with libcudart.
#[cfg(feature = "cuda")]
fn cuda_shim(root: &std::path::Path, build: &mut cc::Build) -> std::path::PathBuf {
    println!("cargo:rerun-if-env-changed=REMAT_CUDA_HOME");
    println!("cargo:rerun-if-env-changed=REMAT_CUDA_INCLUDE");
    let home = std::env::var_os("REMAT_CUDA_HOME")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root.join("../nvidia/cu13"));
    let mut includes = vec![home.join("include")];
    if let Some(extra) = std::env::var_os("REMAT_CUDA_INCLUDE") {
        includes.extend(std::env::split_paths(&extra));
    }
    for (header, wheel) in [
        ("cuda_runtime_api.h", "nvidia-cuda-runtime"),
        ("crt/host_config.h", "nvidia-cuda-crt"),
    ] {
        if !includes.iter().any(|i| i.join(header).exists()) {
            panic!(
                "feature `cuda` needs the CUDA runtime headers: no {header} in {includes:?} \
                 (pip's {wheel} wheel next to torch, or set REMAT_CUDA_HOME / REMAT_CUDA_INCLUDE; docs/profiler.md)"
            );
        }
    }
    build.define("REMAT_CUDA", None);
    for i in &includes {
        build.include(i);
    }
    home.join("lib")
}
