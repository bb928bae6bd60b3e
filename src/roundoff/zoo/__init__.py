"""roundoff.zoo: built-in workloads (the motivating cases and small transformer blocks), by name.

Public API: `get_workload(name)` (``"fma-cancel"`` or ``"zoo:fma-cancel"``), `list_workloads()`,
`Workload`. The zoo imports only torch.
"""

from roundoff.zoo import blocks, motivating  # noqa: F401  (importing registers the workloads)
from roundoff.zoo.registry import Workload, get_workload, list_workloads

__all__ = ["Workload", "get_workload", "list_workloads"]
