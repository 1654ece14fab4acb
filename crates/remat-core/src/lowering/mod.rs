//! A plan lowered to what stock PyTorch and transformers run by
//! themselves — nested `torch.utils.checkpoint` regions (`pytorch`), the
//! forms judged and their fidelity (`lowered`), the Python to paste
//! (`code`) — each form judged by the simulator, so this layer sits above
//! `simulator` and `solvers` (it asks `sequential` for a baseline) and
//! below the CLI and the explorer.

pub mod code;
pub mod lowered;
pub mod pytorch;
