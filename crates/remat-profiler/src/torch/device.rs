//! The device a run measures on: everything device-specific on the Rust
//! side is here (the C++ side is the shim's `REMAT_CUDA` section).
//!
//! - memory: `ffi::current` / `peak` / … read the counting CPU allocator,
//!   or after [`Device::select`] with CUDA the caching allocator's device
//!   statistics (the shim dispatches; the interface is the same);
//! - tensors the nets create are placed with [`tch_device`];
//! - op times: a [`Timeline`] (the host clock around each op on the CPU,
//!   CUDA events at op boundaries on a GPU, read after the step);
//! - [`synchronize`], [`op_boundary`], [`bandwidth`] and the reserved peak.
//!
//! The device is chosen once per process (`select`), before any net is built.

use std::sync::OnceLock;
use std::time::Instant;

/// Where tensors live and how memory and time are measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Device {
    Cpu,
    #[cfg(feature = "cuda")]
    Cuda,
}

static SELECTED: OnceLock<Device> = OnceLock::new();

/// Why a device cannot be used.
#[derive(Debug)]
pub enum DeviceError {
    /// Built with CUDA, but no GPU is visible: the run cannot be done here.
    #[cfg(feature = "cuda")]
    NoGpu(String),
    /// A device other than the one this process selected first.
    Conflict { selected: Device, wanted: Device },
    /// CUDA failed to start (a driver error, …).
    #[cfg(feature = "cuda")]
    Other(String),
}

impl std::fmt::Display for DeviceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            #[cfg(feature = "cuda")]
            DeviceError::NoGpu(m) => write!(f, "--device cuda: {m}"),
            DeviceError::Conflict { selected, wanted } => write!(
                f,
                "--device: this process already measures on {}, cannot switch to {}",
                selected.name(),
                wanted.name()
            ),
            #[cfg(feature = "cuda")]
            DeviceError::Other(m) => write!(f, "--device: {m}"),
        }
    }
}

impl Device {
    pub fn name(self) -> &'static str {
        match self {
            Device::Cpu => "cpu",
            #[cfg(feature = "cuda")]
            Device::Cuda => "cuda",
        }
    }

    /// Makes this the process's device: installs the counting CPU allocator,
    /// or checks that a GPU is visible and points the memory interface at
    /// the CUDA caching allocator.
    pub fn select(self) -> Result<(), DeviceError> {
        // The engine that can record saved tensors becomes the default one
        // before any backward runs. libtorch starts an engine's GPU worker
        // queues once per process (a function-local once_flag shared by all
        // engines): an engine swapped in after the first CUDA backward would
        // have none, and its first backward fails an internal assert
        // ("device_ready_queues_"), as the first GPU run's offloading
        // schedule did. Outside a recording it saves as plain autograd.
        super::ffi::install_saved_hooks();
        match self {
            Device::Cpu => super::ffi::install(),
            #[cfg(feature = "cuda")]
            Device::Cuda => cuda::init()?,
        }
        let selected = *SELECTED.get_or_init(|| self);
        if selected != self {
            return Err(DeviceError::Conflict {
                selected,
                wanted: self,
            });
        }
        Ok(())
    }
}

/// The selected device (the CPU until one is selected).
pub fn current() -> Device {
    SELECTED.get().copied().unwrap_or(Device::Cpu)
}

/// The selected device as tch names it.
pub fn tch_device() -> tch::Device {
    match current() {
        Device::Cpu => tch::Device::Cpu,
        #[cfg(feature = "cuda")]
        Device::Cuda => tch::Device::Cuda(0),
    }
}

/// Waits until the device has done everything queued (nothing on the CPU);
/// on a GPU also frees the device blocks an offload left.
pub fn synchronize() -> Result<(), String> {
    match current() {
        Device::Cpu => Ok(()),
        #[cfg(feature = "cuda")]
        Device::Cuda => cuda::synchronize(),
    }
}

/// Called before each op: on a GPU, frees the device blocks whose offload
/// copy has finished (nothing on the CPU, where an offload frees at once).
pub fn op_boundary() -> Result<(), String> {
    match current() {
        Device::Cpu => Ok(()),
        #[cfg(feature = "cuda")]
        Device::Cuda => cuda::op_boundary(),
    }
}

/// The reserved-but-not-allocated peak: on a GPU, the caching allocator's
/// reserved peak minus the allocated peak (`total_peak`) since the last
/// `ffi::reset_peak`. None on the CPU, where there is no cache.
pub fn reserved_gap(total_peak: i64) -> Option<i64> {
    match current() {
        Device::Cpu => {
            let _ = total_peak;
            None
        }
        #[cfg(feature = "cuda")]
        Device::Cuda => Some(cuda::reserved_peak() - total_peak),
    }
}

/// The pinned host ↔ device copy rate (bytes/s), on a GPU; None on the CPU
/// (the caller measures the host copy rate there).
pub fn bandwidth() -> Result<Option<f64>, String> {
    match current() {
        Device::Cpu => Ok(None),
        #[cfg(feature = "cuda")]
        Device::Cuda => cuda::bandwidth().map(Some),
    }
}

