//! The shim's C API (src/shim/remat_shim.h) declared for Rust, by
//! hand: `crates/remat-profiler/tests/c_api.rs` checks that both list the same
//! functions with the same number of parameters (the compiler checks each
//! C++ definition against the header). A tensor crosses as tch's raw
//! pointer (`*mut c_void`, the header's `at::Tensor*`); the safe wrappers
//! are in `ffi`, `torchscript` and `device`.

use std::ffi::{c_char, c_int, c_void};

extern "C" {
    pub(crate) fn remat_install_allocator();
    pub(crate) fn remat_current_bytes() -> i64;
    pub(crate) fn remat_peak_bytes() -> i64;
    pub(crate) fn remat_reset_peak();
    pub(crate) fn remat_total_bytes() -> i64;
    pub(crate) fn remat_total_peak_bytes() -> i64;
    pub(crate) fn remat_book_outside(bytes: i64);
    pub(crate) fn remat_storage_bytes(t: *mut c_void) -> i64;
    pub(crate) fn remat_set_host_mode(on: c_int);
    pub(crate) fn remat_last_error() -> *const c_char;
    pub(crate) fn remat_backward(out: *mut c_void, grad: *mut c_void) -> c_int;
    pub(crate) fn remat_take_grad(leaf: *mut c_void) -> *mut c_void;
    pub(crate) fn remat_install_saved_hooks();
    pub(crate) fn remat_storages_new() -> *mut c_void;
    pub(crate) fn remat_storages_free(set: *mut c_void);
    pub(crate) fn remat_storages_record_begin(set: *mut c_void);
    pub(crate) fn remat_storages_record_end();
    pub(crate) fn remat_storages_add(set: *mut c_void, t: *mut c_void);
    pub(crate) fn remat_storages_move(set: *mut c_void, to_host: c_int) -> i64;
    pub(crate) fn remat_storage_discard(t: *mut c_void) -> i64;
    pub(crate) fn remat_storage_restore(
        old: *mut c_void,
        fresh: *mut c_void,
        allow_move: c_int,
    ) -> c_int;
    pub(crate) fn remat_same_storage(a: *mut c_void, b: *mut c_void) -> c_int;
    pub(crate) fn remat_ts_last_error() -> *const c_char;
    pub(crate) fn remat_ts_new() -> *mut c_void;
    pub(crate) fn remat_ts_free(s: *mut c_void);
    pub(crate) fn remat_ts_add(
        s: *mut c_void,
        path: *const c_char,
        split: c_int,
        prefix: *const c_char,
    ) -> c_int;
    pub(crate) fn remat_ts_len(s: *mut c_void) -> i64;
    pub(crate) fn remat_ts_name(s: *mut c_void, i: i64) -> *const c_char;
    pub(crate) fn remat_ts_num_params(s: *mut c_void) -> i64;
    pub(crate) fn remat_ts_param_name(s: *mut c_void, k: i64) -> *const c_char;
    pub(crate) fn remat_ts_param(s: *mut c_void, k: i64) -> *mut c_void;
    pub(crate) fn remat_ts_forward(
        s: *mut c_void,
        i: i64,
        x: *mut c_void,
        target: *mut c_void,
    ) -> *mut c_void;
    pub(crate) fn remat_ts_write_example(path: *const c_char, dir: c_int) -> c_int;
}

#[cfg(feature = "cuda")]
extern "C" {
    pub(crate) fn remat_cuda_init() -> c_int;
    pub(crate) fn remat_cuda_synchronize() -> c_int;
    pub(crate) fn remat_cuda_op_boundary() -> c_int;
    pub(crate) fn remat_cuda_reserved_peak_bytes() -> i64;
    pub(crate) fn remat_cuda_mark() -> *mut c_void;
    pub(crate) fn remat_cuda_elapsed(a: *mut c_void, b: *mut c_void) -> f64;
    pub(crate) fn remat_cuda_event_free(e: *mut c_void);
    pub(crate) fn remat_cuda_bandwidth(bytes: i64, reps: c_int) -> f64;
}
