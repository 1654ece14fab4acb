"""What every test process shares.

Each process compiles into an inductor cache of its own (pytest-xdist runs
the test files in two or more processes at once, and by default they share
`/tmp/torchinductor_<user>`): kernels another process compiled with another
thread count are never reused here. A cache the user sets is kept. (This
was first thought to be why a compiled plan's `transformer.wte.weight`
gradient sometimes differed from its reference under `-n 2`; the cause was
inductor's atomic adds in the embedding backward, see test_compiled.py's
`deterministic` fixture.)
"""

import os
import tempfile

os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="remat-tests-inductor-"))
