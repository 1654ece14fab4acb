//! The C++ shim (src/shim.cpp): the counting CPU allocator, backward from a
//! given gradient, and taking a leaf's gradient out of it.

use std::ffi::{c_int, c_void, CStr};
use tch::Tensor;

extern "C" {
    fn remat_install_allocator();
    fn remat_current_bytes() -> i64;
    fn remat_peak_bytes() -> i64;
    fn remat_reset_peak();
    fn remat_total_bytes() -> i64;
    fn remat_total_peak_bytes() -> i64;
    fn remat_book_outside(bytes: i64);
    fn remat_storage_bytes(t: *mut c_void) -> i64;
    fn remat_set_host_mode(on: c_int);
    fn remat_last_error() -> *const std::ffi::c_char;
    fn remat_backward(out: *mut c_void, grad: *mut c_void) -> c_int;
    fn remat_take_grad(leaf: *mut c_void) -> *mut c_void;
}

/// Installs the counting allocator, with oneDNN on (its memory goes through
/// c10, so it is counted) and NNPACK off (a workspace outside c10).
/// Idempotent; tensors allocated before keep their own allocator.
pub fn install() {
    // SAFETY: plain C call, idempotent.
    unsafe { remat_install_allocator() }
}

/// Bytes of device (counted) memory now allocated by libtorch on the CPU.
pub fn current() -> i64 {
    // SAFETY: reads an atomic.
    unsafe { remat_current_bytes() }
}

/// The highest [`current`] since the last [`reset_peak`].
pub fn peak() -> i64 {
    // SAFETY: reads an atomic.
    unsafe { remat_peak_bytes() }
}

/// Resets both [`peak`] and [`total_peak`] to the current levels.
pub fn reset_peak() {
    // SAFETY: stores an atomic.
    unsafe { remat_reset_peak() }
}

/// Every device byte libtorch holds, those booked outside included.
pub fn total() -> i64 {
    // SAFETY: reads an atomic.
    unsafe { remat_total_bytes() }
}

/// The highest [`total`] since the last [`reset_peak`].
pub fn total_peak() -> i64 {
    // SAFETY: reads an atomic.
    unsafe { remat_total_peak_bytes() }
}

/// Books `bytes` outside the device count ([`current`], [`peak`]), or back
/// into it when negative; [`total`] is unchanged. Parameter gradients are
/// booked so: they are outside the chain, like the weights.
pub fn book_outside(bytes: i64) {
    // SAFETY: updates atomics.
    unsafe { remat_book_outside(bytes) }
}

/// The bytes the allocator gave `t`'s storage (0 if undefined).
pub fn storage_bytes(t: &Tensor) -> u64 {
    // SAFETY: `t` is a live at::Tensor*; the shim only reads it.
    let b = unsafe { remat_storage_bytes(t.as_ptr() as *mut c_void) };
    b.max(0) as u64
}

/// Runs `f` with allocations counted as host memory (offloaded copies).
pub fn on_host<T>(f: impl FnOnce() -> T) -> T {
    // SAFETY: stores an atomic.
    unsafe { remat_set_host_mode(1) };
    let out = f();
    // SAFETY: stores an atomic.
    unsafe { remat_set_host_mode(0) };
    out
}

/// B: back-propagates `grad` (δ^ℓ) through `out`'s graph. Both handles are
/// emptied first, so autograd frees a^ℓ and the saved tensors as it goes.
pub fn backward(mut out: Tensor, mut grad: Tensor) -> Result<(), String> {
    // SAFETY: both pointers are live at::Tensor* owned by tch; the shim
    // moves their contents out and leaves undefined tensors, which tch frees.
    let rc = unsafe {
        remat_backward(
            out.as_mut_ptr() as *mut c_void,
            grad.as_mut_ptr() as *mut c_void,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        // SAFETY: a NUL-terminated thread-local string owned by the shim.
        let msg = unsafe { CStr::from_ptr(remat_last_error()) };
        Err(format!("backward failed: {}", msg.to_string_lossy()))
    }
}

/// The leaf's `.grad`, moved out of it (None when it has none).
pub fn take_grad(leaf: &mut Tensor) -> Option<Tensor> {
    // SAFETY: `leaf` is a live at::Tensor*; the shim returns a new one that
    // tch then owns.
    let g =
        unsafe { Tensor::from_ptr(remat_take_grad(leaf.as_mut_ptr() as *mut c_void) as *mut _) };
    g.defined().then_some(g)
}
