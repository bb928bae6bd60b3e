"""Cost of one sampled call of checking mode on issue 15's transformers Llama (CUDA): every call sampled.

``roundoff.compile(model, policy="eager", check="warn", sample_every=1)`` (asynchronous, synchronous,
plain fp64 reference) against the same compile unchecked, 20 steps each after 5 warm-up steps, plus a
profile of 3 sampled steps. The per-sample cost divided by ``sample_every`` steps is checking mode's
amortized overhead, free of the round-to-round noise of `bench/compile.py`'s interleaved medians.

    python bench/checking_sample_cost.py      (needs CUDA and transformers)
"""

import sys, time, torch
sys.path.insert(0, "bench")
import roundoff
from compile import build_llama, step_fn
module, x, size = build_llama("cuda")
torch._dynamo.config.recompile_limit = 64
def timeit(step, n):
    torch.cuda.synchronize(); t0 = time.perf_counter()
    for _ in range(n): step()
    torch.cuda.synchronize(); return (time.perf_counter() - t0) * 1e3 / n
for name, kw in [("unchecked", {}), ("every", dict(check="warn", sample_every=1)),
                 ("every_sync", dict(check="warn", sample_every=1, check_async=False)),
                 ("every_eager_ref", dict(check="warn", sample_every=1, check_reference="eager"))]:
    m = roundoff.compile(module, policy="eager", **kw)
    st = step_fn(m, module, x)
    for _ in range(5): st()
    if hasattr(m, "flush_checks"): m.flush_checks()
    t = timeit(st, 20)
    if hasattr(m, "flush_checks"): m.flush_checks()
    print(f"{name}: {t:.2f} ms/step", flush=True)
    if name == "every":
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(3): st()
            m.flush_checks(); torch.cuda.synchronize()
        print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=25, max_name_column_width=70))
        print(prof.key_averages().table(sort_by="self_cuda_time_total", row_limit=15, max_name_column_width=70))
