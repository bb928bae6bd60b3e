"""Standalone repro scripts: the captured program and its lowered plans, run before and after a fix.

`repro_script` writes a Python file that needs only torch. It holds the inputs bit for bit (base64
of their raw bytes) and four programs as Python classes: the captured aten graph (``Eager``, run on
the real dtypes), its fp64 oracle (``Oracle``) and the two lowered plans (``Before``: the policy as
planned, ``After``: with blame's overrides), each the code of ``roundoff.lower.lower(plan)``, with
every rounding a ``roundoff_round_to(x, fmt)`` call and every contracted FMA a ``roundoff_fma(a, b,
c)`` call. Those two are roundoff's own ``round_to`` and ``fma``: the script embeds their source,
copied from ``roundoff.numerics`` when the script is written, so nothing is re-implemented and the
script reproduces roundoff's emulation bit for bit. It prints, for each plan, the error against the
fp64 run and the verdict of PyTorch's own accuracy rule against the chosen reference, as the lines
``VERDICT before: DIVERGES|OK`` and ``VERDICT after: DIVERGES|OK``.
"""

from __future__ import annotations

import inspect
from collections.abc import Collection

import torch
import torch.fx

from roundoff.analyze.output_floor import oracle_floors
from roundoff.analyze.verdict import (
    EXCESS_LIMIT,
    excess_within,
    lucky_rounding_floor,
    no_worse_than,
    path_dtype,
    quantum_floor,
)
from roundoff.blame import repro_runtime
from roundoff.blame.evaluate import NO_WORSE
from roundoff.capture.program import Program
from roundoff.execute import complete_inputs
from roundoff.lower import lower, lower_oracle
from roundoff.lower.code import load_tensor, primitives_source, standalone_source, tensor_source
from roundoff.plan.model import Plan


class ReproError(ValueError):
    """The program or plan holds something a plain-PyTorch repro cannot express."""


_PRELUDE = '''
# Names the FX code below refers to.
inf, nan, device = float("inf"), float("nan"), torch.device
roundoff_round_to, roundoff_fma = round_to, fma
'''

_MAIN = """

def main():
    with torch.no_grad():
        eager = list(Eager().forward(*INPUTS))
        fp64 = list(Oracle().forward(*INPUTS))
        if RULE != "same":
            print(f"reference: {'eager' if REFERENCE == 'eager' else 'the fp64 oracle of the same graph, correctly rounded to the narrowest format on each output path'}; an output passes when finite where fp64 is and " + ("its bits equal the reference's" if RULE == "bitwise" else "torch.allclose with torch.testing's default tolerances holds"))
        elif REFERENCE == "oracle" and RATIO is None:
            print(f"reference: the fp64 oracle of the same graph; an output passes when finite where fp64 is and its error is within {LIMIT:g} times the rounding of the narrowest format on its path ({', '.join(sorted({str(w) for w in WORK if w is not None}))})")
        else:
            print(f"reference: {REFERENCE}; fp64 oracle of the same graph; tolerance {TOL}, rmse ratio {RATIO or 'as torch._dynamo.utils.same'}")
        print("max|err| below: each output against the fp64 oracle (the VERDICT judges by the reference above)")
        runs = {name: list(program().forward(*INPUTS)) for name, program in (("before", Before), ("after", After))}
        for name, res in runs.items():
            if RULE != "same":  # check's allclose or bitwise rule, as blame judged it
                failing = [NAMES[i] if i < len(NAMES) else f"out{i}"
                           for i, (x, f, w, e, b) in enumerate(zip(res, fp64, WORK, eager, runs["before"]))
                           if w is not None and not (by_rule(RULE, e if REFERENCE == "eager" else round_to(f, w), x, f)
                                                     or REFERENCE == "oracle" and not JUDGED[i] and no_worse_than(x, f, b, NO_WORSE))]
                ok, by_path = not failing, []
            elif REFERENCE == "oracle" and RATIO is None:  # roundoff's output rule, as blame judged it
                failing = [NAMES[i] if i < len(NAMES) else f"out{i}"
                           for i, (x, f, w, fl, b) in enumerate(zip(res, fp64, WORK, FLOORS, runs["before"]))
                           if w is not None and not (excess_within(x, f, w, round_to, LIMIT, fl)
                                                     or not JUDGED[i] and no_worse_than(x, f, b, NO_WORSE))]
                by_path = [n for n in failing if name == "after" and n in BY_PATH]
                failing = [n for n in failing if n not in by_path]
                ok = not failing
            else:
                ok, failing, by_path = verdict(eager, res, fp64, REFERENCE, TOL, RATIO), [], []
            print(f"{name} ({LABELS[name]}): {describe(res, fp64, NAMES, first=failing)}")
            print(f"VERDICT {name}: {'OK' if ok else 'DIVERGES'}" + (f" (failing: {', '.join(failing[:8])}{' ...' if len(failing) > 8 else ''})" if failing else ""))
            if by_path:
                print(f"note {name}: {', '.join(by_path)} pass as check judges them (no node on their path is flagged), though over {LIMIT:g}x by their values; blame --by-values holds every output to its values")


if __name__ == "__main__":
    main()
"""


