//! Safe wrappers over the C++ shim (src/shim/, its C API in
//! src/shim/remat_shim.h, declared for Rust in `c_api`): the counting CPU allocator, backward from a
//! given gradient, taking a leaf's gradient out of it, and the storages a
//! stage's graph saved (moved to host memory and back for offload /
//! prefetch), and a^ℓ's storage released under every alias and restored.

use std::ffi::{c_int, c_void, CStr};
use tch::Tensor;

use super::c_api::*;

/// Installs the counting allocator, with oneDNN on (its memory goes through
/// c10, so it is counted) and NNPACK off (a workspace outside c10).
/// Idempotent; tensors allocated before keep their own allocator.
pub fn install() {
    // SAFETY: plain C call, idempotent.
    unsafe { remat_install_allocator() }
}

/// A reader of one of the shim's allocator counters (an atomic load).
macro_rules! counter {
    ($(#[$doc:meta])* $name:ident => $shim:ident) => {
        $(#[$doc])*
        pub fn $name() -> i64 {
            // SAFETY: reads an atomic.
            unsafe { $shim() }
        }
    };
}

counter!(
    /// Bytes of device (counted) memory now allocated by libtorch on the CPU.
    current => remat_current_bytes
);
counter!(
    /// The highest [`current`] since the last [`reset_peak`].
    peak => remat_peak_bytes
);
counter!(
    /// Every device byte libtorch holds, those booked outside included.
    total => remat_total_bytes
);
counter!(
    /// The highest [`total`] since the last [`reset_peak`].
    total_peak => remat_total_peak_bytes
);

/// Resets both [`peak`] and [`total_peak`] to the current levels.
pub fn reset_peak() {
    // SAFETY: stores an atomic.
    unsafe { remat_reset_peak() }
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

/// Makes autograd report every tensor it saves while a [`Storages`] set
/// records (an engine with default saved-tensor hooks; see src/shim/saved.cpp).
/// Idempotent; outside a recording autograd behaves as before.
pub fn install_saved_hooks() {
    // SAFETY: plain C call, idempotent.
    unsafe { remat_install_saved_hooks() }
}

fn last_error(what: &str) -> String {
    // SAFETY: a NUL-terminated thread-local string owned by the shim.
    let msg = unsafe { CStr::from_ptr(remat_last_error()) };
    format!("{what} failed: {}", msg.to_string_lossy())
}

/// A set of tensor storages that move together between device- and
/// host-booked memory: ā^ℓ (what autograd saved during F_all^ℓ, and the
/// output) or a^ℓ. Held weakly: autograd still frees them in B^ℓ.
pub struct Storages(*mut c_void);

impl Storages {
    pub fn new() -> Storages {
        // SAFETY: returns a fresh heap object that Drop frees.
        Storages(unsafe { remat_storages_new() })
    }

    /// Runs `f` (a recording forward) registering every saved tensor
    /// allocated while it runs — ā^ℓ without the parameters, buffers and
    /// the stage's input, which existed before.
    pub fn record<T>(&self, f: impl FnOnce() -> T) -> T {
        /// Ends the recording even if `f` panics, so the shim never keeps
        /// a pointer to a dropped set.
        struct End;
        impl Drop for End {
            fn drop(&mut self) {
                // SAFETY: plain C call.
                unsafe { remat_storages_record_end() }
            }
        }
        // SAFETY: self.0 is live; `End` stops the recording before `self`
        // can be dropped.
        unsafe { remat_storages_record_begin(self.0) };
        let _end = End;
        f()
    }

    /// Adds `t`'s storage (if allocated since the recording began).
    pub fn add(&self, t: &Tensor) {
        // SAFETY: both live; the shim takes a weak reference to the storage.
        unsafe { remat_storages_add(self.0, t.as_ptr() as *mut c_void) }
    }

    fn move_to(&self, host: bool) -> Result<u64, String> {
        // SAFETY: self.0 is live; the shim swaps DataPtrs of live storages.
        let n = unsafe { remat_storages_move(self.0, c_int::from(host)) };
        if n < 0 {
            Err(last_error(if host { "offload" } else { "prefetch" }))
        } else {
            Ok(n as u64)
        }
    }

    /// Moves every storage into host-booked memory, freeing its device
    /// bytes; returns the bytes moved.
    pub fn offload(&self) -> Result<u64, String> {
        self.move_to(true)
    }

    /// Moves every storage back into device-booked memory.
    pub fn prefetch(&self) -> Result<u64, String> {
        self.move_to(false)
    }
}

impl Default for Storages {
    fn default() -> Storages {
        Storages::new()
    }
}

impl Drop for Storages {
    fn drop(&mut self) {
        // SAFETY: allocated by remat_storages_new, freed once.
        unsafe { remat_storages_free(self.0) }
    }
}

/// R(a^ℓ) / R(ā^ℓ) at the storage level: frees the bytes of `t`'s storage
/// under every alias (the graph of stage ℓ+1 that saved a^ℓ included),
/// keeping the storage itself; returns the bytes freed. Nothing may read it
/// until [`restore`] puts values back (src/shim/storages.cpp, "Releasing a^ℓ at the
/// storage level").
pub fn discard(t: &Tensor) -> Result<u64, String> {
    // SAFETY: `t` is a live at::Tensor*; the shim swaps its storage's DataPtr.
    let n = unsafe { remat_storage_discard(t.as_ptr() as *mut c_void) };
    if n < 0 {
        Err(last_error("release"))
    } else {
        Ok(n as u64)
    }
}

/// What [`restore`] did with a released handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restored {
    /// Nothing but the released handle read its storage: drop it.
    Unread,
    /// The recomputed tensor's block moved into the released storage: keep
    /// the released handle, drop the recomputed one (now empty).
    Moved,
    /// The released storage reads the recomputed tensor's bytes: keep the
    /// recomputed tensor.
    Borrowed,
}

/// Puts the values of `fresh` (a^ℓ recomputed, or another device copy of
/// it) back under the storage [`discard`] emptied, without a copy: moving
/// `fresh`'s block when `allow_move` and nothing else holds it, else
/// borrowing its bytes. Fails when the two are not laid out alike.
pub fn restore(old: &Tensor, fresh: &Tensor, allow_move: bool) -> Result<Restored, String> {
    // SAFETY: both are live at::Tensor*; the shim swaps DataPtrs of their
    // storages and keeps the tensors themselves.
    let rc = unsafe {
        remat_storage_restore(
            old.as_ptr() as *mut c_void,
            fresh.as_ptr() as *mut c_void,
            c_int::from(allow_move),
        )
    };
    match rc {
        0 => Ok(Restored::Unread),
        1 => Ok(Restored::Moved),
        2 => Ok(Restored::Borrowed),
        _ => Err(last_error("restoring a released tensor")),
    }
}

/// Whether `a` and `b` share one storage.
pub fn same_storage(a: &Tensor, b: &Tensor) -> bool {
    // SAFETY: both are live at::Tensor*; the shim only reads them.
    unsafe { remat_same_storage(a.as_ptr() as *mut c_void, b.as_ptr() as *mut c_void) != 0 }
}
