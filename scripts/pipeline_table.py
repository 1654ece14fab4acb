"""Per-rank plans against one plan for every rank, measured side by side
under `torch.distributed.pipelining` (gloo, CPU): the table of
docs/pytorch.md, "Pipelines".

    PYTHONPATH=python:.tools/libtorch:.tools/pydeps REMAT_BIN=target/release/remat \\
        python3 scripts/pipeline_table.py [--ranks 4] [--share 0.45]

A transformers GPT-2 (python/tests/pipeline_worker.py's stage modules) is
described once, planned by `remat pipeline` for each rank's own
micro-batches in flight and, for comparison, every rank as rank 0 (one
plan for all, what a single setting gives), at the same budget per rank:
a share of rank 0's store-all peak. Each rank then runs the step without
a plan, with its per-rank plan and with the uniform plan: the first two
steps measured by the allocator's events (the peak), the next ones timed.
Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import sys
import tempfile
from pathlib import Path

import torch.multiprocessing as mp

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python" / "tests"))

import pipeline_worker as w  # noqa: E402
from remat_torch.pipeline import describe_pipeline, plan_pipeline  # noqa: E402


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_main(rank, ranks, port, setup, variants, steps, out):
    import os

    import torch
    import torch.distributed as dist

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=ranks)
    try:
        got = {}
        for name, plans in variants.items():
            dist.barrier()
            r = w.train(rank, ranks, setup, plans, steps=steps)
            got[name] = {"peak": r["peaks"][1], "seconds": r["seconds"], "losses": r["losses"]}
        Path(out, f"rank{rank}.json").write_text(json.dumps(got))
    finally:
        dist.destroy_process_group()


def knobs_against_plans(a, setup, stages, chain, split):
    """torchtitan's knobs on every rank (checkpoint every block; every
    `--every`-th block) against Remat's per-rank plans solved at each
    knob's *measured* peak on each rank, all timed in interleaved rounds
    in one process group: the "beat the knobs" table of docs/pytorch.md."""
    nth = {2: "2nd", 3: "3rd"}.get(a.every, f"{a.every}th")
    knobs = {"torchtitan full (every block)": {"knob": 1},
             f"torchtitan selective (every {nth} block)": {"knob": a.every}}
    # 1. Each knob's peak per rank (the allocator's events are exact: two
    # steps suffice).
    with tempfile.TemporaryDirectory() as out:
        mp.start_processes(rank_main, args=(a.ranks, _port(), setup, knobs, 2, out), nprocs=a.ranks,
                           join=True, start_method="spawn")
        peaks = [json.loads(Path(out, f"rank{r}.json").read_text()) for r in range(a.ranks)]
    variants = {"plain": None, **knobs}
    solved = {}
    for name in knobs:
        budgets = [peaks[r][name]["peak"] for r in range(a.ranks)]
        plans = plan_pipeline(chain, split, a.microbatches, budgets)
        solved[name] = plans
        if all(r.schedule is not None for r in plans.ranks):
            variants[f"Remat at {name}"] = plans
    # 2. Every variant, `--rounds` rounds, each its `--steps` steps in turn.
    rounds = []
    for _ in range(a.rounds):
        with tempfile.TemporaryDirectory() as out:
            mp.start_processes(rank_main, args=(a.ranks, _port(), setup, variants, a.steps, out),
                               nprocs=a.ranks, join=True, start_method="spawn")
            rounds.append([json.loads(Path(out, f"rank{r}.json").read_text()) for r in range(a.ranks)])
    kib = lambda b: f"{b / 1024:,.0f}"  # noqa: E731
    step = lambda name: statistics.median(  # noqa: E731
        [t for got in rounds for t in got[0][name]["seconds"]])
    print(f"\nThe knobs against Remat at their measured peaks ({a.rounds} rounds × {a.steps - 2} timed steps, "
          f"medians of rank 0's step; every variant in each round):\n")
    print("| knob | rank | knob's peak (KiB) | Remat predicted / measured peak (KiB) | Remat recomputes |")
    print("|---|---:|---:|---|---|")
    for name in knobs:
        plans = solved[name]
        for r in range(a.ranks):
            row = plans.report["per_rank"]["ranks"][r]
            key = f"Remat at {name}"
            measured = rounds[0][r][key]["peak"] if key in rounds[0][r] else None
            print(f"| {name} | {r} | {kib(peaks[r][name]['peak'])} | "
                  + (f"{kib(row['judged']['peak_bytes'])} / {kib(measured)} | "
                     f"{recomputed(row['ops'], row['first_stage'])} |" if measured is not None and row["ops"]
                     else "none fits | |"))
    print()
    print("| variant | pipeline step (ms, median) | / the knob's |")
    print("|---|---:|---:|")
    print(f"| plain (no checkpointing) | {1e3 * step('plain'):.1f} | |")
    for name in knobs:
        print(f"| {name} | {1e3 * step(name):.1f} | |")
        key = f"Remat at {name}"
        if key in variants:
            print(f"| {key} | {1e3 * step(key):.1f} | {step(key) / step(name):.3f}× |")
    same = all(got[r][k]["losses"] == got[r]["plain"]["losses"]
               for got in rounds for r in range(a.ranks) for k in got[r])
    print(f"\nlosses bitwise equal to the plain pipeline in every variant and round: {same}")


def recomputed(ops, first):
    seen = {}
    for op in ops or []:
        if op["op"] != "backward":
            seen[op["stage"]] = seen.get(op["stage"], 0) + 1
    again = [str(s + first - 1) for s, n in sorted(seen.items()) if n > 1]
    return ", ".join(again) or "none"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--microbatches", type=int, default=8)
    ap.add_argument("--share", type=float, default=0.45)
    ap.add_argument("--steps", type=int, default=7)
    ap.add_argument("--knobs", action="store_true",
                    help="instead: torchtitan's knobs against Remat at their measured peaks")
    ap.add_argument("--every", type=int, default=2, help="with --knobs: the selective knob's N")
    ap.add_argument("--rounds", type=int, default=3, help="with --knobs: interleaved rounds")
    a = ap.parse_args()
    setup = {"layers": a.layers, "width": a.width, "batch": a.batch, "seq": a.seq,
             "microbatches": a.microbatches, "schedule": "1f1b"}
    stages = w.parts(a.layers, a.width, a.ranks)
    ids, target = w.batch(a.batch, a.seq)
    micro = a.batch // a.microbatches
    chain, split = describe_pipeline(stages, ids[:micro], target[:micro], loss=w.loss_fn, repeat=3)
    if a.knobs:
        return knobs_against_plans(a, setup, stages, chain, split)
    roomy = plan_pipeline(chain, split, a.microbatches, 1 << 40)
    budget = int(roomy.ranks[0].report["judged"]["peak_bytes"] * a.share)
    plans = plan_pipeline(chain, split, a.microbatches, budget, compare_uniform=True)
    uniform = plans.report["uniform"]
    variants = {"plain": None, "per_rank": plans}
    if all(r["ops"] is not None for r in uniform["ranks"]):
        from remat_torch.pipeline import PipelinePlans, RankPlan

        variants["uniform"] = PipelinePlans(
            split=plans.split, microbatches=plans.microbatches, schedule=plans.schedule, report=plans.report,
            ranks=[RankPlan(rank=r.rank, chain=r.chain, report=u,
                            schedule=dict(r.schedule or {}, ops=u["ops"]) if u["ops"] else None)
                   for r, u in zip(plans.ranks, uniform["ranks"])])
    with tempfile.TemporaryDirectory() as out:
        mp.start_processes(rank_main, args=(a.ranks, _port(), setup, variants, a.steps, out), nprocs=a.ranks,
                           join=True, start_method="spawn")
        got = [json.loads(Path(out, f"rank{r}.json").read_text()) for r in range(a.ranks)]
    kib = lambda b: f"{b / 1024:,.0f}"  # noqa: E731
    print(f"GPT-2 {a.layers} blocks × {a.width}, batch {a.batch} × {a.seq} in {a.microbatches} micro-batches, "
          f"{a.ranks} ranks (split {split}), 1F1B, gloo on the CPU; budget {kib(budget)} KiB per rank "
          f"({a.share:.0%} of rank 0's store-all peak)\n")
    print("| rank | in flight | plan | recomputes | predicted peak (KiB) | measured peak (KiB) | "
          "plain peak (KiB) | step (ms, median) |")
    print("|---:|---:|---|---|---:|---:|---:|---:|")
    for name, rows in (("per-rank", plans.report["per_rank"]["ranks"]), ("one for all", uniform["ranks"])):
        key = "per_rank" if name == "per-rank" else "uniform"
        for r, row in enumerate(rows):
            if key not in got[r] or row["ops"] is None:
                print(f"| {r} | {row['in_flight']} | {name} | none fits | | | | |")
                continue
            m = got[r][key]
            print(f"| {r} | {row['in_flight']} | {name} | {recomputed(row['ops'], row['first_stage'])} | "
                  f"{kib(row['judged']['peak_bytes'])} | {kib(m['peak'])} "
                  f"({m['peak'] / row['judged']['peak_bytes'] - 1:+.1%}) | {kib(got[r]['plain']['peak'])} | "
                  f"{1e3 * statistics.median(m['seconds']):.1f} |")
    plain = statistics.median(got[0]["plain"]["seconds"])
    print(f"\nplain pipeline step {1e3 * plain:.1f} ms; predicted step (Remat, transfers not counted): "
          f"per-rank {1e3 * plans.report['per_rank']['makespan_seconds']:.1f} ms, one for all "
          + (f"{1e3 * uniform['makespan_seconds']:.1f} ms" if uniform["makespan_seconds"] else "does not fit"))
    same = all(got[r][k]["losses"] == got[r]["plain"]["losses"] for r in range(a.ranks) for k in got[r])
    print(f"losses bitwise equal to the plain pipeline in every variant: {same}")


if __name__ == "__main__":
    main()
