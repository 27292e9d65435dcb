#!/usr/bin/env python3
"""The peers' side of scripts/bench: the same work in NumPy and PyTorch, timed the same way.
Prints one JSON object {row: {peer: value}}; a missing peer is simply absent ("n/a")."""
import json, os, sys, time

def best_of(f, reps, inner):
    f()
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(inner):
            f()
        best = min(best, (time.perf_counter() - t0) / inner)
    return best

rows = {}
def put(row, peer, value):
    rows.setdefault(row, {})[peer] = value

try:
    import numpy as np
    a = np.ones(8, np.float32); b = np.ones(8, np.float32)
    put("eager_add8_us", "numpy", best_of(lambda: a + b, 5, 20000) * 1e6)
    n = 1 << 24
    x = np.full(n, 0.5, np.float32); y = np.full(n, 0.25, np.float32); z = np.full(n, 0.1, np.float32)
    put("fused_ms", "numpy", best_of(lambda: np.tanh(x * y + z), 3, 3) * 1e3)
    put("copy_GBs", "numpy", 2 * 4 * n / best_of(lambda: x.copy(), 3, 5) / 1e9)
    m = np.ones((1024, 1024), np.float32)
    put("matmul1024_gflops", "numpy", 2 * 1024 ** 3 / best_of(lambda: m @ m, 3, 5) / 1e9)
    for k, reps, inner in ((256, 5, 50), (2048, 3, 1)):
        mk = np.ones((k, k), np.float32)
        put("matmul%d_gflops" % k, "numpy", 2 * k ** 3 / best_of(lambda: mk @ mk, reps, inner) / 1e9)
    la, lw = np.ones((256, 784), np.float32), np.ones((784, 1024), np.float32)
    put("mlp_layer_gflops", "numpy", 2 * 256 * 784 * 1024 / best_of(lambda: la @ lw, 5, 10) / 1e9)
    # 4096x4096 float32: a full sum, row softmax and row logsumexp, a transpose that moves data
    big = np.random.default_rng(1).random((4096, 4096), dtype=np.float32)
    put("sum4096_ms", "numpy", best_of(lambda: big.sum(), 3, 3) * 1e3)
    def softmax(v):
        e = np.exp(v - v.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)
    def logsumexp(v):
        mx = v.max(1, keepdims=True)
        return (mx + np.log(np.exp(v - mx).sum(1, keepdims=True)))[:, 0]
    put("softmax4096_ms", "numpy", best_of(lambda: softmax(big), 3, 1) * 1e3)
    put("logsumexp4096_ms", "numpy", best_of(lambda: logsumexp(big), 3, 1) * 1e3)
    put("transpose4096_GBs", "numpy", 2 * 4 * 4096 ** 2 / best_of(lambda: np.ascontiguousarray(big.T), 3, 2) / 1e9)
    # samples/heat.lua's 1,000 explicit diffusion steps on a 128x128 plate, as a NumPy loop
    hn = 128
    inside = np.zeros((hn, hn), np.float32); inside[1:-1, 1:-1] = 1
    u0 = np.zeros((hn, hn), np.float32); u0[hn * 3 // 8:hn * 5 // 8, hn * 3 // 8:hn * 5 // 8] = 100
    def heat():
        u = u0
        for _ in range(1000):
            up = np.concatenate([u[:1], u[:-1]]); down = np.concatenate([u[1:], u[-1:]])
            left = np.concatenate([u[:, :1], u[:, :-1]], 1); right = np.concatenate([u[:, 1:], u[:, -1:]], 1)
            u = u + np.float32(0.2) * inside * (up + down + left + right - 4 * u)
        return u
    put("heat_run_ms", "numpy", best_of(heat, 3, 1) * 1e3)
    # linalg.solve: one 256x256 system, a batch of 64 32x32 ones (diagonally dominant)
    rng = np.random.default_rng(0)
    sa = rng.random((256, 256)) - 0.5 + 256 * np.eye(256); sb = np.ones(256)
    put("solve256_ms", "numpy", best_of(lambda: np.linalg.solve(sa, sb), 5, 10) * 1e3)
    ba = rng.random((64, 32, 32)) - 0.5 + 32 * np.eye(32); bb = np.ones((64, 32))
    put("solve_batched_ms", "numpy", best_of(lambda: np.linalg.solve(ba, bb), 5, 10) * 1e3)
except ImportError:
    pass

try:
    import torch
    torch.set_num_threads(os.cpu_count())
    a = torch.ones(8); b = torch.ones(8)
    put("eager_add8_us", "torch", best_of(lambda: a + b, 5, 20000) * 1e6)
    n = 1 << 24
    x = torch.full((n,), 0.5); y = torch.full((n,), 0.25); z = torch.full((n,), 0.1)
    put("fused_ms", "torch", best_of(lambda: torch.tanh(x * y + z), 3, 3) * 1e3)
    m = torch.ones(1024, 1024)
    put("matmul1024_gflops", "torch", 2 * 1024 ** 3 / best_of(lambda: m @ m, 3, 5) / 1e9)
    for k, reps, inner in ((256, 5, 50), (2048, 3, 1)):
        mk = torch.ones(k, k)
        put("matmul%d_gflops" % k, "torch", 2 * k ** 3 / best_of(lambda: mk @ mk, reps, inner) / 1e9)
    la, lw = torch.ones(256, 784), torch.ones(784, 1024)
    put("mlp_layer_gflops", "torch", 2 * 256 * 784 * 1024 / best_of(lambda: la @ lw, 5, 10) / 1e9)
    big = torch.rand(4096, 4096)
    put("sum4096_ms", "torch", best_of(lambda: big.sum(), 3, 3) * 1e3)
    put("softmax4096_ms", "torch", best_of(lambda: torch.softmax(big, 1), 3, 1) * 1e3)
    put("logsumexp4096_ms", "torch", best_of(lambda: torch.logsumexp(big, 1), 3, 1) * 1e3)
    put("transpose4096_GBs", "torch", 2 * 4 * 4096 ** 2 / best_of(lambda: big.t().contiguous(), 3, 2) / 1e9)
    # the MLP rows: eager PyTorch autograd, the way a PyTorch user writes the step
    torch.manual_seed(1)
    def uniform(*shape, scale):
        return ((torch.rand(*shape) - 0.5) * scale).requires_grad_()
    ps = [uniform(784, 1024, scale=0.1), torch.zeros(1024, requires_grad=True),
          uniform(1024, 1024, scale=0.06), torch.zeros(1024, requires_grad=True),
          uniform(1024, 10, scale=0.1), torch.zeros(10, requires_grad=True)]
    xb = (torch.rand(256, 784) - 0.5) * 2
    yb = torch.nn.functional.one_hot(torch.arange(256) % 10, 10).float()
    def value_and_grad():
        w1, b1, w2, b2, w3, b3 = ps
        h = torch.relu(xb @ w1 + b1)
        h = torch.relu(h @ w2 + b2)
        loss = -(torch.log_softmax(h @ w3 + b3, -1) * yb).sum() / 256
        return loss, torch.autograd.grad(loss, ps)
    def sgd():
        loss, gs = value_and_grad()
        with torch.no_grad():
            return loss, [p - 0.01 * g for p, g in zip(ps, gs)]
    put("mlp_grad_ms", "torch", best_of(value_and_grad, 5, 3) * 1e3)
    put("mlp_sgd_ms", "torch", best_of(sgd, 5, 3) * 1e3)
    # the gradient of the heat sample's centre temperature by the initial plate: autograd
    # through the same 1,000 steps written as a Python loop
    hn = 128
    t_inside = torch.zeros(hn, hn); t_inside[1:-1, 1:-1] = 1
    t_u0 = torch.zeros(hn, hn); t_u0[hn * 3 // 8:hn * 5 // 8, hn * 3 // 8:hn * 5 // 8] = 100
    def heat_grad():
        u0 = t_u0.clone().requires_grad_()
        u = u0
        for _ in range(1000):
            up = torch.cat([u[:1], u[:-1]]); down = torch.cat([u[1:], u[-1:]])
            left = torch.cat([u[:, :1], u[:, :-1]], 1); right = torch.cat([u[:, 1:], u[:, -1:]], 1)
            u = u + 0.2 * t_inside * (up + down + left + right - 4 * u)
        return torch.autograd.grad(u[hn // 2 - 1, hn // 2 - 1], u0)
    put("heat_grad_run_ms", "torch", best_of(heat_grad, 3, 1) * 1e3)
    # a perturbation of the centre carried through the same steps by forward-mode autodiff
    # (dual numbers)
    import torch.autograd.forward_ad as fwAD
    t_du = torch.zeros(hn, hn); t_du[hn // 2 - 1, hn // 2 - 1] = 1
    def heat_jvp():
        with fwAD.dual_level():
            u = fwAD.make_dual(t_u0, t_du)
            for _ in range(1000):
                up = torch.cat([u[:1], u[:-1]]); down = torch.cat([u[1:], u[-1:]])
                left = torch.cat([u[:, :1], u[:, :-1]], 1); right = torch.cat([u[:, 1:], u[:, -1:]], 1)
                u = u + 0.2 * t_inside * (up + down + left + right - 4 * u)
            return fwAD.unpack_dual(u).tangent
    put("heat_jvp_run_ms", "torch", best_of(heat_jvp, 3, 1) * 1e3)
    sa = torch.rand(256, 256, dtype=torch.float64) - 0.5 + 256 * torch.eye(256, dtype=torch.float64)
    sb = torch.ones(256, dtype=torch.float64)
    put("solve256_ms", "torch", best_of(lambda: torch.linalg.solve(sa, sb), 5, 10) * 1e3)
    ba = torch.rand(64, 32, 32, dtype=torch.float64) - 0.5 + 32 * torch.eye(32, dtype=torch.float64)
    bb = torch.ones(64, 32, 1, dtype=torch.float64)
    put("solve_batched_ms", "torch", best_of(lambda: torch.linalg.solve(ba, bb), 5, 10) * 1e3)
except ImportError:
    pass

json.dump(rows, sys.stdout)
