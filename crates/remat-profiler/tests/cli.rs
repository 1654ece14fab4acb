//! The `remat-profile` command line. Argument errors need no libtorch; the
//! rest (feature `torch`) profiles the tiny net, solves rotor schedules on
//! the measured chain and runs them for one step.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_remat-profile"))
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("the binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn bad_arguments_exit_2_naming_the_flag() {
    let o = run(&[
        "profile",
        "--model",
        "vgg",
        "--batch",
        "2",
        "-o",
        "/dev/null",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--model: unknown model \"vgg\""),
        "{}",
        stderr(&o)
    );
    let o = run(&[
        "profile",
        "--model",
        "vgg19",
        "--batch",
        "2",
        "--image",
        "40",
        "-o",
        "/dev/null",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--image"), "{}", stderr(&o));
    let o = run(&[
        "profile",
        "--model",
        "tiny",
        "--batch",
        "2",
        "--device",
        "tpu",
        "-o",
        "/dev/null",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--device"), "{}", stderr(&o));
    let o = run(&["models"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stdout).contains("vgg19"));
}

#[cfg(feature = "torch")]
mod torch {
    use super::*;
    use remat_core::format::{read_chain, write_schedule, Predicted, ScheduleFile};
    use remat_core::solvers::{max_useful_budget, solve, Algorithm, Options};
    use remat_core::Chain;

    fn tmp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("remat-profiler-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    fn schedule_file(chain: &Chain, fraction: f64, path: &Path) -> Option<u64> {
        let budget = (max_useful_budget(chain) as f64 * fraction) as u64;
        let s = solve(chain, Algorithm::Rotor, budget, &Options::default()).unwrap();
        let ops = s.ops?;
        let trace = remat_core::simulate(chain, &ops).unwrap();
        let file = ScheduleFile::new(
            chain,
            "rotor",
            budget,
            None,
            Predicted {
                makespan_seconds: trace.makespan_seconds,
                peak_bytes: trace.peak_bytes,
            },
            ops,
        );
        std::fs::write(path, write_schedule(&file)).unwrap();
        Some(budget)
    }

    /// How this can fail: a profiler that measures sizes another way than
    /// the runner executes them (numel × size, ā without the graph, o_b with
    /// δ^ℓ held) predicts a peak the run does not reach or exceeds; a runner
    /// that does not replay seeds or drops a gradient breaks
    /// gradients_match. No mutation has been tried on this test yet, and the
    /// tiny net has M_low = M_high (its conv workspaces dominate), so only
    /// budgets at or near store-all are feasible here.
    #[test]
    fn profiled_tiny_net_runs_rotor_schedules_as_predicted() {
        let chain_path = tmp("tiny.json");
        let o = run(&[
            "profile",
            "--model",
            "tiny",
            "--batch",
            "4",
            "--image",
            "16",
            "--steps",
            "3",
            "-o",
            chain_path.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("stage   1/4"),
            "progress per stage: {}",
            stderr(&o)
        );
        let chain = read_chain(&std::fs::read_to_string(&chain_path).unwrap()).unwrap();
        assert_eq!(chain.len(), 4);
        assert_eq!(chain.input_gradient_bytes, 0);
        assert!(
            chain.source.contains("model=tiny batch=4 image=16"),
            "{}",
            chain.source
        );
        // conv1 output: 4 × 8 × 16 × 16 floats, measured by the allocator.
        assert_eq!(chain.stage(1).output_bytes, 4 * 8 * 16 * 16 * 4);
        for fraction in [0.6, 0.9, 1.0] {
            let sched = tmp(&format!("s{fraction}.json"));
            let Some(budget) = schedule_file(&chain, fraction, &sched) else {
                continue;
            };
            let o = run(&[
                "run",
                "--chain",
                chain_path.to_str().unwrap(),
                "--schedule",
                sched.to_str().unwrap(),
                "--json",
            ]);
            assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
            let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            let measured = r["measured_peak_bytes"].as_u64().unwrap() as f64;
            let predicted = r["predicted_peak_bytes"].as_u64().unwrap() as f64;
            assert!(
                (measured / predicted - 1.0).abs() <= 0.03,
                "{fraction}: {r}"
            );
            assert!(measured <= budget as f64 * 1.03, "{fraction}: {r}");
            assert_eq!(r["gradients_match"], true, "{fraction}: {r}");
        }
        // A schedule for another chain is refused.
        let mut other = chain.clone();
        other.stages[0].forward_seconds *= 2.0;
        let sched = tmp("other.json");
        schedule_file(&other, 1.0, &sched).unwrap();
        let o = run(&[
            "run",
            "--chain",
            chain_path.to_str().unwrap(),
            "--schedule",
            sched.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    }
}
