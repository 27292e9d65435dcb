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
H = 128   # samples/heat.lua's plate, 1,000 steps

def heat_plate(xp, n):
    i = xp.arange(n)
    hot = (i >= (n * 3) // 8) & (i < (n * 5) // 8)
    inside = (i > 0) & (i < n - 1)
    return (hot[:, None] & hot[None, :]).astype(xp.float32) * 100, (inside[:, None] & inside[None, :]).astype(xp.float32)

def heat_step(cat, u, interior):
    # one explicit Euler step with fixed borders, as samples/heat.lua writes it
    up = cat([u[:1], u[:-1]], 0); down = cat([u[1:], u[-1:]], 0)
    left = cat([u[:, :1], u[:, :-1]], 1); right = cat([u[:, 1:], u[:, -1:]], 1)
    return u + 0.2 * interior * (up + down + left + right - 4 * u)
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
        # the MLP rows: eager PyTorch autograd, the way a PyTorch user writes the step
        torch.manual_seed(1)
        def uniform(*shape, scale):
            return ((torch.rand(*shape, device="cuda") - 0.5) * scale).requires_grad_()
        ps = [uniform(784, 1024, scale=0.1), torch.zeros(1024, device="cuda", requires_grad=True),
              uniform(1024, 1024, scale=0.06), torch.zeros(1024, device="cuda", requires_grad=True),
              uniform(1024, 10, scale=0.1), torch.zeros(10, device="cuda", requires_grad=True)]
        xb = (torch.rand(256, 784, device="cuda") - 0.5) * 2
        yb = torch.nn.functional.one_hot(torch.arange(256, device="cuda") % 10, 10).float()
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
        put("mlp_grad_ms", "torch", best_of(value_and_grad, s) * 1e3)
        put("mlp_sgd_ms", "torch", best_of(sgd, s) * 1e3)
        # the heat sample: a Python loop of eager steps, as a PyTorch user writes it
        i = torch.arange(H, device="cuda")
        hot = (i >= (H * 3) // 8) & (i < (H * 5) // 8)
        inside = (i > 0) & (i < H - 1)
        plate = (hot[:, None] & hot[None, :]).float() * 100
        interior = (inside[:, None] & inside[None, :]).float()
        def heat():
            u = plate
            for _ in range(1000):
                u = heat_step(torch.cat, u, interior)
            return u
        put("heat_run_ms", "torch", best_of(heat, s, 3, 1) * 1e3)
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
    # the MLP rows: jax.jit(jax.value_and_grad(loss)), and the SGD step compiled whole
    k = jax.random.split(jax.random.PRNGKey(1), 4)
    ps = {"w1": (jax.random.uniform(k[0], (784, 1024)) - 0.5) * 0.1, "b1": jnp.zeros(1024),
          "w2": (jax.random.uniform(k[1], (1024, 1024)) - 0.5) * 0.06, "b2": jnp.zeros(1024),
          "w3": (jax.random.uniform(k[2], (1024, 10)) - 0.5) * 0.1, "b3": jnp.zeros(10)}
    xb = (jax.random.uniform(k[3], (256, 784)) - 0.5) * 2
    yb = jax.nn.one_hot(jnp.arange(256) % 10, 10)
    def loss(p, x, y):
        h = jax.nn.relu(x @ p["w1"] + p["b1"])
        h = jax.nn.relu(h @ p["w2"] + p["b2"])
        return -(jax.nn.log_softmax(h @ p["w3"] + p["b3"], -1) * y).sum() / 256
    vg = jax.jit(jax.value_and_grad(loss))
    put("mlp_grad_ms", "jax", best_of(lambda: jax.block_until_ready(vg(ps, xb, yb)), s) * 1e3)
    def sgd(p, x, y):
        l, g = jax.value_and_grad(loss)(p, x, y)
        return l, jax.tree_util.tree_map(lambda a, b: a - 0.01 * b, p, g)
    t0 = time.perf_counter()
    step = jax.jit(sgd).lower(ps, xb, yb).compile()
    put("mlp_compile_ms", "jax", (time.perf_counter() - t0) * 1e3)
    put("mlp_sgd_ms", "jax", best_of(lambda: jax.block_until_ready(step(ps, xb, yb)), s) * 1e3)
    # the heat sample: jax.lax.fori_loop under jax.jit
    plate, interior = heat_plate(jnp, H)
    def heat(steps):
        return jax.jit(lambda u: jax.lax.fori_loop(0, steps, lambda _, v: heat_step(jnp.concatenate, v, interior), u))
    t0 = time.perf_counter()
    heat(10000).lower(plate).compile()
    put("heat_compile_10000_ms", "jax", (time.perf_counter() - t0) * 1e3)
    h = heat(1000)
    put("heat_run_ms", "jax", best_of(lambda: h(plate).block_until_ready(), s, 3, 1) * 1e3)
except Exception as e:
    print("jax:", e, file=sys.stderr)
json.dump(rows, sys.stdout)
