"""What every test process shares.

Each process compiles into an inductor cache of its own. pytest-xdist runs
the test files in two or more processes at once, and by default they share
`/tmp/torchinductor_<user>`. One CI run (2026-11-29) found a compiled plan
off the same compiled graphs run in one autograd graph in one gradient
(`test_rotor_plans_over_compiled_stages_equal_their_compiled_run_bitwise`,
`transformer.wte.weight`), while the file passed alone, twice. Shared
caches are the one state those processes have in common: kernels another
process compiled (some tests run torch on one thread, and inductor's CPU
reductions are cut by the thread count) are never reused here. A cache the
user sets is kept.
"""

import os
import tempfile

os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="remat-tests-inductor-"))
