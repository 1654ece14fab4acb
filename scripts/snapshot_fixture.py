#!/usr/bin/env python3
"""Writes a CUDA memory snapshot fixture for a plan, until a GPU records one.

The snapshot has PyTorch's structure — the dict
`torch.cuda.memory._snapshot()` returns (`segments`, `device_traces`,
`allocator_settings`; each trace entry an `action`, `addr`, `size`,
`stream`, `time_us` and `frames`) — and is pickled as
`torch.cuda.memory._dump_snapshot` pickles it (`pickle.dump`, Python's
default protocol). Its events replay the simulated step of the schedule
(`remat simulate --states --json`: each operation's span, the highest
memory while it ran, the memory once it ended) as a caching allocator
would record it: one block allocated at the operation's start for what it
adds, blocks freed (`free_requested`, then `free_completed`) at its end,
every block rounded up to 512 bytes as that allocator rounds, on a clock
`--speed` times faster than the prediction. So it is not a measurement:
it tests the reader and the overlay on Python's own pickle.

    python3 scripts/snapshot_fixture.py CHAIN SCHEDULE OUT.pickle [--remat target/release/remat]
"""

import argparse
import json
import pickle
import subprocess
import sys

BLOCK = 512


def rounded(size):
    return -(-size // BLOCK) * BLOCK


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("chain")
    ap.add_argument("schedule")
    ap.add_argument("out")
    ap.add_argument("--remat", default="target/release/remat")
    ap.add_argument("--speed", type=float, default=1.25,
                    help="recorded clock = predicted seconds / speed")
    args = ap.parse_args()
    sim = json.loads(subprocess.run(
        [args.remat, "simulate", args.chain, args.schedule, "--states", "--json"],
        capture_output=True, text=True, check=True).stdout)
    frames = [{"filename": "train.py", "line": 42, "name": "training_step"}]
    events = [{"action": "segment_alloc", "addr": 0x7F0000000000, "size": 2 << 30,
               "stream": 0, "time_us": 0, "frames": frames}]
    live = []  # (addr, size) of the blocks allocated since recording started
    next_addr = 0x7F0000000000
    level = 0  # bytes allocated since recording started

    def at(seconds):
        return int(round(seconds / args.speed * 1e6))

    def alloc(size, t):
        nonlocal next_addr, level
        block = rounded(size)
        events.append({"action": "alloc", "addr": next_addr, "size": block,
                       "stream": 0, "time_us": t, "frames": frames})
        live.append((next_addr, block))
        next_addr += block
        level += block

    def free_down_to(target, t):
        # Frees the most recent blocks first, splitting none: a caching
        # allocator frees whole blocks.
        nonlocal level
        while live and level - live[-1][1] >= target:
            addr, block = live.pop()
            for action in ("free_requested", "free_completed"):
                events.append({"action": action, "addr": addr, "size": block,
                               "stream": 0, "time_us": t, "frames": frames})
            level -= block

    # The simulator's levels include the initial state (a^0, δ^L), which
    # was allocated before recording started: the events hold the rest.
    base = sim["initial_bytes"]
    for s in sim["states"]:
        peak, after = s["peak_bytes"] - base, s["memory_bytes"] - base
        start = at(s["start_seconds"]) + 1
        end = max(at(s["end_seconds"]) - 1, start)
        if peak > level:
            alloc(peak - level, start)
        free_down_to(after, end)
    events.append({"action": "snapshot", "addr": 0, "size": 0, "stream": 0,
                   "time_us": events[-1]["time_us"], "frames": []})
    snapshot = {
        "segments": [],
        "device_traces": [events],
        "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1,
                               "garbage_collection_threshold": 0.0,
                               "expandable_segments": False},
    }
    with open(args.out, "wb") as f:
        pickle.dump(snapshot, f)
    print(f"wrote {args.out}: {len(events)} events, {len(sim['states'])} operations")
    return 0


if __name__ == "__main__":
    sys.exit(main())
