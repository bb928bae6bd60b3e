"""Session 30 diagnostic: why Inductor stores a value of bench/observe.py's transformers Llama (one joint graph,
as observe compiles it without --partitioned) that the inductor-gpu plan computes again in its readers. For
each wanted node: every ``StorageBox.realize`` of a pointwise buffer holding it, with the Inductor function
that asked (``mark_reuse``, ``realize_hint``, a lowering...), its users, loads and op count; and the plan's
size rules for the node (`roundoff.plan.realize._realized_on_loads`). Usage:
``python bench/gpu/session30_realize.py n464 [...]``."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import torch
from torch._inductor import ir

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from real_model_fidelity import build

from roundoff.capture import capture
from roundoff.capture.program import base_id
from roundoff.execute.run import complete_inputs
from roundoff.observed.taps import compile_program
from roundoff.plan import plan, realize
from roundoff.plan.partitioner import custom_id
from roundoff.plan.shared import plan_pair


def main(wanted: list[str]) -> None:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    module, ids = build(128, 2, 64, "eager", device)
    program = capture(module, ids, backward=True, name="llama")

    for n in program.nodes():
        if base_id(n.meta.get("roundoff_id", "")) in wanted:
            print(f"graph {n.meta['roundoff_id']} {n.target}: users", [
                (u.meta.get("roundoff_id"), str(u.target), [str(w.target) for w in u.users]) for u in n.users])
    rules = realize._realized_on_loads

    def logged(n, reused, by_id, stored, cpp):
        out = rules(n, reused, by_id, stored, cpp)
        if base_id(n.id) in wanted:
            loads = realize._loads(n, by_id, stored)
            print(f"plan {n.id} {n.op} backward={n.backward} reused={reused} loads={loads} "
                  f"ops={realize._ops(n, by_id, stored, loads)} stored={out}")
        return out

    realize._realized_on_loads = logged
    p, _ = plan_pair(program, "inductor-gpu", "eager", functools.partial(plan, joint=True))  # as observe plans it
    realize._realized_on_loads = rules
    print("plan stores:", sorted(i for i in p.decisions if base_id(i) in wanted))

    realize_box = ir.StorageBox.realize

    def traced(self):
        data = self.data
        if isinstance(data, ir.Pointwise):
            held = {custom_id(o) for o in getattr(data, "origins", ())} & set(wanted)
            if held:
                callers, frame, lowering = [], sys._getframe(1), None
                while frame is not None and len(callers) < 6:
                    callers.append(f"{frame.f_code.co_name}:{frame.f_lineno}")
                    if frame.f_code.co_name == "run_node" and lowering is None:
                        node = frame.f_locals.get("n")
                        lowering = f"{custom_id(node)} {getattr(node, 'target', '')} users " + str(
                            [str(u.target) for u in getattr(node, "users", ())])
                    frame = frame.f_back
                print(f"  while lowering {lowering}")
                print(f"inductor realize {sorted(held)} asked by {' <- '.join(callers)}; "
                      f"reads={data.num_reads()} ops={data.inner_fn_opcount().num_ops} "
                      f"origins={sorted(filter(None, (custom_id(o) for o in data.origins)))[:12]}")
        return realize_box(self)

    ir.StorageBox.realize = traced
    try:
        compile_program(program, [x.to(device) for x in complete_inputs(program, program.example_inputs)])
    finally:
        ir.StorageBox.realize = realize_box


if __name__ == "__main__":
    main(sys.argv[1:])
