"""Policies named on the command line: resolved with one-line errors, checked against the
program they are applied to."""

from __future__ import annotations

from roundoff.capture.program import NODE_ID, Program
from roundoff.cli.loading import UsageError
from roundoff.policy import get_policy, list_policies
from roundoff.policy.model import Policy


def resolve_policy(name_or_path: str) -> Policy:
    """A preset name or .toml path through `get_policy`; one-line error if unknown."""
    try:
        return get_policy(name_or_path)
    except (KeyError, ValueError, OSError) as exc:
        if name_or_path.endswith(".toml"):
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise UsageError(f"policy file {name_or_path!r}: {reason}") from exc
        names = ", ".join(p if isinstance(p, str) else p.name for p in list_policies())
        raise UsageError(
            f"unknown policy {name_or_path!r}; presets: {names} (or pass a .toml path)"
        ) from exc


def resolve_reference(against: str) -> list[Policy]:
    """``--against``: [] for eager and oracle, else the one policy named; a one-line error naming
    the option and every accepted value when it is none of these."""
    if against in ("eager", "oracle"):
        return []
    try:
        return [get_policy(against)]
    except (KeyError, ValueError, OSError) as exc:
        if against.endswith(".toml"):
            return [resolve_policy(against)]
        names = ", ".join(p if isinstance(p, str) else p.name for p in list_policies())
        raise UsageError(
            f"--against {against!r}: choose eager, oracle (fp64) or a policy: {names} "
            "(or a .toml path)"
        ) from exc


def check_node_overrides(program: Program, policy: Policy, label: str) -> None:
    """UsageError if `policy` overrides a node id `program` does not have (a typo or a policy
    written for another program would otherwise be ignored silently)."""
    ids = [n.meta.get(NODE_ID) for n in program.graph.nodes]
    known = set(ids)
    unknown = [k for k in policy.node_overrides if k not in known and k.split(".")[0] not in known]
    if unknown:
        span = f"{ids[0]}..{ids[-1]}" if ids else "none"
        raise UsageError(
            f"policy {policy.name!r} overrides node(s) {', '.join(unknown)} that "
            f"{label} does not have (its ids: {span}, see roundoff trace); "
            "remove those [node_overrides] entries"
        )
