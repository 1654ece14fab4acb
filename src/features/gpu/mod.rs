//! Your GPUs: the example at another batch, sequence or precision; the
//! device's memory as the activation budget; the largest batch that fits.

mod device;
mod max_batch;
mod scale;

pub use device::DeviceMemoryCard;
pub use max_batch::MaxBatchPanel;
pub use scale::ScaleControls;
