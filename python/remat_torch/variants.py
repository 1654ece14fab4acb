"""One model described several ways, its chains timed on one clock, and
the plan predicted fastest among them (issue 41).

How a model is cut and run changes what its step costs, not only what a
plan recomputes: blocks compiled one by one (torchtitan's way) or `merge`
blocks to a stage (the graph of a stage fuses across the boundaries of its
blocks: a block's residual add and dropout with the next block's norm),
the partitioner's budget for the graphs run without a menu option
(`compile=b`; on this project's CPU a 6-block GPT-2's store-all step over
stages of 3 blocks kept 102.6 MiB at budget 0.6 and 171.2 MiB at 1.0, at
the same speed), eager stages. Each
is a chain, and a plan is only as fast as the chain it was solved on.

`describe_variants` describes the model once per variant (each a dict of
`describe_chain`'s `merge`, `granularity`, `compile` and `menu`), then
times every variant's store-all step in the same interleaved rounds and
scales each chain's times (every stage's, every menu option's: one factor
per chain) so that its store-all step predicts that median. Described one
after the other, each chain's calibration (`remat_torch.calibration`) read
the machine minutes apart, and this machine drifts 10–15 % over minutes —
the size of the differences between variants; on one clock their
predictions compare.

`fastest` solves every chain at one budget and returns the plan predicted
fastest with the index of its variant: the plan Remat hands a user, chosen
before anything is timed. Run it with the variant's own arguments:

    variants = [{"merge": 1, "compile": True, "menu": True},
                {"merge": 6, "compile": 0.6, "menu": True}]
    chains = remat_torch.describe_variants(model, batch, target, variants, loss=fn)
    i, plan = remat_torch.fastest(chains, "120MiB")
    step = remat_torch.checkpointed(model, plan, loss=fn, chain=chains[i], **remat_torch.run_arguments(variants[i]))
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union


from . import calibration
from .batch import device_of
from .chain import describe_chain
from .measure import TrainingState
from .planning import ChainLike, constant_bytes, size_bytes, solve
from .schedule import parse_schedule

# The variants' store-all steps, timed in the same interleaved rounds: the
# calibration's own timer (a name of this module, so that a test can fix
# the rounds' medians without fixing each describe_chain's calibration).
_timed_together = calibration.interleaved

# The keywords of `describe_chain` a variant may set; the others
# (`repeat`, `check`, `set_to_none`, …) are common to all variants.
VARIANT_KEYS = ("merge", "join_glue", "loss_apart", "paths", "granularity", "compile", "menu")
# Of those, the ones `checkpointed` must be given the same.
RUN_KEYS = ("merge", "join_glue", "loss_apart", "paths", "granularity", "compile")


def check_variants(variants: Any) -> List[Dict[str, Any]]:
    """`variants` as a list of dicts, or ValueError naming the entry."""
    if isinstance(variants, Mapping) or not isinstance(variants, Sequence) or not variants:
        raise ValueError("variants: expected a non-empty list of dicts of describe_chain's "
                         f"{', '.join(VARIANT_KEYS)}, got {variants!r}")
    out = []
    for i, v in enumerate(variants):
        if not isinstance(v, Mapping):
            raise ValueError(f"variants[{i}]: expected a dict such as {{'merge': 2, 'compile': True}}, "
                             f"got {type(v).__name__}")
        unknown = sorted(set(v) - set(VARIANT_KEYS))
        if unknown:
            raise ValueError(f"variants[{i}].{unknown[0]}: not a variant's keyword (one of "
                             f"{', '.join(VARIANT_KEYS)}; pass the others to describe_variants itself)")
        out.append(dict(v))
    return out


def run_arguments(variant: Mapping[str, Any]) -> Dict[str, Any]:
    """The keywords `checkpointed` needs to run a plan of this variant's
    chain: its `merge`, `join_glue`, `loss_apart`, `paths`, `granularity`
    and `compile`."""
    return {k: variant[k] for k in RUN_KEYS if k in variant}


def store_all_seconds(chain: Mapping[str, Any]) -> float:
    """The store-all step's time the chain predicts: every F_all^ℓ and
    every B^ℓ once, one after the other (the simulator's makespan of
    store-all)."""
    return sum(s["forward_seconds"] + s["backward_seconds"] for s in chain["stages"])


def rescale(chain: Dict[str, Any], seconds: float) -> float:
    """Scales every time of `chain` in place (one factor) so that its
    store-all step predicts `seconds`; returns the factor."""
    predicted = store_all_seconds(chain)
    factor = seconds / predicted if predicted > 0 else 1.0
    calibration.apply(chain["stages"], factor, 0.0)
    return factor


def describe_variants(model, batch, target: Any = None, variants: Sequence[Mapping[str, Any]] = ({},), *,
                      loss: Optional[Callable] = None, repeat: int = 3,
                      **common: Any) -> List[Dict[str, Any]]:
    """One `remat-chain/1` dict per variant (module doc), their times on
    one clock: each chain's store-all step predicts the median of
    `repeat` interleaved rounds of every variant's store-all step, run by
    `checkpointed` as its plans will be. `common` goes to every
    `describe_chain` (`name`, `check`, `set_to_none`, …)."""
    variants = check_variants(variants)
    if not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 1:
        raise ValueError(f"repeat: expected a whole number ≥ 1, got {repeat!r}")
    clash = sorted(set(common) & set(VARIANT_KEYS))
    if clash:
        raise ValueError(f"{clash[0]}: give it in each variant, not to describe_variants")
    chains = [describe_chain(model, batch, target, loss=loss, repeat=repeat, **common, **v) for v in variants]
    steps = [_store_all_step(model, chain, loss, batch, target, v) for chain, v in zip(chains, variants)]
    # A chain whose menus are one stage's (the whole step as one stage,
    # `join_glue`; the whole model before its loss, `loss_apart`): each
    # option is a whole configuration of the step, timed as one beside the
    # others (index of its chain, its stage ℓ, option k ≥ 1, position of
    # its step).
    options: List[Tuple[int, int, int, int]] = []
    for i, (chain, v) in enumerate(zip(chains, variants)):
        l = menu_stage(chain)
        if l is not None:
            for k in range(1, len(chain["stages"][l - 1]["menu"]) + 1):
                options.append((i, l, k, len(steps)))
                steps.append(_store_all_step(model, chain, loss, batch, target, v, option=(l, k)))
    device = device_of(batch)
    params = [p for p in model.parameters() if p.requires_grad]
    state = TrainingState(params, list(model.buffers()), device)
    try:
        medians = _timed_together(steps, state.reset, lambda: calibration.sync(device), repeat)
    finally:
        state.restore()
    for i, (chain, seconds) in enumerate(zip(chains, medians)):
        factor = rescale(chain, seconds)
        chain["source"] += (f"; variant {i + 1} of {len(chains)} "
                            f"({', '.join(f'{k}={v!r}' for k, v in variants[i].items()) or 'the defaults'}), "
                            f"its times scaled by {factor:.4f} to its store-all step timed with the others' "
                            f"({repeat} interleaved rounds: {1000 * seconds:.2f} ms)")
    for i, l, k, at in options:
        entry = chains[i]["stages"][l - 1]["menu"][k - 1]
        entry["backward_extra_seconds"] = whole_step_extra(medians[at], medians[i])
    for i, l in sorted({(i, l) for i, l, _, _ in options}):
        chains[i]["source"] += (f"; the menu options of its stage {l}, the only stage with a "
                                "menu, timed as whole steps in the same rounds (each option's extra time: its "
                                "step's median over store-all's)")
    return chains


def menu_stage(chain: Mapping[str, Any]) -> Optional[int]:
    """ℓ when stage ℓ alone carries a menu, else None. Its options are then
    whole configurations of the step (the other stages run as store-all
    runs them), each timed as a whole step: measured inside the step, an
    option's extra time includes what running it changes around it, which
    the stage measured alone misses (the ViT's whole step compiled at 0.6
    against 1.0)."""
    with_menu = [l for l, s in enumerate(chain["stages"], start=1) if s.get("menu")]
    return with_menu[0] if len(with_menu) == 1 else None


def whole_step_extra(option_seconds: float, store_all_seconds: float) -> float:
    """Option k of the one stage ℓ with a menu: store-all with F_all^ℓ[k]
    is a whole step, and its extra time over store-all is the difference of
    the two steps' medians, timed in the same rounds (never below 0: an
    option is booked as costing more, and a faster one is read as equal)."""
    return max(0.0, option_seconds - store_all_seconds)


def fastest(chains: Sequence[ChainLike], budget: Union[str, int, float], algorithm: str = "rotor",
            bandwidth: Union[str, float, None] = None) -> Optional[Tuple[int, Dict[str, Any]]]:
    """(i, plan): the plan `algorithm` makes at `budget` on each chain, the
    one the simulator predicts fastest (the first on a tie), and the index
    of its chain; None when no chain has a schedule at this budget. A
    budget below a chain's least memory counts as no schedule there, since
    another variant may fit; ValueError only when it is below every
    chain's, or for bad input.

    The budget is in the first chain's terms (what `solve` on it reads).
    Chains of one model staged differently hold different step constants
    outside their memory (a table two stages read is a constant; inside
    one stage it is that stage's): where both chains say theirs
    (`constant_bytes`), chain i is solved at the same memory, `budget` +
    c_0 − c_i, and its plan's `budget` says so."""
    if isinstance(chains, (str, Mapping)) or not chains:
        raise ValueError("chains: expected a non-empty list of chains (describe_variants')")
    if isinstance(budget, str) and budget.strip().endswith("%"):
        # A share of M_high is another number of bytes on every chain.
        raise ValueError(f"budget: {budget!r} is a share of each chain's own M_high, which differ between "
                         "variants; give bytes, such as '120MiB'")
    constants = [constant_bytes(c) for c in chains]
    shifts = [0 if c is None or constants[0] is None else constants[0] - c for c in constants]
    if any(shifts):
        budget = size_bytes(budget)
    best: Optional[Tuple[int, Dict[str, Any]]] = None
    below: List[str] = []
    for i, chain in enumerate(chains):
        try:
            plan = solve(chain, algorithm, budget + shifts[i] if shifts[i] else budget, bandwidth)
        except ValueError as e:
            if "the least memory" not in str(e):
                raise
            below.append(f"chains[{i}]: {e}")
            continue
        if plan is None:
            continue
        if best is None or plan["predicted"]["makespan_seconds"] < best[1]["predicted"]["makespan_seconds"]:
            best = (i, plan)
    if best is None and len(below) == len(chains):
        raise ValueError("budget: below every chain's least memory — " + "; ".join(below))
    return best


def _store_all_step(model, chain: Dict[str, Any], loss, batch, target,
                    variant: Mapping[str, Any], option: Optional[Tuple[int, int]] = None) -> Callable[[], None]:
    """The store-all step of `chain` run by `checkpointed`; with `option`
    (ℓ, k), its F_all^ℓ runs menu option k."""
    from .runtime import checkpointed

    schedule = calibration.store_all(len(chain["stages"]))
    if option is not None:
        l, k = option
        schedule["ops"][l - 1]["option"] = k
    plan = parse_schedule(schedule)
    step = checkpointed(model, plan, loss=loss, chain=chain, **run_arguments(variant))
    step.record_states = False

    def run() -> None:
        step(batch, target)
    run.schedule = step.schedule  # what it runs, for the tests
    return run
