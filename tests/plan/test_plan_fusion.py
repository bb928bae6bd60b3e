"""The fusion model on hand-built graphs, against what Inductor does (module docstring of
``roundoff.plan.fusion``; the FMA issue): extern ops read realized (stored) operands, reductions end
their kernel, unstored pointwise nodes are recomputed in every consumer, kernels never form cycles."""

from __future__ import annotations

import pytest

from roundoff.plan.fusion import FusionNode, Kind, fuse
from roundoff.policy import FusionModel

I, F, V, R, E = Kind.INPUT, Kind.FUSIBLE, Kind.VIEW, Kind.REDUCTION, Kind.EXTERN


def _g(*spec: tuple) -> list[FusionNode]:
    return [FusionNode(i, k, tuple(ins), *rest) for i, k, ins, *rest in spec]


def _kernels(f) -> dict[frozenset[str], str]:
    return {frozenset(g.node_ids): g.kind for g in f.groups}


def test_extern_operand_is_stored_and_a_later_pointwise_use_reads_it_rounded() -> None:
    # h = a + b; t = h * 2; m = mm(h, w); out = m + t. Fusing h's kernel with out's would need m
    # (which reads h from memory) inside it: a cycle, so out recomputes t from stored h.
    f = fuse(_g(("a", I, ()), ("b", I, ()), ("w", I, ()), ("h", F, ("a", "b")), ("t", F, ("h",)),
                ("m", E, ("h", "w")), ("out", F, ("m", "t"), True)), FusionModel.POINTWISE)  # fmt: skip
    assert _kernels(f) == {
        frozenset({"h"}): "pointwise",
        frozenset({"m"}): "extern",
        frozenset({"t", "out"}): "pointwise",
    }
    assert "h" in f.stored and f.reads_rounded("t", "h") and f.reads_rounded("m", "h")
    assert f.reads_rounded("out", "m") and not f.reads_rounded("out", "t")
    assert [g.kind for g in f.groups] == ["pointwise", "extern", "pointwise"]  # topological order


def test_producer_and_consumer_pointwise_kernels_fuse_and_read_unrounded() -> None:
    f = fuse(
        _g(("a", I, ()), ("h", F, ("a",), True), ("o", F, ("h",), True)), FusionModel.POINTWISE
    )
    assert _kernels(f) == {frozenset({"h", "o"}): "pointwise"}
    assert "h" in f.stored and not f.reads_rounded("o", "h")


def test_reduction_ends_its_kernel_and_shared_pointwise_is_rematerialized() -> None:
    # thread 003's softmax: d = x / y; m = amax(d); e = exp(d - m); s = sum(e); out = e / s
    f = fuse(_g(("x", I, ()), ("y", I, ()), ("d", F, ("x", "y")), ("m", R, ("d",)), ("u", F, ("d", "m")),
                ("e", F, ("u",)), ("s", R, ("e",)), ("o", F, ("e", "s"), True)), FusionModel.POINTWISE)  # fmt: skip
    assert _kernels(f) == {
        frozenset("dm"): "reduction",
        frozenset("dues"): "reduction",
        frozenset("dueo"): "pointwise",
    }
    assert f.reads_rounded("u", "m") and f.reads_rounded("o", "s")
    assert not f.reads_rounded("u", "d") and not f.reads_rounded("o", "e")
    assert f.home["d"] == 0 and f.home["e"] == 1
    assert any("rematerialized" in n and "d (kernels 0, 1, 2)" in n for n in f.notes)
    assert any("persistent reduction" in n for n in f.notes)


def test_views_of_stored_values_are_aliases_without_kernels() -> None:
    f = fuse(_g(("x", I, ()), ("v", V, ("x",)), ("s", R, ("v",)), ("sv", V, ("s",)), ("o", F, ("sv", "x"), True)),
             FusionModel.POINTWISE)  # fmt: skip
    assert _kernels(f) == {frozenset({"s"}): "reduction", frozenset({"o"}): "pointwise"}
    assert f.home["v"] is None and f.home["sv"] is None and {"v", "sv"} <= f.stored
    assert f.reads_rounded("sv", "s") and f.reads_rounded("o", "sv")


def test_no_fusion_stores_every_value() -> None:
    f = fuse(_g(("a", I, ()), ("h", F, ("a",)), ("o", F, ("h",), True)), FusionModel.NONE)
    assert [g.node_ids for g in f.groups] == [("h",), ("o",)] and all(
        g.kind == "single" for g in f.groups
    )
    assert f.reads_rounded("o", "h") and f.reads_rounded("h", "a")


def test_unknown_fusion_model_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown fusion model"):
        fuse([], "pointwise")  # type: ignore[arg-type]


def test_recomputed_node_with_mixed_reads_is_noted() -> None:
    # h = f(a) stored (output); e = exp(h) feeds sum s and output o = e * 2. o's kernel fuses with
    # h's, so there e reads h unrounded; the reduction kernel recomputes e from h in memory.
    f = fuse(_g(("a", I, ()), ("h", F, ("a",), True), ("e", F, ("h",)), ("s", R, ("e",), True),
                ("o", F, ("e",), True)), FusionModel.POINTWISE)  # fmt: skip
    assert _kernels(f) == {frozenset("es"): "reduction", frozenset("heo"): "pointwise"}
    assert any("e reads h unrounded in kernels" in n for n in f.notes), f.notes


