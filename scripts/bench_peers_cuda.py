#!/usr/bin/env python3
"""The peers' side of `scripts/bench --device cuda`: PyTorch and JAX on the same GPU.
Prints one JSON object {row: {peer: value}}; a missing peer is absent ("n/a")."""
import json, sys, time

rows = {}
def put(row, peer, value):
    rows.setdefault(row, {})[peer] = value

def best_of(f, sync, reps=5, inner=10):
    f(); sync()
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(inner):
            r = f()
        sync()
        best = min(best, (time.perf_counter() - t0) / inner)
    return best

N = 1 << 26
M = 4096
try:
    import torch
    if torch.cuda.is_available():
        torch.backends.cuda.matmul.allow_tf32 = False   # full float32, as halua computes
        s = torch.cuda.synchronize
        x = torch.full((N,), 0.5, device="cuda"); y = torch.full((N,), 0.25, device="cuda"); z = torch.full((N,), 0.1, device="cuda")
        put("copy_GBs", "torch", 8 * N / best_of(lambda: x.clone(), s) / 1e9)
        put("fused_ms", "torch", best_of(lambda: torch.tanh(x * y + z), s) * 1e3)
        a = torch.ones(M, M, device="cuda")
        put("matmul4096_gflops", "torch", 2 * M ** 3 / best_of(lambda: a @ a, s, 3, 5) / 1e9)
except Exception as e:
    print("torch:", e, file=sys.stderr)
try:
    import jax, jax.numpy as jnp
    jax.config.update("jax_default_matmul_precision", "highest")
    x = jnp.full((N,), 0.5); y = jnp.full((N,), 0.25); z = jnp.full((N,), 0.1)
    s = lambda: None
    f = jax.jit(lambda a, b, c: jnp.tanh(a * b + c))
    put("fused_ms", "jax", best_of(lambda: f(x, y, z).block_until_ready(), s) * 1e3)
    c = jax.jit(lambda a: a + 0)
    put("copy_GBs", "jax", 8 * N / best_of(lambda: c(x).block_until_ready(), s) / 1e9)
    a = jnp.ones((M, M))
    mm = jax.jit(lambda a, b: a @ b)
    put("matmul4096_gflops", "jax", 2 * M ** 3 / best_of(lambda: mm(a, a).block_until_ready(), s, 3, 5) / 1e9)
except Exception as e:
    print("jax:", e, file=sys.stderr)
json.dump(rows, sys.stdout)
