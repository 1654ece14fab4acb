//! Your GPUs: the example at another batch, sequence or precision; the
//! device's memory as the activation budget; the largest batch that fits.

mod device_budget;
mod max_batch;
mod scale_example;

pub use device_budget::DeviceMemoryCard;
pub use max_batch::MaxBatchPanel;
pub use scale_example::ScaleControls;
