"""roundoff.corpus: real model code to check, by name: PyTorch's HuggingFace accuracy suite and
hand-written research-style models, at reduced size, random weights, bf16, training mode.

Every entry computes its own training loss; forward+backward of that loss is the check. Each builds
in the three target forms a user writes (`module`, `closure`, `ids`; `roundoff.corpus.registry`).
Every dropout probability is 0: roundoff's capture handles random ops, but a numerics check compares
runs of one program, and PyTorch's accuracy runs avoid randomness too. Nothing is downloaded:
transformers models are built from their config classes (transformers is imported only when a
transformers entry is built; `pip install 'roundoff[models]'`).

Public API: `names()`, `get(name)` -> `Entry`, `build(name, form, seed, device)` -> `Target`,
`HF_MODELS` (PyTorch's 55 names, in its order), `HANDWRITTEN`, `FORMS`, `CorpusUnavailable`.
"""

from roundoff.corpus import handwritten as _handwritten
from roundoff.corpus import huggingface as _huggingface
from roundoff.corpus.registry import FORMS, CorpusUnavailable, Entry, Family, Target

_ENTRIES = {e.name: e for e in _huggingface.ENTRIES + _handwritten.ENTRIES}
HF_MODELS: tuple[str, ...] = tuple(e.name for e in _huggingface.ENTRIES)
HANDWRITTEN: tuple[str, ...] = tuple(e.name for e in _handwritten.ENTRIES)


def names() -> tuple[str, ...]:
    """Every entry: PyTorch's list in its order, then the hand-written models."""
    return tuple(_ENTRIES)


def get(name: str) -> Entry:
    try:
        return _ENTRIES[name]
    except KeyError:
        raise KeyError(f"no corpus entry {name!r}; entries: {', '.join(_ENTRIES)}") from None


def build(name: str, form: str = "module", seed: int = 0, device: str = "cpu") -> Target:
    """Entry `name` as `form` (``module``/``closure``/``ids``), weights and inputs from `seed`."""
    return get(name).build(form, seed, device)


__all__ = ["FORMS", "HANDWRITTEN", "HF_MODELS", "CorpusUnavailable", "Entry", "Family", "Target",
           "build", "get", "names"]