def _work_dtypes(program: Program) -> list[str]:
    """Per graph output, ``torch.<dtype>`` of the narrowest float format on its path (`path_dtype`), or
    ``None`` for a non-float output: what blame judges each output in against the oracle."""
    work = []
    for node in program.output_args():
        val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
        floating = isinstance(val, torch.Tensor) and val.is_floating_point()
        work.append(str(path_dtype(node)) if floating else "None")
    return work


def _floors(program: Program, inputs: tuple, reference: str) -> list[float]:
    """Per graph output, its operand floor (`roundoff.analyze.output_floor`, computed from fp64 here)
    against the oracle; 0.0 against eager (unused)."""
    floors = oracle_floors(program, inputs)[1] if reference == "oracle" else {}
    return [floors.get(i, 0.0) for i in range(len(program.output_args()))]


def _docstring_safe(text: str) -> str:
    """`text` inside a triple-quoted docstring: backslashes and double quotes escaped, so a policy
    or program name holding ``\"\"\"`` cannot end the docstring (names go into code as repr)."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _diff_comment(before: Plan, after: Plan) -> str:
    changed = [nid for nid, d in after.decisions.items() if before.decisions.get(nid) != d]
    return f"# After differs from Before at: {', '.join(changed) or 'nothing'}\n"


def _classes(program: Program, before: Plan, after: Plan, inputs: tuple) -> list[str]:
    """The four programs as standalone classes (ReproError where one cannot be written out)."""
    try:
        return [
            "# The captured aten graph, run on the real dtypes (what eager PyTorch computes).\n"
            + standalone_source(program.graph_module, "Eager"),
            "# The fp64 oracle of the same graph: every float value in fp64, nothing rounded.\n"
            + standalone_source(lower_oracle(program, inputs), "Oracle"),
            f"# The plan of policy {before.policy.name!r}, lowered.\n" + standalone_source(lower(before, inputs), "Before"),
            _diff_comment(before, after) + standalone_source(lower(after, inputs), "After"),
        ]
    except ValueError as exc:
        raise ReproError(f"cannot write program {program.name!r} as a repro: {exc}") from exc


def repro_script(
    program: Program,
    before: Plan,
    after: Plan,
    inputs: tuple[torch.Tensor, ...],
    *,
    reference: str = "eager",
    tol: float = 1e-4,
    rmse_ratio: float | None = None,
    title: str = "",
    notes: tuple[str, ...] = (),
    judged: Collection[int] | None = None,
    by_path: Collection[str] = (),
    rule: str = "same",
) -> str:
    """Source of a standalone repro.py (see the module docstring); needs only torch to run.

    `before` and `after` must be plans of `program` (the policy, and the policy with the fix; each
    plan's own, possibly rewritten, program is lowered);
    `inputs` may be a prefix of the program's inputs (the rest are the capture's example inputs).
    `judged`: against the oracle, the outputs held to the limit (`Evaluator`'s); None: all of them.
    `by_path`: the names of outputs the fix leaves over the limit by value that check passes by its path
    rule (blame's trimmed fix): the repro's After verdict passes them too, and says so.
    `rule`: "same", or check's "allclose" / "bitwise" (`repro_runtime.by_rule`), as blame judged by.
    Raises ReproError when the graph or plan holds something plain PyTorch cannot express here.
    """
    if reference not in ("eager", "oracle"):
        raise ValueError(f"reference must be 'eager' or 'oracle', got {reference!r}")
    inputs = complete_inputs(program, inputs)
    for p in (before, after):
        if p.program.input_names != program.input_names:
            raise ReproError(
                f"plan of policy {p.policy.name!r} is of a program with inputs {p.program.input_names}, "
                f"not {program.input_names}; pass plans of the same program"
            )
    if any(not isinstance(x, torch.Tensor) for x in inputs):
        raise ReproError(f"program {program.name!r} takes non-tensor inputs; a repro writes tensor inputs only")
    runtime = inspect.getsource(repro_runtime).split("from __future__ import annotations", 1)[1]
    header = [
        '"""roundoff repro: ' + _docstring_safe(title or program.name) + ".",
        "",
        "Plain PyTorch (no roundoff needed): run `python repro.py`. It evaluates the captured aten",
        "graph eagerly, in fp64, and under two lowered precision plans (Before: the policy as planned;",
        "After: with the fix), and prints the verdict blame judged by for each: against eager, PyTorch's",
        "own accuracy rule (torch._dynamo.utils.same, RMSE against fp64); against the oracle, roundoff's",
        "output rule (finite where fp64 is, error within LIMIT times the rounding of the narrowest format",
        "on the output's path, or of FLOORS, the error its last op takes from its operands rounded to that",
        "format, where larger; an output check passes (not JUDGED) also when no worse than NO_WORSE times",
        "its error Before; After, one in BY_PATH passes as check judges it, with a note); with RULE allclose",
        "or bitwise, that rule of check's against eager or fp64 rounded to WORK. Rounding and FMA are",
        "roundoff's own round_to and fma, embedded.",
    ]
    header += [""] + [f"  {_docstring_safe(line)}" for line in notes] if notes else []
    header.append('"""')
    parts = [
        "\n".join(header),
        "from __future__ import annotations\n\nimport base64\nimport operator  # noqa: F401 (getitem nodes)\n\nimport torch",
        primitives_source(),
        runtime.strip(),
        inspect.getsource(load_tensor).strip(),
        inspect.getsource(lucky_rounding_floor).strip(),
        inspect.getsource(quantum_floor).strip(),
        inspect.getsource(excess_within).strip(),
        inspect.getsource(no_worse_than).strip(),
        _PRELUDE.strip(),
        f"REFERENCE = {reference!r}\nTOL = {tol!r}\nRATIO = {rmse_ratio!r}\nLIMIT = {EXCESS_LIMIT!r}\nRULE = {rule!r}",
        f"WORK = [{', '.join(_work_dtypes(program))}]  # narrowest float format on each output's path",
        f"FLOORS = {_floors(program, inputs, reference)!r}  # per output: error its last op takes from its operands rounded to WORK",
        f"JUDGED = {[judged is None or i in judged for i in range(len(program.output_args()))]!r}  # held to LIMIT (check fails them); the others to NO_WORSE x Before's error",
        f"NO_WORSE = {NO_WORSE!r}",
        f"BY_PATH = {sorted(by_path)!r}  # over LIMIT by value After, passed as check judges them (no flagged node on their path)",
        f"NAMES = {list(program.output_names)!r}",
        f"LABELS = {{'before': {before.policy.name!r}, 'after': {after.policy.name + ' + fix'!r}}}",
        "INPUTS = [\n" + "".join(f"    {tensor_source(t)},\n" for t in inputs) + "]",
        *_classes(program, before, after, inputs),
    ]
    text = "\n\n\n".join(parts) + _MAIN
    if "torch.ops.prims.fma" in text:  # Inductor's decompositions emit it; torch registers it with Inductor
        text = text.replace("\nimport torch\n", "\nimport torch\nimport torch._inductor.lowering  # noqa: F401 (registers "
                            "prims.fma, which Inductor's decompositions in the graphs below call)\n", 1)
    return text
