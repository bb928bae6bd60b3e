"""Policies named on the command line: resolved with one-line errors, checked against the
program they are applied to."""

from __future__ import annotations

import collections
import dataclasses
import difflib
from pathlib import Path

from roundoff.capture.program import NODE_ID, Program, graph_fingerprint
from roundoff.cli.loading import UsageError
from roundoff.policy import get_policy, list_policies, policy_from_toml, policy_to_toml
from roundoff.policy.model import Policy


def resolve_policy(name_or_path: str) -> Policy:
    """A preset name or .toml path through `get_policy`; one-line error if unknown."""
    try:
        return get_policy(name_or_path)
    except (KeyError, ValueError, OSError) as exc:
        reason = str(exc.strerror if isinstance(exc, OSError) and exc.strerror else exc)
        # (the loader names the file too)
        reason = reason.removeprefix(f"{name_or_path}: ").removeprefix(f"cannot read policy file {name_or_path!r}: ")
        if name_or_path.endswith(".toml"):
            raise UsageError(f"policy file {name_or_path!r}: {reason}") from exc
        if Path(name_or_path).is_file():  # a file that is no policy (trial 58: "unknown policy" said nothing)
            raise UsageError(
                f"{name_or_path!r} is no preset, and as a policy file: {reason} (a policy file is TOML, as "
                "`roundoff blame --save-policy FILE.toml` writes one)") from exc
        presets = _presets()
        as_file = f"{name_or_path}.toml"
        hint = f"did you mean {as_file!r}? " if Path(as_file).is_file() else _did_you_mean(name_or_path, presets)
        raise UsageError(
            f"unknown policy {name_or_path!r}; {hint}presets: {', '.join(presets)} (or pass a .toml path)"
        ) from exc


def _presets() -> list[str]:
    return [p if isinstance(p, str) else p.name for p in list_policies()]


def _did_you_mean(name: str, choices: list[str]) -> str:
    """``"did you mean 'x'? "`` for the choice closest to `name` (spelled as presets are), or ``""``."""
    close = difflib.get_close_matches(name.replace("_", "-").lower(), choices, n=1)
    return f"did you mean {close[0]!r}? " if close else ""


def resolve_policies(names_or_paths: list[str]) -> list[Policy]:
    """`resolve_policy` of each; policies of one name (two fixes blame saved from one preset) are told
    apart by the argument that named them: ``eager+blame (fix_fwd.toml)``."""
    chosen = [resolve_policy(p) for p in names_or_paths]
    counts = collections.Counter(p.name for p in chosen)
    return [dataclasses.replace(p, name=f"{p.name} ({arg})") if counts[p.name] > 1 and arg != p.name else p
            for p, arg in zip(chosen, names_or_paths, strict=True)]


def reference_name(against: str) -> str:
    """``fp64`` is the fp64 oracle, as in the library (never the fp64 policy, whose error is 0)."""
    return "oracle" if against in ("oracle", "fp64") else against


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
        presets = _presets()
        raise UsageError(
            f"--against {against!r}: {_did_you_mean(against, ['eager', 'oracle', *presets])}choose eager, oracle "
            f"(fp64) or a policy: {', '.join(presets)} (or a .toml path)"
        ) from exc


def stamp_program(policy_toml: str, program: Program) -> str:
    """`policy_toml` with the program its node overrides were made for (name and fingerprint)."""
    policy = policy_from_toml(policy_toml)
    made = dataclasses.replace(
        policy, made_for=program.name, made_for_graph=graph_fingerprint(program)
    )
    return policy_to_toml(made)


def check_node_overrides(
    program: Program, policy: Policy, label: str, origin: str | None = None
) -> None:
    """UsageError if `policy` overrides a node id `program` does not have (a typo or a policy
    written for another program would otherwise be ignored silently), or if its node overrides
    were recorded as made for a program with another graph fingerprint. `origin` names the policy
    as the user gave it (a preset name or a .toml path)."""
    origin = origin or policy.name
    if policy.node_overrides and policy.made_for_graph:
        mine = graph_fingerprint(program)
        if policy.made_for_graph != mine:
            raise UsageError(
                f"policy {origin}'s node overrides were made for program {policy.made_for!r} "
                f"(graph {policy.made_for_graph}), not for {program.name!r} (graph {mine}): "
                "node ids differ between programs (a policy blame made with --backward fits only a check with "
                "--backward, and the reverse); run roundoff blame on this program for a policy of its own"
            )
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
