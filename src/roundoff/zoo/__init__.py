"""roundoff.zoo: built-in workloads (the motivating cases and small transformer blocks), by name.

Public API: `get_workload(name)` (``"fma-cancel"`` or ``"zoo:fma-cancel"``), `list_workloads()`,
`Workload`. The zoo imports only torch.
"""

from roundoff.zoo import blocks as blocks  # importing a workload module registers its workloads
from roundoff.zoo import motivating as motivating
from roundoff.zoo.registry import UnknownWorkloadError, Workload, get_workload, list_workloads

__all__ = ["UnknownWorkloadError", "Workload", "get_workload", "list_workloads"]
