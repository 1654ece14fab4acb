"""Where Remat's run of a torch.compile peer's own configuration differs
from the peer (issue 41), measured side by side in one process.

Three steps of one model, alternating for --rounds rounds:

* the peer: `torch.compile(model)` at the partitioner's budget b, the
  loss eager after it (`peers.compiled`);
* by hand: the same configuration as Remat captures it — the whole model
  as one stage compiled at b, the loss a stage of its own run eagerly
  (`join_glue`, `merge` over every block, `loss_apart`; with --paths
  compiled on torch.compile's path, `paths="compiled"`) — the two stage graphs run
  one after the other in one autograd graph, no wrapper;
* `checkpointed`: Remat's store-all plan of that chain, as its plans run.

Prints each one's peak (the allocator's events, in the plain step's
convention, as `scripts/peers.py` reads the peers') and its median step,
then the peak the chain predicts for its store-all step in the same terms;
with --menu, the model stage beside the menu entry at b of the chain
compiled at 1.0 (what `scripts/peers.py`'s own configuration reads). Peer against by
hand is the capture (export's graph against dynamo's); by hand against
`checkpointed` is the wrapper.

    PYTHONPATH=.tools/libtorch:.tools/pydeps python3 scripts/peer_gap.py --model vit --budget 0.6
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import peers  # noqa: E402
import remat_torch  # noqa: E402
from remat_torch.calibration import store_all  # noqa: E402
from remat_torch.compiled import compiled_program, policy_name  # noqa: E402
from remat_torch.measure import Meter  # noqa: E402
from remat_torch.staging import make_program, model_loss  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="vit", help="one of scripts/peers.py's models")
    ap.add_argument("--budget", type=float, default=0.6, help="the partitioner's activation_memory_budget")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--paths", default="eager", choices=("compiled", "eager"),
                    help="the path captured where the model's code asks whether it is traced: torch.compile's "
                         "(as the peer runs) or eager's")
    ap.add_argument("--remat", default=os.environ.get("REMAT_BIN", "target/ci/remat"),
                    help="the remat binary that predicts the peaks")
    ap.add_argument("--menu", action="store_true",
                    help="also describe the chain compiled at 1.0 with menus and print its entry at --budget "
                         "beside the chain compiled at --budget (what scripts/peers.py's own configuration "
                         "reads) and both chains' predicted store-all peaks")
    args = ap.parse_args()
    if not 0.0 <= args.budget <= 1.0:
        raise SystemExit(f"--budget: expected a number between 0 and 1, got {args.budget}")
    if args.rounds < 1:
        raise SystemExit(f"--rounds: expected a whole number ≥ 1, got {args.rounds}")
    b = args.budget
    model, batch, target, loss, blocks = peers.build(args.model)
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    rng = torch.get_rng_state()

    def reset():
        torch.set_rng_state(rng)
        for p in params:
            p.grad = None

    def peak(step):
        reset()
        return Meter(torch.device("cpu")).measure(step)[2]

    # The chain's convention: the plain step's peak as plain_step_peak
    # reads it, over the same step's meter peak (the batch, a^0).
    plain = remat_torch.plain_step_peak(model, batch, target, loss)
    offset = plain["peak_bytes"] - peak(lambda: model_loss(model, loss, batch, target).backward())

    peer_model, _ = peers.compiled(model, b)
    joined = dict(merge=len(blocks), join_glue=True, loss_apart=True, paths=args.paths)
    program = compiled_program(make_program(model, batch, target, loss, "block", **joined), b)
    chain = remat_torch.describe_chain(model, batch, target, loss=loss, repeat=1, compile=b, progress=False,
                                       **joined)
    wrapper = remat_torch.checkpointed(model, store_all(len(chain["stages"])), loss=loss, chain=chain,
                                       compile=b, **joined)
    wrapper.record_states = False

    def by_hand():
        consts = program.constants(batch, target)
        h = None
        for l in range(1, len(program) + 1):
            h = program.run(l, h, consts)
        h.backward()

    steps = {
        "peer": lambda: model_loss(peer_model, loss, batch, target).backward(),
        "by hand": by_hand,
        "checkpointed": lambda: wrapper(batch, target),
    }
    for step in steps.values():  # warm up (and compile)
        reset()
        step()
    peaks = {k: peak(f) + offset for k, f in steps.items()}
    times = {k: [] for k in steps}
    for r in range(args.rounds):
        for k in (list(steps) if r % 2 == 0 else list(steps)[::-1]):
            reset()
            t = time.perf_counter()
            steps[k]()
            times[k].append(time.perf_counter() - t)
    reset()
    print(f"{args.model} at budget {b:g} ({torch.get_num_threads()} threads, load {os.getloadavg()[0]:.2f}; "
          f"{args.rounds} alternating rounds); Remat's chain predicts store-all at "
          f"{1000 * remat_torch.variants.store_all_seconds(chain):.1f} ms")
    for k in steps:
        print(f"  {k:13s} peak {peaks[k]:>12,d} B ({peaks[k] / 2**20:.2f} MiB); "
              f"step median {1000 * statistics.median(times[k]):.1f} ms")
    # The peaks above are in the plain step's terms; the chain's own hold
    # other step constants outside (`constant_bytes`): the same memory is
    # its peak plus `shift`.
    shift = plain["constant_bytes"] - chain["constant_bytes"]
    print(f"  predicted store-all peak of the chain compiled at {b:g}: "
          f"{store_all_peak(chain, args.remat) - shift:,d} B in those terms "
          f"(the chain's step constants {chain['constant_bytes']:,d} B, the plain step's "
          f"{plain['constant_bytes']:,d} B)")
    if args.menu:
        compare_menu(model, batch, target, loss, joined, chain, b, args.remat, shift)


def store_all_peak(chain, remat) -> int:
    """The simulator's store-all peak of `chain` (`peers.store_all`)."""
    with tempfile.TemporaryDirectory() as work:
        result = peers.store_all(chain, remat, os.path.join(work, "chain.json"))
    if result is None:
        raise SystemExit(f"{remat} solve refused the chain {chain['name']!r}")
    return result["peak_bytes"]


