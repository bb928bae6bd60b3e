"""Where a warm every-node check's time goes on CUDA (cProfile of one call after a warm-up), for issue 15.

    PYTHONPATH=$PWD/src:$PWD:$PWD/bench python bench/gpu/profile_every_node.py [SIZE]   (default 1024:512:1:4)
"""

from __future__ import annotations

import cProfile
import pstats
import sys
import time

import torch

from check import _setup  # bench/check.py: the same workload and calls as its check-every-node item

size = sys.argv[1] if len(sys.argv) > 1 else "1024:512:1:4"
calls = _setup("llama", size, "cuda")
run = calls["check-every-node"]
run()
torch.cuda.synchronize()
start = time.perf_counter()
run()
torch.cuda.synchronize()
print(f"warm every-node check: {time.perf_counter() - start:.3f} s")
prof = cProfile.Profile()
prof.enable()
run()
torch.cuda.synchronize()
prof.disable()
stats = pstats.Stats(prof)
stats.sort_stats("cumulative").print_stats(30)
stats.sort_stats("tottime").print_stats(20)
