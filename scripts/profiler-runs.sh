#!/usr/bin/env bash
# Measured chains against executed schedules, on the CPU (issue 10's table).
#
# Builds remat and remat-profile (feature torch), profiles each network
# (default: tiny, resnet18, vgg19 and resnet50 at sizes that run in minutes on
# two cores), solves rotor at 40 / 60 / 90 % of M_high, at M_low itself where
# 40 % is below it, store-all (100 %), and pofo at 60 / 75 / 90 % with the
# chain's measured copy rate (its transfers run), runs every schedule for one
# training step with `remat-profile run --json`, and prints a markdown table:
# predicted against measured peak and time, and whether the parameter
# gradients equal a plain step's.
#
# Usage: scripts/profiler-runs.sh [OUT_DIR]      (default target/profiler-runs)
#   MODELS="name:batch:px ..."  networks and sizes (default below)
#   STEPS=N                     timed steps of `profile` (default 5)
#   REPROFILE=1                 profile again even if OUT_DIR has the chain
# Needs libtorch (scripts/setup-libtorch.sh; LIBTORCH defaults to .tools/).
# Exit 1 if a run fails, its peak is off by more than 3 % or above the budget
# by more than 3 %, or its gradients differ.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${LIBTORCH:=$PWD/.tools/libtorch/torch}"
export LIBTORCH
[ -d "$LIBTORCH/lib" ] || { echo "LIBTORCH=$LIBTORCH has no lib/ (run scripts/setup-libtorch.sh)" >&2; exit 2; }
out="${1:-target/profiler-runs}"
models="${MODELS:-tiny:4:16 resnet18:8:96 vgg19:4:32 resnet50:8:64}"
steps="${STEPS:-5}"
mkdir -p "$out"

cargo build --release -q -p remat-cli -p remat-profiler --features remat-profiler/torch
remat=target/release/remat
prof=target/release/remat-profile
rows="$out/rows.jsonl"
: >"$rows"

for spec in $models; do
  IFS=: read -r name batch px <<<"$spec"
  chain="$out/cpu-$name-b$batch-${px}px.json"
  if [ ! -f "$chain" ] || [ "${REPROFILE:-0}" = 1 ]; then
    echo "== profile $name batch $batch ${px}px" >&2
    "$prof" profile --model "$name" --batch "$batch" --image "$px" --steps "$steps" -o "$chain"
  fi
  "$remat" solve "$chain" -a rotor -b 100% --json >"$out/$name.limits.json"
  read -r m_low m_high < <(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["m_low_bytes"], d["m_high_bytes"])' "$out/$name.limits.json")
  plans="rotor:40% rotor:60% rotor:90% store-all:100% pofo:60% pofo:75% pofo:90%"
  # Where 40 % is below M_low, rotor's least budget is run as well.
  if python3 -c 'import sys; sys.exit(0 if int(sys.argv[1]) > 0.4 * int(sys.argv[2]) else 1)' "$m_low" "$m_high"; then
    plans="$plans rotor:$m_low"
  fi
  for plan in $plans; do
    algo="${plan%%:*}"
    b="${plan#*:}"
    tag="${b%\%}"
    [ "$b" = "$m_low" ] && tag="mlow"
    base="$out/$name-$algo-$tag"
    rm -f "$base.json" "$base.run.json"
    # A budget below the chain's floor is refused (exit 2, the reason on stderr).
    "$remat" solve "$chain" -a "$algo" -b "$b" --json -o "$base.json" >"$base.solve.json" 2>"$base.solve.err" || true
    if [ -f "$base.json" ]; then
      echo "== run $name $algo at $b" >&2
      "$prof" run --chain "$chain" --schedule "$base.json" --json >"$base.run.json"
    fi
    python3 - "$name b$batch ${px}px" "$algo" "$b" "$m_low" "$m_high" "$base.solve.json" "$base.run.json" "$base.solve.err" >>"$rows" <<'EOF'
import json, os, sys
net, algo, budget_arg, m_low, m_high, solve, run, err = sys.argv[1:]
text = open(solve).read()
if text.strip():
    s = json.loads(text)
else:
    pct = float(budget_arg.rstrip("%")) / 100 if budget_arg.endswith("%") else None
    s = {"budget_bytes": round(pct * int(m_high)) if pct else int(budget_arg),
         "detail": open(err).read().strip().splitlines()[-1].removeprefix("error: ")}
r = json.load(open(run)) if os.path.exists(run) else None
print(json.dumps({"net": net, "algo": algo, "budget_arg": budget_arg, "m_low": int(m_low), "m_high": int(m_high), "solve": s, "run": r}))
EOF
  done
done

python3 - "$rows" <<'EOF'
import json, sys
mib = lambda b: f"{b / 2**20:.3f}"
print("| network | schedule | budget | predicted peak (MiB) | measured peak (MiB) | error | predicted time (s) | measured time (s) | offloaded predicted / measured (MiB) | gradients_match |")
print("|---|---|---|---:|---:|---:|---:|---:|---:|---|")
bad = []
for line in open(sys.argv[1]):
    row = json.loads(line)
    s, r = row["solve"], row["run"]
    arg = row["budget_arg"]
    pct = 100 * s["budget_bytes"] / row["m_high"]
    algo = row["algo"]
    label = algo if algo == "store-all" else (f"{algo} at M_low" if not arg.endswith("%") else f"{algo} {arg}")
    budget = f"{mib(s['budget_bytes'])} MiB ({pct:.1f} % of M_high)"
    if r is None:
        print(f"| {row['net']} | {label} | {budget} | — | — | — | — | — | — | infeasible: {s['detail']} (rotor's M_low is {100 * row['m_low'] / row['m_high']:.1f} % of M_high) |")
        continue
    m, p = r["measured_peak_bytes"], r["predicted_peak_bytes"]
    err = m / p - 1
    print(f"| {row['net']} | {label} | {budget} | {mib(p)} | {mib(m)} | {100 * err:+.2f} % | {r['predicted_seconds']:.3f} | {r['measured_seconds']:.3f} | {mib(r['offloaded_bytes'])} / {mib(r['measured_offloaded_bytes'])} | {str(r['gradients_match']).lower()} |")
    if abs(err) > 0.03 or m > 1.03 * s["budget_bytes"] or not r["gradients_match"]:
        bad.append(f"{row['net']} {label}")
if bad:
    print("\nFAILED (peak off by more than 3 %, above the budget, or gradients differ): " + ", ".join(bad), file=sys.stderr)
    sys.exit(1)
EOF