def compare_menu(model, batch, target, loss, joined, chain, b, remat, shift):
    """The model stage of the chain compiled at b beside the menu entry at
    b of the chain compiled at 1.0, field by field, and the store-all peak
    each predicts (`scripts/peers.py`'s `own_configuration` reads the
    latter)."""
    menu_chain = remat_torch.describe_chain(model, batch, target, loss=loss, repeat=1, compile=True,
                                            menu=[policy_name(b)], progress=False, **joined)
    stage = dict(menu_chain["stages"][0])
    entry = next((e for e in stage.pop("menu", []) if e["policy"] == policy_name(b)), None)
    if entry is None:
        print(f"  the chain compiled at 1.0 has no menu entry {policy_name(b)}")
        return
    at_b = chain["stages"][0]
    fields = ("saved_bytes", "backward_overhead_bytes", "forward_overhead_bytes", "input_freed_bytes",
              "output_bytes", "gradient_bytes", "parameter_gradient_bytes")
    own = peers.entry_as_f_all(stage, entry)
    print(f"  model stage: compiled at {b:g} | compiled at 1.0 | its menu entry at {b:g}")
    for f in fields:
        print(f"    {f:26s} {at_b.get(f, 0):>12,d} {stage.get(f, 0):>12,d} {own.get(f, 0):>12,d}")
    rest = [{k: x for k, x in s.items() if k != "menu"} for s in menu_chain["stages"][1:]]
    for s_b, s_1 in zip(chain["stages"][1:], rest):
        diff = {k: (s_b.get(k), s_1.get(k)) for k in set(s_b) | set(s_1)
                if not k.endswith("seconds") and s_b.get(k) != s_1.get(k)}
        if diff:
            print(f"    later stage differs: {diff}")
    made = dict(menu_chain, stages=[own] + rest)
    print(f"  predicted store-all peak with the menu entry made F_all: {store_all_peak(made, remat) - shift:,d} B")


if __name__ == "__main__":
    main()
