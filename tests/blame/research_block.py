"""A training block as research code writes it (new-user trial 31, kept as written): hand-written RMSNorm,
LayerNorm by `x.mean`, attention with `max(...).values`, an MLP; bf16 inputs near 100 (fragile 16-bit
statistics), a cross-entropy loss."""
import math

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)

class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps
    def forward(self, x):
        var = x.pow(2).mean(-1, keepdim=True)
        return x * torch.rsqrt(var + self.eps) * self.weight

class LayerNorm(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))
        self.eps = eps
    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        xc = x - mean
        var = (xc * xc).mean(-1, keepdim=True)
        return xc / torch.sqrt(var + self.eps) * self.weight + self.bias

class LN2(nn.Module):  # var_mean variant
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d)); self.eps = eps
    def forward(self, x):
        var, mean = torch.var_mean(x, dim=-1, keepdim=True, unbiased=False)
        return (x - mean) * torch.rsqrt(var + self.eps) * self.weight

class Attn(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h; self.dh = d // h
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.o = nn.Linear(d, d, bias=False)
    def forward(self, x):
        B, T, D = x.shape
        q, k, v = self.qkv(x).split(D, dim=-1)
        q = q.view(B, T, self.h, self.dh).transpose(1, 2)
        k = k.view(B, T, self.h, self.dh).transpose(1, 2)
        v = v.view(B, T, self.h, self.dh).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(self.dh)
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
        att = att.masked_fill(mask, float('-inf'))
        att = att - att.max(-1, keepdim=True).values
        att = att.exp()
        att = att / att.sum(-1, keepdim=True)
        y = (att @ v).transpose(1, 2).reshape(B, T, D)
        return self.o(y)

class MLP(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.up = nn.Linear(d, 4 * d); self.down = nn.Linear(4 * d, d)
    def forward(self, x):
        return self.down(F.gelu(self.up(x)))

class Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.ln0 = LayerNorm(d)
        self.n1 = RMSNorm(d); self.attn = Attn(d, h)
        self.n2 = LN2(d); self.mlp = MLP(d)
    def forward(self, x):
        x = self.ln0(x)
        x = x + self.attn(self.n1(x))
        x = x + self.mlp(self.n2(x))
        return x

D, H, B, T = 64, 4, 2, 16
model = Block(D, H).to(torch.bfloat16).train()
head = nn.Linear(D, 10).to(torch.bfloat16)

def step(x, y):
    logits = head(model(x))
    return F.cross_entropy(logits.float().view(-1, 10), y.view(-1))

def step_inputs():
    g = torch.Generator().manual_seed(1)
    # large mean, small spread: fragile 16-bit statistics
    x = (100.0 + 0.5 * torch.randn(B, T, D, generator=g)).to(torch.bfloat16)
    y = torch.randint(0, 10, (B, T), generator=g)
    return (x, y)
