//! Breakpoint counts of rotor's exact table (issue 25): per chain family
//! and length, the breakpoints in all, in the largest cell and in C(1, L),
//! the table's memory against the 500-slot grid's, and the build time.
//!
//! `cargo run --release -p remat-core --example breakpoints [-- L1,L2,…]`

use remat_core::examples::{gpt2, synthetic, EXAMPLES};
use remat_core::solvers::no_progress;
use remat_core::solvers::persistent::{PersistentTable, StepTable, Variant};
use remat_core::{Chain, Stage};
use std::time::Instant;

/// A GPT-2-small-shaped stack of `layers` blocks, each split in two stages
/// (attention, MLP), between gpt2()'s embedding and head.
fn transformer(layers: usize) -> Chain {
    let base = gpt2();
    let block = &base.stages[1];
    let (b, s, h, heads) = (4u64, 1024u64, 768u64, 12u64);
    let sbh = s * b * h * 4;
    let attn_saved = 6 * sbh + b * heads * s * 4;
    let mlp_saved = 10 * sbh;
    let (f, bw) = (block.forward_seconds, block.backward_seconds);
    let mut stages = vec![base.stages[0].clone()];
    for i in 0..layers {
        stages.push(Stage::new(
            format!("attn {i}"),
            f / 3.0,
            bw / 3.0,
            sbh,
            attn_saved,
        ));
        stages.push(Stage::new(
            format!("mlp {i}"),
            2.0 * f / 3.0,
            2.0 * bw / 3.0,
            sbh,
            mlp_saved,
        ));
    }
    stages.push(base.stages[base.stages.len() - 1].clone());
    Chain {
        name: format!("transformer {layers}×2"),
        stages,
        ..base
    }
}

/// Chains longer than this are built only up to the grid's memory (the
/// planner's build); shorter ones also in full, whatever their size.
const FULL: usize = 100;

fn row(family: &str, chain: &Chain) {
    let n = chain.len();
    let grid = PersistentTable::table_bytes(n, 500) as f64;
    for variant in [Variant::Rotor, Variant::Revolve] {
        // What the planner does: the build limited to the grid's memory.
        let started = Instant::now();
        let limited = StepTable::build(chain, variant, grid as u64, &mut no_progress()).unwrap();
        let decided = started.elapsed().as_secs_f64();
        let started = Instant::now();
        let kept = limited.is_some();
        let full = match limited {
            Some(t) => Some(t),
            None if n <= FULL => {
                StepTable::build(chain, variant, u64::MAX, &mut no_progress()).unwrap()
            }
            None => None,
        };
        let secs = if full.is_some() && decided > 0.0 && n <= FULL {
            started.elapsed().as_secs_f64().max(decided)
        } else {
            decided
        };
        let name = format!("{variant:?}").to_lowercase();
        let fell = if !kept {
            format!("  falls back (decided in {decided:.3} s)")
        } else {
            String::new()
        };
        match full {
            Some(t) => {
                let s = t.stats();
                let cells = n * (n + 1) / 2;
                println!(
                    "{family:<22} {n:>4} {name:<7} {:>10} {:>8.1} {:>7} {:>6} {:>9.2} {:>9.2} {:>8.3}{fell}",
                    s.total,
                    s.total as f64 / cells as f64,
                    s.largest,
                    s.top,
                    t.memory_bytes() as f64 / (1 << 20) as f64,
                    grid / (1 << 20) as f64,
                    secs,
                );
            }
            None => {
                println!(
                "{family:<22} {n:>4} {name:<7} {:>10} {:>8} {:>7} {:>6} {:>9} {:>9.2} {:>8}{fell}",
                "—", "—", "—", "—", "—", grid / (1 << 20) as f64, "—"
            )
            }
        }
    }
}

fn main() {
    // `breakpoints write N FILE`: `remat bench`'s chain of N stages as a
    // remat-chain/1 file, to try `remat solve` on it.
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("write") {
        let n: usize = args[2].parse().unwrap();
        std::fs::write(&args[3], remat_core::format::write_chain(&synthetic(n))).unwrap();
        return;
    }
    let lengths: Vec<usize> = std::env::args()
        .nth(1)
        .map(|a| a.split(',').map(|x| x.parse().unwrap()).collect())
        .unwrap_or_else(|| vec![25, 50, 100, 200, 300, 339]);
    println!(
        "{:<22} {:>4} {:<7} {:>10} {:>8} {:>7} {:>6} {:>9} {:>9} {:>8}",
        "chain",
        "L",
        "variant",
        "total",
        "per cell",
        "largest",
        "C(1,L)",
        "MiB",
        "grid MiB",
        "build s"
    );
    for e in EXAMPLES {
        row(e.name, &e.chain());
    }
    for &n in &lengths {
        row("synthetic (bench)", &synthetic(n));
    }
    for layers in [12, 24, 48, 96] {
        row("transformer ×2/layer", &transformer(layers));
    }
}
