#[cfg(target_arch = "wasm32")]
fn main() {
    remat_explorer::run();
}

/// The explorer runs in a browser only (`scripts/explorer.sh`).
#[cfg(not(target_arch = "wasm32"))]
fn main() {}
