#!/usr/bin/env python3
"""Issue 44: Remat's rotor against rotor's own C dynamic program, on the same
chains, in one run.

rotor's authors' C implementation of its DP ships today in Rockmate
(`rockmate.solvers.rk_rotor`, `solver.c`: the rotor recurrence with a menu
of options per block, `RkTable(chain, mmax).get_opt(m)` filling, top
down, the states one budget needs). This script downloads Rockmate's
source distribution from PyPI (`pip download --no-deps rockmate==2.0.0`,
or `--rockmate-sdist PATH`), compiles that one C file into a temporary
directory (nothing of it enters this repository), and times, for the
chains of `scripts/certify_table.py` (100, 200 and 300 stages: VGG-shaped,
and a transformer stack of 4 stages per layer) at five budgets from M_low
to M_high:

* Remat: `remat solve CHAIN -a rotor -b B --slots N --refine 0 --json`,
  the whole process (start, parse, the table for the budget, the read-out,
  the simulation of the schedule), wall time;
* rotor's C: the chain in slots of u = ⌊B / N⌋ bytes (sizes rounded up,
  as Remat's grid rounds them), `RkTable(chain, N)` and `get_opt(N)`, in
  this process, wall time.

Both on one thread, one run per cell (this machine is noisy: quote
ratios). The two DPs count memory slightly differently (Remat counts
δ^{ℓ−1} in B^ℓ and the no-grad transient of F_∅, as its docs say; the
chain is given to the C DP with those terms folded into its per-block
overheads), so the optima are printed side by side, not asserted equal.

    python3 scripts/rotor_c_bench.py [--remat target/ci/remat] [--slots 500]
"""

import argparse
import glob
import json
import math
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from certify_table import budget_points  # noqa: E402

ROCKMATE = "rockmate==2.0.0"
SOLVER = "src/rockmate/solvers/rk_rotor/solver.c"
SEQUENCE = "src/rockmate/solvers/rk_rotor/csequence.py"


def rockmate_sdist(tmp, given):
    """The path of Rockmate's source distribution: `given`, or downloaded."""
    if given:
        return given
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                    "-d", tmp, ROCKMATE], check=True, capture_output=True)
    return glob.glob(os.path.join(tmp, "rockmate-*.tar.gz"))[0]


def build_c_dp(sdist, tmp):
    """Compiles Rockmate's `solver.c` as `rockmate.solvers.rk_rotor.csolver`
    under `tmp` (the module imports its sibling `csequence` when loaded)."""
    with tarfile.open(sdist) as tar:
        top = tar.getnames()[0].split("/")[0]
        files = {SOLVER: None, SEQUENCE: None}
        for name in files:
            files[name] = tar.extractfile(f"{top}/{name}").read()
    package = os.path.join(tmp, "rockmate", "solvers", "rk_rotor")
    os.makedirs(package)
    for d in (os.path.join(tmp, "rockmate"), os.path.join(tmp, "rockmate", "solvers"), package):
        open(os.path.join(d, "__init__.py"), "w").close()
    with open(os.path.join(package, "csequence.py"), "wb") as f:
        f.write(files[SEQUENCE])
    source = os.path.join(tmp, "solver.c")
    with open(source, "wb") as f:
        f.write(files[SOLVER])
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    cc = os.environ.get("CC", "cc")
    subprocess.run([cc, "-O3", "-march=native", "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}",
                    source, "-o", os.path.join(package, "csolver" + suffix)], check=True)
    sys.path.insert(0, tmp)
    from rockmate.solvers.rk_rotor import csolver  # noqa: E402
    return csolver


