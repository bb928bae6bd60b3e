"""capture() on every zoo workload, forward and forward+backward, against real eager runs."""

from __future__ import annotations

import pytest
import torch
import torch.fx
from capture_helpers import assert_bitwise_equal, captured, eager_outputs, zoo_repro

from roundoff.capture import node_id, node_source
from roundoff.zoo import list_workloads

ZOO_FILES = {"motivating.py", "blocks.py"}
CASES = [(w.name, bw) for w in list_workloads() for bw in (False, True)]


@pytest.mark.parametrize("name,backward", CASES)
def test_graph_reproduces_eager_bit_for_bit(name: str, backward: bool) -> None:
    fn, xs, program = captured(name, backward)
    want = eager_outputs(fn, xs, backward)
    got = program.graph_module(*program.example_inputs)
    assert len(got) == len(want) == len(program.output_names)
    for out_name, g, w in zip(program.output_names, got, want):
        assert_bitwise_equal(g, w, f"{zoo_repro(name, backward)}  # output {out_name}")


@pytest.mark.parametrize("name,backward", CASES)
def test_ids_unique_and_in_graph_order(name: str, backward: bool) -> None:
    _, _, program = captured(name, backward)
    ids = [node_id(n) for n in program.nodes()]
    assert ids == [f"n{i}" for i in range(len(ids))], zoo_repro(name, backward)
    assert program.node(ids[-1]).op == "output"


@pytest.mark.parametrize("name,backward", CASES)
def test_sources_point_into_the_zoo(name: str, backward: bool) -> None:
    """Every computing node maps to a line of the zoo's own files, except the three nodes that seed
    the backward (sum of the outputs, ones_like, expand), which no user line wrote."""
    _, _, program = captured(name, backward)
    unsourced = []
    for n in program.nodes():
        if n.op != "call_function":
            continue
        src = node_source(n)
        if src is None:
            unsourced.append(str(n.target))
            continue
        file, line = src.rsplit(":", 1)
        assert file in ZOO_FILES and int(line) > 0, (
            f"{node_id(n)} {n.target} -> {src}; {zoo_repro(name, backward)}"
        )
    allowed = (
        ["aten.sum.default", "aten.ones_like.default", "aten.expand.default"] if backward else []
    )
    assert unsourced == allowed, zoo_repro(name, backward)


@pytest.mark.parametrize("name,backward", CASES)
def test_meta_val_matches_real_run(name: str, backward: bool) -> None:
    """Each node's meta['val'] has the shape and dtype the real run produces at that node."""
    _, _, program = captured(name, backward)
    mismatches: list[str] = []

    class Check(torch.fx.Interpreter):
        def run_node(self, n: torch.fx.Node) -> object:
            result = super().run_node(n)
            val = n.meta.get("val")
            same = isinstance(val, torch.Tensor) and (val.shape, val.dtype) == (
                result.shape,
                result.dtype,
            )
            if isinstance(result, torch.Tensor) and not same:
                mismatches.append(f"{node_id(n)} {n.target}")
            return result

    Check(program.graph_module).run(*program.example_inputs)
    assert not mismatches, f"{mismatches[:5]}; {zoo_repro(name, backward)}"


def test_module_parameters_are_named_inputs() -> None:
    fn, _, program = captured("llama-block", True)
    names = [n for n, _ in fn.named_parameters()] + [n for n, _ in fn.named_buffers()]
    assert program.input_names == ("x", *names)
    assert program.grad_input_names == ("x", *[n for n, _ in fn.named_parameters()])
    assert program.output_names == ("out", *[f"grad_{n}" for n in program.grad_input_names])
    for t, (qual, p) in zip(program.example_inputs[1:], fn.named_parameters()):
        assert torch.equal(t, p), qual
