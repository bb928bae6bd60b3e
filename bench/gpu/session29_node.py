"""Session 29 diagnostic: the inductor-gpu plan (paired with eager, as observe pairs it) around given nodes of
bench/observe.py's transformers Llama (one joint graph, as observe compiles it without --partitioned): per node its op, operands, kernel, kind, rounding and the operands it
reads rounded, with each operand's own line. Usage: ``python bench/gpu/session29_node.py n511 [...]``."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import torch
from real_model_fidelity import build

from roundoff.capture import capture
from roundoff.capture.program import base_id, node_id
from roundoff.plan import plan
from roundoff.plan.shared import plan_pair


def main(wanted: list[str]) -> None:
    module, ids = build(128, 2, 64, "eager", "cuda" if torch.cuda.is_available() else "cpu")  # as observe captures it
    program = capture(module, ids, backward=True, name="llama")
    p, _ = plan_pair(program, "inductor-gpu", "eager", functools.partial(plan, joint=True))  # as observe plans it
    kind = {g.id: g.kind for g in p.groups}
    members = {g.id: g.node_ids for g in p.groups}
    for n in p.program.graph.nodes:
        nid = n.meta.get("roundoff_id", "")
        if base_id(nid) not in wanted:
            continue
        for m in (n, *n.all_input_nodes):
            d = p.decisions.get(node_id(m))
            if d is None:
                continue
            print(f"{'' if m is n else '    <- '}{node_id(m)} {m.target} {tuple(getattr(m.meta.get('val'), 'shape', ()))} "
                  f"{d.storage_dtype} compute={d.compute_dtype} kernel={d.group} {kind.get(d.group)} rounds={d.rounds_result} "
                  f"reads_rounded={sorted(d.rounded_inputs)} fma={d.fma} src={d.source}")
        print(f"    kernel {p.decisions[nid].group}: {members.get(p.decisions[nid].group)}")


if __name__ == "__main__":
    main(sys.argv[1:])