def test_a_copy_of_a_copy_is_named_after_the_node():
    """Trial 64: a later round of splitting copied copies, and reports named them
    ``n130@k37@k28@k37@k30``; a copy's id names the node and the kernel, nested only where that id is
    taken (decomposed nodes keep their part: ``n7.1@k3``)."""
    from roundoff.plan.remat import _copy_id

    taken = {"n130", "n130@k37", "n7.1"}
    assert _copy_id("n130@k37", 28, taken) == "n130@k28"
    assert _copy_id("n130@k37", 28, taken) == "n130@k37@k28"  # n130@k28 is taken now
    assert _copy_id("n7.1", 3, taken) == "n7.1@k3"
    # a kernel of a later round numbered as one of an earlier round's (Mixtral's experts under inductor-gpu)
    assert _copy_id("n130@k37", 28, taken) == "n130@k28.2"
    assert _copy_id("n7.1", 3, taken) == "n7.1@k3.2"


def test_the_convexity_test_agrees_with_a_path_search_on_random_graphs() -> None:
    """`convex_masks` (ancestor and descendant masks, `_Reach.masks`) against its definition: a set is convex when no node
    outside it lies on a path from one member to another, found here by searching every path."""
    import random

    from roundoff.plan.fusion import _Reach, convex_masks

    rng = random.Random(0)
    for _ in range(200):
        n = rng.randint(2, 14)
        nodes = [FusionNode(str(i), F, tuple(str(j) for j in range(i) if rng.random() < 0.3)) for i in range(n)]
        users = {str(i): [m.id for m in nodes if str(i) in m.inputs] for i in range(n)}

        def reaches(a: str, b: str) -> bool:
            todo, seen = [a], set()
            while todo:
                x = todo.pop()
                if x == b:
                    return True
                if x not in seen:
                    seen.add(x)
                    todo.extend(users[x])
            return False

        reach = _Reach(nodes)
        for _ in range(10):
            ids = {str(i) for i in range(n) if rng.random() < 0.4}
            between = any(reaches(a, o) and reaches(o, b) for a in ids for b in ids for o in users if o not in ids)
            assert convex_masks(*reach.masks(ids)) is not between, (ids, [m.inputs for m in nodes])


def test_the_indexed_merge_decides_as_walking_every_earlier_kernel_does() -> None:
    """`_merge_pointwise` offers each new kernel only the earlier kernels holding a node it touches (an index,
    session 40: trial 89's unrolled BiGRU planned for over ten minutes walking every pair). Oracle: the walk it
    replaced, every earlier kernel in order, a set test and a convexity test each, on random graphs with
    inlined (shared) members, two loop counts and non-pointwise kernels between."""
    import random

    from roundoff.plan.fusion import _merge_pointwise, _Reach, convex_masks

    def walk(kernels, by_id, reach):
        merged, masks = [], {}
        for kind, root, members in kernels:
            if kind != "pointwise":
                merged.append((kind, root, members))
                continue
            current, mine = set(members), by_id[root].numel
            touched = current.union(*(by_id[m].inputs for m in current))
            cur, keep = reach.masks(current), []
            for other in merged:
                related = other[0] == "pointwise" and by_id[other[1]].numel == mine and not other[2].isdisjoint(touched)
                both = tuple(a | b for a, b in zip(cur, masks[other[1]])) if related else cur
                if related and convex_masks(*both):
                    current, cur = other[2] | current, both
                    touched |= other[2].union(*(by_id[m].inputs for m in other[2]))
                else:
                    keep.append(other)
            masks[root] = cur
            merged = keep + [(kind, root, current)]
        order = {n.id: i for i, n in enumerate(by_id.values())}
        return sorted(merged, key=lambda k: max(order[m] for m in k[2]))

    rng = random.Random(1)
    for _ in range(300):
        n = rng.randint(3, 24)
        nodes = [FusionNode(str(i), F, tuple(str(j) for j in range(i) if rng.random() < 0.25), numel=rng.choice((4, 8)))
                 for i in range(n)]
        by_id = {m.id: m for m in nodes}
        kernels = []
        for m in nodes:
            if rng.random() < 0.7:
                shared = {p for p in m.inputs if rng.random() < 0.3}  # inlined producers: in several kernels
                kernels.append(("pointwise" if rng.random() < 0.85 else "reduction", m.id, {m.id} | shared))
        reach = _Reach(nodes)
        expected = walk([(k, r, set(s)) for k, r, s in kernels], by_id, reach)
        got, _ = _merge_pointwise([(k, r, set(s)) for k, r, s in kernels], by_id, reach, nodes)
        assert [(k, r, sorted(s)) for k, r, s in got] == [(k, r, sorted(s)) for k, r, s in expected], kernels
