"""Predicted step time against measured, before and after calibration.

For each model (built as `remat-torch-measured.py` builds it, random
weights, --size small unless said), `describe_chain` runs twice in one
process: `calibrate=False` (the stages' times alone) and `calibrate=True`
(folded into whole steps: `remat_torch.calibration`). Each chain is solved
by the in-process solver (`remat_torch.solve`) at store-all and at rotor's
α = 0.5 and 0.1 of the way from M_low to M_high (the `remat` binary,
$REMAT_BIN, reports both); every plan runs through
`checkpointed` for --steps interleaved steps, and its median is set beside
both chains' predictions. The prediction used is each chain's own plan's
(the two chains may choose different plans at a budget).

    REMAT_BIN=target/ci/remat PYTHONPATH=.tools/libtorch:.tools/pydeps \\
        python3 scripts/time_calibration.py --models vit96,mlp34,gpt2,resnet18 --steps 7

(remat_torch installed by scripts/setup-python.sh: the solver is in it.)
`vit96`: timm's ViT-Tiny at 96 px, batch 16 (a step of ~200 ms here);
`mlp34`: 34 Linear layers of 64 with ReLUs, batch 32 (68 stages, a step of
a few ms), where the wrapper's work per operation is most of the time.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

here = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.join(here, "..", "python"))  # after an installed remat_torch (its solver)
import remat_torch  # noqa: E402

spec = importlib.util.spec_from_file_location("measured", os.path.join(here, "remat-torch-measured.py"))
measured = importlib.util.module_from_spec(spec)
spec.loader.exec_module(measured)


def build(name: str, size: str):
    if name == "vit96":
        import timm

        torch.manual_seed(0)
        model = timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=96, num_classes=10)
        x = torch.randn(16, 3, 96, 96)
        return model, x, torch.randint(0, 10, (16,)), F.cross_entropy
    if name == "mlp34":
        torch.manual_seed(0)
        layers = []
        for _ in range(33):
            layers += [torch.nn.Linear(64, 64), torch.nn.ReLU()]
        model = torch.nn.Sequential(*layers, torch.nn.Linear(64, 10))
        x = torch.randn(32, 64)
        return model, x, torch.randint(0, 10, (32,)), F.cross_entropy
    return measured.build(name, size, "cpu")


def bounds(chain) -> tuple:
    """(M_low, M_high) of `chain`, as `remat solve --json` reports them."""
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(chain, f)
        f.flush()
        p = subprocess.run([os.environ.get("REMAT_BIN", "target/ci/remat"), "solve", f.name, "-a", "store-all",
                            "-b", "100%", "--json"], capture_output=True, text=True, check=True)
    report = json.loads(p.stdout)
    return report["m_low_bytes"], report["m_high_bytes"]


def plans(chain):
    """(label, schedule) for store-all and rotor at α = 0.5 and 0.1 of the
    way from M_low to M_high."""
    out = [("store-all", remat_torch.solve(chain, "store-all", "100%"))]
    low, high = bounds(chain)
    for a in (0.5, 0.1):
        s = remat_torch.solve(chain, "rotor", int(low + a * (high - low)))
        if s is not None:
            out.append((f"rotor α={a}", s))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="vit,gpt2,resnet18,mlp34")
    ap.add_argument("--size", default="small")
    ap.add_argument("--steps", type=int, default=9)
    args = ap.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, load {os.getloadavg()[0]:.2f}")
    for name in args.models.split(","):
        model, batch, target, loss = build(name, args.size)
        model.train()
        chains = {}
        for cal in (False, True):
            t0 = time.perf_counter()
            chains[cal] = remat_torch.describe_chain(model, batch, target, loss=loss, repeat=args.steps,
                                                     calibrate=cal, progress=False)
            print(f"{name}: described (calibrate={cal}) in {time.perf_counter() - t0:.1f} s")
        rows = []
        for cal in (False, True):
            for label, sched in plans(chains[cal]):
                step = remat_torch.checkpointed(model, sched, loss=loss, chain=chains[cal])
                step.record_states = False
                rows.append((cal, label, sched, step))
        times = {i: [] for i in range(len(rows))}
        for r in range(args.steps + 1):
            for i, (_, _, _, step) in enumerate(rows):
                for p in model.parameters():
                    p.grad = None
                t0 = time.perf_counter()
                step(batch, target)
                if r:
                    times[i].append(time.perf_counter() - t0)
        stages = len(chains[True]["stages"])
        print(f"\n#### {name} ({stages} stages; load {os.getloadavg()[0]:.2f})\n")
        print("| chain | plan | predicted | measured (median) | predicted / measured |")
        print("|---|---|---:|---:|---:|")
        for i, (cal, label, sched, _) in enumerate(rows):
            pred = sched["predicted"]["makespan_seconds"]
            meas = statistics.median(times[i])
            what = "calibrated" if cal else "stages alone"
            print(f"| {what} | {label} | {1000 * pred:.2f} ms | {1000 * meas:.2f} ms | {pred / meas:.3f} |")
        print()


if __name__ == "__main__":
    main()
