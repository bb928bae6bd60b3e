"""What observe compiles against what torch.compile compiles for a transformers Llama training step.

Real: ``torch.compile(step)`` where ``step`` computes the loss and calls ``loss.backward()`` (Dynamo's
graph, AOTAutograd's partitioned forward and backward, Inductor). Observe: roundoff's captured joint
graph compiled by Inductor as one graph, and (``--partitioned``) split by AOTAutograd's partitioner
and compiled as two (`roundoff.observed.partition`). Prints, per compiled program, the C++ kernels
(count, names and sources in common) and whether the loss and every parameter gradient are bit-identical to the
real step's.

Usage: ``python bench/observe_vs_torch_compile.py [--hidden 128 --layers 2 --seq 64]``
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

import torch
from torch._inductor.utils import run_and_get_code

sys.path.insert(0, str(Path(__file__).parent))
from real_model_fidelity import build  # noqa: E402  (a sibling bench script)

from roundoff.capture import capture  # noqa: E402
from roundoff.execute.run import complete_inputs  # noqa: E402
from roundoff.observed.partition import compile_staged  # noqa: E402


def kernels(code: str) -> list[str]:
    return sorted(re.findall(r"^(cpp_fused\w*|triton_\w+) = async_compile", code, flags=re.M))


def sources(code: str) -> Counter:
    """The C++ kernels' sources, without cache paths."""
    return Counter(re.sub(r"/\S+\.(h|so|py)", "", s) for s in re.findall(r"cpp_pybinding\((.*?)'''\)", code, flags=re.S))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--seq", type=int, default=64)
    args = ap.parse_args(argv)
    module, ids = build(args.hidden, args.layers, args.seq, "eager", "cpu")
    program = capture(module, ids, backward=True, name="llama")
    inputs = complete_inputs(program, program.example_inputs)
    params = dict(module.named_parameters())

    def step(ids: torch.Tensor) -> torch.Tensor:
        loss = module(ids)
        loss.backward()
        return loss

    for p in params.values():
        p.grad = None
    loss, codes = run_and_get_code(torch.compile(step), ids)
    real = {"loss": loss.detach(), **{n: p.grad for n, p in params.items()}}
    print(f"torch.compile: {len(codes)} programs, kernels {[len(kernels(c)) for c in codes]}")
    for partitioned in (False, True):
        staged = compile_staged(program, inputs, partitioned=partitioned)
        with torch.no_grad():
            outs = staged.run(inputs, lambda st, xs: st.compiled.run(*xs))
        mine = {"loss": outs[0], **dict(zip(program.grad_input_names, outs[program.num_forward_outputs:]))}
        same = [n for n in real if torch.equal(mine[n], real[n])]
        differ = {n: int((mine[n] != real[n]).sum()) for n in real if n not in same}
        print(f"observe {'partitioned' if partitioned else 'joint'}: loss + {len(real) - 1} gradients, "
              f"{len(same)} of {len(real)} bit-identical to torch.compile's; differing elements: {differ or 'none'}")
        for stage, code in zip(staged.stages, codes if partitioned else [None]):
            ks = kernels(stage.compiled.source)
            common = ""
            if code:
                theirs = kernels(code)
                bare = lambda names: sorted(re.sub(r"_\d+$", "", k) for k in names)  # noqa: E731
                same_ops = sum((Counter(bare(ks)) & Counter(bare(theirs))).values())
                common = (f" (torch.compile: {len(theirs)}), {len(set(ks) & set(theirs))} with the same name, "
                          f"{same_ops} with the same fused ops (name without its index), "
                          f"{sum((sources(stage.compiled.source) & sources(code)).values())} with the same source")
            print(f"  {stage.label or 'joint graph'}: {len(ks)} kernels{common}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
