//! With feature `torch`: compiles the C++ shim (src/shim.cpp) against
//! $LIBTORCH and puts $LIBTORCH/lib on the binary's rpath, so it runs without
//! LD_LIBRARY_PATH (scripts/setup-libtorch.sh installs that libtorch).
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "torch")]
    torch_shim();
}

#[cfg(feature = "torch")]
fn torch_shim() {
    println!("cargo:rerun-if-changed=src/shim.cpp");
    println!("cargo:rerun-if-changed=src/torchscript.cpp");
    println!("cargo:rerun-if-env-changed=LIBTORCH");
    let libtorch = std::env::var("LIBTORCH").unwrap_or_else(|_| {
        panic!("feature `torch` needs LIBTORCH set to a libtorch 2.13 folder (scripts/setup-libtorch.sh)")
    });
    let root = std::path::Path::new(&libtorch);
    cc::Build::new()
        .cpp(true)
        .file("src/shim.cpp")
        .file("src/torchscript.cpp")
        .include(root.join("include"))
        .include(root.join("include/torch/csrc/api/include"))
        .flag("-std=c++17")
        .flag("-D_GLIBCXX_USE_CXX11_ABI=1")
        .warnings(false)
        .compile("remat_torch_shim");
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
}
