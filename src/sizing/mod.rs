//! How big a step is on a real device: GPU memory − model state − margin
//! = the activation budget (`device_memory`), and a built-in example at
//! another batch, sequence length or precision (`scaling`).

pub mod device_memory;
pub mod scaling;
