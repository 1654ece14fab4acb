//! Everything that needs libtorch (feature `torch`).

pub mod c_api;
pub mod device;
pub mod ffi;
pub mod net;
pub mod nets;
pub mod profile;
pub mod runner;
pub mod timing;
pub mod torchscript;
