//! The pipeline place: the loaded chain cut into p ranks with m
//! micro-batches, each rank planned for its own micro-batches in flight
//! (`remat_core::pipeline`, the CLI's `remat pipeline`), beside one plan
//! for all ranks, and each rank's memory over its step: where rank 0's
//! peak comes from. Computed in the page (the per-rank plans of a chain of
//! up to [`ranks_card::MAX_STAGES`] stages take milliseconds).

mod ranks_card;

pub use ranks_card::PipelineCard;