/// Seconds of each op of a step, in order.
///
/// On the CPU the host clock around each op (what the code did before the
/// `cuda` feature). On a GPU the host only queues kernels, so the clock
/// would measure launches: an event is recorded on the compute stream at
/// each op boundary and the times are read after the step (times inside the
/// whole step, as the H100 reference chains were measured; docs/profiler.md).
pub struct Timeline {
    device: Device,
    started: Option<Instant>,
    seconds: Vec<f64>,
    /// Op boundaries on the GPU not read yet (the first is the first op's start).
    #[cfg(feature = "cuda")]
    marks: Vec<cuda::Event>,
}

impl Timeline {
    pub fn new() -> Timeline {
        Timeline {
            device: current(),
            started: None,
            seconds: Vec::new(),
            #[cfg(feature = "cuda")]
            marks: Vec::new(),
        }
    }

    /// An op starts.
    pub fn begin(&mut self) -> Result<(), String> {
        match self.device {
            Device::Cpu => self.started = Some(Instant::now()),
            #[cfg(feature = "cuda")]
            Device::Cuda => {
                // One event per boundary: the end of an op is the start of the next.
                if self.marks.is_empty() {
                    self.marks.push(cuda::Event::record()?);
                }
            }
        }
        Ok(())
    }

    /// The op that began last ends.
    pub fn end(&mut self) -> Result<(), String> {
        match self.device {
            Device::Cpu => {
                let start = self.started.take().expect("Timeline::end after begin");
                self.seconds.push(start.elapsed().as_secs_f64());
            }
            #[cfg(feature = "cuda")]
            Device::Cuda => self.marks.push(cuda::Event::record()?),
        }
        Ok(())
    }

    /// The seconds of every op so far (waits for the GPU).
    pub fn seconds(&mut self) -> Result<Vec<f64>, String> {
        #[cfg(feature = "cuda")]
        if self.marks.len() > 1 {
            for pair in self.marks.windows(2) {
                self.seconds.push(pair[0].seconds_to(&pair[1])?);
            }
            // The last boundary is where the next op starts.
            let last = self.marks.pop().expect("more than one mark");
            self.marks.clear();
            self.marks.push(last);
        }
        Ok(self.seconds.clone())
    }
}

impl Default for Timeline {
    fn default() -> Timeline {
        Timeline::new()
    }
}

/// The shim's CUDA section (src/shim/cuda.cpp, `REMAT_CUDA`).
#[cfg(feature = "cuda")]
mod cuda {
    use super::DeviceError;
    use std::ffi::{c_int, c_void, CStr};

    use crate::torch::c_api::*;

    fn last_error() -> String {
        // SAFETY: a NUL-terminated thread-local string owned by the shim.
        unsafe { CStr::from_ptr(remat_last_error()) }
            .to_string_lossy()
            .into_owned()
    }

    fn check(rc: c_int, what: &str) -> Result<(), String> {
        if rc == 0 {
            Ok(())
        } else {
            Err(format!("{what}: {}", last_error()))
        }
    }

    pub fn init() -> Result<(), DeviceError> {
        // SAFETY: plain C call; the shim catches every C++ exception.
        match unsafe { remat_cuda_init() } {
            0 => Ok(()),
            1 => Err(DeviceError::NoGpu(format!(
                "{}; this binary was built with CUDA but cannot run on this machine, use --device cpu",
                last_error()
            ))),
            _ => Err(DeviceError::Other(format!(
                "CUDA initialisation failed: {}",
                last_error()
            ))),
        }
    }

    pub fn synchronize() -> Result<(), String> {
        // SAFETY: plain C call; exceptions caught in the shim.
        check(unsafe { remat_cuda_synchronize() }, "CUDA synchronize")
    }

    pub fn op_boundary() -> Result<(), String> {
        // SAFETY: plain C call; exceptions caught in the shim.
        check(
            unsafe { remat_cuda_op_boundary() },
            "freeing offloaded blocks",
        )
    }

    pub fn reserved_peak() -> i64 {
        // SAFETY: reads allocator statistics.
        unsafe { remat_cuda_reserved_peak_bytes() }
    }

    /// A CUDA event recorded on the compute stream, destroyed on drop.
    pub struct Event(*mut c_void);

    impl Event {
        pub fn record() -> Result<Event, String> {
            // SAFETY: plain C call; exceptions caught in the shim.
            let e = unsafe { remat_cuda_mark() };
            if e.is_null() {
                Err(format!("CUDA event: {}", last_error()))
            } else {
                Ok(Event(e))
            }
        }

        /// Seconds from this event to `later` (waits for `later`).
        pub fn seconds_to(&self, later: &Event) -> Result<f64, String> {
            // SAFETY: both events are live until dropped.
            let s = unsafe { remat_cuda_elapsed(self.0, later.0) };
            if s < 0.0 {
                Err(format!("CUDA event times: {}", last_error()))
            } else {
                Ok(s)
            }
        }
    }

    impl Drop for Event {
        fn drop(&mut self) {
            // SAFETY: created by remat_cuda_mark, destroyed once.
            unsafe { remat_cuda_event_free(self.0) }
        }
    }

    /// 64 MiB round trips, median of 5 after a warm-up.
    pub fn bandwidth() -> Result<f64, String> {
        // SAFETY: plain C call; exceptions caught in the shim.
        let rate = unsafe { remat_cuda_bandwidth(64 << 20, 5) };
        if rate > 0.0 {
            Ok(rate)
        } else {
            Err(format!("pinned copy bandwidth: {}", last_error()))
        }
    }
}