class SlotChain:
    """A Remat chain in the C DP's terms, sizes in slots of `unit` bytes
    (rounded up). Block i is Remat's stage i + 1; index L is the loss the
    C DP appends (no time, no memory)."""

    def __init__(self, chain, unit):
        slots = lambda b: math.ceil(b / unit)
        stages = chain["stages"]
        L = len(stages)
        a = [chain["input_bytes"]] + [s["output_bytes"] for s in stages]
        delta = [chain["input_bytes"]] + [s.get("gradient_bytes", s["output_bytes"]) for s in stages]
        self.ln = L
        self.nb_sol = [1] * (L + 1)
        self.fw = [[s["forward_seconds"]] for s in stages] + [[0.0]]
        self.bw = [[s["backward_seconds"]] for s in stages] + [[0.0]]
        self.cw = [slots(x) for x in a] + [0]
        saved = [slots(s["saved_bytes"]) for s in stages]
        # The C DP holds the chain's last output in cw[L] and the last
        # block's ā without it.
        saved[-1] = max(saved[-1] - self.cw[L], 0)
        self.cbw = [[0]] + [[x] for x in saved] + [[0]]
        self.fwd_tmp = [[slots(s.get("forward_overhead_bytes", 0))] for s in stages] + [[0]]
        # Remat's B^ℓ also holds δ^ℓ and δ^{ℓ−1} beside a^{ℓ−1} and ā^ℓ.
        self.bwd_tmp = [[slots(s.get("backward_overhead_bytes", 0) + delta[i + 1] + delta[i])]
                        for i, s in enumerate(stages)] + [[0]]
        self.ff_fwd_tmp = [slots(s.get("forward_nograd_overhead_bytes",
                                       s.get("forward_overhead_bytes", 0))) for s in stages] + [0]
        self.ff_fw = [s.get("forward_nograd_seconds", s["forward_seconds"]) for s in stages] + [0.0]


def remat_solve(remat, path, budget, slots):
    start = time.perf_counter()
    out = subprocess.run([remat, "solve", path, "-a", "rotor", "-b", str(budget), "--slots", str(slots),
                          "--refine", "0", "--json"], capture_output=True, text=True, check=True,
                         env={**os.environ, "RAYON_NUM_THREADS": "1"})
    return json.loads(out.stdout), time.perf_counter() - start


def c_solve(csolver, chain, budget, slots):
    unit = max(budget // slots, 1)
    start = time.perf_counter()
    table = csolver.RkTable(SlotChain(chain, unit), slots)
    best = table.get_opt(slots)
    return best, time.perf_counter() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--remat", default="target/ci/remat")
    ap.add_argument("--slots", type=int, default=500)
    ap.add_argument("--stages", default="100,200,300")
    ap.add_argument("--rockmate-sdist", help="Rockmate's .tar.gz (else downloaded from PyPI)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        csolver = build_c_dp(rockmate_sdist(tmp, args.rockmate_sdist), tmp)
        print(f"rotor on {args.slots} slots; Remat `{args.remat}` (whole `remat solve`, `--refine 0`) "
              f"against rotor's C DP ({ROCKMATE}, `RkTable` + `get_opt`, "
              f"{shutil.which(os.environ.get('CC', 'cc'))} -O3); {os.cpu_count()} cores, "
              f"load {os.getloadavg()[0]:.2f}; one run per cell")
        print()
X | rotor's C: time | C / Remat "
              "| Remat's plan | C's optimum |")
        print("|---|---:|---|---:|---:|---:|---:|---:|")
        def probe(path):
            answer, _ = remat_solve(args.remat, path, "100%", args.slots)
            return answer["m_low_bytes"], answer["m_high_bytes"]

        fmt = lambda s: "infeasible" if s is None or math.isinf(s) else f"{1e3 * s:.2f} ms"
        stages = [int(x) for x in args.stages.split(",")]
        for chain, path, budget, share in budget_points(stages, tmp, probe):
            ours, t_ours = remat_solve(args.remat, path, budget, args.slots)
            theirs, t_c = c_solve(csolver, chain, budget, args.slots)
            grid = ours.get("predicted_seconds") if ours.get("feasible") else None
            memory = ours.get("memory", "?")
            if memory.startswith("grid:"):
                memory = f"grid, u = {int(memory[5:]) / 2**20:.2f} MiB"
            print(f"| {chain['name']} | M_low + {share} | {memory} | {t_ours:.2f} s | "
                  f"{t_c:.2f} s | {t_c / t_ours:.1f}× | {fmt(grid)} | {fmt(theirs)} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
