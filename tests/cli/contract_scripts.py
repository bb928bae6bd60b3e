"""The user scripts and policy files the CLI contract table runs against (written per case)."""

from __future__ import annotations

import textwrap

from roundoff.policy import get_policy, policy_to_toml

MAIN = '''
import sys

import torch

print("noise at import of m.py")


def f(a, b):
    return (a * b + a) * b - a


def f_inputs():
    g = torch.Generator().manual_seed(0)
    return (torch.randn(64, generator=g).to(torch.bfloat16),
            torch.randn(64, generator=g).to(torch.bfloat16))


def x1():
    return (torch.linspace(-2, 2, 16),)


def x1g():
    return (torch.linspace(-2, 2, 16).requires_grad_(),)


def ints_in():
    return (torch.arange(6),)


def bools_in():
    return (torch.tensor([True, False, True]),)


def complex_in():
    return (torch.randn(4, dtype=torch.complex64),)


def fp8_in():
    return (torch.linspace(-2, 2, 8).to(torch.float8_e4m3fn),)


def zero_in():
    return (torch.randn(0),)


def scalar_in():
    return (torch.tensor(1.5),)


def meta_in():
    return (torch.empty(4, device="meta"),)


def nan_in():
    return (torch.tensor([1.0, float("nan"), float("inf"), -float("inf")]),)


def not_tuple():
    return 3


def not_tensors():
    return ("a", "b")


def empty():
    return ()


def none_f():
    return None


def dict_f():
    return {"a": torch.ones(2)}


def raises_f():
    raise RuntimeError("factory broke")


def exits0_f():
    sys.exit(0)


def noisy_f():
    print("noise from the factory")
    return x1()


def one(a):
    return a * 2 + 1


def tofloat(a):
    return a.float() * 0.1


def fp8_out(a):
    return (a * 2).to(torch.float8_e4m3fn)


def branch(a):
    if a.sum() > 0:
        return a * 2
    return a * 3


def item(a):
    return a * a.sum().item()


def nz(a):
    return a[torch.nonzero(a > 0).flatten()] * 2


def inplace(a):
    a.mul_(2)
    return a + 1


def rand(a):
    return a + torch.rand_like(a)


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


def custom_fn(a):
    return Square.apply(a) + 1


@torch.library.custom_op("roundoff_contract::twice", mutates_args=())
def twice(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@twice.register_fake
def _(x):
    return torch.empty_like(x)


def libop(a):
    return twice(a) + 1


def int8mm(a):  # an op the fp64 oracle cannot run (no fp64 kernel, no decomposition)
    w = (torch.arange(64 * 16) % 255 - 127).to(torch.int8).reshape(64, 16)
    return torch._weight_int8pack_mm(a.reshape(1, 16), w, torch.ones(64))


LIN = torch.nn.Linear(16, 4)


def closure(a):
    return LIN(a)


def exits0(a):
    sys.exit(0)


def exits1(a):
    sys.exit(1)


def interrupted(a):
    raise KeyboardInterrupt


def zde(a):
    return a * (1 / 0)


def returns_none(a):
    return None


def returns_bool(a):
    return a > 0


def noisy(a):
    print("noise from the function")
    return a * 2


def mm(a):
    return a @ torch.ones(4, 5)


NOT_A_FUNCTION = 3


class Net(torch.nn.Module):
    def forward(self, a):
        return a * 2


class Headless(torch.nn.Module):
    pass


headless = Headless()
Net_inputs = headless_inputs = lambda: (torch.ones(4),)
'''

OTHER_SCRIPTS = {
    "broken.py": "import torch\n\nx = 1 / 0\n",
    "syntax.py": "def f(a)\n    return a\n",
    "missing_dep.py": "import roundoff_no_such_module\n",
    "exit_import.py": "import sys\nsys.exit(0)\n",
}


def policy_files() -> dict[str, str]:
    """Bad, unusual and good policy files, from the eager preset's own TOML."""
    base = policy_to_toml(get_policy("eager"))
    return {
        "bad.toml": "name = [\n",
        "mistyped.toml": base.replace('rounding = "', 'rounding = 3 # "', 1),
        "unknown_field.toml": base + "\nfrobnicate = true\n",
        "n9999.toml": base + '\n[node_overrides.n9999]\nround_result = true\n',
        "quotes.toml": policy_to_toml(get_policy("inductor-gpu")).replace(
            'name = "inductor-gpu"', "name = 'tri\"\"\"ple'", 1
        ),
    }


def write_all(folder) -> None:
    (folder / "m.py").write_text(textwrap.dedent(MAIN))
    for name, text in {**OTHER_SCRIPTS, **policy_files()}.items():
        (folder / name).write_text(text)
    (folder / "dir.toml").mkdir()
    (folder / "outdir").mkdir()
    (folder / "adir.py").mkdir()  # (a folder whose name looks like a script: trial 65)
