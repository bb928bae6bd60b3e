"""The one error type of roundoff.policy."""

from __future__ import annotations


class PolicyError(ValueError):
    """A policy that cannot be used: names the field, what was given, and the fix."""
