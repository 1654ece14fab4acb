//! Peers: steps of the same model measured another way than a plan of the
//! chain — the knobs a user already has (torch.compile's memory budget,
//! selective checkpointing, transformers' switch) — carried by a chain so
//! that the page can draw them beside the planners' curves
//! (`scripts/peers.py` writes them). They change no plan: outside the
//! digest, like `name` and `source`.

use super::error::ChainError;

/// The most peers a chain may carry (a figure's worth).
pub const MAX_PEERS: usize = 64;

/// One measured step.
#[derive(Clone, Debug, PartialEq)]
pub struct Peer {
    /// What ran ("torch.compile, budget 0.6").
    pub name: String,
    /// Its measured peak, in the chain's convention (a^0 and everything the
    /// step holds; parameters and their gradients outside).
    pub peak_bytes: u64,
    /// Its measured step time.
    pub seconds: f64,
    /// Whether its gradients were those of a plain step (checked by the
    /// measurer); a peer that trains on wrong gradients is drawn as such.
    pub gradients_right: bool,
}

/// Checks every peer; the error names the first bad field (`peers[2].seconds`).
pub fn validate(peers: &[Peer]) -> Result<(), ChainError> {
    if peers.len() > MAX_PEERS {
        return Err(ChainError::new(
            "peers",
            format!(
                "{} peers is more than the {MAX_PEERS} a chain may carry",
                peers.len()
            ),
        ));
    }
    for (i, p) in peers.iter().enumerate() {
        let field = |f: &str| format!("peers[{i}].{f}");
        if p.name.trim().is_empty() {
            return Err(ChainError::new(field("name"), "must say what ran"));
        }
        if !p.seconds.is_finite() || p.seconds <= 0.0 {
            return Err(ChainError::new(
                field("seconds"),
                format!("must be a finite time above 0, got {}", p.seconds),
            ));
        }
        if p.peak_bytes == 0 {
            return Err(ChainError::new(field("peak_bytes"), "must be above 0"));
        }
    }
    Ok(())
}
