#!/usr/bin/env python3
"""Issue 44's table: rotor's certificate on long chains, before and after
refinement.

For chains of 100, 200 and 300 stages (a VGG-shaped chain whose sizes
share no useful unit, and a transformer stack of 4 stages per layer), at
five budgets from M_low to M_high, runs `remat solve -a rotor --json`
twice — `--refine 0` (the first grid's answer) and `--refine SECONDS` —
and prints one Markdown row per point: the gap to the optimum before and
after, the rounds and slots the refinement used, why it stopped, and the
wall time of each solve (one run each, this machine; quote ratios, not
absolutes).

    python3 scripts/certify_table.py [--remat target/release/remat] [--refine 30]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

MIB = 1 << 20


def vgg_shaped(n):
    """The browser tests' `syntheticChain`: sizes without a common unit."""
    stages = []
    for i in range(n):
        scale = 1 + (i % 7) / 3
        out = round(64 * MIB * scale / (1 + i // 60))
        last = i == n - 1
        stages.append({
            "name": f"block {i + 1}",
            "forward_seconds": 0.001 * (1 + (i % 5) / 4),
            "backward_seconds": 0.002 * (1 + (i % 5) / 4),
            "output_bytes": 4 if last else out,
            "saved_bytes": 8 if last else 2 * out,
        })
    return {"format": "remat-chain/1", "name": f"vgg-shaped {n}",
            "input_bytes": 32 * MIB, "stages": stages}


def transformer_stack(n):
    """n // 4 decoder layers of 4 stages (qkv, attention, projection, MLP),
    GPT-2-small-shaped at batch 4 × 1024 (a = 12 MiB of fp32 activations),
    times from their FLOPs; the head's logits at the end."""
    a = 4 * 1024 * 768 * 4
    tf = 1e-3  # seconds for one a-sized matmul's share of the layer
    layer = [
        ("qkv", 3 * a, 4 * a, 3 * tf),
        ("attention", a, 4 * a + a // 8, 2 * tf),
        ("projection", a, 2 * a, 1 * tf),
        ("mlp", a, 10 * a, 8 * tf),
    ]
    stages = []
    for i in range(n - 1):
        name, out, saved, f = layer[i % 4]
        stages.append({"name": f"layer {i // 4} {name}", "forward_seconds": f,
                       "backward_seconds": 2 * f, "output_bytes": out,
                       "saved_bytes": saved})
    stages.append({"name": "head", "forward_seconds": 12 * tf, "backward_seconds": 24 * tf,
                   "output_bytes": 4, "saved_bytes": a + 4 * 1024 * 50257 * 4})
    return {"format": "remat-chain/1", "name": f"transformer stack {n}",
            "input_bytes": a, "stages": stages}


def budget_points(stages, tmp, probe):
    """(chain, its file under `tmp`, budget, its share "k %" of M_high −
    M_low) for each chain of `stages` stages (VGG-shaped, then the
    transformer stack) at five budgets from M_low to M_high; `probe(path)`
    gives the chain's (M_low, M_high)."""
    for n in stages:
        for make in (vgg_shaped, transformer_stack):
            chain = make(n)
            path = os.path.join(tmp, f"{make.__name__}-{n}.json")
            with open(path, "w") as f:
                json.dump(chain, f)
            low, high = probe(path)
            for k in range(5):
                budget = low + (high - low) * k // 4
                yield chain, path, budget, f"{100 * (budget - low) / max(high - low, 1):.0f} %"


def solve(remat, path, budget, refine):
    start = time.perf_counter()
    out = subprocess.run([remat, "solve", path, "-a", "rotor", "-b", str(budget),
                          "--refine", str(refine), "--json"],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout), time.perf_counter() - start


def pct(x):
    return "—" if x is None else f"{100 * x:.2f} %"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--remat", default="target/release/remat")
    ap.add_argument("--refine", type=float, default=30.0)
    ap.add_argument("--stages", default="100,200,300")
    args = ap.parse_args()
    print(f"rotor, `--refine {args.refine:g}`; {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.2f}; one run per cell")
    print()
    print("| chain | budget | first grid: gap, time | refined: gap, time | rounds → slots | stopped |")
    print("|---|---:|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as tmp:
        def probe(path):
            answer, _ = solve(args.remat, path, "100%", 0)
            return answer["m_low_bytes"], answer["m_high_bytes"]

        stages = [int(x) for x in args.stages.split(",")]
        for chain, path, budget, share in budget_points(stages, tmp, probe):
            first, t0 = solve(args.remat, path, budget, 0)
            fine, t1 = solve(args.remat, path, budget, args.refine)
            r = fine.get("refined")
            rounds = (f"{len(r['rounds'])} → {r['rounds'][-1]['slots']}"
                      if r and r["rounds"] else "—")
            stop = r["stop"] if r else ("exact" if first["gap"] == 0 else "within target")
            print(f"| {chain['name']} | M_low + {share} | {pct(first['gap'])}, {t0:.1f} s "
                  f"| {pct(fine['gap'])}, {t1:.1f} s | {rounds} | {stop} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
