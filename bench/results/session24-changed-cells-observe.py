import sys, torch
from roundoff import corpus
from roundoff.capture import capture
from roundoff.observed import observe_compiled
from roundoff.execute.cpu_allocator import retain_freed_memory
retain_freed_memory()
for name in sys.argv[1:]:
    target = corpus.get(name).build("module", device="cpu")
    program = capture(target.fn, *target.inputs, backward=True)
    obs = observe_compiled(program, against="eager", partitioned=True, repeats=1)
    kinds = {}
    for k in obs.kernels:
        t = kinds.setdefault(k.kind, [0, 0]); t[0] += 1; t[1] += k.emulated_mismatch == 0
    print(name, "bit-identical to emulation by kind:", kinds)
    for k in obs.kernels:
        if k.emulated_mismatch and k.kind == "pointwise": print("   ", k.buffer, k.node_id, k.op, k.source, k.emulated_mismatch, k.cause)
