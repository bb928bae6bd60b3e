"""get_policy / list_policies: one entry point for a preset name, a TOML path or a Policy."""

from __future__ import annotations

import difflib
from pathlib import Path

from roundoff.policy.errors import PolicyError
from roundoff.policy.model import Policy
from roundoff.policy.presets import PRESETS
from roundoff.policy.serialize import load_policy
from roundoff.policy.validate import validate


def list_policies() -> list[Policy]:
    """Every preset, in table order."""
    return list(PRESETS.values())


def get_policy(name_or_policy: str | Path | Policy) -> Policy:
    """A validated Policy from a preset name, a path to a ``.toml`` file, or a Policy itself."""
    if isinstance(name_or_policy, Policy):
        return validate(name_or_policy)
    if isinstance(name_or_policy, Path):
        return load_policy(name_or_policy)
    if not isinstance(name_or_policy, str):
        raise TypeError(
            f"a policy is a Policy or a preset name (or a .toml path; see `roundoff policies`), got "
            f"{type(name_or_policy).__name__} {name_or_policy!r}"
        )
    if name_or_policy in PRESETS:
        return PRESETS[name_or_policy]
    if name_or_policy.endswith(".toml") or Path(name_or_policy).is_file():
        return load_policy(name_or_policy)
    close = difflib.get_close_matches(name_or_policy.replace("_", "-").lower(), list(PRESETS), n=1)
    raise PolicyError(
        f"unknown policy {name_or_policy!r}: {f'did you mean {close[0]!r}? ' if close else ''}give a preset "
        f"name ({', '.join(PRESETS)}) or a path to a .toml policy file"
    )
