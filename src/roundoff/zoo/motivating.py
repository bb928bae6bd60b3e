"""The motivating programs of the design notes, written as their reporters wrote them.

Each program is a plain function; the inputs come from the threads where they were reported (seed 0)
or, for other seeds, random values of the same shapes and scale.
"""

from __future__ import annotations

import torch

from roundoff.zoo.registry import Workload, register

FMA_THREAD = "pytorch issue 'fma can cause drastically worse precision in torch.compile/Triton'"
THUNDER_THREAD = "lightning-thunder issue on matmul/linear up/downcasts for nvFuser"

# The thread's exact scalars (fp32 0-d tensors): x*scale is about 2.05e11, so the rounding error of the
# product (about 1e4) is what an FMA-contracted `x*scale - x*scale` returns; exp of that is inf.
FMA_X = 1134139801600.0
FMA_SCALE = 0.180336877703666687


def _generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def fma_cancel(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """``exp(x*scale - x*scale)``: 1.0 when both products round alike; inf under FMA contraction."""
    max_scaled = x * scale
    return torch.exp(max_scaled - x * scale)


def _fma_cancel_program(
    seed: int = 0, device: str | torch.device = "cpu", dtype: torch.dtype | None = None
) -> object:
    return fma_cancel


def _fma_cancel_inputs(
    seed: int = 0, device: str | torch.device = "cpu", dtype: torch.dtype | None = None
) -> tuple[torch.Tensor, ...]:
    """The thread's 0-d x and scale (seed ignored: the case is these two numbers), in `dtype`."""
    dtype = dtype or torch.float32
    x = torch.tensor(FMA_X, dtype=dtype, device=device, requires_grad=True)
    scale = torch.tensor(FMA_SCALE, dtype=dtype, device=device, requires_grad=True)
    return x, scale


def _fma_cancel_vector_inputs(
    seed: int = 0, device: str | torch.device = "cpu", dtype: torch.dtype | None = None
) -> tuple[torch.Tensor, ...]:
    """1024 values of x around the thread's x (times 2^[-4, 4)) and scales in [0.05, 1)."""
    g = _generator(seed)
    x = FMA_X * torch.exp2(torch.rand(1024, generator=g, dtype=torch.float64) * 8 - 4)
    scale = torch.rand(1024, generator=g, dtype=torch.float64) * 0.95 + 0.05
    dtype = dtype or torch.float32
    return (x.to(dtype).to(device).requires_grad_(), scale.to(dtype).to(device).requires_grad_())


def user_softmax(x: torch.Tensor, dim: int) -> torch.Tensor:
    """The thread's user-level softmax (no fp32 upcast)."""
    # eager softmax returns a contiguous tensor. Ensure that decomp also returns
    # a contiguous tensor.
    x = x.contiguous()
    if x.numel() == 0:
        unnormalized = torch.exp(x)
    else:
        x_max = torch.amax(x, dim, keepdim=True)
        unnormalized = torch.exp(x - x_max)
    result = unnormalized / torch.sum(unnormalized, dim, keepdim=True)
    return result


def softmax_matmul(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``softmax(matmul(x, x) / y)``: compiled with FMA on GPU its gradient w.r.t. y is NaN."""
    x = torch.matmul(x, x)
    x = x / y
    return user_softmax(x, dim=-1)


_SOFTMAX_X = [
    [
        [
            [-16.1649, 5.6846, -5.1022, -9.1134],
            [-11.5552, -2.2615, -12.8913, 10.6538],
            [-7.1666, -5.3333, 2.0776, -9.7984],
            [7.4469, -2.3948, 2.7371, 0.9201],
        ],
        [
            [-8.0361, -16.3771, 22.7741, 4.4685],
            [20.8047, -0.7771, -2.4355, -2.2299],
            [3.8343, -2.0914, -2.4077, 2.2740],
            [-15.8663, -2.7015, -12.5241, -3.0040],
        ],
        [
            [-2.5139, 14.4393, -3.7186, 1.2255],
            [5.6742, 14.1842, -8.5976, 16.8366],
            [-9.7358, -3.0279, 11.8164, -4.0787],
            [-9.0621, 8.2580, 29.9486, -2.4107],
        ],
        [
            [7.3622, 12.5640, -20.5592, 13.6237],
            [-11.5640, 0.8832, 16.7275, -2.5009],
            [-2.0953, -12.2276, -26.2633, 4.5268],
            [15.3329, -11.7492, 6.5650, -9.2483],
        ],
    ],
    [
        [
            [7.9980, -4.9369, 3.1508, 5.2994],
            [3.8052, 3.9514, 8.4987, -10.5045],
            [-2.6827, -4.0010, -4.0611, 6.4091],
            [-19.0318, 6.4073, 2.8923, 8.0250],
        ],
        [
            [7.1650, -3.4585, 5.7720, -5.0305],
            [-0.9765, -3.0086, 11.7114, 8.0555],
            [-3.1027, -3.5514, 9.6182, -8.8526],
            [-9.2348, -6.0239, 6.2528, -6.7221],
        ],
        [
            [11.5936, 22.4139, -0.4089, -4.9889],
            [14.8217, -2.3426, -17.6189, 3.7427],
            [1.9546, -13.0902, 8.6293, -7.2457],
            [-7.6900, -4.5796, 9.6332, -10.2631],
        ],
        [
            [0.8027, -1.0955, 14.8404, -0.2673],
            [3.2143, -1.8640, -2.9678, 6.5165],
            [-3.9865, 6.5230, 6.3019, -0.4247],
            [8.3185, -13.5076, 27.0986, -1.6792],
        ],
    ],
]
_SOFTMAX_Y = [[[0.6331]], [[1.6358]], [[-0.3459]], [[1.0196]]]


def _softmax_program(
    seed: int = 0, device: str | torch.device = "cpu", dtype: torch.dtype | None = None
) -> object:
    return softmax_matmul


def _softmax_inputs(
    seed: int = 0, device: str | torch.device = "cpu", dtype: torch.dtype | None = None
) -> tuple[torch.Tensor, ...]:
    """Seed 0: the thread's x [2,4,4,4] and y [4,1,1] (built as the thread builds them, from Python
    floats with `dtype`); other seeds: ``10 * randn`` and ``randn`` of those shapes. y requires grad."""
    dtype = dtype or torch.bfloat16
    if seed == 0:
        x = torch.tensor(_SOFTMAX_X, dtype=dtype, device=device)
        y = torch.tensor(_SOFTMAX_Y, dtype=dtype, device=device)
    else:
        g = _generator(seed)
        x = (10 * torch.randn(2, 4, 4, 4, generator=g)).to(dtype).to(device)
        y = torch.randn(4, 1, 1, generator=g).to(dtype).to(device)
    return x, y.requires_grad_()


def bf16_chain(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
    """``((a*b)+c)*d - a``: eager rounds after every op, Inductor only at the end."""
    return ((a * b) + c) * d - a


def _chain_program(
    seed: int = 0, device: str | torch.device = "cpu", dtype: torch.dtype | None = None
) -> object:
    return bf16_chain


def _chain_inputs(
    seed: int = 0, device: str | torch.device = "cpu", dtype: torch.dtype | None = None
) -> tuple[torch.Tensor, ...]:
    """Four ``randn(4096)`` vectors rounded to `dtype` (default bf16), all requiring grad."""
    g = _generator(seed)
    dtype = dtype or torch.bfloat16
    return tuple(
        torch.randn(4096, generator=g).to(dtype).to(device).requires_grad_() for _ in range(4)
    )


def thunder_matmul(a: torch.Tensor, b: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """``matmul(a + b, w)``: Thunder upcasts the add, leaves the matmul's inputs in bf16."""
    return torch.matmul(a + b, w)


def _matmul_program(
    seed: int = 0, device: str | torch.device = "cpu", dtype: torch.dtype | None = None
) -> object:
    return thunder_matmul


def _matmul_inputs(
    seed: int = 0, device: str | torch.device = "cpu", dtype: torch.dtype | None = None
) -> tuple[torch.Tensor, ...]:
    """The thread's shapes a [8,16], b [16], w [16,16] from randn, in `dtype` (fp32 for the autocast
    case), all requiring grad."""
    g = _generator(seed)
    dtype = dtype or torch.bfloat16
    shapes = [(8, 16), (16,), (16, 16)]
    return tuple(torch.randn(*s, generator=g).to(dtype).to(device).requires_grad_() for s in shapes)


register(
    Workload(
        "fma-cancel",
        "exp(x*scale - x*scale) on the thread's fp32 scalars: 1.0 eager, inf "
        "when the subtraction is contracted into an FMA",
        FMA_THREAD,
        _fma_cancel_program,
        _fma_cancel_inputs,
        torch.float32,
    )
)
register(
    Workload(
        "fma-cancel-vector",
        "exp(x*scale - x*scale) on 1024 values near the thread's x",
        FMA_THREAD,
        _fma_cancel_program,
        _fma_cancel_vector_inputs,
        torch.float32,
    )
)
register(
    Workload(
        "softmax-backward",
        "user-level softmax(matmul(x, x) / y) in bf16 and its gradient "
        "w.r.t. y: NaN compiled with FMA, finite eager",
        FMA_THREAD,
        _softmax_program,
        _softmax_inputs,
        torch.bfloat16,
        backward=True,
    )
)
register(
    Workload(
        "bf16-chain",
        "((a*b)+c)*d - a on random bf16 vectors: per-op versus per-kernel rounding",
        "Inductor on CPU vs eager, measured (README: What we measured)",
        _chain_program,
        _chain_inputs,
        torch.bfloat16,
    )
)
register(
    Workload(
        "thunder-matmul",
        "matmul(a + b, w) in bf16 (fp32 for the autocast case)",
        THUNDER_THREAD,
        _matmul_program,
        _matmul_inputs,
        torch.bfloat16,
    )
)
